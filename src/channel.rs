//! Waking Emacs from other threads.
//!
//! Only Emacs's main thread may touch Lisp values, so work done elsewhere (a request to the MCP
//! server or the IDE companion, a cross-reference scan on worker threads) is queued in Rust, and
//! Emacs is told to come and get it through a pipe process opened with the module API's
//! `open_channel`: a worker writes one byte, Emacs runs the pipe's filter on its main thread,
//! and the filter drains the queues.
//!
//! At most one byte is in flight: [`wake`] writes only when no wake-up is pending, and the filter
//! clears the flag (`agent-q--core-channel-drained`) before draining. So a worker never blocks on
//! a full pipe, however long Emacs is busy, and a wake-up is never lost: anything queued after
//! the flag was cleared either sees it clear and writes, or is drained by the same filter run.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use emacs::{defun, Env, Result, Value};

type Writer = Box<dyn Write + Send>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn writer() -> &'static Mutex<Option<Writer>> {
    static WRITER: OnceLock<Mutex<Option<Writer>>> = OnceLock::new();
    WRITER.get_or_init(|| Mutex::new(None))
}

/// Whether a wake-up byte is in the pipe and not yet drained.
static WAKE_PENDING: AtomicBool = AtomicBool::new(false);

/// Tell Emacs there is something to drain. Returns false when no channel is open.
pub fn wake() -> bool {
    let mut w = lock(writer());
    let Some(w) = w.as_mut() else { return false };
    if !WAKE_PENDING.swap(true, Ordering::AcqRel) && w.write_all(b"!").and_then(|()| w.flush()).is_err() {
        // The pipe is gone (Emacs closed it): the next open starts afresh.
        WAKE_PENDING.store(false, Ordering::Release);
        return false;
    }
    true
}

/// Whether a channel is open.
pub fn is_open() -> bool {
    lock(writer()).is_some()
}

/// Open the channel to Emacs through PROCESS, a pipe process whose filter calls
/// `agent-q--core-channel-drained' and then drains the queues. Replaces a previous channel.
#[defun]
fn channel_open(env: &Env, process: Value<'_>) -> Result<()> {
    if !env.call("processp", (process,))?.is_not_nil() {
        return super::errors::signal(
            env,
            super::errors::Kind::Generic,
            format!(
                "PROCESS must be a pipe process, not a {}",
                super::args::type_name(env, process)
            ),
        );
    }
    let w = env.open_channel(process)?;
    *lock(writer()) = Some(Box::new(w));
    WAKE_PENDING.store(false, Ordering::Release);
    Ok(())
}

/// Close the channel (Emacs is exiting, or the pipe process was deleted).
#[defun]
fn channel_close() -> Result<()> {
    *lock(writer()) = None;
    WAKE_PENDING.store(false, Ordering::Release);
    Ok(())
}

/// Acknowledge a wake-up: call this in the pipe's filter BEFORE draining the queues.
#[defun]
fn channel_drained() -> Result<()> {
    WAKE_PENDING.store(false, Ordering::Release);
    Ok(())
}
