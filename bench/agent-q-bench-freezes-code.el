;;; agent-q-bench-freezes-code.el --- Freezes: the code tools without a server on a large file  -*- lexical-binding: t -*-

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

;; Nothing a tool does on Emacs's main thread may take more than 100 ms.
;; The code tools' work with a language server is measured where the
;; server runs (benchmark 9 reports the serving Emacs's longest stall
;; during each call); this section times what runs on the main thread
;; without one: file_outline of a generated Python file of about 10,000
;; lines (700 classes with two methods each and 700 functions: 2,800
;; symbols), answered from python-mode's imenu, through
;; `agent-q-execute-tool-calls', wall clock:
;;
;; - cold: the file not visited (opening it, python-mode, imenu's index,
;;   the answer); python-mode's own imenu row shows the part that is
;;   Emacs's index alone;
;; - warm: the buffer unchanged since the last call (the answer is kept
;;   per buffer version).
;;
;; A buffer this large has its index made by a separate Emacs
;; (`agent-q-code-imenu-inline-size'), so a cold call's wall clock is
;; mostly waiting; what the user feels is the longest main-loop stall
;; during the call, a 10 ms timer's longest lateness, reported beside.

;;; Code:

(require 'cl-lib)
(require 'agent-q-bench)

(declare-function agent-q-execute-tool-calls "agent-q" (calls &optional registry))
(declare-function agent-q-register-builtin-tools "agent-q-builtins" (&optional registry))
(declare-function agent-q-get-tool "agent-q" (name &optional registry))
(defvar agent-q-code-imenu-inline-size)
(declare-function imenu--make-index-alist "imenu" (&optional noerror))
(defvar agent-q-allowed-directories)
(defvar agent-q-audit-file)
(defvar agent-q-code-start-servers)
(defvar imenu--index-alist)

(defconst agent-q-bench-freezes-code--block
  "class C%d:\n    \"\"\"A class.\"\"\"\n\n    def m%d(self, x):\n        return x + 1\n\n    def n%d(self):\n        y = 1\n        return y\n\n\ndef f%d(a, b):\n    return a * b\n\n\n"
  "One block of the generated file: a class, two methods, a function.")

(defun agent-q-bench-freezes-code--outline (file)
  "Call file_outline of FILE; signal unless it succeeded."
  (let* ((agent-q-audit-file nil)
         (r (car (agent-q-execute-tool-calls
                  (list (list :id "b" :name "file_outline" :arguments (list :file file)))))))
    (unless (and (plist-get r :success)
                 (string-match-p "(source: imenu" (plist-get r :content)))
      (error "The call of file_outline failed: %s" (plist-get r :content)))
    r))

(defun agent-q-bench-freezes-code--stall (thunk)
  "Run THUNK beside a 10 ms timer; return the timer's longest lateness, ms.
The time from the last tick to THUNK's end counts too."
  (let* ((last (float-time))
         (worst 0)
         (timer (run-at-time 0.01 0.01
                             (lambda ()
                               (let ((now (float-time)))
                                 (setq worst (max worst (- now last 0.01))
                                       last now))))))
    (unwind-protect
        (progn
          (setq last (float-time))
          (funcall thunk)
          (setq worst (max worst (- (float-time) last 0.01))))
      (cancel-timer timer))
    (* 1000 worst)))

(defun agent-q-bench-freezes-code--kill (file)
  "Kill the buffer visiting FILE, if any."
  (let ((buffer (find-buffer-visiting file)))
    (when buffer (kill-buffer buffer))))

(defun agent-q-bench-freezes-code-run ()
  "Time file_outline from imenu on a 10,000-line Python file, cold and warm."
  (require 'agent-q)
  (require 'python)
  (require 'imenu)
  (let* ((dir (file-name-as-directory (file-truename (make-temp-file "agent-q-freeze-code" t))))
         (file (expand-file-name "big.py" dir))
         (agent-q-allowed-directories (list dir))
         (agent-q-code-start-servers nil)
         (blocks 700))
    (unless (agent-q-get-tool "file_outline")
      (agent-q-register-builtin-tools))
    (unwind-protect
        (progn
          (with-temp-file file
            (dotimes (i blocks)
              (insert (format agent-q-bench-freezes-code--block i i i i))))
          (agent-q-bench-note "- File: a generated Python file of %d lines, %d bytes, %d symbols."
                              (* 15 blocks) (file-attribute-size (file-attributes file))
                              (* 4 blocks))
          (agent-q-bench-compare
           "freezes: file_outline without a server (imenu), 10,000 lines"
           (list (list :label "python-mode's imenu index alone (file visited)"
                       :setup (lambda ()
                                (let ((buffer (find-file-noselect file)))
                                  (with-current-buffer buffer (setq imenu--index-alist nil))
                                  buffer))
                       :run (lambda (buffer)
                              (with-current-buffer buffer (imenu--make-index-alist t))))
                 (list :label "file_outline, cold (file not visited)"
                       :setup (lambda () (agent-q-bench-freezes-code--kill file))
                       :run (lambda (_) (agent-q-bench-freezes-code--outline file)))
                 (list :label "file_outline, warm (buffer unchanged)"
                       :setup (lambda () (agent-q-bench-freezes-code--outline file))
                       :run (lambda (_) (agent-q-bench-freezes-code--outline file))))
           :clock 'wall :unit "call")
          (let ((cold (progn (agent-q-bench-freezes-code--kill file)
                             (agent-q-bench-freezes-code--stall
                              (lambda () (agent-q-bench-freezes-code--outline file)))))
                (warm (agent-q-bench-freezes-code--stall
                       (lambda () (agent-q-bench-freezes-code--outline file)))))
            (agent-q-bench-note "- Longest main-loop stall during the call (a 10 ms timer's lateness, GC in): cold %.0f ms, warm %.0f ms (target ≤ 100 ms: %s).  The cold call's wall clock above is mostly waiting for the separate Emacs that makes the index (the file is over `agent-q-code-imenu-inline-size', %d characters); Emacs runs its timers and reads its input meanwhile."
                                cold warm (if (<= (max cold warm) 100) "met" "MISSED")
                                agent-q-code-imenu-inline-size))
          (agent-q-bench-note "Target: nothing on Emacs's main thread over 100 ms.  python-mode's imenu index of this file, made in this Emacs (the first row), would hold Emacs for its whole time: it is one call that cannot be split.  A warm outline is kept per buffer version.  With a language server the outline comes from the server (benchmark 9), and on Emacs 29 and later a *-ts-mode buffer's from its parse tree."))
      (agent-q-bench-freezes-code--kill file)
      (delete-directory dir t))))

(agent-q-bench-define-section
 6.3 "freezes-code" "6c. Freezes: the code tools without a language server on a large file"
 #'agent-q-bench-freezes-code-run)

(provide 'agent-q-bench-freezes-code)

;;; agent-q-bench-freezes-code.el ends here
