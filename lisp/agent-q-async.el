;;; agent-q-async.el --- agent-q's asynchronous executor and pending decisions  -*- lexical-binding: t -*-

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

;; `agent-q-execute-tool-calls-async' runs a batch of tool calls without
;; blocking its caller, which is typically a process filter or a timer
;; of an LLM client (gptel, llm.el, the MCP server), where Emacs binds
;; `inhibit-quit' and a prompt or a recursive edit must not run.
;;
;; The policy is the module's, the same as for the synchronous
;; `agent-q-execute-tool-calls': the executor's steps (validated ->
;; guard -> awaiting approval -> running -> done) run in Rust, which
;; returns to Lisp only what must be waited for:
;;
;; - a decision: queued here, and asked one at a time, in order, from
;;   a zero-delay timer (so from the command loop, never inside the
;;   caller's stack), with C-g at the prompt denying that call;
;; - an asynchronous handler (the review of propose_file_edit): started
;;   from the same queue; its review buffer stays open, non-modal, and
;;   finishing it completes the call.
;;
;; Everything else (guards, synchronous handlers) runs at once.  The
;; mode line shows how many decisions are pending (`agent-q-pending'
;; lists them), and `agent-q-cancel-pending' withdraws them: prompts and
;; reviews close, nothing runs, and the results say the calls were
;; cancelled.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'tabulated-list)

(declare-function agent-q--core-call-start "agent-q-core" (registry call options))
(declare-function agent-q--core-batch-length "agent-q-core" (calls))
(declare-function agent-q--core-failure "agent-q-core" (call message))
(declare-function agent-q--core-call-decide "agent-q-core" (pending decision))
(declare-function agent-q--core-call-finish "agent-q-core" (pending status value))
(declare-function agent-q--core-call-cancel "agent-q-core" (pending reason))
(declare-function agent-q--core-call-reviewed "agent-q-core" (pending accepted edited rejected))
(declare-function agent-q--core-call-time-out "agent-q-core" (pending seconds))
(declare-function agent-q--core-channel-open "agent-q-core" (process))
(declare-function agent-q--core-channel-close "agent-q-core" ())
(declare-function agent-q--core-channel-drained "agent-q-core" ())
(declare-function agent-q--approval-call "agent-q" (tool-name args context))
(declare-function agent-q--unasked-decision "agent-q" (tool-name args context))
(declare-function agent-q--trusted-unasked "agent-q" (tool-name args context))
(declare-function agent-q--batch-options "agent-q" (client confirm audit-all))
(declare-function agent-q--error-message "agent-q" (condition))
(declare-function agent-q--visible "agent-q-prompt" (text))

(defvar agent-q-approval-idle-delay)
(defvar agent-q-confirm-safety-levels)
(defvar agent-q-client)
(defvar agent-q-call-context)
(defvar agent-q-guard--run)
(defvar agent-q-call-workspace)

;;;; Options

(defcustom agent-q-mode-line-indicator t
  "Non-nil means show the number of pending agent-q decisions in the mode line."
  :type 'boolean
  :group 'agent-q)

;;;; State

(cl-defstruct (agent-q--batch (:constructor agent-q--batch-create)
                              (:copier nil))
  "A batch of tool calls run asynchronously.
WORKSPACE is bound to `agent-q-call-workspace' while its calls run."
  results remaining callback done workspace)

(cl-defstruct (agent-q--pending (:constructor agent-q--pending-create)
                                (:copier nil))
  "A tool call of a batch that waits: for a decision, or for its handler.
CORE is the module's pending call.  STATE is `queued' (waiting for its
turn to be asked), `deferred' (the user said \"later\"), `asking' (its
prompt is shown), `running' (its asynchronous handler, e.g. a review,
is under way) or `done'.  REVIEW non-nil means its handler is an
interactive review, which the queue waits for as for a prompt.
CANCEL-FUNCTIONS are called if the call is withdrawn while running.
DEFERRED is when the user last deferred it with \"l\", or nil."
  core batch index tool args context state review cancel-functions
  (time (current-time)) deferred)

(defvar agent-q--indicator-timer)

(defvar agent-q--pending nil
  "Calls waiting for a decision or for their handler, oldest first.")

(defvar agent-q--asking nil
  "The pending call whose prompt or review is shown, or nil.")

(defvar agent-q--queue-timer nil
  "The timer that will ask the next queued decision, or nil.")

(defvar agent-q--starting nil
  "The pending call whose asynchronous handler is being started, or nil.")

;;;; The channel from the module's threads

(defvar agent-q--channel nil
  "The pipe process through which the module's threads wake Emacs, or nil.")

