//! What the scanner reads as a call, a reference or neither.

use super::MAX_DEPTH;
use crate::xref::source::needle;
use crate::xref::*;

/// (line, column, definition) of each hit.
fn found(src: &str, name: &str, kind: Kind) -> Vec<(usize, usize, Option<String>)> {
    scan_source(src.as_bytes(), name, kind)
        .into_iter()
        .map(|h| (h.line, h.column, h.definition))
        .collect()
}

fn lines(src: &str, name: &str, kind: Kind) -> Vec<usize> {
    found(src, name, kind).into_iter().map(|h| h.0).collect()
}

fn d(s: &str) -> Option<String> {
    Some(s.to_string())
}

#[test]
fn call_in_function_position_with_line_column_definition_and_text() {
    let src = "(defun caller (x)\n  \"Doc.\"\n  (when x\n    (foo x 1)))\n";
    let hits = scan_source(src.as_bytes(), "foo", Kind::Call);
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].line, 4);
    assert_eq!(hits[0].column, 6);
    assert_eq!(hits[0].definition, d("caller"));
    assert_eq!(hits[0].text, "(foo x 1)))");
}

#[test]
fn function_references_are_calls() {
    let src = "(defun a () (mapcar #'foo l))\n(defun b () (function foo))\n(defun c () (foo))";
    assert_eq!(lines(src, "foo", Kind::Call), vec![1, 2, 3]);
    assert!(lines(src, "foo", Kind::Reference).is_empty());
}

#[test]
fn quoted_symbol_counts_only_as_a_known_function_argument() {
    let src = "(defun a ()\n (funcall 'foo)\n (apply 'foo args)\n (mapcar 'foo l)\n \
               (add-hook 'h 'foo)\n (list 'foo)\n (run-with-timer 1 nil 'foo)\n \
               (add-hook 'foo 'bar)\n (mapcar (lambda (x) x) 'foo))";
    assert_eq!(lines(src, "foo", Kind::Call), vec![2, 3, 4, 5, 7]);
}

#[test]
fn quoted_data_is_not_a_call() {
    let src = "(defvar v '(foo a b))\n(defun a () (quote (foo x)) '[foo] [foo] '(foo (foo)))";
    assert!(lines(src, "foo", Kind::Call).is_empty());
    assert!(lines(src, "foo", Kind::Reference).is_empty());
}

#[test]
fn comments_strings_docstrings_are_skipped() {
    let src = ";; (foo)\n(defun a ()\n  \"Call (foo) here; \\\"(foo)\\\".\"\n  \
               (message \"(foo) %s\" 1) ; (foo)\n  (bar))";
    assert!(
        lines(src, "foo", Kind::Call).is_empty(),
        "{:?}",
        found(src, "foo", Kind::Call)
    );
    assert_eq!(lines(src, "bar", Kind::Call), vec![5]);
}

#[test]
fn character_literals_do_not_confuse_the_reader() {
    let src = "(defun a ()\n (list ?\\( ?\\\" ?; ?\\) ?\\C-\\M-x ?\\^? ?x ?é)\n (foo))\n";
    assert_eq!(found(src, "foo", Kind::Call), vec![(3, 3, d("a"))]);
    // A `?` inside a symbol is a constituent, not a character literal.
    let src = "(defun b () (foo? 1) (foo))";
    assert_eq!(lines(src, "foo", Kind::Call), vec![1]);
    assert_eq!(found(src, "foo?", Kind::Call), vec![(1, 14, d("b"))]);
}

#[test]
fn symbol_boundaries_follow_the_reader() {
    let src = "(foo-bar 1)\n(bar-foo)\n(foo\\ bar)\n(foo)\n(f\\oo)\n(foo.)\n(foo#x)";
    assert_eq!(lines(src, "foo", Kind::Call), vec![4, 5]);
    assert_eq!(lines(src, "foo bar", Kind::Call), vec![3]);
    assert_eq!(lines(src, "foo-bar", Kind::Call), vec![1]);
    assert_eq!(lines(src, "foo#x", Kind::Call), vec![7]);
}

