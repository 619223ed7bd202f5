;;; agent-q-execution-test.el --- eval_form and friends tell the truth, within bounds  -*- lexical-binding: t -*-

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

;; The execution tools (eval_form, compile_form, get_last_error,
;; get_repl_history) tell the truth, and what they print and keep is
;; bounded.  Every test runs the real built-in tools through
;; `agent-q-execute-tool-calls' and the module, and checks what the
;; model, the audit file and the metrics are told: a form that signals,
;; or cannot be read, is a failure (`:success nil'), audited and
;; counted as one.
;;
;; Boundedness is checked by the characters allocated for strings
;; (`memory-use-counts'), not by time: printing a 50 MB string and
;; cutting it afterwards allocates 50 million characters, printing
;; within bounds a few thousand.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'subr-x)
(require 'agent-q)

(defmacro agent-q-execution-test--with (registry &rest body)
  "Run BODY with REGISTRY bound to a fresh registry of the built-in tools.
The audit file is a fresh temporary file; the history and the last
error start empty."
  (declare (indent 1) (debug (symbolp body)))
  `(let* ((,registry (agent-q-make-registry))
          (agent-q-audit-file (make-temp-file "agent-q-audit" nil ".jsonl"))
          (agent-q-tool-execution-functions nil)
          (agent-q-confirm-safety-levels '(:dangerous))
          (agent-q-builtins--history nil)
          (agent-q-builtins--last-error nil))
     (agent-q-register-builtin-tools ,registry)
     (unwind-protect (progn ,@body)
       (delete-file agent-q-audit-file))))

(defun agent-q-execution-test--call (registry name &rest arguments)
  "Run the tool NAME with ARGUMENTS (a plist) in REGISTRY; return the result."
  (car (agent-q-execute-tool-calls
        (list (list :id "t" :name name :arguments arguments))
        registry)))

(defun agent-q-execution-test--status (result)
  "The :status of RESULT's metadata."
  (plist-get (plist-get result :metadata) :status))

(defun agent-q-execution-test--metrics (registry name)
  "The metrics plist of the tool NAME in REGISTRY."
  (cdr (assoc name (agent-q-tool-metrics registry))))

(defun agent-q-execution-test--audit ()
  "The audit file's records, as plists."
  (with-temp-buffer
    (insert-file-contents agent-q-audit-file)
    (mapcar (lambda (line) (json-parse-string line :object-type 'plist))
            (split-string (buffer-string) "\n" t))))

(defun agent-q-execution-test--failed (result)
  "Check that RESULT is a failure whose :error is its :content."
  (should (eq (plist-get result :success) nil))
  (should (equal (agent-q-execution-test--status result) "failure"))
  (should (equal (plist-get result :error) (plist-get result :content))))

(defun agent-q-execution-test--string-chars ()
  "The number of string characters allocated so far."
  (nth 4 (memory-use-counts)))

;;;; eval_form

(ert-deftest agent-q-execution-test-eval-error-is-a-failure ()
  (agent-q-execution-test--with reg
    (let ((result (agent-q-execution-test--call
                   reg "eval_form" :form "(progn (princ \"before\") (car 1))")))
      (agent-q-execution-test--failed result)
      (should (string-prefix-p "Error: Wrong type argument: listp, 1" (plist-get result :content)))
      (should (string-match-p "Output:\nbefore" (plist-get result :content)))
      ;; Counted and audited as a failure.
      (let ((m (agent-q-execution-test--metrics reg "eval_form")))
        (should (= 1 (plist-get m :calls)))
        (should (= 1 (plist-get m :failures))))
      (let ((records (agent-q-execution-test--audit)))
        (should (equal (mapcar (lambda (r) (plist-get r :event)) records) '("run" "result")))
        (should (eq (plist-get (cadr records) :success) :false))
        (should (equal (plist-get (cadr records) :status) "failure"))))
    ;; The backtrace is kept for get_last_error, which succeeds.
    (let ((last (agent-q-execution-test--call reg "get_last_error")))
      (should (eq (plist-get last :success) t))
      (should (string-match-p "^Condition: (wrong-type-argument listp 1)$" (plist-get last :content)))
      (should (string-match-p "^Backtrace (innermost first, [0-9]+ frame(s)):\n  (car 1)"
                              (plist-get last :content))))
    ;; And the history has it.
    (should (string-match-p "1\\. \\[eval_form\\] (progn (princ \"before\") (car 1))\n   => Error: Wrong type"
                            (plist-get (agent-q-execution-test--call reg "get_repl_history")
                                       :content)))))

(ert-deftest agent-q-execution-test-eval-unreadable-is-a-failure ()
  (agent-q-execution-test--with reg
    (dolist (case '(("(+ 1 2) (+ 3 4)" . "Error: Expected exactly one form, but there is more text after it")
                    ("(+ 1" . "Error: Incomplete form")
                    ("   " . "Error: The form is empty")
                    (")" . "Error: Cannot read the form: Invalid read syntax")))
      (let ((result (agent-q-execution-test--call reg "eval_form" :form (car case))))
        (agent-q-execution-test--failed result)
        (should (string-prefix-p (cdr case) (plist-get result :content)))))
    (should (= 4 (plist-get (agent-q-execution-test--metrics reg "eval_form") :failures)))
    (should (equal '("failure" "failure" "failure" "failure")
                   (delq nil (mapcar (lambda (r) (plist-get r :status))
                                     (agent-q-execution-test--audit)))))
    (should (string-match-p "Backtrace: none (the form could not be read)"
                            (plist-get (agent-q-execution-test--call reg "get_last_error")
                                       :content)))
    (should (string-prefix-p "Recent REPL History (4 of 4 entries):"
                             (plist-get (agent-q-execution-test--call reg "get_repl_history")
                                        :content)))))

(ert-deftest agent-q-execution-test-error-looking-value-is-a-success ()
  ;; What a form returns is data: a string that reads like an error is a
  ;; successful evaluation.
  (agent-q-execution-test--with reg
    (let ((result (agent-q-execution-test--call
                   reg "eval_form" :form "(concat \"Error: \" \"not really\")")))
      (should (eq (plist-get result :success) t))
      (should (equal (agent-q-execution-test--status result) "success"))
      (should (equal (plist-get result :content) "Value: \"Error: not really\""))
      (should (= 0 (plist-get (agent-q-execution-test--metrics reg "eval_form") :failures)))
      (should (eq (plist-get (cadr (agent-q-execution-test--audit)) :success) t)))
    ;; A form that itself calls agent-q-tool-deny cannot pass for a denial.
    (let ((result (agent-q-execution-test--call
                   reg "eval_form" :form "(agent-q-tool-deny \"no\")")))
      (agent-q-execution-test--failed result)
      (should (plist-get (plist-get result :metadata) :approved)))))

(defconst agent-q-execution-test--lisp-directory
  (expand-file-name "../lisp/" (file-name-directory (or load-file-name buffer-file-name)))
  "agent-q's lisp/ directory, for the child Emacs.")

(ert-deftest agent-q-execution-test-deep-form-is-refused-not-read ()
  ;; Emacs's reader overflows the C stack on a form nested some 50,000
  ;; levels, and in batch mode Emacs then hangs.  Such a form is refused
  ;; before it is read; the nesting is counted as the reader would count
  ;; it (character literals, strings, comments, quotes).  The deep forms
  ;; run in a child Emacs under `timeout', so that a regression fails
  ;; this test instead of hanging the suite.
  (let* ((program
          `(progn
             (require 'agent-q)
             (setq agent-q-audit-file nil)
             (dolist (form (list (concat (make-string 60000 ?\() (make-string 60000 ?\)))
                                 (apply #'concat (make-list 60000 "(?) "))
                                 (apply #'concat (make-list 60000 "(?\\) "))
                                 (apply #'concat (make-list 60000 "a?("))
                                 (concat (make-string 60000 ?') "x")
                                 (concat (apply #'concat (make-list 60000 "` ")) "x")))
               (let ((result (car (agent-q-execute-tool-calls
                                   (list (list :id "d" :name "eval_form"
                                               :arguments (list :form form)))))))
                 (princ (format "%s %s\n"
                                (plist-get (plist-get result :metadata) :status)
                                (plist-get result :content)))))))
         (output
          (with-temp-buffer
            (let ((status (call-process
                           "timeout" nil t nil "120"
                           (expand-file-name invocation-name invocation-directory)
                           "--batch" "-Q" "-L" agent-q-execution-test--lisp-directory
                           "--eval" (prin1-to-string program))))
              (should (eql status 0))
              (buffer-string))))
         (lines (seq-filter (lambda (l) (string-match-p "\\`[a-z]+ " l))
                            (split-string output "\n" t))))
    (should (= 6 (length lines)))
    (dolist (line lines)
      (should (string-prefix-p "failure Error: The form nests deeper than 1000 levels" line))))
  (agent-q-execution-test--with reg
    ;; Forms that are long but shallow, and nesting hidden in strings,
    ;; comments and character literals, are read.
    (dolist (case `((,(concat "(list " (apply #'concat (make-list 3000 "'a ")) ")") . "Value: (a a a")
                    (,(concat "(length \"" (make-string 3000 ?\() "\")") . "Value: 3000")
                    (,(concat "(+ 1 ; " (make-string 3000 ?\() "\n 2)") . "Value: 3")
                    (,(concat "(length (list " (apply #'concat (make-list 3000 "?( ")) "))")
                     . "Value: 3000")))
      (let ((result (agent-q-execution-test--call reg "eval_form" :form (car case))))
        (should (eq (plist-get result :success) t))
        (should (string-prefix-p (cdr case) (plist-get result :content)))))))

(ert-deftest agent-q-execution-test-long-form-is-refused ()
  (agent-q-execution-test--with reg
    (let* ((agent-q-builtins-max-form-chars 100)
           (result (agent-q-execution-test--call
                    reg "eval_form" :form (format "(length \"%s\")" (make-string 200 ?x)))))
      (agent-q-execution-test--failed result)
      (should (string-match-p "The form is 211 characters long; at most 100 are read"
                              (plist-get result :content))))))

;;;; compile_form

(ert-deftest agent-q-execution-test-compile-failures ()
  (agent-q-execution-test--with reg
    ;; The compiler's own error: no function to run.
    (let ((result (agent-q-execution-test--call
                   reg "compile_form" :form "(function (lambda (&rest) 1))")))
      (agent-q-execution-test--failed result)
      (should (string-prefix-p "Compilation failed: &rest without variable name"
                               (plist-get result :content))))
    ;; Compiled, then signalled when run: the warnings and the error.
    (let ((result (agent-q-execution-test--call
                   reg "compile_form" :form "(car (agent-q-execution-test-no-such-fn))")))
      (agent-q-execution-test--failed result)
      (should (string-match-p "\\`Compiler warnings (1):\n  the function .agent-q-execution-test-no-such-fn. is not known"
                              (plist-get result :content)))
      (should (string-match-p "^Error: Symbol.s function definition is void"
                              (plist-get result :content))))
    ;; Unreadable.
    (agent-q-execution-test--failed
     (agent-q-execution-test--call reg "compile_form" :form "(car"))
    ;; Warnings alone do not make a failure.
    (let ((result (agent-q-execution-test--call
                   reg "compile_form" :form "(let ((unused 1)) 7)")))
      (should (eq (plist-get result :success) t))
      (should (string-match-p "^Value: 7$" (plist-get result :content))))
    (let ((m (agent-q-execution-test--metrics reg "compile_form")))
      (should (= 4 (plist-get m :calls)))
      (should (= 3 (plist-get m :failures))))
    (should (equal '(:false :false :false t)
                   (delq nil (mapcar (lambda (r) (plist-get r :success))
                                     (agent-q-execution-test--audit)))))))

;;;; get_last_error and get_repl_history

(ert-deftest agent-q-execution-test-history-and-last-error-outcomes ()
  (agent-q-execution-test--with reg
    ;; Nothing recorded yet: a successful answer.
    (let ((none (agent-q-execution-test--call reg "get_last_error"))
          (empty (agent-q-execution-test--call reg "get_repl_history")))
      (should (eq (plist-get none :success) t))
      (should (equal (plist-get none :content) "No recent errors recorded."))
      (should (eq (plist-get empty :success) t))
      (should (string-prefix-p "No REPL history recorded yet" (plist-get empty :content))))
    ;; A limit out of range is a failure.
    (let ((result (agent-q-execution-test--call reg "get_repl_history" :limit 0)))
      (agent-q-execution-test--failed result)
      (should (equal (plist-get result :content) "Invalid limit 0: give a number from 1 to 50.")))
    (let ((m (agent-q-execution-test--metrics reg "get_repl_history")))
      (should (= 2 (plist-get m :calls)))
      (should (= 1 (plist-get m :failures))))))

;;;; Bounds: nothing is printed or kept whole

(defvar agent-q-execution-test--big nil
  "A big string for the bound tests.")

(ert-deftest agent-q-execution-test-huge-error-data-is-printed-within-bounds ()
  (agent-q-execution-test--with reg
    (let ((agent-q-execution-test--big (make-string (* 20 1000 1000) ?x)))
      (dolist (form '("(car agent-q-execution-test--big)"
                      "(signal 'error (list agent-q-execution-test--big agent-q-execution-test--big))"
                      "(error \"%s\" agent-q-execution-test--big)"))
        (let* ((before (agent-q-execution-test--string-chars))
               (result (agent-q-execution-test--call reg "eval_form" :form form))
               (last (agent-q-execution-test--call reg "get_last_error"))
               (history (agent-q-execution-test--call reg "get_repl_history"))
               (allocated (- (agent-q-execution-test--string-chars) before)))
          (agent-q-execution-test--failed result)
          (should (< (length (plist-get result :content)) 10000))
          (should (string-match-p "more characters not shown\\|message cut"
                                  (plist-get result :content)))
          (should (< (length (plist-get last :content)) 20000))
          (should (< (length (plist-get history :content)) 20000))
          ;; Printed within bounds: far less than the 20 million
          ;; characters of the string were produced.
          (should (< allocated 2000000))))
      ;; What is kept holds no reference to the big string.
      (should-not (cl-some (lambda (v) (and (stringp v) (> (length v) 10000)))
                           agent-q-builtins--last-error))
      (dolist (entry agent-q-builtins--history)
        (should (<= (length (plist-get entry :form)) 2100))
        (should (<= (length (plist-get entry :result)) 2100))))))

(ert-deftest agent-q-execution-test-history-keeps-bounded-entries ()
  (agent-q-execution-test--with reg
    (let ((form (format "(length \"%s\")" (make-string 100000 ?y))))
      (dotimes (_ 3)
        (should (eq (plist-get (agent-q-execution-test--call reg "eval_form" :form form) :success) t))))
    (dolist (entry agent-q-builtins--history)
      (should (<= (length (plist-get entry :form)) 2100)))
    (let ((content (plist-get (agent-q-execution-test--call reg "get_repl_history" :limit 50)
                              :content)))
      (should (string-prefix-p "Recent REPL History (3 of 3 entries):" content))
      (should (< (length content) 8000)))))

(defvar agent-q--pending)
(defvar agent-q--asking)
(defvar agent-q--queue-timer)

(ert-deftest agent-q-execution-test-each-caller-sees-only-its-own-history-and-error ()
  ;; What one client evaluated (a secret it was allowed to read) is not
  ;; another's: neither another bridge's nor an MCP client's that calls
  ;; itself by the same name.
  (agent-q-execution-test--with reg
    (let ((agent-q-client "gptel"))
      (agent-q-execution-test--call reg "eval_form" :form "(concat \"pass\" \"word-1\")")
      (agent-q-execution-test--call reg "eval_form" :form "(error \"pass%s\" \"word-2\")"))
    (let ((agent-q-client "llm"))
      (should (string-prefix-p "No REPL history recorded yet"
                               (plist-get (agent-q-execution-test--call reg "get_repl_history")
                                          :content)))
      (should (equal "No recent errors recorded."
                     (plist-get (agent-q-execution-test--call reg "get_last_error") :content))))
    (let ((results :none)
          (agent-q--pending nil)
          (agent-q--asking nil)
          (agent-q--queue-timer nil))
      (agent-q--execute-async '((:id "1" :name "get_repl_history")
                                (:id "2" :name "get_last_error"))
                              (lambda (r) (setq results r)) reg
                              :client '(:client "gptel" :mcp-client "gptel"))
      (let ((deadline (+ (float-time) 10)))
        (while (and (eq results :none) (< (float-time) deadline))
          (accept-process-output nil 0.05)))
      (should (listp results))
      (dolist (result results)
        (should-not (string-match-p "word-" (plist-get result :content)))))
    (let ((agent-q-client "gptel"))
      (should (string-match-p "password-1"
                              (plist-get (agent-q-execution-test--call reg "get_repl_history")
                                         :content)))
      (should (string-match-p "password-2"
                              (plist-get (agent-q-execution-test--call reg "get_last_error")
                                         :content))))))

;; The audit file is written by the module (one write per record, no lock
;; file): created with its directory, readable by the user only, each
;; record a line of its own, the log buffer without undo.
(ert-deftest agent-q-execution-test-audit-file-created-private ()
  (let* ((dir (make-temp-file "agent-q-audit-dir" t))
         (agent-q-audit-file (expand-file-name "sub/dir/audit.jsonl" dir)))
    (unwind-protect
        (progn
          (dotimes (i 3)
            (agent-q--audit (format "{\"tool\":\"describe_symbol\",\"n\":%d}" i) "summary"))
          (should (file-exists-p agent-q-audit-file))
          (should (= (file-modes agent-q-audit-file) #o600))
          (should-not (file-symlink-p (expand-file-name ".#audit.jsonl"
                                                        (file-name-directory agent-q-audit-file))))
          (let ((records (agent-q-execution-test--audit)))
            (should (equal (mapcar (lambda (r) (plist-get r :n)) records) '(0 1 2)))
            (should (cl-every (lambda (r) (equal (plist-get r :tool) "describe_symbol")) records)))
          (should (eq (buffer-local-value 'buffer-undo-list
                                          (get-buffer agent-q-log-buffer-name))
                      t)))
      (delete-directory dir t))))

(provide 'agent-q-execution-test)

;;; agent-q-execution-test.el ends here
