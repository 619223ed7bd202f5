;;; agent-q-demo.el --- A guided demonstration of agent-q  -*- lexical-binding: t -*-

;; Copyright (C) 2026 The agent-q authors

;; Author: The agent-q authors
;; Maintainer: The agent-q authors
;; Keywords: tools
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

;; `make run' starts Emacs with this file and calls `agent-q-demo',
;; which registers three tools, one per safety level, in a private
;; registry, and executes tool calls as an LLM would send them: the safe
;; one runs, the cautious one runs and is logged, the dangerous one asks
;; you first in the minibuffer.  Everything it does is shown, with the
;; code that did it, in the buffer *agent-q-demo*.
;;
;; When gptel can be found (on the load-path, in $AGENT_Q_VENDOR, in
;; ../shared/vendor beside the project, or in ~/.emacs.d/elpa), the demo
;; then sends a real `gptel-request' through agent-q's built-in tools to
;; a scripted model: a small chat-completions server inside this Emacs,
;; on 127.0.0.1, that answers the first request with two tool calls and
;; the second with what it was told.  No network and no API key are
;; needed.  Without gptel the demo says so and does the rest.

;;; Code:

(require 'cl-lib)
(require 'json)
(require 'subr-x)
(require 'agent-q)

(defvar agent-q-demo--registry nil
  "The registry the demonstration uses.")

(defun agent-q-demo--insert (&rest parts)
  "Insert PARTS into the demo buffer and keep it visible."
  (with-current-buffer (get-buffer-create "*agent-q-demo*")
    (let ((inhibit-read-only t))
      (goto-char (point-max))
      (apply #'insert parts))
    (let ((window (get-buffer-window (current-buffer))))
      (when window (set-window-point window (point-max))))))

(defun agent-q-demo--show-results (results)
  "Insert the tool RESULTS, one per line."
  (dolist (r results)
    (agent-q-demo--insert
     (format "  %s  %-8s %s\n"
             (plist-get r :id)
             (if (plist-get r :success) "ok" "FAILED")
             (truncate-string-to-width
              (replace-regexp-in-string "\n" " | " (plist-get r :content)) 90 nil nil "...")))))

(defun agent-q-demo--register ()
  "Register the demonstration tools in `agent-q-demo--registry'."
  (setq agent-q-demo--registry (agent-q-make-registry))
  (agent-q-deftool "emacs_version" "Report the running Emacs's version." nil
    :registry agent-q-demo--registry
    :handler (lambda (_args) (emacs-version)))
  (agent-q-deftool "add_numbers" "Evaluate the sum of a list of numbers (logged)."
    '((:name "numbers" :type :array :items (:type :number) :description "Numbers to add"))
    :required '("numbers") :safety-level :cautious :categories '(:execution)
    :registry agent-q-demo--registry
    :handler (lambda (args) (apply #'+ (gethash "numbers" args))))
  (agent-q-deftool "write_note" "Write a note to a file.  Asks the user first."
    '((:name "path" :type :string :description "File to write")
      (:name "text" :type :string :description "The note"))
    :required '("path" "text") :safety-level :dangerous :categories '(:filesystem)
    :registry agent-q-demo--registry
    ;; The guard resolves and pins the file (the prompt shows it); the
    ;; handler writes that file or nothing (see agent-q-guard.el).
    :guard #'agent-q-builtins--write-file-guard
    :handler (lambda (args)
               (let ((written (agent-q-guard-write-pinned
                               (expand-file-name (gethash "path" args))
                               (encode-coding-string (gethash "text" args) 'utf-8-unix)
                               #o644)))
                 (format "Wrote %d characters to %s" (length (gethash "text" args))
                         (plist-get written :file))))))

(defvar agent-q-demo--audit-file nil
  "The demonstration's own audit file, removed when Emacs exits.")

(defun agent-q-demo--private-audit-file ()
  "Point `agent-q-audit-file' at a temporary file for this Emacs.
The demonstration's calls, the asynchronous gptel request's included,
never reach the user's real audit file."
  (unless agent-q-demo--audit-file
    (setq agent-q-demo--audit-file (make-temp-file "agent-q-demo-audit" nil ".jsonl"))
    (add-hook 'kill-emacs-hook
              (lambda () (ignore-errors (delete-file agent-q-demo--audit-file)))))
  (setq agent-q-audit-file agent-q-demo--audit-file))

(defun agent-q-demo--run ()
  "The demonstration itself."
  (let* ((note (make-temp-file "agent-q-demo-note" nil ".txt")))
    (agent-q-demo--register)
    (agent-q-demo--insert
     (propertize "agent-q demonstration\n\n" 'face 'bold)
     "Three tools are registered, one per safety level:\n"
     (mapconcat (lambda (tool)
                  (format "  %-14s %-10s %s" (agent-q-tool-name tool)
                          (agent-q-tool-safety-level tool) (agent-q-tool-description tool)))
                (agent-q-get-tools :registry agent-q-demo--registry :include-disabled t)
                "\n")
     "\n\nWhat the LLM is sent, (agent-q-tools-to-schema nil :json t):\n  "
     (agent-q-tools-to-schema nil :json t :registry agent-q-demo--registry)
     "\n\nThe LLM answers with tool calls; agent-q executes them:\n\n"
     "1. A safe call, a cautious call, an unknown tool and invalid arguments:\n")
    (agent-q-demo--show-results
     (agent-q-execute-tool-calls
      '((:id "call_1" :name "emacs_version" :arguments nil)
        (:id "call_2" :name "add_numbers" :arguments "{\"numbers\": [1, 2, 3.5]}")
        (:id "call_3" :name "format_disk" :arguments nil)
        (:id "call_4" :name "add_numbers" :arguments (:numbers "seven")))
      agent-q-demo--registry))
    (agent-q-demo--insert
     "\n2. A dangerous call.  Answer the prompt in the minibuffer:\n"
     "   y approves, n denies, r denies with a reason, e edits the arguments.\n")
    (redisplay)
    (agent-q-demo--show-results
     (agent-q-execute-tool-calls
      `((:id "call_5" :name "write_note"
             :arguments (:path ,note :text "Written by agent-q after you approved.\n")))
      agent-q-demo--registry))
    (agent-q-demo--insert
     (format "\n   The note file now holds: %S\n"
             (with-temp-buffer (insert-file-contents note) (buffer-string)))
     "\n3. Cautious and dangerous executions were logged (M-x agent-q-show-log):\n"
     (with-current-buffer (get-buffer-create agent-q-log-buffer-name)
       (replace-regexp-in-string "^" "   " (buffer-string)))
     "\nPer-tool metrics, (agent-q-tool-metrics):\n"
     (mapconcat (lambda (m) (format "   %S" m))
                (agent-q-tool-metrics agent-q-demo--registry) "\n")
     "\n\nThe built-in tools an LLM gets in this Emacs: "
     (mapconcat #'identity (agent-q-list-registered-tools) ", ")
     "\n")
    (delete-file note))
  (agent-q-demo--gptel))

(defun agent-q-demo--done ()
  "End the demonstration."
  (agent-q-demo--insert "\nThat is all.  C-x C-c quits.\n"))

;;;; A real gptel request, to a scripted model in this Emacs

(declare-function gptel-make-openai "gptel-openai")
(declare-function gptel-request "gptel-request")
(declare-function agent-q-gptel-tools "agent-q-gptel")
(declare-function gptel-tool-name "gptel-request" (tool))
(defvar gptel-backend)
(defvar gptel-model)
(defvar gptel-stream)
(defvar gptel-tools)

(defun agent-q-demo--vendor-dirs ()
  "Directories to search for gptel when it is not on the `load-path'."
  (let ((root (file-name-directory
               (directory-file-name
                (file-name-directory (or load-file-name (locate-library "agent-q-demo")))))))
    (delq nil (list (let ((env (getenv "AGENT_Q_VENDOR")))
                      (and env (not (string-empty-p env)) (expand-file-name "gptel" env)))
                    (expand-file-name "../shared/vendor/gptel" root)
                    (car (last (file-expand-wildcards
                                (expand-file-name "elpa/gptel-*" user-emacs-directory))))))))

(defun agent-q-demo--find-gptel ()
  "Make gptel loadable if it can be found; return non-nil when it is."
  (unless (locate-library "gptel-request")
    (let ((dir (cl-find-if (lambda (d) (file-exists-p (expand-file-name "gptel-request.el" d)))
                           (agent-q-demo--vendor-dirs))))
      (when dir (add-to-list 'load-path dir))))
  (when (and (< emacs-major-version 29) (not (locate-library "compat")))
    (let ((compat (car (last (append
                              (file-expand-wildcards "/usr/share/emacs/site-lisp/elpa-src/compat-*")
                              (file-expand-wildcards
                               (expand-file-name "elpa/compat-*" user-emacs-directory)))))))
      (when compat (add-to-list 'load-path compat))))
  (and (locate-library "gptel-request")
       (ignore-errors (require 'gptel) (require 'gptel-openai) (require 'agent-q-gptel) t)))

(defvar agent-q-demo--model-turns 0
  "How many requests the scripted model answered.")

(defun agent-q-demo--model-answer (request note)
  "The scripted model's answer (a chat.completion plist) to REQUEST.
The first answer calls describe_symbol and write_file (on NOTE); the
second says what the tool messages of REQUEST told it."
  (cl-incf agent-q-demo--model-turns)
  (let ((message
         (if (= agent-q-demo--model-turns 1)
             (list :role "assistant" :content nil
                   :tool_calls
                   (vector
                    (list :id "call_demo_1" :type "function"
                          :function (list :name "describe_symbol"
                                          :arguments (json-encode '((symbol . "mapcar")))))
                    (list :id "call_demo_2" :type "function"
                          :function (list :name "write_file"
                                          :arguments (json-encode
                                                      `((path . ,note)
                                                        (content . "Written through gptel.\n")))))))
           (list :role "assistant"
                 :content
                 (concat "I was told:\n"
                         (mapconcat
                          (lambda (m)
                            (format "  %s -> %s" (plist-get m :tool_call_id)
                                    (truncate-string-to-width
                                     (car (split-string (plist-get m :content) "\n")) 70 nil nil "...")))
                          (cl-remove-if-not (lambda (m) (equal (plist-get m :role) "tool"))
                                            (append (plist-get request :messages) nil))
                          "\n"))))))
    (list :id "demo" :object "chat.completion" :created 0 :model "demo-model"
          :choices (vector (list :index 0 :message message
                                 :finish_reason (if (plist-get message :tool_calls)
                                                    "tool_calls" "stop"))))))

(defun agent-q-demo--model-filter (note)
  "A process filter answering chat-completion requests; NOTE as above."
  (lambda (connection data)
    (let ((buffer (concat (or (process-get connection 'data) "") data)))
      (process-put connection 'data buffer)
      (when-let ((end (string-search "\r\n\r\n" buffer)))
        (let* ((headers (substring buffer 0 end))
               (size (if (string-match "^content-length: *\\([0-9]+\\)" (downcase headers))
                           (string-to-number (match-string 1 (downcase headers)))
                         0))
               (body (substring buffer (+ end 4))))
          (cond
           ((< (string-bytes body) size)
            (when (and (string-match-p "^expect: *100-continue" (downcase headers))
                       (not (process-get connection 'continued)))
              (process-put connection 'continued t)
              (process-send-string connection "HTTP/1.1 100 Continue\r\n\r\n")))
           (t
            (let* ((request (json-parse-string (decode-coding-string body 'utf-8)
                                               :object-type 'plist :null-object nil))
                   (answer (encode-coding-string
                            (json-encode (agent-q-demo--model-answer request note)) 'utf-8)))
              (process-send-string
               connection
               (format "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                       (length answer) answer))
              (delete-process connection)))))))))

(defun agent-q-demo--gptel ()
  "Part 4: a real gptel request through agent-q's tools, to a scripted model."
  (agent-q-demo--insert
   "\n4. gptel: a real `gptel-request' with (agent-q-gptel-tools), sent to a scripted\n"
   "   model served by this Emacs on 127.0.0.1 (no network, no API key).\n")
  (if (not (agent-q-demo--find-gptel))
      (progn
        (agent-q-demo--insert
         "   gptel is not installed here (looked on the load-path and in "
         (abbreviate-file-name (expand-file-name "elpa/gptel-*" user-emacs-directory))
         "), so this part is skipped.\n"
         "   M-x package-install RET gptel RET installs it (and, on Emacs 28, compat).\n")
        (agent-q-demo--done))
    (let* ((note (make-temp-file "agent-q-demo-gptel" nil ".txt"))
           (server (make-network-process :name "agent-q-demo-model" :server t
                                         :host "127.0.0.1" :service t :family 'ipv4
                                         :coding 'binary :noquery t
                                         :filter (agent-q-demo--model-filter note)))
           (gptel-backend (gptel-make-openai "agent-q-demo"
                            :host (format "127.0.0.1:%d" (process-contact server :service))
                            :protocol "http" :endpoint "/v1/chat/completions"
                            :key "no-key-needed" :models '(demo-model)))
           (gptel-model 'demo-model)
           (gptel-stream nil)
           (gptel-tools (agent-q-gptel-tools)))
      (setq agent-q-demo--model-turns 0)
      (agent-q-demo--insert
       "   The model asks for describe_symbol (safe: it runs) and write_file (dangerous:\n"
       "   answer the prompt).  gptel waits without blocking Emacs meanwhile.\n")
      (gptel-request "Describe mapcar, then write a note."
        :buffer (get-buffer-create " *agent-q-demo-gptel*")
        :callback
        (lambda (response _info)
          (cond
           ((eq (car-safe response) 'tool-result)
            (agent-q-demo--insert "   Tool results gptel sends back:\n")
            (dolist (result (cdr response))
              (agent-q-demo--insert
               (format "     %-16s %s\n" (gptel-tool-name (nth 0 result))
                       (truncate-string-to-width
                        (replace-regexp-in-string "\n" " | " (nth 2 result)) 70 nil nil "...")))))
           ((and (stringp response) (= agent-q-demo--model-turns 2))
            (agent-q-demo--insert
             "   The model's answer:\n"
             (replace-regexp-in-string "^" "     " response) "\n"
             (let ((print-escape-newlines t))
               (format "   The note file holds: %S\n"
                       (with-temp-buffer (insert-file-contents note) (buffer-string)))))
            (delete-process server)
            (delete-file note)
            (agent-q-demo--done))
           ((null response)
            (agent-q-demo--insert "   The request failed.\n")
            (delete-process server)
            (delete-file note)
            (agent-q-demo--done))))))))

;;;###autoload
(defun agent-q-demo ()
  "Show agent-q registering tools and running them at every safety level."
  (interactive)
  (agent-q-demo--private-audit-file)
  (with-current-buffer (get-buffer-create "*agent-q-demo*")
    (let ((inhibit-read-only t)) (erase-buffer))
    (special-mode))
  (switch-to-buffer "*agent-q-demo*")
  (delete-other-windows)
  ;; Start once the frame is up, so the prompt appears in a live minibuffer.
  (run-with-idle-timer 0.2 nil #'agent-q-demo--run))

(provide 'agent-q-demo)

;;; agent-q-demo.el ends here