#[test]
fn references_of_variables() {
    let src = "(defvar my-var 1 \"Doc my-var.\")\n\
               (defun a ()\n  (setq my-var 2)\n  (let ((my-var 3) (b my-var)) (list my-var))\n  \
               (let* (my-var) nil)\n  (my-var))\n\
               (defcustom my-var2 nil \"x\" :type 'boolean)";
    assert_eq!(lines(src, "my-var", Kind::Reference), vec![3, 4, 4, 4, 5]);
    assert_eq!(lines(src, "my-var", Kind::Call), vec![6]);
    let hits = found(src, "my-var", Kind::Reference);
    assert_eq!(hits[0], (3, 9, d("a")));
}

#[test]
fn definition_sites_are_not_hits() {
    let src = "(defvar foo nil)\n(defconst foo 1)\n(defcustom foo nil \"d\")\n(defun foo () 1)\n\
               (defmacro foo () 1)\n(cl-defun foo (&key a) a)\n(defalias 'foo #'ignore)\n\
               (declare-function foo \"x\")\n(cl-defmethod foo ((x integer)) x)\n\
               (define-minor-mode foo \"d\")\n(defvar-local foo 1)";
    assert!(
        lines(src, "foo", Kind::Reference).is_empty(),
        "{:?}",
        found(src, "foo", Kind::Reference)
    );
    assert!(
        lines(src, "foo", Kind::Call).is_empty(),
        "{:?}",
        found(src, "foo", Kind::Call)
    );
}

#[test]
fn enclosing_definition_names() {
    let src = "(defvar v (foo))\n(cl-defmethod m :around ((x t)) (foo))\n\
               (with-eval-after-load 'x (defun inner () (foo)))\n(add-hook 'h (lambda () (foo)))\n\
               (foo)\n(defalias 'al (lambda () (foo)))\n(cl-defmethod (setf place) (v o) (foo))";
    let defs: Vec<_> = found(src, "foo", Kind::Call).into_iter().map(|h| h.2).collect();
    assert_eq!(
        defs,
        vec![
            d("v"),
            d("m"),
            d("inner"),
            d("add-hook"),
            d("foo"),
            d("al"),
            d("cl-defmethod")
        ]
    );
    // A bare symbol at top level has no enclosing form.
    assert_eq!(found("foo\n", "foo", Kind::Reference), vec![(1, 1, None)]);
}

#[test]
fn argument_lists_and_binding_positions_are_not_calls() {
    let src = "(defun a (foo &optional b) (let ((foo 1)) foo))\n(lambda (foo) foo)\n\
               (dolist (foo l) (foo))\n(condition-case foo (x) (foo (y)) ((error foo) nil))\n\
               (cond (foo 1) ((foo) 2))\n(cl-flet ((foo (x) x)) (foo 1))\n\
               (pcase x (foo 1) ('foo 2))";
    assert_eq!(lines(src, "foo", Kind::Call), vec![3, 5, 6]);
    // References: the let binding and its use, the lambda body, the dolist variable, the cond
    // clause test; not arglists, condition names, handler heads, flet names or pcase keys.
    assert_eq!(lines(src, "foo", Kind::Reference), vec![1, 1, 2, 3, 5]);
}

#[test]
fn struct_and_class_slots_are_not_calls() {
    let src = "(cl-defstruct (st (:constructor st-make)) \"Doc.\" (foo (bar)) foo)\n\
               (defclass cl (foo) ((foo :initform (bar) :type integer)) \"Doc.\")";
    assert!(
        lines(src, "foo", Kind::Call).is_empty(),
        "{:?}",
        found(src, "foo", Kind::Call)
    );
    assert!(lines(src, "foo", Kind::Reference).is_empty());
    assert_eq!(found(src, "bar", Kind::Call), vec![(1, 56, d("st")), (2, 37, d("cl"))]);
    let src = "(cl-destructuring-bind (foo b) (foo) foo)";
    assert_eq!(lines(src, "foo", Kind::Call), vec![1]);
    assert_eq!(lines(src, "foo", Kind::Reference), vec![1]);
}

