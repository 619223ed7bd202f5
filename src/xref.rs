//! `agent-q--core-xref-scan`: the Emacs side of [`agent_q_core::xref`].

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use emacs::{defun, Env, IntoLisp, Result, Value};

use super::errors::{self, Kind as ErrorKind};
use super::quit::quit_requested;
use agent_q_core::xref::{self, Kind, ScanCache, ScanOptions, ScanReport};

/// The symbol indexes of the files scanned so far (see [`ScanCache`]), kept across calls.
static CACHE: OnceLock<Mutex<ScanCache>> = OnceLock::new();

/// Whether a background indexing thread is running.
static INDEXING: AtomicBool = AtomicBool::new(false);

fn cache_mutex() -> &'static Mutex<ScanCache> {
    CACHE.get_or_init(|| Mutex::new(ScanCache::new()))
}

/// The cache, locked; a poisoned lock (a panic while scanning) gives an emptied cache.
fn cache() -> MutexGuard<'static, ScanCache> {
    cache_mutex().lock().unwrap_or_else(|poisoned| {
        cache_mutex().clear_poison();
        let mut guard = poisoned.into_inner();
        guard.clear();
        guard
    })
}

/// The most files one scan accepts (also bounds the walk of a circular list).
const MAX_FILES: usize = 200_000;

/// Read the list FILES of file name strings.
fn file_list(env: &Env, files: Value<'_>) -> Result<Vec<PathBuf>> {
    // Measured first: a circular or dotted list is refused before anything is read from it.
    let length = env.call("proper-list-p", (files,))?;
    if !length.is_not_nil() {
        return errors::signal(
            env,
            ErrorKind::Xref,
            "FILES must be a proper list of file names (this one is circular, dotted or not a list)",
        );
    }
    let length = usize::try_from(length.into_rust::<i64>()?).unwrap_or(usize::MAX);
    if length > MAX_FILES {
        return errors::signal(
            env,
            ErrorKind::Xref,
            format!("too many files to scan (at most {MAX_FILES})"),
        );
    }
    let mut out = Vec::with_capacity(length);
    let mut rest = files;
    for _ in 0..length {
        let file: Value<'_> = rest.car()?;
        if !env.call("stringp", (file,))?.is_not_nil() {
            return errors::signal(env, ErrorKind::Xref, "FILES must contain only file name strings");
        }
        match super::convert::read_string(file, 64 << 10) {
            Ok(name) => out.push(PathBuf::from(name)),
            Err(_) => {
                return errors::signal(
                    env,
                    ErrorKind::Xref,
                    "FILES must contain only file names (of at most 64 KiB, valid Unicode text)",
                )
            }
        }
        rest = rest.cdr()?;
    }
    Ok(out)
}

/// How long the Emacs thread waits for a scan between two checks for quit (`C-g`).
const POLL: Duration = Duration::from_millis(10);

/// After a quit, how long the Emacs thread waits for the hits found so far. A worker stops
/// before its next file; one file takes well under this to parse.
const DRAIN: Duration = Duration::from_millis(200);

/// After this long, the wait shows its progress in the echo area...
const PROGRESS_AFTER: Duration = Duration::from_secs(1);

/// ...every so often.
const PROGRESS_EVERY: Duration = Duration::from_millis(500);

/// Why a scan stopped before its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// The user quit (`C-g`).
    Quit,
    /// The time limit passed.
    Timeout,
}

