//! The Emacs Lisp source scanner behind `who_calls` and `who_references`.
//!
//! [`scan_source`] finds the occurrences of one symbol in Emacs Lisp source text, reading it the
//! way the Emacs Lisp reader does; [`scan_files`] runs it over many files (plain `.el` or
//! gzip-compressed `.el.gz`) in parallel and collects the files it could not read.
//!
//! # What is read
//!
//! Only code. Comments (`;` to the end of the line), strings and docstrings (with `\` escapes),
//! character literals (`?\(`, `?\"`, `?;`, `?\C-\M-x`) and the `#` syntaxes (`#x1F`, `#s(...)`,
//! `#[...]`, `#(...)`, `#:uninterned`) never produce a hit. Symbols are delimited as the reader
//! delimits them: `foo-bar` and `foo?` are not `foo`, `foo\ bar` is the one symbol `foo bar`, and
//! `f\oo` is `foo`.
//!
//! # What counts as a call ([`Kind::Call`])
//!
//! - the symbol in function position of a code form: `(NAME ...)`;
//! - a function reference: `#'NAME` or `(function NAME)`;
//! - a quoted symbol `'NAME` passed to a known higher-order function, at the argument position
//!   that takes a function ([`FUNCTION_ARGS`]: `funcall`, `apply`, `mapcar`, `add-hook`'s second
//!   argument, `define-key`'s third, `run-with-timer`...). Any other `'NAME` is data;
//! - in a pcase pattern (of `pcase`, `pcase-exhaustive`, `pcase-let`, `pcase-let*`,
//!   `pcase-dolist`, `pcase-setq`, `pcase-lambda`, through `and`, `or`, `app`, `let`, `seq`,
//!   `map`, `cl-struct`, `eieio` and backquoted patterns' `,PAT`): the function of
//!   `(pred NAME)`, `(pred (not NAME))`, `(app NAME PAT)`, and `(NAME ARGS...)` there; the
//!   expressions of `(guard EXPR)` and `(let PAT EXPR)` are code. The rest of a pattern is data;
//! - the function of a `declare` spec `(compiler-macro F)`, `(gv-setter F)`, `(gv-expander F)` or
//!   `(completion F)`: `NAME` there, or the code of a `(lambda ...)`.
//!
//! # What counts as a reference ([`Kind::Reference`])
//!
//! - the bare symbol anywhere a form is evaluated, outside function position: `NAME`,
//!   `(setq NAME ...)`, `(foo NAME)`, a `cond` clause `(NAME ...)`;
//! - the variable bound by `let`-like forms, `dolist`/`dotimes` and `when-let`:
//!   `(let ((NAME ...)) ...)`, `(let (NAME) ...)`;
//! - the value of `:enable`, `:visible`, `:included` or `:selected` in a `(menu-item NAME
//!   BINDING PROPS...)` menu entry, even quoted: the menu evaluates it (and the BINDING and a
//!   `:filter` function are calls);
//! - a quoted symbol `'NAME` passed to a known function that takes a variable, at that argument
//!   position ([`VARIABLE_ARGS`]: `set`, `symbol-value`, `boundp`, `add-hook`'s first argument,
//!   `make-local-variable`, `add-to-list`...).
//!
//! # What is never reported
//!
//! - Definition sites: the name of `defun`, `defmacro`, `defvar`, `defcustom`, `defconst`,
//!   `defalias`, `cl-defmethod`, `define-*`, `declare-function`... and any other definition form.
//!   They are not listed separately either: `describe_symbol` reports where a symbol is defined.
//! - Quoted data: `'(a b c)`, `(quote (a b))`, vectors `[a b]`, the other `declare` specs and
//!   `cl-declare`, the keys of `cl-case` clauses, the variables, literals and types of pcase
//!   patterns, condition names in `condition-case` handlers, the parents of a `defclass`, the
//!   slot names of `defclass` and `cl-defstruct` (their default/initform expressions are code)
//!   and a slot's `:type`, the options of a `cl-defstruct` (but the argument list of a
//!   `:constructor` is read as one, `&aux` defaults included, and the slots of an `:include`
//!   as slots), the argument list of `declare-function`, a backquoted `:type` value (a custom
//!   type: only its `,x`/`,@x` parts are code), and `(function :value NAME)`: `function` with
//!   more than one argument is not a function reference.
//! - The parameters in argument lists of `defun`, `lambda`, `cl-defun`,
//!   `cl-destructuring-bind`, `cl-flet` entries... and the local function names of
//!   `cl-flet`/`cl-labels`. (The default-value forms of `&optional`, `&key` and `&aux` entries,
//!   `(VAR DEFAULT SVAR)`, are code and are read as such, in nested destructuring lists too, as
//!   is the EXPR of a `cl-defmethod` `&context (EXPR SPECIALIZER)`.)
//! - A quoted `'NAME` given to a function that is not in the tables above (e.g. a package's own
//!   `(my-bind-key "k" 'NAME)`): it cannot be told from data.
//! - What only running the code shows: a function named at run time (`(funcall var)`,
//!   `(funcall (intern ...))`), a form built as data and evaluated later, the arguments of a
//!   package's own macros or pcase pattern macros that take code (read as they are written:
//!   a macro call's arguments as code, an unknown pattern as data).
//!
//! Backquoted templates are treated as code, with their unquoted parts `,x`/`,@x` as evaluated
//! expressions: in Emacs Lisp a backquote almost always builds code in a macro, and a macro that
//! expands into a call of `NAME` is one of its callers. A backquoted data list therefore gives
//! the occasional false positive (a custom type in a backquoted table of options, say).
//!
//! # Hits
//!
//! Each hit has a 1-based line and a 1-based column (in characters) of the symbol's first
//! character (after `#'` or `'`), the name of the innermost enclosing definition form
//! (`defun X`, `defvar X`, `cl-defmethod X`, `cl-defstruct (X ...)`...), else the head of the
//! enclosing top-level form, else none (a bare symbol at top level), and its source line,
//! trimmed, with control characters replaced by U+FFFD and cut to [`MAX_LINE_TEXT`] characters.
//!
//! # Speed
//!
//! - A file is parsed only when the bytes of the symbol name occur in it (a SIMD substring
//!   search with `memchr::memmem`); most files of a library tree do not contain a given name.
//!   A name written with gratuitous escapes (`f\oo` for `foo`) is therefore not found.
//! - Files are read, decompressed and scanned by [`ScanOptions::threads`] threads (the calling
//!   thread included) sharing an atomic work index.
//! - [`scan_files_cached`] keeps a [`SymbolIndex`] (a Bloom filter of the symbols read, about
//!   1 MB for all of Emacs's lisp tree) per file in a [`ScanCache`], valid while the file's size
//!   and modification time are unchanged: later scans skip, without reading them, the files
//!   that cannot contain the name. Scans index the files they parse; [`index_files`] indexes
//!   the rest, meant for a background thread.
//! - [`ScanOptions::cancel`] stops a scan from another thread (checked before each file and
//!   every 256 KiB inside one), which then reports the files done so far, and
//!   [`ScanOptions::progress`] counts the files done, for a progress message.
//!
//! Invalid UTF-8 is no problem: the scanner works on bytes and decodes the reported line
//! lossily. Malformed input (unbalanced parentheses, unterminated strings, binary data) gives
//! best-effort hits and never a panic; nesting deeper than 10,000 is not tracked.

use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use memchr::memmem;

/// The largest file, in bytes (after decompression for `.el.gz`), that [`scan_files`] reads by
/// default. Emacs's largest library source (`ja-dic.el`) is about 1.6 MB.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 32 * 1024 * 1024;

/// The longest symbol name accepted, in bytes.
pub const MAX_NAME_LEN: usize = 4096;

/// The longest source line text kept in a hit, in characters; longer lines are cut with "...".
pub const MAX_LINE_TEXT: usize = 200;

/// Nesting deeper than this is read without tracking (no hits inside), to bound memory.
const MAX_DEPTH: usize = 10_000;

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

/// What to look for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Call sites of a function (see the module documentation).
    Call,
    /// References to a variable (see the module documentation).
    Reference,
}

impl FromStr for Kind {
    type Err = XrefError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "call" => Ok(Kind::Call),
            "reference" => Ok(Kind::Reference),
            other => Err(XrefError::UnknownKind(other.to_string())),
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Call => "call",
            Kind::Reference => "reference",
        })
    }
}

/// Invalid arguments to a scan.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum XrefError {
    /// The symbol name is empty.
    #[error("symbol name is empty")]
    EmptyName,
    /// The symbol name is longer than [`MAX_NAME_LEN`].
    #[error("symbol name is too long ({0} bytes, at most {MAX_NAME_LEN})")]
    NameTooLong(usize),
    /// The kind is neither `call` nor `reference`.
    #[error("unknown cross-reference kind `{0}`: expected `call` or `reference`")]
    UnknownKind(String),
}

/// Why one file could not be scanned.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Reading the file failed.
    #[error("cannot read: {0}")]
    Io(#[from] std::io::Error),
    /// Opening the file failed (it does not exist, permission denied...).
    #[error("cannot open: {0}")]
    Open(String),
    /// The path is a directory, a FIFO, a device or another non-regular file: it is not opened
    /// for reading (a FIFO would block the scan until a writer appears, a device never ends).
    #[error("{kind}, not a regular file; not read")]
    NotRegular {
        /// What it is ("a FIFO (named pipe)", "a directory"...).
        kind: &'static str,
    },
    /// The file (decompressed, for gzip) is larger than the limit.
    #[error("larger than the limit of {limit} bytes")]
    TooLarge {
        /// The size limit in bytes.
        limit: u64,
    },
    /// The file starts like gzip data but does not decompress.
    #[error("invalid gzip data: {0}")]
    Gzip(std::io::Error),
}

