;;; agent-q-agents-test.el --- The real terminal agents drive agent-q's MCP server  -*- lexical-binding: t -*-

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

;; End-to-end tests with the real terminal agents: Claude Code, Gemini
;; CLI and Codex CLI, as installed from npm by scripts/ensure-deps.sh
;; --test under target/agents/ (pinned by tests/agents/package-lock.json).
;; None needs a real model: each is pointed at tests/fake-agent-model.py,
;; a scripted model server on 127.0.0.1 that speaks the agent's model API
;; (Anthropic Messages, Gemini, OpenAI Responses) and whose answers are
;; calls of agent-q's tools: read_file, then write_file of a file the
;; test's approval function approves, then write_file of one it denies,
;; then a final text.  The server records every request, so the test
;; reads what the agent sent back to its model after each call.
;;
;; This batch Emacs serves (`agent-q-mcp-start', temporary connection and
;; audit files) while the agent runs as an asynchronous subprocess, with
;; a temporary HOME holding its configuration, over Streamable HTTP (URL
;; and bearer token) and over the stdio relay bin/agent-q-mcp.  Each
;; agent's own approval is configured to leave agent-q's tools to
;; agent-q, so that Emacs alone decides: Claude Code by --allowedTools,
;; Gemini CLI by "trust" on the server, Codex by
;; default_tools_approval_mode = "approve".
;;
;; A missing install is a failure that says how to install, never a skip.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'json)
(require 'subr-x)
(require 'agent-q)
(require 'agent-q-mcp)

(defvar agent-q-allowed-directories)
(defvar agent-q-mcp-allowed-directories)
(defvar agent-q-prompt--session-approved)

(defconst agent-q-agents-test--root
  (file-name-directory (directory-file-name
                        (file-name-directory (or load-file-name buffer-file-name))))
  "The root of the source tree.")

(defconst agent-q-agents-test--model
  (expand-file-name "tests/fake-agent-model.py" agent-q-agents-test--root)
  "The scripted model server.")

(defconst agent-q-agents-test--relay
  (expand-file-name "bin/agent-q-mcp" agent-q-agents-test--root)
  "The stdio relay that `make build' builds.")

(defconst agent-q-agents-test--timeout 120
  "Seconds an agent's run may take before the test fails.")

(defconst agent-q-agents-test--agents
  '((claude :program "claude" :dialect "anthropic" :client "\\`claude-code 2\\.1\\.197 (MCP)\\'")
    (gemini :program "gemini" :dialect "gemini"
            :client "\\`gemini-cli-mcp-client 0\\.61\\.0 (MCP)\\'")
    (codex :program "codex" :dialect "responses"
           :client "\\`codex-mcp-client 0\\.169\\.0 (MCP)\\'"))
  "Each agent: its program, its model API, how it names itself in the audit.")

(defun agent-q-agents-test--prop (agent key)
  "The property KEY of AGENT in `agent-q-agents-test--agents'."
  (plist-get (alist-get agent agent-q-agents-test--agents) key))

(defun agent-q-agents-test--program (agent)
  "The executable of AGENT; fail the test, saying how to install, if missing."
  (let ((program (expand-file-name
                  (concat "target/agents/node_modules/.bin/"
                          (agent-q-agents-test--prop agent :program))
                  agent-q-agents-test--root)))
    (unless (file-executable-p program)
      (ert-fail (format "%s is missing: run scripts/ensure-deps.sh --test (make test does)"
                        program)))
    program))

