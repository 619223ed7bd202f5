//! Background searches: quitting, busy workers, deadlines.

use std::time::{Duration, Instant};

use super::*;
use crate::search::Stop;

/// A text KIB kibibytes long on which `\b[[:alpha:]]+\b[[:digit:]]` takes about a second per
/// MB, and `\(?:\b[[:alpha:]]+\b\s-*\)\{20\}[0-9]` several (the engine's slowest path:
/// Unicode word boundaries next to non-ASCII text).
fn slow_text(kib: usize) -> Vec<u8> {
    "défini la fonction été ünïcode\n".repeat(kib * 1024 / 34).into_bytes()
}

const SLOW: &str = r"\b[[:alpha:]]+\b[[:digit:]]";

fn query(p: &str) -> Query {
    Query {
        pattern: p.into(),
        regexp: true,
        case_fold: false,
        dialect: Dialect::Emacs29,
    }
}

/// Wait until WORKERS has no worker left (at most 60 s): the worker noticed the cancel.
fn all_stopped(workers: &Workers) -> bool {
    let until = Instant::now() + Duration::from_secs(60);
    while workers.running() > 0 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    workers.running() == 0
}

#[test]
fn quitting_returns_at_once_and_stops_the_worker() {
    static WORKERS: Workers = Workers::new(2);
    let mut asked = 0;
    let outcome = search_in_background(
        slow_text(4096),
        query(SLOW),
        Limits::listing(10),
        &WORKERS,
        || {
            asked += 1;
            asked >= 3
        },
        || {},
    );
    assert_eq!(outcome, Ok(SearchOutcome::Quit));
    assert_eq!(asked, 3);
    assert!(all_stopped(&WORKERS));
}

#[test]
fn background_search_reports_the_matches() {
    static WORKERS: Workers = Workers::new(2);
    let outcome = search_in_background(
        "a1 b2\nc3".into(),
        query(r"[a-z]\([0-9]\)"),
        Limits::listing(2),
        &WORKERS,
        || false,
        || {},
    );
    let Ok(SearchOutcome::Done(r)) = outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!((r.total, r.matches, r.stopped), (3, vec![(0, 2), (3, 5)], None));
    let outcome = search_in_background(
        b"x".to_vec(),
        query(r"\(a\)\1"),
        Limits::listing(2),
        &WORKERS,
        || false,
        || {},
    );
    assert!(matches!(outcome, Err(SearchError::Unsupported { .. })), "{outcome:?}");
    assert!(all_stopped(&WORKERS));
}

#[test]
fn a_finished_worker_gives_its_place_back_before_answering() {
    static WORKERS: Workers = Workers::new(1);
    for _ in 0..300 {
        let outcome = search_in_background(
            b"ab".to_vec(),
            query("b"),
            Limits::listing(1),
            &WORKERS,
            || false,
            || {},
        );
        assert!(matches!(outcome, Ok(SearchOutcome::Done(_))), "{outcome:?}");
    }
}

#[test]
fn the_deadline_stops_a_windowed_search_with_what_it_found() {
    static WORKERS: Workers = Workers::new(2);
    let mut text = b"1x2\n".to_vec();
    text.extend(slow_text(8192));
    let limits = Limits {
        max_listed: 10,
        max_counted: 0,
        // Past the compilation (milliseconds), long before the end (seconds).
        deadline: Some(Instant::now() + Duration::from_millis(1000)),
    };
    let outcome = search_in_background(
        text.clone(),
        query(r"[[:alpha:]]\{1,3\}\b[0-9]\|x"),
        limits,
        &WORKERS,
        || false,
        || {},
    );
    let Ok(SearchOutcome::Done(r)) = outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(r.stopped, Some(Stop::TimeLimit));
    assert_eq!(r.matches, vec![(1, 2)]);
    assert!(r.searched >= 2 && r.searched < text.len(), "{}", r.searched);
}

#[test]
fn a_long_unwindowed_step_past_the_deadline_is_stuck_and_the_next_search_busy() {
    static WORKERS: Workers = Workers::new(1);
    // Can match across lines with no bound: one pass, which cannot stop midway.
    let stuck = r"\(?:\b[[:alpha:]]+\b\s-*\)\{20\}[0-9]";
    assert_eq!(Pattern::regexp(stuck, false).map(|p| p.windows), Ok(Windows::Whole));
    let limits = Limits {
        max_listed: 10,
        max_counted: 0,
        // Past the compilation (tens of ms), within the one long step (seconds).
        deadline: Some(Instant::now() + Duration::from_millis(500)),
    };
    // A few seconds in one step (a debug build is about 5 times slower).
    let size = if cfg!(debug_assertions) { 128 } else { 512 };
    let outcome = search_in_background(slow_text(size), query(stuck), limits, &WORKERS, || false, || {});
    assert_eq!(outcome, Err(SearchError::Stuck));
    // The worker left behind still holds the only place.
    let outcome = search_in_background(b"x".to_vec(), query("x"), Limits::listing(1), &WORKERS, || false, || {});
    assert_eq!(outcome, Err(SearchError::Busy(1)));
    assert!(all_stopped(&WORKERS));
    let outcome = search_in_background(b"x".to_vec(), query("x"), Limits::listing(1), &WORKERS, || false, || {});
    assert!(matches!(outcome, Ok(SearchOutcome::Done(_))), "{outcome:?}");
}
