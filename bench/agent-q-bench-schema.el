;;; agent-q-bench-schema.el --- Benchmark 4: tool schemas for the LLM  -*- lexical-binding: t -*-

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

;; `agent-q-tools-to-schema' for 18 representative tools and for 1,000
;; tools, each in a private registry, as plists and as JSON text:
;;
;; - cold: right after a change to the registry (which invalidates both
;;   the module's per-tool cache and agent-q.el's result cache); only
;;   the schema call is timed, not the change;
;; - cached: the same call again with the registry unchanged.
;;
;; The baseline is what a package without agent-q's registry does on
;; every request: build the same OpenAI plists in Emacs Lisp from its
;; tool definitions (and `json-serialize' them for the JSON variant).
;;
;; The 18 tools mirror the built-in tools' names, parameters, safety
;; levels and categories.  When agent-q-builtins.el is present, its
;; `agent-q-register-builtin-tools' registers the real ones instead.

;;; Code:

(require 'cl-lib)
(require 'agent-q-bench)

(declare-function agent-q-make-registry "agent-q" ())
(declare-function agent-q-define-tool "agent-q" (name description parameters &rest keys))
(declare-function agent-q-register-tool "agent-q" (tool &optional registry))
(declare-function agent-q-tools-to-schema "agent-q" (&optional tools &rest keys))
(declare-function agent-q-set-tool-enabled "agent-q" (name enabled &optional registry))
(declare-function agent-q-register-builtin-tools "agent-q-builtins" (&optional registry))

(defconst agent-q-bench-schema--tools
  '(("describe_symbol" ((:name "symbol" :type :string) (:name "kind" :type :string :enum ("function" "variable" "face" "any"))) ("symbol") :safe (:introspection))
    ("apropos_search" ((:name "pattern" :type :string) (:name "kind" :type :string :enum ("function" "command" "variable" "face")) (:name "limit" :type :integer)) ("pattern") :safe (:introspection))
    ("function_arglist" ((:name "function" :type :string)) ("function") :safe (:introspection))
    ("who_calls" ((:name "function" :type :string) (:name "limit" :type :integer)) ("function") :safe (:introspection :xref))
    ("who_references" ((:name "variable" :type :string) (:name "limit" :type :integer)) ("variable") :safe (:introspection :xref))
    ("list_package_symbols" ((:name "package" :type :string) (:name "limit" :type :integer)) ("package") :safe (:introspection :packages))
    ("class_slots" ((:name "class" :type :string)) ("class") :safe (:introspection :clos))
    ("class_hierarchy" ((:name "class" :type :string)) ("class") :safe (:introspection :clos))
    ("macroexpand_form" ((:name "form" :type :string) (:name "all" :type :boolean)) ("form") :cautious (:introspection))
    ("eval_form" ((:name "form" :type :string)) ("form") :cautious (:execution))
    ("compile_form" ((:name "form" :type :string)) ("form") :cautious (:execution))
    ("get_last_error" () nil :safe (:execution))
    ("get_repl_history" ((:name "limit" :type :integer)) nil :safe (:execution))
    ("read_file" ((:name "path" :type :string) (:name "start_line" :type :integer) (:name "end_line" :type :integer)) ("path") :safe (:buffer))
    ("read_buffer" ((:name "buffer" :type :string) (:name "start_line" :type :integer) (:name "end_line" :type :integer)) ("buffer") :safe (:buffer))
    ("search_in_buffer" ((:name "pattern" :type :string) (:name "buffer" :type :string) (:name "regex" :type :boolean) (:name "all_matches" :type :boolean)) ("pattern" "buffer") :safe (:buffer))
    ("write_file" ((:name "path" :type :string) (:name "content" :type :string)) ("path" "content") :dangerous (:buffer :filesystem))
    ("propose_file_edit" ((:name "path" :type :string) (:name "original" :type :string) (:name "modified" :type :string) (:name "description" :type :string)) ("path" "original" "modified" "description") :dangerous (:diff :buffer)))
  "Eighteen tools shaped like the built-ins.
Each is (NAME PARAMETERS REQUIRED SAFETY CATEGORIES).")

(defun agent-q-bench-schema--describe (what)
  "A description of realistic length (about 300 characters) for WHAT."
  (concat (format "Do %s inside the running Emacs and return the answer as text. " what)
          "The result names what was found, with file and line where it applies, "
          "and explains clearly when nothing matched or the input was invalid, so that "
          "the model can correct its next call instead of guessing."))

(defun agent-q-bench-schema--parameters (parameters)
  "PARAMETERS of `agent-q-bench-schema--tools' with descriptions added."
  (mapcar (lambda (p)
            (append p (list :description
                            (format "The %s to use; see the tool's description."
                                    (plist-get p :name)))))
          parameters))

(defun agent-q-bench-schema--definitions (count)
  "COUNT tool definitions: the 18 representative ones, then numbered copies.
Each is (NAME DESCRIPTION PARAMETERS REQUIRED SAFETY CATEGORIES)."
  (cl-loop for i below count
           for (name parameters required safety categories)
           = (nth (% i 18) agent-q-bench-schema--tools)
           collect (list (if (< i 18) name (format "%s_%d" name i))
                         (agent-q-bench-schema--describe name)
                         (agent-q-bench-schema--parameters parameters)
                         required safety categories)))

