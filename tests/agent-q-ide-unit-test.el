;;; agent-q-ide-unit-test.el --- ERT tests of agent-q-ide.el's Lisp parts  -*- lexical-binding: t -*-

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

;; Tests of the IDE companion's Lisp half against real Emacs, real files
;; and the real module: the files the mode writes (names, mode 0600,
;; removal), the environment it sets and restores, the editor context,
;; the merge review (hunks 1 and 3 accepted, 2 rejected, an edited hunk,
;; reject all, close), and a deny rule that rejects an agent's edit
;; without showing it.  tests/agent-q-ide-test.el runs the real agents.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'json)
(require 'agent-q)
(require 'agent-q-ide)
(require 'agent-q-review)
(require 'agent-q-mcp-http)
(require 'flymake)

(defun agent-q-ide-unit-test--numbered (n)
  "N lines \"line I\"."
  (mapconcat (lambda (i) (format "line %d\n" i)) (number-sequence 1 n) ""))

(defun agent-q-ide-unit-test--replace (text alist)
  "TEXT with the lines numbered in ALIST ((N . NEW) ...) replaced by NEW."
  (let ((lines (split-string text "\n")))
    (dolist (pair alist)
      (setf (nth (1- (car pair)) lines) (cdr pair)))
    (string-join lines "\n")))

(defconst agent-q-ide-unit-test--old (agent-q-ide-unit-test--numbered 40)
  "A 40-line text.")

(defconst agent-q-ide-unit-test--changes '((2 . "LINE TWO") (20 . "LINE TWENTY") (39 . "LINE 39"))
  "Three changes far enough apart to make three hunks.")

(defun agent-q-ide-unit-test--with (accepted)
  "The old text with the changes numbered in ACCEPTED (1-based) made."
  (agent-q-ide-unit-test--replace
   agent-q-ide-unit-test--old
   (cl-loop for change in agent-q-ide-unit-test--changes
            for i from 1 when (memq i accepted) collect change)))

(defun agent-q-ide-unit-test--merge (file driver)
  "Review the three changes to FILE with DRIVER; return (STATUS PLIST)."
  (let* ((answer nil)
         (agent-q-review--review-driver
          (lambda (buffer) (with-current-buffer buffer (funcall driver)))))
    (agent-q-review-merge-async
     file agent-q-ide-unit-test--old (agent-q-ide-unit-test--with '(1 2 3))
     (lambda (status plist) (setq answer (list status plist)))
     "Claude Code claude-code (IDE)" "Claude Code proposes this edit.")
    answer))

(defmacro agent-q-ide-unit-test--with-file (file &rest body)
  "Run BODY with FILE a temporary file holding the old text, visited."
  (declare (indent 1))
  `(let ((,file (make-temp-file "agent-q-ide-unit" nil ".txt" agent-q-ide-unit-test--old)))
     (unwind-protect
         (progn (find-file-noselect ,file) ,@body)
       (when-let ((b (find-buffer-visiting ,file)))
         (with-current-buffer b (set-buffer-modified-p nil))
         (kill-buffer b))
       (delete-file ,file))))

(defun agent-q-ide-unit-test--text (file)
  "FILE's text on disk."
  (with-temp-buffer (insert-file-contents file) (buffer-string)))

;;;; The merge review

(ert-deftest agent-q-ide-unit-test-merge-hunks-1-and-3 ()
  (agent-q-ide-unit-test--with-file file
    (let ((answer (agent-q-ide-unit-test--merge
                   file (lambda ()
                          ;; Headed with the agent's name.
                          (should (string-match-p "^From: Claude Code claude-code (IDE)$"
                                                  (buffer-string)))
                          (agent-q-review-accept)
                          (agent-q-review-reject)
                          (agent-q-review-accept)
                          (agent-q-review-finish)))))
      (should (eq (car answer) :success))
      (should (equal (plist-get (cadr answer) :text) (agent-q-ide-unit-test--with '(1 3))))
      (should (equal (plist-get (cadr answer) :summary)
                     "hunks 1 and 3 accepted; hunk 2 rejected"))
      ;; Neither the file nor its buffer changed: the agent writes.
      (should (equal (agent-q-ide-unit-test--text file) agent-q-ide-unit-test--old))
      (with-current-buffer (find-buffer-visiting file)
        (should (equal (buffer-string) agent-q-ide-unit-test--old))
        (should-not (buffer-modified-p))))))

(ert-deftest agent-q-ide-unit-test-merge-edited-hunk ()
  (agent-q-ide-unit-test--with-file file
    (let ((answer (agent-q-ide-unit-test--merge
                   file (lambda ()
                          (agent-q-review-reject)
                          ;; Hunk 2 edited by hand: its new text, context included.
                          (let ((hunk (agent-q-review--hunk agent-q-review--this-review 1)))
                            (aset (agent-q-review--review-decisions agent-q-review--this-review) 1
                                  (replace-regexp-in-string "LINE TWENTY" "Line Twenty, by hand"
                                                            (plist-get hunk :new-text) t t)))
                          (agent-q-review-finish)))))
      (should (eq (car answer) :success))
      (should (equal (plist-get (cadr answer) :text)
                     (agent-q-ide-unit-test--replace agent-q-ide-unit-test--old
                                                     '((20 . "Line Twenty, by hand")))))
      (should (string-match-p "hunk 2 accepted with the user's edits"
                              (plist-get (cadr answer) :summary))))))

(ert-deftest agent-q-ide-unit-test-merge-rejected ()
  (dolist (finish (list #'agent-q-review-cancel
                        (lambda () (agent-q-review-reject-all) (agent-q-review-finish))
                        (lambda () (kill-buffer (current-buffer)))))
    (agent-q-ide-unit-test--with-file file
      (let ((answer (agent-q-ide-unit-test--merge file finish)))
        (should (eq (car answer) :denied))
        (should-not (plist-get (cadr answer) :text))
        (should (equal (agent-q-ide-unit-test--text file) agent-q-ide-unit-test--old))))))

(ert-deftest agent-q-ide-unit-test-merge-close-and-pending ()
  (agent-q-ide-unit-test--with-file file
    (let* ((called nil)
           (review (agent-q-review-merge-async
                    file agent-q-ide-unit-test--old (agent-q-ide-unit-test--with '(1 2 3))
                    (lambda (&rest _) (setq called t)) "Gemini CLI (IDE)")))
      (unwind-protect
          (progn
            (should (memq review (agent-q-review-open-reviews)))
            (with-current-buffer (agent-q-review--review-buffer review)
              (agent-q-review-accept)
              (agent-q-review-reject))
            ;; As Gemini CLI's closeDiff asks: pending hunks taken as accepted.
            (should (equal (agent-q-review-merged-text review 'accept)
                           (agent-q-ide-unit-test--with '(1 3))))
            (should (equal (agent-q-review-merged-text review)
                           (agent-q-ide-unit-test--with '(1))))
            (agent-q-review-close review)
            (should-not (memq review (agent-q-review-open-reviews)))
            (should-not (buffer-live-p (agent-q-review--review-buffer review)))
            (should-not called))
        (agent-q-review-close review)))))

;;;; The editor context

(ert-deftest agent-q-ide-unit-test-context ()
  (let ((a (make-temp-file "agent-q-ide-ctx-a" nil ".txt" "first\nsecond line\nthird\n"))
        (b (make-temp-file "agent-q-ide-ctx-b" nil ".txt" "other\n"))
        (gone (make-temp-file "agent-q-ide-ctx-gone" nil ".txt" "x\n")))
    (unwind-protect
        (let ((transient-mark-mode t))
          (find-file-noselect gone)
          (delete-file gone)
          (set-buffer (find-file-noselect b))
          (set-buffer (find-file-noselect a))
          ;; Most recent first: A, then B.
          (bury-buffer (find-buffer-visiting b))
          (switch-to-buffer (find-buffer-visiting b))
          (switch-to-buffer (find-buffer-visiting a))
          (goto-char (point-min))
          (forward-line 1)
          (forward-char 3)
          (set-mark (point))
          (forward-char 4)
          (activate-mark)
          (let* ((files (plist-get (agent-q-ide-context) :files))
                 (first (car files)))
            (should (equal (plist-get first :path) a))
            (should (eq (plist-get first :active) t))
            (should (equal (plist-get first :line) 2))
            (should (equal (plist-get first :column) 7))
            (should (equal (plist-get first :selected) "ond "))
            (should (integerp (plist-get first :timestamp)))
            (should (equal (plist-get (cadr files) :path) b))
            (should-not (plist-get (cadr files) :active))
            (should-not (plist-member (cadr files) :line))
            ;; A buffer whose file is gone from disk is left out.
            (should-not (cl-find gone files :key (lambda (f) (plist-get f :path)) :test #'equal)))
          (deactivate-mark)
          (should-not (plist-get (car (plist-get (agent-q-ide-context) :files)) :selected)))
      (dolist (f (list a b gone))
        (when-let ((buffer (find-buffer-visiting f)))
          (with-current-buffer buffer (set-buffer-modified-p nil))
          (kill-buffer buffer))
        (when (file-exists-p f) (delete-file f))))))

(ert-deftest agent-q-ide-unit-test-flymake-diagnostics ()
  (require 'flymake)
  (let ((file (make-temp-file "agent-q-ide-diag" nil ".txt" "alpha\nbeta gamma\n")))
    (unwind-protect
        (with-current-buffer (find-file-noselect file)
          (let ((backend (lambda (report &rest _)
                           (funcall report
                                    (list (flymake-make-diagnostic
                                           (current-buffer) 12 17 :error "gamma is wrong"))))))
            (setq-local flymake-diagnostic-functions (list backend))
            (flymake-mode 1)
            (flymake-start)
            (let ((deadline (+ (float-time) 5)))
              (while (and (null (flymake-diagnostics)) (< (float-time) deadline))
                (accept-process-output nil 0.05)))
            (should (equal (agent-q-ide-diagnostics (concat "file://" file))
                           `((:path ,file
                              :diagnostics ((:message "gamma is wrong" :severity "error"
                                             :source ,(format "%s" backend) :code nil
                                             :line 2 :column 6 :end-line 2 :end-column 11))))))
            (flymake-mode -1)))
      (when-let ((buffer (find-buffer-visiting file)))
        (kill-buffer buffer))
      (delete-file file))))

