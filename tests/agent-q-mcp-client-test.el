;;; agent-q-mcp-client-test.el --- agent-q's MCP server driven by real MCP clients  -*- lexical-binding: t -*-

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

;; End-to-end tests of the MCP server: this batch Emacs
;; serves (`agent-q-mcp-start', with a temporary connection file and
;; audit file), and the official MCP Python SDK drives it, run by
;; tests/mcp-client/client.py as an asynchronous subprocess while Emacs
;; goes on processing events -- the server's calls reach Emacs through
;; the module's channel, and are run by the asynchronous executor, whose
;; prompts come from timers.  The approval function is the test's: it
;; answers deterministically and records what it was asked, with
;; `agent-q-approval-context'.
;;
;; Two real clients: the SDK 1.30.0 (initialize and sessions, protocol
;; 2025-11-25; over Streamable HTTP and over the stdio relay
;; bin/agent-q-mcp) and the SDK 2.3.0, the released client that speaks
;; the stateless 2026-07-28 revision (server/discover, no session).
;; scripts/ensure-deps.sh --test installs each in a virtual environment
;; under target/mcp-venv/, pinned by tests/mcp-client/sdkN.txt; without
;; them every test here fails, saying so.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'json)
(require 'agent-q)
(require 'agent-q-keys-support)
(require 'agent-q-mcp)

(defvar agent-q-allowed-directories)
(defvar agent-q-mcp-allowed-directories)
(defvar agent-q-prompt--session-approved)
(defvar agent-q--pending)

(defconst agent-q-mcp-client-test--root
  (file-name-directory (directory-file-name
                        (file-name-directory (or load-file-name buffer-file-name))))
  "The root of the source tree.")

(defconst agent-q-mcp-client-test--client
  (expand-file-name "tests/mcp-client/client.py" agent-q-mcp-client-test--root)
  "The Python MCP client script.")

(defconst agent-q-mcp-client-test--relay
  (expand-file-name "bin/agent-q-mcp" agent-q-mcp-client-test--root)
  "The stdio relay that `make build' builds.")

(defconst agent-q-mcp-client-test--timeout 40
  "Seconds a client run may take before the test fails.
Each wait inside the client is shorter.")

(defconst agent-q-mcp-client-test--client-name "agent-q-e2e 1.2.3"
  "How client.py introduces itself: name and version.")

(defun agent-q-mcp-client-test--python (sdk)
  "The Python of the virtual environment of SDK (`sdk1' or `sdk2')."
  (let ((python (expand-file-name (format "target/mcp-venv/%s/bin/python" sdk)
                                  agent-q-mcp-client-test--root)))
    (unless (file-executable-p python)
      (ert-fail (format "%s is missing: run scripts/ensure-deps.sh --test (make test does)" python)))
    python))

;;;; The server under test

(defvar agent-q-mcp-client-test--dir nil
  "The temporary directory of the running test: connection, audit and data files.")

(defvar agent-q-mcp-client-test--asked nil
  "What the approval function was asked, newest first: (TOOL ARGS CONTEXT).")

(defvar agent-q-mcp-client-test--process nil
  "The process of the client run under way.")

(defvar agent-q-mcp-client-test--decide nil
  "Function of (TOOL ARGS) giving the test's approval decision.")

(defun agent-q-mcp-client-test--approve (tool args)
  "Decide about TOOL with ARGS as the test wants; record them with the context."
  (push (list tool args agent-q-approval-context) agent-q-mcp-client-test--asked)
  (funcall agent-q-mcp-client-test--decide tool args))

(defmacro agent-q-mcp-client-test--with-server (&rest body)
  "Run BODY while this Emacs serves MCP, in a fresh temporary directory.
The directory is the only one read freely (it is the server's fixed
set, for clients without roots); the connection file and the audit
file are in it; dangerous calls are denied unless the test sets
`agent-q-mcp-client-test--decide'."
  (declare (indent 0) (debug t))
  `(let* ((agent-q-mcp-client-test--dir (file-name-as-directory
                                         (make-temp-file "agent-q-mcp-e2e" t)))
          (agent-q-mcp-connection-file (expand-file-name "connection.json"
                                                         agent-q-mcp-client-test--dir))
          (agent-q-audit-file (expand-file-name "audit.jsonl" agent-q-mcp-client-test--dir))
          (agent-q-allowed-directories (list agent-q-mcp-client-test--dir))
          (agent-q-mcp-allowed-directories (list agent-q-mcp-client-test--dir))
          (agent-q-approval-function #'agent-q-mcp-client-test--approve)
          (agent-q-mcp-client-test--decide (lambda (_tool _args) :denied))
          (agent-q-mcp-client-test--asked nil)
          (agent-q-prompt--session-approved nil)
          (agent-q-mcp-port 0)
          (agent-q-mcp-max-safety-level :dangerous)
          (agent-q-mcp-confirm-safety-levels '(:cautious :dangerous))
          (agent-q-mcp-progress-interval 15))
     (unwind-protect
         (progn
           (agent-q-mcp-start)
           (should (file-exists-p agent-q-mcp-connection-file))
           ,@body)
       (agent-q-mcp-stop)
       (agent-q-cancel-pending)
       (delete-directory agent-q-mcp-client-test--dir t))))

(defun agent-q-mcp-client-test--file (name &optional content)
  "The file NAME in the test's directory, written with CONTENT when given."
  (let ((file (expand-file-name name agent-q-mcp-client-test--dir)))
    (when content
      (with-temp-file file (insert content)))
    file))

(defun agent-q-mcp-client-test--file-content (file)
  "The text of FILE, or nil when it does not exist."
  (and (file-exists-p file)
       (with-temp-buffer (insert-file-contents file) (buffer-string))))

(defun agent-q-mcp-client-test--audit ()
  "The audit file's records, oldest first, as alists."
  (let ((file agent-q-audit-file))
    (and (file-exists-p file)
         (with-temp-buffer
           (insert-file-contents file)
           (mapcar (lambda (line)
                     (json-parse-string line :object-type 'alist :array-type 'list
                                        :null-object nil :false-object :false))
                   (split-string (buffer-string) "\n" t))))))

(defun agent-q-mcp-client-test--audited (tool event)
  "The audit records of TOOL with EVENT."
  (cl-remove-if-not (lambda (r) (and (equal (alist-get 'tool r) tool)
                                     (equal (alist-get 'event r) event)))
                    (agent-q-mcp-client-test--audit)))

;;;; Running the client

(cl-defstruct (agent-q-mcp-client-test--run (:constructor agent-q-mcp-client-test--run-create)
                                            (:copier nil))
  "A run of client.py: its process, the events it printed, its stderr."
  process (pending "") events stderr exit)

(defun agent-q-mcp-client-test--event (run name)
  "The first event called NAME that RUN printed (an alist), or nil."
  (cl-find-if (lambda (e) (equal (alist-get 'event e) name))
              (agent-q-mcp-client-test--run-events run)))

(defun agent-q-mcp-client-test--events (run name)
  "Every event called NAME that RUN printed, in order."
  (cl-remove-if-not (lambda (e) (equal (alist-get 'event e) name))
                    (agent-q-mcp-client-test--run-events run)))

(defun agent-q-mcp-client-test--describe (run)
  "What RUN printed and said on stderr, for a failure message."
  (format "exit %s\nevents: %S\nstderr: %s"
          (agent-q-mcp-client-test--run-exit run)
          (agent-q-mcp-client-test--run-events run)
          (with-current-buffer (agent-q-mcp-client-test--run-stderr run)
            (buffer-string))))

;; Started apart from waited for, so that a test can act (answer in a
;; terminal Emacs, say) while the client's call is under way.

(cl-defun agent-q-mcp-client-test--client-start
    (scenario arguments &key (sdk 'sdk1) on-event
              (connection-file agent-q-mcp-connection-file))
  "Start client.py SCENARIO with ARGUMENTS (an alist, sent as JSON) under SDK.
CONNECTION-FILE (by default the one this Emacs's server wrote) is
added to ARGUMENTS.  ON-EVENT, when non-nil, is called with the
process and each event as it is printed.  Return the run at once;
its events accumulate as Emacs processes output.  Fail the test
when SDK's virtual environment is missing."
  (let* ((stderr (generate-new-buffer " *agent-q-mcp-client stderr*"))
         (run (agent-q-mcp-client-test--run-create :stderr stderr))
         (json (json-encode (cons (cons 'connection_file connection-file) arguments)))
         (process
          (make-process
           :name "agent-q-mcp-client" :buffer nil :stderr stderr :noquery t
           :connection-type 'pipe :coding 'utf-8
           :command (list (agent-q-mcp-client-test--python sdk)
                          agent-q-mcp-client-test--client scenario json)
           :filter
           (lambda (proc output)
             (let ((lines (split-string (concat (agent-q-mcp-client-test--run-pending run) output)
                                        "\n")))
               (setf (agent-q-mcp-client-test--run-pending run) (car (last lines)))
               (dolist (line (butlast lines))
                 (unless (string-empty-p line)
                   (let ((event (json-parse-string line :object-type 'alist :array-type 'list
                                                   :null-object nil :false-object :false)))
                     (setf (agent-q-mcp-client-test--run-events run)
                           (append (agent-q-mcp-client-test--run-events run) (list event)))
                     (when on-event
                       (funcall on-event proc event)))))))
           :sentinel
           (lambda (proc _event)
             (unless (process-live-p proc)
               (setf (agent-q-mcp-client-test--run-exit run) (process-exit-status proc)))))))
    (setf (agent-q-mcp-client-test--run-process run) process)
    (setq agent-q-mcp-client-test--process process)
    run))

(defun agent-q-mcp-client-test--client-finish (run scenario &optional seconds)
  "Wait until the client RUN of SCENARIO exited; return RUN.
Fail the test if it did not within SECONDS (default
`agent-q-mcp-client-test--timeout') or did not end with its \"done\"
event.  Emacs keeps processing output and timers meanwhile."
  (let ((process (agent-q-mcp-client-test--run-process run))
        (deadline (+ (float-time) (or seconds agent-q-mcp-client-test--timeout))))
    (unwind-protect
        (while (and (not (agent-q-mcp-client-test--run-exit run))
                    (< (float-time) deadline))
          ;; Any process (the channel from the server's threads, the client),
          ;; and timers (the executor's prompts), run meanwhile.
          (accept-process-output nil 0.05))
      (when (process-live-p process)
        (delete-process process)))
    (unless (and (agent-q-mcp-client-test--run-exit run)
                 (agent-q-mcp-client-test--event run "done"))
      (ert-fail (format "client.py %s did not finish well:\n%s"
                        scenario (agent-q-mcp-client-test--describe run))))
    run))

(cl-defun agent-q-mcp-client-test--client (scenario arguments &key (sdk 'sdk1) on-event)
  "Run client.py SCENARIO with ARGUMENTS (an alist, sent as JSON) under SDK.
The connection file is added to ARGUMENTS.  Emacs keeps serving
meanwhile.  ON-EVENT, when non-nil, is called with the process and
each event as it is printed.  Return the run once the client exited;
fail the test if it did not within `agent-q-mcp-client-test--timeout'
seconds or did not end with its \"done\" event."
  (agent-q-mcp-client-test--client-finish
   (agent-q-mcp-client-test--client-start scenario arguments :sdk sdk :on-event on-event)
   scenario))

(defun agent-q-mcp-client-test--results (run)
  "The \"result\" events of RUN: alists with isError and text."
  (agent-q-mcp-client-test--events run "result"))

(defun agent-q-mcp-client-test--error-p (result)
  "Non-nil when RESULT (an event) is a failure result (isError true)."
  (eq (alist-get 'isError result) t))

;;;; Lifecycle and tools/list

(defun agent-q-mcp-client-test--expected-hints (name level)
  "What the built-in tool NAME at LEVEL may do, as MCP hints.
A list (READ-ONLY DESTRUCTIVE IDEMPOTENT OPEN-WORLD) of t and :false."
  (let ((b (lambda (x) (if x t :false))))
    (mapcar (lambda (x) (funcall b x))
            (pcase name
              ;; Evaluate arbitrary code: anything may change, anywhere.
              ((or "eval_form" "compile_form") '(nil t nil t))
              ;; Runs macros' code, but only expands: nothing is destroyed.
              ("macroexpand_form" '(nil nil nil nil))
              ;; Reads, remote files (TRAMP) too once the user allows it.
              ("read_file" '(t nil t t))
              ;; Replaces a file's whole content: twice is the same as once.
              ("write_file" '(nil t t t))
              ((or "propose_file_edit" "rename_symbol") '(nil t nil t))
              (_ (should (eq level :safe))
                 '(t nil t nil))))))

(ert-deftest agent-q-mcp-client-initialize-and-list-tools ()
  "The SDK 1.x initializes (version negotiated) and lists every tool, annotated."
  (agent-q-mcp-client-test--with-server
    (let* ((run (agent-q-mcp-client-test--client "tools" nil))
           (init (agent-q-mcp-client-test--event run "initialized"))
           (tools (alist-get 'tools (agent-q-mcp-client-test--event run "tools")))
           (registered (agent-q-list-registered-tools)))
      ;; The SDK 1.30 asks for its newest version, which the server speaks.
      (should (equal (alist-get 'protocolVersion init) "2025-11-25"))
      (should (equal (alist-get 'serverName init) "agent-q"))
      (should (eq (alist-get 'listChanged init) t))
      (should (= (length tools) 25))
      (should (equal (sort (mapcar (lambda (tool) (alist-get 'name tool)) tools) #'string<)
                     (sort registered #'string<)))
      (dolist (tool tools)
        (let* ((name (alist-get 'name tool))
               (schema (alist-get 'inputSchema tool))
               (annotations (alist-get 'annotations tool))
               (level (agent-q-tool-safety-level (agent-q-get-tool name))))
          (should (equal (alist-get 'type schema) "object"))
          ;; Every required parameter is described.
          (dolist (required (alist-get 'required schema))
            (should (assq (intern required) (alist-get 'properties schema))))
          ;; The hints say what each tool can do, all four always stated.
          (should (equal (list name
                               (alist-get 'readOnlyHint annotations)
                               (alist-get 'destructiveHint annotations)
                               (alist-get 'idempotentHint annotations)
                               (alist-get 'openWorldHint annotations))
                         (cons name (agent-q-mcp-client-test--expected-hints name level))))))
      (let ((read-file (cl-find "read_file" tools :key (lambda (tool) (alist-get 'name tool))
                                :test #'equal)))
        (should (equal (alist-get 'required (alist-get 'inputSchema read-file)) '("path")))))))

;;;; tools/call

(ert-deftest agent-q-mcp-client-read-file ()
  "A read_file in the allowed directory returns the text; audited with the client."
  (agent-q-mcp-client-test--with-server
    (let* ((file (agent-q-mcp-client-test--file "hello.txt" "Hello from the e2e test\nline two\n"))
           (run (agent-q-mcp-client-test--client
                 "calls" `((calls . [((name . "read_file") (arguments (path . ,file)))]))))
           (result (car (agent-q-mcp-client-test--results run)))
           (audited (agent-q-mcp-client-test--audited "read_file" "result")))
      (should-not (agent-q-mcp-client-test--error-p result))
      (should (string-match-p "Hello from the e2e test\n.*line two" (alist-get 'text result)))
      ;; A safe read of the allowed directory asks nobody...
      (should-not agent-q-mcp-client-test--asked)
      ;; ...but every MCP call is audited, naming its client.
      (should (= (length audited) 1))
      (should (equal (alist-get 'client (car audited))
                     (concat agent-q-mcp-client-test--client-name " (MCP)")))
      (should (eq (alist-get 'success (car audited)) t)))))

(ert-deftest agent-q-mcp-client-write-file-denied-then-approved ()
  "A write_file denied leaves the file as it was (isError); approved, writes it.
The approval function is told which client asks, and the audit log says so."
  (agent-q-mcp-client-test--with-server
    (let* ((denied (agent-q-mcp-client-test--file "denied.txt" "original\n"))
           (approved (agent-q-mcp-client-test--file "approved.txt"))
           (agent-q-mcp-client-test--decide
            (lambda (_tool args)
              (if (string-suffix-p "approved.txt" (plist-get args :path))
                  :approved
                '(:denied "not this one"))))
           (run (agent-q-mcp-client-test--client
                 "calls" `((calls . [((name . "write_file")
                                      (arguments (path . ,denied) (content . "overwritten\n")))
                                     ((name . "write_file")
                                      (arguments (path . ,approved) (content . "written by MCP\n")))]))))
           (results (agent-q-mcp-client-test--results run)))
      (should (= (length results) 2))
      (should (agent-q-mcp-client-test--error-p (nth 0 results)))
      (should (string-match-p "denied" (alist-get 'text (nth 0 results))))
      (should (string-match-p "not this one" (alist-get 'text (nth 0 results))))
      (should (equal (agent-q-mcp-client-test--file-content denied) "original\n"))
      (should-not (agent-q-mcp-client-test--error-p (nth 1 results)))
      (should (equal (agent-q-mcp-client-test--file-content approved) "written by MCP\n"))
      ;; Asked twice, in order, each time told the client.
      (should (equal (mapcar #'car (reverse agent-q-mcp-client-test--asked))
                     '("write_file" "write_file")))
      (dolist (asked agent-q-mcp-client-test--asked)
        (should (string-match-p (regexp-quote agent-q-mcp-client-test--client-name)
                                (plist-get (nth 2 asked) :client))))
      (let ((refused (agent-q-mcp-client-test--audited "write_file" "denied"))
            (done (agent-q-mcp-client-test--audited "write_file" "result")))
        (should (= (length refused) 1))
        (should (= (length done) 1))
        (dolist (record (append refused done))
          (should (equal (alist-get 'client record)
                         (concat agent-q-mcp-client-test--client-name " (MCP)"))))
        (should (equal (alist-get 'decision (car done)) "approved")))
      ;; The log buffer names the client too.
      (with-current-buffer agent-q-log-buffer-name
        (should (string-match-p (regexp-quote agent-q-mcp-client-test--client-name)
                                (buffer-string)))))))

(ert-deftest agent-q-mcp-client-allow-rule-does-not-cover-protected-files ()
  "Under an allow rule for the project, an MCP client rewrote .mcp.json, .claude/settings.local.json,
.dir-locals.el and .git/hooks/pre-commit unasked."
  (agent-q-mcp-client-test--with-server
    (let* ((proj (file-name-as-directory
                  (file-truename (expand-file-name "proj" agent-q-mcp-client-test--dir))))
           (agent-q-approval-rules `(("write_file" (:path ,proj) allow)))
           (names '("ok.txt" ".mcp.json" ".claude/settings.local.json" ".dir-locals.el"
                    ".git/hooks/pre-commit"))
           (run (progn
                  (make-directory proj t)
                  (agent-q-mcp-client-test--client
                   "calls" `((calls . ,(vconcat
                                        (mapcar (lambda (name)
                                                  `((name . "write_file")
                                                    (arguments (path . ,(expand-file-name name proj))
                                                               (content . "{\"allow\": [\"*\"]}\n"))))
                                                names)))))))
           (results (agent-q-mcp-client-test--results run)))
      (should (= (length results) (length names)))
      ;; The ordinary file: the rule allowed it, nobody was asked about it.
      (should-not (agent-q-mcp-client-test--error-p (nth 0 results)))
      (should (file-exists-p (expand-file-name "ok.txt" proj)))
      ;; Each protected file was asked about (and denied), saying why.
      (should (equal (length agent-q-mcp-client-test--asked) (1- (length names))))
      (dolist (asked agent-q-mcp-client-test--asked)
        (should (plist-get (nth 2 asked) :protected))
        (should (string-match-p "governs what agents" (plist-get (nth 2 asked) :reason))))
      (dolist (name (cdr names))
        (should-not (file-exists-p (expand-file-name name proj))))
      (dolist (result (cdr results))
        (should (agent-q-mcp-client-test--error-p result))))))

(ert-deftest agent-q-mcp-client-unknown-tool-and-invalid-arguments ()
  "An unknown tool and invalid arguments are failure results that name the problem.
The server refuses the unknown tool before the call reaches Emacs; the
calls with invalid arguments reach the executor, which audits them."
  (agent-q-mcp-client-test--with-server
    (let* ((run (agent-q-mcp-client-test--client
                 "calls" '((calls . [((name . "no_such_tool") (arguments (x . 1)))
                                     ((name . "read_file") (arguments (path . 42)))
                                     ((name . "read_file") (arguments (limit . 3)))]))))
           (results (agent-q-mcp-client-test--results run)))
      (should (= (length results) 3))
      (should (cl-every #'agent-q-mcp-client-test--error-p results))
      (should (string-match-p "Unknown tool: no_such_tool: agent-q offers no tool of that name"
                              (alist-get 'text (nth 0 results))))
      (should (string-match-p "Invalid arguments for read_file.*path" (alist-get 'text (nth 1 results))))
      (should (string-match-p "read_file.*path" (alist-get 'text (nth 2 results))))
      (should-not agent-q-mcp-client-test--asked)
      ;; Every MCP call that reaches Emacs is audited, the failures too.
      (should (= (length (agent-q-mcp-client-test--audited "read_file" "result")) 2))
      (should-not (agent-q-mcp-client-test--audit-of "no_such_tool")))))

(ert-deftest agent-q-mcp-client-tools-above-the-level-are-not-offered ()
  "Above `agent-q-mcp-max-safety-level', tools are neither listed nor run.
The server refuses a call of one, naming the level, before it reaches
Emacs: no prompt, no audit, no client noted.  Set with Customize, the
level reaches a running server at once."
  (agent-q-mcp-client-test--with-server
    (customize-set-variable 'agent-q-mcp-max-safety-level :cautious)
    (let* ((file (agent-q-mcp-client-test--file "kept.txt" "kept\n"))
           (tools (alist-get 'tools (agent-q-mcp-client-test--event
                                     (agent-q-mcp-client-test--client "tools" nil)
                                     "tools")))
           (names (mapcar (lambda (tool) (alist-get 'name tool)) tools))
           (run (agent-q-mcp-client-test--client
                 "calls" `((calls . [((name . "write_file")
                                      (arguments (path . ,file) (content . "changed\n")))]))))
           (result (car (agent-q-mcp-client-test--results run))))
      (should (equal (sort names #'string<)
                     (sort (mapcar #'agent-q-tool-name
                                   (agent-q-get-tools :max-safety-level :cautious))
                           #'string<)))
      (should-not (member "write_file" names))
      (should (agent-q-mcp-client-test--error-p result))
      (should (equal (alist-get 'text result)
                     (concat "Tool write_file is not offered over MCP: it is dangerous, and MCP "
                             "clients get tools up to cautious only "
                             "(agent-q-mcp-max-safety-level). Nothing ran.")))
      (should-not agent-q-mcp-client-test--asked)
      (should (equal (agent-q-mcp-client-test--file-content file) "kept\n"))
      (should-not (agent-q-mcp-client-test--audit-of "write_file"))
      (should-not (plist-get (agent-q-mcp-status) :connected)))))

(defun agent-q-mcp-client-test--audit-of (tool)
  "Every audit record of TOOL."
  (cl-remove-if-not (lambda (r) (equal (alist-get 'tool r) tool))
                    (agent-q-mcp-client-test--audit)))

;;;; Security

(ert-deftest agent-q-mcp-client-token-required ()
  "A wrong token, or none, is refused with HTTP 401; the right one is served."
  (agent-q-mcp-client-test--with-server
    (let* ((token (plist-get (agent-q-mcp-status) :token))
           (status (lambda (headers)
                     (agent-q-mcp-client-test--event
                      (agent-q-mcp-client-test--client "http-status" `((headers . ,headers)))
                      "http")))
           (wrong (funcall status `((Authorization . ,(concat "Bearer " (make-string 64 ?0)))))))
      (should (= (alist-get 'status wrong) 401))
      (should (string-match-p "\\`Bearer" (alist-get 'wwwAuthenticate wrong)))
      (should-not (alist-get 'sessionId wrong))
      (should (= (alist-get 'status (funcall status nil)) 401))
      (let ((right (funcall status `((Authorization . ,(concat "Bearer " token))))))
        (should (= (alist-get 'status right) 200))
        (should (alist-get 'sessionId right))))))

(ert-deftest agent-q-mcp-client-foreign-origin-refused ()
  "A request from a foreign Origin is refused with HTTP 403, even with the token."
  (agent-q-mcp-client-test--with-server
    (let* ((auth (concat "Bearer " (plist-get (agent-q-mcp-status) :token)))
           (status (lambda (origin)
                     (alist-get 'status
                                (agent-q-mcp-client-test--event
                                 (agent-q-mcp-client-test--client
                                  "http-status" `((headers (Authorization . ,auth) (Origin . ,origin))))
                                 "http")))))
      (should (= (funcall status "https://evil.example") 403))
      (should (= (funcall status "http://localhost.evil.example:8080") 403))
      (should (= (funcall status "http://localhost:3000") 200)))))

;;;; Identity: bridges and MCP clients

(defvar agent-q-mcp-client-test--ran nil
  "Set by the forms the identity test's calls evaluate.")

(defvar agent-q-builtins--history)
(defvar agent-q-builtins--last-error)
(defvar agent-q-rules--session)

(ert-deftest agent-q-mcp-client-no-client-info-passes-for-the-gptel-bridge ()
  "No clientInfo reaches a rule, an \"a\" or the history of the gptel bridge.
The bridge has an allow rule for eval_form, approved compile_form for
the session with \"a\", and evaluated a form that read a secret.  MCP
clients that call themselves gptel in every way a name can be spelled
are asked about both (and denied: nothing runs), and their
get_repl_history and get_last_error do not show the bridge's secret."
  (agent-q-mcp-client-test--with-server
    (let* ((agent-q-approval-rules '(("eval_form" (:client "gptel") allow)))
           (agent-q-rules--session nil)
           (agent-q-confirm-safety-levels '(:cautious :dangerous))
           (agent-q-builtins--history nil)
           (agent-q-builtins--last-error nil)
           (agent-q-approval-function #'agent-q-approve-in-minibuffer)
           (answer ?a)
           (prompts nil))
      (cl-letf (((symbol-function 'agent-q-prompt--read-key)
                 (agent-q-test-key-reader (lambda () answer)
                                          (lambda (prompt) (push prompt prompts)))))
        ;; The bridge: its rule runs eval_form unasked, "a" approves compile_form.
        (let* ((agent-q-client "gptel")
               (results (agent-q-execute-tool-calls
                         '((:id "b1" :name "eval_form"
                                :arguments (:form "(concat \"sec\" \"ret-42\")"))
                           (:id "b2" :name "compile_form" :arguments (:form "(+ 1 2)"))
                           (:id "b3" :name "eval_form"
                                :arguments (:form "(car (list-secret-42))"))))))
          (should (equal '(t t nil) (mapcar (lambda (r) (plist-get r :success)) results)))
          (should (= 1 (length prompts))))
        (setq prompts nil answer ?n)
        (dolist (identity '(("gptel" "1.0") ("" "gptel") ("gptel (MCP)" "") ("gptel" "")
                            ("gp\u200btel\u202e" "1") ("gptel\n" "\ngptel") ("\u0007gptel" "")))
          (let* ((run (agent-q-mcp-client-test--client
                       "calls" `((client_name . ,(car identity)) (client_version . ,(cadr identity))
                                 (calls . [((name . "eval_form")
                                            (arguments (form . "(setq agent-q-mcp-client-test--ran t)")))
                                           ((name . "compile_form")
                                            (arguments (form . "(setq agent-q-mcp-client-test--ran t)")))
                                           ((name . "get_repl_history") (arguments))
                                           ((name . "get_last_error") (arguments))]))))
                 (results (agent-q-mcp-client-test--results run)))
            (should (equal (list identity '(t t :false :false))
                           (list identity (mapcar (lambda (r) (alist-get 'isError r)) results))))
            (should (string-match-p "denied" (alist-get 'text (nth 0 results))))
            (should (string-match-p "denied" (alist-get 'text (nth 1 results))))
            (should-not agent-q-mcp-client-test--ran)
            ;; Asked about both calls, each prompt naming an MCP client.
            (should (= 2 (length prompts)))
            (dolist (prompt prompts)
              (should (string-match-p "(MCP)" prompt)))
            (setq prompts nil)
            (dolist (result (nthcdr 2 results))
              (should-not (string-match-p "ret-42\\|list-secret" (alist-get 'text result))))))
        ;; The bridge still sees its own.
        (let ((agent-q-client "gptel"))
          (should (string-match-p "ret-42" (plist-get (car (agent-q-execute-tool-calls
                                                            '((:id "h" :name "get_repl_history"))))
                                                      :content)))
          (should (string-match-p "list-secret-42"
                                  (plist-get (car (agent-q-execute-tool-calls
                                                   '((:id "e" :name "get_last_error"))))
                                             :content))))))))

;;;; Cancellation

(ert-deftest agent-q-mcp-client-cancel-while-approval-pending ()
  "Cancelling while the approval is asked withdraws it: nothing runs.
The approval function is asked from the executor's timer; it tells the
client it is being asked and then waits, as a prompt would, processing
events.  If the cancellation did not withdraw it, it would approve
after its wait and the file would be written.  Either way it tells the
client how it ended."
  (agent-q-mcp-client-test--with-server
    (let* ((target (agent-q-mcp-client-test--file "cancelled.txt"))
           (returned nil)
           (agent-q-mcp-client-test--decide
            (lambda (_tool _args)
              (process-send-string agent-q-mcp-client-test--process "asked\n")
              (unwind-protect
                  (let ((deadline (+ (float-time) 10)))
                    (while (< (float-time) deadline)
                      (accept-process-output nil 0.05))
                    (setq returned t)
                    :approved)
                (process-send-string agent-q-mcp-client-test--process
                                     (if returned "returned\n" "withdrawn\n")))))
           (run (agent-q-mcp-client-test--client
                 "cancel" `((name . "write_file")
                            (arguments (path . ,target) (content . "must not be written\n")))))
           (told (mapcar (lambda (e) (alist-get 'line e))
                         (agent-q-mcp-client-test--events run "told"))))
      (should (equal told '("asked" "withdrawn")))
      (should (= (length agent-q-mcp-client-test--asked) 1))
      (should-not returned)
      (should-not (file-exists-p target))
      ;; The client was told, by progress, that its call waits for a decision in Emacs.
      (should (cl-some (lambda (e) (string-match-p "decision" (or (alist-get 'message e) "")))
                       (agent-q-mcp-client-test--events run "progress")))
      ;; Emacs's side saw the withdrawal: audited as cancelled, nothing left pending.
      (let ((cancelled (agent-q-mcp-client-test--audited "write_file" "cancelled")))
        (should (= (length cancelled) 1))
        (should (equal (alist-get 'decision (car cancelled)) "none"))
        (should (equal (alist-get 'client (car cancelled))
                       (concat agent-q-mcp-client-test--client-name " (MCP)")))
        (should (string-match-p "cancelled" (alist-get 'content (car cancelled)))))
      (should-not (agent-q-mcp-client-test--audited "write_file" "result"))
      (should-not agent-q--pending)
      (should (= 0 (plist-get (agent-q-mcp-status) :pending))))))

;;;; Tool list changes

(ert-deftest agent-q-mcp-client-tools-list-changed ()
  "Registering a tool sends notifications/tools/list_changed; the new list has it."
  (agent-q-mcp-client-test--with-server
    (unwind-protect
        (let* ((run (agent-q-mcp-client-test--client
                     "list-changed" nil
                     :on-event
                     (lambda (process event)
                       (when (equal (alist-get 'event event) "ready")
                         (agent-q-register-tool
                          (agent-q-define-tool "e2e_probe" "A tool the e2e test adds."
                                               '((:name "x" :type :string))
                                               :handler (lambda (_args) "probed")))
                         (process-send-string process "registered\n")))))
               (names (alist-get 'names (agent-q-mcp-client-test--event run "tools"))))
          (should (= (alist-get 'count (agent-q-mcp-client-test--event run "ready")) 25))
          (should (agent-q-mcp-client-test--event run "list_changed"))
          (should (= (length names) 26))
          (should (member "e2e_probe" names)))
      (agent-q-remove-tool "e2e_probe"))))

;; The same in the stateless revision: a subscriptions/listen stream.
(ert-deftest agent-q-mcp-client-stateless-tools-list-changed ()
  "In 2026-07-28, a listen stream for tool list changes hears of a new tool."
  (agent-q-mcp-client-test--with-server
    (unwind-protect
        (let* ((run (agent-q-mcp-client-test--client
                     "stateless-listen" nil
                     :sdk 'sdk2
                     :on-event
                     (lambda (process event)
                       (when (equal (alist-get 'event event) "ready")
                         (agent-q-register-tool
                          (agent-q-define-tool "e2e_probe" "A tool the e2e test adds."
                                               '((:name "x" :type :string))
                                               :handler (lambda (_args) "probed")))
                         (process-send-string process "registered\n")))))
               (ready (agent-q-mcp-client-test--event run "ready"))
               (names (alist-get 'names (agent-q-mcp-client-test--event run "tools"))))
          (should (equal (alist-get 'protocolVersion ready) "2026-07-28"))
          (should (= (alist-get 'count ready) 25))
          (should (equal (alist-get 'kind (agent-q-mcp-client-test--event run "list_changed"))
                         "ToolsListChanged"))
          (should (= (length names) 26))
          (should (member "e2e_probe" names)))
      (agent-q-remove-tool "e2e_probe"))))

;;;; The allowed directories of MCP calls: the client's workspace

(defun agent-q-mcp-client-test--uri (dir)
  "The file:// URI of the directory DIR."
  (concat "file://" (directory-file-name (file-truename dir))))

(defun agent-q-mcp-client-test--read (path)
  "A read_file call of PATH, for client.py."
  `((name . "read_file") (arguments (path . ,path))))

(defun agent-q-mcp-client-test--asked-paths ()
  "The paths of the read_file calls the approval function was asked about, in order."
  (mapcar (lambda (asked) (plist-get (nth 1 asked) :path))
          (reverse agent-q-mcp-client-test--asked)))

(defmacro agent-q-mcp-client-test--visiting (file &rest body)
  "Run BODY with a buffer visiting FILE current, then kill it."
  (declare (indent 1) (debug t))
  (let ((buffer (make-symbol "buffer")))
    `(let ((,buffer (find-file-noselect ,file)))
       (unwind-protect
           (with-current-buffer ,buffer ,@body)
         (kill-buffer ,buffer)))))

(ert-deftest agent-q-mcp-client-roots-are-the-allowed-directories ()
  "A client that declares roots reads in them unasked, elsewhere asked; list_changed applies.
The current buffer visits a file in another directory, which the
client's calls must not read freely for that: only its roots count.
A root that is / or the home directory does not count, and
`agent-q-mcp-status' names the roots and says so."
  (agent-q-mcp-client-test--with-server
    (let* ((agent-q-allowed-directories nil) ; the default, which follows the buffer
           (one (file-name-as-directory (agent-q-mcp-client-test--file "one")))
           (two (file-name-as-directory (agent-q-mcp-client-test--file "two")))
           (elsewhere (file-name-as-directory (agent-q-mcp-client-test--file "elsewhere")))
           (_ (mapc #'make-directory (list one two elsewhere)))
           (in-one (agent-q-mcp-client-test--file "one/a.txt" "in root one\n"))
           (in-two (agent-q-mcp-client-test--file "two/b.txt" "in root two\n"))
           (current (agent-q-mcp-client-test--file "elsewhere/current.txt" "the user's buffer\n"))
           (outside (agent-q-mcp-client-test--file "elsewhere/c.txt" "beside the current buffer\n"))
           (status nil)
           (run (agent-q-mcp-client-test--visiting current
                  (agent-q-mcp-client-test--client
                   "roots"
                   `((pause . t)
                     (phases . [((roots . [,(agent-q-mcp-client-test--uri one)
                                           "file:///"
                                           ,(agent-q-mcp-client-test--uri "~")])
                                 (calls . [,(agent-q-mcp-client-test--read in-one)
                                           ,(agent-q-mcp-client-test--read in-two)
                                           ,(agent-q-mcp-client-test--read outside)
                                           ,(agent-q-mcp-client-test--read
                                             agent-q-mcp-client-test--dir)]))
                                ((roots . [,(agent-q-mcp-client-test--uri two)])
                                 (calls . [,(agent-q-mcp-client-test--read in-two)
                                           ,(agent-q-mcp-client-test--read in-one)]))]))
                   :on-event
                   (lambda (process event)
                     (when (equal (alist-get 'event event) "result")
                       ;; The session is open: what does the status say now?
                       (push (agent-q-mcp-status) status)
                       (process-send-string process "next\n"))))))
           (results (agent-q-mcp-client-test--results run))
           (texts (mapcar (lambda (r) (alist-get 'text r)) results)))
      (should (= (length results) 6))
      ;; Phase 1: root one.
      (should-not (agent-q-mcp-client-test--error-p (nth 0 results)))
      (should (string-match-p "in root one" (nth 0 texts)))
      (should (agent-q-mcp-client-test--error-p (nth 1 results)))
      (should-not (string-match-p "in root two" (nth 1 texts)))
      (should (agent-q-mcp-client-test--error-p (nth 2 results)))
      (should-not (string-match-p "beside the current buffer" (nth 2 texts)))
      ;; Phase 2, after roots/list_changed: root two only.
      (should-not (agent-q-mcp-client-test--error-p (nth 4 results)))
      (should (string-match-p "in root two" (nth 4 texts)))
      (should (agent-q-mcp-client-test--error-p (nth 5 results)))
      (should-not (string-match-p "in root one" (nth 5 texts)))
      ;; The server asked for the roots after initialization and after the change.
      (should (= (length (agent-q-mcp-client-test--events run "roots_asked")) 2))
      ;; Asked exactly about what is outside the roots of the moment, and why.
      (should (equal (agent-q-mcp-client-test--asked-paths)
                     (list in-two outside agent-q-mcp-client-test--dir in-one)))
      (let ((reason (plist-get (nth 2 (car (last agent-q-mcp-client-test--asked))) :reason)))
        (should (string-match-p "outside the allowed directories" reason))
        (should (string-match-p (regexp-quote (file-truename one)) reason))
        (should (string-match-p "MCP roots .*agent-q-e2e 1\\.2\\.3" reason)))
      ;; The status, taken after the first result: root one, / and ~ refused.
      (let* ((first (car (last status)))
             (client (car (plist-get first :clients))))
        (should (equal (plist-get first :allowed-directories)
                       (list (file-truename agent-q-mcp-client-test--dir))))
        (should (= (length (plist-get first :clients)) 1))
        (should (string-match-p "agent-q-e2e 1\\.2\\.3" (plist-get client :client)))
        (should (equal (plist-get client :directories) (list (file-truename one))))
        (should (cl-some (lambda (note) (string-match-p "root directory /" note))
                         (plist-get client :ignored)))
        (should (cl-some (lambda (note) (string-match-p "home directory" note))
                         (plist-get client :ignored)))
        (should (string-match-p (regexp-quote (abbreviate-file-name (file-truename one)))
                                (plist-get first :directories)))
        (should (string-match-p "not allowed: .*root directory /" (plist-get first :directories))))
      ;; After the change the status names root two.
      (let ((client (car (plist-get (car status) :clients))))
        (should (equal (plist-get client :directories) (list (file-truename two))))))))

(ert-deftest agent-q-mcp-client-without-roots-gets-the-fixed-set ()
  "A client without roots reads in the directories fixed at start, whichever buffer is current.
By default the set is the directory current when the server started
\(outside a project); a buffer in another directory, current when the
call comes, neither widens nor moves it."
  (agent-q-mcp-client-test--with-server
    (agent-q-mcp-stop)
    (let* ((work (file-name-as-directory (agent-q-mcp-client-test--file "work")))
           (other (file-name-as-directory (agent-q-mcp-client-test--file "other")))
           (_ (mapc #'make-directory (list work other)))
           (inside (agent-q-mcp-client-test--file "work/inside.txt" "in the fixed set\n"))
           (current (agent-q-mcp-client-test--file "other/current.txt" "the user's buffer\n"))
           (beside (agent-q-mcp-client-test--file "other/beside.txt" "beside the buffer\n"))
           (agent-q-mcp-allowed-directories nil)
           (agent-q-allowed-directories nil))
      (let ((default-directory work))
        (agent-q-mcp-start))
      (should (equal (plist-get (agent-q-mcp-status) :allowed-directories)
                     (list (file-truename work))))
      (let* ((run (agent-q-mcp-client-test--visiting current
                    (agent-q-mcp-client-test--client
                     "calls" `((calls . [,(agent-q-mcp-client-test--read inside)
                                         ,(agent-q-mcp-client-test--read beside)])))))
             (results (agent-q-mcp-client-test--results run)))
        (should-not (agent-q-mcp-client-test--error-p (nth 0 results)))
        (should (string-match-p "in the fixed set" (alist-get 'text (nth 0 results))))
        (should (agent-q-mcp-client-test--error-p (nth 1 results)))
        (should-not (string-match-p "beside the buffer" (alist-get 'text (nth 1 results))))
        (should (equal (agent-q-mcp-client-test--asked-paths) (list beside)))
        (should (string-match-p "fixed directories"
                                (plist-get (nth 2 (car agent-q-mcp-client-test--asked)) :reason)))))))

(ert-deftest agent-q-mcp-client-stateless-gets-the-fixed-set ()
  "The SDK 2.x on 2026-07-28 (no session, no roots) reads in the fixed set only."
  (agent-q-mcp-client-test--with-server
    (let* ((agent-q-allowed-directories nil) ; the default, which follows the buffer
           (other (file-name-as-directory (make-temp-file "agent-q-mcp-e2e-other" t)))
           (inside (agent-q-mcp-client-test--file "inside.txt" "fixed and stateless\n"))
           (current (expand-file-name "current.txt" other))
           (beside (expand-file-name "beside.txt" other)))
      (unwind-protect
          (progn
            (with-temp-file current (insert "the user's buffer\n"))
            (with-temp-file beside (insert "beside the buffer\n"))
            (let* ((run (agent-q-mcp-client-test--visiting current
                          (agent-q-mcp-client-test--client
                           "stateless" `((calls . [,(agent-q-mcp-client-test--read inside)
                                                   ,(agent-q-mcp-client-test--read beside)]))
                           :sdk 'sdk2)))
                   (results (agent-q-mcp-client-test--results run)))
              (should (equal (alist-get 'protocolVersion (agent-q-mcp-client-test--event run "connected"))
                             "2026-07-28"))
              (should-not (agent-q-mcp-client-test--error-p (nth 0 results)))
              (should (string-match-p "fixed and stateless" (alist-get 'text (nth 0 results))))
              (should (agent-q-mcp-client-test--error-p (nth 1 results)))
              (should-not (string-match-p "beside the buffer" (alist-get 'text (nth 1 results))))
              (should (equal (agent-q-mcp-client-test--asked-paths) (list beside)))))
        (delete-directory other t)))))

(ert-deftest agent-q-mcp-client-emacs-private-files-ask ()
  "Emacs's private files ask, with init.el current and even inside a client's root.
Under a temporary HOME and `user-emacs-directory': with init.el the
current buffer, a client without roots reading url/cookies or the MCP
connection file is asked about; a client whose root is
`user-emacs-directory' itself reads init.el unasked, but not the
cookies, the history or the connection file."
  (let* ((home (file-name-as-directory (make-temp-file "agent-q-mcp-home" t)))
         (process-environment (cons (concat "HOME=" (directory-file-name home))
                                    process-environment))
         (user-emacs-directory (file-name-as-directory (expand-file-name ".emacs.d" home)))
         (init (expand-file-name "init.el" user-emacs-directory))
         (cookies (expand-file-name "url/cookies" user-emacs-directory))
         (history (expand-file-name "history" user-emacs-directory))
         (work (file-name-as-directory (expand-file-name "work" home))))
    (unwind-protect
        (progn
          (make-directory (expand-file-name "url" user-emacs-directory) t)
          (make-directory work t)
          (with-temp-file init (insert ";; init\n(setq inhibit-startup-screen t)\n"))
          (with-temp-file cookies (insert "example.com\tTRUE\t/\tFALSE\t0\tsession\tSECRETCOOKIE\n"))
          (with-temp-file history (insert "(setq minibuffer-history '(\"SECRETTYPED\"))\n"))
          (agent-q-mcp-client-test--with-server
            (agent-q-mcp-stop)
            (let ((agent-q-mcp-connection-file (expand-file-name "agent-q-mcp.json" user-emacs-directory))
                  (agent-q-mcp-allowed-directories (list work))
                  ;; The default, which follows the current buffer.
                  (agent-q-allowed-directories nil))
              (agent-q-mcp-start)
              (unwind-protect
                  (agent-q-mcp-client-test--visiting init
                    ;; No roots: the fixed set is work/, init.el's buffer is current.
                    (let* ((run (agent-q-mcp-client-test--client
                                 "calls" `((calls . [,(agent-q-mcp-client-test--read cookies)
                                                     ,(agent-q-mcp-client-test--read
                                                       agent-q-mcp-connection-file)]))))
                           (results (agent-q-mcp-client-test--results run)))
                      (should (= (length results) 2))
                      (dolist (result results)
                        (should (agent-q-mcp-client-test--error-p result)))
                      (should-not (string-match-p "SECRETCOOKIE" (alist-get 'text (nth 0 results))))
                      (should-not (string-match-p "token" (alist-get 'text (nth 1 results))))
                      (should (equal (agent-q-mcp-client-test--asked-paths)
                                     (list cookies agent-q-mcp-connection-file))))
                    ;; Root user-emacs-directory: init.el is read, the private files ask.
                    (setq agent-q-mcp-client-test--asked nil)
                    (let* ((run (agent-q-mcp-client-test--client
                                 "roots"
                                 `((phases . [((roots . [,(agent-q-mcp-client-test--uri user-emacs-directory)])
                                               (calls . [,(agent-q-mcp-client-test--read init)
                                                         ,(agent-q-mcp-client-test--read cookies)
                                                         ,(agent-q-mcp-client-test--read history)
                                                         ,(agent-q-mcp-client-test--read
                                                           agent-q-mcp-connection-file)]))]))))
                           (results (agent-q-mcp-client-test--results run)))
                      (should (= (length results) 4))
                      (should-not (agent-q-mcp-client-test--error-p (nth 0 results)))
                      (should (string-match-p "inhibit-startup-screen" (alist-get 'text (nth 0 results))))
                      (dolist (result (cdr results))
                        (should (agent-q-mcp-client-test--error-p result)))
                      (should-not (string-match-p "SECRET" (mapconcat (lambda (r) (alist-get 'text r))
                                                                       (cdr results) "")))
                      (should (equal (agent-q-mcp-client-test--asked-paths)
                                     (list cookies history agent-q-mcp-connection-file)))
                      (dolist (asked agent-q-mcp-client-test--asked)
                        (should (string-match-p "Emacs's private files"
                                                (plist-get (nth 2 asked) :reason))))))
                (agent-q-mcp-stop)))))
      (delete-directory home t))))

;;;; The stdio relay

(ert-deftest agent-q-mcp-client-stdio-relay ()
  "The SDK's stdio transport through bin/agent-q-mcp: initialize, tools/list, tools/call."
  (should (file-executable-p agent-q-mcp-client-test--relay))
  (agent-q-mcp-client-test--with-server
    (let* ((file (agent-q-mcp-client-test--file "relayed.txt" "carried over stdio\n"))
           (run (agent-q-mcp-client-test--client
                 "stdio" `((relay . ,agent-q-mcp-client-test--relay)
                           (calls . [((name . "read_file") (arguments (path . ,file)))]))))
           (result (car (agent-q-mcp-client-test--results run)))
           (audited (agent-q-mcp-client-test--audited "read_file" "result")))
      (should (equal (alist-get 'protocolVersion (agent-q-mcp-client-test--event run "initialized"))
                     "2025-11-25"))
      (should (= (length (alist-get 'names (agent-q-mcp-client-test--event run "tools"))) 25))
      (should-not (agent-q-mcp-client-test--error-p result))
      (should (string-match-p "carried over stdio" (alist-get 'text result)))
      ;; The relay passes the client's own introduction through.
      (should (= (length audited) 1))
      (should (equal (alist-get 'client (car audited))
                     (concat agent-q-mcp-client-test--client-name " (MCP)"))))))

(ert-deftest agent-q-mcp-client-stdio-relay-carries-roots ()
  "Through the stdio relay, the server asks the client's roots, and they apply."
  (should (file-executable-p agent-q-mcp-client-test--relay))
  (agent-q-mcp-client-test--with-server
    (let* ((root (file-name-as-directory (agent-q-mcp-client-test--file "root")))
           (_ (make-directory root))
           (inside (agent-q-mcp-client-test--file "root/in.txt" "inside the root\n"))
           (outside (agent-q-mcp-client-test--file "out.txt" "in the fixed set only\n"))
           (run (agent-q-mcp-client-test--client
                 "stdio" `((relay . ,agent-q-mcp-client-test--relay)
                           (roots . [,(agent-q-mcp-client-test--uri root)])
                           (calls . [,(agent-q-mcp-client-test--read inside)
                                     ,(agent-q-mcp-client-test--read outside)]))))
           (results (agent-q-mcp-client-test--results run)))
      (should (agent-q-mcp-client-test--event run "roots_asked"))
      (should-not (agent-q-mcp-client-test--error-p (nth 0 results)))
      (should (string-match-p "inside the root" (alist-get 'text (nth 0 results))))
      ;; The fixed set holds out.txt, but this client's workspace is its root.
      (should (agent-q-mcp-client-test--error-p (nth 1 results)))
      (should (equal (agent-q-mcp-client-test--asked-paths) (list outside))))))

;;;; The stateless revision, 2026-07-28

(ert-deftest agent-q-mcp-client-stateless-2026-07-28 ()
  "The SDK 2.x negotiates 2026-07-28 (no initialize), lists and calls; the client is named."
  (agent-q-mcp-client-test--with-server
    (let* ((file (agent-q-mcp-client-test--file "modern.txt" "stateless hello\n"))
           (denied (agent-q-mcp-client-test--file "modern-denied.txt" "kept\n"))
           (run (agent-q-mcp-client-test--client
                 "stateless" `((calls . [((name . "read_file") (arguments (path . ,file)))
                                         ((name . "write_file")
                                          (arguments (path . ,denied) (content . "lost\n")))]))
                 :sdk 'sdk2))
           (connected (agent-q-mcp-client-test--event run "connected"))
           (results (agent-q-mcp-client-test--results run)))
      (should (equal (alist-get 'protocolVersion connected) "2026-07-28"))
      (should (eq (alist-get 'initialized connected) :false))
      (should (equal (alist-get 'serverName connected) "agent-q"))
      (should (= (length (alist-get 'names (agent-q-mcp-client-test--event run "tools"))) 25))
      (should-not (agent-q-mcp-client-test--error-p (nth 0 results)))
      (should (string-match-p "stateless hello" (alist-get 'text (nth 0 results))))
      (should (agent-q-mcp-client-test--error-p (nth 1 results)))
      (should (equal (agent-q-mcp-client-test--file-content denied) "kept\n"))
      ;; Without a session, the client is named by each request's _meta.
      (should (string-match-p (regexp-quote agent-q-mcp-client-test--client-name)
                              (plist-get (nth 2 (car agent-q-mcp-client-test--asked)) :client)))
      (should (equal (alist-get 'client (car (agent-q-mcp-client-test--audited "read_file" "result")))
                     (concat agent-q-mcp-client-test--client-name " (MCP)"))))))

(provide 'agent-q-mcp-client-test)

;;; agent-q-mcp-client-test.el ends here
