//! Line diffs with word-level refinement, grouped into hunks like `diff -u`, and their
//! application hunk by hunk, for the `propose_file_edit` review.
//!
//! - [`hunks`] compares two texts line by line (similar's Myers algorithm with a deadline)
//!   and groups the changes into hunks with [`CONTEXT`] lines of context, exactly as GNU
//!   `diff -u` does: changes separated by more than `2 * CONTEXT` unchanged lines are separate
//!   hunks. Changed lines carry word-level refinement ranges in CHARACTER offsets (Emacs counts
//!   characters, Rust bytes).
//! - [`apply`] builds the new text from the old text and one [`Decision`] per hunk, in time
//!   linear in the size of the texts.
//! - [`locate`] finds where the model's `original` text sits in the current text (the whole text
//!   or a unique excerpt) and explains a mismatch with the closest match.
//! - [`unified`] renders the hunks as a unified diff (used by the benchmarks against `diff -u`).
//!
//! Lines are split after each `\n`; a `\r` before it stays part of the line, so CRLF files diff
//! and apply byte for byte.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::ops::Range;
use std::time::{Duration, Instant};

use similar::{Algorithm, DiffOp};
use thiserror::Error;

mod closest;
mod lines;
use closest::Budget;

/// Lines of unchanged context around each change, as `diff -u`.
pub const CONTEXT: usize = 3;

/// Largest text, in bytes, that the diff functions accept.
pub const MAX_TEXT_BYTES: usize = 64 * 1024 * 1024;

/// Text of the marker line that follows a line without a final newline.
pub const NO_NEWLINE_MARKER: &str = "\\ No newline at end of file";

/// Time after which the line diff stops looking for a minimal diff and approximates, in the
/// functions that diff again on every call ([`hunks`], [`apply`], [`unified`]): long, so that
/// two calls on the same texts practically always find the same diff.
const LINE_DIFF_TIMEOUT: Duration = Duration::from_secs(2);
/// The same for a diff kept for a review ([`LineDiff::within`] in a diff session), which is
/// computed once, so that its approximation never has to agree with another call's: a 100,000
/// line file reordered from top to bottom costs about 350 ms to diff exactly.
pub const SESSION_LINE_DIFF_TIME: Duration = Duration::from_millis(80);
/// Total time spent on word refinement of all the hunks at once ([`LineDiff::hunks`]); later
/// hunks go unrefined.
const REFINE_BUDGET: Duration = Duration::from_millis(100);
/// Time spent on word refinement of one hunk built on demand ([`hunk_refine_deadline`]).
const HUNK_REFINE_BUDGET: Duration = Duration::from_millis(50);
/// A replaced block larger than this (bytes, either side) is not refined word by word.
const REFINE_MAX_BYTES: usize = 32 * 1024;
/// Below this similarity the lines are too different for word highlighting to help.
const REFINE_MIN_RATIO: f32 = 0.4;
/// Occurrences of an ambiguous excerpt counted before giving up counting.
const MAX_OCCURRENCES: usize = 1000;
/// Occurrence line numbers listed in an ambiguity error.
const LISTED_OCCURRENCES: usize = 10;
/// Lines of current text shown around the closest match.
const MISMATCH_CONTEXT: usize = 2;
/// Longest excerpt of current text shown for a mismatch, in lines.
const MISMATCH_MAX_LINES: usize = 12;
/// Longest line of current text shown in full in a mismatch excerpt, in characters.
const MISMATCH_MAX_LINE_CHARS: usize = 1000;
/// Time [`locate`] may spend explaining a mismatch (from its start), so that a stale
/// `original` never freezes Emacs: the closest match is then the best found so far.
const CLOSEST_MATCH_TIME: Duration = Duration::from_millis(50);
/// Work the closest-match search may do, in character steps (about 20–40 ms here); it makes
/// the cut deterministic on a machine fast enough not to hit the deadline first.
const CLOSEST_MATCH_WORK: u64 = 30_000_000;
/// Bytes compared while counting occurrences of an ambiguous excerpt before giving up counting.
const OCCURRENCE_WORK: usize = 64 * 1024 * 1024;
/// Lines handled between two looks at the clock while voting.
const VOTE_CLOCK_EVERY: usize = 4096;

/// Errors of the diff concern.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum DiffError {
    /// An input text exceeds [`MAX_TEXT_BYTES`].
    #[error("{what} is too large: {size} bytes (limit {limit} bytes)")]
    TooLarge {
        /// Which input.
        what: &'static str,
        /// Its size in bytes.
        size: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// [`apply`] got a number of decisions different from the number of hunks.
    #[error("expected {expected} decision(s), one per hunk, got {got}")]
    DecisionCount {
        /// Number of hunks.
        expected: usize,
        /// Number of decisions given.
        got: usize,
    },
    /// `original` is empty while the current text is not, so it locates nothing.
    #[error(
        "`original` is empty but the current text is not ({lines} line(s)); give the whole current text or an excerpt of it"
    )]
    EmptyOriginal {
        /// Lines in the current text.
        lines: usize,
    },
    /// `original` does not occur in the current text.
    #[error("{0}")]
    NotFound(Box<Mismatch>),
    /// `original` occurs more than once in the current text.
    #[error(
        "`original` occurs {} times in the current text (at lines {}); include more surrounding lines so that it is unique",
        if *.truncated { format!("{} or more", .count) } else { .count.to_string() },
        join_numbers(.lines)
    )]
    Ambiguous {
        /// Occurrences found (possibly a lower bound, see `truncated`).
        count: usize,
        /// True when counting stopped at the limit.
        truncated: bool,
        /// 1-based line numbers of the first occurrences.
        lines: Vec<usize>,
    },
}

/// Why `original` was not found, with the current text around the closest match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// 1-based line of the closest match in the current text, if any line looked similar.
    pub line: Option<usize>,
    /// Current text around the closest match, each line prefixed with its number.
    pub excerpt: String,
    /// What differs at the closest match (first differing line, whitespace, line endings).
    pub detail: String,
    /// Set when the search for the closest match ran out of its time or work budget: the
    /// match is then the best found so far.
    pub cut_short: Option<SearchCut>,
}

/// How far a closest-match search got before its budget ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchCut {
    /// Lines dealt with.
    pub done: usize,
    /// Lines there were to deal with.
    pub total: usize,
    /// What `done` counts: lines of the current text scanned, or similar-looking lines compared.
    pub what: &'static str,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "`original` does not match the current text (it may have changed since it was read)."
        )?;
        let cut = self.cut_short.map(|c| {
            format!(
                "the search was cut short after {} of {} {}, to keep Emacs responsive",
                c.done, c.total, c.what
            )
        });
        match self.line {
            Some(line) => {
                write!(f, " Closest match at line {line}")?;
                if let Some(cut) = cut {
                    write!(f, " (the best found before {cut}; a closer one may exist)")?;
                }
                if !self.detail.is_empty() {
                    write!(f, "; {}", self.detail)?;
                }
                write!(f, ". Current text there:\n{}", self.excerpt)
            }
            None => match cut {
                Some(cut) => write!(f, " No similar lines were found before {cut}."),
                None => write!(f, " No similar lines were found in the current text."),
            },
        }
    }
}

fn join_numbers(numbers: &[usize]) -> String {
    let mut out = String::new();
    for (i, n) in numbers.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{n}");
    }
    out
}

/// The role of a line in a hunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineTag {
    /// Unchanged context line (` ` in a unified diff).
    Context,
    /// Line only in the old text (`-`).
    Removed,
    /// Line only in the new text (`+`).
    Added,
    /// `\ No newline at end of file` after the preceding line.
    NoNewline,
}

impl LineTag {
    /// The unified-diff prefix of lines with this tag.
    pub fn prefix(self) -> &'static str {
        match self {
            LineTag::Context => " ",
            LineTag::Removed => "-",
            LineTag::Added => "+",
            LineTag::NoNewline => "",
        }
    }
}

/// One line of a hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HunkLine {
    /// What the line is.
    pub tag: LineTag,
    /// The line without its `\n` (a `\r` of a CRLF line stays), or the marker text.
    pub text: String,
    /// Changed words of a removed or added line: half-open CHARACTER ranges within `text`.
    pub refinement: Vec<(usize, usize)>,
}