;; Flycheck is not part of Emacs: Debian's elpa-flycheck (installed by
;; scripts/ensure-deps.sh --test) or the user's own.  It runs in a child
;; Emacs: Flycheck brings dash, whose `->' macros would change what
;; other tests in this Emacs find.

(defconst agent-q-ide-unit-test--flycheck-script
  '(progn
     (unless (locate-library "flycheck")
       (dolist (dir (file-expand-wildcards "/usr/share/emacs/site-lisp/elpa/*"))
         (when (string-match-p "/\\(flycheck\\|dash\\|let-alist\\|pkg-info\\|epl\\)-[0-9]" dir)
           (add-to-list 'load-path dir))))
     (unless (require 'flycheck nil t)
       (princ "Flycheck is not installed: run scripts/ensure-deps.sh --test (Debian's elpa-flycheck)")
       (kill-emacs 2))
     (require 'agent-q-ide)
     (flycheck-define-generic-checker 'agent-q-ide-unit-test-checker
       "A checker that finds \"gamma\" suspect."
       :start (lambda (checker callback)
                (funcall callback 'finished
                         (list (flycheck-error-new-at 2 6 'warning "gamma is suspect"
                                                      :checker checker :id "G1"
                                                      :end-line 2 :end-column 11))))
       :modes '(text-mode fundamental-mode))
     (let ((file (make-temp-file "agent-q-ide-diag" nil ".txt" "alpha\nbeta gamma\n")))
       (with-current-buffer (find-file-noselect file)
         (setq-local flycheck-checkers '(agent-q-ide-unit-test-checker))
         (flycheck-mode 1)
         (flycheck-buffer)
         (let ((deadline (+ (float-time) 5)))
           (while (and (null flycheck-current-errors) (< (float-time) deadline))
             (accept-process-output nil 0.05)))
         (prin1 (list file (agent-q-ide-diagnostics (concat "file://" file)))))
       (delete-file file)))
  "What the child Emacs runs: it prints (FILE DIAGNOSTICS).")

(ert-deftest agent-q-ide-unit-test-flycheck-diagnostics ()
  (with-temp-buffer
    (let ((status (call-process (expand-file-name invocation-name invocation-directory)
                                nil (list t nil) nil
                                "--batch" "-Q" "-L" (file-name-directory (locate-library "agent-q"))
                                "--eval" (prin1-to-string agent-q-ide-unit-test--flycheck-script))))
      (unless (eq status 0)
        (ert-fail (list "The child Emacs failed" status (buffer-string))))
      (pcase-let ((`(,file ,diagnostics) (car (read-from-string (buffer-string)))))
        (should (equal diagnostics
                       `((:path ,file
                          :diagnostics ((:message "gamma is suspect" :severity "warning"
                                         :source "agent-q-ide-unit-test-checker" :code "G1"
                                         :line 2 :column 6 :end-line 2 :end-column 11))))))))))

(ert-deftest agent-q-ide-unit-test-open-file ()
  ;; Claude Code's openFile, as the module hands it to Lisp; the answer is
  ;; caught at the module's door.
  (let* ((file (make-temp-file "agent-q-ide-open" nil ".txt" "alpha\nbeta gamma\ndelta\nepsilon\n"))
         (answers nil)
         (selected (selected-window)))
    (unwind-protect
        (cl-letf (((symbol-function 'agent-q--core-ide-answer)
                   (lambda (key answer) (push (list key answer) answers) t)))
          (agent-q-ide--handle (list :type 'open-file :key 7 :path file
                                           :start-text "gamma" :end-text "delta"))
          (should (equal answers '((7 (:ok t)))))
          (let ((buffer (find-buffer-visiting file)))
            (should (get-buffer-window buffer))
            ;; Shown, not selected: keys typed meanwhile stay where they were going.
            (should (eq (selected-window) selected))
            (with-current-buffer buffer
              (should (equal (buffer-substring-no-properties (region-beginning) (region-end))
                             "gamma\ndelta"))
              (should (looking-back "delta" (line-beginning-position)))))
          (agent-q-ide--handle (list :type 'open-file :key 8 :path (concat file ".missing")))
          (should (equal (car answers)
                         `(8 (:error ,(format "No such regular file: %s.missing" file))))))
      (when-let ((buffer (find-buffer-visiting file)))
        (kill-buffer buffer))
      (delete-file file))))