/// One occurrence in one source text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceHit {
    /// 1-based line number.
    pub line: usize,
    /// 1-based column, in characters, of the symbol's first character.
    pub column: usize,
    /// The innermost enclosing definition's name, else the head of the top-level form.
    pub definition: Option<String>,
    /// The source line, trimmed, cut to [`MAX_LINE_TEXT`] characters.
    pub text: String,
}

/// One occurrence in one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// The file, as given to [`scan_files`].
    pub file: PathBuf,
    /// Where in the file, and in which definition.
    pub hit: SourceHit,
}

/// A file that could not be scanned.
#[derive(Debug)]
pub struct FileError {
    /// The file, as given to [`scan_files`].
    pub file: PathBuf,
    /// What went wrong.
    pub error: ReadError,
}

/// The result of [`scan_files`].
#[derive(Debug, Default)]
pub struct ScanReport {
    /// All hits, sorted by file, then line, then column.
    pub hits: Vec<Hit>,
    /// The files that could not be read, sorted by file.
    pub errors: Vec<FileError>,
    /// How many files were read successfully.
    pub files_scanned: usize,
    /// How many distinct files were to be scanned.
    pub files_total: usize,
    /// The scan was cancelled ([`ScanOptions::cancel`]) before every file was scanned: the
    /// hits and errors are those of the files done by then.
    pub interrupted: bool,
}

/// Options of [`scan_files`].
#[derive(Debug, Clone)]
pub struct ScanOptions {
    /// The largest file size accepted, in bytes (after decompression).
    pub max_file_size: u64,
    /// The number of worker threads (at least 1 is used).
    pub threads: usize,
    /// When set (by another thread), the scan stops before its next file and reports what it
    /// found so far, marked [`ScanReport::interrupted`].
    pub cancel: Option<Arc<AtomicBool>>,
    /// When set, the number of files done so far (scanned, skipped by the index or failed) is
    /// kept there, for another thread to show progress.
    pub progress: Option<Arc<AtomicUsize>>,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            cancel: None,
            progress: None,
        }
    }
}

/// Check a symbol name given to a scan.
pub fn validate_name(name: &str) -> Result<(), XrefError> {
    if name.is_empty() {
        Err(XrefError::EmptyName)
    } else if name.len() > MAX_NAME_LEN {
        Err(XrefError::NameTooLong(name.len()))
    } else {
        Ok(())
    }
}

/// Bytes that end a symbol token (besides any byte `<= b' '`).
fn is_delimiter(b: u8) -> bool {
    b <= b' ' || matches!(b, b'(' | b')' | b'[' | b']' | b'"' | b'\'' | b';' | b'`' | b',')
}

/// The part of NAME that must appear literally in a source that contains the symbol: NAME
/// itself, or, when NAME has characters that the source must escape, the longest run without
/// them. `None` when no such run exists (every file must then be parsed).
fn needle(name: &[u8]) -> Option<&[u8]> {
    if !name.iter().any(|&b| is_delimiter(b) || b == b'\\') {
        return Some(name);
    }
    name.split(|&b| is_delimiter(b) || b == b'\\')
        .max_by_key(|run| run.len())
        .filter(|run| !run.is_empty())
}

/// What the head of a list says about the list's elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Head {
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
    fn classify(head: &[u8]) -> Head {
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

    fn is_definition(self) -> bool {
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

/// What a list is, which decides what its elements mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ctx {
    /// A form to evaluate: element 0 is in function position.
    Code,
    /// Data: nothing inside counts.
    Data,
    /// Every element is an expression (a `cond` clause, a `let` binding `(VAR EXPR)`).
    Exprs,
    /// A `let` binding list: symbols are bound variables, lists are `(VAR EXPR)`.
    Bindings,
    /// A clause `(KEY BODY...)` whose element 0 is data.
    Clause,
    /// A `cl-flet` binding list, of `(NAME ARGS BODY...)` entries.
    FletBindings,
    /// A list of clauses (`defclass` slots): symbols are data, lists are clauses.
    Clauses,
    /// One `cl-flet` entry: element 0 a name, element 1 an argument list.
    FletEntry,
    /// An argument list (`defun`, `lambda`, `cl-defun`...): symbols are parameters; after
    /// `&optional`, `&key` or `&aux` a list is a `(VAR DEFAULT SVAR)` entry, before them a
    /// destructuring argument list, after `&context` an `(EXPR SPECIALIZER)` entry.
    ArgList,
    /// `(VAR DEFAULT SVAR)` after `&optional`/`&key`/`&aux`: DEFAULT is an expression.
    ArgDefault,
    /// `(EXPR SPECIALIZER)` after `cl-defmethod`'s `&context`: EXPR is an expression.
    ArgContext,
    /// A `(menu-item NAME BINDING PROPS...)` list in data (a keymap's menu entry): BINDING is
    /// a command, the values of `:enable`, `:visible`, `:included` and `:selected` are
    /// expressions the menu evaluates, the value of `:filter` a function.
    MenuItem,
    /// A pcase pattern `(HEAD ARGS...)`: what the arguments are depends on HEAD
    /// ([`PatternHead`]); bare symbols are bound variables.
    Pattern,
    /// A backquoted pcase pattern: its structure is data, a `,PAT` in it a pattern.
    QPattern,
    /// The FUN of `(pred FUN)` or `(app FUN PAT)` written as a list: `(not FUN)`, else a code
    /// form `(F ARGS...)` (a lambda, or F called with ARGS and the value), which becomes
    /// [`Ctx::Code`] when its head is read.
    PatternFun,
    /// A `(KEY PAT DEFAULT)` field of a `map`, `cl-struct` or `eieio` pattern: PAT is a
    /// pattern, DEFAULT an expression.
    PatternField,
    /// `(PATTERN BODY...)`: a `pcase` clause, a `pcase-let` binding `(PATTERN EXPR)` or the
    /// `(PATTERN LIST)` of `pcase-dolist`.
    PatternClause,
    /// The binding list of `pcase-let`: its lists are [`Ctx::PatternClause`]s.
    PatternBindings,
    /// The argument list of `pcase-lambda`: its elements are patterns.
    PatternArgs,
    /// One `declare` spec `(NAME ARGS...)`: data, except the function of `compiler-macro`,
    /// `gv-setter`, `gv-expander` and `completion` (a symbol or a lambda).
    DeclareSpec,
    /// `(NAME OPTIONS...)` of a `cl-defstruct`: the options are [`Ctx::StructOption`]s.
    StructName,
    /// One `cl-defstruct` option: data, except the argument list of `(:constructor NAME
    /// ARGLIST)` and the slot descriptions of `(:include PARENT SLOTS...)`.
    StructOption,
    /// A backquoted template that builds data (a custom type after `:type`): its structure is
    /// data, its unquoted parts `,x`/`,@x` are expressions.
    BqData,
}

/// What the arguments of a pcase pattern `(HEAD ARGS...)` are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PatternHead {
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
    fn classify(head: Option<&[u8]>) -> PatternHead {
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

/// Whether element P of PARENT, read with PREFIX, is a pcase pattern.
fn is_pattern_slot(parent: &Frame<'_>, p: u32, prefix: Option<Prefix>) -> bool {
    match parent.ctx {
        Ctx::PatternClause => p == 0,
        Ctx::PatternArgs => true,
        Ctx::PatternField => p == 1,
        Ctx::QPattern => prefix == Some(Prefix::Comma),
        Ctx::Pattern => match PatternHead::classify(parent.first) {
            PatternHead::App => p == 2,
            PatternHead::Let => p == 1,
            PatternHead::Patterns => p >= 1,
            _ => false,
        },
        Ctx::Code => parent.class == Head::PcaseSetq && p % 2 == 1,
        _ => false,
    }
}

/// Whether a `declare` spec named HEAD takes a function (a symbol or a lambda) as ARG 1.
fn declares_function(head: Option<&[u8]>) -> bool {
    matches!(
        head,
        Some(b"compiler-macro" | b"gv-setter" | b"gv-expander" | b"completion")
    )
}

/// Where an [`Ctx::ArgList`] is, which decides what a list in it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ArgMode {
    /// Required parameters (or after `&rest`/`&body`): a list is a nested argument list.
    Required,
    /// After `&optional`, `&key` or `&aux`: a list is `(VAR DEFAULT SVAR)`.
    Defaults,
    /// After `&context`: a list is `(EXPR SPECIALIZER)`.
    Context,
}

/// What a symbol at some place means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    None,
    Call,
    Reference,
    DefName,
}

/// A reader prefix waiting for its datum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prefix {
    /// `'`, or a `#` syntax whose datum is data.
    Quote,
    /// `` ` ``.
    Backquote,
    /// `#'`.
    Function,
    /// `,` or `,@`.
    Comma,
    /// `#:` or a `#x`-like number: the following symbol is not the interned symbol.
    Uninterned,
}

