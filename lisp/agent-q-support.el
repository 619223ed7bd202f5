;;; agent-q-support.el --- Helpers shared by agent-q's built-in tools  -*- lexical-binding: t -*-

;; Copyright (C) 2026 The agent-q authors

;; Author: The agent-q authors
;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1"))
;; Keywords: tools, lisp
;; URL: https://example.invalid/agent-q

;; This file is not part of GNU Emacs.

;; This program is free software; you can redistribute it and/or modify
;; it under the terms of the GNU General Public License as published by
;; the Free Software Foundation, either version 3 of the License, or
;; (at your option) any later version.

;;; Commentary:

;; Small helpers the built-in tools share: reading an argument from the
;; hash table a handler gets, cutting long text with a note, printing a
;; value with bounds, and reading exactly one form from a string.

;;; Code:

(require 'cl-lib)
(require 'subr-x)

(declare-function agent-q--error-message "agent-q" (condition))
(declare-function agent-q--print-bounded "agent-q" (value limit &optional princ))

;;;; Options

(defcustom agent-q-builtins-max-value-chars 4000
  "Maximum number of characters of a printed value in tool results.
Longer values are cut and the result says how much was cut."
  :type 'natnum
  :group 'agent-q)


;;;; Helpers

(defun agent-q-builtins--arg (args name &optional default)
  "Return the argument NAME from the hash table ARGS, or DEFAULT."
  (if (hash-table-p args) (gethash name args default) default))

(defun agent-q-builtins--truncate (string max)
  "Return STRING cut to MAX characters, saying how many were cut."
  (if (<= (length string) max)
      string
    (format "%s\n[... %d more characters not shown ...]"
            (substring string 0 max) (- (length string) max))))

(defun agent-q-builtins--print (value)
  "Return VALUE printed readably, with bounded length, depth and size.
`print-circle' stays off: its pre-pass in Emacs 28 recurses on the
value's depth, ignoring `print-level', and a deeply nested value would
overflow the stack.  Within the bounds, cycles print as #N.  Printing
stops after four times `agent-q-builtins-max-value-chars' characters
\(see `agent-q--print-bounded': a value sharing its parts can print to
exponentially many)."
  (let* ((print-length 100)
         (print-level 10)
         (print-escape-newlines t)
         (limit (* 4 agent-q-builtins-max-value-chars))
         (printed (agent-q--print-bounded value limit)))
    (pcase (cdr printed)
      ('t (agent-q-builtins--truncate (car printed) agent-q-builtins-max-value-chars))
      ('limit (format "%s\n[... more characters not shown: the value prints to more than %d ...]"
                      (substring (car printed) 0 (min (length (car printed))
                                                      agent-q-builtins-max-value-chars))
                      limit))
      (_ (format "%s\n[... more not shown: the value is nested too deeply for Emacs's printer ...]"
                 (car printed))))))

(defun agent-q-builtins--blank-p (string)
  "Return non-nil when STRING is nil or only whitespace."
  (or (null string) (string-match-p "\\`[ \t\n\r\f]*\\'" string)))


;;;; Reading forms

(defconst agent-q-builtins--max-form-depth 1000
  "Deepest nesting of parentheses and brackets in a form text that is read.
Emacs 28's reader recurses once per level, and once per quote or label
prefix: text nested some 30,000 levels deep overflows the C stack (in
batch mode Emacs then hangs).  Forms that deep cannot be evaluated
anyway (`max-lisp-eval-depth').")

(defconst agent-q-builtins--max-form-prefixes 10
  "Most quote, backquote, comma, #\=' or #N= prefixes in a row in a form text.
With `agent-q-builtins--max-form-depth', this bounds how deep the
reader recurses (about 11,000 levels, well within its stack).")

(defun agent-q-builtins--too-deep-p (string)
  "Non-nil when reading STRING could recurse too deeply for Emacs's reader.
That is: when it nests more than `agent-q-builtins--max-form-depth'
levels, measured with `parse-partial-sexp' (linear, no recursion; with
Emacs Lisp syntax, so strings, comments and escaped characters do not
count), or has, outside strings and comments, a run of more than
`agent-q-builtins--max-form-prefixes' prefixes."
  (with-temp-buffer
    (set-syntax-table emacs-lisp-mode-syntax-table)
    (insert string)
    (or (> (car (parse-partial-sexp (point-min) (point-max)
                                    (1+ agent-q-builtins--max-form-depth)))
           agent-q-builtins--max-form-depth)
        (let ((run (format "\\(?:\\(?:['`]\\|,@?\\|#'\\|#[0-9]+=\\)[ \t\n\r\f]*\\)\\{%d,\\}"
                           (1+ agent-q-builtins--max-form-prefixes)))
              (from (point-min))
              (state nil)
              (found nil))
          (goto-char (point-min))
          (while (and (not found) (re-search-forward run nil t))
            (let ((start (match-beginning 0)) (end (match-end 0)))
              ;; The syntax state where the run starts, parsed on from the last one: linear.
              (setq state (parse-partial-sexp from start nil nil state)
                    from start)
              (if (nth 8 state)
                  (goto-char end)
                (setq found t))))
          found))))

(defun agent-q-builtins--read-one-form (string)
  "Read exactly one form from STRING.
Return (:ok FORM) or (:error MESSAGE).  Text after the form other
than whitespace and comments is an error."
  (cond
   ((not (stringp string))
    (list :error "The form must be a string of Emacs Lisp code."))
   ((agent-q-builtins--blank-p string)
    (list :error "The form is empty: give exactly one Emacs Lisp form."))
   ((agent-q-builtins--too-deep-p string)
    (list :error (format "The form nests too deeply to be read safely (more than %d levels of parentheses, or more than %d quotes or labels in a row)."
                         agent-q-builtins--max-form-depth agent-q-builtins--max-form-prefixes)))
   (t
    (condition-case err
        (let* ((read (read-from-string string))
               (form (car read))
               (end (cdr read)))
          (if (condition-case nil
                  (prog1 t (ignore (read-from-string string end)))
                (end-of-file nil))
              (list :error
                    (format "Expected exactly one form, but there is more text after it (from position %d): %s"
                            end
                            (agent-q-builtins--truncate
                             (string-trim (substring string end)) 200)))
            (list :ok form)))
      (end-of-file
       (list :error "Incomplete form: the text ends before the form is complete (unbalanced parentheses or an unterminated string?)."))
      (error
       (list :error (format "Cannot read the form: %s"
                            (agent-q--error-message err))))))))


(provide 'agent-q-support)

;;; agent-q-support.el ends here
