//! What the head of a form says about its arguments: the known definition, binding and pcase
//! forms, and the functions that take a function or a variable as a quoted symbol.

/// Higher-order functions and the argument position (1-based, 0 = any argument) at which a
/// quoted symbol `'NAME` names a function that will be called: such a `'NAME` counts as a call.
pub const FUNCTION_ARGS: &[(&str, u32)] = &[
    ("funcall", 1),
    ("apply", 1),
    ("funcall-interactively", 1),
    ("call-interactively", 1),
    ("apply-partially", 1),
    ("mapcar", 1),
    ("mapc", 1),
    ("mapcan", 1),
    ("mapconcat", 1),
    ("mapatoms", 1),
    ("maphash", 1),
    ("map-keymap", 1),
    ("cl-mapcar", 1),
    ("cl-mapc", 1),
    ("cl-mapcan", 1),
    ("cl-maplist", 1),
    ("cl-some", 1),
    ("cl-every", 1),
    ("cl-reduce", 1),
    ("cl-remove-if", 1),
    ("cl-remove-if-not", 1),
    ("cl-delete-if", 1),
    ("cl-delete-if-not", 1),
    ("cl-find-if", 1),
    ("cl-position-if", 1),
    ("cl-count-if", 1),
    ("seq-map", 1),
    ("seq-do", 1),
    ("seq-filter", 1),
    ("seq-remove", 1),
    ("seq-reduce", 1),
    ("seq-some", 1),
    ("seq-every-p", 1),
    ("seq-find", 1),
    ("seq-mapcat", 1),
    ("seq-mapn", 1),
    ("sort", 2),
    ("cl-sort", 2),
    ("seq-sort", 1),
    ("run-with-timer", 3),
    ("run-with-idle-timer", 3),
    ("run-at-time", 3),
    ("add-hook", 2),
    ("remove-hook", 2),
    ("advice-add", 3),
    ("advice-remove", 2),
    ("defalias", 2),
    ("fset", 2),
    ("define-key", 3),
    ("keymap-set", 3),
    ("global-set-key", 2),
    ("local-set-key", 2),
    ("set-process-filter", 2),
    ("set-process-sentinel", 2),
];

/// Functions and the argument position (1-based, 0 = any argument) at which a quoted symbol
/// `'NAME` names a variable: such a `'NAME` counts as a reference.
pub const VARIABLE_ARGS: &[(&str, u32)] = &[
    ("set", 1),
    ("symbol-value", 1),
    ("boundp", 1),
    ("default-boundp", 1),
    ("default-value", 1),
    ("set-default", 1),
    ("default-toplevel-value", 1),
    ("set-default-toplevel-value", 1),
    ("makunbound", 1),
    ("make-local-variable", 1),
    ("make-variable-buffer-local", 1),
    ("kill-local-variable", 1),
    ("local-variable-p", 1),
    ("local-variable-if-set-p", 1),
    ("buffer-local-value", 1),
    ("add-hook", 1),
    ("remove-hook", 1),
    ("run-hooks", 0),
    ("run-hook-with-args", 1),
    ("run-hook-with-args-until-success", 1),
    ("run-hook-with-args-until-failure", 1),
    ("run-hook-wrapped", 1),
    ("add-to-list", 1),
    ("add-to-ordered-list", 1),
    ("customize-set-variable", 1),
    ("custom-set-default", 1),
    ("defvaralias", 2),
    ("make-obsolete-variable", 0),
];

/// What the head of a list says about the list's elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Head {
    /// An ordinary function or macro call, or no symbol head.
    Other,
    /// `quote`, `cl-declare`, `cl-declaim`: the arguments are data.
    Quote,
    /// `function`: a symbol argument is a function reference.
    Function,
    /// `declare`: each argument is a spec, data except the functions of `compiler-macro`,
    /// `gv-setter`, `gv-expander` and `completion`.
    Declare,
    /// `let`-like: the first argument is a list of bindings.
    Let,
    /// `dolist`-like: the first argument is `(VAR EXPR...)`.
    DoList,
    /// `condition-case`: VAR, BODYFORM, then handlers `(CONDITIONS BODY...)`.
    CondCase,
    /// `cond`: every argument is a clause of expressions.
    Cond,
    /// `cl-case`, `cl-typecase`...: EXPR, then clauses `(KEY BODY...)`.
    Case,
    /// `pcase`, `pcase-exhaustive`: EXPR, then clauses `(PATTERN BODY...)`.
    Pcase,
    /// `pcase-let`, `pcase-let*`: a list of `(PATTERN EXPR)` bindings.
    PcaseLet,
    /// `pcase-dolist`: `(PATTERN LIST)`, then the body.
    PcaseDolist,
    /// `pcase-setq`: PATTERN VALUE pairs.
    PcaseSetq,
    /// `pcase-lambda`: an argument list of patterns.
    PcaseLambda,
    /// `lambda`, `cl-destructuring-bind`...: the first argument is an argument list.
    Lambda,
    /// `cl-defstruct`: NAME, then slots, bare or `(SLOT DEFAULT OPTIONS...)`.
    Struct,
    /// `defclass`: NAME, parents (data), slots `((SLOT OPTIONS...)...)`, options.
    Class,
    /// `cl-flet`-like: the first argument is a list of `(NAME ARGS BODY...)`.
    Flet,
    /// A definition with an argument list after its name (`defun`).
    Defun,
    /// `cl-defmethod`: qualifiers may come before the argument list.
    DefMethod,
    /// Any other definition form (`defvar`, `defcustom`, `define-minor-mode`...).
    Def,
    /// `declare-function`: NAME, then FILE, ARGLIST and FILEONLY, all data.
    DeclareFunction,
}

