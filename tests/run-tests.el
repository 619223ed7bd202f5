;;; run-tests.el --- Run agent-q's ERT suites  -*- lexical-binding: t -*-

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

;; Loads every tests/*-test.el and runs the tests (all of them, or those
;; matching the regexp in $AGENT_Q_TESTS).  Ends with one summary line,
;; "ert: N passed, N failed, N skipped", and exits non-zero when a test
;; failed or was skipped: a skipped test is never counted as passing.
;; One exception, outside CI only ($CI is not "true"): the client
;; bridge tests skipped because gptel or llm.el cannot be found (a clone
;; of the project without ../shared beside it) are named in one line
;; that says how to provide the clients, and do not fail the run.

;;; Code:

(require 'ert)

;; The tests run the current sources: each of agent-q's files is loaded
;; from its .elc when `make build' compiled it after the last change (as
;; a user runs it; `make test' compiles first), else from its .el.  The
;; Emacsen that tests start are not told this: agent-q refuses to load
;; beside an old .elc (`agent-q--check-compiled-files').
(setq load-prefer-newer t)

;; Nor natively compiled copies of them that an earlier Emacs left in the
;; user's eln cache (an interactive Emacs compiles what it loads): the
;; tests load agent-q byte-compiled, as a fresh install does, and only a
;; private directory, deleted at exit, receives what they compile.
(when (boundp 'native-comp-eln-load-path)
  (let ((eln (make-temp-file "agent-q-test-eln" t)))
    (setq native-comp-eln-load-path (cons eln (last native-comp-eln-load-path)))
    (add-hook 'kill-emacs-hook (lambda () (delete-directory eln t)))))

;; The journal of changes the suites record goes to a file of the run's
;; own, never to the user's (set before agent-q-journal's defcustom).
(defvar agent-q-journal-file (make-temp-file "agent-q-test-journal" nil ".jsonl"))
;; It and its lock file (FILE.lock) go when the run ends.
(let ((journal agent-q-journal-file))
  (add-hook 'kill-emacs-hook
            (lambda ()
              (dolist (file (list journal (concat (file-name-sans-extension journal) ".lock")))
                (ignore-errors (delete-file file))))))

;; By feature, not by file: some suites require others (their helpers),
;; and Emacs 29 and later refuse a test defined twice.
(let ((dir (file-name-directory (or load-file-name buffer-file-name))))
  (dolist (file (directory-files dir t "-test\\.el\\'"))
    (require (intern (file-name-base file)) file)))

(defvar agent-q-bridge-missing-client)

(let* ((selector (or (getenv "AGENT_Q_TESTS") t))
       (stats (ert-run-tests-batch selector))
       (passed (ert--stats-passed-expected stats))
       (failed (ert-stats-completed-unexpected stats))
       (skipped (ert-stats-skipped stats))
       (ci (equal (getenv "CI") "true"))
       (no-client nil))
  ;; Say why each skipped test was skipped (ERT's batch summary names it only).
  (mapc (lambda (test)
          (let ((result (ert-test-most-recent-result test)))
            (when (ert-test-skipped-p result)
              (let* ((condition (ert-test-result-with-condition-condition result))
                     (why (error-message-string condition)))
                (princ (format "SKIPPED %s: %s\n" (ert-test-name test) why))
                (when (and (stringp (car-safe (cdr-safe condition)))
                           (string-prefix-p agent-q-bridge-missing-client (cadr condition)))
                  (push (ert-test-name test) no-client))))))
        (ert--stats-tests stats))
  (princ (format "ert: %d passed, %d failed, %d skipped\n" passed failed skipped))
  (when (and no-client (not ci))
    (princ (format "agent-q: %d client bridge tests were skipped: gptel or llm.el was not found.  To run them, set AGENT_Q_VENDOR to a directory holding gptel/, llm/, plz/, plz-media-type/ and plz-event-source/, put the clients on the load-path, or install them with package.el (~/.emacs.d/elpa).  Under CI these skips fail.\n"
                   (length no-client))))
  (kill-emacs (if (and (zerop failed)
                       (= skipped (if ci 0 (length no-client))))
                  0 1)))

(provide 'run-tests)

;;; run-tests.el ends here
