//! Trust for a while: the user lets one terminal agent (or one of its sessions), for a duration
//! or until turned off, have (a) its edits inside its workspace or (b) its shell commands that a
//! command rule would match pass without asking (`M-x agent-q-trust-agent`).
//!
//! A trust is a sibling of the prompt's session grants, decided here once for every path:
//! the host hands over what it knows of a call that would otherwise be asked (its agent and
//! session, the file and workspace of an edit or the command line, whether the file is
//! protected or sensitive, and what the user's approval rules said), and [`Store::decide`]
//! answers with the trust that lets it through, worded for the audit ("trusted until …"), or
//! nothing. What always wins over a trust:
//!
//! - a deny rule, and an ask rule that names the call ([`Ruling::Deny`], [`Ruling::Ask`]);
//! - a protected file (the agent's own settings, `.dir-locals.el`, git hooks, init files, the
//!   rules) or a sensitive one: the host says so and the call is asked or reviewed as without
//!   trust (the executor refuses a trust for a protected call all the same);
//! - an edit outside the agent's workspace, or one whose names cannot be judged (relative, or
//!   with `..` left in them);
//! - a command line that the trust's rule does not cover whole (see [`crate::command::decide`]).
//!
//! A trust ends by itself at its time ([`Store::decide`] never lets an expired one through,
//! whatever the host's timers do), or when the user ends it ([`Store::end`]).

use std::fmt;
use std::path::{Component, Path, PathBuf};

use thiserror::Error;

use crate::command::rule::CommandRule;
use crate::command::{decide, Rules, Verdict};
use crate::registry::iso8601_from_unix;

/// The most trusts held at once.
pub const MAX_TRUSTS: usize = 100;

/// The longest trust, in seconds (a year): a longer one is "until turned off".
pub const MAX_SECONDS: u64 = 366 * 86_400;

/// The most characters of an agent's or a session's name kept.
pub const MAX_NAME_CHARS: usize = 200;

/// What a trust lets through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// The agent's edits of files inside its workspace (its working directory).
    Edits,
    /// The agent's shell commands that this rule covers whole, as an allow rule would.
    Commands(CommandRule),
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::Edits => f.write_str("edits inside its workspace"),
            Scope::Commands(rule) => write!(f, "commands matching `{}`", rule.as_str()),
        }
    }
}

/// One trust.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trust {
    /// Its number, for ending it.
    pub id: u64,
    /// The agent ("claude", "gemini", "codex").
    pub agent: String,
    /// The one session it covers; `None` for every session of the agent.
    pub session: Option<String>,
    /// What it lets through.
    pub scope: Scope,
    /// When it ends, in seconds since the Unix epoch; `None` until the user ends it.
    pub until: Option<u64>,
}

impl Trust {
    /// Whether it still holds at NOW.
    pub fn active(&self, now: u64) -> bool {
        self.until.is_none_or(|until| now < until)
    }

    /// Seconds left at NOW; `None` for a trust until turned off.
    pub fn left(&self, now: u64) -> Option<u64> {
        self.until.map(|until| until.saturating_sub(now))
    }

    /// "until 2026-11-29T02:30:00Z" or "until turned off".
    pub fn until_words(&self) -> String {
        match self.until {
            Some(until) => format!("until {}", iso8601_from_unix(until)),
            None => "until turned off".into(),
        }
    }

    /// Whom it trusts: "gemini" or "gemini session ID".
    pub fn who(&self) -> String {
        match &self.session {
            Some(session) => format!("{} session {session}", self.agent),
            None => self.agent.clone(),
        }
    }

    /// The trust in words, for the audit and the list: "trusted until …: gemini's edits inside
    /// its workspace".
    pub fn words(&self) -> String {
        crate::visible::visible(&format!(
            "trusted {}: {}'s {}",
            self.until_words(),
            self.who(),
            self.scope
        ))
    }
}

/// Why a trust cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TrustError {
    /// No agent named.
    #[error("a trust needs an agent")]
    NoAgent,
    /// A command trust whose rule cannot be read.
    #[error("the trust's command rule cannot be read: {0}")]
    Rule(String),
    /// A duration of no time.
    #[error("a trust needs a duration of at least one second (or none: until turned off)")]
    NoTime,
    /// Too many at once.
    #[error("{MAX_TRUSTS} trusts are in force already; end one first")]
    TooMany,
}

/// What the user's approval rules said about the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ruling {
    /// A deny rule matched: it wins.
    Deny,
    /// An ask rule matched: it wins.
    Ask,
    /// An allow rule matched (it decides on its own).
    Allow,
    /// No rule decides.
    None,
}

/// What the call is, as the host knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject<'a> {
    /// An edit of FILE by an agent working in WORKSPACE (both as the host resolved them:
    /// absolute, links followed).
    Edit {
        /// The file changed.
        file: &'a str,
        /// The agent's working directory, if known.
        workspace: Option<&'a str>,
    },
    /// A shell command line.
    Command(&'a str),
    /// Anything else: never trusted.
    Other,
}