struct Frame<'a> {
    ctx: Ctx,
    head: Option<&'a [u8]>,
    class: Head,
    count: u32,
    def_name: Option<&'a [u8]>,
    arglist_seen: bool,
    /// In an argument list, which lambda-list keyword came last.
    arg_mode: ArgMode,
    /// This list is `(NAME OPTIONS...)` of the enclosing `cl-defstruct`: NAME names it.
    names_parent: bool,
    /// In a [`Ctx::MenuItem`], the position of the next property value that is an
    /// expression (0: none).
    expr_at: u32,
    /// In a [`Ctx::MenuItem`], the position of the next property value that is a function.
    function_at: u32,
    /// In a [`Ctx::Code`] or [`Ctx::Clause`], the position of the value after `:type` (0:
    /// none): a type, data in a slot description, and data with expressions in its unquoted
    /// parts when backquoted.
    type_at: u32,
    /// The head symbol of a [`Ctx::Pattern`], [`Ctx::PatternFun`], [`Ctx::DeclareSpec`] or
    /// [`Ctx::StructOption`].
    first: Option<&'a [u8]>,
}

impl<'a> Frame<'a> {
    fn new(ctx: Ctx) -> Self {
        Frame {
            ctx,
            head: None,
            class: Head::Other,
            count: 0,
            def_name: None,
            arglist_seen: false,
            arg_mode: ArgMode::Required,
            expr_at: 0,
            function_at: 0,
            type_at: 0,
            first: None,
            names_parent: false,
        }
    }
}

/// Which element of the frame on top a datum is, and with which prefix.
#[derive(Clone, Copy)]
struct Slot {
    pos: u32,
    prefix: Option<Prefix>,
}

struct RawHit<'a> {
    offset: usize,
    definition: Option<&'a [u8]>,
}

struct Scanner<'a> {
    src: &'a [u8],
    name: &'a [u8],
    kind: Kind,
    stack: Vec<Frame<'a>>,
    /// Lists opened beyond [`MAX_DEPTH`] and not yet closed.
    overflow: usize,
    pending: Option<Slot>,
    hits: Vec<RawHit<'a>>,
    scratch: Vec<u8>,
    /// When building a [`SymbolIndex`], the hashes of every symbol token read.
    collect: Option<Vec<u64>>,
    /// Set by another thread to stop reading (checked every [`CANCEL_CHECK_BYTES`]).
    cancel: Option<&'a AtomicBool>,
    /// The read stopped because of [`Scanner::cancel`].
    cancelled: bool,
}

/// How many bytes a scan reads between two checks of its cancel flag.
const CANCEL_CHECK_BYTES: usize = 256 * 1024;

/// Remove the reader's `\` escapes from a symbol token.
fn unescape_into(token: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut escaped = false;
    for &b in token {
        if !escaped && b == b'\\' {
            escaped = true;
        } else {
            out.push(b);
            escaped = false;
        }
    }
}

impl<'a> Scanner<'a> {
    fn new(src: &'a [u8], name: &'a [u8], kind: Kind) -> Self {
        let mut stack = Vec::with_capacity(64);
        // The root: top-level forms are code, a top-level bare symbol is an expression.
        stack.push(Frame::new(Ctx::Exprs));
        Scanner {
            src,
            name,
            kind,
            stack,
            overflow: 0,
            pending: None,
            hits: Vec::new(),
            scratch: Vec::new(),
            collect: None,
            cancel: None,
            cancelled: false,
        }
    }

