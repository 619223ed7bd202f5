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
SCRIPT is a list of (KEY TOOL . ARGUMENTS), a tool's call, of
\(KEY kill FILE), to kill FILE's buffer, of (KEY poll REGEXP TOOL
. ARGUMENTS), a call repeated until its answer matches REGEXP, and of
\(KEY eval FORM), a form the child evaluates.  Return the alist
\(KEY . RESULT) the child prints; its `sync-requests' lists lsp-mode's
synchronous requests made during the calls."
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
          (let* ((errors (expand-file-name "stderr" scratch))
                 (status (call-process
                          "timeout" nil (list t errors) nil "300"
                          (expand-file-name invocation-name invocation-directory)
                          "--batch" "-Q"
                          "-L" (file-name-directory (locate-library "agent-q"))
                          "-l" agent-q-code-lsp-test--child)))
            (unless (eq status 0)
              (ert-fail (list "The child Emacs failed" status (buffer-string)
                              (with-temp-buffer
                                (insert-file-contents errors)
                                (buffer-substring (max (point-min) (- (point-max) 3000))
                                                  (point-max))))))
            (car (read-from-string (buffer-string)))))
      (delete-directory scratch t))))

(defun agent-q-code-lsp-test--content (results key)
  "The content of the successful result KEY in RESULTS."
  (let ((result (cdr (assq key results))))
    (unless (plist-get result :success)
      (ert-fail (format "%s failed: %S" key result)))
    (plist-get result :content)))

(defconst agent-q-code-lsp-test--script
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
    (by-use "find_definition" :file "pkg/use.py" :line 7 :column 12)
    ;; Once the server has indexed the project.
    (symbols poll "function cell_len" "workspace_symbols" :query "cell_len"))
  "The calls both lsp-mode and eglot answer for the same project.")

(defun agent-q-code-lsp-test--eglot-run (dir script)
  "Run SCRIPT's calls, kills and polls through eglot and pyright for DIR.
As `agent-q-code-lsp-test--run' does through lsp-mode, here in the
test's Emacs (eglot brings no other package); return the alist
\(KEY . RESULT)."
  (agent-q-code-test--require-eglot)
  (let* ((program (agent-q-code-test--server "pyright-langserver"))
         (default-directory dir)
         (agent-q-code-timeout 60)
         (agent-q-code-start-servers nil)
         (agent-q-code-diagnostics-wait 30)
         (server (agent-q-code-test--start-pyright dir program))
         (results nil))
    (unwind-protect
        (dolist (step script)
          (pcase-let ((`(,key ,name . ,arguments) step))
            (pcase name
              ('kill
               (let ((buffer (find-buffer-visiting (expand-file-name (car arguments) dir))))
                 (when buffer (kill-buffer buffer))))
              ('poll
               (let ((result nil))
                 (dotimes (_ 30)
                   (unless (string-match-p (car arguments) (or (plist-get result :content) ""))
                     (setq result (apply #'agent-q-code-test--call (cdr arguments)))
                     (unless (string-match-p (car arguments) (or (plist-get result :content) ""))
                       (sleep-for 0.5))))
                 (push (cons key result) results)))
              (_ (push (cons key (apply #'agent-q-code-test--call name arguments)) results)))))
      (when (jsonrpc-running-p server)
        (ignore-errors (eglot-shutdown server))))
    (nreverse results)))

(defun agent-q-code-lsp-test--unlabelled (text)
  "TEXT with the client and server it names as \"SERVER\".
eglot's diagnostics come through Flymake, named so.
Without its Markdown fences, rules and empty lines: lsp-mode asks for
hover text in Markdown, eglot without markdown-mode for plain text."
  (string-join
   (seq-remove (lambda (line) (string-match-p "\\`\\(```.*\\|---\\|\\)\\'" line))
               (split-string (replace-regexp-in-string
                              "\\(eglot\\|lsp-mode\\): [Pp]yright\\(-langserver\\)?" "SERVER"
                              (replace-regexp-in-string "flymake (\\(eglot: [^)]*\\))" "\\1" text t)
                              t t)
                             "\n"))
   "\n"))

(ert-deftest agent-q-code-lsp-test-pyright-through-lsp-mode ()
  "Every tool answers from the real pyright that the user's lsp-mode runs.
The answers are eglot's for the same project, but for the source."
  (let ((dir (agent-q-code-test--project)))
    (unwind-protect
        (let ((results (agent-q-code-lsp-test--run dir agent-q-code-lsp-test--script)))
          ;; agent-q asked lsp-mode asynchronously only.
          (should (assq 'sync-requests results))
          (should-not (cdr (assq 'sync-requests results)))
          (let ((answer (agent-q-code-lsp-test--content results 'symbols)))
            (should (string-match-p "^Symbols matching 'cell_len': .*(source: lsp-mode: pyright)" answer))
            (should (string-match-p "^pkg/cells.py:4: function cell_len\\b" answer)))
          ;; eglot, for the same project, answers the same.
          (let ((eglot (agent-q-code-lsp-test--eglot-run dir agent-q-code-lsp-test--script)))
            (dolist (step agent-q-code-lsp-test--script)
              (let ((key (car step))
                    ;; The project's: the same diagnostics, but lsp-mode
                    ;; keeps what the server reported on use.py while it was
                    ;; visited, where Flymake forgot it with the buffer: its
                    ;; "Checked:" line counts that file otherwise.
                    (keep (if (eq (car step) 'project)
                              (lambda (text)
                                (string-join (seq-filter (lambda (line) (string-prefix-p "pkg/" line))
                                                         (split-string text "\n"))
                                             "\n"))
                            #'identity)))
                (unless (eq key '_)
                  (should (equal (list key (funcall keep (agent-q-code-lsp-test--unlabelled
                                                          (agent-q-code-lsp-test--content eglot key))))
                                 (list key (funcall keep (agent-q-code-lsp-test--unlabelled
                                                          (agent-q-code-lsp-test--content results key))))))))))
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
