;;; agent-q-bench-gate.el --- Benchmark: what the gate adds to the agents' own tool calls  -*- lexical-binding: t -*-

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

;; The gate (lisp/agent-q-gate.el) in numbers, in this batch Emacs:
;;
;; - the hook alone: `agent-q-mcp hook --agent claude' fed one
;;   PreToolUse input for `true', which an allow :command rule
;;   decides, against the same hook with no Emacs to ask (process
;;   start and the fallback only): p50 and p90 of the wall time;
;; - Claude Code, Gemini CLI and Codex CLI running N scripted `true I'
;;   shell calls, allowed by the rule through their hook, against the
;;   same run with no hook and the agent's own rule or policy letting
;;   `true' run (and, for Claude, no permission check at all): the p50
;;   of the time between two of its requests to the scripted model
;;   (one tool call and one model turn), rounds interleaved;
;; - ten agents waiting: ten hook processes whose calls wait for the
;;   user, against ten of agent-q's own MCP calls (write_file, by
;;   bench/gate-waiting.py) waiting, and nothing waiting: the lateness
;;   of a 10 ms timer over three seconds, and the CPU time of Emacs and
;;   of the waiting processes meanwhile.
;;
;; It uses the real agents and the scripted model of the tests
;; (tests/agent-q-agents-test.el, tests/agent-q-gate-test.el).

;;; Code:

