;;; agent-q-async-test.el --- The asynchronous executor  -*- lexical-binding: t -*-

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

;; `agent-q-execute-tool-calls-async' with the real module: results in
;; order, decisions asked from the command loop one at a time, never in
;; the caller's stack (a real process filter among the callers), the
;; review non-modal, cancellation, "later", and the registry changing
;; while a decision waits.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-q)
(require 'agent-q-keys-support)

(defun agent-q-async-test--wait (predicate &optional seconds)
  "Process events until PREDICATE is non-nil, at most SECONDS (default 10)."
  (let ((deadline (+ (float-time) (or seconds 10))))
    (while (and (not (funcall predicate)) (< (float-time) deadline))
      (accept-process-output nil 0.02))
    (or (funcall predicate) (ert-fail "Timed out waiting"))))

(defmacro agent-q-async-test--with (registry &rest body)
  "Run BODY with REGISTRY bound to a fresh registry of built-ins and test tools."
  (declare (indent 1))
  `(let* ((,registry (agent-q-make-registry))
          (agent-q-audit-file (make-temp-file "agent-q-audit" nil ".jsonl"))
          (agent-q-prompt--session-approved nil)
          (agent-q-tool-execution-functions nil)
          (agent-q-confirm-safety-levels '(:dangerous))
          (agent-q--pending nil)
          (agent-q--asking nil)
          (agent-q--queue-timer nil))
     (agent-q-register-builtin-tools ,registry)
     (agent-q-register-tool
      (agent-q-define-tool "touch" "Create a file." '((:name "path" :type :string))
                           :required '("path") :safety-level :dangerous
                           :handler (lambda (args)
                                      (write-region "" nil (gethash "path" args))
                                      "touched"))
      ,registry)
     (unwind-protect (progn ,@body)
       (agent-q-cancel-pending)
       (delete-file agent-q-audit-file))))

(defun agent-q-async-test--temp-name ()
  "A fresh temporary file name (no file)."
  (make-temp-name (expand-file-name "agent-q-async" temporary-file-directory)))

(defun agent-q-async-test--run (registry calls)
  "Run CALLS in REGISTRY asynchronously; wait for and return the results."
  (let* ((results :none)
         (returned nil))
    (agent-q-execute-tool-calls-async calls (lambda (r)
                                              (should returned)
                                              (setq results r))
                                      registry)
    (setq returned t)
    (agent-q-async-test--wait (lambda () (not (eq results :none))))
    results))