(defun agent-q-bench-schema--registry (definitions)
  "A private registry holding DEFINITIONS."
  (let ((registry (agent-q-make-registry)))
    (pcase-dolist (`(,name ,description ,parameters ,required ,safety ,categories) definitions)
      (agent-q-register-tool
       (agent-q-define-tool name description parameters
                            :required required :safety-level safety :categories categories
                            :handler #'ignore)
       registry))
    registry))

(defun agent-q-bench-schema--lisp-schemas (definitions)
  "The OpenAI schemas of DEFINITIONS built in Emacs Lisp, as a package would."
  (mapcar
   (lambda (d)
     (pcase-let ((`(,name ,description ,parameters ,required . ,_) d))
       (list :type "function"
             :function
             (list :name name :description description
                   :parameters
                   (list :type "object"
                         :properties
                         (let (props)
                           (dolist (p parameters)
                             (setq props
                                   (append props
                                           (list (intern (concat ":" (plist-get p :name)))
                                                 (append
                                                  (list :type (substring (symbol-name (plist-get p :type)) 1)
                                                        :description (plist-get p :description))
                                                  (and (plist-get p :enum)
                                                       (list :enum (vconcat (plist-get p :enum)))))))))
                           props)
                         :required (vconcat required)
                         :additionalProperties :json-false)
                   :strict :json-false))))
   definitions))

(defun agent-q-bench-schema--cold (registry times json)
  "Time TIMES schema requests to REGISTRY, each after a change; JSON for text.
Only the schema calls are timed.  Return (agent-q-bench-timed . TIME)."
  (let ((time (cons 0.0 0.0)))
    (dotimes (_ times)
      ;; Two changes, ending disabled: the schemas stay the same, the caches are cleared.
      (agent-q-set-tool-enabled "bench_toggle" t registry)
      (agent-q-set-tool-enabled "bench_toggle" nil registry)
      (agent-q-bench-timing time
        (agent-q-tools-to-schema nil :json json :registry registry)))
    (cons 'agent-q-bench-timed time)))

(defun agent-q-bench-schema--section (count times)
  "Compare schema building for COUNT tools, with TIMES requests per run."
  (let* ((definitions (agent-q-bench-schema--definitions count))
         (registry (if (and (= count 18) (require 'agent-q-builtins nil t)
                            (fboundp 'agent-q-register-builtin-tools))
                       (let ((r (agent-q-make-registry)))
                         (agent-q-register-builtin-tools r)
                         r)
                     (agent-q-bench-schema--registry definitions)))
         (bench (format "4. schemas of %d tools" count)))
    ;; A disabled tool that the cold runs switch on and off to change the registry.
    (agent-q-register-tool (agent-q-define-tool "bench_toggle" "Changes the registry." nil) registry)
    (agent-q-set-tool-enabled "bench_toggle" nil registry)
    (agent-q-bench-compare
     bench
     (list (list :label "Emacs Lisp builds the plists each time" :n times
                 :run (lambda (_) (dotimes (_ times) (agent-q-bench-schema--lisp-schemas definitions))))
           (list :label "agent-q plists, cold (after a change)" :n times
                 :run (lambda (_) (agent-q-bench-schema--cold registry times nil)))
           (list :label "agent-q plists, cached" :n times
                 :setup (lambda () (agent-q-tools-to-schema nil :registry registry))
                 :run (lambda (_) (dotimes (_ times) (agent-q-tools-to-schema nil :registry registry)))))
     :unit "call")
    (agent-q-bench-compare
     (concat bench ", JSON text")
     (list (list :label "Emacs Lisp plists + json-serialize each time" :n times
                 :run (lambda (_) (dotimes (_ times)
                                    (ignore
                                     (json-serialize (vconcat (agent-q-bench-schema--lisp-schemas definitions))
                                                    :false-object :json-false :null-object nil)))))
           (list :label "agent-q JSON, cold (after a change)" :n times
                 :run (lambda (_) (agent-q-bench-schema--cold registry times t)))
           (list :label "agent-q JSON, cached" :n times
                 :setup (lambda () (agent-q-tools-to-schema nil :json t :registry registry))
                 :run (lambda (_) (dotimes (_ times) (agent-q-tools-to-schema nil :json t :registry registry)))))
     :unit "call")
    (let ((n (length (agent-q-tools-to-schema nil :registry registry))))
      (agent-q-bench-note "- %d tools: %d schemas returned (%d characters of JSON)%s."
                          count n (length (agent-q-tools-to-schema nil :json t :registry registry))
                          (if (and (= count 18) (fboundp 'agent-q-register-builtin-tools))
                              ", the real built-in tools" ", representative tools")))))

(defun agent-q-bench-schema-run ()
  "Benchmark 4: schemas for 18 and for 1,000 tools, cold and cached."
  (agent-q-bench-schema--section 18 200)
  (agent-q-bench-schema--section 1000 10)
  (agent-q-bench-note "Cold times include rebuilding the module's per-tool cache and converting to Lisp; the registry change itself is not timed.  Cached calls return the same (shared) object: callers must not modify it."))

(agent-q-bench-define-section
 4 "schema" "4. Schemas (`agent-q-tools-to-schema`)" #'agent-q-bench-schema-run)

(provide 'agent-q-bench-schema)

;;; agent-q-bench-schema.el ends here
