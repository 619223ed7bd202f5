//! Scanning many files on several threads sharing an atomic work index, with the cache, the
//! cancel flag and the progress count.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::index::{ScanCache, Stamp, SymbolIndex};
use super::read::{open_source, read_open_source, SourceReadError};
use super::source::scan_source_indexed;
use super::{validate_name, FileError, Hit, Kind, ScanOptions, ScanReport, XrefError};

/// Scan FILES for the symbol NAME of KIND, in parallel. Duplicate paths are scanned once. Files
/// that cannot be read are reported in [`ScanReport::errors`]; they do not stop the scan.
pub fn scan_files(files: &[PathBuf], name: &str, kind: Kind, options: &ScanOptions) -> Result<ScanReport, XrefError> {
    scan(files, name, kind, options, None)
}

/// [`scan_files`], using and updating CACHE: a file whose index says it does not contain NAME
/// (and whose size and modification time have not changed) is not read at all. The files the
/// scan has to parse anyway (NAME occurs in them) are indexed on the way;
/// [`index_files`](super::index_files) indexes the others, e.g. in a background thread.
pub fn scan_files_cached(
    files: &[PathBuf],
    name: &str,
    kind: Kind,
    options: &ScanOptions,
    cache: &mut ScanCache,
) -> Result<ScanReport, XrefError> {
    scan(files, name, kind, options, Some(cache))
}

/// What one worker found.
#[derive(Default)]
struct Part {
    hits: Vec<Hit>,
    errors: Vec<FileError>,
    scanned: usize,
    indexed: Vec<(PathBuf, Stamp, SymbolIndex)>,
}

fn scan(
    files: &[PathBuf],
    name: &str,
    kind: Kind,
    options: &ScanOptions,
    mut cache: Option<&mut ScanCache>,
) -> Result<ScanReport, XrefError> {
    validate_name(name)?;
    let mut files: Vec<&PathBuf> = files.iter().collect();
    files.sort();
    files.dedup();
    let next = AtomicUsize::new(0);
    let threads = options.threads.clamp(1, files.len().max(1));
    let use_cache = cache.is_some();
    let known = cache.as_deref();
    let limit = options.max_file_size;
    let cancelled = || options.cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed));
    let work = || {
        let mut part = Part::default();
        let mut buf = Vec::new();
        let mut compressed = Vec::new();
        loop {
            if cancelled() {
                break;
            }
            let idx = next.fetch_add(1, Ordering::Relaxed);
            let Some(&file) = files.get(idx) else { break };
            // Ok(false): cancelled while reading this file, which is then not counted.
            let result = open_source(file, limit).and_then(|(mut handle, stamp)| {
                let cached = known.and_then(|c| c.files.get(file)).filter(|(s, _)| *s == stamp);
                if let Some((_, index)) = cached {
                    if !index.may_contain(name.as_bytes()) {
                        return Ok(true);
                    }
                }
                read_open_source(&mut handle, limit, &mut buf, &mut compressed)?;
                let build = use_cache && cached.is_none();
                let Some((hits, index)) = scan_source_indexed(&buf, name, kind, build, options.cancel.as_deref())
                else {
                    return Ok(false);
                };
                part.hits.extend(hits.into_iter().map(|hit| Hit {
                    file: file.clone(),
                    hit,
                }));
                if let Some(index) = index {
                    part.indexed.push((file.clone(), stamp, index));
                }
                Ok(true)
            });
            if let Some(progress) = &options.progress {
                progress.fetch_add(1, Ordering::Relaxed);
            }
            match result {
                Ok(true) => part.scanned += 1,
                Ok(false) => break,
                Err(error) => part.errors.push(FileError {
                    file: file.clone(),
                    error,
                }),
            }
        }
        part
    };
    let parts: Vec<Part> = if threads == 1 {
        vec![work()]
    } else {
        std::thread::scope(|s| {
            // The calling thread works too; a thread that cannot be created is simply missing.
            let handles: Vec<_> = (1..threads)
                .filter_map(|_| std::thread::Builder::new().spawn_scoped(s, work).ok())
                .collect();
            let own = work();
            std::iter::once(own)
                .chain(handles.into_iter().map(|h| {
                    // A worker cannot panic on input, but never let one take Emacs down.
                    h.join().unwrap_or_else(|_| Part {
                        errors: vec![FileError {
                            file: PathBuf::new(),
                            error: SourceReadError::Io(std::io::Error::other("internal error in a scan worker")),
                        }],
                        ..Part::default()
                    })
                }))
                .collect()
        })
    };
    let mut report = ScanReport {
        files_total: files.len(),
        ..ScanReport::default()
    };
    for part in parts {
        report.hits.extend(part.hits);
        report.errors.extend(part.errors);
        report.files_scanned += part.scanned;
        if let Some(cache) = cache.as_deref_mut() {
            for (file, stamp, index) in part.indexed {
                cache.insert(file, stamp, index);
            }
        }
    }
    report
        .hits
        .sort_by(|a, b| (&a.file, a.hit.line, a.hit.column).cmp(&(&b.file, b.hit.line, b.hit.column)));
    report.errors.sort_by(|a, b| a.file.cmp(&b.file));
    report.interrupted = cancelled() && report.files_scanned + report.errors.len() < report.files_total;
    Ok(report)
}
