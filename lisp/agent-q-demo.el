;;; agent-q-demo.el --- A guided demonstration of agent-q  -*- lexical-binding: t -*-

;; Copyright (C) 2026 The agent-q authors

;; Author: The agent-q authors
;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1"))
;; Keywords: tools

;; This file is not part of GNU Emacs.

;;; Commentary:

;; `make run' starts Emacs with this file and calls `agent-q-demo',
;; which registers three tools, one per safety level, in a private
;; registry, and executes tool calls as an LLM would send them: the safe
;; one runs, the cautious one runs and is logged, the dangerous one asks
;; you first in the minibuffer.  Everything it does is shown, with the
;; code that did it, in the buffer *agent-q-demo*.

;;; Code:

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
    :handler (lambda (args)
               (write-region (gethash "text" args) nil (gethash "path" args))
               (format "Wrote %d characters to %s" (length (gethash "text" args))
                       (gethash "path" args)))))

(defun agent-q-demo--run ()
  "The demonstration itself."
  (let* ((note (make-temp-file "agent-q-demo-note" nil ".txt"))
         (agent-q-audit-file (make-temp-file "agent-q-demo-audit" nil ".jsonl")))
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
     "\n\nThat is all.  C-x C-c quits.\n")
    (delete-file note)
    (delete-file agent-q-audit-file)))

;;;###autoload
(defun agent-q-demo ()
  "Show agent-q registering tools and running them at every safety level."
  (interactive)
  (with-current-buffer (get-buffer-create "*agent-q-demo*")
    (let ((inhibit-read-only t)) (erase-buffer))
    (special-mode))
  (switch-to-buffer "*agent-q-demo*")
  (delete-other-windows)
  ;; Start once the frame is up, so the prompt appears in a live minibuffer.
  (run-with-idle-timer 0.2 nil #'agent-q-demo--run))

(provide 'agent-q-demo)

;;; agent-q-demo.el ends here
