;;; lint.el --- Byte-compile and checkdoc agent-q's Lisp  -*- lexical-binding: t -*-

;; Copyright (C) 2026 The agent-q authors

;; Author: The agent-q authors
;; Maintainer: The agent-q authors
;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1"))
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

(provide 'lint)

;;; lint.el ends here
