;;; agent-q-code-rename.el --- rename_symbol: a language server's rename, reviewed  -*- lexical-binding: t -*-

;; Copyright (C) 2026 The agent-q authors

;; Author: The agent-q authors
;; Maintainer: The agent-q authors
;; Keywords: tools, languages
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

;; The rename_symbol tool: the symbol at a location (file, line and
;; column, or a symbol as the other code tools take it) renamed by the
;; language server the user's Emacs runs for it (eglot's
;; textDocument/rename, after textDocument/prepareRename where the
;; server has it), every file of the server's answer shown in ONE hunk
;; review (`agent-q-review-files-async').  The review is the call's
;; approval: exactly the accepted hunks are applied, to the buffer
;; visiting a file, else to the file on disk where the write guard
;; pinned it.  The model is told which hunks of which files were
;; applied and which rejected.
;;
;; The server's WorkspaceEdit is read, its UTF-16 positions applied and
;; the answer worded by the core (`agent-q--core-code-rename-*',
;; crates/agent-q-core/src/code/rename.rs).  A rename that would
;; create, rename or delete files, a file the read guard would ask
;; about (outside the client's roots, sensitive), and Emacs Lisp (which
;; has no language server here) are refused, saying why and what to
;; use instead.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'agent-q-support)
(require 'agent-q-guard)
(require 'agent-q-code)

(declare-function agent-q--core-code-rename-check "agent-q-core" (new-name))
(declare-function agent-q--core-code-rename-files "agent-q-core" (json))
(declare-function agent-q--core-code-rename-apply "agent-q-core" (json file text))
(declare-function agent-q--core-code-rename-report "agent-q-core"
                  (subject new-name source root items cancelled))
(declare-function agent-q-review-files-async "agent-q-review"
                  (files callback &optional client description))
(declare-function agent-q-review-cancel-review "agent-q-review" (review))
(declare-function agent-q-files-current-text "agent-q-files" (file))
(declare-function agent-q-guard-write-verdict "agent-q-guard" (file &optional reason))
(declare-function agent-q--wait-for "agent-q" (predicate))
(declare-function agent-q-tool-fail "agent-q" (format-string &rest args))
(defvar agent-q-call-context)

(defun agent-q-code-rename--guard (args)
  "The guard of rename_symbol on ARGS's \"file\", as propose_file_edit's.
Reading a guarded file is asked first; the file is resolved and pinned
for writing, and a protected one is said so (its review is the user's
answer each time).  The other files the server's rename changes are
checked when the server has answered."
  (let* ((file (agent-q-code--file args))
         (reason (and file (agent-q-guard-file-verdict file))))
    (and file
         (let ((verdict (agent-q-guard-write-verdict
                         file (and reason (concat "rename_symbol must read the file to rename in it: "
                                                  reason)))))
           (if reason (append verdict (list :ask t)) verdict)))))

(defvar agent-q-code-rename--reviewing nil
  "Non-nil while a rename's review is open under the synchronous executor.")

(defun agent-q-code-rename--run (callback worker)
  "Run WORKER, a function of a job, answering CALLBACK.
As `agent-q-code--run', but under the synchronous executor the wait
for the review is a recursive edit, so the user can answer it."
  (if (and (fboundp 'agent-q-async-starting-p) (agent-q-async-starting-p))
      (agent-q-code--run callback worker)
    (let ((cell (list nil))
          (job (agent-q-code--job-create)))
      (setf (agent-q-code--job-callback job)
            (lambda (text &optional status &rest _) (setcar cell (cons status text))))
      (let ((agent-q-code-rename--reviewing nil))
        (condition-case nil
            (progn
              (agent-q-code--guarded job (funcall worker job))
              (while (not (car cell))
                (if agent-q-code-rename--reviewing
                    (agent-q--wait-for (lambda () (car cell)))
                  (accept-process-output nil 0.02))))
          (quit
           (agent-q-code--cancel job)
           (setcar cell (cons :failure "Interrupted by the user (C-g): the rename was cancelled; nothing was changed.")))))
      (funcall callback (cdar cell) (caar cell)))))

(defun agent-q-code-rename-symbol (callback args)
  "Rename the symbol ARGS name to ARGS's new_name; answer CALLBACK.
The language server's rename is reviewed hunk by hunk, all files in
one review, and exactly the accepted hunks are applied."
  (agent-q-code-rename--run
   callback
   (lambda (job)
     (let ((new-name (agent-q-builtins--arg args "new_name"))
           (target (agent-q-code--target args))
           ;; Read now: the review opens later, outside the call's start.
           (client (and (boundp 'agent-q-call-context)
                        (plist-get agent-q-call-context :client))))
       (unless (stringp new-name)
         (agent-q-tool-fail "Invalid arguments: new_name must be a string; nothing was changed"))
       (let ((why (agent-q--core-code-rename-check new-name)))
         (when why (agent-q-tool-fail "Invalid arguments: %s; nothing was changed." why)))
       (when (and (plist-get target :file)
                  (string-match-p "\\.el\\(\\.gz\\)?\\'" (plist-get target :file)))
         (agent-q-code-rename--elisp-refusal))
       (agent-q-code--locate
        job target
        (lambda (found)
          (let ((server (plist-get found :server))
                (buffer (plist-get found :buffer)))
            (cond
             ((and buffer (with-current-buffer buffer (derived-mode-p 'emacs-lisp-mode)))
              (agent-q-code-rename--elisp-refusal))
             ((not (and server (agent-q-code--capable server :renameProvider)))
              (agent-q-code--fail
               job "No language server that renames runs for %s, and rename_symbol needs one (it renames through the server's textDocument/rename; agent-q starts eglot only as agent-q-code-start-servers allows). Nothing was changed; find_references lists the places to change with propose_file_edit."
               (if buffer (buffer-file-name buffer) (plist-get found :subject))))
             (t (agent-q-code-rename--prepare job server buffer
                                              (plist-put found :client client)
                                              new-name))))))))))

(defun agent-q-code-rename--elisp-refusal ()
  "Fail the call: Emacs Lisp is not renamed by rename_symbol."
  (agent-q-tool-fail "rename_symbol renames through a language server, and Emacs Lisp has none here; nothing was changed. Use find_references (agent-q's own analysis of Emacs Lisp: every call and reference in the loaded libraries' sources) and change each place with propose_file_edit."))

(defun agent-q-code-rename--prepare (job server buffer found new-name)
  "Ask SERVER whether FOUND in BUFFER can be renamed, for JOB; then rename.
Only when the server declares prepareRename; its refusal, in its
words, ends the call.  NEW-NAME is the name to give."
  (let ((params (agent-q-code--position-params buffer (plist-get found :point))))
    (agent-q-code--flush buffer)
    (if (not (eq t (agent-q-code--capable server '(:renameProvider :prepareProvider))))
        (agent-q-code-rename--rename job server buffer found new-name params)
      (agent-q-code--request
       job server :textDocument/prepareRename params
       (lambda (result)
         (if (null result)
             (agent-q-code--fail job "%s says there is nothing to rename at %s (textDocument/prepareRename answered null). Nothing was changed."
                                 (agent-q-code--source server) (plist-get found :subject))
           (agent-q-code-rename--rename job server buffer found new-name params)))))))

(defun agent-q-code-rename--rename (job server buffer found new-name params)
  "Ask SERVER to rename FOUND in BUFFER to NEW-NAME for JOB, at PARAMS."
  (agent-q-code--request
   job server :textDocument/rename (append params (list :newName new-name))
   (lambda (result)
     (if (null result)
         (agent-q-code--fail job "%s has nothing to rename at %s (textDocument/rename answered null). Nothing was changed."
                             (agent-q-code--source server) (plist-get found :subject))
       (agent-q-code-rename--review job server buffer found new-name
                                    (json-serialize result))))))

(defun agent-q-code-rename--review (job server buffer found new-name json)
  "Open the one review of the rename JSON (the server's WorkspaceEdit) for JOB.
SERVER renamed FOUND in BUFFER to NEW-NAME."
  (let ((files (agent-q--core-code-rename-files json))
        (root (agent-q-code--root-for buffer))
        (source (agent-q-code--source server)))
    (when (stringp files)
      (agent-q-tool-fail "No rename: %s" files))
    (when (null files)
      (agent-q-tool-fail "%s's rename of %s changes no file. Nothing was changed."
                         source (plist-get found :subject)))
    (let ((parts
           (mapcar
            (lambda (file)
              (when (string-match-p "\\.el\\(\\.gz\\)?\\'" file)
                (agent-q-code-rename--elisp-refusal))
              (let ((reason (agent-q-guard-file-verdict file)))
                (when reason
                  (agent-q-tool-fail "No rename: it would change %s, which agent-q may not read or change without asking: %s. Nothing was changed; rename_symbol changes only files inside the allowed directories (the client's roots), which are not sensitive."
                                     file reason)))
              (let* ((verdict (agent-q-guard-write-verdict file))
                     (current (car (agent-q-files-current-text file))))
                (list :path (file-relative-name file root) :file file
                      :current current
                      :proposal (agent-q--core-code-rename-apply json file current)
                      :protected (and (plist-get verdict :protected) (plist-get verdict :reason))
                      :pinned (plist-get verdict :file))))
            files)))
      (setq agent-q-code-rename--reviewing t)
      (agent-q-code-rename--open-review
       job
       parts
       (lambda (outcome status)
         (agent-q-code--guarded job
           (if (eq status :cancelled)
               (agent-q-code--finish job (format "%s" outcome) :cancelled)
             (if (null (plist-get outcome :files))
                 (agent-q-code--fail job "%s's rename of %s to %s changes nothing in any file. Nothing was changed."
                                     source (plist-get found :subject) new-name)
               (agent-q-code-rename--answer
                job
                (agent-q--core-code-rename-report
                 (plist-get found :subject) new-name source root
                 (mapcar (lambda (o)
                           (vector (plist-get o :file)
                                   (and (plist-get o :target) (symbol-name (plist-get o :target)))
                                   (plist-get o :problem)
                                   (mapcar (lambda (h) (vector (nth 0 h) (nth 1 h) (nth 2 h)))
                                           (plist-get o :hunks))))
                         (plist-get outcome :files))
                 (plist-get outcome :cancelled))
                status (plist-get outcome :files))))))
       (plist-get found :client)
       (format "Rename %s to %s (%s)" (plist-get found :subject) new-name source)))))

(defun agent-q-code-rename--answer (job text status outcomes)
  "Answer JOB with TEXT and STATUS, the review's hunks from OUTCOMES audited.
The executor records which hunks were accepted, edited and rejected,
numbered one after the other across the files as the review shows them."
  (unless (agent-q-code--job-finished job)
    (setf (agent-q-code--job-finished job) t)
    (let ((n 0) accepted edited rejected)
      (dolist (o outcomes)
        (dolist (h (plist-get o :hunks))
          (cl-incf n)
          (pcase (nth 2 h)
            ('accepted (push n accepted))
            ('edited (push n edited))
            (_ (push n rejected)))))
      (if (memq status '(:success :denied))
          (funcall (agent-q-code--job-callback job) text status
                   (list :accepted (nreverse accepted) :edited (nreverse edited)
                         :rejected (nreverse rejected)))
        (funcall (agent-q-code--job-callback job) text status)))))

(defun agent-q-code-rename--open-review (job parts callback client description)
  "Open the review of PARTS for JOB, answering CALLBACK.
A cancelled call closes it (the review opens after the call started,
so the job's cancellation does it).  CLIENT and DESCRIPTION head it."
  (let ((review (agent-q-review-files-async parts callback client description)))
    (when review
      (push (lambda () (agent-q-review-cancel-review review))
            (agent-q-code--job-cancels job)))
    review))

(provide 'agent-q-code-rename)

;;; agent-q-code-rename.el ends here