#[test]
fn default_values_in_argument_lists_are_code() {
    // Emacs's textmodes/rst.el line 4321, the miss the benchmark found.
    let src = "(cl-defun rst-compile (&optional (fmt \"%s\")\n  &aux (bufname (file-name-nondirectory buffer-file-name)))\n  bufname)";
    assert_eq!(lines(src, "buffer-file-name", Kind::Reference), vec![2]);
    assert_eq!(
        found(src, "file-name-nondirectory", Kind::Call),
        vec![(2, 18, d("rst-compile"))]
    );
    let src = "(cl-defun f (a &optional (x (foo)) (y bar y-p) &key (z (foo)) ((:k kk) (foo)) &aux (w (foo)))\n  (list a x y z kk w))\n\
               (cl-destructuring-bind (a &optional (b (foo))) l b)\n\
               (cl-flet ((g (&optional (x (foo))) x)) (g))\n\
               (cl-defmacro m ((a &optional (b (foo))) &rest body) body)\n\
               (lambda (&optional (x (foo))) x)\n\
               (cl-defmethod meth ((obj integer) &optional (n (foo))) n)";
    assert_eq!(lines(src, "foo", Kind::Call), vec![1, 1, 1, 1, 3, 4, 5, 6, 7]);
    assert_eq!(lines(src, "bar", Kind::Reference), vec![1]);
    // Parameters, supplied-p variables and keyword names are still not references, and a
    // list before `&optional` is a destructuring list, not a call.
    assert_eq!(lines(src, "x", Kind::Reference), vec![2, 4, 6]);
    assert_eq!(lines(src, "a", Kind::Reference), vec![2]);
    assert_eq!(lines(src, "n", Kind::Reference), vec![7]);
    assert_eq!(lines(src, "kk", Kind::Reference), vec![2]);
    assert_eq!(lines(src, "body", Kind::Reference), vec![5]);
    assert!(lines(src, "y-p", Kind::Reference).is_empty());
    assert!(lines(src, ":k", Kind::Reference).is_empty());
    assert!(lines(src, "obj", Kind::Reference).is_empty());
    assert!(lines("(cl-defun f ((foo a)) a)", "foo", Kind::Call).is_empty());
    assert!(lines("(cl-defmethod f ((x foo)) x)", "foo", Kind::Reference).is_empty());
    assert_eq!(
        found("(defun f (&optional foo) foo)", "foo", Kind::Reference),
        vec![(1, 26, d("f"))]
    );
    // `&context (EXPR SPECIALIZER)`: EXPR is evaluated.
    let src = "(cl-defmethod m (x &context (major-mode (eql foo-mode)) (window-system (eql x))) x)";
    assert_eq!(lines(src, "major-mode", Kind::Reference), vec![1]);
    assert!(lines(src, "foo-mode", Kind::Reference).is_empty());
}

#[test]
fn menu_items_evaluate_their_conditions() {
    // Emacs's international/mule-cmds.el, line 102.
    let src = "(defun m (map)\n  (bindings--define-key map [revert]\n    '(menu-item \"Revert\" revert-buffer-with-coding-system\n      :enable buffer-file-name\n      :visible (foo-p) :filter my-filter :help \"buffer-file-name\")))";
    assert_eq!(found(src, "buffer-file-name", Kind::Reference), vec![(4, 15, d("m"))]);
    assert_eq!(lines(src, "foo-p", Kind::Call), vec![5]);
    assert_eq!(lines(src, "revert-buffer-with-coding-system", Kind::Call), vec![3]);
    assert_eq!(lines(src, "my-filter", Kind::Call), vec![5]);
    // Other quoted data stays data; `menu-item` elsewhere is not special.
    let src = "(list '(foo buffer-file-name :enable buffer-file-name) '(x menu-item :enable buffer-file-name))";
    assert!(lines(src, "buffer-file-name", Kind::Reference).is_empty());
    assert!(lines(
        "'(menu-item \"x\" cmd :help buffer-file-name)",
        "buffer-file-name",
        Kind::Reference
    )
    .is_empty());
}

