;;; agent-q-acp-test.el --- Agents over ACP (agent-shell) decided by agent-q  -*- lexical-binding: t -*-

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

;; lisp/agent-q-acp.el, driven by real ACP traffic: acp.el (the client
;; agent-shell is built on; ../shared/vendor/acp or $AGENT_Q_VENDOR/acp)
;; runs the real `gemini --acp' and `claude-agent-acp' (target/agents,
;; pinned by tests/agents/package-lock.json), each pointed at the
;; scripted model of tests/fake-agent-model.py.  agent-shell itself
;; cannot be installed here; the one thing of it the responder sees, its
;; PERMISSION argument, is built by `agent-q-acp-test--permission'
;; exactly as agent-shell 0.79.2 builds it in `agent-shell--on-request'
;; (see ../shared/notes/acp-facts.md), and the responder runs in a
;; buffer whose `agent-shell--state' holds what agent-shell's does:
;; :agent-config (:identifier, :buffer-name), :session (:id) and
;; :client (acp.el's client, with its :process).
;;
;; One session per agent, four prompts, a new script for each: (1)
;; agent-q's own MCP tool read_file (served by this Emacs through
;; session/new's mcpServers, from `agent-shell-mcp-servers' as the mode
;; sets it), an approved command, an approved edit; (2) a denied
;; command; (3) a rejected edit; (4) a command whose prompt is withdrawn
;; by session/cancel; then the agent's process ends while a command
;; waits.
;;
;; If a real agent-shell is provided through $AGENT_Q_VENDOR on Emacs
;; 29.1 or later, `agent-q-acp-test-agent-shell' loads it and checks the
;; mode against its variables; without one, that test is not defined
;; (one line says why) rather than skipped: CI fails on any skip, and
;; agent-shell is not available on the CI machine.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'json)
(require 'map)
(require 'subr-x)
(require 'agent-q)
(require 'agent-q-mcp)
(require 'agent-q-acp)
(require 'agent-q-agents-test)
(require 'agent-q-bridge-support)

(defvar agent-q-prompt--session-approved)
(defvar agent-q-allowed-directories)
(defvar agent-q-mcp-allowed-directories)
(defvar agent-q-review--review-driver)
;; agent-shell's, as the mode and the responder read them.
(defvar agent-shell--state)
(defvar agent-shell-permission-responder-function)
(defvar agent-shell-mcp-servers)

(declare-function acp-make-client "acp")
(declare-function acp-send-request "acp")
(declare-function acp-send-response "acp")
(declare-function acp-send-notification "acp")
(declare-function acp-subscribe-to-requests "acp")
(declare-function acp-subscribe-to-notifications "acp")
(declare-function acp-make-initialize-request "acp")
(declare-function acp-make-session-new-request "acp")
(declare-function acp-make-session-prompt-request "acp")
(declare-function acp-make-session-set-mode-request "acp")
(declare-function acp-make-session-cancel-notification "acp")
(declare-function acp-make-session-request-permission-response "acp")
(declare-function acp-make-error "acp")
(declare-function acp-logs-buffer "acp")
(defvar acp-logging-enabled)

;;;; acp.el

(defun agent-q-acp-test--require-acp ()
  "Load the real acp.el; fail, saying where it is looked for, when it is missing."
  (unless (featurep 'acp)
    (let ((dir (cl-find-if (lambda (d) (file-exists-p (expand-file-name "acp/acp.el" d)))
                           (agent-q-bridge--vendor-dirs))))
      (when dir
        (add-to-list 'load-path (expand-file-name "acp" dir)))
      (unless (require 'acp nil t)
        (ert-fail (format "acp.el is neither on the load-path nor in %s"
                          (mapconcat #'identity (agent-q-bridge--vendor-dirs) " or ")))))))

;;;; The agents

(defconst agent-q-acp-test--agents
  '((gemini :program "gemini" :args ("--acp") :dialect "gemini" :identifier gemini-cli
            :buffer-name "Gemini CLI" :label "Gemini CLI (ACP)")
    (claude :program "claude-agent-acp" :args nil :dialect "anthropic" :identifier claude-code
            :buffer-name "Claude Code" :label "Claude (ACP)"))
  "Each agent over ACP: its program, model API, and agent-shell's config for it.")

(defun agent-q-acp-test--prop (agent key)
  "The property KEY of AGENT in `agent-q-acp-test--agents'."
  (plist-get (alist-get agent agent-q-acp-test--agents) key))

(defun agent-q-acp-test--program (agent)
  "AGENT's executable; fail, saying how to install it, when it is missing."
  (let ((program (expand-file-name
                  (concat "target/agents/node_modules/.bin/" (agent-q-acp-test--prop agent :program))
                  agent-q-agents-test--root)))
    (unless (file-executable-p program)
      (ert-fail (format "%s is missing: run scripts/ensure-deps.sh --test (make test does)" program)))
    program))

(defun agent-q-acp-test--setup (agent home model)
  "Configure AGENT in HOME for its scripted MODEL URL; return its environment."
  (pcase agent
    ('gemini
     (agent-q-agents-test--write
      (expand-file-name ".gemini/settings.json" home)
      (json-encode
       '((security (folderTrust (enabled . :json-false)) (auth (selectedType . "gemini-api-key")))
         (general (enableAutoUpdate . :json-false) (enableAutoUpdateNotification . :json-false))
         (privacy (usageStatisticsEnabled . :json-false))
         (telemetry (enabled . :json-false)))))
     (agent-q-agents-test--environment
      home (list (concat "GOOGLE_GEMINI_BASE_URL=" model) "GEMINI_API_KEY=scripted")))
    ('claude
     (agent-q-agents-test--environment
      home (list (concat "ANTHROPIC_BASE_URL=" model) "ANTHROPIC_API_KEY=scripted"
                 "DISABLE_TELEMETRY=1" "DISABLE_AUTOUPDATER=1" "DISABLE_ERROR_REPORTING=1"
                 "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")))))

