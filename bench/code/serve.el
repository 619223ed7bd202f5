;;; serve.el --- The Emacs that serves benchmark 9: eglot + agent-q's MCP server  -*- lexical-binding: t -*-

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

;; Started by bench/agent-q-bench-code.el: a batch Emacs with eglot
;; loads this file (agent-q's directory on its load path), with the environment variables AGENT_Q_BENCH_CORPUS (the project),
;; AGENT_Q_BENCH_LANGSERVER (pyright-langserver), AGENT_Q_BENCH_DIR (where
;; the info and stop files are) and, optionally, AGENT_Q_BENCH_COMPILED
;; (agent-q's .elc files, as the run compiled them).
;;
;; Visits rich/console.py, starts eglot on the project with the pinned
;; pyright as M-x eglot would, starts agent-q's MCP server, records its
;; own RSS and a 10 ms timer's lateness (gaps between ticks) and the
;; server's own time for each request (from its sending to its answer's
;; arrival), writes info.eld, and serves until the file `stop' appears;
;; then writes stats.eld (RSS, the late ticks, the server's times, the
;; language servers running) and exits.
;; In an interactive Emacs (`emacs -nw' in tmux, as benchmark 7 runs one)
;; it serves from the command loop; in a batch Emacs from a loop of
;; `accept-process-output'.

;;; Code:

(with-no-warnings
  ;; No compiler processes competing with the servers for the CPU.
  (setq native-comp-deferred-compilation nil
        native-comp-jit-compilation nil))
(require 'cl-lib)
(require 'subr-x)
(require 'agent-q)
(let ((compiled (getenv "AGENT_Q_BENCH_COMPILED")))
  (when (and compiled (file-directory-p compiled))
    (dolist (file (directory-files compiled t "\\`agent-q[^/]*\\.elc\\'"))
      (unless (string-match-p "bench" (file-name-nondirectory file))
        (load file nil t)))))
