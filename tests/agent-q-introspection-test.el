;;; agent-q-introspection-test.el --- Introspection tools: truthful outcomes, secrets, bounds  -*- lexical-binding: t -*-

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

;; The introspection tools through `agent-q-execute-tool-calls' with the
;; registered built-ins and the real module:
;;
;; - outcomes: a lookup of something that does not
;;   exist is a failure (:success nil, :status "failure", counted as a
;;   failure); a search that finds nothing is a success; `nil' and `t'
;;   are symbols;
;; - secrets: describe_symbol, a safe tool, does not
;;   show the value of a variable that may be a secret -- a secret-looking
;;   name, a definition in a private file (a real library written to and
;;   loaded from a temporary directory), a variable only set with setq, a
;;   value that looks like a key -- unless the model asks (show_value)
;;   and the user approves through `agent-q-approval-function';
;; - bounds: huge values are printed within bounds
;;   (checked by the characters allocated, not by time), and the walks of
;;   the obarray give the right answers.
;;
;; Three tests guard what was written for speed: apropos_search's exact
;; count and order, list_package_symbols without duplicates, and the
;; bounded printing of huge values.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'subr-x)
(require 'eieio)
(require 'agent-q)

(defmacro agent-q-introspection-test--with (registry &rest body)
  "Run BODY with REGISTRY bound to a fresh registry of the built-in tools.
The audit file is a fresh temporary file; the approval function
denies, and records each question in `agent-q-introspection-test--asked'."
  (declare (indent 1) (debug (symbolp body)))
  `(let* ((,registry (agent-q-make-registry))
          (agent-q-audit-file (make-temp-file "agent-q-audit" nil ".jsonl"))
          (agent-q-tool-execution-functions nil)
          (agent-q-confirm-safety-levels '(:dangerous))
          (agent-q-introspection-test--asked nil)
          (agent-q-approval-function #'agent-q-introspection-test--deny))
     (agent-q-register-builtin-tools ,registry)
     (unwind-protect (progn ,@body)
       (delete-file agent-q-audit-file))))

(defvar agent-q-introspection-test--asked nil
  "The questions the test approval functions were asked: (TOOL ARGS REASON).")

(defun agent-q-introspection-test--deny (tool args)
  "Record the question about TOOL with ARGS and deny it."
  (push (list tool args (plist-get agent-q-approval-context :reason))
        agent-q-introspection-test--asked)
  '(:denied "not now"))

(defun agent-q-introspection-test--approve (tool args)
  "Record the question about TOOL with ARGS and approve it."
  (push (list tool args (plist-get agent-q-approval-context :reason))
        agent-q-introspection-test--asked)
  :approved)

(defun agent-q-introspection-test--call (registry name &rest arguments)
  "Run the tool NAME with ARGUMENTS (a plist) in REGISTRY; return the result."
  (car (agent-q-execute-tool-calls
        (list (list :id "t" :name name :arguments arguments))
        registry)))

(defun agent-q-introspection-test--status (result)
  "The :status of RESULT's metadata."
  (plist-get (plist-get result :metadata) :status))

(defun agent-q-introspection-test--metric (registry name key)
  "The metric KEY of the tool NAME in REGISTRY."
  (plist-get (cdr (assoc name (agent-q-tool-metrics registry))) key))

(defun agent-q-introspection-test--audit ()
  "The audit file's records, as plists."
  (with-temp-buffer
    (insert-file-contents agent-q-audit-file)
    (mapcar (lambda (line) (json-parse-string line :object-type 'plist))
            (split-string (buffer-string) "\n" t))))

(defun agent-q-introspection-test--succeeded (result)
  "Check that RESULT is a success; return its content."
  (should (eq (plist-get result :success) t))
  (should (equal (agent-q-introspection-test--status result) "success"))
  (plist-get result :content))

(defun agent-q-introspection-test--failed (result)
  "Check that RESULT is a failure; return its content."
  (should (eq (plist-get result :success) nil))
  (should (equal (agent-q-introspection-test--status result) "failure"))
  (should (equal (plist-get result :error) (plist-get result :content)))
  (plist-get result :content))

;;;; Outcomes

(ert-deftest agent-q-introspection-test-nil-and-t-are-symbols ()
  ;; (intern-soft "nil") is nil, which made describe_symbol say "Symbol
  ;; nil not found".
  (agent-q-introspection-test--with reg
    (let ((nil-out (agent-q-introspection-test--succeeded
                    (agent-q-introspection-test--call reg "describe_symbol" :symbol "nil")))
          (t-out (agent-q-introspection-test--succeeded
                  (agent-q-introspection-test--call reg "describe_symbol" :symbol "t"))))
      (should (string-match-p "\\`Symbol: nil\nKind: constant\nValue: nil$" nil-out))
      ;; Emacs 30 also defines t as a built-in type (the root of its type hierarchy).
      (should (string-match-p (concat "\\`Symbol: t\nKind: constant"
                                      (if (get t 'cl--class) ", type" "")
                                      "\nValue: t$")
                              t-out)))
    (should (string-match-p
             "\\`nil is not a function (it is a constant)"
             (agent-q-introspection-test--failed
              (agent-q-introspection-test--call reg "function_arglist" :function "nil"))))
    (should (= 0 (agent-q-introspection-test--metric reg "describe_symbol" :failures)))
    (should (= 1 (agent-q-introspection-test--metric reg "function_arglist" :failures)))))

