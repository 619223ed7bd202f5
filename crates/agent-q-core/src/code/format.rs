//! The answers of the code-intelligence tools, worded once for every source.

use std::cmp::Ordering;
use std::fmt::Write as _;

use super::columns::utf16_to_chars;
use super::lines::LineReader;
use crate::visible::visible;

/// The most characters of a line's text quoted in a location.
pub const MAX_TEXT_CHARS: usize = 240;

/// How a location's column counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// UTF-16 code units, as the Language Server Protocol counts them.
    Utf16,
    /// Characters, as Emacs counts them.
    Chars,
}

/// One location, as the Emacs side gathered it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Location {
    /// The file's absolute name.
    pub file: String,
    /// The line, 1-based.
    pub line: usize,
    /// The column, 0-based, in the answer's [`Unit`].
    pub column: usize,
    /// The line's text when the caller has it (a buffer visiting the file, whose text may differ
    /// from the file's); otherwise it is read from the file.
    pub text: Option<String>,
    /// The name of the symbol that encloses the location, when known.
    pub enclosing: Option<String>,
    /// Whether this is the symbol's declaration (or definition).
    pub declaration: bool,
    /// Whether the line's text may be shown (the read guard's rule: inside the project, the
    /// allowed directories or a library's sources, and not a sensitive file).
    pub quote: bool,
}

/// What a list of locations answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocationKind {
    /// `find_definition`.
    Definition,
    /// `find_references`.
    References,
    /// `rename_symbol`'s preview of what the server would change.
    Renamed,
}

/// FILE relative to ROOT when it is inside it, else FILE as it is.
pub fn shown_path(file: &str, root: Option<&str>) -> String {
    if let Some(root) = root.filter(|r| !r.is_empty()) {
        let root = root.trim_end_matches('/');
        if let Some(rest) = file.strip_prefix(root) {
            if let Some(rest) = rest.strip_prefix('/') {
                if !rest.is_empty() {
                    return rest.to_owned();
                }
            }
        }
    }
    file.to_owned()
}