impl Head {
    pub(super) fn classify(head: &[u8]) -> Head {
        match head {
            b"quote" | b"cl-declare" | b"cl-declaim" => Head::Quote,
            b"function" => Head::Function,
            b"declare" => Head::Declare,
            b"let" | b"let*" | b"letrec" | b"dlet" | b"if-let" | b"when-let" | b"if-let*" | b"when-let*"
            | b"and-let*" | b"while-let" | b"cl-letf" | b"cl-letf*" => Head::Let,
            b"dolist"
            | b"dotimes"
            | b"cl-dolist"
            | b"cl-dotimes"
            | b"dolist-with-progress-reporter"
            | b"dotimes-with-progress-reporter"
            | b"cl-do-symbols"
            | b"cl-do-all-symbols" => Head::DoList,
            b"condition-case" | b"condition-case-unless-debug" => Head::CondCase,
            b"cond" => Head::Cond,
            b"cl-case" | b"cl-ecase" | b"cl-typecase" | b"cl-etypecase" | b"case" | b"ecase" => Head::Case,
            b"pcase" | b"pcase-exhaustive" => Head::Pcase,
            b"pcase-let" | b"pcase-let*" => Head::PcaseLet,
            b"pcase-dolist" => Head::PcaseDolist,
            b"pcase-setq" => Head::PcaseSetq,
            b"pcase-lambda" => Head::PcaseLambda,
            b"lambda" | b"cl-destructuring-bind" | b"seq-let" | b"cl-multiple-value-bind" | b"with-slots" => {
                Head::Lambda
            }
            b"cl-defstruct" | b"defstruct" => Head::Struct,
            b"defclass" => Head::Class,
            b"cl-flet" | b"cl-flet*" | b"cl-labels" | b"cl-macrolet" | b"flet" | b"labels" => Head::Flet,
            b"defun"
            | b"defmacro"
            | b"defsubst"
            | b"define-inline"
            | b"cl-defun"
            | b"cl-defmacro"
            | b"cl-defsubst"
            | b"cl-defgeneric"
            | b"cl-iter-defun"
            | b"iter-defun"
            | b"ert-deftest"
            | b"define-advice"
            | b"cl-define-compiler-macro"
            | b"define-compiler-macro"
            | b"pcase-defmacro"
            | b"defun*"
            | b"defmacro*"
            | b"cl-deftype"
            | b"gv-define-setter" => Head::Defun,
            b"cl-defmethod" | b"defmethod" => Head::DefMethod,
            // Functions whose name starts like a definition but whose first argument is code.
            b"define-key" | b"define-key-after" | b"define-abbrev" | b"default-value" => Head::Other,
            // `bindings--define-key`, `evil-define-key`...: key bindings, not definitions.
            _ if head.ends_with(b"define-key") || head.ends_with(b"define-key-after") => Head::Other,
            b"defvar" | b"defconst" | b"defcustom" | b"defvar-local" | b"defface" | b"defgroup" | b"defalias"
            | b"defvaralias" | b"defadvice" | b"deftheme" | b"defimage" | b"defsetf" | b"defvar-keymap" => Head::Def,
            b"declare-function" => Head::DeclareFunction,
            _ if head.starts_with(b"cl-def") || head.starts_with(b"define-") => Head::Def,
            _ if contains(head, b"-def")
                && (contains(head, b"-define-")
                    || head.ends_with(b"-define")
                    || contains(head, b"-defun")
                    || contains(head, b"-defmacro")
                    || contains(head, b"-defvar")
                    || contains(head, b"-defcustom")) =>
            {
                Head::Def
            }
            _ => Head::Other,
        }
    }

    pub(super) fn is_definition(self) -> bool {
        matches!(
            self,
            Head::Defun | Head::DefMethod | Head::Def | Head::DeclareFunction | Head::Struct | Head::Class
        )
    }
}

/// Whether the short byte string HAYSTACK contains NEEDLE.
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// What the arguments of a pcase pattern `(HEAD ARGS...)` are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PatternHead {
    /// `pred`: ARG 1 is a function (a symbol, `(not FUN)`, a lambda or `(F ARGS...)`).
    Pred,
    /// `app`: ARG 1 is a function as for `pred`, ARG 2 a pattern.
    App,
    /// `guard`: ARG 1 is an expression.
    Guard,
    /// `let`: ARG 1 is a pattern, ARG 2 an expression.
    Let,
    /// `and`, `or`, `seq`, `radix-tree-leaf`: every argument is a pattern.
    Patterns,
    /// `map`, `cl-struct`, `eieio`: fields, bare or `(KEY PAT DEFAULT)`.
    Fields,
    /// `cl-type`, `rx`, any other pattern macro: data.
    Data,
}

impl PatternHead {
    pub(super) fn classify(head: Option<&[u8]>) -> PatternHead {
        match head {
            Some(b"pred") => PatternHead::Pred,
            Some(b"app") => PatternHead::App,
            Some(b"guard") => PatternHead::Guard,
            Some(b"let") => PatternHead::Let,
            Some(b"and" | b"or" | b"seq" | b"radix-tree-leaf") => PatternHead::Patterns,
            Some(b"map" | b"cl-struct" | b"eieio") => PatternHead::Fields,
            _ => PatternHead::Data,
        }
    }
}

/// Whether a `declare` spec named HEAD takes a function (a symbol or a lambda) as ARG 1.
pub(super) fn declares_function(head: Option<&[u8]>) -> bool {
    matches!(
        head,
        Some(b"compiler-macro" | b"gv-setter" | b"gv-expander" | b"completion")
    )
}
