//! Waking Emacs from other threads, and native tools that run off its main thread.
//!
//! Only Emacs's main thread may touch Lisp values, so work done elsewhere (a native tool on the
//! tokio runtime, a request to the MCP server) is queued in Rust, and Emacs is told to come and
//! get it through a pipe process opened with the module API's `open_channel`: a worker writes one
//! byte, Emacs runs the pipe's filter on its main thread, and the filter drains the queues.
//!
//! At most one byte is in flight: [`wake`] writes only when no wake-up is pending, and the filter
//! clears the flag (`agent-q--core-channel-drained`) before draining. So a worker never blocks on
//! a full pipe, however long Emacs is busy, and a wake-up is never lost: anything queued after
//! the flag was cleared either sees it clear and writes, or is drained by the same filter run.

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use emacs::{defun, Env, IntoLisp, Result, Value};

use agent_q_core::executor::HandlerOutcome;
use agent_q_core::native::{self, Tool};

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

/// A native tool's run, finished or not.
struct Run {
    abort: Option<tokio::task::AbortHandle>,
}

#[derive(Default)]
struct Runs {
    running: HashMap<u64, Run>,
    finished: Vec<(u64, HandlerOutcome)>,
}

fn runs() -> &'static Mutex<Runs> {
    static RUNS: OnceLock<Mutex<Runs>> = OnceLock::new();
    RUNS.get_or_init(|| Mutex::new(Runs::default()))
}

fn finish(ticket: u64, outcome: HandlerOutcome) {
    let mut r = lock(runs());
    // A run aborted meanwhile is no longer wanted.
    if r.running.remove(&ticket).is_some() {
        r.finished.push((ticket, outcome));
        drop(r);
        wake();
    }
}

/// Start TOOL for a call named NAME with ARGS on the native runtime; its outcome is queued for
/// [`native_finished`] and Emacs is woken. Returns the run's ticket.
pub fn start_native(tool: Arc<dyn Tool>, name: String, args: serde_json::Map<String, serde_json::Value>) -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let ticket = NEXT.fetch_add(1, Ordering::Relaxed);
    lock(runs()).running.insert(ticket, Run { abort: None });
    let started = native::spawn(tool, name, args, move |result| {
        finish(
            ticket,
            match result {
                Ok(text) => HandlerOutcome::Success(text),
                Err(e) => HandlerOutcome::Failure(e.to_string()),
            },
        )
    });
    match started {
        Ok(abort) => {
            if let Some(run) = lock(runs()).running.get_mut(&ticket) {
                run.abort = Some(abort);
            }
        }
        Err(e) => finish(ticket, HandlerOutcome::Failure(e.to_string())),
    }
    ticket
}

/// The native runs finished since the last call: a list of (TICKET STATUS TEXT), STATUS
/// `:success' or `:failure'.
#[defun]
fn native_finished(env: &Env) -> Result<Value<'_>> {
    let finished = std::mem::take(&mut lock(runs()).finished);
    let success = env.intern(":success")?;
    let failure = env.intern(":failure")?;
    let items = finished
        .into_iter()
        .map(|(ticket, outcome)| {
            let (status, text) = match outcome {
                HandlerOutcome::Success(t) => (success, t),
                HandlerOutcome::Failure(t) | HandlerOutcome::Denied(t) | HandlerOutcome::Cancelled(t) => (failure, t),
            };
            env.list((i64::try_from(ticket).unwrap_or(i64::MAX), status, text))
        })
        .collect::<Result<Vec<_>>>()?;
    env.list(&items)
}

/// Abandon the native run TICKET: it is aborted and its outcome never delivered. Returns t if it
/// was still running.
#[defun]
fn native_abort(env: &Env, ticket: Value<'_>) -> Result<bool> {
    let ticket = super::args::integer(env, ticket, "TICKET")?;
    let run = lock(runs()).running.remove(&u64::try_from(ticket).unwrap_or(0));
    match run {
        Some(Run { abort: Some(a) }) => {
            a.abort();
            Ok(true)
        }
        Some(_) => Ok(true),
        None => Ok(false),
    }
}

/// The number of native runs under way.
#[defun]
fn native_running(env: &Env) -> Result<Value<'_>> {
    i64::try_from(lock(runs()).running.len())
        .unwrap_or(i64::MAX)
        .into_lisp(env)
}
