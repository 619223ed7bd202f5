;;; mcp-profile.el --- Where an interactive Emacs's time goes serving MCP calls  -*- lexical-binding: t -*-

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

;; A diagnostic beside benchmark 7, not part of `make bench':
;;
;;   emacs --batch -Q -L lisp -L bench -l bench/mcp-profile.el TOOL OUT
;;
;; starts the interactive Emacs of benchmark 7 (an `emacs -nw' in tmux,
;; serving MCP, agent-q byte-compiled), runs Emacs's profiler (cpu+mem)
;; in it while bench/mcp-load.py makes 8 clients x 100 calls of TOOL
;; (read_file or describe_symbol), and writes to OUT the profiler's
;; report (every entry expanded), the GC counters' deltas and the
;; client's figures.  The module is compiled by run.el for the
;; benchmark; here agent-q is compiled into a temporary directory first.

;;; Code:

(require 'bytecomp)
(require 'cl-lib)

(defvar agent-q--directory)
(defvar agent-q-bench-source-directory)
(declare-function agent-q-bench-mcp--interactive-start "agent-q-bench-mcp" (dir))
(declare-function agent-q-bench-mcp--interactive-eval "agent-q-bench-mcp" (serving form))
(declare-function agent-q-bench-mcp--interactive-stop "agent-q-bench-mcp" (serving))
(declare-function agent-q-bench-mcp--run "agent-q-bench-mcp" (url token tool arguments pid))

(let* ((bench (file-name-directory (or load-file-name buffer-file-name)))
       (lisp (expand-file-name "../lisp" bench))
       (out (make-temp-file "agent-q-profile" t))
       (tool (nth 0 command-line-args-left))
       (report (expand-file-name (nth 1 command-line-args-left)))
       (byte-compile-dest-file-function
        (lambda (src) (expand-file-name (concat (file-name-base src) ".elc") out))))
  (setq command-line-args-left nil)
  (require 'agent-q)
  (dolist (file (directory-files lisp t "\\`agent-q.*\\.el\\'"))
    (byte-compile-file file))
  (setq agent-q--directory (file-name-as-directory out))
  (load (expand-file-name "agent-q-bench" bench) nil t)
  (load (expand-file-name "agent-q-bench-mcp" bench) nil t)
  (setq agent-q-bench-source-directory bench)
  (let* ((dir (file-name-as-directory (file-truename (make-temp-file "agent-q-bench-mcp" t))))
         (file (expand-file-name "two-lines.txt" dir))
         (arguments (if (equal tool "read_file") (list :path file) (list :symbol "car")))
         (serving nil))
    (with-temp-file file (insert "first line\nsecond line\n"))
    (unwind-protect
        (progn
          (setq serving (agent-q-bench-mcp--interactive-start dir))
          ;; Warm up (first calls load libraries), then profile.
          (agent-q-bench-mcp--run (plist-get serving :url) (plist-get serving :token)
                                  tool arguments (plist-get serving :pid))
          (let* ((before (agent-q-bench-mcp--interactive-eval
                          serving '(progn (require 'profiler) (profiler-start 'cpu+mem)
                                          (list gcs-done gc-elapsed))))
                 (result (agent-q-bench-mcp--run (plist-get serving :url) (plist-get serving :token)
                                                 tool arguments (plist-get serving :pid)))
                 (after (agent-q-bench-mcp--interactive-eval
                         serving
                         `(progn
                            (profiler-stop)
                            (let ((gc (list gcs-done gc-elapsed)))
                              (with-temp-file ,report
                                (dolist (type '(cpu memory))
                                  (let ((buffer (profiler-report-setup-buffer
                                                 (if (eq type 'cpu) (profiler-cpu-profile)
                                                   (profiler-memory-profile)))))
                                    (insert (format "==== %s\n" type)
                                            (with-current-buffer buffer
                                              (goto-char (point-min))
                                              (while (not (eobp))
                                                (ignore-errors (profiler-report-expand-entry t))
                                                (forward-line 1))
                                              (buffer-string))
                                            "\n")
                                    (kill-buffer buffer))))
                              gc)))))
            (with-temp-buffer
              (insert (format "==== client %S\n==== gcs %d, gc-elapsed %.3f s over %d calls\n"
                              result (- (car after) (car before))
                              (- (cadr after) (cadr before))
                              (+ 201 800)))
              (insert-file-contents report)
              (write-region nil nil report))
            (message "%s: %S, %d GCs, %.3f s" tool result
                     (- (car after) (car before)) (- (cadr after) (cadr before)))))
      (when serving (agent-q-bench-mcp--interactive-stop serving))
      (delete-directory dir t)
      (delete-directory out t))))

(provide 'mcp-profile)

;;; mcp-profile.el ends here
