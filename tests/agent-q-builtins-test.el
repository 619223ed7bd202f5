;;; agent-q-builtins-test.el --- Tests for the built-in tools  -*- lexical-binding: t -*-

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

;; ERT tests of the built-in tools against the real Emacs: its own
;; libraries, temporary files and buffers.
;;
;; Section 1 calls the handler functions directly with an arguments
;; hash table, as the executor does; it needs agent-q-builtins.el, and
;; agent-q.el for the failures (`agent-q-tool-fail' signals
;; `agent-q-tool-failure', an error the module defines).
;;
;; Section 2 (tests tagged `needs-core') registers the tools with the
;; real registry and runs them through the real executor: it needs
;; agent-q.el and the agent-q-core module.  Run section 1 alone with
;;   (ert-run-tests-batch-and-exit '(not (tag needs-core)))

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'subr-x)
(require 'eieio)
(require 'agent-q-builtins)

;; Section 2 uses agent-q.el, loaded at run time by its tests.
(defvar agent-q-approval-function)
(declare-function agent-q-make-registry "agent-q" ())
(declare-function agent-q-get-tool "agent-q" (name &optional registry))
(declare-function agent-q-get-tools "agent-q" (&rest keys))
(declare-function agent-q-execute-tool-calls "agent-q" (calls &optional registry))
(declare-function agent-q-tool-name "agent-q" (tool))
(declare-function agent-q-tool-description "agent-q" (tool))
(declare-function agent-q-tool-safety-level "agent-q" (tool))
(declare-function agent-q-tool-categories "agent-q" (tool))
(declare-function agent-q-tool-handler "agent-q" (tool))

;;;; Helpers

(defun agent-q-builtins-test--args (&rest plist)
  "Return an arguments hash table from PLIST of name strings and values."
  (let ((table (make-hash-table :test #'equal)))
    (while plist
      (puthash (car plist) (cadr plist) table)
      (setq plist (cddr plist)))
    table))

(defalias 'agent-q-builtins-test--a #'agent-q-builtins-test--args)

(defun agent-q-builtins-test--fails (handler args)
  "Call HANDLER with ARGS; return its failure message, or fail the test.
HANDLER must end with `agent-q-tool-fail'."
  (require 'agent-q)
  (condition-case err
      (progn (funcall handler args)
             (ert-fail (list "expected a failure from" handler)))
    (agent-q-tool-failure (cadr err))))

;;;; describe_symbol

(ert-deftest agent-q-builtins-describe-symbol-primitive ()
  (let ((out (agent-q-builtins--describe-symbol
              (agent-q-builtins-test--a "symbol" "car"))))
    (should (string-match-p "^Kind: function$" out))
    (should (string-match-p "^Signature: (car LIST)$" out))
    (should (string-match-p "C source code" out))
    (should (string-match-p "Return the car of LIST" out))))

(ert-deftest agent-q-builtins-describe-symbol-macro-with-source ()
  (let ((out (agent-q-builtins--describe-symbol
              (agent-q-builtins-test--a "symbol" "named-let"))))
    (should (string-match-p "^Kind: macro$" out))
    (should (string-match-p "^Signature: (named-let " out))
    (should (string-match-p "^Function defined in: .*subr-x\\.el" out))))

(ert-deftest agent-q-builtins-describe-symbol-command-and-special-form ()
  (should (string-match-p "^Kind: command"
                          (agent-q-builtins--describe-symbol
                           (agent-q-builtins-test--a "symbol" "forward-line"))))
  (should (string-match-p "^Kind: special form"
                          (agent-q-builtins--describe-symbol
                           (agent-q-builtins-test--a "symbol" "if")))))

(ert-deftest agent-q-builtins-describe-symbol-variable-value ()
  (let ((fill-column 71))
    (let ((out (agent-q-builtins--describe-symbol
                (agent-q-builtins-test--a "symbol" "fill-column"))))
      (should (string-match-p "^Kind: user option$" out))
      (should (string-match-p "^Value: 71$" out))
      (should (string-match-p "buffer-local" out))
      (should (string-match-p "Column beyond which" out)))))

(defvar agent-q-builtins-test--big-value nil
  "A variable holding a big value, for the value bound.")

(ert-deftest agent-q-builtins-describe-symbol-value-is-bounded ()
  (let* ((agent-q-builtins-test--big-value (make-string 20000 ?x))
         ;; The variable is defined in this file: allowed, so shown.
         (agent-q-allowed-directories
          (list (file-name-directory (symbol-file 'agent-q-builtins-test--big-value 'defvar))))
         (agent-q-builtins-max-value-chars 500)
         (out (agent-q-builtins--describe-symbol
               (agent-q-builtins-test--a "symbol" "agent-q-builtins-test--big-value"))))
    (should (< (length out) 2000))
    (should (string-match-p "more characters not shown" out))))

(ert-deftest agent-q-builtins-describe-symbol-face-and-feature ()
  (let ((face (agent-q-builtins--describe-symbol
               (agent-q-builtins-test--a "symbol" "bold")))
        (feature (agent-q-builtins--describe-symbol
                  (agent-q-builtins-test--a "symbol" "subr-x"))))
    (should (string-match-p "^Kind: face$" face))
    (should (string-match-p "Face defined in: .*faces\\.el" face))
    (should (string-match-p "^Kind: feature$" feature))
    (should (string-match-p "^Feature: provided (loaded)" feature))))

(ert-deftest agent-q-builtins-describe-symbol-not-found-suggests ()
  (let ((out (agent-q-builtins-test--fails
              #'agent-q-builtins--describe-symbol
              (agent-q-builtins-test--a "symbol" "string-trimx"))))
    (should (string-prefix-p "Symbol string-trimx not found" out))
    (should (string-match-p "Did you mean: .*string-trim" out))))

(ert-deftest agent-q-builtins-describe-symbol-empty ()
  (should (string-prefix-p "No symbol given"
                           (agent-q-builtins-test--fails
                            #'agent-q-builtins--describe-symbol
                            (agent-q-builtins-test--a "symbol" "  ")))))

;;;; apropos_search

(ert-deftest agent-q-builtins-apropos-finds-with-kinds ()
  (let ((out (agent-q-builtins--apropos-search
              (agent-q-builtins-test--a "pattern" "string-trim"))))
    (should (string-match-p "\\`Found \\([0-9]+\\) symbol(s) matching 'string-trim':" out))
    (should (string-match-p "^  string-trim \\[function\\]$" out))
    (should (string-match-p "^  string-trim-left \\[function\\]$" out))))

(ert-deftest agent-q-builtins-apropos-count-matches-lines ()
  (let* ((out (agent-q-builtins--apropos-search
               (agent-q-builtins-test--a "pattern" "string-trim")))
         (n (and (string-match "\\`Found \\([0-9]+\\)" out)
                 (string-to-number (match-string 1 out)))))
    (should (= n (1- (length (split-string out "\n")))))))

(ert-deftest agent-q-builtins-apropos-type-filter ()
  (let ((out (agent-q-builtins--apropos-search
              (agent-q-builtins-test--a "pattern" "forward-line" "type" "command"))))
    (should (string-match-p "^  forward-line \\[command\\]" out))
    (dolist (line (cdr (split-string out "\n" t)))
      (should (string-match-p "\\[command" line))))
  (let ((out (agent-q-builtins--apropos-search
              (agent-q-builtins-test--a "pattern" "fill-column" "type" "variable"))))
    (should (string-match-p "^  fill-column \\[user option\\]" out))
    (should-not (string-match-p "set-fill-column" out))))

(ert-deftest agent-q-builtins-apropos-cap-says-how-many-left ()
  (let* ((agent-q-builtins-apropos-limit 3)
         (out (agent-q-builtins--apropos-search
               (agent-q-builtins-test--a "pattern" "buffer"))))
    (should (= 5 (length (split-string out "\n"))))
    (should (string-match-p "\\[\\.\\.\\. [0-9]+ more not shown" out))))

(ert-deftest agent-q-builtins-apropos-errors ()
  ;; No match is a successful (empty) answer; bad input is a failure.
  (should (string-prefix-p "No symbols matching 'zzqxqzz-none'"
                           (agent-q-builtins--apropos-search
                            (agent-q-builtins-test--a "pattern" "zzqxqzz-none"))))
  (should (string-prefix-p "No pattern given"
                           (agent-q-builtins-test--fails
                            #'agent-q-builtins--apropos-search
                            (agent-q-builtins-test--a "pattern" ""))))
  (should (string-prefix-p "Unknown type 'macro'"
                           (agent-q-builtins-test--fails
                            #'agent-q-builtins--apropos-search
                            (agent-q-builtins-test--a "pattern" "x" "type" "macro")))))

;;;; function_arglist

(defun agent-q-builtins-test--advertised (a b &optional c)
  "Return A, B and C; advertised as taking only A and B."
  (list a b c))
(set-advertised-calling-convention 'agent-q-builtins-test--advertised '(a b) "0.1")

(ert-deftest agent-q-builtins-arglist-lisp-function ()
  (should (equal "(string-trim STRING &optional TRIM-LEFT TRIM-RIGHT)"
                 (agent-q-builtins--function-arglist
                  (agent-q-builtins-test--a "function" "string-trim")))))

(ert-deftest agent-q-builtins-arglist-primitive-and-special-form ()
  (should (equal "(car LIST)"
                 (agent-q-builtins--function-arglist
                  (agent-q-builtins-test--a "function" "car"))))
  (should (equal "(if COND THEN ELSE...)"
                 (agent-q-builtins--function-arglist
                  (agent-q-builtins-test--a "function" "if")))))

(ert-deftest agent-q-builtins-arglist-advertised ()
  (let ((out (agent-q-builtins--function-arglist
              (agent-q-builtins-test--a "function" "agent-q-builtins-test--advertised"))))
    (should (string-prefix-p "(agent-q-builtins-test--advertised A B)\n" out))
    (should (string-match-p "advertised calling convention; the full argument list is (agent-q-builtins-test--advertised A B &optional C)" out))))

(ert-deftest agent-q-builtins-arglist-errors ()
  (should (string-prefix-p "fill-column is not a function (it is a user option)"
                           (agent-q-builtins-test--fails
                            #'agent-q-builtins--function-arglist
                            (agent-q-builtins-test--a "function" "fill-column"))))
  (should (string-prefix-p "nil is not a function (it is a constant)"
                           (agent-q-builtins-test--fails
                            #'agent-q-builtins--function-arglist
                            (agent-q-builtins-test--a "function" "nil"))))
  (let ((out (agent-q-builtins-test--fails
              #'agent-q-builtins--function-arglist
              (agent-q-builtins-test--a "function" "string-trimm"))))
    (should (string-prefix-p "Function string-trimm not found" out))
    (should (string-match-p "Did you mean: string-trim" out)))
  (should (string-prefix-p "No function given"
                           (agent-q-builtins-test--fails
                            #'agent-q-builtins--function-arglist
                            (agent-q-builtins-test--a "function" "")))))

;;;; list_package_symbols

(ert-deftest agent-q-builtins-package-symbols-subr-x ()
  (let* ((out (agent-q-builtins--list-package-symbols
               (agent-q-builtins-test--a "package" "subr-x")))
         (n (and (string-match "\\`Package subr-x (\\([0-9]+\\) symbols):" out)
                 (string-to-number (match-string 1 out)))))
    (should n)
    (should (string-match-p "^  string-blank-p \\[function\\]$" out))
    (should (string-match-p "^  named-let \\[macro\\]$" out))
    (should (= n (length (seq-filter (lambda (l) (string-prefix-p "  " l))
                                     (split-string out "\n")))))
    (should-not (string-match-p "^  [^ ]*--" out))))

(ert-deftest agent-q-builtins-package-symbols-internal ()
  (require 'project)
  (let ((public (agent-q-builtins--list-package-symbols
                 (agent-q-builtins-test--a "package" "project")))
        (all (agent-q-builtins--list-package-symbols
              (agent-q-builtins-test--a "package" "project" "include_internal" t))))
    (should (string-match-p "internal definitions .* hidden; pass include_internal true" public))
    (should-not (string-match-p "^  project--" public))
    (should (string-match-p "^  project--" all))
    (should (string-match-p "^  project-root \\[function\\]" all))))

(ert-deftest agent-q-builtins-package-symbols-not-found ()
  (let ((out (agent-q-builtins-test--fails
              #'agent-q-builtins--list-package-symbols
              (agent-q-builtins-test--a "package" "no-such-package-zz"))))
    (should (string-prefix-p "Package no-such-package-zz not found" out))
    (should (string-match-p "(require 'no-such-package-zz)" out)))
  (should (string-prefix-p "No package given"
                           (agent-q-builtins-test--fails
                            #'agent-q-builtins--list-package-symbols
                            (agent-q-builtins-test--a "package" "")))))

;;;; class_slots and class_hierarchy

(cl-defstruct (agent-q-builtins-test--shape)
  "A test struct."
  (name "unnamed" :type string)
  (sides 0 :type integer))

(cl-defstruct (agent-q-builtins-test--square
               (:include agent-q-builtins-test--shape (sides 4)))
  "A test struct that includes another."
  (size 1 :type number))

(defclass agent-q-builtins-test--animal ()
  ((legs :initarg :legs :initform 4 :type integer :documentation "Leg count.")
   (kind :initarg :species :initform "cat"))
  "A test EIEIO class.")

(defclass agent-q-builtins-test--dog (agent-q-builtins-test--animal)
  ((owner :initarg :owner :initform nil))
  "A test EIEIO subclass.")

(ert-deftest agent-q-builtins-class-slots-eieio ()
  (let ((out (agent-q-builtins--class-slots
              (agent-q-builtins-test--a "class" "agent-q-builtins-test--dog"))))
    (should (string-prefix-p "EIEIO class agent-q-builtins-test--dog has 3 slot(s):" out))
    (should (string-match-p "  legs\n    initarg: :legs\n    type: integer\n    initform: 4" out))
    (should (string-match-p "  kind\n    initarg: :species" out))
    (should (string-match-p "documentation: Leg count\\." out))))

(ert-deftest agent-q-builtins-class-slots-struct ()
  (let ((out (agent-q-builtins--class-slots
              (agent-q-builtins-test--a "class" "agent-q-builtins-test--square"))))
    (should (string-prefix-p "cl-defstruct type agent-q-builtins-test--square has 3 slot(s):" out))
    (should (string-match-p "  name\n    initarg: :name\n    type: string\n    initform: \"unnamed\"" out))
    (should (string-match-p "  sides\n    initarg: :sides\n    type: t\n    initform: 4" out))
    (should (string-match-p "  size\n" out))))

(ert-deftest agent-q-builtins-class-slots-errors ()
  (should (string-prefix-p "No class or struct type named no-such-class-zz"
                           (agent-q-builtins-test--fails
                            #'agent-q-builtins--class-slots
                            (agent-q-builtins-test--a "class" "no-such-class-zz"))))
  (should (string-prefix-p "No class or struct type named car"
                           (agent-q-builtins-test--fails
                            #'agent-q-builtins--class-slots
                            (agent-q-builtins-test--a "class" "car"))))
  (should (string-prefix-p "No class given"
                           (agent-q-builtins-test--fails
                            #'agent-q-builtins--class-slots
                            (agent-q-builtins-test--a "class" "")))))

(ert-deftest agent-q-builtins-class-hierarchy-eieio ()
  (let ((parent (agent-q-builtins--class-hierarchy
                 (agent-q-builtins-test--a "class" "agent-q-builtins-test--animal")))
        (child (agent-q-builtins--class-hierarchy
                (agent-q-builtins-test--a "class" "agent-q-builtins-test--dog"))))
    (should (string-match-p "Direct Subclasses:\n  agent-q-builtins-test--dog" parent))
    ;; Emacs 30 names the implicit root of every EIEIO class as a direct parent.
    (should (string-match-p (if (< emacs-major-version 30)
                                "Direct Superclasses: none"
                              "Direct Superclasses: eieio-default-superclass$")
                            parent))
    (should (string-match-p
             "Class Precedence List:\n  agent-q-builtins-test--dog\n  agent-q-builtins-test--animal\n  eieio-default-superclass"
             child))
    (should (string-match-p "Direct Superclasses: agent-q-builtins-test--animal" child))
    (should (string-match-p "Direct Subclasses: none" child))))

(ert-deftest agent-q-builtins-class-hierarchy-struct ()
  (let ((out (agent-q-builtins--class-hierarchy
              (agent-q-builtins-test--a "class" "agent-q-builtins-test--square"))))
    (should (string-prefix-p "cl-defstruct type agent-q-builtins-test--square" out))
    (should (string-match-p
             "Class Precedence List:\n  agent-q-builtins-test--square\n  agent-q-builtins-test--shape\n  cl-structure-object"
             out)))
  (should (string-match-p "Direct Subclasses:\n  agent-q-builtins-test--square"
                          (agent-q-builtins--class-hierarchy
                           (agent-q-builtins-test--a "class" "agent-q-builtins-test--shape")))))

(ert-deftest agent-q-builtins-class-hierarchy-not-found ()
  (should (string-prefix-p "No class or struct type named no-such-class-zz"
                           (agent-q-builtins-test--fails
                            #'agent-q-builtins--class-hierarchy
                            (agent-q-builtins-test--a "class" "no-such-class-zz")))))

;;;; macroexpand_form

(defmacro agent-q-builtins-test--failing-macro ()
  "A macro whose expansion signals."
  (error "Expansion refused"))

(ert-deftest agent-q-builtins-macroexpand-one-step-and-full ()
  ;; The expansion as Emacs's pp lays it out: on several lines before Emacs 30, on one
  ;; where it fits since (pp-fill); read back, it is the same form on both.
  (let ((out (agent-q-builtins--macroexpand-form
              (agent-q-builtins-test--a "form" "(when a b)")))
        (head "Expansion (one step, macroexpand-1):\n"))
    (should (string-prefix-p head out))
    (should (equal (car (read-from-string out (length head))) '(if a (progn b))))
    (should (equal (string-trim-right (pp-to-string '(if a (progn b))))
                   (substring out (length head)))))
  (let ((one (agent-q-builtins--macroexpand-form
              (agent-q-builtins-test--a "form" "(when a (unless b c))")))
        (full (agent-q-builtins--macroexpand-form
               (agent-q-builtins-test--a "form" "(when a (unless b c))" "full" t))))
    (should (string-match-p "(unless b c)" one))
    (should (string-prefix-p "Expansion (macroexpand-all):" full))
    (should-not (string-match-p "unless" full))
    (should (string-match-p "(if b nil c)" full))))

(ert-deftest agent-q-builtins-macroexpand-errors ()
  (should (string-prefix-p "No expansion: the form is not a macro call"
                           (agent-q-builtins--macroexpand-form
                            (agent-q-builtins-test--a "form" "(car x)"))))
  (should (string-prefix-p "Error: Incomplete form"
                           (agent-q-builtins-test--fails
                            #'agent-q-builtins--macroexpand-form
                            (agent-q-builtins-test--a "form" "(when a"))))
  (should (equal "Error while expanding: Expansion refused"
                 (agent-q-builtins-test--fails
                  #'agent-q-builtins--macroexpand-form
                  (agent-q-builtins-test--a "form" "(agent-q-builtins-test--failing-macro)")))))

;;;; eval_form, compile_form, get_last_error, get_repl_history

(defmacro agent-q-builtins-test--fresh-repl (&rest body)
  "Run BODY with an empty history and no last error."
  (declare (indent 0) (debug (body)))
  `(let ((agent-q-builtins--history nil)
         (agent-q-builtins--last-error nil))
     ,@body))

(ert-deftest agent-q-builtins-eval-value-and-output ()
  (agent-q-builtins-test--fresh-repl
    (should (equal "Value: 3\nOutput:\nhello"
                   (agent-q-builtins--eval-form
                    (agent-q-builtins-test--a "form" "(progn (princ \"hello\") (+ 1 2))"))))
    (should (equal "Value: \"abc\"" (agent-q-builtins--eval-form
                                     (agent-q-builtins-test--a "form" "(concat \"a\" \"bc\") ; comment"))))))

(ert-deftest agent-q-builtins-eval-is-lexical ()
  (agent-q-builtins-test--fresh-repl
    (should (equal "Value: 42"
                   (agent-q-builtins--eval-form
                    (agent-q-builtins-test--a
                     "form" "(let ((f (let ((x 42)) (lambda () x)))) (funcall f))"))))))

(ert-deftest agent-q-builtins-eval-read-errors ()
  (agent-q-builtins-test--fresh-repl
    (should (string-prefix-p "Error: Expected exactly one form, but there is more text after it"
                             (agent-q-builtins-test--fails
                              #'agent-q-builtins--eval-form
                              (agent-q-builtins-test--a "form" "(+ 1 2) (+ 3 4)"))))
    (should (string-prefix-p "Error: Incomplete form"
                             (agent-q-builtins-test--fails
                              #'agent-q-builtins--eval-form
                              (agent-q-builtins-test--a "form" "(+ 1"))))
    (should (string-prefix-p "Error: The form is empty"
                             (agent-q-builtins-test--fails
                              #'agent-q-builtins--eval-form
                              (agent-q-builtins-test--a "form" "  \n"))))
    (should (string-match-p "Backtrace: none (the form could not be read)"
                            (agent-q-builtins--get-last-error nil)))))

(ert-deftest agent-q-builtins-eval-error-and-last-error ()
  (agent-q-builtins-test--fresh-repl
    (should (equal "No recent errors recorded." (agent-q-builtins--get-last-error nil)))
    (let ((out (agent-q-builtins-test--fails
                #'agent-q-builtins--eval-form
                (agent-q-builtins-test--a "form" "(progn (princ \"before\") (car 1))"))))
      (should (string-prefix-p "Error: Wrong type argument: listp, 1" out))
      (should (string-match-p "Condition: (wrong-type-argument listp 1)" out))
      (should (string-match-p "Output:\nbefore" out)))
    (let ((last (agent-q-builtins--get-last-error nil)))
      (should (string-prefix-p "Last error (from eval_form at " last))
      (should (string-match-p "^Condition: (wrong-type-argument listp 1)$" last))
      (should (string-match-p "^Form: (progn (princ \"before\") (car 1))$" last))
      (should (string-match-p "^Backtrace (innermost first, [0-9]+ frame(s)):\n  (car 1)" last))
      ;; Our own machinery is not in the backtrace.
      (should-not (string-match-p "agent-q-builtins--\\|mapbacktrace" last)))))

(ert-deftest agent-q-builtins-eval-errors-are-captured-repeatedly ()
  (agent-q-builtins-test--fresh-repl
    (agent-q-builtins-test--fails #'agent-q-builtins--eval-form
                                  (agent-q-builtins-test--a "form" "(car 1)"))
    (agent-q-builtins-test--fails #'agent-q-builtins--eval-form
                                  (agent-q-builtins-test--a "form" "(agent-q-no-such-function 2)"))
    (let ((last (agent-q-builtins--get-last-error nil)))
      (should (string-match-p "void-function agent-q-no-such-function" last))
      (should (string-match-p "  (agent-q-no-such-function 2)" last)))))

(ert-deftest agent-q-builtins-backtrace-is-bounded ()
  (agent-q-builtins-test--fresh-repl
    (let ((agent-q-builtins-backtrace-frames 5))
      (agent-q-builtins-test--fails
       #'agent-q-builtins--eval-form
       (agent-q-builtins-test--a
        "form" "(cl-labels ((f (n) (if (= n 0) (car 1) (f (1- n))))) (f 40))"))
      (should (string-match-p "Backtrace (innermost first, 5 frame(s))"
                              (agent-q-builtins--get-last-error nil))))))

(ert-deftest agent-q-builtins-compile-warnings-then-value ()
  (agent-q-builtins-test--fresh-repl
    (should (equal "No warnings.\nValue: 3"
                   (agent-q-builtins--compile-form
                    (agent-q-builtins-test--a "form" "(+ 1 2)"))))
    (let ((out (agent-q-builtins--compile-form
                (agent-q-builtins-test--a
                 "form" "(let ((unused 1)) (ignore-errors agent-q-zz-free) 7)"))))
      (should (string-match-p "\\`Compiler warnings (2):" out))
      (should (string-match-p "free variable .agent-q-zz-free" out))
      (should (string-match-p "Unused lexical variable .unused" out))
      (should (string-match-p "^Value: 7$" out)))))

(ert-deftest agent-q-builtins-compile-runtime-error ()
  (agent-q-builtins-test--fresh-repl
    (let ((out (agent-q-builtins-test--fails
                #'agent-q-builtins--compile-form
                (agent-q-builtins-test--a "form" "(car (list-no-such-zz))"))))
      (should (string-match-p "^Compiler warnings (1):\n  the function .list-no-such-zz. is not known to be defined\\.$" out))
      (should (string-match-p "^Error: Symbol.s function definition is void: list-no-such-zz" out)))
    (should (string-match-p "from compile_form" (agent-q-builtins--get-last-error nil)))
    (should (string-prefix-p "Error: Incomplete form"
                             (agent-q-builtins-test--fails
                              #'agent-q-builtins--compile-form
                              (agent-q-builtins-test--a "form" "(car"))))))

(ert-deftest agent-q-builtins-history-newest-first-and-limits ()
  (agent-q-builtins-test--fresh-repl
    (should (string-prefix-p "No REPL history recorded"
                             (agent-q-builtins--get-repl-history nil)))
    (dotimes (i 12)
      (agent-q-builtins--eval-form (agent-q-builtins-test--a "form" (format "(* %d 10)" i))))
    (let ((out (agent-q-builtins--get-repl-history (agent-q-builtins-test--a))))
      (should (string-prefix-p "Recent REPL History (10 of 12 entries):\n1. [eval_form] (* 11 10)\n   => Value: 110" out))
      (should-not (string-match-p "(\\* 1 10)" out)))
    (should (string-prefix-p "Recent REPL History (2 of 12 entries):"
                             (agent-q-builtins--get-repl-history
                              (agent-q-builtins-test--a "limit" 2))))
    (should (string-prefix-p "Invalid limit 0"
                             (agent-q-builtins-test--fails
                              #'agent-q-builtins--get-repl-history
                              (agent-q-builtins-test--a "limit" 0))))))

(ert-deftest agent-q-builtins-history-at-most-50-and-bounded ()
  (agent-q-builtins-test--fresh-repl
    (let ((agent-q-builtins-history-size 60))
      (dotimes (i 70)
        (agent-q-builtins--eval-form (agent-q-builtins-test--a "form" (format "%d" i))))
      (should (= 60 (length agent-q-builtins--history)))
      (should (string-prefix-p "Recent REPL History (50 of 60 entries):"
                               (agent-q-builtins--get-repl-history
                                (agent-q-builtins-test--a "limit" 500)))))))

;;;; Pages

;; C2: agent-q-max-result-chars 0 means no cap, so pages keep their size.
(ert-deftest agent-q-builtins-page-size-follows-result-cap ()
  (defvar agent-q-max-result-chars)
  (let ((agent-q-builtins-page-chars 15000))
    (let ((agent-q-max-result-chars 0))
      (should (= 15000 (agent-q-builtins--page-chars))))
    (let ((agent-q-max-result-chars 20000))
      (should (= 15000 (agent-q-builtins--page-chars))))
    (let ((agent-q-max-result-chars 5000))
      (should (= 4000 (agent-q-builtins--page-chars))))
    (let ((agent-q-max-result-chars 600))
      (should (= 300 (agent-q-builtins--page-chars))))))

;; E2: limits that must not be negative are natnums.

;; E2: limits that must not be negative are natnums.
(ert-deftest agent-q-builtins-limits-are-natnums ()
  (dolist (var '(agent-q-builtins-max-value-chars agent-q-builtins-page-chars
                 agent-q-builtins-page-lines agent-q-builtins-max-file-size
                 agent-q-builtins-apropos-limit agent-q-builtins-search-limit
                 agent-q-builtins-package-symbols-limit agent-q-builtins-history-size
                 agent-q-builtins-backtrace-frames))
    (should (eq 'natnum (get var 'custom-type)))))

;; The file and buffer tools are tested through the executor in
;; agent-q-files-test.el.

;;;; The tool table (no core needed)

(ert-deftest agent-q-builtins-table-shape ()
  (should (= 25 (length agent-q-builtin-tools)))
  (should (= 25 (length (delete-dups (mapcar #'car agent-q-builtin-tools)))))
  (pcase-dolist (`(,name ,description ,parameters ,required ,safety ,categories ,handler)
                 agent-q-builtin-tools)
    (should (string-match-p "\\`[a-z][a-z0-9_]*\\'" name))
    (should (> (length description) 80))
    (should (memq safety '(:safe :cautious :dangerous)))
    (should (and categories (cl-every #'keywordp categories)))
    (should (fboundp handler))
    (dolist (p parameters)
      (should (stringp (plist-get p :name)))
      (should (memq (plist-get p :type) '(:string :boolean :integer :number)))
      (should (> (length (plist-get p :description)) 10)))
    (dolist (r required)
      (should (member r (mapcar (lambda (p) (plist-get p :name)) parameters))))))

(ert-deftest agent-q-builtins-read-tool-descriptions-mention-approval ()
  (dolist (name '("read_file" "read_buffer" "search_in_buffer"))
    (should (string-match-p "asks the user first"
                            (nth 1 (assoc name agent-q-builtin-tools))))))

;;;; Section 2: with the real registry and executor (needs agent-q core)

(defun agent-q-builtins-test--registry ()
  "Return a fresh registry holding the built-in tools."
  (require 'agent-q)
  (let ((registry (agent-q-make-registry)))
    (should (= 25 (agent-q-register-builtin-tools registry)))
    registry))

(defun agent-q-builtins-test--tools (registry)
  "Return the built-in tool structs registered in REGISTRY."
  (mapcar (lambda (entry) (agent-q-get-tool (car entry) registry))
          agent-q-builtin-tools))

(ert-deftest agent-q-builtins-core-registers-25-idempotently ()
  :tags '(needs-core)
  (let ((registry (agent-q-builtins-test--registry)))
    (should (= 25 (agent-q-register-builtin-tools registry)))
    (should (= 25 (length (delq nil (agent-q-builtins-test--tools registry)))))
    (should (= 25 (length (agent-q-get-tools :registry registry))))))

(ert-deftest agent-q-builtins-core-category-and-safety-counts ()
  :tags '(needs-core)
  (let* ((tools (agent-q-builtins-test--tools (agent-q-builtins-test--registry)))
         (primary (lambda (c) (cl-count-if (lambda (tool) (eq c (car (agent-q-tool-categories tool))))
                                           tools)))
         (member (lambda (c) (cl-count-if (lambda (tool) (memq c (agent-q-tool-categories tool)))
                                          tools)))
         (safety (lambda (s) (cl-count s tools :key #'agent-q-tool-safety-level))))
    ;; The specification's table: the five primary categories partition the 25
    ;; tools; xref, clos and packages are secondary categories.
    (should (= 9 (funcall primary :introspection)))
    (should (= 4 (funcall primary :execution)))
    (should (= 4 (funcall primary :buffer)))
    (should (= 1 (funcall primary :diff)))
    (should (= 7 (funcall primary :code)))
    (should (= 9 (funcall member :introspection)))
    (should (= 4 (funcall member :execution)))
    (should (= 2 (funcall member :xref)))
    (should (= 2 (funcall member :clos)))
    (should (= 1 (funcall member :packages)))
    (should (= 2 (funcall member :diff)))
    (should (= 19 (funcall safety :safe)))
    (should (= 3 (funcall safety :cautious)))
    (should (= 3 (funcall safety :dangerous)))))

(ert-deftest agent-q-builtins-core-registered-specs ()
  :tags '(needs-core)
  (let ((registry (agent-q-builtins-test--registry)))
    (pcase-dolist (`(,name ,description ,_params ,_required ,safety ,categories ,handler)
                   agent-q-builtin-tools)
      (let ((tool (agent-q-get-tool name registry)))
        (should tool)
        (should (equal description (agent-q-tool-description tool)))
        (should (eq safety (agent-q-tool-safety-level tool)))
        (should (equal categories (agent-q-tool-categories tool)))
        (should (eq handler (agent-q-tool-handler tool)))))
    (should (equal '("who_calls" "who_references")
                   (sort (mapcar #'agent-q-tool-name
                                 (agent-q-get-tools :registry registry :categories '(:xref)))
                         #'string<)))
    (should (= 19 (length (agent-q-get-tools :registry registry :max-safety-level :safe))))))

(ert-deftest agent-q-builtins-core-executes-through-executor ()
  :tags '(needs-core)
  (let* ((registry (agent-q-builtins-test--registry))
         (results (agent-q-execute-tool-calls
                   '((:id "c1" :name "describe_symbol" :arguments (:symbol "car"))
                     (:id "c2" :name "function_arglist" :arguments (:function "string-trim")))
                   registry)))
    (should (plist-get (nth 0 results) :success))
    (should (string-match-p "Signature: (car LIST)" (plist-get (nth 0 results) :content)))
    (should (equal "(string-trim STRING &optional TRIM-LEFT TRIM-RIGHT)"
                   (plist-get (nth 1 results) :content)))))

(ert-deftest agent-q-builtins-core-dangerous-write-needs-approval ()
  :tags '(needs-core)
  (let* ((registry (agent-q-builtins-test--registry))
         (dir (make-temp-file "agent-q-w" t))
         (file (expand-file-name "w.txt" dir)))
    (unwind-protect
        (progn
          (let ((agent-q-approval-function (lambda (&rest _) :denied)))
            (agent-q-execute-tool-calls
             `((:id "w" :name "write_file" :arguments (:path ,file :content "x")))
             registry)
            (should-not (file-exists-p file)))
          (let ((agent-q-approval-function (lambda (&rest _) :approved)))
            (should (string-prefix-p
                     "Wrote 1 characters"
                     (plist-get (car (agent-q-execute-tool-calls
                                      `((:id "w" :name "write_file"
                                         :arguments (:path ,file :content "x")))
                                      registry))
                                :content)))
            (should (file-exists-p file))))
      (delete-directory dir t))))

(provide 'agent-q-builtins-test)

;;; agent-q-builtins-test.el ends here
