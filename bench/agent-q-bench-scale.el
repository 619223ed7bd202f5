;;; agent-q-bench-scale.el --- Benchmark 5: registries of thousands of tools  -*- lexical-binding: t -*-

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

;; How the registry's operations grow with the number of tools: at 1,000,
;; 5,000 and 10,000 tools (shaped like the built-ins, see
;; agent-q-bench-schema.el), time
;;
;; - registering them all with `agent-q-register-tool' (fresh registry);
;; - filtering with `agent-q-get-tools': by safety and category (a tenth
;;   of the tools match) and by safety alone (most match);
;; - a snapshot, as a plist and as JSON, and restoring it into a fresh
;;   registry.
;;
;; Every time is given per tool in the registry: a flat column means
;; linear growth.  The growth exponent k (time ~ n^k, from the smallest
;; to the largest size) is reported for each operation.

;;; Code:

(require 'cl-lib)
(require 'agent-q-bench)
(require 'agent-q-bench-schema)

(declare-function agent-q-make-registry "agent-q" ())
(declare-function agent-q-define-tool "agent-q" (name description parameters &rest keys))
(declare-function agent-q-register-tool "agent-q" (tool &optional registry))
(declare-function agent-q-get-tools "agent-q" (&rest keys))
(declare-function agent-q-registry-snapshot "agent-q" (&optional registry as-json))
(declare-function agent-q-registry-restore "agent-q" (snapshot &optional registry))

(defconst agent-q-bench-scale-sizes '(1000 5000 10000)
  "The registry sizes measured.")

(defun agent-q-bench-scale--tools (definitions)
  "Tool structs for DEFINITIONS (see `agent-q-bench-schema--definitions')."
  (mapcar (lambda (d)
            (pcase-let ((`(,name ,description ,parameters ,required ,safety ,categories) d))
              (agent-q-define-tool name description parameters
                                   :required required :safety-level safety
                                   :categories categories :handler #'ignore)))
          definitions))

(defun agent-q-bench-scale--register (tools)
  "A fresh registry with TOOLS registered."
  (let ((registry (agent-q-make-registry)))
    (dolist (tool tools) (agent-q-register-tool tool registry))
    registry))

(defun agent-q-bench-scale--label (size)
  "The benchmark name for SIZE tools."
  (format "5. registry of %d tools" size))

(defconst agent-q-bench-scale--operations
  '("register all (fresh registry)"
    "filter: safe and :xref"
    "filter: at most cautious"
    "snapshot (plist)"
    "snapshot (JSON)"
    "restore from plist snapshot"
    "restore from JSON snapshot")
  "The operations measured, in table order.")

(defun agent-q-bench-scale--size (size)
  "Measure every operation for SIZE tools."
  (let* ((tools (agent-q-bench-scale--tools (agent-q-bench-schema--definitions size)))
         (registry (agent-q-bench-scale--register tools))
         (plist (agent-q-registry-snapshot registry))
         (json (agent-q-registry-snapshot registry t))
         (ops agent-q-bench-scale--operations))
    (agent-q-bench-note "- %d tools: the filters return %d and %d tools; the JSON snapshot has %d characters."
                        size
                        (length (agent-q-get-tools :max-safety-level :safe :categories '(:xref)
                                                   :registry registry))
                        (length (agent-q-get-tools :max-safety-level :cautious :registry registry))
                        (length json))
    (agent-q-bench-compare
     (agent-q-bench-scale--label size)
     (list (list :label (nth 0 ops) :n size
                 :run (lambda (_) (agent-q-bench-scale--register tools)))
           (list :label (nth 1 ops) :n size
                 :run (lambda (_) (agent-q-get-tools :max-safety-level :safe :categories '(:xref)
                                                     :registry registry)))
           (list :label (nth 2 ops) :n size
                 :run (lambda (_) (agent-q-get-tools :max-safety-level :cautious :registry registry)))
           (list :label (nth 3 ops) :n size
                 :run (lambda (_) (agent-q-registry-snapshot registry)))
           (list :label (nth 4 ops) :n size
                 :run (lambda (_) (agent-q-registry-snapshot registry t)))
           (list :label (nth 5 ops) :n size
                 :setup #'agent-q-make-registry
                 :run (lambda (fresh) (agent-q-registry-restore plist fresh)))
           (list :label (nth 6 ops) :n size
                 :setup #'agent-q-make-registry
                 :run (lambda (fresh) (agent-q-registry-restore json fresh))))
     :unit "tool")))

(defun agent-q-bench-scale-run ()
  "Benchmark 5: registering, filtering, snapshot and restore at several sizes."
  (dolist (size agent-q-bench-scale-sizes)
    (agent-q-bench-scale--size size))
  (agent-q-bench-note "")
  (agent-q-bench-note "Growth from %d to %d tools (time ~ n^k; k = 1 is linear), GC out / GC in:"
                      (car agent-q-bench-scale-sizes) (car (last agent-q-bench-scale-sizes)))
  (agent-q-bench-note "")
  (dolist (op agent-q-bench-scale--operations)
    (let ((ks (mapcar
               (lambda (gc)
                 (agent-q-bench-growth
                  agent-q-bench-scale-sizes
                  (mapcar (lambda (size)
                            (* size (agent-q-bench-row-time
                                     (agent-q-bench-find (agent-q-bench-scale--label size) op gc))))
                          agent-q-bench-scale-sizes)))
               '(out in))))
      (agent-q-bench-note "- %s: k = %.2f (%s) / %.2f (%s)"
                          op (nth 0 ks) (agent-q-bench-growth-word (nth 0 ks))
                          (nth 1 ks) (agent-q-bench-growth-word (nth 1 ks))))))

(agent-q-bench-define-section
 5 "scale" "5. Scale: registering, filtering, snapshot and restore" #'agent-q-bench-scale-run)

(provide 'agent-q-bench-scale)

;;; agent-q-bench-scale.el ends here
