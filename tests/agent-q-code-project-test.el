;;; agent-q-code-project-test.el --- Diagnostics of a project's files not visited  -*- lexical-binding: t -*-

;; Copyright (C) 2026 The agent-q authors

;; Author: The agent-q authors
;; Maintainer: The agent-q authors
;; Keywords: tools, languages
;; URL: https://example.invalid/agent-q
;; SPDX-License-Identifier: GPL-3.0-or-later

;; This file is not part of GNU Emacs.

;;; Commentary:

;; `diagnostics' of a whole project with the real pyright that the
;; user's eglot runs: pyright checks open files only, so files no buffer
;; visits are opened to it for the call, as many as
;; `agent-q-code-diagnostics-max-files', and the answer names those not
;; checked and why.  (The same through lsp-mode is in
;; agent-q-code-lsp-test.el.)

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-q-code-test)

(defvar eglot-server-programs)
(defvar eglot-sync-connect)
(declare-function eglot-shutdown "eglot" (server &optional interactive timeout preserve-buffers))

(ert-deftest agent-q-code-project-test-files-not-visited-through-eglot ()
  "An error in a file no buffer visits is reported; the rest is accounted for."
  (agent-q-code-test--require-eglot)
  (let* ((program (agent-q-code-test--server "pyright-langserver"))
         (dir (agent-q-code-test--project))
         (default-directory dir)
         (eglot-server-programs `(((python-mode python-ts-mode) . (,program "--stdio"))))
         (eglot-sync-connect 30)
         (agent-q-code-timeout 60)
         (agent-q-code-diagnostics-wait 30)
         (agent-q-code-start-servers nil)
         (server nil))
    (unwind-protect
        (progn
          (with-current-buffer (find-file-noselect (expand-file-name "pkg/cells.py" dir))
            (setq server (agent-q-code-test--eglot-start)))
          ;; Only cells.py is visited: __init__.py and use.py are not.
          (should-not (find-buffer-visiting (expand-file-name "pkg/use.py" dir)))
          ;; One file at most: the first (git ls-files's order) is opened.
          (let* ((agent-q-code-diagnostics-max-files 1)
                 (answer (agent-q-code-test--content "diagnostics")))
            (should (string-match-p "^Checked: 1 file open in Emacs; 1 file not visited, opened to a language server for this call\\.$" answer))
            (should (string-match-p "^Not checked (1 file): beyond the 1 files opened to a language server per call (agent-q-code-diagnostics-max-files): pkg/use.py$" answer))
            (should-not (string-match-p "undefined_name" answer)))
          ;; Every file: use.py's error is found, and asked again, found again
          ;; (the empty report pyright sends when a file is closed is not
          ;; taken for a check).
          (dotimes (_ 2)
            (let ((answer (agent-q-code-test--content "diagnostics")))
              (should (string-match-p "(source: .*eglot: [Pp]yright[-a-z]* (files not visited, opened for this call)" answer))
              (should (string-match-p "^pkg/use.py:7:26: error \\[[Pp]yright reportUndefinedVariable\\]: \"undefined_name\" is not defined$" answer))
              (should (string-match-p "^Checked: 1 file open in Emacs; 2 files not visited, opened to a language server for this call\\.$" answer))
              (should (string-match-p "^Not checked (1 file): no running language server takes them: pyrightconfig.json$" answer))))
          ;; Opening them to the server made no buffer.
          (should-not (find-buffer-visiting (expand-file-name "pkg/use.py" dir))))
      (when (and server (jsonrpc-running-p server))
        (ignore-errors (eglot-shutdown server)))
      (agent-q-code-test--kill dir))))

(ert-deftest agent-q-code-project-test-files-of-a-project-without-git ()
  "A project that is not a Git work tree is listed by a process, not waited for.
The listing comes after the call returned (Emacs was not held while
the tree was walked), holds every file, and leaves out what
`project-ignores' names (a version-control directory)."
  (let* ((dir (file-name-as-directory (file-truename (make-temp-file "agent-q-code-nogit" t))))
         (project-find-functions
          (list (lambda (d) (and (string-prefix-p dir (file-truename d)) (cons 'transient dir)))))
         (files (mapcar (lambda (name) (agent-q-code-test--write dir name "x = 1\n"))
                        '("a.py" "pkg/b.py" "pkg/deep/c.py" "name with space.py")))
         (job (agent-q-code--job-create :callback #'ignore))
         (listed 'pending))
    (unwind-protect
        (progn
          (agent-q-code-test--write dir ".svn/entries" "ignored\n")
          (should (equal (project-current nil dir) (cons 'transient dir)))
          (should (member ".svn/" (project-ignores (project-current nil dir) dir)))
          (agent-q-code--project-files job dir (lambda (found) (setq listed found)))
          ;; Not listed yet: the call returned before the walk ended.
          (should (eq listed 'pending))
          (let ((deadline (+ (float-time) 30)))
            (while (and (eq listed 'pending) (< (float-time) deadline))
              (accept-process-output nil 0.05)))
          (should (equal (sort (copy-sequence listed) #'string<)
                         (sort (copy-sequence files) #'string<))))
      (agent-q-code--cancel job)
      (delete-directory dir t))))

(provide 'agent-q-code-project-test)

;;; agent-q-code-project-test.el ends here
