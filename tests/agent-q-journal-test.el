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
(require 'agent-q-gate-edit-test)
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
            (should (equal agent-q-changes--ids [3 2 1]))
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

(ert-deftest agent-q-journal-test-every-path-records-how-approved ()
  "The agents' edits (by a rule, by the review), commands and propose_file_edit are journalled."
  (agent-q-gate-edit-test--with-file (root file)
    (let* ((agent-q-journal-file (expand-file-name "journal.jsonl" root))
           (agent-q-journal--journal nil)
           (other (expand-file-name "g.txt" root))
           (entries (lambda () (agent-q--core-journal-entries (agent-q-journal--get)))))
      (with-temp-file other (insert agent-q-gate-edit-test--old))
      (agent-q-gate-test--with-gate #'ignore
        ;; An edit allowed by a rule, unreviewed.
        (let ((agent-q-approval-rules `(("agent_edit" (:path ,(concat root "f.txt")) allow)
                                        ("shell_command" (:command "make test") allow))))
          (agent-q-gate-edit-test--request
           1 'claude "Write" (list :file_path file :content agent-q-gate-edit-test--new)
           (list :kind "write" :path file :content agent-q-gate-edit-test--new) root)
          (should (equal (agent-q-gate-test--answer 1) '(allow nil)))
          (let ((e (car (funcall entries))))
            (should (equal (list (plist-get e :agent) (plist-get e :session) (plist-get e :how)
                                 (plist-get e :file) (plist-get e :added) (plist-get e :removed))
                           (list "claude" "s1" "rule" file 2 2)))
            (should (string-match-p "agent_edit" (plist-get e :detail))))
          ;; A command the rule allowed: listed as a command.
          (agent-q-gate-test--request-from 2 "make test" 'gemini "g7")
          (should (eq (car (agent-q-gate-test--answer 2)) 'allow))
          (let ((e (car (funcall entries))))
            (should (equal (list (plist-get e :kind) (plist-get e :agent) (plist-get e :session)
                                 (plist-get e :command) (plist-get e :how))
                           '(command "gemini" "g7" "make test" "rule")))))
        ;; An edit reviewed, one hunk of two accepted: recorded once, as written.
        (let ((agent-q-review--review-driver (agent-q-gate-edit-test--driver '(accept reject))))
          (agent-q-gate-edit-test--request
           3 'gemini "write_file" (list :file_path other :content agent-q-gate-edit-test--new)
           (list :kind "write" :path other :content agent-q-gate-edit-test--new) root)
          (should (eq (car (agent-q-gate-test--answer 3)) 'allow))
          (let ((all (funcall entries)))
            (should (= (length all) 3))
            (let ((e (car all)))
              (should (equal (list (plist-get e :agent) (plist-get e :how) (plist-get e :accepted)
                                   (plist-get e :rejected) (plist-get e :added))
                             '("gemini" "review" 1 1 1)))
              (should (string-match-p "^\\+TWO$" (agent-q--core-journal-diff
                                                   (agent-q-journal--get) (plist-get e :id))))
              (should-not (string-match-p "NINE" (agent-q--core-journal-diff
                                                   (agent-q-journal--get) (plist-get e :id))))))))
      ;; propose_file_edit, through the executor and its review.
      (let* ((agent-q-review--review-driver (agent-q-gate-edit-test--driver '(accept)))
             (agent-q-client "gptel")
             (agent-q-approval-function (lambda (&rest _) :approved))
             (results (agent-q-execute-tool-calls
                       (list (list :id "p1" :name "propose_file_edit"
                                   :arguments (list :path other :original "ten\n"
                                                    :modified "TEN\n" :description "d")))))
             (e (car (funcall entries))))
        (should (plist-get (car results) :success))
        (should (equal (list (plist-get e :agent) (plist-get e :how) (plist-get e :accepted)
                             (plist-get e :file) (plist-get e :added))
                       (list "gptel" "review" 1 other 1)))))))

(provide 'agent-q-journal-test)

;;; agent-q-journal-test.el ends here
