//! `rename_symbol`'s pure parts: the new name checked, the language server's `WorkspaceEdit`
//! read into each file's edits (resource operations refused, naming why), those edits applied to
//! a file's text (LSP's UTF-16 positions converted to characters), and the answer that tells the
//! model which hunks of which files were applied and which were rejected.

use serde_json::Value as Json;
use thiserror::Error;

use super::format::shown_path;
use crate::sexp::Sexp;

/// The longest new name, in characters (as the code tools' `symbol`).
pub const MAX_NAME_CHARS: usize = 1024;
/// The most files one rename may change.
pub const MAX_FILES: usize = 1_000;
/// The most text edits one rename may make, in all files.
pub const MAX_EDITS: usize = 100_000;

/// Why a `WorkspaceEdit` cannot be reviewed and applied.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RenameError {
    /// The rename would create, rename or delete a file, which the hunk review cannot show.
    #[error(
        "the language server's rename would also {what} {file}; a hunk review shows changes to the text of existing files only, so rename_symbol does not apply such a rename. Nothing was changed. Rename the file yourself (or ask the user to) and change the references with propose_file_edit."
    )]
    ResourceOperation {
        /// What the operation does: "create", "rename" or "delete".
        what: String,
        /// The file it names (for a rename, old → new).
        file: String,
    },
    /// The server's answer is not a `WorkspaceEdit` this reads.
    #[error("the language server's rename answer cannot be read: {0}")]
    Malformed(String),
    /// The edit is larger than a review can take.
    #[error("the language server's rename is too large to review: {0}")]
    TooLarge(String),
}

/// A position as LSP counts it: a 0-based line and a 0-based column in UTF-16 code units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Position {
    /// The line, 0-based.
    pub line: usize,
    /// The column, 0-based, in UTF-16 code units.
    pub utf16: usize,
}

/// One LSP `TextEdit`: replace the text from START to END by NEW_TEXT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextEdit {
    /// Where the replaced text starts.
    pub start: Position,
    /// Where it ends (exclusive).
    pub end: Position,
    /// What replaces it.
    pub new_text: String,
}

/// The edits of one file: groups applied one after the other (each a `TextDocumentEdit`, whose
/// positions refer to the text the groups before it left), in the order the server sent them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEdits {
    /// The file's absolute name (from its `file:` URI).
    pub file: String,
    /// The groups of edits.
    pub groups: Vec<Vec<TextEdit>>,
}

/// Check NEW_NAME, the name a symbol is to get: `Err` says why it cannot be one.
///
/// The language server judges the language's own rules; this refuses what is no name in any
/// language the servers serve: empty, over [`MAX_NAME_CHARS`], spaces, control or invisible
/// characters, quotes, brackets and separators.
pub fn validate_new_name(name: &str) -> Result<(), String> {
    let count = name.chars().count();
    if count == 0 {
        return Err("new_name is empty".into());
    }
    if count > MAX_NAME_CHARS {
        return Err(format!(
            "new_name is too long: {count} characters (a name has at most {MAX_NAME_CHARS})"
        ));
    }
    if let Some(c) = name.chars().find(|c| {
        c.is_whitespace() || c.is_control() || crate::visible::is_hidden(*c) || "()[]{};,'\"`#./\\:".contains(*c)
    }) {
        let shown = if c.is_whitespace() || c.is_control() || crate::visible::is_hidden(c) {
            format!("U+{:04X}", u32::from(c))
        } else {
            format!("'{c}'")
        };
        return Err(format!(
            "new_name must be one identifier, without {shown} (no spaces, quotes, brackets, dots or separators); give the name only"
        ));
    }
    Ok(())
}

fn percent_decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("{s} has an invalid percent escape"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("{s} is not UTF-8 once decoded"))
}

/// The absolute file name of the `file:` URI URI.
pub fn uri_to_file(uri: &str) -> Result<String, String> {
    let rest = uri
        .strip_prefix("file://")
        .ok_or_else(|| format!("{uri} is not a file: URI"))?;
    // file:///path, or file://localhost/path.
    let path = match rest.find('/') {
        Some(0) => rest,
        Some(i) if &rest[..i] == "localhost" => &rest[i..],
        _ => return Err(format!("{uri} names a file on another host")),
    };
    let decoded = percent_decode(path)?;
    if decoded.contains('\0') {
        return Err(format!("{uri} has a NUL character"));
    }
    Ok(decoded)
}

