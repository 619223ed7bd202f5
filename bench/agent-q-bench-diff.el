;;; agent-q-bench-diff.el --- Benchmark 3: diffs for propose_file_edit  -*- lexical-binding: t -*-

;; Copyright (C) 2026 The agent-q authors

;; Author: The agent-q authors
;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1"))
;; Keywords: tools, benchmarks

;; This file is not part of GNU Emacs.

;;; Commentary:

;; PLACE FOR BENCHMARK 3 (issue 5): files of 1,000, 10,000 and 100,000
;; lines with 1% of the lines changed in scattered places (seeded
;; `random', so every run diffs the same texts), three ways:
;;
;;   1. `diff -u' run as a subprocess on two files (what Agent-Q did) --
;;      the baseline;
;;   2. the module's diff and hunk model (agent-q--core-diff-hunks and
;;      agent-q--core-diff-unified on the two strings);
;;   3. Emacs's `diff-no-select'.
;;
;; Plus the application of the accepted hunks (agent-q--core-diff-apply
;; with every hunk accepted) at each size, whose growth must be linear:
;; use `agent-q-bench-growth' as bench/agent-q-bench-scale.el does.
;; Targets: no slower than GNU diff at every size.  Use :clock 'wall
;; (subprocesses), and check with `agent-q-bench-note' that the module's
;; hunks equal GNU diff's.  The diff branch's
;; tests/fixtures/diff/bench-diff.el already has the text generator and
;; the equality check for 100,000 lines; move them here.
;;
;; Until then the section reports itself as pending: no numbers are
;; made up.

;;; Code:

(require 'agent-q-bench)

(defun agent-q-bench-diff-run ()
  "Benchmark 3: module diff vs diff -u vs `diff-no-select' (not written yet)."
  (agent-q-bench-pending
   "The diff engine is being written on another branch; this section is the place for it (see bench/agent-q-bench-diff.el and bench/README.md)."))

(agent-q-bench-define-section
 3 "diff" "3. Diffs for propose_file_edit" #'agent-q-bench-diff-run)

(provide 'agent-q-bench-diff)

;;; agent-q-bench-diff.el ends here
