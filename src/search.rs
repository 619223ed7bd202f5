//! `agent-q--core-search-buffer` and `agent-q--core-regex-search`: the [`agent_q_core::search`] core
//! for Emacs.
//!
//! Offsets are CHARACTER offsets (0-based, end exclusive), as Emacs counts. The text is copied
//! out of Emacs as UTF-8 once; raw bytes and characters beyond Unicode, which Emacs refuses to
//! encode for a module, become U+FFFD, one character each, so offsets stay exact (such a text
//! is copied again in pieces, polling for `C-g` between them). The search then runs on a worker thread while Emacs's
//! thread waits in slices of [`search::POLL`], polling for `C-g`: a quit stops the wait at once
//! and is signalled as Emacs signals any `quit`. Errors signal `agent-q-search-error` with the
//! core's message.

use std::time::{Duration, Instant};

use emacs::{defun, Env, ErrorKind, IntoLisp, ModuleError, Result, Value};

use super::args;
use super::convert::lisp::quit;
use super::errors::{self, Kind};
use super::quit::quit_requested;
use agent_q_core::search::{self, Limits, Query, SearchOutcome, SearchResult, Stop};

#[allow(missing_docs)]
mod lisp {
    emacs::use_symbols! {
        kw_total => ":total"
        kw_matches => ":matches"
        kw_stopped => ":stopped"
        kw_searched => ":searched"
        stop_count_limit => "count-limit"
        stop_time_limit => "time-limit"
        noninteractive
    }

    emacs::use_functions! {
        string_bytes
        message
        length
        substring
        string_to_vector
        multibyte_string_p
        point_min
        point_max
        position_bytes
        buffer_substring_no_properties
        symbol_value
    }
}
use lisp::*;

/// A text Emacs refuses to encode for the module (it holds raw bytes or characters beyond
/// Unicode) is copied again in pieces of these many characters, each refused piece in pieces
/// of the next size, and the pieces refused at the last size a character at a time (each
/// character read is a value Emacs keeps until the module call returns, so few are read).
/// Between two pieces of the first size the copy polls for `C-g`.
const PIECE_CHARS: [i64; 3] = [1 << 16, 1 << 11, 1 << 6];

/// UTF-8 of U+FFFD REPLACEMENT CHARACTER, which stands for each raw byte and each character
/// beyond Unicode: one character for one, so that offsets stay those of Emacs.
const REPLACEMENT: &[u8] = "\u{FFFD}".as_bytes();

/// Text copied out of Emacs as UTF-8.
struct Copy<'e> {
    env: &'e Env,
    bytes: Vec<u8>,
}

impl<'e> Copy<'e> {
    fn new(env: &'e Env, capacity: usize) -> Self {
        Copy {
            env,
            bytes: Vec::with_capacity(capacity),
        }
    }

    /// Append the Lisp string PIECE; false when Emacs refuses to encode it (raw bytes,
    /// characters beyond Unicode).
    fn try_append(&mut self, piece: Value<'e>) -> Result<bool> {
        let size: i64 = self.env.call(string_bytes, (piece,))?.into_rust()?;
        let start = self.bytes.len();
        // The internal size bounds the UTF-8 size of any string Emacs agrees to encode, so one
        // call to copy_string_contents suffices (the crate's `String' conversion makes two, and
        // Emacs encodes the whole text for each).
        self.bytes.resize(start + usize::try_from(size).unwrap_or(0) + 1, 0);
        match piece.copy_string_contents(&mut self.bytes[start..]) {
            Ok(copied) => {
                let len = copied.len();
                self.bytes.truncate(start + len);
                Ok(true)
            }
            Err(e) => {
                self.bytes.truncate(start);
                match e.downcast_ref::<ErrorKind>() {
                    Some(ErrorKind::Module(ModuleError::NonUnicodeString { .. })) => Ok(false),
                    _ => Err(e),
                }
            }
        }
    }

    /// Append the Lisp string TEXT, each raw byte or character beyond Unicode as U+FFFD; false
    /// when the user quit meanwhile.
    fn append(&mut self, text: Value<'e>) -> Result<bool> {
        let env = self.env;
        if !env.call(multibyte_string_p, (text,))?.is_not_nil() {
            // Emacs hands a unibyte string over byte for byte; each byte is a character there.
            let start = self.bytes.len();
            if !self.try_append(text)? {
                return errors::signal(env, Kind::Search, "a unibyte string could not be copied");
            }
            if !self.bytes[start..].is_ascii() {
                let raw = self.bytes.split_off(start);
                for b in raw {
                    if b.is_ascii() {
                        self.bytes.push(b);
                    } else {
                        self.bytes.extend_from_slice(REPLACEMENT);
                    }
                }
            }
            return Ok(true);
        }
        if self.try_append(text)? {
            return Ok(true);
        }
        // Refused: in smaller and smaller pieces, so that only the few characters Emacs cannot
        // encode are read one by one.
        let mut pending = vec![(text, 0usize)];
        while let Some((piece, level)) = pending.pop() {
            if level == 1 && quit_requested(env) {
                return Ok(false);
            }
            if level > 0 && self.try_append(piece)? {
                continue;
            }
            let Some(&size) = PIECE_CHARS.get(level) else {
                self.append_chars(piece)?;
                continue;
            };
            let chars: i64 = env.call(length, (piece,))?.into_rust()?;
            let mut pieces = Vec::new();
            let mut from = 0;
            while from < chars {
                let to = (from + size).min(chars);
                pieces.push((env.call(substring, (piece, from, to))?, level + 1));
                from = to;
            }
            // Last pushed is first handled: keep the text's order.
            pending.extend(pieces.into_iter().rev());
        }
        Ok(true)
    }

