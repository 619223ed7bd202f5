;;; agent-q-builtins.el --- The 25 built-in tools of agent-q  -*- lexical-binding: t -*-

;; Copyright (C) 2026 The agent-q authors

;; Author: The agent-q authors
;; Maintainer: The agent-q authors
;; Keywords: tools, lisp
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

;; The built-in toolset of agent-q, ported from Agent-Q's Common Lisp
;; tools so that an LLM can introspect and work in the running Emacs:
;;
;;   introspection  describe_symbol, apropos_search, function_arglist,
;;                  who_calls, who_references, list_package_symbols,
;;                  class_slots, class_hierarchy, macroexpand_form
;;                  (agent-q-introspection.el, agent-q-xref.el)
;;   execution      eval_form, compile_form, get_last_error,
;;                  get_repl_history (agent-q-execution.el)
;;   buffer         read_file, read_buffer, search_in_buffer, write_file
;;                  (agent-q-files.el, guarded by agent-q-guard.el)
;;   diff           propose_file_edit (agent-q-files.el, reviewed in
;;                  agent-q-review.el)
;;   code           find_definition, find_references, file_outline,
;;                  workspace_symbols, diagnostics, type_at
;;                  (agent-q-code.el: language servers, xref, imenu),
;;                  rename_symbol (agent-q-code-rename.el, reviewed in
;;                  agent-q-review.el)
;;
;; This file holds the table of the tools (name, description for the
;; model, parameters, safety level, categories, handler) and
;; `agent-q-register-builtin-tools'.  Every tool has one handler,
;; `agent-q-builtins--NAME', in its family's file.  A handler takes the
;; arguments hash table the executor builds and returns the text sent
;; to the model; when it could not do its job it ends with
;; `agent-q-tool-fail', so the model, the audit log and the metrics all
;; see a failure.
;;
;; Registration uses `agent-q-define-tool' and `agent-q-register-tool'
;; rather than a macro so this file byte-compiles without agent-q.el,
;; which requires it (a require in the other direction would be a
;; cycle).

;;; Code:

