;;; agent-q-gate-edit.el --- The terminal agents' own edits, reviewed in Emacs  -*- lexical-binding: t -*-

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

;; The edits of the terminal agents' own tools -- Claude Code's Edit,
;; MultiEdit and Write, Gemini CLI's replace and write_file, Codex
;; CLI's apply_patch -- as `agent-q-gate-mode' decides them
;; (lisp/agent-q-gate.el hands them here).
;;
;; The module computes the text each file would have after the call
;; (`agent-q--core-gate-edit-text': the replacements with Claude's
;; replace_all and Gemini's expected_replacements, the content of a
;; write, the hunks of a patch).  An edit that cannot be applied (its
;; old_string is not in the file, or not unique) is denied with the
;; reason, which the model reads.  Otherwise each file becomes a call
;; of the private tool agent_edit (argument: the file's path), run by
;; the asynchronous executor with the gate's other tools: the approval
;; rules (a deny rule with :path refuses it, an allow rule with :path
;; lets it through unreviewed), the pending list, the mode line and the
;; audit (\"AGENT (own tools) SESSION\") apply.  Its handler opens
;; agent-q's per-hunk review of the file's current text against that
;; text (`agent-q-review-merge-async': Emacs changes nothing, the agent
;; writes).  A protected file (`agent-q-protected-file-patterns': the
;; agents' own settings and hooks, .mcp.json, .dir-locals.el, git's
;; hooks, init files...) is reviewed whatever an allow rule says.
;;
;; The answer: every hunk accepted, allow unchanged (Codex, whose
;; PreToolUse allows only with an updated input: its input unchanged);
;; some accepted, allow with the input rewritten so that the agent
;; writes exactly the accepted text -- Claude's Edit and Gemini's
;; replace replace the whole current text by it, MultiEdit gets one
;; such edit, Write and write_file get it as their content, Codex a new
;; patch of the accepted files, as its apply_patch tool or as the
;; "apply_patch <<EOF" command given to its shell (which the core
;; recognizes as a patch) (see `agent-q-gate-edit--rewrite'); none
;; accepted, deny, telling the model that the user rejected the edit.
;;
;; When the gate has reviewed FILE to TEXT, the IDE companion's
;; openDiff of the same edit (Claude Code and Gemini CLI show one for
;; their edits) is accepted without a second review
;; (`agent-q-gate-edit-take-reviewed').
;;
;; `agent-q-gate-edit-review' is the review alone, for other bridges
;; (ACP edit requests).

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'json)
(require 'agent-q)
(require 'agent-q-async)
(require 'agent-q-rules)
(require 'agent-q-guard)

(declare-function agent-q--core-gate-edit-text "agent-q-core"
                  (agent tool input current file-index))
(declare-function agent-q--core-gate-patch-section "agent-q-core" (path old new new-file))
(declare-function agent-q-journal-record "agent-q-journal" (&rest plist))
(declare-function agent-q-review-merge-async "agent-q-review"
                  (file current proposal callback &optional client description))
(declare-function agent-q-review-close "agent-q-review" (review))
(declare-function agent-q-gate--start "agent-q-gate" (key props call-list callback what))
(declare-function agent-q-gate--answer "agent-q-gate" (key decision &optional detail))
(declare-function agent-q-gate--cwd "agent-q-gate" (props))
(declare-function agent-q-gate--label "agent-q-gate" (agent session))
(declare-function agent-q-gate--notify "agent-q-gate" (text))
(declare-function agent-q-gate--notice-label "agent-q-gate" (label))

(defvar agent-q-gate--run)
(defvar agent-q-gate--requests)
(defvar agent-q-gate-notify)
(defvar agent-q--starting)

(defconst agent-q-gate-edit-tool "agent_edit"
  "The tool name of an agent's own edits, one file a call, in rules and audit.")

(defcustom agent-q-gate-edit-reviewed-seconds 60
  "How long an edit reviewed by the gate stays known to the IDE companion.
Within this many seconds, the IDE companion's openDiff of the same
file with exactly the text the user accepted is accepted without a
second review (see `agent-q-gate-edit-take-reviewed')."
  :type 'number
  :group 'agent-q-gate)

;;;; State

(defvar agent-q-gate-edit--proposals (make-hash-table :test #'equal)
  "Call id -> the plist of the file edit the call is about.
Keys :current (the file's text now), :proposal (its text after the
agent's call), :label and :mcp-client (who asks), :description
\(the review's header, when not the gate's own), :reviewed
\(non-nil when the gate has just reviewed this very edit, see
`agent-q-gate-edit-take-reviewed': the review is not shown again), and
for an edit over ACP or from an IDE companion :agent, :session and
:cwd (who makes it and its workspace, for `agent-q-trust-agent'); :ide
for an IDE companion's openDiff (not remembered for a next openDiff).")

(defvar agent-q-gate-edit--outcomes (make-hash-table :test #'equal)
  "Call id -> the text the user accepted for its file, or `rejected'.")

(defvar agent-q-gate-edit--reviewed nil
  "The edits the gate let through lately: a list of (FILE TEXT TIME).")

(defvar agent-q-gate-edit--open (make-hash-table :test #'equal)
  "Call id -> the review its handler opened, while it is open.")

(defun agent-q-gate-edit-open-review (id)
  "The review that the agent_edit call ID has open, or nil."
  (gethash id agent-q-gate-edit--open))

;;;; The review

(defun agent-q-gate-edit--remember (file text)
  "Remember that the gate let the agent write TEXT to FILE, for the IDE."
  (let ((limit (- (float-time) agent-q-gate-edit-reviewed-seconds)))
    (setq agent-q-gate-edit--reviewed
          (cons (list (expand-file-name file) text (float-time))
                (cl-remove-if (lambda (e) (< (nth 2 e) limit)) agent-q-gate-edit--reviewed)))))

(defun agent-q-gate-edit-take-reviewed (file text)
  "Non-nil when the gate has just let an agent write TEXT to FILE.
The record is used up: a second openDiff of the same edit is reviewed.
The IDE companion asks this before reviewing an openDiff, so that one
edit is reviewed once."
  (let* ((file (expand-file-name file))
         (limit (- (float-time) agent-q-gate-edit-reviewed-seconds))
         (entry (cl-find-if (lambda (e) (and (equal (car e) file) (equal (nth 1 e) text)
                                             (>= (nth 2 e) limit)))
                            agent-q-gate-edit--reviewed)))
    (when entry
      (setq agent-q-gate-edit--reviewed (delq entry agent-q-gate-edit--reviewed))
      t)))

(defun agent-q-gate-edit-review (file old new label callback &optional protected description)
  "Review replacing OLD, the text of FILE, by NEW, proposed by LABEL.
PROTECTED, when non-nil, says why FILE is protected: the review's
header says so, which is why it is reviewed whatever the rules say.
DESCRIPTION, when non-nil, heads the review instead of the words for
an agent that writes the accepted hunks itself.
The per-hunk review of `agent-q-review-merge-async': Emacs changes
neither FILE nor a buffer visiting it.  CALLBACK is called once with
the text of FILE with exactly the accepted hunks (edited hunks as the
user edited them), or nil when the user accepted none (rejected all,
cancelled, killed the review).  When NEW equals OLD no review opens
and CALLBACK gets NEW at once.  The accepted text is remembered for
the IDE companion (see `agent-q-gate-edit-take-reviewed').  CALLBACK
gets a second argument: the hunks accepted, edited and rejected (see
`agent-q-review-hunks'), nil when no review opened.  Return the
review, or nil when none opened."
  (require 'agent-q-review)
  (agent-q-review-merge-async
   file old new
   (lambda (status plist)
     (if (eq status :success)
         (let ((text (plist-get plist :text)))
           (agent-q-gate-edit--remember file text)
           (funcall callback text (plist-get plist :hunks)))
       (funcall callback nil (plist-get plist :hunks))))
   label
   (concat
    (if protected
        (format "Protected, so reviewed whatever the approval rules say: %s.  " protected)
      "")
    (or description
        (format "%s will write this edit itself: only the accepted hunks (C-c C-c answers, C-c C-k rejects all)."
                label)))))

(defun agent-q-gate-edit--journal (context edit file text &optional hunks)
  "Journal the agent's EDIT of FILE to TEXT, which the call let through.
HUNKS is the review's (see `agent-q-review-hunks'), nil when no review
decided.  CONTEXT, the call's `agent-q-call-context', names the agent,
its session and how it was approved.  An edit the agent may make only
whole (ACP: EDIT's :whole) is journalled only when TEXT is the whole
proposal.  When EDIT has :journal-later, a function, it is called
with the arguments of `agent-q-journal-record' instead: its caller
records them once it knows the edit is written (ACP: only when every
file of the request was accepted)."
  (when (and (stringp text)
             (or (not (plist-get edit :whole))
                 (equal text (plist-get edit :proposal)))
             (require 'agent-q-journal nil t))
    (funcall (or (plist-get edit :journal-later) #'agent-q-journal-record)
             :context context :file file
             :old (plist-get edit :current) :new text
             :accepted (+ (length (plist-get hunks :accepted))
                          (length (plist-get hunks :edited)))
             :rejected (length (plist-get hunks :rejected)))))

(defun agent-q-gate-edit--mark-review ()
  "Count the call whose handler is starting as waiting for a review."
  (when (and (boundp 'agent-q--starting) agent-q--starting)
    (setf (agent-q--pending-review agent-q--starting) t)
    (agent-q--update-indicator)))

(defun agent-q-gate-edit--guard (args)
  "The guard of agent_edit: ARGS' path is protected, or nil.
A protected file (`agent-q-protected-file-patterns') is the user's to
approve, each time: no allow rule lets its edit through unreviewed."
  (let* ((file (gethash "path" args))
         (protected (and (stringp file) (agent-q-guard-protected-reason file))))
    (and protected (list :reason protected :protected t :file file))))

(defun agent-q-gate-edit--handler (callback args)
  "The handler of agent_edit: review the edit of ARGS' path; CALLBACK answers.
The executor decided the call (see `agent-q-gate-edit-register'): an
allow rule approved it unreviewed (`agent-q-call-context' has
:decision \"rule\"), a trust did (\"trusted\", see
`agent-q-trust-agent': applied unreviewed and journalled), or the
review is its approval.  The outcome goes
to `agent-q-gate-edit--outcomes' (the text the user accepted, or
`rejected'); the agent writes the file.  An edit agent-q found
malformed (its :invalid, see `agent-q-ide--open-diff') fails, saying
why."
  (let* ((id (plist-get agent-q-call-context :id))
         (edit (gethash id agent-q-gate-edit--proposals))
         (file (gethash "path" args)))
    (remhash id agent-q-gate-edit--proposals)
    (cond
     ((not (and edit (stringp file)))
      (funcall callback "agent-q no longer knows this edit; nothing was written." :failure))
     ((plist-get edit :invalid)
      (funcall callback (concat (plist-get edit :invalid) "; nothing was written.") :failure))
     (t
      (let* ((label (plist-get edit :label))
             (context agent-q-call-context)
             (proposal (plist-get edit :proposal))
             (protected (plist-get agent-q-call-context :reason)))
        (cond
         ((equal (plist-get agent-q-call-context :decision) "rule")
          (puthash id proposal agent-q-gate-edit--outcomes)
          (unless (plist-get edit :ide)
            (agent-q-gate-edit--remember file proposal))
          (agent-q-gate-edit--journal agent-q-call-context edit file proposal)
          (funcall callback (format "Allowed unreviewed by the approval rule %s"
                                    (plist-get agent-q-call-context :rule))
                   :success))
         ((equal (plist-get agent-q-call-context :decision) "trusted")
          ;; The user trusts the agent's edits for now (agent-q-trust.el):
          ;; applied without review, and journalled.
          (puthash id proposal agent-q-gate-edit--outcomes)
          (unless (plist-get edit :ide)
            (agent-q-gate-edit--remember file proposal))
          (agent-q-gate-edit--journal agent-q-call-context edit file proposal)
          (funcall callback "Applied without review: the user trusts this agent's edits for now."
                   :success))
         (t
          (if (plist-get edit :reviewed)
              (progn
                (puthash id proposal agent-q-gate-edit--outcomes)
                (funcall callback "The user reviewed this very edit in Emacs already (the gate's review of the agent's own edit tool); not shown again."
                         :success))
            (agent-q-gate-edit--mark-review)
            (when agent-q-gate-notify
              (agent-q-gate--notify (format "%s waits for your review in Emacs: %s"
                                            (agent-q-gate--notice-label label)
                                            (abbreviate-file-name file))))
            (let ((review
                   (agent-q-gate-edit-review
                    file (plist-get edit :current) proposal label
                    (lambda (text &optional hunks)
                      (remhash id agent-q-gate-edit--open)
                      (if text
                          (progn
                            (puthash id text agent-q-gate-edit--outcomes)
                            (agent-q-gate-edit--journal context edit file text hunks)
                            (funcall callback
                                     (if (equal text proposal)
                                         "The user accepted the whole edit."
                                       "The user accepted part of the edit.")
                                     :success hunks))
                        (puthash id 'rejected agent-q-gate-edit--outcomes)
                        (funcall callback
                                 (format "The user rejected the edit of %s in Emacs (agent-q); nothing was written. Do not retry it unchanged%s."
                                         file (if protected
                                                  " (the file is protected: only the user may approve writing it)"
                                                ""))
                                 :denied hunks)))
                    protected (plist-get edit :description))))
              (when review
                (puthash id review agent-q-gate-edit--open)
                (agent-q-when-cancelled (lambda ()
                                          (remhash id agent-q-gate-edit--open)
                                          (agent-q-review-close review)))))))))))))

(defun agent-q-gate-edit-register (registry)
  "Register the tool agent_edit in REGISTRY, the gate's private one.
A dangerous tool whose review is its approval (:approval
:review-or-rule): no prompt before the review; a deny rule refuses
it unshown; an allow rule covering the file approves it unreviewed,
never for a protected file (its guard says which)."
  (agent-q-register-tool
   (agent-q-define-tool
    agent-q-gate-edit-tool
    "A file that an agent is about to change with its own tool.  Its per-hunk review is its approval: the agent writes only the hunks the user accepts."
    '((:name "path" :type :string :description "The file changed"))
    :required '("path")
    :safety-level :dangerous
    :approval :review-or-rule
    :categories '(:diff :filesystem)
    :async t
    :guard #'agent-q-gate-edit--guard
    :handler #'agent-q-gate-edit--handler)
   registry))

;;;; Requests

(defun agent-q-gate-edit--text-of (file)
  "The text of the local FILE on disk, or nil when it does not exist."
  (when (file-exists-p file)
    (with-temp-buffer
      (insert-file-contents file)
      (buffer-string))))

(defun agent-q-gate-edit--files (props kind)
  "The files of the edit KIND of the request PROPS: a list of plists.
Each has :path (as the call names it), :file (absolute) and :index
\(the file's number in a patch).  Signal an error for a remote file, a
relative name without a working directory, or a patch that moves a
file."
  (let ((cwd (agent-q-gate--cwd props))
        (paths (pcase (plist-get kind :kind)
                 ("patch" (mapcar (lambda (f)
                                    ;; The review shows one file's change; a move writes
                                    ;; another file, which it would not show.
                                    (when (plist-get f :move_to)
                                      (error "The patch moves %s to %s; agent-q reviews no moves.  Move the file with a shell command, then patch it" (plist-get f :path) (plist-get f :move_to)))
                                    (plist-get f :path))
                                  (append (plist-get kind :files) nil)))
                 (_ (list (plist-get kind :path))))))
    (cl-loop for path in paths
             for index from 0
             collect
             (progn
               (unless (and (stringp path) (not (string-empty-p path))
                            (not (file-remote-p path))
                            (or cwd (file-name-absolute-p path)))
                 (error "Emacs reviews only edits of local files (%s)" path))
               (list :path path :file (expand-file-name path cwd) :index index)))))

(defun agent-q-gate-edit-request (key props kind)
  "Decide the edit KIND (a write, edit or patch) of the gate request KEY (PROPS)."
  (let* ((agent (plist-get props :agent))
         (label (agent-q-gate--label agent (plist-get props :session)))
         (input (json-encode (plist-get props :input)))
         (tool (plist-get props :tool))
         (files
          (condition-case err
              (mapcar
               (lambda (f)
                 (let* ((current (agent-q-gate-edit--text-of (plist-get f :file))))
                   (append f (list :new-file (null current)
                                   :current (or current "")
                                   :proposal (agent-q--core-gate-edit-text
                                              (symbol-name agent) tool input (or current "")
                                              (plist-get f :index))))))
               (agent-q-gate-edit--files props kind))
            (error (error-message-string err)))))
    (if (stringp files)
        (agent-q-gate--answer
         key 'deny (format "agent-q cannot apply this edit, so nothing was written: %s" files))
      (let ((calls nil) (ids nil))
        (dolist (f files)
          (let ((id (format "gate-%s-%s-%d" agent-q-gate--run key (plist-get f :index))))
            (puthash id (list :current (plist-get f :current) :proposal (plist-get f :proposal)
                              :label label
                              :mcp-client (agent-q-rules-agent-client (symbol-name agent)))
                     agent-q-gate-edit--proposals)
            (push id ids)
            (push (list :id id :name agent-q-gate-edit-tool
                        :arguments (list :path (plist-get f :file)))
                  calls)))
        (setq calls (nreverse calls) ids (nreverse ids))
        (agent-q-gate--start
         key props calls
         (lambda (results) (agent-q-gate-edit--decided key props files ids results))
         (format "edit %s" (mapconcat (lambda (f) (plist-get f :path)) files ", ")))))))

(defun agent-q-gate-edit--decided (key props files ids results)
  "Answer the gate request KEY (PROPS) about FILES.
IDS are the ids of its calls, one a file; RESULTS their results."
  (remhash key agent-q-gate--requests)
  (let ((texts (mapcar (lambda (id)
                         (prog1 (gethash id agent-q-gate-edit--outcomes)
                           (remhash id agent-q-gate-edit--outcomes)
                           (remhash id agent-q-gate-edit--proposals)))
                       ids))
        (failed (cl-find-if-not (lambda (r) (plist-get r :success)) results)))
    (cond
     ((or (/= (length results) (length ids))
          (cl-every (lambda (text) (not (stringp text))) texts)
          (and failed (cl-notany #'stringp texts)))
      (agent-q-gate--answer
       key 'deny
       (let ((content (and failed (plist-get failed :content))))
         (if (and (stringp content) (not (string-empty-p content)))
             content
           "The user rejected the edit in Emacs (agent-q); nothing was written."))))
     ((and (cl-every #'stringp texts)
           (cl-every (lambda (f text) (equal text (plist-get f :proposal))) files texts))
      ;; Codex's PreToolUse allows only with an input: give its own.
      (agent-q-gate--answer key 'allow
                            (and (eq (plist-get props :agent) 'codex)
                                 (json-encode (plist-get props :input)))))
     (t
      (agent-q-gate--answer key 'allow (agent-q-gate-edit--rewrite props files texts))))))

(defun agent-q-gate-edit--rewrite (props files texts)
  "The tool input of PROPS rewritten to write TEXTS to FILES, as JSON text.
TEXTS holds, for each of FILES, the accepted text, or a non-string
for a file whose edit was rejected (only in a patch).  Claude's Edit
and Gemini's replace replace the whole current text by the accepted
one; MultiEdit gets one such edit; Write and write_file get it as
their content; Codex's apply_patch a new patch writing the accepted
files and leaving the others alone."
  (let* ((input (copy-sequence (plist-get props :input)))
         (tool (plist-get props :tool))
         (f (car files))
         (text (car texts)))
    (json-encode
     (pcase tool
       ((or "Write" "write_file") (plist-put input :content text))
       ("MultiEdit"
        (plist-put input :edits
                   (vector (list :old_string (plist-get f :current) :new_string text
                                 :replace_all :json-false))))
       ("Edit"
        (setq input (plist-put input :old_string (plist-get f :current)))
        (setq input (plist-put input :new_string text))
        (plist-put input :replace_all :json-false))
       ("replace"
        (setq input (plist-put input :old_string (plist-get f :current)))
        (setq input (plist-put input :new_string text))
        (plist-put input :expected_replacements 1))
       (_
        (let ((patch
               (concat "*** Begin Patch\n"
                       (mapconcat
                        #'identity
                        (cl-loop for f in files
                                 for text in texts
                                 when (stringp text)
                                 collect (if (and (string-empty-p text)
                                                  (not (plist-get f :new-file)))
                                             (format "*** Delete File: %s\n" (plist-get f :path))
                                           (agent-q--core-gate-patch-section
                                            (plist-get f :path) (plist-get f :current) text
                                            (plist-get f :new-file))))
                        "")
                       "*** End Patch\n")))
          (if (equal tool "apply_patch")
              (agent-q-gate-edit--put-patch input patch)
            ;; Given to Codex's shell as apply_patch <<EOF: the same form.
            (plist-put input :command
                       (concat "apply_patch <<'AGENT_Q_PATCH'\n" patch "AGENT_Q_PATCH\n")))))))))

(defun agent-q-gate-edit--put-patch (input patch)
  "INPUT, a Codex apply_patch input, with its patch replaced by PATCH."
  (let ((key (cl-find-if (lambda (k) (plist-member input k)) '(:command :patch :input))))
    (pcase (plist-get input key)
      ((and (pred vectorp) argv (guard (> (length argv) 0)))
       (let ((copy (copy-sequence argv)))
         (aset copy (1- (length copy)) patch)
         (plist-put input key copy)))
      (_ (plist-put input (or key :command) patch)))))

(provide 'agent-q-gate-edit)

;;; agent-q-gate-edit.el ends here