/// TEXT trimmed, its hidden characters made visible, cut to [`MAX_TEXT_CHARS`].
fn shown_text(text: &str) -> String {
    let trimmed = text.trim();
    let cut: String = trimmed.chars().take(MAX_TEXT_CHARS).collect();
    let more = trimmed.chars().count() > MAX_TEXT_CHARS;
    format!("{}{}", visible(&cut), if more { " …" } else { "" })
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The answer listing LOCATIONS for SUBJECT (a symbol's name, or `FILE:LINE:COLUMN`), from
/// SOURCE (e.g. `eglot: pyright`): one location per line as `FILE:LINE:COLUMN: TEXT`, 1-based,
/// the column in characters, FILE relative to ROOT when inside it, followed by the enclosing
/// symbol and `declaration` where they apply; sorted by file and position, duplicates removed;
/// at most LIMIT listed, and the cut said.
#[allow(clippy::too_many_arguments)]
pub fn format_locations(
    kind: LocationKind,
    subject: &str,
    source: &str,
    root: Option<&str>,
    mut locations: Vec<Location>,
    unit: Unit,
    limit: usize,
    reader: &mut LineReader,
) -> String {
    locations.sort_by(|a, b| {
        (a.file.as_str(), a.line, a.column)
            .cmp(&(b.file.as_str(), b.line, b.column))
            .then_with(|| b.declaration.cmp(&a.declaration))
    });
    locations.dedup_by(|b, a| a.file == b.file && a.line == b.line && a.column == b.column);
    let total = locations.len();
    let subject = visible(subject);
    let mut out = String::new();
    if total == 0 {
        let _ = write!(
            out,
            "{} {subject} (source: {source}).",
            match kind {
                LocationKind::Definition => "No definition found for",
                LocationKind::References => "No references found for",
                LocationKind::Renamed => "Nothing to rename for",
            }
        );
        return out;
    }
    let _ = writeln!(
        out,
        "{} {subject}: {} (source: {source}):",
        match kind {
            LocationKind::Definition => "Definition of",
            LocationKind::References => "References to",
            LocationKind::Renamed => "Renamed at",
        },
        match kind {
            LocationKind::Definition => plural(total, "location", "locations"),
            LocationKind::References => plural(total, "reference", "references"),
            LocationKind::Renamed => plural(total, "place", "places"),
        }
    );
    let mut withheld = 0;
    for loc in locations.iter().take(limit) {
        let text: Option<String> = match &loc.text {
            Some(t) => Some(t.clone()),
            None => reader.line(&loc.file, loc.line).map(str::to_owned),
        };
        let column = match (unit, &text) {
            (Unit::Utf16, Some(t)) => utf16_to_chars(t, loc.column),
            _ => loc.column,
        };
        let _ = write!(out, "{}:{}:{}:", shown_path(&loc.file, root), loc.line, column + 1);
        match (&text, loc.quote) {
            (Some(t), true) => {
                let _ = write!(out, " {}", shown_text(t));
            }
            (None, true) => out.push_str(" (line not readable)"),
            (_, false) => {
                withheld += 1;
                out.push_str(" (text not quoted)");
            }
        }
        let mut notes = Vec::new();
        if let Some(e) = loc.enclosing.as_deref().filter(|e| !e.is_empty()) {
            notes.push(format!("in {}", visible(e)));
        }
        if loc.declaration {
            notes.push("declaration".to_owned());
        }
        if !notes.is_empty() {
            let _ = write!(out, "  [{}]", notes.join("; "));
        }
        out.push('\n');
    }
    if total > limit {
        let _ = writeln!(out, "... {} more not shown ({total} found in all)", total - limit);
    }
    if withheld > 0 {
        let _ = writeln!(
            out,
            "The text of {} outside the project, the allowed directories and the libraries' sources (or in a sensitive file) is not quoted; read_file asks the user.",
            plural(withheld, "location", "locations")
        );
    }
    out.truncate(out.trim_end().len());
    out
}

/// The name of LSP's `SymbolKind` KIND (1 to 26).
pub fn symbol_kind(kind: i64) -> &'static str {
    const KINDS: [&str; 26] = [
        "file",
        "module",
        "namespace",
        "package",
        "class",
        "method",
        "property",
        "field",
        "constructor",
        "enum",
        "interface",
        "function",
        "variable",
        "constant",
        "string",
        "number",
        "boolean",
        "array",
        "object",
        "key",
        "null",
        "enum member",
        "struct",
        "event",
        "operator",
        "type parameter",
    ];
    kind.checked_sub(1)
        .and_then(|i| usize::try_from(i).ok())
        .and_then(|i| KINDS.get(i))
        .copied()
        .unwrap_or("symbol")
}

/// One symbol of an outline.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OutlineItem {
    /// The symbol's name.
    pub name: String,
    /// Its kind as a word (`class`, `function`...).
    pub kind: String,
    /// Its first line, 1-based.
    pub start: usize,
    /// Its last line, 1-based.
    pub end: usize,
    /// Its depth when the source nests symbols (LSP's `DocumentSymbol`, imenu); `None` to nest
    /// by the lines' ranges (LSP's flat `SymbolInformation`).
    pub depth: Option<usize>,
}

/// Depths for ITEMS nested by their ranges: a symbol is inside the nearest earlier one whose
/// range holds it. ITEMS come back sorted by start line (then the widest first).
pub fn nest_by_ranges(items: &mut [OutlineItem]) {
    items.sort_by(|a, b| a.start.cmp(&b.start).then_with(|| b.end.cmp(&a.end)));
    let mut open: Vec<usize> = Vec::new(); // end lines of the enclosing symbols
    for item in items.iter_mut() {
        while open.last().is_some_and(|&end| item.start > end || item.end > end) {
            open.pop();
        }
        item.depth = Some(open.len());
        open.push(item.end.max(item.start));
    }
}

