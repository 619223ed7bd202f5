//! Tests of the decision, the reader, the rules and the domains.

use super::domain::{host_of, DomainRule};
use super::rule::CommandRule;
use super::shell::{analyze, Construct, NotUnderstood, Sep, Within};
use super::*;
use proptest::prelude::*;

fn rules(deny: &[&str], ask: &[&str], allow: &[&str]) -> Rules<CommandRule> {
    let parse = |list: &[&str]| -> Vec<CommandRule> { list.iter().map(|r| CommandRule::parse(r).expect(r)).collect() };
    Rules {
        deny: parse(deny),
        ask: parse(ask),
        allow: parse(allow),
    }
}

fn allow(list: &[&str]) -> Rules<CommandRule> {
    rules(&[], &[], list)
}

fn verdict(line: &str, rules: &Rules<CommandRule>) -> Verdict {
    decide(line, rules).verdict
}

/// The decision's reasons for LINE, as shown.
fn explain(line: &str, rules: &Rules<CommandRule>) -> String {
    decide(line, rules).to_string()
}

/// Assert that the decision on LINE shows as EXPECTED.
fn says(line: &str, rules: &Rules<CommandRule>, expected: &str) {
    assert_eq!(explain(line, rules), expected, "{line}");
}

/// Assert that RULES give each of LINES the verdict EXPECTED.
fn expect(rules: &Rules<CommandRule>, expected: Verdict, lines: &[&str]) {
    for line in lines {
        assert_eq!(verdict(line, rules), expected, "{line:?}");
    }
}

/// The words of each part of LINE.
fn words(line: &str) -> Vec<Vec<String>> {
    let analysis = analyze(line);
    assert_eq!(analysis.not_understood(), None, "{line}");
    analysis
        .parts()
        .iter()
        .map(|p| p.texts().iter().map(|t| t.to_string()).collect())
        .collect()
}

fn not_understood(line: &str) -> NotUnderstood {
    analyze(line).not_understood().cloned().expect(line)
}

fn constructs(line: &str) -> Vec<Construct> {
    analyze(line)
        .parts()
        .iter()
        .flat_map(|p| p.constructs.clone())
        .collect()
}

// Quoting and words.

#[test]
fn words_are_unquoted_and_split_on_blanks() {
    assert_eq!(words("git  status"), [["git", "status"]]);
    assert_eq!(words("'git' \"status\""), [["git", "status"]]);
    assert_eq!(words("g'i't st\"at\"us"), [["git", "status"]]);
    assert_eq!(words("\tgit\tstatus  "), [["git", "status"]]);
    assert_eq!(words("echo 'a b' \"c d\" e\\ f"), [["echo", "a b", "c d", "e f"]]);
    assert_eq!(words("echo ''"), [["echo", ""]]);
}

