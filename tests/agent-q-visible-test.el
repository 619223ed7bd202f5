;;; agent-q-visible-test.el --- Hidden characters are shown as escapes wherever agent-q shows a client's text  -*- lexical-binding: t -*-

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

;; The rule is the module's (`agent-q--core-visible', src/visible.rs, with
;; its cargo tests); these tests check it through the real module and
;; every place that shows what a model or a client chose: the audit
;; file and the log buffer (a real call through the executor), the
;; review buffer's header (a real review of a real file), the MCP
;; client's label and the list of pending calls.  The prompt and `v'
;; are tested in agent-q-prompt-test.el and, in a terminal,
;; agent-q-prompt-tmux-test.el.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'json)
(require 'agent-q)

(defconst agent-q-visible-test--hidden
  "[\0-\t\v-\37\177-\237\u061c\u200b-\u200f\u2028-\u202e\u2060\u2066-\u2069\ufeff]"
  "A regexp matching one character that must never be shown raw (newline apart).")

(ert-deftest agent-q-visible-test-the-rule-through-the-module ()
  (should (equal (agent-q--visible "a\u202eb\u2066c\u200bd\ne\tf\u0085g\u007fh\u2028i\ufeffj")
                 "a\\u202Eb\\u2066c\\u200Bd\\ne\\tf\\u0085g\\u007Fh\\u2028i\\uFEFFj"))
  ;; Ordinary text, wide characters and backslashes are unchanged.
  (should (equal (agent-q--visible "café 日本 \\n") "café 日本 \\n"))
  ;; Raw bytes, and text properties, never stop it.
  (should (equal (agent-q--visible (string-to-unibyte "a\351b")) "a\\351b"))
  (should-not (text-properties-at 0 (agent-q--visible (propertize "x" 'face 'bold)))))

(ert-deftest agent-q-visible-test-the-audit-file-and-the-log-buffer ()
  (let* ((registry (agent-q-make-registry))
         (agent-q-audit-file (make-temp-file "agent-q-visible-audit" nil ".jsonl"))
         (agent-q-tool-execution-functions nil)
         (path "/tmp/hi\u202e \u2066txt.exe\u2069\u200b\nsecond line")
         (agent-q-client "evil\u202e (MCP)"))
    (unwind-protect
        (progn
          (agent-q-register-tool
           (agent-q-define-tool "visible_tweak" "Cautious." '((:name "path" :type :string))
                                :safety-level :cautious :handler (lambda (_) "done"))
           registry)
          (when (get-buffer agent-q-log-buffer-name) (kill-buffer agent-q-log-buffer-name))
          (should (plist-get (car (agent-q-execute-tool-calls
                                   `((:id "v1" :name "visible_tweak" :arguments (:path ,path)))
                                   registry))
                             :success))
          (let ((text (with-temp-buffer
                        (insert-file-contents agent-q-audit-file)
                        (buffer-string))))
            ;; Two records, one line each, nothing hidden, escapes as JSON writes them.
            (should (= (length (split-string text "\n" t)) 2))
            (should-not (string-match-p agent-q-visible-test--hidden text))
            (should (string-match-p (regexp-quote "hi\\u202e \\u2066txt.exe\\u2069\\u200b\\nsecond line")
                                    text))
            ;; A JSON reader gets the very strings back.
            (let ((record (json-parse-string (car (split-string text "\n" t)) :object-type 'alist)))
              (should (equal (alist-get 'path (alist-get 'arguments record)) path))
              (should (equal (alist-get 'client record) agent-q-client))))
          (with-current-buffer agent-q-log-buffer-name
            (should-not (string-match-p agent-q-visible-test--hidden (buffer-string)))
            (should (string-match-p (regexp-quote "(from evil\\u202E (MCP))") (buffer-string)))
            ;; One line for the call, when it ended.
            (should (= (count-lines (point-min) (point-max)) 1))))
      (delete-file agent-q-audit-file))))

(ert-deftest agent-q-visible-test-the-review-header ()
  (let ((file (make-temp-file "agent-q-visible-review" nil ".txt" "one\ntwo\n"))
        (header nil))
    (unwind-protect
        (let ((agent-q-review--review-driver
               (lambda (buffer)
                 (with-current-buffer buffer
                   (setq header (buffer-substring-no-properties
                                 (point-min) (save-excursion (goto-char (point-min))
                                                             (forward-line 3) (point))))
                   (agent-q-review-cancel)))))
          (agent-q-review-edit file "one\ntwo\n" "one\n2\n"
                                     "Fix\u202e the \u2066typo\nFile: /etc/passwd")
          (should-not (string-match-p agent-q-visible-test--hidden
                                      (replace-regexp-in-string "\n" "" header)))
          (should (string-match-p
                   (regexp-quote "Description: Fix\\u202E the \\u2066typo\\nFile: /etc/passwd\n")
                   header))
          ;; The description did not add a header line of its own.
          (should (string-match-p "\\`File: [^\n]*\nDescription: [^\n]*\nKeys: " header)))
      (when-let ((b (find-buffer-visiting file)))
        (kill-buffer b))
      (delete-file file))))

(ert-deftest agent-q-visible-test-mcp-client-label ()
  ;; Zero-width characters have no width: cleaned first, they can no
  ;; longer slip past the cut at 60 columns.
  (let ((label (agent-q-mcp--client-label
                (concat "claude-code" (make-string 200 #x200b) "\u202e\u2066 2.1\n" (make-string 200 ?x)))))
    (should-not (string-match-p agent-q-visible-test--hidden label))
    (should (string-prefix-p "claude-code\\u200B" label))
    (should (string-suffix-p "... (MCP)" label))
    (should (<= (string-width label) 66)))
  (should (equal (agent-q-mcp--client-label "gemini\u2069\u2060 0.6") "gemini\\u2069\\u2060 0.6 (MCP)"))
  (should (equal (agent-q-mcp--client-label "  ") "unknown (MCP)")))

(ert-deftest agent-q-visible-test-pending-list ()
  (let ((agent-q--pending
         (list (agent-q--pending-create :tool "write_file" :state 'queued
                                        :args '(:path "/tmp/a\u202eb" :content "x\ny")
                                        :context '(:client "c\u2066 (MCP)")))))
    (let ((row (cadr (car (agent-q--pending-entries)))))
      (should (equal (aref row 1) "c\\u2066 (MCP)"))
      (should (string-match-p (regexp-quote "/tmp/a\\u202Eb") (aref row 5)))
      (should (string-match-p (regexp-quote "x\\ny") (aref row 5)))
      (should-not (string-match-p agent-q-visible-test--hidden
                                  (mapconcat #'identity (append row nil) ""))))))

(provide 'agent-q-visible-test)

;;; agent-q-visible-test.el ends here