/// A group of nearby changes with their context, as in `diff -u`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// 0-based position of the hunk in the diff.
    pub index: usize,
    /// First old line, 1-based (the line before, possibly 0, when `old_lines` is 0), as `diff -u`.
    pub old_start: usize,
    /// Number of old lines covered.
    pub old_lines: usize,
    /// First new line, 1-based (the line before when `new_lines` is 0).
    pub new_start: usize,
    /// Number of new lines covered.
    pub new_lines: usize,
    /// `@@ -a,b +c,d @@`, with `,1` omitted as `diff -u` does.
    pub header: String,
    /// The lines, in unified-diff order.
    pub lines: Vec<HunkLine>,
    /// The old text the hunk covers (context included), line terminators included.
    pub old_text: String,
    /// The new text the hunk covers (context included), line terminators included.
    pub new_text: String,
}

/// What to do with one hunk in [`apply`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Take the new side of the hunk.
    Accept,
    /// Keep the old side of the hunk.
    Reject,
    /// Replace the old side of the hunk (context included) with this text.
    Edit(String),
}

/// Where `original` is in the current text, as returned by [`locate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// Start, in characters from the beginning of the text (0-based).
    pub start: usize,
    /// End (exclusive), in characters.
    pub end: usize,
    /// Start in bytes.
    pub byte_start: usize,
    /// End (exclusive) in bytes.
    pub byte_end: usize,
    /// 1-based line where the span starts.
    pub line: usize,
    /// True when `original` is the whole current text.
    pub whole: bool,
}

fn check_size(what: &'static str, text: &str) -> Result<(), DiffError> {
    if text.len() > MAX_TEXT_BYTES {
        Err(DiffError::TooLarge {
            what,
            size: text.len(),
            limit: MAX_TEXT_BYTES,
        })
    } else {
        Ok(())
    }
}

/// Lines of TEXT, each with its terminating `\n` if it has one.
///
/// memchr finds the newlines several times faster than `split_inclusive`, which matters at
/// 100,000 lines; slicing after a `\n` always falls on a character boundary.
fn split_lines(text: &str) -> Vec<&str> {
    let mut lines = Vec::with_capacity(memchr::memchr_iter(b'\n', text.as_bytes()).count() + 1);
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', text.as_bytes()) {
        lines.push(&text[start..=end]);
        start = end + 1;
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

/// The line diff of two texts grouped into hunks as `diff -u` groups them.
///
/// It keeps both texts (borrowed, or owned for a review that outlives the call) and the line
/// operations, not the hunks' lines: [`LineDiff::summary`] is cheap, [`LineDiff::hunk`] builds
/// one hunk's lines and word refinement when asked, and [`LineDiff::apply`] applies decisions
/// without diffing again.
#[derive(Debug, Clone)]
pub struct LineDiff<S: AsRef<str> = String> {
    old: S,
    new: S,
    old_starts: Vec<usize>,
    new_starts: Vec<usize>,
    groups: Vec<Vec<DiffOp>>,
}

/// Where a hunk is, without its lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HunkSummary {
    /// 0-based position of the hunk in the diff.
    pub index: usize,
    /// First old line, 1-based (the line before, possibly 0, when `old_lines` is 0), as `diff -u`.
    pub old_start: usize,
    /// Number of old lines covered.
    pub old_lines: usize,
    /// First new line, 1-based (the line before when `new_lines` is 0).
    pub new_start: usize,
    /// Number of new lines covered.
    pub new_lines: usize,
    /// `@@ -a,b +c,d @@`, with `,1` omitted as `diff -u` does.
    pub header: String,
}

/// Where the text of a line of a [`HunkLayout`] comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineSource {
    /// Line N (0-based) of the old text.
    Old(usize),
    /// Line N (0-based) of the new text.
    New(usize),
    /// The [`NO_NEWLINE_MARKER`].
    Marker,
}

/// One line of a [`HunkLayout`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineRef {
    /// What the line is.
    pub tag: LineTag,
    /// Where its text is.
    pub source: LineSource,
    /// Changed words: half-open CHARACTER ranges within the line's text.
    pub refinement: Vec<(usize, usize)>,
}

/// A hunk as line numbers: what [`Hunk`] holds, without copying any text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HunkLayout {
    /// Where the hunk is.
    pub summary: HunkSummary,
    /// Its lines, in unified-diff order.
    pub lines: Vec<LineRef>,
    /// The old lines it covers (0-based, half-open).
    pub old_range: Range<usize>,
    /// The new lines it covers (0-based, half-open).
    pub new_range: Range<usize>,
}

impl<S: AsRef<str>> LineDiff<S> {
    /// The line diff from OLD to NEW. Errors: [`DiffError::TooLarge`].
    pub fn new(old: S, new: S) -> Result<Self, DiffError> {
        Self::within(old, new, LINE_DIFF_TIMEOUT)
    }

    /// The line diff from OLD to NEW, looking for a minimal diff for at most TIME (then an
    /// approximation: a valid diff, not the shortest). Errors: [`DiffError::TooLarge`].
    pub fn within(old: S, new: S, time: Duration) -> Result<Self, DiffError> {
        check_size("the old text", old.as_ref())?;
        check_size("the new text", new.as_ref())?;
        let old_starts = lines::line_starts(old.as_ref());
        let new_starts = lines::line_starts(new.as_ref());
        let deadline = Instant::now().checked_add(time);
        let ops = lines::line_ops(
            lines::Side {
                text: old.as_ref(),
                starts: &old_starts,
            },
            lines::Side {
                text: new.as_ref(),
                starts: &new_starts,
            },
            deadline,
        );
        let groups = similar::group_diff_ops(ops, CONTEXT);
        Ok(LineDiff {
            old,
            new,
            old_starts,
            new_starts,
            groups,
        })
    }

    /// The old text.
    pub fn old_text(&self) -> &str {
        self.old.as_ref()
    }

    /// The new text.
    pub fn new_text(&self) -> &str {
        self.new.as_ref()
    }

    /// Number of hunks.
    pub fn len(&self) -> usize {
        self.groups.len()
    }

    /// True when the texts are identical (no hunks).
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Old and new line ranges (0-based, half-open) of hunk INDEX.
    fn ranges(&self, index: usize) -> Option<(Range<usize>, Range<usize>)> {
        let group = self.groups.get(index)?;
        let (first, last) = (group.first()?, group.last()?);
        Some((
            first.old_range().start..last.old_range().end,
            first.new_range().start..last.new_range().end,
        ))
    }

    fn old_line(&self, i: usize) -> &str {
        &self.old.as_ref()[self.old_starts[i]..self.old_starts[i + 1]]
    }

    fn new_line(&self, i: usize) -> &str {
        &self.new.as_ref()[self.new_starts[i]..self.new_starts[i + 1]]
    }

    fn old_bytes(&self, lines: &Range<usize>) -> Range<usize> {
        self.old_starts[lines.start]..self.old_starts[lines.end]
    }

    fn new_bytes(&self, lines: &Range<usize>) -> Range<usize> {
        self.new_starts[lines.start]..self.new_starts[lines.end]
    }

    /// Where hunk INDEX is, or `None` past the last hunk.
    pub fn summary(&self, index: usize) -> Option<HunkSummary> {
        let (old_range, new_range) = self.ranges(index)?;
        let start_number = |range: &Range<usize>| {
            if range.is_empty() {
                range.start
            } else {
                range.start + 1
            }
        };
        Some(HunkSummary {
            index,
            old_start: start_number(&old_range),
            old_lines: old_range.len(),
            new_start: start_number(&new_range),
            new_lines: new_range.len(),
            header: format!(
                "@@ -{} +{} @@",
                header_range(old_range.start, old_range.len()),
                header_range(new_range.start, new_range.len())
            ),
        })
    }

