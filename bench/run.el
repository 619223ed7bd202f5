;;; run.el --- Entry point of `make bench'  -*- lexical-binding: t -*-

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

;; The current sources, never an older .elc beside them: everything is
;; compiled afresh below.
(setq load-prefer-newer t)

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

(provide 'run)

;;; run.el ends here
