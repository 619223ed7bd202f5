;;; agent-q-tmux-test.el --- agent-q in a real terminal Emacs, driven through tmux  -*- lexical-binding: t -*-

;; Copyright (C) 2026 The agent-q authors

;; Author: The agent-q authors
;; Maintainer: The agent-q authors
;; Keywords: maint, tools
;; URL: https://example.invalid/agent-q
;; SPDX-License-Identifier: GPL-3.0-or-later

;; This file is not part of GNU Emacs.

;; This program is free software; you can redistribute it and/or modify
;; it under the terms of the GNU General Public License as published by
;; the Free Software Foundation, either version 3 of the License, or
;; (at your option) any later version.

;; This program is distributed in the hope that it will be useful,
;; but WITHOUT ANY WARRANTY; without even the implied warranty of
;; MERCHANTABILITY or FITNESS FOR A PARTICULAR PURPOSE.  See the
;; GNU General Public License for more details.

;; You should have received a copy of the GNU General Public License
;; along with this program.  If not, see <https://www.gnu.org/licenses/>.

;;; Commentary:

;; These tests start `emacs -nw -Q' with agent-q inside tmux, as a user
;; would run it, make it execute tool calls the way an LLM loop does
;; (`agent-q-execute-tool-calls' with the built-in tools and the default
;; approval function), and answer on the terminal with tmux send-keys:
;;
;; - a dangerous write_file call shows the prompt; y writes the file and
;;   n leaves it untouched;
;; - a three-hunk propose_file_edit opens the review; a, r, a and C-c C-c
;;   leave hunks 1 and 3 applied and hunk 2 not;
;; - the same review, asked for by an MCP client: the terminal Emacs
;;   serves MCP (`agent-q-mcp-start'), the official MCP Python SDK 1.x
;;   (tests/mcp-client/client.py, scenario "propose": a ClientSession
;;   over Streamable HTTP) calls propose_file_edit, the user answers a,
;;   r, a, C-c C-c in the review, and the SDK receives "Applied 2 of 3
;;   hunks ..." while the file on disk has hunks 1 and 3 only.
;;
;; tmux is installed with apt-get when it is missing.  The SDK's
;; virtual environment is made by scripts/ensure-deps.sh --test (make
;; test runs it); without it the MCP test fails, saying so.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-q)
(require 'json)
(require 'agent-q-mcp-http)
(require 'agent-q-mcp-client-test)

;; Each run of the suites has a tmux server of its own, started from this
;; Emacs: a session's programs get the environment of the server that
;; runs them, not of the client that asks for them, so a server left by
;; another run (the other Emacs version's, with or without the variables
;; of `agent-q-tmux-test--emacs-variables') would start the wrong Emacs.
(defvar agent-q-tmux-test--server-dir
  (let ((dir (make-temp-file "agent-q-tmux" t)))
    (setenv "TMUX_TMPDIR" dir)
    (setenv "TMUX" nil)
    (add-hook 'kill-emacs-hook
              (lambda ()
                (call-process "tmux" nil nil nil "kill-server")
                (delete-directory dir t)))
    dir)
  "The directory of this run's tmux server socket ($TMUX_TMPDIR).")

(defun agent-q-tmux-test--ensure-tmux ()
  "Install tmux with apt-get when it is missing."
  (unless (executable-find "tmux")
    (let ((sudo (if (zerop (user-uid)) "" "sudo ")))
      (call-process "sh" nil nil nil "-c"
                    (concat sudo "apt-get update -qq && " sudo
                            "env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux"))))
  (should (executable-find "tmux")))

(defun agent-q-tmux-test--emacs-variables ()
  "The variables that tell this Emacs where its own files are, as NAME=VALUE.
An Emacs unpacked outside its compiled-in directories (the tests' Emacs
30, scripts/ensure-emacs30.sh) needs them; a child started with a clean
environment (env -i) gets them from here."
  (delq nil (mapcar (lambda (name)
                      (let ((value (getenv name)))
                        (and value (concat name "=" value))))
                    '("EMACSDATA" "EMACSDOC" "EMACSPATH" "EMACSLOADPATH"))))

(defun agent-q-tmux-test--tmux (&rest args)
  "Run tmux with ARGS and return its output; fail the test on an error."
  (with-temp-buffer
    (let ((status (apply #'call-process "tmux" nil t nil args)))
      (unless (eq status 0)
        (ert-fail (list "tmux failed" args status (buffer-string))))
      (buffer-string))))

(defun agent-q-tmux-test--wait-screen (session regexp)
  "Wait (up to 30 s) until the screen of SESSION matches REGEXP; return it."
  (let ((screen "") (deadline (+ (float-time) 30)))
    (while (and (not (string-match-p regexp screen)) (< (float-time) deadline))
      (sleep-for 0.2)
      (setq screen (agent-q-tmux-test--tmux "capture-pane" "-p" "-t" session)))
    (unless (string-match-p regexp screen)
      (ert-fail (list "The screen never showed" regexp screen)))
    screen))

(defun agent-q-tmux-test--wait-file (file)
  "Wait (up to 30 s) until FILE exists; return its contents."
  (let ((deadline (+ (float-time) 30)))
    (while (and (not (file-exists-p file)) (< (float-time) deadline))
      (sleep-for 0.2))
    (should (file-exists-p file))
    (sleep-for 0.2)
    (with-temp-buffer (insert-file-contents file) (buffer-string))))

(defun agent-q-tmux-test--call (calls out &rest keys)
  "Start a terminal Emacs that runs CALLS on F5 and writes to OUT.
OUT receives the printed results and, for each file the calls name
with :path, the text of the buffer visiting it.  Then send KEYS (each a
list of strings for one `tmux send-keys', a regexp string to wait for
on the screen, or a function called with the screen's text) and return
what the terminal Emacs wrote to OUT."
  (let* ((session (format "agent-q-tmux-%d-%d" (emacs-pid) (random 100000)))
         (lisp-dir (file-name-directory (locate-library "agent-q")))
         (setup (make-temp-file "agent-q-tmux-setup" nil ".el"))
         (emacs (expand-file-name invocation-name invocation-directory)))
    (with-temp-file setup
      (prin1 `(progn
                (setq agent-q-audit-file nil)
                (require 'agent-q)
                (defun agent-q-tmux-test-run ()
                  (interactive)
                  (let ((results (agent-q-execute-tool-calls ',calls)))
                    (with-temp-file ,out
                      (prin1 (list :results results
                                   :buffers
                                   (mapcar (lambda (call)
                                             (let* ((path (plist-get (plist-get call :arguments) :path))
                                                    (buffer (and path (find-buffer-visiting path))))
                                               (and buffer (with-current-buffer buffer (buffer-string)))))
                                           ',calls))
                             (current-buffer)))
                    (kill-emacs 0)))
                (global-set-key (kbd "<f5>") #'agent-q-tmux-test-run))
             (current-buffer)))
    (unwind-protect
        (progn
          (agent-q-tmux-test--tmux
           "new-session" "-d" "-s" session "-x" "200" "-y" "50"
           (mapconcat #'shell-quote-argument (list emacs "-nw" "-Q" "-L" lisp-dir "-l" setup) " "))
          (agent-q-tmux-test--wait-screen session "scratch")
          (agent-q-tmux-test--tmux "send-keys" "-t" session "F5")
          (dolist (key keys)
            (cond ((stringp key) (agent-q-tmux-test--wait-screen session key))
                  ((functionp key)
                   (funcall key (agent-q-tmux-test--tmux "capture-pane" "-p" "-t" session)))
                  (t (apply #'agent-q-tmux-test--tmux "send-keys" "-t" session key))))
          (car (read-from-string (agent-q-tmux-test--wait-file out))))
      (call-process "tmux" nil nil nil "kill-session" "-t" session)
      (delete-file setup))))

(defmacro agent-q-tmux-test--with-files (bindings &rest body)
  "Bind each (VAR CONTENT) of BINDINGS to a temporary file holding CONTENT.
Also bind `out' to a fresh output file name.  Delete them after BODY."
  (declare (indent 1))
  `(let* ((out (make-temp-name (expand-file-name "agent-q-tmux-out" temporary-file-directory)))
          ,@(mapcar (lambda (b)
                      `(,(car b) (let ((f (make-temp-file "agent-q-tmux-file" nil ".txt")))
                                   (with-temp-file f (insert ,(cadr b)))
                                   f)))
                    bindings))
     (unwind-protect (progn ,@body)
       (dolist (f (list out ,@(mapcar #'car bindings)))
         ;; The child Emacs may have auto-saved a file it visited.
         (dolist (g (list f (expand-file-name (concat "#" (file-name-nondirectory f) "#")
                                              (file-name-directory f))))
           (when (file-exists-p g) (delete-file g)))))))

(defun agent-q-tmux-test--file (file)
  "FILE's contents."
  (with-temp-buffer (insert-file-contents file) (buffer-string)))

(ert-deftest agent-q-tmux-test-write-file-approved-with-y ()
  (agent-q-tmux-test--ensure-tmux)
  (agent-q-tmux-test--with-files ((target "old text\n"))
    (let* ((run (agent-q-tmux-test--call
                 `((:id "w1" :name "write_file" :arguments (:path ,target :content "new text\n")))
                 out
                 "agent-q: run write_file \\[dangerous\\].*(y)es (n)o"
                 '("y")))
           (result (car (plist-get run :results))))
      (should (eq (plist-get result :success) t))
      (should (equal (agent-q-tmux-test--file target) "new text\n")))))

(ert-deftest agent-q-tmux-test-write-file-denied-with-n ()
  (agent-q-tmux-test--ensure-tmux)
  (agent-q-tmux-test--with-files ((target "old text\n"))
    (let* ((run (agent-q-tmux-test--call
                 `((:id "w2" :name "write_file" :arguments (:path ,target :content "new text\n")))
                 out
                 "agent-q: run write_file \\[dangerous\\].*(y)es (n)o"
                 '("n")))
           (result (car (plist-get run :results))))
      (should-not (plist-get result :success))
      (should (equal (plist-get result :content) "User denied tool execution"))
      (should (equal (agent-q-tmux-test--file target) "old text\n")))))

(defconst agent-q-tmux-test--old
  (mapconcat (lambda (i) (format "line %d\n" i)) (number-sequence 1 30) "")
  "A 30-line file.")

(defun agent-q-tmux-test--edited (lines)
  "`agent-q-tmux-test--old' with the lines numbered LINES changed."
  (mapconcat (lambda (i) (format (if (memq i lines) "LINE %d, edited\n" "line %d\n") i))
             (number-sequence 1 30) ""))

(ert-deftest agent-q-tmux-test-propose-file-edit-review ()
  (agent-q-tmux-test--ensure-tmux)
  (agent-q-tmux-test--with-files ((target agent-q-tmux-test--old))
    (let* ((run (agent-q-tmux-test--call
                 `((:id "p1" :name "propose_file_edit"
                        :arguments (:path ,target :original ,agent-q-tmux-test--old
                                          :modified ,(agent-q-tmux-test--edited '(2 15 28))
                                          :description "Three scattered edits")))
                 out
                 ;; The file is outside the allowed directories: reading it is asked first.
                 "propose_file_edit must read the file" '("y")
                 "Progress: 0 accepted, 0 rejected, 3 pending"
                 '("a") '("r") '("a")
                 "Progress: 2 accepted, 1 rejected, 0 pending"
                 (lambda (screen)
                   ;; Decisions read in a terminal: text markers, not only faces.
                   (should (string-match-p "@@ -1,5 \\+1,5 @@ \\[ACCEPTED\\]" screen))
                   (should (string-match-p "@@ -12,7 \\+12,7 @@ \\[REJECTED\\]" screen))
                   (should (string-match-p "@@ -25,6 \\+25,6 @@ \\[ACCEPTED\\]" screen)))
                 '("C-c" "C-c")))
           (result (car (plist-get run :results))))
      (should (eq (plist-get result :success) t))
      (should (string-match-p "Applied 2 of 3 hunks to .*(hunks 1 and 3 accepted; hunk 2 rejected)"
                              (plist-get result :content)))
      (should (string-match-p "LINE 15, edited" (plist-get result :content)))
      ;; The buffer has hunks 1 and 3; the file on disk is not saved.
      (should (equal (car (plist-get run :buffers)) (agent-q-tmux-test--edited '(2 28))))
      (should (equal (agent-q-tmux-test--file target) agent-q-tmux-test--old)))))

;;;; An MCP client's edit, reviewed in the terminal

;; The client is client.py's "propose" scenario, under the SDK 1.x: it
;; prints JSON events ("calling", "progress", "result", "done") as they
;; happen, read by `agent-q-mcp-client-test--client-start'.

(ert-deftest agent-q-tmux-test-mcp-client-edit-reviewed-hunk-by-hunk ()
  (agent-q-tmux-test--ensure-tmux)
  (let* ((dir (make-temp-file "agent-q-tmux-mcp" t))
         (connection (expand-file-name "mcp.json" dir))
         (target (expand-file-name "notes.txt" dir))
         (setup (expand-file-name "setup.el" dir))
         (session-name (format "agent-q-tmux-mcp-%d-%d" (emacs-pid) (random 100000)))
         (lisp-dir (file-name-directory (locate-library "agent-q")))
         (emacs (expand-file-name invocation-name invocation-directory))
         (client nil))
    (with-temp-file target (insert agent-q-tmux-test--old))
    ;; What a user puts in init.el to serve MCP, with the connection file
    ;; and the audit kept out of the real ~/.emacs.d, and edits saved.
    (with-temp-file setup
      (prin1 `(progn
                (setq agent-q-audit-file nil
                      agent-q-mcp-connection-file ,connection
                      agent-q-diff-save-after-apply t)
                (require 'agent-q)
                (agent-q-mcp-start))
             (current-buffer)))
    (unwind-protect
        (progn
          (agent-q-tmux-test--tmux
           "new-session" "-d" "-s" session-name "-x" "200" "-y" "50"
           (mapconcat #'shell-quote-argument (list emacs "-nw" "-Q" "-L" lisp-dir "-l" setup) " "))
          (agent-q-tmux-test--wait-screen session-name "MCP server at http://127\\.0\\.0\\.1:")
          ;; The SDK's call waits while the user reads and decides, so its
          ;; own bound is longer than every wait on the screen together.
          (setq client (agent-q-mcp-client-test--client-start
                        "propose"
                        `((timeout . 120)
                          (arguments (path . ,target)
                                     (original . ,agent-q-tmux-test--old)
                                     (modified . ,(agent-q-tmux-test--edited '(2 15 28)))
                                     (description . "Three scattered edits")))
                        :connection-file connection))
          ;; The file is outside the allowed directories: reading it is asked
          ;; first, and the prompt says which client asks.
          (let ((screen (agent-q-tmux-test--wait-screen
                         session-name "propose_file_edit must read the file")))
            (should (string-match-p
                     (concat (regexp-quote agent-q-mcp-client-test--client-name)
                             " (MCP) wants to run propose_file_edit")
                     screen)))
          (agent-q-tmux-test--tmux "send-keys" "-t" session-name "y")
          (let ((screen (agent-q-tmux-test--wait-screen
                         session-name "Progress: 0 accepted, 0 rejected, 3 pending")))
            ;; The review says where the edit comes from.
            (should (string-match-p
                     (concat "From: " (regexp-quote agent-q-mcp-client-test--client-name) " (MCP)")
                     screen)))
          (dolist (key '("a" "r" "a"))
            (agent-q-tmux-test--tmux "send-keys" "-t" session-name key))
          (agent-q-tmux-test--wait-screen session-name "Progress: 2 accepted, 1 rejected, 0 pending")
          ;; The SDK is still waiting: nothing is decided before C-c C-c...
          (should (process-live-p (agent-q-mcp-client-test--run-process client)))
          (should (agent-q-mcp-client-test--event client "calling"))
          (should-not (agent-q-mcp-client-test--event client "result"))
          ;; ...and it was told what it waits for.
          (agent-q-mcp-http-wait
           (lambda ()
             (cl-some (lambda (event)
                        (equal (alist-get 'message event) "waiting for the user's review in Emacs"))
                      (agent-q-mcp-client-test--events client "progress")))
           20 "the SDK's progress notification about the review")
          (agent-q-tmux-test--tmux "send-keys" "-t" session-name "C-c" "C-c")
          (agent-q-mcp-client-test--client-finish client "propose" 30)
          (let ((result (car (agent-q-mcp-client-test--results client))))
            (message "The MCP SDK received: %S" result)
            (should (= (length (agent-q-mcp-client-test--results client)) 1))
            (should (eq (alist-get 'isError result) :false))
            (should (string-match-p
                     (concat "\\`Applied 2 of 3 hunks to .*notes\\.txt "
                             "(hunks 1 and 3 accepted; hunk 2 rejected)")
                     (alist-get 'text result)))
            ;; What was not applied is told to the client.
            (should (string-match-p "LINE 15, edited" (alist-get 'text result))))
          ;; Saved: the file on disk has hunks 1 and 3, not hunk 2.
          (should (equal (agent-q-tmux-test--file target) (agent-q-tmux-test--edited '(2 28)))))
      (when (and client (process-live-p (agent-q-mcp-client-test--run-process client)))
        (delete-process (agent-q-mcp-client-test--run-process client)))
      (call-process "tmux" nil nil nil "kill-session" "-t" session-name)
      (delete-directory dir t))))

(provide 'agent-q-tmux-test)

;;; agent-q-tmux-test.el ends here
