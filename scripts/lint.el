;;; lint.el --- Byte-compile and checkdoc agent-q's Lisp  -*- lexical-binding: t -*-

;;; Commentary:

;; Usage: emacs --batch -Q -L lisp -l scripts/lint.el FILE...
;; Byte-compiles each FILE into a temporary directory with warnings as
;; errors (so no stale .elc is left beside the sources) and runs checkdoc
;; on it.  Exits non-zero on any warning.

;;; Code:

(require 'bytecomp)
(require 'checkdoc)

(let ((failed nil)
      (out (make-temp-file "agent-q-lint" t)))
  (dolist (file command-line-args-left)
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
  (setq command-line-args-left nil)
  (delete-directory out t)
  (kill-emacs (if failed 1 0)))

;;; lint.el ends here
