;;; agent-q-acp.el --- Agents over the Agent Client Protocol (agent-shell), decided by agent-q  -*- lexical-binding: t -*-

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

;; agent-shell runs Gemini CLI (gemini --acp), Claude (claude-agent-acp)
;; and Codex (codex-acp) inside Emacs over the Agent Client Protocol,
;; and asks each `session/request_permission' in a dialog of its own.
;; `agent-q-agent-shell-mode' makes agent-q answer them instead, on the
;; same decision path as the terminal agents' own tools under their
;; hooks (lisp/agent-q-gate.el): one set of approval rules, one prompt,
;; one review, one audit.
;;
;; - A command (kind execute) is the gate's shell_command: the
;;   :command rules, else the prompt.  The command is rawInput.command
;;   (Claude); Gemini CLI sends no rawInput, its title is the command.
;; - A read or search is the gate's agent_read, one call per file (the
;;   tool call's locations, else rawInput's path): the read guard, the
;;   agent's working directory being the allowed one.
;; - A fetch is the gate's agent_fetch, one call per URL: the :domain
;;   rules, else the prompt.
;; - An edit, deletion or move that carries diffs opens agent-q's hunk
;;   review; it is allowed only when every hunk is accepted as proposed.
;;   ACP carries neither a partial edit nor a reason: a rejected or
;;   edited hunk rejects the whole edit, and the agent is told no more.
;; - A call of agent-q's own MCP tools is allowed: the server decides
;;   it itself, with its own rules and prompt.
;; - Anything else is asked in agent-q's prompt (the private tool
;;   agent_acp_call), or left to agent-shell's dialog (see
;;   `agent-q-acp-unruled').
;;
;; agent-q answers with the allow_once and reject_once options only,
;; never allow_always, which would store a rule in the agent's own
;; settings: lasting rules are agent-q's (`agent-q-approval-rules').
;;
;; The mode also gives each new session agent-q's MCP server (HTTP, with
;; the token of the server running when the session starts) through
;; `agent-shell-mcp-servers'.
;;
;; `session/cancel' (sent with `acp-send-notification', as agent-shell
;; does) and the agent's process ending withdraw the session's pending
;; questions (`agent-q-acp-withdraw-session').  Each `session/prompt'
;; (sent with `acp-send-request') begins a turn of the session in the
;; journal of changes (`agent-q-journal-turn').
;;
;; This file needs neither agent-shell nor acp.el to load or compile: it
;; reads agent-shell's variables only when they are bound.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'json)
(require 'agent-q)
(require 'agent-q-async)
(require 'agent-q-rules)
(require 'agent-q-gate)
(require 'agent-q-review)

(declare-function agent-q-mcp-running-p "agent-q-mcp" ())
(declare-function agent-q-mcp-start "agent-q-mcp" (&optional interactive))
(declare-function agent-shell-cwd "agent-shell" ())
(declare-function agent-q-journal-record "agent-q-journal" (&rest plist))
(declare-function agent-q-journal-turn "agent-q-journal" (&rest plist))

(defvar agent-q-mcp--url)
(defvar agent-q-mcp--token)
(defvar agent-shell-permission-responder-function)
(defvar agent-shell-mcp-servers)

;;;; Options

(defgroup agent-q-acp nil
  "Agents over the Agent Client Protocol (agent-shell), decided by agent-q."
  :group 'agent-q
  :prefix "agent-q-acp-")

(defcustom agent-q-acp-unruled 'agent-q
  "Who asks about an ACP permission request that agent-q has no rule for.
`agent-q': agent-q's prompt (or review), so that the user answers in
one place.  `agent-shell': agent-shell's own dialog, as without
`agent-q-agent-shell-mode'; agent-q then answers only the shell
commands and fetches its approval rules decide, the reads its read
guard allows, and calls of its own tools."
  :type '(choice (const :tag "agent-q's prompt" agent-q)
                 (const :tag "agent-shell's dialog" agent-shell)))

(defcustom agent-q-acp-start-server t
  "Whether a new agent-shell session starts agent-q's MCP server when it is off.
Non-nil: the server starts (`agent-q-mcp-start') when a session starts
and it is not running, so that the agent gets agent-q's tools.  nil:
the session cannot start until the server is started by hand."
  :type 'boolean)

(defcustom agent-q-acp-server-name "agent-q"
  "The name of agent-q's MCP server in each ACP session's mcpServers.
Agents prefix the tools with it (Claude: mcp__agent-q__read_file)."
  :type 'string)

(defconst agent-q-acp-call-tool "agent_acp_call"
  "The tool name, in rules, prompt and audit, of an ACP call of another kind.")


;;;; Reading agent-shell's PERMISSION argument

(defun agent-q-acp--get (alist key)
  "The value of KEY in ALIST, a keyword or symbol key (or its string)."
  (when (consp alist)
    (cdr (or (assq key alist)
             (and (symbolp key) (assoc (symbol-name key) alist))))))

(defun agent-q-acp--list (value)
  "VALUE, a JSON array (vector or list), as a list."
  (cond ((vectorp value) (append value nil))
        ((listp value) value)))

(defun agent-q-acp--string (value)
  "VALUE when it is a non-empty string, else nil."
  (and (stringp value) (not (string-empty-p value)) value))

(defun agent-q-acp--option-id (options kind)
  "The option id of the first of OPTIONS whose kind is KIND, or nil.
OPTIONS are agent-shell's enriched actions (alists with :kind and
:option-id) or the request's own options (kind and optionId)."
  (cl-loop for option in (agent-q-acp--list options)
           for k = (or (agent-q-acp--get option :kind) (agent-q-acp--get option 'kind))
           when (equal (if (symbolp k) (symbol-name k) k) kind)
           return (or (agent-q-acp--get option :option-id)
                      (agent-q-acp--get option 'optionId))))

(defun agent-q-acp--raw (tool-call key)
  "The value of KEY (a symbol) in TOOL-CALL's rawInput."
  (agent-q-acp--get (or (agent-q-acp--get tool-call :raw-input)
                        (agent-q-acp--get tool-call 'rawInput))
                    key))

(defun agent-q-acp--kind (tool-call)
  "TOOL-CALL's kind, a string (\"other\" when it has none)."
  (let ((kind (agent-q-acp--get tool-call :kind)))
    (cond ((symbolp kind) (if kind (symbol-name kind) "other"))
          ((stringp kind) kind)
          (t "other"))))

(defun agent-q-acp--title (tool-call)
  "TOOL-CALL's title, or \"\"."
  (or (agent-q-acp--string (agent-q-acp--get tool-call :title)) ""))

(defun agent-q-acp--locations (tool-call)
  "The paths of TOOL-CALL's locations."
  (delq nil (mapcar (lambda (location) (agent-q-acp--string (agent-q-acp--get location 'path)))
                    (agent-q-acp--list (agent-q-acp--get tool-call :locations)))))

(defun agent-q-acp--diffs (tool-call)
  "TOOL-CALL's diffs, each (FILE OLD NEW); OLD nil for a new file.
agent-shell 0.79.2 passes :diffs, a list of ((:old . OLD) (:new .
NEW) (:file . FILE)); older versions :diff, one of them.  Without
either, the tool call's content items of type diff serve."
  (let ((infos (or (agent-q-acp--list (agent-q-acp--get tool-call :diffs))
                   (and (agent-q-acp--get tool-call :diff)
                        (list (agent-q-acp--get tool-call :diff))))))
    (or (delq nil (mapcar (lambda (info)
                            ;; The keys of agent-shell's diff info; the ACP names, in case.
                            (when-let ((file (agent-q-acp--string
                                              (or (agent-q-acp--get info :file)
                                                  (agent-q-acp--get info :path)
                                                  (agent-q-acp--get info 'path)))))
                              (list file
                                    (or (agent-q-acp--get info :old)
                                        (agent-q-acp--get info :old-text)
                                        (agent-q-acp--get info 'oldText))
                                    (or (agent-q-acp--get info :new)
                                        (agent-q-acp--get info :new-text)
                                        (agent-q-acp--get info 'newText)
                                        ""))))
                          infos))
        (delq nil (mapcar (lambda (item)
                            (when (equal (agent-q-acp--get item 'type) "diff")
                              (when-let ((file (agent-q-acp--string (agent-q-acp--get item 'path))))
                                (list file (agent-q-acp--get item 'oldText)
                                      (or (agent-q-acp--get item 'newText) "")))))
                          (agent-q-acp--list (agent-q-acp--get tool-call :content)))))))

;;;; Who asks

(defun agent-q-acp--state ()
  "The state of agent-shell in the current buffer, or nil."
  (and (boundp 'agent-shell--state) (symbol-value 'agent-shell--state)))

(defun agent-q-acp--agent (identifier)
  "The agent of agent-shell's config IDENTIFIER: (SYMBOL . NAME)."
  (let ((id (downcase (format "%s" (or identifier "")))))
    (cond ((string-match-p "claude" id) (cons 'claude "Claude (ACP)"))
          ((string-match-p "gemini" id) (cons 'gemini "Gemini CLI (ACP)"))
          ((string-match-p "codex" id) (cons 'codex "Codex (ACP)"))
          (t nil))))

(defun agent-q-acp-context ()
  "Who asks, read from agent-shell's state in the current buffer: a plist.
:agent (claude, gemini, codex or acp), :label (\"Gemini CLI (ACP)
SESSION\" for the prompt, pending list and audit), :session, :cwd and
:process (the agent's process, whose end withdraws its questions)."
  (let* ((state (agent-q-acp--state))
         (config (agent-q-acp--get state :agent-config))
         (agent (or (agent-q-acp--agent (agent-q-acp--get config :identifier))
                    (agent-q-acp--agent (agent-q-acp--get config :buffer-name))
                    (cons 'acp (format "%s (ACP)" (or (agent-q-acp--get config :buffer-name)
                                                      "agent")))))
         (session (agent-q-acp--get (agent-q-acp--get state :session) :id))
         (client (agent-q-acp--get state :client))
         (process (agent-q-acp--get client :process))
         (cwd (or (and (fboundp 'agent-shell-cwd) (ignore-errors (agent-shell-cwd)))
                  default-directory)))
    (list :agent (car agent)
          :name (cdr agent)
          :label (concat (cdr agent)
                         (if (agent-q-acp--string session)
                             (concat " " (truncate-string-to-width session 36 nil nil "..."))
                           ""))
          :session session
          :cwd (and cwd (directory-file-name (expand-file-name cwd)))
          :process (and (processp process) process))))

;;;; Pending questions

(defvar agent-q-acp--pending (make-hash-table :test #'equal)
  "Key -> (SESSION PROCESS WITHDRAW ANSWER): the questions not answered yet.
WITHDRAW is a function of one argument, why, that takes the question
away unanswered; ANSWER the function that answers the agent (t or
nil).")

(defvar agent-q-acp--counter 0
  "What makes the keys of `agent-q-acp--pending' unique.")

(defvar agent-q-acp--watched nil
  "The agents' processes whose end withdraws their questions.")

(defun agent-q-acp--key ()
  "A new key for a question."
  (format "acp-%d-%d" (truncate (float-time)) (cl-incf agent-q-acp--counter)))

(defun agent-q-acp--register (key context withdraw answer)
  "Record KEY, a question from CONTEXT that WITHDRAW takes away.
ANSWER answers the agent."
  (puthash key (list (plist-get context :session) (plist-get context :process) withdraw answer)
           agent-q-acp--pending)
  (let ((process (plist-get context :process)))
    (when (and process (not (memq process agent-q-acp--watched)))
      (push process agent-q-acp--watched)
      (add-function :after (process-sentinel process) #'agent-q-acp--sentinel))))

(defun agent-q-acp--done (key)
  "Forget the question KEY; non-nil when it was still pending."
  (prog1 (gethash key agent-q-acp--pending)
    (remhash key agent-q-acp--pending)))

(defun agent-q-acp--safely (function &rest args)
  "Call FUNCTION with ARGS; report an error instead of signalling it."
  (condition-case err
      (apply function args)
    (error (message "agent-q: withdrawing an ACP question: %s" (error-message-string err)))))

(defun agent-q-acp--withdraw-all (functions why)
  "Call each of FUNCTIONS with WHY, even when one exits non-locally.
Withdrawing a question whose prompt is on screen ends that prompt with
a non-local exit, which may pass through here."
  (when functions
    (unwind-protect (agent-q-acp--safely (car functions) why)
      (agent-q-acp--withdraw-all (cdr functions) why))))

(defun agent-q-acp--withdraw-if (predicate why &optional reject)
  "Withdraw each pending question whose (SESSION PROCESS) satisfy PREDICATE.
WHY says why, for the audit.  REJECT non-nil first answers the agent
reject, which it is still waiting for.  Return how many were
withdrawn."
  (let (entries)
    (maphash (lambda (key entry)
               (when (funcall predicate (nth 0 entry) (nth 1 entry))
                 (push (cons key entry) entries)))
             agent-q-acp--pending)
    (dolist (entry entries)
      (remhash (car entry) agent-q-acp--pending))
    (when reject
      (dolist (entry entries)
        (agent-q-acp--safely (nth 4 entry) nil)))
    (agent-q-acp--withdraw-all (mapcar (lambda (entry) (nth 3 entry)) entries) why)
    (length entries)))

(defun agent-q-acp-withdraw-session (session)
  "Withdraw the pending questions of the ACP SESSION (its id).
Their prompts and reviews go away and nothing is answered: the agent
cancelled the turn (`session/cancel'), and the client answers
`cancelled' for it.  Return how many were withdrawn."
  (agent-q-acp--withdraw-if (lambda (s _p) (equal s session))
                            "the agent cancelled its turn (session/cancel)"))

(defun agent-q-acp-withdraw-process (process)
  "Withdraw the pending questions of the agent running as PROCESS.
Return how many were withdrawn."
  (agent-q-acp--withdraw-if (lambda (_s p) (eq p process)) "the agent exited"))

(defun agent-q-acp--sentinel (process _event)
  "Withdraw PROCESS's questions when the agent has exited."
  (unless (process-live-p process)
    (setq agent-q-acp--watched (delq process agent-q-acp--watched))
    (agent-q-acp-withdraw-process process)))

(defun agent-q-acp--request-sent (&rest args)
  "Before `acp-send-request' (ARGS): a session/prompt begins a turn.
The journal (`agent-q-journal-turn') numbers the session's turns and
labels each with its prompt's first text line; the session's changes
then carry it.  The agent is named as its calls are, from the
agent-shell buffer of the request's client."
  (let ((request (plist-get args :request)))
    (when (equal (agent-q-acp--get request :method) "session/prompt")
      (condition-case err
          (let* ((params (agent-q-acp--get request :params))
                 (session (agent-q-acp--string (agent-q-acp--get params 'sessionId)))
                 (client (plist-get args :client))
                 (buffer (and (consp client) (agent-q-acp--get client :context-buffer)))
                 (context (with-current-buffer (if (buffer-live-p buffer) buffer (current-buffer))
                            (agent-q-acp-context)))
                 (text (cl-loop for block in (agent-q-acp--list (agent-q-acp--get params 'prompt))
                                when (equal (agent-q-acp--get block 'type) "text")
                                return (agent-q-acp--get block 'text))))
            (when (and session (require 'agent-q-journal nil t))
              (agent-q-journal-turn :channel (format "acp %s" session)
                                    :client (plist-get context :label)
                                    :prompt (and (stringp text) text))))
        (error (message "agent-q: the ACP prompt's turn was not journalled: %s"
                        (error-message-string err)))))))

(defun agent-q-acp--notification-sent (&rest args)
  "After `acp-send-notification' (ARGS): a session/cancel withdraws its questions."
  (let* ((notification (plist-get args :notification))
         (method (agent-q-acp--get notification :method)))
    (when (equal method "session/cancel")
      (agent-q-acp-withdraw-session
       (agent-q-acp--get (agent-q-acp--get notification :params) 'sessionId)))))

;;;; Deciding

(defun agent-q-acp--answerer (key answer &optional what)
  "Return a gate answerer for the question KEY, giving ANSWER t or nil.
WHAT names the call in a message when an edited command is refused."
  (lambda (decision detail)
    (when (agent-q-acp--done key)
      (cond
       ((and (eq decision 'allow) detail)
        ;; The user edited the command: ACP cannot carry it.
        (message "agent-q: ACP cannot carry an edited command; %s was rejected" (or what "the call"))
        (funcall answer nil))
       (t (funcall answer (eq decision 'allow)))))))

(defun agent-q-acp--gate (key props context answer)
  "Hand the question KEY (gate PROPS, from CONTEXT) to the gate.
ANSWER gets t (allow) or nil (reject)."
  (agent-q-acp--register key context (lambda (why) (agent-q-gate-withdraw key why)) answer)
  (agent-q-gate-request
   key props
   (let ((inner (agent-q-acp--answerer key answer (plist-get props :tool))))
     (lambda (decision detail)
       (if (memq decision '(ask no-opinion))
           ;; The gate could not decide it (no command found...): ask.
           (progn (remhash key agent-q-acp--pending)
                  (agent-q-acp--ask (agent-q-acp--key) (plist-get props :tool-call)
                                    context answer))
         (funcall inner decision detail))))))

(defun agent-q-acp--rule-context (context tool)
  "The approval context of TOOL for a call from CONTEXT.
As `agent-q-rules-decide' takes it."
  (list :origin 'mcp :client (plist-get context :label)
        :mcp-client (agent-q-rules-agent-client (symbol-name (plist-get context :agent)))
        :safety-level :dangerous :tool tool))

(defun agent-q-acp--ruled-p (context tool args)
  "Non-nil when the approval rules allow or deny TOOL with ARGS from CONTEXT."
  (memq (car (agent-q--ruling tool args (agent-q-acp--rule-context context tool)))
        '(allow deny)))

(defun agent-q-acp--own-tool-p (tool-call)
  "Non-nil when TOOL-CALL is a call of a tool of agent-q's MCP server."
  (let ((name (regexp-quote agent-q-acp-server-name))
        (title (agent-q-acp--title tool-call)))
    (or (string-match-p (concat "\\`mcp__" name "__") title)
        (string-match-p (concat "\\`mcp_" name "_") title)
        (string-match-p (concat "(" name " MCP Server)") title)
        (string-match-p (concat "\\`mcp__" name "__")
                        (format "%s" (or (agent-q-acp--get tool-call 'name)
                                         (agent-q-acp--get tool-call :name) ""))))))

(defun agent-q-acp--props (tool-call context kind)
  "The gate's props for TOOL-CALL from CONTEXT, its KIND a plist."
  (list :agent (plist-get context :agent) :label (plist-get context :label)
        :session (plist-get context :session) :cwd (plist-get context :cwd)
        :tool (agent-q-acp--title tool-call) :tool-call tool-call
        :input (list :command (plist-get kind :command))
        :kind kind))

(defun agent-q-acp-decide (tool-call context answer)
  "Decide the ACP TOOL-CALL from CONTEXT (see `agent-q-acp-context').
TOOL-CALL is agent-shell's alist (:title :kind :raw-input :locations
:diffs...).  ANSWER is called once, now or later, with t (allow) or
nil (reject).  Return non-nil when agent-q decides it, nil when it is
left to agent-shell (`agent-q-acp-unruled'); ANSWER is then not called."
  (let* ((kind (agent-q-acp--kind tool-call))
         (key (agent-q-acp--key))
         (to-agent-q (eq agent-q-acp-unruled 'agent-q)))
    (cond
     ((and (equal kind "other") (agent-q-acp--own-tool-p tool-call))
      ;; agent-q's server decides its own tools when they are called.
      (funcall answer t)
      t)
     ((equal kind "execute")
      (let ((command (or (agent-q-acp--string (agent-q-acp--raw tool-call 'command))
                         (agent-q-acp--string (agent-q-acp--title tool-call)))))
        (when (or to-agent-q
                  (and command (agent-q-acp--ruled-p
                                context agent-q-gate-shell-tool
                                (list :command command :directory (plist-get context :cwd)))))
          (agent-q-acp--gate key (agent-q-acp--props tool-call context
                                                     (list :kind "shell" :command command))
                             context answer)
          t)))
     ((member kind '("read" "search"))
      (let ((paths (or (agent-q-acp--locations tool-call)
                       (delq nil (list (agent-q-acp--string (agent-q-acp--raw tool-call 'file_path))
                                       (agent-q-acp--string (agent-q-acp--raw tool-call 'path))
                                       (agent-q-acp--string (agent-q-acp--raw tool-call 'absolute_path)))))))
        (when (or to-agent-q paths)
          (agent-q-acp--gate key (agent-q-acp--props tool-call context
                                                     (list :kind "read" :paths (vconcat paths)))
                             context answer)
          t)))
     ((equal kind "fetch")
      (let ((urls (delq nil (list (agent-q-acp--string (agent-q-acp--raw tool-call 'url))))))
        (unless urls
          (let ((title (agent-q-acp--title tool-call)))
            (when (string-match "https?://[^ \t\n\"]+" title)
              (push (match-string 0 title) urls))))
        (when (or to-agent-q
                  (and urls (cl-every (lambda (url) (agent-q-acp--ruled-p
                                                     context agent-q-gate-fetch-tool
                                                     (list :url url)))
                                      urls)))
          (agent-q-acp--gate key (agent-q-acp--props tool-call context
                                                     (list :kind "fetch" :urls (vconcat urls)))
                             context answer)
          t)))
     ((and (member kind '("edit" "delete" "move")) (agent-q-acp--diffs tool-call))
      (when to-agent-q
        (agent-q-acp--review key (agent-q-acp--diffs tool-call) tool-call context answer)
        t))
     (to-agent-q
      (agent-q-acp--ask key tool-call context answer)
      t))))

;;;###autoload
(defun agent-q-acp-respond (permission)
  "Answer agent-shell's PERMISSION request in agent-q.
The value of `agent-shell-permission-responder-function' while
`agent-q-agent-shell-mode' is on.  PERMISSION is the alist agent-shell
passes: :tool-call, :options and :respond.  Return non-nil when
agent-q answers it (with `allow_once' or `reject_once', now or later),
nil to leave it to agent-shell's dialog."
  (let* ((tool-call (agent-q-acp--get permission :tool-call))
         (options (agent-q-acp--get permission :options))
         (respond (agent-q-acp--get permission :respond))
         (allow (agent-q-acp--option-id options "allow_once"))
         (reject (agent-q-acp--option-id options "reject_once")))
    (when (and (functionp respond) allow reject tool-call)
      (condition-case err
          (and (agent-q-acp-decide
                tool-call (agent-q-acp-context)
                (lambda (allowed)
                  (condition-case err
                      (funcall respond (if allowed allow reject))
                    (error (message "agent-q: cannot answer the agent: %s"
                                    (error-message-string err))))))
               t)
        (error
         ;; Better agent-shell's own dialog than a request nobody answers.
         (message "agent-q: cannot decide the agent's request, agent-shell asks: %s"
                  (error-message-string err))
         nil)))))

;;;; Other calls: agent-q's prompt

(defvar agent-q-acp--registry nil
  "The registry of agent_acp_call, which no client is offered.")

(defvar agent-q-acp--approved (make-hash-table :test #'equal)
  "Call id -> t once its handler ran (approved).")

(defun agent-q-acp--approve (_args)
  "The handler of agent_acp_call: record the call approved; run nothing."
  (puthash (plist-get agent-q-call-context :id) t agent-q-acp--approved)
  "Approved in Emacs: the agent runs the call itself.")

(defun agent-q-acp--registry ()
  "The registry of agent_acp_call, made on first use."
  (or agent-q-acp--registry
      (let ((registry (agent-q-make-registry)))
        (agent-q-register-tool
         (agent-q-define-tool
          agent-q-acp-call-tool
          "A tool call that an agent over ACP (agent-shell) asks permission for.  Approving it lets the agent make it."
          '((:name "title" :type :string :description "The agent's title of the call")
            (:name "kind" :type :string :description "The ACP kind of the call")
            (:name "input" :type :string :description "The call's input, as JSON"))
          :required '("title")
          :safety-level :dangerous
          :categories '(:execution)
          :handler #'agent-q-acp--approve)
         registry)
        (setq agent-q-acp--registry registry))))

(defun agent-q-acp--ask (key tool-call context answer)
  "Ask about TOOL-CALL from CONTEXT in agent-q's prompt; ANSWER gets t or nil.
KEY names the question."
  (let* ((id (format "%s-call" key))
         (raw (or (agent-q-acp--get tool-call :raw-input) (agent-q-acp--get tool-call 'rawInput)))
         (args (list :title (agent-q-acp--title tool-call)
                     :kind (agent-q-acp--kind tool-call)
                     :input (if raw (json-encode raw) "{}")))
         (cwd (plist-get context :cwd))
         (label (plist-get context :label))
         (batch nil))
    (agent-q-acp--register key context
                           (lambda (why) (when batch (agent-q-cancel-batch batch why)))
                           answer)
    (setq batch
          (agent-q--execute-async
           (list (list :id id :name agent-q-acp-call-tool :arguments args))
           (lambda (results)
             (let ((approved (gethash id agent-q-acp--approved)))
               (remhash id agent-q-acp--approved)
               (when (agent-q-acp--done key)
                 (funcall answer (and approved (plist-get (car results) :success) t)))))
           (agent-q-acp--registry)
           :client (list :client label
                         :mcp-client (agent-q-rules-agent-client
                                      (symbol-name (plist-get context :agent)))
                         :channel (format "acp %s" (plist-get context :session)))
           :confirm '(:dangerous)
           :audit-all t
           :workspace (list :directories (and cwd (list cwd))
                            :source (format "the working directory of %s" label))))))

;;;; Edits: agent-q's review

(defconst agent-q-acp--review-note
  "over ACP: accept every hunk to allow the edit; a rejected or edited hunk rejects it all (ACP carries neither a partial edit nor a reason)"
  "What the review's header says about an ACP agent's edit.")

(defun agent-q-acp--proposal (file old new)
  "The review of FILE going from OLD to NEW: (CURRENT PROPOSAL NOTE).
CURRENT is the text of FILE (its buffer's, else on disk, else \"\").
OLD is the whole file (Gemini CLI), nil or \"\" for a new file, or a
fragment of it (Claude's Edit): the proposal replaces it.  A fragment
not found once in the file is reviewed alone."
  (let* ((buffer (find-buffer-visiting file))
         (current (cond (buffer (with-current-buffer buffer
                                  (save-restriction (widen) (buffer-substring-no-properties
                                                             (point-min) (point-max)))))
                        ((file-readable-p file)
                         (with-temp-buffer (insert-file-contents file) (buffer-string)))
                        (t ""))))
    (cond
     ((or (null old) (equal old current) (and (equal old "") (equal current "")))
      (list current new nil))
     ((and (not (equal old ""))
           (let ((at (string-search old current)))
             (and at (not (string-search old current (1+ at))))))
      (let ((at (string-search old current)))
        (list current (concat (substring current 0 at) new (substring current (+ at (length old))))
              nil)))
     (t (list old new "the agent's change, shown alone: its old text is not found once in the file")))))

(defun agent-q-acp--review (key diffs tool-call context answer)
  "Decide DIFFS of TOOL-CALL from CONTEXT; ANSWER gets t or nil.
KEY names the question.  Each diff (FILE OLD NEW) becomes a call of
the gate's agent_edit (lisp/agent-q-gate-edit.el), run by the
executor like the terminal agents' own edits: a deny rule rejects it
unshown, an allow rule covering a file that is not protected allows
it unreviewed, otherwise the per-hunk review is its approval; the
pending list, the mode line and the audit count it, and withdrawing
the question (`session/cancel', the agent exiting) withdraws the calls
and closes their reviews, audited as withdrawn.  ANSWER gets t only
when every file's edit was accepted as proposed: ACP carries neither
a partial edit nor a reason."
  (ignore tool-call)
  (let* ((label (plist-get context :label))
         (cwd (plist-get context :cwd))
         (agent (plist-get context :agent))
         (client (agent-q-rules-agent-client (symbol-name agent)))
         (files nil) (calls nil)
         ;; Journalled only once the agent is told yes: it then writes
         ;; every file, and none when one is rejected.
         (records nil)
         (journal-later (lambda (&rest record) (push record records))))
    (cl-loop for (file old new) in diffs
             for index from 0
             do (let* ((file (expand-file-name file cwd))
                       (id (format "%s-edit-%d" key index)))
                  (pcase-let ((`(,current ,proposal ,note) (agent-q-acp--proposal file old new)))
                    (puthash id (list :current current :proposal proposal :label label
                                      :mcp-client client :whole t
                                      ;; Who, for a trust (`agent-q-trust-agent').
                                      :agent (symbol-name agent)
                                      :session (plist-get context :session) :cwd cwd
                                      :journal-later journal-later
                                      :description
                                      (concat (plist-get context :name) " " agent-q-acp--review-note
                                              (if note (concat "; " note) "")))
                             agent-q-gate-edit--proposals)
                    (push (list id proposal) files)
                    (push (list :id id :name agent-q-gate-edit-tool :arguments (list :path file))
                          calls))))
    (setq files (nreverse files) calls (nreverse calls))
    (agent-q-acp--register key context
                           ;; By the calls' ids: a withdrawal may come while
                           ;; the batch starts (a review opening).
                           (lambda (why)
                             (let ((ids (mapcar #'car files)))
                               (agent-q-cancel-pending
                                (lambda (call) (member (plist-get call :id) ids))
                                why)))
                           answer)
    (agent-q--execute-async
           calls
           (lambda (results)
             (let ((allowed
                    (and (= (length results) (length files))
                         (cl-every (lambda (r) (plist-get r :success)) results)
                         (cl-every (lambda (f) (equal (gethash (car f) agent-q-gate-edit--outcomes)
                                                      (cadr f)))
                                   files))))
               (dolist (f files)
                 (remhash (car f) agent-q-gate-edit--outcomes)
                 (remhash (car f) agent-q-gate-edit--proposals))
               (when (agent-q-acp--done key)
                 (when (and allowed (require 'agent-q-journal nil t))
                   (dolist (record (reverse records))
                     (apply #'agent-q-journal-record record)))
                 (funcall answer allowed))))
           (agent-q-gate--registry)
           :client (list :client label :mcp-client client
                         :channel (format "acp %s" (plist-get context :session)))
           :confirm '(:dangerous)
           :audit-all t
           :workspace (list :directories (and cwd (list cwd))
                            :source (format "the working directory of %s" label)))))

;;;; agent-q's MCP server for the agents

(defun agent-q-acp--ensure-server ()
  "Start the MCP server of agent-q if needed; signal a `user-error' if it cannot."
  (require 'agent-q-mcp)
  (unless (agent-q-mcp-running-p)
    (if agent-q-acp-start-server
        (agent-q-mcp-start)
      (user-error "The MCP server of agent-q is not running: M-x agent-q-mcp-start, then start the session again")))
  (unless (and (stringp agent-q-mcp--url) (stringp agent-q-mcp--token))
    (user-error "The MCP server of agent-q did not start")))

(defun agent-q-acp-mcp-url ()
  "The URL of agent-q's MCP server, starting it if needed.
See `agent-q-acp-start-server'."
  (agent-q-acp--ensure-server)
  agent-q-mcp--url)

(defun agent-q-acp-mcp-headers ()
  "The HTTP headers for agent-q's MCP server: its current bearer token."
  (agent-q-acp--ensure-server)
  (vector `((name . "Authorization") (value . ,(concat "Bearer " agent-q-mcp--token)))))

(defun agent-q-acp-mcp-server-entry ()
  "The entry of agent-q in `agent-shell-mcp-servers'.
Its url and headers are literal lambdas, which agent-shell evaluates
at each session start (it evaluates no other function there), so that
each session gets the server running then and its current token."
  `((name . ,agent-q-acp-server-name)
    (type . "http")
    (url . (lambda () (agent-q-acp-mcp-url)))
    (headers . (lambda () (agent-q-acp-mcp-headers)))))

;;;; The mode

(defvar agent-q-acp--saved-responder nil
  "The value of `agent-shell-permission-responder-function' before the mode.")

(defvar agent-q-acp--added-entry nil
  "The entry the mode added to `agent-shell-mcp-servers', or nil.")

;;;###autoload
(define-minor-mode agent-q-agent-shell-mode
  "Make agent-q answer the permission requests of agents in agent-shell.
While it is on, `agent-shell-permission-responder-function' is
`agent-q-acp-respond': each `session/request_permission' of an agent
over ACP (Gemini CLI, Claude, Codex in agent-shell) is decided like the
same kind of call from a terminal agent's own tools (see
`agent-q-gate-mode'): commands and fetches by the approval rules, else
the prompt; reads by the read guard; edits with diffs by agent-q's
hunk review (every hunk accepted allows the edit, any rejected rejects
it: ACP carries no partial edit and no reason).  Requests with no rule
are asked in agent-q, or left to agent-shell (`agent-q-acp-unruled').
agent-q answers allow_once or reject_once, never allow_always.

The mode also adds agent-q's MCP server (HTTP, with the token current
at each session start) to `agent-shell-mcp-servers', so that new
sessions get agent-q's tools; the server is started when a session
starts if it is not running (`agent-q-acp-start-server').

Turning it off restores both variables and rejects the requests
still waiting for an answer in agent-q."
  :global t
  :group 'agent-q-acp
  (if agent-q-agent-shell-mode
      (progn
        (unless (eq (and (boundp 'agent-shell-permission-responder-function)
                         agent-shell-permission-responder-function)
                    #'agent-q-acp-respond)
          (setq agent-q-acp--saved-responder
                (and (boundp 'agent-shell-permission-responder-function)
                     agent-shell-permission-responder-function)))
        (setq agent-shell-permission-responder-function #'agent-q-acp-respond)
        (let ((servers (and (boundp 'agent-shell-mcp-servers) agent-shell-mcp-servers)))
          (unless (and agent-q-acp--added-entry (member agent-q-acp--added-entry servers))
            (setq agent-q-acp--added-entry (agent-q-acp-mcp-server-entry))
            (setq agent-shell-mcp-servers (append servers (list agent-q-acp--added-entry)))))
        (advice-add 'acp-send-notification :after #'agent-q-acp--notification-sent)
        (advice-add 'acp-send-request :before #'agent-q-acp--request-sent))
    (when (eq (and (boundp 'agent-shell-permission-responder-function)
                   agent-shell-permission-responder-function)
              #'agent-q-acp-respond)
      (setq agent-shell-permission-responder-function agent-q-acp--saved-responder))
    (setq agent-q-acp--saved-responder nil)
    (when (and agent-q-acp--added-entry (boundp 'agent-shell-mcp-servers))
      (setq agent-shell-mcp-servers (remove agent-q-acp--added-entry agent-shell-mcp-servers)))
    (setq agent-q-acp--added-entry nil)
    (advice-remove 'acp-send-notification #'agent-q-acp--notification-sent)
    (advice-remove 'acp-send-request #'agent-q-acp--request-sent)
    ;; The agents still wait for these: they are rejected, not left hanging.
    (agent-q-acp--withdraw-if (lambda (_s _p) t) "agent-q-agent-shell-mode was turned off" t)))

(provide 'agent-q-acp)

;;; agent-q-acp.el ends here
