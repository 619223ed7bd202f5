;;; agent-q-flood-test.el --- Floods of connections and calls cannot take Emacs from the user  -*- lexical-binding: t -*-

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

;; The MCP server lives in Emacs's process.  These tests push on it as
;; a process on the machine would, with and without the token, and
;; check that Emacs stays the user's: its descriptors (a file can still
;; be saved), its memory, and its main loop (a 10 ms repeating timer is
;; never late by more than 100 ms).  Every flood goes to 127.0.0.1
;; only, from tests/mcp-client/client.py, and is bounded in count and
;; time.  The servers and clients are those of
;; tests/agent-q-mcp-client-test.el.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-q)
(require 'agent-q-mcp)
(require 'agent-q-mcp-client-test)

(defvar agent-q--pending)

(defun agent-q-flood-test--descriptors ()
  "Count the file descriptors of this Emacs."
  (length (directory-files "/proc/self/fd" nil "\\`[0-9]+\\'" t)))

(defun agent-q-flood-test--rss-kb ()
  "This Emacs's resident set size in kB, from /proc/self/status."
  (with-temp-buffer
    (insert-file-contents "/proc/self/status")
    (re-search-forward "^VmRSS:[ \t]+\\([0-9]+\\) kB")
    (string-to-number (match-string 1))))

(defun agent-q-flood-test--hwm-kb ()
  "This Emacs's peak resident set size in kB, from /proc/self/status."
  (with-temp-buffer
    (insert-file-contents "/proc/self/status")
    (re-search-forward "^VmHWM:[ \t]+\\([0-9]+\\) kB")
    (string-to-number (match-string 1))))

(defmacro agent-q-flood-test--measuring-stalls (var &rest body)
  "Run BODY while a 10 ms repeating timer measures the main loop's stalls.
BODY sees VAR bound to a list (STALL RAW GC): STALL is the longest
lateness seen so far, in seconds, less the garbage collection done
meanwhile; RAW the longest lateness; GC the seconds of garbage
collection in all.  A collection of this Emacs's heap alone takes
about 100 ms on a loaded machine, whatever agent-q does, so STALL is
what the code under test blocks."
  (declare (indent 1) (debug t))
  (let ((timer (make-symbol "timer")) (last (make-symbol "last"))
        (gc (make-symbol "gc")) (gc0 (make-symbol "gc0")))
    `(let* ((,var (list 0.0 0.0 0.0))
            (,last (float-time))
            (,gc gc-elapsed)
            (,gc0 gc-elapsed)
            (,timer (run-at-time
                     0.01 0.01
                     (lambda ()
                       (let ((now (float-time))
                             (collecting (- gc-elapsed ,gc)))
                         (setcar ,var (max (car ,var) (- now ,last 0.01 collecting)))
                         (setcar (cdr ,var) (max (cadr ,var) (- now ,last 0.01)))
                         (setcar (cddr ,var) (- gc-elapsed ,gc0))
                         (setq ,last now ,gc gc-elapsed))))))
       (unwind-protect (progn ,@body)
         (cancel-timer ,timer)))))

(defun agent-q-flood-test--wait-for (predicate seconds what &optional run)
  "Process events until PREDICATE is true; fail after SECONDS, naming WHAT.
RUN, when given, is the client run whose events the failure shows."
  (let ((deadline (+ (float-time) seconds)))
    (while (and (not (funcall predicate)) (< (float-time) deadline))
      (accept-process-output nil 0.02))
    (unless (funcall predicate)
      (ert-fail (format "timed out waiting for %s (%d calls under way)%s"
                        what (hash-table-count agent-q-mcp--calls)
                        (if run
                            (concat "\n" (agent-q-mcp-client-test--describe run))
                          ""))))))

(ert-deftest agent-q-flood-idle-connections-take-no-descriptors ()
  "1,100 idle connections without the token, held 30 s, cannot stop Emacs.
Emacs keeps at most `MAX_UNPROVEN_CONNECTIONS' (64) of them, closes the
idle ones after the header timeout (5 s), saves a file every 100 ms
throughout, and a client with the token is served meanwhile."
  (agent-q-mcp-client-test--with-server
    (let* ((baseline (agent-q-flood-test--descriptors))
           (peak baseline)
           (saves 0)
           (save-errors nil)
           (saved (agent-q-mcp-client-test--file "saved.txt"))
           (data (agent-q-mcp-client-test--file "data.txt" "the token opens\n"))
           (flood (agent-q-mcp-client-test--client-start
                   "idle-flood" '((count . 1100) (seconds . 30) (every . 1))))
           (saver (run-at-time
                   0.1 0.1
                   (lambda ()
                     (setq peak (max peak (agent-q-flood-test--descriptors)))
                     (condition-case err
                         (progn (write-region (format "save %d\n" saves) nil saved nil 'silent)
                                (cl-incf saves))
                       (error (push err save-errors)))))))
      (unwind-protect
          (progn
            (agent-q-flood-test--wait-for
             (lambda () (agent-q-mcp-client-test--event flood "flooding")) 30 "the flood")
            (let ((flooding (agent-q-mcp-client-test--event flood "flooding")))
              (message "flood: %S; descriptors %d -> peak %d so far"
                       flooding baseline peak)
              (should (= (alist-get 'opened flooding) 1100)))
            ;; While the flood holds its connections, a client with the token is served.
            (let* ((run (agent-q-mcp-client-test--client
                         "calls" `((calls ((name . "read_file") (arguments (path . ,data)))))))
                   (result (car (agent-q-mcp-client-test--results run))))
              (should result)
              (should-not (agent-q-mcp-client-test--error-p result))
              (should (string-match-p "the token opens" (alist-get 'text result))))
            (agent-q-mcp-client-test--client-finish flood "idle-flood" 60))
        (cancel-timer saver))
      (let* ((states (agent-q-mcp-client-test--events flood "state"))
             (last (car (last states))))
        (message "idle flood: descriptors %d before, peak %d; %d saves, errors %S; open at the end %S; states %S"
                 baseline peak saves save-errors (alist-get 'open last)
                 (mapcar (lambda (s) (cons (alist-get 't s) (alist-get 'open s))) states))
        (should-not save-errors)
        (should (> saves 100))
        ;; 64 unproven connections, the token client's, and the clients' pipes at most.
        (should (< (- peak baseline) 100))
        ;; The server closed every idle connection well before the 30 s were up.
        (should (>= (alist-get 't last) 29))
        (should (= (alist-get 'open last) 0))
        (should (cl-some (lambda (s) (and (< (alist-get 't s) 10) (= (alist-get 'open s) 0)))
                         states))))))

(ert-deftest agent-q-flood-oversized-arguments-cost-emacs-nothing ()
  "A 30 MiB call of small numbers, with the token, is refused before Lisp.
Nothing is queued, and Emacs's resident memory peaks less than 20 MB
higher."
  (agent-q-mcp-client-test--with-server
    (garbage-collect)
    (let* ((before (agent-q-flood-test--rss-kb))
           (hwm-before (agent-q-flood-test--hwm-kb))
           (run (agent-q-mcp-client-test--client
                 "big-call" '((name . "eval_form") (key . "form") (count . 15728640)))))
      (let ((refused (agent-q-mcp-client-test--event run "refused"))
            (after (agent-q-flood-test--rss-kb))
            (hwm-after (agent-q-flood-test--hwm-kb)))
        (message "big call: RSS %d kB -> %d kB, peak %d kB -> %d kB; %S"
                 before after hwm-before hwm-after refused)
        ;; Refused as a whole request (HTTP 413), before it was parsed.
        (should refused)
        (should (string-match-p "413" (alist-get 'error refused)))
        (should-not (agent-q-mcp-client-test--results run))
        ;; The body is scanned as it arrives and refused before it is held whole; no Lisp
        ;; value is made of it.
        (should (< (- after before) (* 20 1024)))
        (should-not agent-q-mcp-client-test--asked)
        (should-not agent-q--pending)
        (should (< (- hwm-after hwm-before) (* 20 1024)))))
    ;; Under the request limits but over the arguments' own: a tool result that says so.
    (let* ((run (agent-q-mcp-client-test--client
                 "big-call" '((name . "eval_form") (key . "form") (count . 150000))))
           (result (car (agent-q-mcp-client-test--results run))))
      (should (agent-q-mcp-client-test--error-p result))
      (should (string-match-p "refused before it reached Emacs.*more than 100000 values"
                              (alist-get 'text result)))
      (should-not agent-q-mcp-client-test--asked))
    ;; And agent-q-max-argument-bytes is the server's cap too.
    (let* ((agent-q-max-argument-bytes 1000)
           (_ (agent-q-mcp--sync-tools))
           (run (agent-q-mcp-client-test--client
                 "big-call" '((name . "eval_form") (key . "form") (count . 1000))))
           (result (car (agent-q-mcp-client-test--results run))))
      (should (agent-q-mcp-client-test--error-p result))
      (should (string-match-p "larger than 1000 bytes" (alist-get 'text result)))
      (should-not agent-q-mcp-client-test--asked))))

(ert-deftest agent-q-flood-400-pending-calls-do-not-stall-emacs ()
  "400 calls waiting for the user never stall Emacs's main loop 100 ms.
They arrive as the server hands them over, all in one drain; every
waiting call is then told it waits for the user's decision."
  (let* ((agent-q-approval-function (lambda (&rest _) :later))
         (agent-q-mcp-confirm-safety-levels '(:cautious :dangerous))
         (agent-q-mcp--calls (make-hash-table))
         (agent-q-mcp--backlog nil)
         (agent-q--pending nil)
         (dir (make-temp-file "agent-q-flood" t)))
    (unwind-protect
        (agent-q-flood-test--measuring-stalls stall
          ;; As `agent-q-mcp--drain' takes them from the server in one burst.
          (setq agent-q-mcp--backlog
                (cl-loop for i from 1 to 400
                         collect `(:call ,i :tool "write_file"
                                         :arguments ,(json-encode
                                                      `((path . ,(expand-file-name
                                                                  (format "f%d" i) dir))
                                                        (content . "x")))
                                         :client "flood 1" :session "s" :progress t)))
          (agent-q-mcp--work)
          (agent-q-flood-test--wait-for
           (lambda () (let ((told 0))
                        (maphash (lambda (_ entry) (when (cdr entry) (cl-incf told)))
                                 agent-q-mcp--calls)
                        (= told 400)))
           30 "every call to be told its status")
          ;; And a while longer, as the prompts are offered and put off.
          (let ((deadline (+ (float-time) 1)))
            (while (< (float-time) deadline) (accept-process-output nil 0.02)))
          (message "400 pending calls: longest main-loop stall %.1f ms (%.1f ms with GC; %.1f ms GC in all)"
                   (* 1000 (car stall)) (* 1000 (cadr stall)) (* 1000 (nth 2 stall)))
          (should (= (hash-table-count agent-q-mcp--calls) 400))
          (should (= (cl-count-if-not (lambda (p) (eq (agent-q--pending-state p) 'done))
                                      agent-q--pending)
                     400))
          (maphash (lambda (_ entry)
                     (should (equal (cdr entry) "waiting for the user's decision in Emacs")))
                   agent-q-mcp--calls)
          (should (< (car stall) 0.1)))
      (agent-q-cancel-pending)
      (delete-directory dir t))))

(ert-deftest agent-q-flood-pending-calls-are-capped-per-client ()
  "A client may have 32 calls waiting; its 33rd is refused at once, saying why.
All clients together may have 192; beyond, calls are refused too, and
Emacs's main loop is never blocked for more than 100 ms meanwhile."
  (agent-q-mcp-client-test--with-server
    (let ((agent-q-mcp-client-test--decide (lambda (_tool _args) :later))
          (target (agent-q-mcp-client-test--file "never.txt")))
      (agent-q-flood-test--measuring-stalls stall
        (let* ((one (agent-q-mcp-client-test--client-start
                     "pending-flood" `((sessions . 1) (per_session . 33) (expect_waiting . 32)
                                       (name . "write_file")
                                       (arguments (path . ,target) (content . "x")))))
               (many nil))
          (agent-q-flood-test--wait-for
           (lambda () (and (agent-q-mcp-client-test--event one "waiting")
                           (agent-q-mcp-client-test--results one)))
           60 "32 calls waiting and one refused" one)
          (let ((results (agent-q-mcp-client-test--results one)))
            (should (= (length results) 1))
            (should (agent-q-mcp-client-test--error-p (car results)))
            (should (string-match-p "already has 32 calls waiting.*(32)"
                                    (alist-get 'text (car results)))))
          ;; 168 calls at once (each holds a connection while it waits): 160 fit.
          (setq many (agent-q-mcp-client-test--client-start
                      "pending-flood" `((sessions . 12) (per_session . 14) (expect_waiting . 160)
                                        (stagger . 0.02)
                                        (name . "write_file")
                                        (arguments (path . ,target) (content . "x")))))
          (agent-q-flood-test--wait-for
           (lambda () (agent-q-mcp-client-test--event many "waiting")) 90 "160 more calls waiting"
           many)
          (agent-q-flood-test--wait-for
           (lambda () (= (length (agent-q-mcp-client-test--results many)) (- 168 160)))
           30 "the refusals beyond 192")
          (should (= (hash-table-count agent-q-mcp--calls) 192))
          (should (cl-every (lambda (r)
                              (and (agent-q-mcp-client-test--error-p r)
                                   (string-match-p "calls from all clients are waiting\\|already has 32"
                                                   (alist-get 'text r))))
                            (agent-q-mcp-client-test--results many)))
          (message "192 pending calls over MCP: longest main-loop stall %.1f ms (%.1f ms with GC; %.1f ms GC in all); descriptors %d"
                   (* 1000 (car stall)) (* 1000 (cadr stall)) (* 1000 (nth 2 stall))
                   (agent-q-flood-test--descriptors))
          (process-send-string (agent-q-mcp-client-test--run-process one) "go\n")
          (process-send-string (agent-q-mcp-client-test--run-process many) "go\n")
          (agent-q-mcp-client-test--client-finish one "pending-flood" 60)
          (agent-q-mcp-client-test--client-finish many "pending-flood" 60)
          (should (< (car stall) 0.1))
          (should-not (file-exists-p target)))))))

(provide 'agent-q-flood-test)

;;; agent-q-flood-test.el ends here
