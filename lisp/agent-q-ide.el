;;; agent-q-ide.el --- Emacs as the IDE of Gemini CLI and Claude Code  -*- lexical-binding: t -*-

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

;; `agent-q-ide-mode' makes Emacs the IDE companion of the terminal
;; agents Gemini CLI and Claude Code: an agent run in a terminal started
;; from Emacs (M-x vterm, eat, ansi-term, shell) connects to Emacs, sees
;; which files Emacs has open, where the cursor is and what is selected,
;; and shows each edit it proposes in agent-q's hunk review, where the
;; user accepts or rejects each hunk (or edits it) before the agent
;; writes the file.
;;
;; The servers run in the module (src/ide.rs, crates/agent-q-core/src/ide):
;; Gemini's companion speaks MCP over Streamable HTTP, Claude Code's over
;; a WebSocket, both on 127.0.0.1 with a fresh token.  Here, on Emacs's
;; main thread, the mode
;;
;; - writes how to connect: Gemini CLI's discovery file
;;   TMPDIR/gemini/ide/gemini-ide-server-PID-PORT.json and Claude Code's
;;   lock file ~/.claude/ide/PORT.lock (under $CLAUDE_CONFIG_DIR/ide/
;;   when that is set), both readable by the user only, removed when the
;;   mode goes off or Emacs exits;
;; - puts GEMINI_CLI_IDE_PID, GEMINI_CLI_IDE_SERVER_PORT and
;;   CLAUDE_CODE_SSE_PORT (and, in a container, REMOTE_CONTAINERS) into
;;   `process-environment', so that an agent
;;   started from a terminal of this Emacs finds this Emacs (Claude Code
;;   then connects by itself; Gemini CLI once `ide.enabled' is set, by
;;   its command /ide enable);
;; - acts on the servers' events, taken through the module's channel:
;;   an edit to review, a review to close, diagnostics (Flymake, and
;;   Flycheck when loaded) or a file to open;
;; - sends the editor context when a client asks for it and, debounced,
;;   whenever the selected buffer, the point or the region changes.
;;
;; The review of an agent's edit is `agent-q-review-merge-async': it
;; changes neither the file nor its buffer; the agent gets the merged
;; text of the accepted hunks and writes it itself, after which a buffer
;; visiting the file is reverted (a 0.2 s timer watches the file's
;; modification time until the buffer holds the text the agent got).
;; An edit the gate (`agent-q-gate-mode') has just reviewed to exactly
;; this text is accepted without a second review
;; (`agent-q-gate-edit-take-reviewed').  Each openDiff is one call of
;; the gate's agent_edit (lisp/agent-q-gate-edit.el), run by the
;; executor: a deny rule of `agent-q-approval-rules' for "agent_edit"
;; (with :path, :mcp-client) rejects the edit without showing it, the
;; pending list and the audit log count it, and the agent closing the
;; diff withdraws it.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'json)
(require 'url-util)
(require 'agent-q)
(require 'agent-q-async)
(require 'agent-q-review)
(require 'agent-q-rules)
(require 'agent-q-support)
(require 'agent-q-gate)
(require 'agent-q-gate-edit)

(declare-function agent-q--core-ide-start "agent-q-core" ())
(declare-function agent-q--core-ide-stop "agent-q-core" ())
(declare-function agent-q--core-ide-await-stopped "agent-q-core" ())
(declare-function agent-q--core-ide-status "agent-q-core" ())
(declare-function agent-q--core-ide-take "agent-q-core" ())
(declare-function agent-q--core-ide-answer "agent-q-core" (key plist))
(declare-function agent-q--core-ide-set-context "agent-q-core" (plist))
(declare-function agent-q--core-ide-gemini-discovery "agent-q-core" (port token workspaces))
(declare-function agent-q--core-ide-claude-lock "agent-q-core" (token workspaces pid))
(declare-function project-known-project-roots "project" ())
(declare-function project-root "project" (project))
(declare-function flymake-diagnostics "flymake" (&optional beg end))
(declare-function flymake-diagnostic-beg "flymake" (diag))
(declare-function flymake-diagnostic-end "flymake" (diag))
(declare-function flymake-diagnostic-type "flymake" (diag))
(declare-function flymake-diagnostic-text "flymake" (diag))
(declare-function flymake-diagnostic-backend "flymake" (diag))
(declare-function flycheck-error-line "flycheck" (err))
(declare-function flycheck-error-column "flycheck" (err))
(declare-function flycheck-error-end-line "flycheck" (err))
(declare-function flycheck-error-end-column "flycheck" (err))
(declare-function flycheck-error-level "flycheck" (err))
(declare-function flycheck-error-message "flycheck" (err))
(declare-function flycheck-error-checker "flycheck" (err))
(declare-function flycheck-error-id "flycheck" (err))
(declare-function flycheck-error-level-severity "flycheck" (level))

(defvar flymake-mode)
(defvar flycheck-mode)
(defvar flycheck-current-errors)

;;;; Options

(defgroup agent-q-ide nil
  "Emacs as the IDE companion of Gemini CLI and Claude Code."
  :group 'agent-q
  :prefix "agent-q-ide-")

(defcustom agent-q-ide-workspace-folders nil
  "The workspace folders told to the terminal agents, or nil for the default.
Gemini CLI connects only when the directory it runs in lies inside one
of them (unless GEMINI_CLI_IDE_SERVER_PORT, which terminals started
from Emacs inherit, names this Emacs); Claude Code started outside
Emacs, with --ide or /ide, likewise.  nil means the known projects
\(`project-known-project-roots') and the project of `default-directory'
when the mode is turned on, or that directory itself outside a
project.  The files are written when the mode is turned on: turn it
off and on again after a change."
  :type '(choice (const :tag "Known projects and the current one" nil)
                 (repeat directory)))