fn malformed(what: impl Into<String>) -> RenameError {
    RenameError::Malformed(what.into())
}

fn natural(v: &Json, what: &str) -> Result<usize, RenameError> {
    v.as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| malformed(format!("{what} is not a natural number")))
}

fn position(v: &Json, what: &str) -> Result<Position, RenameError> {
    Ok(Position {
        line: natural(&v["line"], &format!("{what}'s line"))?,
        utf16: natural(&v["character"], &format!("{what}'s character"))?,
    })
}

fn text_edits(v: &Json, count: &mut usize) -> Result<Vec<TextEdit>, RenameError> {
    let edits = v.as_array().ok_or_else(|| malformed("edits is not an array"))?;
    *count += edits.len();
    if *count > MAX_EDITS {
        return Err(RenameError::TooLarge(format!("more than {MAX_EDITS} edits")));
    }
    edits
        .iter()
        .map(|e| {
            let range = &e["range"];
            let new_text = e["newText"]
                .as_str()
                .ok_or_else(|| malformed("an edit has no newText (a snippet edit is not supported)"))?;
            Ok(TextEdit {
                start: position(&range["start"], "an edit's start")?,
                end: position(&range["end"], "an edit's end")?,
                new_text: new_text.to_owned(),
            })
        })
        .collect()
}

fn push_group(files: &mut Vec<FileEdits>, file: String, group: Vec<TextEdit>) -> Result<(), RenameError> {
    if let Some(entry) = files.iter_mut().find(|f| f.file == file) {
        entry.groups.push(group);
    } else {
        if files.len() >= MAX_FILES {
            return Err(RenameError::TooLarge(format!("more than {MAX_FILES} files")));
        }
        files.push(FileEdits {
            file,
            groups: vec![group],
        });
    }
    Ok(())
}

fn file_of(uri: &Json) -> Result<String, RenameError> {
    let uri = uri.as_str().ok_or_else(|| malformed("a uri is not a string"))?;
    uri_to_file(uri).map_err(malformed)
}

/// The files a `WorkspaceEdit` (JSON, as the server sent it) changes and their edits, in the
/// order the server named them. `documentChanges` is read when present (LSP: it wins over
/// `changes`), else `changes`. A `create`, `rename` or `delete` operation is refused.
pub fn workspace_edit(json: &str) -> Result<Vec<FileEdits>, RenameError> {
    let v: Json = serde_json::from_str(json).map_err(|e| malformed(e.to_string()))?;
    let mut files = Vec::new();
    let mut count = 0;
    // An Emacs client serializes a null it read as an empty object.
    let absent = |j: &Json| matches!(j, Json::Object(m) if m.is_empty()) || j.is_null();
    let (document_changes, changes) = (&v["documentChanges"], &v["changes"]);
    let document_changes = if absent(document_changes) {
        &Json::Null
    } else {
        document_changes
    };
    let changes = if absent(changes) { &Json::Null } else { changes };
    match (document_changes, changes) {
        (Json::Array(changes), _) => {
            for change in changes {
                if let Some(kind) = change["kind"].as_str() {
                    let file = match kind {
                        "rename" => format!("{} to {}", file_of(&change["oldUri"])?, file_of(&change["newUri"])?),
                        _ => file_of(&change["uri"])?,
                    };
                    return Err(RenameError::ResourceOperation {
                        what: kind.to_owned(),
                        file,
                    });
                }
                let file = file_of(&change["textDocument"]["uri"])?;
                let group = text_edits(&change["edits"], &mut count)?;
                push_group(&mut files, file, group)?;
            }
        }
        (Json::Null, Json::Object(map)) => {
            for (uri, edits) in map {
                let file = uri_to_file(uri).map_err(malformed)?;
                let group = text_edits(edits, &mut count)?;
                push_group(&mut files, file, group)?;
            }
        }
        (Json::Null, Json::Null) => {}
        _ => return Err(malformed("documentChanges is not an array, or changes not an object")),
    }
    files.retain(|f| f.groups.iter().any(|g| !g.is_empty()));
    Ok(files)
}

