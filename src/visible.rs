//! `agent-q--core-visible`: the escaping of hidden characters ([`agent_q_core::visible`]) for Emacs,
//! used wherever agent-q shows text a model or a client chose.

use emacs::{defun, Env, Result, Value};

use super::args;

/// The longest text made visible at once, in bytes. The callers give it printed arguments
/// already shortened for a prompt or a view.
const MAX_TEXT_BYTES: usize = 64 << 20;

/// Return TEXT with its control, bidi, zero-width, separator, C1 and DEL characters written as
/// escapes (`\n`, `\t`, `\r`, `\uXXXX`), so that it shows on one line exactly as it is.
///
/// TEXT must be valid Unicode text (a string with raw bytes signals `agent-q-error`).
#[defun]
fn visible(env: &Env, text: Value<'_>) -> Result<String> {
    let text = args::string(env, text, "TEXT", MAX_TEXT_BYTES)?;
    Ok(agent_q_core::visible::visible(&text))
}
