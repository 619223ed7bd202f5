;;; agent-q-writes-test.el --- Writes go where the prompt said; protected files always ask  -*- lexical-binding: t -*-

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

;; write_file and propose_file_edit through `agent-q-execute-tool-calls',
;; with the real module, real files, real symlinks and a real shell
;; flipping a directory:
;;
;; - the file the prompt names is the one written: a directory swapped
;;   for a symlink while the prompt is shown makes the write fail, and
;;   nothing lands outside; under an allow rule, a flipper never gets a
;;   write outside the project;
;; - files that govern agents or run code on their own are asked about
;;   under an allow rule for the project, an "a" (always) given for
;;   write_file does not cover them, "a" on one approves that call only,
;;   and a deny rule still denies them.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'subr-x)
(require 'agent-q)
(require 'agent-q-keys-support)
(require 'agent-q-prompt)
(require 'agent-q-review)
(require 'agent-q-rules)

(defvar agent-q-review--review-driver)
(defvar agent-q-prompt--session-approved)
(defvar agent-q-rules--session)
(defvar agent-q-diff-save-after-apply)
(declare-function agent-q-review-accept-all "agent-q-review" ())
(declare-function agent-q-review-finish "agent-q-review" ())

;;;; Helpers

(defvar agent-q-writes-test--asks nil
  "The approval requests of the current test, newest first.
Each is (TOOL ARGS CONTEXT PATH-NOTE).")

(defmacro agent-q-writes-test--with-dirs (spec &rest body)
  "Run BODY with (PROJ OUTSIDE) of SPEC bound to fresh true directory names.
PROJ is `default-directory' and the only allowed directory; both are
deleted afterwards, and the rules and session approvals start empty."
  (declare (indent 1) (debug ((symbolp symbolp) body)))
  (let ((proj (nth 0 spec)) (outside (nth 1 spec)))
    `(let* ((,proj (file-name-as-directory (file-truename (make-temp-file "agent-q-writes-proj" t))))
            (,outside (file-name-as-directory (file-truename (make-temp-file "agent-q-writes-out" t))))
            (default-directory ,proj)
            (agent-q-allowed-directories (list ,proj))
            (agent-q-approval-rules nil)
            (agent-q-rules--session nil)
            (agent-q-prompt--session-approved nil)
            (agent-q-audit-file nil)
            (agent-q-writes-test--asks nil))
       (unwind-protect
           (progn ,@body)
         (dolist (buffer (buffer-list))
           (let ((file (buffer-file-name buffer)))
             (when (and file (or (string-prefix-p ,proj file) (string-prefix-p ,outside file)))
               (with-current-buffer buffer (set-buffer-modified-p nil))
               (kill-buffer buffer))))
         (delete-directory ,proj t)
         (delete-directory ,outside t)))))

(defun agent-q-writes-test--registry ()
  "A fresh registry holding the built-in tools."
  (let ((registry (agent-q-make-registry)))
    (agent-q-register-builtin-tools registry)
    registry))

(defun agent-q-writes-test--approver (answer)
  "An approval function that records each request and returns ANSWER.
ANSWER may be a function of (TOOL ARGS) giving the answer."
  (lambda (tool args)
    (push (list tool args agent-q-approval-context (agent-q-prompt--path-note args))
          agent-q-writes-test--asks)
    (if (functionp answer) (funcall answer tool args) answer)))

(defun agent-q-writes-test--call (registry tool args &optional answer)
  "Call TOOL with ARGS in REGISTRY; the user answers ANSWER (default :denied)."
  (let ((agent-q-approval-function (agent-q-writes-test--approver (or answer :denied))))
    (car (agent-q-execute-tool-calls
          (list (list :id "w" :name tool :arguments args))
          registry))))

(defun agent-q-writes-test--status (result)
  "The status of RESULT, a string: success, failure, denied or cancelled."
  (plist-get (plist-get result :metadata) :status))

(defun agent-q-writes-test--put (file content)
  "Write CONTENT to FILE, making its directories, bypassing agent-q."
  (make-directory (file-name-directory file) t)
  (let ((coding-system-for-write 'utf-8-unix))
    (write-region content nil file nil 'silent)))

;;;; The prompt's file is the file written

(ert-deftest agent-q-writes-prompt-time-swap-writes-nothing-outside ()
  "While the prompt named notes/tmp/config, notes/tmp became a link to ~/.ssh; y wrote ~/.ssh/config."
  (agent-q-writes-test--with-dirs (proj outside)
    (let* ((registry (agent-q-writes-test--registry))
           (tmp (expand-file-name "notes/tmp" proj))
           (target (expand-file-name "config" tmp)))
      (make-directory tmp t)
      (agent-q-writes-test--put (expand-file-name "config" outside) "Host *\n")
      ;; The last directory swapped while the prompt is shown.
      (let ((r (agent-q-writes-test--call
                registry "write_file" (list :path "notes/tmp/config" :content "pwned\n")
                (lambda (_tool _args)
                  (rename-file tmp (concat tmp ".real"))
                  (make-symbolic-link (directory-file-name outside) tmp)
                  :approved))))
        ;; The prompt named the file it checked, resolved once.
        (should (equal target (plist-get (nth 2 (car agent-q-writes-test--asks)) :file)))
        (should (equal (format " [file: %s]" target) (nth 3 (car agent-q-writes-test--asks))))
        (should (equal "failure" (agent-q-writes-test--status r)))
        (should (string-match-p "changed after it was checked.*nothing was written"
                                (plist-get r :content)))
        (should (equal "Host *\n" (with-temp-buffer
                                    (insert-file-contents (expand-file-name "config" outside))
                                    (buffer-string))))
        (should-not (directory-files outside nil "\\`\\.agent-q-write-"))
        (should-not (file-exists-p (expand-file-name "notes/tmp.real/config" proj))))
      ;; A middle directory swapped for a link to a directory with a tmp of its own.
      (delete-file tmp)
      (rename-file (concat tmp ".real") tmp)
      (make-directory (expand-file-name "tmp" outside))
      (let ((r (agent-q-writes-test--call
                registry "write_file" (list :path target :content "pwned\n")
                (lambda (_tool _args)
                  (let ((notes (expand-file-name "notes" proj)))
                    (rename-file notes (concat notes ".real"))
                    (make-symbolic-link (directory-file-name outside) notes))
                  :approved))))
        (should (equal "failure" (agent-q-writes-test--status r)))
        (should-not (file-exists-p (expand-file-name "tmp/config" outside))))
      ;; Without a swap, the approved write is made, to the file named.
      (delete-file (expand-file-name "notes" proj))
      (rename-file (expand-file-name "notes.real" proj) (expand-file-name "notes" proj))
      (let ((r (agent-q-writes-test--call
                registry "write_file" (list :path "notes/tmp/new/config" :content "fine\n")
                :approved)))
        (should (equal "success" (agent-q-writes-test--status r)))
        (should (string-match-p (regexp-quote (expand-file-name "new/config" tmp))
                                (plist-get r :content)))
        (should (string-match-p "Created directory" (plist-get r :content)))))))

