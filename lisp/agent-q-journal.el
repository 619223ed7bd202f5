;;; agent-q-journal.el --- One journal of what the agents changed, undone change by change  -*- lexical-binding: t -*-

;; Copyright (C) 2026 The agent-q authors

;; Author: The agent-q authors
;; Maintainer: The agent-q authors
;; Keywords: tools, processes, convenience
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

;; Every change written through agent-q is recorded by
;; `agent-q-journal-record' in a journal under `user-emacs-directory'
;; (`agent-q-journal-file', mode 0600, one JSON object a line, at most
;; `agent-q-journal-max-entries').  The entries and the reverse patch
;; that undoes them are the Rust core's (crates/agent-q-core/src/
;; journal/); this file records, lists (`agent-q-changes') and opens
;; an undo in the per-hunk review, writing only what the user accepts.
;; The agents say where a turn begins (`agent-q-journal-turn'): ACP's
;; session/prompt (lisp/agent-q-acp.el) and the terminal agents' prompt
;; hooks (lisp/agent-q-gate.el); the changes of a session then carry
;; its turn.

;;; Code:

(require 'agent-q)
(require 'tabulated-list)

(declare-function agent-q-review-merge-async "agent-q-review"
                  (file current proposal callback &optional client description))
(declare-function agent-q-guard-sensitive-match "agent-q-guard" (&rest files))

(defgroup agent-q-journal nil
  "The journal of what the agents changed."
  :group 'agent-q)

(defcustom agent-q-journal-file
  (locate-user-emacs-file "agent-q-journal.jsonl")
  "The file of the journal of the agents' changes (mode 0600)."
  :type 'file)

(defcustom agent-q-journal-max-entries 10000
  "Most entries the journal keeps; the oldest go first."
  :type 'natnum)

(defvar agent-q-journal--journal nil
  "The journal open now, as (FILE . JOURNAL).")

(defun agent-q-journal--get ()
  "Return the journal of `agent-q-journal-file', opening it if needed."
  (let ((file (expand-file-name agent-q-journal-file)))
    (unless (equal (car agent-q-journal--journal) file)
      (setq agent-q-journal--journal
            (cons file (agent-q--core-journal-open
                        file agent-q-journal-max-entries))))
    (agent-q--core-journal-set-max (cdr agent-q-journal--journal)
                                   agent-q-journal-max-entries)
    (cdr agent-q-journal--journal)))

(defun agent-q-journal-reload ()
  "Read the journal again from its file."
  (interactive)
  (setq agent-q-journal--journal nil)
  (agent-q-journal--get))

(defun agent-q-journal-record (&rest plist)
  "Record a change written through agent-q; return its number or nil.
PLIST has :agent, :session, :turn (when absent, the turn the session
is in: see `agent-q-journal-turn'), :file, :how (`rule', `user',
`review'...), :detail, :accepted, :rejected, and either :old and
:new (the file's text before and after) or :command (a shell command).
Instead of :agent, :session and :how it may give :context, the
`agent-q-call-context' of the call that made the change (its
:channel, :client, :decision and :rule; :client and :decision in
PLIST win): the core names the agent, its session and the approval.
A sensitive file's change is recorded without its text.  Never
signals: a failure to record is a message."
  (condition-case err
      (let* ((file (plist-get plist :file))
             (context (plist-get plist :context))
             (sensitive (and file (stringp file)
                             (require 'agent-q-guard nil t)
                             (agent-q-guard-sensitive-match file)
                             t))
             (string (lambda (v) (and v (format "%s" v))))
             (meta (list :agent (funcall string (plist-get plist :agent))
                         :session (plist-get plist :session)
                         :turn (plist-get plist :turn)
                         :file (and file (expand-file-name file))
                         :command (plist-get plist :command)
                         :how (funcall string (plist-get plist :how))
                         :detail (plist-get plist :detail)
                         :accepted (plist-get plist :accepted)
                         :rejected (plist-get plist :rejected)
                         :reverts (plist-get plist :reverts)
                         :channel (plist-get context :channel)
                         :client (funcall string (or (plist-get plist :client)
                                                     (plist-get context :client)))
                         :decision (or (plist-get plist :decision)
                                       (plist-get context :decision))
                         :rule (plist-get context :rule))))
        (unless (or (plist-get meta :agent) (plist-get meta :client)
                    (plist-get meta :channel))
          (setq meta (plist-put meta :agent "user")))
        (agent-q--core-journal-record (agent-q-journal--get) meta
                                      (plist-get plist :old)
                                      (plist-get plist :new) sensitive))
    (error (message "agent-q: the change was not journalled: %s"
                    (error-message-string err))
           nil)))

(defun agent-q-journal-turn (&rest plist)
  "Say that a new turn of an agent's session begins; return its number or nil.
PLIST has :agent and :session, or the :channel and :client that the
session's calls have (the core names the agent and the session from
them, as `agent-q-journal-record' does), and :prompt, the prompt that
begins the turn: its first line labels the turn.  The changes then
recorded for that session carry the turn, which `agent-q-changes'
shows, filters (t) and undoes (T).  Never signals: a failure is a
message."
  (condition-case err
      (let ((string (lambda (v) (and v (format "%s" v)))))
        (agent-q--core-journal-begin-turn
         (agent-q-journal--get)
         (list :agent (funcall string (plist-get plist :agent))
               :session (funcall string (plist-get plist :session))
               :channel (plist-get plist :channel)
               :client (funcall string (plist-get plist :client)))
         (let ((prompt (plist-get plist :prompt)))
           (and (stringp prompt) prompt))))
    (error (message "agent-q: the turn was not journalled: %s"
                    (error-message-string err))
           nil)))

;;;; The list

(defvar-local agent-q-changes--filter nil
  "The filter of this list: a plist of :agent, :session, :turn or :file.")

(defvar-local agent-q-changes--ids nil
  "The entry of each line of the list, a vector.")

(defvar-local agent-q-changes--first-line 1
  "The line of the list's first entry.")

(defun agent-q-changes--id ()
  "The number of the entry on the line at point, or nil.
The list's lines carry no text property (10,000 of them would take
time to put): the line's number finds it in `agent-q-changes--ids'."
  (let ((i (- (line-number-at-pos) agent-q-changes--first-line)))
    (and agent-q-changes--ids (<= 0 i) (< i (length agent-q-changes--ids))
         (aref agent-q-changes--ids i))))

(defconst agent-q-changes--format
  [("Time" 19 nil) ("Agent" 10 nil) ("Session" 10 nil) ("Turn" 24 nil)
   ("File or command" 40 nil) ("+/-" 10 nil) ("How" 20 nil)]
  "The columns of `agent-q-changes'.
The turn is its number in the session, counted from the prompts
agent-q saw begin, and the first line of its prompt.")

(defun agent-q-changes--refresh (&rest _)
  "Fill the list from the journal: rows made by the core, inserted at once.
The rows, their order (newest first, grouped by agent session and
turn) and filtering are computed by the module, so that a journal of
10,000 entries lists at once."
  (let* ((journal (agent-q-journal--get))
         (lost (agent-q--core-journal-lost journal))
         (rows (agent-q--core-journal-rows
                journal agent-q-changes--filter
                (mapcar (lambda (i) (cadr (aref agent-q-changes--format i)))
                        '(0 1 2 3 4 5))
                (expand-file-name "~")))
         (ids (cdr rows))
         (line (line-number-at-pos))
         (inhibit-read-only t))
    (setq agent-q-changes--ids ids)
    (erase-buffer)
    ;; What is not listed, said first, on lines of no entry.
    (when (> lost 0)
      (insert (format "%d older entries were dropped (agent-q-journal-max-entries)\n"
                      lost)))
    (when agent-q-changes--filter
      (insert (format "Filter: %s  (c shows every change)\n"
                      (mapconcat (lambda (x) (format "%s" x))
                                 agent-q-changes--filter " "))))
    (when (zerop (length ids))
      (insert "No change recorded.\n"))
    (setq agent-q-changes--first-line (line-number-at-pos))
    (insert (car rows))
    (goto-char (point-min))
    (forward-line (1- line))
    (set-buffer-modified-p nil)))

(defvar agent-q-changes-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "RET") #'agent-q-changes-show)
    (define-key map "a" #'agent-q-changes-filter-agent)
    (define-key map "f" #'agent-q-changes-filter-file)
    (define-key map "s" #'agent-q-changes-filter-session)
    (define-key map "t" #'agent-q-changes-filter-turn)
    (define-key map "c" #'agent-q-changes-clear-filter)
    (define-key map "u" #'agent-q-changes-undo)
    (define-key map "F" #'agent-q-changes-undo-file)
    (define-key map "T" #'agent-q-changes-undo-turn)
    (define-key map "S" #'agent-q-changes-undo-session)
    map)
  "Keys of `agent-q-changes-mode'.")

(define-derived-mode agent-q-changes-mode tabulated-list-mode "Agent-Q-Changes"
  "The journal of what the agents changed, newest first, by session and turn.
\\{agent-q-changes-mode-map}"
  (setq tabulated-list-format agent-q-changes--format)
  (setq tabulated-list-sort-key nil)
  (setq-local revert-buffer-function #'agent-q-changes--refresh)
  (tabulated-list-init-header))

;;;###autoload
(defun agent-q-changes ()
  "List what the agents changed, newest first, grouped by session and turn."
  (interactive)
  (with-current-buffer (get-buffer-create "*agent-q-changes*")
    (agent-q-changes-mode)
    (agent-q-changes--refresh)
    (goto-char (point-min))
    (pop-to-buffer (current-buffer))))

(defun agent-q-changes--entry ()
  "The entry at point, as a plist."
  (let ((id (agent-q-changes--id)))
    (or (and id (agent-q--core-journal-entry (agent-q-journal--get) id))
        (user-error "No change here"))))

(defun agent-q-changes-show ()
  "Show the diff of the change at point."
  (interactive)
  (let ((diff (agent-q--core-journal-diff (agent-q-journal--get)
                                          (plist-get (agent-q-changes--entry) :id))))
    (with-current-buffer (get-buffer-create "*agent-q-change*")
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (or diff "This change is no longer in the journal.\n")))
      (diff-mode)
      (view-mode 1)
      (goto-char (point-min))
      (display-buffer (current-buffer)))))

(defun agent-q-changes--filter-by (&rest keys)
  "Show only the entries whose KEYS are those of the entry at point."
  (let ((e (agent-q-changes--entry)))
    (setq agent-q-changes--filter
          (mapcan (lambda (key) (list key (plist-get e key))) keys))
    (revert-buffer)))

(defun agent-q-changes-filter-agent ()
  "Show only the entries of the agent at point."
  (interactive)
  (agent-q-changes--filter-by :agent))

(defun agent-q-changes-filter-file ()
  "Show only the entries for the file at point."
  (interactive)
  (agent-q-changes--filter-by :file))

(defun agent-q-changes-filter-session ()
  "Show only the entries of the session at point."
  (interactive)
  (agent-q-changes--filter-by :agent :session))

(defun agent-q-changes-filter-turn ()
  "Show only the entries of the turn at point."
  (interactive)
  (agent-q-changes--filter-by :agent :session :turn))

(defun agent-q-changes-clear-filter ()
  "Show every change."
  (interactive)
  (setq agent-q-changes--filter nil)
  (revert-buffer))

;;;; Undo

(defun agent-q-journal--file-text (file)
  "The text of FILE now: its buffer's if visited, else the file's."
  (let ((buffer (find-buffer-visiting file)))
    (if buffer
        (with-current-buffer buffer
          (save-restriction (widen) (buffer-substring-no-properties (point-min) (point-max))))
      (with-temp-buffer
        (when (file-exists-p file) (insert-file-contents file))
        (buffer-string)))))

(defun agent-q-journal--write (file text)
  "Write TEXT to FILE, through its buffer when one visits it."
  (let ((buffer (find-buffer-visiting file)))
    (if buffer
        (with-current-buffer buffer
          (save-restriction
            (widen)
            (let ((inhibit-read-only t))
              (replace-buffer-contents
               (with-current-buffer (get-buffer-create " *agent-q-journal-text*")
                 (erase-buffer) (insert text) (current-buffer))))
            (save-buffer)))
      (with-temp-buffer
        (insert text)
        (write-region nil nil file nil 'silent)))))

(defun agent-q-journal-undo (file ids &optional callback)
  "Undo the journal's entries IDS, all of FILE, through the review.
The reverse patch is computed against FILE as it is now; a hunk that no
longer applies is a conflict, shown in *agent-q-conflicts* and never
written.  The review writes only the hunks the user accepts, and the
revert is journalled.  CALLBACK, if non-nil, is called with the status
`:success', `:denied' or `:conflict'.  Return the review, or nil."
  (require 'agent-q-review)
  (let* ((current (agent-q-journal--file-text file))
         (result (agent-q--core-journal-revert (agent-q-journal--get) ids current))
         (conflicts (plist-get result :conflicts)))
    (when conflicts
      (with-current-buffer (get-buffer-create "*agent-q-conflicts*")
        (let ((inhibit-read-only t))
          (erase-buffer)
          (insert (format "Not undone in %s: these hunks no longer apply and were left as they are.\n\n" file))
          (dolist (c conflicts)
            (insert (format "Change %d, hunk %d: %s\n" (nth 0 c) (1+ (nth 1 c)) (nth 2 c)))
            (insert (or (agent-q--core-journal-diff (agent-q-journal--get) (nth 0 c)) "") "\n")))
        (diff-mode)
        (display-buffer (current-buffer))))
    (if (zerop (plist-get result :undone))
        (progn (message "agent-q: nothing of it can be undone in %s" file)
               (when callback (funcall callback :conflict))
               nil)
      (agent-q-review-merge-async
       file current (plist-get result :text)
       (lambda (status plist)
         (when (eq status :success)
           (let ((text (plist-get plist :text)))
             (agent-q-journal--write file text)
             (agent-q-journal-record :agent "user" :file file :how "review"
                                     :detail (plist-get plist :summary)
                                     :old current :new text :reverts ids)))
         (when callback (funcall callback (if conflicts :conflict status))))
       "undo" (format "Undo of change(s) %s" (mapconcat #'number-to-string ids ", "))))))

(defun agent-q-changes--undo-where (&rest keys)
  "Undo what matches the entry at point in KEYS, one review a file.
Commands are left out: what they changed is not known."
  (let* ((e (agent-q-changes--entry))
         (by-file (agent-q--core-journal-select
                   (agent-q-journal--get)
                   (mapcan (lambda (key) (list key (plist-get e key))) keys))))
    (unless by-file
      (user-error "No file change to undo"))
    (dolist (f by-file)
      (agent-q-journal-undo (car f) (cdr f)))))

(defun agent-q-changes-undo ()
  "Undo the change at point."
  (interactive)
  (agent-q-changes--undo-where :id))

(defun agent-q-changes-undo-file ()
  "Undo every change to the file at point."
  (interactive)
  (agent-q-changes--undo-where :file))

(defun agent-q-changes-undo-turn ()
  "Undo every change of the turn at point."
  (interactive)
  (agent-q-changes--undo-where :agent :session :turn))

(defun agent-q-changes-undo-session ()
  "Undo every change of the session at point."
  (interactive)
  (agent-q-changes--undo-where :agent :session))

(provide 'agent-q-journal)

;;; agent-q-journal.el ends here
