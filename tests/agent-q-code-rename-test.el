;;; agent-q-code-rename-test.el --- Tests for rename_symbol  -*- lexical-binding: t -*-

;; Copyright (C) 2026 The agent-q authors

;; Author: The agent-q authors
;; Maintainer: The agent-q authors
;; Keywords: tools, languages
;; URL: https://example.invalid/agent-q
;; SPDX-License-Identifier: GPL-3.0-or-later

;; This file is not part of GNU Emacs.

;;; Commentary:

;; rename_symbol against the real pyright and typescript-language-server
;; (pinned under target/code-servers) driven by the real eglot: every
;; file of the server's rename in one hunk review, part of the hunks
;; rejected, buffers and files as reviewed, the answer naming them.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-q)
(require 'agent-q-code)
(require 'agent-q-code-rename)
(require 'agent-q-review)
(require 'agent-q-journal)
(require 'agent-q-code-test)

(defvar agent-q-allowed-directories)

(defun agent-q-code-rename-test--file (file)
  "The text of FILE on disk."
  (with-temp-buffer
    (insert-file-contents file)
    (buffer-string)))

(defun agent-q-code-rename-test--driver (seen decide)
  "A review driver: record the review in SEEN, decide each hunk by DECIDE.
SEEN is a cons whose car gets (COUNT FILES TEXT); DECIDE is called
with a hunk's file and its first line and returns `accept' or `reject'."
  (lambda (buffer)
    (with-current-buffer buffer
      (let* ((review agent-q-review--this-review)
             (count (agent-q-review--hunk-count review)))
        (setcar seen (list count
                           (delete-dups (cl-loop for i below count
                                                 collect (agent-q-review--hunk-file review i)))
                           (buffer-substring-no-properties (point-min) (point-max))))
        (dotimes (i count)
          (agent-q-review--goto-hunk review i)
          (if (eq 'accept (funcall decide (agent-q-review--hunk-file review i)
                                   (plist-get (aref (agent-q-review--review-summary review) i)
                                              :old-start)))
              (agent-q-review-accept)
            (agent-q-review-reject)))
        (agent-q-review-finish)))))

(defconst agent-q-code-rename-test--filler
  (mapconcat (lambda (i) (format "X%d = %d\n" i i)) (number-sequence 1 10) "")
  "Lines that keep two renamed places of a file in two hunks.")

(ert-deftest agent-q-code-rename-test-pyright-two-files-part-rejected ()
  "The real pyright's rename across two files, one review, a hunk rejected."
  (let* ((seen (list nil))
         (journal-dir (make-temp-file "agent-q-rename-journal" t))
         (agent-q-journal-file (expand-file-name "journal.jsonl" journal-dir))
         (agent-q-journal--journal nil)
         (agent-q-review--review-driver
          (agent-q-code-rename-test--driver
           seen (lambda (file line)
                  ;; Reject the last use in use.py: the others are applied.
                  (if (and (string-suffix-p "use.py" file) (> line 5)) 'reject 'accept)))))
    (agent-q-code-test--with-server
     `(("pkg/cells.py" . ,(concat "def cell_len(text: str) -> int:\n"
                                  "    return len(text)\n"
                                  agent-q-code-rename-test--filler
                                  "class Console:\n"
                                  "    def print(self, text: str) -> int:\n"
                                  "        return cell_len(text)\n"))
       ("pkg/__init__.py" . "")
       ("pkg/use.py" . ,(concat "from pkg.cells import cell_len\n"
                                "\n"
                                "EMOJI = \"\U0001F600\"; N = cell_len(EMOJI)\n"
                                agent-q-code-rename-test--filler
                                "def total(a: str) -> int:\n"
                                "    return cell_len(a)\n"))
       ("pyrightconfig.json" . "{\"include\": [\"pkg\"]}\n"))
     '(python-mode python-ts-mode)
     (list (agent-q-code-test--server "pyright-langserver") "--stdio")
     (lambda (dir)
       (let* ((cells (expand-file-name "pkg/cells.py" dir))
              (use (expand-file-name "pkg/use.py" dir))
              (cells-before (agent-q-code-rename-test--file cells))
              (use-before (agent-q-code-rename-test--file use))
              (result (agent-q-code-test--call "rename_symbol" :file "pkg/cells.py"
                                               :line 1 :column 5 :new_name "text_width"))
              (answer (plist-get result :content)))
         (should (plist-get result :success))
         ;; One review held both files' hunks: two in each.
         (should (equal (car (car seen)) 4))
         (should (equal (sort (copy-sequence (nth 1 (car seen))) #'string<) (list cells use)))
         (should (string-match-p "^Files: .*cells\\.py\n +.*use\\.py\n\\|^Files: .*use\\.py\n +.*cells\\.py\n"
                                 (nth 2 (car seen))))
         (should (string-match-p "^--- a/pkg/use.py$" (nth 2 (car seen))))
         ;; The answer names each file's hunks, applied and rejected.
         (should (string-match-p "^Rename of pkg/cells.py:1:5 (cell_len) to text_width (source: eglot: [Pp]yright[^)]*): 3 of 4 hunks applied, in 2 of 2 files\\.$" answer))
         (should (string-match-p "^pkg/cells.py: 2 of 2 hunks: hunks 1 (line 1) and 2 (line [0-9]+) applied; changed in its buffer, not saved\\.$" answer))
         (should (string-match-p "^pkg/use.py: 1 of 2 hunks: hunk 1 (line 1) applied; hunk 2 (line [0-9]+) rejected (not applied: the old name stays there); written to the file\\.$" answer))
         (should (string-match-p "^The rename is partial" answer))
         ;; cells.py: its buffer (eglot's) renamed, not saved; the file as it was.
         (with-current-buffer (find-buffer-visiting cells)
           (should (buffer-modified-p))
           (should (equal (buffer-string)
                          (replace-regexp-in-string "cell_len" "text_width" cells-before t t))))
         (should (equal (agent-q-code-rename-test--file cells) cells-before))
         ;; use.py, not visited: written on disk, the rejected hunk's use unchanged.
         (should-not (find-buffer-visiting use))
         (should (equal (agent-q-code-rename-test--file use)
                        (replace-regexp-in-string
                         "from pkg.cells import cell_len" "from pkg.cells import text_width"
                         (replace-regexp-in-string "N = cell_len" "N = text_width" use-before t t)
                         t t)))
         ;; The journal holds one change per file, each with its hunks as reviewed.
         (let ((entries (agent-q--core-journal-entries (agent-q-journal--get))))
           (should (equal (sort (mapcar (lambda (e) (list (plist-get e :file) (plist-get e :how)
                                                          (plist-get e :accepted) (plist-get e :rejected)))
                                        entries)
                                (lambda (a b) (string< (car a) (car b))))
                          (list (list cells "review" 2 0) (list use "review" 1 1)))))
         (delete-directory journal-dir t))))))

(ert-deftest agent-q-code-rename-test-typescript-modified-buffer ()
  "A rename in a visited buffer with unsaved edits renames what the buffer says."
  (let* ((seen (list nil))
         (agent-q-review--review-driver
          (agent-q-code-rename-test--driver seen (lambda (_file _line) 'accept))))
    (agent-q-code-test--with-server
     '(("lib.js" . "export function cellLen(text) {\n  return text.length;\n}\n")
       ("use.js" . "import { cellLen } from \"./lib.js\";\n\nconst n = cellLen(\"\U0001F600\") + cellLen(\"a\");\n")
       ("jsconfig.json" . "{\"compilerOptions\": {\"module\": \"esnext\", \"allowJs\": true}, \"files\": [\"lib.js\", \"use.js\"]}\n"))
     'js-mode
     (list (agent-q-code-test--server "typescript-language-server") "--stdio")
     (lambda (dir)
       (let* ((lib (expand-file-name "lib.js" dir))
              (use (expand-file-name "use.js" dir))
              (lib-before (agent-q-code-rename-test--file lib))
              (result nil))
         ;; The user's unsaved edit moves the function down a line.
         (with-current-buffer (find-buffer-visiting lib)
           (goto-char (point-min))
           (insert "// cellLen counts characters\n"))
         ;; tsserver answers from the files it has loaded so far.
         (dotimes (_ 20)
           (unless (and result (string-match-p "^use.js:" (or (plist-get result :content) "")))
             (setq result (agent-q-code-test--call "rename_symbol" :file "lib.js"
                                                   :line 2 :column 17 :new_name "textLen"))
             (unless (string-match-p "^use.js:" (or (plist-get result :content) ""))
               ;; A rename not yet across files: undo it in the buffer, try again.
               (with-current-buffer (find-buffer-visiting lib)
                 (save-excursion
                   (goto-char (point-min))
                   (while (search-forward "textLen" nil t) (replace-match "cellLen" t t))))
               (sleep-for 0.5))))
         (should (plist-get result :success))
         (should (string-match-p "^Rename of lib.js:2:17 (cellLen) to textLen (source: eglot: typescript-language-server): [0-9]+ of [0-9]+ hunks? applied, in 2 of 2 files\\.$"
                                 (plist-get result :content)))
         (should (string-match-p "^lib.js: .*; changed in its buffer, not saved\\.$" (plist-get result :content)))
         (should (string-match-p "^use.js: .*; written to the file\\.$" (plist-get result :content)))
         ;; The buffer keeps the user's edit, renamed; the file on disk is untouched.
         (with-current-buffer (find-buffer-visiting lib)
           (should (buffer-modified-p))
           (should (equal (buffer-string)
                          (concat "// cellLen counts characters\n"
                                  "export function textLen(text) {\n  return text.length;\n}\n"))))
         (should (equal (agent-q-code-rename-test--file lib) lib-before))
         (should (equal (agent-q-code-rename-test--file use)
                        "import { textLen } from \"./lib.js\";\n\nconst n = textLen(\"\U0001F600\") + textLen(\"a\");\n")))))))

(defun agent-q-code-rename-test--wait (predicate)
  "Process output until PREDICATE is non-nil, failing after 60 s."
  (let ((deadline (+ (float-time) 60)))
    (while (and (not (funcall predicate)) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (or (funcall predicate) (ert-fail (list "timed out waiting" agent-q--pending (buffer-list))))))

(defun agent-q-code-rename-test--review-buffer ()
  "The open review buffer, or nil."
  (cl-find-if (lambda (b) (string-prefix-p "*agent-q-diff: " (buffer-name b))) (buffer-list)))

(ert-deftest agent-q-code-rename-test-async-review-audited-and-withdrawn ()
  "Under the asynchronous executor the review is non-modal, audited, withdrawable."
  (let ((agent-q-audit-file (make-temp-file "agent-q-audit" nil ".jsonl"))
        (agent-q-review--review-driver nil))
    (unwind-protect
        (agent-q-code-test--with-server
         `(("pkg/cells.py" . ,(concat "def cell_len(text: str) -> int:\n"
                                      "    return len(text)\n"
                                      agent-q-code-rename-test--filler
                                      "N = cell_len(\"a\")\n"))
           ("pkg/__init__.py" . "")
           ("pyrightconfig.json" . "{\"include\": [\"pkg\"]}\n"))
         '(python-mode python-ts-mode)
         (list (agent-q-code-test--server "pyright-langserver") "--stdio")
         (lambda (dir)
           (let* ((cells (expand-file-name "pkg/cells.py" dir))
                  ;; Allowed wherever the executor runs the handler from.
                  (agent-q-allowed-directories (list dir))
                  (before (with-current-buffer (find-buffer-visiting cells) (buffer-string)))
                  ;; Absolute: the asynchronous executor starts the handler from a
                  ;; timer, in whatever directory is current then.
                  (call `((:id "r" :name "rename_symbol"
                               :arguments (:file ,cells :line 1 :column 5 :new_name "width")))))
             ;; Withdrawn while its review is open: the review closes, nothing changes.
             (let ((results :none))
               (agent-q-execute-tool-calls-async call (lambda (r) (setq results r)))
               (agent-q-code-rename-test--wait (lambda () (or (agent-q-code-rename-test--review-buffer)
                                                              (not (eq results :none)))))
               (should (eq results :none))
               (should (= 1 (agent-q-cancel-pending)))
               (agent-q-code-rename-test--wait (lambda () (not (eq results :none))))
               (should-not (agent-q-code-rename-test--review-buffer))
               (should-not (plist-get (car results) :success))
               (with-current-buffer (find-buffer-visiting cells)
                 (should (equal (buffer-string) before))))
             ;; Decided: the second hunk rejected, the audit says which.
             (let ((results :none))
               (agent-q-execute-tool-calls-async call (lambda (r) (setq results r)))
               (agent-q-code-rename-test--wait (lambda () (or (agent-q-code-rename-test--review-buffer)
                                                              (not (eq results :none)))))
               (should (eq results :none))
               (with-current-buffer (agent-q-code-rename-test--review-buffer)
                 (agent-q-review-accept)
                 (agent-q-review-reject)
                 (agent-q-review-finish))
               (agent-q-code-rename-test--wait (lambda () (not (eq results :none))))
               (should (plist-get (car results) :success))
               (should (string-match-p "^pkg/cells.py: 1 of 2 hunks: hunk 1 (line 1) applied; hunk 2 (line [0-9]+) rejected"
                                       (plist-get (car results) :content)))
               (with-current-buffer (find-buffer-visiting cells)
                 (should (string-prefix-p "def width(text: str)" (buffer-string)))
                 (should (string-match-p "^N = cell_len(\"a\")$" (buffer-string))))
               (let ((record (car (last (mapcar (lambda (line) (json-parse-string line :object-type 'alist))
                                                (split-string (with-temp-buffer
                                                                (insert-file-contents agent-q-audit-file)
                                                                (buffer-string))
                                                              "\n" t))))))
                 (should (equal (alist-get 'tool record) "rename_symbol"))
                 (should (equal (alist-get 'accepted (alist-get 'review record)) [1]))
                 (should (equal (alist-get 'rejected (alist-get 'review record)) [2])))))))
      (agent-q-cancel-pending)
      (delete-file agent-q-audit-file))))

(ert-deftest agent-q-code-rename-test-refusals-name-why ()
  "A bad new name and Emacs Lisp are refused before any server is asked."
  (let ((agent-q-code-start-servers nil)
        (agent-q-review--review-driver (lambda (_) (ert-fail "no review may open"))))
    (let ((result (agent-q-code-test--call "rename_symbol" :symbol "cell_len" :new_name "a b")))
      (should-not (plist-get result :success))
      (should (string-match-p "Invalid arguments: new_name must be one identifier, without U\\+0020.*nothing was changed"
                              (plist-get result :content))))
    (let ((result (agent-q-code-test--call "rename_symbol" :file (locate-library "agent-q-code.el")
                                           :line 1 :column 1 :new_name "x")))
      (should-not (plist-get result :success))
      (should (string-match-p "Emacs Lisp has none here; nothing was changed\\. Use find_references"
                              (plist-get result :content))))))

(ert-deftest agent-q-code-rename-test-review-of-files-leaves-a-changed-one ()
  "One review of two files: a file changed meanwhile is left, the other written."
  (let* ((dir (file-name-as-directory (make-temp-file "agent-q-rename" t)))
         (a (expand-file-name "a.py" dir))
         (b (expand-file-name "b.py" dir))
         (outcome nil)
         (header nil)
         (agent-q-review--review-driver
          (lambda (buffer)
            (with-current-buffer buffer
              (setq header (buffer-substring-no-properties (point-min) (point-max)))
              (agent-q-review-accept-all)
              ;; The user types in a.py's buffer while the review is open.
              (with-current-buffer (find-buffer-visiting a)
                (goto-char (point-max))
                (insert "# typed\n"))
              (agent-q-review-finish)))))
    (unwind-protect
        (progn
          (with-temp-file a (insert "old = 1\n"))
          (with-temp-file b (insert "print(old)\n"))
          (find-file-noselect a)
          (agent-q-review-files-async
           (list (list :path "a.py" :file a :current "old = 1\n" :proposal "new = 1\n")
                 (list :path "b.py" :file b :current "print(old)\n" :proposal "print(new)\n"
                       :protected "b.py governs agents"
                       :pinned (plist-get (agent-q-guard-write-verdict b) :file)))
           (lambda (plist status) (setq outcome (cons status plist))))
          (should (string-match-p "^Files: .*a\\.py\n +.*b\\.py (PROTECTED: b\\.py governs agents)$" header))
          (should (string-match-p "^@@ .* @@ \\[PENDING\\] +a\\.py hunk 1\n-old = 1\n\\+new = 1\n--- a/b\\.py\n\\+\\+\\+ b/b\\.py\n@@ .* @@ \\[PENDING\\] +b\\.py hunk 1$"
                                  header))
          (should (eq (car outcome) :success))
          (let ((files (plist-get (cdr outcome) :files)))
            (should (equal (plist-get (car files) :problem) "its text changed during the review"))
            (should-not (plist-get (car files) :target))
            (should (eq (plist-get (cadr files) :target) 'file))
            (should (equal (plist-get (cadr files) :hunks) '((1 1 accepted)))))
          (with-current-buffer (find-buffer-visiting a)
            (should (equal (buffer-string) "old = 1\n# typed\n")))
          (should (equal (agent-q-code-rename-test--file b) "print(new)\n")))
      (when (find-buffer-visiting a)
        (with-current-buffer (find-buffer-visiting a) (set-buffer-modified-p nil))
        (kill-buffer (find-buffer-visiting a)))
      (delete-directory dir t))))

(provide 'agent-q-code-rename-test)

;;; agent-q-code-rename-test.el ends here
