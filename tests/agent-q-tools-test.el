;;; agent-q-tools-test.el --- Tests for agent-q-tools.el  -*- lexical-binding: t -*-

;; Author: agent-q authors
;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1"))

;;; Commentary:

;; ERT tests of the minibuffer approval and of the per-hunk review of
;; propose_file_edit, driven with simulated input (keys answered through
;; `agent-q-test-typing', see agent-q-keys-support.el, and
;; `unread-command-events' through the real recursive edit, or the review commands called
;; in the review buffer), against real temporary files and buffers.
;;
;; Run them from the repository's root, after building the module
;; into the file agent-q-core.so of the Lisp directory, with the
;; command in the Makefile or the one in notes/common.md.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-q-core)
(require 'agent-q-tools)
(require 'agent-q-keys-support)

(defvar agent-q-approval-context)

;;;; Helpers

(defun agent-q-tools-test--keys (&rest parts)
  "Return the events of PARTS: strings in `kbd' syntax, or lists of events."
  (apply #'append
         (mapcar (lambda (p) (if (stringp p) (listify-key-sequence (kbd p)) p))
                 parts)))

(defmacro agent-q-tools-test--approve (keys level reason tool args &rest context)
  "Call the minibuffer approval of TOOL with ARGS, typing KEYS.
LEVEL and REASON make the approval context, with the keys and values
of CONTEXT.  Return (RESULT . UNREAD), UNREAD being the events left
unread."
  `(agent-q-test-typing ,keys
     (let ((agent-q-approval-context (list :safety-level ,level :reason ,reason ,@context))
           (result nil))
       (setq result (agent-q-approve-in-minibuffer ,tool ,args))
       (cons result unread-command-events))))

(defun agent-q-tools-test--numbered (n)
  "Return N lines \"line I\"."
  (mapconcat (lambda (i) (format "line %d\n" i)) (number-sequence 1 n) ""))

(defun agent-q-tools-test--replace-lines (text alist)
  "Return TEXT with line numbers of ALIST (N . NEW) replaced by NEW."
  (let ((lines (split-string text "\n")))
    (dolist (pair alist)
      (setf (nth (1- (car pair)) lines) (cdr pair)))
    (string-join lines "\n")))

(defconst agent-q-tools-test--old (agent-q-tools-test--numbered 40)
  "A 40-line text.")

(defconst agent-q-tools-test--changes '((2 . "LINE TWO") (20 . "LINE TWENTY") (39 . "LINE 39"))
  "Three changes far enough apart to make three hunks.")

(defun agent-q-tools-test--expected (accepted)
  "Return the old text, with the edits of the hunks in ACCEPTED (1-based) made."
  (agent-q-tools-test--replace-lines
   agent-q-tools-test--old
   (cl-loop for change in agent-q-tools-test--changes
            for i from 1
            when (memq i accepted) collect change)))

(defvar agent-q-tools-test--new
  (agent-q-tools-test--expected '(1 2 3))
  "The text with all three changes.")

(defmacro agent-q-tools-test--with-file (file content &rest body)
  "Run BODY with FILE bound to a temporary file holding CONTENT.
Buffers visiting it are killed afterwards without asking."
  (declare (indent 2))
  `(let ((,file (make-temp-file "agent-q-tools-test-" nil ".txt" ,content)))
     (unwind-protect
         (progn ,@body)
       (when-let ((b (find-buffer-visiting ,file)))
         (with-current-buffer b (set-buffer-modified-p nil))
         (kill-buffer b))
       (when (file-exists-p ,file) (delete-file ,file)))))

(defun agent-q-tools-test--review (file original modified driver &optional description)
  "Run the review of FILE (ORIGINAL -> MODIFIED) with DRIVER; return the result.
DRIVER is called in the review buffer and calls review commands.
DESCRIPTION is the proposal's description."
  (let ((agent-q-tools--review-driver
         (lambda (buffer)
           (with-current-buffer buffer
             (funcall driver)))))
    (agent-q-tools-review-edit file original modified description)))

(defun agent-q-tools-test--buffer-text (file)
  "Return the text of the buffer visiting FILE."
  (with-current-buffer (find-buffer-visiting file)
    (buffer-substring-no-properties (point-min) (point-max))))

(defun agent-q-tools-test--progress ()
  "Return the progress line of the review buffer, after checking its header line."
  (should (equal header-line-format
                 '(:eval (agent-q-tools--progress-string agent-q-tools--this-review))))
  (agent-q-tools--progress-string agent-q-tools--this-review))

(defun agent-q-tools-test--file-text (file)
  "Return the text of FILE on disk."
  (with-temp-buffer
    (insert-file-contents file)
    (buffer-string)))

;;;; Minibuffer approval

(ert-deftest agent-q-tools-test-y-approves ()
  (should (equal (agent-q-tools-test--approve (list ?y) :dangerous nil
                                              "write_file" '(:path "/tmp/x" :content "hi"))
                 '(:approved))))

(ert-deftest agent-q-tools-test-n-denies ()
  (should (equal (agent-q-tools-test--approve (list ?n) :dangerous nil
                                              "write_file" '(:path "/tmp/x"))
                 '(:denied))))

(ert-deftest agent-q-tools-test-other-keys-are-ignored ()
  ;; "x" and "q" are not choices: the prompt keeps reading until "n".
  (should (equal (agent-q-tools-test--approve (list ?x ?q ?n) :dangerous nil
                                              "write_file" '(:path "/tmp/x"))
                 '(:denied))))

(ert-deftest agent-q-tools-test-r-denies-with-reason ()
  ;; In batch mode `read-string' reads stdin, not `unread-command-events':
  ;; the typed reason is simulated here.
  (cl-letf (((symbol-function 'read-string)
             (lambda (prompt &rest _)
               (should (string-match-p "Reason for denying write_file" prompt))
               "use a temporary directory")))
    (should (equal (agent-q-tools-test--approve (list ?r) :dangerous nil
                                                "write_file" '(:path "/etc/x"))
                   '((:denied "use a temporary directory"))))))

(ert-deftest agent-q-tools-test-e-edits-arguments ()
  (let ((validated nil))
    (cl-letf (((symbol-function 'agent-q-validate-arguments)
               (lambda (tool args &rest _)
                 (push (cons tool args) validated)
                 nil)))
      (let ((result (agent-q-tools-test--approve
                     (agent-q-tools-test--keys
                      "e" "C-x h" "C-w"
                      (string-to-list "(:path \"/tmp/y\" :content \"bye\")")
                      "C-c C-c")
                     :dangerous nil "write_file" '(:path "/tmp/x" :content "hi"))))
        (should (equal result '((:modified (:path "/tmp/y" :content "bye")))))
        (should (equal validated '(("write_file" :path "/tmp/y" :content "bye"))))))))

(ert-deftest agent-q-tools-test-e-invalid-edit-stays-then-cancel-returns-to-prompt ()
  (let ((calls 0))
    (cl-letf (((symbol-function 'agent-q-validate-arguments)
               (lambda (_tool _args &rest _)
                 (cl-incf calls)
                 "Invalid arguments for write_file: field 'path': required")))
      (let ((result (agent-q-tools-test--approve
                     (agent-q-tools-test--keys
                      "e" "C-x h" "C-w" (string-to-list "(:content \"x\")")
                      ;; Invalid: the edit buffer stays; then cancel, back to
                      ;; the prompt, and deny.
                      "C-c C-c" "C-c C-k" "n")
                     :dangerous nil "write_file" '(:path "/tmp/x" :content "hi"))))
        (should (equal result '(:denied)))
        (should (= calls 1))))))

(ert-deftest agent-q-tools-test-e-unreadable-edit-is-refused ()
  (should (equal (car (agent-q-tools--read-plist "(:a 1 :b)")) :error))
  (should (equal (car (agent-q-tools--read-plist "(a 1)")) :error))
  (should (equal (car (agent-q-tools--read-plist "(:a 1) junk")) :error))
  (should (equal (agent-q-tools--read-plist "(:a \"x\" :b (1 2))")
                 '(:ok (:a "x" :b (1 2))))))

(ert-deftest agent-q-tools-test-a-remembers-the-tool ()
  (let ((agent-q-tools--session-approved nil))
    (should (equal (agent-q-tools-test--approve (list ?a ?!) :dangerous nil
                                                "run_shell" '(:command "ls") :tool-id 41)
                   '(:approved)))
    ;; Second call: not asked, the pending "n" stays unread.
    (should (equal (agent-q-tools-test--approve (list ?n) :dangerous nil
                                                "run_shell" '(:command "rm x") :tool-id 41)
                   (list :approved ?n)))
    ;; Another tool is still asked.
    (should (equal (agent-q-tools-test--approve (list ?n) :dangerous nil
                                                "write_file" '(:path "x") :tool-id 42)
                   '(:denied)))
    ;; The same name in another registry, or re-registered (another id): asked.
    (should (equal (agent-q-tools-test--approve (list ?n) :dangerous nil
                                                "run_shell" '(:command "ls") :tool-id 43)
                   '(:denied)))
    ;; A :reason is always asked, even for a remembered tool.
    (should (equal (agent-q-tools-test--approve (list ?n) :dangerous "sensitive file"
                                                "run_shell" '(:command "ls") :tool-id 41)
                   '(:denied)))))

;; A real prompt, typed into: "a" approves the tool for the client that
;; called it, never for another client or for calls that name none.
(ert-deftest agent-q-tools-test-a-belongs-to-the-client ()
  (let ((agent-q-tools--session-approved nil)
        (prompts nil))
    (cl-letf* ((real (symbol-function 'agent-q-test--read-key))
               ((symbol-function 'agent-q-test--read-key)
                (lambda (prompt &rest rest)
                  (push prompt prompts)
                  (apply real prompt rest))))
      (should (equal (agent-q-tools-test--approve (list ?a ?!) :dangerous nil
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
      (should (equal (agent-q-tools-test--approve (list ?n) :dangerous nil
                                                  "write_file" '(:path "y") :tool-id 7
                                                  :client "claude-code 2.1.0 (MCP)")
                     (list :approved ?n)))
      (should-not prompts)
      ;; Another client, a bridge, or a call with no client: each is asked.
      (dolist (client '("gemini-cli-mcp-client 0.61.0 (MCP)" "gptel" nil))
        (should (equal (agent-q-tools-test--approve (list ?n) :dangerous nil
                                                    "write_file" '(:path "y") :tool-id 7
                                                    :client client)
                       '(:denied))))
      (should (= (length prompts) 3))
      ;; Another tool for the same client: asked.
      (should (equal (agent-q-tools-test--approve (list ?n) :dangerous nil
                                                  "eval_form" '(:form "1") :tool-id 8
                                                  :client "claude-code 2.1.0 (MCP)")
                     '(:denied))))))

(ert-deftest agent-q-tools-test-c-g-denies ()
  (should (equal (agent-q-tools-test--approve (list ?\C-g) :dangerous nil
                                              "write_file" '(:path "/tmp/x"))
                 '(:denied))))

(ert-deftest agent-q-tools-test-asks-whenever-called ()
  "The executor decides which levels need approval; when asked, the prompt asks."
  (let ((agent-q-tools--session-approved nil))
    (should (equal (agent-q-tools-test--approve (list ?n) :cautious nil
                                                "write_scratch" '(:text "x"))
                   '(:denied)))
    ;; A :reason makes even a safe tool ask.
    (should (equal (agent-q-tools-test--approve (list ?n) :safe "reads ~/.authinfo"
                                                "read_file" '(:path "~/.authinfo"))
                   '(:denied)))
    ;; Without a context the call is asked.
    (agent-q-test-typing (list ?n)
      (should (eq (agent-q-approve-in-minibuffer "write_file" '(:path "x")) :denied)))))

(ert-deftest agent-q-tools-test-propose-file-edit-with-a-reason-is-asked ()
  "The review is propose_file_edit's approval, but not for reading a guarded file."
  (should (equal (agent-q-tools-test--approve (list ?n) :dangerous "reads ~/.ssh/id_rsa"
                                              "propose_file_edit"
                                              '(:path "~/.ssh/id_rsa" :original "a" :modified "b"))
                 '(:denied))))

(ert-deftest agent-q-tools-test-prompt-shows-the-real-file ()
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
          (should (string-match-p "(s)ave rule: \\'" (nth 0 prompts)))
          ;; A relative path through a link names the file it really writes.
          (should (string-match-p (regexp-quote (format "[file: %s, a link to %s]" link secret))
                                  (nth 1 prompts))))
      (delete-directory dir t))))

(ert-deftest agent-q-tools-test-a-self-reviewing-tool-is-not-prompted ()
  ;; The executor marks the built-in review handler with :review.
  (should (equal (agent-q-tools-test--approve (list ?n) :dangerous nil
                                              "propose_file_edit"
                                              '(:path "x" :original "a" :modified "b")
                                              :review t)
                 (list :approved ?n)))
  ;; The name alone earns nothing: any tool may be registered under it.
  (should (equal (agent-q-tools-test--approve (list ?n) :dangerous nil
                                              "propose_file_edit"
                                              '(:path "x" :original "a" :modified "b"))
                 '(:denied))))

(ert-deftest agent-q-tools-test-long-strings-shortened-and-v-shows-all ()
  (let* ((long (make-string 500 ?z))
         (prompts nil)
         (result
          (cl-letf* ((real (symbol-function 'agent-q-test--read-key))
                     ((symbol-function 'agent-q-test--read-key)
                      (lambda (prompt &rest args)
                        (push prompt prompts)
                        (apply real prompt args))))
            (agent-q-tools-test--approve (list ?v ?y) :dangerous nil
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

(ert-deftest agent-q-tools-test-shortening-of-large-arguments ()
  ;; Long lists do not recurse deeply; strings inside nested objects
  ;; (hash tables) and vectors are shortened too, without touching ARGS.
  (let* ((table (make-hash-table :test #'equal))
         (long (make-string 300 ?x))
         (_ (puthash "body" long table))
         (args (list :items (number-sequence 1 20000) :object table :vec (vector long)))
         (short (agent-q-tools--shorten args)))
    (should (cdr short))
    (should (equal (plist-get (car short) :items) (number-sequence 1 20000)))
    (should (string-match-p "\\[220 more chars\\]"
                            (gethash "body" (plist-get (car short) :object))))
    (should (string-match-p "\\[220 more chars\\]" (aref (plist-get (car short) :vec) 0)))
    (should (equal (gethash "body" table) long)))
  ;; A prompt for huge arguments is cut, with the note.
  (let ((prompt nil))
    (cl-letf (((symbol-function 'agent-q-tools--read-key)
               (lambda (p &rest _) (setq prompt p) ?y)))
      (should (eq (agent-q-tools--ask "t" (list :items (number-sequence 1 5000)) :dangerous nil)
                  :approved)))
    (should (< (length prompt) 900))
    (should (string-match-p "long arguments shortened; v shows all" prompt))))

;;;; What the prompt reads and shows

(defconst agent-q-tools-test--bidi-form
  "(list \"hi\u202e \u2066\" (write-region \"pwned\" nil \"/tmp/x\") \"\u2069 \u2066ok\")"
  "An eval_form whose bidi controls hide its code on the screen.")

(ert-deftest agent-q-tools-test-bidi-arguments-show-as-escapes-keys-last ()
  (let ((agent-q-tools--session-approved nil))
    (agent-q-test-typing (list ?v ?n)
      (let ((agent-q-approval-context
             '(:safety-level :dangerous :client "x\u202e\u200b\nwants (MCP)")))
        (should (eq (agent-q-approve-in-minibuffer
                     "eval_form" (list :form agent-q-tools-test--bidi-form))
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
        (should (string-match-p "(s)ave rule: \\'" prompt))))
    ;; v shows escapes too.
    (with-current-buffer "*agent-q call*"
      (should-not (string-match-p "[\u202a-\u202e\u2066-\u2069\u200b]" (buffer-string)))
      (should (string-match-p (regexp-quote "\"(list \\\"hi\\u202E \\u2066\\\" (write-region")
                              (buffer-string))))))

(ert-deftest agent-q-tools-test-e-shows-escapes-that-read-back-the-same ()
  (let ((args (list :form agent-q-tools-test--bidi-form))
        (shown nil))
    (cl-letf (((symbol-function 'agent-q-validate-arguments) #'ignore))
      (advice-add 'agent-q-tools-arguments-accept :before
                  (lambda () (setq shown (buffer-string))) '((name . agent-q-tools-test)))
      (unwind-protect
          (should (equal (agent-q-tools-test--approve (agent-q-tools-test--keys "e" "C-c C-c")
                                                      :dangerous nil "eval_form" args)
                         (list (list :modified args))))
        (advice-remove 'agent-q-tools-arguments-accept 'agent-q-tools-test)))
    (should-not (string-match-p "[\u202a-\u202e\u2066-\u2069]" shown))
    (should (string-match-p (regexp-quote "hi\\u202E \\u2066") shown))))

(ert-deftest agent-q-tools-test-the-keys-always-fit ()
  ;; Huge arguments and a huge file name in a narrow echo area: the keys
  ;; are still last and in view, the arguments cut, saying so.
  (cl-letf (((symbol-function 'agent-q-tools--prompt-columns) (lambda () 200)))
    (agent-q-test-typing (list ?n)
      (let ((agent-q-approval-context '(:safety-level :dangerous :client "c (MCP)")))
        (agent-q-approve-in-minibuffer
         "write_file" (list :path (concat "/tmp/" (make-string 400 ?d) "/f")
                            :content (make-string 5000 ?z))))
      (let ((prompt (car agent-q-test-prompts)))
        (should (<= (string-width prompt) 200))
        (should (string-match-p "(a)lways for c (MCP) (s)ave rule: \\'" prompt))))))

(ert-deftest agent-q-tools-test-a-stray-key-beeps-and-names-the-answers ()
  (let ((beeps 0))
    (agent-q-test-typing (list ?T ?n)
      (cl-letf (((symbol-function 'ding) (lambda (&rest _) (cl-incf beeps))))
        (let ((agent-q-approval-context '(:safety-level :dangerous)))
          (should (eq (agent-q-approve-in-minibuffer "write_file" '(:path "/tmp/x")) :denied))))
      (should (= beeps 1))
      (should (string-match-p "\\`T is not an answer: press y n r e v a s, or C-g to deny\\."
                              (car agent-q-test-prompts))))))

(ert-deftest agent-q-tools-test-a-and-s-need-a-second-deliberate-key ()
  (let ((agent-q-tools--session-approved nil)
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
      (should-not agent-q-tools--session-approved)
      ;; The confirmation waited for the typing to pause.
      (should (equal (nreverse settles) (list nil agent-q-tools--settle-seconds nil)))
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
      (should (equal agent-q-tools--session-approved '((5 emacs "c (MCP)")))))))

(ert-deftest agent-q-tools-test-type-ahead-never-answers ()
  ;; The real reader: keys typed before the prompt (`unread-command-events')
  ;; are discarded.  In batch mode there is no terminal, so the call is
  ;; denied at once, saying so, instead of reading stdin forever.
  (let ((unread-command-events (list ?y ?a ?!))
        (agent-q-approval-context '(:safety-level :dangerous)))
    (should (equal (agent-q-approve-in-minibuffer "write_file" '(:path "/tmp/x"))
                   (list :denied agent-q-tools--no-terminal-reason))))
  ;; With a terminal, what was typed before is discarded before reading.
  (let ((unread-command-events (list ?y))
        (read nil))
    (cl-letf (((symbol-function 'agent-q-tools--no-terminal-p) #'ignore)
              ((symbol-function 'read-key)
               (lambda (&rest _) (setq read unread-command-events) ?n)))
      (should (eq (agent-q-tools--read-key "p") ?n))
      (should-not read))))

(ert-deftest agent-q-tools-test-batch-emacs-denies-at-once ()
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

;;;; Module diff functions

(ert-deftest agent-q-tools-test-core-diff-shapes ()
  (let ((hunks (agent-q--core-diff-hunks "a\nthe café\nb\n" "a\nthe thé\nb\n")))
    (should (= (length hunks) 1))
    (let ((h (car hunks)))
      (should (equal (plist-get h :header) "@@ -1,3 +1,3 @@"))
      (should (equal (plist-get h :lines)
                     '((context . "a") (removed . "the café") (added . "the thé")
                       (context . "b"))))
      ;; Character offsets: "café" is 4 characters (5 bytes).
      (should (equal (plist-get h :refine) '((1 4 8) (2 4 7))))))
  (should (equal (agent-q--core-diff-locate "héllo\nwörld\n" "wörld")
                 '(:start 6 :end 11 :line 2 :whole nil)))
  (should-error (agent-q--core-diff-locate "a\na\n" "a\n") :type 'agent-q-diff-error)
  (should-error (agent-q--core-diff-apply "a\n" "b\n" '(maybe)) :type 'agent-q-diff-error)
  (should (equal (agent-q--core-diff-apply "a\n" "b\n" '("c\n")) "c\n")))

;;;; Review of propose_file_edit

(ert-deftest agent-q-tools-test-review-subsets-of-three-hunks ()
  (dolist (case '(((accept reject accept) (1 3))
                  ((reject accept reject) (2))
                  ((accept accept accept) (1 2 3))
                  ((reject reject reject) ())))
    (agent-q-tools-test--with-file file agent-q-tools-test--old
      (find-file-noselect file)
      (let* ((keys (car case))
             (result (agent-q-tools-test--review
                      file agent-q-tools-test--old agent-q-tools-test--new
                      (lambda ()
                        (should (string-match-p "Progress: 0 accepted, 0 rejected, 3 pending"
                                                (agent-q-tools-test--progress)))
                        (dolist (k keys)
                          (if (eq k 'accept)
                              (agent-q-tools-review-accept)
                            (agent-q-tools-review-reject)))
                        (agent-q-tools-review-finish)))))
        (should (equal (agent-q-tools-test--buffer-text file)
                       (agent-q-tools-test--expected (cadr case))))
        ;; Not saved by default.
        (should (equal (agent-q-tools-test--file-text file) agent-q-tools-test--old))
        (should (string-match-p (format "Applied %d of 3 hunks to " (length (cadr case)))
                                result))
        (if (cadr case)
            (should (string-match-p "Buffer not saved\\." result))
          (should (string-match-p "No change made\\." result)))))))

(ert-deftest agent-q-tools-test-review-result-text ()
  (agent-q-tools-test--with-file file agent-q-tools-test--old
    (let ((result (agent-q-tools-test--review
                   file agent-q-tools-test--old agent-q-tools-test--new
                   (lambda ()
                     (agent-q-tools-review-accept)
                     (agent-q-tools-review-reject)
                     (agent-q-tools-review-accept)
                     (agent-q-tools-review-finish)))))
      (should (string-prefix-p
               (format "Applied 2 of 3 hunks to %s (hunks 1 and 3 accepted; hunk 2 rejected).  Buffer not saved."
                       file)
               result))
      ;; The rejected hunk's text is in the result.
      (should (string-match-p "Not applied.*:\nHunk 2:\n@@ -20,1 \\+20,1 @@\n-line 20\n" result))
      (should-not (string-match-p "^ line 17" result))
      (should (string-match-p "\n-line 20\n\\+LINE TWENTY\n" result))
      (should-not (string-match-p "LINE TWO" result)))))

(ert-deftest agent-q-tools-test-review-buffer-markers-and-refinement ()
  (agent-q-tools-test--with-file file "the café au lait\nsecond\n"
    (agent-q-tools-test--review
     file "the café au lait\nsecond\n" "the thé au lait\nsecond\n"
     (lambda ()
       (should (string-match-p "\\`\\*agent-q-diff: " (buffer-name)))
       (should (derived-mode-p 'diff-mode))
       (should (string-match-p "^File: " (buffer-string)))
       (should (string-match-p "^Description: Use tea" (buffer-string)))
       (should (string-match-p "^@@ -1,2 \\+1,2 @@ \\[PENDING\\]" (buffer-string)))
       ;; Word refinement: "thé" on the added line has the refine face.
       (goto-char (point-min))
       (search-forward "+the thé")
       (should (equal (get-text-property (- (point) 2) 'face)
                      '(diff-refine-added diff-added)))
       (should (eq (get-text-property (- (point) 4) 'face) 'diff-added))
       (search-backward "-the café")
       (should (equal (get-text-property (+ (point) 6) 'face)
                      '(diff-refine-removed diff-removed)))
       (agent-q-tools-review-toggle)
       (should (string-match-p "\\[ACCEPTED\\]" (buffer-string)))
       (goto-char (point-min))
       (search-forward "[ACCEPTED]")
       (should (eq (get-text-property (1- (point)) 'face) 'agent-q-diff-accepted))
       (agent-q-tools-review-toggle)
       (should (string-match-p "\\[REJECTED\\]" (buffer-string)))
       (should (string-match-p "Progress: 0 accepted, 1 rejected, 0 pending"
                               (agent-q-tools-test--progress)))
       (agent-q-tools-review-finish))
     "Use tea")))

(ert-deftest agent-q-tools-test-review-navigation-and-bulk-keys ()
  (agent-q-tools-test--with-file file agent-q-tools-test--old
    (agent-q-tools-test--review
     file agent-q-tools-test--old agent-q-tools-test--new
     (lambda ()
       (let ((review agent-q-tools--this-review))
         (should (= (agent-q-tools--hunk-at-point review) 0))
         (agent-q-tools-review-next)
         (agent-q-tools-review-next)
         (should (= (agent-q-tools--hunk-at-point review) 2))
         (agent-q-tools-review-next)
         (should (= (agent-q-tools--hunk-at-point review) 2))
         (agent-q-tools-review-previous)
         (should (= (agent-q-tools--hunk-at-point review) 1))
         (agent-q-tools-review-reject)
         (agent-q-tools-review-accept-all)
         (should (equal (agent-q-tools--review-decisions review) [accept reject accept]))
         (agent-q-tools-review-reject-all)
         (should (equal (agent-q-tools--review-decisions review) [accept reject accept]))
         ;; RET shows the hunk's place in the file.
         (agent-q-tools-review-show-source)
         (with-current-buffer (find-buffer-visiting file)
           ;; Point was on hunk 3 (line 36 starts its context).
           (should (equal (thing-at-point 'line t) "line 36\n")))
         (agent-q-tools-review-finish))))
    (should (equal (agent-q-tools-test--buffer-text file)
                   (agent-q-tools-test--expected '(1 3))))))

(ert-deftest agent-q-tools-test-review-keys-through-recursive-edit ()
  ;; Production path: the real recursive edit reads the keys.
  (agent-q-tools-test--with-file file agent-q-tools-test--old
    (let* ((unread-command-events (agent-q-tools-test--keys "a r a C-c C-c"))
           (result (agent-q-tools-review-edit file agent-q-tools-test--old
                                              agent-q-tools-test--new "three changes")))
      (should (equal (agent-q-tools-test--buffer-text file)
                     (agent-q-tools-test--expected '(1 3))))
      (should (string-match-p "hunks 1 and 3 accepted; hunk 2 rejected" result))
      (should-not (get-buffer (format "*agent-q-diff: %s*" (file-name-nondirectory file))))
      (should-not agent-q-tools--open-reviews))))

(ert-deftest agent-q-tools-test-review-c-g-through-recursive-edit ()
  (agent-q-tools-test--with-file file agent-q-tools-test--old
    (let* ((unread-command-events (agent-q-tools-test--keys "a C-g"))
           (result (agent-q-tools-review-edit file agent-q-tools-test--old
                                              agent-q-tools-test--new)))
      ;; Nothing applied: the file was not even opened.
      (should-not (find-buffer-visiting file))
      (should (equal (agent-q-tools-test--file-text file) agent-q-tools-test--old))
      (should (string-match-p "Applied 0 of 3 hunks .*the user rejected the whole edit"
                              result)))))

(ert-deftest agent-q-tools-test-review-kill-buffer-through-recursive-edit ()
  ;; Killing the review buffer from a command inside the real recursive edit
  ;; ends the review with everything rejected.
  (agent-q-tools-test--with-file file agent-q-tools-test--old
    (global-set-key [f9] (lambda () (interactive) (kill-buffer (current-buffer))))
    (unwind-protect
        (let* ((unread-command-events (agent-q-tools-test--keys "a" "<f9>"))
               (result (agent-q-tools-review-edit file agent-q-tools-test--old
                                                  agent-q-tools-test--new)))
          (should (string-match-p "Applied 0 of 3 hunks .*the user rejected the whole edit"
                                  result))
          (should-not agent-q-tools--open-reviews)
          (should (equal (agent-q-tools-test--file-text file) agent-q-tools-test--old)))
      (global-unset-key [f9]))))

(ert-deftest agent-q-tools-test-review-with-unsaved-edits ()
  (agent-q-tools-test--with-file file agent-q-tools-test--old
    (let ((buffer (find-file-noselect file)))
      ;; An unsaved edit at line 30, outside the proposal's hunks.
      (with-current-buffer buffer
        (goto-char (point-min))
        (forward-line 29)
        (insert "unsaved\n"))
      (let* ((current (agent-q-tools-test--buffer-text file))
             (proposal (replace-regexp-in-string "^line 5$" "LINE FIVE" current))
             (result (agent-q-tools-test--review
                      file current proposal
                      (lambda ()
                        (agent-q-tools-review-accept)
                        (agent-q-tools-review-finish)))))
        (should (string-match-p "Applied 1 of 1 hunks" result))
        (should (equal (agent-q-tools-test--buffer-text file) proposal))
        (should (string-match-p "^unsaved$" (agent-q-tools-test--buffer-text file)))
        (should (equal (agent-q-tools-test--file-text file) agent-q-tools-test--old))))))

(ert-deftest agent-q-tools-test-review-stale-original ()
  (agent-q-tools-test--with-file file agent-q-tools-test--old
    (let ((buffer (find-file-noselect file))
          (driver-called nil))
      ;; The user changed line 20 after the model read the file.
      (with-current-buffer buffer
        (goto-char (point-min))
        (forward-line 19)
        (delete-region (point) (line-end-position))
        (insert "line twenty (user)"))
      (let ((result (agent-q-tools-test--review
                     file agent-q-tools-test--old agent-q-tools-test--new
                     (lambda () (setq driver-called t)))))
        (should-not driver-called)
        (should (string-prefix-p (format "No change made to %s: `original` does not match" file)
                                 result))
        (should (string-match-p "Closest match at line 1" result))
        (should (string-match-p "line 20 is `line twenty (user)` where `original` has `line 20`"
                                result))
        ;; Nothing changed.
        (should (string-match-p "^line twenty (user)$" (agent-q-tools-test--buffer-text file)))))))

(ert-deftest agent-q-tools-test-review-stale-excerpt-shows-current-text ()
  (agent-q-tools-test--with-file file agent-q-tools-test--old
    (let ((result (agent-q-tools-test--review
                   file "line 11\nline 12 old\nline 13\n" "line 11\nx\nline 13\n"
                   (lambda () (error "No review expected")))))
      (should (string-match-p "Closest match at line 11" result))
      (should (string-match-p "    12: line 12\n" result))
      (should (string-match-p "    10: line 10\n" result)))))

(ert-deftest agent-q-tools-test-review-excerpt ()
  (agent-q-tools-test--with-file file agent-q-tools-test--old
    (let ((result (agent-q-tools-test--review
                   file "line 19\nline 20\nline 21\n" "line 19\nLINE TWENTY\nline 21\n"
                   (lambda ()
                     (should (= (agent-q-tools--hunk-count agent-q-tools--this-review) 1))
                     (agent-q-tools-review-accept)
                     (agent-q-tools-review-finish)))))
      (should (string-match-p "Applied 1 of 1 hunks" result))
      (should (equal (agent-q-tools-test--buffer-text file)
                     (agent-q-tools-test--expected '(2)))))))

(ert-deftest agent-q-tools-test-review-excerpt-after-non-ascii-text ()
  ;; Positions from the module are characters: multibyte text before the
  ;; excerpt must not shift the replacement.
  (agent-q-tools-test--with-file file "héllo wörld ✓\nçà et là\nfin\n"
    (let ((result (agent-q-tools-test--review
                   file "çà et là\n" "ÇÀ et là\n"
                   (lambda ()
                     (agent-q-tools-review-accept)
                     (agent-q-tools-review-finish)))))
      (should (string-match-p "Applied 1 of 1 hunks" result))
      (should (equal (agent-q-tools-test--buffer-text file)
                     "héllo wörld ✓\nÇÀ et là\nfin\n")))))

(ert-deftest agent-q-tools-test-review-ambiguous-excerpt ()
  (agent-q-tools-test--with-file file "x\ny\nx\n"
    (let ((result (agent-q-tools-test--review file "x\n" "z\n"
                                              (lambda () (error "No review expected")))))
      (should (string-match-p "occurs 2 times" result))
      (should (string-match-p "lines 1, 3" result)))))

(ert-deftest agent-q-tools-test-review-identical-proposal ()
  (agent-q-tools-test--with-file file "same\n"
    (should (string-match-p "identical"
                            (agent-q-tools-test--review file "same\n" "same\n"
                                                        (lambda () (error "No review expected")))))))

(ert-deftest agent-q-tools-test-review-undo-is-one-step ()
  (agent-q-tools-test--with-file file agent-q-tools-test--old
    (let ((buffer (find-file-noselect file)))
      ;; An earlier user edit, which undo must not take back.
      (with-current-buffer buffer
        (goto-char (point-max))
        (insert "user line\n")
        (undo-boundary))
      (let ((before (agent-q-tools-test--buffer-text file)))
        (agent-q-tools-test--review
         file before (agent-q-tools-test--replace-lines
                      before agent-q-tools-test--changes)
         (lambda ()
           (agent-q-tools-review-accept-all)
           (agent-q-tools-review-finish)))
        (should-not (equal (agent-q-tools-test--buffer-text file) before))
        (with-current-buffer buffer
          (let ((last-command nil))
            (undo)))
        (should (equal (agent-q-tools-test--buffer-text file) before))))))

(ert-deftest agent-q-tools-test-review-kill-buffer-rejects-all ()
  (agent-q-tools-test--with-file file agent-q-tools-test--old
    (let ((result (agent-q-tools-test--review
                   file agent-q-tools-test--old agent-q-tools-test--new
                   (lambda ()
                     (agent-q-tools-review-accept)
                     (kill-buffer (current-buffer))))))
      (should (string-match-p "Applied 0 of 3 hunks .*the user rejected the whole edit" result))
      (should (string-match-p "No change made\\." result))
      (should-not (find-buffer-visiting file))
      (should (equal (agent-q-tools-test--file-text file) agent-q-tools-test--old)))))

(ert-deftest agent-q-tools-test-review-save-option ()
  (agent-q-tools-test--with-file file agent-q-tools-test--old
    (let* ((agent-q-diff-save-after-apply t)
           (result (agent-q-tools-test--review
                    file agent-q-tools-test--old agent-q-tools-test--new
                    (lambda ()
                      (agent-q-tools-review-accept-all)
                      (agent-q-tools-review-finish)))))
      (should (string-match-p (format "Saved %s\\." (regexp-quote file)) result))
      (should (equal (agent-q-tools-test--file-text file) agent-q-tools-test--new)))))

(ert-deftest agent-q-tools-test-review-edit-hunk ()
  (agent-q-tools-test--with-file file agent-q-tools-test--old
    (let ((result (agent-q-tools-test--review
                   file agent-q-tools-test--old agent-q-tools-test--new
                   (lambda ()
                     (let ((review-buffer (current-buffer)))
                       (agent-q-tools-review-reject)
                       ;; Point is on hunk 2: edit its proposed side.
                       (agent-q-tools-review-edit-hunk)
                       (should agent-q-tools-hunk-edit-mode)
                       (should (string-match-p "^LINE TWENTY$" (buffer-string)))
                       (goto-char (point-min))
                       (let ((case-fold-search nil))
                         (while (search-forward "LINE TWENTY" nil t)
                           (replace-match "line 20, edited by the user" t t)))
                       (agent-q-tools-hunk-edit-accept)
                       (should (eq (current-buffer) review-buffer))
                       (should (string-match-p "\\[ACCEPTED, EDITED\\]" (buffer-string)))
                       (agent-q-tools-review-finish))))))
      (should (equal (agent-q-tools-test--buffer-text file)
                     (agent-q-tools-test--replace-lines
                      agent-q-tools-test--old '((20 . "line 20, edited by the user")))))
      (should (string-match-p
               "(hunk 2 accepted with the user's edits; hunk 1 rejected; hunk 3 left pending (not applied))"
               result))
      (should (string-match-p "now reads:\nline 17\nline 18\nline 19\nline 20, edited by the user\n"
                              result)))))

(ert-deftest agent-q-tools-test-review-q-asks-when-pending ()
  (agent-q-tools-test--with-file file agent-q-tools-test--old
    (let* ((asked nil)
           (result
            (cl-letf (((symbol-function 'y-or-n-p)
                       (lambda (prompt)
                         (setq asked prompt)
                         t)))
              (agent-q-tools-test--review
               file agent-q-tools-test--old agent-q-tools-test--new
               (lambda ()
                 (agent-q-tools-review-accept)
                 (agent-q-tools-review-quit))))))
      (should (string-match-p "2 hunks are still pending" asked))
      (should (string-match-p "Applied 1 of 3 hunks" result))
      (should (equal (agent-q-tools-test--buffer-text file)
                     (agent-q-tools-test--expected '(1)))))))

(ert-deftest agent-q-tools-test-review-new-file ()
  (let ((file (make-temp-name (expand-file-name "agent-q-tools-new-" temporary-file-directory))))
    (unwind-protect
        (let ((result (agent-q-tools-test--review
                       file "" "hello\nworld\n"
                       (lambda ()
                         (agent-q-tools-review-accept)
                         (agent-q-tools-review-finish)))))
          (should (string-match-p "Applied 1 of 1 hunks" result))
          (should (equal (agent-q-tools-test--buffer-text file) "hello\nworld\n"))
          (should-not (file-exists-p file)))
      (when-let ((b (find-buffer-visiting file)))
        (with-current-buffer b (set-buffer-modified-p nil))
        (kill-buffer b)))))

(ert-deftest agent-q-tools-test-review-buffer-changed-during-review ()
  (agent-q-tools-test--with-file file agent-q-tools-test--old
    (let ((result (agent-q-tools-test--review
                   file agent-q-tools-test--old agent-q-tools-test--new
                   (lambda ()
                     (agent-q-tools-review-accept-all)
                     (with-current-buffer (find-file-noselect file)
                       (goto-char (point-min))
                       (insert "meanwhile\n"))
                     (agent-q-tools-review-finish)))))
      (should (string-match-p "changed during the review, so nothing was applied" result))
      (should (equal (agent-q-tools-test--buffer-text file)
                     (concat "meanwhile\n" agent-q-tools-test--old))))))

;; The same review in a real terminal Emacs, driven through tmux, is in
;; agent-q-tmux-test.el (through the executor, as an LLM loop runs it).

(ert-deftest agent-q-tools-test-a-large-review-renders-lazily ()
  ;; 20,000 lines, every 20th changed: 1,000 hunks.  The review opens with
  ;; every header but only the first bodies; moving to a hunk renders up to
  ;; it; the decisions apply as reviewed.
  (let* ((old (mapconcat (lambda (i) (format "line %d\n" i)) (number-sequence 1 20000) ""))
         (new (replace-regexp-in-string "^line \\([0-9]*[02468]\\)0$" "LINE \\10" old)))
    (agent-q-tools-test--with-file file old
      (let ((result
             (agent-q-tools-test--review
              file old new
              (lambda ()
                (let ((review agent-q-tools--this-review))
                  (should (= (agent-q-tools--hunk-count review) 1000))
                  (should (= (agent-q-tools--review-rendered review)
                             agent-q-tools--bodies-at-once))
                  (should (= (count-matches "^@@ " (point-min) (point-max)) 1000))
                  (agent-q-tools-review-reject)
                  (agent-q-tools--goto-hunk review 500)
                  (should (>= (agent-q-tools--review-rendered review) 501))
                  (should (looking-at "@@ -10017,7 \\+10017,7 @@"))
                  (agent-q-tools-review-reject)
                  (agent-q-tools-review-accept-all)
                  (agent-q-tools-review-finish))))))
        (should (string-match-p "Applied 998 of 1000 hunks" result))
        (should (string-match-p "hunks 1 and 501 rejected" result))
        (let ((text (agent-q-tools-test--buffer-text file)))
          (should (string-match-p "^line 20$" text))
          (should (string-match-p "^LINE 40$" text))
          (should (string-match-p "^line 10020$" text))
          (should (string-match-p "^LINE 20000$" text)))))))

(provide 'agent-q-tools-test)
;;; agent-q-tools-test.el ends here
