//! Windowed matching: what a window may span, the limits, and character offsets.

use super::*;

/// A small deterministic generator (a 64-bit LCG), so that failures reproduce.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n
    }
}

fn pattern(p: &str) -> Pattern {
    Pattern::regexp(p, false).unwrap_or_else(|e| panic!("{p:?}: {e}"))
}

fn unlimited() -> Limits {
    Limits::listing(usize::MAX)
}

#[test]
fn windows_follow_what_a_match_can_span() {
    assert_eq!(pattern("with-temp-buffer").windows, Windows::Bounded(16));
    assert_eq!(pattern(r"\_<car\_>").windows, Windows::Bounded(3));
    assert_eq!(pattern(r"[[:alpha:]]\{3\}").windows, Windows::Bounded(12));
    assert_eq!(pattern("a.*b").windows, Windows::Lines);
    assert_eq!(pattern(r"\w+").windows, Windows::Lines);
    assert_eq!(pattern("[^x\n]*").windows, Windows::Lines);
    // In a bracket set a backslash is itself: this one can match a newline.
    assert_eq!(pattern(r"[^x\n]*").windows, Windows::Whole);
    assert_eq!(pattern(r"\s-+").windows, Windows::Whole);
    assert_eq!(pattern("[^x]*").windows, Windows::Whole);
    assert_eq!(pattern("a\nb*").windows, Windows::Whole);
    assert_eq!(pattern(r"é\{60000\}").windows, Windows::Lines);
}

/// Searching in windows of a few bytes finds exactly what one whole-text pass finds.
#[test]
fn windows_give_the_matches_of_a_whole_pass() {
    const TOKENS: &[&str] = &[
        "a",
        "b",
        "c",
        ".",
        "[ab]",
        "[^a\n]",
        "\\(",
        "\\)",
        "\\|",
        "*",
        "+",
        "?",
        "*?",
        "\\{1,2\\}",
        "^",
        "$",
        "\\<",
        "\\>",
        "\\b",
        "\\w",
        "\\W",
        "\\s-",
        "\\`",
        "\\'",
        "é",
        "[[:alpha:]]",
        "\n",
        "\\_<",
        "\\_>",
    ];
    const TEXTS: &[&str] = &[
        "aab b-\n(c)é.*ab\nab\n\nba-a é-b\n",
        "abcabc\n\nba-a é-b\na\na.b  c*(ab)\nbbb aaa ccc-a-b",
        "\n\n\naaa\nbbb\n",
        "no newline at all: ab ba cab",
    ];
    let mut rng = Lcg(7);
    let mut compared = 0;
    for _ in 0..2000 {
        let p: String = (0..1 + rng.below(6)).map(|_| TOKENS[rng.below(TOKENS.len())]).collect();
        let Ok(windowed) = Pattern::regexp(&p, false) else {
            continue;
        };
        let whole = Pattern {
            windows: Windows::Whole,
            ..windowed.clone()
        };
        for text in TEXTS {
            let never = AtomicBool::new(false);
            let expected = run(text.as_bytes(), &whole, &unlimited(), &never);
            for size in [1, 3] {
                let got = run_windows(text.as_bytes(), &windowed, &unlimited(), &never, size, (size, size));
                assert_eq!(
                    got, expected,
                    "pattern {p:?} ({:?}), windows of {size}, text {text:?}",
                    windowed.windows
                );
            }
            compared += 1;
        }
    }
    assert!(compared > 4000, "{compared}");
}

#[test]
fn counting_stops_at_the_limit() {
    let text = "x\n".repeat(50);
    let limits = Limits {
        max_listed: 3,
        max_counted: 10,
        deadline: None,
    };
    let r = run(text.as_bytes(), &pattern("x"), &limits, &AtomicBool::new(false));
    assert_eq!(r.matches, vec![(0, 1), (2, 3), (4, 5)]);
    assert_eq!((r.total, r.stopped, r.searched), (10, Some(Stop::CountLimit), 19));
    // Not reached, or reached by the last match: complete.
    let r = run(b"x x", &pattern("x"), &limits, &AtomicBool::new(false));
    assert_eq!((r.total, r.stopped, r.searched), (2, None, 3));
    let text = "x\n".repeat(10);
    let r = run(text.as_bytes(), &pattern("x"), &limits, &AtomicBool::new(false));
    assert_eq!((r.total, r.stopped, r.searched), (10, None, 20));
    let text = "x\n".repeat(10) + "x";
    let r = run(text.as_bytes(), &pattern("x"), &limits, &AtomicBool::new(false));
    assert_eq!((r.total, r.stopped, r.searched), (10, Some(Stop::CountLimit), 19));
}

#[test]
fn a_passed_deadline_or_a_cancel_stops_the_search() {
    let text = "abc\n".repeat(2_000_000);
    let limits = Limits {
        max_listed: 10,
        max_counted: 0,
        deadline: Some(Instant::now()),
    };
    // A deadline already passed still lets the first window be searched, then stops.
    let r = run(text.as_bytes(), &pattern("b"), &limits, &AtomicBool::new(false));
    assert_eq!(r.stopped, Some(Stop::TimeLimit));
    assert!(r.searched > 0 && r.searched < text.len(), "{}", r.searched);
    assert!(r.total >= 1);
    let r = run(text.as_bytes(), &pattern("b"), &unlimited(), &AtomicBool::new(true));
    assert_eq!((r.total, r.stopped), (0, Some(Stop::Cancelled)));
}

