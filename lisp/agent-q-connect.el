;;; agent-q-connect.el --- Connect a terminal agent to agent-q's MCP server  -*- lexical-binding: t -*-

;; Copyright (C) 2026 The agent-q authors

;; Author: The agent-q authors
;; Maintainer: The agent-q authors
;; Keywords: tools, processes, convenience
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

;; One command per agent: `agent-q-mcp-connect-agent' asks which agent
;; (Claude Code, Gemini CLI, Codex CLI) and writes that agent's
;; user-level configuration so that it starts agent-q's stdio relay
;; (bin/agent-q-mcp, by its absolute path) from any directory.  The
;; relay reads the connection file that `agent-q-mcp-start' writes, so
;; the configuration never goes stale when the server restarts with a
;; new port and token.
;;
;; The existing file is merged, not replaced: other servers and settings
;; are kept, an older agent-q entry is replaced, and the file as it was
;; is kept beside it as FILE.agent-q.bak.  `agent-q-mcp-client-config'
;; returns the same text for a user who prefers to paste it.
;;
;; One gate, not two: Emacs asks about agent-q's dangerous calls, so the
;; configuration leaves agent-q's tools to agent-q in each agent (Codex:
;; default_tools_approval_mode "approve"; Claude Code: the permission
;; rule "mcp__agent-q"; Gemini CLI: "trust": true), and gives each agent
;; a tool timeout long enough for an approval that takes minutes.

;;; Code:

(require 'cl-lib)
(require 'json)
(require 'subr-x)

(defvar agent-q-mcp-connection-file)

(defconst agent-q-connect--directory
  (file-name-directory (or load-file-name buffer-file-name))
  "The directory of this file: the package's lisp/ directory.")

(defcustom agent-q-mcp-agent-tool-timeout 600
  "Seconds an agent waits for one call of agent-q's tools.
The wait includes the time you take to approve a call in Emacs, so it
is long; each agent's own default (Codex's 60 s, for one) would give up
while you read the prompt."
  :type 'natnum
  :group 'agent-q)

(defconst agent-q-connect--agents
  '((claude "Claude Code" "~/.claude.json")
    (gemini "Gemini CLI" "~/.gemini/settings.json")
    (codex "Codex CLI" "~/.codex/config.toml"))
  "The agents `agent-q-mcp-connect-agent' configures: (KEY NAME FILE).")

(defconst agent-q-connect--claude-settings "~/.claude/settings.json"
  "Claude Code's user settings, where its permission rules and environment live.")

(defun agent-q-connect--relay ()
  "The absolute file name of the stdio relay; signal if it is not built."
  (let ((relay (expand-file-name "../bin/agent-q-mcp" agent-q-connect--directory)))
    (unless (file-executable-p relay)
      (user-error "The agent-q relay %s is not built: run `make build' in %s"
                  relay (expand-file-name ".." agent-q-connect--directory)))
    relay))

