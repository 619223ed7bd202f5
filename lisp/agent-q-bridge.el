;;; agent-q-bridge.el --- What agent-q's client bridges share  -*- lexical-binding: t -*-

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

;; What the client bridges (agent-q-gptel.el, agent-q-llm.el) share.
;;
;; Claiming a call by identity.  gptel and llm.el call a tool's
;; function with the argument values only, not the tool-call id that
;; the audit log, the approval prompt and the model need.  The id is in
;; the client's own record of the calls it is running: gptel's request
;; state, llm.el's tool uses.  A bridge binds that record around the
;; client's dispatch, and its tool function then claims its call with
;; `agent-q-bridge--claim': the first call of that record, in order,
;; that is a candidate (the tool's name, not yet answered), not claimed
;; before, and whose argument values -- as the client hands them to the
;; tool -- are `eq', the very objects, to the values the function got.
;; Identity, not equality, ties a call to its own entry: two calls with
;; equal arguments are told apart by the objects the client parsed for
;; each.  Order settles the rest (values that are all fixnums, nil or
;; interned symbols are `eq' to any equal value; the first such call
;; goes first).  A claimed call is remembered in a weak table, so that
;; the next function called with the same values gets the next call.

;;; Code:

(require 'cl-lib)

(defun agent-q-bridge--same-values-p (values parsed)
  "Non-nil when VALUES and PARSED have the same length and are `eq' one by one."
  (and (= (length values) (length parsed))
       (cl-every #'eq values parsed)))

(cl-defun agent-q-bridge--claim (record claimed values &key candidate-p values-of)
  "Return the first call in RECORD whose argument values are VALUES; claim it.
RECORD is a client's list of the tool calls it runs, in order.
CANDIDATE-P (a function of a call) says whether a call may be the
one (the tool's name, not yet answered).  VALUES-OF (a function of a
candidate) returns the list of argument values the client hands the
tool for that call, in the order of VALUES; they must be `eq' to
VALUES one by one.  CLAIMED is a hash table (`eq', weak on keys) of
the calls already claimed: the call returned is added to it, and no
call in it is returned.  Return nil when no call matches."
  (cl-loop for call in record
           when (and (not (gethash call claimed))
                     (funcall candidate-p call)
                     (agent-q-bridge--same-values-p values (funcall values-of call)))
           do (puthash call t claimed)
           and return call))

(provide 'agent-q-bridge)

;;; agent-q-bridge.el ends here
