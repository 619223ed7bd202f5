;;; agent-q-llm.el --- agent-q's tools for llm.el and the packages built on it  -*- lexical-binding: t -*-

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

;; `agent-q-llm-tools' returns agent-q's enabled tools as llm.el tool
;; structs (`llm-make-tool'), for `llm-make-chat-prompt' :tools and so
;; for `llm-chat', `llm-chat-async', `llm-chat-streaming' and the
;; packages built on llm.el (ellama reads `ellama-tools-available'):
;;
;;   (llm-chat-async provider
;;                   (llm-make-chat-prompt "Which Emacs is this?"
;;                                         :tools (agent-q-llm-tools))
;;                   #'my-response-callback #'my-error-callback)
;;
;; The tools are `:async t' and run through
;; `agent-q-execute-tool-calls-async': llm.el's process sentinel is
;; never blocked, and agent-q's approval prompt and review decide the
;; dangerous calls, asked from the command loop one at a time.  llm.el
;; gives the results to the response callback as ((NAME . RESULT) ...);
;; the caller sends the prompt again to let the model go on.
;;
;; Arguments.  llm.el calls the function as (FUNCTION CALLBACK VALUE...),
;; the values in the order of the tool's :args.  It parses the model's
;; JSON with objects as alists, arrays as vectors, null as :null, and
;; then turns every false into nil -- so a value of nil may be false, an
;; empty object, or (for an optional argument) left out.  As in the gptel
;; bridge (see agent-q-gptel.el), an :around advice on
;; `llm-provider-utils-execute-tool-uses' binds the tool uses being run,
;; and the function claims its own (`agent-q-bridge--claim': same name,
;; its values `eq' to the ones in the tool use's arguments, first
;; unclaimed in order) -- which
;; gives llm.el's tool-call id (for the audit log and the prompt) and
;; which arguments the model actually sent.  Those are handed to the
;; executor as a plist: objects as plists, arrays as vectors, a present
;; nil as nil, which agent-q reads by the tool's schema (false for a
;; boolean, {} for an object, [] for an array), :null as nil, and a
;; left-out argument left out.  A call not found that way (a caller
;; running llm.el's tool functions itself) uses the values, a nil kept
;; for a required argument (so a required boolean nil means false) and
;; dropped for an optional one; its id is \"agent-q-llm-N\".
;;
;; Results.  A success is agent-q's content (already capped by
;; `agent-q-max-result-chars').  llm.el has no error mark for a tool
;; result (its own tool errors -- unknown tool, missing or unknown
;; argument -- go to the error callback and end the request, before the
;; tool runs), so agent-q's failures go to the model as text:
;; \"Error: MESSAGE\" with agent-q's message.
;;
;; llm.el's schema for a tool's arguments keeps :type, :description,
;; :enum, :items and :properties of each; agent-q still validates the
;; arguments against the tool's full schema.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'agent-q)
(require 'agent-q-bridge)

;; llm.el is optional: nothing here loads it until it is needed.
(declare-function llm-make-tool "llm" (&rest args))
(declare-function llm-provider-utils-tool-use-id "llm-provider-utils" (tool-use))
(declare-function llm-provider-utils-tool-use-name "llm-provider-utils" (tool-use))
(declare-function llm-provider-utils-tool-use-args "llm-provider-utils" (tool-use))

(defconst agent-q-llm--max-depth 128
  "Deepest nesting of arguments converted for the executor.")

(defvar agent-q-llm--dispatching nil
  "The llm.el tool uses that `llm-provider-utils-execute-tool-uses' is running.")

(defvar agent-q-llm--claimed (make-hash-table :test 'eq :weakness 'key)
  "The llm.el tool uses already given to an agent-q call.")

(defvar agent-q-llm--counter 0
  "Counter of the ids given to calls not found among llm.el's tool uses.")

;;;; Tools

(defun agent-q-llm--name (keyword)
  "The name of KEYWORD without its colon."
  (string-remove-prefix ":" (symbol-name keyword)))

(defun agent-q-llm--type (type)
  "The llm.el :type (a symbol) for the JSON Schema TYPE.
A list of types (a vector) gives its first type other than null."
  (intern (cond ((stringp type) type)
                ((vectorp type) (or (cl-find-if (lambda (x) (and (stringp x) (not (equal x "null"))))
                                                type)
                                    "string"))
                (t "string"))))

(defun agent-q-llm--schema-copy (schema depth)
  "A copy of the JSON Schema plist SCHEMA without nil values, DEPTH deep.
llm.el would send a nil as null."
  (cond
   ((>= depth agent-q-llm--max-depth) nil)
   ((and (consp schema) (keywordp (car schema)))
    (cl-loop for (key value) on schema by #'cddr
             unless (null value)
             append (list key (agent-q-llm--schema-copy value (1+ depth)))))
   ((vectorp schema) (vconcat (mapcar (lambda (x) (agent-q-llm--schema-copy x (1+ depth)))
                                      schema)))
   ((consp schema) (mapcar (lambda (x) (agent-q-llm--schema-copy x (1+ depth))) schema))
   (t schema)))

(defun agent-q-llm--args (tool)
  "The llm.el :args for the agent-q TOOL, one plist per property of its schema."
  (let ((required (agent-q-tool-required tool)))
    (cl-loop for (key schema) on (plist-get (agent-q-tool-parameters tool) :properties)
             by #'cddr
             for name = (agent-q-llm--name key)
             for property = (if (consp schema) schema nil)
             collect (append (list :name name
                                   :type (agent-q-llm--type (plist-get property :type)))
                             (let ((description (plist-get property :description)))
                               (and description (list :description description)))
                             (cl-loop for slot in '(:enum :items :properties)
                                      for value = (plist-get property slot)
                                      when value
                                      append (list slot (agent-q-llm--schema-copy value 0)))
                             (unless (member name required) (list :optional t))))))

;;;###autoload
(cl-defun agent-q-llm-tools (&key max-safety-level categories registry)
  "Return agent-q's enabled tools as llm.el tool structs.
One per tool of REGISTRY (default: the global one), filtered as by
`agent-q-get-tools' with MAX-SAFETY-LEVEL and CATEGORIES.  Each is
asynchronous and runs through `agent-q-execute-tool-calls-async', so
agent-q's approval and review decide the dangerous calls.  Give them
to `llm-make-chat-prompt' as :tools."
  (unless (require 'llm nil t)
    (user-error "Agent-q-llm: llm.el is not installed (it is on GNU ELPA)"))
  (agent-q-llm--install-advice)
  (mapcar (lambda (tool) (agent-q-llm--tool tool registry))
          (agent-q-get-tools :max-safety-level max-safety-level
                             :categories categories :registry registry)))

(defun agent-q-llm--tool (tool registry)
  "An llm.el tool struct running the agent-q TOOL of REGISTRY."
  (let* ((name (agent-q-tool-name tool))
         (args (agent-q-llm--args tool))
         (arg-names (mapcar (lambda (arg) (plist-get arg :name)) args))
         (required (agent-q-tool-required tool)))
    (llm-make-tool
     :name name
     :description (agent-q-tool-description tool)
     :args args
     :async t
     :function (lambda (callback &rest values)
                 (agent-q-llm--run name arg-names required values callback registry)))))

;;;; Finding the call among llm.el's tool uses

(defun agent-q-llm--claim (name arg-names values)
  "Find and claim the tool use of NAME with VALUES (named by ARG-NAMES), or nil.
A tool use's arguments are an alist; llm.el hands the tool the value
of each argument name, the very objects it parsed (see
`agent-q-bridge--claim')."
  (agent-q-bridge--claim
   agent-q-llm--dispatching agent-q-llm--claimed values
   :candidate-p (lambda (use)
                  (and (equal (llm-provider-utils-tool-use-name use) name)
                       (listp (llm-provider-utils-tool-use-args use))))
   :values-of (lambda (use)
                (let ((arguments (llm-provider-utils-tool-use-args use)))
                  (mapcar (lambda (arg-name) (cdr (assq (intern arg-name) arguments)))
                          arg-names)))))

(defun agent-q-llm--around-execute-tool-uses (function provider prompt tool-uses &rest args)
  "Call FUNCTION with PROVIDER, PROMPT, TOOL-USES and ARGS, TOOL-USES bound.
FUNCTION is `llm-provider-utils-execute-tool-uses'; agent-q's tool
functions find their tool use (and its id) in the binding."
  (let ((agent-q-llm--dispatching tool-uses))
    (apply function provider prompt tool-uses args)))

(defun agent-q-llm--install-advice ()
  "Install the advice the bridge needs (idempotent)."
  (advice-add 'llm-provider-utils-execute-tool-uses :around
              #'agent-q-llm--around-execute-tool-uses))

(defun agent-q-llm-unload-function ()
  "Undo what agent-q-llm did, for `unload-feature'."
  (advice-remove 'llm-provider-utils-execute-tool-uses #'agent-q-llm--around-execute-tool-uses)
  nil)

;;;; Arguments

(defun agent-q-llm--value (value depth)
  "VALUE, as llm.el parsed it, in the form agent-q takes; DEPTH deep.
Objects (alists) become plists, arrays stay vectors, false and null
become :json-false and nil.  Signal an error for what JSON cannot
hold, or nesting deeper than `agent-q-llm--max-depth'."
  (when (> depth agent-q-llm--max-depth)
    (error "The arguments are nested deeper than %d levels" agent-q-llm--max-depth))
  (cond
   ((memq value '(:false :json-false)) :json-false)
   ((eq value :null) nil)
   ((or (stringp value) (numberp value) (memq value '(nil t))) value)
   ((vectorp value) (vconcat (mapcar (lambda (x) (agent-q-llm--value x (1+ depth))) value)))
   ((and (consp value) (proper-list-p value)
         (cl-every (lambda (pair) (and (consp pair) (symbolp (car pair)))) value))
    (cl-loop for (key . item) in value
             append (list (intern (concat ":" (symbol-name key)))
                          (agent-q-llm--value item (1+ depth)))))
   (t (error "Unexpected argument value from llm.el: %s"
             (agent-q--with-bounded-printing (prin1-to-string value))))))

(defun agent-q-llm--positional-arguments (arg-names required values)
  "The arguments plist of VALUES, named by ARG-NAMES.
A nil is kept for a REQUIRED argument, dropped for an optional one."
  (cl-loop for name in arg-names
           for value in values
           unless (and (null value) (not (member name required)))
           append (list (intern (concat ":" name)) (agent-q-llm--value value 1))))

;;;; Running a call

(defun agent-q-llm--run (name arg-names required values callback registry)
  "Run agent-q's tool NAME for llm.el, answering CALLBACK later.
VALUES are the values llm.el passed, in the order of ARG-NAMES;
REQUIRED names the required arguments; REGISTRY is agent-q's registry.
Never signals: CALLBACK is called once, from a timer, with the text."
  (let* ((use (agent-q-llm--claim name arg-names values))
         (id (or (and use (llm-provider-utils-tool-use-id use))
                 (format "agent-q-llm-%d" (cl-incf agent-q-llm--counter)))))
    (condition-case err
        (let ((arguments (if use
                             (agent-q-llm--value (llm-provider-utils-tool-use-args use) 1)
                           (agent-q-llm--positional-arguments arg-names required values)))
              (agent-q-client "llm"))
          (agent-q-execute-tool-calls-async
           (list (list :id id :name name :arguments arguments))
           (lambda (results) (funcall callback (agent-q-llm--result-text (car results))))
           registry))
      (error
       (run-at-time 0 nil callback
                    (agent-q-llm--result-text
                     (list :success nil
                           :content (format "agent-q could not run %s: %s"
                                            name (error-message-string err)))))))
    nil))

(defun agent-q-llm--result-text (result)
  "The text llm.el sends the model for agent-q's RESULT."
  (let ((content (or (plist-get result :content) "")))
    (if (plist-get result :success)
        content
      (concat "Error: " content))))

(provide 'agent-q-llm)

;;; agent-q-llm.el ends here
