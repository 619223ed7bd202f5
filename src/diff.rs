//! `agent-q--core-diff-*`: the [`agent_q_core::diff`] core for Emacs.
//!
//! All positions are CHARACTER positions (0-based, end exclusive), as Emacs counts. Errors signal
//! `agent-q-diff-error` with the core's message.

use emacs::{defun, Env, IntoLisp, Result, Value};

use super::args::{self, MAX_TEXT_BYTES};
use super::errors::{self, Kind};
use agent_q_core::diff::{self, Decision, DiffError, Hunk, HunkLayout, HunkSummary, LineDiff, LineSource, LineTag};

/// Most decisions read from a Lisp list.
const MAX_DECISIONS: usize = 10_000_000;

/// The text argument V, named WHAT, or an `agent-q-error`.
fn text(env: &Env, v: Value<'_>, what: &str) -> Result<String> {
    args::string(env, v, what, MAX_TEXT_BYTES)
}

fn fail<T>(env: &Env, error: DiffError) -> Result<T> {
    errors::signal(env, Kind::Diff, error.to_string())
}

/// The symbols a hunk plist uses, interned once per call rather than once per hunk or line.
struct Symbols<'e> {
    index: Value<'e>,
    header: Value<'e>,
    old_start: Value<'e>,
    old_lines: Value<'e>,
    new_start: Value<'e>,
    new_lines: Value<'e>,
    lines: Value<'e>,
    refine: Value<'e>,
    old_text: Value<'e>,
    new_text: Value<'e>,
    context: Value<'e>,
    removed: Value<'e>,
    added: Value<'e>,
    no_newline: Value<'e>,
}

impl<'e> Symbols<'e> {
    fn new(env: &'e Env) -> Result<Self> {
        Ok(Symbols {
            index: env.intern(":index")?,
            header: env.intern(":header")?,
            old_start: env.intern(":old-start")?,
            old_lines: env.intern(":old-lines")?,
            new_start: env.intern(":new-start")?,
            new_lines: env.intern(":new-lines")?,
            lines: env.intern(":lines")?,
            refine: env.intern(":refine")?,
            old_text: env.intern(":old-text")?,
            new_text: env.intern(":new-text")?,
            context: env.intern("context")?,
            removed: env.intern("removed")?,
            added: env.intern("added")?,
            no_newline: env.intern("no-newline")?,
        })
    }

