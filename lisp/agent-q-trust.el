;;; agent-q-trust.el --- Trust a terminal agent for a while  -*- lexical-binding: t -*-

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

;; `agent-q-trust-agent' trusts one terminal agent (Claude Code, Gemini
;; CLI, Codex CLI; or one session of it), for a duration or until turned
;; off, with either its edits inside its workspace or its shell commands
;; that a command rule would match: those pass without asking, the edits
;; applied without review and still journalled.  Deny rules, ask rules,
;; protected files (an agent's own settings, git hooks, init files...)
;; and sensitive files win over a trust: those calls are asked or
;; reviewed as without it.
;;
;; The module holds the trusts and decides (`agent-q--core-trust-decide',
;; crates/agent-q-core/src/trust.rs); the executor audits a call a trust
;; let through with the decision "trusted" and the field "trusted"
;; ("trusted until ...").  This file makes and ends trusts, shows them in
;; the mode line with the time left (a timer runs only while a trust with
;; an end is in force), and lists them in `agent-q-grants'.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'agent-q)

(declare-function agent-q--core-trust-add "agent-q-core" (agent session rule seconds))
(declare-function agent-q--core-trust-end "agent-q-core" (id))
(declare-function agent-q--core-trust-list "agent-q-core" ())
(declare-function agent-q--core-trust-decide "agent-q-core"
                  (agent session kind subject workspace protected ruling))
(declare-function agent-q-gate-call-agent "agent-q-gate" (context))
(declare-function agent-q-gate-call-info "agent-q-gate" (context))
(declare-function agent-q-guard-protected-reason "agent-q-guard" (&rest files))
(declare-function agent-q-guard-sensitive-match "agent-q-guard" (&rest files))
(declare-function agent-q-grants-refresh "agent-q-prompt" ())
(declare-function agent-q--ruling "agent-q" (tool-name args context))
(defvar agent-q-gate-edit-tool)
(defvar agent-q-gate-shell-tool)
(defvar agent-q-gate--calls)
(defvar agent-q-gate--registry)
(defvar agent-q-gate-edit--proposals)
(defvar agent-q-rules-agents)

(defgroup agent-q-trust nil
  "Trusting a terminal agent for a while."
  :group 'agent-q
  :prefix "agent-q-trust-")

(defcustom agent-q-trust-default-minutes 30
  "The duration `agent-q-trust-agent' proposes, in minutes.
Zero proposes a trust until turned off."
  :type 'natnum
  :group 'agent-q-trust)

(defvar agent-q-trust--active)         ; agent-q.el: the trusts in force, as listed