#[test]
fn pcase_guard_and_pred_bodies_are_code() {
    // Emacs's progmodes/elisp-mode.el, lines 715-733: `goto-char` on line 729 is inside a
    // `guard`; the rest of the patterns stays data.
    let src = "(defun elisp-completion-at-point ()\n\
               (pcase parent\n\
               ((and (or 'condition-case 'condition-case-unless-debug)\n\
               (guard (save-excursion\n\
               (ignore-errors\n\
               (forward-sexp 2)\n\
               (< (point) beg)))))\n\
               (list t (elisp--completion-local-symbols)\n\
               :predicate (lambda (sym) (get sym 'error-conditions))))\n\
               ((and (or ?\\( 'let 'let*)\n\
               (guard (save-excursion\n\
               (goto-char (1- beg))\n\
               (when (eq parent ?\\()\n\
               (up-list -1))\n\
               (forward-symbol -1)\n\
               (looking-at \"\\\\_<let\\\\*?\\\\_>\"))))\n\
               (list t (elisp--completion-local-symbols)))))";
    assert_eq!(
        found(src, "goto-char", Kind::Call),
        vec![(12, 2, d("elisp-completion-at-point"))]
    );
    assert_eq!(lines(src, "save-excursion", Kind::Call), vec![4, 11]);
    assert_eq!(lines(src, "forward-sexp", Kind::Call), vec![6]);
    assert_eq!(lines(src, "beg", Kind::Reference), vec![7, 12]);
    assert_eq!(lines(src, "parent", Kind::Reference), vec![2, 13]);
    // Pattern combinators and quoted values are not calls.
    assert!(lines(src, "and", Kind::Call).is_empty());
    assert!(lines(src, "or", Kind::Call).is_empty());
    assert!(lines(src, "guard", Kind::Call).is_empty());
    assert!(lines(src, "let", Kind::Call).is_empty());
    assert!(lines(src, "condition-case", Kind::Call).is_empty());

    // Emacs's emacs-lisp/rx.el, lines 612-617.
    let src = "(defun rx--charset-intervals (charset)\n\
               (pcase charset\n\
               (`(intersection . ,body) (rx--charset-intersection body))\n\
               ((pred characterp)\n\
               (list (cons charset charset)))\n\
               ((guard (and (stringp charset) (= (length charset) 1)))\n\
               (let ((char (string-to-char charset)))\n\
               (list (cons char char))))))";
    assert_eq!(lines(src, "characterp", Kind::Call), vec![4]);
    assert_eq!(lines(src, "stringp", Kind::Call), vec![6]);
    assert_eq!(lines(src, "length", Kind::Call), vec![6]);
    assert_eq!(lines(src, "charset", Kind::Reference), vec![2, 5, 5, 6, 6, 7]);
    // `intersection` is a literal of the backquoted pattern, `body` a variable it binds.
    assert!(lines(src, "intersection", Kind::Call).is_empty());
    assert_eq!(lines(src, "body", Kind::Reference), vec![3]);
}

