;;; agent-q-gate-test.el --- The terminal agents' own tools decided in Emacs  -*- lexical-binding: t -*-

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

;; The gate (lisp/agent-q-gate.el): the module's command decision
;; (`agent-q--core-command-decide'), the :command and :agent keys of the
;; approval rules, gate requests decided through the asynchronous
;; executor (answers recorded instead of sent), and the real Claude
;; Code, driven by the scripted model of tests/fake-agent-model.py,
;; whose own Bash calls go through its PreToolUse hook (bin/agent-q-mcp
;; hook --agent claude) to this Emacs.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'json)
(require 'subr-x)
(require 'agent-q)
(require 'agent-q-mcp)
(require 'agent-q-gate)
(require 'agent-q-connect)
(require 'agent-q-agents-test)
(require 'agent-q-keys-support)

(defvar agent-q-prompt--session-approved)
(defvar agent-q-rules--session)

;;;; The module's decision

(ert-deftest agent-q-gate-test-command-decide ()
  "Compound commands are allowed only when every part is; deny wins; bad rules signal."
  (should (equal (agent-q--core-command-decide "git status" nil nil '("git status"))
                 '(allow . "`git status` matches the allow rule `git status`")))
  (let ((answer (agent-q--core-command-decide "git status; touch x" nil nil '("git status"))))
    (should (eq (car answer) 'no-rule))
    (should (string-match-p "`touch x` (after `;`) matches no allow rule" (cdr answer))))
  (should (eq (car (agent-q--core-command-decide "sudo rm -rf /" '("rm *") nil '("sudo *")))
              'deny))
  (should (eq (car (agent-q--core-command-decide "npm test" nil '("npm *") '("npm test")))
              'ask))
  (should (eq (car (agent-q--core-fetch-decide "https://docs.example.org/x" nil nil
                                               '("*.example.org")))
              'allow))
  (should-error (agent-q--core-command-decide "ls" nil nil '("ls $(x)")) :type 'agent-q-error)
  (should-error (agent-q--core-command-decide "ls" nil nil '(42)) :type 'agent-q-error)
  (should-error (agent-q--core-command-decide "ls" nil nil 'x) :type 'agent-q-error))

;;;; Rules

(defconst agent-q-gate-test--context
  (list :origin 'mcp :client "claude (own tools) s1" :mcp-client "claude (own tools)"
        :safety-level :dangerous :tool "shell_command")
  "The approval context of a Claude Code shell command.")

(ert-deftest agent-q-gate-test-command-rules ()
  "The :command rules decide together, through the module; :agent picks the agent."
  (let ((agent-q-approval-rules '(("shell_command" (:command "git status") allow)
                                  ("shell_command" (:command "git diff *" :agent "gemini") allow)
                                  ("shell_command" (:command "rm *") deny)))
        (context agent-q-gate-test--context))
    (should (eq (car (agent-q-rules-decide "shell_command" '(:command "git status") context))
                'allow))
    (let ((ruling (agent-q-rules-decide "shell_command" '(:command "git status; touch x")
                                        context)))
      (should (eq (car ruling) 'ask))
      (should (string-match-p "`touch x` (after `;`) matches no allow rule"
                              (agent-q-rules-ruling-text ruling))))
    (let ((ruling (agent-q-rules-decide "shell_command" '(:command "git status && rm -r y")
                                        context)))
      (should (eq (car ruling) 'deny))
      (should (string-match-p "matches the deny rule `rm \\*`" (agent-q-rules-ruling-text ruling))))
    ;; The gemini rule does not apply to Claude's calls, nor to an MCP client's.
    (should (eq (car (agent-q-rules-decide "shell_command" '(:command "git diff HEAD") context))
                'ask))
    (should (eq (car (agent-q-rules-decide
                      "shell_command" '(:command "git diff HEAD")
                      (plist-put (copy-sequence context) :mcp-client "gemini (own tools)")))
                'allow))
    (should (eq (car (agent-q-rules-decide
                      "shell_command" '(:command "git diff HEAD")
                      (plist-put (copy-sequence context) :mcp-client "gemini-cli")))
                'ask))))

(ert-deftest agent-q-gate-test-rule-check ()
  "Malformed :command and :agent rules are refused, saying why."
  (should (string-match-p "not one plain command"
                          (agent-q-rules--check '("shell_command" (:command "ls $(x)") allow))))
  (should (string-match-p ":agent is not one of"
                          (agent-q-rules--check '("shell_command" (:agent "emacs") allow))))
  (should (agent-q-rules--check '("shell_command" (:agent "claude" :mcp-client "x") allow)))
  (should-not (agent-q-rules--check '("shell_command" (:command "git diff *" :agent "codex")
                                      allow))))

;;;; Gate requests, answers recorded

(defvar agent-q-gate-test--answers nil
  "The answers to gate requests, newest first: (KEY DECISION DETAIL).")

(defvar agent-q-gate-test--asked nil
  "What the approval function was asked, newest first: (TOOL ARGS CONTEXT).")

(defmacro agent-q-gate-test--with-gate (approve &rest body)
  "Run BODY with gate answers recorded and APPROVE as the approval function."
  (declare (indent 1))
  `(let* ((dir (make-temp-file "agent-q-gate" t))
          (agent-q-audit-file (expand-file-name "audit.jsonl" dir))
          (agent-q-approval-function ,approve)
          (agent-q-approval-rules nil)
          (agent-q-prompt--session-approved nil)
          (agent-q-gate-test--answers nil)
          (agent-q-gate-test--asked nil))
     (unwind-protect
         (cl-letf (((symbol-function 'agent-q--core-mcp-gate-answer)
                    (lambda (key decision detail)
                      (push (list key decision detail) agent-q-gate-test--answers)
                      t)))
           ,@body)
       (agent-q-cancel-pending)
       (delete-directory dir t))))

(defun agent-q-gate-test--request (key command &optional agent input)
  "Hand the gate a request KEY to run COMMAND, from AGENT (default claude).
INPUT is the tool input (default (:command COMMAND :description \"d\"))."
  (agent-q-gate-request key (list :agent (or agent 'claude) :event 'pre-tool
                                  :session "session-1" :cwd "/tmp" :tool "Bash"
                                  :tool-use-id "toolu_1"
                                  :input (or input (list :command command :description "d"))
                                  :kind (list :kind "shell" :command command
                                              :argv nil :dir nil))))

(defun agent-q-gate-test--answer (key)
  "The answer to the gate request KEY, waiting for it."
  (agent-q-agents-test--wait (lambda () (assoc key agent-q-gate-test--answers)) 10
                             (format "the answer to gate request %s" key))
  (cdr (assoc key agent-q-gate-test--answers)))

(defun agent-q-gate-test--record (tool args)
  "Record TOOL and ARGS; approve \"echo ok\", edit \"echo edit-me\", deny the rest."
  (push (list tool args agent-q-approval-context) agent-q-gate-test--asked)
  (pcase (plist-get args :command)
    ("echo ok" :approved)
    ("echo edit-me" (list :modified (plist-put (copy-sequence args) :command "echo edited")))
    (_ :denied)))

(ert-deftest agent-q-gate-test-requests ()
  "Approved → allow; edited → allow with the new input; denied → deny, the executor's words."
  (agent-q-gate-test--with-gate #'agent-q-gate-test--record
    (agent-q-gate-test--request 1 "echo ok")
    (should (equal (agent-q-gate-test--answer 1) '(allow nil)))
    (let* ((shown nil)
           (answer (cl-letf* ((message (symbol-function 'message))
                              ((symbol-function 'message)
                               (lambda (format &rest args)
                                 (when format (push (apply #'format-message format args) shown))
                                 (apply message format args))))
                     (agent-q-gate-test--request 2 "echo edit-me")
                     (agent-q-gate-test--answer 2))))
      ;; The user is told that the agent's display does not show the edit.
      (should (cl-some (lambda (m)
                         (string-match-p "runs your edited command: echo edited\\.  The agent still displays its own command, not your edit; its model is told what ran"
                                         m))
                       shown))
      (should (eq (car answer) 'allow))
      (should (equal (json-parse-string (cadr answer) :object-type 'alist)
                     '((command . "echo edited") (description . "d")))))
    (agent-q-gate-test--request 3 "touch x")
    (let ((answer (agent-q-gate-test--answer 3)))
      (should (eq (car answer) 'deny))
      (should (string-match-p "denied" (cadr answer))))
    ;; The prompt named the agent and its session, and showed the command and directory.
    (should (equal (plist-get (nth 2 (car (last agent-q-gate-test--asked))) :client)
                   "claude (own tools) session-1"))
    (should (equal (nth 1 (car (last agent-q-gate-test--asked)))
                   '(:command "echo ok" :directory "/tmp")))
    ;; Other tools are left to the agent; agent-q's own, always.
    (agent-q-gate-request 4 (list :agent 'claude :kind '(:kind "other")))
    (agent-q-gate-request 5 (list :agent 'claude :kind '(:kind "agent-q" :tool "read_file")))
    (should (equal (agent-q-gate-test--answer 4) '(no-opinion nil)))
    (should (equal (agent-q-gate-test--answer 5) '(no-opinion nil)))
    ;; The audit names the agent for each.
    (let ((audit (agent-q-agents-test--json-lines agent-q-audit-file)))
      (should (equal (mapcar (lambda (r) (list (alist-get 'event r) (alist-get 'decision r)))
                             (cl-remove-if (lambda (r) (equal (alist-get 'event r) "run"))
                                           audit))
                     '(("result" "approved") ("result" "modified") ("denied" "denied"))))
      (dolist (record audit)
        (should (equal (alist-get 'client record) "claude (own tools) session-1"))
        (should (equal (alist-get 'tool record) "shell_command"))))))

(ert-deftest agent-q-gate-test-rules-decide-without-asking ()
  "An allow rule runs without asking; a compound command asks, saying what no rule covers."
  (agent-q-gate-test--with-gate #'agent-q-gate-test--record
    (setq agent-q-approval-rules '(("shell_command" (:command "git status") allow)
                                   ("shell_command" (:command "rm *" :agent "claude") deny)))
    (agent-q-gate-test--request 1 "git status")
    (should (equal (agent-q-gate-test--answer 1) '(allow nil)))
    (should-not agent-q-gate-test--asked)
    (agent-q-gate-test--request 2 "git status; touch x")
    (should (eq (car (agent-q-gate-test--answer 2)) 'deny))
    (should (string-match-p "`touch x` (after `;`) matches no allow rule"
                            (plist-get (nth 2 (car agent-q-gate-test--asked)) :rule)))
    (setq agent-q-gate-test--asked nil)
    (agent-q-gate-test--request 3 "rm -rf build")
    (let ((answer (agent-q-gate-test--answer 3)))
      (should (eq (car answer) 'deny))
      (should (string-match-p "approval rule.*matches the deny rule `rm \\*`" (cadr answer))))
    (should-not agent-q-gate-test--asked)
    ;; Gemini's calls: the rule for Claude does not apply; they are asked.
    (agent-q-gate-test--request 4 "rm -rf build" 'gemini)
    (should (eq (car (agent-q-gate-test--answer 4)) 'deny))
    (should (equal (plist-get (nth 2 (car agent-q-gate-test--asked)) :client)
                   "gemini (own tools) session-1"))))

(ert-deftest agent-q-gate-test-withdrawn ()
  "A request withdrawn while asked leaves its prompt; the audit says the agent withdrew it."
  (let (key-asked)
    (agent-q-gate-test--with-gate
        (lambda (_tool _args)
          (setq key-asked t)
          ;; The hook was killed while the user looked at the prompt.
          (agent-q-gate-withdraw 7)
          :approved)
      (agent-q-gate-test--request 7 "echo ok")
      (agent-q-agents-test--wait (lambda () (assoc 7 agent-q-gate-test--answers)) 10
                                 "the withdrawn request's end")
      (should key-asked)
      ;; The late answer (refused by the server) is a denial, never an allow.
      (should (eq (nth 1 (assoc 7 agent-q-gate-test--answers)) 'deny))
      (should-not agent-q--pending)
      (let ((record (car (last (agent-q-agents-test--json-lines agent-q-audit-file)))))
        (should (equal (alist-get 'event record) "cancelled"))
        (should (string-match-p "the agent withdrew the call" (alist-get 'content record)))))))

;;;; Reads and fetches

(defun agent-q-gate-test--deny-all (tool args)
  "Record TOOL and ARGS; deny."
  (push (list tool args agent-q-approval-context) agent-q-gate-test--asked)
  :denied)

(defun agent-q-gate-test--read (key cwd &rest paths)
  "Hand the gate a request KEY from Claude in CWD to read PATHS."
  (agent-q-gate-request key (list :agent 'claude :event 'pre-tool :session "session-1"
                                  :cwd cwd :tool "Read" :tool-use-id "toolu_1"
                                  :input (list :file_path (car paths))
                                  :kind (list :kind "read" :paths (vconcat paths)))))

(defun agent-q-gate-test--fetch (key url)
  "Hand the gate a request KEY from Claude to fetch URL."
  (agent-q-gate-request key (list :agent 'claude :event 'pre-tool :session "session-1"
                                  :cwd "/tmp" :tool "WebFetch" :tool-use-id "toolu_1"
                                  :input (list :url url :prompt "p")
                                  :kind (list :kind "fetch" :urls (vector url)))))

(ert-deftest agent-q-gate-test-reads ()
  "Reads in the agent's directory are allowed unasked; sensitive and outside ones are asked."
  (let* ((work (file-name-as-directory (make-temp-file "agent-q-gate-work" t)))
         (outside (make-temp-file "agent-q-gate-outside")))
    (unwind-protect
        (agent-q-gate-test--with-gate #'agent-q-gate-test--deny-all
          (agent-q-agents-test--write (expand-file-name "a.txt" work) "a\n")
          (agent-q-agents-test--write (expand-file-name ".env" work) "SECRET=1\n")
          ;; In the workspace: allowed, unasked, audited.
          (agent-q-gate-test--read 1 work (expand-file-name "a.txt" work))
          (should (equal (agent-q-gate-test--answer 1) '(allow nil)))
          (agent-q-gate-test--read 2 work "a.txt")
          (should (equal (agent-q-gate-test--answer 2) '(allow nil)))
          (should-not agent-q-gate-test--asked)
          ;; A sensitive file: asked (denied here), saying why.
          (agent-q-gate-test--read 3 work (expand-file-name ".env" work))
          (let ((answer (agent-q-gate-test--answer 3)))
            (should (eq (car answer) 'deny))
            (should (string-match-p "denied" (cadr answer))))
          (should (equal (nth 0 (car agent-q-gate-test--asked)) "agent_read"))
          (should (string-match-p "sensitive file pattern"
                                  (plist-get (nth 2 (car agent-q-gate-test--asked)) :reason)))
          ;; Outside the agent's directory: asked.
          (agent-q-gate-test--read 4 work outside)
          (should (eq (car (agent-q-gate-test--answer 4)) 'deny))
          (should (string-match-p "outside the allowed directories"
                                  (plist-get (nth 2 (car agent-q-gate-test--asked)) :reason)))
          ;; Several files: denied when one is; a glob is asked.
          (agent-q-gate-test--read 5 work "a.txt" ".env")
          (should (eq (car (agent-q-gate-test--answer 5)) 'deny))
          (agent-q-gate-test--read 6 work "src/**/*.el")
          (should (eq (car (agent-q-gate-test--answer 6)) 'deny))
          (should (string-match-p "is a glob"
                                  (plist-get (nth 2 (car agent-q-gate-test--asked)) :reason)))
          (should (= (length agent-q-gate-test--asked) 4))
          ;; The audit names each file.
          (let ((audit (cl-remove-if (lambda (r) (equal (alist-get 'event r) "run"))
                                     (agent-q-agents-test--json-lines agent-q-audit-file))))
            (should (equal (mapcar (lambda (r) (list (alist-get 'tool r) (alist-get 'decision r)))
                                   (seq-take audit 3))
                           '(("agent_read" "auto") ("agent_read" "auto")
                             ("agent_read" "denied"))))))
      (delete-directory work t)
      (delete-file outside))))

(defun agent-q-gate-test--grep (key cwd path globs reach)
  "Hand the gate a Claude Grep KEY in CWD of PATH with GLOBS; the core found REACH."
  (agent-q-gate-request key (list :agent 'claude :event 'pre-tool :session "session-1"
                                  :cwd cwd :tool "Grep" :tool-use-id "toolu_1"
                                  :input (list :pattern "x")
                                  :kind (list :kind "search" :path path
                                              :globs (vconcat globs) :reach reach))))

(ert-deftest agent-q-gate-test-searches ()
  "Searches in the agent's directory with narrow globs run unasked; the rest is asked."
  (let* ((work (file-name-as-directory (make-temp-file "agent-q-gate-work" t)))
         (outside (file-name-as-directory (make-temp-file "agent-q-gate-outside" t)))
         (reach "the glob \".e*\" can match .env, a sensitive name"))
    (unwind-protect
        (agent-q-gate-test--with-gate #'agent-q-gate-test--deny-all
          (agent-q-agents-test--write (expand-file-name "a.txt" work) "a\n")
          (agent-q-agents-test--write (expand-file-name ".env" work) "SECRET=1\n")
          (make-directory (expand-file-name "sub/.ssh" work) t)
          ;; Its directory (by default, or named), globs that cannot reach: unasked.
          (agent-q-gate-test--grep 1 work nil '("*.txt") nil)
          (should (equal (agent-q-gate-test--answer 1) '(allow nil)))
          (agent-q-gate-test--grep 2 work "sub" '("*.el") nil)
          (should (equal (agent-q-gate-test--answer 2) '(allow nil)))
          ;; An ordinary file, named: its glob does not matter.
          (agent-q-gate-test--grep 3 work "a.txt" nil "it searches every file")
          (should (equal (agent-q-gate-test--answer 3) '(allow nil)))
          (should-not agent-q-gate-test--asked)
          ;; A folder with a glob that selects a sensitive file: asked, naming it.
          (agent-q-gate-test--grep 4 work nil '(".e*") reach)
          (should (eq (car (agent-q-gate-test--answer 4)) 'deny))
          (should (equal (nth 0 (car agent-q-gate-test--asked)) "agent_search"))
          (should (string-match-p "can reach \\.env (sensitive by"
                                  (plist-get (nth 2 (car agent-q-gate-test--asked)) :reason)))
          ;; A sensitive file or folder named, a folder outside: asked.
          (agent-q-gate-test--grep 5 work ".env" nil nil)
          (should (eq (car (agent-q-gate-test--answer 5)) 'deny))
          (should (string-match-p "sensitive file pattern"
                                  (plist-get (nth 2 (car agent-q-gate-test--asked)) :reason)))
          (agent-q-gate-test--grep 6 work "sub/.ssh" '("*.txt") nil)
          (should (eq (car (agent-q-gate-test--answer 6)) 'deny))
          (should (string-match-p "sensitive file pattern"
                                  (plist-get (nth 2 (car agent-q-gate-test--asked)) :reason)))
          (agent-q-gate-test--grep 7 work outside '("*.txt") nil)
          (should (eq (car (agent-q-gate-test--answer 7)) 'deny))
          (should (string-match-p "outside the allowed directories"
                                  (plist-get (nth 2 (car agent-q-gate-test--asked)) :reason)))
          (should (= (length agent-q-gate-test--asked) 4)))
      (delete-directory work t)
      (delete-directory outside t))))

(ert-deftest agent-q-gate-test-search-walk ()
  "A search whose globs may reach a sensitive name walks its folder.
It runs unasked when no file it selects is sensitive; it is asked,
naming the file, when one is (a .env deep down, an auto-save file of
one that the read guard reads back), and when its glob selects one."
  (let* ((work (file-name-as-directory (make-temp-file "agent-q-gate-work" t)))
         (every "it searches every file under its folder, .env and other sensitive files included")
         (txt nil))
    (unwind-protect
        (agent-q-gate-test--with-gate #'agent-q-gate-test--deny-all
          (agent-q-agents-test--write (expand-file-name "a.txt" work) "a\n")
          (agent-q-agents-test--write (expand-file-name "src/deep/b.py" work) "b\n")
          ;; Ordinary files only: a search with no glob runs unasked.
          (agent-q-gate-test--grep 1 work nil nil every)
          (should (equal (agent-q-gate-test--answer 1) '(allow nil)))
          (should-not agent-q-gate-test--asked)
          ;; A .env deep down: asked, naming it.
          (agent-q-agents-test--write (expand-file-name "src/deep/.env" work) "SECRET=1\n")
          (agent-q-gate-test--grep 2 work nil nil every)
          (should (eq (car (agent-q-gate-test--answer 2)) 'deny))
          (should (string-match-p "can reach src/deep/\\.env (sensitive by"
                                  (plist-get (nth 2 (car agent-q-gate-test--asked)) :reason)))
          ;; A glob that does not select it, in a folder without it: unasked.
          (agent-q-gate-test--grep 3 work nil '("*.txt") txt)
          (should (equal (agent-q-gate-test--answer 3) '(allow nil)))
          (agent-q-gate-test--grep 4 work "src" '("*.py") nil)
          (should (equal (agent-q-gate-test--answer 4) '(allow nil)))
          (should (= (length agent-q-gate-test--asked) 1))
          ;; An auto-save file of a .env: the read guard reads it back.
          (delete-file (expand-file-name "src/deep/.env" work))
          (agent-q-agents-test--write (expand-file-name "src/#.env#" work) "SECRET=1\n")
          (agent-q-gate-test--grep 5 work nil nil every)
          (should (eq (car (agent-q-gate-test--answer 5)) 'deny))
          (should (string-match-p "can reach src/#\\.env# (it stands for .*/src/\\.env"
                                  (plist-get (nth 2 (car agent-q-gate-test--asked)) :reason)))
          ;; A glob that selects a sensitive file: asked.
          (agent-q-agents-test--write (expand-file-name ".env.txt" work) "SECRET=1\n")
          (agent-q-gate-test--grep 6 work nil '("*.txt") txt)
          (should (eq (car (agent-q-gate-test--answer 6)) 'deny))
          (should (string-match-p "can reach \\.env\\.txt"
                                  (plist-get (nth 2 (car agent-q-gate-test--asked)) :reason)))
          (should (= (length agent-q-gate-test--asked) 3)))
      (delete-directory work t))))

(ert-deftest agent-q-gate-test-fetches ()
  "Fetches are decided by the :domain rules, else asked."
  (agent-q-gate-test--with-gate #'agent-q-gate-test--deny-all
    (setq agent-q-approval-rules '(("agent_fetch" (:domain "*.gnu.org") allow)
                                   ("agent_fetch" (:domain "evil.example") deny)))
    (agent-q-gate-test--fetch 1 "https://www.gnu.org/software/emacs/")
    (should (equal (agent-q-gate-test--answer 1) '(allow nil)))
    (agent-q-gate-test--fetch 2 "https://evil.example/x")
    (let ((answer (agent-q-gate-test--answer 2)))
      (should (eq (car answer) 'deny))
      (should (string-match-p "deny rule" (cadr answer))))
    (should-not agent-q-gate-test--asked)
    (agent-q-gate-test--fetch 3 "https://other.example/")
    (should (eq (car (agent-q-gate-test--answer 3)) 'deny))
    (should (equal (cadr (car agent-q-gate-test--asked)) '(:url "https://other.example/")))
    ;; Asked because no rule allows it (no rule asks), which it says.
    (should (string-match-p "\\`no domain rule allows agent_fetch: "
                            (plist-get (nth 2 (car agent-q-gate-test--asked)) :rule)))
    ;; No rule: asked.
    (setq agent-q-approval-rules nil agent-q-gate-test--asked nil)
    (agent-q-gate-test--fetch 4 "https://www.gnu.org/")
    (should (eq (car (agent-q-gate-test--answer 4)) 'deny))
    (should agent-q-gate-test--asked)))

(ert-deftest agent-q-gate-test-domain-rules ()
  "The :domain rules: checked, described, decided together; :agent picks the agent."
  (should (string-match-p "both :command and :domain"
                          (agent-q-rules--check '("agent_fetch" (:domain "a.example"
                                                                 :command "ls")
                                                  allow))))
  (should (agent-q-rules--check '("agent_fetch" (:domain "not a host/") allow)))
  (should-not (agent-q-rules--check '("agent_fetch" (:domain "*.example.org" :agent "gemini")
                                      allow)))
  (should (equal (agent-q-rules-describe '("agent_fetch" (:domain "*.example.org") allow))
                 "allow agent_fetch for fetches from *.example.org"))
  (let ((agent-q-approval-rules '(("agent_fetch" (:domain "*.example.org") allow)
                                  ("agent_fetch" (:domain "bad.example.org") deny)
                                  ("agent_fetch" (:domain "x.example" :agent "gemini") allow)))
        (context (list :origin 'mcp :client "claude (own tools) s1"
                       :mcp-client "claude (own tools)" :safety-level :dangerous
                       :tool "agent_fetch")))
    (should (eq (car (agent-q-rules-decide "agent_fetch" '(:url "https://a.example.org/") context))
                'allow))
    (should (eq (car (agent-q-rules-decide "agent_fetch" '(:url "https://bad.example.org/")
                                           context))
                'deny))
    (should (eq (car (agent-q-rules-decide "agent_fetch" '(:url "https://x.example/") context))
                'ask))
    (should (eq (car (agent-q-rules-decide
                      "agent_fetch" '(:url "https://x.example/")
                      (plist-put (copy-sequence context) :mcp-client "gemini (own tools)")))
                'allow))))

(ert-deftest agent-q-gate-test-notify ()
  "A gated call that waits for the user is told; one a rule decides is not."
  (let (said rang notified)
    (cl-letf (((symbol-function 'agent-q-gate--bell) (lambda (&rest _) (setq rang t)))
              ((symbol-function 'display-graphic-p) (lambda (&rest _) nil)))
      (agent-q-gate-test--with-gate #'agent-q-gate-test--deny-all
        (setq agent-q-approval-rules '(("shell_command" (:command "git status") allow)))
        (cl-letf (((symbol-function 'message)
                   (lambda (format &rest args) (push (apply #'format format args) said))))
          (agent-q-gate-test--request 1 "git status")
          (agent-q-gate-test--request 2 "touch x"))
        (should (eq (car (agent-q-gate-test--answer 1)) 'allow))
        (should (eq (car (agent-q-gate-test--answer 2)) 'deny))
        (should rang)
        (should (equal said '("agent-q: claude (own tools) session-1 waits for your decision in Emacs: run touch x")))
        ;; A session's UUID is cut to the prompt's short form.
        (setq said nil)
        (cl-letf (((symbol-function 'message)
                   (lambda (format &rest args) (push (apply #'format format args) said))))
          (agent-q-gate-test--request-from 4 "touch z" 'claude
                                           "0a1b2c3d-4e5f-6789-abcd-ef0123456789"))
        (should (eq (car (agent-q-gate-test--answer 4)) 'deny))
        (should (equal said '("agent-q: claude (own tools) 0a1b2c3d… waits for your decision in Emacs: run touch z")))
        ;; Turned off: nothing.
        (setq said nil rang nil)
        (let ((agent-q-gate-notify nil))
          (cl-letf (((symbol-function 'message)
                     (lambda (format &rest args) (push (apply #'format format args) said))))
            (agent-q-gate-test--request 3 "touch y")))
        (should (eq (car (agent-q-gate-test--answer 3)) 'deny))
        (should-not (or said rang))))
    ;; A graphical display: a desktop notification.
    (when (require 'notifications nil t)
      (cl-letf (((symbol-function 'display-graphic-p) (lambda (&rest _) t))
                ((symbol-function 'notifications-notify)
                 (lambda (&rest params) (push params notified) 1)))
        (agent-q-gate-test--with-gate #'agent-q-gate-test--deny-all
          (agent-q-gate-test--fetch 1 "https://example.org/")
          (should (eq (car (agent-q-gate-test--answer 1)) 'deny))
          (should (equal (plist-get (car notified) :body)
                         "claude (own tools) session-1 waits for your decision in Emacs: fetch https://example.org/")))))))

;;;; a and s at the prompt, per agent

(defvar agent-q-gate-test--read nil
  "What `read-string' was asked inside `agent-q-gate-test--keys', newest first.")

(defmacro agent-q-gate-test--keys (keys keep &rest body)
  "Run BODY with the real prompt, KEYS typed (`kbd' syntax).
`read-string' answers its default (recorded in `agent-q-gate-test--read');
`y-or-n-p' (keep the rule in future sessions?) answers KEEP."
  (declare (indent 2))
  `(agent-q-gate-test--with-gate #'agent-q-approve-in-minibuffer
     (let ((agent-q-rules--session nil)
           (agent-q-gate-test--read nil)
           (agent-q-approval-idle-delay 0))
       (agent-q-test-typing ,keys
         (cl-letf (((symbol-function 'read-string)
                    (lambda (prompt &optional initial &rest _)
                      (push (cons prompt initial) agent-q-gate-test--read)
                      initial))
                   ((symbol-function 'y-or-n-p) (lambda (&rest _) ,keep)))
           ,@body
           (should-not unread-command-events))))))

(defun agent-q-gate-test--request-from (key command agent session)
  "Hand the gate a request KEY to run COMMAND, from AGENT's SESSION."
  (agent-q-gate-request key (list :agent agent :event 'pre-tool :session session
                                  :cwd "/tmp" :tool "Bash" :tool-use-id "toolu_1"
                                  :input (list :command command)
                                  :kind (list :kind "shell" :command command))))

(ert-deftest agent-q-gate-test-a-is-for-the-agent ()
  "`a', confirmed with !, approves this command's rule for this session of the agent only."
  (agent-q-gate-test--keys "a x n a ! n n n n" nil
    ;; Without !, nothing is remembered: the prompt comes back, n denies.
    (agent-q-gate-test--request-from 1 "git diff HEAD~1" 'claude "s1")
    (should (eq (car (agent-q-gate-test--answer 1)) 'deny))
    (should-not agent-q-prompt--session-approved)
    (agent-q-gate-test--request-from 2 "git diff HEAD~2" 'claude "s1")
    (should (equal (agent-q-gate-test--answer 2) '(allow nil)))
    ;; The confirmation said what is approved, and for whom.
    (should (string-match-p
             "\\`Approve `git diff \\*` for claude (session s1), unasked, for the rest of this session\\?"
             (car agent-q-test-prompts)))
    (should (= (length agent-q-prompt--session-approved) 1))
    (should (equal (plist-get (car agent-q-prompt--session-approved) :command) '("git diff *")))
    ;; The same command rule in the same session: unasked, and not told as waiting.
    (setq agent-q-test-prompts nil)
    (let ((said nil))
      (cl-letf (((symbol-function 'message)
                 (lambda (format &rest args) (push (apply #'format format args) said))))
        (agent-q-gate-test--request-from 3 "git diff --stat" 'claude "s1"))
      (should (equal (agent-q-gate-test--answer 3) '(allow nil)))
      (should-not (cl-find-if (lambda (m) (string-match-p "waits for your" m)) said)))
    (should-not agent-q-test-prompts)
    ;; Another command, a compound line with an uncovered part, another
    ;; session of Claude, Gemini: each asked (n denies).
    (agent-q-gate-test--request-from 4 "touch x" 'claude "s1")
    (should (eq (car (agent-q-gate-test--answer 4)) 'deny))
    (agent-q-gate-test--request-from 5 "git diff; rm -f precious" 'claude "s1")
    (should (eq (car (agent-q-gate-test--answer 5)) 'deny))
    (agent-q-gate-test--request-from 6 "git diff" 'claude "s2")
    (should (eq (car (agent-q-gate-test--answer 6)) 'deny))
    (agent-q-gate-test--request-from 7 "git diff" 'gemini "s1")
    (should (eq (car (agent-q-gate-test--answer 7)) 'deny))
    (should (= (length agent-q-test-prompts) 4))))

(ert-deftest agent-q-gate-test-prompt-shows-the-call-as-the-agent-put-it ()
  "The prompt shows the agent's description, the command, the folder and the session's short form.
? gives a line of help for each key; v shows every argument; both windows
close when the prompt ends, so that the next call's prompt never shows them."
  (let ((session "3f2a1b9c-1111-2222-3333-444455556666")
        (shown nil))
    (agent-q-gate-test--keys "v ? y C-h n" nil
      (cl-letf* ((real (symbol-function 'agent-q-prompt--read-key))
                 ((symbol-function 'agent-q-prompt--read-key)
                  (lambda (prompt &rest rest)
                    (push (list (and (get-buffer "*agent-q call*")
                                     (get-buffer-window "*agent-q call*" t)
                                     (with-current-buffer "*agent-q call*" (buffer-string)))
                                (and (get-buffer "*agent-q prompt help*")
                                     (get-buffer-window "*agent-q prompt help*" t)
                                     (with-current-buffer "*agent-q prompt help*"
                                       (buffer-string))))
                          shown)
                    (apply real prompt rest))))
        (agent-q-gate-request
         1 (list :agent 'claude :event 'pre-tool :session session :cwd "/tmp/work"
                 :tool "Bash" :tool-use-id "toolu_1"
                 :input (list :command "ls -la" :description "List the files in the work folder")
                 :kind (list :kind "shell" :command "ls -la" :argv nil :dir nil)))
        (should (equal (agent-q-gate-test--answer 1) '(allow nil)))
        (agent-q-gate-request
         2 (list :agent 'claude :event 'pre-tool :session session :cwd "/tmp/work"
                 :tool "Bash" :tool-use-id "toolu_2"
                 :input (list :command "rm -f notes")
                 :kind (list :kind "shell" :command "rm -f notes" :argv nil :dir nil)))
        (should (eq (car (agent-q-gate-test--answer 2)) 'deny)))
      (agent-q-gate-test--check-shown (reverse agent-q-test-prompts) (reverse shown)))))

(defun agent-q-gate-test--check-shown (prompts shown)
  "Check PROMPTS and SHOWN: the prompts, and the windows shown at each.
See `agent-q-gate-test-prompt-shows-the-call-as-the-agent-put-it'."
    (let ((prompts prompts)
          (shown shown))
      (should (= (length prompts) 5))
      (should (string-match-p
               (concat "\\`agent-q: claude (session 3f2a1b9c) wants to run a command \\[dangerous\\]: "
                       "List the files in the work folder: ls -la \\[in /tmp/work\\]  (y)es")
               (nth 0 prompts)))
      (should-not (string-match-p "1111-2222\\|:command\\|own tools" (nth 0 prompts)))
      ;; After v: the whole call, every argument, in its window.
      (should (string-match-p ":command \"ls -la\"" (car (nth 1 shown))))
      (should (string-match-p ":directory \"/tmp/work\"" (car (nth 1 shown))))
      ;; After ?: a line for each key; a's says what it would approve.
      (let ((help (cadr (nth 2 shown))))
        (dolist (re '("^y    approve this call: claude runs it itself$"
                      "^n    deny it" "^r    deny it with a reason" "^e    edit the call"
                      "^v    view the whole call"
                      "^a    approve it, and from now on, unasked, `ls \\*` for claude (session 3f2a1b9c)"
                      "^s    save an approval rule" "^l    later" "^\\?    this help"))
          (should (string-match-p re help))))
      ;; The next call's prompt: neither window is left from the last one; C-h is help too.
      (should (equal (nth 3 shown) '(nil nil)))
      (should (string-match-p "wants to run a command \\[dangerous\\]: rm -f notes \\[in /tmp/work\\]"
                              (nth 3 prompts)))
      (should (cadr (nth 4 shown)))
      (should-not (cl-find-if (lambda (p) (string-match-p "is not an answer" p)) prompts))))

(ert-deftest agent-q-gate-test-a-covers-a-compound-command-whole ()
  "`a' on a compound command grants a rule for each part; one a plain rule cannot cover is approved alone."
  (agent-q-gate-test--keys "a ! a n" nil
    (agent-q-gate-test--request-from 1 "git status && ls -la /tmp" 'claude "s1")
    (should (equal (agent-q-gate-test--answer 1) '(allow nil)))
    (should (equal (plist-get (car agent-q-prompt--session-approved) :command)
                   '("git status" "ls *")))
    (agent-q-gate-test--request-from 2 "ls /etc; git status" 'claude "s1")
    (should (equal (agent-q-gate-test--answer 2) '(allow nil)))
    ;; A substitution: no grant can cover it; a approves this call alone, unconfirmed.
    (agent-q-gate-test--request-from 3 "echo $(cat /etc/passwd)" 'claude "s1")
    (should (equal (agent-q-gate-test--answer 3) '(allow nil)))
    (should (= (length agent-q-prompt--session-approved) 1))
    (agent-q-gate-test--request-from 4 "echo $(cat /etc/passwd)" 'claude "s1")
    (should (eq (car (agent-q-gate-test--answer 4)) 'deny))))

(ert-deftest agent-q-gate-test-a-can-be-taken-back ()
  "What `a' approved is listed by `agent-q-grants' and the pending list, and withdrawn."
  (agent-q-gate-test--keys "a ! n a ! n" nil
    (agent-q-gate-test--request-from 1 "git log -3" 'claude "3f2a1b9c-aaaa-bbbb-cccc-dddddddddddd")
    (should (equal (agent-q-gate-test--answer 1) '(allow nil)))
    ;; The pending list points to it; the grants list shows it.
    (agent-q-pending)
    (with-current-buffer "*agent-q-pending*"
      ;; (format-mode-line draws nothing in batch Emacs: the header's parts.)
      (should (member '(:eval (agent-q--pending-grants-note)) header-line-format))
      (should (string-match-p "1 approved by the prompt's \"a\": press a"
                              (agent-q--pending-grants-note)))
      (should (eq (key-binding "a") #'agent-q-grants)))
    (agent-q-grants)
    (with-current-buffer "*agent-q-grants*"
      (goto-char (point-min))
      (should (search-forward "claude (session 3f2a1b9c)" nil t))
      (should (search-forward "commands made of `git log *`" nil t))
      ;; d withdraws it.
      (beginning-of-line)
      (agent-q-grants-withdraw)
      (should-not agent-q-prompt--session-approved)
      (should-not (search-forward "git log" nil t)))
    (agent-q-gate-test--request-from 2 "git log" 'claude "3f2a1b9c-aaaa-bbbb-cccc-dddddddddddd")
    (should (eq (car (agent-q-gate-test--answer 2)) 'deny))
    ;; Granted again, then forgotten with the session's rules.
    (agent-q-gate-test--request-from 3 "git log" 'claude "3f2a1b9c-aaaa-bbbb-cccc-dddddddddddd")
    (should (equal (agent-q-gate-test--answer 3) '(allow nil)))
    (should agent-q-prompt--session-approved)
    (agent-q-forget-session-rules)
    (should-not agent-q-prompt--session-approved)
    (agent-q-gate-test--request-from 4 "git log" 'claude "3f2a1b9c-aaaa-bbbb-cccc-dddddddddddd")
    (should (eq (car (agent-q-gate-test--answer 4)) 'deny))
    (kill-buffer "*agent-q-grants*")
    (kill-buffer "*agent-q-pending*")))

(ert-deftest agent-q-gate-test-s-saves-a-command-rule ()
  "`s' proposes the command's words as a :command rule for the agent; it decides the call."
  (agent-q-gate-test--keys "s ! a" nil
    (agent-q-gate-test--request-from 1 "git diff HEAD~1 --stat" 'claude "s1")
    (should (equal (agent-q-gate-test--answer 1) '(allow nil)))
    (should (equal (cdar agent-q-gate-test--read) "git diff *"))
    (should (string-match-p "for the command" (caar agent-q-gate-test--read)))
    (should (equal agent-q-rules--session
                   '(("shell_command" (:command "git diff *" :agent "claude") allow))))
    (should-not agent-q-approval-rules)
    ;; Claude's next git diff: unasked, by the rule (the audit names it).
    (agent-q-gate-test--request-from 2 "git diff" 'claude "s2")
    (should (equal (agent-q-gate-test--answer 2) '(allow nil)))
    (let ((record (car (last (agent-q-agents-test--json-lines agent-q-audit-file)))))
      (should (equal (alist-get 'decision record) "rule"))
      (should (string-match-p "git diff \\*" (alist-get 'rule record)))))
  ;; Gemini's is still asked; a compound command's other part stays asked.
  (agent-q-gate-test--keys "n s ! a n" nil
    (setq agent-q-rules--session '(("shell_command" (:command "git diff *" :agent "claude") allow)))
    (agent-q-gate-test--request-from 3 "git diff" 'gemini "s1")
    (should (eq (car (agent-q-gate-test--answer 3)) 'deny))
    (agent-q-gate-test--request-from 4 "git status; rm -f precious" 'claude "s1")
    (should (eq (car (agent-q-gate-test--answer 4)) 'deny))
    ;; The proposal was the first part no rule covers; saved, it did not decide.
    (should (equal (cdar agent-q-gate-test--read) "git status"))
    (should (member '("shell_command" (:command "git status" :agent "claude") allow)
                    agent-q-rules--session))
    (should (string-match-p "`rm -f precious` (after `;`) matches no allow rule"
                            (car agent-q-test-prompts)))))

(ert-deftest agent-q-gate-test-s-keeps-a-rule-for-future-sessions ()
  "`s' with \"keep\" saves the :command rule in `agent-q-approval-rules' with Customize."
  (let* ((custom-file (make-temp-file "agent-q-gate-custom" nil ".el"))
         (user-init-file custom-file))
    (unwind-protect
        (agent-q-gate-test--keys "s ! d" t
          (agent-q-gate-test--request-from 1 "rm -rf build" 'codex "s1")
          (let ((answer (agent-q-gate-test--answer 1)))
            (should (eq (car answer) 'deny))
            (should (string-match-p "rm \\*" (cadr answer))))
          (should (equal agent-q-approval-rules
                         '(("shell_command" (:command "rm *" :agent "codex") deny))))
          (should-not agent-q-rules--session)
          (should (string-match-p (regexp-quote "(:command \"rm *\" :agent \"codex\") deny")
                                  (agent-q-agents-test--read custom-file))))
      (delete-file custom-file)
      (dolist (prop '(saved-value theme-value customized-value))
        (put 'agent-q-approval-rules prop nil)))))

(ert-deftest agent-q-gate-test-s-saves-a-domain-rule ()
  "`s' on a fetch proposes its host as a :domain rule for the agent."
  (agent-q-gate-test--keys "s ! a" nil
    (agent-q-gate-test--fetch 1 "https://Docs.Example.org:8443/a?b")
    (should (equal (agent-q-gate-test--answer 1) '(allow nil)))
    (should (equal (cdar agent-q-gate-test--read) "docs.example.org"))
    (should (equal agent-q-rules--session
                   '(("agent_fetch" (:domain "docs.example.org" :agent "claude") allow))))
    (agent-q-gate-test--fetch 2 "https://docs.example.org/other")
    (should (equal (agent-q-gate-test--answer 2) '(allow nil)))))

(ert-deftest agent-q-gate-test-s-saves-a-path-rule-for-reads ()
  "`s' on a read outside the agent's directory proposes its directory, limited by :agent."
  (let* ((work (file-name-as-directory (make-temp-file "agent-q-gate-work" t)))
         (docs (file-name-as-directory (make-temp-file "agent-q-gate-docs" t)))
         (true-docs (directory-file-name (file-truename docs))))
    (unwind-protect
        (agent-q-gate-test--keys "s ! a" nil
          (agent-q-agents-test--write (expand-file-name "a.txt" docs) "a\n")
          (agent-q-agents-test--write (expand-file-name "b.txt" docs) "b\n")
          (agent-q-gate-test--read 1 work (expand-file-name "a.txt" docs))
          (should (equal (agent-q-gate-test--answer 1) '(allow nil)))
          (should (equal (cdar agent-q-gate-test--read) (abbreviate-file-name true-docs)))
          (should (equal agent-q-rules--session
                         `(("agent_read" (:path ,(abbreviate-file-name true-docs)
                                                :agent "claude")
                            allow))))
          (agent-q-gate-test--read 2 work (expand-file-name "b.txt" docs))
          (should (equal (agent-q-gate-test--answer 2) '(allow nil))))
      (delete-directory work t)
      (delete-directory docs t))))

(ert-deftest agent-q-gate-test-call-agent ()
  "Only a call of the gate's own registry, from an agent's hook, has an agent."
  (agent-q-gate--registry)
  (let* ((tool (agent-q-get-tool "shell_command" agent-q-gate--registry))
         (context (list :tool "shell_command" :tool-id (agent-q-tool-id tool)
                        :origin 'mcp :mcp-client "gemini (own tools)")))
    (should (equal (agent-q-gate-call-agent context) "gemini"))
    ;; Another registration of a tool of that name (an MCP client's tool).
    (should-not (agent-q-gate-call-agent (plist-put (copy-sequence context) :tool-id -1)))
    (should-not (agent-q-gate-call-agent
                 (plist-put (copy-sequence context) :mcp-client "gemini-cli")))))

;;;; The real agents

(defun agent-q-gate-test--claude-approve (tool args)
  "Approve the commands that write approved-, deny the rest; record TOOL and ARGS."
  (push (list tool args agent-q-approval-context) agent-q-gate-test--asked)
  (if (string-match-p "approved-" (or (plist-get args :command) "")) :approved :denied))

(defvar agent-q-gate-test--hook-args)

(defun agent-q-gate-test--hook (agent)
  "The hook command of AGENT, with `agent-q-gate-test--hook-args'."
  (mapconcat #'identity
             (append (list (expand-file-name "bin/agent-q-mcp" agent-q-agents-test--root)
                           "hook" "--agent" (format "%s" agent))
                     agent-q-gate-test--hook-args)
             " "))

(defvar agent-q-gate-test--claude-tools nil
  "Non-nil: the tools Claude Code is started with (--allowedTools).
Under -p it offers its model Grep and Glob only when named so.")

(defvar agent-q-gate-test--codex-policy "never"
  "The approval_policy of Codex's config.toml in the tests.")

(defvar agent-q-gate-test--by-command nil
  "Non-nil: `agent-q-gate-connect-agent' writes the hooks, not the test.")

(defun agent-q-gate-test--connect (agent home)
  "Write AGENT's hook in HOME by `agent-q-gate-connect-agent'."
  (let ((process-environment (cons (concat "HOME=" home) process-environment))
        (abbreviated-home-dir nil))
    (agent-q-gate-connect-agent agent)))

(defun agent-q-gate-test--setup (agent home dir port)
  "Configure AGENT's hook in HOME (DIR for other files), its model on PORT.
Return (TOOL ARGUMENTS . ENVIRONMENT): the name of its shell tool, what
to run it with after its program, and its environment.  With
`agent-q-gate-test--by-command', the connect command writes the hook,
and Gemini's policy, then read from its user policies, not --policy."
  (let ((model (format "http://127.0.0.1:%d" port)))
    (pcase agent
      ('claude
       (if agent-q-gate-test--by-command
           (agent-q-gate-test--connect agent home)
         (agent-q-agents-test--write
          (expand-file-name ".claude/settings.json" home)
          (json-encode
           `((hooks
              (PreToolUse
               . [((matcher . "^(?!mcp__agent-q__)")
                   (hooks . [((type . "command") (command . ,(agent-q-gate-test--hook agent))
                              (timeout . 600)
                              (statusMessage . "Waiting for Emacs (agent-q)..."))]))]))))))
       (list "Bash" (append (list "-p" "Run the commands." "--output-format" "json")
                            (and agent-q-gate-test--claude-tools
                                 (list "--allowedTools" agent-q-gate-test--claude-tools)))
             (concat "ANTHROPIC_BASE_URL=" model) "ANTHROPIC_API_KEY=scripted"
             "DISABLE_TELEMETRY=1" "DISABLE_AUTOUPDATER=1" "DISABLE_ERROR_REPORTING=1"
             "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"))
      ('gemini
       (let ((policy (expand-file-name "gate-policy.toml" dir)))
         ;; Gemini's own policy lets the shell run, so that Emacs is the only prompt.
         (agent-q-agents-test--write
          policy
          (concat "[[rule]]\ntoolName = \"run_shell_command\"\ndecision = \"allow\"\n"
                  "priority = 900\nallowRedirection = true\n"
                  "[[rule]]\ntoolName = \"web_fetch\"\ndecision = \"allow\"\n"
                  "priority = 900\n"
                  "[[rule]]\ntoolName = \"read_file\"\ndecision = \"allow\"\n"
                  "priority = 900\n"
                  ;; Its edits: reviewed in Emacs (agent-q-gate-edit-test).
                  "[[rule]]\ntoolName = \"replace\"\ndecision = \"allow\"\n"
                  "priority = 900\n"
                  "[[rule]]\ntoolName = \"write_file\"\ndecision = \"allow\"\n"
                  "priority = 900\n"))
         (agent-q-agents-test--write
          (expand-file-name ".gemini/settings.json" home)
          (json-encode
           `((security (folderTrust (enabled . :json-false))
                       (auth (selectedType . "gemini-api-key")))
             (general (enableAutoUpdate . :json-false)
                      (enableAutoUpdateNotification . :json-false))
             (privacy (usageStatisticsEnabled . :json-false))
             (telemetry (enabled . :json-false))
             ,@(unless agent-q-gate-test--by-command
                 `((hooks
                    (BeforeTool
                     . [((matcher . "^(?!mcp_agent-q_)")
                         (hooks . [((type . "command")
                                    (command . ,(agent-q-gate-test--hook agent))
                                    ;; Milliseconds.
                                    (timeout . 600000))]))])
                    ;; What Emacs changed of a call reaches Gemini's model only
                    ;; from AfterTool.
                    (AfterTool
                     . [((matcher . "^(run_shell_command|replace|write_file)$")
                         (hooks . [((type . "command")
                                    (command . ,(concat (expand-file-name
                                                         "bin/agent-q-mcp"
                                                         agent-q-agents-test--root)
                                                        " hook --agent gemini --event after-tool"))
                                    (timeout . 10000))]))])))))))
         (when agent-q-gate-test--by-command
           (agent-q-gate-test--connect agent home))
         (list "run_shell_command"
               (append (list "-p" "Run the commands.")
                       (unless agent-q-gate-test--by-command (list "--policy" policy))
                       (list "--output-format" "json"))
               (concat "GOOGLE_GEMINI_BASE_URL=" model) "GEMINI_API_KEY=scripted")))
      ('codex
       (let ((codex-home (expand-file-name ".codex" home)))
         (agent-q-agents-test--write
          (expand-file-name "config.toml" codex-home)
          (replace-regexp-in-string
           "^approval_policy = \"never\"$"
           (format "approval_policy = %S" agent-q-gate-test--codex-policy)
           (agent-q-agents-test--codex-config model) t t))
         ;; Codex's matcher is a Rust regex, without lookahead: its shell tool by name.
         ;; By the command, the hook is also trusted in config.toml: no bypass.
         (if agent-q-gate-test--by-command
             (agent-q-gate-test--connect agent home)
           (agent-q-agents-test--write
            (expand-file-name "hooks.json" codex-home)
            (json-encode
             `((hooks
		(PreToolUse
		 . [((matcher . "^(Bash|apply_patch)$")
                     (hooks . [((type . "command") (command . ,(agent-q-gate-test--hook agent))
				(timeout . 600))]))]))))))
         (list "exec_command"
               ;; Its sandbox would make the work directory read-only.
               (append (list "exec" "--skip-git-repo-check")
                       (unless agent-q-gate-test--by-command
                         (list "--dangerously-bypass-hook-trust"))
                       (list "--sandbox" "workspace-write" "Run the commands."))
               (concat "CODEX_HOME=" codex-home) "AGENT_Q_TEST_MODEL_KEY=scripted"
               "RUST_LOG=error"))))))

(defun agent-q-gate-test--shell-step (agent command)
  "The scripted model's call of AGENT's own shell tool to run COMMAND."
  (pcase agent
    ('claude `((tool . "Bash") (arguments (command . ,command) (description . "A command"))))
    ('gemini `((tool . "run_shell_command")
               (arguments (command . ,command) (description . "A command"))))
    ('codex `((tool . "exec_command") (arguments (cmd . ,command))))))

(defun agent-q-gate-test--run (agent home dir work model steps)
  "Run AGENT in WORK with HOME, DIR and MODEL until it exits.
Its hooks and arguments are those of `agent-q-gate-test--setup'.  Fail
unless it exits 0 after STEPS requests of the scripted model; return
\(REQUESTS . WHY): the model's step requests, and a text saying what
happened, for the test's messages."
  (let* ((output (generate-new-buffer " *agent-q-gate-agent*"))
         (process (agent-q-gate-test--start agent home dir work model output)))
    (unwind-protect
        (progn
          (agent-q-agents-test--wait (lambda () (not (process-live-p process)))
                                     agent-q-agents-test--timeout
                                     (format "%s to finish" agent))
          (while (accept-process-output process 0.01))
          (let* ((requests (cl-remove-if-not
                            (lambda (r) (equal (alist-get 'kind r) "step"))
                            (agent-q-agents-test--json-lines (nth 2 model))))
                 (why (format "%s exited %s:\n%s\nresults: %S\nasked: %S"
                              agent (process-exit-status process)
                              (with-current-buffer output (buffer-string))
                              (mapcar (lambda (r) (alist-get 'results r)) requests)
                              (mapcar #'cadr agent-q-gate-test--asked))))
            (unless (and (= (process-exit-status process) 0) (= (length requests) steps))
              (ert-fail why))
            (cons requests why)))
      (when (process-live-p process)
        (delete-process process))
      (kill-buffer output))))

(defun agent-q-gate-test--agent (agent)
  "AGENT's own shell tool, through its hook, decided in Emacs.
Approved → it runs and its output reaches the model; denied → it does
not run and the model is told why; an allow rule runs git status
unasked, while git status; touch x is asked (and denied here)."
  (let* ((dir (file-name-as-directory (make-temp-file "agent-q-gate-agent" t)))
         (home (expand-file-name "home/" dir))
         (work (expand-file-name "work/" dir))
         (agent-q-mcp-connection-file (expand-file-name "connection.json" dir))
         (agent-q-audit-file (expand-file-name "audit.jsonl" dir))
         (agent-q-approval-function #'agent-q-gate-test--claude-approve)
         (agent-q-approval-rules `(("shell_command" (:command "git status"
                                                     :agent ,(symbol-name agent))
                                    allow)))
         (agent-q-gate-test--asked nil)
         (agent-q-prompt--session-approved nil)
         (agent-q-mcp-port 0)
         (marker (format "approved-%d" (random 1000000)))
         (approved-command (format "echo %s > out.txt && cat out.txt" marker))
         model)
    (unwind-protect
        (progn
          (make-directory (expand-file-name "tmp" home) t)
          (make-directory work t)
          (let ((default-directory work))
            (should (eq 0 (call-process "git" nil nil nil "init" "-q"))))
          (agent-q-gate-mode 1)
          (agent-q-mcp-start)
          (setq model (agent-q-agents-test--start-model
                       dir (agent-q-agents-test--prop agent :dialect)
                       (append (mapcar (lambda (command)
                                         (agent-q-gate-test--shell-step agent command))
                                       (list approved-command "touch denied.txt" "git status"
                                             "git status; touch x"))
                               '(((text . "Done."))))))
          (pcase-let ((`(,steps . ,why) (agent-q-gate-test--run agent home dir work model 5)))
            (let* ((results (alist-get 'results (nth 4 steps)))
                   (approved (nth 0 results))
                   (denied (nth 1 results))
                   (status (nth 2 results))
                   (compound (nth 3 results)))
              (ert-info (why)
                ;; Approved: it ran, and its output reached the model.
                (should (equal (agent-q-agents-test--read (expand-file-name "out.txt" work))
                               (concat marker "\n")))
                (should (string-match-p (regexp-quote marker) (alist-get 'text approved)))
                (should-not (eq (alist-get 'error approved) t))
                ;; Denied: it did not run, and the model was told why.
                (should-not (file-exists-p (expand-file-name "denied.txt" work)))
                ;; Codex tells its model no error flag; the others do.
                (unless (eq agent 'codex)
                  (should (eq (alist-get 'error denied) t))
                  (should (eq (alist-get 'error compound) t)))
                (should (string-match-p "denied" (alist-get 'text denied)))
                ;; The allow rule: git status ran, unasked.
                (should (string-match-p "branch\\|No commits" (alist-get 'text status)))
                ;; The compound command was asked, and denied: nothing of it ran.
                (should-not (file-exists-p (expand-file-name "x" work)))
                (should (equal (reverse (mapcar (lambda (a) (plist-get (nth 1 a) :command))
                                                agent-q-gate-test--asked))
                               (list approved-command "touch denied.txt"
                                     "git status; touch x")))
                (should (string-match-p "`touch x` (after `;`) matches no allow rule"
                                        (plist-get (nth 2 (car agent-q-gate-test--asked))
                                                   :rule)))
                ;; The audit names the agent, its session, and how each was decided.
                (let ((outcomes (cl-remove-if-not
                                 (lambda (r) (member (alist-get 'event r) '("result" "denied")))
                                 (agent-q-agents-test--json-lines agent-q-audit-file))))
                  (should (equal (mapcar (lambda (r) (list (alist-get 'tool r)
                                                           (alist-get 'event r)
                                                           (alist-get 'decision r)))
                                         outcomes)
                                 '(("shell_command" "result" "approved")
                                   ("shell_command" "denied" "denied")
                                   ("shell_command" "result" "rule")
                                   ("shell_command" "denied" "denied"))))
                  (dolist (record outcomes)
                    (should (string-match-p (format "\\`%s (own tools) [-0-9a-f]+" agent)
                                            (alist-get 'client record)))))))))
      (agent-q-gate-test--clean-up model dir))))

(defun agent-q-gate-test--read-fetch (agent)
  "Run AGENT under -p; its own file and URL tools go through its hook to Emacs.
A file in its directory is read unasked; .env is asked (denied here)
and the model is told; a fetch a :domain deny rule covers is denied
unasked, so it never reaches the network."
  (let* ((dir (file-name-as-directory (make-temp-file "agent-q-gate-agent" t)))
         (home (expand-file-name "home/" dir))
         (work (expand-file-name "work/" dir))
         (agent-q-mcp-connection-file (expand-file-name "connection.json" dir))
         (agent-q-audit-file (expand-file-name "audit.jsonl" dir))
         (agent-q-approval-function #'agent-q-gate-test--deny-all)
         (agent-q-approval-rules '(("agent_fetch" (:domain "*.blocked.example") deny)))
         (agent-q-gate-test--asked nil)
         (agent-q-prompt--session-approved nil)
         (agent-q-mcp-port 0)
         (marker (format "readable-%d" (random 1000000)))
         model)
    (unwind-protect
        (progn
          (make-directory (expand-file-name "tmp" home) t)
          (agent-q-agents-test--write (expand-file-name "notes.txt" work) (concat marker "\n"))
          (agent-q-agents-test--write (expand-file-name ".env" work) "SECRET_TOKEN=hunter2\n")
          (agent-q-gate-mode 1)
          (agent-q-mcp-start)
          (setq model (agent-q-agents-test--start-model
                       dir (agent-q-agents-test--prop agent :dialect)
                       (let ((read (if (eq agent 'claude) "Read" "read_file")))
                         `(((tool . ,read)
                            (arguments (file_path . ,(expand-file-name "notes.txt" work))))
                           ((tool . ,read)
                            (arguments (file_path . ,(expand-file-name ".env" work))))
                           ,(if (eq agent 'claude)
                                '((tool . "WebFetch")
                                  (arguments (url . "https://www.blocked.example/page")
                                             (prompt . "Summarize")))
                              '((tool . "web_fetch")
                                (arguments
                                 (prompt . "Summarize https://www.blocked.example/page"))))
                           ((text . "Done."))))))
          (pcase-let ((`(,steps . ,why) (agent-q-gate-test--run agent home dir work model 4)))
            (let* ((results (alist-get 'results (nth 3 steps)))
                   (read (nth 0 results))
                   (env (nth 1 results))
                   (fetch (nth 2 results)))
              (ert-info (why)
                ;; The file in its directory: read, unasked.
                (should (string-match-p (regexp-quote marker) (alist-get 'text read)))
                ;; .env: asked, denied; the model is told why, and not the secret.
                ;; Gemini CLI refuses it itself, before its hook ("Path not in
                ;; workspace"): Emacs is not asked.
                (should (eq (alist-get 'error env) t))
                (should (string-match-p (if (eq agent 'gemini) "not in workspace" "denied")
                                        (alist-get 'text env)))
                (should-not (string-match-p "hunter2" (alist-get 'text env)))
                ;; The fetch: denied by the rule, unasked.
                (should (eq (alist-get 'error fetch) t))
                (should (string-match-p "deny rule" (alist-get 'text fetch)))
                (should (equal (mapcar (lambda (a) (list (nth 0 a) (nth 1 a)))
                                       agent-q-gate-test--asked)
                               (and (eq agent 'claude)
                                    `(("agent_read"
                                       (:path ,(expand-file-name ".env" work)))))))
                (should (equal (mapcar (lambda (r) (list (alist-get 'tool r)
                                                         (alist-get 'decision r)))
                                       (cl-remove-if-not
                                        (lambda (r) (member (alist-get 'event r)
                                                            '("result" "denied")))
                                        (agent-q-agents-test--json-lines agent-q-audit-file)))
                               (if (eq agent 'claude)
                                   '(("agent_read" "auto") ("agent_read" "denied")
                                     ("agent_fetch" "rule"))
                                 '(("agent_read" "auto") ("agent_fetch" "rule")))))))))
      (agent-q-gate-test--clean-up model dir))))

(ert-deftest agent-q-gate-test-claude-read-fetch ()
  "Claude Code's own Read and WebFetch.  See `agent-q-gate-test--read-fetch'."
  (agent-q-gate-test--read-fetch 'claude))

(ert-deftest agent-q-gate-test-gemini-read-fetch ()
  "Gemini CLI's own read_file and web_fetch.  See `agent-q-gate-test--read-fetch'.
Its policy allows them, so that Emacs is the only prompt."
  (agent-q-gate-test--read-fetch 'gemini))

(defun agent-q-gate-test--search (agent)
  "Run AGENT under -p; its own searches go through its hook to Emacs.
A plain search (no glob) of a folder of ordinary files runs unasked:
agent-q walks the folder and finds nothing sensitive.  One that can
reach a sensitive file is asked (denied here), and the model gets no
secret: the same plain search of the folder that holds a .env (the
walk finds it); for Claude, a Grep at ~/.authinfo (outside its
directory) and a Glob *.env*; for Gemini (which refuses paths outside
its workspace itself), a grep_search with include_pattern .env.  The
hooks and Gemini's policy are the connect command's."
  (let* ((dir (file-name-as-directory (make-temp-file "agent-q-gate-agent" t)))
         (home (expand-file-name "home/" dir))
         (work (expand-file-name "work/" dir))
         (agent-q-mcp-connection-file (expand-file-name "connection.json" dir))
         (agent-q-audit-file (expand-file-name "audit.jsonl" dir))
         (agent-q-approval-function #'agent-q-gate-test--deny-all)
         (agent-q-approval-rules nil)
         (agent-q-gate-test--asked nil)
         (agent-q-gate-test--by-command t)
         (agent-q-gate-test--claude-tools "Grep Glob")
         (agent-q-prompt--session-approved nil)
         (agent-q-mcp-port 0)
         (marker (format "findable-%d" (random 1000000)))
         (authinfo (expand-file-name ".authinfo" home))
         model)
    (unwind-protect
        (progn
          (make-directory (expand-file-name "tmp" home) t)
          (agent-q-agents-test--write (expand-file-name "src/notes.txt" work) (concat marker "\n"))
          (agent-q-agents-test--write (expand-file-name "src/deep/main.py" work) "SECRET = None\n")
          (agent-q-agents-test--write (expand-file-name "conf/deep/.env" work)
                                      "SECRET_TOKEN=hunter2\n")
          (agent-q-agents-test--write
           authinfo "machine example.com login me password SECRET_hunter3\n")
          (agent-q-gate-mode 1)
          (agent-q-mcp-start)
          (setq model (agent-q-agents-test--start-model
                       dir (agent-q-agents-test--prop agent :dialect)
                       (if (eq agent 'claude)
                           `(((tool . "Grep")
                              (arguments (pattern . "findable") (path . ,(expand-file-name "src" work))
                                         (output_mode . "content")))
                             ((tool . "Grep")
                              (arguments (pattern . "SECRET") (path . ,authinfo)
                                         (output_mode . "content")))
                             ((tool . "Glob") (arguments (pattern . "*.env*")))
                             ((tool . "Grep")
                              (arguments (pattern . "SECRET") (path . ,(directory-file-name work))
                                         (output_mode . "content")))
                             ((text . "Done.")))
                         `(((tool . "grep_search")
                            (arguments (pattern . "findable") (dir_path . "src")))
                           ((tool . "grep_search")
                            (arguments (pattern . "SECRET") (include_pattern . ".env")))
                           ((tool . "grep_search") (arguments (pattern . "SECRET")))
                           ((text . "Done."))))))
          (pcase-let* ((claude (eq agent 'claude))
                       (`(,steps . ,why)
                        (agent-q-gate-test--run agent home dir work model (if claude 5 4))))
            (let* ((results (alist-get 'results (car (last steps))))
                   (ordinary (nth 0 results))
                   (secret (nth 1 results))
                   (plain (car (last results)))
                   (asked (reverse agent-q-gate-test--asked)))
              (ert-info (why)
                ;; The plain search of ordinary files: walked, run unasked, its
                ;; match reaches the model.
                (should (string-match-p (regexp-quote marker) (alist-get 'text ordinary)))
                ;; The sensitive ones: asked, denied; the model is told, without the secret.
                (should (string-match-p "denied" (alist-get 'text secret)))
                (should (string-match-p "denied" (alist-get 'text plain)))
                (dolist (result results)
                  (should-not (string-match-p "hunter[23]" (alist-get 'text result))))
                (when claude
                  (should (string-match-p "denied" (alist-get 'text (nth 2 results))))
                  (should-not (string-match-p "\\.env" (alist-get 'text (nth 2 results)))))
                (should (equal (mapcar (lambda (a) (list (nth 0 a) (plist-get (nth 1 a) :path)))
                                       asked)
                               (append
                                (list (list "agent_search" (if claude authinfo
                                                             (directory-file-name work))))
                                (and claude
                                     (list (list "agent_search" (directory-file-name work))))
                                (list (list "agent_search" (directory-file-name work))))))
                ;; The plain search of the folder with the .env: asked because the
                ;; walk found it, saying so.
                (should (string-match-p "can reach conf/deep/\\.env"
                                        (plist-get (nth 2 (car (last asked))) :reason)))
                (should (equal (mapcar (lambda (r) (list (alist-get 'tool r)
                                                         (alist-get 'decision r)))
                                       (cl-remove-if-not
                                        (lambda (r) (member (alist-get 'event r)
                                                            '("result" "denied")))
                                        (agent-q-agents-test--json-lines agent-q-audit-file)))
                               (append '(("agent_search" "auto") ("agent_search" "denied"))
                                       (and claude '(("agent_search" "denied")))
                                       '(("agent_search" "denied")))))))))
      (agent-q-gate-test--clean-up model dir))))

(ert-deftest agent-q-gate-test-claude-search ()
  "Claude Code's own Grep and Glob.  See `agent-q-gate-test--search'."
  (agent-q-gate-test--search 'claude))

(ert-deftest agent-q-gate-test-gemini-search ()
  "Gemini CLI's own grep_search.  See `agent-q-gate-test--search'.
The connect command's policy allows it, so that Emacs is the only prompt."
  (agent-q-gate-test--search 'gemini))

(defun agent-q-gate-test--edit-command (tool args)
  "Record TOOL and ARGS; answer as `e' does, the command replaced by one that writes edited."
  (push (list tool args agent-q-approval-context) agent-q-gate-test--asked)
  (list :modified (plist-put (copy-sequence args) :command "echo ran-edited > edited.txt")))

(defun agent-q-gate-test--edited-command (agent)
  "AGENT's own shell command edited at the prompt: the edited command runs.
The agent's own result says only what the edited command printed; the
hook's additional context tells its model the command that ran."
  (let* ((dir (file-name-as-directory (make-temp-file "agent-q-gate-agent" t)))
         (home (expand-file-name "home/" dir))
         (work (expand-file-name "work/" dir))
         (agent-q-mcp-connection-file (expand-file-name "connection.json" dir))
         (agent-q-audit-file (expand-file-name "audit.jsonl" dir))
         (agent-q-approval-function #'agent-q-gate-test--edit-command)
         (agent-q-approval-rules nil)
         (agent-q-gate-test--asked nil)
         (agent-q-gate-test--by-command t)
         (agent-q-prompt--session-approved nil)
         (agent-q-mcp-port 0)
         model)
    (unwind-protect
        (progn
          (make-directory (expand-file-name "tmp" home) t)
          (make-directory work t)
          (agent-q-gate-mode 1)
          (agent-q-mcp-start)
          (setq model (agent-q-agents-test--start-model
                       dir (agent-q-agents-test--prop agent :dialect)
                       (list (agent-q-gate-test--shell-step agent "touch original.txt")
                             '((text . "Done.")))))
          (pcase-let ((`(,steps . ,why) (agent-q-gate-test--run agent home dir work model 2)))
            (ert-info (why)
              (should (file-exists-p (expand-file-name "edited.txt" work)))
              (should-not (file-exists-p (expand-file-name "original.txt" work)))
              (let ((body (json-encode (alist-get 'body (nth 1 steps)))))
                (should (string-match-p
                         (regexp-quote
                          (format "What ran is:\\necho ran-edited %s edited.txt\\nnot the command you wrote:\\ntouch original.txt"
                                  ;; Gemini escapes < and > in a hook's context.
                                  (if (eq agent 'gemini) "&gt;" ">")))
                         body))
                (when (eq agent 'gemini)
                  (should (string-match-p "<hook_context>The user edited this command" body)))))))
      (agent-q-gate-test--clean-up model dir))))

(ert-deftest agent-q-gate-test-claude-edited-command ()
  "Claude Code's Bash edited at the prompt.  See `agent-q-gate-test--edited-command'."
  (agent-q-gate-test--edited-command 'claude))

(ert-deftest agent-q-gate-test-gemini-edited-command ()
  "Gemini CLI's run_shell_command edited at the prompt.
Gemini passes additional context to its model only from its AfterTool
hook, which the connect command writes.  See
`agent-q-gate-test--edited-command'."
  (agent-q-gate-test--edited-command 'gemini))

(ert-deftest agent-q-gate-test-codex-edited-command ()
  "Codex CLI's shell edited at the prompt.  See `agent-q-gate-test--edited-command'."
  (agent-q-gate-test--edited-command 'codex))

(ert-deftest agent-q-gate-test-claude ()
  "Claude Code's own Bash under -p, through its PreToolUse hook, decided in Emacs.
See `agent-q-gate-test--agent'."
  (agent-q-gate-test--agent 'claude))

(ert-deftest agent-q-gate-test-gemini ()
  "Gemini CLI's own run_shell_command under -p, through its BeforeTool hook.
Its policy allows the shell (with redirections), so that Emacs is the
only prompt.  See `agent-q-gate-test--agent'."
  (agent-q-gate-test--agent 'gemini))

(ert-deftest agent-q-gate-test-claude-connected ()
  "Claude Code with its hook written by `agent-q-gate-connect-agent': Bash decided in Emacs."
  (let ((agent-q-gate-test--by-command t))
    (agent-q-gate-test--agent 'claude)))

(ert-deftest agent-q-gate-test-gemini-connected ()
  "Gemini CLI with its hook and policy written by `agent-q-gate-connect-agent'.
Started without --policy: its user policies (~/.gemini/policies) let
the shell run once Emacs approved."
  (let ((agent-q-gate-test--by-command t))
    (agent-q-gate-test--agent 'gemini)))

(ert-deftest agent-q-gate-test-codex-connected ()
  "Codex CLI, its hook and the hook's trust written by the connect command.
Started without --dangerously-bypass-hook-trust: the trusted_hash the
command wrote in config.toml is what lets the hook run."
  (let ((agent-q-gate-test--by-command t))
    (agent-q-gate-test--agent 'codex)))

(ert-deftest agent-q-gate-test-codex ()
  "Codex CLI's own shell (exec_command, Bash to its hooks) through PreToolUse.
Its PreToolUse cannot allow: an approval in Emacs leaves the call to
Codex's own flow, which under approval_policy = never runs it.  See
`agent-q-gate-test--agent'."
  (agent-q-gate-test--agent 'codex))

;;;; The real agents, when Emacs is away or the agent goes away

(defvar agent-q-gate-test--hook-args nil
  "Further arguments of the hook command the tests write, such as --unreachable deny.")

(defun agent-q-gate-test--clean-up (model dir)
  "End a real agent's run in DIR, then delete DIR.
Stop MODEL (the scripted model, (PROCESS ...)), the server and the
gate, and cancel what waits."
  (when (and model (process-live-p (car model)))
    (delete-process (car model)))
  (when model
    (kill-buffer (process-buffer (car model))))
  (agent-q-mcp-stop)
  (agent-q-gate-mode -1)
  (agent-q-cancel-pending)
  (delete-directory dir t))

(defmacro agent-q-gate-test--with-agent-dirs (&rest body)
  "Run BODY with DIR, HOME, WORK and the MCP files of a run of an agent; clean up."
  (declare (indent 0))
  `(let* ((dir (file-name-as-directory (make-temp-file "agent-q-gate-agent" t)))
          (home (expand-file-name "home/" dir))
          (work (expand-file-name "work/" dir))
          (agent-q-mcp-connection-file (expand-file-name "connection.json" dir))
          (agent-q-audit-file (expand-file-name "audit.jsonl" dir))
          (agent-q-gate-test--asked nil)
          (agent-q-approval-rules nil)
          (agent-q-prompt--session-approved nil)
          (agent-q-mcp-port 0)
          (model nil))
     (unwind-protect
         (progn
           (make-directory (expand-file-name "tmp" home) t)
           (make-directory work t)
           ,@body)
       (agent-q-gate-test--clean-up model dir))))

(defun agent-q-gate-test--unreachable (agent how)
  "AGENT's own shell tool while the Emacs its hook names cannot be asked.
HOW is `stopped' (the MCP server was stopped: its connection file
gone) or `stale' (the file left behind, nothing listening at its
port).  The hook answers the agent's own flow: Claude Code's -p
refuses what it would ask about; Gemini CLI's -p waits for a
confirmation it cannot show (see `agent-q-gate-test--gemini-waits');
Codex, which the hook cannot make ask, is refused it, since its
approval_policy (never) would run it unasked.  With --unreachable
deny, the hook refuses it for all three, saying why."
  (dolist (unreachable '(ask deny))
    (agent-q-gate-test--with-agent-dirs
      (let* ((marker (format "unasked-%s-%d" unreachable (random 1000000)))
             (agent-q-gate-test--hook-args
              (and (eq unreachable 'deny) '("--unreachable" "deny")))
             (agent-q-approval-function #'agent-q-gate-test--claude-approve))
        (agent-q-gate-mode 1)
        (agent-q-mcp-start)
        (let ((connection (agent-q-agents-test--read agent-q-mcp-connection-file)))
          (agent-q-mcp-stop)
          (should-not (file-exists-p agent-q-mcp-connection-file))
          (when (eq how 'stale)
            (agent-q-agents-test--write agent-q-mcp-connection-file connection)))
        (setq model (agent-q-agents-test--start-model
                     dir (agent-q-agents-test--prop agent :dialect)
                     (list (agent-q-gate-test--shell-step agent (concat "touch " marker))
                           '((text . "Done.")))))
        (if (and (eq agent 'gemini) (eq unreachable 'ask))
            (agent-q-gate-test--gemini-waits dir home work model marker)
          (agent-q-gate-test--unreachable-run agent unreachable dir home work model marker))))))

(defun agent-q-gate-test--gemini-waits (dir home work model marker)
  "Gemini CLI -p, its hook answering ask: it waits for a confirmation it cannot show.
Nothing runs (MARKER is not made in WORK); the run never ends by
itself, so it is killed.  DIR, HOME and MODEL are the run's."
  (let* ((output (generate-new-buffer " *agent-q-gate-agent*"))
         (process (agent-q-gate-test--start 'gemini home dir work model output)))
    (unwind-protect
        (progn
          ;; The model asked for the command...
          (agent-q-agents-test--wait
           (lambda () (and (file-exists-p (nth 2 model))
                           (cl-some (lambda (r) (equal (alist-get 'kind r) "step"))
                                    (agent-q-agents-test--json-lines (nth 2 model)))))
           agent-q-agents-test--timeout "Gemini's request to its model")
          ;; ...and ten seconds on, Gemini still waits, nothing ran, nothing asked again.
          (sleep-for 10)
          (should (process-live-p process))
          (should-not (file-exists-p (expand-file-name marker work)))
          (should (= 1 (cl-count "step" (agent-q-agents-test--json-lines (nth 2 model))
                                 :key (lambda (r) (alist-get 'kind r)) :test #'equal)))
          (should-not agent-q-gate-test--asked))
      (agent-q-gate-test--kill-agent (process-id process))
      (kill-buffer output))))

(defun agent-q-gate-test--unreachable-run (agent unreachable dir home work model marker)
  "Run AGENT to its end with its hook's UNREACHABLE answer; check MARKER in WORK.
DIR, HOME and MODEL are the run's."
  (pcase-let* ((`(,steps . ,why) (agent-q-gate-test--run agent home dir work model 2))
               (result (car (alist-get 'results (nth 1 steps))))
               (ran (file-exists-p (expand-file-name marker work))))
    (ert-info (why)
      ;; Emacs was never asked, nor audited anything.
      (should-not agent-q-gate-test--asked)
      (should-not (file-exists-p agent-q-audit-file))
      ;; Nothing ran: Codex too, whose approval_policy "never" would have run it unasked.
      (should-not ran)
      (unless (eq agent 'codex)
        (should (eq (alist-get 'error result) t)))
      (when (or (eq unreachable 'deny) (eq agent 'codex))
        (should (string-match-p "agent-q could not ask Emacs" (alist-get 'text result))))
      (when (and (eq agent 'codex) (eq unreachable 'ask))
        ;; Why, and what to do.
        (should (string-match-p "approval policy is never" (alist-get 'text result)))
        (should (string-match-p "agent-q-gate-disconnect-agent" (alist-get 'text result)))))))

(ert-deftest agent-q-gate-test-claude-unreachable ()
  "Claude Code -p with Emacs's server stopped: ask, which -p refuses; nothing runs."
  (agent-q-gate-test--unreachable 'claude 'stopped))

(ert-deftest agent-q-gate-test-gemini-unreachable ()
  "Gemini CLI with a stale connection file: ask makes -p wait; deny refuses.
See `agent-q-gate-test--gemini-waits'."
  (agent-q-gate-test--unreachable 'gemini 'stale))

(ert-deftest agent-q-gate-test-codex-unreachable ()
  "Codex CLI with Emacs's server stopped: approval_policy never, so denied, either way."
  (agent-q-gate-test--unreachable 'codex 'stopped))

(ert-deftest agent-q-gate-test-codex-on-request-unreachable ()
  "Codex CLI, approval_policy on-request, with Emacs's server stopped: denied.
`codex exec' runs with the policy never whatever its config says, and
tells the hook so (permission_mode bypassPermissions)."
  (let ((agent-q-gate-test--codex-policy "on-request"))
    (agent-q-gate-test--unreachable 'codex 'stopped)))

(defun agent-q-gate-test--start (agent home dir work model output)
  "Start AGENT in WORK (HOME, DIR, MODEL as `agent-q-gate-test--run'), into OUTPUT.
Return its process, its input closed."
  (let* ((setup (agent-q-gate-test--setup agent home dir (nth 1 model)))
         (default-directory work)
         (process-environment
          (agent-q-agents-test--environment
           home (cons (concat "AGENT_Q_MCP_CONNECTION_FILE=" agent-q-mcp-connection-file)
                      (nthcdr 2 setup))))
         (process (make-process :name "agent-q-gate-agent" :noquery t
                                :buffer output :connection-type 'pipe
                                :command (cons (agent-q-agents-test--program agent)
                                               (nth 1 setup)))))
    (process-send-eof process)
    process))

(defun agent-q-gate-test--kill-agent (pid)
  "Kill the process PID and its descendants, all but the agent-q hooks among them.
As when an agent crashes or is killed: Claude Code, Gemini CLI and
Codex CLI each run as a launcher and the agent proper, and the hook,
its child, is left behind, waiting for Emacs's answer."
  (let* ((all (mapcar (lambda (p) (cons p (process-attributes p))) (list-system-processes)))
         (tree (list pid))
         (grew t))
    (while grew
      (setq grew nil)
      (dolist (p all)
        (when (and (memq (alist-get 'ppid (cdr p)) tree) (not (memq (car p) tree)))
          (push (car p) tree)
          (setq grew t))))
    (dolist (p tree)
      (unless (string-match-p "agent-q-mcp hook"
                              (or (alist-get 'args (cdr (assq p all))) ""))
        (signal-process p 'KILL)))))

(defun agent-q-gate-test--wait-pending (n)
  "Wait until N calls are pending in Emacs."
  (agent-q-agents-test--wait (lambda () (= (length agent-q--pending) n)) 60
                             (format "%d calls pending" n)))

(defun agent-q-gate-test--later (tool args)
  "Record TOOL and ARGS; leave the call pending, as a user who has not answered yet."
  (push (list tool args agent-q-approval-context) agent-q-gate-test--asked)
  :later)

(defun agent-q-gate-test--killed (agent)
  "AGENT killed while its own shell call waits in Emacs: the call is withdrawn.
It leaves `agent-q--pending', the audit says the agent withdrew it, and
a late answer harms nothing: the command never runs."
  (agent-q-gate-test--with-agent-dirs
    (let* ((marker (format "late-%d" (random 1000000)))
           (agent-q-approval-function #'agent-q-gate-test--later)
           (output (generate-new-buffer " *agent-q-gate-agent*"))
           (process nil)
           key)
      (unwind-protect
          (progn
            (agent-q-gate-mode 1)
            (agent-q-mcp-start)
            (setq model (agent-q-agents-test--start-model
                         dir (agent-q-agents-test--prop agent :dialect)
                         (list (agent-q-gate-test--shell-step agent (concat "touch " marker))
                               '((text . "Done.")))))
            (setq process (agent-q-gate-test--start agent home dir work model output))
            (agent-q-agents-test--wait (lambda () agent-q--pending) agent-q-agents-test--timeout
                                       (format "%s's call to wait in Emacs" agent))
            (setq key (car (hash-table-keys agent-q-gate--requests)))
            (should key)
            ;; The agent is killed, hard, while the call waits; its hook is left.
            (agent-q-gate-test--kill-agent (process-id process))
            (agent-q-agents-test--wait (lambda () (not agent-q--pending)) 30
                                       "the call's withdrawal")
            (should-not (gethash key agent-q-gate--requests))
            (let ((record (car (last (agent-q-agents-test--json-lines agent-q-audit-file)))))
              (should (equal (alist-get 'event record) "cancelled"))
              (should (equal (alist-get 'tool record) "shell_command"))
              (should (string-match-p "the agent withdrew the call" (alist-get 'content record)))
              (should (string-match-p (format "\\`%s (own tools)" agent)
                                      (alist-get 'client record))))
            ;; A late answer: nothing to answer, no error, nothing runs.
            (should-not (agent-q-gate--answer key 'allow))
            (should-not (agent-q--core-mcp-gate-answer key 'allow nil))
            (sleep-for 0.5)
            (should-not (file-exists-p (expand-file-name marker work)))
            (should (= 1 (length agent-q-gate-test--asked))))
        (when (and process (process-live-p process))
          (delete-process process))
        (kill-buffer output)))))

(ert-deftest agent-q-gate-test-claude-killed ()
  "Claude Code killed while its Bash call waits in Emacs.  See `agent-q-gate-test--killed'."
  (agent-q-gate-test--killed 'claude))

(ert-deftest agent-q-gate-test-gemini-killed ()
  "Gemini CLI killed while its shell call waits in Emacs.  See `agent-q-gate-test--killed'."
  (agent-q-gate-test--killed 'gemini))

(ert-deftest agent-q-gate-test-codex-killed ()
  "Codex CLI killed while its shell call waits in Emacs.  See `agent-q-gate-test--killed'."
  (agent-q-gate-test--killed 'codex))

(defun agent-q-gate-test--timed-out (agent)
  "AGENT's call left unanswered in Emacs until its hook timeout runs out.
The hook, told the timeout (--timeout), ends the wait just before the
agent would: the call leaves `agent-q--pending', Emacs says so, the
audit records a timeout of the agent's hook (not a withdrawal), the
model is told it was denied and why, and nothing runs."
  (agent-q-gate-test--with-agent-dirs
    (let* ((marker (format "late-%d" (random 1000000)))
           (agent-q-gate-test--hook-args '("--timeout" "6"))
           (agent-q-approval-function #'agent-q-gate-test--later)
           (told nil)
           key)
      (cl-letf (((symbol-function 'agent-q-gate--notify) (lambda (text) (push text told))))
        (agent-q-gate-mode 1)
        (agent-q-mcp-start)
        (setq model (agent-q-agents-test--start-model
                     dir (agent-q-agents-test--prop agent :dialect)
                     (list (agent-q-gate-test--shell-step agent (concat "touch " marker))
                           '((text . "Done.")))))
        (let* ((output (generate-new-buffer " *agent-q-gate-agent*"))
               (process (agent-q-gate-test--start agent home dir work model output)))
          (unwind-protect
              (progn
                (agent-q-agents-test--wait (lambda () agent-q--pending) agent-q-agents-test--timeout
                                           (format "%s's call to wait in Emacs" agent))
                (setq key (car (hash-table-keys agent-q-gate--requests)))
                ;; The prompt would count down: the agent waits at most 6 s.
                (let ((agent-q--asking (car agent-q--pending)))
                  (should (<= 0 (- (agent-q-gate--deadline) (float-time)) 6)))
                (agent-q-agents-test--wait (lambda () (not agent-q--pending)) 60
                                           "the call's timeout")
                (agent-q-agents-test--wait (lambda () (not (process-live-p process)))
                                           agent-q-agents-test--timeout
                                           (format "%s to finish" agent))
                (should-not (gethash key agent-q-gate--requests))
                (let ((record (car (last (agent-q-agents-test--json-lines agent-q-audit-file)))))
                  (should (equal (alist-get 'event record) "timed-out"))
                  (should (equal (alist-get 'decision record) "timeout"))
                  (should (string-match-p "within 5 s, before the agent's hook timeout"
                                          (alist-get 'content record))))
                (should (string-match-p "within 5 s, before the agent's hook timeout" (car told)))
                (let* ((steps (cl-remove-if-not
                               (lambda (r) (equal (alist-get 'kind r) "step"))
                               (agent-q-agents-test--json-lines (nth 2 model))))
                       (result (car (alist-get 'results (nth 1 steps)))))
                  (should (string-match-p "hook timeout" (alist-get 'text result))))
                (should-not (file-exists-p (expand-file-name marker work))))
            (when (process-live-p process)
              (delete-process process))
            (kill-buffer output)))))))

(ert-deftest agent-q-gate-test-claude-timed-out ()
  "Claude Code's call unanswered past its hook timeout.  See `agent-q-gate-test--timed-out'."
  (agent-q-gate-test--timed-out 'claude))

(ert-deftest agent-q-gate-test-codex-timed-out ()
  "Codex CLI's call unanswered past its hook timeout.  See `agent-q-gate-test--timed-out'."
  (agent-q-gate-test--timed-out 'codex))

(ert-deftest agent-q-gate-test-prompt-shows-time-left ()
  "The prompt of a call with a deadline says how long the agent still waits."
  (let ((agent-q-prompt-deadline-function (lambda () (+ (float-time) 125.2))))
    (should (string-match-p "the agent waits 2:05 more"
                            (agent-q-prompt--prompt "shell_command" '(:command "ls") :dangerous nil))))
  (let ((agent-q-prompt-deadline-function (lambda () nil)))
    (should-not (string-match-p "the agent waits"
                                (agent-q-prompt--prompt "shell_command" '(:command "ls")
                                                        :dangerous nil)))))

(provide 'agent-q-gate-test)

;;; agent-q-gate-test.el ends here