    /// Append PIECE a character at a time: slow, for the small pieces that hold raw bytes.
    fn append_chars(&mut self, piece: Value<'e>) -> Result<()> {
        let vector = self
            .env
            .call(string_to_vector, (piece,))?
            .into_rust::<emacs::Vector>()?;
        for i in 0..vector.len() {
            let code: i64 = vector.get(i)?;
            match u32::try_from(code).ok().and_then(char::from_u32) {
                Some(c) => self.bytes.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
                None => self.bytes.extend_from_slice(REPLACEMENT),
            }
        }
        Ok(())
    }
}

/// The text of the current buffer between `point-min' and `point-max', as UTF-8; None when the
/// user quit meanwhile.
///
/// It is taken in one piece: on a 20 MB buffer, one `buffer-substring-no-properties' and one
/// copy_string_contents took 41 ms, pieces of 64K characters 95 ms (each piece's start is
/// found again in the buffer, and Emacs's encoder is entered once per piece) and, with the
/// default `gc-cons-threshold', a garbage collection every few pieces.
fn copy_buffer(env: &Env) -> Result<Option<Vec<u8>>> {
    let start: i64 = env.call(point_min, [])?.into_rust()?;
    let end: i64 = env.call(point_max, [])?.into_rust()?;
    let first: i64 = env.call(position_bytes, (start,))?.into_rust()?;
    let last: i64 = env.call(position_bytes, (end,))?.into_rust()?;
    let mut copy = Copy::new(env, usize::try_from(last - first).unwrap_or(0));
    let text = env.call(buffer_substring_no_properties, (start, end))?;
    Ok(if copy.append(text)? { Some(copy.bytes) } else { None })
}

/// The Lisp string TEXT as UTF-8, each raw byte or character beyond Unicode as U+FFFD; None
/// when the user quit meanwhile.
fn copy_string(env: &Env, text: Value<'_>) -> Result<Option<Vec<u8>>> {
    let mut copy = Copy::new(env, 0);
    Ok(if copy.append(text)? { Some(copy.bytes) } else { None })
}

/// Search TEXT for QUERY within LIMITS on a worker thread, polling for quit; signal on failure.
fn run(env: &Env, text: Vec<u8>, query: Query, limits: Limits) -> Result<SearchResult> {
    let interactive = !env.call(symbol_value, (noninteractive,))?.is_not_nil();
    let outcome = search::search_in_background(
        text,
        query,
        limits,
        &search::WORKERS,
        || quit_requested(env),
        || {
            if interactive {
                let _ = env.call(message, ("agent-q: searching a large text... (C-g stops it)",));
            }
        },
    );
    match outcome {
        Ok(SearchOutcome::Done(found)) => Ok(found),
        Ok(SearchOutcome::Quit) => signal_quit(env),
        Err(e) => errors::signal(env, Kind::Search, e.to_string()),
    }
}

/// The error to return after [`quit_requested`] answered true: `quit`, which Emacs then
/// signals to the caller as it would for a `C-g` in any primitive.
fn signal_quit<T>(env: &Env) -> Result<T> {
    let nothing: &[Value<'_>] = &[];
    env.signal(quit, nothing)
}

/// MATCHES as a list of (START . END) conses.
fn match_list<'e>(env: &'e Env, matches: &[(usize, usize)]) -> Result<Value<'e>> {
    let mut list = ().into_lisp(env)?;
    for &(start, end) in matches.iter().rev() {
        list = env.cons(env.cons(start, end)?, list)?;
    }
    Ok(list)
}