    /// Hunk INDEX with its lines, or `None` past the last hunk. Replaced lines are refined
    /// word by word until REFINE_DEADLINE (not at all when it is `None`).
    pub fn hunk(&self, index: usize, refine_deadline: Option<Instant>) -> Option<Hunk> {
        let layout = self.layout(index, refine_deadline)?;
        let lines = layout
            .lines
            .into_iter()
            .map(|line| HunkLine {
                tag: line.tag,
                text: match line.source {
                    LineSource::Old(i) => strip_newline(self.old_line(i)).to_string(),
                    LineSource::New(i) => strip_newline(self.new_line(i)).to_string(),
                    LineSource::Marker => NO_NEWLINE_MARKER.to_string(),
                },
                refinement: line.refinement,
            })
            .collect();
        let summary = layout.summary;
        Some(Hunk {
            index,
            old_start: summary.old_start,
            old_lines: summary.old_lines,
            new_start: summary.new_start,
            new_lines: summary.new_lines,
            header: summary.header,
            lines,
            old_text: self.old.as_ref()[self.old_bytes(&layout.old_range)].to_string(),
            new_text: self.new.as_ref()[self.new_bytes(&layout.new_range)].to_string(),
        })
    }

    /// Hunk INDEX as line numbers rather than texts, or `None` past the last hunk (see
    /// [`LineDiff::hunk`]): for callers that take the texts from elsewhere.
    pub fn layout(&self, index: usize, refine_deadline: Option<Instant>) -> Option<HunkLayout> {
        let summary = self.summary(index)?;
        let (old_range, new_range) = self.ranges(index)?;
        let mut lines = Vec::new();
        let mut push = |tag: LineTag, source: LineSource, text: &str, refinement: Vec<(usize, usize)>| {
            lines.push(LineRef {
                tag,
                source,
                refinement,
            });
            if !text.ends_with('\n') {
                lines.push(LineRef {
                    tag: LineTag::NoNewline,
                    source: LineSource::Marker,
                    refinement: Vec::new(),
                });
            }
        };
        for op in &self.groups[index] {
            let (o, n) = (op.old_range(), op.new_range());
            match op.tag() {
                similar::DiffTag::Equal => {
                    for i in o {
                        push(LineTag::Context, LineSource::Old(i), self.old_line(i), Vec::new());
                    }
                }
                similar::DiffTag::Delete => {
                    for i in o {
                        push(LineTag::Removed, LineSource::Old(i), self.old_line(i), Vec::new());
                    }
                }
                similar::DiffTag::Insert => {
                    for i in n {
                        push(LineTag::Added, LineSource::New(i), self.new_line(i), Vec::new());
                    }
                }
                similar::DiffTag::Replace => {
                    let (mut old_ref, mut new_ref) = match refine_deadline {
                        Some(deadline) => refine_block(
                            &self.old.as_ref()[self.old_bytes(&o)],
                            &self.new.as_ref()[self.new_bytes(&n)],
                            deadline,
                        )
                        .unwrap_or_default(),
                        None => Default::default(),
                    };
                    old_ref.resize_with(o.len(), Vec::new);
                    new_ref.resize_with(n.len(), Vec::new);
                    for (i, r) in o.zip(old_ref) {
                        push(LineTag::Removed, LineSource::Old(i), self.old_line(i), r);
                    }
                    for (i, r) in n.zip(new_ref) {
                        push(LineTag::Added, LineSource::New(i), self.new_line(i), r);
                    }
                }
            }
        }
        Some(HunkLayout {
            summary,
            lines,
            old_range,
            new_range,
        })
    }

    /// Byte offsets of the starts of the old text's lines, plus its length at the end.
    pub fn old_line_starts(&self) -> &[usize] {
        &self.old_starts
    }

    /// Byte offsets of the starts of the new text's lines, plus its length at the end.
    pub fn new_line_starts(&self) -> &[usize] {
        &self.new_starts
    }

    /// The changed lines of hunk INDEX as a unified diff without context, or `None` past the
    /// last hunk: each run of removed (`-`) and added (`+`) lines (with their `\ No newline`
    /// markers) under its own `@@ -A,B +C,D @@` header, numbered as `diff -U0` numbers them
    /// (an empty side names the line before), counts always written; every line ends in `\n`.
    pub fn changes(&self, index: usize) -> Option<String> {
        let hunk = self.hunk(index, None)?;
        let (old_range, new_range) = self.ranges(index)?;
        // 1-based numbers of the next old and new lines.
        let (mut old, mut new) = (old_range.start + 1, new_range.start + 1);
        let mut out = String::new();
        let mut lines = hunk.lines.iter().peekable();
        while let Some(line) = lines.next() {
            if line.tag == LineTag::Context {
                old += 1;
                new += 1;
                continue;
            }
            let mut run = vec![line];
            while let Some(next) = lines.next_if(|l| l.tag != LineTag::Context) {
                run.push(next);
            }
            let count = |tag| run.iter().filter(|l| l.tag == tag).count();
            let (removed, added) = (count(LineTag::Removed), count(LineTag::Added));
            let _ = writeln!(
                out,
                "@@ -{},{removed} +{},{added} @@",
                if removed == 0 { old - 1 } else { old },
                if added == 0 { new - 1 } else { new }
            );
            for l in run {
                out.push_str(l.tag.prefix());
                out.push_str(&l.text);
                out.push('\n');
            }
            old += removed;
            new += added;
        }
        Some(out)
    }

    /// All the hunks, refined word by word within `REFINE_BUDGET` (100 ms; later hunks unrefined).
    pub fn hunks(&self) -> Vec<Hunk> {
        let deadline = refine_deadline();
        (0..self.len()).filter_map(|i| self.hunk(i, Some(deadline))).collect()
    }

    /// The text obtained from the old text by applying DECISIONS, one per hunk: the new side,
    /// the old side or an edited new side. Linear in the size of the texts.
    pub fn apply(&self, decisions: &[Decision]) -> Result<String, DiffError> {
        if self.len() != decisions.len() {
            return Err(DiffError::DecisionCount {
                expected: self.len(),
                got: decisions.len(),
            });
        }
        let (old, new) = (self.old.as_ref(), self.new.as_ref());
        let extra: usize = decisions
            .iter()
            .map(|d| match d {
                Decision::Edit(text) => text.len(),
                _ => 0,
            })
            .sum();
        let mut out = String::with_capacity(old.len().max(new.len()) + extra);
        let mut pos = 0;
        for (index, decision) in decisions.iter().enumerate() {
            let Some((old_range, new_range)) = self.ranges(index) else {
                continue;
            };
            let old_bytes = self.old_bytes(&old_range);
            out.push_str(&old[pos..old_bytes.start]);
            match decision {
                Decision::Accept => out.push_str(&new[self.new_bytes(&new_range)]),
                Decision::Reject => out.push_str(&old[old_bytes.clone()]),
                Decision::Edit(text) => out.push_str(text),
            }
            pos = old_bytes.end;
        }
        out.push_str(&old[pos..]);
        Ok(out)
    }

    /// The unified diff (`---`/`+++` header lines with the given labels, then the hunks), or
    /// the empty string when the texts are identical, as `diff -u` prints it.
    pub fn unified(&self, old_label: &str, new_label: &str) -> String {
        let mut out = String::new();
        if self.is_empty() {
            return out;
        }
        let changed: usize = self
            .groups
            .iter()
            .flatten()
            .map(|op| self.old_bytes(&op.old_range()).len() + self.new_bytes(&op.new_range()).len())
            .sum();
        out.reserve(changed + 64 * self.len());
        let _ = writeln!(out, "--- {old_label}\n+++ {new_label}");
        let put = |out: &mut String, prefix: char, line: &str| {
            out.push(prefix);
            out.push_str(line);
            if !line.ends_with('\n') {
                out.push('\n');
                out.push_str(NO_NEWLINE_MARKER);
                out.push('\n');
            }
        };
        for index in 0..self.len() {
            let Some(summary) = self.summary(index) else {
                continue;
            };
            out.push_str(&summary.header);
            out.push('\n');
            for op in &self.groups[index] {
                let (o, n) = (op.old_range(), op.new_range());
                match op.tag() {
                    similar::DiffTag::Equal => o.for_each(|i| put(&mut out, ' ', self.old_line(i))),
                    similar::DiffTag::Delete => o.for_each(|i| put(&mut out, '-', self.old_line(i))),
                    similar::DiffTag::Insert => n.for_each(|i| put(&mut out, '+', self.new_line(i))),
                    similar::DiffTag::Replace => {
                        o.for_each(|i| put(&mut out, '-', self.old_line(i)));
                        n.for_each(|i| put(&mut out, '+', self.new_line(i)));
                    }
                }
            }
        }
        out
    }
}

