;;; lint.el --- Byte-compile, checkdoc and package-lint agent-q's Lisp  -*- lexical-binding: t -*-

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

;; Usage: emacs --batch -Q -L lisp -l scripts/lint.el FILE...
;;
;; For each FILE: byte-compiles it into a temporary directory with
;; warnings as errors (so no stale .elc is left beside the sources),
;; runs checkdoc on it, and, for the package's own files (those in
;; lisp/), package-lint (Debian's elpa-package-lint, which
;; scripts/ensure-deps.sh installs) with lisp/agent-q.el as the main
;; file.  Then checks the header of every Lisp file of the project
;; (lisp/, tests/, bench/, scripts/): one Author and Maintainer, one
;; URL, the license, Keywords, Commentary, Code, provide and the
;; closing line, as package-lint wants them of the main file; Version
;; and Package-Requires only in lisp/agent-q.el, as package-lint wants.
;; Exits non-zero on any finding not listed in
;; `agent-q-lint-package-lint-exceptions', each with its reason.

;;; Code:

(require 'bytecomp)
(require 'checkdoc)
(require 'cl-lib)

;; A file compiled here requires others: the current sources, never an
;; older .elc that `make build' left beside them.
(setq load-prefer-newer t)

(defconst agent-q-lint-root
  (expand-file-name ".." (file-name-directory (or load-file-name buffer-file-name)))
  "The project's root directory.")

(defconst agent-q-lint-package-lint-exceptions
  '(("/lisp/agent-q\\.el\\'"
     "This makes the package uninstallable in all released Emacs versions"
     ;; Debian's package-lint 0.16 predates Emacs 28.1 (April 2022) and
     ;; takes it for unreleased; agent-q needs 28.1 (string-search,
     ;; module functions), which Debian bookworm ships.
     )
    ("/lisp/agent-q\\.el\\'"
     "`with-eval-after-load' is for use in configurations"
     ;; The manual's directory goes on `Info-additional-directory-list'
     ;; once Info is loaded: loading agent-q must not load Info, and
     ;; the variable is Info's own defcustom.
     )
    ("/lisp/agent-q-gptel\\.el\\'"
     "`with-eval-after-load' is for use in configurations"
     ;; `agent-q-gptel-mode' turned on (in an init file) before gptel
     ;; is loaded gives gptel the tools when gptel-request loads: gptel
     ;; is optional, and turning the mode on must not load it.
     )
    ("/lisp/agent-q-connect\\.el\\'"
     "instead of a literal path to the Emacs user directory"
     ;; ~/.emacs.d/agent-q-mcp.json is the relay's own default (the
     ;; relay, outside Emacs, cannot read `user-emacs-directory'); the
     ;; literal is compared with the configured file to decide whether
     ;; the relay must be told where the file is.
     ))
  "Package-lint findings accepted, as (FILE-REGEXP MESSAGE-REGEXP).
The comment after each says why.")

(defconst agent-q-lint-header-lines
  '("^;; Copyright (C) [0-9]+ The agent-q authors$"
    "^;; Author: The agent-q authors$"
    "^;; Maintainer: The agent-q authors$"
    "^;; Keywords: [a-z]+\\(, [a-z]+\\)*$"
    "^;; URL: https://example\\.invalid/agent-q$"
    "^;; SPDX-License-Identifier: GPL-3\\.0-or-later$"
    "^;;; Commentary:$"
    "^;;; Code:$")
  "Lines every Lisp file of the project has, as regexps.")

