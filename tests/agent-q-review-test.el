;;; agent-q-review-test.el --- Tests for agent-q-review.el  -*- lexical-binding: t -*-

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

;; ERT tests of the per-hunk review of propose_file_edit, driven with
;; `unread-command-events' through the real recursive edit, or the review
;; commands called in the review buffer, against real temporary files and
;; buffers.
;;
;; Run them from the repository's root after `make build' (see the Makefile).

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-q-core)
(require 'agent-q-prompt)
(require 'agent-q-review)
(require 'agent-q-keys-support)

(defvar agent-q-approval-context)

;;;; Helpers

(defun agent-q-review-test--keys (&rest parts)
  "Return the events of PARTS: strings in `kbd' syntax, or lists of events."
  (apply #'append
         (mapcar (lambda (p) (if (stringp p) (listify-key-sequence (kbd p)) p))
                 parts)))

(defun agent-q-review-test--numbered (n)
  "Return N lines \"line I\"."
  (mapconcat (lambda (i) (format "line %d\n" i)) (number-sequence 1 n) ""))

(defun agent-q-review-test--replace-lines (text alist)
  "Return TEXT with line numbers of ALIST (N . NEW) replaced by NEW."
  (let ((lines (split-string text "\n")))
    (dolist (pair alist)
      (setf (nth (1- (car pair)) lines) (cdr pair)))
    (string-join lines "\n")))

(defconst agent-q-review-test--old (agent-q-review-test--numbered 40)
  "A 40-line text.")

(defconst agent-q-review-test--changes '((2 . "LINE TWO") (20 . "LINE TWENTY") (39 . "LINE 39"))
  "Three changes far enough apart to make three hunks.")

(defun agent-q-review-test--expected (accepted)
  "Return the old text, with the edits of the hunks in ACCEPTED (1-based) made."
  (agent-q-review-test--replace-lines
   agent-q-review-test--old
   (cl-loop for change in agent-q-review-test--changes
            for i from 1
            when (memq i accepted) collect change)))

(defvar agent-q-review-test--new
  (agent-q-review-test--expected '(1 2 3))
  "The text with all three changes.")

(defmacro agent-q-review-test--with-file (file content &rest body)
  "Run BODY with FILE bound to a temporary file holding CONTENT.
Buffers visiting it are killed afterwards without asking."
  (declare (indent 2))
  `(let ((,file (make-temp-file "agent-q-review-test-" nil ".txt" ,content)))
     (unwind-protect
         (progn ,@body)
       (when-let ((b (find-buffer-visiting ,file)))
         (with-current-buffer b (set-buffer-modified-p nil))
         (kill-buffer b))
       (when (file-exists-p ,file) (delete-file ,file)))))

(defun agent-q-review-test--review (file original modified driver &optional description)
  "Run the review of FILE (ORIGINAL -> MODIFIED) with DRIVER; return the result.
DRIVER is called in the review buffer and calls review commands.
DESCRIPTION is the proposal's description."
  (let ((agent-q-review--review-driver
         (lambda (buffer)
           (with-current-buffer buffer
             (funcall driver)))))
    (agent-q-review-edit file original modified description)))

(defun agent-q-review-test--buffer-text (file)
  "Return the text of the buffer visiting FILE."
  (with-current-buffer (find-buffer-visiting file)
    (buffer-substring-no-properties (point-min) (point-max))))

(defun agent-q-review-test--progress ()
  "Return the progress line of the review buffer, after checking its header line."
  (should (equal header-line-format
                 '(:eval (agent-q-review--progress-string agent-q-review--this-review))))
  (agent-q-review--progress-string agent-q-review--this-review))

(defun agent-q-review-test--file-text (file)
  "Return the text of FILE on disk."
  (with-temp-buffer
    (insert-file-contents file)
    (buffer-string)))

;;;; Module diff functions

(ert-deftest agent-q-review-test-core-diff-shapes ()
  (let ((hunks (agent-q--core-diff-hunks "a\nthe café\nb\n" "a\nthe thé\nb\n")))
    (should (= (length hunks) 1))
    (let ((h (car hunks)))
      (should (equal (plist-get h :header) "@@ -1,3 +1,3 @@"))
      (should (equal (plist-get h :lines)
                     '((context . "a") (removed . "the café") (added . "the thé")
                       (context . "b"))))
      ;; Character offsets: "café" is 4 characters (5 bytes).
      (should (equal (plist-get h :refine) '((1 4 8) (2 4 7))))))
  (should (equal (agent-q--core-diff-locate "héllo\nwörld\n" "wörld")
                 '(:start 6 :end 11 :line 2 :whole nil)))
  (should-error (agent-q--core-diff-locate "a\na\n" "a\n") :type 'agent-q-diff-error)
  (should-error (agent-q--core-diff-apply "a\n" "b\n" '(maybe)) :type 'agent-q-diff-error)
  (should (equal (agent-q--core-diff-apply "a\n" "b\n" '("c\n")) "c\n")))

;;;; Review of propose_file_edit

(ert-deftest agent-q-review-test-subsets-of-three-hunks ()
  (dolist (case '(((accept reject accept) (1 3))
                  ((reject accept reject) (2))
                  ((accept accept accept) (1 2 3))
                  ((reject reject reject) ())))
    (agent-q-review-test--with-file file agent-q-review-test--old
      (find-file-noselect file)
      (let* ((keys (car case))
             (result (agent-q-review-test--review
                      file agent-q-review-test--old agent-q-review-test--new
                      (lambda ()
                        (should (string-match-p "Progress: 0 accepted, 0 rejected, 3 pending"
                                                (agent-q-review-test--progress)))
                        (dolist (k keys)
                          (if (eq k 'accept)
                              (agent-q-review-accept)
                            (agent-q-review-reject)))
                        (agent-q-review-finish)))))
        (should (equal (agent-q-review-test--buffer-text file)
                       (agent-q-review-test--expected (cadr case))))
        ;; Not saved by default.
        (should (equal (agent-q-review-test--file-text file) agent-q-review-test--old))
        (should (string-match-p (format "Applied %d of 3 hunks to " (length (cadr case)))
                                result))
        (if (cadr case)
            (should (string-match-p "Buffer not saved\\." result))
          (should (string-match-p "No change made\\." result)))))))

(ert-deftest agent-q-review-test-result-text ()
  (agent-q-review-test--with-file file agent-q-review-test--old
    (let ((result (agent-q-review-test--review
                   file agent-q-review-test--old agent-q-review-test--new
                   (lambda ()
                     (agent-q-review-accept)
                     (agent-q-review-reject)
                     (agent-q-review-accept)
                     (agent-q-review-finish)))))
      (should (string-prefix-p
               (format "Applied 2 of 3 hunks to %s (hunks 1 and 3 accepted; hunk 2 rejected).  Buffer not saved."
                       file)
               result))
      ;; The rejected hunk's text is in the result.
      (should (string-match-p "Not applied.*:\nHunk 2:\n@@ -20,1 \\+20,1 @@\n-line 20\n" result))
      (should-not (string-match-p "^ line 17" result))
      (should (string-match-p "\n-line 20\n\\+LINE TWENTY\n" result))
      (should-not (string-match-p "LINE TWO" result)))))

(ert-deftest agent-q-review-test-buffer-markers-and-refinement ()
  (agent-q-review-test--with-file file "the café au lait\nsecond\n"
    (agent-q-review-test--review
     file "the café au lait\nsecond\n" "the thé au lait\nsecond\n"
     (lambda ()
       (should (string-match-p "\\`\\*agent-q-diff: " (buffer-name)))
       (should (derived-mode-p 'diff-mode))
       (should (string-match-p "^File: " (buffer-string)))
       (should (string-match-p "^Description: Use tea" (buffer-string)))
       (should (string-match-p "^@@ -1,2 \\+1,2 @@ \\[PENDING\\]" (buffer-string)))
       ;; Word refinement: "thé" on the added line has the refine face.
       (goto-char (point-min))
       (search-forward "+the thé")
       (should (equal (get-text-property (- (point) 2) 'face)
                      '(diff-refine-added diff-added)))
       (should (eq (get-text-property (- (point) 4) 'face) 'diff-added))
       (search-backward "-the café")
       (should (equal (get-text-property (+ (point) 6) 'face)
                      '(diff-refine-removed diff-removed)))
       (agent-q-review-toggle)
       (should (string-match-p "\\[ACCEPTED\\]" (buffer-string)))
       (goto-char (point-min))
       (search-forward "[ACCEPTED]")
       (should (eq (get-text-property (1- (point)) 'face) 'agent-q-diff-accepted))
       (agent-q-review-toggle)
       (should (string-match-p "\\[REJECTED\\]" (buffer-string)))
       (should (string-match-p "Progress: 0 accepted, 1 rejected, 0 pending"
                               (agent-q-review-test--progress)))
       (agent-q-review-finish))
     "Use tea")))

(ert-deftest agent-q-review-test-navigation-and-bulk-keys ()
  (agent-q-review-test--with-file file agent-q-review-test--old
    (agent-q-review-test--review
     file agent-q-review-test--old agent-q-review-test--new
     (lambda ()
       (let ((review agent-q-review--this-review))
         (should (= (agent-q-review--hunk-at-point review) 0))
         (agent-q-review-next)
         (agent-q-review-next)
         (should (= (agent-q-review--hunk-at-point review) 2))
         (agent-q-review-next)
         (should (= (agent-q-review--hunk-at-point review) 2))
         (agent-q-review-previous)
         (should (= (agent-q-review--hunk-at-point review) 1))
         (agent-q-review-reject)
         (agent-q-review-accept-all)
         (should (equal (agent-q-review--review-decisions review) [accept reject accept]))
         (agent-q-review-reject-all)
         (should (equal (agent-q-review--review-decisions review) [accept reject accept]))
         ;; RET shows the hunk's place in the file.
         (agent-q-review-show-source)
         (with-current-buffer (find-buffer-visiting file)
           ;; Point was on hunk 3 (line 36 starts its context).
           (should (equal (thing-at-point 'line t) "line 36\n")))
         (agent-q-review-finish))))
    (should (equal (agent-q-review-test--buffer-text file)
                   (agent-q-review-test--expected '(1 3))))))

(ert-deftest agent-q-review-test-deciding-keys-wait-for-a-pause ()
  ;; A review that opens while the user types takes no deciding key until
  ;; the typing pauses; moving, showing and rejecting everything work.
  (agent-q-review-test--with-file file agent-q-review-test--old
    (agent-q-review-test--review
     file agent-q-review-test--old agent-q-review-test--new
     (lambda ()
       (let ((review agent-q-review--this-review))
         (setf (agent-q-review--review-armed review) nil)
         (should (string-match-p "\\`Review opening: its keys work once you pause typing"
                                 (agent-q-review-test--progress)))
         (dolist (command '(agent-q-review-accept agent-q-review-reject agent-q-review-toggle
                            agent-q-review-accept-all agent-q-review-reject-all
                            agent-q-review-edit-hunk agent-q-review-finish agent-q-review-quit))
           (should-error (funcall command) :type 'user-error))
         (should (equal (agent-q-review--review-decisions review) [nil nil nil]))
         (should-not (agent-q-review--review-done review))
         (agent-q-review-next)
         (should (= (agent-q-review--hunk-at-point review) 1))
         ;; Ready once both the review has shown and the keys have paused for
         ;; the settle time.
         (let ((now (float-time)))
           (setf (agent-q-review--review-shown review) (- now 10))
           (let ((agent-q-review--last-key-time now))
             (should-not (agent-q-review--ready-p review)))
           (let ((agent-q-review--last-key-time (- now 10)))
             (setf (agent-q-review--review-shown review) now)
             (should-not (agent-q-review--ready-p review))
             (setf (agent-q-review--review-shown review) (- now 1))
             (should (agent-q-review--ready-p review))))
         ;; With a terminal, arming waits for the pause, then takes keys.
         (cl-letf (((symbol-function 'agent-q-prompt--no-terminal-p) #'ignore))
           (let ((agent-q-review--last-key-time (- (float-time) 10)))
             (agent-q-review--arm review)
             (should-not (agent-q-review--review-armed review))
             (let ((deadline (+ (float-time) 5)))
               (while (and (not (agent-q-review--review-armed review))
                           (< (float-time) deadline))
                 (accept-process-output nil 0.05)))
             (should (agent-q-review--review-armed review))
             (should-not (memq (agent-q-review--review-arm-timer review) timer-list))))
         (should (string-match-p "\\`Progress: 0 accepted" (agent-q-review-test--progress)))
         (agent-q-review-previous)
         (agent-q-review-accept)
         (agent-q-review-reject)
         (agent-q-review-accept)
         (agent-q-review-finish))))
    (should (equal (agent-q-review-test--buffer-text file)
                   (agent-q-review-test--expected '(1 3))))))

(ert-deftest agent-q-review-test-keys-through-recursive-edit ()
  ;; Production path: the real recursive edit reads the keys.
  (agent-q-review-test--with-file file agent-q-review-test--old
    (let* ((unread-command-events (agent-q-review-test--keys "a r a C-c C-c"))
           (result (agent-q-review-edit file agent-q-review-test--old
                                              agent-q-review-test--new "three changes")))
      (should (equal (agent-q-review-test--buffer-text file)
                     (agent-q-review-test--expected '(1 3))))
      (should (string-match-p "hunks 1 and 3 accepted; hunk 2 rejected" result))
      (should-not (get-buffer (format "*agent-q-diff: %s*" (file-name-nondirectory file))))
      (should-not agent-q-review--open-reviews))))

(ert-deftest agent-q-review-test-c-g-through-recursive-edit ()
  (agent-q-review-test--with-file file agent-q-review-test--old
    (let* ((unread-command-events (agent-q-review-test--keys "a C-g"))
           (result (agent-q-review-edit file agent-q-review-test--old
                                              agent-q-review-test--new)))
      ;; Nothing applied: the file was not even opened.
      (should-not (find-buffer-visiting file))
      (should (equal (agent-q-review-test--file-text file) agent-q-review-test--old))
      (should (string-match-p "Applied 0 of 3 hunks .*the user rejected the whole edit"
                              result)))))

(ert-deftest agent-q-review-test-kill-buffer-through-recursive-edit ()
  ;; Killing the review buffer from a command inside the real recursive edit
  ;; ends the review with everything rejected.
  (agent-q-review-test--with-file file agent-q-review-test--old
    (global-set-key [f9] (lambda () (interactive) (kill-buffer (current-buffer))))
    (unwind-protect
        (let* ((unread-command-events (agent-q-review-test--keys "a" "<f9>"))
               (result (agent-q-review-edit file agent-q-review-test--old
                                                  agent-q-review-test--new)))
          (should (string-match-p "Applied 0 of 3 hunks .*the user rejected the whole edit"
                                  result))
          (should-not agent-q-review--open-reviews)
          (should (equal (agent-q-review-test--file-text file) agent-q-review-test--old)))
      (global-unset-key [f9]))))

(ert-deftest agent-q-review-test-with-unsaved-edits ()
  (agent-q-review-test--with-file file agent-q-review-test--old
    (let ((buffer (find-file-noselect file)))
      ;; An unsaved edit at line 30, outside the proposal's hunks.
      (with-current-buffer buffer
        (goto-char (point-min))
        (forward-line 29)
        (insert "unsaved\n"))
      (let* ((current (agent-q-review-test--buffer-text file))
             (proposal (replace-regexp-in-string "^line 5$" "LINE FIVE" current))
             (result (agent-q-review-test--review
                      file current proposal
                      (lambda ()
                        (agent-q-review-accept)
                        (agent-q-review-finish)))))
        (should (string-match-p "Applied 1 of 1 hunks" result))
        (should (equal (agent-q-review-test--buffer-text file) proposal))
        (should (string-match-p "^unsaved$" (agent-q-review-test--buffer-text file)))
        (should (equal (agent-q-review-test--file-text file) agent-q-review-test--old))))))

(ert-deftest agent-q-review-test-stale-original ()
  (agent-q-review-test--with-file file agent-q-review-test--old
    (let ((buffer (find-file-noselect file))
          (driver-called nil))
      ;; The user changed line 20 after the model read the file.
      (with-current-buffer buffer
        (goto-char (point-min))
        (forward-line 19)
        (delete-region (point) (line-end-position))
        (insert "line twenty (user)"))
      (let ((result (agent-q-review-test--review
                     file agent-q-review-test--old agent-q-review-test--new
                     (lambda () (setq driver-called t)))))
        (should-not driver-called)
        (should (string-prefix-p (format "No change made to %s: `original` does not match" file)
                                 result))
        (should (string-match-p "Closest match at line 1" result))
        (should (string-match-p "line 20 is `line twenty (user)` where `original` has `line 20`"
                                result))
        ;; Nothing changed.
        (should (string-match-p "^line twenty (user)$" (agent-q-review-test--buffer-text file)))))))

(ert-deftest agent-q-review-test-stale-excerpt-shows-current-text ()
  (agent-q-review-test--with-file file agent-q-review-test--old
    (let ((result (agent-q-review-test--review
                   file "line 11\nline 12 old\nline 13\n" "line 11\nx\nline 13\n"
                   (lambda () (error "No review expected")))))
      (should (string-match-p "Closest match at line 11" result))
      (should (string-match-p "    12: line 12\n" result))
      (should (string-match-p "    10: line 10\n" result)))))

(ert-deftest agent-q-review-test-excerpt ()
  (agent-q-review-test--with-file file agent-q-review-test--old
    (let ((result (agent-q-review-test--review
                   file "line 19\nline 20\nline 21\n" "line 19\nLINE TWENTY\nline 21\n"
                   (lambda ()
                     (should (= (agent-q-review--hunk-count agent-q-review--this-review) 1))
                     (agent-q-review-accept)
                     (agent-q-review-finish)))))
      (should (string-match-p "Applied 1 of 1 hunks" result))
      (should (equal (agent-q-review-test--buffer-text file)
                     (agent-q-review-test--expected '(2)))))))

(ert-deftest agent-q-review-test-excerpt-after-non-ascii-text ()
  ;; Positions from the module are characters: multibyte text before the
  ;; excerpt must not shift the replacement.
  (agent-q-review-test--with-file file "héllo wörld ✓\nçà et là\nfin\n"
    (let ((result (agent-q-review-test--review
                   file "çà et là\n" "ÇÀ et là\n"
                   (lambda ()
                     (agent-q-review-accept)
                     (agent-q-review-finish)))))
      (should (string-match-p "Applied 1 of 1 hunks" result))
      (should (equal (agent-q-review-test--buffer-text file)
                     "héllo wörld ✓\nÇÀ et là\nfin\n")))))

(ert-deftest agent-q-review-test-ambiguous-excerpt ()
  (agent-q-review-test--with-file file "x\ny\nx\n"
    (let ((result (agent-q-review-test--review file "x\n" "z\n"
                                              (lambda () (error "No review expected")))))
      (should (string-match-p "occurs 2 times" result))
      (should (string-match-p "lines 1, 3" result)))))

(ert-deftest agent-q-review-test-identical-proposal ()
  (agent-q-review-test--with-file file "same\n"
    (should (string-match-p "identical"
                            (agent-q-review-test--review file "same\n" "same\n"
                                                        (lambda () (error "No review expected")))))))

(ert-deftest agent-q-review-test-undo-is-one-step ()
  (agent-q-review-test--with-file file agent-q-review-test--old
    (let ((buffer (find-file-noselect file)))
      ;; An earlier user edit, which undo must not take back.
      (with-current-buffer buffer
        (goto-char (point-max))
        (insert "user line\n")
        (undo-boundary))
      (let ((before (agent-q-review-test--buffer-text file)))
        (agent-q-review-test--review
         file before (agent-q-review-test--replace-lines
                      before agent-q-review-test--changes)
         (lambda ()
           (agent-q-review-accept-all)
           (agent-q-review-finish)))
        (should-not (equal (agent-q-review-test--buffer-text file) before))
        (with-current-buffer buffer
          (let ((last-command nil))
            (undo)))
        (should (equal (agent-q-review-test--buffer-text file) before))))))

(ert-deftest agent-q-review-test-kill-buffer-rejects-all ()
  (agent-q-review-test--with-file file agent-q-review-test--old
    (let ((result (agent-q-review-test--review
                   file agent-q-review-test--old agent-q-review-test--new
                   (lambda ()
                     (agent-q-review-accept)
                     (kill-buffer (current-buffer))))))
      (should (string-match-p "Applied 0 of 3 hunks .*the user rejected the whole edit" result))
      (should (string-match-p "No change made\\." result))
      (should-not (find-buffer-visiting file))
      (should (equal (agent-q-review-test--file-text file) agent-q-review-test--old)))))

(ert-deftest agent-q-review-test-save-option ()
  (agent-q-review-test--with-file file agent-q-review-test--old
    (let* ((agent-q-diff-save-after-apply t)
           (result (agent-q-review-test--review
                    file agent-q-review-test--old agent-q-review-test--new
                    (lambda ()
                      (agent-q-review-accept-all)
                      (agent-q-review-finish)))))
      (should (string-match-p (format "Saved %s\\." (regexp-quote file)) result))
      (should (equal (agent-q-review-test--file-text file) agent-q-review-test--new)))))

(ert-deftest agent-q-review-test-edit-hunk ()
  (agent-q-review-test--with-file file agent-q-review-test--old
    (let ((result (agent-q-review-test--review
                   file agent-q-review-test--old agent-q-review-test--new
                   (lambda ()
                     (let ((review-buffer (current-buffer)))
                       (agent-q-review-reject)
                       ;; Point is on hunk 2: edit its proposed side.
                       (agent-q-review-edit-hunk)
                       (should agent-q-review-hunk-edit-mode)
                       (should (string-match-p "^LINE TWENTY$" (buffer-string)))
                       (goto-char (point-min))
                       (let ((case-fold-search nil))
                         (while (search-forward "LINE TWENTY" nil t)
                           (replace-match "line 20, edited by the user" t t)))
                       (agent-q-review-hunk-edit-accept)
                       (should (eq (current-buffer) review-buffer))
                       (should (string-match-p "\\[ACCEPTED, EDITED\\]" (buffer-string)))
                       (agent-q-review-finish))))))
      (should (equal (agent-q-review-test--buffer-text file)
                     (agent-q-review-test--replace-lines
                      agent-q-review-test--old '((20 . "line 20, edited by the user")))))
      (should (string-match-p
               "(hunk 2 accepted with the user's edits; hunk 1 rejected; hunk 3 left pending (not applied))"
               result))
      (should (string-match-p "now reads:\nline 17\nline 18\nline 19\nline 20, edited by the user\n"
                              result)))))

(ert-deftest agent-q-review-test-q-asks-when-pending ()
  (agent-q-review-test--with-file file agent-q-review-test--old
    (let* ((asked nil)
           (result
            (cl-letf (((symbol-function 'y-or-n-p)
                       (lambda (prompt)
                         (setq asked prompt)
                         t)))
              (agent-q-review-test--review
               file agent-q-review-test--old agent-q-review-test--new
               (lambda ()
                 (agent-q-review-accept)
                 (agent-q-review-quit))))))
      (should (string-match-p "2 hunks are still pending" asked))
      (should (string-match-p "Applied 1 of 3 hunks" result))
      (should (equal (agent-q-review-test--buffer-text file)
                     (agent-q-review-test--expected '(1)))))))

(ert-deftest agent-q-review-test-new-file ()
  (let ((file (make-temp-name (expand-file-name "agent-q-tools-new-" temporary-file-directory))))
    (unwind-protect
        (let ((result (agent-q-review-test--review
                       file "" "hello\nworld\n"
                       (lambda ()
                         (agent-q-review-accept)
                         (agent-q-review-finish)))))
          (should (string-match-p "Applied 1 of 1 hunks" result))
          (should (equal (agent-q-review-test--buffer-text file) "hello\nworld\n"))
          (should-not (file-exists-p file)))
      (when-let ((b (find-buffer-visiting file)))
        (with-current-buffer b (set-buffer-modified-p nil))
        (kill-buffer b)))))

(ert-deftest agent-q-review-test-buffer-changed-during-review ()
  (agent-q-review-test--with-file file agent-q-review-test--old
    (let ((result (agent-q-review-test--review
                   file agent-q-review-test--old agent-q-review-test--new
                   (lambda ()
                     (agent-q-review-accept-all)
                     (with-current-buffer (find-file-noselect file)
                       (goto-char (point-min))
                       (insert "meanwhile\n"))
                     (agent-q-review-finish)))))
      (should (string-match-p "changed during the review, so nothing was applied" result))
      (should (equal (agent-q-review-test--buffer-text file)
                     (concat "meanwhile\n" agent-q-review-test--old))))))

;; The same review in a real terminal Emacs, driven through tmux, is in
;; agent-q-tmux-test.el (through the executor, as an LLM loop runs it).

(ert-deftest agent-q-review-test-a-large-review-renders-lazily ()
  ;; 20,000 lines, every 20th changed: 1,000 hunks.  The review opens with
  ;; every header but only the first bodies; moving to a hunk renders up to
  ;; it; the decisions apply as reviewed.
  (let* ((old (mapconcat (lambda (i) (format "line %d\n" i)) (number-sequence 1 20000) ""))
         (new (replace-regexp-in-string "^line \\([0-9]*[02468]\\)0$" "LINE \\10" old)))
    (agent-q-review-test--with-file file old
      (let ((result
             (agent-q-review-test--review
              file old new
              (lambda ()
                (let ((review agent-q-review--this-review))
                  (should (= (agent-q-review--hunk-count review) 1000))
                  (should (= (agent-q-review--review-rendered review)
                             agent-q-review--bodies-at-once))
                  (should (= (count-matches "^@@ " (point-min) (point-max)) 1000))
                  (agent-q-review-reject)
                  (agent-q-review--goto-hunk review 500)
                  (should (>= (agent-q-review--review-rendered review) 501))
                  (should (looking-at "@@ -10017,7 \\+10017,7 @@"))
                  (agent-q-review-reject)
                  (agent-q-review-accept-all)
                  (agent-q-review-finish))))))
        (should (string-match-p "Applied 998 of 1000 hunks" result))
        (should (string-match-p "hunks 1 and 501 rejected" result))
        (let ((text (agent-q-review-test--buffer-text file)))
          (should (string-match-p "^line 20$" text))
          (should (string-match-p "^LINE 40$" text))
          (should (string-match-p "^line 10020$" text))
          (should (string-match-p "^LINE 20000$" text)))))))

(provide 'agent-q-review-test)

;;; agent-q-review-test.el ends here
