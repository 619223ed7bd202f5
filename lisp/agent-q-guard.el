;;; agent-q-guard.el --- The read guard of agent-q's file and buffer tools  -*- lexical-binding: t -*-

;; Copyright (C) 2026 The agent-q authors

;; Author: The agent-q authors
;; Maintainer: The agent-q authors
;; Keywords: tools, files
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

;; Safe read tools must not become a way around approval.  The guards
;; of read_file, read_buffer, search_in_buffer and propose_file_edit
;; (`agent-q-builtins--read-file-guard' and friends, given to
;; `agent-q-define-tool' as :guard) say, before anything is read and
;; before any prompt, why a call needs the user's approval:
;;
;; - a file outside the allowed directories (after resolving ~, .. and
;;   symlinks): `agent-q-allowed-directories', or the workspace of the
;;   calls' client when their driver fixes one (`agent-q-call-workspace':
;;   an MCP client's roots, or the MCP server's fixed directories);
;; - one of Emacs's private files (`agent-q-sensitive-emacs-files',
;;   `agent-q-sensitive-file-variables': cookies, history, the MCP
;;   connection file, auth caches...), wherever the allowed directories
;;   are;
;; - a file whose name, or whose true name, or any backup or auto-save
;;   form of them, matches `agent-q-sensitive-file-patterns' (the
;;   decorations Emacs, vim and patch tools add -- name~, name.~N~,
;;   #name#, .#name, name.bak, .orig, .old, .save, .swp... -- are taken
;;   off and the patterns matched again, so a variant of any sensitive
;;   name is sensitive);
;; - a regular file with more than one hard link (another of its names
;;   may be sensitive, and nothing tells which);
;; - a remote file, or a relative name in a remote `default-directory',
;;   by its name alone: nothing here contacts another host;
;; - a hidden buffer (its name starts with a space: archive data,
;;   decrypted text, process output), and a buffer whose file (its base
;;   buffer's, a Dired buffer's directory) is guarded.
;;
;; Writes have a guard too (`agent-q-guard-write-verdict', for
;; write_file and propose_file_edit): it resolves the target once, pins
;; the deepest existing directory of its true name (device and inode,
;; reached without following a link: `agent-q--core-file-pin'), and
;; answers with the pinned name, which the prompt shows.  The write
;; then goes exactly there (`agent-q-guard-write-pinned',
;; `agent-q--core-file-write-pinned'): a directory of the path swapped
;; for a symlink meanwhile makes it fail, writing nothing.  A target
;; that governs agents or runs code on its own (an agent's settings or
;; instructions, .dir-locals.el, .git/hooks, Emacs's init and custom
;; files, agent-q's audit and connection files: see
;; `agent-q-protected-file-patterns' and `agent-q-guard-protected-reason')
;; is marked protected: only the user approves such a write, each time,
;; whatever the approval rules or an earlier "always" say.
;;
;; The executor asks the user when a guard gives a reason.  The guard
;; remembers what it checked (the file's true name and inode, or the
;; buffer), and the handler checks what it really opened against it
;; (`agent-q-guard-check-file', `agent-q-guard-check-buffer'): a file
;; swapped in between (a symlink flipped by another process) is
;; refused, never read.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'seq)
(require 'project)

(defvar agent-q-call-context)
(defvar agent-q-log-buffer-name)
(defvar agent-q-audit-file)
(defvar agent-q-mcp-connection-file)
(declare-function agent-q--core-file-pin "agent-q-core" (dir))
(declare-function agent-q--core-file-write-pinned "agent-q-core"
                  (dir dev ino rest bytes mode in-place))
(defvar agent-q-review--this-review)
(declare-function agent-q-review--review-file "agent-q-review" (review))

;;;; Options

(defcustom agent-q-allowed-directories nil
  "Directories that read_file, read_buffer and search_in_buffer read freely.
Reading a file outside these directories asks the user first, exactly
as a dangerous tool does.  nil means the default: the root of the
current project (see `project-current') and the directory of the file
the current buffer visits (none for a buffer that visits no file).
The root directory / and the home directory itself are never allowed,
here or in the default (they would allow reading nearly everything;
list the subdirectories to allow instead), and remote files always
ask.  Calls from MCP clients do not use this option: their allowed
directories are their own workspace (see `agent-q-call-workspace' and
`agent-q-mcp-allowed-directories')."
  :type '(choice (const :tag "Current project and visited file's directory" nil)
                 (repeat directory))
  :group 'agent-q)

(defcustom agent-q-sensitive-file-patterns
  '("/\\.authinfo\\(?:\\.gpg\\)?\\'"
    "/\\.netrc\\(?:\\.gpg\\)?\\'"
    "/\\.ssh/"
    "/\\.gnupg/"
    "/\\.password-store/"
    "/\\.env\\(?:rc\\)?\\(?:\\.[^/]*\\)?\\'"
    "\\.pem\\'"
    "\\.key\\'"
    "\\.p12\\'"
    "\\.pfx\\'"
    "\\.jks\\'"
    "\\.keystore\\'"
    "\\.ppk\\'"
    "\\.gpg\\'"
    "\\.kdbx\\'"
    "/id_\\(?:rsa\\|dsa\\|ecdsa\\|ed25519\\)[^/]*\\'"
    "/credentials\\(?:\\.[^/]*\\)?\\'"
    "/\\.aws/"
    "/\\.kube/"
    "/\\.config/gcloud/"
    "/\\.docker/config\\.json\\'"
    "/\\.pgpass\\'"
    "/\\.git-credentials\\'"
    "/\\.npmrc\\'"
    "/\\.pypirc\\'"
    "/\\.htpasswd\\'"
    "/\\.vault-token\\'")
  "Regexps matching files that the read tools never read without asking.
Each regexp is matched, ignoring case, against the absolute file name
as given (after expanding ~ and ..), against its true name (after
resolving symlinks), and against every undecorated form of either (see
`agent-q-guard-name-variants'): a pattern for .env also catches .env~,
#.env#, .env.~3~ and .env.swp.  A match on any of them asks the user
for approval."
  :type '(repeat regexp)
  :group 'agent-q)


(defcustom agent-q-sensitive-emacs-files
  '("\\`url/"                            ; cookies, URL history and cache
    "\\`agent-q-mcp[^/]*\\.json\\'"         ; the MCP server's URL and token
    "\\`server/"                         ; emacsclient's TCP authentication keys
    "\\`[^/]*history"                    ; savehist's history, ielm-history.eld...
    "\\`transient/history\\.el\\'"
    "\\`eshell/"                         ; eshell's history and lastdir
    "\\`recentf\\'"
    "\\`places\\'"
    "\\`bookmarks\\'"
    "\\`ido\\.last\\'"
    "\\`auto-save-list/"
    "\\`tramp\\'"                         ; tramp's persistency: hosts, users
    "\\`network-security\\.data\\'"
    "\\`request/"
    "\\`elpa/gnupg/"                     ; package signature keyring
    "\\`var/"                            ; no-littering's state
    "\\`[^/]*auth"                       ; .authinfo and auth caches kept here
    "\\.plstore\\'"                       ; OAuth tokens (oauth2, org-gcal...)
    "\\`\\.?session\\."
    "\\`\\.emacs\\.desktop")
  "Regexps matching the private files of `user-emacs-directory'.
Each is matched, ignoring case, against a file's name relative to
`user-emacs-directory' (as given, and as a true name) and against the
undecorated forms of that name (see `agent-q-guard-name-variants').
Emacs keeps there what its user never meant to share: cookies,
histories of what was typed and visited, the MCP server's token, auth
caches.  Reading one asks the user, even in an allowed directory."
  :type '(repeat regexp)
  :group 'agent-q)

(defcustom agent-q-sensitive-file-variables
  '(savehist-file recentf-save-file save-place-file bookmark-default-file
    eshell-history-file-name eshell-directory-name tramp-persistency-file-name
    url-configuration-directory url-cookie-file url-history-file
    request-storage-directory package-gnupghome-dir nsm-settings-file
    server-auth-dir auto-save-list-file-prefix agent-q-mcp-connection-file
    auth-sources)
  "Variables whose values name private files or directories of Emacs.
A file a bound variable names (a string, or any string of a list
value), and every file under a directory it names, is private
wherever it is, as `agent-q-sensitive-emacs-files' are in
`user-emacs-directory': reading it asks the user."
  :type '(repeat variable)
  :group 'agent-q)

(defcustom agent-q-protected-file-patterns
  '(;; Coding agents' settings, permissions, MCP servers and instructions.
    "/\\.claude/"
    "/\\.claude\\.json\\'"
    "/\\.mcp\\.json\\'"
    "/\\.gemini/"
    "/\\.codex/"
    "/\\.cursor/"
    "/\\.vscode/"
    "/\\.continue/"
    "/\\.aider[^/]*\\'"
    "/\\.clinerules\\'"
    "/\\.github/copilot-instructions\\.md\\'"
    "/\\(?:AGENTS\\|CLAUDE\\|GEMINI\\)\\.md\\'"
    ;; Run code on their own: Emacs's directory variables, git's hooks
    ;; and configuration, direnv, shells' startup files, ssh's config.
    "/\\.dir-locals\\(?:-2\\)?\\.el\\'"
    "/\\.git/\\(?:hooks/\\|config\\'\\)"
    "/\\.gitconfig\\'"
    "/\\.config/git/"
    "/\\.envrc\\'"
    "/\\.\\(?:bash\\|zsh\\)\\(?:rc\\|env\\|_profile\\|_login\\)\\'"
    "/\\.profile\\'"
    "/\\.ssh/"
    ;; Emacs's own startup files, wherever `user-emacs-directory' is.
    "/\\.emacs\\(?:\\.el\\)?\\'"
    "/\\.emacs\\.d/\\(?:early-\\)?init\\.elc?\\'"
    "/\\.config/emacs/\\(?:early-\\)?init\\.elc?\\'")
  "Regexps matching files that a tool never writes without asking the user.
These files govern what agents and programs may do, or run code on
their own: a coding agent's settings and instructions, Emacs's
directory-local variables, git's hooks and configuration, shell and
Emacs startup files.  A write to one of them is asked about every
time, whatever `agent-q-approval-rules' or an approval for the
session (\"a\") say, and the prompt says why; \"a\" then approves that
call only.  Matched like `agent-q-sensitive-file-patterns' (ignoring
case, against the name as given, its true name and every undecorated
form of either: see `agent-q-guard-name-variants').  Besides these,
Emacs's init, early-init and custom files (`user-init-file',
`custom-file', the init files in `user-emacs-directory'), and
agent-q's audit and MCP connection files (`agent-q-audit-file',
`agent-q-mcp-connection-file') are always protected."
  :type '(repeat regexp)
  :group 'agent-q)


;;;; Names and their variants

(defconst agent-q-guard--decorations
  '(("\\`\\(.+\\)\\.~[^/~]*~\\'" 1)          ; numbered backups, VC's name.~REV~
    ("\\`\\(.+\\)~\\'" 1)                     ; Emacs backups
    ("\\`#\\(.+\\)#\\'" 1)                    ; Emacs auto-save files
    ("\\`\\.#\\(.+\\)\\'" 1)                  ; Emacs lock files
    ("\\`\\(.+\\)\\.\\(?:bak\\|orig\\|old\\|save\\|backup\\|tmp\\|rej\\)\\'" 1)
    ("\\`\\(.+\\)\\.\\(?:dpkg-[a-z]+\\|rpm\\(?:save\\|new\\|orig\\)\\|ucf-[a-z]+\\)\\'" 1) ; package managers
    ("\\`\\(.+\\)\\.[0-9]+\\'" 1)               ; rotated copies (logrotate's name.1)
    ("\\`\\(.+\\),v\\'" 1)                     ; RCS files hold every revision
    ;; Compressed copies: read_file decompresses .gz, and a user can
    ;; read the others with one command.
    ("\\`\\(.+\\)\\.\\(?:gz\\|bz2\\|xz\\|zst\\|lz\\|lzma\\|z\\|br\\)\\'" 1)
    ("\\`\\(.+\\)\\.sw[a-p]\\'" 1)            ; vim swap files keep the dot...
    ("\\`\\.\\(.+\\)\\.sw[a-p]\\'" 1))        ; ...that hides the file they save
  "How backup, auto-save, lock and swap files decorate a file's name.
Each entry is (REGEXP GROUP): a base name matching REGEXP (ignoring
case) stands for the name in GROUP.")

(defconst agent-q-guard--max-variants 32
  "Most variants of one name that the guard looks at.")

(defun agent-q-guard-name-variants (file)
  "Return FILE and the names it may stand for, all absolute.
FILE is an absolute local file name.  The variants are FILE with any
backup, auto-save, lock or swap decoration taken off its last
component (repeatedly: #.env.bak# stands for .env.bak and .env); a
name Emacs made for a backup or auto-save directory by replacing each
/ with ! (see `backup-directory-alist'), read back as the path it
encodes; and FILE with each ! or : read as a directory separator, as
archive buffers name their members (keys.tar!.ssh/id_rsa in
`tar-mode', keys.zip:id_rsa in `archive-mode')."
  (let ((queue (list file)) (seen nil) (case-fold-search t))
    (while (and queue (< (length seen) agent-q-guard--max-variants))
      (let ((name (pop queue)))
        (unless (member name seen)
          (push name seen)
          (let ((dir (file-name-directory name))
                (base (file-name-nondirectory name)))
            (pcase-dolist (`(,re ,group) agent-q-guard--decorations)
              (when (string-match re base)
                (push (concat dir (match-string group base)) queue)))
            (when (string-match-p "\\`!" base)
              (push (replace-regexp-in-string "!" "/" base t t) queue))
            (dolist (separator '("!" ":"))
              (when (string-search separator name)
                (push (replace-regexp-in-string separator "/" name t t) queue)))))))
    (nreverse seen)))

(defun agent-q-guard-sensitive-match (&rest files)
  "Return (PATTERN . NAME) for the first sensitive pattern matching FILES.
NAME is the variant of one of FILES (see `agent-q-guard-name-variants')
that matched.  nil when none matches; nil elements of FILES are
ignored.  One of Emacs's private files (see
`agent-q-guard--private-match') matches too: PATTERN then describes it."
  (let ((case-fold-search t)
        (names (delete-dups (mapcan #'agent-q-guard-name-variants (delq nil files))))
        (any (agent-q-guard--any-pattern agent-q-sensitive-file-patterns)))
    (or (and (cl-some (lambda (name) (string-match-p any name)) names)
             ;; Rare: now say which pattern, and which name, matched.
             (catch 'found
               (dolist (re agent-q-sensitive-file-patterns)
                 (dolist (name names)
                   (when (string-match-p re name)
                     (throw 'found (cons re name)))))
               nil))
        (agent-q-guard--private-match names))))

(defvar agent-q-guard--any-pattern-cache nil
  "(PATTERNS . REGEXP): the last list given to `agent-q-guard--any-pattern'.")

(defun agent-q-guard--any-pattern (patterns)
  "One regexp matching what any of the regexps PATTERNS matches.
Every file a tool reads is matched against every pattern, several
names each: one search per name instead of one per pattern and name.
Made again whenever PATTERNS is another list or has changed."
  (if (equal (car agent-q-guard--any-pattern-cache) patterns)
      (cdr agent-q-guard--any-pattern-cache)
    (let ((any (if patterns
                   (mapconcat (lambda (re) (concat "\\(?:" re "\\)")) patterns "\\|")
                 ;; Matches nothing.
                 "\\`a\\`")))
      (setq agent-q-guard--any-pattern-cache (cons (copy-sequence patterns) any))
      any)))

(defvar agent-q-guard--private-places-cache nil
  "(TIME KEY . PLACES): the private places last computed, when, and from what.")

(defconst agent-q-guard--private-places-age 2.0
  "Seconds the private places are reused while the variables keep their values.
Their true names are looked up on disk; a link changed meanwhile is
seen at most this long after.")

(defun agent-q-guard--private-places ()
  "Return Emacs's private places: a list of (NAME . DIRECTORY-P), true names.
They are what the variables of `agent-q-sensitive-file-variables' name.
The answer is reused for `agent-q-guard--private-places-age' seconds
while those variables keep their values."
  (let ((key (cons agent-q-sensitive-file-variables
                   (mapcar (lambda (var) (and (boundp var) (symbol-value var)))
                           agent-q-sensitive-file-variables)))
        (cache agent-q-guard--private-places-cache))
    (if (and cache
             (< (float-time (time-since (car cache))) agent-q-guard--private-places-age)
             (equal (cadr cache) key))
        (cddr cache)
      (let ((places (agent-q-guard--private-places-1)))
        (setq agent-q-guard--private-places-cache
              (cons (current-time) (cons (copy-tree key) places)))
        places))))

(defun agent-q-guard--private-places-1 ()
  "The body of `agent-q-guard--private-places': look the places up."
  (let ((places nil))
    (dolist (var agent-q-sensitive-file-variables)
      (when (boundp var)
        (let ((value (symbol-value var)))
          (dolist (item (if (and (listp value) (proper-list-p value)) value (list value)))
            (when (and (stringp item) (not (string-empty-p item))
                       (not (file-remote-p item)))
              (let* ((expanded (expand-file-name item))
                     (directory-p (or (directory-name-p item) (file-directory-p expanded))))
                (dolist (name (delete-dups (list expanded (file-truename expanded))))
                  (push (cons (directory-file-name name) directory-p) places))))))))
    places))

(defvar agent-q-guard--emacs-directories-cache nil
  "(TIME DIRECTORY . ANSWER): the last answer of `agent-q-guard--emacs-directories'.")

(defun agent-q-guard--emacs-directories ()
  "Return `user-emacs-directory' as given and as a true name, local only.
Reused for `agent-q-guard--private-places-age' seconds while the
variable keeps its value."
  (let ((cache agent-q-guard--emacs-directories-cache))
    (if (and cache
             (< (float-time (time-since (car cache))) agent-q-guard--private-places-age)
             (equal (cadr cache) user-emacs-directory))
        (cddr cache)
      (let ((answer
             (and (stringp user-emacs-directory)
                  (not (file-remote-p user-emacs-directory))
                  (let ((dir (file-name-as-directory (expand-file-name user-emacs-directory))))
                    (delete-dups (list dir (file-name-as-directory (file-truename dir))))))))
        (setq agent-q-guard--emacs-directories-cache
              (cons (current-time) (cons user-emacs-directory answer)))
        answer))))

(defun agent-q-guard--private-match (names)
  "Return (DESCRIPTION . NAME) when one of NAMES is a private file of Emacs.
NAMES are absolute local file names, their variants included.  See
`agent-q-sensitive-emacs-files' and `agent-q-sensitive-file-variables'."
  (let ((case-fold-search t)
        (dirs (agent-q-guard--emacs-directories))
        (places (agent-q-guard--private-places)))
    (catch 'found
      (dolist (name names)
        (dolist (dir dirs)
          (when (string-prefix-p dir name)
            (let ((relative (substring name (length dir))))
              (dolist (re agent-q-sensitive-emacs-files)
                (when (string-match-p re relative)
                  (throw 'found
                         (cons (format "one of Emacs's private files in user-emacs-directory (%s matches %s in `agent-q-sensitive-emacs-files')"
                                       relative re)
                               name)))))))
        (pcase-dolist (`(,place . ,directory-p) places)
          (when (or (string= name place)
                    (and directory-p (string-prefix-p (file-name-as-directory place) name)))
            (throw 'found
                   (cons (format "one of Emacs's private files (%s, named by a variable of `agent-q-sensitive-file-variables')"
                                 place)
                         name)))))
      nil)))


;;;; The rules

(defun agent-q-builtins--too-broad-p (dir)
  "Return non-nil when DIR, a true directory name, is / or the home directory.
Allowing either would let the read tools read nearly everything."
  (or (equal dir (file-name-directory (directory-file-name dir)))
      (equal dir (file-name-as-directory (file-truename (expand-file-name "~"))))))

(defun agent-q-builtins--buffer-file (buffer)
  "Return the file BUFFER visits, or nil.
An indirect buffer shows its base buffer's text, so it is judged by
the file its base buffer visits."
  (buffer-file-name (or (buffer-base-buffer buffer) buffer)))

(defun agent-q-builtins--remote-p (path)
  "Return non-nil when PATH names a remote file; never connects.
A relative PATH is remote when `default-directory' is."
  (or (file-remote-p path)
      (and (not (file-name-absolute-p path))
           (file-remote-p default-directory))))

(defun agent-q-builtins--guarded-name (path)
  "Return the file name PATH to check with the read guard, or nil.
nil when PATH is not a non-empty string.  A local PATH is expanded
\(~, .., relative to `default-directory'); a remote one is returned as
given, since expanding it may connect to the host before the user
approved."
  (and (stringp path) (not (string-empty-p path))
       (if (agent-q-builtins--remote-p path)
           path
         (expand-file-name path))))

(defvar agent-q-call-workspace nil
  "The workspace of the tool calls being run, when their driver fixes one.
nil means the read tools' default (see
`agent-q-builtins--allowed-directories').  Otherwise a plist
\(:directories DIRS :source TEXT): DIRS are the only allowed
directories of these calls, whatever `agent-q-allowed-directories'
says and whichever buffer is current, and TEXT says where they come
from (\"the MCP roots of CLIENT\"), for the guard's reasons.  The MCP
server binds it to the calling client's roots or to the server's fixed
directories (see `agent-q-mcp-allowed-directories').")

(defun agent-q-builtins--allowed-directories ()
  "Return the directories the read tools read without asking, as true names.
These are the workspace of the calls being run when one is fixed
\(`agent-q-call-workspace': an MCP client's), else
`agent-q-allowed-directories', or by default the current
project's root and the directory of the file the current buffer
visits.  Remote directories, / and the home directory itself are never
included: remote files always ask, and / or ~ would allow everything."
  (let ((dirs (cond
               (agent-q-call-workspace (plist-get agent-q-call-workspace :directories))
               (agent-q-allowed-directories)
               (t
                  (list (unless (file-remote-p default-directory)
                          (let ((project (ignore-errors (project-current nil))))
                            (and project (project-root project))))
                        (let ((file (agent-q-builtins--buffer-file (current-buffer))))
                          (and file (not (file-remote-p file))
                               (file-name-directory file))))))))
    (seq-remove #'agent-q-builtins--too-broad-p
                (mapcar (lambda (d) (file-name-as-directory (file-truename (expand-file-name d))))
                        (seq-filter (lambda (d) (and (stringp d) (not (file-remote-p d))))
                                    dirs)))))

(defun agent-q-builtins--guard-reason (file &optional true nlink)
  "Return why reading FILE needs approval, or nil when it does not.
FILE is an absolute, expanded file name, or a remote one as given.
TRUE is its true name when already known (from the descriptor of the
opened file); otherwise links are resolved here.  NLINK is its number
of hard links, when known.  A remote FILE needs approval at once:
resolving it would connect to the remote host before the user was
asked."
  (if (agent-q-builtins--remote-p file)
      (format "%s is a remote file (reading it connects to another host)" file)
    (let* ((true (or true (file-truename file)))
           (match (agent-q-guard-sensitive-match file true))
           (dirs (agent-q-builtins--allowed-directories)))
      (cond
       ((agent-q-guard--audit-file-p true)
        (format "%s is agent-q's audit file: it holds the arguments and results of earlier calls, those the user approved reading included"
                true))
       ((and match (string-prefix-p "one of Emacs's private files" (car match)))
        (format "%s is %s: Emacs keeps there what was never meant to be shared (cookies, history, tokens, auth caches)%s"
                true (car match)
                (if (member (cdr match) (list file true)) ""
                  (format " (as %s, which it is a backup, auto-save or variant of)" (cdr match)))))
       (match
        (if (member (cdr match) (list file true))
            (format "%s matches the sensitive file pattern %s" true (car match))
          (format "%s matches the sensitive file pattern %s (as %s, which it is a backup, auto-save or variant of)"
                  true (car match) (cdr match))))
       ((not (seq-some (lambda (dir) (string-prefix-p dir (file-name-as-directory true))) dirs))
        (format "%s is outside the allowed directories (%s%s)" true
                (if dirs (string-join dirs ", ") "none")
                (let ((source (plist-get agent-q-call-workspace :source)))
                  (if source (format ": %s" source) ""))))
       ((and (integerp nlink) (> nlink 1))
        (format "%s has %d hard links: another name of the same file may be sensitive (a link to ~/.authinfo, say), and nothing tells which"
                true nlink))))))

(defun agent-q-guard--audit-file-p (true)
  "Return non-nil when TRUE, a true file name, is `agent-q-audit-file'."
  (and (bound-and-true-p agent-q-audit-file)
       (not (file-remote-p agent-q-audit-file))
       (equal true (file-truename (expand-file-name agent-q-audit-file)))))

(defun agent-q-guard--file-identity (file)
  "Return (TRUE DEV INO NLINK) for the local FILE, from `file-attributes'.
TRUE is its true name; DEV, INO and NLINK are nil when it does not
exist.  Only a regular file's link count is kept: a directory always
has several."
  (let* ((true (file-truename file))
         (attrs (file-attributes true)))
    (list true
          (and attrs (file-attribute-device-number attrs))
          (and attrs (file-attribute-inode-number attrs))
          (and attrs (null (file-attribute-type attrs))
               (file-attribute-link-number attrs)))))

(defun agent-q-guard--hidden-buffer-p (buffer)
  "Return non-nil when BUFFER, or its base buffer, is hidden.
Hidden buffers (names starting with a space) hold what Emacs keeps out
of sight: archive data, decrypted text, process output."
  (seq-some (lambda (b) (and b (string-prefix-p " " (buffer-name b))))
            (list buffer (buffer-base-buffer buffer))))

(defun agent-q-guard-buffer-files (buffer)
  "Return the files on display in BUFFER, by which the guard and rules judge it.
The file it (or its base buffer, for an indirect buffer) visits -- by
the variables `buffer-file-name' and `buffer-file-truename', which can
differ when the first was set by hand; an archive member's buffer
visits ARCHIVE!MEMBER or ARCHIVE:MEMBER -- a Dired buffer's directory,
and for the review of propose_file_edit, the file it reviews."
  (let ((base (or (buffer-base-buffer buffer) buffer)))
    (with-current-buffer base
      (delq nil (list buffer-file-name
                      (and buffer-file-truename
                           (not (equal buffer-file-truename buffer-file-name))
                           buffer-file-truename)
                      (and (derived-mode-p 'dired-mode) default-directory)
                      ;; A review shows parts of the file it reviews.
                      (and (bound-and-true-p agent-q-review--this-review)
                           (fboundp 'agent-q-review--review-file)
                           (agent-q-review--review-file agent-q-review--this-review)))))))

(defun agent-q-guard-buffer-private-p (buffer)
  "Non-nil when BUFFER is hidden or agent-q's log.
The guard always asks about reading those."
  (or (agent-q-guard--hidden-buffer-p buffer)
      (and (bound-and-true-p agent-q-log-buffer-name)
           (equal (buffer-name buffer) agent-q-log-buffer-name))))

(defun agent-q-guard-buffer-reason (buffer)
  "Return why reading BUFFER needs approval, or nil when it does not.
A hidden buffer always needs it.  A buffer is otherwise judged by the
file it shows: the one it (or its base buffer, for an indirect buffer)
visits -- by the variables `buffer-file-name' and `buffer-file-truename', which
can differ when the first was set by hand -- or, for a Dired buffer,
its directory, and for the review of propose_file_edit, the file it
reviews.  agent-q's log buffer (`agent-q-log-buffer-name') always needs
it: it holds earlier calls' results.  A buffer that shows no file is
read freely."
  (let ((files (agent-q-guard-buffer-files buffer)))
    (cond
     ((agent-q-guard--hidden-buffer-p buffer)
      (format "buffer %S is hidden (its name starts with a space): Emacs keeps internal data such as archive contents, decrypted text or process output in such buffers"
              (buffer-name buffer)))
     ((and (bound-and-true-p agent-q-log-buffer-name)
           (equal (buffer-name buffer) agent-q-log-buffer-name))
      (format "buffer %S is agent-q's log: it holds the arguments and results of earlier calls, those the user approved reading included"
              (buffer-name buffer)))
     (t
      (seq-some (lambda (file)
                  (let ((reason (agent-q-builtins--guard-reason
                                 (if (file-remote-p file) file (expand-file-name file)))))
                    (and reason (format "buffer %S shows a file: %s" (buffer-name buffer) reason))))
                files)))))


;;;; What the guard checked, and what the handler opened

(defvar agent-q-guard--verdicts (make-hash-table :test #'equal)
  "What the guard last found for each name: KEY -> (REASON . IDENTITY).
KEY is an expanded file name or (buffer NAME); IDENTITY is what the
name designated then: (TRUE DEV INO NLINK) for a file, the buffer
object for a buffer.  The handler that runs after the guard compares
what it really opened with it.")

(defconst agent-q-guard--max-verdicts 1000
  "Most verdicts kept; beyond, the table is emptied.
A missing verdict fails closed: the handler then refuses what needs
approval unless the call's reason names it.")

(defun agent-q-guard--remember (key reason identity)
  "Remember that KEY designated IDENTITY and needed approval for REASON.
Return REASON."
  (when (>= (hash-table-count agent-q-guard--verdicts) agent-q-guard--max-verdicts)
    (clrhash agent-q-guard--verdicts))
  (puthash key (cons reason identity) agent-q-guard--verdicts)
  reason)

(defvar agent-q-guard--run nil
  "A token for the one call the executor is starting, or nil.
`agent-q--execute-async' binds it to a fresh cons around the start of
each call, in which the module runs the call's guard and, when nothing
needs asking, its handler.")

(defvar agent-q-guard--cleared nil
  "(RUN KEY IDENTITY): the guard found nothing to ask about KEY, in RUN.
RUN is `agent-q-guard--run' then, IDENTITY what KEY designated.")

(defun agent-q-guard-file-verdict (file)
  "Return why reading FILE needs approval, or nil; remember what was checked.
FILE is what `agent-q-builtins--guarded-name' returns.  Never opens
FILE (`file-attributes' only) and never touches a remote host."
  (if (agent-q-builtins--remote-p file)
      (agent-q-guard--remember file (agent-q-builtins--guard-reason file) nil)
    (let* ((identity (agent-q-guard--file-identity file))
           (reason (agent-q-builtins--guard-reason file (car identity) (nth 3 identity))))
      (setq agent-q-guard--cleared
            (and (null reason) agent-q-guard--run (list agent-q-guard--run file identity)))
      (agent-q-guard--remember file reason identity))))

(defun agent-q-guard--cleared-p (key identity)
  "Non-nil when the guard has just cleared KEY as the very file IDENTITY.
That is: in the call being started (`agent-q-guard--run'), without
asking, the guard found no reason to ask about KEY, which designated
the same true name, device, inode and link count as IDENTITY does now
\(what the handler opened).  The reason, computed again from the same
name, true name and link count within the same call, would be the
same, so the handler need not compute it again."
  (let ((cleared agent-q-guard--cleared))
    (and agent-q-guard--run
         (eq (car cleared) agent-q-guard--run)
         (not (plist-get agent-q-call-context :approved))
         (equal (nth 1 cleared) key)
         (nth 1 identity) (nth 2 identity)
         (equal (nth 2 cleared) identity))))

(defun agent-q-guard-buffer-verdict (name)
  "Return why reading the buffer NAME needs approval, or nil; remember it.
nil when no such buffer is live (the handler reports it)."
  (let ((buffer (and (stringp name) (get-buffer name))))
    (when (buffer-live-p buffer)
      (agent-q-guard--remember (list 'buffer name)
                               (agent-q-guard-buffer-reason buffer) buffer))))

(defun agent-q-guard--same-p (a b)
  "Return non-nil when identities A and B designate the same file or buffer.
Files are the same when their true names are, and their device and
inode numbers too when both are known."
  (if (or (bufferp a) (bufferp b))
      (eq a b)
    (and (consp a) (consp b)
         (equal (car a) (car b))
         (or (null (nth 2 a)) (null (nth 2 b))
             (and (equal (nth 1 a) (nth 1 b)) (equal (nth 2 a) (nth 2 b)))))))

(defun agent-q-guard--verify (key reason identity)
  "Return nil when the handler may read IDENTITY for KEY, else why not.
REASON is why IDENTITY, as opened now, needs approval (nil: it does
not).  The call's approval (`agent-q-call-context') covers the file or
buffer the guard checked for KEY, and only that one: something that
needs approval and was not approved, or that is not what the user
approved, is refused."
  (let* ((approved (plist-get agent-q-call-context :approved))
         (asked (plist-get agent-q-call-context :reason))
         (verdict (gethash key agent-q-guard--verdicts 'none))
         (checked (and (consp verdict) (car verdict))))
    (cond
     ((null reason)
      (and approved checked (not (agent-q-guard--same-p (cdr verdict) identity))
           "it is no longer the one the user approved reading"))
     ((not approved)
      (format "it now needs the user's approval, which was not asked: %s" reason))
     ((and checked (agent-q-guard--same-p (cdr verdict) identity)) nil)
     ((and (eq verdict 'none) (stringp asked) (string-suffix-p reason asked)) nil)
     (t (format "it is not the one the user approved reading: %s" reason)))))

(defun agent-q-guard-check-file (key info)
  "Return nil when the opened file described by INFO may be read for KEY.
Otherwise return a message: the file changed while it was being read.
KEY is the name the guard checked (an expanded file name); INFO is
what the descriptor says, from `agent-q--core-file-info'."
  (let* ((true (plist-get info :true))
         (identity (list true (plist-get info :dev) (plist-get info :ino)
                         (plist-get info :nlink)))
         (why (cond
               ((not (stringp true))
                "the system cannot say which file was opened (was it deleted?)")
               ((agent-q-guard--cleared-p key identity) nil)
               (t
                (agent-q-guard--verify
                 key
                 ;; A sensitive name given is a reason even when the true name is not.
                 (agent-q-builtins--guard-reason key true (plist-get info :nlink))
                 identity)))))
    (and why (format "%s changed while it was being read (another process replaced it or a link in its path): %s. Nothing was read; call the tool again."
                     key why))))

(defun agent-q-guard-check-buffer (name buffer)
  "Return nil when BUFFER, found under NAME, may be read; else why not."
  (let ((why (agent-q-guard--verify (list 'buffer name)
                                    (agent-q-guard-buffer-reason buffer) buffer)))
    (and why (format "Buffer %s changed since it was checked: %s. Nothing was read; call the tool again."
                     name why))))


;;;; Writes: protected files, and the pinned target

(defun agent-q-guard--startup-files ()
  "Return (FILE . WHAT) for the files Emacs and agent-q act on by themselves.
FILE is an absolute local name; WHAT says what it is."
  (let ((dir (and (stringp user-emacs-directory) user-emacs-directory))
        (files nil))
    (when dir
      (dolist (name '("init.el" "init.elc" "early-init.el" "early-init.elc"))
        (push (cons (expand-file-name name dir)
                    (format "Emacs's %s file in `user-emacs-directory' (it runs at startup)"
                            (file-name-sans-extension name)))
              files)))
    (when (stringp user-init-file)
      (push (cons user-init-file "Emacs's init file (`user-init-file': it runs at startup)") files))
    (when (stringp custom-file)
      (push (cons custom-file "Emacs's custom file (`custom-file': it is loaded at startup, and agent-q's approval rules are saved there)")
            files))
    (when (bound-and-true-p agent-q-audit-file)
      (push (cons agent-q-audit-file "agent-q's audit file (`agent-q-audit-file')") files))
    (when (bound-and-true-p agent-q-mcp-connection-file)
      (push (cons agent-q-mcp-connection-file
                  "agent-q's MCP connection file (`agent-q-mcp-connection-file': it holds the server's token)")
            files))
    (delq nil (mapcar (lambda (entry)
                        (let ((file (car entry)))
                          (and (stringp file) (not (file-remote-p file))
                               (cons (expand-file-name file) (cdr entry)))))
                      files))))

(defun agent-q-guard-protected-reason (&rest files)
  "Return why writing FILES must always be asked about, or nil.
FILES are absolute local names (the name given, its true name...; nil
elements are ignored).  Each is matched, with its variants (see
`agent-q-guard-name-variants'), against `agent-q-protected-file-patterns'
ignoring case, and compared with Emacs's and agent-q's own files (see
`agent-q-guard--startup-files', as given and as true names)."
  (let* ((files (delete-dups (delq nil files)))
         (names (delete-dups (mapcan #'agent-q-guard-name-variants (copy-sequence files))))
         (case-fold-search t)
         (tail "; only the user may approve writing it, each time: no approval rule or earlier \"always\" covers it"))
    (or
     (catch 'found
       (dolist (entry (agent-q-guard--startup-files))
         (let ((own (list (car entry) (ignore-errors (file-truename (car entry))))))
           (dolist (name names)
             (when (member name own)
               (throw 'found (format "%s is %s%s" (car files) (cdr entry) tail))))))
       nil)
     (catch 'found
       (dolist (re agent-q-protected-file-patterns)
         (dolist (name names)
           (when (string-match-p re name)
             (throw 'found
                    (format "%s governs what agents or programs may do, or runs code on its own (it matches the protected file pattern %s%s)%s"
                            (car (last files)) re
                            (if (member name files) "" (format " as %s" name))
                            tail)))))
       nil))))

(defun agent-q-guard--pin-target (file)
  "Resolve the local FILE once and pin it: return (TRUE ANCHOR DEV INO REST).
TRUE is FILE's true name; ANCHOR the deepest directory of TRUE that
exists, pinned as DEV and INO (reached without following a link); REST
the names below ANCHOR, the missing directories and last the file's."
  (let* ((true (file-truename file))
         (anchor (file-name-directory true)))
    (while (and (not (file-directory-p anchor))
                (not (equal anchor (file-name-directory (directory-file-name anchor)))))
      (setq anchor (file-name-directory (directory-file-name anchor))))
    (let ((pin (agent-q--core-file-pin anchor)))
      (list true anchor (nth 0 pin) (nth 1 pin)
            (split-string (substring true (length anchor)) "/" t)))))

(defun agent-q-guard-write-verdict (file &optional reason)
  "The guard's answer about writing FILE: (:reason R :protected P :file TRUE).
FILE is what `agent-q-builtins--guarded-name' returns.  A local FILE is
resolved once and pinned (see `agent-q-guard--pin-target'), and the
pin remembered under its true name for `agent-q-guard-write-pinned';
TRUE is that name, the one the prompt shows.  P is non-nil when the
name given or the true name is protected
\(`agent-q-guard-protected-reason'), and R then says why, after
REASON (a reason the caller already has, or nil); otherwise R is
REASON.  A remote FILE is
neither resolved nor pinned (that would contact the host): it is
answered by its name alone."
  (if (agent-q-builtins--remote-p file)
      (let ((protected (agent-q-guard-protected-reason file)))
        (list :reason (or protected reason) :protected (and protected t) :file nil))
    (let* ((target (agent-q-guard--pin-target file))
           (true (car target))
           (protected (agent-q-guard-protected-reason file true)))
      (agent-q-guard--remember (list 'write true) protected (cdr target))
      (list :reason (if (and protected reason) (concat reason "; and " protected)
                      (or protected reason))
            :protected (and protected t) :file true))))

(defun agent-q-guard-write-pinned (file bytes mode &optional in-place)
  "Write BYTES to the local FILE exactly where the guard pinned it.
FILE is the expanded name the call gives.  During a tool call whose
guard pinned a file (`agent-q-call-context''s :file), that pin is
used, and FILE must be the name it was pinned for; otherwise FILE is
resolved and pinned now.  MODE and IN-PLACE are as for
`agent-q--core-file-write-pinned', whose plist this returns.  Signal
`agent-q-file-error' (KIND `changed') when what was pinned is not
there any more: nothing is written then."
  (let* ((pinned (plist-get agent-q-call-context :file))
         (verdict (and pinned (gethash (list 'write pinned) agent-q-guard--verdicts)))
         (target (cond
                  ((null pinned) (agent-q-guard--pin-target file))
                  ((null verdict)
                   (signal 'agent-q-file-error
                           (list (format "%s was checked as %s, but that check is no longer known; nothing was written. Call the tool again."
                                         file pinned)
                                 'changed)))
                  (t (cons pinned (cdr verdict))))))
    (pcase-let ((`(,_true ,anchor ,dev ,ino ,rest) target))
      (agent-q--core-file-write-pinned anchor dev ino rest bytes mode in-place))))

(defun agent-q-guard-write-changed (true &optional name)
  "Return nil when TRUE, a file a write guard pinned, is still what was pinned.
Otherwise return why not: its pinned directory was replaced or is
reached through a link now, NAME (the name Emacs will write, when
given) no longer leads to TRUE, or the check is no longer known.  For
a write made later by Emacs itself (propose_file_edit's apply and
save), just before it."
  (let ((verdict (gethash (list 'write true) agent-q-guard--verdicts)))
    (if (null verdict)
        (format "the check of %s is no longer known" true)
      (pcase-let ((`(,anchor ,dev ,ino ,_rest) (cdr verdict)))
        (condition-case err
            (let ((pin (agent-q--core-file-pin anchor))
                  (now (file-truename (or name true))))
              (cond ((not (equal pin (list dev ino)))
                     (format "%s was replaced by another directory" anchor))
                    ((not (equal now true))
                     (format "%s now leads to %s" (or name true) now))))
          (agent-q-file-error (format "%s" (cadr err))))))))

(provide 'agent-q-guard)

;;; agent-q-guard.el ends here
