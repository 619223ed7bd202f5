;;; agent-q-builtins.el --- The 18 built-in tools of agent-q  -*- lexical-binding: t -*-

;; Author: agent-q contributors
;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1"))
;; Keywords: tools, lisp
;; URL: https://github.com/agent-q/agent-q

;; This file is not part of GNU Emacs.

;;; Commentary:

;; The built-in toolset of agent-q, ported from Agent-Q's Common Lisp
;; tools so that an LLM can introspect and work in the running Emacs:
;;
;;   introspection  describe_symbol, apropos_search, function_arglist,
;;                  who_calls, who_references, list_package_symbols,
;;                  class_slots, class_hierarchy, macroexpand_form
;;   execution      eval_form, compile_form, get_last_error,
;;                  get_repl_history
;;   buffer         read_file, read_buffer, search_in_buffer, write_file
;;   diff           propose_file_edit
;;
;; Every tool has one handler function here, `agent-q-builtins--NAME'
;; (who_calls and who_references delegate to agent-q-xref.el,
;; propose_file_edit to the review in agent-q-tools.el).  A handler
;; takes the arguments hash table the executor builds and returns the
;; string sent to the model.  Expected failures (an unknown symbol, a
;; missing file, an evaluation error) are result strings, not signals.
;;
;; `agent-q-register-builtin-tools' registers the tools with
;; `agent-q-define-tool' and `agent-q-register-tool'.  It uses those
;; functions rather than a macro so this file byte-compiles without
;; agent-q.el, which requires this file (a require in the other
;; direction would be a cycle).
;;
;; Safe read tools must not become a way around approval: read_file,
;; read_buffer and search_in_buffer resolve the file they are given
;; (~, .., symlinks) and ask the user, through
;; `agent-q-request-approval', before reading a file outside
;; `agent-q-allowed-directories' or one matching
;; `agent-q-sensitive-file-patterns'.  Nothing is read before the
;; user approved.
;;
;; write_file refuses to overwrite a file whose visiting buffer has
;; unsaved changes (the user's edits would be lost either way: by
;; reverting the buffer, or by the next save of the buffer); otherwise
;; it writes a temporary file in the same directory, renames it over
;; the target and reverts the visiting buffer.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'help-fns)
(require 'project)

(declare-function agent-q-define-tool "agent-q"
                  (name description parameters &rest keys))
(declare-function agent-q-register-tool "agent-q" (tool &optional registry))
(declare-function agent-q-request-approval "agent-q"
                  (tool-name args-plist reason))
(declare-function agent-q-xref-who-calls-handler "agent-q-xref" (args))
(declare-function agent-q-xref-who-references-handler "agent-q-xref" (args))
(declare-function agent-q--core-search-buffer "agent-q-core"
                  (pattern regexp case-fold max-listed max-counted time-limit))
(declare-function agent-q-tools-review-edit "agent-q-tools"
                  (path original modified description))
(declare-function eieio--class-precedence-list "eieio-core" (class))
(declare-function eieio--class-p "eieio-core" (object))
(declare-function eieio--class-initarg-tuples "eieio-core" (class))
(declare-function eieio--class-class-slots "eieio-core" (class))
(declare-function cl--class-name "cl-preloaded" (class))
(declare-function cl--class-parents "cl-preloaded" (class))
(declare-function cl--class-slots "cl-preloaded" (class))
(declare-function cl--class-p "cl-preloaded" (object))

(defvar agent-q-max-result-chars)

;;;; Customization

(defcustom agent-q-register-builtin-tools-on-load t
  "Non-nil means loading agent-q registers the 18 built-in tools.
agent-q.el calls `agent-q-register-builtin-tools' when it is loaded
and this is non-nil."
  :type 'boolean
  :group 'agent-q)

