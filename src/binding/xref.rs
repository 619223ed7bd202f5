//! `agent-q--core-xref-scan`: the Emacs side of [`crate::xref`].

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use emacs::{defun, Env, IntoLisp, Result, Value};

use super::errors::{self, Kind as ErrorKind};
use crate::xref::{self, Kind, ScanCache, ScanOptions};

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

/// Scan the Emacs Lisp source FILES (`.el` or `.el.gz`) for the symbol NAME.
///
/// KIND is the symbol `call` (call sites and function references) or `reference` (variable
/// references). Returns (HITS . ERRORS): HITS is a list of (FILE LINE COLUMN DEFINITION
/// LINE-TEXT) sorted by file then line, DEFINITION the enclosing definition's name or nil;
/// ERRORS is a list of (FILE . MESSAGE) for the files that could not be read. Signals
/// `agent-q-xref-error` for an invalid NAME, KIND or FILES.
///
/// The files parsed get an index of their symbols (see `agent-q--core-xref-index` for the
/// others), kept until the file's size or modification time changes, so later scans skip the
/// files that do not contain NAME without reading them.
#[defun]
fn xref_scan<'e>(env: &'e Env, files: Value<'e>, name: Value<'e>, kind: Value<'e>) -> Result<Value<'e>> {
    let name = super::args::string(env, name, "NAME", super::args::MAX_NAME_BYTES)?;
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
    let files = file_list(env, files)?;
    // No call back into Emacs happens while the lock is held.
    let scanned = xref::scan_files_cached(&files, &name, kind, &ScanOptions::default(), &mut cache());
    let report = match scanned {
        Ok(report) => report,
        Err(e) => return errors::signal(env, ErrorKind::Xref, e.to_string()),
    };
    let mut errors_list = ().into_lisp(env)?;
    for error in report.errors.iter().rev() {
        let entry = env.cons(error.file.to_string_lossy().into_owned(), error.error.to_string())?;
        errors_list = env.cons(entry, errors_list)?;
    }
    let mut hits = ().into_lisp(env)?;
    // Consecutive hits share their file's Lisp string.
    let mut file_value: Option<(&std::path::Path, Value<'e>)> = None;
    for hit in report.hits.iter().rev() {
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
    env.cons(hits, errors_list)
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
