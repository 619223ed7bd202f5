//! What each Emacs construct is translated to, and what is refused.

use crate::search::*;

fn tr(p: &str) -> String {
    match translate(p) {
        Ok(t) => t.pattern,
        Err(e) => panic!("translate {p:?}: {e}"),
    }
}

/// All matches of Emacs PATTERN in TEXT, case-sensitive, as (start, end) character offsets.
fn find(p: &str, text: &str) -> Vec<(usize, usize)> {
    match search(text, p, false, usize::MAX) {
        Ok(r) => r.matches,
        Err(e) => panic!("search {p:?}: {e}"),
    }
}

/// The matched substrings.
fn texts(p: &str, text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    find(p, text)
        .into_iter()
        .map(|(s, e)| chars[s..e].iter().collect())
        .collect()
}

fn refused(p: &str) -> SearchError {
    match translate(p) {
        Ok(t) => panic!("{p:?} translated to {:?}", t.pattern),
        Err(e) => e,
    }
}

#[test]
fn catastrophic_pattern_is_linear() {
    let line = "a".repeat(25);
    assert_eq!(find(r"\(a*\)*\(a*\)*c", &line), vec![]);
    let mut text = "a".repeat(5000);
    text.push('c');
    assert_eq!(find(r"\(a*\)*\(a*\)*c", &text), vec![(0, 5001)]);
}

#[test]
fn groups_and_alternation() {
    assert_eq!(tr(r"\(ab\)"), "(?:ab)");
    assert_eq!(tr(r"\(?:ab\)"), "(?:ab)");
    assert_eq!(tr(r"\(?12:ab\)"), "(?:ab)");
    assert_eq!(texts(r"fo\(o\|x\)", "fox foo fo"), vec!["fox", "foo"]);
    assert_eq!(texts(r"\(?:a\|b\)c", "ac bc cc"), vec!["ac", "bc"]);
    assert_eq!(texts(r"x\|yz", "yz x"), vec!["yz", "x"]);
    // Leftmost-first, as Emacs's backtracking engine: the first alternative wins.
    assert_eq!(texts(r"a\|ab", "ab"), vec!["a"]);
}

#[test]
fn literal_metacharacters() {
    assert_eq!(texts("(a|b){2}", "x (a|b){2} y"), vec!["(a|b){2}"]);
    assert_eq!(texts(r"a\.b", "axb a.b"), vec!["a.b"]);
    assert_eq!(texts(r"\n", "n\n"), vec!["n"]);
    assert_eq!(texts(r"\\", r"a\b"), vec!["\\"]);
    assert_eq!(texts(r"\}", "}"), vec!["}"]);
    assert_eq!(texts("#&~-", "#&~-"), vec!["#&~-"]);
}

#[test]
fn repetition_operators() {
    assert_eq!(texts("ab*", "a ab abbb"), vec!["a", "ab", "abbb"]);
    assert_eq!(texts("ab+", "a ab abbb"), vec!["ab", "abbb"]);
    assert_eq!(texts("ab?", "a ab abbb"), vec!["a", "ab", "ab"]);
    assert_eq!(texts("<.*>", "<a><b>"), vec!["<a><b>"]);
    assert_eq!(texts("<.*?>", "<a><b>"), vec!["<a>", "<b>"]);
    assert_eq!(texts("<.+?>", "<><a>"), vec!["<><a>"]);
    assert_eq!(texts("ab??", "ab"), vec!["a"]);
    // Runs collapse as in Emacs: `+*` is `*`, `?+` is `*`.
    assert_eq!(tr("a+*"), "(?:a)*");
    assert_eq!(tr("a?+"), "(?:a)*");
    assert_eq!(tr("a**"), "(?:a)*");
    assert_eq!(tr("a*??"), "(?:a)*?");
    // With nothing before it an operator is literal.
    assert_eq!(texts("*a", "b*a"), vec!["*a"]);
    assert_eq!(texts(r"\(*\)", "**"), vec!["*", "*"]);
    assert_eq!(texts(r"x\|+", "+x"), vec!["+", "x"]);
    assert_eq!(texts("^*", "*a\n*"), vec!["*", "*"]);
}