;;;; The mode: its files and the environment

(defmacro agent-q-ide-unit-test--with-mode (dir &rest body)
  "Run BODY with DIR a temporary directory holding TMPDIR and CLAUDE_CONFIG_DIR.
The mode is off after BODY."
  (declare (indent 1))
  `(let* ((,dir (file-name-as-directory (make-temp-file "agent-q-ide-mode" t)))
          (process-environment
           (append (list (concat "TMPDIR=" ,dir "tmp")
                         (concat "CLAUDE_CONFIG_DIR=" ,dir "claude")
                         "CLAUDE_CODE_SSE_PORT=1")
                   process-environment))
          (agent-q-ide-workspace-folders (list (concat ,dir "work"))))
     (unwind-protect
         (progn ,@body)
       (agent-q-ide-mode -1)
       (delete-directory ,dir t))))

(defun agent-q-ide-unit-test--json (file)
  "The JSON object in FILE, as an alist."
  (json-parse-string (agent-q-ide-unit-test--text file) :object-type 'alist :array-type 'list))

(ert-deftest agent-q-ide-unit-test-mode-files-and-environment ()
  (agent-q-ide-unit-test--with-mode dir
    (agent-q-ide-mode 1)
    (should agent-q-ide-mode)
    (should (memq #'agent-q-ide--stop-at-exit kill-emacs-hook))
    (let* ((gemini-port (plist-get agent-q-ide--servers :gemini-port))
           (claude-port (plist-get agent-q-ide--servers :claude-port))
           (gemini (format "%stmp/gemini/ide/gemini-ide-server-%d-%d.json" dir (emacs-pid) gemini-port))
           (claude (format "%sclaude/ide/%d.lock" dir claude-port)))
      (should (equal (sort (copy-sequence agent-q-ide--files) #'string<)
                     (sort (list gemini claude) #'string<)))
      (dolist (file (list gemini claude))
        (should (file-exists-p file))
        (should (= (file-modes file) #o600)))
      (let ((json (agent-q-ide-unit-test--json gemini)))
        (should (equal (alist-get 'port json) gemini-port))
        (should (equal (alist-get 'workspacePath json) (concat dir "work")))
        (should (equal (alist-get 'authToken json) (plist-get agent-q-ide--servers :gemini-token))))
      (let ((json (agent-q-ide-unit-test--json claude)))
        (should (equal (alist-get 'pid json) (emacs-pid)))
        (should (equal (alist-get 'workspaceFolders json) (list (concat dir "work"))))
        (should (equal (alist-get 'transport json) "ws"))
        (should (equal (alist-get 'authToken json) (plist-get agent-q-ide--servers :claude-token))))
      ;; A program started from Emacs sees where this Emacs serves.
      (should (equal (with-temp-buffer
                       (call-process "sh" nil t nil "-c"
                                     "echo $GEMINI_CLI_IDE_PID $GEMINI_CLI_IDE_SERVER_PORT $CLAUDE_CODE_SSE_PORT")
                       (buffer-string))
                     (format "%d %d %d\n" (emacs-pid) gemini-port claude-port)))
      (should (plist-get (agent-q-ide-status) :running))
      (agent-q-ide-mode -1)
      (should-not (file-exists-p gemini))
      (should-not (file-exists-p claude))
      (should-not (agent-q-ide-running-p))
      (should-not (plist-get (agent-q-ide-status) :running))
      (should-not (memq #'agent-q-ide--stop-at-exit kill-emacs-hook))
      ;; The variables are gone, or back to what they were.
      (should-not (getenv "GEMINI_CLI_IDE_PID"))
      (should-not (getenv "GEMINI_CLI_IDE_SERVER_PORT"))
      (should (equal (getenv "CLAUDE_CODE_SSE_PORT") "1"))
      (should (equal (with-temp-buffer
                       (call-process "sh" nil t nil "-c" "echo ${GEMINI_CLI_IDE_PID-unset}")
                       (buffer-string))
                     "unset\n")))))

(ert-deftest agent-q-ide-unit-test-kill-emacs-removes-files ()
  (agent-q-ide-unit-test--with-mode dir
    (agent-q-ide-mode 1)
    (let ((files (copy-sequence agent-q-ide--files)))
      (should (cl-every #'file-exists-p files))
      ;; What Emacs runs when it exits.
      (run-hooks 'kill-emacs-hook)
      (should-not (cl-some #'file-exists-p files))
      (should-not (agent-q-ide-running-p)))))

;;;; Turning the mode off while an agent waits

(defun agent-q-ide-unit-test--gemini-session (url token)
  "Open a session with Gemini's companion at URL with TOKEN; return its id."
  (let* ((answer (agent-q-mcp-http-request
                  url (agent-q-mcp-http-json
                       "initialize" 1
                       (list :protocolVersion agent-q-mcp-http-protocol
                             :capabilities (make-hash-table)
                             :clientInfo (list :name "gemini-cli-mcp-client" :version "1")))
                  :token token))
         (session (cdr (assoc "mcp-session-id" (plist-get answer :headers)))))
    (should (eql (plist-get answer :status) 200))
    (should session)
    (should (eql (plist-get (agent-q-mcp-http-request
                             url (agent-q-mcp-http-json "notifications/initialized" nil)
                             :token token :session session)
                            :status)
                 202))
    session))

(defun agent-q-ide-unit-test--port-free-p (port)
  "Non-nil when 127.0.0.1:PORT can be listened on."
  (let ((server (ignore-errors
                  (make-network-process :name "agent-q-ide-unit-bind" :server t
                                        :host "127.0.0.1" :service port :family 'ipv4
                                        :noquery t))))
    (when server
      (delete-process server)
      t)))

;; The main loop never waits for the agents: turning the mode off
;; returns at once, and what the stop promises them (the rejection of
;; the edit under review, the end of their streams, the ports) comes
;; afterwards.
(ert-deftest agent-q-ide-unit-test-stop-does-not-stall-emacs ()
  (agent-q-ide-unit-test--with-mode dir
    (let ((file (concat dir "work/edited.txt"))
          (stream nil)
          (slow nil))
      (make-directory (concat dir "work") t)
      (with-temp-file file (insert "old\n"))
      (unwind-protect
          (progn
            (agent-q-ide-mode 1)
            (let* ((port (plist-get agent-q-ide--servers :gemini-port))
                   (token (plist-get agent-q-ide--servers :gemini-token))
                   (url (format "http://127.0.0.1:%d/mcp" port))
                   (session (agent-q-ide-unit-test--gemini-session url token))
                   (files (copy-sequence agent-q-ide--files)))
              ;; Gemini CLI listens on its GET stream, and waits there for
              ;; the outcome of the edit it proposed.
              (setq stream (agent-q-mcp-http-listen url token session))
              (should (equal (agent-q-mcp-http-call url token session "openDiff"
                                                    (list :filePath file :newContent "new\n"))
                             '(:error nil :text "")))
              (agent-q-mcp-http-wait #'agent-q-review-open-reviews 20 "the review")
              ;; Another client is in the middle of sending a request.
              (setq slow (agent-q-mcp-http-send-part
                          url token session (agent-q-mcp-http-json "tools/list" 7)))
              (accept-process-output nil 0.1)
              (let ((stall (agent-q-mcp-http-stall (lambda () (agent-q-ide-mode -1)))))
                (message "agent-q-ide-mode off: the call took %.1f ms, the timer was late by %.1f ms at most"
                         (* 1000 (plist-get stall :call)) (* 1000 (plist-get stall :late)))
                (should (< (plist-get stall :call) 0.2)))
              (should-not (agent-q-ide-running-p))
              (should-not (agent-q-review-open-reviews))
              ;; No agent finds a file that leads to the stopped servers.
              (should-not (cl-some #'file-exists-p files))
              ;; Gemini CLI hears that its edit was rejected, then its
              ;; stream ends and the port is free.
              (agent-q-mcp-http-wait (lambda () (not (process-live-p stream))) 10
                                     "the end of the GET stream")
              (should (string-match-p
                       (regexp-quote (format "\"method\":\"ide/diffRejected\",\"params\":{\"filePath\":\"%s\"}"
                                             file))
                       (with-current-buffer (process-buffer stream) (buffer-string))))
              (agent-q-mcp-http-wait (lambda () (not (process-live-p slow))) 10
                                     "the end of the slow connection")
              (should (agent-q-ide-unit-test--port-free-p port))
              (should (equal (agent-q-ide-unit-test--text file) "old\n"))))
        (dolist (process (list stream slow))
          (when process
            (delete-process process)
            (kill-buffer (process-buffer process))))))))

;; Emacs's exit, unlike a stop, waits for what the stop left to its
;; thread, which would die with Emacs: the connections close first.
(ert-deftest agent-q-ide-unit-test-exit-waits-for-the-stop-to-finish ()
  (agent-q-ide-unit-test--with-mode dir
    (let ((slow nil))
      (unwind-protect
          (progn
            (agent-q-ide-mode 1)
            (should (memq #'agent-q-ide--stop-at-exit kill-emacs-hook))
            (let* ((port (plist-get agent-q-ide--servers :gemini-port))
                   (token (plist-get agent-q-ide--servers :gemini-token))
                   (url (format "http://127.0.0.1:%d/mcp" port)))
              ;; A client in the middle of its request: its connection closes
              ;; only after the flush time and the time for closing.
              (setq slow (agent-q-mcp-http-send-part
                          url token "none" (agent-q-mcp-http-json "tools/list" 7)))
              (accept-process-output nil 0.1)
              (should (process-live-p slow))
              (let ((start (float-time)))
                ;; What Emacs runs when it exits.
                (agent-q-ide--stop-at-exit)
                (message "agent-q-ide--stop-at-exit took %.0f ms" (* 1000 (- (float-time) start))))
              (should-not (agent-q-ide-running-p))
              (should-not (memq #'agent-q-ide--stop-at-exit kill-emacs-hook))
              ;; The connection is closed already: Emacs only has to read that.
              (let ((deadline (+ (float-time) 0.05)))
                (while (and (process-live-p slow) (< (float-time) deadline))
                  (accept-process-output slow 0.01)))
              (should-not (process-live-p slow))))
        (when slow
          (delete-process slow)
          (kill-buffer (process-buffer slow)))))))

;;;; A deny rule

(ert-deftest agent-q-ide-unit-test-deny-rule ()
  (agent-q-ide-unit-test--with-mode dir
    (let* ((audit (concat dir "audit.jsonl"))
           (agent-q-audit-file audit)
           (file (concat dir "work/secret.txt"))
           (agent-q-approval-rules `(("agent_edit" (:path ,(concat dir "work")
                                                    :mcp-client "claude-code")
                                      deny)))
           (messages nil))
      (make-directory (concat dir "work") t)
      (with-temp-file file (insert "kept\n"))
      (agent-q-ide-mode 1)
      (cl-letf* ((real-message (symbol-function 'message))
                 ((symbol-function 'message)
                  (lambda (format &rest args)
                    (push (apply #'format-message format args) messages)
                    (apply real-message format args))))
        (agent-q-ide--open-diff (list :type 'open-diff :key 424242 :agent "claude"
                                      :client "claude-code" :path file :content "lost\n")))
      ;; Not shown, and said so.
      (should-not (agent-q-review-open-reviews))
      (should (cl-find-if (lambda (m) (string-match-p "agent_edit denied without asking, by the rule: deny agent_edit under .*/work for the MCP client claude-code" m))
                          messages))
      (should (equal (agent-q-ide-unit-test--text file) "kept\n"))
      (let ((record (agent-q-ide-unit-test--json audit)))
        (should (equal (alist-get 'event record) "denied"))
        (should (equal (alist-get 'decision record) "rule"))
        (should (equal (alist-get 'tool record) "agent_edit"))
        (should (equal (alist-get 'client record) "Claude Code claude-code (IDE)")))
      ;; The rule names another client: Gemini CLI's edit is shown.
      (agent-q-ide--open-diff (list :type 'open-diff :key 424243 :agent "gemini"
                                    :client "gemini-cli" :path file :content "new\n"))
      (should (= (length (agent-q-review-open-reviews)) 1))
      (should (string-match-p "^From: Gemini CLI gemini-cli (IDE)$"
                              (with-current-buffer (agent-q-review--review-buffer
                                                    (car (agent-q-review-open-reviews)))
                                (buffer-string)))))))

;;;; One executor call: pending while open, audited with who decided

(ert-deftest agent-q-ide-unit-test-open-diff-is-an-executor-call ()
  "An openDiff is a call of agent_edit: listed while open, audited, reviewed once."
  (agent-q-ide-unit-test--with-mode dir
    (let* ((audit (concat dir "audit.jsonl"))
           (agent-q-audit-file audit)
           (agent-q-approval-rules nil)
           (agent-q-gate-edit--reviewed nil)
           (file (concat dir "work/sample.txt"))
           (proposal (agent-q-ide-unit-test--with '(1 2 3)))
           (answers nil)
           (records (lambda ()
                      (mapcar (lambda (line) (json-parse-string line :object-type 'alist))
                              (split-string (agent-q-ide-unit-test--text audit) "\n" t))))
           (wait (lambda (key)
                   (let ((deadline (+ (float-time) 10)))
                     (while (and (not (assoc key answers)) (< (float-time) deadline))
                       (accept-process-output nil 0.05)))
                   (cdr (assoc key answers)))))
      (make-directory (concat dir "work") t)
      (with-temp-file file (insert agent-q-ide-unit-test--old))
      (agent-q-ide-mode 1)
      (cl-letf (((symbol-function 'agent-q--core-ide-answer)
                 (lambda (key plist) (push (cons key plist) answers))))
        (agent-q-ide--open-diff (list :type 'open-diff :key 910001 :agent "gemini"
                                      :client "gemini-cli" :path file :content proposal))
        ;; Open: M-x agent-q-pending lists it, naming the agent, as agent_edit.
        (let ((rows (delq nil (mapcar (lambda (row)
                                        (let ((cells (cadr row)))
                                          (and (equal (aref cells 2) "agent_edit")
                                               (aref cells 1))))
                                      (agent-q--pending-entries)))))
          (should (equal rows '("Gemini CLI gemini-cli (IDE)"))))
        (should-not (assoc 910001 answers))
        (let ((entry (car agent-q-ide--reviews)))
          (with-current-buffer (agent-q-review--review-buffer (plist-get entry :review))
            (agent-q-review-accept-all)
            (agent-q-review-finish)))
        (should (equal (funcall wait 910001) (list :accepted proposal)))
        (should-not agent-q--pending)
        (should-not agent-q-ide--reviews)
        (let ((record (car (last (funcall records)))))
          (should (equal (alist-get 'tool record) "agent_edit"))
          (should (equal (alist-get 'event record) "result"))
          (should (equal (alist-get 'status record) "success"))
          (should (equal (alist-get 'client record) "Gemini CLI gemini-cli (IDE)"))
          (should (equal (alist-get 'decision record) "review"))
          (should (string-prefix-p "the user's review: " (alist-get 'how record)))
          (should (equal (alist-get 'accepted (alist-get 'review record)) [1 2 3]))
          (should (seq-empty-p (alist-get 'rejected (alist-get 'review record))))
          (should (equal (alist-get 'path (alist-get 'arguments record)) file)))
        ;; The gate has just reviewed this very edit: accepted, not shown again,
        ;; and still one audited call.
        (agent-q-gate-edit--remember file proposal)
        (agent-q-ide--open-diff (list :type 'open-diff :key 910002 :agent "claude"
                                      :client "c" :path file :content proposal))
        (should (equal (funcall wait 910002) (list :accepted proposal)))
        (should-not (agent-q-review-open-reviews))
        (let ((record (car (last (funcall records)))))
          (should (equal (alist-get 'tool record) "agent_edit"))
          (should (equal (alist-get 'status record) "success"))
          (should (string-match-p "reviewed this very edit in Emacs already"
                                  (alist-get 'content record))))
        ;; Used up: the same edit again is reviewed.
        (agent-q-ide--open-diff (list :type 'open-diff :key 910003 :agent "claude"
                                      :client "c" :path file :content proposal))
        (should (= (length (agent-q-review-open-reviews)) 1))
        (agent-q-ide--cancel (list :type 'cancel :key 910003))
        (should-not (agent-q-review-open-reviews))
        (should-not agent-q--pending)
        (should (equal (alist-get 'withdrawn (car (last (funcall records))))
                       "the agent withdrew the request"))))))

(ert-deftest agent-q-ide-unit-test-malformed-open-diff ()
  "A malformed openDiff is one executor call too: it fails, saying why, audited once."
  (agent-q-ide-unit-test--with-mode dir
    (let* ((audit (concat dir "audit.jsonl"))
           (agent-q-audit-file audit)
           (agent-q-approval-rules nil)
           (answers nil)
           (records (lambda ()
                      (mapcar (lambda (line) (json-parse-string line :object-type 'alist))
                              (split-string (agent-q-ide-unit-test--text audit) "\n" t)))))
      (agent-q-ide-mode 1)
      (cl-letf (((symbol-function 'agent-q--core-ide-answer)
                 (lambda (key plist) (push (cons key plist) answers))))
        (pcase-dolist (`(,key ,path ,content ,problem)
                       `((920001 "work/relative.txt" "x\n" "work/relative\\.txt is not absolute")
                         (920002 nil "x\n" "the openDiff names no file")
                         (920003 "/ssh:host:/etc/motd" "x\n" "/ssh:host:/etc/motd is remote")
                         (920004 ,(concat dir "a.txt") nil "has no new text")))
          (agent-q-ide--open-diff (list :type 'open-diff :key key :agent "claude"
                                        :client "claude-code" :path path :content content))
          (let ((deadline (+ (float-time) 10)))
            (while (and (not (assoc key answers)) (< (float-time) deadline))
              (accept-process-output nil 0.05)))
          ;; Rejected to the agent, naming the problem; nothing shown or pending.
          (let ((answer (cdr (assoc key answers))))
            (should (eq (car answer) :rejected))
            (should (string-match-p (concat "absolute path: .*" problem) (cadr answer))))
          (should-not (agent-q-review-open-reviews))
          (should-not agent-q--pending)
          (should-not agent-q-ide--reviews)
          ;; The executor's records of one call (run, then its result):
          ;; agent_edit failed, saying why.
          (let ((mine (cl-remove-if-not
                       (lambda (r) (string-suffix-p (format "-%d" key) (alist-get 'id r)))
                       (funcall records))))
            (should (equal (mapcar (lambda (r) (alist-get 'event r)) mine) '("run" "result")))
            (let ((result (cadr mine)))
              (should (equal (alist-get 'tool result) "agent_edit"))
              (should (equal (alist-get 'status result) "failure"))
              (should (equal (alist-get 'client result) "Claude Code claude-code (IDE)"))
              (should (string-match-p problem (alist-get 'content result))))))))))

;;;; Reviews the agent closes

(ert-deftest agent-q-ide-unit-test-agent-closes-reviews ()
  "Reviews the agents close: watched for the agent's write, audited as theirs."
  (agent-q-ide-unit-test--with-mode dir
    (let* ((audit (concat dir "audit.jsonl"))
           (agent-q-audit-file audit)
           (agent-q-ide--watches nil)
           (file (concat dir "work/sample.txt"))
           (proposal (agent-q-ide-unit-test--with '(1 2 3)))
           (records (lambda ()
                      (mapcar (lambda (line) (json-parse-string line :object-type 'alist))
                              (split-string (agent-q-ide-unit-test--text audit) "\n" t))))
           (open (lambda (key agent tab)
                   (agent-q-ide--open-diff (list :type 'open-diff :key key :agent agent
                                                 :client "c" :path file :tab tab
                                                 :content proposal))
                   (car agent-q-ide--reviews))))
      (make-directory (concat dir "work") t)
      (with-temp-file file (insert agent-q-ide-unit-test--old))
      (agent-q-ide-mode 1)
      (unwind-protect
          (progn
            (find-file-noselect file)
            ;; Claude Code's close_tab: answered in its terminal, where a yes
            ;; writes its own proposal.
            (let ((entry (funcall open 900001 "claude" "tab-1")))
              (with-current-buffer (agent-q-review--review-buffer (plist-get entry :review))
                (agent-q-review-reject))
              (agent-q-ide--close-diff (list :type 'close-diff :agent "claude" :tab "tab-1"))
              (should-not agent-q-ide--reviews)
              (should-not (agent-q-review-open-reviews))
              (should (equal (mapcar (lambda (w) (list (car w) (nth 2 w))) agent-q-ide--watches)
                             (list (list file proposal))))
              (let ((record (car (last (funcall records)))))
                ;; The executor's record of the agent_edit call: withdrawn, and why.
                (should (equal (alist-get 'tool record) "agent_edit"))
                (should (equal (alist-get 'status record) "cancelled"))
                (should (string-match-p "withdrawn while its review was open" (alist-get 'how record)))
                (should (string-match-p "\\`Claude Code closed the review: its own prompt was answered in the terminal, which decides the edit; on a yes it writes its own proposal"
                                        (alist-get 'withdrawn record)))))
            ;; Claude Code's closeAllDiffTabs, a new prompt: nothing to watch for.
            (setq agent-q-ide--watches nil)
            (funcall open 900002 "claude" "tab-2")
            (agent-q-ide--close-diff (list :type 'close-diff :agent "claude" :all t))
            (should-not agent-q-ide--reviews)
            (should-not agent-q-ide--watches)
            (should (string-match-p "\\`Claude Code closed its reviews without a decision in Emacs: a new prompt began"
                                    (alist-get 'withdrawn (car (last (funcall records))))))
            ;; Gemini CLI's closeDiff: it gets, and writes on a yes, the review's text.
            (let ((entry (funcall open 900003 "gemini" nil)))
              (with-current-buffer (agent-q-review--review-buffer (plist-get entry :review))
                (agent-q-review-reject))
              (agent-q-ide--close-diff (list :type 'close-diff :key 900004 :agent "gemini"
                                             :path file))
              (should-not agent-q-ide--reviews)
              (should (equal (nth 2 (car agent-q-ide--watches))
                             (agent-q-ide-unit-test--with '(2 3))))
              (should (string-match-p "\\`Gemini CLI closed the review: its own prompt was answered in the terminal"
                                      (alist-get 'withdrawn (car (last (funcall records)))))))
            (should (equal (mapcar (lambda (r) (list (alist-get 'event r) (alist-get 'status r)))
                                   (funcall records))
                           '(("run" nil) ("result" "cancelled") ("run" nil) ("result" "cancelled")
                             ("run" nil) ("result" "cancelled")))))
        (when-let ((buffer (find-buffer-visiting file)))
          (kill-buffer buffer))
        (when agent-q-ide--watch-timer
          (cancel-timer agent-q-ide--watch-timer)
          (setq agent-q-ide--watch-timer nil))))))

;;;; Reverting after the agent's write

(ert-deftest agent-q-ide-unit-test-revert-after-write ()
  (let ((file (make-temp-file "agent-q-ide-revert" nil ".txt" "old\n"))
        (agent-q-ide--watches nil))
    (unwind-protect
        (let ((buffer (find-file-noselect file)))
          (agent-q-ide--watch file "new text\n")
          ;; The agent truncates the file first, then writes it.
          (with-temp-file file (insert ""))
          (set-file-times file (time-add nil -10))
          (agent-q-ide--check-watches)
          (should (equal (with-current-buffer buffer (buffer-string)) ""))
          (should agent-q-ide--watches)
          (with-temp-file file (insert "new text\n"))
          (set-file-times file (time-add nil -5))
          (agent-q-ide--check-watches)
          (should (equal (with-current-buffer buffer (buffer-string)) "new text\n"))
          (should-not (buffer-modified-p buffer))
          (should-not agent-q-ide--watches)
          (should-not agent-q-ide--watch-timer))
      (when-let ((buffer (find-buffer-visiting file)))
        (kill-buffer buffer))
      (delete-file file))))

(provide 'agent-q-ide-unit-test)

;;; agent-q-ide-unit-test.el ends here
