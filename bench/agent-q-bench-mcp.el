;;; agent-q-bench-mcp.el --- Benchmark 7: MCP calls as the agents see them  -*- lexical-binding: t -*-

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

;; Safe calls over MCP (Streamable HTTP, 2025-06-18 sessions), measured
;; by bench/mcp-load.py, a client that writes each request in one piece
;; on a keep-alive connection with TCP_NODELAY, as Node's fetch under
;; the agents' SDK does:
;;
;; - latency: 200 calls one after the other on an idle Emacs (p50,
;;   p90, max), read_file of a 2-line file inside the allowed
;;   directory (the read guard runs) and describe_symbol of `car';
;; - throughput: 8 clients making 100 calls each at once.
;;
;; The reference is the official MCP Python SDK's own server (FastMCP)
;; serving the same two tools, measured by the same client in the same
;; run.  agent-q's calls are audited (to a temporary file) and logged,
;; as every MCP call is.  Targets: p50 under 5 ms, throughput at least
;; the reference's.

;;; Code:

(require 'cl-lib)
(require 'json)
(require 'agent-q-bench)

(declare-function agent-q-mcp-start "agent-q-mcp" (&optional interactive))
(declare-function agent-q-mcp-stop "agent-q-mcp" (&optional interactive))
(defvar agent-q-mcp--token)
(defvar agent-q-mcp-connection-file)
(defvar agent-q-audit-file)
(defvar agent-q-allowed-directories)
(defvar agent-q-mcp-allowed-directories)

(defun agent-q-bench-mcp--python ()
  "The Python of the MCP SDK 1.x's virtual environment (make test installs it)."
  (let ((python (expand-file-name "../target/mcp-venv/sdk1/bin/python"
                                  (or agent-q-bench-source-directory agent-q-bench-directory))))
    (and (file-executable-p python) python)))

(defun agent-q-bench-mcp--script ()
  "The load client's file name."
  (expand-file-name "mcp-load.py" (or agent-q-bench-source-directory agent-q-bench-directory)))

(defun agent-q-bench-mcp--run (url token tool arguments)
  "Run the load client against URL with TOKEN calling TOOL with ARGUMENTS.
Emacs serves meanwhile: it waits in `accept-process-output', as an idle
Emacs waits for input.  Return the client's JSON answer as a plist."
  (let* ((out (generate-new-buffer " *mcp-load*"))
         (process (make-process :name "mcp-load" :buffer out :noquery t
                                :connection-type 'pipe :sentinel #'ignore
                                :command (list (agent-q-bench-mcp--python)
                                               (agent-q-bench-mcp--script)
                                               url (or token "") tool
                                               (json-encode arguments)
                                               "200" "8" "100")))
         (deadline (+ (float-time) 300)))
    (unwind-protect
        (progn
          (while (and (process-live-p process) (< (float-time) deadline))
            (accept-process-output nil 0.05))
          (with-current-buffer out
            (goto-char (point-max))
            (if (re-search-backward "^{.*}$" nil t)
                (json-parse-string (match-string 0) :object-type 'plist)
              (error "The load client failed: %s" (buffer-string)))))
      (when (process-live-p process) (delete-process process))
      (kill-buffer out))))

(defun agent-q-bench-mcp--reference ()
  "Start the reference server; return (PROCESS . URL)."
  (let* ((port-file (make-temp-name (expand-file-name "agent-q-bench-port" temporary-file-directory)))
         (process (make-process :name "mcp-reference" :buffer (generate-new-buffer " *reference*")
                                :noquery t :connection-type 'pipe :sentinel #'ignore
                                :command (list (agent-q-bench-mcp--python)
                                               (agent-q-bench-mcp--script)
                                               "--serve-reference" port-file)))
         (deadline (+ (float-time) 30)))
    (while (and (not (file-exists-p port-file)) (process-live-p process)
                (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (unless (file-exists-p port-file)
      (error "The reference server did not start: %s"
             (with-current-buffer (process-buffer process) (buffer-string))))
    (let ((port (with-temp-buffer (insert-file-contents port-file) (buffer-string))))
      (delete-file port-file)
      ;; Give uvicorn a moment to listen after it wrote the port.
      (sleep-for 1)
      (cons process (format "http://127.0.0.1:%s/mcp" port)))))

(defun agent-q-bench-mcp--row (label result)
  "A note line for LABEL's RESULT."
  (agent-q-bench-note "| %s | %.2f | %.2f | %.1f | %.0f |%s" label
                      (plist-get result :p50_ms) (plist-get result :p90_ms)
                      (plist-get result :max_ms) (plist-get result :calls_per_s)
                      (let ((errors (plist-get result :errors)))
                        (if (> (length errors) 0)
                            (format " %d client(s) failed: %s" (length errors) (aref errors 0))
                          ""))))

(defun agent-q-bench-mcp ()
  "Benchmark 7: safe MCP calls, agent-q against the SDK's reference server."
  (if (not (agent-q-bench-mcp--python))
      (agent-q-bench-pending "the MCP SDK's venv is missing (scripts/ensure-deps.sh --test makes it)")
    (let* ((dir (make-temp-file "agent-q-bench-mcp" t))
           (file (expand-file-name "two-lines.txt" dir))
           (agent-q-allowed-directories (list dir))
           (agent-q-mcp-allowed-directories (list dir))
           (agent-q-audit-file (expand-file-name "audit.jsonl" dir))
           (agent-q-mcp-connection-file (expand-file-name "mcp.json" dir))
           (reference (agent-q-bench-mcp--reference))
           (workloads `(("read_file" (:path ,file)) ("describe_symbol" (:symbol "car")))))
      (with-temp-file file (insert "first line\nsecond line\n"))
      (unwind-protect
          (let ((url (agent-q-mcp-start)))
            (agent-q-bench-note "200 sequential calls on one keep-alive connection (TCP_NODELAY, each request written in one piece), then 8 clients x 100 calls at once.")
            (agent-q-bench-note "")
            (agent-q-bench-note "| server, tool | p50 ms | p90 ms | max ms | calls/s (8 clients) |")
            (agent-q-bench-note "|---|---|---|---|---|")
            (pcase-dolist (`(,tool ,arguments) workloads)
              (agent-q-bench-mcp--row (format "agent-q, %s" tool)
                                      (agent-q-bench-mcp--run url agent-q-mcp--token tool arguments))
              (agent-q-bench-mcp--row (format "MCP Python SDK (FastMCP), %s" tool)
                                      (agent-q-bench-mcp--run (cdr reference) nil tool arguments))))
        (agent-q-mcp-stop)
        (delete-process (car reference))
        (kill-buffer (process-buffer (car reference)))
        (delete-directory dir t)))))

(agent-q-bench-define-section
 7 "mcp" "7. MCP calls: latency and throughput against the SDK's reference server"
 #'agent-q-bench-mcp)

(provide 'agent-q-bench-mcp)

;;; agent-q-bench-mcp.el ends here
