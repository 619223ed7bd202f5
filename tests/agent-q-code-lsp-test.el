;;; agent-q-code-lsp-test.el --- The code tools through lsp-mode  -*- lexical-binding: t -*-

;; Copyright (C) 2026 The agent-q authors

;; Author: The agent-q authors
;; Maintainer: The agent-q authors
;; Keywords: tools, languages
;; URL: https://example.invalid/agent-q
;; SPDX-License-Identifier: GPL-3.0-or-later

;; This file is not part of GNU Emacs.

;;; Commentary:

;; The code-intelligence tools with the user's packages that bring dash:
;; answering from the real pyright that the user's lsp-mode runs
;; (Debian's elpa-lsp-mode 8.0.0, on Emacs 28 and on Emacs 30, which
;; loads the same package's sources), and from Flycheck (Debian's
;; elpa-flycheck).  dash, f, s and ht would change what other suites
;; find, so the user's Emacs is a child Emacs (for lsp-mode,
;; tests/agent-q-code-lsp-child.el) of the same version as the one
;; running the tests; it prints the tools' results.

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
                  ;; The project: use.py, not visited, is opened to the server.
                  (project "diagnostics")
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
            (should (string-match-p "^pkg/use.py:7:26: error \\[[Pp]yright reportUndefinedVariable\\]: \"undefined_name\" is not defined$" answer)))
          (let ((answer (agent-q-code-lsp-test--content results 'project)))
            (should (string-match-p "lsp-mode: pyright (files not visited, opened for this call)" answer))
            (should (string-match-p "^pkg/use.py:7:26: error \\[[Pp]yright reportUndefinedVariable\\]: \"undefined_name\" is not defined$" answer))
            (should (string-match-p "^Checked: 1 file open in Emacs; 2 files not visited, opened to a language server for this call\\.$" answer))
            (should (string-match-p "^Not checked (1 file): no running language server takes them: pyrightconfig.json$" answer))))
      (agent-q-code-test--kill dir))))

;;;; Flycheck

;; Flycheck (Debian's elpa-flycheck) brings dash too: it runs in a child
;; Emacs, with a checker of the test's own and Flycheck's real machinery.

(defconst agent-q-code-lsp-test--flycheck-script
  '(progn
     (unless (locate-library "flycheck")
       (dolist (dir (file-expand-wildcards "/usr/share/emacs/site-lisp/elpa/*"))
         (when (string-match-p "/\\(flycheck\\|dash\\|let-alist\\|pkg-info\\|epl\\)-[0-9]" dir)
           (add-to-list 'load-path dir))))
     (unless (require 'flycheck nil t)
       (princ "Flycheck is not installed: run scripts/ensure-deps.sh --test (Debian's elpa-flycheck)")
       (kill-emacs 2))
     (require 'agent-q)
     (require 'agent-q-code)
     (flycheck-define-generic-checker 'agent-q-code-test-checker
       "A checker that finds \"gamma\" suspect and \"delta\" wrong."
       :start (lambda (checker callback)
                (funcall callback 'finished
                         (list (flycheck-error-new-at 2 6 'warning "gamma is suspect"
                                                      :checker checker :id "G1")
                               (flycheck-error-new-at 3 1 'error "delta is wrong"
                                                      :checker checker))))
       :modes '(text-mode fundamental-mode))
     (let* ((dir (file-name-as-directory (make-temp-file "agent-q-code-flycheck" t)))
            (file (expand-file-name "notes.txt" dir))
            (agent-q-allowed-directories (list dir))
            (default-directory dir))
       (with-temp-file file (insert "alpha\nbeta gamma\ndelta\n"))
       (with-current-buffer (find-file-noselect file)
         (setq-local flycheck-checkers '(agent-q-code-test-checker))
         (flycheck-mode 1)
         (flycheck-buffer)
         (let ((deadline (+ (float-time) 30)))
           (while (and (null flycheck-current-errors) (< (float-time) deadline))
             (accept-process-output nil 0.05))))
       (agent-q-register-builtin-tools)
       (prin1 (list (car (agent-q-execute-tool-calls
                          (list (list :id "c" :name "diagnostics" :arguments (list :file file)))))
                    (car (agent-q-execute-tool-calls
                          (list (list :id "c" :name "diagnostics" :arguments nil))))))
       (delete-directory dir t)))
  "What the child Emacs runs: it prints the two diagnostics results.")

(ert-deftest agent-q-code-lsp-test-flycheck-diagnostics ()
  "Flycheck's errors of a buffer are a source of diagnostics, labelled so."
  (with-temp-buffer
    (let ((status (call-process "timeout" nil (list t nil) nil "120"
                                (expand-file-name invocation-name invocation-directory)
                                "--batch" "-Q"
                                "-L" (file-name-directory (locate-library "agent-q"))
                                "--eval" (prin1-to-string agent-q-code-lsp-test--flycheck-script))))
      (unless (eq status 0)
        (ert-fail (list "The child Emacs failed" status (buffer-string))))
      (pcase-let ((`(,file-result ,project-result) (car (read-from-string (buffer-string)))))
        (should (plist-get file-result :success))
        (should (equal (plist-get file-result :content)
                       (concat "Diagnostics for notes.txt: 1 error, 1 warning, 0 info, 0 hints (source: flycheck):\n"
                               "notes.txt:2:6: warning [agent-q-code-test-checker G1]: gamma is suspect\n"
                               "notes.txt:3:1: error [agent-q-code-test-checker]: delta is wrong")))
        (should (plist-get project-result :success))
        (should (string-match-p "^notes.txt:2:6: warning \\[agent-q-code-test-checker G1\\]: gamma is suspect$"
                                (plist-get project-result :content)))
        (should (string-match-p "(source: flycheck)" (plist-get project-result :content)))))))

(provide 'agent-q-code-lsp-test)

;;; agent-q-code-lsp-test.el ends here
