;;; agent-q-builtins-test.el --- Tests for the built-in tools  -*- lexical-binding: t -*-

;; Author: agent-q contributors
;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1"))

;;; Commentary:

;; ERT tests of the built-in tools against the real Emacs: its own
;; libraries, temporary files and buffers.
;;
;; Section 1 calls the handler functions directly with an arguments
;; hash table, as the executor does; it needs only agent-q-builtins.el.
;; `agent-q-request-approval' (from agent-q.el) is stubbed with cl-letf
;; where the path guard is exercised.
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

(defmacro agent-q-builtins-test--with-dir (var &rest body)
  "Run BODY with VAR bound to a fresh temporary directory.
The directory is `default-directory' and the only allowed directory;
buffers visiting files in it are killed and it is deleted afterwards."
  (declare (indent 1) (debug (symbolp body)))
  `(let* ((,var (file-name-as-directory (file-truename (make-temp-file "agent-q-test" t))))
          (default-directory ,var)
          (agent-q-allowed-directories (list ,var)))
     (unwind-protect
         (progn ,@body)
       (dolist (buffer (buffer-list))
         (let ((file (buffer-file-name buffer)))
           (when (and file (string-prefix-p ,var (file-truename file)))
             (with-current-buffer buffer (set-buffer-modified-p nil))
             (kill-buffer buffer))))
       (delete-directory ,var t))))

(defun agent-q-builtins-test--write (file content)
  "Write CONTENT to FILE, bypassing file name handlers (no gpg prompt)."
  (let ((coding-system-for-write 'utf-8-unix)
        (file-name-handler-alist nil))
    (with-temp-file file (insert content))))

(defun agent-q-builtins-test--file-string (file)
  "Return the contents of FILE."
  (with-temp-buffer
    (let ((coding-system-for-read 'utf-8-unix))
      (insert-file-contents file))
    (buffer-string)))

(defmacro agent-q-builtins-test--approval (answer calls &rest body)
  "Run BODY with `agent-q-request-approval' answering ANSWER.
Each call's (TOOL ARGS REASON) is pushed onto the variable CALLS."
  (declare (indent 2) (debug (form symbolp body)))
  `(cl-letf (((symbol-function 'agent-q-request-approval)
              (lambda (tool args reason)
                (push (list tool args reason) ,calls)
                ,answer)))
     ,@body))

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
              (agent-q-builtins-test--a "symbol" "when-let"))))
    (should (string-match-p "^Kind: macro$" out))
    (should (string-match-p "^Signature: (when-let " out))
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
  (let ((out (agent-q-builtins--describe-symbol
              (agent-q-builtins-test--a "symbol" "string-trimx"))))
    (should (string-prefix-p "Symbol string-trimx not found" out))
    (should (string-match-p "Did you mean: .*string-trim" out))))

(ert-deftest agent-q-builtins-describe-symbol-empty ()
  (should (string-prefix-p "No symbol given"
                           (agent-q-builtins--describe-symbol
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
  (should (string-prefix-p "No symbols matching 'zzqxqzz-none'"
                           (agent-q-builtins--apropos-search
                            (agent-q-builtins-test--a "pattern" "zzqxqzz-none"))))
  (should (string-prefix-p "No pattern given"
                           (agent-q-builtins--apropos-search
                            (agent-q-builtins-test--a "pattern" ""))))
  (should (string-prefix-p "Unknown type 'macro'"
                           (agent-q-builtins--apropos-search
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
                           (agent-q-builtins--function-arglist
                            (agent-q-builtins-test--a "function" "fill-column"))))
  (let ((out (agent-q-builtins--function-arglist
              (agent-q-builtins-test--a "function" "string-trimm"))))
    (should (string-prefix-p "Function string-trimm not found" out))
    (should (string-match-p "Did you mean: string-trim" out)))
  (should (string-prefix-p "No function given"
                           (agent-q-builtins--function-arglist
                            (agent-q-builtins-test--a "function" "")))))

;;;; list_package_symbols

(ert-deftest agent-q-builtins-package-symbols-subr-x ()
  (let* ((out (agent-q-builtins--list-package-symbols
               (agent-q-builtins-test--a "package" "subr-x")))
         (n (and (string-match "\\`Package subr-x (\\([0-9]+\\) symbols):" out)
                 (string-to-number (match-string 1 out)))))
    (should n)
    (should (string-match-p "^  string-blank-p \\[function\\]$" out))
    (should (string-match-p "^  if-let \\[macro\\]$" out))
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
  (let ((out (agent-q-builtins--list-package-symbols
              (agent-q-builtins-test--a "package" "no-such-package-zz"))))
    (should (string-prefix-p "Package no-such-package-zz not found" out))
    (should (string-match-p "(require 'no-such-package-zz)" out)))
  (should (string-prefix-p "No package given"
                           (agent-q-builtins--list-package-symbols
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
                           (agent-q-builtins--class-slots
                            (agent-q-builtins-test--a "class" "no-such-class-zz"))))
  (should (string-prefix-p "No class or struct type named car"
                           (agent-q-builtins--class-slots
                            (agent-q-builtins-test--a "class" "car"))))
  (should (string-prefix-p "No class given"
                           (agent-q-builtins--class-slots
                            (agent-q-builtins-test--a "class" "")))))

(ert-deftest agent-q-builtins-class-hierarchy-eieio ()
  (let ((parent (agent-q-builtins--class-hierarchy
                 (agent-q-builtins-test--a "class" "agent-q-builtins-test--animal")))
        (child (agent-q-builtins--class-hierarchy
                (agent-q-builtins-test--a "class" "agent-q-builtins-test--dog"))))
    (should (string-match-p "Direct Subclasses:\n  agent-q-builtins-test--dog" parent))
    (should (string-match-p "Direct Superclasses: none" parent))
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
                           (agent-q-builtins--class-hierarchy
                            (agent-q-builtins-test--a "class" "no-such-class-zz")))))

;;;; macroexpand_form

(defmacro agent-q-builtins-test--failing-macro ()
  "A macro whose expansion signals."
  (error "Expansion refused"))

