;;; agent-q-bridge-test.el --- Claiming a client's tool call by identity  -*- lexical-binding: t -*-

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

;; `agent-q-bridge--claim', which the gptel and llm.el bridges use to
;; find the tool-call id of the values a client hands a tool function:
;; identity (`eq'), not equality, picks the call; order settles calls
;; whose values cannot be told apart; a claimed call is never given
;; twice; calls that are not candidates are passed over.  The bridges
;; themselves are tested against the real clients in
;; tests/agent-q-gptel-test.el and tests/agent-q-llm-test.el.

;;; Code:

(require 'ert)
(require 'agent-q-bridge)

(defun agent-q-bridge-test--claim (record claimed values)
  "Claim in RECORD (plists :name :args) the \"read\" call with VALUES.
CLAIMED is the table of claimed calls."
  (agent-q-bridge--claim record claimed values
                         :candidate-p (lambda (call) (equal (plist-get call :name) "read"))
                         :values-of (lambda (call) (list (plist-get (plist-get call :args) :path)))))

(ert-deftest agent-q-bridge-test-claim-by-identity-not-equality ()
  (let* ((first-path (copy-sequence "a.txt"))
         (second-path (copy-sequence "a.txt"))
         (record (list (list :id "1" :name "read" :args (list :path first-path))
                       (list :id "2" :name "read" :args (list :path second-path))))
         (claimed (make-hash-table :test 'eq :weakness 'key)))
    ;; Equal strings, different objects: the second call's values find the second call.
    (should (equal (plist-get (agent-q-bridge-test--claim record claimed (list second-path)) :id)
                   "2"))
    (should (equal (plist-get (agent-q-bridge-test--claim record claimed (list first-path)) :id)
                   "1"))
    ;; An equal string that is neither object finds nothing.
    (should-not (agent-q-bridge-test--claim record (make-hash-table :test 'eq)
                                            (list (copy-sequence "a.txt"))))))

(ert-deftest agent-q-bridge-test-claim-in-order-never-twice ()
  (let* ((record (list (list :id "1" :name "read" :args (list :path 7))
                       (list :id "x" :name "write" :args (list :path 7))
                       (list :id "2" :name "read" :args (list :path 7))))
         (claimed (make-hash-table :test 'eq :weakness 'key)))
    ;; Fixnums are `eq' when equal: the first unclaimed candidate goes first,
    ;; and the call of another tool is passed over.
    (should (equal (plist-get (agent-q-bridge-test--claim record claimed '(7)) :id) "1"))
    (should (equal (plist-get (agent-q-bridge-test--claim record claimed '(7)) :id) "2"))
    (should-not (agent-q-bridge-test--claim record claimed '(7)))
    ;; A different number of values never matches.
    (should-not (agent-q-bridge-test--claim record (make-hash-table :test 'eq) '(7 8)))))

(provide 'agent-q-bridge-test)

;;; agent-q-bridge-test.el ends here