(ert-deftest agent-q-writes-symlink-flipper-under-an-allow-rule ()
  "With an allow rule for a directory, 1 write in 40 under a symlink flipper landed outside unasked."
  (agent-q-writes-test--with-dirs (proj outside)
    (let* ((registry (agent-q-writes-test--registry))
           (tmp (expand-file-name "notes/tmp" proj))
           (landed (expand-file-name "config" outside))
           (flipper nil)
           (outside-writes 0) (written 0) (changed 0) (asked 0)
           (count 400))
      (make-directory tmp t)
      (make-symbolic-link (directory-file-name outside) (concat tmp ".link"))
      (setq agent-q-approval-rules `(("write_file" (:path ,proj) allow)))
      (unwind-protect
          (progn
            ;; Bounded in time: the shell stops by itself after 120 s.
            (setq flipper
                  (start-process
                   "agent-q-writes-flipper" nil "timeout" "120" "sh" "-c"
                   ;; tmp is the real directory, then a link to OUTSIDE, and so on.
                   ;; A write made while tmp was missing created a directory
                   ;; there: it is removed, so that the flips go on.
                   (format "cd %s && while :; do mv -T tmp tmp.dir 2>/dev/null; mv -T tmp.link tmp 2>/dev/null || { rm -rf tmp; mv -T tmp.link tmp; }; mv -T tmp tmp.link 2>/dev/null; mv -T tmp.dir tmp 2>/dev/null || { rm -rf tmp; mv -T tmp.dir tmp; }; done"
                           (shell-quote-argument (expand-file-name "notes" proj)))))
            (dotimes (i count)
              (let ((r (agent-q-writes-test--call
                        registry "write_file"
                        (list :path (expand-file-name "config" tmp) :content (format "write %d\n" i))
                        ;; The user denies every write asked about: only rules approve.
                        :denied)))
                (pcase (agent-q-writes-test--status r)
                  ("success" (cl-incf written))
                  ("denied" (cl-incf asked)))
                (when (string-match-p "changed after it was checked" (plist-get r :content))
                  (cl-incf changed))
                (when (file-exists-p landed)
                  (cl-incf outside-writes)
                  (delete-file landed)))))
        (when (process-live-p flipper) (delete-process flipper)))
      (message "write_file flipper: %d of %d writes made, %d asked (denied), %d refused as changed, %d landed outside"
               written count asked changed outside-writes)
      (should (zerop outside-writes))
      ;; The race was real: some writes were made, and the flips were seen.
      (should (> written 0))
      (should (> (+ asked changed) 0)))))

;;;; propose_file_edit applies to the file it checked

(ert-deftest agent-q-writes-review-time-swap-applies-nothing-outside ()
  "notes/tmp became a link to ~/.ssh during the review: the accepted hunks went to ~/.ssh/config."
  (agent-q-writes-test--with-dirs (proj outside)
    (let* ((registry (agent-q-writes-test--registry))
           (tmp (expand-file-name "notes/tmp" proj))
           (agent-q-diff-save-after-apply t)
           (agent-q-review--review-driver
            (lambda (buffer)
              ;; While the user reviews, the directory becomes a link.
              (rename-file tmp (concat tmp ".real"))
              (make-symbolic-link (directory-file-name outside) tmp)
              (with-current-buffer buffer
                (agent-q-review-accept-all)
                (agent-q-review-finish)))))
      (make-directory tmp t)
      (agent-q-writes-test--put (expand-file-name "config" tmp) "old line\n")
      (agent-q-writes-test--put (expand-file-name "config" outside) "old line\n")
      (let ((r (agent-q-writes-test--call
                registry "propose_file_edit"
                '(:path "notes/tmp/config" :original "old line" :modified "new line"
                        :description "d")
                :approved)))
        (should (equal "failure" (agent-q-writes-test--status r)))
        (should (string-match-p "changed after it was checked" (plist-get r :content)))
        (should (equal "old line\n" (with-temp-buffer
                                      (insert-file-contents (expand-file-name "config" outside))
                                      (buffer-string))))))))

;;;; Protected files

(defconst agent-q-writes-test--protected
  '(".claude/settings.local.json" ".claude/settings.json" ".mcp.json" ".gemini/settings.json"
    ".codex/config.toml" "AGENTS.md" "CLAUDE.md" "GEMINI.md" ".dir-locals.el"
    ".dir-locals-2.el" ".git/hooks/pre-commit" ".git/config" "sub/.dir-locals.el"
    ".envrc" ".vscode/settings.json")
  "Files under a project that govern agents or run code on their own.")

(ert-deftest agent-q-writes-protected-files-ask-under-an-allow-rule ()
  "With an allow rule for the project, write_file rewrote .claude/settings.local.json, .mcp.json,
.dir-locals.el and .git/hooks/pre-commit unasked."
  (agent-q-writes-test--with-dirs (proj outside)
    (let ((registry (agent-q-writes-test--registry)))
      (setq agent-q-approval-rules `(("write_file" (:path ,proj) allow)))
      ;; An ordinary file: the rule allows it, nobody is asked.
      (let ((r (agent-q-writes-test--call registry "write_file"
                                          '(:path "src/a.txt" :content "ok\n"))))
        (should (equal "success" (agent-q-writes-test--status r)))
        (should-not agent-q-writes-test--asks))
      (dolist (name agent-q-writes-test--protected)
        (setq agent-q-writes-test--asks nil)
        (let* ((file (expand-file-name name proj))
               (r (agent-q-writes-test--call registry "write_file"
                                             (list :path name :content "{\"allow\": [\"*\"]}\n"))))
          (should (equal (list name "denied") (list name (agent-q-writes-test--status r))))
          (should-not (file-exists-p file))
          (let ((context (nth 2 (car agent-q-writes-test--asks))))
            (should (equal (list name t) (list name (plist-get context :protected))))
            (should (string-match-p "governs what agents or programs may do"
                                    (plist-get context :reason)))
            (should (equal file (plist-get context :file))))))
      ;; A backup or compressed form of a protected name is protected too.
      (setq agent-q-writes-test--asks nil)
      (agent-q-writes-test--call registry "write_file" '(:path ".mcp.json~" :content "x"))
      (should (plist-get (nth 2 (car agent-q-writes-test--asks)) :protected))
      ;; The user approves one: it is written.
      (let ((r (agent-q-writes-test--call registry "write_file"
                                          '(:path ".mcp.json" :content "{}\n") :approved)))
        (should (equal "success" (agent-q-writes-test--status r)))
        (should (file-exists-p (expand-file-name ".mcp.json" proj))))
      ;; A deny rule still denies, without asking.
      (setq agent-q-approval-rules `(("write_file" (:path ,proj) allow)
                                     (t (:path ,(expand-file-name ".claude" proj)) deny)))
      (setq agent-q-writes-test--asks nil)
      (let ((r (agent-q-writes-test--call registry "write_file"
                                          '(:path ".claude/settings.json" :content "x") :approved)))
        (should (equal "denied" (agent-q-writes-test--status r)))
        (should (string-match-p "rule" (plist-get r :content)))
        (should-not agent-q-writes-test--asks)))))

(ert-deftest agent-q-writes-emacs-and-agent-q-files-are-protected ()
  "Emacs's init, early-init and custom files and agent-q's own files always ask."
  (agent-q-writes-test--with-dirs (proj outside)
    (let* ((registry (agent-q-writes-test--registry))
           (user-emacs-directory (file-name-as-directory (expand-file-name "emacs.d" proj)))
           (custom-file (expand-file-name "my-custom.el" proj))
           (agent-q-audit-file (expand-file-name "audit.jsonl" proj))
           (agent-q-mcp-connection-file (expand-file-name "mcp.json" proj)))
      (setq agent-q-approval-rules `(("write_file" (:path ,proj) allow)))
      (dolist (file (list (expand-file-name "init.el" user-emacs-directory)
                          (expand-file-name "early-init.el" user-emacs-directory)
                          custom-file
                          agent-q-mcp-connection-file))
        (setq agent-q-writes-test--asks nil)
        (let ((r (agent-q-writes-test--call registry "write_file" (list :path file :content "(x)\n"))))
          (should (equal (list file "denied") (list file (agent-q-writes-test--status r))))
          (should (plist-get (nth 2 (car agent-q-writes-test--asks)) :protected))
          (should-not (file-exists-p file))))
      ;; The audit file: agent-q-audit-file is bound to nil by each call's
      ;; helper above, so check the reason directly.
      (should (string-match-p "audit file"
                              (agent-q-guard-protected-reason agent-q-audit-file))))))

(ert-deftest agent-q-writes-always-does-not-cover-protected-files ()
  "An a (always) given for write_file approved later writes to .mcp.json unasked."
  (agent-q-writes-test--with-dirs (proj outside)
    (let* ((registry (agent-q-writes-test--registry))
           (keys nil) (prompts nil)
           (agent-q-approval-function #'agent-q-approve-in-minibuffer))
      (cl-letf (((symbol-function 'agent-q-prompt--read-key)
                 (agent-q-test-key-reader (lambda () (or (pop keys) (error "Asked once too often")))
                                          (lambda (prompt) (push prompt prompts)))))
        (cl-flet ((write (name key)
                    (setq keys (and key (list key)) prompts nil)
                    (car (agent-q-execute-tool-calls
                          (list (list :id "w" :name "write_file"
                                      :arguments (list :path name :content "x\n")))
                          registry))))
          ;; "a" on an ordinary write: later ordinary writes run unasked.
          (should (plist-get (write "a.txt" ?a) :success))
          (should (= 1 (length prompts)))
          (should (plist-get (write "b.txt" nil) :success))
          (should-not prompts)
          ;; It does not cover a protected file: asked, saying why; n denies.
          (let ((r (write ".mcp.json" ?n)))
            (should (equal "denied" (agent-q-writes-test--status r)))
            (should (= 1 (length prompts)))
            (should (string-match-p "governs what agents" (car prompts)))
            (should-not (file-exists-p (expand-file-name ".mcp.json" proj))))
          ;; "a" on a protected write approves that call only.
          (should (plist-get (write ".mcp.json" ?a) :success))
          (should (= 1 (length prompts)))
          (let ((r (write ".mcp.json" ?n)))
            (should (= 1 (length prompts)))
            (should (equal "denied" (agent-q-writes-test--status r))))
          ;; Ordinary writes are still covered by the first "a".
          (should (plist-get (write "c.txt" nil) :success)))))))

(ert-deftest agent-q-writes-propose-file-edit-on-a-protected-file-is-one-question ()
  "propose_file_edit on .dir-locals.el: its review is the one question, never a rule.
No prompt comes before the review (the review is the user's answer,
each time), an allow rule does not approve it, and nothing is written
unreviewed."
  (agent-q-writes-test--with-dirs (proj outside)
    (let* ((registry (agent-q-writes-test--registry))
           (file (expand-file-name ".dir-locals.el" proj))
           (reviews 0)
           (agent-q-approval-rules '(("propose_file_edit" nil allow)))
           (agent-q-review--review-driver (lambda (_) (cl-incf reviews))))
      (agent-q-writes-test--put file "((nil . ((a . 1))))\n")
      (agent-q-writes-test--call
       registry "propose_file_edit"
       '(:path ".dir-locals.el" :original "(a . 1)" :modified "(eval . (shell-command \"x\"))"
               :description "d"))
      (should (= 1 reviews))
      (should-not agent-q-writes-test--asks)
      (should (equal "((nil . ((a . 1))))\n"
                     (with-temp-buffer (insert-file-contents file) (buffer-string)))))))

(provide 'agent-q-writes-test)

;;; agent-q-writes-test.el ends here
