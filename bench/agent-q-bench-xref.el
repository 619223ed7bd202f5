;;; agent-q-bench-xref.el --- Benchmark 2: cross-reference scans  -*- lexical-binding: t -*-

;; Copyright (C) 2026 The agent-q authors

;; Author: The agent-q authors
;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1"))
;; Keywords: tools, benchmarks

;; This file is not part of GNU Emacs.

;;; Commentary:

;; PLACE FOR BENCHMARK 2 (issue 5): who_calls and who_references over
;; every library in Emacs's own Lisp directory (emacs-el: about 1,500
;; .el.gz files), three ways, side by side:
;;
;;   1. agent-q's native scan (the module's xref scanner);
;;   2. an Emacs Lisp scan: `insert-file-contents' each file and search
;;      in a loop (skipping comments and strings, as the native scan does);
;;   3. `rg -z' (ripgrep, installed by scripts/ensure-deps.sh --bench)
;;      searching the plain text, as a subprocess.
;;
;; Targets: at least 4x faster than the Emacs Lisp scan and no slower
;; than ripgrep, reading code only; and a check that the three agree on
;; the call sites where they should (report disagreements as notes).
;;
;; How to fill it in: replace the body of `agent-q-bench-xref-run' with
;; one `agent-q-bench-compare' per query (a few symbols: a common one
;; such as `car', a rare one), candidates in the order Emacs Lisp scan
;; (the baseline), native scan, ripgrep, with :clock 'wall (ripgrep
;; runs as a subprocess, whose CPU time is not Emacs's) and :gc '(out in).
;; Use `agent-q-bench-note' for the agreement check and the target
;; verdicts.  Until then the section reports itself as pending: no
;; numbers are made up.

;;; Code:

(require 'agent-q-bench)

(defun agent-q-bench-xref-run ()
  "Benchmark 2: native xref scan vs Emacs Lisp scan vs rg -z (not written yet)."
  (agent-q-bench-pending
   "The native xref scanner is being written on another branch; this section is the place for it (see bench/agent-q-bench-xref.el and bench/README.md)."))

(agent-q-bench-define-section
 2 "xref" "2. Cross-reference scans (who_calls, who_references)" #'agent-q-bench-xref-run)

(provide 'agent-q-bench-xref)

;;; agent-q-bench-xref.el ends here
