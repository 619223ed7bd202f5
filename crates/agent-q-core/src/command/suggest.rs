//! The rule that the approval prompt's `s` key proposes for an agent's own shell command or
//! fetch: the user edits it before it is saved, and the matcher ([`super::decide`]) decides what
//! it covers, so a proposal never widens what a rule means.
//!
//! For a command line, the proposal names the first simple command that no allow rule covers
//! and that a plain rule can cover (no substitution, redirection to a file, wrapper..., and not
//! run inside one): its command name, then its first word when that reads as a subcommand
//! (`diff` in `git diff HEAD`), then ` *` when more words follow. A compound command's other parts stay uncovered:
//! saving the proposal for `git status; rm FILE` allows `git status` alone, and the line is
//! still asked about.
//!
//! ```
//! use agent_q_core::command::suggest::{suggest_command_rule, suggest_domain_rule};
//! assert_eq!(suggest_command_rule("git diff HEAD~1 --stat", &[]).as_deref(), Some("git diff *"));
//! assert_eq!(suggest_command_rule("npm test", &[]).as_deref(), Some("npm test"));
//! assert_eq!(suggest_command_rule("ls -la /tmp", &[]).as_deref(), Some("ls *"));
//! assert_eq!(suggest_command_rule("$(curl x)", &[]), None);
//! assert_eq!(suggest_domain_rule("https://Docs.Example.org:8443/a").as_deref(), Some("docs.example.org"));
//! ```

use super::domain::{host_of, DomainRule};
use super::rule::CommandRule;
use super::shell::{analyze, Part, Within, Word};
use super::{decide, Rules, Verdict};

/// Whether WORD can stand in a rule as written: plain characters only, nothing the shell or
/// the rule reader would read otherwise.
fn plain(word: &Word, name: bool) -> bool {
    let text = word.text();
    !word.expands()
        && !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.:@%+=,-".contains(c) || (name && c == '/'))
}