(defcustom agent-q-ide-context-delay 0.3
  "Seconds of quiet after a change before the editor context is sent."
  :type 'number)

(defcustom agent-q-ide-revert-seconds 30
  "Seconds to watch a file for the agent's write after an accepted review.
A buffer visiting the file, and not modified, is reverted as soon as
the file changes on disk within that time."
  :type 'number)

;;;; State

(defvar agent-q-ide--servers nil
  "The running servers, or nil.
A plist (:gemini-port N :gemini-token S :claude-port N :claude-token S).")

(defvar agent-q-ide--files nil
  "The discovery and lock files this Emacs wrote, absolute names.")

(defvar agent-q-ide--saved-environment nil
  "What the variables the mode sets were before: ((NAME . OLD-VALUE-OR-NIL) ...).")

(defvar agent-q-ide--reviews nil
  "Open reviews of agents' edits, newest first.
Each is a plist (:key K :agent A :path P :tab T :review R :label L :id ID).")

(defvar agent-q-ide--context-timer nil
  "The timer that will send the editor context, or nil.")

(defvar agent-q-ide--last-context nil
  "The editor context last sent to the module.")

(defvar agent-q-ide--watches nil
  "Files watched for an agent's write: a list of (FILE DEADLINE TEXT).")

(defvar agent-q-ide--watch-timer nil
  "The timer checking `agent-q-ide--watches', or nil.")

(defvar agent-q-ide--run nil
  "What makes the audit ids of the running servers unique: \"MS.PID\".")

(defconst agent-q-ide--environment-variables
  '("GEMINI_CLI_IDE_PID" "GEMINI_CLI_IDE_SERVER_PORT" "CLAUDE_CODE_SSE_PORT"
    "REMOTE_CONTAINERS")
  "The environment variables the mode sets for terminals started from Emacs.
REMOTE_CONTAINERS only inside a container: see `agent-q-ide--in-container-p'.")

(defun agent-q-ide--in-container-p ()
  "Return non-nil when Emacs is in a container, as Gemini CLI judges it.
Gemini CLI in a container (/.dockerenv or /run/.containerenv exists)
looks for its IDE at host.docker.internal, the container's host,
unless SSH_CONNECTION or REMOTE_CONTAINERS is set.  A terminal started
from this Emacs runs in the same container as Emacs, so the mode sets
REMOTE_CONTAINERS there, and Gemini CLI connects to 127.0.0.1."
  (or (file-exists-p "/.dockerenv") (file-exists-p "/run/.containerenv")))

(defconst agent-q-ide--max-context-files 50
  "The most file buffers looked at for the context (the core keeps fewer).")

(defconst agent-q-ide--max-selection-chars 65536
  "The most characters of the region copied for the context.
The core cuts the selection shorter still; this only bounds the copy.")

;;;; Workspace folders and files

(defun agent-q-ide-workspaces ()
  "The workspace folders to tell the agents: absolute directory names."
  (let ((dirs
         (or agent-q-ide-workspace-folders
             (progn
               (require 'project)
               (append
                (list (or (and (not (file-remote-p default-directory))
                               (let ((project (ignore-errors (project-current nil))))
                                 (and project (project-root project))))
                          default-directory))
                (ignore-errors (project-known-project-roots)))))))
    (delete-dups
     (delq nil (mapcar (lambda (dir)
                         (and (stringp dir) (not (file-remote-p dir))
                              (directory-file-name (expand-file-name dir))))
                       dirs)))))

(defun agent-q-ide-gemini-file (port)
  "Gemini CLI's discovery file for this Emacs serving on PORT.
In the directory gemini/ide/ of the system's temporary directory (the
TMPDIR that Gemini CLI, a Node program, also uses)."
  (expand-file-name (format "gemini/ide/gemini-ide-server-%d-%d.json" (emacs-pid) port)
                    (or (getenv "TMPDIR") temporary-file-directory)))

(defun agent-q-ide-claude-file (port)
  "Claude Code's lock file for this Emacs serving on PORT.
$CLAUDE_CONFIG_DIR/ide/PORT.lock, or ~/.claude/ide/PORT.lock."
  (expand-file-name (format "ide/%d.lock" port)
                    (or (getenv "CLAUDE_CONFIG_DIR") (expand-file-name "~/.claude"))))

(defun agent-q-ide--write-files ()
  "Write Gemini CLI's discovery file and Claude Code's lock file."
  (let ((workspaces (agent-q-ide-workspaces))
        (gemini-port (plist-get agent-q-ide--servers :gemini-port))
        (claude-port (plist-get agent-q-ide--servers :claude-port)))
    ;; What the agents were told is their workspace: a trust's (see
    ;; `agent-q-ide--workspace').
    (setq agent-q-ide--servers (plist-put agent-q-ide--servers :workspaces workspaces))
    (let ((file (agent-q-ide-gemini-file gemini-port)))
      (agent-q--write-private
       file (agent-q--core-ide-gemini-discovery
             gemini-port (plist-get agent-q-ide--servers :gemini-token) workspaces))
      (push file agent-q-ide--files))
    (let ((file (agent-q-ide-claude-file claude-port)))
      (agent-q--write-private
       file (agent-q--core-ide-claude-lock
             (plist-get agent-q-ide--servers :claude-token) workspaces (emacs-pid)))
      (push file agent-q-ide--files))))

(defun agent-q-ide--remove-files ()
  "Remove the discovery and lock files this Emacs wrote."
  (dolist (file agent-q-ide--files)
    (ignore-errors (delete-file file)))
  (setq agent-q-ide--files nil))

;;;; The environment of terminals started from Emacs

(defun agent-q-ide--set-environment ()
  "Put the variables that lead the agents to this Emacs into `process-environment'."
  (setq agent-q-ide--saved-environment
        (mapcar (lambda (name) (cons name (getenv name)))
                agent-q-ide--environment-variables))
  (setenv "GEMINI_CLI_IDE_PID" (number-to-string (emacs-pid)))
  (setenv "GEMINI_CLI_IDE_SERVER_PORT"
          (number-to-string (plist-get agent-q-ide--servers :gemini-port)))
  (setenv "CLAUDE_CODE_SSE_PORT"
          (number-to-string (plist-get agent-q-ide--servers :claude-port)))
  (when (and (agent-q-ide--in-container-p) (not (getenv "REMOTE_CONTAINERS")))
    (setenv "REMOTE_CONTAINERS" "true")))

(defun agent-q-ide--restore-environment ()
  "Give the variables the mode set their values from before it was on."
  (dolist (name agent-q-ide--environment-variables)
    (let ((old (assoc name agent-q-ide--saved-environment)))
      (if (cdr old)
          (setenv name (cdr old))
        (setq process-environment
              (cl-remove-if (lambda (entry)
                              (or (equal entry name)
                                  (string-prefix-p (concat name "=") entry)))
                            process-environment)))))
  (setq agent-q-ide--saved-environment nil))

;;;; Starting and stopping

(defun agent-q-ide-running-p ()
  "Return non-nil when the IDE companion servers are running."
  (and agent-q-ide--servers t))

(defun agent-q-ide--start ()
  "Start the servers, write the files, set the environment and the hooks."
  (unless (fboundp 'agent-q--core-ide-start)
    (user-error "The loaded agent-q-core module has no IDE companion (rebuild it)"))
  (agent-q--ensure-channel)
  (setq agent-q-ide--servers (agent-q--core-ide-start)
        agent-q-ide--run (format "%d.%d" (truncate (* 1000 (float-time))) (emacs-pid)))
  (cl-pushnew #'agent-q-ide--drain agent-q--channel-drain-functions)
  (condition-case err
      (progn (agent-q-ide--write-files)
             (agent-q-ide--set-environment))
    (error (agent-q-ide--stop)
           (signal (car err) (cdr err))))
  (add-hook 'kill-emacs-hook #'agent-q-ide--stop-at-exit)
  (add-hook 'post-command-hook #'agent-q-ide--context-changed)
  (add-hook 'window-buffer-change-functions #'agent-q-ide--context-changed)
  (add-hook 'window-selection-change-functions #'agent-q-ide--context-changed)
  (agent-q-ide--send-context))

(defun agent-q-ide--stop ()
  "Stop the servers; remove the files, the environment and the hooks.
Open reviews close; the agents waiting for them are told the edit was
rejected (by the module, which answers what is pending).  It returns
at once: the module sends those answers and closes the connections on
a thread of its own."
  (remove-hook 'kill-emacs-hook #'agent-q-ide--stop-at-exit)
  (remove-hook 'post-command-hook #'agent-q-ide--context-changed)
  (remove-hook 'window-buffer-change-functions #'agent-q-ide--context-changed)
  (remove-hook 'window-selection-change-functions #'agent-q-ide--context-changed)
  (when agent-q-ide--context-timer
    (cancel-timer agent-q-ide--context-timer)
    (setq agent-q-ide--context-timer nil))
  (agent-q-ide--remove-files)
  (when agent-q-ide--saved-environment
    (agent-q-ide--restore-environment))
  (setq agent-q--channel-drain-functions
        (delq #'agent-q-ide--drain agent-q--channel-drain-functions))
  (dolist (entry agent-q-ide--reviews)
    (agent-q-ide--close-entry entry "the IDE companion's server stopped"))
  (setq agent-q-ide--reviews nil agent-q-ide--last-context nil)
  (prog1 (and agent-q-ide--servers (fboundp 'agent-q--core-ide-stop)
              (agent-q--core-ide-stop))
    (setq agent-q-ide--servers nil)))

(defun agent-q-ide--stop-at-exit ()
  "Stop the servers as Emacs exits, and let the agents hear it.
The thread that sends the rejections of open reviews and closes the
connections dies with Emacs, so this waits for it, as long as a stop
can take (0.7 s; about 0.1 s when the agents read their answers): the
user has asked Emacs to go away already."
  (agent-q-ide--stop)
  (when (fboundp 'agent-q--core-ide-await-stopped)
    (agent-q--core-ide-await-stopped)))

;;;###autoload
(define-minor-mode agent-q-ide-mode
  "Make Emacs the IDE of Gemini CLI and Claude Code run from its terminals.
Turning it on starts the companion servers on 127.0.0.1, writes Gemini
CLI's discovery file and Claude Code's lock file (readable by you
only), and sets GEMINI_CLI_IDE_PID, GEMINI_CLI_IDE_SERVER_PORT and
CLAUDE_CODE_SSE_PORT in `process-environment', so that a terminal
started from Emacs afterwards (vterm, eat, `ansi-term', shell) leads the
agents here.  Claude Code connects by itself; Gemini CLI once its IDE
mode is enabled (/ide enable).  The agents then see the files open in
Emacs, the cursor and the selection, and each edit they propose opens
agent-q's hunk review (see `agent-q-review-mode'): the agent writes
the accepted hunks.  Turning it off stops the servers and removes the
files and the variables.  \\[agent-q-ide-status] says who is connected."
  :global t
  :group 'agent-q-ide
  (if agent-q-ide-mode
      (condition-case err
          (progn (when (agent-q-ide-running-p) (agent-q-ide--stop))
                 (agent-q-ide--start))
        (error (setq agent-q-ide-mode nil)
               (message "agent-q: the IDE companion did not start: %s"
                        (error-message-string err))))
    (agent-q-ide--stop)))

(defun agent-q-ide-status (&optional interactive)
  "Show whether the IDE companion is on, its ports, and the agents connected.
Return a plist (:running BOOL :gemini-port N :claude-port N :files
FILES :clients CLIENTS), CLIENTS as the module reports them ((:agent
A :name N ...) ...).  INTERACTIVE, as when called as a command, means
show it in the echo area."
  (interactive (list t))
  (let* ((status (and (agent-q-ide-running-p) (agent-q--core-ide-status)))
         (clients (plist-get status :clients))
         (result (list :running (and status (plist-get status :running) t)
                       :gemini-port (plist-get agent-q-ide--servers :gemini-port)
                       :claude-port (plist-get agent-q-ide--servers :claude-port)
                       :files agent-q-ide--files
                       :clients clients)))
    (when interactive
      (if (not (plist-get result :running))
          (message "agent-q: the IDE companion is off (M-x agent-q-ide-mode turns it on)")
        (message "agent-q: IDE companion for Gemini CLI on port %d, Claude Code on port %d; %s; files %s"
                 (plist-get result :gemini-port) (plist-get result :claude-port)
                 (if clients
                     (concat "connected: "
                             (mapconcat (lambda (c)
                                          (format "%s (%s)" (plist-get c :name)
                                                  (agent-q-ide--agent-name (plist-get c :agent))))
                                        clients ", "))
                   "no agent connected")
                 (mapconcat #'abbreviate-file-name agent-q-ide--files ", "))))
    result))

;;;; Events

(defun agent-q-ide--agent-name (agent)
  "The display name of AGENT, \"gemini\" or \"claude\"."
  (pcase agent
    ("gemini" "Gemini CLI")
    ("claude" "Claude Code")
    (_ (agent-q--visible (format "%s" agent)))))

(defun agent-q-ide--label (event)
  "Return how the review and the audit log name the agent of EVENT.
The agent's name, then the name its client gave (already cleaned by
the module), then \"(IDE)\": no agent passes for a bridge or for an
MCP client of agent-q's tool server."
  (let ((client (plist-get event :client)))
    (format "%s%s (IDE)" (agent-q-ide--agent-name (plist-get event :agent))
            (if (and (stringp client) (not (string-empty-p client)))
                (concat " " (truncate-string-to-width (agent-q--visible client) 60 nil nil "..."))
              ""))))

(defun agent-q-ide--drain ()
  "Take the servers' events and act on each."
  (when (and agent-q-ide--servers (fboundp 'agent-q--core-ide-take))
    (dolist (event (agent-q--core-ide-take))
      (condition-case err
          (agent-q-ide--handle event)
        (error (message "agent-q: IDE event %s failed: %s"
                        (plist-get event :type) (error-message-string err))
               (when (plist-get event :key)
                 (ignore-errors
                   (agent-q--core-ide-answer
                    (plist-get event :key)
                    (pcase (plist-get event :type)
                      ('open-diff (list :rejected (error-message-string err)))
                      ('close-diff (list :content nil))
                      ('diagnostics (list :files nil))
                      (_ (list :error (error-message-string err))))))))))))

(defun agent-q-ide--handle (event)
  "Act on EVENT, one of the module's IDE events."
  (pcase (plist-get event :type)
    ('open-diff (agent-q-ide--open-diff event))
    ('close-diff (agent-q-ide--close-diff event))
    ('cancel (agent-q-ide--cancel event))
    ('diagnostics (agent-q--core-ide-answer
                   (plist-get event :key)
                   (list :files (agent-q-ide-diagnostics (plist-get event :uri)))))
    ('open-file (agent-q-ide--open-file event))
    ('context-wanted (agent-q-ide--check-watches)
                     (agent-q-ide--send-context t))
    ('connected (message "agent-q: %s connected to Emacs" (agent-q-ide--label event))
                (agent-q-ide--send-context t))
    ('disconnected (message "agent-q: %s disconnected" (agent-q-ide--label event)))))

;;;; Reviews of the agents' edits

(defconst agent-q-ide--max-file-bytes (* 16 1024 1024)
  "The largest file whose edit is reviewed; a larger one's edit is rejected.")

(defun agent-q-ide--file-text (file)
  "The text of FILE on disk, \"\" when it does not exist.
Signal an error when FILE is there but is not a regular file, or is
larger than `agent-q-ide--max-file-bytes'."
  (cond ((not (file-exists-p file)) "")
        ((not (file-regular-p file)) (error "%s is not a regular file" file))
        ((> (file-attribute-size (file-attributes file)) agent-q-ide--max-file-bytes)
         (error "%s is too large to review (over %d bytes)" file agent-q-ide--max-file-bytes))
        (t (with-temp-buffer
             (insert-file-contents file)
             (buffer-string)))))

(defun agent-q-ide--open-diff (event)
  "Decide the edit that EVENT proposes: one call of the gate's agent_edit.
The executor runs it like the terminal agents' own edits and the ACP
agents' (lisp/agent-q-gate-edit.el): a deny rule for agent_edit (with
:path, :mcp-client) rejects it unshown, an allow rule covering a file
that is not protected accepts it unreviewed, otherwise the per-hunk
review is its approval; the pending list, the mode line and the audit
count it, and the agent closing the diff withdraws it.  An edit the
gate has just reviewed to exactly this text is not shown again
\(`agent-q-gate-edit-take-reviewed').  A malformed one (no absolute
local file, no text) is such a call too, which fails saying why."
  (let* ((key (plist-get event :key))
         (path (plist-get event :path))
         (content (plist-get event :content))
         (label (agent-q-ide--label event))
         (id (format "ide-%s-%s" agent-q-ide--run key))
         (problem (agent-q-ide--open-diff-problem path content))
         (file (if problem (format "%s" (or path "")) (expand-file-name path))))
    (let ((entry (list :key key :agent (plist-get event :agent) :path file
                       :tab (plist-get event :tab) :label label :id id
                       :content content :window (selected-window)))
          (client (or (plist-get event :client) "")))
      (puthash id (if problem
                      ;; Still one call of the executor: it fails, saying why.
                      (list :invalid problem :label label :mcp-client client)
                    (list :current (agent-q-ide--file-text file) :proposal content
                          :label label :mcp-client client
                          ;; Who, for a trust (`agent-q-trust-agent'): the agent
                          ;; of the server it connected to, its workspace.
                          :agent (format "%s" (plist-get event :agent)) :ide t
                          :cwd (agent-q-ide--workspace file)
                          :reviewed (agent-q-gate-edit-take-reviewed file content)
                          :description
                          (format "%s proposes this edit; it writes the accepted hunks itself (C-c C-c answers, C-c C-k rejects all)."
                                  label)))
               agent-q-gate-edit--proposals)
      (push entry agent-q-ide--reviews)
      (agent-q--execute-async
       (list (list :id id :name agent-q-gate-edit-tool :arguments (list :path file)))
       (lambda (results) (agent-q-ide--decided entry (car results)))
       (agent-q-gate--registry)
       :client (list :client label :mcp-client client :channel "ide")
       :confirm '(:dangerous)
       :audit-all t)
      ;; The review is open now, unless the call was decided at once or
      ;; is asked first (see `agent-q-gate-edit-open-review').
      (when-let ((review (and (memq entry agent-q-ide--reviews)
                              (agent-q-gate-edit-open-review id))))
        (plist-put entry :review review)))))

(defun agent-q-ide--workspace (file)
  "Return the innermost workspace folder told to the agents with FILE in it.
The folders are those written in the discovery and lock files; nil
when none holds FILE."
  (let ((found nil))
    (dolist (dir (plist-get agent-q-ide--servers :workspaces))
      (when (and (file-in-directory-p file dir)
                 (not (equal (directory-file-name file) dir))
                 (or (null found) (> (length dir) (length found))))
        (setq found dir)))
    found))

(defun agent-q-ide--open-diff-problem (path content)
  "Why an openDiff of PATH to CONTENT cannot be reviewed, or nil.
Emacs reviews only edits of local files named by an absolute path,
with the new text as a string."
  (let ((why "Emacs reviews only edits of local files named by an absolute path"))
    (cond
     ((not (and (stringp path) (not (string-empty-p path))))
      (format "%s: the openDiff names no file" why))
     ((not (file-name-absolute-p path))
      (format "%s: %s is not absolute" why path))
     ((file-remote-p path)
      (format "%s: %s is remote" why path))
     ((not (stringp content))
      (format "%s: the openDiff of %s has no new text" why path)))))

(defun agent-q-ide--decided (entry result)
  "Answer the agent of ENTRY: the executor ended its call with RESULT.
Nothing is answered when the agent closed the review (ENTRY's :closed):
its own prompt decided."
  (let* ((id (plist-get entry :id))
         (outcome (gethash id agent-q-gate-edit--outcomes))
         (key (plist-get entry :key))
         (file (plist-get entry :path)))
    (remhash id agent-q-gate-edit--outcomes)
    (remhash id agent-q-gate-edit--proposals)
    (setq agent-q-ide--reviews (delq entry agent-q-ide--reviews))
    (unless (plist-get entry :closed)
      (when (plist-get entry :review)
        (agent-q-ide--refocus entry))
      (if (stringp outcome)
          (progn
            (when (plist-get entry :review)
              ;; The review remembered the text for the IDE: this is the
              ;; IDE's own review, so a second openDiff of it is reviewed.
              (agent-q-gate-edit-take-reviewed file outcome))
            (agent-q--core-ide-answer key (list :accepted outcome))
            (agent-q-ide--watch file outcome))
        ;; The executor has said why (a deny rule, the user's rejection).
        (agent-q--core-ide-answer
         key (list :rejected (format "%s" (or (plist-get result :content)
                                              "The user rejected the edit in Emacs."))))))))

(defun agent-q-ide--refocus (entry)
  "Select the window that was selected when ENTRY's review opened.
The user was typing in the agent's terminal: back there."
  (let ((window (plist-get entry :window)))
    (when (and (window-live-p window)
               (not (minibuffer-window-active-p (selected-window))))
      (select-window window))))

(defun agent-q-ide--close-entry (entry why &optional text)
  "Withdraw the call of ENTRY, closing its review; audit it with WHY.
TEXT, when non-nil, is what the agent may now write to the file: a
buffer visiting it is reverted once it does (see `agent-q-ide--watch')."
  (setq agent-q-ide--reviews (delq entry agent-q-ide--reviews))
  (plist-put entry :closed t)
  (let ((id (plist-get entry :id)))
    (agent-q-cancel-pending (lambda (call) (equal (plist-get call :id) id)) why))
  (agent-q-ide--refocus entry)
  (when text
    (agent-q-ide--watch (plist-get entry :path) text)))

(defun agent-q-ide--close-diff (event)
  "Close the reviews EVENT names: by tab, by path, or all of its agent's.
The agent closes a review when its own prompt in the terminal was
answered: that answer, not the review, decides the edit, and the agent
writes the file itself if it was yes.  Gemini CLI's closeDiff (EVENT
has a key) is answered with the text of the file as the review would
leave it if accepted now: the pending hunks accepted, the rejected ones
not (or nil when no review of that file is open); Gemini CLI writes
that text on a yes.  Claude Code's close_tab names the review; on a
yes, Claude Code writes its own proposal, whatever the review held.
Its closeAllDiffTabs (EVENT's :all) comes with each new prompt.  A
buffer visiting the file is reverted once the agent has written it."
  (let* ((key (plist-get event :key))
         (agent (plist-get event :agent))
         (name (agent-q-ide--agent-name agent))
         (path (plist-get event :path))
         (tab (plist-get event :tab))
         (matching
          (cl-remove-if-not
           (lambda (entry)
             (and (equal (plist-get entry :agent) agent)
                  (or (plist-get event :all)
                      (and tab (equal tab (plist-get entry :tab)))
                      (and path (equal (expand-file-name path) (plist-get entry :path))))))
           agent-q-ide--reviews))
         (text (and key matching
                    (let ((review (agent-q-gate-edit-open-review (plist-get (car matching) :id))))
                      (and review (agent-q-review-merged-text review 'accept))))))
    (when key
      (agent-q--core-ide-answer key (list :content text)))
    (dolist (entry matching)
      (agent-q-ide--close-entry
       entry
       (cond
        (key (format "%s closed the review: its own prompt was answered in the terminal (or it disconnected), which decides the edit; Emacs gave it the review's text (pending hunks accepted, rejected ones left out), which it writes on a yes" name))
        ((plist-get event :all)
         (format "%s closed its reviews without a decision in Emacs: a new prompt began or its turn ended" name))
        (t (format "%s closed the review: its own prompt was answered in the terminal, which decides the edit; on a yes it writes its own proposal, whatever the review held" name)))
       (cond (key text)
             ((not (plist-get event :all)) (plist-get entry :content)))))))

(defun agent-q-ide--cancel (event)
  "Close the review of the request EVENT withdraws."
  (let ((entry (cl-find (plist-get event :key) agent-q-ide--reviews
                        :key (lambda (e) (plist-get e :key)))))
    (when entry
      (agent-q-ide--close-entry entry "the agent withdrew the request"))))

;;;; Reverting a buffer after the agent wrote its file

(defun agent-q-ide--watch (file text)
  "Revert a buffer visiting FILE once the agent has written TEXT to FILE."
  (when (find-buffer-visiting file)
    (push (list file (+ (float-time) agent-q-ide-revert-seconds) text) agent-q-ide--watches)
    (unless agent-q-ide--watch-timer
      (setq agent-q-ide--watch-timer (run-at-time 0.2 0.2 #'agent-q-ide--check-watches)))))

(defun agent-q-ide--check-watches ()
  "Revert the watched buffers whose files changed; forget finished watches.
A watch ends when its buffer holds the text the agent was told to
write, or after `agent-q-ide-revert-seconds': an agent may write a file
in several steps (truncate, then write), so one change is not enough."
  (let ((now (float-time)))
    (dolist (watch agent-q-ide--watches)
      (pcase-let* ((`(,file ,deadline ,text) watch)
                   (buffer (find-buffer-visiting file)))
        (cond
         ((or (not buffer) (> now deadline))
          (setq agent-q-ide--watches (delq watch agent-q-ide--watches)))
         ((not (verify-visited-file-modtime buffer))
          (with-current-buffer buffer
            (if (buffer-modified-p)
                (progn
                  (setq agent-q-ide--watches (delq watch agent-q-ide--watches))
                  (message "agent-q: %s changed on disk; your buffer has unsaved changes, so it was not reverted"
                           (abbreviate-file-name file)))
              (revert-buffer t t t)
              (when (equal text (save-restriction
                                  (widen)
                                  (buffer-substring-no-properties (point-min) (point-max))))
                (setq agent-q-ide--watches (delq watch agent-q-ide--watches)))))))))
    (when (and (null agent-q-ide--watches) agent-q-ide--watch-timer)
      (cancel-timer agent-q-ide--watch-timer)
      (setq agent-q-ide--watch-timer nil))))

;;;; Opening a file

(defun agent-q-ide--open-file (event)
  "Show the file EVENT names, without selecting its window; answer.
EVENT's :start-text, when given, puts point at its first occurrence,
and :end-text then makes the region end after the next occurrence of
that text (Claude Code's openFile)."
  (let* ((path (plist-get event :path))
         (start-text (plist-get event :start-text))
         (end-text (plist-get event :end-text))
         (file (and (stringp path) (file-name-absolute-p path) (expand-file-name path))))
    (if (not (and file (file-regular-p file)))
        (agent-q--core-ide-answer (plist-get event :key)
                                  (list :error (format "No such regular file: %s" path)))
      (let* ((enable-local-variables :safe)
             (buffer (find-file-noselect file))
             (window (display-buffer buffer)))
        (with-current-buffer buffer
          (when (and (stringp start-text) (not (string-empty-p start-text)))
            (save-restriction
              (widen)
              (goto-char (point-min))
              (when (search-forward start-text nil t)
                (goto-char (match-beginning 0))
                (when (and (stringp end-text) (not (string-empty-p end-text)))
                  (let ((start (point)))
                    (when (search-forward end-text nil t)
                      (push-mark start t t)))))))
          (when window
            (set-window-point window (point))))
        (agent-q--core-ide-answer (plist-get event :key) (list :ok t))))))

;;;; The editor context

(defun agent-q-ide--file-buffers ()
  "The buffers visiting local files that exist on disk, most recent first."
  (let ((buffers nil) (count 0))
    (catch 'done
      (dolist (buffer (buffer-list))
        (let ((file (buffer-file-name buffer)))
          (when (and file (not (file-remote-p file)) (file-exists-p file))
            (push buffer buffers)
            (when (>= (cl-incf count) agent-q-ide--max-context-files)
              (throw 'done nil))))))
    (nreverse buffers)))

(defun agent-q-ide-context ()
  "The editor context: the plist that `agent-q--core-ide-set-context' takes.
\(:files ((:path P :timestamp MS :active BOOL :line L :column C
:selected TEXT-OR-NIL) ...)), most recent first; the first is the
active one, and only it has a line (1-based), a column (0-based, in
characters) and the region's text when the region is active."
  (let ((first t)
        (now (truncate (* 1000 (float-time)))))
    (list
     :files
     (mapcar
      (lambda (buffer)
        (prog1
            (with-current-buffer buffer
              (let ((time (if buffer-display-time
                              (truncate (* 1000 (float-time buffer-display-time)))
                            now)))
                (if (not first)
                    (list :path (buffer-file-name) :timestamp time :active nil)
                  (let* ((window (get-buffer-window buffer t))
                         (pos (if window (window-point window) (point))))
                    (save-restriction
                      (widen)
                      (list :path (buffer-file-name) :timestamp time :active t
                            :line (line-number-at-pos pos t)
                            :column (- pos (save-excursion (goto-char pos) (line-beginning-position)))
                            :selected
                            (and (region-active-p)
                                 (let ((start (region-beginning)) (end (region-end)))
                                   (buffer-substring-no-properties
                                    start (min end (+ start agent-q-ide--max-selection-chars)))))))))))
          (setq first nil)))
      (agent-q-ide--file-buffers)))))

(defun agent-q-ide--send-context (&optional force)
  "Send the editor context to the module if it changed (or FORCE)."
  (setq agent-q-ide--context-timer nil)
  (when (agent-q-ide-running-p)
    (let ((context (agent-q-ide-context)))
      (when (or force (not (equal context agent-q-ide--last-context)))
        (setq agent-q-ide--last-context context)
        (agent-q--core-ide-set-context context)))))

(defun agent-q-ide--context-changed (&rest _)
  "Send the editor context after `agent-q-ide-context-delay' seconds of quiet."
  (when agent-q-ide--context-timer
    (cancel-timer agent-q-ide--context-timer))
  (setq agent-q-ide--context-timer
        (run-with-timer agent-q-ide-context-delay nil #'agent-q-ide--send-context)))

;;;; Diagnostics

(defun agent-q-ide--position (pos)
  "The 1-based line and 1-based column of POS in the current buffer, as a cons."
  (save-excursion
    (goto-char pos)
    (cons (line-number-at-pos pos t) (1+ (- pos (line-beginning-position))))))

(defun agent-q-ide--flymake-diagnostics ()
  "The Flymake diagnostics of the current buffer, as the module takes them."
  (and (bound-and-true-p flymake-mode)
       (fboundp 'flymake-diagnostics)
       (save-restriction
         (widen)
         (mapcar
          (lambda (d)
            (let* ((beg (agent-q-ide--position (flymake-diagnostic-beg d)))
                   (end (agent-q-ide--position (flymake-diagnostic-end d)))
                   (type (flymake-diagnostic-type d))
                   (category (and (symbolp type) (get type 'flymake-category))))
              (list :message (format "%s" (flymake-diagnostic-text d))
                    :severity (cond ((or (eq type :error) (eq category 'flymake-error)) "error")
                                    ((or (eq type :warning) (eq category 'flymake-warning)) "warning")
                                    (t "info"))
                    :source (let ((backend (flymake-diagnostic-backend d)))
                              (and backend (format "%s" backend)))
                    :code nil
                    :line (car beg) :column (cdr beg)
                    :end-line (car end) :end-column (cdr end))))
          (flymake-diagnostics)))))

(defun agent-q-ide--flycheck-diagnostics ()
  "The Flycheck diagnostics of the current buffer, as the module takes them."
  (and (bound-and-true-p flycheck-mode)
       (fboundp 'flycheck-error-line)
       (mapcar
        (lambda (e)
          (let ((line (or (flycheck-error-line e) 1))
                (column (or (flycheck-error-column e) 1)))
            (list :message (format "%s" (flycheck-error-message e))
                  :severity (pcase (flycheck-error-level e)
                              ('error "error") ('warning "warning") ('info "info") (_ "hint"))
                  :source (let ((checker (flycheck-error-checker e)))
                            (and checker (format "%s" checker)))
                  :code (let ((id (flycheck-error-id e))) (and id (format "%s" id)))
                  :line line :column column
                  :end-line (or (flycheck-error-end-line e) line)
                  :end-column (or (flycheck-error-end-column e) column))))
        flycheck-current-errors)))

(defun agent-q-ide-diagnostics (&optional uri)
  "The diagnostics of the file URI names, or of every file buffer when nil.
A list of (:path P :diagnostics DIAGS), as `agent-q--core-ide-answer'
takes them for a diagnostics event: from Flymake, and from Flycheck
when it is loaded."
  (let* ((file (and (stringp uri)
                    (expand-file-name
                     (url-unhex-string
                      (if (string-prefix-p "file://" uri) (substring uri 7) uri)))))
         (buffers (if file
                      (let ((b (find-buffer-visiting file))) (and b (list b)))
                    (agent-q-ide--file-buffers))))
    (delq nil
          (mapcar (lambda (buffer)
                    (with-current-buffer buffer
                      (let ((diags (append (agent-q-ide--flymake-diagnostics)
                                           (agent-q-ide--flycheck-diagnostics))))
                        (and (or diags file)
                             (list :path (buffer-file-name) :diagnostics diags)))))
                  buffers))))

(provide 'agent-q-ide)

;;; agent-q-ide.el ends here