(require 'eglot)
(require 'python)

(defvar agent-q-bench-serve--ticks nil
  "The late ticks: (TIME GAP-BEYOND-10-MS . CPU), newest first.
CPU is the processor time Emacs used between the two ticks (seconds,
`get-internal-run-time'): a gap Emacs spent computing, not one it
spent waiting for a processor on a loaded machine.")

(defvar agent-q-bench-serve--last nil
  "When the timer last ran: (TIME . CPU).")

(defun agent-q-bench-serve--rss ()
  "Return this Emacs's resident set size in kB."
  (alist-get 'rss (process-attributes (emacs-pid))))

(defun agent-q-bench-serve--servers ()
  "Return the names of the language-server processes of this Emacs."
  (cl-loop for p in (process-list)
           when (and (process-live-p p)
                     (string-match-p "pyright" (format "%s" (process-command p))))
           collect (process-name p)))

(defvar agent-q-bench-serve--published 0
  "How many diagnostics publications the server has sent.")

(defvar agent-q-bench-serve--sent (make-hash-table :test #'eql)
  "Ids of the requests sent to the server, mapped to (METHOD . TIME).")

(defvar agent-q-bench-serve--server-times nil
  "The server's own time per request as Emacs saw it, newest first.
Each is (METHOD SENT MS): the request's method, when it was sent
\(`float-time') and how long the answer took to come.")

(advice-add 'jsonrpc-connection-send :before
            (lambda (_connection &rest args)
              (let ((id (plist-get args :id))
                    (method (plist-get args :method)))
                (when (and id method)
                  (puthash id (cons method (float-time)) agent-q-bench-serve--sent))))
            '((name . agent-q-bench-serve)))

(advice-add 'jsonrpc-connection-receive :before
            (lambda (_connection message &rest _)
              (let* ((id (plist-get message :id))
                     (sent (and id (not (plist-get message :method))
                                (gethash id agent-q-bench-serve--sent))))
                (when sent
                  (remhash id agent-q-bench-serve--sent)
                  (push (list (string-remove-prefix ":" (format "%s" (car sent))) (cdr sent)
                              (* 1000 (- (float-time) (cdr sent))))
                        agent-q-bench-serve--server-times))))
            '((name . agent-q-bench-serve)))

(advice-add 'eglot-handle-notification :after
            (lambda (_server method &rest _)
              (when (eq method 'textDocument/publishDiagnostics)
                (cl-incf agent-q-bench-serve--published)))
            '((name . agent-q-bench-serve)))

(let* ((corpus (file-name-as-directory (getenv "AGENT_Q_BENCH_CORPUS")))
       (dir (file-name-as-directory (getenv "AGENT_Q_BENCH_DIR")))
       (langserver (getenv "AGENT_Q_BENCH_LANGSERVER"))
       (info (expand-file-name "info.eld" dir))
       (stop (expand-file-name "stop" dir))
       (started (float-time)))
  (setq eglot-server-programs
        (cons (cons '(python-mode python-ts-mode) (list langserver "--stdio"))
              eglot-server-programs)
        agent-q-allowed-directories (list corpus)
        agent-q-mcp-allowed-directories (list corpus)
        agent-q-audit-file (expand-file-name "audit.jsonl" dir)
        agent-q-mcp-connection-file (expand-file-name "mcp.json" dir))
  (let ((buffer (find-file-noselect (expand-file-name "rich/console.py" corpus))))
    (with-current-buffer buffer
      (unless (derived-mode-p 'python-mode) (python-mode))
      ;; What M-x eglot does, without its questions.
      (apply #'eglot (eglot--guess-contact))
      (let ((deadline (+ (float-time) 60)))
        (while (and (not (eglot-current-server)) (< (float-time) deadline))
          (accept-process-output nil 0.1)))
      (unless (eglot-current-server)
        (error "Eglot did not start pyright"))))
  (let ((eglot-ready (- (float-time) started))
        (analysed nil)
        (url (agent-q-mcp-start)))
    ;; Let pyright analyse the visited file (it publishes its diagnostics
    ;; once it has), as a user's Emacs would have by the time an agent
    ;; asks; then a second more.
    (let ((end (+ (float-time) 60)))
      (while (and (< agent-q-bench-serve--published 1) (< (float-time) end))
        (accept-process-output nil 0.1)))
    (setq analysed (- (float-time) started))
    (let ((end (+ (float-time) 1)))
      (while (< (float-time) end) (accept-process-output nil 0.1)))
    (garbage-collect)
    (setq agent-q-bench-serve--last (cons (float-time) (float-time (get-internal-run-time))))
    (run-at-time 0.01 0.01
                 (lambda ()
                   (let* ((now (float-time))
                          (cpu (float-time (get-internal-run-time)))
                          (gap (- now (car agent-q-bench-serve--last) 0.01)))
                     (when (> gap 0.002)
                       (push (cons now (cons gap (- cpu (cdr agent-q-bench-serve--last))))
                             agent-q-bench-serve--ticks))
                     (setq agent-q-bench-serve--last (cons now cpu)))))
    (with-temp-file (concat info ".tmp")
      (prin1 (list :url url :token agent-q-mcp--token :pid (emacs-pid)
                   :emacs emacs-version :interactive (not noninteractive)
                   :eglot-seconds eglot-ready
                   :analysed-seconds analysed
                   :rss-before (agent-q-bench-serve--rss)
                   :servers-before (agent-q-bench-serve--servers))
             (current-buffer)))
    (rename-file (concat info ".tmp") info)
    (let ((finish
           (lambda ()
             (with-temp-file (expand-file-name "stats.eld.tmp" dir)
               (prin1 (list :rss-after (agent-q-bench-serve--rss)
                            :servers-after (agent-q-bench-serve--servers)
                            :ticks (reverse agent-q-bench-serve--ticks)
                            :server-times (reverse agent-q-bench-serve--server-times))
                      (current-buffer)))
             (rename-file (expand-file-name "stats.eld.tmp" dir)
                          (expand-file-name "stats.eld" dir))
             (agent-q-mcp-stop)
             (ignore-errors (eglot-shutdown-all))
             (kill-emacs 0))))
      (if noninteractive
          (let ((deadline (+ (float-time) 1800)))
            (while (and (not (file-exists-p stop)) (< (float-time) deadline))
              (accept-process-output nil 0.05))
            (funcall finish))
        ;; An interactive Emacs serves from its command loop, as a user's does.
        (run-at-time 0.2 0.2 (lambda () (when (file-exists-p stop) (funcall finish))))))))

;;; serve.el ends here
