;;; agent-q-rules-test.el --- Approval rules against the real executor  -*- lexical-binding: t -*-

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

;; `agent-q-approval-rules' with the real module, the built-in tools and
;; real files: an allow rule runs a dangerous write without asking (and
;; the audit names the rule), deny wins over allow, files outside the
;; glob, behind a link or through ".." ask, client-scoped rules, rules
;; saved from the real minibuffer prompt (and a dangerous match-all one
;; refused), sensitive files and propose_file_edit's review never
;; skipped, and the asynchronous executor honouring the same rules.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'subr-x)
(require 'agent-q)
(require 'agent-q-bridge-support)
(require 'agent-q-keys-support)

(defvar agent-q-review--review-driver)
(defvar agent-q-prompt--session-approved)
(defvar agent-q--pending)
(defvar agent-q--asking)
(defvar agent-q--queue-timer)
(defvar agent-q-allowed-directories)
(declare-function agent-q-review-accept-all "agent-q-review" ())
(declare-function agent-q-review-finish "agent-q-review" ())
(declare-function agent-q-gptel-tools "agent-q-gptel" (&rest keys))
(declare-function gptel-tool-name "gptel-request" (tool))
(declare-function gptel-tool-async "gptel-request" (tool))
(declare-function gptel-tool-confirm "gptel-request" (tool))
(declare-function gptel-tool-function "gptel-request" (tool))

;;;; Helpers

(defvar agent-q-rules-test--asks nil
  "The approval requests of the current test: (TOOL ARGS CONTEXT), newest first.")

(defun agent-q-rules-test--approver (answer)
  "An approval function that records each request and returns ANSWER."
  (lambda (tool args)
    (push (list tool args agent-q-approval-context) agent-q-rules-test--asks)
    answer))

(defmacro agent-q-rules-test--with (dir registry &rest body)
  "Run BODY with DIR a fresh directory (true name, allowed) and REGISTRY a registry.
No rules are in force at first; the approval function records each
request and denies; the audit goes to a fresh file."
  (declare (indent 2) (debug (symbolp symbolp body)))
  `(let* ((,dir (file-name-as-directory (file-truename (make-temp-file "agent-q-rules" t))))
          (,registry (agent-q-make-registry))
          (default-directory ,dir)
          (agent-q-allowed-directories (list ,dir))
          (agent-q-approval-rules nil)
          (agent-q-rules--session nil)
          (agent-q-rules--warned nil)
          (agent-q-prompt--session-approved nil)
          (agent-q-client nil)
          (agent-q-confirm-safety-levels '(:dangerous))
          (agent-q-tool-execution-functions nil)
          (agent-q-approval-function (agent-q-rules-test--approver :denied))
          (agent-q-rules-test--asks nil)
          (agent-q-audit-file (make-temp-file "agent-q-rules-audit" nil ".jsonl")))
     (agent-q-register-builtin-tools ,registry)
     (unwind-protect (progn ,@body)
       (delete-file agent-q-audit-file)
       (dolist (buffer (buffer-list))
         (let ((file (buffer-file-name buffer)))
           (when (and file (string-prefix-p ,dir file))
             (with-current-buffer buffer (set-buffer-modified-p nil))
             (kill-buffer buffer))))
       (delete-directory ,dir t))))

(defun agent-q-rules-test--call (registry tool args &optional client)
  "Call TOOL with ARGS in REGISTRY synchronously, from CLIENT; return the result."
  (let ((agent-q-client client))
    (car (agent-q-execute-tool-calls (list (list :id "r" :name tool :arguments args))
                                     registry))))

(defun agent-q-rules-test--status (result)
  "The status of RESULT: success, failure, denied or cancelled."
  (plist-get (plist-get result :metadata) :status))

