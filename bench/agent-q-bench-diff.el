;;; agent-q-bench-diff.el --- Benchmark 3: diffs for propose_file_edit  -*- lexical-binding: t -*-

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

;; Benchmark 3: files of 1,000, 10,000 and 100,000 lines with
;; 1% of the lines changed in scattered places (seeded `random', so
;; every run diffs the same texts), wall clock (subprocesses):
;;
;;   1. `diff -u' run as a subprocess on two files (what Agent-Q did),
;;      its output read into a buffer -- the baseline.  The two files
;;      are written once, untimed: diff gets its input for free;
;;   2. Emacs's `diff-no-select' on two buffers (it writes them to
;;      temporary files, runs diff and fills a `diff-mode' buffer);
;;   3. `agent-q--core-diff-unified' on the two strings (the same text
;;      as `diff -u': the like-for-like comparison);
;;   4. `agent-q--core-diff-hunks' on the two strings (the hunk model
;;      propose_file_edit uses, with word refinement);
;;   5. a diagnostic row: `agent-q--core-diff-unified' on two identical
;;      texts, i.e. the cost of passing the strings to the module and
;;      splitting them into lines, without any diffing.
;;
;; Plus the application of accepted hunks (`agent-q--core-diff-apply',
;; every other hunk accepted) at each size, per line, with its growth
;; exponent: it must be linear.
;;
;; Plus two freeze checks, timed on the wall clock against the 100 ms
;; budget of anything a tool does on Emacs's main thread:
;;
;;   - opening a review of the 100,000-line diff with a diff session
;;     (`agent-q--core-diff-session', its summary and the first
;;     `agent-q-bench-diff-screen' hunks built), beside building every
;;     hunk at once with `agent-q--core-diff-hunks', and applying
;;     decisions from the session beside `agent-q--core-diff-apply';
;;   - `agent-q--core-diff-locate' with a stale `original' (three lines
;;     from the middle, each edited, so that no line matches and the
;;     closest one must be searched) in texts of long lines: 2 MB and
;;     10 MB of 1,000-character lines, and 10 MB of 100-character lines.
;;
;; Before timing, the module's unified diff is compared with GNU diff's
;; (same hunks, headers aside) and applying all / no hunks must give the
;; new / old text.

;;; Code:

(require 'agent-q-bench)
(require 'cl-lib)
(require 'diff)

(declare-function agent-q--core-diff-hunks "agent-q-core" (old new))
(declare-function agent-q--core-diff-unified "agent-q-core" (old new old-label new-label))
(declare-function agent-q--core-diff-apply "agent-q-core" (old new decisions))
(declare-function agent-q--core-diff-locate "agent-q-core" (current original))
(declare-function agent-q--core-diff-session "agent-q-core" (old new))
(declare-function agent-q--core-diff-session-summary "agent-q-core" (session))
(declare-function agent-q--core-diff-session-hunk "agent-q-core" (session index))
(declare-function agent-q--core-diff-session-apply "agent-q-core" (session decisions))

(defconst agent-q-bench-diff-sizes '(1000 10000 100000)
  "The sizes of the texts, in lines.")

(defconst agent-q-bench-diff-screen 20
  "Hunks a review builds when it opens: about a screenful.")

(defconst agent-q-bench-diff-freeze-ms 100
  "The longest a tool may keep Emacs's main thread busy, in milliseconds.")

(defconst agent-q-bench-diff-locate-texts
  '((2000 990 words) (10000 990 words) (100000 100 words) (11000 900 permuted))
  "The texts of the stale-original benchmark: (LINES WIDTH KIND).
WIDTH is in characters.  KIND `words' makes lines of random words;
`permuted' makes every line a permutation of the same 150 words, which
defeats the bounds that prune the closest-match search: the adversarial
case, where the search must be cut short.")

(defun agent-q-bench-diff-text (lines changed)
  "Return a text of LINES lines; the lines whose index is in CHANGED differ.
CHANGED is a hash table; the text is the same on every call with the
same arguments (seeded `random')."
  (let ((words ["alpha" "beta" "gamma" "delta" "epsilon" "zeta" "eta" "theta"]))
    (random "agent-q-bench")
    (mapconcat
     (lambda (i)
       (let ((line (format "%06d %s %s %s %s %s" i
                           (aref words (random 8)) (aref words (random 8))
                           (aref words (random 8)) (aref words (random 8))
                           (aref words (random 8)))))
         (if (gethash i changed)
             (concat line " CHANGED\n")
           (concat line "\n"))))
     (number-sequence 0 (1- lines)) "")))

(defun agent-q-bench-diff-pair (lines)
  "Return (OLD . NEW): texts of LINES lines, 1% of them changed in NEW."
  (let ((changed (make-hash-table)))
    (random "agent-q-bench-changes")
    (while (< (hash-table-count changed) (max 1 (/ lines 100)))
      (puthash (random lines) t changed))
    (cons (agent-q-bench-diff-text lines (make-hash-table))
          (agent-q-bench-diff-text lines changed))))

(defun agent-q-bench-diff-gnu (old-file new-file)
  "The output of `diff -u OLD-FILE NEW-FILE'."
  (with-temp-buffer
    (call-process "diff" nil t nil "-u" old-file new-file)
    (buffer-string)))

(defun agent-q-bench-diff--body (unified)
  "UNIFIED diff text without its two header lines."
  (replace-regexp-in-string "\\`---[^\n]*\n\\+\\+\\+[^\n]*\n" "" unified))

(defun agent-q-bench-diff--decisions (count)
  "COUNT decisions: every other hunk accepted, starting with the first."
  (let (decisions)
    (dotimes (i count) (push (if (cl-evenp i) 'accept 'reject) decisions))
    (nreverse decisions)))

(defun agent-q-bench-diff--check (lines old new gnu)
  "Check the module against GNU diff output GNU for OLD and NEW of LINES lines."
  (let* ((ours (agent-q--core-diff-unified old new "a" "b"))
         (hunks (agent-q--core-diff-hunks old new))
         (gnu-hunks (with-temp-buffer
                      (insert gnu)
                      (count-matches "^@@ " (point-min) (point-max))))
         (same (equal (agent-q-bench-diff--body ours) (agent-q-bench-diff--body gnu)))
         (all (agent-q--core-diff-apply old new (make-list (length hunks) 'accept)))
         (none (agent-q--core-diff-apply old new (make-list (length hunks) 'reject))))
    (agent-q-bench-note
     "- %d lines (%d changed, %.1f MB each): %d hunks (GNU diff: %d); module's unified diff %s GNU `diff -u`'s (headers aside); applying all hunks gives the new text: %s; none: the old text: %s."
     lines (max 1 (/ lines 100)) (/ (string-bytes old) 1e6) (length hunks) gnu-hunks
     (if same "**identical** to" "**DIFFERENT** from")
     (if (equal all new) "yes" "**NO**") (if (equal none old) "yes" "**NO**"))
    (length hunks)))

(defun agent-q-bench-diff--permuted-lines (lines)
  "Return LINES lines, each a permutation of the same 150 words (seeded)."
  (let ((words (vconcat (mapcar (lambda (i) (format "w%03dx" i)) (number-sequence 0 149)))))
    (random "agent-q-bench-permuted")
    (mapconcat (lambda (_)
                 (cl-loop for i from (1- (length words)) downto 1
                          do (cl-rotatef (aref words i) (aref words (random (1+ i)))))
                 (concat (mapconcat #'identity words " ") "\n"))
               (number-sequence 1 lines) "")))

(defun agent-q-bench-diff--long-lines (lines width &optional kind)
  "Return a text of LINES lines of about WIDTH characters of words (seeded).
KIND `permuted' gives `agent-q-bench-diff--permuted-lines' instead."
  (if (eq kind 'permuted)
      (agent-q-bench-diff--permuted-lines lines)
    (let ((words ["alpha" "beta" "gamma" "delta" "epsilon" "zeta" "eta" "theta"]))
      (random "agent-q-bench-long")
      (mapconcat (lambda (i)
                   (let ((parts (list (format "%06d" i))) (len 6))
                     (while (< len width)
                       (let ((w (aref words (random 8))))
			 (push w parts)
			 (setq len (+ len 1 (length w)))))
                     (concat (mapconcat #'identity (nreverse parts) " ") "\n")))
		 (number-sequence 1 lines) ""))))

(defun agent-q-bench-diff--stale-excerpt (text)
  "Return three lines from the middle of TEXT, each with one character edited.
The character at the middle of each line becomes \"#\"."
  (let* ((lines (split-string text "\n"))
         (middle (/ (length lines) 2)))
    (mapconcat (lambda (line)
                 (let ((i (/ (length line) 2)))
                   (concat (substring line 0 i) "#" (substring line (1+ i)) "\n")))
               (cl-subseq lines middle (+ middle 3)) "")))

(defun agent-q-bench-diff--locate-message (current original)
  "The error message of locating ORIGINAL in CURRENT (it must not be found)."
  (condition-case err
      (progn (agent-q--core-diff-locate current original) "FOUND (unexpected)")
    (agent-q-diff-error (cadr err))))

(defun agent-q-bench-diff--open-review (old new)
  "What a review of OLD -> NEW does when it opens, with a session.
Return the session, its summary and the first hunks."
  (let* ((session (agent-q--core-diff-session old new))
         (summary (agent-q--core-diff-session-summary session)))
    (list session summary
          (mapcar (lambda (i) (agent-q--core-diff-session-hunk session i))
                  (number-sequence 0 (1- (min agent-q-bench-diff-screen (length summary))))))))

(defun agent-q-bench-diff--review (old new decisions)
  "Benchmark 3's review rows for OLD -> NEW, the largest diff; DECISIONS to apply."
  (let* ((opened (agent-q-bench-diff--open-review old new))
         (session (car opened))
         (all (agent-q--core-diff-hunks old new)))
    (agent-q-bench-note
     "- Review session of the 100,000-line diff: %d hunks in its summary (all at once: %d); the first %d built on demand %s; applying from the session %s `agent-q--core-diff-apply`."
     (length (nth 1 opened)) (length all) agent-q-bench-diff-screen
     (if (equal (nth 2 opened) (cl-subseq all 0 agent-q-bench-diff-screen))
         "**equal** those of `agent-q--core-diff-hunks`" "**DIFFER** from those of `agent-q--core-diff-hunks`")
     (if (equal (agent-q--core-diff-session-apply session decisions)
                (agent-q--core-diff-apply old new decisions))
         "**equals**" "**DIFFERS** from"))
    (agent-q-bench-compare
     "3. open a review of 100000 lines"
     (list (list :label "agent-q--core-diff-hunks (every hunk at once)"
                 :run (lambda (_) (agent-q--core-diff-hunks old new)))
           (list :label (format "session + summary + first %d hunks" agent-q-bench-diff-screen)
                 :run (lambda (_) (agent-q-bench-diff--open-review old new)))
           (list :label "agent-q--core-diff-apply (diffs again)"
                 :run (lambda (_) (agent-q--core-diff-apply old new decisions)))
           (list :label "agent-q--core-diff-session-apply"
                 :run (lambda (_) (agent-q--core-diff-session-apply session decisions))))
     :clock 'wall :unit "call")))

(defun agent-q-bench-diff--locate ()
  "Benchmark 3's stale-original rows."
  (let (candidates)
    (pcase-dolist (`(,lines ,width ,kind) agent-q-bench-diff-locate-texts)
      (let* ((current (agent-q-bench-diff--long-lines lines width kind))
             (original (agent-q-bench-diff--stale-excerpt current))
             (label (format "%.0f MB, %d lines of %d chars%s" (/ (string-bytes current) 1e6)
                            lines width
                            (if (eq kind 'permuted) ", permuted words (adversarial)" "")))
             (message (agent-q-bench-diff--locate-message current original))
             (expected (format "Closest match at line %d" (1+ (/ (1+ lines) 2)))))
        (agent-q-bench-note "- Stale original, %s: %s%s." label
                            (if (string-match-p (regexp-quote expected) message)
                                (format "explained with the right place (\"%s\")" expected)
                              (format "explanation **without the right place**: %s"
                                      (truncate-string-to-width message 200)))
                            (if (string-match-p "cut short" message)
                                "; the search **was cut short** (best match so far)"
                              "; the search ran to the end"))
        (push (list :label label
                    :run (lambda (_) (agent-q-bench-diff--locate-message current original)))
              candidates)))
    (agent-q-bench-compare "3. locate a stale original (long lines)" (nreverse candidates)
                           :clock 'wall :unit "call")))

(defun agent-q-bench-diff-run ()
  "Benchmark 3: module diff vs diff -u vs `diff-no-select'; hunk application."
  (cond
   ((not (executable-find "diff"))
    (agent-q-bench-pending "GNU diff is not installed: scripts/ensure-deps.sh --bench."))
   ((not (require 'agent-q-core nil t))
    (agent-q-bench-pending "The agent-q-core module is not built."))
   (t
    (let ((files nil) (buffers nil) (apply-candidates nil) (benchmarks nil) (largest nil))
      (unwind-protect
          (progn
            (agent-q-bench-note "**Checks** (before timing):")
            (dolist (lines agent-q-bench-diff-sizes)
              (let* ((pair (agent-q-bench-diff-pair lines))
                     (old (car pair)) (new (cdr pair))
                     (old-file (make-temp-file "agent-q-bench-old-" nil ".txt" old))
                     (new-file (make-temp-file "agent-q-bench-new-" nil ".txt" new))
                     (old-buffer (generate-new-buffer " *agent-q-bench-old*"))
                     (new-buffer (generate-new-buffer " *agent-q-bench-new*"))
                     (benchmark (format "3. diff of %d lines (1%% changed)" lines))
                     (count (agent-q-bench-diff--check
                             lines old new (agent-q-bench-diff-gnu old-file new-file)))
                     (decisions (agent-q-bench-diff--decisions count)))
                (push old-file files) (push new-file files)
                (push old-buffer buffers) (push new-buffer buffers)
                (with-current-buffer old-buffer (insert old))
                (with-current-buffer new-buffer (insert new))
                (push benchmark benchmarks)
                (agent-q-bench-compare
                 benchmark
                 (list (list :label "diff -u (subprocess, files ready)"
                             :run (lambda (_) (agent-q-bench-diff-gnu old-file new-file)))
                       (list :label "diff-no-select (buffers)"
                             :run (lambda (_)
                                    (diff-no-select old-buffer new-buffer "-u" t
                                                    (get-buffer-create " *agent-q-bench-diff*"))))
                       (list :label "agent-q--core-diff-unified"
                             :run (lambda (_) (agent-q--core-diff-unified old new "a" "b")))
                       (list :label "agent-q--core-diff-hunks"
                             :run (lambda (_) (agent-q--core-diff-hunks old new)))
                       (list :label "(diagnostic) unified on identical texts"
                             :run (lambda (_) (agent-q--core-diff-unified old old "a" "b"))))
                 :clock 'wall :unit "diff")
                (setq largest (list old new decisions))
                (push (list :label (format "diff-apply, %d lines" lines) :n lines
                            :run (lambda (_) (agent-q--core-diff-apply old new decisions)))
                      apply-candidates)))
            (setq benchmarks (nreverse benchmarks))
            (agent-q-bench-compare "3. apply accepted hunks (every other one)"
                                   (nreverse apply-candidates)
                                   :unit "line")
            (apply #'agent-q-bench-diff--review largest)
            (agent-q-bench-diff--locate)
            (agent-q-bench-diff--verdicts benchmarks)
            (agent-q-bench-diff--freeze-verdicts)
            (agent-q-bench-include "analysis-diff.md"))
        (dolist (f files) (ignore-errors (delete-file f)))
        (dolist (b buffers) (kill-buffer b))
        (when (get-buffer " *agent-q-bench-diff*")
          (kill-buffer " *agent-q-bench-diff*")))))))

(defun agent-q-bench-diff--verdicts (benchmarks)
  "Notes with the target verdicts of BENCHMARKS and the apply growth."
  (agent-q-bench-note "")
  (agent-q-bench-note "**Targets** (wall clock; ratio = time / `diff -u`'s, below 1 is faster):")
  (dolist (gc '(out in))
    (dolist (b benchmarks)
      (let ((base (agent-q-bench-row-time
                   (agent-q-bench-find b "diff -u (subprocess, files ready)" gc))))
        (agent-q-bench-note
         "- GC %s, %s: unified %.2f× (%s), hunks %.2f× (%s), `diff-no-select` %.2f×; passing the strings and splitting lines alone: %.2f×."
         gc b
         (/ (agent-q-bench-row-time (agent-q-bench-find b "agent-q--core-diff-unified" gc)) base)
         (if (<= (agent-q-bench-row-time (agent-q-bench-find b "agent-q--core-diff-unified" gc)) base)
             "met" "**missed**")
         (/ (agent-q-bench-row-time (agent-q-bench-find b "agent-q--core-diff-hunks" gc)) base)
         (if (<= (agent-q-bench-row-time (agent-q-bench-find b "agent-q--core-diff-hunks" gc)) base)
             "met" "**missed**")
         (/ (agent-q-bench-row-time (agent-q-bench-find b "diff-no-select (buffers)" gc)) base)
         (/ (agent-q-bench-row-time
             (agent-q-bench-find b "(diagnostic) unified on identical texts" gc))
            base)))))
  (dolist (gc '(out in))
    (let* ((rows (mapcar (lambda (lines)
                           (agent-q-bench-find "3. apply accepted hunks (every other one)"
                                               (format "diff-apply, %d lines" lines) gc))
                         agent-q-bench-diff-sizes))
           (totals (cl-mapcar (lambda (row lines) (* lines (agent-q-bench-row-time row)))
                              rows agent-q-bench-diff-sizes))
           (k (agent-q-bench-growth agent-q-bench-diff-sizes totals)))
      (agent-q-bench-note
       "- Apply, GC %s: %s µs per line at %s lines; growth exponent k = %.2f (%s)."
       gc
       (mapconcat (lambda (row) (agent-q-bench--us (agent-q-bench-row-time row))) rows " / ")
       (mapconcat (lambda (n) (format "%d" n)) agent-q-bench-diff-sizes " / ")
       k (agent-q-bench-growth-word k)))))

(defun agent-q-bench-diff--freeze-verdicts ()
  "Notes with the freeze verdicts of the review and stale-original rows."
  (agent-q-bench-note "")
  (agent-q-bench-note "**Freezes** (wall clock; each must stay under %d ms):"
                      agent-q-bench-diff-freeze-ms)
  (dolist (gc '(out in))
    (let ((rows (cl-remove-if-not
                 (lambda (r) (and (eq (plist-get r :gc) gc)
                                  (member (plist-get r :benchmark)
                                          '("3. open a review of 100000 lines"
                                            "3. locate a stale original (long lines)"))))
                 (plist-get agent-q-bench--current :rows))))
      (agent-q-bench-note
       "- GC %s: %s." gc
       (mapconcat (lambda (r)
                    (let ((ms (* 1000 (agent-q-bench-row-time r))))
                      (format "%s %.1f ms (%s)" (plist-get r :label) ms
                              (if (< ms agent-q-bench-diff-freeze-ms) "met" "**over**"))))
                  rows "; ")))))

(agent-q-bench-define-section
 3 "diff" "3. Diffs for propose_file_edit" #'agent-q-bench-diff-run)

(provide 'agent-q-bench-diff)

;;; agent-q-bench-diff.el ends here