    fn tag(&self, tag: LineTag) -> Value<'e> {
        match tag {
            LineTag::Context => self.context,
            LineTag::Removed => self.removed,
            LineTag::Added => self.added,
            LineTag::NoNewline => self.no_newline,
        }
    }

    /// The summary plist of a hunk: (:index :header :old-start :old-lines :new-start :new-lines).
    fn summary(&self, env: &'e Env, s: &HunkSummary) -> Result<Value<'e>> {
        env.list([
            self.index,
            s.index.into_lisp(env)?,
            self.header,
            s.header.as_str().into_lisp(env)?,
            self.old_start,
            s.old_start.into_lisp(env)?,
            self.old_lines,
            s.old_lines.into_lisp(env)?,
            self.new_start,
            s.new_start.into_lisp(env)?,
            self.new_lines,
            s.new_lines.into_lisp(env)?,
        ])
    }

    /// The full plist of a hunk, as documented at `agent-q--core-diff-hunks'.
    fn hunk(&self, env: &'e Env, hunk: &Hunk) -> Result<Value<'e>> {
        let mut lines = Vec::with_capacity(hunk.lines.len());
        let mut refine = Vec::new();
        for (i, line) in hunk.lines.iter().enumerate() {
            lines.push(env.cons(self.tag(line.tag), line.text.as_str())?);
            for &(start, end) in &line.refinement {
                refine.push(env.list((i, start, end))?);
            }
        }
        let plist = [
            self.index,
            hunk.index.into_lisp(env)?,
            self.header,
            hunk.header.as_str().into_lisp(env)?,
            self.old_start,
            hunk.old_start.into_lisp(env)?,
            self.old_lines,
            hunk.old_lines.into_lisp(env)?,
            self.new_start,
            hunk.new_start.into_lisp(env)?,
            self.new_lines,
            hunk.new_lines.into_lisp(env)?,
            self.lines,
            env.list(&lines[..])?,
            self.refine,
            env.list(&refine[..])?,
            self.old_text,
            hunk.old_text.as_str().into_lisp(env)?,
            self.new_text,
            hunk.new_text.as_str().into_lisp(env)?,
        ];
        env.list(&plist[..])
    }
}

/// A Lisp string argument with the character positions of its lines, so that the hunks' texts
/// can be taken from it with `substring-no-properties`.
///
/// Why: in Emacs 28 a module makes each string twice (unibyte, then decoded), so building the
/// hunks' lines and sides as new strings made twice the garbage that substrings of the caller's
/// strings make, and that garbage is what the collector then spends its time on.
struct LispText<'e, 't> {
    value: Value<'e>,
    /// Character position of the start of each line, plus the length at the end.
    char_starts: Vec<usize>,
    /// The text, as Rust has it.
    text: &'t str,
    byte_starts: &'t [usize],
}

impl<'e, 't> LispText<'e, 't> {
    /// VALUE, whose text is TEXT with lines at BYTE_STARTS; `None` when Emacs does not count its
    /// characters as Rust does (then positions would not match).
    fn new(env: &'e Env, value: Value<'e>, text: &'t str, byte_starts: &'t [usize]) -> Result<Option<Self>> {
        let char_starts: Vec<usize> = if text.is_ascii() {
            byte_starts.to_vec()
        } else {
            let mut chars = 0;
            let mut starts = Vec::with_capacity(byte_starts.len());
            starts.push(0);
            for pair in byte_starts.windows(2) {
                chars += text[pair[0]..pair[1]].chars().count();
                starts.push(chars);
            }
            starts
        };
        let length: usize = env.call("length", [value])?.into_rust()?;
        if char_starts.last() != Some(&length) {
            return Ok(None);
        }
        Ok(Some(LispText {
            value,
            char_starts,
            text,
            byte_starts,
        }))
    }

    fn substring(&self, env: &'e Env, from: usize, to: usize) -> Result<Value<'e>> {
        env.call("substring-no-properties", (self.value, from, to))
    }

    /// Line I without its newline.
    fn line(&self, env: &'e Env, i: usize) -> Result<Value<'e>> {
        let newline = self.text.as_bytes()[..self.byte_starts[i + 1]].last() == Some(&b'\n');
        self.substring(env, self.char_starts[i], self.char_starts[i + 1] - usize::from(newline))
    }

    /// Lines RANGE, newlines included.
    fn lines(&self, env: &'e Env, range: &std::ops::Range<usize>) -> Result<Value<'e>> {
        self.substring(env, self.char_starts[range.start], self.char_starts[range.end])
    }
}

impl<'e> Symbols<'e> {
    /// The plist of LAYOUT (as [`Symbols::hunk`] makes it), its texts taken from OLD and NEW.
    fn hunk_from(
        &self,
        env: &'e Env,
        layout: &HunkLayout,
        old: &LispText<'e, '_>,
        new: &LispText<'e, '_>,
    ) -> Result<Value<'e>> {
        let mut lines = Vec::with_capacity(layout.lines.len());
        let mut refine = Vec::new();
        for (i, line) in layout.lines.iter().enumerate() {
            let text = match line.source {
                LineSource::Old(n) => old.line(env, n)?,
                LineSource::New(n) => new.line(env, n)?,
                LineSource::Marker => diff::NO_NEWLINE_MARKER.into_lisp(env)?,
            };
            lines.push(env.cons(self.tag(line.tag), text)?);
            for &(start, end) in &line.refinement {
                refine.push(env.list((i, start, end))?);
            }
        }
        let s = &layout.summary;
        let plist = [
            self.index,
            s.index.into_lisp(env)?,
            self.header,
            s.header.as_str().into_lisp(env)?,
            self.old_start,
            s.old_start.into_lisp(env)?,
            self.old_lines,
            s.old_lines.into_lisp(env)?,
            self.new_start,
            s.new_start.into_lisp(env)?,
            self.new_lines,
            s.new_lines.into_lisp(env)?,
            self.lines,
            env.list(&lines[..])?,
            self.refine,
            env.list(&refine[..])?,
            self.old_text,
            old.lines(env, &layout.old_range)?,
            self.new_text,
            new.lines(env, &layout.new_range)?,
        ];
        env.list(&plist[..])
    }
}

/// Return the hunks of the line diff from OLD to NEW, a list of plists (nil when identical).
///
/// Each hunk is (:index I :header "@@ -a,b +c,d @@" :old-start A :old-lines B :new-start C
/// :new-lines D :lines LINES :refine REFINE :old-text OLD-SIDE :new-text NEW-SIDE). INDEX is
/// 0-based; starts are 1-based line numbers as in `diff -u`. LINES is a list of (TAG . TEXT),
/// TAG one of `context', `removed', `added', `no-newline' and TEXT the line without its newline.
/// REFINE is a list of (LINE START END): changed words of line LINE (0-based index in LINES),
/// START and END character offsets in its TEXT. OLD-SIDE and NEW-SIDE are the exact texts the
/// hunk covers, context included, newlines included.
///
/// This builds every hunk at once; a review of a large diff should use
/// `agent-q--core-diff-session' and build hunks as they are shown.
#[defun]
fn diff_hunks<'e>(env: &'e Env, old: Value<'e>, new: Value<'e>) -> Result<Value<'e>> {
    let old_text = text(env, old, "OLD")?;
    let new_text = text(env, new, "NEW")?;
    let diff = match LineDiff::new(old_text.as_str(), new_text.as_str()) {
        Ok(diff) => diff,
        Err(e) => return fail(env, e),
    };
    let symbols = Symbols::new(env)?;
    let mut result = Vec::with_capacity(diff.len());
    let texts = (
        LispText::new(env, old, &old_text, diff.old_line_starts())?,
        LispText::new(env, new, &new_text, diff.new_line_starts())?,
    );
    if let (Some(old), Some(new)) = &texts {
        let deadline = diff::refine_deadline();
        for index in 0..diff.len() {
            if let Some(layout) = diff.layout(index, Some(deadline)) {
                result.push(symbols.hunk_from(env, &layout, old, new)?);
            }
        }
    } else {
        for hunk in diff.hunks() {
            result.push(symbols.hunk(env, &hunk)?);
        }
    }
    env.list(&result[..])
}

fn decision<'e>(env: &'e Env, value: Value<'e>) -> Result<Decision> {
    let ty = args::type_name(env, value);
    let described = match ty.as_str() {
        "string" => return Ok(Decision::Edit(text(env, value, "An edited hunk")?)),
        "symbol" => {
            let name = args::string(env, env.call("symbol-name", [value])?, "A decision", 256)?;
            // Only the interned symbols are decisions: an uninterned look-alike is not.
            if env.call("intern-soft", [value])? == value {
                match name.as_str() {
                    "accept" | ":accept" => return Ok(Decision::Accept),
                    "reject" | ":reject" => return Ok(Decision::Reject),
                    _ => {}
                }
            }
            name
        }
        // Not printed: the value may be huge, deeply nested or circular.
        other => format!("(a {other})"),
    };
    errors::signal(
        env,
        Kind::Diff,
        format!("invalid hunk decision {described}: expected accept, reject or a string (the edited new side)"),
    )
}

