;;; agent-q-bridge-support.el --- Shared setup of the client bridge tests  -*- lexical-binding: t -*-

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

;; The bridge tests drive the real gptel and llm.el against
;; tests/fake-openai.py, a scripted OpenAI-compatible server on
;; 127.0.0.1.  This file finds the clients -- on the load-path, in
;; $AGENT_Q_VENDOR, or in ../shared/vendor beside the project -- and
;; compat (needed on Emacs 28; Debian's elpa-compat), starts and stops
;; the server, and reads what it recorded.  A test whose client cannot
;; be found is skipped by name (`ert-skip', with a message that starts
;; with `agent-q-bridge-missing-client'), never passed: under CI the
;; runner fails on it, and .ci/run names skipped bridge tests; elsewhere
;; (a clone of the project alone) the runner says in one line which
;; were skipped and how to provide the clients.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'json)
(require 'agent-q)

(defconst agent-q-bridge--root
  (file-name-directory
   (directory-file-name (file-name-directory (or load-file-name buffer-file-name))))
  "The project's root directory.")

(defconst agent-q-bridge-missing-client "client not found: "
  "How the message of a test skipped for want of gptel or llm.el starts.
tests/run-tests.el recognises these skips by it.")

(defun agent-q-bridge--vendor-dirs ()
  "Directories that may hold the vendored clients, most specific first."
  (delq nil (list (let ((env (getenv "AGENT_Q_VENDOR")))
                    (and env (not (string-empty-p env)) (expand-file-name env)))
                  (expand-file-name "../shared/vendor" agent-q-bridge--root))))

(defun agent-q-bridge--elpa-package (package)
  "The newest directory of PACKAGE installed by package.el, or nil."
  (car (last (file-expand-wildcards
              (expand-file-name (concat package "-[0-9]*")
                                (locate-user-emacs-file "elpa"))))))

(defun agent-q-bridge--compat-dir ()
  "A directory holding compat.el, or nil."
  (if (locate-library "compat")
      (file-name-directory (locate-library "compat"))
    (car (last (file-expand-wildcards "/usr/share/emacs/site-lisp/elpa-src/compat-*")))))

(defun agent-q-bridge--add-client (feature packages)
  "Put PACKAGES (vendor folder names) on the load-path unless FEATURE is found.
Return nil when FEATURE is loadable, or a string saying what is missing."
  (unless (locate-library (symbol-name feature))
    (let ((base (cl-find-if (lambda (dir)
                              (file-exists-p (expand-file-name (car packages) dir)))
                            (agent-q-bridge--vendor-dirs))))
      (if base
          (dolist (package packages)
            (add-to-list 'load-path (expand-file-name package base)))
        ;; Installed with package.el, as a user of the client has it.
        (dolist (package packages)
          (let ((dir (agent-q-bridge--elpa-package package)))
            (when dir (add-to-list 'load-path dir)))))))
  (cond
   ((not (locate-library (symbol-name feature)))
    (format "%s is neither on the load-path nor in %s nor in %s" feature
            (mapconcat #'identity (agent-q-bridge--vendor-dirs) " or ")
            (locate-user-emacs-file "elpa")))
   ((and (< emacs-major-version 29) (not (featurep 'compat)) (not (locate-library "compat")))
    (let ((compat (agent-q-bridge--compat-dir)))
      (if compat
          (progn (add-to-list 'load-path compat) nil)
        "compat is missing (apt-get install elpa-compat)")))))

(defun agent-q-bridge-require-gptel ()
  "Load the real gptel (with its OpenAI backend), or skip the test."
  (let ((missing (agent-q-bridge--add-client 'gptel-request '("gptel"))))
    (when missing (ert-skip (concat agent-q-bridge-missing-client "gptel: " missing))))
  (unless (executable-find "curl") (ert-skip "curl is not installed"))
  (require 'gptel)
  (require 'gptel-openai)
  (require 'agent-q-gptel))

(defun agent-q-bridge-require-llm ()
  "Load the real llm.el (with its OpenAI backend), or skip the test."
  (let ((missing (agent-q-bridge--add-client
                  'llm '("llm" "plz" "plz-media-type" "plz-event-source"))))
    (when missing (ert-skip (concat agent-q-bridge-missing-client "llm.el: " missing))))
  (unless (executable-find "curl") (ert-skip "curl is not installed"))
  (require 'llm)
  (require 'llm-openai)
  (require 'agent-q-llm))

;;;; Waiting

(defun agent-q-bridge-wait (predicate &optional seconds what)
  "Process events until PREDICATE returns non-nil, at most SECONDS (default 20).
Return its value; fail the test naming WHAT on a timeout."
  (let ((deadline (+ (float-time) (or seconds 20)))
        (value nil))
    (while (and (not (setq value (funcall predicate))) (< (float-time) deadline))
      (accept-process-output nil 0.02))
    (or value (ert-fail (list "Timed out waiting" (or what predicate))))))

;;;; The fake server

(cl-defstruct (agent-q-bridge-server (:constructor agent-q-bridge--server-create)
                                     (:copier nil))
  "A running tests/fake-openai.py."
  process port record dir)

(defun agent-q-bridge-start-server (responses)
  "Start the fake server answering RESPONSES in order; return it.
RESPONSES is a list of alists or plists encoded with `json-encode',
each ((tool_calls . [...])) or ((content . TEXT))."
  (let* ((python (or (executable-find "python3") (ert-skip "python3 is not installed")))
         (dir (make-temp-file "agent-q-fake-openai" t))
         (script (expand-file-name "script.json" dir))
         (port-file (expand-file-name "port" dir))
         (record (expand-file-name "requests.jsonl" dir))
         (process-connection-type nil))
    (with-temp-file script
      (insert (json-encode (list (cons 'responses (vconcat responses))))))
    (let* ((process (make-process
                     :name "fake-openai" :buffer (generate-new-buffer " *fake-openai*")
                     :command (list python (expand-file-name "tests/fake-openai.py"
                                                             agent-q-bridge--root)
                                    "--script" script "--port-file" port-file
                                    "--record" record "--timeout" "90")
                     :noquery t))
           (server (agent-q-bridge--server-create :process process :record record :dir dir)))
      (agent-q-bridge-wait (lambda () (or (file-exists-p port-file)
                                          (not (process-live-p process))))
                           10 "the fake server's port")
      (unless (file-exists-p port-file)
        (ert-fail (list "The fake server did not start"
                        (with-current-buffer (process-buffer process) (buffer-string)))))
      (setf (agent-q-bridge-server-port server)
            (string-to-number (with-temp-buffer (insert-file-contents port-file)
                                                (buffer-string))))
      server)))

(defun agent-q-bridge-stop-server (server)
  "Stop SERVER and delete its files."
  (let ((process (agent-q-bridge-server-process server)))
    (when (process-live-p process) (delete-process process))
    (when (buffer-live-p (process-buffer process)) (kill-buffer (process-buffer process))))
  (delete-directory (agent-q-bridge-server-dir server) t))

(defmacro agent-q-bridge-with-server (var responses &rest body)
  "Run BODY with VAR bound to a fake server answering RESPONSES."
  (declare (indent 2))
  `(let ((,var (agent-q-bridge-start-server ,responses)))
     (unwind-protect (progn ,@body)
       (agent-q-bridge-stop-server ,var))))

(defun agent-q-bridge-requests (server)
  "The request bodies SERVER received, in order, as plists."
  (let ((file (agent-q-bridge-server-record server)))
    (when (file-exists-p file)
      (with-temp-buffer
        (insert-file-contents file)
        (mapcar (lambda (line)
                  (plist-get (json-parse-string line :object-type 'plist :array-type 'list
                                                :null-object nil :false-object :false)
                             :body))
                (split-string (buffer-string) "\n" t))))))

(defun agent-q-bridge-tool-messages (body)
  "The role \"tool\" messages of the request BODY, as plists."
  (cl-remove-if-not (lambda (m) (equal (plist-get m :role) "tool"))
                    (plist-get body :messages)))

(defun agent-q-bridge-tool-call (id name arguments)
  "A scripted tool call: ID, NAME and ARGUMENTS (an alist, or JSON text)."
  `((id . ,id) (name . ,name) (arguments . ,arguments)))

;;;; agent-q's side

(defmacro agent-q-bridge-with-registry (var &rest body)
  "Run BODY with VAR bound to a fresh registry of the built-ins and test tools.
The audit goes to a temporary file, bound to `agent-q-audit-file'.
Also registers \"fail_always\" (safe; its handler signals) and
\"touch\" (dangerous; creates the file at path)."
  (declare (indent 1))
  `(let* ((,var (agent-q-make-registry))
          (agent-q-audit-file (make-temp-file "agent-q-bridge-audit" nil ".jsonl"))
          (agent-q-prompt--session-approved nil)
          (agent-q-tool-execution-functions nil)
          (agent-q-confirm-safety-levels '(:dangerous))
          (agent-q--pending nil)
          (agent-q--asking nil)
          (agent-q--queue-timer nil))
     (agent-q-register-builtin-tools ,var)
     (agent-q-register-tool
      (agent-q-define-tool "fail_always" "Fails." '((:name "why" :type :string))
                           :handler (lambda (args) (error "It broke: %s" (gethash "why" args))))
      ,var)
     (agent-q-register-tool
      (agent-q-define-tool "touch" "Create a file." '((:name "path" :type :string))
                           :required '("path") :safety-level :dangerous
                           :handler (lambda (args)
                                      (write-region "" nil (gethash "path" args))
                                      "touched"))
      ,var)
     (unwind-protect (progn ,@body)
       (agent-q-cancel-pending)
       (delete-file agent-q-audit-file))))

(defun agent-q-bridge-audit-ids ()
  "The ids of the calls in `agent-q-audit-file', in order."
  (with-temp-buffer
    (insert-file-contents agent-q-audit-file)
    (mapcar (lambda (line) (plist-get (json-parse-string line :object-type 'plist) :id))
            (split-string (buffer-string) "\n" t))))

(defun agent-q-bridge-file (file)
  "FILE's contents."
  (with-temp-buffer (insert-file-contents file) (buffer-string)))

(provide 'agent-q-bridge-support)

;;; agent-q-bridge-support.el ends here
