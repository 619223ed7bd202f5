;;; agent-q-rules.el --- Standing approval rules for agent-q's tool calls  -*- lexical-binding: t -*-

;; Copyright (C) 2026 The agent-q authors

;; Author: The agent-q authors
;; Maintainer: The agent-q authors
;; Keywords: tools, convenience
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

;; `agent-q-approval-rules' lets the user allow, deny or always ask about
;; a tool once and for all, optionally only for files under a directory
;; glob or for one client ("always allow read_file under ~/src for the
;; MCP client claude-code").  A rule names a bridge inside Emacs (gptel,
;; llm) with :client and an MCP client with :mcp-client, and tells them
;; apart by where the call came from (the executor's :origin, which the
;; driver that received the call sets), never by the name a client
;; chose.  `agent-q--approval-call' (agent-q.el), the one place
;; where the synchronous executor, the asynchronous one (gptel, llm.el,
;; MCP) and `agent-q-request-approval' ask for a decision, consults
;; `agent-q-rules-decide' first: a deny or allow rule decides without a
;; prompt, and the core audits the decision as "rule", naming the rule;
;; an ask rule makes the prompt say that a rule asked.  When any rule
;; exists (`agent-q-rules-any-p'), the executor offers every call, not
;; only those that need a decision, marked :optional: deny and ask
;; rules apply to them too, and the rest run as without rules.
;;
;; The approval prompt's "s" key saves a rule for the call being asked
;; about (`agent-q-rules-save-from-prompt'), for the session or, when
;; the user says so, with `customize-save-variable'.
;;
;; Directory globs are matched by the module (`agent-q--core-rule-glob-*',
;; src/rules.rs); names are resolved here, where Emacs knows `~', the
;; current directory, links and remote files.

;;; Code:

(require 'cl-lib)
(require 'subr-x)

(declare-function agent-q--ruling "agent-q" (tool-name args context))
(declare-function agent-q--core-rule-glob-split "agent-q-core" (glob))
(declare-function agent-q--core-rule-glob-covers "agent-q-core" (glob path))
(declare-function agent-q--core-rule-glob-broad "agent-q-core" (glob home))
(declare-function agent-q-guard-sensitive-match "agent-q-guard" (&rest files))
(declare-function agent-q-guard-buffer-files "agent-q-guard" (buffer))
(declare-function agent-q-guard-buffer-private-p "agent-q-guard" (buffer))
(declare-function agent-q--core-find-hard-link "agent-q-core" (root device inode))
(declare-function agent-q--core-command-decide "agent-q-core" (line deny ask allow))
(declare-function agent-q--core-fetch-decide "agent-q-core" (url deny ask allow))
(declare-function agent-q--core-command-suggest "agent-q-core" (line allow))
(declare-function agent-q--core-fetch-suggest "agent-q-core" (url))
(declare-function agent-q-gate-call-agent "agent-q-gate" (context))

;;;; The option

(defcustom agent-q-approval-rules nil
  "Standing decisions about tool calls that would otherwise be asked about.
A list of rules (TOOL PATTERN DECISION):

- TOOL is a tool's name (a string, e.g. \"write_file\") or t for any
  tool.
- PATTERN is nil (every call of TOOL) or a plist with :path, and
  either :client or :mcp-client, or both:
  :path GLOB    only calls whose file arguments (:path, :file,
                :filename, :directory or :dir, and the files that a
                :buffer argument's buffer shows, as the read guard
                judges them: the file it or its base buffer visits, a
                Dired buffer's directory, an archive member) all lie
                under a directory GLOB matches; for deny and ask
                rules, one of them suffices.  GLOB is absolute, `~' is
                expanded; in a component * matches any characters and
                ? one, and a whole component ** matches any number of
                directories.  \"~/src\" covers ~/src and everything
                below it; \"~/src/*/docs\" the docs directory of each
                project in ~/src.  A file's true name (links followed)
                is compared with GLOB's (whose leading directories are
                resolved too), so a link in ~/src to a file elsewhere is
                not under ~/src.
  :client NAME  only calls from that client inside Emacs: a bridge
                (\"gptel\", \"llm\"), or Lisp code that binds
                `agent-q-client'; NAME is compared with the first word
                of the client.  It never matches a call from an MCP
                client, whatever that client calls itself (one named
                \"gptel\" is not the gptel bridge).
  :mcp-client NAME
                only calls from an MCP client that named itself NAME in
                its clientInfo (\"claude-code\", \"gemini-cli\"...),
                compared exactly, without its version.  The name is
                the client's own claim: any program that has the MCP
                token may give any name, so such a rule tells apart
                honest clients, not an attacker from one.
  :command RULE only calls whose :command argument, a shell command
                line, the rule covers: the shell_command calls of the
                terminal agents' own tools (see `agent-q-gate-mode').
                RULE is a command as users write it in the agents,
                matched on words: \"git status\" (exactly that),
                \"git diff *\" (git diff and any further words).  The
                command rules that apply to a call are decided
                together by the module: deny when any part of the
                line (after ;, &&, ||, |, inside $(...), behind sudo,
                env or sh -c) matches a deny rule, else ask when one
                matches an ask rule, else allow only when every part
                is a plain command that an allow rule covers (no
                substitution, redirection to a file or wrapper);
                otherwise the user is asked, and the prompt says
                which part no rule covers.
  :domain RULE  only calls whose :url argument the rule covers: the
                fetches of the terminal agents' own tools (the
                agent_fetch calls, see `agent-q-gate-mode').  RULE is
                a host, \"example.org\" (that host only), or
                \"*.example.org\" (it and its subdomains); an IP
                address is written as such (\"127.0.0.1\",
                \"[::1]\").  The domain rules that apply to a call are
                decided together by the module
                (`agent-q--core-fetch-decide'): deny wins over ask,
                ask over allow; a URL no rule covers is asked.
  :agent NAME   only the calls of the own tools of the terminal agent
                NAME (\"claude\", \"gemini\" or \"codex\"), as its hook
                names it; not with :client or :mcp-client.
- DECISION is `allow' (run without asking), `deny' (refuse without
  asking; the model is told which rule refused) or `ask' (always ask,
  even when the tool was allowed for the session with \"a\").

Examples:

  (\"read_file\" (:path \"~/src\" :mcp-client \"claude-code\") allow)
  (\"write_file\" (:path \"~/src/notes\") allow)
  (\"eval_form\" (:client \"gptel\") allow)
  (\"eval_form\" (:mcp-client \"claude-code\") ask)
  (t (:path \"~/.password-store\") deny)
  (\"write_file\" nil deny)
  (\"shell_command\" (:command \"git status\") allow)
  (\"shell_command\" (:command \"git diff *\" :agent \"claude\") allow)
  (\"shell_command\" (:command \"rm *\") deny)
  (\"agent_fetch\" (:domain \"*.gnu.org\") allow)
  (\"agent_fetch\" (:domain \"pastebin.com\") deny)

Rules are consulted for every call, whatever its tool's level.  A
deny rule refuses any call it matches, and an ask rule has the user
asked about it, even a safe or cautious call that would otherwise run
without asking (a safe read_file inside `agent-q-allowed-directories',
or eval_form from gptel).  Allow rules matter only for the calls that
need a decision: dangerous tools, those at the levels in
`agent-q-confirm-safety-levels' (over MCP,
`agent-q-mcp-confirm-safety-levels'), and those whose guard asks (a
file outside the allowed directories, say); a call that needs no
decision and that no deny or ask rule matches runs as it would
without rules, and is audited as before (decision \"auto\").  A rule
decides even when `agent-q-approval-function' is nil; an ask rule
then denies, as there is nobody to ask.  With no rules at all, calls
that need no decision are not even offered to them.

Among the rules that match a call, deny wins over ask, and ask over
allow, whatever their order.  Allow rules are narrower than the
others, so that a doubt means asking:
- a file argument that is remote, has a \"..\" component, or matches
  `agent-q-sensitive-file-patterns' (as given or as its true name) is
  never covered by an allow rule, with or without a :path; deny and
  ask rules compare both the name as given (expanded) and its true
  name, allow rules only the true name;
- a call whose guard asks (its context has a reason) is allowed only
  by a rule with a :path, and only if its files are local, not
  sensitive and have a single hard link: a guard's reason for reading
  a sensitive file, a hidden buffer or a remote file is always asked;
- propose_file_edit's per-hunk review is the approval of what it
  changes: only deny rules apply to it (nothing skips the review);
- a write to a protected file (:protected in the context: see
  `agent-q-protected-file-patterns') is never allowed by a rule: the
  user is asked every time; deny rules still deny it.

Rules saved from the prompt (the \"s\" key) never allow a dangerous
tool for every path: they need a :path whose fixed leading directory
is neither /, nor the home directory, nor one of its ancestors.  A
rule written here by hand may (that is the user's explicit choice).

A malformed rule is ignored, with a warning."
  :type '(repeat
          (list :tag "Rule"
                (choice :tag "Tool"
                        (const :tag "Any tool" t)
                        (string :tag "Tool name"))
                (choice :tag "Calls"
                        (const :tag "Every call" nil)
                        (list :tag "Files under a directory glob"
                              (const :format "" :path)
                              (string :tag "Directory glob"))
                        (list :tag "From a bridge inside Emacs"
                              (const :format "" :client)
                              (string :tag "Bridge (gptel, llm)"))
                        (list :tag "From an MCP client"
                              (const :format "" :mcp-client)
                              (string :tag "MCP client's name"))
                        (list :tag "Files under a directory glob, from a bridge inside Emacs"
                              (const :format "" :path)
                              (string :tag "Directory glob")
                              (const :format "" :client)
                              (string :tag "Bridge (gptel, llm)"))
                        (list :tag "Files under a directory glob, from an MCP client"
                              (const :format "" :path)
                              (string :tag "Directory glob")
                              (const :format "" :mcp-client)
                              (string :tag "MCP client's name"))
                        (list :tag "A shell command of a terminal agent's own tools"
                              (const :format "" :command)
                              (string :tag "Command (git status, git diff *)"))
                        (list :tag "A fetch of a terminal agent's own tools, by domain"
                              (const :format "" :domain)
                              (string :tag "Domain (example.org, *.example.org)"))
                        (list :tag "A fetch of one terminal agent's own tools, by domain"
                              (const :format "" :domain)
                              (string :tag "Domain (example.org, *.example.org)")
                              (const :format "" :agent)
                              (choice :tag "Agent" (const "claude") (const "gemini")
                                      (const "codex")))
                        (list :tag "Files under a directory glob, read by one terminal agent's own tools"
                              (const :format "" :path)
                              (string :tag "Directory glob")
                              (const :format "" :agent)
                              (choice :tag "Agent" (const "claude") (const "gemini")
                                      (const "codex")))
                        (list :tag "A shell command of one terminal agent's own tools"
                              (const :format "" :command)
                              (string :tag "Command (git status, git diff *)")
                              (const :format "" :agent)
                              (choice :tag "Agent" (const "claude") (const "gemini")
                                      (const "codex"))))
                (choice :tag "Decision"
                        (const :tag "Allow without asking" allow)
                        (const :tag "Always ask" ask)
                        (const :tag "Deny without asking" deny))))
  :group 'agent-q)

(defvar agent-q-rules--session nil
  "Rules saved from the approval prompt for this session only.
Same shape as `agent-q-approval-rules', consulted before them.")

(defvar agent-q-rules--pinned nil
  "(PATH . TRUE) while a call is judged whose guard pinned its :path PATH as TRUE.
The rules then judge TRUE, the file the prompt shows and the call
writes, rather than resolving PATH again (a link flipped meanwhile
would make them judge another file).")

(declare-function agent-q-prompt-forget-grants "agent-q-prompt" ())

(defconst agent-q-rules-agents '("claude" "gemini" "codex")
  "The terminal agents whose own tools agent-q gates, as an :agent rule names them.")

(defun agent-q-rules-agent-client (agent)
  "Return the MCP client name of the gate's requests from AGENT's own tools.
AGENT is a string of `agent-q-rules-agents'.  A rule with :agent AGENT
matches a call whose context has this :mcp-client (see
`agent-q-gate-mode')."
  (format "%s (own tools)" agent))

(defconst agent-q-rules--path-keys '(:path :file :filename :directory :dir)
  "Argument keys whose string values are file names that :path globs judge.")

;;;; Reading rules

(defun agent-q-rules--check (rule)
  "Return nil when RULE is well formed, else why not (a string)."
  (pcase rule
    (`(,tool ,pattern ,decision)
     (cond
      ((not (or (eq tool t) (and (stringp tool) (not (string-empty-p tool)))))
       "its TOOL is neither a tool name nor t")
      ((not (memq decision '(allow ask deny)))
       "its DECISION is not allow, ask or deny")
      ((not (and (proper-list-p pattern) (cl-evenp (length pattern))))
       "its PATTERN is not nil or a plist")
      ((cl-loop for (key value) on pattern by #'cddr
                thereis (or (not (memq key '(:path :client :mcp-client :command :domain :agent)))
                            (not (stringp value)) (string-empty-p value)))
       "its PATTERN has a key other than :path, :client, :mcp-client, :command, :domain and :agent, or a value that is not a non-empty string")
      ((and (plist-member pattern :command) (plist-member pattern :domain))
       "its PATTERN has both :command and :domain, which no call matches (a call is either a shell command or a fetch)")
      ((and (plist-member pattern :client) (plist-member pattern :mcp-client))
       "its PATTERN has both :client and :mcp-client, which no call matches (a call comes either from inside Emacs or from an MCP client)")
      ((and (plist-member pattern :agent) (or (plist-member pattern :client)
                                              (plist-member pattern :mcp-client)))
       "its PATTERN has :agent with :client or :mcp-client, which no call matches (an agent's own tool call comes from neither)")
      ((and (plist-get pattern :agent)
            (not (member (plist-get pattern :agent) agent-q-rules-agents)))
       (format "its :agent is not one of %s" (string-join agent-q-rules-agents ", ")))
      ((and (plist-get pattern :command) (fboundp 'agent-q--core-command-decide))
       (condition-case err
           (progn (agent-q--core-command-decide "true" nil nil (list (plist-get pattern :command)))
                  nil)
         (error (error-message-string err))))
      ((and (plist-get pattern :domain) (fboundp 'agent-q--core-fetch-decide))
       (condition-case err
           (progn (agent-q--core-fetch-decide "https://example.invalid/" nil nil
                                              (list (plist-get pattern :domain)))
                  nil)
         (error (error-message-string err))))
      ((plist-get pattern :path)
       (condition-case err
           (progn (agent-q-rules--resolve-glob (plist-get pattern :path)) nil)
         (error (error-message-string err))))))
    (_ "it is not a list (TOOL PATTERN DECISION)")))

(defvar agent-q-rules--warned nil
  "Malformed rules already warned about, so that each is warned about once.")

(defun agent-q-rules--warn (rule why)
  "Warn once that RULE is ignored because of WHY."
  (unless (member rule agent-q-rules--warned)
    (push rule agent-q-rules--warned)
    (display-warning 'agent-q
                     (format "The approval rule %S is ignored: %s" rule why)
                     :warning)))

(defun agent-q-rules--resolve-glob (glob)
  "Return the directory GLOB expanded, its fixed leading part resolved.
`~' is expanded and the leading directories without wildcards are
replaced by their true name, so that the glob is compared with true
names.  Signal an error for a relative or remote GLOB, and for one with
a . or .. component."
  (when (string-empty-p glob)
    (error "The glob is empty"))
  (when (cl-some (lambda (c) (member c '("." ".."))) (split-string glob "/"))
    (error "The glob %S has a . or .. component; write the directory it means" glob))
  (unless (file-name-absolute-p glob)
    (error "The glob %S is not absolute (write it from / or ~)" glob))
  (when (file-remote-p glob)
    (error "The glob %S is remote: remote files never match an approval rule" glob))
  (let* ((split (agent-q--core-rule-glob-split (expand-file-name glob)))
         (true (file-truename (car split))))
    (if (string-empty-p (cdr split))
        true
      (concat (file-name-as-directory true) (cdr split)))))

(defun agent-q-rules--home ()
  "The true name of the home directory."
  (directory-file-name (file-truename (expand-file-name "~"))))

(defun agent-q-rules--broad-p (glob)
  "Return non-nil when GLOB would cover nearly every file.
See `agent-q-approval-rules'."
  (agent-q--core-rule-glob-broad (agent-q-rules--resolve-glob glob) (agent-q-rules--home)))

(defun agent-q-rules-describe (rule)
  "A one-line description of RULE, e.g. \"allow read_file under ~/src for gptel\"."
  (pcase-let ((`(,tool ,pattern ,decision) rule))
    (concat (format "%s %s" decision (if (eq tool t) "any tool" tool))
            (when-let ((glob (plist-get pattern :path))) (format " under %s" glob))
            (when-let ((client (plist-get pattern :client))) (format " for %s" client))
            (when-let ((command (plist-get pattern :command)))
              (format " for the command %s" command))
            (when-let ((domain (plist-get pattern :domain)))
              (format " for fetches from %s" domain))
            (when-let ((client (plist-get pattern :mcp-client)))
              (format " for the MCP client %s" client))
            (when-let ((agent (plist-get pattern :agent)))
              (format " for %s's own tools" agent))
            (if (member rule agent-q-rules--session) " (saved for this session)" ""))))

;;;; Matching a call

(defun agent-q-rules--client-name (client)
  "The name of CLIENT, its first word: \"claude-code\" for \"claude-code 2.1 (MCP)\"."
  (and (stringp client)
       (car (split-string client "[ \t]+" t))))

(defconst agent-q-rules--buffer-keys '(:buffer)
  "Argument keys whose string values name buffers; rules judge the files they show.")

(defun agent-q-rules--buffer-files (name)
  "Return the files on display in the live buffer NAME, as the read guard sees it.
See `agent-q-guard-buffer-files'.  nil for no such buffer."
  (let ((buffer (get-buffer name)))
    (and (buffer-live-p buffer) (fboundp 'agent-q-guard-buffer-files)
         (agent-q-guard-buffer-files buffer))))

(defun agent-q-rules--path-arguments (args)
  "The file names among ARGS (a plist), in the order of `agent-q-rules--path-keys'.
The values of `agent-q-rules--path-keys', then the files shown by the
buffers that `agent-q-rules--buffer-keys' name (see
`agent-q-rules--buffer-files')."
  (and (proper-list-p args)
       (append
        (cl-loop for key in agent-q-rules--path-keys
                 for value = (plist-get args key)
                 when (stringp value) collect value)
        (cl-loop for key in agent-q-rules--buffer-keys
                 for value = (plist-get args key)
                 when (and (stringp value) (not (string-empty-p value)))
                 append (agent-q-rules--buffer-files value)))))

(defun agent-q-rules--hidden-buffer-argument-p (args)
  "Non-nil when a buffer that ARGS name is hidden or agent-q's own log.
Allow rules never cover such a buffer, whatever file it shows."
  (cl-loop for key in agent-q-rules--buffer-keys
           for value = (plist-get args key)
           for buffer = (and (stringp value) (get-buffer value))
           thereis (and (buffer-live-p buffer)
                        (fboundp 'agent-q-guard-buffer-private-p)
                        (agent-q-guard-buffer-private-p buffer))))

(defun agent-q-rules--remote-p (path)
  "Non-nil when PATH is remote, or relative in a remote `default-directory'."
  (or (file-remote-p path)
      (and (not (file-name-absolute-p path)) (file-remote-p default-directory))))

(defun agent-q-rules--names (path)
  "The local names PATH stands for: (EXPANDED TRUE), or nil for a remote PATH."
  (unless (agent-q-rules--remote-p path)
    (let ((expanded (expand-file-name path)))
      (list expanded (if (equal path (car agent-q-rules--pinned))
                         (cdr agent-q-rules--pinned)
                       (file-truename expanded))))))

(defun agent-q-rules--local-host-p (path)
"Non-nil when the remote PATH names a file of this machine (/sudo::, /su::...).
Judged by its name alone: no hop, and a host that is this one."
  (and (null (file-remote-p path 'hop))
       (member (file-remote-p path 'host)
               (list "" "localhost" "127.0.0.1" "::1" (system-name)))))

(defun agent-q-rules--loose-names (path)
  "The local names that deny and ask rules compare for PATH.
A local PATH: its expanded and true names.  A remote one (never
contacted): the local part of its name, and when it names this
machine (/sudo::/etc/x), that file's true name too -- so that a deny
rule for a directory also refuses its files reached through sudo."
  (if (not (agent-q-rules--remote-p path))
      (agent-q-rules--names path)
    (let ((local (and (file-name-absolute-p path) (file-remote-p path 'localname))))
      (when (and (stringp local) (file-name-absolute-p local))
        (let ((expanded (expand-file-name local)))
          (delete-dups (list expanded
                             (if (agent-q-rules--local-host-p path)
                                 (file-truename expanded)
                               expanded))))))))

(defun agent-q-rules--trusted-p (path)
  "Non-nil when an allow rule may judge PATH: local, without `..', not sensitive."
  (and (not (string-empty-p path))
       (not (agent-q-rules--remote-p path))
       (not (member ".." (split-string path "[/\\\\]")))
       (let ((names (agent-q-rules--names path)))
         (not (and (fboundp 'agent-q-guard-sensitive-match)
                   (apply #'agent-q-guard-sensitive-match names))))))

(defun agent-q-rules--single-link-p (path)
  "Non-nil unless PATH is a regular file with several hard links."
  (let ((attrs (file-attributes (cadr (agent-q-rules--names path)))))
    (or (null attrs) (file-attribute-type attrs)
        (<= (file-attribute-link-number attrs) 1))))

(defun agent-q-rules--covers-p (glob path strict)
  "Non-nil when the directory GLOB covers PATH.
STRICT (for allow rules) compares only PATH's true name.  Otherwise
\(deny and ask rules) its expanded name counts too, a remote name by
its local part (see `agent-q-rules--loose-names'), and a regular file
with several hard links is covered when one of its other names is
\(see `agent-q-rules--linked-under-p')."
  (let ((resolved (agent-q-rules--resolve-glob glob)))
    (if strict
        (let ((names (agent-q-rules--names path)))
          (and names (agent-q--core-rule-glob-covers resolved (cadr names))))
      (let ((names (agent-q-rules--loose-names path)))
        (or (cl-some (lambda (name) (agent-q--core-rule-glob-covers resolved name)) names)
            (and names (agent-q-rules--linked-under-p resolved (car (last names)))))))))

(defvar agent-q-rules--link-searches (make-hash-table :test #'equal)
  "Answers of `agent-q--core-find-hard-link': (ROOT DEV INO CTIME) -> answer.
A new link changes the file's status-change time, so an answer holds
as long as its key does.  Emptied past 1000 entries.")

(defun agent-q-rules--find-hard-link (root attrs)
  "Search ROOT for another name of the file with ATTRS, through a small cache."
  (let ((key (list root (file-attribute-device-number attrs)
                   (file-attribute-inode-number attrs)
                   (file-attribute-status-change-time attrs))))
    (pcase (gethash key agent-q-rules--link-searches 'none)
      ('none
       (when (>= (hash-table-count agent-q-rules--link-searches) 1000)
         (clrhash agent-q-rules--link-searches))
       (puthash key (agent-q--core-find-hard-link root (nth 1 key) (nth 2 key))
                agent-q-rules--link-searches))
      (answer answer))))

(defun agent-q-rules--linked-under-p (glob true)
  "Non-nil when the regular file TRUE has another hard link that GLOB may cover.
TRUE is a local true name.  The files under GLOB's fixed leading
directory are searched for the same device and inode, within the
bounds of `agent-q--core-find-hard-link'; a search that cannot finish
within them counts as found: a deny rule then refuses, as a doubt
must."
  (let ((attrs (file-attributes true)))
    (and attrs (null (file-attribute-type attrs))
         (> (file-attribute-link-number attrs) 1)
         (fboundp 'agent-q--core-find-hard-link)
         (let ((root (car (agent-q--core-rule-glob-split glob))))
           (pcase (agent-q-rules--find-hard-link root attrs)
             ('nil nil)
             ((and (pred stringp) found)
              (agent-q--core-rule-glob-covers glob found))
             (_ t))))))

(defun agent-q-rules--client-matches-p (pattern context)
  "Non-nil when PATTERN's :client, :mcp-client or :agent match the CONTEXT's call.
A rule with :client matches only calls from inside Emacs (CONTEXT's
:origin is not `mcp'), by the first word of CONTEXT's :client; a rule
with :mcp-client only calls from an MCP client, by CONTEXT's
:mcp-client; a rule with :agent only the calls of that agent's own tools
\(see `agent-q-rules-agent-client').  Where the call came from is the
driver's to say, so no MCP client matches a rule written for a bridge,
whatever its name."
  (let ((bridge (plist-get pattern :client))
        (mcp (plist-get pattern :mcp-client))
        (agent (plist-get pattern :agent))
        (from-mcp (eq (plist-get context :origin) 'mcp)))
    (and (or (null agent)
             (and from-mcp (equal (agent-q-rules-agent-client agent)
                                  (plist-get context :mcp-client))))
         (or (null bridge)
             (and (not from-mcp)
                  (equal bridge (agent-q-rules--client-name (plist-get context :client)))))
         (or (null mcp)
             (and from-mcp (equal mcp (plist-get context :mcp-client)))))))

(defun agent-q-rules--matches-p (rule tool-name args context)
  "Return non-nil when RULE matches TOOL-NAME called with ARGS in CONTEXT.
CONTEXT is the call's `agent-q-approval-context' (its :origin, :client
and :mcp-client count).  Allow rules match strictly (see
`agent-q-approval-rules')."
  (pcase-let* ((`(,tool ,pattern ,decision) rule)
               (glob (plist-get pattern :path))
               (paths (agent-q-rules--path-arguments args))
               (strict (eq decision 'allow)))
    (and (or (eq tool t) (equal tool tool-name))
         (agent-q-rules--client-matches-p pattern context)
         (not (and strict (agent-q-rules--hidden-buffer-argument-p args)))
         (if glob
             (and paths
                  (if strict
                      (cl-every (lambda (p) (and (agent-q-rules--trusted-p p)
                                                 (agent-q-rules--covers-p glob p t)))
                                paths)
                    (cl-some (lambda (p) (agent-q-rules--covers-p glob p nil)) paths)))
           (or (not strict) (cl-every #'agent-q-rules--trusted-p paths))))))

(defun agent-q-rules--allow-eligible-p (rule args context)
  "Non-nil when the allow RULE may decide a call with ARGS in CONTEXT."
  (let ((paths (agent-q-rules--path-arguments args))
        (glob (plist-get (nth 1 rule) :path)))
    (and (or (not (plist-get context :review))
             ;; An allow rule stands for this tool's review (agent_edit).
             (plist-get context :review-rule))
         ;; Only the user approves a protected call (a write to a file that
         ;; governs agents or runs code): see `agent-q-protected-file-patterns'.
         (not (plist-get context :protected))
         (or (not (plist-get context :reason))
             (and glob paths (cl-every #'agent-q-rules--single-link-p paths)))
         ;; Defence in depth: a rule saved from the prompt never allows a dangerous
         ;; tool everywhere, even if it got into the session list some other way.
         ;; A command or domain rule is narrow by what it names.
         (not (and (member rule agent-q-rules--session)
                   (eq (plist-get context :safety-level) :dangerous)
                   (not (agent-q-rules--named-p rule))
                   (or (null glob) (agent-q-rules--broad-p glob)))))))

(defun agent-q-rules--named-p (rule)
  "Non-nil when RULE names the commands or the domains it covers."
  (let ((pattern (nth 1 rule)))
    (and (proper-list-p pattern)
         (or (plist-get pattern :command) (plist-get pattern :domain)) t)))

(defun agent-q-rules--all ()
  "The rules in force: the session's, then `agent-q-approval-rules'.
Malformed rules are left out, with a warning."
  (cl-remove-if (lambda (rule)
                  (let ((why (agent-q-rules--check rule)))
                    (when why (agent-q-rules--warn rule why))
                    why))
                (append agent-q-rules--session
                        (and (proper-list-p agent-q-approval-rules) agent-q-approval-rules))))

(defun agent-q-rules-any-p ()
  "Non-nil when any approval rule is in force, customized or for the session.
The executor then offers every call to the rules (see
`agent-q-approval-rules'); without rules it runs the calls that need
no decision at once, as fast as ever."
  (and (or agent-q-rules--session agent-q-approval-rules) t))

(defun agent-q-rules-decide (tool-name args context)
  "Return the rule deciding TOOL-NAME's call with ARGS, as (DECISION RULE), or nil.
CONTEXT is the call's `agent-q-approval-context' (its :client,
:safety-level, :reason, :protected, :review and :review-rule
count, and its :file,
the file the guard pinned for the :path argument, is what the rules
judge for it).  DECISION is `deny', `ask'
or `allow': deny rules win over ask rules, which win over allow
rules; see `agent-q-approval-rules'.  Never signals: a rule that
cannot be judged (an error resolving a name) does not match, and any
other error means no rule decides (so the user is asked)."
  (condition-case err
      (let ((agent-q-rules--pinned
             (let ((path (and (proper-list-p args) (plist-get args :path)))
                   (file (plist-get context :file)))
               (and (stringp path) (stringp file) (cons path file)))))
        (agent-q-rules--decide tool-name args context))
    (error (display-warning 'agent-q (format "Approval rules not applied: %s"
                                             (error-message-string err))
                            :warning)
           nil)))

(defun agent-q-rules--decide (tool-name args context)
  "The body of `agent-q-rules-decide' for TOOL-NAME, ARGS and CONTEXT."
  (let ((matching nil)
        (commands nil)
        (domains nil))
    (dolist (rule (agent-q-rules--all))
      (when (condition-case err
                (agent-q-rules--matches-p rule tool-name args context)
              (error (agent-q-rules--warn rule (error-message-string err)) nil))
        (cond ((plist-get (nth 1 rule) :command) (push rule commands))
              ((plist-get (nth 1 rule) :domain) (push rule domains))
              (t (push rule matching)))))
    (setq matching (nreverse matching))
    (let* ((command (agent-q-rules--command-ruling (nreverse commands) args context))
           (domain (agent-q-rules--domain-ruling (nreverse domains) args context))
           (deny (cl-find 'deny matching :key #'cl-third))
           (ask (cl-find 'ask matching :key #'cl-third))
           (allow (cl-find-if (lambda (r)
                                (and (eq (cl-third r) 'allow)
                                     (ignore-errors (agent-q-rules--allow-eligible-p r args context))))
                              matching)))
      (cond
       (deny (list 'deny deny))
       ((eq (car command) 'deny) command)
       ((eq (car domain) 'deny) domain)
       ;; The review is the ask; an allow rule stands for it only where
       ;; the tool says so (:review-rule).
       ((plist-get context :review)
        (and (plist-get context :review-rule) allow (list 'allow allow)))
       (ask (list 'ask ask))
       ((eq (car command) 'ask) command)
       ((eq (car domain) 'ask) domain)
       (allow (list 'allow allow))
       ((eq (car command) 'allow) command)
       ((eq (car domain) 'allow) domain)))))

(defun agent-q-rules--command-ruling (rules args context)
  "The ruling of the command RULES about a call with ARGS in CONTEXT, or nil.
RULES are the rules with a :command that match the call otherwise;
ARGS' :command is the shell command line.  The module decides it
\(`agent-q--core-command-decide'): deny when a part of the line
matches a deny rule, ask when one matches an ask rule, allow only
when every part is a plain command an allow rule covers.  Return
\(DECISION RULE TEXT), TEXT saying why in the core's words, or nil
when no rule decides (then, if there were command rules, (ask nil
TEXT): the prompt says what no rule covers)."
  (agent-q-rules--pattern-ruling rules args context :command :command
                                 #'agent-q--core-command-decide "command"))

(defun agent-q-rules--domain-ruling (rules args context)
  "The ruling of the domain RULES about a call with ARGS in CONTEXT, or nil.
As `agent-q-rules--command-ruling', for ARGS' :url and the rules'
:domain, decided by `agent-q--core-fetch-decide'."
  (agent-q-rules--pattern-ruling rules args context :url :domain
                                 #'agent-q--core-fetch-decide "domain"))

(defun agent-q-rules--pattern-ruling (rules args context arg key decide what)
  "The ruling of RULES about a call with ARGS in CONTEXT, or nil.
ARG is the argument judged, KEY the rules' key, DECIDE the module's
function and WHAT the rules' name in the text."
  (let ((line (and (proper-list-p args) (plist-get args arg))))
    (when (and rules (stringp line))
      (let* ((lists (mapcar (lambda (decision)
                              (cl-remove-if-not
                               (lambda (r)
                                 (and (eq (cl-third r) decision)
                                      (or (not (eq decision 'allow))
                                          (ignore-errors
                                            (agent-q-rules--allow-eligible-p r args context)))))
                               rules))
                            '(deny ask allow)))
             (texts (mapcar (lambda (l) (mapcar (lambda (r) (plist-get (nth 1 r) key)) l))
                            lists))
             (answer (apply decide line texts))
             (verdict (car answer))
             (text (if (eq verdict 'no-rule)
                       ;; No rule asks: the call is asked because none allows it.
                       (format "no %s rule allows %s: %s"
                               what (cl-first (car rules)) (cdr answer))
                     (format "%s %s by the %s rules: %s"
                             verdict (cl-first (car rules)) what (cdr answer)))))
        (pcase verdict
          ('deny (list 'deny (car (nth 0 lists)) text))
          ('ask (list 'ask (car (nth 1 lists)) text))
          ('allow (list 'allow (car (nth 2 lists)) text))
          ;; A call that needs no decision runs as without rules.
          (_ (and (not (plist-get context :optional)) (list 'ask nil text))))))))

(defun agent-q-rules-ruling-text (ruling)
  "Describe RULING, from `agent-q-rules-decide', for the user and the audit."
  (or (nth 2 ruling) (agent-q-rules-describe (nth 1 ruling))))

;;;; Saving a rule from the prompt

(defun agent-q-rules--default-directory (args)
  "The directory to offer for a rule about a call with ARGS, or nil.
The directory of the true name of the call's file argument -- the
first of `agent-q-rules--path-keys' that ARGS holds, in that order
\(:path first), whatever order the client sent them in; the executor
refuses arguments a built-in tool does not declare -- abbreviated."
  (let* ((path (cl-loop for key in agent-q-rules--path-keys
                        for value = (plist-get args key)
                        when (stringp value) return value))
         (names (and path (not (string-empty-p path)) (agent-q-rules--names path))))
    (when names
      (let ((true (cadr names)))
        (abbreviate-file-name
         (directory-file-name
          (if (file-directory-p true) true (file-name-directory true))))))))

(defun agent-q-rules--agent-allowed (tool-name key context)
  "The KEY texts of the allow rules about TOOL-NAME that apply in CONTEXT."
  (cl-loop for rule in (agent-q-rules--all)
           for pattern = (nth 1 rule)
           when (and (eq (nth 2 rule) 'allow)
                     (or (eq (car rule) t) (equal (car rule) tool-name))
                     (plist-get pattern key)
                     (agent-q-rules--client-matches-p pattern context))
           collect (plist-get pattern key)))

(defun agent-q-rules--read-agent-rule (tool-name args context agent decision)
  "Read the pattern of a DECISION rule about AGENT's own TOOL-NAME call.
ARGS and CONTEXT are the call's.  A shell command gets a :command
rule, proposed by the module (`agent-q--core-command-suggest'): the
first part of the line no allow rule covers, as its command and
subcommand, \"*\" for the rest; a fetch a :domain rule, its host
proposed; any other tool (a read) a :path rule, the file's directory
proposed.  All are limited to AGENT with :agent.  Return the rule,
or nil when the user gave up (an empty command or domain)."
  (let* ((command (plist-get args :command))
         (url (plist-get args :url))
         (key (cond ((stringp command) :command) ((stringp url) :domain) (t :path)))
         (default (pcase key
                    (:command (ignore-errors
                                (agent-q--core-command-suggest
                                 command (agent-q-rules--agent-allowed tool-name :command context))))
                    (:domain (ignore-errors (agent-q--core-fetch-suggest url)))
                    (_ (agent-q-rules--default-directory args))))
         (text (string-trim
                (read-string
                 (format (pcase key
                           (:command "%s %s for the command (its words; a last * matches any further words): ")
                           (:domain "%s %s for fetches from (a host, or *.host for its subdomains): ")
                           (_ "%s %s under the directory (a glob; empty: any file): "))
                         decision tool-name)
                 default))))
    (cond
     ((not (string-empty-p text))
      (list tool-name (list key text :agent agent) decision))
     ((eq key :path) (list tool-name (list :agent agent) decision)))))

(defun agent-q-rules--read-rule (tool-name args context)
  "Read a rule about TOOL-NAME's call with ARGS in CONTEXT from the user.
Return the rule, or nil when the user gave up.  A terminal agent's
own tool call gets a rule limited to that agent (see
`agent-q-rules--read-agent-rule')."
  (let* ((decision (pcase (read-char-choice-with-read-key
                           (format "Rule for %s: (a)llow (d)eny as(k) (q)uit: " tool-name)
                           '(?a ?d ?k ?q))
                     (?a 'allow) (?d 'deny) (?k 'ask)))
         (agent (and decision (fboundp 'agent-q-gate-call-agent)
                     (agent-q-gate-call-agent context)))
         (default (agent-q-rules--default-directory args))
         (mcp (eq (plist-get context :origin) 'mcp))
         (client (if mcp
                     (let ((name (plist-get context :mcp-client)))
                       (and (stringp name) (not (string-empty-p name)) name))
                   (agent-q-rules--client-name (plist-get context :client)))))
    (cond
     (agent (agent-q-rules--read-agent-rule tool-name args context agent decision))
     (decision
      (let* ((glob (string-trim
                    (read-string (format "%s %s under the directory (a glob; empty: any file): "
                                         decision tool-name)
                                 default)))
             (for-client (and client
                              (y-or-n-p (format (if mcp "Only for calls from the MCP client %s? "
                                                  "Only for calls from %s? ")
                                                client))))
             (pattern (append (and (not (string-empty-p glob)) (list :path glob))
                              (and for-client (list (if mcp :mcp-client :client) client)))))
        (list tool-name pattern decision))))))

(defun agent-q-rules--refusal (rule context)
  "Why RULE, read from the prompt for a call in CONTEXT, cannot be saved, or nil."
  (or (agent-q-rules--check rule)
      (let ((glob (plist-get (nth 1 rule) :path)))
        (and (eq (nth 2 rule) 'allow)
             (eq (plist-get context :safety-level) :dangerous)
             (not (agent-q-rules--named-p rule))
             (or (null glob) (agent-q-rules--broad-p glob))
             (format "a rule saved from the prompt cannot allow the dangerous tool %s %s; give a narrower directory (or write such a rule by hand in `agent-q-approval-rules')"
                     (nth 0 rule)
                     (if glob (format "under %s, which covers nearly every file" glob)
                       "for every file"))))))

(defun agent-q-rules-save-from-prompt (tool-name args context)
  "Read a rule about TOOL-NAME's call with ARGS in CONTEXT, save it, apply it.
This is the approval prompt's \"s\" key.  The rule defaults to this
tool, the directory of the call's file argument (editable) and,
when the user says so, the call's client; for a terminal agent's own
shell command, fetch or read, to a :command, :domain or :path rule
limited to that agent (see `agent-q-rules--read-agent-rule').  A
command rule covers the parts of a line it names, never the others:
a compound command stays asked about.  It is kept for the
session, or saved with `customize-save-variable' when the user asks
to keep it.  Return the decision for this call when the new rules
decide it: (:rule :approved TEXT) or (:rule :denied TEXT); nil to ask
again (the user gave up, the rule was refused, or it asks)."
  (let* ((rule (agent-q-rules--read-rule tool-name args context))
         (refusal (and rule (agent-q-rules--refusal rule context))))
    (cond
     ((null rule) nil)
     (refusal (message "agent-q: rule not saved: %s" refusal)
              ;; Let the message be read before the prompt comes back over it.
              (unless noninteractive (sit-for 2))
              nil)
     (t
      (if (y-or-n-p (format "Keep \"%s\" in future sessions (saves `agent-q-approval-rules')? "
                            (agent-q-rules-describe rule)))
          (customize-save-variable 'agent-q-approval-rules
                                   (append agent-q-approval-rules (list rule)))
        (setq agent-q-rules--session (append agent-q-rules--session (list rule))))
      (let ((ruling (agent-q--ruling tool-name args context)))
        (pcase (car ruling)
          ('allow (list :rule :approved (agent-q-rules-ruling-text ruling)))
          ('deny (list :rule :denied (agent-q-rules-ruling-text ruling)))
          (_ (message "agent-q: rule saved; it does not decide this call")
             nil)))))))

(defun agent-q-forget-session-rules ()
  "Forget the approval rules saved from the prompt for this session.
Also withdraw what the prompt's \"a\" approved (see `agent-q-grants'):
the calls those covered are asked about again."
  (interactive)
  (setq agent-q-rules--session nil)
  (when (fboundp 'agent-q-prompt-forget-grants)
    (agent-q-prompt-forget-grants))
  (when (called-interactively-p 'interactive)
    (message "agent-q: the session's rules and the approvals of \"a\" are forgotten")))

(provide 'agent-q-rules)

;;; agent-q-rules.el ends here
