//! Emacs regexps searched in linear time: the core of `search_in_buffer`'s regex mode.
//!
//! Emacs's own regexp engine backtracks, so a pattern an LLM writes, such as
//! `\(a*\)*\(a*\)*c` on a line of 25 `a`s, can freeze Emacs for minutes. Here the Emacs pattern is
//! translated into the syntax of the [`regex`] crate, whose matching time is linear in the text,
//! and the text is searched in Rust. Match positions are CHARACTER offsets (0-based, end
//! exclusive), as Emacs counts, and successive matches follow Emacs's `re-search-forward` loop:
//! the next search starts where the last match ended, one character further after an empty match.
//!
//! # What is translated
//!
//! Exactly: groups `\(` `\)`, shy groups `\(?:`, numbered groups `\(?N:` (as plain groups: only
//! the whole match is reported), alternation `\|`, intervals `\{n\}` `\{n,\}` `\{,m\}` `\{n,m\}`,
//! `*` `+` `?` and the non-greedy `*?` `+?` `??` (a run such as `**` or `+?*` collapses the way
//! Emacs collapses it; an operator with nothing before it is a literal, as in Emacs), `.` (any
//! character but newline), bracket sets with `]` first, `^` negation, ranges (a reversed range
//! is empty) and backslash taken literally, `^` and `$` as line anchors only where Emacs treats
//! them as anchors (`^` at the start of the pattern or after `\(`, `\(?:` or `\|`; `$` at the end
//! or before `\)` or `\|`; elsewhere they are literal characters), buffer anchors `` \` `` and
//! `\'`, and literal `(`, `)`, `|`, `{`, `}`. Any other backslashed character is itself. As in
//! Emacs, the zero-width assertions `^` `$` `` \` `` `\'` `\b` `\B` do not start a repeatable
//! item: in ``a\`*`` the `*` repeats `a` together with the assertion (while `\<`, `\>`, `\_<`,
//! `\_>` can be repeated themselves).
//!
//! Approximated (Emacs decides these with the buffer's syntax table and case table; here a fixed
//! table close to Emacs's standard syntax table is used):
//! - `\w` / `\W`, `\sw` / `\Sw`: Unicode word characters except `_`.
//! - `\b`, `\B`, `\<`, `\>`: the [`regex`] crate's Unicode word boundaries, whose word
//!   characters include `_` (so `\bbar` does not match inside `foo_bar`, unlike Emacs). `\b`
//!   also matches at the start and end of the text, as in Emacs; `\B` there matches when the
//!   adjacent character is not a word character (Emacs's never matches there).
//! - `\_<`, `\_>` (symbol boundaries): symbol constituents are taken to be word characters plus
//!   [`SYMBOL_CHARS`]. At the very start or end of a pattern without top-level `\|` (the usual
//!   `\_<NAME\_>`), the boundary is checked on each match: a match that fails the check is
//!   dropped and the search resumes one character after its start. That is exact when the
//!   match's extent at a given start cannot vary (as for `\_<NAME\_>`); otherwise Emacs may
//!   backtrack to a shorter match that passes where this drops the match. Elsewhere (or when
//!   repeated) the boundary is approximated by a word-start / word-end boundary.
//! - `\s-` / `\s ` (whitespace: Unicode white space), `\s_` (symbol: [`SYMBOL_CHARS`]), `\s.`
//!   (punctuation: [`PUNCTUATION_CHARS`] and non-ASCII Unicode punctuation), `\s(` `\s)`
//!   (brackets), `\s"` (double quote), `\s\` (backslash), and their `\S` negations.
//! - `[[:class:]]` classes map to Unicode properties (`alpha`, `alnum`, `upper`, `lower`,
//!   `punct`, `space`, `blank`, `graph`, `print`, `word`) or exact ranges (`digit`, `xdigit`,
//!   `cntrl`, `ascii`, `nonascii`, `unibyte`, `multibyte`).
//! - A repetition (or interval) over something that can match the empty string, such as
//!   `\(?:$\|x\)+` or `a*\{2,\}`: Emacs's loop stops at the first iteration that matched
//!   nothing, the [`regex`] crate's may go on.
//! - Case folding (`case_fold`, Emacs's `case-fold-search`) uses Unicode simple case folding
//!   rather than the buffer's case table.
//!
//! Refused with a [`SearchError::Unsupported`] naming the construct: back-references `\1`..`\9`,
//! `\=` (point), categories `\cC` / `\CC`, and syntax classes that depend entirely on the mode
//! (comments `\s<` `\s>`, and `\s'` `\s$` `\s|` `\s!` `\s/` `\s@`).

use regex::{Regex, RegexBuilder};
use thiserror::Error;

/// Characters taken to have symbol syntax (Emacs's standard syntax table: `_-+*/&|<>=`).
pub const SYMBOL_CHARS: &str = "_-+*/&|<>=";

/// ASCII characters taken to have punctuation syntax (Emacs's standard syntax table).
pub const PUNCTUATION_CHARS: &str = ".,;:?!#@~^'`";

/// The longest Emacs pattern accepted, in characters.
pub const MAX_PATTERN_CHARS: usize = 10_000;

/// The size limit of a compiled regex, in bytes ([`RegexBuilder::size_limit`]).
pub const SIZE_LIMIT: usize = 10 * (1 << 20);

/// A word start (`\<`; also `\_<` where it is approximated).
const WORD_START: &str = "(?:\\b{start})";

/// A word end (`\>`; also `\_>` where it is approximated).
const WORD_END: &str = "(?:\\b{end})";

/// The largest repetition count Emacs accepts (`RE_DUP_MAX`).
const DUP_MAX: u32 = 0xFFFF;

