;;; agent-q-guard.el --- The read guard of agent-q's file and buffer tools  -*- lexical-binding: t -*-

;; Copyright (C) 2026 The agent-q authors

;; Author: The agent-q authors
;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1"))
;; Keywords: tools, files
;; URL: https://example.invalid/agent-q

;; This file is not part of GNU Emacs.

;; This program is free software; you can redistribute it and/or modify
;; it under the terms of the GNU General Public License as published by
;; the Free Software Foundation, either version 3 of the License, or
;; (at your option) any later version.

;;; Commentary:

;; Safe read tools must not become a way around approval.  The guards
;; of read_file, read_buffer, search_in_buffer and propose_file_edit
;; (`agent-q-builtins--read-file-guard' and friends, given to
;; `agent-q-define-tool' as :guard) say, before anything is read and
;; before any prompt, why a call needs the user's approval:
;;
;; - a file outside `agent-q-allowed-directories' (after resolving ~, ..
;;   and symlinks);
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
(defvar agent-q-tools--this-review)
(declare-function agent-q-tools--review-file "agent-q-tools" (review))

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
ask."
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
ignored."
  (let ((case-fold-search t)
        (names (delete-dups (mapcan #'agent-q-guard-name-variants (delq nil files)))))
    (catch 'found
      (dolist (re agent-q-sensitive-file-patterns)
        (dolist (name names)
          (when (string-match-p re name)
            (throw 'found (cons re name)))))
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

(defun agent-q-builtins--allowed-directories ()
  "Return the directories the read tools read without asking, as true names.
These are `agent-q-allowed-directories', or by default the current
project's root and the directory of the file the current buffer
visits.  Remote directories, / and the home directory itself are never
included: remote files always ask, and / or ~ would allow everything."
  (let ((dirs (or agent-q-allowed-directories
                  (list (unless (file-remote-p default-directory)
                          (let ((project (ignore-errors (project-current nil))))
                            (and project (project-root project))))
                        (let ((file (agent-q-builtins--buffer-file (current-buffer))))
                          (and file (not (file-remote-p file))
                               (file-name-directory file)))))))
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
       (match
        (if (member (cdr match) (list file true))
            (format "%s matches the sensitive file pattern %s" true (car match))
          (format "%s matches the sensitive file pattern %s (as %s, which it is a backup, auto-save or variant of)"
                  true (car match) (cdr match))))
       ((not (seq-some (lambda (dir) (string-prefix-p dir (file-name-as-directory true))) dirs))
        (format "%s is outside the allowed directories (%s)" true
                (if dirs (string-join dirs ", ") "none")))
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
                      (and (bound-and-true-p agent-q-tools--this-review)
                           (fboundp 'agent-q-tools--review-file)
                           (agent-q-tools--review-file agent-q-tools--this-review)))))))

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

(defun agent-q-guard-file-verdict (file)
  "Return why reading FILE needs approval, or nil; remember what was checked.
FILE is what `agent-q-builtins--guarded-name' returns.  Never opens
FILE (`file-attributes' only) and never touches a remote host."
  (if (agent-q-builtins--remote-p file)
      (agent-q-guard--remember file (agent-q-builtins--guard-reason file) nil)
    (let ((identity (agent-q-guard--file-identity file)))
      (agent-q-guard--remember
       file (agent-q-builtins--guard-reason file (car identity) (nth 3 identity))
       identity))))

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
         (why (if (not (stringp true))
                  "the system cannot say which file was opened (was it deleted?)"
                (agent-q-guard--verify
                 key
                 (let ((reason (agent-q-builtins--guard-reason key true (plist-get info :nlink))))
                   ;; A sensitive name given is a reason even when the true name is not.
                   reason)
                 (list true (plist-get info :dev) (plist-get info :ino)
                       (plist-get info :nlink))))))
    (and why (format "%s changed while it was being read (another process replaced it or a link in its path): %s. Nothing was read; call the tool again."
                     key why))))

(defun agent-q-guard-check-buffer (name buffer)
  "Return nil when BUFFER, found under NAME, may be read; else why not."
  (let ((why (agent-q-guard--verify (list 'buffer name)
                                    (agent-q-guard-buffer-reason buffer) buffer)))
    (and why (format "Buffer %s changed since it was checked: %s. Nothing was read; call the tool again."
                     name why))))


(provide 'agent-q-guard)

;;; agent-q-guard.el ends here