/// Search the current buffer for PATTERN, off Emacs's thread and within limits; return a plist.
///
/// The text between `point-min' and `point-max' is searched. PATTERN is an Emacs regexp when
/// REGEXP is non-nil (see `agent-q--core-regex-search' for what is supported), else a literal
/// string, found as `search-forward' finds it. CASE-FOLD non-nil ignores case. The first
/// MAX-LISTED matches are listed; counting stops at MAX-COUNTED matches (0: count them all);
/// TIME-LIMIT, a number of seconds or nil, stops the search early. Raw bytes and characters
/// beyond Unicode are searched as U+FFFD, one character each.
///
/// The result is (:total N :matches ((START . END) ...) :stopped STOP :searched CHARS): N
/// matches counted, the listed ones as character offsets from `point-min' (0-based, END
/// exclusive), STOP nil when the whole text was searched, `count-limit' when counting stopped
/// at MAX-COUNTED (there may be more), `time-limit' when the time ran out; no match starting
/// before offset CHARS was missed. `C-g' while it runs, copying the text included, signals
/// `quit' at once. Signals `agent-q-search-error' for a pattern that cannot be searched for.
#[defun]
fn search_buffer<'e>(
    env: &'e Env,
    pattern: Value<'e>,
    regexp: Value<'e>,
    case_fold: Value<'e>,
    max_listed: Value<'e>,
    max_counted: Value<'e>,
    time_limit: Value<'e>,
) -> Result<Value<'e>> {
    let started = Instant::now();
    let pattern = args::string(env, pattern, "PATTERN", args::MAX_NAME_BYTES)?;
    let max_listed = args::integer(env, max_listed, "MAX-LISTED")?;
    let max_counted = args::integer(env, max_counted, "MAX-COUNTED")?;
    let deadline = if time_limit.is_not_nil() {
        let seconds: f64 = match time_limit.into_rust::<f64>() {
            Ok(s) => s,
            Err(_) => args::integer(env, time_limit, "TIME-LIMIT (a number of seconds)")? as f64,
        };
        if !(seconds.is_finite() && seconds >= 0.0) {
            return errors::signal(env, Kind::Search, format!("Invalid time limit {seconds}"));
        }
        Some(started + Duration::from_secs_f64(seconds.min(1e9)))
    } else {
        None
    };
    let limits = Limits {
        max_listed: usize::try_from(max_listed).unwrap_or(0),
        max_counted: usize::try_from(max_counted).unwrap_or(0),
        deadline,
    };
    let query = Query {
        pattern,
        regexp: regexp.is_not_nil(),
        case_fold: case_fold.is_not_nil(),
        dialect: dialect(env)?,
    };
    let Some(text) = copy_buffer(env)? else {
        return signal_quit(env);
    };
    let found = run(env, text, query, limits)?;
    let stopped = match found.stopped {
        None | Some(Stop::Cancelled) => ().into_lisp(env)?,
        Some(Stop::CountLimit) => stop_count_limit.bind(env),
        Some(Stop::TimeLimit) => stop_time_limit.bind(env),
    };
    env.list((
        kw_total,
        found.total,
        kw_matches,
        match_list(env, &found.matches)?,
        kw_stopped,
        stopped,
        kw_searched,
        found.searched,
    ))
}

/// Search TEXT for the Emacs regexp PATTERN in linear time; return (TOTAL . MATCHES).
///
/// TOTAL is the number of matches in TEXT; MATCHES lists the first MAX of them as
/// (START . END) character offsets into TEXT (0-based, END exclusive), in order. Matches follow
/// Emacs's `re-search-forward' loop: each search starts where the previous match ended, one
/// character further after an empty match. CASE-FOLD non-nil ignores case, like
/// `case-fold-search'. Raw bytes and characters beyond Unicode are searched as U+FFFD. The
/// search runs off Emacs's thread; `C-g' signals `quit' at once. A pattern that cannot be
/// translated (back-references, `\=', categories, mode-specific syntax classes), is invalid or
/// too large signals `agent-q-search-error' with a message that names the problem.
#[defun]
fn regex_search<'e>(
    env: &'e Env,
    text: Value<'e>,
    pattern: Value<'e>,
    case_fold: Value<'e>,
    max: Value<'e>,
) -> Result<Value<'e>> {
    if !env.call("stringp", (text,))?.is_not_nil() {
        return errors::signal(
            env,
            Kind::Search,
            format!("TEXT must be a string, not a {}", args::type_name(env, text)),
        );
    }
    let pattern = args::string(env, pattern, "PATTERN", args::MAX_NAME_BYTES)?;
    let max = args::integer(env, max, "MAX")?;
    let query = Query {
        pattern,
        regexp: true,
        case_fold: case_fold.is_not_nil(),
        dialect: dialect(env)?,
    };
    let Some(text) = copy_string(env, text)? else {
        return signal_quit(env);
    };
    let found = run(env, text, query, Limits::listing(usize::try_from(max).unwrap_or(0)))?;
    env.cons(found.total, match_list(env, &found.matches)?)
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
    match search::translate_in(&pattern, dialect(env)?) {
        Ok(t) => t.pattern.into_lisp(env),
        Err(e) => errors::signal(env, Kind::Search, e.to_string()),
    }
}

/// The regexp dialect of the running Emacs, from `emacs-major-version'.
fn dialect(env: &Env) -> Result<search::Dialect> {
    let major: i64 = env
        .call("symbol-value", [env.intern("emacs-major-version")?])?
        .into_rust()?;
    Ok(search::Dialect::of_emacs(major))
}
