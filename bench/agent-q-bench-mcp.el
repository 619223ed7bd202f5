;;; agent-q-bench-mcp.el --- Benchmark 7: MCP calls as the agents see them  -*- lexical-binding: t -*-

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

;; Safe calls over MCP (Streamable HTTP, 2025-06-18 sessions), served
;; by an interactive Emacs (`emacs -nw -Q' in tmux, agent-q
;; byte-compiled) and measured by bench/mcp-load.py, a client that
;; writes each request in one piece on a keep-alive connection with
;; TCP_NODELAY, as Node's fetch under the agents' SDK does:
;;
;; - latency: 200 calls one after the other on an idle Emacs (p50,
;;   p90, max), read_file of a 2-line file inside the allowed
;;   directory (the read guard runs) and describe_symbol of `car';
;; - throughput: 8 clients making 100 calls each at once;
;; - the serving process's CPU time per call in each phase (from
;;   /proc), and the serving Emacs's garbage collections.
;;
;; The reference is the official MCP Python SDK's own server (FastMCP)
;; serving the same two tools, measured by the same client in the same
;; run, rounds interleaved.  agent-q's calls are audited (to a file)
;; and logged, as every MCP call is.  Targets: p50 under 5 ms,
;; throughput at least the reference's, CPU per call at most the
;; reference's.  An interactive Emacs, not a batch one: batch Emacs
;; never fsyncs in `write-region' and redisplays nothing, so it hides
;; costs a user's Emacs pays.  bench/mcp-profile.el profiles the same
;; setup.

;;; Code:

(require 'cl-lib)
(require 'json)
(require 'agent-q-bench)
(require 'server)

;;;; The interactive Emacs that serves

;; An Emacs waiting for input in its command loop does more per event
;; than a batch Emacs in `accept-process-output' (redisplay after a
;; process's output or a timer, the mode line...): what a user's
;; Emacs costs is measured in an `emacs -nw' inside tmux, as the
;; terminal tests start one (tests/agent-q-tmux-test.el).  It loads
;; agent-q compiled (the .elc files bench/run.el made, as package.el
;; would), starts the MCP server, and answers the benchmark's questions
;; (its GC counters, the profiler) through Emacs's server, outside the
;; measured phases.

(defvar agent-q--directory)

(defun agent-q-bench-mcp--python ()
  "The Python of the MCP SDK 1.x's virtual environment.
scripts/ensure-deps.sh --bench (run by make bench) makes it."
  (let ((python (expand-file-name "../target/mcp-venv/sdk1/bin/python"
                                  (or agent-q-bench-source-directory agent-q-bench-directory))))
    (and (file-executable-p python) python)))

(defun agent-q-bench-mcp--script ()
  "The load client's file name."
  (expand-file-name "mcp-load.py" (or agent-q-bench-source-directory agent-q-bench-directory)))

(defun agent-q-bench-mcp--wait-file (file seconds)
  "Wait up to SECONDS for FILE to exist; return its contents read as Lisp, or nil."
  (let ((deadline (+ (float-time) seconds)))
    (while (and (not (file-exists-p file)) (< (float-time) deadline))
      (accept-process-output nil 0.1))
    (and (file-exists-p file)
         (progn (sleep-for 0.1)
                (with-temp-buffer
                  (insert-file-contents file)
                  (car (read-from-string (buffer-string))))))))

(defun agent-q-bench-mcp--interactive-start (dir)
  "Start an `emacs -nw' under tmux serving MCP, its files in DIR.