(require 'cl-lib)
(require 'agent-q-support)
(require 'agent-q-guard)
(require 'agent-q-introspection)
(require 'agent-q-execution)
(require 'agent-q-files)
(require 'agent-q-xref)
(require 'agent-q-code)
(require 'agent-q-code-rename)

(declare-function agent-q-define-tool "agent-q"
                  (name description parameters &rest keys))
(declare-function agent-q-register-tool "agent-q" (tool &optional registry))

;;;; Options

(defcustom agent-q-register-builtin-tools-on-load t
  "Non-nil means loading agent-q registers the 25 built-in tools.
agent-q.el calls `agent-q-register-builtin-tools' when it is loaded
and this is non-nil."
  :type 'boolean
  :group 'agent-q)


;;;; The tool table

(defconst agent-q-builtins--read-guard-note
  "Reading a file outside the allowed directories (the current project and the directory of the file the current buffer visits), a remote file, a sensitive file (credentials, keys, .env, .authinfo, .ssh/..., and their backup or auto-save copies) or a file with several hard links asks the user first; if the user refuses, the call fails and says so."
  "Sentence appended to the descriptions of the read tools.")

(defconst agent-q-builtins--code-answer-note
  "One location per line as FILE:LINE:COLUMN: TEXT (1-based, the column in characters, FILE relative to the project root), then [in ENCLOSING-SYMBOL] when known. Lines outside the project, the allowed directories and the libraries' sources are listed without their text."
  "Sentence appended to the descriptions of the code location tools.")

(defconst agent-q-builtins--code-locate-parameters
  '((:name "symbol" :type :string :description "The symbol's name, or a name path such as Class/method.")
    (:name "file" :type :string :description "The file: where to look for symbol, or the file of line and column. Absolute or relative to the project root.")
    (:name "line" :type :integer :description "With file: the line of an occurrence of the symbol, 1-based.")
    (:name "column" :type :integer :description "With file and line: the column, 1-based, in characters."))
  "The parameters of find_definition and find_references.")

(defconst agent-q-builtin-tools
  `(("describe_symbol"
     "Describe an Emacs Lisp symbol: whether it is a function, macro, special form, command, variable, user option, constant, face or feature; its signature, documentation, current value (bounded) and the file that defines it. Use it before calling or changing something you do not know. The value of a variable that may hold a secret (a name like *-api-key or *token*, a variable defined in the user's private files, a value that looks like a key) is hidden and the result says why; pass show_value true to ask the user to show it. Fails with \"Symbol X not found\" and close matches when no such symbol exists."
     ((:name "symbol" :type :string :description "The symbol's exact name, e.g. \"buffer-file-name\" or \"with-temp-buffer\".")
      (:name "show_value" :type :boolean :description "Ask the user to show a value that was hidden as a possible secret; default false. Other values are always shown."))
     ("symbol") :safe (:introspection) agent-q-builtins--describe-symbol
     (:guard agent-q-builtins--describe-symbol-guard))
    ("apropos_search"
     "Find Emacs Lisp symbols whose name contains a string (a case-insensitive substring, not a regexp). Use it to discover functions or variables when you only know part of a name. Returns \"Found N symbol(s) matching 'P':\" and one line per symbol with its kind; long lists are capped and say how many were left out."
     ((:name "pattern" :type :string :description "Substring of the symbol names, e.g. \"window-buffer\".")
      (:name "type" :type :string :enum ("any" "function" "command" "variable" "face") :description "Only symbols of this kind; default any."))
     ("pattern") :safe (:introspection) agent-q-builtins--apropos-search)
    ("function_arglist"
     "Return the argument list of an Emacs Lisp function, macro or special form as Emacs's help shows it, e.g. (string-trim STRING &optional TRIM-LEFT TRIM-RIGHT); when the function advertises a shorter calling convention, that one first and the full list after. Use it before writing a call. Says clearly when the name is not a function."
     ((:name "function" :type :string :description "The function's name, e.g. \"string-trim\"."))
     ("function") :safe (:introspection) agent-q-builtins--function-arglist)
    ("who_calls"
     "Find the call sites of a function in the Emacs Lisp sources of the loaded libraries (code only, not comments or strings), each as file:line with the enclosing definition. Use it to see how a function is used or what a change would affect. Says which libraries could not be searched because their source is not installed. Lines are quoted only from Emacs's own sources, package directories and the allowed directories; elsewhere (a user's private files) and in sensitive files only file:line and the definition are given, and the result says so."
     ((:name "function" :type :string :description "The called function's name, e.g. \"string-trim\"."))
     ("function") :safe (:introspection :xref) agent-q-xref-who-calls-async (:async t))
    ("who_references"
     "Find the places where a variable is referenced in the Emacs Lisp sources of the loaded libraries (code only, not comments or strings), each as file:line with the enclosing definition. Use it to see who reads or sets a variable. Says which libraries could not be searched. Lines are quoted only from Emacs's own sources, package directories and the allowed directories; elsewhere (a user's private files) and in sensitive files only file:line and the definition are given, and the result says so."
     ((:name "variable" :type :string :description "The variable's name, e.g. \"fill-column\"."))
     ("variable") :safe (:introspection :xref) agent-q-xref-who-references-async (:async t))
    ("list_package_symbols"
     "List the symbols that a loaded library or feature defines (functions, macros, commands, variables, user options, faces, types), as \"Package P (N symbols):\" then \"  NAME [kind]\". Internal names (with \"--\") are left out unless include_internal is true. Use it to learn a package's public API. The library must already be loaded."
     ((:name "package" :type :string :description "Feature or library name, e.g. \"subr-x\" or \"project\".")
      (:name "include_internal" :type :boolean :description "Also list internal names containing \"--\"; default false."))
     ("package") :safe (:introspection :packages) agent-q-builtins--list-package-symbols)
    ("class_slots"
     "List the slots of an EIEIO class (defclass) or a cl-defstruct type, each with its initarg, type and initform. Use it before creating or reading instances."
     ((:name "class" :type :string :description "The class or struct type name, e.g. \"cl-slot-descriptor\"."))
     ("class") :safe (:introspection :clos) agent-q-builtins--class-slots)
    ("class_hierarchy"
     "Show an EIEIO class's or cl-defstruct type's parents in precedence order (\"Class Precedence List:\"), its direct superclasses and its direct subclasses."
     ((:name "class" :type :string :description "The class or struct type name."))
     ("class") :safe (:introspection :clos) agent-q-builtins--class-hierarchy)
    ("macroexpand_form"
     "Expand the macros of one Emacs Lisp form and return the expansion, pretty-printed: one step (macroexpand-1) by default, or completely (macroexpand-all) when full is true. Expanding runs the macros' code, so it is logged. Use it to understand what a macro call does."
     ((:name "form" :type :string :description "Exactly one Emacs Lisp form, e.g. \"(when x (foo))\".")
      (:name "full" :type :boolean :description "Expand completely, including nested macro calls; default false (one step)."))
     ("form") :cautious (:introspection) agent-q-builtins--macroexpand-form
     (:annotations (:open-world nil)))
    ("eval_form"
     "Evaluate exactly one Emacs Lisp form in the running Emacs, with lexical binding, and return \"Value: ...\" plus whatever it printed to standard-output. Extra text after the form is an error. Errors are reported with their condition; call get_last_error for the backtrace. The form and result are kept in the history (get_repl_history). It changes the user's Emacs: prefer the introspection tools for reading."
     ((:name "form" :type :string :description "Exactly one Emacs Lisp form, e.g. \"(buffer-list)\"."))
     ("form") :cautious (:execution) agent-q-builtins--eval-form
     (:annotations (:destructive t :open-world t)))
    ("compile_form"
     "Byte-compile one Emacs Lisp form with lexical binding, report the compiler's warnings (free variables, wrong argument counts, unused variables...) or \"No warnings.\", then run the compiled code and return its value. Use it to check code before putting it in a file."
     ((:name "form" :type :string :description "Exactly one Emacs Lisp form, e.g. a defun."))
     ("form") :cautious (:execution) agent-q-builtins--compile-form
     (:annotations (:destructive t :open-world t)))
    ("get_last_error"
     "Return your last error from eval_form or compile_form (each client sees only its own): its condition, message, the form, and a bounded backtrace (innermost frame first), or \"No recent errors recorded.\". Use it after an evaluation failed."
     () nil :safe (:execution) agent-q-builtins--get-last-error)
    ("get_repl_history"
     "Return your recent eval_form and compile_form calls with their results (each client sees only its own), newest first, as \"Recent REPL History (n of N entries):\"."
     ((:name "limit" :type :integer :description "How many entries to return: default 10, at most 50."))
     () :safe (:execution) agent-q-builtins--get-repl-history)
    ("read_file"
     ,(concat "Read a text file, a page of lines at a time (offset is the first line, 1-based; limit the number of lines, default 400; column skips characters of the first line, for lines longer than a page). When a buffer visits the file with unsaved changes, returns the buffer's text and says so. Binary and encrypted files are not shown (nothing is decrypted); .gz files are decompressed. The result starts with \"File: PATH (lines A-B of N)\" and, when there is more, ends by telling you the offset of the next page; nothing is cut silently. "
              agent-q-builtins--read-guard-note)
     ((:name "path" :type :string :description "The file's path; ~ and relative paths are expanded from the current buffer's directory.")
      (:name "offset" :type :integer :description "First line to read, 1-based; default 1.")
      (:name "limit" :type :integer :description "Maximum number of lines to read; default 400.")
      (:name "column" :type :integer :description "Characters of the first line (offset) to skip, 0-based; default 0. Use it to read on in a line longer than one page, as the result then says."))
     ("path") :safe (:buffer) agent-q-builtins--read-file
     (:guard agent-q-builtins--read-file-guard
      ;; A remote file (TRAMP), once the user allows it.
      :annotations (:open-world t)))
    ("read_buffer"
     ,(concat "Read the text of an Emacs buffer (the whole buffer, ignoring narrowing, or the characters from start to end), including unsaved changes. Large buffers are returned a page at a time; the result says where the next page starts. "
              "Bytes that are not valid text are shown as \\xNN. For a buffer visiting a file, the same rule as read_file applies, and reading a hidden buffer (a name starting with a space) asks too: "
              agent-q-builtins--read-guard-note)
     ((:name "buffer" :type :string :description "The buffer's name, e.g. \"*Messages*\" or \"init.el\".")
      (:name "start" :type :integer :description "First character position, 1-based; default the beginning.")
      (:name "end" :type :integer :description "Position after the last character to read (exclusive); default the end."))
     ("buffer") :safe (:buffer) agent-q-builtins--read-buffer
     (:guard agent-q-builtins--buffer-guard))
    ("search_in_buffer"
     ,(concat "Search an Emacs buffer for a string (or an Emacs regexp when regex is true), case-sensitively, and return \"Found N match(es) for 'P':\" with the line, column (characters from the line's start, 0-based) and position of each match and the line's text (on a long line, the part around the match). Regexps run in linear time; back-references (\\1) and \\= are not supported. "
              "For a buffer visiting a file, the same rule as read_file applies: "
              agent-q-builtins--read-guard-note)
     ((:name "pattern" :type :string :description "The text to find, or an Emacs regexp when regex is true.")
      (:name "buffer" :type :string :description "The buffer's name.")
      (:name "regex" :type :boolean :description "Treat pattern as an Emacs regular expression; default false (literal text).")
      (:name "all_matches" :type :boolean :description "List every match (up to 100); default true. False returns only the first match."))
     ("pattern" "buffer") :safe (:buffer) agent-q-builtins--search-in-buffer
     (:guard agent-q-builtins--buffer-guard))
    ("write_file"
     "Replace a file's whole content (or create it, with missing directories). Needs the user's approval. Writes atomically (temporary file, then rename) in the file's encoding, and reverts a buffer visiting the file; refuses (the call fails, nothing is written) when that buffer has unsaved changes, when the file is read-only, has several hard links or is not a regular file. Reports exactly what happened, errors included. Prefer propose_file_edit to change part of an existing file."
     ((:name "path" :type :string :description "The file's path.")
      (:name "content" :type :string :description "The complete new content of the file."))
     ("path" "content") :dangerous (:buffer :filesystem) agent-q-builtins--write-file
     (:guard agent-q-builtins--write-file-guard :annotations (:idempotent t)))
    ("propose_file_edit"
     "Propose a change to part of a file; the user reviews it hunk by hunk and may accept some hunks and reject others. original must be the exact current text (the whole file or a unique excerpt of it, e.g. from read_file); modified replaces it. Returns which hunks were applied and the text of the rejected ones, or explains why the proposal could not be shown (for example when original no longer matches the file)."
     ((:name "path" :type :string :description "The file to edit.")
      (:name "original" :type :string :description "The exact current text to replace: the whole file or a unique excerpt of it.")
      (:name "modified" :type :string :description "The new text that replaces original.")
      (:name "description" :type :string :description "A short explanation of the change, shown to the user."))
     ("path" "original" "modified" "description") :dangerous (:diff :buffer)
     agent-q-builtins--propose-file-edit
     (:async t :guard agent-q-builtins--propose-file-edit-guard :approval :review))
    ("find_definition"
     ,(concat "Find where a symbol is defined, in any language the user's Emacs knows: from the language server Emacs runs for the project (eglot), else Emacs Lisp's own analysis, the buffer's xref backend, or a project text search (the answer names its source, e.g. \"eglot: pyright\" or \"text search (not semantic)\"). Give symbol (a name, or a name path such as Class/method; with file to look only there), or file with line and column (1-based; the column in characters) of a use of the symbol. "
              agent-q-builtins--code-answer-note)
     ,agent-q-builtins--code-locate-parameters
     () :safe (:code) agent-q-code-find-definition
     (:async t :guard agent-q-code--guard))
    ("find_references"
     ,(concat "Find every reference to a symbol, the declaration included and marked \"declaration\", with the count (and a cut that says so), from the same sources as find_definition. Give symbol (a name or a name path such as Class/method, optionally with file), or file with line and column (1-based) of any occurrence. Use it for \"who calls this?\" and before changing a symbol. "
              agent-q-builtins--code-answer-note)
     ,agent-q-builtins--code-locate-parameters
     () :safe (:code) agent-q-code-find-references
     (:async t :guard agent-q-code--guard))
    ("file_outline"
     "List the symbols of a file, nested by indentation, each as KIND NAME (lines A-B): from the language server, else imenu (the answer names its source)."
     ((:name "file" :type :string :description "The file, absolute or relative to the project root."))
     ("file") :safe (:code) agent-q-code-file-outline
     (:async t :guard agent-q-code--guard))
    ("workspace_symbols"
     "Search the project's symbols by name (the language server's workspace symbol search; without a server, the outlines of the project's open buffers): one per line as FILE:LINE: KIND NAME [in CONTAINER]."
     ((:name "query" :type :string :description "Part of the symbol names, e.g. \"cell_len\"."))
     ("query") :safe (:code) agent-q-code-workspace-symbols
     (:async t))
    ("diagnostics"
     "Return the errors, warnings, infos and hints of a file (or, without file, of the project's files open in Emacs and those the server reported on) as FILE:LINE:COLUMN: SEVERITY [SOURCE CODE]: MESSAGE, from Flymake (fed by the language server) and Flycheck. A file not open in Emacs is opened for its server, which is given a few seconds to check it; the answer says what was not checked."
     ((:name "file" :type :string :description "The file to check, absolute or relative to the project root; omit for the project."))
     () :safe (:code) agent-q-code-diagnostics
     (:async t :guard agent-q-code--guard))
    ("type_at"
     "Return the language server's hover text at a position: the type, signature and documentation of the symbol there. Needs a language server."
     ((:name "file" :type :string :description "The file, absolute or relative to the project root.")
      (:name "line" :type :integer :description "The line, 1-based.")
      (:name "column" :type :integer :description "The column, 1-based, in characters."))
     ("file" "line" "column") :safe (:code) agent-q-code-type-at
     (:async t :guard agent-q-code--guard))
    ("rename_symbol"
     "Rename a symbol everywhere the project uses it, through the language server the user's Emacs runs for it (eglot's rename, which knows scopes and imports). Give file with line and column (1-based; the column in characters) of an occurrence, or symbol (a name or a name path such as Class/method, optionally with file), and new_name. The user reviews the changes of every file in one hunk-by-hunk review, which is the approval: only the accepted hunks are applied, to the buffer visiting a file, else to the file. Returns which hunks of which files were applied and which were rejected (where the old name stays). Refused, naming why: a rename that would create, rename or delete files; a file outside the allowed directories or sensitive; Emacs Lisp, which has no language server (use find_references and propose_file_edit)."
     (,@agent-q-builtins--code-locate-parameters
      (:name "new_name" :type :string :description "The symbol's new name: one identifier, e.g. \"total_width\"."))
     ("new_name") :dangerous (:code :diff) agent-q-code-rename-symbol
     (:async t :guard agent-q-code-rename--guard :approval :review)))
  "The built-in tools.
Each entry is (NAME DESCRIPTION PARAMETERS REQUIRED SAFETY-LEVEL
CATEGORIES HANDLER [KEYS]).  The first category is the tool's primary
one.  KEYS are more keyword arguments of `agent-q-define-tool' (:async,
:guard, :annotations: the MCP hints where the safety level alone would
not tell the truth -- eval_form and compile_form are cautious but run
arbitrary code, so they are destructive and reach the open world).")

(defun agent-q-register-builtin-tools (&optional registry)
  "Register the 25 built-in tools in REGISTRY (default: the global one).
Return the number of tools registered.  Calling it again is harmless:
identical definitions keep their registrations."
  (unless (and (fboundp 'agent-q-define-tool) (fboundp 'agent-q-register-tool))
    (error "The agent-q core is not loaded: (require 'agent-q) first"))
  (let ((count 0))
    (pcase-dolist (`(,name ,description ,parameters ,required ,safety ,categories ,handler
                           . ,keys)
                   agent-q-builtin-tools)
      (agent-q-register-tool
       (apply #'agent-q-define-tool name description parameters
              :required required
              :safety-level safety
              :categories categories
              :handler handler
              (car keys))
       registry)
      (cl-incf count))
    count))

(provide 'agent-q-builtins)

;;; agent-q-builtins.el ends here