/// The outline of FILE (as shown) from SOURCE: one symbol per line as `KIND NAME (lines A-B)`,
/// indented two spaces per level; at most LIMIT symbols, and the cut said.
pub fn format_outline(file: &str, source: &str, mut items: Vec<OutlineItem>, limit: usize) -> String {
    let file = visible(file);
    if items.is_empty() {
        return format!("No symbols found in {file} (source: {source}).");
    }
    if items.iter().any(|i| i.depth.is_none()) {
        nest_by_ranges(&mut items);
    }
    let total = items.len();
    let mut out = format!(
        "Outline of {file}: {} (source: {source}):\n",
        plural(total, "symbol", "symbols")
    );
    let level = |item: &OutlineItem| item.depth.unwrap_or(0).min(64);
    // Over the limit, the outer levels are kept whole: the deepest symbols (a function's
    // local names, say) are left out first, so the top level is never lost to them.
    let mut deepest = 64;
    if total > limit {
        deepest = 0;
        while deepest < 64 && items.iter().filter(|i| level(i) <= deepest + 1).count() <= limit {
            deepest += 1;
        }
    }
    let shown: Vec<&OutlineItem> = items.iter().filter(|i| level(i) <= deepest).take(limit).collect();
    for item in &shown {
        let depth = level(item);
        let lines = if item.end > item.start {
            format!("lines {}-{}", item.start, item.end)
        } else {
            format!("line {}", item.start)
        };
        let _ = writeln!(
            out,
            "{}{} {} ({lines})",
            "  ".repeat(depth),
            visible(&item.kind),
            visible(&item.name)
        );
    }
    if shown.len() < total {
        let hidden = total - shown.len();
        if items.iter().filter(|i| level(i) <= deepest).count() > shown.len() {
            let _ = writeln!(out, "... {hidden} more not shown ({total} in all)");
        } else {
            let _ = writeln!(
                out,
                "... {hidden} more not shown ({total} in all): those nested {} or more levels deep",
                deepest + 1
            );
        }
    }
    out.truncate(out.trim_end().len());
    out
}

/// One symbol found by `workspace_symbols`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SymbolItem {
    /// The symbol's name.
    pub name: String,
    /// Its kind as a word.
    pub kind: String,
    /// The file's absolute name.
    pub file: String,
    /// Its line, 1-based.
    pub line: usize,
    /// The symbol that contains it, when the source says.
    pub container: Option<String>,
}

/// The symbols matching QUERY from SOURCE, one per line as `FILE:LINE: KIND NAME [in C]`; at
/// most LIMIT, and the cut said.
pub fn format_symbols(query: &str, source: &str, root: Option<&str>, items: Vec<SymbolItem>, limit: usize) -> String {
    let query = visible(query);
    if items.is_empty() {
        return format!("No symbols found for '{query}' (source: {source}).");
    }
    let total = items.len();
    let mut out = format!(
        "Symbols matching '{query}': {} (source: {source}):\n",
        plural(total, "symbol", "symbols")
    );
    for item in items.iter().take(limit) {
        let _ = write!(
            out,
            "{}:{}: {} {}",
            shown_path(&item.file, root),
            item.line,
            visible(&item.kind),
            visible(&item.name)
        );
        if let Some(c) = item.container.as_deref().filter(|c| !c.is_empty()) {
            let _ = write!(out, "  [in {}]", visible(c));
        }
        out.push('\n');
    }
    if total > limit {
        let _ = writeln!(out, "... {} more not shown ({total} found in all)", total - limit);
    }
    out.truncate(out.trim_end().len());
    out
}

/// A diagnostic's severity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// An error.
    Error,
    /// A warning.
    Warning,
    /// Information.
    Info,
    /// A hint.
    Hint,
}

impl Severity {
    /// LSP's `DiagnosticSeverity` (1 error, 2 warning, 3 information, 4 hint); an unknown one is
    /// an error, as the protocol says a missing severity is for the client to decide.
    pub fn from_lsp(n: i64) -> Severity {
        match n {
            2 => Severity::Warning,
            3 => Severity::Info,
            4 => Severity::Hint,
            _ => Severity::Error,
        }
    }

