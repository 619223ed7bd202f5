;;; agent-q-xref.el --- Who calls and who references, for agent-q  -*- lexical-binding: t -*-

;; Copyright (C) 2026 The agent-q authors

;; Author: The agent-q authors
;; Maintainer: The agent-q authors
;; Keywords: lisp, tools
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

;; The Emacs Lisp side of the `who_calls' and `who_references' tools.
;;
;; The sources searched are those of the libraries in `load-history':
;; each loaded .elc or .eln file is mapped to the .el or .el.gz file
;; beside it (for .eln files, through `comp-eln-to-el-h' first).
;; Libraries whose source is not installed are collected and named in
;; the result, so the model knows what could not be searched.
;; Dynamic modules (.so) have no Lisp source and are left out.
;;
;; The scan itself is done by the agent-q-core module
;; (`agent-q--core-xref-scan'), natively and in parallel, reading
;; code only: comments, strings, docstrings and quoted data are
;; skipped.  What counts as a call or a reference is documented in
;; src/xref.rs; in short, a call is `(NAME ...)', #\\='NAME,
;; (function NAME), \\='NAME given to a known higher-order function,
;; or the function of a pcase `(pred NAME)' or `(app NAME PAT)' or of a
;; `declare' spec (`compiler-macro', `gv-setter'...); pattern guards
;; and those specs' lambdas are code.  A reference is NAME evaluated
;; outside function position, a `let'-bound NAME, or \\='NAME given to
;; `set', `boundp', `add-hook' and the like.  Definition sites are not
;; listed.
;;
;; The module keeps, per source file, an index of the symbols it
;; contains (built in a background thread after a scan, see
;; `agent-q-xref-background-index'), so repeated scans read only the
;; files that can contain the symbol.
;;
;; File names in results are shown with `abbreviate-file-name': they
;; stay absolute, so they can be passed to read_file as they are.
;;
;; The scan runs on a native thread while Emacs waits in 10 ms slices
;; checking for quit: C-g stops it, and so does the time limit
;; `agent-q-xref-max-seconds'; the result then says it was interrupted
;; and lists what was found until then.  At most
;; `agent-q-xref-max-results' hits are turned into Lisp values.
;;
;; Lines are quoted only from public sources: files under Emacs's own
;; Lisp directory, the package directories (`package-user-dir',
;; `package-directory-list', site-lisp directories) or the read
;; guard's allowed directories (`agent-q-builtins--allowed-directories'),
;; and never from a file matching `agent-q-sensitive-file-patterns'.
;; A hit elsewhere (a private ~/.emacs.d/secrets.el that read_file
;; would ask about) is listed as FILE:LINE with its definition's name,
;; without the line, and the result says why.
;;
;; The handlers `agent-q-xref-who-calls-handler' and
;; `agent-q-xref-who-references-handler' take the tool's argument hash
;; table and return the result string.

;;; Code:

(require 'seq)
(require 'subr-x)
(require 'agent-q-introspection)
(require 'agent-q-guard)

(declare-function agent-q--core-xref-scan "agent-q-core" (files name kind max-hits max-seconds))
(declare-function agent-q--core-xref-index "agent-q-core" (files background))
(declare-function agent-q--core-xref-scan-start "agent-q-core"
                  (files name kind max-hits max-seconds))
(declare-function agent-q--core-xref-scan-finished "agent-q-core" ())
(declare-function agent-q--core-xref-scan-cancel "agent-q-core" (ticket))
(declare-function agent-q-async-starting-p "agent-q-async" ())
(declare-function agent-q-when-cancelled "agent-q-async" (function))
(declare-function agent-q-tool-fail "agent-q" (format-string &rest args))
(defvar agent-q--channel-drain-functions)
(declare-function agent-q-builtins--allowed-directories "agent-q-builtins" ())
(declare-function agent-q-builtins--sensitive-pattern "agent-q-builtins" (&rest names))

(defvar comp-eln-to-el-h)
(defvar package-user-dir)
(defvar package-directory-list)

(defcustom agent-q-xref-max-results 100
  "Most hits listed by `who_calls' and `who_references'.
The result says how many more were found but left out."
  :type 'natnum
  :group 'agent-q)

