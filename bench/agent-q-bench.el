;;; agent-q-bench.el --- The benchmark harness of agent-q  -*- lexical-binding: t -*-

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

;; The harness behind `make bench' (see bench/README.md).  Each
;; benchmark file registers a section with `agent-q-bench-define-section';
;; a section compares candidates with `agent-q-bench-compare', which runs
;; them interleaved, several times each, and keeps the median, with
;; garbage collection "in" (default `gc-cons-threshold') or "out"
;; (threshold at its maximum after a `garbage-collect').  The rows end
;; up in one table, printed and written to bench/RESULTS.md with the
;; machine they ran on.
;;
;; Environment variables:
;;   AGENT_Q_BENCH_RUNS    runs per candidate (default 7; at least 3)
;;   AGENT_Q_BENCH_ONLY    section ids to run, separated by commas or
;;                         spaces (executor, xref, diff, schema, scale,
;;                         freezes-files, freezes-search)
;;   AGENT_Q_BENCH_OUTPUT  where to write the results (default
;;                         bench/RESULTS.md; when AGENT_Q_BENCH_ONLY is set,
;;                         nothing is written unless this is set too)

;;; Code:

(require 'cl-lib)
(require 'subr-x)

(defgroup agent-q-bench nil
  "The benchmarks of agent-q."
  :group 'tools
  :prefix "agent-q-bench-")

(defcustom agent-q-bench-runs
  (max 3 (string-to-number (or (getenv "AGENT_Q_BENCH_RUNS") "7")))
  "How many times each candidate runs; the median is reported."
  :type 'natnum
  :group 'agent-q-bench)

(defconst agent-q-bench-directory
  (file-name-directory (or load-file-name buffer-file-name default-directory))
  "The directory of the benchmark sources (bench/).
When the harness runs compiled from a temporary directory, run.el sets
`agent-q-bench-source-directory' instead.")

(defvar agent-q-bench-source-directory nil
  "The bench/ directory of the source tree; set by bench/run.el.")

(defconst agent-q-bench--gc-threshold (default-value 'gc-cons-threshold)
  "The `gc-cons-threshold' Emacs started with, used for \"GC in\" runs.")

(defconst agent-q-bench--gc-percentage (default-value 'gc-cons-percentage)
  "The `gc-cons-percentage' Emacs started with, used for \"GC in\" runs.")

(defvar agent-q-bench--sections nil
  "The registered sections: a list of (ORDER ID TITLE FUNCTION).")

(defvar agent-q-bench--report nil
  "The report being built: a list of section plists, newest first.")

(defvar agent-q-bench--current nil
  "The plist of the section running now (:id :title :rows :notes :status).")

;;;; Sections

(defun agent-q-bench-define-section (order id title function)
  "Register the benchmark section ID titled TITLE, run by FUNCTION.
ORDER (a number) sorts the sections.  FUNCTION takes no argument; it
adds rows with `agent-q-bench-compare' and prose with
`agent-q-bench-note', or calls `agent-q-bench-pending'."
  (setq agent-q-bench--sections
        (cons (list order id title function)
              (cl-remove id agent-q-bench--sections :key #'cadr :test #'equal))))

(defun agent-q-bench-note (format-string &rest args)
  "Add a line of Markdown to the current section: FORMAT-STRING with ARGS."
  (let ((line (apply #'format format-string args)))
    (message "  %s" line)
    (plist-put agent-q-bench--current :notes
               (append (plist-get agent-q-bench--current :notes) (list line)))))

(defun agent-q-bench-include (file)
  "Add the Markdown FILE (relative to bench/) to the current section's notes."
  (let ((path (expand-file-name file (or agent-q-bench-source-directory
                                         agent-q-bench-directory))))
    (when (file-readable-p path)
      (plist-put agent-q-bench--current :include
                 (with-temp-buffer
                   (insert-file-contents path)
                   (string-trim (buffer-string)))))))

(defun agent-q-bench-pending (why)
  "Mark the current section as not measured yet, because of WHY."
  (message "  PENDING: %s" why)
  (plist-put agent-q-bench--current :status 'pending)
  (plist-put agent-q-bench--current :pending why))

;;;; Measuring

(defun agent-q-bench--clock ()
  "The current (WALL . CPU) times in seconds; CPU is Emacs's own process time."
  (cons (float-time) (float-time (get-internal-run-time))))

(defmacro agent-q-bench-timing (place &rest body)
  "Run BODY and add its (WALL . CPU) time to the cons in PLACE.
For candidates that must exclude set-up work from each timed step:
such a candidate's :run returns (agent-q-bench-timed . PLACE)."
  (declare (indent 1))
  (let ((t0 (make-symbol "t0")) (t1 (make-symbol "t1")))
    `(let ((,t0 (agent-q-bench--clock)))
       (prog1 (progn ,@body)
         (let ((,t1 (agent-q-bench--clock)))
           (setcar ,place (+ (car ,place) (- (car ,t1) (car ,t0))))
           (setcdr ,place (+ (cdr ,place) (- (cdr ,t1) (cdr ,t0)))))))))

(defun agent-q-bench--run-once (candidate gc)
  "Run CANDIDATE once with GC `in' or `out'; return (WALL . CPU) seconds."
  (let* ((setup (plist-get candidate :setup))
         (run (plist-get candidate :run))
         (input (and setup (funcall setup))))
    (let ((gc-cons-threshold (if (eq gc 'out) most-positive-fixnum agent-q-bench--gc-threshold))
          (gc-cons-percentage (if (eq gc 'out) 1.0 agent-q-bench--gc-percentage)))
      (garbage-collect)
      (let* ((t0 (agent-q-bench--clock))
             (value (funcall run input))
             (t1 (agent-q-bench--clock)))
        (if (eq (car-safe value) 'agent-q-bench-timed)
            (cons (car (cdr value)) (cdr (cdr value)))
          (cons (- (car t1) (car t0)) (- (cdr t1) (cdr t0))))))))

(defun agent-q-bench--median (numbers)
  "The median of NUMBERS."
  (let* ((sorted (sort (copy-sequence numbers) #'<))
         (n (length sorted)))
    (if (cl-oddp n)
        (nth (/ n 2) sorted)
      (/ (+ (nth (1- (/ n 2)) sorted) (nth (/ n 2) sorted)) 2.0))))

(cl-defun agent-q-bench-compare (benchmark candidates &key (gc '(out in)) (clock 'cpu) unit)
  "Measure CANDIDATES side by side for BENCHMARK; add a row for each.
BENCHMARK names the comparison (a string).  Each candidate is a plist:
  :label   what it is (a string); the first candidate is the baseline
  :n       how many operations one run does (for the per-operation time)
  :setup   optional function of no argument, run untimed before each run;
           its value is passed to :run
  :run     function of one argument (the :setup value) doing the work
GC is a list of `out' and/or `in'.  The candidates run interleaved,
`agent-q-bench-runs' times each, and the medians are compared.  CLOCK is
`cpu' (Emacs's own CPU time: steadier on a busy machine) or `wall'
\(needed when a candidate runs a subprocess, whose time is not Emacs's).
UNIT is the name of one operation for the table (default \"op\").
Return the rows, each a plist."
  (let (rows)
    (dolist (mode gc)
      (let ((times (make-vector (length candidates) nil)))
        (dotimes (_ agent-q-bench-runs)
          (cl-loop for c in candidates for i from 0
                   do (push (agent-q-bench--run-once c mode) (aref times i))))
        (let (base)
          (cl-loop
           for c in candidates for i from 0
           do (let* ((n (or (plist-get c :n) 1))
                     (walls (mapcar #'car (aref times i)))
                     (cpus (mapcar #'cdr (aref times i)))
                     (wall (/ (agent-q-bench--median walls) n))
                     (cpu (/ (agent-q-bench--median cpus) n))
                     (main (if (eq clock 'wall) wall cpu))
                     (row (list :benchmark benchmark :label (plist-get c :label)
                                :gc mode :n n :unit (or unit "op")
                                :clock clock
                                :wall wall :cpu cpu
                                :wall-min (/ (apply #'min walls) n)
                                :cpu-min (/ (apply #'min cpus) n))))
                (if (null base)
                    (setq base main)
                  (setq row (plist-put row :ratio (/ main (max base 1e-12)))))
                (message "  %-44s %-40s GC %-3s %s"
                         benchmark (plist-get c :label) mode
                         (agent-q-bench--format-row-time row))
                (push row rows))))))
    (setq rows (nreverse rows))
    (plist-put agent-q-bench--current :rows
               (append (plist-get agent-q-bench--current :rows) rows))
    rows))

(defun agent-q-bench-row-time (row)
  "The per-operation time of ROW in seconds, on its clock."
  (if (eq (plist-get row :clock) 'wall) (plist-get row :wall) (plist-get row :cpu)))

(defun agent-q-bench-find (benchmark label gc)
  "The row of BENCHMARK for LABEL with GC mode in the current section."
  (cl-find-if (lambda (r) (and (equal (plist-get r :benchmark) benchmark)
                               (equal (plist-get r :label) label)
                               (eq (plist-get r :gc) gc)))
              (plist-get agent-q-bench--current :rows)))

(defun agent-q-bench-growth (sizes seconds)
  "The exponent k in time ~ size^k between the first and last of SIZES.
SECONDS are the times measured at SIZES."
  (let ((n0 (car sizes)) (n1 (car (last sizes)))
        (t0 (car seconds)) (t1 (car (last seconds))))
    (/ (log (/ (max t1 1e-12) (max t0 1e-12))) (log (/ (float n1) n0)))))

(defun agent-q-bench-growth-word (k)
  "Describe the growth exponent K in words."
  (cond ((< k 0.85) "better than linear")
        ((<= k 1.15) "linear")
        ((<= k 1.4) "slightly worse than linear")
        (t "worse than linear")))

;;;; Formatting

(defun agent-q-bench--us (seconds)
  "SECONDS as microseconds, with sensible precision."
  (let ((us (* 1e6 seconds)))
    (cond ((< us 10) (format "%.2f" us))
          ((< us 1000) (format "%.1f" us))
          (t (format "%.0f" us)))))

(defun agent-q-bench--format-row-time (row)
  "A short text of ROW's times and ratio."
  (format "%s µs/%s (%s; wall %s)%s"
          (agent-q-bench--us (agent-q-bench-row-time row)) (plist-get row :unit)
          (plist-get row :clock)
          (agent-q-bench--us (plist-get row :wall))
          (if (plist-get row :ratio) (format "  %.2f×" (plist-get row :ratio)) "")))

(defun agent-q-bench--table (rows)
  "ROWS as a Markdown table."
  (concat
   "| benchmark | variant | GC | n | µs per op (median) | clock | wall µs (median) | × first |\n"
   "|---|---|---|---:|---:|---|---:|---:|\n"
   (mapconcat
    (lambda (r)
      (format "| %s | %s | %s | %d | %s /%s | %s | %s | %s |"
              (plist-get r :benchmark) (plist-get r :label) (plist-get r :gc)
              (plist-get r :n)
              (agent-q-bench--us (agent-q-bench-row-time r)) (plist-get r :unit)
              (plist-get r :clock)
              (agent-q-bench--us (plist-get r :wall))
              (if (plist-get r :ratio) (format "%.2f" (plist-get r :ratio)) "1 (base)")))
    rows "\n")
   "\n"))

(defun agent-q-bench--shell (command)
  "The trimmed output of shell COMMAND, or \"unknown\"."
  (let ((out (ignore-errors
               (with-temp-buffer
                 (and (zerop (call-process shell-file-name nil t nil
                                           shell-command-switch command))
                      (string-trim (buffer-string)))))))
    (if (or (null out) (string-empty-p out)) "unknown" out)))

(defun agent-q-bench-machine ()
  "A Markdown description of the machine and software the benchmarks run on."
  (let ((cpu (agent-q-bench--shell
              "grep -m1 'model name' /proc/cpuinfo | sed 's/.*: *//'")))
    (concat
     (format "- Date: %s\n" (format-time-string "%F %T UTC" nil t))
     (format "- CPU: %s; nproc %s\n" cpu (agent-q-bench--shell "nproc"))
     (format "- Load average at the start: %s\n"
             (mapconcat (lambda (l) (format "%.2f" (/ l 100.0))) (load-average) " "))
     (format "- Emacs: %s\n" (car (split-string (emacs-version) "\n")))
     (format "- rustc: %s\n" (agent-q-bench--shell "rustc --version"))
     (format "- agent-q: %s (git %s)\n"
             (if (boundp 'agent-q-version) (symbol-value 'agent-q-version) "?")
             (agent-q-bench--shell "echo $(git rev-parse --short HEAD 2>/dev/null) $(git diff --quiet HEAD 2>/dev/null || echo '+ uncommitted changes')"))
     (format "- Runs per candidate: %d (medians reported)\n" agent-q-bench-runs))))

(defun agent-q-bench--section-markdown (section)
  "SECTION (a plist) as Markdown."
  (concat
   (format "## %s\n\n" (plist-get section :title))
   (if (eq (plist-get section :status) 'pending)
       (format "**Not measured yet.** %s\n\n" (plist-get section :pending))
     "")
   (if (plist-get section :rows) (concat (agent-q-bench--table (plist-get section :rows)) "\n") "")
   (mapconcat (lambda (n) (concat n "\n")) (plist-get section :notes) "")
   (if (plist-get section :notes) "\n" "")
   (if (plist-get section :include) (concat (plist-get section :include) "\n\n") "")))

(defun agent-q-bench--markdown (machine sections)
  "The results file: MACHINE description and SECTIONS."
  (concat
   "# agent-q benchmark results\n\n"
   "Written by `make bench` (bench/run.el); do not edit by hand.  How to read it: "
   "[bench/README.md](README.md).  Times are medians per operation; \"cpu\" is Emacs's own "
   "process time (steadier than wall time on a shared machine), \"× first\" divides by the "
   "first row of the same benchmark and GC mode.  \"GC out\": `gc-cons-threshold` at its "
   "maximum after a `garbage-collect`; \"GC in\": the default threshold.\n\n"
   "## Machine\n\n" machine "\n"
   (mapconcat #'agent-q-bench--section-markdown sections "")))

;;;; Running

(defun agent-q-bench-run-all ()
  "Run the registered sections (those named in $AGENT_Q_BENCH_ONLY) and report.
Print the table and write the results file.  Return the section plists."
  (let* ((only (let ((ids (getenv "AGENT_Q_BENCH_ONLY")))
                 (and ids (split-string ids "[, ]+" t))))
         (output (or (getenv "AGENT_Q_BENCH_OUTPUT")
                     (and (not only)
                          (expand-file-name "RESULTS.md" (or agent-q-bench-source-directory
                                                             agent-q-bench-directory)))))
         (machine (agent-q-bench-machine))
         (sections (sort (copy-sequence agent-q-bench--sections)
                         (lambda (a b) (< (car a) (car b))))))
    (message "agent-q benchmarks\n%s" machine)
    (setq agent-q-bench--report nil)
    (pcase-dolist (`(,_order ,id ,title ,function) sections)
      (when (or (null only) (member id only))
        (message "\n== %s" title)
        (setq agent-q-bench--current (list :id id :title title :rows nil :notes nil :status 'done))
        (condition-case err
            (funcall function)
          (error
           (agent-q-bench-note "**The section failed:** %s" (error-message-string err))
           (plist-put agent-q-bench--current :status 'failed)))
        (push agent-q-bench--current agent-q-bench--report)))
    (let* ((report (reverse agent-q-bench--report))
           (text (agent-q-bench--markdown machine report)))
      (message "\n%s" text)
      (when output
        (with-temp-file output (insert text))
        (message "Wrote %s" output))
      report)))

(provide 'agent-q-bench)

;;; agent-q-bench.el ends here
