//! The items the Emacs side hands over, read from s-expressions: each a vector of fields, in a
//! list. A malformed item is an error that says which and why, never a panic.

use super::format::{symbol_kind, Diagnostic, Location, OutlineItem, Severity, SymbolItem};
use crate::sexp::Sexp;

/// The most items one answer takes.
pub const MAX_ITEMS: usize = 100_000;

fn items(list: &Sexp) -> Result<&[Sexp], String> {
    let items: &[Sexp] = match list {
        Sexp::Nil => &[],
        Sexp::List(items) => items,
        _ => return Err("the items must be a list".into()),
    };
    if items.len() > MAX_ITEMS {
        return Err(format!("more than {MAX_ITEMS} items"));
    }
    Ok(items)
}

fn fields(item: &Sexp, n: usize, index: usize) -> Result<&[Sexp], String> {
    match item {
        Sexp::Vector(fields) if fields.len() == n => Ok(fields),
        _ => Err(format!("item {index} must be a vector of {n} fields")),
    }
}

fn text(v: &Sexp, what: &str, index: usize) -> Result<String, String> {
    match v {
        Sexp::Str(s) => Ok(s.clone()),
        Sexp::Symbol(s) | Sexp::Keyword(s) => Ok(s.clone()),
        _ => Err(format!("item {index}: {what} must be a string")),
    }
}

fn optional_text(v: &Sexp, what: &str, index: usize) -> Result<Option<String>, String> {
    match v {
        Sexp::Nil => Ok(None),
        Sexp::Int(n) => Ok(Some(n.to_string())),
        _ => text(v, what, index).map(Some),
    }
}

fn number(v: &Sexp, what: &str, index: usize) -> Result<usize, String> {
    match v {
        Sexp::Int(n) if *n >= 0 => usize::try_from(*n).map_err(|_| format!("item {index}: {what} is too large")),
        _ => Err(format!("item {index}: {what} must be a natural number")),
    }
}

fn line(v: &Sexp, what: &str, index: usize) -> Result<usize, String> {
    number(v, what, index).map(|n| n.max(1))
}

fn kind(v: &Sexp, index: usize) -> Result<String, String> {
    match v {
        Sexp::Int(n) => Ok(symbol_kind(*n).to_owned()),
        Sexp::Nil => Ok("symbol".to_owned()),
        _ => text(v, "the kind", index),
    }
}

/// Locations: vectors `[FILE LINE COLUMN TEXT ENCLOSING DECLARATION QUOTE]` (LINE 1-based, COLUMN
/// 0-based, TEXT and ENCLOSING strings or nil, DECLARATION and QUOTE booleans).
pub fn locations(list: &Sexp) -> Result<Vec<Location>, String> {
    items(list)?
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let f = fields(item, 7, i)?;
            Ok(Location {
                file: text(&f[0], "the file", i)?,
                line: line(&f[1], "the line", i)?,
                column: number(&f[2], "the column", i)?,
                text: optional_text(&f[3], "the text", i)?,
                enclosing: optional_text(&f[4], "the enclosing symbol", i)?,
                declaration: !matches!(f[5], Sexp::Nil),
                quote: !matches!(f[6], Sexp::Nil),
            })
        })
        .collect()
}

/// Outline symbols: vectors `[NAME KIND START END DEPTH]` (KIND an LSP `SymbolKind` number or a
/// word, START and END 1-based lines, DEPTH a number or nil to nest by ranges).
pub fn outline(list: &Sexp) -> Result<Vec<OutlineItem>, String> {
    items(list)?
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let f = fields(item, 5, i)?;
            let start = line(&f[2], "the start line", i)?;
            Ok(OutlineItem {
                name: text(&f[0], "the name", i)?,
                kind: kind(&f[1], i)?,
                start,
                end: line(&f[3], "the end line", i)?.max(start),
                depth: match &f[4] {
                    Sexp::Nil => None,
                    v => Some(number(v, "the depth", i)?),
                },
            })
        })
        .collect()
}

/// Workspace symbols: vectors `[NAME KIND FILE LINE CONTAINER]`.
pub fn symbols(list: &Sexp) -> Result<Vec<SymbolItem>, String> {
    items(list)?
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let f = fields(item, 5, i)?;
            Ok(SymbolItem {
                name: text(&f[0], "the name", i)?,
                kind: kind(&f[1], i)?,
                file: text(&f[2], "the file", i)?,
                line: line(&f[3], "the line", i)?,
                container: optional_text(&f[4], "the container", i)?,
            })
        })
        .collect()
}

/// Diagnostics: vectors `[FILE LINE COLUMN SEVERITY SOURCE CODE MESSAGE]` (COLUMN 0-based
/// characters, SEVERITY an LSP number or a word such as Flymake's `:error`, `eglot-note`).
pub fn diagnostics(list: &Sexp) -> Result<Vec<Diagnostic>, String> {
    items(list)?
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let f = fields(item, 7, i)?;
            Ok(Diagnostic {
                file: text(&f[0], "the file", i)?,
                line: line(&f[1], "the line", i)?,
                column: number(&f[2], "the column", i)?,
                severity: match &f[3] {
                    Sexp::Int(n) => Severity::from_lsp(*n),
                    Sexp::Nil => Severity::Error,
                    v => Severity::from_word(&text(v, "the severity", i)?),
                },
                source: optional_text(&f[4], "the source", i)?,
                code: optional_text(&f[5], "the code", i)?,
                message: text(&f[6], "the message", i)?,
            })
        })
        .collect()
}

/// File names: a list of strings.
pub fn files(list: &Sexp) -> Result<Vec<String>, String> {
    items(list)?
        .iter()
        .enumerate()
        .map(|(i, f)| text(f, "the file", i))
        .collect()
}