(defun agent-q-acp-test--step (agent what &rest args)
  "The scripted model's call WHAT (command, write, mcp) with ARGS, as AGENT names it."
  (pcase (list agent what)
    (`(gemini command) `((tool . "run_shell_command")
                         (arguments (command . ,(car args)) (description . "scripted"))))
    (`(claude command) `((tool . "Bash") (arguments (command . ,(car args)) (description . "scripted"))))
    (`(gemini write) `((tool . "write_file")
                       (arguments (file_path . ,(car args)) (content . ,(cadr args)))))
    (`(claude write) `((tool . "Write") (arguments (file_path . ,(car args)) (content . ,(cadr args)))))
    (`(gemini mcp) `((tool . ,(concat "mcp_agent-q_" (car args))) (arguments . ,(cadr args))))
    (`(claude mcp) `((tool . ,(concat "mcp__agent-q__" (car args))) (arguments . ,(cadr args))))))

;;;; agent-shell's side: the fixture

(defun agent-q-acp-test--resolve (value)
  "VALUE with each literal lambda in it called, as agent-shell does at session start.
agent-shell evaluates only literal lambdas in `agent-shell-mcp-servers'."
  (cond ((and (consp value) (eq (car value) 'lambda)) (funcall value))
        ((consp value) (cons (agent-q-acp-test--resolve (car value))
                             (agent-q-acp-test--resolve (cdr value))))
        (t value)))

(defun agent-q-acp-test--diffs (tool-call)
  "agent-shell 0.79.2's :diffs of the ACP TOOL-CALL: ((:old . O) (:new . N) (:file . F))..."
  (delq nil (mapcar (lambda (item)
                      (when (equal (map-elt item 'type) "diff")
                        (list (cons :old (map-elt item 'oldText))
                              (cons :new (map-elt item 'newText))
                              (cons :file (map-elt item 'path)))))
                    (append (map-elt tool-call 'content) nil))))

(defun agent-q-acp-test--save-tool-call (calls id fields)
  "Merge FIELDS (an ACP tool call or update) into CALLS' entry ID, as agent-shell does.
CALLS is a hash table; agent-shell keeps the same in its state's :tool-calls."
  (let ((entry (gethash id calls)))
    (dolist (pair `((:title . title) (:status . status) (:kind . kind) (:raw-input . rawInput)
                    (:content . content) (:locations . locations)))
      (when (map-contains-key fields (cdr pair))
        (setf (alist-get (car pair) entry) (map-elt fields (cdr pair)))))
    (puthash id entry calls)))