#[test]
fn intervals() {
    assert_eq!(texts(r"a\{2\}", "a aa aaa"), vec!["aa", "aa"]);
    assert_eq!(texts(r"a\{2,3\}", "a aa aaaa"), vec!["aa", "aaa"]);
    assert_eq!(texts(r"a\{2,\}", "a aaaaa"), vec!["aaaaa"]);
    assert_eq!(texts(r"ba\{,1\}", "b ba baa"), vec!["b", "ba", "ba"]);
    assert_eq!(tr(r"a\{,\}"), "(?:a){0,}");
    // A repetition of a repetition applies to the whole.
    assert_eq!(texts(r"\(?:ab\)\{2\}?c", "c ababc"), vec!["c", "ababc"]);
    assert!(matches!(refused(r"a\{3,2\}"), SearchError::Invalid { .. }));
    assert!(matches!(refused(r"a\{2"), SearchError::Invalid { .. }));
    assert!(matches!(refused(r"a\{70000\}"), SearchError::Invalid { .. }));
    // Nothing to repeat: a literal brace.
    assert_eq!(texts(r"\{2\}", "{2}"), vec!["{2}"]);
}

#[test]
fn dot_excludes_newline() {
    assert_eq!(texts("a.b", "a\nb axb"), vec!["axb"]);
    assert_eq!(texts(".", "é\n"), vec!["é"]);
}

#[test]
fn bracket_sets() {
    assert_eq!(texts("[abc]+", "xabcax"), vec!["abca"]);
    assert_eq!(texts("[^abc]+", "xab\ny"), vec!["x", "\ny"]);
    assert_eq!(texts("[]a]", "]a"), vec!["]", "a"]);
    assert_eq!(texts("[^]a]", "]ab"), vec!["b"]);
    assert_eq!(texts("[a-c]", "abcd"), vec!["a", "b", "c"]);
    assert_eq!(texts("[a-]", "a-b"), vec!["a", "-"]);
    assert_eq!(texts("[-a]", "a-b"), vec!["a", "-"]);
    // Backslash is literal inside a set; so are ^ (not first), [ and &.
    assert_eq!(texts(r"[\n]", "n\\\n"), vec!["n", "\\"]);
    assert_eq!(texts("[a^[&]", "^[&b"), vec!["^", "[", "&"]);
    // A reversed range is empty.
    assert_eq!(texts("[z-a]", "az"), Vec::<String>::new());
    assert_eq!(texts("x[z-a]*", "x"), vec!["x"]);
    assert!(matches!(refused("[abc"), SearchError::Invalid { .. }));
}

#[test]
fn character_classes() {
    assert_eq!(texts("[[:alpha:]]+", "abé1 ç"), vec!["abé", "ç"]);
    assert_eq!(texts("[[:digit:]]+", "a12b٣"), vec!["12"]);
    assert_eq!(texts("[[:alnum:]_]+", "a_1 b"), vec!["a_1", "b"]);
    assert_eq!(texts("[[:space:]]+", "a \tb"), vec![" \t"]);
    assert_eq!(texts("[[:upper:]]", "aBÉ"), vec!["B", "É"]);
    assert_eq!(texts("[[:lower:]]", "aBé"), vec!["a", "é"]);
    assert_eq!(texts("[[:xdigit:]]+", "0xfFg"), vec!["0", "fF"]);
    assert_eq!(texts("[[:punct:]]", "a,b!"), vec![",", "!"]);
    assert_eq!(texts("[^[:ascii:]]", "aé"), vec!["é"]);
    assert_eq!(texts("[[:nonascii:]]", "aé"), vec!["é"]);
    assert_eq!(texts("[[:blank:]]", "a \n\tb"), vec![" ", "\t"]);
    assert_eq!(texts("[[:cntrl:]]", "a\u{1}"), vec!["\u{1}"]);
    assert_eq!(texts("[[:word:]]+", "ab_c"), vec!["ab", "c"]);
    assert_eq!(texts("[[:graph:]]+", "a b"), vec!["a", "b"]);
    assert_eq!(texts("[[:print:]]+", "a b\n"), vec!["a b"]);
    // `[:` without `:]` is literal.
    assert_eq!(texts("[[:a]", ":"), vec![":"]);
    assert!(matches!(refused("[[:alfa:]]"), SearchError::Invalid { .. }));
}

#[test]
fn line_anchors_only_in_anchor_context() {
    assert_eq!(find("^a", "a\nba\na"), vec![(0, 1), (5, 6)]);
    assert_eq!(find("a$", "a\nab\nba"), vec![(0, 1), (6, 7)]);
    assert_eq!(find(r"\(^a\)", "ba\na"), vec![(3, 4)]);
    assert_eq!(find(r"x\|^a", "ba\na"), vec![(3, 4)]);
    assert_eq!(find(r"\(?:^a\)", "ba\na"), vec![(3, 4)]);
    assert_eq!(find(r"\(a$\)b", "a\nb"), vec![]);
    assert_eq!(find(r"a$\|x", "ab\na"), vec![(3, 4)]);
    // Elsewhere they are literal.
    assert_eq!(texts("a^b", "a^b ab"), vec!["a^b"]);
    assert_eq!(texts("a$b", "a$b ab"), vec!["a$b"]);
    assert_eq!(texts(r"\`^", "^a^"), vec!["^"]);
    assert_eq!(texts(r"x^", "x^"), vec!["x^"]);
}

