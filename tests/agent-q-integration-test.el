;;; agent-q-integration-test.el --- agent-q's parts together, through the executor  -*- lexical-binding: t -*-

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

;; The built-in tools as an LLM loop uses them: through
;; `agent-q-execute-tool-calls' and the global registry that
;; (require 'agent-q) fills, with the Rust scanner reading Emacs's own
;; sources, the read guard asking `agent-q-approval-function', and
;; propose_file_edit's review applying hunks.

;;; Code:

(require 'ert)
(require 'agent-q)
(require 'agent-q-keys-support)

(defvar agent-q-review--review-driver)
(declare-function agent-q-review-accept "agent-q-review" ())
(declare-function agent-q-review-reject "agent-q-review" ())
(declare-function agent-q-review-finish "agent-q-review" ())
(declare-function agent-q-review-reject-all "agent-q-review" ())

(defun agent-q-integration-test--call (name arguments)
  "Execute one call of tool NAME with ARGUMENTS; return the result plist."
  (car (agent-q-execute-tool-calls (list (list :id "it" :name name :arguments arguments)))))

(ert-deftest agent-q-integration-test-builtins-are-registered-on-load ()
  (let ((names (agent-q-list-registered-tools)))
    (dolist (name '("describe_symbol" "apropos_search" "function_arglist" "who_calls" "who_references"
                    "list_package_symbols" "class_slots" "class_hierarchy" "macroexpand_form"
                    "eval_form" "compile_form" "get_last_error" "get_repl_history"
                    "read_file" "read_buffer" "search_in_buffer" "write_file" "propose_file_edit"
                    "find_definition" "find_references" "file_outline" "workspace_symbols"
                    "diagnostics" "type_at" "rename_symbol"))
      (should (member name names))))
  (should (= (length (agent-q-get-tools :max-safety-level :safe)) 19))
  (should (= (length (agent-q-get-tools :max-safety-level :cautious)) 22))
  (should (= (length (agent-q-get-tools :max-safety-level :dangerous)) 25))
  (should (= (agent-q-register-builtin-tools) 25))
  (should (= (length (agent-q-tools-to-schema)) 25)))

(ert-deftest agent-q-integration-test-who-calls-scans-emacs-sources ()
  (let ((r (agent-q-integration-test--call "who_calls" '(:function "file-name-sans-extension"))))
    (should (plist-get r :success))
    (should (string-prefix-p "Functions calling file-name-sans-extension:" (plist-get r :content)))
    ;; files.el defines file-name-base in terms of it.
    (should (string-match-p "files\\.el\\(\\.gz\\)?:[0-9]+: in file-name-base:" (plist-get r :content)))))

(ert-deftest agent-q-integration-test-who-references-scans-emacs-sources ()
  (let ((r (agent-q-integration-test--call "who_references" '(:variable "load-path"))))
    (should (plist-get r :success))
    (should (string-prefix-p "References to load-path:" (plist-get r :content)))
    (should (string-match-p "help-fns\\.el\\(\\.gz\\)?:[0-9]+: in " (plist-get r :content)))))

(ert-deftest agent-q-integration-test-sensitive-read-asks-approval ()
  (let* ((dir (make-temp-file "agent-q-it" t))
         (secret (expand-file-name ".env" dir))
         (asked nil))
    (unwind-protect
        (progn
          (with-temp-file secret (insert "API_KEY=hunter2\n"))
          (let ((agent-q-approval-function (lambda (name _args)
                                             (push (list name agent-q-approval-context) asked)
                                             :denied)))
            (let ((r (agent-q-integration-test--call "read_file" (list :path secret))))
              ;; A refused read is a denial: not a success, not approved.
              (should-not (plist-get r :success))
              (should-not (plist-get (plist-get r :metadata) :approved))
              (should (equal "denied" (plist-get (plist-get r :metadata) :status)))
              (should-not (string-match-p "hunter2" (plist-get r :content)))
              (should (equal (car (car asked)) "read_file"))
              (should (plist-get (cadr (car asked)) :reason))))
          (let ((agent-q-approval-function (lambda (_ _) :approved)))
            (should (string-match-p "hunter2" (plist-get (agent-q-integration-test--call
                                                          "read_file" (list :path secret))
                                                         :content)))))
      (delete-directory dir t))))

(ert-deftest agent-q-integration-test-propose-file-edit-applies-accepted-hunks ()
  (let* ((file (make-temp-file "agent-q-it" nil ".txt"))
         (old (mapconcat (lambda (i) (format "line %d\n" i)) (number-sequence 1 30) ""))
         (new (replace-regexp-in-string "line \\(2\\|15\\|28\\)\n" "LINE \\1!\n" old))
         (agent-q-allowed-directories (list (file-name-directory file)))
         (agent-q-review--review-driver
          (lambda (buffer)
            (with-current-buffer buffer
              (agent-q-review-accept)
              (agent-q-review-reject)
              (agent-q-review-accept)
              (agent-q-review-finish)))))
    (unwind-protect
        (progn
          (with-temp-file file (insert old))
          (let ((r (agent-q-integration-test--call
                    "propose_file_edit" (list :path file :original old :modified new
                                              :description "three edits"))))
            (should (plist-get r :success))
            (should (string-match-p "Applied 2 of 3 hunks" (plist-get r :content)))
            (should (equal (with-current-buffer (find-buffer-visiting file) (buffer-string))
                           (replace-regexp-in-string "line \\(2\\|28\\)\n" "LINE \\1!\n" old)))))
      (let ((buffer (find-buffer-visiting file)))
        (when buffer
          (with-current-buffer buffer (set-buffer-modified-p nil))
          (kill-buffer buffer)))
      (delete-file file))))

;; S1: propose_file_edit is not prompted by the minibuffer approval (its review is
;; its approval), so its guard asks before the review reads a guarded file.
(ert-deftest agent-q-integration-test-propose-file-edit-guards-sensitive-files ()
  (let* ((dir (make-temp-file "agent-q-it" t))
         (secret (expand-file-name ".ssh/id_rsa" dir))
         (asked nil)
         (agent-q-allowed-directories (list dir))
         (agent-q-review--review-driver
          (lambda (_) (ert-fail "the review must not open for a refused file"))))
    (unwind-protect
        (progn
          (make-directory (file-name-directory secret))
          (with-temp-file secret (insert "KEY-LINE-1\nKEY-LINE-2\nKEY-LINE-3\n"))
          (let ((agent-q-approval-function
                 (lambda (name args)
                   (push (list name args (plist-get agent-q-approval-context :reason)) asked)
                   ;; The review approves the edit; reading a guarded file is refused.
                   (if (plist-get agent-q-approval-context :reason) :denied :approved))))
            ;; A wrong original would quote the file; a right one would show it in the review.
            (dolist (original '("X" "KEY-LINE-2\n"))
              (let* ((r (agent-q-integration-test--call
                         "propose_file_edit" (list :path secret :original original
                                                   :modified "Y\n" :description "d")))
                     (content (plist-get r :content)))
                (should (equal "User denied tool execution" content))
                (should-not (string-match-p "KEY-LINE-[13]" content))))
            (should (equal '("propose_file_edit" "propose_file_edit") (mapcar #'car asked)))
            (should (equal secret (plist-get (nth 1 (car asked)) :path)))
            (should (string-match-p "\\`propose_file_edit must read the file to show the edit: .*sensitive"
                                    (nth 2 (car asked)))))
          ;; The product path: the minibuffer approval asks about the read, "n" refuses.
          (let ((agent-q-approval-function #'agent-q-approve-in-minibuffer)
                (prompts nil))
            (agent-q-test-typing "n"
              (let ((content (plist-get (agent-q-integration-test--call
                                         "propose_file_edit"
                                         (list :path secret :original "KEY-LINE-2\n"
                                               :modified "Y\n" :description "d"))
                                        :content)))
                (should (string-prefix-p "User denied tool execution" content))
                (should-not (string-match-p "KEY-LINE-[13]" content)))
              (setq prompts agent-q-test-prompts))
            (should (= 1 (length prompts)))
            (should (string-match-p "propose_file_edit" (car prompts))))
          (should (equal "KEY-LINE-1\nKEY-LINE-2\nKEY-LINE-3\n"
                         (with-temp-buffer (insert-file-contents secret) (buffer-string)))))
      (delete-directory dir t))))

;; S1: the result of a review lists only the proposal's own removed and added lines.
(ert-deftest agent-q-integration-test-not-applied-quotes-no-context ()
  (let* ((dir (make-temp-file "agent-q-it" t))
         (file (expand-file-name "notes.txt" dir))
         (old (mapconcat (lambda (i) (format "private %d\n" i)) (number-sequence 1 9) ""))
         (agent-q-allowed-directories (list dir))
         (agent-q-approval-function (lambda (&rest _) :approved))
         (agent-q-review--review-driver
          (lambda (buffer)
            (with-current-buffer buffer
              (agent-q-review-reject-all)
              (agent-q-review-finish)))))
    (unwind-protect
        (progn
          (with-temp-file file (insert old))
          (let ((content (plist-get (agent-q-integration-test--call
                                     "propose_file_edit"
                                     (list :path file :original "private 5\n"
                                           :modified "public 5\nadded\n" :description "d"))
                                    :content)))
            (should (string-match-p "Applied 0 of 1 hunks" content))
            (should (string-match-p
                     "Not applied.*:\nHunk 1:\n@@ -5,1 \\+5,2 @@\n-private 5\n\\+public 5\n\\+added\n\\'"
                     content))
            (dolist (n '(2 3 4 6 7 8))
              (should-not (string-match-p (format "private %d" n) content)))))
      (let ((buffer (find-buffer-visiting file)))
        (when buffer (kill-buffer buffer)))
      (delete-directory dir t))))

(provide 'agent-q-integration-test)

;;; agent-q-integration-test.el ends here
