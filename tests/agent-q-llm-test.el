;;; agent-q-llm-test.el --- agent-q under the real llm.el  -*- lexical-binding: t -*-

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

;; Real `llm-chat-async' and `llm-chat-streaming' calls (llm.el's
;; OpenAI-compatible provider, through plz and curl) against
;; tests/fake-openai.py, with agent-q's tools from `agent-q-llm-tools'
;; and the real module.  llm.el hands the tool results to the response
;; callback; the test sends the prompt again, as a caller does, and the
;; fake server records what the model would be told.  Without llm.el
;; every test here is skipped by name.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-q)
(require 'agent-q-bridge-support)
(require 'agent-q-keys-support)

(defvar llm-warn-on-nonfree)
(declare-function make-llm-openai-compatible "llm-openai")
(declare-function llm-make-chat-prompt "llm")
(declare-function llm-chat-async "llm")
(declare-function llm-chat-streaming "llm")
(declare-function llm-tool-name "llm" (tool))
(declare-function llm-tool-args "llm" (tool))
(declare-function llm-tool-async "llm" (tool))
(declare-function llm-tool-function "llm" (tool))
(declare-function agent-q-llm-tools "agent-q-llm")

(defmacro agent-q-llm-test--with (bindings &rest body)
  "Run BODY with llm.el loaded and BINDINGS: (REGISTRY SERVER RESPONSES PROVIDER).
REGISTRY is a fresh registry, SERVER the fake server answering
RESPONSES, PROVIDER an llm.el provider pointed at it."
  (declare (indent 1))
  (pcase-let ((`(,registry ,server ,responses ,provider) bindings))
    `(progn
       (agent-q-bridge-require-llm)
       (agent-q-bridge-with-registry ,registry
         (agent-q-bridge-with-server ,server ,responses
           (let ((llm-warn-on-nonfree nil)
                 (,provider (make-llm-openai-compatible
                             :url (format "http://127.0.0.1:%d/v1/"
                                          (agent-q-bridge-server-port ,server))
                             :chat-model "fake-model" :key "test-key")))
             ,@body))))))

(defun agent-q-llm-test--chat (provider prompt &optional streaming)
  "Send PROMPT to PROVIDER with `llm-chat-async' (or streaming); wait.
Return (:ok RESPONSE) or (:error TYPE MESSAGE)."
  (let ((outcome nil))
    (if streaming
        (llm-chat-streaming provider prompt #'ignore
                            (lambda (response) (setq outcome (list :ok response)))
                            (lambda (type message) (setq outcome (list :error type message))))
      (llm-chat-async provider prompt
                      (lambda (response) (setq outcome (list :ok response)))
                      (lambda (type message) (setq outcome (list :error type message)))))
    (agent-q-bridge-wait (lambda () outcome) 30 "llm.el's answer")))

(defun agent-q-llm-test--exchange (provider prompt server &optional streaming)
  "Two rounds of PROMPT to PROVIDER: the tool calls, then the answer.
Return (FIRST SECOND TOOL-MESSAGES), the last from SERVER's second request."
  (let* ((first (agent-q-llm-test--chat provider prompt streaming))
         (second (and (eq (car first) :ok) (agent-q-llm-test--chat provider prompt streaming)))
         (requests (agent-q-bridge-requests server)))
    (list first second (and (nth 1 requests) (agent-q-bridge-tool-messages (nth 1 requests))))))

(defmacro agent-q-llm-test--with-file (var content &rest body)
  "Bind VAR to a temporary file with CONTENT in an allowed directory; run BODY."
  (declare (indent 2))
  `(let* ((,var (make-temp-file "agent-q-llm" nil ".txt" ,content))
          (agent-q-allowed-directories (list (file-name-directory ,var))))
     (unwind-protect (progn ,@body)
       (when-let ((b (find-buffer-visiting ,var)))
         (with-current-buffer b (set-buffer-modified-p nil))
         (kill-buffer b))
       (when (file-exists-p ,var) (delete-file ,var)))))

(defun agent-q-llm-test--result (content)
  "What llm.el's OpenAI provider tells the model for a tool's CONTENT."
  (concat "Result of tool call is " content))

;;;; A safe call

(defun agent-q-llm-test--read-file (streaming)
  "A safe read_file through llm.el, STREAMING or not."
  (agent-q-llm-test--with-file file "first line\nsecond line\n"
    (agent-q-llm-test--with (reg server
                                 (list `((tool_calls . [,(agent-q-bridge-tool-call
                                                          "call_r" "read_file" `((path . ,file)))]))
                                       '((content . "Two lines.")))
                                 provider)
      (let ((expected (plist-get (car (agent-q-execute-tool-calls
                                       `((:id "x" :name "read_file" :arguments (:path ,file)))
                                       reg))
                                 :content)))
        (pcase-let ((`(,first ,second ,messages)
                     (agent-q-llm-test--exchange
                      provider (llm-make-chat-prompt "Read it"
                                                     :tools (agent-q-llm-tools :registry reg))
                      server streaming)))
          (should (string-match-p "second line" expected))
          (should (equal first `(:ok (("read_file" . ,expected)))))
          (should (equal second '(:ok "Two lines.")))
          (should (= (length messages) 1))
          (should (equal (plist-get (car messages) :tool_call_id) "call_r"))
          (should (equal (plist-get (car messages) :content)
                         (agent-q-llm-test--result expected))))))))

(ert-deftest agent-q-llm-test-read-file-reaches-the-model ()
  (agent-q-llm-test--read-file nil))

(ert-deftest agent-q-llm-test-read-file-reaches-the-model-streaming ()
  (agent-q-llm-test--read-file t))

;;;; Dangerous calls

(defun agent-q-llm-test--write-file (key)
  "write_file through llm.el answered with KEY at agent-q's real prompt.
Return (FILE-CONTENT TOOL-MESSAGES AUDIT-IDS PROMPTS)."
  (agent-q-llm-test--with-file file "old text\n"
    (agent-q-llm-test--with (reg server
                                 (list `((tool_calls . [,(agent-q-bridge-tool-call
                                                          "call_w" "write_file"
                                                          `((path . ,file)
                                                            (content . "new text\n")))]))
                                       '((content . "Done.")))
                                 provider)
      (let* ((agent-q-approval-function #'agent-q-approve-in-minibuffer)
             (prompts nil)
             (exchange
              (agent-q-test-answering
                (setq unread-command-events (list key))
                (prog1 (agent-q-llm-test--exchange
                        provider (llm-make-chat-prompt "Write it"
                                                       :tools (agent-q-llm-tools :registry reg))
                        server)
                  (setq prompts agent-q-test-prompts)))))
        (should (equal (nth 1 exchange) '(:ok "Done.")))
        (list (agent-q-bridge-file file) (nth 2 exchange) (agent-q-bridge-audit-ids) prompts)))))

(ert-deftest agent-q-llm-test-write-file-denied ()
  (pcase-let ((`(,content ,messages ,audit ,prompts) (agent-q-llm-test--write-file ?n)))
    (should (equal content "old text\n"))
    (should (string-match-p "\\`agent-q: llm wants to run write_file \\[dangerous\\]" (car prompts)))
    (should (equal (plist-get (car messages) :tool_call_id) "call_w"))
    (should (equal (plist-get (car messages) :content)
                   (agent-q-llm-test--result "Error: User denied tool execution")))
    (should audit)
    (should (cl-every (lambda (id) (equal id "call_w")) audit))))

(ert-deftest agent-q-llm-test-write-file-approved-and-audited-with-llms-id ()
  (pcase-let ((`(,content ,messages ,audit ,_prompts) (agent-q-llm-test--write-file ?y)))
    (should (equal content "new text\n"))
    (should (string-match-p "\\`Result of tool call is Wrote 9 characters"
                            (plist-get (car messages) :content)))
    (should (>= (length audit) 2))
    (should (cl-every (lambda (id) (equal id "call_w")) audit))))

(ert-deftest agent-q-llm-test-two-dangerous-calls-asked-one-after-the-other ()
  (let ((files (list (make-temp-name (expand-file-name "agent-q-llm-a" temporary-file-directory))
                     (make-temp-name (expand-file-name "agent-q-llm-b" temporary-file-directory)))))
    (unwind-protect
        (agent-q-llm-test--with (reg server
                                     (list `((tool_calls
                                              . [,(agent-q-bridge-tool-call
                                                   "call_a" "touch" `((path . ,(nth 0 files))))
                                                 ,(agent-q-bridge-tool-call
                                                   "call_b" "touch" `((path . ,(nth 1 files))))]))
                                           '((content . "Both.")))
                                     provider)
          (let* ((depth 0) (max-depth 0) (asked nil)
                 (agent-q-approval-function
                  (lambda (&rest _)
                    (cl-incf depth)
                    (setq max-depth (max max-depth depth))
                    (push (list (plist-get agent-q-approval-context :id)
                                (file-exists-p (nth 0 files)))
                          asked)
                    (accept-process-output nil 0.1)
                    (cl-decf depth)
                    :approved)))
            (pcase-let ((`(,first ,_second ,messages)
                         (agent-q-llm-test--exchange
                          provider (llm-make-chat-prompt "Touch both"
                                                         :tools (agent-q-llm-tools :registry reg))
                          server)))
              (should (= max-depth 1))
              (should (equal (reverse asked) '(("call_a" nil) ("call_b" t))))
              (should (equal (sort (copy-sequence (cadr first)) (lambda (a b) (string< (cdr a) (cdr b))))
                             '(("touch" . "touched") ("touch" . "touched"))))
              (should (equal (sort (mapcar (lambda (m) (plist-get m :tool_call_id)) messages) #'string<)
                             '("call_a" "call_b"))))))
      (dolist (f files) (when (file-exists-p f) (delete-file f))))))

(ert-deftest agent-q-llm-test-quit-at-the-prompt-from-a-process-sentinel ()
  (let ((file (make-temp-name (expand-file-name "agent-q-llm-q" temporary-file-directory)))
        (dispatch-inhibit-quit :unknown))
    (unwind-protect
        (agent-q-llm-test--with (reg server
                                     (list `((tool_calls . [,(agent-q-bridge-tool-call
                                                              "call_q" "touch" `((path . ,file)))]))
                                           '((content . "OK.")))
                                     provider)
          (let ((agent-q-approval-function #'agent-q-approve-in-minibuffer)
                (probe (lambda (&rest _) (setq dispatch-inhibit-quit inhibit-quit))))
            (advice-add 'llm-provider-utils-execute-tool-uses :before probe)
            (unwind-protect
                (agent-q-test-answering
                  (setq unread-command-events (list ?\C-g))
                  (pcase-let ((`(,_first ,second ,messages)
                               (agent-q-llm-test--exchange
                                provider (llm-make-chat-prompt
                                          "Touch" :tools (agent-q-llm-tools :registry reg))
                                server)))
                    ;; llm.el ran the tool from curl's process sentinel.
                    (should (eq dispatch-inhibit-quit t))
                    (should-not (file-exists-p file))
                    (should (equal (plist-get (car messages) :content)
                                   (agent-q-llm-test--result "Error: User denied tool execution")))
                    (should (equal second '(:ok "OK.")))
                    (should-not agent-q--pending)
                    (should (= (recursion-depth) 0))))
              (advice-remove 'llm-provider-utils-execute-tool-uses probe))))
      (when (file-exists-p file) (delete-file file)))))

;;;; The review, while llm.el waits

(ert-deftest agent-q-llm-test-propose-file-edit-reviewed-while-llm-waits ()
  (let ((old (mapconcat (lambda (i) (format "line %d\n" i)) (number-sequence 1 40) "")))
    (agent-q-llm-test--with-file file old
      (let ((new (replace-regexp-in-string "^line \\(2\\|20\\|38\\)$" "LINE \\1" old)))
        (agent-q-llm-test--with (reg server
                                     (list `((tool_calls . [,(agent-q-bridge-tool-call
                                                              "call_e" "propose_file_edit"
                                                              `((path . ,file) (original . ,old)
                                                                (modified . ,new)
                                                                (description . "Three hunks")))]))
                                           '((content . "Edited.")))
                                     provider)
          (let* ((prompt (llm-make-chat-prompt "Edit" :tools (agent-q-llm-tools :registry reg)))
                 (outcome nil))
            (llm-chat-async provider prompt
                            (lambda (r) (setq outcome (list :ok r)))
                            (lambda (type message) (setq outcome (list :error type message))))
            (let ((review (agent-q-bridge-wait
                           (lambda () (cl-find-if (lambda (b) (string-prefix-p "*agent-q-diff: "
                                                                               (buffer-name b)))
                                                  (buffer-list)))
                           30 "the review buffer")))
              (accept-process-output nil 0.2)
              (should-not outcome)
              (should (= (recursion-depth) 0))
              (save-window-excursion
                (switch-to-buffer review)
                (execute-kbd-macro (kbd "a r a C-c C-c"))))
            (agent-q-bridge-wait (lambda () outcome) 30 "the tool results")
            (should (string-match-p
                     "\\`Applied 2 of 3 hunks to .*(hunks 1 and 3 accepted; hunk 2 rejected)"
                     (cdr (car (cadr outcome)))))
            (should (equal (agent-q-llm-test--chat provider prompt) '(:ok "Edited.")))
            (should (string-match-p
                     "\\`Result of tool call is Applied 2 of 3 hunks"
                     (plist-get (car (agent-q-bridge-tool-messages
                                      (nth 1 (agent-q-bridge-requests server))))
                                :content)))
            (with-current-buffer (find-buffer-visiting file)
              (should (equal (buffer-string)
                             (replace-regexp-in-string "^line \\(2\\|38\\)$" "LINE \\1" old))))))))))

;;;; Failures

(ert-deftest agent-q-llm-test-failures-reach-the-model-as-errors ()
  (agent-q-llm-test--with (reg server
                               (list `((tool_calls
                                        . [,(agent-q-bridge-tool-call "call_gone" "touch"
                                                                      '((path . "/nonexistent/x")))
                                           ,(agent-q-bridge-tool-call "call_bad" "read_file"
                                                                      '((path . 42)))
                                           ,(agent-q-bridge-tool-call "call_err" "fail_always"
                                                                      '((why . "on purpose")))]))
                                     '((content . "Noted.")))
                               provider)
    (let ((prompt (llm-make-chat-prompt "Go" :tools (agent-q-llm-tools :registry reg))))
      (agent-q-remove-tool "touch" reg)
      (pcase-let ((`(,_first ,second ,messages) (agent-q-llm-test--exchange provider prompt server)))
        (should (equal second '(:ok "Noted.")))
        (let ((by-id (mapcar (lambda (m) (cons (plist-get m :tool_call_id) (plist-get m :content)))
                             messages)))
          (should (equal (cdr (assoc "call_gone" by-id))
                         (agent-q-llm-test--result "Error: Unknown tool: touch")))
          (should (string-match-p
                   "\\`Result of tool call is Error: Invalid arguments for read_file: field 'path'"
                   (cdr (assoc "call_bad" by-id))))
          (should (equal (cdr (assoc "call_err" by-id))
                         (agent-q-llm-test--result "Error: Tool error: It broke: on purpose"))))))))

(ert-deftest agent-q-llm-test-a-tool-llm-was-never-given-is-llms-error ()
  (agent-q-llm-test--with (reg server
                               (list `((tool_calls . [,(agent-q-bridge-tool-call
                                                        "call_u" "format_disk" '((now . t)))])))
                               provider)
    (let ((outcome (agent-q-llm-test--chat
                    provider (llm-make-chat-prompt "Go" :tools (agent-q-llm-tools :registry reg)))))
      ;; llm.el refuses it before any tool runs, through the error callback.
      (should (eq (car outcome) :error))
      (should (eq (nth 1 outcome) 'llm-tool-unknown-tool)))))

;;;; Arguments

(ert-deftest agent-q-llm-test-arguments-arrive-exactly ()
  (agent-q-llm-test--with (reg server
                               (list `((tool_calls
                                        . [,(agent-q-bridge-tool-call
                                             "call_1" "echo_args"
                                             "{\"s\": \"x\", \"b\": false, \"t\": false, \"arr\": [1, [2, 3]], \"obj\": {\"k\": \"v\", \"f\": false}}")
                                           ,(agent-q-bridge-tool-call
                                             "call_2" "echo_args" "{\"s\": \"y\", \"b\": true, \"n\": null}")]))
                                     '((content . "OK")))
                               provider)
    (let ((seen nil))
      (agent-q-register-tool
       (agent-q-define-tool "echo_args" "Echo."
                            '((:name "s" :type :string)
                              (:name "n" :type :integer)
                              (:name "b" :type :boolean)
                              (:name "t" :type :boolean)
                              (:name "arr" :type :array)
                              (:name "obj" :type :object))
                            :required '("s" "b")
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
      (pcase-let ((`(,_first ,_second ,messages)
                   (agent-q-llm-test--exchange
                    provider (llm-make-chat-prompt "Go" :tools (agent-q-llm-tools :registry reg))
                    server)))
        ;; false (which llm.el turns into nil) arrives as false, for a required
        ;; and an optional argument; left out stays left out; arrays and
        ;; objects keep their shape.
        (should (equal seen '(("x" :absent nil nil (1 (2 3)) ("v" nil)))))
        (should (equal (sort (mapcar (lambda (m) (plist-get m :content)) messages) #'string<)
                       (list (agent-q-llm-test--result
                              "Error: Invalid arguments for echo_args: field 'n': expected type \"integer\", got null")
                             (agent-q-llm-test--result "echoed"))))))))

(ert-deftest agent-q-llm-test-a-call-outside-llm-uses-the-values ()
  (agent-q-bridge-require-llm)
  (agent-q-bridge-with-registry reg
    (let* ((seen nil)
           (_ (agent-q-register-tool
               (agent-q-define-tool "echo2" "Echo."
                                    '((:name "s" :type :string) (:name "b" :type :boolean)
                                      (:name "o" :type :boolean) (:name "obj" :type :object))
                                    :required '("s" "b")
                                    :handler (lambda (args)
                                               (push (list (gethash "s" args) (gethash "b" args :absent)
                                                           (gethash "o" args :absent)
                                                           (let ((obj (gethash "obj" args)))
                                                             (and (hash-table-p obj) (gethash "k" obj))))
                                                     seen)
                                               "ok"))
               reg))
           (tool (cl-find "echo2" (agent-q-llm-tools :registry reg)
                          :key #'llm-tool-name :test #'equal))
           (answer nil))
      (should (llm-tool-async tool))
      (should (equal (mapcar (lambda (a) (list (plist-get a :name) (plist-get a :type)
                                               (plist-get a :optional)))
                             (llm-tool-args tool))
                     '(("s" string nil) ("b" boolean nil) ("o" boolean t) ("obj" object t))))
      ;; A required boolean nil is false; an optional nil is left out.
      (funcall (llm-tool-function tool) (lambda (text) (setq answer text))
               "x" nil nil '((k . "v")))
      (agent-q-bridge-wait (lambda () answer) 5 "the answer")
      (should (equal answer "ok"))
      (should (equal seen '(("x" nil :absent "v")))))))

(provide 'agent-q-llm-test)

;;; agent-q-llm-test.el ends here
