;;; agent-q-ide-test.el --- Gemini CLI and Claude Code run inside Emacs, with Emacs as their IDE  -*- lexical-binding: t -*-

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

;; End-to-end tests of `agent-q-ide-mode' with the real agents, as a
;; user runs them: a real `emacs -nw -Q' in tmux turns the mode on,
;; visits a 40-line file (the cursor on line 5), and starts `ansi-term'; in it, the real Gemini CLI
;; (interactive, its IDE mode enabled in the settings of a temporary
;; HOME) or the real Claude Code (CLAUDE_CODE_SSE_PORT inherited from
;; Emacs's `process-environment') runs against the scripted model
;; tests/fake-agent-model.py, whose answer is an edit of the file with
;; three changes.  The test types into the terminal with tmux send-keys
;; and checks:
;;
;; - the agent is connected: Gemini's /ide status, Claude's /status;
;; - once the user has selected lines 3 to 5 in Emacs (the cursor then
;;   on line 6), its model request
;;   carries the file Emacs has open, with the cursor line (Gemini) or
;;   the selected lines (Claude);
;; - the edit opens agent-q's review in Emacs, headed with the agent,
;;   while the user goes on typing in the terminal: what they type
;;   decides nothing; once they pause,
;;   a, r, a, C-c C-c there leaves exactly hunks 1 and 3 on disk, written
;;   by the agent, and the buffer visiting the file is reverted to them;
;; - a second edit rejected with C-c C-k leaves the file unchanged;
;; - the reviews and their outcomes are in the audit log, with the agent;
;; - turning the mode off removes the discovery and lock files.
;;
;; The -terminal-answer tests answer the agent's own prompt in the
;; terminal while the review is open in Emacs (its first hunk rejected
;; there): yes to one edit, no to another.  Each time the review closes,
;; the file ends as the agent decides (Gemini CLI writes the review's
;; text it got from closeDiff, Claude Code its own proposal; no leaves
;; it), the buffer is reverted, the audit says the agent closed the
;; review, and the agent answers its next prompt.
;;
;; The inner Emacs writes its state (the mode, its files, the buffer's
;; text, the open reviews) to a file every 0.2 s, and turns the mode off
;; when a file named "off" appears.  tmux and the agents (installed by
;; scripts/ensure-deps.sh --test, which make test runs) are required: a
;; missing one fails the test, saying so; nothing is skipped.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'json)
(require 'subr-x)
(require 'agent-q-tmux-test)
(require 'agent-q-agents-test)

(defconst agent-q-ide-test--lines 40
  "Lines in the file the agents edit.")

(defun agent-q-ide-test--old ()
  "The file's text before the edit: \"line 1\" to \"line 40\"."
  (mapconcat (lambda (i) (format "line %d\n" i))
             (number-sequence 1 agent-q-ide-test--lines) ""))

(defconst agent-q-ide-test--changes '((2 . "LINE TWO") (20 . "LINE TWENTY") (39 . "LINE 39"))
  "The three changes of the agent's edit, far enough apart to make three hunks.")

(defun agent-q-ide-test--with (accepted)
  "The old text with the changes numbered in ACCEPTED (1-based) made."
  (let ((lines (split-string (agent-q-ide-test--old) "\n")))
    (cl-loop for (n . text) in agent-q-ide-test--changes
             for i from 1
             when (memq i accepted) do (setf (nth (1- n) lines) text))
    (string-join lines "\n")))

(defun agent-q-ide-test--lines-of (text from to)
  "Lines FROM to TO (1-based) of TEXT, each with its newline."
  (mapconcat (lambda (l) (concat l "\n"))
             (cl-subseq (split-string text "\n") (1- from) to) ""))

(defun agent-q-ide-test--steps (agent file)
  "The scripted model's answers for AGENT editing FILE.
First the edit with three changes (Claude Code reads the file before,
as its Edit tool requires), a final text; then, for the second prompt,
an edit of line 10 (which the test rejects) and a final text."
  (let ((old (agent-q-ide-test--old))
        (merged (agent-q-ide-test--with '(1 3))))
    (pcase agent
      ('gemini
       `(((tool . "write_file")
          (arguments (file_path . ,file) (content . ,(agent-q-ide-test--with '(1 2 3)))))
         ((text . "Edit done."))
         ((tool . "write_file")
          (arguments (file_path . ,file)
                     (content . ,(replace-regexp-in-string "^line 10$" "LINE TEN" merged t t))))
         ((text . "Second edit done."))))
      ('claude
       `(((tool . "Read") (arguments (file_path . ,file)))
         ((tool . "Edit")
          (arguments (file_path . ,file)
                     (old_string . ,(string-trim-right (agent-q-ide-test--lines-of old 2 39)))
                     (new_string . ,(string-trim-right
                                     (agent-q-ide-test--lines-of (agent-q-ide-test--with '(1 2 3))
                                                                 2 39)))))
         ((text . "Edit done."))
         ((tool . "Edit")
          (arguments (file_path . ,file) (old_string . "line 10\n") (new_string . "LINE TEN\n")))
         ((text . "Second edit done.")))))))

(defun agent-q-ide-test--configure (agent home work)
  "Write AGENT's configuration in HOME for a session in WORK.
Return the agent's environment variables besides the model's URL."
  (pcase agent
    ('gemini
     (agent-q-agents-test--write
      (expand-file-name ".gemini/settings.json" home)
      (json-encode
       '((security (folderTrust (enabled . :json-false))
                   (auth (selectedType . "gemini-api-key")))
         (general (enableAutoUpdate . :json-false) (enableAutoUpdateNotification . :json-false))
         (privacy (usageStatisticsEnabled . :json-false))
         (telemetry (enabled . :json-false))
         ;; What /ide enable sets.
         (ide (enabled . t) (hasSeenNudge . t)))))
     (list "GEMINI_API_KEY=scripted"))
    ('claude
     (let ((key "sk-ant-scripted-0123456789abcdefghijKLMN"))
       ;; No onboarding, no trust or API key dialog.
       (agent-q-agents-test--write
        (expand-file-name ".claude.json" home)
        (json-encode
         `((hasCompletedOnboarding . t) (lastOnboardingVersion . "2.1.197") (theme . "dark")
           (customApiKeyResponses (approved . [,(substring key -20)]) (rejected . []))
           (projects (,(intern (directory-file-name work))
                      (hasTrustDialogAccepted . t) (hasCompletedProjectOnboarding . t)
                      (allowedTools . []))))))
       (list (concat "ANTHROPIC_API_KEY=" key)
             "DISABLE_TELEMETRY=1" "DISABLE_AUTOUPDATER=1" "DISABLE_ERROR_REPORTING=1"
             "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")))))

(defun agent-q-ide-test--model-variable (agent port)
  "The environment variable pointing AGENT at the scripted model on PORT."
  (format "%s=http://127.0.0.1:%d"
          (if (eq agent 'gemini) "GOOGLE_GEMINI_BASE_URL" "ANTHROPIC_BASE_URL")
          port))

(defvar agent-q-ide-test--inner-setup nil
  "Forms the inner Emacs evaluates once the mode is on, or nil.")

(defun agent-q-ide-test--setup (dir file work)
  "The inner Emacs's init code, for the test directory DIR, FILE in WORK.
It ends with the forms of `agent-q-ide-test--inner-setup'."
  `(progn
     (setq inhibit-startup-screen t
           agent-q-audit-file ,(expand-file-name "audit.jsonl" dir)
           transient-mark-mode t)
     (require 'agent-q)
     (require 'agent-q-ide)
     (setq agent-q-ide-workspace-folders (list ,work))
     (agent-q-ide-mode 1)
     ,@agent-q-ide-test--inner-setup
     (defvar agent-q-ide-test--written (copy-sequence agent-q-ide--files))
     (find-file ,file)
     ;; The cursor at the start of line 5.
     (goto-char (point-min))
     (forward-line 4)
     (split-window-below 8)
     (other-window 1)
     (let ((default-directory ,(file-name-as-directory work)))
       (ansi-term "/bin/bash"))
     (run-at-time
      0.2 0.2
      (lambda ()
        (when (and agent-q-ide-mode (file-exists-p ,(expand-file-name "off" dir)))
          (agent-q-ide-mode -1))
        ;; Writing a buffer sets `deactivate-mark', which would deactivate the
        ;; region the user is making after their next command.
        (let ((buffer (find-buffer-visiting ,file))
              (deactivate-mark nil))
          (with-temp-file ,(expand-file-name "state.tmp" dir)
            (prin1 (list :mode agent-q-ide-mode
                         :files (mapcar (lambda (f) (list f (file-exists-p f)
                                                          (and (file-exists-p f) (file-modes f))))
                                        agent-q-ide-test--written)
                         :environment (mapcar #'getenv '("GEMINI_CLI_IDE_PID"
                                                         "GEMINI_CLI_IDE_SERVER_PORT"
                                                         "CLAUDE_CODE_SSE_PORT"))
                         :pid (emacs-pid)
                         :buffer (and buffer (with-current-buffer buffer
                                               (buffer-substring-no-properties
                                                (point-min) (point-max))))
                         :modified (and buffer (buffer-modified-p buffer))
                         :reviews (length (agent-q-review-open-reviews))
                         :ide-reviews (length agent-q-ide--reviews)
                         :review-buffers (cl-count-if
                                          (lambda (b) (string-prefix-p "*agent-q-diff"
                                                                       (buffer-name b)))
                                          (buffer-list))
                         :selected (buffer-name (window-buffer (selected-window))))
                   (current-buffer)))
          (rename-file ,(expand-file-name "state.tmp" dir) ,(expand-file-name "state.el" dir) t))))))

(defun agent-q-ide-test--state (dir)
  "The inner Emacs's last state, written in DIR."
  (let ((file (expand-file-name "state.el" dir)))
    (and (file-exists-p file)
         (ignore-errors (car (read-from-string (agent-q-agents-test--read file)))))))

(defun agent-q-ide-test--wait-state (dir predicate what)
  "Wait (up to 60 s) until the state in DIR satisfies PREDICATE; return it.
Fail naming WHAT."
  (let ((deadline (+ (float-time) 60)) state)
    (while (and (not (and (setq state (agent-q-ide-test--state dir)) (funcall predicate state)))
                (< (float-time) deadline))
      (sleep-for 0.2))
    (unless (and state (funcall predicate state))
      (ert-fail (list "Timed out waiting for" what state)))
    state))

(defun agent-q-ide-test--type (session text)
  "Type TEXT into tmux SESSION, then Enter."
  (agent-q-tmux-test--tmux "send-keys" "-t" session "-l" text)
  (sleep-for 0.5)
  (agent-q-tmux-test--tmux "send-keys" "-t" session "Enter"))

(defun agent-q-ide-test--wait-screen (session regexp &optional seconds)
  "Wait up to SECONDS (default 60) until SESSION's screen matches REGEXP.
Case matters: Emacs's own messages say \"connected to Emacs\"."
  (let ((screen "") (deadline (+ (float-time) (or seconds 60))) (case-fold-search nil))
    (while (and (not (string-match-p regexp screen)) (< (float-time) deadline))
      (sleep-for 0.3)
      (setq screen (agent-q-tmux-test--tmux "capture-pane" "-p" "-t" session)))
    (unless (string-match-p regexp screen)
      (ert-fail (list "The screen never showed" regexp screen)))
    screen))

(defun agent-q-ide-test--step-requests (record)
  "The scripted model's step requests recorded in RECORD, oldest first."
  (cl-remove-if-not (lambda (r) (equal (alist-get 'kind r) "step"))
                    (agent-q-agents-test--json-lines record)))

(defun agent-q-ide-test--wait-requests (record count)
  "Wait (up to 60 s) until RECORD holds COUNT step requests; return them.
Fail when it never does, or holds more."
  (let ((deadline (+ (float-time) 60)) requests)
    (while (and (< (length (setq requests (agent-q-ide-test--step-requests record))) count)
                (< (float-time) deadline))
      (sleep-for 0.3))
    (sleep-for 1)
    (setq requests (agent-q-ide-test--step-requests record))
    (unless (= (length requests) count)
      (ert-fail (list "Expected step requests" count "got" (length requests))))
    requests))

(defun agent-q-ide-test--review (session keys)
  "Wait for the review of the agent's edit in SESSION, then type KEYS in it."
  (agent-q-ide-test--wait-screen session "Progress: 0 accepted, 0 rejected, 3 pending\\|Progress: 0 accepted, 0 rejected, 1 pending")
  (dolist (key keys)
    (agent-q-tmux-test--tmux "send-keys" "-t" session key)
    (sleep-for 0.3)))

(defun agent-q-ide-test--type-through-review (session)
  "Type a, r, a into SESSION's terminal until the review has shown for 1 s.
The user goes on typing as the agent's edit arrives: the review opens,
selected, under their fingers.  The keys that decide a review must not
decide this one.  Return the last screen."
  (let ((deadline (+ (float-time) 60)) (seen nil) (screen ""))
    (while (and (< (float-time) deadline)
                (not (and seen (> (- (float-time) seen) 1.0))))
      (agent-q-tmux-test--tmux "send-keys" "-t" session "a" "r" "a")
      (sleep-for 0.05)
      (setq screen (agent-q-tmux-test--tmux "capture-pane" "-p" "-t" session))
      (when (and (not seen) (string-match-p "agent-q-diff: sample\\.txt" screen))
        (setq seen (float-time))))
    (unless seen
      (ert-fail (list "The review never showed" screen)))
    screen))

(defun agent-q-ide-test--with-agent (agent steps function)
  "Run AGENT in an Emacs terminal, `agent-q-ide-mode' on; call FUNCTION.
The scripted model answers with the steps that STEPS, a function,
returns for AGENT and the file's name.  Once the mode has written its
files and the agent is connected, FUNCTION is called with the tmux
session, the test's directory, the file's name and the model (as
`agent-q-agents-test--start-model' returns it).  Everything is
stopped afterwards."
  (agent-q-tmux-test--ensure-tmux)
  (let* ((program (agent-q-agents-test--program agent))
         (dir (file-name-as-directory (make-temp-file "agent-q-ide" t)))
         (home (expand-file-name "home/" dir))
         (work (expand-file-name "work" dir))
         (file (expand-file-name "sample.txt" work))
         (session (format "agent-q-ide-%s-%d" agent (emacs-pid)))
         (setup (expand-file-name "setup.el" dir))
         (lisp-dir (file-name-directory (locate-library "agent-q")))
         (emacs (expand-file-name invocation-name invocation-directory))
         model)
    (unwind-protect
        (progn
          (make-directory (expand-file-name "tmp" home) t)
          (agent-q-agents-test--write file (agent-q-ide-test--old))
          (setq model (agent-q-agents-test--start-model
                       dir (if (eq agent 'gemini) "gemini" "anthropic")
                       (funcall steps agent file)))
          (with-temp-file setup (prin1 (agent-q-ide-test--setup dir file work) (current-buffer)))
          (agent-q-tmux-test--tmux
           "new-session" "-d" "-s" session "-x" "200" "-y" "50"
           (mapconcat #'shell-quote-argument
                      (append (list "env" "-i")
                              (agent-q-agents-test--environment
                               home (cons (agent-q-ide-test--model-variable agent (nth 1 model))
                                          (agent-q-ide-test--configure agent home work)))
                              (agent-q-tmux-test--emacs-variables)
                              (list (concat "PATH=" (file-name-directory program) ":"
                                            (agent-q-agents-test--path))
                                    "TERM=xterm-256color"
                                    emacs "-nw" "-Q" "-L" lisp-dir "-l" setup))
                      " "))
          ;; The mode wrote its files, 0600, and set the environment.
          (let* ((state (agent-q-ide-test--wait-state dir (lambda (s) (plist-get s :mode)) "the mode"))
                 (files (mapcar #'car (plist-get state :files)))
                 (env (plist-get state :environment)))
            (should (= (length files) 2))
            (dolist (f (plist-get state :files))
              (should (nth 1 f))
              (should (= (nth 2 f) #o600)))
            (should (cl-find-if (lambda (f) (string-match-p
                                             (format "/gemini/ide/gemini-ide-server-%d-%s\\.json\\'"
                                                     (plist-get state :pid) (nth 1 env))
                                             f))
                                files))
            (should (member (expand-file-name (format ".claude/ide/%s.lock" (nth 2 env)) home)
                            files))
            (should (equal (car env) (number-to-string (plist-get state :pid)))))
          (agent-q-ide-test--wait-screen session "(Term: char run)")
          (sleep-for 1)
          (agent-q-ide-test--type session (file-name-nondirectory program))
          ;; Connected.
          (pcase agent
            ('gemini
             ;; Its footer counts the files of the context Emacs sent.  (/ide status
             ;; comes at the end: a prompt typed while a command runs at start-up can
             ;; stay queued.)
             (agent-q-ide-test--wait-screen session "Type your message")
             (agent-q-ide-test--wait-screen session "1 open file")
             (sleep-for 2))
            ('claude
             (agent-q-ide-test--wait-screen session "for shortcuts\\|? for")
             (sleep-for 2)
             (agent-q-ide-test--type session "/status")
             (agent-q-ide-test--wait-screen session "IDE: *Connected to Emacs")
             ;; Emacs reads one ESC as the Meta prefix: two reach the terminal.
             (agent-q-tmux-test--tmux "send-keys" "-t" session "Escape" "Escape")
             (agent-q-ide-test--wait-screen session "dialog dismissed")
             (sleep-for 1)))
          (funcall function session dir file model))
      (if (getenv "AGENT_Q_IDE_TEST_KEEP")
          (message "Kept %s and the tmux session %s" dir session)
        (call-process "tmux" nil nil nil "kill-session" "-t" session))
      (when (and model (process-live-p (car model)))
        (delete-process (car model)))
      (when model
        (kill-buffer (process-buffer (car model))))
      (unless (getenv "AGENT_Q_IDE_TEST_KEEP")
        ;; The agent, killed with the session, may still be writing in its HOME.
        (dotimes (_ 10)
          (when (file-exists-p dir)
            (sleep-for 0.3)
            (ignore-errors (delete-directory dir t))))))))

(defun agent-q-ide-test--run (agent)
  "Run AGENT in an Emacs terminal, `agent-q-ide-mode' on; check everything."
  (let ((label (if (eq agent 'gemini) "Gemini CLI" "Claude Code")))
    (agent-q-ide-test--with-agent
     agent #'agent-q-ide-test--steps
     (lambda (session dir file model)
       ;; The user goes to the file's window (its cursor on line 5), selects
       ;; lines 3 to 5 (the cursor ends on line 6), and goes back to the
       ;; terminal: Emacs tells the agent (debounced).
       (dolist (keys '(("C-x" "o") ("C-p") ("C-p") ("C-Space") ("C-n") ("C-n") ("C-n")
                       ("C-x" "o")))
         (apply #'agent-q-tmux-test--tmux "send-keys" "-t" session keys)
         (sleep-for 0.4))
       (if (eq agent 'claude)
           ;; "⧉ 3 lines selected", right-aligned, which ansi-term may garble.
           (agent-q-ide-test--wait-screen session "⧉ 3 lines")
         (sleep-for 2))
       ;; The edit, asked for while the user goes on typing: their keys
       ;; decide nothing; once they pause, the review takes keys, and
       ;; hunks 1 and 3 are accepted, 2 rejected.
       (agent-q-ide-test--type session "Make the edit")
       (should (string-match-p "Review opening: its keys work once you pause typing"
                               (agent-q-ide-test--type-through-review session)))
       (agent-q-ide-test--review session '("a" "r" "a" "C-c" "C-c"))
       (let ((state (agent-q-ide-test--wait-state
                     dir (lambda (s) (equal (plist-get s :buffer) (agent-q-ide-test--with '(1 3))))
                     "the buffer reverted to hunks 1 and 3")))
         (should-not (plist-get state :modified))
         (should (= (plist-get state :reviews) 0)))
       (should (equal (agent-q-agents-test--read file) (agent-q-ide-test--with '(1 3))))
       ;; The second edit, rejected: the file stays as it is.
       (agent-q-ide-test--wait-screen session "Edit done\\.")
       (agent-q-ide-test--type session "Make another edit")
       (agent-q-ide-test--review session '("C-c" "C-k"))
       (agent-q-ide-test--wait-state dir (lambda (s) (= (plist-get s :reviews) 0))
                                     "the review to close")
       (sleep-for 3)
       (should (equal (agent-q-agents-test--read file) (agent-q-ide-test--with '(1 3))))
       (when (eq agent 'gemini)
         (agent-q-ide-test--wait-screen session "Request cancelled")
         (agent-q-ide-test--type session "/ide status")
         (agent-q-ide-test--wait-screen session "Connected to Emacs"))
       ;; The audit: both reviews and their outcomes, with the agent.
       (let ((audit (agent-q-agents-test--json-lines (expand-file-name "audit.jsonl" dir))))
         ;; Each openDiff is one executor call of agent_edit, its review its approval.
         (should (equal (mapcar (lambda (r) (list (alist-get 'tool r) (alist-get 'event r)
                                                  (alist-get 'status r)))
                                audit)
                        '(("agent_edit" "run" nil) ("agent_edit" "result" "success")
                          ("agent_edit" "run" nil) ("agent_edit" "result" "denied"))))
         (dolist (r (list (nth 1 audit) (nth 3 audit)))
           (should (equal (alist-get 'decision r) "review"))
           (should (string-prefix-p "the user's review: " (alist-get 'how r))))
         (dolist (r audit)
           (should (string-prefix-p label (alist-get 'client r)))
           (should (equal (alist-get 'path (alist-get 'arguments r)) file))))
       ;; Turning the mode off removes the files.
       (agent-q-agents-test--write (expand-file-name "off" dir) "")
       (let ((state (agent-q-ide-test--wait-state
                     dir (lambda (s) (and (not (plist-get s :mode))
                                          (cl-notany #'cadr (plist-get s :files))))
                     "the mode off, its files removed")))
         (should (= (length (plist-get state :files)) 2))
         (should (equal (plist-get state :environment) '(nil nil nil))))
       ;; The model's first step request carried the editor context.
       (let ((body (json-encode (alist-get 'body (car (agent-q-ide-test--step-requests
                                                       (nth 2 model)))))))
         (pcase agent
           ('gemini
            (should (string-match-p (regexp-quote file) body))
            (should (string-match-p "\\\\\"line\\\\\": *6," body)))
           ('claude
            (should (string-match-p
                     (regexp-quote (format "The user selected the lines 3 to 5 from %s" file))
                     body)))))))))

(defun agent-q-ide-test--terminal-yes (agent)
  "The file as AGENT leaves it when its edit is answered yes in the terminal.
Hunk 1 was rejected in Emacs meanwhile, hunks 2 and 3 left pending.
Gemini CLI writes what closeDiff answered, the review's text with the
pending hunks accepted; Claude Code writes its own proposal."
  (agent-q-ide-test--with (if (eq agent 'gemini) '(2 3) '(1 2 3))))

(defun agent-q-ide-test--terminal-steps (agent file)
  "The scripted model's answers for AGENT editing FILE, answered in the terminal.
The edit with three changes (Claude Code reads the file before) and a
final text; for the second prompt, an edit of line 10 (refused in the
terminal, after which neither agent asks its model again); for the
third prompt, a final text."
  (let ((second (replace-regexp-in-string
                 "^line 10$" "LINE TEN" (agent-q-ide-test--terminal-yes agent) t t)))
    (pcase agent
      ('gemini
       `(((tool . "write_file")
          (arguments (file_path . ,file) (content . ,(agent-q-ide-test--with '(1 2 3)))))
         ((text . "Edit done."))
         ((tool . "write_file") (arguments (file_path . ,file) (content . ,second)))
         ((text . "Third answer."))))
      ('claude
       (append (butlast (agent-q-ide-test--steps agent file)) '(((text . "Third answer."))))))))

(defun agent-q-ide-test--select-terminal (session dir)
  "Select the terminal's window in SESSION's Emacs with C-x o, as a user does.
DIR holds the inner Emacs's state, which names the selected buffer."
  (let ((deadline (+ (float-time) 30)))
    (while (and (not (string-match-p "ansi-term"
                                     (or (plist-get (agent-q-ide-test--state dir) :selected) "")))
                (< (float-time) deadline))
      (agent-q-tmux-test--tmux "send-keys" "-t" session "C-x" "o")
      (sleep-for 0.6))
    (agent-q-ide-test--wait-state
     dir (lambda (s) (string-match-p "ansi-term" (plist-get s :selected))) "the terminal selected")))

(defun agent-q-ide-test--answer-in-terminal (agent session dir key)
  "Go to the terminal in SESSION (state in DIR) and answer AGENT's prompt with KEY.
The review of the edit is open, selected, in Emacs."
  (agent-q-ide-test--select-terminal session dir)
  (agent-q-ide-test--wait-screen
   session (if (eq agent 'gemini)
               "1\\. Allow once"
             "Do you want to make this edit to sample\\.txt"))
  (sleep-for 1)
  (agent-q-tmux-test--tmux "send-keys" "-t" session key))

(defun agent-q-ide-test--closed (dir text)
  "Wait until no review is left in the Emacs whose state is in DIR.
TEXT is what the file must then hold on disk and in its buffer,
reverted and not modified."
  (let ((state (agent-q-ide-test--wait-state
                dir (lambda (s) (and (= (plist-get s :reviews) 0)
                                     (= (plist-get s :ide-reviews) 0)
                                     (= (plist-get s :review-buffers) 0)
                                     (equal (plist-get s :buffer) text)))
                (list "no review left, the buffer holding" text))))
    (should-not (plist-get state :modified))
    (should (equal (agent-q-agents-test--read (expand-file-name "work/sample.txt" dir)) text))))

(defun agent-q-ide-test--terminal-answer (agent)
  "Answer AGENT's own prompt in the terminal while its edit's review is open.
Yes to the first edit, after rejecting its first hunk in Emacs; no to
the second; then a third prompt."
  (let ((label (if (eq agent 'gemini) "Gemini CLI" "Claude Code"))
        (yes (agent-q-ide-test--terminal-yes agent)))
    (agent-q-ide-test--with-agent
     agent #'agent-q-ide-test--terminal-steps
     (lambda (session dir file model)
       ;; Yes in the terminal: the review closes, the agent writes the file.
       (agent-q-ide-test--type session "Make the edit")
       (agent-q-ide-test--review session '("r"))
       (agent-q-ide-test--wait-screen session "Progress: 0 accepted, 1 rejected, 2 pending")
       (agent-q-ide-test--answer-in-terminal agent session dir "1")
       (agent-q-ide-test--closed dir yes)
       (agent-q-ide-test--wait-screen session "Edit done\\.")
       ;; No in the terminal: the review closes, the file stays.
       (agent-q-ide-test--type session "Make another edit")
       (agent-q-ide-test--review session nil)
       (agent-q-ide-test--answer-in-terminal agent session dir "3")
       (agent-q-ide-test--wait-screen
        session (if (eq agent 'gemini) "Request cancelled" "User rejected update to sample\\.txt"))
       (agent-q-ide-test--closed dir yes)
       (sleep-for 2)
       (should (equal (agent-q-agents-test--read file) yes))
       ;; The agent goes on.
       (agent-q-ide-test--type session "Say something")
       (let ((requests (agent-q-ide-test--wait-requests (nth 2 model)
                                                         (if (eq agent 'gemini) 4 5))))
         ;; What the first edit's result told the model.
         (should (string-match-p
                  (if (eq agent 'gemini)
                      "\\`Successfully overwrote file: .*User modified the `content`"
                    "\\`The file .* has been updated successfully\\.")
                  (alist-get 'text (car (last (alist-get 'results
                                                         (nth (if (eq agent 'gemini) 1 2)
                                                              requests)))))))
         (unless (eq agent 'gemini)
           (should (string-match-p "The user doesn't want to proceed with this tool use"
                                   (alist-get 'text (car (last (alist-get 'results
                                                                          (nth 4 requests)))))))))
       ;; The audit: both reviews, closed by the agent, decided by nobody in Emacs.
       (let ((audit (agent-q-agents-test--json-lines (expand-file-name "audit.jsonl" dir))))
         (should (equal (mapcar (lambda (r) (list (alist-get 'event r) (alist-get 'status r)))
                                audit)
                        '(("run" nil) ("result" "cancelled") ("run" nil) ("result" "cancelled"))))
         (dolist (r audit)
           (should (string-prefix-p label (alist-get 'client r)))
           (should (equal (alist-get 'path (alist-get 'arguments r)) file)))
         (dolist (r (list (nth 1 audit) (nth 3 audit)))
           (should (string-match-p
                    (concat "\\`" label " closed the review: its own prompt was answered in the terminal")
                    (alist-get 'withdrawn r)))))))))

(ert-deftest agent-q-ide-test-gemini-terminal-answer ()
  "Gemini CLI's edit answered in the terminal while its review is open in Emacs."
  (agent-q-ide-test--terminal-answer 'gemini))

(ert-deftest agent-q-ide-test-claude-terminal-answer ()
  "Claude Code's edit answered in the terminal while its review is open in Emacs."
  (agent-q-ide-test--terminal-answer 'claude))

(ert-deftest agent-q-ide-test-gemini ()
  "Gemini CLI in an Emacs terminal: connected, context, review of its edit."
  (agent-q-ide-test--run 'gemini))

(ert-deftest agent-q-ide-test-claude ()
  "Claude Code in an Emacs terminal: connected, context, review of its edit."
  (agent-q-ide-test--run 'claude))

;;;; Trusted for a while

(defun agent-q-ide-test--trusted-steps (_agent file)
  "Gemini's edit of FILE, then its write of its settings in FILE's folder."
  `(((tool . "write_file")
     (arguments (file_path . ,file) (content . ,(agent-q-ide-test--with '(1 2 3)))))
    ((text . "Edit done."))
    ((tool . "write_file")
     (arguments (file_path . ,(expand-file-name ".gemini/settings.json" (file-name-directory file)))
                (content . "{\"general\":{}}\n")))
    ((text . "Settings done."))))

(ert-deftest agent-q-ide-test-gemini-trusted ()
  "Gemini CLI trusted with its edits: its openDiff is accepted unreviewed.
The inner Emacs trusts Gemini's edits for ten minutes (`agent-q-trust-agent'),
its mode line showing it; Gemini's edit of the file in the workspace
folder is written with no review and audited as trusted; its write of
.gemini/settings.json is still reviewed (and rejected here)."
  (let ((agent-q-ide-test--inner-setup
         '((require 'agent-q-trust) (agent-q-trust-agent "gemini" nil nil 600))))
    (agent-q-ide-test--with-agent
     'gemini #'agent-q-ide-test--trusted-steps
     (lambda (session dir file _model)
       (let ((settings (expand-file-name ".gemini/settings.json" (file-name-directory file))))
         (agent-q-ide-test--wait-screen session "\\[trust: gemini edits [0-9]+:[0-9][0-9]\\]")
         ;; No review: no key is typed, and the edit lands whole.
         (agent-q-ide-test--type session "Make the edit")
         (let ((state (agent-q-ide-test--wait-state
                       dir (lambda (s) (equal (plist-get s :buffer) (agent-q-ide-test--with '(1 2 3))))
                       "the buffer reverted to the trusted edit")))
           (should (= (plist-get state :reviews) 0)))
         (should (equal (agent-q-agents-test--read file) (agent-q-ide-test--with '(1 2 3))))
         (agent-q-ide-test--wait-screen session "Edit done\\.")
         ;; Its own settings: reviewed under the trust; rejected, not written.
         (agent-q-ide-test--type session "Write the settings")
         (agent-q-ide-test--review session '("C-c" "C-k"))
         (agent-q-ide-test--wait-state dir (lambda (s) (= (plist-get s :reviews) 0))
                                       "the review to close")
         (sleep-for 3)
         (should-not (file-exists-p settings))
         (let* ((audit (agent-q-agents-test--json-lines (expand-file-name "audit.jsonl" dir)))
                (results (cl-remove-if-not (lambda (r) (equal (alist-get 'event r) "result")) audit)))
           (should (= (length results) 2))
           (let ((trusted (car results)) (reviewed (cadr results)))
             (should (equal (alist-get 'path (alist-get 'arguments trusted)) file))
             (should (equal (alist-get 'status trusted) "success"))
             (should (equal (alist-get 'decision trusted) "trusted"))
             (should (string-match-p "\\`trusted until .*: gemini's edits inside its workspace"
                                     (alist-get 'trusted trusted)))
             (should (equal (alist-get 'path (alist-get 'arguments reviewed)) settings))
             (should (equal (alist-get 'status reviewed) "denied"))
             (should (equal (alist-get 'decision reviewed) "review"))
             (should-not (alist-get 'trusted reviewed)))))))))

(provide 'agent-q-ide-test)

;;; agent-q-ide-test.el ends here