(ert-deftest agent-q-builtins-macroexpand-one-step-and-full ()
  (should (equal "Expansion (one step, macroexpand-1):\n(if a\n    (progn b))"
                 (agent-q-builtins--macroexpand-form
                  (agent-q-builtins-test--a "form" "(when a b)"))))
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
                           (agent-q-builtins--macroexpand-form
                            (agent-q-builtins-test--a "form" "(when a"))))
  (should (equal "Error while expanding: Expansion refused"
                 (agent-q-builtins--macroexpand-form
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
                             (agent-q-builtins--eval-form
                              (agent-q-builtins-test--a "form" "(+ 1 2) (+ 3 4)"))))
    (should (string-prefix-p "Error: Incomplete form"
                             (agent-q-builtins--eval-form
                              (agent-q-builtins-test--a "form" "(+ 1"))))
    (should (string-prefix-p "Error: The form is empty"
                             (agent-q-builtins--eval-form
                              (agent-q-builtins-test--a "form" "  \n"))))
    (should (string-match-p "Backtrace: none (the form could not be read)"
                            (agent-q-builtins--get-last-error nil)))))

(ert-deftest agent-q-builtins-eval-error-and-last-error ()
  (agent-q-builtins-test--fresh-repl
    (should (equal "No recent errors recorded." (agent-q-builtins--get-last-error nil)))
    (let ((out (agent-q-builtins--eval-form
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
    (agent-q-builtins--eval-form (agent-q-builtins-test--a "form" "(car 1)"))
    (agent-q-builtins--eval-form (agent-q-builtins-test--a "form" "(agent-q-no-such-function 2)"))
    (let ((last (agent-q-builtins--get-last-error nil)))
      (should (string-match-p "void-function agent-q-no-such-function" last))
      (should (string-match-p "  (agent-q-no-such-function 2)" last)))))

(ert-deftest agent-q-builtins-backtrace-is-bounded ()
  (agent-q-builtins-test--fresh-repl
    (let ((agent-q-builtins-backtrace-frames 5))
      (agent-q-builtins--eval-form
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
    (let ((out (agent-q-builtins--compile-form
                (agent-q-builtins-test--a "form" "(car (list-no-such-zz))"))))
      (should (string-match-p "^Compiler warnings (1):\n  the function .list-no-such-zz. is not known to be defined\\.$" out))
      (should (string-match-p "^Error: Symbol.s function definition is void: list-no-such-zz" out)))
    (should (string-match-p "from compile_form" (agent-q-builtins--get-last-error nil)))
    (should (string-prefix-p "Error: Incomplete form"
                             (agent-q-builtins--compile-form
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
                             (agent-q-builtins--get-repl-history
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

;;;; The path guard

(ert-deftest agent-q-builtins-guard-outside-allowed-asks-and-refuses ()
  (agent-q-builtins-test--with-dir dir
    (let ((outside (make-temp-file "agent-q-outside" nil ".txt" "outside secret\n"))
          (calls nil))
      (unwind-protect
          (agent-q-builtins-test--approval '(:denied "not that one") calls
            (let ((out (agent-q-builtins--read-file
                        (agent-q-builtins-test--a "path" outside))))
              (should (string-prefix-p "Refused: " out))
              (should (string-match-p "outside the allowed directories" out))
              (should (string-match-p "not that one" out))
              (should-not (string-match-p "outside secret" out))
              (should (equal (list "read_file" (list :path outside))
                             (butlast (car calls))))
              (should (string-match-p "outside the allowed directories"
                                      (nth 2 (car calls))))))
        (delete-file outside)))))

(ert-deftest agent-q-builtins-guard-approved-reads ()
  (agent-q-builtins-test--with-dir dir
    (let ((outside (make-temp-file "agent-q-outside" nil ".txt" "approved text\n"))
          (calls nil))
      (unwind-protect
          (agent-q-builtins-test--approval (list :approved (list :path outside)) calls
            (should (string-match-p "^approved text$"
                                    (agent-q-builtins--read-file
                                     (agent-q-builtins-test--a "path" outside))))
            (should (= 1 (length calls))))
        (delete-file outside)))))

(ert-deftest agent-q-builtins-guard-inside-does-not-ask ()
  (agent-q-builtins-test--with-dir dir
    (agent-q-builtins-test--write (expand-file-name "ok.txt" dir) "fine\n")
    (let ((calls nil))
      (agent-q-builtins-test--approval '(:denied "no") calls
        (should (string-match-p "^fine$" (agent-q-builtins--read-file
                                          (agent-q-builtins-test--a "path" "ok.txt"))))
        (should-not calls)))))

(ert-deftest agent-q-builtins-guard-sensitive-inside-allowed ()
  (agent-q-builtins-test--with-dir dir
    (dolist (name '(".env" ".env.local" "server.pem" "tls.key" ".authinfo" ".authinfo.gpg"
                    ".netrc" "id_rsa" "id_ed25519.pub"))
      (agent-q-builtins-test--write (expand-file-name name dir) "TOPSECRET=1\n")
      (let ((calls nil))
        (agent-q-builtins-test--approval '(:denied "secret") calls
          (let ((out (agent-q-builtins--read-file (agent-q-builtins-test--a "path" name))))
            (should (string-match-p "sensitive file pattern" out))
            (should-not (string-search "TOPSECRET" out))
            (should (= 1 (length calls)))))))
    (make-directory (expand-file-name ".ssh" dir))
    (agent-q-builtins-test--write (expand-file-name ".ssh/config" dir) "Host x\n")
    (let ((calls nil))
      (agent-q-builtins-test--approval '(:denied "ssh") calls
        (should (string-prefix-p "Refused: "
                                 (agent-q-builtins--read-file
                                  (agent-q-builtins-test--a "path" ".ssh/config"))))))))

(ert-deftest agent-q-builtins-guard-resolves-dotdot-tilde-and-symlinks ()
  (agent-q-builtins-test--with-dir dir
    (let* ((sub (expand-file-name "sub/" dir))
           (outside (make-temp-file "agent-q-outside" nil ".txt" "far away\n"))
           (secret-dir (expand-file-name "keys/.ssh/" dir))
           (calls nil))
      (make-directory sub)
      (make-directory secret-dir t)
      (agent-q-builtins-test--write (expand-file-name "id_x" secret-dir) "PRIVATE\n")
      (agent-q-builtins-test--write (expand-file-name "plain.txt" dir) "plain\n")
      (make-symbolic-link outside (expand-file-name "link-out" dir))
      (make-symbolic-link (expand-file-name "id_x" secret-dir)
                          (expand-file-name "harmless.txt" dir))
      (unwind-protect
          (let ((agent-q-allowed-directories (list sub)))
            (agent-q-builtins-test--approval '(:denied "no") calls
              ;; .. leaves the allowed directory.
              (let ((default-directory sub))
                (should (string-match-p "outside the allowed directories"
                                        (agent-q-builtins--read-file
                                         (agent-q-builtins-test--a "path" "../sub/../plain.txt")))))
              ;; ~ is expanded.
              (should (string-match-p (regexp-quote (file-truename "~/"))
                                      (agent-q-builtins--read-file
                                       (agent-q-builtins-test--a "path" "~/.profile-none"))))
              (let ((agent-q-allowed-directories (list dir)))
                ;; A symlink inside the allowed dir pointing outside.
                (should (string-match-p "outside the allowed directories"
                                        (agent-q-builtins--read-file
                                         (agent-q-builtins-test--a "path" "link-out"))))
                ;; A harmless name pointing at a secret.
                (let ((out (agent-q-builtins--read-file
                            (agent-q-builtins-test--a "path" "harmless.txt"))))
                  (should (string-match-p "sensitive file pattern" out))
                  (should-not (string-match-p "PRIVATE" out))))
              (should (= 4 (length calls)))))
        (delete-file outside)))))

(ert-deftest agent-q-builtins-guard-without-approval-function-refuses ()
  (agent-q-builtins-test--with-dir dir
    (let ((outside (make-temp-file "agent-q-outside" nil ".txt" "nope\n")))
      (unwind-protect
          (cl-letf (((symbol-function 'agent-q-request-approval) nil))
            (let ((out (agent-q-builtins--read-file
                        (agent-q-builtins-test--a "path" outside))))
              (should (string-prefix-p "Refused: " out))
              (should (string-match-p "approval is unavailable" out))))
        (delete-file outside)))))

(ert-deftest agent-q-builtins-guard-approval-that-signals-refuses ()
  (agent-q-builtins-test--with-dir dir
    (let ((outside (make-temp-file "agent-q-outside" nil ".txt" "nope\n")))
      (unwind-protect
          (cl-letf (((symbol-function 'agent-q-request-approval)
                     (lambda (&rest _) (error "Broken prompt"))))
            (let ((out (agent-q-builtins--read-file
                        (agent-q-builtins-test--a "path" outside))))
              (should (string-prefix-p "Refused: " out))
              (should (string-match-p "Broken prompt" out))))
        (delete-file outside)))))

;; S2: default-directory of a buffer that visits no file may be / or ~.
(ert-deftest agent-q-builtins-guard-default-directories ()
  (let* ((agent-q-allowed-directories nil)
         (dir (file-name-as-directory (file-truename (make-temp-file "agent-q-dflt" t))))
         (file (expand-file-name "f.txt" dir))
         (home (file-name-as-directory (file-truename (make-temp-file "agent-q-home" t))))
         (process-environment (cons (concat "HOME=" home) process-environment)))
    (unwind-protect
        (progn
          (agent-q-builtins-test--write file "x\n")
          ;; A buffer that visits no file: its default-directory is not allowed.
          (with-temp-buffer
            (setq default-directory dir)
            (should-not (member dir (agent-q-builtins--allowed-directories))))
          ;; A buffer visiting a file: that file's directory is allowed.
          (with-current-buffer (find-file-noselect file)
            (unwind-protect
                (should (member dir (agent-q-builtins--allowed-directories)))
              (kill-buffer)))
          ;; / and the home directory are never allowed, not even when listed.
          (with-temp-buffer
            (setq default-directory "/")
            (should-not (agent-q-builtins--allowed-directories))
            (let ((agent-q-allowed-directories (list "/" "~" home dir)))
              (should (equal (list dir) (agent-q-builtins--allowed-directories)))))
          ;; A project whose root is the home directory (a dotfiles repository).
          (cl-letf (((symbol-function 'project-current) (lambda (&rest _) (list 'transient home)))
                    ((symbol-function 'project-root) (lambda (p) (nth 1 p))))
            (with-temp-buffer
              (setq default-directory home)
              (should-not (agent-q-builtins--allowed-directories))))
          ;; Through the handler: / as default-directory lets nothing through.
          (with-temp-buffer
            (setq default-directory "/")
            (let ((calls nil))
              (agent-q-builtins-test--approval '(:denied "no") calls
                (should (string-prefix-p "Refused: " (agent-q-builtins--read-file
                                                      (agent-q-builtins-test--a "path" file))))
                (should (= 1 (length calls)))))))
      (delete-directory dir t)
      (delete-directory home t))))

;; S4: a remote path must not connect before the user approved.
(ert-deftest agent-q-builtins-guard-remote-asks-before-connecting ()
  (let ((calls nil) (processes 0) (remote "/ssh:agentq-test.invalid:/tmp/x"))
    (cl-letf* ((real-make-process (symbol-function 'make-process))
               ((symbol-function 'make-process)
                (lambda (&rest args) (cl-incf processes) (apply real-make-process args))))
      (agent-q-builtins-test--approval '(:denied "no ssh") calls
        (dolist (path (list remote "/ssh:agentq-test.invalid:~/x"))
          (let ((out (agent-q-builtins--read-file (agent-q-builtins-test--a "path" path))))
            (should (string-prefix-p "Refused: " out))
            (should (string-match-p "remote file" out))))
        (let ((default-directory "/ssh:agentq-test.invalid:/tmp/"))
          (should (string-match-p "remote file" (agent-q-builtins--read-file
                                                 (agent-q-builtins-test--a "path" "x")))))
        (should (= 3 (length calls)))
        (should (equal (list :path remote) (nth 1 (car (last calls)))))))
    (should (zerop processes))))

;;;; read_file

(ert-deftest agent-q-builtins-read-file-small ()
  (agent-q-builtins-test--with-dir dir
    (agent-q-builtins-test--write (expand-file-name "s.txt" dir) "one\ntwo\nthree\n")
    (should (equal (format "File: %ss.txt (lines 1-3 of 3)\none\ntwo\nthree\n" dir)
                   (agent-q-builtins--read-file (agent-q-builtins-test--a "path" "s.txt"))))))

(ert-deftest agent-q-builtins-read-file-pages ()
  (agent-q-builtins-test--with-dir dir
    (agent-q-builtins-test--write
     (expand-file-name "big.txt" dir)
     (mapconcat (lambda (i) (format "line %d\n" i)) (number-sequence 1 1000) ""))
    (let ((first (agent-q-builtins--read-file (agent-q-builtins-test--a "path" "big.txt"))))
      (should (string-match-p "(lines 1-400 of 1000)" first))
      (should (string-match-p "^line 400$" first))
      (should-not (string-match-p "^line 401$" first))
      (should (string-match-p "Call read_file with offset 401 to read the next page" first)))
    (let ((page (agent-q-builtins--read-file
                 (agent-q-builtins-test--a "path" "big.txt" "offset" 998 "limit" 10))))
      (should (string-match-p "(lines 998-1000 of 1000)\nline 998\nline 999\nline 1000\n\\'" page)))
    (should (string-prefix-p "Offset 2000 is past the end"
                             (agent-q-builtins--read-file
                              (agent-q-builtins-test--a "path" "big.txt" "offset" 2000))))
    (should (string-prefix-p "Invalid offset 0"
                             (agent-q-builtins--read-file
                              (agent-q-builtins-test--a "path" "big.txt" "offset" 0))))
    (should (string-prefix-p "Invalid limit -1"
                             (agent-q-builtins--read-file
                              (agent-q-builtins-test--a "path" "big.txt" "limit" -1))))))

(ert-deftest agent-q-builtins-read-file-char-limit-never-silent ()
  (agent-q-builtins-test--with-dir dir
    (agent-q-builtins-test--write
     (expand-file-name "wide.txt" dir)
     (mapconcat (lambda (i) (format "%04d %s\n" i (make-string 95 ?x)))
                (number-sequence 1 300) ""))
    (let* ((agent-q-builtins-page-chars 1000)
           (out (agent-q-builtins--read-file (agent-q-builtins-test--a "path" "wide.txt"))))
      ;; Each line is 101 characters: 9 fit in 1000.
      (should (string-match-p "(lines 1-9 of 300)" out))
      (should (string-match-p "^0009 x+\n\n\\[Page size limit reached: lines 10-300 not shown. Call read_file with offset 10 to read the next page.\\]\\'" out)))
    (agent-q-builtins-test--write (expand-file-name "long.txt" dir)
                                  (concat (make-string 3000 ?y) "\nshort\n"))
    (let* ((agent-q-builtins-page-chars 1000)
           (out (agent-q-builtins--read-file (agent-q-builtins-test--a "path" "long.txt"))))
      (should (string-match-p "Line 1 is longer than one page (3000 characters); columns 0-999 are shown. Call read_file with offset 1 and column 1000 to read on." out))
      ;; The rest of the line is reachable with column.
      (let ((rest (agent-q-builtins--read-file
                   (agent-q-builtins-test--a "path" "long.txt" "column" 1000))))
        (should (string-match-p "(lines 1-1 of 2, line 1 from column 1000)" rest))
        (should (string-match-p "columns 1000-1999 are shown.* column 2000 to read on" rest)))
      (let ((last (agent-q-builtins--read-file
                   (agent-q-builtins-test--a "path" "long.txt" "column" 2000))))
        (should (string-match-p (concat "(lines 1-1 of 2, line 1 from column 2000)\n"
                                        (make-string 1000 ?y)
                                        "\n\n\\[Page size limit reached: lines 2-2 not shown")
                                last)))
      (should (string-prefix-p "Column 3001 is past the end of line 1"
                               (agent-q-builtins--read-file
                                (agent-q-builtins-test--a "path" "long.txt" "column" 3001))))
      (should (string-prefix-p "Invalid column -1"
                               (agent-q-builtins--read-file
                                (agent-q-builtins-test--a "path" "long.txt" "column" -1)))))))

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
(ert-deftest agent-q-builtins-limits-are-natnums ()
  (dolist (var '(agent-q-builtins-max-value-chars agent-q-builtins-page-chars
                 agent-q-builtins-page-lines agent-q-builtins-max-file-size
                 agent-q-builtins-apropos-limit agent-q-builtins-search-limit
                 agent-q-builtins-package-symbols-limit agent-q-builtins-history-size
                 agent-q-builtins-backtrace-frames))
    (should (eq 'natnum (get var 'custom-type)))))

(ert-deftest agent-q-builtins-read-file-unsaved-buffer ()
  (agent-q-builtins-test--with-dir dir
    (let ((file (expand-file-name "u.txt" dir)))
      (agent-q-builtins-test--write file "on disk\n")
      (with-current-buffer (find-file-noselect file)
        (goto-char (point-min))
        (insert "edited ")
        (let ((out (agent-q-builtins--read-file (agent-q-builtins-test--a "path" file))))
          (should (string-match-p "has unsaved changes" out))
          (should (string-match-p "^edited on disk$" out)))
        (set-buffer-modified-p nil)
        (revert-buffer t t t)
        (let ((out (agent-q-builtins--read-file (agent-q-builtins-test--a "path" file))))
          (should-not (string-match-p "unsaved" out))
          (should (string-match-p "^on disk$" out)))))))

(ert-deftest agent-q-builtins-read-file-errors ()
  (agent-q-builtins-test--with-dir dir
    (should (string-prefix-p "File not found: " (agent-q-builtins--read-file
                                                 (agent-q-builtins-test--a "path" "none.txt"))))
    (make-directory (expand-file-name "d" dir))
    (should (string-match-p "is a directory, not a file"
                            (agent-q-builtins--read-file (agent-q-builtins-test--a "path" "d"))))
    (let ((coding-system-for-write 'no-conversion))
      (with-temp-file (expand-file-name "bin" dir) (insert "a\0b")))
    (should (string-match-p "looks binary"
                            (agent-q-builtins--read-file (agent-q-builtins-test--a "path" "bin"))))
    (agent-q-builtins-test--write (expand-file-name "huge.txt" dir) (make-string 2000 ?z))
    (let ((agent-q-builtins-max-file-size 1000))
      (should (string-match-p "too large to read"
                              (agent-q-builtins--read-file
                               (agent-q-builtins-test--a "path" "huge.txt")))))
    (should (string-prefix-p "No path given" (agent-q-builtins--read-file
                                              (agent-q-builtins-test--a "path" ""))))))

(ert-deftest agent-q-builtins-read-file-refuses-fifo ()
  (skip-unless (executable-find "mkfifo"))
  (agent-q-builtins-test--with-dir dir
    (should (zerop (call-process "mkfifo" nil nil nil (expand-file-name "pipe" dir))))
    (should (string-match-p "is not a regular file"
                            (agent-q-builtins--read-file
                             (agent-q-builtins-test--a "path" "pipe"))))))

(ert-deftest agent-q-builtins-read-file-unreadable ()
  (agent-q-builtins-test--with-dir dir
    (let ((file (expand-file-name "locked.txt" dir)))
      (agent-q-builtins-test--write file "x\n")
      (set-file-modes file 0)
      ;; root reads any file: make the check fail as for another user.
      (cl-letf (((symbol-function 'file-readable-p)
                 (if (zerop (user-uid)) #'ignore (symbol-function 'file-readable-p))))
        (should (string-prefix-p "Permission denied"
                                 (agent-q-builtins--read-file
                                  (agent-q-builtins-test--a "path" file))))))))

;;;; read_buffer

(ert-deftest agent-q-builtins-read-buffer-whole-and-range ()
  (with-temp-buffer
    (rename-buffer "agent-q-test-rb" t)
    (insert "abcdefghij")
    (narrow-to-region 3 5)
    (let ((name (buffer-name)))
      (should (equal (format "Buffer: %s (characters 1-10 of 10)\nabcdefghij" name)
                     (agent-q-builtins--read-buffer (agent-q-builtins-test--a "buffer" name))))
      (should (equal (format "Buffer: %s (characters 2-3 of 10)\nbc" name)
                     (agent-q-builtins--read-buffer
                      (agent-q-builtins-test--a "buffer" name "start" 2 "end" 4)))))))

(ert-deftest agent-q-builtins-read-buffer-pages ()
  (with-temp-buffer
    (insert (make-string 2500 ?a))
    (let* ((agent-q-builtins-page-chars 1000)
           (out (agent-q-builtins--read-buffer (agent-q-builtins-test--a "buffer" (buffer-name)))))
      (should (string-match-p "(characters 1-1000 of 2500)" out))
      (should (string-match-p "characters 1001-2500 not shown. Call read_buffer with start 1001" out))))
  (with-temp-buffer
    (should (string-match-p "(no characters: the range is empty; the buffer has 0)"
                            (agent-q-builtins--read-buffer
                             (agent-q-builtins-test--a "buffer" (buffer-name)))))))

(ert-deftest agent-q-builtins-read-buffer-errors ()
  (with-temp-buffer
    (insert "abc")
    (let ((name (buffer-name)))
      (should (string-prefix-p "Invalid start 10"
                               (agent-q-builtins--read-buffer
                                (agent-q-builtins-test--a "buffer" name "start" 10))))
      (should (string-prefix-p "Invalid range: end 1 is before start 3"
                               (agent-q-builtins--read-buffer
                                (agent-q-builtins-test--a "buffer" name "start" 3 "end" 1))))))
  (should (string-prefix-p "Buffer no-such-buffer-zz not found."
                           (agent-q-builtins--read-buffer
                            (agent-q-builtins-test--a "buffer" "no-such-buffer-zz")))))

(ert-deftest agent-q-builtins-read-buffer-guards-visited-file ()
  (agent-q-builtins-test--with-dir dir
    (let ((file (expand-file-name ".env" dir))
          (calls nil))
      (agent-q-builtins-test--write file "TOKEN=abc\n")
      (let ((buffer (find-file-noselect file)))
        (agent-q-builtins-test--approval '(:denied "keep it") calls
          (let ((out (agent-q-builtins--read-buffer
                      (agent-q-builtins-test--a "buffer" (buffer-name buffer)))))
            (should (string-prefix-p "Refused: " out))
            (should-not (string-match-p "TOKEN" out))
            (should (equal "read_buffer" (car (car calls))))))
        ;; A buffer that visits no file is not guarded.
        (setq calls nil)
        (with-temp-buffer
          (insert "scratch text")
          (agent-q-builtins-test--approval '(:denied "no") calls
            (should (string-match-p "scratch text"
                                    (agent-q-builtins--read-buffer
                                     (agent-q-builtins-test--a "buffer" (buffer-name)))))
            (should-not calls)))))))

(ert-deftest agent-q-builtins-read-buffer-guards-dired ()
  (agent-q-builtins-test--with-dir dir
    (let ((ssh (expand-file-name ".ssh/" dir))
          (calls nil))
      (make-directory ssh)
      (agent-q-builtins-test--write (expand-file-name "id_rsa" ssh) "KEY\n")
      (let ((buffer (dired-noselect ssh)))
        (unwind-protect
            (agent-q-builtins-test--approval '(:denied "no") calls
              (let ((out (agent-q-builtins--read-buffer
                          (agent-q-builtins-test--a "buffer" (buffer-name buffer)))))
                (should (string-prefix-p "Refused: " out))
                ;; The listing (which names id_rsa) is not shown.
                (should-not (string-match-p "id_rsa" out))
                (should (= 1 (length calls)))))
          (kill-buffer buffer))))))

;; S3: an indirect buffer shows its base buffer's file.
(ert-deftest agent-q-builtins-indirect-buffer-is-guarded-as-its-base ()
  (agent-q-builtins-test--with-dir dir
    (let ((file (expand-file-name ".authinfo" dir))
          (calls nil))
      (agent-q-builtins-test--write file "machine x password hunter2\n")
      (let* ((base (find-file-noselect file))
             (clone (with-current-buffer base (clone-indirect-buffer "agent-q-auth-clone" nil))))
        (unwind-protect
            (agent-q-builtins-test--approval '(:denied "no") calls
              (should (null (buffer-file-name clone)))
              (let ((out (agent-q-builtins--read-buffer
                          (agent-q-builtins-test--a "buffer" (buffer-name clone)))))
                (should (string-prefix-p "Refused: " out))
                (should-not (string-match-p "hunter2" out)))
              (let ((out (agent-q-builtins--search-in-buffer
                          (agent-q-builtins-test--a "buffer" (buffer-name clone)
                                                    "pattern" "password"))))
                (should (string-prefix-p "Refused: " out))
                (should-not (string-match-p "hunter2" out)))
              (should (equal '("search_in_buffer" "read_buffer") (mapcar #'car calls))))
          (kill-buffer clone))))))

;;;; search_in_buffer

(ert-deftest agent-q-builtins-search-literal-and-regex ()
  (with-temp-buffer
    (insert "alpha beta\ngamma a.b\n  beta end\n")
    (let ((name (buffer-name)))
      (should (equal "Found 2 match(es) for 'beta':\n  Line 1, Column 6 (position 7): alpha beta\n  Line 3, Column 2 (position 24):   beta end"
                     (agent-q-builtins--search-in-buffer
                      (agent-q-builtins-test--a "pattern" "beta" "buffer" name))))
      ;; Literal: the dot is not a wildcard.
      (should (string-prefix-p "Found 1 match(es) for 'a.b':\n  Line 2, Column 6"
                               (agent-q-builtins--search-in-buffer
                                (agent-q-builtins-test--a "pattern" "a.b" "buffer" name))))
      (should (string-prefix-p "Found 2 match(es) for '^[a-z]+ '"
                               (agent-q-builtins--search-in-buffer
                                (agent-q-builtins-test--a "pattern" "^[a-z]+ " "buffer" name
                                                          "regex" t))))
      (should (string-prefix-p "Found 1 match(es) for 'beta':\n  Line 1,"
                               (agent-q-builtins--search-in-buffer
                                (agent-q-builtins-test--a "pattern" "beta" "buffer" name
                                                          "all_matches" nil))))
      ;; Case-sensitive.
      (should (string-prefix-p "No matches for 'BETA'"
                               (agent-q-builtins--search-in-buffer
                                (agent-q-builtins-test--a "pattern" "BETA" "buffer" name)))))))

(ert-deftest agent-q-builtins-search-empty-matches-terminate ()
  (with-temp-buffer
    (insert "a\nb\nc")
    (should (string-prefix-p "Found 3 match(es) for '^'"
                             (agent-q-builtins--search-in-buffer
                              (agent-q-builtins-test--a "pattern" "^" "buffer" (buffer-name)
                                                        "regex" t))))))

(ert-deftest agent-q-builtins-search-cap ()
  (with-temp-buffer
    (insert (make-string 50 ?x))
    (let ((agent-q-builtins-search-limit 5))
      (let ((out (agent-q-builtins--search-in-buffer
                  (agent-q-builtins-test--a "pattern" "x" "buffer" (buffer-name)))))
        (should (string-prefix-p "Found 50 match(es)" out))
        (should (string-match-p "\\[\\.\\.\\. 45 more matches not shown" out))))))

(ert-deftest agent-q-builtins-search-errors ()
  (with-temp-buffer
    (let ((name (buffer-name)))
      (should (string-prefix-p "Invalid regular expression '['"
                               (agent-q-builtins--search-in-buffer
                                (agent-q-builtins-test--a "pattern" "[" "buffer" name "regex" t))))
      (should (string-prefix-p "No pattern given"
                               (agent-q-builtins--search-in-buffer
                                (agent-q-builtins-test--a "pattern" "" "buffer" name))))))
  (should (string-prefix-p "Buffer no-such-buffer-zz not found."
                           (agent-q-builtins--search-in-buffer
                            (agent-q-builtins-test--a "pattern" "x" "buffer" "no-such-buffer-zz")))))

(ert-deftest agent-q-builtins-search-guards-visited-file ()
  (agent-q-builtins-test--with-dir dir
    (let ((file (expand-file-name "server.pem" dir))
          (calls nil))
      (agent-q-builtins-test--write file "-----BEGIN PRIVATE KEY-----\n")
      (let ((buffer (find-file-noselect file)))
        (agent-q-builtins-test--approval '(:denied "no keys") calls
          (let ((out (agent-q-builtins--search-in-buffer
                      (agent-q-builtins-test--a "pattern" "PRIVATE" "buffer" (buffer-name buffer)))))
            (should (string-prefix-p "Refused: " out))
            (should-not (string-match-p "BEGIN" out))
            (should (equal "search_in_buffer" (car (car calls))))))))))

;;;; write_file

(defun agent-q-builtins-test--leftover-temps (dir)
  "Return the temporary files write_file left in DIR."
  (directory-files dir nil "\\`\\.agent-q-write-"))

(ert-deftest agent-q-builtins-write-new-file-with-directories ()
  (agent-q-builtins-test--with-dir dir
    (let ((out (agent-q-builtins--write-file
                (agent-q-builtins-test--a "path" "new/sub/f.txt" "content" "héllo\nworld\n"))))
      (should (string-prefix-p
               (format "Wrote 12 characters (2 line(s), 13 bytes on disk) to %snew/sub/f.txt (created a new file; encoding utf-8-unix)." dir)
               out))
      (should (string-match-p "Created directory" out))
      (should (equal "héllo\nworld\n"
                     (agent-q-builtins-test--file-string (expand-file-name "new/sub/f.txt" dir))))
      (should (= (logand (default-file-modes) #o666)
                 (file-modes (expand-file-name "new/sub/f.txt" dir))))
      (should-not (agent-q-builtins-test--leftover-temps (expand-file-name "new/sub" dir))))))

(ert-deftest agent-q-builtins-write-replaces-keeps-modes-and-reverts-buffer ()
  (agent-q-builtins-test--with-dir dir
    (let ((file (expand-file-name "script.sh" dir)))
      (agent-q-builtins-test--write file "old\n")
      (set-file-modes file #o750)
      (let ((buffer (find-file-noselect file)))
        (let ((out (agent-q-builtins--write-file
                    (agent-q-builtins-test--a "path" file "content" "new content\n"))))
          (should (string-match-p "replaced the existing file" out))
          (should (string-match-p (format "Buffer %s, which visits the file, was reverted"
                                          (regexp-quote (buffer-name buffer)))
                                  out)))
        (should (equal "new content\n" (agent-q-builtins-test--file-string file)))
        (should (= #o750 (file-modes file)))
        (should (equal "new content\n" (with-current-buffer buffer (buffer-string))))
        (should-not (buffer-modified-p buffer))
        (should-not (agent-q-builtins-test--leftover-temps dir))))))

(ert-deftest agent-q-builtins-write-refuses-unsaved-buffer ()
  (agent-q-builtins-test--with-dir dir
    (let ((file (expand-file-name "busy.txt" dir)))
      (agent-q-builtins-test--write file "disk\n")
      (with-current-buffer (find-file-noselect file)
        (insert "user edit ")
        (let ((out (agent-q-builtins--write-file
                    (agent-q-builtins-test--a "path" file "content" "model\n"))))
          (should (string-prefix-p "Refused: buffer busy.txt visits" out))
          (should (string-match-p "Nothing was written" out)))
        (should (equal "disk\n" (agent-q-builtins-test--file-string file)))
        (should (string-prefix-p "user edit " (buffer-string)))))))

(ert-deftest agent-q-builtins-write-through-symlink-keeps-link ()
  (agent-q-builtins-test--with-dir dir
    (let ((target (expand-file-name "real.txt" dir))
          (link (expand-file-name "link.txt" dir)))
      (agent-q-builtins-test--write target "old\n")
      (make-symbolic-link target link)
      (should (string-match-p (regexp-quote target)
                              (agent-q-builtins--write-file
                               (agent-q-builtins-test--a "path" link "content" "via link\n"))))
      (should (file-symlink-p link))
      (should (equal "via link\n" (agent-q-builtins-test--file-string target))))))

(ert-deftest agent-q-builtins-write-keeps-existing-encoding ()
  (agent-q-builtins-test--with-dir dir
    (let ((file (expand-file-name "latin.txt" dir)))
      (let ((coding-system-for-write 'iso-latin-1-unix))
        (with-temp-file file (insert "caf\351\n")))
      (with-current-buffer (find-file-noselect file)
        (set-buffer-file-coding-system 'iso-latin-1-unix)
        (set-buffer-modified-p nil))
      (should (string-match-p "encoding iso-latin-1-unix"
                              (agent-q-builtins--write-file
                               (agent-q-builtins-test--a "path" file "content" "d\351j\340\n"))))
      (should (= 5 (file-attribute-size (file-attributes file))))
      ;; Text latin-1 cannot encode is written as utf-8, and the result says so.
      (should (string-match-p "cannot encode, so it was written as utf-8"
                              (agent-q-builtins--write-file
                               (agent-q-builtins-test--a "path" file "content" "λ\n")))))))

(ert-deftest agent-q-builtins-write-errors ()
  (agent-q-builtins-test--with-dir dir
    (make-directory (expand-file-name "d" dir))
    (should (string-match-p "is a directory; nothing was written"
                            (agent-q-builtins--write-file
                             (agent-q-builtins-test--a "path" "d" "content" "x"))))
    (should (string-prefix-p "Error: no path given"
                             (agent-q-builtins--write-file
                              (agent-q-builtins-test--a "path" "" "content" "x"))))
    (should (string-prefix-p "Error: content must be a string"
                             (agent-q-builtins--write-file
                              (agent-q-builtins-test--a "path" "f" "content" 3))))))

(ert-deftest agent-q-builtins-write-failure-is-reported ()
  (agent-q-builtins-test--with-dir dir
    ;; A regular file where a directory should be: fails even for root.
    (agent-q-builtins-test--write (expand-file-name "blocker" dir) "keep\n")
    (let ((out (agent-q-builtins--write-file
                (agent-q-builtins-test--a "path" "blocker/f.txt" "content" "lost\n"))))
      (should (string-prefix-p (format "Error: writing %sblocker/f.txt failed: " dir) out))
      (should (string-match-p "No file was created" out)))
    (should (equal "keep\n" (agent-q-builtins-test--file-string
                             (expand-file-name "blocker" dir))))
    ;; A rename that fails leaves the old file and no temporary file.
    (let ((file (expand-file-name "f.txt" dir)))
      (agent-q-builtins-test--write file "old\n")
      (cl-letf (((symbol-function 'rename-file)
                 (lambda (&rest _) (signal 'file-error '("Renaming" "disk on fire")))))
        (let ((out (agent-q-builtins--write-file
                    (agent-q-builtins-test--a "path" file "content" "new\n"))))
          (should (string-match-p "disk on fire" out))
          (should (string-match-p "The file was left unchanged" out))))
      (should (equal "old\n" (agent-q-builtins-test--file-string file)))
      (should-not (agent-q-builtins-test--leftover-temps dir)))))

;;;; Delegating handlers

(defun agent-q-builtins-test--propose (args)
  "Run the propose_file_edit handler on ARGS; return (TEXT STATUS)."
  (let ((answer nil))
    (agent-q-builtins--propose-file-edit
     (lambda (text &optional status) (setq answer (list text status)))
     args)
    answer))

(ert-deftest agent-q-builtins-propose-file-edit-delegates ()
  (require 'agent-q-tools nil t)
  (let ((seen nil)
        (agent-q-allowed-directories '("/tmp/")))
    (cl-letf (((symbol-function 'agent-q-tools-review-edit-async)
               (lambda (path original modified description callback &optional _client)
                 (setq seen (list path original modified description))
                 (funcall callback "Applied 1 of 1 hunks" :success))))
      (let ((default-directory "/tmp/"))
        (should (equal '("Applied 1 of 1 hunks" :success)
                       (agent-q-builtins-test--propose
                        (agent-q-builtins-test--a "path" "x.el" "original" "a"
                                                  "modified" "b" "description" "why")))))
      (should (equal '("/tmp/x.el" "a" "b" "why") seen))
      (should (equal '("Error: no path given." :failure)
                     (agent-q-builtins-test--propose
                      (agent-q-builtins-test--a "path" "" "original" "a"
                                                "modified" "b" "description" "")))))))

;; S1: propose_file_edit reads the file, so it passes the read guard first.
(ert-deftest agent-q-builtins-propose-file-edit-guards-the-file ()
  (require 'agent-q-tools nil t)
  (agent-q-builtins-test--with-dir dir
    (let ((file (expand-file-name ".env" dir))
          (outside (make-temp-file "agent-q-outside" nil ".txt" "far\n"))
          (calls nil) (reviewed nil))
      (agent-q-builtins-test--write file "TOKEN=hunter2\n")
      (unwind-protect
          (cl-letf (((symbol-function 'agent-q-tools-review-edit-async)
                     (lambda (path original modified description callback &optional _client)
                       (push (list path original modified description) reviewed)
                       (funcall callback "reviewed" :success))))
            (agent-q-builtins-test--approval '(:denied "keep out") calls
              (dolist (path (list file outside))
                (pcase-let ((`(,out ,status) (agent-q-builtins-test--propose
                                              (agent-q-builtins-test--a "path" path "original" "X"
                                                                        "modified" "Y" "description" "d"))))
                  (should (eq status :denied))
                  (should (string-prefix-p "Refused: propose_file_edit must read the file" out))
                  (should (string-match-p "keep out" out))
                  (should (string-match-p "No change made to " out))
                  (should-not (string-match-p "hunter2\\|far" out))))
              (should-not reviewed)
              (should (equal (list "read_file" (list :path outside)) (butlast (car calls))))
              (should (= 2 (length calls))))
            (agent-q-builtins-test--approval (list :approved (list :path file)) calls
              (should (equal '("reviewed" :success)
                             (agent-q-builtins-test--propose
                              (agent-q-builtins-test--a "path" file "original" "X"
                                                        "modified" "Y"
                                                        "description" "d"))))
              (should (equal (list file "X" "Y" "d") (car reviewed)))))
        (delete-file outside)))))

(ert-deftest agent-q-builtins-xref-tools-delegate ()
  (require 'agent-q-xref nil t)
  (let ((seen nil))
    (cl-letf (((symbol-function 'agent-q-xref-who-calls-handler)
               (lambda (args) (push (cons 'calls (gethash "function" args)) seen) "C"))
              ((symbol-function 'agent-q-xref-who-references-handler)
               (lambda (args) (push (cons 'refs (gethash "variable" args)) seen) "R")))
      (should (equal "C" (agent-q-builtins--who-calls
                          (agent-q-builtins-test--a "function" "car"))))
      (should (equal "R" (agent-q-builtins--who-references
                          (agent-q-builtins-test--a "variable" "fill-column"))))
      (should (equal '((refs . "fill-column") (calls . "car")) seen)))))

;;;; The tool table (no core needed)

(ert-deftest agent-q-builtins-table-shape ()
  (should (= 18 (length agent-q-builtin-tools)))
  (should (= 18 (length (delete-dups (mapcar #'car agent-q-builtin-tools)))))
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
    (should (= 18 (agent-q-register-builtin-tools registry)))
    registry))

(defun agent-q-builtins-test--tools (registry)
  "Return the built-in tool structs registered in REGISTRY."
  (mapcar (lambda (entry) (agent-q-get-tool (car entry) registry))
          agent-q-builtin-tools))

(ert-deftest agent-q-builtins-core-registers-18-idempotently ()
  :tags '(needs-core)
  (let ((registry (agent-q-builtins-test--registry)))
    (should (= 18 (agent-q-register-builtin-tools registry)))
    (should (= 18 (length (delq nil (agent-q-builtins-test--tools registry)))))
    (should (= 18 (length (agent-q-get-tools :registry registry))))))

(ert-deftest agent-q-builtins-core-category-and-safety-counts ()
  :tags '(needs-core)
  (let* ((tools (agent-q-builtins-test--tools (agent-q-builtins-test--registry)))
         (primary (lambda (c) (cl-count-if (lambda (tool) (eq c (car (agent-q-tool-categories tool))))
                                           tools)))
         (member (lambda (c) (cl-count-if (lambda (tool) (memq c (agent-q-tool-categories tool)))
                                          tools)))
         (safety (lambda (s) (cl-count s tools :key #'agent-q-tool-safety-level))))
    ;; Seed 000's table: the four primary categories partition the 18
    ;; tools; xref, clos and packages are secondary categories.
    (should (= 9 (funcall primary :introspection)))
    (should (= 4 (funcall primary :execution)))
    (should (= 4 (funcall primary :buffer)))
    (should (= 1 (funcall primary :diff)))
    (should (= 9 (funcall member :introspection)))
    (should (= 4 (funcall member :execution)))
    (should (= 2 (funcall member :xref)))
    (should (= 2 (funcall member :clos)))
    (should (= 1 (funcall member :packages)))
    (should (= 1 (funcall member :diff)))
    (should (= 13 (funcall safety :safe)))
    (should (= 3 (funcall safety :cautious)))
    (should (= 2 (funcall safety :dangerous)))))

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
    (should (= 13 (length (agent-q-get-tools :registry registry :max-safety-level :safe))))))

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

(ert-deftest agent-q-builtins-core-read-guard-uses-approval-function ()
  :tags '(needs-core)
  (let* ((registry (agent-q-builtins-test--registry))
         (outside (make-temp-file "agent-q-outside" nil ".txt" "do not show\n"))
         (asked nil)
         (agent-q-allowed-directories (list (file-name-as-directory
                                             (file-truename (make-temp-file "agent-q-in" t)))))
         (agent-q-approval-function (lambda (tool args) (push (cons tool args) asked)
                                      '(:denied "private"))))
    (unwind-protect
        (let ((result (car (agent-q-execute-tool-calls
                            `((:id "r" :name "read_file" :arguments (:path ,outside)))
                            registry))))
          (should (string-prefix-p "Refused: " (plist-get result :content)))
          (should-not (string-match-p "do not show" (plist-get result :content)))
          (should (equal "read_file" (car (car asked)))))
      (delete-file outside)
      (delete-directory (car agent-q-allowed-directories) t))))

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