(defun agent-q-lint-header-problems (file)
  "The header conventions FILE breaks, as a list of strings."
  (with-temp-buffer
    (insert-file-contents file)
    (let* ((name (file-name-base file))
           (main (equal (file-name-nondirectory file) "agent-q.el"))
           (problems nil))
      (goto-char (point-min))
      (unless (looking-at (format "^;;; %s\\.el --- [^ ].*  -\\*- lexical-binding: t -\\*-$"
                                  (regexp-quote name)))
        (push "the first line is not \";;; FILE.el --- Summary  -*- lexical-binding: t -*-\""
              problems))
      (dolist (re agent-q-lint-header-lines)
        (goto-char (point-min))
        (let ((count 0))
          (while (re-search-forward re nil t) (cl-incf count))
          (unless (= count 1)
            (push (format "%d lines match %s, not one" count re) problems))))
      (dolist (field '("Version" "Package-Requires"))
        (goto-char (point-min))
        (let ((found (re-search-forward (format "^;; %s: " field) nil t)))
          (cond ((and main (not found)) (push (format "no %s: header" field) problems))
                ((and found (not main))
                 (push (format "a %s: header outside the main file" field) problems)))))
      (goto-char (point-min))
      (unless (re-search-forward (format "^(provide '%s)$" (regexp-quote name)) nil t)
        (push (format "no (provide '%s)" name) problems))
      (goto-char (point-max))
      (skip-chars-backward "\n")
      (forward-line 0)
      (unless (looking-at (format ";;; %s\\.el ends here$" (regexp-quote name)))
        (push (format "the last line is not \";;; %s.el ends here\"" name) problems))
      (nreverse problems))))

(defun agent-q-lint-package-lint (files)
  "Run package-lint on FILES; return non-nil when it found anything not excepted."
  (dolist (dir (file-expand-wildcards "/usr/share/emacs/site-lisp/elpa/package-lint-*"))
    (add-to-list 'load-path dir))
  (if (not (require 'package-lint nil t))
      (progn
        (message "lint: package-lint is not installed; run scripts/ensure-deps.sh --lint")
        t)
    (let ((failed nil)
          (package-lint-main-file (expand-file-name "lisp/agent-q.el" agent-q-lint-root)))
      (dolist (file files failed)
        (let ((file (expand-file-name file)))
          (with-temp-buffer
            (insert-file-contents file)
            (setq buffer-file-name file)
            (emacs-lisp-mode)
            (dolist (finding (package-lint-buffer))
              (cl-destructuring-bind (line column type message) finding
                (unless (cl-some (lambda (exception)
                                   (and (string-match-p (car exception) file)
                                        (string-match-p (regexp-quote (cadr exception)) message)))
                                 agent-q-lint-package-lint-exceptions)
                  (message "%s:%d:%d: package-lint %s: %s" file line column type message)
                  (setq failed t))))
            (set-buffer-modified-p nil)
            (setq buffer-file-name nil)))))))

(let ((failed nil)
      (out (make-temp-file "agent-q-lint" t))
      (files command-line-args-left))
  (dolist (file files)
    (let* ((byte-compile-error-on-warn t)
           (byte-compile-dest-file-function
            (lambda (src) (expand-file-name (concat (file-name-base src) ".elc") out))))
      (unless (byte-compile-file file)
        (message "FAIL byte-compile %s" file)
        (setq failed t)))
    (let ((checkdoc-create-error-function
           (lambda (text start _end &optional _unfixable)
             (message "%s:%d: checkdoc: %s" file (line-number-at-pos start) text)
             (setq failed t)
             nil))
          (checkdoc-autofix-flag 'never))
      (with-current-buffer (find-file-noselect file)
        (checkdoc-current-buffer t))))
  (when (agent-q-lint-package-lint
         (cl-remove-if-not (lambda (file)
                             (file-equal-p (file-name-directory (expand-file-name file))
                                           (expand-file-name "lisp/" agent-q-lint-root)))
                           files))
    (setq failed t))
  (dolist (dir '("lisp" "tests" "bench" "scripts"))
    (dolist (file (directory-files (expand-file-name dir agent-q-lint-root) t "\\.el\\'"))
      (dolist (problem (agent-q-lint-header-problems file))
        (message "%s: header: %s" file problem)
        (setq failed t))))
  (setq command-line-args-left nil)
  (delete-directory out t)
  (kill-emacs (if failed 1 0)))

(provide 'lint)

;;; lint.el ends here