(defcustom agent-q-allowed-directories nil
  "Directories that read_file, read_buffer and search_in_buffer read freely.
Reading a file outside these directories asks the user first, exactly
as a dangerous tool does.  nil means the default: the root of the
current project (see `project-current') and the directory of the file
the current buffer visits (none for a buffer that visits no file).
The root directory / and the home directory itself are never allowed,
here or in the default (they would allow reading nearly everything;
list the subdirectories to allow instead), and remote files always
ask."
  :type '(choice (const :tag "Current project and visited file's directory" nil)
                 (repeat directory))
  :group 'agent-q)

(defcustom agent-q-sensitive-file-patterns
  '("/\\.authinfo\\(?:\\.gpg\\)?\\'"
    "/\\.netrc\\(?:\\.gpg\\)?\\'"
    "/\\.ssh/"
    "/\\.gnupg/"
    "/\\.password-store/"
    "/\\.env\\(?:\\.[^/]*\\)?\\'"
    "\\.pem\\'"
    "\\.key\\'"
    "\\.p12\\'"
    "\\.pfx\\'"
    "\\.gpg\\'"
    "\\.kdbx\\'"
    "/id_\\(?:rsa\\|dsa\\|ecdsa\\|ed25519\\)[^/]*\\'"
    "/\\.aws/credentials\\'"
    "/\\.docker/config\\.json\\'"
    "/\\.kube/config\\'"
    "/\\.pgpass\\'"
    "/\\.git-credentials\\'"
    "/\\.npmrc\\'"
    "/\\.pypirc\\'")
  "Regexps matching files that the read tools never read without asking.
Each regexp is matched, ignoring case, against the absolute file name
as given (after expanding ~ and ..) and against its true name (after
resolving symlinks); a match on either asks the user for approval."
  :type '(repeat regexp)
  :group 'agent-q)

(defcustom agent-q-builtins-max-value-chars 4000
  "Maximum number of characters of a printed value in tool results.
Longer values are cut and the result says how much was cut."
  :type 'natnum
  :group 'agent-q)

(defcustom agent-q-builtins-page-chars 15000
  "Maximum number of characters in one page of read_file or read_buffer.
Kept below `agent-q-max-result-chars' so a page is never cut by the
executor; a result that stops early says how to read the next page."
  :type 'natnum
  :group 'agent-q)

(defcustom agent-q-builtins-page-lines 400
  "Default number of lines in one page of read_file."
  :type 'natnum
  :group 'agent-q)

(defcustom agent-q-builtins-max-file-size (* 50 1024 1024)
  "Largest file, in bytes, that read_file reads."
  :type 'natnum
  :group 'agent-q)

(defcustom agent-q-builtins-apropos-limit 100
  "Maximum number of symbols listed by apropos_search."
  :type 'natnum
  :group 'agent-q)

(defcustom agent-q-builtins-search-limit 100
  "Maximum number of matches listed by search_in_buffer."
  :type 'natnum
  :group 'agent-q)

(defcustom agent-q-builtins-search-count-limit 100000
  "Number of matches after which search_in_buffer stops counting.
The result then says \"at least\" that many.  Counting every match of a
pattern such as \".\" in a large buffer costs seconds; 0 counts them all."
  :type 'natnum
  :group 'agent-q)

(defcustom agent-q-builtins-search-time-limit 10
  "Seconds after which search_in_buffer stops and reports what it found.
The search runs off Emacs's thread and \\[keyboard-quit] stops it at any
time; this bounds how long Emacs waits for it unattended.  nil: no limit."
  :type '(choice (number :tag "Seconds") (const :tag "No limit" nil))
  :group 'agent-q)

(defcustom agent-q-builtins-package-symbols-limit 500
  "Maximum number of symbols listed by list_package_symbols."
  :type 'natnum
  :group 'agent-q)

(defcustom agent-q-builtins-history-size 50
  "Number of eval_form and compile_form results kept in the history."
  :type 'natnum
  :group 'agent-q)

(defcustom agent-q-builtins-backtrace-frames 30
  "Maximum number of backtrace frames recorded for get_last_error."
  :type 'natnum
  :group 'agent-q)

;;;; Small helpers

(defun agent-q-builtins--arg (args name &optional default)
  "Return the argument NAME from the hash table ARGS, or DEFAULT."
  (if (hash-table-p args) (gethash name args default) default))

(defun agent-q-builtins--truncate (string max)
  "Return STRING cut to MAX characters, saying how many were cut."
  (if (<= (length string) max)
      string
    (format "%s\n[... %d more characters not shown ...]"
            (substring string 0 max) (- (length string) max))))

(defun agent-q-builtins--print (value)
  "Return VALUE printed readably, with bounded length and depth."
  (let ((print-length 100)
        (print-level 10)
        (print-escape-newlines t)
        (print-circle t))
    (agent-q-builtins--truncate (prin1-to-string value)
                                agent-q-builtins-max-value-chars)))

(defun agent-q-builtins--page-chars ()
  "Return the number of characters a page of text may hold.
That is `agent-q-builtins-page-chars', made smaller when needed so that
a page and its notes fit in `agent-q-max-result-chars' (0 means no
cap, so the page size is not changed)."
  (let ((cap (max 1 agent-q-builtins-page-chars))
        (result-cap (and (boundp 'agent-q-max-result-chars)
                         agent-q-max-result-chars)))
    (if (and (integerp result-cap) (> result-cap 0))
        (max 1 (min cap (max (/ result-cap 2) (- result-cap 1000))))
      cap)))

(defun agent-q-builtins--blank-p (string)
  "Return non-nil when STRING is nil or only whitespace."
  (or (null string) (string-match-p "\\`[ \t\n\r\f]*\\'" string)))

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

;;;; Reading forms

(defun agent-q-builtins--read-one-form (string)
  "Read exactly one form from STRING.
Return (:ok FORM) or (:error MESSAGE).  Text after the form other
than whitespace and comments is an error."
  (cond
   ((not (stringp string))
    (list :error "The form must be a string of Emacs Lisp code."))
   ((agent-q-builtins--blank-p string)
    (list :error "The form is empty: give exactly one Emacs Lisp form."))
   (t
    (condition-case err
        (let* ((read (read-from-string string))
               (form (car read))
               (end (cdr read)))
          (if (condition-case nil
                  (prog1 t (ignore (read-from-string string end)))
                (end-of-file nil))
              (list :error
                    (format "Expected exactly one form, but there is more text after it (from position %d): %s"
                            end
                            (agent-q-builtins--truncate
                             (string-trim (substring string end)) 200)))
            (list :ok form)))
      (end-of-file
       (list :error "Incomplete form: the text ends before the form is complete (unbalanced parentheses or an unterminated string?)."))
      (error
       (list :error (format "Cannot read the form: %s"
                            (error-message-string err))))))))

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
                                      (error-message-string err))))))
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
                   (text (let ((print-escape-newlines t))
                           (agent-q-builtins--truncate
                            (string-trim-right (pp-to-string expansion))
                            (* 4 agent-q-builtins-max-value-chars)))))
              (if (equal expansion form)
                  (format "No expansion: the form is not a macro call%s, so it expands to itself:\n%s"
                          (if full " and contains none" "")
                          text)
                (format "Expansion (%s):\n%s"
                        (if full "macroexpand-all" "one step, macroexpand-1")
                        text)))
          (error (format "Error while expanding: %s" (error-message-string err))))))))

;;;; Execution: eval_form, compile_form, history and last error