(defvar agent-q-trust--timer nil
  "The timer that counts down the time left in the mode line, or nil.
It runs only while a trust with an end is in force.")

(defvar agent-q-trust--sessions nil
  "The agents' sessions seen lately: a list of (AGENT . SESSION).")

(defvar agent-q-trust--mode-line-string nil
  "What the mode line shows of the trusts in force.")
(put 'agent-q-trust--mode-line-string 'risky-local-variable t)

(defvar agent-q-trust--mode-line-map
  (let ((map (make-sparse-keymap)))
    (define-key map [mode-line mouse-1] #'agent-q-trust-end)
    map)
  "Keymap of the trust indicator: a click ends a trust.")

;;;; Showing them

(defun agent-q-trust--left (trust)
  "The time TRUST has left, as in the mode line: \"4:05\", or \"on\"."
  (let ((left (plist-get trust :left)))
    (cond ((null left) "on")
          ((>= left 3600) (format "%d:%02d:%02d" (/ left 3600) (% (/ left 60) 60) (% left 60)))
          (t (format "%d:%02d" (/ left 60) (% left 60))))))

(defun agent-q-trust--label (trust)
  "TRUST in a few words for the mode line: the agent, what, the time left."
  (format "%s%s %s %s"
          (plist-get trust :agent)
          (if (plist-get trust :session) "*" "")
          (if (eq (plist-get trust :scope) 'edits) "edits" "cmds")
          (agent-q-trust--left trust)))

(defun agent-q-trust-mode-line ()
  "The mode line's text for the trusts in force, or nil when none."
  (and agent-q-trust--active
       (propertize (format " [trust: %s]"
                           (mapconcat #'agent-q-trust--label agent-q-trust--active ", "))
                   'face 'warning
                   'help-echo (concat (mapconcat (lambda (trust) (plist-get trust :words))
                                                 agent-q-trust--active "\n")
                                      "\nmouse-1 or M-x agent-q-trust-end: end a trust")
                   'mouse-face 'mode-line-highlight
                   'local-map agent-q-trust--mode-line-map)))

(defun agent-q-trust--refresh ()
  "Take the trusts from the module: say which ended, update the mode line.
The countdown timer runs while a trust with an end is in force, and
only then."
  (pcase-let ((`(,active . ,ended) (agent-q--core-trust-list)))
    (dolist (trust ended)
      (message "agent-q: trust ended: %s" (plist-get trust :words)))
    (setq agent-q-trust--active active)
    (setq agent-q-trust--mode-line-string (agent-q-trust-mode-line))
    (unless (memq 'agent-q-trust--mode-line-string global-mode-string)
      ;; Starting with "" keeps a lone symbol from reading as a conditional.
      (setq global-mode-string (append (or global-mode-string '(""))
                                       '(agent-q-trust--mode-line-string))))
    (let ((timed (cl-some (lambda (trust) (plist-get trust :until)) active)))
      (cond ((and timed (not agent-q-trust--timer))
             (setq agent-q-trust--timer (run-at-time 1 1 #'agent-q-trust--tick)))
            ((and (not timed) agent-q-trust--timer)
             (cancel-timer agent-q-trust--timer)
             (setq agent-q-trust--timer nil))))
    (when (and (get-buffer "*agent-q-grants*") (fboundp 'agent-q-grants-refresh))
      (agent-q-grants-refresh))
    (force-mode-line-update t)
    active))

(defun agent-q-trust--tick ()
  "Count the time left down, and end the trusts whose time ran out."
  (condition-case err
      (agent-q-trust--refresh)
    (error (message "agent-q: trust: %s" (error-message-string err)))))

;;;; Making and ending them

(defun agent-q-trust--agent-sessions (agent)
  "The sessions of AGENT seen lately, newest first."
  (let ((live nil))
    (when (boundp 'agent-q-gate--calls)
      (maphash (lambda (_ info)
                 (when (and (equal (plist-get info :agent) agent) (plist-get info :session))
                   (push (plist-get info :session) live)))
               agent-q-gate--calls))
    (delete-dups (append live (mapcar #'cdr (cl-remove-if-not
                                             (lambda (seen) (equal (car seen) agent))
                                             agent-q-trust--sessions))))))

(defun agent-q-trust--read-arguments ()
  "Read the arguments of `agent-q-trust-agent'."
  (require 'agent-q-rules)
  (let* ((agent (completing-read "Trust which agent? " agent-q-rules-agents nil t))
         (session (and current-prefix-arg
                       (let ((s (completing-read (format "Only the %s session: " agent)
                                                 (agent-q-trust--agent-sessions agent))))
                         (and (not (string-empty-p s)) s))))
         (what (completing-read "Trust what? "
                                '("edits inside its workspace" "commands matching a rule")
                                nil t nil nil "edits inside its workspace"))
         (rule (and (string-prefix-p "commands" what)
                    (read-string "Commands matching the rule (e.g. npm test *): ")))
         (minutes (read-number "For how many minutes (0: until turned off)? "
                               agent-q-trust-default-minutes)))
    (list agent session rule (and (> minutes 0) (max 1 (round (* 60 minutes)))))))

;;;###autoload
(defun agent-q-trust-agent (agent &optional session rule seconds)
  "Trust AGENT for a while: its edits, or its commands matching RULE, unasked.
AGENT is \"claude\", \"gemini\" or \"codex\" (its own tools, through
`agent-q-gate-mode'); with SESSION (a string; interactively, with a
prefix argument) only that session of it.  With RULE nil, its edits of
files inside its workspace (its working directory) are applied without
review, and still journalled; with RULE, a command rule such as
\"npm test *\", its shell commands that the rule covers whole run
without asking.  The trust lasts SECONDS (interactively, minutes are
read), or with SECONDS nil until `agent-q-trust-end'.

Deny and ask rules, protected files (an agent's own settings, git
hooks, init files, the rules) and sensitive files win over a trust:
those calls are asked or reviewed as ever.  The mode line shows the
trust with its time left; the audit log says \"trusted until ...\"
for each call it let through.  Return the trust, a plist."
  (interactive (agent-q-trust--read-arguments))
  (let ((trust (agent-q--core-trust-add agent session rule seconds)))
    (agent-q-trust--refresh)
    (message "agent-q: %s (M-x agent-q-trust-end ends it)" (plist-get trust :words))
    trust))

;;;###autoload
(defun agent-q-trust-end (&optional id)
  "End a trust: the one numbered ID, or, interactively, the one chosen.
With a single trust in force, that one; with ID t, every trust."
  (interactive
   (progn
     (agent-q-trust--refresh)
     (list (pcase agent-q-trust--active
             ('nil (user-error "No agent is trusted"))
             (`(,only) (plist-get only :id))
             (trusts
              (let* ((choices (cons (cons "all of them" t)
                                    (mapcar (lambda (trust)
                                              (cons (plist-get trust :words) (plist-get trust :id)))
                                            trusts)))
                     (choice (completing-read "End which trust? " choices nil t)))
                (cdr (assoc choice choices))))))))
  (let* ((trust (cl-find id agent-q-trust--active :key (lambda (trust) (plist-get trust :id))))
         (ended (agent-q--core-trust-end (if (eq id t) nil id))))
    (agent-q-trust--refresh)
    (message "agent-q: %s"
             (cond ((eq id t) (format "%d trust%s ended" ended (if (= ended 1) "" "s")))
                   ((and trust (> ended 0)) (format "ended: %s" (plist-get trust :words)))
                   (t "no such trust (it had ended)")))
    ended))

;;;; The decision

(defun agent-q-trust--remember-session (agent session)
  "Remember that AGENT's SESSION made a call, for `agent-q-trust-agent'."
  (when (and agent session)
    (let ((seen (cons agent session)))
      (setq agent-q-trust--sessions
            (let ((all (cons seen (delete seen agent-q-trust--sessions))))
              (cl-subseq all 0 (min 20 (length all))))))))

(defun agent-q-trust--truename (file)
  "FILE's true name, or nil for a name that is not a local absolute one."
  (and (stringp file) (file-name-absolute-p file) (not (file-remote-p file))
       (ignore-errors (file-truename file))))

(defun agent-q-trust--edit-info (context)
  "What agent-q knows of the agent of the edit CONTEXT describes, or nil.
CONTEXT is an `agent-q-approval-context' of the gate's own agent_edit
\(`agent-q-gate-edit-tool', of its private registry, which no client
can call).  An edit over ACP (lisp/agent-q-acp.el) or an IDE
companion's openDiff (lisp/agent-q-ide.el) names, in its proposal,
its :agent, its :session and its workspace (:cwd), as agent-q knows
them: the ACP session agent-q started, the IDE server the agent
connected to."
  (let ((id (plist-get context :tool-id)))
    (and id (boundp 'agent-q-gate--registry) agent-q-gate--registry
         (equal (plist-get context :tool) agent-q-gate-edit-tool)
         (eql id (ignore-errors
                   (agent-q-tool-id (agent-q-get-tool agent-q-gate-edit-tool
                                                      agent-q-gate--registry))))
         (let ((edit (gethash (plist-get context :id) agent-q-gate-edit--proposals)))
           (and (stringp (plist-get edit :agent)) edit)))))

(defun agent-q-trust-decision (tool-name args context ruling)
  "The decision of a trust about TOOL-NAME's call with ARGS, or nil.
CONTEXT is its `agent-q-approval-context', RULING what
`agent-q-rules-decide' said.  Only a terminal agent's own edit
\(`agent-q-gate-edit-tool': through its hooks, over ACP, or an IDE
companion's openDiff) or shell command (`agent-q-gate-shell-tool',
through its hooks) can be trusted; the module decides
\(`agent-q--core-trust-decide'), told whether the file is protected
or sensitive, and words the answer: (:trusted WORDS), or nil (asked
or reviewed as without trust).  Never signals."
  (condition-case err
      (let* ((hooked (and (fboundp 'agent-q-gate-call-agent)
                          (agent-q-gate-call-agent context)))
             (edit-info (and (fboundp 'agent-q-gate-call-agent)
                             (agent-q-trust--edit-info context)))
             (info (or (and hooked (agent-q-gate-call-info context)) edit-info))
             (agent (or hooked (plist-get edit-info :agent)))
             (session (plist-get info :session))
             (args (if (hash-table-p args)
                       (list :path (gethash "path" args) :command (gethash "command" args))
                     args)))
        (agent-q-trust--remember-session agent session)
        (when (and agent agent-q-trust--active)
          (require 'agent-q-guard)
          (let* ((edit (equal tool-name agent-q-gate-edit-tool))
                 (command (equal tool-name agent-q-gate-shell-tool))
                 (path (and edit (plist-get args :path)))
                 (file (and edit (agent-q-trust--truename path)))
                 (workspace (and edit (agent-q-trust--truename (plist-get info :cwd))))
                 (line (and command (plist-get args :command)))
                 (protected
                  (or (plist-get context :protected)
                      (and edit
                           (or (null file)
                               (agent-q-guard-protected-reason path file)
                               (agent-q-guard-sensitive-match path file)))))
                 ;; (ask nil TEXT): command rules exist, but none covers the line.
                 (verdict (or (and (nth 1 ruling) (car ruling))
                              ;; An edit's review is its ask, so the rules
                              ;; judge it without ask rules: an ask rule
                              ;; that names it wins over a trust all the same.
                              (and edit (plist-get context :review)
                                   (car (agent-q--ruling tool-name args
                                                         (append '(:review nil) context))))))
                 (words (and (or (and edit file) (and command (stringp line)))
                             (agent-q--core-trust-decide
                              agent session (if edit "edit" "command")
                              (if edit file line) workspace (and protected t)
                              (and (memq verdict '(deny ask allow)) verdict)))))
            (and words (list :trusted words)))))
    (error (message "agent-q: no trust applied: %s" (error-message-string err))
           nil)))

;;;; In the grants list

(defun agent-q-trust-grant-entries ()
  "The trusts in force as rows of `agent-q-grants'."
  (mapcar (lambda (trust)
            (list (list :trust (plist-get trust :id))
                  (vector (concat (plist-get trust :agent)
                                  (if (plist-get trust :session)
                                      (concat " " (plist-get trust :session))
                                    ""))
                          "(trusted)"
                          (if (eq (plist-get trust :scope) 'edits)
                              "edits inside its workspace"
                            (format "commands matching `%s`" (plist-get trust :rule)))
                          (format "%s left" (agent-q-trust--left trust)))))
          agent-q-trust--active))

(provide 'agent-q-trust)
;;; agent-q-trust.el ends here