/// Why a pattern cannot be searched for.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SearchError {
    /// A construct with no linear-time equivalent, or that depends on Emacs state.
    #[error("Unsupported regexp construct {construct} at character {position}: {reason}")]
    Unsupported {
        /// The construct as written, e.g. `\1`.
        construct: String,
        /// 0-based character index in the pattern.
        position: usize,
        /// Why it is refused.
        reason: String,
    },
    /// A pattern that is not a valid Emacs regexp.
    #[error("Invalid regexp at character {position}: {problem}")]
    Invalid {
        /// 0-based character index in the pattern.
        position: usize,
        /// What is wrong.
        problem: String,
    },
    /// A pattern too long, or one whose compiled form exceeds [`SIZE_LIMIT`].
    #[error("Regexp too large: {0}")]
    TooLarge(String),
    /// The translated pattern was rejected by the regex engine (a translation bug).
    #[error("Regexp could not be compiled: {0}")]
    Engine(String),
}

/// A translated pattern, with the symbol-boundary checks to apply to each match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Translation {
    /// The pattern in [`regex`] syntax.
    pub pattern: String,
    /// Each match must start at a symbol start (`\_<` at the start of the Emacs pattern).
    pub symbol_start: bool,
    /// Each match must end at a symbol end (`\_>` at the end of the Emacs pattern).
    pub symbol_end: bool,
}

/// The matches found by [`search`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SearchResult {
    /// The first matches (at most the `max` asked for), as (start, end) character offsets.
    pub matches: Vec<(usize, usize)>,
    /// How many matches there are in all.
    pub total: usize,
}

/// One alternative being built: its pieces, and which piece a repetition operator applies to.
#[derive(Default)]
struct Seq {
    pieces: Vec<String>,
    last: Option<usize>,
    /// The last piece is a literal character in a run of them (Emacs's `exactn`).
    in_run: bool,
}

impl Seq {
    fn atom(&mut self, s: impl Into<String>) {
        self.pieces.push(s.into());
        self.last = Some(self.pieces.len() - 1);
        self.in_run = false;
    }
    /// A literal character. As in Emacs, consecutive literals form one run and a repetition
    /// applies to the run's start onwards, except that a literal followed by a repetition
    /// operator (`*+?^` or `\{`, FOLLOWED) starts a run of its own. The difference shows only
    /// when an assertion sits between the run and the operator (`ab\b*` repeats `ab\b`).
    fn literal(&mut self, s: String, followed: bool) {
        if self.in_run && !followed {
            self.pieces.push(s);
        } else {
            self.atom(s);
        }
        self.in_run = true;
    }
    /// A zero-width assertion: as in Emacs, it does not start a new repeatable item, so a
    /// repetition operator after it repeats the previous atom together with the assertion.
    fn anchor(&mut self, s: &str) {
        self.pieces.push(s.to_string());
        self.in_run = false;
    }
    /// Apply the repetition SUFFIX to the last atom and the assertions after it.
    fn repeat(&mut self, suffix: &str) {
        if let Some(k) = self.last {
            let body = self.pieces.split_off(k).concat();
            self.pieces.push(format!("(?:{body}){suffix}"));
            self.last = Some(k);
        }
        self.in_run = false;
    }
    fn concat(&self) -> String {
        self.pieces.concat()
    }
}

/// A group being built.
struct Frame {
    alts: Vec<String>,
    seq: Seq,
    open: usize,
}

impl Frame {
    fn new(open: usize) -> Self {
        Frame {
            alts: Vec::new(),
            seq: Seq::default(),
            open,
        }
    }
    fn finish(mut self) -> String {
        self.alts.push(self.seq.concat());
        self.alts.join("|")
    }
}

fn invalid<T>(position: usize, problem: impl Into<String>) -> Result<T, SearchError> {
    Err(SearchError::Invalid {
        position,
        problem: problem.into(),
    })
}

fn unsupported<T>(position: usize, construct: impl Into<String>, reason: impl Into<String>) -> Result<T, SearchError> {
    Err(SearchError::Unsupported {
        construct: construct.into(),
        position,
        reason: reason.into(),
    })
}

/// A character written for use inside a regex class: alphanumerics as is, the rest escaped.
fn class_char(c: char) -> String {
    if c.is_ascii_alphanumeric() {
        c.to_string()
    } else {
        format!("\\x{{{:X}}}", c as u32)
    }
}

/// A class (or its negation) of the literal characters CHARS.
fn class_of(chars: &str, negate: bool) -> String {
    let body: String = chars.chars().map(class_char).collect();
    format!("[{}{}]", if negate { "^" } else { "" }, body)
}

/// The regex for syntax class CODE (`\sCODE`, or `\SCODE` when NEGATE), or an error.
fn syntax_class(code: char, negate: bool, position: usize) -> Result<String, SearchError> {
    let n = if negate { "^" } else { "" };
    let construct = format!("\\{}{}", if negate { 'S' } else { 's' }, code);
    Ok(match code {
        ' ' | '-' => (if negate { "\\S" } else { "\\s" }).to_string(),
        'w' => (if negate { "[\\W_]" } else { "[\\w--_]" }).to_string(),
        '_' => class_of(SYMBOL_CHARS, negate),
        '.' => {
            let ascii: String = PUNCTUATION_CHARS.chars().map(class_char).collect();
            format!("[{n}{ascii}[\\p{{P}}--\\x{{0}}-\\x{{7F}}]]")
        }
        '(' => class_of("([{", negate),
        ')' => class_of(")]}", negate),
        '"' => class_of("\"", negate),
        '\\' => class_of("\\", negate),
        '\'' | '<' | '>' | '!' | '|' | '$' | '/' | '@' => {
            return unsupported(
                position,
                construct,
                "this syntax class depends on the buffer's major mode; use an explicit [...] set",
            )
        }
        _ => return invalid(position, format!("invalid syntax class {construct}")),
    })
}

