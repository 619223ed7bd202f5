;;; agent-q-test.el --- ERT tests for agent-q's registry and executor  -*- lexical-binding: t -*-

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

;; These tests drive the real module from Lisp: registration rules,
;; filtering, snapshots, schemas, the executor's safety enforcement,
;; hooks, metrics, audit log, limits and robustness.  Most use a private
;; registry from `agent-q-make-registry', so they do not depend on (or
;; disturb) the built-in tools in the global one.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'json)
(require 'agent-q)

(defun agent-q-test--greet-tool (&rest keys)
  "A small safe tool; KEYS override `agent-q-define-tool' arguments."
  (apply #'agent-q-define-tool "greet" "Greet someone by name."
         '((:name "who" :type :string :description "Who to greet")
           (:name "loud" :type :boolean :description "Shout?"))
         (append keys
                 (list :required '("who")
                       :categories '(:social)
                       :handler (lambda (args)
                                  (format "Hello, %s%s" (gethash "who" args)
                                          (if (gethash "loud" args) "!" ".")))))))

(defmacro agent-q-test--with-registry (var &rest body)
  "Bind VAR to a fresh registry and run BODY with a temporary audit file."
  (declare (indent 1))
  `(let* ((,var (agent-q-make-registry))
          (agent-q-audit-file (make-temp-file "agent-q-audit" nil ".jsonl"))
          (agent-q-tool-execution-functions nil)
          (agent-q-max-result-chars 20000))
     (unwind-protect (progn ,@body)
       (delete-file agent-q-audit-file))))

(defun agent-q-test--run (registry &rest calls)
  "Execute CALLS in REGISTRY; return the results."
  (agent-q-execute-tool-calls calls registry))

(defun agent-q-test--content (result)
  "The content of RESULT."
  (plist-get result :content))

;;;; Loading

(ert-deftest agent-q-test-module-loaded-with-matching-version ()
  (should (featurep 'agent-q-core))
  (should (equal agent-q-core-version agent-q-version))
  (should (get 'agent-q-tool-exists 'error-conditions))
  (should (memq 'agent-q-error (get 'agent-q-tool-exists 'error-conditions))))

;; Loading agent-q never asks and never builds: the child Emacs below
;; runs with `noninteractive' bound to nil (so a question would be
;; asked, and is recorded), and with `cargo' and `make' on its PATH
;; being scripts that leave a mark when run.