/// DECISIONS, a Lisp list, as Rust values.
fn decisions<'e>(env: &'e Env, decisions: Value<'e>) -> Result<Vec<Decision>> {
    // Measured first: a circular or dotted list is refused before anything is read from it.
    let length = env.call("proper-list-p", [decisions])?;
    if !length.is_not_nil() {
        return errors::signal(
            env,
            Kind::Diff,
            "hunk decisions must be a proper list (this one is circular, dotted or not a list)",
        );
    }
    let length = usize::try_from(length.into_rust::<i64>()?).unwrap_or(usize::MAX);
    if length > MAX_DECISIONS {
        return errors::signal(
            env,
            Kind::Diff,
            format!("too many hunk decisions (at most {MAX_DECISIONS})"),
        );
    }
    let mut parsed = Vec::with_capacity(length.min(4096));
    let mut rest = decisions;
    for _ in 0..length {
        parsed.push(decision(env, rest.car()?)?);
        rest = rest.cdr()?;
    }
    Ok(parsed)
}

/// Return the text obtained from OLD by applying DECISIONS to the hunks of the diff OLD -> NEW.
///
/// DECISIONS has one element per hunk of `agent-q--core-diff-hunks', in order: `accept' (or
/// `:accept') takes the new side, `reject' (or `:reject') keeps the old side, and a string
/// replaces the hunk's old side (context included) with that text.
#[defun]
fn diff_apply<'e>(env: &'e Env, old: Value<'e>, new: Value<'e>, decisions: Value<'e>) -> Result<String> {
    let (old, new) = (text(env, old, "OLD")?, text(env, new, "NEW")?);
    let parsed = self::decisions(env, decisions)?;
    match diff::apply(&old, &new, &parsed) {
        Ok(text) => Ok(text),
        Err(e) => fail(env, e),
    }
}