#[test]
fn pcase_pattern_forms() {
    // `pred` with a symbol, `(F ARGS)`, `(not F)`, a lambda; `app`; `let`; `and`/`or`;
    // backquoted patterns with `,PAT`; and every pcase macro.
    let src = "(defun f (x)\n\
               (pcase x\n\
               ((pred (memq _ my-list)) 1)\n\
               ((pred (not my-p)) 2)\n\
               ((pred (lambda (y) (my-p y))) 3)\n\
               ((app my-p (pred my-q)) 4)\n\
               ((app (my-p 1) v) v)\n\
               ((let (pred my-q) (my-p x)) 5)\n\
               (`(my-p ,(pred my-p) . ,(or 'a (guard (my-p x)))) 6)\n\
               ((cl-type my-p) 7)\n\
               ((seq (pred my-p)) 8)\n\
               ((map (:a (pred my-p) (my-p))) 9)\n\
               ((cl-struct my-p (slot (pred my-p))) 10)\n\
               ((rx (let my-p (+ digit))) 11)\n\
               ('(my-p) 12)\n\
               (my-p (my-p))))";
    assert_eq!(
        lines(src, "my-p", Kind::Call),
        vec![4, 5, 6, 7, 8, 9, 9, 11, 12, 12, 13, 16]
    );
    assert_eq!(lines(src, "my-q", Kind::Call), vec![6, 8]);
    assert_eq!(lines(src, "memq", Kind::Call), vec![3]);
    assert_eq!(lines(src, "my-list", Kind::Reference), vec![3]);
    assert_eq!(lines(src, "x", Kind::Reference), vec![2, 8, 9]);
    assert!(lines(src, "+", Kind::Call).is_empty());
    assert!(lines(src, "not", Kind::Call).is_empty());
    assert!(lines(src, "pred", Kind::Call).is_empty());
    assert!(lines(src, "app", Kind::Call).is_empty());
    assert!(lines(src, "v", Kind::Reference).len() == 1);

    // Emacs's org/org-clock.el line 3109 (pcase-dolist) and emacs-lisp/ert.el line 384
    // (pcase-exhaustive); pcase-let, pcase-let*, pcase-setq and pcase-lambda.
    let src = "(pcase-dolist (`(,(and file (pred file-exists-p)) . ,position)\n\
               org-clock-stored-history)\n\
               (org-clock-history-push position (find-file-noselect file)))\n\
               (pcase-exhaustive type\n\
               ((pred listp) type)\n\
               ((pred symbolp) (list type)))\n\
               (pcase-let ((`(,a ,(pred file-exists-p)) (foo)) ((or 'x (guard (file-exists-p b))) (foo))) a)\n\
               (pcase-let* (((pred file-exists-p) (foo))) nil)\n\
               (pcase-setq `(,c ,(pred file-exists-p)) (foo) d (foo))\n\
               (pcase-lambda (`(,e . ,(pred file-exists-p)) (pred file-exists-p)) (foo e))";
    assert_eq!(lines(src, "file-exists-p", Kind::Call), vec![1, 7, 7, 8, 9, 10, 10]);
    assert_eq!(lines(src, "listp", Kind::Call), vec![5]);
    assert_eq!(lines(src, "symbolp", Kind::Call), vec![6]);
    assert_eq!(lines(src, "foo", Kind::Call), vec![7, 7, 8, 9, 9, 10]);
    assert_eq!(lines(src, "org-clock-stored-history", Kind::Reference), vec![2]);
    assert_eq!(lines(src, "type", Kind::Reference), vec![4, 5, 6]);
    // The variables a pattern binds are not references where they are bound.
    for var in ["file", "position", "a", "e"] {
        assert!(lines(src, var, Kind::Reference).len() <= 1, "{var}");
    }
    assert_eq!(lines(src, "b", Kind::Reference), vec![7]);
    // pcase-setq sets the variables of its patterns, as setq does.
    assert_eq!(lines(src, "d", Kind::Reference), vec![9]);
    assert!(lines(src, "c", Kind::Reference).is_empty());
    // A pcase form built by a backquote template (Emacs's emacs-lisp/pcase.el line 321):
    // `,EXPR` where a pattern goes is evaluated.
    let src = "(defmacro m (spec tmpvar)
  `(pcase-let* ((,(car spec) ,tmpvar)) (pcase x (,(car spec) 1))))";
    assert_eq!(lines(src, "car", Kind::Call), vec![2, 2]);
    assert_eq!(lines(src, "spec", Kind::Reference), vec![2, 2]);
}

#[test]
fn declare_functions_are_code_and_other_specs_data() {
    // Emacs's emacs-lisp/eieio-core.el, lines 736-747 and 771-778.
    let src = "(defun eieio-oref (obj slot)\n\
               \"Return the value in OBJ at SLOT in the object vector.\"\n\
               (declare (compiler-macro\n\
               (lambda (exp)\n\
               (ignore obj)\n\
               (pcase slot\n\
               ((and (or `',name (and name (pred keywordp)))\n\
               (guard (not (memq name eieio--known-slot-names))))\n\
               (macroexp-warn-and-return\n\
               (format-message \"Unknown slot `%S'\" name)\n\
               exp nil 'compile-only))\n\
               (_ exp))))\n\
               (gv-setter eieio-oset))\n\
               (cl-check-type slot symbol))\n\
               (defun eieio-oref-default (class slot)\n\
               (declare (gv-setter eieio-oset-default)\n\
               (compiler-macro\n\
               (lambda (exp)\n\
               (ignore class)\n\
               exp))\n\
               (gv-expander (lambda (do) (funcall do 1 #'ignore)))\n\
               (indent 1) (debug (ignore sexp)) (obsolete ignore \"28.1\"))\n\
               nil)";
    assert_eq!(
        found(src, "ignore", Kind::Call),
        vec![
            (5, 2, d("eieio-oref")),
            (19, 2, d("eieio-oref-default")),
            (21, 43, d("eieio-oref-default"))
        ]
    );
    assert_eq!(lines(src, "keywordp", Kind::Call), vec![7]);
    assert_eq!(lines(src, "memq", Kind::Call), vec![8]);
    assert_eq!(lines(src, "macroexp-warn-and-return", Kind::Call), vec![9]);
    assert_eq!(lines(src, "format-message", Kind::Call), vec![10]);
    assert_eq!(lines(src, "eieio--known-slot-names", Kind::Reference), vec![8]);
    assert_eq!(lines(src, "obj", Kind::Reference), vec![5]);
    // A function named by `gv-setter` is called by the setf expansion.
    assert_eq!(lines(src, "eieio-oset", Kind::Call), vec![13]);
    assert_eq!(lines(src, "eieio-oset-default", Kind::Call), vec![16]);
    assert!(lines(src, "indent", Kind::Call).is_empty());
    assert!(lines(src, "compiler-macro", Kind::Call).is_empty());
    // `cl-declare` specs stay data.
    assert!(lines("(defun f () (cl-declare (compiler-macro (foo))))", "foo", Kind::Call).is_empty());
}