#[test]
fn escapes_follow_posix_rules() {
    assert_eq!(
        words(r#"echo "a\"b" "\$x" "\q" 'c\d'"#),
        [["echo", "a\"b", "$x", "\\q", "c\\d"]]
    );
    assert_eq!(words("echo \\;"), [["echo", ";"]]);
    assert_eq!(words("git \\\nstatus"), [["git", "status"]]);
    assert_eq!(words("echo \"a\\\nb\""), [["echo", "ab"]]);
    assert_eq!(not_understood("echo \\"), NotUnderstood::TrailingBackslash);
}

#[test]
fn open_quotes_are_not_understood() {
    assert!(matches!(not_understood("echo 'a"), NotUnderstood::Unterminated(_)));
    assert!(matches!(not_understood("echo \"a"), NotUnderstood::Unterminated(_)));
    assert!(matches!(not_understood("echo $(a"), NotUnderstood::Unterminated(_)));
    assert!(matches!(not_understood("echo `a"), NotUnderstood::Unterminated(_)));
    assert!(matches!(not_understood("(a"), NotUnderstood::Unterminated(_)));
    assert_eq!(not_understood("echo $'a\\nb'"), NotUnderstood::DollarQuote);
    assert_eq!(not_understood("echo $\"a\""), NotUnderstood::DollarQuote);
}

#[test]
fn separators_inside_quotes_are_words() {
    assert_eq!(
        words("echo 'a; rm x' \"b && c\" d\\|e"),
        [["echo", "a; rm x", "b && c", "d|e"]]
    );
    assert_eq!(verdict("git diff ';rm x'", &allow(&["git diff *"])), Verdict::Allow);
}

#[test]
fn comments_are_skipped_only_at_a_word_start() {
    assert_eq!(words("git status # ; rm -rf /"), [["git", "status"]]);
    assert_eq!(words("echo a#b"), [["echo", "a#b"]]);
    assert_eq!(words("# only a comment"), Vec::<Vec<String>>::new());
    assert_eq!(words("echo x # c\nls"), [vec!["echo", "x"], vec!["ls"]]);
}

// Compound commands.

#[test]
fn every_separator_splits() {
    let line = "a; b && c || d | e |& f & g\nh";
    assert_eq!(words(line), [["a"], ["b"], ["c"], ["d"], ["e"], ["f"], ["g"], ["h"]]);
    let afters: Vec<_> = analyze(line).parts().iter().map(|p| p.place.after).collect();
    assert_eq!(
        afters,
        [
            None,
            Some(Sep::Semicolon),
            Some(Sep::And),
            Some(Sep::Or),
            Some(Sep::Pipe),
            Some(Sep::PipeAll),
            Some(Sep::Background),
            Some(Sep::Newline)
        ]
    );
    assert_eq!(words("a;b&&c"), [["a"], ["b"], ["c"]]);
}

#[test]
fn a_newline_after_an_operator_continues_the_list() {
    let analysis = analyze("a &&\n b");
    assert_eq!(analysis.parts()[1].place.after, Some(Sep::And));
}

#[test]
fn empty_commands_between_operators_are_not_understood() {
    assert_eq!(not_understood("; ls"), NotUnderstood::EmptyCommand(Sep::Semicolon));
    assert_eq!(not_understood("ls && && ls"), NotUnderstood::EmptyCommand(Sep::And));
    assert_eq!(not_understood("ls ;; ls"), NotUnderstood::Unexpected(";;"));
    assert_eq!(words("ls;"), [["ls"]]);
    assert_eq!(words("ls &"), [["ls"]]);
}

#[test]
fn compound_lines_are_allowed_only_when_every_part_is() {
    let r = allow(&["git status", "ls"]);
    expect(&r, Verdict::Allow, &["git status && ls", "git status | ls"]);
    expect(
        &r,
        Verdict::NoRule,
        &["git status; rm FILE", "git status\nrm FILE", "git status & rm FILE"],
    );
    says("git status; rm FILE", &r, "`rm FILE` (after `;`) matches no allow rule");
}

#[test]
fn deny_wins_over_ask_and_ask_over_allow() {
    let r = rules(&["rm *"], &["git push *"], &["git *", "rm *"]);
    expect(&r, Verdict::Deny, &["git status; rm x", "git push origin && rm x"]);
    expect(&r, Verdict::Ask, &["git push origin"]);
    expect(&r, Verdict::Allow, &["git log"]);
    let d = decide("ls; git push", &r);
    assert_eq!(
        d.to_string(),
        "`git push` (after `;`) matches the ask rule `git push *`"
    );
}

// Rule matching.

#[test]
fn rules_match_whole_words() {
    let r = allow(&["git status"]);
    expect(&r, Verdict::Allow, &["git status"]);
    expect(
        &r,
        Verdict::NoRule,
        &["git statusx", "git status --porcelain", "git", "gitstatus"],
    );
    assert_eq!(verdict("git status *", &allow(&["git status *"])), Verdict::Allow);
    let any = allow(&["git status *"]);
    expect(&any, Verdict::Allow, &["git status", "git status --porcelain -b"]);
    expect(&any, Verdict::NoRule, &["git statusx"]);
}

#[test]
fn a_star_inside_a_word_stays_in_the_word() {
    let r = allow(&["cargo test --package=*", "git * --stat", "ls *.rs"]);
    expect(
        &r,
        Verdict::Allow,
        &[
            "cargo test --package=core",
            "cargo test --package=",
            "git diff --stat",
            "ls 'a.rs'",
        ],
    );
    expect(
        &r,
        Verdict::NoRule,
        &["cargo test --package=a b", "cargo test --packages", "git --stat"],
    );
    // The shell expands an unquoted glob into words nobody has seen.
    assert_eq!(verdict("ls *.rs", &r), Verdict::NoRule);
    assert_eq!(verdict("ls *.rs", &allow(&["ls *"])), Verdict::Allow);
}

#[test]
fn star_patterns_match_in_order() {
    let r = CommandRule::parse("x a*b*c").unwrap();
    let m = |line: &str| r.matches(&analyze(line).parts()[0].words);
    assert!(m("x abc"));
    assert!(m("x aXbYc"));
    assert!(m("x abbc"));
    assert!(!m("x acb"));
    assert!(!m("x abcd"));
    assert!(!m("x ab"));
    let overlap = CommandRule::parse("x ab*ba").unwrap();
    assert!(!overlap.matches(&analyze("x aba").parts()[0].words));
    assert!(overlap.matches(&analyze("x abba").parts()[0].words));
}

#[test]
fn quoted_stars_in_rules_are_literal() {
    let r = allow(&["echo '*'"]);
    expect(&r, Verdict::Allow, &["echo '*'"]);
    expect(&r, Verdict::NoRule, &["echo x", "echo *"]);
}

#[test]
fn bad_rules_are_refused() {
    use crate::error::CommandRuleError as E;
    assert_eq!(CommandRule::parse("  "), Err(E::Empty));
    assert!(matches!(CommandRule::parse("a; b"), Err(E::NotPlain { .. })));
    assert!(matches!(CommandRule::parse("a > f"), Err(E::NotPlain { .. })));
    assert!(matches!(CommandRule::parse("X=1 a"), Err(E::NotPlain { .. })));
    assert!(matches!(CommandRule::parse("echo $(x)"), Err(E::NotPlain { .. })));
    assert!(matches!(CommandRule::parse("echo $HOME"), Err(E::NotPlain { .. })));
    assert!(matches!(CommandRule::parse("*"), Err(E::Wildcard { .. })));
    assert!(matches!(CommandRule::parse("g* status"), Err(E::Wildcard { .. })));
    assert!(matches!(CommandRule::parse("ls a?"), Err(E::Wildcard { .. })));
    assert!(matches!(CommandRule::parse("ls [ab]"), Err(E::Wildcard { .. })));
    assert!(matches!(CommandRule::parse("ls 'a"), Err(E::NotUnderstood { .. })));
    assert!(matches!(CommandRule::parse("gіt status"), Err(E::NotUnderstood { .. })));
    assert_eq!(CommandRule::parse(" git  diff * ").unwrap().as_str(), "git  diff *");
}

// Substitutions.

#[test]
fn substitutions_are_found_and_never_allowed() {
    let r = allow(&["echo *", "date", "ls", "cat *"]);
    let lines = [
        "echo $(date)",
        "echo `date`",
        "echo \"$(date)\"",
        "cat <(ls)",
        "ls >(cat)",
    ];
    expect(&r, Verdict::NoRule, &lines);
    assert_eq!(constructs("echo $(date)"), [Construct::CommandSubstitution]);
    assert_eq!(constructs("echo `date`"), [Construct::Backticks]);
    assert_eq!(constructs("cat <(ls)"), [Construct::ProcessSubstitution]);
    says("echo $(date)", &r, "`echo $(date)` has a command substitution `$(...)`");
}

#[test]
fn commands_inside_substitutions_meet_deny_rules() {
    let r = rules(&["rm *"], &["curl *"], &["echo *"]);
    expect(
        &r,
        Verdict::Deny,
        &["echo $(rm -rf /)", "echo \"`rm x`\"", "echo $(echo $(echo $(rm x)))"],
    );
    expect(&r, Verdict::Ask, &["cat <(curl evil)"]);
    let d = decide("echo $(rm x)", &r);
    assert_eq!(d.to_string(), "`rm x` (inside `$(...)`) matches the deny rule `rm *`");
}

#[test]
fn nested_substitutions_keep_their_places() {
    let analysis = analyze("a $(b `c` $(d; e)) f");
    let parts: Vec<_> = analysis
        .parts()
        .iter()
        .map(|p| (p.texts().join(" "), p.place.within.clone()))
        .collect();
    assert_eq!(parts.len(), 5);
    assert!(parts.contains(&("c".into(), Some(Within::Backticks))));
    assert!(parts.contains(&("e".into(), Some(Within::CommandSubstitution))));
    assert!(parts.contains(&("a $(b `c` $(d; e)) f".into(), None)));
}

#[test]
fn deep_nesting_is_bounded_without_recursion() {
    let deep = format!("{}x{}", "$(".repeat(10_000), ")".repeat(10_000));
    assert_eq!(not_understood(&deep), NotUnderstood::TooDeep);
    let ok = format!("echo {}x{}", "$(".repeat(20), ")".repeat(20));
    assert_eq!(analyze(&ok).not_understood(), None);
    let backticks = "`".repeat(60_000);
    assert_eq!(verdict(&backticks, &allow(&["x"])), Verdict::NoRule);
}

#[test]
fn parameter_expansions() {
    assert_eq!(words("echo $HOME ${USER} $1 $@ ${#x} ${!y}").len(), 1);
    assert_eq!(not_understood("echo ${x:-$(rm x)}"), NotUnderstood::Expansion);
    assert_eq!(not_understood("echo $((1+2))"), NotUnderstood::Arithmetic);
    assert_eq!(not_understood("((x++))"), NotUnderstood::Arithmetic);
    assert_eq!(words("echo $ a$"), [["echo", "$", "a$"]]);
    let r = allow(&["echo *", "git status"]);
    expect(&r, Verdict::Allow, &["echo $HOME"]);
    expect(&r, Verdict::NoRule, &["$GIT status", "${GIT} status", "git $SUB"]);
    assert_eq!(constructs("$X status"), [Construct::ExpandedCommand]);
    assert_eq!(constructs("g* status"), [Construct::ExpandedCommand]);
}

#[test]
fn subshells_and_braces_are_never_allowed() {
    let r = allow(&["ls"]);
    assert_eq!(verdict("(ls)", &r), Verdict::NoRule);
    assert_eq!(verdict("{ ls; }", &r), Verdict::NoRule);
    assert_eq!(constructs("(ls)"), [Construct::Subshell]);
    assert_eq!(words("{ ls; }"), [vec!["ls"], vec![]]);
    assert_eq!(verdict("(rm x)", &rules(&["rm *"], &[], &[])), Verdict::Deny);
    assert_eq!(not_understood("echo a(b)"), NotUnderstood::Unexpected("("));
    assert_eq!(not_understood("ls )"), NotUnderstood::Unexpected(")"));
}

#[test]
fn keywords_are_stripped_for_deny_and_never_allowed() {
    let r = rules(&["rm *"], &[], &["ls", "true"]);
    expect(&r, Verdict::Deny, &["if true; then rm x; fi"]);
    expect(&r, Verdict::NoRule, &["while true; do ls; done", "! ls"]);
    assert_eq!(verdict("'if' x", &allow(&["if x"])), Verdict::Allow);
    assert_eq!(
        not_understood("for f in *; do rm $f; done"),
        NotUnderstood::Keyword("for".into())
    );
    assert_eq!(not_understood("[[ -f x ]]"), NotUnderstood::Keyword("[[".into()));
    assert_eq!(verdict("[ -f x ]", &allow(&["'[' *"])), Verdict::Allow);
}

// Redirections and here-documents.

#[test]
fn harmless_redirections_are_allowed() {
    let r = allow(&["git status"]);
    for line in [
        "git status 2>&1",
        "git status >/dev/null",
        "git status 2>/dev/null",
        "git status &>/dev/null",
        "git status 2> /dev/null 1>&2",
        "git status 2>&-",
        "git status </dev/null",
    ] {
        assert_eq!(verdict(line, &r), Verdict::Allow, "{line}");
    }
}

#[test]
fn redirections_to_files_are_never_allowed() {
    let r = allow(&["git status", "echo *"]);
    for line in [
        "git status > out",
        "git status >> out",
        "git status 2> err",
        "git status &> all",
        "git status &>> all",
        "git status >| out",
        "git status >& out",
        "git status < in",
        "git status <> rw",
        "echo x>out",
        "> out",
        "git status > \"$(x)\"",
        "git status > /dev/null2",
        "git status > '/dev/null'x",
    ] {
        assert_eq!(verdict(line, &r), Verdict::NoRule, "{line}");
    }
    assert_eq!(
        constructs("echo a 2>> log"),
        [Construct::Redirect {
            op: ">>".into(),
            target: "log".into()
        }]
    );
    assert_eq!(words("echo a2>x"), [["echo", "a2"]]);
    says("git status > out", &r, "`git status > out` has the redirection `> out`");
    assert_eq!(not_understood("ls >"), NotUnderstood::MissingTarget(">".into()));
    assert_eq!(not_understood("ls > ; x"), NotUnderstood::MissingTarget(">".into()));
    assert_eq!(not_understood("ls > > x"), NotUnderstood::MissingTarget(">".into()));
}

#[test]
fn here_documents_are_skipped_and_never_allowed() {
    let line = "cat <<EOF\nrm -rf /; $(x)\nEOF\nls";
    assert_eq!(words(line), [vec!["cat"], vec!["ls"]]);
    assert_eq!(constructs(line), [Construct::HereDoc]);
    let tabs = "cat <<-'END' > f\n\tbody\n\tEND\necho after";
    assert_eq!(words(tabs), [vec!["cat"], vec!["echo", "after"]]);
    assert_eq!(words("cat <<E\nnever closed"), [["cat"]]);
    assert_eq!(verdict("cat <<EOF\nx\nEOF", &allow(&["cat"])), Verdict::NoRule);
    assert_eq!(constructs("cat <<< word"), [Construct::HereString]);
}

// Wrappers and assignments.

#[test]
fn wrappers_are_never_allowed_and_their_commands_meet_deny_rules() {
    let r = rules(&["rm *"], &[], &["ls", "git status"]);
    for line in [
        "sudo rm -rf /",
        "sudo -u root rm x",
        "/usr/bin/sudo rm x",
        "doas rm x",
        "env A=1 B=2 rm x",
        "env -i rm x",
        "nohup rm x &",
        "time rm x",
        "nice -n 5 rm x",
        "timeout -s KILL 10 rm x",
        "xargs rm",
        "xargs -I{} rm {}",
        "command rm x",
        "builtin eval rm x",
        "exec rm x",
        "eval 'rm x'",
        "eval rm x",
        "sh -c 'rm x'",
        "bash -lc 'ls; rm x'",
        "zsh -o errexit -c 'rm x'",
        "bash -c \"sh -c 'rm x'\"",
        "su -c 'rm x' root",
        "find . -name '*.o' -exec rm {} \\;",
        "find . -execdir ls \\; -exec rm {} +",
        "sudo nice env X=1 rm x",
    ] {
        assert_eq!(verdict(line, &r), Verdict::Deny, "{line}");
    }
    for line in [
        "sudo ls",
        "env ls",
        "nice ls",
        "sh -c ls",
        "eval ls",
        "xargs ls",
        "command ls",
    ] {
        assert_eq!(verdict(line, &r), Verdict::NoRule, "{line}");
    }
    assert_eq!(verdict("find . -name x", &allow(&["find *"])), Verdict::Allow);
    says("sudo ls", &r, "`sudo ls` has `sudo`, which runs another command");
    says(
        "sudo rm x",
        &r,
        "`sudo rm x` (run by `sudo`) matches the deny rule `rm *`",
    );
    says(
        "sh -c 'rm x'",
        &r,
        "`rm x` (in the string `sh` runs) matches the deny rule `rm *`",
    );
}

#[test]
fn deny_and_ask_rules_see_through_a_command_path() {
    let r = rules(&["rm *"], &["curl *"], &["rm x", "curl x"]);
    expect(&r, Verdict::Deny, &["/bin/rm -rf /", "./rm x"]);
    expect(&r, Verdict::Ask, &["ls; /usr/bin/curl x"]);
    assert_eq!(verdict("/usr/bin/ls", &allow(&["ls"])), Verdict::NoRule);
    assert_eq!(verdict("echo $[1+1]", &allow(&["echo *"])), Verdict::NoRule);
}

#[test]
fn deny_rules_may_name_the_wrapper() {
    let r = rules(&["sudo *"], &[], &["ls"]);
    assert_eq!(verdict("ls && sudo ls", &r), Verdict::Deny);
}

#[test]
fn shell_strings_are_bounded() {
    let mut line = "rm x".to_string();
    for _ in 0..40 {
        line = format!("eval '{}'", line.replace('\'', "'\\''"));
        if line.len() > 60_000 {
            break;
        }
    }
    assert_eq!(verdict(&line, &allow(&["ls"])), Verdict::NoRule);
    let many = "sh -c ls; ".repeat(40);
    assert_eq!(not_understood(&many), NotUnderstood::TooManyShellStrings);
}

#[test]
fn leading_assignments_are_not_covered() {
    let r = rules(&["rm *"], &[], &["git status"]);
    expect(
        &r,
        Verdict::NoRule,
        &[
            "GIT_DIR=/tmp/x git status",
            "LD_PRELOAD=/x.so git status",
            "PATH=/tmp; git status",
            "A+=1 git status",
        ],
    );
    expect(&r, Verdict::Deny, &["X=1 rm y"]);
    assert_eq!(
        constructs("A=1 B=2 ls"),
        [Construct::Assignment("A".into()), Construct::Assignment("B".into())]
    );
    // Not assignments: a quoted name, a name after the command, no name.
    assert_eq!(words("'A'=1 ls"), [["A=1", "ls"]]);
    assert_eq!(words("git -c a=b status"), [["git", "-c", "a=b", "status"]]);
    assert_eq!(words("=x"), [["=x"]]);
    says(
        "GIT_DIR=x git status",
        &r,
        "`GIT_DIR=x git status` has the assignment `GIT_DIR=...`",
    );
}

// Unicode look-alikes and hidden characters.

#[test]
fn non_ascii_outside_quotes_is_not_understood() {
    let r = rules(&[], &[], &["git status", "echo *", "ls"]);
    for line in [
        "git status；rm x",
        "git\u{a0}status",
        "git status\u{200b}",
        "g\u{200d}it status",
        "git status \u{202e}x",
        "gіt status",
        "git stаtus",
        "echo café",
        "git status\r",
        "git status\u{b}",
        "ls\u{2028}rm x",
        "ls\u{85}rm x",
    ] {
        let d = decide(line, &r);
        assert_eq!(d.verdict, Verdict::NoRule, "{line:?}");
        assert!(matches!(
            d.findings[0].what,
            What::NotUnderstood(NotUnderstood::Character(_))
        ));
    }
    let shown = explain("git status；rm x", &r);
    assert!(shown.contains("U+FF1B"), "{shown}");
}

#[test]
fn non_ascii_inside_quotes_is_text_compared_exactly() {
    let r = allow(&["echo *", "git status"]);
    expect(&r, Verdict::Allow, &["echo 'café'", "echo \"a\u{202e}b\""]);
    expect(&r, Verdict::NoRule, &["'gіt' status", "git 'status\u{200b}'"]);
    let shown = explain("'gіt' st'\u{202e}'", &r);
    assert!(shown.contains("\\u202E"), "{shown}");
}

// Empty and huge inputs.

#[test]
fn empty_lines_are_not_covered() {
    let r = allow(&["ls"]);
    for line in ["", "   ", "\n\n", "# c"] {
        let d = decide(line, &r);
        assert_eq!(d.verdict, Verdict::NoRule);
        assert_eq!(d.findings[0].what, What::Empty);
    }
    says("", &r, "the command line is empty");
}

#[test]
fn huge_lines_are_bounded() {
    let r = rules(&["rm *"], &[], &["ls *"]);
    let long = format!("ls {}", "a".repeat(shell::MAX_COMMAND_BYTES));
    assert!(matches!(not_understood(&long), NotUnderstood::TooLong { .. }));
    assert_eq!(verdict(&long, &r), Verdict::NoRule);
    let many = "ls;".repeat(shell::MAX_PARTS + 1);
    assert_eq!(not_understood(&many), NotUnderstood::TooManyParts);
    assert_eq!(verdict(&many, &r), Verdict::NoRule);
    let fits = format!("ls {}", "a ".repeat(30_000));
    assert_eq!(verdict(&fits, &r), Verdict::Allow);
    let analysis = analyze(&fits);
    assert!(analysis.parts()[0].source.chars().count() <= shell::MAX_SOURCE_CHARS + 1);
    // Deny still sees the parts before the reader stopped.
    assert_eq!(verdict(&format!("rm x; {many}"), &r), Verdict::Deny);
    let findings = decide(&"x;".repeat(100), &r);
    assert!(findings.to_string().ends_with("; and 94 more"), "{findings}");
}

// Domains.

fn host(url: &str) -> String {
    host_of(url)
        .map(|h| h.to_string())
        .unwrap_or_else(|e| format!("error: {e}"))
}

#[test]
fn hosts_are_read_strictly() {
    assert_eq!(host("https://Example.COM/a"), "example.com");
    assert_eq!(host("http://example.com."), "example.com");
    assert_eq!(host("HTTPS://user:pw@example.com:8443/x?y#z"), "example.com");
    assert_eq!(host("https://example.com@evil.org/"), "evil.org");
    assert_eq!(host("https://a@b@evil.org/"), "evil.org");
    assert_eq!(host("https://evil.org/?https://example.com"), "evil.org");
    assert_eq!(host("https://evil.org#@example.com"), "evil.org");
    assert_eq!(host("http://[::1]:80/"), "[::1]");
    assert_eq!(host("http://127.0.0.1/"), "127.0.0.1");
    assert_eq!(host("http://example.com:/"), "example.com");
    for bad in [
        "ftp://example.com/",
        "file:///etc/passwd",
        "example.com",
        "https://",
        "https:///x",
        "https://exa%6dple.com/",
        "https://exämple.com/",
        "https://example.com\\@evil.org/",
        "https://example .com/",
        "https://a..b/",
        "https://example.com:99999/",
        "https://example.com:8o/",
        "https://a:1:2/",
        "http://[::1/",
        "http://[::1]x/",
        "http://[fe80::1%25eth0]/",
    ] {
        assert!(host_of(bad).is_err(), "{bad}");
    }
    assert!(host_of(&format!("https://{}.com/", "a".repeat(10_000))).is_err());
}

#[test]
fn domain_rules_cover_a_host_or_its_subdomains() {
    let exact = DomainRule::parse("Example.com.").unwrap();
    let subs = DomainRule::parse("*.example.com").unwrap();
    let h = |url: &str| host_of(url).unwrap();
    assert!(exact.matches(&h("https://example.com/")));
    assert!(!exact.matches(&h("https://www.example.com/")));
    assert!(!exact.matches(&h("https://example.com.evil.org/")));
    assert!(!exact.matches(&h("https://evilexample.com/")));
    assert!(subs.matches(&h("https://docs.example.com/")));
    assert!(subs.matches(&h("https://a.b.example.com/")));
    assert!(!subs.matches(&h("https://example.com/")));
    assert!(!subs.matches(&h("https://evilexample.com/")));
    assert!(!subs.matches(&h("https://example.com.evil.org/")));
    assert!(DomainRule::parse("[::1]").unwrap().matches(&h("http://[::1]:8080/")));
    for bad in [
        "",
        "*.",
        "*",
        "a..b",
        "ex ample.com",
        "exämple.com",
        "*.[::1]",
        "a/b",
        "*.*.x",
    ] {
        assert!(DomainRule::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn fetches_are_decided_by_host() {
    let parse = |l: &[&str]| l.iter().map(|r| DomainRule::parse(r).unwrap()).collect();
    let r = Rules {
        deny: parse(&["evil.org"]),
        ask: parse(&["*.corp.example"]),
        allow: parse(&["docs.rs", "*.docs.rs"]),
    };
    assert_eq!(decide_fetch("https://docs.rs/serde", &r).verdict, Verdict::Allow);
    assert_eq!(decide_fetch("https://x.docs.rs/", &r).verdict, Verdict::Allow);
    assert_eq!(decide_fetch("https://docs.rs@evil.org/", &r).verdict, Verdict::Deny);
    assert_eq!(decide_fetch("https://wiki.corp.example/", &r).verdict, Verdict::Ask);
    assert_eq!(decide_fetch("https://docs.rs.evil.com/", &r).verdict, Verdict::NoRule);
    let bad = decide_fetch("https://dоcs.rs/", &r);
    assert_eq!(bad.verdict, Verdict::NoRule);
    assert!(matches!(bad.findings[0].what, What::BadUrl(_)));
    assert_eq!(
        decide_fetch("https://docs.rs/", &r).to_string(),
        "`docs.rs` matches the allow rule `docs.rs`"
    );
}

// Properties.

/// Words a command may hold: plain, quoted, with shell characters.
fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z][a-z0-9._/=-]{0,6}",
        "'[ -~&&[^']]{0,6}'",
        "\"[a-z ;|&<>()]{0,6}\"",
        Just("*".to_string()),
        Just("$X".to_string()),
        Just("$(ls)".to_string()),
        Just("2>&1".to_string()),
        Just("> f".to_string()),
    ]
}

fn separator() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just(";"),
        Just(" && "),
        Just(" || "),
        Just(" | "),
        Just(" & "),
        Just("\n"),
    ]
}