(defcustom agent-q-xref-max-seconds 20
  "Longest time, in seconds, that one `who_calls' or `who_references' scans.
Emacs waits for the scan (interruptibly: \[keyboard-quit] stops it);
after this long the scan stops and the result lists what was found
until then, saying it is incomplete.  nil means no limit.  A first
scan of all of Emacs's own sources takes about a second."
  :type '(choice (const :tag "No limit" nil) number)
  :group 'agent-q)

(defcustom agent-q-xref-background-index t
  "Whether to index the searched sources in a background thread.
After a scan, a native thread records which symbols each source
file contains, so that later scans skip the files that cannot
contain the symbol without reading them.  The index takes about
1 MB for all of Emacs's own sources and follows file changes."
  :type 'boolean
  :group 'agent-q)

(defcustom agent-q-xref-max-error-files 10
  "Most unreadable source files named in a cross-reference result."
  :type 'natnum
  :group 'agent-q)

(defcustom agent-q-xref-max-missing-libraries 30
  "Most libraries without source named in a cross-reference result."
  :type 'natnum
  :group 'agent-q)

(defun agent-q-xref--source-file (file)
  "Return the readable Emacs Lisp source of the loaded FILE, or nil.
FILE is a file name from `load-history': a .elc, .eln, .el or
.el.gz file, or, for a library loaded through jka-compr from Emacs
30 on, its name without any extension.  The source is the .el or
.el.gz file with the same base name."
  (when (and (stringp file)
             (string-suffix-p ".eln" file)
             (boundp 'comp-eln-to-el-h)
             (hash-table-p comp-eln-to-el-h))
    ;; Its keys are the .eln files' names without directory, as in
    ;; `locate-file'.
    (setq file (or (gethash (file-name-nondirectory file) comp-eln-to-el-h)
                   (gethash file comp-eln-to-el-h)
                   file)))
  (let ((base (and (stringp file)
                   (cond ((string-suffix-p ".el.gz" file)
                          (substring file 0 -6))
                         ((string-match "\\.\\(?:elc\\|el\\|eln\\)\\'" file)
                          (substring file 0 (match-beginning 0)))
                         ((not (file-name-extension file))
                          file)))))
    (when base
      (seq-find #'file-readable-p
                (list (concat base ".el") (concat base ".el.gz"))))))

(defun agent-q-xref--module-file-p (file)
  "Return non-nil if FILE is a dynamic module."
  (and module-file-suffix
       (string-suffix-p module-file-suffix file)))

(defun agent-q-xref--library-name (file)
  "Return the library name of the loaded FILE, for messages.
The hashes of native-compiled file names (name-HASH-HASH.eln) are
removed."
  (let ((name (file-name-sans-extension
               (file-name-nondirectory (string-remove-suffix ".gz" file)))))
    (if (and (string-suffix-p ".eln" file)
             (string-match "-[0-9a-f]+-[0-9a-f]+\\'" name))
        (substring name 0 (match-beginning 0))
      name)))

(defvar agent-q-xref--source-cache (make-hash-table :test #'equal)
  "Loaded file names mapped to the source files found for them.
Only found sources are kept: looking a source up costs two file
system calls, and a session has hundreds of libraries.  A source
deleted since is reported by the scan as unreadable.")

(defun agent-q-xref--cached-source-file (file)
  "Return `agent-q-xref--source-file' of FILE, remembered once found."
  (or (gethash file agent-q-xref--source-cache)
      (let ((source (agent-q-xref--source-file file)))
        (when source
          (puthash file source agent-q-xref--source-cache))
        source)))

(defun agent-q-xref-library-sources ()
  "Return the sources of the libraries in `load-history'.
The value is (SOURCES . MISSING): SOURCES a list of the readable
.el or .el.gz files, MISSING a sorted list of the names of the
loaded libraries whose source is not installed.  Dynamic modules
are in neither list."
  (let ((sources nil)
        (missing nil)
        (seen (make-hash-table :test #'equal)))
    (dolist (entry load-history)
      (let ((file (car-safe entry)))
        (when (and (stringp file)
                   (not (agent-q-xref--module-file-p file)))
          (let ((source (agent-q-xref--cached-source-file file)))
            (cond ((null source)
                   (push (agent-q-xref--library-name file) missing))
                  ((not (gethash source seen))
                   (puthash source t seen)
                   (push source sources)))))))
    (cons (nreverse sources)
          (sort (delete-dups missing) #'string<))))

(defun agent-q-xref--ensure-module ()
  "Load the agent-q-core module if needed; signal an error if it cannot be."
  (unless (fboundp 'agent-q--core-xref-scan)
    (unless (require 'agent-q-core nil t)
      (error "The agent-q-core module is not available; build it with `make build' in agent-q's source tree (or `M-x agent-q-module-compile' once agent-q is loaded)"))))

(defun agent-q-xref-find (name kind &optional files max-hits max-seconds)
  "Find the occurrences of the symbol named NAME of KIND.
KIND is `call' or `reference'.  FILES are the source files to
search; when nil, those of the loaded libraries.  MAX-HITS, when
non-nil, is the most hits returned; MAX-SECONDS, when non-nil, the
longest the scan may take.  Return a plist
\(:hits HITS :total TOTAL :errors ERRORS :missing MISSING
:interrupted INTERRUPTED :scanned SCANNED :files NFILES): HITS a
list of (FILE LINE COLUMN DEFINITION LINE-TEXT) sorted by file and
line, TOTAL how many were found (HITS may hold fewer), ERRORS a
list of (FILE . MESSAGE) for unreadable files, MISSING the names of
loaded libraries whose source is not installed (only when FILES is
nil).  INTERRUPTED is `quit' when the user quit (\[keyboard-quit])
during the scan, `timeout' when MAX-SECONDS passed: HITS and ERRORS
are then those of the SCANNED files of NFILES."
  (agent-q-xref--ensure-module)
  (let* ((libraries (unless files (agent-q-xref-library-sources)))
         (searched (or files (car libraries)))
         (result (agent-q--core-xref-scan searched name kind max-hits max-seconds)))
    (when (and agent-q-xref-background-index
               (not (plist-get result :interrupted)))
      (agent-q--core-xref-index searched t))
    (append (list :missing (cdr libraries)) result)))

(defun agent-q-xref--public-directories ()
  "Return the directories whose sources may be quoted, as true names.
They are the library directories (see `agent-q-builtins--library-roots':
Emacs's own Lisp directory, the package and site-lisp directories,
`agent-q-library-directories') and the read guard's allowed directories
\(see `agent-q-builtins--allowed-directories')."
  (delete-dups (append (agent-q-builtins--library-roots)
                       (agent-q-builtins--allowed-directories))))

(defun agent-q-xref--sensitive-p (file truename)
  "Return non-nil if FILE (whose true name is TRUENAME) is sensitive.
That is when it matches `agent-q-sensitive-file-patterns'."
  (if (fboundp 'agent-q-builtins--sensitive-pattern)
      (agent-q-builtins--sensitive-pattern file truename)
    (and (boundp 'agent-q-sensitive-file-patterns)
         (let ((case-fold-search t))
           (seq-some (lambda (re) (or (string-match-p re file) (string-match-p re truename)))
                     (symbol-value 'agent-q-sensitive-file-patterns))))))

(defun agent-q-xref--quote-policy (files)
  "Decide which of FILES may have their lines quoted in a result.
Return a hash table from each file to t (quote), `private' (outside
the public directories) or `sensitive' (matches a sensitive file
pattern)."
  (let ((table (make-hash-table :test #'equal))
        (public nil))
    (dolist (file files)
      (unless (gethash file table)
        (let ((true (file-truename file)))
          (puthash file
                   (cond ((agent-q-xref--sensitive-p file true) 'sensitive)
                         ((seq-some (lambda (dir) (string-prefix-p dir true))
                                    (or public (setq public (agent-q-xref--public-directories))))
                          t)
                         (t 'private))
                   table))))
    table))

(defun agent-q-xref--format-hit (hit &optional quote)
  "Format HIT, a (FILE LINE COLUMN DEFINITION LINE-TEXT) list, as a line.
With QUOTE nil, leave the line's text out."
  (pcase-let ((`(,file ,line ,_column ,definition ,text) hit))
    (if quote
        (format "%s:%d: in %s: %s"
                (abbreviate-file-name file) line
                (or definition "top level") text)
      (format "%s:%d: in %s"
              (abbreviate-file-name file) line
              (or definition "top level")))))

(defun agent-q-xref--file-names (files)
  "Return FILES abbreviated, sorted and joined, naming at most some of them.
At most `agent-q-xref-max-error-files' are named; the text says how
many more there are."
  (let* ((sorted (sort (mapcar #'abbreviate-file-name files) #'string<))
         (shown (seq-take sorted agent-q-xref-max-error-files)))
    (concat (string-join shown ", ")
            (if (> (length sorted) (length shown))
                (format ", and %d more" (- (length sorted) (length shown)))
              ""))))

(defun agent-q-xref--withheld-notes (policy)
  "Return the notes on the files whose lines POLICY withheld, or nil.
POLICY is a table as returned by `agent-q-xref--quote-policy'."
  (let (private sensitive notes)
    (maphash (lambda (file decision)
               (pcase decision
                 ('private (push file private))
                 ('sensitive (push file sensitive))))
             policy)
    (when private
      (push (format "Lines not quoted from %d file(s) outside Emacs's Lisp directory, the package directories and the allowed directories (the read guard asks before reading such files; use read_file, which asks the user): %s"
                    (length private) (agent-q-xref--file-names private))
            notes))
    (when sensitive
      (push (format "Lines not quoted from %d file(s) matching a sensitive file pattern: %s"
                    (length sensitive) (agent-q-xref--file-names sensitive))
            notes))
    (nreverse notes)))

(defun agent-q-xref--notes (found)
  "Return the notes on what could not be searched in FOUND, or nil.
FOUND is a plist as returned by `agent-q-xref-find'."
  (let ((missing (plist-get found :missing))
        (errors (plist-get found :errors))
        (notes nil))
    (when missing
      (let ((shown (seq-take missing agent-q-xref-max-missing-libraries)))
        (push (format "Not searched, Emacs Lisp source not installed (%d librar%s): %s%s"
                      (length missing) (if (cdr missing) "ies" "y")
                      (string-join shown ", ")
                      (if (> (length missing) (length shown))
                          (format ", and %d more" (- (length missing) (length shown)))
                        ""))
              notes)))
    (when errors
      (let ((shown (seq-take errors agent-q-xref-max-error-files)))
        (push (format "Could not read %d source file(s): %s%s"
                      (length errors)
                      (mapconcat (lambda (e)
                                   (format "%s (%s)" (abbreviate-file-name (car e)) (cdr e)))
                                 shown "; ")
                      (if (> (length errors) (length shown))
                          (format "; and %d more" (- (length errors) (length shown)))
                        ""))
              notes)))
    (nreverse notes)))

(defun agent-q-xref--report (name kind limit)
  "Return the result string for the occurrences of NAME of KIND.
KIND is `call' or `reference'.  List at most LIMIT hits."
  (agent-q-xref--format name kind limit
                        (agent-q-xref-find name kind nil limit agent-q-xref-max-seconds)))

(defun agent-q-xref--format (name kind limit found)
  "Return the result text for FOUND, the occurrences of NAME of KIND.
FOUND is a plist from `agent-q-xref-find'; at most LIMIT hits are listed."
  (let* ((hits (plist-get found :hits))
         (total (plist-get found :total))
         (shown (seq-take hits limit))
         (policy (agent-q-xref--quote-policy (mapcar #'car shown)))
         (lines nil))
    (pcase (plist-get found :interrupted)
      ('quit
       (push (format "Interrupted by the user (C-g) after scanning %d of %d files: the results are incomplete."
                     (plist-get found :scanned) (plist-get found :files))
             lines))
      ('timeout
       (push (format "Stopped after %s s (agent-q-xref-max-seconds) having scanned %d of %d files: the results are incomplete."
                     agent-q-xref-max-seconds (plist-get found :scanned) (plist-get found :files))
             lines)))
    (if (null hits)
        (push (format (if (eq kind 'call)
                          "No callers found for %s"
                        "No references found for %s")
                      name)
              lines)
      (push (format (if (eq kind 'call) "Functions calling %s:" "References to %s:") name)
            lines)
      (dolist (hit shown)
        (push (agent-q-xref--format-hit hit (eq t (gethash (car hit) policy))) lines))
      (when (> total (length shown))
        (push (format "... %d more not shown (%d found in all)" (- total (length shown)) total)
              lines)))
    (let ((symbol (intern-soft name)))
      (cond ((and (eq kind 'call) (not (fboundp symbol)))
             (push (format "Note: %s is not currently defined as a function." name) lines))
            ((and (eq kind 'reference) (not (boundp symbol)) (not (special-variable-p symbol)))
             (push (format "Note: %s is not currently bound as a variable." name) lines))))
    (dolist (note (append (agent-q-xref--withheld-notes policy) (agent-q-xref--notes found)))
      (push note lines))
    (string-join (nreverse lines) "\n")))

(defun agent-q-xref--query (args key kind)
  "The name and hit limit ARGS ask for under KEY, of KIND; or end the call.
A missing name, or one that is not interned (no loaded code can then
refer to it), ends the call as a failure with `agent-q-tool-fail'."
  (let ((name (and (hash-table-p args) (gethash key args)))
        (limit (if (hash-table-p args)
                   (gethash "limit" args agent-q-xref-max-results)
                 agent-q-xref-max-results)))
    (cond ((not (and (stringp name) (> (length name) 0)))
           (agent-q-tool-fail "Invalid arguments: '%s' must be a non-empty symbol name" key))
          ;; `intern-soft' returns the symbol nil for "nil", which is interned.
          ((and (not (intern-soft name)) (not (equal name "nil")))
           (agent-q-tool-fail "Symbol %s not found: it is not interned, so no loaded code %s it."
                              name (if (eq kind 'call) "calls" "references")))
          (t (cons name (if (natnump limit) limit agent-q-xref-max-results))))))

(defun agent-q-xref--handle (args key kind)
  "Run a cross-reference tool on ARGS for the symbol under KEY, of KIND."
  (pcase-let ((`(,name . ,limit) (agent-q-xref--query args key kind)))
    (agent-q-xref--report name kind limit)))

;;;; Off Emacs's main thread

(defvar agent-q-xref--scans (make-hash-table)
  "Asynchronous scans under way: ticket -> function to call with the found plist.")

(defun agent-q-xref--drain-scans ()
  "Hand each finished asynchronous scan to the function waiting for it."
  (pcase-dolist (`(,ticket . ,found) (agent-q--core-xref-scan-finished))
    (let ((continuation (gethash ticket agent-q-xref--scans)))
      (remhash ticket agent-q-xref--scans)
      (when continuation
        (funcall continuation found)))))

(defun agent-q-xref--handle-async (callback args key kind)
  "Run a cross-reference tool on ARGS for the symbol under KEY, of KIND.
CALLBACK gets the result.  Started by the asynchronous executor, the
scan runs on worker threads and Emacs's thread is never held: the
result arrives through the module's channel.  Otherwise (the
synchronous executor) the scan runs at once, interruptible by
\[keyboard-quit], and CALLBACK is called before this returns."
  (condition-case err
      (pcase-let ((`(,name . ,limit) (agent-q-xref--query args key kind)))
        (if (not (and (fboundp 'agent-q-async-starting-p) (agent-q-async-starting-p)))
            (funcall callback (agent-q-xref--report name kind limit))
          (agent-q-xref--ensure-module)
          (unless (memq #'agent-q-xref--drain-scans agent-q--channel-drain-functions)
            (push #'agent-q-xref--drain-scans agent-q--channel-drain-functions))
          (let* ((libraries (agent-q-xref-library-sources))
                 (searched (car libraries))
                 (ticket (agent-q--core-xref-scan-start searched name kind limit
                                                        agent-q-xref-max-seconds)))
            (agent-q-when-cancelled
             (lambda ()
               (remhash ticket agent-q-xref--scans)
               (agent-q--core-xref-scan-cancel ticket)))
            (puthash ticket
                     (lambda (found)
                       (if (plist-member found :error)
                           (funcall callback (plist-get found :error) :failure)
                         (when (and agent-q-xref-background-index
                                    (not (plist-get found :interrupted)))
                           (agent-q--core-xref-index searched t))
                         (funcall callback
                                  (agent-q-xref--format
                                   name kind limit
                                   (append (list :missing (cdr libraries)) found)))))
                     agent-q-xref--scans))))
    (agent-q-tool-failure (funcall callback (cadr err) :failure))
    (error (funcall callback (format "Tool error: %s" (error-message-string err)) :failure))))

(defun agent-q-xref-who-calls-async (callback args)
  "Report to CALLBACK where the function named in ARGS is called.
The asynchronous handler of the who_calls tool: see
`agent-q-xref-who-calls-handler' and `agent-q-xref--handle-async'."
  (agent-q-xref--handle-async callback args "function" 'call))

(defun agent-q-xref-who-references-async (callback args)
  "Report to CALLBACK where the variable named in ARGS is referenced.
The asynchronous handler of the who_references tool: see
`agent-q-xref-who-references-handler' and `agent-q-xref--handle-async'."
  (agent-q-xref--handle-async callback args "variable" 'reference))

(defun agent-q-xref-who-calls-handler (args)
  "Return where the function named in ARGS is called.
This is the handler of the who_calls tool.  ARGS is a hash table
whose key \"function\" is the function's name.  The result lists
the call sites in the sources of the loaded libraries, one line
per call: FILE:LINE: in DEFINITION: LINE-TEXT."
  (agent-q-xref--handle args "function" 'call))

(defun agent-q-xref-who-references-handler (args)
  "Return where the variable named in ARGS is referenced.
This is the handler of the who_references tool.  ARGS is a hash
table whose key \"variable\" is the variable's name.  The result
lists the references in the sources of the loaded libraries, one
line per reference: FILE:LINE: in DEFINITION: LINE-TEXT."
  (agent-q-xref--handle args "variable" 'reference))

(provide 'agent-q-xref)

;;; agent-q-xref.el ends here
