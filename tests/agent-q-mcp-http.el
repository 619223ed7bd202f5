;;; agent-q-mcp-http.el --- A minimal MCP client over curl, for the tests  -*- lexical-binding: t -*-

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

;; The MCP tests of agent-q-mcp.el talk to the real server on a real
;; socket.  This is the client side they share: each request is a curl
;; process (so the Emacs under test stays free to serve the call while
;; the request waits), speaking the 2025-06-18 Streamable HTTP
;; transport: `initialize' opens a session (Mcp-Session-Id), then
;; `notifications/initialized', then `tools/call'.  Responses come as
;; JSON or as a Server-Sent Events stream; both are read.
;;
;; The Python SDK end-to-end tests live elsewhere; this client is
;; deliberately small, so that what the server answers is visible.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'subr-x)

(defconst agent-q-mcp-http-protocol "2025-06-18"
  "The protocol version these tests ask for.")

(defun agent-q-mcp-http-wait (predicate &optional seconds what)
  "Process events until PREDICATE returns non-nil, at most SECONDS (default 20).
Return its value; fail the test naming WHAT on a timeout."
  (let ((deadline (+ (float-time) (or seconds 20)))
        (value nil))
    (while (and (not (setq value (funcall predicate))) (< (float-time) deadline))
      (accept-process-output nil 0.02))
    (or value (ert-fail (list "Timed out waiting" (or what predicate))))))