fn line() -> impl Strategy<Value = String> {
    prop::collection::vec((prop::collection::vec(word(), 1..4), separator()), 1..4).prop_map(|cmds| {
        cmds.iter()
            .map(|(words, sep)| format!("{}{sep}", words.join(" ")))
            .collect()
    })
}

/// Whether LINE holds a separator outside quotes (a rough scan, enough for the generated lines).
fn has_unquoted_separator(line: &str) -> bool {
    let (mut single, mut double) = (false, false);
    let trimmed = line.trim_end_matches([';', '&', '|', '\n', ' ']);
    let chars: Vec<char> = trimmed.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            ';' | '|' | '\n' if !single && !double => return true,
            '&' if !single && !double && chars.get(i.wrapping_sub(1)) != Some(&'>') => return true,
            _ => {}
        }
    }
    false
}

/// LINE with what the shell takes literally blanked out: the text in single quotes, escaped
/// characters and, unless KEEP_DOUBLE, the text in double quotes (where `$(` is still live).
fn live_text(line: &str, keep_double: bool) -> String {
    let (mut single, mut double, mut escaped) = (false, false, false);
    line.chars()
        .map(|c| {
            let literal = if escaped {
                escaped = false;
                true
            } else if single {
                single = c != '\'';
                true
            } else {
                match c {
                    '\\' => escaped = true,
                    '\'' if !double => single = true,
                    '"' => double = !double,
                    _ => {}
                }
                double && !keep_double
            };
            if literal {
                ' '
            } else {
                c
            }
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn the_reader_never_panics(line in "[ -~\n\tа-я；\u{200b}]{0,80}") {
        let _ = decide(&line, &allow(&["ls *"]));
    }

    #[test]
    fn a_single_allow_all_rule_never_allows_a_separator(words in prop::collection::vec(word(), 1..5)) {
        let line = format!("cmd {}", words.join(" "));
        let d = decide(&line, &allow(&["cmd *"]));
        if d.verdict == Verdict::Allow {
            prop_assert!(!has_unquoted_separator(&line), "{line}");
            prop_assert!(
                !live_text(&line, true).contains("$(") && !live_text(&line, false).contains("> f"),
                "{line}"
            );
        }
    }

    #[test]
    fn appending_a_command_never_allows_it_unless_it_is_allowed(
        first in line(),
        sep in separator(),
        extra in prop::collection::vec(word(), 1..3),
    ) {
        let r = allow(&["ls *", "git status"]);
        let first = first.trim_end_matches([';', '&', '|', '\n', ' ']).to_string();
        let extra_line = format!("rm {}", extra.join(" "));
        let line = format!("{first}{sep}{extra_line}");
        prop_assert_ne!(verdict(&line, &r), Verdict::Allow, "{}", line);
    }

    #[test]
    fn deny_anywhere_denies_the_whole_line(first in line(), sep in separator()) {
        let r = rules(&["rm *"], &[], &["ls *"]);
        let first = first.trim_end_matches([';', '&', '|', '\n', ' ']).to_string();
        let line = format!("{first}{sep}rm -rf /");
        let d = decide(&line, &r);
        if analyze(&first).not_understood().is_none() {
            prop_assert_eq!(d.verdict, Verdict::Deny, "{}", line);
        } else {
            prop_assert_ne!(d.verdict, Verdict::Allow, "{}", line);
        }
    }

    #[test]
    fn quoting_a_plain_word_does_not_change_its_text(w in "[a-z0-9._/-]{1,10}") {
        let r = CommandRule::parse(&format!("cmd {w}")).unwrap();
        for quoted in [format!("'{w}'"), format!("\"{w}\""), w.chars().map(|c| format!("\\{c}")).collect()] {
            let line = format!("cmd {quoted}");
            prop_assert!(r.matches(&analyze(&line).parts()[0].words), "{}", line);
        }
    }

    #[test]
    fn hosts_never_panic_and_rules_need_a_suffix_on_a_label(url in "https?://[ -~]{0,40}") {
        let rule = DomainRule::parse("example.com").unwrap();
        if let Ok(h) = host_of(&url) {
            if rule.matches(&h) {
                prop_assert_eq!(h.as_str(), "example.com");
            }
        }
    }
}