(defvar agent-q-builtins--history nil
  "Recent eval_form and compile_form results, newest first.
Each element is a plist (:tool NAME :form STRING :result STRING :time TIME).")

(defvar agent-q-builtins--last-error nil
  "The last error from eval_form or compile_form, as a plist or nil.
Keys: :tool :form :condition :message :backtrace (list of strings) :time.")

(defun agent-q-builtins--record (tool form result)
  "Record FORM and RESULT from TOOL in the bounded history."
  (push (list :tool tool :form form :result result :time (current-time))
        agent-q-builtins--history)
  (when (> (length agent-q-builtins--history) agent-q-builtins-history-size)
    (setq agent-q-builtins--history
          (seq-take agent-q-builtins--history agent-q-builtins-history-size))))

(defun agent-q-builtins--remember-failure (tool form condition backtrace)
  "Record CONDITION raised by FORM in TOOL, with BACKTRACE, as the last error."
  (setq agent-q-builtins--last-error
        (list :tool tool :form form :condition condition
              :message (error-message-string condition)
              :backtrace backtrace :time (current-time))))

(defun agent-q-builtins--frame-string (fun args)
  "Return the backtrace frame FUN applied to ARGS as one short line."
  (let ((print-length 8) (print-level 3) (print-escape-newlines t))
    (truncate-string-to-width (prin1-to-string (cons fun args))
                              200 nil nil "...")))

(defun agent-q-builtins--call-capturing (thunk)
  "Call THUNK and capture its output, value, or error with a backtrace.
Return (:value VALUE :output STRING) or
\(:error CONDITION :output STRING :backtrace FRAMES), FRAMES being
strings, innermost first, from the failing call out to THUNK."
  (letrec ((frames nil)
           (output "")
           (value nil)
           (capture
          (lambda (&rest _)
            ;; eval.c enters the debugger at most once per input event;
            ;; count one so that the next error is captured too (ert
            ;; does the same).
            (setq num-nonmacro-input-events (1+ num-nonmacro-input-events))
            ;; Keep the frames between this debugger's own frame
            ;; (excluded) and THUNK's (excluded).
            (let ((collected nil) (state 'inside-debugger))
              (mapbacktrace
               (lambda (_evald fun args _flags)
                 (pcase state
                   ('inside-debugger
                    (when (eq fun capture) (setq state 'collecting)))
                   ('collecting
                    (if (eq fun thunk)
                        (setq state 'done)
                      (push (agent-q-builtins--frame-string fun args)
                            collected))))))
              (setq frames (seq-take (nreverse collected)
                                     agent-q-builtins-backtrace-frames)))
            nil)))
    (condition-case err
        (progn
          (setq output
                (with-output-to-string
                  (let ((debug-on-error t)
                        (debug-on-signal nil)
                        (debug-ignored-errors nil)
                        (debugger capture))
                    (condition-case inner
                        (setq value (funcall thunk))
                      ((debug error)
                       (setq output (with-current-buffer standard-output
                                      (buffer-string)))
                       (signal (car inner) (cdr inner)))))))
          (list :value value :output output))
      (error (list :error err :output output :backtrace frames)))))

(defun agent-q-builtins--format-run (tool form-string outcome &optional prefix)
  "Format OUTCOME of running FORM-STRING in TOOL, record it, return text.
PREFIX is text put before the result (compiler warnings)."
  (let ((output (plist-get outcome :output))
        (text nil))
    (if (plist-member outcome :error)
        (let ((condition (plist-get outcome :error)))
          (agent-q-builtins--remember-failure tool form-string condition
                                          (plist-get outcome :backtrace))
          (setq text (format "Error: %s\nCondition: %s\n(Call get_last_error for the backtrace.)"
                             (error-message-string condition)
                             (agent-q-builtins--print condition))))
      (setq text (format "Value: %s" (agent-q-builtins--print (plist-get outcome :value)))))
    (unless (string-empty-p output)
      (setq text (format "%s\nOutput:\n%s" text
                         (agent-q-builtins--truncate output agent-q-builtins-max-value-chars))))
    (agent-q-builtins--record tool form-string text)
    (concat (or prefix "") text)))

(defun agent-q-builtins--read-for (tool string)
  "Read the one form in STRING for TOOL: (:ok FORM) or (:error TEXT).
A form that cannot be read is recorded, as TOOL's last error and in the
history, and TEXT is the result to return."
  (let ((read (agent-q-builtins--read-one-form string)))
    (if (not (eq (car read) :error))
        read
      (let ((text (format "Error: %s" (cadr read))))
        (agent-q-builtins--remember-failure tool string
                                        (list 'invalid-read-syntax (cadr read)) nil)
        (agent-q-builtins--record tool string text)
        (list :error text)))))

(defun agent-q-builtins--eval-form (args)
  "Evaluate the one form in ARGS (\"form\") with lexical binding."
  (let* ((string (agent-q-builtins--arg args "form"))
         (read (agent-q-builtins--read-for "eval_form" string)))
    (if (eq (car read) :error)
        (cadr read)
      (let ((form (cadr read)))
        (agent-q-builtins--format-run
         "eval_form" string
         (agent-q-builtins--call-capturing (lambda () (eval form t))))))))

(defun agent-q-builtins--compile (form)
  "Byte-compile FORM as the body of a lexical function.
Return (COMPILED . WARNINGS) or signal the compiler's error."
  (require 'bytecomp)
  (defvar byte-compile-log-warning-function)
  (defvar byte-compile-unresolved-functions)
  (let* ((warnings nil)
         (byte-compile-log-warning-function
          (lambda (string &rest _) (push string warnings)))
         (byte-compile-unresolved-functions nil)
         (lexical-binding t)
         (compiled (byte-compile `(lambda () ,form))))
    ;; Compiling a file reports unknown functions at its end; compiling
    ;; a form does not, so report them here.
    (dolist (entry (reverse byte-compile-unresolved-functions))
      (let ((name (car-safe entry)))
        (when (and (symbolp name) (not (fboundp name)))
          (push (format "the function `%s' is not known to be defined." name)
                warnings))))
    (cons compiled (nreverse warnings))))

(defun agent-q-builtins--compile-form (args)
  "Byte-compile the form in ARGS (\"form\"), report warnings, then run it."
  (let* ((string (agent-q-builtins--arg args "form"))
         (read (agent-q-builtins--read-for "compile_form" string)))
    (if (eq (car read) :error)
        (cadr read)
      (let* ((form (cadr read))
             (compiled (agent-q-builtins--call-capturing
                        (lambda () (agent-q-builtins--compile form)))))
        (if (plist-member compiled :error)
            (let ((condition (plist-get compiled :error)))
              (agent-q-builtins--remember-failure "compile_form" string condition
                                              (plist-get compiled :backtrace))
              (let ((text (format "Compilation failed: %s\nCondition: %s\n(Call get_last_error for the backtrace.)"
                                  (error-message-string condition)
                                  (agent-q-builtins--print condition))))
                (agent-q-builtins--record "compile_form" string text)
                text))
          (let* ((fn (car (plist-get compiled :value)))
                 (warnings (cdr (plist-get compiled :value)))
                 (prefix (if warnings
                             (concat (format "Compiler warnings (%d):\n" (length warnings))
                                     (mapconcat (lambda (w) (concat "  " w)) warnings "\n")
                                     "\n")
                           "No warnings.\n")))
            (agent-q-builtins--format-run
             "compile_form" string
             (agent-q-builtins--call-capturing (lambda () (funcall fn)))
             prefix)))))))

(defun agent-q-builtins--get-last-error (_args)
  "Return the last error recorded by eval_form or compile_form."
  (let ((e agent-q-builtins--last-error))
    (if (null e)
        "No recent errors recorded."
      (concat
       (format "Last error (from %s at %s):\n" (plist-get e :tool)
               (format-time-string "%F %T" (plist-get e :time)))
       (format "Condition: %s\n" (agent-q-builtins--print (plist-get e :condition)))
       (format "Message: %s\n" (plist-get e :message))
       (format "Form: %s\n" (agent-q-builtins--truncate
                             (format "%s" (plist-get e :form)) 2000))
       (let ((bt (plist-get e :backtrace)))
         (if bt
             (format "Backtrace (innermost first, %d frame(s)):\n%s" (length bt)
                     (mapconcat (lambda (f) (concat "  " f)) bt "\n"))
           (if (eq (car-safe (plist-get e :condition)) 'invalid-read-syntax)
               "Backtrace: none (the form could not be read)"
             "Backtrace: none captured")))))))

(defun agent-q-builtins--get-repl-history (args)
  "Return the recent forms and results, newest first.
ARGS may hold \"limit\": how many entries (default 10, at most 50)."
  (let ((limit (agent-q-builtins--arg args "limit" 10))
        (total (length agent-q-builtins--history)))
    (cond
     ((not (and (numberp limit) (>= limit 1)))
      (format "Invalid limit %s: give a number from 1 to 50." limit))
     ((zerop total) "No REPL history recorded yet (eval_form and compile_form record it).")
     (t
      (let* ((limit (min 50 (truncate limit)))
             (entries (seq-take agent-q-builtins--history limit))
             (i 0))
        (concat
         (format "Recent REPL History (%d of %d entries):\n" (length entries) total)
         (mapconcat
          (lambda (e)
            (cl-incf i)
            (format "%d. [%s] %s\n   => %s" i (plist-get e :tool)
                    (agent-q-builtins--truncate (format "%s" (plist-get e :form)) 1000)
                    (replace-regexp-in-string
                     "\n" "\n      "
                     (agent-q-builtins--truncate (plist-get e :result) 1000))))
          entries "\n")))))))

;;;; The path guard for the read tools

(defun agent-q-builtins--too-broad-p (dir)
  "Return non-nil when DIR, a true directory name, is / or the home directory.
Allowing either would let the read tools read nearly everything."
  (or (equal dir (file-name-directory (directory-file-name dir)))
      (equal dir (file-name-as-directory (file-truename (expand-file-name "~"))))))

(defun agent-q-builtins--buffer-file (buffer)
  "Return the file BUFFER visits, or nil.
An indirect buffer shows its base buffer's text, so it is judged by
the file its base buffer visits."
  (buffer-file-name (or (buffer-base-buffer buffer) buffer)))

(defun agent-q-builtins--remote-p (path)
  "Return non-nil when PATH names a remote file; never connects.
A relative PATH is remote when `default-directory' is."
  (or (file-remote-p path)
      (and (not (file-name-absolute-p path))
           (file-remote-p default-directory))))

(defun agent-q-builtins--allowed-directories ()
  "Return the directories the read tools read without asking, as true names.
These are `agent-q-allowed-directories', or by default the current
project's root and the directory of the file the current buffer
visits.  Remote directories, / and the home directory itself are never
included: remote files always ask, and / or ~ would allow everything."
  (let ((dirs (or agent-q-allowed-directories
                  (list (unless (file-remote-p default-directory)
                          (let ((project (ignore-errors (project-current nil))))
                            (and project (project-root project))))
                        (let ((file (agent-q-builtins--buffer-file (current-buffer))))
                          (and file (file-name-directory file)))))))
    (seq-remove #'agent-q-builtins--too-broad-p
                (mapcar (lambda (d) (file-name-as-directory (file-truename (expand-file-name d))))
                        (seq-filter (lambda (d) (and (stringp d) (not (file-remote-p d))))
                                    dirs)))))

(defun agent-q-builtins--sensitive-pattern (&rest names)
  "Return the first sensitive pattern matching one of NAMES, or nil."
  (let ((case-fold-search t))
    (seq-find (lambda (re)
                (seq-some (lambda (name) (and name (string-match-p re name))) names))
              agent-q-sensitive-file-patterns)))

(defun agent-q-builtins--guard-reason (file)
  "Return why reading FILE needs approval, or nil when it does not.
FILE is an absolute, expanded file name, or a remote one as given.
A remote FILE needs approval at once: resolving it would connect to
the remote host before the user was asked."
  (if (agent-q-builtins--remote-p file)
      (format "%s is a remote file (reading it connects to another host)" file)
    (let* ((true (file-truename file))
           (pattern (agent-q-builtins--sensitive-pattern file true))
           (dirs (agent-q-builtins--allowed-directories)))
      (cond
       (pattern (format "%s matches the sensitive file pattern %s" true pattern))
       ((not (seq-some (lambda (dir) (string-prefix-p dir true)) dirs))
        (format "%s is outside the allowed directories (%s)" true
                (if dirs (string-join dirs ", ") "none")))))))

(defun agent-q-builtins--check-file (tool file args-plist &optional purpose)
  "Check that TOOL may read FILE; ask the user when it needs approval.
ARGS-PLIST is the call's arguments, shown to the user.  PURPOSE, when
non-nil, is a sentence put before the reason, saying why TOOL reads
FILE.  Return (:ok ARGS-PLIST), with the approved (possibly modified)
arguments, or (:denied TEXT) with the refusal to return to the model."
  (let ((reason (agent-q-builtins--guard-reason file)))
    (if (null reason)
        (list :ok args-plist)
      (let* ((reason (if purpose (concat purpose reason) reason))
             (answer (if (fboundp 'agent-q-request-approval)
                         (condition-case err
                             (agent-q-request-approval tool args-plist reason)
                           (error (list :denied (format "approval failed: %s"
                                                        (error-message-string err)))))
                       (list :denied "approval is unavailable (agent-q is not loaded)"))))
        (if (eq (car-safe answer) :approved)
            (list :ok (or (cadr answer) args-plist))
          (list :denied
                (format "Refused: %s, so reading it needs the user's approval, which was not given (%s)."
                        reason
                        (or (and (consp answer) (stringp (cadr answer)) (cadr answer))
                            "denied"))))))))

(defun agent-q-builtins--args-plist (args names)
  "Return the arguments NAMES present in hash table ARGS as a keyword plist."
  (let ((plist nil))
    (dolist (name names)
      (let ((v (gethash name args 'agent-q-builtins--absent)))
        (unless (eq v 'agent-q-builtins--absent)
          (setq plist (append plist (list (intern (concat ":" name)) v))))))
    plist))

(defun agent-q-builtins--plist-args (plist)
  "Return a hash table of arguments from keyword PLIST."
  (let ((table (make-hash-table :test #'equal)))
    (while plist
      (puthash (substring (symbol-name (car plist)) 1) (cadr plist) table)
      (setq plist (cddr plist)))
    table))

;;;; Buffer: read_file

(defun agent-q-builtins--page-lines (text offset limit &optional column)
  "Return a page of TEXT: LIMIT lines from line OFFSET (1-based).
COLUMN characters of line OFFSET are skipped (default 0).
Return (PAGE FIRST LAST TOTAL CUT LONG-LINE LINE-LENGTH): FIRST and
LAST are the line numbers shown, TOTAL the number of lines, CUT
non-nil when the page stopped early because of the character limit,
LONG-LINE non-nil when line FIRST alone did not fit (PAGE holds only
its beginning), LINE-LENGTH the number of characters of line FIRST,
or nil when COLUMN is past its end."
  (with-temp-buffer
    (insert text)
    (let* ((total (count-lines (point-min) (point-max)))
           (max-chars (agent-q-builtins--page-chars))
           (start nil) (last (1- offset)) (cut nil)
           (line-length nil))
      (goto-char (point-min))
      (forward-line (1- offset))
      (setq line-length (- (line-end-position) (point)))
      (if (> (or column 0) line-length)
          (setq line-length nil)
        (forward-char (or column 0)))
      (setq start (point))
      (while (and (< (- last offset -1) limit) (not (eobp)) (not cut))
        (let ((eol (line-beginning-position 2)))
          (if (and (> (- eol start) max-chars) (> last (1- offset)))
              (setq cut t)
            (goto-char eol)
            (setq last (1+ last)))))
      (let ((page (buffer-substring-no-properties start (point)))
            (long-line nil))
        (when (and (> (length page) max-chars)
                   ;; A line that fits but for its newline is shown whole.
                   (not (and (= (length page) (1+ max-chars))
                             (eq (aref page max-chars) ?\n))))
          ;; A single line longer than a page: show its beginning, say so.
          (setq page (substring page 0 max-chars)
                long-line t))
        (list page offset last total (or cut long-line) long-line line-length)))))

(defun agent-q-builtins--read-file (args)
  "Return a page of the file named in ARGS.
ARGS has \"path\", and optionally \"offset\" (first line), \"limit\"
\(number of lines) and \"column\" (characters of the first line to
skip)."
  (let* ((path (agent-q-builtins--arg args "path"))
         (file (agent-q-builtins--guarded-name path)))
    (if (null file)
        "No path given: pass the file's path."
      (let ((check (agent-q-builtins--check-file
                    "read_file" file
                    (agent-q-builtins--args-plist
                     args '("path" "offset" "limit" "column")))))
        (if (eq (car check) :denied)
            (cadr check)
          (let* ((approved (agent-q-builtins--plist-args (cadr check)))
                 (file (expand-file-name (gethash "path" approved path))))
            (agent-q-builtins--read-file-1
             file
             (gethash "offset" approved (agent-q-builtins--arg args "offset" 1))
             (gethash "limit" approved (agent-q-builtins--arg args "limit"
                                                             agent-q-builtins-page-lines))
             (gethash "column" approved (agent-q-builtins--arg args "column" 0)))))))))

(defun agent-q-builtins--guarded-name (path)
  "Return the file name PATH to check with the read guard, or nil.
nil when PATH is not a non-empty string.  A local PATH is expanded
\(~, .., relative to `default-directory'); a remote one is returned as
given, since expanding it may connect to the host before the user
approved."
  (and (stringp path) (not (string-empty-p path))
       (if (agent-q-builtins--remote-p path)
           path
         (expand-file-name path))))

(defun agent-q-builtins--file-text (file)
  "Return (TEXT . NOTE) for FILE, or (nil . ERROR-TEXT).
TEXT comes from the buffer visiting FILE when it has unsaved changes."
  (let ((buffer (find-buffer-visiting file)))
    (cond
     ((and buffer (buffer-modified-p buffer))
      (cons (with-current-buffer buffer
              (save-restriction (widen) (buffer-substring-no-properties
                                         (point-min) (point-max))))
            (format "[This is the text of buffer %s, which visits the file and has unsaved changes; the file on disk differs.]\n"
                    (buffer-name buffer))))
     ((not (file-exists-p file)) (cons nil (format "File not found: %s" file)))
     ((file-directory-p file)
      (cons nil (format "%s is a directory, not a file." file)))
     ((not (file-regular-p file))
      ;; A FIFO or a device such as /dev/zero would block or never end.
      (cons nil (format "%s is not a regular file (a device, FIFO or socket); it was not read." file)))
     ((not (file-readable-p file))
      (cons nil (format "Permission denied: %s is not readable." file)))
     ((let ((size (file-attribute-size (file-attributes file))))
        (and size (> size agent-q-builtins-max-file-size)))
      (cons nil (format "File %s is too large to read (%d bytes; the limit is agent-q-builtins-max-file-size, %d bytes)."
                        file (file-attribute-size (file-attributes file))
                        agent-q-builtins-max-file-size)))
     (t
      (condition-case err
          (with-temp-buffer
            (insert-file-contents file)
            (if (save-excursion
                  (goto-char (point-min))
                  (search-forward "\0" (min (point-max) 8000) t))
                (cons nil (format "File %s looks binary (it contains NUL bytes); not shown." file))
              (cons (buffer-substring-no-properties (point-min) (point-max)) "")))
        (error (cons nil (format "Error reading %s: %s" file
                                 (error-message-string err)))))))))

(defun agent-q-builtins--read-file-1 (file offset limit &optional column)
  "Return the page of FILE starting at line OFFSET with LIMIT lines.
COLUMN characters of line OFFSET are skipped (default 0)."
  (let ((column (or column 0)))
    (cond
     ((not (and (integerp offset) (>= offset 1)))
      (format "Invalid offset %s: give the first line to read, 1 or more." offset))
     ((not (and (integerp limit) (>= limit 1)))
      (format "Invalid limit %s: give the number of lines to read, 1 or more." limit))
     ((not (and (integerp column) (>= column 0)))
      (format "Invalid column %s: give the number of characters of the first line to skip, 0 or more."
              column))
     (t
      (agent-q-builtins--read-file-2 file offset limit column)))))

(defun agent-q-builtins--read-file-2 (file offset limit column)
  "Return the page of FILE: LIMIT lines from line OFFSET, from COLUMN."
  (let ((content (agent-q-builtins--file-text file)))
    (if (null (car content))
        (cdr content)
      (pcase-let ((`(,page ,first ,last ,total ,cut ,long-line ,line-length)
                   (agent-q-builtins--page-lines (car content) offset limit column)))
        (cond
         ((and (> offset 1) (> offset total))
          (format "Offset %d is past the end of %s, which has %d line(s)."
                  offset file total))
         ((null line-length)
          (format "Column %d is past the end of line %d of %s, which has %d character(s)."
                  column offset file
                  (with-temp-buffer
                    (insert (car content))
                    (goto-char (point-min))
                    (forward-line (1- offset))
                    (- (line-end-position) (point)))))
         (t
          (concat
           (format "File: %s (%s%s)\n" file
                   (if (zerop total) "empty"
                     (format "lines %d-%d of %d" first last total))
                   (if (> column 0)
                       (format ", line %d from column %d" first column)
                     ""))
           (cdr content)
           page
           (cond
            (long-line
             (format "\n[Line %d is longer than one page (%d characters); columns %d-%d are shown. Call read_file with offset %d and column %d to read on.]"
                     first line-length column (+ column (length page) -1)
                     first (+ column (length page))))
            ((< last total)
             (format "\n[%s: lines %d-%d not shown. Call read_file with offset %d to read the next page.]"
                     (if cut "Page size limit reached" "More lines")
                     (1+ last) total (1+ last)))
            (t "")))))))))

;;;; Buffer: read_buffer and search_in_buffer

(defun agent-q-builtins--find-buffer (name)
  "Return (BUFFER) for buffer NAME, or (nil . TEXT) explaining the failure."
  (let ((buffer (and (stringp name) (get-buffer name))))
    (if (buffer-live-p buffer)
        (list buffer)
      (let ((close (seq-take
                    (seq-filter (lambda (n)
                                  (and (stringp name) (not (string-empty-p name))
                                       (string-search (downcase name) (downcase n))))
                                (mapcar #'buffer-name (buffer-list)))
                    10)))
        (cons nil (format "Buffer %s not found.%s" name
                          (if close (format " Buffers with similar names: %s"
                                            (string-join close ", "))
                            "")))))))

(defun agent-q-builtins--check-buffer (tool buffer args-plist)
  "Check that TOOL may read BUFFER, as for the file it visits.
An indirect buffer is checked as its base buffer, a Dired buffer as
its directory.  ARGS-PLIST is shown to the user.  Return (:ok PLIST)
or (:denied TEXT)."
  (let ((file (with-current-buffer (or (buffer-base-buffer buffer) buffer)
                (or (agent-q-builtins--buffer-file (current-buffer))
                    (and (derived-mode-p 'dired-mode) default-directory)))))
    (if file
        (agent-q-builtins--check-file
         tool (if (file-remote-p file) file (expand-file-name file)) args-plist)
      (list :ok args-plist))))

(defun agent-q-builtins--read-buffer (args)
  "Return the text of the buffer in ARGS (\"buffer\", \"start\", \"end\").
START and END are character positions; the whole buffer (widened) by default."
  (let* ((name (agent-q-builtins--arg args "buffer"))
         (found (agent-q-builtins--find-buffer name)))
    (if (null (car found))
        (cdr found)
      (let* ((buffer (car found))
             (check (agent-q-builtins--check-buffer
                     "read_buffer" buffer
                     (agent-q-builtins--args-plist args '("buffer" "start" "end")))))
        (if (eq (car check) :denied)
            (cadr check)
          (with-current-buffer buffer
            (save-restriction
              (widen)
              (let* ((size (buffer-size))
                     (start (agent-q-builtins--arg args "start" 1))
                     (end (agent-q-builtins--arg args "end" (point-max))))
                (cond
                 ((not (and (integerp start) (integerp end)))
                  "Invalid range: start and end must be integers (character positions).")
                 ((or (< start 1) (> start (point-max)))
                  (format "Invalid start %d: buffer %s has positions 1 to %d."
                          start (buffer-name) (point-max)))
                 ((< end start)
                  (format "Invalid range: end %d is before start %d." end start))
                 (t
                  (let* ((end (min end (point-max)))
                         (max (agent-q-builtins--page-chars))
                         (stop (min end (+ start max))))
                    (concat
                     (format "Buffer: %s (%s%s%s)\n"
                             (buffer-name)
                             (if (< start stop)
                                 (format "characters %d-%d of %d" start (1- stop) size)
                               (format "no characters: the range is empty; the buffer has %d"
                                       size))
                             (if buffer-file-name
                                 (format "; visits %s" buffer-file-name) "")
                             (if (and buffer-file-name (buffer-modified-p))
                                 ", with unsaved changes" ""))
                     (buffer-substring-no-properties start stop)
                     (if (< stop end)
                         (format "\n[Page size limit reached: characters %d-%d not shown. Call read_buffer with start %d to read the next page.]"
                                 stop (1- end) stop)
                       "")))))))))))))

;; The search runs in the module for both modes, off Emacs's thread:
;; Emacs's own `search-forward' takes 90-150 ms to go through 20 MB, and
;; its backtracking regexp engine can hang on a model's pattern
;; (\\(a*\\)*c on a line of a's).  Emacs's thread only copies the text
;; (about 3 ms per MB) and waits, polling for C-g.

(defun agent-q-builtins--search-lines (positions)
  "Return the line number of each of POSITIONS, which increase.
Lines are counted once from `point-min', from one position to the
next, rather than from the beginning for each: `line-number-at-pos'
on 100 matches spread over 20 MB takes 200 ms."
  (let ((line 1) (from (point-min)))
    (mapcar (lambda (pos)
              (goto-char pos)
              (let ((bol (line-beginning-position)))
                (setq line (+ line (count-lines from bol))
                      from bol)
                line))
            positions)))

(defun agent-q-builtins--search-in-buffer (args)
  "Search the buffer in ARGS for \"pattern\"; list line and column of matches.
\"regex\" makes the pattern a regexp (default literal);
\"all_matches\" nil lists only the first match (default all).
Counting stops at `agent-q-builtins-search-count-limit' matches and the
search at `agent-q-builtins-search-time-limit' seconds; the result says
so.  \\[keyboard-quit] stops the search at once (a `quit')."
  (let* ((pattern (agent-q-builtins--arg args "pattern"))
         (name (agent-q-builtins--arg args "buffer"))
         (regex (agent-q-builtins--arg args "regex"))
         (all (agent-q-builtins--arg args "all_matches" t))
         (found (agent-q-builtins--find-buffer name)))
    (cond
     ((or (not (stringp pattern)) (string-empty-p pattern))
      "No pattern given: pass the text (or regexp) to search for.")
     ((null (car found)) (cdr found))
     ((and regex (condition-case err (progn (string-match-p pattern "") nil)
                   (invalid-regexp (setq regex (cadr err)) t)))
      (format "Invalid regular expression '%s': %s" pattern regex))
     (t
      (let* ((buffer (car found))
             (check (agent-q-builtins--check-buffer
                     "search_in_buffer" buffer
                     (agent-q-builtins--args-plist
                      args '("pattern" "buffer" "regex" "all_matches")))))
        (if (eq (car check) :denied)
            (cadr check)
          (with-current-buffer buffer
            (save-excursion
              (save-restriction
                (widen)
                (let* ((listed (if all agent-q-builtins-search-limit 1))
                       (result
                        (condition-case err
                            (progn
                              (require 'agent-q-core nil t)
                              (agent-q--core-search-buffer
                               pattern regex nil listed
                               (if all agent-q-builtins-search-count-limit 1)
                               agent-q-builtins-search-time-limit))
                          (agent-q-search-error (cadr err))
                          (error (error-message-string err)))))
                  (if (stringp result)
                      (format (if regex "Cannot search for regular expression '%s': %s"
                                "Cannot search for '%s': %s")
                              pattern result)
                    (agent-q-builtins--search-report pattern result all listed))))))))))))

(defun agent-q-builtins--search-report (pattern result all listed)
  "Return search_in_buffer's text for PATTERN's RESULT in the current buffer.
RESULT is the plist of `agent-q--core-search-buffer'; ALL is nil when
only the first match was asked for; at most LISTED matches are listed."
  (let* ((count (plist-get result :total))
         (starts (mapcar (lambda (m) (+ (point-min) (car m)))
                         (plist-get result :matches)))
         (capped (and all (eq (plist-get result :stopped) 'count-limit)))
         (timed-out (eq (plist-get result :stopped) 'time-limit))
         (reached (and timed-out
                       (line-number-at-pos
                        (min (point-max) (+ (point-min) (plist-get result :searched)))
                        t)))
         (limit-note (and timed-out
                          (format "the search stopped at its time limit of %s s (agent-q-builtins-search-time-limit) at line %d of %d; the rest of the buffer was not searched"
                                  agent-q-builtins-search-time-limit reached
                                  (line-number-at-pos (point-max) t)))))
    (cond
     ((zerop count)
      (if timed-out
          (format "No matches for '%s' in buffer %s before line %d: %s."
                  pattern (buffer-name) reached limit-note)
        (format "No matches for '%s' in buffer %s." pattern (buffer-name))))
     (t
      (concat
       (cond (capped
              (format "Found at least %d match(es) for '%s' (counting stopped there):\n"
                      count pattern))
             (timed-out
              (format "Found %d match(es) for '%s' before line %d (%s):\n"
                      count pattern reached limit-note))
             (t (format "Found %d match(es) for '%s':\n" count pattern)))
       (let ((lines (agent-q-builtins--search-lines starts)))
         (mapconcat
          (lambda (beg)
            (goto-char beg)
            (format "  Line %d, Column %d (position %d): %s"
                    (pop lines) (current-column) beg
                    (truncate-string-to-width
                     (buffer-substring-no-properties
                      (line-beginning-position) (line-end-position))
                     200 nil nil "...")))
          starts "\n"))
       (if (> count listed)
           (format "\n[... %s%d more matches not shown ...]"
                   (if capped "at least " "") (- count listed))
         ""))))))

;;;; Buffer: write_file

(defun agent-q-builtins--write-coding (file buffer content)
  "Return (CODING . NOTE): the coding system to write CONTENT to FILE with.
Use BUFFER's when a buffer visits FILE, else what reading FILE
detects, else utf-8-unix.  An undecided coding becomes utf-8 with
the same end-of-line convention; a coding that cannot encode CONTENT
is replaced by utf-8, and NOTE says so (NOTE is nil otherwise)."
  (let* ((found (or (and buffer (buffer-local-value 'buffer-file-coding-system buffer))
                    (and (file-exists-p file)
                         (with-temp-buffer
                           (ignore-errors
                             (insert-file-contents file nil 0 65536)
                             last-coding-system-used)))
                    'utf-8-unix))
         (coding (if (memq (coding-system-base found) '(undecided prefer-utf-8))
                     (coding-system-change-text-conversion found 'utf-8)
                   found)))
    (if (unencodable-char-position 0 (length content) coding nil content)
        (cons (coding-system-change-text-conversion coding 'utf-8)
              (format "The content has characters that %s cannot encode, so it was written as utf-8."
                      coding))
      (cons coding nil))))

(defun agent-q-builtins--write-file (args)
  "Write ARGS's \"content\" to the file \"path\", atomically.
Refuse when a buffer visiting the file has unsaved changes; revert an
unmodified visiting buffer after writing."
  (let* ((path (agent-q-builtins--arg args "path"))
         (content (agent-q-builtins--arg args "content")))
    (cond
     ((or (not (stringp path)) (string-empty-p path)) "Error: no path given.")
     ((not (stringp content)) "Error: content must be a string.")
     (t
      (let* ((file (file-truename (expand-file-name path)))
             (dir (file-name-directory file))
             (buffer (find-buffer-visiting file))
             (existed (file-exists-p file))
             (notes nil)
             (temp nil))
        (cond
         ((file-directory-p file)
          (format "Error: %s is a directory; nothing was written." file))
         ((and buffer (buffer-modified-p buffer))
          (format "Refused: buffer %s visits %s and has unsaved changes; writing the file would lose them. Nothing was written. Ask the user to save or revert the buffer, or use propose_file_edit to change the buffer."
                  (buffer-name buffer) file))
         (t
          (condition-case err
              (let ((coding (let ((c (agent-q-builtins--write-coding file buffer content)))
                              (when (cdr c) (push (cdr c) notes))
                              (car c)))
                    (modes (if existed (file-modes file)
                             (logand (default-file-modes) #o666))))
                (unless (file-directory-p dir)
                  (make-directory dir t)
                  (push (format "Created directory %s." dir) notes))
                (setq temp (make-temp-file (expand-file-name ".agent-q-write-" dir)))
                (let ((coding-system-for-write coding))
                  (with-temp-buffer
                    (insert content)
                    (write-region nil nil temp nil 'silent)))
                (when modes (set-file-modes temp modes))
                (rename-file temp file t)
                (setq temp nil)
                (when buffer
                  (with-current-buffer buffer
                    (revert-buffer t t t))
                  (push (format "Buffer %s, which visits the file, was reverted to the new content."
                                (buffer-name buffer))
                        notes))
                (string-join
                 (cons (format "Wrote %d characters (%d line(s), %d bytes on disk) to %s (%s; encoding %s)."
                               (length content)
                               (with-temp-buffer
                                 (insert content)
                                 (count-lines (point-min) (point-max)))
                               (or (file-attribute-size (file-attributes file)) 0)
                               file
                               (if existed "replaced the existing file" "created a new file")
                               coding)
                       (nreverse notes))
                 "\n"))
            (error
             (when (and temp (file-exists-p temp))
               (ignore-errors (delete-file temp)))
             (format "Error: writing %s failed: %s. %s"
                     file (error-message-string err)
                     (if existed "The file was left unchanged."
                       "No file was created.")))))))))))

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

(defun agent-q-builtins--propose-file-edit (args)
  "Open the per-hunk review of the edit in ARGS and return its outcome.
The review reads the file (and quotes it when original does not match),
so the file first passes the read guard of read_file: outside the
allowed directories, remote or sensitive, the user is asked, as for
read_file, before anything reads it.  The approval asked is that of
reading the file (tool \"read_file\", arguments (:path FILE)): the
review that follows is the approval of the edit itself."
  (require 'agent-q-tools nil t)
  (let* ((path (agent-q-builtins--arg args "path"))
         (file (agent-q-builtins--guarded-name path)))
    (cond
     ((not (fboundp 'agent-q-tools-review-edit))
      "Error: propose_file_edit is unavailable (agent-q-tools is not installed).")
     ((null file)
      "Error: no path given.")
     (t
      (let ((check (agent-q-builtins--check-file
                    "read_file" file (list :path file)
                    "propose_file_edit must read the file to show the edit: ")))
        (if (eq (car check) :denied)
            (format "%s  No change made to %s." (cadr check) path)
          (agent-q-tools-review-edit
           (expand-file-name (or (plist-get (cadr check) :path) file))
           (agent-q-builtins--arg args "original" "")
           (agent-q-builtins--arg args "modified" "")
           (agent-q-builtins--arg args "description" ""))))))))

;;;; The tool table

(defconst agent-q-builtins--read-guard-note
  "Reading a file outside the allowed directories (the current project and the directory of the file the current buffer visits), a remote file, or a sensitive file (credentials, keys, .env, .authinfo, .ssh/...) asks the user first; if the user refuses, the result says so."
  "Sentence appended to the descriptions of the read tools.")

(defconst agent-q-builtin-tools
  `(("describe_symbol"
     "Describe an Emacs Lisp symbol: whether it is a function, macro, special form, command, variable, user option, face or feature; its signature, documentation, current value (bounded) and the file that defines it. Use it before calling or changing something you do not know. Returns \"Symbol X not found\" with close matches when no such symbol exists."
     ((:name "symbol" :type :string :description "The symbol's exact name, e.g. \"buffer-file-name\" or \"with-temp-buffer\"."))
     ("symbol") :safe (:introspection) agent-q-builtins--describe-symbol)
    ("apropos_search"
     "Find Emacs Lisp symbols whose name contains a string (a case-insensitive substring, not a regexp). Use it to discover functions or variables when you only know part of a name. Returns \"Found N symbol(s) matching 'P':\" and one line per symbol with its kind; long lists are capped and say how many were left out."
     ((:name "pattern" :type :string :description "Substring of the symbol names, e.g. \"window-buffer\".")
      (:name "type" :type :string :enum ("any" "function" "command" "variable" "face") :description "Only symbols of this kind; default any."))
     ("pattern") :safe (:introspection) agent-q-builtins--apropos-search)
    ("function_arglist"
     "Return the argument list of an Emacs Lisp function, macro or special form as Emacs's help shows it, e.g. (string-trim STRING &optional TRIM-LEFT TRIM-RIGHT); when the function advertises a shorter calling convention, that one first and the full list after. Use it before writing a call. Says clearly when the name is not a function."
     ((:name "function" :type :string :description "The function's name, e.g. \"string-trim\"."))
     ("function") :safe (:introspection) agent-q-builtins--function-arglist)
    ("who_calls"
     "Find the call sites of a function in the Emacs Lisp sources of the loaded libraries (code only, not comments or strings), each as file:line with the enclosing definition. Use it to see how a function is used or what a change would affect. Says which libraries could not be searched because their source is not installed."
     ((:name "function" :type :string :description "The called function's name, e.g. \"string-trim\"."))
     ("function") :safe (:introspection :xref) agent-q-builtins--who-calls)
    ("who_references"
     "Find the places where a variable is referenced in the Emacs Lisp sources of the loaded libraries (code only, not comments or strings), each as file:line with the enclosing definition. Use it to see who reads or sets a variable. Says which libraries could not be searched."
     ((:name "variable" :type :string :description "The variable's name, e.g. \"fill-column\"."))
     ("variable") :safe (:introspection :xref) agent-q-builtins--who-references)
    ("list_package_symbols"
     "List the symbols that a loaded library or feature defines (functions, macros, commands, variables, user options, faces, types), as \"Package P (N symbols):\" then \"  NAME [kind]\". Internal names (with \"--\") are left out unless include_internal is true. Use it to learn a package's public API. The library must already be loaded."
     ((:name "package" :type :string :description "Feature or library name, e.g. \"subr-x\" or \"project\".")
      (:name "include_internal" :type :boolean :description "Also list internal names containing \"--\"; default false."))
     ("package") :safe (:introspection :packages) agent-q-builtins--list-package-symbols)
    ("class_slots"
     "List the slots of an EIEIO class (defclass) or a cl-defstruct type, each with its initarg, type and initform. Use it before creating or reading instances."
     ((:name "class" :type :string :description "The class or struct type name, e.g. \"cl-slot-descriptor\"."))
     ("class") :safe (:introspection :clos) agent-q-builtins--class-slots)
    ("class_hierarchy"
     "Show an EIEIO class's or cl-defstruct type's parents in precedence order (\"Class Precedence List:\"), its direct superclasses and its direct subclasses."
     ((:name "class" :type :string :description "The class or struct type name."))
     ("class") :safe (:introspection :clos) agent-q-builtins--class-hierarchy)
    ("macroexpand_form"
     "Expand the macros of one Emacs Lisp form and return the expansion, pretty-printed: one step (macroexpand-1) by default, or completely (macroexpand-all) when full is true. Expanding runs the macros' code, so it is logged. Use it to understand what a macro call does."
     ((:name "form" :type :string :description "Exactly one Emacs Lisp form, e.g. \"(when x (foo))\".")
      (:name "full" :type :boolean :description "Expand completely, including nested macro calls; default false (one step)."))
     ("form") :cautious (:introspection) agent-q-builtins--macroexpand-form)
    ("eval_form"
     "Evaluate exactly one Emacs Lisp form in the running Emacs, with lexical binding, and return \"Value: ...\" plus whatever it printed to standard-output. Extra text after the form is an error. Errors are reported with their condition; call get_last_error for the backtrace. The form and result are kept in the history (get_repl_history). It changes the user's Emacs: prefer the introspection tools for reading."
     ((:name "form" :type :string :description "Exactly one Emacs Lisp form, e.g. \"(buffer-list)\"."))
     ("form") :cautious (:execution) agent-q-builtins--eval-form)
    ("compile_form"
     "Byte-compile one Emacs Lisp form with lexical binding, report the compiler's warnings (free variables, wrong argument counts, unused variables...) or \"No warnings.\", then run the compiled code and return its value. Use it to check code before putting it in a file."
     ((:name "form" :type :string :description "Exactly one Emacs Lisp form, e.g. a defun."))
     ("form") :cautious (:execution) agent-q-builtins--compile-form)
    ("get_last_error"
     "Return the last error from eval_form or compile_form: its condition, message, the form, and a bounded backtrace (innermost frame first), or \"No recent errors recorded.\". Use it after an evaluation failed."
     () nil :safe (:execution) agent-q-builtins--get-last-error)
    ("get_repl_history"
     "Return the recent eval_form and compile_form calls with their results, newest first, as \"Recent REPL History (n of N entries):\"."
     ((:name "limit" :type :integer :description "How many entries to return: default 10, at most 50."))
     () :safe (:execution) agent-q-builtins--get-repl-history)
    ("read_file"
     ,(concat "Read a text file, a page of lines at a time (offset is the first line, 1-based; limit the number of lines, default 400; column skips characters of the first line, for lines longer than a page). When a buffer visits the file with unsaved changes, returns the buffer's text and says so. The result starts with \"File: PATH (lines A-B of N)\" and, when there is more, ends by telling you the offset of the next page; nothing is cut silently. "
              agent-q-builtins--read-guard-note)
     ((:name "path" :type :string :description "The file's path; ~ and relative paths are expanded from the current buffer's directory.")
      (:name "offset" :type :integer :description "First line to read, 1-based; default 1.")
      (:name "limit" :type :integer :description "Maximum number of lines to read; default 400.")
      (:name "column" :type :integer :description "Characters of the first line (offset) to skip, 0-based; default 0. Use it to read on in a line longer than one page, as the result then says."))
     ("path") :safe (:buffer) agent-q-builtins--read-file)
    ("read_buffer"
     ,(concat "Read the text of an Emacs buffer (the whole buffer, ignoring narrowing, or the characters from start to end), including unsaved changes. Large buffers are returned a page at a time; the result says where the next page starts. "
              "For a buffer visiting a file, the same rule as read_file applies: "
              agent-q-builtins--read-guard-note)
     ((:name "buffer" :type :string :description "The buffer's name, e.g. \"*Messages*\" or \"init.el\".")
      (:name "start" :type :integer :description "First character position, 1-based; default the beginning.")
      (:name "end" :type :integer :description "Position after the last character to read (exclusive); default the end."))
     ("buffer") :safe (:buffer) agent-q-builtins--read-buffer)
    ("search_in_buffer"
     ,(concat "Search an Emacs buffer for a string (or an Emacs regexp when regex is true), case-sensitively, and return \"Found N match(es) for 'P':\" with the line, column and position of each match and the line's text. Regexps run in linear time; back-references (\\1) and \\= are not supported. "
              "For a buffer visiting a file, the same rule as read_file applies: "
              agent-q-builtins--read-guard-note)
     ((:name "pattern" :type :string :description "The text to find, or an Emacs regexp when regex is true.")
      (:name "buffer" :type :string :description "The buffer's name.")
      (:name "regex" :type :boolean :description "Treat pattern as an Emacs regular expression; default false (literal text).")
      (:name "all_matches" :type :boolean :description "List every match (up to 100); default true. False returns only the first match."))
     ("pattern" "buffer") :safe (:buffer) agent-q-builtins--search-in-buffer)
    ("write_file"
     "Replace a file's whole content (or create it, with missing directories). Needs the user's approval. Writes atomically (temporary file, then rename) in the file's encoding, and reverts a buffer visiting the file; refuses when that buffer has unsaved changes. Reports exactly what happened, errors included. Prefer propose_file_edit to change part of an existing file."
     ((:name "path" :type :string :description "The file's path.")
      (:name "content" :type :string :description "The complete new content of the file."))
     ("path" "content") :dangerous (:buffer :filesystem) agent-q-builtins--write-file)
    ("propose_file_edit"
     "Propose a change to part of a file; the user reviews it hunk by hunk and may accept some hunks and reject others. original must be the exact current text (the whole file or a unique excerpt of it, e.g. from read_file); modified replaces it. Returns which hunks were applied and the text of the rejected ones, or explains why the proposal could not be shown (for example when original no longer matches the file)."
     ((:name "path" :type :string :description "The file to edit.")
      (:name "original" :type :string :description "The exact current text to replace: the whole file or a unique excerpt of it.")
      (:name "modified" :type :string :description "The new text that replaces original.")
      (:name "description" :type :string :description "A short explanation of the change, shown to the user."))
     ("path" "original" "modified" "description") :dangerous (:diff :buffer)
     agent-q-builtins--propose-file-edit))
  "The built-in tools.
Each entry is (NAME DESCRIPTION PARAMETERS REQUIRED SAFETY-LEVEL
CATEGORIES HANDLER).  The first category is the tool's primary one.")

(defun agent-q-register-builtin-tools (&optional registry)
  "Register the 18 built-in tools in REGISTRY (default: the global one).
Return the number of tools registered.  Calling it again is harmless:
identical definitions keep their registrations."
  (unless (and (fboundp 'agent-q-define-tool) (fboundp 'agent-q-register-tool))
    (error "The agent-q core is not loaded: (require 'agent-q) first"))
  (let ((count 0))
    (pcase-dolist (`(,name ,description ,parameters ,required ,safety ,categories ,handler)
                   agent-q-builtin-tools)
      (agent-q-register-tool
       (agent-q-define-tool name description parameters
                            :required required
                            :safety-level safety
                            :categories categories
                            :handler handler)
       registry)
      (cl-incf count))
    count))

(provide 'agent-q-builtins)

;;; agent-q-builtins.el ends here
