;;; agent-q-gate-edit-test.el --- Tests of the agents' own edits, reviewed  -*- lexical-binding: t -*-

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

;; The gate's review of the agents' own edits (lisp/agent-q-gate-edit.el):
;; the module's proposed text, gate requests decided through the
;; executor with the review driven by a function (answers recorded
;; instead of sent), the rewritten inputs, protected files, and the IDE
;; companion's openDiff of an edit the gate reviewed.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'json)
(require 'subr-x)
(require 'agent-q)
(require 'agent-q-gate)
(require 'agent-q-gate-edit)
(require 'agent-q-review)
(require 'agent-q-ide)
(require 'agent-q-gate-test)

(defvar agent-q-review--review-driver)
(defvar agent-q-review--this-review)
(defvar agent-q-ide--reviews)

;;;; The module's proposed text

(ert-deftest agent-q-gate-edit-test-proposed-text ()
  "Edits, writes and patches give the file's new text; bad edits signal."
  (should (equal (agent-q--core-gate-edit-text
                  "claude" "Edit" (json-encode '(:file_path "/f" :old_string "b" :new_string "B"))
                  "a\nb\n" nil)
                 "a\nB\n"))
  (should (equal (agent-q--core-gate-edit-text
                  "claude" "MultiEdit"
                  (json-encode '(:file_path "/f" :edits [(:old_string "a" :new_string "x")
                                                         (:old_string "b" :new_string "y"
                                                                      :replace_all t)]))
                  "a b b" nil)
                 "x y y"))
  (should (equal (agent-q--core-gate-edit-text
                  "gemini" "replace"
                  (json-encode '(:file_path "/f" :old_string "b" :new_string "c"
                                            :expected_replacements 2))
                  "b b" nil)
                 "c c"))
  (should (equal (agent-q--core-gate-edit-text
                  "gemini" "write_file" (json-encode '(:file_path "/f" :content "new"))
                  "old" nil)
                 "new"))
  (should (equal (agent-q--core-gate-edit-text
                  "codex" "apply_patch"
                  (json-encode '(:command "*** Begin Patch\n*** Update File: f\n@@\n a\n-b\n+B\n*** End Patch\n"))
                  "a\nb\nc\n" 0)
                 "a\nB\nc\n"))
  (let ((err (should-error (agent-q--core-gate-edit-text
                            "claude" "Edit"
                            (json-encode '(:file_path "/f" :old_string "b" :new_string "B"))
                            "b b" nil)
                           :type 'agent-q-error)))
    (should (string-match-p "not unique" (cadr err))))
  (should-error (agent-q--core-gate-edit-text
                 "claude" "Edit" (json-encode '(:file_path "/f" :old_string "z" :new_string "B"))
                 "b" nil)
                :type 'agent-q-error)
  (should-error (agent-q--core-gate-edit-text "claude" "Bash" "{\"command\":\"ls\"}" "" nil)
                :type 'agent-q-error)
  (should (equal (agent-q--core-gate-patch-section "f" "a\nb\n" "a\nc\n" nil)
                 "*** Update File: f\n@@\n-a\n-b\n+a\n+c\n")))

;;;; Gate requests, the review driven

(defconst agent-q-gate-edit-test--old
  "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\na\nb\nc\nd\ne\nf\ng\nh\nnine\nten\n"
  "A file of eighteen lines.")

(defconst agent-q-gate-edit-test--new
  "one\nTWO\nthree\nfour\nfive\nsix\nseven\neight\na\nb\nc\nd\ne\nf\ng\nh\nNINE\nten\n"
  "The file with two separated changes.")

(defconst agent-q-gate-edit-test--first
  "one\nTWO\nthree\nfour\nfive\nsix\nseven\neight\na\nb\nc\nd\ne\nf\ng\nh\nnine\nten\n"
  "The file with only the first change.")

(defun agent-q-gate-edit-test--driver (decisions &optional seen)
  "A review driver that sets the hunks to DECISIONS and finishes.
SEEN, a cons, gets the number of reviews in its car."
  (lambda (buffer)
    (when seen (cl-incf (car seen)))
    (with-current-buffer buffer
      (let ((review agent-q-review--this-review))
        (cl-loop for d in decisions for i from 0
                 when (< i (length (agent-q-review--review-decisions review)))
                 do (aset (agent-q-review--review-decisions review) i d))
        (agent-q-review--finish review)))))

(defmacro agent-q-gate-edit-test--with-file (spec &rest body)
  "Bind (DIR FILE) of SPEC to a temporary directory and a file of it; run BODY.
The file holds `agent-q-gate-edit-test--old'."
  (declare (indent 1))
  `(let* ((,(car spec) (file-name-as-directory (make-temp-file "agent-q-gate-edit" t)))
          (,(cadr spec) (expand-file-name "f.txt" ,(car spec))))
     (unwind-protect
         (progn (with-temp-file ,(cadr spec) (insert agent-q-gate-edit-test--old))
                ,@body)
       (delete-directory ,(car spec) t))))

(defun agent-q-gate-edit-test--request (key agent tool input kind cwd)
  "Hand the gate the edit request KEY: AGENT's TOOL with INPUT, KIND, in CWD."
  (agent-q-gate-request key (list :agent agent :event 'pre-tool :session "s1" :cwd cwd
                                  :tool tool :tool-use-id "t1" :input input :kind kind)))

(defun agent-q-gate-edit-test--apply (agent tool input current &optional index)
  "The text AGENT's TOOL with INPUT (JSON text) writes over CURRENT."
  (agent-q--core-gate-edit-text (symbol-name agent) tool input current index))

(ert-deftest agent-q-gate-edit-test-claude-edit-partial ()
  "One hunk accepted, one rejected: the rewritten Edit writes exactly the accepted one."
  (agent-q-gate-edit-test--with-file (root file)
    (agent-q-gate-test--with-gate #'ignore
      (let ((agent-q-review--review-driver (agent-q-gate-edit-test--driver '(accept reject)))
            (input (list :file_path file :old_string "two\nthree\nfour\nfive\nsix\nseven\neight\na\nb\nc\nd\ne\nf\ng\nh\nnine"
                         :new_string "TWO\nthree\nfour\nfive\nsix\nseven\neight\na\nb\nc\nd\ne\nf\ng\nh\nNINE")))
        (agent-q-gate-edit-test--request
         1 'claude "Edit" input
         (list :kind "edit" :path file :multi :json-false
               :edits (vector (list :old_string (plist-get input :old_string)
                                    :new_string (plist-get input :new_string))))
         root)
        (let ((answer (agent-q-gate-test--answer 1)))
          (should (eq (car answer) 'allow))
          (should (equal (agent-q-gate-edit-test--apply 'claude "Edit" (cadr answer)
                                                        agent-q-gate-edit-test--old)
                         agent-q-gate-edit-test--first)))
        ;; The audit names the agent.
        (let ((audit (agent-q-agents-test--json-lines agent-q-audit-file)))
          (should audit)
          (dolist (record audit)
            (should (equal (alist-get 'client record) "claude (own tools) s1"))
            (should (equal (alist-get 'tool record) "agent_edit"))))))))

(ert-deftest agent-q-gate-edit-test-writes-and-rejections ()
  "Write and write_file get the accepted content; all accepted: allow unchanged; none: deny."
  (agent-q-gate-edit-test--with-file (root file)
    (agent-q-gate-test--with-gate #'ignore
      (let ((input (list :file_path file :content agent-q-gate-edit-test--new))
            (kind (list :kind "write" :path file :content agent-q-gate-edit-test--new)))
        (let ((agent-q-review--review-driver (agent-q-gate-edit-test--driver '(accept reject))))
          (agent-q-gate-edit-test--request 1 'gemini "write_file" input kind root)
          (let ((answer (agent-q-gate-test--answer 1)))
            (should (eq (car answer) 'allow))
            (should (equal (alist-get 'content (json-parse-string (cadr answer)
                                                                  :object-type 'alist))
                           agent-q-gate-edit-test--first))))
        (let ((agent-q-review--review-driver (agent-q-gate-edit-test--driver '(accept accept))))
          (agent-q-gate-edit-test--request 2 'claude "Write" input kind root)
          (should (equal (agent-q-gate-test--answer 2) '(allow nil))))
        (let ((agent-q-review--review-driver (agent-q-gate-edit-test--driver '(reject reject))))
          (agent-q-gate-edit-test--request 3 'claude "Write" input kind root)
          (let ((answer (agent-q-gate-test--answer 3)))
            (should (eq (car answer) 'deny))
            (should (string-match-p "user rejected the edit" (cadr answer)))))
        ;; An edit that cannot apply is denied, saying why; nothing reviewed.
        (let ((agent-q-review--review-driver (lambda (_) (ert-fail "no review may open"))))
          (agent-q-gate-edit-test--request
           4 'gemini "replace" (list :file_path file :old_string "absent" :new_string "x")
           (list :kind "edit" :path file :multi :json-false
                 :edits (vector (list :old_string "absent" :new_string "x")))
           root)
          (let ((answer (agent-q-gate-test--answer 4)))
            (should (eq (car answer) 'deny))
            (should (string-match-p "not found" (cadr answer)))))))))

(ert-deftest agent-q-gate-edit-test-gemini-replace-rewritten ()
  "A partly accepted Gemini replace is rewritten to one exact replacement."
  (agent-q-gate-edit-test--with-file (root file)
    (agent-q-gate-test--with-gate #'ignore
      (let ((agent-q-review--review-driver (agent-q-gate-edit-test--driver '(reject accept)))
            (input (list :file_path file :old_string "two\nthree\nfour\nfive\nsix\nseven\neight\na\nb\nc\nd\ne\nf\ng\nh\nnine"
                         :new_string "TWO\nthree\nfour\nfive\nsix\nseven\neight\na\nb\nc\nd\ne\nf\ng\nh\nNINE"
                         :instruction "change")))
        (agent-q-gate-edit-test--request
         1 'gemini "replace" input
         (list :kind "edit" :path file :multi :json-false
               :edits (vector (list :old_string (plist-get input :old_string)
                                    :new_string (plist-get input :new_string))))
         root)
        (let ((answer (agent-q-gate-test--answer 1)))
          (should (eq (car answer) 'allow))
          (should (equal (agent-q-gate-edit-test--apply 'gemini "replace" (cadr answer)
                                                        agent-q-gate-edit-test--old)
                         "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\na\nb\nc\nd\ne\nf\ng\nh\nNINE\nten\n")))))))

(ert-deftest agent-q-gate-edit-test-codex-patch ()
  "Codex: all accepted, allow with its own input; part, a new patch of the accepted text."
  (agent-q-gate-edit-test--with-file (root file)
    (agent-q-gate-test--with-gate #'ignore
      (let* ((patch "*** Begin Patch\n*** Update File: f.txt\n@@\n one\n-two\n+TWO\n@@ eight\n-nine\n+NINE\n*** Add File: g.txt\n+hello\n*** End Patch\n")
             (input (list :command patch))
             (kind (list :kind "patch" :patch patch
                         :files (vector (list :action "update" :path "f.txt")
                                        (list :action "add" :path "g.txt")))))
        (let ((agent-q-review--review-driver (agent-q-gate-edit-test--driver '(accept accept))))
          (agent-q-gate-edit-test--request 1 'codex "apply_patch" input kind root)
          (let ((answer (agent-q-gate-test--answer 1)))
            (should (eq (car answer) 'allow))
            (should (equal (json-parse-string (cadr answer) :object-type 'plist) input))))
        (let ((agent-q-review--review-driver (agent-q-gate-edit-test--driver '(accept reject))))
          (agent-q-gate-edit-test--request 2 'codex "apply_patch" input kind root)
          (let* ((answer (agent-q-gate-test--answer 2))
                 (new (cadr answer)))
            (should (eq (car answer) 'allow))
            ;; g.txt (one hunk) was accepted, f.txt's second hunk rejected.
            (should (equal (agent-q-gate-edit-test--apply 'codex "apply_patch" new
                                                          agent-q-gate-edit-test--old 0)
                           agent-q-gate-edit-test--first))
            (should (equal (agent-q-gate-edit-test--apply 'codex "apply_patch" new "" 1)
                           "hello\n"))))))))

(ert-deftest agent-q-gate-edit-test-codex-move-is-denied ()
  "Codex: a patch that moves a file is denied unshown, saying why.
The review would show the change of the file named, not the file the
move writes (which may be protected)."
  (agent-q-gate-edit-test--with-file (root file)
    (agent-q-gate-test--with-gate #'ignore
      (let* ((patch "*** Begin Patch\n*** Update File: f.txt\n*** Move to: .git/hooks/pre-commit\n@@\n one\n-two\n+TWO\n*** End Patch\n")
             (kind (list :kind "patch" :patch patch
                         :files (vector (list :action "update" :path "f.txt"
                                              :move_to ".git/hooks/pre-commit"))))
             (reviewed nil))
        (let ((agent-q-review--review-driver (lambda (&rest _) (setq reviewed t) nil)))
          (agent-q-gate-edit-test--request 1 'codex "apply_patch" (list :command patch) kind root)
          (let ((answer (agent-q-gate-test--answer 1)))
            (should (eq (car answer) 'deny))
            (should (string-match-p "moves f\\.txt to \\.git/hooks/pre-commit" (cadr answer)))
            (should-not reviewed)
            (should (equal (with-temp-buffer (insert-file-contents file) (buffer-string))
                           agent-q-gate-edit-test--old))))))))

(ert-deftest agent-q-gate-edit-test-rules-and-protected ()
  "An allow rule lets an edit through unreviewed, never one of a protected file."
  (agent-q-gate-edit-test--with-file (root file)
    (agent-q-gate-test--with-gate #'ignore
      (let* ((seen (list 0))
             (agent-q-review--review-driver (agent-q-gate-edit-test--driver '(accept reject) seen))
             (agent-q-approval-rules `(("agent_edit" (:path ,(concat root "**")) allow)))
             (settings (expand-file-name ".claude/settings.json" root)))
        (agent-q-gate-edit-test--request
         1 'claude "Write" (list :file_path file :content agent-q-gate-edit-test--new)
         (list :kind "write" :path file :content agent-q-gate-edit-test--new) root)
        (should (equal (agent-q-gate-test--answer 1) '(allow nil)))
        (should (= (car seen) 0))
        (make-directory (file-name-directory settings) t)
        (agent-q-gate-edit-test--request
         2 'claude "Write" (list :file_path settings :content "{\"hooks\":{}}\n")
         (list :kind "write" :path settings :content "{\"hooks\":{}}\n") root)
        (let ((answer (agent-q-gate-test--answer 2)))
          (should (= (car seen) 1))
          (should (eq (car answer) 'allow)))
        ;; A deny rule refuses without a review.
        (let ((agent-q-approval-rules `(("agent_edit" (:path ,(concat root "**")) deny))))
          (agent-q-gate-edit-test--request
           3 'claude "Write" (list :file_path file :content agent-q-gate-edit-test--new)
           (list :kind "write" :path file :content agent-q-gate-edit-test--new) root)
          (should (eq (car (agent-q-gate-test--answer 3)) 'deny))
          (should (= (car seen) 1)))))))

(defun agent-q-gate-edit-test--open-review ()
  "The buffer of the review open now, its header and its help: a list."
  (let* ((review (car agent-q-review--open-reviews))
         (buffer (and review (agent-q-review--review-buffer review))))
    (should (buffer-live-p buffer))
    (with-current-buffer buffer
      (list buffer
            (buffer-substring-no-properties (point-min) (point-max))
            (progn (agent-q-review-help)
                   (with-current-buffer (help-buffer) (buffer-string)))))))

(ert-deftest agent-q-gate-edit-test-told-once-protected-said ()
  "An edit is told once, as waiting for a review; a protected file's review says why it is reviewed."
  (agent-q-gate-edit-test--with-file (root file)
    (let ((said nil))
      (cl-letf (((symbol-function 'agent-q-gate--bell) #'ignore)
                ((symbol-function 'display-graphic-p) (lambda (&rest _) nil)))
        (agent-q-gate-test--with-gate #'ignore
          (let* ((agent-q-gate-notify t)
                 (agent-q-review--review-driver nil)
                 (mcp (expand-file-name ".mcp.json" root)))
            ;; The review stays open, as for a user who has not answered yet.
            (cl-letf (((symbol-function 'message)
                       (lambda (format &rest args) (push (apply #'format format args) said))))
              (agent-q-gate-edit-test--request
               1 'claude "Write" (list :file_path file :content agent-q-gate-edit-test--new)
               (list :kind "write" :path file :content agent-q-gate-edit-test--new) root))
            ;; Told once: that it waits for a review, nothing else.
            (should (equal (cl-remove-if-not (lambda (m) (string-match-p "waits for your" m)) said)
                           (list (format "agent-q: claude (own tools) s1 waits for your review in Emacs: %s"
                                         (abbreviate-file-name file)))))
            (let ((open (agent-q-gate-edit-test--open-review)))
              ;; The help says that the agent writes the hunks, not Emacs.
              (should (string-match-p "\\`In this review, Emacs changes nothing: claude (own tools) s1 writes exactly the hunks you accept, itself\\."
                                      (nth 2 open)))
              (should-not (string-match-p "Protected" (nth 1 open)))
              (with-current-buffer (car open) (agent-q-review-cancel)))
            (should (eq (car (agent-q-gate-test--answer 1)) 'deny))
            ;; .mcp.json, though an allow rule covers the folder: reviewed, saying why.
            (let ((agent-q-approval-rules `(("agent_edit" (:path ,(concat root "**")) allow))))
              (agent-q-gate-edit-test--request
               2 'claude "Write" (list :file_path mcp :content "{\"mcpServers\":{}}\n")
               (list :kind "write" :path mcp :content "{\"mcpServers\":{}}\n") root)
              (let ((open (agent-q-gate-edit-test--open-review)))
                (should (string-match-p "Protected, so reviewed whatever the approval rules say: .*\\.mcp\\.json governs what agents or programs may do, or runs code on its own"
                                        (nth 1 open)))
                (with-current-buffer (car open) (agent-q-review-cancel)))
              (should (eq (car (agent-q-gate-test--answer 2)) 'deny)))))))))

(ert-deftest agent-q-gate-edit-test-ide-once ()
  "An openDiff of exactly the text the gate let through is accepted without a review."
  (agent-q-gate-edit-test--with-file (_dir file)
    (let ((answers nil)
          (agent-q-audit-file (make-temp-file "agent-q-audit"))
          (agent-q-gate-edit--reviewed nil)
          (agent-q-ide--reviews nil)
          (agent-q-review--review-driver (agent-q-gate-edit-test--driver '(accept reject))))
      (unwind-protect
          (cl-letf (((symbol-function 'agent-q--core-ide-answer)
                     (lambda (key answer) (push (cons key answer) answers))))
            (let ((accepted nil))
              (agent-q-gate-edit-review file agent-q-gate-edit-test--old
                                        agent-q-gate-edit-test--new "claude (own tools) s1"
                                        (lambda (text &rest _) (setq accepted text)))
              (should (equal accepted agent-q-gate-edit-test--first))
              (let ((agent-q-review--review-driver (lambda (_) (ert-fail "reviewed twice"))))
                (agent-q-ide--open-diff (list :key 7 :agent 'claude :path file
                                              :content agent-q-gate-edit-test--first
                                              :client "claude-code")))
              ;; One executor call of agent_edit, whose result comes back
              ;; through the executor's channel.
              (let ((deadline (+ (float-time) 10)))
                (while (and (not (assq 7 answers)) (< (float-time) deadline))
                  (accept-process-output nil 0.05)))
              (should (equal (cdr (assq 7 answers)) (list :accepted agent-q-gate-edit-test--first)))
              ;; Used up: the same openDiff again is reviewed.
              (let ((seen (list 0)))
                (let ((agent-q-review--review-driver
                       (agent-q-gate-edit-test--driver '(reject) seen)))
                  (agent-q-ide--open-diff (list :key 8 :agent 'claude :path file
                                                :content agent-q-gate-edit-test--first
                                                :client "claude-code")))
                (should (= (car seen) 1)))
              ;; Rejected by the gate: nothing remembered.
              (let ((agent-q-review--review-driver
                     (agent-q-gate-edit-test--driver '(reject reject))))
                (agent-q-gate-edit-review file agent-q-gate-edit-test--old
                                          agent-q-gate-edit-test--new "x"
                                          (lambda (text &rest _) (setq accepted (list text)))))
              (should-not agent-q-gate-edit--reviewed)
              (should (equal accepted '(nil)))))
        (delete-file agent-q-audit-file)))))

;;;; The real agents

(defun agent-q-gate-edit-test--real-driver (buffer)
  "Drive the review in BUFFER as the real-agent tests do.
f.txt: accept the first hunk, reject the second; g.txt: reject all;
any other file (the agent's settings): accept all."
  (with-current-buffer buffer
    (let* ((review agent-q-review--this-review)
           (decisions (agent-q-review--review-decisions review))
           (name (file-name-nondirectory (agent-q-review-file review))))
      (push name agent-q-gate-edit-test--reviewed)
      (dotimes (i (length decisions))
        (aset decisions i (pcase name
                            ("f.txt" (if (= i 0) 'accept 'reject))
                            ("g.txt" 'reject)
                            (_ 'accept))))
      (agent-q-review--finish review))))

(defvar agent-q-gate-edit-test--reviewed nil
  "The names of the files reviewed, newest first.")

(defconst agent-q-gate-edit-test--old-span
  "two\nthree\nfour\nfive\nsix\nseven\neight\na\nb\nc\nd\ne\nf\ng\nh\nnine"
  "The part of the test file an edit replaces.")

(defconst agent-q-gate-edit-test--new-span
  "TWO\nthree\nfour\nfive\nsix\nseven\neight\na\nb\nc\nd\ne\nf\ng\nh\nNINE"
  "What the edit puts there: two changes, far apart.")

(defun agent-q-gate-edit-test--settings (agent work)
  "The settings file of AGENT in WORK that the test writes, and its text."
  (pcase agent
    ('claude (cons (expand-file-name ".claude/settings.json" work) "{\"permissions\":{}}\n"))
    ('gemini (cons (expand-file-name ".gemini/settings.json" work) "{\"general\":{}}\n"))
    ('codex (cons (expand-file-name ".codex/hooks.json" work) "{\"hooks\":{}}\n"))))

(defun agent-q-gate-edit-test--steps (agent work)
  "The scripted model's steps for AGENT in WORK.
Codex offers its apply_patch tool only to models it knows: the scripted
one gives the patch to its shell (apply_patch <<EOF), which Codex runs
as its patch tool, and its hook sees as a Bash command."
  (let ((f (expand-file-name "f.txt" work))
        (g (expand-file-name "g.txt" work))
        (settings (agent-q-gate-edit-test--settings agent work)))
    (pcase agent
      ('claude
       `(((tool . "Read") (arguments (file_path . ,f)))
         ((tool . "Edit") (arguments (file_path . ,f)
                                     (old_string . ,agent-q-gate-edit-test--old-span)
                                     (new_string . ,agent-q-gate-edit-test--new-span)))
         ((tool . "Read") (arguments (file_path . ,g)))
         ((tool . "Edit") (arguments (file_path . ,g)
                                     (old_string . ,agent-q-gate-edit-test--old-span)
                                     (new_string . ,agent-q-gate-edit-test--new-span)))
         ((tool . "Write") (arguments (file_path . ,(car settings))
                                      (content . ,(cdr settings))))
         ((text . "Done."))))
      ('gemini
       `(((tool . "replace") (arguments (file_path . ,f)
                                        (instruction . "Two changes")
                                        (old_string . ,agent-q-gate-edit-test--old-span)
                                        (new_string . ,agent-q-gate-edit-test--new-span)))
         ((tool . "replace") (arguments (file_path . ,g)
                                        (instruction . "Two changes")
                                        (old_string . ,agent-q-gate-edit-test--old-span)
                                        (new_string . ,agent-q-gate-edit-test--new-span)))
         ((tool . "write_file") (arguments (file_path . ,(car settings))
                                           (content . ,(cdr settings))))
         ((text . "Done."))))
      ('codex
       (let ((patch (lambda (name)
                      (format "*** Begin Patch\n*** Update File: %s\n@@\n one\n-two\n+TWO\n@@ h\n-nine\n+NINE\n*** End Patch\n"
                              name))))
         `(((tool . "exec_command") (arguments (cmd . ,(concat "apply_patch <<'EOF'\n" (funcall patch "f.txt") "EOF\n"))))
           ((tool . "exec_command") (arguments (cmd . ,(concat "apply_patch <<'EOF'\n" (funcall patch "g.txt") "EOF\n"))))
           ((tool . "exec_command")
            (arguments
             (cmd . ,(format "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: .codex/hooks.json\n+%s*** End Patch\nEOF\n"
                             (cdr settings)))))
           ((text . "Done."))))))))

(defun agent-q-gate-edit-test--agent (agent)
  "AGENT's own edits under -p, through its hook, reviewed in Emacs.
f.txt: one hunk accepted, one rejected, and the file has exactly the
accepted one; g.txt: all rejected, unchanged, the model told; the
agent's settings file: reviewed although an allow rule covers its
folder; the audit names the agent."
  (let* ((dir (file-name-as-directory (make-temp-file "agent-q-gate-edit-agent" t)))
         (home (expand-file-name "home/" dir))
         (work (expand-file-name "work/" dir))
         (settings (agent-q-gate-edit-test--settings agent work))
         (agent-q-mcp-connection-file (expand-file-name "connection.json" dir))
         (agent-q-audit-file (expand-file-name "audit.jsonl" dir))
         (agent-q-approval-function #'agent-q-gate-test--deny-all)
         (agent-q-approval-rules
          `(("agent_edit" (:path ,(concat (file-name-directory (car settings)) "**")) allow)))
         (agent-q-review--review-driver #'agent-q-gate-edit-test--real-driver)
         (agent-q-gate-edit-test--reviewed nil)
         (agent-q-gate-test--asked nil)
         (agent-q-mcp-port 0)
         (steps (agent-q-gate-edit-test--steps agent work))
         model)
    (unwind-protect
        (progn
          (make-directory (expand-file-name "tmp" home) t)
          (make-directory (file-name-directory (car settings)) t)
          (agent-q-agents-test--write (expand-file-name "f.txt" work) agent-q-gate-edit-test--old)
          (agent-q-agents-test--write (expand-file-name "g.txt" work) agent-q-gate-edit-test--old)
          (let ((default-directory work))
            (should (eq 0 (call-process "git" nil nil nil "init" "-q"))))
          (agent-q-gate-mode 1)
          (agent-q-mcp-start)
          (setq model (agent-q-agents-test--start-model
                       dir (agent-q-agents-test--prop agent :dialect) steps))
          (pcase-let ((`(,requests . ,why)
                       (agent-q-gate-test--run agent home dir work model (length steps))))
            (ert-info (why)
              (should (equal (agent-q-agents-test--read (expand-file-name "f.txt" work))
                             agent-q-gate-edit-test--first))
              (should (equal (agent-q-agents-test--read (expand-file-name "g.txt" work))
                             agent-q-gate-edit-test--old))
              (let* ((results (alist-get 'results (car (last requests))))
                     (rejected (nth (if (eq agent 'claude) 3 1) results)))
                (should (string-match-p "rejected" (alist-get 'text rejected))))
              ;; Each model is told, with the result of the partial edit of f.txt,
              ;; that part was rejected, which change (NINE), and what the file holds
              ;; instead: Claude's and Codex's by the PreToolUse answer, Gemini's by
              ;; its AfterTool hook (<hook_context>).
              (let ((body (json-encode (alist-get 'body (nth (if (eq agent 'claude) 2 1)
                                                             requests)))))
                (should (string-match-p "accepted only part of it" body))
                (should (string-match-p "what the file holds" body))
                (should (string-match-p (regexp-quote "-NINE\\n+nine") body))
                (when (eq agent 'gemini)
                  (should (string-match-p "<hook_context>The user reviewed your edit" body))))
              (should (equal (reverse agent-q-gate-edit-test--reviewed)
                             (list "f.txt" "g.txt" (file-name-nondirectory (car settings)))))
              ;; Claude Code and Codex guard their own settings themselves: even
              ;; allowed by the hook, Claude asks (which -p refuses) and Codex
              ;; refuses a write to .codex/.  Gemini writes the accepted text.
              (if (memq agent '(claude codex))
                  (should-not (file-exists-p (car settings)))
                (should (equal (agent-q-agents-test--read (car settings)) (cdr settings))))
              (let ((edits (cl-remove-if-not
                            (lambda (r) (equal (alist-get 'tool r) "agent_edit"))
                            (agent-q-agents-test--json-lines agent-q-audit-file))))
                (should edits)
                (dolist (record edits)
                  (should (string-match-p (format "\\`%s (own tools)" agent)
                                          (alist-get 'client record))))))))
      (agent-q-gate-test--clean-up model dir))))

(ert-deftest agent-q-gate-edit-test-claude ()
  "Claude Code's own Edit and Write, reviewed.  See `agent-q-gate-edit-test--agent'."
  (agent-q-gate-edit-test--agent 'claude))

(ert-deftest agent-q-gate-edit-test-gemini ()
  "Gemini CLI's own replace and write_file, reviewed.  See `agent-q-gate-edit-test--agent'."
  (agent-q-gate-edit-test--agent 'gemini))

(ert-deftest agent-q-gate-edit-test-codex ()
  "Codex CLI's own apply_patch, reviewed.  See `agent-q-gate-edit-test--agent'."
  (agent-q-gate-edit-test--agent 'codex))

(provide 'agent-q-gate-edit-test)

;;; agent-q-gate-edit-test.el ends here
