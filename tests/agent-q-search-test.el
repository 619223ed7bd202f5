;;; agent-q-search-test.el --- Tests for search_in_buffer's regex mode  -*- lexical-binding: t -*-

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

;; ERT tests of `agent-q--core-regex-search' (Emacs regexps translated
;; for Rust's linear-time regex crate) and of search_in_buffer's regex
;; mode built on it: a catastrophic backtracking pattern returns with
;; the right answer, common patterns find exactly the matches Emacs's
;; own `re-search-forward' finds in Emacs's own sources (the emacs-el
;; package must be installed), and patterns that cannot be translated
;; give a message naming the construct.  Literal mode finds what
;; `search-forward' finds.  The search is bounded (counting stops at
;; `agent-q-builtins-search-count-limit', the search at
;; `agent-q-builtins-search-time-limit') and a real C-g, typed into a
;; terminal Emacs driven through tmux, interrupts it.  Run it alone with
;; `ert-run-tests-batch-and-exit' after loading this file, or with the
;; other suites through tests/run-tests.el.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-q)
(require 'agent-q-tmux-test)

(declare-function agent-q--core-regex-search "agent-q-core"
                  (text pattern case-fold max))
(declare-function agent-q-builtins--search-in-buffer "agent-q-builtins" (args))
(declare-function agent-q--core-search-buffer "agent-q-core"
                  (pattern regexp case-fold max-listed max-counted time-limit))
(defvar agent-q-builtins-search-limit)
(defvar agent-q-builtins-search-count-limit)
(defvar agent-q-builtins-search-time-limit)

(defun agent-q-search-test--args (&rest pairs)
  "Return a hash table of the key/value PAIRS, as the executor passes them."
  (let ((table (make-hash-table :test #'equal)))
    (while pairs
      (puthash (pop pairs) (pop pairs) table))
    table))

(declare-function agent-q-builtins--buffer-guard "agent-q-files" (args))

(defun agent-q-search-test--search (buffer pattern &rest more)
  "Run search_in_buffer on BUFFER for regexp PATTERN with MORE arguments.
As the executor runs it: the guard first (a temporary buffer is
hidden, so reading it needs approval), then the handler, with the call
approved.  A failure (`agent-q-tool-fail') gives its message."
  (let* ((args (apply #'agent-q-search-test--args
                      "pattern" pattern "buffer" (buffer-name buffer) "regex" t more))
         (agent-q-call-context
          (list :approved t :reason (agent-q-builtins--buffer-guard args))))
    (condition-case err
        (agent-q-builtins--search-in-buffer args)
      (agent-q-tool-failure (cadr err)))))

(defun agent-q-search-test--emacs-matches (pattern case-fold)
  "Return the (START . END) of every match of PATTERN in the current buffer.
Found with Emacs's own `re-search-forward', CASE-FOLD as
`case-fold-search', in the loop Emacs's own search would run: after
an empty match the next search starts one character further.
Positions are 0-based offsets from `point-min'."
  (save-excursion
    (goto-char (point-min))
    (let ((case-fold-search case-fold)
          (matches nil)
          (more t))
      (while (and more (re-search-forward pattern nil t))
        (push (cons (- (match-beginning 0) (point-min))
                    (- (match-end 0) (point-min)))
              matches)
        (when (= (match-beginning 0) (match-end 0))
          (if (eobp) (setq more nil) (forward-char 1))))
      (nreverse matches))))

(defun agent-q-search-test--rust-matches (pattern case-fold)
  "Return the (START . END) of every match of PATTERN, found by the module.
CASE-FOLD is passed on; positions are as in
`agent-q-search-test--emacs-matches'."
  (let ((found (agent-q--core-regex-search
                (buffer-substring-no-properties (point-min) (point-max))
                pattern case-fold most-positive-fixnum)))
    (should (= (car found) (length (cdr found))))
    (cdr found)))

(defconst agent-q-search-test--sources
  '("subr.el.gz" "language/european.el.gz" "international/mule-cmds.el.gz")
  "Emacs sources the agreement tests search, relative to `lisp-directory'.")

(defun agent-q-search-test--source (name)
  "Return the absolute file name of Emacs's source NAME; fail if absent."
  (let ((file (expand-file-name
               name (file-name-directory (locate-library "subr.el" t)))))
    (should (file-readable-p file))
    file))

(defconst agent-q-search-test--patterns
  '("^(defun \\(\\(?:\\sw\\|\\s_\\)+\\)"
    "\\_<car\\_>"
    "\\_<with-[a-z-]+\\_>"
    "\\bnil\\b"
    "\\<set\\(q\\|f\\)\\>"
    "[[:digit:]]+\\.?[[:digit:]]*"
    "\"[^\"\\\\\n]*\""
    ";;+ .*$"
    "(\\(?:let\\*?\\|when\\|unless\\) "
    "\\`;;;"
    ")\\'"
    "e\\{2,\\}"
    "^$"
    "^[ \t]+$"
    "[A-Z][a-z]+?s"
    "x*"
    "\\s-+\\s(."
    "[^[:ascii:]]+"
    "[[:upper:]][[:lower:]]+"
    "([^()]*)"
    ".\\{70,\\}")
  "Patterns whose matches must agree with Emacs's on real sources.")

;;;; The module function

(defconst agent-q-search-test--tokens
  ["a" "b" "c" "." "[ab]" "[^a\n]" "\\(" "\\)" "\\(?:" "\\|" "*" "+" "?" "*?" "+?"
   "??" "\\{1,2\\}" "\\{2\\}" "^" "\\<" "\\>" "\\b" "\\w" "\\W" "\\s-" "\\s."
   "\\s_" "\\`" "\\'" "-" "é" "[[:alpha:]]" "[[:space:]]" "{" "}" "(" ")" "|"]
  "Pieces the random patterns are made of.
Left out are the documented approximations: \\B at the ends of the
text, `_' (a symbol character to Emacs, a word character to the
regex crate's boundaries), symbol boundaries inside a pattern, and
`$' (a repeated group that can match empty, such as
\\(?:$\\|x\\)+, stops at its first empty iteration in Emacs).")

(defconst agent-q-search-test--texts
  '("aab b-\n(c)é.*ab" "abcabc\n\nba-a é-b" "a\na.b  c*(ab)\n" "" "bbb aaa ccc-a-b")
  "Texts the random patterns are searched in.")

(ert-deftest agent-q-search-catastrophic-pattern-returns ()
  "The pattern that hangs Emacs's backtracking engine gives the right answer."
  (let ((line (make-string 25 ?a)))
    (should (equal '(0) (agent-q--core-regex-search
                         line "\\(a*\\)*\\(a*\\)*c" nil 10)))
    (should (equal '(1 (0 . 26))
                   (agent-q--core-regex-search
                    (concat line "c") "\\(a*\\)*\\(a*\\)*c" nil 10)))
    (with-temp-buffer
      (insert "first line\n" line "\n")
      (should (string-prefix-p "No matches for '\\(a*\\)*\\(a*\\)*c' in buffer "
                               (agent-q-search-test--search
                                (current-buffer) "\\(a*\\)*\\(a*\\)*c")))
      (insert line "c\n")
      (should (equal (format "Found 1 match(es) for '\\(a*\\)*\\(a*\\)*c':\n  Line 3, Column 0 (position 38): %sc"
                             line)
                     (agent-q-search-test--search
                      (current-buffer) "\\(a*\\)*\\(a*\\)*c"))))))

(ert-deftest agent-q-search-agrees-with-emacs-on-its-sources ()
  "Common patterns match exactly where `re-search-forward' matches."
  (dolist (name agent-q-search-test--sources)
    (with-temp-buffer
      (insert-file-contents (agent-q-search-test--source name))
      (should (> (buffer-size) 1000))
      (dolist (pattern agent-q-search-test--patterns)
        (let ((emacs (agent-q-search-test--emacs-matches pattern nil))
              (rust (agent-q-search-test--rust-matches pattern nil)))
          (should (equal (list name pattern (length emacs) emacs)
                         (list name pattern (length rust) rust))))))))

(ert-deftest agent-q-search-agrees-with-emacs-on-random-patterns ()
  "Random patterns of up to 7 pieces match as `re-search-forward' does.
Covers operators with nothing before them (literal), runs of
operators, anchors in and out of anchor context and repetitions
after assertions.  The seed is fixed, so a failure reproduces."
  (random "agent-q-search")
  (let ((tried 0) (disagreements nil))
    (dotimes (_ 3000)
      (let ((pattern (mapconcat
                      (lambda (_)
                        (aref agent-q-search-test--tokens
                              (random (length agent-q-search-test--tokens))))
                      (make-list (1+ (random 7)) nil) "")))
        (when (condition-case nil (progn (string-match-p pattern "") t)
                (invalid-regexp nil))
          (setq tried (1+ tried))
          (dolist (text agent-q-search-test--texts)
            (with-temp-buffer
              (insert text)
              (let ((emacs (agent-q-search-test--emacs-matches pattern nil))
                    (rust (condition-case err
                              (agent-q-search-test--rust-matches pattern nil)
                            (agent-q-search-error (cadr err)))))
                (unless (equal emacs rust)
                  (push (list pattern text emacs rust) disagreements))))))))
    (should (> tried 1000))
    (should (equal nil (seq-take (nreverse disagreements) 5)))))

(ert-deftest agent-q-search-agrees-with-emacs-case-folded ()
  "With CASE-FOLD, ASCII and Latin patterns match as `case-fold-search' does."
  (with-temp-buffer
    (insert-file-contents (agent-q-search-test--source "language/european.el.gz"))
    (dolist (pattern '("latin" "LATIN-[0-9]" "\\_<iso-8859-[0-9]+\\_>" "é\\|ü"))
      (let ((emacs (agent-q-search-test--emacs-matches pattern t))
            (rust (agent-q-search-test--rust-matches pattern t)))
        (should emacs)
        (should (equal (cons pattern emacs) (cons pattern rust)))))))

(ert-deftest agent-q-search-character-offsets ()
  "Offsets count characters, not bytes."
  (let ((text "é日本🦀x\n🦀xé"))
    (should (equal '(2 (4 . 5) (7 . 8)) (agent-q--core-regex-search text "x" nil 10)))
    (should (equal '(2 (4 . 5)) (agent-q--core-regex-search text "x" nil 1)))
    (should (equal '(2) (agent-q--core-regex-search text "x" nil 0)))
    (with-temp-buffer
      (insert text)
      (should (equal (agent-q-search-test--emacs-matches "🦀x\\|^." nil)
                     (agent-q-search-test--rust-matches "🦀x\\|^." nil))))))

(ert-deftest agent-q-search-untranslatable-patterns-are-refused ()
  "Back-references, point and categories signal `agent-q-search-error'."
  (dolist (case '(("\\(a\\)\\1" . "\\1") ("a\\=" . "\\=") ("\\cg" . "\\cg")
                  ("\\s<" . "\\s<")))
    (let ((err (should-error (agent-q--core-regex-search "aa" (car case) nil 10)
                             :type 'agent-q-search-error)))
      (should (string-match-p (regexp-quote (concat "construct " (cdr case)))
                              (cadr err)))))
  (should-error (agent-q--core-regex-search "a" "\\(a" nil 10) :type 'agent-q-search-error)
  (should-error (agent-q--core-regex-search
                 "a" "\\(\\(\\(a\\{1000\\}\\)\\{1000\\}\\)\\{1000\\}\\)" nil 10)
                :type 'agent-q-search-error))

;;;; search_in_buffer

(ert-deftest agent-q-search-tool-refuses-untranslatable-patterns ()
  "The tool says which construct it cannot search for."
  (with-temp-buffer
    (insert "aa\n")
    (let ((out (agent-q-search-test--search (current-buffer) "\\(a\\)\\1")))
      (should (string-prefix-p
               "Cannot search for regular expression '\\(a\\)\\1': Unsupported regexp construct \\1 at character 5: back-references"
               out)))
    (should (string-match-p "construct \\\\cg"
                            (agent-q-search-test--search (current-buffer) "\\cg")))
    ;; Still caught first by Emacs's own syntax check.
    (should (string-prefix-p "Invalid regular expression '\\(a'"
                             (agent-q-search-test--search (current-buffer) "\\(a")))))

(ert-deftest agent-q-search-tool-positions ()
  "Line and position agree with Emacs's, with non-ASCII text.
The column counts characters from the line's start (as read_file's
column argument does), not display columns: wide characters count one."
  (with-temp-buffer
    (insert "é日本 x\n🦀 x\nend")
    (let ((out (agent-q-search-test--search (current-buffer) "[x]")))
      (should (equal "Found 2 match(es) for '[x]':\n  Line 1, Column 4 (position 5): é日本 x\n  Line 2, Column 2 (position 9): 🦀 x"
                     out)))
    ;; The buffer is widened: narrowing does not hide matches or shift positions.
    (narrow-to-region 8 10)
    (should (string-match-p "(position 5)"
                            (agent-q-search-test--search (current-buffer) "x")))
    (widen)
    ;; all_matches nil: the first only, counted as one.
    (should (string-prefix-p "Found 1 match(es) for 'x':\n  Line 1,"
                             (agent-q-search-test--search (current-buffer) "x"
                                                          "all_matches" nil)))
    ;; Case-sensitive, as before.
    (should (string-prefix-p "No matches for 'END'"
                             (agent-q-search-test--search (current-buffer) "END")))))

(ert-deftest agent-q-search-tool-raw-bytes ()
  "Raw bytes in the buffer do not stop the search or shift positions.
They are shown as \\xNN in the lines quoted, and the result says so."
  (with-temp-buffer
    (insert "ab" (string #x3fffc1) "c\nabc")
    (should (equal "Found 2 match(es) for 'ab.\\|abc':\n  Line 1, Column 0 (position 1): ab\\xC1c\n  Line 2, Column 0 (position 6): abc\n[Bytes that are not valid in the text's encoding are shown as \\xNN.]"
                   (agent-q-search-test--search (current-buffer) "ab.\\|abc")))))

(ert-deftest agent-q-search-tool-long-line-shows-each-match ()
  "Matches on one long line are shown where they are, cheaply.
Each excerpt is a window around its match, not the line's start; the
line is measured once, not once per match."
  (with-temp-buffer
    (dotimes (_ 90) (insert (make-string 50000 ?a) "needle"))
    (insert "\nnext needle\n")
    (let* ((out (agent-q-search-test--search (current-buffer) "needle"))
           (lines (split-string out "\n")))
      (should (equal (car lines) "Found 91 match(es) for 'needle':"))
      (should (= (length lines) 92))
      (should (cl-every (lambda (line) (string-match-p "\\.\\.\\.a*needlea*\\.\\.\\.\\'" line))
                        (cl-subseq lines 1 90)))
      (should (string-suffix-p "aneedle" (nth 90 lines)))
      (should (string-prefix-p "  Line 1, Column 50000 (position 50001): ..." (nth 1 lines)))
      (should (equal (nth 91 lines) "  Line 2, Column 5 (position 4500547): next needle")))))

;;;; Literal mode, limits, raw bytes

(defun agent-q-search-test--emacs-literal (string)
  "Return the (START . END) of every `search-forward' match of STRING.
Case-sensitive; positions as in `agent-q-search-test--emacs-matches'."
  (save-excursion
    (goto-char (point-min))
    (let ((case-fold-search nil) (matches nil))
      (while (search-forward string nil t)
        (push (cons (- (match-beginning 0) (point-min))
                    (- (match-end 0) (point-min)))
              matches))
      (nreverse matches))))

(defun agent-q-search-test--module-matches (pattern regexp)
  "Return every match of PATTERN in the current buffer, found by the module.
REGEXP non-nil makes PATTERN a regexp.  Checks that the search was
complete."
  (let ((found (agent-q--core-search-buffer pattern regexp nil most-positive-fixnum 0 nil)))
    (should (null (plist-get found :stopped)))
    (should (= (plist-get found :total) (length (plist-get found :matches))))
    (should (= (plist-get found :searched) (- (point-max) (point-min))))
    (plist-get found :matches)))

(ert-deftest agent-q-search-literal-agrees-with-search-forward ()
  "Literal mode finds exactly what `search-forward' finds."
  (with-temp-buffer
    (insert-file-contents (agent-q-search-test--source "language/european.el.gz"))
    (insert "aaaa é.é \\(x\\) [ab]* 日本🦀\n")
    (dolist (string '("(defun " "nil" "é" "Latin" "a.b" "\\(x\\)" "[ab]*" "aa"
                      "日本🦀" ";;;" "\n\n" "zzz-not-there"))
      (should (equal (cons string (agent-q-search-test--emacs-literal string))
                     (cons string (agent-q-search-test--module-matches string nil)))))))

(ert-deftest agent-q-search-raw-bytes-keep-offsets ()
  "Raw bytes and characters beyond Unicode count one character each.
Spread over more than one of the pieces the module copies the text in
\(64K characters), and dense enough that some are read a character at
a time."
  (with-temp-buffer
    (dotimes (i 40000)
      (insert "ab" (if (zerop (% i 7)) (string #x3fffc1 #x3fffa9) "é")
              (if (zerop (% i 1000)) (string #x3fff80 #x110000) "")
              (if (zerop (% i 13)) "\n" " ")))
    (should (> (buffer-size) 140000))
    (dolist (pattern '("b" "é" "^a" "b.\\{2\\} "))
      (should (equal (cons pattern (agent-q-search-test--emacs-matches pattern nil))
                     (cons pattern (agent-q-search-test--module-matches pattern t)))))
    (should (equal (agent-q-search-test--emacs-literal "b")
                   (agent-q-search-test--module-matches "b" nil)))))

(ert-deftest agent-q-search-unibyte-buffer ()
  "In a unibyte buffer each byte is a character, and never part of another."
  (with-temp-buffer
    (set-buffer-multibyte nil)
    (insert "a\200b\303\251b\n\377b")
    (should (equal (agent-q-search-test--emacs-literal "b")
                   (agent-q-search-test--module-matches "b" nil)))
    (should (equal (agent-q-search-test--emacs-matches "^.b\\|b$" nil)
                   (agent-q-search-test--module-matches "^.b\\|b$" t)))
    ;; The bytes of "é" are two characters here, not "é".
    (should (equal nil (agent-q-search-test--module-matches "é" nil)))))

(ert-deftest agent-q-search-tool-count-limit ()
  "Counting stops at the limit, and the result says \"at least\"."
  (with-temp-buffer
    (insert (make-string 50 ?x))
    (let ((agent-q-builtins-search-limit 5)
          (agent-q-builtins-search-count-limit 20))
      (dolist (regex '(nil t))
        (let ((out (agent-q-search-test--search (current-buffer) "x" "regex" regex)))
          (should (string-prefix-p
                   "Found at least 20 match(es) for 'x' (counting stopped there):\n  Line 1, Column 0 (position 1): xxx"
                   out))
          (should (string-suffix-p "\n[... at least 15 more matches not shown ...]" out))))
      ;; Under the limit: exact, as before.
      (let ((agent-q-builtins-search-count-limit 50))
        (should (string-prefix-p "Found 50 match(es) for 'x':"
                                 (agent-q-search-test--search (current-buffer) "x")))))
    ;; The module reports where counting stopped.
    (let ((found (agent-q--core-search-buffer "x" nil nil 2 20 nil)))
      (should (equal '(20 ((0 . 1) (1 . 2)) count-limit 20)
                     (list (plist-get found :total) (plist-get found :matches)
                           (plist-get found :stopped) (plist-get found :searched)))))))

(defun agent-q-search-test--slow-text (kib)
  "About KIB kibibytes of text on which some patterns take the slow path.
Unicode word boundaries next to non-ASCII letters make Rust's regex
engine leave its DFA: about a second per MB for a pattern such as
\\b[[:alpha:]]+\\b[[:digit:]]."
  (let ((line "défini la fonction été ünïcode\n"))
    (apply #'concat (make-list (/ (* kib 1024) (string-bytes line)) line))))

(ert-deftest agent-q-search-tool-time-limit ()
  "At the time limit the search stops and says how far it got."
  (with-temp-buffer
    (insert "1x2\n" (agent-q-search-test--slow-text 8192))
    ;; Seconds of work on this text, stopped after a tenth of one: the limit is
    ;; far below the work on any machine, so no timing is assumed.
    (let* ((agent-q-builtins-search-time-limit 0.1)
           (out (agent-q-search-test--search
                 (current-buffer) "[[:alpha:]]\\{1,3\\}\\b[0-9]\\|x")))
      (should (string-match
               "\\`Found 1 match(es) for '.*' before line \\([0-9]+\\) (the search stopped at its time limit of 0.1 s (agent-q-builtins-search-time-limit) at line \\([0-9]+\\) of \\([0-9]+\\); the rest of the buffer was not searched):\n  Line 1, Column 1 (position 2): 1x2\\'"
               out))
      (let ((reached (string-to-number (match-string 1 out)))
            (last (string-to-number (match-string 3 out))))
        (should (= reached (string-to-number (match-string 2 out))))
        (should (< 1 reached last))
        (should (= last (line-number-at-pos (point-max))))))
    ;; A pattern that can span lines without bound is searched in one pass,
    ;; which cannot stop midway.  Depending on how fast the machine gets to
    ;; that pass, the limit has passed before it (nothing searched) or during
    ;; it (it cannot stop): either way the result says it is incomplete.
    (erase-buffer)
    (insert (agent-q-search-test--slow-text 2048))
    (let ((agent-q-builtins-search-time-limit 0.02))
      (should (string-match-p
               (concat "\\`\\(?:Cannot search for regular expression '.*': the search did not stop at its time limit: this pattern can match across lines without a bound"
                       "\\|No matches .* the search stopped at its time limit of 0.02 s .*; the rest of the buffer was not searched\\.\\)")
               (agent-q-search-test--search
                (current-buffer) "\\(?:\\b[[:alpha:]]+\\b\\s-*\\)\\{20\\}[0-9]"))))))

;;;; Interrupting with C-g

(ert-deftest agent-q-search-tmux-c-g-interrupts-the-search ()
  "C-g typed into a terminal Emacs stops a long search at once.
The search runs through `agent-q-execute-tool-calls' in `emacs -nw'
under tmux; C-g reaches Emacs as the terminal's interrupt character,
which sets `quit-flag', which the module sees through process_input.
Without the polling the search would run for seconds and succeed
\(checked by making the module's quit check answer nil: this fails)."
  (agent-q-tmux-test--ensure-tmux)
  (let* ((session (format "agent-q-search-%d-%d" (emacs-pid) (random 100000)))
         (out (make-temp-name (expand-file-name "agent-q-search-out" temporary-file-directory)))
         (setup (make-temp-file "agent-q-search-setup" nil ".el"))
         (lisp-dir (file-name-directory (locate-library "agent-q")))
         (emacs (expand-file-name invocation-name invocation-directory))
         (call '((:id "s1" :name "search_in_buffer"
                      :arguments (:pattern "\\b[[:alpha:]]+\\b[[:digit:]]" :buffer "big"
                                           :regex t)))))
    (with-temp-file setup
      (prin1 `(progn
                (setq agent-q-audit-file nil
                      agent-q-builtins-search-time-limit nil)
                (require 'agent-q)
                (with-current-buffer (get-buffer-create "big")
                  ;; Several seconds of work for this pattern.
                  (insert ,(agent-q-search-test--slow-text 16384)))
                (defun agent-q-search-test-run ()
                  (interactive)
                  (message "agent-q-search-test: searching")
                  (redisplay t)
                  (let ((results (agent-q-execute-tool-calls ',call)))
                    (with-temp-file ,out
                      (prin1 (list :results results) (current-buffer)))
                    (kill-emacs 0)))
                (global-set-key (kbd "<f5>") #'agent-q-search-test-run))
             (current-buffer)))
    (unwind-protect
        (progn
          (agent-q-tmux-test--tmux
           "new-session" "-d" "-s" session "-x" "200" "-y" "50"
           (mapconcat #'shell-quote-argument
                      (list emacs "-nw" "-Q" "-L" lisp-dir "-l" setup) " "))
          (agent-q-tmux-test--wait-screen session "scratch")
          (agent-q-tmux-test--tmux "send-keys" "-t" session "F5")
          (agent-q-tmux-test--wait-screen session "agent-q-search-test: searching")
          (sleep-for 0.5)
          (agent-q-tmux-test--tmux "send-keys" "-t" session "C-g")
          (let* ((run (car (read-from-string (agent-q-tmux-test--wait-file out))))
                 (result (car (plist-get run :results))))
            (should (equal "s1" (plist-get result :id)))
            (should-not (plist-get result :success))
            ;; Run to the end it would succeed, with no matches.
            (should (equal "Tool error: interrupted by the user (C-g)"
                           (plist-get result :content)))))
      (call-process "tmux" nil nil nil "kill-session" "-t" session)
      (delete-file setup)
      (when (file-exists-p out) (delete-file out)))))

(provide 'agent-q-search-test)

;;; agent-q-search-test.el ends here
