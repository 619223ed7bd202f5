//! `agent-q--core-code-*`: the answers of the code-intelligence tools ([`agent_q_core::code`]),
//! worded for `lisp/agent-q-code.el` from the items it gathered.

use emacs::{defun, Env, IntoLisp, Result, Value};

use super::args;
use super::convert::{self, Limits, WalkError};
use super::errors::{self, Kind};
use agent_q_core::code::columns;
use agent_q_core::code::format::{self, LocationKind, Unit};
use agent_q_core::code::input;
use agent_q_core::code::lines::LineReader;
use agent_q_core::code::rename;
use agent_q_core::sexp::Sexp;

/// The most items one answer lists, whatever LIMIT asks.
const MAX_LIMIT: i64 = 10_000;

fn sexp(env: &Env, v: Value<'_>, what: &str) -> Result<Sexp> {
    match convert::to_sexp(env, v, Limits::default()) {
        Ok(s) => Ok(s),
        Err(WalkError::Convert(e)) => errors::signal(env, Kind::Generic, format!("{what} cannot be read: {e}")),
        Err(WalkError::Emacs(e)) => Err(e),
    }
}

fn parsed<T>(env: &Env, r: std::result::Result<T, String>, what: &str) -> Result<T> {
    r.or_else(|e| errors::signal(env, Kind::Generic, format!("{what}: {e}")))
}

fn limit(env: &Env, v: Value<'_>) -> Result<usize> {
    let n = args::integer(env, v, "LIMIT")?.clamp(0, MAX_LIMIT);
    Ok(usize::try_from(n).unwrap_or(0))
}

fn optional_string(env: &Env, v: Value<'_>, what: &str) -> Result<Option<String>> {
    if v.is_not_nil() {
        args::string(env, v, what, args::MAX_NAME_BYTES).map(Some)
    } else {
        Ok(None)
    }
}

/// The answer listing the locations ITEMS of KIND (`definition`, `references` or `renamed`) for
/// SUBJECT from SOURCE, paths relative to ROOT (or nil), at most LIMIT listed.
///
/// ITEMS is a list of vectors [FILE LINE COLUMN TEXT ENCLOSING DECLARATION QUOTE]: LINE 1-based,
/// COLUMN 0-based in UTF-16 code units when UTF16 is non-nil (as a language server counts),
/// else in characters; TEXT the line's text when a buffer holds it, else nil (the line is read
/// from the file); QUOTE non-nil when the text may be shown.
#[defun]
#[allow(clippy::too_many_arguments)]
fn code_locations(
    env: &Env,
    kind: Value<'_>,
    subject: Value<'_>,
    source: Value<'_>,
    root: Value<'_>,
    items: Value<'_>,
    utf16: Value<'_>,
    limit_v: Value<'_>,
) -> Result<String> {
    if !env.call("symbolp", (kind,))?.is_not_nil() {
        return errors::signal(
            env,
            Kind::Generic,
            format!("KIND must be a symbol, not a {}", args::type_name(env, kind)),
        );
    }
    let kind_name = args::string(env, env.call("symbol-name", (kind,))?, "KIND", 64)?;
    let kind = match kind_name.as_str() {
        "definition" => LocationKind::Definition,
        "references" => LocationKind::References,
        "renamed" => LocationKind::Renamed,
        _ => return errors::signal(env, Kind::Generic, "KIND must be definition, references or renamed"),
    };
    let subject = args::string(env, subject, "SUBJECT", args::MAX_NAME_BYTES)?;
    let source = args::string(env, source, "SOURCE", args::MAX_NAME_BYTES)?;
    let root = optional_string(env, root, "ROOT")?;
    let items = sexp(env, items, "ITEMS")?;
    let locations = parsed(env, input::locations(&items), "ITEMS")?;
    let limit = limit(env, limit_v)?;
    let unit = if utf16.is_not_nil() { Unit::Utf16 } else { Unit::Chars };
    Ok(format::format_locations(
        kind,
        &subject,
        &source,
        root.as_deref(),
        locations,
        unit,
        limit,
        &mut LineReader::new(),
    ))
}

/// The outline of FILE (as shown) from SOURCE: ITEMS a list of vectors [NAME KIND START END
/// DEPTH] (KIND an LSP SymbolKind number or a word; DEPTH nil to nest by the line ranges).
#[defun]
fn code_outline(env: &Env, file: Value<'_>, source: Value<'_>, items: Value<'_>, limit_v: Value<'_>) -> Result<String> {
    let file = args::string(env, file, "FILE", args::MAX_NAME_BYTES)?;
    let source = args::string(env, source, "SOURCE", args::MAX_NAME_BYTES)?;
    let items = sexp(env, items, "ITEMS")?;
    let items = parsed(env, input::outline(&items), "ITEMS")?;
    Ok(format::format_outline(&file, &source, items, limit(env, limit_v)?))
}

