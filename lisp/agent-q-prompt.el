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
;; reads a single deliberate key (y, n, r, e, v, a, s, ? for help; C-g denies), never a
;; typed-ahead one.  `e' edits the arguments in a buffer before approving.
;;
;; It approves "propose_file_edit" without asking, because that tool's
;; approval is the hunk review (agent-q-review.el).

;;; Code:

(require 'cl-lib)
(require 'pp)
(require 'subr-x)
(require 'tabulated-list)

;;;; Module and agent-q.el functions (loaded by agent-q.el)

(declare-function agent-q-validate-arguments "agent-q" (tool-name args &optional registry))
(declare-function agent-q-get-tool "agent-q" (name &optional registry))
(declare-function agent-q--wait-for "agent-q" (predicate))
(declare-function agent-q-when-cancelled "agent-q-async" (function))
(declare-function agent-q-rules-save-from-prompt "agent-q-rules" (tool-name args context))
(declare-function agent-q--core-visible "agent-q-core" (text))
(declare-function agent-q--core-command-decide "agent-q-core" (line deny ask allow))
(declare-function agent-q--core-fetch-decide "agent-q-core" (url deny ask allow))
(declare-function agent-q--core-command-grant "agent-q-core" (line))
(declare-function agent-q--core-fetch-suggest "agent-q-core" (url))
(declare-function agent-q-gate-call-info "agent-q-gate" (context))
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

(defconst agent-q-prompt--help-buffer "*agent-q prompt help*"
  "The buffer in which the prompt's ? says what each key does.")

(defconst agent-q-prompt--call-buffer "*agent-q call*"
  "The buffer in which the prompt's v shows the whole call.")

(defvar agent-q-prompt--session-approved nil
  "What the user approved with \"a\" for the rest of a session: the grants.
Each entry is a plist.  :tool-id names one registration of one tool
in one registry (a tool replaced or re-registered with another handler
has a new id, so it is asked about again); :tool is its name, :time
when it was granted.

For a client's call, :origin is the approval context's :origin
\(`emacs' or `mcp', as the driver that received the call says), so
that no MCP client, whatever it calls itself, holds what was approved
for a bridge inside Emacs, and :client its :client (such as \"gptel\"
or \"claude-code 2.1.0 (MCP)\"), or nil for calls that name no client:
the grant covers that tool for that client.

For a terminal agent's own call (see `agent-q-gate-call-agent'),
:agent and :session name the agent and its session: the grant covers
no other session and no other agent.  A shell command's grant holds
:command, the command rules that the module proposes for the line
\(`agent-q--core-command-grant', one for each part, as \"s\" proposes
one), and covers a later command only when the module finds every
part of it covered by them
\(`agent-q--core-command-decide'); a fetch's holds :domain, its host,
judged by `agent-q--core-fetch-decide'.

`agent-q-grants' lists them and withdraws them;
`agent-q-forget-session-rules' forgets them all.")

(defun agent-q-prompt--gate-agent ()
  "The terminal agent whose own tool call is being approved, or nil."
  (and (boundp 'agent-q-approval-context)
       (fboundp 'agent-q-gate-call-agent)
       (agent-q-gate-call-agent agent-q-approval-context)))

(defun agent-q-prompt--gate-info ()
  "What the terminal agent said of its call being approved, or nil.
See `agent-q-gate-call-info'."
  (and (boundp 'agent-q-approval-context)
       (fboundp 'agent-q-gate-call-info)
       (agent-q-gate-call-info agent-q-approval-context)))

(defconst agent-q-prompt--short-session-chars 8
  "How many characters of an agent's session id the prompt shows.")

(defun agent-q-prompt--short-session (session)
  "The short form of the agent's SESSION id, for the prompt."
  (and (stringp session)
       (agent-q--visible (truncate-string-to-width
                          session agent-q-prompt--short-session-chars))))

(defun agent-q-prompt--agent-label (info)
  "How the prompt names the agent of the call INFO describes.
INFO is a plist of `agent-q-gate-call-info'."
  (let ((session (agent-q-prompt--short-session (plist-get info :session))))
    (format "%s%s" (plist-get info :agent)
            (if session (format " (session %s)" session) ""))))

(defun agent-q-prompt--always-client ()
  "Whom \"a\" approves the call's tool for: the context's client, or its agent."
  (let ((agent (agent-q-prompt--gate-agent)))
    (if agent
        (agent-q-rules-agent-client agent)
      (agent-q-prompt--context-get :client))))

(defun agent-q-prompt--command-rules (line)
  "The command rules that cover every part of the shell command LINE, or nil.
The module proposes them (`agent-q--core-command-grant'), one for each
part, as the prompt's \"s\" proposes one; nil when some part cannot be
covered by a plain rule (a substitution, a redirection...)."
  (let ((rules (ignore-errors (agent-q--core-command-grant line))))
    (and (consp rules) (cl-every #'stringp rules) rules)))

(defun agent-q-prompt--covers-command-p (rules line)
  "Non-nil when every part of LINE is covered by the command RULES.
The module judges it (`agent-q--core-command-decide')."
  (eq (car-safe (ignore-errors (agent-q--core-command-decide line nil nil rules))) 'allow))

(defun agent-q-prompt--covers-domain-p (domain url)
  "Non-nil when the fetch of URL is covered by the DOMAIN rule.
The module judges it (`agent-q--core-fetch-decide')."
  (eq (car-safe (ignore-errors (agent-q--core-fetch-decide url nil nil (list domain)))) 'allow))

(defun agent-q-prompt--grant-proposal (tool-name args)
  "The grant that \"a\" proposes for TOOL-NAME's call with ARGS, or a reason.
Return (GRANT . WORDS), WORDS describing what GRANT covers; or (nil .
WHY) when the call can be approved only alone.  The call is the one
of `agent-q-approval-context'."
  (let* ((id (agent-q-prompt--context-get :tool-id))
         (agent (agent-q-prompt--gate-agent))
         (info (agent-q-prompt--gate-info))
         (base (list :tool-id id :tool tool-name :time (current-time)))
         (command (and (listp args) (plist-get args :command)))
         (url (and (listp args) (plist-get args :url))))
    (cond
     ((null id) (cons nil "the tool has no registration to remember"))
     ((agent-q-prompt--context-get :protected)
      (cons nil "it writes a protected file, which is asked about every time"))
     ((not agent)
      (let ((client (agent-q-prompt--context-get :client)))
        (cons (append base (list :origin (or (agent-q-prompt--context-get :origin) 'emacs)
                                 :client client))
              (format "%s%s" (agent-q--visible tool-name)
                      (if client (format " for %s" (agent-q--visible client)) "")))))
     ((stringp command)
      (let ((rules (agent-q-prompt--command-rules command)))
        (if (null rules)
            (cons nil "no plain command rule covers every part of this command")
          (cons (append base (list :agent agent :session (plist-get info :session)
                                   :command rules))
                (format "%s for %s"
                        (mapconcat (lambda (r) (format "`%s`" (agent-q--visible r))) rules ", ")
                        (agent-q-prompt--agent-label (or info (list :agent agent))))))))
     ((stringp url)
      (let ((domain (ignore-errors (agent-q--core-fetch-suggest url))))
        (if (not (stringp domain))
            (cons nil "the host of this URL cannot be told for certain")
          (cons (append base (list :agent agent :session (plist-get info :session)
                                   :domain domain))
                (format "fetches from %s for %s" (agent-q--visible domain)
                        (agent-q-prompt--agent-label (or info (list :agent agent))))))))
     (t
      (cons (append base (list :agent agent :session (plist-get info :session)))
            (format "%s for %s" (agent-q--visible tool-name)
                    (agent-q-prompt--agent-label (or info (list :agent agent)))))))))

(defun agent-q-prompt--grant-covers-p (grant args)
  "Non-nil when GRANT covers the call with ARGS of `agent-q-approval-context'.
Whether a command or a URL is covered, the module decides, as it does
for the approval rules."
  (and (equal (plist-get grant :tool-id) (agent-q-prompt--context-get :tool-id))
       (if (plist-get grant :agent)
           (let ((info (agent-q-prompt--gate-info)))
             (and (equal (plist-get grant :agent) (agent-q-prompt--gate-agent))
                  info
                  (equal (plist-get grant :session) (plist-get info :session))
                  (cond
                   ((plist-get grant :command)
                    (let ((line (and (listp args) (plist-get args :command))))
                      (and (stringp line)
                           (agent-q-prompt--covers-command-p (plist-get grant :command) line))))
                   ((plist-get grant :domain)
                    (let ((url (and (listp args) (plist-get args :url))))
                      (and (stringp url)
                           (agent-q-prompt--covers-domain-p (plist-get grant :domain) url))))
                   (t t))))
         (and (not (agent-q-prompt--gate-agent))
              (equal (plist-get grant :origin)
                     (or (agent-q-prompt--context-get :origin) 'emacs))
              (equal (plist-get grant :client) (agent-q-prompt--context-get :client))))))

(defun agent-q-prompt--granted (args)
  "The grant of \"a\" that covers the call with ARGS being approved, or nil."
  (cl-find-if (lambda (grant) (agent-q-prompt--grant-covers-p grant args))
              agent-q-prompt--session-approved))

(defun agent-q-prompt-unasked-p (tool-name args context)
  "Non-nil when the prompt approves TOOL-NAME's call with ARGS without asking.
CONTEXT is the call's `agent-q-approval-context'.  See
`agent-q-approve-in-minibuffer'."
  (ignore tool-name)
  (let ((agent-q-approval-context context))
    (and (not (plist-get context :reason))
         (not (plist-get context :protected))
         ;; An ask rule asks; a line that no command or domain rule covers
         ;; (:uncovered) is asked as without rules.
         (or (not (plist-get context :rule))
             (plist-get context :uncovered))
         (or (plist-get context :review)
             (and (agent-q-prompt--granted args) t)))))

(defun agent-q-prompt-forget-grants ()
  "Forget every grant of the prompt's \"a\"."
  (setq agent-q-prompt--session-approved nil))

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

(defvar agent-q-prompt-deadline-function nil
  "Function telling when the call being asked must be answered, or nil.
It takes no argument and returns a `float-time', or nil for no limit.
The terminal agents' gate sets it: an agent waits for its hook only so
long.")

(defun agent-q-prompt--time-left ()
  "Seconds left to answer the call being asked, or nil when unlimited."
  (let ((deadline (and agent-q-prompt-deadline-function
                       (funcall agent-q-prompt-deadline-function))))
    (and deadline (max 0 (round (- deadline (float-time)))))))

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
  (with-help-window (get-buffer-create agent-q-prompt--call-buffer)
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

(defun agent-q-prompt--notes ()
  "The notes of the prompt, after \"agent-q\": a list of strings.
How long the agent still waits (`agent-q-prompt--time-left'), what else
waits, how long this call did; from `agent-q-approval-context'."
  (let ((waiting (agent-q-prompt--context-get :waiting))
        (held (agent-q-prompt--context-get :held))
        (deferred (agent-q-prompt--context-get :deferred)))
    (delq nil (list (let ((left (agent-q-prompt--time-left)))
                      (and left (format "the agent waits %s more"
                                        (format-seconds "%m:%02s" left))))
                    (and waiting (> waiting 0) (format "%d more waiting" waiting))
                    (cond (deferred (format "you deferred it with l %ds ago" deferred))
                          (held (format "held %ds until you paused" held)))))))

(defun agent-q-prompt--gate-main-argument (args)
  "The argument of a terminal agent's call, for the prompt: a string, or nil.
The command of a shell command, the URL of a fetch, the file of a
read (ARGS' :command, :url or :path)."
  (and (listp args)
       (cl-loop for key in '(:command :url :path)
                for value = (plist-get args key)
                when (stringp value) return value)))

(defun agent-q-prompt--parts (tool-name args level reason)
  "The parts of the prompt for TOOL-NAME's call with ARGS, at LEVEL, for REASON.
A plist: :who (who asks, or nil), :what (the words before the
arguments), :printed (the arguments as shown, one line), :cut (non-nil
when they were shortened) and :tail (what follows them: the folder,
the file, the rule that asks).  Every part a model or a client chose
shows its hidden characters as escapes (see `agent-q--visible').  A
terminal agent's own call shows the agent and its session's short
form, the agent's own description of the call, the command (or URL,
or file) and the folder it runs in: `v' shows all its arguments."
  (let* ((info (agent-q-prompt--gate-info))
         (main (and info (agent-q-prompt--gate-main-argument args)))
         (level-text (if level (string-remove-prefix ":" (format "%s" level)) "unknown"))
         (reason-text (if reason (format " (%s)" (agent-q--visible reason)) ""))
         (rule (agent-q-prompt--context-get :rule))
         (rule-text (cond ((not rule) "")
                          ;; No rule asks: asked because none allows it.
                          ((agent-q-prompt--context-get :uncovered)
                           (format " [asked: %s]" (agent-q--visible rule)))
                          (t (format " [asked by the rule: %s]" (agent-q--visible rule))))))
    (if main
        (let* ((description (plist-get info :description))
               (directory (and (listp args) (plist-get args :directory))))
          (list :who (agent-q-prompt--agent-label info)
                :what (format "%s [%s]%s: %s"
                              (cond ((plist-get args :command) "run a command")
                                    ((plist-get args :url) "fetch")
                                    (t (agent-q--visible tool-name)))
                              level-text reason-text
                              (if description
                                  (format "%s: " (agent-q--visible description))
                                ""))
                :printed (agent-q--visible main)
                :cut nil
                :tail (concat (if (stringp directory)
                                  (format " [in %s]" (agent-q--visible
                                                      (abbreviate-file-name directory)))
                                "")
                              (if (plist-get args :command)
                                  ""
                                (agent-q--visible (agent-q-prompt--path-note args)))
                              rule-text)))
      (let ((short (agent-q-prompt--shorten args))
            (client (agent-q-prompt--context-get :client)))
        (list :who (and client (agent-q--visible client))
              :what (format "run %s [%s]%s " (agent-q--visible tool-name) level-text reason-text)
              :printed (agent-q--visible (agent-q-prompt--print (car short)))
              :cut (cdr short)
              :tail (concat (agent-q--visible (agent-q-prompt--path-note args)) rule-text))))))

(defun agent-q-prompt--keys-text ()
  "The key list of the prompt for the call of `agent-q-approval-context'."
  (let ((always (and (not (agent-q-prompt--gate-agent)) (agent-q-prompt--always-client))))
    (format "  (y)es (n)o (r)eason (e)dit (v)iew (a)lways%s (s)ave rule%s (?)help: "
            (if always (format " for %s" (agent-q--visible always)) "")
            (if (agent-q-prompt--context-get :async) " (l)ater" ""))))

(defun agent-q-prompt--prompt (tool-name args level reason &optional complaint)
  "The approval prompt for TOOL-NAME with ARGS, at LEVEL, asked for REASON.
COMPLAINT, when non-nil, says why the prompt is shown again.  The
prompt is one line, made of `agent-q-prompt--notes' and
`agent-q-prompt--parts'.  The key list comes last and always fits in
the echo area (`agent-q-prompt--prompt-columns'): the arguments are
cut to make room, saying so, never the keys."
  (let* ((parts (agent-q-prompt--parts tool-name args level reason))
         (notes (agent-q-prompt--notes))
         (who (plist-get parts :who))
         (printed (plist-get parts :printed))
         (head (format "%sagent-q%s: %s%s"
                       (if complaint (concat complaint "  ") "")
                       (if notes (format " (%s)" (string-join notes "; ")) "")
                       (if who (format "%s wants to " who) "")
                       (plist-get parts :what)))
         (tail (plist-get parts :tail))
         (keys (agent-q-prompt--keys-text))
         (shortened " [long arguments shortened; v shows all]")
         (columns (agent-q-prompt--prompt-columns))
         (room (- columns (string-width head) (string-width tail) (string-width keys)))
         (cut (or (plist-get parts :cut) (> (string-width printed) room)))
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

(defun agent-q-prompt--help-lines (tool-name args)
  "One line for each key of the prompt about TOOL-NAME's call with ARGS.
A list of strings."
  (let* ((agent (agent-q-prompt--gate-agent))
         (who (if agent (format "%s (the agent)" agent) "the model"))
         (grant (agent-q-prompt--grant-proposal tool-name args)))
    (delq nil
          (list
           (format "y    approve this call: %s"
                   (if agent (format "%s runs it itself" agent) "it runs"))
           (format "n    deny it: nothing runs, and %s is told you denied it" who)
           (format "r    deny it with a reason you type, which %s reads" who)
           (if agent
               "e    edit the call (its command) first: what you leave is what the agent runs"
             "e    edit the arguments first: the call runs with your edit")
           "v    view the whole call, every argument, in a window; then answer"
           (if (car grant)
               (format "a    approve it, and from now on, unasked, %s (press ! to confirm; M-x agent-q-grants takes it back)"
                       (cdr grant))
             (format "a    approve this call only (%s)" (cdr grant)))
           (format "s    save an approval rule about %s (press ! to confirm), for this session or for good"
                   (agent-q--visible tool-name))
           (and (agent-q-prompt--context-get :async)
                "l    later: leave it waiting, listed by M-x agent-q-pending, and answer it from there")
           "C-g  deny it, as n does"
           "?    this help"))))

(defun agent-q-prompt--show-help (tool-name args)
  "Show a one-line help for each key of the prompt.
The prompt is about TOOL-NAME's call with ARGS."
  (with-help-window (get-buffer-create agent-q-prompt--help-buffer)
    (princ (format "The keys that answer agent-q's prompt about %s:\n\n"
                   (agent-q--visible tool-name)))
    (princ (mapconcat #'identity (agent-q-prompt--help-lines tool-name args) "\n"))
    (princ "\n\nOnly a key typed after the prompt appeared answers it.\n")))

(defun agent-q-prompt--close-windows ()
  "Close the windows of the prompt's help and of its view of a call.
Called when a prompt ends, so that neither stays on screen with the
words of an earlier call while the next one is asked."
  ;; Quitting one may bring back the other in the window it reused: again,
  ;; a bounded number of times.
  (dotimes (_ 3)
    (dolist (name (list agent-q-prompt--call-buffer agent-q-prompt--help-buffer))
      (let ((buffer (get-buffer name)))
        (when buffer
          (dolist (window (get-buffer-window-list buffer nil t))
            (ignore-errors (quit-window nil window))))))))

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
  a  approve, and approve such calls unasked for the rest of the
     session (confirmed with !): TOOL-NAME for the same client only;
     for a terminal agent's own call, for that session of the agent
     only, and a shell command's or a fetch's grant only as narrow
     as the call (see `agent-q-prompt--session-approved').  A call
     that no grant can cover (a protected call, :protected in the
     context; a command no plain rule covers) is approved alone,
     without confirmation: it is asked about every time
  ?  a one-line help for each key (also the help character), then
     ask again
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
show hidden characters as escapes (see `agent-q--visible').  A
terminal agent's own call shows the agent's description of it, the
command and its folder (see `agent-q-prompt--parts').  The windows
that v and ? open close when the prompt ends.  When
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

- a call that a grant of \"a\" covers (see
  `agent-q-prompt--session-approved': it belongs to that registration
  of the tool, its :tool-id, and to the client that called it, the
  context's :client -- for a terminal agent's own tool call, to that
  session of the agent, see `agent-q-gate-call-agent'); `agent-q-grants'
  lists them and withdraws them;
- a tool whose own review is the approval (:review in the context,
  which the executor sets only for a tool registered with :approval
  :review or :review-or-rule, such as \"propose_file_edit\", never
  for a tool that merely has its name): its per-hunk review applies
  nothing unless the user accepts hunks.

The answer for a tool approved with \"a\" is (:granted GRANT), which
the audit records as such (decision \"granted\").

A :path argument is never shortened, and the prompt names the file it
really designates (resolving links)."
  (let ((level (agent-q-prompt--context-get :safety-level))
        (reason (agent-q-prompt--context-get :reason)))
    (cond
     ((agent-q-prompt-unasked-p tool-name args
                                (and (boundp 'agent-q-approval-context)
                                     agent-q-approval-context))
      (if (agent-q-prompt--context-get :review)
          :approved
        ;; The audit tells a standing grant from the user's answer now.
        (list :granted
              (format "\"a\" for %s%s, this Emacs session"
                      (agent-q--visible tool-name)
                      (let ((client (agent-q-prompt--always-client)))
                        (if client (concat " from " (agent-q--visible client)) ""))))))
     (t
      (condition-case nil
          (agent-q-prompt--ask tool-name args level reason)
        (quit :denied))))))

(defun agent-q-prompt--with-time-left (prompt read)
  "Call READ; while it waits, show PROMPT's text anew every second.
PROMPT is a function returning the prompt; only when the call being
asked has a deadline (see `agent-q-prompt-deadline-function'), so that
the time left it shows counts down."
  (if (not (agent-q-prompt--time-left))
      (funcall read)
    (let ((timer (run-at-time
                  1 1 (lambda ()
                        (let ((message-log-max nil))
                          (message "%s" (funcall prompt)))))))
      (unwind-protect (funcall read)
        (cancel-timer timer)))))

(defun agent-q-prompt--ask (tool-name args level reason)
  "Prompt loop of `agent-q-approve-in-minibuffer' for TOOL-NAME and ARGS.
LEVEL is the safety level, REASON the context's reason or nil.
Every key is read with `agent-q-prompt--read-key', which discards what
was typed before the prompt appeared and reads nothing when there is
no terminal (the call is then denied at once).  A key that is not a
choice beeps and says which keys answer, and the prompt comes back
once the typing has paused; \"a\" and \"s\" must be confirmed (see
`agent-q-prompt--confirm')."
  (unwind-protect
      (agent-q-prompt--ask-loop tool-name args level reason)
    (agent-q-prompt--close-windows)))

(defvar agent-q-prompt--args nil
  "The arguments of the call whose prompt is being answered.")

(defun agent-q-prompt--always (tool-name)
  "The answer of \"a\" to the prompt about TOOL-NAME's call; nil to ask again.
The grant that \"a\" proposes (`agent-q-prompt--grant-proposal') is
confirmed with ! and remembered in `agent-q-prompt--session-approved';
a call that no grant can cover is approved alone, saying why."
  (let* ((args (and (boundp 'agent-q-prompt--args) agent-q-prompt--args))
         (proposal (agent-q-prompt--grant-proposal tool-name args))
         (grant (car proposal)))
    (cond
     ((null grant)
      ;; Only the user approves such a call, each time.
      (message "agent-q: approved this %s call only: %s"
               (agent-q--visible tool-name) (cdr proposal))
      :approved)
     ((agent-q-prompt--confirm
       (if (plist-get grant :agent)
           (format "Approve %s, unasked, for the rest of this session?" (cdr proposal))
         (format "Approve %s for the rest of this session?" (cdr proposal))))
      (cl-pushnew grant agent-q-prompt--session-approved
                  :test (lambda (a b) (equal (cl-remove-if (lambda (x) (memq x '(:time)))
                                                           a)
                                             (cl-remove-if (lambda (x) (memq x '(:time)))
                                                           b))))
      :approved))))

(defun agent-q-prompt--ask-loop (tool-name args level reason)
  "The loop of `agent-q-prompt--ask' for TOOL-NAME, ARGS, LEVEL and REASON."
  (let ((answer nil)
        (complaint nil)
        (settle nil)
        (agent-q-prompt--args args))
    (while (not answer)
      (let* ((later (agent-q-prompt--context-get :async))
             (choices (if later '(?y ?n ?r ?e ?v ?a ?s ?l) '(?y ?n ?r ?e ?v ?a ?s)))
             (shown complaint)
             (key (agent-q-prompt--with-time-left
                   (lambda () (agent-q-prompt--prompt tool-name args level reason shown))
                   (lambda ()
                     (agent-q-prompt--read-key
                      (agent-q-prompt--prompt tool-name args level reason complaint)
                      settle)))))
        (setq complaint nil settle nil)
        (cond
         ((null key)
          (setq answer (list :denied agent-q-prompt--no-terminal-reason))
          (message "agent-q: %s denied: %s" (agent-q--visible tool-name)
                   agent-q-prompt--no-terminal-reason))
         ((eql key ?\C-g) (signal 'quit nil))
         ((memq key '(?? ?\C-h))
          (agent-q-prompt--show-help tool-name args))
         ((not (memq key choices))
          (ding)
          (setq complaint (format "%s is not an answer: press %s, ? for help, or C-g to deny."
                                  (agent-q--visible (single-key-description key))
                                  (mapconcat #'string choices " "))
                settle agent-q-prompt--settle-seconds)
          (message "agent-q: %s" complaint))
         (t
          (pcase key
            (?y (setq answer :approved))
            (?n (setq answer :denied))
            (?a (setq answer (agent-q-prompt--always tool-name)))
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

;;;; Grants: what "a" approved, listed and withdrawn

(defvar agent-q-grants-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map "d" #'agent-q-grants-withdraw)
    (define-key map "D" #'agent-q-grants-withdraw-all)
    (define-key map "g" #'agent-q-grants-refresh)
    map)
  "Keymap of `agent-q-grants-mode'.")

(define-derived-mode agent-q-grants-mode tabulated-list-mode "agent-q-grants"
  "What the approval prompt's \"a\" approved without asking, for now.
The trusts of `agent-q-trust-agent' are listed too.
\\<agent-q-grants-mode-map>\\[agent-q-grants-withdraw] withdraws the grant \
at point, or ends the trust:
the calls it covered are asked about again,
\\[agent-q-grants-withdraw-all] withdraws them all, \\[agent-q-grants-refresh] \
refreshes."
  (setq tabulated-list-format
        [("For" 30 t) ("Tool" 14 t) ("Approved unasked" 40 nil) ("Since" 0 nil)])
  (setq tabulated-list-padding 1)
  (tabulated-list-init-header))

(defun agent-q-prompt--grant-who (grant)
  "Whom GRANT is for, in the grants list."
  (if (plist-get grant :agent)
      (agent-q-prompt--agent-label grant)
    (agent-q--visible (or (plist-get grant :client)
                          (format "calls from %s that name no client"
                                  (if (eq (plist-get grant :origin) 'mcp) "MCP" "Emacs"))))))

(defun agent-q-prompt--grant-what (grant)
  "What GRANT approves, in the grants list."
  (cond
   ((plist-get grant :command)
    (concat "commands made of "
            (mapconcat (lambda (r) (format "`%s`" (agent-q--visible r)))
                       (plist-get grant :command) ", ")))
   ((plist-get grant :domain)
    (format "fetches from %s" (agent-q--visible (plist-get grant :domain))))
   (t (format "every call of %s" (agent-q--visible (plist-get grant :tool))))))

(declare-function agent-q-trust-grant-entries "agent-q-trust" ())
(declare-function agent-q-trust-end "agent-q-trust" (&optional id))

(defun agent-q--grant-entries ()
  "The rows of `agent-q-grants-mode': the grants, then the trusts in force.
A trust's row (see `agent-q-trust-agent') has the id (:trust N)."
  (append
   (mapcar (lambda (grant)
             (list grant
                   (vector (agent-q-prompt--grant-who grant)
                           (agent-q--visible (or (plist-get grant :tool) ""))
                           (agent-q-prompt--grant-what grant)
                           (format-time-string "%H:%M:%S" (plist-get grant :time)))))
           agent-q-prompt--session-approved)
   (and (fboundp 'agent-q-trust-grant-entries) (agent-q-trust-grant-entries))))

(defun agent-q-grants-refresh ()
  "Refresh the list of what \"a\" approved."
  (interactive)
  (let ((buffer (get-buffer "*agent-q-grants*")))
    (when buffer
      (with-current-buffer buffer
        (setq tabulated-list-entries (agent-q--grant-entries))
        (tabulated-list-print t)))))

;;;###autoload
(defun agent-q-grants ()
  "List what the approval prompt's \"a\" approved without asking, for now.
Each line is one grant: whom it is for (a client, or one session of
a terminal agent), the tool and what it covers.
\\<agent-q-grants-mode-map>\\[agent-q-grants-withdraw] withdraws the
grant at point.  `agent-q-forget-session-rules' withdraws them all,
with the rules saved for the session."
  (interactive)
  (let ((buffer (get-buffer-create "*agent-q-grants*")))
    (with-current-buffer buffer
      (agent-q-grants-mode)
      (setq tabulated-list-entries (agent-q--grant-entries))
      (tabulated-list-print))
    (pop-to-buffer buffer)))

(defun agent-q-grants-withdraw ()
  "Withdraw the grant at point, or end the trust at point.
The calls it covered are asked about again."
  (interactive)
  (let ((grant (or (tabulated-list-get-id) (user-error "No grant here"))))
    (if (eq (car-safe grant) :trust)
        (agent-q-trust-end (cadr grant))
      (setq agent-q-prompt--session-approved (delq grant agent-q-prompt--session-approved))
      (message "agent-q: withdrawn: %s for %s" (agent-q-prompt--grant-what grant)
               (agent-q-prompt--grant-who grant)))
    (agent-q-grants-refresh)))

(defun agent-q-grants-withdraw-all ()
  "Withdraw every grant of the prompt's \"a\", and end every trust."
  (interactive)
  (agent-q-prompt-forget-grants)
  (when (and (bound-and-true-p agent-q-trust--active) (fboundp 'agent-q-trust-end))
    (agent-q-trust-end t))
  (message "agent-q: every approval of \"a\" withdrawn")
  (agent-q-grants-refresh))

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

(defun agent-q-prompt-edit-note (agent)
  "Return the note on AGENT's display and model after the user edits a command.
AGENT is a symbol or a string: `gemini' shows the edited command in
its terminal; Claude Code goes on showing its own command; Codex CLI
is taken to do as Claude Code does (its terminal was not read after an
edit).  Each is told what ran by agent-q's hook (Gemini's by its
AfterTool hook, which the connect command writes)."
  (if (equal (format "%s" agent) "gemini")
      "The agent shows your edit; its model is told what ran"
    "The agent still displays its own command, not your edit; its model is told what ran"))

(defun agent-q-prompt--edit-header ()
  "The header line of the arguments buffer for the call being approved.
The keys; for a terminal agent's own call, also what the agent shows
and tells its model of the edit (`agent-q-prompt-edit-note'): it is
said before the user accepts, where it stays in view."
  (let ((agent (agent-q-prompt--gate-agent)))
    (concat "C-c C-c accepts the edit, C-c C-k cancels it"
            (if agent (concat ".  " (agent-q-prompt-edit-note agent)) ""))))

(defun agent-q-prompt--edit-arguments (tool-name args)
  "Let the user edit ARGS of TOOL-NAME; return the new plist or nil if cancelled.
The buffer shows hidden characters in strings as escapes, like the prompt.
Its header line says the keys and, for a terminal agent's own call,
that the agent's display will not show the edit
\=(`agent-q-prompt--edit-header')."
  (let ((buffer (get-buffer-create (format "*agent-q arguments: %s*" tool-name)))
        (header (agent-q-prompt--edit-header)))
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
            (setq header-line-format header)
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