fn strip_newline(line: &str) -> &str {
    line.strip_suffix('\n').unwrap_or(line)
}

fn header_range(start: usize, len: usize) -> String {
    // `diff -u`: an empty range names the line before it; a length of 1 is omitted.
    match len {
        0 => format!("{start},0"),
        1 => format!("{}", start + 1),
        _ => format!("{},{len}", start + 1),
    }
}

/// Split a text into tokens for word refinement: runs of word characters, runs of horizontal
/// whitespace, a line end (`\n` or `\r\n`) and any other single character.
fn tokenize_words(text: &str) -> Vec<&str> {
    #[derive(PartialEq)]
    enum Class {
        Word,
        Space,
        Other,
    }
    fn class(c: char) -> Class {
        if c.is_alphanumeric() || c == '_' {
            Class::Word
        } else if c.is_whitespace() && c != '\n' && c != '\r' {
            Class::Space
        } else {
            Class::Other
        }
    }
    let mut tokens = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let mut end = i + c.len_utf8();
        if c == '\r' && matches!(chars.peek(), Some((_, '\n'))) {
            end += 1;
            chars.next();
        } else {
            let k = class(c);
            if k != Class::Other {
                while let Some(&(j, d)) = chars.peek() {
                    if class(d) != k {
                        break;
                    }
                    end = j + d.len_utf8();
                    chars.next();
                }
            }
        }
        tokens.push(&text[i..end]);
    }
    tokens
}

fn is_line_end(token: &str) -> bool {
    token == "\n" || token == "\r\n"
}

/// Changed character ranges, one list per line.
type LineRanges = Vec<Vec<(usize, usize)>>;

/// Per-line changed character ranges of a replaced block, or `None` when not worth refining.
fn refine_block(old_block: &str, new_block: &str, deadline: Instant) -> Option<(LineRanges, LineRanges)> {
    if old_block.len() > REFINE_MAX_BYTES || new_block.len() > REFINE_MAX_BYTES || Instant::now() > deadline {
        return None;
    }
    let old_tokens = tokenize_words(old_block);
    let new_tokens = tokenize_words(new_block);
    let ops = similar::capture_diff_slices_deadline(Algorithm::Myers, &old_tokens, &new_tokens, Some(deadline));
    if word_similarity(&ops, &old_tokens, &new_tokens) < REFINE_MIN_RATIO {
        return None;
    }
    let mut old_changed = vec![false; old_tokens.len()];
    let mut new_changed = vec![false; new_tokens.len()];
    for op in &ops {
        if !matches!(op.tag(), similar::DiffTag::Equal) {
            for flag in old_changed.get_mut(op.old_range())? {
                *flag = true;
            }
            for flag in new_changed.get_mut(op.new_range())? {
                *flag = true;
            }
        }
    }
    Some((
        ranges_per_line(&old_tokens, &old_changed),
        ranges_per_line(&new_tokens, &new_changed),
    ))
}

/// Share of non-blank characters the two token lists have in common (0.0 to 1.0); blank tokens
/// are left out so that shared spaces do not make unrelated lines look similar.
fn word_similarity(ops: &[DiffOp], old_tokens: &[&str], new_tokens: &[&str]) -> f32 {
    let weight = |tokens: &[&str]| -> usize {
        tokens
            .iter()
            .filter(|t| !t.trim().is_empty())
            .map(|t| t.chars().count())
            .sum()
    };
    let total = weight(old_tokens) + weight(new_tokens);
    if total == 0 {
        return 1.0;
    }
    let common: usize = ops
        .iter()
        .filter(|op| matches!(op.tag(), similar::DiffTag::Equal))
        .filter_map(|op| old_tokens.get(op.old_range()))
        .map(weight)
        .sum();
    (2 * common) as f32 / total as f32
}

/// Character ranges of the changed tokens, per line of the block; adjacent ranges merge.
fn ranges_per_line(tokens: &[&str], changed: &[bool]) -> LineRanges {
    let mut lines: Vec<Vec<(usize, usize)>> = vec![Vec::new()];
    let mut pos = 0;
    for (token, &is_changed) in tokens.iter().zip(changed) {
        if is_line_end(token) {
            lines.push(Vec::new());
            pos = 0;
            continue;
        }
        let len = token.chars().count();
        if is_changed {
            if let Some(current) = lines.last_mut() {
                match current.last_mut() {
                    Some(last) if last.1 == pos => last.1 = pos + len,
                    _ => current.push((pos, pos + len)),
                }
            }
        }
        pos += len;
    }
    lines
}

/// The refinement deadline for all the hunks of a diff built now, as [`LineDiff::hunks`] uses.
pub fn refine_deadline() -> Instant {
    Instant::now() + REFINE_BUDGET
}

/// The refinement deadline for one hunk built now, as a review builds the hunk it shows.
pub fn hunk_refine_deadline() -> Instant {
    Instant::now() + HUNK_REFINE_BUDGET
}

/// The hunks of the line diff from OLD to NEW, with word refinement of changed lines.
///
/// Identical texts give no hunks.
pub fn hunks(old: &str, new: &str) -> Result<Vec<Hunk>, DiffError> {
    Ok(LineDiff::new(old, new)?.hunks())
}

/// The text obtained from OLD by applying, for each hunk of the diff from OLD to NEW, its
/// decision: the new side, the old side or an edited new side. Linear in the size of the texts.
pub fn apply(old: &str, new: &str, decisions: &[Decision]) -> Result<String, DiffError> {
    LineDiff::new(old, new)?.apply(decisions)
}

/// A unified diff of OLD and NEW (`---`/`+++` header lines with the given labels, then the
/// hunks), or the empty string when the texts are identical, as `diff -u` prints it.
pub fn unified(old: &str, new: &str, old_label: &str, new_label: &str) -> Result<String, DiffError> {
    Ok(LineDiff::new(old, new)?.unified(old_label, new_label))
}

/// Where ORIGINAL is in CURRENT: the whole text, or its only occurrence as an excerpt.
///
/// Errors: [`DiffError::NotFound`] with the closest match, [`DiffError::Ambiguous`] with the
/// occurrences, [`DiffError::EmptyOriginal`], [`DiffError::TooLarge`].
///
/// Bounded: explaining a mismatch takes at most about `CLOSEST_MATCH_TIME` (50 ms) plus linear work
/// (the closest match is then the best found so far, and the explanation says so), and
/// counting the occurrences of an ambiguous excerpt stops after `OCCURRENCE_WORK` bytes (64 MiB).
pub fn locate(current: &str, original: &str) -> Result<Span, DiffError> {
    locate_until(current, original, Instant::now() + CLOSEST_MATCH_TIME)
}

/// [`locate`], with the closest-match search (if any) ending at DEADLINE at the latest.
fn locate_until(current: &str, original: &str, deadline: Instant) -> Result<Span, DiffError> {
    check_size("the current text", current)?;
    check_size("`original`", original)?;
    if original == current {
        return Ok(Span {
            start: 0,
            end: current.chars().count(),
            byte_start: 0,
            byte_end: current.len(),
            line: 1,
            whole: true,
        });
    }
    if original.is_empty() {
        return Err(DiffError::EmptyOriginal {
            lines: count_lines(current),
        });
    }
    let (found, truncated) = occurrences(current, original);
    match found.as_slice() {
        [] => {
            let budget = Budget::new(deadline, CLOSEST_MATCH_WORK);
            Err(DiffError::NotFound(Box::new(mismatch(current, original, budget))))
        }
        [byte_start] => {
            let prefix = &current[..*byte_start];
            let start = prefix.chars().count();
            Ok(Span {
                start,
                end: start + original.chars().count(),
                byte_start: *byte_start,
                byte_end: byte_start + original.len(),
                line: memchr::memchr_iter(b'\n', prefix.as_bytes()).count() + 1,
                whole: false,
            })
        }
        _ => {
            let mut lines = Vec::new();
            let mut line = 1;
            let mut counted = 0;
            for &at in found.iter().take(LISTED_OCCURRENCES) {
                line += memchr::memchr_iter(b'\n', &current.as_bytes()[counted..at]).count();
                counted = at;
                lines.push(line);
            }
            Err(DiffError::Ambiguous {
                count: found.len(),
                truncated,
                lines,
            })
        }
    }
}

