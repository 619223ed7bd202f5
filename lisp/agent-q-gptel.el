;;; agent-q-gptel.el --- agent-q's tools in gptel's requests  -*- lexical-binding: t -*-

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

;; Gives gptel's requests (gptel-send, gptel-request and the packages
;; built on them) agent-q's tools:
;;
;;   (agent-q-gptel-mode 1)
;;
;; puts one gptel tool per enabled agent-q tool into `gptel-tools' and
;; into gptel's registry (`gptel--known-tools', so they appear in
;; gptel's menu under their first agent-q category), and keeps them in
;; sync when agent-q's registry changes.  `agent-q-gptel-tools' returns
;; the tool objects, for a `gptel-request' that names its own tools.
;;
;; Every call runs through `agent-q-execute-tool-calls-async': the
;; tools are `:async t', return at once and answer later, so gptel's
;; process filter is never blocked; safe calls run, dangerous ones wait
;; for agent-q's prompt or review, asked from the command loop.  gptel's
;; own confirmation is off for them (`:confirm' nil): agent-q decides.
;; A user who set `gptel-confirm-tool-calls' to t is asked by gptel
;; first, for every call, and by agent-q too for the calls that need it,
;; unless `agent-q-gptel-skip-gptel-confirmation' is set.
;;
;; Arguments.  gptel calls an async tool function as (FUNCTION
;; CALLBACK VALUE...), the values in the order of the tool's :args,
;; each looked up by name in the arguments gptel parsed from the
;; model's JSON (by `gptel--map-tool-args').  A left-out argument and a
;; JSON null both arrive as nil, so the values alone cannot say what
;; the model sent.  The tool call itself can: agent-q hands the
;; executor the very plist gptel parsed (keyword keys, :json-false for
;; false, vectors for arrays, plists for objects, a key with nil for a
;; null, no key for a left-out argument), which the executor validates
;; against the tool's schema.  Only when the call cannot be found (see
;; below) are the positional values used, a nil then taken as left out.
;;
;; The tool-call id.  gptel does not pass it to the tool function: the
;; id lives in the request's state, in the :tool-use entries of the
;; `gptel-fsm' that `gptel--handle-tool-use' walks, calling each tool's
;; function in turn, in the entries' order.  An :around advice on that
;; function binds the request being dispatched
;; (`agent-q-gptel--dispatching'); the tool function then claims its
;; call there (`agent-q-bridge--claim'): the first entry not yet
;; answered nor claimed whose name is the tool's and whose arguments,
;; mapped by gptel's own `gptel--map-tool-args', are `eq' -- the same
;; objects -- to the values it received.  Identity,
;; not equality, ties a call to its own entry; order settles the rest
;; (two calls of one tool whose values are all fixnums or nil are told
;; apart by going first to the first).  When gptel asks its own
;; confirmation first, it calls the function later, outside that
;; function: the requests seen dispatching are remembered
;; (`agent-q-gptel--requests') and searched the same way.  A call found
;; nowhere gets an id of its own, \"agent-q-gptel-N\".  The id goes to
;; the executor, so the audit log and the approval prompt name gptel's
;; id.
;;
;; Results.  A success sends agent-q's content (already capped by
;; `agent-q-max-result-chars').  A failure -- unknown or removed tool,
;; invalid arguments, denied, cancelled, the handler's error -- is sent
;; the way gptel sends a tool that failed: the text gptel makes of a
;; tool's error, \"error MESSAGE\" with agent-q's message, and the call
;; marked with :error t, which gptel's Anthropic backend sends as
;; is_error (OpenAI's tool messages have no such flag).
;;
;; Aborting.  Once the model's answer is in, gptel's request has no
;; process left, so `gptel-abort' alone would not stop a request whose
;; tools wait.  An advice on it withdraws agent-q's pending calls of
;; the request in that buffer (their prompts and reviews close, nothing
;; runs), drops their results, and ends the request as gptel-abort
;; would have (its callback is told `abort', the request moves to
;; ABRT): no follow-up is sent.  Killing the request's buffer withdraws
;; them too.
;;
;; gptel's internals.  gptel has no public way to learn a call's id, to
;; end a request that waits for its tools, or to remove a tool from its
;; menu, so the bridge uses four of gptel's internal names, listed in
;; `agent-q-gptel--internals' with why each is needed and what breaks
;; if gptel changes it.  Each is used in one function only, and
;; `agent-q-gptel--check-internals' runs before the bridge gives gptel
;; any tool and before each call: a gptel without one of them is a
;; clear error naming it, never a call run under a made-up id.
;; Everything else is gptel's public API (`gptel-make-tool', the
;; `gptel-tool' and `gptel-fsm' accessors, `gptel-tools',
;; `gptel-abort').

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'agent-q)
(require 'agent-q-bridge)

;; gptel is optional: nothing here loads it until it is needed.
(declare-function gptel-make-tool "gptel-request" (&rest slots))
(declare-function gptel--map-tool-args "gptel-request" (tool-spec args))
(declare-function gptel-tool-name "gptel-request" (tool))
(declare-function gptel-tool-category "gptel-request" (tool))
(declare-function gptel-fsm-info "gptel-request" (fsm))
(declare-function gptel-fsm-state "gptel-request" (fsm))
(declare-function gptel--fsm-transition "gptel-request" (machine &optional new-state))
(declare-function agent-q--cancel-all "agent-q-async" (pendings reason))
(declare-function agent-q--pending-batch "agent-q-async" (pending))

(defvar gptel-tools)
(defvar gptel--known-tools)
(defvar agent-q--pending)
(defvar agent-q-gptel-mode)

;;;; Options

(defgroup agent-q-gptel nil
  "The tools of agent-q in gptel."
  :group 'agent-q)

(defun agent-q-gptel--set-and-sync (symbol value)
  "Set SYMBOL to VALUE and bring gptel's tools in line with it."
  (set-default symbol value)
  (when (and (bound-and-true-p agent-q-gptel-mode) (featurep 'gptel-request))
    (agent-q-gptel--sync)))

(defcustom agent-q-gptel-max-safety-level nil
  "Most dangerous level of the tools `agent-q-gptel-mode' gives gptel.
nil means every level: safe, cautious and dangerous tools (the last
always run only after you approve them)."
  :type '(choice (const :tag "Every level" nil)
                 (const :tag "Safe only" :safe)
                 (const :tag "Safe and cautious" :cautious)
                 (const :tag "Safe, cautious and dangerous" :dangerous))
  :set #'agent-q-gptel--set-and-sync)

(defcustom agent-q-gptel-categories nil
  "Categories of the tools `agent-q-gptel-mode' gives gptel; nil means all.
A tool is given when it has at least one of them (keywords such as
:introspection, :buffer, :execution)."
  :type '(repeat (symbol :tag "Category keyword"))
  :set #'agent-q-gptel--set-and-sync)

(defcustom agent-q-gptel-skip-gptel-confirmation nil
  "Non-nil means gptel never asks its own confirmation for agent-q's tools.
agent-q's tools are made with `:confirm' nil, so gptel does not ask
about them unless `gptel-confirm-tool-calls' is t.  When it is t, gptel
asks about every call, agent-q's included (and agent-q asks again about
the calls its policy says need you).  Set this to make agent-q's
approval the only one for agent-q's tools even then."
  :type 'boolean)

;;;; State

(cl-defstruct (agent-q-gptel--call (:constructor agent-q-gptel--call-create)
                                   (:copier nil))
  "An agent-q call made for gptel and not yet answered.
FSM is gptel's request (nil when the call was not found in one),
TOOL-CALL its entry in the request's :tool-use, CALLBACK gptel's
callback, BATCH the executor's batch.  WITHDRAWN non-nil means the
request was aborted: the result is dropped."
  fsm tool-call callback batch withdrawn)

(defvar agent-q-gptel--live nil
  "The `agent-q-gptel--call's waiting for their result.")

(defvar agent-q-gptel--dispatching nil
  "The gptel request whose tool calls `gptel--handle-tool-use' is dispatching.")

(defvar agent-q-gptel--requests nil
  "The gptel requests seen dispatching tool calls not all run yet, oldest first.")

(defvar agent-q-gptel--claimed (make-hash-table :test 'eq :weakness 'key)
  "Tool-call entries of gptel requests already given to an agent-q call.")

(defvar agent-q-gptel--ours (make-hash-table :test 'eq :weakness 'key)
  "The gptel tool objects made by `agent-q-gptel-tools'.")

(defvar agent-q-gptel--counter 0
  "Counter of the ids given to calls not found in a gptel request.")

;;;; gptel's internals

(defconst agent-q-gptel--internals
  '((gptel--handle-tool-use
     function
     "gptel dispatches a request's tool calls in it; an :around advice binds the request,
whose :tool-use entries hold the calls' ids (`agent-q-gptel--around-handle-tool-use').
Without it no call would find its id, and the audit log and the prompt would name
made-up ids.")
    (gptel--map-tool-args
     function
     "gptel turns a call's parsed arguments into the values a tool function gets; the
bridge maps each entry the same way to find the one whose values are the very
objects it got (`agent-q-gptel--claim').  A gptel that maps differently or
renames it would leave calls unmatched.")
    (gptel--fsm-transition
     function
     "A request whose tools wait has no process left, so `gptel-abort' alone does not
end it; the bridge moves it to ABRT as `gptel-abort' does (`agent-q-gptel--end-request').
Without it an aborted request would send its follow-up.")
    (gptel--known-tools
     variable
     "gptel's tool registry (its menu): `agent-q-gptel-mode' adds and removes its tools
there (`agent-q-gptel--known-add', `agent-q-gptel--known-remove'), and
`agent-q-gptel-tools' binds it around `gptel-make-tool', which would register.
gptel has no function that removes a tool."))
  "The internal names of gptel the bridge needs, as (SYMBOL KIND WHY).
KIND is `function' or `variable'; WHY says what the bridge does with
it and what breaks if gptel changes it.  `agent-q-gptel--check-internals'
signals an error naming the ones missing.")

(defun agent-q-gptel--check-internals ()
  "Signal an error naming the gptel internals the bridge needs and gptel lacks.
See `agent-q-gptel--internals'."
  (let ((missing (cl-loop for (symbol kind) in agent-q-gptel--internals
                          unless (if (eq kind 'function) (fboundp symbol) (boundp symbol))
                          collect (format-message "`%s' (%s)" symbol kind))))
    (when missing
      (error "Agent-q-gptel: this gptel has no %s, which the agent-q gptel bridge needs (see `agent-q-gptel--internals'); use a gptel that has it, or update agent-q"
             (mapconcat #'identity missing ", ")))))

(defun agent-q-gptel--make-unregistered-tool (&rest slots)
  "A gptel tool made by `gptel-make-tool' from SLOTS, left out of gptel's menu.
`gptel-make-tool' adds every tool to `gptel--known-tools'; the
binding keeps it there only when `agent-q-gptel-mode' puts it there."
  (let ((gptel--known-tools nil))
    (apply #'gptel-make-tool slots)))

(defun agent-q-gptel--map-args (spec args)
  "The values gptel hands the tool SPEC for a call whose arguments are ARGS."
  (gptel--map-tool-args spec args))

(defun agent-q-gptel--end-request (fsm)
  "Move the gptel request FSM to ABRT, as `gptel-abort' ends a request."
  (gptel--fsm-transition fsm 'ABRT))

;;;; Tools

(defun agent-q-gptel--require ()
  "Load gptel's request library, or signal a user error.
Signal an error when it lacks an internal the bridge needs."
  (unless (require 'gptel-request nil t)
    (user-error "Agent-q-gptel: gptel is not installed (it is on NonGNU ELPA and MELPA)"))
  (agent-q-gptel--check-internals))

(defun agent-q-gptel--name (keyword)
  "The name of KEYWORD without its colon."
  (string-remove-prefix ":" (symbol-name keyword)))

(defun agent-q-gptel--args (tool)
  "The gptel :args for the agent-q TOOL: one plist per property of its schema.
Each is the property's JSON Schema (a fresh copy: gptel changes what
it is given) with :name and, unless required, :optional t."
  (let ((required (agent-q-tool-required tool)))
    (cl-loop for (key schema) on (plist-get (agent-q-tool-parameters tool) :properties)
             by #'cddr
             for name = (agent-q-gptel--name key)
             collect (append (list :name name)
                             (and (consp schema) (copy-tree schema t))
                             (unless (member name required) (list :optional t))))))

(cl-defun agent-q-gptel-tools (&key max-safety-level categories registry)
  "Return agent-q's enabled tools as gptel tool objects.
One per tool of REGISTRY (default: the global one), filtered as by
`agent-q-get-tools' with MAX-SAFETY-LEVEL and CATEGORIES.  Each is
asynchronous, runs through `agent-q-execute-tool-calls-async' (agent-q's
approval and review decide; gptel's own confirmation is off), and has
its first agent-q category as gptel category.  They are not added to
gptel's registry: `agent-q-gptel-mode' does that.  Give them to
`gptel-request' through `gptel-tools':

  (let ((gptel-tools (agent-q-gptel-tools :max-safety-level :safe)))
    (gptel-request \"Which Emacs is this?\" :callback ...))"
  (agent-q-gptel--require)
  (agent-q-gptel--install-advice)
  (mapcar (lambda (tool) (agent-q-gptel--tool tool registry))
          (agent-q-get-tools :max-safety-level max-safety-level
                             :categories categories :registry registry)))

(defun agent-q-gptel--tool (tool registry)
  "A gptel tool object running the agent-q TOOL of REGISTRY."
  (let* ((name (agent-q-tool-name tool))
         (args (agent-q-gptel--args tool))
         (arg-names (mapcar (lambda (arg) (plist-get arg :name)) args))
         (category (car (agent-q-tool-categories tool)))
         (object (agent-q-gptel--make-unregistered-tool
                  :name name
                  :description (agent-q-tool-description tool)
                  :args args
                  :async t
                  :confirm nil
                  :category (if category (agent-q-gptel--name category) "agent-q")
                  :function (lambda (callback &rest values)
                              (agent-q-gptel--run name arg-names values callback registry)))))
    (puthash object t agent-q-gptel--ours)
    object))

;;;; Finding the call in gptel's request

(defun agent-q-gptel--spec (fsm name)
  "Return the tool named NAME in FSM's request (the one gptel would run), or nil."
  (cl-find name (plist-get (gptel-fsm-info fsm) :tools)
           :key #'gptel-tool-name :test #'equal))

(defun agent-q-gptel--claim (name values)
  "Find and claim the tool call NAME with VALUES; return (FSM . CALL) or nil.
The request being dispatched is searched first, then the requests
seen earlier, oldest first; a call's values are those gptel hands
the tool (see `agent-q-bridge--claim')."
  (cl-loop for fsm in (if agent-q-gptel--dispatching
                          (cons agent-q-gptel--dispatching
                                (remq agent-q-gptel--dispatching agent-q-gptel--requests))
                        agent-q-gptel--requests)
           for spec = (agent-q-gptel--spec fsm name)
           for call = (and spec
                           (agent-q-bridge--claim
                            (plist-get (gptel-fsm-info fsm) :tool-use)
                            agent-q-gptel--claimed values
                            :candidate-p (lambda (call)
                                           (and (equal (plist-get call :name) name)
                                                (not (plist-get call :result))
                                                (listp (plist-get call :args))))
                            :values-of (lambda (call)
                                         (agent-q-gptel--map-args spec (plist-get call :args)))))
           when call
           return (cons fsm call)))

(defun agent-q-gptel--open-p (fsm)
  "Non-nil when FSM still has a tool call neither answered nor claimed."
  (cl-some (lambda (call) (not (or (plist-get call :result)
                                   (gethash call agent-q-gptel--claimed))))
           (plist-get (gptel-fsm-info fsm) :tool-use)))

(defun agent-q-gptel--around-handle-tool-use (function fsm &rest args)
  "Call FUNCTION (`gptel--handle-tool-use') with FSM and ARGS.
Binds the request being dispatched, so that agent-q's tool functions
find their call and its id; remembers it for calls gptel makes later."
  (setq agent-q-gptel--requests
        (append (cl-remove-if-not #'agent-q-gptel--open-p (remq fsm agent-q-gptel--requests))
                (list fsm)))
  (when agent-q-gptel-skip-gptel-confirmation
    (agent-q-gptel--unconfirm fsm))
  (let ((agent-q-gptel--dispatching fsm))
    (apply function fsm args)))

(defun agent-q-gptel--unconfirm (fsm)
  "Mark each call of an agent-q tool in FSM as needing no gptel confirmation.
gptel lets a call's :confirm override `gptel-confirm-tool-calls'."
  (let ((info (gptel-fsm-info fsm)))
    (dolist (call (plist-get info :tool-use))
      (let ((spec (agent-q-gptel--spec fsm (plist-get call :name))))
        (when (and spec (gethash spec agent-q-gptel--ours)
                   (not (plist-member call :confirm)))
          (plist-put call :confirm nil))))))

;;;; Running a call

(defun agent-q-gptel--positional-arguments (arg-names values)
  "The arguments plist of VALUES, named by ARG-NAMES; nil values left out."
  (cl-loop for name in arg-names
           for value in values
           unless (null value)
           append (list (intern (concat ":" name)) value)))

(defun agent-q-gptel--run (name arg-names values callback registry)
  "Run agent-q's tool NAME for gptel, answering CALLBACK later.
VALUES are the values gptel passed, in the order of ARG-NAMES.
REGISTRY is agent-q's registry.  Never signals: CALLBACK is called
exactly once, from a timer, with the result's text."
  (let* ((internals (condition-case err
                         (progn (agent-q-gptel--check-internals) nil)
                       (error (error-message-string err))))
         (found (and (null internals) (agent-q-gptel--claim name values)))
         (call (cdr found))
         (id (or (and call (plist-get call :id))
                 (format "agent-q-gptel-%d" (cl-incf agent-q-gptel--counter))))
         (arguments (if call
                        (plist-get call :args)
                      (agent-q-gptel--positional-arguments arg-names values)))
         (record (agent-q-gptel--call-create :fsm (car found) :tool-call call
                                             :callback callback)))
    (push record agent-q-gptel--live)
    (condition-case err
        (let ((agent-q-client "gptel"))
          (when internals (error "%s" internals))
          (setf (agent-q-gptel--call-batch record)
                (agent-q-execute-tool-calls-async
                 (list (list :id id :name name :arguments arguments))
                 (lambda (results) (agent-q-gptel--deliver record (car results)))
                 registry)))
      (error
       (let ((message (format "agent-q could not run %s: %s" name (error-message-string err))))
         (run-at-time 0 nil #'agent-q-gptel--deliver record
                      (list :id id :success nil :content message :error message)))))
    nil))

(defun agent-q-gptel--result-text (result)
  "The text gptel sends the model for agent-q's RESULT.
A failure reads as gptel's text for a tool that failed, \"error MESSAGE\"."
  (let ((content (or (plist-get result :content) "")))
    (if (plist-get result :success)
        content
      (concat "error " content))))

(defun agent-q-gptel--deliver (record result)
  "Give RESULT to gptel for RECORD, unless its request was aborted."
  (setq agent-q-gptel--live (delq record agent-q-gptel--live))
  (unless (agent-q-gptel--call-withdrawn record)
    (let ((call (agent-q-gptel--call-tool-call record)))
      (when (and call (not (plist-get result :success)))
        (plist-put call :error t))
      (funcall (agent-q-gptel--call-callback record)
               (agent-q-gptel--result-text result)))))

;;;; Aborting

(defun agent-q-gptel--withdraw (records reason &optional end-requests)
  "Withdraw RECORDS with REASON: close what asks the user, drop the results.
With END-REQUESTS, end each of their gptel requests still waiting
for tools as `gptel-abort' ends a request.  The executor's calls are
cancelled last: cancelling the call being asked leaves its prompt,
and any code that runs inside it."
  (dolist (record records)
    (setf (agent-q-gptel--call-withdrawn record) t)
    (setq agent-q-gptel--live (delq record agent-q-gptel--live)))
  (when end-requests
    (dolist (fsm (delete-dups (delq nil (mapcar #'agent-q-gptel--call-fsm records))))
      (setq agent-q-gptel--requests (delq fsm agent-q-gptel--requests))
      (when (eq (gptel-fsm-state fsm) 'TOOL)
        (let ((info (gptel-fsm-info fsm)))
          (with-demoted-errors "agent-q-gptel: gptel's callback failed on abort: %S"
            (let ((callback (plist-get info :callback)))
              (when (functionp callback)
                (funcall callback 'abort info))))
          (agent-q-gptel--end-request fsm)))))
  (let ((batches (delq nil (mapcar #'agent-q-gptel--call-batch records))))
    (agent-q--cancel-all (cl-remove-if-not (lambda (pending)
                                             (memq (agent-q--pending-batch pending) batches))
                                           agent-q--pending)
                         reason)))

(defun agent-q-gptel--records-of-buffer (buffer)
  "The records waiting for a result whose gptel request belongs to BUFFER."
  (cl-remove-if-not (lambda (record)
                      (let ((fsm (agent-q-gptel--call-fsm record)))
                        (and fsm (eq (plist-get (gptel-fsm-info fsm) :buffer) buffer))))
                    agent-q-gptel--live))

(defun agent-q-gptel--around-abort (function buffer &rest args)
  "Call FUNCTION (`gptel-abort') with BUFFER and ARGS; withdraw agent-q's work.
The calls waiting for the user or a review in BUFFER's requests are
withdrawn, and those requests end."
  (let ((records (agent-q-gptel--records-of-buffer buffer)))
    (prog1 (apply function buffer args)
      (when records
        (message "agent-q: gptel request aborted; %d pending tool call%s withdrawn"
                 (length records) (if (cdr records) "s" ""))
        (agent-q-gptel--withdraw records "the user aborted the gptel request" t)))))

(defun agent-q-gptel--kill-buffer ()
  "Withdraw what the gptel requests of the buffer being killed wait for."
  (when agent-q-gptel--live
    (let ((records (agent-q-gptel--records-of-buffer (current-buffer))))
      (when records
        (agent-q-gptel--withdraw records "the gptel request's buffer was killed")))))

(defun agent-q-gptel--install-advice ()
  "Install the advice and hook the bridge needs (idempotent)."
  (advice-add 'gptel--handle-tool-use :around #'agent-q-gptel--around-handle-tool-use)
  (advice-add 'gptel-abort :around #'agent-q-gptel--around-abort)
  (add-hook 'kill-buffer-hook #'agent-q-gptel--kill-buffer))

;;;; The global minor mode

(defvar agent-q-gptel--installed nil
  "The tool objects `agent-q-gptel-mode' put into gptel, by name.
An alist (NAME . TOOL).")

(defvar agent-q-gptel--created-categories nil
  "Categories of `gptel--known-tools' that `agent-q-gptel-mode' created.")

(defun agent-q-gptel--known-remove (tool)
  "Remove TOOL from `gptel--known-tools' if there; drop a category we emptied."
  (let* ((category (gptel-tool-category tool))
         (entry (assoc category gptel--known-tools)))
    (when (and entry (eq (cdr (assoc (gptel-tool-name tool) (cdr entry))) tool))
      (setcdr entry (cl-remove-if (lambda (pair) (eq (cdr pair) tool)) (cdr entry)))
      (when (and (null (cdr entry)) (member category agent-q-gptel--created-categories))
        (setq gptel--known-tools (delq entry gptel--known-tools)
              agent-q-gptel--created-categories
              (delete category agent-q-gptel--created-categories))))))

(defun agent-q-gptel--known-add (tool)
  "Add TOOL to `gptel--known-tools' unless a tool of the user is in its place."
  (let* ((category (gptel-tool-category tool))
         (entry (assoc category gptel--known-tools))
         (holder (and entry (cdr (assoc (gptel-tool-name tool) (cdr entry))))))
    (cond
     ((null entry)
      (push category agent-q-gptel--created-categories)
      (setq gptel--known-tools (append gptel--known-tools
                                       (list (list category (cons (gptel-tool-name tool) tool))))))
     ((or (null holder) (gethash holder agent-q-gptel--ours))
      (setcdr entry (append (cl-remove (gptel-tool-name tool) (cdr entry) :key #'car :test #'equal)
                            (list (cons (gptel-tool-name tool) tool)))))
     (t (message "agent-q-gptel: gptel already has a tool %s in %s; agent-q's is not added to the menu"
                 (gptel-tool-name tool) category)))))

(defun agent-q-gptel--replace-in (tools old new add-new)
  "TOOLS with agent-q's OLD tools replaced by the NEW ones of the same name.
OLD and NEW are alists (NAME . TOOL).  OLD tools without a new
version are dropped.  With ADD-NEW, NEW tools whose names OLD did not
have are appended, unless TOOLS has another tool of that name."
  (let* ((result (delq nil (mapcar (lambda (tool)
                                     (if (rassq tool old)
                                         (cdr (assoc (car (rassq tool old)) new))
                                       tool))
                                   tools))))
    (when add-new
      (dolist (pair new)
        (unless (or (assoc (car pair) old)
                    (cl-find (car pair) result :key #'gptel-tool-name :test #'equal))
          (setq result (append result (list (cdr pair)))))))
    result))

(defun agent-q-gptel--update-tool-lists (old new)
  "Replace agent-q's OLD tools by NEW in every value of `gptel-tools'.
The default value also gets the tools new to the registry; a
buffer-local value (a buffer where you chose tools) only keeps its
choice up to date."
  (set-default 'gptel-tools (agent-q-gptel--replace-in (default-value 'gptel-tools) old new t))
  (dolist (buffer (buffer-list))
    (when (local-variable-p 'gptel-tools buffer)
      (with-current-buffer buffer
        (when (cl-some (lambda (tool) (rassq tool old)) gptel-tools)
          (setq gptel-tools (agent-q-gptel--replace-in gptel-tools old new nil)))))))

(defun agent-q-gptel--sync ()
  "Make gptel's tool lists and registry hold agent-q's current tools."
  (let* ((old agent-q-gptel--installed)
         (new (mapcar (lambda (tool) (cons (gptel-tool-name tool) tool))
                      (agent-q-gptel-tools :max-safety-level agent-q-gptel-max-safety-level
                                           :categories agent-q-gptel-categories))))
    (dolist (pair old) (agent-q-gptel--known-remove (cdr pair)))
    (dolist (pair new) (agent-q-gptel--known-add (cdr pair)))
    (agent-q-gptel--update-tool-lists old new)
    (setq agent-q-gptel--installed new)))

(defun agent-q-gptel--uninstall ()
  "Remove from gptel exactly what `agent-q-gptel-mode' added."
  (when (featurep 'gptel-request)
    (let ((old agent-q-gptel--installed))
      (dolist (pair old) (agent-q-gptel--known-remove (cdr pair)))
      (agent-q-gptel--update-tool-lists old nil)))
  (setq agent-q-gptel--installed nil))

(defun agent-q-gptel--registry-changed (registry)
  "Bring gptel's tools in line after the global registry changed.
REGISTRY is the registry that changed; only the global one (nil) counts."
  (when (and (null registry) agent-q-gptel-mode (featurep 'gptel-request))
    (agent-q-gptel--sync)))

(defun agent-q-gptel--start ()
  "Give gptel agent-q's tools, if the mode is still on."
  (when agent-q-gptel-mode
    (agent-q-gptel--sync)))

;;;###autoload
(define-minor-mode agent-q-gptel-mode
  "Give gptel's requests agent-q's tools.
When on, every enabled agent-q tool (see `agent-q-gptel-max-safety-level'
and `agent-q-gptel-categories') is in `gptel-tools' and in gptel's tool
menu, kept in sync as tools are registered, removed, enabled or
disabled.  Dangerous calls wait for your approval (agent-q's prompt,
or the review of `propose_file_edit'), asked one at a time without
blocking gptel.  Turning the mode off removes exactly the tools it
added.  If gptel is not loaded yet, the tools are added when it is."
  :global t
  :group 'agent-q-gptel
  (if agent-q-gptel-mode
      (progn
        (add-hook 'agent-q-registry-change-functions #'agent-q-gptel--registry-changed)
        (if (featurep 'gptel-request)
            (agent-q-gptel--start)
          (unless (locate-library "gptel-request")
            (message "agent-q-gptel-mode: gptel is not installed; its tools come when it is loaded"))
          (with-eval-after-load 'gptel-request (agent-q-gptel--start))))
    (remove-hook 'agent-q-registry-change-functions #'agent-q-gptel--registry-changed)
    (agent-q-gptel--uninstall)))

(defun agent-q-gptel-unload-function ()
  "Undo what loading agent-q-gptel did, for `unload-feature'."
  (agent-q-gptel-mode -1)
  (advice-remove 'gptel--handle-tool-use #'agent-q-gptel--around-handle-tool-use)
  (advice-remove 'gptel-abort #'agent-q-gptel--around-abort)
  (remove-hook 'kill-buffer-hook #'agent-q-gptel--kill-buffer)
  nil)

(provide 'agent-q-gptel)

;;; agent-q-gptel.el ends here
