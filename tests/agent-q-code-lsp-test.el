;;; agent-q-code-lsp-test.el --- The code tools through lsp-mode  -*- lexical-binding: t -*-

;; Copyright (C) 2026 The agent-q authors

;; Author: The agent-q authors
;; Maintainer: The agent-q authors
;; Keywords: tools, languages
;; URL: https://example.invalid/agent-q
;; SPDX-License-Identifier: GPL-3.0-or-later

;; This file is not part of GNU Emacs.

;;; Commentary:

;; The code-intelligence tools answering from the real pyright that the
;; user's lsp-mode runs (Debian's elpa-lsp-mode 8.0.0, on Emacs 28 and
;; on Emacs 30, which loads the same package).  lsp-mode brings dash, f,
;; s and ht, which would change what other suites find, so the user's
;; Emacs is a child Emacs (tests/agent-q-code-lsp-child.el) of the same
;; version as the one running the tests; it prints the tools' results.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-q-code-test)

(defconst agent-q-code-lsp-test--child
  (expand-file-name "agent-q-code-lsp-child.el"
                    (file-name-directory (or load-file-name buffer-file-name)))
  "The script of the child Emacs.")

(defun agent-q-code-lsp-test--run (dir script)
  "Run SCRIPT in a child Emacs with lsp-mode and pyright for DIR.
SCRIPT is a list of (KEY TOOL . ARGUMENTS), a tool's call, and of
\(KEY kill FILE), to kill FILE's buffer.  Return the alist (KEY . RESULT)
the child prints."
  (let* ((pyright (agent-q-code-test--server "pyright-langserver"))
         (scratch (make-temp-file "agent-q-code-lsp" t))
         (process-environment
          (append (list (concat "AGENT_Q_CODE_DIR=" dir)
                        (concat "AGENT_Q_CODE_SCRATCH=" scratch)
                        (concat "AGENT_Q_CODE_PYRIGHT=" pyright)
                        (concat "AGENT_Q_CODE_CALLS=" (prin1-to-string script)))
                  process-environment)))
    (unwind-protect
        (with-temp-buffer
          (let ((status (call-process
                         "timeout" nil (list t nil) nil "300"
                         (expand-file-name invocation-name invocation-directory)
                         "--batch" "-Q"
                         "-L" (file-name-directory (locate-library "agent-q"))
                         "-l" agent-q-code-lsp-test--child)))
            (unless (eq status 0)
              (ert-fail (list "The child Emacs failed" status (buffer-string))))
            (car (read-from-string (buffer-string)))))
      (delete-directory scratch t))))

(defun agent-q-code-lsp-test--content (results key)
  "The content of the successful result KEY in RESULTS."
  (let ((result (cdr (assq key results))))
    (unless (plist-get result :success)
      (ert-fail (format "%s failed: %S" key result)))
    (plist-get result :content)))

(ert-deftest agent-q-code-lsp-test-pyright-through-lsp-mode ()
  "Every tool answers from the real pyright that the user's lsp-mode runs."
  (let ((dir (agent-q-code-test--project)))
    (unwind-protect
        (let ((results
               (agent-q-code-lsp-test--run
                dir
                '((refs "find_references" :file "pkg/cells.py" :line 4 :column 5)
                  (by-name "find_definition" :symbol "Console/print" :file "pkg/cells.py")
                  (outline "file_outline" :file "pkg/cells.py")
                  (type "type_at" :file "pkg/cells.py" :line 4 :column 6)
                  ;; A file no buffer visits: opened for the call, and
                  ;; lsp-mode (started by `lsp-deferred') asked to manage it.
                  (diagnostics "diagnostics" :file "pkg/use.py")
                  (_ kill "pkg/use.py")
                  (by-use "find_definition" :file "pkg/use.py" :line 7 :column 12)))))
          (let ((answer (agent-q-code-lsp-test--content results 'refs)))
            (should (string-match-p "^References to pkg/cells.py:4:5 (cell_len): 5 references (source: lsp-mode: pyright):$" answer))
            (should (string-match-p "^pkg/cells.py:4:5: def cell_len(text: str) -> int:  \\[declaration\\]$" answer))
            (should (string-match-p "^pkg/cells.py:11:16: return cell_len(text)  \\[in Console.print\\]$" answer))
            (should (string-match-p "^pkg/use.py:1:23: from pkg.cells import cell_len$" answer))
            ;; After the emoji (two UTF-16 units), the column is in characters.
            (should (string-match-p "^pkg/use.py:3:18: EMOJI = " answer))
            (should (string-match-p "^pkg/use.py:7:12: return cell_len(a) \\+ undefined_name  \\[in total\\]$" answer)))
          (let ((answer (agent-q-code-lsp-test--content results 'by-name)))
            (should (string-match-p "^Definition of Console/print: 1 location (source: lsp-mode: pyright):\npkg/cells.py:10:9: def print(self, text: str) -> int:$" answer)))
          (let ((answer (agent-q-code-lsp-test--content results 'by-use)))
            (should (string-match-p "(source: lsp-mode: pyright)" answer))
            (should (string-match-p "^pkg/cells.py:4:5: def cell_len" answer)))
          (let ((answer (agent-q-code-lsp-test--content results 'outline)))
            (should (string-match-p "(source: lsp-mode: pyright)" answer))
            (should (string-match-p "^function cell_len (lines 4-6)$" answer))
            (should (string-match-p "^class Console (lines 9-11)\n  method print (lines 10-11)$" answer)))
          (let ((answer (agent-q-code-lsp-test--content results 'type)))
            (should (string-match-p "^Type at pkg/cells.py:4:6 (cell_len) (source: lsp-mode: pyright):$" answer))
            (should (string-match-p "def cell_len(\n?\\s-*text: str\n?) -> int" answer)))
          (let ((answer (agent-q-code-lsp-test--content results 'diagnostics)))
            (should (string-match-p "(source: lsp-mode: pyright)" answer))
            (should (string-match-p "^pkg/use.py:7:26: error \\[[Pp]yright reportUndefinedVariable\\]: \"undefined_name\" is not defined$" answer))))
      (agent-q-code-test--kill dir))))

(provide 'agent-q-code-lsp-test)

;;; agent-q-code-lsp-test.el ends here
