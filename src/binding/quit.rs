//! Noticing `C-g` from inside a module call.
//!
//! Emacs cannot interrupt Rust code: a module function that runs for long must ask whether the
//! user quit. The module API's `process_input` (Emacs 27+) does that: it processes pending input
//! and, when `quit-flag` is set (`C-g`, or SIGINT in a terminal), clears it and leaves a `quit`
//! signal pending for the current module call.

use emacs::{Env, Result};

use super::convert::lisp::quit;

/// `emacs_process_input_quit` from emacs-module.h (Emacs 27+), which the crate does not re-export.
const PROCESS_INPUT_QUIT: u32 = 1;

/// Whether the user has quit (`C-g`) since the last check.
///
/// When this answers true, Emacs has a `quit` signal pending for the current module call: any
/// further call into Emacs fails with it, and it is signalled when the module function returns.
pub fn requested(env: &Env) -> bool {
    let raw = env.raw();
    // SAFETY: `raw` is the live env of the current module call; process_input exists in the
    // Emacs 28 env structure this module requires.
    unsafe {
        match (*raw).process_input {
            Some(f) => f(raw) == PROCESS_INPUT_QUIT,
            None => false,
        }
    }
}

/// The error to return from a module function after [`requested`] answered true: `quit`, which
/// Emacs then signals to the caller as it would for a `C-g` in any primitive.
pub fn signal<T>(env: &Env) -> Result<T> {
    let raw = env.raw();
    // SAFETY: as above. The pending `quit` is cleared so that the env can be used to signal it
    // again, explicitly, as this call's error.
    unsafe {
        if let Some(clear) = (*raw).non_local_exit_clear {
            clear(raw);
        }
    }
    let nothing: &[emacs::Value<'_>] = &[];
    env.signal(quit, nothing)
}
