;;; agent-q-journal-test.el --- Tests of the journal of the agents' changes  -*- lexical-binding: t -*-

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

;; Record -> list -> undo through the review, a conflict when the user
;; edited the same lines (nothing written), and the journal read back
;; from its file as after a restart.

;;; Code:

(require 'ert)
(require 'agent-q-journal)
(require 'agent-q-review)
(require 'agent-q-gate-edit)

(defun agent-q-journal-test--lines (n)
  "N numbered lines."
  (mapconcat (lambda (i) (format "line %d\n" i)) (number-sequence 1 n) ""))

(defun agent-q-journal-test--read (file)
  "The text of FILE."
  (with-temp-buffer (insert-file-contents file) (buffer-string)))

(defun agent-q-journal-test--accept-all (review)
  "Accept every hunk of REVIEW and finish it."
  (should review)
  (with-current-buffer (agent-q-review--review-buffer review)
    (agent-q-review-accept-all)
    (when (memq review (agent-q-review-open-reviews))
      (agent-q-review-finish))))

(ert-deftest agent-q-journal-test-record-list-undo-conflict-restart ()
  (let* ((dir (make-temp-file "agent-q-journal-test" t))
         (agent-q-journal-file (expand-file-name "journal.jsonl" dir))
         (agent-q-journal--journal nil)
         (file (expand-file-name "code.txt" dir))
         (v0 (agent-q-journal-test--lines 40))
         (v1 (replace-regexp-in-string "^line 5$" "claude five" v0))
         (v2 (replace-regexp-in-string "^line 30$" "gemini thirty" v1)))
    (unwind-protect
        (progn
          (write-region v2 nil file nil 'silent)
          (should (eql 1 (agent-q-journal-record :agent "claude" :session "c1" :file file
                                                 :how 'review :accepted 1 :old v0 :new v1)))
          (should (eql 2 (agent-q-journal-record :agent "gemini" :session "g1" :file file
                                                 :how 'rule :old v1 :new v2)))
          (should (eql 3 (agent-q-journal-record :agent "codex" :session "x1"
                                                 :file dir :command "make test")))
          (should (equal (file-modes agent-q-journal-file) #o600))
          ;; The list: newest first, the command saying its changes are unknown.
          (agent-q-changes)
          (with-current-buffer "*agent-q-changes*"
            (should (equal (mapcar #'car tabulated-list-entries) '(3 2 1)))
            (goto-char (point-min))
            (should (search-forward "changes on disk unknown" nil t))
            (goto-char (point-min))
            (search-forward "claude")
            (agent-q-changes-show)
            (with-current-buffer "*agent-q-change*"
              (should (string-match-p "^-line 5\n\\+claude five$" (buffer-string)))))
          ;; A restart: the journal read back from its file.
          (setq agent-q-journal--journal nil)
          (should (equal (mapcar (lambda (e) (plist-get e :id))
                                 (agent-q--core-journal-entries (agent-q-journal--get)))
                         '(3 2 1)))
          ;; Undo Claude's change: Gemini's stays.
          (let (status)
            (agent-q-journal-test--accept-all
             (agent-q-journal-undo file '(1) (lambda (s) (setq status s))))
            (should (eq status :success)))
          (should (equal (agent-q-journal-test--read file)
                         (replace-regexp-in-string "^line 30$" "gemini thirty" v0)))
          (let ((newest (car (agent-q--core-journal-entries (agent-q-journal--get)))))
            (should (eq (plist-get newest :kind) 'revert))
            (should (equal (plist-get newest :reverts) '(1))))
          ;; The user edits Gemini's line: undoing it is a conflict, nothing written.
          (let ((edited (replace-regexp-in-string
                         "^gemini thirty$" "user thirty" (agent-q-journal-test--read file)))
                status)
            (write-region edited nil file nil 'silent)
            (should-not (agent-q-journal-undo file '(2) (lambda (s) (setq status s))))
            (should (eq status :conflict))
            (should (equal (agent-q-journal-test--read file) edited))
            (with-current-buffer "*agent-q-conflicts*"
              (should (string-match-p "no longer apply" (buffer-string))))))
      (dolist (b '("*agent-q-changes*" "*agent-q-change*" "*agent-q-conflicts*"))
        (when (get-buffer b) (kill-buffer b)))
      (delete-directory dir t))))

(ert-deftest agent-q-journal-test-sensitive-file-without-text ()
  (let* ((dir (make-temp-file "agent-q-journal-test" t))
         (agent-q-journal-file (expand-file-name "journal.jsonl" dir))
         (agent-q-journal--journal nil)
         (file (expand-file-name ".env" dir)))
    (unwind-protect
        (progn
          (should (agent-q-journal-record :agent "claude" :file file :how 'user
                                          :old "TOKEN=hunter2\n" :new "TOKEN=s3cret\n"))
          (let ((text (agent-q-journal-test--read agent-q-journal-file)))
            (should-not (string-match-p "hunter2\\|s3cret" text)))
          (should (plist-get (car (agent-q--core-journal-entries (agent-q-journal--get)))
                             :sensitive)))
      (delete-directory dir t))))

(ert-deftest agent-q-journal-test-gate-edit-review-is-recorded ()
  (let* ((dir (make-temp-file "agent-q-journal-test" t))
         (agent-q-journal-file (expand-file-name "journal.jsonl" dir))
         (agent-q-journal--journal nil)
         (file (expand-file-name "a.txt" dir))
         (old (agent-q-journal-test--lines 10))
         (new (replace-regexp-in-string "^line 4$" "four" old))
         written)
    (unwind-protect
        (progn
          (write-region old nil file nil 'silent)
          (agent-q-journal-test--accept-all
           (agent-q-gate-edit-review file old new "Claude Code" (lambda (text &rest _) (setq written text))))
          (should (equal written new))
          (let ((e (car (agent-q--core-journal-entries (agent-q-journal--get)))))
            (should (equal (plist-get e :agent) "Claude Code"))
            (should (equal (plist-get e :file) file))
            (should (equal (plist-get e :how) "review"))
            (should (equal (list (plist-get e :added) (plist-get e :removed)) '(1 1)))))
      (delete-directory dir t))))

(provide 'agent-q-journal-test)

;;; agent-q-journal-test.el ends here
