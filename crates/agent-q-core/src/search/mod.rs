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
//! - `\b`, `\B`, `\<`, `\>`: the `regex` crate's Unicode word boundaries, whose word
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
//!   nothing, the `regex` crate's may go on.
//! - Case folding (`case_fold`, Emacs's `case-fold-search`) uses Unicode simple case folding
//!   rather than the buffer's case table.
//!
//! Refused with a [`SearchError::Unsupported`] naming the construct: back-references `\1`..`\9`,
//! `\=` (point), categories `\cC` / `\CC`, and syntax classes that depend entirely on the mode
//! (comments `\s<` `\s>`, and `\s'` `\s$` `\s|` `\s!` `\s/` `\s@`).
//!
//! # Layout
//!
//! `translate` turns an Emacs regexp into the syntax of [`regex_syntax`]; `matching` compiles it
//! ([`Pattern`]) and searches a text in windows ([`run`]); `workers` runs a search on a worker
//! thread while the caller waits ([`search_in_background`]).

mod matching;
mod translate;
mod workers;

use std::time::Instant;

use thiserror::Error;

pub use matching::{run, search, Pattern};
pub use translate::{translate, translate_in, Dialect};
pub use workers::{search_in_background, Query, SearchOutcome, Workers, GRACE, LATE, POLL, SLOW, WORKERS};

/// Characters taken to have symbol syntax (Emacs's standard syntax table: `_-+*/&|<>=`).
pub const SYMBOL_CHARS: &str = "_-+*/&|<>=";

/// ASCII characters taken to have punctuation syntax (Emacs's standard syntax table).
pub const PUNCTUATION_CHARS: &str = ".,;:?!#@~^'`";

/// The longest Emacs pattern accepted, in characters.
pub const MAX_PATTERN_CHARS: usize = 10_000;

/// The size limit of a compiled regex, in bytes: of its NFA
/// ([`regex_automata::meta::Config::nfa_size_limit`]) and of its lazy DFA cache.
pub const SIZE_LIMIT: usize = 10 * (1 << 20);

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
