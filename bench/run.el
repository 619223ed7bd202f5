;;; run.el --- Entry point of `make bench'  -*- lexical-binding: t -*-

;;; Commentary:

;; Usage (what `make bench' does, from the repository root):
;;   emacs --batch -Q -L lisp -l bench/run.el
;;
;; Byte-compiles agent-q's own Lisp (lisp/*.el), the harness and every
;; bench/agent-q-bench-*.el into a temporary directory (so the measured
;; loops run compiled and no .elc is left in the tree), loads them, runs
;; the sections and writes bench/RESULTS.md.  A file that fails to compile
;; stops the run: numbers from interpreted code would be misleading.
;; agent-q's Lisp is compiled because that is how users run it (package.el
;; and `make' installs byte-compile it): interpreted, its small wrappers
;; around the module (the call of each handler, say) cost more than the
;; module itself, with GC in most of all.

;;; Code:

(require 'bytecomp)

(let* ((dir (file-name-directory (or load-file-name buffer-file-name)))
       (out (make-temp-file "agent-q-bench" t))
       (lisp (directory-files (expand-file-name "../lisp" dir) t "\\`agent-q.*\\.el\\'"))
       (files (append lisp
                      (list (expand-file-name "agent-q-bench.el" dir))
                      (directory-files dir t "\\`agent-q-bench-.*\\.el\\'"))))
  (unwind-protect
      (progn
        (add-to-list 'load-path out)
        (add-to-list 'load-path dir t)
        (require 'agent-q)
        ;; Compile everything first, then load the compiled files, so that a file
        ;; requiring another one gets the compiled version (loading agent-q's
        ;; .elc files replaces the interpreted definitions that compiling the
        ;; others loaded).
        (dolist (file files)
          (let ((byte-compile-dest-file-function
                 (lambda (src) (expand-file-name (concat (file-name-base src) ".elc") out))))
            (unless (byte-compile-file file)
              (error "Cannot byte-compile %s" file))))
        (dolist (file files)
          (load (expand-file-name (concat (file-name-base file) ".elc") out) nil t))
        (setq agent-q-bench-source-directory dir)
        (agent-q-bench-run-all))
    (delete-directory out t)))

(kill-emacs 0)

;;; run.el ends here
