;;; agent-q-bench-executor.el --- Benchmark 1: executor overhead  -*- lexical-binding: t -*-

;; Copyright (C) 2026 The agent-q authors

;; Author: The agent-q authors
;; Maintainer: The agent-q authors
;; Keywords: maint, tools
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

;; 10,000 safe tool calls with a trivial handler through
;; `agent-q-execute-tool-calls' -- in one batch, and as 10,000 batches of
;; one call -- against a plain Emacs Lisp dispatch loop doing the same
;; work: look the tool up in a hash table, build the arguments hash
;; table, funcall the handler, build the same result plist (timing the
;; handler as the executor does).  Before timing, the results of both
;; are checked to be identical apart from :execution_time_ms.

;;; Code:

(require 'cl-lib)
(require 'agent-q-bench)
(require 'agent-q-async)

(declare-function agent-q-make-registry "agent-q" ())
(declare-function agent-q-define-tool "agent-q" (name description parameters &rest keys))
(declare-function agent-q-register-tool "agent-q" (tool &optional registry))
(declare-function agent-q-execute-tool-calls "agent-q" (calls &optional registry))
(declare-function agent-q-execute-tool-calls-async "agent-q-async" (calls callback &optional registry))

(defconst agent-q-bench-executor-calls 10000
  "How many tool calls one run executes.")

(defun agent-q-bench-executor--handler (args)
  "The trivial handler: return the \"text\" argument of ARGS."
  (gethash "text" args))

(defun agent-q-bench-executor--registry ()
  "A private registry holding the safe tool \"echo\"."
  (let ((registry (agent-q-make-registry)))
    (agent-q-register-tool
     (agent-q-define-tool "echo" "Return the text it is given."
                          '((:name "text" :type :string :description "The text to return."))
                          :required '("text")
                          :handler #'agent-q-bench-executor--handler)
     registry)
    registry))

(defun agent-q-bench-executor--calls (n)
  "Return a list of N \"echo\" tool-call plists, as an LLM would send."
  (let (calls)
    (dotimes (i n)
      (push (list :id (format "call_%d" i) :name "echo" :arguments (list :text "hello"))
            calls))
    (nreverse calls)))

(defun agent-q-bench-executor--plain-table ()
  "The plain loop's tool table: name -> (HANDLER . SAFETY-LEVEL-STRING)."
  (let ((table (make-hash-table :test 'equal)))
    (puthash "echo" (cons #'agent-q-bench-executor--handler "safe") table)
    table))

(defun agent-q-bench-executor--plain (batch table)
  "Dispatch the tool-call list BATCH with TABLE the plain way; return results."
  (let (results)
    (dolist (call batch)
      (let* ((id (plist-get call :id))
             (tool (gethash (plist-get call :name) table)))
        (if (null tool)
            (push (list :id id :success nil :content "Unknown tool" :error "Unknown tool"
                        :metadata (list :execution_time_ms 0.0 :approved nil))
                  results)
          (let ((args (make-hash-table :test 'equal :size 1))
                (rest (plist-get call :arguments)))
            (while rest
              (puthash (substring (symbol-name (car rest)) 1) (cadr rest) args)
              (setq rest (cddr rest)))
            (let* ((start (float-time))
                   (value (funcall (car tool) args))
                   (elapsed (* 1000.0 (- (float-time) start))))
              (push (list :id id :success t
                          :content (if (stringp value) value (prin1-to-string value))
                          :metadata (list :execution_time_ms elapsed
                                          :safety_level (cdr tool) :approved t
                                          :status "success"))
                    results))))))
    (nreverse results)))

(defun agent-q-bench-executor--singles (batch registry)
  "Dispatch the tool-call list BATCH to REGISTRY one by one; return results."
  (let (results)
    (dolist (call batch)
      (push (car (agent-q-execute-tool-calls (list call) registry)) results))
    (nreverse results)))

(defun agent-q-bench-executor--async (batch registry)
  "Execute BATCH in REGISTRY asynchronously; return the results.
Measured end to end: from the start of the batch until its callback has
run (from a timer, which `accept-process-output' runs; with a timeout of
0 it does not sleep first, as it does with any positive timeout)."
  (let ((results 'pending))
    (agent-q-execute-tool-calls-async batch (lambda (r) (setq results r)) registry)
    (while (eq results 'pending)
      (accept-process-output nil 0))
    results))

(defun agent-q-bench-executor--async-singles (batch registry)
  "Execute each call of BATCH in REGISTRY asynchronously, one batch each.
Each batch is awaited (until its callback ran) before the next starts."
  (let (results)
    (dolist (call batch)
      (push (car (agent-q-bench-executor--async (list call) registry)) results))
    (nreverse results)))

(defun agent-q-bench-executor--without-time (results)
  "RESULTS with each :execution_time_ms replaced by 0."
  (mapcar (lambda (r)
            (let ((copy (copy-sequence r)))
              (plist-put copy :metadata
                         (plist-put (copy-sequence (plist-get r :metadata))
                                    :execution_time_ms 0))))
          results))

(defun agent-q-bench-executor-run ()
  "Benchmark 1: the executor against a plain Lisp dispatch loop."
  (let* ((n agent-q-bench-executor-calls)
         (registry (agent-q-bench-executor--registry))
         (table (agent-q-bench-executor--plain-table))
         (calls (agent-q-bench-executor--calls n))
         (json-calls (mapcar (lambda (c)
                               (list :id (plist-get c :id) :name "echo"
                                     :arguments "{\"text\": \"hello\"}"))
                             calls))
         (plain (agent-q-bench-executor--without-time
                 (agent-q-bench-executor--plain calls table)))
         (ours (agent-q-bench-executor--without-time
                (agent-q-execute-tool-calls calls registry)))
         (async (agent-q-bench-executor--without-time
                 (agent-q-bench-executor--async calls registry)))
         (same (and (equal plain ours) (equal plain async))))
    (agent-q-bench-note "Check: the %d results of the executor (synchronous and asynchronous) and of the plain loop are %s apart from `:execution_time_ms`."
                        n (if same "identical" "**DIFFERENT** (the comparison is not fair)"))
    (unless same
      (agent-q-bench-note "First plain result: `%S`; first executor result: `%S`; first asynchronous result: `%S`."
                          (car plain) (car ours) (car async)))
    (let ((bench (format "1. %d safe calls, trivial handler" n)))
      (agent-q-bench-compare
       bench
       (list (list :label "plain Emacs Lisp dispatch loop" :n n
                   :run (lambda (_) (agent-q-bench-executor--plain calls table)))
             (list :label "agent-q, one batch of all calls" :n n
                   :run (lambda (_) (agent-q-execute-tool-calls calls registry)))
             (list :label "agent-q, one batch per call" :n n
                   :run (lambda (_) (agent-q-bench-executor--singles calls registry)))
             (list :label "agent-q, one batch, arguments as JSON text" :n n
                   :run (lambda (_) (agent-q-execute-tool-calls json-calls registry)))
             (list :label "agent-q asynchronous, one batch, until its callback ran" :n n
                   :run (lambda (_) (agent-q-bench-executor--async calls registry)))
             (list :label "agent-q asynchronous, one batch per call, each until its callback ran" :n n
                   :run (lambda (_) (agent-q-bench-executor--async-singles calls registry))))
       :unit "call")
      (dolist (gc '(out in))
        (let ((plain-row (agent-q-bench-find bench "plain Emacs Lisp dispatch loop" gc)))
          (dolist (label '("agent-q, one batch of all calls" "agent-q, one batch per call"
                           "agent-q asynchronous, one batch, until its callback ran"
                           "agent-q asynchronous, one batch per call, each until its callback ran"))
            (let ((row (agent-q-bench-find bench label gc)))
              (agent-q-bench-note
               "- GC %s, %s: %s µs per call against %s µs for the plain loop: **%.2f×** (target ≤ 2×: %s)."
               gc label
               (agent-q-bench--us (agent-q-bench-row-time row))
               (agent-q-bench--us (agent-q-bench-row-time plain-row))
               (plist-get row :ratio)
               (if (<= (plist-get row :ratio) 2.0) "met" "missed")))))))
    (agent-q-bench-include "analysis-executor.md")))

(agent-q-bench-define-section
 1 "executor" "1. Executor overhead" #'agent-q-bench-executor-run)

(provide 'agent-q-bench-executor)

;;; agent-q-bench-executor.el ends here
