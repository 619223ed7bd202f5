;;; agent-q-trust-test.el --- Tests of trusting an agent for a while  -*- lexical-binding: t -*-

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

;; `agent-q-trust-agent' (lisp/agent-q-trust.el): the command, the mode
;; line and its timer, the ending (by itself, by the command, from
;; `agent-q-grants'), the gate's edits and commands decided under a
;; trust (protected files, deny rules and other agents still asked or
;; reviewed; the audit says "trusted until ..."; the edit journalled),
;; and the real Gemini CLI and Claude Code driven by the scripted model.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'json)
(require 'subr-x)
(require 'agent-q)
(require 'agent-q-gate)
(require 'agent-q-gate-edit)
(require 'agent-q-review)
(require 'agent-q-trust)
(require 'agent-q-journal)
(require 'agent-q-gate-test)
(require 'agent-q-gate-edit-test)
(require 'agent-q-acp-test)

(defvar agent-q-review--review-driver)
(defvar agent-q-review--this-review)
(defvar agent-q-allowed-directories)
(defvar agent-q-mcp-allowed-directories)
(defvar agent-shell-permission-responder-function)
(defvar agent-shell-mcp-servers)
(defvar acp-logging-enabled)
(declare-function map-elt "map")

(defmacro agent-q-trust-test--clean (&rest body)
  "Run BODY with no trust before and none left after."
  (declare (indent 0))
  `(progn
     (agent-q--core-trust-end nil)
     (agent-q-trust--refresh)
     (unwind-protect (progn ,@body)
       (agent-q--core-trust-end nil)
       (agent-q-trust--refresh))))

(defun agent-q-trust-test--mode-line ()
  "The mode line's text of the trusts, or nil."
  (and agent-q-trust--mode-line-string
       (substring-no-properties agent-q-trust--mode-line-string)))

;;;; The command, the mode line, the ending

(ert-deftest agent-q-trust-test-mode-line-and-end ()
  "A trust shows in the mode line with its time left; the command ends it.
The countdown timer runs only while a trust with an end is in force."
  (agent-q-trust-test--clean
    (should-not agent-q-trust--timer)
    (should-not (agent-q-trust-test--mode-line))
    (let ((trust (agent-q-trust-agent "gemini" nil nil 600)))
      (should (string-match-p "\\`trusted until [0-9-]+T[0-9:]+Z: gemini's edits inside its workspace\\'"
                              (plist-get trust :words)))
      (should (string-match-p "\\[trust: gemini edits \\(10:00\\|9:5[0-9]\\)\\]"
                              (agent-q-trust-test--mode-line)))
      (should (memq 'agent-q-trust--mode-line-string global-mode-string))
      (should (timerp agent-q-trust--timer))
      ;; A command trust of one session, until turned off: "on".
      (agent-q-trust-agent "codex" "abc" "npm test *" nil)
      (should (string-match-p "codex\\* cmds on" (agent-q-trust-test--mode-line)))
      (should (= (length agent-q-trust--active) 2))
      ;; Ending one by its number leaves the other.
      (should (= (agent-q-trust-end (plist-get trust :id)) 1))
      (should (= (length agent-q-trust--active) 1))
      (should-not (string-match-p "gemini" (agent-q-trust-test--mode-line)))
      ;; No trust with an end: no timer.
      (should-not agent-q-trust--timer)
      ;; Interactively, the only trust is ended without a question.
      (call-interactively #'agent-q-trust-end)
      (should-not agent-q-trust--active)
      (should-not (agent-q-trust-test--mode-line))
      (should-not agent-q-trust--timer)
      (should-error (call-interactively #'agent-q-trust-end) :type 'user-error)
      ;; A rule that cannot be read, a duration of no time: refused.
      (should-error (agent-q-trust-agent "codex" nil "ls; rm x" 60) :type 'agent-q-error)
      (should-error (agent-q-trust-agent "codex" nil nil 0) :type 'agent-q-error)
      (should-not agent-q-trust--active))))

(ert-deftest agent-q-trust-test-ends-by-itself ()
  "A trust ends at its time: the mode line clears, the timer stops, a message says so."
  (agent-q-trust-test--clean
    (let ((messages nil))
      (cl-letf* ((real-message (symbol-function 'message))
                 ((symbol-function 'message)
                  (lambda (format &rest args)
                    (when format (push (apply #'format-message format args) messages))
                    (apply real-message format args))))
        (agent-q-trust-agent "gemini" nil nil 1)
        (should agent-q-trust--active)
        (should (timerp agent-q-trust--timer))
        (agent-q-agents-test--wait (lambda () (null agent-q-trust--active)) 30
                                   "the trust to end by itself")
        (should-not (agent-q-trust-test--mode-line))
        (should-not agent-q-trust--timer)
        (should (cl-some (lambda (m) (string-match-p "\\`agent-q: trust ended: trusted until .*gemini" m))
                         messages))))))

(ert-deftest agent-q-trust-test-grants-list ()
  "`agent-q-grants' lists a trust, and \"d\" on its row ends it."
  (agent-q-trust-test--clean
    (let ((agent-q-prompt--session-approved nil))
      (agent-q-trust-agent "claude" nil "make test" 300)
      (save-window-excursion
        (agent-q-grants)
        (with-current-buffer "*agent-q-grants*"
          (goto-char (point-min))
          (should (search-forward "commands matching `make test`" nil t))
          (should (equal (car (tabulated-list-get-id)) :trust))
          (agent-q-grants-withdraw)
          (should-not agent-q-trust--active)
          (goto-char (point-min))
          (should-not (search-forward "make test" nil t))))
      (kill-buffer "*agent-q-grants*"))))

(defvar agent-q-trust-test--answers nil
  "What the faked minibuffer answers, in order.")

(ert-deftest agent-q-trust-test-interactive ()
  "Interactively: the agent, what to trust, the minutes; a prefix asks for a session."
  (agent-q-trust-test--clean
    (let ((answers nil))
      (cl-letf (((symbol-function 'completing-read)
                 (lambda (prompt &rest _) (push prompt answers) (pop agent-q-trust-test--answers)))
                ((symbol-function 'read-string)
                 (lambda (prompt &rest _) (push prompt answers) (pop agent-q-trust-test--answers)))
                ((symbol-function 'read-number)
                 (lambda (prompt &rest _) (push prompt answers) (pop agent-q-trust-test--answers))))
        (setq agent-q-trust-test--answers '("gemini" "edits inside its workspace" 5))
        (call-interactively #'agent-q-trust-agent)
        (should (string-match-p "\\[trust: gemini edits \\(5:00\\|4:5[0-9]\\)\\]"
                                (agent-q-trust-test--mode-line)))
        (setq agent-q-trust-test--answers '("codex" "s-42" "commands matching a rule" "npm test *" 0))
        (let ((current-prefix-arg '(4)))
          (call-interactively #'agent-q-trust-agent))
        (should (cl-some (lambda (p) (string-match-p "Only the codex session" p)) answers))
        (let ((trust (cl-find "codex" agent-q-trust--active
                              :key (lambda (trust) (plist-get trust :agent)) :test #'equal)))
          (should (equal (plist-get trust :session) "s-42"))
          (should (equal (plist-get trust :rule) "npm test *"))
          (should-not (plist-get trust :until)))
        ;; Several: the command asks which, or all.
        (setq agent-q-trust-test--answers '("all of them"))
        (call-interactively #'agent-q-trust-end)
        (should-not agent-q-trust--active)))))

;;;; Decided under a trust: the gate's edits and commands

(defun agent-q-trust-test--write (key agent file root)
  "Hand the gate AGENT's write of FILE in ROOT as the request KEY."
  (agent-q-gate-edit-test--request
   key agent (if (eq agent 'gemini) "write_file" "Write")
   (list :file_path file :content agent-q-gate-edit-test--new)
   (list :kind "write" :path file :content agent-q-gate-edit-test--new) root))

(defun agent-q-trust-test--audit-of (file)
  "The audit's result records of agent_edit calls of FILE."
  (cl-remove-if-not (lambda (r) (and (equal (alist-get 'event r) "result")
                                     (equal (alist-get 'path (alist-get 'arguments r)) file)))
                    (agent-q-agents-test--json-lines agent-q-audit-file)))

(ert-deftest agent-q-trust-test-edits ()
  "A trusted agent's edit in its workspace passes unreviewed, audited and journalled.
Its settings, a file outside its workspace, another agent and a deny
rule are reviewed or refused as without trust."
  (agent-q-gate-edit-test--with-file (root file)
    (agent-q-gate-test--with-gate #'ignore
      (agent-q-trust-test--clean
        (let* ((seen (list 0))
               (agent-q-review--review-driver (agent-q-gate-edit-test--driver '(accept accept) seen))
               (agent-q-journal-file (expand-file-name "journal.jsonl" root))
               (agent-q-journal--journal nil)
               (settings (expand-file-name ".gemini/settings.json" root))
               (outside (make-temp-file "agent-q-trust-outside")))
          (unwind-protect
              (progn
                (agent-q-trust-agent "gemini" nil nil 600)
                ;; Trusted: allowed as proposed, no review.
                (agent-q-trust-test--write 1 'gemini file root)
                (should (equal (agent-q-gate-test--answer 1) '(allow nil)))
                (should (= (car seen) 0))
                (let ((record (car (agent-q-trust-test--audit-of file))))
                  (should (equal (alist-get 'decision record) "trusted"))
                  (should (string-match-p "\\`trusted until .*: gemini's edits inside its workspace\\'"
                                          (alist-get 'trusted record)))
                  (should (string-match-p "applied without review" (alist-get 'how record))))
                (should (string-match-p "\"how\":\"trust\"" (agent-q-agents-test--read agent-q-journal-file)))
                ;; The log line says so too.
                (with-current-buffer agent-q-log-buffer-name
                  (save-excursion
                    (goto-char (point-min))
                    (should (re-search-forward "agent_edit .*f\\.txt: done; trusted until .*gemini's edits"
                                               nil t))))
                ;; Its own settings: reviewed all the same.
                (make-directory (file-name-directory settings) t)
                (agent-q-trust-test--write 2 'gemini settings root)
                (should (eq (car (agent-q-gate-test--answer 2)) 'allow))
                (should (= (car seen) 1))
                (should-not (alist-get 'trusted (car (agent-q-trust-test--audit-of settings))))
                ;; Outside its workspace: reviewed.
                (agent-q-trust-test--write 3 'gemini outside root)
                (agent-q-gate-test--answer 3)
                (should (= (car seen) 2))
                ;; Another agent: reviewed.
                (agent-q-trust-test--write 4 'claude file root)
                (agent-q-gate-test--answer 4)
                (should (= (car seen) 3))
                ;; Another session of a trust for one session: reviewed.
                (agent-q-trust-end t)
                (agent-q-trust-agent "gemini" "another session" nil 600)
                (agent-q-trust-test--write 5 'gemini file root)
                (agent-q-gate-test--answer 5)
                (should (= (car seen) 4))
                ;; A deny rule wins: refused, unreviewed.
                (agent-q-trust-agent "gemini" nil nil 600)
                (let ((agent-q-approval-rules `(("agent_edit" (:path ,(concat root "**")) deny))))
                  (agent-q-trust-test--write 6 'gemini file root)
                  (should (eq (car (agent-q-gate-test--answer 6)) 'deny))
                  (should (= (car seen) 4)))
                ;; An ask rule wins: reviewed.
                (let ((agent-q-approval-rules `(("agent_edit" (:path ,(concat root "**")) ask))))
                  (agent-q-trust-test--write 8 'gemini file root)
                  (agent-q-gate-test--answer 8)
                  (should (= (car seen) 5)))
                ;; Ended: reviewed again.
                (agent-q-trust-end t)
                (agent-q-trust-test--write 7 'gemini file root)
                (agent-q-gate-test--answer 7)
                (should (= (car seen) 6)))
            (delete-file outside)))))))

(ert-deftest agent-q-trust-test-commands ()
  "A command trust runs the lines its rule covers whole, unasked; others are asked."
  (agent-q-gate-test--with-gate #'agent-q-gate-test--deny-all
    (agent-q-trust-test--clean
      (agent-q-trust-agent "claude" nil "make test *" 600)
      (agent-q-gate-test--request 1 "make test && make test FAST=1")
      (should (eq (car (agent-q-gate-test--answer 1)) 'allow))
      (should-not agent-q-gate-test--asked)
      (let ((record (cl-find "shell_command" (agent-q-agents-test--json-lines agent-q-audit-file)
                             :key (lambda (r) (alist-get 'tool r)) :test #'equal)))
        (should (equal (alist-get 'decision record) "trusted"))
        (should (string-match-p "commands matching `make test \\*`" (alist-get 'trusted record))))
      ;; A part the rule does not cover: asked (and denied here).
      (agent-q-gate-test--request 2 "make test; rm -rf build")
      (should (eq (car (agent-q-gate-test--answer 2)) 'deny))
      (should (= (length agent-q-gate-test--asked) 1))
      ;; Another agent: asked.
      (agent-q-gate-test--request 3 "make test" 'gemini)
      (should (eq (car (agent-q-gate-test--answer 3)) 'deny))
      (should (= (length agent-q-gate-test--asked) 2))
      ;; A deny rule wins.
      (let ((agent-q-approval-rules '(("shell_command" (:command "make *" :agent "claude") deny))))
        (agent-q-gate-test--request 4 "make test")
        (should (eq (car (agent-q-gate-test--answer 4)) 'deny))
        (should (= (length agent-q-gate-test--asked) 2))))))

;;;; An IDE companion's openDiff

(defvar agent-q-ide--servers)
(defvar agent-q-ide--reviews)
(defvar agent-q-gate-edit--reviewed)
(declare-function agent-q-ide--open-diff "agent-q-ide" (event))

(ert-deftest agent-q-trust-test-ide-open-diff ()
  "A trusted agent's openDiff in its IDE workspace is accepted unreviewed.
Audited \"trusted until\" and journalled; its settings, a file outside
the workspace folders told to it, another agent, and the same agent
once the trust ended are reviewed."
  (require 'agent-q-ide)
  (agent-q-gate-edit-test--with-file (root file)
    (let* ((answers nil)
           (seen (list 0))
           (agent-q-audit-file (expand-file-name "audit.jsonl" root))
           (agent-q-journal-file (expand-file-name "journal.jsonl" root))
           (agent-q-journal--journal nil)
           (agent-q-approval-rules nil)
           (agent-q-gate-edit--reviewed nil)
           (agent-q-ide--reviews nil)
           (agent-q-ide--servers (list :workspaces (list (directory-file-name root))))
           (agent-q-review--review-driver (agent-q-gate-edit-test--driver '(accept accept) seen))
           (settings (expand-file-name ".claude/settings.json" root))
           (outside (make-temp-file "agent-q-trust-outside" nil nil agent-q-gate-edit-test--old))
           (key 0))
      (cl-letf (((symbol-function 'agent-q--core-ide-answer)
                 (lambda (key answer) (push (cons key answer) answers))))
        (cl-flet ((open-diff (agent path)
                    (setq key (1+ key))
                    (agent-q-ide--open-diff (list :key key :agent agent :path path
                                                  :content agent-q-gate-edit-test--new
                                                  :client (format "%s-code" agent)))
                    (agent-q-agents-test--wait (lambda () (assq key answers)) 30
                                               "the openDiff's answer")
                    (cdr (assq key answers))))
          (agent-q-trust-test--clean
            (unwind-protect
                (progn
                  (make-directory (file-name-directory settings) t)
                  (agent-q-trust-agent "claude" nil nil 600)
                  ;; Trusted: accepted whole, no review.
                  (should (equal (open-diff "claude" file)
                                 (list :accepted agent-q-gate-edit-test--new)))
                  (should (= (car seen) 0))
                  (let ((record (car (agent-q-trust-test--audit-of file))))
                    (should (equal (alist-get 'decision record) "trusted"))
                    (should (string-match-p "\\`trusted until .*: claude's edits inside its workspace"
                                            (alist-get 'trusted record)))
                    (should (string-prefix-p "Claude Code" (alist-get 'client record))))
                  (let ((entry (car (agent-q--core-journal-entries (agent-q-journal--get)))))
                    (should (equal (plist-get entry :file) file))
                    (should (string-match-p "\"how\":\"trust\""
                                            (agent-q-agents-test--read agent-q-journal-file))))
                  ;; Its own settings: reviewed.
                  (should (eq (car (open-diff "claude" settings)) :accepted))
                  (should (= (car seen) 1))
                  (should-not (alist-get 'trusted (car (agent-q-trust-test--audit-of settings))))
                  ;; Outside the workspace folders told to it: reviewed.
                  (open-diff "claude" outside)
                  (should (= (car seen) 2))
                  ;; Another agent: reviewed (the same text, which the trusted
                  ;; openDiff did not leave as reviewed for the next one).
                  (open-diff "gemini" file)
                  (should (= (car seen) 3))
                  ;; Ended: reviewed again.
                  (agent-q-trust-end t)
                  (open-diff "claude" file)
                  (should (= (car seen) 4)))
              (delete-file outside))))))))

;;;; The real agents

(defun agent-q-trust-test--driver (buffer)
  "Accept every hunk of the review in BUFFER, recording its file's name."
  (with-current-buffer buffer
    (let* ((review agent-q-review--this-review)
           (decisions (agent-q-review--review-decisions review)))
      (push (file-name-nondirectory (agent-q-review-file review)) agent-q-gate-edit-test--reviewed)
      (dotimes (i (length decisions))
        (aset decisions i 'accept))
      (agent-q-review--finish review))))

(defun agent-q-trust-test--run (agent n dir home work steps)
  "Run AGENT in WORK (HOME, DIR) with the scripted STEPS, the N-th run."
  (let* ((model-dir (expand-file-name (format "model-%d/" n) dir))
         (model (progn (make-directory model-dir t)
                       (agent-q-agents-test--start-model
                        model-dir (agent-q-agents-test--prop agent :dialect) steps))))
    (unwind-protect
        (agent-q-gate-test--run agent home dir work model (length steps))
      (when (process-live-p (car model))
        (delete-process (car model)))
      (kill-buffer (process-buffer (car model))))))

(defun agent-q-trust-test--replace (file)
  "Gemini's scripted replace of the span of FILE."
  `((tool . "replace") (arguments (file_path . ,file)
                                  (instruction . "Two changes")
                                  (old_string . ,agent-q-gate-edit-test--old-span)
                                  (new_string . ,agent-q-gate-edit-test--new-span))))

(ert-deftest agent-q-trust-test-gemini ()
  "Gemini CLI trusted with its edits for a while, Claude Code not.
Under the trust Gemini's replace passes unreviewed, the mode line
showing the trust, and the audit says \"trusted until\"; its write of
.gemini/settings.json is still reviewed; Claude's edit meanwhile is
reviewed; once the trust has ended by itself, Gemini's edit is
reviewed again."
  (let* ((dir (file-name-as-directory (make-temp-file "agent-q-trust-agent" t)))
         (home (expand-file-name "home/" dir))
         (work (expand-file-name "work/" dir))
         (f (expand-file-name "f.txt" work))
         (g (expand-file-name "g.txt" work))
         (h (expand-file-name "h.txt" work))
         (settings (expand-file-name ".gemini/settings.json" work))
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
    (agent-q-trust-test--clean
      (unwind-protect
          (progn
            (make-directory (expand-file-name "tmp" home) t)
            (make-directory (file-name-directory settings) t)
            (dolist (file (list f g h))
              (agent-q-agents-test--write file agent-q-gate-edit-test--old))
            (let ((default-directory work))
              (should (eq 0 (call-process "git" nil nil nil "init" "-q"))))
            (agent-q-gate-mode 1)
            (agent-q-mcp-start)
            ;; Gemini's edits trusted for ten minutes.
            (agent-q-trust-agent "gemini" nil nil 600)
            (should (string-match-p "\\[trust: gemini edits [0-9]+:[0-9][0-9]\\]"
                                    (agent-q-trust-test--mode-line)))
            (pcase-let ((`(,_ . ,why)
                         (agent-q-trust-test--run
                          'gemini 1 dir home work
                          `(,(agent-q-trust-test--replace f)
                            ((tool . "write_file") (arguments (file_path . ,settings)
                                                              (content . "{\"general\":{}}\n")))
                            ((text . "Done."))))))
              (ert-info (why)
                ;; f.txt changed whole, unreviewed; the settings reviewed, then written.
                (should (equal (agent-q-agents-test--read f) agent-q-gate-edit-test--new))
                (should (equal agent-q-gate-edit-test--reviewed '("settings.json")))
                (should (equal (agent-q-agents-test--read settings) "{\"general\":{}}\n"))
                (let ((record (car (agent-q-trust-test--audit-of f))))
                  (should (equal (alist-get 'decision record) "trusted"))
                  (should (string-match-p "\\`trusted until .*: gemini's edits inside its workspace"
                                          (alist-get 'trusted record)))
                  (should (string-match-p "\\`gemini (own tools)" (alist-get 'client record))))
                (should-not (alist-get 'trusted (car (agent-q-trust-test--audit-of settings))))
                (should (string-match-p "\"how\":\"trust\"" (agent-q-agents-test--read agent-q-journal-file)))
                ;; The trust holds still: the mode line shows it.
                (should (string-match-p "gemini edits" (agent-q-trust-test--mode-line)))))
            ;; Claude's edit, while Gemini is trusted: reviewed.
            (pcase-let ((`(,_ . ,why)
                         (agent-q-trust-test--run
                          'claude 2 dir home work
                          `(((tool . "Read") (arguments (file_path . ,g)))
                            ((tool . "Edit") (arguments (file_path . ,g)
                                                        (old_string . ,agent-q-gate-edit-test--old-span)
                                                        (new_string . ,agent-q-gate-edit-test--new-span)))
                            ((text . "Done."))))))
              (ert-info (why)
                (should (equal (car agent-q-gate-edit-test--reviewed) "g.txt"))
                (should (equal (agent-q-agents-test--read g) agent-q-gate-edit-test--new))
                (should-not (alist-get 'trusted (car (agent-q-trust-test--audit-of g))))))
            ;; A short trust, which ends by itself.
            (agent-q-trust-agent "gemini" nil nil 1)
            (agent-q-agents-test--wait (lambda () (null agent-q-trust--active)) 30
                                       "the trust to end by itself")
            (should-not (agent-q-trust-test--mode-line))
            (should-not agent-q-trust--timer)
            ;; Gemini's next edit is reviewed again.
            (pcase-let ((`(,_ . ,why)
                         (agent-q-trust-test--run
                          'gemini 3 dir home work
                          `(,(agent-q-trust-test--replace h) ((text . "Done."))))))
              (ert-info (why)
                (should (equal (car agent-q-gate-edit-test--reviewed) "h.txt"))
                (should (equal (agent-q-agents-test--read h) agent-q-gate-edit-test--new))
                (should-not (alist-get 'trusted (car (agent-q-trust-test--audit-of h)))))))
        (agent-q-gate-test--clean-up nil dir)))))

;;;; Over ACP: the real gemini --acp

(defun agent-q-trust-test--acp-driver (buffer)
  "Accept every hunk of the review in BUFFER, recording its file's name."
  (let ((review (with-current-buffer buffer agent-q-review--this-review)))
    (push (file-name-nondirectory (agent-q-review-file review)) agent-q-gate-edit-test--reviewed)
    (with-current-buffer buffer
      (agent-q-review-accept-all)
      (agent-q-review-finish))))

(ert-deftest agent-q-trust-test-gemini-acp ()
  "Gemini CLI over ACP, trusted with its edits for a while.
Its write of a file in its workspace is allowed unreviewed, the audit
saying \"trusted until\" and the journal recording it; its write of
.gemini/settings.json is still reviewed; once the trust is ended, its
write is reviewed again."
  (agent-q-acp-test--require-acp)
  (let* ((acp-logging-enabled t)
         (dir (file-name-as-directory (make-temp-file "agent-q-trust-acp" t)))
         (home (expand-file-name "home/" dir))
         (work (directory-file-name (expand-file-name "work" dir)))
         (trusted (expand-file-name "trusted.txt" work))
         (settings (expand-file-name ".gemini/settings.json" work))
         (after (expand-file-name "after.txt" work))
         (agent-q-mcp-connection-file (expand-file-name "connection.json" dir))
         (agent-q-audit-file (expand-file-name "audit.jsonl" dir))
         (agent-q-journal-file (expand-file-name "journal.jsonl" dir))
         (agent-q-journal--journal nil)
         (agent-q-allowed-directories (list work))
         (agent-q-mcp-allowed-directories (list work))
         (agent-q-approval-function #'agent-q-gate-test--deny-all)
         (agent-q-approval-rules nil)
         (agent-q-review--review-driver #'agent-q-trust-test--acp-driver)
         (agent-q-gate-edit-test--reviewed nil)
         (agent-q-prompt--session-approved nil)
         (agent-q-mcp-port 0)
         (agent-q-acp-unruled 'agent-q)
         (agent-shell-permission-responder-function nil)
         (agent-shell-mcp-servers nil)
         model run)
    (agent-q-trust-test--clean
      (unwind-protect
          (progn
            (make-directory (expand-file-name "tmp" home) t)
            (make-directory (file-name-directory settings) t)
            (agent-q-agent-shell-mode 1)
            (agent-q-acp-test--script dir '(((text . "unused"))))
            (setq model (agent-q-acp-test--start-model dir "gemini"))
            (setq run (agent-q-acp-test--start
                       'gemini work
                       (agent-q-acp-test--setup 'gemini home
                                                (format "http://127.0.0.1:%d" (nth 1 model)))))
            (agent-q-trust-agent "gemini" nil nil 600)
            (should (string-match-p "\\[trust: gemini edits [0-9]+:[0-9][0-9]\\]"
                                    (agent-q-trust-test--mode-line)))
            (should (equal (agent-q-acp-test--turn
                            run dir "Write two files."
                            (list (agent-q-acp-test--step 'gemini 'write trusted "trusted text\n")
                                  (agent-q-acp-test--step 'gemini 'write settings "{\"general\":{}}\n")
                                  '((text . "Done."))))
                           "end_turn"))
            ;; The trusted write: unreviewed, written, audited and journalled as trusted.
            (should (equal (agent-q-agents-test--read trusted) "trusted text\n"))
            (should (equal agent-q-gate-edit-test--reviewed '("settings.json")))
            (should (equal (agent-q-agents-test--read settings) "{\"general\":{}}\n"))
            (let ((record (car (agent-q-trust-test--audit-of trusted))))
              (should (equal (alist-get 'decision record) "trusted"))
              (should (string-match-p "\\`trusted until .*: gemini's edits inside its workspace"
                                      (alist-get 'trusted record)))
              (should (string-prefix-p "Gemini CLI (ACP)" (alist-get 'client record))))
            (should-not (alist-get 'trusted (car (agent-q-trust-test--audit-of settings))))
            (let ((entry (cl-find trusted (agent-q--core-journal-entries (agent-q-journal--get))
                                  :key (lambda (e) (plist-get e :file)) :test #'equal)))
              (should entry)
              (should (string-prefix-p "Gemini CLI (ACP)" (plist-get entry :agent))))
            (should (string-match-p "\"how\":\"trust\"" (agent-q-agents-test--read agent-q-journal-file)))
            ;; Ended: its next write is reviewed.
            (agent-q-trust-end t)
            (should-not (agent-q-trust-test--mode-line))
            (should (equal (agent-q-acp-test--turn
                            run dir "Write one more."
                            (list (agent-q-acp-test--step 'gemini 'write after "after text\n")
                                  '((text . "Done."))))
                           "end_turn"))
            (should (equal (car agent-q-gate-edit-test--reviewed) "after.txt"))
            (should (equal (agent-q-agents-test--read after) "after text\n"))
            (should-not (alist-get 'trusted (car (agent-q-trust-test--audit-of after)))))
        (agent-q-agent-shell-mode -1)
        (when run
          (let ((process (map-elt (agent-q-acp-test--run-client run) :process)))
            (when (process-live-p process) (delete-process process)))
          (kill-buffer (agent-q-acp-test--run-shell run)))
        (when (and model (process-live-p (car model)))
          (delete-process (car model)))
        (when model
          (kill-buffer (process-buffer (car model))))
        (agent-q-mcp-stop)
        (agent-q-cancel-pending)
        (delete-directory dir t)))))

(provide 'agent-q-trust-test)
;;; agent-q-trust-test.el ends here
