//! `agent-q--core-diff-*`: the [`crate::diff`] core for Emacs.
//!
//! All positions are CHARACTER positions (0-based, end exclusive), as Emacs counts. Errors signal
//! `agent-q-diff-error` with the core's message.

use emacs::{defun, Env, IntoLisp, Result, Value};

use super::args::{self, MAX_TEXT_BYTES};
use super::errors::{self, Kind};
use crate::diff::{self, Decision, DiffError, LineTag};

/// Most decisions read from a Lisp list.
const MAX_DECISIONS: usize = 10_000_000;

/// The text argument V, named WHAT, or an `agent-q-error`.
fn text(env: &Env, v: Value<'_>, what: &str) -> Result<String> {
    args::string(env, v, what, MAX_TEXT_BYTES)
}

fn fail<T>(env: &Env, error: DiffError) -> Result<T> {
    errors::signal(env, Kind::Diff, error.to_string())
}

fn tag_symbol(tag: LineTag) -> &'static str {
    match tag {
        LineTag::Context => "context",
        LineTag::Removed => "removed",
        LineTag::Added => "added",
        LineTag::NoNewline => "no-newline",
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
#[defun]
fn diff_hunks<'e>(env: &'e Env, old: Value<'e>, new: Value<'e>) -> Result<Value<'e>> {
    let (old, new) = (text(env, old, "OLD")?, text(env, new, "NEW")?);
    let hunks = match diff::hunks(&old, &new) {
        Ok(hunks) => hunks,
        Err(e) => return fail(env, e),
    };
    let kw = |name: &str| env.intern(name);
    let mut result = Vec::with_capacity(hunks.len());
    for hunk in hunks {
        let mut lines = Vec::with_capacity(hunk.lines.len());
        let mut refine = Vec::new();
        for (i, line) in hunk.lines.iter().enumerate() {
            lines.push(env.cons(env.intern(tag_symbol(line.tag))?, line.text.as_str())?);
            for &(start, end) in &line.refinement {
                refine.push(env.list((i, start, end))?);
            }
        }
        let plist = [
            kw(":index")?,
            hunk.index.into_lisp(env)?,
            kw(":header")?,
            hunk.header.into_lisp(env)?,
            kw(":old-start")?,
            hunk.old_start.into_lisp(env)?,
            kw(":old-lines")?,
            hunk.old_lines.into_lisp(env)?,
            kw(":new-start")?,
            hunk.new_start.into_lisp(env)?,
            kw(":new-lines")?,
            hunk.new_lines.into_lisp(env)?,
            kw(":lines")?,
            env.list(&lines[..])?,
            kw(":refine")?,
            env.list(&refine[..])?,
            kw(":old-text")?,
            hunk.old_text.into_lisp(env)?,
            kw(":new-text")?,
            hunk.new_text.into_lisp(env)?,
        ];
        result.push(env.list(&plist[..])?);
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
            format!("the symbol {name}")
        }
        // Not printed: the value may be huge, deeply nested or circular.
        other => format!("a {other}"),
    };
    errors::signal(
        env,
        Kind::Diff,
        format!("invalid hunk decision ({described}): expected accept, reject or a string (the edited new side)"),
    )
}

/// Return the text obtained from OLD by applying DECISIONS to the hunks of the diff OLD -> NEW.
///
/// DECISIONS has one element per hunk of `agent-q--core-diff-hunks', in order: `accept' (or
/// `:accept') takes the new side, `reject' (or `:reject') keeps the old side, and a string
/// replaces the hunk's old side (context included) with that text.
#[defun]
fn diff_apply<'e>(env: &'e Env, old: Value<'e>, new: Value<'e>, decisions: Value<'e>) -> Result<String> {
    let (old, new) = (text(env, old, "OLD")?, text(env, new, "NEW")?);
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
    match diff::apply(&old, &new, &parsed) {
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
/// prints it ("" when identical).
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