    /// A severity from a word: Flymake's types (`error`, `warning`, `note`, and eglot's
    /// `eglot-note`...) and Flycheck's levels (`error`, `warning`, `info`).
    pub fn from_word(word: &str) -> Severity {
        let w = word.trim_start_matches(':').to_ascii_lowercase();
        if w.contains("error") {
            Severity::Error
        } else if w.contains("warn") {
            Severity::Warning
        } else if w.contains("hint") {
            Severity::Hint
        } else {
            Severity::Info
        }
    }

    /// The word for it.
    pub fn word(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
            Severity::Hint => "hint",
        }
    }
}

/// One diagnostic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file's absolute name.
    pub file: String,
    /// The line, 1-based.
    pub line: usize,
    /// The column, 0-based characters.
    pub column: usize,
    /// Its severity.
    pub severity: Severity,
    /// What reported it (`Pyright`, `python-flake8`...), when known.
    pub source: Option<String>,
    /// Its code (`reportUndefinedVariable`...), when known.
    pub code: Option<String>,
    /// The message.
    pub message: String,
}

/// The diagnostics of SUBJECT (a file as shown, or the project) from SOURCE, one per line as
/// `FILE:LINE:COLUMN: SEVERITY [SOURCE CODE]: MESSAGE`, sorted by file and position, counted by
/// severity; at most LIMIT, and the cut said. UNCHECKED names the files that could not be checked
/// (at most a few are named).
pub fn format_diagnostics(
    subject: &str,
    source: &str,
    root: Option<&str>,
    mut items: Vec<Diagnostic>,
    limit: usize,
    unchecked: &[String],
) -> String {
    items.sort_by(|a, b| {
        (a.file.as_str(), a.line, a.column, a.severity).cmp(&(b.file.as_str(), b.line, b.column, b.severity))
    });
    items.dedup();
    let subject = visible(subject);
    let mut out = String::new();
    if items.is_empty() {
        let _ = writeln!(out, "No diagnostics for {subject} (source: {source}).");
    } else {
        let count = |s: Severity| items.iter().filter(|d| d.severity == s).count();
        let _ = writeln!(
            out,
            "Diagnostics for {subject}: {}, {}, {} info, {} (source: {source}):",
            plural(count(Severity::Error), "error", "errors"),
            plural(count(Severity::Warning), "warning", "warnings"),
            count(Severity::Info),
            plural(count(Severity::Hint), "hint", "hints"),
        );
        for d in items.iter().take(limit) {
            let _ = write!(
                out,
                "{}:{}:{}: {}",
                shown_path(&d.file, root),
                d.line,
                d.column + 1,
                d.severity.word()
            );
            let tag: Vec<String> = [&d.source, &d.code]
                .into_iter()
                .flatten()
                .filter(|s| !s.is_empty())
                .map(|s| visible(s))
                .collect();
            if !tag.is_empty() {
                let _ = write!(out, " [{}]", tag.join(" "));
            }
            let message = d.message.trim().replace('\n', " ");
            let _ = writeln!(out, ": {}", visible(&message));
        }
        if items.len() > limit {
            let _ = writeln!(
                out,
                "... {} more not shown ({} in all)",
                items.len() - limit,
                items.len()
            );
        }
    }
    if !unchecked.is_empty() {
        let named: Vec<String> = unchecked.iter().take(10).map(|f| shown_path(f, root)).collect();
        let _ = writeln!(
            out,
            "Not checked ({}): {}{}",
            plural(unchecked.len(), "file", "files"),
            visible(&named.join(", ")),
            if unchecked.len() > named.len() {
                format!(", and {} more", unchecked.len() - named.len())
            } else {
                String::new()
            }
        );
    }
    out.truncate(out.trim_end().len());
    out
}

/// The largest file (in MB) `diagnostics` of a project opens to a language server; the Emacs side
/// holds to it (`agent-q-code--max-opened-bytes`).
pub const MAX_OPENED_MB: u64 = 4;

