;;; agent-q-files.el --- agent-q's file and buffer tools  -*- lexical-binding: t -*-

;; Copyright (C) 2026 The agent-q authors

;; Author: The agent-q authors
;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1"))
;; Keywords: tools, files
;; URL: https://example.invalid/agent-q

;; This file is not part of GNU Emacs.

;; This program is free software; you can redistribute it and/or modify
;; it under the terms of the GNU General Public License as published by
;; the Free Software Foundation, either version 3 of the License, or
;; (at your option) any later version.

;;; Commentary:

;; The handlers of read_file, read_buffer, search_in_buffer, write_file
;; and propose_file_edit (whose review is in agent-q-tools.el).  The
;; read tools go through the read guard of agent-q-guard.el.
;;
;; write_file refuses to overwrite a file whose visiting buffer has
;; unsaved changes (the user's edits would be lost either way: by
;; reverting the buffer, or by the next save of the buffer); otherwise
;; it writes a temporary file in the same directory, renames it over
;; the target and reverts the visiting buffer.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'seq)
(require 'agent-q-support)
(require 'agent-q-guard)

(declare-function agent-q--core-regex-search "agent-q-core"
                  (text pattern case-fold max))
(declare-function agent-q-tools-review-edit-async "agent-q-tools"
                  (path original modified description callback &optional client))

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
  "Largest file, in bytes, that read_file reads."
  :type 'natnum
  :group 'agent-q)

(defcustom agent-q-builtins-search-limit 100
  "Maximum number of matches listed by search_in_buffer."
  :type 'natnum
  :group 'agent-q)


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


;;;; Buffer: read_file

(defun agent-q-builtins--page-lines (text offset limit &optional column)
  "Return a page of TEXT: LIMIT lines from line OFFSET (1-based).
COLUMN characters of line OFFSET are skipped (default 0).
Return (PAGE FIRST LAST TOTAL CUT LONG-LINE LINE-LENGTH): FIRST and
LAST are the line numbers shown, TOTAL the number of lines, CUT
non-nil when the page stopped early because of the character limit,
LONG-LINE non-nil when line FIRST alone did not fit (PAGE holds only
its beginning), LINE-LENGTH the number of characters of line FIRST,
or nil when COLUMN is past its end."
  (with-temp-buffer
    (insert text)
    (let* ((total (count-lines (point-min) (point-max)))
           (max-chars (agent-q-builtins--page-chars))
           (start nil) (last (1- offset)) (cut nil)
           (line-length nil))
      (goto-char (point-min))
      (forward-line (1- offset))
      (setq line-length (- (line-end-position) (point)))
      (if (> (or column 0) line-length)
          (setq line-length nil)
        (forward-char (or column 0)))
      (setq start (point))
      (while (and (< (- last offset -1) limit) (not (eobp)) (not cut))
        (let ((eol (line-beginning-position 2)))
          (if (and (> (- eol start) max-chars) (> last (1- offset)))
              (setq cut t)
            (goto-char eol)
            (setq last (1+ last)))))
      (let ((page (buffer-substring-no-properties start (point)))
            (long-line nil))
        (when (and (> (length page) max-chars)
                   ;; A line that fits but for its newline is shown whole.
                   (not (and (= (length page) (1+ max-chars))
                             (eq (aref page max-chars) ?\n))))
          ;; A single line longer than a page: show its beginning, say so.
          (setq page (substring page 0 max-chars)
                long-line t))
        (list page offset last total (or cut long-line) long-line line-length)))))

(defun agent-q-builtins--read-file (args)
  "Return a page of the file named in ARGS.
ARGS has \"path\", and optionally \"offset\" (first line), \"limit\"
\(number of lines) and \"column\" (characters of the first line to
skip)."
  (let* ((path (agent-q-builtins--arg args "path"))
         (file (agent-q-builtins--guarded-name path)))
    (if (null file)
        "No path given: pass the file's path."
      (let ((check (agent-q-builtins--check-file
                    "read_file" file
                    (agent-q-builtins--args-plist
                     args '("path" "offset" "limit" "column")))))
        (if (eq (car check) :denied)
            (cadr check)
          (let* ((approved (agent-q-builtins--plist-args (cadr check)))
                 (file (expand-file-name (gethash "path" approved path))))
            (agent-q-builtins--read-file-1
             file
             (gethash "offset" approved (agent-q-builtins--arg args "offset" 1))
             (gethash "limit" approved (agent-q-builtins--arg args "limit"
                                                             agent-q-builtins-page-lines))
             (gethash "column" approved (agent-q-builtins--arg args "column" 0)))))))))

(defun agent-q-builtins--guarded-name (path)
  "Return the file name PATH to check with the read guard, or nil.
nil when PATH is not a non-empty string.  A local PATH is expanded
\(~, .., relative to `default-directory'); a remote one is returned as
given, since expanding it may connect to the host before the user
approved."
  (and (stringp path) (not (string-empty-p path))
       (if (agent-q-builtins--remote-p path)
           path
         (expand-file-name path))))

(defun agent-q-builtins--file-text (file)
  "Return (TEXT . NOTE) for FILE, or (nil . ERROR-TEXT).
TEXT comes from the buffer visiting FILE when it has unsaved changes."
  (let ((buffer (find-buffer-visiting file)))
    (cond
     ((and buffer (buffer-modified-p buffer))
      (cons (with-current-buffer buffer
              (save-restriction (widen) (buffer-substring-no-properties
                                         (point-min) (point-max))))
            (format "[This is the text of buffer %s, which visits the file and has unsaved changes; the file on disk differs.]\n"
                    (buffer-name buffer))))
     ((not (file-exists-p file)) (cons nil (format "File not found: %s" file)))
     ((file-directory-p file)
      (cons nil (format "%s is a directory, not a file." file)))
     ((not (file-regular-p file))
      ;; A FIFO or a device such as /dev/zero would block or never end.
      (cons nil (format "%s is not a regular file (a device, FIFO or socket); it was not read." file)))
     ((not (file-readable-p file))
      (cons nil (format "Permission denied: %s is not readable." file)))
     ((let ((size (file-attribute-size (file-attributes file))))
        (and size (> size agent-q-builtins-max-file-size)))
      (cons nil (format "File %s is too large to read (%d bytes; the limit is agent-q-builtins-max-file-size, %d bytes)."
                        file (file-attribute-size (file-attributes file))
                        agent-q-builtins-max-file-size)))
     (t
      (condition-case err
          (with-temp-buffer
            (insert-file-contents file)
            (if (save-excursion
                  (goto-char (point-min))
                  (search-forward "\0" (min (point-max) 8000) t))
                (cons nil (format "File %s looks binary (it contains NUL bytes); not shown." file))
              (cons (buffer-substring-no-properties (point-min) (point-max)) "")))
        (error (cons nil (format "Error reading %s: %s" file
                                 (agent-q--error-message err)))))))))

(defun agent-q-builtins--read-file-1 (file offset limit &optional column)
  "Return the page of FILE starting at line OFFSET with LIMIT lines.
COLUMN characters of line OFFSET are skipped (default 0)."
  (let ((column (or column 0)))
    (cond
     ((not (and (integerp offset) (>= offset 1)))
      (format "Invalid offset %s: give the first line to read, 1 or more." offset))
     ((not (and (integerp limit) (>= limit 1)))
      (format "Invalid limit %s: give the number of lines to read, 1 or more." limit))
     ((not (and (integerp column) (>= column 0)))
      (format "Invalid column %s: give the number of characters of the first line to skip, 0 or more."
              column))
     (t
      (agent-q-builtins--read-file-2 file offset limit column)))))

(defun agent-q-builtins--read-file-2 (file offset limit column)
  "Return the page of FILE: LIMIT lines from line OFFSET, from COLUMN."
  (let ((content (agent-q-builtins--file-text file)))
    (if (null (car content))
        (cdr content)
      (pcase-let ((`(,page ,first ,last ,total ,cut ,long-line ,line-length)
                   (agent-q-builtins--page-lines (car content) offset limit column)))
        (cond
         ((and (> offset 1) (> offset total))
          (format "Offset %d is past the end of %s, which has %d line(s)."
                  offset file total))
         ((null line-length)
          (format "Column %d is past the end of line %d of %s, which has %d character(s)."
                  column offset file
                  (with-temp-buffer
                    (insert (car content))
                    (goto-char (point-min))
                    (forward-line (1- offset))
                    (- (line-end-position) (point)))))
         (t
          (concat
           (format "File: %s (%s%s)\n" file
                   (if (zerop total) "empty"
                     (format "lines %d-%d of %d" first last total))
                   (if (> column 0)
                       (format ", line %d from column %d" first column)
                     ""))
           (cdr content)
           page
           (cond
            (long-line
             (format "\n[Line %d is longer than one page (%d characters); columns %d-%d are shown. Call read_file with offset %d and column %d to read on.]"
                     first line-length column (+ column (length page) -1)
                     first (+ column (length page))))
            ((< last total)
             (format "\n[%s: lines %d-%d not shown. Call read_file with offset %d to read the next page.]"
                     (if cut "Page size limit reached" "More lines")
                     (1+ last) total (1+ last)))
            (t "")))))))))

;;;; Buffer: read_buffer and search_in_buffer

(defun agent-q-builtins--find-buffer (name)
  "Return (BUFFER) for buffer NAME, or (nil . TEXT) explaining the failure."
  (let ((buffer (and (stringp name) (get-buffer name))))
    (if (buffer-live-p buffer)
        (list buffer)
      (let ((close (seq-take
                    (seq-filter (lambda (n)
                                  (and (stringp name) (not (string-empty-p name))
                                       (string-search (downcase name) (downcase n))))
                                (mapcar #'buffer-name (buffer-list)))
                    10)))
        (cons nil (format "Buffer %s not found.%s" name
                          (if close (format " Buffers with similar names: %s"
                                            (string-join close ", "))
                            "")))))))

(defun agent-q-builtins--check-buffer (tool buffer args-plist)
  "Check that TOOL may read BUFFER, as for the file it visits.
An indirect buffer is checked as its base buffer, a Dired buffer as
its directory.  ARGS-PLIST is shown to the user.  Return (:ok PLIST)
or (:denied TEXT)."
  (let ((file (with-current-buffer (or (buffer-base-buffer buffer) buffer)
                (or (agent-q-builtins--buffer-file (current-buffer))
                    (and (derived-mode-p 'dired-mode) default-directory)))))
    (if file
        (agent-q-builtins--check-file
         tool (if (file-remote-p file) file (expand-file-name file)) args-plist)
      (list :ok args-plist))))

(defun agent-q-builtins--read-buffer (args)
  "Return the text of the buffer in ARGS (\"buffer\", \"start\", \"end\").
START and END are character positions; the whole buffer (widened) by default."
  (let* ((name (agent-q-builtins--arg args "buffer"))
         (found (agent-q-builtins--find-buffer name)))
    (if (null (car found))
        (cdr found)
      (let* ((buffer (car found))
             (check (agent-q-builtins--check-buffer
                     "read_buffer" buffer
                     (agent-q-builtins--args-plist args '("buffer" "start" "end")))))
        (if (eq (car check) :denied)
            (cadr check)
          (with-current-buffer buffer
            (save-restriction
              (widen)
              (let* ((size (buffer-size))
                     (start (agent-q-builtins--arg args "start" 1))
                     (end (agent-q-builtins--arg args "end" (point-max))))
                (cond
                 ((not (and (integerp start) (integerp end)))
                  "Invalid range: start and end must be integers (character positions).")
                 ((or (< start 1) (> start (point-max)))
                  (format "Invalid start %d: buffer %s has positions 1 to %d."
                          start (buffer-name) (point-max)))
                 ((< end start)
                  (format "Invalid range: end %d is before start %d." end start))
                 (t
                  (let* ((end (min end (point-max)))
                         (max (agent-q-builtins--page-chars))
                         (stop (min end (+ start max))))
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
                     (buffer-substring-no-properties start stop)
                     (if (< stop end)
                         (format "\n[Page size limit reached: characters %d-%d not shown. Call read_buffer with start %d to read the next page.]"
                                 stop (1- end) stop)
                       "")))))))))))))

(defun agent-q-builtins--search-in-buffer (args)
  "Search the buffer in ARGS for \"pattern\"; list line and column of matches.
\"regex\" makes the pattern a regexp (default literal);
\"all_matches\" nil lists only the first match (default all)."
  (let* ((pattern (agent-q-builtins--arg args "pattern"))
         (name (agent-q-builtins--arg args "buffer"))
         (regex (agent-q-builtins--arg args "regex"))
         (all (agent-q-builtins--arg args "all_matches" t))
         (found (agent-q-builtins--find-buffer name)))
    (cond
     ((or (not (stringp pattern)) (string-empty-p pattern))
      "No pattern given: pass the text (or regexp) to search for.")
     ((null (car found)) (cdr found))
     ((and regex (condition-case err (progn (string-match-p pattern "") nil)
                   (invalid-regexp (setq regex (cadr err)) t)))
      (format "Invalid regular expression '%s': %s" pattern regex))
     (t
      (let* ((buffer (car found))
             (check (agent-q-builtins--check-buffer
                     "search_in_buffer" buffer
                     (agent-q-builtins--args-plist
                      args '("pattern" "buffer" "regex" "all_matches")))))
        (if (eq (car check) :denied)
            (cadr check)
          (with-current-buffer buffer
            (save-excursion
              (save-restriction
                (widen)
                (goto-char (point-min))
                (let ((case-fold-search nil)
                      (starts nil) (count 0) (failure nil))
                  (if regex
                      ;; In Rust, in linear time: Emacs's backtracking engine can
                      ;; hang on a model's pattern (\\(a*\\)*c on a line of a's).
                      (condition-case err
                          (let* ((text (buffer-substring-no-properties
                                        (point-min) (point-max)))
                                 ;; Raw bytes cannot cross into the module;
                                 ;; one U+FFFD each keeps the offsets.
                                 (text (if (string-match-p
                                            (rx (not (any (0 . #x10FFFF)))) text)
                                           (replace-regexp-in-string
                                            (rx (not (any (0 . #x10FFFF))))
                                            "\uFFFD" text t t)
                                         text))
                                 (found (progn
                                          (require 'agent-q-core nil t)
                                          (agent-q--core-regex-search
                                           text pattern nil
                                           (if all agent-q-builtins-search-limit 1)))))
                            (setq count (if all (car found) (min 1 (car found)))
                                  starts (mapcar (lambda (m) (+ (point-min) (car m)))
                                                 (cdr found))))
                        (agent-q-search-error (setq failure (cadr err)))
                        (error (setq failure (agent-q--error-message err))))
                    (while (and (or all (zerop count))
                                (search-forward pattern nil t))
                      (cl-incf count)
                      (when (<= count agent-q-builtins-search-limit)
                        (push (match-beginning 0) starts)))
                    (setq starts (nreverse starts)))
                  (cond
                   (failure
                    (format "Cannot search for regular expression '%s': %s"
                            pattern failure))
                   ((zerop count)
                    (format "No matches for '%s' in buffer %s." pattern (buffer-name)))
                   (t
                    (concat
                     (format "Found %d match(es) for '%s':\n" count pattern)
                     (mapconcat
                      (lambda (beg)
                        (goto-char beg)
                        (format "  Line %d, Column %d (position %d): %s"
                                (line-number-at-pos beg t) (current-column) beg
                                (truncate-string-to-width
                                 (buffer-substring-no-properties
                                  (line-beginning-position) (line-end-position))
                                 200 nil nil "...")))
                      starts "\n")
                     (if (> count agent-q-builtins-search-limit)
                         (format "\n[... %d more matches not shown ...]"
                                 (- count agent-q-builtins-search-limit))
                       ""))))))))))))))

;;;; Buffer: write_file

(defun agent-q-builtins--write-coding (file buffer content)
  "Return (CODING . NOTE): the coding system to write CONTENT to FILE with.
Use BUFFER's when a buffer visits FILE, else what reading FILE
detects, else utf-8-unix.  An undecided coding becomes utf-8 with
the same end-of-line convention; a coding that cannot encode CONTENT
is replaced by utf-8, and NOTE says so (NOTE is nil otherwise)."
  (let* ((found (or (and buffer (buffer-local-value 'buffer-file-coding-system buffer))
                    (and (file-exists-p file)
                         (with-temp-buffer
                           (ignore-errors
                             (insert-file-contents file nil 0 65536)
                             last-coding-system-used)))
                    'utf-8-unix))
         (coding (if (memq (coding-system-base found) '(undecided prefer-utf-8))
                     (coding-system-change-text-conversion found 'utf-8)
                   found)))
    (if (unencodable-char-position 0 (length content) coding nil content)
        (cons (coding-system-change-text-conversion coding 'utf-8)
              (format "The content has characters that %s cannot encode, so it was written as utf-8."
                      coding))
      (cons coding nil))))

(defun agent-q-builtins--write-file (args)
  "Write ARGS's \"content\" to the file \"path\", atomically.
Refuse when a buffer visiting the file has unsaved changes; revert an
unmodified visiting buffer after writing."
  (let* ((path (agent-q-builtins--arg args "path"))
         (content (agent-q-builtins--arg args "content")))
    (cond
     ((or (not (stringp path)) (string-empty-p path)) "Error: no path given.")
     ((not (stringp content)) "Error: content must be a string.")
     (t
      (let* ((file (file-truename (expand-file-name path)))
             (dir (file-name-directory file))
             (buffer (find-buffer-visiting file))
             (existed (file-exists-p file))
             (notes nil)
             (temp nil))
        (cond
         ((file-directory-p file)
          (format "Error: %s is a directory; nothing was written." file))
         ((and buffer (buffer-modified-p buffer))
          (format "Refused: buffer %s visits %s and has unsaved changes; writing the file would lose them. Nothing was written. Ask the user to save or revert the buffer, or use propose_file_edit to change the buffer."
                  (buffer-name buffer) file))
         (t
          (condition-case err
              (let ((coding (let ((c (agent-q-builtins--write-coding file buffer content)))
                              (when (cdr c) (push (cdr c) notes))
                              (car c)))
                    (modes (if existed (file-modes file)
                             (logand (default-file-modes) #o666))))
                (unless (file-directory-p dir)
                  (make-directory dir t)
                  (push (format "Created directory %s." dir) notes))
                (setq temp (make-temp-file (expand-file-name ".agent-q-write-" dir)))
                (let ((coding-system-for-write coding))
                  (with-temp-buffer
                    (insert content)
                    (write-region nil nil temp nil 'silent)))
                (when modes (set-file-modes temp modes))
                (rename-file temp file t)
                (setq temp nil)
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
                               (if existed "replaced the existing file" "created a new file")
                               coding)
                       (nreverse notes))
                 "\n"))
            (error
             (when (and temp (file-exists-p temp))
               (ignore-errors (delete-file temp)))
             (format "Error: writing %s failed: %s. %s"
                     file (agent-q--error-message err)
                     (if existed "The file was left unchanged."
                       "No file was created.")))))))))))


;;;; propose_file_edit

(defun agent-q-builtins--propose-file-edit (callback args)
  "Open the per-hunk review of the edit in ARGS; CALLBACK gets its outcome.
An asynchronous handler: it returns at once and the review, when the
user finishes it, calls CALLBACK with the result text and its status.
The review reads the file (and quotes it when original does not match),
so the file first passes the read guard of read_file: outside the
allowed directories, remote or sensitive, the user is asked, as for
read_file, before anything reads it.  The approval asked is that of
reading the file (tool \"read_file\", arguments (:path FILE)): the
review that follows is the approval of the edit itself."
  (require 'agent-q-tools nil t)
  (let* ((path (agent-q-builtins--arg args "path"))
         (file (agent-q-builtins--guarded-name path)))
    (cond
     ((not (fboundp 'agent-q-tools-review-edit-async))
      (funcall callback "Error: propose_file_edit is unavailable (agent-q-tools is not installed)."
               :failure))
     ((null file)
      (funcall callback "Error: no path given." :failure))
     (t
      (let ((check (agent-q-builtins--check-file
                    "read_file" file (list :path file)
                    "propose_file_edit must read the file to show the edit: ")))
        (if (eq (car check) :denied)
            (funcall callback (format "%s  No change made to %s." (cadr check) path) :denied)
          (agent-q-tools-review-edit-async
           (expand-file-name (or (plist-get (cadr check) :path) file))
           (agent-q-builtins--arg args "original" "")
           (agent-q-builtins--arg args "modified" "")
           (agent-q-builtins--arg args "description" "")
           callback
           (plist-get agent-q-call-context :client))))))))


(provide 'agent-q-files)

;;; agent-q-files.el ends here
