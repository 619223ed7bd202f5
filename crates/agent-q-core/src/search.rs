//! Emacs regexps searched in linear time: the core of `search_in_buffer`'s regex mode.
//!
//! Emacs's own regexp engine backtracks, so a pattern an LLM writes, such as
//! `\(a*\)*\(a*\)*c` on a line of 25 `a`s, can freeze Emacs for minutes. Here the Emacs pattern is
//! translated into the syntax of Rust's `regex` crate ([`regex_syntax`]), matched by
//! [`regex_automata`]'s engines in time linear in the text, and the text is searched in Rust. Match
//! positions are CHARACTER offsets (0-based, end exclusive), as Emacs counts, and successive
//! matches follow Emacs's `re-search-forward` loop: the next search starts where the last match
//! ended, one character further after an empty match.
//!
//! # Bounded and interruptible
//!
//! Linear is not enough on a 20 MB buffer: counting millions of matches of `.` takes seconds, and
//! some patterns (Unicode word boundaries next to non-ASCII text, large counted repetitions) fall
//! back to the engine's slowest path, seconds per pass. So [`run`] counts at most
//! [`Limits::max_counted`] matches, stops at [`Limits::deadline`], and checks a cancel flag
//! between matches and between windows: it searches the text a window at a time (sized to take
//! a few milliseconds each) whenever that gives exactly the matches a whole-text search gives
//! (when no match can contain a newline, windows end at line ends; when matches have a bounded
//! length, windows overlap by that length). A pattern that can match across lines with no bound
//! (`\s-+`, `[^x]*`) is searched in one pass, which cannot be stopped midway.
//! [`search_in_background`] runs all that on a worker thread, so Emacs's thread only waits, in
//! short slices, asking whether the user quit.
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

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use regex_automata::meta::{self, Regex};
use regex_automata::{Input, MatchKind};
use regex_syntax::hir::{Class, Hir, HirKind};
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
    /// Too many earlier searches, abandoned when the user quit or at their time limit, are
    /// still running on their worker threads.
    #[error(
        "{0} earlier searches are still finishing in the background (each was stopped in one long \
         step of its pattern); try again in a few seconds"
    )]
    Busy(usize),
    /// The time limit passed and the search did not stop at its next check: it was inside one
    /// long, unstoppable step (a pattern that can match across lines without bound, searched in
    /// one pass), so nothing it found can be reported.
    #[error(
        "the search did not stop at its time limit: this pattern can match across lines without \
         a bound, so it is searched in one pass, which cannot be stopped midway; no partial result \
         is available (try a pattern that stays within a line)"
    )]
    Stuck,
    /// The worker thread could not be started or died (a bug).
    #[error("the search failed: {0}")]
    Failed(String),
}

/// A translated pattern, with the symbol-boundary checks to apply to each match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Translation {
    /// The pattern in the `regex` crate's syntax.
    pub pattern: String,
    /// Each match must start at a symbol start (`\_<` at the start of the Emacs pattern).
    pub symbol_start: bool,
    /// Each match must end at a symbol end (`\_>` at the end of the Emacs pattern).
    pub symbol_end: bool,
}

/// Why a search stopped before the end of the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// [`Limits::max_counted`] matches were counted, and there are more.
    CountLimit,
    /// [`Limits::deadline`] passed.
    TimeLimit,
    /// The cancel flag was set.
    Cancelled,
}

/// The matches found by [`search`] or [`run`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SearchResult {
    /// The first matches (at most the `max` asked for), as (start, end) character offsets.
    pub matches: Vec<(usize, usize)>,
    /// How many matches were counted: all of them, unless the search [stopped](Self::stopped).
    pub total: usize,
    /// Why the search stopped before the end of the text, if it did.
    pub stopped: Option<Stop>,
    /// How far the search got, as a character offset: the text's length when it was not
    /// stopped; otherwise no match starting before this offset was missed.
    pub searched: usize,
}

/// How much work a search may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// How many matches to list (with their offsets).
    pub max_listed: usize,
    /// How many matches to count before stopping (when there is one more); 0 counts them all.
    pub max_counted: usize,
    /// When to stop, if ever.
    pub deadline: Option<Instant>,
}

