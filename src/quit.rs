//! `C-g` while the module waits: the one place that asks Emacs whether the user quit.

use emacs::Env;

/// `emacs_process_input_quit` from emacs-module.h (Emacs 27+), which the crate does not re-export.
const PROCESS_INPUT_QUIT: u32 = 1;

/// Whether the user has asked to quit (`C-g`) since the module function was called.
///
/// `process_input` leaves a pending quit signal on ENV when it answers quit; it is cleared here,
/// because every caller reports the interruption in its result instead of unwinding (and a pending
/// signal would make every later call into Emacs fail).
pub fn quit_requested(env: &Env) -> bool {
    let raw = env.raw();
    // SAFETY: `raw` is the live env of the current module call, used on the Emacs thread;
    // process_input and non_local_exit_clear exist in the Emacs 28 env this module requires.
    unsafe {
        let Some(process_input) = (*raw).process_input else {
            return false;
        };
        if process_input(raw) != PROCESS_INPUT_QUIT {
            return false;
        }
        if let Some(clear) = (*raw).non_local_exit_clear {
            clear(raw);
        }
        true
    }
}
