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
//!
//! # Layout
//!
//! `tokens` finds where strings, character literals and symbols end; `forms` says what the head
//! of a form makes of its arguments; `scanner` is the reader that tracks what each list is;
//! `source` runs it on one text and turns its hits into lines and columns; `read` reads one file;
//! `index` holds the per-file symbol filters and their cache; `parallel` scans many files.

mod forms;
mod index;
mod parallel;
mod read;
mod scanner;
mod source;
mod tokens;

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::Arc;

pub use forms::{FUNCTION_ARGS, VARIABLE_ARGS};
pub use index::{index_files, ScanCache, SymbolIndex};
pub use parallel::{scan_files, scan_files_cached};
pub use read::{read_source, SourceReadError};
pub use source::{index_source, may_contain, scan_source};

/// The largest file, in bytes (after decompression for `.el.gz`), that [`scan_files`] reads by
/// default. Emacs's largest library source (`ja-dic.el`) is about 1.6 MB.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 32 * 1024 * 1024;

/// The longest symbol name accepted, in bytes.
pub const MAX_NAME_LEN: usize = 4096;

/// The longest source line text kept in a hit, in characters; longer lines are cut with "...".
pub const MAX_LINE_TEXT: usize = 200;

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
    pub error: SourceReadError,
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

#[cfg(test)]
mod tests;
