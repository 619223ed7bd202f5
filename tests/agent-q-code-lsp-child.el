;;; agent-q-code-lsp-child.el --- A user's Emacs running lsp-mode, for a test  -*- lexical-binding: t -*-

;; Copyright (C) 2026 The agent-q authors

;; Author: The agent-q authors
;; Maintainer: The agent-q authors
;; Keywords: tools, languages
;; URL: https://example.invalid/agent-q
;; SPDX-License-Identifier: GPL-3.0-or-later

;; This file is not part of GNU Emacs.

;;; Commentary:

;; What tests/agent-q-code-lsp-test.el runs in a child Emacs: lsp-mode
;; (Debian's elpa-lsp-mode) brings dash, f, s and ht, which would change
;; what the other suites find in the test Emacs.  The child sets up
;; lsp-mode with the pinned pyright as a user would (Debian's lsp-mode
;; has no client for pyright, so one is registered with
;; `lsp-register-client'), starts it for the project given in the
;; environment, calls the code tools through agent-q's executor (or
;; evaluates the forms the test gives), and prints an alist
;; (NAME . RESULT) on standard output, with `sync-requests': lsp-mode's
;; synchronous requests made during the calls.  Exits 2 with a
;; message when lsp-mode is not installed or the server does not start.

;;; Code:

(require 'cl-lib)

;; No native compilation of what it loads in the background.
(dolist (variable '(native-comp-deferred-compilation native-comp-jit-compilation))
  (set variable nil))

(defvar lsp--cur-workspace)
(defvar lsp-session-file)
(defvar lsp-auto-guess-root)
(defvar lsp-client-packages)
(defvar lsp-enable-file-watchers)
(defvar lsp-headerline-breadcrumb-enable)
(defvar lsp-modeline-code-actions-enable)
(defvar lsp-modeline-workspace-status-enable)
(defvar lsp-enable-snippet)
(defvar lsp-keep-workspace-alive)
(defvar lsp-diagnostics-provider)
(defvar agent-q-code-timeout)
(defvar agent-q-code-start-servers)
(defvar agent-q-code-diagnostics-wait)
(declare-function lsp "lsp-mode" (&optional arg))
(declare-function lsp-deferred "lsp-mode" ())
(declare-function lsp-workspaces "lsp-mode" ())
(declare-function lsp--workspace-status "lsp-mode" (workspace))
(declare-function lsp-register-client "lsp-mode" (client))
(declare-function make-lsp-client "lsp-mode")
(declare-function lsp-stdio-connection "lsp-mode" (command &optional test-command))
(declare-function lsp-notify "lsp-mode" (method params))
(declare-function lsp-workspace-shutdown "lsp-mode" (workspace))
(declare-function agent-q-execute-tool-calls "agent-q" (calls))
(declare-function agent-q-register-builtin-tools "agent-q-builtins" ())

(defvar agent-q-code-lsp-child--in-call nil
  "Non-nil while a tool call runs.")

(defvar agent-q-code-lsp-child--sync nil
  "The methods of lsp-mode's synchronous requests made during tool calls.")

(defvar agent-q-code-lsp-child--dir nil
  "The project's directory.")

(defun agent-q-code-lsp-child-call (name &rest arguments)
  "The result of tool NAME called with ARGUMENTS (a plist), synchronously."
  (let ((agent-q-code-lsp-child--in-call t))
    (car (agent-q-execute-tool-calls
          (list (list :id "c" :name name :arguments arguments))))))

(defun agent-q-code-lsp-child-poll (regexp name &rest arguments)
  "The result of tool NAME with ARGUMENTS once its content matches REGEXP.
Asked again every half second, 30 times at most (a server indexing
the project answers nothing until it has)."
  (let ((result nil))
    (dotimes (_ 30)
      (unless (string-match-p regexp (or (plist-get result :content) ""))
        (setq result (apply #'agent-q-code-lsp-child-call name arguments))
        (unless (string-match-p regexp (or (plist-get result :content) ""))
          (sleep-for 0.5))))
    result))

(defun agent-q-code-lsp-child-file (file)
  "The text of FILE (relative to the project) on disk."
  (with-temp-buffer
    (insert-file-contents (expand-file-name file agent-q-code-lsp-child--dir))
    (buffer-string)))

(defun agent-q-code-lsp-child--give-up (format-string &rest args)
  "Print FORMAT-STRING with ARGS and exit with status 2."
  (princ (apply #'format format-string args))
  (kill-emacs 2))

;; Debian's elpa-lsp-mode: its sources, and their byte code compiled for
;; the system's Emacs 28.  Emacs 30 cannot run that byte code (closures
;; made by Emacs 28's dash are lists it no longer calls), so it loads
;; the same sources.
(unless (locate-library "lsp-mode")
  (dolist (dir (file-expand-wildcards (if (< emacs-major-version 29)
                                          "/usr/share/emacs/site-lisp/elpa/*"
                                        "/usr/share/emacs/site-lisp/elpa-src/*")))
    (when (string-match-p "/\\(lsp-mode\\|dash\\|f\\|s\\|ht\\|spinner\\|markdown-mode\\|lv\\)-[0-9]" dir)
      (add-to-list 'load-path dir)
      ;; As package.el and Debian's emacsen-common load them.
      (dolist (autoloads (file-expand-wildcards (expand-file-name "*-autoloads.el" dir)))
        (load autoloads nil t)))))
(unless (require 'lsp-mode nil t)
  (agent-q-code-lsp-child--give-up
   "lsp-mode is not installed: run scripts/ensure-deps.sh --test (Debian's elpa-lsp-mode)"))
(require 'agent-q)
(require 'agent-q-code)

(let* ((dir (getenv "AGENT_Q_CODE_DIR"))
       (program (getenv "AGENT_Q_CODE_PYRIGHT"))
       (default-directory dir)
       (lsp-session-file (expand-file-name ".lsp-session" (getenv "AGENT_Q_CODE_SCRATCH")))
       (lsp-auto-guess-root t)
       (lsp-client-packages nil)
       (lsp-enable-file-watchers nil)
       (lsp-headerline-breadcrumb-enable nil)
       (lsp-modeline-code-actions-enable nil)
       (lsp-modeline-workspace-status-enable nil)
       (lsp-enable-snippet nil)
       (lsp-keep-workspace-alive nil)
       (agent-q-code-timeout 60)
       (agent-q-code-start-servers nil)
       (agent-q-code-diagnostics-wait 30)
       (results nil)
       (workspace nil))
  ;; The user's configuration: pyright's language server, registered as
  ;; lsp-mode's manual shows for a server it has no client for.  Like
  ;; lsp-pyright, it sends the settings once initialized (pyright loads
  ;; no project before that).
  (lsp-register-client
   (make-lsp-client
    :new-connection (lsp-stdio-connection (list program "--stdio"))
    :major-modes '(python-mode python-ts-mode)
    :server-id 'pyright
    :initialized-fn (lambda (workspace)
                      (let ((lsp--cur-workspace workspace))
                        (lsp-notify "workspace/didChangeConfiguration"
                                    (list :settings (make-hash-table)))))))
  ;; As most users start it: once a buffer is shown.
  (add-hook 'python-mode-hook #'lsp-deferred)
  (with-current-buffer (find-file-noselect (expand-file-name "pkg/cells.py" dir))
    (lsp)
    (let ((deadline (+ (float-time) 60)))
      (while (and (not (setq workspace (seq-find (lambda (w) (eq (lsp--workspace-status w) 'initialized))
                                                 (lsp-workspaces))))
                  (< (float-time) deadline))
        (accept-process-output nil 0.1))))
  (unless workspace
    (agent-q-code-lsp-child--give-up "lsp-mode did not start pyright within 60 s"))
  (agent-q-register-builtin-tools)
  ;; lsp-mode's synchronous requests block Emacs: agent-q's calls make
  ;; none (the test checks `sync-requests').
  (dolist (sync '(lsp-request lsp-request-while-no-input))
    (advice-add sync :before (lambda (method &rest _)
                               (when agent-q-code-lsp-child--in-call
                                 (push method agent-q-code-lsp-child--sync)))))
  (setq agent-q-code-lsp-child--dir dir)
  (dolist (call (car (read-from-string (getenv "AGENT_Q_CODE_CALLS"))))
    (pcase-let ((`(,key ,name . ,arguments) call))
      (pcase name
        ('kill
         ;; Make a file one no buffer visits.
         (let ((buffer (find-buffer-visiting (expand-file-name (car arguments) dir))))
           (when buffer (kill-buffer buffer))))
        ('eval
         (push (cons key (eval (car arguments) t)) results))
        ('poll
         (push (cons key (apply #'agent-q-code-lsp-child-poll arguments)) results))
        (_ (push (cons key (apply #'agent-q-code-lsp-child-call name arguments)) results)))))
  (push (cons 'sync-requests agent-q-code-lsp-child--sync) results)
  (ignore-errors (lsp-workspace-shutdown workspace))
  (prin1 (nreverse results)))

(provide 'agent-q-code-lsp-child)

;;; agent-q-code-lsp-child.el ends here