Return a plist (:session :url
:token :pid :server), or signal an error."
  (let* ((session (format "agent-q-bench-%d-%d" (emacs-pid) (random 100000)))
         (source (expand-file-name "../lisp" (or agent-q-bench-source-directory
                                                 agent-q-bench-directory)))
         (compiled (if (boundp 'agent-q--directory) agent-q--directory source))
         (info (expand-file-name "serving.eld" dir))
         (setup (expand-file-name "serving-setup.el" dir))
         (server (format "agent-q-bench-%d" (emacs-pid)))
         (emacs (expand-file-name invocation-name invocation-directory)))
    (with-temp-file setup
      (prin1 `(progn
                ;; No compiler processes competing with the server for the CPU:
                ;; the libraries are native-compiled once, then cached.
                (setq native-comp-deferred-compilation nil)
                ;; Never an .elc older than its source.
                (setq load-prefer-newer t)
                (require 'agent-q)      ; from source: it loads the module
                (dolist (file ',(mapcar #'file-name-base
                                        (directory-files source t "\\`agent-q.*\\.el\\'")))
                  (load (expand-file-name file ,compiled) nil t))
                (setq agent-q-allowed-directories '(,dir)
                      agent-q-mcp-allowed-directories '(,dir)
                      agent-q-audit-file ,(expand-file-name "audit.jsonl" dir)
                      agent-q-mcp-connection-file ,(expand-file-name "mcp.json" dir))
                (require 'server)
                (setq server-socket-dir ,dir server-name ,server)
                (server-start)
                (let ((url (agent-q-mcp-start)))
                  (with-temp-file ,(concat info ".tmp")
                    (prin1 (list :url url :token agent-q-mcp--token :pid (emacs-pid))
                           (current-buffer)))
                  (rename-file ,(concat info ".tmp") ,info)))
             (current-buffer)))
    (unless (zerop (call-process "tmux" nil nil nil "new-session" "-d" "-s" session
                                 "-x" "200" "-y" "50"
                                 (mapconcat #'shell-quote-argument
                                            (list emacs "-nw" "-Q" "-L" source "-l" setup)
                                            " ")))
      (error "Cannot start tmux"))
    (let ((started (agent-q-bench-mcp--wait-file info 60)))
      (unless started
        (call-process "tmux" nil nil nil "kill-session" "-t" session)
        (error "The interactive Emacs did not start serving"))
      (append (list :session session :server (expand-file-name server dir)) started))))

(defun agent-q-bench-mcp--interactive-eval (serving form)
  "Evaluate FORM in the SERVING Emacs; return its value."
  (let ((server-socket-dir (file-name-directory (plist-get serving :server))))
    (server-eval-at (file-name-nondirectory (plist-get serving :server)) form)))

(defun agent-q-bench-mcp--interactive-stop (serving)
  "Stop the SERVING Emacs and its tmux session."
  (ignore-errors
    (agent-q-bench-mcp--interactive-eval serving '(progn (agent-q-mcp-stop) (kill-emacs 0))))
  (sleep-for 0.5)
  (call-process "tmux" nil nil nil "kill-session" "-t" (plist-get serving :session)))

;;;; The load

(defconst agent-q-bench-mcp--sequential 200
  "Calls made one after the other, for the latency.")

(defconst agent-q-bench-mcp--clients 8
  "Clients calling at once, for the throughput.")

(defconst agent-q-bench-mcp--calls 100
  "Calls of each concurrent client.")

(defun agent-q-bench-mcp--run (url token tool arguments pid)
  "Run the load client against URL with TOKEN calling TOOL with ARGUMENTS.
PID is the server's process, whose CPU time the client measures.
Return the client's JSON answer as a plist."
  (let* ((out (generate-new-buffer " *mcp-load*"))
         (process (make-process :name "mcp-load" :buffer out :noquery t
                                :connection-type 'pipe :sentinel #'ignore
                                :command (list (agent-q-bench-mcp--python)
                                               (agent-q-bench-mcp--script)
                                               url (or token "") tool
                                               (json-encode arguments)
                                               (number-to-string agent-q-bench-mcp--sequential)
                                               (number-to-string agent-q-bench-mcp--clients)
                                               (number-to-string agent-q-bench-mcp--calls)
                                               (number-to-string pid))))
         (deadline (+ (float-time) 300)))
    (unwind-protect
        (progn
          (while (and (process-live-p process) (< (float-time) deadline))
            (accept-process-output nil 0.05))
          (with-current-buffer out
            (goto-char (point-max))
            (if (re-search-backward "^{.*}$" nil t)
                (json-parse-string (match-string 0) :object-type 'plist :null-object nil)
              (error "The load client failed: %s" (buffer-string)))))
      (when (process-live-p process) (delete-process process))
      (kill-buffer out))))

(defun agent-q-bench-mcp--reference (flag)
  "Start a reference server, FLAG saying which; return (PROCESS . URL).
FLAG is \"--serve-reference\" (the SDK's FastMCP) or \"--serve-lowlevel\"
\(its low-level Server)."
  (let* ((port-file (make-temp-name (expand-file-name "agent-q-bench-port" temporary-file-directory)))
         (process (make-process :name "mcp-reference" :buffer (generate-new-buffer " *reference*")
                                :noquery t :connection-type 'pipe :sentinel #'ignore
                                :command (list (agent-q-bench-mcp--python)
                                               (agent-q-bench-mcp--script)
                                               flag port-file)))
         (deadline (+ (float-time) 30)))
    (while (and (not (file-exists-p port-file)) (process-live-p process)
                (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (unless (file-exists-p port-file)
      (error "The reference server did not start: %s"
             (with-current-buffer (process-buffer process) (buffer-string))))
    (let ((port (with-temp-buffer (insert-file-contents port-file) (buffer-string))))
      (delete-file port-file)
      ;; Give uvicorn a moment to listen after it wrote the port.
      (sleep-for 1)
      (cons process (format "http://127.0.0.1:%s/mcp" port)))))

(defun agent-q-bench-mcp--gc-counters (serving)
  "The SERVING Emacs's (GCS-DONE . GC-ELAPSED)."
  (agent-q-bench-mcp--interactive-eval serving '(cons gcs-done gc-elapsed)))

(defun agent-q-bench-mcp--median (results key)
  "The median of KEY over RESULTS (plists), ignoring missing values."
  (let ((values (sort (delq nil (mapcar (lambda (r) (plist-get r key)) results)) #'<)))
    (and values (nth (/ (length values) 2) values))))

(defun agent-q-bench-mcp--summary (results)
  "The medians of RESULTS, one plist, with the clients' errors."
  (append
   (cl-loop for key in '(:p50_ms :p90_ms :max_ms :calls_per_s :cpu_ms_per_call_sequential
                                 :cpu_ms_per_call_concurrent :cpu_main_ms_per_call_concurrent
                                 :cpu_others_ms_per_call_concurrent :gcs_per_1000 :gc_ms_per_call)
            append (list key (agent-q-bench-mcp--median results key)))
   (list :errors (apply #'vconcat (mapcar (lambda (r) (plist-get r :errors)) results)))))

(defun agent-q-bench-mcp--cell (value format-string)
  "VALUE with FORMAT-STRING, or a dash when it is nil."
  (if value (format format-string value) "-"))

(defun agent-q-bench-mcp--row (label result)
  "A note line for LABEL's RESULT (medians)."
  (agent-q-bench-note "| %s | %s | %s | %s | %s | %s | %s | %s / %s | %s | %s |%s" label
                      (agent-q-bench-mcp--cell (plist-get result :p50_ms) "%.2f")
                      (agent-q-bench-mcp--cell (plist-get result :p90_ms) "%.2f")
                      (agent-q-bench-mcp--cell (plist-get result :max_ms) "%.1f")
                      (agent-q-bench-mcp--cell (plist-get result :calls_per_s) "%.0f")
                      (agent-q-bench-mcp--cell (plist-get result :cpu_ms_per_call_sequential) "%.2f")
                      (agent-q-bench-mcp--cell (plist-get result :cpu_ms_per_call_concurrent) "%.2f")
                      (agent-q-bench-mcp--cell (plist-get result :cpu_main_ms_per_call_concurrent) "%.2f")
                      (agent-q-bench-mcp--cell (plist-get result :cpu_others_ms_per_call_concurrent) "%.2f")
                      (agent-q-bench-mcp--cell (plist-get result :gcs_per_1000) "%.0f")
                      (agent-q-bench-mcp--cell (plist-get result :gc_ms_per_call) "%.2f")
                      (let ((errors (plist-get result :errors)))
                        (if (> (length errors) 0)
                            (format " %d client(s) failed: %s" (length errors) (aref errors 0))
                          ""))))

(defun agent-q-bench-mcp--ratio (a b key)
  "A's KEY divided by B's, formatted, or a dash."
  (let ((x (plist-get a key)) (y (plist-get b key)))
    (if (and x y (> y 0)) (format "%.2f×" (/ x y)) "-")))

(defun agent-q-bench-mcp--rounds ()
  "How many times each server and tool is measured (the median is shown)."
  (let ((env (getenv "AGENT_Q_BENCH_MCP_ROUNDS")))
    (max 1 (if env (string-to-number env)
             (min 3 (string-to-number (or (getenv "AGENT_Q_BENCH_RUNS") "3")))))))

(defun agent-q-bench-mcp ()
  "Benchmark 7: safe MCP calls, agent-q against the SDK's two reference servers."
  (cond
   ((not (agent-q-bench-mcp--python))
    (agent-q-bench-pending "the MCP SDK's venv is missing (scripts/ensure-deps.sh --bench makes it)"))
   ((not (executable-find "tmux"))
    (agent-q-bench-pending "tmux is missing (scripts/ensure-deps.sh --bench installs it)"))
   (t
    (let* ((dir (file-name-as-directory (file-truename (make-temp-file "agent-q-bench-mcp" t))))
           (file (expand-file-name "two-lines.txt" dir))
           (references nil) (serving nil)
           (workloads `(("read_file" (:path ,file)) ("describe_symbol" (:symbol "car"))))
           (rounds (agent-q-bench-mcp--rounds))
           (total (+ 1 agent-q-bench-mcp--sequential
                     (* agent-q-bench-mcp--clients agent-q-bench-mcp--calls))))
      (with-temp-file file (insert "first line\nsecond line\n"))
      (unwind-protect
          (let ((results nil))
            (setq references (list (cons 'fastmcp (agent-q-bench-mcp--reference "--serve-reference"))
                                   (cons 'lowlevel (agent-q-bench-mcp--reference "--serve-lowlevel")))
                  serving (agent-q-bench-mcp--interactive-start dir))
            ;; Rounds interleaved, agent-q then the reference, so that load
            ;; from elsewhere hits both alike.
            (dotimes (_ rounds)
              (pcase-dolist (`(,tool ,arguments) workloads)
                (let* ((before (agent-q-bench-mcp--gc-counters serving))
                       (result (agent-q-bench-mcp--run (plist-get serving :url)
                                                       (plist-get serving :token)
                                                       tool arguments (plist-get serving :pid)))
                       (after (agent-q-bench-mcp--gc-counters serving)))
                  (push (append (list :gcs_per_1000 (/ (* 1000.0 (- (car after) (car before))) total)
                                      :gc_ms_per_call (/ (* 1000.0 (- (cdr after) (cdr before))) total))
                                result)
                        (alist-get (cons 'agent-q tool) results nil nil #'equal)))
                (pcase-dolist (`(,name . ,reference) references)
                  (push (agent-q-bench-mcp--run (cdr reference) nil tool arguments
                                                (process-id (car reference)))
                        (alist-get (cons name tool) results nil nil #'equal)))))
            (agent-q-bench-note "Served by an interactive Emacs (`emacs -nw -Q` in tmux, agent-q byte-compiled, every call audited to a file and logged in *agent-q-log*) and by the MCP Python SDK's servers, FastMCP and the low-level Server (bench/mcp-load.py --serve-lowlevel), in the same run, rounds interleaved. The client (bench/mcp-load.py) makes %d calls one after the other on one keep-alive connection (TCP_NODELAY, each request written in one piece), then %d clients × %d calls at once. CPU: the serving process's user + system time per call (all its threads, from /proc), in each phase; in the concurrent phase also the main thread's (Emacs's Lisp) and the other threads' apart. GCs: the serving Emacs's collections over the whole run, per 1,000 calls, and their time per call. Medians of %d round(s)."
                                agent-q-bench-mcp--sequential agent-q-bench-mcp--clients
                                agent-q-bench-mcp--calls rounds)
            (agent-q-bench-note "")
            (agent-q-bench-note "| server, tool | p50 ms | p90 ms | max ms | calls/s (%d clients) | CPU ms/call, sequential | CPU ms/call, concurrent | of which main / other threads | GCs per 1000 calls | GC ms/call |"
                                agent-q-bench-mcp--clients)
            (agent-q-bench-note "|---|---|---|---|---|---|---|---|---|---|")
            (let ((verdicts nil))
              (pcase-dolist (`(,tool ,_) workloads)
                (let ((ours (agent-q-bench-mcp--summary
                             (alist-get (cons 'agent-q tool) results nil nil #'equal))))
                  (agent-q-bench-mcp--row (format "agent-q, %s" tool) ours)
                  (pcase-dolist (`(,name . ,label) '((lowlevel . "MCP SDK low-level Server")
                                                     (fastmcp . "MCP SDK FastMCP")))
                    (let ((theirs (agent-q-bench-mcp--summary
                                   (alist-get (cons name tool) results nil nil #'equal))))
                      (agent-q-bench-mcp--row (format "%s, %s" label tool) theirs)
                      (push (format "- %s against the %s: throughput %s (target ≥ 1×); CPU per call %s (sequential) and %s (concurrent) (target ≤ 1×); p50 %.2f ms (target < 5 ms), %s."
                                    tool label
                                    (agent-q-bench-mcp--ratio ours theirs :calls_per_s)
                                    (agent-q-bench-mcp--ratio ours theirs :cpu_ms_per_call_sequential)
                                    (agent-q-bench-mcp--ratio ours theirs :cpu_ms_per_call_concurrent)
                                    (or (plist-get ours :p50_ms) -1)
                                    (agent-q-bench-mcp--ratio ours theirs :p50_ms))
                            verdicts)))))
              (agent-q-bench-note "")
              (dolist (line (nreverse verdicts))
                (agent-q-bench-note "%s" line))))
        (when serving (agent-q-bench-mcp--interactive-stop serving))
        (pcase-dolist (`(,_ . ,reference) references)
          (delete-process (car reference))
          (kill-buffer (process-buffer (car reference))))
        (delete-directory dir t))))))

(agent-q-bench-define-section
 7 "mcp" "7. MCP calls: latency and throughput against the SDK's reference servers"
 #'agent-q-bench-mcp)

(provide 'agent-q-bench-mcp)

;;; agent-q-bench-mcp.el ends here