/// A diff kept between calls, for a review that shows its hunks one at a time.
pub struct Session {
    diff: LineDiff<String>,
}

/// Return a diff session for the line diff from OLD to NEW: an opaque object.
///
/// The diff is computed once (a reordering of a whole large file is approximated after 80 ms,
/// so that opening a review never freezes Emacs); the session keeps both texts, and its hunks' lines and word
/// refinement are built only when asked for. Use `agent-q--core-diff-session-count' and
/// `agent-q--core-diff-session-summary' to list the hunks, `agent-q--core-diff-session-hunk'
/// for one hunk's details, `agent-q--core-diff-session-apply' to apply decisions and
/// `agent-q--core-diff-session-changes' for the changed lines of a hunk. The session is freed
/// when it is garbage-collected. Signal `agent-q-diff-error' when a text is too large.
#[defun(user_ptr)]
fn diff_session<'e>(env: &'e Env, old: Value<'e>, new: Value<'e>) -> Result<Session> {
    let (old, new) = (text(env, old, "OLD")?, text(env, new, "NEW")?);
    match LineDiff::within(old, new, diff::SESSION_LINE_DIFF_TIME) {
        Ok(diff) => Ok(Session { diff }),
        Err(e) => fail(env, e),
    }
}

/// SESSION as the diff session it must be, or an `agent-q-error`.
fn session_arg<'e>(env: &'e Env, session: Value<'e>) -> Result<std::cell::Ref<'e, Session>> {
    match session.into_ref::<Session>() {
        Ok(s) => Ok(s),
        Err(_) => errors::signal(
            env,
            Kind::Diff,
            format!(
                "SESSION must be a diff session from agent-q--core-diff-session, not a {}",
                args::type_name(env, session)
            ),
        ),
    }
}

/// Return the number of hunks of the diff SESSION (0 when the texts are identical).
#[defun]
fn diff_session_count<'e>(env: &'e Env, session: Value<'e>) -> Result<usize> {
    let session = session_arg(env, session)?;
    Ok(session.diff.len())
}

/// Return a vector with the summary of every hunk of SESSION, in order.
///
/// Each is (:index I :header "@@ -a,b +c,d @@" :old-start A :old-lines B :new-start C
/// :new-lines D), the first keys of a hunk of `agent-q--core-diff-hunks'. Cheap: no line of
/// any hunk is built.
#[defun]
fn diff_session_summary<'e>(env: &'e Env, session: Value<'e>) -> Result<Value<'e>> {
    let session = session_arg(env, session)?;
    let symbols = Symbols::new(env)?;
    let mut summaries = Vec::with_capacity(session.diff.len());
    for index in 0..session.diff.len() {
        if let Some(summary) = session.diff.summary(index) {
            summaries.push(symbols.summary(env, &summary)?);
        }
    }
    env.call("vector", &summaries[..])
}

fn hunk_index(env: &Env, session: &Session, index: Value<'_>) -> Result<usize> {
    let index = args::integer(env, index, "INDEX")?;
    match usize::try_from(index) {
        Ok(i) if i < session.diff.len() => Ok(i),
        _ => errors::signal(
            env,
            Kind::Diff,
            format!(
                "no hunk {index} in this diff: it has {} hunk(s), numbered from 0",
                session.diff.len()
            ),
        ),
    }
}

