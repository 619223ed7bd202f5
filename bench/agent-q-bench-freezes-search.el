;;; agent-q-bench-freezes-search.el --- Benchmark 6: search_in_buffer and Emacs's thread  -*- lexical-binding: t -*-

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

;; Benchmark 6 (no freezes): how long a tool keeps Emacs's
;; thread busy at realistic large sizes.  Target: under 100 ms, or off
;; the main thread and interruptible.  Wall clock (the work may run on
;; another thread), GC out and in.
;;
;; search_in_buffer on a 20 MB buffer of Emacs Lisp (Emacs's own
;; sources, concatenated), one operation one call through
;; `agent-q-execute-tool-calls' (the read guard, the search, the line
;; numbers and the text of the result):
;;
;; - literal mode, for a string with no match, one with about 17,000
;;   and one with more than the count limit (100,000); baseline: Emacs's
;;   `search-forward' counting every match (what the literal mode did);
;; - regexp mode, the same kinds; baseline: `re-search-forward' counting
;;   every match (the Emacs engine the module replaces);
;; - a pattern with about 19 million matches ("."), search_in_buffer only;
;; - diagnostics: the module copying the buffer and answering at once
;;   (a pattern anchored at the start that cannot match): the floor the
;;   copy sets; and the raw-byte check the old regexp mode ran on every
;;   search (`string-match-p' of a non-Unicode character class);
;; - a pattern on the engine's slowest path (Unicode word boundaries
;;   next to non-ASCII text), GC out only: a search Emacs waits for, in
;;   slices of 10 ms polling for C-g.
;;
;; Before timing, search_in_buffer's counts are checked against the
;; baseline's for the patterns under the count limit.

;;; Code:

