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

;; Safe read tools must not become a way around approval: read_file,
;; read_buffer and search_in_buffer resolve the file they are given
;; (~, .., symlinks) and ask the user before reading a file outside
;; `agent-q-allowed-directories' or one matching
;; `agent-q-sensitive-file-patterns'.  Nothing is read before the user
;; approved.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'seq)
(require 'project)

(declare-function agent-q-request-approval "agent-q"
                  (tool-name args-plist reason &optional registry))
(declare-function agent-q--error-message "agent-q" (condition))

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
    "/\\.env\\(?:\\.[^/]*\\)?\\'"
    "\\.pem\\'"
    "\\.key\\'"
    "\\.p12\\'"
    "\\.pfx\\'"
    "\\.gpg\\'"
    "\\.kdbx\\'"
    "/id_\\(?:rsa\\|dsa\\|ecdsa\\|ed25519\\)[^/]*\\'"
    "/\\.aws/credentials\\'"
    "/\\.docker/config\\.json\\'"
    "/\\.kube/config\\'"
    "/\\.pgpass\\'"
    "/\\.git-credentials\\'"
    "/\\.npmrc\\'"
    "/\\.pypirc\\'")
  "Regexps matching files that the read tools never read without asking.
Each regexp is matched, ignoring case, against the absolute file name
as given (after expanding ~ and ..) and against its true name (after
resolving symlinks); a match on either asks the user for approval."
  :type '(repeat regexp)
  :group 'agent-q)


;;;; The path guard for the read tools

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
                          (and file (file-name-directory file)))))))
    (seq-remove #'agent-q-builtins--too-broad-p
                (mapcar (lambda (d) (file-name-as-directory (file-truename (expand-file-name d))))
                        (seq-filter (lambda (d) (and (stringp d) (not (file-remote-p d))))
                                    dirs)))))

(defun agent-q-builtins--sensitive-pattern (&rest names)
  "Return the first sensitive pattern matching one of NAMES, or nil."
  (let ((case-fold-search t))
    (seq-find (lambda (re)
                (seq-some (lambda (name) (and name (string-match-p re name))) names))
              agent-q-sensitive-file-patterns)))

(defun agent-q-builtins--guard-reason (file)
  "Return why reading FILE needs approval, or nil when it does not.
FILE is an absolute, expanded file name, or a remote one as given.
A remote FILE needs approval at once: resolving it would connect to
the remote host before the user was asked."
  (if (agent-q-builtins--remote-p file)
      (format "%s is a remote file (reading it connects to another host)" file)
    (let* ((true (file-truename file))
           (pattern (agent-q-builtins--sensitive-pattern file true))
           (dirs (agent-q-builtins--allowed-directories)))
      (cond
       (pattern (format "%s matches the sensitive file pattern %s" true pattern))
       ((not (seq-some (lambda (dir) (string-prefix-p dir true)) dirs))
        (format "%s is outside the allowed directories (%s)" true
                (if dirs (string-join dirs ", ") "none")))))))

(defun agent-q-builtins--check-file (tool file args-plist &optional purpose)
  "Check that TOOL may read FILE; ask the user when it needs approval.
ARGS-PLIST is the call's arguments, shown to the user.  PURPOSE, when
non-nil, is a sentence put before the reason, saying why TOOL reads
FILE.  Return (:ok ARGS-PLIST), with the approved (possibly modified)
arguments, or (:denied TEXT) with the refusal to return to the model."
  (let ((reason (agent-q-builtins--guard-reason file)))
    (if (null reason)
        (list :ok args-plist)
      (let* ((reason (if purpose (concat purpose reason) reason))
             (answer (if (fboundp 'agent-q-request-approval)
                         (condition-case err
                             (agent-q-request-approval tool args-plist reason)
                           (error (list :denied (format "approval failed: %s"
                                                        (agent-q--error-message err)))))
                       (list :denied "approval is unavailable (agent-q is not loaded)"))))
        (if (eq (car-safe answer) :approved)
            (list :ok (or (cadr answer) args-plist))
          (list :denied
                (format "Refused: %s, so reading it needs the user's approval, which was not given (%s)."
                        reason
                        (or (and (consp answer) (stringp (cadr answer)) (cadr answer))
                            "denied"))))))))

(defun agent-q-builtins--args-plist (args names)
  "Return the arguments NAMES present in hash table ARGS as a keyword plist."
  (let ((plist nil))
    (dolist (name names)
      (let ((v (gethash name args 'agent-q-builtins--absent)))
        (unless (eq v 'agent-q-builtins--absent)
          (setq plist (append plist (list (intern (concat ":" name)) v))))))
    plist))

(defun agent-q-builtins--plist-args (plist)
  "Return a hash table of arguments from keyword PLIST."
  (let ((table (make-hash-table :test #'equal)))
    (while plist
      (puthash (substring (symbol-name (car plist)) 1) (cadr plist) table)
      (setq plist (cddr plist)))
    table))


(provide 'agent-q-guard)

;;; agent-q-guard.el ends here
