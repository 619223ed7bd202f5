//! The decision for the terminal agents' own shell commands (Claude Code's `Bash`, Gemini CLI's
//! `run_shell_command`, Codex CLI's `Bash`) and fetches (`WebFetch`, `web_fetch`), from the
//! user's rules in three lists: deny, then ask, then allow.
//!
//! A command line is read into its simple commands ([`shell`]), each matched on words against
//! the rules ([`rule`]):
//!
//! - **Deny** when any part (wrapped, substituted or not) matches a deny rule, its command
//!   name also compared by its last `/` component (`/bin/rm` is `rm` here);
//! - else **Ask** when any part matches an ask rule;
//! - else **Allow** only when the whole line was understood and *every* part is a plain simple
//!   command matched by an allow rule: no substitution, no redirection to a file, no wrapper
//!   (`sudo`, `env`, `sh -c`...), no leading `VAR=value`, no keyword;
//! - else **no rule**: the caller asks, or leaves the call to the agent.
//!
//! The [`Decision`] says why, in words fit for the user and the model. Fetches are decided the
//! same way on the URL's host ([`domain`]).
//!
//! ```
//! use agent_q_core::command::{decide, rule::CommandRule, Rules, Verdict};
//! let rules = Rules {
//!     deny: vec![CommandRule::parse("rm -rf *").unwrap()],
//!     ask: vec![],
//!     allow: vec![CommandRule::parse("git status").unwrap(), CommandRule::parse("git diff *").unwrap()],
//! };
//! assert_eq!(decide("git status && git diff HEAD", &rules).verdict, Verdict::Allow);
//! let d = decide("git status; rm FILE", &rules);
//! assert_eq!(d.verdict, Verdict::NoRule);
//! assert_eq!(d.to_string(), "`rm FILE` (after `;`) matches no allow rule");
//! assert_eq!(decide("sudo rm -rf /", &rules).verdict, Verdict::Deny);
//! ```

pub mod domain;
pub mod rule;
pub mod shell;
pub mod suggest;
mod wrappers;

use std::fmt;

use crate::visible::visible;
use domain::{host_of, DomainRule};
use rule::CommandRule;
use shell::{analyze, Construct, NotUnderstood, Part, Place};

/// The outcome of a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// A deny rule matched.
    Deny,
    /// An ask rule matched.
    Ask,
    /// Allow rules cover everything.
    Allow,
    /// No rule decides: the caller asks or leaves the call to the agent.
    NoRule,
}

/// One of the three lists of rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleList {
    /// Rules that refuse.
    Deny,
    /// Rules that ask the user.
    Ask,
    /// Rules that let the call run.
    Allow,
}

impl RuleList {
    fn verdict(self) -> Verdict {
        match self {
            RuleList::Deny => Verdict::Deny,
            RuleList::Ask => Verdict::Ask,
            RuleList::Allow => Verdict::Allow,
        }
    }
}

impl fmt::Display for RuleList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RuleList::Deny => "deny",
            RuleList::Ask => "ask",
            RuleList::Allow => "allow",
        })
    }
}

/// The user's rules of one kind, in their three lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules<R> {
    /// Rules that refuse; they win over the others.
    pub deny: Vec<R>,
    /// Rules that ask; they win over allow rules.
    pub ask: Vec<R>,
    /// Rules that let the call run.
    pub allow: Vec<R>,
}

impl<R> Default for Rules<R> {
    fn default() -> Self {
        Rules {
            deny: Vec::new(),
            ask: Vec::new(),
            allow: Vec::new(),
        }
    }
}

impl<R> Rules<R> {
    /// The rules of LIST.
    pub fn list(&self, list: RuleList) -> &[R] {
        match list {
            RuleList::Deny => &self.deny,
            RuleList::Ask => &self.ask,
            RuleList::Allow => &self.allow,
        }
    }
}

/// What a finding says of its subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum What {
    /// It matches a rule of a list.
    Matched {
        /// The list.
        list: RuleList,
        /// The rule, as written.
        rule: String,
    },
    /// No allow rule matches it.
    NoAllowRule,
    /// It holds something a plain rule does not cover.
    Construct(Construct),
    /// The command line is not (fully) understood.
    NotUnderstood(NotUnderstood),
    /// The command line holds no command.
    Empty,
    /// The URL's host cannot be told.
    BadUrl(String),
}

/// One reason of a decision: a part of the command line (or a host) and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The part as written, or the host; `None` for the whole line.
    pub subject: Option<String>,
    /// Where the part stands.
    pub place: Place,
    /// What it is.
    pub what: What,
}

