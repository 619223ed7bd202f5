;;; agent-q-doc-test.el --- The Info manual is found once agent-q is loaded  -*- lexical-binding: t -*-

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

;; Loading agent-q puts its doc/ directory on Info's path: (info
;; "agent-q") opens the built manual (doc/agent-q.info, made by `make
;; info') at its Top node, its chapters are there by name, the
;; directory node that `C-h i' shows lists it through doc/dir, and its
;; index has every user option the Lisp files define.

;;; Code:

(require 'cl-lib)
(require 'ert)
(require 'info)
(require 'agent-q)

(defmacro agent-q-doc-test--in-info (buffer &rest body)
  "Run BODY with BUFFER, a fresh Info buffer, current; kill it afterwards."
  (declare (indent 1))
  `(unwind-protect
       (progn ,@body)
     (when (get-buffer ,buffer)
       (kill-buffer ,buffer))))

(ert-deftest agent-q-doc-info-finds-manual ()
  "(info \"agent-q\") opens the manual in doc/ at its Top node."
  (let ((buffer "*agent-q-doc-test*"))
    (agent-q-doc-test--in-info buffer
      (info "agent-q" buffer)
      (with-current-buffer buffer
        (should (equal Info-current-node "Top"))
        (should (file-equal-p (file-name-directory Info-current-file)
                              agent-q--doc-directory))
        (should (string-match-p "agent-q" (buffer-string)))))))

(ert-deftest agent-q-doc-named-nodes-exist ()
  "The manual's reference chapters exist under the names the README gives."
  (let ((buffer "*agent-q-doc-test*"))
    (agent-q-doc-test--in-info buffer
      (info "agent-q" buffer)
      (with-current-buffer buffer
        (dolist (node '("Installation" "Built-in tools" "Read guard" "Approval rules"
                        "Security" "API" "Values between Emacs and the module"))
          (Info-goto-node node)
          (should (equal Info-current-node node)))))))

(ert-deftest agent-q-doc-dir-lists-manual ()
  "The directory node of `C-h i' has an entry that leads to the manual."
  (let ((buffer "*agent-q-doc-test*"))
    (agent-q-doc-test--in-info buffer
      (info "(dir)Top" buffer)
      (with-current-buffer buffer
        (goto-char (point-min))
        (should (re-search-forward "^\\* agent-q: (agent-q)\\." nil t))
        (Info-menu "agent-q")
        (should (equal Info-current-node "Top"))
        (should (file-equal-p (file-name-directory Info-current-file)
                              agent-q--doc-directory))))))

(defun agent-q-doc-test--options ()
  "The user options that agent-q's Lisp files define, read from the files."
  (let (options)
    (dolist (file (directory-files agent-q--directory t "\\`agent-q.*\\.el\\'"))
      (with-temp-buffer
        (insert-file-contents file)
        (goto-char (point-min))
        (condition-case nil
            (while t
              (let ((form (read (current-buffer))))
                (when (eq (car-safe form) 'defcustom)
                  (push (nth 1 form) options))))
          (end-of-file nil))))
    (sort options #'string<)))

(ert-deftest agent-q-doc-every-option-indexed ()
  "Every user option agent-q defines has an entry in the manual's index."
  (let ((options (agent-q-doc-test--options))
        (buffer "*agent-q-doc-test*"))
    ;; The files define options: an empty list would make the test vacuous.
    (should (memq 'agent-q-approval-idle-delay options))
    (agent-q-doc-test--in-info buffer
      (info "agent-q" buffer)
      (with-current-buffer buffer
        (Info-goto-node "Index")
        (let ((missing
               (cl-remove-if (lambda (option)
                               (save-excursion
                                 (goto-char (point-min))
                                 (re-search-forward
                                  (concat "^\\* " (regexp-quote (symbol-name option))
                                          "\\(?: <[0-9]+>\\)?:")
                                  nil t)))
                             options)))
          (should-not missing))))))

(declare-function agent-q-connect--hook-group "agent-q-connect" (agent))

(ert-deftest agent-q-doc-hook-matchers-are-what-connect-writes ()
  "The manual gives each agent's hook matcher as the connect command writes it.
Every matcher the manual names is one the command writes (Gemini's
AfterTool matcher included), and each agent's appears in that agent's
entry of the list of what it writes."
  (require 'agent-q-connect)
  (let* ((written (append (mapcar (lambda (agent)
                                    (cons agent (alist-get 'matcher
                                                           (agent-q-connect--hook-group agent))))
                                  '(claude gemini codex))
                          ;; After the BeforeTool one, which `alist-get' finds first.
                          (list (cons 'gemini (alist-get 'matcher
                                                         (agent-q-connect--after-tool-group))))))
         (texi (with-temp-buffer
                 (insert-file-contents (expand-file-name "agent-q.texi" agent-q--doc-directory))
                 (buffer-string)))
         (named nil)
         (start 0))
    ;; As the manual writes them: in JSON ("matcher": "...") and in running text
    ;; (matcher @code{...}).
    (while (string-match "\\(?:\"matcher\": \"\\([^\"]+\\)\"\\|matcher[ \n]+@code{\\([^}]+\\)}\\)"
                         texi start)
      (push (or (match-string 1 texi) (match-string 2 texi)) named)
      (setq start (match-end 0)))
    ;; The manual names matchers (else this test would check nothing).
    (should (>= (length named) 3))
    (dolist (matcher named)
      (should (member matcher (mapcar #'cdr written))))
    ;; Each agent's entry in the table of what the gate's connect command writes.
    (let* ((node-start (string-search "@node The agents' own tools\n" texi))
           (node (substring texi node-start (string-search "\n@node " texi (1+ node-start)))))
      (pcase-dolist (`(,agent . ,heading) '((claude . "@item Claude Code\n")
                                            (gemini . "@item Gemini CLI\n")
                                            (codex . "@item Codex CLI\n")))
        (let* ((entry (string-search heading node))
               (end (or (string-search "\n@item " node (1+ entry))
                        (string-search "@end table" node entry))))
          (should entry)
          (should (string-search (format (if (eq agent 'claude)
                                             "\"matcher\": \"%s\""
                                           "matcher @code{%s}")
                                         (alist-get agent written))
                                 (substring node entry end))))))))

(provide 'agent-q-doc-test)

;;; agent-q-doc-test.el ends here