(defun agent-q-rules-test--write (file content)
  "Write CONTENT to FILE, making its directory."
  (make-directory (file-name-directory file) t)
  (let ((coding-system-for-write 'utf-8-unix))
    (write-region content nil file nil 'silent)))

(defun agent-q-rules-test--read (file)
  "The contents of FILE."
  (with-temp-buffer
    (insert-file-contents file)
    (buffer-string)))

(defun agent-q-rules-test--buffer-text (file)
  "The text of the buffer visiting FILE (a review applies there, unsaved)."
  (with-current-buffer (find-file-noselect file)
    (buffer-string)))

(defun agent-q-rules-test--audit ()
  "The records of the audit file, as alists."
  (with-temp-buffer
    (insert-file-contents agent-q-audit-file)
    (mapcar (lambda (line) (json-parse-string line :object-type 'alist))
            (split-string (buffer-string) "\n" t))))

(defun agent-q-rules-test--wait (predicate)
  "Process events until PREDICATE is non-nil, at most 10 seconds."
  (let ((deadline (+ (float-time) 10)))
    (while (and (not (funcall predicate)) (< (float-time) deadline))
      (accept-process-output nil 0.02))
    (or (funcall predicate) (ert-fail "Timed out waiting"))))

(defun agent-q-rules-test--run-async (registry calls &optional client)
  "Run CALLS in REGISTRY asynchronously from CLIENT; wait for the results."
  (let ((results :none)
        (agent-q--pending nil)
        (agent-q--asking nil)
        (agent-q--queue-timer nil)
        (agent-q-client client))
    (agent-q-execute-tool-calls-async calls (lambda (r) (setq results r)) registry)
    (agent-q-rules-test--wait (lambda () (not (eq results :none))))
    results))

;;;; Allow, deny, and what they cover

(ert-deftest agent-q-rules-test-allow-runs-a-dangerous-write-without-asking ()
  (agent-q-rules-test--with dir registry
    (setq agent-q-approval-rules `(("write_file" (:path ,dir) allow)))
    (let* ((file (expand-file-name "sub/a.txt" dir))
           (r (agent-q-rules-test--call registry "write_file" `(:path ,file :content "ruled\n"))))
      (should (equal "success" (agent-q-rules-test--status r)))
      (should (plist-get (plist-get r :metadata) :approved))
      (should-not agent-q-rules-test--asks)
      (should (equal "ruled\n" (agent-q-rules-test--read file)))
      (let ((records (agent-q-rules-test--audit))
            (text (format "allow write_file under %s" dir)))
        (should records)
        (dolist (record records)
          (should (equal "rule" (alist-get 'decision record)))
          (should (equal text (alist-get 'rule record)))))
      (with-current-buffer agent-q-log-buffer-name
        (should (string-match-p (regexp-quote (format "allowed by the approval rule: allow write_file under %s" dir))
                                (buffer-string)))))))

(ert-deftest agent-q-rules-test-deny-wins-over-allow-in-any-order ()
  (agent-q-rules-test--with dir registry
    (let ((secret (expand-file-name "secret/x.txt" dir))
          (ok (expand-file-name "ok.txt" dir))
          (allow `("write_file" (:path ,dir) allow))
          (deny `(t (:path ,(concat dir "secret")) deny)))
      (dolist (rules (list (list allow deny) (list deny allow)))
        (setq agent-q-approval-rules rules
              agent-q-rules-test--asks nil)
        (let ((r (agent-q-rules-test--call registry "write_file" `(:path ,secret :content "no"))))
          (should (equal "denied" (agent-q-rules-test--status r)))
          (should (equal (format "Tool execution denied by the user's approval rule: deny any tool under %ssecret" dir)
                         (plist-get r :content)))
          (should-not (file-exists-p secret))
          (should-not agent-q-rules-test--asks))
        (let ((r (agent-q-rules-test--call registry "write_file" `(:path ,ok :content "yes"))))
          (should (equal "success" (agent-q-rules-test--status r)))
          (should-not agent-q-rules-test--asks)))
      (should (equal "rule" (alist-get 'decision (car (agent-q-rules-test--audit))))))))

(ert-deftest agent-q-rules-test-outside-the-glob-asks ()
  (agent-q-rules-test--with dir registry
    (setq agent-q-approval-rules `(("write_file" (:path ,(concat dir "sub")) allow)))
    (make-directory (expand-file-name "sub" dir))
    (dolist (path (list (expand-file-name "other.txt" dir)
                        (expand-file-name "subx/a.txt" dir)
                        ;; ".." is refused, even where it would lead back under the glob.
                        (concat dir "sub/../other.txt")
                        (concat dir "sub/../sub/a.txt")
                        ;; A remote file never matches an allow rule (nothing connects).
                        (concat "/ssh:nowhere.invalid:" dir "sub/a.txt")))
      (setq agent-q-rules-test--asks nil)
      (let ((r (agent-q-rules-test--call registry "write_file" `(:path ,path :content "x"))))
        (should (equal "denied" (agent-q-rules-test--status r)))
        (should (equal "write_file" (car (car agent-q-rules-test--asks))))))
    (should-not (file-exists-p (expand-file-name "other.txt" dir)))
    (should-not (file-exists-p (expand-file-name "sub/a.txt" dir)))
    ;; A relative name is judged where it lands.
    (let ((r (agent-q-rules-test--call registry "write_file" '(:path "sub/rel.txt" :content "r"))))
      (should (equal "success" (agent-q-rules-test--status r))))))

(ert-deftest agent-q-rules-test-a-link-out-of-the-glob-asks ()
  (agent-q-rules-test--with dir registry
    (let* ((outside (file-name-as-directory (file-truename (make-temp-file "agent-q-rules-out" t))))
           (target (expand-file-name "target.txt" outside))
           (link (expand-file-name "sub/link.txt" dir)))
      (unwind-protect
          (progn
            (agent-q-rules-test--write target "original\n")
            (make-directory (expand-file-name "sub" dir))
            (make-symbolic-link target link)
            (setq agent-q-approval-rules `(("write_file" (:path ,(concat dir "sub")) allow)))
            (let ((r (agent-q-rules-test--call registry "write_file" `(:path ,link :content "pwned\n"))))
              (should (equal "denied" (agent-q-rules-test--status r)))
              (should agent-q-rules-test--asks)
              (should (equal "original\n" (agent-q-rules-test--read target))))
            ;; A glob whose leading directory is a link is resolved too: a link to
            ;; the outside directory covers the files in it.
            (let ((dir-link (expand-file-name "out-link" dir)))
              (make-symbolic-link outside dir-link)
              (setq agent-q-approval-rules `(("write_file" (:path ,dir-link) allow))
                    agent-q-rules-test--asks nil)
              (let ((r (agent-q-rules-test--call registry "write_file" `(:path ,target :content "new\n"))))
                (should (equal "success" (agent-q-rules-test--status r)))
                (should-not agent-q-rules-test--asks))))
        (delete-directory outside t)))))

(ert-deftest agent-q-rules-test-client-scoped-rule ()
  (agent-q-rules-test--with dir registry
    (setq agent-q-approval-rules `(("write_file" (:path ,dir :client "claude-code") allow)))
    (let ((file (expand-file-name "c.txt" dir)))
      (dolist (client '(nil "gptel" "claude-codex 1.0 (MCP)"))
        (setq agent-q-rules-test--asks nil)
        (should (equal "denied" (agent-q-rules-test--status
                                 (agent-q-rules-test--call registry "write_file"
                                                           `(:path ,file :content "x") client))))
        (should agent-q-rules-test--asks))
      (should-not (file-exists-p file))
      (setq agent-q-rules-test--asks nil)
      (should (equal "success" (agent-q-rules-test--status
                                (agent-q-rules-test--call registry "write_file"
                                                          `(:path ,file :content "x")
                                                          "claude-code 2.1.197 (MCP)"))))
      (should-not agent-q-rules-test--asks)
      (should (equal "claude-code 2.1.197 (MCP)"
                     (alist-get 'client (car (last (agent-q-rules-test--audit)))))))))

(ert-deftest agent-q-rules-test-ask-rule-asks-and-the-prompt-says-so ()
  (agent-q-rules-test--with dir registry
    (let* ((file (expand-file-name "q.txt" dir))
           (prompt nil)
           (agent-q-approval-function #'agent-q-approve-in-minibuffer))
      (setq agent-q-approval-rules `(("write_file" (:path ,dir) allow)
                                     ("write_file" nil ask)))
      (cl-letf (((symbol-function 'agent-q-prompt--read-key)
                 (lambda (p &rest _)
                   ;; "a", and "!" to confirm it.
                   (if (string-prefix-p "Approve " p) ?! (setq prompt p) ?a))))
        ;; "a" approves for the session; the ask rule still asks next time.
        (should (equal "success" (agent-q-rules-test--status
                                  (agent-q-rules-test--call registry "write_file" `(:path ,file :content "1")))))
        (should (string-match-p "\\[asked by the rule: ask write_file\\]" prompt))
        (setq prompt nil)
        (should (equal "success" (agent-q-rules-test--status
                                  (agent-q-rules-test--call registry "write_file" `(:path ,file :content "2")))))
        (should prompt)
        (should (equal "approved" (alist-get 'decision (car (last (agent-q-rules-test--audit))))))))))

(ert-deftest agent-q-rules-test-the-custom-type-takes-the-documented-shapes ()
  (require 'wid-edit)
  (require 'cus-edit)
  (let ((widget (widget-convert (get 'agent-q-approval-rules 'custom-type))))
    (should (widget-apply widget :match
                          '(("read_file" (:path "~/src" :client "claude-code") allow)
                            ("write_file" (:path "~/src/notes") allow)
                            ("eval_form" (:client "claude-code") ask)
                            (t (:path "~/.password-store") deny)
                            ("write_file" nil deny))))
    (dolist (bad '((("write_file" nil maybe))
                   (("write_file" (:paht "~/src") allow))
                   ((write_file nil allow))
                   (("write_file" nil))))
      (should-not (widget-apply widget :match bad)))))

(ert-deftest agent-q-rules-test-malformed-rules-are-ignored-with-a-warning ()
  (agent-q-rules-test--with dir registry
    (let ((warnings nil)
          (file (expand-file-name "m.txt" dir)))
      (setq agent-q-approval-rules `(("write_file" (:path ,(concat dir "../" (file-name-nondirectory (directory-file-name dir)))) allow)
                                     ("write_file" (:path "relative/dir") allow)
                                     ("write_file" (:paht ,dir) allow)
                                     ("write_file" nil maybe)
                                     "write_file"))
      (cl-letf (((symbol-function 'display-warning)
                 (lambda (_type message &rest _) (push message warnings))))
        (should (equal "denied" (agent-q-rules-test--status
                                 (agent-q-rules-test--call registry "write_file" `(:path ,file :content "x")))))
        (should agent-q-rules-test--asks)
        (should (= 5 (length warnings)))
        (should (cl-some (lambda (w) (string-match-p "\\.\\. component" w)) warnings))
        (should (cl-some (lambda (w) (string-match-p "not absolute" w)) warnings))
        (should (cl-some (lambda (w) (string-match-p "not allow, ask or deny" w)) warnings))
        ;; Each is warned about once.
        (agent-q-rules-test--call registry "write_file" `(:path ,file :content "x"))
        (should (= 5 (length warnings)))))))

;;;; What rules never skip

(ert-deftest agent-q-rules-test-sensitive-files-still-ask ()
  (agent-q-rules-test--with dir registry
    (let* ((other (file-name-as-directory (file-truename (make-temp-file "agent-q-rules-src" t))))
           (notes (expand-file-name "notes.txt" other))
           (env (expand-file-name ".env" other)))
      (unwind-protect
          (progn
            (agent-q-rules-test--write notes "plain notes\n")
            (agent-q-rules-test--write env "TOKEN=hunter2\n")
            (setq agent-q-approval-rules `(("read_file" (:path ,other :client "claude-code") allow)
                                           (t (:path ,other) allow)))
            ;; The issue's example: a read outside the allowed directories, which the
            ;; guard asks about, is allowed by the rule.
            (let ((r (agent-q-rules-test--call registry "read_file" `(:path ,notes) "claude-code 2 (MCP)")))
              (should (equal "success" (agent-q-rules-test--status r)))
              (should (string-match-p "plain notes" (plist-get r :content)))
              (should-not agent-q-rules-test--asks)
              (should (equal "rule" (alist-get 'decision (car (last (agent-q-rules-test--audit)))))))
            ;; A sensitive file is asked about, and the guard's reason says why.
            (let ((r (agent-q-rules-test--call registry "read_file" `(:path ,env) "claude-code 2 (MCP)")))
              (should (equal "denied" (agent-q-rules-test--status r)))
              (should-not (string-match-p "hunter2" (plist-get r :content)))
              (should (string-match-p "sensitive file pattern"
                                      (plist-get (nth 2 (car agent-q-rules-test--asks)) :reason))))
            ;; So is a write to one, which no guard asks about.
            (setq agent-q-rules-test--asks nil)
            (let ((r (agent-q-rules-test--call registry "write_file" `(:path ,env :content "TOKEN=x\n"))))
              (should (equal "denied" (agent-q-rules-test--status r)))
              (should agent-q-rules-test--asks)
              (should (equal "TOKEN=hunter2\n" (agent-q-rules-test--read env))))
            ;; And a file with several hard links (another name may be sensitive).
            (setq agent-q-rules-test--asks nil)
            (add-name-to-file notes (expand-file-name "twin.txt" other))
            (let ((r (agent-q-rules-test--call registry "read_file" `(:path ,notes) "claude-code 2 (MCP)")))
              (should (equal "denied" (agent-q-rules-test--status r)))
              (should (equal '("read_file") (mapcar #'car agent-q-rules-test--asks)))))
        (delete-directory other t)))))

(ert-deftest agent-q-rules-test-propose-file-edit-is-still-reviewed ()
  (agent-q-rules-test--with dir registry
    (let* ((file (expand-file-name "e.txt" dir))
           (reviewed 0)
           (agent-q-approval-function #'agent-q-approve-in-minibuffer)
           (agent-q-review--review-driver
            (lambda (buffer)
              (cl-incf reviewed)
              (with-current-buffer buffer
                (agent-q-review-accept-all)
                (agent-q-review-finish)))))
      (agent-q-rules-test--write file "old line\n")
      (setq agent-q-approval-rules `(("propose_file_edit" (:path ,dir) allow)
                                     (t (:path ,dir) ask)))
      (let ((r (agent-q-rules-test--call registry "propose_file_edit"
                                         `(:path ,file :original "old line" :modified "new line"
                                                 :description "d"))))
        (should (equal "success" (agent-q-rules-test--status r)))
        (should (= 1 reviewed))
        (should (equal "new line\n" (agent-q-rules-test--buffer-text file)))
        (should (equal "review" (alist-get 'decision (car (last (agent-q-rules-test--audit)))))))
      ;; A deny rule refuses it before any review.
      (setq agent-q-approval-rules `(("propose_file_edit" (:path ,dir) deny)))
      (let ((r (agent-q-rules-test--call registry "propose_file_edit"
                                         `(:path ,file :original "new line" :modified "newer"
                                                 :description "d"))))
        (should (equal "denied" (agent-q-rules-test--status r)))
        (should (= 1 reviewed))
        (should (equal "new line\n" (agent-q-rules-test--buffer-text file)))))))

;;;; Rules saved from the prompt

(defmacro agent-q-rules-test--answering (keys answers &rest body)
  "Run BODY typing KEYS at the prompt, the strings read being the defaults.
ANSWERS are the successive answers to `y-or-n-p'.  The prompts read
are recorded in `prompts'."
  (declare (indent 2))
  `(agent-q-test-let ((unread-command-events (listify-key-sequence (kbd ,keys)))
         (yes-no ,answers)
         (prompts nil))
     (cl-letf (((symbol-function 'read-string)
                (lambda (prompt &optional initial &rest _)
                  (push (cons prompt initial) prompts)
                  (if (functionp 'agent-q-rules-test--typed)
                      (funcall 'agent-q-rules-test--typed initial)
                    initial)))
               ((symbol-function 'y-or-n-p)
                (lambda (prompt)
                  (push prompt prompts)
                  (if yes-no (pop yes-no) (ert-fail (format "Unexpected question: %s" prompt))))))
       ,@body)))

(ert-deftest agent-q-rules-test-a-rule-saved-from-the-prompt ()
  (agent-q-rules-test--with dir registry
    (let* ((agent-q-approval-function #'agent-q-approve-in-minibuffer)
           (first (expand-file-name "p/one.txt" dir))
           (second (expand-file-name "p/deeper/two.txt" dir)))
      (make-directory (expand-file-name "p/deeper" dir) t)
      (agent-q-rules-test--answering "s ! a" '(t nil)
        (let ((r (agent-q-rules-test--call registry "write_file" `(:path ,first :content "1")
                                           "claude-code 2.1 (MCP)")))
          (should (equal "success" (agent-q-rules-test--status r)))
          ;; The directory offered is that of the file, editable.
          (should (equal (directory-file-name (concat dir "p"))
                         (cdr (cl-find-if #'consp prompts))))
          (should (member "Only for calls from claude-code? " prompts))
          (should-not unread-command-events)))
      (should (equal agent-q-rules--session
                     `(("write_file" (:path ,(concat dir "p") :client "claude-code") allow))))
      (should-not agent-q-approval-rules)
      (should (equal (format "allow write_file under %sp for claude-code (saved for this session)" dir)
                     (alist-get 'rule (car (last (agent-q-rules-test--audit))))))
      ;; The next call under that directory from that client runs without a prompt.
      (cl-letf (((symbol-function 'agent-q-prompt--read-key)
                 (lambda (&rest _) (ert-fail "asked again"))))
        (should (equal "success" (agent-q-rules-test--status
                                  (agent-q-rules-test--call registry "write_file"
                                                            `(:path ,second :content "2")
                                                            "claude-code 2.1 (MCP)")))))
      (should (equal "2" (agent-q-rules-test--read second)))
      ;; Kept for future sessions: saved with Customize, in `custom-file'.
      (let* ((custom-file (make-temp-file "agent-q-rules-custom" nil ".el"))
             (user-init-file custom-file)
             (third (expand-file-name "q/three.txt" dir)))
        (unwind-protect
            (progn
              (make-directory (expand-file-name "q" dir))
              (agent-q-rules-test--answering "s ! d" '(nil t)
                (should (equal "denied" (agent-q-rules-test--status
                                         (agent-q-rules-test--call registry "write_file"
                                                                   `(:path ,third :content "3")
                                                                   "gptel")))))
              (should-not (file-exists-p third))
              (should (equal agent-q-approval-rules `(("write_file" (:path ,(concat dir "q")) deny))))
              (should (string-match-p (regexp-quote (format "(\"write_file\" (:path \"%sq\") deny)" dir))
                                      (agent-q-rules-test--read custom-file))))
          (delete-file custom-file)
          ;; Forget what Customize recorded, for the tests that follow.
          (dolist (prop '(saved-value theme-value customized-value))
            (put 'agent-q-approval-rules prop nil)))))))

(ert-deftest agent-q-rules-test-a-dangerous-match-all-rule-from-the-prompt-is-refused ()
  (agent-q-rules-test--with dir registry
    (let* ((agent-q-approval-function #'agent-q-approve-in-minibuffer)
           (file (expand-file-name "x.txt" dir))
           (home (directory-file-name (file-truename (expand-file-name "~")))))
      (dolist (typed (list "" "/" "/*/x" home (file-name-directory home)))
        (cl-letf (((symbol-function 'agent-q-rules-test--typed) (lambda (_) typed)))
          ;; s ! a: save "allow" for the typed directory -- refused, so the prompt
          ;; comes back, and n denies.
          (agent-q-rules-test--answering "s ! a n" nil
            (let ((r (agent-q-rules-test--call registry "write_file" `(:path ,file :content "x"))))
              (should (equal "denied" (agent-q-rules-test--status r)))
              (should-not unread-command-events)))))
      (should-not agent-q-rules--session)
      (should-not agent-q-approval-rules)
      (should-not (file-exists-p file))
      ;; Written by hand, the same rule is the user's explicit choice.
      (setq agent-q-approval-rules '(("write_file" nil allow)))
      (should (equal "success" (agent-q-rules-test--status
                                (agent-q-rules-test--call registry "write_file" `(:path ,file :content "x")))))
      ;; A cautious tool may be allowed everywhere from the prompt.
      (let ((agent-q-confirm-safety-levels '(:dangerous :cautious)))
        (agent-q-rules-test--answering "s ! a" '(nil nil)
          (cl-letf (((symbol-function 'agent-q-rules-test--typed) (lambda (_) "")))
            (should (equal "success" (agent-q-rules-test--status
                                      (agent-q-rules-test--call registry "eval_form" '(:form "(+ 1 2)")))))))
        (should (equal agent-q-rules--session '(("eval_form" nil allow))))))))

;;;; The asynchronous executor

(ert-deftest agent-q-rules-test-the-asynchronous-executor-honours-rules ()
  (agent-q-rules-test--with dir registry
    (let ((allowed (expand-file-name "a/x.txt" dir))
          (denied (expand-file-name "d/x.txt" dir))
          (asked (expand-file-name "x.txt" dir)))
      (setq agent-q-approval-rules `(("write_file" (:path ,(concat dir "a") :client "llm") allow)
                                     ("write_file" (:path ,(concat dir "d")) deny)))
      (let ((results (agent-q-rules-test--run-async
                      registry
                      `((:id "1" :name "write_file" :arguments (:path ,allowed :content "a"))
                        (:id "2" :name "write_file" :arguments (:path ,denied :content "d"))
                        (:id "3" :name "write_file" :arguments (:path ,asked :content "q")))
                      "llm")))
        (should (equal '("success" "denied" "denied")
                       (mapcar #'agent-q-rules-test--status results)))
        (should (string-match-p "denied by the user's approval rule: deny write_file"
                                (plist-get (nth 1 results) :content)))
        (should (equal "User denied tool execution" (plist-get (nth 2 results) :content)))
        ;; Only the call no rule decided was asked about.
        (should (equal (list asked) (mapcar (lambda (a) (plist-get (nth 1 a) :path))
                                            agent-q-rules-test--asks)))
        (should (equal "a" (agent-q-rules-test--read allowed)))
        (should-not (file-exists-p denied))
        (should (equal '("rule" "rule" "denied")
                       (mapcar (lambda (r) (alist-get 'decision r))
                               (cl-remove-if-not (lambda (r) (member (alist-get 'event r) '("result" "denied")))
                                                 (agent-q-rules-test--audit)))))))))

(ert-deftest agent-q-rules-test-mcp-style-calls-honour-client-rules ()
  ;; The MCP server's driver: `agent-q--execute-async' confirming cautious
  ;; tools, the client named with its version and "(MCP)".
  (agent-q-rules-test--with dir registry
    (setq agent-q-approval-rules '(("eval_form" (:mcp-client "claude-code") allow)
                                   ("compile_form" nil deny)))
    (let ((results :none)
          (agent-q--pending nil)
          (agent-q--asking nil)
          (agent-q--queue-timer nil))
      (agent-q--execute-async '((:id "1" :name "eval_form" :arguments (:form "(+ 40 2)"))
                                (:id "2" :name "compile_form" :arguments (:form "(+ 1 1)"))
                                (:id "3" :name "macroexpand_form" :arguments (:form "(when t 1)")))
                              (lambda (r) (setq results r))
                              registry
                              :client '(:client "claude-code 2.1.197 (MCP)"
                                                :mcp-client "claude-code")
                              :confirm '(:cautious :dangerous)
                              :audit-all t)
      (agent-q-rules-test--wait (lambda () (not (eq results :none))))
      (should (equal '("success" "denied" "denied") (mapcar #'agent-q-rules-test--status results)))
      (should (string-match-p "42" (plist-get (car results) :content)))
      (should (equal '("macroexpand_form") (mapcar #'car agent-q-rules-test--asks))))))

;;;; Identity: bridges and MCP clients

(defun agent-q-rules-test--mcp-batch (registry calls name)
  "Run CALLS in REGISTRY as the MCP server's driver does, from the client NAME.
NAME is the clientInfo name; the label is the one the driver shows.
Return the results."
  (let ((results :none)
        (agent-q--pending nil)
        (agent-q--asking nil)
        (agent-q--queue-timer nil))
    (agent-q--execute-async calls (lambda (r) (setq results r)) registry
                            :client (list :client (agent-q-mcp--client-label name)
                                          :mcp-client name)
                            :confirm '(:cautious :dangerous)
                            :audit-all t)
    (agent-q-rules-test--wait (lambda () (not (eq results :none))))
    results))

(ert-deftest agent-q-rules-test-no-mcp-client-matches-a-bridge-rule-or-its-always ()
  ;; A rule for the gptel bridge and an "a" the user gave it: no MCP client,
  ;; whatever its clientInfo, matches either; the bridge does.
  (require 'agent-q-mcp)
  (agent-q-rules-test--with dir registry
    (setq agent-q-approval-rules '(("eval_form" (:client "gptel") allow)))
    (let ((agent-q-confirm-safety-levels '(:cautious :dangerous))
          (agent-q-approval-function #'agent-q-approve-in-minibuffer)
          (answer ?a)
          (prompts nil))
      (cl-letf (((symbol-function 'agent-q-prompt--read-key)
                 (agent-q-test-key-reader (lambda () answer)
                                          (lambda (prompt) (push prompt prompts)))))
        (should (equal "success" (agent-q-rules-test--status
                                  (agent-q-rules-test--call registry "eval_form" '(:form "1") "gptel"))))
        (should (equal "success" (agent-q-rules-test--status
                                  (agent-q-rules-test--call registry "compile_form" '(:form "1") "gptel"))))
        (should (= 1 (length prompts)))
        (setq answer ?n prompts nil)
        (dolist (name (list "gptel" "" " gptel" "gptel (MCP)" "gptel 1.0" "gp\u200btel"
                            "gptel\u202e" "\u0001gptel" "gptel\n"))
          (let ((results (agent-q-rules-test--mcp-batch
                          registry '((:id "1" :name "eval_form" :arguments (:form "(+ 40 2)"))
                                     (:id "2" :name "compile_form" :arguments (:form "(+ 1 1)"))
                                     ;; A call that names a client names none from MCP.
                                     (:id "3" :name "eval_form" :arguments (:form "3")
                                          :client "gptel"))
                          name)))
            (should (equal (list name '("denied" "denied" "denied"))
                           (list name (mapcar #'agent-q-rules-test--status results))))
            (should (= 3 (length prompts)))
            (setq prompts nil)))
        ;; The bridge keeps both.
        (should (equal "success" (agent-q-rules-test--status
                                  (agent-q-rules-test--call registry "compile_form" '(:form "2") "gptel"))))
        (should-not prompts)))))

(ert-deftest agent-q-rules-test-mcp-client-rules-match-mcp-clients-only ()
  (require 'agent-q-mcp)
  (agent-q-rules-test--with dir registry
    (setq agent-q-approval-rules '(("eval_form" (:mcp-client "claude-code") allow)))
    (let ((agent-q-confirm-safety-levels '(:cautious :dangerous)))
      (should (equal '("success")
                     (mapcar #'agent-q-rules-test--status
                             (agent-q-rules-test--mcp-batch
                              registry '((:id "1" :name "eval_form" :arguments (:form "1")))
                              "claude-code"))))
      (should-not agent-q-rules-test--asks)
      ;; Not another MCP client, nor a client inside Emacs that takes the name.
      (should (equal '("denied")
                     (mapcar #'agent-q-rules-test--status
                             (agent-q-rules-test--mcp-batch
                              registry '((:id "1" :name "eval_form" :arguments (:form "1")))
                              "claude-codex"))))
      (should (equal "denied" (agent-q-rules-test--status
                               (agent-q-rules-test--call registry "eval_form" '(:form "1")
                                                         "claude-code"))))
      (should (= 2 (length agent-q-rules-test--asks)))
      (should (equal "allow eval_form for the MCP client claude-code"
                     (agent-q-rules-describe (car agent-q-approval-rules))))
      ;; A rule cannot name both.
      (should (agent-q-rules--check '("eval_form" (:client "gptel" :mcp-client "gptel") allow))))))

(ert-deftest agent-q-rules-test-undeclared-arguments-are-refused-and-never-suggested ()
  ;; An undeclared "dir" before "path" neither reaches the prompt nor the
  ;; rule that "s" suggests: the call is refused, naming it.
  (agent-q-rules-test--with dir registry
    (let ((file (expand-file-name "notes/n.txt" dir)))
      (make-directory (file-name-directory file) t)
      (let ((r (agent-q-rules-test--call registry "write_file"
                                         `(:dir "~/bin" :path ,file :content "x"))))
        (should (equal "failure" (agent-q-rules-test--status r)))
        (should (string-match-p "undeclared argument \"dir\"" (plist-get r :content)))
        (should-not agent-q-rules-test--asks)
        (should-not (file-exists-p file)))
      (let ((r (agent-q-rules-test--call registry "get_last_error" '(:path "/etc/passwd"))))
        (should (string-match-p "undeclared argument \"path\"" (plist-get r :content))))
      ;; The suggestion comes from :path, whatever order the keys came in.
      (should (equal (abbreviate-file-name (directory-file-name (file-name-directory file)))
                     (agent-q-rules--default-directory `(:dir "~/bin" :path ,file)))))))

(ert-deftest agent-q-rules-test-deny-rules-reach-buffers-links-and-sudo-names ()
  ;; A deny rule for a directory refuses, without asking, the buffer tools on
  ;; a buffer visiting a file there (its Dired buffer and an archive member's
  ;; buffer too), a hard link to such a file, and its /sudo:: name.
  (agent-q-rules-test--with dir registry
    (let* ((private (expand-file-name "private" dir))
           (plan (expand-file-name "plan.txt" private))
           (link (expand-file-name "innocent.txt" dir))
           (agent-q-approval-function (agent-q-rules-test--approver :approved)))
      (agent-q-rules-test--write plan "the secret plan\n")
      (add-name-to-file plan link)
      (setq agent-q-approval-rules `((t (:path ,private) deny)))
      (let ((visiting (find-file-noselect plan))
            (dired (dired-noselect private))
            (member (generate-new-buffer "keys.tar member")))
        (unwind-protect
            (progn
              (with-current-buffer member
                (insert "the secret plan\n")
                (setq buffer-file-name (concat (expand-file-name "keys.tar" private) "!plan.txt")))
              (dolist (call `(("read_buffer" (:buffer ,(buffer-name visiting)))
                              ("search_in_buffer" (:buffer ,(buffer-name visiting) :pattern "secret"))
                              ("read_buffer" (:buffer ,(buffer-name dired)))
                              ("read_buffer" (:buffer ,(buffer-name member)))
                              ("read_file" (:path ,link))
                              ("read_file" (:path ,(concat "/sudo::" plan)))))
                (let ((r (agent-q-rules-test--call registry (car call) (cadr call))))
                  (should (equal (list call "denied") (list call (agent-q-rules-test--status r))))
                  (should (string-match-p "approval rule" (plist-get r :content)))
                  (should-not (string-match-p "secret plan" (plist-get r :content)))))
              (should-not agent-q-rules-test--asks)
              ;; A buffer elsewhere, and a file with a single link, are not refused.
              (with-temp-buffer
                (rename-buffer "agent-q-rules-elsewhere" t)
                (insert "public")
                (should (equal "success" (agent-q-rules-test--status
                                          (agent-q-rules-test--call
                                           registry "read_buffer" `(:buffer ,(buffer-name)))))))
              (agent-q-rules-test--write (expand-file-name "open.txt" dir) "open")
              (should (equal "success" (agent-q-rules-test--status
                                        (agent-q-rules-test--call
                                         registry "read_file"
                                         `(:path ,(expand-file-name "open.txt" dir)))))))
          (with-current-buffer member (set-buffer-modified-p nil))
          (kill-buffer member)
          (kill-buffer dired))))))

;;;; Rules and the calls that need no decision

(defvar agent-q-rules-test--evaluated nil
  "Set by the forms eval_form runs in these tests.")

(defun agent-q-rules-test--untimed (result)
  "Return RESULT without its :execution_time_ms, which differs between runs."
  (let ((copy (copy-sequence result)))
    (plist-put copy :metadata (plist-put (copy-sequence (plist-get result :metadata))
                                         :execution_time_ms 0))))

(defun agent-q-rules-test--untimed-audit ()
  "Return the audit records without their time and timing."
  (mapcar (lambda (record)
            (cl-remove-if (lambda (cell) (memq (car cell) '(time execution_time_ms))) record))
          (agent-q-rules-test--audit)))

(defun agent-q-rules-test--batch (registry calls)
  "Run CALLS in REGISTRY synchronously, as one batch; return the results."
  (let ((agent-q-client nil))
    (agent-q-execute-tool-calls calls registry)))

(defun agent-q-rules-test--eval-calls (n)
  "Return N eval_form calls, each pushing its number.
They push it onto `agent-q-rules-test--evaluated'."
  (cl-loop for i below n
           collect `(:id ,(format "e%d" i) :name "eval_form"
                         :arguments (:form ,(format "(push %d agent-q-rules-test--evaluated)" i)))))

(ert-deftest agent-q-rules-test-a-deny-rule-stops-a-cautious-call-that-asks-nobody ()
  ;; eval_form is cautious: outside MCP it runs without asking.  A deny rule
  ;; stops it all the same, one call or a long (chunked) batch.
  (agent-q-rules-test--with dir registry
    (setq agent-q-approval-rules '(("eval_form" nil deny)))
    (let ((agent-q-rules-test--evaluated nil))
      (dolist (n '(1 40))
        (let ((results (agent-q-rules-test--batch registry (agent-q-rules-test--eval-calls n))))
          (should (= n (length results)))
          (dolist (r results)
            (should (equal "denied" (agent-q-rules-test--status r)))
            (should (equal "Tool execution denied by the user's approval rule: deny eval_form"
                           (plist-get r :content))))))
      (should-not agent-q-rules-test--evaluated)
      (should-not agent-q-rules-test--asks)
      (let ((records (agent-q-rules-test--audit)))
        (should (= 41 (length records)))
        (dolist (record records)
          (should (equal '("denied" "rule" "deny eval_form")
                         (list (alist-get 'event record) (alist-get 'decision record)
                               (alist-get 'rule record))))))
      ;; Another cautious tool still runs unasked.
      (let ((r (agent-q-rules-test--call registry "compile_form" '(:form "(+ 1 2)"))))
        (should (equal "success" (agent-q-rules-test--status r)))
        (should-not agent-q-rules-test--asks)
        (should (equal "auto" (alist-get 'decision (car (last (agent-q-rules-test--audit))))))))))

(ert-deftest agent-q-rules-test-a-deny-rule-stops-a-safe-read-in-an-allowed-directory ()
  (agent-q-rules-test--with dir registry
    (let ((secret (expand-file-name "secret/key.txt" dir))
          (plain (expand-file-name "plain.txt" dir)))
      (agent-q-rules-test--write secret "hunter2\n")
      (agent-q-rules-test--write plain "plain text\n")
      (setq agent-q-approval-rules `((t (:path ,(concat dir "secret")) deny)))
      (let ((r (agent-q-rules-test--call registry "read_file" `(:path ,secret))))
        (should (equal "denied" (agent-q-rules-test--status r)))
        (should-not (string-match-p "hunter2" (plist-get r :content)))
        (should (string-match-p "denied by the user's approval rule: deny any tool under" (plist-get r :content))))
      ;; The same from the asynchronous executor.
      (let ((results (agent-q-rules-test--run-async
                      registry `((:id "1" :name "read_file" :arguments (:path ,secret))
                                 (:id "2" :name "read_file" :arguments (:path ,plain))))))
        (should (equal '("denied" "success") (mapcar #'agent-q-rules-test--status results)))
        (should-not (string-match-p "hunter2" (plist-get (car results) :content)))
        (should (string-match-p "plain text" (plist-get (cadr results) :content))))
      (should-not agent-q-rules-test--asks)
      ;; The denials are audited (a safe call that runs is not, as ever).
      (should (equal '(("denied" "rule") ("denied" "rule"))
                     (mapcar (lambda (r) (list (alist-get 'event r) (alist-get 'decision r)))
                             (agent-q-rules-test--audit)))))))

(ert-deftest agent-q-rules-test-a-deny-rule-stops-eval-form-called-by-gptel ()
  ;; gptel's own tool function, as gptel calls it for its model: the call goes
  ;; through the asynchronous executor, where eval_form runs without asking.
  (agent-q-bridge-require-gptel)
  (agent-q-rules-test--with dir registry
    (let* ((agent-q-rules-test--evaluated nil)
           (agent-q--pending nil)
           (agent-q--asking nil)
           (agent-q--queue-timer nil)
           (tool (cl-find "eval_form" (agent-q-gptel-tools :registry registry)
                          :key #'gptel-tool-name :test #'equal))
           (answers nil))
      (should (gptel-tool-async tool))
      (should-not (gptel-tool-confirm tool))
      (dolist (rules '(nil (("eval_form" nil deny))))
        (setq agent-q-approval-rules rules)
        (let ((answer nil))
          (funcall (gptel-tool-function tool) (lambda (text) (setq answer text))
                   "(progn (push 'ran agent-q-rules-test--evaluated) 42)")
          (agent-q-rules-test--wait (lambda () answer))
          (push answer answers)))
      (setq answers (nreverse answers))
      (should (string-match-p "Value: 42" (nth 0 answers)))
      (should (string-match-p "denied by the user's approval rule: deny eval_form" (nth 1 answers)))
      (should (equal '(ran) agent-q-rules-test--evaluated))
      (should-not agent-q-rules-test--asks)
      (should (equal '(("gptel" "auto" "result") ("gptel" "rule" "denied"))
                     (cl-remove-duplicates
                      (mapcar (lambda (r) (list (alist-get 'client r) (alist-get 'decision r)
                                                (alist-get 'event r)))
                              (cl-remove-if (lambda (r) (equal (alist-get 'event r) "run"))
                                            (agent-q-rules-test--audit)))
                      :test #'equal))))))

(ert-deftest agent-q-rules-test-an-ask-rule-asks-about-a-safe-call ()
  (agent-q-rules-test--with dir registry
    (let ((file (expand-file-name "notes.txt" dir)))
      (agent-q-rules-test--write file "my notes\n")
      (setq agent-q-approval-rules '(("read_file" nil ask)))
      ;; Denied by the user.
      (let ((r (agent-q-rules-test--call registry "read_file" `(:path ,file))))
        (should (equal "denied" (agent-q-rules-test--status r)))
        (should-not (string-match-p "my notes" (plist-get r :content))))
      (should (= 1 (length agent-q-rules-test--asks)))
      (let ((context (nth 2 (car agent-q-rules-test--asks))))
        (should (plist-get context :optional))
        (should (equal "ask read_file" (plist-get context :rule)))
        (should (eq :safe (plist-get context :safety-level))))
      ;; Approved by the user: it runs, and the audit says the user approved it.
      (setq agent-q-rules-test--asks nil)
      (let ((agent-q-approval-function (agent-q-rules-test--approver :approved)))
        (let ((r (agent-q-rules-test--call registry "read_file" `(:path ,file))))
          (should (equal "success" (agent-q-rules-test--status r)))
          (should (string-match-p "my notes" (plist-get r :content))))
        ;; The asynchronous executor queues it for the prompt like any other.
        (let ((results (agent-q-rules-test--run-async
                        registry `((:id "a" :name "read_file" :arguments (:path ,file))))))
          (should (equal '("success") (mapcar #'agent-q-rules-test--status results)))))
      (should (= 2 (length agent-q-rules-test--asks)))
      (should (plist-get (nth 2 (car agent-q-rules-test--asks)) :async))
      (should (equal '(("denied" "denied") ("run" "approved") ("result" "approved")
                       ("run" "approved") ("result" "approved"))
                     (mapcar (lambda (r) (list (alist-get 'event r) (alist-get 'decision r)))
                             (agent-q-rules-test--audit)))))))

(ert-deftest agent-q-rules-test-rules-that-match-nothing-change-nothing ()
  ;; The same calls, without rules and with rules that do not match them (or
  ;; allow what runs anyway): the same results, the same audit records, the
  ;; same questions, synchronously (one batch, and a chunked one) and
  ;; asynchronously, where nothing is queued.
  (agent-q-rules-test--with dir registry
    (let* ((file (expand-file-name "f.txt" dir))
           (calls `((:id "r" :name "read_file" :arguments (:path ,file))
                    (:id "e" :name "eval_form" :arguments (:form "(push 1 agent-q-rules-test--evaluated)"))
                    (:id "w" :name "write_file" :arguments (:path ,(expand-file-name "w.txt" dir)
                                                                 :content "x"))
                    (:id "u" :name "no_such_tool" :arguments nil)
                    (:id "i" :name "read_file" :arguments (:path 7))
                    (:id "m" :name "macroexpand_form" :arguments (:form "(when t 1)"))))
           (long (cl-loop for i below 40 append
                          (mapcar (lambda (c) (plist-put (copy-sequence c) :id (format "%s%d" (plist-get c :id) i)))
                                  (list (nth 0 calls) (nth 1 calls)))))
           (safe (cl-remove "w" calls :key (lambda (c) (plist-get c :id)) :test #'equal))
           (runs nil))
      (agent-q-rules-test--write file "content\n")
      (dolist (rules (list nil
                           '(("no_such_tool" nil deny)
                             (t (:path "/nonexistent-agent-q-rules-dir") deny)
                             ("read_file" (:client "nobody") ask))
                           `(("read_file" (:path ,dir) allow) ("eval_form" nil allow))))
        (setq agent-q-approval-rules rules
              agent-q-rules-test--asks nil)
        (with-temp-file agent-q-audit-file)
        (let* ((agent-q-rules-test--evaluated nil)
               (sync (mapcar #'agent-q-rules-test--untimed (agent-q-rules-test--batch registry calls)))
               (chunked (mapcar #'agent-q-rules-test--untimed (agent-q-rules-test--batch registry long)))
               (async (let ((results :none)
                            (agent-q--pending nil)
                            (agent-q--asking nil)
                            (agent-q--queue-timer nil))
                        (let ((batch (agent-q--execute-async safe (lambda (r) (setq results r)) registry)))
                          ;; Everything was decided at once: nothing pending, no prompt coming.
                          (should (zerop (agent-q--batch-remaining batch)))
                          (should-not agent-q--pending)
                          (should-not agent-q--queue-timer))
                        (agent-q-rules-test--wait (lambda () (not (eq results :none))))
                        (mapcar #'agent-q-rules-test--untimed results))))
          (should (eq (agent-q-rules-any-p) (and rules t)))
          (push (list sync chunked async (agent-q-rules-test--untimed-audit)
                      (reverse agent-q-rules-test--asks) agent-q-rules-test--evaluated)
                runs)))
      (setq runs (nreverse runs))
      (let ((base (car runs)))
        (should (equal '("success" "success" "denied" "failure" "failure" "success")
                       (mapcar #'agent-q-rules-test--status (nth 0 base))))
        (should (= 80 (length (nth 1 base))))
        ;; Only the dangerous write was asked about.
        (should (equal '("write_file") (mapcar #'car (nth 4 base))))
        ;; The cautious calls were audited, as "auto".
        (should (member "auto" (mapcar (lambda (r) (alist-get 'decision r)) (nth 3 base))))
        (should (= 42 (length (nth 5 base))))
        (dolist (run (cdr runs))
          (should (equal run base)))))))

(ert-deftest agent-q-rules-test-without-an-approval-function ()
  (agent-q-rules-test--with dir registry
    (let ((agent-q-approval-function nil)
          (agent-q-rules-test--evaluated nil)
          (file (expand-file-name "n.txt" dir)))
      (agent-q-rules-test--write file "text\n")
      ;; Rules that do not match: what needs no decision runs, as before.
      (setq agent-q-approval-rules '(("compile_form" nil deny)))
      (should (equal '("success" "success")
                     (mapcar #'agent-q-rules-test--status
                             (agent-q-rules-test--batch
                              registry `((:id "1" :name "read_file" :arguments (:path ,file))
                                         ,@(agent-q-rules-test--eval-calls 1))))))
      (should (equal '(0) agent-q-rules-test--evaluated))
      ;; A deny rule denies.
      (setq agent-q-approval-rules '(("eval_form" nil deny)))
      (should (equal "denied" (agent-q-rules-test--status
                               (car (agent-q-rules-test--batch registry (agent-q-rules-test--eval-calls 1))))))
      (should (equal "denied" (agent-q-rules-test--status
                               (car (agent-q-rules-test--run-async registry (agent-q-rules-test--eval-calls 1))))))
      ;; An ask rule denies too: nobody can be asked.
      (setq agent-q-approval-rules '(("read_file" nil ask)))
      (let ((r (agent-q-rules-test--call registry "read_file" `(:path ,file))))
        (should (equal "denied" (agent-q-rules-test--status r)))
        (should (string-match-p "no approval function is set" (plist-get r :content))))
      (should (equal '(0) agent-q-rules-test--evaluated)))))

(ert-deftest agent-q-rules-test-an-approval-function-cannot-answer-auto-for-a-dangerous-call ()
  (agent-q-rules-test--with dir registry
    (let ((agent-q-approval-function (agent-q-rules-test--approver :auto))
          (file (expand-file-name "auto.txt" dir)))
      (setq agent-q-approval-rules '(("no_such_tool" nil deny)))
      (let ((r (agent-q-rules-test--call registry "write_file" `(:path ,file :content "x"))))
        (should (equal "denied" (agent-q-rules-test--status r)))
        (should (string-match-p "answered :auto" (plist-get r :content))))
      (should-not (file-exists-p file)))))

(provide 'agent-q-rules-test)

;;; agent-q-rules-test.el ends here
