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
;; from its file as after a restart.  Turns: from the gate's turn
;; events, from ACP's session/prompt (the real Gemini CLI over ACP),
;; and from the prompt hooks that `agent-q-gate-connect-agent' writes
;; (the real Claude Code and Gemini CLI, two prompts in one session).
;; An ACP edit of several files is journalled only when all are
;; written.

;;; Code:

(require 'ert)
(require 'agent-q-journal)
(require 'agent-q-gate-edit-test)
(require 'agent-q-review)
(require 'agent-q-gate-edit)
(require 'agent-q-acp-test)
(require 'agent-q-gate-test)

(defvar agent-q-gate-test--by-command)
;; agent-shell's, as the ACP mode and the responder read them.
(defvar agent-shell--state)
(defvar agent-shell-permission-responder-function)
(defvar agent-shell-mcp-servers)

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

;;;; Turns

(defun agent-q-journal-test--entries ()
  "The journal's entries, newest first."
  (agent-q--core-journal-entries (agent-q-journal--get)))

(defun agent-q-journal-test--turn-of (entry)
  "ENTRY's (AGENT SESSION TURN LABEL)."
  (mapcar (lambda (key) (plist-get entry key)) '(:agent :session :turn :turn-label)))

(ert-deftest agent-q-journal-test-turns-listed-filtered-undone ()
  "The gate's turn events number a session's turns; its changes carry them.
The list shows number and label, t filters by the turn, T undoes it."
  (let* ((dir (make-temp-file "agent-q-journal-test" t))
         (agent-q-journal-file (expand-file-name "journal.jsonl" dir))
         (agent-q-journal--journal nil)
         (file (expand-file-name "code.txt" dir))
         (v0 (agent-q-journal-test--lines 40))
         (v1 (replace-regexp-in-string "^line 5$" "first five" v0))
         (v2 (replace-regexp-in-string "^line 30$" "second thirty" v1))
         (context (lambda (session) (list :channel (format "mcp gate claude %s" session)
                                          :client "claude (own tools)" :decision "review"))))
    (unwind-protect
        (progn
          (write-region v2 nil file nil 'silent)
          ;; Before any turn: none.
          (should (eql 1 (agent-q-journal-record :context (funcall context "s1") :file dir
                                                 :command "ls")))
          (agent-q-gate--event '(:turn claude "s1" "Fix line five."))
          (should (agent-q-journal-record :context (funcall context "s1") :file file
                                          :old v0 :new v1))
          ;; Another session of the same agent: not in s1's turn.
          (should (agent-q-journal-record :context (funcall context "s2") :file dir
                                          :command "make"))
          (agent-q-gate--event '(:turn claude "s1" "Now line thirty.\nAnd more."))
          (should (agent-q-journal-record :context (funcall context "s1") :file file
                                          :old v1 :new v2))
          (should (equal (mapcar #'agent-q-journal-test--turn-of (agent-q-journal-test--entries))
                         '(("claude" "s1" "2" "Now line thirty.")
                           ("claude" "s2" "" "")
                           ("claude" "s1" "1" "Fix line five.")
                           ("claude" "s1" "" ""))))
          ;; ACP's and a caller's turn: by channel and client, as the calls name them.
          (should (eql 1 (agent-q-journal-turn :channel "acp a-1" :client "Gemini CLI (ACP) a-1"
                                               :prompt "Hello")))
          (should (eql 2 (agent-q-journal-turn :agent "Gemini CLI (ACP)" :session "a-1")))
          (should-not (agent-q-journal-turn :agent "gptel"))
          (agent-q-changes)
          (with-current-buffer "*agent-q-changes*"
            (goto-char (point-min))
            (should (search-forward "2 Now line thirty." nil t))
            (should (search-forward "1 Fix line five." nil t))
            ;; t: only the turn at point (turn 1).
            (agent-q-changes-filter-turn)
            (should (equal agent-q-changes--ids [2]))
            (should (equal agent-q-changes--filter '(:agent "claude" :session "s1" :turn "1")))
            (agent-q-changes-clear-filter)
            ;; T on turn 2 undoes its change only, through the review.
            (goto-char (point-min))
            (search-forward "2 Now line thirty.")
            (let ((agent-q-review--review-driver
                   (lambda (buffer)
                     (with-current-buffer buffer
                       (agent-q-review-accept-all)
                       (agent-q-review-finish)))))
              (agent-q-changes-undo-turn)))
          (should (equal (agent-q-journal-test--read file) v1))
          (let ((newest (car (agent-q-journal-test--entries))))
            (should (eq (plist-get newest :kind) 'revert))
            (should (equal (plist-get newest :reverts) (list 4))))
          ;; Read back: the next turn of s1 is 3.
          (setq agent-q-journal--journal nil)
          (agent-q-gate--event '(:turn claude "s1" "Third."))
          (agent-q-journal-record :context (funcall context "s1") :file file :old v1 :new v0)
          (should (equal (agent-q-journal-test--turn-of (car (agent-q-journal-test--entries)))
                         '("claude" "s1" "3" "Third."))))
      (dolist (b '("*agent-q-changes*" "*agent-q-change*"))
        (when (get-buffer b) (kill-buffer b)))
      (delete-directory dir t))))

(defun agent-q-journal-test--acp-request (id files)
  "An ACP permission request ID editing FILES, each (FILE . NEW), new files."
  `((id . ,id) (method . "session/request_permission")
    (params (sessionId . "s-9")
            (options . [((optionId . "proceed_once") (kind . "allow_once"))
                        ((optionId . "cancel") (kind . "reject_once"))])
            (toolCall (toolCallId . ,(format "edit_%d" id)) (kind . "edit")
                      (title . "Writing files")
                      (content . ,(vconcat
                                   (mapcar (lambda (f) `((type . "diff") (path . ,(car f))
                                                         (oldText . "") (newText . ,(cdr f))))
                                           files)))
                      (locations . ,(vconcat (mapcar (lambda (f) `((path . ,(car f)))) files)))))))

