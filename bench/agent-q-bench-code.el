;;; agent-q-bench-code.el --- Benchmark 9: code intelligence against Serena  -*- lexical-binding: t -*-

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

;; Issue 32's "How it must perform": on a real Python project from PyPI
;; (rich 15.0.0, pinned and hash-checked, unpacked under target/bench/),
;; the same five questions asked three ways in one run, with the same
;; pinned pyright (npm, bench/code/package-lock.json):
;;
;; - the server's own time: a raw LSP client (bench/code/code-intel.py);
;; - Serena 2.1.0 (serena-agent from PyPI, bench/code/serena.txt) over MCP
;;   stdio, tools interface, driven by the MCP Python SDK's client;
;; - agent-q's tools over its MCP server, in an Emacs where eglot manages
;;   the project with that pyright (bench/code/serve.el).
;;
;; Accuracy against ground truth computed with Python's `ast'; cold
;; (first call) and warm (median of 20) latency; memory (pyright's,
;; Serena's, and what agent-q's calls added to the serving Emacs); the
;; language servers the serving Emacs runs before and after; and the
;; serving Emacs's main-loop stalls (a 10 ms timer's lateness) during
;; each cold and warm call.  A side whose prerequisites are missing is
;; left out with a note saying why; the section never fails the bench.

;;; Code:

(require 'cl-lib)
(require 'agent-q-bench)

(defun agent-q-bench-code--root ()
  "The repository root."
  (expand-file-name ".." (or agent-q-bench-source-directory agent-q-bench-directory)))

(defun agent-q-bench-code--path (relative)
  "RELATIVE to the repository root, if it exists."
  (let ((path (expand-file-name relative (agent-q-bench-code--root))))
    (and (file-exists-p path) path)))

(defun agent-q-bench-code--python ()
  "The MCP SDK 1.x venv's Python (it drives Serena and agent-q)."
  (agent-q-bench-code--path "target/mcp-venv/sdk1/bin/python"))

(defun agent-q-bench-code--emacs ()
  "An Emacs with eglot: this one if it has eglot, else the pinned Emacs 30."
  (if (locate-library "eglot")
      (expand-file-name invocation-name invocation-directory)
    (agent-q-bench-code--path "target/emacs-30/bin/emacs")))

(defun agent-q-bench-code--script (&rest args)
  "Run bench/code/code-intel.py with ARGS; return its last line as a plist.
Signal an error with its output when it fails."
  (with-temp-buffer
    (let ((status (apply #'call-process (agent-q-bench-code--python) nil t nil
                         (expand-file-name "bench/code/code-intel.py"
                                           (agent-q-bench-code--root))
                         args)))
      (goto-char (point-max))
      (if (and (eql status 0) (re-search-backward "^{.*}$" nil t))
          (json-parse-string (match-string 0) :object-type 'plist
                             :array-type 'list :null-object nil :false-object nil)
        (error "The client bench/code/code-intel.py %s failed (%s): %s" (car args) status
               (buffer-substring (max (point-min) (- (point-max) 1500)) (point-max)))))))

(defun agent-q-bench-code--read-file (file seconds)
  "Wait up to SECONDS for FILE; return its contents read as Lisp, or nil."
  (let ((deadline (+ (float-time) seconds)))
    (while (and (not (file-exists-p file)) (< (float-time) deadline))
      (accept-process-output nil 0.1))
    (and (file-exists-p file)
         (with-temp-buffer
           (insert-file-contents file)
           (car (read-from-string (buffer-string)))))))

(defun agent-q-bench-code--agent-q (corpus langserver)
  "Serve CORPUS from an Emacs with eglot on LANGSERVER; run the client.
The serving Emacs is an interactive `emacs -nw' in tmux, as benchmark 7
starts one, when tmux is installed and AGENT_Q_BENCH_CODE_BATCH is not
set; else a batch Emacs.  Return (RESULT INFO STATS): the client's
answer, the serving Emacs's start-up plist and its final statistics."
  (let* ((dir (file-name-as-directory (make-temp-file "agent-q-bench-code" t)))
         (root (agent-q-bench-code--root))
         (tmux (and (executable-find "tmux") (not (getenv "AGENT_Q_BENCH_CODE_BATCH"))))
         (session (format "agent-q-bench-code-%d-%d" (emacs-pid) (random 100000)))
         (env (list (concat "AGENT_Q_BENCH_CORPUS=" corpus)
                    (concat "AGENT_Q_BENCH_LANGSERVER=" langserver)
                    (concat "AGENT_Q_BENCH_DIR=" dir)
                    (concat "AGENT_Q_BENCH_COMPILED="
                            (if (boundp 'agent-q--directory) agent-q--directory ""))))
         (emacs-args (list "-Q" "-L" (expand-file-name "lisp" root)
                           "-l" (expand-file-name "bench/code/serve.el" root)))
         (out (generate-new-buffer " *agent-q-bench-code-serve*"))
         (process nil))
    (if tmux
        ;; The environment goes on the command line: a tmux server already
        ;; running would not pass this Emacs's on.
        (unless (zerop (call-process
                        "tmux" nil out nil "new-session" "-d" "-s" session "-x" "200" "-y" "50"
                        (mapconcat #'shell-quote-argument
                                   (append (list "env") env
                                           (list (agent-q-bench-code--emacs) "-nw")
                                           emacs-args)
                                   " ")))
          (error "Cannot start tmux: %s" (with-current-buffer out (buffer-string))))
      (setq process (let ((process-environment (append env process-environment)))
                      (make-process
                       :name "agent-q-bench-code-serve" :buffer out :noquery t
                       :connection-type 'pipe :sentinel #'ignore
                       :command (append (list (agent-q-bench-code--emacs) "--batch")
                                        emacs-args)))))
    (unwind-protect
        (let ((info (agent-q-bench-code--read-file (expand-file-name "info.eld" dir) 120)))
          (unless info
            (error "The serving Emacs did not start: %s"
                   (if tmux
                       (with-temp-buffer
                         (call-process "tmux" nil t nil "capture-pane" "-p" "-t" session)
                         (string-trim (buffer-string)))
                     (with-current-buffer out
                       (buffer-substring (max (point-min) (- (point-max) 1500))
                                         (point-max))))))
          (let ((result (condition-case err
                            (agent-q-bench-code--script "agentq" corpus (plist-get info :url)
                                                        (or (plist-get info :token) ""))
                          (error (list :error (error-message-string err))))))
            (with-temp-file (expand-file-name "stop" dir))
            (list result info
                  (agent-q-bench-code--read-file (expand-file-name "stats.eld" dir) 60))))
      (when (and process (process-live-p process))
        (accept-process-output process 2)
        (delete-process process))
      (when tmux
        (call-process "tmux" nil nil nil "kill-session" "-t" session))
      (kill-buffer out)
      (delete-directory dir t))))

(defun agent-q-bench-code--ms (value)
  "VALUE (milliseconds) for the table, or a dash."
  (cond ((null value) "-")
        ((>= value 100) (format "%.0f" value))
        ((>= value 10) (format "%.1f" value))
        (t (format "%.2f" value))))

(defun agent-q-bench-code--cell (result op)
  "Cold / warm cell of OP in RESULT, with a mark when the answer was wrong."
  (let ((r (plist-get result op)))
    (if (not r) "-"
      (format "%s / %s%s"
              (agent-q-bench-code--ms (plist-get r :cold_ms))
              (agent-q-bench-code--ms (or (plist-get r :warm_p50_ms)
                                          (plist-get r :after_edit_p50_ms)))
              (if (plist-get r :correct) "" " ✗")))))

(defun agent-q-bench-code--ratio (a b op)
  "A's warm p50 of OP divided by B's, or a dash."
  (let ((x (plist-get (plist-get a op) :warm_p50_ms))
        (y (plist-get (plist-get b op) :warm_p50_ms)))
    (if (and x y (> y 0)) (format "%.2f×" (/ x y)) "-")))

(defun agent-q-bench-code--stall (ticks window &optional busy)
  "The longest gap (ms) of TICKS, late ticks (TIME GAP . CPU), inside WINDOW.
WINDOW is (FROM TO); a tick counts when it came in the window or up to
its own gap after it.  With BUSY, the most processor time Emacs used
in one gap instead (capped at the gap): the part of a stall that was
Emacs computing rather than waiting for a processor."
  (let ((from (car window)) (to (cadr window)) (worst 0))
    (dolist (tick ticks)
      (let ((gap (cadr tick)) (cpu (or (cddr tick) 0)))
        (when (and (>= (car tick) from) (<= (- (car tick) gap) to))
          (setq worst (max worst (* 1000 (if busy (min gap cpu) gap)))))))
    worst))

(defun agent-q-bench-code--server-share (warm server-times method)
  "Pair each warm call, a (START MS) of WARM, with the server's time for METHOD.
SERVER-TIMES are (METHOD SENT MS), as the serving Emacs recorded each
request from its sending to its answer's arrival; a call's is the
longest METHOD request sent while it ran.  Return (SERVER EXTRA N):
the median of the server's own times, the median of what each call
took beyond its request's time, and how many calls were paired; nil
when none was."
  (let (server extra)
    (pcase-dolist (`(,start ,ms) warm)
      (let ((end (+ start (/ ms 1000.0)))
            (own nil))
        (pcase-dolist (`(,m ,sent ,server-ms) server-times)
          (when (and (equal m method) (>= sent start) (<= sent end))
            (setq own (max (or own 0) server-ms))))
        (when own
          (push own server)
          (push (- ms own) extra))))
    (and server (list (agent-q-bench--median server) (agent-q-bench--median extra)
                      (length server)))))

(defconst agent-q-bench-code--operations
  '((:definition "definition of Console.print" "find_definition" "find_symbol"
                 "textDocument/definition at a call")
    (:references "references of rich.cells.cell_len" "find_references"
                 "find_referencing_symbols" "textDocument/references")
    (:outline "outline of rich/segment.py" "file_outline" "get_symbols_overview"
              "textDocument/documentSymbol")
    (:diagnostics "diagnostics of the planted file" "diagnostics" "get_diagnostics_for_file"
                  "publishDiagnostics after didOpen / after an edit")
    (:type_at "type at a call of Console.print" "type_at" "find_symbol include_info"
              "textDocument/hover"))
  "The operations: key, what, agent-q's tool, Serena's tool, the LSP request.")

(defun agent-q-bench-code ()
  "Benchmark 9: agent-q's code intelligence beside Serena and pyright itself."
  (let ((corpus-source (agent-q-bench-code--path "target/bench/rich-15.0.0"))
        (langserver (agent-q-bench-code--path
                     "target/bench/pyright/node_modules/.bin/pyright-langserver"))
        (serena (agent-q-bench-code--path "target/bench/serena-venv/bin/serena"))
        (python (agent-q-bench-code--python)))
    (cond
     ((not python)
      (agent-q-bench-pending "the MCP SDK's venv is missing (scripts/ensure-deps.sh --bench makes it)"))
     ((not corpus-source)
      (agent-q-bench-pending "the corpus (rich 15.0.0) is missing (scripts/ensure-deps.sh --bench unpacks it)"))
     ((not langserver)
      (agent-q-bench-pending "the pinned pyright is missing (scripts/ensure-deps.sh --bench installs it)"))
     (t
      (let* ((corpus (file-name-as-directory
                      (file-truename (make-temp-file "agent-q-bench-rich" t))))
             (truth (agent-q-bench-code--script "prepare" corpus-source corpus))
             (skipped nil) raw theirs ours info stats)
        (unwind-protect
            (progn
              (setq raw (condition-case err (agent-q-bench-code--script "raw" corpus langserver)
                          (error (push (format "raw pyright: %s" (error-message-string err))
                                       skipped)
                                 nil)))
              (if (not serena)
                  (push "Serena: target/bench/serena-venv is missing (scripts/ensure-deps.sh --bench installs it)"
                        skipped)
                (setq theirs (condition-case err
                                 (agent-q-bench-code--script "serena" corpus serena langserver)
                               (error (push (format "Serena: %s" (error-message-string err))
                                            skipped)
                                      nil))))
              (if (not (agent-q-bench-code--emacs))
                  (push "agent-q: no Emacs with eglot (Emacs 29+, or elpa-eglot on Emacs 28)" skipped)
                (condition-case err
                    (pcase-let ((`(,result ,i ,s) (agent-q-bench-code--agent-q corpus langserver)))
                      (setq info i stats s)
                      (cond ((plist-get result :error)
                             (push (format "agent-q: %s" (plist-get result :error)) skipped))
                            ((plist-get result :missing_tools)
                             (push (format "agent-q: the tools %s are not registered (issue 32's code intelligence is not built in this tree): the agent-q side was not measured"
                                           (string-join (plist-get result :missing_tools) ", "))
                                   skipped))
                            (t (setq ours result))))
                  (error (push (format "agent-q: %s" (error-message-string err)) skipped)))))
          (delete-directory corpus t))
        (agent-q-bench-code--report truth raw theirs ours info stats (nreverse skipped)))))))