/// Return hunk INDEX (0-based) of SESSION as a plist, built now.
///
/// The plist is the one `agent-q--core-diff-hunks' returns for that hunk: :index, :header,
/// :old-start, :old-lines, :new-start, :new-lines, :lines, :refine, :old-text, :new-text.
/// Word refinement gets its own time budget on each call. Signal `agent-q-diff-error' when
/// there is no such hunk.
#[defun]
fn diff_session_hunk<'e>(env: &'e Env, session: Value<'e>, index: Value<'e>) -> Result<Value<'e>> {
    let session = session_arg(env, session)?;
    let index = hunk_index(env, &session, index)?;
    let Some(hunk) = session.diff.hunk(index, Some(diff::hunk_refine_deadline())) else {
        return errors::signal(env, Kind::Diff, format!("no hunk {index} in this diff"));
    };
    Symbols::new(env)?.hunk(env, &hunk)
}

/// Return the changed lines of hunk INDEX (0-based) of SESSION as a unified diff without
/// context: each run of removed (-) and added (+) lines under its own "@@ -A,B +C,D @@"
/// header, as `diff -U0' numbers them, each line ending in a newline. Context lines are left
/// out: they are the file's own text. Signal `agent-q-diff-error' when there is no such hunk.
#[defun]
fn diff_session_changes<'e>(env: &'e Env, session: Value<'e>, index: Value<'e>) -> Result<String> {
    let session = session_arg(env, session)?;
    let index = hunk_index(env, &session, index)?;
    Ok(session.diff.changes(index).unwrap_or_default())
}

/// Return the old text of SESSION with DECISIONS applied, without diffing again.
///
/// DECISIONS is a list with one element per hunk, in order, as for `agent-q--core-diff-apply':
/// `accept' (or `:accept'), `reject' (or `:reject'), or a string that replaces the hunk's old
/// side (context included).
#[defun]
fn diff_session_apply<'e>(env: &'e Env, session: Value<'e>, decisions: Value<'e>) -> Result<String> {
    let session = session_arg(env, session)?;
    let parsed = self::decisions(env, decisions)?;
    match session.diff.apply(&parsed) {
        Ok(text) => Ok(text),
        Err(e) => fail(env, e),
    }
}

/// Locate ORIGINAL in CURRENT: the whole text or a unique excerpt.
///
/// Return (:start S :end E :line L :whole BOOL): S and E are 0-based character positions (add 1
/// for buffer positions), L the 1-based line of S. Signal `agent-q-diff-error' with an
/// explanation when ORIGINAL is absent (with the current text around the closest match) or
/// occurs more than once (with the lines where it occurs).
#[defun]
fn diff_locate<'e>(env: &'e Env, current: Value<'e>, original: Value<'e>) -> Result<Value<'e>> {
    let (current, original) = (text(env, current, "CURRENT")?, text(env, original, "ORIGINAL")?);
    match diff::locate(&current, &original) {
        Ok(span) => env.list((
            env.intern(":start")?,
            span.start,
            env.intern(":end")?,
            span.end,
            env.intern(":line")?,
            span.line,
            env.intern(":whole")?,
            span.whole,
        )),
        Err(e) => fail(env, e),
    }
}

/// Return the unified diff of OLD and NEW with labels OLD-LABEL and NEW-LABEL, as `diff -u`
/// prints it ("" when identical). Only the benchmarks call it: built with the `bench` feature.
#[cfg(feature = "bench")]
#[defun]
fn diff_unified<'e>(
    env: &'e Env,
    old: Value<'e>,
    new: Value<'e>,
    old_label: Value<'e>,
    new_label: Value<'e>,
) -> Result<String> {
    let (old, new) = (text(env, old, "OLD")?, text(env, new, "NEW")?);
    let old_label = args::string(env, old_label, "OLD-LABEL", args::MAX_NAME_BYTES)?;
    let new_label = args::string(env, new_label, "NEW-LABEL", args::MAX_NAME_BYTES)?;
    match diff::unified(&old, &new, &old_label, &new_label) {
        Ok(text) => Ok(text),
        Err(e) => fail(env, e),
    }
}