    fn top(&mut self) -> &mut Frame<'a> {
        let last = self.stack.len() - 1; // the root is never popped
        &mut self.stack[last]
    }

    /// Start a new element of the current list (or attach it to a pending prefix).
    fn take_slot(&mut self) -> Slot {
        if let Some(slot) = self.pending.take() {
            return slot;
        }
        let top = self.top();
        let pos = top.count;
        top.count = top.count.saturating_add(1);
        Slot { pos, prefix: None }
    }

    fn add_prefix(&mut self, prefix: Prefix) {
        let slot = match self.pending.take() {
            Some(slot) => {
                let combined = match slot.prefix {
                    Some(Prefix::Quote) => Prefix::Quote,
                    Some(Prefix::Uninterned) => Prefix::Uninterned,
                    _ => prefix,
                };
                Slot {
                    pos: slot.pos,
                    prefix: Some(combined),
                }
            }
            None => {
                let mut slot = self.take_slot();
                slot.prefix = Some(prefix);
                slot
            }
        };
        self.pending = Some(slot);
    }

    /// The context of a list at SLOT of the current frame.
    fn list_ctx(&mut self, slot: Slot, vector: bool) -> Ctx {
        if self.overflow > 0 {
            return Ctx::Data;
        }
        if let Some(ctx) = self.pattern_or_spec_ctx(slot, vector) {
            return ctx;
        }
        let parent = self.top();
        let in_data = parent.ctx == Ctx::Data;
        match slot.prefix {
            Some(Prefix::Quote) | Some(Prefix::Uninterned) => return Ctx::Data,
            Some(Prefix::Backquote) | Some(Prefix::Function) | Some(Prefix::Comma) => {
                return if in_data || vector { Ctx::Data } else { Ctx::Code };
            }
            None => {}
        }
        if vector {
            return Ctx::Data;
        }
        let p = slot.pos;
        match parent.ctx {
            // Decided by `pattern_or_spec_ctx`.
            Ctx::Pattern
            | Ctx::QPattern
            | Ctx::PatternFun
            | Ctx::PatternField
            | Ctx::PatternClause
            | Ctx::PatternBindings
            | Ctx::PatternArgs
            | Ctx::DeclareSpec
            | Ctx::StructName
            | Ctx::StructOption
            | Ctx::BqData => Ctx::Data,
            Ctx::Data => Ctx::Data,
            Ctx::Exprs => Ctx::Code,
            Ctx::Bindings => Ctx::Exprs,
            Ctx::Clause => {
                if p == 0 {
                    Ctx::Data
                } else {
                    Ctx::Code
                }
            }
            Ctx::FletBindings => Ctx::FletEntry,
            Ctx::Clauses => Ctx::Clause,
            Ctx::FletEntry => match p {
                0 => Ctx::Data,
                1 => Ctx::ArgList,
                _ => Ctx::Code,
            },
            Ctx::ArgList => match parent.arg_mode {
                ArgMode::Required => Ctx::ArgList,
                ArgMode::Defaults => Ctx::ArgDefault,
                ArgMode::Context => Ctx::ArgContext,
            },
            Ctx::ArgDefault => match p {
                1 => Ctx::Code,
                _ => Ctx::Data,
            },
            Ctx::ArgContext => match p {
                0 => Ctx::Code,
                _ => Ctx::Data,
            },
            Ctx::MenuItem => {
                if p > 0 && p == parent.expr_at {
                    Ctx::Code
                } else {
                    Ctx::Data
                }
            }
            Ctx::Code => {
                if p == 0 {
                    return Ctx::Code;
                }
                match parent.class {
                    Head::Quote | Head::DeclareFunction => Ctx::Data,
                    Head::Declare => Ctx::DeclareSpec,
                    Head::Let if p == 1 => Ctx::Bindings,
                    Head::DoList if p == 1 => Ctx::Exprs,
                    Head::CondCase if p >= 3 => Ctx::Clause,
                    Head::Cond => Ctx::Exprs,
                    Head::Case if p >= 2 => Ctx::Clause,
                    Head::Pcase if p >= 2 => Ctx::PatternClause,
                    Head::PcaseLet if p == 1 => Ctx::PatternBindings,
                    Head::PcaseDolist if p == 1 => Ctx::PatternClause,
                    Head::PcaseLambda if p == 1 => Ctx::PatternArgs,
                    Head::Lambda if p == 1 => Ctx::ArgList,
                    Head::Flet if p == 1 => Ctx::FletBindings,
                    Head::Struct if p == 1 => Ctx::StructName,
                    Head::Struct => Ctx::Clause,
                    Head::Class if p <= 2 => Ctx::Data,
                    Head::Class if p == 3 => Ctx::Clauses,
                    Head::Defun if p == 1 => Ctx::Data,
                    Head::Defun if p == 2 => Ctx::ArgList,
                    Head::DefMethod if p == 1 => Ctx::Data,
                    Head::DefMethod if !parent.arglist_seen => {
                        parent.arglist_seen = true;
                        Ctx::ArgList
                    }
                    _ => Ctx::Code,
                }
            }
        }
    }

    /// The context of a list at SLOT of the current frame when that frame is a pcase pattern,
    /// a `declare` spec, a `cl-defstruct` option, a backquoted data template, or when the list
    /// is a pattern or the value after `:type`; `None` for the other cases.
    fn pattern_or_spec_ctx(&self, slot: Slot, vector: bool) -> Option<Ctx> {
        let parent = &self.stack[self.stack.len() - 1];
        let p = slot.pos;
        if is_pattern_slot(parent, p, slot.prefix) {
            return Some(match slot.prefix {
                None if !vector => Ctx::Pattern,
                // `,PAT` of a backquoted pattern; elsewhere (a pcase form built by a
                // backquote template) `,EXPR` is evaluated.
                Some(Prefix::Comma) if !vector && parent.ctx == Ctx::QPattern => Ctx::Pattern,
                Some(Prefix::Comma) if !vector => Ctx::Code,
                Some(Prefix::Backquote) => Ctx::QPattern,
                Some(Prefix::Function) if !vector => Ctx::Code,
                _ => Ctx::Data,
            });
        }
        // A list at a place that is evaluated.
        let expr = match slot.prefix {
            Some(Prefix::Quote) | Some(Prefix::Uninterned) => Ctx::Data,
            _ if vector => Ctx::Data,
            _ => Ctx::Code,
        };
        let plain = slot.prefix.is_none() && !vector;
        Some(match parent.ctx {
            Ctx::Pattern => match PatternHead::classify(parent.first) {
                PatternHead::Guard if p == 1 => expr,
                PatternHead::Let if p == 2 => expr,
                PatternHead::Pred | PatternHead::App if p == 1 => match slot.prefix {
                    None if !vector => Ctx::PatternFun,
                    Some(Prefix::Function) if !vector => Ctx::Code,
                    _ => Ctx::Data,
                },
                PatternHead::Fields if p >= 1 && plain => Ctx::PatternField,
                _ => Ctx::Data,
            },
            Ctx::QPattern if slot.prefix.is_none() => Ctx::QPattern,
            // Only `(not FUN)` stays a `PatternFun` after its head.
            Ctx::PatternFun if p == 1 && plain => Ctx::PatternFun,
            Ctx::PatternField if p == 2 => expr,
            Ctx::PatternClause if p >= 1 => expr,
            Ctx::PatternBindings if plain => Ctx::PatternClause,
            Ctx::DeclareSpec if p == 1 && declares_function(parent.first) => expr,
            Ctx::StructName if p >= 1 && plain => Ctx::StructOption,
            Ctx::StructOption => match parent.first {
                Some(b":constructor") if p == 2 && plain => Ctx::ArgList,
                Some(b":include") if p >= 2 && plain => Ctx::Clause,
                _ => Ctx::Data,
            },
            Ctx::BqData => match slot.prefix {
                None => Ctx::BqData,
                Some(Prefix::Comma) if !vector => Ctx::Code,
                _ => Ctx::Data,
            },
            Ctx::QPattern
            | Ctx::PatternFun
            | Ctx::PatternField
            | Ctx::PatternClause
            | Ctx::PatternBindings
            | Ctx::PatternArgs
            | Ctx::DeclareSpec
            | Ctx::StructName => Ctx::Data,
            Ctx::Code | Ctx::Clause if p > 0 && p == parent.type_at => match slot.prefix {
                Some(Prefix::Backquote) => Ctx::BqData,
                None if parent.ctx == Ctx::Clause => Ctx::Data,
                _ => return None,
            },
            _ => return None,
        })
    }

    /// The meaning of a symbol at SLOT of the current frame (only asked for matching symbols and
    /// for definition names).
    fn symbol_role(&self, slot: Slot) -> Role {
        if self.overflow > 0 {
            return Role::None;
        }
        let parent = &self.stack[self.stack.len() - 1];
        if parent.ctx == Ctx::Data {
            return Role::None;
        }
        let p = slot.pos;
        match slot.prefix {
            Some(Prefix::Uninterned) => Role::None,
            Some(Prefix::Function) => Role::Call,
            // `,NAME` in a backquoted pattern binds NAME.
            Some(Prefix::Comma) if parent.ctx == Ctx::QPattern => Role::None,
            Some(Prefix::Comma) => Role::Reference,
            Some(Prefix::Quote) | Some(Prefix::Backquote) => {
                if parent.ctx != Ctx::Code || p == 0 {
                    return Role::None;
                }
                if parent.class.is_definition() && p == 1 {
                    return Role::DefName;
                }
                let head = match parent.head {
                    Some(h) => h,
                    None => return Role::None,
                };
                let listed = |table: &[(&str, u32)]| {
                    table
                        .iter()
                        .any(|&(f, at)| f.as_bytes() == head && (at == 0 || at == p))
                };
                match self.kind {
                    Kind::Call if listed(FUNCTION_ARGS) => Role::Call,
                    Kind::Reference if listed(VARIABLE_ARGS) => Role::Reference,
                    _ => Role::None,
                }
            }
            None => match parent.ctx {
                Ctx::Data => Role::None,
                Ctx::Exprs | Ctx::Bindings => Role::Reference,
                Ctx::Clause => {
                    if p == 0 || p == parent.type_at {
                        Role::None
                    } else {
                        Role::Reference
                    }
                }
                Ctx::FletBindings | Ctx::Clauses | Ctx::ArgList => Role::None,
                Ctx::Pattern => match PatternHead::classify(parent.first) {
                    PatternHead::Pred | PatternHead::App if p == 1 => Role::Call,
                    PatternHead::Guard if p == 1 => Role::Reference,
                    PatternHead::Let if p == 2 => Role::Reference,
                    _ => Role::None,
                },
                // The FUN of `(not FUN)`.
                Ctx::PatternFun if p == 1 => Role::Call,
                Ctx::PatternField if p == 2 => Role::Reference,
                Ctx::PatternClause if p >= 1 => Role::Reference,
                Ctx::DeclareSpec if p == 1 && declares_function(parent.first) => Role::Call,
                Ctx::QPattern
                | Ctx::PatternFun
                | Ctx::PatternField
                | Ctx::PatternClause
                | Ctx::PatternBindings
                | Ctx::PatternArgs
                | Ctx::DeclareSpec
                | Ctx::StructName
                | Ctx::StructOption
                | Ctx::BqData => Role::None,
                Ctx::ArgDefault => {
                    if p == 1 {
                        Role::Reference
                    } else {
                        Role::None
                    }
                }
                Ctx::ArgContext => {
                    if p == 0 {
                        Role::Reference
                    } else {
                        Role::None
                    }
                }
                Ctx::MenuItem => {
                    if p > 0 && p == parent.expr_at {
                        Role::Reference
                    } else if p == 2 || (p > 0 && p == parent.function_at) {
                        Role::Call
                    } else {
                        Role::None
                    }
                }
                Ctx::FletEntry => {
                    if p <= 1 {
                        Role::None
                    } else {
                        Role::Reference
                    }
                }
                Ctx::Code => {
                    if p == 0 {
                        return Role::Call;
                    }
                    match parent.class {
                        Head::Quote | Head::Declare => Role::None,
                        // `(function NAME)`; `(function :value NAME)` in a custom type is data.
                        Head::Function if p == 1 => Role::Call,
                        Head::Function => Role::None,
                        Head::DeclareFunction if p == 1 => Role::DefName,
                        Head::DeclareFunction => Role::None,
                        Head::CondCase if p == 1 => Role::None,
                        Head::Lambda if p == 1 => Role::None,
                        Head::Struct | Head::Class if p == 1 => Role::DefName,
                        Head::Struct => Role::None,
                        Head::Class if p <= 3 => Role::None,
                        Head::Flet if p == 1 => Role::None,
                        Head::Defun | Head::Def if p == 1 => Role::DefName,
                        Head::Defun if p == 2 => Role::None,
                        Head::DefMethod if p == 1 => Role::DefName,
                        Head::DefMethod if !parent.arglist_seen => Role::None,
                        _ => Role::Reference,
                    }
                }
            },
        }
    }

    fn symbol(&mut self, start: usize, end: usize, escaped: bool) {
        let token = &self.src[start..end];
        if let Some(collected) = self.collect.as_mut() {
            if escaped {
                unescape_into(token, &mut self.scratch);
                collected.push(symbol_hash(&self.scratch));
            } else {
                collected.push(symbol_hash(token));
            }
        }
        let slot = self.take_slot();
        if self.overflow > 0 {
            return;
        }
        if slot.prefix.is_none() && self.top().ctx == Ctx::Data && slot.pos == 0 && token == b"menu-item" {
            self.top().ctx = Ctx::MenuItem;
            return;
        }
        if slot.pos == 0 && slot.prefix.is_none() {
            let top = self.top();
            match top.ctx {
                // `(F ARGS...)` as a pattern's function is a call of F.
                Ctx::PatternFun if token != b"not" => top.ctx = Ctx::Code,
                Ctx::Pattern | Ctx::PatternFun | Ctx::DeclareSpec | Ctx::StructOption => top.first = Some(token),
                _ => {}
            }
        }
        if slot.prefix.is_none() && token.first() == Some(&b':') {
            let top = self.top();
            match (top.ctx, token) {
                (Ctx::MenuItem, b":enable" | b":visible" | b":included" | b":selected") => top.expr_at = slot.pos + 1,
                (Ctx::MenuItem, b":filter") => top.function_at = slot.pos + 1,
                (Ctx::Code | Ctx::Clause, b":type") if slot.pos > 0 => top.type_at = slot.pos + 1,
                _ => {}
            }
        }
        if token.first() == Some(&b'&') && slot.prefix.is_none() {
            let top = self.top();
            if top.ctx == Ctx::ArgList {
                top.arg_mode = match token {
                    b"&optional" | b"&key" | b"&aux" => ArgMode::Defaults,
                    b"&context" => ArgMode::Context,
                    b"&rest" | b"&body" | b"&whole" | b"&environment" => ArgMode::Required,
                    _ => top.arg_mode,
                };
            }
        }
        let depth = self.stack.len();
        if slot.pos == 0 && self.stack[depth - 1].names_parent && depth >= 3 {
            let parent = &mut self.stack[depth - 2];
            if parent.def_name.is_none() {
                parent.def_name = Some(token);
            }
            return;
        }
        {
            let top = self.top();
            if top.ctx == Ctx::Code && slot.pos == 0 && slot.prefix.is_none() {
                top.head = Some(token);
                top.class = Head::classify(token);
                return self.check_match(token, start, escaped, slot);
            }
        }
        let top = &self.stack[self.stack.len() - 1];
        if slot.pos == 1
            && top.class.is_definition()
            && top.ctx == Ctx::Code
            && top.def_name.is_none()
            && self.symbol_role(slot) == Role::DefName
        {
            self.top().def_name = Some(token);
            return;
        }
        self.check_match(token, start, escaped, slot);
    }

    fn check_match(&mut self, token: &'a [u8], start: usize, escaped: bool, slot: Slot) {
        if self.name.is_empty() {
            return; // only indexing
        }
        let matches = if escaped {
            unescape_into(token, &mut self.scratch);
            self.scratch == self.name
        } else {
            token == self.name
        };
        if !matches {
            return;
        }
        let wanted = match self.kind {
            Kind::Call => Role::Call,
            Kind::Reference => Role::Reference,
        };
        if self.symbol_role(slot) != wanted {
            return;
        }
        // Column of the symbol proper, after `#'` or `'`: `start` already is that.
        let definition = self.definition();
        self.hits.push(RawHit {
            offset: start,
            definition,
        });
    }

    fn definition(&self) -> Option<&'a [u8]> {
        self.stack
            .iter()
            .skip(1)
            .rev()
            .find_map(|f| f.def_name)
            .or_else(|| self.stack.get(1).and_then(|f| f.head))
    }

    fn atom(&mut self) {
        self.take_slot();
    }

    fn open(&mut self, vector: bool) {
        let slot = self.take_slot();
        if self.overflow > 0 || self.stack.len() >= MAX_DEPTH {
            self.overflow += 1;
            return;
        }
        let ctx = self.list_ctx(slot, vector);
        let parent = &self.stack[self.stack.len() - 1];
        let names_parent =
            parent.class == Head::Struct && parent.ctx == Ctx::Code && slot.pos == 1 && slot.prefix.is_none();
        let mut frame = Frame::new(ctx);
        frame.names_parent = names_parent;
        self.stack.push(frame);
    }

    fn close(&mut self) {
        self.pending = None;
        if self.overflow > 0 {
            self.overflow -= 1;
        } else if self.stack.len() > 1 {
            self.stack.pop();
        }
    }

    fn run(&mut self) {
        let src = self.src;
        let len = src.len();
        let mut i = 0;
        let mut next_check = CANCEL_CHECK_BYTES;
        while i < len {
            if i >= next_check {
                if self.cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                    self.cancelled = true;
                    return;
                }
                next_check = i.saturating_add(CANCEL_CHECK_BYTES);
            }
            let b = src[i];
            match b {
                _ if b <= b' ' => {
                    i += 1;
                    while src.get(i).is_some_and(|&c| c <= b' ') {
                        i += 1;
                    }
                }
                b';' => {
                    i = match memchr::memchr(b'\n', &src[i..]) {
                        Some(n) => i + n + 1,
                        None => len,
                    };
                }
                b'"' => {
                    self.atom();
                    i = skip_string(src, i + 1);
                }
                b'(' => {
                    self.open(false);
                    i += 1;
                }
                b'[' => {
                    self.open(true);
                    i += 1;
                }
                b')' | b']' => {
                    self.close();
                    i += 1;
                }
                b'\'' => {
                    self.add_prefix(Prefix::Quote);
                    i += 1;
                }
                b'`' => {
                    self.add_prefix(Prefix::Backquote);
                    i += 1;
                }
                b',' => {
                    self.add_prefix(Prefix::Comma);
                    i += 1;
                    if src.get(i) == Some(&b'@') {
                        i += 1;
                    }
                }
                b'?' => {
                    self.atom();
                    i = skip_char_literal(src, i + 1);
                }
                b'#' => i = self.hash(i),
                _ => {
                    let (end, escaped) = symbol_end(src, i);
                    self.symbol(i, end, escaped);
                    i = end;
                }
            }
        }
    }

    /// Read a `#` syntax at I; return where reading continues.
    fn hash(&mut self, i: usize) -> usize {
        let src = self.src;
        match src.get(i + 1).copied() {
            Some(b'\'') => {
                self.add_prefix(Prefix::Function);
                i + 2
            }
            Some(b'(') | Some(b'[') => {
                self.add_prefix(Prefix::Quote);
                i + 1
            }
            Some(b's') if src.get(i + 2) == Some(&b'(') => {
                self.add_prefix(Prefix::Quote);
                i + 2
            }
            Some(b'^') => {
                let mut j = i + 1;
                while src.get(j) == Some(&b'^') {
                    j += 1;
                }
                self.add_prefix(Prefix::Quote);
                j
            }
            Some(b'&') => {
                let mut j = i + 2;
                while src.get(j).is_some_and(|c| c.is_ascii_digit()) {
                    j += 1;
                }
                self.add_prefix(Prefix::Quote);
                j
            }
            Some(b'@') => {
                // `#@NN`: skip NN bytes after the digits (byte-compiled docstrings).
                let mut j = i + 2;
                let mut n: usize = 0;
                while let Some(c) = src.get(j).filter(|c| c.is_ascii_digit()) {
                    n = n.saturating_mul(10).saturating_add(usize::from(c - b'0'));
                    j += 1;
                }
                if n == 0 {
                    src.len()
                } else {
                    j.saturating_add(n).min(src.len())
                }
            }
            Some(b'!') if i == 0 => match memchr::memchr(b'\n', src) {
                Some(n) => n + 1,
                None => src.len(),
            },
            Some(b'#') | Some(b'$') => {
                self.atom();
                i + 2
            }
            Some(c) if c.is_ascii_digit() => {
                let mut j = i + 1;
                while src.get(j).is_some_and(|c| c.is_ascii_digit()) {
                    j += 1;
                }
                match src.get(j).copied() {
                    Some(b'=') => j + 1, // `#1=DATUM`: the datum follows in this slot
                    Some(b'#') => {
                        self.atom();
                        j + 1
                    }
                    _ => {
                        // `#24r1k`: a number in another radix.
                        self.add_prefix(Prefix::Uninterned);
                        j
                    }
                }
            }
            Some(_) => {
                // `#:sym`, `#_sym`, `#x1F`, `#b101`, `#o17`...
                self.add_prefix(Prefix::Uninterned);
                if matches!(src.get(i + 1), Some(b':') | Some(b'_')) {
                    i + 2
                } else {
                    i + 1
                }
            }
            None => i + 1,
        }
    }
}

