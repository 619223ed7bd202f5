;;; agent-q-connect-test.el --- Connecting terminal agents' configurations  -*- lexical-binding: t -*-

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

;; `agent-q-mcp-connect-agent' writes each agent's user-level file under
;; a temporary HOME: merged with what is there (other servers and
;; settings kept, an older agent-q entry replaced, a backup kept), with
;; the relay's absolute path, the approval and timeout settings that
;; leave agent-q's calls to Emacs.  The real agents reading these files
;; are driven in tests/agent-q-agents-test.el.

;;; Code:

(require 'ert)
(require 'json)
(require 'agent-q)
(require 'agent-q-connect)

(defmacro agent-q-connect-test--with-home (&rest body)
  "Run BODY with HOME a fresh temporary directory, bound to `home'."
  (declare (indent 0))
  `(let* ((home (file-name-as-directory (make-temp-file "agent-q-connect-home" t)))
          (process-environment (cons (concat "HOME=" home) process-environment))
          (agent-q-mcp-connection-file (expand-file-name "~/.emacs.d/agent-q-mcp.json")))
     (unwind-protect
         (let ((abbreviated-home-dir nil))
           ,@body)
       (delete-directory home t))))

(defun agent-q-connect-test--json (file)
  "FILE's JSON, as an alist."
  (with-temp-buffer
    (insert-file-contents file)
    (json-parse-buffer :object-type 'alist :false-object :false :null-object :null)))

(defun agent-q-connect-test--text (file)
  "FILE's text."
  (with-temp-buffer (insert-file-contents file) (buffer-string)))

(ert-deftest agent-q-connect-test-claude-merges-and-allows ()
  (agent-q-connect-test--with-home
    (let ((config (expand-file-name ".claude.json" home))
          (relay (expand-file-name "../bin/agent-q-mcp" agent-q-connect--directory)))
      (should (file-executable-p relay))
      (with-temp-file config
        (insert "{\"numStartups\": 3, \"mcpServers\": {\"other\": {\"command\": \"x\"},"
                " \"agent-q\": {\"type\": \"http\", \"url\": \"http://127.0.0.1:1/mcp\"}},"
                " \"flag\": false, \"none\": null, \"empty\": {}}"))
      (should (equal (agent-q-mcp-connect-agent 'claude)
                     (list config (expand-file-name ".claude/settings.json" home))))
      (let* ((json (agent-q-connect-test--json config))
             (servers (alist-get 'mcpServers json)))
        ;; Everything else is kept as it was, in its place.
        (should (equal (mapcar #'car json) '(numStartups mcpServers flag none empty)))
        (should (equal (alist-get 'flag json) :false))
        (should (equal (alist-get 'none json) :null))
        (should (equal (alist-get 'other servers) '((command . "x"))))
        ;; The older agent-q entry is replaced by the relay's.
        (should (equal (alist-get 'command (alist-get 'agent-q servers)) relay))
        (should (equal (alist-get 'type (alist-get 'agent-q servers)) "stdio")))
      (should (string-match-p "\"url\": \"http://127.0.0.1:1/mcp\""
                              (agent-q-connect-test--text (concat config ".agent-q.bak"))))
      (let ((settings (agent-q-connect-test--json (expand-file-name ".claude/settings.json" home))))
        (should (equal (alist-get 'allow (alist-get 'permissions settings)) ["mcp__agent-q"]))
        (should (equal (alist-get 'MCP_TOOL_TIMEOUT (alist-get 'env settings)) "600000")))
      ;; Twice is the same as once.
      (let ((before (agent-q-connect-test--text (expand-file-name ".claude/settings.json" home))))
        (agent-q-mcp-connect-agent 'claude)
        (should (equal (agent-q-connect-test--text (expand-file-name ".claude/settings.json" home))
                       before))))))

(ert-deftest agent-q-connect-test-gemini-trusts-and-waits ()
  (agent-q-connect-test--with-home
    (let ((agent-q-mcp-connection-file (expand-file-name "elsewhere/mcp.json" home))
          (settings (expand-file-name ".gemini/settings.json" home)))
      (make-directory (file-name-directory settings) t)
      (with-temp-file settings (insert "{\"ui\": {\"theme\": \"Dracula\"}}"))
      (agent-q-mcp-connect-agent 'gemini)
      (let* ((json (agent-q-connect-test--json settings))
             (entry (alist-get 'agent-q (alist-get 'mcpServers json))))
        (should (equal (alist-get 'ui json) '((theme . "Dracula"))))
        (should (eq (alist-get 'trust entry) t))
        (should (= (alist-get 'timeout entry) 600000))
        ;; A connection file other than the relay's default is named to it.
        (should (equal (alist-get 'AGENT_Q_MCP_CONNECTION_FILE (alist-get 'env entry))
                       agent-q-mcp-connection-file))))))

(ert-deftest agent-q-connect-test-codex-toml-keeps-the-rest ()
  (agent-q-connect-test--with-home
    (let ((config (expand-file-name ".codex/config.toml" home)))
      (make-directory (file-name-directory config) t)
      (with-temp-file config
        (insert "model = \"o3\"\n\n[mcp_servers.agent-q]\nurl = \"http://127.0.0.1:1/mcp\"\n"
                "[mcp_servers.agent-q.tools.write_file]\napproval_mode = \"prompt\"\n\n"
                "[mcp_servers.other]\ncommand = \"other\"\n"))
      (agent-q-mcp-connect-agent 'codex)
      (let ((text (agent-q-connect-test--text config)))
        (should (string-prefix-p "model = \"o3\"\n" text))
        (should (string-match-p "^\\[mcp_servers.other\\]\ncommand = \"other\"$" text))
        (should-not (string-match-p "127.0.0.1:1" text))
        (should-not (string-match-p "approval_mode = \"prompt\"" text))
        (should (= 1 (with-temp-buffer
                       (insert text)
                       (how-many "^\\[mcp_servers.agent-q\\]" (point-min) (point-max)))))
        (should (string-match-p "^tool_timeout_sec = 600$" text))
        (should (string-match-p "^default_tools_approval_mode = \"approve\"$" text))
        (should (string-match-p (format "^command = \"%s\"$"
                                        (regexp-quote (expand-file-name "../bin/agent-q-mcp"
                                                                        agent-q-connect--directory)))
                                text))))))

(ert-deftest agent-q-connect-test-a-broken-file-is-left-alone ()
  (agent-q-connect-test--with-home
    (let ((settings (expand-file-name ".gemini/settings.json" home)))
      (make-directory (file-name-directory settings) t)
      (with-temp-file settings (insert "{\"ui\": "))
      (should-error (agent-q-mcp-connect-agent 'gemini) :type 'user-error)
      (should (equal (agent-q-connect-test--text settings) "{\"ui\": "))
      (should-not (file-exists-p (concat settings ".agent-q.bak"))))))

(ert-deftest agent-q-connect-test-show-writes-nothing ()
  (agent-q-connect-test--with-home
    (should-not (agent-q-mcp-connect-agent 'codex t))
    (should-not (file-exists-p (expand-file-name ".codex/config.toml" home)))
    (should (string-match-p "\\[mcp_servers.agent-q\\]" (agent-q-mcp-client-config 'codex)))))

;;;; The agents' own tools: their hooks

(defun agent-q-connect-test--hook (agent &optional timeout deny)
  "The hook command `agent-q-gate-connect-agent' writes for AGENT.