(defun agent-q-acp-test--permission (request calls respond)
  "The PERMISSION argument agent-shell 0.79.2 passes for the ACP REQUEST.
CALLS holds the session's tool calls (see
`agent-q-acp-test--save-tool-call'); RESPOND is called with an option
id.  Shape: :tool-call (:title :status :kind :permission-request-id
:raw-input :content :locations :diffs), :options (each :kind
:option-id :label :option :char; reject_always dropped), :respond."
  (let* ((params (map-elt request 'params))
         (tool-call (map-elt params 'toolCall))
         (id (map-elt tool-call 'toolCallId)))
    (agent-q-acp-test--save-tool-call calls id tool-call)
    (let ((entry (gethash id calls)))
      (setf (alist-get :permission-request-id entry) (map-elt request 'id))
      (setf (alist-get :diffs entry) (agent-q-acp-test--diffs tool-call))
      (puthash id entry calls)
      (list (cons :tool-call entry)
            (cons :options
                  (delq nil (cl-mapcar
                             (lambda (option char)
                               (unless (equal (map-elt option 'kind) "reject_always")
                                 (list (cons :kind (map-elt option 'kind))
                                       (cons :option-id (map-elt option 'optionId))
                                       (cons :label (map-elt option 'name))
                                       (cons :option option)
                                       (cons :char char))))
                             (append (map-elt params 'options) nil)
                             '(?y ?! ?n ?N ?a ?b ?c))))
            (cons :respond respond)))))

;;;; A session

(cl-defstruct (agent-q-acp-test--run (:constructor agent-q-acp-test--make-run) (:copier nil))
  "One agent's session: CLIENT, SHELL (the buffer standing for agent-shell's),
SESSION id, CALLS (tool calls), ANSWERS (request id -> option id or
cancelled, newest first), ASKED (permission requests), RESPONDED (what
the responder returned), WAITING (request ids not answered)."
  client shell session (calls (make-hash-table :test #'equal)) answers asked responded waiting)

(defun agent-q-acp-test--answer (run request option)
  "Answer the permission REQUEST of RUN with OPTION (an id, or `cancelled')."
  (let ((id (map-elt request 'id)))
    (when (member id (agent-q-acp-test--run-waiting run))
      (setf (agent-q-acp-test--run-waiting run) (delete id (agent-q-acp-test--run-waiting run)))
      (push (cons id option) (agent-q-acp-test--run-answers run))
      (acp-send-response
       :client (agent-q-acp-test--run-client run)
       :response (if (eq option 'cancelled)
                     (acp-make-session-request-permission-response :request-id id :cancelled t)
                   (acp-make-session-request-permission-response :request-id id :option-id option))))))

(defun agent-q-acp-test--on-request (run request)
  "Handle the agent's REQUEST in RUN as agent-shell does, its responder being agent-q's."
  (pcase (map-elt request 'method)
    ("session/request_permission"
     (push request (agent-q-acp-test--run-asked run))
     (push (map-elt request 'id) (agent-q-acp-test--run-waiting run))
     (let* ((permission (agent-q-acp-test--permission
                         request (agent-q-acp-test--run-calls run)
                         (lambda (option-id) (agent-q-acp-test--answer run request option-id))))
            (handled (with-current-buffer (agent-q-acp-test--run-shell run)
                       (and (functionp agent-shell-permission-responder-function)
                            (funcall agent-shell-permission-responder-function permission)))))
       (push (cons (map-elt request 'id) handled) (agent-q-acp-test--run-responded run))
       ;; agent-shell would show its dialog; the test rejects.
       (unless handled
         (agent-q-acp-test--answer run request
                                   (agent-q-acp--option-id (map-elt permission :options)
                                                           "reject_once")))))
    (_ (acp-send-response
        :client (agent-q-acp-test--run-client run)
        :response `((:request-id . ,(map-elt request 'id))
                    (:error . ,(acp-make-error :code -32601 :message "Method not found")))))))

(defun agent-q-acp-test--on-notification (run notification)
  "Record RUN's tool calls from the session/update NOTIFICATION, as agent-shell does."
  (let ((update (map-nested-elt notification '(params update))))
    (when (member (map-elt update 'sessionUpdate) '("tool_call" "tool_call_update"))
      (agent-q-acp-test--save-tool-call (agent-q-acp-test--run-calls run)
                                        (map-elt update 'toolCallId) update))))

(defun agent-q-acp-test--request (run request &optional seconds)
  "Send REQUEST on RUN's client and wait for its result, at most SECONDS."
  (let ((done nil) (result nil))
    (acp-send-request :client (agent-q-acp-test--run-client run) :request request
                      :on-success (lambda (r) (setq result r done 'ok))
                      ;; Not &rest: acp.el compares the arity's maximum with 2.
                      :on-failure (lambda (e &optional _message) (setq result e done 'error)))
    (let ((deadline (+ (float-time) (or seconds 60))))
      (while (and (not done) (< (float-time) deadline))
        (accept-process-output nil 0.05)))
    (unless done
      (ert-fail (format "Timed out waiting for the answer to %s; the traffic's end:\n%s"
                        (map-elt request :method)
                        (with-current-buffer (acp-logs-buffer
                                              :client (agent-q-acp-test--run-client run))
                          (buffer-substring-no-properties
                           (max (point-min) (- (point-max) 6000)) (point-max))))))
    (when (eq done 'error)
      (ert-fail (format "%s failed: %S" (map-elt request :method) result)))
    result))

(defun agent-q-acp-test--start (agent work env)
  "Start AGENT over ACP in WORK with ENV; return its run, with a session.
The session gets the MCP servers of `agent-shell-mcp-servers', resolved
as agent-shell does."
  (let* ((shell (generate-new-buffer (format " *agent-q-acp-test %s*" agent)))
         (client (acp-make-client :command (agent-q-acp-test--program agent)
                                  :command-params (agent-q-acp-test--prop agent :args)
                                  :environment-variables env
                                  :context-buffer shell))
         (run (agent-q-acp-test--make-run :client client :shell shell))
         (default-directory (file-name-as-directory work))
         (process-environment env))
    (acp-subscribe-to-requests :client client
                               :on-request (lambda (r) (agent-q-acp-test--on-request run r)))
    (acp-subscribe-to-notifications
     :client client :on-notification (lambda (n) (agent-q-acp-test--on-notification run n)))
    (agent-q-acp-test--request run (acp-make-initialize-request
                                    :protocol-version 1
                                    :client-info '((name . "agent-q-acp-test") (version . "1"))))
    (let* ((servers (agent-q-acp-test--resolve agent-shell-mcp-servers))
           (session (map-elt (agent-q-acp-test--request
                              run (acp-make-session-new-request :cwd work
                                                                :mcp-servers (vconcat servers))
                              90)
                             'sessionId)))
      (setf (agent-q-acp-test--run-session run) session)
      ;; claude-agent-acp 0.101.0 starts in its "auto" mode, where Claude decides
      ;; and asks nothing; agent-shell users pick "default" (Manual) for a gate.
      (when (eq agent 'claude)
        (agent-q-acp-test--request run (acp-make-session-set-mode-request
                                        :session-id session :mode-id "default")))
      (with-current-buffer shell
        (setq default-directory (file-name-as-directory work))
        (setq-local agent-shell--state
                    (list (cons :agent-config
                                (list (cons :identifier (agent-q-acp-test--prop agent :identifier))
                                      (cons :buffer-name (agent-q-acp-test--prop agent :buffer-name))))
                          (cons :client client)
                          (cons :session (list (cons :id session))))))
      run)))

(defun agent-q-acp-test--prompt (run text &optional seconds)
  "Send the prompt TEXT in RUN's session; return its stopReason."
  (map-elt (agent-q-acp-test--request
            run (acp-make-session-prompt-request
                 :session-id (agent-q-acp-test--run-session run)
                 :prompt (vector `((type . "text") (text . ,text))))
            (or seconds agent-q-agents-test--timeout))
           'stopReason))

(defun agent-q-acp-test--start-model (dir dialect)
  "Run the scripted model server in DIR, speaking DIALECT: (PROCESS PORT).
Its script is DIR's model-script.json, which each prompt rewrites (see
`agent-q-acp-test--script'); one session makes more requests than the
server's default limit, so the limits are raised."
  (let* ((port-file (expand-file-name "model-port" dir))
         (process (make-process
                   :name "agent-q-acp-model" :noquery t :connection-type 'pipe
                   :buffer (generate-new-buffer " *agent-q-acp-model*")
                   :command (list "python3" agent-q-agents-test--model
                                  "--dialect" dialect
                                  "--script" (expand-file-name "model-script.json" dir)
                                  "--port-file" port-file
                                  "--record" (expand-file-name "model-requests.jsonl" dir)
                                  "--max-requests" "1000" "--timeout" "900"))))
    (agent-q-agents-test--wait (lambda () (or (file-exists-p port-file) (not (process-live-p process))))
                               20 "the scripted model server's port")
    (unless (file-exists-p port-file)
      (ert-fail (format "The scripted model server did not start:\n%s"
                        (with-current-buffer (process-buffer process) (buffer-string)))))
    (list process (string-to-number (agent-q-agents-test--read port-file)))))

(defun agent-q-acp-test--script (dir steps &optional prompt)
  "Write STEPS as the scripted model's script in DIR, for the turn of PROMPT.
A last text answers the requests that Claude makes after its turn.  With
PROMPT, only requests of that turn take the steps: a late request of a
turn cancelled before it (claude-agent-acp makes one after
session/cancel) gets a short text instead, where it would otherwise
take this turn's first step and leave this turn without it."
  (agent-q-agents-test--write
   (expand-file-name "model-script.json" dir)
   (json-encode `(,@(and prompt `((prompt . ,prompt)))
                  (steps . ,(vconcat steps '(((text . "Nothing more.")))))))))

(defun agent-q-acp-test--turn (run dir prompt steps &optional seconds)
  "Script STEPS for the turn of PROMPT in DIR, prompt RUN; return the stopReason.
SECONDS bounds the wait, as in `agent-q-acp-test--prompt'."
  (agent-q-acp-test--script dir steps prompt)
  (agent-q-acp-test--prompt run prompt seconds))

(defun agent-q-acp-test--step-requested-p (dir n)
  "Non-nil when the model in DIR was asked for step N of its current script.
The record's steps count again from 1 with each new script."
  (let* ((requests (agent-q-agents-test--json-lines (expand-file-name "model-requests.jsonl" dir)))
         (steps (mapcar (lambda (r) (alist-get 'step r))
                        (cl-remove-if-not (lambda (r) (equal (alist-get 'kind r) "step"))
                                          requests)))
         ;; The steps of the last script, newest first, down to its step 1.
         (current (cl-loop for step in (reverse steps)
                           collect step
                           until (eql step 1))))
    (member n current)))

;;;; Deciding in the tests

(defvar agent-q-acp-test--on-ask nil
  "A function called with the command when the approval function is asked, or nil.")

(defvar agent-q-acp-test--asked nil
  "What the approval function was asked, newest first: (TOOL ARGS CLIENT).")

(defun agent-q-acp-test--approve (tool args)
  "Approve commands that touch ok-marker; deny the rest.  Record TOOL and ARGS."
  (push (list tool args (plist-get agent-q-approval-context :client)) agent-q-acp-test--asked)
  (when agent-q-acp-test--on-ask
    (funcall agent-q-acp-test--on-ask (plist-get args :command)))
  (if (string-match-p "ok-marker" (or (plist-get args :command) ""))
      :approved
    :denied))

(defvar agent-q-acp-test--on-review nil
  "A function called with the review buffer of a file named withdrawn*, or nil.
It withdraws the review while it is open; the driver then leaves it.")

(defun agent-q-acp-test--review-driver (buffer)
  "Accept every hunk of the review in BUFFER for a file named approved*, else reject all.
A file named withdrawn* goes to `agent-q-acp-test--on-review' instead."
  (let ((file (with-current-buffer buffer
                (agent-q-review-file (car (agent-q-review-open-reviews))))))
    (if (and agent-q-acp-test--on-review
             (string-prefix-p "withdrawn" (file-name-nondirectory file)))
        (funcall agent-q-acp-test--on-review buffer)
      (with-current-buffer buffer
        (if (string-prefix-p "approved" (file-name-nondirectory file))
            (agent-q-review-accept-all)
          (agent-q-review-reject-all))
        (agent-q-review-finish)))))

(defun agent-q-acp-test--pending-edits ()
  "The rows of `agent-q-pending' that are agent_edit calls, as (CLIENT TOOL STATE)."
  (delq nil (mapcar (lambda (row)
                      (let ((cells (cadr row)))
                        (and (equal (aref cells 2) "agent_edit")
                             (list (aref cells 1) (aref cells 2) (aref cells 3)))))
                    (agent-q--pending-entries))))

;;;; The conversation

(defun agent-q-acp-test--converse (agent)
  "Run AGENT over ACP through the four prompts; check files, answers, audit."
  (agent-q-acp-test--require-acp)
  (let* ((acp-logging-enabled t)
         (dir (file-name-as-directory (make-temp-file "agent-q-acp" t)))
         (home (expand-file-name "home/" dir))
         (work (directory-file-name (expand-file-name "work" dir)))
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
         (agent-q-mcp-max-safety-level :dangerous)
         (agent-q-mcp-confirm-safety-levels '(:cautious :dangerous))
         (agent-q-acp-unruled 'agent-q)
         (agent-shell-permission-responder-function nil)
         (agent-shell-mcp-servers nil)
         (label (agent-q-acp-test--prop agent :label))
         (secret (format "read over ACP by %s: %s" agent (random 1000000)))
         (source (expand-file-name "source.txt" work))
         model run)
    (unwind-protect
        (progn
          (make-directory (expand-file-name "tmp" home) t)
          (agent-q-agents-test--write source (concat secret "\n"))
          (agent-q-agent-shell-mode 1)
          (should (eq agent-shell-permission-responder-function #'agent-q-acp-respond))
          (should (equal (map-elt (car agent-shell-mcp-servers) 'name) "agent-q"))
          (agent-q-acp-test--script dir '(((text . "unused"))))
          (setq model (agent-q-acp-test--start-model dir (agent-q-acp-test--prop agent :dialect)))
          (let ((env (agent-q-acp-test--setup agent home (format "http://127.0.0.1:%d" (nth 1 model)))))
            ;; Starting the session started agent-q's server (the mode's lambdas).
            (setq run (agent-q-acp-test--start agent work env))
            (should (agent-q-mcp-running-p))
            ;; 1. agent-q's own tool, an approved command, an approved edit.
            (let ((stop (agent-q-acp-test--turn
                         run dir "Read, run, write."
                         (list (agent-q-acp-test--step agent 'mcp "read_file" `((path . ,source)))
                               (agent-q-acp-test--step agent 'command "touch ok-marker")
                               (agent-q-acp-test--step agent 'write
                                                       (expand-file-name "approved.txt" work)
                                                       "approved text\n")
                               '((text . "First prompt done."))))))
              (agent-q-acp-test--check-first run agent dir work secret stop))
            ;; 2. A denied command: it does not run; the turn goes on or ends as the agent does.
            (should (equal (agent-q-acp-test--turn
                            run dir "Run the denied command."
                            (list (agent-q-acp-test--step agent 'command "touch denied-marker")
                                  '((text . "Second prompt done."))))
                           "end_turn"))
            (should-not (file-exists-p (expand-file-name "denied-marker" work)))
            ;; Both agents go on after reject_once: their model is asked again.
            ;; (agent-shell's own Reject also interrupts the turn; agent-q's does not.)
            (should (agent-q-acp-test--step-requested-p dir 2))
            ;; 3. A rejected edit: nothing written.
            (should (equal (agent-q-acp-test--turn
                            run dir "Write the rejected file."
                            (list (agent-q-acp-test--step agent 'write
                                                          (expand-file-name "rejected.txt" work)
                                                          "rejected text\n")
                                  '((text . "Third prompt done."))))
                           "end_turn"))
            (should-not (file-exists-p (expand-file-name "rejected.txt" work)))
            (should (agent-q-acp-test--step-requested-p dir 2))
            ;; Each answer was one of allow_once and reject_once, as the agent named them.
            (agent-q-acp-test--check-options run)
            ;; 4. session/cancel while the prompt is up withdraws it.
            (agent-q-acp-test--withdrawn run agent dir work)
            ;; 5. session/cancel while an edit's review is open withdraws it.
            (agent-q-acp-test--review-withdrawn run agent dir work label nil)
            ;; The audit names the agent for each decision of agent-q's.
            (agent-q-acp-test--check-audit label)
            ;; 6. The agent exits while an edit's review is open: withdrawn.
            (agent-q-acp-test--review-withdrawn run agent dir work label t)))
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

(defun agent-q-acp-test--check-first (run agent dir work secret stop)
  "Check the first prompt of AGENT's RUN in WORK: STOP, the files, what the model got.
DIR holds the model's record; SECRET is what agent-q's read_file returned."
  (let* ((requests (agent-q-agents-test--json-lines (expand-file-name "model-requests.jsonl" dir)))
         (steps (cl-remove-if-not (lambda (r) (equal (alist-get 'kind r) "step")) requests))
         (why (format "%s: stop %s; asked %S; requests %S" agent stop
                      (mapcar (lambda (r) (map-nested-elt r '(params toolCall title)))
                              (agent-q-acp-test--run-asked run))
                      (mapcar (lambda (r) (list (alist-get 'step r) (alist-get 'results r))) steps))))
    (unless (equal stop "end_turn") (ert-fail why))
    ;; The approved command ran, the approved edit is on disk.
    (unless (file-exists-p (expand-file-name "ok-marker" work)) (ert-fail why))
    (should (equal (agent-q-agents-test--read (expand-file-name "approved.txt" work))
                   "approved text\n"))
    ;; agent-q's MCP tool reached the agent through session/new: its result came back.
    (let ((results (alist-get 'results (car (last steps)))))
      (unless (cl-some (lambda (r) (string-match-p (regexp-quote secret) (or (alist-get 'text r) "")))
                       results)
        (ert-fail why)))
    ;; The command was asked in agent-q's prompt, naming the agent over ACP.
    (should (equal (car (last agent-q-acp-test--asked))
                   (list "shell_command" (list :command "touch ok-marker" :directory work)
                         (concat (agent-q-acp-test--prop agent :label) " "
                                 (truncate-string-to-width
                                  (agent-q-acp-test--run-session run) 36 nil nil "...")))))
    ;; agent-q answered every request (none was left to agent-shell's dialog).
    (should (cl-every #'cdr (agent-q-acp-test--run-responded run)))))

(defun agent-q-acp-test--check-options (run)
  "Check that agent-q answered each of RUN's requests, with allow_once or reject_once."
  ;; None was left to agent-shell's dialog (the responder returned non-nil)...
  (should (cl-every #'cdr (agent-q-acp-test--run-responded run)))
  ;; ...and each answer was one of the two options agent-q may choose.
  (dolist (answer (agent-q-acp-test--run-answers run))
    (let* ((request (cl-find (car answer) (agent-q-acp-test--run-asked run)
                             :key (lambda (r) (map-elt r 'id))))
           (option (cl-find (cdr answer) (append (map-nested-elt request '(params options)) nil)
                            :key (lambda (o) (map-elt o 'optionId)) :test #'equal)))
      (should (member (map-elt option 'kind) '("allow_once" "reject_once"))))))

(defun agent-q-acp-test--check-audit (label)
  "Check the audit: the agent's command and edit decisions name LABEL."
  (let* ((audit (agent-q-agents-test--json-lines agent-q-audit-file))
         (ours (cl-remove-if-not
                (lambda (r) (member (alist-get 'tool r) '("shell_command" "agent_edit")))
                audit)))
    (should ours)
    (dolist (record ours)
      (should (string-prefix-p label (alist-get 'client record))))
    ;; The accepted edit: decided by the review, every hunk accepted.
    (let ((accepted (cl-find-if (lambda (r) (and (equal (alist-get 'tool r) "agent_edit")
                                                 (equal (alist-get 'event r) "result")
                                                 (equal (alist-get 'status r) "success")))
                                ours)))
      (should accepted)
      (should (equal (alist-get 'decision accepted) "review"))
      (should (alist-get 'accepted (alist-get 'review accepted)))
      (should-not (alist-get 'rejected (alist-get 'review accepted)))
      (should (string-prefix-p "the user's review: " (alist-get 'how accepted))))
    ;; The rejected edit: the review's rejection, which hunks.
    (let ((rejected (cl-find-if (lambda (r) (and (equal (alist-get 'tool r) "agent_edit")
                                                 (equal (alist-get 'status r) "denied")))
                                ours)))
      (should rejected)
      (should (equal (alist-get 'decision rejected) "review"))
      (should (alist-get 'rejected (alist-get 'review rejected)))
      (should-not (alist-get 'accepted (alist-get 'review rejected))))
    (should (cl-find-if (lambda (r) (and (equal (alist-get 'tool r) "shell_command")
                                         (equal (alist-get 'event r) "denied")))
                        ours))))

(defun agent-q-acp-test--withdrawn (run agent dir work)
  "Prompt AGENT's RUN to run a command, and cancel the turn while it is asked.
DIR holds the model's script; WORK is the session's directory."
  (let* ((client (agent-q-acp-test--run-client run))
         (session (agent-q-acp-test--run-session run))
         (withdrawn nil)
         (agent-q-acp-test--on-ask
          (lambda (_command)
            ;; What agent-shell does when the user interrupts: session/cancel.  The
            ;; mode sees it go and withdraws the session's questions, which takes
            ;; this prompt away (a non-local exit)...
            (unwind-protect
                (acp-send-notification
                 :client client
                 :notification (acp-make-session-cancel-notification :session-id session))
              (setq withdrawn (zerop (hash-table-count agent-q-acp--pending)))
              ;; ...and the client answers the request cancelled, as ACP requires.
              (dolist (request (agent-q-acp-test--run-asked run))
                (agent-q-acp-test--answer run request 'cancelled))))))
    (ignore agent)
    (let ((stop (agent-q-acp-test--turn
                 run dir "Run the command you will cancel."
                 (list (agent-q-acp-test--step agent 'command "touch ok-marker-withdrawn")
                       '((text . "Fourth prompt done.")))
                 30)))
      (should withdrawn)
      (should (member stop '("cancelled" "end_turn"))))
    ;; Approved by the late answer of the approval function, yet never allowed.
    (should-not (file-exists-p (expand-file-name "ok-marker-withdrawn" work)))
    (should (eq (cdr (car (agent-q-acp-test--run-answers run))) 'cancelled))
    (let ((record (car (last (agent-q-agents-test--json-lines agent-q-audit-file)))))
      (should (equal (alist-get 'event record) "cancelled")))))

(defun agent-q-acp-test--review-withdrawn (run agent dir work label exit)
  "Prompt AGENT's RUN to write a file, and withdraw its review while it is open.
By session/cancel, or, when EXIT, by ending the agent's process.  DIR
holds the model's script, WORK is the session's directory and LABEL
names the agent.  While the review is open the pending list shows it;
afterwards it does not, nothing was written, and the audit's last
agent_edit record says it was withdrawn, and why."
  (let* ((client (agent-q-acp-test--run-client run))
         (process (map-elt client :process))
         (session (agent-q-acp-test--run-session run))
         (file (expand-file-name (if exit "withdrawn-exit.txt" "withdrawn-cancel.txt") work))
         (prompt (format "Write %s." (file-name-nondirectory file)))
         (shown nil)
         (withdrawn nil)
         (ended nil)
         (agent-q-acp-test--on-review
          (lambda (_buffer)
            (setq shown (agent-q-acp-test--pending-edits))
            (if exit
                (delete-process process)
              (acp-send-notification
               :client client
               :notification (acp-make-session-cancel-notification :session-id session))
              (dolist (request (agent-q-acp-test--run-asked run))
                (agent-q-acp-test--answer run request 'cancelled)))
            (agent-q-agents-test--wait
             (lambda () (zerop (hash-table-count agent-q-acp--pending)))
             10 "the review's question to be withdrawn")
            (setq withdrawn t))))
    (agent-q-acp-test--script
     dir (list (agent-q-acp-test--step agent 'write file "withdrawn text\n")
               '((text . "Done.")))
     prompt)
    (acp-send-request :client client
                      :on-success (lambda (result) (setq ended (list 'stop result)))
                      ;; Not &rest (nor #'ignore): acp.el compares the arity's maximum with 2.
                      :on-failure (lambda (error &optional _message)
                                    (setq ended (list 'error error)))
                      :request (acp-make-session-prompt-request
                                :session-id session
                                :prompt (vector `((type . "text") (text . ,prompt)))))
    ;; Until the review is withdrawn; a turn that ended without one fails at once.
    (let ((deadline (+ (float-time) agent-q-agents-test--timeout)))
      (while (and (not withdrawn) (not ended) (< (float-time) deadline))
        (accept-process-output nil 0.05)))
    (unless withdrawn
      (ert-fail (format "The review was not withdrawn (the turn: %S); the model's requests \
\(kind step prompt): %S"
                        (or ended "still running after the timeout")
                        (mapcar (lambda (r) (list (alist-get 'kind r) (alist-get 'step r)
                                                  (alist-get 'prompt r)))
                                (cl-remove-if-not
                                 (lambda (r) (member (alist-get 'kind r) '("step" "stale")))
                                 (agent-q-agents-test--json-lines
                                  (expand-file-name "model-requests.jsonl" dir)))))))
    ;; While it was open, M-x agent-q-pending listed it, naming the agent.
    (should (= (length shown) 1))
    (should (string-prefix-p label (car (car shown))))
    ;; Withdrawn: no longer listed, nothing pending, nothing written.
    (agent-q-agents-test--wait (lambda () (null (agent-q-acp-test--pending-edits)))
                               10 "the pending list to forget the review")
    (should-not agent-q--pending)
    (should-not (file-exists-p file))
    (when exit
      (should-not (process-live-p process)))
    (let ((record (car (last (cl-remove-if-not
                              (lambda (r) (equal (alist-get 'tool r) "agent_edit"))
                              (agent-q-agents-test--json-lines agent-q-audit-file))))))
      ;; It ran (its review was open), and ended withdrawn.
      (should (equal (alist-get 'event record) "result"))
      (should (equal (alist-get 'status record) "cancelled"))
      (should (equal (alist-get 'path (alist-get 'arguments record)) file))
      (should (string-prefix-p label (alist-get 'client record)))
      (should (equal (alist-get 'withdrawn record)
                     (if exit "the agent exited" "the agent cancelled its turn (session/cancel)")))
      (should (string-match-p "withdrawn while its review was open" (alist-get 'how record))))))

;;;; The responder alone, on requests as the agents send them

(defun agent-q-acp-test--gemini-command (id command)
  "Gemini CLI's permission request ID for COMMAND, as gemini --acp 0.61.0 sends it.
It has no rawInput: the command is the title."
  `((jsonrpc . "2.0") (id . ,id) (method . "session/request_permission")
    (params (sessionId . "s-1")
            (options . [((optionId . "proceed_always") (name . "Allow for this session")
                         (kind . "allow_always"))
                        ((optionId . "proceed_once") (name . "Allow") (kind . "allow_once"))
                        ((optionId . "cancel") (name . "Reject") (kind . "reject_once"))])
            (toolCall (toolCallId . ,(format "run_shell_command__call_%d" id))
                      (status . "pending") (title . ,command)
                      (content . [((type . "content")
                                   (content (type . "text") (text . "[current working directory /tmp]")))])
                      (locations . []) (kind . "execute")))))

(ert-deftest agent-q-acp-test-responder ()
  "Rules decide unasked, across transports; unruled requests go to agent-shell when told.
agent-q's own tools are allowed; a request without reject_once is left to agent-shell."
  (let* ((dir (make-temp-file "agent-q-acp" t))
         (agent-q-audit-file (expand-file-name "audit.jsonl" dir))
         (agent-q-approval-rules '(("shell_command" (:command "git diff *" :agent "gemini") allow)
                                   ("shell_command" (:command "rm *") deny)))
         (agent-q-approval-function (lambda (&rest _) (error "Nothing should be asked")))
         (agent-q-prompt--session-approved nil)
         (agent-q-acp-unruled 'agent-shell)
         (calls (make-hash-table :test #'equal))
         (answers nil)
         (shell (generate-new-buffer " *agent-q-acp-test shell*")))
    (unwind-protect
        (with-current-buffer shell
          (setq default-directory "/tmp/")
          (setq-local agent-shell--state
                      '((:agent-config (:identifier . gemini-cli) (:buffer-name . "Gemini CLI"))
                        (:session (:id . "s-1"))))
          (cl-flet ((ask (id command)
                      (agent-q-acp-respond
                       (agent-q-acp-test--permission
                        (agent-q-acp-test--gemini-command id command) calls
                        (lambda (option) (push (cons id option) answers))))))
            ;; The :agent "gemini" rule of the terminal agent's hooks applies over ACP too.
            (should (ask 1 "git diff HEAD"))
            (should (ask 2 "rm -rf build"))
            (agent-q-agents-test--wait (lambda () (= (length answers) 2)) 10 "two answers")
            (should (equal (sort (copy-sequence answers) (lambda (a b) (< (car a) (car b))))
                           '((1 . "proceed_once") (2 . "cancel"))))
            ;; No rule: agent-shell's own dialog (the responder returns nil, answers nothing).
            (should-not (ask 3 "make test"))
            ;; agent-q's own tool: allowed at once (its server decides the call).
            (should (agent-q-acp-respond
                     `((:tool-call (:title . "read_file (agent-q MCP Server)") (:kind . "other"))
                       (:options ((:kind . "allow_once") (:option-id . "proceed_once"))
                                 ((:kind . "reject_once") (:option-id . "cancel")))
                       (:respond . ,(lambda (option) (push (cons 4 option) answers))))))
            (should (equal (car answers) '(4 . "proceed_once")))
            ;; Without a reject_once option agent-q cannot answer honestly: agent-shell's.
            (should-not (agent-q-acp-respond
                         `((:tool-call (:title . "ls") (:kind . "execute"))
                           (:options ((:kind . "allow_once") (:option-id . "y")))
                           (:respond . ,#'ignore))))
            (should (= (length answers) 3))
            ;; A deny rule for agent_edit rejects an edit without showing it, audited.
            (let* ((locked (expand-file-name "locked" dir))
                   (file (expand-file-name "x.txt" locked))
                   (agent-q-acp-unruled 'agent-q)
                   (agent-q-approval-rules `(("agent_edit" (:path ,locked) deny)))
                   (agent-q-review--review-driver (lambda (_) (error "No review should open"))))
              (make-directory locked)
              (should (agent-q-acp-respond
                       (agent-q-acp-test--permission
                        `((id . 6) (method . "session/request_permission")
                          (params (sessionId . "s-1")
                                  (options . [((optionId . "proceed_once") (kind . "allow_once"))
                                              ((optionId . "cancel") (kind . "reject_once"))])
                                  (toolCall (toolCallId . "write_file__call_6") (kind . "edit")
                                            (title . "Writing to x.txt")
                                            (content . [((type . "diff") (path . ,file)
                                                         (oldText . "") (newText . "x\n"))])
                                            (locations . [((path . ,file))]))))
                        calls (lambda (option) (push (cons 6 option) answers)))))
              (agent-q-agents-test--wait (lambda () (assq 6 answers)) 10 "the answer to 6")
              (should (equal (assq 6 answers) '(6 . "cancel")))
              (should (cl-find-if (lambda (r) (and (equal (alist-get 'tool r) "agent_edit")
                                                   (equal (alist-get 'event r) "denied")
                                                   (equal (alist-get 'decision r) "rule")))
                                  (agent-q-agents-test--json-lines agent-q-audit-file))))
            ;; Turning the mode off while a question waits answers it reject, not never.
            (let ((agent-q-acp-unruled 'agent-q)
                  (agent-shell-permission-responder-function nil)
                  (agent-shell-mcp-servers nil)
                  (agent-q-approval-function
                   (lambda (&rest _)
                     ;; Taking the question away ends this prompt (a non-local exit).
                     (agent-q-agent-shell-mode -1)
                     :approved)))
              (agent-q-agent-shell-mode 1)
              (should (ask 5 "make test"))
              (agent-q-agents-test--wait (lambda () (assq 5 answers)) 10 "the answer to 5")
              (should (equal (assq 5 answers) '(5 . "cancel")))
              (should-not agent-q-agent-shell-mode)
              (should-not agent-shell-permission-responder-function))
            ;; The audit names the agent over ACP.
            (dolist (record (agent-q-agents-test--json-lines agent-q-audit-file))
              (should (string-prefix-p "Gemini CLI (ACP) s-1" (alist-get 'client record))))))
      (agent-q-agent-shell-mode -1)
      (kill-buffer shell)
      (agent-q-cancel-pending)
      (delete-directory dir t))))

(ert-deftest agent-q-acp-test-mode ()
  "On, the mode installs the responder and agent-q's server entry; off restores both.
The entry's lambdas start the server, or say it must be started."
  (let ((agent-shell-permission-responder-function #'ignore)
        (agent-shell-mcp-servers '(((name . "other") (type . "http") (url . "http://x"))))
        (agent-q-mcp-connection-file (make-temp-file "agent-q-acp-connection"))
        (agent-q-mcp-port 0))
    (unwind-protect
        (progn
          (agent-q-agent-shell-mode 1)
          (agent-q-agent-shell-mode 1)      ; twice: still one entry, the old responder kept
          (should (eq agent-shell-permission-responder-function #'agent-q-acp-respond))
          (should (equal (mapcar (lambda (s) (map-elt s 'name)) agent-shell-mcp-servers)
                         '("other" "agent-q")))
          (let ((agent-q-acp-start-server nil))
            (should-not (agent-q-mcp-running-p))
            (should-error (agent-q-acp-test--resolve (cadr agent-shell-mcp-servers))
                          :type 'user-error))
          (let ((entry (agent-q-acp-test--resolve (cadr agent-shell-mcp-servers))))
            (should (agent-q-mcp-running-p))
            (should (equal (map-elt entry 'url) agent-q-mcp--url))
            (should (equal (map-elt entry 'headers)
                           (vector `((name . "Authorization")
                                     (value . ,(concat "Bearer " agent-q-mcp--token)))))))
          (agent-q-agent-shell-mode -1)
          (should (eq agent-shell-permission-responder-function #'ignore))
          (should (equal (mapcar (lambda (s) (map-elt s 'name)) agent-shell-mcp-servers)
                         '("other"))))
      (agent-q-agent-shell-mode -1)
      (agent-q-mcp-stop)
      (delete-file agent-q-mcp-connection-file))))

;;;; The real agent-shell, when one is provided

(defun agent-q-acp-test--agent-shell-dir ()
  "The directory of a real agent-shell under $AGENT_Q_VENDOR, or nil."
  (let ((vendor (getenv "AGENT_Q_VENDOR")))
    (when (and vendor (not (string-empty-p vendor)))
      (let ((dir (expand-file-name "agent-shell" vendor)))
        (and (file-exists-p (expand-file-name "agent-shell.el" dir)) dir)))))

(defconst agent-q-acp-test--agent-shell-absent
  (cond ((version< emacs-version "29.1")
         (format "agent-shell needs Emacs 29.1 or later; this is %s" emacs-version))
        ((not (agent-q-acp-test--agent-shell-dir))
         "no agent-shell/agent-shell.el under $AGENT_Q_VENDOR (with shell-maker/ and acp/ beside it)"))
  "Why `agent-q-acp-test-agent-shell' is not defined here, or nil when it is.")

(if agent-q-acp-test--agent-shell-absent
    ;; Not a skip: CI fails on any skip, and agent-shell is not on the CI machine.
    (message "agent-q-acp-test-agent-shell is not defined: %s" agent-q-acp-test--agent-shell-absent)
  (ert-deftest agent-q-acp-test-agent-shell ()
    "The mode against the real agent-shell's variables and option actions."
    (let ((vendor (expand-file-name (getenv "AGENT_Q_VENDOR"))))
      (dolist (package '("agent-shell" "shell-maker" "acp"))
        (add-to-list 'load-path (expand-file-name package vendor))))
    (require 'agent-shell)
    (let ((agent-shell-permission-responder-function #'ignore)
          (agent-shell-mcp-servers '(((name . "other") (type . "http") (url . "http://x")))))
      (agent-q-agent-shell-mode 1)
      (unwind-protect
          (progn
            (should (eq agent-shell-permission-responder-function #'agent-q-acp-respond))
            (should (equal (mapcar (lambda (s) (map-elt s 'name)) agent-shell-mcp-servers)
                           '("other" "agent-q"))))
        (agent-q-agent-shell-mode -1))
      (should (eq agent-shell-permission-responder-function #'ignore))
      (should (equal (mapcar (lambda (s) (map-elt s 'name)) agent-shell-mcp-servers) '("other"))))
    ;; The fixture's :options are agent-shell's own enriched actions.
    (when (fboundp 'agent-shell--make-permission-actions)
      (let* ((options [((optionId . "proceed_always") (name . "Allow for this session")
                        (kind . "allow_always"))
                       ((optionId . "proceed_once") (name . "Allow") (kind . "allow_once"))
                       ((optionId . "cancel") (name . "Reject") (kind . "reject_once"))])
             (actions (funcall 'agent-shell--make-permission-actions options)))
        (should (equal (agent-q-acp--option-id actions "allow_once") "proceed_once"))
        (should (equal (agent-q-acp--option-id actions "reject_once") "cancel"))))))

;;;; The tests

(ert-deftest agent-q-acp-test-gemini ()
  "Gemini CLI over ACP (gemini --acp): agent-q's tools, commands and edits decided in agent-q."
  (agent-q-acp-test--converse 'gemini))

(ert-deftest agent-q-acp-test-claude ()
  "Claude over ACP (claude-agent-acp): agent-q's tools, commands and edits decided in agent-q."
  (agent-q-acp-test--converse 'claude))

(provide 'agent-q-acp-test)

;;; agent-q-acp-test.el ends here