impl Limits {
    /// List MAX_LISTED matches, count all, never stop early.
    pub fn listing(max_listed: usize) -> Self {
        Limits {
            max_listed,
            max_counted: 0,
            deadline: None,
        }
    }
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
                    other => seq.literal(
                        regex_syntax::escape(other.encode_utf8(&mut [0; 4])),
                        repetition_follows(&p, i),
                    ),
                }
            }
            other => {
                i += 1;
                seq.literal(
                    regex_syntax::escape(other.encode_utf8(&mut [0; 4])),
                    repetition_follows(&p, i),
                );
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

/// How the text is cut into windows, each searched with a separate engine call so that the
/// search can stop between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Windows {
    /// No match is longer than this many bytes: windows overlap by it.
    Bounded(usize),
    /// No match contains a newline: windows end just after one.
    Lines,
    /// Neither: the text is searched in one engine call per match.
    Whole,
}

/// The longest match (in bytes) for which [`Windows::Bounded`] is used: beyond it the overlap
/// between windows would cost too much.
const MAX_BOUNDED_OVERLAP: usize = 64 << 10;

/// The first window's size, in bytes; later ones are sized to take about [`WINDOW_TIME`].
const FIRST_WINDOW: usize = 64 << 10;

/// The smallest and largest window, in bytes.
const WINDOW_RANGE: (usize, usize) = (4 << 10, 16 << 20);

/// How long one window's search should take: the cancel flag and the deadline are checked at
/// least this often (except in [`Windows::Whole`]).
const WINDOW_TIME: Duration = Duration::from_millis(5);

/// How many matches are handled between two checks of the cancel flag and the deadline.
const CHECK_EVERY: usize = 256;

/// A compiled search: a regexp, or a literal string.
#[derive(Debug, Clone)]
pub struct Pattern {
    regex: Regex,
    symbol_start: bool,
    symbol_end: bool,
    windows: Windows,
}

impl Pattern {
    /// The Emacs regexp PATTERN, folding case when CASE_FOLD.
    pub fn regexp(pattern: &str, case_fold: bool) -> Result<Self, SearchError> {
        Self::compile(translate(pattern)?, case_fold)
    }

    /// The literal string TEXT, as `search-forward` finds it (folding case when CASE_FOLD).
    pub fn literal(text: &str, case_fold: bool) -> Result<Self, SearchError> {
        let chars = text.chars().count();
        if chars > MAX_PATTERN_CHARS {
            return Err(SearchError::TooLarge(format!(
                "the pattern has {chars} characters, at most {MAX_PATTERN_CHARS} are accepted"
            )));
        }
        let translation = Translation {
            pattern: regex_syntax::escape(text),
            symbol_start: false,
            symbol_end: false,
        };
        Self::compile(translation, case_fold)
    }

    /// Compile a translated pattern, folding case when CASE_FOLD.
    pub fn compile(translation: Translation, case_fold: bool) -> Result<Self, SearchError> {
        let hir = regex_syntax::ParserBuilder::new()
            .case_insensitive(case_fold)
            .utf8(true)
            .build()
            .parse(&translation.pattern)
            .map_err(|e| SearchError::Engine(e.to_string()))?;
        let windows = match hir.properties().maximum_len() {
            Some(len) if len <= MAX_BOUNDED_OVERLAP => Windows::Bounded(len),
            _ if !can_match_newline(&hir) => Windows::Lines,
            _ => Windows::Whole,
        };
        let config = meta::Config::new()
            .match_kind(MatchKind::LeftmostFirst)
            .utf8_empty(true)
            .nfa_size_limit(Some(SIZE_LIMIT))
            .hybrid_cache_capacity(SIZE_LIMIT);
        let regex = meta::Builder::new()
            .configure(config)
            .build_from_hir(&hir)
            .map_err(|e| match e.size_limit() {
                Some(limit) => {
                    SearchError::TooLarge(format!("the compiled pattern exceeds the size limit of {limit} bytes"))
                }
                None => SearchError::Engine(e.to_string()),
            })?;
        Ok(Pattern {
            regex,
            symbol_start: translation.symbol_start,
            symbol_end: translation.symbol_end,
            windows,
        })
    }

    /// Whether the match START..END (byte offsets into TEXT) passes the symbol-boundary checks.
    fn accepts(&self, text: &[u8], start: usize, end: usize) -> bool {
        (!self.symbol_start || symbol_start_ok(text, start)) && (!self.symbol_end || symbol_end_ok(text, end))
    }

