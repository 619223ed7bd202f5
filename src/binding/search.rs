//! `agent-q--core-regex-search`: the [`crate::search`] core for Emacs.
//!
//! Offsets are CHARACTER offsets into the string passed (0-based, end exclusive), as Emacs
//! counts. Errors signal `agent-q-search-error` with the core's message.

use emacs::{defun, Env, IntoLisp, Result, Value};

use super::args;
use super::errors::{self, Kind};
use crate::search;

/// Search TEXT for the Emacs regexp PATTERN in linear time; return (TOTAL . MATCHES).
///
/// TOTAL is the number of matches in TEXT; MATCHES lists the first MAX of them as
/// (START . END) character offsets into TEXT (0-based, END exclusive), in order. Matches follow
/// Emacs's `re-search-forward' loop: each search starts where the previous match ended, one
/// character further after an empty match. CASE-FOLD non-nil ignores case, like
/// `case-fold-search'. A pattern that cannot be translated (back-references, `\=', categories,
/// mode-specific syntax classes), is invalid or too large signals `agent-q-search-error' with a
/// message that names the problem.
#[defun]
fn regex_search<'e>(
    env: &'e Env,
    text: Value<'e>,
    pattern: Value<'e>,
    case_fold: Value<'e>,
    max: Value<'e>,
) -> Result<Value<'e>> {
    let text = args::string(env, text, "TEXT", args::MAX_TEXT_BYTES)?;
    let pattern = args::string(env, pattern, "PATTERN", args::MAX_NAME_BYTES)?;
    let max = usize::try_from(args::integer(env, max, "MAX")?).unwrap_or(0);
    let found = match search::search(&text, &pattern, case_fold.is_not_nil(), max) {
        Ok(found) => found,
        Err(e) => return errors::signal(env, Kind::Search, e.to_string()),
    };
    let mut list = ().into_lisp(env)?;
    for &(start, end) in found.matches.iter().rev() {
        list = env.cons(env.cons(start, end)?, list)?;
    }
    env.cons(found.total, list)
}

/// Return PATTERN, an Emacs regexp, translated into the syntax of Rust's `regex' crate.
///
/// Useful to see how `agent-q--core-regex-search' reads a pattern. A `\_<' at the very start or
/// `\_>' at the very end (without top-level `\|') is checked exactly on each match and so
/// does not appear in the translation. Signals
/// `agent-q-search-error' for a pattern it cannot translate.
#[defun]
fn regex_translate<'e>(env: &'e Env, pattern: Value<'e>) -> Result<Value<'e>> {
    let pattern = args::string(env, pattern, "PATTERN", args::MAX_NAME_BYTES)?;
    match search::translate(&pattern) {
        Ok(t) => t.pattern.into_lisp(env),
        Err(e) => errors::signal(env, Kind::Search, e.to_string()),
    }
}
