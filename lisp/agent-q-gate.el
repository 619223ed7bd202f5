;;; agent-q-gate.el --- The terminal agents' own tools, decided in Emacs  -*- lexical-binding: t -*-

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

;; Claude Code, Gemini CLI and Codex CLI run a command of the user's
;; before each call of their own tools (their hooks); `agent-q-mcp hook
;; --agent AGENT' is that command: it hands the call to the MCP server
;; of this Emacs (its /gate route) and waits for the answer.  With
;; `agent-q-gate-mode' on, while the server runs, those calls come here
;; (lisp/agent-q-mcp.el hands them over as it drains the server) and are
;; decided as agent-q's own calls are.
;;
;; A shell command (Claude's Bash, Gemini's run_shell_command, Codex's
;; Bash) becomes a call of the dangerous tool shell_command, of a
;; registry of this file's own that no client is offered, run through
;; the asynchronous executor: so the approval rules (with their
;; :command and :agent keys, see `agent-q-approval-rules'), the prompt
;; and its keys (e edits the command that will run), the pending list,
;; the mode-line count and the audit log (naming the agent and its
;; session) all apply.  Its handler runs nothing: it records the
;; command approved, which the agent then runs itself.  Approved, the
;; hook answers allow (with the edited command, when the user edited
;; it); denied, deny with the executor's words as the reason.  The
;; agent interrupted while its call waits, the call is withdrawn: its
;; prompt goes away and the audit says so.
;;
;; A read (Claude's Read, Gemini's read_file and read_many_files)
;; becomes one call per file of the private safe tool agent_read, whose
;; guard is agent-q's read guard with the agent's working directory as
;; the only allowed directory: a file in it is read without asking
;; (allow, audited), a sensitive file (`agent-q-sensitive-file-patterns',
;; Emacs's private files), a file outside it, a remote file or a glob
;; (read_many_files) is asked.  A fetch (Claude's WebFetch, Gemini's
;; web_fetch) becomes one call per URL of the private dangerous tool
;; agent_fetch, decided by the :domain approval rules, else asked; the
;; fetch itself is the agent's.
;;
;; An edit (Claude's Edit, MultiEdit and Write, Gemini's replace and
;; write_file, Codex's apply_patch) goes through agent-q's per-hunk
;; review, one call of the private tool agent_edit for each file, and
;; the agent writes exactly the hunks the user accepted: see
;; lisp/agent-q-gate-edit.el.
;;
;; When such a call starts waiting for the user, who may be looking at
;; the agent's terminal, Emacs says so (`agent-q-gate-notify').
;;
;; A search (Claude's Grep and Glob, Gemini's grep_search and glob)
;; becomes one call of the private safe tool agent_search, whose guard
;; is the read guard on the folder (or file) searched, the agent's
;; working directory being the workspace: a search outside it or of a
;; sensitive file is asked; a search of a folder inside it is decided
;; by the core's walk of the files its globs select, bounded in
;; entries and time: unasked when none is sensitive, asked when one
;; is, and, when the walk was cut, asked when the globs may reach a
;; sensitive name (the core decides: a glob such as **/*, *.env* or
;; .e*, or no glob at all).
;;
;; The other tools (notebooks, unknown tools) are not decided
;; here: they are left to the agent (`agent-q-gate-other-tools').

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'json)
(require 'agent-q)
(require 'agent-q-async)
(require 'agent-q-rules)
(require 'agent-q-guard)
(require 'agent-q-prompt)
(require 'agent-q-gate-edit)

(declare-function agent-q-journal-record "agent-q-journal" (&rest plist))
(declare-function agent-q-journal-turn "agent-q-journal" (&rest plist))
(declare-function agent-q--core-mcp-set-gating "agent-q-core" (on))
(declare-function agent-q--core-mcp-gate-answer "agent-q-core" (key decision detail))
(declare-function agent-q--core-gate-walk-search "agent-q-core"
                  (directory globs patterns decorations))
(declare-function agent-q--visible "agent-q-prompt" (text))
(declare-function agent-q-prompt-unasked-p "agent-q-prompt" (tool-name args context))
(declare-function agent-q-prompt-edit-note "agent-q-prompt" (agent))
(declare-function agent-q-approve-in-minibuffer "agent-q-prompt" (tool-name args))
(declare-function agent-q-mcp-running-p "agent-q-mcp" ())
(declare-function notifications-notify "notifications" (&rest params))

(defvar agent-q-mcp-gate-function)
(defvar agent-q-prompt-deadline-function)
(defvar agent-q-mcp-start-hook)
(defvar agent-q-mcp-stop-hook)

;;;; Options

(defgroup agent-q-gate nil
  "The terminal agents' own tools, decided in Emacs."
  :group 'agent-q
  :prefix "agent-q-gate-")

(defcustom agent-q-gate-other-tools 'no-opinion
  "What Emacs answers about an agent's own tool it does not decide yet.
Shell commands, reads, searches, fetches and edits (with writes and
patches) are decided in Emacs; notebook edits and unknown tools get
this answer.  `no-opinion'
leaves them to the agent, exactly as without the hook (its own rules
and prompt); `ask' makes the agent ask with its own prompt every time
\(under a non-interactive run, such as claude -p, that refuses them)."
  :type '(choice (const :tag "Leave them to the agent" no-opinion)
                 (const :tag "The agent's own prompt, every time" ask)))

(defcustom agent-q-gate-notify t
  "Whether Emacs says so when an agent's own tool call waits for the user.
The user may be looking at the agent's terminal, whose own prompt no
longer shows.  Non-nil: a desktop notification
\=(`notifications-notify') on a graphical display where one can be
sent, else a message in the echo area and `ding'."
  :type 'boolean)

(defconst agent-q-gate-shell-tool "shell_command"
  "The tool name of an agent's shell commands, in rules, prompt and audit.")

(defconst agent-q-gate-read-tool "agent_read"
  "The tool name of an agent's own reads, one file a call.")

(defconst agent-q-gate-search-tool "agent_search"
  "The tool name of an agent's own searches, one folder (or file) a call.")

(defconst agent-q-gate-fetch-tool "agent_fetch"
  "The tool name of an agent's own fetches, one URL a call.")

;;;; The private registry

(defvar agent-q-gate--registry nil
  "The registry of the gate's own tool, which no client is offered.")

(defvar agent-q-gate--approved (make-hash-table :test #'equal)
  "Call id -> the command its handler approved, until the call's batch ends.")

(defun agent-q-gate--approve (args)
  "The handler of shell_command: record ARGS' command as approved; run nothing.
ARGS is the hash table of the call's arguments, edited by the user
when they were."
  (let ((command (gethash "command" args)))
    (puthash (plist-get agent-q-call-context :id) command agent-q-gate--approved)
    (when (and (stringp command) (require 'agent-q-journal nil t))
      (agent-q-journal-record :context agent-q-call-context :command command
                              :file (gethash "directory" args)))
    "Approved in Emacs: the agent runs the command itself."))

(defun agent-q-gate--approve-read (args)
  "The handler of agent_read: record ARGS' path as approved; read nothing."
  (puthash (plist-get agent-q-call-context :id) (gethash "path" args) agent-q-gate--approved)
  "Approved in Emacs: the agent reads the file itself.")

(defun agent-q-gate--approve-search (args)
  "The handler of agent_search: record ARGS' path as approved; search nothing."
  (puthash (plist-get agent-q-call-context :id) (gethash "path" args) agent-q-gate--approved)
  "Approved in Emacs: the agent searches itself.")

(defun agent-q-gate--approve-fetch (args)
  "The handler of agent_fetch: record ARGS' URL as approved; fetch nothing."
  (puthash (plist-get agent-q-call-context :id) (gethash "url" args) agent-q-gate--approved)
  "Approved in Emacs: the agent fetches the URL itself.")

(defun agent-q-gate--read-guard (args)
  "The guard of agent_read: why reading ARGS' path needs asking, or nil.
agent-q's read guard, the agent's working directory being the
workspace (see `agent-q-gate--start'); a glob is always asked."
  (let ((path (gethash "path" args)))
    (cond
     ((not (and (stringp path) (not (string-empty-p path))))
      "the agent names no file")
     ((and (string-match-p "[*?[]" path) (not (file-remote-p path)) (not (file-exists-p path)))
      (format "%s is a glob: the files it reads are not known before they are read" path))
     (t (agent-q-guard-file-verdict (agent-q-builtins--guarded-name path))))))

(defun agent-q-gate--emacs-directory-reason (directory)
  "Why searching DIRECTORY needs asking because of Emacs's own directory, or nil.
In or above `user-emacs-directory', a glob of ordinary names (*.el)
can reach Emacs's private files (transient/history.el, no-littering's
var/), which the core's catalogue of sensitive names leaves out."
  (let ((dir (file-name-as-directory (file-truename directory))))
    (cl-some (lambda (emacs)
               (and (or (string-prefix-p dir emacs) (string-prefix-p emacs dir))
                    (format "%s is in or above Emacs's own directory %s, which holds its private files"
                            dir emacs)))
             (agent-q-guard--emacs-directories))))

(defun agent-q-gate--walk-patterns ()
  "Return the regexps of sensitive files for a search's walk.
They are `agent-q-sensitive-file-patterns' and, for each of Emacs's
private places (see `agent-q-sensitive-file-variables'), a regexp
matching it and, for a directory, what lies under it."
  (append agent-q-sensitive-file-patterns
          (mapcar (lambda (place)
                    (concat "\\`" (regexp-quote (car place)) (if (cdr place) "/" "\\'")))
                  (agent-q-guard--private-places))))

(defun agent-q-gate--walk-reason (directory glob)
  "Why a search of DIRECTORY through the globs GLOB can read a sensitive file.
nil when the core's walk of DIRECTORY found that none of the files
GLOB selects (a string of globs separated by spaces; nil: every file)
is sensitive (see `agent-q--core-gate-walk-search'); else words
naming the file it can reach, or (:cut WHY) when the walk stopped
before it checked everything.  The backup, auto-save and lock files
the walk hands back are judged by `agent-q-guard-sensitive-match'."
  (let ((walk (agent-q--core-gate-walk-search
               directory (and (stringp glob) (split-string glob "[ \t\n]+" t))
               (agent-q-gate--walk-patterns) (mapcar #'car agent-q-guard--decorations))))
    (pcase walk
      ((pred stringp) walk)
      (`(cut . ,why) (list :cut why))
      (_
       (cl-some (lambda (file)
                 (let ((match (agent-q-guard-sensitive-match file)))
                   (and match
                        (format "the search can reach %s (it stands for %s, sensitive by %s)"
                                (file-relative-name file directory) (cdr match) (car match)))))
                walk)))))

(defun agent-q-gate--search-guard (args)
  "The guard of agent_search: why the search ARGS describe needs asking, or nil.
Its path, a folder or a file, is judged by agent-q's read guard with
the agent's working directory as the workspace: outside it, remote or
sensitive, it is asked; so is a folder in or above
`user-emacs-directory'.  A folder is walked
\=(`agent-q-gate--walk-reason'): the search is asked when a file its
globs select is sensitive.  When the walk was cut (a large folder),
the core's judgment of the globs alone decides: asked when they may
reach a sensitive name (ARGS' reach, from the core's `search_reach':
a search with no glob reaches every file), saying why.  A name that
does not exist yet is asked when they may."
  (let* ((path (gethash "path" args))
         (reach (gethash "reach" args))
         (name (agent-q-builtins--guarded-name path))
         (local (and name (not (agent-q-builtins--remote-p name))))
         (directory-p (and local (file-directory-p name))))
    (or (cond
         ((not name) "the agent names no folder to search")
         ;; A folder has several links (its entries' ..): judged without them.
         (directory-p (or (agent-q-builtins--guard-reason (file-name-as-directory name))
                          (agent-q-gate--emacs-directory-reason name)))
         (t (agent-q-guard-file-verdict name)))
        (let ((reach (and (stringp reach) (not (string-empty-p reach)) reach)))
          (cond
           (directory-p
            (pcase (agent-q-gate--walk-reason name (gethash "glob" args))
              ('nil nil)
              (`(:cut ,why)
               (and reach (format "the search of %s may read sensitive files: %s; %s"
                                  path reach why)))
              (found (format "%s (searching %s)" found path))))
           ((and reach local (not (file-exists-p name)))
            (format "the search of %s may read sensitive files: %s" path reach)))))))

(defun agent-q-gate--registry ()
  "The gate's registry, made on first use."
  (or agent-q-gate--registry
      (let ((registry (agent-q-make-registry)))
        (agent-q-register-tool
         (agent-q-define-tool
          agent-q-gate-shell-tool
          "A shell command that a terminal agent (Claude Code, Gemini CLI, Codex CLI) is about to run with its own tool.  Approving it lets the agent run it; editing the command changes what runs."
          '((:name "command" :type :string :description "The shell command line")
            (:name "directory" :type :string :description "The directory it runs in"))
          :required '("command")
          :safety-level :dangerous
          :categories '(:execution)
          :handler #'agent-q-gate--approve)
         registry)
        (agent-q-register-tool
         (agent-q-define-tool
          agent-q-gate-read-tool
          "A file that a terminal agent is about to read with its own tool.  Approving it lets the agent read it."
          '((:name "path" :type :string :description "The file (or glob) read"))
          :required '("path")
          :safety-level :safe
          :categories '(:filesystem)
          :guard #'agent-q-gate--read-guard
          :handler #'agent-q-gate--approve-read)
         registry)
        (agent-q-register-tool
         (agent-q-define-tool
          agent-q-gate-search-tool
          "A search of files' names or contents that a terminal agent is about to run with its own tool.  Approving it lets the agent search."
          '((:name "path" :type :string :description "The folder (or file) searched")
            (:name "glob" :type :string :description "The globs choosing the files searched")
            (:name "reach" :type :string
                   :description "Why agent-q found that the globs may reach a sensitive file"))
          :required '("path")
          :safety-level :safe
          :categories '(:filesystem)
          :guard #'agent-q-gate--search-guard
          :handler #'agent-q-gate--approve-search)
         registry)
        (agent-q-register-tool
         (agent-q-define-tool
          agent-q-gate-fetch-tool
          "A URL that a terminal agent is about to fetch with its own tool.  Approving it lets the agent fetch it."
          '((:name "url" :type :string :description "The URL fetched"))
          :required '("url")
          :safety-level :dangerous
          :categories '(:network)
          :handler #'agent-q-gate--approve-fetch)
         registry)
        (agent-q-gate-edit-register registry)
        (setq agent-q-gate--registry registry))))

(defun agent-q-gate-call-agent (context)
  "The agent (\"claude\", \"gemini\"...) whose own call CONTEXT describes.
CONTEXT is an `agent-q-approval-context'.  Nil unless its tool is
one of the gate's private registry -- no client can call those --
whose registration (:tool-id) it names.  The prompt's \"a\" then
approves the tool for that agent, every session of it, and its \"s\"
saves a rule limited by :agent."
  (let ((id (plist-get context :tool-id))
        (tool (plist-get context :tool))
        (client (plist-get context :mcp-client)))
    (and id (stringp tool) (stringp client) agent-q-gate--registry
         (eql id (ignore-errors
                   (agent-q-tool-id (agent-q-get-tool tool agent-q-gate--registry))))
         (cl-find-if (lambda (agent) (equal client (agent-q-rules-agent-client agent)))
                     agent-q-rules-agents))))

;;;; Requests

(defvar agent-q-gate--requests (make-hash-table :test #'equal)
  "Gate requests being decided: their key -> their batch.")

(defvar agent-q-gate--answerers (make-hash-table :test #'equal)
  "Key -> the function that answers a request that did not come from the server.
See `agent-q-gate-request'.")

(defvar agent-q-gate--deadlines (make-hash-table :test #'eq :weakness 'key)
  "Batch of a gate request -> when its agent stops waiting (`float-time').")

(defvar agent-q-gate--run "0"
  "What makes the gate's call ids unique across the server's starts.")

(defconst agent-q-gate--max-session-chars 36
  "The most characters of an agent's session id shown to the user.")

(defun agent-q-gate--label (agent session)
  "How the prompt, the pending list and the audit name AGENT's SESSION."
  (let ((session (agent-q--visible (or session ""))))
    (concat (agent-q-rules-agent-client (symbol-name agent))
            (if (string-empty-p session)
                ""
              (concat " " (truncate-string-to-width
                           session agent-q-gate--max-session-chars nil nil "..."))))))

(defun agent-q-gate--answer (key decision &optional detail)
  "Answer the gate request KEY with DECISION and DETAIL; never signal.
DECISION is `allow', `deny', `ask' or `no-opinion'; DETAIL is the
reason (deny, ask) or the updated tool input as JSON text (allow)."
  (let ((answerer (gethash key agent-q-gate--answerers)))
    (remhash key agent-q-gate--answerers)
    (condition-case err
        (cond (answerer (funcall answerer decision detail))
              ;; Not the server's: withdrawn, or answered already.
              ((integerp key) (agent-q--core-mcp-gate-answer key decision detail)))
      (error (message "agent-q: cannot answer the agent's hook: %s"
                      (error-message-string err))
             nil))))

(defun agent-q-gate-request (key props &optional answerer)
  "Decide the gate request KEY, described by PROPS (see `agent-q--core-mcp-take').
KEY is the server's number for it; or, with ANSWERER, any string
unique among the requests being decided.  ANSWERER, a function of
DECISION and DETAIL (see `agent-q-gate--answer'), is then called
once with the answer instead of the server's hook."
  (when answerer
    (puthash key answerer agent-q-gate--answerers))
  (let ((kind (plist-get props :kind)))
    (pcase (plist-get kind :kind)
      ("shell" (agent-q-gate--shell key props kind))
      ("read" (agent-q-gate--each key props agent-q-gate-read-tool :path
                                  (agent-q-gate--read-paths props (plist-get kind :paths))))
      ("search" (agent-q-gate--search key props kind))
      ("fetch" (agent-q-gate--each key props agent-q-gate-fetch-tool :url
                                   (agent-q-gate--strings (plist-get kind :urls))))
      ((or "edit" "write" "patch") (agent-q-gate-edit-request key props kind))
      ("agent-q" (agent-q-gate--answer key 'no-opinion))
      (_ (agent-q-gate--answer key agent-q-gate-other-tools)))))

(defun agent-q-gate--cwd (props)
  "The agent's working directory in PROPS, or nil."
  (let ((cwd (plist-get props :cwd)))
    (and (stringp cwd) (file-name-absolute-p cwd) (not (file-remote-p cwd)) cwd)))

(defun agent-q-gate--strings (items)
  "The non-empty strings of the vector or list ITEMS, without duplicates."
  (delete-dups (cl-remove-if-not (lambda (x) (and (stringp x) (not (string-empty-p x))))
                                 (append items nil))))

(defun agent-q-gate--read-paths (props paths)
  "PATHS, the files of a read in PROPS, expanded from the agent's directory.
A relative name without a working directory is left as it is: the
guard then finds it outside the (empty) workspace.  A remote name is
left as given (expanding it may connect)."
  (let ((cwd (agent-q-gate--cwd props)))
    (mapcar (lambda (path)
              (if (or (file-remote-p path) (not (or cwd (file-name-absolute-p path))))
                  path
                (expand-file-name path cwd)))
            (agent-q-gate--strings paths))))

(defvar agent-q-gate--calls (make-hash-table :test #'equal)
  "Call id -> what the prompt shows of the agent's call, until it is decided.
A plist: :agent (its name, \"claude\"...), :session (the agent's
session id, whole), :description (the agent's own words for the call,
such as Claude's Bash description) and :cwd.")

(defun agent-q-gate-call-info (context)
  "What the agent said of the call CONTEXT describes, or nil.
CONTEXT is an `agent-q-approval-context'; the answer a plist (see
`agent-q-gate--calls'), only for a call of the gate's own registry."
  (and (agent-q-gate-call-agent context)
       (gethash (plist-get context :id) agent-q-gate--calls)))

(defun agent-q-gate--description (props)
  "The agent's own description of the call in PROPS, or nil."
  (let* ((input (plist-get props :input))
         (text (and (listp input) (plist-get input :description))))
    (and (stringp text) (not (string-empty-p (string-trim text))) text)))

(defun agent-q-gate--start (key props call-list callback what)
  "Hand the executor CALL-LIST, the tool call plists of the request KEY (PROPS).
CALLBACK gets their results.  Their workspace is the agent's
working directory.  WHAT describes the request for a notification."
  (let* ((agent (plist-get props :agent))
         ;; :label: how a request not from the hooks names its agent (agent-q-acp.el).
         (label (or (plist-get props :label)
                    (agent-q-gate--label agent (plist-get props :session))))
         (cwd (agent-q-gate--cwd props))
         (ids (mapcar (lambda (call) (plist-get call :id)) call-list))
         (info (list :agent (symbol-name agent)
                     :session (let ((session (plist-get props :session)))
                                (and (stringp session) (not (string-empty-p session))
                                     session))
                     :description (agent-q-gate--description props)
                     :cwd cwd
                     ;; Known before the batch starts: a review that is its
                     ;; approval opens at once (see `agent-q-gate--deadline').
                     :deadline (let ((wait (plist-get props :wait-secs)))
                                 (and (natnump wait) (+ (float-time) wait)))))
         (batch (progn
                  (dolist (id ids) (puthash id info agent-q-gate--calls))
                  (agent-q--execute-async
                   call-list
                   (lambda (results)
                     (dolist (id ids) (remhash id agent-q-gate--calls))
                     (funcall callback results))
                   (agent-q-gate--registry)
                   :client (list :client label
                                 :mcp-client (agent-q-rules-agent-client (symbol-name agent))
                                 :channel (format "gate %s %s" agent (plist-get props :session)))
                   :confirm '(:dangerous)
                   :audit-all t
                   :workspace (list :directories (and cwd (list cwd))
                                    :source (format "the working directory of %s" label))))))
    (puthash key batch agent-q-gate--requests)
    (when (plist-get info :deadline)
      (puthash batch (plist-get info :deadline) agent-q-gate--deadlines))
    (agent-q-gate--notify-if-waiting batch label what)))

(defun agent-q-gate--deadline ()
  "When the agent of the call being asked stops waiting, or nil.
The call being asked, or the one whose handler is starting (an edit's
review).  See `agent-q-prompt-deadline-function'."
  (let ((pending (or agent-q--starting agent-q--asking)))
    (and pending
         (or (gethash (agent-q--pending-batch pending) agent-q-gate--deadlines)
             ;; A handler starting before `agent-q-gate--start' returned.
             (and agent-q--starting
                  (plist-get (gethash (plist-get agent-q-call-context :id)
                                      agent-q-gate--calls)
                             :deadline))))))

(defun agent-q-gate--each (key props tool arg values)
  "Decide the gate request KEY (PROPS): one call of TOOL for each of VALUES.
ARG is the argument that holds a value.  Allowed only when every call
is; else denied with the words of the first call that was not."
  (if (null values)
      (agent-q-gate--answer key 'ask (format "agent-q found no %s in the call"
                                             (if (eq arg :url) "URL" "file")))
    (let* ((ids (cl-loop for _ in values for i from 0
                         collect (format "gate-%s-%s-%d" agent-q-gate--run key i)))
           (calls (cl-mapcar (lambda (id value) (list :id id :name tool :arguments (list arg value)))
                             ids values)))
      (agent-q-gate--start
       key props calls
       (lambda (results) (agent-q-gate--decided-each key ids results))
       (format "%s %s" (if (eq arg :url) "fetch" "read") (string-join values ", "))))))

(defun agent-q-gate--search (key props kind)
  "Decide the search of the gate request KEY (PROPS, its KIND): one agent_search.
Its path is the one KIND names, else the agent's working directory,
expanded from that directory."
  (let* ((given (plist-get kind :path))
         (path (car (agent-q-gate--read-paths
                     props (list (if (and (stringp given) (not (string-empty-p given)))
                                     given
                                   (or (agent-q-gate--cwd props) ""))))))
         (globs (agent-q-gate--strings (plist-get kind :globs)))
         (reach (plist-get kind :reach))
         (id (format "gate-%s-%s-0" agent-q-gate--run key)))
    (if (not path)
        (agent-q-gate--answer key 'ask "agent-q found no folder to search in the call")
      (agent-q-gate--start
       key props
       (list (list :id id :name agent-q-gate-search-tool
                   :arguments (append (list :path path)
                                      (and globs (list :glob (string-join globs " ")))
                                      (and (stringp reach) (list :reach reach)))))
       (lambda (results) (agent-q-gate--decided-each key (list id) results))
       (format "search %s%s" path
               (if globs (format " (%s)" (string-join globs " ")) ""))))))

(defun agent-q-gate--denial (result)
  "The reason given to the agent for the call that ended with RESULT."
  (let ((content (plist-get result :content)))
    (if (and (stringp content) (not (string-empty-p content)))
        content
      "Denied in Emacs (agent-q)")))

(defun agent-q-gate--decided-each (key ids results)
  "Answer the gate request KEY: IDS, the ids of its call list; RESULTS."
  (remhash key agent-q-gate--requests)
  (let ((failed nil))
    (cl-loop for id in ids
             for result in results
             do (progn
                  (unless (or failed (and (plist-get result :success)
                                          (gethash id agent-q-gate--approved)))
                    (setq failed (list result)))
                  (remhash id agent-q-gate--approved)))
    (if (or failed (/= (length results) (length ids)))
        (agent-q-gate--answer key 'deny (agent-q-gate--denial (car failed)))
      (agent-q-gate--answer key 'allow))))

(defun agent-q-gate--shell (key props kind)
  "Decide the shell command of the gate request KEY (PROPS, its KIND)."
  (let* ((command (plist-get kind :command))
         (directory (let ((dir (plist-get kind :dir))
                          (cwd (plist-get props :cwd)))
                      (cond ((and (stringp dir) (not (string-empty-p dir))) dir)
                            ((and (stringp cwd) (not (string-empty-p cwd))) cwd))))
         (id (format "gate-%s-%s" agent-q-gate--run key)))
    (if (not (stringp command))
        (agent-q-gate--answer key 'ask "agent-q could not read the command")
      (agent-q-gate--start
       key props
       (list (list :id id :name agent-q-gate-shell-tool
                   :arguments (append (list :command command)
                                      (and directory (list :directory directory)))))
       (lambda (results) (agent-q-gate--decided key id command props (car results)))
       (format "run %s" command)))))

(defun agent-q-gate--updated-input (props command)
  "The tool input of PROPS, its command replaced by COMMAND, as JSON text."
  (let ((input (copy-sequence (plist-get props :input))))
    (json-encode (plist-put input :command command))))

(defun agent-q-gate--decided (key id command props result)
  "Answer the gate request KEY, whose call ID ended with RESULT.
COMMAND is the command the agent asked to run, PROPS the request."
  (remhash key agent-q-gate--requests)
  (let ((approved (gethash id agent-q-gate--approved)))
    (remhash id agent-q-gate--approved)
    (cond
     ((and (plist-get result :success) (stringp approved))
      (let ((edited (not (equal approved command))))
        (agent-q-gate--answer key 'allow
                              (and edited (agent-q-gate--updated-input props approved)))
        (when edited
          (message "agent-q: %s runs your edited command: %s.  %s"
                   (agent-q-gate--label (plist-get props :agent) nil)
                   (truncate-string-to-width (agent-q--visible approved) 200 nil nil "...")
                   (agent-q-prompt-edit-note (plist-get props :agent))))))
     (t (agent-q-gate--answer key 'deny (agent-q-gate--denial result))))))

;;;; Telling the user

(defun agent-q-gate--notice-label (label)
  "LABEL, as a notice names the agent: a long session id cut short.
The label's last word, when it is a session id longer than a dozen
characters (an ACP or Claude session's UUID), is cut to the prompt's
short form (`agent-q-prompt--short-session-chars') and an ellipsis,
so that the notice has room for what waits."
  (if (string-match " \\([^ ]\\{13,\\}\\)\\'" label)
      (concat (substring label 0 (match-beginning 1))
              (substring (match-string 1 label) 0 agent-q-prompt--short-session-chars)
              "…")
    label))

(defun agent-q-gate--notify-if-waiting (batch label what)
  "Tell the user when a call of BATCH waits for their decision: LABEL would WHAT.
Only a call queued for the prompt counts: not one a rule or a grant
of the prompt's \"a\" decides unasked (see `agent-q-prompt-unasked-p'),
nor an edit under review, whose review says so itself (see
`agent-q-gate-edit--handler'), so that each call is told once."
  (when (and agent-q-gate-notify
             (cl-some (lambda (p)
                        (and (eq (agent-q--pending-batch p) batch)
                             (memq (agent-q--pending-state p) '(queued deferred asking))
                             ;; Queued, but a rule will decide it unasked.
                             (not (memq (car (agent-q--ruling
                                              (agent-q--pending-tool p)
                                              (agent-q--pending-args p)
                                              (agent-q--pending-context p)))
                                        '(allow deny)))
                             ;; Queued, but the prompt approves it unasked (a).
                             (not (and (eq agent-q-approval-function
                                           #'agent-q-approve-in-minibuffer)
                                       (agent-q-prompt-unasked-p
                                        (agent-q--pending-tool p)
                                        (agent-q--pending-args p)
                                        (agent-q--pending-context p))))))
                      agent-q--pending))
    (agent-q-gate--notify
     (format "%s waits for your decision in Emacs: %s"
             (agent-q-gate--notice-label label)
             (truncate-string-to-width (agent-q--visible what) 200 nil nil "...")))))

(defun agent-q-gate--notify (text)
  "Say TEXT: a desktop notification when possible, else a message and a beep."
  (unless (and (display-graphic-p)
               (require 'notifications nil t)
               (fboundp 'notifications-notify)
               (condition-case nil
                   (progn (notifications-notify :title "agent-q" :body text) t)
                 (error nil)))
    (message "agent-q: %s" text)
    (agent-q-gate--bell)))

(defun agent-q-gate--bell ()
  "Ring the bell, where a user hears it.
Not in batch Emacs, where the bell would go into its output."
  (unless noninteractive
    (ding t)))

(defun agent-q-gate-withdraw (key &optional why)
  "Withdraw the gate request KEY: its agent was interrupted.
WHY says why, for the model and the audit (default: the agent was
interrupted)."
  (let ((batch (gethash key agent-q-gate--requests)))
    (remhash key agent-q-gate--requests)
    (remhash key agent-q-gate--answerers)
    (when batch
      (agent-q-cancel-batch batch (or why "the agent withdrew the call (it was interrupted)")))))

(defun agent-q-gate-time-out (key seconds reason)
  "End the gate request KEY: its agent's hook timeout of SECONDS ran out.
The core has denied it to the agent, saying REASON; say it here too,
and audit it as a timeout.  It is said once the call's prompt is
gone: cancelling a call being asked leaves its prompt by a throw,
which would skip what follows, and the prompt's end would cover it."
  (let ((batch (gethash key agent-q-gate--requests)))
    (remhash key agent-q-gate--requests)
    (remhash key agent-q-gate--answerers)
    (when batch
      (run-at-time 0 nil #'agent-q-gate--notify reason)
      (agent-q-cancel-batch batch reason seconds))))

(defun agent-q-gate--event (event)
  "Act on EVENT, a gate item of `agent-q--core-mcp-take'."
  (pcase event
    (`(:gate ,key . ,props) (agent-q-gate-request key props))
    (`(:gate-withdrawn ,key) (agent-q-gate-withdraw key))
    (`(:gate-timed-out ,key ,seconds ,reason) (agent-q-gate-time-out key seconds reason))
    ;; The agent's prompt hook: a turn of its session begins, for the journal.
    (`(:turn ,agent ,session ,label)
     (when (require 'agent-q-journal nil t)
       (agent-q-journal-turn :agent (symbol-name agent) :session session :prompt label)))))

;;;; Turning it on and off

(defun agent-q-gate--server-started ()
  "Gate the agents' own tools on the server that has just started."
  (setq agent-q-gate--run (format "%d" (truncate (* 1000 (float-time)))))
  (agent-q--core-mcp-set-gating t))

(defun agent-q-gate--server-stopping ()
  "Withdraw every gate request: the server stops."
  (let ((keys (hash-table-keys agent-q-gate--requests)))
    (dolist (key keys)
      (agent-q-gate-withdraw key))))

;;;###autoload
(define-minor-mode agent-q-gate-mode
  "Decide in Emacs the terminal agents' own commands, reads, fetches, edits.
While it is on and the MCP server runs (`agent-q-mcp-start'), the hook
command `agent-q-mcp hook --agent AGENT', configured in an agent's
settings, hands each of the agent's own tool calls to Emacs.  A shell
command is then decided as agent-q's own calls are: by the approval
rules (with :command and :agent, see `agent-q-approval-rules'), else
by the prompt, counted in the mode line, listed by `agent-q-pending'
and audited under the name \"AGENT (own tools) SESSION\".  A read is
a call of agent_read for each file, judged by the read guard with the
agent's working directory as the allowed one; a search a call of
agent_search, judged so too, and asked when its globs may reach a
sensitive file; a fetch a call of
agent_fetch for each URL, decided by the :domain rules, else asked.
An edit (Edit, MultiEdit, Write, replace, write_file, apply_patch) is
a call of agent_edit for each file, whose approval is the per-hunk
review (unless an allow rule with :path covers a file that is not
protected): the agent writes exactly the accepted hunks, and is
denied when none is accepted.  `agent-q-gate-notify' says when a call
waits for the user.  The other tools get `agent-q-gate-other-tools'.
While it is off, the hook falls back to the agent's own prompt."
  :global t
  :group 'agent-q-gate
  (require 'agent-q-mcp)
  (if agent-q-gate-mode
      (progn
        (setq agent-q-mcp-gate-function #'agent-q-gate--event)
        (setq agent-q-prompt-deadline-function #'agent-q-gate--deadline)
        (add-hook 'agent-q-mcp-start-hook #'agent-q-gate--server-started)
        (add-hook 'agent-q-mcp-stop-hook #'agent-q-gate--server-stopping)
        (when (agent-q-mcp-running-p)
          (agent-q-gate--server-started)))
    (remove-hook 'agent-q-mcp-start-hook #'agent-q-gate--server-started)
    (remove-hook 'agent-q-mcp-stop-hook #'agent-q-gate--server-stopping)
    (when (agent-q-mcp-running-p)
      ;; The server withdraws what waits (:gate-withdrawn), handled below.
      (agent-q--core-mcp-set-gating nil))
    (agent-q-gate--server-stopping)
    (setq agent-q-prompt-deadline-function nil)
    (setq agent-q-mcp-gate-function nil)))

(provide 'agent-q-gate)

;;; agent-q-gate.el ends here
