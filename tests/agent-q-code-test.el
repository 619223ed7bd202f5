;;; agent-q-code-test.el --- Tests for agent-q-code  -*- lexical-binding: t -*-

;; Copyright (C) 2026 The agent-q authors

;; Author: The agent-q authors
;; Maintainer: The agent-q authors
;; Keywords: tools, languages
;; URL: https://example.invalid/agent-q
;; SPDX-License-Identifier: GPL-3.0-or-later

;; This file is not part of GNU Emacs.

;;; Commentary:

;; The code-intelligence tools against a real language server (pyright,
;; installed pinned under target/code-servers by
;; scripts/ensure-deps.sh --test) driven by the real eglot (Debian's
;; elpa-eglot on Emacs 28, the built-in one on Emacs 30), and their
;; fallbacks (imenu, a text search, Emacs Lisp's own analysis).

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-q)
(require 'agent-q-code)
(require 'agent-q-mcp)
(require 'agent-q-agents-test)

(defvar agent-q-allowed-directories)
(defvar agent-q-mcp-allowed-directories)
(defvar eglot-server-programs)
(defvar eglot-sync-connect)
(declare-function eglot-current-server "eglot" ())
(declare-function eglot-shutdown "eglot" (server &optional interactive timeout preserve-buffers))
(declare-function eglot--guess-contact "eglot" (&optional interactive))
(declare-function eglot "eglot")

(defconst agent-q-code-test--root
  (file-name-directory (directory-file-name
                        (file-name-directory (or load-file-name buffer-file-name))))
  "The project's source tree.")

(defun agent-q-code-test--server (name)
  "The installed language server program NAME, or fail saying how to install it."
  (let ((program (expand-file-name (concat "target/code-servers/node_modules/.bin/" name)
                                   agent-q-code-test--root)))
    (unless (file-executable-p program)
      (ert-fail (format "%s is not installed: run scripts/ensure-deps.sh --test (it installs tests/code-servers/package-lock.json into target/code-servers)" name)))
    program))

(defun agent-q-code-test--require-eglot ()
  "Load eglot: the built-in one, or Debian's elpa-eglot on Emacs 28."
  (unless (locate-library "eglot")
    (dolist (dir (file-expand-wildcards "/usr/share/emacs/site-lisp/elpa/*"))
      (when (string-match-p "/\\(eglot\\|project\\|xref\\)-[0-9]" dir)
        (add-to-list 'load-path dir))))
  (unless (require 'eglot nil t)
    (ert-fail "eglot is not installed: on Emacs 28, apt-get install elpa-eglot (scripts/ensure-deps.sh --test)")))

(defun agent-q-code-test--write (dir file text)
  "Write TEXT to FILE under DIR."
  (let ((path (expand-file-name file dir)))
    (make-directory (file-name-directory path) t)
    (with-temp-file path
      (set-buffer-file-coding-system 'utf-8-unix)
      (insert text))
    path))

(defun agent-q-code-test--project ()
  "A Python project in a fresh Git repository; return its directory."
  (let ((dir (file-name-as-directory (file-truename (make-temp-file "agent-q-code" t)))))
    (agent-q-code-test--write dir "pkg/__init__.py" "")
    (agent-q-code-test--write
     dir "pkg/cells.py"
     (concat "\"\"\"Cells.\"\"\"\n"
             "\n"
             "\n"
             "def cell_len(text: str) -> int:\n"
             "    \"\"\"Return the length of TEXT.\"\"\"\n"
             "    return len(text)\n"
             "\n"
             "\n"
             "class Console:\n"
             "    def print(self, text: str) -> int:\n"
             "        return cell_len(text)\n"))
    (agent-q-code-test--write
     dir "pkg/use.py"
     (concat "from pkg.cells import cell_len\n"
             "\n"
             "EMOJI = \"\U0001F600\"; N = cell_len(EMOJI)\n"
             "\n"
             "\n"
             "def total(a: str) -> int:\n"
             "    return cell_len(a) + undefined_name\n"))
    (agent-q-code-test--write dir "pyrightconfig.json" "{\"include\": [\"pkg\"]}\n")
    (let ((default-directory dir))
      (call-process "git" nil nil nil "init" "-q" "."))
    dir))

(defun agent-q-code-test--call (name &rest arguments)
  "Run tool NAME with ARGUMENTS (a plist) through the executor; return the result."
  (unless (agent-q-get-tool name)
    (agent-q-register-builtin-tools))
  (car (agent-q-execute-tool-calls
        (list (list :id "c" :name name :arguments arguments)))))

(defun agent-q-code-test--content (name &rest arguments)
  "The content of a successful call of NAME with ARGUMENTS."
  (let ((result (apply #'agent-q-code-test--call name arguments)))
    (unless (plist-get result :success)
      (ert-fail (format "%s failed: %s" name (plist-get result :content))))
    (plist-get result :content)))

(defun agent-q-code-test--kill (dir)
  "Kill the buffers visiting files under DIR and delete DIR."
  (dolist (buffer (buffer-list))
    (let ((file (buffer-file-name buffer)))
      (when (and file (string-prefix-p dir (file-truename file)))
        (with-current-buffer buffer (set-buffer-modified-p nil))
        (kill-buffer buffer))))
  (delete-directory dir t))

(defun agent-q-code-test--count (buffer regexp)
  "How many times REGEXP matches in BUFFER."
  (with-current-buffer buffer
    (save-excursion
      (goto-char (point-min))
      (let ((n 0))
        (while (re-search-forward regexp nil t) (cl-incf n))
        n))))

(defun agent-q-code-test--eglot-start ()
  "Start eglot for the current buffer as \\[eglot] would; return its server.
eglot's own wait for the connection ends with any process output (a
previous test's server exiting, say), so this waits until it connected."
  (apply #'eglot (eglot--guess-contact))
  (let ((deadline (+ (float-time) 60)))
    (while (and (not (eglot-current-server)) (< (float-time) deadline))
      (accept-process-output nil 0.1)))
  (or (eglot-current-server)
      (ert-fail (format "eglot did not start the server: %s"
                        (mapconcat (lambda (b) (with-current-buffer b (buffer-string)))
                                   (seq-filter (lambda (b) (string-match-p "stderr" (buffer-name b)))
                                               (buffer-list))
                                   "\n")))))

(ert-deftest agent-q-code-test-pyright-through-eglot ()
  "Every tool answers from the real pyright that the user's eglot runs."
  (agent-q-code-test--require-eglot)
  (let* ((program (agent-q-code-test--server "pyright-langserver"))
         (dir (agent-q-code-test--project))
         (default-directory dir)
         (eglot-server-programs `(((python-mode python-ts-mode) . (,program "--stdio"))))
         (eglot-sync-connect 30)
         (agent-q-code-timeout 60)
         (agent-q-code-start-servers nil)
         (server nil))
    (unwind-protect
        (progn
          ;; The user's Emacs runs eglot for the project.
          (with-current-buffer (find-file-noselect (expand-file-name "pkg/cells.py" dir))
            (setq server (agent-q-code-test--eglot-start)))
          ;; References by position, the declaration marked, the emoji's
          ;; UTF-16 column converted, paths relative to the project.
          (let ((answer (agent-q-code-test--content "find_references"
                                                    :file "pkg/cells.py" :line 4 :column 5)))
            (should (string-match-p "^References to pkg/cells.py:4:5 (cell_len): 5 references (source: eglot: [Pp]yright" answer))
            (should (string-match-p "^pkg/cells.py:4:5: def cell_len(text: str) -> int:  \\[declaration\\]$" answer))
            (should (string-match-p "^pkg/cells.py:11:16: return cell_len(text)  \\[in Console.print\\]$" answer))
            (should (string-match-p "^pkg/use.py:1:23: from pkg.cells import cell_len$" answer))
            (should (string-match-p "^pkg/use.py:3:18: EMOJI = " answer))
            (should (string-match-p "^pkg/use.py:7:12: return cell_len(a) \\+ undefined_name  \\[in total\\]$" answer)))
          ;; A definition by name path within a file.
          (let ((answer (agent-q-code-test--content "find_definition"
                                                    :symbol "Console/print" :file "pkg/cells.py")))
            (should (string-match-p "^pkg/cells.py:10:9: def print(self, text: str) -> int:" answer)))
          ;; A definition from a use in a file no buffer visited.
          (let ((answer (agent-q-code-test--content "find_definition"
                                                    :file "pkg/use.py" :line 7 :column 12)))
            (should (string-match-p "^pkg/cells.py:4:5: def cell_len" answer)))
          ;; The outline, nested.
          (let ((answer (agent-q-code-test--content "file_outline" :file "pkg/cells.py")))
            (should (string-match-p "^function cell_len (lines 4-6)$" answer))
            (should (string-match-p "^class Console (lines 9-11)\n  method print (lines 10-11)$" answer)))
          ;; The outline is asked for once per version of the file, and
          ;; its answer is not logged in eglot's events buffer (eglot 1.9
          ;; pretty-prints each message there on the main loop).
          (let* ((events (jsonrpc-events-buffer server))
                 (cells (find-buffer-visiting (expand-file-name "pkg/cells.py" dir)))
                 (asked (lambda () (agent-q-code-test--count events "^.*textDocument/documentSymbol")))
                 (before (funcall asked)))
            (should (> before 0))
            (should (zerop (agent-q-code-test--count events "\"name\": *\"cell_len\"\\|:name \"cell_len\"")))
            (should (string-match-p "^function cell_len" (agent-q-code-test--content "file_outline" :file "pkg/cells.py")))
            (should (= before (funcall asked)))
            (with-current-buffer cells
              (goto-char (point-max))
              (insert "\n\ndef added() -> None:\n    pass\n"))
            (unwind-protect
                (progn
                  (should (string-match-p "^function added (lines 14-15)$"
                                          (agent-q-code-test--content "file_outline" :file "pkg/cells.py")))
                  (should (= (1+ before) (funcall asked))))
              (with-current-buffer cells
                (delete-region (- (point-max) (length "\n\ndef added() -> None:\n    pass\n")) (point-max))
                (set-buffer-modified-p nil))))
          ;; Diagnostics of a file that was opened for the call.
          (kill-buffer (find-buffer-visiting (expand-file-name "pkg/use.py" dir)))
          (let ((answer (agent-q-code-test--content "diagnostics" :file "pkg/use.py")))
            (should (string-match-p "^pkg/use.py:7:26: error \\[[Pp]yright reportUndefinedVariable\\]: \"undefined_name\" is not defined$" answer)))
          ;; The hover text.
          (let ((answer (agent-q-code-test--content "type_at" :file "pkg/cells.py" :line 4 :column 6)))
            (should (string-match-p "def cell_len(\n?\\s-*text: str\n?) -> int" answer)))
          ;; Workspace symbols, once the server has indexed the project.
          (let ((answer nil))
            (dotimes (_ 30)
              (unless (and answer (string-match-p "function cell_len" answer))
                (setq answer (agent-q-code-test--content "workspace_symbols" :query "cell_len"))
                (unless (string-match-p "function cell_len" answer) (sleep-for 0.5))))
            (should (string-match-p "^pkg/cells.py:4: function cell_len" answer))))
      (when (and server (jsonrpc-running-p server))
        (ignore-errors (eglot-shutdown server)))
      (agent-q-code-test--kill dir))))

(defun agent-q-code-test--start-pyright (dir program)
  "Start eglot with pyright PROGRAM for the project DIR; return the server."
  (let ((eglot-server-programs `(((python-mode python-ts-mode) . (,program "--stdio"))))
        (eglot-sync-connect 30))
    (with-current-buffer (find-file-noselect (expand-file-name "pkg/cells.py" dir))
      (agent-q-code-test--eglot-start))))

(ert-deftest agent-q-code-test-claude-finds-references-over-mcp ()
  "The real Claude Code calls find_references; its model gets the locations."
  (agent-q-code-test--require-eglot)
  (let* ((pyright (agent-q-code-test--server "pyright-langserver"))
         (claude (agent-q-agents-test--program 'claude))
         (dir (agent-q-code-test--project))
         (scratch (file-name-as-directory (make-temp-file "agent-q-code-claude" t)))
         (home (expand-file-name "home/" scratch))
         (agent-q-mcp-connection-file (expand-file-name "connection.json" scratch))
         (agent-q-audit-file (expand-file-name "audit.jsonl" scratch))
         (agent-q-allowed-directories (list dir))
         (agent-q-mcp-allowed-directories (list dir))
         (agent-q-mcp-port 0)
         (agent-q-code-timeout 60)
         (agent-q-code-start-servers nil)
         (server nil) model process)
    (unwind-protect
        (progn
          (make-directory (expand-file-name "tmp" home) t)
          (setq server (agent-q-code-test--start-pyright dir pyright))
          (agent-q-mcp-start)
          (setq model (agent-q-agents-test--start-model
                       scratch "anthropic"
                       (list (agent-q-agents-test--tool-step
                              'claude "find_references"
                              `((file . ,(expand-file-name "pkg/cells.py" dir)) (line . 4) (column . 5)))
                             '((text . "Found them.")))))
          (let* ((setup (agent-q-agents-test--configure 'claude 'http home (nth 1 model)))
                 (output (generate-new-buffer " *agent-q-code-claude*"))
                 (default-directory dir)
                 (process-environment (agent-q-agents-test--environment home (cdr setup))))
            (setq process (make-process :name "agent-q-code-claude" :noquery t :buffer output
                                        :connection-type 'pipe :command (cons claude (car setup))))
            (process-send-eof process)
            (agent-q-agents-test--wait (lambda () (not (process-live-p process)))
                                       agent-q-agents-test--timeout "Claude Code to finish")
            (let* ((requests (agent-q-agents-test--json-lines (nth 2 model)))
                   (steps (cl-remove-if-not (lambda (r) (equal (alist-get 'kind r) "step")) requests))
                   (result (car (alist-get 'results (nth 1 steps))))
                   (text (alist-get 'text result)))
              (unless (and (= (process-exit-status process) 0) (= (length steps) 2) (stringp text))
                (ert-fail (format "Claude Code exited %s:\n%s\nrequests: %S"
                                  (process-exit-status process)
                                  (with-current-buffer output (buffer-string)) requests)))
              (should-not (eq (alist-get 'error result) t))
              (should (string-match-p "^References to pkg/cells.py:4:5 (cell_len): 5 references (source: eglot: " text))
              (should (string-match-p "^pkg/cells.py:4:5: def cell_len(text: str) -> int:  \\[declaration\\]$" text))
              (should (string-match-p "^pkg/cells.py:11:16: return cell_len(text)  \\[in Console.print\\]$" text))
              (should (string-match-p "^pkg/use.py:1:23: from pkg.cells import cell_len$" text))
              (should (string-match-p "^pkg/use.py:3:18: EMOJI = " text))
              (should (string-match-p "^pkg/use.py:7:12: return cell_len(a) \\+ undefined_name  \\[in total\\]$" text)))
            (kill-buffer output)))
      (when (and process (process-live-p process)) (delete-process process))
      (when (and model (process-live-p (car model))) (delete-process (car model)))
      (when model (kill-buffer (process-buffer (car model))))
      (agent-q-mcp-stop)
      (when (and server (jsonrpc-running-p server))
        (ignore-errors (eglot-shutdown server)))
      (agent-q-code-test--kill dir)
      (delete-directory scratch t))))

(defun agent-q-code-test--with-server (files mode program test)
  "Write FILES (FILE . TEXT) in a fresh Git project, run eglot there, call TEST.
The server is PROGRAM (a list) for MODE, started from the first
file's buffer; TEST is called with the project directory."
  (agent-q-code-test--require-eglot)
  (let* ((dir (file-name-as-directory (file-truename (make-temp-file "agent-q-code" t))))
         (default-directory dir)
         (eglot-server-programs `((,mode . ,program)))
         (eglot-sync-connect 30)
         (agent-q-code-timeout 60)
         (agent-q-code-start-servers nil)
         (server nil))
    (unwind-protect
        (progn
          (pcase-dolist (`(,file . ,text) files)
            (agent-q-code-test--write dir file text))
          (call-process "git" nil nil nil "init" "-q" ".")
          (with-current-buffer (find-file-noselect (expand-file-name (caar files) dir))
            (setq server (agent-q-code-test--eglot-start)))
          (funcall test dir))
      (when (and server (jsonrpc-running-p server))
        (ignore-errors (eglot-shutdown server)))
      (agent-q-code-test--kill dir))))

(ert-deftest agent-q-code-test-typescript-language-server ()
  "JavaScript through the real typescript-language-server: references, outline."
  (agent-q-code-test--with-server
   '(("lib.js" . "export function cellLen(text) {\n  return text.length;\n}\n")
     ("use.js" . "import { cellLen } from \"./lib.js\";\n\nconst n = cellLen(\"\U0001F600\") + cellLen(\"a\");\n")
     ("jsconfig.json" . "{\"compilerOptions\": {\"module\": \"esnext\", \"allowJs\": true}, \"files\": [\"lib.js\", \"use.js\"]}\n"))
   'js-mode
   (list (agent-q-code-test--server "typescript-language-server") "--stdio")
   (lambda (_dir)
     (let ((answer nil))
       ;; tsserver answers from the files it has loaded so far.
       (dotimes (_ 20)
         (unless (and answer (string-match-p "^use.js:" answer))
           (setq answer (agent-q-code-test--content "find_references" :file "lib.js" :line 1 :column 17))
           (unless (string-match-p "^use.js:" answer) (sleep-for 0.5))))
       (should (string-match-p "(source: eglot: typescript-language-server)" answer))
       (should (string-match-p "^lib.js:1:17: export function cellLen(text) {  \\[declaration\\]$" answer))
       (should (string-match-p "^use.js:1:10: import { cellLen } from" answer))
       (should (string-match-p "^use.js:3:11: const n = " answer))
       ;; After the emoji (two UTF-16 units), the column is in characters.
       (should (string-match-p "^use.js:3:26: const n = " answer)))
     (let ((answer (agent-q-code-test--content "file_outline" :file "lib.js")))
       (should (string-match-p "^function cellLen (lines 1-3)$" answer))))))

(ert-deftest agent-q-code-test-clangd ()
  "C through Debian's clangd: definition, outline and diagnostics."
  (unless (executable-find "clangd")
    (ert-fail "clangd is not installed: apt-get install clangd (scripts/ensure-deps.sh --test)"))
  (agent-q-code-test--with-server
   '(("main.c" . "static int twice(int x) {\n  return 2 * x;\n}\n\nint main(void) {\n  return twice(3) + missing;\n}\n")
     ("compile_flags.txt" . "-std=c11\n"))
   'c-mode
   (list (executable-find "clangd"))
   (lambda (_dir)
     (let ((answer (agent-q-code-test--content "find_definition" :file "main.c" :line 6 :column 10)))
       (should (string-match-p "(source: eglot: clangd" answer))
       (should (string-match-p "^main.c:1:12: static int twice(int x) {" answer)))
     (let ((answer (agent-q-code-test--content "file_outline" :file "main.c")))
       (should (string-match-p "^function twice (lines 1-3)$" answer))
       (should (string-match-p "^function main (lines 5-7)$" answer)))
     (let ((answer (agent-q-code-test--content "diagnostics" :file "main.c")))
       (should (string-match-p "^main.c:6:21: error \\[clang [a-z_]+\\]: Use of undeclared identifier 'missing'$" answer))))))

(ert-deftest agent-q-code-test-visiting-finds-buffers-as-emacs-does ()
  "The one-pass lookup of visiting buffers agrees with `find-buffer-visiting'.
Files visited under their own name and through a symbolic link to
their directory, and a file no buffer visits."
  (let* ((dir (file-name-as-directory (file-truename (make-temp-file "agent-q-code-visit" t))))
         (real (agent-q-code-test--write dir "real/a.py" "a = 1\n"))
         (other (agent-q-code-test--write dir "real/b.py" "b = 2\n"))
         (unvisited (agent-q-code-test--write dir "real/c.py" "c = 3\n"))
         (link (expand-file-name "link" dir))
         (buffers nil))
    (unwind-protect
        (progn
          (make-symbolic-link (expand-file-name "real" dir) link)
          (push (find-file-noselect real) buffers)
          (push (find-file-noselect other) buffers)
          (let* ((files (list real (expand-file-name "link/b.py" dir) unvisited
                              (expand-file-name "link/c.py" dir) real))
                 (table (agent-q-code--visiting files)))
            (dolist (file files)
              (should (eq (gethash file table) (find-buffer-visiting file))))
            (should (eq (gethash real table) (car (last buffers))))
            (should (eq (gethash (expand-file-name "link/b.py" dir) table) (car buffers)))
            (should (null (gethash unvisited table)))))
      (mapc #'kill-buffer buffers)
      (delete-directory dir t))))

(ert-deftest agent-q-code-test-large-imenu-outline-does-not-hold-emacs ()
  "A large file's imenu outline, without a server, is made by a separate Emacs.
Emacs's timers run while it is made (the call waits without holding
Emacs, where python-mode's imenu here would hold it for the whole
index), and the outline equals the one made here."
  (let* ((dir (agent-q-code-test--project))
         (default-directory dir)
         (agent-q-code-start-servers nil)
         (agent-q-code-timeout 120)
         (agent-q-code-max-results 5000)
         (chunks nil))
    (unwind-protect
        (progn
          (dotimes (i 200)
            (push (format "class C%d:\n    \"\"\"Doc.\"\"\"\n\n    def m%d(self):\n        return %d\n\n\ndef f%d(x):\n    return x + %d\n\n\n"
                          i i i i i)
                  chunks))
          (agent-q-code-test--write dir "pkg/big.py" (apply #'concat (nreverse chunks)))
          (let* ((ticked nil)
                 (timer (run-at-time 0 nil (lambda () (setq ticked t))))
                 (answer (unwind-protect
                             (agent-q-code-test--content "file_outline" :file "pkg/big.py")
                           (cancel-timer timer)))
                 (buffer (find-buffer-visiting (expand-file-name "pkg/big.py" dir))))
            (should (> (buffer-size buffer) agent-q-code-imenu-inline-size))
            (should ticked)
            (should (string-match-p "(source: imenu (made by a separate Emacs: the buffer is large))"
                                    answer))
            (should (string-match-p "^class C0 (line 1)\n  function m0 (line 4)\nfunction f0 (line 8)$"
                                    answer))
            (should (string-match-p "^class C199 (line 2190)\n  function m199 (line 2193)\nfunction f199 (line 2197)$"
                                    answer))
            ;; The same outline as the one made in this Emacs.
            (with-current-buffer buffer (setq agent-q-code--local-items nil))
            (let ((here (let ((agent-q-code-imenu-inline-size nil))
                          (agent-q-code-test--content "file_outline" :file "pkg/big.py"))))
              (should (string-match-p "(source: imenu)" here))
              (should (equal (replace-regexp-in-string "(source: [^\n]*" "" here)
                             (replace-regexp-in-string "(source: [^\n]*" "" answer))))
            ;; workspace_symbols without a server outlines the visited
            ;; buffers the same way.
            (with-current-buffer buffer (setq agent-q-code--local-items nil))
            (let* ((ticked nil)
                   (timer (run-at-time 0 nil (lambda () (setq ticked t))))
                   (symbols (unwind-protect
                                (agent-q-code-test--content "workspace_symbols" :query "m199")
                              (cancel-timer timer))))
              (should ticked)
              (should (string-match-p "imenu (made by a separate Emacs: the buffer is large)" symbols))
              (should (string-match-p "^pkg/big.py:2193: function m199" symbols)))))
      (agent-q-code-test--kill dir))))

(ert-deftest agent-q-code-test-fallbacks-label-themselves ()
  "Without a server: imenu outlines, text search locations, each labelled."
  (let* ((dir (agent-q-code-test--project))
         (default-directory dir)
         (agent-q-code-start-servers nil))
    (unwind-protect
        (progn
          (let ((answer (agent-q-code-test--content "file_outline" :file "pkg/cells.py")))
            (should (string-match-p "(source: imenu)" answer))
            (should (string-match-p "^function cell_len (line 4)$" answer))
            (should (string-match-p "^class Console (line 9)\n  function print (line 10)$" answer)))
          ;; The outline is kept until the buffer changes, and only that long.
          (with-current-buffer (find-buffer-visiting (expand-file-name "pkg/cells.py" dir))
            (goto-char (point-max))
            (insert "\n\ndef added():\n    pass\n"))
          (let ((answer (agent-q-code-test--content "file_outline" :file "pkg/cells.py")))
            (should (string-match-p "^function added (line 14)$" answer))
            (should (string-match-p "^function cell_len (line 4)$" answer)))
          (let ((answer (agent-q-code-test--content "find_references" :symbol "cell_len")))
            (should (string-match-p "(source: text search (not semantic))" answer))
            (should (string-match-p "^pkg/use.py:3:18: EMOJI" answer))
            (should (string-match-p "^pkg/cells.py:4:5: def cell_len" answer)))
          (let ((answer (agent-q-code-test--content "find_definition" :symbol "cell_len")))
            (should (string-match-p "^Definition of cell_len: 1 location (source: text search (not semantic))" answer))))
      (agent-q-code-test--kill dir))))

(defvar treesit-extra-load-path)
(defvar major-mode-remap-alist)
(declare-function treesit-language-available-p "treesit.c" (language &optional detail))

(ert-deftest agent-q-code-test-tree-sitter-outline ()
  "Without a server, a *-ts-mode buffer's outline comes from its parse tree.
Emacs 30 with the grammar built by scripts/ensure-deps.sh --test into
target/tree-sitter/lib; Emacs 28 has no tree-sitter, and there the
same file's outline is imenu's, which this asserts instead."
  (let* ((dir (agent-q-code-test--project))
         (default-directory dir)
         (agent-q-code-start-servers nil)
         (grammars (expand-file-name "target/tree-sitter/lib" agent-q-code-test--root)))
    (unwind-protect
        (if (not (fboundp 'treesit-available-p))
            (ert-info ((format "Emacs %s has no tree-sitter: the outline is imenu's" emacs-version))
              (let ((answer (agent-q-code-test--content "file_outline" :file "pkg/cells.py")))
                (should (string-match-p "(source: imenu)" answer))
                (should-not (string-match-p "tree-sitter" answer))))
          (require 'treesit)
          (let ((treesit-extra-load-path (cons grammars treesit-extra-load-path))
                (major-mode-remap-alist '((python-mode . python-ts-mode))))
            (unless (treesit-language-available-p 'python)
              (ert-fail (format "The Python grammar is not in %s: run scripts/ensure-deps.sh --test (it builds tests/tree-sitter/package-lock.json's grammar)" grammars)))
            (let ((answer (agent-q-code-test--content "file_outline" :file "pkg/cells.py")))
              (should (eq 'python-ts-mode
                          (buffer-local-value 'major-mode (find-buffer-visiting
                                                           (expand-file-name "pkg/cells.py" dir)))))
              (should (string-match-p "^Outline of pkg/cells.py: 3 symbols (source: tree-sitter):$" answer))
              (should (string-match-p "^function cell_len (lines 4-6)$" answer))
              (should (string-match-p "^class Console (lines 9-11)\n  method print (lines 10-11)$" answer)))))
      (agent-q-code-test--kill dir))))

(ert-deftest agent-q-code-test-emacs-lisp-keeps-agent-q-analysis ()
  "An Emacs Lisp symbol is answered by agent-q's own analysis."
  (let ((answer (agent-q-code-test--content "find_definition" :symbol "agent-q-code-find-definition")))
    (should (string-match-p "(source: agent-q: Emacs Lisp (find-function))" answer))
    (should (string-match-p "agent-q-code\\.el:[0-9]+:1: (defun agent-q-code-find-definition" answer)))
  (let ((answer (agent-q-code-test--content "find_references" :symbol "agent-q-code--find")))
    (should (string-match-p "(source: agent-q: Emacs Lisp (who_calls and who_references" answer))
    (should (string-match-p "agent-q-code\\.el:[0-9]+:[0-9]+: (agent-q-code--find callback args 'definition))  \\[in agent-q-code-find-definition\\]$" answer))))

(provide 'agent-q-code-test)

;;; agent-q-code-test.el ends here