/// A call that would be asked, as the host describes it to [`Store::decide`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request<'a> {
    /// The agent that made it.
    pub agent: &'a str,
    /// Its session, if known.
    pub session: Option<&'a str>,
    /// What it does.
    pub subject: Subject<'a>,
    /// Whether it touches a protected or sensitive file: then no trust covers it.
    pub protected: bool,
    /// What the approval rules said.
    pub ruling: Ruling,
}

/// The trusts in force.
#[derive(Debug, Default)]
pub struct Store {
    next: u64,
    trusts: Vec<Trust>,
}

fn cut(text: &str) -> String {
    text.trim().chars().take(MAX_NAME_CHARS).collect()
}

/// NAME with `.` and `..` resolved lexically; `None` unless absolute and free of a `..` that
/// climbs above the root.
fn normal(name: &str) -> Option<PathBuf> {
    let path = Path::new(name);
    if !path.is_absolute() {
        return None;
    }
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::RootDir | Component::Prefix(_) => out.push(component.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() || out.as_os_str().is_empty() {
                    return None;
                }
            }
            Component::Normal(part) => out.push(part),
        }
    }
    Some(out)
}

/// Whether FILE is inside WORKSPACE (not the workspace itself).
pub fn inside(file: &str, workspace: &str) -> bool {
    match (normal(file), normal(workspace)) {
        (Some(file), Some(workspace)) => {
            file != workspace && file.starts_with(&workspace) && workspace.parent().is_some()
        }
        _ => false,
    }
}

impl Store {
    /// No trust.
    pub const fn new() -> Store {
        Store {
            next: 0,
            trusts: Vec::new(),
        }
    }

    /// Trust AGENT (its SESSION only, when given) with SCOPE for SECONDS from NOW (`None`:
    /// until turned off). A trust of the same agent, session and scope is replaced. Returns
    /// the new trust.
    pub fn add(
        &mut self,
        agent: &str,
        session: Option<&str>,
        scope: Scope,
        seconds: Option<u64>,
        now: u64,
    ) -> Result<Trust, TrustError> {
        let agent = cut(agent);
        if agent.is_empty() {
            return Err(TrustError::NoAgent);
        }
        let session = session.map(cut).filter(|s| !s.is_empty());
        let until = match seconds {
            Some(0) => return Err(TrustError::NoTime),
            Some(s) if s <= MAX_SECONDS => Some(now.saturating_add(s)),
            _ => None,
        };
        self.expire(now);
        self.trusts
            .retain(|t| !(t.agent == agent && t.session == session && t.scope == scope));
        if self.trusts.len() >= MAX_TRUSTS {
            return Err(TrustError::TooMany);
        }
        self.next += 1;
        let trust = Trust {
            id: self.next,
            agent,
            session,
            scope,
            until,
        };
        self.trusts.push(trust.clone());
        Ok(trust)
    }

    /// Make a command trust's scope from RULE (a command rule such as `npm test *`).
    pub fn command_scope(rule: &str) -> Result<Scope, TrustError> {
        CommandRule::parse(rule)
            .map(Scope::Commands)
            .map_err(|e| TrustError::Rule(e.to_string()))
    }

    /// End the trust ID; whether there was one.
    pub fn end(&mut self, id: u64) -> bool {
        let before = self.trusts.len();
        self.trusts.retain(|t| t.id != id);
        self.trusts.len() != before
    }

    /// End every trust; how many there were.
    pub fn end_all(&mut self) -> usize {
        std::mem::take(&mut self.trusts).len()
    }

    /// Drop the trusts that ended by NOW, and return them.
    pub fn expire(&mut self, now: u64) -> Vec<Trust> {
        let (active, ended) = std::mem::take(&mut self.trusts)
            .into_iter()
            .partition(|t| t.active(now));
        self.trusts = active;
        ended
    }

    /// The trusts in force at NOW, oldest first.
    pub fn active(&self, now: u64) -> Vec<Trust> {
        self.trusts.iter().filter(|t| t.active(now)).cloned().collect()
    }

    /// The trust that lets REQUEST through at NOW without asking, if one does (see the module
    /// documentation for what wins over it).
    pub fn decide(&self, request: &Request<'_>, now: u64) -> Option<&Trust> {
        if request.protected || matches!(request.ruling, Ruling::Deny | Ruling::Ask) {
            return None;
        }
        self.trusts.iter().find(|t| {
            t.active(now)
                && t.agent == request.agent
                && t.session.as_deref().is_none_or(|s| Some(s) == request.session)
                && covers(&t.scope, &request.subject)
        })
    }
}

fn covers(scope: &Scope, subject: &Subject<'_>) -> bool {
    match (scope, subject) {
        (
            Scope::Edits,
            Subject::Edit {
                file,
                workspace: Some(workspace),
            },
        ) => inside(file, workspace),
        (Scope::Commands(rule), Subject::Command(line)) => {
            let rules = Rules {
                deny: Vec::new(),
                ask: Vec::new(),
                allow: vec![rule.clone()],
            };
            decide(line, &rules).verdict == Verdict::Allow
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests;