(defun agent-q-bench-code--report (truth raw theirs ours info stats skipped)
  "The notes of benchmark 9 from TRUTH and the results.
RAW is pyright's own, THEIRS Serena's and OURS agent-q's; INFO and
STATS are the serving Emacs's; SKIPPED lists the sides left out and
why."
  (agent-q-bench-note "Corpus: rich 15.0.0 from PyPI (sdist, sha256-checked), %d Python files, %d lines, plus one planted file of 4 errors; pyright 1.1.403 (npm) for all three. Ground truth from Python's `ast`: Console.print at %s:%d; %d reference lines of cell_len in %d files (declaration and imports included); %d top-level names of rich/segment.py; planted errors at lines %s. Cold: the first call; warm: median of 20 (ms, wall clock, as the client sees it). ✗: the answer differs from the ground truth."
                      (plist-get truth :files) (plist-get truth :lines)
                      (plist-get (plist-get truth :definition) :file)
                      (plist-get (plist-get truth :definition) :line)
                      (length (plist-get truth :references)) (plist-get truth :reference_files)
                      (length (plist-get truth :outline))
                      (mapconcat #'number-to-string
                                 (plist-get (plist-get truth :planted) :errors) ", "))
  (agent-q-bench-note "")
  (agent-q-bench-note "| operation | pyright itself (raw LSP) cold / warm | Serena 2.1.0 (MCP stdio) cold / warm | agent-q (MCP, eglot) cold / warm | agent-q ÷ Serena (warm) | agent-q ÷ pyright (warm) |")
  (agent-q-bench-note "|---|---|---|---|---|---|")
  (pcase-dolist (`(,op ,what ,tool ,serena-tool ,request) agent-q-bench-code--operations)
    (agent-q-bench-note "| %s (%s / %s / %s) | %s | %s | %s | %s | %s |"
                        what request serena-tool tool
                        (agent-q-bench-code--cell raw op)
                        (agent-q-bench-code--cell theirs op)
                        (agent-q-bench-code--cell ours op)
                        (agent-q-bench-code--ratio ours theirs op)
                        (agent-q-bench-code--ratio ours raw op)))
  (agent-q-bench-note "")
  (agent-q-bench-note "- Start: pyright answers `initialize` in %s ms; Serena answers MCP `initialize` in %s ms%s."
                      (agent-q-bench-code--ms (plist-get raw :initialize_ms))
                      (agent-q-bench-code--ms (plist-get theirs :initialize_ms))
                      (if info (format "; in the serving Emacs (%s, %s), eglot connected %.1f s after it started and pyright had published the visited file's diagnostics at %s s. Cold means: for pyright and Serena, the first request after start (pyright's first analysis included); for agent-q, the first call in that Emacs (eglot running, rich/console.py visited and analysed, the other files not opened)"
                                       (plist-get info :emacs)
                                       (if (plist-get info :interactive)
                                           "`emacs -nw` in tmux" "batch")
                                       (plist-get info :eglot-seconds)
                                       (if (plist-get info :analysed-seconds)
                                           (format "%.1f" (plist-get info :analysed-seconds))
                                         "(not within 60)"))
                        ""))
  (when theirs
    (agent-q-bench-note "- Serena's references: %d of %d lines, %d not in the ground truth%s (it answers with the referencing symbols; it leaves the declaration out by design)."
                        (plist-get (plist-get theirs :references) :found)
                        (plist-get (plist-get theirs :references) :expected)
                        (plist-get (plist-get theirs :references) :n_false)
                        (if (plist-get (plist-get theirs :references) :declaration_missing)
                            ", the declaration missing" "")))
  (when raw
    (agent-q-bench-note "- pyright's diagnostics: the first non-empty publication %s ms after didOpen, %s ms after an edit (p50 of 5); its references: %d locations on %d lines."
                        (agent-q-bench-code--ms (plist-get (plist-get raw :diagnostics) :cold_ms))
                        (agent-q-bench-code--ms (plist-get (plist-get raw :diagnostics)
                                                           :after_edit_p50_ms))
                        (plist-get (plist-get raw :references) :locations)
                        (plist-get (plist-get raw :references) :found)))
  (agent-q-bench-note "- Memory (RSS): pyright alone %s MB; Serena with its pyright %s MB%s."
                      (if raw (format "%.0f" (plist-get raw :rss_mb)) "-")
                      (if theirs (format "%.0f" (plist-get theirs :rss_mb)) "-")
                      (if (and ours info stats)
                          (format "; the serving Emacs %.0f MB with eglot running, %.0f MB after agent-q's calls: **%.1f MB added** (target ≤ 20 MB); language servers it runs: %d before, %d after (target: no second server)"
                                  (/ (plist-get info :rss-before) 1024.0)
                                  (/ (plist-get stats :rss-after) 1024.0)
                                  (/ (- (plist-get stats :rss-after) (plist-get info :rss-before))
                                     1024.0)
                                  (length (plist-get info :servers-before))
                                  (length (plist-get stats :servers-after)))
                        ""))
  (when (and ours stats)
    (let ((windows (plist-get ours :windows)) (cells nil) (worst 0) (worst-busy 0)
          (ticks (plist-get stats :ticks)))
      (pcase-dolist (`(,op ,_what ,tool . ,_) agent-q-bench-code--operations)
        (let* ((w (plist-get windows op))
               (cold (agent-q-bench-code--stall ticks (plist-get w :cold)))
               (warm (agent-q-bench-code--stall ticks (plist-get w :warm)))
               (cold-busy (agent-q-bench-code--stall ticks (plist-get w :cold) t))
               (warm-busy (agent-q-bench-code--stall ticks (plist-get w :warm) t)))
          (setq worst (max worst cold warm)
                worst-busy (max worst-busy cold-busy warm-busy))
          (push (format "%s %.0f / %.0f (busy %.0f / %.0f)" tool cold warm cold-busy warm-busy)
                cells)))
      (agent-q-bench-note "- Main-loop stalls in the serving Emacs (a 10 ms timer's longest gap beyond its period, ms, during the cold call / the warm calls; in parentheses the most processor time Emacs used within one gap, the rest of a gap being Emacs waiting for a processor on this loaded machine): %s. Longest gap: **%.0f ms**; longest Emacs was busy within one: **%.0f ms** (target ≤ 100 ms)."
                          (string-join (nreverse cells) "; ") worst worst-busy))
    (let ((verdicts nil))
      (dolist (op '(:definition :outline :diagnostics :type_at))
        (let ((warm (plist-get (plist-get ours op) :warm_p50_ms))
              (serena (plist-get (plist-get theirs op) :warm_p50_ms)))
          (push (format "%s %s (≤ 50 ms%s)" (substring (symbol-name op) 1)
                        (if (and warm (<= warm 50) (or (not serena) (< warm serena)))
                            "met" "MISSED")
                        (if serena ", below Serena's" ""))
                verdicts)))
      (let* ((warm (plist-get (plist-get ours :references) :warm_p50_ms))
             (share (agent-q-bench-code--server-share
                     (plist-get (plist-get ours :references) :warm_calls)
                     (plist-get stats :server-times) "textDocument/references"))
             (server (plist-get (plist-get raw :references) :warm_p50_ms))
             (serena (plist-get (plist-get theirs :references) :warm_p50_ms)))
        (when share
          (agent-q-bench-note "- references, the server's own time beside agent-q's: the serving Emacs's pyright answered the `textDocument/references` request of %d of agent-q's %d warm calls in p50 %s ms (from its sending to its answer's arrival, as Emacs saw it; the same server at the same moment, where the raw client's pyright, measured earlier in the run on this shared machine, took %s ms); each call took p50 **%s ms** beyond its request (the MCP round trip, the executor, the definition request sent beside it, the enclosing symbols, the wording)."
                              (nth 2 share)
                              (length (plist-get (plist-get ours :references) :warm_calls))
                              (agent-q-bench-code--ms (nth 0 share))
                              (agent-q-bench-code--ms server)
                              (agent-q-bench-code--ms (nth 1 share))))
        (push (if share
                  (format "references %s (≤ the server's own time + 50 ms: %s ms beyond it%s)"
                          (if (and (<= (nth 1 share) 50) (or (not serena) (< warm serena)))
                              "met" "MISSED")
                          (agent-q-bench-code--ms (nth 1 share))
                          (if serena ", below Serena's" ""))
                (format "references %s (≤ pyright's %s ms + 50 ms%s)"
                        (if (and warm server (<= warm (+ server 50))
                                 (or (not serena) (< warm serena)))
                            "met" "MISSED")
                        (agent-q-bench-code--ms server)
                        (if serena ", below Serena's" "")))
              verdicts))
      (agent-q-bench-note "- Targets (warm p50): %s; accuracy: %s."
                          (string-join (nreverse verdicts) "; ")
                          (if (cl-every (lambda (op) (plist-get (plist-get ours (car op)) :correct))
                                        agent-q-bench-code--operations)
                              "every answer equals the ground truth"
                            "SOME ANSWERS DIFFER (✗)"))))
  (pcase-dolist (`(,op ,_what ,tool . ,_) agent-q-bench-code--operations)
    (when-let ((err (plist-get (plist-get ours op) :error)))
      (agent-q-bench-note "- agent-q's %s failed: %s" tool err))
    (when-let ((why (plist-get (plist-get ours op) :why)))
      (agent-q-bench-note "- agent-q's %s differs from the ground truth: %s" tool why)))
  (dolist (why skipped)
    (agent-q-bench-note "- Not measured: %s." why)))

(agent-q-bench-define-section
 9 "code" "9. Code intelligence: agent-q's tools beside Serena and pyright itself"
 #'agent-q-bench-code)

(provide 'agent-q-bench-code)

;;; agent-q-bench-code.el ends here