/// What `diagnostics` of a whole project checked, and what it did not, with why.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProjectCheck {
    /// Files open in Emacs whose diagnostics were read (Flymake, Flycheck, a server's store).
    pub visited: usize,
    /// Files not visited that a running server had already reported on.
    pub reported: usize,
    /// Files not visited that were opened to a server for this call and reported on.
    pub opened: usize,
    /// Files opened to a server for this call that it did not report on within the wait.
    pub silent: Vec<String>,
    /// Files a running server takes, beyond the most opened per call.
    pub beyond: Vec<String>,
    /// Files not visited that no running server takes.
    pub no_server: Vec<String>,
    /// Files a running server takes that are too large to open to it for a call.
    pub too_large: Vec<String>,
    /// Whether a language server runs for the project.
    pub servers: bool,
    /// The most files opened to servers per call (`agent-q-code-diagnostics-max-files`).
    pub max_files: usize,
    /// Seconds waited for the servers' reports (`agent-q-code-diagnostics-wait`).
    pub wait: f64,
}

/// At most ten of FILES as shown relative to ROOT, and how many more.
fn named_files(files: &[String], root: Option<&str>) -> String {
    let named: Vec<String> = files.iter().take(10).map(|f| shown_path(f, root)).collect();
    let more = files.len().saturating_sub(named.len());
    format!(
        "{}{}",
        visible(&named.join(", ")),
        if more > 0 {
            format!(", and {more} more")
        } else {
            String::new()
        }
    )
}

/// The lines that follow a project's diagnostics: what was checked and how, then each reason
/// files were not checked, with (some of) their names relative to ROOT.
pub fn format_project_check(check: &ProjectCheck, root: Option<&str>) -> String {
    let mut parts = vec![format!("{} open in Emacs", plural(check.visited, "file", "files"))];
    if check.reported > 0 {
        parts.push(format!(
            "{} not visited that a language server had reported on",
            plural(check.reported, "file", "files")
        ));
    }
    if check.opened > 0 {
        parts.push(format!(
            "{} not visited, opened to a language server for this call",
            plural(check.opened, "file", "files")
        ));
    }
    let mut out = format!("Checked: {}.", parts.join("; "));
    if !check.servers {
        out.push_str(
            "\nNot checked: the project's files not visited, as no language server runs for the \
             project (give file to check one: it is opened for its server).",
        );
        return out;
    }
    if !check.silent.is_empty() {
        let _ = write!(
            out,
            "\nNot checked ({}): opened to a language server, which reported nothing on them within {} s \
             (agent-q-code-diagnostics-wait): {}",
            plural(check.silent.len(), "file", "files"),
            check.wait,
            named_files(&check.silent, root)
        );
    }
    if !check.beyond.is_empty() {
        let _ = write!(
            out,
            "\nNot checked ({}): beyond the {} files opened to a language server per call \
             (agent-q-code-diagnostics-max-files): {}",
            plural(check.beyond.len(), "file", "files"),
            check.max_files,
            named_files(&check.beyond, root)
        );
    }
    if !check.too_large.is_empty() {
        let _ = write!(
            out,
            "\nNot checked ({}): over {} MB, not opened to a language server: {}",
            plural(check.too_large.len(), "file", "files"),
            MAX_OPENED_MB,
            named_files(&check.too_large, root)
        );
    }
    if !check.no_server.is_empty() {
        let _ = write!(
            out,
            "\nNot checked ({}): no running language server takes them: {}",
            plural(check.no_server.len(), "file", "files"),
            named_files(&check.no_server, root)
        );
    }
    out
}

/// `type_at`'s answer: the server's hover TEXT at LOCATION (as shown) from SOURCE.
pub fn format_hover(location: &str, source: &str, text: &str) -> String {
    let text = text.trim();
    if text.is_empty() {
        return format!("No type information at {} (source: {source}).", visible(location));
    }
    // The hover text is shown as the server wrote it (several lines), hidden characters made
    // visible line by line.
    let body: Vec<String> = text.lines().map(visible).collect();
    format!("Type at {} (source: {source}):\n{}", visible(location), body.join("\n"))
}

/// Order locations as [`format_locations`] does (for callers that cut before formatting).
pub fn location_order(a: &Location, b: &Location) -> Ordering {
    (a.file.as_str(), a.line, a.column).cmp(&(b.file.as_str(), b.line, b.column))
}
