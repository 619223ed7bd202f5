;;; agent-q-prompt.el --- The approval prompt of agent-q: one key in the minibuffer  -*- lexical-binding: t -*-

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

;; The approval prompt of agent-q.
;;
;; `agent-q-approve-in-minibuffer' is the default value of
;; `agent-q-approval-function': it shows a tool call in the minibuffer and
;; reads a single deliberate key (y, n, r, e, v, a, s; C-g denies), never a
;; typed-ahead one.  `e' edits the arguments in a buffer before approving.
;;
;; It approves "propose_file_edit" without asking, because that tool's
;; approval is the hunk review (agent-q-review.el).

;;; Code:

(require 'cl-lib)
(require 'pp)
(require 'subr-x)

;;;; Module and agent-q.el functions (loaded by agent-q.el)

(declare-function agent-q-validate-arguments "agent-q" (tool-name args &optional registry))
(declare-function agent-q-get-tool "agent-q" (name &optional registry))
(declare-function agent-q--wait-for "agent-q" (predicate))
(declare-function agent-q-when-cancelled "agent-q-async" (function))
(declare-function agent-q-rules-save-from-prompt "agent-q-rules" (tool-name args context))
(declare-function agent-q--core-visible "agent-q-core" (text))
(declare-function agent-q-gate-call-agent "agent-q-gate" (context))
(declare-function agent-q-rules-agent-client "agent-q-rules" (agent))

;; Defined in agent-q.el; declared here so that the compiler knows they are special.
(defvar agent-q-approval-context)
(defvar agent-q-approval-function)
(defvar agent-q-confirm-safety-levels)
(defvar agent-q-call-context)
(declare-function agent-q-guard-write-changed "agent-q-guard" (true &optional name))

;;;; Options

(defcustom agent-q-approval-max-string-length 80
  "Strings longer than this are shortened in the approval prompt.
A file name given as :path is never shortened."
  :type 'natnum
  :group 'agent-q)

;;;; Obsolete names

;; The prompt lived in agent-q-tools.el under agent-q-tools- names; users'
;; init files and key bindings may still name them.
(define-obsolete-function-alias 'agent-q-tools-arguments-accept #'agent-q-prompt-arguments-accept "0.2.0")
(define-obsolete-function-alias 'agent-q-tools-arguments-cancel #'agent-q-prompt-arguments-cancel "0.2.0")
(define-obsolete-function-alias 'agent-q-tools-arguments-mode #'agent-q-prompt-arguments-mode "0.2.0")
(define-obsolete-variable-alias 'agent-q-tools-arguments-mode-map 'agent-q-prompt-arguments-mode-map "0.2.0")

;;;; Minibuffer approval

(defvar agent-q-prompt--session-approved nil
  "What the user approved for the rest of the session with \"a\".
Each entry is (TOOL-ID ORIGIN CLIENT): one registration of one tool,
called by one client.  TOOL-ID names one registration of one tool in
one registry: a tool replaced or re-registered with another handler
has a new id, so it is asked about again.  ORIGIN is the approval
context's :origin (`emacs' or `mcp', as the driver that received the
call says), so that no MCP client, whatever it calls itself, holds
what was approved for a bridge inside Emacs.  CLIENT is the context's
:client (such as \"gptel\" or \"claude-code 2.1.0 (MCP)\"), or nil for
calls that name no client: approving write_file for one coding agent
approves it for no other.  For a terminal agent's own tool call (see
`agent-q-gate-call-agent'), CLIENT is the agent's name for the rules,
such as \"claude (own tools)\": \"a\" then covers every session of that
agent, and no other agent.")

(defun agent-q-prompt--gate-agent ()
  "The terminal agent whose own tool call is being approved, or nil."
  (and (boundp 'agent-q-approval-context)
       (fboundp 'agent-q-gate-call-agent)
       (agent-q-gate-call-agent agent-q-approval-context)))

(defun agent-q-prompt--always-client ()
  "Whom \"a\" approves the call's tool for: the context's client, or its agent."
  (let ((agent (agent-q-prompt--gate-agent)))
    (if agent
        (agent-q-rules-agent-client agent)
      (agent-q-prompt--context-get :client))))

(defun agent-q-prompt--session-key ()
  "The key of the call being approved in `agent-q-prompt--session-approved'.
Nil when the call's tool has no id."
  (let ((id (agent-q-prompt--context-get :tool-id)))
    (and id (list id (or (agent-q-prompt--context-get :origin) 'emacs)
                  (agent-q-prompt--always-client)))))

(defun agent-q-prompt--shorten (value)
  "Return VALUE with long strings shortened, and whether any was.
The result is a cons (SHORTENED . CHANGED)."
  (let ((changed nil)
        (max agent-q-approval-max-string-length))
    (cl-labels ((walk (v)
                  (cond
                   ((and (stringp v) (> (length v) max))
                    (setq changed t)
                    (format "%s...[%d more chars]" (substring v 0 max)
                            (- (length v) max)))
                   ((proper-list-p v) (mapcar #'walk v))
                   ((consp v) (cons (walk (car v)) (walk (cdr v))))
                   ((vectorp v) (apply #'vector (mapcar #'walk v)))
                   ((hash-table-p v)
                    (let ((copy (copy-hash-table v)))
                      (maphash (lambda (k x) (puthash k (walk x) copy)) v)
                      copy))
                   (t v))))
      (cons (if (and (proper-list-p value) (cl-evenp (length value)) (keywordp (car value)))
                ;; A plist: shorten its values, but never a file name.
                (cl-loop for (key val) on value by #'cddr
                         nconc (list key (if (memq key '(:path :file)) val (walk val))))
              (walk value))
            changed))))

(defun agent-q-prompt--path-note (args)
  "Return a note naming the file the :path in ARGS designates, or an empty string.
The approval prompt shows it whole, after the arguments, so a long or
relative path, or a symlink, cannot hide which file a tool will touch.
When the tool's guard resolved and pinned the file (the approval
context's :file), that name is shown, never resolved again: it is the
file the call writes.  A remote file (or a relative name in a remote
`default-directory') is named as given, never resolved: resolving it
would contact the remote host before the user answered."
  (let ((path (and (listp args) (plist-get args :path)))
        (pinned (agent-q-prompt--context-get :file)))
    (cond
     ((not (stringp path)) "")
     ((stringp pinned)
      (if (equal pinned (expand-file-name path))
          (format " [file: %s]" pinned)
        (format " [file: %s, which is %s]" (expand-file-name path) pinned)))
     ((file-remote-p path) (format " [remote file: %s]" path))
     ((and (not (file-name-absolute-p path)) (file-remote-p default-directory))
      (format " [remote file: %s in %s, not resolved before you answer]"
              path default-directory))
     (t (let* ((full (expand-file-name path))
               (true (file-truename full)))
          (if (equal true full)
              (format " [file: %s]" full)
            (format " [file: %s, a link to %s]" full true)))))))

(defun agent-q-prompt--print (value)
  "Return VALUE printed on one line, newlines escaped."
  (let ((print-escape-newlines t)
        (print-length nil)
        (print-level nil))
    (prin1-to-string value)))

(defun agent-q-prompt--pp-plist (plist)
  "Return PLIST pretty-printed, one key and value per line."
  (let ((print-length nil)
        (print-level nil)
        (lines nil))
    (if (not (and (listp plist) (cl-evenp (length plist))))
        (pp-to-string plist)
      (while plist
        (push (format "%s %s" (prin1-to-string (car plist))
                      (string-trim-right (pp-to-string (cadr plist))))
              lines)
        (setq plist (cddr plist)))
      (concat "(" (string-join (nreverse lines) "\n ") ")\n"))))

(defun agent-q-prompt--context-get (key)
  "Return KEY of `agent-q-approval-context', or nil when it is unbound."
  (and (boundp 'agent-q-approval-context)
       (plist-get agent-q-approval-context key)))

(defun agent-q-prompt--escape-raw-bytes (text)
  "TEXT with each raw byte written as an octal escape, such as \\351."
  (mapconcat (lambda (c) (if (>= c #x3fff80) (format "\\%o" (- c #x3fff00)) (string c)))
             (string-to-multibyte text) ""))

(defun agent-q--visible (text)
  "TEXT as shown to the user: hidden characters made visible, on one line.
Control, bidirectional formatting (U+061C, U+200E/F, U+202A-E,
U+2066-9), zero-width (U+200B-D, U+2060, U+FEFF), line and paragraph
separator (U+2028/9), C1 and DEL characters become escapes: \\n, \\t,
\\r, or \\uXXXX, as Emacs Lisp and JSON write them in a string.  The
rule is the module's (`agent-q--core-visible'), which also writes the
audit file.  Raw bytes become octal escapes; text properties are
dropped.  Everything agent-q shows of what a model or a client chose
\(arguments, file names, client names) goes through this."
  (let ((text (substring-no-properties (if (stringp text) text (format "%s" text)))))
    (condition-case nil
        (agent-q--core-visible text)
      (error (agent-q--core-visible (agent-q-prompt--escape-raw-bytes text))))))

(defun agent-q-prompt--show-call (tool-name args)
  "Show the whole call of TOOL-NAME with ARGS in a help buffer.
Each line shows hidden characters as escapes (see `agent-q--visible')."
  (with-help-window (get-buffer-create "*agent-q call*")
    (princ (format "Tool: %s\nSafety level: %s\n" (agent-q--visible tool-name)
                   (or (agent-q-prompt--context-get :safety-level) "unknown")))
    (when-let ((client (agent-q-prompt--context-get :client)))
      (princ (format "Client: %s\n" (agent-q--visible client))))
    (when-let ((reason (agent-q-prompt--context-get :reason)))
      (princ (format "Reason: %s\n" (agent-q--visible reason))))
    (princ "Arguments:\n")
    (princ (mapconcat #'agent-q--visible
                      (split-string (let ((pp-escape-newlines t))
                                      (agent-q-prompt--pp-plist args))
                                    "\n")
                      "\n"))))

;;;; Reading the answer

(defcustom agent-q-approval-idle-delay 1.0
  "Seconds Emacs must be idle before an asynchronous approval prompt shows.
A tool call that a client (an MCP client, gptel, llm.el) makes while
you type, or while the minibuffer is active, waits -- the mode line
counts it -- and its prompt appears once you have paused this long
outside the minibuffer, so that no key you meant for a buffer answers
it."
  :type 'number
  :group 'agent-q)

(defconst agent-q-prompt--settle-seconds 0.5
  "The pause in typing after which a prompt comes back after a stray key.
A confirmation (see `agent-q-prompt--confirm') also waits for it.")

(defconst agent-q-prompt--no-terminal-reason
  "agent-q cannot ask: Emacs has no terminal to ask the user on (it runs in batch mode, or as a daemon with no frame)"
  "Why a call that needs the user's answer is denied when there is nobody to ask.")

(defun agent-q-prompt--no-terminal-p ()
  "Non-nil when there is no terminal to read the user's answer from.
That is Emacs in batch mode, or a daemon with no client frame."
  (or noninteractive
      (and (daemonp)
           (equal (terminal-name (frame-terminal (selected-frame))) "initial_terminal"))))

(defun agent-q-prompt--read-key (prompt &optional settle)
  "Read the user's key in answer to PROMPT; nil when there is no terminal.
Only a key typed after PROMPT appeared answers it: what was typed
before and not yet read (type-ahead, `unread-command-events') is
discarded.  With SETTLE, first wait until no key has been typed for
SETTLE seconds, discarding the keys typed meanwhile, so that the rest
of a burst of typing cannot answer.

This is the only function through which the approval prompt and its
confirmations read input.  Tests answer prompts by rebinding it with
`cl-letf'; nothing a client sends reaches it."
  (unless (agent-q-prompt--no-terminal-p)
    (when settle
      (while (progn (discard-input) (not (sit-for settle t)))))
    (discard-input)
    (read-key prompt)))

(defun agent-q-prompt--confirm (question)
  "Ask QUESTION in a fresh prompt; non-nil when the user confirms with !.
The prompt appears once the typing has paused, and discards what was
typed before it, so the key that led here, and the keys typed with it,
cannot confirm: a second, deliberate key must.  \\[keyboard-quit] denies the call."
  (let ((key (agent-q-prompt--read-key
              (concat question "  Press ! to confirm, any other key to go back: ")
              agent-q-prompt--settle-seconds)))
    (when (eql key ?\C-g) (signal 'quit nil))
    (eql key ?!)))

(defun agent-q-prompt--prompt-columns ()
  "How many columns of a prompt the echo area can show at once."
  (let* ((window (minibuffer-window))
         (width (max 20 (1- (window-width window))))
         (height max-mini-window-height)
         (lines (if resize-mini-windows
                    (cond ((floatp height) (floor (* height (frame-height (window-frame window)))))
                          ((integerp height) height)
                          (t 1))
                  (window-height window))))
    (1- (* width (max 1 lines)))))

(defun agent-q-prompt--prompt (tool-name args level reason &optional complaint)
  "The approval prompt for TOOL-NAME with ARGS, at LEVEL, asked for REASON.
COMPLAINT, when non-nil, says why the prompt is shown again.  The
prompt is one line: every part a model or a client chose shows its
hidden characters as escapes (see `agent-q--visible').  The key list
comes last and always fits in the echo area
\(`agent-q-prompt--prompt-columns'): the arguments are cut to make room,
saying so, never the keys."
  (let* ((short (agent-q-prompt--shorten args))
         (printed (agent-q--visible (agent-q-prompt--print (car short))))
         (client (agent-q-prompt--context-get :client))
         (later (agent-q-prompt--context-get :async))
         (waiting (agent-q-prompt--context-get :waiting))
         (held (agent-q-prompt--context-get :held))
         (rule (agent-q-prompt--context-get :rule))
         (notes (delq nil (list (and waiting (> waiting 0) (format "%d more waiting" waiting))
                                (and held (format "held %ds until you paused" held)))))
         (head (format "%sagent-q%s: %srun %s [%s]%s "
                       (if complaint (concat complaint "  ") "")
                       (if notes (format " (%s)" (string-join notes "; ")) "")
                       (if client (format "%s wants to " (agent-q--visible client)) "")
                       (agent-q--visible tool-name)
                       (if level (string-remove-prefix ":" (format "%s" level)) "unknown")
                       (if reason (format " (%s)" (agent-q--visible reason)) "")))
         (tail (concat (agent-q--visible (agent-q-prompt--path-note args))
                       (if rule (format " [asked by the rule: %s]" (agent-q--visible rule)) "")))
         (always (agent-q-prompt--always-client))
         (keys (format "  (y)es (n)o (r)eason (e)dit (v)iew (a)lways%s (s)ave rule%s: "
                       (if always (format " for %s" (agent-q--visible always)) "")
                       (if later " (l)ater" "")))
         (shortened " [long arguments shortened; v shows all]")
         (columns (agent-q-prompt--prompt-columns))
         (room (- columns (string-width head) (string-width tail) (string-width keys)))
         (cut (or (cdr short) (> (string-width printed) room)))
         (args-text (if (not cut)
                        printed
                      (truncate-string-to-width
                       printed (max 3 (- room (string-width shortened))) nil nil "...")))
         (text (concat head args-text tail (if cut shortened ""))))
    ;; A very long head or file note: cut it too, so that the keys stay in view.
    (when (> (string-width text) (- columns (string-width keys)))
      (setq text (truncate-string-to-width
                  text (max 10 (- columns (string-width keys))) nil nil "...")))
    (concat text keys)))

(defun agent-q-approve-in-minibuffer (tool-name args)
  "Ask the user in the minibuffer whether to run TOOL-NAME with ARGS.
This is the default `agent-q-approval-function'.  TOOL-NAME is a
string, ARGS a plist.  The prompt shows the tool, its safety level
\(from `agent-q-approval-context') and the arguments, long strings
shortened with a note.  Keys:

  y  approve                      -> `:approved'
  n  deny                         -> `:denied'
  r  deny with a reason, typed    -> (:denied REASON)
  e  edit the arguments           -> (:modified NEW-ARGS)
  v  view the whole call, then ask again
  a  approve, and approve TOOL-NAME for the rest of the session,
     for calls from the same client only (confirmed with !; a
     protected call, :protected in the context, is approved alone,
     without confirmation: it is asked about every time)
  s  save an approval rule about TOOL-NAME, confirmed with ! (see
     `agent-q-rules-save-from-prompt'); when it decides this call,
     that is the answer -> (:rule :approved TEXT) or (:rule :denied TEXT)
  l  later: leave it pending (asynchronous calls only, see
     `agent-q-pending')         -> `:later'
  \\<global-map>\\[keyboard-quit]  deny                     -> `:denied'

Only keys typed after the prompt appeared answer it: type-ahead is
discarded (see `agent-q-prompt--read-key').  A key that is not a
choice beeps, says which keys answer, and the prompt comes back once
the typing has paused.  \"a\" and \"s\" ask for a second, deliberate
key in a fresh prompt (see `agent-q-prompt--confirm').  The prompt is
one line, keys last: arguments, file names and the client's name
show hidden characters as escapes (see `agent-q--visible').  When
there is no terminal to ask on (batch mode, a daemon with no frame),
the call is denied at once, saying so.

The \"e\" buffer shows ARGS pretty-printed as a plist:
\\<agent-q-prompt-arguments-mode-map>\\[agent-q-prompt-arguments-accept] \
accepts the edit after validating it with
`agent-q-validate-arguments' (an invalid edit is reported and the
buffer stays), \\[agent-q-prompt-arguments-cancel] cancels the edit and
returns to this prompt.

The executor calls this only for calls that need approval (dangerous
ones, those at the levels in `agent-q-confirm-safety-levels', and
those whose tool's guard gave a reason) and that no rule of
`agent-q-approval-rules' decided, and for other calls that an ask
rule asks about (:optional and :rule in the context), so it always
asks, with two
exceptions, neither of which applies when the context has a :reason
\(a guard asking to read a sensitive or outside file, which is always
asked) or a :rule (an approval rule that says to ask; the prompt names
it):

- a tool the user approved for the session with \"a\" (the approval
  belongs to that registration of the tool, its :tool-id, and to the
  client that called it, the context's :client -- for a terminal
  agent's own tool call, to the agent, every session of it: see
  `agent-q-gate-call-agent');
- a tool whose own review is the approval (:review in the context,
  which the executor sets only for the built-in handler of
  \"propose_file_edit\", never for a tool that merely has its name):
  its per-hunk review applies nothing unless the user accepts hunks.

A :path argument is never shortened, and the prompt names the file it
really designates (resolving links)."
  (let ((level (agent-q-prompt--context-get :safety-level))
        (reason (agent-q-prompt--context-get :reason))
        (key (agent-q-prompt--session-key)))
    (cond
     ((and (not reason)
           (not (agent-q-prompt--context-get :protected))
           ;; An ask rule asks; a line that no command or domain rule covers
           ;; (:uncovered) is asked as without rules.
           (or (not (agent-q-prompt--context-get :rule))
               (agent-q-prompt--context-get :uncovered))
           (or (agent-q-prompt--context-get :review)
               (and key (member key agent-q-prompt--session-approved))))
      :approved)
     (t
      (condition-case nil
          (agent-q-prompt--ask tool-name args level reason)
        (quit :denied))))))

(defun agent-q-prompt--ask (tool-name args level reason)
  "Prompt loop of `agent-q-approve-in-minibuffer' for TOOL-NAME and ARGS.
LEVEL is the safety level, REASON the context's reason or nil.
Every key is read with `agent-q-prompt--read-key', which discards what
was typed before the prompt appeared and reads nothing when there is
no terminal (the call is then denied at once).  A key that is not a
choice beeps and says which keys answer, and the prompt comes back
once the typing has paused; \"a\" and \"s\" must be confirmed (see
`agent-q-prompt--confirm')."
  (let ((answer nil)
        (complaint nil)
        (settle nil))
    (while (not answer)
      (let* ((later (agent-q-prompt--context-get :async))
             (choices (if later '(?y ?n ?r ?e ?v ?a ?s ?l) '(?y ?n ?r ?e ?v ?a ?s)))
             (key (agent-q-prompt--read-key
                   (agent-q-prompt--prompt tool-name args level reason complaint)
                   settle)))
        (setq complaint nil settle nil)
        (cond
         ((null key)
          (setq answer (list :denied agent-q-prompt--no-terminal-reason))
          (message "agent-q: %s denied: %s" (agent-q--visible tool-name)
                   agent-q-prompt--no-terminal-reason))
         ((eql key ?\C-g) (signal 'quit nil))
         ((not (memq key choices))
          (ding)
          (setq complaint (format "%s is not an answer: press %s, or C-g to deny."
                                  (agent-q--visible (single-key-description key))
                                  (mapconcat #'string choices " "))
                settle agent-q-prompt--settle-seconds)
          (message "agent-q: %s" complaint))
         (t
          (pcase key
            (?y (setq answer :approved))
            (?n (setq answer :denied))
            (?a (cond
                 ((agent-q-prompt--context-get :protected)
                  ;; Only the user approves a protected call, each time.
                  (message "agent-q: approved this %s call only: it writes a protected file, which is asked about every time"
                           (agent-q--visible tool-name))
                  (setq answer :approved))
                 ((agent-q-prompt--confirm
                   (format "Approve %s%s for the rest of this session?"
                           (agent-q--visible tool-name)
                           (let ((client (agent-q-prompt--always-client)))
                             (cond ((agent-q-prompt--gate-agent)
                                    (format " for %s, every session of it"
                                            (agent-q--visible client)))
                                   (client (format " for %s" (agent-q--visible client)))
                                   (t "")))))
                  (let ((key (agent-q-prompt--session-key)))
                    (when key (cl-pushnew key agent-q-prompt--session-approved :test #'equal)))
                  (setq answer :approved))))
            (?r (let ((text (read-string (format "Reason for denying %s: "
                                                 (agent-q--visible tool-name)))))
                  (setq answer (if (string-empty-p (string-trim text))
                                   :denied
                                 (list :denied text)))))
            (?v (agent-q-prompt--show-call tool-name args))
            (?s (when (agent-q-prompt--confirm
                       (format "Save an approval rule about %s?" (agent-q--visible tool-name)))
                  (setq answer (agent-q-rules-save-from-prompt
                                tool-name args (and (boundp 'agent-q-approval-context)
                                                    agent-q-approval-context)))))
            (?l (setq answer :later))
            (?e (when-let ((new (agent-q-prompt--edit-arguments tool-name args)))
                  (setq answer (list :modified new)))))))))
    answer))

;;;; Editing arguments

(defvar-local agent-q-prompt--arguments-tool nil
  "Tool whose arguments the current buffer edits.")

(defvar-local agent-q-prompt--arguments-result nil
  "Outcome of the arguments edit: nil, (:ok PLIST) or (:cancel).")

(defvar agent-q-prompt-arguments-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "C-c C-c") #'agent-q-prompt-arguments-accept)
    (define-key map (kbd "C-c C-k") #'agent-q-prompt-arguments-cancel)
    map)
  "Keymap of `agent-q-prompt-arguments-mode'.")

(define-derived-mode agent-q-prompt-arguments-mode lisp-data-mode "agent-q-args"
  "Mode for editing the arguments of a tool call before approving it.
\\<agent-q-prompt-arguments-mode-map>\\[agent-q-prompt-arguments-accept] \
accepts the edit, \\[agent-q-prompt-arguments-cancel] cancels it.")

(defun agent-q-prompt--read-plist (text)
  "Read TEXT as a plist with keyword keys.
Return (:ok PLIST) or (:error MESSAGE)."
  (condition-case err
      (let* ((read (read-from-string text))
             (plist (car read)))
        (cond
         ((string-match-p "[^ \t\n]" (substring text (cdr read)))
          (list :error "Extra text after the plist"))
         ((not (and (listp plist) (cl-evenp (length plist))))
          (list :error "The arguments must be a plist (:key value ...)"))
         ((cl-loop for (k _v) on plist by #'cddr thereis (not (keywordp k)))
          (list :error "Every key of the plist must be a keyword"))
         (t (list :ok plist))))
    (error (list :error (format "Cannot read the arguments: %s"
                                (error-message-string err))))))

(defun agent-q-prompt-arguments-accept ()
  "Accept the edited arguments if they read and validate."
  (interactive)
  (let ((parsed (agent-q-prompt--read-plist
                 (buffer-substring-no-properties (point-min) (point-max)))))
    (if (eq (car parsed) :error)
        (message "%s" (cadr parsed))
      (let ((problem (and (fboundp 'agent-q-validate-arguments)
                          ;; A tool of another registry (the gate's shell_command):
                          ;; the executor validates the edit against its own.
                          (agent-q-get-tool agent-q-prompt--arguments-tool)
                          (agent-q-validate-arguments agent-q-prompt--arguments-tool
                                                      (cadr parsed)))))
        (if problem
            (message "%s" problem)
          (setq agent-q-prompt--arguments-result parsed)
          (exit-recursive-edit))))))

(defun agent-q-prompt-arguments-cancel ()
  "Cancel the edit of the arguments and return to the approval prompt."
  (interactive)
  (setq agent-q-prompt--arguments-result '(:cancel))
  (exit-recursive-edit))

(defun agent-q-prompt--edit-arguments (tool-name args)
  "Let the user edit ARGS of TOOL-NAME; return the new plist or nil if cancelled.
The buffer shows hidden characters in strings as escapes, like the prompt."
  (let ((buffer (get-buffer-create (format "*agent-q arguments: %s*" tool-name))))
    (unwind-protect
        (progn
          (with-current-buffer buffer
            (erase-buffer)
            (agent-q-prompt-arguments-mode)
            ;; Hidden characters in strings as escapes, which read back as
            ;; the same characters (see `agent-q--visible').
            (insert (mapconcat #'agent-q--visible
                               (split-string (let ((pp-escape-newlines t))
                                               (agent-q-prompt--pp-plist args))
                                             "\n")
                               "\n"))
            (goto-char (point-min))
            (setq agent-q-prompt--arguments-tool tool-name
                  agent-q-prompt--arguments-result nil))
          (save-window-excursion
            (pop-to-buffer buffer)
            (message "Edit the arguments of %s: C-c C-c to accept, C-c C-k to cancel"
                     tool-name)
            (condition-case nil
                (recursive-edit)
              (quit nil)))
          (let ((result (and (buffer-live-p buffer)
                             (buffer-local-value 'agent-q-prompt--arguments-result buffer))))
            (and (eq (car result) :ok) (cadr result))))
      (when (buffer-live-p buffer)
        (kill-buffer buffer)))))

(provide 'agent-q-prompt)

;;; agent-q-prompt.el ends here