(cl-defun agent-q-mcp-http-post (url body &key token session headers)
  "Start a curl process that POSTs BODY (a string) to URL; return the process.
TOKEN, when non-nil, goes in the Authorization header; SESSION in
Mcp-Session-Id (with MCP-Protocol-Version); HEADERS are more \"Name:
value\" strings.  Read the answer with `agent-q-mcp-http-response'."
  (let* ((buffer (generate-new-buffer " *agent-q-mcp-curl*"))
         (args (append (list "-s" "-i" "-N" "--max-time" "90" "-X" "POST"
                             "-H" "Content-Type: application/json"
                             "-H" "Accept: application/json, text/event-stream")
                       (and token (list "-H" (concat "Authorization: Bearer " token)))
                       (and session (list "-H" (concat "Mcp-Session-Id: " session)
                                          "-H" (concat "MCP-Protocol-Version: "
                                                       agent-q-mcp-http-protocol)))
                       (cl-loop for h in headers append (list "-H" h))
                       (list "--data-binary" "@-" url)))
         (process (make-process :name "agent-q-mcp-curl" :buffer buffer
                                :command (cons (or (executable-find "curl")
                                                   (ert-fail "curl is not installed"))
                                               args)
                                :connection-type 'pipe :coding 'utf-8-unix
                                :noquery t :sentinel #'ignore)))
    (process-send-string process body)
    (process-send-eof process)
    process))

(defun agent-q-mcp-http--parse (text)
  "Parse TEXT, curl's -i output.
Return (:status N :headers ALIST :body BODY :messages LIST)."
  (let* ((text (replace-regexp-in-string "\r" "" text))
         (split (string-search "\n\n" text))
         (head (if split (substring text 0 split) text))
         (body (if split (substring text (+ split 2)) ""))
         (lines (split-string head "\n" t))
         (status (and lines (string-match "\\`HTTP/[0-9.]+ \\([0-9]+\\)" (car lines))
                      (string-to-number (match-string 1 (car lines)))))
         (headers (delq nil (mapcar (lambda (line)
                                      (and (string-match "\\`\\([^:]+\\): *\\(.*\\)\\'" line)
                                           (cons (downcase (match-string 1 line))
                                                 (match-string 2 line))))
                                    (cdr lines))))
         (type (or (cdr (assoc "content-type" headers)) ""))
         (messages
          (cond
           ((string-prefix-p "text/event-stream" type)
            (delq nil (mapcar (lambda (line)
                                (and (string-prefix-p "data:" line)
                                     (not (string-blank-p (substring line 5)))
                                     (json-parse-string (substring line 5)
                                                        :object-type 'plist
                                                        :null-object nil :false-object :false)))
                              (split-string body "\n"))))
           ((string-prefix-p "application/json" type)
            (list (json-parse-string body :object-type 'plist
                                     :null-object nil :false-object :false))))))
    (list :status status :headers headers :body body :messages messages)))

(defun agent-q-mcp-http-response (process &optional seconds)
  "Wait (up to SECONDS, default 30) for PROCESS to end; return its parsed answer.
See `agent-q-mcp-http--parse'."
  (agent-q-mcp-http-wait (lambda () (not (process-live-p process))) (or seconds 30)
                         "the HTTP answer")
  ;; The last output may still be unread after the process ended.
  (while (accept-process-output process 0.01))
  (let ((text (with-current-buffer (process-buffer process) (buffer-string))))
    (kill-buffer (process-buffer process))
    (agent-q-mcp-http--parse text)))

(defun agent-q-mcp-http-request (url body &rest keys)
  "POST BODY to URL (KEYS as for `agent-q-mcp-http-post') and return the answer."
  (agent-q-mcp-http-response (apply #'agent-q-mcp-http-post url body keys)))

(defun agent-q-mcp-http-json (method id &optional params)
  "A JSON-RPC message: METHOD with PARAMS (a plist); a request if ID is non-nil."
  (json-serialize (append (list :jsonrpc "2.0")
                          (and id (list :id id))
                          (list :method method)
                          (and params (list :params params)))))

(defun agent-q-mcp-http-connect (url token &optional name version)
  "Open a session with the server at URL, as client NAME VERSION; return its id.
TOKEN is the bearer token.  Fails the test when the server does not
answer `initialize' as the specification says."
  (let* ((answer (agent-q-mcp-http-request
                  url (agent-q-mcp-http-json
                       "initialize" 1
                       (list :protocolVersion agent-q-mcp-http-protocol
                             :capabilities (make-hash-table)
                             :clientInfo (list :name (or name "agent-q-ert")
                                               :version (or version "1.0"))))
                  :token token))
         (session (cdr (assoc "mcp-session-id" (plist-get answer :headers))))
         (result (plist-get (car (plist-get answer :messages)) :result)))
    (should (eql (plist-get answer :status) 200))
    (should (equal (plist-get (plist-get result :serverInfo) :name) "agent-q"))
    (should session)
    (let ((initialized (agent-q-mcp-http-request
                        url (agent-q-mcp-http-json "notifications/initialized" nil)
                        :token token :session session)))
      (should (eql (plist-get initialized :status) 202)))
    session))

(defvar agent-q-mcp-http--next-id 100
  "The id of the next request `agent-q-mcp-http-call-start' sends.")

(defun agent-q-mcp-http-call-start (url token session tool arguments)
  "Start a tools/call of TOOL with ARGUMENTS (a plist) in SESSION.
Return the curl process.
URL and TOKEN reach the server.  Read the result with
`agent-q-mcp-http-call-result'."
  (let* ((id (cl-incf agent-q-mcp-http--next-id))
         (process (agent-q-mcp-http-post
                   url (agent-q-mcp-http-json "tools/call" id
                                              (list :name tool
                                                    :arguments (or arguments (make-hash-table))))
                   :token token :session session)))
    (process-put process 'agent-q-mcp-id id)
    process))

(defun agent-q-mcp-http-cancel (url token session call)
  "Send notifications/cancelled for the tools/call of the process CALL in SESSION.
URL and TOKEN reach the server.  Return the HTTP status."
  (plist-get (agent-q-mcp-http-request
              url (agent-q-mcp-http-json "notifications/cancelled" nil
                                         (list :requestId (process-get call 'agent-q-mcp-id)
                                               :reason "the test cancelled it"))
              :token token :session session)
             :status))

(defun agent-q-mcp-http-call-result (process &optional seconds)
  "Wait up to SECONDS for the tools/call of PROCESS.
Return (:error BOOL :text TEXT).
Fails the test unless the answer is an HTTP 200 carrying a result."
  (let* ((answer (agent-q-mcp-http-response process seconds))
         (response (cl-find-if (lambda (m) (plist-member m :id)) (plist-get answer :messages)))
         (result (plist-get response :result)))
    (unless (and (eql (plist-get answer :status) 200) result)
      (ert-fail (list "No tools/call result" answer)))
    (list :error (eq (plist-get result :isError) t)
          :text (mapconcat (lambda (c) (plist-get c :text)) (plist-get result :content) ""))))

(defun agent-q-mcp-http-call (url token session tool arguments &optional seconds)
  "Call TOOL with ARGUMENTS in SESSION at URL with TOKEN; wait up to SECONDS.
Return (:error BOOL :text TEXT)."
  (agent-q-mcp-http-call-result
   (agent-q-mcp-http-call-start url token session tool arguments) seconds))

(defun agent-q-mcp-http-stateless-call (url token tool arguments &rest keys)
  "Call TOOL with ARGUMENTS as a stateless 2026-07-28 request to URL with TOKEN.
No session: the client names itself in the request's _meta, as KEYS
:name and :version say (default agent-q-ert 1.0).  KEYS :session, when
non-nil, is sent as Mcp-Session-Id all the same (a session the request
has no part in).  Return (:error BOOL :text TEXT)."
  (let ((meta (make-hash-table :test #'equal))
        (info (list :name (or (plist-get keys :name) "agent-q-ert")
                    :version (or (plist-get keys :version) "1.0"))))
    (puthash "io.modelcontextprotocol/protocolVersion" "2026-07-28" meta)
    (puthash "io.modelcontextprotocol/clientCapabilities" (make-hash-table) meta)
    (puthash "io.modelcontextprotocol/clientInfo" info meta)
    (agent-q-mcp-http-call-result
     (agent-q-mcp-http-post
      url (agent-q-mcp-http-json "tools/call" (cl-incf agent-q-mcp-http--next-id)
                                 (list :name tool
                                       :arguments (or arguments (make-hash-table))
                                       :_meta meta))
      :token token
      :headers (append (list "MCP-Protocol-Version: 2026-07-28"
                             "Mcp-Method: tools/call"
                             (concat "Mcp-Name: " tool))
                       (and (plist-get keys :session)
                            (list (concat "Mcp-Session-Id: " (plist-get keys :session)))))))))

;;;; A client listening, and the main loop's stall

(defun agent-q-mcp-http-listen (url token session)
  "Open SESSION's GET stream at URL with TOKEN, as a client listening.
Return the curl process once the server has answered 200: the stream
then stays open, holding its connection, until the server ends it.
Its buffer collects the Server-Sent Events."
  (let* ((buffer (generate-new-buffer " *agent-q-mcp-curl-get*"))
         (process (make-process
                   :name "agent-q-mcp-curl-get" :buffer buffer
                   :command (list (or (executable-find "curl") (ert-fail "curl is not installed"))
                                  "-s" "-i" "-N" "--max-time" "90"
                                  "-H" "Accept: text/event-stream"
                                  "-H" (concat "Authorization: Bearer " token)
                                  "-H" (concat "Mcp-Session-Id: " session)
                                  "-H" (concat "MCP-Protocol-Version: " agent-q-mcp-http-protocol)
                                  url)
                   :connection-type 'pipe :coding 'utf-8-unix
                   :noquery t :sentinel #'ignore)))
    (agent-q-mcp-http-wait (lambda () (with-current-buffer buffer
                                        (string-match-p "\\`HTTP/[0-9.]+ 200" (buffer-string))))
                           20 "the GET stream's 200")
    process))

(defun agent-q-mcp-http-send-part (url token session body)
  "Send the head of a POST of BODY in SESSION to URL with TOKEN, and half of BODY.
A client on a slow link, in the middle of its request: return the
network process, which holds the connection until the server closes it.
Its buffer collects what the server answers."
  (let* ((port (and (string-match "\\`http://127\\.0\\.0\\.1:\\([0-9]+\\)/" url)
                    (string-to-number (match-string 1 url))))
         (path (substring url (match-end 0)))
         (process (make-network-process
                   :name "agent-q-mcp-slow-client" :buffer (generate-new-buffer " *agent-q-mcp-slow*")
                   :host "127.0.0.1" :service port :family 'ipv4
                   :coding 'binary :noquery t :sentinel #'ignore)))
    (process-send-string
     process
     (concat (format "POST /%s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" path port)
             "Content-Type: application/json\r\n"
             "Accept: application/json, text/event-stream\r\n"
             "Authorization: Bearer " token "\r\n"
             "Mcp-Session-Id: " session "\r\n"
             "MCP-Protocol-Version: " agent-q-mcp-http-protocol "\r\n"
             (format "Content-Length: %d\r\n\r\n" (string-bytes body))
             (substring body 0 (/ (length body) 2))))
    process))

(defun agent-q-mcp-http-stall (function)
  "Call FUNCTION while a 10 ms timer repeats; return how long Emacs stalled.
Return (:call SECONDS :late SECONDS): how long the call took, and the
most the timer fired late between 50 ms before the call and 300 ms
after it (while the main loop ran, e.g. for what the call left to
other threads)."
  (let* ((period 0.01)
         (last nil)
         (late 0.0)
         (timer (run-at-time period period
                             (lambda ()
                               (let ((now (float-time)))
                                 (when last
                                   (setq late (max late (- now last period))))
                                 (setq last now)))))
         (spin (lambda (seconds)
                 (let ((until (+ (float-time) seconds)))
                   (while (< (float-time) until)
                     (accept-process-output nil 0.005)))))
         (call nil))
    (unwind-protect
        (progn
          (funcall spin 0.05)
          (let ((start (float-time)))
            (funcall function)
            (setq call (- (float-time) start)))
          (funcall spin 0.3))
      (cancel-timer timer))
    (list :call call :late late)))

(provide 'agent-q-mcp-http)

;;; agent-q-mcp-http.el ends here