/// Skip a string body starting after its opening quote; return the index after the closing one.
fn skip_string(src: &[u8], mut i: usize) -> usize {
    loop {
        match memchr::memchr2(b'"', b'\\', src.get(i..).unwrap_or_default()) {
            None => return src.len(),
            Some(n) => {
                let at = i + n;
                if src[at] == b'"' {
                    return at + 1;
                }
                i = at + 2; // a backslash escapes the next byte
                if i >= src.len() {
                    return src.len();
                }
            }
        }
    }
}

/// The length of the UTF-8 character whose first byte is B (1 for anything invalid).
fn utf8_len(b: u8) -> usize {
    match b {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => 1,
    }
}

/// Skip a character literal starting after its `?`; return the index after it.
fn skip_char_literal(src: &[u8], mut i: usize) -> usize {
    loop {
        let Some(&b) = src.get(i) else {
            return src.len();
        };
        if b != b'\\' {
            return (i + utf8_len(b)).min(src.len());
        }
        // `\X`: X is escaped; `\C-`, `\M-`, `\S-`, `\H-`, `\s-`, `\A-` and `\^` are modifiers
        // followed by another character.
        let Some(&x) = src.get(i + 1) else {
            return src.len();
        };
        if matches!(x, b'C' | b'M' | b'S' | b'H' | b's' | b'A') && src.get(i + 2) == Some(&b'-') {
            i += 3;
        } else if x == b'^' {
            i += 2;
        } else {
            return (i + 1 + utf8_len(x)).min(src.len());
        }
    }
}

/// The end of the symbol token starting at START, and whether it contains escapes.
fn symbol_end(src: &[u8], start: usize) -> (usize, bool) {
    let mut i = start;
    let mut escaped = false;
    loop {
        // The common case: a run of plain constituents, one table lookup per byte.
        while src.get(i).is_some_and(|&b| CONSTITUENT[usize::from(b)]) {
            i += 1;
        }
        match src.get(i) {
            Some(b'\\') => {
                escaped = true;
                i += 2;
            }
            _ => return (i.min(src.len()), escaped),
        }
    }
}

/// Bytes that continue a symbol without being an escape: neither delimiters nor `\`.
static CONSTITUENT: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let byte = b as u8;
        table[b] = byte > b' '
            && !matches!(
                byte,
                b'(' | b')' | b'[' | b']' | b'"' | b'\'' | b';' | b'`' | b',' | b'\\'
            );
        b += 1;
    }
    table
};

/// Whether the source text may contain the symbol NAME (a fast substring check).
pub fn may_contain(src: &[u8], name: &str) -> bool {
    match needle(name.as_bytes()) {
        Some(n) => memmem::find(src, n).is_some(),
        None => true,
    }
}

/// Find the occurrences of the symbol NAME of KIND in the Emacs Lisp source SRC (any bytes;
/// invalid UTF-8 is decoded lossily in the reported lines). Returns them in source order.
pub fn scan_source(src: &[u8], name: &str, kind: Kind) -> Vec<SourceHit> {
    scan_source_indexed(src, name, kind, false, None).map_or_else(Vec::new, |(hits, _)| hits)
}