(defvar agent-q--channel-drain-functions nil
  "Functions called, without arguments, when the module's threads wake Emacs.
Each takes what its queue holds (requests to the MCP server or the IDE
companion, finished cross-reference scans...) and acts on it, on Emacs's
main thread.")

(defun agent-q--channel-filter (_process _output)
  "Drain the module's queues: a thread has woken Emacs."
  (agent-q--core-channel-drained)
  (dolist (drain agent-q--channel-drain-functions)
    (condition-case err
        (funcall drain)
      (error (message "agent-q: %s failed: %s" drain (agent-q--error-message err))))))

(defun agent-q--ensure-channel ()
  "Open the channel from the module's threads to Emacs, if it is not open."
  (unless (process-live-p agent-q--channel)
    ;; A wake-up is one byte: with adaptive read buffering, Emacs takes a
    ;; run of such short reads for a slow producer and waits up to 50 ms
    ;; before it reads the pipe again, so every MCP call would wait that long.
    (let ((process-adaptive-read-buffering nil))
      (setq agent-q--channel
            (make-pipe-process :name "agent-q-channel" :buffer nil :noquery t
                               :coding 'binary :filter #'agent-q--channel-filter)))
    (agent-q--core-channel-open agent-q--channel)
    (add-hook 'kill-emacs-hook #'agent-q--close-channel)))

(defun agent-q--close-channel ()
  "Close the channel from the module's threads."
  (when agent-q--channel
    (agent-q--core-channel-close)
    (when (process-live-p agent-q--channel)
      (delete-process agent-q--channel))
    (setq agent-q--channel nil)))

;;;; Running a batch

(defun agent-q-execute-tool-calls-async (calls callback &optional registry)
  "Execute a list of tool-call plists against REGISTRY; return at once.
CALLS holds them, as for `agent-q-execute-tool-calls'.
CALLBACK is called with the list of results, in the calls' order, when
all are done -- always later, from a timer, never before this function
returns.

Safe and cautious calls run at once.  A call that needs a decision
\(a dangerous tool, a level in `agent-q-confirm-safety-levels', or a
guard's reason) waits in a queue: decisions are asked one at a time, in
order, from the command loop, so this is safe to call from a process
filter or a timer.  `agent-q-client', when bound, names the client in
the prompts and the audit log.  See `agent-q-pending' and
`agent-q-cancel-pending'."
  (agent-q--execute-async calls callback registry
                          :client agent-q-client
                          :confirm agent-q-confirm-safety-levels))

(cl-defun agent-q--execute-async (calls callback registry &key client confirm audit-all workspace)
  "Start a batch of tool-call plists against REGISTRY; return the batch.
The list CALLS holds them; CALLBACK gets the results.
CLIENT, CONFIRM (the safety levels to confirm besides :dangerous) and
AUDIT-ALL are the executor's options for this batch.  WORKSPACE, when
non-nil, is the calls' `agent-q-call-workspace': their guards and
handlers run with it, whichever buffer is current then.  Return the
batch."
  ;; Starting each call is synchronous: the module bounds a batch as it
  ;; does for the synchronous driver, and refuses an improper list.
  (let* ((length (agent-q--core-batch-length calls))
         (options (agent-q--batch-options client confirm audit-all))
         (batch (agent-q--batch-create :results (make-vector length nil)
                                       :remaining length
                                       :callback callback
                                       :workspace workspace))
         (agent-q-call-workspace workspace))
    ;; A handler may finish on worker threads (the cross-reference scans),
    ;; whose results come back through the channel.
    (agent-q--ensure-channel)
    (cl-loop for call in calls
             for index from 0
             do (agent-q--handle-step
                 batch index
                 (condition-case err
                     ;; A token for this call: its handler may trust what its
                     ;; guard has just found (`agent-q-guard--cleared-p').
                     (let ((agent-q-guard--run (list index)))
                       (agent-q--core-call-start registry call options))
                   (error (list :done (agent-q--core-failure
                                       call (agent-q--error-message err)))))))
    (agent-q--maybe-finish-batch batch)
    batch))

(defun agent-q--handle-step (batch index step &optional pending)
  "Act on STEP, the module's answer for call INDEX of BATCH.
PENDING is the call's pending record when it already has one."
  (pcase step
    (`(:done ,result)
     (when pending
       (setf (agent-q--pending-state pending) 'done)
       (agent-q--forget pending))
     (agent-q--store batch index result))
    (`(:ask ,core ,context ,args)
     (let ((decision (if (plist-get context :optional)
                         (agent-q--unasked-decision (plist-get context :tool) args context)
                       ;; A trust decides at once, never behind a prompt.
                       (agent-q--trusted-unasked (plist-get context :tool) args context))))
       (if decision
           ;; A call that needs no decision, which no rule asks about: decided
           ;; now, never queued behind a prompt or a timer.
           (agent-q--handle-step batch index
                                 (condition-case err
                                     (agent-q--core-call-decide core decision)
                                   (error (list :done (agent-q--core-failure
                                                       nil (agent-q--error-message err)))))
                                 pending)
         (agent-q--queue-ask batch index core context args pending))))
    (`(:run ,core ,handler ,table ,context)
     (let ((pending (or pending
                        ;; Not asked: its client and arguments, for the pending list.
                        (agent-q--pending-create :core core :batch batch :index index
                                                 :tool (plist-get context :tool)
                                                 :context context
                                                 :args (agent-q--table-plist table)))))
       (setf (agent-q--pending-core pending) core
             (agent-q--pending-state pending) 'running)
       (unless (memq pending agent-q--pending)
         (setq agent-q--pending (append agent-q--pending (list pending))))
       (agent-q--start-handler pending handler table context)))
    (_ (agent-q--store batch index
                       (agent-q--core-failure
                        nil (format "agent-q: unexpected executor step %S" (car-safe step)))))))

(defun agent-q--table-plist (table)
  "The arguments in the hash TABLE as a plist, for display; nil if not a table."
  (when (hash-table-p table)
    (let ((plist nil))
      (maphash (lambda (key value)
                 (push (if (stringp key) (intern (concat ":" key)) key) plist)
                 (push value plist))
               table)
      (nreverse plist))))

(defun agent-q--queue-ask (batch index core context args pending)
  "Queue call INDEX of BATCH, the module's pending CORE, for a decision.
CONTEXT and ARGS are those of its `:ask' step; PENDING is the call's
pending record when it already has one."
  (let ((pending (or pending
                     (agent-q--pending-create :core core :batch batch :index index))))
    (setf (agent-q--pending-core pending) core
          (agent-q--pending-tool pending) (plist-get context :tool)
          (agent-q--pending-args pending) args
          (agent-q--pending-context pending) context
          (agent-q--pending-state pending) 'queued)
    (unless (memq pending agent-q--pending)
      (setq agent-q--pending (append agent-q--pending (list pending))))
    (agent-q--update-indicator)
    (agent-q--schedule)))

(defun agent-q--store (batch index result)
  "Store RESULT as the result of call INDEX of BATCH."
  (let ((results (agent-q--batch-results batch)))
    (unless (aref results index)
      (aset results index result)
      (cl-decf (agent-q--batch-remaining batch))
      (agent-q--maybe-finish-batch batch))))

(defun agent-q--maybe-finish-batch (batch)
  "Give BATCH's results to its callback, from a timer, once all are in."
  (when (and (zerop (agent-q--batch-remaining batch))
             (not (agent-q--batch-done batch)))
    (setf (agent-q--batch-done batch) t)
    (run-at-time 0 nil #'agent-q--deliver batch)))

(defun agent-q--deliver (batch)
  "Give BATCH's results to its callback; report an error in it, never raise it."
  (condition-case err
      (funcall (agent-q--batch-callback batch)
               (append (agent-q--batch-results batch) nil))
    (error (message "agent-q: the callback of an asynchronous batch failed: %s"
                    (agent-q--error-message err)))))

(defun agent-q--forget (pending)
  "Remove PENDING from `agent-q--pending'."
  (setq agent-q--pending (delq pending agent-q--pending))
  (when (eq agent-q--asking pending)
    (setq agent-q--asking nil))
  (agent-q--update-indicator)
  (agent-q--schedule))

;;;; Asynchronous handlers

(defun agent-q-async-starting-p ()
  "Return non-nil while the asynchronous executor is starting a handler.
A handler that can work off Emacs's main thread does so then, and
answers its callback later; under the synchronous executor it works at
once (its caller waits anyway)."
  (and agent-q--starting t))

(defun agent-q-when-cancelled (function)
  "Call FUNCTION if the tool call whose handler is starting is withdrawn.
An asynchronous handler calls this while it starts, to close what it
opened (a review buffer, a process) when the call is cancelled before
it answered.  Outside an asynchronous start, this does nothing."
  (when agent-q--starting
    (push function (agent-q--pending-cancel-functions agent-q--starting))))

(defun agent-q--start-handler (pending handler table context)
  "Start the asynchronous HANDLER of PENDING with TABLE in CONTEXT.
A handler whose call is the review of its own changes holds the queue
until it answers, like a prompt."
  (let* ((answered nil)
         (callback
          (lambda (value &optional status review)
            (unless answered
              (setq answered t)
              (agent-q--finish-handler pending value status review)))))
    (when (or (plist-get (agent-q--pending-context pending) :review)
              ;; Not asked: the review is its approval.
              (equal (plist-get context :decision) "review"))
      (setf (agent-q--pending-review pending) t)
      (unless agent-q--asking
        (setq agent-q--asking pending)))
    (agent-q--update-indicator)
    (condition-case err
        (let ((agent-q-call-context context)
              (agent-q--starting pending)
              (print-circle nil))
          (funcall handler callback table))
      (error (funcall callback (agent-q--error-message err) :error)))))

(defun agent-q--finish-handler (pending value status &optional review)
  "Finish PENDING, whose handler answered VALUE with STATUS.
REVIEW, when the handler's review decided, is the plist of
`agent-q-review-hunks': the audit says which hunks."
  (when (and review (not (eq (agent-q--pending-state pending) 'done)))
    (condition-case err
        (agent-q--core-call-reviewed (agent-q--pending-core pending)
                                     (plist-get review :accepted)
                                     (plist-get review :edited)
                                     (plist-get review :rejected))
      (agent-q-error
       (message "agent-q: cannot record the review's hunks: %s" (agent-q--error-message err)))))
  (let ((step (condition-case nil
                  (agent-q--core-call-finish (agent-q--pending-core pending) status value)
                ;; Already cancelled: the late answer is dropped.
                (agent-q-error nil))))
    (when step
      (agent-q--handle-step (agent-q--pending-batch pending)
                            (agent-q--pending-index pending)
                            step pending))))

;;;; Asking, one decision at a time

(defvar agent-q--last-command-time 0.0
  "When the user's last command ended, as a float time.
Kept by `agent-q--note-command' on `post-command-hook'.")

(defun agent-q--note-command ()
  "Record that a command has just run (see `agent-q--last-command-time')."
  (setq agent-q--last-command-time (float-time)))

(add-hook 'post-command-hook #'agent-q--note-command)

(defun agent-q--schedule ()
  "Make sure the next queued decision is asked from the command loop.
It is asked once no command has run for `agent-q-approval-idle-delay'
seconds (at once in batch mode, where nobody types), and not while the
user is busy (see `agent-q--user-busy-p').  The quiet is measured from
the last command, not with an idle timer: a key read by a prompt runs
no command, so Emacs's idle period may have begun long before, and an
idle timer set then would wait for the next one -- for a key."
  (when (and (not agent-q--asking)
             (not agent-q--queue-timer)
             (cl-find 'queued agent-q--pending :key #'agent-q--pending-state))
    (setq agent-q--queue-timer
          (if noninteractive
              (run-at-time 0 nil #'agent-q--ask-next)
            (run-at-time (max 0 (- agent-q-approval-idle-delay
                                   (- (float-time) agent-q--last-command-time)))
                         nil #'agent-q--ask-when-quiet)))))

(defun agent-q--ask-when-quiet ()
  "Ask the next queued decision if no command ran for a while; else wait on."
  (setq agent-q--queue-timer nil)
  (if (< (- (float-time) agent-q--last-command-time) agent-q-approval-idle-delay)
      (agent-q--schedule)
    (agent-q--ask-next)))

(defun agent-q--user-busy-p ()
  "Non-nil when a prompt now would take keys the user meant for something else.
That is while the minibuffer is active, a key sequence or a prefix
argument is half typed, input waits to be read, or a keyboard macro is
being defined or run."
  (or (> (minibuffer-depth) 0)
      (active-minibuffer-window)
      (> (length (this-single-command-keys)) 0)
      prefix-arg
      (input-pending-p)
      defining-kbd-macro
      executing-kbd-macro))

(defun agent-q--resume-asking ()
  "Ask the queued decisions again, once the user's command has run.
See `agent-q--ask-next'."
  (remove-hook 'post-command-hook #'agent-q--resume-asking)
  (agent-q--schedule))

(defun agent-q--ask-next (&optional pending)
  "Ask the decision of PENDING, or of the oldest queued call.
This is run from a timer: `inhibit-quit' is bound off for the prompt,
so \\[keyboard-quit] there denies the call.  Without PENDING (from the
idle timer), when the user is busy (`agent-q--user-busy-p'), nothing is
asked: the queue waits until the user's next command has run and Emacs
is idle again."
  (setq agent-q--queue-timer nil)
  (unless agent-q--asking
    (if (and (not pending) (not noninteractive) (agent-q--user-busy-p))
        (add-hook 'post-command-hook #'agent-q--resume-asking)
      (let ((pending (or pending
                         (cl-find 'queued agent-q--pending :key #'agent-q--pending-state))))
        (when pending
          (agent-q--ask pending))))))

(defun agent-q--ask (pending)
  "Ask the approval function about PENDING and resume it with the answer."
  (setq agent-q--asking pending)
  (setf (agent-q--pending-state pending) 'asking)
  ;; Now, not from a timer: the prompt comes next, and the mode line
  ;; must count this call while it is asked.
  (when agent-q--indicator-timer
    (cancel-timer agent-q--indicator-timer))
  (agent-q--refresh-indicator)
  (let* ((waiting (cl-count-if (lambda (p) (memq (agent-q--pending-state p) '(queued deferred)))
                               agent-q--pending))
         (held (truncate (float-time (time-since (agent-q--pending-time pending)))))
         (deferred (agent-q--pending-deferred pending))
         (context (append (agent-q--pending-context pending)
                          (list :async t :waiting waiting)
                          (cond
                           ;; A call the user deferred says so, and since when.
                           (deferred
                            (list :deferred (truncate (float-time (time-since deferred)))))
                           ;; A call held back while the user was busy says so.
                           ((> held (+ agent-q-approval-idle-delay 1))
                            (list :held held)))))
         (answer
          (unwind-protect
              (catch 'agent-q--withdrawn
                (condition-case err
                    (let ((inhibit-quit nil))
                      (agent-q--approval-call (agent-q--pending-tool pending)
                                              (agent-q--pending-args pending)
                                              context))
                  (quit '(:quit))
                  (error (list :error (agent-q--error-message err)))))
            (when (eq agent-q--asking pending)
              (setq agent-q--asking nil)))))
    (pcase answer
      ('nil nil)                        ; withdrawn while asked: already cancelled
      (:later
       (setf (agent-q--pending-state pending) 'deferred
             (agent-q--pending-deferred pending) (current-time))
       (agent-q--update-indicator)
       (agent-q--schedule))
      (_
       ;; The answer, or (:quit) or (:error MESSAGE): the core words the denial.
       (setf (agent-q--pending-state pending) 'deciding)
       ;; The handler runs now: with its batch's workspace, not the
       ;; one of whatever code the prompt was raised from.
       (let ((agent-q-call-workspace
              (agent-q--batch-workspace (agent-q--pending-batch pending))))
         (agent-q--handle-step (agent-q--pending-batch pending)
                               (agent-q--pending-index pending)
                               (condition-case err
                                   (agent-q--core-call-decide (agent-q--pending-core pending)
                                                              answer)
                                 (error (list :done (agent-q--core-failure
                                                     nil (agent-q--error-message err)))))
                               pending))
       (agent-q--schedule)))))

;;;; Cancelling

(defun agent-q--cancel (pending reason &optional timeout)
  "Withdraw PENDING with REASON: close its prompt or review, run nothing.
With TIMEOUT, the seconds of its agent's hook timeout that ran out:
the core words and audits it as a timeout, not a withdrawal."
  (let ((asked (eq agent-q--asking pending))
        (state (agent-q--pending-state pending)))
    (cond
     ((eq state 'done))
     ((eq state 'running)
      ;; Close what the handler opened; the core hears of it as cancelled.
      (let ((functions (agent-q--pending-cancel-functions pending)))
        (setf (agent-q--pending-cancel-functions pending) nil)
        (mapc (lambda (f) (ignore-errors (funcall f))) functions))
      (let ((step (ignore-errors (agent-q--end-call pending reason timeout))))
        (when step
          (agent-q--handle-step (agent-q--pending-batch pending)
                                (agent-q--pending-index pending) step pending))))
     (t
      (let ((step (ignore-errors (agent-q--end-call pending reason timeout))))
        (setf (agent-q--pending-state pending) 'done)
        (when step
          (agent-q--handle-step (agent-q--pending-batch pending)
                                (agent-q--pending-index pending) step pending))
        (when asked
          ;; Its prompt is on the stack below whatever runs now (a command in
          ;; the prompt's recursive edit, a process filter, a timer): leave it.
          (throw 'agent-q--withdrawn nil)))))
    (agent-q--forget pending)))

(defun agent-q--end-call (pending reason timeout)
  "End PENDING in the core: cancelled with REASON, or timed out (TIMEOUT)."
  (if timeout
      (agent-q--core-call-time-out (agent-q--pending-core pending) timeout)
    (agent-q--core-call-cancel (agent-q--pending-core pending) reason)))

(defun agent-q--cancel-all (pendings reason &optional timeout)
  "Withdraw PENDINGS with REASON; return how many were withdrawn.
The one being asked, if any, goes last: withdrawing it leaves its
prompt, and with it whatever code called this from inside the prompt.
TIMEOUT: see `agent-q--cancel'."
  (let* ((chosen (cl-remove-if (lambda (p) (eq (agent-q--pending-state p) 'done)) pendings))
         (current (and (memq agent-q--asking chosen) agent-q--asking)))
    (dolist (p (remq current chosen))
      (agent-q--cancel p reason timeout))
    (when current
      (agent-q--cancel current reason timeout))
    (length chosen)))

(defun agent-q-cancel-pending (&optional predicate reason)
  "Withdraw the pending tool-call requests, so that none of them is run.
Their prompts and reviews close, and each result says the call was
cancelled.  With PREDICATE, only the pending calls for which it returns
non-nil (it is called with the call's context plist, which holds :id,
:tool and :client).  REASON is told to the model (default: the user
cancelled them).  Return the number of calls withdrawn."
  (interactive)
  (let* ((chosen (cl-remove-if-not
                  (lambda (p)
                    (or (null predicate)
                        (funcall predicate (append (list :tool (agent-q--pending-tool p))
                                                   (agent-q--pending-context p)))))
                  agent-q--pending))
         (count (length (cl-remove-if (lambda (p) (eq (agent-q--pending-state p) 'done))
                                      chosen))))
    (when (called-interactively-p 'interactive)
      (message "agent-q: %d pending call%s withdrawn" count (if (= count 1) "" "s")))
    (agent-q--cancel-all chosen (or reason "the user cancelled the pending tool calls"))))

(defun agent-q-cancel-batch (batch &optional reason timeout)
  "Withdraw what BATCH (from `agent-q-execute-tool-calls-async') still waits for.
For a client's abort: BATCH's callback still gets every result, the
withdrawn ones saying they were cancelled (REASON, default: the client
cancelled them).  With TIMEOUT, the seconds its agent waited: they
say, and the audit records, that the agent's hook timed out.  Return
how many were withdrawn."
  (agent-q--cancel-all (cl-remove-if-not (lambda (p) (eq (agent-q--pending-batch p) batch))
                                         agent-q--pending)
                       (or reason "the client cancelled the request")
                       timeout))

;;;; The mode line

(defvar agent-q--mode-line-string nil
  "What the mode line shows of the pending decisions.")
(put 'agent-q--mode-line-string 'risky-local-variable t)

(defvar agent-q--mode-line-map
  (let ((map (make-sparse-keymap)))
    (define-key map [mode-line mouse-1] #'agent-q-pending)
    map)
  "Keymap of the pending-decisions indicator.")

(defvar agent-q--progress-timer nil
  "Timer updating the mode line while tools run off the main thread.")

(defun agent-q--deciding-p (pending)
  "Non-nil when PENDING waits for the user (a prompt or a review)."
  (or (memq (agent-q--pending-state pending) '(queued deferred asking deciding))
      (and (eq (agent-q--pending-state pending) 'running)
           (agent-q--pending-review pending))))

(defvar agent-q-pending-change-hook nil
  "Functions run, without arguments, when pending tool calls change state.
The MCP server uses it to tell its clients what their calls wait for.")

(defvar agent-q--indicator-timer nil
  "The timer that will update the pending-calls indicator, or nil.")

(defun agent-q--update-indicator ()
  "Update the mode line and run `agent-q-pending-change-hook', soon.
Each update looks at every pending call, so the changes of a burst
\(many calls arriving at once) are shown once, from a timer."
  (unless agent-q--indicator-timer
    (setq agent-q--indicator-timer (run-at-time 0 nil #'agent-q--refresh-indicator))))

(defun agent-q--refresh-indicator ()
  "Update the mode line: decisions pending, and tools running for over a second.
Also run `agent-q-pending-change-hook'."
  (setq agent-q--indicator-timer nil)
  (run-hooks 'agent-q-pending-change-hook)
  (let* ((live (cl-remove-if (lambda (p) (eq (agent-q--pending-state p) 'done))
                             agent-q--pending))
         (deciding (cl-count-if #'agent-q--deciding-p live))
         (running (cl-remove-if #'agent-q--deciding-p live))
         (slow (cl-remove-if (lambda (p) (< (float-time (time-since (agent-q--pending-time p))) 1))
                             running))
         (parts (delq nil
                      (list (and (> deciding 0) (format "%d pending" deciding))
                            (and slow
                                 (format "%s running %ds%s"
                                         (or (agent-q--pending-tool (car slow)) "a tool")
                                         (truncate (float-time (time-since
                                                                (agent-q--pending-time (car slow)))))
                                         (if (cdr slow) (format " (+%d)" (length (cdr slow))) "")))))))
    (setq agent-q--mode-line-string
          (and agent-q-mode-line-indicator parts
               (propertize (format " [agent-q: %s]" (string-join parts ", "))
                           'face 'warning
                           'help-echo "Tool calls waiting for you: mouse-1 or M-x agent-q-pending"
                           'mouse-face 'mode-line-highlight
                           'local-map agent-q--mode-line-map)))
    (unless (memq 'agent-q--mode-line-string global-mode-string)
      ;; A list whose first element is a symbol is a mode-line conditional;
      ;; starting it with "" keeps (agent-q--mode-line-string) from showing
      ;; as *invalid* when it is the only element.
      (setq global-mode-string (append (or global-mode-string '(""))
                                       '(agent-q--mode-line-string))))
    ;; While tools run, the elapsed time shows after a second and counts up.
    (cond ((and running (not agent-q--progress-timer))
           (setq agent-q--progress-timer (run-at-time 1 1 #'agent-q--update-indicator)))
          ((and (not running) agent-q--progress-timer)
           (cancel-timer agent-q--progress-timer)
           (setq agent-q--progress-timer nil)))
    (force-mode-line-update t)))

;;;; M-x agent-q-pending

(declare-function agent-q-grants "agent-q-prompt" ())
(defvar agent-q-prompt--session-approved)

(defvar agent-q-pending-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "RET") #'agent-q-pending-answer)
    (define-key map "c" #'agent-q-pending-cancel)
    (define-key map "C" #'agent-q-pending-cancel-all)
    (define-key map "g" #'agent-q-pending-refresh)
    (define-key map "a" #'agent-q-grants)
    map)
  "Keymap of `agent-q-pending-mode'.")

(defvar-local agent-q--pending-timer nil
  "The timer that keeps the waiting times of this list current, or nil.")

(define-derived-mode agent-q-pending-mode tabulated-list-mode "agent-q-pending"
  "The tool calls waiting for a decision or a review.
\\<agent-q-pending-mode-map>\\[agent-q-pending-answer] answers the call at point \
\(or shows its review),
\\[agent-q-pending-cancel] withdraws it, \\[agent-q-pending-cancel-all] withdraws them all,
\\[agent-q-pending-refresh] refreshes, \\[agent-q-grants] lists what the prompt's \"a\"
approved (and withdraws it).  The waiting times count up each second
while the list is on screen."
  (agent-q--pending-format nil)
  (setq tabulated-list-padding 1)
  (add-hook 'window-buffer-change-functions #'agent-q--pending-shown nil t)
  (add-hook 'kill-buffer-hook #'agent-q--pending-stop-timer nil t))

(defun agent-q--pending-format (entries)
  "Set the columns of the pending list, its client column as wide as ENTRIES need."
  (let ((width (cl-loop for entry in entries
                        maximize (string-width (aref (cadr entry) 1)))))
    (setq tabulated-list-format
          (vector '("#" 3 nil) (list "Client" (max 16 (or width 0)) t) '("Tool" 18 t)
                  '("State" 10 t) '("Waiting" 8 nil) '("Arguments" 0 nil)))
    (tabulated-list-init-header)
    (setq header-line-format (list "" header-line-format '(:eval (agent-q--pending-grants-note))))))

(defun agent-q--pending-grants-note ()
  "The note on the grants of \"a\" in the header line of the pending list."
  (let ((grants (and (boundp 'agent-q-prompt--session-approved)
                     (length agent-q-prompt--session-approved))))
    (if (and grants (> grants 0))
        (propertize (format "  [%d approved by the prompt's \"a\": press a to see or withdraw]"
                            grants)
                    'face 'warning)
      "")))

(defun agent-q--pending-shown (&rest _)
  "Keep the waiting times current while the pending list is shown."
  (agent-q--pending-start-timer (current-buffer)))

(defun agent-q--pending-start-timer (buffer)
  "Count the waiting times of the pending list BUFFER up, while it is on screen."
  (with-current-buffer buffer
    (unless (and agent-q--pending-timer (memq agent-q--pending-timer timer-list))
      (setq agent-q--pending-timer
            (run-at-time 1 1 #'agent-q--pending-tick buffer)))))

(defun agent-q--pending-stop-timer ()
  "Stop counting the waiting times of the current pending list."
  (when agent-q--pending-timer
    (cancel-timer agent-q--pending-timer)
    (setq agent-q--pending-timer nil)))

(defun agent-q--pending-tick (buffer)
  "Refresh the pending list BUFFER; stop once it is no longer on screen."
  (if (not (and (buffer-live-p buffer) (get-buffer-window buffer t)))
      (when (buffer-live-p buffer)
        (with-current-buffer buffer (agent-q--pending-stop-timer)))
    (agent-q-pending-refresh)))


(defun agent-q--pending-entries ()
  "The rows of `agent-q-pending-mode'."
  (cl-loop for p in agent-q--pending
           for i from 1
           unless (eq (agent-q--pending-state p) 'done)
           collect (list p (vector (number-to-string i)
                                   (agent-q--visible
                                    (or (plist-get (agent-q--pending-context p) :client)
                                        (plist-get (agent-q--pending-context p) :mcp-client)
                                        ""))
                                   (agent-q--visible (or (agent-q--pending-tool p) ""))
                                   (symbol-name (agent-q--pending-state p))
                                   (format "%ds" (truncate (float-time
                                                            (time-since (agent-q--pending-time p)))))
                                   (truncate-string-to-width
                                    (agent-q--visible
                                     (let ((print-length 10) (print-level 3) (print-circle nil)
                                           (print-escape-newlines t))
                                       (prin1-to-string (agent-q--pending-args p))))
                                    120 nil nil "...")))))

(defun agent-q-pending-refresh ()
  "Refresh the list of pending decisions."
  (interactive)
  (let ((buffer (get-buffer "*agent-q-pending*")))
    (when buffer
      (with-current-buffer buffer
        (setq tabulated-list-entries (agent-q--pending-entries))
        (agent-q--pending-format tabulated-list-entries)
        (tabulated-list-print t)))))

(defun agent-q-pending ()
  "List what agent-q is waiting for you to decide or review.
RET on one asks it now (or shows its review), c withdraws it."
  (interactive)
  (let ((buffer (get-buffer-create "*agent-q-pending*")))
    (with-current-buffer buffer
      (agent-q-pending-mode)
      (setq tabulated-list-entries (agent-q--pending-entries))
      (agent-q--pending-format tabulated-list-entries)
      (tabulated-list-print))
    (pop-to-buffer buffer)
    (agent-q--pending-start-timer buffer)))

(defun agent-q--pending-at-point ()
  "The pending call at point, or a user error."
  (or (tabulated-list-get-id)
      (user-error "No pending tool call here")))

(defun agent-q-pending-answer ()
  "Answer the pending call at point now, or show its review."
  (interactive)
  (let ((pending (agent-q--pending-at-point)))
    (pcase (agent-q--pending-state pending)
      ((or 'queued 'deferred)
       (if agent-q--asking
           (user-error "Another decision is being asked; answer it first")
         (setf (agent-q--pending-state pending) 'queued)
         (agent-q--ask-next pending)
         (agent-q-pending-refresh)))
      ('running
       (let ((review (cl-find-if (lambda (b)
                                   (and (buffer-live-p b)
                                        (string-prefix-p "*agent-q-diff: " (buffer-name b))))
                                 (buffer-list))))
         (if review (pop-to-buffer review) (message "agent-q: the tool is running"))))
      (state (message "agent-q: this call is %s" state)))))

(defun agent-q-pending-cancel ()
  "Withdraw the pending call at point."
  (interactive)
  (let ((pending (agent-q--pending-at-point)))
    (run-at-time 0 nil #'agent-q-pending-refresh)
    (agent-q--cancel-all (list pending) "the user withdrew this tool call")))

(defun agent-q-pending-cancel-all ()
  "Withdraw every pending call."
  (interactive)
  (run-at-time 0 nil #'agent-q-pending-refresh)
  (agent-q-cancel-pending))

(defun agent-q-batch-waiting-for (batch)
  "What BATCH waits for, as a phrase, or nil when it waits for nothing.
The phrase is one of \"the user's review\", \"the user's decision\"
and \"a tool\"."
  (gethash batch (agent-q-batches-waiting-for)))

(defun agent-q--waiting-rank (pending)
  "How much PENDING weighs in what its batch waits for.
3 a review, 2 a decision, 1 a tool, 0 nothing."
  (pcase (agent-q--pending-state pending)
    ('running (if (agent-q--pending-review pending) 3 1))
    ((or 'queued 'deferred 'asking 'deciding) 2)
    (_ 0)))

(defun agent-q-batches-waiting-for ()
  "Return a hash table of what each batch with a pending call waits for.
Its keys are the batches, its values the phrases that
`agent-q-batch-waiting-for' gives.  Computing it takes one pass over
the pending calls: telling every waiting client costs O(1) per call."
  (let ((ranks (make-hash-table :test #'eq))
        (phrases (make-hash-table :test #'eq)))
    (dolist (p agent-q--pending)
      (let ((rank (agent-q--waiting-rank p))
            (batch (agent-q--pending-batch p)))
        (when (> rank (gethash batch ranks 0))
          (puthash batch rank ranks))))
    (maphash (lambda (batch rank)
               (puthash batch (pcase rank
                                (3 "the user's review")
                                (2 "the user's decision")
                                (_ "a tool"))
                        phrases))
             ranks)
    phrases))

(provide 'agent-q-async)

;;; agent-q-async.el ends here