/// Run the scan on a worker thread while the Emacs thread waits in slices of [`POLL`], asking
/// Emacs whether the user quit. On a quit, or when MAX_WAIT has passed, the scan is cancelled
/// and what it found by then is returned with why it stopped. `Err` holds a message for
/// `agent-q-xref-error`.
fn scan_off_main_thread(
    env: &Env,
    files: Vec<PathBuf>,
    name: String,
    kind: Kind,
    max_wait: Option<Duration>,
) -> std::result::Result<(ScanReport, Option<Stop>), String> {
    // The scan reads each file once; so does the count shown in progress messages.
    let mut files = files;
    files.sort();
    files.dedup();
    let cancel = Arc::new(AtomicBool::new(false));
    let progress = Arc::new(AtomicUsize::new(0));
    let options = ScanOptions {
        cancel: Some(cancel.clone()),
        progress: Some(progress.clone()),
        ..ScanOptions::default()
    };
    let total = files.len();
    let what = format!(
        "Scanning for {} {name}",
        match kind {
            Kind::Call => "callers of",
            Kind::Reference => "references to",
        }
    );
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("agent-q-xref-scan".into())
        .spawn(move || {
            // The cache lock is taken here, never on the Emacs thread during a scan.
            let report = xref::scan_files_cached(&files, &name, kind, &options, &mut cache());
            let _ = tx.send(report);
        })
        .map_err(|e| format!("cannot start the scan thread: {e}"))?;
    let lost = || "internal error: the scan thread ended without a result".to_string();
    let started = Instant::now();
    let deadline = max_wait.and_then(|d| started.checked_add(d));
    let mut next_progress = started + PROGRESS_AFTER;
    let mut shown = false;
    let clear = |shown: bool| {
        if shown {
            let _ = env.call("message", ((),));
        }
    };
    loop {
        match rx.recv_timeout(POLL) {
            Ok(report) => {
                clear(shown);
                return report.map(|r| (r, None)).map_err(|e| e.to_string());
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return Err(lost()),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let now = Instant::now();
                let stop = if quit_requested(env) {
                    Stop::Quit
                } else if deadline.is_some_and(|d| now >= d) {
                    Stop::Timeout
                } else {
                    if now >= next_progress {
                        // `message' shows at once, even while Emacs is busy; in batch it goes
                        // to stderr. A failure to show progress is not worth failing the scan.
                        let done = progress.load(Ordering::Relaxed).min(total);
                        let text = format!("{what}: {done} of {total} files (C-g to stop)...");
                        shown |= env.call("message", ("%s", text)).is_ok();
                        next_progress = now + PROGRESS_EVERY;
                    }
                    continue;
                };
                clear(shown);
                cancel.store(true, Ordering::Relaxed);
                let report = match rx.recv_timeout(DRAIN) {
                    Ok(Ok(report)) => report,
                    _ => ScanReport {
                        files_total: total,
                        interrupted: true,
                        ..ScanReport::default()
                    },
                };
                // A scan that ended just as it was stopped is complete.
                let stopped = report.interrupted.then_some(stop);
                return Ok((report, stopped));
            }
        }
    }
}

/// Scan the Emacs Lisp source FILES (`.el` or `.el.gz`) for the symbol NAME.
///
/// KIND is the symbol `call` (call sites and function references) or `reference` (variable
/// references). MAX-HITS, an integer, is the most hits returned (nil: all). MAX-SECONDS, a
/// number, is the longest the scan may run (nil: no limit). Returns a plist
/// (:hits HITS :errors ERRORS :total TOTAL :scanned SCANNED :files FILES :interrupted STOP):
/// HITS a list of (FILE LINE COLUMN DEFINITION LINE-TEXT) sorted by file then line, DEFINITION
/// the enclosing definition's name or nil; ERRORS a list of (FILE . MESSAGE) for the files that
/// could not be read (a FIFO, device or directory among them is never opened for reading);
/// TOTAL the number of hits found (HITS may be fewer); SCANNED the files read; FILES the files
/// to scan; STOP nil when the scan was done, `quit` when the user quit (`C-g`) before, `timeout`
/// when MAX-SECONDS passed before, HITS and ERRORS then being those of the files done. Signals
/// `agent-q-xref-error` for an invalid NAME, KIND, MAX-HITS, MAX-SECONDS or FILES.
///
/// The scan runs on a worker thread; Emacs's thread waits in 10 ms slices, checking for quit,
/// and converts only the hits it returns.
///
/// The files parsed get an index of their symbols (see `agent-q--core-xref-index` for the
/// others), kept until the file's size or modification time changes, so later scans skip the
/// files that do not contain NAME without reading them.
#[defun]
fn xref_scan<'e>(
    env: &'e Env,
    files: Value<'e>,
    name: Value<'e>,
    kind: Value<'e>,
    max_hits: Value<'e>,
    max_seconds: Value<'e>,
) -> Result<Value<'e>> {
    let name = super::args::string(env, name, "NAME", super::args::MAX_NAME_BYTES)?;
    let (kind, max_hits, max_wait) = scan_arguments(env, &name, kind, max_hits, max_seconds)?;
    let files = file_list(env, files)?;
    let (report, stop) = match scan_off_main_thread(env, files, name, kind, max_wait) {
        Ok(done) => done,
        Err(message) => return errors::signal(env, ErrorKind::Xref, message),
    };
    report_value(env, &report, stop, max_hits)
}

