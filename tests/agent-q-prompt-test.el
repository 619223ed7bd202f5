;;; agent-q-prompt-test.el --- Tests for agent-q-prompt.el  -*- lexical-binding: t -*-

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

;; ERT tests of the minibuffer approval prompt, driven with simulated
;; input (keys answered through `agent-q-test-typing', see
;; agent-q-keys-support.el).
;;
;; Run them from the repository's root after `make build' (see the Makefile).

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-q-core)
(require 'agent-q-prompt)
(require 'agent-q-keys-support)

(defvar agent-q-approval-context)

;;;; Helpers

(defun agent-q-prompt-test--keys (&rest parts)
  "Return the events of PARTS: strings in `kbd' syntax, or lists of events."
  (apply #'append
         (mapcar (lambda (p) (if (stringp p) (listify-key-sequence (kbd p)) p))
                 parts)))

(defmacro agent-q-prompt-test--approve (keys level reason tool args &rest context)
  "Call the minibuffer approval of TOOL with ARGS, typing KEYS.
LEVEL and REASON make the approval context, with the keys and values
of CONTEXT.  Return (RESULT . UNREAD), UNREAD being the events left
unread."
  `(agent-q-test-typing ,keys
     (let ((agent-q-approval-context (list :safety-level ,level :reason ,reason ,@context))
           (result nil))
       (setq result (agent-q-approve-in-minibuffer ,tool ,args))
       (cons result unread-command-events))))

;;;; Minibuffer approval

(ert-deftest agent-q-prompt-test-y-approves ()
  (should (equal (agent-q-prompt-test--approve (list ?y) :dangerous nil
                                              "write_file" '(:path "/tmp/x" :content "hi"))
                 '(:approved))))

(ert-deftest agent-q-prompt-test-n-denies ()
  (should (equal (agent-q-prompt-test--approve (list ?n) :dangerous nil
                                              "write_file" '(:path "/tmp/x"))
                 '(:denied))))

(ert-deftest agent-q-prompt-test-other-keys-are-ignored ()
  ;; "x" and "q" are not choices: the prompt keeps reading until "n".
  (should (equal (agent-q-prompt-test--approve (list ?x ?q ?n) :dangerous nil
                                              "write_file" '(:path "/tmp/x"))
                 '(:denied))))

(ert-deftest agent-q-prompt-test-r-denies-with-reason ()
  ;; In batch mode `read-string' reads stdin, not `unread-command-events':
  ;; the typed reason is simulated here.
  (cl-letf (((symbol-function 'read-string)
             (lambda (prompt &rest _)
               (should (string-match-p "Reason for denying write_file" prompt))
               "use a temporary directory")))
    (should (equal (agent-q-prompt-test--approve (list ?r) :dangerous nil
                                                "write_file" '(:path "/etc/x"))
                   '((:denied "use a temporary directory"))))))

(ert-deftest agent-q-prompt-test-e-edits-arguments ()
  (let ((validated nil))
    (cl-letf (((symbol-function 'agent-q-validate-arguments)
               (lambda (tool args &rest _)
                 (push (cons tool args) validated)
                 nil)))
      (let ((result (agent-q-prompt-test--approve
                     (agent-q-prompt-test--keys
                      "e" "C-x h" "C-w"
                      (string-to-list "(:path \"/tmp/y\" :content \"bye\")")
                      "C-c C-c")
                     :dangerous nil "write_file" '(:path "/tmp/x" :content "hi"))))
        (should (equal result '((:modified (:path "/tmp/y" :content "bye")))))
        (should (equal validated '(("write_file" :path "/tmp/y" :content "bye"))))))))

(ert-deftest agent-q-prompt-test-e-invalid-edit-stays-then-cancel-returns-to-prompt ()
  (let ((calls 0))
    (cl-letf (((symbol-function 'agent-q-validate-arguments)
               (lambda (_tool _args &rest _)
                 (cl-incf calls)
                 "Invalid arguments for write_file: field 'path': required")))
      (let ((result (agent-q-prompt-test--approve
                     (agent-q-prompt-test--keys
                      "e" "C-x h" "C-w" (string-to-list "(:content \"x\")")
                      ;; Invalid: the edit buffer stays; then cancel, back to
                      ;; the prompt, and deny.
                      "C-c C-c" "C-c C-k" "n")
                     :dangerous nil "write_file" '(:path "/tmp/x" :content "hi"))))
        (should (equal result '(:denied)))
        (should (= calls 1))))))

(ert-deftest agent-q-prompt-test-e-unreadable-edit-is-refused ()
  (should (equal (car (agent-q-prompt--read-plist "(:a 1 :b)")) :error))
  (should (equal (car (agent-q-prompt--read-plist "(a 1)")) :error))
  (should (equal (car (agent-q-prompt--read-plist "(:a 1) junk")) :error))
  (should (equal (agent-q-prompt--read-plist "(:a \"x\" :b (1 2))")
                 '(:ok (:a "x" :b (1 2))))))

(ert-deftest agent-q-prompt-test-a-remembers-the-tool ()
  (let ((agent-q-prompt--session-approved nil))
    (should (equal (agent-q-prompt-test--approve (list ?a ?!) :dangerous nil
                                                "run_shell" '(:command "ls") :tool-id 41)
                   '(:approved)))
    ;; Second call: not asked, the pending "n" stays unread; the answer
    ;; names the grant, for the audit.
    (should (equal (agent-q-prompt-test--approve (list ?n) :dangerous nil
                                                "run_shell" '(:command "rm x") :tool-id 41)
                   (list '(:granted "\"a\" for run_shell, this Emacs session") ?n)))
    ;; Another tool is still asked.
    (should (equal (agent-q-prompt-test--approve (list ?n) :dangerous nil
                                                "write_file" '(:path "x") :tool-id 42)
                   '(:denied)))
    ;; The same name in another registry, or re-registered (another id): asked.
    (should (equal (agent-q-prompt-test--approve (list ?n) :dangerous nil
                                                "run_shell" '(:command "ls") :tool-id 43)
                   '(:denied)))
    ;; A :reason is always asked, even for a remembered tool.
    (should (equal (agent-q-prompt-test--approve (list ?n) :dangerous "sensitive file"
                                                "run_shell" '(:command "ls") :tool-id 41)
                   '(:denied)))))

;; A real prompt, typed into: "a" approves the tool for the client that
;; called it, never for another client or for calls that name none.
(ert-deftest agent-q-prompt-test-a-belongs-to-the-client ()
  (let ((agent-q-prompt--session-approved nil)
        (prompts nil))
    (cl-letf* ((real (symbol-function 'agent-q-test--read-key))
               ((symbol-function 'agent-q-test--read-key)
                (lambda (prompt &rest rest)
                  (push prompt prompts)
                  (apply real prompt rest))))
      (should (equal (agent-q-prompt-test--approve (list ?a ?!) :dangerous nil
                                                  "write_file" '(:path "x") :tool-id 7
                                                  :client "claude-code 2.1.0 (MCP)")
                     '(:approved)))
      ;; The prompt says whom "always" is for.
      (should (string-match-p "claude-code 2.1.0 (MCP) wants to run write_file" (cadr prompts)))
      (should (string-match-p "(a)lways for claude-code 2.1.0 (MCP)" (cadr prompts)))
      ;; "a" was confirmed in a prompt of its own.
      (should (string-match-p "\\`Approve write_file for claude-code 2.1.0 (MCP) for the rest of this session\\?.*Press !"
                              (car prompts)))
      (setq prompts nil)
      ;; The same client again: approved without a prompt.
      (should (equal (agent-q-prompt-test--approve (list ?n) :dangerous nil
                                                  "write_file" '(:path "y") :tool-id 7
                                                  :client "claude-code 2.1.0 (MCP)")
                     (list '(:granted "\"a\" for write_file from claude-code 2.1.0 (MCP), this Emacs session")
                           ?n)))
      (should-not prompts)
      ;; Another client, a bridge, or a call with no client: each is asked.
      (dolist (client '("gemini-cli-mcp-client 0.61.0 (MCP)" "gptel" nil))
        (should (equal (agent-q-prompt-test--approve (list ?n) :dangerous nil
                                                    "write_file" '(:path "y") :tool-id 7
                                                    :client client)
                       '(:denied))))
      (should (= (length prompts) 3))
      ;; Another tool for the same client: asked.
      (should (equal (agent-q-prompt-test--approve (list ?n) :dangerous nil
                                                  "eval_form" '(:form "1") :tool-id 8
                                                  :client "claude-code 2.1.0 (MCP)")
                     '(:denied))))))

(ert-deftest agent-q-prompt-test-c-g-denies ()
  (should (equal (agent-q-prompt-test--approve (list ?\C-g) :dangerous nil
                                              "write_file" '(:path "/tmp/x"))
                 '(:denied))))

(ert-deftest agent-q-prompt-test-asks-whenever-called ()
  "The executor decides which levels need approval; when asked, the prompt asks."
  (let ((agent-q-prompt--session-approved nil))
    (should (equal (agent-q-prompt-test--approve (list ?n) :cautious nil
                                                "write_scratch" '(:text "x"))
                   '(:denied)))
    ;; A :reason makes even a safe tool ask.
    (should (equal (agent-q-prompt-test--approve (list ?n) :safe "reads ~/.authinfo"
                                                "read_file" '(:path "~/.authinfo"))
                   '(:denied)))
    ;; Without a context the call is asked.
    (agent-q-test-typing (list ?n)
      (should (eq (agent-q-approve-in-minibuffer "write_file" '(:path "x")) :denied)))))

(ert-deftest agent-q-prompt-test-propose-file-edit-with-a-reason-is-asked ()
  "The review is propose_file_edit's approval, but not for reading a guarded file."
  (should (equal (agent-q-prompt-test--approve (list ?n) :dangerous "reads ~/.ssh/id_rsa"
                                              "propose_file_edit"
                                              '(:path "~/.ssh/id_rsa" :original "a" :modified "b"))
                 '(:denied))))

(ert-deftest agent-q-prompt-test-prompt-shows-the-real-file ()
  (let* ((dir (make-temp-file "agent-q-tools-path" t))
         (deep (expand-file-name (concat (make-string 150 ?a) "/target.txt") dir))
         (link (expand-file-name "notes.txt" dir))
         (secret (expand-file-name "secret" dir))
         (prompts nil))
    (unwind-protect
        (progn
          (make-directory (file-name-directory deep) t)
          (with-temp-file secret (insert "s"))
          (make-symbolic-link secret link)
          (let ((default-directory dir)
                (agent-q-approval-context '(:safety-level :dangerous)))
            (agent-q-test-typing (list ?n)
              (agent-q-approve-in-minibuffer "write_file" (list :path deep :content "x"))
              (push (car agent-q-test-prompts) prompts))
            (agent-q-test-typing (list ?n)
              (agent-q-approve-in-minibuffer "write_file" '(:path "notes.txt" :content "x"))
              (push (car agent-q-test-prompts) prompts)))
          (setq prompts (nreverse prompts))
          ;; A long path is never shortened: the file note names it whole (the
          ;; printed arguments may be cut, saying so, so that the keys fit).
          (should (string-match-p (regexp-quote (format "[file: %s]" deep)) (nth 0 prompts)))
          (should (string-match-p "(s)ave rule (\\?)help: \\'" (nth 0 prompts)))
          ;; A relative path through a link names the file it really writes.
          (should (string-match-p (regexp-quote (format "[file: %s, a link to %s]" link secret))
                                  (nth 1 prompts))))
      (delete-directory dir t))))

(ert-deftest agent-q-prompt-test-a-self-reviewing-tool-is-not-prompted ()
  ;; The executor marks the built-in review handler with :review.
  (should (equal (agent-q-prompt-test--approve (list ?n) :dangerous nil
                                              "propose_file_edit"
                                              '(:path "x" :original "a" :modified "b")
                                              :review t)
                 (list :approved ?n)))
  ;; The name alone earns nothing: any tool may be registered under it.
  (should (equal (agent-q-prompt-test--approve (list ?n) :dangerous nil
                                              "propose_file_edit"
                                              '(:path "x" :original "a" :modified "b"))
                 '(:denied))))

(ert-deftest agent-q-prompt-test-long-strings-shortened-and-v-shows-all ()
  (let* ((long (make-string 500 ?z))
         (prompts nil)
         (result
          (cl-letf* ((real (symbol-function 'agent-q-test--read-key))
                     ((symbol-function 'agent-q-test--read-key)
                      (lambda (prompt &rest args)
                        (push prompt prompts)
                        (apply real prompt args))))
            (agent-q-prompt-test--approve (list ?v ?y) :dangerous nil
                                         "write_file" (list :path "/tmp/x" :content long)))))
    (should (equal result '(:approved)))
    (should (= (length prompts) 2))
    (let ((prompt (car prompts)))
      (should (string-match-p "write_file \\[dangerous\\]" prompt))
      (should (string-match-p "\\[420 more chars\\]" prompt))
      (should (string-match-p "long arguments shortened; v shows all" prompt))
      (should-not (string-match-p long prompt)))
    (with-current-buffer "*agent-q call*"
      (should (string-match-p long (buffer-string))))))

(ert-deftest agent-q-prompt-test-shortening-of-large-arguments ()
  ;; Long lists do not recurse deeply; strings inside nested objects
  ;; (hash tables) and vectors are shortened too, without touching ARGS.
  (let* ((table (make-hash-table :test #'equal))
         (long (make-string 300 ?x))
         (_ (puthash "body" long table))
         (args (list :items (number-sequence 1 20000) :object table :vec (vector long)))
         (short (agent-q-prompt--shorten args)))
    (should (cdr short))
    (should (equal (plist-get (car short) :items) (number-sequence 1 20000)))
    (should (string-match-p "\\[220 more chars\\]"
                            (gethash "body" (plist-get (car short) :object))))
    (should (string-match-p "\\[220 more chars\\]" (aref (plist-get (car short) :vec) 0)))
    (should (equal (gethash "body" table) long)))
  ;; A prompt for huge arguments is cut, with the note.
  (let ((prompt nil))
    (cl-letf (((symbol-function 'agent-q-prompt--read-key)
               (lambda (p &rest _) (setq prompt p) ?y)))
      (should (eq (agent-q-prompt--ask "t" (list :items (number-sequence 1 5000)) :dangerous nil)
                  :approved)))
    (should (< (length prompt) 900))
    (should (string-match-p "long arguments shortened; v shows all" prompt))))

;;;; What the prompt reads and shows

(defconst agent-q-prompt-test--bidi-form
  "(list \"hi\u202e \u2066\" (write-region \"pwned\" nil \"/tmp/x\") \"\u2069 \u2066ok\")"
  "An eval_form whose bidi controls hide its code on the screen.")

(ert-deftest agent-q-prompt-test-bidi-arguments-show-as-escapes-keys-last ()
  (let ((agent-q-prompt--session-approved nil))
    (agent-q-test-typing (list ?v ?n)
      (let ((agent-q-approval-context
             '(:safety-level :dangerous :client "x\u202e\u200b\nwants (MCP)")))
        (should (eq (agent-q-approve-in-minibuffer
                     "eval_form" (list :form agent-q-prompt-test--bidi-form))
                    :denied)))
      (let ((prompt (car agent-q-test-prompts)))
        ;; One line, no hidden character: the real code and the escapes show.
        (should-not (string-match-p "[\n\u202a-\u202e\u2066-\u2069\u200b]" prompt))
        (should (string-match-p (regexp-quote "hi\\u202E \\u2066") prompt))
        (should (string-match-p (regexp-quote "(write-region \\\"pwned\\\" nil \\\"/tmp/x\\\")")
                                prompt))
        (should (string-match-p (regexp-quote "\\u2069 \\u2066ok") prompt))
        (should (string-match-p (regexp-quote "x\\u202E\\u200B\\nwants (MCP) wants to run eval_form")
                                prompt))
        ;; The key list is last.
        (should (string-match-p "(s)ave rule (\\?)help: \\'" prompt))))
    ;; v shows escapes too.
    (with-current-buffer "*agent-q call*"
      (should-not (string-match-p "[\u202a-\u202e\u2066-\u2069\u200b]" (buffer-string)))
      (should (string-match-p (regexp-quote "\"(list \\\"hi\\u202E \\u2066\\\" (write-region")
                              (buffer-string))))))

(ert-deftest agent-q-prompt-test-e-shows-escapes-that-read-back-the-same ()
  (let ((args (list :form agent-q-prompt-test--bidi-form))
        (shown nil))
    (cl-letf (((symbol-function 'agent-q-validate-arguments) #'ignore))
      (advice-add 'agent-q-prompt-arguments-accept :before
                  (lambda () (setq shown (buffer-string))) '((name . agent-q-prompt-test)))
      (unwind-protect
          (should (equal (agent-q-prompt-test--approve (agent-q-prompt-test--keys "e" "C-c C-c")
                                                      :dangerous nil "eval_form" args)
                         (list (list :modified args))))
        (advice-remove 'agent-q-prompt-arguments-accept 'agent-q-prompt-test)))
    (should-not (string-match-p "[\u202a-\u202e\u2066-\u2069]" shown))
    (should (string-match-p (regexp-quote "hi\\u202E \\u2066") shown))))

(ert-deftest agent-q-prompt-test-the-keys-always-fit ()
  ;; Huge arguments and a huge file name in a narrow echo area: the keys
  ;; are still last and in view, the arguments cut, saying so.
  (cl-letf (((symbol-function 'agent-q-prompt--prompt-columns) (lambda () 200)))
    (agent-q-test-typing (list ?n)
      (let ((agent-q-approval-context '(:safety-level :dangerous :client "c (MCP)")))
        (agent-q-approve-in-minibuffer
         "write_file" (list :path (concat "/tmp/" (make-string 400 ?d) "/f")
                            :content (make-string 5000 ?z))))
      (let ((prompt (car agent-q-test-prompts)))
        (should (<= (string-width prompt) 200))
        (should (string-match-p "(a)lways for c (MCP) (s)ave rule (\\?)help: \\'" prompt))))))

(ert-deftest agent-q-prompt-test-a-stray-key-beeps-and-names-the-answers ()
  (let ((beeps 0))
    (agent-q-test-typing (list ?T ?n)
      (cl-letf (((symbol-function 'ding) (lambda (&rest _) (cl-incf beeps))))
        (let ((agent-q-approval-context '(:safety-level :dangerous)))
          (should (eq (agent-q-approve-in-minibuffer "write_file" '(:path "/tmp/x")) :denied))))
      (should (= beeps 1))
      (should (string-match-p "\\`T is not an answer: press y n r e v a s, \\? for help, or C-g to deny\\."
                              (car agent-q-test-prompts))))))

(ert-deftest agent-q-prompt-test-a-and-s-need-a-second-deliberate-key ()
  (let ((agent-q-prompt--session-approved nil)
        (settles nil))
    (cl-letf* ((real (symbol-function 'agent-q-test--read-key))
               ((symbol-function 'agent-q-test--read-key)
                (lambda (prompt &optional settle)
                  (push settle settles)
                  (funcall real prompt settle))))
      ;; "a" then a key other than "!": back to the prompt, nothing remembered.
      (agent-q-test-typing (list ?a ?y ?n)
        (let ((agent-q-approval-context '(:safety-level :dangerous :tool-id 5 :client "c (MCP)")))
          (should (eq (agent-q-approve-in-minibuffer "write_file" '(:path "/tmp/x")) :denied))))
      (should-not agent-q-prompt--session-approved)
      ;; The confirmation waited for the typing to pause.
      (should (equal (nreverse settles) (list nil agent-q-prompt--settle-seconds nil)))
      ;; "s" then "n": no rule dialog, back to the prompt.
      (cl-letf (((symbol-function 'agent-q-rules-save-from-prompt)
                 (lambda (&rest _) (ert-fail "the rule dialog opened"))))
        (agent-q-test-typing (list ?s ?n ?n)
          (let ((agent-q-approval-context '(:safety-level :dangerous)))
            (should (eq (agent-q-approve-in-minibuffer "write_file" '(:path "/tmp/x")) :denied)))
          (should (string-match-p "\\`Save an approval rule about write_file\\?  Press ! to confirm"
                                  (nth 1 agent-q-test-prompts)))))
      ;; "a !" approves, for the session.
      (agent-q-test-typing (list ?a ?!)
        (let ((agent-q-approval-context '(:safety-level :dangerous :tool-id 5 :client "c (MCP)")))
          (should (eq (agent-q-approve-in-minibuffer "write_file" '(:path "/tmp/x")) :approved))))
      (should (equal (mapcar (lambda (grant)
                               (list (plist-get grant :tool-id) (plist-get grant :origin)
                                     (plist-get grant :client)))
                             agent-q-prompt--session-approved)
                     '((5 emacs "c (MCP)")))))))

(ert-deftest agent-q-prompt-test-type-ahead-never-answers ()
  ;; The real reader: keys typed before the prompt (`unread-command-events')
  ;; are discarded.  In batch mode there is no terminal, so the call is
  ;; denied at once, saying so, instead of reading stdin forever.
  (let ((unread-command-events (list ?y ?a ?!))
        (agent-q-approval-context '(:safety-level :dangerous)))
    (should (equal (agent-q-approve-in-minibuffer "write_file" '(:path "/tmp/x"))
                   (list :denied agent-q-prompt--no-terminal-reason))))
  ;; With a terminal, what was typed before is discarded before reading.
  (let ((unread-command-events (list ?y))
        (read nil))
    (cl-letf (((symbol-function 'agent-q-prompt--no-terminal-p) #'ignore)
              ((symbol-function 'read-key)
               (lambda (&rest _) (setq read unread-command-events) ?n)))
      (should (eq (agent-q-prompt--read-key "p") ?n))
      (should-not read))))

(ert-deftest agent-q-prompt-test-batch-emacs-denies-at-once ()
  ;; A separate batch Emacs, stdin at end of file, the default approval
  ;; function: it answers at once instead of spinning.
  (let* ((lisp (file-name-directory (locate-library "agent-q")))
         (target (make-temp-name (expand-file-name "agent-q-batch" temporary-file-directory)))
         (start (float-time))
         (output
          (with-temp-buffer
            ;; On failure it would spin forever: timeout(1) stops it.
            (call-process "timeout" nil t nil "30"
                          (expand-file-name invocation-name invocation-directory) "--batch" "-Q" "-L" lisp "--eval"
                          (prin1-to-string
                           `(progn
                              (require 'agent-q)
                              (setq agent-q-audit-file nil)
                              (princ (format "RESULT %S\n"
                                             (plist-get
                                              (car (agent-q-execute-tool-calls
                                                    '((:id "1" :name "write_file"
                                                            :arguments (:path ,target :content "x")))))
                                              :content))))))
            (buffer-string))))
    (should (< (- (float-time) start) 60))
    (should (string-match-p "RESULT \"[^\n]*no terminal to ask the user on" output))
    (should-not (file-exists-p target))))

(provide 'agent-q-prompt-test)

;;; agent-q-prompt-test.el ends here
