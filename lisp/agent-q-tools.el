;;; agent-q-tools.el --- Approval UIs for agent-q: minibuffer prompt and hunk review  -*- lexical-binding: t -*-

;; Copyright (C) 2026 The agent-q authors

;; Author: agent-q authors
;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1"))
;; Keywords: tools, convenience
;; URL: https://example.invalid/agent-q

;; This file is not part of GNU Emacs.

;; This program is free software: you can redistribute it and/or modify
;; it under the terms of the GNU General Public License as published by
;; the Free Software Foundation, either version 3 of the License, or
;; (at your option) any later version.

;;; Commentary:

;; The two approval experiences of agent-q.
;;
;; `agent-q-approve-in-minibuffer' is the default value of
;; `agent-q-approval-function': it shows a tool call in the minibuffer and
;; reads a single key (y, n, r, e, v, a, s; C-g denies).
;;
;; `agent-q-tools-review-edit' is the approval of "propose_file_edit": it
;; opens a diff of the proposal against the current text in a buffer derived
;; from `diff-mode', lets the user accept, reject or edit each hunk, and
;; applies exactly the accepted hunks as one undo step.  The minibuffer
;; approval function approves "propose_file_edit" without asking, because
;; this review is the approval.
;;
;; Diffs, application of hunks and the search for the model's `original'
;; text are computed by the agent-q-core module (functions
;; `agent-q--core-diff-*'), which agent-q.el loads.

;;; Code:

(require 'cl-lib)
(require 'diff-mode)
(require 'pp)
(require 'subr-x)

;;;; Module and agent-q.el functions (loaded by agent-q.el)

(declare-function agent-q--core-diff-session "agent-q-core" (old new))
(declare-function agent-q--core-diff-session-count "agent-q-core" (session))
(declare-function agent-q--core-diff-session-summary "agent-q-core" (session))
(declare-function agent-q--core-diff-session-hunk "agent-q-core" (session index))
(declare-function agent-q--core-diff-session-changes "agent-q-core" (session index))
(declare-function agent-q--core-diff-session-apply "agent-q-core" (session decisions))
(declare-function agent-q--core-diff-locate "agent-q-core" (current original))
(declare-function agent-q-validate-arguments "agent-q" (tool-name args &optional registry))
(declare-function agent-q--wait-for "agent-q" (predicate))
(declare-function agent-q-when-cancelled "agent-q-async" (function))
(declare-function agent-q-rules-save-from-prompt "agent-q-rules" (tool-name args context))
(declare-function agent-q--core-visible "agent-q-core" (text))

;; Defined in agent-q.el; declared here so that the compiler knows they are special.
(defvar agent-q-approval-context)
(defvar agent-q-approval-function)
(defvar agent-q-confirm-safety-levels)
(defvar agent-q-call-context)
(declare-function agent-q-guard-write-changed "agent-q-guard" (true &optional name))

;;;; Options and faces

(defcustom agent-q-diff-save-after-apply nil
  "When non-nil, save the file's buffer after applying reviewed hunks."
  :type 'boolean
  :group 'agent-q)

(defcustom agent-q-approval-max-string-length 80
  "Strings longer than this are shortened in the approval prompt.
A file name given as :path is never shortened."
  :type 'natnum
  :group 'agent-q)

(defface agent-q-diff-accepted
  '((t :inherit success :weight bold))
  "Face of the [ACCEPTED] marker of a reviewed hunk."
  :group 'agent-q)

(defface agent-q-diff-rejected
  '((t :inherit error :weight bold))
  "Face of the [REJECTED] marker of a reviewed hunk."
  :group 'agent-q)

(defface agent-q-diff-pending
  '((t :inherit warning :weight bold))
  "Face of the [PENDING] marker of a hunk not yet reviewed."
  :group 'agent-q)

(defface agent-q-diff-rejected-hunk
  '((t :inherit shadow :strike-through t))
  "Face added to the lines of a rejected hunk."
  :group 'agent-q)

(defface agent-q-diff-header
  '((t :inherit font-lock-keyword-face))
  "Face of the header lines of the review buffer."
  :group 'agent-q)

;;;; Minibuffer approval

(defvar agent-q-tools--session-approved nil
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
approves it for no other.")

(defun agent-q-tools--session-key ()
  "The key of the call being approved in `agent-q-tools--session-approved'.
Nil when the call's tool has no id."
  (let ((id (agent-q-tools--context-get :tool-id)))
    (and id (list id (or (agent-q-tools--context-get :origin) 'emacs)
                  (agent-q-tools--context-get :client)))))

(defun agent-q-tools--shorten (value)
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

(defun agent-q-tools--path-note (args)
  "Return a note naming the file the :path in ARGS designates, or an empty string.
The approval prompt shows it whole, after the arguments, so a long or
relative path, or a symlink, cannot hide which file a tool will touch.
When the tool's guard resolved and pinned the file (the approval
context's :file), that name is shown, never resolved again: it is the
file the call writes.  A remote file (or a relative name in a remote
`default-directory') is named as given, never resolved: resolving it
would contact the remote host before the user answered."
  (let ((path (and (listp args) (plist-get args :path)))
        (pinned (agent-q-tools--context-get :file)))
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

(defun agent-q-tools--print (value)
  "Return VALUE printed on one line, newlines escaped."
  (let ((print-escape-newlines t)
        (print-length nil)
        (print-level nil))
    (prin1-to-string value)))

(defun agent-q-tools--pp-plist (plist)
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

(defun agent-q-tools--context-get (key)
  "Return KEY of `agent-q-approval-context', or nil when it is unbound."
  (and (boundp 'agent-q-approval-context)
       (plist-get agent-q-approval-context key)))

(defun agent-q-tools--escape-raw-bytes (text)
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
      (error (agent-q--core-visible (agent-q-tools--escape-raw-bytes text))))))

(defun agent-q-tools--show-call (tool-name args)
  "Show the whole call of TOOL-NAME with ARGS in a help buffer.
Each line shows hidden characters as escapes (see `agent-q--visible')."
  (with-help-window (get-buffer-create "*agent-q call*")
    (princ (format "Tool: %s\nSafety level: %s\n" (agent-q--visible tool-name)
                   (or (agent-q-tools--context-get :safety-level) "unknown")))
    (when-let ((client (agent-q-tools--context-get :client)))
      (princ (format "Client: %s\n" (agent-q--visible client))))
    (when-let ((reason (agent-q-tools--context-get :reason)))
      (princ (format "Reason: %s\n" (agent-q--visible reason))))
    (princ "Arguments:\n")
    (princ (mapconcat #'agent-q--visible
                      (split-string (let ((pp-escape-newlines t))
                                      (agent-q-tools--pp-plist args))
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

(defconst agent-q-tools--settle-seconds 0.5
  "The pause in typing after which a prompt comes back after a stray key.
A confirmation (see `agent-q-tools--confirm') also waits for it.")

(defconst agent-q-tools--no-terminal-reason
  "agent-q cannot ask: Emacs has no terminal to ask the user on (it runs in batch mode, or as a daemon with no frame)"
  "Why a call that needs the user's answer is denied when there is nobody to ask.")

(defun agent-q-tools--no-terminal-p ()
  "Non-nil when there is no terminal to read the user's answer from.
That is Emacs in batch mode, or a daemon with no client frame."
  (or noninteractive
      (and (daemonp)
           (equal (terminal-name (frame-terminal (selected-frame))) "initial_terminal"))))

(defun agent-q-tools--read-key (prompt &optional settle)
  "Read the user's key in answer to PROMPT; nil when there is no terminal.
Only a key typed after PROMPT appeared answers it: what was typed
before and not yet read (type-ahead, `unread-command-events') is
discarded.  With SETTLE, first wait until no key has been typed for
SETTLE seconds, discarding the keys typed meanwhile, so that the rest
of a burst of typing cannot answer.

This is the only function through which the approval prompt and its
confirmations read input.  Tests answer prompts by rebinding it with
`cl-letf'; nothing a client sends reaches it."
  (unless (agent-q-tools--no-terminal-p)
    (when settle
      (while (progn (discard-input) (not (sit-for settle t)))))
    (discard-input)
    (read-key prompt)))

(defun agent-q-tools--confirm (question)
  "Ask QUESTION in a fresh prompt; non-nil when the user confirms with !.
The prompt appears once the typing has paused, and discards what was
typed before it, so the key that led here, and the keys typed with it,
cannot confirm: a second, deliberate key must.  \\[keyboard-quit] denies the call."
  (let ((key (agent-q-tools--read-key
              (concat question "  Press ! to confirm, any other key to go back: ")
              agent-q-tools--settle-seconds)))
    (when (eql key ?\C-g) (signal 'quit nil))
    (eql key ?!)))

(defun agent-q-tools--prompt-columns ()
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

(defun agent-q-tools--prompt (tool-name args level reason &optional complaint)
  "The approval prompt for TOOL-NAME with ARGS, at LEVEL, asked for REASON.
COMPLAINT, when non-nil, says why the prompt is shown again.  The
prompt is one line: every part a model or a client chose shows its
hidden characters as escapes (see `agent-q--visible').  The key list
comes last and always fits in the echo area
\(`agent-q-tools--prompt-columns'): the arguments are cut to make room,
saying so, never the keys."
  (let* ((short (agent-q-tools--shorten args))
         (printed (agent-q--visible (agent-q-tools--print (car short))))
         (client (agent-q-tools--context-get :client))
         (later (agent-q-tools--context-get :async))
         (waiting (agent-q-tools--context-get :waiting))
         (held (agent-q-tools--context-get :held))
         (rule (agent-q-tools--context-get :rule))
         (notes (delq nil (list (and waiting (> waiting 0) (format "%d more waiting" waiting))
                                (and held (format "held %ds until you paused" held)))))
         (head (format "%sagent-q%s: %srun %s [%s]%s "
                       (if complaint (concat complaint "  ") "")
                       (if notes (format " (%s)" (string-join notes "; ")) "")
                       (if client (format "%s wants to " (agent-q--visible client)) "")
                       (agent-q--visible tool-name)
                       (if level (string-remove-prefix ":" (format "%s" level)) "unknown")
                       (if reason (format " (%s)" (agent-q--visible reason)) "")))
         (tail (concat (agent-q--visible (agent-q-tools--path-note args))
                       (if rule (format " [asked by the rule: %s]" (agent-q--visible rule)) "")))
         (keys (format "  (y)es (n)o (r)eason (e)dit (v)iew (a)lways%s (s)ave rule%s: "
                       (if client (format " for %s" (agent-q--visible client)) "")
                       (if later " (l)ater" "")))
         (shortened " [long arguments shortened; v shows all]")
         (columns (agent-q-tools--prompt-columns))
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
discarded (see `agent-q-tools--read-key').  A key that is not a
choice beeps, says which keys answer, and the prompt comes back once
the typing has paused.  \"a\" and \"s\" ask for a second, deliberate
key in a fresh prompt (see `agent-q-tools--confirm').  The prompt is
one line, keys last: arguments, file names and the client's name
show hidden characters as escapes (see `agent-q--visible').  When
there is no terminal to ask on (batch mode, a daemon with no frame),
the call is denied at once, saying so.

The \"e\" buffer shows ARGS pretty-printed as a plist:
\\<agent-q-tools-arguments-mode-map>\\[agent-q-tools-arguments-accept] \
accepts the edit after validating it with
`agent-q-validate-arguments' (an invalid edit is reported and the
buffer stays), \\[agent-q-tools-arguments-cancel] cancels the edit and
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
  client that called it, the context's :client);
- a tool whose own review is the approval (:review in the context,
  which the executor sets only for the built-in handler of
  \"propose_file_edit\", never for a tool that merely has its name):
  its per-hunk review applies nothing unless the user accepts hunks.

A :path argument is never shortened, and the prompt names the file it
really designates (resolving links)."
  (let ((level (agent-q-tools--context-get :safety-level))
        (reason (agent-q-tools--context-get :reason))
        (key (agent-q-tools--session-key)))
    (cond
     ((and (not reason)
           (not (agent-q-tools--context-get :protected))
           (not (agent-q-tools--context-get :rule))
           (or (agent-q-tools--context-get :review)
               (and key (member key agent-q-tools--session-approved))))
      :approved)
     (t
      (condition-case nil
          (agent-q-tools--ask tool-name args level reason)
        (quit :denied))))))

(defun agent-q-tools--ask (tool-name args level reason)
  "Prompt loop of `agent-q-approve-in-minibuffer' for TOOL-NAME and ARGS.
LEVEL is the safety level, REASON the context's reason or nil.
Every key is read with `agent-q-tools--read-key', which discards what
was typed before the prompt appeared and reads nothing when there is
no terminal (the call is then denied at once).  A key that is not a
choice beeps and says which keys answer, and the prompt comes back
once the typing has paused; \"a\" and \"s\" must be confirmed (see
`agent-q-tools--confirm')."
  (let ((answer nil)
        (complaint nil)
        (settle nil))
    (while (not answer)
      (let* ((later (agent-q-tools--context-get :async))
             (choices (if later '(?y ?n ?r ?e ?v ?a ?s ?l) '(?y ?n ?r ?e ?v ?a ?s)))
             (key (agent-q-tools--read-key
                   (agent-q-tools--prompt tool-name args level reason complaint)
                   settle)))
        (setq complaint nil settle nil)
        (cond
         ((null key)
          (setq answer (list :denied agent-q-tools--no-terminal-reason))
          (message "agent-q: %s denied: %s" (agent-q--visible tool-name)
                   agent-q-tools--no-terminal-reason))
         ((eql key ?\C-g) (signal 'quit nil))
         ((not (memq key choices))
          (ding)
          (setq complaint (format "%s is not an answer: press %s, or C-g to deny."
                                  (agent-q--visible (single-key-description key))
                                  (mapconcat #'string choices " "))
                settle agent-q-tools--settle-seconds)
          (message "agent-q: %s" complaint))
         (t
          (pcase key
            (?y (setq answer :approved))
            (?n (setq answer :denied))
            (?a (cond
                 ((agent-q-tools--context-get :protected)
                  ;; Only the user approves a protected call, each time.
                  (message "agent-q: approved this %s call only: it writes a protected file, which is asked about every time"
                           (agent-q--visible tool-name))
                  (setq answer :approved))
                 ((agent-q-tools--confirm
                   (format "Approve %s%s for the rest of this session?"
                           (agent-q--visible tool-name)
                           (let ((client (agent-q-tools--context-get :client)))
                             (if client (format " for %s" (agent-q--visible client)) ""))))
                  (let ((key (agent-q-tools--session-key)))
                    (when key (cl-pushnew key agent-q-tools--session-approved :test #'equal)))
                  (setq answer :approved))))
            (?r (let ((text (read-string (format "Reason for denying %s: "
                                                 (agent-q--visible tool-name)))))
                  (setq answer (if (string-empty-p (string-trim text))
                                   :denied
                                 (list :denied text)))))
            (?v (agent-q-tools--show-call tool-name args))
            (?s (when (agent-q-tools--confirm
                       (format "Save an approval rule about %s?" (agent-q--visible tool-name)))
                  (setq answer (agent-q-rules-save-from-prompt
                                tool-name args (and (boundp 'agent-q-approval-context)
                                                    agent-q-approval-context)))))
            (?l (setq answer :later))
            (?e (when-let ((new (agent-q-tools--edit-arguments tool-name args)))
                  (setq answer (list :modified new)))))))))
    answer))

;;;; Editing arguments

(defvar-local agent-q-tools--arguments-tool nil
  "Tool whose arguments the current buffer edits.")

(defvar-local agent-q-tools--arguments-result nil
  "Outcome of the arguments edit: nil, (:ok PLIST) or (:cancel).")

(defvar agent-q-tools-arguments-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "C-c C-c") #'agent-q-tools-arguments-accept)
    (define-key map (kbd "C-c C-k") #'agent-q-tools-arguments-cancel)
    map)
  "Keymap of `agent-q-tools-arguments-mode'.")

(define-derived-mode agent-q-tools-arguments-mode lisp-data-mode "agent-q-args"
  "Mode for editing the arguments of a tool call before approving it.
\\<agent-q-tools-arguments-mode-map>\\[agent-q-tools-arguments-accept] \
accepts the edit, \\[agent-q-tools-arguments-cancel] cancels it.")

(defun agent-q-tools--read-plist (text)
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

(defun agent-q-tools-arguments-accept ()
  "Accept the edited arguments if they read and validate."
  (interactive)
  (let ((parsed (agent-q-tools--read-plist
                 (buffer-substring-no-properties (point-min) (point-max)))))
    (if (eq (car parsed) :error)
        (message "%s" (cadr parsed))
      (let ((problem (and (fboundp 'agent-q-validate-arguments)
                          (agent-q-validate-arguments agent-q-tools--arguments-tool
                                                      (cadr parsed)))))
        (if problem
            (message "%s" problem)
          (setq agent-q-tools--arguments-result parsed)
          (exit-recursive-edit))))))

(defun agent-q-tools-arguments-cancel ()
  "Cancel the edit of the arguments and return to the approval prompt."
  (interactive)
  (setq agent-q-tools--arguments-result '(:cancel))
  (exit-recursive-edit))

(defun agent-q-tools--edit-arguments (tool-name args)
  "Let the user edit ARGS of TOOL-NAME; return the new plist or nil if cancelled.
The buffer shows hidden characters in strings as escapes, like the prompt."
  (let ((buffer (get-buffer-create (format "*agent-q arguments: %s*" tool-name))))
    (unwind-protect
        (progn
          (with-current-buffer buffer
            (erase-buffer)
            (agent-q-tools-arguments-mode)
            ;; Hidden characters in strings as escapes, which read back as
            ;; the same characters (see `agent-q--visible').
            (insert (mapconcat #'agent-q--visible
                               (split-string (let ((pp-escape-newlines t))
                                               (agent-q-tools--pp-plist args))
                                             "\n")
                               "\n"))
            (goto-char (point-min))
            (setq agent-q-tools--arguments-tool tool-name
                  agent-q-tools--arguments-result nil))
          (save-window-excursion
            (pop-to-buffer buffer)
            (message "Edit the arguments of %s: C-c C-c to accept, C-c C-k to cancel"
                     tool-name)
            (condition-case nil
                (recursive-edit)
              (quit nil)))
          (let ((result (and (buffer-live-p buffer)
                             (buffer-local-value 'agent-q-tools--arguments-result buffer))))
            (and (eq (car result) :ok) (cadr result))))
      (when (buffer-live-p buffer)
        (kill-buffer buffer)))))

;;;; Per-hunk review of propose_file_edit

(cl-defstruct (agent-q-tools--review (:constructor agent-q-tools--make-review)
                                     (:copier nil))
  "State of one review of a proposed file edit.
SESSION is the module's diff of CURRENT and PROPOSAL; SUMMARY a vector
of each hunk's summary plist (:header :old-start ...); DETAILS a vector
caching each hunk's full plist, built when first needed; HEADERS a
vector of (HEADER-MARKER . STATE-MARKER) per hunk; RENDERED the number
of hunk bodies inserted so far (in order).  CALLBACK is called once the
review is finished, with the result text and its status (`:success',
`:denied' or `:failure').  PINNED is the file the tool's guard resolved
and pinned (see `agent-q-guard-write-verdict'), checked again before
the accepted hunks are applied and saved."
  path file current proposal description session summary details decisions
  buffer done cancelled headers (rendered 0) timer callback client pinned)

(defvar-local agent-q-tools--this-review nil
  "The review shown in the current review buffer.")

(defvar agent-q-tools--review-driver nil
  "For tests: when non-nil, a function called with the review buffer.
It is called as soon as the review buffer is ready, instead of showing
it: it is expected to call the review commands in that buffer until the
review is finished.  Production code leaves this nil.")

(defvar agent-q-tools--open-reviews nil
  "Reviews shown and not yet finished, newest first.")

(defvar agent-q-tools-review-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map "n" #'agent-q-tools-review-next)
    (define-key map "p" #'agent-q-tools-review-previous)
    (define-key map "a" #'agent-q-tools-review-accept)
    (define-key map "r" #'agent-q-tools-review-reject)
    (define-key map " " #'agent-q-tools-review-toggle)
    (define-key map "A" #'agent-q-tools-review-accept-all)
    (define-key map "R" #'agent-q-tools-review-reject-all)
    (define-key map "e" #'agent-q-tools-review-edit-hunk)
    (define-key map (kbd "RET") #'agent-q-tools-review-show-source)
    (define-key map (kbd "C-c C-c") #'agent-q-tools-review-finish)
    (define-key map (kbd "C-c C-k") #'agent-q-tools-review-cancel)
    (define-key map (kbd "C-g") #'agent-q-tools-review-keyboard-quit)
    (define-key map "q" #'agent-q-tools-review-quit)
    (define-key map "?" #'agent-q-tools-review-help)
    map)
  "Keymap of `agent-q-tools-review-mode'.")

(define-derived-mode agent-q-tools-review-mode diff-mode "agent-q-review"
  "Review a proposed file edit hunk by hunk.
\\<agent-q-tools-review-mode-map>
\\[agent-q-tools-review-next], \\[agent-q-tools-review-previous]: next, previous hunk
\\[agent-q-tools-review-accept]: accept the hunk (and go to the next one)
\\[agent-q-tools-review-reject]: reject the hunk (and go to the next one)
\\[agent-q-tools-review-toggle]: toggle accepted/rejected
\\[agent-q-tools-review-accept-all]: accept all pending hunks
\\[agent-q-tools-review-reject-all]: reject all pending hunks
\\[agent-q-tools-review-edit-hunk]: edit the proposed side of the hunk, then accept it
\\[agent-q-tools-review-show-source]: show the hunk's place in the file
\\[agent-q-tools-review-finish]: finish (pending hunks are not applied)
\\[agent-q-tools-review-cancel], \\[agent-q-tools-review-keyboard-quit]: reject everything and finish
\\[agent-q-tools-review-quit]: finish, asking first when hunks are pending
\\[agent-q-tools-review-help]: help

Nothing is applied before finishing; then exactly the accepted hunks
are applied to the buffer visiting the file, as one undo step."
  (setq-local minor-mode-overriding-map-alist nil)
  ;; Faces are text properties computed from the Rust diff; no font-lock keywords, which
  ;; would recompute them (and refine words again) on a buffer of any size.
  (setq-local font-lock-defaults '(nil t))
  (setq-local diff-refine nil)
  (setq-local diff-font-lock-syntax nil)
  (remove-hook 'after-change-functions #'diff-after-change-function t)
  (remove-hook 'post-command-hook #'diff-post-command-hook t)
  (setq buffer-read-only t)
  (setq-local header-line-format
              '(:eval (agent-q-tools--progress-string agent-q-tools--this-review)))
  (add-hook 'kill-buffer-hook #'agent-q-tools--review-killed nil t))

(declare-function agent-q-files-current-text "agent-q-files" (file))

(defun agent-q-tools--current-text (file)
  "Return the current text of FILE and the buffer visiting it, as a cons.
The text is that buffer's (unsaved edits included) when one visits
FILE, else the file's contents, else \"\" for a new file.  The file is
read through one descriptor that never blocks (a FIFO is refused) and,
during a tool call, is checked against what the read guard approved
\(see `agent-q-files-current-text'); a problem signals
`agent-q-tool-failure'."
  (require 'agent-q-files)
  (agent-q-files-current-text file))

(defconst agent-q-tools--marker-width (length "[ACCEPTED, EDITED]")
  "Width of every hunk state marker.
All markers have this width, so updating one never moves the text after
it.")

(defconst agent-q-tools--bodies-at-once 20
  "Hunk bodies rendered when the review opens, and per idle batch after.
The review opens with every hunk's header and the first bodies; the
rest follow while Emacs is idle, or at once when the user moves to
them, so even a diff of a 100,000-line file opens without a pause.")

(defun agent-q-tools--put-face (start end face)
  "Give the text from START to END the face FACE.
The review buffer has no font-lock keywords: faces are text
properties, set as both `face' and `font-lock-face' so that they show
with and without `font-lock-mode'."
  (add-text-properties start end (list 'face face 'font-lock-face face)))

(defun agent-q-tools--with-face (string face)
  "Return STRING with FACE, as `agent-q-tools--put-face' gives it."
  (propertize string 'face face 'font-lock-face face))

(defun agent-q-tools--decision-marker (decision)
  "Return the marker text of DECISION, with its face."
  (pcase-let ((`(,text . ,face)
               (pcase decision
                 ('accept '("[ACCEPTED]" . agent-q-diff-accepted))
                 ('reject '("[REJECTED]" . agent-q-diff-rejected))
                 ((pred stringp) '("[ACCEPTED, EDITED]" . agent-q-diff-accepted))
                 (_ '("[PENDING]" . agent-q-diff-pending)))))
    (concat (agent-q-tools--with-face text face)
            (make-string (- agent-q-tools--marker-width (length text)) ?\s))))

(defun agent-q-tools--count (review)
  "Return (ACCEPTED REJECTED PENDING) counts of REVIEW."
  (let ((a 0) (r 0) (p 0))
    (mapc (lambda (d)
            (pcase d
              ('reject (cl-incf r))
              ('nil (cl-incf p))
              (_ (cl-incf a))))
          (agent-q-tools--review-decisions review))
    (list a r p)))

(defun agent-q-tools--progress-string (review)
  "Return the progress line of REVIEW."
  (if (not review)
      ""
    (pcase-let ((`(,a ,r ,p) (agent-q-tools--count review)))
      (format "Progress: %d accepted, %d rejected, %d pending (of %d)  [? help]"
              a r p (length (agent-q-tools--review-decisions review))))))

(defun agent-q-tools--hunk (review index)
  "The full plist of hunk INDEX of REVIEW, built by the module when first needed."
  (let ((details (agent-q-tools--review-details review)))
    (or (aref details index)
        (aset details index
              (agent-q--core-diff-session-hunk (agent-q-tools--review-session review) index)))))

(defun agent-q-tools--hunk-count (review)
  "The number of hunks of REVIEW."
  (length (agent-q-tools--review-summary review)))

(defun agent-q-tools--insert-header (index summary)
  "Insert the header line of hunk INDEX, from its SUMMARY; return its markers.
The value is (HEADER-MARKER . STATE-MARKER).  Both advance when text is
inserted at them, so a body inserted later before the next header
leaves them on their header."
  (let ((start (point))
        state)
    (insert (agent-q-tools--with-face (plist-get summary :header) 'diff-hunk-header) " ")
    (setq state (point-marker))
    (insert (agent-q-tools--decision-marker nil))
    (insert (format "  hunk %d\n" (1+ index)))
    (put-text-property start (point) 'agent-q-hunk index)
    (let ((header (copy-marker start t)))
      (set-marker-insertion-type state t)
      (cons header state))))

(defun agent-q-tools--body-string (index hunk)
  "The body of HUNK, number INDEX, as one propertized string."
  (let* ((lines (plist-get hunk :lines))
         (starts (make-vector (length lines) 0))
         (offset 0)
         (body
          (apply #'concat
                 (cl-loop for (tag . text) in lines
                          for i from 0
                          collect (let ((line (agent-q-tools--with-face
                                               (concat (pcase tag
                                                         ('context " ")
                                                         ('removed "-")
                                                         ('added "+")
                                                         (_ ""))
                                                       text "\n")
                                               (pcase tag
                                                 ('context 'diff-context)
                                                 ('removed 'diff-removed)
                                                 ('added 'diff-added)
                                                 (_ 'shadow)))))
                                    (aset starts i offset)
                                    (setq offset (+ offset (length line)))
                                    line)))))
    (dolist (r (plist-get hunk :refine))
      (pcase-let* ((`(,line ,from ,to) r)
                   (start (+ (aref starts line) 1 from))
                   (end (+ (aref starts line) 1 to))
                   (face (if (eq (car (nth line lines)) 'removed)
                             '(diff-refine-removed diff-removed)
                           '(diff-refine-added diff-added))))
        (add-text-properties start end (list 'face face 'font-lock-face face) body)))
    (put-text-property 0 (length body) 'agent-q-hunk index body)
    body))

(defun agent-q-tools--render-bodies (review upto)
  "Insert the bodies of REVIEW's hunks before hunk UPTO that are not in yet."
  (let ((buffer (agent-q-tools--review-buffer review))
        (upto (min upto (agent-q-tools--hunk-count review))))
    (when (and (buffer-live-p buffer)
               (< (agent-q-tools--review-rendered review) upto))
      (with-current-buffer buffer
        (let ((inhibit-read-only t)
              (headers (agent-q-tools--review-headers review)))
          (save-excursion
            (while (< (agent-q-tools--review-rendered review) upto)
              (let ((i (agent-q-tools--review-rendered review)))
                (goto-char (car (aref headers i)))
                (forward-line 1)
                (insert (agent-q-tools--body-string i (agent-q-tools--hunk review i)))
                (setf (agent-q-tools--review-rendered review) (1+ i))
                (agent-q-tools--update-hunk review i)))))))))

(defun agent-q-tools--render-more (review)
  "Insert the next batch of REVIEW's hunk bodies, from an idle timer."
  (if (or (agent-q-tools--review-done review)
          (not (buffer-live-p (agent-q-tools--review-buffer review)))
          (>= (agent-q-tools--review-rendered review) (agent-q-tools--hunk-count review)))
      (when (agent-q-tools--review-timer review)
        (cancel-timer (agent-q-tools--review-timer review))
        (setf (agent-q-tools--review-timer review) nil))
    (agent-q-tools--render-bodies review (+ (agent-q-tools--review-rendered review)
                                            agent-q-tools--bodies-at-once))))

(defun agent-q-tools--render (review)
  "Fill the current buffer with REVIEW: every header, the first bodies.
The other bodies follow from an idle timer (see
`agent-q-tools--bodies-at-once')."
  (let ((inhibit-read-only t)
        (headers nil))
    (erase-buffer)
    ;; The file, the client and the description come from the model or a
    ;; client: hidden characters show as escapes, each on its one line.
    (insert (agent-q-tools--with-face
             (format "File: %s\n" (agent-q--visible (agent-q-tools--review-file review)))
             'agent-q-diff-header))
    (when-let ((client (agent-q-tools--review-client review)))
      (insert (agent-q-tools--with-face (format "From: %s\n" (agent-q--visible client))
                                        'agent-q-diff-header)))
    (insert (agent-q-tools--with-face
             (format "Description: %s\n"
                     (agent-q--visible (or (agent-q-tools--review-description review) "")))
             'agent-q-diff-header))
    (insert "Keys: n/p next/previous hunk, a accept, r reject, SPC toggle, "
            "A/R accept/reject all pending,\n"
            "      e edit hunk, RET show in file, C-c C-c finish, "
            "C-c C-k reject all, q quit, ? help\n")
    (let ((name (agent-q--visible (file-name-nondirectory (agent-q-tools--review-file review)))))
      (insert (format "--- a/%s\n+++ b/%s\n" name name)))
    (cl-loop for summary across (agent-q-tools--review-summary review)
             for i from 0
             do (push (agent-q-tools--insert-header i summary) headers))
    (setf (agent-q-tools--review-headers review) (vconcat (nreverse headers))
          (agent-q-tools--review-rendered review) 0)
    (agent-q-tools--render-bodies review agent-q-tools--bodies-at-once)
    (when (< (agent-q-tools--review-rendered review) (agent-q-tools--hunk-count review))
      (setf (agent-q-tools--review-timer review)
            (run-with-idle-timer 0.05 t #'agent-q-tools--render-more review)))
    (goto-char (car (aref (agent-q-tools--review-headers review) 0)))))

(defun agent-q-tools--update-hunk (review index)
  "Redisplay the state of hunk INDEX of REVIEW."
  (let* ((inhibit-read-only t)
         (headers (agent-q-tools--review-headers review))
         (decision (aref (agent-q-tools--review-decisions review) index))
         (state (cdr (aref headers index)))
         (mstart (marker-position state)))
    (save-excursion
      (goto-char mstart)
      (delete-region mstart (+ mstart agent-q-tools--marker-width))
      (insert (propertize (agent-q-tools--decision-marker decision) 'agent-q-hunk index))
      (set-marker state mstart)
      ;; The rejected look covers the hunk body (once it is in).
      (let* ((body-start (progn (forward-line 1) (point)))
             (next (1+ index))
             (body-end (if (< next (length headers))
                           (marker-position (car (aref headers next)))
                         (point-max))))
        (remove-overlays body-start body-end 'agent-q-state t)
        (when (and (eq decision 'reject) (< body-start body-end))
          (let ((ov (make-overlay body-start body-end)))
            (overlay-put ov 'agent-q-state t)
            (overlay-put ov 'face 'agent-q-diff-rejected-hunk)))))
    (force-mode-line-update)))

(defun agent-q-tools--review-or-error ()
  "Return the review of the current buffer or signal a user error."
  (or agent-q-tools--this-review
      (user-error "Not in an agent-q review buffer")))

(defun agent-q-tools--hunk-at-point (review)
  "Return the index of the hunk at point in REVIEW's buffer."
  (or (get-text-property (point) 'agent-q-hunk)
      (let ((headers (agent-q-tools--review-headers review)))
        (if (< (point) (car (aref headers 0)))
            0
          (1- (length headers))))))

(defun agent-q-tools--goto-hunk (review index)
  "Move point to the header of hunk INDEX of REVIEW, its body rendered."
  (agent-q-tools--render-bodies review (+ index 2))
  (goto-char (car (aref (agent-q-tools--review-headers review) index))))

(defun agent-q-tools--decide (decision &optional advance)
  "Set the hunk at point to DECISION; with ADVANCE go to the next hunk."
  (let* ((review (agent-q-tools--review-or-error))
         (index (agent-q-tools--hunk-at-point review)))
    (aset (agent-q-tools--review-decisions review) index decision)
    (agent-q-tools--update-hunk review index)
    (if (and advance (< (1+ index) (agent-q-tools--hunk-count review)))
        (agent-q-tools--goto-hunk review (1+ index))
      (agent-q-tools--goto-hunk review index))))

(defun agent-q-tools-review-next ()
  "Move to the next hunk."
  (interactive)
  (let* ((review (agent-q-tools--review-or-error))
         (index (agent-q-tools--hunk-at-point review))
         (last (1- (agent-q-tools--hunk-count review))))
    (agent-q-tools--goto-hunk
     review
     (if (< (point) (car (aref (agent-q-tools--review-headers review) 0)))
         0
       (min last (1+ index))))))

(defun agent-q-tools-review-previous ()
  "Move to the previous hunk."
  (interactive)
  (let* ((review (agent-q-tools--review-or-error))
         (index (agent-q-tools--hunk-at-point review)))
    (agent-q-tools--goto-hunk review (max 0 (1- index)))))

(defun agent-q-tools-review-accept ()
  "Accept the hunk at point and move to the next hunk."
  (interactive)
  (agent-q-tools--decide 'accept t))

(defun agent-q-tools-review-reject ()
  "Reject the hunk at point and move to the next hunk."
  (interactive)
  (agent-q-tools--decide 'reject t))

(defun agent-q-tools-review-toggle ()
  "Toggle the hunk at point between accepted and rejected.
A pending or rejected hunk becomes accepted, an accepted one rejected."
  (interactive)
  (let* ((review (agent-q-tools--review-or-error))
         (current (aref (agent-q-tools--review-decisions review)
                        (agent-q-tools--hunk-at-point review))))
    (agent-q-tools--decide (if (memq current '(nil reject)) 'accept 'reject))))

(defun agent-q-tools--decide-pending (decision)
  "Set every pending hunk of the current review to DECISION."
  (let* ((review (agent-q-tools--review-or-error))
         (decisions (agent-q-tools--review-decisions review)))
    (dotimes (i (length decisions))
      (unless (aref decisions i)
        (aset decisions i decision)
        (agent-q-tools--update-hunk review i)))))

(defun agent-q-tools-review-accept-all ()
  "Accept all pending hunks."
  (interactive)
  (agent-q-tools--decide-pending 'accept))

(defun agent-q-tools-review-reject-all ()
  "Reject all pending hunks."
  (interactive)
  (agent-q-tools--decide-pending 'reject))

(defun agent-q-tools-review-show-source ()
  "Show the place of the hunk at point in the file's buffer."
  (interactive)
  (let* ((review (agent-q-tools--review-or-error))
         (index (agent-q-tools--hunk-at-point review))
         (hunk (aref (agent-q-tools--review-summary review) index))
         (buffer (or (find-buffer-visiting (agent-q-tools--review-file review))
                     (find-file-noselect (agent-q-tools--review-file review))))
         (window (display-buffer buffer)))
    (with-current-buffer buffer
      (save-restriction
        (widen)
        (goto-char (point-min))
        (forward-line (max 0 (1- (plist-get hunk :old-start))))
        (when window
          (set-window-point window (point))
          (with-selected-window window (recenter)))))))

(defun agent-q-tools-review-help ()
  "Show the keys of the review buffer."
  (interactive)
  (describe-function 'agent-q-tools-review-mode))

;;;;; Editing a hunk

(defvar-local agent-q-tools--hunk-edit nil
  "In a hunk edit buffer: (REVIEW-BUFFER . INDEX).")

(defvar agent-q-tools-hunk-edit-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "C-c C-c") #'agent-q-tools-hunk-edit-accept)
    (define-key map (kbd "C-c C-k") #'agent-q-tools-hunk-edit-cancel)
    map)
  "Keymap of `agent-q-tools-hunk-edit-mode'.")

(define-minor-mode agent-q-tools-hunk-edit-mode
  "Minor mode of the buffer editing the proposed side of a hunk.
\\<agent-q-tools-hunk-edit-mode-map>\\[agent-q-tools-hunk-edit-accept] \
accepts the hunk with this text, \\[agent-q-tools-hunk-edit-cancel] \
cancels the edit."
  :lighter " agent-q-hunk-edit"
  :keymap agent-q-tools-hunk-edit-mode-map)

(defun agent-q-tools-review-edit-hunk ()
  "Edit the proposed side of the hunk at point, then accept it.
The edit buffer holds the hunk's new text, context lines included;
\\<agent-q-tools-hunk-edit-mode-map>\\[agent-q-tools-hunk-edit-accept] \
accepts the hunk with the edited text, \\[agent-q-tools-hunk-edit-cancel] \
leaves the hunk as it was."
  (interactive)
  (let* ((review (agent-q-tools--review-or-error))
         (index (agent-q-tools--hunk-at-point review))
         (hunk (agent-q-tools--hunk review index))
         (decision (aref (agent-q-tools--review-decisions review) index))
         (review-buffer (current-buffer))
         (file-buffer (find-buffer-visiting (agent-q-tools--review-file review)))
         (mode (and file-buffer (buffer-local-value 'major-mode file-buffer)))
         (buffer (get-buffer-create (format "*agent-q hunk %d: %s*" (1+ index)
                                            (file-name-nondirectory
                                             (agent-q-tools--review-file review))))))
    (with-current-buffer buffer
      (let ((inhibit-read-only t))
        (erase-buffer)
        (when (and mode (provided-mode-derived-p mode 'prog-mode 'text-mode))
          (delay-mode-hooks (ignore-errors (funcall mode))))
        (insert (if (stringp decision) decision (plist-get hunk :new-text)))
        (goto-char (point-min))
        (agent-q-tools-hunk-edit-mode 1)
        (setq agent-q-tools--hunk-edit (cons review-buffer index))))
    (pop-to-buffer buffer)
    (message "Edit hunk %d: C-c C-c to accept it with this text, C-c C-k to cancel"
             (1+ index))))

(defun agent-q-tools--hunk-edit-close (text)
  "Close the hunk edit buffer; with TEXT non-nil, accept the hunk with it."
  (let* ((edit agent-q-tools--hunk-edit)
         (review-buffer (car edit))
         (index (cdr edit))
         (buffer (current-buffer)))
    (when (buffer-live-p review-buffer)
      (with-current-buffer review-buffer
        (let ((review agent-q-tools--this-review))
          (when (and text review (not (agent-q-tools--review-done review)))
            (let ((hunk (agent-q-tools--hunk review index)))
              (aset (agent-q-tools--review-decisions review) index
                    (if (equal text (plist-get hunk :new-text)) 'accept text)))
            (agent-q-tools--update-hunk review index)))))
    (when-let ((window (get-buffer-window buffer)))
      (quit-window t window))
    (when (buffer-live-p buffer)
      (kill-buffer buffer))
    (when (buffer-live-p review-buffer)
      (pop-to-buffer review-buffer))))

(defun agent-q-tools-hunk-edit-accept ()
  "Accept the hunk being edited with the text of this buffer."
  (interactive)
  (agent-q-tools--hunk-edit-close
   (buffer-substring-no-properties (point-min) (point-max))))

(defun agent-q-tools-hunk-edit-cancel ()
  "Cancel the edit of the hunk; its state is unchanged."
  (interactive)
  (agent-q-tools--hunk-edit-close nil))

;;;;; Finishing

(defun agent-q-tools--finish (review &optional cancelled killing)
  "Finish REVIEW: apply its accepted hunks and report the outcome.
CANCELLED non-nil rejects every hunk first.  KILLING non-nil means the
review buffer is being killed already.  The review buffer goes away and
REVIEW's callback gets the result.  Finishing twice does nothing."
  (unless (agent-q-tools--review-done review)
    (when cancelled
      (setf (agent-q-tools--review-cancelled review) t)
      (fillarray (agent-q-tools--review-decisions review) 'reject))
    (setf (agent-q-tools--review-done review) t)
    (when (agent-q-tools--review-timer review)
      (cancel-timer (agent-q-tools--review-timer review)))
    (setq agent-q-tools--open-reviews (delq review agent-q-tools--open-reviews))
    (let ((outcome (condition-case err
                       (agent-q-tools--apply-review review)
                     (error (cons :failure
                                  (format "Error while applying the reviewed hunks to %s: %s"
                                          (agent-q-tools--review-path review)
                                          (error-message-string err))))))
          (buffer (agent-q-tools--review-buffer review)))
      (when (and (not killing) (buffer-live-p buffer))
        (let ((window (get-buffer-window buffer)))
          (with-current-buffer buffer
            (setq agent-q-tools--this-review nil))
          (if (window-live-p window)
              (quit-window t window)
            (kill-buffer buffer))))
      (when-let ((callback (agent-q-tools--review-callback review)))
        (funcall callback (cdr outcome) (car outcome))))))

(defun agent-q-tools-review-finish ()
  "Finish the review: apply the accepted hunks; pending hunks are not applied."
  (interactive)
  (agent-q-tools--finish (agent-q-tools--review-or-error)))

(defun agent-q-tools-review-cancel ()
  "Reject every hunk and finish the review."
  (interactive)
  (agent-q-tools--finish (agent-q-tools--review-or-error) t))

(defun agent-q-tools-review-keyboard-quit ()
  "Reject every hunk and finish the review, like `agent-q-tools-review-cancel'."
  (interactive)
  (agent-q-tools-review-cancel))

(defun agent-q-tools-review-quit ()
  "Finish the review, asking first when hunks are still pending."
  (interactive)
  (let* ((review (agent-q-tools--review-or-error))
         (pending (nth 2 (agent-q-tools--count review))))
    (when (or (zerop pending)
              (y-or-n-p (format "%d hunk%s still pending (not applied).  Finish? "
                                pending (if (= pending 1) " is" "s are"))))
      (agent-q-tools--finish review))))

(defun agent-q-tools--review-killed ()
  "Reject everything when a review buffer is killed before finishing."
  (let ((review agent-q-tools--this-review))
    (when (and review (not (agent-q-tools--review-done review)))
      (agent-q-tools--finish review t t))))

(defun agent-q-tools-cancel-review (review)
  "Withdraw REVIEW: close it and apply nothing.
Its callback is told the call was cancelled."
  (unless (agent-q-tools--review-done review)
    (setf (agent-q-tools--review-callback review)
          (let ((callback (agent-q-tools--review-callback review)))
            (lambda (_text _status)
              (when callback
                (funcall callback
                         (format "The review of the edit to %s was withdrawn before the user finished it; no change was made."
                                 (agent-q-tools--review-path review))
                         :cancelled)))))
    (agent-q-tools--finish review t)))

(defun agent-q-tools--numbers (indices)
  "Return INDICES (0-based) as \"1\", \"1 and 3\" or \"1, 2 and 4\"."
  (let ((names (mapcar (lambda (i) (number-to-string (1+ i))) indices)))
    (if (cdr names)
        (concat (string-join (butlast names) ", ") " and " (car (last names)))
      (car names))))

(defun agent-q-tools--hunk-phrase (indices what)
  "Return \"hunk N WHAT\" or \"hunks N and M WHAT\" for INDICES."
  (format "%s %s %s" (if (cdr indices) "hunks" "hunk")
          (agent-q-tools--numbers indices) what))

(defun agent-q-tools--replace-contents (buffer text)
  "Replace the whole (widened) text of BUFFER with TEXT as one undo step."
  (with-current-buffer buffer
    (undo-boundary)
    (let ((group (prepare-change-group))
          (source (generate-new-buffer " *agent-q-apply*" t)))
      (unwind-protect
          (progn
            (with-current-buffer source (insert text))
            (activate-change-group group)
            (save-restriction
              (widen)
              (replace-buffer-contents source 1.0))
            (accept-change-group group)
            (undo-amalgamate-change-group group)
            (setq group nil))
        (when group (cancel-change-group group))
        (kill-buffer source)))
    (undo-boundary)))

(defun agent-q-tools--apply-review (review)
  "Apply the accepted hunks of REVIEW; return (STATUS . TEXT).
STATUS is `:success' when hunks were applied, `:denied' when the user
accepted none (rejected or cancelled the edit), and `:failure' when the
file's buffer changed during the review, so nothing could be applied."
  (let* ((path (agent-q-tools--review-path review))
         (file (agent-q-tools--review-file review))
         (session (agent-q-tools--review-session review))
         (summaries (agent-q-tools--review-summary review))
         (decisions (agent-q-tools--review-decisions review))
         (total (length summaries))
         accepted rejected pending edited)
    (dotimes (i total)
      (pcase (aref decisions i)
        ('reject (push i rejected))
        ('nil (push i pending))
        ((pred stringp) (push i accepted) (push i edited))
        (_ (push i accepted))))
    (setq accepted (nreverse accepted) rejected (nreverse rejected)
          pending (nreverse pending) edited (nreverse edited))
    (let ((summary
           (string-join
            (delq nil (list (let ((plain (cl-set-difference accepted edited)))
                              (and plain (agent-q-tools--hunk-phrase
                                          (sort plain #'<) "accepted")))
                            (and edited (agent-q-tools--hunk-phrase
                                         edited "accepted with the user's edits"))
                            (and rejected (agent-q-tools--hunk-phrase rejected "rejected"))
                            (and pending (agent-q-tools--hunk-phrase
                                          pending "left pending (not applied)"))))
            "; "))
          (saved nil)
          (stale nil)
          (moved (and accepted (agent-q-tools--review-pinned review)
                      (agent-q-guard-write-changed (agent-q-tools--review-pinned review) file))))
      (when (and accepted (not moved))
        (let* ((buffer (or (find-buffer-visiting file)
                           ;; Something other than a regular file put there during the review
                           ;; (a FIFO would block `find-file-noselect') counts as a change.
                           (and (or (not (file-exists-p file)) (file-regular-p file))
                                (find-file-noselect file))))
               (now (and buffer
                         (with-current-buffer buffer
                           (save-restriction
                             (widen)
                             (buffer-substring-no-properties (point-min) (point-max)))))))
          (if (not (equal now (agent-q-tools--review-current review)))
              (setq stale t)
            (agent-q-tools--replace-contents
             buffer
             (agent-q--core-diff-session-apply
              session (mapcar (lambda (d) (or d 'reject)) decisions)))
            (when agent-q-diff-save-after-apply
              (condition-case err
                  (let ((changed (and (agent-q-tools--review-pinned review)
                                      (agent-q-guard-write-changed
                                       (agent-q-tools--review-pinned review) file))))
                    (when changed
                      (error "It changed after it was checked (%s); the buffer was left unsaved" changed))
                    (with-current-buffer buffer (save-buffer))
                    (setq saved t))
                (error (setq saved (error-message-string err))))))))
      (cons
       (cond ((or stale moved) :failure) (accepted :success) (t :denied))
       (concat
       (cond
        (moved
         (format "Applied 0 of %d hunks to %s: it changed after it was checked (%s), so nothing was applied (%s).  Read the file again and propose the edit again."
                 total path moved summary))
        (stale
         (format "Applied 0 of %d hunks to %s: the file's buffer changed during the review, so nothing was applied (%s).  Read the file again and propose the edit again."
                 total path summary))
        ((agent-q-tools--review-cancelled review)
         (format "Applied 0 of %d hunks to %s: the user rejected the whole edit." total path))
        (t (format "Applied %d of %d hunks to %s (%s)." (length accepted) total path summary)))
       (cond ((or stale moved (null accepted)) "  No change made.")
             ((stringp saved) (format "  Could not save %s: %s." path saved))
             (saved (format "  Saved %s." path))
             (t "  Buffer not saved."))
       (if edited
           (concat "\n\nEdited hunks as applied:\n"
                   (mapconcat (lambda (i)
                                (format "Hunk %d (%s) now reads:\n%s" (1+ i)
                                        (plist-get (aref summaries i) :header)
                                        (aref decisions i)))
                              edited "\n"))
         "")
       (if (or rejected pending)
           (concat "\n\nNot applied (the removed and added lines of each hunk):\n"
                   (mapconcat (lambda (i)
                                (format "Hunk %d:\n%s" (1+ i)
                                        (agent-q--core-diff-session-changes session i)))
                              (sort (append rejected pending nil) #'<) ""))
         ""))))))

(defun agent-q-tools--start-review (review)
  "Show REVIEW in a review buffer and return at once.
Finishing the review (\\<agent-q-tools-review-mode-map>\\[agent-q-tools-review-finish], \\[agent-q-tools-review-cancel], killing the buffer...) calls
its callback."
  (let* ((name (format "*agent-q-diff: %s*"
                       (file-name-nondirectory (agent-q-tools--review-file review))))
         (buffer (generate-new-buffer name)))
    (setf (agent-q-tools--review-buffer review) buffer)
    (with-current-buffer buffer
      (agent-q-tools-review-mode)
      (setq agent-q-tools--this-review review)
      (agent-q-tools--render review))
    (push review agent-q-tools--open-reviews)
    (if agent-q-tools--review-driver
        (progn
          (funcall agent-q-tools--review-driver buffer)
          (unless (agent-q-tools--review-done review)
            (agent-q-tools--finish review t)))
      (pop-to-buffer buffer))
    review))

(defun agent-q-tools--prepare-review (path original modified description)
  "Prepare the review of replacing ORIGINAL by MODIFIED in PATH.
Return a review, or (STATUS . TEXT) when there is nothing to review:
ORIGINAL does not match the current text, or the proposal changes
nothing (both failures, with the explanation).  DESCRIPTION goes into
the review's header."
  (unless (fboundp 'agent-q--core-diff-session)
    (error "The agent-q-core module is not loaded"))
  (let* ((file (expand-file-name path))
         (current (car (agent-q-tools--current-text file)))
         (span (condition-case err
                   (agent-q--core-diff-locate current original)
                 (agent-q-diff-error (format "%s" (cadr err))))))
    (if (stringp span)
        (cons :failure (format "No change made to %s: %s" path span))
      (let* ((proposal (if (plist-get span :whole)
                           modified
                         (concat (substring current 0 (plist-get span :start))
                                 modified
                                 (substring current (plist-get span :end)))))
             (session (agent-q--core-diff-session current proposal))
             (count (agent-q--core-diff-session-count session)))
        (if (zerop count)
            (cons :failure
                  (format "No change made to %s: the proposal is identical to the current text."
                          path))
          (agent-q-tools--make-review
           :path path :file file :current current :proposal proposal
           :description description :session session
           :summary (agent-q--core-diff-session-summary session)
           :details (make-vector count nil)
           :decisions (make-vector count nil)))))))

(defun agent-q-tools-review-edit-async (path original modified description callback
                                             &optional client)
  "Open the review of replacing ORIGINAL by MODIFIED in PATH; return at once.
CALLBACK is called once, with the result text and its status
\(`:success', `:denied' or `:failure'), when the user finishes the
review -- or at once when there is nothing to review (see
`agent-q-tools-review-edit').  CLIENT, when non-nil, names where the
proposal comes from in the review's header.  DESCRIPTION is shown in
the header.  Return the review, or nil when none opened."
  (let ((review (agent-q-tools--prepare-review path original modified description)))
    (if (consp review)
        (progn (funcall callback (cdr review) (car review)) nil)
      (setf (agent-q-tools--review-callback review) callback
            (agent-q-tools--review-client review) client
            (agent-q-tools--review-pinned review) (plist-get agent-q-call-context :file))
      (when (fboundp 'agent-q-when-cancelled)
        (agent-q-when-cancelled (lambda () (agent-q-tools-cancel-review review))))
      (agent-q-tools--start-review review))))

(defun agent-q-tools-review-edit (path original modified &optional description)
  "Review the proposal to replace ORIGINAL by MODIFIED in PATH; return the result.
This waits for the review in a recursive edit (Emacs stays usable) and
returns the result text; `agent-q-tools-review-edit-async' is the
same without waiting, which is how the \"propose_file_edit\" tool
runs.  The review IS the approval of that tool: nothing is changed
unless the user accepts hunks here.

The current text is that of the buffer visiting PATH (unsaved edits
included), else the file on disk, else \"\" (a new file).  ORIGINAL
must be the whole current text or a unique excerpt of it, which
MODIFIED replaces.  When it is not, no review opens and the returned
string explains the mismatch, with the current text around the closest
match.

Otherwise the buffer *agent-q-diff: FILE* shows the diff hunk by hunk
\(see `agent-q-tools-review-mode').  Finishing applies exactly the
accepted hunks to the buffer visiting PATH (opened if needed) as one
undo step, saved only when `agent-q-diff-save-after-apply' is non-nil.
Killing the review buffer or
\\<agent-q-tools-review-mode-map>\\[agent-q-tools-review-keyboard-quit] \
in it rejects everything.  DESCRIPTION is shown in the header.

The returned string says how many hunks were applied, which were
accepted, edited or rejected, the text of the hunks not applied, and
whether the buffer was saved."
  (let* ((answer (list nil))
         (review (agent-q-tools-review-edit-async
                  path original modified description
                  (lambda (text _status) (setcar answer text)))))
    (when (and review (not (car answer)))
      (unwind-protect
          (condition-case nil
              (agent-q--wait-for (lambda () (car answer)))
            (quit (agent-q-tools--finish review t)))
        (unless (agent-q-tools--review-done review)
          (agent-q-tools--finish review t))))
    (car answer)))

(provide 'agent-q-tools)
;;; agent-q-tools.el ends here
