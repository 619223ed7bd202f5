;;; agent-q-prompt-tmux-test.el --- The approval prompt as a user meets it, in tmux  -*- lexical-binding: t -*-

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

;; A real `emacs -nw -Q' with agent-q, in tmux; keys are typed with tmux
;; send-keys, one at a time, as a user types them:
;;
;; - a client's write_file call arrives from a timer while the user types
;;   a sentence into a buffer: every key lands in the buffer, nothing is
;;   approved, and the prompt appears once the typing has stopped;
;; - the same while the user is in the minibuffer (C-x b notes.txt): the
;;   minibuffer gets its keys, and the prompt waits until it is done;
;; - type-ahead (keys typed while Emacs was busy, and
;;   `unread-command-events') never answers the synchronous executor's
;;   prompt;
;; - an eval_form whose string arguments hold bidi controls shows its
;;   real code, escapes and keys last, in the prompt and in v's view.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-q)
(require 'agent-q-tmux-test)
(require 'agent-q-agents-test)
(require 'agent-q-ide-test)

(defun agent-q-prompt-tmux-test--screen (session)
  "The text on SESSION's screen."
  (agent-q-tmux-test--tmux "capture-pane" "-p" "-t" session))

(defun agent-q-prompt-tmux-test--type (session text &optional pause)
  "Type TEXT into SESSION one character at a time, PAUSE seconds apart."
  (dolist (char (string-to-list text))
    (agent-q-tmux-test--tmux "send-keys" "-t" session "-l" (string char))
    (sleep-for (or pause 0.12))))

(defmacro agent-q-prompt-tmux-test--with-emacs (session setup-form &rest body)
  "Run BODY with SESSION naming a tmux session running Emacs with SETUP-FORM.
Also bind `out', a fresh file name for the Emacs to report into."
  (declare (indent 2))
  `(let* ((,session (format "agent-q-prompt-%d-%d" (emacs-pid) (random 100000)))
          (out (make-temp-name (expand-file-name "agent-q-prompt-out" temporary-file-directory)))
          (setup (make-temp-file "agent-q-prompt-setup" nil ".el"))
          (lisp-dir (file-name-directory (locate-library "agent-q")))
          (emacs (expand-file-name invocation-name invocation-directory)))
     (agent-q-tmux-test--ensure-tmux)
     (with-temp-file setup
       (prin1 `(progn (setq agent-q-audit-file nil) (require 'agent-q) ,,setup-form)
              (current-buffer)))
     (unwind-protect
         (progn
           (agent-q-tmux-test--tmux
            "new-session" "-d" "-s" ,session "-x" "200" "-y" "50"
            (mapconcat #'shell-quote-argument (list emacs "-nw" "-Q" "-L" lisp-dir "-l" setup) " "))
           (agent-q-tmux-test--wait-screen ,session "scratch")
           ,@body)
       (call-process "tmux" nil nil nil "kill-session" "-t" ,session)
       (delete-file setup)
       (when (file-exists-p out) (delete-file out)))))

(defun agent-q-prompt-tmux-test--client-call (target out delay)
  "A setup form: F5 makes a client's write_file call of TARGET after DELAY seconds.
The call comes from a timer, as an MCP client's or a bridge's does; its
result, the text of the buffer \"notes\" and the session's \"a\"
approvals are written to OUT, and Emacs exits."
  `(progn
     (defun agent-q-prompt-tmux-report (results)
       (with-temp-file ,out
         (prin1 (list :results results
                      :notes (with-current-buffer (get-buffer-create "notes") (buffer-string))
                      :buffer (buffer-name (window-buffer (selected-window)))
                      :always agent-q-prompt--session-approved)
                (current-buffer)))
       (kill-emacs 0))
     (global-set-key
      (kbd "<f5>")
      (lambda ()
        (interactive)
        (switch-to-buffer (get-buffer-create "notes"))
        (run-at-time ,delay nil
                     (lambda ()
                       (let ((agent-q-client "test-agent (MCP)"))
                         (agent-q-execute-tool-calls-async
                          '((:id "w" :name "write_file" :arguments (:path ,target :content "pwned")))
                          #'agent-q-prompt-tmux-report))))))))

(defconst agent-q-prompt-tmux-test--prompt
  "agent-q[^:\n]*: test-agent (MCP) wants to run write_file"
  "The start of the client's prompt on the screen.")

(ert-deftest agent-q-prompt-tmux-test-typing-never-answers-a-client-call ()
  (let ((target (make-temp-name (expand-file-name "agent-q-prompt-target" temporary-file-directory)))
        (text "Today I wrote notes, yes, a second day as well"))
    (agent-q-prompt-tmux-test--with-emacs session
        (agent-q-prompt-tmux-test--client-call target out 1.0)
      (agent-q-tmux-test--tmux "send-keys" "-t" session "F5")
      (agent-q-tmux-test--wait-screen session "notes")
      ;; The call arrives a second into the typing, which lasts five more.
      (agent-q-prompt-tmux-test--type session text)
      (let ((screen (agent-q-prompt-tmux-test--screen session)))
        ;; No prompt while typing; the mode line counts the call.
        (should-not (string-match-p agent-q-prompt-tmux-test--prompt screen))
        (should (string-match-p "\\[agent-q: 1 pending\\]" screen))
        (should (string-match-p (regexp-quote text) screen)))
      ;; Once the typing has stopped for a moment, the prompt comes, and says
      ;; it was held.
      (let ((screen (agent-q-tmux-test--wait-screen session agent-q-prompt-tmux-test--prompt)))
        (should (string-match-p "held [0-9]+s until you paused" screen)))
      (agent-q-tmux-test--tmux "send-keys" "-t" session "n")
      (let* ((report (car (read-from-string (agent-q-tmux-test--wait-file out))))
             (result (car (plist-get report :results))))
        ;; Every key went to the buffer, nothing was approved.
        (should (equal (plist-get report :notes) text))
        (should-not (plist-get result :success))
        (should (equal (plist-get result :content) "User denied tool execution"))
        (should-not (plist-get report :always))
        (should-not (file-exists-p target))))))

(ert-deftest agent-q-prompt-tmux-test-a-call-arriving-while-idle-is-asked-without-a-key ()
  "A call that arrives while Emacs has long been idle is asked without a key.
The first call is answered at its prompt; the key read there runs no
command, so Emacs's idle period goes on.  An idle timer set for the
second call, seconds later, would wait for the next idle period: for a
key the user has no reason to press."
  (let ((target (make-temp-name (expand-file-name "agent-q-prompt-target" temporary-file-directory))))
    (agent-q-prompt-tmux-test--with-emacs session
        `(progn
           (defvar agent-q-prompt-tmux-results nil)
           (defun agent-q-prompt-tmux-call (id)
             (let ((agent-q-client "test-agent (MCP)"))
               (agent-q-execute-tool-calls-async
                (list (list :id id :name "write_file" :arguments (list :path ,target :content "x")))
                (lambda (results)
                  (push (car results) agent-q-prompt-tmux-results)
                  (when (= 2 (length agent-q-prompt-tmux-results))
                    (with-temp-file ,out (prin1 agent-q-prompt-tmux-results (current-buffer)))
                    (kill-emacs 0))))))
           (global-set-key (kbd "<f5>")
                           (lambda ()
                             (interactive)
                             (run-at-time 1.0 nil #'agent-q-prompt-tmux-call "first")))
           (global-set-key (kbd "<f6>")
                           (lambda ()
                             (interactive)
                             (run-at-time 3.0 nil #'agent-q-prompt-tmux-call "second"))))
      (agent-q-tmux-test--tmux "send-keys" "-t" session "F6")
      (agent-q-tmux-test--tmux "send-keys" "-t" session "F5")
      (agent-q-tmux-test--wait-screen session agent-q-prompt-tmux-test--prompt)
      (agent-q-tmux-test--tmux "send-keys" "-t" session "n")
      ;; The second call comes about two seconds later; nobody presses a key.
      (sleep-for 0.5)
      (agent-q-tmux-test--wait-screen session agent-q-prompt-tmux-test--prompt)
      (agent-q-tmux-test--tmux "send-keys" "-t" session "n")
      (let ((results (car (read-from-string (agent-q-tmux-test--wait-file out)))))
        (should (equal (mapcar (lambda (r) (plist-get r :id)) results) '("second" "first")))
        (should-not (file-exists-p target))))))

(ert-deftest agent-q-prompt-tmux-test-a-call-after-a-synchronous-prompt-is-asked-without-a-key ()
  "A client's call that follows a synchronous prompt is asked without a key.
The synchronous executor, run from a timer, reads the answer to its
prompt with no command running: left in `this-command-keys', that key
looked like a key sequence half typed, and the client's call waited
for the user's next command."
  (let ((target (make-temp-name (expand-file-name "agent-q-prompt-target" temporary-file-directory))))
    (agent-q-prompt-tmux-test--with-emacs session
        `(progn
           (defvar agent-q-prompt-tmux-results nil)
           (defun agent-q-prompt-tmux-note (results)
             (push (car results) agent-q-prompt-tmux-results)
             (when (= 2 (length agent-q-prompt-tmux-results))
               (with-temp-file ,out (prin1 agent-q-prompt-tmux-results (current-buffer)))
               (kill-emacs 0)))
           (defun agent-q-prompt-tmux-call (id)
             (let ((agent-q-client "test-agent (MCP)"))
               (agent-q-execute-tool-calls-async
                (list (list :id id :name "write_file" :arguments (list :path ,target :content "x")))
                #'agent-q-prompt-tmux-note)))
           (global-set-key
            (kbd "<f5>")
            (lambda ()
              (interactive)
              (run-at-time 1.0 nil
                           (lambda ()
                             (let ((agent-q-client "test-agent (MCP)"))
                               (agent-q-prompt-tmux-note
                                (agent-q-execute-tool-calls
                                 (list (list :id "sync" :name "write_file"
                                             :arguments (list :path ,target :content "x"))))))))
              (run-at-time 3.0 nil #'agent-q-prompt-tmux-call "async"))))
      (agent-q-tmux-test--tmux "send-keys" "-t" session "F5")
      (agent-q-tmux-test--wait-screen session agent-q-prompt-tmux-test--prompt)
      (agent-q-tmux-test--tmux "send-keys" "-t" session "n")
      ;; The client's call comes about two seconds later; nobody presses a key.
      (sleep-for 0.5)
      (agent-q-tmux-test--wait-screen session agent-q-prompt-tmux-test--prompt)
      (agent-q-tmux-test--tmux "send-keys" "-t" session "n")
      (let ((results (car (read-from-string (agent-q-tmux-test--wait-file out)))))
        (should (equal (mapcar (lambda (r) (plist-get r :id)) results) '("async" "sync")))
        (should-not (file-exists-p target))))))

(ert-deftest agent-q-prompt-tmux-test-the-minibuffer-keeps-its-keys ()
  (let ((target (make-temp-name (expand-file-name "agent-q-prompt-target" temporary-file-directory))))
    (agent-q-prompt-tmux-test--with-emacs session
        (agent-q-prompt-tmux-test--client-call target out 1.0)
      (agent-q-tmux-test--tmux "send-keys" "-t" session "F5")
      (agent-q-tmux-test--wait-screen session "notes")
      (agent-q-tmux-test--tmux "send-keys" "-t" session "C-x" "b")
      (agent-q-tmux-test--wait-screen session "Switch to buffer")
      ;; The call arrives while the user types the name, and pauses over it.
      (agent-q-prompt-tmux-test--type session "notes.t" 0.3)
      (sleep-for 2.5)
      (let ((screen (agent-q-prompt-tmux-test--screen session)))
        (should-not (string-match-p agent-q-prompt-tmux-test--prompt screen))
        (should (string-match-p "Switch to buffer.*: notes\\.t" screen))
        (should (string-match-p "\\[agent-q: 1 pending\\]" screen)))
      (agent-q-prompt-tmux-test--type session "xt")
      (agent-q-tmux-test--tmux "send-keys" "-t" session "C-e" "Enter")
      ;; The minibuffer is done: the prompt comes once Emacs is idle.
      (agent-q-tmux-test--wait-screen session agent-q-prompt-tmux-test--prompt)
      (agent-q-tmux-test--tmux "send-keys" "-t" session "n")
      (let* ((report (car (read-from-string (agent-q-tmux-test--wait-file out))))
             (result (car (plist-get report :results))))
        (should (equal (plist-get report :buffer) "notes.txt"))
        (should (equal (plist-get result :content) "User denied tool execution"))
        (should-not (file-exists-p target))))))

(ert-deftest agent-q-prompt-tmux-test-type-ahead-never-answers ()
  ;; F6 keeps Emacs busy for two seconds (the user types "y" meanwhile),
  ;; puts "y" in `unread-command-events' too, then runs write_file with
  ;; the synchronous executor: the prompt shows and waits for a new key.
  (let ((target (make-temp-name (expand-file-name "agent-q-prompt-target" temporary-file-directory))))
    (agent-q-prompt-tmux-test--with-emacs session
        `(global-set-key
          (kbd "<f6>")
          (lambda ()
            (interactive)
            (let ((end (+ (float-time) 2)))
              (while (< (float-time) end)))
            (setq unread-command-events (list ?y))
            (let ((results (agent-q-execute-tool-calls
                            '((:id "w" :name "write_file" :arguments (:path ,target :content "x"))))))
              (with-temp-file ,out (prin1 results (current-buffer)))
              (kill-emacs 0))))
      (agent-q-tmux-test--tmux "send-keys" "-t" session "F6")
      (sleep-for 0.5)
      (agent-q-tmux-test--tmux "send-keys" "-t" session "y")
      (agent-q-tmux-test--wait-screen session "agent-q: run write_file \\[dangerous\\]")
      (sleep-for 1)
      (should-not (file-exists-p out))
      (should-not (file-exists-p target))
      (agent-q-tmux-test--tmux "send-keys" "-t" session "n")
      (let ((result (car (car (read-from-string (agent-q-tmux-test--wait-file out))))))
        (should (equal (plist-get result :content) "User denied tool execution"))
        (should-not (file-exists-p target))))))

(ert-deftest agent-q-prompt-tmux-test-bidi-arguments-show-what-runs ()
  ;; eval_form as an MCP client would call it (cautious calls confirmed):
  ;; its bidi controls would hide the write-region; the prompt shows
  ;; escapes and the real code on one line, keys last, and so does v.
  (let ((form "(list \"hi\u202e \u2066\" (write-region \"pwned\" nil \"/tmp/agent-q-pwned\") \"\u2069 \u2066ok\")"))
    (agent-q-prompt-tmux-test--with-emacs session
        `(global-set-key
          (kbd "<f5>")
          (lambda ()
            (interactive)
            (let* ((agent-q-confirm-safety-levels '(:cautious))
                   (results (agent-q-execute-tool-calls
                             '((:id "e" :name "eval_form" :arguments (:form ,form))))))
              (with-temp-file ,out (prin1 results (current-buffer)))
              (kill-emacs 0))))
      (agent-q-tmux-test--tmux "send-keys" "-t" session "F5")
      (let* ((screen (agent-q-tmux-test--wait-screen session "agent-q: run eval_form"))
             ;; The echo area, its screen lines joined where Emacs continued
             ;; them (a backslash in the last column).
             (line (replace-regexp-in-string
                    "\\\\\n" ""
                    (substring screen (string-match "agent-q: run eval_form" screen)))))
        ;; One line: the escapes, the real code, and the keys last.
        (should (string-match-p
                 (regexp-quote "hi\\u202E \\u2066\\\" (write-region \\\"pwned\\\" nil \\\"/tmp/agent-q-pwned\\\") \\\"\\u2069 \\u2066ok")
                 line))
        (should (string-match-p "\\`[^\n]*(s)ave rule (\\?)help: *\n*\\'" line))
        (should-not (string-match-p "[\u202a-\u202e\u2066-\u2069]" screen)))
      (agent-q-tmux-test--tmux "send-keys" "-t" session "v")
      (let ((screen (agent-q-tmux-test--wait-screen session "Arguments:")))
        (should (string-match-p (regexp-quote "hi\\u202E \\u2066") screen))
        (should (string-match-p (regexp-quote "(write-region") screen))
        (should-not (string-match-p "[\u202a-\u202e\u2066-\u2069]" screen)))
      (agent-q-tmux-test--tmux "send-keys" "-t" session "n")
      (let ((result (car (car (read-from-string (agent-q-tmux-test--wait-file out))))))
        (should (equal (plist-get result :content) "User denied tool execution"))
        (should-not (file-exists-p "/tmp/agent-q-pwned"))))))

;;;; A terminal agent's own calls, as the user meets them

(defun agent-q-prompt-tmux-test--gate-calls (out)
  "A setup form: F5 hands the gate two of Claude's shell commands, a second later.
As the agent's hook hands them: each answer is recorded, and once both
are answered they are written to OUT and Emacs exits."
  `(progn
     (require 'agent-q-gate)
     (setq agent-q-gate-notify nil)
     (defvar agent-q-prompt-tmux-answers nil)
     (defun agent-q-prompt-tmux-gate (key command description)
       (agent-q-gate-request
        key
        (list :agent 'claude :event 'pre-tool
              :session "3f2a1b9c-1111-2222-3333-444455556666" :cwd "/tmp/work"
              :tool "Bash" :tool-use-id key
              :input (append (list :command command)
                             (and description (list :description description)))
              :kind (list :kind "shell" :command command :argv nil :dir nil))
        ;; (The setup is loaded with dynamic binding: no closure.)
        (apply-partially #'agent-q-prompt-tmux-answer key)))
     (defun agent-q-prompt-tmux-answer (key decision _detail)
       (push (list key decision) agent-q-prompt-tmux-answers)
       (when (= 2 (length agent-q-prompt-tmux-answers))
         (with-temp-file ,out (prin1 agent-q-prompt-tmux-answers (current-buffer)))
         (kill-emacs 0)))
     (global-set-key
      (kbd "<f5>")
      (lambda ()
        (interactive)
        (run-at-time 1.0 nil
                     (lambda ()
                       (agent-q-prompt-tmux-gate "one" "ls -la" "List the files in the work folder")
                       (agent-q-prompt-tmux-gate "two" "rm -f notes" nil)))))))

(defun agent-q-prompt-tmux-test--joined (screen)
  "SCREEN's lines joined where Emacs continued them.
Emacs continues a line with a backslash in the last column."
  (replace-regexp-in-string "\\\\\n" "" screen))

(ert-deftest agent-q-prompt-tmux-test-an-agents-call-as-the-user-meets-it ()
  "Claude's command in a real terminal: its description, command and folder; ? and v.
The prompt names the session by its short form; ? shows a line of help
for each key; v the whole call; answering closes both windows, so the
next call's prompt shows no earlier call."
  (agent-q-prompt-tmux-test--with-emacs session
      (agent-q-prompt-tmux-test--gate-calls out)
    (agent-q-tmux-test--tmux "send-keys" "-t" session "F5")
    (let ((screen (agent-q-prompt-tmux-test--joined
                   (agent-q-tmux-test--wait-screen session "(\\?)help:"))))
      (should (string-match-p
               (regexp-quote "claude (session 3f2a1b9c) wants to run a command [dangerous]: List the files in the work folder: ls -la [in /tmp/work]  (y)es (n)o")
               screen))
      (should-not (string-match-p "1111-2222\\|:command" screen)))
    (agent-q-tmux-test--tmux "send-keys" "-t" session "?")
    (let ((screen (agent-q-tmux-test--wait-screen session "this help")))
      (should (string-match-p "y    approve this call: claude runs it itself" screen))
      (should (string-match-p (regexp-quote "a    approve it, and from now on, unasked, `ls *` for claude (session 3f2a1b9c)")
                              screen))
      (should (string-match-p "l    later" screen))
      (should-not (string-match-p "is not an answer" screen)))
    (agent-q-tmux-test--tmux "send-keys" "-t" session "v")
    (let ((screen (agent-q-tmux-test--wait-screen session "Arguments:")))
      (should (string-match-p (regexp-quote ":command \"ls -la\"") screen)))
    (agent-q-tmux-test--tmux "send-keys" "-t" session "y")
    (let ((screen (agent-q-prompt-tmux-test--joined
                   (agent-q-tmux-test--wait-screen session "run a command \\[dangerous\\]: rm -f notes"))))
      ;; The windows of the answered call are gone.
      (should-not (string-match-p "Arguments:\\|this help\\|ls -la" screen)))
    (agent-q-tmux-test--tmux "send-keys" "-t" session "n")
    (should (equal (car (read-from-string (agent-q-tmux-test--wait-file out)))
                   '(("two" deny) ("one" allow))))))

;;;; Claude Code's own terminal beside Emacs

(defun agent-q-prompt-tmux-test--claude-setup (dir work)
  "The init code of the Emacs in which Claude Code runs, its hooks gated.
DIR is the test's directory, WORK the agent's working directory."
  `(progn
     (setq inhibit-startup-screen t
           agent-q-audit-file ,(expand-file-name "audit.jsonl" dir)
           agent-q-gate-notify t)
     (require 'agent-q)
     (require 'agent-q-mcp)
     (require 'agent-q-gate)
     (agent-q-gate-mode 1)
     (agent-q-mcp-start)
     (split-window-below 6)
     (other-window 1)
     (let ((default-directory ,(file-name-as-directory work)))
       (ansi-term "/bin/bash"))))

(defun agent-q-prompt-tmux-test--agent-steps (agent work)
  "The scripted model's answers for AGENT.
Three shell commands in WORK, then a text."
  (let ((tool (if (eq agent 'gemini) "run_shell_command" "Bash")))
    `(((tool . ,tool)
       (arguments (command . "ls -la") (description . "List the files in the work folder")))
      ((tool . ,tool) (arguments (command . "ls") (description . "List the names only")))
      ((tool . ,tool)
       (arguments (command . ,(format "touch %s/made-by-agent" work))
                  (description . "Create a file")))
      ((text . "All done.")))))

(defun agent-q-prompt-tmux-test--agent-configure (agent dir home work)
  "Write AGENT's configuration in HOME (DIR for other files) for WORK.
Its hook goes to Emacs.
Return (ARGUMENTS . ENVIRONMENT): the arguments to start it with, and
its environment variables besides the model's URL."
  (let ((env (agent-q-ide-test--configure agent home work))
        (hook (concat agent-q-agents-test--relay (format " hook --agent %s" agent))))
    (pcase agent
      ('claude
       (agent-q-agents-test--write
        (expand-file-name ".claude/settings.json" home)
        (json-encode
         `((hooks
            (PreToolUse
             . [((matcher . "^(?!mcp__agent-q__)")
                 (hooks . [((type . "command") (command . ,hook) (timeout . 600))]))])))))
       (cons nil env))
      ('gemini
       (let ((policy (expand-file-name "policy.toml" dir))
             (settings (expand-file-name ".gemini/settings.json" home)))
         ;; Gemini's own policy lets the shell run: Emacs is the only prompt.
         (agent-q-agents-test--write
          policy "[[rule]]\ntoolName = \"run_shell_command\"\ndecision = \"allow\"\npriority = 900\n")
         (agent-q-agents-test--write
          settings
          (json-encode
           (append (json-read-file settings)
                   `((hooks
                      (BeforeTool
                       . [((matcher . "^(?!mcp_agent-q_)")
                           (hooks . [((type . "command") (command . ,hook)
                                      (timeout . 600000))]))]))))))
         (cons (list "--policy" policy) env))))))

(defun agent-q-prompt-tmux-test--agent-a (agent)
  "AGENT's TUI beside Emacs: a approves `ls *' for its session, no more.
See `agent-q-prompt-tmux-test-claude-a-is-this-command-for-this-session'."
  (agent-q-tmux-test--ensure-tmux)
  (let* ((program (agent-q-agents-test--program agent))
         (dir (file-name-as-directory (make-temp-file "agent-q-prompt-agent" t)))
         (home (expand-file-name "home/" dir))
         (work (expand-file-name "work" dir))
         (session (format "agent-q-prompt-%s-%d" agent (emacs-pid)))
         (setup (expand-file-name "setup.el" dir))
         (lisp-dir (file-name-directory (locate-library "agent-q")))
         (emacs (expand-file-name invocation-name invocation-directory))
         model)
    (unwind-protect
        (let ((configured nil))
          (make-directory (expand-file-name "tmp" home) t)
          (make-directory work t)
          (setq model (agent-q-agents-test--start-model
                       dir (agent-q-agents-test--prop agent :dialect)
                       (agent-q-prompt-tmux-test--agent-steps agent work)))
          (setq configured (agent-q-prompt-tmux-test--agent-configure agent dir home work))
          (with-temp-file setup
            (prin1 (agent-q-prompt-tmux-test--claude-setup dir work) (current-buffer)))
          (agent-q-tmux-test--tmux
           "new-session" "-d" "-s" session "-x" "200" "-y" "50"
           (mapconcat #'shell-quote-argument
                      (append (list "env" "-i")
                              (agent-q-agents-test--environment
                               home (cons (agent-q-ide-test--model-variable agent (nth 1 model))
                                          (cdr configured)))
                              (agent-q-tmux-test--emacs-variables)
                              (list (concat "PATH=" (file-name-directory program) ":"
                                            (agent-q-agents-test--path))
                                    "TERM=xterm-256color"
                                    emacs "-nw" "-Q" "-L" lisp-dir "-l" setup))
                      " "))
          (agent-q-ide-test--wait-screen session "(Term: char run)")
          (sleep-for 1)
          (agent-q-ide-test--type session (mapconcat #'shell-quote-argument
                                                     (cons (file-name-nondirectory program)
                                                           (car configured))
                                                     " "))
          (agent-q-ide-test--wait-screen session (if (eq agent 'gemini)
                                                     "Type your message"
                                                   "for shortcuts\\|? for"))
          (sleep-for 2)
          (agent-q-ide-test--type session "List the files")
          ;; Emacs asks, showing the agent's own description, the command, the folder.
          (let ((screen (agent-q-prompt-tmux-test--joined
                         (agent-q-ide-test--wait-screen session "(\\?)help:"))))
            (should (string-match-p
                     (format (concat "%s (session [0-9a-f]\\{8\\}) wants to run a command \\[dangerous\\]: "
                                     "List the files in the work folder: ls -la \\[in ")
                             agent)
                     screen)))
          (agent-q-tmux-test--tmux "send-keys" "-t" session "a")
          (agent-q-ide-test--wait-screen
           session (format "Approve `ls \\*` for %s (session [0-9a-f]\\{8\\}), unasked" agent))
          (sleep-for 1)
          (agent-q-tmux-test--tmux "send-keys" "-t" session "!")
          ;; ls ran unasked (the grant covers it); touch is asked.
          (let ((screen (agent-q-prompt-tmux-test--joined
                         (agent-q-ide-test--wait-screen session "Create a file: touch"))))
            (should-not (string-match-p "List the names only" screen)))
          (agent-q-tmux-test--tmux "send-keys" "-t" session "n")
          ;; The agent has asked its model the last time: what it was told of
          ;; touch is the denial.  (Its screen, drawn by a terminal in Emacs,
          ;; may garble a line it redraws: only lines it writes once are read.)
          (agent-q-ide-test--wait-requests (nth 2 model) 4)
          (if (eq agent 'claude)
              (agent-q-ide-test--wait-screen
               session "Bash(touch [^\n]*made-by-agent)\n *⎿ *Error: User +denied tool execution")
            (agent-q-ide-test--wait-screen session "✓ +Shell ls -la"))
          ;; What the model was told of touch: denied in Emacs.
          (let ((last (json-encode (car (last (agent-q-ide-test--step-requests (nth 2 model)))))))
            (should (string-match-p "[Dd]enied" last)))
          (should-not (file-exists-p (expand-file-name "made-by-agent" work)))
          ;; The audit: the first by the user, the second without asking, the third denied.
          (let ((audit (agent-q-agents-test--json-lines (expand-file-name "audit.jsonl" dir))))
            (should (equal (mapcar (lambda (r) (alist-get 'command (alist-get 'arguments r)))
                                   (cl-remove-if-not
                                    (lambda (r) (member (alist-get 'event r) '("result" "denied")))
                                    audit))
                           (list "ls -la" "ls" (format "touch %s/made-by-agent" work))))))
      (if (getenv "AGENT_Q_IDE_TEST_KEEP")
          (message "Kept %s and the tmux session %s" dir session)
        (call-process "tmux" nil nil nil "kill-session" "-t" session)
        (when model (ignore-errors (delete-process (car model))))
        (ignore-errors (delete-directory dir t))))))

(ert-deftest agent-q-prompt-tmux-test-claude-a-is-this-command-for-this-session ()
  "Claude Code's TUI beside Emacs: a approves `ls *' for its session, no more.
The real Claude Code runs in a terminal in an `emacs -nw'; its hook asks
that Emacs.  The first command is answered with a and !, the second
\(covered) runs unasked, the third (another command) is asked and denied;
Claude's screen shows the denial."
  (agent-q-prompt-tmux-test--agent-a 'claude))

(ert-deftest agent-q-prompt-tmux-test-gemini-a-is-this-command-for-this-session ()
  "Gemini CLI's TUI beside Emacs: as for Claude Code."
  (agent-q-prompt-tmux-test--agent-a 'gemini))

(provide 'agent-q-prompt-tmux-test)

;;; agent-q-prompt-tmux-test.el ends here
