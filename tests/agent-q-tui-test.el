;;; agent-q-tui-test.el --- Where to look while a call waits for Emacs  -*- lexical-binding: t -*-

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

;; While an agent's own call waits for the user's answer in Emacs, the
;; user learns it where they look:
;;
;; - in the agent's own terminal: the real Claude Code, Gemini CLI and
;;   Codex CLI TUIs run in tmux, their hook written by `agent-q-gate-connect-agent', a
;;   scripted model (tests/fake-agent-model.py) asks for a shell
;;   command; while Emacs holds it, the pane says the call waits for
;;   Emacs, and once answered the words are gone;
;; - in the edit review's header line: the time the agent still waits,
;;   and that the time is up once it is;
;; - and the whole of it as a user meets it: the real Claude Code (and
;;   Gemini CLI) TUI in one tmux pane, an interactive `emacs -nw' with
;;   agent-q in the other, both driven by keys and read from their
;;   panes (the prompt, `e', `r', `a' and `agent-q-grants', a review
;;   hunk by hunk, .mcp.json).

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-q)
(require 'agent-q-gate)
(require 'agent-q-review)
(require 'agent-q-connect)
(require 'agent-q-tmux-test)
(require 'agent-q-agents-test)
(require 'agent-q-gate-test)
(require 'agent-q-gate-edit-test)
(require 'agent-q-ide-test)

;;;; The edit review counts down

(defun agent-q-tui-test--header ()
  "The current buffer's header line, as the display computes it.
`format-mode-line' draws nothing in batch Emacs: the header line's
:eval form is evaluated as the display does."
  (should (eq (car-safe header-line-format) :eval))
  (eval (cadr header-line-format) t))

(ert-deftest agent-q-tui-test-review-counts-down ()
  "The review of an agent's edit shows how long the agent still waits.
Its hook gives up after `:wait-secs' (the connect command's hook
timeout): the header line says the time left, kept current by a timer
while the review is open, and that the time is up once it is; finishing
the review stops the timer."
  (agent-q-gate-edit-test--with-file (root file)
    (agent-q-gate-test--with-gate #'ignore
      (let* ((agent-q-prompt-deadline-function #'agent-q-gate--deadline)
             (headers nil)
             (clock nil)
             (agent-q-review--review-driver
              (lambda (buffer)
                (with-current-buffer buffer
                  (let ((review agent-q-review--this-review))
                    (push (agent-q-tui-test--header) headers)
                    (setq clock (agent-q-review--review-clock review))
                    ;; Its timer is what keeps the header current.
                    (should (memq clock timer-list))
                    ;; The time runs out.
                    (setf (agent-q-review--review-deadline review) (- (float-time) 1))
                    (push (agent-q-tui-test--header) headers)
                    (fillarray (agent-q-review--review-decisions review) 'accept)
                    (agent-q-review--finish review))))))
        (agent-q-gate-request
         1 (list :agent 'claude :event 'pre-tool :session "s1" :cwd root
                 :tool "Write" :tool-use-id "t1" :wait-secs 90
                 :input (list :file_path file :content agent-q-gate-edit-test--new)
                 :kind (list :kind "write" :path file :content agent-q-gate-edit-test--new)))
        (should (eq (car (agent-q-gate-test--answer 1)) 'allow))
        (setq headers (nreverse headers))
        (should (= (length headers) 2))
        (should (string-match-p "\\`Progress: 0 accepted, 0 rejected, 2 pending (of 2)  \\[\\? help\\]  the agent waits 1:[23][0-9] more\\'"
                                (nth 0 headers)))
        (should (string-match-p "time is up: the agent no longer waits, nothing is written\\'"
                                (nth 1 headers)))
        (should-not (memq clock timer-list))))))