#[test]
fn struct_constructor_argument_lists_are_read() {
    // Emacs's emacs-lisp/debug.el, lines 137-142.
    let src = "(cl-defstruct (debugger--buffer-state\n\
               (:constructor debugger--save-buffer-state\n\
               (&aux (mode     major-mode)\n\
               (header   backtrace-insert-header-function)\n\
               (frames   backtrace-frames)\n\
               (content  (buffer-string))\n\
               (pos      (point)))))\n\
               mode header frames content pos)";
    assert_eq!(
        found(src, "major-mode", Kind::Reference),
        vec![(3, 17, d("debugger--buffer-state"))]
    );
    assert_eq!(lines(src, "backtrace-frames", Kind::Reference), vec![5]);
    assert_eq!(lines(src, "buffer-string", Kind::Call), vec![6]);
    assert_eq!(lines(src, "point", Kind::Call), vec![7]);
    // The parameters, the constructor's name and the other options are not uses.
    assert!(lines(src, "mode", Kind::Reference).is_empty());
    assert!(lines(src, "debugger--save-buffer-state", Kind::Call).is_empty());
    let src = "(cl-defstruct (s (:constructor nil) (:copier foo) (:include p (a (foo)) (b 1 :type foo))\n\
               (:predicate foo) (:constructor s-make (x &optional (y (foo)) &key (z (foo))))) a)";
    assert_eq!(lines(src, "foo", Kind::Call), vec![1, 2, 2]);
    assert!(lines(src, "foo", Kind::Reference).is_empty());
}