(ert-deftest agent-q-async-test-results-come-in-order-after-returning ()
  (agent-q-async-test--with reg
    (let* ((agent-q-approval-function (lambda (&rest _) :approved))
           (file (agent-q-async-test--temp-name))
           (results (agent-q-async-test--run
                     reg `((:id "1" :name "describe_symbol" :arguments (:symbol "car"))
                           (:id "2" :name "touch" :arguments (:path ,file))
                           (:id "3" :name "nope")
                           (:id "4" :name "get_last_error")))))
      (unwind-protect
          (progn
            (should (equal (mapcar (lambda (r) (plist-get r :id)) results) '("1" "2" "3" "4")))
            (should (equal (mapcar (lambda (r) (plist-get r :success)) results) '(t t nil t)))
            (should (file-exists-p file)))
        (when (file-exists-p file) (delete-file file))))))

(ert-deftest agent-q-async-test-decisions-are-asked-later-one-at-a-time ()
  (agent-q-async-test--with reg
    (let* ((inside-call nil) (depth 0) (max-depth 0) (asked nil)
           (files (list (agent-q-async-test--temp-name) (agent-q-async-test--temp-name)))
           (agent-q-approval-function
            (lambda (tool args)
              (should-not inside-call)
              (cl-incf depth)
              (setq max-depth (max max-depth depth))
              (push (list tool (plist-get args :path) (plist-get agent-q-approval-context :id))
                    asked)
              ;; Events are processed while "the user" decides: the next
              ;; decision must not be asked inside this one.
              (accept-process-output nil 0.05)
              (cl-decf depth)
              (if (equal (plist-get args :path) (car files)) :approved :denied)))
           (results :none))
      (setq inside-call t)
      (agent-q-execute-tool-calls-async
       `((:id "a" :name "touch" :arguments (:path ,(nth 0 files)))
         (:id "b" :name "touch" :arguments (:path ,(nth 1 files))))
       (lambda (r) (setq results r)) reg)
      (setq inside-call nil)
      (should-not asked)
      (should (= (length agent-q--pending) 2))
      (agent-q-async-test--wait (lambda () (not (eq results :none))))
      (unwind-protect
          (progn
            (should (= max-depth 1))
            (should (equal (reverse asked)
                           `(("touch" ,(nth 0 files) "a") ("touch" ,(nth 1 files) "b"))))
            (should (file-exists-p (nth 0 files)))
            (should-not (file-exists-p (nth 1 files)))
            (should (equal (plist-get (nth 1 results) :content) "User denied tool execution"))
            (should-not agent-q--pending))
        (dolist (f files) (when (file-exists-p f) (delete-file f)))))))

(ert-deftest agent-q-async-test-a-process-filter-can-call ()
  ;; A real process filter, where Emacs binds `inhibit-quit' to t.
  (agent-q-async-test--with reg
    (let* ((file (agent-q-async-test--temp-name))
           (asked-with-inhibit-quit :unknown)
           (agent-q-approval-function
            (lambda (&rest _) (setq asked-with-inhibit-quit inhibit-quit) :approved))
           (results :none)
           (filter-inhibit-quit :unknown)
           (process (make-process
                     :name "agent-q-async-test" :command '("echo" "go")
                     :connection-type 'pipe
                     :filter (lambda (_process _output)
                               (setq filter-inhibit-quit inhibit-quit)
                               (agent-q-execute-tool-calls-async
                                `((:id "f" :name "touch" :arguments (:path ,file)))
                                (lambda (r) (setq results r)) reg)))))
      (unwind-protect
          (progn
            (agent-q-async-test--wait (lambda () (not (eq results :none))))
            (should (eq filter-inhibit-quit t))
            (should (eq asked-with-inhibit-quit nil))
            (should (plist-get (car results) :success))
            (should (file-exists-p file)))
        (delete-process process)
        (when (file-exists-p file) (delete-file file))))))

(ert-deftest agent-q-async-test-quit-at-the-prompt-denies-that-call ()
  (agent-q-async-test--with reg
    (let* ((file (agent-q-async-test--temp-name))
           (agent-q-approval-function (lambda (&rest _) (signal 'quit nil)))
           (results (agent-q-async-test--run
                     reg `((:id "q" :name "touch" :arguments (:path ,file))))))
      (should-not (file-exists-p file))
      (should (equal (plist-get (car results) :content)
                     "Tool execution denied: the user quit (C-g) while being asked")))))

(ert-deftest agent-q-async-test-the-default-prompt-with-keys ()
  (agent-q-async-test--with reg
    (let* ((file (agent-q-async-test--temp-name))
           (agent-q-approval-function #'agent-q-approve-in-minibuffer)
           (results :none))
      (agent-q-execute-tool-calls-async
       `((:id "k" :name "touch" :arguments (:path ,file))) (lambda (r) (setq results r)) reg)
      (setq unread-command-events (list ?y))
      (unwind-protect
          (agent-q-test-answering
            (agent-q-async-test--wait (lambda () (not (eq results :none))))
            (should (plist-get (car results) :success))
            (should (file-exists-p file)))
        (setq unread-command-events nil)
        (when (file-exists-p file) (delete-file file))))))

(ert-deftest agent-q-async-test-cancelling-withdraws-queued-and-asked-calls ()
  (agent-q-async-test--with reg
    (let* ((files (list (agent-q-async-test--temp-name) (agent-q-async-test--temp-name)))
           (asked 0)
           ;; "The user" cancels everything from inside the first prompt (as
           ;; M-x agent-q-cancel-pending in its recursive edit, or a client's
           ;; abort arriving in a process filter, would).
           (agent-q-approval-function
            (lambda (&rest _) (cl-incf asked) (agent-q-cancel-pending) :approved))
           (results (agent-q-async-test--run
                     reg `((:id "a" :name "touch" :arguments (:path ,(nth 0 files)))
                           (:id "b" :name "touch" :arguments (:path ,(nth 1 files)))))))
      (should (= asked 1))
      (dolist (f files) (should-not (file-exists-p f)))
      (dolist (r results)
        (should-not (plist-get r :success))
        (should (equal (plist-get (plist-get r :metadata) :status) "cancelled"))
        (should (string-match-p "\\`Tool call cancelled: the user cancelled the pending tool calls; touch did not run"
                                (plist-get r :content))))
      (should-not agent-q--pending)
      (should (= 2 (plist-get (cdr (assoc "touch" (agent-q-tool-metrics reg))) :cancelled))))))

(ert-deftest agent-q-async-test-a-batch-can-be-withdrawn-by-its-client ()
  (agent-q-async-test--with reg
    (let* ((agent-q-approval-function (lambda (&rest _) :approved))
           (results :none)
           (batch (agent-q-execute-tool-calls-async
                   `((:id "s" :name "describe_symbol" :arguments (:symbol "car"))
                     (:id "d" :name "touch" :arguments (:path ,(agent-q-async-test--temp-name))))
                   (lambda (r) (setq results r)) reg)))
      (should (= 1 (agent-q-cancel-batch batch)))
      (agent-q-async-test--wait (lambda () (not (eq results :none))))
      (should (plist-get (nth 0 results) :success))
      (should (string-match-p "the client cancelled the request" (plist-get (nth 1 results) :content))))))

(ert-deftest agent-q-async-test-later-leaves-a-call-pending ()
  (agent-q-async-test--with reg
    (let* ((file (agent-q-async-test--temp-name))
           (answers (list :later :approved))
           (agent-q-approval-function (lambda (&rest _) (pop answers)))
           (results :none))
      (agent-q-execute-tool-calls-async
       `((:id "l" :name "touch" :arguments (:path ,file))) (lambda (r) (setq results r)) reg)
      (agent-q-async-test--wait (lambda () (= (length answers) 1)))
      (accept-process-output nil 0.1)
      (should (eq results :none))
      (should (equal (mapcar #'agent-q--pending-state agent-q--pending) '(deferred)))
      (should (string-match-p "agent-q: 1 pending" (format "%s" agent-q--mode-line-string)))
      ;; M-x agent-q-pending, RET on the call: asked again.
      (agent-q-pending)
      (with-current-buffer "*agent-q-pending*"
        (goto-char (point-min))
        (should (search-forward "touch" nil t))
        (agent-q-pending-answer))
      (agent-q-async-test--wait (lambda () (not (eq results :none))))
      (unwind-protect
          (progn (should (plist-get (car results) :success))
                 (should (file-exists-p file))
                 (should-not agent-q--mode-line-string))
        (kill-buffer "*agent-q-pending*")
        (when (file-exists-p file) (delete-file file))))))

(ert-deftest agent-q-async-test-a-deferred-call-says-it-was-deferred ()
  "A call deferred with l and asked again from the list says so, not that it was held."
  (agent-q-async-test--with reg
    (let* ((file (agent-q-async-test--temp-name))
           (answers (list :later :denied))
           (prompts nil)
           (agent-q-approval-function
            (lambda (tool args)
              (push (agent-q-prompt--prompt tool args :dangerous nil) prompts)
              (pop answers)))
           (results :none))
      (agent-q-execute-tool-calls-async
       `((:id "l" :name "touch" :arguments (:path ,file))) (lambda (r) (setq results r)) reg)
      (agent-q-async-test--wait (lambda () (= (length answers) 1)))
      ;; It arrived 40 s ago and was deferred 32 s ago.
      (let ((pending (car agent-q--pending)))
        (setf (agent-q--pending-time pending) (time-subtract nil 40)
              (agent-q--pending-deferred pending) (time-subtract nil 32)))
      (agent-q-pending)
      (with-current-buffer "*agent-q-pending*"
        (goto-char (point-min))
        (search-forward "touch")
        (agent-q-pending-answer))
      (agent-q-async-test--wait (lambda () (not (eq results :none))))
      (kill-buffer "*agent-q-pending*")
      (should (string-match-p "\\`agent-q (you deferred it with l 3[2-9]s ago): run touch"
                              (car prompts)))
      (should-not (string-match-p "held" (car prompts))))))

(ert-deftest agent-q-async-test-the-pending-list-names-the-client-and-counts ()
  "The pending list names the client in full, and its times count up while it is shown."
  (agent-q-async-test--with reg
    (let* ((client "claude (own tools) 3f2a1b9c-1111-2222-3333-444455556666")
           (agent-q-approval-function (lambda (&rest _) :later)))
      (agent-q--execute-async
       '((:id "l" :name "touch" :arguments (:path "/nonexistent/x")))
       #'ignore reg :client client)
      (agent-q-async-test--wait (lambda () (eq (agent-q--pending-state (car agent-q--pending))
                                               'deferred)))
      (unwind-protect
          (progn
            (agent-q-pending)
            (with-current-buffer "*agent-q-pending*"
              (should (search-forward client nil t))
              ;; Shown: a timer keeps the waiting time current.
              (should (memq agent-q--pending-timer timer-list))
              (setf (agent-q--pending-time (car agent-q--pending)) (time-subtract nil 100))
              (agent-q--pending-tick (current-buffer))
              (goto-char (point-min))
              (should (re-search-forward " 10[0-9]s " nil t))
              ;; No longer shown: the next tick stops the timer.
              (let ((timer agent-q--pending-timer))
                (switch-to-buffer "*scratch*")
                (agent-q--pending-tick (get-buffer "*agent-q-pending*"))
                (should-not agent-q--pending-timer)
                (should-not (memq timer timer-list)))))
        (kill-buffer "*agent-q-pending*")))))

(ert-deftest agent-q-async-test-a-tool-changed-while-waiting-does-not-run ()
  (agent-q-async-test--with reg
    (let* ((file (agent-q-async-test--temp-name))
           (agent-q-approval-function (lambda (&rest _) :approved))
           (results :none))
      (agent-q-execute-tool-calls-async
       `((:id "r" :name "touch" :arguments (:path ,file))) (lambda (r) (setq results r)) reg)
      ;; Before the queue's timer asks: the tool goes away.
      (agent-q-remove-tool "touch" reg)
      (agent-q-async-test--wait (lambda () (not (eq results :none))))
      (should-not (file-exists-p file))
      (should (equal (plist-get (car results) :content)
                     "Tool touch was removed while the user was deciding; it did not run")))))

(defmacro agent-q-async-test--with-review-file (var &rest body)
  "Bind VAR to a 40-line temporary file in an allowed directory; run BODY."
  (declare (indent 1))
  `(let* ((,var (make-temp-file "agent-q-async-review" nil ".txt"
                                (mapconcat (lambda (i) (format "line %d\n" i))
                                           (number-sequence 1 40) "")))
          (agent-q-allowed-directories (list (file-name-directory ,var))))
     (unwind-protect (progn ,@body)
       (when-let ((b (find-buffer-visiting ,var)))
         (with-current-buffer b (set-buffer-modified-p nil))
         (kill-buffer b))
       (delete-file ,var))))

(defun agent-q-async-test--edit-call (file)
  "A propose_file_edit call changing lines 2, 20 and 38 of FILE."
  (let* ((old (with-temp-buffer (insert-file-contents file) (buffer-string)))
         (new (replace-regexp-in-string
               "^line \\(2\\|20\\|38\\)$" "LINE \\1" old)))
    `(:id "e" :name "propose_file_edit"
          :arguments (:path ,file :original ,old :modified ,new :description "three hunks"))))

(defun agent-q-async-test--review-buffer ()
  "The open review buffer, or nil."
  (cl-find-if (lambda (b) (string-prefix-p "*agent-q-diff: " (buffer-name b))) (buffer-list)))

(ert-deftest agent-q-async-test-the-review-is-non-modal ()
  (agent-q-async-test--with reg
    (agent-q-async-test--with-review-file file
      (let ((results :none))
        (agent-q-execute-tool-calls-async (list (agent-q-async-test--edit-call file))
                                          (lambda (r) (setq results r)) reg)
        (agent-q-async-test--wait #'agent-q-async-test--review-buffer)
        ;; The review is open and nothing waits in a recursive edit: Emacs is free.
        (should (= (recursion-depth) 0))
        (should (eq results :none))
        (should (eq (agent-q--pending-state (car agent-q--pending)) 'running))
        (with-current-buffer (agent-q-async-test--review-buffer)
          (agent-q-review-accept)
          (agent-q-review-reject)
          (agent-q-review-accept)
          (agent-q-review-finish))
        (agent-q-async-test--wait (lambda () (not (eq results :none))))
        (should (string-match-p "\\`Applied 2 of 3 hunks .*(hunks 1 and 3 accepted; hunk 2 rejected)"
                                (plist-get (car results) :content)))
        (should (plist-get (car results) :success))
        (with-current-buffer (find-buffer-visiting file)
          (should (string-match-p "^LINE 2$" (buffer-string)))
          (should (string-match-p "^line 20$" (buffer-string)))
          (should (string-match-p "^LINE 38$" (buffer-string))))
        ;; The audit says which hunks, as for agent_edit.
        (let ((record (car (last (mapcar (lambda (line) (json-parse-string line :object-type 'alist))
                                         (split-string (with-temp-buffer
                                                         (insert-file-contents agent-q-audit-file)
                                                         (buffer-string))
                                                       "\n" t))))))
          (should (equal (alist-get 'tool record) "propose_file_edit"))
          (should (equal (alist-get 'accepted (alist-get 'review record)) [1 3]))
          (should (equal (alist-get 'rejected (alist-get 'review record)) [2])))))))

(ert-deftest agent-q-async-test-cancelling-closes-an-open-review ()
  (agent-q-async-test--with reg
    (agent-q-async-test--with-review-file file
      (let ((results :none))
        (agent-q-execute-tool-calls-async (list (agent-q-async-test--edit-call file))
                                          (lambda (r) (setq results r)) reg)
        (agent-q-async-test--wait #'agent-q-async-test--review-buffer)
        (should (= 1 (agent-q-cancel-pending)))
        (agent-q-async-test--wait (lambda () (not (eq results :none))))
        (should-not (agent-q-async-test--review-buffer))
        (should (equal (plist-get (plist-get (car results) :metadata) :status) "cancelled"))
        (should-not (find-buffer-visiting file))))))

(ert-deftest agent-q-async-test-who-calls-scans-off-the-main-thread ()
  ;; Under the asynchronous executor a scan holds Emacs's thread for no time:
  ;; the call returns at once, a timer keeps ticking, the result arrives
  ;; through the channel and says the same as the synchronous executor's.
  (agent-q-async-test--with reg
    (let* ((call '(:id "x" :name "who_calls" :arguments (:function "save-buffer")))
           ;; Formatting a result may load libraries (project.el loads vc),
           ;; which a later scan then searches too: load them first.
           (_ (agent-q-builtins--allowed-directories))
           (expected (plist-get (car (agent-q-execute-tool-calls (list call) reg)) :content))
           (ticks 0)
           (timer (run-at-time 0 0.01 (lambda () (cl-incf ticks))))
           (started (float-time))
           (results :none))
      (unwind-protect
          (progn
            (agent-q-execute-tool-calls-async (list call) (lambda (r) (setq results r)) reg)
            (should (< (- (float-time) started) 0.1))
            (should (eq (agent-q--pending-state (car agent-q--pending)) 'running))
            (agent-q-async-test--wait (lambda () (not (eq results :none))) 120)
            (should (plist-get (car results) :success))
            (should (string-prefix-p "Functions calling save-buffer:" (plist-get (car results) :content)))
            (should (equal (plist-get (car results) :content) expected))
            (should (> ticks 0)))
        (cancel-timer timer)))))

(ert-deftest agent-q-async-test-a-cancelled-scan-delivers-nothing-late ()
  (agent-q-async-test--with reg
    (let ((results :none))
      (agent-q-execute-tool-calls-async
       '((:id "x" :name "who_references" :arguments (:variable "buffer-file-name")))
       (lambda (r) (setq results r)) reg)
      (should (= 1 (agent-q-cancel-pending)))
      (agent-q-async-test--wait (lambda () (not (eq results :none))) 5)
      (should (equal (plist-get (plist-get (car results) :metadata) :status) "cancelled"))
      (should (= 0 (hash-table-count agent-q-xref--scans))))))

(provide 'agent-q-async-test)

;;; agent-q-async-test.el ends here
