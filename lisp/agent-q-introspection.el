;;; agent-q-introspection.el --- agent-q's introspection tools  -*- lexical-binding: t -*-

;; Copyright (C) 2026 The agent-q authors

;; Author: The agent-q authors
;; Maintainer: The agent-q authors
;; Keywords: tools, lisp, help
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

;; The handlers of describe_symbol, apropos_search, function_arglist,
;; list_package_symbols, class_slots, class_hierarchy and
;; macroexpand_form.  (who_calls and who_references are in
;; agent-q-xref.el.)
;;
;; Outcomes (the rule is in agent-q-support.el): a lookup of something
;; that does not exist fails -- a symbol not found, a name that is not
;; a function, an unknown class or struct type, a package not loaded --
;; and so do a blank argument, an unknown type, a form that cannot be
;; read or whose expansion signals.  A search that finds nothing
;; (apropos_search) and a form that is not a macro call are successful
;; answers.  `nil' and `t' are symbols like any other.
;;
;; Secrets.  describe_symbol is a safe tool, so it must not be a way
;; around the approval that reading a private file needs.  It shows the
;; value of a variable only when the variable does not look private:
;; its name matches none of `agent-q-sensitive-variable-patterns', it is
;; defined in a library (Emacs's own Lisp directory, the package
;; directories, site-lisp, `agent-q-library-directories', agent-q) or
;; in an allowed directory (`agent-q-builtins--allowed-directories'),
;; it was not merely set with setq outside any library, and its printed
;; value holds nothing that looks like a key or token
;; (`agent-q-sensitive-value-patterns').  Otherwise the value is hidden
;; and the result says why; the kind and the documentation are shown
;; all the same.  With show_value true, the tool's guard asks the user
;; first, as for a dangerous tool, and the value is shown only if the
;; user approved this call.  This is about safe tools: eval_form (a
;; cautious tool, which runs without asking unless the user adds
;; :cautious to `agent-q-confirm-safety-levels') can read any variable.
;;
;; Freezes.  Everything here runs on Emacs's main thread and is bounded:
;; values are printed within a character bound before anything else
;; (agent-q-support.el), walks of the whole obarray test names before
;; anything costlier, apropos_search sorts only what it shows, and
;; list_package_symbols removes duplicates with a hash table.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'seq)
(require 'help-fns)
(require 'agent-q-support)
(require 'agent-q-guard)

(defvar agent-q-call-context)
(declare-function agent-q-tool-fail "agent-q" (format-string &rest args))
(declare-function eieio--class-precedence-list "eieio-core" (class))
(declare-function eieio--class-p "eieio-core" (object))
(declare-function eieio--class-initarg-tuples "eieio-core" (class))
(declare-function eieio--class-class-slots "eieio-core" (class))
(declare-function eieio--class-children "eieio-core" (class))
(declare-function cl--struct-class-children-sym "cl-preloaded" (class))
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

(defcustom agent-q-sensitive-variable-patterns
  '("\\(?:\\`\\|[^a-z]\\|api\\)keys?\\(?:\\'\\|[^a-z]\\)"
    "token" "secret" "passw\\(?:or\\)?d" "passphrase" "credential"
    "auth\\(?:\\'\\|[^o]\\|ori[sz]\\)")
  "Regexps matching the names of variables whose values may be secrets.
Each is matched, ignoring case, against the variable's name.
describe_symbol does not show the value of a matching variable unless
the model asks for it (show_value) and the user approves.  The
defaults match a key as a part of the name (gptel-api-key, API_KEY,
apiKey, but not keymap), token, secret, password, passwd, passphrase,
credential and auth (auth-sources, oauth, authorization, but not
author)."
  :type '(repeat regexp)
  :group 'agent-q)

(defcustom agent-q-sensitive-value-patterns
  '("\\bsk-[A-Za-z0-9_-]\\{16,\\}"
    "\\bgsk_[A-Za-z0-9]\\{20,\\}"
    "\\bgh[opsur]_[A-Za-z0-9]\\{30,\\}"
    "\\bgithub_pat_[A-Za-z0-9_]\\{30,\\}"
    "\\bglpat-[A-Za-z0-9_-]\\{20,\\}"
    "\\bxox[abposr]-[A-Za-z0-9-]\\{10,\\}"
    "\\bAKIA[0-9A-Z]\\{16\\}"
    "\\bAIza[0-9A-Za-z_-]\\{35\\}"
    "-----BEGIN [A-Z ]*PRIVATE KEY-----"
    "\\bBearer [A-Za-z0-9._~+/=-]\\{20,\\}")
  "Regexps matching keys and tokens in a variable's printed value.
They are matched, case-sensitively, against the value as
describe_symbol would print it; a match hides the value as a secret
name does (see `agent-q-sensitive-variable-patterns').  The defaults
match the usual API key formats (OpenAI and Anthropic sk-, Groq,
GitHub, GitLab, Slack, AWS, Google), private keys in PEM form and
bearer tokens: a gptel backend holding its :key, say.  Besides these,
`agent-q-hide-token-like-values' hides values holding a long token of
mixed-case letters and digits."
  :type '(repeat regexp)
  :group 'agent-q)

(defcustom agent-q-hide-token-like-values t
  "Non-nil means describe_symbol treats long random-looking strings as secrets.
A string of 32 or more letters, digits, - and _ with at least one
digit, one lower-case and one upper-case letter, in a variable's
printed value, hides the value (see
`agent-q-sensitive-value-patterns')."
  :type 'boolean
  :group 'agent-q)

(defcustom agent-q-library-directories nil
  "More directories whose libraries' variables describe_symbol shows freely.
Variables defined in files under Emacs's Lisp directory, the package
directories (`package-user-dir', `package-directory-list'), site-lisp
directories and agent-q's own directory are shown; add here the
directories of libraries you install otherwise (straight.el's build
directory, a checkout on `load-path').  A variable defined anywhere
else, such as a file of secrets in `user-emacs-directory', has its
value hidden unless the user approves (see
`agent-q-sensitive-variable-patterns')."
  :type '(repeat directory)
  :group 'agent-q)

(defconst agent-q-builtins--own-directory
  (file-name-directory (or load-file-name buffer-file-name default-directory))
  "The directory agent-q's Lisp files were loaded from.")


;;;; Symbols

(defun agent-q-builtins--lookup (name)
  "Return (SYMBOL) when a symbol named NAME is interned, else nil.
A list, because the symbol may be nil: `intern-soft' returns nil both
for \"nil\" and for a name that is not interned."
  (let ((sym (intern-soft name)))
    (cond (sym (list sym))
          ((equal name "nil") (list nil)))))

(defun agent-q-builtins--constant-p (sym)
  "Return non-nil when SYM is a constant: nil, t or a keyword."
  (or (memq sym '(nil t)) (keywordp sym)))

(defun agent-q-builtins--features-table ()
  "Return a hash table of the loaded features, for quick lookups."
  (let ((table (make-hash-table :test #'eq :size (length features))))
    (dolist (f features) (puthash f t table))
    table))

(defun agent-q-builtins--defined-p (sym features-table)
  "Return non-nil when SYM has a kind (see `agent-q-builtins--symbol-kinds').
FEATURES-TABLE is `agent-q-builtins--features-table'.  Cheap: no list
is built, so it can run on every interned symbol."
  (or (fboundp sym) (boundp sym)
      (get sym 'variable-documentation)
      (facep sym)
      (gethash sym features-table)
      (get sym 'cl--class)))

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
    (cond ((agent-q-builtins--constant-p sym) (push "constant" kinds))
          ((or (boundp sym) (get sym 'variable-documentation))
           (push (if (custom-variable-p sym) "user option" "variable") kinds)))
    (when (facep sym) (push "face" kinds))
    (when (featurep sym) (push "feature" kinds))
    (when (get sym 'cl--class) (push "type" kinds))
    (nreverse kinds)))

(defun agent-q-builtins--close-matches (name &optional predicate)
  "Return up to 10 names of defined symbols close to NAME.
PREDICATE, when non-nil, filters the candidate symbols.  Names within
edit distance 2 come first, the closest first, then the shortest names
that contain NAME.
The names are filtered in C first (`all-completions' with
`completion-regexp-list'): a name within edit distance 2 of NAME
contains one of three pieces of NAME intact (two edits change at most
two of them), and so does a name containing NAME; only the names
containing a piece cost a Lisp call.  For a NAME shorter than 6
characters, only names at most 2 characters longer are considered."
  (let* ((containing nil)
         (near nil)
         (len (length name))
         (features-table (agent-q-builtins--features-table))
         (third (/ len 3))
         (pieces (delete-dups
                  (seq-remove #'string-empty-p
                              (list (substring name 0 third)
                                    (substring name third (- len third))
                                    (substring name (- len third))))))
         (completion-ignore-case nil)
         (completion-regexp-list
          (append (and pieces (list (mapconcat #'regexp-quote pieces "\\|")))
                  ;; Pieces of one or two characters are in most
                  ;; names: bound the length too (so a short NAME
                  ;; finds names containing it only up to 2 longer).
                  (and (< len 6)
                       (list (format "\\`.\\{%d,%d\\}\\'" (max 0 (- len 2)) (+ len 2)))))))
    (all-completions
     "" obarray
     (lambda (sym)
       (let* ((candidate (symbol-name sym))
              (clen (length candidate))
              (edit-distance nil)
              (where (cond ((and (> len 2) (> clen len) (string-search name candidate))
                            'containing)
                           ((and (<= (abs (- clen len)) 2)
                                 (not (string= candidate name))
                                 (<= (setq edit-distance (string-distance name candidate)) 2))
                            'near))))
         (when (and where
                    (agent-q-builtins--defined-p sym features-table)
                    (or (null predicate) (funcall predicate sym)))
           (if (eq where 'near)
               (push (cons edit-distance candidate) near)
             (push candidate containing))))
       nil))
    (let ((sorted (append (mapcar #'cdr
                                  (sort near (lambda (a b)
                                               (or (< (car a) (car b))
                                                   (and (= (car a) (car b))
                                                        (string< (cdr a) (cdr b)))))))
                          (seq-take
                           (sort containing
                                 (lambda (a b)
                                   (or (< (length a) (length b))
                                       (and (= (length a) (length b))
                                            (string< a b)))))
                           10))))
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

;;;; Introspection: describe_symbol and secrets

(defun agent-q-builtins--library-roots ()
  "Return the directories holding libraries, as true directory names.
Emacs's Lisp directory, the package directories, the site-lisp
directories on `load-path', `agent-q-library-directories' and agent-q's
own directory.  Remote directories are left out (never contacted), and
so are / and the home directory itself."
  (let ((dirs (append
               (list (expand-file-name "../lisp/" data-directory)
                     (and (boundp 'lisp-directory) (symbol-value 'lisp-directory))
                     (if (boundp 'package-user-dir)
                         (symbol-value 'package-user-dir)
                       (locate-user-emacs-file "elpa"))
                     agent-q-builtins--own-directory)
               (and (boundp 'package-directory-list)
                    (symbol-value 'package-directory-list))
               ;; The whole site-lisp tree of each site-lisp directory
               ;; on `load-path' (its elpa/ included), as who_calls does.
               (delq nil (mapcar (lambda (d)
                                   (and (stringp d)
                                        (string-match "\\`\\(.*/site-lisp\\)\\(?:/\\|\\'\\)" d)
                                        (match-string 1 d)))
                                 load-path))
               agent-q-library-directories)))
    (seq-remove #'agent-q-builtins--too-broad-p
                (delete-dups
                 (mapcar (lambda (d)
                           (file-name-as-directory (file-truename (expand-file-name d))))
                         (seq-filter (lambda (d) (and (stringp d) (not (file-remote-p d))))
                                     dirs))))))

(defun agent-q-builtins--private-file-p (file)
  "Return non-nil when FILE is outside the libraries and the allowed directories."
  (or (file-remote-p file)
      (let ((true (file-truename file)))
        (not (seq-some (lambda (dir) (string-prefix-p dir true))
                       (append (agent-q-builtins--library-roots)
                               (agent-q-builtins--allowed-directories)))))))

(defun agent-q-builtins--token-like-p (text)
  "Return the first long random-looking token in TEXT, or nil.
That is a run of 32 or more letters, digits, - and _ with at least one
digit, one lower-case and one upper-case letter (see
`agent-q-hide-token-like-values').  Linear in the length of TEXT."
  (let ((case-fold-search nil)
        (pos 0)
        (found nil))
    (while (and (not found) (string-match "[A-Za-z0-9_-]\\{32,\\}" text pos))
      (let ((run (match-string 0 text)))
        (setq pos (match-end 0))
        (when (and (string-match-p "[0-9]" run)
                   (string-match-p "[a-z]" run)
                   (string-match-p "[A-Z]" run))
          (setq found run))))
    found))

(defun agent-q-builtins--secret-reason (sym printed)
  "Return why the value of the variable SYM may be a secret, or nil.
PRINTED is its value as describe_symbol prints it.  See
`agent-q-sensitive-variable-patterns' for the rules."
  (unless (agent-q-builtins--constant-p sym)
    (let* ((case-fold-search t)
           (name (symbol-name sym))
           (pattern (seq-find (lambda (re) (string-match-p re name))
                              agent-q-sensitive-variable-patterns))
           (file (and (not pattern) (symbol-file sym 'defvar))))
      (cond
       (pattern
        (format "its name looks like a secret's (it matches %s in agent-q-sensitive-variable-patterns)"
                pattern))
       ((and file (agent-q-builtins--private-file-p file))
        (format "it is defined in %s, outside the library directories and the allowed directories"
                file))
       ((and (null file)
             (not (special-variable-p sym))
             (not (get sym 'variable-documentation)))
        "no loaded library defines it (it was set with setq, perhaps in an init file)")
       ((let ((case-fold-search nil))
          (seq-some (lambda (re) (string-match-p re printed))
                    agent-q-sensitive-value-patterns))
        "its value holds what looks like a key or token (agent-q-sensitive-value-patterns)")
       ((and agent-q-hide-token-like-values (agent-q-builtins--token-like-p printed))
        "its value holds a long random-looking token")))))

(defun agent-q-builtins--describe-symbol-guard (args)
  "Say why describe_symbol with ARGS needs the user's approval, or nil.
Only a request to show the value (show_value) of a variable whose
value may be a secret needs it; see `agent-q-builtins--secret-reason'."
  (when (eq (agent-q-builtins--arg args "show_value") t)
    (let* ((name (string-trim (or (agent-q-builtins--arg args "symbol") "")))
           (found (and (not (string-empty-p name)) (agent-q-builtins--lookup name)))
           (sym (car found)))
      (when (and found (boundp sym))
        (let ((why (agent-q-builtins--secret-reason
                    sym (agent-q-builtins--print (symbol-value sym)))))
          (and why
               (format "describe_symbol would show the value of the variable %s, and %s"
                       name why)))))))

(defun agent-q-builtins--value-text (sym show-value)
  "Return the \"Value:\" line of describe_symbol for the bound variable SYM.
SHOW-VALUE non-nil means the model asked to see a value that may be a
secret; it is shown only when the user approved this call."
  (let* ((printed (agent-q-builtins--print (symbol-value sym)))
         (why (agent-q-builtins--secret-reason sym printed))
         (local (if (local-variable-if-set-p sym)
                    "\n(automatically buffer-local when set)"
                  "")))
    (cond
     ((null why) (format "Value: %s%s" printed local))
     ((and show-value (plist-get agent-q-call-context :approved))
      (format "Value (shown with the user's approval): %s%s" printed local))
     (t
      (format "Value: hidden, because %s.%s%s" why
              (if show-value
                  " The user did not approve showing it."
                " Pass show_value true to ask the user to show it.")
              local)))))

(defun agent-q-builtins--describe-symbol (args)
  "Describe the symbol named in ARGS (\"symbol\").
Return what it is, its signature, documentation, current value and
where it is defined; fail when no such symbol exists, with close
matches.  A value that may be a secret is hidden unless ARGS has
\"show_value\" true and the user approved (see
`agent-q-builtins--describe-symbol-guard')."
  (let* ((name (string-trim (or (agent-q-builtins--arg args "symbol") "")))
         (found (and (not (string-empty-p name)) (agent-q-builtins--lookup name)))
         (sym (car found)))
    (cond
     ((string-empty-p name)
      (agent-q-tool-fail "%s" "No symbol given: pass the name of a symbol."))
     ((or (null found)
          (and (null (agent-q-builtins--symbol-kinds sym))
               (null (symbol-plist sym))))
      (agent-q-tool-fail "Symbol %s not found%s" name
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
                                      (agent-q-builtins--error-text err))))))
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
                      (agent-q-builtins--value-text
                       sym (eq (agent-q-builtins--arg args "show_value") t))
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

(defun agent-q-builtins--apropos-collect (pattern type)
  "Return (TOTAL . BUCKETS) for the symbols of TYPE whose names contain PATTERN.
PATTERN matches ignoring case; TYPE is one of the symbols `any',
`function', `command', `variable' or `face'.  BUCKETS is a vector:
element N lists the matches whose name has N characters (the last
one, the longer names).  One walk of the obarray, in C: the names are
matched by `all-completions' with `completion-regexp-list', and only
the symbols whose names match cost a Lisp call; nothing is sorted."
  (let* ((completion-ignore-case t)
         (completion-regexp-list (list (regexp-quote pattern)))
         (features-table (agent-q-builtins--features-table))
         (last 64)
         (buckets (make-vector (1+ last) nil))
         (total 0))
    (all-completions
     "" obarray
     (lambda (sym)
       (when (pcase type
               ('any (agent-q-builtins--defined-p sym features-table))
               ('function (fboundp sym))
               ('command (and (fboundp sym) (commandp sym)))
               ('variable (and (not (agent-q-builtins--constant-p sym))
                               (or (boundp sym)
                                   (get sym 'variable-documentation))))
               ('face (facep sym)))
         (setq total (1+ total))
         (let ((i (min (length (symbol-name sym)) last)))
           (aset buckets i (cons sym (aref buckets i)))))
       ;; Nothing is collected by all-completions itself.
       nil))
    (cons total buckets)))

(defun agent-q-builtins--shortest (buckets limit)
  "Return the LIMIT shortest symbols of BUCKETS, by length then name.
BUCKETS is as `agent-q-builtins--apropos-collect' returns.  Only the
buckets needed are sorted."
  (let ((shown nil) (i 0) (n 0) (last (1- (length buckets))))
    (while (and (< n limit) (<= i last))
      (let ((bucket (aref buckets i)))
        (when bucket
          (setq bucket (sort bucket
                             (if (< i last)
                                 #'string<
                               (lambda (a b)
                                 (let ((la (length (symbol-name a)))
                                       (lb (length (symbol-name b))))
                                   (or (< la lb) (and (= la lb) (string< a b))))))))
          (let ((taken (seq-take bucket (- limit n))))
            (setq shown (nconc shown taken) n (+ n (length taken))))))
      (setq i (1+ i)))
    shown))

(defun agent-q-builtins--apropos-search (args)
  "Return the symbols with ARGS's \"pattern\" in their name.
The optional \"type\" restricts them to functions, commands,
variables or faces.  No match is a successful answer; a blank pattern
or an unknown type is a failure."
  (let* ((pattern (or (agent-q-builtins--arg args "pattern") ""))
         (type (or (agent-q-builtins--arg args "type") "any")))
    (cond
     ((agent-q-builtins--blank-p pattern)
      (agent-q-tool-fail "%s" "No pattern given: pass part of a symbol name, e.g. \"buffer-list\"."))
     ((not (member type '("any" "function" "command" "variable" "face")))
      (agent-q-tool-fail "%s" (format "Unknown type '%s': use any, function, command, variable or face."
                                      type)))
     (t
      (pcase-let* ((`(,total . ,buckets)
                    (agent-q-builtins--apropos-collect pattern (intern type)))
                   (shown (agent-q-builtins--shortest buckets agent-q-builtins-apropos-limit)))
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
         (found (and (not (string-empty-p name)) (agent-q-builtins--lookup name)))
         (sym (car found)))
    (cond
     ((string-empty-p name)
      (agent-q-tool-fail "%s" "No function given: pass the name of a function."))
     ((null found)
      (agent-q-tool-fail "Function %s not found%s" name
                         (agent-q-builtins--did-you-mean name #'fboundp)))
     ((not (fboundp sym))
      (let ((kinds (agent-q-builtins--symbol-kinds sym)))
        (agent-q-tool-fail "%s is not a function%s%s" name
                           (if kinds (format " (it is a %s)" (string-join kinds ", ")) "")
                           (agent-q-builtins--did-you-mean name #'fboundp))))
     (t
      (let ((sig (agent-q-builtins--signature sym)))
        (cond
         ((null sig)
          (agent-q-tool-fail "The argument list of %s is not available." name))
         ((cdr sig)
          (format "%s\n(advertised calling convention; the full argument list is %s)"
                  (car sig) (cdr sig)))
         (t (car sig))))))))

;;;; Introspection: list_package_symbols

(defun agent-q-builtins--library-entries (package)
  "Return (FILE . ENTRIES) from `load-history' for PACKAGE, or nil.
PACKAGE matches a feature the file provides or the file's base name."
  (let ((feature (car (agent-q-builtins--lookup package))))
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
      (agent-q-tool-fail "%s" "No package given: pass a feature or library name such as \"subr-x\"."))
     ((null entry)
      (agent-q-tool-fail
       "%s"
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
                  "")))))
     (t
      (let ((items nil) (hidden 0) (seen (make-hash-table :test #'equal)))
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
            (when (and pair (symbolp (car pair)) (not (gethash pair seen)))
              (puthash pair t seen)
              (if (and (not internal)
                       (string-search "--" (symbol-name (car pair))))
                  (cl-incf hidden)
                (push pair items)))))
        (setq items (sort items (lambda (a b) (string< (car a) (car b)))))
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
  (let ((sym (car (agent-q-builtins--lookup name))))
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
  "End the call as a failure: there is no class named NAME."
  (agent-q-tool-fail "No class or struct type named %s. class_slots and class_hierarchy work on EIEIO classes (defclass) and cl-defstruct types; the library defining it may not be loaded.%s"
                     name
                     (agent-q-builtins--did-you-mean
                      name (lambda (s) (get s 'cl--class)))))

(defun agent-q-builtins--initform-hidden-reason (class-name printed)
  "Return why a slot's initform, PRINTED, of the class CLASS-NAME is hidden.
nil when it may be shown.  As for a variable's value in
describe_symbol (see `agent-q-builtins--secret-reason'): a class
defined in a file outside the library directories and the allowed
directories (a private secrets.el) keeps its initforms to itself, and
so does an initform that looks like a key or token."
  (let ((file (symbol-file class-name 'define-type)))
    (cond
     ((and file (agent-q-builtins--private-file-p file))
      (format "the class is defined in %s, outside the library directories and the allowed directories"
              file))
     ((let ((case-fold-search nil))
        (seq-some (lambda (re) (string-match-p re printed))
                  agent-q-sensitive-value-patterns))
      "it holds what looks like a key or token (agent-q-sensitive-value-patterns)")
     ((and agent-q-hide-token-like-values (agent-q-builtins--token-like-p printed))
      "it holds a long random-looking token"))))

(defun agent-q-builtins--class-slots (args)
  "List the slots of the class or struct type named in ARGS (\"class\").
Initforms that may hold a secret are hidden, saying why (see
`agent-q-builtins--initform-hidden-reason')."
  (let* ((name (string-trim (or (agent-q-builtins--arg args "class") "")))
         (class (and (not (string-empty-p name))
                     (agent-q-builtins--find-class name))))
    (cond
     ((string-empty-p name)
      (agent-q-tool-fail "%s" "No class given: pass the name of a class."))
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
                   (let* ((printed (agent-q-builtins--print
                                    (cl--slot-descriptor-initform slot)))
                          (why (agent-q-builtins--initform-hidden-reason
                                (cl--class-name class) printed)))
                     (if why
                         (format "\n    initform: hidden, because %s" why)
                       (format "\n    initform: %s" printed)))
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

(defun agent-q-builtins--direct-children (class)
  "Return the names of the direct subclasses of CLASS.
An EIEIO class keeps the list of its children; a struct type keeps
its descendants' tags in the variable named by its children symbol.
Only when neither is there is the whole obarray walked."
  (let ((tags (and (eq (type-of class) 'cl-structure-class)
                   (let ((var (cl--struct-class-children-sym class)))
                     (and (symbolp var) (boundp var) (symbol-value var))))))
    (cond
     ((agent-q-builtins--eieio-class-p class)
      (copy-sequence (eieio--class-children class)))
     ((and tags (cl-every (lambda (tag) (cl--class-p (get tag 'cl--class))) tags))
      (let ((children nil))
        (dolist (tag tags)
          (let ((c (get tag 'cl--class)))
            (when (and (not (eq c class)) (memq class (cl--class-parents c)))
              (push (cl--class-name c) children))))
        (delete-dups children)))
     (t
      (let ((children nil))
        (mapatoms
         (lambda (s)
           (let ((c (get s 'cl--class)))
             (when (and c (cl--class-p c)
                        (memq class (cl--class-parents c)))
               (push s children)))))
        children)))))

(defun agent-q-builtins--class-hierarchy (args)
  "Show the parents and direct children of the class named in ARGS."
  (let* ((name (string-trim (or (agent-q-builtins--arg args "class") "")))
         (class (and (not (string-empty-p name))
                     (agent-q-builtins--find-class name))))
    (cond
     ((string-empty-p name)
      (agent-q-tool-fail "%s" "No class given: pass the name of a class."))
     ((null class) (agent-q-builtins--class-not-found name))
     (t
      (let ((sym (cl--class-name class))
            (children (sort (agent-q-builtins--direct-children class) #'string<)))
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
        (agent-q-tool-fail "Error: %s" (cadr read))
      (let* ((form (cadr read))
             (expansion
              (condition-case err
                  (if full (macroexpand-all form) (macroexpand-1 form))
                (error (agent-q-tool-fail "Error while expanding: %s"
                                          (agent-q-builtins--error-text err)))))
             (text (agent-q-builtins--pretty-print
                    expansion (* 4 agent-q-builtins-max-value-chars))))
        (if (equal expansion form)
            (format "No expansion: the form is not a macro call%s, so it expands to itself:\n%s"
                    (if full " and contains none" "")
                    text)
          (format "Expansion (%s):\n%s"
                  (if full "macroexpand-all" "one step, macroexpand-1")
                  text))))))

(defun agent-q-builtins--pretty-print (value max)
  "Return VALUE pretty-printed, or printed on one line when it is long.
The value is first printed within MAX characters (see
`agent-q-builtins--print'); only when the whole of it fits is it
pretty-printed, which costs time in proportion to the text."
  (let ((flat (car (agent-q-builtins--bounded-output
                    (1+ max)
                    (lambda (stream)
                      (let ((print-length agent-q-builtins--print-length)
                            (print-level agent-q-builtins--print-level)
                            (print-escape-newlines t)
                            (print-circle nil))
                        (prin1 (agent-q-builtins--shown-part value max) stream)))))))
    (if (> (length flat) max)
        (agent-q-builtins--print value max)
      (let ((print-length agent-q-builtins--print-length)
            (print-level agent-q-builtins--print-level)
            (print-escape-newlines t)
            (print-circle nil))
        (string-trim-right (pp-to-string value))))))

;;;; Walks of the obarray run compiled

(defconst agent-q-builtins--obarray-walkers
  '(agent-q-builtins--defined-p
    agent-q-builtins--constant-p
    agent-q-builtins--apropos-collect
    agent-q-builtins--close-matches)
  "The functions that run a Lisp function on each of many interned symbols.
Interpreted (agent-q loaded from its .el files, as the README's install
does), apropos_search of \"-\" over 100,000 symbols takes about 2.7
times as long as compiled, and more than 100 ms.")

;; When this file was loaded from source, compile just these few
;; functions in place (a few milliseconds, once).
;; Natively compiled (a subr: an eln of this file, which an interactive
;; Emacs makes by itself) is compiled too: `byte-compile' would only say
;; "already compiled" for each.
(unless (let ((f (symbol-function 'agent-q-builtins--apropos-collect)))
          (or (byte-code-function-p f) (subrp f)))
  (require 'bytecomp)
  (let ((byte-compile-warnings nil))
    (with-demoted-errors "agent-q: cannot compile the obarray walks: %S"
      (mapc #'byte-compile agent-q-builtins--obarray-walkers))))

(provide 'agent-q-introspection)

;;; agent-q-introspection.el ends here