/// The regex class items for the Emacs character class NAME (`[:NAME:]`), if it is one.
fn named_class(name: &str) -> Option<&'static str> {
    Some(match name {
        "alpha" => "\\p{Alphabetic}",
        "alnum" => "\\p{Alphabetic}\\p{Nd}",
        "digit" => "0-9",
        "xdigit" => "0-9A-Fa-f",
        "space" => "\\s",
        "upper" => "\\p{Uppercase}",
        "lower" => "\\p{Lowercase}",
        "punct" => "\\x{21}-\\x{2F}\\x{3A}-\\x{40}\\x{5B}-\\x{60}\\x{7B}-\\x{7E}\\p{P}\\p{S}",
        "cntrl" => "\\x{0}-\\x{1F}",
        "blank" => "\\p{Zs}\\t",
        "graph" => "[^\\p{Z}\\p{C}]",
        "print" => "[^\\p{C}]",
        "word" => "[\\w--_]",
        "ascii" | "unibyte" => "\\x{0}-\\x{7F}",
        "nonascii" | "multibyte" => "\\x{80}-\\x{10FFFF}",
        _ => return None,
    })
}

/// Translate the bracket set starting at `p[start]` (`[`); return the regex and the index after.
fn bracket(p: &[char], start: usize) -> Result<(String, usize), SearchError> {
    let mut i = start + 1;
    let negate = p.get(i) == Some(&'^');
    if negate {
        i += 1;
    }
    let mut items = String::new();
    let mut first = true;
    loop {
        let Some(&c) = p.get(i) else {
            return invalid(start, "unmatched [ or [^");
        };
        if c == ']' && !first {
            i += 1;
            break;
        }
        first = false;
        // A character class [:name:].
        if c == '[' && p.get(i + 1) == Some(&':') {
            let rest = &p[i + 2..];
            if let Some(colon) = rest.iter().position(|&x| x == ':') {
                if rest.get(colon + 1) == Some(&']') {
                    let name: String = rest[..colon].iter().collect();
                    match named_class(&name) {
                        Some(items_of) => items.push_str(items_of),
                        None => return invalid(i, format!("invalid character class name [:{name}:]")),
                    }
                    i += 2 + colon + 2;
                    continue;
                }
            }
        }
        // A range c-d (a '-' just before the closing ']' is literal).
        if p.get(i + 1) == Some(&'-') {
            if let Some(&d) = p.get(i + 2) {
                if d != ']' {
                    if c <= d {
                        items.push_str(&format!("{}-{}", class_char(c), class_char(d)));
                    }
                    i += 3;
                    continue;
                }
            }
        }
        items.push_str(&class_char(c));
        i += 1;
    }
    let class = match (items.is_empty(), negate) {
        (true, false) => "[^\\x{0}-\\x{10FFFF}]".to_string(),
        (true, true) => "[\\x{0}-\\x{10FFFF}]".to_string(),
        (false, _) => format!("[{}{}]", if negate { "^" } else { "" }, items),
    };
    Ok((class, i))
}

/// Whether the pattern at `p[at]` starts with a repetition operator (for literal runs).
fn repetition_follows(p: &[char], at: usize) -> bool {
    matches!(p.get(at), Some('*' | '+' | '?' | '^')) || (p.get(at) == Some(&'\\') && p.get(at + 1) == Some(&'{'))
}

/// Read a decimal repetition count at `p[*i]` (empty gives None).
fn count(p: &[char], i: &mut usize, open: usize) -> Result<Option<u32>, SearchError> {
    let begin = *i;
    let mut n: u32 = 0;
    while let Some(d) = p.get(*i).and_then(|c| c.to_digit(10)) {
        n = n.saturating_mul(10).saturating_add(d);
        *i += 1;
    }
    if *i == begin {
        return Ok(None);
    }
    if n > DUP_MAX {
        return invalid(open, format!("repetition count {n} exceeds {DUP_MAX}"));
    }
    Ok(Some(n))
}

