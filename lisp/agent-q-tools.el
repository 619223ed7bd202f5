;;; agent-q-tools.el --- The approval handlers of agent-q: the minibuffer prompt and the hunk review  -*- lexical-binding: t -*-

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

;; The approval handlers of agent-q, as the design names them: this
;; file gives the `y-or-n-p'-style approval in the minibuffer and the
;; per-hunk diff approval of `propose_file_edit'.  Requiring it loads
;; both:
;;
;; - agent-q-prompt.el: `agent-q-approve-in-minibuffer', the default
;;   `agent-q-approval-function'.  One deliberate key (y, n, r, e, v, a,
;;   s; C-g denies) answers approved, denied (with a reason) or modified
;;   (the arguments edited before approving).
;; - agent-q-review.el: `agent-q-review-edit' and
;;   `agent-q-review-edit-async', the hunk review that is the approval
;;   of "propose_file_edit" and of a terminal agent's edit: accept,
;;   reject or edit each hunk; exactly the accepted hunks are applied.
;;
;; Each is in its own file because each is a user interface of its own
;; (a key read in the minibuffer; a buffer derived from `diff-mode');
;; what they decide is the core's policy (the executor in the Rust
;; module), and this file is where a reader of the design finds them.

;;; Code:

(require 'agent-q-prompt)
(require 'agent-q-review)

(provide 'agent-q-tools)

;;; agent-q-tools.el ends here