(defun agent-q-test--loader-run (setup)
  "Require the real agent-q from a temporary copy of lisp/ in a child Emacs.
SETUP is called with the copy's directory before the child starts
\(to add or change files there).  Returns a plist: :status, :output,
:built (non-nil when cargo or make ran), and :asked (non-nil when
the child asked the user anything)."
  (let* ((dir (make-temp-file "agent-q-loader" t))
         (bin (expand-file-name "bin" dir))
         (lisp (expand-file-name "lisp" dir))
         (mark (expand-file-name "built" dir))
         (source (file-name-directory (locate-library "agent-q.el"))))
    (unwind-protect
        (progn
          (make-directory bin)
          (make-directory lisp)
          (dolist (file (directory-files source t "\\.el\\'"))
            (copy-file file (expand-file-name (file-name-nondirectory file) lisp)))
          (dolist (tool '("cargo" "make"))
            (let ((script (expand-file-name tool bin)))
              (with-temp-file script
                (insert (format "#!/bin/sh\necho %s >> %s\n" tool (shell-quote-argument mark))))
              (set-file-modes script #o755)))
          (funcall setup lisp)
          (let* ((process-environment
                  (cons (concat "PATH=" bin path-separator (getenv "PATH")) process-environment))
                 (form
                  `(progn
                     (dolist (asker '(y-or-n-p yes-or-no-p read-from-minibuffer read-key
                                               read-char read-event read-string))
                       (advice-add asker :before
                                   (lambda (&rest _) (princ "ASKED\n") (kill-emacs 4))))
                     (defvar agent-q-always-compile-module)
                     ;; The option that once built the module without asking.
                     (setq agent-q-always-compile-module t)
                     (condition-case err
                         (let ((noninteractive nil)) (require 'agent-q))
                       (error (princ (error-message-string err))
                              (princ (format "\nCOMMAND %s" (fboundp 'agent-q-module-compile)))
                              (kill-emacs 3)))))
                 (status nil)
                 (output (with-temp-buffer
                           (setq status (call-process (expand-file-name invocation-name
                                                                        invocation-directory)
                                                      nil t nil "--batch" "-Q" "-L" lisp
                                                      "--eval" (prin1-to-string form)))
                           (buffer-string))))
            (list :status status :output output
                  :built (file-exists-p mark)
                  :asked (string-match-p "ASKED" output))))
      (delete-directory dir t))))

(ert-deftest agent-q-test-missing-module-names-the-build-command ()
  (let ((run (agent-q-test--loader-run #'ignore)))
    (should (equal (plist-get run :status) 3))
    (should-not (plist-get run :asked))
    (should-not (plist-get run :built))
    (let ((output (plist-get run :output)))
      (should (string-match-p (regexp-quote (concat "agent-q-core" module-file-suffix)) output))
      (should (string-match-p "module is missing" output))
      (should (string-match-p "M-x agent-q-module-compile" output))
      (should (string-match-p "make build" output))
      ;; The command the message names is there to be run.
      (should (string-match-p "COMMAND t" output)))))

(ert-deftest agent-q-test-version-mismatch-names-the-build-command ()
  (let ((run (agent-q-test--loader-run
              (lambda (lisp)
                (let ((file (expand-file-name "agent-q.el" lisp)))
                  (with-temp-file file
                    (insert-file-contents file)
                    (goto-char (point-min))
                    (re-search-forward "(defconst agent-q-version \"\\([^\"]+\\)\"")
                    (replace-match "9.9.9" t t nil 1)))
                (let ((module (concat "agent-q-core" module-file-suffix)))
                  (copy-file (expand-file-name module (file-name-directory
                                                       (locate-library "agent-q.el")))
                             (expand-file-name module lisp)))))))
    (should (equal (plist-get run :status) 3))
    (should-not (plist-get run :asked))
    (should-not (plist-get run :built))
    (let ((output (plist-get run :output)))
      (should (string-match-p (format "module is version %s but agent-q.el is 9.9.9"
                                      (regexp-quote agent-q-version))
                              output))
      (should (string-match-p "M-x agent-q-module-compile" output))
      (should (string-match-p "make build" output))
      (should (string-match-p "restart Emacs" output)))))

(ert-deftest agent-q-test-stale-compiled-file-is-refused ()
  "An .elc older than its source stops the load, naming it and `make build'.
The stale file would otherwise be loaded instead of the newer source."
  (let ((run (agent-q-test--loader-run
              (lambda (lisp)
                (let ((module (concat "agent-q-core" module-file-suffix))
                      (elc (expand-file-name "agent-q-mcp.elc" lisp)))
                  (copy-file (expand-file-name module (file-name-directory
                                                       (locate-library "agent-q.el")))
                             (expand-file-name module lisp))
                  (with-temp-file elc
                    (insert "(princ \"STALE LOADED\\n\")\n"))
                  (set-file-times elc (time-subtract nil 3600)))))))
    (should (equal (plist-get run :status) 3))
    (should-not (plist-get run :asked))
    (should-not (plist-get run :built))
    (let ((output (plist-get run :output)))
      (should (string-match-p "compiled file is older than its source: agent-q-mcp\\.elc" output))
      (should (string-match-p "make build" output))
      (should-not (string-match-p "STALE LOADED" output)))))

(ert-deftest agent-q-test-stale-compiled-files-by-time ()
  "Only an .elc older than its .el is stale; one without a source is not agent-q's."
  (let ((dir (make-temp-file "agent-q-elc" t))
        (old (time-subtract nil 3600)))
    (unwind-protect
        (cl-flet ((file (name time)
                    (let ((file (expand-file-name name dir)))
                      (write-region "" nil file nil 'silent)
                      (set-file-times file time))))
          (file "agent-q-a.el" nil)
          (file "agent-q-a.elc" old)
          (file "agent-q-b.el" old)
          (file "agent-q-b.elc" nil)
          (file "agent-q-c.el" nil)
          (file "other.el" nil)
          (file "other.elc" old)
          (should (equal (agent-q--stale-compiled-files dir) '("agent-q-a.elc"))))
      (delete-directory dir t))))

(ert-deftest agent-q-test-module-compile-runs-make-build-in-the-root ()
  ;; The command the loader's errors name runs `make build' in the
  ;; source root, in a compilation buffer (here a `make' on PATH that
  ;; records where it ran and with what).
  (let* ((bin (make-temp-file "agent-q-make" t))
         (mark (expand-file-name "ran" bin))
         (root (file-name-as-directory
                (expand-file-name ".." (file-name-directory (locate-library "agent-q.el"))))))
    (unwind-protect
        (progn
          (dolist (tool '("make" "cargo"))
            (let ((script (expand-file-name tool bin)))
              (with-temp-file script
                (insert (format "#!/bin/sh\necho \"%s $* in $(pwd)\" >> %s\n"
                                tool (shell-quote-argument mark))))
              (set-file-modes script #o755)))
          (let* ((process-environment
                  (cons (concat "PATH=" bin path-separator (getenv "PATH")) process-environment))
                 (exec-path (cons bin exec-path))
                 (buffer (agent-q-module-compile)))
            (should (equal (buffer-name buffer) "*agent-q-build*"))
            (let ((deadline (+ (float-time) 10)))
              (while (and (get-buffer-process buffer) (< (float-time) deadline))
                (accept-process-output (get-buffer-process buffer) 0.1)))
            (should-not (get-buffer-process buffer))
            (should (equal (with-temp-buffer (insert-file-contents mark) (buffer-string))
                           (format "make build in %s\n"
                                   (directory-file-name (file-truename root)))))
            (kill-buffer buffer)))
      (delete-directory bin t))))

;;;; Registration

(ert-deftest agent-q-test-readme-commands-exist-after-require ()
  "Every command the README names is a command once `agent-q' is required.
Checked in a fresh Emacs, as a user's init.el would: a command defined
in a file that nothing loads yet (the IDE companion's, the bridges')
must be autoloaded by agent-q.el."
  (let* ((readme (expand-file-name "../README.md"
                                   (file-name-directory (locate-library "agent-q"))))
         (names (with-temp-buffer
                  (insert-file-contents readme)
                  (let (names)
                    (while (re-search-forward
                            "M-x \\(agent-q-[a-z-]+\\)\\|(\\(agent-q-[a-z-]+-mode\\) 1)" nil t)
                      (push (or (match-string 1) (match-string 2)) names))
                    (delete-dups names))))
         (form `(progn
                  (require 'agent-q)
                  (dolist (name ',names)
                    (princ (format "%s %s\n" name (commandp (intern name)))))))
         (output (with-temp-buffer
                   (should (eql 0 (call-process (expand-file-name invocation-name invocation-directory)
                                                nil (list t nil) nil "--batch" "-Q" "-L"
                                                (file-name-directory (locate-library "agent-q"))
                                                "--eval" (prin1-to-string form))))
                   (buffer-string))))
    (should (member "agent-q-ide-mode" names))
    (should (>= (length names) 10))
    (dolist (name names)
      (should (string-match-p (concat "^" (regexp-quote name) " t$") output)))))

(ert-deftest agent-q-test-tools-file-gives-the-approval-handlers ()
  "Requiring agent-q-tools alone gives the minibuffer approval and the hunk review."
  (let ((output
         (with-temp-buffer
           (should (eql 0 (call-process
                           (expand-file-name invocation-name invocation-directory)
                           nil (list t nil) nil "--batch" "-Q" "-L"
                           (file-name-directory (locate-library "agent-q"))
                           "--eval"
                           (prin1-to-string
                            '(progn
                               (require 'agent-q-tools)
                               (dolist (f '(agent-q-approve-in-minibuffer
                                            agent-q-review-edit agent-q-review-edit-async))
                                 (princ (format "%s %s\n" f (fboundp f)))))))))
           (buffer-string))))
    (should (equal output (concat "agent-q-approve-in-minibuffer t\n"
                                  "agent-q-review-edit t\n"
                                  "agent-q-review-edit-async t\n")))))

(ert-deftest agent-q-test-register-new-tool ()
  (agent-q-test--with-registry reg
    (let ((tool (agent-q-register-tool (agent-q-test--greet-tool) reg)))
      (should (agent-q-tool-p tool))
      (should (equal (agent-q-tool-name tool) "greet"))
      (should (agent-q-tool-enabled tool))
      (should (string-match-p "\\`[0-9]\\{4\\}-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]Z\\'"
                              (agent-q-tool-created-at tool)))
      (should (eq (agent-q-tool-safety-level tool) :safe))
      (should (equal (agent-q-tool-categories tool) '(:social)))
      (should (equal (agent-q-tool-required tool) '("who")))
      (should (functionp (agent-q-tool-handler tool)))
      (should (equal (agent-q-tool-name (agent-q-get-tool "greet" reg)) "greet"))
      (should-not (agent-q-get-tool "nonexistent" reg))
      (should-not (agent-q-get-tool "greet")) ; not in the global registry
      )))

(ert-deftest agent-q-test-json-schema-parameters ()
  (agent-q-test--with-registry reg
    (let ((tool (agent-q-register-tool
                 (agent-q-define-tool "sum" "Add numbers."
                                      '(:type "object"
                                        :properties (:xs (:type "array" :items (:type "number")))
                                        :required ["xs"])
                                      :handler (lambda (args) (apply #'+ (gethash "xs" args))))
                 reg)))
      (should (equal (agent-q-tool-required tool) '("xs")))
      (should (equal (agent-q-test--content
                      (car (agent-q-test--run reg '(:id "1" :name "sum" :arguments (:xs [1 2 3.5])))))
                     "6.5")))))

(ert-deftest agent-q-test-invalid-definitions-name-the-field ()
  (agent-q-test--with-registry reg
    (dolist (case `((,(agent-q-define-tool "Bad-Name" "d" nil) . "field 'name'")
                    (,(agent-q-define-tool "" "d" nil) . "field 'name': must not be empty")
                    (,(agent-q-define-tool "t" "d" '((:name "x" :type :string)) :required '("y"))
                     . "field 'required': 'y' is not one of the parameters")
                    (,(agent-q-define-tool "t" "d" '((:name "x" :type :strng)))
                     . "field 'parameters\\[0\\].type': unknown type :strng")
                    (,(agent-q-define-tool "t" "d" nil :safety-level :risky) . "field 'safety_level'")
                    (,(agent-q-define-tool "t" nil nil) . "field 'description'")
                    (,(agent-q-define-tool "t" "d" nil :handler 42) . "field 'handler': not a function")))
      (let ((err (should-error (agent-q-register-tool (car case) reg) :type 'agent-q-invalid-tool)))
        (should (string-match-p (cdr case) (cadr err)))
        (should (string-match-p "\\`Invalid tool definition" (cadr err)))))
    (should-not (agent-q-list-registered-tools reg t))))

(ert-deftest agent-q-test-identical-spec-keeps-registration-and-rebinds-handler ()
  (agent-q-test--with-registry reg
    (let* ((first (agent-q-register-tool (agent-q-test--greet-tool) reg))
           (again (agent-q-register-tool
                   (agent-q-define-tool "greet" "Greet someone by name."
                                        '((:name "who" :type :string :description "Who to greet")
                                          (:name "loud" :type :boolean :description "Shout?"))
                                        :required '("who") :categories '(:social)
                                        :handler (lambda (_) "rebound"))
                   reg)))
      (should (equal (agent-q-tool-created-at first) (agent-q-tool-created-at again)))
      (should (equal (agent-q-test--content
                      (car (agent-q-test--run reg '(:id "1" :name "greet" :arguments (:who "x")))))
                     "rebound")))))

(ert-deftest agent-q-test-different-version-replaces ()
  (agent-q-test--with-registry reg
    (agent-q-register-tool (agent-q-test--greet-tool :version "1.0.0") reg)
    (let ((tool (agent-q-register-tool
                 (agent-q-define-tool "greet" "Greet, v2." nil :version "2.0.0"
                                      :handler (lambda (_) "v2"))
                 reg)))
      (should (equal (agent-q-tool-version tool) "2.0.0"))
      (should (equal (agent-q-tool-description (agent-q-get-tool "greet" reg)) "Greet, v2.")))))

(ert-deftest agent-q-test-same-version-different-spec-signals-tool-exists ()
  (agent-q-test--with-registry reg
    (agent-q-register-tool (agent-q-test--greet-tool) reg)
    (let ((err (should-error (agent-q-register-tool
                              (agent-q-define-tool "greet" "Something else." nil) reg)
                             :type 'agent-q-tool-exists)))
      (should (string-match-p "Tool already exists" (cadr err)))
      (should (string-match-p "greet_v2" (cadr err)))
      (should (string-match-p "bump the version" (cadr err))))
    ;; Catchable under the root error too.
    (should-error (agent-q-register-tool (agent-q-define-tool "greet" "Else." nil) reg)
                  :type 'agent-q-error)
    (should (equal (agent-q-tool-description (agent-q-get-tool "greet" reg))
                   "Greet someone by name."))))

(ert-deftest agent-q-test-deftool-redefines-from-its-own-file ()
  (agent-q-test--with-registry reg
    (let ((load-file-name "/home/someone/my-tools.el"))
      (agent-q-deftool "probe" "First." nil :registry reg :handler (lambda (_) "one"))
      (agent-q-set-tool-enabled "probe" nil reg)
      (let ((tool (agent-q-deftool "probe" "Second, edited while developing." nil
                    :registry reg :handler (lambda (_) "two"))))
        (should (equal (agent-q-tool-description tool) "Second, edited while developing."))
        (should-not (agent-q-tool-enabled tool))
        (should (equal (agent-q-tool-source tool) "/home/someone/my-tools.el"))))
    ;; Another file cannot take the name over silently.
    (let ((load-file-name "/elsewhere/other.el"))
      (should-error (agent-q-deftool "probe" "Hijack." nil :registry reg)
                    :type 'agent-q-tool-exists))))

(ert-deftest agent-q-test-deftool-redefines-after-byte-compiled-load ()
  "A definition loaded from its .elc can be re-evaluated from its .el."
  (let* ((dir (make-temp-file "agent-q-redef" t))
         (el (expand-file-name "my-agent-tools.el" dir))
         (reg (agent-q-make-registry)))
    (unwind-protect
        (progn
          (defvar agent-q-test--redef-registry nil)
          (setq agent-q-test--redef-registry reg)
          (with-temp-file el
            (insert ";;; my-agent-tools.el --- test  -*- lexical-binding: t -*-\n"
                    "(require 'agent-q)\n"
                    "(defvar agent-q-test--redef-registry)\n"
                    "(agent-q-deftool \"probe2\" \"Compiled.\" nil :registry agent-q-test--redef-registry)\n"))
          (let ((byte-compile-log-warning-function #'ignore))
            (should (byte-compile-file el)))
          (load (concat el "c") nil t)
          (should (equal (agent-q-tool-source (agent-q-get-tool "probe2" reg)) (file-truename el)))
          (with-current-buffer (find-file-noselect el)
            (unwind-protect
                (let ((load-file-name nil))
                  (should (equal (agent-q-tool-description
                                  (agent-q-deftool "probe2" "Edited in the source." nil :registry reg))
                                 "Edited in the source.")))
              (kill-buffer))))
      ;; Leave no trace of the temporary library for other tests (who_calls reads load-history).
      (setq load-history (cl-remove-if (lambda (entry)
                                         (and (stringp (car entry))
                                              (string-prefix-p (file-truename dir)
                                                               (file-truename (car entry)))))
                                       load-history))
      (delete-directory dir t))))

(ert-deftest agent-q-test-listing-and-filtering ()
  (agent-q-test--with-registry reg
    (dolist (def '(("zeta" :safe (:introspection :xref))
                   ("alpha" :safe (:buffer))
                   ("mid" :cautious (:execution))
                   ("omega" :dangerous (:buffer :filesystem))))
      (agent-q-register-tool (agent-q-define-tool (nth 0 def) "A tool." nil
                                                  :safety-level (nth 1 def)
                                                  :categories (nth 2 def))
                             reg))
    (should (equal (agent-q-list-registered-tools reg) '("alpha" "mid" "omega" "zeta")))
    (cl-flet ((names (&rest keys)
                (mapcar #'agent-q-tool-name (apply #'agent-q-get-tools :registry reg keys))))
      (should (equal (names :max-safety-level :safe) '("alpha" "zeta")))
      (should (equal (names :max-safety-level :cautious) '("alpha" "mid" "zeta")))
      (should (equal (names :max-safety-level :dangerous) '("alpha" "mid" "omega" "zeta")))
      (should (equal (names :categories '(:buffer)) '("alpha" "omega")))
      (should (equal (names :max-safety-level :safe :categories '(:buffer :xref)) '("alpha" "zeta")))
      (should (equal (names :max-safety-level :safe :categories '(:execution)) nil))
      (agent-q-set-tool-enabled "alpha" nil reg)
      (should (equal (names :max-safety-level :safe) '("zeta")))
      (should (equal (names :max-safety-level :safe :include-disabled t) '("alpha" "zeta")))
      (should (equal (agent-q-list-registered-tools reg) '("mid" "omega" "zeta")))
      (should (equal (agent-q-list-registered-tools reg t) '("alpha" "mid" "omega" "zeta"))))))

(ert-deftest agent-q-test-enable-disable ()
  (agent-q-test--with-registry reg
    (agent-q-register-tool (agent-q-test--greet-tool) reg)
    (should-not (agent-q-tool-enabled (agent-q-set-tool-enabled "greet" nil reg)))
    (should-not (agent-q-tool-enabled (agent-q-set-tool-enabled "greet" nil reg)))
    (should (equal (agent-q-test--content
                    (car (agent-q-test--run reg '(:id "1" :name "greet" :arguments (:who "x")))))
                   "Tool greet is disabled"))
    (should (agent-q-tool-enabled (agent-q-set-tool-enabled "greet" t reg)))
    (should-error (agent-q-set-tool-enabled "nope" t reg) :type 'agent-q-unknown-tool)))

(ert-deftest agent-q-test-remove-is-idempotent ()
  (agent-q-test--with-registry reg
    (agent-q-register-tool (agent-q-test--greet-tool) reg)
    (should (eq (agent-q-remove-tool "greet" reg) t))
    (should-not (agent-q-remove-tool "greet" reg))
    (should-not (agent-q-get-tool "greet" reg))))

(ert-deftest agent-q-test-independent-registries ()
  (let ((a (agent-q-make-registry)) (b (agent-q-make-registry)))
    (agent-q-register-tool (agent-q-test--greet-tool) a)
    (should (agent-q-get-tool "greet" a))
    (should-not (agent-q-get-tool "greet" b))
    (should-not (member "greet" (agent-q-list-registered-tools nil t)))))

;;;; Snapshots

(ert-deftest agent-q-test-snapshot-restore-round-trip ()
  (agent-q-test--with-registry reg
    (agent-q-register-tool (agent-q-test--greet-tool :version "1.2.0" :tags '("demo")) reg)
    (agent-q-register-tool (agent-q-define-tool "empty" "No parameters." nil :safety-level :dangerous) reg)
    (agent-q-set-tool-enabled "empty" nil reg)
    (let ((snap (agent-q-registry-snapshot reg))
          (other (agent-q-make-registry)))
      ;; A printable plist: it reads back as itself.
      (should (equal (car (read-from-string (prin1-to-string snap))) snap))
      (should (= (agent-q-registry-restore snap other) 2))
      (should (equal (agent-q-registry-snapshot other) snap))
      ;; JSON form too.
      (let ((json (agent-q-registry-snapshot reg t))
            (third (agent-q-make-registry)))
        (should (stringp json))
        (should (json-parse-string json))
        (agent-q-registry-restore json third)
        (should (equal (agent-q-registry-snapshot third) snap)))
      ;; Restoring keeps handlers of tools that remain.
      (agent-q-registry-restore snap reg)
      (should (equal (agent-q-test--content
                      (car (agent-q-test--run reg '(:id "1" :name "greet" :arguments (:who "Ada")))))
                     "Hello, Ada.")))))

(ert-deftest agent-q-test-invalid-snapshot-changes-nothing ()
  (agent-q-test--with-registry reg
    (agent-q-register-tool (agent-q-test--greet-tool) reg)
    (let ((before (agent-q-registry-snapshot reg)))
      (should-error (agent-q-registry-restore "{not json" reg) :type 'agent-q-error)
      (should-error (agent-q-registry-restore '(:tools [(:spec (:name "Bad Name" :description "d"
                                                                  :parameters nil)
                                                           :enabled t :created_at "x")])
                                              reg)
                    :type 'agent-q-error)
      (should (equal (agent-q-registry-snapshot reg) before)))))

;;;; Schemas

(ert-deftest agent-q-test-openai-schema-format ()
  (agent-q-test--with-registry reg
    (agent-q-register-tool (agent-q-test--greet-tool) reg)
    (should (equal (agent-q-tools-to-schema nil :registry reg)
                   '((:type "function"
                      :function (:name "greet"
                                 :description "Greet someone by name."
                                 :parameters (:type "object"
                                              :properties (:who (:type "string" :description "Who to greet")
                                                           :loud (:type "boolean" :description "Shout?"))
                                              :additionalProperties :json-false
                                              :required ["who"])
                                 :strict :json-false)))))
    (should (equal (agent-q-tools-to-schema '("greet") :format :anthropic :registry reg)
                   '((:name "greet" :description "Greet someone by name."
                      :input_schema (:type "object"
                                     :properties (:who (:type "string" :description "Who to greet")
                                                  :loud (:type "boolean" :description "Shout?"))
                                     :additionalProperties :json-false
                                     :required ["who"])))))
    (let ((parsed (json-parse-string (agent-q-tools-to-schema nil :json t :registry reg)
                                     :object-type 'alist)))
      (should (equal (alist-get 'type (aref parsed 0)) "function"))
      (should (eq (alist-get 'strict (alist-get 'function (aref parsed 0))) :false)))))

(ert-deftest agent-q-test-schema-cache-invalidated-by-changes ()
  (agent-q-test--with-registry reg
    (agent-q-register-tool (agent-q-test--greet-tool) reg)
    (let ((first (agent-q-tools-to-schema nil :registry reg)))
      (should (eq first (agent-q-tools-to-schema nil :registry reg)))
      (agent-q-register-tool (agent-q-define-tool "another" "Another tool." nil) reg)
      (let ((second (agent-q-tools-to-schema nil :registry reg)))
        (should-not (eq first second))
        (should (= (length second) 2)))
      (agent-q-set-tool-enabled "another" nil reg)
      (should (= (length (agent-q-tools-to-schema nil :registry reg)) 1)))))

;;;; Execution

(ert-deftest agent-q-test-result-shape-and-order ()
  (agent-q-test--with-registry reg
    (agent-q-register-tool (agent-q-test--greet-tool) reg)
    (let ((results (agent-q-test--run reg
                                      '(:id "a" :name "greet" :arguments (:who "Ada"))
                                      '(:id "b" :name "missing" :arguments nil)
                                      '(:id "c" :name "greet" :arguments "{\"who\": \"Bob\", \"loud\": true}"))))
      (should (equal (mapcar (lambda (r) (plist-get r :id)) results) '("a" "b" "c")))
      (let ((ok (nth 0 results)))
        ;; The exact shape, key order included, the time aside.
        (should (equal (plist-put (copy-tree ok) :metadata
                                  (plist-put (copy-sequence (plist-get ok :metadata))
                                             :execution_time_ms 0.0))
                       '(:id "a" :success t :content "Hello, Ada."
                         :metadata (:execution_time_ms 0.0 :safety_level "safe" :approved t
                                    :status "success"))))
        (should (eq (plist-get ok :success) t))
        (should (equal (plist-get ok :content) "Hello, Ada."))
        (should-not (plist-get ok :error))
        (let ((meta (plist-get ok :metadata)))
          (should (floatp (plist-get meta :execution_time_ms)))
          (should (equal (plist-get meta :safety_level) "safe"))
          (should (eq (plist-get meta :approved) t))))
      (should (equal (plist-put (copy-tree (nth 1 results)) :metadata nil)
                     '(:id "b" :success nil :content "Unknown tool: missing"
                       :error "Unknown tool: missing" :metadata nil)))
      (should (equal (plist-get (nth 1 results) :content) "Unknown tool: missing"))
      (should (equal (plist-get (nth 1 results) :error) "Unknown tool: missing"))
      (should-not (plist-get (nth 1 results) :success))
      (should (equal (plist-get (nth 2 results) :content) "Hello, Bob!")))))

(ert-deftest agent-q-test-handler-receives-an-equal-hash-table ()
  (agent-q-test--with-registry reg
    (let (seen)
      (agent-q-register-tool
       (agent-q-define-tool "peek" "Look at the arguments."
                            '((:name "s" :type :string) (:name "n" :type :integer)
                              (:name "b" :type :boolean) (:name "xs" :type :array :items (:type :string))
                              (:name "o" :type :object))
                            :handler (lambda (args) (setq seen args) "ok"))
       reg)
      (agent-q-test--run reg '(:id "1" :name "peek" :arguments (:s "x" :n 3 :b nil :xs ["a" "b"] :o (:k 1))))
      (should (hash-table-p seen))
      (should (eq (hash-table-test seen) 'equal))
      (should (equal (gethash "s" seen) "x"))
      (should (equal (gethash "n" seen) 3))
      (should (eq (gethash "b" seen 'absent) nil))
      (should (equal (gethash "xs" seen) '("a" "b")))
      (should (equal (gethash "k" (gethash "o" seen)) 1))
      (should (eq (gethash "missing" seen 'absent) 'absent)))))

(ert-deftest agent-q-test-return-values-are-formatted ()
  (agent-q-test--with-registry reg
    (dolist (case '(("text" . "text") (nil . "nil") (42 . "42") (foo . "foo")
                    ((1 (2 3) "x") . "(1\n (2 3)\n \"x\")")))
      (let ((value (car case)))
        (agent-q-register-tool (agent-q-define-tool "ret" "Return a value." nil
                                                    :handler (lambda (_) value)
                                                    :version (format "%S" value))
                               reg)
        (let ((content (agent-q-test--content (car (agent-q-test--run reg '(:id "1" :name "ret"))))))
          (should (equal (replace-regexp-in-string "[ \n]+" " " content)
                         (replace-regexp-in-string "[ \n]+" " " (cdr case)))))))))

(ert-deftest agent-q-test-invalid-arguments-stop-before-approval-and-handler ()
  (agent-q-test--with-registry reg
    (let* ((handled 0) (asked 0)
           (agent-q-approval-function (lambda (&rest _) (cl-incf asked) :approved)))
      (agent-q-register-tool
       (agent-q-define-tool "pick" "Pick a mode." '((:name "mode" :type :string :enum ("a" "b"))
                                                    (:name "n" :type :integer))
                            :required '("mode") :safety-level :dangerous
                            :handler (lambda (_) (cl-incf handled) "ran"))
       reg)
      (dolist (case '(((:n 1) . "Invalid arguments for pick: field 'mode': required field is missing")
                      ((:mode 3) . "Invalid arguments for pick: field 'mode': expected type")
                      ((:mode "c") . "Invalid arguments for pick: field 'mode': ")
                      ((:mode "a" :n "x") . "Invalid arguments for pick: field 'n': ")))
        (let ((r (car (agent-q-test--run reg `(:id "1" :name "pick" :arguments ,(car case))))))
          (should-not (plist-get r :success))
          (should (string-prefix-p (cdr case) (plist-get r :content)))))
      (should (= handled 0))
      (should (= asked 0))
      (should (string-prefix-p "Invalid arguments for pick: field 'mode'"
                               (agent-q-validate-arguments "pick" '(:mode "z") reg)))
      (should-not (agent-q-validate-arguments "pick" '(:mode "a") reg)))))

(ert-deftest agent-q-test-handler-error-does-not-stop-the-batch ()
  (agent-q-test--with-registry reg
    (agent-q-register-tool (agent-q-test--greet-tool) reg)
    (agent-q-register-tool (agent-q-define-tool "boom" "Fails." nil
                                                :handler (lambda (_) (error "Kaboom %d" 7)))
                           reg)
    (let ((results (agent-q-test--run reg
                                      '(:id "1" :name "boom")
                                      '(:id "2" :name "greet" :arguments (:who "x")))))
      (should (equal (plist-get (nth 0 results) :content) "Tool error: Kaboom 7"))
      (should (equal (plist-get (nth 1 results) :content) "Hello, x.")))))

(defun agent-q-test--dangerous (reg &optional handler)
  "Register a dangerous tool in REG whose HANDLER defaults to recording its path."
  (agent-q-register-tool
   (agent-q-define-tool "zap" "Dangerous." '((:name "path" :type :string))
                        :required '("path") :safety-level :dangerous
                        :handler (or handler (lambda (args) (format "zapped %s" (gethash "path" args)))))
   reg))

(ert-deftest agent-q-test-dangerous-needs-explicit-approval ()
  (agent-q-test--with-registry reg
    (let ((ran 0) seen-args seen-context)
      (agent-q-test--dangerous reg (lambda (args) (cl-incf ran) (format "zapped %s" (gethash "path" args))))
      (dolist (case `((nil . "Tool execution denied: no approval function is set")
                      (,(lambda (&rest _) :denied) . "User denied tool execution")
                      (,(lambda (&rest _) '(:denied "not that one")) . "User denied tool execution: not that one")
                      (,(lambda (&rest _) t) . "Tool execution denied: the approval function returned t")
                      (,(lambda (&rest _) nil) . "Tool execution denied: the approval function returned")
                      (,(lambda (&rest _) "yes") . "Tool execution denied")
                      (,(lambda (&rest _) (error "Broken prompt")) . "Tool execution denied: the approval function failed: Broken prompt")
                      (,(lambda (&rest _) (signal 'quit nil)) . "Tool execution denied: the user quit (C-g)")
                      (,(lambda (&rest _) (throw 'somewhere 1)) . "Tool execution denied: the approval function failed")))
        (let* ((agent-q-approval-function (car case))
               (r (car (catch 'somewhere
                         (agent-q-test--run reg '(:id "1" :name "zap" :arguments (:path "/x")))))))
          (should-not (plist-get r :success))
          (should-not (plist-get (plist-get r :metadata) :approved))
          (should (string-prefix-p (cdr case) (plist-get r :content)))))
      (should (= ran 0))
      (let* ((agent-q-approval-function (lambda (name args)
                                          (setq seen-args (list name args)
                                                seen-context agent-q-approval-context)
                                          :approved))
             (r (car (agent-q-test--run reg '(:id "1" :name "zap" :arguments (:path "/x"))))))
        (should (plist-get r :success))
        (should (equal (plist-get r :content) "zapped /x"))
        (should (equal seen-args '("zap" (:path "/x"))))
        (should (eq (plist-get seen-context :safety-level) :dangerous))
        (should (= ran 1))))))

(ert-deftest agent-q-test-confirm-safety-levels ()
  "Levels listed in `agent-q-confirm-safety-levels' are asked; dangerous always is."
  (agent-q-test--with-registry reg
    (let ((ran 0) (asked nil))
      (agent-q-register-tool (agent-q-define-tool "tweak" "Cautious." nil :safety-level :cautious
                                                  :handler (lambda (_) (cl-incf ran) "tweaked"))
                             reg)
      (agent-q-test--dangerous reg (lambda (_) (cl-incf ran) "zapped"))
      (let ((agent-q-approval-function (lambda (name _) (push name asked) :denied)))
        (let ((agent-q-confirm-safety-levels '(:dangerous)))
          (should (plist-get (car (agent-q-test--run reg '(:id "1" :name "tweak"))) :success)))
        (should (equal asked nil))
        (let ((agent-q-confirm-safety-levels '(:cautious :dangerous)))
          (should (equal (plist-get (car (agent-q-test--run reg '(:id "2" :name "tweak"))) :content)
                         "User denied tool execution")))
        (should (equal asked '("tweak")))
        (let ((agent-q-confirm-safety-levels nil))
          (should-not (plist-get (car (agent-q-test--run reg '(:id "3" :name "zap" :arguments (:path "/x"))))
                                 :success)))
        (should (equal asked '("zap" "tweak")))
        (should (= ran 1))
        (let ((agent-q-confirm-safety-levels '(:sometimes)))
          (should-error (agent-q-test--run reg '(:id "4" :name "tweak")) :type 'agent-q-error))))))

(ert-deftest agent-q-test-modified-arguments ()
  (agent-q-test--with-registry reg
    (agent-q-test--dangerous reg)
    (let* ((agent-q-approval-function (lambda (_ _) '(:modified (:path "/safe"))))
           (r (car (agent-q-test--run reg '(:id "1" :name "zap" :arguments (:path "/x"))))))
      (should (plist-get r :success))
      (should (string-match-p "user modified the arguments" (plist-get r :content)))
      (should (string-suffix-p "zapped /safe" (plist-get r :content)))
      (should (eq (plist-get (plist-get r :metadata) :modified) t)))
    (let* ((agent-q-approval-function (lambda (_ _) '(:modified (:path 7))))
           (r (car (agent-q-test--run reg '(:id "1" :name "zap" :arguments (:path "/x"))))))
      (should-not (plist-get r :success))
      (should (string-match-p "Invalid arguments for zap: field 'path'" (plist-get r :content))))))

(ert-deftest agent-q-test-cautious-and-dangerous-are-logged-and-audited ()
  (agent-q-test--with-registry reg
    (agent-q-register-tool (agent-q-define-tool "tweak" "Cautious." nil :safety-level :cautious
                                                :handler (lambda (_) "tweaked"))
                           reg)
    (agent-q-test--dangerous reg)
    (agent-q-register-tool (agent-q-test--greet-tool) reg)
    (let ((agent-q-approval-function (lambda (_ _) :denied)))
      (when (get-buffer agent-q-log-buffer-name) (kill-buffer agent-q-log-buffer-name))
      (agent-q-test--run reg '(:id "c1" :name "tweak") '(:id "d1" :name "zap" :arguments (:path "/x"))
                         '(:id "s1" :name "greet" :arguments (:who "x")))
      (let ((lines (with-temp-buffer
                     (insert-file-contents agent-q-audit-file)
                     (mapcar (lambda (l) (json-parse-string l :object-type 'alist))
                             (split-string (buffer-string) "\n" t)))))
        (should (equal (mapcar (lambda (l) (list (alist-get 'event l) (alist-get 'tool l) (alist-get 'decision l)))
                               lines)
                       '(("run" "tweak" "auto") ("result" "tweak" "auto") ("denied" "zap" "denied"))))
        (should (equal (alist-get 'id (car lines)) "c1")))
      ;; One line per call, as it ended: who decided and how.
      (with-current-buffer agent-q-log-buffer-name
        (should (string-match-p "tweak: done; not asked: a cautious call needs no decision"
                                (buffer-string)))
        (should (string-match-p "zap /x: denied; the user denied it at the prompt" (buffer-string)))
        (should (= (count-lines (point-min) (point-max)) 2))
        (should-not (string-match-p "greet" (buffer-string)))
        ;; RET shows the whole record.
        (goto-char (point-min))
        (agent-q-log-show-record)
        (with-current-buffer "*agent-q record*"
          (should (equal (alist-get 'tool (json-read-from-string (buffer-string))) "tweak")))))))

(ert-deftest agent-q-test-execution-hooks ()
  (agent-q-test--with-registry reg
    (agent-q-register-tool (agent-q-test--greet-tool) reg)
    (agent-q-register-tool (agent-q-define-tool "boom" "Fails." nil :handler (lambda (_) (error "No"))) reg)
    (let* ((events nil)
           (agent-q-tool-execution-functions
            (list (lambda (phase name args result)
                    (push (list phase name args (and result (plist-get result :success))) events))
                  (lambda (&rest _) (error "A broken observer")))))
      (let ((results (agent-q-test--run reg '(:id "1" :name "greet" :arguments (:who "x"))
                                        '(:id "2" :name "boom"))))
        (should (plist-get (car results) :success)))
      (should (equal (nreverse events)
                     '((:before "greet" (:who "x") nil)
                       (:after "greet" (:who "x") t)
                       (:before "boom" nil nil)
                       (:error "boom" nil nil))))
      (with-current-buffer agent-q-log-buffer-name
        (should (string-match-p "execution hook .* failed on :before greet: A broken observer"
                                (buffer-string)))))))

(ert-deftest agent-q-test-metrics ()
  (agent-q-test--with-registry reg
    (agent-q-test--dangerous reg)
    (agent-q-register-tool (agent-q-test--greet-tool) reg)
    (let ((agent-q-approval-function (lambda (_ _) :denied)))
      (agent-q-test--run reg '(:id "1" :name "greet" :arguments (:who "x"))
                         '(:id "2" :name "greet" :arguments (:who 1))
                         '(:id "3" :name "zap" :arguments (:path "/x"))))
    (let ((m (agent-q-tool-metrics reg)))
      (should (equal (mapcar #'car m) '("greet" "zap")))
      (let ((greet (cdr (assoc "greet" m))))
        (should (= (plist-get greet :calls) 2))
        (should (= (plist-get greet :failures) 1))
        (should (>= (plist-get greet :max_ms) 0.0))
        (should (>= (plist-get greet :total_ms) (plist-get greet :max_ms))))
      (should (= (plist-get (cdr (assoc "zap" m)) :denials) 1)))
    (agent-q-tool-metrics reg t)
    (should-not (agent-q-tool-metrics reg))))

(ert-deftest agent-q-test-results-are-capped ()
  (agent-q-test--with-registry reg
    (agent-q-register-tool (agent-q-define-tool "long" "Long output." nil
                                                :handler (lambda (_) (make-string 100 ?é)))
                           reg)
    (let* ((agent-q-max-result-chars 30)
           (content (agent-q-test--content (car (agent-q-test--run reg '(:id "1" :name "long"))))))
      (should (string-prefix-p (make-string 30 ?é) content))
      (should (string-match-p "truncated: 70 of 100 characters cut" content)))))

;;;; Approval requested by safe tools

(ert-deftest agent-q-test-request-approval ()
  (agent-q-test--with-registry reg
    (agent-q-register-tool (agent-q-define-tool "peek" "Read." '((:name "path" :type :string))
                                                :required '("path"))
                           reg)
    (let (context)
      (let ((agent-q-approval-function (lambda (_ _) (setq context agent-q-approval-context) :approved)))
        (should (equal (agent-q-request-approval "peek" '(:path "~/.authinfo") "sensitive file" reg)
                       '(:approved (:path "~/.authinfo"))))
        (should (equal (plist-get context :reason) "sensitive file")))
      (let ((agent-q-approval-function (lambda (_ _) '(:modified (:path "/tmp/other")))))
        (should (equal (agent-q-request-approval "peek" '(:path "/x") "outside" reg)
                       '(:approved (:path "/tmp/other") :modified t))))
      (let ((agent-q-approval-function (lambda (_ _) '(:modified (:path 3)))))
        (should (eq (car (agent-q-request-approval "peek" '(:path "/x") "outside" reg)) :denied)))
      (dolist (fn (list (lambda (_ _) :denied) (lambda (_ _) 'maybe) (lambda (_ _) (signal 'quit nil))
                        (lambda (_ _) (error "Oops"))))
        (let ((agent-q-approval-function fn))
          (should (eq (car (agent-q-request-approval "peek" '(:path "/x") "outside" reg)) :denied))))
      (let ((agent-q-approval-function nil))
        (should (string-match-p "no approval function"
                                (cadr (agent-q-request-approval "peek" '(:path "/x") "outside" reg))))))))

(ert-deftest agent-q-test-wrong-argument-types-signal-agent-q-error ()
  (should-error (agent-q-get-tool 42) :type 'agent-q-error)
  (should-error (agent-q-remove-tool 'greet) :type 'agent-q-error)
  (should-error (agent-q-list-registered-tools "not a registry") :type 'agent-q-error)
  (should-error (agent-q-execute-tool-calls nil 42) :type 'agent-q-error)
  (should-error (agent-q-get-tools :max-safety-level :extreme) :type 'agent-q-error)
  (should-error (agent-q-tools-to-schema nil :format :xml) :type 'agent-q-error))

;;;; Robustness

(ert-deftest agent-q-test-bad-input-gives-clear-failures ()
  (agent-q-test--with-registry reg
    (agent-q-register-tool (agent-q-test--greet-tool) reg)
    (let* ((deep (let ((x "bottom")) (dotimes (_ 100000) (setq x (list x))) x))
           (circular (let ((l (list 1 2 3))) (setcdr (last l) l) l))
           (cases `(((:id "deep" :name "greet" :arguments (:who ,deep)) . "nested more than 128 levels")
                    ((:id "huge" :name "greet" :arguments (:who ,(make-string (* 50 1024 1024) ?a)))
                     . "too large: 52428800 bytes")
                    ((:id "bytes" :name "greet" :arguments (:who ,(unibyte-string 255 254)))
                     . "not valid UTF-8")
                    ((:id "buffer" :name "greet" :arguments (:who ,(current-buffer))) . "type buffer")
                    ((:id "big" :name "greet" :arguments (:who ,(expt 2 80))) . "integer beyond 64 bits")
                    ((:id "circ" :name "greet" :arguments (:who ,circular)) . "circular")
                    ((:id "nan" :name "greet" :arguments (:who ,(/ 0.0 0.0))) . "NaN")
                    ("just a string" . "Invalid tool call: expected a plist")
                    (42 . "Invalid tool call: expected a plist")
                    ((:name "greet" :arguments (:who "x")) . "Invalid tool call: missing :id")
                    ((:id "noname" :arguments (:who "x")) . "Invalid tool call: missing :name")
                    ((:id "dotted" :name "greet" :arguments (:who . "x")) . "arguments"))))
      (dolist (case cases)
        (let ((r (car (agent-q-execute-tool-calls (list (car case)) reg))))
          (should-not (plist-get r :success))
          (should (string-match-p (regexp-quote (cdr case)) (plist-get r :content)))
          (when (and (consp (car case)) (stringp (plist-get (car case) :id)))
            (should (equal (plist-get r :id) (plist-get (car case) :id))))))
      ;; Emacs carries on, and so does the registry.
      (should (plist-get (car (agent-q-test--run reg '(:id "ok" :name "greet" :arguments (:who "x"))))
                         :success)))
    (should-error (agent-q-execute-tool-calls "not a list" reg) :type 'agent-q-error)
    (should-error (agent-q-execute-tool-calls '(a . b) reg) :type 'agent-q-error)))

;; A batch longer than 32 calls runs in parts (each a nested module call, so that its Lisp
;; values are freed as it returns), and usual calls are read without converting the whole plist:
;; every call must still get exactly the result the general path gives it alone.
(ert-deftest agent-q-test-long-batch-equals-the-general-path ()
  (agent-q-test--with-registry reg
    (agent-q-register-tool (agent-q-test--greet-tool) reg)
    (let* ((deep (let ((x "bottom")) (dotimes (_ 200) (setq x (list x))) x))
           (shapes `((:id "ok" :name "greet" :arguments (:who "Ada"))
                     (:id "json" :name "greet" :arguments "{\"who\": \"Bob\"}")
                     (:id "client" :name "greet" :arguments (:who "C") :client "tester")
                     (:name "greet" :id "order" :arguments (:who "D"))
                     (:id "noargs" :name "greet")
                     (:id "unknown" :name "nope" :arguments nil)
                     (:id 7 :name "greet" :arguments (:who "int id"))
                     (:id "sym" :name greet :arguments (:who "symbol name"))
                     (:id "extra" :name "greet" :arguments (:who "E") :other 1)
                     (:id "dup" :id "dup2" :name "greet" :arguments (:who "F"))
                     (:id "empty-name" :name "" :arguments (:who "G"))
                     (:name "greet" :arguments (:who "no id"))
                     (:id "deep" :name "greet" :arguments (:who ,deep))
                     (:id "odd" :name "greet" :arguments)
                     (:id "bad" :name "greet" :arguments (:who ,(current-buffer)))
                     (:id "type" :name "greet" :arguments (:who 3))
                     "not a call"
                     nil))
           (calls (let (l) (dotimes (i 100) (push (nth (% i (length shapes)) shapes) l)) (nreverse l)))
           (untimed (lambda (r)
                      (let ((copy (copy-sequence r)))
                        (plist-put copy :metadata
                                   (plist-put (copy-sequence (plist-get r :metadata))
                                              :execution_time_ms 0)))))
           (results (agent-q-execute-tool-calls calls reg)))
      (should (= (length results) 100))
      (cl-loop for call in calls
               for result in results
               with options = (agent-q--batch-options nil agent-q-confirm-safety-levels nil)
               for alone = (agent-q--core-call-start reg call options)
               do (should (eq (car alone) :done))
               (should (equal (funcall untimed result) (funcall untimed (cadr alone)))))
      (should (equal (plist-get (nth 0 results) :content) "Hello, Ada."))
      (should (string-match-p "nested more than 128 levels"
                              (plist-get (nth 12 results) :content))))))

(ert-deftest agent-q-test-call-context-is-complete ()
  (agent-q-test--with-registry reg
    (let (seen)
      (agent-q-register-tool
       (agent-q-define-tool "ctx" "Record the call context." nil
                            :handler (lambda (_) (setq seen agent-q-call-context) "ok"))
       reg)
      (let ((agent-q-client "bridge"))
        (agent-q-test--run reg '(:id "c1" :name "ctx")))
      (should (equal seen '(:id "c1" :tool "ctx" :client "bridge" :origin emacs
                                :approved nil :reason nil :file nil
                                :channel "emacs bridge" :decision "auto" :rule nil)))
      ;; The user's own Lisp, naming no client, has no channel: it sees all.
      (agent-q-test--run reg '(:id "c2" :name "ctx"))
      (should (equal seen '(:id "c2" :tool "ctx" :client nil :origin emacs
                                :approved nil :reason nil :file nil :channel nil
                                :decision "auto" :rule nil))))))

(ert-deftest agent-q-test-huge-results-are-refused-not-copied ()
  (agent-q-test--with-registry reg
    (agent-q-register-tool (agent-q-define-tool "flood" "Too much output." nil
                                                :handler (lambda (_) (make-string (* 65 1024 1024) ?x)))
                           reg)
    (let ((r (car (agent-q-test--run reg '(:id "1" :name "flood")))))
      (should-not (plist-get r :success))
      (should (string-match-p "the result is 68157440 bytes, more than agent-q reads"
                              (plist-get r :content))))))

(ert-deftest agent-q-test-reentrant-approval ()
  "The approval function may call agent-q again: no lock is held meanwhile."
  (agent-q-test--with-registry reg
    (agent-q-test--dangerous reg)
    (agent-q-register-tool (agent-q-test--greet-tool) reg)
    (let* ((inner nil)
           (agent-q-approval-function
            (lambda (_ _)
              (setq inner (agent-q-execute-tool-calls '((:id "in" :name "greet" :arguments (:who "inner"))) reg))
              (agent-q-register-tool (agent-q-define-tool "added_meanwhile" "Added during a prompt." nil) reg)
              (agent-q-remove-tool "greet" reg)
              :approved))
           (r (car (agent-q-test--run reg '(:id "out" :name "zap" :arguments (:path "/x"))))))
      (should (plist-get r :success))
      (should (equal (plist-get (car inner) :content) "Hello, inner."))
      (should (agent-q-get-tool "added_meanwhile" reg))
      (should-not (agent-q-get-tool "greet" reg)))))

(ert-deftest agent-q-test-annotations-survive-registration ()
  (let ((registry (agent-q-make-registry)))
    (agent-q-register-tool
     (agent-q-define-tool "run_code" "Run code." nil :safety-level :cautious
                          :handler #'ignore :annotations '(:destructive t :open-world nil))
     registry)
    (should (equal (agent-q-tool-annotations (agent-q-get-tool "run_code" registry))
                   '(:destructive t :open-world nil)))
    (should (equal (agent-q-tool-annotations (agent-q-get-tool "eval_form"))
                   '(:destructive t :open-world t)))
    (should-error (agent-q-register-tool
                   (agent-q-define-tool "bad_hint" "Bad." nil :handler #'ignore
                                        :annotations '(:harmless t))
                   registry)
                  :type 'agent-q-error)))

;;;; The log buffer and the demonstration's audit file

(ert-deftest agent-q-test-log-buffer-keeps-a-bounded-tail ()
  (let ((agent-q-log-buffer-name " *agent-q-log-test*")
        (agent-q-log-max-chars 2000))
    (unwind-protect
        (progn
          (dotimes (i 500)
            (agent-q--log-line (format "line %04d %s" i (make-string 40 ?x))))
          (with-current-buffer agent-q-log-buffer-name
            (should (<= (buffer-size) (+ 2000 200)))
            (should (>= (buffer-size) 1000))
            ;; Whole lines, the newest last.
            (goto-char (point-min))
            (should (looking-at "[0-9-]+ [0-9:]+ line "))
            (should (string-match-p "line 0499 x+\n\\'" (buffer-string)))))
      (kill-buffer agent-q-log-buffer-name))))

(ert-deftest agent-q-test-demo-keeps-the-users-audit-file-untouched ()
  (require 'agent-q-demo)
  (let* ((home (make-temp-file "agent-q-demo-home" t))
         (user-emacs-directory (file-name-as-directory home))
         (agent-q-audit-file (locate-user-emacs-file "agent-q-audit.jsonl"))
         (real agent-q-audit-file)
         (agent-q-demo--audit-file nil)
         (kill-emacs-hook nil))
    (unwind-protect
        (progn
          (agent-q-demo--private-audit-file)
          (should-not (equal agent-q-audit-file real))
          (let ((agent-q-approval-function (lambda (&rest _) :approved)))
            (should (plist-get (car (agent-q-execute-tool-calls
                                     '((:id "d1" :name "eval_form" :arguments (:form "(+ 1 2)")))))
                               :success)))
          (should-not (file-exists-p real))
          (should (string-match-p "\"d1\""
                                  (with-temp-buffer (insert-file-contents agent-q-audit-file)
                                                    (buffer-string)))))
      (ignore-errors (delete-file agent-q-demo--audit-file))
      (delete-directory home t))))

(provide 'agent-q-test)

;;; agent-q-test.el ends here
