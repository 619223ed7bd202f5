;;; agent-q-gptel-test.el --- agent-q under the real gptel  -*- lexical-binding: t -*-

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

;; Real `gptel-request' calls (gptel's OpenAI backend, through curl,
;; streaming and not) against tests/fake-openai.py, with agent-q's tools
;; from `agent-q-gptel-tools' and the real module: what the model is sent
;; back (the follow-up request the fake server recorded), what happens to
;; files, what the user is asked, and the audit log's ids.  The client is
;; found by tests/agent-q-bridge-support.el; without it every test here
;; is skipped by name.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-q)
(require 'agent-q-bridge-support)
(require 'agent-q-keys-support)

(defvar gptel-backend)
(defvar gptel-model)
(defvar gptel-stream)
(defvar gptel-tools)
(defvar gptel-use-tools)
(defvar gptel-confirm-tool-calls)
(defvar gptel--known-tools)
(defvar agent-q-gptel-mode)
(defvar agent-q-gptel--internals)
(declare-function gptel-make-openai "gptel-openai")
(declare-function gptel-request "gptel-request")
(declare-function gptel-abort "gptel-request" (buf))
(declare-function gptel-fsm-state "gptel-request" (fsm))
(declare-function gptel-fsm-info "gptel-request" (fsm))
(declare-function gptel-tool-name "gptel-request" (tool))
(declare-function gptel-tool-category "gptel-request" (tool))
(declare-function gptel-tool-args "gptel-request" (tool))
(declare-function gptel-tool-async "gptel-request" (tool))
(declare-function gptel-tool-confirm "gptel-request" (tool))
(declare-function gptel--make-tool "gptel-request" (&rest spec))
(declare-function gptel--parse-tools "gptel-request" (backend tools))
(declare-function agent-q-gptel-tools "agent-q-gptel")
(declare-function agent-q-gptel-mode "agent-q-gptel")

(cl-defstruct (agent-q-gptel-test--run (:constructor agent-q-gptel-test--run-create)
                                       (:copier nil))
  "A gptel request under test: its state machine, what its callback got."
  fsm buffer events)

(defun agent-q-gptel-test--backend (server)
  "A gptel OpenAI backend pointed at the fake SERVER."
  (gptel-make-openai "agent-q-fake"
    :host (format "127.0.0.1:%d" (agent-q-bridge-server-port server))
    :protocol "http" :endpoint "/v1/chat/completions"
    :stream t :key "test-key" :models '(fake-model)))

(cl-defun agent-q-gptel-test--start (server tools &key stream (prompt "Please use the tools."))
  "Send PROMPT with TOOLS to the fake SERVER with the real `gptel-request'.
STREAM non-nil streams.  Return the run."
  (let* ((buffer (generate-new-buffer "*agent-q-gptel-test*"))
         (run (agent-q-gptel-test--run-create :buffer buffer))
         (gptel-backend (agent-q-gptel-test--backend server))
         (gptel-model 'fake-model)
         (gptel-stream stream)
         (gptel-use-tools t)
         (gptel-tools tools))
    (with-current-buffer buffer
      (setf (agent-q-gptel-test--run-fsm run)
            (gptel-request prompt
              :stream stream
              :callback (lambda (response _info)
                          (push response (agent-q-gptel-test--run-events run))))))
    run))

(defun agent-q-gptel-test--finished-p (run)
  "Non-nil when RUN's request is over."
  (memq (gptel-fsm-state (agent-q-gptel-test--run-fsm run)) '(DONE ERRS ABRT)))

(defun agent-q-gptel-test--finish (run)
  "Wait until RUN's request is over; return its final state."
  (agent-q-bridge-wait (lambda () (agent-q-gptel-test--finished-p run)) 30 "the gptel request")
  (gptel-fsm-state (agent-q-gptel-test--run-fsm run)))

(defun agent-q-gptel-test--text (run)
  "The text RUN's callback received."
  (apply #'concat (reverse (cl-remove-if-not #'stringp (agent-q-gptel-test--run-events run)))))

(defmacro agent-q-gptel-test--with (bindings &rest body)
  "Run BODY with gptel loaded and BINDINGS: (REGISTRY SERVER RESPONSES).
REGISTRY is a fresh registry (see `agent-q-bridge-with-registry'),
SERVER the fake server answering RESPONSES."
  (declare (indent 1))
  (let ((registry (nth 0 bindings)) (server (nth 1 bindings)) (responses (nth 2 bindings)))
    `(progn
       (agent-q-bridge-require-gptel)
       (agent-q-bridge-with-registry ,registry
         (agent-q-bridge-with-server ,server ,responses
           (unwind-protect (progn ,@body)
             (dolist (b (buffer-list))
               (when (string-prefix-p "*agent-q-gptel-test*" (buffer-name b))
                 (kill-buffer b)))))))))

(defmacro agent-q-gptel-test--with-file (var content &rest body)
  "Bind VAR to a temporary file with CONTENT in an allowed directory; run BODY."
  (declare (indent 2))
  `(let* ((,var (make-temp-file "agent-q-gptel" nil ".txt" ,content))
          (agent-q-allowed-directories (list (file-name-directory ,var))))
     (unwind-protect (progn ,@body)
       (when-let ((b (find-buffer-visiting ,var)))
         (with-current-buffer b (set-buffer-modified-p nil))
         (kill-buffer b))
       (when (file-exists-p ,var) (delete-file ,var)))))

(defun agent-q-gptel-test--follow-up (server)
  "The tool messages of the second request SERVER received."
  (let ((requests (agent-q-bridge-requests server)))
    (should (= (length requests) 2))
    (agent-q-bridge-tool-messages (nth 1 requests))))

;;;; A safe call, both ways

(defun agent-q-gptel-test--read-file (stream)
  "A safe read_file through gptel, streaming when STREAM."
  (agent-q-gptel-test--with-file file "first line\nsecond line\n"
    (agent-q-gptel-test--with (reg server
                                   (list `((tool_calls . [,(agent-q-bridge-tool-call
                                                            "call_read_1" "read_file"
                                                            `((path . ,file)))]))
                                         '((content . "The file has two lines."))))
      (let* ((expected (plist-get (car (agent-q-execute-tool-calls
                                        `((:id "x" :name "read_file" :arguments (:path ,file)))
                                        reg))
                                  :content))
             (run (agent-q-gptel-test--start server (agent-q-gptel-tools :registry reg)
                                             :stream stream)))
        (should (eq (agent-q-gptel-test--finish run) 'DONE))
        (should (equal (agent-q-gptel-test--text run) "The file has two lines."))
        (let ((messages (agent-q-gptel-test--follow-up server)))
          (should (= (length messages) 1))
          (should (equal (plist-get (car messages) :tool_call_id) "call_read_1"))
          (should (string-match-p "second line" expected))
          (should (equal (plist-get (car messages) :content) expected)))
        ;; The first request offered agent-q's tools with their schemas.
        (let ((offered (plist-get (car (agent-q-bridge-requests server)) :tools)))
          (should (member "read_file" (mapcar (lambda (tool) (plist-get (plist-get tool :function)
                                                                          :name))
                                              offered))))))))

(ert-deftest agent-q-gptel-test-read-file-reaches-the-model ()
  (agent-q-gptel-test--read-file nil))

(ert-deftest agent-q-gptel-test-read-file-reaches-the-model-streaming ()
  (agent-q-gptel-test--read-file t))

;;;; Dangerous calls: asked, denied, approved

(defun agent-q-gptel-test--write-file (key)
  "write_file through gptel answered with KEY at agent-q's real prompt.
Return (RUN FILE-CONTENT TOOL-MESSAGES AUDIT-IDS)."
  (agent-q-gptel-test--with-file file "old text\n"
    (agent-q-gptel-test--with (reg server
                                   (list `((tool_calls . [,(agent-q-bridge-tool-call
                                                            "call_write_7" "write_file"
                                                            `((path . ,file)
                                                              (content . "new text\n")))]))
                                         '((content . "Done."))))
      (let* ((agent-q-approval-function #'agent-q-approve-in-minibuffer)
             (prompts nil)
             (run (agent-q-test-answering
                    (setq unread-command-events (list key))
                    (prog1 (agent-q-gptel-test--start server (agent-q-gptel-tools :registry reg))
                      (agent-q-bridge-wait (lambda () (= (length (agent-q-bridge-requests server)) 2))
                                           30 "the follow-up request")
                      (setq prompts agent-q-test-prompts)))))
        (should (eq (agent-q-gptel-test--finish run) 'DONE))
        ;; The prompt said who asks, for what, and the call.
        (should (= (length prompts) 1))
        (should (string-match-p "\\`agent-q: gptel wants to run write_file \\[dangerous\\]"
                                (car prompts)))
        (list run (agent-q-bridge-file file) (agent-q-gptel-test--follow-up server)
              (agent-q-bridge-audit-ids))))))

(ert-deftest agent-q-gptel-test-write-file-denied ()
  (pcase-let ((`(,_run ,content ,messages ,audit) (agent-q-gptel-test--write-file ?n)))
    (should (equal content "old text\n"))
    (should (equal (plist-get (car messages) :tool_call_id) "call_write_7"))
    (should (equal (plist-get (car messages) :content) "error User denied tool execution"))
    (should audit)
    (should (cl-every (lambda (id) (equal id "call_write_7")) audit))))

(ert-deftest agent-q-gptel-test-write-file-approved-and-audited-with-gptels-id ()
  (pcase-let ((`(,_run ,content ,messages ,audit) (agent-q-gptel-test--write-file ?y)))
    (should (equal content "new text\n"))
    (should (equal (plist-get (car messages) :tool_call_id) "call_write_7"))
    (should (string-match-p "\\`Wrote 9 characters" (plist-get (car messages) :content)))
    ;; Every audit line of the call carries gptel's tool-call id.
    (should (>= (length audit) 2))
    (should (cl-every (lambda (id) (equal id "call_write_7")) audit))))

(ert-deftest agent-q-gptel-test-two-dangerous-calls-asked-one-after-the-other ()
  (let ((files (list (make-temp-name (expand-file-name "agent-q-gptel-a" temporary-file-directory))
                     (make-temp-name (expand-file-name "agent-q-gptel-b" temporary-file-directory)))))
    (unwind-protect
        (agent-q-gptel-test--with (reg server
                                       (list `((tool_calls
                                                . [,(agent-q-bridge-tool-call
                                                     "call_a" "touch" `((path . ,(nth 0 files))))
                                                   ,(agent-q-bridge-tool-call
                                                     "call_b" "touch" `((path . ,(nth 1 files))))]))
                                             '((content . "Both done."))))
          (let* ((depth 0) (max-depth 0) (asked nil)
                 (agent-q-approval-function
                  (lambda (_tool args)
                    (cl-incf depth)
                    (setq max-depth (max max-depth depth))
                    (push (list (plist-get agent-q-approval-context :id)
                                (plist-get agent-q-approval-context :client)
                                (file-exists-p (nth 0 files)))
                          asked)
                    ;; The user takes a moment: events run meanwhile.
                    (accept-process-output nil 0.1)
                    (cl-decf depth)
                    (ignore args)
                    :approved))
                 (run (agent-q-gptel-test--start server (agent-q-gptel-tools :registry reg))))
            (should (eq (agent-q-gptel-test--finish run) 'DONE))
            (should (= max-depth 1))
            ;; In order; the second asked after the first had run.
            (should (equal (reverse asked) '(("call_a" "gptel" nil) ("call_b" "gptel" t))))
            (should (cl-every #'file-exists-p files))
            (let ((messages (agent-q-gptel-test--follow-up server)))
              (should (equal (mapcar (lambda (m) (plist-get m :tool_call_id)) messages)
                             '("call_a" "call_b")))
              (should (equal (mapcar (lambda (m) (plist-get m :content)) messages)
                             '("touched" "touched"))))))
      (dolist (f files) (when (file-exists-p f) (delete-file f))))))

(ert-deftest agent-q-gptel-test-quit-at-the-prompt-from-a-process-sentinel ()
  (let ((file (make-temp-name (expand-file-name "agent-q-gptel-q" temporary-file-directory)))
        (dispatch-inhibit-quit :unknown))
    (unwind-protect
        (agent-q-gptel-test--with (reg server
                                       (list `((tool_calls . [,(agent-q-bridge-tool-call
                                                                "call_q" "touch"
                                                                `((path . ,file)))]))
                                             '((content . "Understood."))))
          (let ((agent-q-approval-function #'agent-q-approve-in-minibuffer)
                (probe (lambda (&rest _) (setq dispatch-inhibit-quit inhibit-quit))))
            (advice-add 'gptel--handle-tool-use :before probe)
            (unwind-protect
                (agent-q-test-let ((run (agent-q-gptel-test--start server (agent-q-gptel-tools :registry reg))))
                  ;; C-g typed at agent-q's prompt.
                  (setq unread-command-events (list ?\C-g))
                  (should (eq (agent-q-gptel-test--finish run) 'DONE))
                  ;; gptel dispatched the call from curl's process sentinel.
                  (should (eq dispatch-inhibit-quit t))
                  (should-not (file-exists-p file))
                  (should (equal (plist-get (car (agent-q-gptel-test--follow-up server)) :content)
                                 "error User denied tool execution"))
                  ;; Emacs is not stuck: nothing waits, timers and commands run.
                  (should-not agent-q--pending)
                  (should (= (recursion-depth) 0))
                  (let ((fired nil))
                    (run-at-time 0 nil (lambda () (setq fired t)))
                    (agent-q-bridge-wait (lambda () fired) 5 "a timer after the quit")))
              (advice-remove 'gptel--handle-tool-use probe))))
      (when (file-exists-p file) (delete-file file)))))

;;;; The review, while gptel waits

(ert-deftest agent-q-gptel-test-propose-file-edit-reviewed-while-gptel-waits ()
  (let ((old (mapconcat (lambda (i) (format "line %d\n" i)) (number-sequence 1 40) "")))
    (agent-q-gptel-test--with-file file old
      (let ((new (replace-regexp-in-string "^line \\(2\\|20\\|38\\)$" "LINE \\1" old)))
        (agent-q-gptel-test--with (reg server
                                       (list `((tool_calls . [,(agent-q-bridge-tool-call
                                                                "call_edit" "propose_file_edit"
                                                                `((path . ,file) (original . ,old)
                                                                  (modified . ,new)
                                                                  (description . "Three hunks")))]))
                                             '((content . "Edited."))))
          (let* ((run (agent-q-gptel-test--start server (agent-q-gptel-tools :registry reg)))
                 (review (agent-q-bridge-wait
                          (lambda () (cl-find-if (lambda (b) (string-prefix-p "*agent-q-diff: "
                                                                              (buffer-name b)))
                                                 (buffer-list)))
                          30 "the review buffer")))
            ;; gptel waits: one request so far, the request in its TOOL state.
            (accept-process-output nil 0.2)
            (should (= (length (agent-q-bridge-requests server)) 1))
            (should (eq (gptel-fsm-state (agent-q-gptel-test--run-fsm run)) 'TOOL))
            (should (= (recursion-depth) 0))
            ;; The user reviews with the keys: a, r, a, C-c C-c.
            (save-window-excursion
              (switch-to-buffer review)
              (execute-kbd-macro (kbd "a r a C-c C-c")))
            (should (eq (agent-q-gptel-test--finish run) 'DONE))
            (let ((content (plist-get (car (agent-q-gptel-test--follow-up server)) :content)))
              (should (string-match-p
                       "\\`Applied 2 of 3 hunks to .*(hunks 1 and 3 accepted; hunk 2 rejected)"
                       content)))
            (with-current-buffer (find-buffer-visiting file)
              (should (equal (buffer-string)
                             (replace-regexp-in-string "^line \\(2\\|38\\)$" "LINE \\1" old))))))))))

;;;; Failures reach the model as failures

(ert-deftest agent-q-gptel-test-failures-are-marked-as-tool-errors ()
  (agent-q-gptel-test--with (reg server
                                 (list `((tool_calls
                                          . [,(agent-q-bridge-tool-call "call_gone" "touch"
                                                                        '((path . "/nonexistent/x")))
                                             ,(agent-q-bridge-tool-call "call_bad" "read_file"
                                                                        '((path . 42)))
                                             ,(agent-q-bridge-tool-call "call_err" "fail_always"
                                                                        '((why . "on purpose")))
                                             ,(agent-q-bridge-tool-call "call_ok" "describe_symbol"
                                                                        '((symbol . "car")))
                                             ,(agent-q-bridge-tool-call "call_unknown" "format_disk"
                                                                        '((now . t)))]))
                                       '((content . "I see."))))
    (let* ((tools (agent-q-gptel-tools :registry reg))
           (uses nil)
           (probe (lambda (fsm) (setq uses (plist-get (gptel-fsm-info fsm) :tool-use)))))
      ;; The tool goes away from agent-q after gptel got its list.
      (agent-q-remove-tool "touch" reg)
      (let ((run (unwind-protect
                     (progn (advice-add 'gptel--handle-tool-result :before probe)
                            (prog1 (agent-q-gptel-test--start server tools)
                              (agent-q-bridge-wait (lambda () uses) 30 "the tool results")))
                   (advice-remove 'gptel--handle-tool-result probe))))
        (should (eq (agent-q-gptel-test--finish run) 'DONE))
        (let ((messages (agent-q-gptel-test--follow-up server)))
          (should (equal (mapcar (lambda (m) (plist-get m :tool_call_id)) messages)
                         '("call_gone" "call_bad" "call_err" "call_ok" "call_unknown")))
          (pcase-let ((`(,gone ,bad ,err ,ok ,unknown) (mapcar (lambda (m) (plist-get m :content))
                                                               messages)))
            (should (equal gone "error Unknown tool: touch"))
            (should (string-match-p
                     "\\`error Invalid arguments for read_file: field 'path': expected type \"string\""
                     bad))
            (should (equal err "error Tool error: It broke: on purpose"))
            (should (string-match-p "\\`Symbol: car\nKind: function" ok))
            ;; A tool gptel was never given is answered by gptel itself.
            (should (string-match-p "\\`Error: Tool 'format_disk' is not available" unknown))))
        ;; agent-q's failures are flagged on gptel's calls: a backend with
        ;; an error flag (Anthropic's is_error) sends it.
        (progn
          (should (equal (mapcar (lambda (c) (and (plist-get c :error) t)) uses)
                         '(t t t nil nil)))
          (require 'gptel-anthropic)
          (let ((parsed (gptel--parse-tool-results
                         (gptel-make-anthropic "agent-q-fake-anthropic" :key "k") uses)))
            (should (equal (mapcar (lambda (r) (plist-get r :is_error))
                                   (append (plist-get parsed :content) nil))
                           '(t t t nil nil)))))))))

;;;; Arguments exactly as the model sent them

(ert-deftest agent-q-gptel-test-arguments-arrive-exactly ()
  (agent-q-gptel-test--with (reg server
                                 (list `((tool_calls
                                          . [,(agent-q-bridge-tool-call
                                               "call_1" "echo_args"
                                               "{\"s\": \"x\", \"b\": false, \"t\": true, \"arr\": [1, [2, 3]], \"obj\": {\"k\": \"v\", \"f\": false}}")
                                             ,(agent-q-bridge-tool-call
                                               "call_2" "echo_args" "{\"s\": \"y\", \"n\": null}")]))
                                       '((content . "OK"))))
    (let ((seen nil))
      (agent-q-register-tool
       (agent-q-define-tool "echo_args" "Echo."
                            '((:name "s" :type :string)
                              (:name "n" :type :integer)
                              (:name "b" :type :boolean)
                              (:name "t" :type :boolean)
                              (:name "arr" :type :array)
                              (:name "obj" :type :object))
                            :required '("s")
                            :handler (lambda (args)
                                       (push (list (gethash "s" args)
                                                   (gethash "n" args :absent)
                                                   (gethash "b" args :absent)
                                                   (gethash "t" args :absent)
                                                   (gethash "arr" args :absent)
                                                   (let ((obj (gethash "obj" args :absent)))
                                                     (if (hash-table-p obj)
                                                         (list (gethash "k" obj) (gethash "f" obj :absent))
                                                       obj)))
                                             seen)
                                       "echoed"))
       reg)
      (let ((run (agent-q-gptel-test--start server (agent-q-gptel-tools :registry reg))))
        (should (eq (agent-q-gptel-test--finish run) 'DONE))
        ;; Left out stays left out; false is false, not absent; arrays and
        ;; objects keep their shape.
        (should (equal seen '(("x" :absent nil t (1 (2 3)) ("v" nil)))))
        ;; An explicit null is sent on as null, which the schema refuses.
        (should (equal (mapcar (lambda (m) (plist-get m :content)) (agent-q-gptel-test--follow-up server))
                       '("echoed" "error Invalid arguments for echo_args: field 'n': expected type \"integer\", got null")))))))

(ert-deftest agent-q-gptel-test-a-call-outside-any-request-uses-the-values ()
  ;; gptel's function called directly: no request to find the call in.
  (agent-q-bridge-require-gptel)
  (agent-q-bridge-with-registry reg
    (let* ((seen nil)
           (_ (agent-q-register-tool
               (agent-q-define-tool "echo2" "Echo."
                                    '((:name "s" :type :string) (:name "n" :type :integer)
                                      (:name "b" :type :boolean) (:name "arr" :type :array))
                                    :required '("s")
                                    :handler (lambda (args)
                                               (push (list (gethash "s" args) (gethash "n" args :absent)
                                                           (gethash "b" args :absent)
                                                           (gethash "arr" args :absent))
                                                     seen)
                                               "ok"))
               reg))
           (tool (cl-find "echo2" (agent-q-gptel-tools :registry reg)
                          :key #'gptel-tool-name :test #'equal))
           (answer nil))
      (should (gptel-tool-async tool))
      (should-not (gptel-tool-confirm tool))
      (should (equal (mapcar (lambda (a) (plist-get a :name)) (gptel-tool-args tool))
                     '("s" "n" "b" "arr")))
      (funcall (gptel-tool-function tool) (lambda (text) (setq answer text))
               "x" nil :json-false [1 2])
      (agent-q-bridge-wait (lambda () answer) 5 "the answer")
      (should (equal answer "ok"))
      (should (equal seen '(("x" :absent nil (1 2))))))))

;;;; gptel's internals

(defconst agent-q-gptel-test--internals
  '((gptel--handle-tool-use . function)
    (gptel--map-tool-args . function)
    (gptel--fsm-transition . function)
    (gptel--known-tools . variable))
  "The internal names of gptel the bridge relies on, and what each is.")

(defun agent-q-gptel-test--without (symbol kind thunk)
  "Call THUNK with gptel's SYMBOL (KIND `function' or `variable') gone."
  (if (eq kind 'function)
      (let ((definition (symbol-function symbol)))
        (unwind-protect (progn (fmakunbound symbol) (funcall thunk))
          (fset symbol definition)))
    (let ((value (default-value symbol)))
      (unwind-protect (progn (makunbound symbol) (funcall thunk))
        (set-default symbol value)))))

(ert-deftest agent-q-gptel-test-a-missing-gptel-internal-is-a-clear-error ()
  ;; A gptel that lacks one of the internals the bridge uses gets no
  ;; tools, and a tool made before runs nothing: both say which
  ;; internal is missing, rather than run a call under a made-up id.
  (agent-q-bridge-require-gptel)
  (agent-q-bridge-with-registry reg
    (let* ((ran nil)
           (_ (agent-q-register-tool
               (agent-q-define-tool "note" "Note." '((:name "s" :type :string))
                                    :handler (lambda (args) (push (gethash "s" args) ran) "noted"))
               reg))
           (tool (cl-find "note" (agent-q-gptel-tools :registry reg)
                          :key #'gptel-tool-name :test #'equal)))
      (pcase-dolist (`(,symbol . ,kind) agent-q-gptel-test--internals)
        (agent-q-gptel-test--without
         symbol kind
         (lambda ()
           (let ((err (should-error (agent-q-gptel-tools :registry reg))))
             (should (string-match-p (regexp-quote (symbol-name symbol))
                                     (error-message-string err)))
             (should (string-match-p "the agent-q gptel bridge needs"
                                     (error-message-string err))))
           (let ((answer nil))
             (funcall (gptel-tool-function tool) (lambda (text) (setq answer text)) "x")
             (agent-q-bridge-wait (lambda () answer) 5 "the answer")
             (should (string-prefix-p "error " answer))
             (should (string-match-p (regexp-quote (symbol-name symbol)) answer))))))
      (should-not ran)
      ;; With gptel whole again, the same tool runs.
      (let ((answer nil))
        (funcall (gptel-tool-function tool) (lambda (text) (setq answer text)) "x")
        (agent-q-bridge-wait (lambda () answer) 5 "the answer")
        (should (equal answer "noted"))
        (should (equal ran '("x")))))
    ;; The bridge's own list names the same four.
    (should (equal (mapcar #'car agent-q-gptel--internals)
                   (mapcar #'car agent-q-gptel-test--internals)))))

(ert-deftest agent-q-gptel-test-tools-are-made-without-touching-gptels-menu ()
  ;; `agent-q-gptel-tools' builds the tools with gptel's public
  ;; `gptel-make-tool', which registers; the menu stays as it was.
  (agent-q-bridge-require-gptel)
  (agent-q-bridge-with-registry reg
    (let ((before (copy-tree gptel--known-tools)))
      (should (agent-q-gptel-tools :registry reg))
      (should (equal gptel--known-tools before)))))

;;;; Aborting

(defun agent-q-gptel-test--abort (how)
  "A dangerous call left pending, then the request ended by HOW.
HOW is `abort' (gptel-abort) or `kill' (killing the request's buffer)."
  (let ((file (make-temp-name (expand-file-name "agent-q-gptel-ab" temporary-file-directory))))
    (unwind-protect
        (agent-q-gptel-test--with (reg server
                                       (list `((tool_calls . [,(agent-q-bridge-tool-call
                                                                "call_ab" "touch"
                                                                `((path . ,file)))]))
                                             '((content . "Never sent."))))
          ;; "Later": the call stays pending, as when the user has not answered yet.
          (let* ((agent-q-approval-function (lambda (&rest _) :later))
                 (run (agent-q-gptel-test--start server (agent-q-gptel-tools :registry reg))))
            (agent-q-bridge-wait (lambda () (and agent-q--pending
                                                 (eq (agent-q--pending-state (car agent-q--pending))
                                                     'deferred)))
                                 30 "the pending call")
            (pcase how
              ('abort (gptel-abort (agent-q-gptel-test--run-buffer run)))
              ('kill (kill-buffer (agent-q-gptel-test--run-buffer run))))
            (should-not agent-q--pending)
            (accept-process-output nil 0.5)
            (should-not (file-exists-p file))
            ;; No follow-up: the model is not asked again.
            (should (= (length (agent-q-bridge-requests server)) 1))
            (when (eq how 'abort)
              (should (eq (gptel-fsm-state (agent-q-gptel-test--run-fsm run)) 'ABRT))
              (should (memq 'abort (agent-q-gptel-test--run-events run))))))
      (when (file-exists-p file) (delete-file file)))))

(ert-deftest agent-q-gptel-test-gptel-abort-withdraws-pending-calls ()
  (agent-q-gptel-test--abort 'abort))

(ert-deftest agent-q-gptel-test-killing-the-buffer-withdraws-pending-calls ()
  (agent-q-gptel-test--abort 'kill))

;;;; gptel's own confirmation

(defun agent-q-gptel-test--confirm-all (skip)
  "A dangerous call with `gptel-confirm-tool-calls' t; SKIP sets the override.
Return (EVENTS TOOL-MESSAGES AUDIT-IDS FILE-EXISTED)."
  (let ((file (make-temp-name (expand-file-name "agent-q-gptel-c" temporary-file-directory))))
    (unwind-protect
        (agent-q-gptel-test--with (reg server
                                       (list `((tool_calls . [,(agent-q-bridge-tool-call
                                                                "call_conf" "touch"
                                                                `((path . ,file)))]))
                                             '((content . "Done."))))
          (let* ((gptel-confirm-tool-calls t)
                 (agent-q-gptel-skip-gptel-confirmation skip)
                 (agent-q-approval-function (lambda (&rest _) :approved))
                 (run (agent-q-gptel-test--start server (agent-q-gptel-tools :registry reg))))
            ;; gptel hands its confirmation to the callback; the user accepts.
            (unless skip
              (let ((asked (agent-q-bridge-wait
                            (lambda () (cl-find-if (lambda (e) (eq (car-safe e) 'tool-call))
                                                   (agent-q-gptel-test--run-events run)))
                            30 "gptel's confirmation")))
                (should-not (file-exists-p file))
                (run-at-time 0 nil #'gptel--accept-tool-calls (cdr asked) nil)))
            (should (eq (agent-q-gptel-test--finish run) 'DONE))
            (list (agent-q-gptel-test--run-events run) (agent-q-gptel-test--follow-up server)
                  (agent-q-bridge-audit-ids) (file-exists-p file))))
      (when (file-exists-p file) (delete-file file)))))

(ert-deftest agent-q-gptel-test-gptel-confirmation-t-asks-first-and-keeps-the-id ()
  (pcase-let ((`(,events ,messages ,audit ,existed) (agent-q-gptel-test--confirm-all nil)))
    (should (cl-find 'tool-call events :key #'car-safe))
    (should existed)
    ;; gptel called the tool later, outside its dispatch: the id was still found.
    (should (equal (plist-get (car messages) :tool_call_id) "call_conf"))
    (should (equal (plist-get (car messages) :content) "touched"))
    (should audit)
    (should (cl-every (lambda (id) (equal id "call_conf")) audit))))

(ert-deftest agent-q-gptel-test-skipping-gptels-confirmation ()
  (pcase-let ((`(,events ,messages ,_audit ,existed) (agent-q-gptel-test--confirm-all t)))
    (should-not (cl-find 'tool-call events :key #'car-safe))
    (should existed)
    (should (equal (plist-get (car messages) :content) "touched"))))

;;;; The global minor mode

(ert-deftest agent-q-gptel-test-mode-adds-syncs-and-removes-exactly-its-tools ()
  (agent-q-bridge-require-gptel)
  (let* ((mine (gptel--make-tool :name "my_tool" :function #'ignore :description "Mine."
                                 :category "buffer"))
         (my-read (gptel--make-tool :name "read_file" :function #'ignore :description "Mine too."
                                    :category "filesystem"))
         (original-known (list (list "buffer" (cons "my_tool" mine))
                               (list "filesystem" (cons "read_file" my-read))))
         (gptel--known-tools (copy-tree original-known))
         (gptel-tools (list mine my-read))
         (names (lambda (tools) (mapcar #'gptel-tool-name tools)))
         (known (lambda (category) (mapcar #'car (cdr (assoc category gptel--known-tools)))))
         (local (generate-new-buffer "agent-q-gptel-local")))
    (unwind-protect
        (progn
          (agent-q-gptel-mode 1)
          ;; Every enabled tool once; the user's read_file keeps its place.
          (should (equal (funcall names gptel-tools)
                         (append '("my_tool" "read_file")
                                 (remove "read_file" (agent-q-list-registered-tools)))))
          (should (eq (cl-find "read_file" gptel-tools :key #'gptel-tool-name :test #'equal) my-read))
          (should (equal (funcall known "buffer")
                         '("my_tool" "read_buffer" "read_file" "search_in_buffer" "write_file")))
          (should (equal (funcall known "filesystem") '("read_file")))
          (should (equal (funcall known "diff") '("propose_file_edit")))
          (should (= (length (funcall known "introspection")) 9))
          ;; A buffer where the user chose some tools.
          (with-current-buffer local
            (setq-local gptel-tools (list mine (cl-find "describe_symbol" (default-value 'gptel-tools)
                                                        :key #'gptel-tool-name :test #'equal))))
          ;; The user deselects write_file globally.
          (setq gptel-tools (cl-remove "write_file" gptel-tools :key #'gptel-tool-name :test #'equal))
          ;; Registering: it comes; the user's choices stay.
          (agent-q-deftool "agent_q_probe" "Probe." nil :categories '(:probe)
            :handler (lambda (_) "probe"))
          (should (member "agent_q_probe" (funcall names gptel-tools)))
          (should-not (member "write_file" (funcall names gptel-tools)))
          (should (equal (funcall known "probe") '("agent_q_probe")))
          (with-current-buffer local
            (should (equal (funcall names gptel-tools) '("my_tool" "describe_symbol")))
            ;; Kept up to date: the same object as the global list's.
            (should (eq (cadr gptel-tools)
                        (cl-find "describe_symbol" (default-value 'gptel-tools)
                                 :key #'gptel-tool-name :test #'equal))))
          ;; Disabling removes it (and the category it alone made); enabling brings it back.
          (agent-q-set-tool-enabled "agent_q_probe" nil)
          (should-not (member "agent_q_probe" (funcall names gptel-tools)))
          (should-not (assoc "probe" gptel--known-tools))
          (agent-q-set-tool-enabled "agent_q_probe" t)
          (should (member "agent_q_probe" (funcall names gptel-tools)))
          (should (equal (funcall known "probe") '("agent_q_probe")))
          (agent-q-remove-tool "agent_q_probe")
          (should-not (member "agent_q_probe" (funcall names gptel-tools)))
          ;; Off: exactly the user's tools are left.
          (agent-q-gptel-mode -1)
          (should (equal gptel-tools (list mine my-read)))
          (should (equal gptel--known-tools original-known))
          (with-current-buffer local
            (should (equal gptel-tools (list mine)))))
      (agent-q-gptel-mode -1)
      (agent-q-remove-tool "agent_q_probe")
      (kill-buffer local))))

;;;; The init.el line

(ert-deftest agent-q-gptel-test-one-init-line-before-gptel-loads ()
  ;; A fresh Emacs: (require 'agent-q) then (agent-q-gptel-mode 1), gptel
  ;; not loaded yet; once it loads, its requests have agent-q's tools.
  (agent-q-bridge-require-gptel)
  (let* ((dirs (delete-dups
                (delq nil (mapcar (lambda (feature)
                                    (let ((file (locate-library feature)))
                                      (and file (file-name-directory file))))
                                  '("agent-q" "gptel-request" "compat")))))
         (output
          (with-temp-buffer
            (let ((status (apply #'call-process
                                 (expand-file-name invocation-name invocation-directory)
                                 nil t nil "--batch" "-Q"
                                 (append
                                  (mapcan (lambda (d) (list "-L" d)) dirs)
                                  (list "--eval"
                                        (prin1-to-string
                                         '(progn
                                            (require 'agent-q)
                                            (agent-q-gptel-mode 1)
                                            (princ (format "loaded-before:%s\n" (featurep 'gptel-request)))
                                            (require 'gptel)
                                            (princ (format "tools:%s\n" (mapconcat #'gptel-tool-name
                                                                                   gptel-tools ",")))
                                            (princ (format "menu:%S\n" (mapcar #'car gptel--known-tools))))))))))
              (should (eq status 0))
              (buffer-string)))))
    (should (string-match-p "^loaded-before:nil$" output))
    (should (string-match-p (concat "^tools:" (mapconcat #'identity (agent-q-list-registered-tools) ",") "$")
                            output))
    (should (string-match-p "^menu:(\"introspection\" \"execution\" \"code\" \"diff\" \"buffer\")$" output))))

;;;; The demonstration's gptel part

(declare-function agent-q-demo--gptel "agent-q-demo")

(ert-deftest agent-q-gptel-test-the-demo-drives-a-real-request-offline ()
  ;; `make run': part 4 sends a real gptel request to the scripted model
  ;; the demo serves in-process, through the global registry's built-ins.
  (agent-q-bridge-require-gptel)
  (require 'agent-q-demo)
  (let ((agent-q-audit-file nil)
        (agent-q-approval-function (lambda (&rest _) :approved)))
    (with-current-buffer (get-buffer-create "*agent-q-demo*")
      (let ((inhibit-read-only t)) (erase-buffer)))
    (unwind-protect
        (progn
          (agent-q-demo--gptel)
          (agent-q-bridge-wait (lambda ()
                                 (with-current-buffer "*agent-q-demo*"
                                   (string-match-p "That is all" (buffer-string))))
                               30 "the demo's gptel part")
          (with-current-buffer "*agent-q-demo*"
            (let ((text (buffer-string)))
              (should (string-match-p "call_demo_1 -> Symbol: mapcar" text))
              (should (string-match-p "call_demo_2 -> Wrote 23 characters" text))
              (should (string-match-p "The note file holds: \"Written through gptel.\\\\n\"" text)))))
      (kill-buffer "*agent-q-demo*"))))

;;;; In a terminal, as a user would

(declare-function agent-q-tmux-test--ensure-tmux "agent-q-tmux-test")
(declare-function agent-q-tmux-test--tmux "agent-q-tmux-test")
(declare-function agent-q-tmux-test--wait-screen "agent-q-tmux-test")
(declare-function agent-q-tmux-test--wait-file "agent-q-tmux-test")

(ert-deftest agent-q-gptel-test-tmux-approve-with-y-while-typing-elsewhere ()
  ;; emacs -nw under tmux: F5 sends a real gptel request; while the model
  ;; "thinks" (the fake server waits 3 s) the user types into a buffer;
  ;; agent-q's prompt comes, the user answers y; the file is written and
  ;; the model told, and the typed text is in the buffer.
  (agent-q-bridge-require-gptel)
  (require 'agent-q-tmux-test)
  (agent-q-tmux-test--ensure-tmux)
  (let* ((target (make-temp-file "agent-q-gptel-tmux" nil ".txt" "old text\n"))
         (out (make-temp-name (expand-file-name "agent-q-gptel-tmux-out" temporary-file-directory)))
         (setup (make-temp-file "agent-q-gptel-tmux-setup" nil ".el"))
         (session (format "agent-q-gptel-%d-%d" (emacs-pid) (random 100000)))
         (emacs (expand-file-name invocation-name invocation-directory))
         (dirs (delete-dups
                (delq nil (mapcar (lambda (feature)
                                    (let ((file (locate-library feature)))
                                      (and file (file-name-directory file))))
                                  '("agent-q" "gptel-request" "compat"))))))
    (unwind-protect
        (agent-q-bridge-with-server server
            (list `((delay . 3)
                    (tool_calls . [,(agent-q-bridge-tool-call
                                     "call_tmux" "write_file"
                                     `((path . ,target) (content . "new text\n")))]))
                  '((content . "I wrote the file.")))
          (with-temp-file setup
            (prin1
             `(progn
                (setq load-path (append ',dirs load-path))
                (setq agent-q-audit-file nil)
                (require 'agent-q)
                (require 'gptel)
                (require 'gptel-openai)
                (require 'agent-q-gptel)
                (defun agent-q-gptel-tmux-report (text)
                  (with-temp-file ,out
                    (prin1 (list :text text
                                 :notes (with-current-buffer "notes" (buffer-string)))
                           (current-buffer)))
                  (kill-emacs 0))
                (defun agent-q-gptel-tmux-run ()
                  (interactive)
                  (switch-to-buffer (get-buffer-create "notes"))
                  (let ((gptel-backend (gptel-make-openai "fake"
                                         :host ,(format "127.0.0.1:%d"
                                                        (agent-q-bridge-server-port server))
                                         :protocol "http" :endpoint "/v1/chat/completions"
                                         :key "test-key" :models '(fake-model)))
                        (gptel-model 'fake-model)
                        (gptel-stream nil)
                        (gptel-tools (agent-q-gptel-tools)))
                    (gptel-request "Please write the file."
                      :buffer (get-buffer-create "*request*")
                      :callback (lambda (response _info)
                                  (when (stringp response)
                                    (run-at-time 0 nil #'agent-q-gptel-tmux-report response))))))
                (global-set-key (kbd "<f5>") #'agent-q-gptel-tmux-run))
             (current-buffer)))
          (agent-q-tmux-test--tmux
           "new-session" "-d" "-s" session "-x" "200" "-y" "50"
           (mapconcat #'shell-quote-argument
                      (list emacs "-nw" "-Q" "-l" setup) " "))
          (agent-q-tmux-test--wait-screen session "scratch")
          (agent-q-tmux-test--tmux "send-keys" "-t" session "F5")
          (agent-q-tmux-test--wait-screen session "notes")
          ;; The request is out; the user goes on typing in "notes".
          (agent-q-tmux-test--tmux "send-keys" "-t" session "-l" "typed while gptel waits")
          (let ((screen (agent-q-tmux-test--wait-screen
                         session "agent-q: gptel wants to run write_file \\[dangerous\\]")))
            (should (string-match-p "typed while gptel waits" screen))
            (should (string-match-p "\\[agent-q: 1 pending\\]" screen)))
          (agent-q-tmux-test--tmux "send-keys" "-t" session "y")
          (let ((run (car (read-from-string (agent-q-tmux-test--wait-file out)))))
            (should (equal (plist-get run :text) "I wrote the file."))
            (should (equal (plist-get run :notes) "typed while gptel waits")))
          (should (equal (agent-q-bridge-file target) "new text\n"))
          (let ((message (car (agent-q-bridge-tool-messages
                               (nth 1 (agent-q-bridge-requests server))))))
            (should (equal (plist-get message :tool_call_id) "call_tmux"))
            (should (string-match-p "\\`Wrote 9 characters" (plist-get message :content)))))
      (call-process "tmux" nil nil nil "kill-session" "-t" session)
      (dolist (f (list target out setup)) (when (file-exists-p f) (delete-file f))))))

(provide 'agent-q-gptel-test)

;;; agent-q-gptel-test.el ends here