/// [`scan_source`], and with INDEX the [`SymbolIndex`] of SRC when SRC had to be read anyway
/// (NAME occurs in it). `None` when CANCEL was set before the read was done.
fn scan_source_indexed(
    src: &[u8],
    name: &str,
    kind: Kind,
    index: bool,
    cancel: Option<&AtomicBool>,
) -> Option<(Vec<SourceHit>, Option<SymbolIndex>)> {
    if name.is_empty() || !may_contain(src, name) {
        return Some((Vec::new(), None));
    }
    let mut scanner = Scanner::new(src, name.as_bytes(), kind);
    scanner.cancel = cancel;
    if index {
        scanner.collect = Some(Vec::with_capacity(src.len() / 8));
    }
    scanner.run();
    if scanner.cancelled {
        return None;
    }
    let symbol_index = scanner.collect.take().map(SymbolIndex::new);
    let mut hits = Vec::with_capacity(scanner.hits.len());
    let mut line = 1;
    let mut counted_to = 0;
    for raw in &scanner.hits {
        let offset = raw.offset.min(src.len());
        line += src[counted_to..offset].iter().filter(|&&b| b == b'\n').count();
        counted_to = offset;
        let line_start = memchr::memrchr(b'\n', &src[..offset]).map_or(0, |n| n + 1);
        let line_end = memchr::memchr(b'\n', &src[offset..]).map_or(src.len(), |n| offset + n);
        let column = 1 + src[line_start..offset].iter().filter(|&&b| (b & 0xC0) != 0x80).count();
        hits.push(SourceHit {
            line,
            column,
            definition: raw.definition.map(symbol_text),
            text: line_text(&src[line_start..line_end]),
        });
    }
    Some((hits, symbol_index))
}

/// The [`SymbolIndex`] of the source SRC (a full read of it).
pub fn index_source(src: &[u8]) -> SymbolIndex {
    let mut scanner = Scanner::new(src, b"", Kind::Call);
    scanner.collect = Some(Vec::with_capacity(src.len() / 8));
    scanner.run();
    SymbolIndex::new(scanner.collect.take().unwrap_or_default())
}

/// Index the FILES not yet indexed (or changed) in CACHE, one at a time, holding the lock only
/// to look up and to insert, so that scans can run meanwhile. Unreadable files are skipped (a
/// scan reports them). Returns the number of files indexed.
pub fn index_files(cache: &Mutex<ScanCache>, files: &[PathBuf], max_file_size: u64) -> usize {
    let lock = || cache.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let (mut buf, mut compressed) = (Vec::new(), Vec::new());
    let mut indexed = 0;
    for file in files {
        let Ok((mut handle, stamp)) = open_source(file, max_file_size) else {
            continue;
        };
        let fresh = lock().files.get(file).is_some_and(|(known, _)| *known == stamp);
        if fresh || read_open_source(&mut handle, max_file_size, &mut buf, &mut compressed).is_err() {
            continue;
        }
        let index = index_source(&buf);
        lock().insert(file.clone(), stamp, index);
        indexed += 1;
    }
    indexed
}

/// A 64-bit hash of a symbol name (FxHash-style; not for adversarial input, which only costs
/// a needless parse).
fn symbol_hash(name: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h: u64 = name.len() as u64;
    let mut chunks = name.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(word)).wrapping_mul(K);
    }
    for &b in chunks.remainder() {
        h = (h.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
    }
    // Final mix so that the low and high halves both depend on every byte.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
}

/// A Bloom filter of the symbols one source file contains (about 1.5 bytes per distinct
/// symbol, 1% false positives): a later scan skips the file without reading it when the
/// filter says the symbol is absent.
#[derive(Debug, Clone)]
pub struct SymbolIndex {
    bits: Vec<u64>,
}

impl SymbolIndex {
    const PROBES: u64 = 7;

    fn new(mut hashes: Vec<u64>) -> Self {
        hashes.sort_unstable();
        hashes.dedup();
        let wanted_bits = (hashes.len() * 10).max(64);
        let words = wanted_bits.next_power_of_two() / 64;
        let mut index = SymbolIndex { bits: vec![0; words] };
        for h in hashes {
            index.for_each_bit(h, |bits, word, bit| bits[word] |= bit);
        }
        index
    }

    fn for_each_bit(&mut self, hash: u64, mut f: impl FnMut(&mut [u64], usize, u64)) {
        let mask = (self.bits.len() as u64 * 64) - 1;
        let step = (hash >> 32) | 1;
        for i in 0..Self::PROBES {
            let n = hash.wrapping_add(i.wrapping_mul(step)) & mask;
            f(&mut self.bits, (n / 64) as usize, 1 << (n % 64));
        }
    }

    /// Whether the file may contain the symbol NAME (false: it certainly does not).
    pub fn may_contain(&self, name: &[u8]) -> bool {
        let hash = symbol_hash(name);
        let mask = (self.bits.len() as u64 * 64) - 1;
        let step = (hash >> 32) | 1;
        (0..Self::PROBES).all(|i| {
            let n = hash.wrapping_add(i.wrapping_mul(step)) & mask;
            self.bits
                .get((n / 64) as usize)
                .is_some_and(|w| w & (1 << (n % 64)) != 0)
        })
    }

    /// The memory the filter uses, in bytes.
    pub fn size_in_bytes(&self) -> usize {
        self.bits.len() * 8
    }
}

/// What identifies one version of a file: its size and modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
}

/// Indexes of the files already read, reused by later [`scan_files_cached`] calls while a
/// file's size and modification time are unchanged. Bounded to [`ScanCache::MAX_FILES`] files.
#[derive(Debug, Default)]
pub struct ScanCache {
    files: HashMap<PathBuf, (Stamp, SymbolIndex)>,
}

impl ScanCache {
    /// The most files indexed; beyond, the cache starts over.
    pub const MAX_FILES: usize = 50_000;

    /// An empty cache.
    pub fn new() -> Self {
        ScanCache::default()
    }

    fn insert(&mut self, file: PathBuf, stamp: Stamp, index: SymbolIndex) {
        if self.files.len() >= ScanCache::MAX_FILES && !self.files.contains_key(&file) {
            self.files.clear();
        }
        self.files.insert(file, (stamp, index));
    }

    /// Whether every one of FILES has an index (regardless of whether it is still fresh).
    pub fn covers(&self, files: &[PathBuf]) -> bool {
        files.iter().all(|f| self.files.contains_key(f))
    }

    /// Forget every index.
    pub fn clear(&mut self) {
        self.files.clear();
    }

    /// The number of files indexed.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether no file is indexed.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The memory used by the indexes, in bytes (approximately).
    pub fn size_in_bytes(&self) -> usize {
        self.files
            .iter()
            .map(|(path, (_, index))| index.size_in_bytes() + path.as_os_str().len() + 64)
            .sum()
    }
}

