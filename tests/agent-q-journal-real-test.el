;;; agent-q-journal-real-test.el --- The journal of the real agents' edits  -*- lexical-binding: t -*-

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

;; The journal (lisp/agent-q-journal.el) of what the real Claude Code,
;; Gemini CLI and Codex CLI changed with their own edit tools, through
;; the gate's hooks and driven by the scripted model
;; (tests/fake-agent-model.py): one list of the three agents, an undo
;; of one agent's change that leaves the other's in the same file, a
;; conflict when the user edited the same lines, and the list read by a
;; second Emacs from the journal's file.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-q)
(require 'agent-q-gate)
(require 'agent-q-journal)
(require 'agent-q-gate-test)
(require 'agent-q-gate-edit-test)
(require 'agent-q-trust-test)

(defvar agent-q-review--review-driver)

(defun agent-q-journal-real-test--lines (n)
  "N numbered lines."
  (mapconcat (lambda (i) (format "line %d\n" i)) (number-sequence 1 n) ""))

(defun agent-q-journal-real-test--entry (agent)
  "The journal's newest entry of AGENT, a plist, or nil."
  (cl-find agent (agent-q--core-journal-entries (agent-q-journal--get))
           :key (lambda (e) (plist-get e :agent)) :test #'equal))

(defun agent-q-journal-real-test--child (journal)
  "What a second Emacs lists of the JOURNAL file: (IDS AGENTS TEXT).
It starts afresh (`emacs --batch -Q'), opens the journal from the file
and runs `agent-q-changes'."
  (with-temp-buffer
    (let* ((script
            `(progn
               (setq load-prefer-newer t)
               (setq agent-q-journal-file ,journal)
               (require 'agent-q-journal)
               (agent-q-changes)
               (with-current-buffer "*agent-q-changes*"
                 (let ((ids (append agent-q-changes--ids nil)))
                   (prin1 (list ids
                                (mapcar (lambda (id)
                                          (plist-get (agent-q--core-journal-entry
                                                      (agent-q-journal--get) id)
                                                     :agent))
                                        ids)
                                (buffer-substring-no-properties (point-min) (point-max))))))))
           (status (call-process (expand-file-name invocation-name invocation-directory)
                                 nil (list t nil) nil
                                 "--batch" "-Q" "-L" (file-name-directory (locate-library "agent-q"))
                                 "--eval" (prin1-to-string script))))
      (unless (eq status 0)
        (ert-fail (list "The second Emacs failed" status (buffer-string))))
      (car (read-from-string (buffer-string))))))

(ert-deftest agent-q-journal-real-test-three-agents ()
  "Claude Code, Gemini CLI and Codex CLI change files; the journal lists, undoes, survives.
Claude's Edit and Gemini's replace change shared.txt in different
places, Codex's apply_patch changes c.txt, each reviewed and accepted.
`agent-q-changes' lists the three agents; undoing Claude's change from
the list leaves Gemini's; after the user edits Gemini's line, undoing
Gemini's change is a conflict that opens no review and writes nothing;
a second Emacs lists the same entries from the journal's file."
  (let* ((dir (file-name-as-directory (make-temp-file "agent-q-journal-real" t)))
         (home (expand-file-name "home/" dir))
         (work (expand-file-name "work/" dir))
         (shared (expand-file-name "shared.txt" work))
         (c (expand-file-name "c.txt" work))
         (v0 (agent-q-journal-real-test--lines 40))
         (claude-text (replace-regexp-in-string "^line 5$" "claude five" v0))
         (both (replace-regexp-in-string "^line 30$" "gemini thirty" claude-text))
         (gemini-only (replace-regexp-in-string "^line 30$" "gemini thirty" v0))
         (user-edited (replace-regexp-in-string "^line 30$" "user thirty" v0))
         (agent-q-mcp-connection-file (expand-file-name "connection.json" dir))
         (agent-q-audit-file (expand-file-name "audit.jsonl" dir))
         (agent-q-journal-file (expand-file-name "journal.jsonl" dir))
         (agent-q-journal--journal nil)
         (agent-q-approval-function #'agent-q-gate-test--deny-all)
         (agent-q-approval-rules nil)
         (agent-q-prompt--session-approved nil)
         (agent-q-review--review-driver #'agent-q-trust-test--driver)
         (agent-q-gate-edit-test--reviewed nil)
         (agent-q-gate-test--asked nil)
         (agent-q-mcp-port 0))
    (unwind-protect
        (progn
          (make-directory (expand-file-name "tmp" home) t)
          (agent-q-agents-test--write shared v0)
          (agent-q-agents-test--write c agent-q-gate-edit-test--old)
          (let ((default-directory work))
            (should (eq 0 (call-process "git" nil nil nil "init" "-q"))))
          (agent-q-gate-mode 1)
          (agent-q-mcp-start)
          ;; Each agent's own edit tool, reviewed and accepted whole.
          (pcase-dolist (`(,agent ,n ,steps ,file ,text)
                         `((claude 1 (((tool . "Read") (arguments (file_path . ,shared)))
                                      ((tool . "Edit") (arguments (file_path . ,shared)
                                                                  (old_string . "line 5\n")
                                                                  (new_string . "claude five\n")))
                                      ((text . "Done.")))
                                   ,shared ,claude-text)
                           (gemini 2 (((tool . "replace") (arguments (file_path . ,shared)
                                                                     (instruction . "Line 30")
                                                                     (old_string . "line 30\n")
                                                                     (new_string . "gemini thirty\n")))
                                      ((text . "Done.")))
                                   ,shared ,both)
                           (codex 3 (((tool . "exec_command")
                                      (arguments
                                       (cmd . "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: c.txt\n@@\n one\n-two\n+TWO\n*** End Patch\nEOF\n")))
                                     ((text . "Done.")))
                                  ,c ,agent-q-gate-edit-test--first)))
            (pcase-let ((`(,_ . ,why) (agent-q-trust-test--run agent n dir home work steps)))
              (ert-info (why)
                (should (equal (car agent-q-gate-edit-test--reviewed) (file-name-nondirectory file)))
                (should (equal (agent-q-agents-test--read file) text))
                (should (agent-q-journal-real-test--entry (symbol-name agent))))))
          (should (equal (reverse agent-q-gate-edit-test--reviewed) '("shared.txt" "shared.txt" "c.txt")))
          ;; One list of the three agents, newest first.
          (let ((claude (plist-get (agent-q-journal-real-test--entry "claude") :id))
                (gemini (plist-get (agent-q-journal-real-test--entry "gemini") :id))
                (codex (plist-get (agent-q-journal-real-test--entry "codex") :id)))
            (save-window-excursion
              (agent-q-changes)
              (with-current-buffer "*agent-q-changes*"
                (should (equal agent-q-changes--ids (vector codex gemini claude)))
                (dolist (agent '("claude" "gemini" "codex"))
                  (goto-char (point-min))
                  (should (re-search-forward (format "\\_<%s\\_>" agent) nil t)))
                ;; Undo Claude's change from its row: reviewed, accepted; Gemini's stays.
                (goto-char (point-min))
                (forward-line (+ (1- agent-q-changes--first-line)
                                 (cl-position claude agent-q-changes--ids)))
                (should (eql (agent-q-changes--id) claude))
                (agent-q-changes-undo)))
            (should (equal (car agent-q-gate-edit-test--reviewed) "shared.txt"))
            (should (= (length agent-q-gate-edit-test--reviewed) 4))
            (should (equal (agent-q-agents-test--read shared) gemini-only))
            (let ((revert (car (agent-q--core-journal-entries (agent-q-journal--get)))))
              (should (eq (plist-get revert :kind) 'revert))
              (should (equal (plist-get revert :reverts) (list claude))))
            ;; The user rewrites Gemini's line: its undo is a conflict, shown,
            ;; with no review opened and nothing written.
            (agent-q-agents-test--write shared user-edited)
            (let (status)
              (should-not (agent-q-journal-undo shared (list gemini) (lambda (s) (setq status s))))
              (should (eq status :conflict)))
            (should (= (length agent-q-gate-edit-test--reviewed) 4))
            (should (equal (agent-q-agents-test--read shared) user-edited))
            (with-current-buffer "*agent-q-conflicts*"
              (should (string-match-p "no longer apply" (buffer-string)))
              (should (string-match-p "gemini thirty" (buffer-string))))
            (should (equal (agent-q-agents-test--read c) agent-q-gate-edit-test--first))
            ;; A second Emacs reads the same list from the journal's file.
            (pcase-let ((`(,ids ,agents ,text) (agent-q-journal-real-test--child agent-q-journal-file)))
              (should (equal (car ids)
                             (plist-get (car (agent-q--core-journal-entries (agent-q-journal--get)))
                                        :id)))
              (should (equal (cdr ids) (list codex gemini claude)))
              (should (equal agents '("user" "codex" "gemini" "claude")))
              (dolist (agent '("claude" "gemini" "codex"))
                (should (string-match-p (format "\\_<%s\\_>" agent) text))))))
      (dolist (b '("*agent-q-changes*" "*agent-q-change*" "*agent-q-conflicts*"))
        (when (get-buffer b) (kill-buffer b)))
      (agent-q-gate-test--clean-up nil dir))))

(provide 'agent-q-journal-real-test)
;;; agent-q-journal-real-test.el ends here