/// Translate the Emacs regexp PATTERN into [`regex`] syntax.
pub fn translate(pattern: &str) -> Result<Translation, SearchError> {
    let p: Vec<char> = pattern.chars().collect();
    if p.len() > MAX_PATTERN_CHARS {
        return Err(SearchError::TooLarge(format!(
            "the pattern has {} characters, at most {MAX_PATTERN_CHARS} are accepted",
            p.len()
        )));
    }
    let mut stack: Vec<Frame> = vec![Frame::new(0)];
    // Whether the previous token opened a group or an alternative (where `^` is an anchor).
    let mut at_begline = true;
    let mut symbol_start = false;
    let mut symbol_end = false;
    let mut i = 0;
    while i < p.len() {
        let c = p[i];
        let begline = at_begline;
        at_begline = false;
        let depth = stack.len();
        let Some(frame) = stack.last_mut() else {
            return Err(SearchError::Engine("group stack empty".into()));
        };
        let seq = &mut frame.seq;
        match c {
            '^' if begline => {
                seq.anchor("(?m:^)");
                i += 1;
            }
            '$' if i + 1 == p.len() || (p[i + 1] == '\\' && matches!(p.get(i + 2), Some(')') | Some('|'))) => {
                seq.anchor("(?m:$)");
                i += 1;
            }
            '*' | '+' | '?' if seq.last.is_some() => {
                let (mut zero, mut many, mut greedy) = (false, false, true);
                let mut op = c;
                loop {
                    if op == '?' && (zero || many) {
                        greedy = false;
                    } else {
                        zero |= op != '+';
                        many |= op != '?';
                    }
                    i += 1;
                    match p.get(i) {
                        Some(&next @ ('*' | '+' | '?')) => op = next,
                        _ => break,
                    }
                }
                let suffix = match (zero, many) {
                    (true, true) => "*",
                    (false, _) => "+",
                    (true, false) => "?",
                };
                let lazy = if greedy { "" } else { "?" };
                seq.repeat(&format!("{suffix}{lazy}"));
            }
            '.' => {
                seq.atom("[^\\n]");
                i += 1;
            }
            '[' => {
                let (class, next) = bracket(&p, i)?;
                seq.atom(class);
                i = next;
            }
            '\\' => {
                let Some(&e) = p.get(i + 1) else {
                    return invalid(i, "trailing backslash");
                };
                let here = i;
                i += 2;
                match e {
                    '(' => {
                        if p.get(i) == Some(&'?') {
                            let mut j = i + 1;
                            while p.get(j).is_some_and(|c| c.is_ascii_digit()) {
                                j += 1;
                            }
                            if p.get(j) != Some(&':') {
                                return invalid(here, "invalid \\(? group: expected \\(?: or \\(?N:");
                            }
                            i = j + 1;
                        }
                        stack.push(Frame::new(here));
                        at_begline = true;
                    }
                    ')' => {
                        if depth == 1 {
                            return invalid(here, "unmatched \\)");
                        }
                        let Some(done) = stack.pop() else {
                            return invalid(here, "unmatched \\)");
                        };
                        let group = format!("(?:{})", done.finish());
                        if let Some(parent) = stack.last_mut() {
                            parent.seq.atom(group);
                        }
                    }
                    '|' => {
                        let finished = std::mem::take(seq).concat();
                        frame.alts.push(finished);
                        at_begline = true;
                    }
                    '{' => {
                        let mut j = i;
                        let lower = count(&p, &mut j, here)?.unwrap_or(0);
                        let upper = if p.get(j) == Some(&',') {
                            j += 1;
                            count(&p, &mut j, here)?
                        } else {
                            Some(lower)
                        };
                        if p.get(j) != Some(&'\\') || p.get(j + 1) != Some(&'}') {
                            return invalid(here, "invalid \\{...\\} interval");
                        }
                        if upper.is_some_and(|u| u < lower) {
                            return invalid(here, "interval \\{n,m\\} with m < n");
                        }
                        if seq.last.is_some() {
                            let bounds = match upper {
                                Some(u) if u == lower => format!("{{{lower}}}"),
                                Some(u) => format!("{{{lower},{u}}}"),
                                None => format!("{{{lower},}}"),
                            };
                            seq.repeat(&bounds);
                            i = j + 2;
                        } else {
                            // As in Emacs: with nothing to repeat, `\{` is a literal `{`.
                            seq.literal("\\{".into(), repetition_follows(&p, i));
                        }
                    }
                    '1'..='9' => {
                        return unsupported(
                            here,
                            format!("\\{e}"),
                            "back-references cannot be matched in linear time",
                        )
                    }
                    '=' => return unsupported(here, "\\=", "point is not known to the search"),
                    'c' | 'C' => {
                        let cat = p.get(i).map(|c| c.to_string()).unwrap_or_default();
                        return unsupported(here, format!("\\{e}{cat}"), "character categories are not supported");
                    }
                    's' | 'S' => {
                        let Some(&code) = p.get(i) else {
                            return invalid(here, format!("\\{e} without a syntax class"));
                        };
                        seq.atom(syntax_class(code, e == 'S', here)?);
                        i += 1;
                    }
                    'w' => seq.atom("[\\w--_]"),
                    'W' => seq.atom("[\\W_]"),
                    '`' => seq.anchor("\\A"),
                    '\'' => seq.anchor("\\z"),
                    // Emacs's \b also matches at the start and end of the buffer.
                    'b' => seq.anchor("(?:\\b|\\A|\\z)"),
                    'B' => seq.anchor("\\B"),
                    // Unlike \b, Emacs lets these (and \_< \_>) be repeated.
                    '<' => seq.atom(WORD_START),
                    '>' => seq.atom(WORD_END),
                    '_' => match p.get(i) {
                        Some('<') => {
                            i += 1;
                            if depth == 1 && frame.alts.is_empty() && seq.pieces.is_empty() {
                                symbol_start = true;
                            }
                            seq.atom(WORD_START);
                        }
                        Some('>') => {
                            i += 1;
                            symbol_end = depth == 1 && i == p.len();
                            seq.atom(WORD_END);
                        }
                        _ => return invalid(here, "\\_ must be followed by < or >"),
                    },
                    other => seq.literal(regex::escape(other.encode_utf8(&mut [0; 4])), repetition_follows(&p, i)),
                }
            }
            other => {
                i += 1;
                seq.literal(regex::escape(other.encode_utf8(&mut [0; 4])), repetition_follows(&p, i));
            }
        }
    }
    if stack.len() > 1 {
        let open = stack.last().map_or(0, |f| f.open);
        return invalid(open, "unmatched \\(");
    }
    let Some(mut top) = stack.pop() else {
        return Err(SearchError::Engine("group stack empty".into()));
    };
    let has_alternation = !top.alts.is_empty();
    // Edge symbol boundaries are checked on each match instead of approximated.
    // (Only when the boundary was not repeated, which leaves its piece as it was written.)
    let symbol_start = symbol_start && !has_alternation && top.seq.pieces.first().is_some_and(|p| p == WORD_START);
    let symbol_end = symbol_end && !has_alternation && top.seq.pieces.last().is_some_and(|p| p == WORD_END);
    if symbol_start {
        if let Some(first) = top.seq.pieces.first_mut() {
            first.clear();
        }
    }
    if symbol_end {
        if let Some(last) = top.seq.pieces.last_mut() {
            last.clear();
        }
    }
    Ok(Translation {
        pattern: top.finish(),
        symbol_start,
        symbol_end,
    })
}

