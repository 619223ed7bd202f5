;;; agent-q-stress-test.el --- Hostile values in every position, each run in a child Emacs  -*- lexical-binding: t -*-

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

;; The stress suite.  Values a model, a tool or a careless caller
;; can hand agent-q -- lists of a million elements, nesting 100,000
;; levels deep in lists, vectors and plists, circular and dotted lists,
;; huge strings, strings with raw bytes, bignums, uninterned symbols,
;; records, hash tables, buffers, markers... -- are put in every argument
;; position of every `agent-q--core-*' function, of
;; `agent-q-execute-tool-calls' (the calls list, a call, its :id, :name,
;; :arguments and argument values), of approval answers, guard answers,
;; handler results and the public API functions that take user data.
;;
;; Each case must end in a clear signal or a failure result naming the
;; problem: never a crash, a hang or a Rust panic, and Emacs must work
;; afterwards.  A crash would kill the test runner, so the cases run in
;; child Emacsen (`emacs --batch -Q'), many per child, two children in
;; parallel.  A child reports each case as it starts and as it ends; when
;; a child dies or stops answering, the case it had started is the one
;; reported, and a new child goes on with the cases after it.
;;
;; The list of core functions is read from the loaded module (every
;; function named `agent-q--core-...'), and a test fails when one has no
;; case table below: a function added to the module must be added here.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'subr-x)
(require 'seq)
(require 'agent-q)
(defvar agent-q-code-start-servers)

;;;; Hostile values

(defun agent-q-stress--nest (n wrap)
  "The value obtained by applying WRAP N times to 1."
  (let ((x 1))
    (dotimes (_ n) (setq x (funcall wrap x)))
    x))

(defconst agent-q-stress--values
  `((long-list ,(lambda () (make-list 1000000 1))
               :limit "more than 1000000 elements")
    (long-vector ,(lambda () (make-vector 1000000 1))
                 :limit "more than 1000000 elements")
    (long-dotted ,(lambda () (let ((l (make-list 1000000 1))) (setcdr (last l) 'tail) l))
                 :refused "dotted\\|more than 1000000 elements")
    (dotted ,(lambda () (cons 1 2)) :refused "dotted")
    (deep-list ,(lambda () (agent-q-stress--nest 100000 #'list))
               :refused "more than 128 levels deep")
    (deep-vector ,(lambda () (agent-q-stress--nest 100000 #'vector))
                 :refused "more than 128 levels deep")
    (deep-plist ,(lambda () (agent-q-stress--nest 100000 (lambda (x) (list :value x))))
                :refused "more than 128 levels deep")
    (depth-126 ,(lambda () (agent-q-stress--nest 126 #'vector))
               :limit "more than 128 levels deep")
    (depth-129 ,(lambda () (agent-q-stress--nest 129 #'vector))
               :refused "more than 128 levels deep")
    (deep-json-text ,(lambda () (concat (make-string 100000 ?\[) (make-string 100000 ?\])))
                    :limit "recursion limit\\|JSON")
    (dag-list ,(lambda () (agent-q-stress--nest 40 (lambda (x) (list x x))))
              :limit "more than 1000000 elements")
    (dag-vector ,(lambda () (agent-q-stress--nest 40 (lambda (x) (vector x x))))
                :limit "more than 1000000 elements")
    (car-circular ,(lambda () (let ((x (list 1 2))) (setcar x x) x))
                  :refused "more than 128 levels deep\\|circular")
    (cdr-circular ,(lambda () (let ((x (list 1 2 3))) (setcdr (cddr x) x) x))
                  :refused "circular")
    (circular-plist ,(lambda () (let ((x (list :value 1))) (setcdr (cdr x) x) x))
                    :refused "circular")
    (circular-vector ,(lambda () (let ((v (make-vector 2 1))) (aset v 1 v) v))
                     :refused "more than 128 levels deep")
    (long-string ,(lambda () (make-string (* 17 1024 1024) ?a))
                 :limit "bytes")
    (many-strings ,(lambda () (make-list 20 (make-string (* 1024 1024) ?a)))
                  :limit "bytes")
    (unibyte-raw ,(lambda () (unibyte-string 255 0 97))
                 :refused "raw bytes")
    (multibyte-raw ,(lambda () (string-to-multibyte (unibyte-string 255 97)))
                   :refused "raw bytes")
    (bignum ,(lambda () (expt 2 100)) :refused "beyond 64 bits")
    (negative-bignum ,(lambda () (- (expt 2 64))) :refused "beyond 64 bits")
    (nan ,(lambda () 0.0e+NaN) :refused "NaN")
    (infinity ,(lambda () 1.0e+INF) :refused "infinity")
    (uninterned ,(lambda () (make-symbol "stress_echo")) :refused "uninterned")
    (uninterned-keyword ,(lambda () (make-symbol ":approved")) :refused "uninterned")
    (record ,(lambda () (record 'agent-q-stress 1 2)) :refused "type agent-q-stress")
    (tool-struct ,(lambda () (agent-q-define-tool "stress_echo" "A struct." nil))
                 :refused "type agent-q-tool")
    (hash-table ,(lambda () (make-hash-table)) :refused "type hash-table")
    (buffer ,(lambda () (get-buffer-create " *agent-q-stress*")) :refused "type buffer")
    (killed-buffer ,(lambda () (let ((b (generate-new-buffer " *agent-q-stress*")))
                                 (kill-buffer b)
                                 b))
                   :refused "type buffer")
    (marker ,(lambda () (with-current-buffer (get-buffer-create " *agent-q-stress*")
                          (point-marker)))
            :refused "type marker")
    ;; Named by `type-of': compiled-function before Emacs 30, byte-code-function since.
    (byte-code ,(lambda () (byte-compile (lambda (x) x)))
               :refused "type \\(compiled\\|byte-code\\)-function")
    (subr ,(lambda () (symbol-function 'car)) :refused "type subr")
    ;; A dotted list (closure ...) before Emacs 30, an object of its own type since.
    (interpreted-closure ,(lambda () (eval '(let ((y 1)) (lambda (x) (+ x y))) t))
                         :refused "dotted\\|type interpreted-function")
    (user-ptr ,(lambda () (agent-q-make-registry)) :refused "type user-ptr")
    (char-table ,(lambda () (make-char-table 'agent-q-stress)) :refused "type char-table")
    (bool-vector ,(lambda () (make-bool-vector 8 t)) :refused "type bool-vector")
    (window ,(lambda () (selected-window)) :refused "type window")
    (propertized ,(lambda () (propertize "stress" 'face 'bold)) :data nil)
    (negative ,(lambda () -1) :data nil)
    (most-positive ,(lambda () most-positive-fixnum) :data nil)
    (huge-float ,(lambda () 1.0e308) :data nil)
    (empty-string ,(lambda () "") :data nil))
  "Hostile values: (NAME MAKER KIND PROBLEM).
MAKER returns a fresh value.  KIND is :refused for a value that can
never cross into the module as data, :limit for one refused or not
depending on where it is (sizes and depths add up), :data for one
that may cross.  PROBLEM is a regexp the message matches when the
value is refused.")

(defconst agent-q-stress--costly
  '(long-list long-vector long-dotted deep-list deep-vector deep-plist dag-list dag-vector
    long-string many-strings deep-json-text)
  "Hostile values made once per child and shared by its cases.
Building them was most of the suite's time.  Nothing under test
modifies them (the module only reads values).")

(defvar agent-q-stress--made nil
  "The costly hostile values made so far in this Emacs: an alist.")

(defun agent-q-stress--value (name)
  "The hostile value NAME: a fresh one, or the shared one for a costly value."
  (if (memq name agent-q-stress--costly)
      (or (cdr (assq name agent-q-stress--made))
          (let ((v (funcall (nth 1 (assq name agent-q-stress--values)))))
            (push (cons name v) agent-q-stress--made)
            v))
    (funcall (nth 1 (assq name agent-q-stress--values)))))

(defun agent-q-stress--kind (name)
  "The kind of the hostile value NAME."
  (nth 2 (assq name agent-q-stress--values)))

(defun agent-q-stress--problem (name)
  "The regexp naming why the hostile value NAME is refused."
  (nth 3 (assq name agent-q-stress--values)))

(defun agent-q-stress--names ()
  "The names of the hostile values."
  (mapcar #'car agent-q-stress--values))

;;;; The fixture a child works in

(defvar agent-q-stress--registry nil
  "The registry of the stress tools, made once per child.")

(defvar agent-q-stress--runs 0
  "How many times a stress tool's handler ran (reset for each case).")

(defvar agent-q-stress--guard-answer nil
  "Function whose value the guard of stress_guarded returns.")

(defvar agent-q-stress--handler-answer nil
  "Function called by stress_result's handler (synchronous or not).")

(defvar agent-q-stress--source-file nil
  "A small Emacs Lisp file for the xref and file functions.")

(defun agent-q-stress--handle (&optional load)
  "A handle on the fixture's small file; loaded when LOAD is non-nil."
  (agent-q-stress--fixture)
  (let ((handle (agent-q--core-file-open agent-q-stress--source-file)))
    (when load
      (agent-q--core-file-load handle 100000 nil))
    handle))

(defun agent-q-stress--mcp ()
  "Make sure the MCP server runs in this Emacs (a child of the suite)."
  (agent-q--ensure-channel)
  (unless (agent-q--core-mcp-status)
    (agent-q--core-mcp-start 0 (agent-q--core-mcp-make-token) 15.0)))

(defun agent-q-stress--ide ()
  "Make sure the IDE companion runs in this Emacs (a child of the suite)."
  (unless (plist-get (agent-q--core-ide-status) :running)
    (agent-q--core-ide-start)))

(defun agent-q-stress--session ()
  "A diff session of two small texts."
  (agent-q--core-diff-session "a\nb\n" "a\nc\n"))

(defun agent-q-stress--journal ()
  "A journal in a file of this Emacs's own, with one entry."
  (let ((j (agent-q--core-journal-open
            (expand-file-name (format "agent-q-stress-journal-%d.jsonl" (emacs-pid))
                              temporary-file-directory)
            100)))
    (agent-q--core-journal-record j '(:agent "a" :file "/f") "a\n" "b\n" nil)
    j))

(defconst agent-q-stress--parameters
  "{\"type\": \"object\", \"properties\": {\"value\": {}}, \"additionalProperties\": false}"
  "The stress tools' parameters: one argument, value, of any type.")

(defun agent-q-stress--echo (args)
  "Handler of the stress tools: count the run, describe ARGS's value."
  (cl-incf agent-q-stress--runs)
  (format "ran with a %s" (type-of (gethash "value" args))))

(defun agent-q-stress--fixture ()
  "The registry of the stress tools, made when first needed."
  (or agent-q-stress--registry
      (let ((reg (agent-q-make-registry)))
        (dolist (def `(("stress_echo" :safe nil)
                       ("stress_danger" :dangerous nil)
                       ("stress_guarded" :safe ,(lambda (_) (funcall agent-q-stress--guard-answer)))))
          (agent-q-register-tool
           (agent-q-define-tool (nth 0 def) "A tool of the stress suite."
                                agent-q-stress--parameters
                                :safety-level (nth 1 def) :categories '(:stress)
                                :guard (nth 2 def) :handler #'agent-q-stress--echo)
           reg))
        (agent-q-register-tool
         (agent-q-define-tool "stress_result" "Returns what the case says." agent-q-stress--parameters
                              :handler (lambda (_)
                                         (cl-incf agent-q-stress--runs)
                                         (funcall agent-q-stress--handler-answer)))
         reg)
        (agent-q-register-tool
         (agent-q-define-tool "stress_async" "Answers through its callback."
                              agent-q-stress--parameters
                              :async t
                              :handler (lambda (callback _)
                                         (cl-incf agent-q-stress--runs)
                                         (when agent-q-stress--handler-answer
                                           (funcall agent-q-stress--handler-answer callback))))
         reg)
        (setq agent-q-stress--source-file (make-temp-file "agent-q-stress" nil ".el"
                                                          "(defun stress-f () (car nil))\n"))
        (setq agent-q-stress--registry reg))))

(defun agent-q-stress--options-plist ()
  "The plist of the executor's options for the stress calls."
  (list :max-result-chars 20000 :max-argument-bytes (* 16 1024 1024)))

(defun agent-q-stress--call-args (call)
  "The arguments of `agent-q--core-call-start' (and -execute) for CALL."
  (list (agent-q-stress--fixture) call (agent-q--core-options (agent-q-stress--options-plist))))

(defun agent-q-stress--pending (tool)
  "A call of TOOL started with the asynchronous driver and waiting: its PENDING."
  (let ((step (apply #'agent-q--core-call-start
                     (agent-q-stress--call-args
                      `(:id "pending" :name ,tool :arguments (:value 1))))))
    (unless (memq (car step) '(:ask :run))
      (error "The stress call of %s did not wait: %S" tool step))
    (nth 1 step)))

;;;; Outcomes and checks

(defun agent-q-stress--print (value)
  "VALUE printed on one short line, whatever it is."
  (let ((print-circle nil) (print-level 4) (print-length 8) (print-escape-newlines t))
    (truncate-string-to-width (condition-case err (prin1-to-string value)
                                (error (format "<unprintable: %s>" (car err))))
                              300 nil nil "...")))

(defun agent-q-stress--outcome (thunk)
  "Call THUNK: (:returned VALUE) or (:signalled CONDITION)."
  (condition-case err
      (list :returned (funcall thunk))
    (error (list :signalled err))))

(defun agent-q-stress--message (condition)
  "The message of CONDITION, printed with bounds."
  (condition-case nil
      (agent-q--error-message condition)
    (error (agent-q-stress--print condition))))

(defun agent-q-stress--check-signal (outcome &optional also)
  "Nil when OUTCOME is acceptable from a function given a hostile value.
It is acceptable to return, or to signal an `agent-q-error' (or one
of the error symbols in ALSO) with a message: never a Rust panic, a
type error of the module crate, or a signal from deeper down."
  (pcase outcome
    (`(:returned ,_) nil)
    (`(:signalled ,err)
     (let ((conditions (get (car err) 'error-conditions)))
       (cond
        ((not (or (memq 'agent-q-error conditions)
                  (cl-intersection also conditions)))
         (format "signalled %s, not an agent-q-error" (agent-q-stress--print err)))
        ((string-empty-p (agent-q-stress--message err))
         (format "signalled without a message: %s" (agent-q-stress--print err))))))))

(defun agent-q-stress--check-results (outcome ncalls hostile &optional must-fail also)
  "Check that OUTCOME is NCALLS well-formed results, the first about HOSTILE.
Return nil when it is, else what is wrong.
A refused value (or, with MUST-FAIL, any value) must give a failure
whose content names the problem (matches its regexp, or ALSO when
non-nil).  Content is bounded in length."
  (pcase outcome
    (`(:signalled ,err)
     (format "signalled %s instead of returning results"
             (agent-q-stress--print err)))
    (`(:returned ,results)
     (cond
      ((not (and (proper-list-p results) (= (length results) ncalls)))
       (format "expected %d result(s), got %s" ncalls (agent-q-stress--print results)))
      ((cl-some (lambda (r) (not (and (plist-member r :success)
                                      (stringp (plist-get r :content))
                                      (< (length (plist-get r :content)) 30000))))
                results)
       (format "a malformed or unbounded result: %s" (agent-q-stress--print results)))
      ((and (or must-fail (eq (agent-q-stress--kind hostile) :refused))
            (plist-get (car results) :success))
       (format "succeeded with a refused value: %s" (agent-q-stress--print (car results))))
      ((and (not (plist-get (car results) :success))
            (memq (agent-q-stress--kind hostile) '(:refused :limit))
            (not must-fail)
            (not (string-match-p (agent-q-stress--problem hostile)
                                 (plist-get (car results) :content)))
            (not (and also (string-match-p also (plist-get (car results) :content)))))
       (format "the failure does not name the problem (%s): %s"
               (agent-q-stress--problem hostile)
               (agent-q-stress--print (plist-get (car results) :content))))))))

;;;; Case tables

(defun agent-q-stress--core-table ()
  "Each `agent-q--core-*' function with a function giving benign arguments.
Every core function the module defines must be here (see the test
`agent-q-stress-test-every-core-function-has-cases')."
  (let ((reg #'agent-q-stress--fixture)
        (call '(:id "c" :name "stress_echo" :arguments (:value 1))))
    `((agent-q--core-call-cancel . ,(lambda () (list (agent-q-stress--pending "stress_danger") "stop")))
      (agent-q--core-call-decide . ,(lambda () (list (agent-q-stress--pending "stress_danger") :denied)))
      (agent-q--core-call-finish . ,(lambda () (list (agent-q-stress--pending "stress_async") :success "ok")))
      (agent-q--core-call-info . ,(lambda () (list (agent-q-stress--pending "stress_danger"))))
      (agent-q--core-call-reviewed
       . ,(lambda () (list (agent-q-stress--pending "stress_async") '(1) nil '(2))))
      (agent-q--core-call-start . ,(lambda () (agent-q-stress--call-args call)))
      (agent-q--core-channel-close . ,(lambda () nil))
      (agent-q--core-channel-drained . ,(lambda () nil))
      (agent-q--core-audit-append
       . ,(lambda () (list (expand-file-name (format "agent-q-stress-audit-%d.jsonl" (emacs-pid))
                                             temporary-file-directory)
                           "{\"event\":\"stress\"}")))
      (agent-q--core-command-decide . ,(lambda () (list "git status; ls" '("rm *") nil '("git status"))))
      (agent-q--core-fetch-decide . ,(lambda () (list "https://example.org/" nil nil '("example.org"))))
      (agent-q--core-command-suggest . ,(lambda () (list "git status; git diff HEAD" '("git status"))))
      (agent-q--core-command-grant . ,(lambda () (list "git status; git diff HEAD")))
      (agent-q--core-call-time-out . ,(lambda () (list (agent-q-stress--pending "stress_danger") 600)))
      (agent-q--core-fetch-suggest . ,(lambda () (list "https://docs.example.org/a")))
      (agent-q--core-channel-open . ,(lambda () (list (make-pipe-process :name "agent-q-stress"
                                                                           :noquery t))))
      (agent-q--core-decide . ,(lambda () (list (funcall reg) "stress_echo" :approved '(:value 1))))
      (agent-q--core-diff-apply . ,(lambda () (list "a\nb\n" "a\nc\n" '(accept))))
      (agent-q--core-diff-session . ,(lambda () (list "a\nb\n" "a\nc\n")))
      (agent-q--core-diff-session-apply . ,(lambda () (list (agent-q-stress--session) '(accept))))
      (agent-q--core-diff-session-changes . ,(lambda () (list (agent-q-stress--session) 0)))
      (agent-q--core-diff-session-count . ,(lambda () (list (agent-q-stress--session))))
      (agent-q--core-diff-session-hunk . ,(lambda () (list (agent-q-stress--session) 0)))
      (agent-q--core-diff-session-summary . ,(lambda () (list (agent-q-stress--session))))
      (agent-q--core-diff-hunks . ,(lambda () (list "a\nb\n" "a\nc\n")))
      (agent-q--core-journal-open
       . ,(lambda () (list (expand-file-name (format "agent-q-stress-journal-%d.jsonl" (emacs-pid))
                                             temporary-file-directory)
                           100)))
      (agent-q--core-journal-record
       . ,(lambda () (list (agent-q-stress--journal) '(:agent "a" :file "/f") "a\n" "c\n" nil)))
      (agent-q--core-trust-add . ,(lambda () (list "stress" nil "npm test *" 60)))
      (agent-q--core-trust-end . ,(lambda () (list 1)))
      (agent-q--core-trust-list . ,(lambda () nil))
      (agent-q--core-trust-decide
       . ,(lambda () (list "stress" "s" "edit" "/w/f" "/w" nil 'allow)))
      (agent-q--core-journal-entries . ,(lambda () (list (agent-q-stress--journal))))
      (agent-q--core-journal-lost . ,(lambda () (list (agent-q-stress--journal))))
      (agent-q--core-journal-set-max . ,(lambda () (list (agent-q-stress--journal) 50)))
      (agent-q--core-journal-diff . ,(lambda () (list (agent-q-stress--journal) 1)))
      (agent-q--core-journal-revert . ,(lambda () (list (agent-q-stress--journal) '(1) "b\n")))
      (agent-q--core-journal-entry . ,(lambda () (list (agent-q-stress--journal) 1)))
      (agent-q--core-journal-rows
       . ,(lambda () (list (agent-q-stress--journal) '(:agent "a") '(19 10 10 24 40 10) "/home")))
      (agent-q--core-journal-begin-turn
       . ,(lambda () (list (agent-q-stress--journal) '(:agent "a" :session "s") "Fix it.\nMore.")))
      (agent-q--core-journal-select . ,(lambda () (list (agent-q-stress--journal) '(:file "/f"))))
      (agent-q--core-diff-locate . ,(lambda () (list "a\nb\n" "b\n")))
      (agent-q--core-gate-edit-text
       . ,(lambda () (list "claude" "Edit" "{\"file_path\":\"/tmp/f\",\"old_string\":\"b\",\"new_string\":\"B\"}"
                           "a\nb\n" nil)))
      (agent-q--core-gate-patch-section . ,(lambda () (list "f.txt" "a\n" "b\n" nil)))
      (agent-q--core-gate-walk-search
       . ,(lambda () (list temporary-file-directory (list "*.agent-q-stress-none")
                           (list "/\\.env\\'") nil)))
      (agent-q--core-execute . ,(lambda () (let ((args (agent-q-stress--call-args call)))
                                              (setf (nth 1 args) (list call))
                                              args)))
      (agent-q--core-execute-chunk . ,(lambda () (let ((args (agent-q-stress--call-args call)))
                                                    (list (nth 0 args) (list call) 1 (nth 2 args)))))
      (agent-q--core-options . ,(lambda () (list (agent-q-stress--options-plist))))
      (agent-q--core-batch-length . ,(lambda () (list (list call call))))
      (agent-q--core-failure . ,(lambda () (list call "it failed")))
      (agent-q--core-file-bytes . ,(lambda () (list (agent-q-stress--handle t))))
      (agent-q--core-file-close . ,(lambda () (list (agent-q-stress--handle))))
      (agent-q--core-file-info . ,(lambda () (list (agent-q-stress--handle))))
      (agent-q--core-file-load . ,(lambda () (list (agent-q-stress--handle) 100000 nil)))
      (agent-q--core-file-open . ,(lambda () (progn (agent-q-stress--fixture)
                                                     (list agent-q-stress--source-file))))
      (agent-q--core-file-page . ,(lambda () (list (agent-q-stress--handle t) 1 10 0 1000)))
      (agent-q--core-file-pin . ,(lambda () (list (file-truename temporary-file-directory))))
      (agent-q--core-file-write-pinned
       . ,(lambda ()
            (let* ((dir (file-name-as-directory (file-truename (make-temp-file "agent-q-stress-pin" t))))
                   (pin (agent-q--core-file-pin dir)))
              (list dir (nth 0 pin) (nth 1 pin) '("sub" "f.txt") "written" #o600 nil))))
      (agent-q--core-file-scan . ,(lambda () (list (agent-q-stress--handle) 100000 1)))
      (agent-q--core-file-text . ,(lambda () (list (agent-q-stress--handle t))))
      (agent-q--core-filter . ,(lambda () (list (funcall reg) :dangerous '(:stress) nil)))
      (agent-q--core-generation . ,(lambda () (list (funcall reg))))
      (agent-q--core-get . ,(lambda () (list (funcall reg) "stress_echo")))
      (agent-q--core-handler . ,(lambda () (list (funcall reg) "stress_echo")))
      (agent-q--core-make-registry . ,(lambda () nil))
      (agent-q--core-metrics . ,(lambda () (list (funcall reg) nil)))
      (agent-q--core-names . ,(lambda () (list (funcall reg) nil)))
      (agent-q--core-mcp-complete . ,(lambda () (agent-q-stress--mcp) (list 1 nil "done")))
      (agent-q--core-mcp-gate-answer . ,(lambda () (agent-q-stress--mcp) (list 1 'deny "no")))
      (agent-q--core-mcp-set-gating . ,(lambda () (agent-q-stress--mcp) (list t)))
      (agent-q--core-mcp-make-token . ,(lambda () nil))
      (agent-q--core-mcp-set-max-argument-bytes . ,(lambda () (list 1000000)))
      (agent-q--core-mcp-set-status . ,(lambda () (agent-q-stress--mcp) (list 1 "waiting")))
      (agent-q--core-mcp-set-tools . ,(lambda () (agent-q-stress--mcp) (list (funcall reg) :dangerous)))
      (agent-q--core-mcp-start . ,(lambda ()
                                    ;; Stopped first, so that each case really starts one.
                                    (agent-q--ensure-channel)
                                    (agent-q--core-mcp-stop)
                                    (list 0 (agent-q--core-mcp-make-token) 15.0)))
      (agent-q--core-mcp-status . ,(lambda () nil))
      (agent-q--core-mcp-stop . ,(lambda () nil))
      (agent-q--core-mcp-await-stopped . ,(lambda () nil))
      (agent-q--core-mcp-take . ,(lambda () (agent-q-stress--mcp) nil))
      (agent-q--core-mcp-stopped-reason . ,(lambda () nil))
      (agent-q--core-ide-start . ,(lambda ()
                                    ;; Stopped first, so that each case really starts one.
                                    (agent-q--core-ide-stop)
                                    nil))
      (agent-q--core-ide-stop . ,(lambda () nil))
      (agent-q--core-ide-await-stopped . ,(lambda () nil))
      (agent-q--core-ide-status . ,(lambda () nil))
      (agent-q--core-ide-take . ,(lambda () (agent-q-stress--ide) nil))
      (agent-q--core-ide-answer . ,(lambda () (agent-q-stress--ide) (list 1 '(:rejected nil))))
      (agent-q--core-ide-set-context
       . ,(lambda ()
            (agent-q-stress--ide)
            (list '(:files ((:path "/tmp/agent-q-stress.el" :timestamp 1 :active t
                             :line 1 :column 0 :selected "x"))))))
      (agent-q--core-ide-gemini-discovery . ,(lambda () (list 1234 "token" '("/tmp"))))
      (agent-q--core-ide-claude-lock . ,(lambda () (list "token" '("/tmp") 1234)))
      (agent-q--core-regex-search . ,(lambda () (list "hello" "l+" nil 10)))
      (agent-q--core-regex-translate . ,(lambda () (list "l+")))
      (agent-q--core-register . ,(lambda () (list (agent-q-make-registry)
                                                   '(:name "stress_new" :description "New."
                                                     :parameters nil :safety-level :safe)
                                                   #'agent-q-stress--echo nil nil nil)))
      (agent-q--core-find-hard-link . ,(lambda () (list temporary-file-directory 1 1)))
      (agent-q--core-visible . ,(lambda () (list "a\u202eb\nc")))
      (agent-q--core-code-locations
       . ,(lambda () (list 'references "x" "eglot: s" "/tmp"
                           (list (vector "/tmp/agent-q-stress-none.py" 1 0 "a\u202eb" "f" t t))
                           t 10)))
      (agent-q--core-code-outline . ,(lambda () (list "a.py" "imenu" (list (vector "C" 5 1 9 nil)) 10)))
      (agent-q--core-code-symbols . ,(lambda () (list "q" "s" nil (list (vector "n" 12 "/a" 1 nil)) 10)))
      (agent-q--core-code-diagnostics
       . ,(lambda () (list "a.py" "flymake" nil (list (vector "/a" 1 0 1 "s" "c" "m")) 10 '("/b"))))
      (agent-q--core-code-project-check
       . ,(lambda () (list "/p" 1 2 3 '("/p/a") '("/p/b") '("/p/c") '("/p/d") t 50 3)))
      (agent-q--core-code-hover . ,(lambda () (list "a.py:1:1" "s" "text")))
      (agent-q--core-code-column . ,(lambda () (list "a\U0001F600b" 3 t)))
      (agent-q--core-code-rename-check . ,(lambda () (list "new_name")))
      (agent-q--core-code-rename-files
       . ,(lambda () (list "{\"changes\":{\"file:///p/a.py\":[{\"range\":{\"start\":{\"line\":0,\"character\":0},\"end\":{\"line\":0,\"character\":1}},\"newText\":\"z\"}]}}")))
      (agent-q--core-code-rename-apply
       . ,(lambda () (list "{\"changes\":{\"file:///p/a.py\":[{\"range\":{\"start\":{\"line\":0,\"character\":0},\"end\":{\"line\":0,\"character\":1}},\"newText\":\"z\"}]}}"
                           "/p/a.py" "abc\n")))
      (agent-q--core-code-rename-report
       . ,(lambda () (list "a.py:1:1 (x)" "y" "s" "/p" (list (vector "/p/a.py" "buffer" nil (list (vector 1 1 'accepted)))) nil)))
      (agent-q--core-remove . ,(lambda () (list (agent-q-make-registry) "stress_echo")))
      (agent-q--core-restore . ,(lambda () (list (agent-q-make-registry)
                                                  (agent-q--core-snapshot (funcall reg) nil))))
      (agent-q--core-rule-glob-broad . ,(lambda () (list "/home/u/*" "/home/u")))
      (agent-q--core-rule-glob-covers . ,(lambda () (list "/home/u/**/src" "/home/u/a/src/x.el")))
      (agent-q--core-rule-glob-split . ,(lambda () (list "/home/u/*/docs")))
      (agent-q--core-schemas . ,(lambda () (list (funcall reg) nil :openai nil)))
      (agent-q--core-search-buffer . ,(lambda () (list "l+" t nil 10 100 nil)))
      (agent-q--core-set-enabled . ,(lambda () (list (funcall reg) "stress_echo" t)))
      (agent-q--core-snapshot . ,(lambda () (list (funcall reg) nil)))
      (agent-q--core-validate . ,(lambda () (list (funcall reg) "stress_echo" '(:value 1))))
      (agent-q--core-version . ,(lambda () nil))
      (agent-q--core-xref-cache-info . ,(lambda () nil))
      (agent-q--core-xref-clear-cache . ,(lambda () nil))
      (agent-q--core-xref-index . ,(lambda () (list (list agent-q-stress--source-file) nil)))
      (agent-q--core-xref-indexing-p . ,(lambda () nil))
      (agent-q--core-xref-scan . ,(lambda () (list (list agent-q-stress--source-file) "car" 'call nil nil)))
      (agent-q--core-xref-scan-cancel . ,(lambda () (list 1)))
      (agent-q--core-xref-scan-finished . ,(lambda () nil))
      (agent-q--core-xref-scan-start . ,(lambda ()
                                           (agent-q--ensure-channel)
                                           (list (list agent-q-stress--source-file) "car" 'call nil nil))))))

(defun agent-q-stress--module-functions ()
  "Return the functions of the loaded module, named `agent-q--core-...', sorted."
  (let (found)
    (mapatoms (lambda (s)
                (when (and (fboundp s) (string-prefix-p "agent-q--core-" (symbol-name s)))
                  (push s found))))
    (sort found (lambda (a b) (string< (symbol-name a) (symbol-name b))))))

(defun agent-q-stress--core-arity (fn)
  "The number of arguments the core function FN takes (module functions are fixed)."
  (car (func-arity fn)))

(defun agent-q-stress--core-cases ()
  "Every core function, every argument position, every hostile value."
  (let (cases)
    (dolist (entry (agent-q-stress--core-table))
      (let ((fn (car entry)) (benign (cdr entry)))
        (if (zerop (agent-q-stress--core-arity fn))
            (push (cons (format "%s/called" fn)
                        (lambda () (agent-q-stress--check-signal
                                    (agent-q-stress--outcome (lambda () (funcall fn))))))
                  cases)
          (dotimes (position (agent-q-stress--core-arity fn))
            (dolist (hostile (agent-q-stress--names))
              (push (cons (format "%s/%d/%s" fn position hostile)
                          (lambda ()
                            (let ((args (funcall benign)))
                              (setf (nth position args) (agent-q-stress--value hostile))
                              (agent-q-stress--check-signal
                               (agent-q-stress--outcome (lambda () (apply fn args)))))))
                    cases))))))
    (nreverse cases)))

(defun agent-q-stress--execute (calls &optional async)
  "Run CALLS in the stress registry and return the outcome.
With ASYNC, through `agent-q-execute-tool-calls-async', waiting (timers
run meanwhile) until its callback has the results."
  (let ((registry (agent-q-stress--fixture)))
    (if (not async)
        (agent-q-stress--outcome (lambda () (agent-q-execute-tool-calls calls registry)))
      (let* ((done nil)
             (results nil)
             (outcome (agent-q-stress--outcome
                       (lambda () (agent-q-execute-tool-calls-async
                                   calls (lambda (r) (setq done t results r)) registry))))
             (deadline (+ (float-time) 30)))
        (if (eq (car outcome) :signalled)
            outcome
          (while (and (not done) (< (float-time) deadline))
            (accept-process-output nil 0.005))
          (if done
              (list :returned results)
            (list :signalled '(error "The asynchronous batch never delivered its results"))))))))

(defconst agent-q-stress--sexp-values '(dotted nan infinity interpreted-closure)
  "Refused values the module still reads as s-expressions (only JSON refuses them).")

(defun agent-q-stress--execute-cases ()
  "Make tool calls with a hostile value in each position.
They go through `agent-q-execute-tool-calls' and its asynchronous twin."
  (let (cases)
    (dolist (hostile (agent-q-stress--names))
      (dolist (async '(nil t))
        (let ((add (lambda (where fn)
                     (push (cons (format "execute%s/%s/%s" (if async "-async" "") where hostile) fn)
                           cases)))
              (v (lambda () (agent-q-stress--value hostile))))
          ;; The calls list itself: a clear signal, or one result per call.
          (funcall add "calls"
                   (lambda ()
                     (let ((outcome (agent-q-stress--execute (funcall v) async)))
                       (or (agent-q-stress--check-signal outcome)
                           (pcase outcome
                             (`(:returned ,results)
                              (unless (proper-list-p results)
                                (format "returned %s" (agent-q-stress--print results)))))))))
          (funcall add "call"
                   (lambda () (agent-q-stress--check-results
                               (agent-q-stress--execute (list (funcall v)) async) 1 hostile t)))
          (funcall add "call-then-valid"
                   (lambda ()
                     (let* ((outcome (agent-q-stress--execute
                                      (list (funcall v)
                                            '(:id "ok" :name "stress_echo" :arguments (:value 1)))
                                      async))
                            (problem (agent-q-stress--check-results outcome 2 hostile t)))
                       (or problem
                           (and (not (plist-get (nth 1 (cadr outcome)) :success))
                                "the valid call after a hostile one failed")))))
          (dolist (field '(:id :name :arguments :client))
            (funcall add (substring (symbol-name field) 1)
                     (lambda ()
                       (let ((call (list :id "x" :name "stress_echo" :arguments '(:value 1))))
                         (setq call (plist-put call field (funcall v)))
                         (agent-q-stress--check-results
                          (agent-q-stress--execute (list call) async) 1
                          ;; An id or a client that reads as an s-expression is printed or ignored.
                          (if (and (memq field '(:id :client))
                                   (memq hostile agent-q-stress--sexp-values))
                              'propertized
                            hostile)
                          (eq field :name)
                          (pcase field
                            (:id ":id")
                            (:client ":client")
                            (:arguments "arguments must be an object")))))))
          (funcall add "argument-value"
                   (lambda ()
                     (setq agent-q-stress--runs 0)
                     (let* ((outcome (agent-q-stress--execute
                                      `((:id "v" :name "stress_echo" :arguments (:value ,(funcall v))))
                                      async))
                            (problem (agent-q-stress--check-results outcome 1 hostile)))
                       (or problem
                           (and (eq (agent-q-stress--kind hostile) :refused)
                                (/= agent-q-stress--runs 0)
                                "the handler ran with a refused value")))))
          (funcall add "argument-in-array"
                   (lambda ()
                     (agent-q-stress--check-results
                      (agent-q-stress--execute
                       `((:id "v" :name "stress_echo" :arguments (:value [1 (:a ,(funcall v))])))
                       async)
                      1 hostile)))
          (dolist (var '(agent-q-max-result-chars agent-q-max-argument-bytes
                         agent-q-confirm-safety-levels agent-q-client))
            (funcall add (symbol-name var)
                     (lambda ()
                       (let ((outcome (cl-progv (list var) (list (funcall v))
                                        (agent-q-stress--execute
                                         '((:id "v" :name "stress_echo" :arguments (:value 1)))
                                         async))))
                         (or (agent-q-stress--check-signal outcome)
                             (pcase outcome
                               (`(:returned ,results)
                                (unless (and (proper-list-p results) (= 1 (length results)))
                                  (format "returned %s" (agent-q-stress--print results))))))))))
          (funcall add "registry"
                   (lambda ()
                     (let ((outcome (if async
                                        (let ((done nil))
                                          (agent-q-stress--outcome
                                           (lambda ()
                                             (agent-q-execute-tool-calls-async
                                              '((:id "v" :name "stress_echo" :arguments (:value 1)))
                                              (lambda (r) (setq done r))
                                              (funcall v))
                                             (let ((deadline (+ (float-time) 30)))
                                               (while (and (not done) (< (float-time) deadline))
                                                 (accept-process-output nil 0.005)))
                                             (or done (error "No results")))))
                                      (agent-q-stress--outcome
                                       (lambda () (agent-q-execute-tool-calls
                                                   '((:id "v" :name "stress_echo" :arguments (:value 1)))
                                                   (funcall v)))))))
                       (or (agent-q-stress--check-signal outcome)
                           (pcase outcome
                             (`(:returned ,r)
                              (unless (or (eq hostile 'user-ptr) ; a registry: the tool is unknown there
                                          (cl-every (lambda (x) (not (plist-get x :success))) r))
                                (format "accepted a hostile registry: %s"
                                        (agent-q-stress--print r))))))))))))
    (nreverse cases)))

(defun agent-q-stress--not-run (outcome &optional may-run)
  "Nil when OUTCOME is one result that did not run the handler and failed.
With MAY-RUN, it is only checked to be a well-formed, bounded result."
  (if may-run
      (agent-q-stress--check-results outcome 1 'propertized)
    (or (agent-q-stress--check-results outcome 1 'dotted t)
        (and (/= agent-q-stress--runs 0) "the handler ran"))))

(defun agent-q-stress--approval-cases ()
  "Approval functions answering hostile values, through both drivers."
  (let (cases)
    (dolist (hostile (agent-q-stress--names))
      (dolist (shape `((answer . ,(lambda (v) v))
                       (modified . ,(lambda (v) (list :modified v)))
                       (denied . ,(lambda (v) (list :denied v)))
                       (approved-with . ,(lambda (v) (list :approved v)))
                       (modified-args . ,(lambda (v) (list :modified (list :value 1 :other v))))))
        (let ((answer (lambda () (funcall (cdr shape) (agent-q-stress--value hostile))))
              ;; (:modified "") approves running with no arguments: "" is the empty
              ;; JSON text some clients send for them.  Every other answer denies.
              (may-run (and (eq (car shape) 'modified) (eq hostile 'empty-string))))
          (push (cons (format "approval/%s/%s" (car shape) hostile)
                      (lambda ()
                        (setq agent-q-stress--runs 0)
                        (let ((agent-q-approval-function (lambda (&rest _) (funcall answer))))
                          (agent-q-stress--not-run
                           (agent-q-stress--execute
                            '((:id "a" :name "stress_danger" :arguments (:value 1))))
                           may-run))))
                cases)
          (push (cons (format "approval-async-api/%s/%s" (car shape) hostile)
                      (lambda ()
                        (setq agent-q-stress--runs 0)
                        (let ((agent-q-approval-function (lambda (&rest _) (funcall answer))))
                          (agent-q-stress--not-run
                           (agent-q-stress--execute
                            '((:id "a" :name "stress_danger" :arguments (:value 1)))
                            t)
                           may-run))))
                cases)
          (push (cons (format "approval-async/%s/%s" (car shape) hostile)
                      (lambda ()
                        (setq agent-q-stress--runs 0)
                        (let* ((pending (agent-q-stress--pending "stress_danger"))
                               (outcome (agent-q-stress--outcome
                                         (lambda () (agent-q--core-call-decide pending (funcall answer))))))
                          (or (agent-q-stress--check-signal outcome)
                              (pcase outcome
                                (`(:returned (:done ,result))
                                 (agent-q-stress--not-run (list :returned (list result)) may-run))
                                (`(:returned ,other)
                                 (format "the decision gave %s" (agent-q-stress--print other))))))))
                cases)
          (push (cons (format "request-approval/%s/%s" (car shape) hostile)
                      (lambda ()
                        (let* ((agent-q-approval-function (lambda (&rest _) (funcall answer)))
                               (outcome (agent-q-stress--outcome
                                         (lambda () (agent-q-request-approval
                                                     "stress_echo" '(:value 1) "why"
                                                     (agent-q-stress--fixture))))))
                          (or (agent-q-stress--check-signal outcome)
                              (pcase outcome
                                (`(:returned (:denied ,(pred stringp))) nil)
                                (`(:returned (:approved "" :modified t)) (and (not may-run) "approved"))
                                (`(:returned ,other)
                                 (format "not denied: %s" (agent-q-stress--print other))))))))
                cases)))
      (dolist (how '(signal throw))
        (dolist (circle '(nil t))
          (let ((approval (lambda (&rest _)
                            ;; The user's print-circle, as the prompt would see it.
                            (setq print-circle circle)
                            (if (eq how 'signal)
                                (signal 'error (agent-q-stress--value hostile))
                              (throw 'agent-q-stress (agent-q-stress--value hostile))))))
            (dolist (async '(nil t))
              (push (cons (format "approval-%s%s%s/%s" how (if async "-async-api" "")
                                  (if circle "/print-circle" "") hostile)
                          (lambda ()
                            (setq agent-q-stress--runs 0)
                            (let ((agent-q-approval-function approval)
                                  (print-circle circle))
                              (agent-q-stress--not-run
                               (agent-q-stress--execute
                                '((:id "a" :name "stress_danger" :arguments (:value 1)))
                                async)))))
                    cases))
            (push (cons (format "request-approval-%s%s/%s" how (if circle "/print-circle" "") hostile)
                        (lambda ()
                          (let* ((agent-q-approval-function approval)
                                 (print-circle circle)
                                 (outcome (agent-q-stress--outcome
                                           (lambda () (agent-q-request-approval
                                                       "stress_echo" '(:value 1) "why"
                                                       (agent-q-stress--fixture))))))
                            (or (agent-q-stress--check-signal outcome)
                                (pcase outcome
                                  (`(:returned (:denied ,(pred stringp))) nil)
                                  (`(:returned ,other)
                                   (format "not denied: %s" (agent-q-stress--print other))))))))
                  cases)))))
    (nreverse cases)))

(defun agent-q-stress--guard-cases ()
  "Guards answering or signalling hostile values."
  (let (cases)
    (dolist (hostile (agent-q-stress--names))
      (dolist (how '(returns signals))
        (push (cons (format "guard-%s/%s" how hostile)
                    (lambda ()
                      (setq agent-q-stress--runs 0)
                      (let ((agent-q-approval-function (lambda (&rest _) :denied))
                            (agent-q-stress--guard-answer
                             (lambda ()
                               (if (eq how 'returns)
                                   (agent-q-stress--value hostile)
                                 (signal 'error (list (agent-q-stress--value hostile)))))))
                        (agent-q-stress--not-run
                         (agent-q-stress--execute
                          '((:id "g" :name "stress_guarded" :arguments (:value 1))))))))
              cases)))
    (nreverse cases)))

(defun agent-q-stress--handler-cases ()
  "Handlers returning or signalling hostile values, with `print-circle' nil and t."
  (let (cases)
    (dolist (hostile (agent-q-stress--names))
      (dolist (circle '(nil t))
        (dolist (how `((returns . ,(lambda (v) v))
                       (signals . ,(lambda (v) (signal 'error (list v))))
                       (signals-data . ,(lambda (v) (signal 'error v)))
                       (fails . ,(lambda (v) (signal 'agent-q-tool-failure (list v))))
                       (throws . ,(lambda (v) (throw 'agent-q-stress v)))))
          (push (cons (format "handler-%s%s/%s" (car how) (if circle "/print-circle" "") hostile)
                      (lambda ()
                        (let ((print-circle circle)
                              (agent-q-stress--handler-answer
                               (lambda () (funcall (cdr how) (agent-q-stress--value hostile)))))
                          (agent-q-stress--check-results
                           (agent-q-stress--execute
                            '((:id "h" :name "stress_result" :arguments (:value 1))))
                           1 'propertized))))
                cases))
        (dolist (how `((value . ,(lambda (cb v) (funcall cb v)))
                       (failure . ,(lambda (cb v) (funcall cb v :failure)))
                       (status . ,(lambda (cb v) (funcall cb "x" v)))))
          (push (cons (format "async-%s%s/%s" (car how) (if circle "/print-circle" "") hostile)
                      (lambda ()
                        (let ((print-circle circle)
                              (agent-q-stress--handler-answer
                               ;; The callback may run later (a timer, a process filter), with
                               ;; the user's print-circle.
                               (lambda (cb) (let ((print-circle circle))
                                              (funcall (cdr how) cb (agent-q-stress--value hostile))))))
                          (agent-q-stress--check-results
                           (agent-q-stress--execute
                            '((:id "h" :name "stress_async" :arguments (:value 1))))
                           1 'propertized))))
                cases)
          (push (cons (format "async-finish-%s%s/%s" (car how) (if circle "/print-circle" "") hostile)
                      (lambda ()
                        (let* ((print-circle circle)
                               (pending (agent-q-stress--pending "stress_async"))
                               (status-value (pcase (car how)
                                               ('value (list :success (agent-q-stress--value hostile)))
                                               ('failure (list :failure (agent-q-stress--value hostile)))
                                               ('status (list (agent-q-stress--value hostile) "x"))))
                               (outcome (agent-q-stress--outcome
                                         (lambda () (apply #'agent-q--core-call-finish pending status-value)))))
                          (or (agent-q-stress--check-signal outcome)
                              (pcase outcome
                                (`(:returned (:done ,result))
                                 (agent-q-stress--check-results (list :returned (list result)) 1 'propertized))
                                (`(:returned ,other)
                                 (format "finishing gave %s" (agent-q-stress--print other))))))))
                cases))
        (push (cons (format "hook-signals%s/%s" (if circle "/print-circle" "") hostile)
                    (lambda ()
                      (let ((print-circle circle)
                            (agent-q-tool-execution-functions
                             (list (lambda (&rest _) (signal 'error (list (agent-q-stress--value hostile)))))))
                        (agent-q-stress--check-results
                         (agent-q-stress--execute '((:id "h" :name "stress_echo" :arguments (:value 1))))
                         1 'propertized))))
              cases)))
    (nreverse cases)))

(defmacro agent-q-stress--share (n)
  "Expand to a form sharing its parts N levels deep, printing to 2^N leaves."
  (let ((x 1))
    (dotimes (_ n) (setq x (list 'cons x x)))
    x))

(defvar agent-q-stress--described nil
  "A variable holding a hostile value for describe_symbol.")

(defconst agent-q-stress--form-texts
  `((deep-parens . ,(lambda () (concat (make-string 100000 ?\() (make-string 100000 ?\)))))
    (deep-brackets . ,(lambda () (concat (make-string 100000 ?\[) (make-string 100000 ?\]))))
    (deep-quotes . ,(lambda () (concat (make-string 100000 ?') "x")))
    (deep-backquotes . ,(lambda () (concat (make-string 100000 ?`) "x")))
    (deep-labels . ,(lambda () (concat (apply #'concat (make-list 50000 "#1=")) "x")))
    (deep-char-escapes . ,(lambda () (concat "?" (apply #'concat (make-list 50000 "\\C-")) "a")))
    (deep-string-escapes . ,(lambda () (concat "\"" (apply #'concat (make-list 50000 "\\M-")) "a\"")))
    (deep-caret-escapes . ,(lambda () (concat "?" (apply #'concat (make-list 50000 "\\^")) "a")))
    (quote-paren-chain . ,(lambda () (apply #'concat (make-list 100000 "'("))))
    (dag-list . "(let ((x 1)) (dotimes (_ 40) (setq x (list x x))) x)")
    (dag-vector . "(let ((x 1)) (dotimes (_ 40) (setq x (vector x x))) x)")
    (dag-record . "(let ((x 1)) (dotimes (_ 40) (setq x (record 'r x x))) x)")
    (dag-hash-table . "(let ((h (make-hash-table)) (x 1)) (dotimes (_ 40) (setq x (list x x))) (puthash 1 x h) h)")
    (deep-list . "(let ((x nil)) (dotimes (_ 300000) (setq x (list x))) x)")
    (deep-vector . "(let ((x nil)) (dotimes (_ 300000) (setq x (vector x))) x)")
    (cdr-circular . "(let ((x (list 1 2))) (setcdr (cdr x) x) x)")
    (car-circular . "(let ((x (list 1 2))) (setcar x x) x)")
    (long-list . "(make-list 1000000 1)")
    (long-string . "(make-string 20000000 ?a)")
    (raw-bytes . "(unibyte-string 255 0)")
    (signal-dag . "(signal 'error (let ((x 1)) (dotimes (_ 40) (setq x (list x x))) x))")
    (signal-dag-vector . "(signal 'wrong-type-argument (list (let ((x 1)) (dotimes (_ 40) (setq x (vector x x))) x)))")
    (signal-deep-vector . "(signal 'wrong-type-argument (list (let ((x nil)) (dotimes (_ 300000) (setq x (vector x))) x)))")
    (signal-circular . "(signal 'error (let ((x (list 1))) (setcdr x x) x))")
    (signal-long . "(signal 'error (make-list 1000000 1))")
    (error-long-message . "(error \"%s\" (make-string 20000000 ?a))")
    (dag-vector-in-backtrace . "(car (let ((x 1)) (dotimes (_ 40) (setq x (vector x x))) x))")
    (print-circle-dag . "(progn (setq print-circle t) (let ((x 1)) (dotimes (_ 40) (setq x (vector x x))) x))")
    (shared-expansion . "(agent-q-stress--share 40)"))
  "Form texts for the built-in evaluation tools: (NAME . TEXT or MAKER).")

(defun agent-q-stress--builtin-cases ()
  "The built-in tools that read, evaluate or print what the model sends."
  (let (cases)
    (dolist (form agent-q-stress--form-texts)
      (dolist (tool (if (eq (car form) 'shared-expansion)
                        ;; Evaluating it runs 2^40 steps: a loop the model asked for,
                        ;; like (while t); expanding it one step is quick.
                        '("macroexpand_form")
                      '("eval_form" "compile_form" "macroexpand_form")))
        (dolist (circle '(nil t))
          (push (cons (format "%s%s/%s" tool (if circle "/print-circle" "") (car form))
                      (lambda ()
                        (let* ((print-circle circle)
                               (text (if (functionp (cdr form)) (funcall (cdr form)) (cdr form)))
                               (outcome (agent-q-stress--outcome
                                         (lambda () (agent-q-execute-tool-calls
                                                     `((:id "b" :name ,tool :arguments (:form ,text))))))))
                          (agent-q-stress--check-results outcome 1 'propertized))))
                cases))))
    ;; The code tools, a hostile value in each one's main argument.
    (pcase-dolist (`(,tool . ,key) '(("find_definition" . :symbol) ("find_references" . :symbol)
                                     ("file_outline" . :file) ("workspace_symbols" . :query)
                                     ("diagnostics" . :file) ("type_at" . :file)
                                     ("rename_symbol" . :symbol)))
      (dolist (hostile (agent-q-stress--names))
        (push (cons (format "%s/%s" tool hostile)
                    (lambda ()
                      (let ((agent-q-code-start-servers nil))
                        (agent-q-stress--check-results
                         (agent-q-stress--outcome
                          (lambda () (agent-q-execute-tool-calls
                                      `((:id "k" :name ,tool
                                             :arguments (,key ,(agent-q-stress--value hostile)
                                                              ,@(and (member tool '("find_definition" "find_references" "type_at"))
                                                                     '(:line 1 :column 1))
                                                              ,@(and (equal tool "rename_symbol")
                                                                     '(:new_name "renamed"))))))))
                         ;; A deep value is refused as not a string first; a
                         ;; huge file name by the file system, a huge symbol by the tool.
                         1 hostile nil "expected type \"string\"\\|File name too long\\|symbol is too long"))))
              cases)))
    (dolist (hostile (agent-q-stress--names))
      (dolist (circle '(nil t))
        (push (cons (format "describe_symbol%s/%s" (if circle "/print-circle" "") hostile)
                    (lambda ()
                      (setq agent-q-stress--described (agent-q-stress--value hostile))
                      (let ((print-circle circle))
                        (prog1 (agent-q-stress--check-results
                                (agent-q-stress--outcome
                                 (lambda () (agent-q-execute-tool-calls
                                             '((:id "d" :name "describe_symbol"
                                                    :arguments (:symbol "agent-q-stress--described"))))))
                                1 'propertized)
                          (setq agent-q-stress--described nil)))))
              cases)))
    (nreverse cases)))

(defun agent-q-stress--api-cases ()
  "The public API functions that take user data, a hostile value in each place."
  (let (cases)
    (dolist (hostile (agent-q-stress--names))
      (let* ((v (lambda () (agent-q-stress--value hostile)))
             (add (lambda (where thunk)
                    (push (cons (format "api/%s/%s" where hostile)
                                (lambda () (agent-q-stress--check-api (agent-q-stress--outcome thunk))))
                          cases))))
        (funcall add "validate-arguments/name"
                 (lambda () (agent-q-validate-arguments (funcall v) '(:value 1) (agent-q-stress--fixture))))
        (funcall add "validate-arguments/args"
                 (lambda () (agent-q-validate-arguments "stress_echo" (funcall v) (agent-q-stress--fixture))))
        (funcall add "validate-arguments/value"
                 (lambda () (let ((message (agent-q-validate-arguments
                                            "stress_echo" (list :value (funcall v)) (agent-q-stress--fixture))))
                              (when (and message (eq (agent-q-stress--kind hostile) :refused)
                                         (not (string-match-p (agent-q-stress--problem hostile) message)))
                                (error "The message does not name the problem: %s" message))
                              (when (and (null message) (eq (agent-q-stress--kind hostile) :refused))
                                (error "A refused value was valid"))
                              message)))
        (funcall add "validate-arguments/registry"
                 (lambda () (agent-q-validate-arguments "stress_echo" '(:value 1) (funcall v))))
        (funcall add "get-tools/categories"
                 (lambda () (agent-q-get-tools :categories (funcall v) :registry (agent-q-stress--fixture))))
        (funcall add "get-tools/max-safety-level"
                 (lambda () (agent-q-get-tools :max-safety-level (funcall v) :registry (agent-q-stress--fixture))))
        (funcall add "get-tools/registry" (lambda () (agent-q-get-tools :registry (funcall v))))
        (funcall add "tools-to-schema/tools"
                 (lambda () (agent-q-tools-to-schema (funcall v) :registry (agent-q-stress--fixture))))
        (funcall add "tools-to-schema/a-tool"
                 (lambda () (agent-q-tools-to-schema (list (funcall v)) :registry (agent-q-stress--fixture))))
        (funcall add "tools-to-schema/format"
                 (lambda () (agent-q-tools-to-schema nil :format (funcall v) :registry (agent-q-stress--fixture))))
        (funcall add "tools-to-schema/registry"
                 (lambda () (agent-q-tools-to-schema nil :registry (funcall v))))
        (funcall add "registry-restore/snapshot"
                 (lambda () (agent-q-registry-restore (funcall v) (agent-q-make-registry))))
        (funcall add "registry-restore/tools"
                 (lambda () (agent-q-registry-restore (list :tools (funcall v)) (agent-q-make-registry))))
        (funcall add "registry-restore/a-tool"
                 (lambda () (agent-q-registry-restore (list :tools (vector (funcall v))) (agent-q-make-registry))))
        (funcall add "registry-restore/spec"
                 (lambda () (agent-q-registry-restore
                             (list :tools (vector (list :spec (funcall v) :enabled t)))
                             (agent-q-make-registry))))
        (funcall add "registry-restore/registry"
                 (lambda () (agent-q-registry-restore '(:tools []) (funcall v))))
        (funcall add "registry-snapshot/registry" (lambda () (agent-q-registry-snapshot (funcall v))))
        (funcall add "tool-metrics/registry" (lambda () (agent-q-tool-metrics (funcall v))))
        (funcall add "get-tool/name" (lambda () (agent-q-get-tool (funcall v) (agent-q-stress--fixture))))
        (funcall add "set-tool-enabled/name"
                 (lambda () (agent-q-set-tool-enabled (funcall v) t (agent-q-stress--fixture))))
        (funcall add "remove-tool/name" (lambda () (agent-q-remove-tool (funcall v) (agent-q-make-registry))))
        (funcall add "register-tool/tool" (lambda () (agent-q-register-tool (funcall v) (agent-q-make-registry))))
        (funcall add "register-tool/registry"
                 (lambda () (agent-q-register-tool (agent-q-define-tool "stress_new" "New." nil
                                                                        :handler #'agent-q-stress--echo)
                                                   (funcall v))))
        (dolist (field '(name description parameters parameter required safety-level categories
                              handler version tags output-schema source guard async))
          (funcall add (format "define-tool/%s" field)
                   (lambda ()
                     (let* ((value (funcall v))
                            (get (lambda (f default) (if (eq f field) value default))))
                       (agent-q-register-tool
                        (agent-q-define-tool
                         (funcall get 'name "stress_new")
                         (funcall get 'description "New.")
                         (if (eq field 'parameter)
                             (list (list :name "p" :type :string :description value))
                           (funcall get 'parameters '((:name "p" :type :string))))
                         :required (funcall get 'required nil)
                         :safety-level (funcall get 'safety-level :safe)
                         :categories (funcall get 'categories '(:stress))
                         :handler (funcall get 'handler #'agent-q-stress--echo)
                         :version (funcall get 'version nil)
                         :tags (funcall get 'tags nil)
                         :output-schema (funcall get 'output-schema nil)
                         :source (funcall get 'source nil)
                         :guard (funcall get 'guard nil)
                         :async (funcall get 'async nil))
                        (agent-q-make-registry))))))))
    (nreverse cases)))

(defun agent-q-stress--check-api (outcome)
  "Nil when OUTCOME of a public API function given a hostile value is acceptable.
It returns, or signals an `agent-q-error' (or `wrong-type-argument'
for a value of the wrong type, as Lisp functions do)."
  (pcase outcome
    (`(:returned ,_) nil)
    (`(:signalled ,err)
     (let ((conditions (get (car err) 'error-conditions)))
       (cond
        ((not (or (memq 'agent-q-error conditions)
                  (memq 'wrong-type-argument conditions)))
         (format "signalled %s, neither an agent-q-error nor a wrong type"
                 (agent-q-stress--print err)))
        ((string-empty-p (agent-q-stress--message err))
         (format "signalled without a message: %s" (agent-q-stress--print err))))))))

(defun agent-q-stress--self-cases ()
  "Cases that crash or hang on purpose: the harness must report exactly these."
  (list (cons "self/fine-1" (lambda () nil))
        ;; Killed outright, as a crash would: SIGKILL rather than SIGSEGV, whose
        ;; handler in Emacs aborts and may leave a core file.
        (cons "self/crash" (lambda () (signal-process (emacs-pid) 'SIGKILL) (sleep-for 5) nil))
        (cons "self/fine-2" (lambda () nil))
        (cons "self/hang" (lambda () (sleep-for 600) nil))
        (cons "self/fails" (lambda () "a failure it reports"))
        (cons "self/fine-3" (lambda () nil))))

(defun agent-q-stress--cases (suite)
  "The cases of SUITE: a list of (NAME . CHECK), CHECK giving nil or a failure."
  (pcase suite
    ('core (agent-q-stress--core-cases))
    ('execute (agent-q-stress--execute-cases))
    ('approval (agent-q-stress--approval-cases))
    ('guard (agent-q-stress--guard-cases))
    ('handler (agent-q-stress--handler-cases))
    ('api (agent-q-stress--api-cases))
    ('builtins (agent-q-stress--builtin-cases))
    ('self (agent-q-stress--self-cases))
    (_ (error "No stress suite %s" suite))))

;;;; The child

(defun agent-q-stress--alive ()
  "Nil when this Emacs still works after the cases, else what is wrong."
  (garbage-collect)
  (let* ((reg (agent-q-make-registry))
         (tool (agent-q-register-tool
                (agent-q-define-tool "alive" "Still here." '((:name "x" :type :string))
                                     :handler (lambda (args) (concat "alive " (gethash "x" args))))
                reg))
         (result (car (agent-q-execute-tool-calls
                       '((:id "1" :name "alive" :arguments (:x "and well"))) reg))))
    (cond
     ((not (agent-q-tool-p tool)) "cannot register a tool")
     ((not (equal (plist-get result :content) "alive and well"))
      (format "a normal call gives %s" (agent-q-stress--print result)))
     ((not (= (+ 1 1) 2)) "arithmetic"))))

(defun agent-q-stress--child (suite shard shards from)
  "Run SUITE's cases numbered FROM or later, whose number is SHARD modulo SHARDS.
Report each on stderr as it starts and ends, then check Emacs still works."
  (let ((agent-q-audit-file (make-temp-file "agent-q-stress-audit" nil ".jsonl"))
        ;; Building the hostile values is most of the work: with the default
        ;; threshold, collections (each marking the value being built) took
        ;; most of the time.  Collections still happen, every 64 MB.
        (gc-cons-threshold (* 64 1024 1024))
        (agent-q-approval-function (lambda (&rest _) :denied))
        (i 0))
    (dolist (case (agent-q-stress--cases suite))
      (when (and (>= i from) (= (mod i shards) shard))
        (message "agent-q-stress: start %d" i)
        (let* ((start (float-time))
               (failure (condition-case err
                            (let ((agent-q-stress--handler-answer nil)
                                  (agent-q-stress--guard-answer #'ignore))
                              (funcall (cdr case)))
                          (error (format "the case itself failed: %s"
                                                 (agent-q-stress--print err))))))
          (message "agent-q-stress: done %d %d %s" i
                   (round (* 1000 (- (float-time) start)))
                   (if failure
                       (replace-regexp-in-string "\n" " " (format "FAIL %s" failure))
                     "ok"))))
      (setq i (1+ i)))
    (let ((wrong (condition-case err (agent-q-stress--alive)
                   (error (format "signalled %s" (agent-q-stress--print err))))))
      (message "agent-q-stress: alive %s" (or wrong "ok")))
    (delete-file agent-q-audit-file)
    (when agent-q-stress--source-file (delete-file agent-q-stress--source-file))
    (kill-emacs 0)))

;;;; The parent

(defvar agent-q-stress-stall-seconds 60
  "Seconds a child may spend on one case before it counts as hung.")

(defvar agent-q-stress-shards 2
  "How many children run a suite at once.")

(cl-defstruct (agent-q-stress--shard (:constructor agent-q-stress--shard-create) (:copier nil))
  "One child's share of a suite."
  index process buffer (parsed 0) started last-output done alive finished)

(defvar agent-q-stress--temporary-directory nil
  "The children's temporary directory, removed when this Emacs exits.
Cases make temporary files by the thousand; none is left behind.")

(defun agent-q-stress--temporary-directory ()
  "Return the children's temporary directory, made on first use."
  (or agent-q-stress--temporary-directory
      (let ((dir (make-temp-file "agent-q-stress-tmp" t)))
        (add-hook 'kill-emacs-hook (lambda () (ignore-errors (delete-directory dir t))))
        (setq agent-q-stress--temporary-directory dir))))

(defun agent-q-stress--start (suite shard from)
  "Start a child running SUITE's SHARD from case FROM."
  (let* ((process-environment (cons (concat "TMPDIR=" (agent-q-stress--temporary-directory))
                                    process-environment))
         (lisp-dir (file-name-directory (locate-library "agent-q")))
         (test-dir (file-name-directory (locate-library "agent-q-stress-test")))
         (buffer (generate-new-buffer " *agent-q-stress-child*"))
         ;; Hostile values stand for file names too ("stress", ""): a relative
         ;; one lands in the child's directory, a temporary one, not the checkout.
         (default-directory (file-name-as-directory (agent-q-stress--temporary-directory)))
         (process (make-process
                   :name "agent-q-stress" :buffer buffer :noquery t :connection-type 'pipe
                   :command (list (expand-file-name invocation-name invocation-directory)
                                  "--batch" "-Q" "-L" lisp-dir "-L" test-dir
                                  "-l" "agent-q-stress-test"
                                  "--eval" (format "(agent-q-stress--child '%s %d %d %d)"
                                                   suite (agent-q-stress--shard-index shard)
                                                   agent-q-stress-shards from)))))
    (when (buffer-live-p (agent-q-stress--shard-buffer shard))
      (kill-buffer (agent-q-stress--shard-buffer shard)))
    (setf (agent-q-stress--shard-process shard) process
          (agent-q-stress--shard-buffer shard) buffer
          (agent-q-stress--shard-parsed shard) 0
          (agent-q-stress--shard-started shard) nil
          (agent-q-stress--shard-alive shard) nil
          (agent-q-stress--shard-last-output shard) (float-time))))

(defun agent-q-stress--read-lines (shard names report)
  "Read the new report lines of SHARD; NAMES is the case names vector.
REPORT is called with each failure message."
  (with-current-buffer (agent-q-stress--shard-buffer shard)
    (goto-char (1+ (agent-q-stress--shard-parsed shard)))
    (while (re-search-forward "^agent-q-stress: \\(start\\|done\\|alive\\) \\(.*\\)\n" nil t)
      (setf (agent-q-stress--shard-parsed shard) (1- (point)))
      (setf (agent-q-stress--shard-last-output shard) (float-time))
      (let ((what (match-string 1)) (rest (match-string 2)))
        (pcase what
          ("start" (setf (agent-q-stress--shard-started shard) (string-to-number rest)))
          ("done"
           (when (string-match "\\`\\([0-9]+\\) \\([0-9]+\\) \\(.*\\)\\'" rest)
             (let ((i (string-to-number (match-string 1 rest)))
                   (ms (string-to-number (match-string 2 rest)))
                   (verdict (match-string 3 rest)))
               (setf (agent-q-stress--shard-started shard) nil)
               (push (cons ms i) (agent-q-stress--shard-done shard))
               (unless (equal verdict "ok")
                 (funcall report (format "%s: %s" (aref names i) verdict))))))
          ("alive"
           (setf (agent-q-stress--shard-alive shard) rest)))))))

(defun agent-q-stress--run (suite)
  "Run SUITE in child Emacsen; return (FAILURES . TIMES).
FAILURES lists messages naming the failing cases; TIMES is a list of
\(MS . CASE-NAME) for the cases that ran."
  (let* ((names (vconcat (mapcar #'car (agent-q-stress--cases suite))))
         (failures nil)
         (report (lambda (m) (push m failures)))
         (shards (cl-loop for i below agent-q-stress-shards
                          collect (agent-q-stress--shard-create :index i)))
         (restarts 0))
    (dolist (shard shards) (agent-q-stress--start suite shard 0))
    (while (cl-some (lambda (s) (not (agent-q-stress--shard-finished s))) shards)
      (accept-process-output nil 0.1)
      (dolist (shard shards)
        (unless (agent-q-stress--shard-finished shard)
          (agent-q-stress--read-lines shard names report)
          (let* ((process (agent-q-stress--shard-process shard))
                 (started (agent-q-stress--shard-started shard))
                 (overflow (with-current-buffer (agent-q-stress--shard-buffer shard)
                             (save-excursion
                               (goto-char (point-min))
                               (search-forward "after C stack overflow" nil t))))
                 (stalled (> (- (float-time) (agent-q-stress--shard-last-output shard))
                             agent-q-stress-stall-seconds))
                 (dead (not (process-live-p process))))
            (when (and dead (not overflow))
              ;; Read what the child wrote just before it exited.
              (accept-process-output process 0.1)
              (agent-q-stress--read-lines shard names report)
              (setq started (agent-q-stress--shard-started shard)))
            (cond
             ((and dead (not overflow) (agent-q-stress--shard-alive shard))
              (unless (equal (agent-q-stress--shard-alive shard) "ok")
                (funcall report (format "after the cases, Emacs is not working: %s"
                                        (agent-q-stress--shard-alive shard))))
              (setf (agent-q-stress--shard-finished shard) t))
             ((or dead overflow stalled)
              (when (process-live-p process) (delete-process process))
              (let ((tail (with-current-buffer (agent-q-stress--shard-buffer shard)
                            (string-trim (buffer-substring (max (point-min) (- (point-max) 400))
                                                           (point-max))))))
                (funcall report
                         (format "%s: %s (%s)"
                                 (if started (aref names started) "starting the child")
                                 (cond (overflow "C stack overflow: Emacs is unusable afterwards")
                                       (dead (format "crashed Emacs: %s" (process-status process)))
                                       (t (format "hung: no answer in %d s" agent-q-stress-stall-seconds)))
                                 tail)))
              (cl-incf restarts)
              (if (or (null started) (> restarts 20))
                  (setf (agent-q-stress--shard-finished shard) t)
                (agent-q-stress--start suite shard (1+ started)))))))))
    (dolist (shard shards) (kill-buffer (agent-q-stress--shard-buffer shard)))
    (cons (nreverse failures)
          (sort (cl-loop for shard in shards
                         append (mapcar (lambda (d) (cons (car d) (aref names (cdr d))))
                                        (agent-q-stress--shard-done shard)))
                (lambda (a b) (> (car a) (car b)))))))

(defun agent-q-stress--suite (suite)
  "Run SUITE, report its slowest cases, and fail with its failures."
  (let* ((run (agent-q-stress--run suite))
         (failures (car run))
         (times (cdr run)))
    (message "agent-q-stress %s: %d cases, %.1f s in all; slowest: %s"
             suite (length times) (/ (apply #'+ (mapcar #'car times)) 1000.0)
             (mapconcat (lambda (x) (format "%s %d ms" (cdr x) (car x)))
                        (seq-take times 3) ", "))
    (should (equal failures nil))))

;;;; Tests

(ert-deftest agent-q-stress-test-a-snapshot-plist-keeps-empty-subschemas ()
  ;; Found through the stress fixture: a property of any type ({}) came back
  ;; from the plist form of a snapshot as nil, and the snapshot could not be
  ;; restored.  A null that is data (a default) stays null.
  (let ((reg (agent-q-make-registry))
        (copy (agent-q-make-registry)))
    (agent-q-register-tool
     (agent-q-define-tool
      "anything" "Takes anything."
      (concat "{\"type\": \"object\", \"properties\": {\"value\": {},"
              " \"list\": {\"type\": \"array\", \"items\": {}},"
              " \"maybe\": {\"anyOf\": [{}, {\"type\": \"null\"}], \"default\": null}},"
              " \"required\": [\"value\"]}")
      :handler #'ignore)
     reg)
    (should (= 1 (agent-q-registry-restore (agent-q-registry-snapshot reg) copy)))
    (should (equal (agent-q-registry-snapshot copy t) (agent-q-registry-snapshot reg t)))
    (should-not (agent-q-validate-arguments "anything" '(:value [1 "two"] :list [1]) copy))
    (should (string-match-p "field 'value': required"
                            (agent-q-validate-arguments "anything" '(:list []) copy)))))

(ert-deftest agent-q-stress-test-every-core-function-has-cases ()
  ;; The module's functions are read from the module itself: one added
  ;; later without a case table fails here.
  (let ((table (agent-q-stress--core-table))
        (functions (agent-q-stress--module-functions)))
    (should (> (length functions) 30))
    (should (equal (cl-remove-if (lambda (f) (assq f table)) functions) nil))
    (should (equal (cl-remove-if (lambda (entry) (fboundp (car entry))) table) nil))
    (dolist (f functions)
      (let ((arity (func-arity f)))
        ;; Module functions have fixed arities: each position gets every value.
        (should (equal (list f (car arity)) (list f (cdr arity))))))))

(ert-deftest agent-q-stress-test-the-harness-reports-crashes-and-hangs ()
  ;; A suite whose cases crash, hang and fail on purpose: each is reported
  ;; by name, and the cases after them still run.
  (let* ((agent-q-stress-stall-seconds 3)
         (run (agent-q-stress--run 'self))
         (failures (car run)))
    (should (= (length failures) 3))
    (should (cl-some (lambda (f) (string-match-p "\\`self/crash: crashed Emacs" f)) failures))
    (should (cl-some (lambda (f) (string-match-p "\\`self/hang: hung" f)) failures))
    (should (member "self/fails: FAIL a failure it reports" failures))
    (should (equal (sort (mapcar #'cdr (cdr run)) #'string<)
                   '("self/fails" "self/fine-1" "self/fine-2" "self/fine-3")))))

(ert-deftest agent-q-stress-test-core-functions ()
  (agent-q-stress--suite 'core))

(ert-deftest agent-q-stress-test-execute-tool-calls ()
  (agent-q-stress--suite 'execute))

(ert-deftest agent-q-stress-test-approval-answers ()
  (agent-q-stress--suite 'approval))

(ert-deftest agent-q-stress-test-guard-answers ()
  (agent-q-stress--suite 'guard))

(ert-deftest agent-q-stress-test-handler-results ()
  (agent-q-stress--suite 'handler))

(ert-deftest agent-q-stress-test-public-api ()
  (agent-q-stress--suite 'api))

(ert-deftest agent-q-stress-test-built-in-tools ()
  (agent-q-stress--suite 'builtins))

(provide 'agent-q-stress-test)

;;; agent-q-stress-test.el ends here
