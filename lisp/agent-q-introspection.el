;;; agent-q-introspection.el --- agent-q's introspection tools  -*- lexical-binding: t -*-

;; Copyright (C) 2026 The agent-q authors

;; Author: The agent-q authors
;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1"))
;; Keywords: tools, lisp, help
;; URL: https://example.invalid/agent-q

;; This file is not part of GNU Emacs.

;; This program is free software; you can redistribute it and/or modify
;; it under the terms of the GNU General Public License as published by
;; the Free Software Foundation, either version 3 of the License, or
;; (at your option) any later version.

;;; Commentary:

;; The handlers of describe_symbol, apropos_search, function_arglist,
;; list_package_symbols, class_slots, class_hierarchy and
;; macroexpand_form, and of who_calls and who_references, which
;; delegate to agent-q-xref.el.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'seq)
(require 'help-fns)
(require 'agent-q-support)

(declare-function agent-q-xref-who-calls-handler "agent-q-xref" (args))
(declare-function agent-q-xref-who-references-handler "agent-q-xref" (args))
(declare-function eieio--class-precedence-list "eieio-core" (class))
(declare-function eieio--class-p "eieio-core" (object))
(declare-function eieio--class-initarg-tuples "eieio-core" (class))
(declare-function eieio--class-class-slots "eieio-core" (class))
(declare-function cl--class-name "cl-preloaded" (class))
(declare-function cl--class-parents "cl-preloaded" (class))
(declare-function cl--class-slots "cl-preloaded" (class))
(declare-function cl--class-p "cl-preloaded" (object))

;;;; Options

(defcustom agent-q-builtins-apropos-limit 100
  "Maximum number of symbols listed by apropos_search."
  :type 'natnum
  :group 'agent-q)

(defcustom agent-q-builtins-package-symbols-limit 500
  "Maximum number of symbols listed by list_package_symbols."
  :type 'natnum
  :group 'agent-q)


;;;; Symbols

(defun agent-q-builtins--symbol-kinds (sym)
  "Return the list of kinds (strings) SYM has in the running Emacs."
  (let ((kinds nil))
    (when (fboundp sym)
      (let ((def (symbol-function sym)))
        (push (cond ((special-form-p sym) "special form")
                    ((macrop sym) "macro")
                    ((commandp sym) "command")
                    ((autoloadp def) "function, autoloaded")
                    (t "function"))
              kinds)
        (when (and (symbolp def) def)
          (push (format "alias of %s" def) kinds))))
    (when (or (boundp sym) (get sym 'variable-documentation))
      (push (if (custom-variable-p sym) "user option" "variable") kinds))
    (when (facep sym) (push "face" kinds))
    (when (featurep sym) (push "feature" kinds))
    (when (get sym 'cl--class) (push "type" kinds))
    (nreverse kinds)))

(defun agent-q-builtins--close-matches (name &optional predicate)
  "Return up to 10 interned symbol names close to NAME.
PREDICATE, when non-nil, filters the candidate symbols.  Symbols
whose name contains NAME come first, then those within edit distance 2."
  (let ((containing nil)
        (near nil)
        (len (length name)))
    (mapatoms
     (lambda (sym)
       (let ((candidate (symbol-name sym)))
         (when (and (not (string= candidate name))
                    (agent-q-builtins--symbol-kinds sym)
                    (or (null predicate) (funcall predicate sym)))
           (cond ((and (> len 2) (string-search name candidate))
                  (push candidate containing))
                 ((and (<= (abs (- (length candidate) len)) 2)
                       (<= (string-distance name candidate) 2))
                  (push candidate near)))))))
    (let ((sorted (append (sort near #'string<)
                          (sort containing
                                (lambda (a b)
                                  (or (< (length a) (length b))
                                      (and (= (length a) (length b))
                                           (string< a b))))))))
      (seq-take sorted 10))))

(defun agent-q-builtins--did-you-mean (name &optional predicate)
  "Return a \"Did you mean\" sentence for NAME, or an empty string.
PREDICATE is passed to `agent-q-builtins--close-matches'."
  (let ((matches (agent-q-builtins--close-matches name predicate)))
    (if matches
        (format "\nDid you mean: %s?" (string-join matches ", "))
      "")))


;;;; Introspection: describe_symbol

(defun agent-q-builtins--signature (sym)
  "Return SYM's calling signature, as help would show it, or nil.
Return a cons (SHOWN . FULL): SHOWN is the advertised calling
convention when there is one, else the documented usage, else the
argument list; FULL is the real argument list when it differs."
  (when (fboundp sym)
    (let* ((def (condition-case nil (indirect-function sym) (error nil)))
           (advertised (and def (gethash def advertised-signature-table t)))
           (doc (condition-case nil (documentation sym t) (error nil)))
           (usage (and doc (car (help-split-fundoc doc sym))))
           (arglist (condition-case nil (help-function-arglist sym t)
                      (error nil)))
           (format-args
            (lambda (args)
              (if (listp args)
                  (format "%S" (cons sym (mapcar
                                          (lambda (a)
                                            (if (and (symbolp a)
                                                     (not (memq a '(&optional &rest))))
                                                (intern (upcase (symbol-name a)))
                                              a))
                                          args)))
                (format "%s" args))))
           (full (cond (usage usage)
                       (arglist (funcall format-args arglist)))))
      (cond ((not (eq advertised t))
             (cons (funcall format-args advertised) full))
            (full (cons full nil))))))

(defun agent-q-builtins--definition-file (sym type)
  "Return where SYM's definition of TYPE lives, as a string, or nil.
TYPE is nil for functions, `defvar' or `defface'."
  (let ((file (symbol-file sym type)))
    (cond
     (file
      (let* ((base (file-name-sans-extension file))
             (source (seq-find #'file-exists-p
                               (list (concat base ".el")
                                     (concat base ".el.gz")))))
        (or source file)))
     ((and (null type) (subrp (indirect-function sym)))
      "C source code (built-in primitive)"))))

(defun agent-q-builtins--describe-symbol (args)
  "Describe the symbol named in ARGS (\"symbol\").
Return what it is, its signature, documentation, current value and
where it is defined, or \"Symbol X not found\" with close matches."
  (let* ((name (string-trim (or (agent-q-builtins--arg args "symbol") "")))
         (sym (and (not (string-empty-p name)) (intern-soft name))))
    (cond
     ((string-empty-p name) "No symbol given: pass the name of a symbol.")
     ((or (null sym)
          (and (null (agent-q-builtins--symbol-kinds sym))
               (null (symbol-plist sym))))
      (format "Symbol %s not found%s" name
              (agent-q-builtins--did-you-mean name)))
     (t
      (let ((kinds (agent-q-builtins--symbol-kinds sym))
            (out nil))
        (push (format "Symbol: %s" sym) out)
        (push (format "Kind: %s" (if kinds (string-join kinds ", ")
                                   "interned symbol with no function, variable, face or feature"))
              out)
        (when (fboundp sym)
          (let ((sig (agent-q-builtins--signature sym))
                (file (agent-q-builtins--definition-file sym nil))
                (doc (condition-case err (documentation sym)
                       (error (format "[documentation unavailable: %s]"
                                      (agent-q--error-message err))))))
            (when sig
              (push (format "Signature: %s" (car sig)) out)
              (when (cdr sig)
                (push (format "Full argument list: %s" (cdr sig)) out)))
            (when file (push (format "Function defined in: %s" file) out))
            (push (format "Function documentation:\n%s"
                          (agent-q-builtins--truncate
                           ;; help-split-fundoc returns (USAGE . DOC).
                           (or (and doc (or (cdr (help-split-fundoc doc sym)) doc))
                               "Not documented.")
                           agent-q-builtins-max-value-chars))
                  out)))
        (when (or (boundp sym) (get sym 'variable-documentation))
          (let ((doc (condition-case nil
                         (documentation-property sym 'variable-documentation)
                       (error nil)))
                (file (agent-q-builtins--definition-file sym 'defvar)))
            (push (if (boundp sym)
                      (format "Value: %s%s"
                              (agent-q-builtins--print (symbol-value sym))
                              (if (local-variable-if-set-p sym)
                                  "\n(automatically buffer-local when set)"
                                ""))
                    "Value: void (the variable is declared but has no value)")
                  out)
            (when file (push (format "Variable defined in: %s" file) out))
            (push (format "Variable documentation:\n%s"
                          (agent-q-builtins--truncate
                           (if (stringp doc) doc "Not documented.")
                           agent-q-builtins-max-value-chars))
                  out)))
        (when (facep sym)
          (push (format "Face documentation:\n%s"
                        (or (face-documentation sym) "Not documented."))
                out)
          (let ((file (agent-q-builtins--definition-file sym 'defface)))
            (when file (push (format "Face defined in: %s" file) out))))
        (when (featurep sym)
          (let ((file (locate-library (symbol-name sym))))
            (push (format "Feature: provided (loaded)%s"
                          (if file (format " from %s" file) ""))
                  out)))
        (when (get sym 'cl--class)
          (push (format "Type: %s (see class_slots and class_hierarchy)"
                        (type-of (get sym 'cl--class)))
                out))
        (string-join (nreverse out) "\n"))))))

;;;; Introspection: apropos_search

(defun agent-q-builtins--kind-matches-p (sym type)
  "Return non-nil when SYM is of TYPE (a string from apropos_search)."
  (pcase type
    ("function" (fboundp sym))
    ("command" (commandp sym))
    ("variable" (or (boundp sym) (get sym 'variable-documentation)))
    ("face" (facep sym))
    (_ (agent-q-builtins--symbol-kinds sym))))

(defun agent-q-builtins--apropos-search (args)
  "Return the symbols with ARGS's \"pattern\" in their name.
The optional \"type\" restricts them to functions, commands,
variables or faces."
  (let* ((pattern (or (agent-q-builtins--arg args "pattern") ""))
         (type (or (agent-q-builtins--arg args "type") "any"))
         (case-fold-search t)
         (found nil))
    (cond
     ((agent-q-builtins--blank-p pattern)
      "No pattern given: pass part of a symbol name, e.g. \"buffer-list\".")
     ((not (member type '("any" "function" "command" "variable" "face")))
      (format "Unknown type '%s': use any, function, command, variable or face."
              type))
     (t
      (mapatoms
       (lambda (sym)
         (when (and (string-search (downcase pattern)
                                   (downcase (symbol-name sym)))
                    (agent-q-builtins--kind-matches-p sym type))
           (push sym found))))
      (setq found (sort found (lambda (a b)
                                (let ((la (length (symbol-name a)))
                                      (lb (length (symbol-name b))))
                                  (or (< la lb)
                                      (and (= la lb) (string< a b)))))))
      (let* ((total (length found))
             (shown (seq-take found agent-q-builtins-apropos-limit)))
        (if (zerop total)
            (format "No symbols matching '%s'%s." pattern
                    (if (equal type "any") "" (format " of type %s" type)))
          (concat
           (format "Found %d symbol(s) matching '%s':\n" total pattern)
           (mapconcat (lambda (sym)
                        (format "  %s [%s]" sym
                                (string-join (agent-q-builtins--symbol-kinds sym)
                                             ", ")))
                      shown "\n")
           (if (> total (length shown))
               (format "\n[... %d more not shown: use a longer pattern or a type ...]"
                       (- total (length shown)))
             ""))))))))

;;;; Introspection: function_arglist

(defun agent-q-builtins--function-arglist (args)
  "Return the argument list of the function named in ARGS (\"function\")."
  (let* ((name (string-trim (or (agent-q-builtins--arg args "function") "")))
         (sym (and (not (string-empty-p name)) (intern-soft name))))
    (cond
     ((string-empty-p name) "No function given: pass the name of a function.")
     ((null sym)
      (format "Function %s not found%s" name
              (agent-q-builtins--did-you-mean name #'fboundp)))
     ((not (fboundp sym))
      (let ((kinds (agent-q-builtins--symbol-kinds sym)))
        (format "%s is not a function%s%s" name
                (if kinds (format " (it is a %s)" (string-join kinds ", ")) "")
                (agent-q-builtins--did-you-mean name #'fboundp))))
     (t
      (let ((sig (agent-q-builtins--signature sym)))
        (cond
         ((null sig) (format "The argument list of %s is not available." name))
         ((cdr sig)
          (format "%s\n(advertised calling convention; the full argument list is %s)"
                  (car sig) (cdr sig)))
         (t (car sig))))))))

;;;; Introspection: list_package_symbols

(defun agent-q-builtins--library-entries (package)
  "Return (FILE . ENTRIES) from `load-history' for PACKAGE, or nil.
PACKAGE matches a feature the file provides or the file's base name."
  (let ((feature (intern-soft package)))
    (or (and feature
             (seq-find (lambda (entry)
                         (member (cons 'provide feature) (cdr entry)))
                       load-history))
        (seq-find (lambda (entry)
                    (and (stringp (car entry))
                         (equal (file-name-sans-extension
                                 (file-name-nondirectory
                                  (string-remove-suffix ".gz" (car entry))))
                                package)))
                  load-history))))

(defun agent-q-builtins--list-package-symbols (args)
  "Return the symbols defined by the library or feature named in ARGS.
ARGS holds \"package\" and optionally \"include_internal\"."
  (let* ((package (string-trim (or (agent-q-builtins--arg args "package") "")))
         (internal (agent-q-builtins--arg args "include_internal"))
         (entry (and (not (string-empty-p package))
                     (agent-q-builtins--library-entries package))))
    (cond
     ((string-empty-p package)
      "No package given: pass a feature or library name such as \"subr-x\".")
     ((null entry)
      (format "Package %s not found: no loaded library provides it or is named so. Load it first, e.g. with eval_form (require '%s).%s"
              package package
              (let ((close (seq-take
                            (seq-filter (lambda (f)
                                          (string-search package (symbol-name f)))
                                        features)
                            10)))
                (if close
                    (format "\nLoaded features with similar names: %s"
                            (mapconcat #'symbol-name close ", "))
                  ""))))
     (t
      (let ((items nil) (hidden 0))
        (dolist (item (cdr entry))
          (let ((pair
                 (pcase item
                   ((pred symbolp)
                    (cons item (if (custom-variable-p item) "user option" "variable")))
                   (`(defun . ,f)
                    (cons f (cond ((macrop f) "macro")
                                  ((commandp f) "command")
                                  (t "function"))))
                   (`(defface . ,f) (cons f "face"))
                   (`(define-type . ,f) (cons f "type"))
                   (`(cl-defmethod ,f . ,_) (cons f "method"))
                   (_ nil))))
            (when (and pair (symbolp (car pair)))
              (if (and (not internal)
                       (string-search "--" (symbol-name (car pair))))
                  (cl-incf hidden)
                (push pair items)))))
        (setq items (sort (cl-remove-duplicates items :test #'equal)
                          (lambda (a b) (string< (car a) (car b)))))
        (let* ((total (length items))
               (shown (seq-take items agent-q-builtins-package-symbols-limit)))
          (concat
           (format "Package %s (%d symbols):\n" package total)
           (format "Defined in: %s\n" (car entry))
           (mapconcat (lambda (p) (format "  %s [%s]" (car p) (cdr p)))
                      shown "\n")
           (if (> total (length shown))
               (format "\n[... %d more not shown ...]" (- total (length shown)))
             "")
           (if (> hidden 0)
               (format "\n(%d internal definitions (with \"--\" in their name) hidden; pass include_internal true to list them.)"
                       hidden)
             ""))))))))

;;;; Introspection: class_slots and class_hierarchy

(defun agent-q-builtins--find-class (name)
  "Return the class object (EIEIO class or struct type) named NAME, or nil."
  (let ((sym (intern-soft name)))
    (when sym
      (let ((class (get sym 'cl--class)))
        (and class (cl--class-p class) class)))))

(defun agent-q-builtins--eieio-class-p (class)
  "Return non-nil when CLASS is an EIEIO class object."
  (and (fboundp 'eieio--class-p) (eieio--class-p class)))

(defun agent-q-builtins--class-kind (class)
  "Return a short description of what kind of class CLASS is."
  (cond ((agent-q-builtins--eieio-class-p class) "EIEIO class")
        ((eq (type-of class) 'cl-structure-class) "cl-defstruct type")
        (t (format "%s" (type-of class)))))

(defun agent-q-builtins--class-not-found (name)
  "Return the result text for an unknown class NAME."
  (format "No class or struct type named %s. class_slots and class_hierarchy work on EIEIO classes (defclass) and cl-defstruct types; the library defining it may not be loaded.%s"
          name
          (agent-q-builtins--did-you-mean
           name (lambda (s) (get s 'cl--class)))))

(defun agent-q-builtins--class-slots (args)
  "List the slots of the class or struct type named in ARGS (\"class\")."
  (let* ((name (string-trim (or (agent-q-builtins--arg args "class") "")))
         (class (and (not (string-empty-p name))
                     (agent-q-builtins--find-class name))))
    (cond
     ((string-empty-p name) "No class given: pass the name of a class.")
     ((null class) (agent-q-builtins--class-not-found name))
     (t
      (let* ((eieio (agent-q-builtins--eieio-class-p class))
             (initargs (and eieio (eieio--class-initarg-tuples class)))
             (slots (append (cl--class-slots class) nil))
             (class-slots (and eieio (append (eieio--class-class-slots class) nil)))
             (describe
              (lambda (slot allocation)
                (let* ((sname (cl--slot-descriptor-name slot))
                       (initarg (if eieio
                                    (car (rassq sname initargs))
                                  (and (not (eq sname 'cl-tag-slot))
                                       (intern (format ":%s" sname)))))
                       (props (cl--slot-descriptor-props slot))
                       (doc (alist-get :documentation props)))
                  (concat
                   (format "  %s" sname)
                   (if initarg (format "\n    initarg: %s" initarg) "")
                   (format "\n    type: %s"
                           (agent-q-builtins--print (cl--slot-descriptor-type slot)))
                   (format "\n    initform: %s"
                           (agent-q-builtins--print (cl--slot-descriptor-initform slot)))
                   (if allocation (format "\n    allocation: %s" allocation) "")
                   (if (alist-get :read-only props) "\n    read-only: t" "")
                   (if (stringp doc) (format "\n    documentation: %s" doc) ""))))))
        (setq slots (seq-remove (lambda (s)
                                  (eq (cl--slot-descriptor-name s) 'cl-tag-slot))
                                slots))
        (concat
         (format "%s %s has %d slot(s):\n"
                 (agent-q-builtins--class-kind class) name
                 (+ (length slots) (length class-slots)))
         (mapconcat (lambda (s) (funcall describe s nil)) slots "\n")
         (if class-slots
             (concat "\n" (mapconcat (lambda (s) (funcall describe s :class))
                                     class-slots "\n"))
           "")
         (if (and (null slots) (null class-slots)) "  (no slots)" "")
         (if eieio ""
           "\n(cl-defstruct: the default constructor takes the slot names as keyword arguments.)")))))))

(defun agent-q-builtins--precedence-list (class)
  "Return the names of CLASS and its ancestors, in precedence order."
  (if (agent-q-builtins--eieio-class-p class)
      (mapcar #'cl--class-name (eieio--class-precedence-list class))
    (let ((seen nil) (queue (list class)))
      (while queue
        (let ((c (pop queue)))
          (unless (memq (cl--class-name c) seen)
            (push (cl--class-name c) seen)
            (setq queue (append queue (cl--class-parents c))))))
      (nreverse seen))))

(defun agent-q-builtins--class-hierarchy (args)
  "Show the parents and direct children of the class named in ARGS."
  (let* ((name (string-trim (or (agent-q-builtins--arg args "class") "")))
         (class (and (not (string-empty-p name))
                     (agent-q-builtins--find-class name))))
    (cond
     ((string-empty-p name) "No class given: pass the name of a class.")
     ((null class) (agent-q-builtins--class-not-found name))
     (t
      (let ((sym (cl--class-name class))
            (children nil))
        (mapatoms
         (lambda (s)
           (let ((c (get s 'cl--class)))
             (when (and c (cl--class-p c)
                        (memq class (cl--class-parents c)))
               (push s children)))))
        (setq children (sort children #'string<))
        (concat
         (format "%s %s\n" (agent-q-builtins--class-kind class) sym)
         "Class Precedence List:\n"
         (mapconcat (lambda (n) (format "  %s" n))
                    (agent-q-builtins--precedence-list class) "\n")
         "\nDirect Superclasses: "
         (let ((parents (mapcar #'cl--class-name (cl--class-parents class))))
           (if parents (mapconcat #'symbol-name parents ", ") "none"))
         "\nDirect Subclasses:"
         (if children
             (concat "\n" (mapconcat (lambda (n) (format "  %s" n)) children "\n"))
           " none")))))))

;;;; Introspection: macroexpand_form

(defun agent-q-builtins--macroexpand-form (args)
  "Macroexpand the form in ARGS (\"form\"): one step, or fully when \"full\"."
  (let* ((full (agent-q-builtins--arg args "full"))
         (read (agent-q-builtins--read-one-form (agent-q-builtins--arg args "form"))))
    (if (eq (car read) :error)
        (format "Error: %s" (cadr read))
      (let ((form (cadr read)))
        (condition-case err
            (let* ((expansion (if full (macroexpand-all form) (macroexpand-1 form)))
                   (text (let* ((print-escape-newlines t)
                                (limit (* 4 agent-q-builtins-max-value-chars))
                                ;; Measured first: an expansion sharing its parts can print
                                ;; to exponentially many characters.
                                (printed (agent-q--print-bounded expansion limit)))
                           (if (eq (cdr printed) t)
                               (string-trim-right (let ((print-circle nil)) (pp-to-string expansion)))
                             (format "%s\n[... more not shown: the expansion prints to more than %d characters ...]"
                                     (car printed) limit)))))
              (if (equal expansion form)
                  (format "No expansion: the form is not a macro call%s, so it expands to itself:\n%s"
                          (if full " and contains none" "")
                          text)
                (format "Expansion (%s):\n%s"
                        (if full "macroexpand-all" "one step, macroexpand-1")
                        text)))
          (error (format "Error while expanding: %s" (agent-q--error-message err))))))))

;;;; Delegating handlers

(defun agent-q-builtins--who-calls (args)
  "Return the callers of the function named in ARGS, from agent-q-xref.el."
  (require 'agent-q-xref nil t)
  (if (fboundp 'agent-q-xref-who-calls-handler)
      (agent-q-xref-who-calls-handler args)
    "Error: who_calls is unavailable (agent-q-xref is not installed)."))

(defun agent-q-builtins--who-references (args)
  "Return the result of who_references for ARGS, from agent-q-xref.el."
  (require 'agent-q-xref nil t)
  (if (fboundp 'agent-q-xref-who-references-handler)
      (agent-q-xref-who-references-handler args)
    "Error: who_references is unavailable (agent-q-xref is not installed)."))


(provide 'agent-q-introspection)

;;; agent-q-introspection.el ends here