/// Compile a translated pattern, folding case when CASE_FOLD.
pub fn compile(translation: &Translation, case_fold: bool) -> Result<Regex, SearchError> {
    RegexBuilder::new(&translation.pattern)
        .case_insensitive(case_fold)
        .size_limit(SIZE_LIMIT)
        .dfa_size_limit(SIZE_LIMIT)
        .build()
        .map_err(|e| match e {
            regex::Error::CompiledTooBig(limit) => {
                SearchError::TooLarge(format!("the compiled pattern exceeds the size limit of {limit} bytes"))
            }
            other => SearchError::Engine(other.to_string()),
        })
}

/// Whether C counts as a symbol constituent (word character or one of [`SYMBOL_CHARS`]).
fn is_symbol_char(c: char) -> bool {
    c.is_alphanumeric() || SYMBOL_CHARS.contains(c)
}

/// Length in bytes of the character of TEXT at byte offset AT (1 past the end).
fn char_len(text: &str, at: usize) -> usize {
    text.get(at..).and_then(|s| s.chars().next()).map_or(1, char::len_utf8)
}

fn symbol_start_ok(text: &str, at: usize) -> bool {
    let before = text.get(..at).and_then(|s| s.chars().next_back());
    let after = text.get(at..).and_then(|s| s.chars().next());
    !before.is_some_and(is_symbol_char) && after.is_some_and(is_symbol_char)
}

fn symbol_end_ok(text: &str, at: usize) -> bool {
    let before = text.get(..at).and_then(|s| s.chars().next_back());
    let after = text.get(at..).and_then(|s| s.chars().next());
    before.is_some_and(is_symbol_char) && !after.is_some_and(is_symbol_char)
}

