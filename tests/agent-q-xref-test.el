;;; agent-q-xref-test.el --- Tests for agent-q-xref  -*- lexical-binding: t -*-

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

;; ERT tests of who_calls and who_references against Emacs's own
;; sources (the emacs-el package must be installed) and temporary
;; libraries written, compiled and loaded by the tests.
;;
;; emacs --batch -Q -L lisp -L tests -l tests/agent-q-xref-test.el \
;;   -f ert-run-tests-batch-and-exit

;;; Code:

(require 'ert)
(require 'agent-q-core)
(require 'agent-q-xref)
(require 'agent-q-builtins)

(defun agent-q-xref-test--args (&rest pairs)
  "Return a hash table of the key/value PAIRS, as the executor passes them."
  (let ((table (make-hash-table :test #'equal)))
    (while pairs
      (puthash (pop pairs) (pop pairs) table))
    table))

(defun agent-q-xref-test--fresh-name (prefix)
  "Return a name starting with PREFIX that is not interned."
  (let (name)
    (while (or (null name) (intern-soft name))
      (setq name (format "%s-%d-%d" prefix (emacs-pid) (random 1000000000))))
    name))

(defmacro agent-q-xref-test--with-dir (var &rest body)
  "Run BODY with VAR bound to a fresh temporary directory, then delete it.
The directory is one of `agent-q-allowed-directories' meanwhile, so
the lines of the libraries in it are quoted.  The libraries loaded
from it are removed from `load-history' afterwards, so they do not
show up in the other tests' results."
  (declare (indent 1))
  `(let* ((,var (file-name-as-directory (make-temp-file "agent-q-xref-" t)))
          (agent-q-allowed-directories (list ,var)))
     (unwind-protect (progn ,@body)
       (setq load-history
             (seq-remove (lambda (entry)
                           (and (stringp (car entry))
                                (string-prefix-p ,var (car entry))))
                         load-history))
       (delete-directory ,var t))))

(defun agent-q-xref-test--write-and-load (file text)
  "Write TEXT to FILE and load FILE, so it is in `load-history'."
  (with-temp-file file (insert text))
  (load file nil t t))

(defun agent-q-xref-test--line-of (file regexp)
  "Return the line number of the first match of REGEXP in FILE."
  (with-temp-buffer
    (insert-file-contents file)
    (goto-char (point-min))
    (re-search-forward regexp)
    (line-number-at-pos (match-beginning 0))))

(ert-deftest agent-q-xref-test-known-caller-in-emacs-sources ()
  "`save-some-buffers' in files.el calls `save-buffer'."
  (let* ((source (agent-q-xref--source-file (symbol-file 'save-some-buffers 'defun)))
         (expected-line
          (with-temp-buffer
            (insert-file-contents source)
            (emacs-lisp-mode)
            (goto-char (point-min))
            (re-search-forward "^(defun save-some-buffers ")
            (re-search-forward "(save-buffer\\_>")
            (line-number-at-pos)))
         (result (agent-q-xref-who-calls-handler
                  (agent-q-xref-test--args "function" "save-buffer"))))
    (should (string-suffix-p "files.el.gz" source))
    (should (string-prefix-p "Functions calling save-buffer:\n" result))
    (should (string-match-p
             (regexp-quote (format "%s:%d: in save-some-buffers: (save-buffer"
                                   (abbreviate-file-name source) expected-line))
             result))
    ;; The definition site itself is not a call.
    (should-not (string-match-p "in save-buffer: (defun save-buffer" result))))

(ert-deftest agent-q-xref-test-known-reference-in-emacs-sources ()
  "`buffer-file-name' is referenced in `basic-save-buffer' in files.el."
  (let ((result (agent-q-xref-who-references-handler
                 (agent-q-xref-test--args "variable" "buffer-file-name"
                                          "limit" 100000))))
    (should (string-prefix-p "References to buffer-file-name:\n" result))
    (should (string-match-p "files\\.el\\.gz:[0-9]+: in basic-save-buffer: " result))
    (should-not (string-match-p "not shown" result))))

;; The line of a hit in Emacs's own sources is searched for by its text,
;; so that the tests name the construct and not only a line number of
;; one Emacs release.
(defun agent-q-xref-test--emacs-source (library)
  "The source file (.el or .el.gz) of LIBRARY in Emacs's Lisp directory."
  (let ((file (agent-q-xref--source-file (locate-library library))))
    (should (file-exists-p file))
    file))

(defun agent-q-xref-test--lines (name kind file)
  "The lines of FILE where NAME is found as KIND, in order."
  (mapcar (lambda (hit) (nth 1 hit))
          (plist-get (agent-q-xref-find name kind (list file)) :hits)))

(ert-deftest agent-q-xref-test-pcase-declare-and-aux-in-emacs-sources ()
  "Calls in pcase guards, declare lambdas and &aux defaults are found.
And a custom type's (function :value NAME) and declare-function's
parameter names are not calls."
  (let* ((elisp-mode (agent-q-xref-test--emacs-source "elisp-mode"))
         (guard-line (agent-q-xref-test--line-of
                      elisp-mode "(guard (save-excursion\n *(goto-char (1- beg))"))
         (eieio (agent-q-xref-test--emacs-source "eieio-core"))
         (debug (agent-q-xref-test--emacs-source "debug"))
         (aux-line (agent-q-xref-test--line-of debug "(&aux (mode +major-mode)"))
         (cus-start (agent-q-xref-test--emacs-source "cus-start"))
         (gnutls (agent-q-xref-test--emacs-source "gnutls")))
    ;; elisp-mode.el: `(goto-char (1- beg))' inside `(guard (save-excursion ...))'
    ;; (line 729 in Emacs 28.2), in `elisp-completion-at-point'.
    (let ((hit (assq (1+ guard-line)
                     (mapcar #'cdr (plist-get (agent-q-xref-find "goto-char" 'call
                                                                 (list elisp-mode))
                                              :hits)))))
      (should hit)
      (should (equal (nth 2 hit) "elisp-completion-at-point"))
      (should (equal (nth 3 hit) "(goto-char (1- beg))")))
    ;; eieio-core.el: `(ignore obj)' and `(ignore class ...)' in the lambdas of
    ;; `(declare (compiler-macro (lambda ...)))', and the `keywordp' of their
    ;; `(pred keywordp)' patterns.
    (let ((lines (agent-q-xref-test--lines "ignore" 'call eieio)))
      (dolist (text '("(ignore obj)" "(ignore class)" "(ignore class value)"))
        (should (memq (agent-q-xref-test--line-of eieio (regexp-quote text)) lines))))
    (should (memq (agent-q-xref-test--line-of eieio "(pred keywordp)")
                  (agent-q-xref-test--lines "keywordp" 'call eieio)))
    ;; debug.el: `(&aux (mode major-mode))' in a `cl-defstruct' :constructor
    ;; (line 138 in Emacs 28.2).
    (let ((hits (plist-get (agent-q-xref-find "major-mode" 'reference (list debug)) :hits)))
      (should (equal (nth 2 (assq aux-line (mapcar #'cdr hits))) "debugger--buffer-state")))
    ;; cus-start.el: `(function :value ignore)' in a custom type is data.
    (let ((type-line (agent-q-xref-test--line-of cus-start "(function :value ignore)")))
      (should-not (memq type-line (agent-q-xref-test--lines "ignore" 'call cus-start))))
    ;; gnutls.el: `(declare-function gnutls-errorp "gnutls.c" (error))' (line
    ;; 220 in Emacs 28.2); the file's real calls of `error' are still found.
    (let ((lines (agent-q-xref-test--lines "error" 'call gnutls)))
      (should lines)
      (should-not (memq (agent-q-xref-test--line-of
                         gnutls (regexp-quote "(declare-function gnutls-errorp \"gnutls.c\" (error))"))
                        lines)))
    (should-not (memq (agent-q-xref-test--line-of gnutls "(declare-function gnutls-boot")
                      (agent-q-xref-test--lines "proc" 'reference gnutls)))))

(ert-deftest agent-q-xref-test-comments-strings-and-data-are-skipped ()
  "Only the real call is reported, with its line and definition."
  (agent-q-xref-test--with-dir dir
    (let* ((target (agent-q-xref-test--fresh-name "agent-q-xref-test-target"))
           (caller (agent-q-xref-test--fresh-name "agent-q-xref-test-caller"))
           (file (expand-file-name "xref-calls.el" dir)))
      (agent-q-xref-test--write-and-load
       file
       (format ";;; xref-calls.el --- test  -*- lexical-binding: t -*-
(defun %1$s () 1)
;; (%1$s) in a comment
(defun %2$s ()
  \"Docstring mentioning (%1$s) and \\\"(%1$s)\\\".\"
  (list ?\\( '(%1$s) \"(%1$s)\" '%1$s)
  (%1$s))
"
               target caller))
      (let ((result (agent-q-xref-who-calls-handler
                     (agent-q-xref-test--args "function" target)))
            (found (agent-q-xref-find target 'call (list file))))
        (should (equal result
                       (format "Functions calling %s:\n%s:7: in %s: (%s))"
                               target (abbreviate-file-name file) caller target)))
        (should (equal (plist-get found :hits)
                       (list (list file 7 4 caller (format "(%s))" target)))))))))

(ert-deftest agent-q-xref-test-references-exclude-definition ()
  "References are found in code; the `defvar' itself is not one."
  (agent-q-xref-test--with-dir dir
    (let* ((var (agent-q-xref-test--fresh-name "agent-q-xref-test-var"))
           (file (expand-file-name "xref-refs.el" dir)))
      (agent-q-xref-test--write-and-load
       file
       (format ";;; xref-refs.el --- test  -*- lexical-binding: t -*-
(defvar %1$s 1 \"Doc of %1$s.\")
(defun xref-refs-user ()
  ;; %1$s
  (setq %1$s (1+ %1$s))
  (boundp '%1$s))
"
               var))
      (let ((result (agent-q-xref-who-references-handler
                     (agent-q-xref-test--args "variable" var)))
            (short (abbreviate-file-name file)))
        (should (equal result
                       (mapconcat
                        #'identity
                        (list (format "References to %s:" var)
                              (format "%s:5: in xref-refs-user: (setq %s (1+ %s))"
                                      short var var)
                              (format "%s:5: in xref-refs-user: (setq %s (1+ %s))"
                                      short var var)
                              (format "%s:6: in xref-refs-user: (boundp '%s))"
                                      short var))
                        "\n")))))))

(ert-deftest agent-q-xref-test-not-found-and-not-interned ()
  "Interned symbols without hits and uninterned names get clear messages."
  (let ((lonely (agent-q-xref-test--fresh-name "agent-q-xref-test-lonely"))
        (ghost (agent-q-xref-test--fresh-name "agent-q-xref-test-ghost")))
    (intern lonely)
    (should (string-prefix-p
             (format "No callers found for %s\n" lonely)
             (agent-q-xref-who-calls-handler
              (agent-q-xref-test--args "function" lonely))))
    (should (string-prefix-p
             (format "No references found for %s\n" lonely)
             (agent-q-xref-who-references-handler
              (agent-q-xref-test--args "variable" lonely))))
    ;; A name no code can refer to, or no name, is a failure of the call.
    (let ((err (should-error (agent-q-xref-who-calls-handler
                              (agent-q-xref-test--args "function" ghost))
                             :type 'agent-q-tool-failure)))
      (should (equal (cadr err)
                     (format "Symbol %s not found: it is not interned, so no loaded code calls it."
                             ghost))))
    (should (string-match-p
             "not interned, so no loaded code references it"
             (cadr (should-error (agent-q-xref-who-references-handler
                                  (agent-q-xref-test--args "variable" ghost))
                                 :type 'agent-q-tool-failure))))
    (should (string-prefix-p
             "Invalid arguments"
             (cadr (should-error (agent-q-xref-who-calls-handler
                                  (agent-q-xref-test--args "function" ""))
                                 :type 'agent-q-tool-failure))))))

(ert-deftest agent-q-xref-test-library-without-source ()
  "A loaded library whose source is gone is named as not searched."
  (agent-q-xref-test--with-dir dir
    (let* ((lib (agent-q-xref-test--fresh-name "agent-q-xref-test-nosrc"))
           (el (expand-file-name (concat lib ".el") dir))
           (byte-compile-log-warning-function #'ignore))
      (with-temp-file el
        (insert (format ";;; %1$s.el --- test  -*- lexical-binding: t -*-
(defun %1$s-fn () (car-safe nil))
(provide '%1$s)
" lib)))
      (should (byte-compile-file el))
      (delete-file el)
      (load (concat el "c") nil t t)
      (should (member lib (cdr (agent-q-xref-library-sources))))
      (let ((result (agent-q-xref-who-calls-handler
                     (agent-q-xref-test--args "function" "car-safe"))))
        (should (string-match-p
                 (concat "^Not searched, Emacs Lisp source not installed ([0-9]+ librar\\(?:y\\|ies\\)): .*"
                         (regexp-quote lib))
                 result))))))

(ert-deftest agent-q-xref-test-gzip-source ()
  "A library loaded from a .el.gz file is searched."
  (agent-q-xref-test--with-dir dir
    (let* ((target (agent-q-xref-test--fresh-name "agent-q-xref-test-gz"))
           (file (expand-file-name "xref-gz.el.gz" dir)))
      (auto-compression-mode 1)
      (agent-q-xref-test--write-and-load
       file
       (format ";;; xref-gz.el --- test  -*- lexical-binding: t -*-
(defun %1$s () 1)
(defun xref-gz-user () (funcall #'%1$s))
" target))
      (should (equal (with-temp-buffer
                       (set-buffer-multibyte nil)
                       (insert-file-contents-literally file nil 0 2)
                       (buffer-string))
                     "\x1f\x8b"))
      (should (member file (car (agent-q-xref-library-sources))))
      (should (equal (agent-q-xref-who-calls-handler
                      (agent-q-xref-test--args "function" target))
                     (format "Functions calling %s:\n%s:3: in xref-gz-user: %s"
                             target (abbreviate-file-name file)
                             (format "(defun xref-gz-user () (funcall #'%s))" target)))))))

(ert-deftest agent-q-xref-test-cap-and-unreadable-files ()
  "Results are capped with a count; unreadable files are reported."
  (agent-q-xref-test--with-dir dir
    (let* ((target (agent-q-xref-test--fresh-name "agent-q-xref-test-many"))
           (file (expand-file-name "xref-many.el" dir)))
      (agent-q-xref-test--write-and-load
       file
       (format "(defun %1$s () 1)\n(defun xref-many () (%1$s) (%1$s) (%1$s))\n" target))
      (let ((result (agent-q-xref-who-calls-handler
                     (agent-q-xref-test--args "function" target "limit" 1))))
        (should (string-match-p "^\\.\\.\\. 2 more not shown (3 found in all)$" result))
        (should (= 3 (length (split-string result "\n")))))
      (let ((found (agent-q-xref-find target 'call
                                      (list file (expand-file-name "missing.el" dir)))))
        (should (= 3 (length (plist-get found :hits))))
        (should (equal (mapcar #'car (plist-get found :errors))
                       (list (expand-file-name "missing.el" dir))))
        (should (string-match-p "^Could not read 1 source file(s): .*missing\\.el"
                                (car (agent-q-xref--notes found))))))))

(ert-deftest agent-q-xref-test-source-file-mapping ()
  "Compiled files map to the source beside them; names lose .eln hashes."
  (agent-q-xref-test--with-dir dir
    (let ((plain (expand-file-name "a.el" dir))
          (gz (expand-file-name "b.el.gz" dir)))
      (with-temp-file plain (insert ";; a\n"))
      (with-temp-file gz (insert ";; b\n"))
      (should (equal (agent-q-xref--source-file (concat plain "c")) plain))
      (should (equal (agent-q-xref--source-file (expand-file-name "b.elc" dir)) gz))
      (should (equal (agent-q-xref--source-file (expand-file-name "b.el" dir)) gz))
      (should (equal (agent-q-xref--source-file gz) gz))
      (should-not (agent-q-xref--source-file (expand-file-name "c.elc" dir)))
      (should-not (agent-q-xref--source-file (expand-file-name "m.so" dir)))
      (should (equal (agent-q-xref--library-name
                      "/x/eln-cache/28.2-ab/subr-x-4d0a6d9c-b8e9b1f3.eln")
                     "subr-x"))
      (should (equal (agent-q-xref--library-name "/x/foo-bar.elc") "foo-bar")))))

(ert-deftest agent-q-xref-test-index-follows-file-changes ()
  "Indexed files are skipped only while unchanged."
  (agent-q-xref-test--with-dir dir
    (let* ((target (agent-q-xref-test--fresh-name "agent-q-xref-test-idx"))
           (file (expand-file-name "xref-idx.el" dir))
           (other (expand-file-name "xref-other.el" dir))
           (files (list file other)))
      (with-temp-file file (insert "(defun xref-idx-a () (ignore))\n"))
      (with-temp-file other (insert (format "(defun xref-idx-b () (%s))\n" target)))
      (should (= 2 (agent-q--core-xref-index files nil)))
      (should (= 0 (agent-q--core-xref-index files nil)))
      (should (equal (mapcar #'car (plist-get (agent-q--core-xref-scan files target 'call nil nil) :hits))
                     (list other)))
      ;; FILE did not contain the name when indexed; now it does.
      (with-temp-file file
        (insert (format "(defun xref-idx-a ()\n  (%s 1))\n" target)))
      (should (equal (mapcar (lambda (hit) (list (car hit) (nth 1 hit)))
                             (plist-get (agent-q--core-xref-scan files target 'call nil nil) :hits))
                     (list (list file 2) (list other 1))))
      (should (consp (agent-q--core-xref-cache-info)))
      (should (memq (agent-q--core-xref-index files t) '(t nil)))
      (while (agent-q--core-xref-indexing-p) (sleep-for 0.01))
      (should (= 2 (length (plist-get (agent-q--core-xref-scan files target 'call nil nil) :hits)))))))

;; The bug this guards against is a scan that never returns, so it runs in a
;; child Emacs under timeout(1): a hang fails the test instead of the suite.
(ert-deftest agent-q-xref-test-fifo-is-an-error-not-a-hang ()
  "A FIFO among the files is reported as unreadable; the others are scanned."
  (agent-q-xref-test--with-dir dir
    (let ((before (expand-file-name "a.el" dir))
          (fifo (expand-file-name "m.el" dir))
          (after (expand-file-name "z.el" dir))
          (emacs (expand-file-name invocation-name invocation-directory))
          (lisp-dir (file-name-directory (locate-library "agent-q-xref"))))
      (with-temp-file before (insert "(defun xref-fifo-a () (xref-fifo-target))\n"))
      (with-temp-file after (insert "(defun xref-fifo-z ()\n  (xref-fifo-target))\n"))
      (should (zerop (call-process "mkfifo" nil nil nil fifo)))
      (with-temp-buffer
        (let* ((form `(progn
                        (require 'agent-q-core)
                        (require 'agent-q-xref)
                        (let ((files (list ,before ,fifo ,after)))
                          ;; The indexer first: a scan indexes what it parses.
                          (prin1 (list (agent-q--core-xref-index files nil)
                                       (agent-q-xref-find "xref-fifo-target" 'call files))))))
               (status (call-process "timeout" nil (list t nil) nil "60"
                                     emacs "--batch" "-Q" "-L" lisp-dir
                                     "--eval" (prin1-to-string form))))
          (should (eq status 0))
          (pcase-let ((`(,indexed ,found) (car (read-from-string (buffer-string)))))
            (should (equal (mapcar (lambda (hit) (list (nth 0 hit) (nth 1 hit) (nth 3 hit)))
                                   (plist-get found :hits))
                           (list (list before 1 "xref-fifo-a")
                                 (list after 2 "xref-fifo-z"))))
            (should (equal (plist-get found :errors)
                           (list (cons fifo "a FIFO (named pipe), not a regular file; not read"))))
            ;; The indexer skipped it too, and indexed the two others.
            (should (equal indexed 2))))))))

(ert-deftest agent-q-xref-test-private-and-sensitive-lines-are-not-quoted ()
  "Hits in a library outside the public directories are listed without their line."
  (let* ((private-dir (file-name-as-directory (make-temp-file "agent-q-xref-private-" t)))
         (allowed-dir (file-name-as-directory (make-temp-file "agent-q-xref-allowed-" t)))
         (agent-q-allowed-directories (list allowed-dir))
         (agent-q-sensitive-file-patterns (cons "/my-secrets[^/]*\\'"
                                                agent-q-sensitive-file-patterns))
         (var (agent-q-xref-test--fresh-name "agent-q-xref-test-token"))
         (private (expand-file-name "secrets.el" private-dir))
         (sensitive (expand-file-name "my-secrets.el" allowed-dir))
         (public (expand-file-name "public.el" allowed-dir)))
    (unwind-protect
        (progn
          (agent-q-xref-test--write-and-load
           private
           (format ";;; secrets.el --- private  -*- lexical-binding: t -*-
(defvar %1$s nil)
(defun xref-private-setup ()
  (setq %1$s \"sk-live-PRIVATE-123\"))
" var))
          (agent-q-xref-test--write-and-load
           sensitive
           (format "(defun xref-sensitive-setup () (setq %s \"sk-live-SENSITIVE-456\"))\n" var))
          (agent-q-xref-test--write-and-load
           public
           (format "(defun xref-public-user () (message \"%%s\" %s))\n" var))
          (let ((result (agent-q-xref-who-references-handler
                         (agent-q-xref-test--args "variable" var))))
            (should-not (string-match-p "sk-live" result))
            (should (equal
                     (split-string result "\n")
                     (list (format "References to %s:" var)
                           (format "%s:1: in xref-sensitive-setup" (abbreviate-file-name sensitive))
                           (format "%s:1: in xref-public-user: (defun xref-public-user () (message \"%%s\" %s))"
                                   (abbreviate-file-name public) var)
                           (format "%s:4: in xref-private-setup" (abbreviate-file-name private))
                           (format "Lines not quoted from 1 file(s) outside Emacs's Lisp directory, the package directories and the allowed directories (the read guard asks before reading such files; use read_file, which asks the user): %s"
                                   (abbreviate-file-name private))
                           (format "Lines not quoted from 1 file(s) matching a sensitive file pattern: %s"
                                   (abbreviate-file-name sensitive)))))))
      (setq load-history
            (seq-remove (lambda (entry)
                          (and (stringp (car entry))
                               (or (string-prefix-p private-dir (car entry))
                                   (string-prefix-p allowed-dir (car entry)))))
                        load-history))
      (delete-directory private-dir t)
      (delete-directory allowed-dir t))))

(ert-deftest agent-q-xref-test-emacs-and-package-sources-are-quoted ()
  "Emacs's own sources and package directories are public; a temp dir is not."
  (let* ((agent-q-allowed-directories nil)
         (policy (agent-q-xref--quote-policy
                  (list (agent-q-xref--source-file (symbol-file 'save-some-buffers 'defun))
                        (expand-file-name "nowhere/x.el" temporary-file-directory))))
         (decisions nil))
    (maphash (lambda (_file decision) (push decision decisions)) policy)
    (should (equal (sort (mapcar #'symbol-name decisions) #'string<) '("private" "t"))))
  (let ((package-user-dir (make-temp-file "agent-q-xref-elpa-" t)))
    (unwind-protect
        (should (member (file-name-as-directory (file-truename package-user-dir))
                        (agent-q-xref--public-directories)))
      (delete-directory package-user-dir t))))

(defun agent-q-xref-test--big-tree (dir links)
  "Write a 5 MB library into DIR under 1 + LINKS hard-linked names.
Every name has one call of `xref-big-target', on line 1.  Scanning
them all reads 5 MB per name (disk and page cache hold it once), so
1,500 names take minutes.  Return the file names."
  (let ((big (expand-file-name "big-0000.el" dir))
        (files nil))
    (with-temp-file big
      (insert "(defun xref-big-caller () (xref-big-target))\n")
      (dotimes (i 60000)
        (insert (format "(defun xref-big-fill-%d (x) (let ((y (* x 2))) (when (> y 3) (message \"%%s\" y))))\n" i))))
    (push big files)
    (dotimes (i links)
      (let ((link (expand-file-name (format "big-%04d.el" (1+ i)) dir)))
        (add-name-to-file big link)
        (push link files)))
    (nreverse files)))

(ert-deftest agent-q-xref-test-time-limit-stops-a-long-scan ()
  "A scan longer than `agent-q-xref-max-seconds' stops and says so."
  (agent-q-xref-test--with-dir dir
    (let* ((files (agent-q-xref-test--big-tree dir 1500))
           (found (agent-q-xref-find "xref-big-target" 'call files nil 1.0)))
      (should (eq (plist-get found :interrupted) 'timeout))
      (should (= (plist-get found :files) 1501))
      (should (< (plist-get found :scanned) 1501))
      (should (= (plist-get found :total) (length (plist-get found :hits))))
      (should (= (plist-get found :total) (plist-get found :scanned)))
      (let ((agent-q-xref-max-seconds 1.0))
        (cl-letf (((symbol-function 'agent-q-xref-library-sources)
                   (lambda () (cons files nil))))
          (intern "xref-big-target")
          (should (string-match-p
                   "\\`Stopped after 1.0 s (agent-q-xref-max-seconds) having scanned [0-9]+ of 1501 files: the results are incomplete\\.\nFunctions calling xref-big-target:\n.*big-[0-9]+\\.el:1: in xref-big-caller: (defun xref-big-caller () (xref-big-target))"
                   (agent-q-xref-who-calls-handler
                    (agent-q-xref-test--args "function" "xref-big-target")))))))))

(ert-deftest agent-q-xref-test-long-scan-shows-progress ()
  "A scan longer than a second says in the echo area how far it got."
  (agent-q-xref-test--with-dir dir
    (let* ((files (agent-q-xref-test--big-tree dir 1500))
           (stderr (expand-file-name "stderr.txt" dir))
           (emacs (expand-file-name invocation-name invocation-directory))
           (lisp-dir (file-name-directory (locate-library "agent-q-xref")))
           (form `(progn
                    (require 'agent-q-core)
                    (require 'agent-q-xref)
                    (prin1 (plist-get (agent-q-xref-find "xref-big-target" 'call ',files nil 1.8)
                                      :interrupted)))))
      (with-temp-buffer
        (should (eq 0 (call-process emacs nil (list t stderr) nil "--batch" "-Q" "-L" lisp-dir
                                    "--eval" (prin1-to-string form))))
        (should (equal (buffer-string) "timeout")))
      (with-temp-buffer
        (insert-file-contents stderr)
        (should (re-search-forward
                 "^Scanning for callers of xref-big-target: [0-9]+ of 1501 files (C-g to stop)\\.\\.\\.$"
                 nil t))))))

;; C-g in a real terminal Emacs (tmux), during a scan of about 7 GB
;; of source text that would take minutes to finish.
(ert-deftest agent-q-xref-test-c-g-interrupts-a-long-scan ()
  "C-g stops a scan; the result says so and lists what was found until then."
  (require 'agent-q-tmux-test)
  (agent-q-tmux-test--ensure-tmux)
  (agent-q-xref-test--with-dir dir
    (let* ((files (agent-q-xref-test--big-tree dir 1500))
           (out (expand-file-name "out.eld" dir))
           (setup (expand-file-name "setup.el" dir))
           (session (format "agent-q-xref-cg-%d-%d" (emacs-pid) (random 100000)))
           (emacs (expand-file-name invocation-name invocation-directory))
           (lisp-dir (file-name-directory (locate-library "agent-q-xref"))))
      (with-temp-file setup
        (prin1 `(progn
                  (require 'cl-lib)
                  (require 'agent-q-core)
                  (require 'agent-q-xref)
                  (require 'agent-q-builtins)
                  (setq agent-q-allowed-directories (list ,dir))
                  (intern "xref-big-target")
                  (setq agent-q-xref-background-index nil)
                  (defun xref-cg-run ()
                    (interactive)
                    (message "xref-scan-started")
                    (redisplay t)
                    (let ((result
                           (cl-letf (((symbol-function 'agent-q-xref-library-sources)
                                      (lambda () (cons ',files nil))))
                             (agent-q-xref-who-calls-handler
                              (let ((args (make-hash-table :test #'equal)))
                                (puthash "function" "xref-big-target" args)
                                args)))))
                      (with-temp-file ,out (prin1 result (current-buffer)))
                      (kill-emacs 0)))
                  (global-set-key (kbd "<f5>") #'xref-cg-run))
               (current-buffer)))
      (unwind-protect
          (progn
            (agent-q-tmux-test--tmux
             "new-session" "-d" "-s" session "-x" "200" "-y" "50"
             (mapconcat #'shell-quote-argument
                        (list emacs "-nw" "-Q" "-L" lisp-dir "-l" setup) " "))
            (agent-q-tmux-test--wait-screen session "scratch")
            (agent-q-tmux-test--tmux "send-keys" "-t" session "F5")
            (agent-q-tmux-test--wait-screen session "xref-scan-started")
            (sleep-for 1.5)
            (agent-q-tmux-test--tmux "send-keys" "-t" session "C-g")
            (let ((result (car (read-from-string (agent-q-tmux-test--wait-file out)))))
              (should (string-match
                       "\\`Interrupted by the user (C-g) after scanning \\([0-9]+\\) of 1501 files: the results are incomplete\\.\n"
                       result))
              (should (< (string-to-number (match-string 1 result)) 1501))
              ;; The hits of the files scanned until then are listed.
              (should (string-match-p "big-[0-9]+\\.el:1: in xref-big-caller: (defun xref-big-caller () (xref-big-target))"
                                      result))))
        (call-process "tmux" nil nil nil "kill-session" "-t" session)))))

(ert-deftest agent-q-xref-test-module-argument-errors ()
  "The module signals `agent-q-xref-error' for invalid arguments."
  (should-error (agent-q--core-xref-scan '(1) "x" 'call nil nil) :type 'agent-q-xref-error)
  (should-error (agent-q--core-xref-scan nil "" 'call nil nil) :type 'agent-q-xref-error)
  (should-error (agent-q--core-xref-scan nil "x" 'calls nil nil) :type 'agent-q-xref-error)
  (should-error (agent-q--core-xref-scan "file.el" "x" 'call nil nil) :type 'agent-q-xref-error)
  (should-error (agent-q--core-xref-scan nil "x" 'call -1 nil) :type 'agent-q-xref-error)
  (should-error (agent-q--core-xref-scan nil "x" 'call "10" nil) :type 'agent-q-xref-error)
  (should-error (agent-q--core-xref-scan nil "x" 'call nil -1) :type 'agent-q-xref-error)
  (should-error (agent-q--core-xref-scan nil "x" 'call nil 1.0e+INF) :type 'agent-q-xref-error)
  (should-error (agent-q--core-xref-scan nil "x" 'call nil "1") :type 'agent-q-xref-error)
  (should (equal (agent-q--core-xref-scan nil "x" 'reference nil 10)
                 '(:hits nil :errors nil :total 0 :scanned 0 :files 0 :interrupted nil))))

(provide 'agent-q-xref-test)

;;; agent-q-xref-test.el ends here
