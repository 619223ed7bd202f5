;;; agent-q-execution.el --- agent-q's evaluation tools  -*- lexical-binding: t -*-

;; Copyright (C) 2026 The agent-q authors

;; Author: The agent-q authors
;; Maintainer: The agent-q authors
;; Keywords: tools, lisp
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

;; The handlers of eval_form, compile_form, get_last_error and
;; get_repl_history.
;;
;; A form that cannot be read, that fails to compile or that signals
;; while it runs ends the call as a failure (`agent-q-tool-fail'): the
;; error is in the result's :error and :content, and is kept for
;; get_last_error (with the backtrace) and in the history.  A form that
;; runs to the end succeeds whatever its value, even a string that reads
;; "Error: ...".  An empty history or no recorded error is a successful
;; answer; a limit out of range is a failure.  (The rule for all the
;; built-in introspection and execution tools is in agent-q-support.el.)
;;
;; Everything kept is bounded: the history keeps the first
;; `agent-q-builtins--kept-chars' characters of each form and result,
;; and the last error keeps its condition printed within bounds, never
;; the objects it carried (a 50 MB string in an error's data is neither
;; kept alive nor printed whole).

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'seq)
(require 'agent-q-support)

(declare-function agent-q-tool-fail "agent-q" (format-string &rest args))

;;;; Options

(defcustom agent-q-builtins-history-size 50
  "Number of eval_form and compile_form results kept in the history."
  :type 'natnum
  :group 'agent-q)

(defcustom agent-q-builtins-backtrace-frames 30
  "Maximum number of backtrace frames recorded for get_last_error."
  :type 'natnum
  :group 'agent-q)


;;;; Execution: eval_form, compile_form, history and last error

(defconst agent-q-builtins--kept-chars 2000
  "How many characters of a form or result the history and last error keep.")

(defvar agent-q-builtins--history nil
  "Recent eval_form and compile_form results, newest first.
Each element is a plist (:tool NAME :form STRING :result STRING :time TIME
:channel CHANNEL :error ERROR), FORM and RESULT cut to
`agent-q-builtins--kept-chars', CHANNEL as `agent-q-builtins--channel'
says, ERROR the run's error (as in `agent-q-builtins--last-error') when
it failed.")

(defvar agent-q-builtins--last-error nil
  "The last error from eval_form or compile_form, as a plist or nil.
Keys: :tool :form (cut), :error (the condition's symbol), :condition
\(the condition printed within bounds), :message, :backtrace (list of
strings), :time and :channel.")

(defvar agent-q-call-context)

(defun agent-q-builtins--channel ()
  "The channel the running call came on, or nil for the user's own Lisp.
It is the :channel of `agent-q-call-context', which the core decides
from what the call's driver knows, never from a name a client claims:
an MCP session's own (each stdio relay process is one), a stateless
MCP request's own, a bridge's (\"emacs gptel\"), or nil for a call
from Lisp that names no client (or a handler called outside a tool
call).  What one channel evaluated -- a form the user approved that
read a password, say -- is that channel's: the history and the last
error show each channel only its own, and the user's Lisp everything."
  (plist-get (bound-and-true-p agent-q-call-context) :channel))

(defun agent-q-builtins--own-p (entry)
  "Non-nil when the running call may see ENTRY of the history or last error.
That is when ENTRY was recorded on the call's channel, or when the
call is the user's own Lisp (channel nil), which sees every channel's."
  (let ((channel (agent-q-builtins--channel)))
    (or (null channel)
        (equal (plist-get entry :channel) channel))))

(defun agent-q-builtins--keep (string)
  "Return STRING cut to `agent-q-builtins--kept-chars' characters, for keeping."
  (if (stringp string)
      (agent-q-builtins--truncate string agent-q-builtins--kept-chars)
    (agent-q-builtins--print string agent-q-builtins--kept-chars)))

(defun agent-q-builtins--record (tool form result &optional error)
  "Record FORM and RESULT from TOOL in the bounded history, for its channel.
ERROR is the run's error, when it failed (see
`agent-q-builtins--last-error')."
  (push (list :tool tool :form (agent-q-builtins--keep form)
              :result (agent-q-builtins--keep result) :time (current-time)
              :channel (agent-q-builtins--channel) :error error)
        agent-q-builtins--history)
  (when (> (length agent-q-builtins--history) agent-q-builtins-history-size)
    (setq agent-q-builtins--history
          (seq-take agent-q-builtins--history agent-q-builtins-history-size))))

(defun agent-q-builtins--remember-failure (tool form condition backtrace)
  "Record CONDITION raised by FORM in TOOL, with BACKTRACE, as the last error."
  (setq agent-q-builtins--last-error
        (list :tool tool :form (agent-q-builtins--keep form)
              :error (car-safe condition)
              :condition (agent-q-builtins--print condition)
              :message (agent-q-builtins--error-text condition)
              :backtrace backtrace :time (current-time)
              :channel (agent-q-builtins--channel))))

(defun agent-q-builtins--frame-string (fun args)
  "Return the backtrace frame FUN applied to ARGS as one short line."
  (let ((text (car (agent-q-builtins--bounded-output
                    200
                    (lambda (stream)
                      (let ((print-length 8) (print-level 3)
                            (print-escape-newlines t) (print-circle nil))
                        ;; One argument more than print-length, so that
                        ;; a cut list still prints its "...".
                        (prin1 (agent-q-builtins--shown-part
                                (cons fun (seq-take args 9)) 200)
                               stream)))))))
    (if (< (length text) 200) text (concat (substring text 0 197) "..."))))

(defun agent-q-builtins--call-capturing (thunk)
  "Call THUNK and capture its output, value, or error with a backtrace.
Return (:value VALUE :output STRING) or
\(:error CONDITION :output STRING :backtrace FRAMES), FRAMES being
strings, innermost first, from the failing call out to THUNK."
  (letrec ((frames nil)
           (output "")
           (value nil)
           (capture
          (lambda (&rest _)
            ;; eval.c enters the debugger at most once per input event;
            ;; count one so that the next error is captured too (ert
            ;; does the same).
            (setq num-nonmacro-input-events (1+ num-nonmacro-input-events))
            ;; Keep the frames between this debugger's own frame
            ;; (excluded) and THUNK's (excluded).
            ;; mapbacktrace goes outwards from the innermost frame;
            ;; only the innermost frames are kept, and printed.
            (let ((collected nil) (count 0) (state 'inside-debugger))
              (mapbacktrace
               (lambda (_evald fun args _flags)
                 (pcase state
                   ('inside-debugger
                    (when (eq fun capture) (setq state 'collecting)))
                   ('collecting
                    (cond ((eq fun thunk) (setq state 'done))
                          ((< count agent-q-builtins-backtrace-frames)
                           (setq count (1+ count))
                           (push (agent-q-builtins--frame-string fun args)
                                 collected)))))))
              (setq frames (nreverse collected)))
            nil)))
    (condition-case err
        (progn
          (setq output
                (with-output-to-string
                  (let ((debug-on-error t)
                        (debug-on-signal nil)
                        (debug-ignored-errors nil)
                        (debugger capture))
                    (condition-case inner
                        (setq value (funcall thunk))
                      ((debug error)
                       (setq output (with-current-buffer standard-output
                                      (buffer-string)))
                       (signal (car inner) (cdr inner)))))))
          (list :value value :output output))
      (error (list :error err :output output :backtrace frames)))))

(defun agent-q-builtins--finish-run (tool form-string outcome &optional prefix)
  "Report OUTCOME of running FORM-STRING in TOOL, after recording it.
PREFIX is text put before the result (compiler warnings).  Return the
text of a run that ended normally; end the call as a failure, with
the error, when it signaled."
  (let ((output (plist-get outcome :output))
        (failed (plist-member outcome :error))
        (text nil))
    (if failed
        (let ((condition (plist-get outcome :error)))
          (agent-q-builtins--remember-failure tool form-string condition
                                          (plist-get outcome :backtrace))
          (setq text (format "Error: %s\nCondition: %s\n(Call get_last_error for the backtrace.)"
                             (agent-q-builtins--error-text condition)
                             (agent-q-builtins--print condition))))
      (setq text (format "Value: %s" (agent-q-builtins--print (plist-get outcome :value)))))
    (unless (string-empty-p output)
      (setq text (format "%s\nOutput:\n%s" text
                         (agent-q-builtins--truncate output agent-q-builtins-max-value-chars))))
    (agent-q-builtins--record tool form-string text (and failed agent-q-builtins--last-error))
    (setq text (concat (or prefix "") text))
    (if failed (agent-q-tool-fail "%s" text) text)))

(defun agent-q-builtins--read-for (tool string)
  "Return the one form in STRING, read for TOOL.
A form that cannot be read is recorded, as TOOL's last error and in the
history, and ends the call as a failure saying why."
  (let ((read (agent-q-builtins--read-one-form string)))
    (if (not (eq (car read) :error))
        (cadr read)
      (let ((text (format "Error: %s" (cadr read))))
        (agent-q-builtins--remember-failure tool string
                                        (list 'invalid-read-syntax (cadr read)) nil)
        (agent-q-builtins--record tool string text agent-q-builtins--last-error)
        (agent-q-tool-fail "%s" text)))))

(defun agent-q-builtins--eval-form (args)
  "Evaluate the one form in ARGS (\"form\") with lexical binding."
  (let* ((string (agent-q-builtins--arg args "form"))
         (form (agent-q-builtins--read-for "eval_form" string)))
    (agent-q-builtins--finish-run
     "eval_form" string
     (agent-q-builtins--call-capturing (lambda () (eval form t))))))

(defun agent-q-builtins--compile (form)
  "Byte-compile FORM as the body of a lexical function.
Return (COMPILED . WARNINGS) or signal the compiler's error.  The
compiler reports some errors (a malformed argument list or `let') as
warnings of level :error and returns no function: those signal too."
  (require 'bytecomp)
  (defvar byte-compile-log-warning-function)
  (defvar byte-compile-unresolved-functions)
  (let* ((warnings nil)
         (errors nil)
         (byte-compile-log-warning-function
          (lambda (string &optional _position _fill level)
            (push string warnings)
            (when (eq level :error) (push string errors))))
         (byte-compile-unresolved-functions nil)
         (lexical-binding t)
         (compiled (byte-compile `(lambda () ,form))))
    (when (or errors (not (functionp compiled)))
      (error "%s" (if errors
                      (string-join (nreverse errors) "; ")
                    "the compiler produced no function")))
    ;; Compiling a file reports unknown functions at its end; compiling
    ;; a form does not, so report them here.
    (dolist (entry (reverse byte-compile-unresolved-functions))
      (let ((name (car-safe entry)))
        (when (and (symbolp name) (not (fboundp name)))
          (push (format "the function `%s' is not known to be defined." name)
                warnings))))
    (cons compiled (nreverse warnings))))

(defun agent-q-builtins--compile-form (args)
  "Byte-compile the form in ARGS (\"form\"), report warnings, then run it."
  (let* ((string (agent-q-builtins--arg args "form"))
         (form (agent-q-builtins--read-for "compile_form" string))
         (compiled (agent-q-builtins--call-capturing
                    (lambda () (agent-q-builtins--compile form)))))
    (if (plist-member compiled :error)
        (let ((condition (plist-get compiled :error)))
          (agent-q-builtins--remember-failure "compile_form" string condition
                                          (plist-get compiled :backtrace))
          (let ((text (format "Compilation failed: %s\nCondition: %s\n(Call get_last_error for the backtrace.)"
                              (agent-q-builtins--error-text condition)
                              (agent-q-builtins--print condition))))
            (agent-q-builtins--record "compile_form" string text agent-q-builtins--last-error)
            (agent-q-tool-fail "%s" text)))
      (let* ((fn (car (plist-get compiled :value)))
             (warnings (cdr (plist-get compiled :value)))
             (prefix (if warnings
                         (agent-q-builtins--truncate
                          (concat (format "Compiler warnings (%d):\n" (length warnings))
                                  (mapconcat (lambda (w) (concat "  " w))
                                             (seq-take warnings 100) "\n")
                                  (if (> (length warnings) 100)
                                      (format "\n  [... %d more warnings not shown ...]"
                                              (- (length warnings) 100))
                                    "")
                                  "\n")
                          agent-q-builtins-max-value-chars)
                       "No warnings.\n")))
        (agent-q-builtins--finish-run
         "compile_form" string
         (agent-q-builtins--call-capturing (lambda () (funcall fn)))
         prefix)))))

(defun agent-q-builtins--get-last-error (_args)
  "Return the channel's last error recorded by eval_form or compile_form.
Only the errors of the running call's channel count (see
`agent-q-builtins--channel'): another client's are not its to read."
  (let ((e (if (agent-q-builtins--own-p agent-q-builtins--last-error)
               agent-q-builtins--last-error
             (plist-get (cl-find-if (lambda (entry)
                                      (and (plist-get entry :error)
                                           (agent-q-builtins--own-p entry)))
                                    agent-q-builtins--history)
                        :error))))
    (if (null e)
        "No recent errors recorded."
      (concat
       (format "Last error (from %s at %s):\n" (plist-get e :tool)
               (format-time-string "%F %T" (plist-get e :time)))
       (format "Condition: %s\n" (plist-get e :condition))
       (format "Message: %s\n" (plist-get e :message))
       (format "Form: %s\n" (plist-get e :form))
       (let ((bt (plist-get e :backtrace)))
         (if bt
             (format "Backtrace (innermost first, %d frame(s)):\n%s" (length bt)
                     (mapconcat (lambda (f) (concat "  " f)) bt "\n"))
           (if (eq (plist-get e :error) 'invalid-read-syntax)
               "Backtrace: none (the form could not be read)"
             "Backtrace: none captured")))))))

(defun agent-q-builtins--get-repl-history (args)
  "Return the channel's recent forms and results, newest first.
ARGS may hold \"limit\": how many entries (default 10, at most 50).
Only the entries of the running call's channel count (see
`agent-q-builtins--channel'): another client's are not its to read."
  (let* ((limit (agent-q-builtins--arg args "limit" 10))
         (own (cl-remove-if-not #'agent-q-builtins--own-p agent-q-builtins--history))
         (total (length own)))
    (cond
     ((not (and (numberp limit) (>= limit 1)))
      (agent-q-tool-fail "Invalid limit %s: give a number from 1 to 50."
                         (agent-q-builtins--print limit 40)))
     ((zerop total) "No REPL history recorded yet for this client (eval_form and compile_form record it; each client sees only its own: an MCP client its session's, a stateless request nothing).")
     (t
      (let* ((limit (min 50 (truncate limit)))
             (entries (seq-take own limit))
             (i 0))
        (concat
         (format "Recent REPL History (%d of %d entries):\n" (length entries) total)
         (mapconcat
          (lambda (e)
            (cl-incf i)
            (format "%d. [%s] %s\n   => %s" i (plist-get e :tool)
                    (agent-q-builtins--truncate (plist-get e :form) 1000)
                    (replace-regexp-in-string
                     "\n" "\n      "
                     (agent-q-builtins--truncate (plist-get e :result) 1000))))
          entries "\n")))))))


(provide 'agent-q-execution)

;;; agent-q-execution.el ends here
