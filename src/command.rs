//! `agent-q--core-command-decide` and `agent-q--core-fetch-decide`: the terminal agents' own
//! shell commands and fetches decided by the user's rules ([`agent_q_core::command`]). Lisp
//! (agent-q-rules.el) collects the rules that apply to a call into three lists; the verdict and
//! its wording are the core's. A malformed rule signals `agent-q-error` saying what is wrong.

use emacs::{defun, Env, IntoLisp, Result, Value};

use super::args;
use super::errors::{self, Kind};
use super::ide::string_items;
use agent_q_core::command::domain::{DomainRule, MAX_URL_BYTES};
use agent_q_core::command::rule::CommandRule;
use agent_q_core::command::shell::MAX_COMMAND_BYTES;
use agent_q_core::command::suggest::{grant_command_rules, suggest_command_rule, suggest_domain_rule};
use agent_q_core::command::{decide, decide_fetch, Decision, Rules, Verdict};

fn parsed<R, E: std::fmt::Display>(
    env: &Env,
    list: Value<'_>,
    what: &str,
    parse: impl Fn(&str) -> std::result::Result<R, E>,
) -> Result<Vec<R>> {
    let mut rules = Vec::new();
    for text in string_items(env, list, what)? {
        match parse(&text) {
            Ok(rule) => rules.push(rule),
            Err(e) => return errors::signal(env, Kind::Generic, format!("In {what}: {e}")),
        }
    }
    Ok(rules)
}

fn answer<'e>(env: &'e Env, decision: &Decision) -> Result<Value<'e>> {
    let verdict = env.intern(match decision.verdict {
        Verdict::Deny => "deny",
        Verdict::Ask => "ask",
        Verdict::Allow => "allow",
        Verdict::NoRule => "no-rule",
    })?;
    env.cons(verdict, decision.to_string().into_lisp(env)?)
}

/// Decide the shell command LINE by the command rules DENY, ASK and ALLOW (lists of strings
/// such as "git status" or "git diff *").
///
/// Return (VERDICT . EXPLANATION): VERDICT is `deny' (a part matches a deny rule), `ask' (a
/// part matches an ask rule), `allow' (every part of the line is a plain command that an allow
/// rule covers) or `no-rule'; EXPLANATION says why, in words fit for the user and the model.
/// A rule that cannot be read signals `agent-q-error' naming it.
#[defun]
fn command_decide<'e>(
    env: &'e Env,
    line: Value<'e>,
    deny: Value<'e>,
    ask: Value<'e>,
    allow: Value<'e>,
) -> Result<Value<'e>> {
    // Twice the limit, so that the core, not the conversion, judges a long line.
    let line = args::string(env, line, "LINE", 2 * MAX_COMMAND_BYTES)?;
    let rules = Rules {
        deny: parsed(env, deny, "DENY", CommandRule::parse)?,
        ask: parsed(env, ask, "ASK", CommandRule::parse)?,
        allow: parsed(env, allow, "ALLOW", CommandRule::parse)?,
    };
    answer(env, &decide(&line, &rules))
}

/// Decide a fetch of URL by the domain rules DENY, ASK and ALLOW (lists of strings such as
/// "example.org" or "*.example.org").
///
/// Return (VERDICT . EXPLANATION), as `agent-q--core-command-decide' does.
#[defun]
fn fetch_decide<'e>(
    env: &'e Env,
    url: Value<'e>,
    deny: Value<'e>,
    ask: Value<'e>,
    allow: Value<'e>,
) -> Result<Value<'e>> {
    let url = args::string(env, url, "URL", 2 * MAX_URL_BYTES)?;
    let rules = Rules {
        deny: parsed(env, deny, "DENY", DomainRule::parse)?,
        ask: parsed(env, ask, "ASK", DomainRule::parse)?,
        allow: parsed(env, allow, "ALLOW", DomainRule::parse)?,
    };
    answer(env, &decide_fetch(&url, &rules))
}

/// The command rule to propose for the shell command LINE, given the allow rules ALLOW in
/// force (a list of strings): the first simple command of LINE that no rule of ALLOW covers and
/// a plain rule can, as its name, its subcommand and a last `*` when more words follow ("git
/// diff *"). Return the rule's text, or nil when no part of LINE can be covered by a plain rule.
/// The user edits the proposal; the decision (`agent-q--core-command-decide') stays the
/// matcher's, so a compound command's other parts remain asked about.
#[defun]
fn command_suggest<'e>(env: &'e Env, line: Value<'e>, allow: Value<'e>) -> Result<Value<'e>> {
    let line = args::string(env, line, "LINE", 2 * MAX_COMMAND_BYTES)?;
    let allow = parsed(env, allow, "ALLOW", CommandRule::parse)?;
    suggest_command_rule(&line, &allow).into_lisp(env)
}

/// The command rules that the approval prompt's `a` grants for the shell command LINE, a list of
/// strings: the proposal of `agent-q--core-command-suggest' for each part in turn, until they
/// cover every part (`agent-q--core-command-decide' allows LINE by them alone). Return nil when
/// some part cannot be covered by a plain rule: the call is then approved alone.
#[defun]
fn command_grant<'e>(env: &'e Env, line: Value<'e>) -> Result<Value<'e>> {
    let line = args::string(env, line, "LINE", 2 * MAX_COMMAND_BYTES)?;
    match grant_command_rules(&line) {
        Some(texts) => {
            let items = texts
                .iter()
                .map(|t| t.as_str().into_lisp(env))
                .collect::<Result<Vec<_>>>()?;
            env.list(&items)
        }
        None => env.intern("nil"),
    }
}

/// The domain rule to propose for a fetch of URL: its host ("docs.example.org"), or nil when
/// the host cannot be told for certain.
#[defun]
fn fetch_suggest<'e>(env: &'e Env, url: Value<'e>) -> Result<Value<'e>> {
    let url = args::string(env, url, "URL", 2 * MAX_URL_BYTES)?;
    suggest_domain_rule(&url).into_lisp(env)
}
