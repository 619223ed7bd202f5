;;; agent-q-code.el --- Code intelligence from the user's own Emacs  -*- lexical-binding: t -*-

;; Copyright (C) 2026 The agent-q authors

;; Author: The agent-q authors
;; Maintainer: The agent-q authors
;; Keywords: tools, languages
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

;; The code-intelligence tools: find_definition, find_references,
;; file_outline, workspace_symbols, diagnostics and type_at, for every
;; language the user's Emacs has a language server or a mode for.
;;
;; Where the answers come from, in order:
;;
;; - the language server the user's Emacs already runs for the file's
;;   project, through eglot or lsp-mode (agent-q-code-lsp.el), each a
;;   `agent-q-code-backend', asked asynchronously with
;;   `agent-q-code-timeout' (never their synchronous requests, which
;;   block Emacs).  When none runs, `agent-q-code-start-servers'
;;   decides whether agent-q starts eglot as \\[eglot] would;
;; - Emacs Lisp files: agent-q's own analysis (`find-function', the
;;   who_calls and who_references scanner);
;; - otherwise the buffer's xref backend (when it is not etags without
;;   a tags table), imenu for outlines, Flymake and Flycheck for
;;   diagnostics; and last a project text search, labelled
;;   "text search (not semantic)".
;;
;; Every answer names its source.  The wording (locations as
;; FILE:LINE:COLUMN: TEXT, outlines, severities, cuts) is the core's
;; (`agent-q--core-code-*', crates/agent-q-core/src/code/), which also
;; converts the server's UTF-16 columns to characters.
;;
;; Each handler is asynchronous.  Under the asynchronous executor it
;; answers later and Emacs's main loop is never held; a cancelled call
;; sends $/cancelRequest.  Under the synchronous executor it waits,
;; processing output, and \\[keyboard-quit] stops it.

;;; Code:

(require 'cl-lib)
(require 'seq)
(require 'subr-x)
(require 'project)
(require 'xref)
(require 'imenu)
(require 'jsonrpc)
(require 'url-util)
(require 'agent-q-support)
(require 'agent-q-guard)
(require 'agent-q-xref)
(require 'agent-q-code-lsp)

(declare-function agent-q--core-code-locations "agent-q-core"
                  (kind subject source root items utf16 limit))
(declare-function agent-q--core-code-outline "agent-q-core" (file source items limit))
(declare-function agent-q--core-code-symbols "agent-q-core" (query source root items limit))
(declare-function agent-q--core-code-diagnostics "agent-q-core"
                  (subject source root items limit unchecked))
(declare-function agent-q--core-code-hover "agent-q-core" (location source text))
(declare-function agent-q--core-code-project-check "agent-q-core"
                  (root visited reported opened silent beyond too-large no-server
                        servers max-files wait))
(declare-function agent-q--core-code-column "agent-q-core" (text column to-chars))
(declare-function agent-q-async-starting-p "agent-q-async" ())
(declare-function agent-q--ensure-channel "agent-q-async" ())
(declare-function agent-q--core-xref-scan-start "agent-q-core"
                  (files name kind max-hits max-seconds))
(declare-function agent-q--core-xref-scan-cancel "agent-q-core" (ticket))
(defvar agent-q--channel-drain-functions)
(declare-function agent-q-when-cancelled "agent-q-async" (function))
(declare-function agent-q-tool-fail "agent-q" (format-string &rest args))
(declare-function agent-q-guard-file-verdict "agent-q-guard" (file))
(declare-function agent-q-prompt--confirm "agent-q-prompt" (question))
(declare-function eglot-current-server "eglot" ())
(declare-function eglot--server-info "eglot" (server))
(declare-function eglot--major-modes "eglot" (server))
(declare-function eglot--language-id "eglot" (server))
(declare-function eglot--capabilities "eglot" (server))
(declare-function eglot--pos-to-lsp-position "eglot" (&optional pos))
(declare-function eglot--signal-textDocument/didChange "eglot" ())
(declare-function eglot--guess-contact "eglot" (&optional interactive))
(declare-function eglot "eglot")
(declare-function flymake-diagnostics "flymake" (&optional beg end))
(declare-function flymake-start "flymake" (&optional deferred force))
(declare-function flymake-running-backends "flymake" ())
(declare-function flymake-reporting-backends "flymake" ())
(declare-function flymake-diagnostic-beg "flymake" (diag))
(declare-function flymake-diagnostic-type "flymake" (diag))
(declare-function flymake-diagnostic-text "flymake" (diag))
(declare-function flymake-diagnostic-backend "flymake" (diag))
(declare-function flycheck-error-line "flycheck" (err))
(declare-function flycheck-error-column "flycheck" (err))
(declare-function flycheck-error-level "flycheck" (err))
(declare-function flycheck-error-checker "flycheck" (err))
(declare-function flycheck-error-id "flycheck" (err))
(declare-function flycheck-error-message "flycheck" (err))
(defvar agent-q-code--backends)
(declare-function treesit-parser-list "treesit.c" (&optional buffer language tag))
(declare-function treesit-parser-language "treesit.c" (parser))
(declare-function treesit-buffer-root-node "treesit" (&optional language))
(declare-function treesit-induce-sparse-tree "treesit.c" (root predicate &optional process-fn depth))
(declare-function treesit-node-type "treesit.c" (node))
(declare-function treesit-node-start "treesit.c" (node))
(declare-function treesit-node-end "treesit.c" (node))
(declare-function treesit-defun-name "treesit" (node))
(defvar treesit-defun-type-regexp)
(defvar eglot--servers-by-project)
(defvar eglot-sync-connect)
(defvar eglot--managed-mode)
(defvar flymake-mode)
(defvar flymake-list-only-diagnostics)
(defvar flycheck-mode)
(defvar flycheck-current-errors)

;;;; Options

(defcustom agent-q-code-timeout 10
  "Seconds a code-intelligence tool waits for a language server's answer.
After this long the call fails and says so; the request is cancelled."
  :type 'number
  :group 'agent-q)

(defcustom agent-q-code-max-results 200
  "Most locations, symbols or diagnostics a code-intelligence answer lists.
The answer says how many more there were."
  :type 'natnum
  :group 'agent-q)

(defcustom agent-q-code-start-servers 'ask
  "Whether the code-intelligence tools may start a language server.
agent-q reuses the server the user's Emacs runs for a project
\(eglot) and starts none of its own.  When none runs for a file's
project: nil means answer from the fallbacks (xref, imenu, text
search); t means start eglot for it as \\[eglot] would; `ask' means
ask the user once per project (the answer is remembered for the
session)."
  :type '(choice (const :tag "Never" nil)
                 (const :tag "Ask once per project" ask)
                 (const :tag "Always" t))
  :group 'agent-q)

