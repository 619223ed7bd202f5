;;; agent-q-files-test.el --- The file and buffer tools, through the executor  -*- lexical-binding: t -*-

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

;; read_file, read_buffer, search_in_buffer, write_file and
;; propose_file_edit as the model calls them: through
;; `agent-q-execute-tool-calls', with their guards, the approval
;; function, real files, links, FIFOs and buffers.  Covers the read
;; guard (what asks, what a denial returns), reading through one checked
;; descriptor (a symlink flipped by another process during thousands of
;; reads), the sensitive names and their backup forms, edited
;; arguments, the siblings of the guard (hard links, hidden buffers,
;; archive members, encrypted files), hangs on FIFOs (in a child Emacs,
;; so a hang fails the test instead of the run) and truthful results.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'subr-x)
(require 'agent-q)
(require 'tar-mode)

(defvar agent-q-review--review-driver)
(defvar savehist-file)
(declare-function agent-q-review-cancel "agent-q-review" ())
(declare-function agent-q--core-file-open "agent-q-core" (path))
(declare-function agent-q--core-file-load "agent-q-core" (handle max gunzip))
(declare-function agent-q--core-file-page "agent-q-core"
                  (handle offset limit column max-chars))
(declare-function agent-q--core-file-close "agent-q-core" (handle))

;;;; Helpers

(defvar agent-q-files-test--asks nil
  "The approval requests of the current test: (TOOL ARGS REASON ID), newest first.")

(defun agent-q-files-test--registry ()
  "A fresh registry holding the built-in tools."
  (let ((registry (agent-q-make-registry)))
    (agent-q-register-builtin-tools registry)
    registry))

(defun agent-q-files-test--approver (answer)
  "An approval function that records each request and returns ANSWER.
ANSWER may be a function of (TOOL ARGS REASON) giving the answer."
  (lambda (tool args)
    (let ((reason (plist-get agent-q-approval-context :reason)))
      (push (list tool args reason (plist-get agent-q-approval-context :id))
            agent-q-files-test--asks)
      (if (functionp answer) (funcall answer tool args reason) answer))))

(defun agent-q-files-test--call (registry tool args &optional answer id)
  "Call TOOL with ARGS in REGISTRY; the user answers ANSWER (default :denied).
ID is the call's id.  Return the result plist."
  (let ((agent-q-approval-function (agent-q-files-test--approver (or answer :denied)))
        (agent-q-audit-file nil))
    (car (agent-q-execute-tool-calls
          (list (list :id (or id "t") :name tool :arguments args))
          registry))))

(defun agent-q-files-test--content (result)
  "The content of RESULT."
  (plist-get result :content))

(defun agent-q-files-test--status (result)
  "The status of RESULT, a string: success, failure, denied or cancelled."
  (plist-get (plist-get result :metadata) :status))

(defmacro agent-q-files-test--with-dir (var &rest body)
  "Run BODY with VAR bound to a fresh temporary directory, the only allowed one.
It is also `default-directory'.  Buffers visiting files in it are
killed and it is deleted afterwards; `agent-q-files-test--asks' starts
empty."
  (declare (indent 1) (debug (symbolp body)))
  `(let* ((,var (file-name-as-directory (file-truename (make-temp-file "agent-q-files" t))))
          (default-directory ,var)
          (agent-q-allowed-directories (list ,var))
          (agent-q-files-test--asks nil))
     (unwind-protect
         (progn ,@body)
       (dolist (buffer (buffer-list))
         (let ((file (buffer-file-name buffer)))
           (when (and file (string-prefix-p ,var file))
             (with-current-buffer buffer (set-buffer-modified-p nil))
             (kill-buffer buffer))))
       (ignore-errors (call-process "chattr" nil nil nil "-R" "-i" ,var))
       (ignore-errors (set-file-modes ,var #o755))
       (delete-directory ,var t))))

(defun agent-q-files-test--write (file content &optional coding)
  "Write CONTENT to FILE as CODING (default utf-8-unix), bypassing file handlers."
  (let ((coding-system-for-write (or coding 'utf-8-unix))
        (file-name-handler-alist nil))
    (make-directory (file-name-directory file) t)
    (with-temp-file file (insert content))))

(defun agent-q-files-test--file-string (file)
  "The contents of FILE, as UTF-8."
  (with-temp-buffer
    (let ((coding-system-for-read 'utf-8-unix)
          (file-name-handler-alist nil))
      (insert-file-contents file))
    (buffer-string)))

(defun agent-q-files-test--mkfifo (file)
  "Make a FIFO named FILE."
  (should (zerop (call-process "mkfifo" nil nil nil file))))

(defun agent-q-files-test--in-child (form seconds)
  "Evaluate FORM in a child `emacs --batch' with agent-q loaded.
Return (EXIT . OUTPUT), or :timeout when it has not ended after
SECONDS (it is then killed): a hang must fail the test, not the run."
  (let* ((lisp (file-name-directory (locate-library "agent-q")))
         (buffer (generate-new-buffer " *agent-q-files-child*"))
         (process (make-process
                   :name "agent-q-files-child" :buffer buffer :noquery t
                   :connection-type 'pipe
                   :command (list (expand-file-name invocation-name invocation-directory)
                                  "--batch" "-Q" "-L" lisp
                                  "--eval" (prin1-to-string
                                            `(progn (require 'agent-q)
                                                    (setq agent-q-audit-file nil)
                                                    (princ (format "RESULT %S\n" ,form))))))))
    (unwind-protect
        (let ((deadline (+ (float-time) seconds)))
          (while (and (process-live-p process) (< (float-time) deadline))
            (accept-process-output process 0.1))
          (if (process-live-p process)
              :timeout
            (cons (process-exit-status process)
                  (with-current-buffer buffer (buffer-string)))))
      (when (process-live-p process) (delete-process process))
      (kill-buffer buffer))))

;;;; The guard: what asks, and what a refusal is

(ert-deftest agent-q-files-outside-asks-and-a-refusal-is-a-denial ()
  "A read the user refuses is a denial: :success nil, not approved."
  (agent-q-files-test--with-dir dir
    (let ((registry (agent-q-files-test--registry))
          (outside (make-temp-file "agent-q-outside" nil ".txt" "outside secret\n")))
      (unwind-protect
          (let ((r (agent-q-files-test--call registry "read_file" (list :path outside)
                                             '(:denied "not that one"))))
            (should-not (plist-get r :success))
            (should-not (plist-get (plist-get r :metadata) :approved))
            (should (equal "denied" (agent-q-files-test--status r)))
            (should (string-match-p "not that one" (agent-q-files-test--content r)))
            (should-not (string-match-p "outside secret" (agent-q-files-test--content r)))
            (pcase-let ((`(,tool ,args ,reason) (car agent-q-files-test--asks)))
              (should (equal "read_file" tool))
              (should (equal (list :path outside) args))
              (should (string-match-p "outside the allowed directories" reason)))
            (should (= 1 (plist-get (cdr (assoc "read_file" (agent-q-tool-metrics registry)))
                                    :denials)))
            ;; Approved, it is read.
            (should (string-match-p "^outside secret$"
                                    (agent-q-files-test--content
                                     (agent-q-files-test--call registry "read_file"
                                                               (list :path outside) :approved)))))
        (delete-file outside)))))

(ert-deftest agent-q-files-inside-does-not-ask ()
  (agent-q-files-test--with-dir dir
    (agent-q-files-test--write (expand-file-name "ok.txt" dir) "fine\n")
    (let ((r (agent-q-files-test--call (agent-q-files-test--registry) "read_file" '(:path "ok.txt"))))
      (should (plist-get r :success))
      (should (string-match-p "^fine$" (agent-q-files-test--content r)))
      (should-not agent-q-files-test--asks))))

(ert-deftest agent-q-files-guard-resolves-dotdot-tilde-and-symlinks ()
  (agent-q-files-test--with-dir dir
    (let* ((registry (agent-q-files-test--registry))
           (sub (expand-file-name "sub/" dir))
           (outside (make-temp-file "agent-q-outside" nil ".txt" "far away\n")))
      (make-directory sub)
      (agent-q-files-test--write (expand-file-name "keys/.ssh/id_x" dir) "PRIVATE\n")
      (agent-q-files-test--write (expand-file-name "plain.txt" dir) "plain\n")
      (make-symbolic-link outside (expand-file-name "link-out" dir))
      (make-symbolic-link (expand-file-name "keys/.ssh/id_x" dir) (expand-file-name "harmless.txt" dir))
      (unwind-protect
          (progn
            (let ((agent-q-allowed-directories (list sub))
                  (default-directory sub))
              (should (equal "denied" (agent-q-files-test--status
                                       (agent-q-files-test--call registry "read_file"
                                                                 '(:path "../sub/../plain.txt")))))
              (should (string-match-p "outside the allowed" (nth 2 (car agent-q-files-test--asks)))))
            (agent-q-files-test--call registry "read_file" '(:path "~/.profile-none"))
            (should (string-match-p (regexp-quote (file-truename "~/"))
                                    (nth 2 (car agent-q-files-test--asks))))
            (let ((r (agent-q-files-test--call registry "read_file" '(:path "link-out"))))
              (should (equal "denied" (agent-q-files-test--status r)))
              (should (string-match-p "outside the allowed" (nth 2 (car agent-q-files-test--asks)))))
            (let ((r (agent-q-files-test--call registry "read_file" '(:path "harmless.txt"))))
              (should-not (string-match-p "PRIVATE" (agent-q-files-test--content r)))
              (should (string-match-p "sensitive file pattern" (nth 2 (car agent-q-files-test--asks)))))
            (should (= 4 (length agent-q-files-test--asks))))
        (delete-file outside)))))

(ert-deftest agent-q-files-no-approval-function-or-a-failing-one-denies ()
  (agent-q-files-test--with-dir dir
    (let ((registry (agent-q-files-test--registry))
          (outside (make-temp-file "agent-q-outside" nil ".txt" "nope\n")))
      (unwind-protect
          (progn
            (let* ((agent-q-approval-function nil)
                   (r (car (agent-q-execute-tool-calls
                            `((:id "n" :name "read_file" :arguments (:path ,outside)))
                            registry))))
              (should (equal "denied" (agent-q-files-test--status r)))
              (should-not (string-match-p "nope" (agent-q-files-test--content r))))
            (let ((r (agent-q-files-test--call registry "read_file" (list :path outside)
                                               (lambda (&rest _) (error "Broken prompt")))))
              (should (equal "denied" (agent-q-files-test--status r)))
              (should (string-match-p "Broken prompt" (agent-q-files-test--content r)))))
        (delete-file outside)))))

;; S2: default-directory of a buffer that visits no file may be / or ~.
(ert-deftest agent-q-files-guard-default-directories ()
  (let* ((agent-q-allowed-directories nil)
         (dir (file-name-as-directory (file-truename (make-temp-file "agent-q-dflt" t))))
         (file (expand-file-name "f.txt" dir))
         (home (file-name-as-directory (file-truename (make-temp-file "agent-q-home" t))))
         (process-environment (cons (concat "HOME=" home) process-environment)))
    (unwind-protect
        (progn
          (agent-q-files-test--write file "x\n")
          (with-temp-buffer
            (setq default-directory dir)
            (should-not (member dir (agent-q-builtins--allowed-directories))))
          (with-current-buffer (find-file-noselect file)
            (unwind-protect
                (should (member dir (agent-q-builtins--allowed-directories)))
              (kill-buffer)))
          (with-temp-buffer
            (setq default-directory "/")
            (should-not (agent-q-builtins--allowed-directories))
            (let ((agent-q-allowed-directories (list "/" "~" home dir)))
              (should (equal (list dir) (agent-q-builtins--allowed-directories)))))
          (cl-letf (((symbol-function 'project-current) (lambda (&rest _) (list 'transient home)))
                    ((symbol-function 'project-root) (lambda (p) (nth 1 p))))
            (with-temp-buffer
              (setq default-directory home)
              (should-not (agent-q-builtins--allowed-directories))))
          (with-temp-buffer
            (setq default-directory "/")
            (let ((agent-q-files-test--asks nil))
              (should (equal "denied" (agent-q-files-test--status
                                       (agent-q-files-test--call (agent-q-files-test--registry)
                                                                 "read_file" (list :path file)))))
              (should (= 1 (length agent-q-files-test--asks))))))
      (delete-directory dir t)
      (delete-directory home t))))

;; S4: no remote operation of any kind before the answer.
(ert-deftest agent-q-files-remote-asks-before-connecting ()
  (let ((processes 0) (agent-q-files-test--asks nil)
        (registry (agent-q-files-test--registry))
        (remote "/ssh:agentq-test.invalid:/tmp/x"))
    (cl-letf* ((real-make-process (symbol-function 'make-process))
               ((symbol-function 'make-process)
                (lambda (&rest args) (cl-incf processes) (apply real-make-process args))))
      (dolist (path (list remote "/ssh:agentq-test.invalid:~/x"))
        (dolist (tool '("read_file" "propose_file_edit"))
          (let ((r (agent-q-files-test--call registry tool
                                             (if (equal tool "read_file")
                                                 (list :path path)
                                               (list :path path :original "a" :modified "b"
                                                     :description "d")))))
            (should (equal "denied" (agent-q-files-test--status r)))
            (should (string-match-p "remote file" (nth 2 (car agent-q-files-test--asks)))))))
      (let ((default-directory "/ssh:agentq-test.invalid:/tmp/"))
        (should (equal "denied" (agent-q-files-test--status
                                 (agent-q-files-test--call registry "read_file" '(:path "x")))))
        (should (string-match-p "remote file" (nth 2 (car agent-q-files-test--asks)))))
      (should (= 5 (length agent-q-files-test--asks))))
    (should (zerop processes))))

;;;; Sensitive names and every backup form of them

(ert-deftest agent-q-files-sensitive-names-and-their-backups-ask ()
  "Sensitive names and their backups ask: .env~, #.env#, .envrc, server.key~, cert.pem.bak..."
  (agent-q-files-test--with-dir dir
    (let ((registry (agent-q-files-test--registry))
          (sensitive '(".env" ".env.local" ".env~" "#.env#" ".envrc" ".env.~3~" "..env.swp"
                       ".#.env" "server.key" "server.key~" "cert.pem" "cert.pem.bak"
                       "cert.pem.orig" "notes.txt.gpg" "notes.txt.gpg~" "id_rsa" "id_rsa.orig"
                       "id_ed25519.pub" ".authinfo" ".authinfo.gpg~" ".netrc" "store.p12"
                       "store.pfx" "credentials" "credentials.json" ".pgpass" ".git-credentials"
                       ".npmrc" ".pypirc" ".npmrc.old" ".pgpass.save"
                       ".kube/config" ".aws/config" ".aws/credentials~"
                       ".config/gcloud/application_default_credentials.json"
                       ".docker/config.json" ".ssh/known_hosts" "#.ssh!id_rsa#"
                       "backups/!home!me!.authinfo~" "!tmp!x!.env~")))
      (dolist (name sensitive)
        (let ((agent-q-files-test--asks nil))
          (agent-q-files-test--write (expand-file-name name dir) "TOPSECRET=1\n")
          (let ((r (agent-q-files-test--call registry "read_file" (list :path name))))
            (should (equal (list name "denied") (list name (agent-q-files-test--status r))))
            (should-not (string-search "TOPSECRET" (agent-q-files-test--content r)))
            (should (string-match-p "sensitive file pattern" (nth 2 (car agent-q-files-test--asks)))))))
      ;; Decorations alone make nothing sensitive.
      (dolist (name '("notes.txt" "README.md~" "#main.c#" "main.c.orig" ".main.c.swp" "env.txt"))
        (let ((agent-q-files-test--asks nil))
          (agent-q-files-test--write (expand-file-name name dir) "plain\n")
          (should (plist-get (agent-q-files-test--call registry "read_file" (list :path name))
                             :success))
          (should-not agent-q-files-test--asks))))))

(ert-deftest agent-q-files-emacs-private-files-ask-in-an-allowed-directory ()
  "Emacs's private files ask even when the allowed directory holds them.
With `user-emacs-directory' inside the allowed directory, its cookies,
histories, auth caches and the MCP connection file ask (backups too),
and so does a history file a variable puts elsewhere; init.el and a
package's source are read freely."
  (agent-q-files-test--with-dir dir
    (let* ((registry (agent-q-files-test--registry))
           (user-emacs-directory (file-name-as-directory (expand-file-name ".emacs.d" dir)))
           (savehist-file (expand-file-name "state/my-saved-history" dir))
           (private '(".emacs.d/url/cookies" ".emacs.d/url/cookies~" ".emacs.d/history"
                      ".emacs.d/eshell/history" ".emacs.d/ielm-history.eld"
                      ".emacs.d/server/server" ".emacs.d/agent-q-mcp.json" ".emacs.d/tramp"
                      ".emacs.d/recentf" ".emacs.d/places" ".emacs.d/elpa/gnupg/pubring.kbx"
                      ".emacs.d/request/cookie" ".emacs.d/authinfo" ".emacs.d/oauth2.plstore"
                      ".emacs.d/transient/history.el" ".emacs.d/auto-save-list/.saves-1-x~"
                      "state/my-saved-history" "state/my-saved-history.bak")))
      (dolist (name private)
        (let ((agent-q-files-test--asks nil))
          (agent-q-files-test--write (expand-file-name name dir) "SECRET=1\n")
          (let ((r (agent-q-files-test--call registry "read_file" (list :path name))))
            (should (equal (list name "denied") (list name (agent-q-files-test--status r))))
            (should-not (string-search "SECRET" (agent-q-files-test--content r)))
            (should (string-match-p "Emacs's private files" (nth 2 (car agent-q-files-test--asks))))
            ;; An allow rule for the directory does not judge them either.
            (should (agent-q-guard-sensitive-match (expand-file-name name dir))))))
      (dolist (name '(".emacs.d/init.el" ".emacs.d/elpa/auth-source-xyz-1.0/auth-source-xyz.el"
                      ".emacs.d/lisp/history-tools.el" "notes/history.txt"))
        (let ((agent-q-files-test--asks nil))
          (agent-q-files-test--write (expand-file-name name dir) "plain\n")
          (should (equal (list name t)
                         (list name (plist-get (agent-q-files-test--call registry "read_file"
                                                                         (list :path name))
                                               :success))))
          (should-not agent-q-files-test--asks))))))

(ert-deftest agent-q-files-call-workspace-replaces-the-allowed-directories ()
  "A driver's `agent-q-call-workspace' is the only allowed set, whatever buffer is current."
  (agent-q-files-test--with-dir dir
    (let* ((registry (agent-q-files-test--registry))
           (root (expand-file-name "root/" dir))
           (inside (expand-file-name "root/in.txt" dir))
           (beside (expand-file-name "beside.txt" dir)))
      (agent-q-files-test--write inside "in\n")
      (agent-q-files-test--write beside "beside\n")
      (with-current-buffer (find-file-noselect beside)
        (let ((agent-q-call-workspace (list :directories (list root) :source "the test's roots")))
          (should (equal (agent-q-builtins--allowed-directories) (list root)))
          (should (plist-get (agent-q-files-test--call registry "read_file" (list :path inside))
                             :success))
          (should-not agent-q-files-test--asks)
          (should (equal "denied" (agent-q-files-test--status
                                   (agent-q-files-test--call registry "read_file"
                                                             (list :path beside)))))
          (should (string-match-p "outside the allowed directories (.*root/: the test's roots)"
                                  (nth 2 (car agent-q-files-test--asks)))))
        (let ((agent-q-call-workspace (list :directories nil :source "none")))
          (should-not (agent-q-builtins--allowed-directories)))
        (let ((agent-q-call-workspace (list :directories (list "/" "~/") :source "too broad")))
          (should-not (agent-q-builtins--allowed-directories)))))))

(ert-deftest agent-q-files-name-variants ()
  (should (member "/p/.env" (agent-q-guard-name-variants "/p/#.env.bak#")))
  (should (member "/p/.env" (agent-q-guard-name-variants "/p/.env.~12~")))
  (should (member "/home/me/.authinfo" (agent-q-guard-name-variants "/b/!home!me!.authinfo~")))
  (should (member "/p/keys.tar/home/u/.ssh/id_rsa"
                  (agent-q-guard-name-variants "/p/keys.tar:home/u/.ssh/id_rsa")))
  (should (<= (length (agent-q-guard-name-variants
                       (concat "/p/" (apply #'concat (make-list 100 "#")) "x.bak~")))
              agent-q-guard--max-variants)))

;;;; Siblings: hard links, hidden buffers, archives, encrypted files, renamed buffers

(ert-deftest agent-q-files-hard-link-asks ()
  "A hard link inside the project to a secret outside it was read freely."
  (agent-q-files-test--with-dir dir
    (let* ((registry (agent-q-files-test--registry))
           (outside-dir (file-name-as-directory (make-temp-file "agent-q-home" t)))
           (secret (expand-file-name ".authinfo" outside-dir))
           (link (expand-file-name "notes.txt" dir)))
      (unwind-protect
          (progn
            (agent-q-files-test--write secret "machine x password hunter2\n")
            (add-name-to-file secret link)
            (let ((r (agent-q-files-test--call registry "read_file" '(:path "notes.txt"))))
              (should (equal "denied" (agent-q-files-test--status r)))
              (should-not (string-match-p "hunter2" (agent-q-files-test--content r)))
              (should (string-match-p "has 2 hard links" (nth 2 (car agent-q-files-test--asks)))))
            (let ((r (agent-q-files-test--call registry "propose_file_edit"
                                               '(:path "notes.txt" :original "zz" :modified "y"
                                                       :description "d"))))
              (should (equal "denied" (agent-q-files-test--status r)))
              (should-not (string-match-p "hunter2" (agent-q-files-test--content r)))))
        (delete-directory outside-dir t)))))

(ert-deftest agent-q-files-hidden-buffers-ask ()
  "A hidden buffer holding an id_rsa was readable by read_buffer."
  (agent-q-files-test--with-dir dir
    (let ((registry (agent-q-files-test--registry))
          (buffer (get-buffer-create " *tar-data keys.tar*")))
      (unwind-protect
          (progn
            (with-current-buffer buffer
              (insert "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n"))
            (dolist (call '(("read_buffer" :buffer " *tar-data keys.tar*")
                            ("search_in_buffer" :buffer " *tar-data keys.tar*" :pattern "KEY")))
              (let ((r (agent-q-files-test--call registry (car call) (cdr call))))
                (should (equal "denied" (agent-q-files-test--status r)))
                (should-not (string-match-p "b3Bl\\|PRIVATE" (agent-q-files-test--content r)))
                (should (string-match-p "is hidden" (nth 2 (car agent-q-files-test--asks))))))
            (should (string-match-p "b3BlbnNzaC1rZXk"
                                    (agent-q-files-test--content
                                     (agent-q-files-test--call registry "read_buffer"
                                                               '(:buffer " *tar-data keys.tar*")
                                                               :approved)))))
        (kill-buffer buffer)))))

(ert-deftest agent-q-files-archive-member-buffers-ask ()
  "tar-mode shows a member in a buffer named after the archive and the member."
  (skip-unless (executable-find "tar"))
  (agent-q-files-test--with-dir dir
    (let ((registry (agent-q-files-test--registry)))
      (agent-q-files-test--write (expand-file-name "src/id_rsa" dir) "PRIVATE-KEY-TEXT\n")
      (should (zerop (call-process "tar" nil nil nil "-C" (expand-file-name "src" dir)
                                   "-cf" (expand-file-name "keys.tar" dir) "id_rsa")))
      (let* ((archive (find-file-noselect (expand-file-name "keys.tar" dir)))
             (member (with-current-buffer archive
                       (goto-char (point-min))
                       (search-forward "id_rsa")
                       (save-window-excursion (tar-extract) (current-buffer)))))
        (unwind-protect
            (progn
              ;; tar-mode names it keys.tar!./id_rsa (archive-mode: keys.zip:id_rsa).
              (should (string-match-p "keys\\.tar[!:]" (buffer-file-name member)))
              (let ((r (agent-q-files-test--call registry "read_buffer"
                                                 (list :buffer (buffer-name member)))))
                (should (equal "denied" (agent-q-files-test--status r)))
                (should-not (string-match-p "PRIVATE" (agent-q-files-test--content r)))
                (should (string-match-p "sensitive" (nth 2 (car agent-q-files-test--asks))))))
          (kill-buffer member)
          (kill-buffer archive))))))

(ert-deftest agent-q-files-renamed-and-indirect-and-dired-buffers-ask ()
  (agent-q-files-test--with-dir dir
    (let ((registry (agent-q-files-test--registry))
          (file (expand-file-name ".authinfo" dir)))
      (agent-q-files-test--write file "machine x password hunter2\n")
      (agent-q-files-test--write (expand-file-name ".ssh/id_rsa" dir) "KEY\n")
      (let* ((base (find-file-noselect file))
             (clone (with-current-buffer base (clone-indirect-buffer "agent-q-auth-clone" nil)))
             (dired (dired-noselect (expand-file-name ".ssh/" dir))))
        (unwind-protect
            (progn
              ;; buffer-file-name set by hand: buffer-file-truename still says where the text came from.
              (with-current-buffer (get-buffer-create "by-hand")
                (insert-buffer-substring base)
                (setq buffer-file-truename file)
                (setq buffer-file-name (expand-file-name "notes.txt" dir)))
              (dolist (name (list (buffer-name clone) "by-hand" (buffer-name dired)))
                (let ((r (agent-q-files-test--call registry "read_buffer" (list :buffer name))))
                  (should (equal (list name "denied") (list name (agent-q-files-test--status r))))
                  (should-not (string-match-p "hunter2\\|id_rsa" (agent-q-files-test--content r))))))
          (with-current-buffer (get-buffer "by-hand") (set-buffer-modified-p nil))
          (kill-buffer "by-hand")
          (kill-buffer clone)
          (kill-buffer dired))))))

(ert-deftest agent-q-files-encrypted-files-are-never-decrypted ()
  "A notes.txt.gpg~ backup was decrypted by EasyPG and returned in clear."
  (agent-q-files-test--with-dir dir
    (let ((registry (agent-q-files-test--registry))
          (processes 0))
      ;; An OpenPGP packet header, then random-looking bytes.
      (let ((coding-system-for-write 'no-conversion)
            (file-name-handler-alist nil))
        (with-temp-file (expand-file-name "notes.txt.gpg~" dir)
          (set-buffer-multibyte nil)
          (insert "\x85\x01\x0c\x03")
          (dotimes (i 400) (insert (logand (* i 97) 255)))))
      (cl-letf* ((real-make-process (symbol-function 'make-process))
                 ((symbol-function 'make-process)
                  (lambda (&rest args) (cl-incf processes) (apply real-make-process args))))
        (let ((r (agent-q-files-test--call registry "read_file" '(:path "notes.txt.gpg~") :approved)))
          (should (string-match-p "sensitive" (nth 2 (car agent-q-files-test--asks))))
          (should (equal "failure" (agent-q-files-test--status r)))
          (should (string-match-p "looks binary.*never decrypt" (agent-q-files-test--content r))))
        (should (zerop processes))))))

;;;; Reading through one descriptor: a symlink flipped by another process

(defun agent-q-files-test--race (tool args-fn count)
  "Call TOOL COUNT times while a shell flips a symlink; return the counts.
ARGS-FN gives the arguments for a call.  The project holds link ->
harmless.txt or -> a .authinfo outside it, flipped in a loop by a
shell.  Return (SECRET-UNASKED SECRET-ASKED ASKS CHANGED): the calls
that returned the secret without the user having been asked, for
that call, about reading it (an ask with the guard's reason); those
that returned it after such an ask; the asks; the calls refused
because the file changed while it was being read."
  (agent-q-files-test--with-dir dir
    (let* ((registry (agent-q-files-test--registry))
           (outside (file-name-as-directory (make-temp-file "agent-q-secret" t)))
           (secret (expand-file-name ".authinfo" outside))
           (harmless (expand-file-name "harmless.txt" dir))
           (link (expand-file-name "link" dir))
           (flipper nil)
           (unasked 0) (asked-secret 0) (changed 0)
           (agent-q-review--review-driver (lambda (_) (ert-fail "no review may open"))))
      (unwind-protect
          (progn
            (agent-q-files-test--write secret "machine x password SECRET-TOKEN\n")
            (agent-q-files-test--write harmless "nothing to see\n")
            (make-symbolic-link harmless link)
            (setq flipper
                  (start-process "agent-q-flipper" nil "sh" "-c"
                                 (format "while :; do ln -sfn %s %s.tmp && mv -fT %s.tmp %s; ln -sfn %s %s.tmp && mv -fT %s.tmp %s; done"
                                         (shell-quote-argument secret) (shell-quote-argument link)
                                         (shell-quote-argument link) (shell-quote-argument link)
                                         (shell-quote-argument harmless) (shell-quote-argument link)
                                         (shell-quote-argument link) (shell-quote-argument link))))
            (dotimes (i count)
              (let* ((id (format "c%d" i))
                     ;; The user approves half of the reads asked about.
                     (r (agent-q-files-test--call registry tool (funcall args-fn)
                                                  (if (cl-evenp i) :approved :denied) id))
                     (content (agent-q-files-test--content r))
                     ;; Asked about reading, for this call: the guard's reason.
                     (was-asked (cl-find-if (lambda (a) (and (equal id (nth 3 a)) (nth 2 a)))
                                            agent-q-files-test--asks)))
                (when (string-match-p "changed while it was being read" content)
                  (cl-incf changed))
                (when (string-search "SECRET-TOKEN" content)
                  (if was-asked (cl-incf asked-secret) (cl-incf unasked)))))
            (list unasked asked-secret (length agent-q-files-test--asks) changed))
        (when flipper (delete-process flipper))
        (delete-directory outside t)))))

(ert-deftest agent-q-files-symlink-race-never-reads-the-secret-unasked ()
  "A link swapped to ~/.authinfo during 3,000 reads is never read unasked."
  (pcase-let ((`(,unasked ,asked-secret ,asks ,changed)
               (agent-q-files-test--race "read_file" (lambda () '(:path "link")) 3000)))
    (message "read_file race: %d secret reads unasked, %d asked and approved, %d asks, %d refused as changed"
             unasked asked-secret asks changed)
    (should (zerop unasked))
    ;; The race was real: the guard saw both files, and some opens differed from the check.
    (should (> asks 0))
    (should (> changed 0))))

(ert-deftest agent-q-files-symlink-race-propose-file-edit ()
  "propose_file_edit's read of the current text is checked the same way."
  (pcase-let ((`(,unasked ,_asked-secret ,asks ,_changed)
               (agent-q-files-test--race
                "propose_file_edit"
                ;; Close to the secret's line: a failed match quotes the closest line read.
                (lambda () '(:path "link" :original "machine x passwd" :modified "x"
                                   :description "d"))
                1000)))
    (should (zerop unasked))
    (should (> asks 0))))

;;;; The asynchronous executor: the handler trusts what its guard has just cleared

(defun agent-q-files-test--async-reads (registry path count)
  "Read PATH COUNT times with REGISTRY's read_file, in one batch.
Through the asynchronous executor, the MCP server's and the bridges'.
Calls the guard asks about are withdrawn unanswered.  Return the
results."
  (let* ((done nil)
         (agent-q-audit-file nil)
         (batch (agent-q--execute-async
                 (cl-loop for i below count
                          collect (list :id (format "a%d" i) :name "read_file"
                                        :arguments (list :path path)))
                 (lambda (results) (setq done results))
                 registry)))
    (agent-q-cancel-batch batch "the test answers no question")
    (let ((deadline (+ (float-time) 120)))
      (while (and (not done) (< (float-time) deadline))
        (accept-process-output nil 0.05)))
    (should done)
    done))

(ert-deftest agent-q-files-async-read-judges-a-cleared-file-once ()
  "A read the guard has just cleared is not judged again by its handler.
Through the asynchronous executor, the guard's reason is computed once
per read of an ordinary file in the allowed directory (the handler
checks that it opened the very file the guard judged); through the
synchronous one, twice."
  (agent-q-files-test--with-dir dir
    (let* ((registry (agent-q-files-test--registry))
           (judged 0)
           (count-judgement (lambda (&rest _) (cl-incf judged))))
      (agent-q-files-test--write (expand-file-name "plain.txt" dir) "plain text\n")
      (advice-add 'agent-q-builtins--guard-reason :before count-judgement)
      (unwind-protect
          (progn
            (dolist (r (agent-q-files-test--async-reads registry "plain.txt" 10))
              (should (equal (agent-q-files-test--status r) "success"))
              (should (string-suffix-p "\nplain text\n" (agent-q-files-test--content r))))
            (should (= judged 10))
            (setq judged 0)
            (should (equal (agent-q-files-test--status
                            (agent-q-files-test--call registry "read_file" '(:path "plain.txt")))
                           "success"))
            (should (= judged 2)))
        (advice-remove 'agent-q-builtins--guard-reason count-judgement)))))

(ert-deftest agent-q-files-async-symlink-race-never-reads-the-secret-unasked ()
  "A link swapped to ~/.authinfo during 3,000 asynchronous reads is never read.
The handler trusts its guard only for the very file the guard judged:
a link flipped between the two is caught by the descriptor's identity."
  (agent-q-files-test--with-dir dir
    (let* ((registry (agent-q-files-test--registry))
           (outside (file-name-as-directory (make-temp-file "agent-q-secret" t)))
           (secret (expand-file-name ".authinfo" outside))
           (harmless (expand-file-name "harmless.txt" dir))
           (link (expand-file-name "link" dir))
           (flipper nil))
      (unwind-protect
          (progn
            (agent-q-files-test--write secret "machine x password SECRET-TOKEN\n")
            (agent-q-files-test--write harmless "nothing to see\n")
            (make-symbolic-link harmless link)
            (setq flipper
                  (start-process "agent-q-flipper" nil "sh" "-c"
                                 (format "while :; do ln -sfn %s %s.tmp && mv -fT %s.tmp %s; ln -sfn %s %s.tmp && mv -fT %s.tmp %s; done"
                                         (shell-quote-argument secret) (shell-quote-argument link)
                                         (shell-quote-argument link) (shell-quote-argument link)
                                         (shell-quote-argument harmless) (shell-quote-argument link)
                                         (shell-quote-argument link) (shell-quote-argument link))))
            (let* ((results (agent-q-files-test--async-reads registry "link" 3000))
                   (contents (mapcar #'agent-q-files-test--content results)))
              (should (= (length results) 3000))
              ;; Nothing was approved: the secret is never in a result.
              (should-not (cl-find-if (lambda (c) (string-search "SECRET-TOKEN" c)) contents))
              ;; The race was real: reads of the harmless file went through the
              ;; cleared path, and some opens differed from what the guard judged.
              (should (cl-find-if (lambda (c) (string-search "nothing to see" c)) contents))
              (should (cl-find-if (lambda (c) (string-search "changed while it was being read" c))
                                  contents))))
        (when flipper (delete-process flipper))
        (delete-directory outside t)))))

;;;; Edited arguments are what runs

(ert-deftest agent-q-files-edited-range-is-what-read-buffer-reads ()
  "The user limits a read of ~/.authinfo to characters 1-8: only those are read."
  (agent-q-files-test--with-dir dir
    (let* ((registry (agent-q-files-test--registry))
           (file (expand-file-name ".authinfo" dir))
           (buffer (progn (agent-q-files-test--write file "machine host login me password hunter2\n")
                          (find-file-noselect file)))
           (r (agent-q-files-test--call
               registry "read_buffer" (list :buffer (buffer-name buffer))
               (list :modified (list :buffer (buffer-name buffer) :start 1 :end 9)))))
      (should (plist-get r :success))
      (should (string-match-p "characters 1-8 of" (agent-q-files-test--content r)))
      (should (string-match-p "\nmachine \\'" (agent-q-files-test--content r)))
      (should-not (string-match-p "hunter2" (agent-q-files-test--content r))))))

(ert-deftest agent-q-files-edited-buffer-is-what-search-searches ()
  "The user redirects a search from the secret buffer to a harmless one."
  (agent-q-files-test--with-dir dir
    (let* ((registry (agent-q-files-test--registry))
           (file (expand-file-name ".authinfo" dir))
           (secret (progn (agent-q-files-test--write file "machine h password hunter2\n")
                          (find-file-noselect file)))
           (harmless (get-buffer-create "agent-q-harmless")))
      (unwind-protect
          (progn
            (with-current-buffer harmless (insert "the password policy says\n"))
            (let ((r (agent-q-files-test--call
                      registry "search_in_buffer"
                      (list :buffer (buffer-name secret) :pattern "password")
                      '(:modified (:buffer "agent-q-harmless" :pattern "password")))))
              (should (plist-get r :success))
              (should (string-match-p "Found 1 match(es) for 'password'" (agent-q-files-test--content r)))
              (should (string-match-p "the password policy" (agent-q-files-test--content r)))
              (should-not (string-match-p "hunter2" (agent-q-files-test--content r)))
              (should (= 1 (length agent-q-files-test--asks)))))
        (kill-buffer harmless)))))

;;;; Hangs: FIFOs (in a child Emacs, so that a hang fails the test)

(ert-deftest agent-q-files-fifo-never-blocks ()
  "propose_file_edit on a FIFO blocked Emacs forever; write_file blocked after approval."
  (skip-unless (executable-find "mkfifo"))
  (agent-q-files-test--with-dir dir
    (let ((fifo (expand-file-name "pipe" dir)))
      (agent-q-files-test--mkfifo fifo)
      (pcase-dolist (`(,tool ,args ,expected)
                     `(("propose_file_edit" (:path ,fifo :original "a" :modified "b" :description "d")
                        "a FIFO (named pipe), not a regular file")
                       ("write_file" (:path ,fifo :content "x")
                        "is a FIFO (named pipe), not a regular file; nothing was written")
                       ("read_file" (:path ,fifo) "a FIFO (named pipe), not a regular file")))
        (let ((answer (agent-q-files-test--in-child
                       `(let ((agent-q-allowed-directories (list ,dir))
                              (agent-q-approval-function (lambda (&rest _) :approved))
                              (agent-q-review--review-driver (lambda (_) (error "No review"))))
                          (car (agent-q-execute-tool-calls
                                '((:id "f" :name ,tool :arguments ,args)))))
                       30)))
          (should-not (eq answer :timeout))
          (should (equal 0 (car answer)))
          (should (string-match-p (regexp-quote expected) (cdr answer)))
          (should (string-match-p ":success nil" (cdr answer)))))
      (should (eq ?p (aref (file-attribute-modes (file-attributes fifo)) 0))))))

;;;; Truthful results

(ert-deftest agent-q-files-read-file-failures ()
  (agent-q-files-test--with-dir dir
    (let ((registry (agent-q-files-test--registry)))
      (make-directory (expand-file-name "d" dir))
      (let ((coding-system-for-write 'no-conversion))
        (with-temp-file (expand-file-name "bin" dir) (insert "a\0b")))
      (agent-q-files-test--write (expand-file-name "huge.txt" dir) (make-string 2000 ?z))
      (agent-q-files-test--write (expand-file-name "s.txt" dir) "one\ntwo\n")
      (pcase-dolist (`(,args ,expected)
                     '(((:path "none.txt") "\\`File not found: ")
                       ((:path "d") "is a directory, not a regular file")
                       ((:path "bin") "looks binary")
                       ((:path "") "\\`No path given")
                       ((:path "s.txt" :offset 0) "\\`Invalid offset 0")
                       ((:path "s.txt" :limit 0) "\\`Invalid limit 0")
                       ((:path "s.txt" :column -1) "\\`Invalid column -1")
                       ((:path "s.txt" :offset 9) "\\`Offset 9 is past the end of .*, which has 2 line")
                       ((:path "s.txt" :column 4) "\\`Column 4 is past the end of line 1")))
        (let ((r (agent-q-files-test--call registry "read_file" args)))
          (should (equal (list args "failure") (list args (agent-q-files-test--status r))))
          (should (string-match-p expected (agent-q-files-test--content r)))))
      (let ((agent-q-builtins-max-file-size 1000))
        (let ((r (agent-q-files-test--call registry "read_file" '(:path "huge.txt"))))
          (should (equal "failure" (agent-q-files-test--status r)))
          (should (string-match-p "too large to read" (agent-q-files-test--content r)))))
      (should-not agent-q-files-test--asks))))

(ert-deftest agent-q-files-read-buffer-and-search-failures ()
  (let ((registry (agent-q-files-test--registry))
        (buffer (get-buffer-create "agent-q-files-abc")))
    (unwind-protect
        (progn
          (with-current-buffer buffer (insert "abc"))
          (pcase-dolist (`(,tool ,args ,status ,expected)
                         '(("read_buffer" (:buffer "agent-q-files-abc" :start 10) "failure" "\\`Invalid start 10")
                           ("read_buffer" (:buffer "agent-q-files-abc" :start 3 :end 1) "failure"
                            "\\`Invalid range: end 1 is before start 3")
                           ("read_buffer" (:buffer "no-such-buffer-zz") "failure" "\\`Buffer no-such-buffer-zz not found")
                           ("search_in_buffer" (:buffer "no-such-buffer-zz" :pattern "x") "failure"
                            "\\`Buffer no-such-buffer-zz not found")
                           ("search_in_buffer" (:buffer "agent-q-files-abc" :pattern "") "failure" "\\`No pattern given")
                           ("search_in_buffer" (:buffer "agent-q-files-abc" :pattern "[" :regex t) "failure"
                            "\\`Invalid regular expression '\\['")
                           ("search_in_buffer" (:buffer "agent-q-files-abc" :pattern "zz") "success"
                            "\\`No matches for 'zz'")))
            (let ((r (agent-q-files-test--call registry tool args)))
              (should (equal (list args status) (list args (agent-q-files-test--status r))))
              (should (string-match-p expected (agent-q-files-test--content r))))))
      (kill-buffer buffer))))

(ert-deftest agent-q-files-raw-bytes-are-escaped ()
  "read_buffer returned text with raw bytes as a quoted Lisp string."
  (let ((registry (agent-q-files-test--registry))
        (buffer (get-buffer-create "agent-q-files-raw")))
    (unwind-protect
        (progn
          (with-current-buffer buffer (insert "caf" (string #x3fffe9) "\n"))
          (let ((r (agent-q-files-test--call registry "read_buffer" '(:buffer "agent-q-files-raw"))))
            (should (plist-get r :success))
            (should (equal "Buffer: agent-q-files-raw (characters 1-5 of 5)\ncaf\\xE9\n\n[Bytes that are not valid in the text's encoding are shown as \\xNN.]"
                           (agent-q-files-test--content r)))))
      (kill-buffer buffer))))

(ert-deftest agent-q-files-propose-file-edit-raw-bytes-fail-clearly ()
  "propose_file_edit on such a file failed with \"Wrong type argument: unicode-string-p\"."
  (agent-q-files-test--with-dir dir
    (let ((registry (agent-q-files-test--registry))
          (agent-q-review--review-driver (lambda (_) (ert-fail "no review may open"))))
      (let ((coding-system-for-write 'no-conversion))
        (with-temp-file (expand-file-name "mixed.txt" dir)
          ;; Valid UTF-8, then a byte that is not: with a utf-8 cookie, Emacs keeps it raw.
          (insert "-*- coding: utf-8 -*-\ncaf\303\251 \377 end\n")))
      (let ((r (agent-q-files-test--call registry "propose_file_edit"
                                         '(:path "mixed.txt" :original "end" :modified "END"
                                                 :description "d")
                                         :approved)))
        (should (equal "failure" (agent-q-files-test--status r)))
        (should (string-match-p "bytes that are not valid in its encoding" (agent-q-files-test--content r)))
        (should-not (string-match-p "unicode-string-p" (agent-q-files-test--content r))))
      ;; read_file shows it, escaped.
      (should (string-match-p "café \\\\xFF end"
                              (agent-q-files-test--content
                               (agent-q-files-test--call registry "read_file" '(:path "mixed.txt"))))))))

;;;; read_buffer and search_in_buffer

(defmacro agent-q-files-test--with-buffer (text &rest body)
  "Run BODY in a fresh visible buffer holding TEXT, named by the variable `name'."
  (declare (indent 1) (debug (form body)))
  `(let* ((buffer (generate-new-buffer "agent-q-files-buffer"))
          (name (buffer-name buffer)))
     (unwind-protect
         (with-current-buffer buffer
           (insert ,text)
           ,@body)
       (kill-buffer buffer))))

(ert-deftest agent-q-files-read-buffer-whole-range-and-pages ()
  (let ((registry (agent-q-files-test--registry)))
    (agent-q-files-test--with-buffer "abcdefghij"
      (narrow-to-region 3 5)
      (should (equal (format "Buffer: %s (characters 1-10 of 10)\nabcdefghij" name)
                     (agent-q-files-test--content
                      (agent-q-files-test--call registry "read_buffer" (list :buffer name)))))
      (should (equal (format "Buffer: %s (characters 2-3 of 10)\nbc" name)
                     (agent-q-files-test--content
                      (agent-q-files-test--call registry "read_buffer"
                                                (list :buffer name :start 2 :end 4))))))
    (agent-q-files-test--with-buffer (make-string 2500 ?a)
      (let ((agent-q-builtins-page-chars 1000))
        (should (string-match-p "characters 1001-2500 not shown. Call read_buffer with start 1001"
                                (agent-q-files-test--content
                                 (agent-q-files-test--call registry "read_buffer" (list :buffer name)))))))))

(ert-deftest agent-q-files-search-literal-regex-and-cap ()
  (let ((registry (agent-q-files-test--registry)))
    (agent-q-files-test--with-buffer "alpha beta\ngamma a.b\n  beta end\n"
      (should (equal "Found 2 match(es) for 'beta':\n  Line 1, Column 6 (position 7): alpha beta\n  Line 3, Column 2 (position 24):   beta end"
                     (agent-q-files-test--content
                      (agent-q-files-test--call registry "search_in_buffer"
                                                (list :pattern "beta" :buffer name)))))
      (should (string-prefix-p "Found 1 match(es) for 'a.b':\n  Line 2, Column 6"
                               (agent-q-files-test--content
                                (agent-q-files-test--call registry "search_in_buffer"
                                                          (list :pattern "a.b" :buffer name)))))
      (should (string-prefix-p "Found 2 match(es) for '^[a-z]+ '"
                               (agent-q-files-test--content
                                (agent-q-files-test--call registry "search_in_buffer"
                                                          (list :pattern "^[a-z]+ " :buffer name :regex t)))))
      (should (string-prefix-p "Found 1 match(es) for 'beta':\n  Line 1,"
                               (agent-q-files-test--content
                                (agent-q-files-test--call registry "search_in_buffer"
                                                          (list :pattern "beta" :buffer name
                                                                :all_matches :json-false))))))
    (agent-q-files-test--with-buffer (make-string 50 ?x)
      (let ((agent-q-builtins-search-limit 5))
        (let ((out (agent-q-files-test--content
                    (agent-q-files-test--call registry "search_in_buffer" (list :pattern "x" :buffer name)))))
          (should (string-prefix-p "Found 50 match(es)" out))
          (should (string-match-p "\\[\\.\\.\\. 45 more matches not shown" out)))))
    (should-not agent-q-files-test--asks)))

(ert-deftest agent-q-files-buffers-visiting-guarded-files-ask ()
  (agent-q-files-test--with-dir dir
    (let ((registry (agent-q-files-test--registry)))
      (agent-q-files-test--write (expand-file-name "server.pem" dir) "-----BEGIN PRIVATE KEY-----\n")
      (let ((buffer (find-file-noselect (expand-file-name "server.pem" dir))))
        (dolist (call (list (list "read_buffer" :buffer (buffer-name buffer))
                            (list "search_in_buffer" :buffer (buffer-name buffer) :pattern "PRIVATE")))
          (let ((r (agent-q-files-test--call registry (car call) (cdr call))))
            (should (equal "denied" (agent-q-files-test--status r)))
            (should-not (string-match-p "BEGIN" (agent-q-files-test--content r)))))
        (should (equal '("search_in_buffer" "read_buffer") (mapcar #'car agent-q-files-test--asks)))))))

;;;; propose_file_edit

(ert-deftest agent-q-files-propose-file-edit-guard-asks-before-the-review-reads ()
  (agent-q-files-test--with-dir dir
    (let* ((registry (agent-q-files-test--registry))
           (reviewed nil)
           (agent-q-review--review-driver
           (lambda (buffer) (push buffer reviewed) (with-current-buffer buffer (agent-q-review-cancel)))))
      (agent-q-files-test--write (expand-file-name ".env" dir) "TOKEN=hunter2\n")
      (agent-q-files-test--write (expand-file-name "ok.txt" dir) "fine\n")
      (let ((r (agent-q-files-test--call registry "propose_file_edit"
                                         '(:path ".env" :original "X" :modified "Y" :description "d"))))
        (should (equal "denied" (agent-q-files-test--status r)))
        (should-not (string-match-p "hunter2" (agent-q-files-test--content r)))
        (should (string-match-p "\\`propose_file_edit must read the file to show the edit: .*sensitive"
                                (nth 2 (car agent-q-files-test--asks))))
        (should-not reviewed))
      ;; A file the guard lets through: the review is the only approval.
      (let ((agent-q-files-test--asks nil)
            (r (agent-q-files-test--call registry "propose_file_edit"
                                         '(:path "ok.txt" :original "fine" :modified "good" :description "d")
                                         :approved)))
        (should (= 1 (length reviewed)))
        (should (equal "denied" (agent-q-files-test--status r)))
        (should-not (nth 2 (car agent-q-files-test--asks)))))))

;;;; write_file

(defun agent-q-files-test--leftover-temps (dir)
  "The temporary files write_file left in DIR."
  (directory-files dir nil "\\`\\.agent-q-write-"))

(ert-deftest agent-q-files-write-new-file-and-replace ()
  (agent-q-files-test--with-dir dir
    (let ((registry (agent-q-files-test--registry)))
      (let ((r (agent-q-files-test--call registry "write_file"
                                         '(:path "new/sub/f.txt" :content "héllo\nworld\n") :approved)))
        (should (plist-get r :success))
        (should (string-prefix-p
                 (format "Wrote 12 characters (2 line(s), 13 bytes on disk) to %snew/sub/f.txt (created a new file; encoding utf-8-unix)." dir)
                 (agent-q-files-test--content r)))
        (should (equal "héllo\nworld\n" (agent-q-files-test--file-string (expand-file-name "new/sub/f.txt" dir)))))
      (let ((file (expand-file-name "script.sh" dir)))
        (agent-q-files-test--write file "old\n")
        (set-file-modes file #o750)
        (let* ((buffer (find-file-noselect file))
               (r (agent-q-files-test--call registry "write_file"
                                            (list :path file :content "new content\n") :approved)))
          (should (string-match-p "replaced the existing file" (agent-q-files-test--content r)))
          (should (equal "new content\n" (with-current-buffer buffer (buffer-string))))
          (should (= #o750 (file-modes file)))
          (should-not (agent-q-files-test--leftover-temps dir)))))))

(ert-deftest agent-q-files-write-keeps-links-and-encoding ()
  (agent-q-files-test--with-dir dir
    (let ((registry (agent-q-files-test--registry))
          (target (expand-file-name "real.txt" dir))
          (link (expand-file-name "link.txt" dir))
          (latin (expand-file-name "latin.txt" dir)))
      (agent-q-files-test--write target "old\n")
      (make-symbolic-link target link)
      (agent-q-files-test--call registry "write_file" (list :path link :content "via link\n") :approved)
      (should (file-symlink-p link))
      (should (equal "via link\n" (agent-q-files-test--file-string target)))
      (agent-q-files-test--write latin "caf\351\n" 'iso-latin-1-unix)
      (should (string-match-p "encoding iso-latin-1-unix"
                              (agent-q-files-test--content
                               (agent-q-files-test--call registry "write_file"
                                                         (list :path latin :content "déjà\n")
                                                         :approved))))
      (should (= 5 (file-attribute-size (file-attributes latin)))))))

(ert-deftest agent-q-files-write-refusals-are-failures ()
  "A write that did not happen was reported as a success; 0444 files and
hard links were silently replaced."
  (agent-q-files-test--with-dir dir
    (let ((registry (agent-q-files-test--registry))
          (busy (expand-file-name "busy.txt" dir))
          (ro (expand-file-name "ro.txt" dir))
          (linked (expand-file-name "linked.txt" dir)))
      (make-directory (expand-file-name "d" dir))
      (agent-q-files-test--write busy "disk\n")
      (agent-q-files-test--write ro "read only\n")
      (set-file-modes ro #o444)
      (agent-q-files-test--write linked "shared\n")
      (add-name-to-file linked (expand-file-name "other-name.txt" dir))
      (agent-q-files-test--write (expand-file-name "blocker" dir) "keep\n")
      (with-current-buffer (find-file-noselect busy) (insert "user edit "))
      (pcase-dolist (`(,path ,expected)
                     `((,busy "has unsaved changes; writing the file would lose them. Nothing was written")
                       (,ro "is read-only (mode -r--r--r--); nothing was written")
                       (,linked "has 2 hard links: replacing it would split them")
                       ("d" "is a directory; nothing was written")
                       ("" "\\`No path given")
                       ("blocker/f.txt" "\\`Writing .*blocker/f.txt failed: .*No file was created")))
        (let ((r (agent-q-files-test--call registry "write_file" (list :path path :content "model\n")
                                           :approved)))
          (should (equal (list path "failure") (list path (agent-q-files-test--status r))))
          (should (string-match-p expected (agent-q-files-test--content r)))))
      (should (equal "disk\n" (agent-q-files-test--file-string busy)))
      (should (equal "read only\n" (agent-q-files-test--file-string ro)))
      (should (equal "shared\n" (agent-q-files-test--file-string linked)))
      (should (equal "keep\n" (agent-q-files-test--file-string (expand-file-name "blocker" dir))))
      (should-not (agent-q-files-test--leftover-temps dir)))))

(ert-deftest agent-q-files-write-in-a-non-writable-directory ()
  "A writable file in a directory that forbids a rename is written in place, never reported as written when it was not."
  (agent-q-files-test--with-dir dir
    (let* ((registry (agent-q-files-test--registry))
           (locked (expand-file-name "locked/" dir))
           (file (expand-file-name "f.txt" locked)))
      (agent-q-files-test--write file "old\n")
      (if (zerop (user-uid))
          ;; root writes in any directory whatever its mode; an immutable one stops it.
          (should (zerop (call-process "chattr" nil nil nil "+i" locked)))
        (set-file-modes locked #o555))
      (unwind-protect
          (progn
            (should-not (file-writable-p locked))
            (let ((r (agent-q-files-test--call registry "write_file" (list :path file :content "new\n")
                                               :approved)))
              (should (plist-get r :success))
              (should (string-match-p "rewrote the existing file in place" (agent-q-files-test--content r)))
              (should (string-match-p "not writable, so the file was written in place"
                                      (agent-q-files-test--content r))))
            (should (equal "new\n" (agent-q-files-test--file-string file)))
            ;; A new file there cannot be made: a failure, saying so.
            (let ((r (agent-q-files-test--call registry "write_file"
                                               (list :path (expand-file-name "g.txt" locked) :content "x")
                                               :approved)))
              (should (equal "failure" (agent-q-files-test--status r)))
              (should (string-match-p "No file was created" (agent-q-files-test--content r)))))
        (if (zerop (user-uid))
            (call-process "chattr" nil nil nil "-i" locked)
          (set-file-modes locked #o755))))))

;;;; read_file: pages, codings, and the module's pager against Emacs's

(ert-deftest agent-q-files-read-file-pages ()
  (agent-q-files-test--with-dir dir
    (let ((registry (agent-q-files-test--registry)))
      (agent-q-files-test--write (expand-file-name "s.txt" dir) "one\ntwo\nthree\n")
      (should (equal (format "File: %ss.txt (lines 1-3 of 3)\none\ntwo\nthree\n" dir)
                     (agent-q-files-test--content
                      (agent-q-files-test--call registry "read_file" '(:path "s.txt")))))
      (agent-q-files-test--write
       (expand-file-name "big.txt" dir)
       (mapconcat (lambda (i) (format "line %d\n" i)) (number-sequence 1 1000) ""))
      (let ((first (agent-q-files-test--content
                    (agent-q-files-test--call registry "read_file" '(:path "big.txt")))))
        (should (string-match-p "(lines 1-400 of 1000)" first))
        (should (string-match-p "Call read_file with offset 401 to read the next page" first)))
      (should (string-match-p "(lines 998-1000 of 1000)\nline 998\nline 999\nline 1000\n\\'"
                              (agent-q-files-test--content
                               (agent-q-files-test--call registry "read_file"
                                                         '(:path "big.txt" :offset 998 :limit 10)))))
      (agent-q-files-test--write (expand-file-name "long.txt" dir)
                                 (concat (make-string 3000 ?y) "\nshort\n"))
      (let ((agent-q-builtins-page-chars 1000))
        (should (string-match-p "Line 1 is longer than one page (3000 characters); columns 0-999 are shown. Call read_file with offset 1 and column 1000 to read on."
                                (agent-q-files-test--content
                                 (agent-q-files-test--call registry "read_file" '(:path "long.txt")))))
        (should (string-match-p (concat "(lines 1-1 of 2, line 1 from column 2000)\n"
                                        (make-string 1000 ?y)
                                        "\n\n\\[Page size limit reached: lines 2-2 not shown")
                                (agent-q-files-test--content
                                 (agent-q-files-test--call registry "read_file"
                                                           '(:path "long.txt" :column 2000)))))))))

(ert-deftest agent-q-files-read-file-unsaved-buffer ()
  (agent-q-files-test--with-dir dir
    (let ((registry (agent-q-files-test--registry))
          (file (expand-file-name "u.txt" dir)))
      (agent-q-files-test--write file "on disk\n")
      (with-current-buffer (find-file-noselect file)
        (goto-char (point-min))
        (insert "edited ")
        (let ((out (agent-q-files-test--content
                    (agent-q-files-test--call registry "read_file" (list :path file)))))
          (should (string-match-p "has unsaved changes" out))
          (should (string-match-p "^edited on disk$" out)))))))

(defconst agent-q-files-test--texts
  `(("utf8.txt" ,(concat "plain ascii\n" "é日本 🦀\n" (make-string 40 ?w) "\n\nlast") utf-8-unix)
    ("dos.txt" "one\r\ntwo\r\n\r\nthree\r\n" no-conversion)
    ("bom.txt" "\357\273\277first\nsecond\n" no-conversion)
    ("latin.txt" "caf\351\nna\357ve\n" no-conversion)
    ("latin-dos.txt" "caf\351\r\nna\357ve\r\n\r\n\377" no-conversion)
    ("latin-long.txt" ,(concat "\351t\351\n" (apply #'concat (make-list 30 "d\351j\340 ")) "\nend")
     no-conversion)
    ("latin-c1.txt" "caf\351 \205 ok\n" no-conversion)
    ("latin-esc.txt" "caf\351 \e$B\n" no-conversion)
    ("latin-bom.txt" "\357\273\277caf\351\n" no-conversion)
    ("mixed.txt" "a\r\nb\nc\r\n" no-conversion)
    ("mac.txt" "a\rb\rc\r" no-conversion)
    ("cookie.txt" ";; -*- coding: latin-1 -*-\ncaf\303\251\n" no-conversion)
    ("empty.txt" "" no-conversion)
    ("nl.txt" "\n\n\n" no-conversion))
  "Files whose decoding read_file must get exactly as `insert-file-contents' does.")

(ert-deftest agent-q-files-pages-agree-with-insert-file-contents ()
  "The module's pager and Emacs's decoding give the text Emacs gives."
  (agent-q-files-test--with-dir dir
    (let ((registry (agent-q-files-test--registry))
          (agent-q-builtins-page-chars 7))
      (pcase-dolist (`(,name ,content ,coding) agent-q-files-test--texts)
        (let ((file (expand-file-name name dir)))
          (let ((coding-system-for-write coding))
            (with-temp-file file (set-buffer-multibyte (not (eq coding 'no-conversion))) (insert content)))
          (let ((expected (with-temp-buffer
                            (insert-file-contents file)
                            (let ((lines (count-lines (point-min) (point-max))) (pages nil))
                              (dolist (offset (number-sequence 1 (max 1 lines)))
                                (dolist (column '(0 1 3))
                                  (push (ignore-errors
                                          (agent-q-builtins--format-page
                                           file "" (agent-q-builtins--page-buffer offset 2 column) column))
                                        pages)))
                              (nreverse pages))))
                (actual (let ((lines (with-temp-buffer (insert-file-contents file)
                                                       (count-lines (point-min) (point-max))))
                              (pages nil))
                          (dolist (offset (number-sequence 1 (max 1 lines)))
                            (dolist (column '(0 1 3))
                              (let ((r (agent-q-files-test--call
                                        registry "read_file"
                                        (list :path name :offset offset :limit 2 :column column))))
                                (push (and (plist-get r :success) (agent-q-files-test--content r))
                                      pages))))
                          (nreverse pages))))
            (should (equal (list name expected) (list name actual)))))))))

(ert-deftest agent-q-files-latin-1-is-paged-without-emacs-s-decoder ()
  "Clean ISO-8859-1 is paged by the module; C1 controls or escapes leave it to Emacs.
Decoding a 50 MB Latin-1 file in Emacs takes seconds on its main thread."
  (agent-q-files-test--with-dir dir
    (let ((registry (agent-q-files-test--registry))
          (decoded nil))
      (pcase-dolist (`(,name . ,content)
                     '(("clean.txt" . "caf\351\r\nna\357ve\r\n")
                       ("c1.txt" . "caf\351 \205\n")
                       ("esc.txt" . "caf\351 \e$B\n")))
        (let ((coding-system-for-write 'no-conversion))
          (with-temp-file (expand-file-name name dir) (set-buffer-multibyte nil) (insert content))))
      (cl-letf* ((original (symbol-function 'agent-q-files--decode-into-buffer))
                 ((symbol-function 'agent-q-files--decode-into-buffer)
                  (lambda (handle name)
                    (push (file-name-nondirectory name) decoded)
                    (funcall original handle name))))
        (dolist (name '("clean.txt" "c1.txt" "esc.txt"))
          (should (plist-get (agent-q-files-test--call registry "read_file" (list :path name)) :success))))
      (should (equal '("c1.txt" "esc.txt") (sort decoded #'string<)))
      (should (string-match-p "^café\nnaïve\n"
                              (agent-q-files-test--content
                               (agent-q-files-test--call registry "read_file" '(:path "clean.txt")))))
      ;; Another language environment's first choice is Emacs's to make.
      (let ((decoded nil))
        (cl-letf* ((original (symbol-function 'agent-q-files--decode-into-buffer))
                   ((symbol-function 'agent-q-files--decode-into-buffer)
                    (lambda (handle name)
                      (push (file-name-nondirectory name) decoded)
                      (funcall original handle name))))
          (with-coding-priority '(japanese-shift-jis)
            (agent-q-files-test--call registry "read_file" '(:path "clean.txt"))))
        (should (equal '("clean.txt") decoded))))))

(ert-deftest agent-q-files-gzip-is-decompressed ()
  (agent-q-files-test--with-dir dir
    (let ((file (expand-file-name "notes.txt" dir)))
      (agent-q-files-test--write file "compressed text\nline 2\n")
      (should (zerop (call-process "gzip" nil nil nil file)))
      (let ((r (agent-q-files-test--call (agent-q-files-test--registry) "read_file" '(:path "notes.txt.gz"))))
        (should (plist-get r :success))
        (should (string-match-p "(lines 1-2 of 2)\ncompressed text\nline 2\n" (agent-q-files-test--content r)))))))

(ert-deftest agent-q-files-sensitive-matching-follows-the-options-at-once ()
  "The guard's cached forms of its options never answer for older values.
The sensitive patterns are matched as one regexp, and the private places
are looked up once a while: a changed option, or a variable naming a
private file, applies to the very next call."
  (let ((file "/tmp/agent-q-zz/plan-secret-zz.txt"))
    (let ((agent-q-sensitive-file-patterns '("secret-zz")))
      (should (equal (car (agent-q-guard-sensitive-match file)) "secret-zz")))
    (let ((agent-q-sensitive-file-patterns '("other-zz")))
      (should-not (agent-q-guard-sensitive-match file)))
    (let ((agent-q-sensitive-file-patterns nil))
      (should-not (agent-q-guard-sensitive-match file))
      (let ((savehist-file file))
        (should (string-match-p "private" (car (agent-q-guard-sensitive-match file)))))
      (let ((savehist-file "/tmp/agent-q-zz/elsewhere"))
        (should-not (agent-q-guard-sensitive-match file))))))

(provide 'agent-q-files-test)

;;; agent-q-files-test.el ends here