    /// The window starting at POS of about SIZE bytes: (ACCEPT, SPAN_END). The engine searches
    /// POS..SPAN_END; only matches starting before ACCEPT are taken (the others are found again
    /// from ACCEPT on). ACCEPT beyond the text means every match found is taken.
    fn window(&self, text: &[u8], pos: usize, size: usize) -> (usize, usize) {
        let len = text.len();
        let all = (len + 1, len);
        match self.windows {
            Windows::Whole => all,
            Windows::Bounded(longest) => {
                let accept = pos.saturating_add(size);
                let end = accept.saturating_add(longest);
                if end >= len {
                    all
                } else {
                    (accept, end)
                }
            }
            Windows::Lines => {
                let probe = pos.saturating_add(size);
                match text.get(probe..).and_then(|rest| memchr::memchr(b'\n', rest)) {
                    Some(i) if probe + i + 1 < len => (probe + i + 1, probe + i + 1),
                    _ => all,
                }
            }
        }
    }
}

/// Whether any character HIR consumes can be a newline. Walked with an explicit stack (the
/// parser's nesting limit bounds the depth anyway).
fn can_match_newline(hir: &Hir) -> bool {
    let mut stack = vec![hir];
    while let Some(h) = stack.pop() {
        match h.kind() {
            HirKind::Empty | HirKind::Look(_) => {}
            HirKind::Literal(lit) => {
                if lit.0.contains(&b'\n') {
                    return true;
                }
            }
            HirKind::Class(Class::Unicode(c)) => {
                if c.ranges().iter().any(|r| r.start() <= '\n' && '\n' <= r.end()) {
                    return true;
                }
            }
            HirKind::Class(Class::Bytes(c)) => {
                if c.ranges().iter().any(|r| r.start() <= b'\n' && b'\n' <= r.end()) {
                    return true;
                }
            }
            HirKind::Repetition(r) => stack.push(&r.sub),
            HirKind::Capture(c) => stack.push(&c.sub),
            HirKind::Concat(hs) | HirKind::Alternation(hs) => stack.extend(hs.iter()),
        }
    }
    false
}

/// Whether C counts as a symbol constituent (word character or one of [`SYMBOL_CHARS`]).
fn is_symbol_char(c: char) -> bool {
    c.is_alphanumeric() || SYMBOL_CHARS.contains(c)
}

/// Length in bytes of the UTF-8 sequence whose first byte is TEXT[AT] (1 past the end, and for
/// a byte that cannot start a sequence).
fn char_len(text: &[u8], at: usize) -> usize {
    let n = match text.get(at) {
        Some(&b) if b >= 0xF0 => 4,
        Some(&b) if b >= 0xE0 => 3,
        Some(&b) if b >= 0xC0 => 2,
        _ => 1,
    };
    n.min(text.len().saturating_sub(at)).max(1)
}

/// The character of TEXT starting at byte AT, if any.
fn char_at(text: &[u8], at: usize) -> Option<char> {
    let bytes = text.get(at..at + char_len(text, at))?;
    std::str::from_utf8(bytes).ok()?.chars().next()
}

/// The character of TEXT ending at byte AT, if any.
fn char_before(text: &[u8], at: usize) -> Option<char> {
    let mut start = at.checked_sub(1)?;
    while start > 0 && at - start < 4 && text.get(start).is_some_and(|b| b & 0xC0 == 0x80) {
        start -= 1;
    }
    std::str::from_utf8(text.get(start..at)?).ok()?.chars().next()
}

fn symbol_start_ok(text: &[u8], at: usize) -> bool {
    !char_before(text, at).is_some_and(is_symbol_char) && char_at(text, at).is_some_and(is_symbol_char)
}

fn symbol_end_ok(text: &[u8], at: usize) -> bool {
    char_before(text, at).is_some_and(is_symbol_char) && !char_at(text, at).is_some_and(is_symbol_char)
}

/// Byte offsets to character offsets, for offsets that never decrease.
struct CharOffsets<'t> {
    text: &'t [u8],
    byte: usize,
    char: usize,
}

impl<'t> CharOffsets<'t> {
    fn new(text: &'t [u8]) -> Self {
        CharOffsets { text, byte: 0, char: 0 }
    }

    /// The character offset of byte offset AT.
    fn at(&mut self, at: usize) -> usize {
        let at = at.min(self.text.len());
        if at < self.byte {
            self.byte = 0;
            self.char = 0;
        }
        self.char += count_chars(&self.text[self.byte..at]);
        self.byte = at;
        self.char
    }
}