/// The byte offset in TEXT of the LSP position P: a column past the end of its line is the line's
/// end (before a `\r\n` or `\n`), a line past the last is the end of TEXT.
fn offset(text: &str, starts: &[usize], p: Position) -> usize {
    let Some(&start) = starts.get(p.line) else {
        return text.len();
    };
    let end = starts.get(p.line + 1).map_or(text.len(), |&next| next - 1);
    let line = text[start..end].strip_suffix('\r').unwrap_or(&text[start..end]);
    let mut units = 0;
    for (i, c) in line.char_indices() {
        if units >= p.utf16 {
            return start + i;
        }
        units += c.len_utf16();
    }
    start + line.len()
}

fn apply_group(text: &str, group: &[TextEdit]) -> Result<String, String> {
    let starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let mut spans: Vec<(usize, usize, &str)> = group
        .iter()
        .map(|e| {
            let (a, b) = (offset(text, &starts, e.start), offset(text, &starts, e.end));
            if a > b {
                Err(format!(
                    "an edit ends (line {}, column {}) before it starts (line {}, column {})",
                    e.end.line + 1,
                    e.end.utf16 + 1,
                    e.start.line + 1,
                    e.start.utf16 + 1
                ))
            } else {
                Ok((a, b, e.new_text.as_str()))
            }
        })
        .collect::<Result<_, _>>()?;
    // Stable: edits inserting at one position keep the server's order.
    spans.sort_by_key(|&(a, b, _)| (a, b));
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (a, b, new) in spans {
        if a < at {
            return Err("two edits overlap".into());
        }
        out.push_str(&text[at..a]);
        out.push_str(new);
        at = b;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

/// TEXT with GROUPS of edits applied, one group after the other.
pub fn apply(text: &str, groups: &[Vec<TextEdit>]) -> Result<String, String> {
    let mut text = text.to_owned();
    for group in groups {
        text = apply_group(&text, group)?;
    }
    Ok(text)
}

/// How one hunk of the review was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Applied as proposed.
    Accepted,
    /// Applied as the user edited it.
    Edited,
    /// Not applied.
    Rejected,
}

/// One hunk of a file in the review: its number (1-based, within its file), the line it starts
/// at in the file as it was, and its decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// Its number within its file, 1-based.
    pub number: usize,
    /// The line it starts at, 1-based, in the text before the rename.
    pub line: usize,
    /// What the user decided.
    pub decision: Decision,
}

/// What became of one file of the rename.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileOutcome {
    /// The file's absolute name.
    pub file: String,
    /// Where the accepted hunks went: "buffer" (the visiting buffer, not saved), "saved" (the
    /// visiting buffer, saved), "file" (the file on disk), or nil when none was applied.
    pub target: Option<String>,
    /// Why nothing was applied to it although hunks were accepted (it changed meanwhile...).
    pub problem: Option<String>,
    /// Its hunks.
    pub hunks: Vec<Hunk>,
}

fn field(fields: &[Sexp], i: usize) -> &Sexp {
    fields.get(i).unwrap_or(&Sexp::Nil)
}

fn opt_text(v: &Sexp, what: &str) -> Result<Option<String>, String> {
    match v {
        Sexp::Nil => Ok(None),
        Sexp::Str(s) | Sexp::Symbol(s) | Sexp::Keyword(s) => Ok(Some(s.clone())),
        _ => Err(format!("{what} must be a string")),
    }
}

fn nat(v: &Sexp, what: &str) -> Result<usize, String> {
    match v {
        Sexp::Int(n) if *n >= 0 => usize::try_from(*n).map_err(|_| format!("{what} is too large")),
        _ => Err(format!("{what} must be a natural number")),
    }
}

fn list(v: &Sexp) -> Result<&[Sexp], String> {
    match v {
        Sexp::Nil => Ok(&[]),
        Sexp::List(items) if items.len() <= super::input::MAX_ITEMS => Ok(items),
        Sexp::List(_) => Err("too many items".into()),
        _ => Err("the items must be a list".into()),
    }
}

