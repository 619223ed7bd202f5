;;; agent-q-bench-freezes-files.el --- Freezes: read_file and read_buffer on large input  -*- lexical-binding: t -*-

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

;; Nothing a tool does on Emacs's main thread may take more
;; than 100 ms at realistic sizes.  This section times, through
;; `agent-q-execute-tool-calls' (guard, handler, result), with the wall
;; clock (everything here runs on Emacs's main thread):
;;
;; - read_file of a 50 MB UTF-8 file: the first page and a page in the
;;   middle (the module reads the bytes through one descriptor, counts
;;   lines with memchr and decodes only the page);
;; - the same file read the way read_file read it before
;;   (`insert-file-contents' of the whole file), for comparison;
;; - read_file of a 50 MB Latin-1 file: clean ISO-8859-1 is paged by
;;   the module as UTF-8 is (each byte is its character);
;; - read_file of a 50 MB windows-1252 file (C1 bytes: curly quotes,
;;   ellipses), which Emacs must decode (the fallback for codings other
;;   than UTF-8 and clean Latin-1, bounded by
;;   `agent-q-builtins-max-file-size');
;; - read_buffer on a 20 MB buffer: the first page and a middle page.

;;; Code:

(require 'cl-lib)
(require 'agent-q-bench)

(declare-function agent-q-make-registry "agent-q" ())
(declare-function agent-q-register-builtin-tools "agent-q-builtins" (&optional registry))
(declare-function agent-q-execute-tool-calls "agent-q" (calls &optional registry))
(defvar agent-q-allowed-directories)
(defvar agent-q-audit-file)

(defconst agent-q-bench-freezes-files--line
  "The quick brown fox jumps over the lazy dog; café, naïve, 日本語 — line %07d\n"
  "The format of one line of the UTF-8 file (80-odd bytes).")

(defconst agent-q-bench-freezes-files--latin-line
  "The quick brown fox jumps over the lazy dog; café, naïve, déjà vu -- line %07d\n"
  "The format of one line of the Latin-1 file.")

(defconst agent-q-bench-freezes-files--cp1252-line
  "The quick brown fox \u201cjumps\u201d over the lazy dog\u2026 caf\u00e9, 10 \u20ac -- line %07d\n"
  "The format of one line of the windows-1252 file: C1 bytes on every line.")

(defun agent-q-bench-freezes-files--make (file bytes format coding)
  "Write FILE: about BYTES bytes of lines from FORMAT in CODING; return the lines."
  (with-temp-buffer
    (let* ((per-line (string-bytes (encode-coding-string (format format 0) coding)))
           (lines (/ bytes per-line)))
      (dotimes (i lines)
        (insert (format format (1+ i))))
      (let ((coding-system-for-write coding))
        (write-region nil nil file nil 'silent))
      lines)))

(defun agent-q-bench-freezes-files--call (registry tool args)
  "Call TOOL with ARGS in REGISTRY; signal unless it succeeded."
  (let* ((agent-q-audit-file nil)
         (r (car (agent-q-execute-tool-calls
                  (list (list :id "b" :name tool :arguments args)) registry))))
    (unless (plist-get r :success)
      (error "%s failed: %s" tool (plist-get r :content)))
    r))

(defun agent-q-bench-freezes-files-run ()
  "Time read_file on 50 MB files and read_buffer on a 20 MB buffer."
  (let* ((dir (file-name-as-directory (file-truename (make-temp-file "agent-q-freeze" t))))
         (utf8 (expand-file-name "big-utf8.txt" dir))
         (latin (expand-file-name "big-latin1.txt" dir))
         (cp1252 (expand-file-name "big-cp1252.txt" dir))
         (agent-q-allowed-directories (list dir))
         (registry (let ((r (agent-q-make-registry))) (agent-q-register-builtin-tools r) r))
         (buffer (generate-new-buffer "agent-q-bench-20mb")))
    (unwind-protect
        (let* ((size 50000000)          ; 50 MB, under agent-q-builtins-max-file-size
               (lines (agent-q-bench-freezes-files--make
                       utf8 size agent-q-bench-freezes-files--line 'utf-8-unix))
               (middle (/ lines 2)))
          (agent-q-bench-freezes-files--make
           latin size agent-q-bench-freezes-files--latin-line 'iso-latin-1-unix)
          (agent-q-bench-freezes-files--make
           cp1252 size agent-q-bench-freezes-files--cp1252-line 'windows-1252-unix)
          (with-current-buffer buffer
            (while (< (buffer-size) (* 20 1024 1024))
              (insert (format agent-q-bench-freezes-files--line (point)))))
          (agent-q-bench-note "- Files: %s (%d lines, %d bytes) and the same lines in Latin-1 (%d bytes); a buffer of %d characters."
                              (file-name-nondirectory utf8) lines
                              (file-attribute-size (file-attributes utf8))
                              (file-attribute-size (file-attributes latin))
                              (buffer-size buffer))
          (agent-q-bench-compare
           "freezes: read_file, 50 MB UTF-8 file"
           (list (list :label "before: insert-file-contents of the whole file"
                       :run (lambda (_) (with-temp-buffer (insert-file-contents utf8))))
                 (list :label "read_file, first page"
                       :run (lambda (_) (agent-q-bench-freezes-files--call
                                         registry "read_file" (list :path utf8))))
                 (list :label (format "read_file, middle page (offset %d)" middle)
                       :run (lambda (_) (agent-q-bench-freezes-files--call
                                         registry "read_file" (list :path utf8 :offset middle)))))
           :clock 'wall :unit "call")
          (agent-q-bench-compare
           "freezes: read_file, 50 MB Latin-1 file (the module pages it)"
           (list (list :label "read_file, middle page"
                       :run (lambda (_) (agent-q-bench-freezes-files--call
                                         registry "read_file" (list :path latin :offset middle)))))
           :clock 'wall :unit "call")
          (agent-q-bench-compare
           "freezes: read_file, 50 MB windows-1252 file (Emacs decodes)"
           (list (list :label "read_file, middle page"
                       :run (lambda (_) (agent-q-bench-freezes-files--call
                                         registry "read_file" (list :path cp1252 :offset middle)))))
           :clock 'wall :unit "call")
          (agent-q-bench-compare
           "freezes: read_buffer, 20 MB buffer"
           (list (list :label "read_buffer, first page"
                       :run (lambda (_) (agent-q-bench-freezes-files--call
                                         registry "read_buffer" (list :buffer (buffer-name buffer)))))
                 (list :label "read_buffer, middle page"
                       :run (lambda (_) (agent-q-bench-freezes-files--call
                                         registry "read_buffer"
                                         (list :buffer (buffer-name buffer)
                                               :start (/ (buffer-size buffer) 2))))))
           :clock 'wall :unit "call")
          (dolist (row (plist-get agent-q-bench--current :rows))
            (when (and (string-prefix-p "read_" (plist-get row :label))
                       (> (agent-q-bench-row-time row) 0.1))
              (agent-q-bench-note "- Over 100 ms: %s, %s (GC %s): %.0f ms."
                                  (plist-get row :benchmark) (plist-get row :label)
                                  (plist-get row :gc) (* 1000 (agent-q-bench-row-time row)))))
          (agent-q-bench-note "Target: each call under 100 ms on Emacs's main thread.  UTF-8 and clean Latin-1 files are paged by the module (one read through the descriptor, memchr over the bytes, only the page decoded); files in other codings (the windows-1252 row) are decoded by Emacs on its main thread, which costs the \"before\" row's time or more, bounded by `agent-q-builtins-max-file-size`: Emacs's decoders run only there, and Emacs must decode them to give the text it would give."))
      (kill-buffer buffer)
      (delete-directory dir t))))

(agent-q-bench-define-section
 6 "freezes-files" "6. Freezes: read_file and read_buffer on large input"
 #'agent-q-bench-freezes-files-run)

(provide 'agent-q-bench-freezes-files)

;;; agent-q-bench-freezes-files.el ends here