#[test]
fn custom_types_and_declared_argument_lists_are_data() {
    // Emacs's cus-start.el, lines 216-225: a type in a backquoted list.
    let src = "(pcase-dolist (`(,symbol ,group ,type ,version . ,rest)\n\
               `((file-coding-system-alist mule\n\
               (alist :value-type (choice\n\
               (coding-system\n\
               :match (lambda (widget value)\n\
               (and value (not (functionp value)))))\n\
               (function :value ignore))))\n\
               (cursor-type display ,cursor-type-types)))\n\
               (put symbol 'custom-type type))";
    assert!(lines(src, "ignore", Kind::Call).is_empty());
    assert_eq!(lines(src, "functionp", Kind::Call), vec![6]);
    assert_eq!(lines(src, "cursor-type-types", Kind::Reference), vec![8]);
    assert_eq!(lines("(function ignore) #'ignore", "ignore", Kind::Call), vec![1, 1]);
    // A backquoted `:type` is data with code in its unquoted parts.
    let src = "(defcustom v nil \"Doc.\"\n\
               :type `(choice (string :tag \"x\") (function :tag \"f\")\n\
               ,@(mapcar (lambda (c) (list 'const c)) my-list))\n\
               :set (lambda (s v) (string s)))\n\
               (make-process :name \"p\" :type (string 1))";
    assert_eq!(lines(src, "string", Kind::Call), vec![4, 5]);
    assert!(lines(src, "choice", Kind::Call).is_empty());
    assert_eq!(lines(src, "mapcar", Kind::Call), vec![3]);
    assert_eq!(lines(src, "list", Kind::Call), vec![3]);
    assert_eq!(lines(src, "my-list", Kind::Reference), vec![3]);
    // A slot's `:type` is data.
    let src = "(defclass c () ((s :initform (foo) :type (or null foo))))\n\
               (cl-defstruct st (a (foo) :type foo))";
    assert_eq!(lines(src, "foo", Kind::Call), vec![1, 2]);
    assert!(lines(src, "foo", Kind::Reference).is_empty());
    assert!(lines(src, "null", Kind::Reference).is_empty());
    // Emacs's net/gnutls.el, lines 219-220: parameter names are not calls.
    let src = "(declare-function gnutls-boot \"gnutls.c\" (proc type proplist))\n\
               (declare-function gnutls-errorp \"gnutls.c\" (error))";
    assert!(lines(src, "error", Kind::Call).is_empty());
    assert!(lines(src, "proc", Kind::Reference).is_empty());
    assert!(lines(src, "gnutls-errorp", Kind::Call).is_empty());
}

#[test]
fn backquote_templates_are_code_and_unquotes_are_expressions() {
    let src = "(defmacro m (x)\n  `(progn (foo ,x) ,(bar foo) ',foo (list ,@foo)))";
    assert_eq!(lines(src, "foo", Kind::Call), vec![2]);
    assert_eq!(lines(src, "foo", Kind::Reference), vec![2, 2]);
    assert_eq!(lines(src, "bar", Kind::Call), vec![2]);
}

#[test]
fn quoted_variable_arguments_are_references() {
    let src = "(defun a ()\n (add-hook 'foo #'f)\n (boundp 'foo)\n (set 'foo 1)\n \
               (symbol-value 'foo)\n (list 'foo)\n (run-hooks 'x 'foo))";
    assert_eq!(lines(src, "foo", Kind::Reference), vec![2, 3, 4, 5, 7]);
}

#[test]
fn hash_syntaxes() {
    let src = "(list #xfoo #:foo #s(foo a) #[foo] #(\"foo\" 0 1 (foo x)) #1=(bar) #1# ##)\n(foo)";
    assert_eq!(lines(src, "foo", Kind::Call), vec![2]);
    assert!(lines(src, "foo", Kind::Reference).is_empty());
    // `#1=DATUM` is the datum itself: here a call.
    assert_eq!(lines(src, "bar", Kind::Call), vec![1]);
    assert_eq!(lines("#!/usr/bin/emacs --script\n(foo)", "foo", Kind::Call), vec![2]);
}