/// Search TEXT for the Emacs regexp PATTERN: every match, the first MAX as character offsets.
///
/// Matches are found as Emacs's `re-search-forward` loop finds them (leftmost-first, the next
/// search starting at the end of the last match, one character further after an empty match).
pub fn search(text: &str, pattern: &str, case_fold: bool, max: usize) -> Result<SearchResult, SearchError> {
    let translation = translate(pattern)?;
    let re = compile(&translation, case_fold)?;
    let mut result = SearchResult::default();
    // Byte offset -> character offset, converted incrementally (matches come in order).
    let (mut byte_at, mut char_at) = (0usize, 0usize);
    let mut to_chars = |b: usize| -> usize {
        if let Some(s) = text.get(byte_at..b) {
            char_at += s.chars().count();
            byte_at = b;
        }
        char_at
    };
    let mut pos = 0;
    while pos <= text.len() {
        let Some(m) = re.find_at(text, pos) else {
            break;
        };
        let ok = (!translation.symbol_start || symbol_start_ok(text, m.start()))
            && (!translation.symbol_end || symbol_end_ok(text, m.end()));
        if !ok {
            pos = m.start() + char_len(text, m.start());
            continue;
        }
        result.total += 1;
        if result.matches.len() < max {
            let start = to_chars(m.start());
            let end = to_chars(m.end());
            result.matches.push((start, end));
        }
        pos = if m.start() == m.end() {
            m.end() + char_len(text, m.end())
        } else {
            m.end()
        };
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tr(p: &str) -> String {
        match translate(p) {
            Ok(t) => t.pattern,
            Err(e) => panic!("translate {p:?}: {e}"),
        }
    }

    /// All matches of Emacs PATTERN in TEXT, case-sensitive, as (start, end) character offsets.
    fn find(p: &str, text: &str) -> Vec<(usize, usize)> {
        match search(text, p, false, usize::MAX) {
            Ok(r) => r.matches,
            Err(e) => panic!("search {p:?}: {e}"),
        }
    }

    /// The matched substrings.
    fn texts(p: &str, text: &str) -> Vec<String> {
        let chars: Vec<char> = text.chars().collect();
        find(p, text)
            .into_iter()
            .map(|(s, e)| chars[s..e].iter().collect())
            .collect()
    }

    fn refused(p: &str) -> SearchError {
        match translate(p) {
            Ok(t) => panic!("{p:?} translated to {:?}", t.pattern),
            Err(e) => e,
        }
    }

    #[test]
    fn catastrophic_pattern_is_linear() {
        let line = "a".repeat(25);
        assert_eq!(find(r"\(a*\)*\(a*\)*c", &line), vec![]);
        let mut text = "a".repeat(5000);
        text.push('c');
        assert_eq!(find(r"\(a*\)*\(a*\)*c", &text), vec![(0, 5001)]);
    }

    #[test]
    fn groups_and_alternation() {
        assert_eq!(tr(r"\(ab\)"), "(?:ab)");
        assert_eq!(tr(r"\(?:ab\)"), "(?:ab)");
        assert_eq!(tr(r"\(?12:ab\)"), "(?:ab)");
        assert_eq!(texts(r"fo\(o\|x\)", "fox foo fo"), vec!["fox", "foo"]);
        assert_eq!(texts(r"\(?:a\|b\)c", "ac bc cc"), vec!["ac", "bc"]);
        assert_eq!(texts(r"x\|yz", "yz x"), vec!["yz", "x"]);
        // Leftmost-first, as Emacs's backtracking engine: the first alternative wins.
        assert_eq!(texts(r"a\|ab", "ab"), vec!["a"]);
    }

    #[test]
    fn literal_metacharacters() {
        assert_eq!(texts("(a|b){2}", "x (a|b){2} y"), vec!["(a|b){2}"]);
        assert_eq!(texts(r"a\.b", "axb a.b"), vec!["a.b"]);
        assert_eq!(texts(r"\n", "n\n"), vec!["n"]);
        assert_eq!(texts(r"\\", r"a\b"), vec!["\\"]);
        assert_eq!(texts(r"\}", "}"), vec!["}"]);
        assert_eq!(texts("#&~-", "#&~-"), vec!["#&~-"]);
    }

    #[test]
    fn repetition_operators() {
        assert_eq!(texts("ab*", "a ab abbb"), vec!["a", "ab", "abbb"]);
        assert_eq!(texts("ab+", "a ab abbb"), vec!["ab", "abbb"]);
        assert_eq!(texts("ab?", "a ab abbb"), vec!["a", "ab", "ab"]);
        assert_eq!(texts("<.*>", "<a><b>"), vec!["<a><b>"]);
        assert_eq!(texts("<.*?>", "<a><b>"), vec!["<a>", "<b>"]);
        assert_eq!(texts("<.+?>", "<><a>"), vec!["<><a>"]);
        assert_eq!(texts("ab??", "ab"), vec!["a"]);
        // Runs collapse as in Emacs: `+*` is `*`, `?+` is `*`.
        assert_eq!(tr("a+*"), "(?:a)*");
        assert_eq!(tr("a?+"), "(?:a)*");
        assert_eq!(tr("a**"), "(?:a)*");
        assert_eq!(tr("a*??"), "(?:a)*?");
        // With nothing before it an operator is literal.
        assert_eq!(texts("*a", "b*a"), vec!["*a"]);
        assert_eq!(texts(r"\(*\)", "**"), vec!["*", "*"]);
        assert_eq!(texts(r"x\|+", "+x"), vec!["+", "x"]);
        assert_eq!(texts("^*", "*a\n*"), vec!["*", "*"]);
    }

    #[test]
    fn intervals() {
        assert_eq!(texts(r"a\{2\}", "a aa aaa"), vec!["aa", "aa"]);
        assert_eq!(texts(r"a\{2,3\}", "a aa aaaa"), vec!["aa", "aaa"]);
        assert_eq!(texts(r"a\{2,\}", "a aaaaa"), vec!["aaaaa"]);
        assert_eq!(texts(r"ba\{,1\}", "b ba baa"), vec!["b", "ba", "ba"]);
        assert_eq!(tr(r"a\{,\}"), "(?:a){0,}");
        // A repetition of a repetition applies to the whole.
        assert_eq!(texts(r"\(?:ab\)\{2\}?c", "c ababc"), vec!["c", "ababc"]);
        assert!(matches!(refused(r"a\{3,2\}"), SearchError::Invalid { .. }));
        assert!(matches!(refused(r"a\{2"), SearchError::Invalid { .. }));
        assert!(matches!(refused(r"a\{70000\}"), SearchError::Invalid { .. }));
        // Nothing to repeat: a literal brace.
        assert_eq!(texts(r"\{2\}", "{2}"), vec!["{2}"]);
    }

    #[test]
    fn dot_excludes_newline() {
        assert_eq!(texts("a.b", "a\nb axb"), vec!["axb"]);
        assert_eq!(texts(".", "é\n"), vec!["é"]);
    }

    #[test]
    fn bracket_sets() {
        assert_eq!(texts("[abc]+", "xabcax"), vec!["abca"]);
        assert_eq!(texts("[^abc]+", "xab\ny"), vec!["x", "\ny"]);
        assert_eq!(texts("[]a]", "]a"), vec!["]", "a"]);
        assert_eq!(texts("[^]a]", "]ab"), vec!["b"]);
        assert_eq!(texts("[a-c]", "abcd"), vec!["a", "b", "c"]);
        assert_eq!(texts("[a-]", "a-b"), vec!["a", "-"]);
        assert_eq!(texts("[-a]", "a-b"), vec!["a", "-"]);
        // Backslash is literal inside a set; so are ^ (not first), [ and &.
        assert_eq!(texts(r"[\n]", "n\\\n"), vec!["n", "\\"]);
        assert_eq!(texts("[a^[&]", "^[&b"), vec!["^", "[", "&"]);
        // A reversed range is empty.
        assert_eq!(texts("[z-a]", "az"), Vec::<String>::new());
        assert_eq!(texts("x[z-a]*", "x"), vec!["x"]);
        assert!(matches!(refused("[abc"), SearchError::Invalid { .. }));
    }

    #[test]
    fn character_classes() {
        assert_eq!(texts("[[:alpha:]]+", "abé1 ç"), vec!["abé", "ç"]);
        assert_eq!(texts("[[:digit:]]+", "a12b٣"), vec!["12"]);
        assert_eq!(texts("[[:alnum:]_]+", "a_1 b"), vec!["a_1", "b"]);
        assert_eq!(texts("[[:space:]]+", "a \tb"), vec![" \t"]);
        assert_eq!(texts("[[:upper:]]", "aBÉ"), vec!["B", "É"]);
        assert_eq!(texts("[[:lower:]]", "aBé"), vec!["a", "é"]);
        assert_eq!(texts("[[:xdigit:]]+", "0xfFg"), vec!["0", "fF"]);
        assert_eq!(texts("[[:punct:]]", "a,b!"), vec![",", "!"]);
        assert_eq!(texts("[^[:ascii:]]", "aé"), vec!["é"]);
        assert_eq!(texts("[[:nonascii:]]", "aé"), vec!["é"]);
        assert_eq!(texts("[[:blank:]]", "a \n\tb"), vec![" ", "\t"]);
        assert_eq!(texts("[[:cntrl:]]", "a\u{1}"), vec!["\u{1}"]);
        assert_eq!(texts("[[:word:]]+", "ab_c"), vec!["ab", "c"]);
        assert_eq!(texts("[[:graph:]]+", "a b"), vec!["a", "b"]);
        assert_eq!(texts("[[:print:]]+", "a b\n"), vec!["a b"]);
        // `[:` without `:]` is literal.
        assert_eq!(texts("[[:a]", ":"), vec![":"]);
        assert!(matches!(refused("[[:alfa:]]"), SearchError::Invalid { .. }));
    }

    #[test]
    fn line_anchors_only_in_anchor_context() {
        assert_eq!(find("^a", "a\nba\na"), vec![(0, 1), (5, 6)]);
        assert_eq!(find("a$", "a\nab\nba"), vec![(0, 1), (6, 7)]);
        assert_eq!(find(r"\(^a\)", "ba\na"), vec![(3, 4)]);
        assert_eq!(find(r"x\|^a", "ba\na"), vec![(3, 4)]);
        assert_eq!(find(r"\(?:^a\)", "ba\na"), vec![(3, 4)]);
        assert_eq!(find(r"\(a$\)b", "a\nb"), vec![]);
        assert_eq!(find(r"a$\|x", "ab\na"), vec![(3, 4)]);
        // Elsewhere they are literal.
        assert_eq!(texts("a^b", "a^b ab"), vec!["a^b"]);
        assert_eq!(texts("a$b", "a$b ab"), vec!["a$b"]);
        assert_eq!(texts(r"\`^", "^a^"), vec!["^"]);
        assert_eq!(texts(r"x^", "x^"), vec!["x^"]);
    }

    #[test]
    fn assertions_are_not_repeatable_items() {
        // `*` after an assertion repeats the previous atom with the assertion (Emacs's laststart).
        assert_eq!(tr(r".\`*a"), r"(?:[^\n]\A)*a");
        assert_eq!(find(r".\`+*a.", "aab"), vec![(0, 2)]);
        assert_eq!(find(r")\'??", "a)"), vec![(0, 0), (1, 1), (2, 2)]);
        // With no atom before, the operator is literal.
        assert_eq!(texts(r"\B*", "a.*"), vec!["*"]);
        assert_eq!(texts(r"\b+", "+a"), vec!["+"]);
        // After a run of literals the operator repeats the whole run with the assertion.
        assert_eq!(tr(r"ab\b*"), r"(?:ab(?:\b|\A|\z))*");
        assert_eq!(tr(r"ab*"), r"a(?:b)*");
        assert_eq!(tr(r"a\.b\{2\}"), r"a\.(?:b){2}");
        // \< \> \_< \_> are repeatable items in Emacs.
        assert_eq!(tr(r"\>*"), r"(?:(?:\b{end}))*");
        assert_eq!(find(r"\>*", "ab"), vec![(0, 0), (1, 1), (2, 2)]);
    }

    #[test]
    fn buffer_anchors() {
        assert_eq!(find(r"\`a", "a\na"), vec![(0, 1)]);
        assert_eq!(find(r"a\'", "a\na"), vec![(2, 3)]);
        assert_eq!(find(r"a\'", "a\na\n"), vec![]);
    }

    #[test]
    fn word_boundaries() {
        assert_eq!(texts(r"\bfoo\b", "foo foobar barfoo foo."), vec!["foo", "foo"]);
        assert_eq!(texts(r"\Boo", "foo oo"), vec!["oo"]);
        // Emacs's \b matches at both ends of the text, whatever is next to them.
        assert_eq!(find(r"\b", ""), vec![(0, 0)]);
        assert_eq!(find(r"\b", " a\n"), vec![(0, 0), (1, 1), (2, 2), (3, 3)]);
        assert_eq!(find(r"\<ab", "ab cab ab"), vec![(0, 2), (7, 9)]);
        assert_eq!(find(r"ab\>", "ab abc cab"), vec![(0, 2), (8, 10)]);
        assert_eq!(texts(r"\w+", "foo_bar été"), vec!["foo", "bar", "été"]);
        assert_eq!(texts(r"\W+", "a_b c"), vec!["_", " "]);
    }

    #[test]
    fn symbol_boundaries() {
        let t = translate(r"\_<foo-bar\_>").unwrap_or_else(|e| panic!("{e}"));
        assert!(t.symbol_start && t.symbol_end);
        let text = "foo-bar x-foo-bar foo-bar-baz (foo-bar) foo-bar";
        assert_eq!(find(r"\_<foo-bar\_>", text), vec![(0, 7), (31, 38), (40, 47)]);
        // Inside the pattern: approximated by word-start / word-end.
        assert_eq!(texts(r"(\_<ab\_>)", "(ab) (abc)"), vec!["(ab)"]);
        // With top-level alternation the edges are approximated too.
        let t = translate(r"\_<a\|b\_>").unwrap_or_else(|e| panic!("{e}"));
        assert!(!t.symbol_start && !t.symbol_end);
        assert_eq!(t.pattern, r"(?:\b{start})a|b(?:\b{end})");
        // A repeated edge boundary is left to the regex.
        let t = translate(r"\_<*a").unwrap_or_else(|e| panic!("{e}"));
        assert!(!t.symbol_start);
        // Symbol characters that are not word characters, at the edges: exact.
        assert_eq!(find(r"\_<\*x\*\_>", "*x* a*x* *x*"), vec![(0, 3), (9, 12)]);
        assert_eq!(tr(r"\_<foo\_>"), "foo");
        assert!(matches!(refused(r"\_x"), SearchError::Invalid { .. }));
    }

    #[test]
    fn syntax_classes() {
        assert_eq!(texts(r"\s-+", "a \t\nb"), vec![" \t\n"]);
        assert_eq!(texts(r"\s +", "a  b"), vec!["  "]);
        assert_eq!(texts(r"\S-+", "ab cd"), vec!["ab", "cd"]);
        assert_eq!(texts(r"\sw+", "ab_c"), vec!["ab", "c"]);
        assert_eq!(texts(r"\Sw+", "ab_c"), vec!["_"]);
        assert_eq!(texts(r"\s_+", "a-b_+c"), vec!["-", "_+"]);
        assert_eq!(texts(r"\S_+", "a-b"), vec!["a", "b"]);
        assert_eq!(texts(r"\s.", "a.b;c«"), vec![".", ";", "«"]);
        assert_eq!(texts(r"\s(\s)", "() [x] {}"), vec!["()", "{}"]);
        assert_eq!(texts(r#"\s""#, r#"a"b"#), vec!["\""]);
        assert!(matches!(refused(r"\s<"), SearchError::Unsupported { .. }));
        assert!(matches!(refused(r"\sq"), SearchError::Invalid { .. }));
        assert!(matches!(refused(r"a\s"), SearchError::Invalid { .. }));
    }

    #[test]
    fn refusals_name_the_construct() {
        for (p, construct) in [
            (r"\(a\)\1", r"\1"),
            (r"\(a\)\9", r"\9"),
            (r"a\=b", r"\="),
            (r"\cg", r"\cg"),
            (r"\Cj", r"\Cj"),
            (r"\s'", r"\s'"),
        ] {
            match refused(p) {
                e @ SearchError::Unsupported { .. } => {
                    let msg = e.to_string();
                    assert!(msg.contains(construct), "{p}: {msg}");
                }
                e => panic!("{p}: {e:?}"),
            }
        }
        assert!(refused(r"\(a\)\1").to_string().contains("back-reference"));
    }

    #[test]
    fn invalid_patterns() {
        for p in [r"\(a", r"a\)", "a\\", r"\(?x\)", r"[", r"[^"] {
            assert!(
                matches!(refused(p), SearchError::Invalid { .. }),
                "{p} should be invalid"
            );
        }
        assert!(refused(r"\(a").to_string().contains("unmatched \\("));
        assert!(refused(r"a\)").to_string().contains("unmatched \\)"));
    }

    #[test]
    fn oversize_patterns_are_refused() {
        let long = "a".repeat(MAX_PATTERN_CHARS + 1);
        assert!(matches!(refused(&long), SearchError::TooLarge(_)));
        // Small to write, huge compiled.
        match search("x", r"\(\(\(a\{1000\}\)\{1000\}\)\{1000\}\)", false, 1) {
            Err(SearchError::TooLarge(msg)) => assert!(msg.contains("size limit"), "{msg}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn case_folding() {
        let r = search("Foo fOO foo", "foo", true, 10).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.matches, vec![(0, 3), (4, 7), (8, 11)]);
        let r = search("Foo fOO foo", "foo", false, 10).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.matches, vec![(8, 11)]);
        let r = search("ÉTÉ été", "été", true, 10).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.total, 2);
        let r = search("aB", "[[:lower:]]", true, 10).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.total, 2);
    }

    #[test]
    fn character_offsets_with_non_ascii_text() {
        // é is 2 bytes, 日本 3 bytes each, 🦀 4 bytes: offsets count characters.
        let text = "é日本🦀x\n🦀xé";
        assert_eq!(find("x", text), vec![(4, 5), (7, 8)]);
        assert_eq!(find("🦀x", text), vec![(3, 5), (6, 8)]);
        assert_eq!(find("é", text), vec![(0, 1), (8, 9)]);
        assert_eq!(find("^", text), vec![(0, 0), (6, 6)]);
        assert_eq!(find("$", text), vec![(5, 5), (9, 9)]);
    }

    #[test]
    fn empty_matches_follow_emacs_loop() {
        // Emacs: empty at 0, "x" at 1, empty at 2 (end of buffer).
        assert_eq!(find("x*", "ax"), vec![(0, 0), (1, 2), (2, 2)]);
        assert_eq!(find("^", "a\nb\nc"), vec![(0, 0), (2, 2), (4, 4)]);
        assert_eq!(find("", "ab"), vec![(0, 0), (1, 1), (2, 2)]);
        assert_eq!(find("", ""), vec![(0, 0)]);
        assert_eq!(find("é*", "aé"), vec![(0, 0), (1, 2), (2, 2)]);
    }

    #[test]
    fn max_caps_the_list_not_the_count() {
        let text = "x".repeat(50);
        let r = search(&text, "x", false, 5).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.total, 50);
        assert_eq!(r.matches, vec![(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)]);
        let r = search(&text, "x", false, 0).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((r.total, r.matches.len()), (50, 0));
    }

    #[test]
    fn no_panic_on_odd_input() {
        for p in [
            "",
            "\\",
            "[",
            "[]",
            "[^]",
            "]",
            "\\{",
            "\\{,",
            "\\(?",
            "\\(?1",
            "*",
            "+?",
            "\\_",
            "\\s",
            "\\c",
            "[[:",
            "[[:]]",
            "a\\{65535\\}",
            "\\(\\|\\)",
            "$^",
            "^$",
        ] {
            let _ = search("a\nb é", p, true, 3);
        }
    }
}