(ert-deftest agent-q-tui-test-review-without-a-deadline-shows-no-time ()
  "A review no agent's timeout limits (an MCP client's edit) shows no time left."
  (agent-q-gate-edit-test--with-file (root file)
    (let* ((agent-q-prompt-deadline-function nil)
           (header nil)
           (agent-q-review--review-driver
            (lambda (buffer)
              (with-current-buffer buffer
                (setq header (agent-q-tui-test--header))
                (should-not (agent-q-review--review-clock agent-q-review--this-review))
                (agent-q-review--finish agent-q-review--this-review t)))))
      (agent-q-review-merge-async file agent-q-gate-edit-test--old agent-q-gate-edit-test--new
                                  #'ignore "test-agent")
      (should (equal header "Progress: 0 accepted, 0 rejected, 2 pending (of 2)  [? help]")))))

;;;; The agent's own terminal

(defconst agent-q-tui-test--cue (regexp-quote "Waiting for Emacs (agent-q)...")
  "What the agents' terminals show while a call waits for Emacs.")

(defvar agent-q-tui-test--session nil
  "The tmux session of the agent under test.")

(defvar agent-q-tui-test--screens nil
  "The agent's screen each time Emacs was asked, newest first.")

(defun agent-q-tui-test--screen ()
  "The text on the agent's terminal."
  (agent-q-tmux-test--tmux "capture-pane" "-p" "-t" agent-q-tui-test--session))

(defun agent-q-tui-test--submit (text)
  "Type TEXT into the agent's prompt and submit it.
Enter is pressed once the text shows in the prompt: keys the TUI reads
in one burst with the text would be taken for a paste.  An Enter the
TUI takes for the end of a paste stays in its prompt: Enter is pressed
again while the text still waits there, for up to a minute."
  (agent-q-tmux-test--tmux "send-keys" "-t" agent-q-tui-test--session "-l" text)
  (agent-q-ide-test--wait-screen agent-q-tui-test--session (regexp-quote text) 60)
  (let ((tries 0))
    (while (progn
             (sleep-for 1)
             (agent-q-tmux-test--tmux "send-keys" "-t" agent-q-tui-test--session "Enter")
             (sleep-for 2)
             (and (< (cl-incf tries) 20)
                  (null agent-q-tui-test--screens)
                  (string-match-p (concat "[›❯>] " (regexp-quote text) " *\n")
                                  (agent-q-tui-test--screen)))))))

(defun agent-q-tui-test--approve (tool args)
  "Hold the call of TOOL with ARGS until the cue is on the agent's terminal.
As a user would, look at the agent's terminal while Emacs asks; record
what it shows, then approve."
  (ignore tool args)
  (let ((deadline (+ (float-time) 60)) (screen ""))
    (while (and (not (string-match-p agent-q-tui-test--cue screen)) (< (float-time) deadline))
      (sleep-for 0.3)
      (setq screen (agent-q-tui-test--screen)))
    (push screen agent-q-tui-test--screens))
  :approved)

(defun agent-q-tui-test--kill-agent (dir)
  "Kill the agent of the test's tmux session, and what it left running.
Its process tree from the pane's shell, and any process whose command
line names DIR: Codex CLI's TUI starts an app server daemon of its own
from its home, which outlives it; Gemini CLI outlives the hangup of a
killed tmux session."
  (let* ((pane (ignore-errors
                 (string-to-number
                  (agent-q-tmux-test--tmux "display-message" "-p" "-t" agent-q-tui-test--session
                                           "#{pane_pid}"))))
         (all (mapcar (lambda (p) (cons p (process-attributes p))) (list-system-processes)))
         (doomed (cl-remove-if-not
                  (lambda (p) (string-search dir (or (alist-get 'args (cdr p)) "")))
                  all))
         (tree (append (and pane (> pane 0) (list pane)) (mapcar #'car doomed)))
         (grew t))
    (while grew
      (setq grew nil)
      (dolist (p all)
        (when (and (memq (alist-get 'ppid (cdr p)) tree) (not (memq (car p) tree)))
          (push (car p) tree)
          (setq grew t))))
    (dolist (p tree) (ignore-errors (signal-process p 'TERM)))
    (sleep-for 0.5)
    (dolist (p tree)
      (when (process-attributes p) (ignore-errors (signal-process p 'KILL))))))

(defvar agent-q-tui-test--codex-policy "never"
  "The approval_policy of Codex's config.toml in the TUI tests.")

(defun agent-q-tui-test--configure (agent home work model)
  "Write AGENT's own configuration in HOME for WORK and its MODEL's URL.
Then connect its hook with `agent-q-gate-connect-agent', as a user does.
Return the environment to run it with, besides HOME and PATH."
  (pcase agent
    ('claude
     ;; No onboarding, no trust or API key dialog.
     (prog1 (cons (concat "ANTHROPIC_BASE_URL=" model)
                  (agent-q-ide-test--configure agent home work))
       (agent-q-gate-test--connect agent home)))
    ('gemini
     (agent-q-agents-test--write
      (expand-file-name ".gemini/settings.json" home)
      (json-encode
       '((security (folderTrust (enabled . :json-false))
                   (auth (selectedType . "gemini-api-key")))
         (general (enableAutoUpdate . :json-false) (enableAutoUpdateNotification . :json-false))
         (privacy (usageStatisticsEnabled . :json-false))
         (telemetry (enabled . :json-false)))))
     (agent-q-gate-test--connect agent home)
     (list (concat "GOOGLE_GEMINI_BASE_URL=" model) "GEMINI_API_KEY=scripted"))
    ('codex
     (let ((codex-home (expand-file-name ".codex" home)))
       (agent-q-agents-test--write
        (expand-file-name "config.toml" codex-home)
        (concat (replace-regexp-in-string
                 "^approval_policy = \"never\"$"
                 (format "approval_policy = %S" agent-q-tui-test--codex-policy)
                 (agent-q-agents-test--codex-config model) t t)
                ;; No trust dialog for the work folder.
                (format "[projects.%S]\ntrust_level = \"trusted\"\n" (directory-file-name work))))
       ;; The hook, trusted in config.toml as Codex's /hooks screen records it.
       (agent-q-gate-test--connect agent home)
       (list (concat "CODEX_HOME=" codex-home) "AGENT_Q_TEST_MODEL_KEY=scripted")))))

(defun agent-q-tui-test--says-it-waits (agent ready)
  "Check the words on AGENT's TUI while its shell command waits in Emacs.
READY matches its screen once it takes a prompt, which is then typed;
with READY nil the prompt is the TUI's first argument.  The command
runs once approved, and the words are gone from the screen."
  (agent-q-tmux-test--ensure-tmux)
  (let* ((program (agent-q-agents-test--program agent))
         (dir (file-name-as-directory (make-temp-file "agent-q-tui" t)))
         (home (expand-file-name "home/" dir))
         (work (expand-file-name "work/" dir))
         (agent-q-mcp-connection-file (expand-file-name "connection.json" dir))
         (agent-q-audit-file (expand-file-name "audit.jsonl" dir))
         (agent-q-approval-function #'agent-q-tui-test--approve)
         (agent-q-approval-rules nil)
         (agent-q-prompt--session-approved nil)
         (agent-q-gate-notify nil)
         (agent-q-mcp-port 0)
         (agent-q-tui-test--session (format "agent-q-tui-%s-%d" agent (emacs-pid)))
         (agent-q-tui-test--screens nil)
         (made (expand-file-name "made-by-agent" work))
         model)
    (unwind-protect
        (progn
          (make-directory (expand-file-name "tmp" home) t)
          (make-directory work t)
          (agent-q-gate-mode 1)
          (agent-q-mcp-start)
          (setq model (agent-q-agents-test--start-model
                       dir (agent-q-agents-test--prop agent :dialect)
                       (list (agent-q-gate-test--shell-step agent (format "touch %s" made))
                             '((text . "All done.")))))
          (let ((environment (agent-q-tui-test--configure
                              agent home work (format "http://127.0.0.1:%d" (nth 1 model)))))
            (agent-q-tmux-test--tmux
             "new-session" "-d" "-s" agent-q-tui-test--session "-x" "200" "-y" "50"
             "-c" work
             (mapconcat #'shell-quote-argument
                        (append (list "env" "-i")
                                (agent-q-agents-test--environment home environment)
                                ;; A terminal the TUI can draw on.
                                (list "TERM=xterm-256color" "COLORTERM=truecolor" program)
                                (and (not ready) (list "Make the file")))
                        " ")))
          (when ready
            (agent-q-ide-test--wait-screen agent-q-tui-test--session ready 90)
            (sleep-for 1)
            (agent-q-tui-test--submit "Make the file"))
          ;; The command waits in Emacs: the agent's terminal says so.
          (agent-q-ide-test--wait-screen agent-q-tui-test--session "All done\\." 120)
          (should (= (length agent-q-tui-test--screens) 1))
          (should (string-match-p agent-q-tui-test--cue (car agent-q-tui-test--screens)))
          (should (file-exists-p made))
          ;; Answered: the words are gone (Gemini keeps a hook's name shown
          ;; for three seconds after it started).
          (let ((deadline (+ (float-time) 30)) (screen (agent-q-tui-test--screen)))
            (while (and (string-match-p agent-q-tui-test--cue screen) (< (float-time) deadline))
              (sleep-for 0.3)
              (setq screen (agent-q-tui-test--screen)))
            (should-not (string-match-p agent-q-tui-test--cue screen))
            (should (string-match-p "All done\\." screen))))
      (if (getenv "AGENT_Q_IDE_TEST_KEEP")
          (message "Kept %s and the tmux session %s" dir agent-q-tui-test--session)
        (agent-q-tui-test--kill-agent dir)
        (call-process "tmux" nil nil nil "kill-session" "-t" agent-q-tui-test--session)
        (agent-q-mcp-stop)
        (agent-q-gate-mode -1)
        (when model (ignore-errors (delete-process (car model))))
        (ignore-errors (delete-directory dir t))))))

(ert-deftest agent-q-tui-test-claude-says-it-waits-for-emacs ()
  "Claude Code's TUI: its status line, agent-q's, says \"Waiting for Emacs\".
Claude Code shows nothing of a running PreToolUse hook but the call;
its status line command is re-run every second."
  (agent-q-tui-test--says-it-waits 'claude "for agents\\|for shortcuts"))

(ert-deftest agent-q-tui-test-gemini-says-it-waits-for-emacs ()
  "Gemini CLI's TUI: \"Executing Hook: Waiting for Emacs (agent-q)...\"."
  (agent-q-tui-test--says-it-waits 'gemini "Type your message"))

(ert-deftest agent-q-tui-test-codex-says-it-waits-for-emacs ()
  "Codex CLI's TUI: \"Working (...) · Waiting for Emacs (agent-q)...\".
Codex draws its composer (\"Ask Codex to do anything\", \"? for
shortcuts\") at once, but reads no key until its session is
configured, seconds later on a loaded machine, when its footer names
the model and says \"for agents\".  Keys typed before then are read
in one burst, the text and its Enter together, and the Enter is lost:
the prompt stays in the composer, unsent.  So the prompt is typed once
the footer shows, and sent once the composer shows it."
  (agent-q-tui-test--says-it-waits 'codex "for agents"))

;;;; Codex with Emacs away: denied where Codex itself would not ask

(defun agent-q-tui-test--codex-away (policy)
  "The real Codex TUI under approval_policy POLICY, its hook's Emacs away.
The hook, written by `agent-q-gate-connect-agent', names a connection
file that no Emacs has written.  Under \"never\" and \"on-request\"
Codex runs a command that fits its sandbox without asking, so the hook
denies it: nothing runs, no prompt of Codex's shows, and the model is
told why, naming the policy and how to go on.  (`codex exec' runs
under never whatever its configuration says: only the TUI shows
on-request.)"
  (agent-q-tmux-test--ensure-tmux)
  (let* ((dir (file-name-as-directory (make-temp-file "agent-q-tui" t)))
         (home (expand-file-name "home/" dir))
         (work (expand-file-name "work/" dir))
         (agent-q-mcp-connection-file (expand-file-name "connection.json" dir))
         (agent-q-tui-test--codex-policy policy)
         (agent-q-tui-test--session (format "agent-q-tui-away-%s-%d" policy (emacs-pid)))
         (made (expand-file-name "made-by-agent" work))
         model)
    (unwind-protect
        (progn
          (make-directory (expand-file-name "tmp" home) t)
          (make-directory work t)
          (setq model (agent-q-agents-test--start-model
                       dir (agent-q-agents-test--prop 'codex :dialect)
                       (list (agent-q-gate-test--shell-step 'codex (format "touch %s" made))
                             '((text . "All done.")))))
          (let ((environment (agent-q-tui-test--configure
                              'codex home work (format "http://127.0.0.1:%d" (nth 1 model)))))
            (should-not (file-exists-p agent-q-mcp-connection-file))
            (agent-q-tmux-test--tmux
             "new-session" "-d" "-s" agent-q-tui-test--session "-x" "200" "-y" "50"
             "-c" work
             (mapconcat #'shell-quote-argument
                        (append (list "env" "-i")
                                (agent-q-agents-test--environment home environment)
                                (list "TERM=xterm-256color" "COLORTERM=truecolor"
                                      (agent-q-agents-test--program 'codex) "Make the file"))
                        " ")))
          (let ((screen (agent-q-ide-test--wait-screen agent-q-tui-test--session
                                                       "All done\\." 120)))
            (should-not (string-match-p "Would you like to run" screen))
            (should-not (file-exists-p made))
            (let ((result (json-encode (alist-get 'body (nth 1 (agent-q-ide-test--step-requests
                                                                 (nth 2 model)))))))
              (should (string-match-p "agent-q could not ask Emacs" result))
              (should (string-match-p (format "approval policy is %s" policy) result))
              (should (string-match-p "agent-q-gate-disconnect-agent" result)))))
      (if (getenv "AGENT_Q_IDE_TEST_KEEP")
          (message "Kept %s and the tmux session %s" dir agent-q-tui-test--session)
        (agent-q-tui-test--kill-agent dir)
        (call-process "tmux" nil nil nil "kill-session" "-t" agent-q-tui-test--session)
        (when model (ignore-errors (delete-process (car model))))
        (ignore-errors (delete-directory dir t))))))

(ert-deftest agent-q-tui-test-codex-away-never-denies ()
  "Codex's TUI, approval_policy never, Emacs away: denied, saying why.
See `agent-q-tui-test--codex-away'."
  (agent-q-tui-test--codex-away "never"))

(ert-deftest agent-q-tui-test-codex-away-on-request-denies ()
  "Codex's TUI, approval_policy on-request, Emacs away: denied, saying why.
See `agent-q-tui-test--codex-away'."
  (agent-q-tui-test--codex-away "on-request"))

(ert-deftest agent-q-tui-test-codex-has-no-untrusted-policy ()
  "The pinned Codex CLI refuses approval_policy untrusted, as the manual says.
That is the one policy under which Codex itself asks before every
command, where the hook, Emacs away, would leave the call to Codex's
prompt: with the pinned Codex that branch cannot be reached, and a
call is denied whenever Emacs is away.  Codex does not start: nothing
runs, its model is never asked."
  (let* ((dir (file-name-as-directory (make-temp-file "agent-q-tui" t)))
         (home (expand-file-name "home/" dir))
         (work (expand-file-name "work/" dir))
         (agent-q-mcp-connection-file (expand-file-name "connection.json" dir))
         (agent-q-tui-test--codex-policy "untrusted")
         (made (expand-file-name "made-by-agent" work))
         model)
    (unwind-protect
        (progn
          (make-directory (expand-file-name "tmp" home) t)
          (make-directory work t)
          (setq model (agent-q-agents-test--start-model
                       dir (agent-q-agents-test--prop 'codex :dialect)
                       (list (agent-q-gate-test--shell-step 'codex (format "touch %s" made))
                             '((text . "All done.")))))
          (let* ((environment (agent-q-tui-test--configure
                               'codex home work (format "http://127.0.0.1:%d" (nth 1 model))))
                 (process-environment (agent-q-agents-test--environment home environment))
                 (default-directory work)
                 (status nil))
            (with-temp-buffer
              (setq status (call-process (agent-q-agents-test--program 'codex) nil t nil
                                         "exec" "--skip-git-repo-check" "Make the file"))
              (should-not (eq status 0))
              (should (string-search
                       "approval_policy = \"untrusted\" is no longer supported"
                       (buffer-string))))
            (should-not (file-exists-p made))
            (should-not (agent-q-ide-test--step-requests (nth 2 model)))))
      (when model (ignore-errors (delete-process (car model))))
      (ignore-errors (delete-directory dir t)))))

;;;; Claude Code's TUI beside an `emacs -nw', as a user meets them

;; One tmux window, two panes: above, an interactive `emacs -nw -Q'
;; that loads agent-q as the README says, serves MCP and gates the
;; agents' own tools, its hook written with M-x agent-q-gate-connect-agent;
;; below, the real Claude Code TUI, driven by the scripted model.  Both
;; are driven by keys, and read from their panes.

(defun agent-q-tui-test--pane (session pane)
  "The text on PANE (0: Emacs, 1: the agent) of SESSION, lines joined.
Emacs continues a long line with a backslash in the last column."
  (replace-regexp-in-string
   "\\\\\n" ""
   (agent-q-tmux-test--tmux "capture-pane" "-p" "-t" (format "%s:0.%d" session pane))))

(defun agent-q-tui-test--wait-pane (session pane regexp &optional seconds)
  "Wait up to SECONDS (default 120) until PANE of SESSION matches REGEXP.
Return the pane's text; fail the test, showing both panes, if it never does."
  (let ((screen "") (deadline (+ (float-time) (or seconds 120))) (case-fold-search nil))
    (while (and (not (string-match-p regexp screen)) (< (float-time) deadline))
      (sleep-for 0.3)
      (setq screen (agent-q-tui-test--pane session pane)))
    (unless (string-match-p regexp screen)
      (ert-fail (list "The pane never showed" pane regexp
                      (ignore-errors (agent-q-tui-test--pane session 0))
                      (ignore-errors (agent-q-tui-test--pane session 1)))))
    screen))

(defun agent-q-tui-test--keys (session pane &rest keys)
  "Send KEYS to PANE of SESSION, one `tmux send-keys' each, a moment apart."
  (dolist (key keys)
    (agent-q-tmux-test--tmux "send-keys" "-t" (format "%s:0.%d" session pane) key)
    (sleep-for 0.3)))

(defun agent-q-tui-test--text (session pane text)
  "Type TEXT literally into PANE of SESSION."
  (agent-q-tmux-test--tmux "send-keys" "-t" (format "%s:0.%d" session pane) "-l" text)
  (sleep-for 0.5))

(defun agent-q-tui-test--mx (session command &optional answer)
  "Type COMMAND's name after \\[execute-extended-command] in SESSION's Emacs.
Then ANSWER its question, if given."
  (agent-q-tui-test--wait-pane session 0 "scratch\\|agent-q")
  (agent-q-tui-test--keys session 0 "M-x")
  (agent-q-tui-test--wait-pane session 0 "M-x$")
  (agent-q-tui-test--text session 0 command)
  (agent-q-tui-test--keys session 0 "Enter")
  (when answer
    (sleep-for 1)
    (agent-q-tui-test--text session 0 answer)
    (agent-q-tui-test--keys session 0 "Enter")))

(defun agent-q-tui-test--pass-steps (agent work turn)
  "The scripted model's script for TURN (1 or 2) of AGENT in WORK, as JSON."
  (let* ((f (expand-file-name "f.txt" work))
         (claude (eq agent 'claude))
         (bash (lambda (command description)
                 `((tool . ,(if claude "Bash" "run_shell_command"))
                   (arguments (command . ,command) (description . ,description))))))
    (json-encode
     (pcase turn
       (1 `((prompt . "Make the files")
            (steps . [,(funcall bash "touch one.txt" "Make the first file")
                      ,(funcall bash "touch two.txt" "Make the second file")
                      ,(funcall bash "ls -la" "List the files in the work folder")
                      ,(funcall bash "ls" "List the names only")
                      ((text . "Turn one is done."))])))
       (2 `((prompt . "Now edit them")
            (steps . ,(vconcat
                       (list (funcall bash "ls" "List the names again"))
                       ;; Claude edits only a file it has read.
                       (and claude `(((tool . "Read") (arguments (file_path . ,f)))))
                       `(((tool . ,(if claude "Edit" "replace"))
                          (arguments (file_path . ,f)
                                     ,@(and (not claude) '((instruction . "Two changes")))
                                     (old_string . ,agent-q-gate-edit-test--old-span)
                                     (new_string . ,agent-q-gate-edit-test--new-span)))
                         ((tool . ,(if claude "Write" "write_file"))
                          (arguments (file_path . ,(expand-file-name ".mcp.json" work))
                                     (content . "{\"mcpServers\":{}}\n")))
                         ((text . "All done.")))))))))))

(defun agent-q-tui-test--header-seconds (screen)
  "The seconds left to the agent's wait in the review header on SCREEN, or nil."
  (and (string-match "the agent waits \\([0-9]+\\):\\([0-9][0-9]\\) more" screen)
       (+ (* 60 (string-to-number (match-string 1 screen)))
          (string-to-number (match-string 2 screen)))))

(defun agent-q-tui-test--beside-emacs-nw (agent)
  "AGENT's real TUI beside an interactive `emacs -nw', both read.
Emacs loads agent-q as the README says; `agent-q-gate-connect-agent'
writes AGENT's hook.  First turn: while Emacs asks about the agent's
first command, the agent's pane says it waits for Emacs, and Emacs's
prompt shows the agent's description, the command, the folder and
the time left; `e' edits the command, Emacs says that the agent's
display will not show the edit, and the agent's model is told (Claude's
what ran, Gemini's that a hook changed the call); `r' denies the
second with a reason its model reads; `a' approves the third and the
fourth, covered, runs unasked.  `agent-q-grants' withdraws that
grant: in the second turn, the same command is asked again.  Then a
two-hunk edit is reviewed hunk by hunk (the header counting down the
agent's wait), lands exactly as reviewed, and a write to .mcp.json is
reviewed, its header saying it is protected."
  (agent-q-tmux-test--ensure-tmux)
  (let* ((program (agent-q-agents-test--program agent))
         (claude (eq agent 'claude))
         (dir (file-name-as-directory (make-temp-file "agent-q-tui-pass" t)))
         (home (expand-file-name "home/" dir))
         (work (expand-file-name "work/" dir))
         (audit (expand-file-name "audit.jsonl" dir))
         (session (format "agent-q-tui-pass-%d" (emacs-pid)))
         (setup (expand-file-name "setup.el" dir))
         (lisp-dir (file-name-directory (locate-library "agent-q")))
         (emacs (expand-file-name invocation-name invocation-directory))
         ;; The scripted model serves both turns.
         (agent-q-agents-test--timeout 900)
         (script (expand-file-name "model-script.json" dir))
         (f (expand-file-name "f.txt" work))
         model)
    (unwind-protect
        (let (environment short)
          (make-directory (expand-file-name "tmp" home) t)
          (make-directory work t)
          (agent-q-agents-test--write f agent-q-gate-edit-test--old)
          (setq model (agent-q-agents-test--start-model
                       dir (agent-q-agents-test--prop agent :dialect) nil))
          (agent-q-agents-test--write script (agent-q-tui-test--pass-steps agent work 1))
          ;; The agent's own configuration: no onboarding, no trust dialog.
          (setq environment
                (cons (agent-q-ide-test--model-variable agent (nth 1 model))
                      (if claude
                          (agent-q-ide-test--configure agent home work)
                        (agent-q-agents-test--write
                         (expand-file-name ".gemini/settings.json" home)
                         (json-encode
                          '((security (folderTrust (enabled . :json-false))
                                      (auth (selectedType . "gemini-api-key")))
                            (general (enableAutoUpdate . :json-false)
                                     (enableAutoUpdateNotification . :json-false))
                            (privacy (usageStatisticsEnabled . :json-false))
                            (telemetry (enabled . :json-false)))))
                        (list "GEMINI_API_KEY=scripted"))))
          ;; The Emacs: as the README says, then its audit kept with the test.
          (with-temp-file setup
            (prin1 `(progn
                      (setq inhibit-startup-screen t)
                      (add-to-list 'load-path ,lisp-dir)
                      (require 'agent-q)
                      (setq agent-q-audit-file ,audit)
                      (agent-q-mcp-mode 1)
                      (agent-q-gate-mode 1))
                   (current-buffer)))
          (agent-q-tmux-test--tmux
           "new-session" "-d" "-s" session "-x" "150" "-y" "80" "-c" work
           ;; Narrower than `split-width-threshold': windows split one above
           ;; the other, their lines as wide as the terminal.
           (mapconcat #'shell-quote-argument
                      (append (list "env" "-i")
                              (agent-q-agents-test--environment home environment)
                              (agent-q-tmux-test--emacs-variables)
                              (list "TERM=xterm-256color" emacs "-nw" "-Q" "-l" setup))
                      " "))
          (agent-q-tui-test--wait-pane session 0 "scratch")
          ;; The agent's hook, by the documented command (the agent's name
          ;; typed as its program is named: case does not matter).
          (agent-q-tui-test--mx session "agent-q-gate-connect-agent" (symbol-name agent))
          (let ((settings (if claude ".claude/settings.json" ".gemini/settings.json")))
            (agent-q-tui-test--wait-pane
             session 0 (concat "agent-q: wrote ~/" (regexp-quote settings)))
            (should (string-match-p (format "agent-q-mcp['\"]? hook --agent %s" agent)
                                    (agent-q-agents-test--read
                                     (expand-file-name settings home)))))
          ;; The agent below Emacs.
          (agent-q-tmux-test--tmux
           "split-window" "-v" "-t" (format "%s:0.0" session) "-l" "40" "-c" work
           (mapconcat #'shell-quote-argument
                      (append (list "env" "-i")
                              (agent-q-agents-test--environment home environment)
                              (list "TERM=xterm-256color" "COLORTERM=truecolor" program))
                      " "))
          (agent-q-tui-test--wait-pane
           session 1 (if claude "for agents\\|for shortcuts" "Type your message") 180)
          (sleep-for 2)
          (agent-q-tui-test--text session 1 "Make the files")
          (agent-q-tui-test--keys session 1 "Enter")
          ;; 1. Emacs asks; Claude's terminal says where.
          (let ((asked (agent-q-tui-test--wait-pane session 0 "(\\?)help:" 180)))
            (should (string-match-p
                     (concat "agent-q (the agent waits [0-9]+:[0-9][0-9] more): "
                             (format "%s (session \\([0-9a-f]\\{8\\}\\)) " agent)
                             "wants to run a command \\[dangerous\\]: "
                             "Make the first file: touch one\\.txt \\[in "
                             (regexp-quote (abbreviate-file-name (directory-file-name work))))
                     asked))
            (string-match (format "%s (session \\([0-9a-f]\\{8\\}\\))" agent) asked)
            (setq short (match-string 1 asked)))
          (agent-q-tui-test--wait-pane session 1 agent-q-tui-test--cue 60)
          ;; e: the command edited in Emacs.
          (agent-q-tui-test--keys session 0 "e")
          ;; Said before the edit is accepted, where it stays in view.
          (agent-q-tui-test--wait-pane
           session 0 (regexp-quote (concat "C-c C-c accepts the edit, C-c C-k cancels it.  "
                                          (if claude
                                              "The agent still displays its own command, not your edit"
                                            "The agent shows your edit"))))
          (agent-q-tui-test--keys session 0 "C-s")
          (agent-q-tui-test--text session 0 "one.txt")
          (agent-q-tui-test--keys session 0 "Enter" "C-b" "C-b" "C-b" "C-b" "BSpace" "BSpace" "BSpace")
          (agent-q-tui-test--text session 0 "edited")
          (agent-q-tui-test--keys session 0 "C-c" "C-c")
          ;; 2. r: denied with a reason.
          (agent-q-tui-test--wait-pane session 0 "Make the second file: touch two\\.txt")
          (agent-q-tui-test--keys session 0 "r")
          (agent-q-tui-test--wait-pane session 0 "Reason for denying shell_command:")
          (agent-q-tui-test--text session 0 "Call it three instead")
          (agent-q-tui-test--keys session 0 "Enter")
          ;; 3. a, confirmed with !: ls * for this session of Claude.
          (agent-q-tui-test--wait-pane session 0 "List the files in the work folder: ls -la")
          (agent-q-tui-test--keys session 0 "a")
          (agent-q-tui-test--wait-pane
           session 0 (format "Approve `ls \\*` for %s (session %s), unasked" agent short))
          (sleep-for 1)
          (agent-q-tui-test--keys session 0 "!")
          ;; 4. ls runs unasked: the turn ends.
          (agent-q-tui-test--wait-pane session 1 "Turn one is done\\.")
          (should (file-exists-p (expand-file-name "edited.txt" work)))
          (should-not (file-exists-p (expand-file-name "one.txt" work)))
          (should-not (file-exists-p (expand-file-name "two.txt" work)))
          ;; Claude's display shows its own command, not the edit; Gemini's
          ;; the edit (as Emacs said).
          (let ((screen (agent-q-tui-test--pane session 1)))
            (should (string-match-p (if claude "Bash(touch one\\.txt)" "Shell touch edited\\.txt")
                                    screen))
            (should-not (string-match-p (if claude "touch edited\\.txt" "touch one\\.txt")
                                        screen)))
          (let ((requests (agent-q-ide-test--step-requests (nth 2 model))))
            (should (= (length requests) 5))
            ;; The model is told the command that really ran, and the reason.
            (should (string-match-p
                     (regexp-quote "What ran is:\\ntouch edited.txt\\nnot the command you wrote:\\ntouch one.txt")
                     (json-encode (alist-get 'body (nth 1 requests)))))
            (should (string-match-p "Call it three instead"
                                    (json-encode (alist-get 'results (nth 2 requests))))))
          ;; What Emacs said of the edit (the next prompt followed it at once
          ;; in the echo area; *Messages* keeps it).
          (agent-q-tui-test--keys session 0 "C-h" "e")
          (let ((said (agent-q-tui-test--wait-pane
                       session 0 (regexp-quote
                      (concat "runs your edited command: touch edited.txt.  "
                              (if claude
                                  "The agent still displays its own command, not your edit; its model is told what ran"
                                "The agent shows your edit; its model is told what ran"))))))
            ;; Told once for each call that waited; not for ls, which ran unasked.
            (should (string-match-p "waits for your decision in Emacs: run ls -la$" said))
            (should-not (string-match-p "waits for your decision in Emacs: run ls$" said)))
          (agent-q-tui-test--keys session 0 "C-x" "1")
          ;; The grant is listed, and withdrawn.
          (agent-q-tui-test--mx session "agent-q-grants")
          (agent-q-tui-test--wait-pane
           session 0 (format "%s (session %s) +shell_command +commands made of `ls \\*`" agent short))
          (agent-q-tui-test--keys session 0 "d")
          (agent-q-tui-test--wait-pane
           session 0 (format "withdrawn: commands made of `ls \\*` for %s (session %s)" agent short))
          (agent-q-tui-test--keys session 0 "q")
          ;; Second turn: ls is asked again.
          (agent-q-agents-test--write script (agent-q-tui-test--pass-steps agent work 2))
          (agent-q-tui-test--text session 1 "Now edit them")
          (agent-q-tui-test--keys session 1 "Enter")
          (agent-q-tui-test--wait-pane session 0 "List the names again: ls \\[in ")
          (agent-q-tui-test--keys session 0 "y")
          ;; The two-hunk edit, reviewed hunk by hunk: the header counts down.
          (let* ((first (agent-q-tui-test--wait-pane
                         session 0 "Progress: 0 accepted, 0 rejected, 2 pending (of 2)  \\[\\? help\\]  the agent waits"))
                 (seconds (agent-q-tui-test--header-seconds first)))
            (should seconds)
            (should (string-match-p (format "From: %s (own tools)" agent) first))
            (let ((deadline (+ (float-time) 30)) (later seconds))
              (while (and (>= later seconds) (< (float-time) deadline))
                (sleep-for 0.5)
                (setq later (or (agent-q-tui-test--header-seconds
                                 (agent-q-tui-test--pane session 0))
                                later)))
              (should (< later seconds))))
          (agent-q-tui-test--keys session 0 "a")
          (agent-q-tui-test--wait-pane session 0 "Progress: 1 accepted, 0 rejected, 1 pending (of 2)")
          (agent-q-tui-test--keys session 0 "r")
          (agent-q-tui-test--wait-pane session 0 "Progress: 1 accepted, 1 rejected, 0 pending (of 2)")
          (agent-q-tui-test--keys session 0 "C-c" "C-c")
          ;; .mcp.json: reviewed, and the review says why.
          (let ((review (agent-q-tui-test--wait-pane session 0 "File: .*\\.mcp\\.json")))
            (should (string-match-p "Protected, so reviewed whatever the approval rules say" review)))
          (agent-q-tui-test--keys session 0 "C-c" "C-k")
          (agent-q-tui-test--wait-pane session 1 "All done\\.")
          (should (equal (agent-q-agents-test--read f) agent-q-gate-edit-test--first))
          (should-not (file-exists-p (expand-file-name ".mcp.json" work)))
          (let ((requests (agent-q-ide-test--step-requests (nth 2 model))))
            (should (= (length requests) (if claude 10 9))))
          ;; The audit: who decided each call, and how.
          (let ((decided (mapcar (lambda (r) (list (alist-get 'tool r) (alist-get 'decision r)))
                                 (cl-remove-if-not
                                  (lambda (r) (member (alist-get 'event r) '("result" "denied")))
                                  (agent-q-agents-test--json-lines audit)))))
            (should (equal decided (append '(("shell_command" "modified") ("shell_command" "denied")
                                             ("shell_command" "approved") ("shell_command" "granted")
                                             ("shell_command" "approved"))
                                           (and claude '(("agent_read" "auto")))
                                           '(("agent_edit" "review") ("agent_edit" "review")))))))
      (if (getenv "AGENT_Q_IDE_TEST_KEEP")
          (message "Kept %s and the tmux session %s" dir session)
        (call-process "tmux" nil nil nil "kill-session" "-t" session)
        (when model (ignore-errors (delete-process (car model))))
        (ignore-errors (delete-directory dir t))))))

(ert-deftest agent-q-tui-test-claude-beside-emacs-nw ()
  "Claude Code's TUI beside `emacs -nw'.  See `agent-q-tui-test--beside-emacs-nw'."
  (agent-q-tui-test--beside-emacs-nw 'claude))

(ert-deftest agent-q-tui-test-gemini-beside-emacs-nw ()
  "Gemini CLI's TUI beside `emacs -nw'.  See `agent-q-tui-test--beside-emacs-nw'."
  (agent-q-tui-test--beside-emacs-nw 'gemini))

(ert-deftest agent-q-tui-test-claude-timeout-beside-emacs-nw ()
  "Claude's call left unanswered in an `emacs -nw' until its hook timeout.
The timeout is set by the connect command (two \\[universal-argument]s
ask for it); the prompt shows the time left; when it runs out, the
prompt goes, Emacs says why, Claude's pane shows the call denied, the
audit records a timeout of the agent's hook, and nothing runs."
  (agent-q-tmux-test--ensure-tmux)
  (let* ((program (agent-q-agents-test--program 'claude))
         (dir (file-name-as-directory (make-temp-file "agent-q-tui-late" t)))
         (home (expand-file-name "home/" dir))
         (work (expand-file-name "work/" dir))
         (audit (expand-file-name "audit.jsonl" dir))
         (session (format "agent-q-tui-late-%d" (emacs-pid)))
         (setup (expand-file-name "setup.el" dir))
         (lisp-dir (file-name-directory (locate-library "agent-q")))
         (emacs (expand-file-name invocation-name invocation-directory))
         (late (expand-file-name "late.txt" work))
         model)
    (unwind-protect
        (let (environment)
          (make-directory (expand-file-name "tmp" home) t)
          (make-directory work t)
          (setq model (agent-q-agents-test--start-model
                       dir "anthropic"
                       (list (agent-q-gate-test--shell-step 'claude "touch late.txt")
                             '((text . "Gave up.")))))
          (setq environment (cons (agent-q-ide-test--model-variable 'claude (nth 1 model))
                                  (agent-q-ide-test--configure 'claude home work)))
          (with-temp-file setup
            (prin1 `(progn
                      (setq inhibit-startup-screen t)
                      (add-to-list 'load-path ,lisp-dir)
                      (require 'agent-q)
                      (setq agent-q-audit-file ,audit)
                      (agent-q-mcp-mode 1)
                      (agent-q-gate-mode 1))
                   (current-buffer)))
          (agent-q-tmux-test--tmux
           "new-session" "-d" "-s" session "-x" "150" "-y" "80" "-c" work
           (mapconcat #'shell-quote-argument
                      (append (list "env" "-i")
                              (agent-q-agents-test--environment home environment)
                              (agent-q-tmux-test--emacs-variables)
                              (list "TERM=xterm-256color" emacs "-nw" "-Q" "-l" setup))
                      " "))
          (agent-q-tui-test--wait-pane session 0 "scratch")
          ;; C-u C-u M-x agent-q-gate-connect-agent: the timeout is asked for.
          (agent-q-tui-test--keys session 0 "C-u" "C-u")
          (agent-q-tui-test--mx session "agent-q-gate-connect-agent" "claude")
          (agent-q-tui-test--wait-pane session 0 "When no Emacs can be asked:")
          (agent-q-tui-test--keys session 0 "Enter")
          (agent-q-tui-test--wait-pane session 0 "Seconds the agent waits for your answer")
          (agent-q-tui-test--text session 0 "40")
          (agent-q-tui-test--keys session 0 "Enter")
          (agent-q-tui-test--wait-pane session 0 "agent-q: wrote ~/\\.claude/settings\\.json")
          (should (string-match-p "\"timeout\": *40\\b"
                                  (agent-q-agents-test--read
                                   (expand-file-name ".claude/settings.json" home))))
          (agent-q-tmux-test--tmux
           "split-window" "-v" "-t" (format "%s:0.0" session) "-l" "40" "-c" work
           (mapconcat #'shell-quote-argument
                      (append (list "env" "-i")
                              (agent-q-agents-test--environment home environment)
                              (list "TERM=xterm-256color" "COLORTERM=truecolor" program))
                      " "))
          (agent-q-tui-test--wait-pane session 1 "for agents\\|for shortcuts" 180)
          (sleep-for 2)
          (agent-q-tui-test--text session 1 "Make the file")
          (agent-q-tui-test--keys session 1 "Enter")
          ;; The prompt says how long Claude still waits: at most 40 s.
          (let ((asked (agent-q-tui-test--wait-pane session 0 "(\\?)help:" 180)))
            (should (string-match-p "agent-q (the agent waits 0:[0-3][0-9] more): claude" asked)))
          ;; Nobody answers.  The prompt goes, and Emacs says the time ran out
          ;; (read in *Messages*: an older message soon covers the echo area).
          (agent-q-tui-test--wait-pane session 1 "Gave up\\." 120)
          (sleep-for 1)
          (should-not (string-match-p "(\\?)help:" (agent-q-tui-test--pane session 0)))
          (agent-q-tui-test--keys session 0 "C-h" "e")
          (agent-q-tui-test--wait-pane
           session 0 (concat "agent-q: Nobody answered in Emacs within [0-9]+ s, "
                             "before the agent's hook timeout"))
          (should-not (file-exists-p late))
          (let ((record (car (last (agent-q-agents-test--json-lines audit)))))
            (should (equal (alist-get 'event record) "timed-out"))
            (should (equal (alist-get 'decision record) "timeout")))
          ;; Claude's model is told why.
          (let ((requests (agent-q-ide-test--step-requests (nth 2 model))))
            (should (string-match-p "hook timeout"
                                    (json-encode (alist-get 'results (nth 1 requests)))))))
      (if (getenv "AGENT_Q_IDE_TEST_KEEP")
          (message "Kept %s and the tmux session %s" dir session)
        (call-process "tmux" nil nil nil "kill-session" "-t" session)
        (when model (ignore-errors (delete-process (car model))))
        (ignore-errors (delete-directory dir t))))))

(provide 'agent-q-tui-test)

;;; agent-q-tui-test.el ends here
