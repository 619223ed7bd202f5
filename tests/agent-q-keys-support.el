;;; agent-q-keys-support.el --- Answering agent-q's approval prompt in tests  -*- lexical-binding: t -*-

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

;; The approval prompt reads every key, its confirmations' included,
;; through one function, `agent-q-prompt--read-key', which discards
;; type-ahead (`unread-command-events' and keys typed before the prompt
;; appeared) and answers nil -- a denial -- when there is no terminal,
;; as in batch mode.  So keys put in `unread-command-events' no longer
;; answer it: a test binds that function with `cl-letf', as
;; `agent-q-test-typing' does, to one that takes the next key from
;; `unread-command-events' without discarding anything.  The other
;; readers (the edit buffer's recursive edit, the rule dialog) take
;; theirs from the same list, in order.  No client can reach this
;; binding; in a real Emacs the user's terminal is the only source of
;; the prompt's keys (the tmux tests type them there).

;;; Code:

(require 'cl-lib)
(require 'ert)

(defvar agent-q-test-prompts nil
  "The prompts shown inside `agent-q-test-typing', newest first.")

(defun agent-q-test--events (keys)
  "KEYS as a list of events: a list of events, or a string for `kbd'."
  (if (stringp keys) (listify-key-sequence (kbd keys)) keys))

(defun agent-q-test--read-key (prompt &optional _settle)
  "Record PROMPT and answer it with the next event of `unread-command-events'.
A prompt shown when no event is left fails the test."
  (push prompt agent-q-test-prompts)
  (unless unread-command-events
    (ert-fail (list "A prompt was shown with no key left to answer it" prompt)))
  (pop unread-command-events))

(defmacro agent-q-test-answering (&rest body)
  "Run BODY with prompts answered from `unread-command-events'.
Each prompt and confirmation read by `agent-q-prompt--read-key' takes the
next event; `agent-q-test-prompts' collects the prompts, newest first."
  (declare (indent 0) (debug t))
  `(let ((agent-q-test-prompts nil))
     (cl-letf (((symbol-function 'agent-q-prompt--read-key) #'agent-q-test--read-key)
               ((symbol-function 'ding) #'ignore))
       ,@body)))

(defmacro agent-q-test-typing (keys &rest body)
  "Run BODY with KEYS typed: each prompt takes the next of them.
KEYS is a list of events or a string in `kbd' syntax (\"s ! n\"); they
are `unread-command-events' during BODY (see `agent-q-test-answering'),
so what is left of them can be checked there."
  (declare (indent 1) (debug t))
  `(let ((unread-command-events (agent-q-test--events ,keys)))
     (agent-q-test-answering ,@body)))

(defmacro agent-q-test-let (bindings &rest body)
  "Like `let' with BINDINGS and BODY, prompts answered meanwhile.
See `agent-q-test-answering'.  BINDINGS usually bind
`unread-command-events' to the keys to type."
  (declare (indent 1) (debug let))
  `(agent-q-test-answering (let ,bindings ,@body)))

(defmacro agent-q-test-let* (bindings &rest body)
  "Like `let*' with BINDINGS and BODY, prompts answered meanwhile.
See `agent-q-test-answering'.  The bindings are evaluated in order
while prompts are answered, so a binding's value may be a call that
asks."
  (declare (indent 1) (debug let*))
  `(agent-q-test-answering (let* ,bindings ,@body)))

(defun agent-q-test-key-reader (answer &optional record)
  "A stand-in for `agent-q-prompt--read-key' that answers with ANSWER.
ANSWER is called with no argument for each prompt and returns the key;
confirmations (\"Press ! to confirm\") get `!'.  RECORD, when non-nil,
is called with each prompt but the confirmations."
  (lambda (prompt &rest _)
    (if (string-match-p "Press ! to confirm" prompt)
        ?!
      (when record (funcall record prompt))
      (funcall answer))))

(provide 'agent-q-keys-support)

;;; agent-q-keys-support.el ends here