(defun agent-q-connect--environment ()
  "The environment the relay needs, as an alist, or nil.
Only a connection file other than the relay's default is named."
  (let ((file (expand-file-name agent-q-mcp-connection-file))
        (default (expand-file-name "~/.emacs.d/agent-q-mcp.json")))
    (unless (equal file default)
      `((AGENT_Q_MCP_CONNECTION_FILE . ,file)))))

(defun agent-q-connect--file (agent)
  "The user-level configuration file of AGENT, expanded."
  (expand-file-name (nth 2 (assq agent agent-q-connect--agents))))

;;;; JSON files (Claude Code, Gemini CLI)

(defun agent-q-connect--read-json (file)
  "FILE's JSON object as an alist with symbol keys; nil when FILE is absent.
Signal a `user-error' naming FILE when it is not a JSON object, so that
nothing is written over a file that could not be understood."
  (when (file-exists-p file)
    (with-temp-buffer
      (insert-file-contents file)
      (if (string-blank-p (buffer-string))
          nil
        (let ((value (condition-case err
                         (json-parse-buffer :object-type 'alist :array-type 'array
                                            :null-object :null :false-object :false)
                       (error (user-error "%s is not valid JSON (%s); agent-q wrote nothing"
                                          file (error-message-string err))))))
          (unless (listp value)
            (user-error "%s does not hold a JSON object; agent-q wrote nothing" file))
          value)))))

(defun agent-q-connect--json-text (object)
  "OBJECT (an alist) as pretty-printed JSON text, ending with a newline."
  (with-temp-buffer
    (insert (json-serialize object :null-object :null :false-object :false))
    (json-pretty-print-buffer)
    (goto-char (point-max))
    (insert "\n")
    (buffer-string)))

(defun agent-q-connect--put (alist key value)
  "ALIST with KEY set to VALUE, in KEY's place if it was there, else last."
  (if (assq key alist)
      (mapcar (lambda (cell) (if (eq (car cell) key) (cons key value) cell)) alist)
    (append alist (list (cons key value)))))

(defun agent-q-connect--server-entry (agent)
  "The mcpServers entry of AGENT (claude or gemini), as an alist."
  (let ((env (agent-q-connect--environment)))
    (pcase agent
      ('claude `((type . "stdio") (command . ,(agent-q-connect--relay))
                 (args . []) (env . ,env)))
      ('gemini `((command . ,(agent-q-connect--relay)) (args . [])
                 ,@(and env `((env . ,env)))
                 (timeout . ,(* 1000 agent-q-mcp-agent-tool-timeout))
                 (trust . t))))))

(defun agent-q-connect--merge-servers (object agent)
  "OBJECT with agent-q set in its mcpServers for AGENT."
  (let ((servers (alist-get 'mcpServers object)))
    (when (eq servers :null) (setq servers nil))
    (agent-q-connect--put object 'mcpServers
                          (agent-q-connect--put servers 'agent-q
                                                (agent-q-connect--server-entry agent)))))

(defun agent-q-connect--merge-claude-settings (object)
  "Claude Code's settings OBJECT with agent-q's tools allowed.
Its environment gets a tool timeout long enough to approve a call."
  (let* ((permissions (alist-get 'permissions object))
         (allow (append (alist-get 'allow permissions) nil))
         (env (alist-get 'env object)))
    (unless (member "mcp__agent-q" allow)
      (setq allow (append allow (list "mcp__agent-q"))))
    (thread-first object
                  (agent-q-connect--put 'permissions
                                        (agent-q-connect--put permissions 'allow (vconcat allow)))
                  (agent-q-connect--put 'env
                                        (agent-q-connect--put
                                         env 'MCP_TOOL_TIMEOUT
                                         (number-to-string
                                          (* 1000 agent-q-mcp-agent-tool-timeout)))))))

;;;; TOML (Codex CLI)

(defun agent-q-connect--toml-string (string)
  "STRING as a TOML basic string."
  (concat "\"" (replace-regexp-in-string "[\"\\\\]" "\\\\\\&" string) "\""))

(defun agent-q-connect--codex-table ()
  "The [mcp_servers.agent-q] table for Codex, as TOML text."
  (let ((env (agent-q-connect--environment)))
    (concat "[mcp_servers.agent-q]\n"
            "command = " (agent-q-connect--toml-string (agent-q-connect--relay)) "\n"
            (format "tool_timeout_sec = %d\n" agent-q-mcp-agent-tool-timeout)
            "# Emacs asks about agent-q's dangerous calls: Codex need not ask too.\n"
            "default_tools_approval_mode = \"approve\"\n"
            (if env
                (concat "[mcp_servers.agent-q.env]\n"
                        (mapconcat (lambda (cell)
                                     (format "%s = %s" (car cell)
                                             (agent-q-connect--toml-string (cdr cell))))
                                   env "\n")
                        "\n")
              ""))))

(defun agent-q-connect--merge-toml (text)
  "TEXT (a Codex config.toml) with its agent-q tables replaced by ours.
The tables [mcp_servers.agent-q] and [mcp_servers.agent-q.SUB] are
removed wherever they are; everything else is kept as written."
  (let ((lines (split-string text "\n"))
        (kept nil)
        (skipping nil))
    (dolist (line lines)
      (when (string-match "\\`[ \t]*\\[\\([^]]*\\)\\]" line)
        (let ((name (string-trim (match-string 1 line))))
          (setq skipping (string-match-p
                          "\\`mcp_servers\\.\\(agent-q\\|\"agent-q\"\\)\\(\\'\\|\\.\\)" name))))
      (unless skipping (push line kept)))
    (let ((rest (string-trim-right (string-join (nreverse kept) "\n"))))
      (concat rest (if (string-empty-p rest) "" "\n\n") (agent-q-connect--codex-table)))))

;;;; The command

(defun agent-q-connect--plan (agent)
  "What connecting AGENT writes: a list of (FILE . NEW-TEXT)."
  (pcase agent
    ('codex
     (let ((file (agent-q-connect--file 'codex)))
       (list (cons file (agent-q-connect--merge-toml
                         (if (file-exists-p file)
                             (with-temp-buffer (insert-file-contents file) (buffer-string))
                           ""))))))
    ('claude
     (let ((file (agent-q-connect--file 'claude))
           (settings (expand-file-name agent-q-connect--claude-settings)))
       (list (cons file (agent-q-connect--json-text
                         (agent-q-connect--merge-servers (agent-q-connect--read-json file) 'claude)))
             (cons settings (agent-q-connect--json-text
                             (agent-q-connect--merge-claude-settings
                              (agent-q-connect--read-json settings)))))))
    ('gemini
     (let ((file (agent-q-connect--file 'gemini)))
       (list (cons file (agent-q-connect--json-text
                         (agent-q-connect--merge-servers (agent-q-connect--read-json file)
                                                         'gemini))))))
    (_ (error "Unknown agent %S" agent))))

(defun agent-q-connect--notes (agent)
  "What AGENT still asks of the user, once configured."
  (pcase agent
    ('claude "Claude Code: agent-q's tools (mcp__agent-q__*) are allowed in ~/.claude/settings.json, so Emacs alone asks about dangerous calls; MCP_TOOL_TIMEOUT there lets a call wait for your approval.  `claude mcp list' shows agent-q from any directory.")
    ('gemini "Gemini CLI: agent-q is trusted (\"trust\": true), so Emacs alone asks; Gemini still asks once whether to trust each project folder you start it in.  `gemini mcp list' shows agent-q.")
    ('codex "Codex CLI: default_tools_approval_mode = \"approve\" leaves agent-q's calls to Emacs (under `codex exec' they would otherwise be refused); tool_timeout_sec lets a call wait for your approval.  `codex mcp list' shows agent-q.")))

(defun agent-q-connect--text (file)
  "FILE's text, or nil when FILE is absent."
  (when (file-exists-p file)
    (with-temp-buffer (insert-file-contents file) (buffer-string))))

(defun agent-q-connect--write (file text)
  "Write TEXT to FILE atomically, keeping the old FILE as FILE.agent-q.bak.
A FILE that already holds TEXT is left alone, backup included: a second
run changes nothing, and the backup stays the file as it was first."
  (unless (equal (agent-q-connect--text file) text)
    (let ((dir (file-name-directory file)))
      (make-directory dir t)
      (when (file-exists-p file)
        (copy-file file (concat file ".agent-q.bak") t t t t))
      (let ((temp (make-temp-file (expand-file-name ".agent-q-connect-" dir) nil nil text)))
        (when (file-exists-p file)
          (set-file-modes temp (file-modes file)))
        (rename-file temp file t)))))

(defun agent-q-mcp-client-config (agent)
  "The configuration text that connects AGENT to agent-q, to paste.
AGENT is `claude', `gemini' or `codex'.  The text is each file's whole
new content after merging, as `agent-q-mcp-connect-agent' would write
it, headed by the file's name."
  (mapconcat (lambda (entry) (format ";; %s\n%s" (abbreviate-file-name (car entry)) (cdr entry)))
             (agent-q-connect--plan agent) "\n"))

(defun agent-q-connect--read-agent ()
  "Ask which agent to connect.
Case does not matter: \"claude\" completes to \"Claude Code\"."
  (let* ((names (mapcar (lambda (a) (cons (nth 1 a) (car a))) agent-q-connect--agents))
         (name (let ((completion-ignore-case t))
                 (completing-read "Connect which agent to agent-q? " names nil t))))
    (cdr (assoc name names))))

;;;###autoload
(defun agent-q-mcp-connect-agent (agent &optional show)
  "Configure AGENT to use agent-q's tools through the stdio relay.
AGENT is `claude' (Claude Code), `gemini' (Gemini CLI) or `codex'
\(Codex CLI); interactively, it is asked for.  Its user-level
configuration file is merged (other entries kept, an older agent-q
entry replaced, the old file kept as FILE.agent-q.bak); see
`agent-q-mcp-agent-tool-timeout'.  With SHOW (interactively, a prefix
argument), write nothing and show the text instead.  Return the files
written."
  (interactive (list (agent-q-connect--read-agent) current-prefix-arg))
  (let ((plan (agent-q-connect--plan agent))
        (notes (agent-q-connect--notes agent)))
    (if show
        (with-help-window "*agent-q connect*"
          (princ (agent-q-mcp-client-config agent))
          (princ (concat "\n" notes "\n"))
          nil)
      (pcase-dolist (`(,file . ,text) plan)
        (agent-q-connect--write file text))
      (when (called-interactively-p 'interactive)
        (message "agent-q: wrote %s.  %s"
                 (mapconcat (lambda (e) (abbreviate-file-name (car e))) plan ", ")
                 notes))
      (mapcar #'car plan))))

;;;; The agents' own tools: their hooks, to Emacs

;; `agent-q-gate-connect-agent' writes, for one agent, the hook that
;; hands each call of the agent's own tools to Emacs (bin/agent-q-mcp
;; hook, see `agent-q-gate-mode'), and what the agent needs for Emacs
;; to be the only prompt.  agent-q's own hook entries are recognised by
;; their command (`agent-q-connect--hook-regexp'): a second run replaces
;; them, the user's own entries stay where they are, and
;; `agent-q-gate-disconnect-agent' removes exactly them.

(defconst agent-q-connect--server-name "agent-q"
  "The name agent-q's MCP server has in each agent's configuration.")

(defconst agent-q-connect--hook-regexp "agent-q-mcp['\"]?[ \t]+hook\\_>"
  "Matches the command of a hook that is agent-q's own.")

(defconst agent-q-connect--gate-files
  '((claude "~/.claude/settings.json" PreToolUse)
    (gemini "~/.gemini/settings.json" BeforeTool)
    (codex "~/.codex/hooks.json" PreToolUse))
  "Where each agent's hook goes: (AGENT FILE EVENT).")

(defconst agent-q-connect--prompt-events
  '((claude . UserPromptSubmit) (gemini . BeforeAgent) (codex . UserPromptSubmit))
  "Each agent's prompt hook event: (AGENT . EVENT).
Its hook, the same command, tells Emacs that a turn of the session
begins, for the journal of changes (`agent-q-journal-turn'), without
waiting and printing nothing.  Codex CLI runs it once trusted, as its
PreToolUse hook (see `agent-q-connect--codex-trust-events').")

(defconst agent-q-connect--prompt-hook-timeout 10
  "Seconds an agent gives its prompt hook, which takes at most 2.")

(defconst agent-q-connect--gemini-policy "~/.gemini/policies/agent-q.toml"
  "The user policy of Gemini CLI that lets its shell run once Emacs approved.
Gemini reads every *.toml in ~/.gemini/policies (its user tier), unless
it is started with --policy, which replaces that directory.")

(defconst agent-q-connect--status-message "Waiting for Emacs (agent-q)..."
  "What the agent's terminal shows while a call waits for Emacs.
Codex CLI shows it after \"Working\", Gemini CLI as the name of the
running hook; Claude Code shows a PreToolUse hook's statusMessage only
in its transcript view.")

(defcustom agent-q-gate-when-emacs-away 'ask
  "What an agent's hook does when no Emacs gate can be asked.
`ask': the agent's own prompt (Claude Code, Gemini CLI).  Codex CLI's
hook cannot make Codex ask: it leaves the call to Codex only where
Codex's own approval policy asks (\"untrusted\", which Codex 0.169.0
no longer offers), and denies it otherwise, saying why.  `deny': every
agent is refused the call, saying why.  `agent-q-gate-connect-agent'
writes the choice into the hook's command (and Codex's trust of it):
connect the agent again after changing it."
  :type '(choice (const :tag "Leave it to the agent's own prompt" ask)
                 (const :tag "Deny it" deny))
  :group 'agent-q)

(defcustom agent-q-gate-hook-timeout 600
  "Seconds an agent waits for its hook, so for your answer in Emacs.
`agent-q-gate-connect-agent' writes it into the agent's hook
configuration and passes it to the hook: the prompt shows the time
left, and when it runs out the call is denied, saying so, in Emacs,
to the agent and in the audit.  Connect the agent again after
changing it."
  :type 'natnum
  :group 'agent-q)

(defun agent-q-connect--js-regexp-quote (string)
  "STRING with the special characters of a JavaScript regexp escaped."
  (replace-regexp-in-string "[][\\\\^$.|?*+(){}]" "\\\\\\&" string))

(defun agent-q-connect--hook-timeout ()
  "`agent-q-gate-hook-timeout', checked: a positive number of seconds."
  (unless (and (natnump agent-q-gate-hook-timeout) (> agent-q-gate-hook-timeout 0))
    (user-error "`agent-q-gate-hook-timeout' must be a positive number of seconds, not %S"
                agent-q-gate-hook-timeout))
  agent-q-gate-hook-timeout)

(defun agent-q-connect--hook-command (agent)
  "The shell command of AGENT's hook: the relay's `hook' mode.
The connection file is named when it is not the relay's default; the
hook timeout and, when it is `deny', `agent-q-gate-when-emacs-away'
are passed on."
  (let ((file (cdr (assq 'AGENT_Q_MCP_CONNECTION_FILE (agent-q-connect--environment)))))
    (concat (shell-quote-argument (agent-q-connect--relay))
            " hook --agent " (symbol-name agent)
            (format " --timeout %d" (agent-q-connect--hook-timeout))
            (pcase agent-q-gate-when-emacs-away
              ('ask "")
              ('deny " --unreachable deny")
              (other (user-error "`agent-q-gate-when-emacs-away' must be ask or deny, not %S"
                                 other)))
            (if file (concat " --connection-file " (shell-quote-argument file)) ""))))

(defun agent-q-connect--hook-group (agent)
  "AGENT's matcher group of agent-q's hook, as an alist.
agent-q's own MCP tools are left out (the server asks about them
itself): by a lookahead for Claude Code and Gemini CLI, whose matchers
are JavaScript regexps; Codex's matcher has no lookahead, so its shell
and patch tools are named."
  (let ((name (agent-q-connect--js-regexp-quote agent-q-connect--server-name))
        (command (agent-q-connect--hook-command agent)))
    (pcase agent
      ('claude `((matcher . ,(format "^(?!mcp__%s__)" name))
                 (hooks . [((type . "command") (command . ,command)
                            (timeout . ,(agent-q-connect--hook-timeout))
                            (statusMessage . ,agent-q-connect--status-message))])))
      ;; Gemini's timeout is in milliseconds; it shows a running hook's
      ;; name ("Executing Hook: NAME").
      ('gemini `((matcher . ,(format "^(?!mcp_%s_)" name))
                 (hooks . [((type . "command") (name . ,agent-q-connect--status-message)
                            (command . ,command)
                            (timeout . ,(* 1000 (agent-q-connect--hook-timeout))))])))
      ;; Codex shows the statusMessage after "Working" while the hook runs.
      ('codex `((matcher . "^(Bash|apply_patch)$")
                (hooks . [((type . "command") (command . ,command)
                           (timeout . ,(agent-q-connect--hook-timeout))
                           (statusMessage . ,agent-q-connect--status-message))]))))))

(defun agent-q-connect--prompt-group (agent)
  "AGENT's matcher group of agent-q's prompt hook (no matcher: every prompt)."
  (let ((command (agent-q-connect--hook-command agent)))
    `((hooks . [((type . "command") (command . ,command)
                 ;; Gemini's timeout is in milliseconds.
                 (timeout . ,(if (eq agent 'gemini)
                                 (* 1000 agent-q-connect--prompt-hook-timeout)
                               agent-q-connect--prompt-hook-timeout)))]))))

(defun agent-q-connect--own-hook-p (hook)
  "Whether HOOK (one handler, an alist) is agent-q's own."
  (let ((command (and (listp hook) (alist-get 'command hook))))
    (and (stringp command) (string-match-p agent-q-connect--hook-regexp command))))

(defun agent-q-connect--remove-own-hooks (groups)
  "GROUPS (a vector of matcher groups) without agent-q's hooks, as a list.
A group left with no hook by the removal goes; the rest is kept as it was."
  (let (kept)
    (mapc (lambda (group)
            (let* ((hooks (and (listp group) (alist-get 'hooks group)))
                   (others (and (vectorp hooks)
                                (cl-remove-if #'agent-q-connect--own-hook-p
                                              (append hooks nil)))))
              (cond ((or (not (vectorp hooks)) (= (length others) (length hooks)))
                     (push group kept))
                    (others
                     (push (agent-q-connect--put group 'hooks (vconcat others)) kept)))))
          (if (vectorp groups) groups nil))
    (nreverse kept)))

(defun agent-q-connect--delete (alist key)
  "ALIST without KEY."
  (cl-remove-if (lambda (cell) (eq (car cell) key)) alist))

(defconst agent-q-connect--status-line-regexp "agent-q-mcp['\"]?[ \t]+status-line\\_>"
  "Matches the command of a Claude Code status line that is agent-q's own.")

(defun agent-q-connect--status-line (object add)
  "Claude Code's settings OBJECT with agent-q's statusLine put (ADD) or removed.
Claude Code shows nothing of a running PreToolUse hook, but it shows
its status line, re-run every second: agent-q's says when a call of
the session waits for Emacs.  A status line of the user's own is kept
as it is: Claude Code has one only."
  (let* ((line (alist-get 'statusLine object))
         (command (and (listp line) (alist-get 'command line)))
         (own (and (stringp command)
                   (string-match-p agent-q-connect--status-line-regexp command))))
    (cond ((and add (or own (null line)))
           (agent-q-connect--put
            object 'statusLine
            `((type . "command")
              (command . ,(concat (shell-quote-argument (agent-q-connect--relay)) " status-line"
                                  (let ((file (cdr (assq 'AGENT_Q_MCP_CONNECTION_FILE
                                                         (agent-q-connect--environment)))))
                                    (if file (concat " --connection-file " (shell-quote-argument file))
                                      ""))))
              (refreshInterval . 1))))
          ((and (not add) own) (agent-q-connect--delete object 'statusLine))
          (t object))))

(defconst agent-q-connect--gemini-told-tools '("run_shell_command" "replace" "write_file")
  "Gemini CLI's tools whose call Emacs may change: its AfterTool hook's matcher.
After the user edited a command or rejected part of an edit, Gemini's
model is told so only by an AfterTool hook's additional context.")

(defun agent-q-connect--after-tool-group ()
  "Gemini CLI's matcher group of agent-q's AfterTool hook, as an alist.
It tells Gemini's model what Emacs changed of a call (an edited command,
the hunks the user rejected), which Gemini passes to its model only
from an AfterTool hook; it answers at once, without asking Emacs."
  (let ((file (cdr (assq 'AGENT_Q_MCP_CONNECTION_FILE (agent-q-connect--environment)))))
    `((matcher . ,(concat "^(" (mapconcat #'identity agent-q-connect--gemini-told-tools "|") ")$"))
      (hooks . [((type . "command") (name . "agent-q: what Emacs changed")
                 (command . ,(concat (shell-quote-argument (agent-q-connect--relay))
                                     " hook --agent gemini --event after-tool"
                                     (if file (concat " --connection-file "
                                                      (shell-quote-argument file))
                                       "")))
                 (timeout . 10000))]))))

(defun agent-q-connect--hook-events (agent)
  "AGENT's hook events of agent-q's, each (EVENT . GROUP-FUNCTION)."
  (let ((prompt (cdr (assq agent agent-q-connect--prompt-events))))
    (append (list (cons (nth 2 (assq agent agent-q-connect--gate-files))
                        (lambda () (agent-q-connect--hook-group agent))))
            (and (eq agent 'gemini)
                 (list (cons 'AfterTool #'agent-q-connect--after-tool-group)))
            (and prompt
                 (list (cons prompt (lambda () (agent-q-connect--prompt-group agent))))))))

(defun agent-q-connect--merge-hooks (object agent add)
  "Settings OBJECT with agent-q's hooks for AGENT replaced (ADD) or removed.
Removing leaves out an event, or the whole hooks object, that only
agent-q's hooks made.  For Claude Code, its status line too (see
`agent-q-connect--status-line'); for Gemini CLI, its AfterTool hook
too (see `agent-q-connect--after-tool-group'); its prompt hook too (see
`agent-q-connect--prompt-events')."
  (when (eq agent 'claude)
    (setq object (agent-q-connect--status-line object add)))
  (let* ((hooks (alist-get 'hooks object))
         (hooks (if (listp hooks) hooks nil)))
    (pcase-dolist (`(,event . ,group) (agent-q-connect--hook-events agent))
      (let ((groups (agent-q-connect--remove-own-hooks (alist-get event hooks))))
        (when add
          (setq groups (append groups (list (funcall group)))))
        (setq hooks (if groups
                        (agent-q-connect--put hooks event (vconcat groups))
                      (agent-q-connect--delete hooks event)))))
    (if (or hooks (and add (assq 'hooks object)))
        (agent-q-connect--put object 'hooks hooks)
      (agent-q-connect--delete object 'hooks))))

(defconst agent-q-connect--gemini-gated-tools
  '("run_shell_command" "read_file" "read_many_files" "grep_search" "glob" "web_fetch"
    "write_file" "replace")
  "Gemini CLI's own tools that Emacs decides, which its policy then allows.")

(defun agent-q-connect--gemini-policy-text ()
  "Gemini CLI's policy: the gated tools allowed, so that Emacs is the only prompt."
  (concat "# Written by agent-q (M-x agent-q-gate-connect-agent): these tools of Gemini CLI\n"
          "# are decided in Emacs by its BeforeTool hook, so Gemini need not ask again.\n"
          "# M-x agent-q-gate-disconnect-agent removes this file.\n"
          (mapconcat (lambda (tool)
                       (concat "[[rule]]\n"
                               "toolName = \"" tool "\"\n"
                               "decision = \"allow\"\n"
                               "priority = 900\n"
                               (if (equal tool "run_shell_command") "allowRedirection = true\n" "")))
                     agent-q-connect--gemini-gated-tools
                     "\n")))

;;;; Codex's hook trust

;; Codex runs a user hook only once it is trusted: its /hooks screen
;; records, in config.toml, [hooks.state."HOOKS.JSON:EVENT:GROUP:HANDLER"]
;; trusted_hash = "sha256:HEX", the SHA-256 of the hook's definition as
;; compact JSON with sorted keys and Codex's defaults filled in (async
;; false).  A changed hook is no longer trusted.  Since the user runs
;; the command to trust exactly this hook, the command writes that entry
;; as /hooks would, and removes it on undo.

(defconst agent-q-connect--codex-trust-events
  '((PreToolUse . "pre_tool_use") (UserPromptSubmit . "user_prompt_submit"))
  "Codex CLI's hook events of agent-q's, each with its name in a trust key.")

(defun agent-q-connect--codex-trust-keys (object file &optional event)
  "The trust keys of agent-q's hooks in hooks OBJECT, read from FILE.
Those of EVENT only, when given; else of every event of
`agent-q-connect--codex-trust-events'."
  (let ((hooks-object (let ((hooks (alist-get 'hooks object)))
                        (and (listp hooks) hooks)))
        (keys nil))
    (pcase-dolist (`(,name . ,key-name) agent-q-connect--codex-trust-events)
      (when (or (null event) (eq event name))
        (let ((groups (alist-get name hooks-object)))
          (when (vectorp groups)
            (dotimes (i (length groups))
              (let ((hooks (and (listp (aref groups i)) (alist-get 'hooks (aref groups i)))))
                (when (vectorp hooks)
                  (dotimes (j (length hooks))
                    (when (agent-q-connect--own-hook-p (aref hooks j))
                      (push (format "%s:%s:%d:%d" file key-name i j) keys))))))))))
    (nreverse keys)))

(defun agent-q-connect--codex-trust-hash (group key-name)
  "Codex's trust hash of the first hook of GROUP, a matcher group of KEY-NAME.
KEY-NAME is the event as a trust key names it (\"pre_tool_use\"); a
group without a matcher (UserPromptSubmit's) is hashed without one, as
Codex does."
  (let ((hook (aref (alist-get 'hooks group) 0)))
    (concat "sha256:"
            (secure-hash
             'sha256
             (encode-coding-string
              (json-serialize
               `((event_name . ,key-name)
                 (hooks . [((async . :false) (command . ,(alist-get 'command hook))
                            ,@(let ((status (alist-get 'statusMessage hook)))
                                (and status `((statusMessage . ,status))))
                            (timeout . ,(alist-get 'timeout hook)) (type . "command"))])
                 ,@(and (assq 'matcher group) `((matcher . ,(alist-get 'matcher group)))))
               :false-object :false)
              'utf-8)))))

(defun agent-q-connect--codex-trust-toml (text remove adds)
  "Codex's config.toml TEXT without the trust tables of the keys REMOVE.
ADDS, a list of (KEY . HASH), are appended as tables."
  (let ((names (mapcar (lambda (key) (concat "hooks.state." (agent-q-connect--toml-string key)))
                       (append remove (mapcar #'car adds))))
        (kept nil)
        (skipping nil))
    (dolist (line (split-string text "\n"))
      (when (string-match "\\`[ \t]*\\[\\(.*\\)\\][ \t]*\\(#.*\\)?\\'" line)
        (setq skipping (member (replace-regexp-in-string
                                "[ \t]*\\.[ \t]*" "." (string-trim (match-string 1 line)))
                               names)))
      (unless skipping (push line kept)))
    (let ((rest (string-trim-right (string-join (nreverse kept) "\n"))))
      (dolist (add adds)
        (setq rest (concat rest (if (string-empty-p rest) "" "\n\n")
                           "[hooks.state." (agent-q-connect--toml-string (car add)) "]\n"
                           "# agent-q's hook in hooks.json, trusted by M-x agent-q-gate-connect-agent\n"
                           "trusted_hash = " (agent-q-connect--toml-string (cdr add)))))
      (if (string-empty-p rest) "" (concat rest "\n")))))

(defun agent-q-connect--codex-trust-plan (object merged file add)
  "Codex's trust of agent-q's hooks in config.toml: (CONFIG . TEXT), or nil.
OBJECT is hooks.json FILE as it was, MERGED as it will be; ADD, whether
the hooks are added.  Each event's hook (its group is the event's last)
gets its entry."
  (let* ((config (expand-file-name "config.toml" (file-name-directory file)))
         (text (or (agent-q-connect--text config) ""))
         (old (agent-q-connect--codex-trust-keys object file))
         (adds (and add
                    (delq nil
                          (mapcar
                           (lambda (event)
                             (let ((key (car (agent-q-connect--codex-trust-keys
                                              merged file (car event))))
                                   (groups (alist-get (car event) (alist-get 'hooks merged))))
                               (and key (vectorp groups)
                                    (cons key (agent-q-connect--codex-trust-hash
                                               (aref groups (1- (length groups)))
                                               (cdr event))))))
                           agent-q-connect--codex-trust-events))))
         (new-text (agent-q-connect--codex-trust-toml text old adds)))
    (unless (or (equal new-text text)
                ;; Undoing: only a trust of agent-q's hook that is there goes.
                (and (not add)
                     (not (cl-some (lambda (key)
                                     (string-search (agent-q-connect--toml-string key) text))
                                   old))))
      (cons config new-text))))

(defun agent-q-connect--gate-plan (agent add)
  "Plan routing AGENT's own tools through Emacs (ADD), or undoing it.
A list of (FILE . NEW-TEXT); NEW-TEXT nil means FILE is deleted."
  (let* ((file (expand-file-name (nth 1 (or (assq agent agent-q-connect--gate-files)
                                            (error "Unknown agent %S" agent)))))
         (object (agent-q-connect--read-json file))
         (merged (agent-q-connect--merge-hooks object agent add))
         ;; Undoing leaves a file without agent-q's hook as it is, format included.
         (plan (when (or add (not (equal merged object)))
                 (list (cons file (agent-q-connect--json-text merged))))))
    (when (eq agent 'codex)
      (let ((trust (agent-q-connect--codex-trust-plan object merged file add)))
        (when trust (setq plan (append plan (list trust))))))
    (when (eq agent 'gemini)
      (let ((policy (expand-file-name agent-q-connect--gemini-policy)))
        (when (or add (file-exists-p policy))
          (setq plan (append plan (list (cons policy (and add (agent-q-connect--gemini-policy-text)))))))))
    plan))

(defun agent-q-connect--gate-notes (agent)
  "What AGENT still asks of the user, once its hook is written."
  (pcase agent
    ('claude "Claude Code: its own tools (all but agent-q's) now wait for Emacs with M-x agent-q-gate-mode on; Emacs away, Claude asks as before.  Its status line says when a call waits for Emacs (a status line of your own is kept instead).  Claude skips hooks until you accept a folder's trust, and reportedly in its VS Code extension.")
    ('gemini "Gemini CLI: its own tools now wait for Emacs with M-x agent-q-gate-mode on; ~/.gemini/policies/agent-q.toml lets its shell run once Emacs approved (Gemini ignores that directory when started with --policy: then pass that file too).  Its AfterTool hook tells its model what you changed of a call (an edited command, rejected hunks).")
    ('codex "Codex CLI: the hook is trusted in ~/.codex/config.toml as Codex's /hooks screen would record it: change it with this command, not by hand (an edited hook is no longer trusted).  Codex's PreToolUse cannot allow: Emacs's approval leaves the call to Codex's own approval, Emacs's denial blocks it.  With Emacs away, a call is left to Codex only where its approval policy asks (untrusted, which Codex 0.169.0 no longer offers); otherwise it is denied.")))

(defun agent-q-connect--apply (plan)
  "Carry out PLAN, a list of (FILE . TEXT).
TEXT nil deletes FILE, a file wholly agent-q's, and its directory if
that is left empty."
  (pcase-dolist (`(,file . ,text) plan)
    (cond (text (agent-q-connect--write file text))
          ((file-exists-p file)
           (delete-file file)
           (let ((dir (file-name-directory file)))
             (unless (directory-files dir nil directory-files-no-dot-files-regexp t)
               (delete-directory dir)))))))

(defun agent-q-connect--show (plan notes)
  "Show PLAN (see `agent-q-connect--gate-plan') and NOTES in a help window."
  (with-help-window "*agent-q connect*"
    (pcase-dolist (`(,file . ,text) plan)
      (princ (format ";; %s\n%s\n" (abbreviate-file-name file) (or text ";; (deleted)\n"))))
    (princ (concat notes "\n"))))

;;;###autoload
(defun agent-q-gate-connect-agent (agent &optional show when-away timeout)
  "Route AGENT's own tools through Emacs: write its hook and what it needs.
AGENT is `claude' (Claude Code: PreToolUse in
~/.claude/settings.json), `gemini' (Gemini CLI: BeforeTool, and
AfterTool to tell its model what Emacs changed, in
~/.gemini/settings.json, and the policy ~/.gemini/policies/agent-q.toml
allowing its shell) or `codex' (Codex CLI: PreToolUse in
~/.codex/hooks.json, and its trust in ~/.codex/config.toml, as
Codex's /hooks would record it).  The hook runs bin/agent-q-mcp hook,
which asks this Emacs when `agent-q-gate-mode' is on; agent-q's own
MCP tools are left out.  The same command is also each agent's prompt
hook (UserPromptSubmit; BeforeAgent for Gemini CLI), which tells
Emacs that a turn begins, for the journal of changes.
Existing files are merged (the user's hooks kept, agent-q's replaced,
the old file kept as FILE.agent-q.bak); a second run changes nothing.
With SHOW (interactively, \\[universal-argument]), write nothing and show
the text instead.  WHEN-AWAY (`ask' or `deny') and TIMEOUT (seconds)
stand for `agent-q-gate-when-emacs-away' and
`agent-q-gate-hook-timeout'; interactively, with two
\\[universal-argument], they are asked for.  `agent-q-gate-disconnect-agent' undoes
it.  Return the files written."
  (interactive
   (let ((agent (agent-q-connect--read-agent)))
     (if (equal current-prefix-arg '(16))
         (list agent nil
               (intern (completing-read "When no Emacs can be asked: " '("ask" "deny") nil t
                                        nil nil (symbol-name agent-q-gate-when-emacs-away)))
               (read-number "Seconds the agent waits for your answer: "
                            agent-q-gate-hook-timeout))
       (list agent current-prefix-arg))))
  (let* ((agent-q-gate-when-emacs-away (or when-away agent-q-gate-when-emacs-away))
         (agent-q-gate-hook-timeout (or timeout agent-q-gate-hook-timeout))
         (plan (agent-q-connect--gate-plan agent t))
         (notes (agent-q-connect--gate-notes agent)))
    (if show
        (progn (agent-q-connect--show plan notes) nil)
      (agent-q-connect--apply plan)
      (when (called-interactively-p 'interactive)
        (message "agent-q: wrote %s.  %s"
                 (mapconcat (lambda (e) (abbreviate-file-name (car e))) plan ", ")
                 notes))
      (mapcar #'car plan))))

;;;###autoload
(defun agent-q-gate-disconnect-agent (agent &optional show)
  "Undo `agent-q-gate-connect-agent' for AGENT: remove exactly agent-q's hook.
The user's own hooks and settings are kept; an event or a hooks object
that only agent-q's hook made goes; Gemini's agent-q policy file is
deleted.  Each file changed is kept first as FILE.agent-q.bak.  With
SHOW (interactively, a prefix argument), write nothing and show the
text instead.  Return the files changed."
  (interactive (list (agent-q-connect--read-agent) current-prefix-arg))
  (let ((plan (agent-q-connect--gate-plan agent nil)))
    (if show
        (progn (agent-q-connect--show plan "") nil)
      (agent-q-connect--apply plan)
      (when (called-interactively-p 'interactive)
        (message "agent-q: %s" (if plan
                                   (concat "removed agent-q's hook from "
                                           (mapconcat (lambda (e) (abbreviate-file-name (car e)))
                                                      plan ", "))
                                 "no hook of agent-q's was there")))
      (mapcar #'car plan))))

(provide 'agent-q-connect)

;;; agent-q-connect.el ends here