#[test]
fn assertions_are_not_repeatable_items() {
    // `*` after an assertion repeats the previous atom with the assertion (Emacs's laststart).
    assert_eq!(tr(r".\`*a"), r"(?:[^\n]\A)*a");
    assert_eq!(find(r".\`+*a.", "aab"), vec![(0, 2)]);
    assert_eq!(find(r")\'??", "a)"), vec![(0, 0), (1, 1), (2, 2)]);
    // With no atom before, the operator is literal.
    assert_eq!(texts(r"\B*", "a.*"), vec!["*"]);
    assert_eq!(texts(r"\b+", "+a"), vec!["+"]);
    // After a run of literals the operator repeats the whole run with the assertion.
    assert_eq!(tr(r"ab\b*"), r"(?:ab(?:\b|\A|\z))*");
    assert_eq!(tr(r"ab*"), r"a(?:b)*");
    assert_eq!(tr(r"a\.b\{2\}"), r"a\.(?:b){2}");
    // \< \> \_< \_> are repeatable items in Emacs.
    assert_eq!(tr(r"\>*"), r"(?:(?:\b{end}))*");
    assert_eq!(find(r"\>*", "ab"), vec![(0, 0), (1, 1), (2, 2)]);
}

#[test]
fn buffer_anchors() {
    assert_eq!(find(r"\`a", "a\na"), vec![(0, 1)]);
    assert_eq!(find(r"a\'", "a\na"), vec![(2, 3)]);
    assert_eq!(find(r"a\'", "a\na\n"), vec![]);
}

#[test]
fn word_boundaries() {
    assert_eq!(texts(r"\bfoo\b", "foo foobar barfoo foo."), vec!["foo", "foo"]);
    assert_eq!(texts(r"\Boo", "foo oo"), vec!["oo"]);
    // Emacs's \b matches at both ends of the text, whatever is next to them.
    assert_eq!(find(r"\b", ""), vec![(0, 0)]);
    assert_eq!(find(r"\b", " a\n"), vec![(0, 0), (1, 1), (2, 2), (3, 3)]);
    assert_eq!(find(r"\<ab", "ab cab ab"), vec![(0, 2), (7, 9)]);
    assert_eq!(find(r"ab\>", "ab abc cab"), vec![(0, 2), (8, 10)]);
    assert_eq!(texts(r"\w+", "foo_bar été"), vec!["foo", "bar", "été"]);
    assert_eq!(texts(r"\W+", "a_b c"), vec!["_", " "]);
}

#[test]
fn symbol_boundaries() {
    let t = translate(r"\_<foo-bar\_>").unwrap_or_else(|e| panic!("{e}"));
    assert!(t.symbol_start && t.symbol_end);
    let text = "foo-bar x-foo-bar foo-bar-baz (foo-bar) foo-bar";
    assert_eq!(find(r"\_<foo-bar\_>", text), vec![(0, 7), (31, 38), (40, 47)]);
    // Inside the pattern: approximated by word-start / word-end.
    assert_eq!(texts(r"(\_<ab\_>)", "(ab) (abc)"), vec!["(ab)"]);
    // With top-level alternation the edges are approximated too.
    let t = translate(r"\_<a\|b\_>").unwrap_or_else(|e| panic!("{e}"));
    assert!(!t.symbol_start && !t.symbol_end);
    assert_eq!(t.pattern, r"(?:\b{start})a|b(?:\b{end})");
    // A repeated edge boundary is left to the regex.
    let t = translate(r"\_<*a").unwrap_or_else(|e| panic!("{e}"));
    assert!(!t.symbol_start);
    // Symbol characters that are not word characters, at the edges: exact.
    assert_eq!(find(r"\_<\*x\*\_>", "*x* a*x* *x*"), vec![(0, 3), (9, 12)]);
    assert_eq!(tr(r"\_<foo\_>"), "foo");
    assert!(matches!(refused(r"\_x"), SearchError::Invalid { .. }));
}

