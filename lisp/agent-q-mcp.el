;;; agent-q-mcp.el --- agent-q as an MCP server for coding agents  -*- lexical-binding: t -*-

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

;; `agent-q-mcp-start' serves agent-q's tools to the coding agents of
;; the terminal (Claude Code, Codex CLI, Gemini CLI, any Model Context
;; Protocol client) from inside Emacs, over Streamable HTTP on
;; 127.0.0.1, with a bearer token, and records how to connect in
;; `agent-q-mcp-connection-file' (mode 0600), which the stdio relay
;; bin/agent-q-mcp also reads.  Nothing listens until the user starts
;; it (or turns on `agent-q-mcp-mode').
;;
;; The server itself runs in the module, on its own threads; it never
;; touches a Lisp value.  A tool call is queued there and Emacs is woken
;; through the module's channel; here, on Emacs's main thread, the call
;; runs through the asynchronous executor -- with the client named in
;; the prompt, the review and the audit log, cautious tools confirmed
;; too (`agent-q-mcp-confirm-safety-levels'), every call audited -- and
;; the result goes back to the waiting request.  Emacs busy delays calls
;; but loses none; a client's cancellation withdraws a pending approval
;; or review; while a call waits for the user, the client gets progress
;; notifications saying so.
;;
;; The read tools' allowed directories, for a call from an MCP client,
;; are that client's own workspace (`agent-q-call-workspace'): the MCP
;; roots it declared (the server asks for them with roots/list and again
;; on roots/list_changed), or, for a client that declares none (and for
;; the stateless 2026-07-28 revision, where the server cannot ask), the
;; directories fixed when the server started
;; (`agent-q-mcp-allowed-directories').  Never the current buffer's.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'json)
(require 'agent-q-async)
(require 'agent-q-guard)
(require 'agent-q-support)

(declare-function agent-q--visible "agent-q-prompt" (text))
(declare-function agent-q--core-mcp-make-token "agent-q-core" ())
(declare-function agent-q--core-mcp-start "agent-q-core" (port token progress-seconds))
(declare-function agent-q--core-mcp-stop "agent-q-core" ())
(declare-function agent-q--core-mcp-await-stopped "agent-q-core" ())
(declare-function agent-q--core-mcp-status "agent-q-core" ())
(declare-function agent-q--core-mcp-set-tools "agent-q-core" (registry max-level))
(declare-function agent-q--core-mcp-take "agent-q-core" ())
(declare-function agent-q--core-mcp-complete "agent-q-core" (key is-error text))
(declare-function agent-q--core-mcp-set-status "agent-q-core" (key text))
(declare-function agent-q--core-mcp-set-max-argument-bytes "agent-q-core" (max-argument-bytes))
(declare-function agent-q--core-mcp-stopped-reason "agent-q-core" ())
(declare-function agent-q--core-mcp-gate-answer "agent-q-core" (key decision detail))

(defvar agent-q-registry-change-functions)
(defvar agent-q-max-argument-bytes)

;;;; Options

(defgroup agent-q-mcp nil
  "Serving agent-q's tools as a Model Context Protocol server."
  :group 'agent-q
  :prefix "agent-q-mcp-")

(defcustom agent-q-mcp-port 0
  "Port of the MCP server on 127.0.0.1; 0 means a free port, chosen at start."
  :type 'natnum)

(defcustom agent-q-mcp-connection-file (locate-user-emacs-file "agent-q-mcp.json")
  "File where `agent-q-mcp-start' writes how to reach the server.
JSON with `url', `token' and `pid', readable by the user only (mode
0600).  The stdio relay (bin/agent-q-mcp) reads it; `agent-q-mcp-stop'
and Emacs's exit remove it."
  :type 'file)

(defcustom agent-q-mcp-max-safety-level :dangerous
  "The most dangerous tools offered to MCP clients.
Tools above it are neither listed nor callable over MCP: the server
refuses a call of one before it reaches Emacs.  Setting it with
`customize-set-variable' (or Customize) tells a running server at
once; after a plain `setq', \[agent-q-mcp-stop] and
\[agent-q-mcp-start] do."
  :type '(choice (const :safe) (const :cautious) (const :dangerous))
  :set (lambda (symbol value)
         (set-default symbol value)
         (when (fboundp 'agent-q-mcp--sync-tools)
           (agent-q-mcp--sync-tools))))

(defcustom agent-q-mcp-confirm-safety-levels '(:cautious :dangerous)
  "Safety levels whose calls from MCP clients need the user's approval.
A terminal agent's eval_form runs arbitrary code in your Emacs, so
cautious tools are confirmed too by default.  Dangerous calls always
are."
  :type '(set (const :tag "Dangerous (always)" :dangerous)
              (const :tag "Cautious" :cautious)
              (const :tag "Safe" :safe)))

(defcustom agent-q-mcp-allowed-directories nil
  "Directories MCP clients that declare no roots read without asking.
A client that declares MCP roots reads freely in its roots only (local
file:// roots; / and the home directory never count).  A client that
declares none, and every request of the stateless 2026-07-28 revision,
get these directories instead -- fixed when the server starts (see
`agent-q-mcp-status'), never the current buffer's.  nil means the
root of the project current when the server starts, or, outside a
project, `default-directory' then.  The root directory / and the home
directory itself are never allowed (list subdirectories instead): a
set made only of them is empty, and then every read asks."
  :type '(choice (const :tag "Project (or directory) current at start" nil)
                 (repeat directory)))

(defcustom agent-q-mcp-progress-interval 15
  "Seconds between progress notifications while a call waits for the user.
Sent only to clients that asked for progress; each resets clients'
idle timeouts (Claude Code gives up on a call idle for about 300 s)."
  :type 'number)

;;;; State

(defvar agent-q-mcp--url nil
  "The URL of the running server's endpoint, or nil.")

(defvar agent-q-mcp--token nil
  "The bearer token of the running server, or nil.")

(defvar agent-q-mcp--started 0
  "When the server last started, in milliseconds since the epoch.
Never the same for two starts in this Emacs.")

(defvar agent-q-mcp--run nil
  "What makes the call ids of the running server unique across starts.
\"MS.PID\": `agent-q-mcp--started' and Emacs's pid, so that an audit
log written by several sessions of several Emacs never holds two
calls with the same id.")

(defvar agent-q-mcp--fixed-directories nil
  "The fixed allowed directories of the running server, as true names.
Set when the server starts, from `agent-q-mcp-allowed-directories'.")

(defvar agent-q-mcp--fixed-notes nil
  "Why directories of the fixed set were left out, when some were.")

(defconst agent-q-mcp--max-clients 64
  "The most clients `agent-q-mcp-status' remembers; the least recent go first.")

(defvar agent-q-mcp--clients nil
  "The clients that called since the server started, most recent first.
Each is a plist (:client LABEL :session SESSION :protocol VERSION
:calls N :last-call TIME :last-tool TOOL).")

(defvar agent-q-mcp--backlog nil
  "Events taken from the server and not yet acted on, oldest first.")

(defvar agent-q-mcp--backlog-timer nil
  "The timer that will go on with `agent-q-mcp--backlog', or nil.")

(defvar agent-q-mcp--calls (make-hash-table)
  "Calls under way: the server's key -> (BATCH . LAST-STATUS).")

(defvar agent-q-mcp--status-timer nil
  "The timer that will tell waiting clients their status, or nil.")

(defvar agent-q-mcp-start-hook nil
  "Functions run, without arguments, once the MCP server has started.")

(defvar agent-q-mcp-stop-hook nil
  "Functions run, without arguments, as the MCP server stops.")

(defvar agent-q-mcp-gate-function nil
  "Function called with each gate item of the server, or nil.
An item is (:gate KEY ...), (:gate-withdrawn KEY) or (:gate-timed-out
KEY SECONDS REASON): a terminal agent's own tool call, through its hook
\(see `agent-q-gate-mode'; or (:turn AGENT SESSION LABEL): its prompt
hook says a turn begins,
which sets it).  With none, a gate request is answered `ask': the
agent's own prompt.")

(defun agent-q-mcp-running-p ()
  "Non-nil when the MCP server is running."
  (and (fboundp 'agent-q--core-mcp-status) (agent-q--core-mcp-status) t))

;;;; Starting and stopping

;;;###autoload
(defun agent-q-mcp-start (&optional interactive)
  "Start serving agent-q's tools to MCP clients on 127.0.0.1.
The URL and a fresh token go into `agent-q-mcp-connection-file'; see
\[agent-q-mcp-connect-agent] to connect an agent.
Return the URL.

When the server runs already, restore its connection file if it is
missing (and, if INTERACTIVE, as when called as a command, say so).

When another live Emacs serves through the same connection file (a
second Emacs started with `agent-q-mcp-mode' in the init file, say for
a commit message), this Emacs does not serve: taking the file would cut
off every agent configured for the first one.  It says which Emacs
serves and returns nil (signals a `user-error' if INTERACTIVE).  To
serve from here, stop the server there, or give this Emacs another
`agent-q-mcp-connection-file'."
  (interactive (list t))
  (let ((owner (agent-q-mcp--connection-file-owner)))
    (cond
     ((agent-q-mcp-running-p)
      (unless (eq owner 'self)
        (if (integerp owner)
            (message "agent-q: the connection file %s now names Emacs %d; left as it is"
                     (agent-q-mcp--file-name) owner)
          (agent-q-mcp--write-connection-file)
          (message "agent-q: the connection file %s was missing; written again"
                   (agent-q-mcp--file-name))))
      (when interactive
        (message "agent-q: the MCP server is already running at %s" agent-q-mcp--url))
      agent-q-mcp--url)
     ((integerp owner)
      (let ((text (format "agent-q: Emacs %d serves MCP through %s; this Emacs does not serve (stop it there, or give this Emacs another `agent-q-mcp-connection-file')"
                          owner (agent-q-mcp--file-name))))
        (if interactive (user-error "%s" text) (message "%s" text)))
      nil)
     (t (agent-q-mcp--start-server)))))

(defun agent-q-mcp--start-server ()
  "Start the server, write the connection file; return the URL."
  (agent-q--ensure-channel)
  (agent-q-mcp--fix-directories)
  (setq agent-q-mcp--started (max (truncate (* 1000 (float-time)))
                                  (1+ agent-q-mcp--started))
        agent-q-mcp--run (format "%d.%d" agent-q-mcp--started (emacs-pid)))
  (let ((token (agent-q--core-mcp-make-token)))
    (setq agent-q-mcp--url (agent-q--core-mcp-start agent-q-mcp-port token
                                                    (float agent-q-mcp-progress-interval))
          agent-q-mcp--token token))
  (cl-pushnew #'agent-q-mcp--drain agent-q--channel-drain-functions)
  (add-hook 'agent-q-registry-change-functions #'agent-q-mcp--registry-changed)
  (add-hook 'agent-q-pending-change-hook #'agent-q-mcp--update-statuses)
  (add-hook 'kill-emacs-hook #'agent-q-mcp--stop-at-exit)
  (agent-q-mcp--sync-tools)
  (agent-q-mcp--write-connection-file)
  (run-hooks 'agent-q-mcp-start-hook)
  (message "agent-q: MCP server at %s (M-x agent-q-mcp-connect-agent connects an agent)"
           agent-q-mcp--url)
  agent-q-mcp--url)

(defun agent-q-mcp-stop (&optional interactive)
  "Stop the MCP server: release its port, remove the connection file.
Calls still waiting are withdrawn (nothing more of them runs) and their
clients get an error.  Return t if it was running.  INTERACTIVE, as
when called as a command, means say that it stopped.
It returns at once: the module writes those errors and closes the
connections on a thread of its own."
  (interactive (list t))
  (when (agent-q-mcp-running-p)
    (run-hooks 'agent-q-mcp-stop-hook))
  (let ((was (and (fboundp 'agent-q--core-mcp-stop) (agent-q--core-mcp-stop))))
    (maphash (lambda (_key entry)
               (agent-q-cancel-batch (car entry) (agent-q--core-mcp-stopped-reason)))
             agent-q-mcp--calls)
    (clrhash agent-q-mcp--calls)
    (setq agent-q-mcp--clients nil)
    (when agent-q-mcp--status-timer
      (cancel-timer agent-q-mcp--status-timer)
      (setq agent-q-mcp--status-timer nil))
    ;; The server answered the calls not yet started when it stopped.
    (setq agent-q-mcp--backlog nil)
    (when agent-q-mcp--backlog-timer
      (cancel-timer agent-q-mcp--backlog-timer)
      (setq agent-q-mcp--backlog-timer nil))
    (setq agent-q--channel-drain-functions
          (delq #'agent-q-mcp--drain agent-q--channel-drain-functions))
    (remove-hook 'agent-q-registry-change-functions #'agent-q-mcp--registry-changed)
    (remove-hook 'agent-q-pending-change-hook #'agent-q-mcp--update-statuses)
    (remove-hook 'kill-emacs-hook #'agent-q-mcp--stop-at-exit)
    (agent-q-mcp--delete-connection-file)
    (setq agent-q-mcp--url nil agent-q-mcp--token nil
          agent-q-mcp--fixed-directories nil agent-q-mcp--fixed-notes nil)
    (when (and was interactive)
      (message "agent-q: MCP server stopped"))
    was))

(defun agent-q-mcp--stop-at-exit ()
  "Stop the server as Emacs exits, and let its clients hear it.
The thread that writes the stopped calls' errors and closes the
connections dies with Emacs, so this waits for it, as long as a stop
can take (2 s; milliseconds when the clients read their answers): the
user has asked Emacs to go away already."
  (agent-q-mcp-stop)
  (when (fboundp 'agent-q--core-mcp-await-stopped)
    (agent-q--core-mcp-await-stopped)))

;;;###autoload
(define-minor-mode agent-q-mcp-mode
  "Serve agent-q's tools to MCP clients while this mode is on.
Turning it on starts the server (`agent-q-mcp-start'), off stops it.
Put (agent-q-mcp-mode 1) in your init file to start it with Emacs."
  :global t
  :group 'agent-q-mcp
  (if agent-q-mcp-mode
      ;; Another Emacs may serve already: then this one does not, and
      ;; the mode says so by staying off.
      (unless (agent-q-mcp-start)
        (setq agent-q-mcp-mode nil))
    (agent-q-mcp-stop)))

;;;; The allowed directories

(defun agent-q-mcp--directory-problem (dir)
  "Return why DIR cannot be an allowed directory of MCP clients, or nil.
DIR is an absolute true directory name."
  (cond
   ((file-remote-p dir) "it is remote")
   ((equal dir (file-name-directory (directory-file-name dir)))
    "it is the root directory /, which would allow reading nearly everything")
   ((agent-q-builtins--too-broad-p dir)
    "it is the home directory itself, which would allow reading nearly everything")))

(defun agent-q-mcp--fix-directories ()
  "Fix the allowed directories of MCP clients without roots, for this server.
From `agent-q-mcp-allowed-directories', or by default the current
project's root, else `default-directory'."
  (let ((candidates
         (or agent-q-mcp-allowed-directories
             (list (or (and (not (file-remote-p default-directory))
                            (let ((project (ignore-errors (project-current nil))))
                              (and project (project-root project))))
                       default-directory))))
        (dirs nil) (notes nil))
    (dolist (candidate candidates)
      (when (stringp candidate)
        (let* ((dir (if (file-remote-p candidate)
                        candidate
                      (file-name-as-directory (file-truename (expand-file-name candidate)))))
               (problem (agent-q-mcp--directory-problem dir)))
          (if problem
              (push (format "%s is not allowed: %s" (abbreviate-file-name dir) problem) notes)
            (cl-pushnew dir dirs :test #'equal)))))
    (setq agent-q-mcp--fixed-directories (nreverse dirs)
          agent-q-mcp--fixed-notes (nreverse notes))))

(defun agent-q-mcp--workspace (props client)
  "The workspace of a call of CLIENT described by PROPS.
The value for `agent-q-call-workspace': the MCP roots the client
declared (PROPS' :roots), else the server's fixed directories."
  (let ((roots (plist-get props :roots)))
    (if roots
        (list :directories (plist-get roots :directories)
              :source (format "the MCP roots %s declared" client))
      (list :directories agent-q-mcp--fixed-directories
            :source "the MCP server's fixed directories, for clients that declare no roots (agent-q-mcp-allowed-directories)"))))

;;;; The connection file

(defun agent-q-mcp--write-connection-file ()
  "Write `agent-q-mcp-connection-file', readable by the user only."
  (agent-q--write-private
   (expand-file-name agent-q-mcp-connection-file)
   (json-encode `((url . ,agent-q-mcp--url)
                  (token . ,agent-q-mcp--token)
                  (pid . ,(emacs-pid))))))

(defun agent-q-mcp--file-name ()
  "`agent-q-mcp-connection-file', abbreviated, for messages."
  (abbreviate-file-name (expand-file-name agent-q-mcp-connection-file)))

(defun agent-q-mcp--live-emacs-p (pid)
  "Non-nil when PID is a live Emacs process of this user.
A pid the system has given to another program since is not one."
  (let ((attributes (and (natnump pid) (process-attributes pid))))
    (and attributes
         (equal (alist-get 'euid attributes) (user-uid))
         (string-match-p "emacs" (or (alist-get 'comm attributes) "")))))

(defun agent-q-mcp--connection-file-owner ()
  "Who `agent-q-mcp-connection-file' belongs to.
`self' when this Emacs wrote it, the pid of another live Emacs that
did, or nil when there is no file (or it names no live Emacs: it was
left by one that crashed, or it cannot be read)."
  (let* ((file (expand-file-name agent-q-mcp-connection-file))
         (pid (and (file-regular-p file)
                   (ignore-errors (alist-get 'pid (json-read-file file))))))
    (cond
     ((not (natnump pid)) nil)
     ((= pid (emacs-pid)) 'self)
     ((agent-q-mcp--live-emacs-p pid) pid))))

(defun agent-q-mcp--delete-connection-file ()
  "Delete `agent-q-mcp-connection-file' if this Emacs wrote it."
  (when (eq (agent-q-mcp--connection-file-owner) 'self)
    (delete-file (expand-file-name agent-q-mcp-connection-file))))

;;;; The tools offered

(defun agent-q-mcp--sync-tools ()
  "Offer the current tools; clients are told if the list changed.
The server also learns `agent-q-max-argument-bytes', so that it refuses
larger arguments before they reach Emacs."
  (when (agent-q-mcp-running-p)
    (agent-q--core-mcp-set-max-argument-bytes agent-q-max-argument-bytes)
    (agent-q--core-mcp-set-tools nil agent-q-mcp-max-safety-level)))

(defun agent-q-mcp--registry-changed (registry)
  "Offer the tools again after the global REGISTRY changed."
  (unless registry
    (agent-q-mcp--sync-tools)))

;;;; Calls

(defconst agent-q-mcp--max-client-chars 60
  "The most characters of an MCP client's name and version shown to the user.")

(defun agent-q-mcp--client-label (client)
  "How the prompt, the review and the audit log name CLIENT.
CLIENT is \"NAME VERSION\" as the MCP client introduced itself: its
own claim, so its control, bidirectional formatting, zero-width and
separator characters show as escapes (`agent-q--visible'), and then it
is cut to `agent-q-mcp--max-client-chars' columns of display width,
lest a name such as \"x wants to run read_file [safe]\" followed by
newlines write the approval prompt.  \" (MCP)\" is appended, so that no
MCP client can pass for a bridge (gptel, llm) or claim its approvals."
  (let* ((text (agent-q--visible
                (string-trim
                 (if (and (stringp client) (not (string-blank-p client))) client "unknown")))))
    (concat (truncate-string-to-width text agent-q-mcp--max-client-chars nil nil "...")
            " (MCP)")))

(defconst agent-q-mcp--slice 0.01
  "Seconds of acting on the server's events before Emacs gets its main loop back.")

(defun agent-q-mcp--drain ()
  "Take the server's events and act on them."
  (when (fboundp 'agent-q--core-mcp-take)
    (setq agent-q-mcp--backlog (nconc agent-q-mcp--backlog (agent-q--core-mcp-take)))
    (agent-q-mcp--work)))

(defun agent-q-mcp--work ()
  "Act on the oldest events of `agent-q-mcp--backlog', for a slice of time.
A burst of calls is started a few at a time, each slice from a timer,
so that Emacs's main loop (input, redisplay) runs in between."
  (setq agent-q-mcp--backlog-timer nil)
  (let ((deadline (+ (float-time) agent-q-mcp--slice)))
    (while (and agent-q-mcp--backlog (< (float-time) deadline))
      (pcase (pop agent-q-mcp--backlog)
        (`(:call ,key . ,props) (agent-q-mcp--call key props))
        (`(:cancel ,key) (agent-q-mcp--cancel key))
        ((and `(,(or :gate :gate-withdrawn :gate-timed-out) ,key . ,_) event)
         (agent-q-mcp--gate event key))
        ((and `(:turn . ,_) event) (agent-q-mcp--gate event nil)))))
  (when (and agent-q-mcp--backlog (not agent-q-mcp--backlog-timer))
    (setq agent-q-mcp--backlog-timer (run-at-time 0 nil #'agent-q-mcp--work))))

(defun agent-q-mcp--gate (event key)
  "Hand the gate item EVENT, about the request KEY, to `agent-q-mcp-gate-function'."
  (cond
   (agent-q-mcp-gate-function
    (condition-case err
        (funcall agent-q-mcp-gate-function event)
      (error
       (message "agent-q: the gate failed: %s" (error-message-string err))
       (when (eq (car event) :gate)
         (ignore-errors (agent-q--core-mcp-gate-answer key 'ask nil))))))
   ((eq (car event) :gate)
    (ignore-errors (agent-q--core-mcp-gate-answer key 'ask nil)))))

(defun agent-q-mcp--note-client (label props)
  "Remember that the client LABEL made the call described by PROPS."
  (let* ((session (plist-get props :session))
         (entry (cl-find-if (lambda (e) (and (equal (plist-get e :client) label)
                                             (equal (plist-get e :session) session)))
                            agent-q-mcp--clients))
         (rest (delq entry agent-q-mcp--clients)))
    (setq agent-q-mcp--clients
          (cons (list :client label :session session
                      :protocol (plist-get props :protocol)
                      :calls (1+ (or (plist-get entry :calls) 0))
                      :last-call (current-time)
                      :last-tool (agent-q--visible (format "%s" (plist-get props :tool))))
                (if (>= (length rest) agent-q-mcp--max-clients)
                    (butlast rest)
                  rest)))))

(defun agent-q-mcp--describe-clients ()
  "The clients that called, in words, for `agent-q-mcp-status'."
  (if (null agent-q-mcp--clients)
      "No client has called yet."
    (concat "Clients: "
            (mapconcat (lambda (e)
                         (format "%s (%s, %d call%s, last %s %ds ago)"
                                 (plist-get e :client)
                                 (or (plist-get e :protocol) "protocol unknown")
                                 (plist-get e :calls)
                                 (if (= 1 (plist-get e :calls)) "" "s")
                                 (plist-get e :last-tool)
                                 (truncate (float-time (time-subtract nil (plist-get e :last-call))))))
                       agent-q-mcp--clients "; ")
            ".")))

(defun agent-q-mcp--call (key props)
  "Run the call KEY described by PROPS; its result answers the client."
  (let* ((tool (plist-get props :tool))
         (client (plist-get props :client))
         (label (agent-q-mcp--client-label client)))
    (agent-q-mcp--note-client label props)
    (let ((batch (agent-q--execute-async
                  (list (list :id (format "mcp-%s-%d" agent-q-mcp--run key) :name tool
                              :arguments (plist-get props :arguments)))
                  (lambda (results)
                    (remhash key agent-q-mcp--calls)
                    (let ((result (car results)))
                      (agent-q--core-mcp-complete key (not (plist-get result :success))
                                                  (plist-get result :content))))
                  nil
                  ;; The origin is the driver's to say: (:client ... :mcp-client ...)
                  ;; makes these calls an MCP client's, whatever it is called; the
                  ;; channel (its session's, or its own request's) is the hub's, and
                  ;; keys what the call may see of others' (get_repl_history).
                  :client (list :client label
                                :mcp-client (or (plist-get props :client-name) "")
                                :channel (plist-get props :channel))
                  :confirm agent-q-mcp-confirm-safety-levels
                  :audit-all t
                  :workspace (agent-q-mcp--workspace props label))))
      (puthash key (cons batch nil) agent-q-mcp--calls)
      (agent-q-mcp--update-statuses))))

(defun agent-q-mcp--cancel (key)
  "Withdraw the call KEY: its client cancelled it or went away."
  (let ((entry (gethash key agent-q-mcp--calls)))
    (remhash key agent-q-mcp--calls)
    (when entry
      (agent-q-cancel-batch (car entry) "the MCP client cancelled the request"))))

(defun agent-q-mcp--update-statuses ()
  "Tell each waiting client, soon, what its call waits for.
Many changes in a row (a burst of calls arriving) are told once, from
a timer: each telling looks at every waiting call."
  (unless (or agent-q-mcp--status-timer (zerop (hash-table-count agent-q-mcp--calls)))
    (setq agent-q-mcp--status-timer (run-at-time 0 nil #'agent-q-mcp--send-statuses))))

(defun agent-q-mcp--send-statuses ()
  "Tell each waiting client what its call waits for, if that changed.
One pass over the pending calls, then O(1) per waiting call."
  (setq agent-q-mcp--status-timer nil)
  (let ((waiting (agent-q-batches-waiting-for)))
    (maphash (lambda (key entry)
               (let* ((phrase (gethash (car entry) waiting))
                      (status (and phrase (format "waiting for %s in Emacs" phrase))))
                 (when (and status (not (equal status (cdr entry))))
                   (setcdr entry status)
                   (agent-q--core-mcp-set-status key status))))
             agent-q-mcp--calls)))

;;;; Status

(defun agent-q-mcp--client-roots (status)
  "Describe the roots of each client in the server's STATUS.
Return a list of plists (:client LABEL :directories DIRS :ignored
NOTES :state STATE): DIRS are the directories its calls read freely,
NOTES say which roots do not count and why."
  (mapcar
   (lambda (session)
     (let ((dirs nil)
           (notes (plist-get session :ignored)))
       (dolist (dir (plist-get session :directories))
         (let* ((true (file-name-as-directory (file-truename (expand-file-name dir))))
                (problem (agent-q-mcp--directory-problem true)))
           (if problem
               (push (format "%s: %s" dir problem) notes)
             (push true dirs))))
       (list :client (agent-q-mcp--client-label (plist-get session :client))
             :state (plist-get session :state)
             :directories (nreverse dirs)
             :ignored (append (and (plist-get session :why)
                                   (list (format "%s: the fixed directories apply"
                                                 (plist-get session :why))))
                              (nreverse notes)))))
   (plist-get status :roots)))

(defun agent-q-mcp--describe-directories (fixed clients)
  "The text of the status about FIXED and CLIENTS' allowed directories."
  (concat
   (format "Clients without roots read freely in: %s%s."
           (if fixed (mapconcat #'abbreviate-file-name fixed ", ") "nothing (every read asks)")
           (if agent-q-mcp--fixed-notes
               (format " (%s)" (string-join agent-q-mcp--fixed-notes "; "))
             ""))
   ;; One line per client and roots: a client's sessions share them.
   (mapconcat
    #'identity
    (delete-dups
     (mapcar
      (lambda (client)
        (format "  %s: %s%s." (plist-get client :client)
              (pcase (plist-get client :state)
                ('asking "its roots are being asked for")
                ('failed "no usable roots; the fixed directories apply")
                (_ (let ((dirs (plist-get client :directories)))
                     (if dirs
                         (format "its roots %s" (mapconcat #'abbreviate-file-name dirs ", "))
                       "no usable root (every read asks)"))))
              (let ((ignored (plist-get client :ignored)))
                (if ignored (format " (not allowed: %s)" (string-join ignored "; ")) ""))))
      clients))
    "")))

(defun agent-q-mcp-status (&optional interactive)
  "Show the MCP server's state: clients, allowed directories, connection file.
Return a plist (:url URL :token TOKEN :pending N :connection-file FILE
:file-state STATE :allowed-directories DIRS :clients CLIENTS
:connected CONNECTED :directories TEXT), or nil when the server is not
running.  STATE says whether the connection file is this Emacs's
\(`ours'), `missing' (\[agent-q-mcp-start] writes it again), or another
Emacs's, (other PID).  DIRS are the directories fixed at start that
clients without roots read freely; CLIENTS describe the clients that
declared roots (see `agent-q-mcp--client-roots'); CONNECTED the
clients that called since the server started, most recent first
\(plists with :client, :session, :protocol, :calls, :last-call and
:last-tool); TEXT says the directories in words.  INTERACTIVE, as when
called as a command, means show the state in the echo area (never the
token).  To connect an agent, use \[agent-q-mcp-connect-agent]."
  (interactive (list t))
  (let ((status (and (fboundp 'agent-q--core-mcp-status) (agent-q--core-mcp-status)))
        (owner (agent-q-mcp--connection-file-owner)))
    (if (not status)
        (progn (when interactive
                 (if (integerp owner)
                     (message "agent-q: this Emacs does not serve MCP; Emacs %d does, through %s"
                              owner (agent-q-mcp--file-name))
                   (message "agent-q: the MCP server is not running (M-x agent-q-mcp-start)")))
               nil)
      (let* ((clients (agent-q-mcp--client-roots status))
             (directories (agent-q-mcp--describe-directories agent-q-mcp--fixed-directories clients)))
        (when interactive
          (message "agent-q: MCP server at %s, %d call(s) waiting; connection file %s%s.  %s  %s  (M-x agent-q-mcp-connect-agent connects an agent.)"
                   agent-q-mcp--url (plist-get status :pending)
                   (agent-q-mcp--file-name)
                   (pcase owner
                     ('self "")
                     ('nil " (missing: M-x agent-q-mcp-start writes it again)")
                     (pid (format " (now Emacs %d's)" pid)))
                   (agent-q-mcp--describe-clients)
                   directories))
        (list :url agent-q-mcp--url :token agent-q-mcp--token
              :pending (plist-get status :pending)
              :connection-file (expand-file-name agent-q-mcp-connection-file)
              :file-state (pcase owner ('self 'ours) ('nil 'missing) (pid (list 'other pid)))
              :allowed-directories agent-q-mcp--fixed-directories
              :clients clients
              :connected agent-q-mcp--clients
              :directories directories)))))

(provide 'agent-q-mcp)

;;; agent-q-mcp.el ends here
