;;; agent-q-review.el --- The hunk review of agent-q: accept or reject each hunk of an edit  -*- lexical-binding: t -*-

;; Copyright (C) 2026 The agent-q authors

;; Author: The agent-q authors
;; Maintainer: The agent-q authors
;; Keywords: tools, convenience
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

;; The hunk review of agent-q.
;;
;; `agent-q-review-edit' is the approval of "propose_file_edit": it
;; opens a diff of the proposal against the current text in a buffer derived
;; from `diff-mode', lets the user accept, reject or edit each hunk, and
;; applies exactly the accepted hunks as one undo step.  The minibuffer
;; approval function approves "propose_file_edit" without asking, because
;; this review is the approval.  `agent-q-review-edit-async' is the same
;; review for callers that must not wait (the asynchronous executor).
;;
;; Diffs, application of hunks and the search for the model's `original'
;; text are computed by the agent-q-core module (functions
;; `agent-q--core-diff-*'), which agent-q.el loads.

;;; Code:

(require 'cl-lib)
(require 'diff-mode)
(require 'pp)
(require 'seq)
(require 'subr-x)
(require 'agent-q-prompt)

;;;; Module and agent-q.el functions (loaded by agent-q.el)

(declare-function agent-q--core-diff-session "agent-q-core" (old new))
(declare-function agent-q--core-diff-session-count "agent-q-core" (session))
(declare-function agent-q--core-diff-session-summary "agent-q-core" (session))
(declare-function agent-q--core-diff-session-hunk "agent-q-core" (session index))
(declare-function agent-q--core-diff-session-changes "agent-q-core" (session index))
(declare-function agent-q--core-diff-session-apply "agent-q-core" (session decisions))
(declare-function agent-q--core-diff-locate "agent-q-core" (current original))
(declare-function agent-q-validate-arguments "agent-q" (tool-name args &optional registry))
(declare-function agent-q--wait-for "agent-q" (predicate))
(declare-function agent-q-when-cancelled "agent-q-async" (function))
(declare-function agent-q-journal-record "agent-q-journal" (&rest plist))
(declare-function agent-q-rules-save-from-prompt "agent-q-rules" (tool-name args context))
(declare-function agent-q--core-visible "agent-q-core" (text))
(declare-function agent-q--visible "agent-q-prompt" (text))

;; Defined in agent-q.el; declared here so that the compiler knows they are special.
(defvar agent-q-approval-context)
(defvar agent-q-approval-function)
(defvar agent-q-confirm-safety-levels)
(defvar agent-q-call-context)
(declare-function agent-q-guard-write-changed "agent-q-guard" (true &optional name))
(declare-function agent-q-guard-write-pinned "agent-q-guard" (file bytes mode &optional in-place))
(declare-function agent-q-files-file-text "agent-q-files" (file &optional unchecked))
(declare-function agent-q-builtins--write-coding "agent-q-files" (file buffer content))

;;;; Options and faces

(defcustom agent-q-diff-save-after-apply nil
  "When non-nil, save the file's buffer after applying reviewed hunks."
  :type 'boolean
  :group 'agent-q)

(defface agent-q-diff-accepted
  '((t :inherit success :weight bold))
  "Face of the [ACCEPTED] marker of a reviewed hunk."
  :group 'agent-q)

(defface agent-q-diff-rejected
  '((t :inherit error :weight bold))
  "Face of the [REJECTED] marker of a reviewed hunk."
  :group 'agent-q)

(defface agent-q-diff-pending
  '((t :inherit warning :weight bold))
  "Face of the [PENDING] marker of a hunk not yet reviewed."
  :group 'agent-q)

(defface agent-q-diff-rejected-hunk
  '((t :inherit shadow :strike-through t))
  "Face added to the lines of a rejected hunk."
  :group 'agent-q)

(defface agent-q-diff-header
  '((t :inherit font-lock-keyword-face))
  "Face of the header lines of the review buffer."
  :group 'agent-q)

;;;; Obsolete names

;; The review lived in agent-q-tools.el under agent-q-tools- names; users'
;; init files and key bindings may still name them.
(define-obsolete-function-alias 'agent-q-tools-cancel-review #'agent-q-review-cancel-review "0.2.0")
(define-obsolete-function-alias 'agent-q-tools-hunk-edit-accept #'agent-q-review-hunk-edit-accept "0.2.0")
(define-obsolete-function-alias 'agent-q-tools-hunk-edit-cancel #'agent-q-review-hunk-edit-cancel "0.2.0")
(define-obsolete-function-alias 'agent-q-tools-hunk-edit-mode #'agent-q-review-hunk-edit-mode "0.2.0")
(define-obsolete-function-alias 'agent-q-tools-review-accept #'agent-q-review-accept "0.2.0")
(define-obsolete-function-alias 'agent-q-tools-review-accept-all #'agent-q-review-accept-all "0.2.0")
(define-obsolete-function-alias 'agent-q-tools-review-cancel #'agent-q-review-cancel "0.2.0")
(define-obsolete-function-alias 'agent-q-tools-review-edit #'agent-q-review-edit "0.2.0")
(define-obsolete-function-alias 'agent-q-tools-review-edit-async #'agent-q-review-edit-async "0.2.0")
(define-obsolete-function-alias 'agent-q-tools-review-edit-hunk #'agent-q-review-edit-hunk "0.2.0")
(define-obsolete-function-alias 'agent-q-tools-review-finish #'agent-q-review-finish "0.2.0")
(define-obsolete-function-alias 'agent-q-tools-review-help #'agent-q-review-help "0.2.0")
(define-obsolete-function-alias 'agent-q-tools-review-keyboard-quit #'agent-q-review-keyboard-quit "0.2.0")
(define-obsolete-function-alias 'agent-q-tools-review-mode #'agent-q-review-mode "0.2.0")
(define-obsolete-function-alias 'agent-q-tools-review-next #'agent-q-review-next "0.2.0")
(define-obsolete-function-alias 'agent-q-tools-review-previous #'agent-q-review-previous "0.2.0")
(define-obsolete-function-alias 'agent-q-tools-review-quit #'agent-q-review-quit "0.2.0")
(define-obsolete-function-alias 'agent-q-tools-review-reject #'agent-q-review-reject "0.2.0")
(define-obsolete-function-alias 'agent-q-tools-review-reject-all #'agent-q-review-reject-all "0.2.0")
(define-obsolete-function-alias 'agent-q-tools-review-show-source #'agent-q-review-show-source "0.2.0")
(define-obsolete-function-alias 'agent-q-tools-review-toggle #'agent-q-review-toggle "0.2.0")
(define-obsolete-variable-alias 'agent-q-tools-review-mode-map 'agent-q-review-mode-map "0.2.0")
(define-obsolete-variable-alias 'agent-q-tools-review-mode-hook 'agent-q-review-mode-hook "0.2.0")
(define-obsolete-variable-alias 'agent-q-tools-hunk-edit-mode-map 'agent-q-review-hunk-edit-mode-map "0.2.0")

;;;; Per-hunk review of propose_file_edit

(cl-defstruct (agent-q-review--review (:constructor agent-q-review--make-review)
                                     (:copier nil))
  "State of one review of a proposed file edit.
SESSION is the module's diff of CURRENT and PROPOSAL; SUMMARY a vector
of each hunk's summary plist (:header :old-start ...); DETAILS a vector
caching each hunk's full plist, built when first needed; HEADERS a
vector of (HEADER-MARKER . STATE-MARKER) per hunk; RENDERED the number
of hunk bodies inserted so far (in order).  CALLBACK is called once the
review is finished, with the result text and its status (`:success',
`:denied' or `:failure').  PINNED is the file the tool's guard resolved
and pinned (see `agent-q-guard-write-verdict'), checked again before
the accepted hunks are applied and saved.  MERGE non-nil makes it a
review that changes nothing in Emacs (see `agent-q-review-merge-async'):
finishing computes the merged text of the accepted hunks and passes it
to CALLBACK instead.  SHOWN is the `float-time' the review appeared;
ARMED non-nil once it takes the keys that decide (see
`agent-q-review--arm'), ARM-TIMER the timer that arms it.  PARTS
non-nil makes it a review of several files at once (see
`agent-q-review-files-async'): a list of plists, one per file, whose
hunks are numbered one after the other in SUMMARY and DECISIONS.
DEADLINE is the `float-time' when the agent stops waiting for the
review (its hook's timeout; see `agent-q-prompt-deadline-function'),
or nil; CLOCK the timer that keeps the header line's time left current."
  path file current proposal description session summary details decisions
  buffer done cancelled headers (rendered 0) timer callback client pinned merge
  shown armed arm-timer parts deadline clock
  ;; The call whose handler opened the review, for the journal.
  (context agent-q-call-context))

(defvar-local agent-q-review--this-review nil
  "The review shown in the current review buffer.")

(defvar agent-q-review--review-driver nil
  "For tests: when non-nil, a function called with the review buffer.
It is called as soon as the review buffer is ready, instead of showing
it: it is expected to call the review commands in that buffer until the
review is finished.  Production code leaves this nil.")

(defvar agent-q-review--open-reviews nil
  "Reviews shown and not yet finished, newest first.")

(defvar agent-q-review-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map "n" #'agent-q-review-next)
    (define-key map "p" #'agent-q-review-previous)
    (define-key map "a" #'agent-q-review-accept)
    (define-key map "r" #'agent-q-review-reject)
    (define-key map " " #'agent-q-review-toggle)
    (define-key map "A" #'agent-q-review-accept-all)
    (define-key map "R" #'agent-q-review-reject-all)
    (define-key map "e" #'agent-q-review-edit-hunk)
    (define-key map (kbd "RET") #'agent-q-review-show-source)
    (define-key map (kbd "C-c C-c") #'agent-q-review-finish)
    (define-key map (kbd "C-c C-k") #'agent-q-review-cancel)
    (define-key map (kbd "C-g") #'agent-q-review-keyboard-quit)
    (define-key map "q" #'agent-q-review-quit)
    (define-key map "?" #'agent-q-review-help)
    map)
  "Keymap of `agent-q-review-mode'.")

(define-derived-mode agent-q-review-mode diff-mode "agent-q-review"
  "Review a proposed file edit hunk by hunk.
\\<agent-q-review-mode-map>
\\[agent-q-review-next], \\[agent-q-review-previous]: next, previous hunk
\\[agent-q-review-accept]: accept the hunk (and go to the next one)
\\[agent-q-review-reject]: reject the hunk (and go to the next one)
\\[agent-q-review-toggle]: toggle accepted/rejected
\\[agent-q-review-accept-all]: accept all pending hunks
\\[agent-q-review-reject-all]: reject all pending hunks
\\[agent-q-review-edit-hunk]: edit the proposed side of the hunk, then accept it
\\[agent-q-review-show-source]: show the hunk's place in the file
\\[agent-q-review-finish]: finish (pending hunks are not applied)
\\[agent-q-review-cancel], \\[agent-q-review-keyboard-quit]: reject everything and finish
\\[agent-q-review-quit]: finish, asking first when hunks are pending
\\[agent-q-review-help]: help

Nothing is applied before finishing.  Then, for an edit Emacs makes,
exactly the accepted hunks are applied to the buffer visiting the
file, as one undo step; for a terminal agent's own edit (reviewed for
`agent-q-gate-mode'), Emacs changes nothing: the agent writes exactly
the accepted hunks itself.  \\[agent-q-review-help] says which this review is.

A review may open while you type elsewhere: the keys that decide (not
those that move, show or reject everything) work only once it has been
on screen and you have not typed for half a second; the header line
says so until then."
  (setq-local minor-mode-overriding-map-alist nil)
  ;; Faces are text properties computed from the Rust diff; no font-lock keywords, which
  ;; would recompute them (and refine words again) on a buffer of any size.
  (setq-local font-lock-defaults '(nil t))
  (setq-local diff-refine nil)
  (setq-local diff-font-lock-syntax nil)
  ;; diff-mode's editing hooks before Emacs 30, which no longer has them (quoted, not #':
  ;; the functions are not defined there).
  (remove-hook 'after-change-functions 'diff-after-change-function t)
  (remove-hook 'post-command-hook 'diff-post-command-hook t)
  (setq buffer-read-only t)
  (setq-local header-line-format
              '(:eval (agent-q-review--progress-string agent-q-review--this-review)))
  (add-hook 'kill-buffer-hook #'agent-q-review--review-killed nil t))

(declare-function agent-q-files-current-text "agent-q-files" (file))

(defun agent-q-review--current-text (file)
  "Return the current text of FILE and the buffer visiting it, as a cons.
The text is that buffer's (unsaved edits included) when one visits
FILE, else the file's contents, else \"\" for a new file.  The file is
read through one descriptor that never blocks (a FIFO is refused) and,
during a tool call, is checked against what the read guard approved
\(see `agent-q-files-current-text'); a problem signals
`agent-q-tool-failure'."
  (require 'agent-q-files)
  (agent-q-files-current-text file))

(defconst agent-q-review--marker-width (length "[ACCEPTED, EDITED]")
  "Width of every hunk state marker.
All markers have this width, so updating one never moves the text after
it.")

(defconst agent-q-review--bodies-at-once 20
  "Hunk bodies rendered when the review opens, and per idle batch after.
The review opens with every hunk's header and the first bodies; the
rest follow while Emacs is idle, or at once when the user moves to
them, so even a diff of a 100,000-line file opens without a pause.")

(defun agent-q-review--put-face (start end face)
  "Give the text from START to END the face FACE.
The review buffer has no font-lock keywords: faces are text
properties, set as both `face' and `font-lock-face' so that they show
with and without `font-lock-mode'."
  (add-text-properties start end (list 'face face 'font-lock-face face)))

(defun agent-q-review--with-face (string face)
  "Return STRING with FACE, as `agent-q-review--put-face' gives it."
  (propertize string 'face face 'font-lock-face face))

(defun agent-q-review--decision-marker (decision)
  "Return the marker text of DECISION, with its face."
  (pcase-let ((`(,text . ,face)
               (pcase decision
                 ('accept '("[ACCEPTED]" . agent-q-diff-accepted))
                 ('reject '("[REJECTED]" . agent-q-diff-rejected))
                 ((pred stringp) '("[ACCEPTED, EDITED]" . agent-q-diff-accepted))
                 (_ '("[PENDING]" . agent-q-diff-pending)))))
    (concat (agent-q-review--with-face text face)
            (make-string (- agent-q-review--marker-width (length text)) ?\s))))

(defun agent-q-review--count (review)
  "Return (ACCEPTED REJECTED PENDING) counts of REVIEW."
  (let ((a 0) (r 0) (p 0))
    (mapc (lambda (d)
            (pcase d
              ('reject (cl-incf r))
              ('nil (cl-incf p))
              (_ (cl-incf a))))
          (agent-q-review--review-decisions review))
    (list a r p)))

(defun agent-q-review--time-left-string (review)
  "How long REVIEW's agent still waits, for the header line; \"\" if unlimited.
Once the time is up, it says so: the agent no longer waits for the
review, and nothing of it is written."
  (let ((deadline (agent-q-review--review-deadline review)))
    (cond ((null deadline) "")
          ((> (round (- deadline (float-time))) 0)
           (format "  the agent waits %s more"
                   (format-seconds "%m:%02s" (round (- deadline (float-time))))))
          (t "  time is up: the agent no longer waits, nothing is written"))))

(defun agent-q-review--progress-string (review)
  "Return the progress line of REVIEW."
  (cond
   ((not review) "")
   ((not (agent-q-review--review-armed review))
    (concat "Review opening: its keys work once you pause typing  [? help]"
            (agent-q-review--time-left-string review)))
   (t
    (pcase-let ((`(,a ,r ,p) (agent-q-review--count review)))
      (concat (format "Progress: %d accepted, %d rejected, %d pending (of %d)  [? help]"
                      a r p (length (agent-q-review--review-decisions review)))
              (agent-q-review--time-left-string review))))))

(defun agent-q-review--start-clock (review)
  "Keep REVIEW's header line's time left current while it is open.
Only when the agent waits for it so long (`agent-q-prompt-deadline-function')."
  (let ((deadline (and agent-q-prompt-deadline-function
                       (funcall agent-q-prompt-deadline-function))))
    (when deadline
      (setf (agent-q-review--review-deadline review) deadline)
      (let (timer)
        (setq timer
              (run-at-time
               1 1
               (lambda ()
                 (let ((buffer (agent-q-review--review-buffer review)))
                   (if (or (agent-q-review--review-done review) (not (buffer-live-p buffer)))
                       (cancel-timer timer)
                     (with-current-buffer buffer (force-mode-line-update)))))))
        (setf (agent-q-review--review-clock review) timer)))))

(defun agent-q-review--hunk (review index)
  "The full plist of hunk INDEX of REVIEW, built by the module when first needed."
  (let ((details (agent-q-review--review-details review)))
    (or (aref details index)
        (aset details index
              (let ((part (agent-q-review--part review index)))
                (if part
                    (agent-q--core-diff-session-hunk (plist-get part :session)
                                                     (- index (plist-get part :first)))
                  (agent-q--core-diff-session-hunk (agent-q-review--review-session review)
                                                   index)))))))

(defun agent-q-review--part (review index)
  "The part (one file) of the several-file REVIEW holding hunk INDEX, or nil."
  (seq-find (lambda (part)
              (and (>= index (plist-get part :first))
                   (< index (+ (plist-get part :first) (plist-get part :count)))))
            (agent-q-review--review-parts review)))

(defun agent-q-review--hunk-file (review index)
  "Return the absolute name of the file REVIEW's hunk INDEX is about."
  (let ((part (agent-q-review--part review index)))
    (if part (plist-get part :file) (agent-q-review--review-file review))))

(defun agent-q-review--hunk-count (review)
  "The number of hunks of REVIEW."
  (length (agent-q-review--review-summary review)))

(defun agent-q-review--insert-header (index summary &optional label)
  "Insert the header line of hunk INDEX, from its SUMMARY; return its markers.
LABEL, when given, names the hunk instead of \"hunk N\".
The value is (HEADER-MARKER . STATE-MARKER).  Both advance when text is
inserted at them, so a body inserted later before the next header
leaves them on their header."
  (let ((start (point))
        state)
    (insert (agent-q-review--with-face (plist-get summary :header) 'diff-hunk-header) " ")
    (setq state (point-marker))
    (insert (agent-q-review--decision-marker nil))
    (insert (if label (format "  %s\n" label) (format "  hunk %d\n" (1+ index))))
    (put-text-property start (point) 'agent-q-hunk index)
    (let ((header (copy-marker start t)))
      (set-marker-insertion-type state t)
      (cons header state))))

(defun agent-q-review--body-string (index hunk)
  "The body of HUNK, number INDEX, as one propertized string."
  (let* ((lines (plist-get hunk :lines))
         (starts (make-vector (length lines) 0))
         (offset 0)
         (body
          (apply #'concat
                 (cl-loop for (tag . text) in lines
                          for i from 0
                          collect (let ((line (agent-q-review--with-face
                                               (concat (pcase tag
                                                         ('context " ")
                                                         ('removed "-")
                                                         ('added "+")
                                                         (_ ""))
                                                       text "\n")
                                               (pcase tag
                                                 ('context 'diff-context)
                                                 ('removed 'diff-removed)
                                                 ('added 'diff-added)
                                                 (_ 'shadow)))))
                                    (aset starts i offset)
                                    (setq offset (+ offset (length line)))
                                    line)))))
    (dolist (r (plist-get hunk :refine))
      (pcase-let* ((`(,line ,from ,to) r)
                   (start (+ (aref starts line) 1 from))
                   (end (+ (aref starts line) 1 to))
                   (face (if (eq (car (nth line lines)) 'removed)
                             '(diff-refine-removed diff-removed)
                           '(diff-refine-added diff-added))))
        (add-text-properties start end (list 'face face 'font-lock-face face) body)))
    (put-text-property 0 (length body) 'agent-q-hunk index body)
    body))

(defun agent-q-review--render-bodies (review upto)
  "Insert the bodies of REVIEW's hunks before hunk UPTO that are not in yet."
  (let ((buffer (agent-q-review--review-buffer review))
        (upto (min upto (agent-q-review--hunk-count review))))
    (when (and (buffer-live-p buffer)
               (< (agent-q-review--review-rendered review) upto))
      (with-current-buffer buffer
        (let ((inhibit-read-only t)
              (headers (agent-q-review--review-headers review)))
          (save-excursion
            (while (< (agent-q-review--review-rendered review) upto)
              (let ((i (agent-q-review--review-rendered review)))
                (goto-char (car (aref headers i)))
                (forward-line 1)
                (insert (agent-q-review--body-string i (agent-q-review--hunk review i)))
                (setf (agent-q-review--review-rendered review) (1+ i))
                (agent-q-review--update-hunk review i)))))))))

(defun agent-q-review--render-more (review)
  "Insert the next batch of REVIEW's hunk bodies, from an idle timer."
  (if (or (agent-q-review--review-done review)
          (not (buffer-live-p (agent-q-review--review-buffer review)))
          (>= (agent-q-review--review-rendered review) (agent-q-review--hunk-count review)))
      (when (agent-q-review--review-timer review)
        (cancel-timer (agent-q-review--review-timer review))
        (setf (agent-q-review--review-timer review) nil))
    (agent-q-review--render-bodies review (+ (agent-q-review--review-rendered review)
                                            agent-q-review--bodies-at-once))))

(defun agent-q-review--render (review)
  "Fill the current buffer with REVIEW: every header, the first bodies.
The other bodies follow from an idle timer (see
`agent-q-review--bodies-at-once')."
  (let ((inhibit-read-only t)
        (headers nil))
    (erase-buffer)
    ;; The file, the client and the description come from the model or a
    ;; client: hidden characters show as escapes, each on its one line.
    (insert (agent-q-review--with-face
             (if (agent-q-review--review-parts review)
                 (format "Files: %s\n"
                         (mapconcat (lambda (part)
                                      (concat (agent-q--visible (plist-get part :file))
                                              (if (plist-get part :protected)
                                                  (format " (PROTECTED: %s)"
                                                          (agent-q--visible (plist-get part :protected)))
                                                "")))
                                    (agent-q-review--review-parts review) "\n       "))
               (format "File: %s\n" (agent-q--visible (agent-q-review--review-file review))))
             'agent-q-diff-header))
    (when-let ((client (agent-q-review--review-client review)))
      (insert (agent-q-review--with-face (format "From: %s\n" (agent-q--visible client))
                                        'agent-q-diff-header)))
    (insert (agent-q-review--with-face
             (format "Description: %s\n"
                     (agent-q--visible (or (agent-q-review--review-description review) "")))
             'agent-q-diff-header))
    (insert "Keys: n/p next/previous hunk, a accept, r reject, SPC toggle, "
            "A/R accept/reject all pending,\n"
            "      e edit hunk, RET show in file, C-c C-c finish, "
            "C-c C-k reject all, q quit, ? help\n")
    (if (agent-q-review--review-parts review)
        (cl-loop for summary across (agent-q-review--review-summary review)
                 for i from 0
                 do (let ((part (agent-q-review--part review i)))
                      (when (= i (plist-get part :first))
                        (let ((start (point))
                              (name (agent-q--visible (plist-get part :path))))
                          (insert (format "--- a/%s\n+++ b/%s\n" name name))
                          (add-text-properties start (point)
                                               (list 'agent-q-hunk i 'agent-q-file-header t))))
                      (push (agent-q-review--insert-header
                             i summary
                             (format "%s hunk %d" (agent-q--visible
                                                   (file-name-nondirectory (plist-get part :file)))
                                     (1+ (- i (plist-get part :first)))))
                            headers)))
      (let ((name (agent-q--visible (file-name-nondirectory (agent-q-review--review-file review)))))
        (insert (format "--- a/%s\n+++ b/%s\n" name name)))
      (cl-loop for summary across (agent-q-review--review-summary review)
               for i from 0
               do (push (agent-q-review--insert-header i summary) headers)))
    (setf (agent-q-review--review-headers review) (vconcat (nreverse headers))
          (agent-q-review--review-rendered review) 0)
    (agent-q-review--render-bodies review agent-q-review--bodies-at-once)
    (when (< (agent-q-review--review-rendered review) (agent-q-review--hunk-count review))
      (setf (agent-q-review--review-timer review)
            (run-with-idle-timer 0.05 t #'agent-q-review--render-more review)))
    (goto-char (car (aref (agent-q-review--review-headers review) 0)))))

(defun agent-q-review--update-hunk (review index)
  "Redisplay the state of hunk INDEX of REVIEW."
  (let* ((inhibit-read-only t)
         (headers (agent-q-review--review-headers review))
         (decision (aref (agent-q-review--review-decisions review) index))
         (state (cdr (aref headers index)))
         (mstart (marker-position state)))
    (save-excursion
      (goto-char mstart)
      (delete-region mstart (+ mstart agent-q-review--marker-width))
      (insert (propertize (agent-q-review--decision-marker decision) 'agent-q-hunk index))
      (set-marker state mstart)
      ;; The rejected look covers the hunk body (once it is in).
      (let* ((body-start (progn (forward-line 1) (point)))
             (next (1+ index))
             (body-end (if (< next (length headers))
                           (let ((at (marker-position (car (aref headers next)))))
                             ;; Not the next file's header lines.
                             (if (get-text-property (max (point-min) (1- at)) 'agent-q-file-header)
                                 (or (previous-single-property-change at 'agent-q-file-header)
                                     at)
                               at))
                         (point-max))))
        (remove-overlays body-start body-end 'agent-q-state t)
        (when (and (eq decision 'reject) (< body-start body-end))
          (let ((ov (make-overlay body-start body-end)))
            (overlay-put ov 'agent-q-state t)
            (overlay-put ov 'face 'agent-q-diff-rejected-hunk)))))
    (force-mode-line-update)))

(defun agent-q-review--review-or-error ()
  "Return the review of the current buffer or signal a user error."
  (or agent-q-review--this-review
      (user-error "Not in an agent-q review buffer")))

;;;;; Keys typed ahead

;; A review opens when a client proposes an edit, at a moment the user did not choose: they
;; may be typing in the agent's terminal, and the review's window is selected under their
;; fingers.  A key typed for the terminal must not accept a hunk or finish the review, so the
;; keys that decide wait until the user has paused typing with the review on screen.  The
;; keys that move, show or reject everything work at once.

(defun agent-q-review--deciding-review ()
  "Return the current buffer's review if it takes deciding keys.
Signal a user error, which takes nothing, while the review is not
armed yet (see `agent-q-review--arm')."
  (let ((review (agent-q-review--review-or-error)))
    (unless (agent-q-review--review-armed review)
      (user-error "Key not taken: the review takes keys once you pause typing (%.1f s)"
                  agent-q-prompt--settle-seconds))
    review))

(defvar agent-q-review--last-key-time 0.0
  "The `float-time' of the last command the user's keys ran, anywhere.")

(defun agent-q-review--note-key ()
  "Record that the user's keys are running a command."
  (setq agent-q-review--last-key-time (float-time)))

;; A command, not an idle period: a key read by a prompt from a timer
;; stops Emacs's idle time until the next command, so `current-idle-time'
;; may stay nil long after the user stopped typing.
(add-hook 'pre-command-hook #'agent-q-review--note-key)

(defun agent-q-review--ready-p (review)
  "Non-nil when REVIEW may be armed now.
That is when it has been on screen, and no key of the user has run a
command, for `agent-q-prompt--settle-seconds' each: a key typed since,
even one meant for another window, delays it."
  (let ((now (float-time)))
    (and (>= (- now agent-q-review--last-key-time) agent-q-prompt--settle-seconds)
         (>= (- now (agent-q-review--review-shown review)) agent-q-prompt--settle-seconds))))

(defun agent-q-review--arm (review)
  "Make REVIEW take its deciding keys once the user pauses typing.
With no terminal to type on (batch, or a daemon with no frame) it takes
them at once.  Until then the header line says so and
`agent-q-review--deciding-review' refuses them."
  (setf (agent-q-review--review-shown review) (float-time))
  (if (agent-q-prompt--no-terminal-p)
      (setf (agent-q-review--review-armed review) t)
    (discard-input)
    (let (timer)
      (setq timer
            (run-at-time
             0.1 0.1
             (lambda ()
               (cond
                ((or (agent-q-review--review-done review)
                     (not (buffer-live-p (agent-q-review--review-buffer review))))
                 (cancel-timer timer))
                ((agent-q-review--ready-p review)
                 (cancel-timer timer)
                 (setf (agent-q-review--review-armed review) t)
                 (force-mode-line-update t))))))
      (setf (agent-q-review--review-arm-timer review) timer))))

(defun agent-q-review--hunk-at-point (review)
  "Return the index of the hunk at point in REVIEW's buffer."
  (or (get-text-property (point) 'agent-q-hunk)
      (let ((headers (agent-q-review--review-headers review)))
        (if (< (point) (car (aref headers 0)))
            0
          (1- (length headers))))))

(defun agent-q-review--goto-hunk (review index)
  "Move point to the header of hunk INDEX of REVIEW, its body rendered."
  (agent-q-review--render-bodies review (+ index 2))
  (goto-char (car (aref (agent-q-review--review-headers review) index))))

(defun agent-q-review--decide (decision &optional advance)
  "Set the hunk at point to DECISION; with ADVANCE go to the next hunk."
  (let* ((review (agent-q-review--deciding-review))
         (index (agent-q-review--hunk-at-point review)))
    (aset (agent-q-review--review-decisions review) index decision)
    (agent-q-review--update-hunk review index)
    (if (and advance (< (1+ index) (agent-q-review--hunk-count review)))
        (agent-q-review--goto-hunk review (1+ index))
      (agent-q-review--goto-hunk review index))))

(defun agent-q-review-next ()
  "Move to the next hunk."
  (interactive)
  (let* ((review (agent-q-review--review-or-error))
         (index (agent-q-review--hunk-at-point review))
         (last (1- (agent-q-review--hunk-count review))))
    (agent-q-review--goto-hunk
     review
     (if (< (point) (car (aref (agent-q-review--review-headers review) 0)))
         0
       (min last (1+ index))))))

(defun agent-q-review-previous ()
  "Move to the previous hunk."
  (interactive)
  (let* ((review (agent-q-review--review-or-error))
         (index (agent-q-review--hunk-at-point review)))
    (agent-q-review--goto-hunk review (max 0 (1- index)))))

(defun agent-q-review-accept ()
  "Accept the hunk at point and move to the next hunk."
  (interactive)
  (agent-q-review--decide 'accept t))

(defun agent-q-review-reject ()
  "Reject the hunk at point and move to the next hunk."
  (interactive)
  (agent-q-review--decide 'reject t))

(defun agent-q-review-toggle ()
  "Toggle the hunk at point between accepted and rejected.
A pending or rejected hunk becomes accepted, an accepted one rejected."
  (interactive)
  (let* ((review (agent-q-review--deciding-review))
         (current (aref (agent-q-review--review-decisions review)
                        (agent-q-review--hunk-at-point review))))
    (agent-q-review--decide (if (memq current '(nil reject)) 'accept 'reject))))

(defun agent-q-review--decide-pending (decision)
  "Set every pending hunk of the current review to DECISION."
  (let* ((review (agent-q-review--deciding-review))
         (decisions (agent-q-review--review-decisions review)))
    (dotimes (i (length decisions))
      (unless (aref decisions i)
        (aset decisions i decision)
        (agent-q-review--update-hunk review i)))))

(defun agent-q-review-accept-all ()
  "Accept all pending hunks."
  (interactive)
  (agent-q-review--decide-pending 'accept))

(defun agent-q-review-reject-all ()
  "Reject all pending hunks."
  (interactive)
  (agent-q-review--decide-pending 'reject))

(defun agent-q-review-show-source ()
  "Show the place of the hunk at point in the file's buffer."
  (interactive)
  (let* ((review (agent-q-review--review-or-error))
         (index (agent-q-review--hunk-at-point review))
         (hunk (aref (agent-q-review--review-summary review) index))
         (file (agent-q-review--hunk-file review index))
         (buffer (or (find-buffer-visiting file) (find-file-noselect file)))
         (window (display-buffer buffer)))
    (with-current-buffer buffer
      (save-restriction
        (widen)
        (goto-char (point-min))
        (forward-line (max 0 (1- (plist-get hunk :old-start))))
        (when window
          (set-window-point window (point))
          (with-selected-window window (recenter)))))))

(defun agent-q-review-help ()
  "Show the keys of the review buffer, and who writes the accepted hunks."
  (interactive)
  (let ((review agent-q-review--this-review))
    (describe-function 'agent-q-review-mode)
    (when (agent-q-review--review-p review)
      (with-current-buffer (help-buffer)
        (let ((inhibit-read-only t))
          (goto-char (point-min))
          (insert
           (cond
            ((agent-q-review--review-parts review)
             "In this review of several files, Emacs applies exactly the hunks you accept to each file: to the buffer visiting it, else to the file on disk.\n\n")
            ((agent-q-review--review-merge review)
               (format "In this review, Emacs changes nothing: %s writes exactly the hunks you accept, itself.\n\n"
                       (agent-q--visible (or (agent-q-review--review-client review) "the agent"))))
            (t
             (format "In this review, Emacs applies exactly the hunks you accept to %s, as one undo step.\n\n"
                     (agent-q--visible (agent-q-review--review-file review)))))))))))

;;;;; Editing a hunk

(defvar-local agent-q-review--hunk-edit nil
  "In a hunk edit buffer: (REVIEW-BUFFER . INDEX).")

(defvar agent-q-review-hunk-edit-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "C-c C-c") #'agent-q-review-hunk-edit-accept)
    (define-key map (kbd "C-c C-k") #'agent-q-review-hunk-edit-cancel)
    map)
  "Keymap of `agent-q-review-hunk-edit-mode'.")

(define-minor-mode agent-q-review-hunk-edit-mode
  "Minor mode of the buffer editing the proposed side of a hunk.
\\<agent-q-review-hunk-edit-mode-map>\\[agent-q-review-hunk-edit-accept] \
accepts the hunk with this text, \\[agent-q-review-hunk-edit-cancel] \
cancels the edit."
  :lighter " agent-q-hunk-edit"
  :keymap agent-q-review-hunk-edit-mode-map)

(defun agent-q-review-edit-hunk ()
  "Edit the proposed side of the hunk at point, then accept it.
The edit buffer holds the hunk's new text, context lines included;
\\<agent-q-review-hunk-edit-mode-map>\\[agent-q-review-hunk-edit-accept] \
accepts the hunk with the edited text, \\[agent-q-review-hunk-edit-cancel] \
leaves the hunk as it was."
  (interactive)
  (let* ((review (agent-q-review--deciding-review))
         (index (agent-q-review--hunk-at-point review))
         (hunk (agent-q-review--hunk review index))
         (decision (aref (agent-q-review--review-decisions review) index))
         (review-buffer (current-buffer))
         (file-buffer (find-buffer-visiting (agent-q-review--hunk-file review index)))
         (mode (and file-buffer (buffer-local-value 'major-mode file-buffer)))
         (buffer (get-buffer-create (format "*agent-q hunk %d: %s*" (1+ index)
                                            (file-name-nondirectory
                                             (agent-q-review--hunk-file review index))))))
    (with-current-buffer buffer
      (let ((inhibit-read-only t))
        (erase-buffer)
        (when (and mode (or (provided-mode-derived-p mode 'prog-mode)
                                 (provided-mode-derived-p mode 'text-mode)))
          (delay-mode-hooks (ignore-errors (funcall mode))))
        (insert (if (stringp decision) decision (plist-get hunk :new-text)))
        (goto-char (point-min))
        (agent-q-review-hunk-edit-mode 1)
        (setq agent-q-review--hunk-edit (cons review-buffer index))))
    (pop-to-buffer buffer)
    (message "Edit hunk %d: C-c C-c to accept it with this text, C-c C-k to cancel"
             (1+ index))))

(defun agent-q-review--hunk-edit-close (text)
  "Close the hunk edit buffer; with TEXT non-nil, accept the hunk with it."
  (let* ((edit agent-q-review--hunk-edit)
         (review-buffer (car edit))
         (index (cdr edit))
         (buffer (current-buffer)))
    (when (buffer-live-p review-buffer)
      (with-current-buffer review-buffer
        (let ((review agent-q-review--this-review))
          (when (and text review (not (agent-q-review--review-done review)))
            (let ((hunk (agent-q-review--hunk review index)))
              (aset (agent-q-review--review-decisions review) index
                    (if (equal text (plist-get hunk :new-text)) 'accept text)))
            (agent-q-review--update-hunk review index)))))
    (when-let ((window (get-buffer-window buffer)))
      (quit-window t window))
    (when (buffer-live-p buffer)
      (kill-buffer buffer))
    (when (buffer-live-p review-buffer)
      (pop-to-buffer review-buffer))))

(defun agent-q-review-hunk-edit-accept ()
  "Accept the hunk being edited with the text of this buffer."
  (interactive)
  (agent-q-review--hunk-edit-close
   (buffer-substring-no-properties (point-min) (point-max))))

(defun agent-q-review-hunk-edit-cancel ()
  "Cancel the edit of the hunk; its state is unchanged."
  (interactive)
  (agent-q-review--hunk-edit-close nil))

;;;;; Finishing

(defun agent-q-review--finish (review &optional cancelled killing)
  "Finish REVIEW: apply its accepted hunks and report the outcome.
CANCELLED non-nil rejects every hunk first.  KILLING non-nil means the
review buffer is being killed already.  The review buffer goes away and
REVIEW's callback gets the result.  Finishing twice does nothing."
  (unless (agent-q-review--review-done review)
    (when cancelled
      (setf (agent-q-review--review-cancelled review) t)
      (fillarray (agent-q-review--review-decisions review) 'reject))
    (setf (agent-q-review--review-done review) t)
    (when (agent-q-review--review-timer review)
      (cancel-timer (agent-q-review--review-timer review)))
    (when (agent-q-review--review-arm-timer review)
      (cancel-timer (agent-q-review--review-arm-timer review)))
    (when (agent-q-review--review-clock review)
      (cancel-timer (agent-q-review--review-clock review)))
    (setq agent-q-review--open-reviews (delq review agent-q-review--open-reviews))
    (let ((outcome (condition-case err
                       (cond ((agent-q-review--review-parts review)
                              (agent-q-review--apply-parts review))
                             ((agent-q-review--review-merge review)
                              (agent-q-review--merge-outcome review))
                             (t (agent-q-review--apply-review review)))
                     (error (cons :failure
                                  (format "Error while applying the reviewed hunks to %s: %s"
                                          (agent-q-review--review-path review)
                                          (error-message-string err))))))
          (buffer (agent-q-review--review-buffer review)))
      (when (and (not killing) (buffer-live-p buffer))
        (let ((window (get-buffer-window buffer)))
          (with-current-buffer buffer
            (setq agent-q-review--this-review nil))
          (if (window-live-p window)
              (quit-window t window)
            (kill-buffer buffer))))
      (when-let ((callback (agent-q-review--review-callback review)))
        (if (or (agent-q-review--review-merge review)
                (agent-q-review--review-parts review)
                (not (memq (car outcome) '(:success :denied))))
            (funcall callback (cdr outcome) (car outcome))
          ;; The user decided: the executor's audit says which hunks how.
          (funcall callback (cdr outcome) (car outcome) (agent-q-review-hunks review)))))))

(defun agent-q-review-finish ()
  "Finish the review: apply the accepted hunks; pending hunks are not applied."
  (interactive)
  (agent-q-review--finish (agent-q-review--deciding-review)))

(defun agent-q-review-cancel ()
  "Reject every hunk and finish the review."
  (interactive)
  (agent-q-review--finish (agent-q-review--review-or-error) t))

(defun agent-q-review-keyboard-quit ()
  "Reject every hunk and finish the review, like `agent-q-review-cancel'."
  (interactive)
  (agent-q-review-cancel))

(defun agent-q-review-quit ()
  "Finish the review, asking first when hunks are still pending."
  (interactive)
  (let* ((review (agent-q-review--deciding-review))
         (pending (nth 2 (agent-q-review--count review))))
    (when (or (zerop pending)
              (y-or-n-p (format "%d hunk%s still pending (not applied).  Finish? "
                                pending (if (= pending 1) " is" "s are"))))
      (agent-q-review--finish review))))

(defun agent-q-review--review-killed ()
  "Reject everything when a review buffer is killed before finishing."
  (let ((review agent-q-review--this-review))
    (when (and review (not (agent-q-review--review-done review)))
      (agent-q-review--finish review t t))))

(defun agent-q-review-cancel-review (review)
  "Withdraw REVIEW: close it and apply nothing.
Its callback is told the call was cancelled."
  (unless (agent-q-review--review-done review)
    (setf (agent-q-review--review-callback review)
          (let ((callback (agent-q-review--review-callback review)))
            (lambda (_text _status &rest _)
              (when callback
                (funcall callback
                         (format "The review of the edit to %s was withdrawn before the user finished it; no change was made."
                                 (agent-q-review--review-path review))
                         :cancelled)))))
    (agent-q-review--finish review t)))

(defun agent-q-review--numbers (indices)
  "Return INDICES (0-based) as \"1\", \"1 and 3\" or \"1, 2 and 4\"."
  (let ((names (mapcar (lambda (i) (number-to-string (1+ i))) indices)))
    (if (cdr names)
        (concat (string-join (butlast names) ", ") " and " (car (last names)))
      (car names))))

(defun agent-q-review--hunk-phrase (indices what)
  "Return \"hunk N WHAT\" or \"hunks N and M WHAT\" for INDICES."
  (format "%s %s %s" (if (cdr indices) "hunks" "hunk")
          (agent-q-review--numbers indices) what))

(defun agent-q-review--replace-contents (buffer text)
  "Replace the whole (widened) text of BUFFER with TEXT as one undo step."
  (with-current-buffer buffer
    (undo-boundary)
    (let ((group (prepare-change-group))
          (source (generate-new-buffer " *agent-q-apply*" t)))
      (unwind-protect
          (progn
            (with-current-buffer source (insert text))
            (activate-change-group group)
            (save-restriction
              (widen)
              (replace-buffer-contents source 1.0))
            (accept-change-group group)
            (undo-amalgamate-change-group group)
            (setq group nil))
        (when group (cancel-change-group group))
        (kill-buffer source)))
    (undo-boundary)))

(defun agent-q-review--apply-review (review)
  "Apply the accepted hunks of REVIEW; return (STATUS . TEXT).
STATUS is `:success' when hunks were applied, `:denied' when the user
accepted none (rejected or cancelled the edit), and `:failure' when the
file's buffer changed during the review, so nothing could be applied."
  (let* ((path (agent-q-review--review-path review))
         (file (agent-q-review--review-file review))
         (session (agent-q-review--review-session review))
         (summaries (agent-q-review--review-summary review))
         (decisions (agent-q-review--review-decisions review))
         (total (length summaries))
         accepted rejected pending edited)
    (dotimes (i total)
      (pcase (aref decisions i)
        ('reject (push i rejected))
        ('nil (push i pending))
        ((pred stringp) (push i accepted) (push i edited))
        (_ (push i accepted))))
    (setq accepted (nreverse accepted) rejected (nreverse rejected)
          pending (nreverse pending) edited (nreverse edited))
    (let ((summary
           (string-join
            (delq nil (list (let ((plain (cl-set-difference accepted edited)))
                              (and plain (agent-q-review--hunk-phrase
                                          (sort plain #'<) "accepted")))
                            (and edited (agent-q-review--hunk-phrase
                                         edited "accepted with the user's edits"))
                            (and rejected (agent-q-review--hunk-phrase rejected "rejected"))
                            (and pending (agent-q-review--hunk-phrase
                                          pending "left pending (not applied)"))))
            "; "))
          (saved nil)
          (stale nil)
          (moved (and accepted (agent-q-review--review-pinned review)
                      (agent-q-guard-write-changed (agent-q-review--review-pinned review) file))))
      (when (and accepted (not moved))
        (let* ((buffer (or (find-buffer-visiting file)
                           ;; Something other than a regular file put there during the review
                           ;; (a FIFO would block `find-file-noselect') counts as a change.
                           (and (or (not (file-exists-p file)) (file-regular-p file))
                                (find-file-noselect file))))
               (now (and buffer
                         (with-current-buffer buffer
                           (save-restriction
                             (widen)
                             (buffer-substring-no-properties (point-min) (point-max)))))))
          (if (not (equal now (agent-q-review--review-current review)))
              (setq stale t)
            (let ((text (agent-q--core-diff-session-apply
                         session (mapcar (lambda (d) (or d 'reject)) decisions))))
              (agent-q-review--replace-contents buffer text)
              (agent-q-review--journal review file (agent-q-review--review-current review) text
                                       (length accepted) (length rejected)))
            (when agent-q-diff-save-after-apply
              (condition-case err
                  (let ((changed (and (agent-q-review--review-pinned review)
                                      (agent-q-guard-write-changed
                                       (agent-q-review--review-pinned review) file))))
                    (when changed
                      (error "It changed after it was checked (%s); the buffer was left unsaved" changed))
                    (with-current-buffer buffer (save-buffer))
                    (setq saved t))
                (error (setq saved (error-message-string err))))))))
      (cons
       (cond ((or stale moved) :failure) (accepted :success) (t :denied))
       (concat
       (cond
        (moved
         (format "Applied 0 of %d hunks to %s: it changed after it was checked (%s), so nothing was applied (%s).  Read the file again and propose the edit again."
                 total path moved summary))
        (stale
         (format "Applied 0 of %d hunks to %s: the file's buffer changed during the review, so nothing was applied (%s).  Read the file again and propose the edit again."
                 total path summary))
        ((agent-q-review--review-cancelled review)
         (format "Applied 0 of %d hunks to %s: the user rejected the whole edit." total path))
        (t (format "Applied %d of %d hunks to %s (%s)." (length accepted) total path summary)))
       (cond ((or stale moved (null accepted)) "  No change made.")
             ((stringp saved) (format "  Could not save %s: %s." path saved))
             (saved (format "  Saved %s." path))
             (t "  Buffer not saved."))
       (if edited
           (concat "\n\nEdited hunks as applied:\n"
                   (mapconcat (lambda (i)
                                (format "Hunk %d (%s) now reads:\n%s" (1+ i)
                                        (plist-get (aref summaries i) :header)
                                        (aref decisions i)))
                              edited "\n"))
         "")
       (if (or rejected pending)
           (concat "\n\nNot applied (the removed and added lines of each hunk):\n"
                   (mapconcat (lambda (i)
                                (format "Hunk %d:\n%s" (1+ i)
                                        (agent-q--core-diff-session-changes session i)))
                              (sort (append rejected pending nil) #'<) ""))
         ""))))))

(defun agent-q-review--start-review (review)
  "Show REVIEW in a review buffer and return at once.
Finishing the review (\\<agent-q-review-mode-map>\\[agent-q-review-finish], \\[agent-q-review-cancel], killing the buffer...) calls
its callback."
  (let* ((name (format "*agent-q-diff: %s*"
                       (file-name-nondirectory (agent-q-review--review-file review))))
         (buffer (generate-new-buffer name)))
    (setf (agent-q-review--review-buffer review) buffer)
    (agent-q-review--start-clock review)
    (with-current-buffer buffer
      (agent-q-review-mode)
      (setq agent-q-review--this-review review)
      (agent-q-review--render review))
    (push review agent-q-review--open-reviews)
    (if agent-q-review--review-driver
        (progn
          (setf (agent-q-review--review-armed review) t)
          (funcall agent-q-review--review-driver buffer)
          (unless (agent-q-review--review-done review)
            (agent-q-review--finish review t)))
      (pop-to-buffer buffer)
      (agent-q-review--arm review))
    review))

(defun agent-q-review--prepare-review (path original modified description)
  "Prepare the review of replacing ORIGINAL by MODIFIED in PATH.
Return a review, or (STATUS . TEXT) when there is nothing to review:
ORIGINAL does not match the current text, or the proposal changes
nothing (both failures, with the explanation).  DESCRIPTION goes into
the review's header."
  (unless (fboundp 'agent-q--core-diff-session)
    (error "The agent-q-core module is not loaded"))
  (let* ((file (expand-file-name path))
         (current (car (agent-q-review--current-text file)))
         (span (condition-case err
                   (agent-q--core-diff-locate current original)
                 (agent-q-diff-error (format "%s" (cadr err))))))
    (if (stringp span)
        (cons :failure (format "No change made to %s: %s" path span))
      (let* ((proposal (if (plist-get span :whole)
                           modified
                         (concat (substring current 0 (plist-get span :start))
                                 modified
                                 (substring current (plist-get span :end)))))
             (session (agent-q--core-diff-session current proposal))
             (count (agent-q--core-diff-session-count session)))
        (if (zerop count)
            (cons :failure
                  (format "No change made to %s: the proposal is identical to the current text."
                          path))
          (agent-q-review--make-review
           :path path :file file :current current :proposal proposal
           :description description :session session
           :summary (agent-q--core-diff-session-summary session)
           :details (make-vector count nil)
           :decisions (make-vector count nil)))))))

(defun agent-q-review-edit-async (path original modified description callback
                                             &optional client)
  "Open the review of replacing ORIGINAL by MODIFIED in PATH; return at once.
CALLBACK is called once, with the result text and its status
\(`:success', `:denied' or `:failure'), when the user finishes the
review -- or at once when there is nothing to review (see
`agent-q-review-edit').  CLIENT, when non-nil, names where the
proposal comes from in the review's header.  DESCRIPTION is shown in
the header.  When the user decided (`:success' or `:denied'),
CALLBACK gets a third argument, the hunks accepted, edited and
rejected (`agent-q-review-hunks'), which the executor audits.  Return
the review, or nil when none opened."
  (let ((review (agent-q-review--prepare-review path original modified description)))
    (if (consp review)
        (progn (funcall callback (cdr review) (car review)) nil)
      (setf (agent-q-review--review-callback review) callback
            (agent-q-review--review-client review) client
            (agent-q-review--review-pinned review) (plist-get agent-q-call-context :file))
      (when (fboundp 'agent-q-when-cancelled)
        (agent-q-when-cancelled (lambda () (agent-q-review-cancel-review review))))
      (agent-q-review--start-review review))))

(defun agent-q-review-edit (path original modified &optional description)
  "Review the proposal to replace ORIGINAL by MODIFIED in PATH; return the result.
This waits for the review in a recursive edit (Emacs stays usable) and
returns the result text; `agent-q-review-edit-async' is the
same without waiting, which is how the \"propose_file_edit\" tool
runs.  The review IS the approval of that tool: nothing is changed
unless the user accepts hunks here.

The current text is that of the buffer visiting PATH (unsaved edits
included), else the file on disk, else \"\" (a new file).  ORIGINAL
must be the whole current text or a unique excerpt of it, which
MODIFIED replaces.  When it is not, no review opens and the returned
string explains the mismatch, with the current text around the closest
match.

Otherwise the buffer *agent-q-diff: FILE* shows the diff hunk by hunk
\(see `agent-q-review-mode').  Finishing applies exactly the
accepted hunks to the buffer visiting PATH (opened if needed) as one
undo step, saved only when `agent-q-diff-save-after-apply' is non-nil.
Killing the review buffer or
\\<agent-q-review-mode-map>\\[agent-q-review-keyboard-quit] \
in it rejects everything.  DESCRIPTION is shown in the header.

The returned string says how many hunks were applied, which were
accepted, edited or rejected, the text of the hunks not applied, and
whether the buffer was saved."
  (let* ((answer (list nil))
         (review (agent-q-review-edit-async
                  path original modified description
                  (lambda (text _status &rest _) (setcar answer text)))))
    (when (and review (not (car answer)))
      (unwind-protect
          (condition-case nil
              (agent-q--wait-for (lambda () (car answer)))
            (quit (agent-q-review--finish review t)))
        (unless (agent-q-review--review-done review)
          (agent-q-review--finish review t))))
    (car answer)))

;;;; The review of a terminal agent's edit: merge, do not apply

(defun agent-q-review--decisions-summary (review)
  "Say in words which hunks of REVIEW were accepted, edited, rejected."
  (let ((decisions (agent-q-review--review-decisions review))
        accepted edited rejected)
    (dotimes (i (length decisions))
      (pcase (aref decisions i)
        ((pred stringp) (push i edited))
        ('accept (push i accepted))
        (_ (push i rejected))))
    (string-join
     (delq nil (list (and accepted (agent-q-review--hunk-phrase (nreverse accepted) "accepted"))
                     (and edited (agent-q-review--hunk-phrase
                                  (nreverse edited) "accepted with the user's edits"))
                     (and rejected (agent-q-review--hunk-phrase (nreverse rejected) "rejected"))))
     "; ")))

(defun agent-q-review-merged-text (review &optional pending)
  "The text of REVIEW's file with its accepted hunks, as the user left them.
Edited hunks count with the user's text, rejected hunks not at all;
pending hunks count as PENDING says: `accept' or, when nil, `reject'."
  (agent-q--core-diff-session-apply
   (agent-q-review--review-session review)
   (mapcar (lambda (d) (or d pending 'reject))
           (agent-q-review--review-decisions review))))

(defun agent-q-review-hunks (review)
  "Which hunks of REVIEW were decided how: a plist of hunk numbers, from 1.
\(:accepted NUMBERS :edited NUMBERS :rejected NUMBERS); a hunk left
undecided counts as rejected (it is not applied)."
  (let ((decisions (agent-q-review--review-decisions review))
        accepted edited rejected)
    (dotimes (i (length decisions))
      (pcase (aref decisions i)
        ((pred stringp) (push (1+ i) edited))
        ('accept (push (1+ i) accepted))
        (_ (push (1+ i) rejected))))
    (list :accepted (nreverse accepted) :edited (nreverse edited)
          :rejected (nreverse rejected))))

(defun agent-q-review--merge-outcome (review)
  "The outcome of the merge REVIEW: (STATUS . PLIST).
STATUS is `:success' when hunks were accepted, then PLIST is (:text
MERGED :summary WORDS :hunks HUNKS); `:denied' when none was (rejected,
cancelled, or all left pending), then PLIST is (:summary WORDS :hunks
HUNKS).  HUNKS is what `agent-q-review-hunks' says."
  (let* ((decisions (append (agent-q-review--review-decisions review) nil))
         (summary (if (agent-q-review--review-cancelled review)
                      "the user rejected the whole edit"
                    (agent-q-review--decisions-summary review)))
         (hunks (agent-q-review-hunks review)))
    (if (and (not (agent-q-review--review-cancelled review))
             (cl-some (lambda (d) (and d (not (eq d 'reject)))) decisions))
        (cons :success (list :text (agent-q-review-merged-text review) :summary summary
                             :hunks hunks))
      (cons :denied (list :summary summary :hunks hunks)))))

(defun agent-q-review-open-reviews ()
  "The reviews shown and not yet finished, newest first."
  (copy-sequence agent-q-review--open-reviews))

(defun agent-q-review-file (review)
  "The absolute file name REVIEW is about."
  (agent-q-review--review-file review))

(defun agent-q-review-close (review)
  "Close REVIEW without an outcome: its callback is not called."
  (unless (agent-q-review--review-done review)
    (setf (agent-q-review--review-callback review) nil)
    (agent-q-review--finish review t)))

(defun agent-q-review-merge-async (file current proposal callback &optional client description)
  "Review a terminal agent's PROPOSAL for FILE, whose text is CURRENT.
The review is the hunk review of `agent-q-review-edit', headed with
CLIENT (who proposes) and DESCRIPTION, but finishing it changes
nothing in Emacs, neither FILE nor a buffer visiting it: the agent
writes the file.  CALLBACK is called once, with STATUS and PLIST:
`:success' and (:text MERGED :summary WORDS :hunks HUNKS), MERGED being
CURRENT with exactly the accepted hunks, edited ones as the user edited
them; `:denied' and (:summary WORDS :hunks HUNKS) when no hunk was
accepted (rejected each, rejected all, cancelled, killed the buffer).
HUNKS is what `agent-q-review-hunks' says.  When PROPOSAL
changes nothing, no review opens and CALLBACK gets `:success' with
PROPOSAL at once.  Return the review, or nil when none opened."
  (unless (fboundp 'agent-q--core-diff-session)
    (error "The agent-q-core module is not loaded"))
  (let* ((session (agent-q--core-diff-session current proposal))
         (count (agent-q--core-diff-session-count session)))
    (if (zerop count)
        (progn (funcall callback :success
                        (list :text proposal :summary "the proposal changes nothing"))
               nil)
      (let ((review (agent-q-review--make-review
                     :path file :file (expand-file-name file) :current current
                     :proposal proposal :description description :session session
                     :summary (agent-q--core-diff-session-summary session)
                     :details (make-vector count nil)
                     :decisions (make-vector count nil)
                     :client client :merge t
                     :callback (lambda (plist status) (funcall callback status plist)))))
        (agent-q-review--start-review review)))))

;;;; The review of an edit of several files: one review, each file applied

(defun agent-q-review-files-async (files callback &optional client description)
  "Review the edit of several FILES in one hunk review; return at once.
FILES is a list of plists, one per file: :path (the name shown),
:file (the absolute name), :current (its text now: its buffer's when
one visits it), :proposal (its new text), :protected (why it is
protected, shown in the header, or nil) and :pinned (the true name the
write guard pinned, see `agent-q-guard-write-verdict').  The hunks of
all files are reviewed one after the other; finishing applies each
file's accepted hunks to the buffer visiting it (one undo step, saved
only when `agent-q-diff-save-after-apply'), else writes the file where
the guard pinned it.  A file whose buffer or text changed during the
review is left alone.  CLIENT and DESCRIPTION head the review.

CALLBACK is called once with PLIST and STATUS: PLIST is (:cancelled C
:files OUTCOMES), each outcome (:file F :target T :problem P :hunks
HUNKS), T `buffer', `saved', `file' or nil (nothing applied), P why
nothing was applied although hunks were accepted, HUNKS a list of
\(NUMBER LINE DECISION) per hunk of F (NUMBER from 1 within F, LINE
where it starts in the current text, DECISION `accepted', `edited' or
`rejected'); STATUS `:success' when something was applied, `:denied'
when no hunk was accepted, `:failure' when accepted hunks could not be
applied.  When no file changes, CALLBACK gets (:files nil) and
`:denied' at once.  Return the review, or nil when none opened."
  (unless (fboundp 'agent-q--core-diff-session)
    (error "The agent-q-core module is not loaded"))
  (let ((parts nil)
        (summaries nil)
        (first 0))
    (dolist (f files)
      (let* ((session (agent-q--core-diff-session (plist-get f :current) (plist-get f :proposal)))
             (count (agent-q--core-diff-session-count session)))
        (unless (zerop count)
          (push (append (list :session session :first first :count count) f) parts)
          (push (agent-q--core-diff-session-summary session) summaries)
          (setq first (+ first count)))))
    (if (null parts)
        (progn (funcall callback (list :files nil) :denied) nil)
      (setq parts (nreverse parts))
      (let ((review (agent-q-review--make-review
                     :path (format "%d files" (length parts))
                     :file (plist-get (car parts) :file)
                     :description description :client client
                     :summary (apply #'vconcat (nreverse summaries))
                     :details (make-vector first nil)
                     :decisions (make-vector first nil)
                     :parts parts
                     :callback (lambda (plist status &rest _) (funcall callback plist status)))))
        (when (fboundp 'agent-q-when-cancelled)
          (agent-q-when-cancelled (lambda () (agent-q-review-cancel-review review))))
        (agent-q-review--start-review review)))))

(defun agent-q-review--part-text-now (file)
  "The text of FILE now: its buffer's when one visits it, else the file's."
  (let ((buffer (find-buffer-visiting file)))
    (if buffer
        (with-current-buffer buffer
          (save-restriction
            (widen)
            (buffer-substring-no-properties (point-min) (point-max))))
      (require 'agent-q-files)
      (agent-q-files-file-text file t))))

(defun agent-q-review--write-part (part text)
  "Write TEXT to PART's file (not visited) where the write guard pinned it."
  (require 'agent-q-files)
  (let* ((file (plist-get part :file))
         (coding (car (agent-q-builtins--write-coding file nil text)))
         (bytes (encode-coding-string text coding))
         (agent-q-call-context (list :file (plist-get part :pinned))))
    (agent-q-guard-write-pinned file (if (multibyte-string-p bytes) (string-to-unibyte bytes) bytes)
                                (file-modes file))))

(defun agent-q-review--journal (review file old new accepted rejected)
  "Journal the change REVIEW applied to FILE, from OLD to NEW.
ACCEPTED and REJECTED count its hunks.  Every edit a review applies
is recorded here: propose_file_edit's, and each file of a rename."
  (when (require 'agent-q-journal nil t)
    (agent-q-journal-record
     :context (agent-q-review--review-context review)
     :client (agent-q-review--review-client review)
     :decision "review" :file file
     :accepted accepted :rejected rejected :old old :new new)))

(defun agent-q-review--apply-part (review part)
  "Apply REVIEW's accepted hunks of PART; return its outcome plist."
  (let* ((first (plist-get part :first))
         (all (agent-q-review--review-decisions review))
         (summary (agent-q-review--review-summary review))
         (decisions (cl-loop for i from first below (+ first (plist-get part :count))
                             collect (aref all i)))
         (hunks (cl-loop for d in decisions
                         for i from 0
                         collect (list (1+ i) (plist-get (aref summary (+ first i)) :old-start)
                                       (pcase d
                                         ((pred stringp) 'edited)
                                         ('accept 'accepted)
                                         (_ 'rejected)))))
         (file (plist-get part :file))
         target problem)
    (when (cl-some (lambda (d) (and d (not (eq d 'reject)))) decisions)
      (condition-case err
          (let ((moved (and (plist-get part :pinned)
                            (agent-q-guard-write-changed (plist-get part :pinned) file))))
            (cond
             (moved (setq problem (format "it changed after it was checked (%s)" moved)))
             ((not (equal (agent-q-review--part-text-now file) (plist-get part :current)))
              (setq problem "its text changed during the review"))
             (t
              (let ((text (agent-q--core-diff-session-apply
                           (plist-get part :session) (mapcar (lambda (d) (or d 'reject)) decisions)))
                    (buffer (find-buffer-visiting file)))
                (if (not buffer)
                    (progn (agent-q-review--write-part part text)
                           (setq target 'file))
                  (agent-q-review--replace-contents buffer text)
                  (setq target 'buffer)
                  (when agent-q-diff-save-after-apply
                    (with-current-buffer buffer (save-buffer))
                    (setq target 'saved)))
                ;; Each file of a several-file review (a rename) is a change of its own.
                (let ((rejected (cl-count-if (lambda (h) (eq (nth 2 h) 'rejected)) hunks)))
                  (agent-q-review--journal review file (plist-get part :current) text
                                           (- (length hunks) rejected) rejected))))))
        (error (setq problem (format "applying it failed: %s" (error-message-string err))))))
    (list :file file :target target :problem problem :hunks hunks)))

(defun agent-q-review--apply-parts (review)
  "Apply the accepted hunks of the several-file REVIEW: (STATUS . PLIST).
See `agent-q-review-files-async'."
  (let* ((outcomes (mapcar (lambda (part) (agent-q-review--apply-part review part))
                           (agent-q-review--review-parts review)))
         (accepted (cl-some (lambda (o) (cl-some (lambda (h) (not (eq (nth 2 h) 'rejected)))
                                                 (plist-get o :hunks)))
                            outcomes)))
    (cons (cond ((cl-some (lambda (o) (plist-get o :target)) outcomes) :success)
                (accepted :failure)
                (t :denied))
          (list :cancelled (agent-q-review--review-cancelled review) :files outcomes))))

(provide 'agent-q-review)

;;; agent-q-review.el ends here
