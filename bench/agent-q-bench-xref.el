;;; agent-q-bench-xref.el --- Benchmark 2: cross-reference scans  -*- lexical-binding: t -*-

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

;; Benchmark 2: who_calls and who_references over every
;; library in Emacs's own Lisp directory (emacs-el: about 1,500 .el.gz
;; files), side by side, wall clock (ripgrep is a subprocess):
;;
;;   1. Emacs Lisp scan (the baseline): `insert-file-contents' each file
;;      (through jka-compr, which decodes it) and `re-search-forward' the
;;      symbol, skipping matches in comments and strings (`syntax-ppss'
;;      with the Emacs Lisp syntax table);
;;   2. the same with `insert-file-contents-literally' and
;;      `zlib-decompress-region' (no decoding: the fastest Lisp scan);
;;   3. `rg -z -w NAME DIR' as a subprocess, output read into a buffer
;;      (plain text search: comments and strings included);
;;   4. agent-q's native scan (`agent-q--core-xref-scan') three ways:
;;      first scan after `agent-q--core-xref-clear-cache'; a repeat of
;;      the same scan (the files that contained NAME are indexed); and
;;      with every file indexed (`agent-q--core-xref-index', what the
;;      background index leaves behind after the first scan).
;;
;; Plus, for reference, rg on a decompressed copy of the directory
;; (not what a user has: the tree is installed compressed).
;;
;; Agreement check (untimed): every line the native scan reports must
;; be among rg's matches and among the Emacs Lisp scan's; the lines rg
;; finds that the native scan drops are classified (comment, string or
;; docstring, definition site, quoted data, the other kind of use, not
;; the symbol at all, other code) and counted, with samples of the
;; unexplained ones.

;;; Code:

(require 'agent-q-bench)
(require 'agent-q-xref)
(require 'cl-lib)
(require 'subr-x)

(declare-function agent-q--core-xref-scan "agent-q-core" (files name kind max-hits max-seconds))
(declare-function agent-q--core-xref-index "agent-q-core" (files background))
(declare-function agent-q--core-xref-clear-cache "agent-q-core" ())
(declare-function agent-q--core-xref-cache-info "agent-q-core" ())

(declare-function elisp-refs--contents-buffer "elisp-refs" (path))
(declare-function elisp-refs--read-and-find "elisp-refs" (buffer symbol match-p))
(declare-function elisp-refs--sexp-positions "elisp-refs" (buffer start-pos end-pos))
(declare-function elisp-refs--function-p "elisp-refs" (symbol form path))
(declare-function elisp-refs--variable-p "elisp-refs" (symbol form path))

(defvar jka-compr-verbose)
(defvar emacs-lisp-mode-syntax-table)
(defvar elisp-refs-verbose)

(defconst agent-q-bench-xref-queries
  '(("save-buffer" call "a common function")
    ("buffer-file-name" reference "a common variable")
    ("image-dired-thumbnail-mode" call "a rare function"))
  "The queries: (NAME KIND WHAT).")

(defvar agent-q-bench-xref--compressed-mb 0.0
  "Size of the scanned tree in MB (compressed), set by the run.")

(defconst agent-q-bench-xref-max-runs 5
  "Most runs per candidate here: one run reads the whole tree five ways.")

(defun agent-q-bench-xref-directory ()
  "Emacs's own Lisp directory (/usr/share/emacs/VERSION/lisp), or nil."
  (let ((dir (expand-file-name "../lisp" data-directory)))
    (and (file-directory-p dir) dir)))

(defun agent-q-bench-xref--regexp (name)
  "A regexp matching the symbol NAME."
  (concat "\\_<" (regexp-quote name) "\\_>"))

(defun agent-q-bench-xref--code-lines (name)
  "Lines of code matching symbol NAME in the current buffer, as line numbers.
Matches in comments and strings are skipped."
  (let ((re (agent-q-bench-xref--regexp name))
        (lines nil))
    (set-syntax-table emacs-lisp-mode-syntax-table)
    (syntax-ppss-flush-cache (point-min))
    (goto-char (point-min))
    (while (re-search-forward re nil t)
      (unless (nth 8 (save-excursion (syntax-ppss (match-beginning 0))))
        (push (line-number-at-pos (match-beginning 0)) lines)
        (forward-line 1)))
    (nreverse lines)))

(defun agent-q-bench-xref-elisp-scan (files name literal)
  "Scan FILES for code lines mentioning the symbol NAME, in Emacs Lisp.
With LITERAL, read with `insert-file-contents-literally' and
`zlib-decompress-region'; else with `insert-file-contents'.
Return a list of (FILE . LINE)."
  (let ((hits nil)
        (jka-compr-verbose nil)
        (case-fold-search nil))
    (with-temp-buffer
      (when literal (set-buffer-multibyte nil))
      (dolist (file files)
        (erase-buffer)
        (if (not literal)
            (insert-file-contents file)
          (insert-file-contents-literally file)
          (when (string-suffix-p ".gz" file)
            (zlib-decompress-region (point-min) (point-max))))
        (dolist (line (agent-q-bench-xref--code-lines name))
          (push (cons file line) hits))))
    (nreverse hits)))

(defun agent-q-bench-xref-rg (name dir)
  "Run `rg -z -w' for NAME over DIR; return its output as a string."
  (with-temp-buffer
    (call-process "rg" nil t nil "-z" "-w" "-n" "--no-heading" "--fixed-strings"
                  "--" name dir)
    (buffer-string)))

(defun agent-q-bench-xref--rg-lines (output)
  "The (FILE . LINE) matches in rg's OUTPUT."
  (let (hits)
    (dolist (line (split-string output "\n" t))
      (when (string-match "\\`\\([^:\n]+\\):\\([0-9]+\\):" line)
        (push (cons (match-string 1 line) (string-to-number (match-string 2 line))) hits)))
    (nreverse hits)))

(defconst agent-q-bench-xref--elpa-directory "/usr/share/emacs/site-lisp/elpa"
  "Where Debian's elpa-* packages (elpa-elisp-refs and its dependencies) live.")

(defun agent-q-bench-xref--load-elisp-refs ()
  "Load elisp-refs; return non-nil when it is available.
With `emacs -Q' Debian's elpa packages are not on `load-path': their
directories are added first."
  (or (featurep 'elisp-refs)
      (progn
        (unless (locate-library "elisp-refs")
          (when (file-directory-p agent-q-bench-xref--elpa-directory)
            (dolist (dir (directory-files agent-q-bench-xref--elpa-directory t "\\`[^.]"))
              (when (file-directory-p dir)
                (add-to-list 'load-path dir t)))))
        (require 'elisp-refs nil t))))

(defun agent-q-bench-xref--elisp-refs-positions (buffer match symbol kind)
  "The positions in BUFFER of SYMBOL's occurrences in elisp-refs' MATCH.
MATCH is (FORM START END).  A variable match is the symbol itself; a
call match is the form (SYMBOL ...) or, when the call is #\='SYMBOL
or \='SYMBOL given to `funcall' or `apply', the form holding that
argument: then the argument's own position, which may be on another
line than the form's start."
  (pcase-let ((`(,form ,start ,end) match))
    (if (or (eq kind 'reference) (not (consp form)) (eq (car form) symbol))
        (list start)
      (let ((wanted (list (list 'function symbol) (list 'quote symbol)))
            (found nil))
        (cl-loop for sub in form
                 for position in (elisp-refs--sexp-positions buffer (1+ start) end)
                 when (member sub wanted)
                 do (push (car position) found))
        (or (nreverse found) (list start))))))

(defun agent-q-bench-xref-elisp-refs (files name kind)
  "Find the symbol NAME of KIND in FILES with elisp-refs.
KIND `call' uses `elisp-refs-function''s matcher, `reference'
`elisp-refs-variable''s.  Each file is read as those commands read it
\(`elisp-refs--contents-buffer', `elisp-refs--read-and-find', with
their `gc-cons-percentage' of 0.8); only the display of the results
is left out.  Return (HITS . ERRORS): HITS a list of (FILE . LINE),
ERRORS the files elisp-refs failed on."
  (let ((symbol (intern name))
        (match-p (if (eq kind 'call) #'elisp-refs--function-p #'elisp-refs--variable-p))
        (elisp-refs-verbose nil)
        (jka-compr-verbose nil)
        (gc-cons-percentage 0.8)
        (hits nil)
        (errors nil))
    (dolist (file files)
      (let ((buffer (elisp-refs--contents-buffer file)))
        (unwind-protect
            (condition-case nil
                (dolist (match (elisp-refs--read-and-find buffer symbol match-p))
                  (dolist (position (agent-q-bench-xref--elisp-refs-positions
                                     buffer match symbol kind))
                    (push (cons file (with-current-buffer buffer
                                       (line-number-at-pos position)))
                          hits)))
              (error (push file errors)))
          (kill-buffer buffer))))
    (cons (nreverse hits) (nreverse errors))))

(defun agent-q-bench-xref--native (files name kind)
  "The native scan's hits for NAME of KIND in FILES, as (FILE . LINE)."
  (mapcar (lambda (hit) (cons (nth 0 hit) (nth 1 hit)))
          (plist-get (agent-q--core-xref-scan files name kind nil nil) :hits)))

(defun agent-q-bench-xref--key (hit)
  "HIT (FILE . LINE) as a string key."
  (format "%s:%d" (car hit) (cdr hit)))

(defun agent-q-bench-xref--set (hits)
  "A hash set of the keys of HITS."
  (let ((set (make-hash-table :test #'equal)))
    (dolist (h hits) (puthash (agent-q-bench-xref--key h) t set))
    set))

(defun agent-q-bench-xref--quoted-p (start ppss)
  "Non-nil if the symbol at START is quoted data; PPSS is `syntax-ppss' there."
  (or (and (eq (char-before start) ?\')
           (not (eq (char-before (1- start)) ?#)))
      (cl-some (lambda (open)
                 (or (eq (char-after open) ?\[)
                     (eq (char-before open) ?\')
                     (save-excursion
                       (goto-char open)
                       (looking-at "(quote[ \t\n]"))))
               (nth 9 ppss))))

(defun agent-q-bench-xref--occurrence-class (kind)
  "Classify the symbol occurrence matched last, for a query of KIND.
Point is in an Emacs Lisp buffer whose match data is the occurrence."
  (let* ((start (match-beginning 0))
         (ppss (save-excursion (syntax-ppss start)))
         (bol (save-excursion (goto-char start) (line-beginning-position)))
         (before (char-before start)))
    (cond
     ((nth 4 ppss) 'comment)
     ((nth 3 ppss) 'string)
     ((save-excursion
        (goto-char start)
        (looking-back (concat "(\\(?:cl-\\)?\\(?:def[^ \t\n()]*\\|declare-function\\)"
                              "[ \t]+['#]*(?")
                      bol))
      'definition)
     ((agent-q-bench-xref--quoted-p start ppss) 'quoted)
     ((and (eq kind 'call) (not (eq before ?\())) 'other-kind)
     ((and (eq kind 'reference)
           (or (eq before ?\()
               (and (eq before ?\') (eq (char-before (1- start)) ?#))))
      'other-kind)
     (t 'code))))

(defconst agent-q-bench-xref--class-order
  '(code other-kind quoted definition string comment not-symbol)
  "Classes of the lines rg finds and the native scan drops, most suspect first.")

(defconst agent-q-bench-xref--class-names
  '((code . "code the native scan does not count (argument lists, binding forms, macros' data...)")
    (other-kind . "the other kind of use (a variable use in a who_calls query, a call in a who_references query)")
    (quoted . "quoted data ('NAME, '(... NAME ...), vectors)")
    (definition . "definition or declaration site (defun/defvar/declare-function NAME ...)")
    (string . "in a string or docstring")
    (comment . "in a comment")
    (not-symbol . "not the symbol: rg -w also matches NAME inside a longer symbol (NAME-foo, foo-NAME)"))
  "What each class means, for the notes.")

(defun agent-q-bench-xref-classify (dropped name kind)
  "Classify the DROPPED (FILE . LINE) matches of symbol NAME for a KIND query.
Return an alist (CLASS . LIST-OF-(FILE LINE TEXT)), each line in the
most suspect class of its occurrences."
  (let ((by-file (make-hash-table :test #'equal))
        (result nil)
        (re (agent-q-bench-xref--regexp name))
        (jka-compr-verbose nil)
        (case-fold-search nil))
    (dolist (d dropped) (push (cdr d) (gethash (car d) by-file)))
    (maphash
     (lambda (file lines)
       (with-temp-buffer
         (insert-file-contents file)
         (set-syntax-table emacs-lisp-mode-syntax-table)
         (dolist (line (sort lines #'<))
           (goto-char (point-min))
           (forward-line (1- line))
           (let ((eol (line-end-position))
                 (classes nil)
                 (text (string-trim (buffer-substring-no-properties
                                     (line-beginning-position) (line-end-position)))))
             (while (re-search-forward re eol t)
               (push (agent-q-bench-xref--occurrence-class kind) classes))
             (let ((class (or (cl-find-if (lambda (c) (memq c classes))
                                          agent-q-bench-xref--class-order)
                              'not-symbol)))
               (push (list file line text) (alist-get class result)))))))
     by-file)
    result))

(defun agent-q-bench-xref--decompressed-copy (files dir)
  "Decompress FILES (under DIR) into a new temporary directory; return it."
  (let ((copy (make-temp-file "agent-q-bench-lisp" t))
        (jka-compr-verbose nil))
    (dolist (file files)
      (let ((target (expand-file-name (string-remove-suffix ".gz" (file-relative-name file dir))
                                      copy)))
        (make-directory (file-name-directory target) t)
        (with-temp-buffer
          (set-buffer-multibyte nil)
          (insert-file-contents-literally file)
          (when (string-suffix-p ".gz" file)
            (zlib-decompress-region (point-min) (point-max)))
          (let ((coding-system-for-write 'no-conversion))
            (write-region nil nil target nil 'silent)))))
    copy))

(defun agent-q-bench-xref--benchmark (name kind what)
  "The benchmark name of the query NAME of KIND (WHAT it is)."
  (format "2. %s %s (%s)" (if (eq kind 'call) "who_calls" "who_references") name what))

(defun agent-q-bench-xref--check (files dir name kind what)
  "Check that the scans of FILES under DIR agree for NAME of KIND (WHAT)."
  (let* ((native (agent-q-bench-xref--native files name kind))
         (elisp (agent-q-bench-xref-elisp-scan files name nil))
         (literal (agent-q-bench-xref-elisp-scan files name t))
         (rg (agent-q-bench-xref--rg-lines (agent-q-bench-xref-rg name dir)))
         (rg-set (agent-q-bench-xref--set rg))
         (elisp-set (agent-q-bench-xref--set elisp))
         (native-set (agent-q-bench-xref--set native))
         (native-lines (hash-table-count native-set))
         (not-in-rg (cl-remove-if (lambda (h) (gethash (agent-q-bench-xref--key h) rg-set)) native))
         (not-in-elisp (cl-remove-if (lambda (h) (gethash (agent-q-bench-xref--key h) elisp-set))
                                     native))
         (dropped (cl-remove-if (lambda (h) (gethash (agent-q-bench-xref--key h) native-set)) rg))
         (classes (agent-q-bench-xref-classify dropped name kind)))
    (agent-q-bench-note
     "- **%s %s**: native %d hits on %d lines; Emacs Lisp scan %d code lines (literal variant %s); rg -z -w %d lines. Native lines not among rg's: **%d**; not among the Emacs Lisp scan's: **%d**. rg lines the native scan drops: %d, by class:"
     (if (eq kind 'call) "who_calls" "who_references") name
     (length native) native-lines (length elisp)
     (if (equal elisp literal) "identical" (format "DIFFERENT: %d" (length literal)))
     (length rg) (length not-in-rg) (length not-in-elisp) (length dropped))
    (ignore what)
    (dolist (class agent-q-bench-xref--class-order)
      (let ((lines (alist-get class classes)))
        (when lines
          (agent-q-bench-note "  - %d %s" (length lines)
                              (alist-get class agent-q-bench-xref--class-names))
          (when (memq class '(code other-kind quoted))
            (dolist (l (seq-take (sort (copy-sequence lines)
                                       (lambda (a b) (string< (car a) (car b))))
                                 (if (eq class 'code) 8 3)))
              (agent-q-bench-note "    - e.g. `%s:%d`: `%s`"
                                  (file-relative-name (nth 0 l) dir) (nth 1 l)
                                  (truncate-string-to-width
                                   (replace-regexp-in-string "`" "'" (nth 2 l)) 90 nil nil "…")))))))
    (dolist (h (seq-take not-in-rg 3))
      (agent-q-bench-note "  - NOT IN RG: `%s`" (agent-q-bench-xref--key h)))))

(defconst agent-q-bench-xref-elisp-refs-runs
  (max 1 (string-to-number (or (getenv "AGENT_Q_BENCH_ELISP_REFS_RUNS") "1")))
  "Runs of the elisp-refs comparison: one elisp-refs query takes about a minute.")

(defvar agent-q-bench-xref--elisp-refs-hits nil
  "The elisp-refs results of the timed runs: an alist (NAME . (HITS . ERRORS)).")

(defun agent-q-bench-xref--elisp-refs-benchmark (name kind)
  "The benchmark name of the elisp-refs comparison for NAME of KIND."
  (format "2. %s %s: elisp-refs" (if (eq kind 'call) "who_calls" "who_references") name))

(defun agent-q-bench-xref--compare-elisp-refs (files name kind)
  "Time elisp-refs and agent-q's first scan on FILES for NAME of KIND."
  (let ((agent-q-bench-runs agent-q-bench-xref-elisp-refs-runs))
    (agent-q-bench-compare
     (agent-q-bench-xref--elisp-refs-benchmark name kind)
     (list
      (list :label (if (eq kind 'call)
                       "elisp-refs (elisp-refs-function's search)"
                     "elisp-refs (elisp-refs-variable's search)")
            :run (lambda (_)
                   (setf (alist-get name agent-q-bench-xref--elisp-refs-hits nil nil #'equal)
                         (agent-q-bench-xref-elisp-refs files name kind))))
      (list :label "agent-q native, first scan (cache cleared)"
            :setup #'agent-q--core-xref-clear-cache
            :run (lambda (_) (agent-q--core-xref-scan files name kind nil nil))))
     :clock 'wall :gc '(in) :unit "query")))

(defun agent-q-bench-xref--elisp-refs-verdicts (benchmarks)
  "Notes with the elisp-refs target verdicts; BENCHMARKS are the main ones."
  (pcase-dolist (`(,name ,kind ,_what) agent-q-bench-xref-queries)
    (let* ((b (agent-q-bench-xref--elisp-refs-benchmark name kind))
           (refs (agent-q-bench-row-time (car (cl-remove-if-not
                                                (lambda (r) (equal (plist-get r :benchmark) b))
                                                (plist-get agent-q-bench--current :rows)))))
           (same-run (agent-q-bench-row-time
                      (agent-q-bench-find b "agent-q native, first scan (cache cleared)" 'in)))
           (main (cl-find-if (lambda (m) (string-prefix-p
                                          (format "2. %s %s " (if (eq kind 'call) "who_calls" "who_references") name)
                                          m))
                             benchmarks))
           (median (agent-q-bench-row-time
                    (agent-q-bench-find main "agent-q native, first scan (cache cleared)" 'in))))
      (agent-q-bench-note
       "- %s: elisp-refs %.1f s; agent-q's first scan %.0f ms beside it (%.0f ms median in the main table): **%.0f× faster** (%.0f× by the median; target ≥ 10: **%s**)."
       b refs (* 1000 same-run) (* 1000 median) (/ refs same-run) (/ refs median)
       (if (>= (/ refs (max same-run median)) 10) "met" "missed")))))

(defun agent-q-bench-xref--line-text (file line)
  "The text of LINE in FILE (decompressed), trimmed."
  (let ((jka-compr-verbose nil))
    (with-temp-buffer
      (insert-file-contents file)
      (goto-char (point-min))
      (forward-line (1- line))
      (string-trim (buffer-substring-no-properties (point) (line-end-position))))))

(defun agent-q-bench-xref--refs-only-class (hit name native-set)
  "Classify HIT (FILE . LINE), found by elisp-refs and not by agent-q, for NAME.
NATIVE-SET holds agent-q's hits.  Return (CLASS . NOTE)."
  (let ((text (agent-q-bench-xref--line-text (car hit) (cdr hit)))
        (re (agent-q-bench-xref--regexp name)))
    (cond
     ((not (string-match-p re text))
      (let ((near (cl-find-if (lambda (l) (gethash (format "%s:%d" (car hit) l) native-set))
                              (number-sequence (cdr hit) (+ (cdr hit) 5)))))
        (cons 'misplaced
              (if near (format "agent-q reports it on line %d" near) "no agent-q hit nearby"))))
     ((string-match-p (concat "(\\(?:cl-\\)?\\(?:def[^ \t\n()]*\\|gv-define[^ \t\n()]*\\|declare-function\\)[ \t]+['#]*"
                              (regexp-quote name) "\\_>")
                      text)
      (cons 'definition text))
     (t (cons 'unexplained text)))))

(defun agent-q-bench-xref--native-only-class (hit name)
  "Classify HIT (FILE . LINE), found by agent-q and not by elisp-refs, for NAME.
By the first occurrence of NAME on the line: what precedes it."
  (let* ((text (agent-q-bench-xref--line-text (car hit) (cdr hit)))
         (start (string-match (agent-q-bench-xref--regexp name) text))
         (before (and start (substring text (max 0 (- start 2)) start))))
    (cond ((null start) 'elsewhere)
          ((string-suffix-p "#'" before) 'function-quote)
          ((string-suffix-p "'" before) 'quote)
          ((string-suffix-p "(" before) 'form)
          (t 'bare))))

(defconst agent-q-bench-xref--native-only-names
  '((quote . "'NAME given to a higher-order or key-binding function (define-key, add-hook, mapcar...; elisp-refs counts 'NAME only after funcall/apply)")
    (function-quote . "#'NAME")
    (form . "(NAME ...) on the line: a let binding or a call elisp-refs's walk does not reach")
    (bare . "bare NAME (a variable use, or a menu-item's :enable value)")
    (elsewhere . "NAME not on that line"))
  "What each class of agent-q-only hits means, for the notes.")

(defun agent-q-bench-xref--check-elisp-refs (files dir name kind)
  "Compare agent-q's hits for NAME of KIND in FILES (under DIR) with elisp-refs'."
  (let* ((refs (alist-get name agent-q-bench-xref--elisp-refs-hits nil nil #'equal))
         (native (agent-q-bench-xref--native files name kind))
         (native-set (agent-q-bench-xref--set native))
         (refs-set (agent-q-bench-xref--set (car refs)))
         (refs-only (cl-remove-duplicates
                     (cl-remove-if (lambda (h) (gethash (agent-q-bench-xref--key h) native-set))
                                   (car refs))
                     :test #'equal))
         (native-only (cl-remove-duplicates
                       (cl-remove-if (lambda (h) (gethash (agent-q-bench-xref--key h) refs-set))
                                     native)
                       :test #'equal)))
    (agent-q-bench-note
     "- **%s %s**: elisp-refs %d hits on %d lines (%d files it could not read); agent-q %d lines. elisp-refs lines agent-q lacks: **%d**; agent-q lines elisp-refs lacks: %d."
     (if (eq kind 'call) "who_calls" "who_references") name
     (length (car refs)) (hash-table-count refs-set) (length (cdr refs))
     (hash-table-count native-set) (length refs-only) (length native-only))
    (dolist (h refs-only)
      (pcase-let ((`(,class . ,note) (agent-q-bench-xref--refs-only-class h name native-set)))
        (agent-q-bench-note "  - elisp-refs only, %s: `%s:%d`: `%s`" class
                            (file-relative-name (car h) dir) (cdr h)
                            (truncate-string-to-width (replace-regexp-in-string "`" "'" note)
                                                      90 nil nil "…"))))
    (let ((classes nil))
      (dolist (h native-only)
        (push h (alist-get (agent-q-bench-xref--native-only-class h name) classes)))
      (pcase-dolist (`(,class . ,meaning) agent-q-bench-xref--native-only-names)
        (let ((hits (alist-get class classes)))
          (when hits
            (agent-q-bench-note "  - agent-q only, %d × %s, e.g. `%s:%d`" (length hits) meaning
                                (file-relative-name (car (car (last hits))) dir)
                                (cdr (car (last hits))))))))))

(defconst agent-q-bench-xref-freeze-queries
  '(("car" call) ("setq" call) ("point" call))
  "Ubiquitous names whose scans are timed for freezes: (NAME KIND).")

(defun agent-q-bench-xref--freezes (files)
  "Time scans of ubiquitous names over FILES.
How long Emacs waits for them, and how much comes back."
  (let ((limit (if (boundp 'agent-q-xref-max-results) agent-q-xref-max-results 100))
        (benchmarks nil)
        (sizes nil))
    (pcase-dolist (`(,name ,kind) agent-q-bench-xref-freeze-queries)
      (let ((b (format "2f. who_calls %s (ubiquitous)" name))
            (handler (lambda ()
                       (cl-letf (((symbol-function 'agent-q-xref-library-sources)
                                  (lambda () (cons files nil))))
                         (let ((agent-q-xref-background-index nil))
                           (agent-q-xref-who-calls-handler
                            (let ((args (make-hash-table :test #'equal)))
                              (puthash "function" name args)
                              args)))))))
        (push b benchmarks)
        (agent-q-bench-compare
         b
         (list
          (list :label "module scan, every hit to Lisp (uncapped), first scan"
                :setup #'agent-q--core-xref-clear-cache
                :run (lambda (_) (agent-q--core-xref-scan files name kind nil nil)))
          (list :label (format "module scan, %d hits to Lisp (capped), first scan" limit)
                :setup #'agent-q--core-xref-clear-cache
                :run (lambda (_) (agent-q--core-xref-scan files name kind limit nil)))
          (list :label (format "module scan, %d hits to Lisp (capped), all files indexed" limit)
                :setup (lambda () (agent-q--core-xref-index files nil))
                :run (lambda (_) (agent-q--core-xref-scan files name kind limit nil)))
          (list :label "who_calls handler (whole tree, capped), first scan"
                :setup #'agent-q--core-xref-clear-cache
                :run (lambda (_) (funcall handler)))
          (list :label "who_calls handler (whole tree, capped), all files indexed"
                :setup (lambda () (agent-q--core-xref-index files nil))
                :run (lambda (_) (funcall handler))))
         :clock 'wall :gc '(in) :unit "query")
        (let ((scan (agent-q--core-xref-scan files name kind limit nil)))
          (push (list name (plist-get scan :total) (length (funcall handler))) sizes))))
    (agent-q-bench-note "")
    (agent-q-bench-note "**Freezes** (rows 2f, wall clock): Emacs's thread waits for the whole time of a row, but in 10 ms slices that check for `C-g`, which stops the scan (and `agent-q-xref-max-seconds` bounds it); only the conversion of the returned hits to Lisp runs on it. Result sizes:")
    (pcase-dolist (`(,name ,total ,chars) (nreverse sizes))
      (agent-q-bench-note "- who_calls %s: %d hits in the tree; the module returns %d (agent-q-xref-max-results) and the tool's result is %d characters, saying how many more were found." name total (min total limit) chars))
    (nreverse benchmarks)))

(defun agent-q-bench-xref--verdicts (benchmarks)
  "Notes with the target verdicts of BENCHMARKS (names)."
  (dolist (b benchmarks)
    (let* ((base (agent-q-bench-find b "Emacs Lisp: insert-file-contents + search" 'in))
           (lit (agent-q-bench-find b "Emacs Lisp: literally + zlib-decompress-region" 'in))
           (rg (agent-q-bench-find b "rg -z -w (subprocess)" 'in))
           (plain (agent-q-bench-find b "rg -w on a decompressed copy (reference only)" 'in))
           (t-base (agent-q-bench-row-time base))
           (t-lit (agent-q-bench-row-time lit))
           (t-rg (agent-q-bench-row-time rg)))
      (dolist (label '("agent-q native, first scan (cache cleared)"
                       "agent-q native, repeat scan"
                       "agent-q native, all files indexed"))
        (let* ((row (agent-q-bench-find b label 'in))
               (time (agent-q-bench-row-time row)))
          (agent-q-bench-note
           "- %s — %s: %.1f× faster than the Emacs Lisp scan (target ≥ 4: **%s**), %.1f× faster than its literal+zlib variant, %.1f× faster than rg -z (target ≥ 1: **%s**), %.2f× the time of rg on decompressed text."
           b label (/ t-base time) (if (>= (/ t-base time) 4) "met" "missed")
           (/ t-lit time) (/ t-rg time) (if (<= time t-rg) "met" "missed")
           (/ time (agent-q-bench-row-time plain))))))))

(defun agent-q-bench-xref--explain (benchmarks)
  "Notes explaining the figures of BENCHMARKS (the first is used)."
  (let* ((b (car benchmarks))
         (time (lambda (label) (agent-q-bench-row-time (agent-q-bench-find b label 'in))))
         (rg (funcall time "rg -z -w (subprocess)"))
         (plain (funcall time "rg -w on a decompressed copy (reference only)"))
         (first (funcall time "agent-q native, first scan (cache cleared)"))
         (indexed (funcall time "agent-q native, all files indexed")))
    (agent-q-bench-note "")
    (agent-q-bench-note "**Reading the figures** (from %s):" b)
    (agent-q-bench-note
     "- *First scan* (after `agent-q--core-xref-clear-cache`): every file is read and gunzipped natively (2 threads), a `memmem` prefilter skips the files without the name's bytes, the rest are parsed. *Repeat scan*: the same query again; only the files parsed by the first scan have a symbol index yet, so the other files are still read and gunzipped and the repeat costs about as much as the first scan. *All files indexed*: after `agent-q--core-xref-index` (which `agent-q-xref-find` starts in a background thread after every scan), only the files whose index may hold the name are read — the steady state of a session.")
    (agent-q-bench-note
     "- `rg -z` decompresses each `.gz` file by running a `gzip -d` subprocess (ripgrep's documented behaviour for `-z`): %d ms a query against %d ms for the same rg on a decompressed copy of the tree (%.0f×). On plain text rg is faster than agent-q's first scan (%.1f×), whose time is mostly decompression of %.1f MB of gzip; the installed tree is compressed, so `rg -z` is what a user can run on it."
     (round (* 1000 rg)) (round (* 1000 plain)) (/ rg plain) (/ first plain)
     agent-q-bench-xref--compressed-mb)
    (agent-q-bench-note
     "- With every file indexed the native scan takes %d ms (%.1f× rg on decompressed text: below 1 is faster) — and it still reads code only, with the definition each hit is in."
     (round (* 1000 indexed)) (/ indexed plain))))

(defun agent-q-bench-xref-run ()
  "Benchmark 2: native xref scan vs Emacs Lisp scans vs rg -z."
  (let ((dir (agent-q-bench-xref-directory)))
    (cond
     ((null dir)
      (agent-q-bench-pending "Emacs's Lisp sources are not installed (emacs-el)."))
     ((not (executable-find "rg"))
      (agent-q-bench-pending "ripgrep (rg) is not installed: scripts/ensure-deps.sh --bench."))
     ((not (require 'agent-q-core nil t))
      (agent-q-bench-pending "The agent-q-core module is not built."))
     (t
      (let* ((files (directory-files-recursively dir "\\.el\\(?:\\.gz\\)?\\'"))
             (copy (agent-q-bench-xref--decompressed-copy files dir))
             (agent-q-bench-runs (min agent-q-bench-runs agent-q-bench-xref-max-runs))
             (refs (agent-q-bench-xref--load-elisp-refs))
             (benchmarks nil))
        (setq agent-q-bench-xref--elisp-refs-hits nil)
        (unwind-protect
            (progn
              (agent-q-bench-note
               "- %d files under %s (%.1f MB compressed); %d runs per candidate, medians, wall clock, GC in (default threshold). One operation is one whole query over the tree."
               (length files) (abbreviate-file-name dir)
               (setq agent-q-bench-xref--compressed-mb
                     (/ (apply #'+ (mapcar (lambda (f) (file-attribute-size (file-attributes f)))
                                           files))
                        1e6))
               agent-q-bench-runs)
              (pcase-dolist (`(,name ,kind ,what) agent-q-bench-xref-queries)
                (let ((benchmark (agent-q-bench-xref--benchmark name kind what)))
                  (push benchmark benchmarks)
                  (agent-q-bench-compare
                   benchmark
                   (list
                    (list :label "Emacs Lisp: insert-file-contents + search"
                          :run (lambda (_) (agent-q-bench-xref-elisp-scan files name nil)))
                    (list :label "Emacs Lisp: literally + zlib-decompress-region"
                          :run (lambda (_) (agent-q-bench-xref-elisp-scan files name t)))
                    (list :label "rg -z -w (subprocess)"
                          :run (lambda (_) (agent-q-bench-xref-rg name dir)))
                    (list :label "rg -w on a decompressed copy (reference only)"
                          :run (lambda (_) (agent-q-bench-xref-rg name copy)))
                    (list :label "agent-q native, first scan (cache cleared)"
                          :setup #'agent-q--core-xref-clear-cache
                          :run (lambda (_) (agent-q--core-xref-scan files name kind nil nil)))
                    (list :label "agent-q native, repeat scan"
                          :setup (lambda ()
                                   (agent-q--core-xref-clear-cache)
                                   (agent-q--core-xref-scan files name kind nil nil))
                          :run (lambda (_) (agent-q--core-xref-scan files name kind nil nil)))
                    (list :label "agent-q native, all files indexed"
                          :setup (lambda () (agent-q--core-xref-index files nil))
                          :run (lambda (_) (agent-q--core-xref-scan files name kind nil nil))))
                   :clock 'wall :gc '(in) :unit "query")
                  (when refs
                    (agent-q-bench-xref--compare-elisp-refs files name kind))))
              (setq benchmarks (nreverse benchmarks))
              (agent-q-bench-note "")
              (agent-q-bench-note "**Targets** (GC in, wall clock):")
              (agent-q-bench-xref--verdicts benchmarks)
              (agent-q-bench-xref--explain benchmarks)
              (agent-q-bench-note "")
              (agent-q-bench-note "**Agreement check** (untimed; rg's matches are lines, so hits are compared as file:line):")
              (pcase-dolist (`(,name ,kind ,what) agent-q-bench-xref-queries)
                (agent-q-bench-xref--check files dir name kind what))
              (agent-q-bench-note "")
              (if (not refs)
                  (agent-q-bench-note "**elisp-refs**: not installed (Debian's elpa-elisp-refs; scripts/ensure-deps.sh --bench installs it): not compared.")
                (agent-q-bench-note "**elisp-refs** (the %d-run rows above; the same files and queries; hits compared as file:line):"
                                    agent-q-bench-xref-elisp-refs-runs)
                (agent-q-bench-xref--elisp-refs-verdicts benchmarks)
                (pcase-dolist (`(,name ,kind ,_what) agent-q-bench-xref-queries)
                  (agent-q-bench-xref--check-elisp-refs files dir name kind)))
              (agent-q-bench-xref--freezes files)
              (agent-q-bench-include "analysis-xref.md"))
          (delete-directory copy t)))))))

(agent-q-bench-define-section
 2 "xref" "2. Cross-reference scans (who_calls, who_references)" #'agent-q-bench-xref-run)

(provide 'agent-q-bench-xref)

;;; agent-q-bench-xref.el ends here