impl Finding {
    fn of(part: &Part, what: What) -> Finding {
        Finding {
            subject: Some(part.source.clone()),
            place: part.place.clone(),
            what,
        }
    }

    fn whole(what: What) -> Finding {
        Finding {
            subject: None,
            place: Place::default(),
            what,
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.subject {
            Some(s) => write!(f, "`{}`", visible(s))?,
            None => f.write_str("the command line")?,
        }
        let place = self.place.to_string();
        if !place.is_empty() {
            write!(f, " ({place})")?;
        }
        match &self.what {
            What::Matched { list, rule } => {
                write!(f, " matches the {list} rule `{}`", visible(rule))
            }
            What::NoAllowRule => f.write_str(" matches no allow rule"),
            What::Construct(c) => write!(f, " has {c}"),
            What::NotUnderstood(n) => write!(f, " is not understood: {n}"),
            What::Empty => f.write_str(" is empty"),
            What::BadUrl(why) => write!(f, " is not covered: {why}"),
        }
    }
}

/// A verdict and its reasons.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The outcome.
    pub verdict: Verdict,
    /// Why: the matching part for Deny and Ask, every part and its rule for Allow, every
    /// reason it is not covered for no rule.
    pub findings: Vec<Finding>,
}

/// The most findings [`Decision`]'s text shows.
const SHOWN_FINDINGS: usize = 6;

impl fmt::Display for Decision {
    /// The findings, joined by `; `, at most six and a count of the rest.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, finding) in self.findings.iter().take(SHOWN_FINDINGS).enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{finding}")?;
        }
        match self.findings.len().saturating_sub(SHOWN_FINDINGS) {
            0 => Ok(()),
            more => write!(f, "; and {more} more"),
        }
    }
}

/// Decide LINE, a shell command line, by RULES (see the module documentation).
pub fn decide(line: &str, rules: &Rules<CommandRule>) -> Decision {
    let analysis = analyze(line);
    let parts = analysis.parts();
    for list in [RuleList::Deny, RuleList::Ask] {
        for part in parts {
            let mut list_rules = rules.list(list).iter();
            if let Some(rule) = list_rules.find(|r| r.matches_any_path(&part.words)) {
                return Decision {
                    verdict: list.verdict(),
                    findings: vec![Finding::of(part, matched(list, rule.as_str()))],
                };
            }
        }
    }
    let mut not_covered = Vec::new();
    if let Some(problem) = analysis.not_understood() {
        not_covered.push(Finding::whole(What::NotUnderstood(problem.clone())));
    } else if parts.is_empty() {
        not_covered.push(Finding::whole(What::Empty));
    }
    let mut allowed = Vec::new();
    for part in parts {
        let rule = rules.allow.iter().find(|r| r.matches(&part.words));
        if !part.constructs.is_empty() {
            let constructs = part.constructs.iter().cloned().map(What::Construct);
            not_covered.extend(constructs.map(|what| Finding::of(part, what)));
        } else if let Some(rule) = rule {
            allowed.push(Finding::of(part, matched(RuleList::Allow, rule.as_str())));
        } else {
            not_covered.push(Finding::of(part, What::NoAllowRule));
        }
    }
    if not_covered.is_empty() {
        Decision {
            verdict: Verdict::Allow,
            findings: allowed,
        }
    } else {
        Decision {
            verdict: Verdict::NoRule,
            findings: not_covered,
        }
    }
}

/// Decide a fetch of URL by RULES on its host (see [`domain`]).
pub fn decide_fetch(url: &str, rules: &Rules<DomainRule>) -> Decision {
    let host = match host_of(url) {
        Ok(host) => host,
        Err(e) => {
            return Decision {
                verdict: Verdict::NoRule,
                findings: vec![Finding {
                    subject: Some(url.chars().take(shell::MAX_SOURCE_CHARS).collect()),
                    place: Place::default(),
                    what: What::BadUrl(e.0),
                }],
            }
        }
    };
    let finding = |what| Finding {
        subject: Some(host.to_string()),
        place: Place::default(),
        what,
    };
    for list in [RuleList::Deny, RuleList::Ask, RuleList::Allow] {
        if let Some(rule) = rules.list(list).iter().find(|r| r.matches(&host)) {
            return Decision {
                verdict: list.verdict(),
                findings: vec![finding(matched(list, rule.as_str()))],
            };
        }
    }
    Decision {
        verdict: Verdict::NoRule,
        findings: vec![finding(What::NoAllowRule)],
    }
}

fn matched(list: RuleList, rule: &str) -> What {
    What::Matched {
        list,
        rule: rule.to_string(),
    }
}

#[cfg(test)]
mod tests;
