;;; agent-q-bench-journal.el --- Benchmarks of the journal of the agents' changes  -*- lexical-binding: t -*-

;; Copyright (C) 2026 The agent-q authors

;; Author: The agent-q authors
;; Maintainer: The agent-q authors
;; Keywords: tools, maint
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

;; The journal (lisp/agent-q-journal.el, crates/agent-q-core/src/
;; journal/) in numbers, against issue 33's targets:
;;
;; - recording a change: `agent-q-journal-record' as the edit paths
;;   call it (the file's text before and after; the guard's sensitive
;;   check, the diff, the entry appended to the file), timed call by
;;   call over 10,000 changes to an average file: p50, p90 and p99 of
;;   the wall time (target: p50 at most 1 ms), beside the time of
;;   writing the file itself with `write-region';
;; - the journal file those 10,000 changes make (target: at most 50 MB);
;; - `M-x agent-q-changes' opening with those 10,000 entries: the
;;   journal in memory, and read again from its file first (as the
;;   first list after a restart): the median wall time (target: at most
;;   100 ms).
;;
;; An average file is the median file of this repository's own Emacs
;; Lisp, Rust and Python sources (344 lines, 15 KB in November 2026):
;; 350 lines of 43 characters.  Each change replaces three adjacent
;; lines somewhere in it (one hunk), made by one of three agents in one
;; of 30 sessions, to one of 100 files.

;;; Code:

(require 'cl-lib)
(require 'agent-q-bench)
(require 'agent-q-journal)

(defconst agent-q-bench-journal-changes 10000
  "How many changes are recorded.")

(defconst agent-q-bench-journal-lines 350
  "The lines of the average file.")

(defun agent-q-bench-journal--file-lines ()
  "The average file's lines, a vector of strings of 42 characters."
  (let ((lines (make-vector agent-q-bench-journal-lines nil)))
    (dotimes (i agent-q-bench-journal-lines)
      (aset lines i (format "%-42s" (format "(setq value-%d (compute-line %d))" i (* 7 i)))))
    lines))

(defun agent-q-bench-journal--text (lines)
  "LINES joined as a file's text."
  (mapconcat #'identity lines "\n"))

(defun agent-q-bench-journal--change (lines i)
  "The text before and after change I of the file of LINES: (OLD . NEW).
LINES is changed in place, so that the next change starts from this one's."
  (let* ((old (agent-q-bench-journal--text lines))
         (at (% (* 37 i) (- agent-q-bench-journal-lines 3))))
    (dotimes (k 3)
      (aset lines (+ at k) (format "%-42s" (format "(setq value-%d (changed %d %d))" (+ at k) i k))))
    (cons old (agent-q-bench-journal--text lines))))

(defun agent-q-bench-journal--percentile (numbers p)
  "The percentile P (0 to 100) of NUMBERS, by the nearest rank."
  (let* ((sorted (sort (copy-sequence numbers) #'<))
         (rank (max 0 (1- (ceiling (* (/ p 100.0) (length sorted)))))))
    (nth rank sorted)))

(defun agent-q-bench-journal--ms (seconds)
  "SECONDS in milliseconds, as text."
  (format "%.3f" (* 1000 seconds)))

(defun agent-q-bench-journal--record (dir)
  "Record the changes in a journal in DIR; return (RECORDS WRITES).
RECORDS and WRITES are the wall times of each record and of writing
the new text to its file."
  (let ((files (make-vector 100 nil))
        (records nil) (writes nil))
    (dotimes (f 100)
      (aset files f (cons (expand-file-name (format "src/file-%d.el" f) dir)
                          (agent-q-bench-journal--file-lines))))
    (make-directory (expand-file-name "src" dir) t)
    (dotimes (i agent-q-bench-journal-changes)
      (let* ((entry (aref files (% i 100)))
             (change (agent-q-bench-journal--change (cdr entry) i))
             (agent (nth (% i 3) '("claude" "gemini" "codex")))
             (t0 (float-time)))
        (write-region (cdr change) nil (car entry) nil 'silent)
        (let ((t1 (float-time)))
          (agent-q-journal-record :agent agent :session (format "%s-%d" agent (% (/ i 100) 10))
                                  :file (car entry) :how "review" :accepted 1
                                  :old (car change) :new (cdr change))
          (push (- t1 t0) writes)
          (push (- (float-time) t1) records))))
    (list records writes)))

(defun agent-q-bench-journal--open-list ()
  "Open `agent-q-changes' once; return its wall time in seconds."
  (when (get-buffer "*agent-q-changes*")
    (kill-buffer "*agent-q-changes*"))
  (garbage-collect)
  (let ((t0 (float-time)))
    (save-window-excursion (agent-q-changes))
    (- (float-time) t0)))

(defun agent-q-bench-journal--rows ()
  "Time the module's rows of the list alone; return (SECONDS . GCS)."
  (garbage-collect)
  (let ((gcs gcs-done) (t0 (float-time)))
    (agent-q--core-journal-rows (agent-q-journal--get) nil '(19 10 10 24 40 10)
                                (expand-file-name "~"))
    (cons (- (float-time) t0) (- gcs-done gcs))))