(defun agent-q-agents-test--tool-step (agent tool arguments)
  "The scripted model's call of agent-q's TOOL with ARGUMENTS, as AGENT names it."
  (pcase agent
    ('claude `((tool . ,(concat "mcp__agent-q__" tool)) (arguments . ,arguments)))
    ('gemini `((tool . ,(concat "mcp_agent-q_" tool)) (arguments . ,arguments)))
    ('codex `((tool . ,tool) (namespace . "mcp__agent_q") (arguments . ,arguments)))))

;;;; Files and processes

(defun agent-q-agents-test--write (file content)
  "Write CONTENT to FILE, making its directory."
  (make-directory (file-name-directory file) t)
  (let ((coding-system-for-write 'utf-8-unix))
    (with-temp-file file (insert content))))

(defun agent-q-agents-test--read (file)
  "The text of FILE, or nil when it does not exist."
  (and (file-exists-p file)
       (with-temp-buffer (insert-file-contents file) (buffer-string))))

(defun agent-q-agents-test--json-lines (file)
  "The JSON objects of FILE, one a line, oldest first, as alists."
  (let ((text (agent-q-agents-test--read file)))
    (and text
         (mapcar (lambda (line)
                   (json-parse-string line :object-type 'alist :array-type 'list
                                      :null-object nil :false-object :false))
                 (split-string text "\n" t)))))

(defun agent-q-agents-test--wait (predicate seconds what)
  "Process events until PREDICATE is non-nil, at most SECONDS; fail naming WHAT."
  (let ((deadline (+ (float-time) seconds)))
    (while (and (not (funcall predicate)) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (or (funcall predicate) (ert-fail (format "Timed out waiting for %s" what)))))

(defconst agent-q-agents-test--node-bin
  (expand-file-name "target/node/bin" agent-q-agents-test--root)
  "Where scripts/ensure-deps.sh --test installs Node when the system's is too old.
It is the Node of tests/agents/node.txt, and the agents were installed with it.")

(defun agent-q-agents-test--path ()
  "The PATH the agents run with: the user's, after the Node of target/node/.
The agents' programs start with #!/usr/bin/env node, so they run with the
first node on PATH: the one scripts/ensure-deps.sh --test installed them
with, under target/node/bin when the system's is too old."
  (if (file-executable-p (expand-file-name "node" agent-q-agents-test--node-bin))
      (concat agent-q-agents-test--node-bin path-separator (getenv "PATH"))
    (getenv "PATH")))

(defun agent-q-agents-test--environment (home extra)
  "A process environment with HOME as the home directory, plus EXTRA.
Nothing of the user's own environment reaches the agent but PATH (see
`agent-q-agents-test--path')."
  (append extra
          (list (concat "HOME=" home)
                (concat "PATH=" (agent-q-agents-test--path))
                (concat "XDG_CONFIG_HOME=" (expand-file-name ".config" home))
                (concat "XDG_CACHE_HOME=" (expand-file-name ".cache" home))
                (concat "XDG_DATA_HOME=" (expand-file-name ".local/share" home))
                (concat "TMPDIR=" (expand-file-name "tmp" home))
                "LANG=C.UTF-8" "TERM=dumb" "NO_COLOR=1"
                "NO_PROXY=127.0.0.1,localhost" "no_proxy=127.0.0.1,localhost")))

(defun agent-q-agents-test--start-model (dir dialect answers)
  "Run the scripted model server in DIR, speaking DIALECT, scripted by ANSWERS.
Return (PROCESS PORT RECORD-FILE)."
  (let* ((script (expand-file-name "model-script.json" dir))
         (port-file (expand-file-name "model-port" dir))
         (record (expand-file-name "model-requests.jsonl" dir))
         (process
          (progn
            (agent-q-agents-test--write script (json-encode `((steps . ,(vconcat answers)))))
            (make-process :name "agent-q-agents-model" :noquery t
                          :buffer (generate-new-buffer " *agent-q-agents-model*")
                          :connection-type 'pipe
                          :command (list "python3" agent-q-agents-test--model
                                         "--dialect" dialect "--script" script
                                         "--port-file" port-file "--record" record
                                         "--timeout" (number-to-string
                                                      agent-q-agents-test--timeout))))))
    (agent-q-agents-test--wait (lambda () (or (file-exists-p port-file)
                                              (not (process-live-p process))))
                               20 "the scripted model server's port")
    (unless (file-exists-p port-file)
      (ert-fail (format "The scripted model server did not start:\n%s"
                        (with-current-buffer (process-buffer process) (buffer-string)))))
    (list process (string-to-number (agent-q-agents-test--read port-file)) record)))

;;;; Each agent's configuration

(defun agent-q-agents-test--connection ()
  "The URL and token in the connection file the server wrote, as a cons."
  (let ((connection (json-parse-string (agent-q-agents-test--read agent-q-mcp-connection-file)
                                       :object-type 'alist)))
    (cons (alist-get 'url connection) (alist-get 'token connection))))

(defun agent-q-agents-test--codex-config (model)
  "The start of Codex CLI's config.toml for the tests: MODEL's URL as its model.
No approval prompt of Codex's own, no update check, no telemetry."
  (concat "model = \"scripted\"\nmodel_provider = \"scripted\"\n"
          "approval_policy = \"never\"\ncheck_for_update_on_startup = false\n"
          "[analytics]\nenabled = false\n[feedback]\nenabled = false\n"
          "[features]\nplugins = false\n"
          "[model_providers.scripted]\nname = \"scripted\"\n"
          (format "base_url = %S\n" (concat model "/v1"))
          "wire_api = \"responses\"\nenv_key = \"AGENT_Q_TEST_MODEL_KEY\"\n"))

(defun agent-q-agents-test--configure (agent transport home port)
  "Configure AGENT in HOME for agent-q over TRANSPORT and its model on PORT.
TRANSPORT is `http', `relay' or `connected': the relay as
`agent-q-mcp-connect-agent' configures it in the agent's own user-level
files, with nothing on the command line.  Return (ARGUMENTS .
ENVIRONMENT): what to run the agent with after its program."
  (prog1 (agent-q-agents-test--configure-1 agent transport home port)
    (when (eq transport 'connected)
      (let ((process-environment (cons (concat "HOME=" home) process-environment)))
        (agent-q-mcp-connect-agent agent)))))

(defun agent-q-agents-test--configure-1 (agent transport home port)
  "The body of `agent-q-agents-test--configure' (AGENT TRANSPORT HOME PORT)."
  (let* ((connection (agent-q-agents-test--connection))
         (url (car connection))
         (token (cdr connection))
         (relay-args (list "--connection-file" agent-q-mcp-connection-file))
         (model (format "http://127.0.0.1:%d" port))
         (prompt "Read the file, then make the two writes."))
    (pcase agent
      ('claude
       (let ((config (expand-file-name "mcp.json" home)))
         (unless (eq transport 'connected)
          (agent-q-agents-test--write
          config
          (json-encode
           `((mcpServers
              (agent-q . ,(if (eq transport 'http)
                              `((type . "http") (url . ,url)
                                (headers (Authorization . ,(concat "Bearer " token))))
                            `((type . "stdio") (command . ,agent-q-agents-test--relay)
                              (args . ,(vconcat relay-args))))))))))
         (cons (if (eq transport 'connected)
                   ;; What `agent-q-mcp-connect-agent' wrote: the relay in ~/.claude.json,
                   ;; Claude Code's permission for the server's tools in its settings.
                   (list "-p" prompt "--output-format" "json")
                 (list "-p" prompt "--mcp-config" config "--strict-mcp-config"
                       ;; Claude Code's own permission for the server's tools: Emacs decides.
                       "--allowedTools" "mcp__agent-q" "--output-format" "json"))
               (list (concat "ANTHROPIC_BASE_URL=" model) "ANTHROPIC_API_KEY=scripted"
                     "DISABLE_TELEMETRY=1" "DISABLE_AUTOUPDATER=1" "DISABLE_ERROR_REPORTING=1"
                     "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"))))
      ('gemini
       (agent-q-agents-test--write
        (expand-file-name ".gemini/settings.json" home)
        (json-encode
         `((security (folderTrust (enabled . :json-false))
                     (auth (selectedType . "gemini-api-key")))
           (general (enableAutoUpdate . :json-false) (enableAutoUpdateNotification . :json-false))
           (privacy (usageStatisticsEnabled . :json-false))
           (telemetry (enabled . :json-false))
           ,@(unless (eq transport 'connected)
               `((mcpServers
                  ;; "trust" leaves the server's tools to the server: Emacs decides.
                  (agent-q . ,(if (eq transport 'http)
                                  `((httpUrl . ,url)
                                    (headers (Authorization . ,(concat "Bearer " token)))
                                    (trust . t))
                                `((command . ,agent-q-agents-test--relay)
                                  (args . ,(vconcat relay-args))
                                  (trust . t))))))))))
       ;; Under -p, Gemini CLI offers no tool that would need its confirmation (write_file
       ;; here), "trust" or not: --yolo lets it offer them, and Emacs still decides.
       (cons (list "-p" prompt "--yolo" "--output-format" "json")
             (list (concat "GOOGLE_GEMINI_BASE_URL=" model) "GEMINI_API_KEY=scripted")))
      ('codex
       (let ((codex-home (expand-file-name ".codex" home)))
         (agent-q-agents-test--write
          (expand-file-name "config.toml" codex-home)
          (concat (agent-q-agents-test--codex-config model)
                  (if (eq transport 'connected)
                      ""
                    (concat
                     "[mcp_servers.agent-q]\n"
                     (if (eq transport 'http)
                         (format "url = %S\nbearer_token_env_var = \"AGENT_Q_TEST_MCP_TOKEN\"\n" url)
                       (format "command = %S\nargs = [%S, %S]\n"
                               agent-q-agents-test--relay (car relay-args) (cadr relay-args)))
                     ;; Codex's own approval of the server's tools: Emacs decides.
                     "default_tools_approval_mode = \"approve\"\n"))))
         (cons (list "exec" "--skip-git-repo-check" "--strict-config" prompt)
               (list (concat "CODEX_HOME=" codex-home) "AGENT_Q_TEST_MODEL_KEY=scripted"
                     (concat "AGENT_Q_TEST_MCP_TOKEN=" token)
                     "RUST_LOG=error,codex_mcp=warn")))))))

;;;; A scripted conversation

(defun agent-q-agents-test--listed (agent home)
  "Check that AGENT's own `mcp list', run from another directory, lists agent-q.
HOME is the agent's home; `process-environment' is the agent's."
  (let ((default-directory (file-name-as-directory (expand-file-name "elsewhere" home))))
    (make-directory default-directory t)
    (with-temp-buffer
      (let ((status (call-process (agent-q-agents-test--program agent) nil t nil "mcp" "list")))
        (unless (and (eq status 0) (string-match-p "agent-q" (buffer-string)))
          (ert-fail (format "%s mcp list (exit %s) does not list agent-q:\n%s"
                            agent status (buffer-string))))
        ;; Claude Code and Gemini CLI connect to each server they list.
        (unless (eq agent 'codex)
          (should (string-match-p "agent-q.*[Cc]onnected" (buffer-string))))))))

(defvar agent-q-agents-test--asked nil
  "What the approval function was asked, newest first: (TOOL ARGS CONTEXT).")

(defun agent-q-agents-test--approve (tool args)
  "Approve a write of a file called approved.txt, deny everything else.
Record TOOL and ARGS with the approval context."
  (push (list tool args agent-q-approval-context) agent-q-agents-test--asked)
  (if (equal (file-name-nondirectory (or (plist-get args :path) "")) "approved.txt")
      :approved
    :denied))

(defun agent-q-agents-test--converse (agent transport)
  "Run AGENT over TRANSPORT (see `agent-q-agents-test--configure') through a conversation.
The conversation reads a file, writes one file (approved) and another
\(denied), while this Emacs serves MCP.  Check what reached the model,
the files, the approvals and the audit."
  (let* ((program (agent-q-agents-test--program agent))
         (dir (file-name-as-directory (make-temp-file "agent-q-agents" t)))
         (home (expand-file-name "home/" dir))
         (work (expand-file-name "work/" dir))
         (agent-q-mcp-connection-file (expand-file-name "connection.json" dir))
         (agent-q-audit-file (expand-file-name "audit.jsonl" dir))
         (agent-q-allowed-directories (list work))
         ;; The agents that declare no MCP roots read freely here only.
         (agent-q-mcp-allowed-directories (list work))
         (agent-q-approval-function #'agent-q-agents-test--approve)
         (agent-q-agents-test--asked nil)
         (agent-q-prompt--session-approved nil)
         (agent-q-mcp-port 0)
         (agent-q-mcp-max-safety-level :dangerous)
         (agent-q-mcp-confirm-safety-levels '(:cautious :dangerous))
         (marker (format "read by %s over %s: %s" agent transport (random 1000000)))
         (source (expand-file-name "source.txt" work))
         (approved (expand-file-name "approved.txt" work))
         (denied (expand-file-name "denied.txt" work))
         (written (format "written by %s\n" agent))
         model agent-process)
    (unwind-protect
        (progn
          (make-directory (expand-file-name "tmp" home) t)
          (agent-q-agents-test--write source (concat marker "\n"))
          (agent-q-agents-test--write denied "kept\n")
          (agent-q-mcp-start)
          (should (file-exists-p agent-q-mcp-connection-file))
          (setq model (agent-q-agents-test--start-model
                       dir (agent-q-agents-test--prop agent :dialect)
                       (list (agent-q-agents-test--tool-step agent "read_file" `((path . ,source)))
                             (agent-q-agents-test--tool-step
                              agent "write_file" `((path . ,approved) (content . ,written)))
                             (agent-q-agents-test--tool-step
                              agent "write_file" `((path . ,denied) (content . "lost\n")))
                             '((text . "All three calls are done.")))))
          (let* ((setup (agent-q-agents-test--configure agent transport home (nth 1 model)))
                 (output (generate-new-buffer " *agent-q-agents-output*"))
                 (default-directory work)
                 (process-environment (agent-q-agents-test--environment home (cdr setup))))
            (when (eq transport 'connected)
              (agent-q-agents-test--listed agent home))
            (setq agent-process
                  (make-process :name (format "agent-q-agents-%s" agent) :noquery t
                                :buffer output :connection-type 'pipe
                                :command (cons program (car setup))))
            ;; Nothing to read on its standard input.
            (process-send-eof agent-process)
            (agent-q-agents-test--wait (lambda () (not (process-live-p agent-process)))
                                       agent-q-agents-test--timeout
                                       (format "%s over %s to finish" agent transport))
            (while (accept-process-output agent-process 0.01))
            (let* ((said (with-current-buffer output (buffer-string)))
                   (requests (agent-q-agents-test--json-lines (nth 2 model)))
                   (steps (cl-remove-if-not (lambda (r) (equal (alist-get 'kind r) "step"))
                                            requests))
                   (why (format "%s over %s exited %s:\n%s\nrequests: %S" agent transport
                                (process-exit-status agent-process) said
                                (mapcar (lambda (r) (list (alist-get 'path r) (alist-get 'kind r)
                                                          (alist-get 'results r)))
                                        requests))))
              (unless (and (= (process-exit-status agent-process) 0) (= (length steps) 4))
                (ert-fail why))
              ;; After each call, the next request carries its result.
              (cl-loop for step in steps for n from 0
                       do (should (equal (list n (length (alist-get 'results step)))
                                         (list n n))))
              (let* ((results (alist-get 'results (nth 3 steps)))
                     (read (nth 0 results))
                     (write (nth 1 results))
                     (refused (nth 2 results)))
                ;; read_file's real content reached the model...
                (should (string-match-p (regexp-quote marker) (alist-get 'text read)))
                (should-not (eq (alist-get 'error read) t))
                ;; ...the approved write ran...
                (should (string-match-p "Wrote .* to .*approved\\.txt" (alist-get 'text write)))
                (should-not (eq (alist-get 'error write) t))
                (should (equal (agent-q-agents-test--read approved) written))
                ;; ...and the denied one reached the model as a failure and wrote nothing.
                (should (string-match-p "denied" (alist-get 'text refused)))
                ;; Codex tells its model no error flag; the others do.
                (unless (eq agent 'codex)
                  (should (eq (alist-get 'error refused) t)))
                (should (equal (agent-q-agents-test--read denied) "kept\n")))
              ;; Emacs was asked about each write once, and about nothing else.
              (should (equal (sort (mapcar (lambda (asked)
                                             (list (nth 0 asked)
                                                   (file-name-nondirectory
                                                    (plist-get (nth 1 asked) :path))))
                                           agent-q-agents-test--asked)
                                   (lambda (a b) (string< (cadr a) (cadr b))))
                             '(("write_file" "approved.txt") ("write_file" "denied.txt"))))
              ;; The audit names the agent for every call.
              (let* ((audit (agent-q-agents-test--json-lines agent-q-audit-file))
                     (outcomes (cl-remove-if-not
                                (lambda (r) (member (alist-get 'event r) '("result" "denied")))
                                audit)))
                (should (equal (mapcar (lambda (r) (list (alist-get 'tool r) (alist-get 'event r)))
                                       outcomes)
                               '(("read_file" "result") ("write_file" "result")
                                 ("write_file" "denied"))))
                (dolist (record audit)
                  (should (string-match-p (agent-q-agents-test--prop agent :client)
                                          (alist-get 'client record)))))
              (kill-buffer output))))
      (when (and agent-process (process-live-p agent-process))
        (delete-process agent-process))
      (when (and model (process-live-p (car model)))
        (delete-process (car model)))
      (when model
        (kill-buffer (process-buffer (car model))))
      (agent-q-mcp-stop)
      (agent-q-cancel-pending)
      (delete-directory dir t))))

;;;; The tests

(ert-deftest agent-q-agents-test-claude-http ()
  "Claude Code over Streamable HTTP: read, approved write, denied write, audit."
  (agent-q-agents-test--converse 'claude 'http))

(ert-deftest agent-q-agents-test-claude-relay ()
  "Claude Code over the stdio relay: read, approved write, denied write, audit."
  (agent-q-agents-test--converse 'claude 'relay))

(ert-deftest agent-q-agents-test-gemini-http ()
  "Gemini CLI over Streamable HTTP: read, approved write, denied write, audit.
Its SDK speaks 2025-06-18 and cannot parse an SSE event with empty data."
  (agent-q-agents-test--converse 'gemini 'http))

(ert-deftest agent-q-agents-test-gemini-relay ()
  "Gemini CLI over the stdio relay: read, approved write, denied write, audit."
  (agent-q-agents-test--converse 'gemini 'relay))

(ert-deftest agent-q-agents-test-codex-http ()
  "Codex CLI over Streamable HTTP: read, approved write, denied write, audit."
  (agent-q-agents-test--converse 'codex 'http))

(ert-deftest agent-q-agents-test-codex-relay ()
  "Codex CLI over the stdio relay: read, approved write, denied write, audit."
  (agent-q-agents-test--converse 'codex 'relay))

(ert-deftest agent-q-agents-test-claude-connected ()
  "Claude Code as `agent-q-mcp-connect-agent' configured it: listed, asked once, in Emacs."
  (agent-q-agents-test--converse 'claude 'connected))

(ert-deftest agent-q-agents-test-gemini-connected ()
  "Gemini CLI as `agent-q-mcp-connect-agent' configured it: listed, asked once, in Emacs."
  (agent-q-agents-test--converse 'gemini 'connected))

(ert-deftest agent-q-agents-test-codex-connected ()
  "Codex CLI as `agent-q-mcp-connect-agent' configured it: listed, asked once, in Emacs.
Without default_tools_approval_mode it would refuse agent-q's writes
under `codex exec'."
  (agent-q-agents-test--converse 'codex 'connected))

(provide 'agent-q-agents-test)

;;; agent-q-agents-test.el ends here
