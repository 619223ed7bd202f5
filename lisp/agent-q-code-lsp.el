;;; agent-q-code-lsp.el --- The code tools through the user's lsp-mode  -*- lexical-binding: t -*-

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

;; lsp-mode as a client of the code-intelligence tools
;; (agent-q-code.el): when the user's Emacs runs lsp-mode for a
;; project, its workspaces (one per language server) answer, and
;; agent-q starts no server of its own.  Requests go through
;; lsp-mode's asynchronous `lsp-request-async' with
;; `agent-q-code-timeout' (never its synchronous `lsp-request', which
;; blocks Emacs); answers are labelled "lsp-mode: SERVER-ID";
;; diagnostics come from lsp-mode's own store (what the servers
;; published, visited or not).
;;
;; lsp-mode is not required: this file only talks to it once it is
;; loaded.  lsp-mode parses JSON into hash tables (unless it was built
;; with `lsp-use-plists'); the answers are turned into plists, as
;; eglot gives them, before the shared code reads them.

;;; Code:

(require 'cl-lib)
(require 'seq)
(require 'subr-x)

(declare-function lsp-request-async "lsp-mode" (method params callback &rest args))
(declare-function lsp-cancel-request-by-token "lsp-mode" (cancel-token))
(declare-function lsp-notify "lsp-mode" (method params))
(declare-function lsp-workspaces "lsp-mode" ())
(declare-function lsp-session "lsp-mode" ())
(declare-function lsp--session-workspaces "lsp-mode" (session))
(declare-function lsp--workspace-p "lsp-mode" (object))
(declare-function lsp--workspace-root "lsp-mode" (workspace))
(declare-function lsp--workspace-status "lsp-mode" (workspace))
(declare-function lsp--workspace-client "lsp-mode" (workspace))
(declare-function lsp--workspace-diagnostics "lsp-mode" (workspace))
(declare-function lsp--client-server-id "lsp-mode" (client))
(declare-function lsp--client-major-modes "lsp-mode" (client))
(declare-function lsp--client-activation-fn "lsp-mode" (client))
(declare-function lsp--capability "lsp-mode" (cap &optional capabilities))
(declare-function lsp--flush-delayed-changes "lsp-mode" ())
(declare-function lsp-buffer-language "lsp-mode" ())
(declare-function lsp "lsp-mode" (&optional arg))
(declare-function lsp--log-entry-type "lsp-mode" (entry))
(declare-function lsp--log-entry-id "lsp-mode" (entry))
(declare-function agent-q-code--capability "agent-q-code" (capabilities capability))
(defvar lsp--cur-workspace)
(defvar agent-q-code--uncancelled)
(defvar lsp-mode)

(defconst agent-q-code-lsp--max-depth 64
  "How deep an answer of a server is turned into plists; deeper is dropped.")

(defun agent-q-code-lsp--plists (value &optional depth)
  "VALUE, an answer as lsp-mode parsed it, with its objects as plists.
Objects (hash tables with string keys) become plists with keyword
keys, as eglot gives them; arrays stay vectors.  Below DEPTH
`agent-q-code-lsp--max-depth' levels, an object or array is nil."
  (let ((depth (or depth 0)))
    (cond
     ((hash-table-p value)
      (and (< depth agent-q-code-lsp--max-depth)
           (let ((plist nil))
             (maphash (lambda (key v)
                        (push (if (keywordp key) key (intern (concat ":" (format "%s" key))))
                              plist)
                        (push (agent-q-code-lsp--plists v (1+ depth)) plist))
                      value)
             (nreverse plist))))
     ((vectorp value)
      (and (< depth agent-q-code-lsp--max-depth)
           (cl-map 'vector (lambda (v) (agent-q-code-lsp--plists v (1+ depth))) value)))
     ((and (consp value) (keywordp (car value)))
      ;; lsp-mode built with `lsp-use-plists': already a plist.
      (and (< depth agent-q-code-lsp--max-depth)
           (cl-loop for (key v) on value by #'cddr
                    append (list key (agent-q-code-lsp--plists v (1+ depth))))))
     ((consp value)
      ;; lsp-mode merges the answers of several servers into a list.
      (and (< depth agent-q-code-lsp--max-depth)
           (mapcar (lambda (v) (agent-q-code-lsp--plists v (1+ depth))) value)))
     (t value))))

(defun agent-q-code-lsp--method (method)
  "METHOD (a keyword or a string) as lsp-mode names it: a string."
  (if (keywordp method) (substring (symbol-name method) 1) method))

(defun agent-q-code-lsp--owns (object)
  "Non-nil if OBJECT is an lsp-mode workspace (a running server)."
  (and (featurep 'lsp-mode) (lsp--workspace-p object)))

(defun agent-q-code-lsp--live-p (workspace)
  "Non-nil if WORKSPACE's server is initialized."
  (eq (ignore-errors (lsp--workspace-status workspace)) 'initialized))

(defun agent-q-code-lsp--buffer-server (buffer)
  "The lsp-mode workspace managing BUFFER, or nil."
  (and (featurep 'lsp-mode)
       (buffer-local-value 'lsp-mode buffer)
       (with-current-buffer buffer
         (seq-find #'agent-q-code-lsp--live-p (ignore-errors (lsp-workspaces))))))

(defun agent-q-code-lsp--project-servers (root)
  "The lsp-mode workspaces running for the project at ROOT.
Those whose root is ROOT, inside it or holding it."
  (and (featurep 'lsp-mode)
       (let ((root (file-name-as-directory (file-truename root))))
         (seq-filter
          (lambda (workspace)
            (let ((dir (ignore-errors (lsp--workspace-root workspace))))
              (and (stringp dir)
                   (agent-q-code-lsp--live-p workspace)
                   (let ((dir (file-name-as-directory (file-truename dir))))
                     (or (string-prefix-p dir root) (string-prefix-p root dir))))))
          (ignore-errors (lsp--session-workspaces (lsp-session)))))))

(defun agent-q-code-lsp--source (workspace)
  "How an answer names WORKSPACE: \"lsp-mode: SERVER-ID\"."
  (format "lsp-mode: %s"
          (or (ignore-errors (lsp--client-server-id (lsp--workspace-client workspace)))
              "language server")))

(defun agent-q-code-lsp--capable (workspace capability)
  "Non-nil if WORKSPACE's server declares CAPABILITY.
CAPABILITY is a keyword, or a list of keywords: a path into nested
options, such as (:renameProvider :prepareProvider)."
  (let* ((path (if (listp capability) capability (list capability)))
         (lsp--cur-workspace workspace)
         (value (ignore-errors (lsp--capability (car path)))))
    (agent-q-code--capability (list (car path) (agent-q-code-lsp--plists value)) path)))

(defun agent-q-code-lsp--error-message (error)
  "The message of ERROR, a ResponseError as lsp-mode passes it."
  (let ((error (agent-q-code-lsp--plists error)))
    (format "%s" (or (and (listp error) (plist-get error :message)) error))))

(defvar agent-q-code-lsp--unlogged nil
  "The ids of agent-q's requests whose answers lsp-mode does not log.
Newest first, at most 100: ids whose answers never came are forgotten.")

(defun agent-q-code-lsp--log-entry (log entry workspace)
  "Call LOG with ENTRY and WORKSPACE unless ENTRY is an answer to agent-q.
An :around advice of `lsp--log-entry-new': with `lsp-log-io' on,
lsp-mode pretty-prints each message into its log buffer on Emacs's
main loop; the answers of the code tools' requests (whole-file
outlines, hundreds of references) are left out.  What agent-q sends,
and its cancellations, are logged."
  (let ((id (and (eq (ignore-errors (lsp--log-entry-type entry)) 'incoming-resp)
                 (ignore-errors (lsp--log-entry-id entry)))))
    (if (and id (memql id agent-q-code-lsp--unlogged))
        (setq agent-q-code-lsp--unlogged (delq id agent-q-code-lsp--unlogged))
      (funcall log entry workspace))))

(defun agent-q-code-lsp--unlog (id)
  "Keep the answer to agent-q's request ID out of lsp-mode's io log."
  (when (integerp id)
    (unless (advice-member-p #'agent-q-code-lsp--log-entry 'lsp--log-entry-new)
      (advice-add 'lsp--log-entry-new :around #'agent-q-code-lsp--log-entry))
    (setq agent-q-code-lsp--unlogged (cons id (seq-take agent-q-code-lsp--unlogged 99)))))

(defun agent-q-code-lsp-unload-function ()
  "Remove the advice of lsp-mode's functions when this file is unloaded."
  (advice-remove 'lsp--log-entry-new #'agent-q-code-lsp--log-entry)
  (advice-remove 'lsp--on-diagnostics #'agent-q-code-lsp--note-report)
  nil)

(defun agent-q-code-lsp--request (workspace method params timeout success error expired)
  "Ask WORKSPACE's server METHOD with PARAMS, asynchronously.
SUCCESS gets the result as plists, ERROR a message; EXPIRED is
called after TIMEOUT seconds and the request cancelled.  Return a
function that cancels it (but for `agent-q-code--uncancelled').
This is lsp-mode's `lsp-request-async' (never its synchronous
`lsp-request'); the answer is not written to lsp-mode's io log
\(`agent-q-code-lsp--log-entry')."
  (let* ((token (make-symbol "agent-q-code"))
         (done nil)
         (timer nil)
         (finish (lambda () (setq done t) (when timer (cancel-timer timer))))
         (cancel (lambda ()
                   (unless (member (agent-q-code-lsp--method method) agent-q-code--uncancelled)
                     (ignore-errors (lsp-cancel-request-by-token token))))))
    (condition-case err
        (let* ((lsp--cur-workspace workspace)
               (sent
                (lsp-request-async
                 (agent-q-code-lsp--method method) params
                 (lambda (result)
                   (unless done
                     (funcall finish)
                     (funcall success (agent-q-code-lsp--plists result))))
                 :mode 'detached
                 :cancel-token token
                 :error-handler (lambda (response)
                                  (unless done
                                    (funcall finish)
                                    (funcall error (agent-q-code-lsp--error-message response)))))))
          (agent-q-code-lsp--unlog (and (listp sent) (plist-get sent :id)))
          (setq timer (run-with-timer
                       timeout nil
                       (lambda ()
                         (unless done
                           (setq done t)
                           (funcall cancel)
                           (funcall expired))))))
      (error
       (setq done t)
       (funcall error (error-message-string err))))
    (lambda ()
      (unless done
        (funcall finish)
        (funcall cancel)))))

(defun agent-q-code-lsp--notify (workspace method params)
  "Send WORKSPACE's server the notification METHOD with PARAMS."
  (let ((lsp--cur-workspace workspace))
    (lsp-notify (agent-q-code-lsp--method method) params)))

(defun agent-q-code-lsp--flush (buffer)
  "Send BUFFER's edits that lsp-mode delays to its servers."
  (with-current-buffer buffer
    (when (and (bound-and-true-p lsp-mode) (fboundp 'lsp--flush-delayed-changes))
      (lsp--flush-delayed-changes))))

(defun agent-q-code-lsp--language (workspace mode file)
  "The languageId of FILE in MODE, when WORKSPACE's server takes it, else nil.
As lsp-mode decides for a buffer: the client's major modes, else its
activation function, with `lsp-buffer-language'."
  (with-temp-buffer
    (let* ((major-mode mode)
           (buffer-file-name file)
           (client (ignore-errors (lsp--workspace-client workspace)))
           (modes (and client (lsp--client-major-modes client)))
           (activation (and client (lsp--client-activation-fn client))))
      (and client
           (if modes
               (memq mode modes)
             (and (functionp activation)
                  (ignore-errors (funcall activation file mode))))
           (ignore-errors (lsp-buffer-language))))))

(defun agent-q-code-lsp--attach (buffer)
  "Have a running lsp-mode server of BUFFER's project manage BUFFER.
Only when one runs for the project and takes the buffer's language:
`lsp' then connects the buffer to it, and starts no server.  A user's
`lsp-deferred' would wait until the buffer is shown."
  (when (and (featurep 'lsp-mode) (fboundp 'lsp)
             (not (buffer-local-value 'lsp-mode buffer)))
    (with-current-buffer buffer
      (let ((file (buffer-file-name)))
        ;; Only a workspace whose folder holds the file: for another,
        ;; lsp-mode would ask the user for the file's project root.
        (when (and file
                   (seq-some (lambda (workspace)
                               (and (string-prefix-p
                                     (file-name-as-directory
                                      (file-truename (lsp--workspace-root workspace)))
                                     (file-truename file))
                                    (agent-q-code-lsp--language workspace major-mode file)))
                             (agent-q-code-lsp--project-servers (file-name-directory file))))
          (lsp))))))

(defvar agent-q-code-lsp--reports (make-hash-table :test #'equal)
  "Files mapped to a cons made anew each time a server published for them.")

(defun agent-q-code-lsp--note-report (_workspace params)
  "Note that a server published diagnostics PARAMS.
After `lsp--on-diagnostics'."
  (let* ((params (agent-q-code-lsp--plists params))
         (uri (and (listp params) (plist-get params :uri))))
    (when (stringp uri)
      (puthash (agent-q-code--uri-to-file uri) (list (float-time)) agent-q-code-lsp--reports))))

(declare-function agent-q-code--uri-to-file "agent-q-code" (uri))
(declare-function agent-q-code--lsp-diagnostic-items "agent-q-code" (file diagnostics))

(defun agent-q-code-lsp--published (workspace file)
  "What WORKSPACE's server last published for FILE: see `agent-q-code-backend'."
  (unless (advice-member-p #'agent-q-code-lsp--note-report 'lsp--on-diagnostics)
    (advice-add 'lsp--on-diagnostics :after #'agent-q-code-lsp--note-report))
  (or (gethash file agent-q-code-lsp--reports)
      ;; Reported before agent-q watched.
      (and (gethash file (lsp--workspace-diagnostics workspace)) 'stored)))

(defun agent-q-code-lsp--diagnostics (workspace file)
  "The diagnostics WORKSPACE's server published for FILE, as items."
  (let ((diagnostics (gethash file (lsp--workspace-diagnostics workspace))))
    (and diagnostics
         (agent-q-code--lsp-diagnostic-items
          file (mapcar #'agent-q-code-lsp--plists diagnostics)))))

(provide 'agent-q-code-lsp)

;;; agent-q-code-lsp.el ends here