/// The name of a symbol token, without its escapes.
fn symbol_text(token: &[u8]) -> String {
    let mut out = Vec::with_capacity(token.len());
    unescape_into(token, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// A source line for display: lossily decoded, control characters (binary data, a `^L`)
/// replaced by U+FFFD, trimmed and cut to [`MAX_LINE_TEXT`] characters.
fn line_text(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    let text: String = text
        .trim()
        .chars()
        .map(|c| if c.is_control() && c != '\t' { '\u{fffd}' } else { c })
        .collect();
    let text = text.as_str();
    if text.chars().count() <= MAX_LINE_TEXT {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(MAX_LINE_TEXT).collect();
    cut.push_str("...");
    cut
}

/// Read a source file, decompressing gzip data (recognised by its magic bytes), with at most
/// LIMIT bytes of text. BUF receives the text; COMPRESSED is scratch space.
pub fn read_source(path: &Path, limit: u64, buf: &mut Vec<u8>, compressed: &mut Vec<u8>) -> Result<(), ReadError> {
    let mut file = open_source(path, limit)?.0;
    read_open_source(&mut file, limit, buf, compressed)
}

/// Open the source file PATH through [`crate::fsutil::open_regular`]: a FIFO, socket, device or
/// directory among the files is refused without blocking, checked on the opened descriptor.
fn open_source(path: &Path, limit: u64) -> Result<(File, Stamp), ReadError> {
    let (file, meta) = crate::fsutil::open_regular(path).map_err(|e| match e {
        crate::error::FileError::NotRegular { kind, .. } => ReadError::NotRegular { kind },
        crate::error::FileError::Io { message, .. } => ReadError::Open(message),
        other => ReadError::Open(other.to_string()),
    })?;
    if meta.len() > limit {
        return Err(ReadError::TooLarge { limit });
    }
    Ok((
        file,
        Stamp {
            len: meta.len(),
            modified: meta.modified().ok(),
        },
    ))
}

fn read_open_source(file: &mut File, limit: u64, buf: &mut Vec<u8>, compressed: &mut Vec<u8>) -> Result<(), ReadError> {
    buf.clear();
    compressed.clear();
    file.take(limit.saturating_add(1)).read_to_end(compressed)?;
    if compressed.len() as u64 > limit {
        return Err(ReadError::TooLarge { limit });
    }
    if compressed.starts_with(&[0x1f, 0x8b]) {
        buf.reserve(compressed.len().saturating_mul(4));
        let decoder = flate2::read::MultiGzDecoder::new(&compressed[..]);
        decoder
            .take(limit.saturating_add(1))
            .read_to_end(buf)
            .map_err(ReadError::Gzip)?;
        if buf.len() as u64 > limit {
            return Err(ReadError::TooLarge { limit });
        }
    } else {
        std::mem::swap(buf, compressed);
    }
    Ok(())
}

/// Scan FILES for the symbol NAME of KIND, in parallel. Duplicate paths are scanned once. Files
/// that cannot be read are reported in [`ScanReport::errors`]; they do not stop the scan.
pub fn scan_files(files: &[PathBuf], name: &str, kind: Kind, options: &ScanOptions) -> Result<ScanReport, XrefError> {
    scan(files, name, kind, options, None)
}

/// [`scan_files`], using and updating CACHE: a file whose index says it does not contain NAME
/// (and whose size and modification time have not changed) is not read at all. The files the
/// scan has to parse anyway (NAME occurs in them) are indexed on the way; [`index_files`]
/// indexes the others, e.g. in a background thread.
pub fn scan_files_cached(
    files: &[PathBuf],
    name: &str,
    kind: Kind,
    options: &ScanOptions,
    cache: &mut ScanCache,
) -> Result<ScanReport, XrefError> {
    scan(files, name, kind, options, Some(cache))
}

/// What one worker found.
#[derive(Default)]
struct Part {
    hits: Vec<Hit>,
    errors: Vec<FileError>,
    scanned: usize,
    indexed: Vec<(PathBuf, Stamp, SymbolIndex)>,
}

fn scan(
    files: &[PathBuf],
    name: &str,
    kind: Kind,
    options: &ScanOptions,
    mut cache: Option<&mut ScanCache>,
) -> Result<ScanReport, XrefError> {
    validate_name(name)?;
    let mut files: Vec<&PathBuf> = files.iter().collect();
    files.sort();
    files.dedup();
    let next = AtomicUsize::new(0);
    let threads = options.threads.clamp(1, files.len().max(1));
    let use_cache = cache.is_some();
    let known = cache.as_deref();
    let limit = options.max_file_size;
    let cancelled = || options.cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed));
    let work = || {
        let mut part = Part::default();
        let mut buf = Vec::new();
        let mut compressed = Vec::new();
        loop {
            if cancelled() {
                break;
            }
            let idx = next.fetch_add(1, Ordering::Relaxed);
            let Some(&file) = files.get(idx) else { break };
            // Ok(false): cancelled while reading this file, which is then not counted.
            let result = open_source(file, limit).and_then(|(mut handle, stamp)| {
                let cached = known.and_then(|c| c.files.get(file)).filter(|(s, _)| *s == stamp);
                if let Some((_, index)) = cached {
                    if !index.may_contain(name.as_bytes()) {
                        return Ok(true);
                    }
                }
                read_open_source(&mut handle, limit, &mut buf, &mut compressed)?;
                let build = use_cache && cached.is_none();
                let Some((hits, index)) = scan_source_indexed(&buf, name, kind, build, options.cancel.as_deref())
                else {
                    return Ok(false);
                };
                part.hits.extend(hits.into_iter().map(|hit| Hit {
                    file: file.clone(),
                    hit,
                }));
                if let Some(index) = index {
                    part.indexed.push((file.clone(), stamp, index));
                }
                Ok(true)
            });
            if let Some(progress) = &options.progress {
                progress.fetch_add(1, Ordering::Relaxed);
            }
            match result {
                Ok(true) => part.scanned += 1,
                Ok(false) => break,
                Err(error) => part.errors.push(FileError {
                    file: file.clone(),
                    error,
                }),
            }
        }
        part
    };
    let parts: Vec<Part> = if threads == 1 {
        vec![work()]
    } else {
        std::thread::scope(|s| {
            // The calling thread works too; a thread that cannot be created is simply missing.
            let handles: Vec<_> = (1..threads)
                .filter_map(|_| std::thread::Builder::new().spawn_scoped(s, work).ok())
                .collect();
            let own = work();
            std::iter::once(own)
                .chain(handles.into_iter().map(|h| {
                    // A worker cannot panic on input, but never let one take Emacs down.
                    h.join().unwrap_or_else(|_| Part {
                        errors: vec![FileError {
                            file: PathBuf::new(),
                            error: ReadError::Io(std::io::Error::other("internal error in a scan worker")),
                        }],
                        ..Part::default()
                    })
                }))
                .collect()
        })
    };
    let mut report = ScanReport {
        files_total: files.len(),
        ..ScanReport::default()
    };
    for part in parts {
        report.hits.extend(part.hits);
        report.errors.extend(part.errors);
        report.files_scanned += part.scanned;
        if let Some(cache) = cache.as_deref_mut() {
            for (file, stamp, index) in part.indexed {
                cache.insert(file, stamp, index);
            }
        }
    }
    report
        .hits
        .sort_by(|a, b| (&a.file, a.hit.line, a.hit.column).cmp(&(&b.file, b.hit.line, b.hit.column)));
    report.errors.sort_by(|a, b| a.file.cmp(&b.file));
    report.interrupted = cancelled() && report.files_scanned + report.errors.len() < report.files_total;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn temp_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("agent-q-xref-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn scan_files_reads_plain_and_gzip_reports_errors_and_sorts() {
        use std::io::Write;
        let dir = temp_dir("files");
        let plain = dir.join("b.el");
        std::fs::write(&plain, "(defun b1 ()\n  (foo))\n(defun b2 () (foo))\n").unwrap();
        let gz = dir.join("a.el.gz");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(b";; (foo)\n(defun a1 () (foo \"(foo)\"))\n").unwrap();
        std::fs::write(&gz, enc.finish().unwrap()).unwrap();
        let bad_gz = dir.join("c.el.gz");
        std::fs::write(&bad_gz, b"\x1f\x8b\x08garbage").unwrap();
        let missing = dir.join("missing.el");
        let big = dir.join("big.el");
        std::fs::write(&big, format!("(foo){}", " ".repeat(200))).unwrap();
        let files = vec![
            plain.clone(),
            gz.clone(),
            bad_gz.clone(),
            missing.clone(),
            dir.clone(),
            plain.clone(),
        ];
        for threads in [1, 2, 4] {
            let options = ScanOptions {
                threads,
                ..ScanOptions::default()
            };
            let report = scan_files(&files, "foo", Kind::Call, &options).unwrap();
            let got: Vec<_> = report
                .hits
                .iter()
                .map(|h| (h.file.clone(), h.hit.line, h.hit.definition.clone().unwrap()))
                .collect();
            assert_eq!(
                got,
                vec![
                    (gz.clone(), 2, "a1".to_string()),
                    (plain.clone(), 2, "b1".to_string()),
                    (plain.clone(), 3, "b2".to_string())
                ]
            );
            assert_eq!(report.files_scanned, 2);
            let errors: Vec<_> = report.errors.iter().map(|e| e.file.clone()).collect();
            assert_eq!(errors, vec![dir.clone(), bad_gz.clone(), missing.clone()]);
            assert!(matches!(
                report.errors[0].error,
                ReadError::NotRegular { kind: "a directory" }
            ));
            assert!(matches!(report.errors[1].error, ReadError::Gzip(_)));
            assert!(matches!(report.errors[2].error, ReadError::Open(_)));
        }
        let small = ScanOptions {
            max_file_size: 100,
            threads: 1,
            cancel: None,
            progress: None,
        };
        let report = scan_files(std::slice::from_ref(&big), "foo", Kind::Call, &small).unwrap();
        assert!(matches!(report.errors[0].error, ReadError::TooLarge { limit: 100 }));
        assert!(report.errors[0].error.to_string().contains("100 bytes"));
        // A gzip bomb is cut at the limit, not decompressed whole.
        let bomb = dir.join("bomb.el.gz");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        enc.write_all(&vec![b' '; 1_000_000]).unwrap();
        std::fs::write(&bomb, enc.finish().unwrap()).unwrap();
        let limited = ScanOptions {
            max_file_size: 10_000,
            threads: 1,
            cancel: None,
            progress: None,
        };
        let report = scan_files(&[bomb], "foo", Kind::Call, &limited).unwrap();
        assert!(matches!(report.errors[0].error, ReadError::TooLarge { .. }));
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn mkfifo(path: &Path) {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    /// Run F on another thread; fail (instead of hanging the test run) when it has not returned
    /// within a minute: the bug this guards against is a scan that never returns.
    fn within_a_minute<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(std::time::Duration::from_secs(60))
            .expect("the scan never returned: it blocked")
    }

    #[test]
    fn a_fifo_among_the_files_is_an_error_and_does_not_block() {
        let dir = temp_dir("fifo");
        let before = dir.join("a.el");
        let after = dir.join("z.el");
        std::fs::write(&before, "(defun a () (foo))\n").unwrap();
        std::fs::write(&after, "(defun z () (foo))\n").unwrap();
        let fifo = dir.join("m.el");
        mkfifo(&fifo);
        let files = vec![before.clone(), fifo.clone(), after.clone()];
        let (scan_files_arg, fifo_arg) = (files.clone(), fifo.clone());
        let report = within_a_minute(move || {
            let options = ScanOptions {
                threads: 1,
                ..ScanOptions::default()
            };
            scan_files(&scan_files_arg, "foo", Kind::Call, &options).unwrap()
        });
        let hit_files: Vec<_> = report.hits.iter().map(|h| h.file.clone()).collect();
        assert_eq!(hit_files, vec![before.clone(), after.clone()]);
        assert_eq!(report.files_scanned, 2);
        assert_eq!(report.errors.len(), 1);
        assert_eq!(report.errors[0].file, fifo_arg);
        assert_eq!(
            report.errors[0].error.to_string(),
            "a FIFO (named pipe), not a regular file; not read"
        );
        // The cached scan and the background indexer skip it too.
        let (cached_files, index_files_arg) = (files.clone(), files.clone());
        let (cached, indexed) = within_a_minute(move || {
            let mut cache = ScanCache::new();
            let report = scan_files_cached(&cached_files, "foo", Kind::Call, &ScanOptions::default(), &mut cache);
            let shared = Mutex::new(ScanCache::new());
            (
                report.unwrap(),
                index_files(&shared, &index_files_arg, DEFAULT_MAX_FILE_SIZE),
            )
        });
        assert_eq!(cached.hits.len(), 2);
        assert_eq!(cached.errors.len(), 1);
        assert_eq!(indexed, 2);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_cancelled_scan_stops_and_says_so() {
        let dir = temp_dir("cancel");
        let files: Vec<PathBuf> = (0..50)
            .map(|i| {
                let path = dir.join(format!("f{i:02}.el"));
                std::fs::write(&path, format!("(defun f{i} () (foo))\n")).unwrap();
                path
            })
            .collect();
        let cancel = Arc::new(AtomicBool::new(false));
        let options = ScanOptions {
            threads: 2,
            cancel: Some(cancel.clone()),
            ..ScanOptions::default()
        };
        let report = scan_files(&files, "foo", Kind::Call, &options).unwrap();
        assert!(!report.interrupted);
        let progress = Arc::new(AtomicUsize::new(0));
        let counted = ScanOptions {
            progress: Some(progress.clone()),
            ..options.clone()
        };
        scan_files(&files, "foo", Kind::Call, &counted).unwrap();
        assert_eq!(progress.load(Ordering::Relaxed), 50);
        assert_eq!(
            (report.files_scanned, report.files_total, report.hits.len()),
            (50, 50, 50)
        );
        cancel.store(true, Ordering::Relaxed);
        let report = scan_files(&files, "foo", Kind::Call, &options).unwrap();
        assert!(report.interrupted);
        assert_eq!(
            (report.files_scanned, report.files_total, report.hits.len()),
            (0, 50, 0)
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn symbol_index_has_no_false_negatives() {
        let names: Vec<String> = (0..5000).map(|i| format!("sym-{i}")).collect();
        let index = SymbolIndex::new(names.iter().map(|n| symbol_hash(n.as_bytes())).collect());
        assert!(names.iter().all(|n| index.may_contain(n.as_bytes())));
        let false_positives = (0..10_000)
            .filter(|i| index.may_contain(format!("other-{i}").as_bytes()))
            .count();
        assert!(false_positives < 300, "{false_positives} false positives in 10000");
        let empty = SymbolIndex::new(Vec::new());
        assert!(!empty.may_contain(b"x"));
    }

    #[test]
    fn index_holds_every_symbol_the_scanner_can_report() {
        let src = b"(a\\ b) `(,@c) #'d ((e)) '[f] ;g\n\"h\" ?\\( (defvar i) #:j";
        let index = index_source(src);
        for name in ["a b", "c", "d", "e", "f", "defvar", "i", "j"] {
            assert!(index.may_contain(name.as_bytes()), "{name}");
        }
        for name in ["g", "h", "a", "b"] {
            assert!(!index.may_contain(name.as_bytes()), "{name}");
        }
    }

    #[test]
    fn cached_scans_agree_with_uncached_and_follow_file_changes() {
        let dir = temp_dir("cache");
        let mut files = Vec::new();
        for i in 0..20 {
            let path = dir.join(format!("f{i}.el"));
            std::fs::write(&path, format!("(defun f{i} (x)\n  (g{} x) (common x))\n", i % 3)).unwrap();
            files.push(path);
        }
        let options = ScanOptions {
            threads: 2,
            ..ScanOptions::default()
        };
        let mut cache = ScanCache::new();
        let names = ["common", "g0", "g1", "x", "f3", "absent"];
        let summary = |r: &ScanReport| {
            r.hits
                .iter()
                .map(|h| (h.file.clone(), h.hit.line, h.hit.column))
                .collect::<Vec<_>>()
        };
        for round in 0..2 {
            for (name, kind) in names.iter().flat_map(|n| [(n, Kind::Call), (n, Kind::Reference)]) {
                let plain = scan_files(&files, name, kind, &options).unwrap();
                let cached = scan_files_cached(&files, name, kind, &options, &mut cache).unwrap();
                assert_eq!(summary(&plain), summary(&cached), "{name} {kind} round {round}");
                assert_eq!(cached.files_scanned, 20);
            }
        }
        // Only the files that had to be parsed were indexed on the way.
        assert!(cache.len() == 20, "{}", cache.len());
        assert!(cache.size_in_bytes() > 0);
        // A changed file is read again and reindexed.
        std::fs::write(&files[5], "(defun f5 () (brand-new-function 1))\n").unwrap();
        let report = scan_files_cached(&files, "brand-new-function", Kind::Call, &options, &mut cache).unwrap();
        assert_eq!(summary(&report), vec![(files[5].clone(), 1, 15)]);
        // A file that disappeared is an error, not a stale hit.
        std::fs::remove_file(&files[6]).unwrap();
        let report = scan_files_cached(&files, "g0", Kind::Call, &options, &mut cache).unwrap();
        assert_eq!(report.errors.len(), 1);
        assert!(report.hits.iter().all(|h| h.file != files[6]));
        cache.clear();
        assert!(cache.is_empty());
        // A scan indexes only the files it parses; index_files does the rest.
        let only_g1 = scan_files_cached(&files, "g1", Kind::Call, &options, &mut cache).unwrap();
        assert_eq!(only_g1.hits.len(), 7);
        assert_eq!(cache.len(), 7);
        assert!(!cache.covers(&files));
        let shared = Mutex::new(cache);
        assert_eq!(index_files(&shared, &files, DEFAULT_MAX_FILE_SIZE), 19 - 7);
        assert_eq!(index_files(&shared, &files, DEFAULT_MAX_FILE_SIZE), 0);
        let mut cache = shared.into_inner().unwrap();
        let live: Vec<PathBuf> = files.iter().filter(|f| f.exists()).cloned().collect();
        assert!(cache.covers(&live));
        for name in names {
            let plain = scan_files(&live, name, Kind::Call, &options).unwrap();
            let cached = scan_files_cached(&live, name, Kind::Call, &options, &mut cache).unwrap();
            assert_eq!(summary(&plain), summary(&cached), "{name} after index_files");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Where the time of a cold indexed scan goes (decompression vs reading), one thread. Run
    /// with `cargo test --release xref::tests::emacs_breakdown -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn emacs_breakdown() {
        let files = emacs_files();
        let (mut buf, mut compressed) = (Vec::new(), Vec::new());
        let t = std::time::Instant::now();
        let texts: Vec<Vec<u8>> = files
            .iter()
            .map(|f| {
                read_source(f, DEFAULT_MAX_FILE_SIZE, &mut buf, &mut compressed).unwrap();
                buf.clone()
            })
            .collect();
        let total: usize = texts.iter().map(|t| t.len()).sum();
        println!(
            "read+decompress {} files, {total} bytes: {:?}",
            files.len(),
            t.elapsed()
        );
        for _ in 0..3 {
            let t = std::time::Instant::now();
            let n: usize = texts
                .iter()
                .map(|s| scan_source(s, "save-buffer", Kind::Call).len())
                .sum();
            println!("scan (pre-checked) save-buffer: {n} hits {:?}", t.elapsed());
            let t = std::time::Instant::now();
            let n: usize = texts
                .iter()
                .map(|s| scan_source_indexed(s, "save-buffer", Kind::Call, true, None).map_or(0, |r| r.0.len()))
                .sum();
            println!("scan+index every file: {n} hits {:?}", t.elapsed());
        }
    }

    fn emacs_files() -> Vec<PathBuf> {
        let root = Path::new("/usr/share/emacs/28.2/lisp");
        let mut files = Vec::new();
        let mut dirs = vec![root.to_path_buf()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.to_string_lossy().ends_with(".el.gz") {
                    files.push(path);
                }
            }
        }
        files
    }

    /// Scan Emacs's own sources when installed (emacs-el); prints timings. Run with
    /// `cargo test --release xref::tests::emacs_sources -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn emacs_sources() {
        let files = emacs_files();
        for (name, kind) in [
            ("save-buffer", Kind::Call),
            ("buffer-file-name", Kind::Reference),
            ("xref-find-definitions", Kind::Call),
            ("setq", Kind::Call),
        ] {
            for threads in [1, 2] {
                let options = ScanOptions {
                    threads,
                    ..ScanOptions::default()
                };
                let mut times = Vec::new();
                let mut n = 0;
                for _ in 0..5 {
                    let t = std::time::Instant::now();
                    let report = scan_files(&files, name, kind, &options).unwrap();
                    times.push(t.elapsed());
                    n = report.hits.len();
                    assert!(report.errors.is_empty());
                }
                times.sort();
                println!(
                    "{name} {kind}: {} files, {n} hits, {threads} thread(s), median {:?}",
                    files.len(),
                    times[2]
                );
            }
            let options = ScanOptions::default();
            let mut cache = ScanCache::new();
            let t = std::time::Instant::now();
            let cold = scan_files_cached(&files, name, kind, &options, &mut cache).unwrap();
            let cold_time = t.elapsed();
            let t = std::time::Instant::now();
            let shared = Mutex::new(cache);
            index_files(&shared, &files, DEFAULT_MAX_FILE_SIZE);
            let mut cache = shared.into_inner().unwrap();
            let index_time = t.elapsed();
            let mut times = Vec::new();
            for _ in 0..5 {
                let t = std::time::Instant::now();
                let warm = scan_files_cached(&files, name, kind, &options, &mut cache).unwrap();
                times.push(t.elapsed());
                assert_eq!(warm.hits, cold.hits);
            }
            times.sort();
            println!(
                "{name} {kind}: cached, cold {cold_time:?}, index_files {index_time:?} (1 thread), \
                 warm median {:?}, index {} KiB",
                times[2],
                cache.size_in_bytes() / 1024
            );
        }
    }
}