(require 'cl-lib)
(require 'json)
(require 'subr-x)
(require 'agent-q-bench)
(eval-and-compile
  (add-to-list 'load-path
               (expand-file-name "../tests" (file-name-directory
                                             (or load-file-name buffer-file-name
                                                 default-directory)))))
(require 'agent-q-gate-test)

(defvar agent-q-bench-gate-calls
  (string-to-number (or (getenv "AGENT_Q_BENCH_GATE_CALLS") "12"))
  "How many `true' calls each agent's run makes.")

(defvar agent-q-bench-gate-rounds
  (string-to-number (or (getenv "AGENT_Q_BENCH_GATE_ROUNDS") "3"))
  "How many interleaved rounds of Claude Code runs, with and without the hook.")

(defun agent-q-bench-gate--quantile (numbers q)
  "The Q quantile (0..1) of NUMBERS, by the nearest rank."
  (let ((sorted (sort (copy-sequence numbers) #'<)))
    (nth (min (1- (length sorted)) (floor (* q (length sorted)))) sorted)))

(defun agent-q-bench-gate--ms (seconds)
  "SECONDS in milliseconds, as text."
  (format "%.1f" (* 1000 seconds)))

(defun agent-q-bench-gate--input (command)
  "Claude Code's PreToolUse input for its Bash tool running COMMAND, as JSON."
  (json-encode `((session_id . "bench") (transcript_path . "/tmp/bench.jsonl")
                 (cwd . ,temporary-file-directory) (permission_mode . "default")
                 (hook_event_name . "PreToolUse") (tool_name . "Bash")
                 (tool_input (command . ,command) (description . "bench"))
                 (tool_use_id . "toolu_bench"))))

(defun agent-q-bench-gate--hook (command connection-file)
  "Start the hook for COMMAND, finding Emacs through CONNECTION-FILE.  Return it."
  (let* ((process-environment (cons (concat "AGENT_Q_MCP_CONNECTION_FILE=" connection-file)
                                    process-environment))
         (process (make-process :name "agent-q-bench-hook" :noquery t :connection-type 'pipe
                                :buffer (generate-new-buffer " *agent-q-bench-hook*")
                                :command (split-string (agent-q-gate-test--hook 'claude)))))
    (process-send-string process (agent-q-bench-gate--input command))
    (process-send-eof process)
    process))

(defun agent-q-bench-gate--hook-once (connection-file)
  "Seconds one hook run takes, finding Emacs through CONNECTION-FILE; its output."
  (let* ((start (float-time))
         (process (agent-q-bench-gate--hook "true" connection-file)))
    (while (process-live-p process)
      (accept-process-output process 0.01))
    (prog1 (cons (- (float-time) start)
                 (with-current-buffer (process-buffer process) (buffer-string)))
      (kill-buffer (process-buffer process)))))

(defmacro agent-q-bench-gate--with-server (&rest body)
  "Run BODY with the gate on, the MCP server started, in a fresh directory DIR."
  (declare (indent 0))
  `(let* ((dir (file-name-as-directory (make-temp-file "agent-q-bench-gate" t)))
          (agent-q-mcp-connection-file (expand-file-name "connection.json" dir))
          (agent-q-audit-file (expand-file-name "audit.jsonl" dir))
          (agent-q-approval-rules '(("shell_command" (:command "true") allow)))
          (agent-q-mcp-port 0))
     (unwind-protect
         (progn (agent-q-gate-mode 1)
                (agent-q-mcp-start)
                ,@body)
       (agent-q-mcp-stop)
       (agent-q-gate-mode -1)
       (agent-q-cancel-pending)
       (delete-directory dir t))))

(defun agent-q-bench-gate--hook-alone ()
  "The hook alone: allowed by a rule through Emacs, against no Emacs to ask."
  (agent-q-bench-gate--with-server
    (let ((n 40) with without answer)
      (dotimes (_ n)
        (let ((run (agent-q-bench-gate--hook-once agent-q-mcp-connection-file)))
          (setq answer (cdr run))
          (push (car run) with))
        (push (car (agent-q-bench-gate--hook-once (expand-file-name "none.json" dir)))
              without))
      (unless (string-match-p "\"allow\"" answer)
        (error "The hook did not allow: %s" answer))
      (agent-q-bench-note "**The hook alone** (`bin/agent-q-mcp hook --agent claude`, one PreToolUse input for `true`, %d runs each, wall time):" n)
      (agent-q-bench-note "")
      (agent-q-bench-note "| hook | p50 ms | p90 ms |")
      (agent-q-bench-note "|---|---|---|")
      (agent-q-bench-note "| round trip to this Emacs, allowed by a :command rule | %s | %s |"
                          (agent-q-bench-gate--ms (agent-q-bench-gate--quantile with 0.5))
                          (agent-q-bench-gate--ms (agent-q-bench-gate--quantile with 0.9)))
      (agent-q-bench-note "| no Emacs to ask (process start, fallback) | %s | %s |"
                          (agent-q-bench-gate--ms (agent-q-bench-gate--quantile without 0.5))
                          (agent-q-bench-gate--ms (agent-q-bench-gate--quantile without 0.9)))
      (agent-q-bench-note ""))))

(defun agent-q-bench-gate--no-hook (agent home)
  "Take agent-q's hook out of AGENT's settings in HOME; let `true N' run without it."
  (pcase agent
    ('claude
     ;; Claude's own rule lets `true' run.
     (agent-q-agents-test--write (expand-file-name ".claude/settings.json" home)
                                 (json-encode '((permissions (allow . ["Bash(true:*)"]))))))
    ('gemini
     ;; Its policy (passed with --policy) allows the shell already.
     (let* ((file (expand-file-name ".gemini/settings.json" home))
            (settings (json-parse-string (agent-q-agents-test--read file)
                                         :object-type 'alist :false-object :json-false)))
       (agent-q-agents-test--write file (json-encode (assq-delete-all 'hooks settings)))))
    ;; approval_policy = "never" runs it.
    ('codex (delete-file (expand-file-name ".codex/hooks.json" home)))))

(defun agent-q-bench-gate--agent-run (agent how)
  "Run AGENT once; the gaps between its steps, and how many helper requests it made.
HOW is `hook' (through the gate), `own' (no hook, the agent's own
rule or policy lets `true' run) or, for Claude Code, `bypass' (no
hook, no permission check: --permission-mode bypassPermissions).
Return (GAPS . HELPERS)."
  (agent-q-gate-test--with-agent-dirs agent
    (let ((agent-q-approval-rules '(("shell_command" (:command "true *") allow)))
          (agent-q-approval-function (lambda (&rest _) :denied)))
      (agent-q-gate-mode 1)
      (agent-q-mcp-start)
      (setq model (agent-q-agents-test--start-model
                   dir (agent-q-agents-test--prop agent :dialect)
                   ;; Each call its own: Gemini stops a run that repeats one call.
                   (append (cl-loop for i from 1 to agent-q-bench-gate-calls
                                    collect (agent-q-gate-test--shell-step
                                             agent (format "true %d" i)))
                           '(((text . "Done."))))))
      (cl-letf* ((setup (symbol-function 'agent-q-gate-test--setup))
                 ((symbol-function 'agent-q-gate-test--setup)
                  (lambda (agent home dir port)
                    (let ((setup (funcall setup agent home dir port)))
                      (unless (eq how 'hook)
                        (agent-q-bench-gate--no-hook agent home))
                      (if (eq how 'bypass)
                          (append (list (car setup)
                                        (append (nth 1 setup)
                                                '("--permission-mode" "bypassPermissions")))
                                  ;; Claude refuses to bypass as root outside a sandbox.
                                  (cons "IS_SANDBOX=1" (nthcdr 2 setup)))
                        setup)))))
        (let* ((steps (car (agent-q-gate-test--run agent home dir work model
                                                   (1+ agent-q-bench-gate-calls))))
               (times (mapcar (lambda (r) (alist-get 'time r)) steps))
               (results (alist-get 'results (car (last steps))))
               (helpers (cl-count "helper" (agent-q-agents-test--json-lines (nth 2 model))
                                  :key (lambda (r) (alist-get 'kind r)) :test #'equal)))
          (unless (cl-every (lambda (r) (not (eq (alist-get 'error r) t))) results)
            (error "A call of %s did not run: %S" agent results))
          (when (and (eq how 'hook) (not (file-exists-p agent-q-audit-file)))
            (error "The hook of %s did not reach Emacs" agent))
          (when (and (not (eq how 'hook)) (file-exists-p agent-q-audit-file))
            (error "The hook of %s was still there" agent))
          (cons (cl-mapcar (lambda (a b) (- b a)) times (cdr times)) helpers))))))

(defconst agent-q-bench-gate--ways
  '((hook . "PreToolUse/BeforeTool hook to Emacs, allowed by a :command rule")
    (own . "no hook, the agent's own rule or policy lets `true N` run")
    (bypass . "no hook, no permission check (Claude: bypassPermissions)"))
  "The ways each agent runs in the benchmark, and their labels.")

(defun agent-q-bench-gate--agents ()
  "Each agent's tool calls with the hook and without."
  (agent-q-bench-note "**The agents' own `true N` calls** (allowed by `(\"shell_command\" (:command \"true *\") allow)`), %d rounds of %d scripted calls each, interleaved (the time from one of the agent's requests to the model to the next: one tool call and one turn; helper requests, such as Claude's, counted apart):"
                      agent-q-bench-gate-rounds agent-q-bench-gate-calls)
  (agent-q-bench-note "")
  (agent-q-bench-note "| agent | how | p50 ms | p90 ms | mean ms | helper requests per run |")
  (agent-q-bench-note "|---|---|---|---|---|---|")
  (let (verdicts)
    (dolist (agent '(claude gemini codex))
      (let* ((ways (if (eq agent 'claude) '(hook own bypass) '(hook own)))
             (gaps (mapcar #'list ways))
             (helpers (mapcar #'list ways)))
        (dotimes (_ agent-q-bench-gate-rounds)
          (dolist (how ways)
            (let ((run (agent-q-bench-gate--agent-run agent how)))
              (setcdr (assq how gaps) (append (cdr (assq how gaps)) (car run)))
              (push (cdr run) (cdr (assq how helpers))))))
        (dolist (how ways)
          (agent-q-bench-note "| %s | %s | %s | %s | %s | %s |" agent
                              (alist-get how agent-q-bench-gate--ways)
                              (agent-q-bench-gate--ms
                               (agent-q-bench-gate--quantile (cdr (assq how gaps)) 0.5))
                              (agent-q-bench-gate--ms
                               (agent-q-bench-gate--quantile (cdr (assq how gaps)) 0.9))
                              (agent-q-bench-gate--ms
                               (/ (apply #'+ (cdr (assq how gaps)))
                                  (float (length (cdr (assq how gaps))))))
                              (mapconcat #'number-to-string
                                         (reverse (cdr (assq how helpers))) ", ")))
        (let ((mean (lambda (how) (/ (apply #'+ (cdr (assq how gaps)))
                                     (float (length (cdr (assq how gaps))))))))
          (push (format "%s %s ms (mean %s ms)" agent
                        (agent-q-bench-gate--ms
                         (- (agent-q-bench-gate--quantile (cdr (assq 'hook gaps)) 0.5)
                            (agent-q-bench-gate--quantile (cdr (assq 'own gaps)) 0.5)))
                        (agent-q-bench-gate--ms (- (funcall mean 'hook) (funcall mean 'own))))
                verdicts))))
    (agent-q-bench-note "")
    (agent-q-bench-note "The hook adds, per tool call at p50, against the agent's own rule: **%s** (target: at most 50 ms)."
                        (string-join (nreverse verdicts) ", "))
    (agent-q-bench-note "")))

(defun agent-q-bench-gate--cpu (pids)
  "The CPU seconds (user + system) the processes PIDS have used so far."
  (cl-loop for pid in pids
           for attrs = (process-attributes pid)
           sum (+ (float-time (or (alist-get 'utime attrs) 0))
                  (float-time (or (alist-get 'stime attrs) 0)))))

(defun agent-q-bench-gate--responsiveness (pids)
  "Timer lateness and CPU over three seconds; PIDS are the waiting processes.
Return (P50 P99 MAX EMACS-CPU OTHERS-CPU), times in seconds."
  (let* ((late nil)
         (expected (+ (float-time) 0.01))
         (timer (run-at-time 0.01 0.01
                             (lambda ()
                               (push (- (float-time) expected) late)
                               (setq expected (+ expected 0.01)))))
         (cpu (agent-q-bench-gate--cpu (cons (emacs-pid) pids)))
         (others (agent-q-bench-gate--cpu pids))
         (end (+ (float-time) 3)))
    (unwind-protect
        (while (< (float-time) end)
          (accept-process-output nil 0.05))
      (cancel-timer timer))
    (let ((others-after (agent-q-bench-gate--cpu pids))
          (all-after (agent-q-bench-gate--cpu (cons (emacs-pid) pids)))
          (late (mapcar (lambda (x) (max 0 x)) late)))
      (list (agent-q-bench-gate--quantile late 0.5) (agent-q-bench-gate--quantile late 0.99)
            (apply #'max late)
            (- (- all-after cpu) (- others-after others))
            (- others-after others)))))

(defun agent-q-bench-gate--ten ()
  "Ten calls waiting: the gate's (ten hooks) and agent-q's own (ten MCP calls)."
  (let (rows)
    (agent-q-bench-gate--with-server
      (push (cons "nothing waiting" (agent-q-bench-gate--responsiveness nil)) rows)
      (let* ((agent-q-approval-function (lambda (&rest _) :later))
             (hooks (cl-loop for i below 10
                             collect (agent-q-bench-gate--hook (format "touch wait-%d" i)
                                                               agent-q-mcp-connection-file))))
        (agent-q-gate-test--wait-pending 10)
        (push (cons "ten hooks' calls waiting (the gate)"
                    (agent-q-bench-gate--responsiveness (mapcar #'process-id hooks)))
              rows)
        (dolist (p hooks)
          (delete-process p)
          (kill-buffer (process-buffer p)))
        (agent-q-gate-test--wait-pending 0)))
    (agent-q-bench-gate--with-server
      (let* ((agent-q-approval-function (lambda (&rest _) :later))
             (connection (json-parse-string
                          (agent-q-agents-test--read agent-q-mcp-connection-file)
                          :object-type 'alist))
             (client (make-process
                      :name "agent-q-bench-waiting" :noquery t :connection-type 'pipe
                      :buffer (generate-new-buffer " *agent-q-bench-waiting*")
                      :command (list "python3" (expand-file-name
                                                "gate-waiting.py"
                                                (or agent-q-bench-source-directory
                                                    agent-q-bench-directory))
                                     (alist-get 'url connection) (alist-get 'token connection)
                                     "10" dir))))
        (unwind-protect
            (progn
              (agent-q-gate-test--wait-pending 10)
              (push (cons "ten of agent-q's own MCP calls waiting"
                          (agent-q-bench-gate--responsiveness (list (process-id client))))
                    rows))
          (delete-process client)
          (kill-buffer (process-buffer client)))))
    (agent-q-bench-note "**Ten agents waiting**: a 10 ms timer's lateness over 3 s, and CPU time meanwhile (Emacs; the ten hook processes, or the one Python client holding the ten MCP calls):")
    (agent-q-bench-note "")
    (agent-q-bench-note "| waiting | timer late p50 ms | p99 ms | max ms | Emacs CPU ms | waiting processes' CPU ms |")
    (agent-q-bench-note "|---|---|---|---|---|---|")
    (pcase-dolist (`(,label ,p50 ,p99 ,max ,emacs ,others) (nreverse rows))
      (agent-q-bench-note "| %s | %s | %s | %s | %s | %s |" label
                          (agent-q-bench-gate--ms p50) (agent-q-bench-gate--ms p99)
                          (agent-q-bench-gate--ms max) (agent-q-bench-gate--ms emacs)
                          (agent-q-bench-gate--ms others)))
    (agent-q-bench-note "")))

(defun agent-q-bench-gate-run ()
  "Run the gate's benchmarks."
  (agent-q-bench-gate--hook-alone)
  (agent-q-bench-gate--ten)
  (agent-q-bench-gate--agents))

(agent-q-bench-define-section 8 "gate" "8. The gate: the agents' own tool calls"
                              #'agent-q-bench-gate-run)

(provide 'agent-q-bench-gate)

;;; agent-q-bench-gate.el ends here