/// Lines of TEXT, as [`split_lines`] counts them.
fn count_lines(text: &str) -> usize {
    let newlines = memchr::memchr_iter(b'\n', text.as_bytes()).count();
    newlines + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

/// Byte offsets of the occurrences of NEEDLE in HAYSTACK, overlapping ones included, and
/// whether counting stopped early: at [`MAX_OCCURRENCES`], or once two are known and the
/// comparisons exceed [`OCCURRENCE_WORK`] bytes (a long excerpt repeated many times over).
fn occurrences(haystack: &str, needle: &str) -> (Vec<usize>, bool) {
    let finder = memchr::memmem::Finder::new(needle.as_bytes());
    let step = needle.chars().next().map_or(1, char::len_utf8);
    let mut found = Vec::new();
    let mut from = 0;
    let mut work = 0usize;
    while let Some(i) = haystack.as_bytes().get(from..).and_then(|rest| finder.find(rest)) {
        found.push(from + i);
        work = work.saturating_add(i + needle.len());
        if found.len() >= MAX_OCCURRENCES || (found.len() >= 2 && work > OCCURRENCE_WORK) {
            return (found, true);
        }
        from += i + step;
    }
    (found, false)
}

/// The closest match of ORIGINAL in CURRENT and what differs there, searched within BUDGET.
fn mismatch(current: &str, original: &str, mut budget: Budget) -> Mismatch {
    let cur_lines = split_lines(current);
    let orig_lines = split_lines(original);
    let (start, cut_short) = closest_start(&cur_lines, &orig_lines, &mut budget);
    let Some(start) = start else {
        return Mismatch {
            line: None,
            excerpt: String::new(),
            detail: String::new(),
            cut_short,
        };
    };
    // The excerpt: the window the original would cover, with a little context, capped.
    let first = start.saturating_sub(MISMATCH_CONTEXT);
    let window_end = (start + orig_lines.len() + MISMATCH_CONTEXT).min(cur_lines.len());
    let shown_end = window_end.min(first + MISMATCH_MAX_LINES);
    let mut excerpt = String::new();
    for (i, line) in cur_lines[first..shown_end].iter().enumerate() {
        let line = strip_newline(line);
        let _ = write!(
            excerpt,
            "{:>6}: {}",
            first + i + 1,
            shorten(line, MISMATCH_MAX_LINE_CHARS)
        );
        if line.len() > MISMATCH_MAX_LINE_CHARS {
            let more = line.chars().count().saturating_sub(MISMATCH_MAX_LINE_CHARS);
            if more > 0 {
                let _ = write!(excerpt, " [{more} more characters]");
            }
        }
        excerpt.push('\n');
    }
    if shown_end < window_end {
        let _ = writeln!(excerpt, "   ...");
    }
    // The detail: the first line that differs.
    let mut detail = String::new();
    for (j, orig) in orig_lines.iter().enumerate() {
        let Some(cur) = cur_lines.get(start + j) else {
            let _ = write!(
                detail,
                "`original` continues past the end of the current text (its line {} is beyond the last line)",
                j + 1
            );
            break;
        };
        let (o, c) = (strip_newline(orig), strip_newline(cur));
        // The first and last lines of an excerpt may be partial lines.
        let partial = (j == 0 && c.ends_with(o)) || (j + 1 == orig_lines.len() && c.starts_with(o));
        if o == c || partial {
            continue;
        }
        if o.trim() == c.trim() {
            let _ = write!(
                detail,
                "line {} differs only in whitespace or line ending",
                start + j + 1
            );
        } else {
            let _ = write!(
                detail,
                "line {} is `{}` where `original` has `{}`",
                start + j + 1,
                shorten(c.trim_end_matches('\r'), 120),
                shorten(o.trim_end_matches('\r'), 120)
            );
        }
        break;
    }
    if original.contains("\r\n") != current.contains("\r\n") {
        if !detail.is_empty() {
            detail.push_str("; ");
        }
        detail.push_str("the line endings differ (CRLF and LF)");
    }
    Mismatch {
        line: Some(start + 1),
        excerpt,
        detail,
        cut_short,
    }
}

fn shorten(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        None => text.to_string(),
        Some((end, _)) => {
            let mut s = text[..end].to_string();
            s.push('…');
            s
        }
    }
}

/// Bits of the filter that spares hashing lines that cannot vote.
const VOTE_FILTER_BITS: usize = 1 << 16;

/// The filter bit of a trimmed line: from its length and its first and last bytes.
fn vote_filter_bit(line: &str) -> usize {
    let bytes = line.as_bytes();
    let (first, last) = (bytes.first().copied().unwrap_or(0), bytes.last().copied().unwrap_or(0));
    let key = (line.len() as u64)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add(u64::from(first) << 8 | u64::from(last))
        .wrapping_mul(0xff51_afd7_ed55_8ccd);
    (key >> 48) as usize % VOTE_FILTER_BITS
}