(defun agent-q-bench-journal-run ()
  "Run the journal's benchmarks."
  (let* ((dir (make-temp-file "agent-q-bench-journal" t))
         (agent-q-journal-file (expand-file-name "journal.jsonl" dir))
         (agent-q-journal-max-entries agent-q-bench-journal-changes)
         (agent-q-journal--journal nil))
    (unwind-protect
        (pcase-let* ((`(,records ,writes) (agent-q-bench-journal--record dir))
                     (size (file-attribute-size (file-attributes agent-q-journal-file)))
                     (count (length (agent-q--core-journal-entries (agent-q-journal--get))))
                     (in-memory (cl-loop repeat agent-q-bench-runs
                                         collect (agent-q-bench-journal--open-list)))
                     (from-file (cl-loop repeat agent-q-bench-runs
                                         collect (progn (setq agent-q-journal--journal nil)
                                                        (agent-q-bench-journal--open-list))))
                     (listed (with-current-buffer "*agent-q-changes*"
                               (length agent-q-changes--ids)))
                     (text (with-current-buffer "*agent-q-changes*"
                             (- (position-bytes (point-max)) 1)))
                     (rows (cl-loop repeat agent-q-bench-runs
                                    collect (agent-q-bench-journal--rows))))
          (agent-q-bench-note "Measured %s, load average %s at the end (2 cores shared with other work: the times are upper bounds).  Run alone: `AGENT_Q_BENCH_ONLY=journal AGENT_Q_BENCH_OUTPUT=FILE emacs --batch -Q -L lisp -l bench/run.el`, its section put in RESULTS.md."
                              (format-time-string "%F %R UTC" nil t)
                              (mapconcat (lambda (l) (format "%.2f" l)) (load-average t) " "))
          (agent-q-bench-note "")
          (agent-q-bench-note "%d changes (wall clock, GC in), each three adjacent lines of an average file (350 lines of 43 characters, 15 KB: the median of this repository's .el, .rs and .py files), to 100 files, by 3 agents in 30 sessions; the journal holds %d entries and the list shows %d."
                              agent-q-bench-journal-changes count listed)
          (agent-q-bench-note "")
          (agent-q-bench-note "| measure | p50 | p90 | p99 | target |")
          (agent-q-bench-note "|---|---|---|---|---|")
          (agent-q-bench-note "| recording a change (`agent-q-journal-record`), ms | %s | %s | %s | p50 ≤ 1 ms: **%s** |"
                              (agent-q-bench-journal--ms (agent-q-bench-journal--percentile records 50))
                              (agent-q-bench-journal--ms (agent-q-bench-journal--percentile records 90))
                              (agent-q-bench-journal--ms (agent-q-bench-journal--percentile records 99))
                              (if (<= (agent-q-bench-journal--percentile records 50) 0.001) "met" "missed"))
          (agent-q-bench-note "| the edit itself (`write-region` of the new text), ms | %s | %s | %s | |"
                              (agent-q-bench-journal--ms (agent-q-bench-journal--percentile writes 50))
                              (agent-q-bench-journal--ms (agent-q-bench-journal--percentile writes 90))
                              (agent-q-bench-journal--ms (agent-q-bench-journal--percentile writes 99)))
          (agent-q-bench-note "| `M-x agent-q-changes`, %d entries in memory, ms (%d runs) | %s | | max %s | p50 ≤ 100 ms: **%s** |"
                              listed agent-q-bench-runs
                              (agent-q-bench-journal--ms (agent-q-bench-journal--percentile in-memory 50))
                              (agent-q-bench-journal--ms (apply #'max in-memory))
                              (if (<= (agent-q-bench-journal--percentile in-memory 50) 0.1) "met" "missed"))
          (agent-q-bench-note "| `M-x agent-q-changes` after reading the journal from its file (as after a restart), ms (%d runs) | %s | | max %s | |"
                              agent-q-bench-runs
                              (agent-q-bench-journal--ms (agent-q-bench-journal--percentile from-file 50))
                              (agent-q-bench-journal--ms (apply #'max from-file)))
          (agent-q-bench-note "")
          (agent-q-bench-note "Where the list's time goes: the module's rows (`agent-q--core-journal-rows`: order, columns, and the text of %d bytes made a Lisp string, which Emacs decodes from UTF-8), timed alone right after, take %s ms (median of %d; %d garbage collections in them all): nearly all of it, the buffer's mode and inserting the text the rest."
                              text
                              (agent-q-bench-journal--ms (agent-q-bench-journal--percentile (mapcar #'car rows) 50))
                              agent-q-bench-runs (apply #'+ (mapcar #'cdr rows)))
          (agent-q-bench-note "")
          (agent-q-bench-note "The journal file of the %d changes: **%.1f MB** (%d bytes, its size on disk by `file-attributes`; %.0f bytes a change; target ≤ 50 MB: **%s**)."
                              agent-q-bench-journal-changes (/ size 1e6) size
                              (/ (float size) agent-q-bench-journal-changes)
                              (if (<= size 50000000) "met" "missed")))
      (when (get-buffer "*agent-q-changes*")
        (kill-buffer "*agent-q-changes*"))
      (delete-directory dir t))))

(agent-q-bench-define-section 10 "journal" "10. The journal of the agents' changes"
                              #'agent-q-bench-journal-run)

(provide 'agent-q-bench-journal)

;;; agent-q-bench-journal.el ends here