(require 'agent-q-bench)
(require 'cl-lib)

(declare-function agent-q-execute-tool-calls "agent-q" (calls &optional registry))
(declare-function agent-q--core-search-buffer "agent-q-core"
                  (pattern regexp case-fold max-listed max-counted time-limit))
(defvar agent-q-builtins-search-count-limit)
(defvar agent-q-builtins-search-time-limit)

(defconst agent-q-bench-freezes-size 20000000
  "The size of the searched buffer, in characters.")

(defconst agent-q-bench-freezes-buffer "*agent-q-bench 20 MB*"
  "The name of the searched buffer.")

(defun agent-q-bench-freezes--buffer ()
  "Return a buffer of `agent-q-bench-freezes-size' characters of Emacs Lisp.
Emacs's own sources (.el.gz, in file name order) concatenated."
  (or (get-buffer agent-q-bench-freezes-buffer)
      (let* ((dir (file-name-directory (locate-library "subr.el" t)))
             (files (sort (directory-files-recursively dir "\\.el\\.gz\\'") #'string<))
             (buffer (get-buffer-create agent-q-bench-freezes-buffer))
             (inhibit-message t))
        (with-current-buffer buffer
          (while (and files (< (buffer-size) agent-q-bench-freezes-size))
            (goto-char (point-max))
            (insert-file-contents (pop files)))
          (delete-region (1+ agent-q-bench-freezes-size) (point-max)))
        buffer)))

(defun agent-q-bench-freezes--tool (pattern regex)
  "Run search_in_buffer for PATTERN (a regexp when REGEX); return its content.
Through `agent-q-execute-tool-calls', as a model's call runs: guard,
handler, result.  Signal an error when the call fails."
  (let ((result (car (agent-q-execute-tool-calls
                      `((:id "s" :name "search_in_buffer"
                             :arguments (:pattern ,pattern
                                         :buffer ,agent-q-bench-freezes-buffer
                                         ,@(and regex '(:regex t)))))))))
    (unless (plist-get result :success)
      (error "search_in_buffer failed: %s" (plist-get result :content)))
    (plist-get result :content)))

(defun agent-q-bench-freezes--emacs-count (pattern regex)
  "Count the matches of PATTERN with Emacs's own search (a regexp when REGEX)."
  (with-current-buffer (agent-q-bench-freezes--buffer)
    (save-excursion
      (goto-char (point-min))
      (let ((case-fold-search nil) (n 0))
        (if regex
            (while (re-search-forward pattern nil t) (setq n (1+ n)))
          (while (search-forward pattern nil t) (setq n (1+ n))))
        n))))

(defun agent-q-bench-freezes--tool-count (pattern regex)
  "The count search_in_buffer reports for PATTERN (a regexp when REGEX)."
  (let ((out (agent-q-bench-freezes--tool pattern regex)))
    (cond ((string-prefix-p "No matches" out) 0)
          ((string-match "\\`Found \\(at least \\)?\\([0-9]+\\)" out)
           (string-to-number (match-string 2 out)))
          (t (error "Unexpected result: %s" (substring out 0 (min 200 (length out))))))))

(defconst agent-q-bench-freezes--patterns
  '((nil "zzz-not-there" "no match")
    (nil "defun" "~17,000 matches")
    (nil "(" "534,000 matches: counting stops at 100,000")
    (t "\\_<zzz-not-there\\_>" "no match")
    (t "\\_<car\\_>" "~10,000 matches")
    (t "[a-z]+-[a-z]+" "~400,000 matches: counting stops at 100,000"))
  "The searches compared with Emacs's own: (REGEX PATTERN DESCRIPTION).")

(defun agent-q-bench-freezes--label (regex pattern description)
  "The benchmark name for PATTERN (a regexp when REGEX) and its DESCRIPTION."
  (format "6. search_in_buffer %s '%s' (%s), 20 MB"
          (if regex "regex" "literal") pattern description))

(defun agent-q-bench-freezes-search ()
  "Benchmark 6, search_in_buffer: literal and regexp modes on a 20 MB buffer."
  (let ((agent-q-builtins-search-count-limit 100000)
        (agent-q-builtins-search-time-limit 10)
        (text-bytes (with-current-buffer (agent-q-bench-freezes--buffer)
                      (position-bytes (point-max)))))
    (agent-q-bench-note "- The buffer: %d characters (%d bytes) of Emacs's Lisp sources."
                        (buffer-size (agent-q-bench-freezes--buffer)) (1- text-bytes))
    ;; Agreement, untimed.
    (pcase-dolist (`(,regex ,pattern ,_) agent-q-bench-freezes--patterns)
      (let ((emacs (agent-q-bench-freezes--emacs-count pattern regex))
            (tool (agent-q-bench-freezes--tool-count pattern regex)))
        (agent-q-bench-note "- '%s' (%s): Emacs counts %d, search_in_buffer reports %s%d: %s"
                            pattern (if regex "regex" "literal") emacs
                            (if (> emacs 100000) "at least " "") tool
                            (if (or (= emacs tool) (and (> emacs 100000) (= tool 100000)))
                                "agree" "DISAGREE"))))
    (pcase-dolist (`(,regex ,pattern ,description) agent-q-bench-freezes--patterns)
      (agent-q-bench-compare
       (agent-q-bench-freezes--label regex pattern description)
       (list (list :label (if regex "Emacs re-search-forward, count all"
                            "Emacs search-forward, count all (the old literal mode)")
                   :run (lambda (_) (agent-q-bench-freezes--emacs-count pattern regex)))
             (list :label "search_in_buffer"
                   :run (lambda (_) (agent-q-bench-freezes--tool pattern regex))))
       :clock 'wall :unit "search"))
    (agent-q-bench-compare
     "6. search_in_buffer regex '.' (19 million matches; counting stops at 100,000), 20 MB"
     (list (list :label "search_in_buffer"
                 :run (lambda (_) (agent-q-bench-freezes--tool "." t))))
     :clock 'wall :unit "search")
    (agent-q-bench-compare
     "6. (diagnostics) copying 20 MB out of Emacs"
     (list (list :label "agent-q--core-search-buffer '\\`zzz' (copy, then no search)"
                 :run (lambda (_)
                        (with-current-buffer (agent-q-bench-freezes--buffer)
                          (agent-q--core-search-buffer "\\`zzz" t nil 100 100000 nil))))
           (list :label "buffer-substring-no-properties of the whole buffer"
                 :run (lambda (_)
                        (with-current-buffer (agent-q-bench-freezes--buffer)
                          (buffer-substring-no-properties (point-min) (point-max)))))
           (list :label "the old regex mode's raw-byte check (string-match-p)"
                 :setup (lambda ()
                          (with-current-buffer (agent-q-bench-freezes--buffer)
                            (buffer-substring-no-properties (point-min) (point-max))))
                 :run (lambda (text)
                        (string-match-p (rx (not (any (0 . #x10FFFF)))) text))))
     :clock 'wall :unit "call")
    (agent-q-bench-compare
     "6. search_in_buffer regex '\\b[[:alpha:]]+\\b[[:digit:]]' (engine's slow path), 20 MB"
     (list (list :label "search_in_buffer (Emacs waits, C-g stops it)"
                 :run (lambda (_)
                        (agent-q-bench-freezes--tool "\\b[[:alpha:]]+\\b[[:digit:]]" t))))
     :clock 'wall :gc '(out) :unit "search")
    (agent-q-bench-note "")
    (dolist (gc '(out in))
      (let ((over nil))
        (pcase-dolist (`(,regex ,pattern ,description) agent-q-bench-freezes--patterns)
          (let ((row (agent-q-bench-find (agent-q-bench-freezes--label regex pattern description)
                                         "search_in_buffer" gc)))
            (when (and row (> (agent-q-bench-row-time row) 0.1))
              (push (format "%s '%s' %.0f ms" (if regex "regex" "literal") pattern
                            (* 1000 (agent-q-bench-row-time row)))
                    over))))
        (agent-q-bench-note "- GC %s: %s" gc
                            (if over
                                (format "over 100 ms: %s" (string-join (nreverse over) ", "))
                              "every search above held Emacs's thread under 100 ms"))))
    (agent-q-bench-include "analysis-search.md")
    (kill-buffer (agent-q-bench-freezes--buffer))))

(agent-q-bench-define-section
 6.1 "freezes-search" "6. Freezes: search_in_buffer on a 20 MB buffer"
 #'agent-q-bench-freezes-search)

(provide 'agent-q-bench-freezes-search)

;;; agent-q-bench-freezes-search.el ends here