/// Check a scan's KIND, NAME, MAX-HITS and MAX-SECONDS; signal `agent-q-xref-error` otherwise.
fn scan_arguments<'e>(
    env: &'e Env,
    name: &str,
    kind: Value<'e>,
    max_hits: Value<'e>,
    max_seconds: Value<'e>,
) -> Result<(Kind, usize, Option<Duration>)> {
    let kind_name: String = env
        .call("symbol-name", (kind,))
        .ok()
        .and_then(|v| super::convert::read_string(v, 64).ok())
        .map_or_else(
            || errors::signal(env, ErrorKind::Xref, "KIND must be the symbol `call` or `reference`"),
            Ok,
        )?;
    let kind: Kind = match kind_name.parse() {
        Ok(kind) => kind,
        Err(e) => return errors::signal(env, ErrorKind::Xref, e.to_string()),
    };
    if let Err(e) = xref::validate_name(name) {
        return errors::signal(env, ErrorKind::Xref, e.to_string());
    }
    let max_hits = if max_hits.is_not_nil() {
        match max_hits.into_rust::<i64>().ok().and_then(|n| usize::try_from(n).ok()) {
            Some(n) => n,
            None => return errors::signal(env, ErrorKind::Xref, "MAX-HITS must be nil or a natural number"),
        }
    } else {
        usize::MAX
    };
    let max_wait = if max_seconds.is_not_nil() {
        let seconds = env
            .call("numberp", (max_seconds,))?
            .is_not_nil()
            .then(|| {
                env.call("float", (max_seconds,))
                    .and_then(|v| v.into_rust::<f64>())
                    .ok()
            })
            .flatten();
        match seconds.and_then(|s| Duration::try_from_secs_f64(s).ok()) {
            Some(d) => Some(d),
            None => {
                return errors::signal(
                    env,
                    ErrorKind::Xref,
                    "MAX-SECONDS must be nil or a non-negative number of seconds",
                )
            }
        }
    } else {
        None
    };
    Ok((kind, max_hits, max_wait))
}

/// A scan's REPORT as the plist `agent-q--core-xref-scan' returns, with at most MAX_HITS hits.
fn report_value<'e>(env: &'e Env, report: &ScanReport, stop: Option<Stop>, max_hits: usize) -> Result<Value<'e>> {
    let mut errors_list = ().into_lisp(env)?;
    for error in report.errors.iter().rev() {
        let entry = env.cons(error.file.to_string_lossy().into_owned(), error.error.to_string())?;
        errors_list = env.cons(entry, errors_list)?;
    }
    let mut hits = ().into_lisp(env)?;
    // Consecutive hits share their file's Lisp string.
    let mut file_value: Option<(&std::path::Path, Value<'e>)> = None;
    for hit in report.hits.iter().take(max_hits).rev() {
        let file = match file_value {
            Some((path, value)) if path == hit.file.as_path() => value,
            _ => {
                let value = hit.file.to_string_lossy().into_lisp(env)?;
                file_value = Some((hit.file.as_path(), value));
                value
            }
        };
        let entry = env.list((
            file,
            i64::try_from(hit.hit.line).unwrap_or(i64::MAX),
            i64::try_from(hit.hit.column).unwrap_or(i64::MAX),
            hit.hit.definition.as_deref(),
            hit.hit.text.as_str(),
        ))?;
        hits = env.cons(entry, hits)?;
    }
    let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    env.list((
        env.intern(":hits")?,
        hits,
        env.intern(":errors")?,
        errors_list,
        env.intern(":total")?,
        count(report.hits.len()),
        env.intern(":scanned")?,
        count(report.files_scanned),
        env.intern(":files")?,
        count(report.files_total),
        env.intern(":interrupted")?,
        match stop {
            None => env.intern("nil")?,
            Some(Stop::Quit) => env.intern("quit")?,
            Some(Stop::Timeout) => env.intern("timeout")?,
        },
    ))
}