/// The symbols matching QUERY from SOURCE: ITEMS a list of vectors [NAME KIND FILE LINE
/// CONTAINER].
#[defun]
fn code_symbols(
    env: &Env,
    query: Value<'_>,
    source: Value<'_>,
    root: Value<'_>,
    items: Value<'_>,
    limit_v: Value<'_>,
) -> Result<String> {
    let query = args::string(env, query, "QUERY", args::MAX_NAME_BYTES)?;
    let source = args::string(env, source, "SOURCE", args::MAX_NAME_BYTES)?;
    let root = optional_string(env, root, "ROOT")?;
    let items = sexp(env, items, "ITEMS")?;
    let items = parsed(env, input::symbols(&items), "ITEMS")?;
    Ok(format::format_symbols(
        &query,
        &source,
        root.as_deref(),
        items,
        limit(env, limit_v)?,
    ))
}

/// The diagnostics of SUBJECT from SOURCE: ITEMS a list of vectors [FILE LINE COLUMN SEVERITY
/// SOURCE CODE MESSAGE]; UNCHECKED the files that could not be checked.
#[defun]
#[allow(clippy::too_many_arguments)]
fn code_diagnostics(
    env: &Env,
    subject: Value<'_>,
    source: Value<'_>,
    root: Value<'_>,
    items: Value<'_>,
    limit_v: Value<'_>,
    unchecked: Value<'_>,
) -> Result<String> {
    let subject = args::string(env, subject, "SUBJECT", args::MAX_NAME_BYTES)?;
    let source = args::string(env, source, "SOURCE", args::MAX_NAME_BYTES)?;
    let root = optional_string(env, root, "ROOT")?;
    let items = sexp(env, items, "ITEMS")?;
    let items = parsed(env, input::diagnostics(&items), "ITEMS")?;
    let unchecked = sexp(env, unchecked, "UNCHECKED")?;
    let unchecked = parsed(env, input::files(&unchecked), "UNCHECKED")?;
    Ok(format::format_diagnostics(
        &subject,
        &source,
        root.as_deref(),
        items,
        limit(env, limit_v)?,
        &unchecked,
    ))
}

/// What a project's `diagnostics` checked and why the rest was not, paths relative to ROOT:
/// VISITED, REPORTED and OPENED counts of files (open in Emacs; not visited, reported on by a
/// server; opened to a server for the call), SILENT, BEYOND, TOO-LARGE and NO-SERVER lists of
/// files not checked (no report within WAIT seconds; over MAX-FILES; over
/// [`format::MAX_OPENED_MB`]; no server takes them), SERVERS non-nil when a language server runs
/// for the project.
#[defun]
#[allow(clippy::too_many_arguments)]
fn code_project_check(
    env: &Env,
    root: Value<'_>,
    visited: Value<'_>,
    reported: Value<'_>,
    opened: Value<'_>,
    silent: Value<'_>,
    beyond: Value<'_>,
    too_large: Value<'_>,
    no_server: Value<'_>,
    servers: Value<'_>,
    max_files: Value<'_>,
    wait: Value<'_>,
) -> Result<String> {
    let count = |v: Value<'_>, what: &str| -> Result<usize> {
        Ok(usize::try_from(args::integer(env, v, what)?.max(0)).unwrap_or(0))
    };
    let files = |v: Value<'_>, what: &str| -> Result<Vec<String>> {
        let list = sexp(env, v, what)?;
        parsed(env, input::files(&list), what)
    };
    let check = format::ProjectCheck {
        visited: count(visited, "VISITED")?,
        reported: count(reported, "REPORTED")?,
        opened: count(opened, "OPENED")?,
        silent: files(silent, "SILENT")?,
        beyond: files(beyond, "BEYOND")?,
        no_server: files(no_server, "NO-SERVER")?,
        too_large: files(too_large, "TOO-LARGE")?,
        servers: servers.is_not_nil(),
        max_files: count(max_files, "MAX-FILES")?,
        wait: args::number(env, wait, "WAIT")?,
    };
    let root = optional_string(env, root, "ROOT")?;
    Ok(format::format_project_check(&check, root.as_deref()))
}