(defcustom agent-q-code-keep-buffers 10
  "Most buffers the code-intelligence tools keep open for the server.
A language server answers about a file once its buffer is open.
Buffers agent-q opened for that are kept (buried) for later calls;
beyond this many, the oldest is killed.  Buffers the user opened
are never killed."
  :type 'natnum
  :group 'agent-q)

(defcustom agent-q-code-diagnostics-wait 3
  "Seconds `diagnostics' waits for a server to check files it just opened.
A language server reports a file's diagnostics some time after the
file is opened; the answer says when none came in this time.  For a
project, this is the wait for all the files opened for the call
\(see `agent-q-code-diagnostics-max-files')."
  :type 'number
  :group 'agent-q)

(defcustom agent-q-code-diagnostics-max-files 50
  "Most files not visited that `diagnostics' of a project opens to a server.
Asked for the whole project, `diagnostics' reads what the running
language servers reported on files no buffer visits; a file they
have not reported on is opened to the server that takes its language
\(without a buffer) and closed after its report, or after
`agent-q-code-diagnostics-wait' seconds.  Beyond this many, the
answer names the files not checked."
  :type 'natnum
  :group 'agent-q)

(defcustom agent-q-code-imenu-inline-size 20000
  "Largest buffer, in characters, whose imenu outline is made in this Emacs.
Without a language server or a tree-sitter mode, `file_outline' uses
the buffer's imenu index, which some modes make slowly (python-mode:
seconds for 10,000 lines), holding Emacs all that time.  A larger
buffer's index is made by a separate Emacs (`emacs --batch' with the
buffer's major mode), within `agent-q-code-timeout', and Emacs is not
held.  nil makes every index here."
  :type '(choice (const :tag "Always here" nil) natnum)
  :group 'agent-q)

(defcustom agent-q-code-search-program
  (if (executable-find "rg") "rg" "grep")
  "The program of the text search fallback: \"rg\" or \"grep\"."
  :type '(choice (const "rg") (const "grep"))
  :group 'agent-q)

;;;; Jobs: one call's requests, answer and cancellation

(cl-defstruct (agent-q-code--job (:constructor agent-q-code--job-create))
  "One tool call under way."
  callback finished cancels)

(defun agent-q-code--finish (job text &optional status)
  "Answer JOB with TEXT and STATUS (nil, or :failure); only the first counts."
  (unless (agent-q-code--job-finished job)
    (setf (agent-q-code--job-finished job) t)
    (funcall (agent-q-code--job-callback job) text status)))

(defun agent-q-code--fail (job format-string &rest args)
  "Answer JOB with a failure worded by FORMAT-STRING and ARGS."
  (agent-q-code--finish job (apply #'format format-string args) :failure))

(defun agent-q-code--cancel (job)
  "Cancel what JOB has under way."
  (setf (agent-q-code--job-finished job) t)
  (dolist (cancel (agent-q-code--job-cancels job))
    (ignore-errors (funcall cancel))))

(defmacro agent-q-code--guarded (job &rest body)
  "Run BODY; an error in it answers JOB with a failure."
  (declare (indent 1) (debug t))
  `(condition-case err
       (progn ,@body)
     (agent-q-tool-failure (agent-q-code--finish ,job (cadr err) :failure))
     (error (agent-q-code--fail ,job "Tool error: %s" (error-message-string err)))))

(defun agent-q-code--run (callback worker)
  "Run WORKER, a function of a job, answering CALLBACK.
Under the asynchronous executor, WORKER's requests are answered
later and a cancelled call cancels them.  Otherwise this waits for
the answer, processing output; \\[keyboard-quit] cancels the
requests and the call fails, saying so."
  (let ((job (agent-q-code--job-create :callback callback)))
    (if (and (fboundp 'agent-q-async-starting-p) (agent-q-async-starting-p))
        (progn
          (agent-q-when-cancelled (lambda () (agent-q-code--cancel job)))
          (agent-q-code--guarded job (funcall worker job)))
      (let ((cell (list nil)))
        (setf (agent-q-code--job-callback job)
              (lambda (text &optional status) (setcar cell (cons status text))))
        (condition-case nil
            (progn
              (agent-q-code--guarded job (funcall worker job))
              (while (not (car cell))
                (accept-process-output nil 0.02)))
          (quit
           (agent-q-code--cancel job)
           (setcar cell (cons :failure "Interrupted by the user (C-g): the request was cancelled."))))
        (funcall callback (cdar cell) (caar cell))))))

(defvar agent-q-code--unlogged (make-hash-table :test #'eq :weakness 'key)
  "Connections mapped to the ids of agent-q's requests still unanswered.
Their answers are not written to the connection's events buffer.")

(defun agent-q-code--log-event (log connection &rest args)
  "Call LOG with CONNECTION and ARGS unless they log an answer to agent-q.
An :around advice of `jsonrpc--log-event': the answers of the code
tools' requests (whole-file outlines, hundreds of references) are
not written to eglot's events buffer, where eglot 1.9 pretty-prints
each message on Emacs's main loop (seconds for a large outline).
ARGS are (MESSAGE TYPE) in Emacs 28's jsonrpc and (ORIGIN &key
MESSAGE ...) in later ones; what agent-q sends is logged."
  (let* ((old (keywordp (car-safe (car args))))
         (message (if old (car args) (plist-get (cdr-safe args) :message)))
         (id (and (listp message) (plist-get message :id)))
         (reply (if old
                    (not (plist-get message :method))
                  (eq (plist-get (cdr-safe args) :kind) 'reply)))
         (ids (and id reply (gethash connection agent-q-code--unlogged))))
    (if (and ids (memql id ids))
        (puthash connection (delq id ids) agent-q-code--unlogged)
      (apply log connection args))))

(defun agent-q-code--unlog (server id)
  "Keep the answer to SERVER's request ID out of its events buffer."
  (when (integerp id)
    (unless (advice-member-p #'agent-q-code--log-event 'jsonrpc--log-event)
      (advice-add 'jsonrpc--log-event :around #'agent-q-code--log-event))
    (let ((ids (gethash server agent-q-code--unlogged)))
      ;; Ids whose answers never came (cancelled) are forgotten in time.
      (puthash server (cons id (seq-take ids 99)) agent-q-code--unlogged))))

(defun agent-q-code-unload-function ()
  "Remove the advice of `jsonrpc--log-event' when agent-q-code is unloaded."
  (advice-remove 'jsonrpc--log-event #'agent-q-code--log-event)
  nil)

(defun agent-q-code--request (job server method params then &optional otherwise)
  "Ask SERVER METHOD with PARAMS for JOB; call THEN with the result.
The request is asynchronous with `agent-q-code-timeout', through the
client that runs SERVER (`agent-q-code--backends'); an error or the
timeout calls OTHERWISE (a function of no arguments) when given, else
answers JOB with a failure, as THEN's own error does."
  (let* ((label (agent-q-code--source server))
         (cancel
          (funcall
           (agent-q-code-backend-request (agent-q-code--backend-of server))
           server method params agent-q-code-timeout
           (lambda (result)
             (unless (agent-q-code--job-finished job)
               (agent-q-code--guarded job (funcall then result))))
           (lambda (message)
             (unless (agent-q-code--job-finished job)
               (if otherwise
                   (agent-q-code--guarded job (funcall otherwise))
                 (agent-q-code--fail job "%s answered %s with an error: %s"
                                     label method message))))
           (lambda ()
             (unless (agent-q-code--job-finished job)
               (if otherwise
                   (agent-q-code--guarded job (funcall otherwise))
                 (agent-q-code--fail job "%s did not answer %s within %s s (agent-q-code-timeout)."
                                     label method agent-q-code-timeout)))))))
    (push cancel (agent-q-code--job-cancels job))))

(defun agent-q-code--all (job thunks then)
  "Start each of THUNKS with a continuation; when all answered, call THEN.
Each thunk is called with a function to call with its result; THEN
gets the results in the order of THUNKS.  Used to ask a server
several things at once for JOB."
  (let* ((n (length thunks))
         (results (make-vector n nil))
         (left n))
    (if (zerop n)
        (funcall then nil)
      (cl-loop for thunk in thunks
               for i from 0
               do (let ((i i))
                    (funcall thunk (lambda (result)
                                     (aset results i result)
                                     (when (and (zerop (cl-decf left))
                                                (not (agent-q-code--job-finished job)))
                                       (funcall then (append results nil))))))))))

;;;; Files, buffers, projects

(defun agent-q-code--root-of (directory)
  "The root of DIRECTORY's project, or nil."
  (let ((project (ignore-errors (project-current nil directory))))
    (and project (expand-file-name (project-root project)))))

(defun agent-q-code--base-root ()
  "The directory relative names are taken from: the client's first root.
That is the workspace of the call (an MCP client's roots), else the
current project's root, else `default-directory'."
  (let ((dirs (and (boundp 'agent-q-call-workspace) agent-q-call-workspace
                   (plist-get agent-q-call-workspace :directories))))
    (file-name-as-directory
     (expand-file-name
      (or (car dirs) (agent-q-code--root-of default-directory) default-directory)))))

(defun agent-q-code--file (args)
  "The absolute file name ARGS's \"file\" names, or nil."
  (let ((file (agent-q-builtins--arg args "file")))
    (and (stringp file) (not (string-empty-p file))
         (expand-file-name file (agent-q-code--base-root)))))

(defun agent-q-code--guard (args)
  "The guard of the code tools: reading ARGS's \"file\" is as read_file's."
  (let ((file (agent-q-code--file args)))
    (and file (agent-q-guard-file-verdict file))))

(defvar agent-q-code--opened nil
  "Buffers the code tools opened, newest first.")

(defun agent-q-code--buffer (file)
  "A live buffer visiting FILE, opened if needed; signal if it cannot be.
A buffer opened here is kept for later calls (see
`agent-q-code-keep-buffers').  Opening it runs its major mode, so a
language server the user's Emacs runs for its project manages it
\(eglot does so by itself; lsp-mode, whose `lsp-deferred' waits for
the buffer to be shown, is asked to)."
  (unless (file-readable-p file)
    (agent-q-tool-fail "File not found or not readable: %s" file))
  (when (file-directory-p file)
    (agent-q-tool-fail "%s is a directory, not a file" file))
  (or (find-buffer-visiting file)
      (let* ((large-file-warning-threshold nil)
             (enable-local-variables :safe)
             (buffer (find-file-noselect file t)))
        (bury-buffer buffer)
        (unless (agent-q-code--buffer-server buffer)
          (dolist (backend agent-q-code--backends)
            (when (agent-q-code-backend-attach backend)
              (ignore-errors (funcall (agent-q-code-backend-attach backend) buffer)))))
        (push buffer agent-q-code--opened)
        (setq agent-q-code--opened (seq-filter #'buffer-live-p agent-q-code--opened))
        (while (> (length agent-q-code--opened) agent-q-code-keep-buffers)
          (let ((old (car (last agent-q-code--opened))))
            (setq agent-q-code--opened (butlast agent-q-code--opened))
            (unless (or (buffer-modified-p old) (get-buffer-window old t))
              (kill-buffer old))))
        buffer)))

(defun agent-q-code--uri-to-file (uri)
  "The file name of the file: URI."
  (let ((uri (if (keywordp uri) (substring (symbol-name uri) 1) uri)))
    (if (string-prefix-p "file://" uri)
        (url-unhex-string (substring uri 7))
      uri)))

(defun agent-q-code--file-to-uri (file)
  "Return the file: URI of FILE (as eglot builds it)."
  (concat "file://" (url-hexify-string (directory-file-name (file-truename file))
                                       (let ((v (copy-sequence url-path-allowed-chars)))
                                         (aset v ?: nil)
                                         v))))

(defun agent-q-code--line-text (buffer line)
  "The text of LINE (1-based) of BUFFER, or nil when it has none."
  (with-current-buffer buffer
    (save-excursion
      (save-restriction
        (widen)
        (goto-char (point-min))
        (when (zerop (forward-line (1- line)))
          (buffer-substring-no-properties (line-beginning-position) (line-end-position)))))))

(defun agent-q-code--point (buffer line column)
  "The position of LINE (1-based) and COLUMN (1-based characters) in BUFFER."
  (with-current-buffer buffer
    (save-excursion
      (save-restriction
        (widen)
        (goto-char (point-min))
        (forward-line (1- (max 1 line)))
        (min (+ (point) (max 0 (1- column))) (line-end-position))))))

(defun agent-q-code--quotable (files)
  "A table of which FILES may be quoted: see `agent-q-xref--quote-policy'."
  (agent-q-xref--quote-policy (delete-dups (copy-sequence files))))

;;;; Language servers: the clients the user's Emacs runs them with

(cl-defstruct (agent-q-code-backend (:constructor agent-q-code-backend-create)
                                    (:copier nil))
  "A client of language servers in the user's Emacs (eglot, lsp-mode).
Each slot is a function; SERVER is one of the client's servers.
OWNS (OBJECT): non-nil when OBJECT is a server of this client.
BUFFER-SERVER (BUFFER): the server managing BUFFER, or nil.
PROJECT-SERVERS (ROOT): the servers running for the project at ROOT.
SOURCE (SERVER): how answers name it, \"CLIENT: SERVER-NAME\".
CAPABLE (SERVER CAPABILITY): non-nil if it declares CAPABILITY, a
  keyword or a path of them (see `agent-q-code--capability').
REQUEST (SERVER METHOD PARAMS TIMEOUT SUCCESS ERROR EXPIRED): ask
  asynchronously; call SUCCESS with the result as plists, ERROR with
  a message, or EXPIRED after TIMEOUT seconds; return a function that
  cancels the request.
NOTIFY (SERVER METHOD PARAMS): send a notification.
FLUSH (BUFFER): send BUFFER's pending edits to its server.
POSITION (BUFFER POS): the LSP position of POS as the server counts.
LANGUAGE (SERVER MODE FILE): the languageId of FILE in MODE when
  SERVER takes it, else nil.
PUBLISHED (SERVER FILE): what SERVER last published for FILE, not
  visited: nil before any report, then a value that is new (not
  `eq') with each report.
DIAGNOSTICS (SERVER FILE): the diagnostics SERVER reported for FILE,
  as items for `agent-q--core-code-diagnostics', or nil.
ATTACH (BUFFER): for a buffer just opened, which no server manages
  yet, have one of the client's servers running for its project
  manage it when one takes its language; nil if the client does that
  by itself."
  owns buffer-server project-servers source capable request notify flush
  position language published diagnostics attach)

(defvar agent-q-code--backends nil
  "The language-server clients the code tools ask, in order.
eglot's (below) and lsp-mode's (agent-q-code-lsp.el).")

(defun agent-q-code--backend-of (server)
  "The client of SERVER, from `agent-q-code--backends'."
  (or (seq-find (lambda (backend) (funcall (agent-q-code-backend-owns backend) server))
                agent-q-code--backends)
      (error "No language-server client knows %S" server)))

(defun agent-q-code--buffer-server (buffer)
  "The language server managing BUFFER (eglot's or lsp-mode's), or nil."
  (seq-some (lambda (backend) (funcall (agent-q-code-backend-buffer-server backend) buffer))
            agent-q-code--backends))

(defun agent-q-code--project-servers (root)
  "The language servers running for the project at ROOT, of every client."
  (apply #'append
         (mapcar (lambda (backend) (funcall (agent-q-code-backend-project-servers backend) root))
                 agent-q-code--backends)))

(defun agent-q-code--source (server)
  "How an answer names SERVER: \"eglot: NAME\" or \"lsp-mode: ID\"."
  (funcall (agent-q-code-backend-source (agent-q-code--backend-of server)) server))

(defun agent-q-code--capable (server capability)
  "Non-nil if SERVER declares CAPABILITY (a keyword, or a path of them)."
  (funcall (agent-q-code-backend-capable (agent-q-code--backend-of server)) server capability))

;;;;; eglot

(defun agent-q-code--eglot-server (buffer)
  "The eglot server managing BUFFER, or nil."
  (and (featurep 'eglot)
       (with-current-buffer buffer
         (ignore-errors (eglot-current-server)))))

(defun agent-q-code--eglot-project-servers (root)
  "The eglot servers running for the project at ROOT."
  (and (featurep 'eglot) (boundp 'eglot--servers-by-project)
       (let ((project (ignore-errors (project-current nil root))))
         (and project (gethash project eglot--servers-by-project)))))

(defun agent-q-code--eglot-source (server)
  "How an answer names the eglot SERVER: \"eglot: NAME\"."
  (let ((info (ignore-errors (eglot--server-info server))))
    (format "eglot: %s"
            (or (plist-get info :name)
                (let ((process (ignore-errors (jsonrpc--process server))))
                  (and (processp process)
                       (file-name-nondirectory (car (process-command process)))))
                "language server"))))

(defun agent-q-code--capability (capabilities capability)
  "The value CAPABILITIES (a plist) declare for CAPABILITY, or nil.
CAPABILITY is a keyword, or a list of keywords: a path into nested
options, such as (:renameProvider :prepareProvider).  False is nil."
  (let ((value capabilities))
    (dolist (key (if (listp capability) capability (list capability)))
      (setq value (and (listp value) (plist-get value key))))
    (and (not (eq value :json-false)) value)))

(defun agent-q-code--eglot-capable (server capability)
  "Non-nil if the eglot SERVER declares CAPABILITY.
CAPABILITY is as `agent-q-code--capability' takes it."
  (agent-q-code--capability (ignore-errors (eglot--capabilities server)) capability))

(defconst agent-q-code--uncancelled '("textDocument/references")
  "Methods whose requests agent-q stops waiting for without cancelling them.
pyright 1.1.403, with a client that accepts its progress reports
\(lsp-mode, eglot of Emacs 30), fails every later references request
once one was cancelled with $/cancelRequest (\"this._token.cancel is
not a function\"): a cancelled references request is left to finish,
and its answer is dropped.")

(defun agent-q-code--eglot-request (server method params timeout success error expired)
  "Ask the eglot SERVER METHOD with PARAMS: see `agent-q-code-backend'.
TIMEOUT, SUCCESS, ERROR and EXPIRED are as that describes."
  (let* ((request
          (jsonrpc--async-request-1
           server method params
           :success-fn success
           :error-fn (lambda (err)
                       (funcall error (format "%s" (or (plist-get err :message) err))))
           :timeout-fn expired
           :timeout timeout))
         (id (car-safe request)))
    (agent-q-code--unlog server id)
    (lambda ()
      (when (timerp (cadr request)) (cancel-timer (cadr request)))
      (when (and id (jsonrpc-running-p server)
                 (not (member (agent-q-code-lsp--method method) agent-q-code--uncancelled)))
        (jsonrpc-notify server :$/cancelRequest (list :id id))))))

(defun agent-q-code--eglot-position (buffer pos)
  "The LSP position of POS in BUFFER, as eglot counts."
  (with-current-buffer buffer
    (save-excursion
      (save-restriction
        (widen)
        (eglot--pos-to-lsp-position pos)))))

(defun agent-q-code--eglot-flush (buffer)
  "Send BUFFER's pending edits to its eglot server."
  (with-current-buffer buffer
    (when (and (bound-and-true-p eglot--managed-mode)
               (fboundp 'eglot--signal-textDocument/didChange))
      (eglot--signal-textDocument/didChange))))

(defun agent-q-code--eglot-language (server mode _file)
  "The languageId of MODE's files when the eglot SERVER manages MODE."
  (cond ((fboundp 'eglot--languages)
         (cdr (assq mode (ignore-errors (funcall 'eglot--languages server)))))
        ((memq mode (ignore-errors (eglot--major-modes server)))
         (ignore-errors (eglot--language-id server)))))

(defun agent-q-code--eglot-published (_server file)
  "What eglot filed for FILE, not visited: its entry in Flymake's list.
eglot makes a new entry for each report."
  (and (boundp 'flymake-list-only-diagnostics)
       (assoc file flymake-list-only-diagnostics)))

(defun agent-q-code--eglot-diagnostics (server file)
  "The diagnostics eglot filed for FILE (not visited), from SERVER, as items."
  (let ((entry (agent-q-code--eglot-published server file)))
    (mapcar (lambda (d) (agent-q-code--flymake-list-only-item file d)) (cdr entry))))

(defconst agent-q-code--eglot
  (agent-q-code-backend-create
   :owns (lambda (object) (and (featurep 'eglot) (eieio-object-p object)
                               (object-of-class-p object 'eglot-lsp-server)))
   :buffer-server #'agent-q-code--eglot-server
   :project-servers #'agent-q-code--eglot-project-servers
   :source #'agent-q-code--eglot-source
   :capable #'agent-q-code--eglot-capable
   :request #'agent-q-code--eglot-request
   :notify (lambda (server method params) (jsonrpc-notify server method params))
   :flush #'agent-q-code--eglot-flush
   :position #'agent-q-code--eglot-position
   :language #'agent-q-code--eglot-language
   :published #'agent-q-code--eglot-published
   :diagnostics #'agent-q-code--eglot-diagnostics)
  "The eglot client.")

(add-to-list 'agent-q-code--backends agent-q-code--eglot)

;;;;; lsp-mode (agent-q-code-lsp.el)

(defconst agent-q-code--lsp-mode
  (agent-q-code-backend-create
   :owns #'agent-q-code-lsp--owns
   :buffer-server #'agent-q-code-lsp--buffer-server
   :project-servers #'agent-q-code-lsp--project-servers
   :source #'agent-q-code-lsp--source
   :capable #'agent-q-code-lsp--capable
   :request #'agent-q-code-lsp--request
   :notify #'agent-q-code-lsp--notify
   :flush #'agent-q-code-lsp--flush
   :position #'agent-q-code--utf16-position
   :language #'agent-q-code-lsp--language
   :published #'agent-q-code-lsp--published
   :diagnostics #'agent-q-code-lsp--diagnostics
   :attach #'agent-q-code-lsp--attach)
  "The lsp-mode client.")

(add-to-list 'agent-q-code--backends agent-q-code--lsp-mode t)

(defun agent-q-code--lsp-diagnostic-items (file diagnostics)
  "Items for `agent-q--core-code-diagnostics' of FILE's LSP DIAGNOSTICS.
DIAGNOSTICS are plists; their UTF-16 columns become characters, read
from a buffer visiting FILE or else from the file."
  (let ((buffer (find-buffer-visiting file))
        (lines nil))
    (unless buffer
      (setq lines (with-temp-buffer
                    (ignore-errors (insert-file-contents file nil 0 (* 4 1024 1024)))
                    (vconcat (split-string (buffer-string) "\n")))))
    (delq nil
          (mapcar
           (lambda (d)
             (let* ((start (plist-get (plist-get d :range) :start))
                    (line (1+ (or (plist-get start :line) 0)))
                    (character (or (plist-get start :character) 0))
                    (text (if buffer
                              (agent-q-code--line-text buffer line)
                            (and (<= line (length lines)) (aref lines (1- line)))))
                    (code (plist-get d :code)))
               (and (natnump line) (natnump character)
                    (vector file line
                            (if text (agent-q--core-code-column text character t) character)
                            (or (plist-get d :severity) 1)
                            (let ((source (plist-get d :source))) (and (stringp source) source))
                            (and code (format "%s" code))
                            (format "%s" (or (plist-get d :message) ""))))))
           diagnostics))))

(defvar agent-q-code--start-answers (make-hash-table :test #'equal)
  "Project roots mapped to the user's answer to starting a server there.")

(defun agent-q-code--may-start-p (root)
  "Non-nil if a language server may be started for the project at ROOT."
  (pcase agent-q-code-start-servers
    ('nil nil)
    ('ask
     (pcase (gethash root agent-q-code--start-answers 'unasked)
       ('unasked
        (let ((yes (and (not noninteractive)
                        (require 'agent-q-prompt nil t)
                        (condition-case nil
                            (agent-q-prompt--confirm
                             (format "An agent asks about code in %s, where no language server runs.  Start one (M-x eglot)?"
                                     (abbreviate-file-name root)))
                          (quit nil)))))
          (puthash root (and yes t) agent-q-code--start-answers)
          yes))
       (answer answer)))
    (_ t)))

(defun agent-q-code--start-server (job buffer then)
  "Start eglot for BUFFER as \\[eglot] would, for JOB; call THEN with it.
THEN gets nil when no server could be started or it did not come up
within `agent-q-code-timeout'."
  (if (not (and (require 'eglot nil t) (fboundp 'eglot--guess-contact)))
      (funcall then nil)
    (let ((contact (with-current-buffer buffer
                     (condition-case nil (eglot--guess-contact) (error nil)))))
      (if (not contact)
          (funcall then nil)
        (with-current-buffer buffer
          (let ((eglot-sync-connect nil))
            (condition-case nil (apply #'eglot contact) (error nil))))
        (let* ((deadline (+ (float-time) agent-q-code-timeout))
               (timer nil))
          (setq timer
                (run-with-timer
                 0.05 0.05
                 (lambda ()
                   (let ((server (and (buffer-live-p buffer) (agent-q-code--eglot-server buffer))))
                     (cond ((agent-q-code--job-finished job) (cancel-timer timer))
                           (server (cancel-timer timer)
                                   (agent-q-code--guarded job (funcall then server)))
                           ((> (float-time) deadline)
                            (cancel-timer timer)
                            (agent-q-code--guarded job (funcall then nil))))))))
          (push (lambda () (cancel-timer timer)) (agent-q-code--job-cancels job)))))))

(defun agent-q-code--with-server (job buffer then)
  "Call THEN with BUFFER's eglot server for JOB, or nil when there is none.
When none runs, `agent-q-code-start-servers' decides whether one is
started."
  (let ((server (agent-q-code--buffer-server buffer)))
    (cond (server (funcall then server))
          ((and (with-current-buffer buffer (not (derived-mode-p 'emacs-lisp-mode)))
                (agent-q-code--may-start-p
                 (or (agent-q-code--root-of (file-name-directory (buffer-file-name buffer)))
                     (file-name-directory (buffer-file-name buffer)))))
           (agent-q-code--start-server job buffer then))
          (t (funcall then nil)))))

(defun agent-q-code--lsp-position (buffer pos)
  "The LSP position (UTF-16) of POS in BUFFER, as its server's client counts."
  (let ((server (agent-q-code--buffer-server buffer)))
    (if server
        (funcall (agent-q-code-backend-position (agent-q-code--backend-of server)) buffer pos)
      (agent-q-code--utf16-position buffer pos))))

(defun agent-q-code--utf16-position (buffer pos)
  "The LSP position of POS in BUFFER, its character in UTF-16 code units."
  (with-current-buffer buffer
    (save-excursion
      (save-restriction
        (widen)
        (goto-char pos)
        (let ((text (buffer-substring-no-properties (line-beginning-position) pos)))
          (list :line (1- (line-number-at-pos pos t))
                :character (agent-q--core-code-column text (length text) nil)))))))

(defun agent-q-code--flush (buffer)
  "Flush the edits of BUFFER to its server before a request."
  (let ((server (agent-q-code--buffer-server buffer)))
    (when server
      (funcall (agent-q-code-backend-flush (agent-q-code--backend-of server)) buffer))))

(defun agent-q-code--position-params (buffer pos)
  "TextDocumentPositionParams of POS in BUFFER."
  (list :textDocument (list :uri (agent-q-code--file-to-uri (buffer-file-name buffer)))
        :position (agent-q-code--lsp-position buffer pos)))

;;;; LSP answers as items for the core

(defun agent-q-code--lsp-locations (result)
  "The (FILE LINE COLUMN) of each location in RESULT, LINE 1-based.
RESULT is a Location, a list of Locations or of LocationLinks; COLUMN
is the server's UTF-16 column."
  (let ((all (cond ((null result) nil)
                   ((and (listp result) (keywordp (car result))) (list result))
                   (t (append result nil)))))
    (delq nil
          (mapcar (lambda (loc)
                    (let* ((uri (or (plist-get loc :targetUri) (plist-get loc :uri)))
                           (range (or (plist-get loc :targetSelectionRange)
                                      (plist-get loc :range)))
                           (start (plist-get range :start)))
                      (and uri start
                           (list (agent-q-code--uri-to-file uri)
                                 (1+ (plist-get start :line))
                                 (plist-get start :character)))))
                  all))))

(defun agent-q-code--visiting (files)
  "A table of FILES to the live buffers visiting them, or to nil.
As `find-buffer-visiting' finds them, in one pass over the buffers;
each directory's true name is resolved once.  In a loop over a
server's answer (dozens of locations in a few files)
`find-buffer-visiting' resolved each file's every component and went
through every buffer anew, each time."
  (let ((by-name (make-hash-table :test #'equal))
        (by-true (make-hash-table :test #'equal))
        (dirs (make-hash-table :test #'equal))
        (table (make-hash-table :test #'equal)))
    (dolist (buffer (buffer-list))
      (let ((name (buffer-file-name buffer))
            (true (buffer-local-value 'buffer-file-truename buffer)))
        (when name
          (puthash (expand-file-name name) buffer by-name)
          (when true (puthash (expand-file-name true) buffer by-true)))))
    (dolist (file files)
      (when (eq (gethash file table 'absent) 'absent)
        (puthash file
                 (or (gethash (expand-file-name file) by-name)
                     (let* ((dir (file-name-directory (expand-file-name file)))
                            (true-dir (or (gethash dir dirs)
                                          (puthash dir (file-truename dir) dirs))))
                       (gethash (if (file-symlink-p file)
                                    (file-truename file)
                                  (expand-file-name (file-name-nondirectory file) true-dir))
                                by-true)))
                 table)))
    table))

(defun agent-q-code--location-items (locations &optional declarations visiting)
  "Items for `agent-q--core-code-locations' from LOCATIONS.
LOCATIONS are (FILE LINE COLUMN [ENCLOSING]); those also in
DECLARATIONS are marked.  The text of a line comes from a buffer
visiting its file when there is one (VISITING, a table of
`agent-q-code--visiting', when the caller has it)."
  (let* ((files (mapcar #'car locations))
         (policy (agent-q-code--quotable files))
         (buffers (or visiting (agent-q-code--visiting files))))
    (mapcar (lambda (loc)
              (pcase-let ((`(,file ,line ,column ,enclosing) loc))
                (let ((buffer (gethash file buffers)))
                  (vector file line column
                          (and buffer (agent-q-code--line-text buffer line))
                          enclosing
                          (and (member (list file line column) declarations) t)
                          (eq t (gethash file policy))))))
            locations)))

(defun agent-q-code--answer-locations (job kind subject source root locations utf16
                                           &optional declarations visiting)
  "Answer JOB with LOCATIONS of KIND for SUBJECT from SOURCE.
ROOT is the project root paths are shown relative to; UTF16 non-nil
when the columns are the server's; DECLARATIONS are marked.  VISITING
is as `agent-q-code--location-items' takes it."
  (agent-q-code--finish
   job (agent-q--core-code-locations
        kind subject source root
        (agent-q-code--location-items locations declarations visiting)
        utf16 agent-q-code-max-results)))

;;;; Finding the symbol asked about

(defconst agent-q-code--max-symbol-length 1024
  "The longest name or name path the code tools look up, in characters.
A longer one is refused: no language has such names, and a text
search could not pass it to its process.")

(defun agent-q-code--target (args)
  "What ARGS ask about: a plist (:file F :line L :column C :symbol S).
Fails the call when they name neither a symbol nor a file position."
  (let ((file (agent-q-code--file args))
        (line (agent-q-builtins--arg args "line"))
        (column (agent-q-builtins--arg args "column"))
        (symbol (agent-q-builtins--arg args "symbol")))
    (when (and (stringp symbol) (string-empty-p (string-trim symbol)))
      (setq symbol nil))
    (when (and (stringp symbol) (> (length symbol) agent-q-code--max-symbol-length))
      (agent-q-tool-fail
       (format "Invalid arguments: symbol is too long: %d characters (a name or a name path has at most %d)"
               (length symbol) agent-q-code--max-symbol-length)))
    (cond ((and file (natnump line) (> line 0))
           (list :file file :line line :column (if (natnump column) (max 1 column) 1)
                 :symbol symbol))
          ((stringp symbol) (list :file file :symbol (string-trim symbol)))
          (t (agent-q-tool-fail "Invalid arguments: give symbol (a name or a name path such as Class/method, optionally with file), or file with line and column (1-based)")))))

(defun agent-q-code--name-path (symbol)
  "The components of SYMBOL's name path (\"Class/method\" or \"Class.method\")."
  (split-string symbol "[/.]" t))

(defun agent-q-code--document-symbols (result)
  "Flatten the documentSymbol RESULT into (NAME KIND START END DEPTH PATH RANGE).
START and END are 1-based lines; PATH the names from the top; RANGE
the selection range's start (the name's position), as the server sent it."
  (let ((out nil))
    (cl-labels ((walk (symbols depth path)
                  (seq-doseq (s symbols)
                    (let* ((name (plist-get s :name))
                           (location (plist-get s :location))
                           (range (or (plist-get s :range) (plist-get location :range)))
                           (selection (or (plist-get s :selectionRange) range))
                           (container (plist-get s :containerName))
                           (full (append path (list name))))
                      (push (list name (plist-get s :kind)
                                  (1+ (plist-get (plist-get range :start) :line))
                                  (1+ (plist-get (plist-get range :end) :line))
                                  (if location nil depth)
                                  (if (and location container)
                                      (append (split-string container "[./]" t) (list name))
                                    full)
                                  (plist-get selection :start))
                            out)
                      (when (and (plist-get s :children) (< depth 100))
                        (walk (plist-get s :children) (1+ depth) full))))))
      (walk result 0 nil))
    (nreverse out)))

(defun agent-q-code--path-matches-p (wanted path)
  "Non-nil if the name path WANTED (a list) ends PATH."
  (and path (<= (length wanted) (length path))
       (equal wanted (last path (length wanted)))))

(defun agent-q-code--enclosing (symbols line)
  "The name path of the innermost of SYMBOLS (flattened) holding LINE.
A symbol starting on LINE is the one declared there, not its container."
  (let ((best nil))
    (dolist (s symbols)
      (pcase-let ((`(,_name ,_kind ,start ,end . ,_rest) s))
        (when (and (< start line) (<= line end)
                   (or (null best) (>= start (nth 2 best))))
          (setq best s))))
    (and best (string-join (nth 5 best) "."))))

;;;; find_definition and find_references

(defconst agent-q-code--enclosing-files 20
  "Most files whose outlines are asked for to name enclosing symbols.")

(defvar agent-q-code--outlines (make-hash-table :test #'equal)
  "Files mapped to (SERVER VERSION SYMBOLS), their flattened outlines.
SERVER answered; VERSION is the visiting buffer's modification tick,
or the file's modification time, when the outline was asked for.")

(defconst agent-q-code--max-outlines 200
  "Most files whose outlines `agent-q-code--outlines' keeps.")

(defun agent-q-code--file-version (file &optional visiting)
  "What identifies the contents of FILE as the server sees it.
VISITING, when given, is a table of `agent-q-code--visiting' with FILE."
  (let ((buffer (if visiting (gethash file visiting) (find-buffer-visiting file))))
    (if buffer
        (list 'buffer buffer (buffer-chars-modified-tick buffer))
      (list 'file (file-attribute-modification-time (file-attributes file))))))

(defun agent-q-code--outline (job server file then &optional otherwise visiting)
  "Call THEN with FILE's flattened outline from SERVER, for JOB.
The outline (see `agent-q-code--document-symbols') is asked for once
per version of the file and server, and kept: a warm call asks the
server nothing, and eglot does not log a large answer again.  An
error or the timeout calls OTHERWISE as `agent-q-code--request' does.
VISITING is as `agent-q-code--file-version' takes it."
  (let ((cached (gethash file agent-q-code--outlines))
        (version (agent-q-code--file-version file visiting)))
    (if (and cached (eq (car cached) server) (equal (cadr cached) version))
        (funcall then (nth 2 cached))
      (when (eq (car version) 'buffer)
        (agent-q-code--flush (nth 1 version)))
      (agent-q-code--request
       job server :textDocument/documentSymbol
       (list :textDocument (list :uri (agent-q-code--file-to-uri file)))
       (lambda (result)
         (let ((symbols (agent-q-code--document-symbols result)))
           (when (>= (hash-table-count agent-q-code--outlines) agent-q-code--max-outlines)
             (clrhash agent-q-code--outlines))
           (puthash file (list server version symbols) agent-q-code--outlines)
           (funcall then symbols)))
       otherwise))))

(defun agent-q-code--with-enclosing (job server locations then &optional visiting)
  "Call THEN with LOCATIONS, each with its enclosing symbol's name added.
LOCATIONS are (FILE LINE COLUMN); the outlines of their files (the
first `agent-q-code--enclosing-files') come from SERVER, asked at once
for JOB and cached per file version.  A file whose outline the server does not
give is listed without enclosing symbols.  VISITING, a table of
`agent-q-code--visiting' with the files, is made when not given."
  (let* ((files (seq-take (delete-dups (mapcar #'car locations)) agent-q-code--enclosing-files))
         (visiting (or visiting (agent-q-code--visiting files))))
    (agent-q-code--all
     job
     (mapcar (lambda (file)
               (lambda (k)
                 (agent-q-code--outline job server file k (lambda () (funcall k nil)) visiting)))
             files)
     (lambda (outlines)
       (let ((table (make-hash-table :test #'equal)))
         (cl-mapc (lambda (file outline) (puthash file outline table)) files outlines)
         (funcall then
                  (mapcar (lambda (loc)
                            (list (nth 0 loc) (nth 1 loc) (nth 2 loc)
                                  (agent-q-code--enclosing (gethash (car loc) table)
                                                           (nth 1 loc))))
                          locations)))))))

(defun agent-q-code--locate (job target then)
  "Resolve TARGET for JOB and call THEN with a plist describing it.
The plist has :server, :buffer, :point, :subject and, when the
symbol was found by name, :found (its definitions as locations).
Without a server, THEN gets :server nil and :buffer (maybe nil)."
  (let* ((file (plist-get target :file))
         (buffer (and file (agent-q-code--buffer file))))
    (if buffer
        (agent-q-code--with-server
         job buffer
         (lambda (server) (agent-q-code--locate-in-file job target server buffer then)))
      (agent-q-code--locate-in-project job target then))))

(defun agent-q-code--locate-in-file (job target server buffer then)
  "Resolve TARGET in BUFFER, whose server is SERVER (or nil), for JOB.
Call THEN with the plist `agent-q-code--locate' describes."
  (let ((file (buffer-file-name buffer)))
    (cond
     ((plist-get target :line)
      (let ((pos (agent-q-code--point buffer (plist-get target :line)
                                      (plist-get target :column))))
        (funcall then (list :server server :buffer buffer :point pos
                            :subject (agent-q-code--position-subject buffer pos)))))
     ((null server) (funcall then (list :server nil :buffer buffer)))
     (t
      (agent-q-code--outline
       job server file
       (lambda (symbols)
         (let* ((wanted (agent-q-code--name-path (plist-get target :symbol)))
                (match (seq-find (lambda (s) (agent-q-code--path-matches-p wanted (nth 5 s)))
                                 symbols)))
           (if (not match)
               (agent-q-code--fail job "No symbol %s in %s (source: %s); file_outline lists its symbols."
                                   (plist-get target :symbol) file (agent-q-code--source server))
             (let ((start (nth 6 match)))
               (funcall then (list :server server :buffer buffer
                                   :point (agent-q-code--lsp-point buffer start)
                                   :subject (plist-get target :symbol)
                                   :found (list (list file (1+ (plist-get start :line))
                                                      (plist-get start :character))))))))))))))

(defun agent-q-code--locate-in-project (job target then)
  "Resolve TARGET, a symbol without a file, for JOB by the project's server.
Call THEN with the plist `agent-q-code--locate' describes."
  (let* ((root (agent-q-code--base-root))
         (server (car (agent-q-code--project-servers root)))
         (wanted (agent-q-code--name-path (plist-get target :symbol))))
    (if (not server)
        (funcall then (list :server nil :buffer nil :subject (plist-get target :symbol)))
      (agent-q-code--request
       job server :workspace/symbol
       (list :query (car (last wanted)))
       (lambda (result)
         (let ((found nil))
           (seq-doseq (s result)
             (let* ((location (plist-get s :location))
                    (start (plist-get (plist-get location :range) :start))
                    (container (plist-get s :containerName))
                    (path (append (and container (split-string container "[./]" t))
                                  (list (plist-get s :name)))))
               (when (and start (agent-q-code--path-matches-p wanted path))
                 (push (list (agent-q-code--uri-to-file (plist-get location :uri))
                             (1+ (plist-get start :line)) (plist-get start :character))
                       found))))
           (setq found (nreverse found))
           (if (not found)
               (agent-q-code--fail job "No symbol %s found in the workspace (source: %s: workspace/symbol; a server still indexing finds nothing yet: try again, or give file)."
                                   (plist-get target :symbol) (agent-q-code--source server))
             (let* ((first (car found))
                    (buffer (agent-q-code--buffer (car first)))
                    (pos (agent-q-code--name-point buffer (nth 1 first) (nth 2 first)
                                                   (car (last wanted)))))
               (funcall then (list :server (or (agent-q-code--buffer-server buffer) server)
                                   :buffer buffer :point pos
                                   :subject (plist-get target :symbol)
                                   :found found))))))))))

(defun agent-q-code--lsp-point (buffer position)
  "The point of the LSP POSITION (UTF-16) in BUFFER."
  (with-current-buffer buffer
    (save-excursion
      (save-restriction
        (widen)
        (goto-char (point-min))
        (forward-line (plist-get position :line))
        (let ((text (buffer-substring-no-properties (point) (line-end-position))))
          (+ (point) (agent-q--core-code-column text (plist-get position :character) t)))))))

(defun agent-q-code--name-point (buffer line column name)
  "The position of NAME at or after LINE, UTF-16 COLUMN of BUFFER."
  (let ((pos (agent-q-code--lsp-point buffer (list :line (1- line) :character column))))
    (with-current-buffer buffer
      (save-excursion
        (goto-char pos)
        (if (re-search-forward (concat "\\_<" (regexp-quote name) "\\_>") (line-end-position 2) t)
            (match-beginning 0)
          pos)))))

(defun agent-q-code--position-subject (buffer pos)
  "How an answer names the position POS of BUFFER: FILE:LINE:COLUMN (NAME)."
  (with-current-buffer buffer
    (save-excursion
      (goto-char pos)
      (let ((name (thing-at-point 'symbol t)))
        (format "%s:%d:%d%s"
                (file-relative-name (buffer-file-name buffer) (agent-q-code--base-root))
                (line-number-at-pos pos t) (1+ (current-column))
                (if name (format " (%s)" name) ""))))))

(defun agent-q-code--root-for (buffer)
  "The root answers about BUFFER show paths relative to."
  (or (and buffer (buffer-file-name buffer)
           (agent-q-code--root-of (file-name-directory (buffer-file-name buffer))))
      (agent-q-code--base-root)))

(defun agent-q-code--find (callback args kind)
  "Answer CALLBACK with the definitions or references ARGS ask for.
KIND is `definition' or `references'."
  (agent-q-code--run
   callback
   (lambda (job)
     (let ((target (agent-q-code--target args)))
       (agent-q-code--locate
        job target
        (lambda (found)
          (let ((server (plist-get found :server))
                (buffer (plist-get found :buffer)))
            (if server
                (agent-q-code--find-with-server job kind found)
              (agent-q-code--find-fallback job kind target buffer)))))))))

(defun agent-q-code--find-with-server (job kind found)
  "Answer JOB with the KIND locations of FOUND from its server."
  (let* ((server (plist-get found :server))
         (buffer (plist-get found :buffer))
         (params (agent-q-code--position-params buffer (plist-get found :point)))
         (root (agent-q-code--root-for buffer))
         (source (agent-q-code--source server))
         (subject (plist-get found :subject)))
    (agent-q-code--flush buffer)
    (if (eq kind 'definition)
        (if (plist-get found :found)
            (agent-q-code--answer-locations job 'definition subject source root
                                            (plist-get found :found) t)
          (agent-q-code--request
           job server :textDocument/definition params
           (lambda (result)
             (agent-q-code--with-enclosing
              job server (agent-q-code--lsp-locations result)
              (lambda (locations)
                (agent-q-code--answer-locations job 'definition subject source root
                                                locations t))))))
      (agent-q-code--all
       job
       (list (lambda (k)
               (agent-q-code--request
                job server :textDocument/references
                (append params (list :context (list :includeDeclaration t)))
                k))
             (lambda (k)
               (agent-q-code--request job server :textDocument/definition params k)))
       (lambda (results)
         (let* ((refs (agent-q-code--lsp-locations (car results)))
                (decls (agent-q-code--lsp-locations (cadr results)))
                ;; Which buffers visit the files: once for the whole answer.
                (visiting (agent-q-code--visiting (mapcar #'car refs))))
           (agent-q-code--with-enclosing
            job server refs
            (lambda (locations)
              (agent-q-code--answer-locations job 'references subject source root
                                              locations t decls visiting))
            visiting)))))))

;;;; Fallbacks

(defun agent-q-code--elisp-symbol (target buffer)
  "The Emacs Lisp symbol TARGET asks about in BUFFER's terms, or nil."
  (let ((name (or (plist-get target :symbol)
                  (and buffer (plist-get target :line)
                       (with-current-buffer buffer
                         (save-excursion
                           (goto-char (agent-q-code--point buffer (plist-get target :line)
                                                           (plist-get target :column)))
                           (thing-at-point 'symbol t)))))))
    (and name (intern-soft name))))

(defun agent-q-code--find-fallback (job kind target buffer)
  "Answer JOB with KIND locations of TARGET without a language server.
BUFFER visits TARGET's file, or is nil."
  (let ((elisp (or (and buffer (with-current-buffer buffer (derived-mode-p 'emacs-lisp-mode)))
                   (and (null buffer) (agent-q-code--elisp-symbol target nil)
                        (let ((s (agent-q-code--elisp-symbol target nil)))
                          (or (fboundp s) (boundp s))))))
        (root (agent-q-code--root-for buffer)))
    (cond
     (elisp (agent-q-code--find-elisp job kind target buffer root))
     ((and buffer (agent-q-code--xref-backend buffer))
      (agent-q-code--find-xref job kind target buffer root))
     (t (agent-q-code--find-text job kind target buffer root)))))

(defun agent-q-code--find-elisp (job kind target buffer root)
  "Answer JOB with KIND locations of an Emacs Lisp TARGET (agent-q's analysis).
BUFFER visits TARGET's file or is nil; ROOT is where paths are relative to."
  (let* ((symbol (agent-q-code--elisp-symbol target buffer))
         (name (and symbol (symbol-name symbol))))
    (cond
     ((null symbol)
      (agent-q-code--fail job "No Emacs Lisp symbol found at the position or by that name (source: agent-q: Emacs Lisp)."))
     ((eq kind 'definition)
      (let ((locations nil))
        (dolist (type (list nil 'defvar))
          (when (if type (boundp symbol) (fboundp symbol))
            (let ((found (ignore-errors
                           (save-window-excursion
                             (if type (find-variable-noselect symbol)
                               (find-function-noselect symbol t))))))
              (when (and found (buffer-live-p (car found)) (cdr found)
                         (buffer-file-name (car found)))
                (with-current-buffer (car found)
                  (save-excursion
                    (goto-char (cdr found))
                    (push (list (buffer-file-name) (line-number-at-pos nil t)
                                (current-column))
                          locations)))))))
        (agent-q-code--answer-locations job 'definition name "agent-q: Emacs Lisp (find-function)"
                                        root (nreverse locations) nil locations)))
     (t
      (agent-q-code--all
       job
       (list (lambda (k) (agent-q-code--xref-scan job name 'call k))
             (lambda (k) (agent-q-code--xref-scan job name 'reference k)))
       (lambda (found)
         (let ((locations (mapcar (lambda (hit)
                                    (pcase-let ((`(,file ,line ,column ,definition ,_text) hit))
                                      (list file line (or column 0) definition)))
                                  (append (plist-get (car found) :hits)
                                          (plist-get (cadr found) :hits)))))
           (agent-q-code--answer-locations
            job 'references name
            "agent-q: Emacs Lisp (who_calls and who_references over the loaded libraries' sources)"
            root locations nil))))))))

(defun agent-q-code--xref-scan (job name kind then)
  "Scan the loaded libraries' sources for NAME of KIND for JOB.
THEN gets the found plist.  The scan of who_calls and who_references,
on worker threads: Emacs's
thread is not held, and the answer comes through the module's channel."
  (agent-q-xref--ensure-module)
  (agent-q--ensure-channel)
  (unless (memq #'agent-q-xref--drain-scans agent-q--channel-drain-functions)
    (push #'agent-q-xref--drain-scans agent-q--channel-drain-functions))
  (let ((ticket (agent-q--core-xref-scan-start (car (agent-q-xref-library-sources))
                                               name kind agent-q-code-max-results
                                               agent-q-xref-max-seconds)))
    (push (lambda ()
            (remhash ticket agent-q-xref--scans)
            (agent-q--core-xref-scan-cancel ticket))
          (agent-q-code--job-cancels job))
    (puthash ticket
             (lambda (found)
               (unless (agent-q-code--job-finished job)
                 (agent-q-code--guarded job
                   (if (plist-member found :error)
                       (agent-q-code--fail job "%s" (plist-get found :error))
                     (funcall then found)))))
             agent-q-xref--scans)))

(defun agent-q-code--xref-backend (buffer)
  "BUFFER's xref backend when it can answer without asking, or nil.
etags counts only with a tags table (it would prompt for one)."
  (with-current-buffer buffer
    (let ((backend (ignore-errors (xref-find-backend))))
      (and backend
           (not (memq backend '(eglot elisp)))
           (or (not (eq backend 'etags))
               (bound-and-true-p tags-file-name)
               (bound-and-true-p tags-table-list))
           backend))))

(defun agent-q-code--find-xref (job kind target buffer root)
  "Answer JOB with KIND locations of TARGET from BUFFER's xref backend.
ROOT is where paths are relative to."
  (let* ((backend (agent-q-code--xref-backend buffer))
         (identifier (with-current-buffer buffer
                       (if (plist-get target :line)
                           (save-excursion
                             (goto-char (agent-q-code--point buffer (plist-get target :line)
                                                             (plist-get target :column)))
                             (xref-backend-identifier-at-point backend))
                         (car (last (agent-q-code--name-path (plist-get target :symbol)))))))
         (items (and identifier
                     (with-current-buffer buffer
                       (if (eq kind 'definition)
                           (xref-backend-definitions backend identifier)
                         (xref-backend-references backend identifier)))))
         (locations (delq nil (mapcar #'agent-q-code--xref-location items))))
    (agent-q-code--answer-locations job kind (format "%s" identifier)
                                    (format "xref: %s" backend) root locations nil)))

(defun agent-q-code--xref-location (item)
  "The (FILE LINE COLUMN) of the xref ITEM, or nil."
  (let ((location (xref-item-location item)))
    (pcase location
      ((cl-type xref-file-location)
       (list (expand-file-name (xref-file-location-file location))
             (xref-file-location-line location)
             (or (xref-file-location-column location) 0)))
      (_ (let ((marker (ignore-errors (xref-location-marker location))))
           (and marker (buffer-file-name (marker-buffer marker))
                (with-current-buffer (marker-buffer marker)
                  (save-excursion
                    (goto-char marker)
                    (list (buffer-file-name) (line-number-at-pos nil t) (current-column))))))))))

(defun agent-q-code--find-text (job kind target buffer root)
  "Answer JOB with KIND locations of TARGET from a project text search.
BUFFER visits TARGET's file or is nil; ROOT is the directory searched."
  (let* ((name (or (car (last (agent-q-code--name-path (or (plist-get target :symbol) ""))))
                   (and buffer (with-current-buffer buffer
                                 (save-excursion
                                   (goto-char (agent-q-code--point buffer (plist-get target :line)
                                                                   (plist-get target :column)))
                                   (thing-at-point 'symbol t)))))))
    (if (not name)
        (agent-q-code--fail job "No symbol at that position (source: text search (not semantic)).")
      (agent-q-code--text-search
       job name root
       (lambda (hits)
         (let ((hits (if (eq kind 'definition)
                         (seq-filter (lambda (hit)
                                       (string-match-p
                                        (concat "\\_<\\(?:def\\|class\\|function\\|fn\\|func\\|struct\\|interface\\|type\\|enum\\|const\\|let\\|var\\|defun\\|defvar\\|defmacro\\|defcustom\\)\\_>[^\n]*\\_<"
                                                (regexp-quote name) "\\_>")
                                        (nth 3 hit)))
                                     hits)
                       hits)))
           (agent-q-code--answer-locations
            job kind name "text search (not semantic)" root
            (mapcar (lambda (hit) (seq-take hit 3)) hits) nil)))))))

(defun agent-q-code--text-search (job name directory then)
  "Search DIRECTORY for the word NAME for JOB; call THEN with the hits.
Each hit is (FILE LINE COLUMN TEXT), COLUMN 0-based characters.  The
search is an asynchronous process (`agent-q-code-search-program')."
  (let* ((rg (equal agent-q-code-search-program "rg"))
         (command (if rg
                      (list "rg" "--no-heading" "--with-filename" "--line-number" "--column"
                            "--fixed-strings" "--word-regexp" "--max-count" "1000"
                            "--max-filesize" "4M" "--" name ".")
                    (list "grep" "-rnIwF" "--exclude-dir=.git" "--exclude-dir=node_modules"
                          "--exclude-dir=target" "--exclude-dir=.venv" "--" name ".")))
         (output (generate-new-buffer " *agent-q-code-search*"))
         (default-directory directory)
         (process
          (make-process
           :name "agent-q-code-search" :buffer output :command command
           :connection-type 'pipe :noquery t
           :sentinel
           (lambda (process _event)
             (unless (process-live-p process)
               (let ((hits (agent-q-code--search-hits output directory rg name)))
                 (kill-buffer output)
                 (unless (agent-q-code--job-finished job)
                   (agent-q-code--guarded job (funcall then hits)))))))))
    (let ((timer (run-with-timer
                  agent-q-code-timeout nil
                  (lambda ()
                    (when (process-live-p process)
                      (delete-process process)
                      (agent-q-code--fail job "The text search did not finish within %s s (agent-q-code-timeout)."
                                          agent-q-code-timeout))))))
      (push (lambda ()
              (cancel-timer timer)
              (when (process-live-p process) (delete-process process)))
            (agent-q-code--job-cancels job)))))

(defun agent-q-code--search-hits (buffer directory rg name)
  "The hits in BUFFER, the output of a search of DIRECTORY for NAME.
RG non-nil when it is rg's output (with columns)."
  (let ((hits nil)
        (count 0))
    (with-current-buffer buffer
      (goto-char (point-min))
      (while (and (< count 5000)
                  (re-search-forward (if rg "^\\(.+?\\):\\([0-9]+\\):\\([0-9]+\\):\\(.*\\)$"
                                       "^\\(.+?\\):\\([0-9]+\\):\\(\\)\\(.*\\)$")
                                     nil t))
        (let* ((file (match-string 1))
               (line (string-to-number (match-string 2)))
               (text (decode-coding-string (match-string 4) 'utf-8))
               (column (if rg
                           (let ((byte (1- (string-to-number (match-string 3)))))
                             (length (decode-coding-string
                                      (substring (match-string 4) 0 (min byte (length (match-string 4))))
                                      'utf-8)))
                         (or (string-match (concat "\\_<" (regexp-quote name) "\\_>") text) 0))))
          (push (list (expand-file-name (decode-coding-string file 'utf-8) directory)
                      line column text)
                hits)
          (cl-incf count))))
    (nreverse hits)))

;;;; file_outline

(defun agent-q-code-file-outline (callback args)
  "Answer CALLBACK with the outline of the file ARGS name."
  (agent-q-code--run
   callback
   (lambda (job)
     (let* ((file (or (agent-q-code--file args)
                      (agent-q-tool-fail "Invalid arguments: 'file' must name a file")))
            (buffer (agent-q-code--buffer file))
            (shown (file-relative-name file (agent-q-code--root-for buffer))))
       (agent-q-code--with-server
        job buffer
        (lambda (server)
          (if (and server (agent-q-code--capable server :documentSymbolProvider))
              (agent-q-code--outline
               job server file
               (lambda (symbols)
                 (agent-q-code--finish
                  job (agent-q--core-code-outline
                       shown (agent-q-code--source server)
                       (mapcar (lambda (s) (vector (nth 0 s) (nth 1 s) (nth 2 s) (nth 3 s) (nth 4 s)))
                               symbols)
                       agent-q-code-max-results))))
            (agent-q-code--local-outline
             job buffer shown (lambda (answer) (agent-q-code--finish job answer))))))))))

(defvar-local agent-q-code--local-items nil
  "The buffer's outline without a server: (TICK SOURCE . ITEMS).
TICK is the buffer's `buffer-chars-modified-tick' when it was made.")

(defun agent-q-code--local-items (job buffer then)
  "Call THEN with BUFFER's outline without a server, (SOURCE . ITEMS), for JOB.
From tree-sitter, else imenu: made here for a buffer of at most
`agent-q-code-imenu-inline-size' characters, else by a separate Emacs
\(`agent-q-code--imenu-elsewhere').  ITEMS are those of
`agent-q-code--imenu-items'.  Kept until the buffer changes: imenu
over a large buffer takes seconds, and a warm call should not pay
them again."
  (with-current-buffer buffer
    (let* ((tick (buffer-chars-modified-tick))
           (cached agent-q-code--local-items)
           (keep (lambda (source items)
                   (when (buffer-live-p buffer)
                     (with-current-buffer buffer
                       (setq agent-q-code--local-items (cons tick (cons source items)))))
                   (funcall then (cons source items)))))
      (if (and cached (eql (car cached) tick))
          (funcall then (cdr cached))
        (let ((tree (agent-q-code--treesit-items buffer)))
          (cond
           (tree (funcall keep "tree-sitter" tree))
           ((or (null agent-q-code-imenu-inline-size)
                (<= (buffer-size) agent-q-code-imenu-inline-size))
            (funcall keep "imenu" (agent-q-code--imenu-items buffer)))
           (t (agent-q-code--imenu-elsewhere
               job buffer
               (lambda (items)
                 (funcall keep "imenu (made by a separate Emacs: the buffer is large)"
                          items))))))))))

(defun agent-q-code--local-outline (job buffer shown then)
  "Call THEN with the outline answer of BUFFER, named SHOWN, for JOB.
The outline is that of the function `agent-q-code--local-items'."
  (agent-q-code--local-items
   job buffer
   (lambda (found)
     (funcall then (agent-q--core-code-outline shown (car found) (cdr found)
                                               agent-q-code-max-results)))))

(defvar agent-q-code--imenu-walk)

(defun agent-q-code--imenu-elsewhere (job buffer then)
  "Make BUFFER's imenu outline in a separate Emacs for JOB; call THEN with it.
The buffer's text goes to a temporary file, which `emacs --batch -Q'
\(this Emacs's program, with its `load-path') visits in the buffer's
major mode; it walks the mode's imenu index as this Emacs would
\(`agent-q-code--imenu-walk'), positions made lines, and prints the
items as JSON.
THEN gets the items of `agent-q-code--imenu-items'.  Emacs is not
held meanwhile.  The call fails, naming what would outline the file
without holding Emacs, when that Emacs cannot make it within
`agent-q-code-timeout' seconds."
  (let* ((mode (buffer-local-value 'major-mode buffer))
         (library (ignore-errors (symbol-file mode 'defun)))
         (file (buffer-file-name buffer))
         (size (buffer-size buffer))
         (program-file (make-temp-file "agent-q-outline" nil ".el"))
         (text-file (make-temp-file "agent-q-outline" nil
                                    (let ((ext (and file (file-name-extension file))))
                                      (if ext (concat "." ext) ""))))
         (output (generate-new-buffer " *agent-q-code-outline*"))
         (errors (generate-new-buffer " *agent-q-code-outline-errors*"))
         (failed (lambda (why)
                   (agent-q-code--fail
                    job "No outline of %s (%d characters): the mode's imenu index of a buffer this large is made by a separate Emacs, so as not to hold this one (see agent-q-code-imenu-inline-size), and %s.  A language server (M-x eglot) or a tree-sitter mode (Emacs 29 and later) outlines it without holding Emacs."
                    (or file (buffer-name buffer)) size why)))
         (program
          `((setq load-path ',load-path
                  gc-cons-threshold 100000000)
            (require 'cl-lib)
            (require 'seq)
            (require 'subr-x)
            (require 'imenu)
            ,agent-q-code--imenu-walk
            ,@(and library `((load ,library nil t)))
            ;; A buffer of its own: the mode kills the local variables of
            ;; the current one, which while loading is the program's.
            (with-temp-buffer
              (let ((coding-system-for-read 'utf-8-emacs-unix))
                (insert-file-contents ,text-file))
              (setq default-directory ,(with-current-buffer buffer default-directory))
              (funcall ',mode)
              (let* ((index (imenu--make-index-alist t))
                     (lines (named-let plain ((x index) (depth 0))
                                       ;; Positions made lines, here, where it costs Emacs nothing.
                                       (cond ((> depth 60) nil)
                                             ((markerp x) (line-number-at-pos (marker-position x) t))
                                             ((overlayp x) (line-number-at-pos (overlay-start x) t))
                                             ((and (integerp x) (> x 0) (<= x (point-max)))
                                              (line-number-at-pos x t))
                                             ((stringp x) (substring-no-properties x))
                                             ((consp x)
                                              (let ((out nil))
                                                (while (consp x)
                                                  (push (plain (car x) (1+ depth)) out)
                                                  (setq x (cdr x)))
                                                (setq out (nreverse out))
                                                (when x (setcdr (last out) (plain x (1+ depth))))
                                                out))
                                             ((or (numberp x) (symbolp x)) x)))))
                (princ (json-serialize (vconcat (agent-q-code--imenu-index-items lines))))
                (terpri)))))
         (process nil)
         (timer nil))
    (with-current-buffer buffer
      (save-restriction
        (widen)
        (let ((coding-system-for-write 'utf-8-emacs-unix))
          (write-region nil nil text-file nil 'silent))))
    (with-temp-file program-file
      (let ((print-length nil) (print-level nil) (print-escape-newlines t)
            (print-escape-nonascii nil))
        (insert ";;; -*- lexical-binding: t -*-\n")
        (dolist (form program) (prin1 form (current-buffer)) (insert "\n"))))
    (setq process
          (make-process
           :name "agent-q-code-outline" :buffer output :noquery t :connection-type 'pipe
           :command (list (expand-file-name invocation-name invocation-directory)
                          "--batch" "-Q" "-l" program-file)
           :stderr errors
           :sentinel
           (lambda (process _event)
             (unless (process-live-p process)
               (when timer (cancel-timer timer))
               (ignore-errors (delete-file text-file))
               (ignore-errors (delete-file program-file))
               (let ((items (and (eq (process-exit-status process) 0)
                                 (buffer-live-p output)
                                 (with-current-buffer output
                                   (ignore-errors
                                     (json-parse-string (buffer-string) :array-type 'array))))))
                 (let ((said (and (buffer-live-p errors)
                                  (with-current-buffer errors
                                    (car (last (split-string (buffer-string) "\n" t)))))))
                   (when (buffer-live-p output) (kill-buffer output))
                   (when (buffer-live-p errors) (kill-buffer errors))
                   (unless (agent-q-code--job-finished job)
                     (agent-q-code--guarded job
                       (if (vectorp items)
                           (funcall then (append items nil))
                         (funcall failed (format "that Emacs failed (exit status %s%s)"
                                                 (process-exit-status process)
                                                 (if said
                                                     (format ": %s" (truncate-string-to-width said 300))
                                                   ""))))))))))))
    (setq timer (run-with-timer
                 agent-q-code-timeout nil
                 (lambda ()
                   (when (process-live-p process)
                     (delete-process process)
                     (funcall failed (format "that Emacs did not finish within %s s (agent-q-code-timeout)"
                                             agent-q-code-timeout))))))
    (push (lambda ()
            (cancel-timer timer)
            (when (process-live-p process) (delete-process process))
            (ignore-errors (delete-file text-file))
            (ignore-errors (delete-file program-file)))
          (agent-q-code--job-cancels job))))

(defun agent-q-code--treesit-items (buffer)
  "The outline items of BUFFER from its tree-sitter parse tree, or nil.
Only for a buffer whose mode parses it with tree-sitter (a *-ts-mode,
Emacs 29 and later) and says which nodes are definitions
\=(`treesit-defun-type-regexp'): [NAME KIND START END DEPTH]."
  (with-current-buffer buffer
    (when (and (fboundp 'treesit-parser-list)
               (bound-and-true-p treesit-defun-type-regexp)
               (ignore-errors (treesit-parser-list)))
      (let* ((regexp (if (consp treesit-defun-type-regexp)
                         (car treesit-defun-type-regexp)
                       treesit-defun-type-regexp))
             (root (ignore-errors
                     (treesit-buffer-root-node (treesit-parser-language
                                                (car (treesit-parser-list))))))
             (tree (and root (ignore-errors
                               (treesit-induce-sparse-tree root regexp nil 100))))
             (items nil)
             (count 0))
        (cl-labels ((kind (node)
                      (let ((type (treesit-node-type node)))
                        (cond ((string-match-p "class" type) "class")
                              ((string-match-p "method" type) "method")
                              ((string-match-p "function\\|def" type) "function")
                              (t (replace-regexp-in-string
                                  "_" " " (replace-regexp-in-string
                                           "_\\(definition\\|declaration\\|item\\)\\'" "" type))))))
                    (walk (subtree depth parent)
                      (pcase-let* ((`(,node . ,children) subtree)
                                   (this (and node (kind node))))
                        ;; A function defined in a class is a method.
                        (when (and (equal this "function") (equal parent "class"))
                          (setq this "method"))
                        (when (and node (< count 10000))
                          (let ((name (ignore-errors (treesit-defun-name node))))
                            (push (vector (or name "(anonymous)") this
                                          (treesit-node-start node)
                                          (treesit-node-end node)
                                          depth)
                                  items)
                            (cl-incf count)))
                        (dolist (child children)
                          (walk child (if node (1+ depth) depth) (or this parent))))))
          (when tree (walk tree 0 nil)))
        (agent-q-code--positions-to-lines (nreverse items))))))

(defun agent-q-code--positions-to-lines (items)
  "ITEMS, vectors [NAME KIND START END DEPTH], with positions made lines.
START and END are positions of the current buffer (or nil); they
become 1-based line numbers, counted in one pass over the buffer in
order of position (counting from the start for each would take
seconds in a large buffer)."
  (let ((positions nil)
        (lines (make-hash-table :test #'eql)))
    (dolist (item items)
      (dolist (i '(2 3))
        (when (integerp (aref item i)) (push (aref item i) positions))))
    (save-excursion
      (save-restriction
        (widen)
        (let ((line 1) (bol (point-min)))
          (dolist (pos (sort (delete-dups positions) #'<))
            (goto-char (max (point-min) (min pos (point-max))))
            (let ((here (line-beginning-position)))
              (setq line (+ line (count-lines bol here))
                    bol here)
              (puthash pos line lines))))))
    (dolist (item items)
      (dolist (i '(2 3))
        (aset item i (if (integerp (aref item i)) (gethash (aref item i) lines 1) 1))))
    items))

(defun agent-q-code--imenu-items (buffer)
  "The outline items of BUFFER from imenu: [NAME KIND START END DEPTH]."
  (with-current-buffer buffer
    (let ((index (save-excursion
                   (save-restriction
                     (widen)
                     ;; imenu keeps an index made before the buffer changed:
                     ;; make it anew (the caller keeps it per version).
                     (setq imenu--index-alist nil)
                     (ignore-errors (imenu--make-index-alist t))))))
      (agent-q-code--positions-to-lines (agent-q-code--imenu-index-items index)))))

(eval-and-compile
  (defconst agent-q-code--imenu-walk
    '(defun agent-q-code--imenu-index-items (index)
       "The outline items of the imenu INDEX: [NAME KIND START END DEPTH].
     START and END are as INDEX has them (positions, or lines)."
       (let ((items nil)
             (count 0))
         (cl-labels ((named (name kind)
                            ;; python-mode's imenu writes the kind in the name: "f (def)".
                            (if (and (null kind) (string-match "\\`\\(.+\\) (\\([a-z]+\\))\\'" name))
                                (let ((word (match-string 2 name)))
                                  (cons (match-string 1 name)
                                        (cond ((equal word "def") "function")
                                              (t word))))
                              (cons name (or kind "symbol"))))
                     (position-line (pos)
                                    ;; A position for now: lines are counted in one pass below.
                                    (cond ((overlayp pos) (overlay-start pos))
                                          ((markerp pos) (marker-position pos))
                                          (t pos)))
                     (walk (entries depth kind)
                           (dolist (entry entries)
                             (when (< count 10000)
                               (cond
                                ((equal entry imenu--rescan-item))
                                ((imenu--subalist-p entry)
                                 (let* ((children (cdr entry))
                                        (first (seq-find (lambda (c) (and (consp c) (not (imenu--subalist-p c))
                                                                          (number-or-marker-p (cdr c))))
                                                         children))
                                        (line (and first (position-line (cdr first))))
                                        (self (seq-find (lambda (c) (and (consp c) (member (car c) '("*class definition*" "*definition*"))))
                                                        children)))
                                   (if (and (< depth 50) (not (member (car entry) '("Variables" "Types" "Functions" "Classes" "Sections" "Packages" "Other"))))
                                       (progn
                                         (push (vector (car (named (car entry) kind))
                                                       (cdr (named (car entry) kind))
                                                       (if self (position-line (cdr self)) (or line 1))
                                                       (if self (position-line (cdr self)) (or line 1))
                                                       depth)
                                               items)
                                         (cl-incf count)
                                         (walk (remove self children) (1+ depth) nil))
                                     (walk children depth (downcase (string-remove-suffix "s" (car entry)))))))
                                ((and (consp entry) (number-or-marker-p (cdr entry)))
                                 (let ((line (position-line (cdr entry))))
                                   (push (vector (car (named (car entry) kind)) (cdr (named (car entry) kind))
                                                 line line depth)
                                         items)
                                   (cl-incf count))))))))
           (walk index 0 nil))
         (nreverse items)))
    "The definition of `agent-q-code--imenu-index-items', as data.
This Emacs compiles it (below), and a separate Emacs making the
outline of a large buffer (`agent-q-code--imenu-elsewhere') is given
it, so that the index is walked there, not here."))

(defmacro agent-q-code--define-imenu-walk ()
  "Define `agent-q-code--imenu-index-items' from `agent-q-code--imenu-walk'."
  agent-q-code--imenu-walk)

(agent-q-code--define-imenu-walk)

;;;; workspace_symbols

(defun agent-q-code-workspace-symbols (callback args)
  "Answer CALLBACK with the project's symbols matching ARGS's query."
  (agent-q-code--run
   callback
   (lambda (job)
     (let* ((query (agent-q-builtins--arg args "query"))
            (root (agent-q-code--base-root))
            (servers (agent-q-code--project-servers root)))
       (unless (stringp query)
         (agent-q-tool-fail "Invalid arguments: 'query' must be a string"))
       (if (not servers)
           (agent-q-code--imenu-symbols
            job root query
            (lambda (sources items)
              (agent-q-code--finish
               job (agent-q--core-code-symbols
                    query (format "%s (the project's visited buffers only: no language server runs for the project)"
                                  (if sources (string-join sources ", ") "imenu"))
                    root items agent-q-code-max-results))))
         (agent-q-code--all
          job
          (mapcar (lambda (server)
                    (lambda (k) (agent-q-code--request job server :workspace/symbol
                                                       (list :query query) k)))
                  servers)
          (lambda (results)
            (agent-q-code--finish
             job (agent-q--core-code-symbols
                  query (mapconcat #'agent-q-code--source servers ", ") root
                  (apply #'append
                         (mapcar (lambda (result)
                                   (mapcar (lambda (s)
                                             (let* ((location (plist-get s :location))
                                                    (range (plist-get location :range)))
                                               (vector (plist-get s :name) (plist-get s :kind)
                                                       (agent-q-code--uri-to-file (plist-get location :uri))
                                                       (1+ (or (plist-get (plist-get range :start) :line) 0))
                                                       (plist-get s :containerName))))
                                           (append result nil)))
                                 results))
                  agent-q-code-max-results)))))))))

(defun agent-q-code--imenu-symbols (job root query then)
  "Find symbols matching QUERY in the buffers visiting files under ROOT, for JOB.
Call THEN with the sources of their outlines and the symbols, each
outline being that of the function `agent-q-code--local-items' (a
large buffer's made by a separate Emacs, so that Emacs is not held)."
  (let* ((true-root (file-truename root))
         (buffers (seq-filter (lambda (buffer)
                                (let ((file (buffer-file-name buffer)))
                                  (and file (string-prefix-p true-root (file-truename file)))))
                              (buffer-list))))
    (agent-q-code--all
     job
     (mapcar (lambda (buffer) (lambda (k) (agent-q-code--local-items job buffer k))) buffers)
     (lambda (outlines)
       (let ((items nil) (sources nil))
         (cl-mapc (lambda (buffer found)
                    (when (cdr found) (cl-pushnew (car found) sources :test #'equal))
                    (dolist (item (cdr found))
                      (when (string-match-p (regexp-quote query) (aref item 0))
                        (push (vector (aref item 0) (aref item 1) (buffer-file-name buffer)
                                      (aref item 2) nil)
                              items))))
                  buffers outlines)
         (funcall then (sort sources #'string<) (nreverse items)))))))

;;;; type_at

(defun agent-q-code-type-at (callback args)
  "Answer CALLBACK with the server's hover text at ARGS's position."
  (agent-q-code--run
   callback
   (lambda (job)
     (let ((target (agent-q-code--target args)))
       (unless (plist-get target :line)
         (agent-q-tool-fail "Invalid arguments: type_at needs file, line and column (1-based)"))
       (agent-q-code--locate
        job target
        (lambda (found)
          (let ((server (plist-get found :server))
                (buffer (plist-get found :buffer)))
            (if (not (and server (agent-q-code--capable server :hoverProvider)))
                (agent-q-code--fail job "No language server runs for %s, and type_at needs one (file_outline, find_definition and find_references have fallbacks)."
                                    (buffer-file-name buffer))
              (agent-q-code--flush buffer)
              (agent-q-code--request
               job server :textDocument/hover
               (agent-q-code--position-params buffer (plist-get found :point))
               (lambda (result)
                 (agent-q-code--finish
                  job (agent-q--core-code-hover
                       (plist-get found :subject) (agent-q-code--source server)
                       (agent-q-code--hover-text (plist-get result :contents))))))))))))))

(defun agent-q-code--hover-text (contents)
  "The text of hover CONTENTS: MarkupContent, a MarkedString or a list of them."
  (cond ((null contents) "")
        ((stringp contents) contents)
        ((and (listp contents) (keywordp (car contents)))
         (let ((value (plist-get contents :value)))
           (if (plist-get contents :language)
               (format "```%s\n%s\n```" (plist-get contents :language) value)
             (or value ""))))
        (t (mapconcat #'agent-q-code--hover-text (append contents nil) "\n"))))

;;;; diagnostics

(defun agent-q-code-diagnostics (callback args)
  "Answer CALLBACK with the diagnostics of ARGS's file, or of the project."
  (agent-q-code--run
   callback
   (lambda (job)
     (let ((file (agent-q-code--file args)))
       (if file
           (agent-q-code--file-diagnostics job file)
         (agent-q-code--project-diagnostics job))))))

(defun agent-q-code--buffer-diagnostics (buffer)
  "BUFFER's diagnostics as items, and their source: (ITEMS . SOURCE).
Those lsp-mode's server published, from lsp-mode's store; else
Flymake's and Flycheck's."
  (let ((server (agent-q-code--buffer-server buffer)))
    (if (and server (eq (agent-q-code--backend-of server) agent-q-code--lsp-mode))
        (cons (funcall (agent-q-code-backend-diagnostics agent-q-code--lsp-mode)
                       server (buffer-file-name buffer))
              (agent-q-code--source server))
      (agent-q-code--mode-diagnostics buffer))))

(defun agent-q-code--mode-diagnostics (buffer)
  "BUFFER's diagnostics from Flymake and Flycheck: (ITEMS . SOURCE)."
  (with-current-buffer buffer
    (let ((file (buffer-file-name))
          (items nil)
          (sources nil))
      (when (bound-and-true-p flymake-mode)
        (push (let ((server (agent-q-code--buffer-server buffer)))
                (if server
                    (format "flymake (%s)" (agent-q-code--source server))
                  "flymake"))
              sources)
        (save-restriction
          (widen)
          (dolist (d (flymake-diagnostics))
            (let* ((beg (flymake-diagnostic-beg d))
                   (text (flymake-diagnostic-text d))
                   (source-code (agent-q-code--split-flymake-text text)))
              (save-excursion
                (goto-char beg)
                (push (vector file (line-number-at-pos nil t) (current-column)
                              (symbol-name (flymake-diagnostic-type d))
                              (car source-code) (cadr source-code) (nth 2 source-code))
                      items))))))
      (when (and (bound-and-true-p flycheck-mode) (boundp 'flycheck-current-errors))
        (push "flycheck" sources)
        (dolist (e flycheck-current-errors)
          (push (vector file (or (flycheck-error-line e) 1)
                        (max 0 (1- (or (flycheck-error-column e) 1)))
                        (symbol-name (flycheck-error-level e))
                        (and (flycheck-error-checker e) (symbol-name (flycheck-error-checker e)))
                        (flycheck-error-id e) (flycheck-error-message e))
                items)))
      (cons (nreverse items) (and sources (string-join (nreverse sources) ", "))))))

(defun agent-q-code--split-flymake-text (text)
  "Split eglot's Flymake TEXT \"Source [code]: message\" into its parts."
  (if (string-match "\\`\\([^ :\n]+\\)\\(?: \\[\\([^]\n]+\\)\\]\\)?: \\(\\(?:.\\|\n\\)*\\)\\'" text)
      (list (match-string 1 text) (match-string 2 text) (match-string 3 text))
    (list nil nil text)))

(defun agent-q-code--flymake-list-only-item (file diagnostic)
  "The item of DIAGNOSTIC, filed for FILE (not visited) by eglot."
  (let ((locus (ignore-errors (flymake-diagnostic-beg diagnostic)))
        (parts (agent-q-code--split-flymake-text (flymake-diagnostic-text diagnostic))))
    (vector file (if (consp locus) (car locus) 1)
            (if (consp locus) (max 0 (1- (or (cdr locus) 1))) 0)
            (symbol-name (flymake-diagnostic-type diagnostic))
            (car parts) (cadr parts) (nth 2 parts))))

(defun agent-q-code--file-diagnostics (job file)
  "Answer JOB with FILE's diagnostics.
A buffer opened for it is given `agent-q-code-diagnostics-wait'
seconds for its server to report."
  (let* ((visited (find-buffer-visiting file))
         (buffer (agent-q-code--buffer file))
         (root (agent-q-code--root-for buffer))
         (shown (file-relative-name file root))
         (answer (lambda (note)
                   (pcase-let ((`(,items . ,source) (agent-q-code--buffer-diagnostics buffer)))
                     (agent-q-code--finish
                      job (concat
                           (agent-q--core-code-diagnostics
                            shown (or source "none: no Flymake or Flycheck in the buffer, and no language server")
                            root items agent-q-code-max-results nil)
                           (or note "")))))))
    ;; Flymake starts its backends when a buffer is shown: one opened
    ;; here, never shown, is started now.
    (with-current-buffer buffer
      (when (and (bound-and-true-p flymake-mode)
                 (not (or (flymake-running-backends) (flymake-reporting-backends))))
        (flymake-start nil t)))
    (if (or visited (not (agent-q-code--buffer-server buffer)))
        (funcall answer nil)
      ;; Just opened: the server reports after checking it.
      (let* ((deadline (+ (float-time) agent-q-code-diagnostics-wait))
             (timer nil))
        (setq timer
              (run-with-timer
               0.1 0.1
               (lambda ()
                 (cond ((agent-q-code--job-finished job) (cancel-timer timer))
                       ((car (agent-q-code--buffer-diagnostics buffer))
                        (cancel-timer timer)
                        (agent-q-code--guarded job (funcall answer nil)))
                       ((> (float-time) deadline)
                        (cancel-timer timer)
                        (agent-q-code--guarded
                         job (funcall answer (format "\n(The file was opened for this call; the server reported nothing within %s s.)"
                                                     agent-q-code-diagnostics-wait))))))))
        (push (lambda () (cancel-timer timer)) (agent-q-code--job-cancels job))))))

(defconst agent-q-code--max-project-files 100000
  "Most of a project's files `diagnostics' considers.")

(defconst agent-q-code--max-opened-bytes (* 4 1024 1024)
  "The largest file `diagnostics' of a project opens to a language server.
The core's `MAX_OPENED_MB' words it.")

(defun agent-q-code--project-diagnostics (job)
  "Answer JOB with the diagnostics of the project's files.
Those of its buffers (Flymake, Flycheck, lsp-mode), then those of
files not visited: what a running server already reported on them,
else what it reports once they are opened to it (at most
`agent-q-code-diagnostics-max-files', waiting at most
`agent-q-code-diagnostics-wait' seconds).  The answer says which files
were not checked, and why."
  (let* ((root (agent-q-code--base-root))
         (true-root (file-name-as-directory (file-truename root)))
         (items nil)
         (sources nil)
         (visited (make-hash-table :test #'equal))
         (servers (agent-q-code--project-servers root)))
    (dolist (buffer (buffer-list))
      (let ((file (buffer-file-name buffer)))
        (when file
          (let ((true (file-truename file)))
            (when (string-prefix-p true-root true)
              (puthash true t visited)
              (pcase-let ((`(,found . ,source) (agent-q-code--buffer-diagnostics buffer)))
                (when source
                  (push source sources)
                  (setq items (append found items)))))))))
    (let ((answer
           (lambda (more-items more-sources check)
             (let ((all-sources (delete-dups (append (nreverse sources) more-sources))))
               (agent-q-code--finish
                job (concat
                     (agent-q--core-code-diagnostics
                      "the project" (if all-sources (string-join all-sources ", ") "none")
                      root (append more-items items) agent-q-code-max-results nil)
                     "\n"
                     (apply #'agent-q--core-code-project-check root
                            (hash-table-count visited) check)))))))
      (if (not servers)
          (funcall answer nil nil (list 0 0 nil nil nil nil nil
                                        agent-q-code-diagnostics-max-files
                                        agent-q-code-diagnostics-wait))
        (agent-q-code--project-files
         job true-root
         (lambda (files)
           (agent-q-code--check-unvisited
            job servers (seq-remove (lambda (file) (gethash file visited)) files)
            answer)))))))

(defun agent-q-code--project-files (job root then)
  "Call THEN with the absolute names of the files of the project at ROOT.
The files are listed by a process, for JOB, so that Emacs is not held
while a large tree is walked: a Git work tree's by git ls-files
\(tracked, and untracked but not ignored), another project's by find,
leaving out what `project-ignores' names.  At most
`agent-q-code--max-project-files', within `agent-q-code-timeout'
seconds (a listing cut by either gives the files listed so far).
Only without a find program are they listed by `project-files', which
waits."
  (let* ((project (ignore-errors (project-current nil root)))
         (fallback (lambda ()
                     (seq-take (and project (ignore-errors (project-files project)))
                               agent-q-code--max-project-files)))
         (find (executable-find "find"))
         (by-find (lambda ()
                    (if (not (and project find))
                        (funcall then (funcall fallback))
                      (agent-q-code--list-files
                       job root
                       (let ((ignores (agent-q-code--find-ignores
                                       (ignore-errors (project-ignores project root)))))
                         (append (list find ".")
                                 (and ignores (append '("(") ignores '(")" "-prune" "-o")))
                                 '("-type" "f" "-print0")))
                       then fallback)))))
    (if (and (executable-find "git") (file-exists-p (expand-file-name ".git" root)))
        (agent-q-code--list-files
         job root '("git" "ls-files" "-z" "--cached" "--others" "--exclude-standard")
         then by-find)
      (funcall by-find))))

(defun agent-q-code--find-ignores (ignores)
  "The find arguments that match the globs of `project-ignores', or nil.
IGNORES are those globs; the arguments are joined by -o, for
\"find . ( ARGUMENTS ) -prune\".  A glob with a slash inside is
matched against the path from the root (from anywhere below it
unless it starts with a slash), another against the name."
  (let ((args nil))
    (dolist (glob ignores)
      (when (stringp glob)
        (let ((glob (string-remove-suffix "/" glob)))
          (unless (member glob '("" "." "./"))
            (when args (push "-o" args))
            (cond ((string-prefix-p "/" glob)
                   (push "-path" args) (push (concat "." glob) args))
                  ((string-match-p "/" glob)
                   (push "-path" args) (push (concat "*/" (string-remove-prefix "./" glob)) args))
                  (t (push "-name" args) (push glob args)))))))
    (nreverse args)))

(defun agent-q-code--list-files (job root command then otherwise)
  "Run COMMAND in ROOT for JOB; call THEN with the files it lists.
COMMAND prints names relative to ROOT, each ended by a NUL byte.
At most `agent-q-code--max-project-files' are taken, and the
process is stopped after `agent-q-code-timeout' seconds; either way
THEN gets what was listed.  When COMMAND fails, OTHERWISE (a function
of no arguments) gives the files."
  (let* ((output (generate-new-buffer " *agent-q-code-files*"))
         (default-directory root)
         (coding-system-for-read 'utf-8)
         (count 0)
         (cut nil)
         (timer nil)
         (process
          (make-process
           :name "agent-q-code-files" :buffer output :noquery t :connection-type 'pipe
           :command command
           :filter
           (lambda (process text)
             (when (buffer-live-p output)
               (with-current-buffer output
                 (goto-char (point-max))
                 (insert text)))
             (setq count (+ count (cl-count 0 text)))
             (when (and (>= count agent-q-code--max-project-files) (process-live-p process))
               (setq cut t)
               (delete-process process)))
           :sentinel
           (lambda (process _event)
             (unless (process-live-p process)
               (when timer (cancel-timer timer))
               (let ((files (and (buffer-live-p output)
                                 (or cut (eq (process-exit-status process) 0))
                                 (with-current-buffer output
                                   ;; A listing cut short may end in part of a name.
                                   (goto-char (point-max))
                                   (skip-chars-backward "^\0")
                                   (mapcar (lambda (name)
                                             (expand-file-name (string-remove-prefix "./" name)
                                                               root))
                                           (seq-take (split-string
                                                      (buffer-substring-no-properties
                                                       (point-min) (point))
                                                      "\0" t)
                                                     agent-q-code--max-project-files))))))
                 (when (buffer-live-p output) (kill-buffer output))
                 (unless (agent-q-code--job-finished job)
                   (agent-q-code--guarded job
                     (funcall then (if (or files cut) files (funcall otherwise)))))))))))
    (setq timer (run-with-timer agent-q-code-timeout nil
                                (lambda ()
                                  (when (process-live-p process)
                                    (setq cut t)
                                    (delete-process process)))))
    (push (lambda ()
            (cancel-timer timer)
            (when (process-live-p process) (delete-process process)))
          (agent-q-code--job-cancels job))))

(defun agent-q-code--file-mode (file cache)
  "The major mode FILE would get from `auto-mode-alist', or nil.
CACHE maps an extension (or a name without one) to the mode found."
  (let ((key (or (file-name-extension file) (file-name-nondirectory file))))
    (pcase (gethash key cache 'unknown)
      ('unknown
       (let* ((mode (let ((case-fold-search nil))
                      (assoc-default file auto-mode-alist #'string-match)))
              (mode (if (consp mode) (car mode) mode))
              (mode (cond ((not (symbolp mode)) nil)
                          ((fboundp 'major-mode-remap) (funcall 'major-mode-remap mode))
                          ((boundp 'major-mode-remap-alist)
                           (or (alist-get mode (symbol-value 'major-mode-remap-alist)) mode))
                          (t mode))))
         (puthash key mode cache)
         mode))
      (mode mode))))

(defun agent-q-code--check-unvisited (job servers files then)
  "Check FILES, not visited, with SERVERS for JOB; call THEN with the findings.
A file a server already reported problems in is taken from its report;
the others a server takes are opened to it (textDocument/didOpen, no
buffer), at most `agent-q-code-diagnostics-max-files', and closed
after its report or `agent-q-code-diagnostics-wait' seconds.  THEN
gets the items, their sources and the arguments of
`agent-q--core-code-project-check' after VISITED."
  (let ((cache (make-hash-table :test #'equal))
        (languages (make-hash-table :test #'equal))
        (items nil) (sources nil) (reported 0)
        (candidates nil) (beyond nil) (too-large nil) (no-server nil))
    (dolist (file files)
      ;; A report with diagnostics counts; an empty one may be what a
      ;; server that checks open files only (pyright) sent when the file
      ;; was closed, so the file is checked again.
      (let ((known (seq-some (lambda (server)
                               (let ((found (funcall (agent-q-code-backend-diagnostics
                                                      (agent-q-code--backend-of server))
                                                     server file)))
                                 (and found (cons server found))))
                             servers)))
        (if known
            (progn
              (cl-incf reported)
              (push (format "%s (files not visited)" (agent-q-code--source (car known))) sources)
              (setq items (append (cdr known) items)))
          (let* ((mode (agent-q-code--file-mode file cache))
                 (taker (and mode
                             (seq-some
                              (lambda (server)
                                (let* ((key (list server mode (file-name-extension file)))
                                       (language (gethash key languages 'unknown)))
                                  (when (eq language 'unknown)
                                    (setq language (ignore-errors
                                                     (funcall (agent-q-code-backend-language
                                                               (agent-q-code--backend-of server))
                                                              server mode file)))
                                    (puthash key language languages))
                                  (and (stringp language) (list server language))))
                              servers))))
            (cond ((null taker) (push file no-server))
                  ((>= (length candidates) agent-q-code-diagnostics-max-files) (push file beyond))
                  (t (push (cons file taker) candidates)))))))
    (setq candidates (nreverse candidates))
    (agent-q-code--open-to-servers
     job candidates
     (lambda (opened silent large more-items more-sources)
       (setq too-large large)
       (funcall then (append more-items items)
                (delete-dups (append (nreverse sources) more-sources))
                (list reported opened silent (nreverse beyond) too-large (nreverse no-server) t
                      agent-q-code-diagnostics-max-files agent-q-code-diagnostics-wait))))))

(defun agent-q-code--open-to-servers (job candidates then)
  "Open CANDIDATES, each (FILE SERVER LANGUAGE-ID), to their servers for JOB.
Call THEN with the number reported on, the files not reported on, the
files too large to open, the items and their sources, once each was
reported on (and no report came for 0.3 s), or after
`agent-q-code-diagnostics-wait' seconds.  Each file is closed again."
  (let ((pending candidates)
        (open nil)                      ; (FILE SERVER MARK)
        (large nil)
        (timer nil)
        (closed nil))
    (cl-labels
        ((close-all ()
           (unless closed
             (setq closed t)
             (when timer (cancel-timer timer))
             (dolist (entry open)
               (pcase-let ((`(,file ,server ,_mark) entry))
                 (ignore-errors
                   (funcall (agent-q-code-backend-notify (agent-q-code--backend-of server))
                            server :textDocument/didClose
                            (list :textDocument (list :uri (agent-q-code--file-to-uri file)))))))))
         (published (entry)
           (pcase-let ((`(,file ,server ,_mark) entry))
             (funcall (agent-q-code-backend-published (agent-q-code--backend-of server)) server file)))
         (reported-p (entry) (not (eq (published entry) (nth 2 entry))))
         (finish ()
           (let ((items nil) (sources nil) (silent nil) (count 0))
             (dolist (entry open)
               (pcase-let ((`(,file ,server ,_mark) entry))
                 (if (not (reported-p entry))
                     (push file silent)
                   (cl-incf count)
                   (push (format "%s (files not visited, opened for this call)"
                                 (agent-q-code--source server))
                         sources)
                   (setq items (append (funcall (agent-q-code-backend-diagnostics
                                                 (agent-q-code--backend-of server))
                                                server file)
                                       items)))))
             (close-all)
             (unless (agent-q-code--job-finished job)
               (agent-q-code--guarded job
                 (funcall then count (sort silent #'string<) (nreverse large) items
                          (delete-dups (nreverse sources)))))))
         (wait ()
           (let ((deadline (+ (float-time) agent-q-code-diagnostics-wait))
                 (states (mapcar #'published open))
                 (changed (float-time)))
             (setq timer
                   (run-with-timer
                    0.1 0.1
                    (lambda ()
                      (cond
                       ((agent-q-code--job-finished job) (close-all))
                       (t
                        (let ((now (mapcar #'published open)))
                          (unless (cl-every #'eq now states)
                            (setq states now changed (float-time))))
                        (when (or (> (float-time) deadline)
                                  (and (cl-every #'reported-p open)
                                       (> (- (float-time) changed) 0.3)))
                          (cancel-timer timer)
                          (finish)))))))))
         (open-some ()
           ;; A few at a time, so that Emacs is never held long.
           (let ((start (float-time)))
             (while (and pending (< (- (float-time) start) 0.03)
                         (not (agent-q-code--job-finished job)))
               (pcase-let ((`(,file ,server ,language) (pop pending)))
                 (let ((size (file-attribute-size (file-attributes file))))
                   (cond
                    ((null size))
                    ((> size agent-q-code--max-opened-bytes) (push file large))
                    (t
                     (let ((text (with-temp-buffer
                                   (ignore-errors (insert-file-contents file))
                                   (buffer-substring-no-properties (point-min) (point-max))))
                           (mark (funcall (agent-q-code-backend-published
                                           (agent-q-code--backend-of server))
                                          server file)))
                       (funcall (agent-q-code-backend-notify (agent-q-code--backend-of server))
                                server :textDocument/didOpen
                                (list :textDocument
                                      (list :uri (agent-q-code--file-to-uri file)
                                            :languageId language :version 0 :text text)))
                       (push (list file server mark) open))))))))
           (cond ((agent-q-code--job-finished job) (close-all))
                 (pending (run-with-timer 0 nil #'open-some))
                 (open (wait))
                 (t (finish)))))
      (push #'close-all (agent-q-code--job-cancels job))
      (open-some))))

;;;; The handlers

(defun agent-q-code-find-definition (callback args)
  "Answer CALLBACK with the definitions ARGS ask for (find_definition)."
  (agent-q-code--find callback args 'definition))

(defun agent-q-code-find-references (callback args)
  "Answer CALLBACK with the references ARGS ask for (find_references)."
  (agent-q-code--find callback args 'references))

(provide 'agent-q-code)

;;; agent-q-code.el ends here