(ert-deftest agent-q-introspection-test-lookups-of-nothing-fail ()
  (agent-q-introspection-test--with reg
    (dolist (case '(("describe_symbol" (:symbol "string-trimx") "\\`Symbol string-trimx not found\nDid you mean: .*string-trim")
                    ("describe_symbol" (:symbol "  ") "\\`No symbol given")
                    ("function_arglist" (:function "fill-column") "\\`fill-column is not a function (it is a user option)")
                    ("function_arglist" (:function "string-trimm") "\\`Function string-trimm not found\nDid you mean: string-trim")
                    ("list_package_symbols" (:package "no-such-package-zz") "\\`Package no-such-package-zz not found")
                    ("class_slots" (:class "no-such-class-zz") "\\`No class or struct type named no-such-class-zz")
                    ("class_hierarchy" (:class "car") "\\`No class or struct type named car")
                    ("apropos_search" (:pattern " ") "\\`No pattern given")
                    ("macroexpand_form" (:form "(when a") "\\`Error: Incomplete form")))
      (pcase-let ((`(,tool ,args ,expected) case))
        (should (string-match-p expected
                                (agent-q-introspection-test--failed
                                 (apply #'agent-q-introspection-test--call reg tool args))))))
    (dolist (tool '(("describe_symbol" . 2) ("function_arglist" . 2) ("list_package_symbols" . 1)
                    ("class_slots" . 1) ("class_hierarchy" . 1) ("apropos_search" . 1)
                    ("macroexpand_form" . 1)))
      (should (= (cdr tool) (agent-q-introspection-test--metric reg (car tool) :failures))))
    ;; macroexpand_form is cautious: audited, as a failure.
    (let ((result (car (last (agent-q-introspection-test--audit)))))
      (should (equal (plist-get result :tool) "macroexpand_form"))
      (should (equal (plist-get result :status) "failure")))))

(defmacro agent-q-introspection-test--failing-macro ()
  "A macro whose expansion signals."
  (error "Expansion refused"))

(ert-deftest agent-q-introspection-test-searches-that-find-nothing-succeed ()
  (agent-q-introspection-test--with reg
    (should (equal "No symbols matching 'zzqxqzz-none'."
                   (agent-q-introspection-test--succeeded
                    (agent-q-introspection-test--call reg "apropos_search" :pattern "zzqxqzz-none"))))
    (should (string-prefix-p "No expansion: the form is not a macro call"
                             (agent-q-introspection-test--succeeded
                              (agent-q-introspection-test--call
                               reg "macroexpand_form" :form "(car x)"))))
    (should (equal "Error while expanding: Expansion refused"
                   (agent-q-introspection-test--failed
                    (agent-q-introspection-test--call
                     reg "macroexpand_form" :form "(agent-q-introspection-test--failing-macro)"))))
    (should (= 0 (agent-q-introspection-test--metric reg "apropos_search" :failures)))
    (should (= 1 (agent-q-introspection-test--metric reg "macroexpand_form" :failures)))))

;;;; Secrets

(defmacro agent-q-introspection-test--with-private-library (dir allowed &rest body)
  "Run BODY with a library defining a secret and a benign variable loaded.
The library is a real file, agent-q-test-secrets.el, written to the
fresh temporary directory bound to DIR and loaded from there.  When
ALLOWED is non-nil, DIR is the allowed directory; otherwise another
empty temporary directory is.  The library is unloaded afterwards."
  (declare (indent 2) (debug (symbolp form body)))
  `(let* ((,dir (file-name-as-directory (file-truename (make-temp-file "agent-q-private" t))))
          (other (file-name-as-directory (file-truename (make-temp-file "agent-q-allowed" t))))
          (agent-q-allowed-directories (list (if ,allowed ,dir other))))
     (unwind-protect
         (progn
           (with-temp-file (expand-file-name "agent-q-test-secrets.el" ,dir)
             (insert ";;; agent-q-test-secrets.el --- test  -*- lexical-binding: t -*-\n"
                     "(defvar my-secret-token \"hunter2-do-not-show\"\n"
                     "  \"The token of a test service.\")\n"
                     "(defvar my-benign-setting '(alpha beta gamma)\n"
                     "  \"A harmless list of a test.\")\n"
                     "(defvar my-service-config '(:host \"example.org\" :key \"sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv\")\n"
                     "  \"A configuration that embeds a key.\")\n"
                     "(defvar my-session-blob \"Xy7kQ2mN9pL4rT8vB3cD6fG1hJ5wZ0aE\"\n"
                     "  \"A random-looking token.\")\n"
                     "(provide 'agent-q-test-secrets)\n"))
           (load (expand-file-name "agent-q-test-secrets.el" ,dir) nil t)
           ,@body)
       ;; Unbind the variables and drop the file from `load-history'
       ;; (the cross-reference tools scan the files loaded).
       (when (featurep 'agent-q-test-secrets)
         (unload-feature 'agent-q-test-secrets t))
       (delete-directory ,dir t)
       (delete-directory other t))))

(ert-deftest agent-q-introspection-test-secret-values-are-hidden-without-asking ()
  (agent-q-introspection-test--with-private-library dir nil
    (agent-q-introspection-test--with reg
      (let ((secret (agent-q-introspection-test--succeeded
                     (agent-q-introspection-test--call reg "describe_symbol" :symbol "my-secret-token")))
            (benign (agent-q-introspection-test--succeeded
                     (agent-q-introspection-test--call reg "describe_symbol" :symbol "my-benign-setting"))))
        ;; The name looks like a secret's.
        (should-not (string-match-p "hunter2" secret))
        (should (string-match-p "^Value: hidden, because its name looks like a secret's" secret))
        (should (string-match-p "Pass show_value true to ask the user" secret))
        ;; Kind and documentation are shown all the same.
        (should (string-match-p "^Kind: variable$" secret))
        (should (string-match-p "The token of a test service" secret))
        ;; A benign name, but defined in a private file.
        (should-not (string-match-p "alpha" benign))
        (should (string-match-p (concat "^Value: hidden, because it is defined in "
                                        (regexp-quote dir) "agent-q-test-secrets.el")
                                benign))
        (should (string-match-p "A harmless list of a test" benign)))
      ;; Nobody was asked, nothing was denied.
      (should-not agent-q-introspection-test--asked)
      (should (= 0 (agent-q-introspection-test--metric reg "describe_symbol" :denials))))))

(ert-deftest agent-q-introspection-test-show-value-asks-and-a-refusal-is-a-denial ()
  (agent-q-introspection-test--with-private-library dir nil
    (agent-q-introspection-test--with reg
      (let ((result (agent-q-introspection-test--call
                     reg "describe_symbol" :symbol "my-secret-token" :show_value t)))
        (should (eq (plist-get result :success) nil))
        (should (equal (agent-q-introspection-test--status result) "denied"))
        (should-not (string-match-p "hunter2" (plist-get result :content))))
      (pcase-let ((`(,tool ,args ,reason) (car agent-q-introspection-test--asked)))
        (should (equal tool "describe_symbol"))
        (should (equal args '(:symbol "my-secret-token" :show_value t)))
        (should (string-match-p "would show the value of the variable my-secret-token" reason)))
      (should (= 1 (agent-q-introspection-test--metric reg "describe_symbol" :denials)))
      (let ((records (agent-q-introspection-test--audit)))
        (should (= 1 (length records)))
        (should (equal (plist-get (car records) :event) "denied"))
        (should (string-match-p "my-secret-token" (plist-get (car records) :reason)))))))

(ert-deftest agent-q-introspection-test-show-value-approved-shows-it ()
  (agent-q-introspection-test--with-private-library dir nil
    (agent-q-introspection-test--with reg
      (let* ((agent-q-approval-function #'agent-q-introspection-test--approve)
             (out (agent-q-introspection-test--succeeded
                   (agent-q-introspection-test--call
                    reg "describe_symbol" :symbol "my-benign-setting" :show_value t))))
        (should (string-match-p "^Value (shown with the user's approval): (alpha beta gamma)$" out))
        (should (= 1 (length agent-q-introspection-test--asked)))
        (should (equal '("run" "result")
                       (mapcar (lambda (r) (plist-get r :event))
                               (agent-q-introspection-test--audit))))
        (should (equal "approved" (plist-get (car (agent-q-introspection-test--audit)) :decision)))))))

(ert-deftest agent-q-introspection-test-allowed-and-library-variables-are-shown ()
  (agent-q-introspection-test--with-private-library dir t
    (agent-q-introspection-test--with reg
      ;; The library is in an allowed directory: a benign variable is
      ;; shown, and show_value does not ask when there is nothing to hide.
      (should (string-match-p "^Value: (alpha beta gamma)$"
                              (agent-q-introspection-test--succeeded
                               (agent-q-introspection-test--call
                                reg "describe_symbol" :symbol "my-benign-setting"))))
      (should (string-match-p "^Value: (alpha beta gamma)$"
                              (agent-q-introspection-test--succeeded
                               (agent-q-introspection-test--call
                                reg "describe_symbol" :symbol "my-benign-setting" :show_value t))))
      ;; ... but a secret's name, or a key in the value, still hides it.
      (dolist (case '(("my-secret-token" . "its name looks like a secret's")
                      ("my-service-config" . "its value holds what looks like a key or token")
                      ("my-session-blob" . "its value holds a long random-looking token")))
        (let ((out (agent-q-introspection-test--succeeded
                    (agent-q-introspection-test--call reg "describe_symbol" :symbol (car case)))))
          (should (string-match-p (concat "^Value: hidden, because " (cdr case)) out))
          (should-not (string-match-p "hunter2\\|AbCdEf\\|Xy7kQ" out))))
      ;; Emacs's own variables, in C or in its lisp directory.
      (let ((fill-column 71))
        (should (string-match-p "^Value: 71$"
                                (agent-q-introspection-test--succeeded
                                 (agent-q-introspection-test--call
                                  reg "describe_symbol" :symbol "fill-column")))))
      (should (string-match-p (format "^Value: %d$" kill-ring-max)
                              (agent-q-introspection-test--succeeded
                               (agent-q-introspection-test--call
                                reg "describe_symbol" :symbol "kill-ring-max"))))
      (should-not agent-q-introspection-test--asked))))

(ert-deftest agent-q-introspection-test-setq-only-variables-are-hidden ()
  ;; A variable that no library defines was set with setq -- in an init
  ;; file, say, like an API key.
  (let ((var (intern "agent-q-introspection-test--undeclared")))
    (set var '(some private list))
    (unwind-protect
        (agent-q-introspection-test--with reg
          (let ((out (agent-q-introspection-test--succeeded
                      (agent-q-introspection-test--call
                       reg "describe_symbol" :symbol (symbol-name var)))))
            (should (string-match-p "^Value: hidden, because no loaded library defines it" out))
            (should-not (string-match-p "private list" out))))
      (makunbound var))))

(ert-deftest agent-q-introspection-test-sensitive-name-patterns ()
  (let ((case-fold-search t))
    (dolist (name '("gptel-api-key" "API_KEY" "openaiApiKey" "my-keys" "github-token"
                    "client-secret" "db-password" "smtp-passwd" "gpg-passphrase"
                    "aws-credentials" "auth-sources" "oauth2-state" "authorization-header"))
      (should (cl-some (lambda (re) (string-match-p re name))
                       agent-q-sensitive-variable-patterns)))
    (dolist (name '("keymap" "global-map" "echo-keystrokes" "monkey-mode" "user-full-name"
                    "package-author" "fill-column"))
      (should-not (cl-some (lambda (re) (string-match-p re name))
                           agent-q-sensitive-variable-patterns)))))

;;;; Bounds

(defvar agent-q-introspection-test--big nil
  "A variable holding a huge value, for the bound tests.")

(defconst agent-q-introspection-test--directory
  (file-name-directory (or load-file-name buffer-file-name))
  "This file's directory, allowed so that its variables are shown.")

(ert-deftest agent-q-introspection-test-huge-values-are-printed-within-bounds ()
  (agent-q-introspection-test--with reg
    (let ((agent-q-allowed-directories (list agent-q-introspection-test--directory)))
      (dolist (value (list (make-string (* 20 1000 1000) ?x)
                           (list (make-string (* 20 1000 1000) ?y) 'tail)
                           (vector 1 (list (make-string (* 20 1000 1000) ?z)))
                           (make-list 1000000 'abc)))
        (setq agent-q-introspection-test--big value)
        (let* ((before (nth 4 (memory-use-counts)))
               (out (agent-q-introspection-test--succeeded
                     (agent-q-introspection-test--call
                      reg "describe_symbol" :symbol "agent-q-introspection-test--big")))
               (allocated (- (nth 4 (memory-use-counts)) before)))
          (should (< (length out) 10000))
          (should (string-match-p "^Value: [\"(\\[]" out))
          (should (string-match-p "more characters not shown\\|\\.\\.\\.)" out))
          (should (< allocated 2000000))))
      (setq agent-q-introspection-test--big nil))))

(ert-deftest agent-q-introspection-test-apropos-is-exact-and-capped ()
  (agent-q-introspection-test--with reg
    (let* ((agent-q-builtins-apropos-limit 5)
           (out (agent-q-introspection-test--succeeded
                 (agent-q-introspection-test--call reg "apropos_search" :pattern "-")))
           (expected 0))
      ;; The count is exact: the same as a plain walk of the obarray.
      (mapatoms (lambda (s)
                  (when (and (string-search "-" (symbol-name s))
                             (or (fboundp s) (boundp s) (get s 'variable-documentation)
                                 (facep s) (featurep s) (get s 'cl--class)))
                    (setq expected (1+ expected)))))
      (should (string-prefix-p (format "Found %d symbol(s) matching '-':\n" expected) out))
      ;; The shortest names first, then by name.
      (should (string-match-p "\\`Found [0-9]+ symbol(s) matching '-':\n  - \\[function\\]\n  1- \\[function\\]\n" out))
      (should (string-match-p (format "\\[\\.\\.\\. %d more not shown" (- expected 5)) out)))
    ;; Case is ignored.
    (should (string-match-p "^  Info-mode \\[command\\]"
                            (agent-q-introspection-test--succeeded
                             (agent-q-introspection-test--call
                              reg "apropos_search" :pattern "info-MODE" :type "command"))))))

(cl-defstruct (agent-q-introspection-test--shape) (sides 0))
(cl-defstruct (agent-q-introspection-test--square
               (:include agent-q-introspection-test--shape (sides 4))))
(defclass agent-q-introspection-test--root () ()
  "A class with no parents.")

(ert-deftest agent-q-introspection-test-class-hierarchy-children ()
  (agent-q-introspection-test--with reg
    (should (string-match-p
             "Direct Subclasses:\n  agent-q-introspection-test--square"
             (agent-q-introspection-test--succeeded
              (agent-q-introspection-test--call
               reg "class_hierarchy" :class "agent-q-introspection-test--shape"))))
    ;; A class defined without parents is a child of
    ;; eieio-default-superclass (its parents list is empty).
    (should (string-match-p
             "^  agent-q-introspection-test--root$"
             (agent-q-introspection-test--succeeded
              (agent-q-introspection-test--call
               reg "class_hierarchy" :class "eieio-default-superclass"))))))

(ert-deftest agent-q-introspection-test-close-matches ()
  (agent-q-introspection-test--with reg
    (dolist (case '(("describe_symbol" :symbol "string-trimx" "string-trim")
                    ("describe_symbol" :symbol "buffer-lst" "buffer-list")
                    ("describe_symbol" :symbol "cdarr" "cdar")
                    ("function_arglist" :function "mapcarr" "mapcar")
                    ("class_slots" :class "cl-structure-objec" "cl-structure-object")))
      (pcase-let ((`(,tool ,key ,name ,expected) case))
        (should (string-match-p (concat "Did you mean: \\(?:.*, \\)?" (regexp-quote expected) "\\b")
                                (agent-q-introspection-test--failed
                                 (agent-q-introspection-test--call reg tool key name))))))))

(ert-deftest agent-q-introspection-test-package-symbols-once-each ()
  (agent-q-introspection-test--with reg
    (let* ((out (agent-q-introspection-test--succeeded
                 (agent-q-introspection-test--call
                  reg "list_package_symbols" :package "subr-x" :include_internal t)))
           (lines (seq-filter (lambda (l) (string-prefix-p "  " l)) (split-string out "\n"))))
      (should (equal lines (delete-dups (copy-sequence lines))))
      (should (string-match-p (format "\\`Package subr-x (%d symbols):" (length lines)) out)))))

(provide 'agent-q-introspection-test)

;;; agent-q-introspection-test.el ends here
