;;; run-tests.el --- Run agent-q's ERT suites  -*- lexical-binding: t -*-

;;; Commentary:

;; Loads every tests/*-test.el and runs the tests (all of them, or those
;; matching the regexp in $AGENT_Q_TESTS).  Ends with one summary line,
;; "ert: N passed, N failed, N skipped", and exits non-zero when a test
;; failed or was skipped: a skipped test is never counted as passing.

;;; Code:

(require 'ert)

(let ((dir (file-name-directory (or load-file-name buffer-file-name))))
  (dolist (file (directory-files dir t "-test\\.el\\'"))
    (load file nil t)))

(let* ((selector (or (getenv "AGENT_Q_TESTS") t))
       (stats (ert-run-tests-batch selector))
       (passed (ert--stats-passed-expected stats))
       (failed (ert-stats-completed-unexpected stats))
       (skipped (ert-stats-skipped stats)))
  ;; Say why each skipped test was skipped (ERT's batch summary names it only).
  (mapc (lambda (test)
          (let ((result (ert-test-most-recent-result test)))
            (when (ert-test-skipped-p result)
              (princ (format "SKIPPED %s: %s\n" (ert-test-name test)
                             (error-message-string
                              (ert-test-result-with-condition-condition result)))))))
        (ert--stats-tests stats))
  (princ (format "ert: %d passed, %d failed, %d skipped\n" passed failed skipped))
  (kill-emacs (if (and (zerop failed) (zerop skipped)) 0 1)))

;;; run-tests.el ends here
