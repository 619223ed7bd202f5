;;; agent-q.el --- Tools for LLM agents, with safety enforced  -*- lexical-binding: t -*-

;; Copyright (C) 2026 The agent-q authors

;; Author: The agent-q authors
;; Maintainer: The agent-q authors
;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1"))
;; Keywords: tools, lisp, convenience
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

;; agent-q gives an LLM agent a set of tools to work inside the running
;; Emacs: introspect Emacs Lisp, evaluate and compile code, read and
;; write files and buffers, propose edits.  Its core is a Rust dynamic
;; module (agent-q-core) holding the tool registry and the executor,
;; which enforces each tool's safety level:
;;
;; - safe tools run at once;
;; - cautious tools run and are logged (`*agent-q-log*' and
;;   `agent-q-audit-file');
;; - dangerous tools run only after `agent-q-approval-function' (by
;;   default a minibuffer prompt) approves them.
;;
;; Arguments are validated against each tool's JSON Schema before
;; anything else happens.  The main entry points:
;;
;;   (agent-q-deftool "greet" "Greet someone by name."
;;     '((:name "who" :type :string :description "Who to greet"))
;;     :required '("who")
;;     :handler (lambda (args) (format "Hello, %s!" (gethash "who" args))))
;;
;;   (agent-q-tools-to-schema)            ; tool schemas for the LLM request
;;   (agent-q-execute-tool-calls          ; the LLM's tool calls -> results
;;    '((:id "call_1" :name "greet" :arguments (:who "Ada"))))
;;
;; Re-evaluating an `agent-q-deftool' form in the file that defines it
;; redefines the tool, as re-evaluating a `defun' does.  Anywhere else a
;; changed definition needs a new :version (or a new name): the registry
;; refuses to replace a tool silently.

;;; Code:

(require 'cl-lib)
(require 'pp)
(require 'subr-x)

;;;; The module

(defconst agent-q-version "0.1.0"
  "The version of agent-q's Lisp code; the module must report the same.")

(defvar agent-q-core-version nil
  "The version the loaded agent-q-core module reports.")

(defvar agent-q--handler-transfer nil
  "Scratch variable through which the module hands back Lisp handlers.")

(defgroup agent-q nil
  "Tools for LLM agents inside Emacs."
  :group 'tools
  :prefix "agent-q-")

(defconst agent-q--directory
  (file-name-directory (or load-file-name buffer-file-name default-directory))
  "The directory agent-q's Lisp files live in.")

(defconst agent-q--doc-directory
  (expand-file-name "../doc" agent-q--directory)
  "The directory of agent-q's Info manual and its `dir' file.")

(defvar Info-additional-directory-list)

;; `C-h i' lists the manual, and (info "agent-q") finds it, once Info is
;; loaded: nothing is read until then.
(with-eval-after-load 'info
  (add-to-list 'Info-additional-directory-list agent-q--doc-directory t))

(defun agent-q--source-root ()
  "The project root, where the Makefile and Cargo.toml are, or nil."
  (let ((root (expand-file-name ".." agent-q--directory)))
    (and (file-exists-p (expand-file-name "Cargo.toml" root))
         (file-exists-p (expand-file-name "Makefile" root))
         root)))

(defun agent-q--module-file-name ()
  "The file name of the agent-q-core module beside agent-q.el.
It follows `module-file-suffix': agent-q-core.so on GNU/Linux,
agent-q-core.dylib on macOS, agent-q-core.dll on Windows."
  (expand-file-name (concat "agent-q-core" module-file-suffix) agent-q--directory))

(declare-function compilation-start "compile"
                  (command &optional mode name-function highlight-regexp continue))

(defun agent-q--module-build-advice ()
  "How to build the module, for an error message."
  (let ((root (agent-q--source-root)))
    (format-message "build it with `M-x agent-q-module-compile' or `make build' in %s"
                    (if root (abbreviate-file-name root) "agent-q's source tree"))))

