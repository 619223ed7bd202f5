;;; agent-q-diff-test.el --- Tests of the module's diff functions  -*- lexical-binding: t -*-

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

;; ERT tests, through the module, of the diff sessions behind the review
;; of propose_file_edit (`agent-q--core-diff-session' and the
;; `agent-q--core-diff-session-*' functions): they must give, hunk by hunk
;; and on demand, exactly what `agent-q--core-diff-hunks' and
;; `agent-q--core-diff-apply' give all at once.  Also the bounded
;; closest-match explanation of `agent-q--core-diff-locate'.
;;
;; emacs --batch -Q -L lisp -L tests -l tests/agent-q-diff-test.el \
;;   -f ert-run-tests-batch-and-exit

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-q-core)

(declare-function agent-q--core-diff-hunks "agent-q-core" (old new))
(declare-function agent-q--core-diff-apply "agent-q-core" (old new decisions))
(declare-function agent-q--core-diff-locate "agent-q-core" (current original))
(declare-function agent-q--core-diff-session "agent-q-core" (old new))
(declare-function agent-q--core-diff-session-count "agent-q-core" (session))
(declare-function agent-q--core-diff-session-summary "agent-q-core" (session))
(declare-function agent-q--core-diff-session-hunk "agent-q-core" (session index))
(declare-function agent-q--core-diff-session-changes "agent-q-core" (session index))
(declare-function agent-q--core-diff-session-apply "agent-q-core" (session decisions))

(defun agent-q-diff-test--numbered (n)
  "Return N lines \"line I\"."
  (mapconcat (lambda (i) (format "line %d\n" i)) (number-sequence 1 n) ""))

(defun agent-q-diff-test--edit (text alist)
  "Return TEXT with the lines numbered in ALIST (N . NEW) replaced by NEW.
NEW nil deletes the line; NEW may hold several lines."
  (let ((lines (split-string text "\n")))
    (dolist (pair alist)
      (setf (nth (1- (car pair)) lines) (or (cdr pair) 'delete)))
    (mapconcat #'identity (delq 'delete lines) "\n")))

(defconst agent-q-diff-test--old
  (concat (agent-q-diff-test--numbered 59) "the café au lait")
  "A 60-line text whose last line has no newline.")

(defconst agent-q-diff-test--new
  (concat (agent-q-diff-test--edit (agent-q-diff-test--numbered 59)
                                   '((2 . "line two") (20) (35 . "line 35\nadded")))
          "the thé au lait\n")
  "`agent-q-diff-test--old' with four hunks: a word changed, a line deleted,
a line added, and the last line changed and given a newline.")

(defconst agent-q-diff-test--summary-keys
  '(:index :header :old-start :old-lines :new-start :new-lines)
  "The keys of a hunk summary.")

(defun agent-q-diff-test--summary-of (hunk)
  "Return the summary part of HUNK, a plist of `agent-q--core-diff-hunks'."
  (cl-loop for key in agent-q-diff-test--summary-keys
           append (list key (plist-get hunk key))))

(defun agent-q-diff-test--without-refine (hunk)
  "Return HUNK, a hunk plist, without its :refine entry."
  (cl-loop for (key value) on hunk by #'cddr
           unless (eq key :refine) append (list key value)))

(ert-deftest agent-q-diff-test-session-gives-what-hunks-gives ()
  (let* ((all (agent-q--core-diff-hunks agent-q-diff-test--old agent-q-diff-test--new))
         (session (agent-q--core-diff-session agent-q-diff-test--old agent-q-diff-test--new))
         (summary (agent-q--core-diff-session-summary session)))
    (should (= (length all) 4))
    (should (= (agent-q--core-diff-session-count session) 4))
    (should (vectorp summary))
    (should (equal (append summary nil) (mapcar #'agent-q-diff-test--summary-of all)))
    (should (equal (aref summary 0)
                   '(:index 0 :header "@@ -1,5 +1,5 @@" :old-start 1 :old-lines 5
                            :new-start 1 :new-lines 5)))
    ;; Each hunk, built on demand (in any order), is the same plist.
    (dolist (i '(3 0 2 1 3))
      (should (equal (agent-q--core-diff-session-hunk session i) (nth i all))))
    ;; The word refinement and the missing-newline marker are there.
    (let ((last (agent-q--core-diff-session-hunk session 3)))
      (should (equal (plist-get last :lines)
                     '((context . "line 57") (context . "line 58") (context . "line 59")
                       (removed . "the café au lait")
                       (no-newline . "\\ No newline at end of file")
                       (added . "the thé au lait"))))
      (should (equal (plist-get last :refine) '((3 4 8) (5 4 7)))))))

(ert-deftest agent-q-diff-test-hunks-texts-are-plain-strings ()
  ;; The texts come from the caller's strings; their text properties do not.
  (let* ((old (propertize "a\nthe café\nb\n" 'face 'bold))
         (hunk (car (agent-q--core-diff-hunks old "a\nthe thé\nb\n"))))
    (should (equal (plist-get hunk :lines)
                   '((context . "a") (removed . "the café") (added . "the thé") (context . "b"))))
    (should (equal (plist-get hunk :old-text) "a\nthe café\nb\n"))
    (dolist (text (cons (plist-get hunk :old-text) (mapcar #'cdr (plist-get hunk :lines))))
      (should-not (text-properties-at 0 text)))
    ;; Modifying a result does not modify the caller's string.
    (aset (plist-get hunk :old-text) 0 ?z)
    (should (equal (substring-no-properties old) "a\nthe café\nb\n"))))

(ert-deftest agent-q-diff-test-session-applies-without-diffing-again ()
  (let ((session (agent-q--core-diff-session agent-q-diff-test--old agent-q-diff-test--new)))
    (dolist (decisions '((accept accept accept accept)
                         (reject reject reject reject)
                         (accept reject :accept :reject)
                         (reject "line 17\nEDITED\nline 23\n" accept reject)))
      (should (equal (agent-q--core-diff-session-apply session decisions)
                     (agent-q--core-diff-apply agent-q-diff-test--old agent-q-diff-test--new
                                               decisions))))
    (should (equal (agent-q--core-diff-session-apply session '(accept accept accept accept))
                   agent-q-diff-test--new))
    (should (equal (agent-q--core-diff-session-apply session '(reject reject reject reject))
                   agent-q-diff-test--old))
    ;; Bad decisions are refused with a message naming the problem.
    (let ((err (should-error (agent-q--core-diff-session-apply session '(accept))
                             :type 'agent-q-diff-error)))
      (should (equal (cadr err) "expected 4 decision(s), one per hunk, got 1")))
    (let ((err (should-error (agent-q--core-diff-session-apply session '(accept maybe reject reject))
                             :type 'agent-q-diff-error)))
      (should (string-match-p "invalid hunk decision maybe" (cadr err))))
    (should-error (agent-q--core-diff-session-apply session '(accept . reject))
                  :type 'agent-q-diff-error)))

(ert-deftest agent-q-diff-test-session-changes ()
  (let ((session (agent-q--core-diff-session agent-q-diff-test--old agent-q-diff-test--new)))
    (should (equal (agent-q--core-diff-session-changes session 0)
                   "@@ -2,1 +2,1 @@\n-line 2\n+line two\n"))
    (should (equal (agent-q--core-diff-session-changes session 1)
                   "@@ -20,1 +19,0 @@\n-line 20\n"))
    (should (equal (agent-q--core-diff-session-changes session 2)
                   "@@ -35,0 +35,1 @@\n+added\n"))
    (should (equal (agent-q--core-diff-session-changes session 3)
                   "@@ -60,1 +60,1 @@\n-the café au lait\n\\ No newline at end of file\n+the thé au lait\n"))))

(ert-deftest agent-q-diff-test-session-errors-and-edge-cases ()
  (let ((session (agent-q--core-diff-session "same\n" "same\n")))
    (should (= (agent-q--core-diff-session-count session) 0))
    (should (equal (agent-q--core-diff-session-summary session) []))
    (should (equal (agent-q--core-diff-session-apply session nil) "same\n"))
    (let ((err (should-error (agent-q--core-diff-session-hunk session 0)
                             :type 'agent-q-diff-error)))
      (should (equal (cadr err) "no hunk 0 in this diff: it has 0 hunk(s), numbered from 0"))))
  (let ((session (agent-q--core-diff-session "" "new\n")))
    (should (equal (plist-get (agent-q--core-diff-session-hunk session 0) :header)
                   "@@ -0,0 +1 @@"))
    (should-error (agent-q--core-diff-session-hunk session -1) :type 'agent-q-diff-error)
    (should-error (agent-q--core-diff-session-changes session 1) :type 'agent-q-diff-error))
  ;; Anything but a session is refused.
  (should-error (agent-q--core-diff-session-count "not a session") :type 'agent-q-diff-error)
  (should-error (agent-q--core-diff-session-hunk nil 0) :type 'agent-q-diff-error))

(ert-deftest agent-q-diff-test-session-outlives-garbage-collection ()
  (let ((session (agent-q--core-diff-session "a\nb\n" "a\nc\n")))
    ;; Sessions that become garbage are freed by their finalizer meanwhile.
    (dotimes (_ 200) (agent-q--core-diff-session (make-string 1000 ?x) "y\n"))
    (garbage-collect)
    (should (equal (agent-q--core-diff-session-apply session '(accept)) "a\nc\n"))
    (should (equal (plist-get (agent-q--core-diff-session-hunk session 0) :lines)
                   '((context . "a") (removed . "b") (added . "c"))))))

(ert-deftest agent-q-diff-test-session-on-many-hunks ()
  (let* ((old (agent-q-diff-test--numbered 20000))
         (new (replace-regexp-in-string "^line \\([0-9]*7\\)$" "LINE \\1" old))
         (all (agent-q--core-diff-hunks old new))
         (session (agent-q--core-diff-session old new))
         (summary (agent-q--core-diff-session-summary session)))
    (should (= (length all) 2000))
    (should (= (length summary) 2000))
    (should (equal (append summary nil) (mapcar #'agent-q-diff-test--summary-of all)))
    ;; All at once, word refinement shares one time budget (later hunks may go unrefined
    ;; on a slow machine); on demand, each hunk has its own.
    (dolist (i '(0 1 999 1999))
      (let ((hunk (agent-q--core-diff-session-hunk session i)))
        (should (equal (agent-q-diff-test--without-refine hunk)
                       (agent-q-diff-test--without-refine (nth i all))))
        ;; "line 9997" -> "LINE 9997" is refined; "line 7" -> "LINE 7" has too little in
        ;; common to be.
        (should (equal (plist-get hunk :refine) (if (< i 2) nil '((3 0 4) (4 0 4)))))))
    (should (equal (agent-q--core-diff-session-apply session (make-list 2000 'accept)) new))))

(ert-deftest agent-q-diff-test-locate-explains-a-stale-excerpt-of-long-lines ()
  ;; Every line of the excerpt was edited since it was read: no line matches exactly,
  ;; and the closest line is found among 400 lines of 300 characters.
  (let* ((words ["alpha" "beta" "gamma" "delta" "epsilon"])
         (current (progn
                    (random "agent-q-diff-test")
                    (mapconcat (lambda (i)
                                 (let ((line (format "%04d" i)))
                                   (while (< (length line) 300)
                                     (setq line (concat line " " (aref words (random 5)))))
                                   (concat line "\n")))
                               (number-sequence 1 400) "")))
         (lines (split-string current "\n"))
         (original (mapconcat (lambda (l)
                                (let ((i (string-match "a" l)))
                                  (concat (substring l 0 i) "A" (substring l (1+ i)) "\n")))
                              (cl-subseq lines 250 253) ""))
         (err (should-error (agent-q--core-diff-locate current original)
                            :type 'agent-q-diff-error)))
    (should (string-prefix-p "`original` does not match the current text" (cadr err)))
    (should (string-match-p "Closest match at line 251; line 251 is `0251 " (cadr err)))
    (should (string-match-p "Current text there:\n   249: 0249 " (cadr err)))
    (should-not (string-match-p "cut short" (cadr err)))))

(provide 'agent-q-diff-test)

;;; agent-q-diff-test.el ends here