/// How many characters BYTES holds: every byte but UTF-8 continuation bytes (`10xxxxxx`) starts
/// one. Eight bytes at a time: a byte-wise loop takes about 1 ms per MB, which on a 20 MB text
/// is most of a search's time.
fn count_chars(bytes: &[u8]) -> usize {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut words = bytes.chunks_exact(8);
    let mut continuation = 0usize;
    for word in &mut words {
        let mut w = [0u8; 8];
        w.copy_from_slice(word);
        let w = u64::from_le_bytes(w);
        // Bit 7 of each byte set where bit 7 is 1 and bit 6 is 0.
        continuation += (w & !(w << 1) & HIGH).count_ones() as usize;
    }
    continuation += words.remainder().iter().filter(|&&b| b & 0xC0 == 0x80).count();
    bytes.len() - continuation
}

/// Search TEXT for the Emacs regexp PATTERN: every match, the first MAX as character offsets.
///
/// Matches are found as Emacs's `re-search-forward` loop finds them (leftmost-first, the next
/// search starting at the end of the last match, one character further after an empty match).
pub fn search(text: &str, pattern: &str, case_fold: bool, max: usize) -> Result<SearchResult, SearchError> {
    let pattern = Pattern::regexp(pattern, case_fold)?;
    Ok(run(
        text.as_bytes(),
        &pattern,
        &Limits::listing(max),
        &AtomicBool::new(false),
    ))
}

/// Search TEXT (UTF-8; any other bytes simply match nothing) for PATTERN within LIMITS, until
/// the end of the text, a limit, or CANCEL being set.
///
/// Matches follow Emacs's `re-search-forward` loop, as in [`search`].
pub fn run(text: &[u8], pattern: &Pattern, limits: &Limits, cancel: &AtomicBool) -> SearchResult {
    // Windows much longer than their overlap, so that little is searched twice.
    let overlap = match pattern.windows {
        Windows::Bounded(longest) => longest,
        _ => 0,
    };
    let smallest = WINDOW_RANGE.0.max(4 * overlap);
    let range = (smallest, WINDOW_RANGE.1.max(smallest));
    run_windows(text, pattern, limits, cancel, FIRST_WINDOW.max(smallest), range)
}

/// [`run`] with windows of FIRST bytes at first, then between RANGE's bounds.
fn run_windows(
    text: &[u8],
    pattern: &Pattern,
    limits: &Limits,
    cancel: &AtomicBool,
    first: usize,
    range: (usize, usize),
) -> SearchResult {
    let len = text.len();
    let mut result = SearchResult::default();
    let mut offsets = CharOffsets::new(text);
    let should_stop = || {
        if cancel.load(Ordering::Relaxed) {
            Some(Stop::Cancelled)
        } else if limits.deadline.is_some_and(|d| Instant::now() >= d) {
            Some(Stop::TimeLimit)
        } else {
            None
        }
    };
    let mut size = first;
    let mut pos = 0;
    let mut handled = 0usize;
    let mut counted_to = None;
    let stopped = 'search: loop {
        if pos > len {
            break None;
        }
        // The first window is always searched: however late the search starts (copying a large
        // buffer can use up a short time limit), it makes progress before it stops.
        if let Some(stop) = should_stop().filter(|&stop| pos > 0 || stop == Stop::Cancelled) {
            break Some(stop);
        }
        let (accept, end) = pattern.window(text, pos, size);
        let began = Instant::now();
        loop {
            let found = pattern
                .regex
                .search(&Input::new(text).span(pos..end))
                .filter(|m| m.start() < accept);
            let Some(m) = found else {
                pos = accept;
                break;
            };
            if pattern.accepts(text, m.start(), m.end()) {
                if let Some(at) = counted_to {
                    // One match more than the limit: there are more than were counted.
                    pos = at;
                    break 'search Some(Stop::CountLimit);
                }
                result.total += 1;
                if result.matches.len() < limits.max_listed {
                    let start = offsets.at(m.start());
                    result.matches.push((start, offsets.at(m.end())));
                }
                pos = if m.is_empty() {
                    m.end() + char_len(text, m.end())
                } else {
                    m.end()
                };
                if limits.max_counted > 0 && result.total == limits.max_counted {
                    // Look for one more (without counting it), so that a text with exactly
                    // the limit's number of matches is not reported as having "at least" that.
                    counted_to = Some(pos);
                }
            } else {
                pos = m.start() + char_len(text, m.start());
            }
            if pos > len {
                break 'search None;
            }
            if pos >= accept {
                break;
            }
            handled += 1;
            if handled.is_multiple_of(CHECK_EVERY) {
                if let Some(stop) = should_stop() {
                    break 'search Some(stop);
                }
            }
        }
        let took = began.elapsed();
        if took < WINDOW_TIME / 4 {
            size = size.saturating_mul(2).min(range.1);
        } else if took > WINDOW_TIME * 2 {
            size = (size / 2).max(range.0);
        }
    };
    result.stopped = stopped;
    result.searched = offsets.at(if stopped.is_some() { pos } else { len });
    result
}