/// Forget the symbol indexes of the scanned files; the next scan reads every file. Returns nil.
#[defun]
fn xref_clear_cache() -> Result<()> {
    cache().clear();
    Ok(())
}

/// Return (FILES . BYTES): how many files the scan cache indexes and about how much memory the
/// indexes use.
#[defun]
fn xref_cache_info(env: &Env) -> Result<Value<'_>> {
    let cache = cache();
    let files = i64::try_from(cache.len()).unwrap_or(i64::MAX);
    let bytes = i64::try_from(cache.size_in_bytes()).unwrap_or(i64::MAX);
    drop(cache);
    env.cons(files, bytes)
}

/// Clears [`INDEXING`] when the background thread ends, even by a panic.
struct IndexingDone;

impl Drop for IndexingDone {
    fn drop(&mut self) {
        INDEXING.store(false, Ordering::Release);
    }
}

/// Index the symbols of FILES for later scans (see `agent-q--core-xref-scan`).
///
/// With BACKGROUND nil, index them now and return how many files were (re)indexed. With
/// BACKGROUND non-nil, start a background thread that does it and return t, or nil when one is
/// already running or no thread could be started; scans may run meanwhile. Files already
/// indexed and unchanged are skipped; unreadable ones are ignored.
#[defun]
fn xref_index<'e>(env: &'e Env, files: Value<'e>, background: Value<'e>) -> Result<Value<'e>> {
    let files = file_list(env, files)?;
    let limit = ScanOptions::default().max_file_size;
    if !background.is_not_nil() {
        let count = xref::index_files(cache_mutex(), &files, limit);
        return i64::try_from(count).unwrap_or(i64::MAX).into_lisp(env);
    }
    if INDEXING.swap(true, Ordering::AcqRel) {
        return ().into_lisp(env);
    }
    let started = std::thread::Builder::new()
        .name("agent-q-xref-index".into())
        .spawn(move || {
            let _done = IndexingDone;
            xref::index_files(cache_mutex(), &files, limit);
        });
    if started.is_err() {
        INDEXING.store(false, Ordering::Release);
        return ().into_lisp(env);
    }
    true.into_lisp(env)
}

/// Return non-nil while a background indexing thread started by `agent-q--core-xref-index` runs.
#[defun]
fn xref_indexing_p() -> Result<bool> {
    Ok(INDEXING.load(Ordering::Acquire))
}

/// Scans started by `agent-q--core-xref-scan-start': running ones with their cancel flags, and
/// finished ones waiting to be taken.
#[derive(Default)]
struct Scans {
    running: std::collections::HashMap<u64, Arc<AtomicBool>>,
    finished: Vec<(u64, ScanOutcome, usize)>,
}

/// How an asynchronous scan ended: its report and why it stopped early, or an error message.
type ScanOutcome = std::result::Result<(ScanReport, Option<Stop>), String>;