;;;###autoload
(defun agent-q-module-compile ()
  "Build the module, the MCP relay and the compiled Lisp with `make build'.
Runs make in agent-q's source directory, in a compilation buffer
\(`*agent-q-build*').  This needs cargo (Rust 1.88 or later).  When
the build is done, `(require \='agent-q)' loads the new module; a
module already loaded is replaced only by restarting Emacs.  Loading
agent-q never runs this: a missing or mismatched module is an error
that names this command.  Return the compilation buffer."
  (interactive)
  (let ((root (or (agent-q--source-root)
                  (user-error "Cannot build agent-q-core: no Makefile and Cargo.toml above %s"
                              agent-q--directory))))
    (unless (executable-find "make")
      (user-error "Cannot build agent-q-core: make is not installed"))
    (unless (executable-find "cargo")
      (user-error "Cannot build agent-q-core: cargo is not installed (see https://rustup.rs)"))
    (require 'compile)
    (let ((default-directory root))
      (compilation-start "make build" nil (lambda (_mode) "*agent-q-build*")))))

(defun agent-q--load-module ()
  "Load the agent-q-core module, or signal an error naming how to build it.
Never builds anything, and never asks: loading a package must not."
  (unless (featurep 'agent-q-core)
    (unless module-file-suffix
      (error "Agent-q needs an Emacs built with dynamic module support (--with-modules)"))
    (let ((file (agent-q--module-file-name)))
      (unless (file-exists-p file)
        (error "The agent-q-core module is missing (%s); %s"
               file (agent-q--module-build-advice)))
      (load file nil t t)
      (unless (featurep 'agent-q-core)
        (error "Loading %s did not provide agent-q-core; %s" file (agent-q--module-build-advice)))))
  (unless (equal agent-q-core-version agent-q-version)
    (error "The agent-q-core module is version %s but agent-q.el is %s; %s, then restart Emacs"
           agent-q-core-version agent-q-version (agent-q--module-build-advice))))

(defun agent-q--stale-compiled-files (&optional directory)
  "The byte-compiled files of agent-q older than their sources, a list.
DIRECTORY is where agent-q's Lisp files are (default
`agent-q--directory'); the names are relative to it."
  (let ((directory (or directory agent-q--directory))
        stale)
    (dolist (elc (directory-files directory nil "\\`agent-q.*\\.elc\\'"))
      (when (file-newer-than-file-p (expand-file-name (substring elc 0 -1) directory)
                                    (expand-file-name elc directory))
        (push elc stale)))
    (nreverse stale)))

(defun agent-q--check-compiled-files ()
  "Signal an error if an old compiled file of agent-q would hide its source.
`make build' compiles agent-q's Lisp beside the sources; a source
edited or updated since would otherwise be shadowed by its .elc,
silently, whenever agent-q loads it.  With `load-prefer-newer' on,
Emacs loads the newer file itself, and nothing is checked."
  (unless load-prefer-newer
    (let ((stale (agent-q--stale-compiled-files)))
      (when stale
        (error "Agent-q's compiled %s older than %s source%s: %s; \
compile %s with `make build' in %s (or delete %s)"
               (if (cdr stale) "files are" "file is")
               (if (cdr stale) "their" "its")
               (if (cdr stale) "s" "")
               (string-join stale ", ")
               (if (cdr stale) "them" "it")
               (abbreviate-file-name (or (agent-q--source-root) agent-q--directory))
               (if (cdr stale) "them" "it"))))))

(agent-q--check-compiled-files)
(agent-q--load-module)

(declare-function agent-q--core-audit-append "agent-q-core" (file line))
(declare-function agent-q--core-make-registry "agent-q-core" ())
(declare-function agent-q--core-register "agent-q-core"
                  (registry definition handler source guard async))
(declare-function agent-q--core-get "agent-q-core" (registry name))
(declare-function agent-q--core-handler "agent-q-core" (registry name))
(declare-function agent-q--core-names "agent-q-core" (registry include-disabled))
(declare-function agent-q--core-filter "agent-q-core" (registry max-level categories include-disabled))
(declare-function agent-q--core-set-enabled "agent-q-core" (registry name enabled))
(declare-function agent-q--core-remove "agent-q-core" (registry name))
(declare-function agent-q--core-snapshot "agent-q-core" (registry as-json))
(declare-function agent-q--core-restore "agent-q-core" (registry snapshot))
(declare-function agent-q--core-schemas "agent-q-core" (registry names format as-json))
(declare-function agent-q--core-generation "agent-q-core" (registry))
(declare-function agent-q--core-metrics "agent-q-core" (registry reset))
(declare-function agent-q--core-validate "agent-q-core" (registry name args))
(declare-function agent-q--core-decide "agent-q-core" (registry name decision args))
(declare-function agent-q--core-options "agent-q-core" (plist))
(declare-function agent-q--core-execute "agent-q-core" (registry calls options))
(declare-function agent-q--core-call-start "agent-q-core" (registry call options))
(declare-function agent-q--core-call-decide "agent-q-core" (pending decision))
(declare-function agent-q--core-call-finish "agent-q-core" (pending status value))
(declare-function agent-q--core-call-cancel "agent-q-core" (pending reason))
(declare-function agent-q--core-call-info "agent-q-core" (pending))
(declare-function agent-q-approve-in-minibuffer "agent-q-prompt" (tool-name args))
(declare-function agent-q-rules-decide "agent-q-rules" (tool-name args context))

(defvar agent-q-trust--active nil
  "The trusts in force, as the module last listed them; nil when none.
Each is a plist (see `agent-q--core-trust-add'); agent-q-trust.el sets
it.  The executor consults the module's trusts only while it is
non-nil.")

(declare-function agent-q-rules-describe "agent-q-rules" (rule))
(declare-function agent-q-rules-ruling-text "agent-q-rules" (ruling))
(declare-function agent-q-rules-any-p "agent-q-rules" ())

;;;; Reporting what a handler did

;; The error symbols `agent-q-tool-failure' and `agent-q-tool-denied' are
;; defined by the module, under `agent-q-error'.

(defun agent-q-tool-fail (format-string &rest args)
  "End the running tool call as a failure with a message for the model.
The message is (apply #\='format-message FORMAT-STRING ARGS).  A handler
calls this when it could not do its job (a file not found, a form that
does not read...): the result has :success nil and the message as its
content, and the audit log and metrics count a failure.  Returning a
string, by contrast, is a success whatever the string says."
  (signal 'agent-q-tool-failure
          (list (apply #'format-message format-string args))))

(defun agent-q-tool-deny (format-string &rest args)
  "End the running tool call as denied by the user, with a message for the model.
The message is (apply #\='format-message FORMAT-STRING ARGS).  For a
handler that asked the user itself (with `agent-q-request-approval',
or a review) and was refused: the result has :success nil and
:approved nil, and the call counts as a denial."
  (signal 'agent-q-tool-denied
          (list (apply #'format-message format-string args))))

;;;; Options

(defcustom agent-q-approval-function #'agent-q-approve-in-minibuffer
  "Function deciding whether a dangerous tool call may run.
It is called with the tool's name (a string) and its arguments (a
plist with keyword keys), with `agent-q-approval-context' bound.  It
returns `:approved', `:denied', (:denied REASON) or (:modified NEW-ARGS).
Anything else, an error or a quit denies the call; so does nil here."
  :type '(choice (const :tag "Deny every dangerous call" nil) function))

(defcustom agent-q-confirm-safety-levels '(:dangerous)
  "Safety levels whose tool calls need the user's approval.
Dangerous calls always do, listed or not; add :cautious to confirm
calls that change state too (eval_form, compile_form...), or :safe to
confirm every call."
  :type '(set (const :tag "Dangerous (always)" :dangerous)
              (const :tag "Cautious" :cautious)
              (const :tag "Safe" :safe)))

(defvar agent-q-approval-context nil
  "Plist describing the call being approved, bound around the approval function.
Keys: :safety-level (a keyword), :reason (why a guard asks, or nil),
:protected (non-nil when only the user may approve the call, each
time: a write to a file that governs agents or runs code, see
`agent-q-protected-file-patterns'; no approval rule and no approval
for the session answers for it), :file (the file the guard resolved
and pinned: the prompt names it, and it is what the call writes),
:optional (non-nil when the call would run without asking and is
asked about only because an approval rule says so: see
`agent-q-approval-rules'),
:rule (the text of the approval rule that asks, when one does: see
`agent-q-approval-rules'; with :uncovered, the command or domain rules
that cover no part of the call, which is then asked as without
rules), :review (non-nil when the tool's own review is the approval
of what it changes: the built-in propose_file_edit), :tool-id (the
registration's
identity: it changes when the tool is replaced, so decisions such as
\"always allow\" attach to it), :client (where the call comes from, or
nil), :origin (`emacs' for a call from inside Emacs -- a bridge such as
gptel or llm, or Lisp code -- and `mcp' for one from an MCP client: set
by the driver that received the call, never by the call or its client),
:mcp-client (for a call from an MCP client, the name it gave in its
clientInfo: its own claim) and :id (the call's id).")

(defvar agent-q-call-context nil
  "Plist describing the tool call whose handler is running, bound around it.
Keys: :id, :tool, :client, :origin (`emacs' or `mcp', as in
`agent-q-approval-context'), :approved (non-nil when the user approved
this call), :reason (the guard's reason for asking, when it asked),
:file (the file the guard resolved and pinned, which the prompt
showed) and :channel (the channel the call came on, as the core
decides it: \"mcp session ID\" for a call in an MCP session, each
stdio relay process holding its own, a fresh \"mcp request N\" for a
stateless MCP request, \"emacs CLIENT\" for a bridge's call, and nil
for a call of the user's own Lisp, with no client; never the name an
MCP client claims), :decision (how the executor let the call run:
\"auto\", \"approved\", \"rule\", \"granted\", \"review\", \"trusted\") and
:rule (the text of the rule that decided, when one did).  A handler
whose guard asked checks with it that what it opens is what the user
approved; a write tool writes the pinned file.")

(defvar agent-q-client nil
  "The client the tool calls being executed come from, or nil.
A string such as \"gptel\"; the audit log and the approval prompt
name it, and approval rules with :client match it.  Bridges inside
Emacs bind it; a call plist's own :client takes precedence.  Calls
from MCP clients are named by the MCP server's driver instead, and
never match a rule or an approval given to a client inside Emacs.")

(defcustom agent-q-tool-execution-functions nil
  "Functions called around each tool execution.
Each is called with (PHASE TOOL-NAME ARGS RESULT): PHASE is `:before',
`:after' or `:error'; ARGS is the arguments plist; RESULT is the result
plist, or nil for `:before'.  An error in one is reported and ignored."
  :type 'hook)

(defcustom agent-q-max-result-chars 20000
  "Cap on the characters of a tool result's content; 0 means no cap.
A capped result says how many characters were cut."
  :type 'natnum)

(defcustom agent-q-max-argument-bytes (* 16 1024 1024)
  "Cap on the bytes of strings in one tool call's arguments."
  :type 'natnum)

(defcustom agent-q-audit-file (locate-user-emacs-file "agent-q-audit.jsonl")
  "File to which cautious and dangerous executions are appended as JSON lines.
nil means keep no audit file (the `*agent-q-log*' buffer is still kept)."
  :type '(choice (const :tag "No audit file" nil) file))

(defcustom agent-q-log-max-chars 1000000
  "About how many characters the log buffer keeps, its newest lines.
The audit file (`agent-q-audit-file') keeps everything; the buffer is
for reading recent activity with \\[agent-q-show-log].  Nil keeps all."
  :type '(choice (natnum :tag "Characters") (const :tag "Keep everything" nil)))

(defcustom agent-q-log-buffer-name "*agent-q-log*"
  "Name of the buffer logging cautious and dangerous executions."
  :type 'string)

;;;; Tools and registries

(cl-defstruct (agent-q-tool (:constructor agent-q-tool--create)
                            (:copier nil))
  "A tool: what it is and what runs it.
For a tool read back from a registry, PARAMETERS is its normalised
JSON Schema (as a plist) and ENABLED, CREATED-AT, SOURCE and ID are
set."
  name description parameters required (safety-level :safe) categories
  handler version tags output-schema source enabled created-at
  guard async id annotations approval)

(defun agent-q-make-registry ()
  "Return a new, empty tool registry, independent of the global one.
Pass it as the REGISTRY argument of the other agent-q functions."
  (agent-q--core-make-registry))

(cl-defun agent-q-define-tool (name description parameters
                                    &key required safety-level categories handler
                                    version tags output-schema source guard async
                                    annotations approval)
  "Return a tool named NAME (snake_case) described by DESCRIPTION.
PARAMETERS is a list of parameter plists such as
  (:name \"symbol\" :type :string :description \"...\")
with types :string :boolean :number :integer :object :array and, where
needed, :enum, :items (arrays) and :properties (objects); or a full
JSON Schema, as a plist or as JSON text.  REQUIRED lists the names of
required parameters.  SAFETY-LEVEL is :safe (default), :cautious or
:dangerous.  CATEGORIES is a list of keywords.  HANDLER is called with
a hash table from parameter names to values.  VERSION, TAGS and
OUTPUT-SCHEMA are optional.  SOURCE is the file the definition comes
from, which lets re-evaluating it there redefine the tool.
The definition is validated when it is registered.

GUARD, when non-nil, is called with the same hash table before the
tool runs (and before any prompt) and returns nil, or a string saying
why these arguments need the user's approval even though the tool's
level does not (a read of a file outside the project, say); the user is
then asked as for a dangerous tool.  A guard must be quick and must not
change anything or contact another host.

ASYNC non-nil means HANDLER answers through a callback: it is called
with CALLBACK and the hash table and returns at once; CALLBACK must be
called once, with the result (success), or with the message and
`:failure' or `:denied' as second argument.  A synchronous handler
returns its result, and reports failure with `agent-q-tool-fail'.

ANNOTATIONS states what the tool can do where its safety level does
not tell the whole truth, for MCP clients that choose or approve tools
by it: a plist of :read-only, :destructive, :idempotent and
:open-world, each t or nil.  An unset hint follows from the level: a
safe tool only reads this Emacs and its files; a cautious one changes
things the user can see and undo; a dangerous one is destructive.  A
cautious tool that runs arbitrary code, say, gives (:destructive t).

APPROVAL says what approves a call: nil or :prompt, the prompt (as
the safety level and the guard say); :review, HANDLER's own review,
which shows the user what the call would change and changes nothing
the user did not accept (no prompt is asked before it, unless the
guard gives a reason other than a protected file; an allow rule does
not stand for it); :review-or-rule, the review, or an allow rule
covering the call (never a protected one), which then approves it
unreviewed: `agent-q-call-context' then has :decision \"rule\".  A
deny rule refuses either without a review."
  (agent-q-tool--create :name name :description description
                        :parameters parameters :required required
                        :safety-level (or safety-level :safe)
                        :categories categories :handler handler
                        :version version :tags tags
                        :output-schema output-schema :source source
                        :guard guard :async async :annotations annotations
                        :approval approval))

(defun agent-q--tool-definition (tool)
  "Return the definition plist of TOOL, in the form the module takes."
  (append (list :name (agent-q-tool-name tool)
                :description (agent-q-tool-description tool)
                :parameters (agent-q-tool-parameters tool)
                :required (agent-q-tool-required tool)
                :safety-level (agent-q-tool-safety-level tool)
                :categories (agent-q-tool-categories tool))
          (and (agent-q-tool-version tool) (list :version (agent-q-tool-version tool)))
          (and (agent-q-tool-tags tool) (list :tags (agent-q-tool-tags tool)))
          (and (agent-q-tool-output-schema tool)
               (list :output-schema (agent-q-tool-output-schema tool)))
          (and (agent-q-tool-annotations tool)
               (list :annotations (agent-q-tool-annotations tool)))
          (and (agent-q-tool-approval tool)
               (not (eq (agent-q-tool-approval tool) :prompt))
               (list :approval (agent-q-tool-approval tool)))))

(defun agent-q--keywordize (name)
  "The keyword named NAME (a string)."
  (intern (concat ":" name)))

(defun agent-q--json-true-p (value)
  "Non-nil when VALUE is the module's JSON true."
  (eq value t))

(defun agent-q--annotations-from-hints (hints)
  "The :annotations plist of a tool from the HINTS of its registered spec."
  (cl-loop for (key name) in '((:read_only :read-only) (:destructive :destructive)
                               (:idempotent :idempotent) (:open_world :open-world))
           for cell = (plist-member hints key)
           when cell nconc (list name (agent-q--json-true-p (cadr cell)))))

(defun agent-q--tool-from-registration (registration functions)
  "A tool struct from the module's REGISTRATION plist and its FUNCTIONS.
FUNCTIONS is the plist (:handler F :guard G :async B :id N) from the
module."
  (let ((spec (plist-get registration :spec)))
    (agent-q-tool--create
     :name (plist-get spec :name)
     :description (plist-get spec :description)
     :parameters (plist-get spec :parameters)
     :required (append (plist-get (plist-get spec :parameters) :required) nil)
     :safety-level (agent-q--keywordize (plist-get spec :safety_level))
     :categories (mapcar #'agent-q--keywordize (plist-get spec :categories))
     :version (plist-get spec :version)
     :tags (append (plist-get spec :tags) nil)
     :output-schema (plist-get spec :output_schema)
     :annotations (agent-q--annotations-from-hints (plist-get spec :hints))
     :approval (let ((approval (plist-get spec :approval)))
                 (and (stringp approval)
                      (agent-q--keywordize (string-replace "_" "-" approval))))
     :handler (plist-get functions :handler)
     :guard (plist-get functions :guard)
     :async (plist-get functions :async)
     :id (plist-get functions :id)
     :source (plist-get registration :source)
     :enabled (agent-q--json-true-p (plist-get registration :enabled))
     :created-at (plist-get registration :created_at))))

(defvar agent-q-registry-change-functions nil
  "Functions called with REGISTRY after its set of tools changed.
REGISTRY is nil for the global registry.  They run after a tool is
registered, removed, enabled or disabled, and after a restore; the
client bridges use them to keep the clients' tool lists in sync.  An
error in one is reported, not raised.")

(defun agent-q--registry-changed (registry)
  "Run `agent-q-registry-change-functions' for REGISTRY."
  (with-demoted-errors "agent-q: a registry change function failed: %S"
    (run-hook-with-args 'agent-q-registry-change-functions registry)))

(defun agent-q-register-tool (tool &optional registry)
  "Register TOOL in REGISTRY (default: the global one); return it as registered.
A new name is added, enabled.  An identical definition leaves the
registration as it is but rebinds the handler.  A different :version
replaces it.  The same version with a different definition signals
`agent-q-tool-exists', unless TOOL's source is the file the registered
definition came from (re-evaluating a definition while developing).
An invalid definition signals `agent-q-invalid-tool' naming the field.
Re-registering an identical definition with other handler or guard
functions makes it another tool: its id changes, and approvals given
to the old one (\"always allow\") do not carry over."
  (unless (agent-q-tool-p tool)
    (signal 'wrong-type-argument (list 'agent-q-tool-p tool)))
  (let ((result (agent-q--core-register registry (agent-q--tool-definition tool)
                                        (agent-q-tool-handler tool)
                                        (agent-q-tool-source tool)
                                        (agent-q-tool-guard tool)
                                        (agent-q-tool-async tool))))
    (prog1 (agent-q--tool-from-registration
            (cdr result) (agent-q--core-handler registry (agent-q-tool-name tool)))
      (agent-q--registry-changed registry))))

(defmacro agent-q-deftool (name description parameters &rest keys)
  "Define the tool NAME and register it; return the registered tool.
DESCRIPTION, PARAMETERS and KEYS are as for `agent-q-define-tool';
KEYS may also hold :registry.  Re-evaluating the form in the file that
defines it (\\[eval-defun], `eval-buffer', `load') redefines the tool
without a version bump, as it would a `defun'."
  (declare (indent 3) (doc-string 2))
  (let ((registry (plist-get keys :registry))
        (keys (let ((copy (copy-sequence keys)))
                (cl-remf copy :registry)
                copy)))
    `(agent-q-register-tool
      (agent-q-define-tool ,name ,description ,parameters
                           :source (agent-q--definition-source)
                           ,@keys)
      ,registry)))

(defvar comp-eln-to-el-h)

(defun agent-q--definition-source ()
  "The source file of the definition being evaluated, or nil.
It is the file being loaded, or the file the current buffer visits
\(\[eval-defun], `eval-buffer').  A compiled file (.elc, or .eln from
native compilation) stands for its .el source, and links are resolved,
so loading a package and later re-evaluating a form in its source
count as the same file."
  (let ((file (or load-file-name buffer-file-name)))
    (when file
      (let ((true (file-truename file)))
        (cond
         ((string-suffix-p ".elc" true) (substring true 0 -1))
         ((and (string-suffix-p ".eln" true) (boundp 'comp-eln-to-el-h)
               (hash-table-p comp-eln-to-el-h))
          (let ((el (gethash (file-name-nondirectory true) comp-eln-to-el-h)))
            (if el (file-truename el) true)))
         (t true))))))

(defun agent-q-get-tool (name &optional registry)
  "The tool registered as NAME in REGISTRY, or nil."
  (let ((registration (agent-q--core-get registry name)))
    (and registration
         (agent-q--tool-from-registration registration
                                          (agent-q--core-handler registry name)))))

(defun agent-q-list-registered-tools (&optional registry include-disabled)
  "The names of the enabled tools in REGISTRY, sorted.
With INCLUDE-DISABLED, disabled tools too."
  (agent-q--core-names registry include-disabled))

(cl-defun agent-q-get-tools (&key max-safety-level categories include-disabled registry)
  "The tools of REGISTRY sorted by name, filtered.
MAX-SAFETY-LEVEL (:safe, :cautious or :dangerous) keeps tools at or
below it; CATEGORIES (keywords) keeps tools with at least one of them;
both together must hold.  Disabled tools only with INCLUDE-DISABLED."
  (mapcar (lambda (registration)
            (agent-q--tool-from-registration
             registration
             (agent-q--core-handler registry (plist-get (plist-get registration :spec) :name))))
          (agent-q--core-filter registry max-safety-level categories include-disabled)))

(defvar agent-q--schema-cache nil
  "The last schema result: (KEY . VALUE), KEY holding the registry generation.")

(cl-defun agent-q-tools-to-schema (&optional tools &key (format :openai) json registry)
  "Return the schemas of TOOLS for an LLM request.
TOOLS is a list of tools or tool names; nil means every enabled tool
of REGISTRY.  FORMAT is :openai (default), giving
  (:type \"function\" :function (:name N :description D
   :parameters (:type \"object\" :properties P :required [...])
   :strict :json-false))
or :anthropic, giving (:name N :description D :input_schema S).
With JSON non-nil, return one JSON array as a string, ready for a
request body.  Results are cached until the registry changes; do not
modify them."
  (unless (proper-list-p tools)
    (signal 'agent-q-error
            (list (format "TOOLS must be a list of tools or tool names, not a %s"
                          (if (consp tools) "circular or dotted list" (type-of tools))))))
  (let* ((names (mapcar (lambda (tool) (if (agent-q-tool-p tool) (agent-q-tool-name tool) tool))
                        tools))
         (key (list registry (agent-q--core-generation registry) names format json)))
    (if (equal (car agent-q--schema-cache) key)
        (cdr agent-q--schema-cache)
      (let ((value (agent-q--core-schemas registry names format json)))
        (setq agent-q--schema-cache (cons key value))
        value))))

(defun agent-q-set-tool-enabled (name enabled &optional registry)
  "Enable (ENABLED non-nil) or disable the tool NAME in REGISTRY.
Signals `agent-q-unknown-tool' for an unknown NAME; idempotent."
  (prog1 (agent-q--tool-from-registration (agent-q--core-set-enabled registry name enabled)
                                          (agent-q--core-handler registry name))
    (agent-q--registry-changed registry)))

(defun agent-q-remove-tool (name &optional registry)
  "Remove the tool NAME from REGISTRY.  Return t if it was there."
  (when (agent-q--core-remove registry name)
    (agent-q--registry-changed registry)
    t))

(defun agent-q-registry-snapshot (&optional registry as-json)
  "A snapshot of every registration in REGISTRY.
It is a printable plist (:tools [REGISTRATION...]), or JSON text when
AS-JSON.  `agent-q-registry-restore' takes either form back; handlers
are not part of a snapshot."
  (agent-q--core-snapshot registry as-json))

(defun agent-q-registry-restore (snapshot &optional registry)
  "Replace the contents of REGISTRY with SNAPSHOT; return the number of tools.
SNAPSHOT comes from `agent-q-registry-snapshot'.  Handlers of tools
that remain are kept.  Nothing changes when SNAPSHOT is invalid."
  (prog1 (agent-q--core-restore registry snapshot)
    (agent-q--registry-changed registry)))

(defun agent-q-tool-metrics (&optional registry reset)
  "Execution metrics per tool of REGISTRY.
An alist of (NAME :calls N :failures N :denials N :total_ms F :max_ms F).
With RESET non-nil, forget the counts afterwards."
  (agent-q--core-metrics registry reset))

(defun agent-q-validate-arguments (tool-name args &optional registry)
  "Nil when ARGS (a plist or JSON text) are valid for TOOL-NAME in REGISTRY.
Otherwise the message \"Invalid arguments for NAME: field \\='X\\=': REASON\"."
  (agent-q--core-validate registry tool-name args))

;;;; Execution

(defun agent-q-execute-tool-calls (calls &optional registry)
  "Execute a list of tool-call plists against REGISTRY, in order.
CALLS holds them; each is (:id ID :name NAME :arguments ARGS), ARGS
a plist or a JSON object string.  The result has one plist per call:
  (:id ID :success t :content STRING
   :metadata (:execution_time_ms F :safety_level \"safe\" :approved t
              :status \"success\"))
and on failure :success is nil and :error holds the message too.
Dangerous tools, and those at the levels in
`agent-q-confirm-safety-levels', run only when `agent-q-approval-function'
approves.  `agent-q-approval-rules' apply to every call."
  (agent-q--core-execute registry calls
                         (agent-q--batch-options agent-q-client
                                                 agent-q-confirm-safety-levels nil)))

(defun agent-q--batch-options (client confirm audit-all)
  "Read the executor's options once, for a whole batch.
CLIENT names where the batch comes from, CONFIRM lists the safety
levels that need approval besides :dangerous, and AUDIT-ALL non-nil
audits safe tools too; the rest comes from the user's options.  Both
drivers pass the value to each call of the batch."
  (agent-q--core-options
   (list :max-result-chars agent-q-max-result-chars
         :max-argument-bytes agent-q-max-argument-bytes
         :hooks (and agent-q-tool-execution-functions t)
         :confirm confirm
         :audit-all audit-all
         :client client
         ;; A trust, like a rule, must see the calls that need no decision
         ;; (an agent's edit, whose review is its approval).
         :rules (or (agent-q-rules-any-p) (and agent-q-trust--active t)))))

(defconst agent-q--print-level 32
  "Deepest nesting printed in a result; deeper parts print as \"...\".")

(defconst agent-q--print-length 2000
  "Most elements of one list or vector printed in a result.")

(defmacro agent-q--with-bounded-printing (&rest body)
  "Run BODY with printing bounded in depth and length, `print-circle' off.
`print-circle' must be off because its pre-pass in Emacs 28 recurses on
a value's depth, ignoring `print-level': a deeply nested value
overflows the C stack and kills Emacs.  Within the bounds, cycles print
as #N; cut parts print as \"...\"."
  (declare (indent 0) (debug t))
  `(let ((print-circle nil)
         (print-level agent-q--print-level)
         (print-length agent-q--print-length))
     ,@body))

(defun agent-q--print-bounded (value limit &optional princ)
  "Print VALUE with `prin1' (`princ' when PRINC), stopping at LIMIT characters.
Return (TEXT . STATUS): STATUS is t when TEXT is all of it, `limit'
when printing stopped at LIMIT, `error' when Emacs's printer refused
the value (nested more than 200 levels).

`print-level' and `print-length' bound the shape printed, not its
size: a value that shares its parts (a list of two references to a
list of two references to...) prints exponentially many characters,
and in Emacs 28 `print-level' does not apply to vectors and records.
So the characters are counted as they are printed.  `print-circle' is
off (see `agent-q--with-bounded-printing')."
  (let ((chars nil) (count 0) (status 'error))
    (catch 'agent-q--print-limit
      (condition-case nil
          (let ((print-circle nil))
            (funcall (if princ #'princ #'prin1) value
                     (lambda (char)
                       (when (>= count limit)
                         (setq status 'limit)
                         (throw 'agent-q--print-limit nil))
                       (push char chars)
                       (setq count (1+ count))))
            (setq status t))
        (error nil)))
    (cons (concat (nreverse chars)) status)))

(defconst agent-q--message-max-chars 4000
  "Most characters of an error message built from a condition's data.")

(defun agent-q--error-message (condition)
  "The message of the error CONDITION, printed with bounds; never signals.
As `error-message-string' gives it, when the data is small; otherwise
built item by item, each printed within `agent-q--print-bounded''s
bounds, so that huge, shared, deeply nested or circular data gives a
message cut short rather than a hang, a crash or another error."
  (agent-q--with-bounded-printing
    (let* ((data (cdr-safe condition))
           (items (proper-list-p data)))
      (or (and items (<= items agent-q--print-length)
               (eq (cdr (agent-q--print-bounded data agent-q--message-max-chars)) t)
               (ignore-errors (error-message-string condition)))
          (agent-q--error-message-cut condition)))))

(defun agent-q--error-message-cut (condition)
  "The message of the error CONDITION, each data item printed with bounds.
The rules are those of `error-message-string'."
  (let* ((symbol (car-safe condition))
         (data (cdr-safe condition))
         (conditions (and (symbolp symbol) (get symbol 'error-conditions)))
         (file-error (memq 'file-error conditions))
         (message (cond ((eq symbol 'error) (car-safe data))
                        ((symbolp symbol) (get symbol 'error-message))))
         (items (if (eq symbol 'error) (cdr-safe data) data))
         (princ (or file-error (memq symbol '(end-of-file user-error))))
         (budget agent-q--message-max-chars)
         (parts nil)
         (count 0))
    (when (and file-error (consp items))
      (setq message (car items) items (cdr items)))
    (setq message (if (stringp message)
                      (car (agent-q--print-bounded message budget t))
                    "peculiar error"))
    (while (and (consp items) (< count agent-q--print-length) (> budget 0))
      (let ((printed (agent-q--print-bounded (car items) budget princ)))
        (push (if (eq (cdr printed) t) (car printed) (concat (car printed) "...")) parts)
        (setq budget (- budget (length (car printed)))
              count (1+ count)
              items (cdr items))))
    (when (consp items)
      (push "..." parts))
    (concat message
            (and parts (if (string-empty-p message) "" ": "))
            (mapconcat #'identity (nreverse parts) ", "))))

(defun agent-q--ruled-decision (tool-name ruling context)
  "Return the decision of RULING about TOOL-NAME's call in CONTEXT, or nil.
RULING is what `agent-q-rules-decide' returned.  A deny rule gives
\(:rule :denied TEXT); an allow rule (:rule :approved TEXT), except for
an optional call (CONTEXT's :optional: one that needs no decision),
which, like an optional call no rule decides, gets `:auto': it runs as
it would have run without rules, audited as before -- unless an allow
rule stands for the call's review (CONTEXT's :review-rule), which then
approves it unreviewed.  An ask rule, or
no rule for a call that needs a decision, gives nil: the user is to
be asked."
  (let ((optional (plist-get context :optional)))
    (pcase (car ruling)
      ('deny (let ((text (agent-q-rules-ruling-text ruling)))
               (message "agent-q: %s denied without asking, by the rule: %s" tool-name text)
               (list :rule :denied text)))
      ('ask nil)
      ('allow (if (and optional (not (plist-get context :review-rule)))
                  :auto
                (let ((text (agent-q-rules-ruling-text ruling)))
                  (message "agent-q: %s ran without asking, by the rule: %s" tool-name text)
                  (list :rule :approved text))))
      (_ (and optional :auto)))))

(defun agent-q--ruling (tool-name args context)
  "What the approval rules say about TOOL-NAME with ARGS in CONTEXT.
The one place that consults `agent-q-rules-decide': the executor's
rule step (`agent-q--approval-call', `agent-q--unasked-decision') and
whoever must know what that step decides (the gate's notification,
the ACP bridge, a rule saved from the prompt) all come here."
  (agent-q-rules-decide tool-name args context))

(declare-function agent-q-trust-decision "agent-q-trust" (tool-name args context ruling))

(defun agent-q--trusted-decision (tool-name args context ruling)
  "The decision of a trust about TOOL-NAME with ARGS in CONTEXT, or nil.
RULING is what the rules said (`agent-q--ruling'): a deny or ask rule
wins over a trust.  The module decides (see `agent-q-trust-agent');
nothing is asked of it while no agent is trusted.  Never signals."
  (and agent-q-trust--active
       (fboundp 'agent-q-trust-decision)
       (agent-q-trust-decision tool-name args context ruling)))

(defun agent-q--unasked-decision (tool-name args context)
  "The decision the rules or a trust make about TOOL-NAME with ARGS in CONTEXT.
Nil means the user must be asked; see `agent-q--ruled-decision' and
`agent-q--trusted-decision'.  Never asks, never signals (see
`agent-q-rules-decide')."
  (let ((ruling (agent-q--ruling tool-name args context)))
    (or (agent-q--trusted-decision tool-name args context ruling)
        (agent-q--ruled-decision tool-name ruling context))))

(defun agent-q--trusted-unasked (tool-name args context)
  "The decision of a trust about TOOL-NAME with ARGS in CONTEXT, or nil.
For a call that needs a decision: a trust decides it at once, before
it is queued for the prompt.  Never signals."
  (and agent-q-trust--active
       (agent-q--trusted-decision tool-name args context
                                  (agent-q--ruling tool-name args context))))

(defun agent-q--approval-call (tool-name args context)
  "Decide about TOOL-NAME with ARGS: by a trust, a rule, or by asking.
A trust of the agent (`agent-q--trusted-decision') answers first,
unless a deny or ask rule wins over it.
This is where every decision is made (the synchronous and the
asynchronous executor, `agent-q-request-approval').  A deny or allow
rule of `agent-q-approval-rules' decides without asking, and the
answer, (:rule :denied TEXT) or (:rule :approved TEXT), names it for
the audit log.  A call that needs no decision (CONTEXT's :optional:
the executor offers every call when there are rules) gets `:auto'
unless a deny or ask rule matches, without calling the approval
function.  Otherwise `agent-q-approval-function' is asked, with
CONTEXT bound to `agent-q-approval-context' (plus :rule, the text of
the rule, when an ask rule matched) and `print-circle' to nil (see
`agent-q--with-bounded-printing')."
  (let ((ruling (agent-q--ruling tool-name args context)))
    (cond
     ((agent-q--trusted-decision tool-name args context ruling))
     ((agent-q--ruled-decision tool-name ruling context))
     ((not agent-q-approval-function) :no-approval-function)
     (t (let ((agent-q-approval-context
               (if ruling
                   (append context (list :rule (agent-q-rules-ruling-text ruling))
                           ;; No rule asks: the command or domain rules cover no part.
                           (and (null (nth 1 ruling)) (list :uncovered t)))
                 context))
              (print-circle nil))
          (unwind-protect
              (funcall agent-q-approval-function tool-name args)
            ;; The keys the prompt read belong to no command when it was
            ;; asked from a timer (a client's call, or the synchronous
            ;; executor run from one): left in `this-command-keys', they
            ;; would look like a key sequence half typed, and the next
            ;; call would wait for a command (see `agent-q--user-busy-p').
            (unless noninteractive
              (clear-this-command-keys t))))))))

(defun agent-q--call-handler (handler args id tool client approved reason
                                      &optional file origin channel decision rule)
  "Call HANDLER with ARGS, with `agent-q-call-context' describing the call.
ID, TOOL, CLIENT, APPROVED, REASON, FILE (the file the guard pinned),
ORIGIN, CHANNEL, DECISION and RULE are the context's values (the
executor passes them apart: the plist is cheaper to build here, in
byte code, than from the module).  `print-circle' is nil meanwhile,
whatever the user set: a handler that prints a deep value must not
kill Emacs (see `agent-q--with-bounded-printing')."
  (let ((agent-q-call-context (list :id id :tool tool :client client
                                    :origin (or origin 'emacs)
                                    :approved approved :reason reason :file file
                                    :channel channel :decision decision :rule rule))
        (print-circle nil))
    (funcall handler args)))

(defun agent-q--callback (cell)
  "Return a callback for an asynchronous handler, storing its answer in CELL.
CELL is a cons whose car becomes the answer (STATUS . VALUE), as the
handler gave them: the executor reads STATUS.  Only the first call
counts.  A review's hunks, a third argument, are not recorded here."
  (lambda (value &optional status _review)
    (unless (car cell)
      (setcar cell (cons status value)))))

(defun agent-q--call-handler-and-wait (handler args context)
  "Call the asynchronous HANDLER with ARGS and wait for its answer.
CONTEXT is bound to `agent-q-call-context' while HANDLER starts.
Return (STATUS . VALUE).  The wait is a recursive edit, so the user
can go on working (and answer the review the handler opened);
`agent-q--answered' leaves it once the answer is there."
  (let ((cell (list nil)))
    (let ((agent-q-call-context context)
          (print-circle nil))
      (funcall handler (agent-q--callback cell) args))
    (agent-q--wait-for (lambda () (car cell)))
    (car cell)))

(defvar agent-q--waits nil
  "Predicates of the recursive edits waiting for an answer, innermost first.")

(defun agent-q--exit-answered-wait ()
  "Leave the innermost waiting recursive edit once its predicate is true."
  (let ((wait (car agent-q--waits)))
    (when (and wait (funcall (car wait)) (eql (cdr wait) (recursion-depth)))
      (exit-recursive-edit))))

(defun agent-q--wait-for (predicate)
  "Run recursive edits until calling PREDICATE gives non-nil.
Something the user does (a command) must make it true; the innermost
wait is left after the command that satisfied it.  Meanwhile Emacs is
fully usable."
  (let ((entry (cons predicate (1+ (recursion-depth)))))
    (push entry agent-q--waits)
    (add-hook 'post-command-hook #'agent-q--exit-answered-wait)
    (unwind-protect
        (while (not (funcall predicate))
          (recursive-edit))
      (setq agent-q--waits (delq entry agent-q--waits))
      (unless agent-q--waits
        (remove-hook 'post-command-hook #'agent-q--exit-answered-wait)))))

(defun agent-q-request-approval (tool-name args reason &optional registry)
  "Ask the user whether TOOL-NAME may run with ARGS, because of REASON.
For a handler that must ask something the executor did not (prefer a
guard, see `agent-q-define-tool', which asks before the handler runs).
The answer follows the rules the executor applies to dangerous tools:
the result is (:approved ARGS) -- with :modified t when the user
changed them, validated against the tool's schema in REGISTRY -- or
\(:denied MESSAGE).  Anything but an explicit approval, including an
error or a quit, denies; the handler should then end with
`agent-q-tool-deny'."
  (agent-q--core-decide registry tool-name
                        (condition-case err
                            (agent-q--approval-call tool-name args
                                                    (list :safety-level :safe :reason reason))
                          (quit '(:quit))
                          (error (list :error (agent-q--error-message err))))
                        args))

(defconst agent-q--pretty-print-limit 20000
  "Longest printed value that is also pretty-printed (indentation is slow).")

(defun agent-q--format-result (value)
  "VALUE as text for the model: lists pretty-printed, the rest with `prin1'.
Printing is bounded, see `agent-q--with-bounded-printing' and
`agent-q--print-bounded': a value that prints to more than
`agent-q-max-result-chars' characters (a million when that is 0), or
nests too deeply for Emacs's printer, is cut, saying so."
  (agent-q--with-bounded-printing
    (let* ((print-escape-newlines nil)
           (limit (if (> agent-q-max-result-chars 0)
                      (max 1 (- agent-q-max-result-chars 200))
                    1000000))
           (printed (agent-q--print-bounded value limit))
           (text (car printed)))
      (pcase (cdr printed)
        ('limit
         (format "%s\n[... cut after %d characters: the value prints to more (agent-q-max-result-chars is %d); ask for a smaller part ...]"
                 text limit agent-q-max-result-chars))
        ('error
         (format "%s\n[... cut: the value is nested too deeply for Emacs's printer ...]" text))
        (_ (if (and (consp value) (< (length text) agent-q--pretty-print-limit))
               (string-trim-right (pp-to-string value))
             text))))))

(defun agent-q--call-id (call)
  "Return the :id of CALL when it is a string, else nil; never signal."
  (ignore-errors
    (let ((id (plist-get call :id)))
      (and (stringp id) (substring-no-properties id)))))

(defun agent-q--run-execution-hooks (phase tool-name args result)
  "Call each `agent-q-tool-execution-functions' with PHASE TOOL-NAME ARGS RESULT.
An error in one is reported and does not stop the others."
  (dolist (fn agent-q-tool-execution-functions)
    (condition-case err
        (funcall fn phase tool-name args result)
      (error
       (let ((text (agent-q--with-bounded-printing
                     (format "agent-q: execution hook %s failed on %s %s: %s"
                             (car (agent-q--print-bounded fn 200)) phase tool-name
                             (agent-q--error-message err)))))
         (agent-q--log-line text)
         (message "%s" text))))))

(defun agent-q--log-line (text)
  "Append TEXT as a line to the log buffer.
The buffer keeps its last `agent-q-log-max-chars' characters or so:
when it grows past that by a tenth, its oldest whole lines go."
  (with-current-buffer (get-buffer-create agent-q-log-buffer-name)
    (unless (derived-mode-p 'agent-q-log-mode)
      (agent-q-log-mode))
    ;; A log is not edited: undo records of every line (and of the
    ;; lines cut) would only feed the garbage collector.
    (unless (eq buffer-undo-list t)
      (buffer-disable-undo))
    (let ((inhibit-read-only t))
      (goto-char (point-max))
      (insert (format-time-string "%F %T ") text "\n")
      (when (and (natnump agent-q-log-max-chars)
                 (> (buffer-size) (+ agent-q-log-max-chars (/ agent-q-log-max-chars 10))))
        (save-excursion
          (goto-char (- (point-max) agent-q-log-max-chars))
          (forward-line 1)
          (delete-region (point-min) (point)))))))

(defvar agent-q--audit-file-warned nil
  "Non-nil once a failure to write `agent-q-audit-file' was reported.")

(defun agent-q--audit (json-line summary &optional event)
  "Log SUMMARY to the log buffer and append JSON-LINE to `agent-q-audit-file'.
EVENT is the record's event: a \"run\" record (a call about to run)
goes to the file only, so that the log shows one line per call, when
it ends.  RET or a click on the line shows the whole record.  The file
is created readable by the user only (mode 0600)."
  (unless (equal event "run")
    (agent-q--log-line (propertize summary 'agent-q-record json-line
                                   'mouse-face 'highlight
                                   'help-echo "RET or mouse-2: the whole audit record")))
  (when agent-q-audit-file
    (condition-case err
        (let ((file (expand-file-name agent-q-audit-file)))
          (if (and (fboundp 'agent-q--core-audit-append)
                   (not (find-file-name-handler file 'write-region)))
              ;; One write, no lock file, no fsync on this thread (the module
              ;; syncs from a thread of its own): see src/audit.rs.
              (agent-q--core-audit-append file json-line)
            (let ((coding-system-for-write 'utf-8-unix)
                  (create-lockfiles nil))
              (make-directory (file-name-directory file) t)
              ;; The records hold what the tools returned, a secret file
              ;; the user approved reading included: readable by the user
              ;; only, whatever the umask.
              (with-file-modes #o600
                (write-region (concat json-line "\n") nil file 'append 'silent)))))
      (error
       (unless agent-q--audit-file-warned
         (setq agent-q--audit-file-warned t)
         (message "agent-q: cannot write the audit file %s: %s"
                  agent-q-audit-file (error-message-string err)))))))

(declare-function json-pretty-print-buffer "json" (&optional minimize))

(defvar agent-q-log-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "RET") #'agent-q-log-show-record)
    (define-key map [mouse-2] #'agent-q-log-show-record)
    map)
  "Keymap of `agent-q-log-mode'.")

(define-derived-mode agent-q-log-mode special-mode "agent-q-log"
  "The log of agent-q's tool calls: one line per call, as it ended.
Each line says the tool, what it was about, how it ended, who decided
and how, and the client.
\\<agent-q-log-mode-map>\\[agent-q-log-show-record] shows the whole audit record of the line."
  (setq truncate-lines t))

(defun agent-q-log-show-record (&optional event)
  "Show the whole audit record of the log line at point (or of mouse EVENT)."
  (interactive (list last-nonmenu-event))
  (when (and event (mouse-event-p event))
    (mouse-set-point event))
  (let* ((start (line-beginning-position))
         (at (if (get-text-property start 'agent-q-record)
                 start
               (next-single-property-change start 'agent-q-record nil (line-end-position))))
         (record (get-text-property at 'agent-q-record)))
    (unless record
      (user-error "No audit record on this line"))
    (require 'json)
    (with-current-buffer (get-buffer-create "*agent-q record*")
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert record)
        (ignore-errors (json-pretty-print-buffer))
        (goto-char (point-min))
        (special-mode)))
    (display-buffer "*agent-q record*")))

(defun agent-q-show-log ()
  "Show agent-q's log, one line per tool call (see `agent-q-log-mode')."
  (interactive)
  (let ((buffer (get-buffer-create agent-q-log-buffer-name)))
    (with-current-buffer buffer
      (unless (derived-mode-p 'agent-q-log-mode)
        (agent-q-log-mode)))
    (pop-to-buffer buffer)))

;;;; The client bridges and the IDE companion (loaded on first use)

(autoload 'agent-q-gptel-mode "agent-q-gptel"
  "Give gptel's requests agent-q's tools (a global minor mode)." t)
(autoload 'agent-q-gptel-tools "agent-q-gptel"
  "agent-q's tools as gptel tool objects.")
(autoload 'agent-q-llm-tools "agent-q-llm"
  "agent-q's tools as llm.el tool structs.")
(autoload 'agent-q-mcp-connect-agent "agent-q-connect"
  "Configure a terminal agent to use agent-q's tools through the stdio relay." t)
(autoload 'agent-q-mcp-client-config "agent-q-connect"
  "The configuration text that connects an agent to agent-q, to paste.")
(autoload 'agent-q-gate-connect-agent "agent-q-connect"
  "Route a terminal agent's own tools through Emacs: write its hook." t)
(autoload 'agent-q-gate-disconnect-agent "agent-q-connect"
  "Remove the hook `agent-q-gate-connect-agent' wrote for an agent." t)
(autoload 'agent-q-ide-mode "agent-q-ide"
  "Make Emacs the IDE of Gemini CLI and Claude Code (a global minor mode)." t)
(autoload 'agent-q-ide-status "agent-q-ide"
  "Say whether Emacs serves the agents' IDE companions, and where." t)
(autoload 'agent-q-gate-mode "agent-q-gate"
  "Decide the terminal agents' own tool calls in Emacs (a global minor mode)." t)
(autoload 'agent-q-agent-shell-mode "agent-q-acp"
  "Decide agent-shell's ACP permission requests in agent-q (a global minor mode)." t)
(autoload 'agent-q-acp-respond "agent-q-acp"
  "Answer agent-shell's permission request in agent-q.")
(autoload 'agent-q-changes "agent-q-journal"
  "List what the agents changed through agent-q, newest first." t)
(autoload 'agent-q-trust-agent "agent-q-trust"
  "Trust a terminal agent for a while: its edits, or its commands, unasked." t)
(autoload 'agent-q-trust-end "agent-q-trust"
  "End a trust of `agent-q-trust-agent'." t)

;;;; The approval rules and UI, and the built-in tools

(require 'agent-q-rules)
(require 'agent-q-tools)            ; the approval handlers: the prompt and the hunk review
(require 'agent-q-async)
(require 'agent-q-builtins)
(require 'agent-q-mcp)

(defvar agent-q-register-builtin-tools-on-load)
(declare-function agent-q-register-builtin-tools "agent-q-builtins" (&optional registry))

(when agent-q-register-builtin-tools-on-load
  (agent-q-register-builtin-tools))

(provide 'agent-q)

;;; agent-q.el ends here