TIMEOUT is its seconds (600 by default); DENY, whether it denies when
Emacs is away."
  (format "%s hook --agent %s --timeout %d%s"
          (expand-file-name "../bin/agent-q-mcp" agent-q-connect--directory) agent
          (or timeout 600) (if deny " --unreachable deny" "")))

(ert-deftest agent-q-connect-test-gate-claude-merges-once-and-undoes ()
  "The user's hooks and settings are kept; agent-q's is replaced; twice is once; undo restores."
  (agent-q-connect-test--with-home
    (let* ((settings (expand-file-name ".claude/settings.json" home))
           (original (concat "{\"model\": \"opus\", \"hooks\": {\"PreToolUse\": ["
                             "{\"matcher\": \"Bash\", \"hooks\": [{\"type\": \"command\","
                             " \"command\": \"my-check\"}]}],"
                             " \"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"bell\"}]}]},"
                             " \"flag\": false}")))
      (make-directory (file-name-directory settings) t)
      (with-temp-file settings (insert original))
      (should (equal (agent-q-gate-connect-agent 'claude) (list settings)))
      (let* ((json (agent-q-connect-test--json settings))
             (groups (alist-get 'PreToolUse (alist-get 'hooks json))))
        (should (equal (mapcar #'car json) '(model hooks flag statusLine)))
        (should (equal (alist-get 'flag json) :false))
        ;; Claude shows its status line, not a running PreToolUse hook: agent-q's
        ;; says, every second, when a call of the session waits for Emacs.
        (should (equal (alist-get 'statusLine json)
                       `((type . "command")
                         (command . ,(format "%s status-line"
                                             (expand-file-name "../bin/agent-q-mcp"
                                                               agent-q-connect--directory)))
                         (refreshInterval . 1))))
        (should (equal (alist-get 'Stop (alist-get 'hooks json))
                       [((hooks . [((type . "command") (command . "bell"))]))]))
        (should (= (length groups) 2))
        (should (equal (aref groups 0)
                       '((matcher . "Bash")
                         (hooks . [((type . "command") (command . "my-check"))]))))
        (should (equal (aref groups 1)
                       `((matcher . "^(?!mcp__agent-q__)")
                         (hooks . [((type . "command")
                                    (command . ,(agent-q-connect-test--hook 'claude))
                                    (timeout . 600)
                                    (statusMessage . "Waiting for Emacs (agent-q)..."))]))))
        ;; The same command is its prompt hook: a turn begins (the journal's).
        (should (equal (alist-get 'UserPromptSubmit (alist-get 'hooks json))
                       `[((hooks . [((type . "command")
                                     (command . ,(agent-q-connect-test--hook 'claude))
                                     (timeout . 10))]))])))
      (should (equal (agent-q-connect-test--text (concat settings ".agent-q.bak")) original))
      ;; Twice is the same as once, backup included.
      (let ((before (agent-q-connect-test--text settings)))
        (agent-q-gate-connect-agent 'claude)
        (should (equal (agent-q-connect-test--text settings) before))
        (should (equal (agent-q-connect-test--text (concat settings ".agent-q.bak")) original))
        ;; A hook of agent-q's written by hand (another connection file) is replaced, not kept.
        (let ((agent-q-mcp-connection-file (expand-file-name "other.json" home)))
          (agent-q-gate-connect-agent 'claude))
        (agent-q-gate-connect-agent 'claude)
        (should (equal (agent-q-connect-test--text settings) before)))
      ;; Undone: exactly what was added goes.
      (should (equal (agent-q-gate-disconnect-agent 'claude) (list settings)))
      (should (equal (agent-q-connect-test--json settings)
                     (with-temp-buffer
                       (insert original) (goto-char (point-min))
                       (json-parse-buffer :object-type 'alist :false-object :false
                                          :null-object :null))))
      ;; Nothing of agent-q's left: undoing again changes nothing.
      (should-not (agent-q-gate-disconnect-agent 'claude))
      ;; A status line of the user's own is kept, connected and undone.
      (let ((own '((type . "command") (command . "my-status"))))
        (with-temp-file settings (insert (json-encode `((statusLine . ,own)))))
        (agent-q-gate-connect-agent 'claude)
        (should (equal (alist-get 'statusLine (agent-q-connect-test--json settings)) own))
        (agent-q-gate-disconnect-agent 'claude)
        (should (equal (agent-q-connect-test--json settings) `((statusLine . ,own))))))))

(ert-deftest agent-q-connect-test-gate-gemini-hook-and-policy ()
  "Gemini: BeforeTool in milliseconds, the connection file named, its policy; undo removes both."
  (agent-q-connect-test--with-home
    (let* ((agent-q-mcp-connection-file (expand-file-name "elsewhere/mcp.json" home))
           (settings (expand-file-name ".gemini/settings.json" home))
           (policy (expand-file-name ".gemini/policies/agent-q.toml" home)))
      ;; Into an empty HOME.
      (should (equal (agent-q-gate-connect-agent 'gemini) (list settings policy)))
      (should (equal (agent-q-connect-test--json settings)
                     `((hooks
                        (BeforeTool
                         . [((matcher . "^(?!mcp_agent-q_)")
                             (hooks . [((type . "command")
                                        ;; Shown while it runs: "Executing Hook: NAME".
                                        (name . "Waiting for Emacs (agent-q)...")
                                        (command . ,(concat (agent-q-connect-test--hook 'gemini)
                                                            " --connection-file "
                                                            agent-q-mcp-connection-file))
                                        (timeout . 600000))]))])
                        ;; Gemini passes additional context to its model only from
                        ;; AfterTool: that hook tells it what Emacs changed.
                        (AfterTool
                         . [((matcher . "^(run_shell_command|replace|write_file)$")
                             (hooks . [((type . "command")
                                        (name . "agent-q: what Emacs changed")
                                        (command . ,(concat (shell-quote-argument
                                                             (agent-q-connect--relay))
                                                            " hook --agent gemini --event after-tool"
                                                            " --connection-file "
                                                            agent-q-mcp-connection-file))
                                        (timeout . 10000))]))])
                        ;; Its prompt hook: a turn begins, for the journal.
                        (BeforeAgent
                         . [((hooks . [((type . "command")
                                        (command . ,(concat (agent-q-connect-test--hook 'gemini)
                                                            " --connection-file "
                                                            agent-q-mcp-connection-file))
                                        (timeout . 10000))]))])))))
      (let ((text (agent-q-connect-test--text policy)))
        (dolist (tool '("run_shell_command" "read_file" "read_many_files" "grep_search" "glob" "web_fetch"
                        "write_file" "replace"))
          (should (string-match-p (format "^toolName = \"%s\"$" tool) text)))
        (should (string-match-p "^decision = \"allow\"$" text))
        (should (string-match-p "^allowRedirection = true$" text)))
      (should (equal (agent-q-gate-disconnect-agent 'gemini) (list settings policy)))
      (should (equal (agent-q-connect-test--json settings) nil))
      (should-not (file-exists-p policy))
      (should-not (file-exists-p (file-name-directory policy)))
      ;; Settings written before the AfterTool hook existed (BeforeTool only, beside
      ;; the user's own AfterTool hook): connecting again adds agent-q's, once, and
      ;; keeps the user's; undoing leaves the user's alone.
      (let ((own '((matcher . "write_file") (hooks . [((type . "command") (command . "fmt"))]))))
        (with-temp-file settings
          (insert (json-encode
                   `((hooks (BeforeTool . [((matcher . "^(?!mcp_agent-q_)")
                                            (hooks . [((type . "command")
                                                       (command . ,(agent-q-connect-test--hook
                                                                    'gemini))
                                                       (timeout . 600000))]))])
                            (AfterTool . [,own]))))))
        (agent-q-gate-connect-agent 'gemini)
        (agent-q-gate-connect-agent 'gemini)
        (let ((after (alist-get 'AfterTool (alist-get 'hooks (agent-q-connect-test--json settings)))))
          (should (= (length after) 2))
          (should (equal (aref after 0) own))
          (should (string-match-p "hook --agent gemini --event after-tool"
                                  (alist-get 'command (aref (alist-get 'hooks (aref after 1)) 0)))))
        (agent-q-gate-disconnect-agent 'gemini)
        (should (equal (agent-q-connect-test--json settings) `((hooks (AfterTool . [,own])))))))))

(ert-deftest agent-q-connect-test-gate-codex-hooks-json ()
  "Codex: PreToolUse on Bash in hooks.json beside the user's hooks, trusted in config.toml."
  (agent-q-connect-test--with-home
    (let* ((hooks (expand-file-name ".codex/hooks.json" home))
           (config (expand-file-name ".codex/config.toml" home))
           (original "{\"hooks\": {\"PostToolUse\": [{\"matcher\": \"apply_patch\", \"hooks\": [{\"type\": \"command\", \"command\": \"fmt\"}]}]}}\n"))
      (make-directory (file-name-directory hooks) t)
      (with-temp-file hooks (insert original))
      (with-temp-file config (insert "model = \"o3\"\n"))
      (should (equal (agent-q-gate-connect-agent 'codex) (list hooks config)))
      (let ((json (alist-get 'hooks (agent-q-connect-test--json hooks))))
        (should (equal (mapcar #'car json) '(PostToolUse PreToolUse UserPromptSubmit)))
        ;; Its prompt hook, which begins a turn of the journal: every prompt (no matcher).
        (should (equal (alist-get 'UserPromptSubmit json)
                       `[((hooks . [((type . "command")
                                     (command . ,(agent-q-connect-test--hook 'codex))
                                     (timeout . 10))]))]))
        (should (equal (alist-get 'PreToolUse json)
                       `[((matcher . "^(Bash|apply_patch)$")
                          (hooks . [((type . "command")
                                     (command . ,(agent-q-connect-test--hook 'codex))
                                     (timeout . 600)
                                     ;; Shown after "Working" while it runs.
                                     (statusMessage . "Waiting for Emacs (agent-q)..."))]))])))
      ;; The hook's trust, as Codex's /hooks records it: the SHA-256 of the hook as
      ;; compact JSON with sorted keys, beside the user's own config.
      (let ((text (agent-q-connect-test--text config)))
        (should (string-prefix-p "model = \"o3\"\n" text))
        (should (string-search
                 (format "[hooks.state.\"%s:pre_tool_use:0:0\"]" hooks) text))
        (should (string-search
                 (concat "trusted_hash = \"sha256:"
                         (secure-hash
                          'sha256
                          (format "{\"event_name\":\"pre_tool_use\",\"hooks\":[{\"async\":false,\"command\":\"%s\",\"statusMessage\":\"Waiting for Emacs (agent-q)...\",\"timeout\":600,\"type\":\"command\"}],\"matcher\":\"^(Bash|apply_patch)$\"}"
                                  (agent-q-connect-test--hook 'codex)))
                         "\"")
                 text))
        ;; The prompt hook's trust: hashed without a matcher, as Codex 0.169.0 does
        ;; (a hook so trusted runs; one with a matcher of null or "" in its hash does not).
        (should (string-search
                 (format "[hooks.state.\"%s:user_prompt_submit:0:0\"]" hooks) text))
        (should (string-search
                 (concat "trusted_hash = \"sha256:"
                         (secure-hash
                          'sha256
                          (format "{\"event_name\":\"user_prompt_submit\",\"hooks\":[{\"async\":false,\"command\":\"%s\",\"timeout\":10,\"type\":\"command\"}]}"
                                  (agent-q-connect-test--hook 'codex)))
                         "\"")
                 text))
        ;; Twice is once.
        (agent-q-gate-connect-agent 'codex)
        (should (equal (agent-q-connect-test--text config) text)))
      (agent-q-gate-disconnect-agent 'codex)
      (should (equal (agent-q-connect-test--text config) "model = \"o3\"\n"))
      (should (equal (agent-q-connect-test--json hooks)
                     (with-temp-buffer
                       (insert original) (goto-char (point-min))
                       (json-parse-buffer :object-type 'alist)))))))

(ert-deftest agent-q-connect-test-gate-away-and-timeout-chosen-in-the-command ()
  "Deny when Emacs is away and the hook timeout: in each hook, Codex's trust matching."
  (agent-q-connect-test--with-home
    (let* ((hooks (expand-file-name ".codex/hooks.json" home))
           (config (expand-file-name ".codex/config.toml" home))
           (claude (expand-file-name ".claude/settings.json" home))
           (gemini (expand-file-name ".gemini/settings.json" home))
           (handler (lambda (file event)
                      (aref (alist-get 'hooks
                                       (aref (alist-get event (alist-get 'hooks (agent-q-connect-test--json file)))
                                             0))
                            0))))
      ;; As arguments of the command.
      (agent-q-gate-connect-agent 'codex nil 'deny 90)
      (let ((hook (funcall handler hooks 'PreToolUse)))
        (should (equal (alist-get 'command hook) (agent-q-connect-test--hook 'codex 90 t)))
        (should (equal (alist-get 'timeout hook) 90))
        ;; Codex trusts exactly this hook: its hash is of the command with the choice.
        (should (string-search
                 (concat "trusted_hash = \"sha256:"
                         (secure-hash
                          'sha256
                          (format "{\"event_name\":\"pre_tool_use\",\"hooks\":[{\"async\":false,\"command\":\"%s\",\"statusMessage\":\"Waiting for Emacs (agent-q)...\",\"timeout\":90,\"type\":\"command\"}],\"matcher\":\"^(Bash|apply_patch)$\"}"
                                  (agent-q-connect-test--hook 'codex 90 t)))
                         "\"")
                 (agent-q-connect-test--text config))))
      ;; Connected again with the defaults: the choice and its trust are replaced, not added.
      (agent-q-gate-connect-agent 'codex)
      (should (equal (alist-get 'command (funcall handler hooks 'PreToolUse))
                     (agent-q-connect-test--hook 'codex)))
      ;; One trust for each of its two hooks (PreToolUse, UserPromptSubmit).
      (should (= 2 (with-temp-buffer
                     (insert-file-contents config)
                     (how-many "^trusted_hash" (point-min) (point-max)))))
      ;; As options; Gemini's timeout in milliseconds.
      (let ((agent-q-gate-when-emacs-away 'deny)
            (agent-q-gate-hook-timeout 45))
        (agent-q-gate-connect-agent 'claude)
        (agent-q-gate-connect-agent 'gemini))
      (let ((hook (funcall handler claude 'PreToolUse)))
        (should (equal (alist-get 'command hook) (agent-q-connect-test--hook 'claude 45 t)))
        (should (equal (alist-get 'timeout hook) 45)))
      (let ((hook (funcall handler gemini 'BeforeTool)))
        (should (equal (alist-get 'command hook) (agent-q-connect-test--hook 'gemini 45 t)))
        (should (equal (alist-get 'timeout hook) 45000)))
      (let ((agent-q-gate-when-emacs-away 'maybe))
        (should-error (agent-q-gate-connect-agent 'claude) :type 'user-error))
      (let ((agent-q-gate-hook-timeout 0))
        (should-error (agent-q-gate-connect-agent 'claude) :type 'user-error)))))

(ert-deftest agent-q-connect-test-gate-show-writes-nothing ()
  (agent-q-connect-test--with-home
    (should-not (agent-q-gate-connect-agent 'gemini t))
    (should-not (file-exists-p (expand-file-name ".gemini" home)))
    (with-current-buffer "*agent-q connect*"
      (should (string-match-p "BeforeTool" (buffer-string)))
      (should (string-match-p "run_shell_command" (buffer-string))))))

(provide 'agent-q-connect-test)

;;; agent-q-connect-test.el ends here