/// Whether WORD reads as a subcommand (`status`, `diff`, `run-tests`), not an option, a file
/// or an argument.
fn subcommand(word: &Word) -> bool {
    plain(word, false)
        && word.text().starts_with(|c: char| c.is_ascii_alphabetic())
        && word
            .text()
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// The proposal for PART alone, if a plain rule can cover it.
fn proposal(part: &Part) -> Option<String> {
    // What runs inside a substitution, a wrapper or a shell string is not proposed: the line
    // around it holds something no plain rule covers, so a rule for it would not be enough.
    let nested = !matches!(part.place.within, None | Some(Within::Subshell));
    if nested || !part.constructs.is_empty() {
        return None;
    }
    let (name, rest) = part.words.split_first()?;
    if !plain(name, true) {
        return None;
    }
    let mut words = vec![name.text()];
    let mut more = rest;
    if let Some((first, after)) = rest.split_first() {
        if subcommand(first) {
            words.push(first.text());
            more = after;
        }
    }
    if !more.is_empty() {
        words.push("*");
    }
    let text = words.join(" ");
    // The proposal must read back as a rule and cover the part it was made from.
    let rule = CommandRule::parse(&text).ok()?;
    rule.matches(&part.words).then_some(text)
}

/// The command rule to propose for LINE, given the allow rules ALLOW already in force (see the
/// module documentation); `None` when no part of LINE can be covered by a plain rule.
pub fn suggest_command_rule(line: &str, allow: &[CommandRule]) -> Option<String> {
    let analysis = analyze(line);
    analysis
        .parts()
        .iter()
        .filter(|part| !allow.iter().any(|r| r.matches(&part.words)))
        .find_map(proposal)
}

/// The most command rules that one grant of the approval prompt's `a` holds.
pub const MAX_GRANT_RULES: usize = 16;

/// The command rules that the approval prompt's `a` grants for LINE: the proposal of
/// [`suggest_command_rule`] for its first part, then for the next part not yet covered..., until
/// the rules cover every part ([`super::decide`] allows LINE by them alone). `None` when some part
/// cannot be covered by a plain rule (a substitution, a redirection to a file, a wrapper...), or
/// more than [`MAX_GRANT_RULES`] would be needed: such a line is approved alone, never granted.
///
/// ```
/// use agent_q_core::command::suggest::grant_command_rules;
/// assert_eq!(grant_command_rules("git diff HEAD~1"), Some(vec!["git diff *".to_string()]));
/// assert_eq!(
///     grant_command_rules("git status && ls -la /tmp"),
///     Some(vec!["git status".to_string(), "ls *".to_string()])
/// );
/// assert_eq!(grant_command_rules("echo $(cat /etc/passwd)"), None);
/// ```
pub fn grant_command_rules(line: &str) -> Option<Vec<String>> {
    let mut texts = Vec::new();
    let mut rules = Vec::new();
    loop {
        if !rules.is_empty() {
            let granted = Rules {
                deny: Vec::new(),
                ask: Vec::new(),
                allow: rules.clone(),
            };
            if decide(line, &granted).verdict == Verdict::Allow {
                return Some(texts);
            }
        }
        if texts.len() >= MAX_GRANT_RULES {
            return None;
        }
        let next = suggest_command_rule(line, &rules)?;
        rules.push(CommandRule::parse(&next).ok()?);
        texts.push(next);
    }
}

/// The domain rule to propose for a fetch of URL: its host exactly; `None` when the host cannot
/// be told for certain.
pub fn suggest_domain_rule(url: &str) -> Option<String> {
    let host = host_of(url).ok()?;
    DomainRule::parse(host.as_str()).ok()?;
    Some(host.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suggest(line: &str) -> Option<String> {
        suggest_command_rule(line, &[])
    }

    #[test]
    fn proposes_the_name_and_subcommand() {
        assert_eq!(suggest("git status").as_deref(), Some("git status"));
        assert_eq!(suggest("git diff").as_deref(), Some("git diff"));
        assert_eq!(suggest("git diff HEAD").as_deref(), Some("git diff *"));
        assert_eq!(suggest("cargo test --package=core").as_deref(), Some("cargo test *"));
        assert_eq!(suggest("make").as_deref(), Some("make"));
        assert_eq!(suggest("rm -rf build").as_deref(), Some("rm *"));
        assert_eq!(suggest("./run.sh --fast").as_deref(), Some("./run.sh *"));
        assert_eq!(suggest("grep 'a b' file").as_deref(), Some("grep *"));
    }

    #[test]
    fn proposes_nothing_a_plain_rule_cannot_cover() {
        assert_eq!(suggest(""), None);
        assert_eq!(suggest("echo $(id) "), None);
        assert_eq!(suggest("sudo rm -rf /"), None);
        assert_eq!(suggest("sh -c 'rm x'"), None);
        assert_eq!(suggest("echo hi > out.txt"), None);
        assert_eq!(suggest("FOO=1 make"), None);
        assert_eq!(suggest("$CMD x"), None);
        assert_eq!(suggest("'g it' status"), None);
        // A look-alike name is not proposed as something else.
        assert_eq!(suggest("gіt status"), None);
    }

    #[test]
    fn a_compound_command_stays_asked() {
        for line in [
            "git status; rm FILE",
            "git status && curl x | sh",
            "git log | tee out",
            "git status || $(rm x)",
        ] {
            let mut allow = Vec::new();
            // Save each proposal in turn, as a user pressing `s` each time would.
            while let Some(text) = suggest_command_rule(line, &allow) {
                let rule = CommandRule::parse(&text).expect("a proposal is a rule");
                allow.push(rule);
                let rules = Rules {
                    allow: allow.clone(),
                    ..Rules::default()
                };
                let parts_left = analyze(line)
                    .parts()
                    .iter()
                    .filter(|p| !allow.iter().any(|r| r.matches(&p.words)))
                    .count();
                if parts_left > 0 {
                    assert_eq!(decide(line, &rules).verdict, Verdict::NoRule, "{line} with {allow:?}");
                }
            }
        }
        assert_eq!(suggest("git status; rm FILE").as_deref(), Some("git status"));
        let allow = [CommandRule::parse("git status").unwrap()];
        assert_eq!(
            suggest_command_rule("git status; rm FILE", &allow).as_deref(),
            Some("rm FILE")
        );
        assert_eq!(
            suggest_command_rule("git status; rm -f FILE", &allow).as_deref(),
            Some("rm *")
        );
        let rules = Rules {
            allow: vec![CommandRule::parse("git status").unwrap()],
            ..Rules::default()
        };
        assert_eq!(decide("git status; rm FILE", &rules).verdict, Verdict::NoRule);
    }

    #[test]
    fn a_grant_covers_every_part_or_nothing() {
        let grant = |line: &str| grant_command_rules(line);
        assert_eq!(grant("ls"), Some(vec!["ls".to_string()]));
        assert_eq!(grant("git status; git status"), Some(vec!["git status".to_string()]));
        assert_eq!(
            grant("cd /tmp && make -j4 | tail -3"),
            Some(vec!["cd *".to_string(), "make *".to_string(), "tail *".to_string()])
        );
        // A part no plain rule covers: no grant, whatever the other parts.
        assert_eq!(grant("git status; echo hi > out.txt"), None);
        assert_eq!(grant("sudo ls"), None);
        assert_eq!(grant(""), None);
        // What it grants covers the line, by the matcher, and no other command.
        let texts = grant("git diff HEAD~1 --stat; npm test").unwrap();
        let rules = Rules {
            allow: texts.iter().map(|t| CommandRule::parse(t).unwrap()).collect(),
            ..Rules::default()
        };
        assert_eq!(
            decide("git diff HEAD~1 --stat; npm test", &rules).verdict,
            Verdict::Allow
        );
        assert_eq!(decide("npm test && git diff", &rules).verdict, Verdict::Allow);
        assert_eq!(decide("npm test; rm -rf /", &rules).verdict, Verdict::NoRule);
        // Too many parts: nothing granted.
        let long = (0..MAX_GRANT_RULES + 1)
            .map(|i| format!("cmd{i}"))
            .collect::<Vec<_>>()
            .join("; ");
        assert_eq!(grant(&long), None);
    }

    #[test]
    fn proposes_the_host() {
        assert_eq!(
            suggest_domain_rule("https://example.org/x").as_deref(),
            Some("example.org")
        );
        assert_eq!(suggest_domain_rule("http://user@[::1]:80/").as_deref(), Some("[::1]"));
        assert_eq!(
            suggest_domain_rule("https://a.example.org@evil.org/").as_deref(),
            Some("evil.org")
        );
        assert_eq!(suggest_domain_rule("file:///etc/passwd"), None);
        assert_eq!(suggest_domain_rule("https://exämple.org/"), None);
    }
}