/// What to search for, given to [`search_in_background`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// The pattern.
    pub pattern: String,
    /// Whether it is an Emacs regexp (else a literal string).
    pub regexp: bool,
    /// Whether case is ignored.
    pub case_fold: bool,
}

/// How a search run by [`search_in_background`] ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It finished, or stopped at a limit.
    Done(SearchResult),
    /// The caller's `should_quit` answered true; the worker was told to stop and left behind.
    Quit,
}

/// A bound on the worker threads running searches at once, those left behind included.
#[derive(Debug)]
pub struct Workers {
    running: AtomicUsize,
    max: usize,
}

impl Workers {
    /// At most MAX workers at once.
    pub const fn new(max: usize) -> Self {
        Workers {
            running: AtomicUsize::new(0),
            max,
        }
    }

    /// How many are running now.
    pub fn running(&self) -> usize {
        self.running.load(Ordering::SeqCst)
    }

    fn acquire(&'static self) -> Result<WorkerSlot, SearchError> {
        let before = self.running.fetch_add(1, Ordering::SeqCst);
        if before >= self.max {
            self.running.fetch_sub(1, Ordering::SeqCst);
            return Err(SearchError::Busy(before));
        }
        Ok(WorkerSlot(self))
    }
}

/// One worker's place in [`Workers`], given back when the worker ends (even by a panic).
struct WorkerSlot(&'static Workers);

impl Drop for WorkerSlot {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The workers of the module's searches: one running, and one left behind by a quit or a time
/// limit while inside a long step.
pub static WORKERS: Workers = Workers::new(2);

/// How often the waiting thread wakes up to call `should_quit`.
pub const POLL: Duration = Duration::from_millis(10);

/// How long after the deadline the waiting thread waits for the worker to report.
pub const GRACE: Duration = Duration::from_millis(100);

/// How long after the deadline the waiting thread waits for a windowed search, which stops at
/// its next check, before giving it up: only a machine too loaded to run it ever gets there.
pub const LATE: Duration = Duration::from_secs(5);

/// When `on_slow` is called (once), if the search has not finished.
pub const SLOW: Duration = Duration::from_secs(1);

/// Compile QUERY and search TEXT within LIMITS on a worker thread (one of WORKERS), while this
/// thread waits in slices of [`POLL`], calling SHOULD_QUIT after each.
///
/// When SHOULD_QUIT answers true, the worker is told to stop and this returns
/// [`Outcome::Quit`] at once, without waiting for it. ON_SLOW is called once if the search is
/// still running after [`SLOW`]. At the deadline the worker stops at its next check and reports
/// what it found; if a search in one pass ([`Windows::Whole`]) does not within [`GRACE`] (it is
/// inside one long step) the result is [`SearchError::Stuck`]; a windowed one is waited for up to
/// [`LATE`].
pub fn search_in_background(
    text: Vec<u8>,
    query: Query,
    limits: Limits,
    workers: &'static Workers,
    mut should_quit: impl FnMut() -> bool,
    mut on_slow: impl FnMut(),
) -> Result<Outcome, SearchError> {
    let slot = workers.acquire()?;
    let started = Instant::now();
    let cancel = Arc::new(AtomicBool::new(false));
    let (sender, receiver) = mpsc::channel();
    let worker_cancel = Arc::clone(&cancel);
    // Whether the worker searches in one unstoppable pass: known once the pattern is compiled.
    let whole = Arc::new(AtomicBool::new(false));
    let worker_whole = Arc::clone(&whole);
    std::thread::Builder::new()
        .name("agent-q-search".into())
        .spawn(move || {
            let slot = slot;
            let answer = if query.regexp {
                Pattern::regexp(&query.pattern, query.case_fold)
            } else {
                Pattern::literal(&query.pattern, query.case_fold)
            }
            .map(|pattern| {
                worker_whole.store(pattern.windows == Windows::Whole, Ordering::Relaxed);
                run(&text, &pattern, &limits, &worker_cancel)
            });
            // Given back before answering, so that the next search, which may start as soon as
            // the answer arrives, finds it free.
            drop(slot);
            // The receiver is gone when the waiting thread left: nothing to report then.
            let _ = sender.send(answer);
        })
        .map_err(|e| SearchError::Failed(format!("cannot start a search thread: {e}")))?;
    let mut slow_reported = false;
    loop {
        match receiver.recv_timeout(POLL) {
            Ok(answer) => return answer.map(Outcome::Done),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(SearchError::Failed("the search thread ended without an answer".into()))
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if should_quit() {
            cancel.store(true, Ordering::Relaxed);
            return Ok(Outcome::Quit);
        }
        if let Some(deadline) = limits.deadline {
            let now = Instant::now();
            if now >= deadline + GRACE && whole.load(Ordering::Relaxed) {
                cancel.store(true, Ordering::Relaxed);
                return Err(SearchError::Stuck);
            }
            // A windowed search stops at its next check, a window's time after the deadline; a
            // loaded machine may take longer to give it the processor, which is no reason to
            // call it stuck. Only one that does not answer long after is given up.
            if now >= deadline + LATE {
                cancel.store(true, Ordering::Relaxed);
                return Err(SearchError::Failed(format!(
                    "the search thread did not stop within {} s of its time limit",
                    LATE.as_secs()
                )));
            }
        }
        if !slow_reported && started.elapsed() >= SLOW {
            slow_reported = true;
            on_slow();
        }
    }
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

    /// A small deterministic generator (a 64-bit LCG), so that failures reproduce.
    struct Lcg(u64);

    impl Lcg {
        fn below(&mut self, n: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 33) as usize) % n
        }
    }

    fn pattern(p: &str) -> Pattern {
        Pattern::regexp(p, false).unwrap_or_else(|e| panic!("{p:?}: {e}"))
    }

    fn unlimited() -> Limits {
        Limits::listing(usize::MAX)
    }

    #[test]
    fn windows_follow_what_a_match_can_span() {
        assert_eq!(pattern("with-temp-buffer").windows, Windows::Bounded(16));
        assert_eq!(pattern(r"\_<car\_>").windows, Windows::Bounded(3));
        assert_eq!(pattern(r"[[:alpha:]]\{3\}").windows, Windows::Bounded(12));
        assert_eq!(pattern("a.*b").windows, Windows::Lines);
        assert_eq!(pattern(r"\w+").windows, Windows::Lines);
        assert_eq!(pattern("[^x\n]*").windows, Windows::Lines);
        // In a bracket set a backslash is itself: this one can match a newline.
        assert_eq!(pattern(r"[^x\n]*").windows, Windows::Whole);
        assert_eq!(pattern(r"\s-+").windows, Windows::Whole);
        assert_eq!(pattern("[^x]*").windows, Windows::Whole);
        assert_eq!(pattern("a\nb*").windows, Windows::Whole);
        assert_eq!(pattern(r"é\{60000\}").windows, Windows::Lines);
    }

    /// Searching in windows of a few bytes finds exactly what one whole-text pass finds.
    #[test]
    fn windows_give_the_matches_of_a_whole_pass() {
        const TOKENS: &[&str] = &[
            "a",
            "b",
            "c",
            ".",
            "[ab]",
            "[^a\n]",
            "\\(",
            "\\)",
            "\\|",
            "*",
            "+",
            "?",
            "*?",
            "\\{1,2\\}",
            "^",
            "$",
            "\\<",
            "\\>",
            "\\b",
            "\\w",
            "\\W",
            "\\s-",
            "\\`",
            "\\'",
            "é",
            "[[:alpha:]]",
            "\n",
            "\\_<",
            "\\_>",
        ];
        const TEXTS: &[&str] = &[
            "aab b-\n(c)é.*ab\nab\n\nba-a é-b\n",
            "abcabc\n\nba-a é-b\na\na.b  c*(ab)\nbbb aaa ccc-a-b",
            "\n\n\naaa\nbbb\n",
            "no newline at all: ab ba cab",
        ];
        let mut rng = Lcg(7);
        let mut compared = 0;
        for _ in 0..2000 {
            let p: String = (0..1 + rng.below(6)).map(|_| TOKENS[rng.below(TOKENS.len())]).collect();
            let Ok(windowed) = Pattern::regexp(&p, false) else {
                continue;
            };
            let whole = Pattern {
                windows: Windows::Whole,
                ..windowed.clone()
            };
            for text in TEXTS {
                let never = AtomicBool::new(false);
                let expected = run(text.as_bytes(), &whole, &unlimited(), &never);
                for size in [1, 3] {
                    let got = run_windows(text.as_bytes(), &windowed, &unlimited(), &never, size, (size, size));
                    assert_eq!(
                        got, expected,
                        "pattern {p:?} ({:?}), windows of {size}, text {text:?}",
                        windowed.windows
                    );
                }
                compared += 1;
            }
        }
        assert!(compared > 4000, "{compared}");
    }

    #[test]
    fn counting_stops_at_the_limit() {
        let text = "x\n".repeat(50);
        let limits = Limits {
            max_listed: 3,
            max_counted: 10,
            deadline: None,
        };
        let r = run(text.as_bytes(), &pattern("x"), &limits, &AtomicBool::new(false));
        assert_eq!(r.matches, vec![(0, 1), (2, 3), (4, 5)]);
        assert_eq!((r.total, r.stopped, r.searched), (10, Some(Stop::CountLimit), 19));
        // Not reached, or reached by the last match: complete.
        let r = run(b"x x", &pattern("x"), &limits, &AtomicBool::new(false));
        assert_eq!((r.total, r.stopped, r.searched), (2, None, 3));
        let text = "x\n".repeat(10);
        let r = run(text.as_bytes(), &pattern("x"), &limits, &AtomicBool::new(false));
        assert_eq!((r.total, r.stopped, r.searched), (10, None, 20));
        let text = "x\n".repeat(10) + "x";
        let r = run(text.as_bytes(), &pattern("x"), &limits, &AtomicBool::new(false));
        assert_eq!((r.total, r.stopped, r.searched), (10, Some(Stop::CountLimit), 19));
    }

    #[test]
    fn a_passed_deadline_or_a_cancel_stops_the_search() {
        let text = "abc\n".repeat(2_000_000);
        let limits = Limits {
            max_listed: 10,
            max_counted: 0,
            deadline: Some(Instant::now()),
        };
        // A deadline already passed still lets the first window be searched, then stops.
        let r = run(text.as_bytes(), &pattern("b"), &limits, &AtomicBool::new(false));
        assert_eq!(r.stopped, Some(Stop::TimeLimit));
        assert!(r.searched > 0 && r.searched < text.len(), "{}", r.searched);
        assert!(r.total >= 1);
        let r = run(text.as_bytes(), &pattern("b"), &unlimited(), &AtomicBool::new(true));
        assert_eq!((r.total, r.stopped), (0, Some(Stop::Cancelled)));
    }

    #[test]
    fn literal_patterns_are_not_regexps() {
        let never = AtomicBool::new(false);
        let found = |p: Pattern, text: &str| run(text.as_bytes(), &p, &unlimited(), &never).matches;
        let lit = |p: &str, fold: bool| Pattern::literal(p, fold).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(found(lit("a.b", false), "axb a.b"), vec![(4, 7)]);
        assert_eq!(found(lit(r"\(a\)", false), r"a \(a\)"), vec![(2, 7)]);
        assert_eq!(found(lit("aa", false), "aaaaa"), vec![(0, 2), (2, 4)]);
        assert_eq!(found(lit("Été", true), "été ÉTÉ ete"), vec![(0, 3), (4, 7)]);
        assert_eq!(found(lit("Été", false), "été ÉTÉ Été"), vec![(8, 11)]);
        let long = "a".repeat(MAX_PATTERN_CHARS + 1);
        assert!(matches!(Pattern::literal(&long, false), Err(SearchError::TooLarge(_))));
    }

    #[test]
    fn characters_are_counted_as_emacs_counts_them() {
        for text in ["", "a", "é日本🦀x\n🦀xé", "0123456789abcdefé", "ééééééééé日"] {
            assert_eq!(count_chars(text.as_bytes()), text.chars().count(), "{text:?}");
        }
        // A lone byte that cannot start a character is not counted.
        assert_eq!(count_chars(b"a\x80b"), 2);
    }

    /// A text KIB kibibytes long on which `\b[[:alpha:]]+\b[[:digit:]]` takes about a second per
    /// MB, and `\(?:\b[[:alpha:]]+\b\s-*\)\{20\}[0-9]` several (the engine's slowest path:
    /// Unicode word boundaries next to non-ASCII text).
    fn slow_text(kib: usize) -> Vec<u8> {
        "défini la fonction été ünïcode\n".repeat(kib * 1024 / 34).into_bytes()
    }

    const SLOW: &str = r"\b[[:alpha:]]+\b[[:digit:]]";

    fn query(p: &str) -> Query {
        Query {
            pattern: p.into(),
            regexp: true,
            case_fold: false,
        }
    }

    /// Wait until WORKERS has no worker left (at most 60 s): the worker noticed the cancel.
    fn all_stopped(workers: &Workers) -> bool {
        let until = Instant::now() + Duration::from_secs(60);
        while workers.running() > 0 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        workers.running() == 0
    }

    #[test]
    fn quitting_returns_at_once_and_stops_the_worker() {
        static WORKERS: Workers = Workers::new(2);
        let mut asked = 0;
        let outcome = search_in_background(
            slow_text(4096),
            query(SLOW),
            Limits::listing(10),
            &WORKERS,
            || {
                asked += 1;
                asked >= 3
            },
            || {},
        );
        assert_eq!(outcome, Ok(Outcome::Quit));
        assert_eq!(asked, 3);
        assert!(all_stopped(&WORKERS));
    }

    #[test]
    fn background_search_reports_the_matches() {
        static WORKERS: Workers = Workers::new(2);
        let outcome = search_in_background(
            "a1 b2\nc3".into(),
            query(r"[a-z]\([0-9]\)"),
            Limits::listing(2),
            &WORKERS,
            || false,
            || {},
        );
        let Ok(Outcome::Done(r)) = outcome else {
            panic!("{outcome:?}");
        };
        assert_eq!((r.total, r.matches, r.stopped), (3, vec![(0, 2), (3, 5)], None));
        let outcome = search_in_background(
            b"x".to_vec(),
            query(r"\(a\)\1"),
            Limits::listing(2),
            &WORKERS,
            || false,
            || {},
        );
        assert!(matches!(outcome, Err(SearchError::Unsupported { .. })), "{outcome:?}");
        assert!(all_stopped(&WORKERS));
    }

    #[test]
    fn a_finished_worker_gives_its_place_back_before_answering() {
        static WORKERS: Workers = Workers::new(1);
        for _ in 0..300 {
            let outcome = search_in_background(
                b"ab".to_vec(),
                query("b"),
                Limits::listing(1),
                &WORKERS,
                || false,
                || {},
            );
            assert!(matches!(outcome, Ok(Outcome::Done(_))), "{outcome:?}");
        }
    }

    #[test]
    fn the_deadline_stops_a_windowed_search_with_what_it_found() {
        static WORKERS: Workers = Workers::new(2);
        let mut text = b"1x2\n".to_vec();
        text.extend(slow_text(8192));
        let limits = Limits {
            max_listed: 10,
            max_counted: 0,
            // Past the compilation (milliseconds), long before the end (seconds).
            deadline: Some(Instant::now() + Duration::from_millis(1000)),
        };
        let outcome = search_in_background(
            text.clone(),
            query(r"[[:alpha:]]\{1,3\}\b[0-9]\|x"),
            limits,
            &WORKERS,
            || false,
            || {},
        );
        let Ok(Outcome::Done(r)) = outcome else {
            panic!("{outcome:?}");
        };
        assert_eq!(r.stopped, Some(Stop::TimeLimit));
        assert_eq!(r.matches, vec![(1, 2)]);
        assert!(r.searched >= 2 && r.searched < text.len(), "{}", r.searched);
    }

    #[test]
    fn a_long_unwindowed_step_past_the_deadline_is_stuck_and_the_next_search_busy() {
        static WORKERS: Workers = Workers::new(1);
        // Can match across lines with no bound: one pass, which cannot stop midway.
        let stuck = r"\(?:\b[[:alpha:]]+\b\s-*\)\{20\}[0-9]";
        assert_eq!(pattern(stuck).windows, Windows::Whole);
        let limits = Limits {
            max_listed: 10,
            max_counted: 0,
            // Past the compilation (tens of ms), within the one long step (seconds).
            deadline: Some(Instant::now() + Duration::from_millis(500)),
        };
        // A few seconds in one step (a debug build is about 5 times slower).
        let size = if cfg!(debug_assertions) { 128 } else { 512 };
        let outcome = search_in_background(slow_text(size), query(stuck), limits, &WORKERS, || false, || {});
        assert_eq!(outcome, Err(SearchError::Stuck));
        // The worker left behind still holds the only place.
        let outcome = search_in_background(b"x".to_vec(), query("x"), Limits::listing(1), &WORKERS, || false, || {});
        assert_eq!(outcome, Err(SearchError::Busy(1)));
        assert!(all_stopped(&WORKERS));
        let outcome = search_in_background(b"x".to_vec(), query("x"), Limits::listing(1), &WORKERS, || false, || {});
        assert!(matches!(outcome, Ok(Outcome::Done(_))), "{outcome:?}");
    }
}