#[test]
fn columns_count_characters_and_lines_are_trimmed() {
    let src = "(defun é () \"ééé\" (foo))";
    let hits = scan_source(src.as_bytes(), "foo", Kind::Call);
    assert_eq!((hits[0].column, hits[0].text.as_str()), (20, src));
    let long = format!("(defun a () (foo) {})", "x ".repeat(300));
    let hits = scan_source(long.as_bytes(), "foo", Kind::Call);
    assert!(hits[0].text.ends_with("...") && hits[0].text.chars().count() == MAX_LINE_TEXT + 3);
}

#[test]
fn non_ascii_names_and_invalid_utf8() {
    let mut src = b"(defun a () \"\xff\xfe\" (\xc3\xa9t\xc3\xa9 1) ; \xff\n (foo))".to_vec();
    assert_eq!(scan_source(&src, "été", Kind::Call).len(), 1);
    let hits = scan_source(&src, "foo", Kind::Call);
    assert_eq!((hits[0].line, hits[0].column), (2, 3));
    src.extend_from_slice(b"\n(foo \xff)");
    let hits = scan_source(&src, "foo", Kind::Call);
    assert_eq!(hits.len(), 2);
    assert!(hits[1].text.contains('\u{fffd}'));
    let hits = scan_source(b"(foo \x00\x07 x)\r\n", "foo", Kind::Call);
    assert_eq!(hits[0].text, "(foo \u{fffd}\u{fffd} x)");
}

#[test]
fn malformed_input_never_panics() {
    let cases: &[&[u8]] = &[
        b"",
        b"(",
        b")",
        b")))(((",
        b"\"unterminated",
        b"\"\\",
        b"?",
        b"?\\",
        b"?\\C-",
        b"#",
        b"#@",
        b"#@5",
        b"#@99999999999999999999999",
        b"#&",
        b"#1",
        b"#s",
        b"#^",
        b"'",
        b"`",
        b",@",
        b"\\",
        b"foo\\",
        b"(foo . bar)",
        b"[(foo])",
        b"(foo ')",
        b"\xc3",
        b"?\xe2",
    ];
    for case in cases {
        for name in ["foo", "x", "(", "\\"] {
            let _ = scan_source(case, name, Kind::Call);
            let _ = scan_source(case, name, Kind::Reference);
        }
    }
    // Pseudo-random bytes biased towards syntax characters.
    let alphabet = b"()[]'`,@#?\\\";\n foo-x.:s^&1=\xc3\xa9\xff";
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..300 {
        let mut buf = Vec::new();
        for _ in 0..400 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            buf.push(alphabet[(state % alphabet.len() as u64) as usize]);
        }
        let _ = scan_source(&buf, "foo", Kind::Call);
        let _ = scan_source(&buf, "foo", Kind::Reference);
    }
}

#[test]
fn deep_nesting_is_bounded() {
    let mut src = "(".repeat(MAX_DEPTH * 2);
    src.push_str("(foo)");
    src.push_str(&")".repeat(MAX_DEPTH * 2));
    src.push_str("\n(foo)");
    assert_eq!(lines(&src, "foo", Kind::Call), vec![2]);
}

#[test]
fn names_needing_escapes_are_found() {
    assert_eq!(needle(b"foo"), Some(&b"foo"[..]));
    assert_eq!(needle(b"a (long"), Some(&b"long"[..]));
    assert_eq!(needle(b"()"), None);
    assert_eq!(lines("(a\\ \\(long 1)", "a (long", Kind::Call), vec![1]);
    assert_eq!(lines("(\\(\\) 1)", "()", Kind::Call), vec![1]);
}

#[test]
fn kinds_parse_and_names_are_validated() {
    assert_eq!("call".parse::<Kind>(), Ok(Kind::Call));
    assert_eq!("reference".parse::<Kind>(), Ok(Kind::Reference));
    assert_eq!("calls".parse::<Kind>(), Err(XrefError::UnknownKind("calls".into())));
    assert_eq!(validate_name(""), Err(XrefError::EmptyName));
    assert!(matches!(
        validate_name(&"x".repeat(MAX_NAME_LEN + 1)),
        Err(XrefError::NameTooLong(_))
    ));
    assert!(scan_files(&[], "", Kind::Call, &ScanOptions::default()).is_err());
}
