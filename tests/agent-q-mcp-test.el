;;; agent-q-mcp-test.el --- agent-q-mcp.el against the real server on a real socket  -*- lexical-binding: t -*-

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

;; The Emacs side of the MCP server: `agent-q-mcp-start' / -stop /
;; -status and `agent-q-mcp-mode', with the module's real server on
;; 127.0.0.1 and curl as the client (tests/agent-q-mcp-http.el):
;;
;; - the connection file (mode 0600, url/token/pid; the url works with
;;   the token and refuses a request without it), removed by stop, the
;;   port free at once after stop, even with a call waiting;
;; - starting twice, stopping twice; the status and its pending count;
;;   the mode;
;; - calls over MCP: cautious tools confirmed by default, the prompt
;;   naming the client, "always" only for that client; Emacs busy
;;   delays calls but loses and duplicates none;
;; - a child Emacs that exits (kill-emacs, SIGTERM) with a dangerous
;;   call pending: the client gets an error answer, the connection file
;;   is gone, nothing ran.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'json)
(require 'agent-q)
(require 'agent-q-mcp-http)

(defmacro agent-q-mcp-test--with (&rest body)
  "Run BODY with a fresh connection file name and no server; stop it after.
Binds `dir' to a temporary directory holding the connection file.
Decisions go to `agent-q-approval-function', which BODY binds."
  (declare (indent 0))
  `(let* ((dir (make-temp-file "agent-q-mcp-test" t))
          (agent-q-mcp-connection-file (expand-file-name "mcp.json" dir))
          (agent-q-mcp-port 0)
          (agent-q-audit-file nil)
          (agent-q-prompt--session-approved nil)
          (agent-q--pending nil)
          (agent-q--asking nil)
          (agent-q--queue-timer nil))
     (should-not (agent-q-mcp-running-p))
     (unwind-protect (progn ,@body)
       (agent-q-mcp-stop)
       (agent-q-cancel-pending)
       (delete-directory dir t))))

(defun agent-q-mcp-test--connection ()
  "The connection file's contents, as an alist."
  (let ((json-object-type 'alist) (json-key-type 'symbol))
    (json-read-file agent-q-mcp-connection-file)))

(defun agent-q-mcp-test--port (url)
  "The port of URL."
  (string-to-number (replace-regexp-in-string "\\`http://127\\.0\\.0\\.1:\\([0-9]+\\)/mcp\\'" "\\1" url)))

(defun agent-q-mcp-test--bind (port)
  "Listen on 127.0.0.1:PORT and close at once; non-nil when it could."
  (let ((server (condition-case nil
                    (make-network-process :name "agent-q-mcp-test-bind" :server t
                                          :host "127.0.0.1" :service port :family 'ipv4
                                          :noquery t)
                  (file-error nil))))
    (when server
      (delete-process server)
      t)))

(defun agent-q-mcp-test--temp-file (content)
  "A new temporary file holding CONTENT."
  (let ((file (make-temp-file "agent-q-mcp-file" nil ".txt")))
    (with-temp-file file (insert content))
    file))

(defun agent-q-mcp-test--file (file)
  "FILE's contents."
  (with-temp-buffer (insert-file-contents file) (buffer-string)))

;;;; Starting, stopping, the connection file

(ert-deftest agent-q-mcp-test-start-writes-a-private-connection-file ()
  (agent-q-mcp-test--with
    (let ((url (agent-q-mcp-start)))
      (should (string-match-p "\\`http://127\\.0\\.0\\.1:[0-9]+/mcp\\'" url))
      (should (agent-q-mcp-running-p))
      (should (file-exists-p agent-q-mcp-connection-file))
      (should (= (file-modes agent-q-mcp-connection-file) #o600))
      (let ((connection (agent-q-mcp-test--connection)))
        (should (equal (alist-get 'url connection) url))
        (should (equal (alist-get 'pid connection) (emacs-pid)))
        (should (string-match-p "\\`[0-9a-f]\\{64\\}\\'" (alist-get 'token connection)))
        ;; No temporary file is left beside it.
        (should (equal (directory-files dir nil directory-files-no-dot-files-regexp)
                       '("mcp.json")))
        ;; The url works with the token...
        (agent-q-mcp-http-connect url (alist-get 'token connection))
        ;; ...and without it, or with another, it refuses.
        (let ((init (agent-q-mcp-http-json
                     "initialize" 1 (list :protocolVersion agent-q-mcp-http-protocol
                                          :capabilities (make-hash-table)
                                          :clientInfo (list :name "x" :version "1")))))
          (should (eql (plist-get (agent-q-mcp-http-request url init) :status) 401))
          (should (eql (plist-get (agent-q-mcp-http-request url init :token (make-string 64 ?0))
                                  :status)
                       401))
          ;; A foreign Origin is refused even with the token.
          (should (eql (plist-get (agent-q-mcp-http-request
                                   url init :token (alist-get 'token connection)
                                   :headers '("Origin: http://evil.example"))
                                  :status)
                       403)))))))

(ert-deftest agent-q-mcp-test-stop-removes-the-file-and-frees-the-port ()
  (agent-q-mcp-test--with
    (let* ((url (agent-q-mcp-start))
           (port (agent-q-mcp-test--port url))
           (token agent-q-mcp--token)
           (session (agent-q-mcp-http-connect url token))
           (target (agent-q-mcp-test--temp-file "old\n"))
           (asked nil)
           (agent-q-approval-function (lambda (&rest _) (setq asked t) :later)))
      (unwind-protect
          (let ((call (agent-q-mcp-http-call-start url token session "write_file"
                                                   (list :path target :content "new\n"))))
            ;; A dangerous call waits for the user...
            (agent-q-mcp-http-wait (lambda () asked) 20 "the approval prompt")
            (should (= (plist-get (agent-q-mcp-status) :pending) 1))
            ;; ...when the server stops: its client is answered with an error,
            (should (eq (agent-q-mcp-stop) t))
            (should-not (agent-q-mcp-running-p))
            (should-not (file-exists-p agent-q-mcp-connection-file))
            ;; the port is free at once,
            (should (agent-q-mcp-test--bind port))
            (let ((result (agent-q-mcp-http-call-result call)))
              (should (plist-get result :error))
              (should (string-match-p "Emacs stopped the MCP server" (plist-get result :text))))
            ;; nothing ran, and nothing waits any more.
            (should (equal (agent-q-mcp-test--file target) "old\n"))
            (should-not agent-q--pending)
            ;; The port can be served again at once, too.
            (let ((agent-q-mcp-port port))
              (should (equal (agent-q-mcp-start) url)))
            (should-not (equal agent-q-mcp--token token))
            (agent-q-mcp-stop)
            ;; A request now finds nobody listening.
            (should-not (plist-get (agent-q-mcp-http-request
                                    url (agent-q-mcp-http-json "ping" 1) :token token)
                                   :status))
            ;; Stopping again is harmless.
            (should-not (agent-q-mcp-stop)))
        (delete-file target)))))

;; The main loop never waits for the clients: turning the mode off
;; returns at once, and what the stop promises them (the stopped
;; answer, the end of their connections, the port) comes afterwards.
(ert-deftest agent-q-mcp-test-stop-does-not-stall-emacs ()
  (agent-q-mcp-test--with
    (let* ((target (agent-q-mcp-test--temp-file "old\n"))
           (asked nil)
           (agent-q-approval-function (lambda (&rest _) (setq asked t) :later))
           (slow nil))
      (unwind-protect
          (progn
            (agent-q-mcp-mode 1)
            (let* ((url agent-q-mcp--url)
                   (token agent-q-mcp--token)
                   (session (agent-q-mcp-http-connect url token))
                   (call (agent-q-mcp-http-call-start url token session "write_file"
                                                      (list :path target :content "new\n"))))
              ;; One client's call waits for the user; another is in the
              ;; middle of sending a request: both hold a connection.
              (agent-q-mcp-http-wait (lambda () asked) 20 "the approval prompt")
              (setq slow (agent-q-mcp-http-send-part
                          url token session (agent-q-mcp-http-json "tools/list" 7)))
              (accept-process-output nil 0.1)
              (let ((stall (agent-q-mcp-http-stall (lambda () (agent-q-mcp-mode -1)))))
                (message "agent-q-mcp-mode off: the call took %.1f ms, the timer was late by %.1f ms at most"
                         (* 1000 (plist-get stall :call)) (* 1000 (plist-get stall :late)))
                (should (< (plist-get stall :call) 0.2)))
              (should-not agent-q-mcp-mode)
              (should-not (agent-q-mcp-running-p))
              (should-not (file-exists-p agent-q-mcp-connection-file))
              ;; The port is free at once.
              (should (agent-q-mcp-test--bind (agent-q-mcp-test--port url)))
              ;; The waiting client hears why its call ended,
              (let ((result (agent-q-mcp-http-call-result call)))
                (should (plist-get result :error))
                (should (string-match-p "Emacs stopped the MCP server" (plist-get result :text))))
              ;; the one sending is cut off,
              (agent-q-mcp-http-wait (lambda () (not (process-live-p slow))) 10
                                     "the end of the slow connection")
              ;; and nothing ran.
              (should (equal (agent-q-mcp-test--file target) "old\n"))
              (should-not agent-q--pending)))
        (agent-q-mcp-mode -1)
        (when slow
          (delete-process slow)
          (kill-buffer (process-buffer slow)))
        (delete-file target)))))

;; Emacs's exit, unlike a stop, waits for what the stop left to its
;; thread, which would die with Emacs: the connections close first.
(ert-deftest agent-q-mcp-test-exit-waits-for-the-stop-to-finish ()
  (agent-q-mcp-test--with
    (let ((slow nil))
      (unwind-protect
          (let* ((url (agent-q-mcp-start))
                 (token agent-q-mcp--token)
                 (session (agent-q-mcp-http-connect url token)))
            (should (memq #'agent-q-mcp--stop-at-exit kill-emacs-hook))
            ;; A client in the middle of its request: closing its connection
            ;; takes the stop's whole time for closing (half a second).
            (setq slow (agent-q-mcp-http-send-part
                        url token session (agent-q-mcp-http-json "tools/list" 7)))
            (accept-process-output nil 0.1)
            (should (process-live-p slow))
            (let ((start (float-time)))
              ;; What Emacs runs when it exits.
              (agent-q-mcp--stop-at-exit)
              (message "agent-q-mcp--stop-at-exit took %.0f ms" (* 1000 (- (float-time) start))))
            (should-not (memq #'agent-q-mcp--stop-at-exit kill-emacs-hook))
            ;; The connection is closed already: Emacs only has to read that.
            (let ((deadline (+ (float-time) 0.1)))
              (while (and (process-live-p slow) (< (float-time) deadline))
                (accept-process-output slow 0.01)))
            (should-not (process-live-p slow)))
        (when slow
          (delete-process slow)
          (kill-buffer (process-buffer slow)))))))

(ert-deftest agent-q-mcp-test-stop-keeps-a-file-another-emacs-wrote ()
  (agent-q-mcp-test--with
    (agent-q-mcp-start)
    ;; Another Emacs started its own server and wrote the file meanwhile.
    (with-temp-file agent-q-mcp-connection-file
      (insert "{\"url\":\"http://127.0.0.1:1/mcp\",\"token\":\"x\",\"pid\":1}"))
    (agent-q-mcp-stop)
    (should (file-exists-p agent-q-mcp-connection-file))))

(ert-deftest agent-q-mcp-test-start-restores-a-missing-connection-file ()
  (agent-q-mcp-test--with
    (let ((url (agent-q-mcp-start)))
      (delete-file agent-q-mcp-connection-file)
      (should (eq (plist-get (agent-q-mcp-status) :file-state) 'missing))
      (should (equal (agent-q-mcp-start) url))
      (should (eq (plist-get (agent-q-mcp-status) :file-state) 'ours))
      (let ((connection (agent-q-mcp-test--connection)))
        (should (equal (alist-get 'url connection) url))
        (should (= (file-modes agent-q-mcp-connection-file) #o600))
        (agent-q-mcp-http-connect url (alist-get 'token connection))))))

(ert-deftest agent-q-mcp-test-a-second-emacs-leaves-the-first-ones-file ()
  "A second Emacs with `agent-q-mcp-mode' in its init neither takes nor removes the file.
The first Emacs (this one) serves a real client before, while and
after the second runs; the second says which Emacs serves and does not
serve itself."
  (agent-q-mcp-test--with
    (let* ((url (agent-q-mcp-start))
           (token agent-q-mcp--token)
           (session (agent-q-mcp-http-connect url token))
           (ready (expand-file-name "ready" dir))
           (quit (expand-file-name "quit" dir))
           (script (expand-file-name "second.el" dir))
           (lisp-dir (file-name-directory (locate-library "agent-q")))
           (emacs (expand-file-name invocation-name invocation-directory))
           (call (lambda ()
                   (should (equal (agent-q-mcp-http-call url token session "function_arglist"
                                                         (list :function "car"))
                                  '(:error nil :text "(car LIST)"))))))
      (funcall call)
      (with-temp-file script
        (prin1 `(progn
                  (setq agent-q-audit-file nil
                        agent-q-mcp-connection-file ,agent-q-mcp-connection-file)
                  (require 'agent-q)
                  (agent-q-mcp-mode 1)
                  (princ (format "mode %s running %s\n" agent-q-mcp-mode (agent-q-mcp-running-p)))
                  (write-region "" nil ,ready)
                  (while (not (file-exists-p ,quit)) (sleep-for 0.05))
                  (kill-emacs 0))
               (current-buffer)))
      (let* ((output (generate-new-buffer " *second*"))
             (second (make-process :name "agent-q-second-emacs" :buffer output
                                   :command (list emacs "--batch" "-Q" "-L" lisp-dir "-l" script)
                                   :connection-type 'pipe :noquery t :sentinel #'ignore)))
        (unwind-protect
            (progn
              (agent-q-mcp-http-wait (lambda () (or (file-exists-p ready)
                                                    (not (process-live-p second))))
                                     30 "the second Emacs")
              (should (file-exists-p ready))
              (should (eq (plist-get (agent-q-mcp-status) :file-state) 'ours))
              (funcall call)
              (write-region "" nil quit)
              (agent-q-mcp-http-wait (lambda () (not (process-live-p second))) 30
                                     "the second Emacs's exit")
              (let ((said (with-current-buffer output (buffer-string))))
                (should (string-match-p "mode nil running nil" said))
                (should (string-match-p (format "Emacs %d serves MCP through" (emacs-pid)) said)))
              ;; Its exit removed nothing: agents configured for this Emacs go on.
              (should (eq (plist-get (agent-q-mcp-status) :file-state) 'ours))
              (should (equal (alist-get 'url (agent-q-mcp-test--connection)) url))
              (funcall call))
          (when (process-live-p second) (delete-process second))
          (kill-buffer output))))))

(ert-deftest agent-q-mcp-test-starting-twice-is-harmless ()
  (agent-q-mcp-test--with
    (let* ((url (agent-q-mcp-start))
           (token agent-q-mcp--token)
           (file-before (agent-q-mcp-test--file agent-q-mcp-connection-file))
           (messages nil))
      (cl-letf (((symbol-function 'message)
                 (lambda (format &rest args) (push (apply #'format-message format args) messages))))
        (should (equal (call-interactively #'agent-q-mcp-start) url)))
      ;; Same server, same token, same file: clients already connected go on.
      (should (equal agent-q-mcp--token token))
      (should (equal (agent-q-mcp-test--file agent-q-mcp-connection-file) file-before))
      (should (equal messages (list (format "agent-q: the MCP server is already running at %s" url))))
      (agent-q-mcp-http-connect url token)
      ;; Called from Lisp it says nothing and returns the url.
      (should (equal (agent-q-mcp-start) url)))))

(ert-deftest agent-q-mcp-test-start-on-a-busy-port-fails-clearly ()
  (agent-q-mcp-test--with
    (let* ((blocker (make-network-process :name "agent-q-mcp-test-blocker" :server t
                                          :host "127.0.0.1" :service t :family 'ipv4
                                          :noquery t))
           (agent-q-mcp-port (process-contact blocker :service)))
      (unwind-protect
          (let ((err (should-error (agent-q-mcp-start))))
            (should (string-match-p (format "127\\.0\\.0\\.1:%d" agent-q-mcp-port)
                                    (error-message-string err)))
            (should-not (agent-q-mcp-running-p))
            (should-not (file-exists-p agent-q-mcp-connection-file)))
        (delete-process blocker)))))

(ert-deftest agent-q-mcp-test-status ()
  (agent-q-mcp-test--with
    (should-not (agent-q-mcp-status))
    (let ((messages nil))
      (cl-letf (((symbol-function 'message)
                 (lambda (format &rest args) (push (apply #'format-message format args) messages))))
        (call-interactively #'agent-q-mcp-status))
      (should (string-match-p "not running" (car messages))))
    (let* ((url (agent-q-mcp-start))
           (token agent-q-mcp--token)
           (session (agent-q-mcp-http-connect url token))
           (asked nil)
           (agent-q-approval-function (lambda (&rest _) (setq asked t) :later))
           (status (agent-q-mcp-status)))
      (should (equal (plist-get status :url) url))
      (should (equal (plist-get status :token) token))
      (should (eql (plist-get status :pending) 0))
      (should (equal (plist-get status :connection-file)
                     (expand-file-name agent-q-mcp-connection-file)))
      (let ((call (agent-q-mcp-http-call-start url token session "eval_form"
                                               (list :form "(+ 1 2)"))))
        (agent-q-mcp-http-wait (lambda () asked) 20 "the approval prompt")
        (should (eql (plist-get (agent-q-mcp-status) :pending) 1))
        ;; The client that called: its name, protocol revision and last call.
        (let ((connected (plist-get (agent-q-mcp-status) :connected)))
          (should (= (length connected) 1))
          (should (equal (plist-get (car connected) :client) "agent-q-ert 1.0 (MCP)"))
          (should (equal (plist-get (car connected) :protocol) agent-q-mcp-http-protocol))
          (should (equal (plist-get (car connected) :last-tool) "eval_form"))
          (should (= (plist-get (car connected) :calls) 1)))
        ;; Interactively: the state in the echo area, never the token, and no
        ;; command that would go stale at the next start.
        (let ((messages nil) (kill-ring nil))
          (cl-letf (((symbol-function 'message)
                     (lambda (format &rest args) (push (apply #'format-message format args) messages))))
            (call-interactively #'agent-q-mcp-status))
          (should (string-match-p (regexp-quote url) (car messages)))
          (should (string-match-p "1 call(s) waiting" (car messages)))
          (should (string-match-p (format "agent-q-ert 1\\.0 (MCP) (%s, 1 call, last eval_form"
                                          (regexp-quote agent-q-mcp-http-protocol))
                                  (car messages)))
          (should (string-match-p "agent-q-mcp-connect-agent" (car messages)))
          (should-not (string-match-p token (car messages)))
          (should-not kill-ring))
        (agent-q-cancel-pending)
        (let ((result (agent-q-mcp-http-call-result call)))
          (should (plist-get result :error))
          (should (string-match-p "cancel" (plist-get result :text))))
        (agent-q-mcp-http-wait (lambda () (eql (plist-get (agent-q-mcp-status) :pending) 0))
                               10 "no call pending")))
    (agent-q-mcp-stop)
    (should-not (agent-q-mcp-status))))

(ert-deftest agent-q-mcp-test-mode-starts-and-stops ()
  (agent-q-mcp-test--with
    (unwind-protect
        (progn
          (agent-q-mcp-mode 1)
          (should agent-q-mcp-mode)
          (should (agent-q-mcp-running-p))
          (should (file-exists-p agent-q-mcp-connection-file))
          (agent-q-mcp-http-connect (alist-get 'url (agent-q-mcp-test--connection))
                                    (alist-get 'token (agent-q-mcp-test--connection)))
          (agent-q-mcp-mode -1)
          (should-not (agent-q-mcp-running-p))
          (should-not (file-exists-p agent-q-mcp-connection-file)))
      (agent-q-mcp-mode -1))))

;;;; Calls

(ert-deftest agent-q-mcp-test-cautious-is-confirmed-and-the-prompt-names-the-client ()
  (agent-q-mcp-test--with
    (let* ((url (agent-q-mcp-start))
           (token agent-q-mcp--token)
           (session (agent-q-mcp-http-connect url token "claude-code" "2.1.197"))
           (prompts nil)
           (contexts nil)
           (answer ?n)
           (agent-q-approval-function
            (lambda (tool args)
              (push agent-q-approval-context contexts)
              (cl-letf (((symbol-function 'agent-q-prompt--read-key)
                         (lambda (prompt &rest _) (push prompt prompts) answer)))
                (agent-q-approve-in-minibuffer tool args)))))
      (should (equal agent-q-mcp-confirm-safety-levels '(:cautious :dangerous)))
      ;; eval_form is cautious: asked; n denies it, and the client hears so.
      (let ((result (agent-q-mcp-http-call url token session "eval_form" (list :form "(+ 1 2)"))))
        (should (plist-get result :error))
        (should (equal (plist-get result :text) "User denied tool execution")))
      (should (= (length prompts) 1))
      (should (string-match-p "\\`agent-q: claude-code 2\\.1\\.197 (MCP) wants to run eval_form \\[cautious\\]"
                              (car prompts)))
      (should (equal (plist-get (car contexts) :client) "claude-code 2.1.197 (MCP)"))
      ;; y runs it.
      (setq answer ?y)
      (should (equal (agent-q-mcp-http-call url token session "eval_form" (list :form "(+ 1 2)"))
                     '(:error nil :text "Value: 3")))
      ;; A safe tool is not asked.
      (should (equal (plist-get (agent-q-mcp-http-call url token session "function_arglist"
                                                       (list :function "car"))
                                :error)
                     nil))
      (should (= (length prompts) 2))
      ;; With cautious left out, eval_form runs without asking.
      (let ((agent-q-mcp-confirm-safety-levels '(:dangerous)))
        (should (equal (agent-q-mcp-http-call url token session "eval_form" (list :form "(* 6 7)"))
                       '(:error nil :text "Value: 42"))))
      (should (= (length prompts) 2)))))

(ert-deftest agent-q-mcp-test-always-is-for-that-client-only ()
  (agent-q-mcp-test--with
    (let* ((url (agent-q-mcp-start))
           (token agent-q-mcp--token)
           (claude (agent-q-mcp-http-connect url token "claude-code" "2.1.197"))
           (gemini (agent-q-mcp-http-connect url token "gemini-cli" "0.61.0"))
           (prompts nil)
           (keys nil)
           (agent-q-approval-function
            (lambda (tool args)
              ;; The prompt's keys (see agent-q-keys-support.el); "a" is
              ;; confirmed with "!" in a prompt of its own, not counted here.
              (cl-letf (((symbol-function 'agent-q-prompt--read-key)
                         (lambda (prompt &rest _)
                           (unless (string-prefix-p "Approve " prompt) (push prompt prompts))
                           (pop keys))))
                (agent-q-approve-in-minibuffer tool args)))))
      ;; "a" for claude-code's eval_form: approved, and remembered...
      (setq keys (list ?a ?!))
      (should (equal (agent-q-mcp-http-call url token claude "eval_form" (list :form "(+ 1 1)"))
                     '(:error nil :text "Value: 2")))
      (should (string-match-p "(a)lways for claude-code 2\\.1\\.197 (MCP)" (car prompts)))
      ;; ...so its next eval_form runs without a prompt,
      (should (equal (agent-q-mcp-http-call url token claude "eval_form" (list :form "(+ 2 2)"))
                     '(:error nil :text "Value: 4")))
      (should (= (length prompts) 1))
      ;; but gemini-cli's eval_form is asked (and denied here),
      (setq keys (list ?n))
      (should (equal (agent-q-mcp-http-call url token gemini "eval_form" (list :form "(+ 3 3)"))
                     '(:error t :text "User denied tool execution")))
      (should (= (length prompts) 2))
      (should (string-match-p "gemini-cli 0\\.61\\.0 (MCP) wants to run eval_form" (car prompts)))
      ;; and so is another tool for claude-code.
      (setq keys (list ?n))
      (should (plist-get (agent-q-mcp-http-call url token claude "macroexpand_form"
                                                (list :form "(when a b)"))
                         :error))
      (should (= (length prompts) 3)))))

(ert-deftest agent-q-mcp-test-client-names-are-bounded-in-the-prompt ()
  "A client's name is its own claim: it cannot write the prompt."
  (agent-q-mcp-test--with
    (let* ((url (agent-q-mcp-start))
           (token agent-q-mcp--token)
           (session (agent-q-mcp-http-connect
                     url token
                     (concat "x wants to run describe_symbol [safe]\n" (string #x202e) (make-string 500 ?\s) "y")
                     "1"))
           (contexts nil)
           (agent-q-approval-function
            (lambda (&rest _) (push agent-q-approval-context contexts) :denied)))
      (agent-q-mcp-http-call url token session "eval_form" (list :form "1"))
      (let ((client (plist-get (car contexts) :client)))
        (should (<= (length client) 100))
        (should-not (string-match-p (concat "[\n\t" (string #x202e) "]") client))
        (should (string-suffix-p " (MCP)" client))))))

(ert-deftest agent-q-mcp-test-busy-emacs-delays-calls-but-loses-none ()
  (agent-q-mcp-test--with
    (let* ((runs nil)
           (busy-until nil))
      (agent-q-deftool "mcp_test_count" "Count the calls." '((:name "n" :type :integer))
        :required '("n")
        :handler (lambda (args)
                   (push (cons (gethash "n" args) (float-time)) runs)
                   (format "run %d of call %d" (length runs) (gethash "n" args))))
      (unwind-protect
          (let* ((url (agent-q-mcp-start))
                 (token agent-q-mcp--token)
                 (session (agent-q-mcp-http-connect url token))
                 (calls (mapcar (lambda (n)
                                  (agent-q-mcp-http-call-start url token session "mcp_test_count"
                                                               (list :n n)))
                                '(1 2 3))))
            ;; Emacs is busy for 3 s: no process output read, no timer run.
            (setq busy-until (+ (float-time) 3))
            (while (< (float-time) busy-until))
            ;; The server queued the three calls meanwhile; none ran.
            (should (eql (plist-get (agent-q-mcp-status) :pending) 3))
            (should-not runs)
            ;; Free again: each is answered once, by its own run.
            (let ((results (mapcar #'agent-q-mcp-http-call-result calls)))
              (should (equal (sort (mapcar (lambda (r) (plist-get r :text)) results) #'string<)
                             (sort (mapcar (lambda (run)
                                             (format "run %d of call %d"
                                                     (1+ (cl-position run (reverse runs)))
                                                     (car run)))
                                           runs)
                                   #'string<)))
              (should-not (cl-some (lambda (r) (plist-get r :error)) results)))
            (accept-process-output nil 0.5)
            (should (equal (sort (mapcar #'car runs) #'<) '(1 2 3)))
            (should (cl-every (lambda (run) (>= (cdr run) busy-until)) runs))
            (should (eql (plist-get (agent-q-mcp-status) :pending) 0)))
        (agent-q-remove-tool "mcp_test_count")))))

;;;; Cancellation and the audit

(defun agent-q-mcp-test--no-success (call)
  "Check that the cancelled tools/call of the process CALL ended with no success.
The specification says a cancelled request gets no response; the
stream ends, at most with an error result."
  (let* ((answer (agent-q-mcp-http-response call))
         (response (cl-find-if (lambda (m) (plist-member m :id)) (plist-get answer :messages)))
         (result (plist-get response :result)))
    (should (eql (plist-get answer :status) 200))
    (should (or (null response) (eq (plist-get result :isError) t)))))

(ert-deftest agent-q-mcp-test-cancelled-calls-run-nothing ()
  (agent-q-mcp-test--with
    (let* ((url (agent-q-mcp-start))
           (token agent-q-mcp--token)
           (session (agent-q-mcp-http-connect url token))
           (target (agent-q-mcp-test--temp-file "line 1\nline 2\n"))
           (asked nil)
           (agent-q-approval-function (lambda (&rest _) (setq asked t) :later)))
      (unwind-protect
          (progn
            ;; A write waiting for its approval, withdrawn by the client:
            (let ((call (agent-q-mcp-http-call-start url token session "write_file"
                                                     (list :path target :content "x\n"))))
              (agent-q-mcp-http-wait (lambda () asked) 20 "the approval prompt")
              (should (= (length agent-q--pending) 1))
              (should (eql (agent-q-mcp-http-cancel url token session call) 202))
              (agent-q-mcp-test--no-success call)
              ;; the decision is no longer pending, and nothing ran.
              (agent-q-mcp-http-wait (lambda () (null agent-q--pending)) 10 "the withdrawal")
              (should (equal (agent-q-mcp-test--file target) "line 1\nline 2\n")))
            ;; An edit under review, withdrawn by the client: the review closes.
            (let* ((agent-q-approval-function (lambda (&rest _) :approved)) ; reading it
                   (call (agent-q-mcp-http-call-start
                          url token session "propose_file_edit"
                          (list :path target :original "line 1\nline 2\n"
                                :modified "line 1\nLINE 2\n" :description "An edit")))
                   (review nil))
              (agent-q-mcp-http-wait
               (lambda ()
                 (setq review (cl-find-if (lambda (b) (string-prefix-p "*agent-q-diff: " (buffer-name b)))
                                          (buffer-list))))
               20 "the review buffer")
              (should (eql (agent-q-mcp-http-cancel url token session call) 202))
              (agent-q-mcp-test--no-success call)
              (agent-q-mcp-http-wait (lambda () (not (buffer-live-p review))) 10 "the review to close")
              (should-not agent-q--pending)
              (should (equal (agent-q-mcp-test--file target) "line 1\nline 2\n"))))
        (delete-file target)))))

(ert-deftest agent-q-mcp-test-the-audit-names-the-client ()
  (agent-q-mcp-test--with
    (let* ((agent-q-audit-file (expand-file-name "audit.jsonl" dir))
           (url (agent-q-mcp-start))
           (token agent-q-mcp--token)
           (session (agent-q-mcp-http-connect url token "codex-mcp-client" "0.159.3"))
           (agent-q-approval-function (lambda (&rest _) :approved)))
      (should (equal (agent-q-mcp-http-call url token session "function_arglist" (list :function "car"))
                     '(:error nil :text "(car LIST)")))
      (should (equal (agent-q-mcp-http-call url token session "eval_form" (list :form "(+ 1 2)"))
                     '(:error nil :text "Value: 3")))
      (let ((entries (with-temp-buffer
                       (insert-file-contents agent-q-audit-file)
                       (mapcar (lambda (line) (json-parse-string line :object-type 'plist))
                               (split-string (buffer-string) "\n" t)))))
        ;; Every MCP call is audited, safe ones included, with its client.
        (should (equal (mapcar (lambda (e) (list (plist-get e :event) (plist-get e :tool)
                                                 (plist-get e :decision)))
                               entries)
                       '(("run" "function_arglist" "auto") ("result" "function_arglist" "auto")
                         ("run" "eval_form" "approved") ("result" "eval_form" "approved"))))
        (should (cl-every (lambda (e) (equal (plist-get e :client) "codex-mcp-client 0.159.3 (MCP)"))
                          entries))))))

(defvar agent-q-builtins--history)
(defvar agent-q-builtins--last-error)

(ert-deftest agent-q-mcp-test-history-and-last-error-are-the-session-s-own ()
  "What one session evaluated is its own, whatever name another claims.
Session A (claude-code) evaluates a form the user approved, which reads
a secret, and one that fails with another.  Session B, claiming A's
very clientInfo, sees neither in get_repl_history nor get_last_error;
nor does a stateless request with that clientInfo, even one that sends
A's session id.  A still sees its own, and the user's own Lisp sees
everything."
  (agent-q-mcp-test--with
    (let* ((agent-q-builtins--history nil)
           (agent-q-builtins--last-error nil)
           (url (agent-q-mcp-start))
           (token agent-q-mcp--token)
           (a (agent-q-mcp-http-connect url token "claude-code" "2.1.197"))
           (b (agent-q-mcp-http-connect url token "claude-code" "2.1.197"))
           (approved 0)
           (agent-q-approval-function (lambda (&rest _) (cl-incf approved) :approved))
           (secrets "sec-ret-17\\|fail-ure-23"))
      (should-not (equal a b))
      (should (equal (agent-q-mcp-http-call url token a "eval_form"
                                            (list :form "(concat \"sec-\" \"ret-17\")"))
                     '(:error nil :text "Value: \"sec-ret-17\"")))
      (should (plist-get (agent-q-mcp-http-call url token a "eval_form"
                                                (list :form "(error \"fail-%s\" \"ure-23\")"))
                         :error))
      (should (= approved 2))
      ;; B: the same clientInfo, another session.
      (let ((history (agent-q-mcp-http-call url token b "get_repl_history" nil))
            (last (agent-q-mcp-http-call url token b "get_last_error" nil)))
        (should-not (plist-get history :error))
        (should (string-prefix-p "No REPL history recorded yet" (plist-get history :text)))
        (should (equal last '(:error nil :text "No recent errors recorded."))))
      ;; Stateless requests with that clientInfo, with or without A's session id.
      (dolist (session (list nil a))
        (dolist (tool '("get_repl_history" "get_last_error"))
          (let ((result (agent-q-mcp-http-stateless-call url token tool nil
                                                         :name "claude-code" :version "2.1.197"
                                                         :session session)))
            (should-not (plist-get result :error))
            (should-not (string-match-p secrets (plist-get result :text)))
            (should (string-match-p "\\`No " (plist-get result :text))))))
      ;; A stateless request sees at most its own call: an eval_form that
      ;; fails, then get_last_error in another request, sees nothing of it.
      (should (plist-get (agent-q-mcp-http-stateless-call url token "eval_form"
                                                          (list :form "(error \"mine\")"))
                         :error))
      (should (equal (agent-q-mcp-http-stateless-call url token "get_last_error" nil)
                     '(:error nil :text "No recent errors recorded.")))
      ;; B's own evaluation is B's, and A does not see it.
      (should (equal (agent-q-mcp-http-call url token b "eval_form" (list :form "(+ 40 2)"))
                     '(:error nil :text "Value: 42")))
      (let ((history (plist-get (agent-q-mcp-http-call url token b "get_repl_history" nil) :text)))
        (should (string-match-p "1 of 1 entries" history))
        (should-not (string-match-p secrets history)))
      ;; A sees its own, and only its own.
      (let ((history (plist-get (agent-q-mcp-http-call url token a "get_repl_history" nil) :text))
            (last (plist-get (agent-q-mcp-http-call url token a "get_last_error" nil) :text)))
        (should (string-match-p "2 of 2 entries" history))
        (should (string-match-p "sec-ret-17" history))
        (should-not (string-match-p "(\\+ 40 2)\\|mine" history))
        (should (string-match-p "fail-ure-23" last)))
      ;; The user's own Lisp, naming no client, sees every channel's.
      (let ((agent-q-client nil))
        (let ((history (plist-get (car (agent-q-execute-tool-calls
                                        '((:id "u" :name "get_repl_history"))))
                                  :content)))
          (should (string-match-p "4 of 4 entries" history))
          (should (string-match-p "sec-ret-17" history)))))))

;; The audit log outlives a server: two starts give two sets of ids that
;; never meet, and so do two Emacs (the pid is in the id).
(ert-deftest agent-q-mcp-test-call-ids-are-unique-across-starts ()
  (agent-q-mcp-test--with
    (let ((agent-q-audit-file (expand-file-name "audit.jsonl" dir))
          (ids nil))
      (dotimes (_ 2)
        (let* ((url (agent-q-mcp-start))
               (token agent-q-mcp--token)
               (session (agent-q-mcp-http-connect url token)))
          (should (equal (agent-q-mcp-http-call url token session "function_arglist"
                                                (list :function "car"))
                         '(:error nil :text "(car LIST)")))
          (agent-q-mcp-stop)))
      (with-temp-buffer
        (insert-file-contents agent-q-audit-file)
        (dolist (line (split-string (buffer-string) "\n" t))
          (let ((entry (json-parse-string line :object-type 'plist)))
            (when (equal (plist-get entry :event) "result")
              (push (plist-get entry :id) ids)))))
      (should (= (length ids) 2))
      (should (cl-every (lambda (id)
                          (string-match-p (format "\\`mcp-[0-9]+\\.%d-[0-9]+\\'" (emacs-pid)) id))
                        ids))
      (should-not (equal (car ids) (cadr ids))))))

;;;; Emacs exiting with a call pending

(defun agent-q-mcp-test--child (dir how)
  "Serve MCP from a child Emacs in DIR; end it by HOW with a call pending.
The pending call is a write_file waiting for its approval.
HOW is `kill-emacs' (the child calls it) or `sigterm'.  Return a plist:
:result (the client's answer), :connection (whether the connection
file remains), :target (the file's text afterwards)."
  (let* ((connection (expand-file-name "child-mcp.json" dir))
         (pending-file (expand-file-name "pending" dir))
         (quit-file (expand-file-name "quit" dir))
         (target (expand-file-name "target.txt" dir))
         (script (expand-file-name "child.el" dir))
         (lisp-dir (file-name-directory (locate-library "agent-q")))
         (emacs (expand-file-name invocation-name invocation-directory)))
    (with-temp-file target (insert "old\n"))
    (with-temp-file script
      (prin1 `(progn
                (setq agent-q-audit-file nil
                      agent-q-mcp-connection-file ,connection
                      ;; Every decision is left for later: the call stays pending.
                      agent-q-approval-function (lambda (&rest _) :later))
                (require 'agent-q)
                (agent-q-mcp-start)
                (while t
                  (accept-process-output nil 0.05)
                  (when (and agent-q--pending (not (file-exists-p ,pending-file)))
                    (write-region "" nil ,pending-file))
                  (when (file-exists-p ,quit-file)
                    (kill-emacs 0))))
             (current-buffer)))
    (let ((child (make-process :name "agent-q-mcp-child" :buffer (generate-new-buffer " *child*")
                               :command (list emacs "--batch" "-Q" "-L" lisp-dir "-l" script)
                               :connection-type 'pipe :noquery t :sentinel #'ignore)))
      (unwind-protect
          (progn
            (agent-q-mcp-http-wait (lambda () (or (file-exists-p connection)
                                                  (not (process-live-p child))))
                                   30 "the child's connection file")
            (unless (file-exists-p connection)
              (ert-fail (list "The child did not serve"
                              (with-current-buffer (process-buffer child) (buffer-string)))))
            (let* ((json (let ((json-object-type 'alist)) (json-read-file connection)))
                   (url (alist-get 'url json))
                   (token (alist-get 'token json))
                   (session (agent-q-mcp-http-connect url token))
                   (call (agent-q-mcp-http-call-start url token session "write_file"
                                                      (list :path target :content "new\n"))))
              (agent-q-mcp-http-wait (lambda () (file-exists-p pending-file)) 30
                                     "the call pending in the child")
              (pcase how
                ('kill-emacs (write-region "" nil quit-file))
                ('sigterm (signal-process child 'SIGTERM)))
              (let ((result (agent-q-mcp-http-call-result call 30)))
                (agent-q-mcp-http-wait (lambda () (not (process-live-p child))) 20 "the child's exit")
                (list :result result
                      :connection (file-exists-p connection)
                      :port-free (agent-q-mcp-test--bind (agent-q-mcp-test--port url))
                      :target (agent-q-mcp-test--file target)))))
        (when (process-live-p child) (delete-process child))
        (kill-buffer (process-buffer child))))))

(ert-deftest agent-q-mcp-test-exit-answers-the-pending-call ()
  (dolist (how '(kill-emacs sigterm))
    (let ((dir (make-temp-file "agent-q-mcp-child" t)))
      (unwind-protect
          (let ((outcome (agent-q-mcp-test--child dir how)))
            (ert-info ((format "ended by %s: %S" how outcome))
              (should (plist-get (plist-get outcome :result) :error))
              (should (string-match-p "Emacs stopped the MCP server"
                                      (plist-get (plist-get outcome :result) :text)))
              (should-not (plist-get outcome :connection))
              (should (plist-get outcome :port-free))
              (should (equal (plist-get outcome :target) "old\n"))))
        (delete-directory dir t)))))

(provide 'agent-q-mcp-test)

;;; agent-q-mcp-test.el ends here