#[test]
fn syntax_classes() {
    assert_eq!(texts(r"\s-+", "a \t\nb"), vec![" \t\n"]);
    assert_eq!(texts(r"\s +", "a  b"), vec!["  "]);
    assert_eq!(texts(r"\S-+", "ab cd"), vec!["ab", "cd"]);
    assert_eq!(texts(r"\sw+", "ab_c"), vec!["ab", "c"]);
    assert_eq!(texts(r"\Sw+", "ab_c"), vec!["_"]);
    assert_eq!(texts(r"\s_+", "a-b_+c"), vec!["-", "_+"]);
    assert_eq!(texts(r"\S_+", "a-b"), vec!["a", "b"]);
    assert_eq!(texts(r"\s.", "a.b;c«"), vec![".", ";", "«"]);
    assert_eq!(texts(r"\s(\s)", "() [x] {}"), vec!["()", "{}"]);
    assert_eq!(texts(r#"\s""#, r#"a"b"#), vec!["\""]);
    assert!(matches!(refused(r"\s<"), SearchError::Unsupported { .. }));
    assert!(matches!(refused(r"\sq"), SearchError::Invalid { .. }));
    assert!(matches!(refused(r"a\s"), SearchError::Invalid { .. }));
}

#[test]
fn refusals_name_the_construct() {
    for (p, construct) in [
        (r"\(a\)\1", r"\1"),
        (r"\(a\)\9", r"\9"),
        (r"a\=b", r"\="),
        (r"\cg", r"\cg"),
        (r"\Cj", r"\Cj"),
        (r"\s'", r"\s'"),
    ] {
        match refused(p) {
            e @ SearchError::Unsupported { .. } => {
                let msg = e.to_string();
                assert!(msg.contains(construct), "{p}: {msg}");
            }
            e => panic!("{p}: {e:?}"),
        }
    }
    assert!(refused(r"\(a\)\1").to_string().contains("back-reference"));
}

#[test]
fn invalid_patterns() {
    for p in [r"\(a", r"a\)", "a\\", r"\(?x\)", r"[", r"[^"] {
        assert!(
            matches!(refused(p), SearchError::Invalid { .. }),
            "{p} should be invalid"
        );
    }
    assert!(refused(r"\(a").to_string().contains("unmatched \\("));
    assert!(refused(r"a\)").to_string().contains("unmatched \\)"));
}

#[test]
fn oversize_patterns_are_refused() {
    let long = "a".repeat(MAX_PATTERN_CHARS + 1);
    assert!(matches!(refused(&long), SearchError::TooLarge(_)));
    // Small to write, huge compiled.
    match search("x", r"\(\(\(a\{1000\}\)\{1000\}\)\{1000\}\)", false, 1) {
        Err(SearchError::TooLarge(msg)) => assert!(msg.contains("size limit"), "{msg}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn case_folding() {
    let r = search("Foo fOO foo", "foo", true, 10).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.matches, vec![(0, 3), (4, 7), (8, 11)]);
    let r = search("Foo fOO foo", "foo", false, 10).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.matches, vec![(8, 11)]);
    let r = search("ÉTÉ été", "été", true, 10).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.total, 2);
    let r = search("aB", "[[:lower:]]", true, 10).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.total, 2);
}

#[test]
fn character_offsets_with_non_ascii_text() {
    // é is 2 bytes, 日本 3 bytes each, 🦀 4 bytes: offsets count characters.
    let text = "é日本🦀x\n🦀xé";
    assert_eq!(find("x", text), vec![(4, 5), (7, 8)]);
    assert_eq!(find("🦀x", text), vec![(3, 5), (6, 8)]);
    assert_eq!(find("é", text), vec![(0, 1), (8, 9)]);
    assert_eq!(find("^", text), vec![(0, 0), (6, 6)]);
    assert_eq!(find("$", text), vec![(5, 5), (9, 9)]);
}

#[test]
fn empty_matches_follow_emacs_loop() {
    // Emacs: empty at 0, "x" at 1, empty at 2 (end of buffer).
    assert_eq!(find("x*", "ax"), vec![(0, 0), (1, 2), (2, 2)]);
    assert_eq!(find("^", "a\nb\nc"), vec![(0, 0), (2, 2), (4, 4)]);
    assert_eq!(find("", "ab"), vec![(0, 0), (1, 1), (2, 2)]);
    assert_eq!(find("", ""), vec![(0, 0)]);
    assert_eq!(find("é*", "aé"), vec![(0, 0), (1, 2), (2, 2)]);
}

#[test]
fn max_caps_the_list_not_the_count() {
    let text = "x".repeat(50);
    let r = search(&text, "x", false, 5).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.total, 50);
    assert_eq!(r.matches, vec![(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)]);
    let r = search(&text, "x", false, 0).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((r.total, r.matches.len()), (50, 0));
}

#[test]
fn no_panic_on_odd_input() {
    for p in [
        "",
        "\\",
        "[",
        "[]",
        "[^]",
        "]",
        "\\{",
        "\\{,",
        "\\(?",
        "\\(?1",
        "*",
        "+?",
        "\\_",
        "\\s",
        "\\c",
        "[[:",
        "[[:]]",
        "a\\{65535\\}",
        "\\(\\|\\)",
        "$^",
        "^$",
    ] {
        let _ = search("a\nb é", p, true, 3);
    }
}