/// The 0-based line of CURRENT where ORIGINAL most plausibly starts, within BUDGET: each line
/// of ORIGINAL that appears (trimmed) in CURRENT votes for the start it implies; lines common in
/// ORIGINAL do not vote. Without votes, the line most similar to ORIGINAL's first non-blank
/// line ([`closest::closest_line`]). Also says how far the search got if it was cut short.
fn closest_start(cur_lines: &[&str], orig_lines: &[&str], budget: &mut Budget) -> (Option<usize>, Option<SearchCut>) {
    const MAX_REPEATS: usize = 4;
    let scan_cut = |done: usize, total: usize| SearchCut {
        done,
        total,
        what: closest::SCANNED,
    };
    // A filter on (length, first byte, last byte) spares hashing most lines of CURRENT.
    let mut filter = vec![0u64; VOTE_FILTER_BITS / 64];
    let mut positions: HashMap<&str, Vec<usize>> = HashMap::new();
    for (j, line) in orig_lines.iter().enumerate() {
        if j % VOTE_CLOCK_EVERY == 0 && !budget.in_time() {
            return (None, Some(scan_cut(0, cur_lines.len())));
        }
        let t = line.trim();
        if !t.is_empty() {
            let bit = vote_filter_bit(t);
            filter[bit / 64] |= 1 << (bit % 64);
            positions.entry(t).or_default().push(j);
        }
    }
    let mut votes = vec![0u32; cur_lines.len()];
    let mut any = false;
    let mut cut = None;
    for (i, line) in cur_lines.iter().enumerate() {
        if i % VOTE_CLOCK_EVERY == 0 && !budget.in_time() {
            cut = Some(scan_cut(i, cur_lines.len()));
            break;
        }
        let t = line.trim();
        let bit = vote_filter_bit(t);
        if filter[bit / 64] & (1 << (bit % 64)) == 0 {
            continue;
        }
        if let Some(js) = positions.get(t) {
            if js.len() <= MAX_REPEATS {
                for &j in js {
                    if let Some(v) = i.checked_sub(j).and_then(|s| votes.get_mut(s)) {
                        *v += 1;
                        any = true;
                    }
                }
            }
        }
    }
    if any || cut.is_some() {
        let mut best = 0;
        for (i, &v) in votes.iter().enumerate() {
            if v > votes[best] {
                best = i;
            }
        }
        return (any.then_some(best), cut);
    }
    // No line matches exactly: the line most similar to the first non-blank line of ORIGINAL.
    let Some((j, target)) = orig_lines
        .iter()
        .enumerate()
        .map(|(j, l)| (j, l.trim()))
        .find(|(_, l)| !l.is_empty())
    else {
        return (None, None);
    };
    let found = closest::closest_line(cur_lines, target, budget);
    (found.line.map(|i| i.saturating_sub(j)), found.cut_short)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    fn replace_line(text: &str, n: usize, with: &str) -> String {
        text.split_inclusive('\n')
            .enumerate()
            .map(|(i, l)| if i + 1 == n { format!("{with}\n") } else { l.to_string() })
            .collect()
    }

    fn tags(h: &Hunk) -> String {
        h.lines
            .iter()
            .map(|l| match l.tag {
                LineTag::Context => ' ',
                LineTag::Removed => '-',
                LineTag::Added => '+',
                LineTag::NoNewline => '\\',
            })
            .collect()
    }

    #[test]
    fn identical_texts_have_no_hunks() {
        assert!(hunks("a\nb\n", "a\nb\n").unwrap().is_empty());
        assert!(hunks("", "").unwrap().is_empty());
        assert_eq!(unified("x\n", "x\n", "a", "b").unwrap(), "");
    }

    #[test]
    fn one_change_has_three_lines_of_context() {
        let old = numbered(10);
        let new = replace_line(&old, 5, "LINE five");
        let h = hunks(&old, &new).unwrap();
        assert_eq!(h.len(), 1);
        assert_eq!(h[0].header, "@@ -2,7 +2,7 @@");
        assert_eq!((h[0].old_start, h[0].old_lines), (2, 7));
        assert_eq!((h[0].new_start, h[0].new_lines), (2, 7));
        assert_eq!(tags(&h[0]), "   -+   ");
        assert_eq!(h[0].lines[3].text, "line 5");
        assert_eq!(h[0].lines[4].text, "LINE five");
        assert_eq!(
            h[0].old_text,
            "line 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\n"
        );
        assert_eq!(
            h[0].new_text,
            "line 2\nline 3\nline 4\nLINE five\nline 6\nline 7\nline 8\n"
        );
    }

    #[test]
    fn changes_more_than_six_lines_apart_are_separate_hunks() {
        let old = numbered(30);
        // 7 unchanged lines between (6..=12): separate.
        let new = replace_line(&replace_line(&old, 5, "x"), 13, "y");
        assert_eq!(hunks(&old, &new).unwrap().len(), 2);
        // 6 unchanged lines between (6..=11): one hunk.
        let new = replace_line(&replace_line(&old, 5, "x"), 12, "y");
        let h = hunks(&old, &new).unwrap();
        assert_eq!(h.len(), 1);
        assert_eq!(h[0].header, "@@ -2,14 +2,14 @@");
    }

    #[test]
    fn changes_at_file_start_and_end() {
        let old = numbered(10);
        let new = replace_line(&replace_line(&old, 1, "first"), 10, "last");
        let h = hunks(&old, &new).unwrap();
        assert_eq!(h.len(), 2);
        assert_eq!(h[0].header, "@@ -1,4 +1,4 @@");
        assert_eq!(h[1].header, "@@ -7,4 +7,4 @@");
        assert_eq!(tags(&h[0]), "-+   ");
        assert_eq!(tags(&h[1]), "   -+");
    }

    // Expected outputs below were produced by GNU diffutils 3.8 `diff -u`.
    #[test]
    fn unified_matches_gnu_diff() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\nn\no\np\n";
        let new = "a\nb\nC\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\nn\nnew\no\np\n";
        let expected = "--- old\n+++ new\n@@ -1,6 +1,6 @@\n a\n b\n-c\n+C\n d\n e\n f\n@@ -12,5 +12,6 @@\n l\n m\n n\n+new\n o\n p\n";
        assert_eq!(unified(old, new, "old", "new").unwrap(), expected);
    }

    #[test]
    fn new_and_emptied_files() {
        let h = hunks("", "one\ntwo\n").unwrap();
        assert_eq!(h[0].header, "@@ -0,0 +1,2 @@");
        assert_eq!((h[0].old_start, h[0].old_lines, h[0].new_start), (0, 0, 1));
        let h = hunks("one\n", "").unwrap();
        assert_eq!(h[0].header, "@@ -1 +0,0 @@");
        assert_eq!(apply("one\n", "", &[Decision::Accept]).unwrap(), "");
        assert_eq!(apply("", "x\n", &[Decision::Accept]).unwrap(), "x\n");
    }

    #[test]
    fn missing_final_newline_gets_the_marker() {
        let h = hunks("a\nb", "a\nc").unwrap();
        assert_eq!(tags(&h[0]), " -\\+\\");
        assert_eq!(h[0].lines[2].text, NO_NEWLINE_MARKER);
        assert_eq!(
            unified("a\nb", "a\nb\n", "x", "y").unwrap(),
            "--- x\n+++ y\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"
        );
        assert_eq!(apply("a\nb", "a\nb\n", &[Decision::Accept]).unwrap(), "a\nb\n");
        assert_eq!(apply("a\nb\n", "a\nb", &[Decision::Accept]).unwrap(), "a\nb");
        assert_eq!(apply("a\nb\n", "a\nb", &[Decision::Reject]).unwrap(), "a\nb\n");
    }

    #[test]
    fn crlf_lines_are_kept_byte_for_byte() {
        let old = "one\r\nthe two\r\nthree\r\n";
        let new = "one\r\nthe TWO\r\nthree\r\n";
        let h = hunks(old, new).unwrap();
        assert_eq!(h[0].lines[1].text, "the two\r");
        assert_eq!(h[0].lines[1].refinement, vec![(4, 7)]);
        assert_eq!(apply(old, new, &[Decision::Accept]).unwrap(), new);
        // A line that only changes its ending is a change.
        let h = hunks("a\r\nb\n", "a\nb\n").unwrap();
        assert_eq!(tags(&h[0]), "-+ ");
    }

    #[test]
    fn word_refinement_uses_character_offsets() {
        let old = "déjà vu: café au lait\n";
        let new = "déjà vu: thé au lait\n";
        let h = hunks(old, new).unwrap();
        let removed = &h[0].lines[0];
        let added = &h[0].lines[1];
        assert_eq!(removed.refinement, vec![(9, 13)]);
        assert_eq!(added.refinement, vec![(9, 12)]);
        let chars: Vec<char> = removed.text.chars().collect();
        assert_eq!(chars[9..13].iter().collect::<String>(), "café");
        let chars: Vec<char> = added.text.chars().collect();
        assert_eq!(chars[9..12].iter().collect::<String>(), "thé");
    }

    #[test]
    fn refinement_across_several_lines_and_unrelated_lines() {
        let old = "fn a(x: u8) {}\nlet y = 1;\n";
        let new = "fn a(x: u16) {}\nlet y = 2;\n";
        let h = hunks(old, new).unwrap();
        assert_eq!(tags(&h[0]), "--++");
        assert_eq!(h[0].lines[0].refinement, vec![(8, 10)]);
        assert_eq!(h[0].lines[1].refinement, vec![(8, 9)]);
        assert_eq!(h[0].lines[2].refinement, vec![(8, 11)]);
        assert_eq!(h[0].lines[3].refinement, vec![(8, 9)]);
        // Completely different lines are not refined.
        let h = hunks("alpha beta gamma\n", "one two three four\n").unwrap();
        assert!(h[0].lines.iter().all(|l| l.refinement.is_empty()));
        // Pure additions carry no refinement.
        let h = hunks("a\n", "a\nb\n").unwrap();
        assert!(h[0].lines.iter().all(|l| l.refinement.is_empty()));
    }

    #[test]
    fn tokenizer_keeps_every_byte() {
        let text = "foo(bar_1, «baz»)  \t x\r\ny\n";
        let tokens = tokenize_words(text);
        assert_eq!(tokens.concat(), text);
        assert!(tokens.contains(&"bar_1"));
        assert!(tokens.contains(&"\r\n"));
        assert!(tokens.contains(&"  \t "));
    }

    #[test]
    fn apply_each_subset_of_three_hunks() {
        let old = numbered(40);
        let new = replace_line(&replace_line(&replace_line(&old, 2, "A"), 20, "B"), 39, "C");
        assert_eq!(hunks(&old, &new).unwrap().len(), 3);
        for mask in 0..8u32 {
            let decisions: Vec<Decision> = (0..3)
                .map(|i| {
                    if mask & (1 << i) != 0 {
                        Decision::Accept
                    } else {
                        Decision::Reject
                    }
                })
                .collect();
            let mut expected = old.clone();
            for (i, (line, with)) in [(2, "A"), (20, "B"), (39, "C")].iter().enumerate() {
                if mask & (1 << i) != 0 {
                    expected = replace_line(&expected, *line, with);
                }
            }
            assert_eq!(apply(&old, &new, &decisions).unwrap(), expected, "mask {mask}");
        }
    }

    #[test]
    fn apply_with_an_edited_hunk() {
        let old = numbered(20);
        let new = replace_line(&replace_line(&old, 3, "three"), 17, "seventeen");
        let h = hunks(&old, &new).unwrap();
        let edited = h[1].new_text.replace("seventeen", "SEVENTEEN");
        let out = apply(&old, &new, &[Decision::Reject, Decision::Edit(edited)]).unwrap();
        assert_eq!(out, replace_line(&old, 17, "SEVENTEEN"));
    }

    #[test]
    fn apply_checks_the_number_of_decisions() {
        let err = apply("a\n", "b\n", &[]).unwrap_err();
        assert_eq!(err, DiffError::DecisionCount { expected: 1, got: 0 });
        assert_eq!(err.to_string(), "expected 1 decision(s), one per hunk, got 0");
    }

    /// Deterministic pseudo-random texts: accepting all hunks gives NEW, rejecting all gives OLD,
    /// and the unified diff's line counts agree with the headers.
    #[test]
    fn accept_all_and_reject_all_round_trip() {
        struct Rng(u64);
        impl Rng {
            fn below(&mut self, n: u64) -> u64 {
                self.0 ^= self.0 << 13;
                self.0 ^= self.0 >> 7;
                self.0 ^= self.0 << 17;
                self.0 % n
            }
            fn text(&mut self, len: u64) -> String {
                let words = ["a", "b", "c", "é", "x y", "", "\r"];
                let mut s = String::new();
                for _ in 0..len {
                    s.push_str(words[self.below(words.len() as u64) as usize]);
                    if self.below(5) != 0 {
                        s.push('\n');
                    }
                }
                s
            }
        }
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        for _ in 0..300 {
            let (l1, l2) = (rng.below(30), rng.below(30));
            let old = rng.text(l1);
            let new = rng.text(l2);
            let h = hunks(&old, &new).unwrap();
            let n = h.len();
            assert_eq!(apply(&old, &new, &vec![Decision::Accept; n]).unwrap(), new);
            assert_eq!(apply(&old, &new, &vec![Decision::Reject; n]).unwrap(), old);
            for hunk in &h {
                let count = |t: &[LineTag]| hunk.lines.iter().filter(|l| t.contains(&l.tag)).count();
                assert_eq!(count(&[LineTag::Context, LineTag::Removed]), hunk.old_lines);
                assert_eq!(count(&[LineTag::Context, LineTag::Added]), hunk.new_lines);
                for line in &hunk.lines {
                    let len = line.text.chars().count();
                    assert!(line.refinement.iter().all(|&(s, e)| s < e && e <= len));
                }
            }
        }
    }

    /// A diff kept owned gives, hunk by hunk and on demand, what `hunks` gives all at once,
    /// and applies decisions as `apply` does.
    #[test]
    fn line_diff_on_demand_matches_all_at_once() {
        let old = numbered(60);
        let new = replace_line(&replace_line(&old, 2, "line two"), 40, "line forty").replace("line 20\n", "") + "tail";
        let all = hunks(&old, &new).unwrap();
        let diff = LineDiff::new(old.clone(), new.clone()).unwrap();
        assert_eq!(diff.len(), all.len());
        assert_eq!(diff.len(), 4);
        for (i, expected) in all.iter().enumerate() {
            let summary = diff.summary(i).unwrap();
            assert_eq!(
                (
                    summary.index,
                    summary.old_start,
                    summary.old_lines,
                    summary.new_start,
                    summary.new_lines
                ),
                (
                    expected.index,
                    expected.old_start,
                    expected.old_lines,
                    expected.new_start,
                    expected.new_lines
                )
            );
            assert_eq!(summary.header, expected.header);
            assert_eq!(&diff.hunk(i, Some(hunk_refine_deadline())).unwrap(), expected);
        }
        assert_eq!(diff.summary(4), None);
        assert_eq!(diff.hunk(4, None), None);
        let decisions = [
            Decision::Accept,
            Decision::Reject,
            Decision::Edit("x\n".into()),
            Decision::Accept,
        ];
        assert_eq!(diff.apply(&decisions).unwrap(), apply(&old, &new, &decisions).unwrap());
        assert_eq!(diff.old_text(), old);
        assert_eq!(diff.new_text(), new);
        assert_eq!(diff.unified("a", "b"), unified(&old, &new, "a", "b").unwrap());
    }

    /// Out of time at once, the line diff approximates: still a valid diff, whose hunks give
    /// back both texts.
    #[test]
    fn an_approximate_line_diff_is_still_valid() {
        let old: String = (0..2000).map(|i| format!("line {}\n", i % 700)).collect();
        let new: String = old.split_inclusive('\n').rev().collect::<String>() + "end\n";
        let diff = LineDiff::within(old.as_str(), new.as_str(), Duration::ZERO).unwrap();
        assert!(!diff.is_empty());
        assert_eq!(diff.apply(&vec![Decision::Accept; diff.len()]).unwrap(), new);
        assert_eq!(diff.apply(&vec![Decision::Reject; diff.len()]).unwrap(), old);
        let exact = LineDiff::new(old.as_str(), new.as_str()).unwrap();
        assert_eq!(exact.apply(&vec![Decision::Accept; exact.len()]).unwrap(), new);
    }

    #[test]
    fn changes_are_the_hunk_without_context() {
        let old = numbered(20);
        let new = replace_line(&old, 5, "five").replace("line 8\n", "line 8\nnew A\nnew B\n");
        let diff = LineDiff::new(old.as_str(), new.as_str()).unwrap();
        assert_eq!(diff.len(), 1);
        assert_eq!(
            diff.changes(0).unwrap(),
            "@@ -5,1 +5,1 @@\n-line 5\n+five\n@@ -8,0 +9,2 @@\n+new A\n+new B\n"
        );
        assert_eq!(diff.changes(1), None);
        // A removed last line without a newline keeps its marker; an emptied text.
        let diff = LineDiff::new("a\nb", "a\n").unwrap();
        assert_eq!(
            diff.changes(0).unwrap(),
            format!("@@ -2,1 +1,0 @@\n-b\n{NO_NEWLINE_MARKER}\n")
        );
        let diff = LineDiff::new("", "x\n").unwrap();
        assert_eq!(diff.changes(0).unwrap(), "@@ -0,0 +1,1 @@\n+x\n");
    }

    #[test]
    fn locate_whole_text_and_excerpt() {
        let current = "héllo\nwörld\nagain\n";
        let span = locate(current, current).unwrap();
        assert!(span.whole);
        assert_eq!((span.start, span.end), (0, 18));
        let span = locate(current, "wörld\n").unwrap();
        assert!(!span.whole);
        assert_eq!((span.start, span.end, span.line), (6, 12, 2));
        assert_eq!((span.byte_start, span.byte_end), (7, 14));
        assert_eq!(&current[span.byte_start..span.byte_end], "wörld\n");
        assert!(locate("", "").unwrap().whole);
    }

    #[test]
    fn locate_rejects_ambiguous_excerpts() {
        let current = "x = 1\ny = 2\nx = 1\nz\nx = 1\n";
        let err = locate(current, "x = 1\n").unwrap_err();
        assert_eq!(
            err,
            DiffError::Ambiguous {
                count: 3,
                truncated: false,
                lines: vec![1, 3, 5]
            }
        );
        assert!(err.to_string().contains("occurs 3 times"));
        assert!(err.to_string().contains("lines 1, 3, 5"));
        // Overlapping occurrences count too.
        assert!(matches!(
            locate("aaa", "aa"),
            Err(DiffError::Ambiguous { count: 2, .. })
        ));
        let many = "a".repeat(5000);
        assert!(matches!(
            locate(&many, "a"),
            Err(DiffError::Ambiguous { truncated: true, .. })
        ));
    }

    #[test]
    fn locate_explains_a_stale_original() {
        let current = numbered(50).replace("line 23\n", "line twenty-three\n");
        let original = "line 21\nline 22\nline 23\nline 24\n";
        let err = locate(&current, original).unwrap_err();
        let DiffError::NotFound(m) = &err else {
            panic!("expected NotFound, got {err:?}");
        };
        assert_eq!(m.line, Some(21));
        assert!(m.excerpt.contains("    23: line twenty-three"), "{}", m.excerpt);
        assert!(m.excerpt.contains("    19: line 19"));
        assert!(m
            .detail
            .contains("line 23 is `line twenty-three` where `original` has `line 23`"));
        let message = err.to_string();
        assert!(message.starts_with("`original` does not match the current text"));
        assert!(message.contains("Closest match at line 21"));
    }

    #[test]
    fn locate_mismatch_fallbacks() {
        // No line equal: the most similar line.
        let err = locate("alpha\nbravo charlie\ndelta\n", "bravo charly\n").unwrap_err();
        let DiffError::NotFound(m) = err else { panic!() };
        assert_eq!(m.line, Some(2));
        // Nothing similar at all.
        let err = locate("alpha\n", "zzzzzzzz qqqq\n").unwrap_err();
        let DiffError::NotFound(m) = err else { panic!() };
        assert_eq!(m.line, None);
        // Whitespace and line-ending differences are named.
        let err = locate("a\nb\nc\n", "a\r\nb\r\n").unwrap_err();
        let DiffError::NotFound(m) = err else { panic!() };
        assert!(m.detail.contains("whitespace or line ending"), "{}", m.detail);
        assert!(m.detail.contains("CRLF"));
        // Empty original against a non-empty text.
        assert_eq!(locate("a\nb\n", "").unwrap_err(), DiffError::EmptyOriginal { lines: 2 });
    }

    /// Texts of LINES lines of about WIDTH characters of words, the same for the same SEED.
    fn long_lines(lines: usize, width: usize, seed: u64) -> String {
        let words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"];
        let mut state = seed | 1;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            words[(state % 8) as usize]
        };
        let mut text = String::new();
        for i in 0..lines {
            let start = text.len();
            let _ = write!(text, "{i:06}");
            while text.len() - start < width {
                text.push(' ');
                text.push_str(next());
            }
            text.push('\n');
        }
        text
    }

    /// No deadline: large-input tests must not depend on the machine's speed (the benchmark
    /// times the real `locate`); the work budget still applies.
    fn locate_untimed(current: &str, original: &str) -> Result<Span, DiffError> {
        locate_until(current, original, Instant::now() + Duration::from_secs(3600))
    }

    /// A stale excerpt of a 2 MB text of 2,000 long lines, every line of it edited, so that no
    /// line votes and the closest line must be searched.
    #[test]
    fn stale_excerpt_of_long_lines_finds_the_edited_place() {
        let current = long_lines(2000, 1000, 11);
        let original: String = current
            .split_inclusive('\n')
            .skip(1200)
            .take(3)
            .map(|l| l.replacen("a", "A", 1))
            .collect();
        let err = locate_untimed(&current, &original).unwrap_err();
        let DiffError::NotFound(m) = &err else {
            panic!("expected NotFound, got {err:?}");
        };
        assert_eq!(m.line, Some(1201));
        assert_eq!(m.cut_short, None);
        assert!(m.excerpt.contains("  1201: 001200 "), "{}", m.excerpt);
        assert!(m.excerpt.contains("  1199: 001198 "));
        assert!(m.detail.starts_with("line 1201 is `001200 "), "{}", m.detail);
        // Long lines are shortened in the excerpt, saying by how much.
        let long = "x".repeat(5000);
        let text = format!("a\n{long}\nb\n");
        let DiffError::NotFound(m) = locate_untimed(&text, "a\nc\n").unwrap_err() else {
            panic!()
        };
        assert!(m.excerpt.contains("[4000 more characters]"), "{}", m.excerpt);
    }

    /// Every line a permutation of the same words: the bounds cannot prune, the work budget
    /// cuts the search short, and the result is still the edited line, saying it was cut.
    #[test]
    fn adversarial_stale_excerpt_is_cut_short_with_a_sensible_match() {
        let mut words: Vec<String> = (0..120).map(|i| format!("w{i:03}")).collect();
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut current = String::new();
        for _ in 0..12_000 {
            for i in (1..words.len()).rev() {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                words.swap(i, (state % (i as u64 + 1)) as usize);
            }
            current.push_str(&words.join(" "));
            current.push('\n');
        }
        let line = current.split_inclusive('\n').nth(9000).unwrap();
        let original = format!("{}#{}", &line[..300], &line[301..]);
        let err = locate_untimed(&current, &original).unwrap_err();
        let DiffError::NotFound(m) = &err else {
            panic!("expected NotFound, got {err:?}");
        };
        assert_eq!(m.line, Some(9001));
        let cut = m.cut_short.expect("the work budget runs out");
        assert_eq!(cut.what, closest::COMPARED);
        assert!(cut.done < cut.total);
        let message = err.to_string();
        assert!(
            message.contains(&format!(
                "Closest match at line 9001 (the best found before the search was cut short after {} of {} similar-looking lines compared",
                cut.done, cut.total
            )),
            "{message}"
        );
        assert!(message.contains("Current text there:\n  8999: "));
    }

    #[test]
    fn a_search_out_of_time_says_so() {
        let current = long_lines(300, 80, 5);
        let original = current.lines().nth(100).unwrap().replacen("a", "A", 1);
        let err = locate_until(&current, &original, Instant::now()).unwrap_err();
        let DiffError::NotFound(m) = &err else {
            panic!("expected NotFound, got {err:?}");
        };
        assert_eq!(m.line, None);
        assert_eq!(m.cut_short.map(|c| (c.done, c.what)), Some((0, closest::SCANNED)));
        assert!(err
            .to_string()
            .ends_with("No similar lines were found before the search was cut short after 0 of 300 lines scanned, to keep Emacs responsive."));
    }

    /// Counting the occurrences of a long repeated excerpt stops once it has compared enough.
    #[test]
    fn counting_long_overlapping_occurrences_is_bounded() {
        let current = "a".repeat(1_000_000);
        let original = "a".repeat(100_000);
        let err = locate_untimed(&current, &original).unwrap_err();
        let DiffError::Ambiguous {
            count,
            truncated,
            lines,
        } = &err
        else {
            panic!("expected Ambiguous, got {err:?}");
        };
        assert!(truncated);
        assert!((2..MAX_OCCURRENCES).contains(count), "{count}");
        assert_eq!(lines, &vec![1; LISTED_OCCURRENCES]);
        assert!(err.to_string().contains(&format!("occurs {count} or more times")));
    }

    #[test]
    fn large_inputs_are_refused() {
        let big = "x".repeat(MAX_TEXT_BYTES + 1);
        assert!(matches!(hunks(&big, ""), Err(DiffError::TooLarge { .. })));
        assert!(matches!(locate("", &big), Err(DiffError::TooLarge { .. })));
    }

    #[test]
    fn hundred_thousand_lines_with_one_percent_changed() {
        let old: String = (0..100_000).map(|i| format!("line {i} of the file\n")).collect();
        let new: String = old
            .split_inclusive('\n')
            .enumerate()
            .map(|(i, l)| {
                if i % 100 == 50 {
                    format!("changed {i}\n")
                } else {
                    l.to_string()
                }
            })
            .collect();
        let h = hunks(&old, &new).unwrap();
        assert_eq!(h.len(), 1000);
        let n = h.len();
        assert_eq!(apply(&old, &new, &vec![Decision::Accept; n]).unwrap(), new);
    }
}
