;;; agent-q-support.el --- Helpers shared by agent-q's built-in tools  -*- lexical-binding: t -*-

;; Copyright (C) 2026 The agent-q authors

;; Author: The agent-q authors
;; Maintainer: The agent-q authors
;; Keywords: tools, lisp
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

;; Small helpers the built-in tools share: reading an argument from the
;; hash table a handler gets, ending a call as a failure, cutting long
;; text with a note, printing a value and an error message within a
;; bound on the characters produced (not only on depth and length), and
;; reading exactly one form from a string without letting its nesting
;; overflow the reader's stack, and writing a private file (0600) whole.
;;
;; What a result says is what happened.  The rule the introspection and
;; execution tools follow (agent-q-introspection.el,
;; agent-q-execution.el):
;;
;; - A call that did not do its job is a failure: it ends with
;;   `agent-q-tool-fail' (:success nil, counted and audited as a
;;   failure).  That covers a missing or blank argument, an argument
;;   out of range (a limit of 0, an unknown type), a named thing that
;;   does not exist (a symbol not found, a name that is not a function,
;;   an unknown class, a package not loaded), a form that cannot be
;;   read or that signals while it is expanded, compiled or evaluated,
;;   and a tool whose implementation is not installed.
;; - A search or a question about state that ran and found nothing is a
;;   success with an empty answer: apropos_search with no match, "No
;;   callers found" for an existing function, get_last_error when no
;;   error was recorded, get_repl_history with an empty history, a form
;;   that is not a macro call ("No expansion").
;; - What the tool returns as data is a success whatever it says: a
;;   form that evaluates to the string "Error: ..." is a successful
;;   evaluation.

;;; Code:

(require 'cl-lib)
(require 'subr-x)

(declare-function agent-q-tool-fail "agent-q" (format-string &rest args))

;;;; Options

(defcustom agent-q-builtins-max-value-chars 4000
  "Maximum number of characters of a printed value in tool results.
Longer values are cut and the result says so."
  :type 'natnum
  :group 'agent-q)

(defcustom agent-q-builtins-max-form-chars 1000000
  "Longest form, in characters, that the tools reading forms accept.
eval_form, compile_form and macroexpand_form refuse a longer one:
reading it (and checking its nesting first) would hold Emacs for too
long."
  :type 'natnum
  :group 'agent-q)


;;;; Helpers

(defconst agent-q-builtins--print-length 100
  "Most elements of a list or vector printed in a tool result.")

(defconst agent-q-builtins--print-level 10
  "Deepest nesting printed in a tool result.")

(defun agent-q-builtins--arg (args name &optional default)
  "Return the argument NAME from the hash table ARGS, or DEFAULT."
  (if (hash-table-p args) (gethash name args default) default))

(defun agent-q-builtins--truncate (string max)
  "Return STRING cut to MAX characters, saying how many were cut."
  (if (<= (length string) max)
      string
    (format "%s\n[... %d more characters not shown ...]"
            (substring string 0 max) (- (length string) max))))

(defun agent-q-builtins--bounded-output (max printer)
  "Call PRINTER with an output function, and keep at most MAX characters.
PRINTER is called with one argument, a function to use as the
output stream of `prin1' or `princ'.  Return
\(TEXT . CUT), CUT being non-nil when the output was longer: printing
stops at character MAX + 1, so the work done does not depend on how
long the full output would be.  Raw bytes become octal escapes, so
that TEXT is valid Unicode."
  (let ((chars nil)
        (n 0)
        (tag (make-symbol "agent-q-builtins--full")))
    (let ((cut (catch tag
                 (funcall printer
                          (lambda (char)
                            (when (>= n max) (throw tag t))
                            (if (< char #x3fff80)
                                (push char chars)
                              ;; A raw byte (from a unibyte string or
                              ;; symbol): as an octal escape, so that
                              ;; the text is valid Unicode.
                              (dolist (c (string-to-list
                                          (format "\\%o" (- char #x3fff00))))
                                (push c chars)))
                            (setq n (1+ n))))
                 nil)))
      (cons (concat (nreverse chars)) cut))))

(defun agent-q-builtins--print (value &optional max)
  "Return VALUE printed readably, in at most MAX characters.
MAX defaults to `agent-q-builtins-max-value-chars'.  Lists and vectors
are printed to a depth of 10 and a length of 100, and printing stops
after MAX characters (a 50 MB string costs no more than a short one);
a cut value says so.  `print-circle' stays off: its pre-pass in Emacs 28
recurses on the value's depth, ignoring `print-level', and a deeply
nested value would overflow the stack.  Within the bounds, cycles
print as #N."
  (let* ((max (or max agent-q-builtins-max-value-chars))
         (out (agent-q-builtins--bounded-output
               max
               (lambda (stream)
                 (let ((print-length agent-q-builtins--print-length)
                       (print-level agent-q-builtins--print-level)
                       (print-escape-newlines t)
                       (print-circle nil))
                   (prin1 (agent-q-builtins--shown-part value max) stream))))))
    (if (not (cdr out))
        (car out)
      (format "%s\n[... more characters not shown: the printed value is longer than %d characters%s ...]"
              (car out) max
              (if (stringp value) (format "; a string of %d characters" (length value)) "")))))

(defun agent-q-builtins--error-text (condition &optional max)
  "Return the message of the error CONDITION, in at most MAX characters.
MAX defaults to `agent-q-builtins-max-value-chars'.  The text is what
`error-message-string' gives, but printing stops at the bound, so an
error whose data is a huge string or list costs no more than a small
one."
  (let* ((max (or max agent-q-builtins-max-value-chars))
         (out (agent-q-builtins--bounded-output
               max
               (lambda (stream)
                 (let ((print-length agent-q-builtins--print-length)
                       (print-level agent-q-builtins--print-level)
                       (print-escape-newlines t)
                       (print-circle nil))
                   (agent-q-builtins--print-error condition stream max))))))
    (concat (car out) (if (cdr out) " [... message cut ...]" ""))))

(defun agent-q-builtins--shown-part (object max)
  "Return the part of OBJECT that printing it in MAX characters can show.
Printing a string costs time in proportion to its whole length in Emacs
28, even when the output stops after a few characters; so does
printing a list or vector that holds one.  This returns OBJECT with
every string longer than MAX cut to MAX + 1 characters, copying the
conses, vectors, records and hash tables that hold them, down to the
printing bounds (`agent-q-builtins--print-length' and
`agent-q-builtins--print-level') and to no more than MAX + 1 objects
in all: each object prints as at least one character, so what lies
beyond is cut from the output anyway and is left out (printed as
\"...\").  Vectors, records and hash tables deeper than the printing
depth are left out too (`print-level' does not cut them in Emacs 28).
Other objects are returned as they are."
  (let ((budget (1+ max)))
    (cl-labels
        ((copy (v level)
           (setq budget (1- budget))
           (cond
            ((< budget 0) '...)
            ((stringp v) (if (> (length v) max) (substring v 0 (1+ max)) v))
            ;; Beyond the depth printed, a list prints as "..." by
            ;; `print-level'; but in Emacs 28 `print-level' does not
            ;; apply to vectors, records and hash tables, which would
            ;; print in full, and past 200 levels the printer signals
            ;; "Apparently circular structure".  A list in their place
            ;; is past `print-level', and prints as "...".
            ((> level agent-q-builtins--print-level)
             (if (or (vectorp v) (recordp v) (hash-table-p v)) (list v) v))
            ((consp v)
             (let ((head nil) (n 0))
               (while (and (consp v) (<= n agent-q-builtins--print-length) (>= budget 0))
                 (push (copy (car v) (1+ level)) head)
                 (setq v (cdr v) n (1+ n)))
               (let ((tail (cond ((null v) nil)
                                 ((or (consp v) (< budget 0)) '(...))
                                 (t (copy v (1+ level))))))
                 (nconc (nreverse head) tail))))
            ((or (vectorp v) (recordp v))
             (let* ((len (min (length v) (+ 2 agent-q-builtins--print-length)))
                    (new (if (recordp v)
                             (make-record (aref v 0) (1- len) nil)
                           (make-vector len nil))))
               (dotimes (i len)
                 (aset new i (if (>= budget 0) (copy (aref v i) (1+ level)) '...)))
               new))
            ((hash-table-p v)
             (let ((new (make-hash-table :test (hash-table-test v)))
                   (n 0))
               (catch 'agent-q-builtins--enough
                 (maphash (lambda (key value)
                            (when (or (> n agent-q-builtins--print-length) (< budget 0))
                              (throw 'agent-q-builtins--enough nil))
                            (setq n (1+ n))
                            (puthash (copy key (1+ level)) (copy value (1+ level)) new))
                          v))
               new))
            (t v))))
      (copy object 1))))

(defun agent-q-builtins--print-error (condition stream max)
  "Print the message of the error CONDITION to STREAM, for MAX characters.
The same text as `error-message-string' (print.c's
print_error_message), for a STREAM that stops after MAX characters."
  (let* ((name (car-safe condition))
         (plain (eq name 'error))
         (data (if plain (let ((d (cdr-safe condition))) (and (consp d) d)) condition))
         (message (if plain
                      (car data)
                    (let ((m (and (symbolp name) (get name 'error-message))))
                      (if (and (stringp m) (fboundp 'substitute-command-keys))
                          (substitute-command-keys m)
                        m))))
         (file-error (and (not plain) (symbolp name)
                          (memq 'file-error (get name 'error-conditions))))
         (tail (cdr-safe data))
         (separator ": "))
    (when (and file-error (consp tail))
      (setq message (car tail) tail (cdr tail)))
    (cond ((not (stringp message)) (princ "peculiar error" stream))
          ((> (length message) 0)
           (princ (agent-q-builtins--shown-part message max) stream))
          (t (setq separator nil)))
    (while (consp tail)
      (when separator (princ separator stream))
      (setq separator ", ")
      (let ((item (agent-q-builtins--shown-part (car tail) max)))
        (if (or file-error (memq name '(end-of-file user-error)))
            (princ item stream)
          (prin1 item stream)))
      (setq tail (cdr tail)))))


(defun agent-q-builtins--blank-p (string)
  "Return non-nil when STRING is nil or only whitespace."
  (or (null string) (string-match-p "\\`[ \t\n\r\f]*\\'" string)))


;;;; Reading forms

(defconst agent-q-builtins-max-form-depth 1000
  "Deepest nesting of a form the tools read.
Levels are parentheses, brackets, quotes, #N= labels, and modifier
escapes in a row (a backslash, C and a hyphen, then another such, in a
character literal or a string).  Emacs's reader recurses
once per level and overflows the C stack somewhere between 20,000 and
50,000 levels, which kills or hangs Emacs; real code nests a few dozen
levels.")

(defconst agent-q-builtins--blank-chars (concat "\0- " (string #xa0))
  "The characters Emacs's reader treats as whitespace, for a regexp class.")

(defun agent-q-builtins--token-start-p (string pos)
  "Return non-nil when a token of STRING can begin at POS.
That is, when the reader would not read the character at POS as part
of a symbol that began before it."
  (or (= pos 0)
      (let ((c (aref string (1- pos))))
        (or (<= c 32) (= c #xa0)
            (memq c '(?\( ?\) ?\[ ?\] ?\" ?\' ?` ?,))
            (and (= c ?@) (> pos 1) (= (aref string (- pos 2)) ?,))))))

(defun agent-q-builtins--nesting-characters (string limit)
  "Return how many places of STRING could open a level of nesting.
Counting stops above LIMIT.  An upper bound of the depth of any form
in STRING: parentheses, brackets, quotes, `#' (labels) and modifier
escapes (a backslash before C, M, S, H, A, s or ^).  The search for
each is done in C, so a long form with few of them costs little."
  (let ((n 0) (pos 0))
    (while (and (<= n limit)
                (setq pos (string-match "[[('`,#]\\|\\\\[CMSHAs^]" string pos)))
      (setq n (1+ n) pos (1+ pos)))
    n))

(defun agent-q-builtins--long-escape-chain-p (string limit)
  "Return non-nil when STRING has more than LIMIT modifier escapes in a row.
The reader reads the modifiers of a character (a backslash, a
modifier letter and a hyphen, or a backslash and a caret, each), in a
character literal or in a string, by recursing once per modifier.  An escaped
backslash before one is counted too: a chain may be counted longer
than it is, never shorter."
  (let ((pos 0) (run 0) (end -1) (deep nil))
    (while (and (not deep)
                (setq pos (string-match "\\\\\\(?:[CMSHAs]-\\|\\^\\)" string pos)))
      (setq run (if (= pos end) (1+ run) 1)
            end (match-end 0)
            pos end)
      (when (> run limit)
        (setq deep t)))
    deep))

(defun agent-q-builtins--too-deep-p (string limit)
  "Return non-nil when reading STRING would nest deeper than LIMIT.
A conservative lexer: it skips strings, comments, character literals
and escaped characters as the reader does, and counts an opening
parenthesis or bracket, each #N= label, and each quote, backquote or
comma before a datum, as a level (the reader recurses on all of them).
Chains of modifier escapes are `agent-q-builtins--long-escape-chain-p's.  It may
count a level too many in odd cases (`?\\^(' ), never one too few.
Linear in the length of STRING."
  (let ((pos 0)
        (len (length string))
        (stack nil)                     ; levels opened by each open list
        (total 0)                       ; their sum
        (pending 0)                     ; quote characters before the next datum
        (deep nil)
        (structural "[][()\"?;\\\\'`,#]")
        (any (concat "[^" agent-q-builtins--blank-chars "]")))
    (while (and (not deep) pos (< pos len)
                (setq pos (string-match (if (> pending 0) any structural) string pos)))
      (let ((c (aref string pos)))
        (cond
         ((memq c '(?\( ?\[))
          (push (1+ pending) stack)
          (setq total (+ total 1 pending) pending 0 pos (1+ pos)))
         ((memq c '(?\) ?\]))
          (when stack (setq total (- total (pop stack))))
          (setq pending 0 pos (1+ pos)))
         ((and (= c ?#) (eq (string-match "#[0-9]+=" string pos) pos))
          ;; A label, #N=: the reader recurses to read what it labels.
          (setq pending (1+ pending) pos (match-end 0)))
         ((memq c '(?\' ?` ?, ?@ ?#))
          ;; `#' only matters as part of #' here; counting it otherwise
          ;; can only overcount.
          (setq pending (1+ pending) pos (1+ pos)))
         ((= c ?\;)
          (setq pos (string-match "\n" string pos)))
         ((= c ?\")
          (setq pending 0 pos (1+ pos))
          (let ((open t))
            (while (and open pos)
              (setq pos (string-match "[\"\\\\]" string pos))
              (when pos
                (if (= (aref string pos) ?\\)
                    (setq pos (+ pos 2))
                  (setq open nil pos (1+ pos)))))))
         ((= c ?\\)
          (setq pending 0 pos (+ pos 2)))
         ((and (= c ??) (agent-q-builtins--token-start-p string pos))
          ;; A character literal: ?x, or ?\x (with ?\C-\x and the like,
          ;; the later escapes are skipped as escapes).
          (setq pending 0
                pos (+ pos (if (and (< (1+ pos) len) (= (aref string (1+ pos)) ?\\)) 3 2))))
         (t
          ;; A symbol or number character (or a ? inside a symbol).
          (setq pending 0 pos (1+ pos))))
        (when (> (+ total pending) limit)
          (setq deep t))))
    deep))

(defun agent-q-builtins--only-comments-from-p (string pos)
  "Return non-nil when STRING has only whitespace and comments from POS."
  (let ((len (length string))
        (blank t))
    (while (and blank pos (< pos len))
      (setq pos (string-match (concat "[^" agent-q-builtins--blank-chars "]") string pos))
      (cond ((null pos))
            ((= (aref string pos) ?\;) (setq pos (string-match "\n" string pos)))
            (t (setq blank nil))))
    blank))

(defun agent-q-builtins--read-one-form (string)
  "Read exactly one form from STRING.
Return (:ok FORM) or (:error MESSAGE).  Text after the form other
than whitespace and comments is an error; so is a form longer than
`agent-q-builtins-max-form-chars' or nested deeper than
`agent-q-builtins-max-form-depth'."
  (cond
   ((not (stringp string))
    (list :error "The form must be a string of Emacs Lisp code."))
   ((agent-q-builtins--blank-p string)
    (list :error "The form is empty: give exactly one Emacs Lisp form."))
   ((> (length string) agent-q-builtins-max-form-chars)
    (list :error (format "The form is %d characters long; at most %d are read (agent-q-builtins-max-form-chars)."
                         (length string) agent-q-builtins-max-form-chars)))
   ((and (> (agent-q-builtins--nesting-characters string agent-q-builtins-max-form-depth)
            agent-q-builtins-max-form-depth)
         (or (agent-q-builtins--too-deep-p string agent-q-builtins-max-form-depth)
             (agent-q-builtins--long-escape-chain-p string agent-q-builtins-max-form-depth)))
    (list :error (format "The form nests deeper than %d levels (parentheses, brackets, quotes, #N= labels or modifier escapes); it is not read."
                         agent-q-builtins-max-form-depth)))
   (t
    (condition-case err
        (let* ((read (read-from-string string))
               (form (car read))
               (end (cdr read)))
          (if (agent-q-builtins--only-comments-from-p string end)
              (list :ok form)
            (list :error
                  (format "Expected exactly one form, but there is more text after it (from position %d): %s"
                          end
                          (agent-q-builtins--truncate
                           (string-trim (substring string end (min (length string) (+ end 400))))
                           200)))))
      (end-of-file
       (list :error "Incomplete form: the text ends before the form is complete (unbalanced parentheses or an unterminated string?)."))
      (error
       (list :error (format "Cannot read the form: %s"
                            (agent-q-builtins--error-text err))))))))


;;;; Private files

(defun agent-q--write-private (file text)
  "Write TEXT to FILE, readable by the user only (mode 0600), silently.
FILE's directory is made (0700) when missing.  The text is written
under a temporary name in that directory, then renamed: never readable
by others, never seen half written, and no \"Wrote\" message names the
temporary file."
  (let ((dir (file-name-directory file)))
    (with-file-modes #o700 (make-directory dir t))
    (let ((temp (with-file-modes #o600
                  (make-temp-file (expand-file-name (concat "." (file-name-nondirectory file) "-")
                                                    dir)))))
      (set-file-modes temp #o600)
      (let ((coding-system-for-write 'utf-8-unix))
        (write-region text nil temp nil 'silent))
      (rename-file temp file t))))

(provide 'agent-q-support)

;;; agent-q-support.el ends here
