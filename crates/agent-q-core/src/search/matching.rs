//! Compiled patterns and the search of a text: in windows the search can stop between, at most
//! a number of matches, until a deadline, with match positions counted in characters.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use regex_automata::meta::{self, Regex};
use regex_automata::{Input, MatchKind};
use regex_syntax::hir::{Class, Hir, HirKind};

use super::translate::{translate_in, Dialect};
use super::{Limits, SearchError, SearchResult, Stop, Translation, MAX_PATTERN_CHARS, SIZE_LIMIT, SYMBOL_CHARS};

/// How the text is cut into windows, each searched with a separate engine call so that the
/// search can stop between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Windows {
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
    pub(super) windows: Windows,
}

impl Pattern {
    /// The Emacs regexp PATTERN, folding case when CASE_FOLD.
    pub fn regexp(pattern: &str, case_fold: bool) -> Result<Self, SearchError> {
        Self::regexp_in(pattern, case_fold, Dialect::Emacs29)
    }

    /// The Emacs regexp PATTERN as the engine of DIALECT reads it, folding case when CASE_FOLD.
    pub fn regexp_in(pattern: &str, case_fold: bool, dialect: Dialect) -> Result<Self, SearchError> {
        Self::compile(translate_in(pattern, dialect)?, case_fold)
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

#[cfg(test)]
mod tests;