(ert-deftest agent-q-journal-test-acp-several-files-journalled-only-when-written ()
  "An ACP edit of two files, one rejected: the agent is told no, nothing is journalled.
Both accepted: the agent is told yes, and each file is journalled."
  (let* ((dir (file-name-as-directory (make-temp-file "agent-q-journal-test" t)))
         (agent-q-journal-file (expand-file-name "journal.jsonl" dir))
         (agent-q-journal--journal nil)
         (agent-q-audit-file (expand-file-name "audit.jsonl" dir))
         (agent-q-approval-rules nil)
         (agent-q-approval-function (lambda (&rest _) (error "Nothing should be asked")))
         (agent-q-review--review-driver #'agent-q-acp-test--review-driver)
         (agent-q-acp-unruled 'agent-q)
         (calls (make-hash-table :test #'equal))
         (answers nil)
         (shell (generate-new-buffer " *agent-q-journal-test shell*")))
    (unwind-protect
        (with-current-buffer shell
          (setq default-directory dir)
          (setq-local agent-shell--state
                      '((:agent-config (:identifier . gemini-cli) (:buffer-name . "Gemini CLI"))
                        (:session (:id . "s-9"))))
          (cl-flet ((ask (id files)
                      (should (agent-q-acp-respond
                               (agent-q-acp-test--permission
                                (agent-q-journal-test--acp-request id files) calls
                                (lambda (option) (push (cons id option) answers)))))
                      (agent-q-agents-test--wait (lambda () (assq id answers)) 20
                                                 (format "the answer to %d" id))
                      (cdr (assq id answers))))
            ;; approved-a accepted, rejected-b rejected: no, and nothing journalled.
            (should (equal (ask 1 `((,(concat dir "approved-a.txt") . "a\n")
                                    (,(concat dir "rejected-b.txt") . "b\n")))
                           "cancel"))
            (should-not (agent-q-journal-test--entries))
            ;; Both accepted: yes, both journalled, as Gemini CLI (ACP)'s session.
            (should (equal (ask 2 `((,(concat dir "approved-c.txt") . "c\n")
                                    (,(concat dir "approved-d.txt") . "d\n")))
                           "proceed_once"))
            (should (equal (mapcar (lambda (e) (list (plist-get e :agent) (plist-get e :session)
                                                     (file-name-nondirectory (plist-get e :file))
                                                     (plist-get e :how)))
                                   (agent-q-journal-test--entries))
                           '(("Gemini CLI (ACP)" "s-9" "approved-d.txt" "review")
                             ("Gemini CLI (ACP)" "s-9" "approved-c.txt" "review"))))))
      (kill-buffer shell)
      (agent-q-cancel-pending)
      (delete-directory dir t))))

(ert-deftest agent-q-journal-test-acp-turns-gemini ()
  "The real Gemini CLI over ACP: two prompts, an edit in each, two turns.
Each session/prompt begins a turn; the journal's entries carry its
number and its prompt's first line."
  (agent-q-acp-test--require-acp)
  (let* ((dir (file-name-as-directory (make-temp-file "agent-q-journal-acp" t)))
         (home (expand-file-name "home/" dir))
         (work (directory-file-name (expand-file-name "work" dir)))
         (agent-q-journal-file (expand-file-name "journal.jsonl" dir))
         (agent-q-journal--journal nil)
         (agent-q-mcp-connection-file (expand-file-name "connection.json" dir))
         (agent-q-audit-file (expand-file-name "audit.jsonl" dir))
         (agent-q-allowed-directories (list work))
         (agent-q-mcp-allowed-directories (list work))
         (agent-q-approval-function #'agent-q-acp-test--approve)
         (agent-q-approval-rules nil)
         (agent-q-review--review-driver #'agent-q-acp-test--review-driver)
         (agent-q-acp-test--asked nil)
         (agent-q-acp-test--on-ask nil)
         (agent-q-prompt--session-approved nil)
         (agent-q-mcp-port 0)
         (agent-q-acp-unruled 'agent-q)
         (agent-shell-permission-responder-function nil)
         (agent-shell-mcp-servers nil)
         model run)
    (unwind-protect
        (progn
          (make-directory (expand-file-name "tmp" home) t)
          (make-directory work t)
          (agent-q-agent-shell-mode 1)
          (agent-q-acp-test--script dir '(((text . "unused"))))
          (setq model (agent-q-acp-test--start-model dir "gemini"))
          (let ((env (agent-q-acp-test--setup 'gemini home (format "http://127.0.0.1:%d" (nth 1 model)))))
            (setq run (agent-q-acp-test--start 'gemini work env))
            (dolist (n '(1 2))
              (should (equal (agent-q-acp-test--turn
                              run dir (format "Prompt %d: write a file.\nThe second line." n)
                              (list (agent-q-acp-test--step 'gemini 'write
                                                            (expand-file-name
                                                             (format "approved-%d.txt" n) work)
                                                            (format "text %d\n" n))
                                    `((text . ,(format "Prompt %d done." n)))))
                             "end_turn"))
              (should (file-exists-p (expand-file-name (format "approved-%d.txt" n) work))))
            (let ((session (agent-q-acp-test--run-session run)))
              (should (equal (mapcar (lambda (e)
                                       (list (file-name-nondirectory (plist-get e :file))
                                             (agent-q-journal-test--turn-of e)))
                                     (agent-q-journal-test--entries))
                             `(("approved-2.txt" ("Gemini CLI (ACP)" ,session "2"
                                                  "Prompt 2: write a file."))
                               ("approved-1.txt" ("Gemini CLI (ACP)" ,session "1"
                                                  "Prompt 1: write a file."))))))))
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
      (delete-directory dir t))))

(defun agent-q-journal-test--uuid ()
  "A random UUID, version 4."
  (format "%08x-%04x-4%03x-%04x-%012x" (random (expt 16 8)) (random (expt 16 4))
          (random (expt 16 3)) (logior #x8000 (random #x4000)) (random (expt 16 12))))

(defun agent-q-journal-test--run (agent home dir work model prompt session first)
  "Run AGENT in WORK on PROMPT, in SESSION (new when FIRST, else resumed).
HOME, DIR and MODEL as `agent-q-gate-test--run'; its hooks are the
connect command's.  Fail unless it exits 0."
  (let* ((agent-q-gate-test--by-command t)
         (setup (agent-q-gate-test--setup agent home dir (nth 1 model)))
         (args (if (eq agent 'codex)
                   ;; Codex names its sessions itself: the second resumes the last.
                   (append (list "exec" "--skip-git-repo-check" "--sandbox" "workspace-write")
                           (and (not first) (list "resume" "--last"))
                           (list prompt))
                 (append (list "-p" prompt "--output-format" "json")
                         (pcase (list agent first)
                           (`(claude t) (list "--session-id" session))
                           (`(claude nil) (list "--resume" session))
                           (`(gemini t) (list "--session-id" session))
                           (`(gemini nil) (list "--resume" "latest"))))))
         (output (generate-new-buffer " *agent-q-journal-agent*"))
         (process
          (let ((default-directory work)
                (process-environment
                 (agent-q-agents-test--environment
                  home (cons (concat "AGENT_Q_MCP_CONNECTION_FILE=" agent-q-mcp-connection-file)
                             (nthcdr 2 setup)))))
            (make-process :name "agent-q-journal-agent" :noquery t :buffer output
                          :connection-type 'pipe
                          :command (cons (agent-q-agents-test--program agent) args)))))
    (process-send-eof process)
    (unwind-protect
        (progn
          (agent-q-agents-test--wait (lambda () (not (process-live-p process)))
                                     agent-q-agents-test--timeout (format "%s to finish" agent))
          (while (accept-process-output process 0.01))
          (unless (= (process-exit-status process) 0)
            (ert-fail (format "%s exited %s:\n%s" agent (process-exit-status process)
                              (with-current-buffer output (buffer-string))))))
      (when (process-live-p process) (delete-process process))
      (kill-buffer output))))

(defun agent-q-journal-test--agent-turns (agent)
  "AGENT's prompt hook, written by the connect command, begins turns.
Two prompts in one session (the second resumes it), a Write of a new
file in each, accepted in the review: the journal's two entries carry
turns 1 and 2 of the session, labelled with the prompts' first lines."
  (let* ((dir (file-name-as-directory (make-temp-file "agent-q-journal-agent" t)))
         (home (expand-file-name "home/" dir))
         (work (expand-file-name "work/" dir))
         (agent-q-journal-file (expand-file-name "journal.jsonl" dir))
         (agent-q-journal--journal nil)
         (agent-q-mcp-connection-file (expand-file-name "connection.json" dir))
         (agent-q-audit-file (expand-file-name "audit.jsonl" dir))
         (agent-q-approval-function #'agent-q-gate-test--deny-all)
         (agent-q-approval-rules nil)
         (agent-q-review--review-driver
          (lambda (buffer)
            (with-current-buffer buffer
              (agent-q-review-accept-all)
              (agent-q-review-finish))))
         (agent-q-gate-test--asked nil)
         (agent-q-mcp-port 0)
         (session (agent-q-journal-test--uuid))
         (write (lambda (n)
                  (let ((file (expand-file-name (format "file-%d.txt" n) work)))
                    (pcase agent
                      ('claude `((tool . "Write") (arguments (file_path . ,file)
                                                             (content . ,(format "text %d\n" n)))))
                      ('gemini `((tool . "write_file")
                                 (arguments (file_path . ,file)
                                            (content . ,(format "text %d\n" n)))))
                      ;; Its apply_patch through its shell (see agent-q-gate-edit-test).
                      ('codex `((tool . "exec_command")
                                (arguments
                                 (cmd . ,(format "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: file-%d.txt\n+text %d\n*** End Patch\nEOF\n"
                                                 n n)))))))))
         (steps (list (funcall write 1) '((text . "One done."))
                      (funcall write 2) '((text . "Two done."))))
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
                       dir (agent-q-agents-test--prop agent :dialect) steps))
          (agent-q-journal-test--run agent home dir work model
                                     "First prompt: write file 1.\nMore words." session t)
          (agent-q-journal-test--run agent home dir work model
                                     "Second prompt: write file 2." session nil)
          ;; The turn events are taken from the server's queue as Emacs runs.
          (agent-q-agents-test--wait (lambda () (= (length (agent-q-journal-test--entries)) 2))
                                     10 "two entries")
          (let ((entries (agent-q-journal-test--entries)))
            (when (eq agent 'codex)
              ;; Codex's own session id, the same for both prompts.
              (setq session (plist-get (car entries) :session))
              (should (stringp session))
              (should (> (length session) 8)))
            (should (equal (mapcar (lambda (e)
                                     (list (file-name-nondirectory (plist-get e :file))
                                           (agent-q-journal-test--turn-of e)))
                                   entries)
                           `(("file-2.txt" (,(symbol-name agent) ,session "2"
                                            "Second prompt: write file 2."))
                             ("file-1.txt" (,(symbol-name agent) ,session "1"
                                            "First prompt: write file 1.")))))))
      (agent-q-gate-test--clean-up model dir))))

(ert-deftest agent-q-journal-test-claude-turns ()
  "Claude Code's UserPromptSubmit hook begins turns.  See `agent-q-journal-test--agent-turns'."
  (agent-q-journal-test--agent-turns 'claude))

(ert-deftest agent-q-journal-test-gemini-turns ()
  "Gemini CLI's BeforeAgent hook begins turns.  See `agent-q-journal-test--agent-turns'."
  (agent-q-journal-test--agent-turns 'gemini))

(ert-deftest agent-q-journal-test-codex-turns ()
  "Codex CLI's UserPromptSubmit hook, trusted by the connect command, begins turns.
See `agent-q-journal-test--agent-turns'."
  (agent-q-journal-test--agent-turns 'codex))

(provide 'agent-q-journal-test)

;;; agent-q-journal-test.el ends here
