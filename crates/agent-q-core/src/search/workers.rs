//! Searching on a worker thread, a bounded number at once, while the caller's thread waits in
//! short slices and asks whether the user quit.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use super::matching::{run, Pattern, Windows};
use super::translate::Dialect;
use super::{Limits, SearchError, SearchResult};

/// What to search for, given to [`search_in_background`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// The pattern.
    pub pattern: String,
    /// Whether it is an Emacs regexp (else a literal string).
    pub regexp: bool,
    /// Whether case is ignored.
    pub case_fold: bool,
    /// Whose regexp engine to agree with.
    pub dialect: Dialect,
}

/// How a search run by [`search_in_background`] ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SearchOutcome {
    /// It finished, or stopped at a limit.
    Done(SearchResult),
    /// The caller's `should_quit` answered true; the worker was told to stop and left behind.
    Quit,
}

/// A bound on the worker threads running searches at once, those left behind included.
#[derive(Debug)]
pub struct Workers {
    running: AtomicUsize,
    max: usize,
}

impl Workers {
    /// At most MAX workers at once.
    pub const fn new(max: usize) -> Self {
        Workers {
            running: AtomicUsize::new(0),
            max,
        }
    }

    /// How many are running now.
    pub fn running(&self) -> usize {
        self.running.load(Ordering::SeqCst)
    }

    fn acquire(&'static self) -> Result<WorkerSlot, SearchError> {
        let before = self.running.fetch_add(1, Ordering::SeqCst);
        if before >= self.max {
            self.running.fetch_sub(1, Ordering::SeqCst);
            return Err(SearchError::Busy(before));
        }
        Ok(WorkerSlot(self))
    }
}

/// One worker's place in [`Workers`], given back when the worker ends (even by a panic).
struct WorkerSlot(&'static Workers);

impl Drop for WorkerSlot {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The workers of the module's searches: one running, and one left behind by a quit or a time
/// limit while inside a long step.
pub static WORKERS: Workers = Workers::new(2);

/// How often the waiting thread wakes up to call `should_quit`.
pub const POLL: Duration = Duration::from_millis(10);

/// How long after the deadline the waiting thread waits for the worker to report.
pub const GRACE: Duration = Duration::from_millis(100);

/// How long after the deadline the waiting thread waits for a windowed search, which stops at
/// its next check, before giving it up: only a machine too loaded to run it ever gets there.
pub const LATE: Duration = Duration::from_secs(5);

/// When `on_slow` is called (once), if the search has not finished.
pub const SLOW: Duration = Duration::from_secs(1);

/// Compile QUERY and search TEXT within LIMITS on a worker thread (one of WORKERS), while this
/// thread waits in slices of [`POLL`], calling SHOULD_QUIT after each.
///
/// When SHOULD_QUIT answers true, the worker is told to stop and this returns
/// [`SearchOutcome::Quit`] at once, without waiting for it. ON_SLOW is called once if the search is
/// still running after [`SLOW`]. At the deadline the worker stops at its next check and reports
/// what it found; if a search in one pass (its pattern can match across lines, unbounded) does
/// not within [`GRACE`] (it is inside one long step) the result is [`SearchError::Stuck`]; a
/// windowed one is waited for up to [`LATE`].
pub fn search_in_background(
    text: Vec<u8>,
    query: Query,
    limits: Limits,
    workers: &'static Workers,
    mut should_quit: impl FnMut() -> bool,
    mut on_slow: impl FnMut(),
) -> Result<SearchOutcome, SearchError> {
    let slot = workers.acquire()?;
    let started = Instant::now();
    let cancel = Arc::new(AtomicBool::new(false));
    let (sender, receiver) = mpsc::channel();
    let worker_cancel = Arc::clone(&cancel);
    // Whether the worker searches in one unstoppable pass: known once the pattern is compiled.
    let whole = Arc::new(AtomicBool::new(false));
    let worker_whole = Arc::clone(&whole);
    std::thread::Builder::new()
        .name("agent-q-search".into())
        .spawn(move || {
            let slot = slot;
            let answer = if query.regexp {
                Pattern::regexp_in(&query.pattern, query.case_fold, query.dialect)
            } else {
                Pattern::literal(&query.pattern, query.case_fold)
            }
            .map(|pattern| {
                worker_whole.store(pattern.windows == Windows::Whole, Ordering::Relaxed);
                run(&text, &pattern, &limits, &worker_cancel)
            });
            // Given back before answering, so that the next search, which may start as soon as
            // the answer arrives, finds it free.
            drop(slot);
            // The receiver is gone when the waiting thread left: nothing to report then.
            let _ = sender.send(answer);
        })
        .map_err(|e| SearchError::Failed(format!("cannot start a search thread: {e}")))?;
    let mut slow_reported = false;
    loop {
        match receiver.recv_timeout(POLL) {
            Ok(answer) => return answer.map(SearchOutcome::Done),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(SearchError::Failed("the search thread ended without an answer".into()))
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if should_quit() {
            cancel.store(true, Ordering::Relaxed);
            return Ok(SearchOutcome::Quit);
        }
        if let Some(deadline) = limits.deadline {
            let now = Instant::now();
            if now >= deadline + GRACE && whole.load(Ordering::Relaxed) {
                cancel.store(true, Ordering::Relaxed);
                return Err(SearchError::Stuck);
            }
            // A windowed search stops at its next check, a window's time after the deadline; a
            // loaded machine may take longer to give it the processor, which is no reason to
            // call it stuck. Only one that does not answer long after is given up.
            if now >= deadline + LATE {
                cancel.store(true, Ordering::Relaxed);
                return Err(SearchError::Failed(format!(
                    "the search thread did not stop within {} s of its time limit",
                    LATE.as_secs()
                )));
            }
        }
        if !slow_reported && started.elapsed() >= SLOW {
            slow_reported = true;
            on_slow();
        }
    }
}

#[cfg(test)]
mod tests;
