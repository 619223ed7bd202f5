;;; agent-q-gptel-test.el --- agent-q under the real gptel  -*- lexical-binding: t -*-

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

(defvar gptel-backend)
(defvar gptel-model)
(defvar gptel-stream)
(defvar gptel-tools)
(defvar gptel-use-tools)
(defvar gptel-confirm-tool-calls)
(defvar gptel--known-tools)
(defvar agent-q-gptel-mode)
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

(provide 'agent-q-gptel-test)

;;; agent-q-gptel-test.el ends here