#[test]
fn literal_patterns_are_not_regexps() {
    let never = AtomicBool::new(false);
    let found = |p: Pattern, text: &str| run(text.as_bytes(), &p, &unlimited(), &never).matches;
    let lit = |p: &str, fold: bool| Pattern::literal(p, fold).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(found(lit("a.b", false), "axb a.b"), vec![(4, 7)]);
    assert_eq!(found(lit(r"\(a\)", false), r"a \(a\)"), vec![(2, 7)]);
    assert_eq!(found(lit("aa", false), "aaaaa"), vec![(0, 2), (2, 4)]);
    assert_eq!(found(lit("Été", true), "été ÉTÉ ete"), vec![(0, 3), (4, 7)]);
    assert_eq!(found(lit("Été", false), "été ÉTÉ Été"), vec![(8, 11)]);
    let long = "a".repeat(MAX_PATTERN_CHARS + 1);
    assert!(matches!(Pattern::literal(&long, false), Err(SearchError::TooLarge(_))));
}

#[test]
fn characters_are_counted_as_emacs_counts_them() {
    for text in ["", "a", "é日本🦀x\n🦀xé", "0123456789abcdefé", "ééééééééé日"] {
        assert_eq!(count_chars(text.as_bytes()), text.chars().count(), "{text:?}");
    }
    // A lone byte that cannot start a character is not counted.
    assert_eq!(count_chars(b"a\x80b"), 2);
}

/// The first match of PATTERN in TEXT as DIALECT reads it, as `string-match` and `match-end`
/// report it.
fn first_in(dialect: Dialect, p: &str, text: &str) -> Option<(usize, usize)> {
    let pattern = Pattern::regexp_in(p, false, dialect).unwrap_or_else(|e| panic!("{p:?}: {e}"));
    let found = run(text.as_bytes(), &pattern, &Limits::listing(1), &AtomicBool::new(false));
    found.matches.first().copied()
}

/// A repetition operator after a zero-width assertion, as Emacs 28.2 and 30.1 answered
/// `(string-match PATTERN TEXT)` on this machine: the two engines differ, and each dialect
/// agrees with its own.
#[test]
fn operators_after_assertions_follow_each_emacs() {
    use Dialect::{Emacs29, Emacs30};
    type Match = Option<(usize, usize)>;
    let cases: &[(&str, &str, Match, Match)] = &[
        // (pattern, text, Emacs 28, Emacs 30)
        (r"??\`*", "ab", Some((0, 0)), None),
        (r"??\`*", "*ab", Some((0, 0)), Some((0, 1))),
        (r"b\`*", "b*", Some((0, 0)), None),
        (r"x?\`*", "*", Some((0, 0)), Some((0, 1))),
        (r"\`**", "**a", Some((0, 2)), Some((0, 2))),
        (r"\`*", "*a", Some((0, 1)), Some((0, 1))),
        (r"x\|\`\{2\}", "{2}", Some((0, 3)), Some((0, 3))),
        (r"b\`\{0\}", "b", Some((0, 0)), None),
        (r"a\b*", "ab", Some((0, 0)), Some((0, 1))),
        (r"a\b+c", "ac", None, None),
        (r"a\B*", "a b", Some((0, 0)), Some((0, 1))),
        (r"a\B+b", "ab", Some((0, 2)), Some((0, 2))),
        (r"ab\b*", "a", Some((0, 0)), None),
        (r"ab\b*", "ab", Some((0, 2)), Some((0, 2))),
        (r"\b*x", "x", None, Some((0, 1))),
        (r"\b+x", " x", None, Some((1, 2))),
        (r"a\b?b", "ab", Some((1, 2)), Some((0, 2))),
        (r"a\b\{0\}b", "ab", Some((1, 2)), Some((0, 2))),
        (r"a\B\{0\}b", "a b", Some((2, 3)), None),
        (r"a\'\{2\}", "a", None, Some((0, 1))),
        (r"a\'?b", "ab", Some((1, 2)), Some((0, 2))),
        (r"\(?:\`\)*a", "ba", Some((1, 2)), Some((1, 2))),
        (r"a\b+?c", "ac", None, None),
        (r"a\b*?c", "ac", Some((1, 2)), Some((0, 2))),
        (r"a\b??c", "ac", Some((1, 2)), Some((0, 2))),
        // Each further operator applies to the assertion again.
        (r"a\b\{1,2\}?c", "ac", Some((1, 2)), Some((0, 2))),
        (r"a\b+*c", "ac", Some((1, 2)), Some((0, 2))),
        (r"a\b\{1\}\{0\}c", "ac", Some((1, 2)), Some((0, 2))),
        (r"\b\{1,2\}??x", "x", None, Some((0, 1))),
        (r"a\b\{2\}+c", "ac", None, None),
        (r"\`?\{2\}", "??", Some((0, 2)), Some((0, 2))),
    ];
    let mut wrong = Vec::new();
    for &(p, text, old, new) in cases {
        for (dialect, want) in [(Emacs29, old), (Emacs30, new)] {
            let got = first_in(dialect, p, text);
            if got != want {
                wrong.push(format!("{dialect:?} {p:?} on {text:?}: {got:?}, Emacs says {want:?}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