/// `type_at`'s answer: the hover TEXT at LOCATION from SOURCE.
#[defun]
fn code_hover(env: &Env, location: Value<'_>, source: Value<'_>, text: Value<'_>) -> Result<String> {
    let location = args::string(env, location, "LOCATION", args::MAX_NAME_BYTES)?;
    let source = args::string(env, source, "SOURCE", args::MAX_NAME_BYTES)?;
    let text = args::string(env, text, "TEXT", args::MAX_NAME_BYTES)?;
    Ok(format::format_hover(&location, &source, &text))
}

/// The UTF-16 column (0-based) of the character column COLUMN (0-based) in the line TEXT; with
/// TO-CHARS non-nil, the other way round.
#[defun]
fn code_column(env: &Env, text: Value<'_>, column: Value<'_>, to_chars: Value<'_>) -> Result<i64> {
    let text = args::string(env, text, "TEXT", args::MAX_NAME_BYTES)?;
    let column = usize::try_from(args::integer(env, column, "COLUMN")?.max(0)).unwrap_or(0);
    let n = if to_chars.is_not_nil() {
        columns::utf16_to_chars(&text, column)
    } else {
        columns::chars_to_utf16(&text, column)
    };
    Ok(i64::try_from(n).unwrap_or(i64::MAX))
}

/// Why NEW-NAME cannot be a symbol's new name, or nil when it can (`rename_symbol`).
#[defun]
fn code_rename_check(env: &Env, new_name: Value<'_>) -> Result<Option<String>> {
    let name = args::string(env, new_name, "NEW-NAME", args::MAX_NAME_BYTES)?;
    Ok(rename::validate_new_name(&name).err())
}

/// The files the language server's rename JSON (a `WorkspaceEdit`, serialized) changes, as a
/// list of absolute file names in the server's order; or a string saying why it cannot be
/// reviewed (a file created, renamed or deleted, an answer that cannot be read, too large).
#[defun]
fn code_rename_files<'e>(env: &'e Env, json: Value<'e>) -> Result<Value<'e>> {
    let json = args::string(env, json, "JSON", args::MAX_TEXT_BYTES)?;
    match rename::workspace_edit(&json) {
        Ok(files) => {
            let names = files
                .into_iter()
                .map(|f| f.file.into_lisp(env))
                .collect::<Result<Vec<_>>>()?;
            env.list(&names)
        }
        Err(e) => e.to_string().into_lisp(env),
    }
}

/// TEXT, the current text of FILE, with the edits the rename JSON makes to FILE applied; signals
/// an error saying why when they cannot be (overlapping, FILE not in it).
#[defun]
fn code_rename_apply(env: &Env, json: Value<'_>, file: Value<'_>, text: Value<'_>) -> Result<String> {
    let json = args::string(env, json, "JSON", args::MAX_TEXT_BYTES)?;
    let file = args::string(env, file, "FILE", args::MAX_NAME_BYTES)?;
    let text = args::string(env, text, "TEXT", args::MAX_TEXT_BYTES)?;
    let files = parsed(env, rename::workspace_edit(&json).map_err(|e| e.to_string()), "JSON")?;
    let Some(edits) = files.iter().find(|f| f.file == file) else {
        return errors::signal(env, Kind::Generic, format!("the rename changes nothing in {file}"));
    };
    parsed(
        env,
        rename::apply(&text, &edits.groups),
        &format!("the language server's edits of {file} cannot be applied"),
    )
}

/// `rename_symbol`'s answer: which hunks of which files were applied, for SUBJECT renamed to
/// NEW-NAME by SOURCE, paths relative to ROOT (or nil). ITEMS is a list of vectors [FILE TARGET
/// PROBLEM HUNKS] (see [`rename::outcomes`]); CANCELLED non-nil when the user rejected it all.
#[defun]
fn code_rename_report(
    env: &Env,
    subject: Value<'_>,
    new_name: Value<'_>,
    source: Value<'_>,
    root: Value<'_>,
    items: Value<'_>,
    cancelled: Value<'_>,
) -> Result<String> {
    let subject = args::string(env, subject, "SUBJECT", args::MAX_NAME_BYTES)?;
    let new_name = args::string(env, new_name, "NEW-NAME", args::MAX_NAME_BYTES)?;
    let source = args::string(env, source, "SOURCE", args::MAX_NAME_BYTES)?;
    let root = optional_string(env, root, "ROOT")?;
    let items = sexp(env, items, "ITEMS")?;
    let files = parsed(env, rename::outcomes(&items), "ITEMS")?;
    Ok(rename::report(
        &subject,
        &new_name,
        &source,
        root.as_deref(),
        &files,
        cancelled.is_not_nil(),
    ))
}
