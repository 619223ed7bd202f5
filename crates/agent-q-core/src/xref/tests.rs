//! Scanning files: reading plain and gzip sources, errors, cancelling, the index and the cache.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Mutex;

use super::index::{symbol_hash, SymbolIndex};
use super::*;

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("agent-q-xref-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn scan_files_reads_plain_and_gzip_reports_errors_and_sorts() {
    use std::io::Write;
    let dir = temp_dir("files");
    let plain = dir.join("b.el");
    std::fs::write(&plain, "(defun b1 ()\n  (foo))\n(defun b2 () (foo))\n").unwrap();
    let gz = dir.join("a.el.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(b";; (foo)\n(defun a1 () (foo \"(foo)\"))\n").unwrap();
    std::fs::write(&gz, enc.finish().unwrap()).unwrap();
    let bad_gz = dir.join("c.el.gz");
    std::fs::write(&bad_gz, b"\x1f\x8b\x08garbage").unwrap();
    let missing = dir.join("missing.el");
    let big = dir.join("big.el");
    std::fs::write(&big, format!("(foo){}", " ".repeat(200))).unwrap();
    let files = vec![
        plain.clone(),
        gz.clone(),
        bad_gz.clone(),
        missing.clone(),
        dir.clone(),
        plain.clone(),
    ];
    for threads in [1, 2, 4] {
        let options = ScanOptions {
            threads,
            ..ScanOptions::default()
        };
        let report = scan_files(&files, "foo", Kind::Call, &options).unwrap();
        let got: Vec<_> = report
            .hits
            .iter()
            .map(|h| (h.file.clone(), h.hit.line, h.hit.definition.clone().unwrap()))
            .collect();
        assert_eq!(
            got,
            vec![
                (gz.clone(), 2, "a1".to_string()),
                (plain.clone(), 2, "b1".to_string()),
                (plain.clone(), 3, "b2".to_string())
            ]
        );
        assert_eq!(report.files_scanned, 2);
        let errors: Vec<_> = report.errors.iter().map(|e| e.file.clone()).collect();
        assert_eq!(errors, vec![dir.clone(), bad_gz.clone(), missing.clone()]);
        assert!(matches!(
            report.errors[0].error,
            SourceReadError::NotRegular { kind: "a directory" }
        ));
        assert!(matches!(report.errors[1].error, SourceReadError::Gzip(_)));
        assert!(matches!(report.errors[2].error, SourceReadError::Open(_)));
    }
    let small = ScanOptions {
        max_file_size: 100,
        threads: 1,
        cancel: None,
        progress: None,
    };
    let report = scan_files(std::slice::from_ref(&big), "foo", Kind::Call, &small).unwrap();
    assert!(matches!(
        report.errors[0].error,
        SourceReadError::TooLarge { limit: 100 }
    ));
    assert!(report.errors[0].error.to_string().contains("100 bytes"));
    // A gzip bomb is cut at the limit, not decompressed whole.
    let bomb = dir.join("bomb.el.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(&vec![b' '; 1_000_000]).unwrap();
    std::fs::write(&bomb, enc.finish().unwrap()).unwrap();
    let limited = ScanOptions {
        max_file_size: 10_000,
        threads: 1,
        cancel: None,
        progress: None,
    };
    let report = scan_files(&[bomb], "foo", Kind::Call, &limited).unwrap();
    assert!(matches!(report.errors[0].error, SourceReadError::TooLarge { .. }));
    let _ = std::fs::remove_dir_all(&dir);
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// Run F on another thread; fail (instead of hanging the test run) when it has not returned
/// within a minute: the bug this guards against is a scan that never returns.
fn within_a_minute<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(60))
        .expect("the scan never returned: it blocked")
}

#[test]
fn a_fifo_among_the_files_is_an_error_and_does_not_block() {
    let dir = temp_dir("fifo");
    let before = dir.join("a.el");
    let after = dir.join("z.el");
    std::fs::write(&before, "(defun a () (foo))\n").unwrap();
    std::fs::write(&after, "(defun z () (foo))\n").unwrap();
    let fifo = dir.join("m.el");
    mkfifo(&fifo);
    let files = vec![before.clone(), fifo.clone(), after.clone()];
    let (scan_files_arg, fifo_arg) = (files.clone(), fifo.clone());
    let report = within_a_minute(move || {
        let options = ScanOptions {
            threads: 1,
            ..ScanOptions::default()
        };
        scan_files(&scan_files_arg, "foo", Kind::Call, &options).unwrap()
    });
    let hit_files: Vec<_> = report.hits.iter().map(|h| h.file.clone()).collect();
    assert_eq!(hit_files, vec![before.clone(), after.clone()]);
    assert_eq!(report.files_scanned, 2);
    assert_eq!(report.errors.len(), 1);
    assert_eq!(report.errors[0].file, fifo_arg);
    assert_eq!(
        report.errors[0].error.to_string(),
        "a FIFO (named pipe), not a regular file; not read"
    );
    // The cached scan and the background indexer skip it too.
    let (cached_files, index_files_arg) = (files.clone(), files.clone());
    let (cached, indexed) = within_a_minute(move || {
        let mut cache = ScanCache::new();
        let report = scan_files_cached(&cached_files, "foo", Kind::Call, &ScanOptions::default(), &mut cache);
        let shared = Mutex::new(ScanCache::new());
        (
            report.unwrap(),
            index_files(&shared, &index_files_arg, DEFAULT_MAX_FILE_SIZE),
        )
    });
    assert_eq!(cached.hits.len(), 2);
    assert_eq!(cached.errors.len(), 1);
    assert_eq!(indexed, 2);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_cancelled_scan_stops_and_says_so() {
    let dir = temp_dir("cancel");
    let files: Vec<PathBuf> = (0..50)
        .map(|i| {
            let path = dir.join(format!("f{i:02}.el"));
            std::fs::write(&path, format!("(defun f{i} () (foo))\n")).unwrap();
            path
        })
        .collect();
    let cancel = Arc::new(AtomicBool::new(false));
    let options = ScanOptions {
        threads: 2,
        cancel: Some(cancel.clone()),
        ..ScanOptions::default()
    };
    let report = scan_files(&files, "foo", Kind::Call, &options).unwrap();
    assert!(!report.interrupted);
    let progress = Arc::new(AtomicUsize::new(0));
    let counted = ScanOptions {
        progress: Some(progress.clone()),
        ..options.clone()
    };
    scan_files(&files, "foo", Kind::Call, &counted).unwrap();
    assert_eq!(progress.load(Ordering::Relaxed), 50);
    assert_eq!(
        (report.files_scanned, report.files_total, report.hits.len()),
        (50, 50, 50)
    );
    cancel.store(true, Ordering::Relaxed);
    let report = scan_files(&files, "foo", Kind::Call, &options).unwrap();
    assert!(report.interrupted);
    assert_eq!(
        (report.files_scanned, report.files_total, report.hits.len()),
        (0, 50, 0)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn symbol_index_has_no_false_negatives() {
    let names: Vec<String> = (0..5000).map(|i| format!("sym-{i}")).collect();
    let index = SymbolIndex::new(names.iter().map(|n| symbol_hash(n.as_bytes())).collect());
    assert!(names.iter().all(|n| index.may_contain(n.as_bytes())));
    let false_positives = (0..10_000)
        .filter(|i| index.may_contain(format!("other-{i}").as_bytes()))
        .count();
    assert!(false_positives < 300, "{false_positives} false positives in 10000");
    let empty = SymbolIndex::new(Vec::new());
    assert!(!empty.may_contain(b"x"));
}

#[test]
fn index_holds_every_symbol_the_scanner_can_report() {
    let src = b"(a\\ b) `(,@c) #'d ((e)) '[f] ;g\n\"h\" ?\\( (defvar i) #:j";
    let index = index_source(src);
    for name in ["a b", "c", "d", "e", "f", "defvar", "i", "j"] {
        assert!(index.may_contain(name.as_bytes()), "{name}");
    }
    for name in ["g", "h", "a", "b"] {
        assert!(!index.may_contain(name.as_bytes()), "{name}");
    }
}

#[test]
fn cached_scans_agree_with_uncached_and_follow_file_changes() {
    let dir = temp_dir("cache");
    let mut files = Vec::new();
    for i in 0..20 {
        let path = dir.join(format!("f{i}.el"));
        std::fs::write(&path, format!("(defun f{i} (x)\n  (g{} x) (common x))\n", i % 3)).unwrap();
        files.push(path);
    }
    let options = ScanOptions {
        threads: 2,
        ..ScanOptions::default()
    };
    let mut cache = ScanCache::new();
    let names = ["common", "g0", "g1", "x", "f3", "absent"];
    let summary = |r: &ScanReport| {
        r.hits
            .iter()
            .map(|h| (h.file.clone(), h.hit.line, h.hit.column))
            .collect::<Vec<_>>()
    };
    for round in 0..2 {
        for (name, kind) in names.iter().flat_map(|n| [(n, Kind::Call), (n, Kind::Reference)]) {
            let plain = scan_files(&files, name, kind, &options).unwrap();
            let cached = scan_files_cached(&files, name, kind, &options, &mut cache).unwrap();
            assert_eq!(summary(&plain), summary(&cached), "{name} {kind} round {round}");
            assert_eq!(cached.files_scanned, 20);
        }
    }
    // Only the files that had to be parsed were indexed on the way.
    assert!(cache.len() == 20, "{}", cache.len());
    assert!(cache.size_in_bytes() > 0);
    // A changed file is read again and reindexed.
    std::fs::write(&files[5], "(defun f5 () (brand-new-function 1))\n").unwrap();
    let report = scan_files_cached(&files, "brand-new-function", Kind::Call, &options, &mut cache).unwrap();
    assert_eq!(summary(&report), vec![(files[5].clone(), 1, 15)]);
    // A file that disappeared is an error, not a stale hit.
    std::fs::remove_file(&files[6]).unwrap();
    let report = scan_files_cached(&files, "g0", Kind::Call, &options, &mut cache).unwrap();
    assert_eq!(report.errors.len(), 1);
    assert!(report.hits.iter().all(|h| h.file != files[6]));
    cache.clear();
    assert!(cache.is_empty());
    // A scan indexes only the files it parses; index_files does the rest.
    let only_g1 = scan_files_cached(&files, "g1", Kind::Call, &options, &mut cache).unwrap();
    assert_eq!(only_g1.hits.len(), 7);
    assert_eq!(cache.len(), 7);
    assert!(!cache.covers(&files));
    let shared = Mutex::new(cache);
    assert_eq!(index_files(&shared, &files, DEFAULT_MAX_FILE_SIZE), 19 - 7);
    assert_eq!(index_files(&shared, &files, DEFAULT_MAX_FILE_SIZE), 0);
    let mut cache = shared.into_inner().unwrap();
    let live: Vec<PathBuf> = files.iter().filter(|f| f.exists()).cloned().collect();
    assert!(cache.covers(&live));
    for name in names {
        let plain = scan_files(&live, name, Kind::Call, &options).unwrap();
        let cached = scan_files_cached(&live, name, Kind::Call, &options, &mut cache).unwrap();
        assert_eq!(summary(&plain), summary(&cached), "{name} after index_files");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