fn scans() -> MutexGuard<'static, Scans> {
    static SCANS: OnceLock<Mutex<Scans>> = OnceLock::new();
    SCANS
        .get_or_init(|| Mutex::new(Scans::default()))
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// Start scanning FILES for NAME of KIND on a worker thread and return at once with a ticket.
///
/// Arguments as for `agent-q--core-xref-scan'. When the scan ends (done, cancelled with
/// `agent-q--core-xref-scan-cancel', or stopped after MAX-SECONDS), its plist is queued for
/// `agent-q--core-xref-scan-finished' and Emacs is woken through the channel, which must be open
/// (`agent-q--core-channel-open'). Emacs's thread is never held.
#[defun]
fn xref_scan_start<'e>(
    env: &'e Env,
    files: Value<'e>,
    name: Value<'e>,
    kind: Value<'e>,
    max_hits: Value<'e>,
    max_seconds: Value<'e>,
) -> Result<i64> {
    let name = super::args::string(env, name, "NAME", super::args::MAX_NAME_BYTES)?;
    use std::sync::atomic::AtomicU64;
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let (kind, max_hits, max_wait) = scan_arguments(env, &name, kind, max_hits, max_seconds)?;
    if !super::channel::is_open() {
        return errors::signal(
            env,
            ErrorKind::Xref,
            "no channel to Emacs is open for an asynchronous scan",
        );
    }
    let mut files = file_list(env, files)?;
    files.sort();
    files.dedup();
    let ticket = NEXT.fetch_add(1, Ordering::Relaxed);
    let cancel = Arc::new(AtomicBool::new(false));
    let timed_out = Arc::new(AtomicBool::new(false));
    scans().running.insert(ticket, cancel.clone());
    if let Some(wait) = max_wait {
        let (cancel, timed_out) = (cancel.clone(), timed_out.clone());
        let _ = std::thread::Builder::new()
            .name("agent-q-xref-deadline".into())
            .spawn(move || {
                std::thread::sleep(wait);
                timed_out.store(true, Ordering::Relaxed);
                cancel.store(true, Ordering::Relaxed);
            });
    }
    let options = ScanOptions {
        cancel: Some(cancel),
        ..ScanOptions::default()
    };
    let spawned = std::thread::Builder::new()
        .name("agent-q-xref-scan".into())
        .spawn(move || {
            let result = xref::scan_files_cached(&files, &name, kind, &options, &mut cache())
                .map(|report| {
                    let stop = report.interrupted.then(|| {
                        if timed_out.load(Ordering::Relaxed) {
                            Stop::Timeout
                        } else {
                            Stop::Quit
                        }
                    });
                    (report, stop)
                })
                .map_err(|e| e.to_string());
            let mut s = scans();
            // A cancelled scan's result is not wanted.
            if s.running.remove(&ticket).is_some() {
                s.finished.push((ticket, result, max_hits));
                drop(s);
                super::channel::wake();
            }
        });
    if let Err(e) = spawned {
        scans().running.remove(&ticket);
        return errors::signal(env, ErrorKind::Xref, format!("cannot start the scan thread: {e}"));
    }
    Ok(i64::try_from(ticket).unwrap_or(i64::MAX))
}

/// The scans finished since the last call: a list of (TICKET . PLIST), PLIST as
/// `agent-q--core-xref-scan' returns it, or (:error MESSAGE).
#[defun]
fn xref_scan_finished(env: &Env) -> Result<Value<'_>> {
    let finished = std::mem::take(&mut scans().finished);
    let mut items = Vec::with_capacity(finished.len());
    for (ticket, result, max_hits) in finished {
        let plist = match result {
            Ok((report, stop)) => report_value(env, &report, stop, max_hits)?,
            Err(message) => env.list((env.intern(":error")?, message))?,
        };
        items.push(env.cons(i64::try_from(ticket).unwrap_or(i64::MAX), plist)?);
    }
    env.list(&items)
}

/// Cancel the scan TICKET: it stops before its next file and its result is never delivered.
/// Returns t if it was running.
#[defun]
fn xref_scan_cancel(env: &Env, ticket: Value<'_>) -> Result<bool> {
    let ticket = super::args::integer(env, ticket, "TICKET")?;
    let cancel = scans().running.remove(&u64::try_from(ticket).unwrap_or(0));
    Ok(match cancel {
        Some(flag) => {
            flag.store(true, Ordering::Relaxed);
            true
        }
        None => false,
    })
}
