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

(declare-function eglot-shutdown "eglot" (server &optional interactive timeout preserve-buffers))
(declare-function jsonrpc-running-p "jsonrpc" (connection))
(declare-function jsonrpc-events-buffer "jsonrpc" (connection))

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
  "What lsp-mode and eglot are both asked, for the same project.")

(defun agent-q-code-lsp-test--eglot-run (dir script)
  "Execute SCRIPT through eglot and pyright for DIR, in the test's Emacs.
Its tool calls, kills and polls, as `agent-q-code-lsp-test--run' runs
them through lsp-mode (eglot brings no other package); return the
alist (KEY . RESULT)."
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
                    ;; The project's: the same diagnostics; its "Checked:"
                    ;; line may count use.py, whose buffer was just killed,
                    ;; as reported on (the server's report on closing it
                    ;; came in time) rather than opened for the call.
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

;;;; rename_symbol

(defconst agent-q-code-lsp-test--filler
  (mapconcat (lambda (i) (format "X%d = %d\n" i i)) (number-sequence 1 10) "")
  "Lines that keep two renamed places of a file in two hunks.")

(defconst agent-q-code-lsp-test--rename-script
  '((_ eval (progn
              (setq lsp-log-io t)
              (defvar agent-q-code-lsp-test-seen nil)
              ;; The user's review: every hunk accepted but use.py's last.
              (setq agent-q-review--review-driver
                    (lambda (buffer)
                      (with-current-buffer buffer
                        (let* ((review agent-q-review--this-review)
                               (count (agent-q-review--hunk-count review))
                               (files (delete-dups
                                       (cl-loop for i below count
                                                collect (file-relative-name
                                                         (agent-q-review--hunk-file review i)
                                                         agent-q-code-lsp-child--dir)))))
                          (setq agent-q-code-lsp-test-seen (list count (sort files #'string<)))
                          (dotimes (i count)
                            (agent-q-review--goto-hunk review i)
                            (if (and (string-suffix-p "use.py" (agent-q-review--hunk-file review i))
                                     (> (plist-get (aref (agent-q-review--review-summary review) i)
                                                   :old-start)
                                        5))
                                (agent-q-review-reject)
                              (agent-q-review-accept)))
                          (agent-q-review-finish)))))))
    (rename "rename_symbol" :file "pkg/cells.py" :line 1 :column 5 :new_name "text_width")
    (seen eval agent-q-code-lsp-test-seen)
    (cells-buffer eval (with-current-buffer (find-buffer-visiting
                                             (expand-file-name "pkg/cells.py" agent-q-code-lsp-child--dir))
                         (list (buffer-modified-p) (buffer-string))))
    (use-visited eval (and (find-buffer-visiting
                            (expand-file-name "pkg/use.py" agent-q-code-lsp-child--dir))
                           t))
    (cells-file eval (agent-q-code-lsp-child-file "pkg/cells.py"))
    (use-file eval (agent-q-code-lsp-child-file "pkg/use.py"))
    (log eval (mapconcat (lambda (buffer)
                           (if (string-prefix-p "*lsp-log: pyright" (buffer-name buffer))
                               (with-current-buffer buffer
                                 (buffer-substring-no-properties (point-min) (point-max)))
                             ""))
                         (buffer-list) "")))
  "A rename through lsp-mode, reviewed, and what it left.")

(ert-deftest agent-q-code-lsp-test-rename-through-lsp-mode ()
  "A rename by pyright through lsp-mode: prepared, one review, a hunk rejected."
  (let* ((dir (file-name-as-directory (file-truename (make-temp-file "agent-q-code" t))))
         (cells (concat "def cell_len(text: str) -> int:\n"
                        "    return len(text)\n"
                        agent-q-code-lsp-test--filler
                        "class Console:\n"
                        "    def print(self, text: str) -> int:\n"
                        "        return cell_len(text)\n"))
         (use (concat "from pkg.cells import cell_len\n"
                      "\n"
                      "EMOJI = \"\U0001F600\"; N = cell_len(EMOJI)\n"
                      agent-q-code-lsp-test--filler
                      "def total(a: str) -> int:\n"
                      "    return cell_len(a)\n")))
    (agent-q-code-test--write dir "pkg/cells.py" cells)
    (agent-q-code-test--write dir "pkg/__init__.py" "")
    (agent-q-code-test--write dir "pkg/use.py" use)
    (agent-q-code-test--write dir "pyrightconfig.json" "{\"include\": [\"pkg\"]}\n")
    (let ((default-directory dir))
      (call-process "git" nil nil nil "init" "-q" "."))
    (unwind-protect
        (let* ((results (agent-q-code-lsp-test--run dir agent-q-code-lsp-test--rename-script))
               (answer (agent-q-code-lsp-test--content results 'rename))
               (log (cdr (assq 'log results))))
          (should-not (cdr (assq 'sync-requests results)))
          ;; One review held both files' hunks: two in each.
          (should (equal (cdr (assq 'seen results)) '(4 ("pkg/cells.py" "pkg/use.py"))))
          ;; The agent is told which hunks of which file were applied.
          (should (string-match-p "^Rename of pkg/cells.py:1:5 (cell_len) to text_width (source: lsp-mode: pyright): 3 of 4 hunks applied, in 2 of 2 files\\.$" answer))
          (should (string-match-p "^pkg/cells.py: 2 of 2 hunks: hunks 1 (line 1) and 2 (line [0-9]+) applied; changed in its buffer, not saved\\.$" answer))
          (should (string-match-p "^pkg/use.py: 1 of 2 hunks: hunk 1 (line 1) applied; hunk 2 (line [0-9]+) rejected (not applied: the old name stays there); written to the file\\.$" answer))
          ;; cells.py's buffer (lsp-mode's) renamed, not saved; its file as it was.
          (should (equal (cdr (assq 'cells-buffer results))
                         (list t (replace-regexp-in-string "cell_len" "text_width" cells t t))))
          (should (equal (cdr (assq 'cells-file results)) cells))
          ;; use.py, not visited: written on disk, the rejected use unchanged.
          (should-not (cdr (assq 'use-visited results)))
          (should (equal (cdr (assq 'use-file results))
                         (replace-regexp-in-string
                          "from pkg.cells import cell_len" "from pkg.cells import text_width"
                          (replace-regexp-in-string "N = cell_len" "N = text_width" use t t)
                          t t)))
          ;; lsp-mode sent prepareRename, then rename; their answers were
          ;; kept out of its io log.
          (should (string-match-p "Sending request 'textDocument/prepareRename - ([0-9]+)'" log))
          (should (string-match "Sending request 'textDocument/rename - (\\([0-9]+\\))'" log))
          (should-not (string-match-p (format "Received response '[^']* - (%s)'" (match-string 1 log)) log))
          (should-not (string-match-p "Received response 'textDocument/\\(prepareRename\\|rename\\)" log)))
      (agent-q-code-test--kill dir))))

;;;; Cancellation

(defconst agent-q-code-lsp-test--cancel-script
  '((_ eval (setq lsp-log-io t))
    ;; C-g while the synchronous executor waits for the answer.
    (quit eval (progn
                 (run-at-time 0 nil (lambda () (setq quit-flag t)))
                 (agent-q-code-lsp-child-call "find_references"
                                              :file "pkg/cells.py" :line 4 :column 5)))
    ;; The agent cancels the call under way (its client's abort).
    (cancel eval (let* ((results :none)
                        (sent nil)
                        (deadline (+ (float-time) 60))
                        (note (lambda (&rest _) (setq sent t)))
                        (batch nil))
                   (advice-add 'lsp-request-async :after note)
                   (let ((agent-q-code-lsp-child--in-call t))
                     (setq batch (agent-q-execute-tool-calls-async
                                  (list (list :id "r" :name "find_references"
                                              :arguments (list :file "pkg/cells.py" :line 4 :column 5)))
                                  (lambda (r) (setq results r))))
                     (while (and (not sent) (< (float-time) deadline))
                       (accept-process-output nil 0.001))
                     (advice-remove 'lsp-request-async note)
                     (let ((withdrawn (agent-q-cancel-batch batch)))
                       (while (and (eq results :none) (< (float-time) deadline))
                         (accept-process-output nil 0.05))
                       (list sent withdrawn (car-safe results))))))
    ;; The server still answers.  (pyright 1.1.403 fails every
    ;; references request after one was cancelled, where the client
    ;; takes progress reports, as lsp-mode does: agent-q leaves those
    ;; to finish.)
    (_ eval (sleep-for 2))
    (after "find_references" :file "pkg/cells.py" :line 4 :column 5)
    (log eval (progn
                ;; The late answers to the cancelled requests, if any, come.
                (sleep-for 1)
                (mapconcat (lambda (buffer)
                             (if (string-prefix-p "*lsp-log: pyright" (buffer-name buffer))
                                 (with-current-buffer buffer
                                   (buffer-substring-no-properties (point-min) (point-max)))
                               ""))
                           (buffer-list) ""))))
  "Requests through lsp-mode cancelled by \\[keyboard-quit] and by the agent.")

(defun agent-q-code-lsp-test--ids (regexp log)
  "The numbers the first group of REGEXP matches in LOG, in order."
  (let ((start 0) (ids nil))
    (while (string-match regexp log start)
      (push (string-to-number (match-string 1 log)) ids)
      (setq start (match-end 0)))
    (nreverse ids)))

(ert-deftest agent-q-code-lsp-test-cancelled-requests ()
  "\\[keyboard-quit] and the agent's cancellation stop requests through lsp-mode.
The server is told ($/cancelRequest), but for references (see
`agent-q-code-lsp--uncancelled'), and still answers the next call."
  (let ((dir (agent-q-code-test--project)))
    (unwind-protect
        (let* ((results (agent-q-code-lsp-test--run dir agent-q-code-lsp-test--cancel-script))
               (log (cdr (assq 'log results)))
               (asked (agent-q-code-lsp-test--ids
                       "Sending request 'textDocument/definition - (\\([0-9]+\\))'" log))
               (references (agent-q-code-lsp-test--ids
                            "Sending request 'textDocument/references - (\\([0-9]+\\))'" log))
               (cancelled (agent-q-code-lsp-test--ids
                           "Sending notification '\\$/cancelRequest'\\.\nParams: {[ \n]*\"id\": *\\([0-9]+\\)"
                           log)))
          (should-not (cdr (assq 'sync-requests results)))
          ;; C-g: the call fails, saying so.
          (let ((quit (cdr (assq 'quit results))))
            (should-not (plist-get quit :success))
            (should (string-match-p "Interrupted by the user (C-g): the request was cancelled\\."
                                    (plist-get quit :content))))
          ;; The agent's cancellation: the call is withdrawn, its result says so.
          (pcase-let ((`(,sent ,withdrawn ,result) (cdr (assq 'cancel results))))
            (should sent)
            (should (= withdrawn 1))
            (should-not (plist-get result :success))
            (should (string-match-p "cancel" (plist-get result :content))))
          (should (string-match-p "^References to pkg/cells.py:4:5 (cell_len): 5 references (source: lsp-mode: pyright):$"
                                  (agent-q-code-lsp-test--content results 'after)))
          ;; Each call asked references and the declaration (definition)
          ;; through lsp-mode; the first two calls' declaration requests
          ;; were cancelled there ($/cancelRequest), the third's not; the
          ;; references requests were left to finish.
          (should (= (length asked) 3))
          (should (= (length references) 3))
          (should (equal (sort cancelled #'<) (list (nth 0 asked) (nth 1 asked))))
          ;; No answer to agent-q was pretty-printed into lsp-mode's log.
          (should-not (string-match-p "Received response 'textDocument/\\(references\\|definition\\)" log))
          (dolist (id (append asked references))
            (should-not (string-match-p (format "Received response '[^']* - (%d)'" id) log))))
      (agent-q-code-test--kill dir))))

(ert-deftest agent-q-code-lsp-test-eglot-references-after-cancel ()
  "After \\[keyboard-quit] stopped find_references through eglot, pyright answers.
eglot of Emacs 30 takes progress reports, as lsp-mode does (see
`agent-q-code--uncancelled')."
  (agent-q-code-test--require-eglot)
  (let* ((program (agent-q-code-test--server "pyright-langserver"))
         (dir (agent-q-code-test--project))
         (default-directory dir)
         (agent-q-code-timeout 60)
         (agent-q-code-start-servers nil)
         (server (agent-q-code-test--start-pyright dir program)))
    (unwind-protect
        (progn
          ;; Warm: pyright has analysed the file.
          (should (string-match-p "^References to pkg/cells.py:4:5 (cell_len): 5 references"
                                  (agent-q-code-test--content "find_references"
                                                              :file "pkg/cells.py" :line 4 :column 5)))
          (run-at-time 0 nil (lambda () (setq quit-flag t)))
          (let ((quit (agent-q-code-test--call "find_references"
                                               :file "pkg/cells.py" :line 4 :column 5)))
            (should-not (plist-get quit :success))
            (should (string-match-p "Interrupted by the user (C-g): the request was cancelled\\."
                                    (plist-get quit :content))))
          ;; pyright has dealt with the cancelled requests.
          (sleep-for 2)
          ;; The declaration's request was cancelled at the server.
          (should (> (agent-q-code-test--count (jsonrpc-events-buffer server) "\\$/cancelRequest") 0))
          (should (string-match-p "^References to pkg/cells.py:4:5 (cell_len): 5 references (source: eglot: [Pp]yright"
                                  (agent-q-code-test--content "find_references"
                                                              :file "pkg/cells.py" :line 4 :column 5))))
      (when (jsonrpc-running-p server)
        (ignore-errors (eglot-shutdown server)))
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
