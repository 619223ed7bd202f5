;;; agent-q-files.el --- agent-q's file and buffer tools  -*- lexical-binding: t -*-

;; Copyright (C) 2026 The agent-q authors

;; Author: The agent-q authors
;; Maintainer: The agent-q authors
;; Keywords: tools, files
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

;; The handlers and guards of read_file, read_buffer, search_in_buffer,
;; write_file and propose_file_edit (whose review is in
;; agent-q-review.el).
;;
;; The read tools never ask the user themselves: their guards
;; (`agent-q-builtins--read-file-guard', `agent-q-builtins--buffer-guard',
;; `agent-q-builtins--propose-file-edit-guard') tell the executor why a
;; call needs approval (see agent-q-guard.el), and the handlers check
;; that what they open is what the guard checked.  Files are read
;; through one descriptor (`agent-q-files-read'): opened once without
;; blocking, checked by what the descriptor designates, read through it.
;; Valid UTF-8 text is paged in the module; anything else is decoded by
;; Emacs, from the bytes read, as `insert-file-contents' would.
;;
;; Every handler reports what happened: a result it could not produce
;; (a file not found, an invalid offset, a binary file, a write that did
;; not happen) ends with `agent-q-tool-fail'.
;;
;; write_file refuses to overwrite a file whose visiting buffer has
;; unsaved changes, a read-only file, a file with several hard links and
;; anything but a regular file; otherwise it writes a temporary file in
;; the same directory, renames it over the target and reverts the
;; visiting buffer.  When the directory does not allow that (not
;; writable), it writes the file in place and says so.  Its guard
;; (`agent-q-builtins--write-file-guard') resolves and pins the target
;; once; the write goes to that pinned file or nowhere (see
;; agent-q-guard.el), and a protected target is asked about every time.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'seq)
(require 'agent-q-support)
(require 'agent-q-guard)

(declare-function agent-q-journal-record "agent-q-journal" (&rest plist))
(declare-function agent-q--core-search-buffer "agent-q-core"
                  (pattern regexp case-fold max-listed max-counted time-limit))
(declare-function agent-q--core-file-open "agent-q-core" (path))
(declare-function agent-q--core-file-info "agent-q-core" (handle))
(declare-function agent-q--core-file-load "agent-q-core" (handle max gunzip))
(declare-function agent-q--core-file-scan "agent-q-core" (handle max offset))
(declare-function agent-q--core-file-page "agent-q-core"
                  (handle offset limit column max-chars))
(declare-function agent-q--core-file-text "agent-q-core" (handle))
(declare-function agent-q--core-file-bytes "agent-q-core" (handle))
(declare-function agent-q--core-file-close "agent-q-core" (handle))
(declare-function agent-q-review-edit-async "agent-q-review"
                  (path original modified description callback &optional client))
(declare-function agent-q-tool-fail "agent-q" (format-string &rest args))
(declare-function agent-q--error-message "agent-q" (condition))

(defvar agent-q-max-result-chars)
(defvar agent-q-call-context)

;;;; Options

(defcustom agent-q-builtins-page-chars 15000
  "Maximum number of characters in one page of read_file or read_buffer.
Kept below `agent-q-max-result-chars' so a page is never cut by the
executor; a result that stops early says how to read the next page."
  :type 'natnum
  :group 'agent-q)

(defcustom agent-q-builtins-page-lines 400
  "Default number of lines in one page of read_file."
  :type 'natnum
  :group 'agent-q)

(defcustom agent-q-builtins-max-file-size (* 50 1024 1024)
  "Largest file, in bytes, that read_file reads (after decompression)."
  :type 'natnum
  :group 'agent-q)

(defcustom agent-q-builtins-search-limit 100
  "Maximum number of matches listed by search_in_buffer."
  :type 'natnum
  :group 'agent-q)

(defcustom agent-q-builtins-search-count-limit 100000
  "Number of matches after which search_in_buffer stops counting.
The result then says \"at least\" that many.  Counting every match of a
pattern such as \".\" in a large buffer costs seconds; 0 counts them all."
  :type 'natnum
  :group 'agent-q)

(defcustom agent-q-builtins-search-time-limit 10
  "Seconds after which search_in_buffer stops and reports what it found.
The search runs off Emacs's thread and \\[keyboard-quit] stops it at any
time; this bounds how long Emacs waits for it unattended.  nil: no limit."
  :type '(choice (number :tag "Seconds") (const :tag "No limit" nil))
  :group 'agent-q)


;;;; Reporting

(defun agent-q-files--fail (format-string &rest args)
  "End the tool call as a failure: FORMAT-STRING with ARGS, by `format'.
Uses `agent-q-tool-fail' when agent-q is loaded, and a plain `error'
otherwise (the handlers are also called directly).  Quotes are kept as
typed: the text is for the model, and quotes a pattern or a file name."
  (let ((message (apply #'format format-string args)))
    (if (fboundp 'agent-q-tool-fail)
        (agent-q-tool-fail "%s" message)
      (error "%s" message))))

(defconst agent-q-files--raw-byte-re (rx (any (#x3FFF80 . #x3FFFFF)))
  "A raw byte: a byte that was not valid in the text's encoding.")

(defun agent-q-files--escape-raw-bytes (text)
  "Return (TEXT . ESCAPED): TEXT with each raw byte shown as \\xNN.
ESCAPED is non-nil when there was one.  A unibyte TEXT's bytes above
127 are raw bytes.  Raw bytes cannot be sent to the model as text."
  (let ((text (if (multibyte-string-p text) text (string-to-multibyte text))))
    (if (not (string-match-p agent-q-files--raw-byte-re text))
        (cons text nil)
      (cons (replace-regexp-in-string
             agent-q-files--raw-byte-re
             (lambda (c) (format "\\\\x%02X" (- (aref c 0) #x3FFF00)))
             text t nil)
            t))))

(defconst agent-q-files--raw-byte-note
  "\n[Bytes that are not valid in the text's encoding are shown as \\xNN.]"
  "Note added to a result in which raw bytes were escaped.")


;;;; Guards

(defun agent-q-builtins--read-file-guard (args)
  "The guard of read_file: why reading ARGS's \"path\" needs approval, or nil."
  (let ((file (agent-q-builtins--guarded-name (agent-q-builtins--arg args "path"))))
    (and file (agent-q-guard-file-verdict file))))

(defun agent-q-builtins--buffer-guard (args)
  "The guard of read_buffer and search_in_buffer, on ARGS's \"buffer\"."
  (agent-q-guard-buffer-verdict (agent-q-builtins--arg args "buffer")))

(defun agent-q-builtins--propose-file-edit-guard (args)
  "The guard of propose_file_edit: the file in ARGS is read to show the edit.
Its review approves the edit itself, not reading a guarded file, so
that is asked first, as for read_file.  The file is also resolved and
pinned as for write_file (`agent-q-guard-write-verdict'): a protected
file is asked about first, every time, saying why."
  (let* ((file (agent-q-builtins--guarded-name (agent-q-builtins--arg args "path")))
         (reason (agent-q-builtins--read-file-guard args)))
    (and file
         (let ((verdict (agent-q-guard-write-verdict
                         file (and reason (concat "propose_file_edit must read the file to show the edit: "
                                                  reason)))))
           ;; Reading a guarded file is asked before the review even when the
           ;; file is protected too: the review approves the edit, not the read.
           (if reason (append verdict (list :ask t)) verdict)))))


;;;; Reading a file through one descriptor

(defun agent-q-files--open-failure (err)
  "The failure text of the `agent-q-file-error' ERR."
  (let ((message (nth 1 err)))
    (pcase (nth 2 err)
      ('too-large (format "%s (agent-q-builtins-max-file-size)." message))
      (_ message))))

(defun agent-q-files--coding-entry (name)
  "The decoding `file-coding-system-alist' gives NAME, without calling anything.
A symbol or nil; the symbol `function' when the entry is a function
\(which may read the file by name, so it is never called here)."
  (let ((case-fold-search nil))
    (catch 'found
      (dolist (entry file-coding-system-alist)
        (when (string-match-p (car entry) name)
          (let ((v (cdr entry)))
            (throw 'found (cond ((functionp v) 'function)
                                ((consp v) (car v))
                                (t v)))))))))

(defun agent-q-files--undecided-p (name analysis)
  "Non-nil when nothing but detection chooses how to decode NAME's bytes.
ANALYSIS describes the bytes: no coding cookie, no
`coding-system-for-read', and NAME's entry in `auto-coding-alist' or
`file-coding-system-alist', if any, leaves the text's encoding (and
line ends, as far as ANALYSIS found them regular) undecided."
  (let ((eol (plist-get analysis :eol))
        (named (or (auto-coding-alist-lookup name)
                   (agent-q-files--coding-entry name))))
    (and (not (plist-get analysis :cookie))
         (memq eol '(unix dos))
         (null coding-system-for-read)
         (or (null named)
             (and (coding-system-p named)
                  (memq (coding-system-base named)
                        '(undecided prefer-utf-8 utf-8-auto utf-8-with-signature))
                  (let ((type (coding-system-eol-type named)))
                    (or (vectorp type) (eql type (if (eq eol 'dos) 1 0)))))))))

(defun agent-q-files--utf8-as-is-p (name analysis)
  "Non-nil when Emacs would decode NAME's bytes, described by ANALYSIS, as UTF-8.
Then the module may page them without Emacs's decoder."
  (let ((preferred (coding-system-priority-list t)))
    (and (plist-get analysis :utf8)
         (agent-q-files--undecided-p name analysis)
         preferred
         (memq (coding-system-base preferred) '(utf-8 utf-8-emacs prefer-utf-8 utf-8-auto)))))

(defconst agent-q-files--7bit-or-utf8-codings
  '(utf-8 utf-8-emacs prefer-utf-8 utf-8-auto utf-8-with-signature
    iso-2022-7bit iso-2022-7bit-lock iso-2022-jp)
  "Codings whose detection rejects text that is neither UTF-8 nor 7-bit.")

(defun agent-q-files--latin1-as-is-p (name analysis)
  "Non-nil when Emacs would decode NAME's bytes, described by ANALYSIS, as Latin-1.
That is when the bytes are clean ISO-8859-1 that is not UTF-8 (no C1
control, no escape: the module's `:latin1'), nothing but detection
decides, and the first coding in `coding-system-priority-list' that
accepts 8-bit text that is not UTF-8 is `iso-latin-1'.  Each byte is
then the character of the same code, and the module pages the file
without Emacs's decoder, which takes seconds on tens of megabytes."
  (and (plist-get analysis :latin1)
       (not (plist-get analysis :utf8))
       (not (plist-get analysis :bom))
       (agent-q-files--undecided-p name analysis)
       (eq (seq-find (lambda (coding)
                       (not (memq (coding-system-base coding)
                                  agent-q-files--7bit-or-utf8-codings)))
                     (coding-system-priority-list))
           'iso-latin-1)))

(defconst agent-q-files--decode-progress-bytes (* 16 1000 1000)
  "Files from this size on are decoded with a progress message (over a second).")

(defun agent-q-files--decode-into-buffer (handle name)
  "Insert the loaded bytes of HANDLE into the current buffer, decoded for NAME.
The coding system is chosen as `insert-file-contents' would: a
`coding:' cookie or other `find-auto-coding' rule, then NAME's entry
in `file-coding-system-alist', then detection.  Return it."
  (let* ((bytes (agent-q--core-file-bytes handle))
         (size (length bytes))
         (auto (with-temp-buffer
                 (set-buffer-multibyte nil)
                 ;; The rules look at the head and at the local variables near the end.
                 (if (<= size 8192)
                     (insert bytes)
                   (insert (substring bytes 0 4096) "\n" (substring bytes (- size 3072))))
                 (goto-char (point-min))
                 (ignore-errors (car (find-auto-coding name (buffer-size))))))
         (named (agent-q-files--coding-entry name))
         (coding (or coding-system-for-read auto
                     (and (coding-system-p named) named)
                     'undecided)))
    ;; Emacs's decoders run only here, on the main thread: about 1 s for 50 MB.
    (if (< size agent-q-files--decode-progress-bytes)
        (insert (decode-coding-string bytes coding t))
      (let ((reporter (make-progress-reporter
                       (format "agent-q: decoding %s (%d MB)..." (file-name-nondirectory name)
                               (/ size 1000000)))))
        (insert (decode-coding-string bytes coding t))
        (progress-reporter-done reporter)))
    last-coding-system-used))

(defun agent-q-files-read (file fn &optional unchecked offset)
  "Open FILE through one descriptor, check it, load it and call FN.
FILE is an absolute local file name, the name the read guard checked.
The file is opened once, without blocking (only a regular file opens);
what the descriptor designates is checked against the guard
\(`agent-q-guard-check-file') unless UNCHECKED is non-nil (for Lisp
code reading on its own behalf, not a tool call's); then its bytes
are read through it (at
most `agent-q-builtins-max-file-size', gzip data decompressed for a
.gz name).  With OFFSET, a line number, the bytes are only scanned
\(`agent-q--core-file-scan', locating that line for
`agent-q--core-file-page'), not kept: FN loads them if it needs them
\(`agent-q-files--load').  FN is called with the handle, the bytes'
description (see
`agent-q--core-file-load') and the coding name (the true name, without
.gz).  Return FN's value; every problem ends the call with a failure.
Text that looks binary is refused: an encrypted file, read this way,
is never decrypted."
  (require 'agent-q-core)
  (let ((handle (condition-case err
                    (agent-q--core-file-open file)
                  (agent-q-file-error
                   (agent-q-files--fail "%s" (agent-q-files--open-failure err))))))
    (unwind-protect
        (let* ((info (agent-q--core-file-info handle))
               (problem (and (not unchecked) (agent-q-guard-check-file file info)))
               (true (or (plist-get info :true) file))
               (gzip (string-match-p "\\.gz\\'" true))
               (name (if gzip (substring true 0 -3) true)))
          (when problem
            (agent-q-files--fail "%s" problem))
          (let ((analysis (condition-case err
                              (if (and offset (not gzip))
                                  (agent-q--core-file-scan handle agent-q-builtins-max-file-size offset)
                                (agent-q--core-file-load handle agent-q-builtins-max-file-size gzip))
                            (agent-q-file-error
                             (agent-q-files--fail "%s" (agent-q-files--open-failure err))))))
            (when (plist-get analysis :binary)
              (agent-q-files--fail "File %s looks binary (NUL bytes or control characters); not shown.%s"
                                   file
                                   (if (seq-some (lambda (v) (string-match-p "\\.gpg\\'" v))
                                                 (agent-q-guard-name-variants name))
                                       " It is encrypted: read tools never decrypt files."
                                     "")))
            (funcall fn handle analysis name)))
      (agent-q--core-file-close handle))))

(defun agent-q-files--load (handle name)
  "Load the bytes of HANDLE, for the coding name NAME, unless loaded already.
A .gz file was loaded (decompressed) by `agent-q-files-read'."
  (unless (string-match-p "\\.gz\\'" (or (plist-get (agent-q--core-file-info handle) :true) ""))
    (condition-case err
        (agent-q--core-file-load handle agent-q-builtins-max-file-size nil)
      (agent-q-file-error
       (agent-q-files--fail "%s" (agent-q-files--open-failure err)))))
  (ignore name))

(defun agent-q-files-file-text (file &optional unchecked)
  "Return the whole text of the local FILE, decoded.
The file is read as `agent-q-files-read' reads it (checked against the
read guard unless UNCHECKED).  Return \"\" when FILE does not exist (a
new file).  Other problems end the call with a failure."
  (if (not (file-exists-p file))
      ""
    (agent-q-files-read
     file
     (lambda (handle analysis name)
       (if (agent-q-files--utf8-as-is-p name analysis)
           (agent-q--core-file-text handle)
         (with-temp-buffer
           (agent-q-files--decode-into-buffer handle name)
           (buffer-substring-no-properties (point-min) (point-max)))))
     unchecked)))

(defun agent-q-files--visiting-buffer (file)
  "Return the modified buffer that visits FILE, or nil.
Its file is checked against the read guard as an opened file would
be: a name that came to designate another file (whose buffer this is)
since the guard checked it is refused."
  (let ((buffer (find-buffer-visiting file)))
    (when (and buffer (buffer-modified-p buffer))
      (let* ((visited (buffer-file-name buffer))
             (identity (agent-q-guard--file-identity visited))
             (problem (agent-q-guard-check-file
                       file (list :true (car identity) :dev (nth 1 identity)
                                  :ino (nth 2 identity) :nlink (nth 3 identity)))))
        (when problem (agent-q-files--fail "%s" problem))
        buffer))))


;;;; Pages

(defun agent-q-builtins--page-chars ()
  "Return the number of characters a page of text may hold.
That is `agent-q-builtins-page-chars', made smaller when needed so that
a page and its notes fit in `agent-q-max-result-chars' (0 means no
cap, so the page size is not changed)."
  (let ((cap (max 1 agent-q-builtins-page-chars))
        (result-cap (and (boundp 'agent-q-max-result-chars)
                         agent-q-max-result-chars)))
    (if (and (integerp result-cap) (> result-cap 0))
        (max 1 (min cap (max (/ result-cap 2) (- result-cap 1000))))
      cap)))

(defun agent-q-builtins--page-buffer (offset limit column)
  "Return a page of the current buffer (widened): LIMIT lines from line OFFSET.
COLUMN characters of line OFFSET are skipped.  Return (PAGE FIRST LAST
TOTAL CUT LONG-LINE LINE-LENGTH COLUMN-OK), as `agent-q--core-file-page'
does: FIRST and LAST are the line numbers shown, TOTAL the number of
lines, CUT non-nil when the page stopped early because of the
character limit, LONG-LINE non-nil when line FIRST alone did not fit
\(PAGE holds only its beginning), LINE-LENGTH the number of characters
of line FIRST, COLUMN-OK nil when COLUMN is past its end (and PAGE is
empty).  Only the page is copied."
  (save-excursion
    (save-restriction
      (widen)
      (let* ((total (count-lines (point-min) (point-max)))
             (max-chars (agent-q-builtins--page-chars))
             (start nil) (last (1- offset)) (cut nil)
             (line-length nil))
        (goto-char (point-min))
        (forward-line (1- offset))
        (setq line-length (- (line-end-position) (point)))
        (if (> column line-length)
            (list "" offset last total nil nil line-length nil)
          (forward-char column)
          (setq start (point))
          (while (and (< (- last offset -1) limit) (not (eobp)) (not cut))
            (let ((eol (line-beginning-position 2)))
              (if (and (> (- eol start) max-chars) (> last (1- offset)))
                  (setq cut t)
                (goto-char eol)
                (setq last (1+ last)))))
          (let* ((stop (point))
                 (long-line (and (> (- stop start) max-chars)
                                 ;; A line that fits but for its newline is shown whole.
                                 (not (and (= (- stop start) (1+ max-chars))
                                           (eq (char-before stop) ?\n)))))
                 (page (buffer-substring-no-properties
                        start (if long-line (+ start max-chars) stop))))
            (list page offset last total (or cut long-line) long-line line-length t)))))))

(defun agent-q-builtins--format-page (file note page column)
  "Return read_file's result for FILE: the PAGE list and NOTE before the text.
PAGE is what `agent-q-builtins--page-buffer' returns; COLUMN the
characters skipped.  An offset past the end or a column past the end
of the line ends the call with a failure."
  (pcase-let ((`(,text ,first ,last ,total ,_cut ,long-line ,line-length ,column-ok) page))
    (cond
     ((and (> first 1) (> first total))
      (agent-q-files--fail "Offset %d is past the end of %s, which has %d line(s)."
                           first file total))
     ((not column-ok)
      (agent-q-files--fail "Column %d is past the end of line %d of %s, which has %d character(s)."
                           column first file line-length))
     (t
      (let ((escaped (agent-q-files--escape-raw-bytes text))
            (cut (nth 4 page)))
        (concat
         (format "File: %s (%s%s)\n" file
                 (if (zerop total) "empty"
                   (format "lines %d-%d of %d" first last total))
                 (if (> column 0)
                     (format ", line %d from column %d" first column)
                   ""))
         note
         (car escaped)
         (cond
          (long-line
           (format "\n[Line %d is longer than one page (%d characters); columns %d-%d are shown. Call read_file with offset %d and column %d to read on.]"
                   first line-length column (+ column (length text) -1)
                   first (+ column (length text))))
          ((< last total)
           (format "\n[%s: lines %d-%d not shown. Call read_file with offset %d to read the next page.]"
                   (if cut "Page size limit reached" "More lines")
                   (1+ last) total (1+ last)))
          (t ""))
         (if (cdr escaped) agent-q-files--raw-byte-note "")))))))


;;;; read_file

(defun agent-q-builtins--read-file (args)
  "Return a page of the file named in ARGS.
ARGS has \"path\", and optionally \"offset\" (first line), \"limit\"
\(number of lines) and \"column\" (characters of the first line to
skip).  The read guard has checked the file
\(`agent-q-builtins--read-file-guard'); what is opened is checked again."
  (let* ((path (agent-q-builtins--arg args "path"))
         (file (agent-q-builtins--guarded-name path))
         (offset (agent-q-builtins--arg args "offset" 1))
         (limit (agent-q-builtins--arg args "limit" agent-q-builtins-page-lines))
         (column (agent-q-builtins--arg args "column" 0)))
    (cond
     ((null file) (agent-q-files--fail "No path given: pass the file's path."))
     ((not (and (integerp offset) (>= offset 1)))
      (agent-q-files--fail "Invalid offset %s: give the first line to read, 1 or more." offset))
     ((not (and (integerp limit) (>= limit 1)))
      (agent-q-files--fail "Invalid limit %s: give the number of lines to read, 1 or more." limit))
     ((not (and (integerp column) (>= column 0)))
      (agent-q-files--fail "Invalid column %s: give the number of characters of the first line to skip, 0 or more."
                           column))
     ((agent-q-builtins--remote-p file)
      (agent-q-builtins--read-remote-file file offset limit column))
     (t (agent-q-builtins--read-file-1 file offset limit column)))))

(defun agent-q-builtins--read-file-1 (file offset limit column)
  "Return the page of the local FILE: LIMIT lines from line OFFSET.
COLUMN characters of line OFFSET are skipped."
  (let ((buffer (agent-q-files--visiting-buffer file)))
    (if buffer
        (agent-q-builtins--format-page
         file
         (format "[This is the text of buffer %s, which visits the file and has unsaved changes; the file on disk differs.]\n"
                 (buffer-name buffer))
         (with-current-buffer buffer
           (agent-q-builtins--page-buffer offset limit column))
         column)
      (agent-q-files-read
       file
       (lambda (handle analysis name)
         (agent-q-builtins--format-page
          file ""
          (if (or (agent-q-files--utf8-as-is-p name analysis)
                  (agent-q-files--latin1-as-is-p name analysis))
              (agent-q--core-file-page handle offset limit column
                                       (agent-q-builtins--page-chars))
            (agent-q-files--load handle name)
            (with-temp-buffer
              (agent-q-files--decode-into-buffer handle name)
              (agent-q-builtins--page-buffer offset limit column)))
          column))
       nil offset))))

(defun agent-q-builtins--read-remote-file (file offset limit column)
  "Return the page of the remote FILE, which the user approved reading.
LIMIT lines from line OFFSET, skipping COLUMN characters of the first.
Read with `insert-file-contents' through TRAMP (the module reads only
local files), after checking its type and size on the remote host."
  (unless (plist-get agent-q-call-context :approved)
    (agent-q-files--fail "%s is a remote file; reading it needs the user's approval, which was not given."
                         file))
  (let ((attrs (file-attributes file)))
    (cond
     ((null attrs) (agent-q-files--fail "File not found: %s" file))
     ((not (file-regular-p file))
      (agent-q-files--fail "%s is not a regular file; it was not read." file))
     ((> (file-attribute-size attrs) agent-q-builtins-max-file-size)
      (agent-q-files--fail "%s is too large to read (%d bytes; the limit is %d) (agent-q-builtins-max-file-size)."
                           file (file-attribute-size attrs) agent-q-builtins-max-file-size))
     (t
      (with-temp-buffer
        (insert-file-contents file)
        (agent-q-builtins--format-page
         file "" (agent-q-builtins--page-buffer offset limit column) column))))))


;;;; read_buffer and search_in_buffer

(defun agent-q-builtins--find-buffer (name)
  "Return the live buffer NAME, checked against the read guard.
Ends the call with a failure when there is no such buffer (naming
buffers with similar names) or when the buffer changed since its guard
checked it (`agent-q-guard-check-buffer')."
  (let ((buffer (and (stringp name) (get-buffer name))))
    (if (buffer-live-p buffer)
        (let ((problem (agent-q-guard-check-buffer name buffer)))
          (when problem (agent-q-files--fail "%s" problem))
          buffer)
      (let ((close (seq-take
                    (seq-filter (lambda (n)
                                  (and (stringp name) (not (string-empty-p name))
                                       (not (string-prefix-p " " n))
                                       (string-search (downcase name) (downcase n))))
                                (mapcar #'buffer-name (buffer-list)))
                    10)))
        (agent-q-files--fail "Buffer %s not found.%s" name
                             (if close (format " Buffers with similar names: %s"
                                               (string-join close ", "))
                               ""))))))

(defun agent-q-builtins--read-buffer (args)
  "Return the text of the buffer in ARGS (\"buffer\", \"start\", \"end\").
START and END are character positions; the whole buffer (widened) by
default, a page at a time.  Raw bytes are shown as \\xNN."
  (let ((buffer (agent-q-builtins--find-buffer (agent-q-builtins--arg args "buffer"))))
    (with-current-buffer buffer
      (save-restriction
        (widen)
        (let* ((size (buffer-size))
               (start (agent-q-builtins--arg args "start" 1))
               (end (agent-q-builtins--arg args "end" (point-max))))
          (cond
           ((not (and (integerp start) (integerp end)))
            (agent-q-files--fail "Invalid range: start and end must be integers (character positions)."))
           ((or (< start 1) (> start (point-max)))
            (agent-q-files--fail "Invalid start %d: buffer %s has positions 1 to %d."
                                 start (buffer-name) (point-max)))
           ((< end start)
            (agent-q-files--fail "Invalid range: end %d is before start %d." end start))
           (t
            (let* ((end (min end (point-max)))
                   (max (agent-q-builtins--page-chars))
                   (stop (min end (+ start max)))
                   (escaped (agent-q-files--escape-raw-bytes
                             (buffer-substring-no-properties start stop))))
              (concat
               (format "Buffer: %s (%s%s%s)\n"
                       (buffer-name)
                       (if (< start stop)
                           (format "characters %d-%d of %d" start (1- stop) size)
                         (format "no characters: the range is empty; the buffer has %d"
                                 size))
                       (if buffer-file-name
                           (format "; visits %s" buffer-file-name) "")
                       (if (and buffer-file-name (buffer-modified-p))
                           ", with unsaved changes" ""))
               (car escaped)
               (if (< stop end)
                   (format "\n[Page size limit reached: characters %d-%d not shown. Call read_buffer with start %d to read the next page.]"
                           stop (1- end) stop)
                 "")
               (if (cdr escaped) agent-q-files--raw-byte-note ""))))))))))

;; The search runs in the module for both modes, off Emacs's thread:
;; Emacs's own `search-forward' takes 90-150 ms to go through 20 MB with
;; common strings (and 560 ms to count 534,000 matches of "("), and its
;; backtracking regexp engine can hang on a model's pattern
;; (\\(a*\\)*c on a line of a's).  Emacs's thread only copies the text
;; (40-80 ms for 20 MB) and waits, polling for C-g.

(defun agent-q-builtins--search-lines (positions)
  "Return (LINE BOL EOL) for each of POSITIONS, which increase.
LINE is the position's line number, BOL and EOL its line's bounds.
Each line is measured once, and lines are counted from one position
to the next rather than from the beginning for each: matches on one
long line, or spread over a large buffer, cost one pass over it."
  (let ((line 1) (from (point-min)) (bol nil) (eol nil))
    (mapcar (lambda (pos)
              (unless (and eol (<= pos eol))
                (goto-char pos)
                (let ((start (line-beginning-position)))
                  (setq line (+ line (count-lines from start))
                        from start
                        bol start
                        eol (line-end-position))))
              (list line bol eol))
            positions)))

(defconst agent-q-builtins--search-context 200
  "Most characters of a matching line shown with each match.")

(defun agent-q-builtins--search-excerpt (beg bol eol)
  "The text shown for a match at BEG on the line from BOL to EOL.
The whole line when it is short; else a window around the match, with
\"...\" where the line goes on."
  (let* ((width agent-q-builtins--search-context)
         (start (if (<= (- eol bol) width) bol (max bol (- beg (/ width 4)))))
         (end (min eol (+ start width))))
    (concat (if (> start bol) "..." "")
            (truncate-string-to-width (buffer-substring-no-properties start end)
                                      width nil nil "...")
            (if (< end eol) "..." ""))))

(defun agent-q-builtins--search-in-buffer (args)
  "Search the buffer in ARGS for \"pattern\"; list line and column of matches.
\"regex\" makes the pattern a regexp (default literal);
\"all_matches\" nil lists only the first match (default all).
Counting stops at `agent-q-builtins-search-count-limit' matches and the
search at `agent-q-builtins-search-time-limit' seconds; the result says
so.  \\[keyboard-quit] stops the search at once (a `quit')."
  (let* ((pattern (agent-q-builtins--arg args "pattern"))
         (name (agent-q-builtins--arg args "buffer"))
         (regex (agent-q-builtins--arg args "regex"))
         (all (agent-q-builtins--arg args "all_matches" t)))
    (when (or (not (stringp pattern)) (string-empty-p pattern))
      (agent-q-files--fail "No pattern given: pass the text (or regexp) to search for."))
    (let ((buffer (agent-q-builtins--find-buffer name)))
      (when (and regex (condition-case err (progn (string-match-p pattern "") nil)
                         (invalid-regexp (setq regex (cadr err)) t)))
        (agent-q-files--fail "Invalid regular expression '%s': %s" pattern regex))
      (with-current-buffer buffer
        (save-excursion
          (save-restriction
            (widen)
            (let* ((listed (if all agent-q-builtins-search-limit 1))
                   (result
                    (condition-case err
                        (progn
                          (require 'agent-q-core nil t)
                          (agent-q--core-search-buffer
                           pattern regex nil listed
                           (if all agent-q-builtins-search-count-limit 1)
                           agent-q-builtins-search-time-limit))
                      (agent-q-search-error (cadr err))
                      (error (agent-q--error-message err)))))
              (when (stringp result)
                (agent-q-files--fail (if regex "Cannot search for regular expression '%s': %s"
                                       "Cannot search for '%s': %s")
                                     pattern result))
              (agent-q-builtins--search-report pattern result all listed))))))))

(defun agent-q-builtins--search-report (pattern result all listed)
  "Return search_in_buffer's text for PATTERN's RESULT in the current buffer.
RESULT is the plist of `agent-q--core-search-buffer'; ALL is nil when
only the first match was asked for; at most LISTED matches are listed."
  (let* ((count (plist-get result :total))
         (starts (mapcar (lambda (m) (+ (point-min) (car m)))
                         (plist-get result :matches)))
         (capped (and all (eq (plist-get result :stopped) 'count-limit)))
         (timed-out (eq (plist-get result :stopped) 'time-limit))
         (reached (and timed-out
                       (line-number-at-pos
                        (min (point-max) (+ (point-min) (plist-get result :searched)))
                        t)))
         (limit-note (and timed-out
                          (format "the search stopped at its time limit of %s s (agent-q-builtins-search-time-limit) at line %d of %d; the rest of the buffer was not searched"
                                  agent-q-builtins-search-time-limit reached
                                  (line-number-at-pos (point-max) t))))
         (escaped nil))
    (cond
     ((zerop count)
      (if timed-out
          (format "No matches for '%s' in buffer %s before line %d: %s."
                  pattern (buffer-name) reached limit-note)
        (format "No matches for '%s' in buffer %s." pattern (buffer-name))))
     (t
      (concat
       (cond (capped
              (format "Found at least %d match(es) for '%s' (counting stopped there):\n"
                      count pattern))
             (timed-out
              (format "Found %d match(es) for '%s' before line %d (%s):\n"
                      count pattern reached limit-note))
             (t (format "Found %d match(es) for '%s':\n" count pattern)))
       (let ((lines (agent-q-builtins--search-lines starts)))
         (mapconcat
          (lambda (beg)
            (pcase-let* ((`(,line ,bol ,eol) (pop lines))
                         (text (agent-q-files--escape-raw-bytes
                                (agent-q-builtins--search-excerpt beg bol eol))))
              (when (cdr text) (setq escaped t))
              ;; The column counts characters from the line's start, as
              ;; read_file's column argument does; computing a display
              ;; column would walk the line for every match.
              (format "  Line %d, Column %d (position %d): %s"
                      line (- beg bol) beg (car text))))
          starts "\n"))
       (if (> count listed)
           (format "\n[... %s%d more matches not shown ...]"
                   (if capped "at least " "") (- count listed))
         "")
       (if escaped agent-q-files--raw-byte-note ""))))))

;;;; write_file

(defun agent-q-builtins--write-coding (file buffer content)
  "Return (CODING . NOTE): the coding system to write CONTENT to FILE with.
Use BUFFER's when a buffer visits FILE, else what reading FILE
detects (read through the module: never blocks), else utf-8-unix.  An
undecided coding becomes utf-8 with the same end-of-line convention; a
coding that cannot encode CONTENT is replaced by utf-8, and NOTE says
so (NOTE is nil otherwise)."
  (let* ((found (or (and buffer (buffer-local-value 'buffer-file-coding-system buffer))
                    (and (file-exists-p file)
                         (ignore-errors
                           (let ((handle (agent-q--core-file-open file)))
                             (unwind-protect
                                 (progn
                                   (agent-q--core-file-load handle agent-q-builtins-max-file-size nil)
                                   (with-temp-buffer
                                     (agent-q-files--decode-into-buffer handle file)))
                               (agent-q--core-file-close handle)))))
                    'utf-8-unix))
         (coding (if (memq (coding-system-base found) '(undecided prefer-utf-8))
                     (coding-system-change-text-conversion found 'utf-8)
                   found)))
    (if (unencodable-char-position 0 (length content) coding nil content)
        (cons (coding-system-change-text-conversion coding 'utf-8)
              (format "The content has characters that %s cannot encode, so it was written as utf-8."
                      coding))
      (cons coding nil))))

(defun agent-q-builtins--write-refusal (file attrs buffer)
  "Return why write_file must not replace FILE (with ATTRS), or nil.
BUFFER is the buffer visiting FILE, if any."
  (let ((modes (and attrs (file-attribute-modes attrs))))
    (cond
     ((eq t (file-attribute-type attrs))
      (format "%s is a directory; nothing was written." file))
     ((and modes (not (eq ?- (aref modes 0))))
      (format "%s is %s, not a regular file; nothing was written."
              file (pcase (aref modes 0)
                     (?p "a FIFO (named pipe)") (?s "a socket")
                     ((or ?c ?b) "a device") (_ "a special file"))))
     ((and buffer (buffer-modified-p buffer))
      (format "Buffer %s visits %s and has unsaved changes; writing the file would lose them. Nothing was written. Ask the user to save or revert the buffer, or use propose_file_edit to change the buffer."
              (buffer-name buffer) file))
     ((and attrs (or (not (file-writable-p file))
                     (zerop (logand (file-modes file) #o222))))
      (format "%s is read-only (mode %s); nothing was written. If it should change, the user must make it writable first (chmod u+w)."
              file modes))
     ((and attrs (> (file-attribute-link-number attrs) 1))
      (format "%s has %d hard links: replacing it would split them (the other names would keep the old content) and writing it in place would change them all, whatever they are; nothing was written. Ask the user to remove the other links, or write a new file."
              file (file-attribute-link-number attrs))))))

(defun agent-q-builtins--write-file-guard (args)
  "The guard of write_file: resolve and pin ARGS's \"path\" once.
Return the answer of `agent-q-guard-write-verdict': the pinned true
name, which the prompt shows and the handler writes, and why the
call is protected when the file governs agents or runs code."
  (let ((file (agent-q-builtins--guarded-name (agent-q-builtins--arg args "path"))))
    (and file (agent-q-guard-write-verdict file))))

(defun agent-q-builtins--write-remote (file content coding modes)
  "Write CONTENT to the remote FILE with CODING and MODES, by name.
Return the notes to report.  Remote files are written through their
file name handler (TRAMP), which the module cannot pin."
  (let ((dir (file-name-directory file))
        (notes nil)
        (temp nil))
    (unless (file-directory-p dir)
      (make-directory dir t)
      (push (format "Created directory %s." dir) notes))
    (unwind-protect
        (progn
          (setq temp (make-temp-file (expand-file-name ".agent-q-write-" dir)))
          (let ((coding-system-for-write coding))
            (with-temp-buffer
              (insert content)
              (write-region nil nil temp nil 'silent)))
          (when modes (set-file-modes temp modes))
          (rename-file temp file t)
          (setq temp nil))
      (when (and temp (file-exists-p temp))
        (ignore-errors (delete-file temp))))
    notes))

(defun agent-q-builtins--write-file (args)
  "Write ARGS's \"content\" to the file \"path\", atomically.
A local file is written exactly where the guard resolved and pinned it
\(see `agent-q-guard-write-pinned'): a directory of the path replaced
or swapped for a symbolic link since then makes the call fail, and
nothing is written.  Refuse (a failure) a file whose visiting buffer
has unsaved changes, a read-only file, a file with several hard links
and anything but a regular file; revert an unmodified visiting buffer
after writing.  When the directory does not allow a rename, write the
file in place."
  (let* ((path (agent-q-builtins--arg args "path"))
         (content (agent-q-builtins--arg args "content")))
    (cond
     ((or (not (stringp path)) (string-empty-p path))
      (agent-q-files--fail "No path given; nothing was written."))
     ((not (stringp content))
      (agent-q-files--fail "The content must be a string; nothing was written."))
     (t
      (let* ((given (agent-q-builtins--guarded-name path))
             (remote (agent-q-builtins--remote-p given))
             (file (or (and (not remote) (plist-get agent-q-call-context :file))
                       (file-truename given)))
             (dir (file-name-directory file))
             (buffer (find-buffer-visiting file))
             (attrs (file-attributes file))
             (existed (and attrs t))
             (refusal (agent-q-builtins--write-refusal file attrs buffer))
             (notes nil)
             (in-place nil)
             (old nil))
        (when refusal (agent-q-files--fail "%s" refusal))
        ;; For the journal: the text replaced (a regular file, checked above).
        (setq old (cond ((not existed) "")
                        (buffer (with-current-buffer buffer
                                  (save-restriction
                                    (widen)
                                    (buffer-substring-no-properties (point-min) (point-max)))))
                        ((and (not remote)
                              (<= (file-attribute-size attrs) agent-q-builtins-max-file-size))
                         (ignore-errors
                           (with-temp-buffer
                             (insert-file-contents file)
                             (buffer-string))))))
        (condition-case err
            (let ((coding (let ((c (agent-q-builtins--write-coding file buffer content)))
                            (when (cdr c) (push (cdr c) notes))
                            (car c)))
                  (modes (if existed (file-modes file)
                           (logand (default-file-modes) #o666))))
              (if remote
                  (setq notes (append (agent-q-builtins--write-remote file content coding modes)
                                      notes))
                ;; A rename needs a writable directory; the file itself is writable.
                (setq in-place (and existed (not (file-writable-p dir))))
                (let ((written (agent-q-guard-write-pinned
                                given
                                ;; Unibyte whatever the content: an ASCII string may
                                ;; come back multibyte when encoding changes nothing.
                                (let ((bytes (encode-coding-string content coding)))
                                  (if (multibyte-string-p bytes) (string-to-unibyte bytes) bytes))
                                modes in-place)))
                  (setq file (plist-get written :file))
                  (dolist (created (plist-get written :created))
                    (push (format "Created directory %s." (file-name-as-directory created)) notes))
                  (when in-place
                    (push (format "The directory %s is not writable, so the file was written in place (not atomically)."
                                  dir)
                          notes))))
              (when (and (stringp old) (require 'agent-q-journal nil t))
                (agent-q-journal-record :context agent-q-call-context :file file
                                        :old old :new content))
              (when buffer
                (with-current-buffer buffer
                  (revert-buffer t t t))
                (push (format "Buffer %s, which visits the file, was reverted to the new content."
                              (buffer-name buffer))
                      notes))
              (string-join
               (cons (format "Wrote %d characters (%d line(s), %d bytes on disk) to %s (%s; encoding %s)."
                             (length content)
                             (with-temp-buffer
                               (insert content)
                               (count-lines (point-min) (point-max)))
                             (or (file-attribute-size (file-attributes file)) 0)
                             file
                             (cond (in-place "rewrote the existing file in place")
                                   (existed "replaced the existing file")
                                   (t "created a new file"))
                             coding)
                     (nreverse notes))
               "\n"))
          (error
           (agent-q-files--fail "Writing %s failed: %s. %s"
                                file
                                (if (eq (car err) 'agent-q-file-error)
                                    (nth 1 err)
                                  (agent-q--error-message err))
                                (if existed "The file was left unchanged."
                                  "No file was created.")))))))))


;;;; propose_file_edit

(defun agent-q-builtins--propose-file-edit (callback args)
  "Open the per-hunk review of the edit in ARGS; CALLBACK gets its outcome.
An asynchronous handler: it returns at once and the review, when the
user finishes it, calls CALLBACK with the result text and its status.
The review reads the file (and quotes it when original does not
match), so the guard (`agent-q-builtins--propose-file-edit-guard')
has asked before reading a guarded file, and the review's reading of
the current text (`agent-q-review--current-text') checks what it opens."
  (require 'agent-q-review nil t)
  (let* ((path (agent-q-builtins--arg args "path"))
         (file (agent-q-builtins--guarded-name path)))
    (cond
     ((not (fboundp 'agent-q-review-edit-async))
      (funcall callback "Error: propose_file_edit is unavailable (agent-q-review is not installed)."
               :failure))
     ((null file)
      (funcall callback "No path given: pass the file's path; no change made." :failure))
     ((and (agent-q-builtins--remote-p file)
           (not (plist-get agent-q-call-context :approved)))
      (funcall callback (format "%s is a remote file; reading it needs the user's approval, which was not given. No change made."
                                path)
               :failure))
     (t
      (condition-case err
          (agent-q-review-edit-async
           (if (agent-q-builtins--remote-p file) file (expand-file-name file))
           (agent-q-builtins--arg args "original" "")
           (agent-q-builtins--arg args "modified" "")
           (agent-q-builtins--arg args "description" "")
           callback
           (plist-get agent-q-call-context :client))
        ((agent-q-tool-failure error)
         (funcall callback
                  (format "%s No change made to %s."
                          (if (eq (car err) 'agent-q-tool-failure)
                              (cadr err)
                            (agent-q--error-message err))
                          path)
                  :failure)))))))

(defun agent-q-files-current-text (file)
  "Return the current text of FILE for a review: a buffer's, the file's, or \"\".
A buffer visiting FILE gives its text, unsaved edits included; else
the file is read through one descriptor (`agent-q-files-read'), never
blocking, and, during a tool call (`agent-q-call-context' is set),
checked against what the read guard approved; a missing file gives
\"\".  Return (TEXT . BUFFER).  Text
with raw bytes (not valid in the file's encoding) cannot be reviewed:
that is a failure."
  (let* ((checked (and agent-q-call-context t))
         (buffer (if (or (not checked) (agent-q-builtins--remote-p file))
                     (find-buffer-visiting file)
                   (let ((b (find-buffer-visiting file)))
                     (when b
                       (let* ((identity (agent-q-guard--file-identity (buffer-file-name b)))
                              (problem (agent-q-guard-check-file
                                        file (list :true (car identity) :dev (nth 1 identity)
                                                   :ino (nth 2 identity) :nlink (nth 3 identity)))))
                         (when problem (agent-q-files--fail "%s" problem))))
                     b)))
         (text (cond
                (buffer (with-current-buffer buffer
                          (save-restriction
                            (widen)
                            (buffer-substring-no-properties (point-min) (point-max)))))
                ((agent-q-builtins--remote-p file)
                 (if (file-exists-p file)
                     (with-temp-buffer (insert-file-contents file) (buffer-string))
                   ""))
                (t (agent-q-files-file-text file (not checked))))))
    (when (string-match-p agent-q-files--raw-byte-re text)
      (agent-q-files--fail "%s has bytes that are not valid in its encoding (shown by read_file as \\xNN), so an edit of it cannot be reviewed as text; nothing was changed."
                           file))
    (cons text buffer)))


(provide 'agent-q-files)

;;; agent-q-files.el ends here