/// The outcomes the Emacs side hands over: a list of vectors [FILE TARGET PROBLEM HUNKS], HUNKS a
/// list of vectors [NUMBER LINE DECISION], DECISION `accepted`, `edited` or `rejected`.
pub fn outcomes(items: &Sexp) -> Result<Vec<FileOutcome>, String> {
    list(items)?
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let Sexp::Vector(fields) = item else {
                return Err(format!("item {i} must be a vector [FILE TARGET PROBLEM HUNKS]"));
            };
            let file = opt_text(field(fields, 0), "FILE")?.ok_or(format!("item {i}: FILE must be a string"))?;
            let hunks = list(field(fields, 3))?
                .iter()
                .map(|h| {
                    let Sexp::Vector(h) = h else {
                        return Err(format!("item {i}: a hunk must be a vector [NUMBER LINE DECISION]"));
                    };
                    let decision = match opt_text(field(h, 2), "DECISION")?.as_deref() {
                        Some("accepted") => Decision::Accepted,
                        Some("edited") => Decision::Edited,
                        Some("rejected") => Decision::Rejected,
                        _ => return Err(format!("item {i}: DECISION must be accepted, edited or rejected")),
                    };
                    Ok(Hunk {
                        number: nat(field(h, 0), "NUMBER")?,
                        line: nat(field(h, 1), "LINE")?,
                        decision,
                    })
                })
                .collect::<Result<_, _>>()?;
            Ok(FileOutcome {
                file,
                target: opt_text(field(fields, 1), "TARGET")?,
                problem: opt_text(field(fields, 2), "PROBLEM")?,
                hunks,
            })
        })
        .collect()
}

fn numbers(hunks: &[&Hunk]) -> String {
    let names: Vec<String> = hunks
        .iter()
        .map(|h| format!("{} (line {})", h.number, h.line))
        .collect();
    match names.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

fn hunks_phrase(hunks: &[&Hunk], what: &str) -> Option<String> {
    (!hunks.is_empty()).then(|| {
        format!(
            "{} {} {what}",
            if hunks.len() == 1 { "hunk" } else { "hunks" },
            numbers(hunks)
        )
    })
}

/// The answer to `rename_symbol`: which hunks of which files were applied and which rejected.
///
/// SUBJECT names the symbol as the other tools do, NEW_NAME its new name, SOURCE the server
/// (`eglot: pyright`); paths are shown relative to ROOT. CANCELLED: the user rejected the whole
/// rename (or closed the review).
pub fn report(
    subject: &str,
    new_name: &str,
    source: &str,
    root: Option<&str>,
    files: &[FileOutcome],
    cancelled: bool,
) -> String {
    let total: usize = files.iter().map(|f| f.hunks.len()).sum();
    let applied_in = |f: &FileOutcome| {
        if f.problem.is_some() {
            0
        } else {
            f.hunks.iter().filter(|h| h.decision != Decision::Rejected).count()
        }
    };
    let applied: usize = files.iter().map(applied_in).sum();
    let changed = files.iter().filter(|f| applied_in(f) > 0).count();
    let mut out = format!(
        "Rename of {subject} to {new_name} (source: {source}): {applied} of {total} {} applied, in {changed} of {} {}.",
        if total == 1 { "hunk" } else { "hunks" },
        files.len(),
        if files.len() == 1 { "file" } else { "files" },
    );
    if cancelled {
        out.push_str(" The user rejected the whole rename: no file was changed.");
    } else if applied == 0 {
        out.push_str(" No hunk was applied: no file was changed.");
    }
    for f in files {
        let shown = shown_path(&f.file, root);
        let accepted: Vec<&Hunk> = f.hunks.iter().filter(|h| h.decision == Decision::Accepted).collect();
        let edited: Vec<&Hunk> = f.hunks.iter().filter(|h| h.decision == Decision::Edited).collect();
        let rejected: Vec<&Hunk> = f.hunks.iter().filter(|h| h.decision == Decision::Rejected).collect();
        let parts: Vec<String> = [
            hunks_phrase(&accepted, "applied"),
            hunks_phrase(&edited, "applied as the user edited them"),
            hunks_phrase(&rejected, "rejected (not applied: the old name stays there)"),
        ]
        .into_iter()
        .flatten()
        .collect();
        let whither = match (&f.problem, f.target.as_deref()) {
            (Some(problem), _) => format!("; nothing was applied to it: {problem}"),
            (None, Some("buffer")) => "; changed in its buffer, not saved".to_owned(),
            (None, Some("saved")) => "; changed in its buffer, saved".to_owned(),
            (None, Some("file")) => "; written to the file".to_owned(),
            _ => String::new(),
        };
        out.push_str(&format!(
            "\n{shown}: {} of {} {}: {}{whither}.",
            applied_in(f),
            f.hunks.len(),
            if f.hunks.len() == 1 { "hunk" } else { "hunks" },
            parts.join("; ")
        ));
    }
    if !cancelled && applied > 0 && applied < total {
        out.push_str("\nThe rename is partial: where hunks were rejected the old name is still used, so the code may not work until those places are changed.");
    }
    out
}
