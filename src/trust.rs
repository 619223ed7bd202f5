//! `agent-q--core-trust-*`: trust for a while ([`agent_q_core::trust`]), held in one store for
//! the whole Emacs session. Lisp (agent-q-trust.el) makes and ends trusts and shows them;
//! whether a trust lets a call through, and the words the audit keeps, are the core's.

use std::sync::{Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use emacs::{defun, Env, IntoLisp, Result, Value};

use super::args::{self, MAX_NAME_BYTES};
use super::errors::{self, Kind};
use agent_q_core::command::shell::MAX_COMMAND_BYTES;
use agent_q_core::trust::{Request, Ruling, Scope, Store, Subject, Trust};

static STORE: Mutex<Store> = Mutex::new(Store::new());

fn store() -> MutexGuard<'static, Store> {
    STORE.lock().unwrap_or_else(|e| e.into_inner())
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// V as a string, or None when nil.
fn opt_string(env: &Env, v: Value<'_>, what: &str, max: usize) -> Result<Option<String>> {
    if v.is_not_nil() {
        args::string(env, v, what, max).map(Some)
    } else {
        Ok(None)
    }
}

fn trust_plist<'e>(env: &'e Env, trust: &Trust, now: u64) -> Result<Value<'e>> {
    let k = |name: &str| env.intern(&format!(":{name}"));
    let (scope, rule) = match &trust.scope {
        Scope::Edits => ("edits", None),
        Scope::Commands(rule) => ("commands", Some(rule.as_str())),
    };
    let integer = |n: Option<u64>| -> Result<Value<'e>> {
        match n {
            Some(n) => i64::try_from(n).unwrap_or(i64::MAX).into_lisp(env),
            None => ().into_lisp(env),
        }
    };
    env.list(&[
        k("id")?,
        integer(Some(trust.id))?,
        k("agent")?,
        trust.agent.as_str().into_lisp(env)?,
        k("session")?,
        match &trust.session {
            Some(s) => s.as_str().into_lisp(env)?,
            None => ().into_lisp(env)?,
        },
        k("scope")?,
        env.intern(scope)?,
        k("rule")?,
        match rule {
            Some(r) => r.into_lisp(env)?,
            None => ().into_lisp(env)?,
        },
        k("until")?,
        integer(trust.until)?,
        k("left")?,
        integer(trust.left(now))?,
        k("words")?,
        trust.words().into_lisp(env)?,
    ])
}

fn trust_list_value<'e>(env: &'e Env, trusts: &[Trust], now: u64) -> Result<Value<'e>> {
    let items = trusts
        .iter()
        .map(|t| trust_plist(env, t, now))
        .collect::<Result<Vec<_>>>()?;
    env.list(&items)
}

/// Trust AGENT (its SESSION only, when SESSION is a string) for SECONDS (nil: until turned
/// off): its edits inside its workspace when RULE is nil, else its shell commands that the
/// command rule RULE (such as "npm test *") covers whole.
///
/// A trust of the same agent, session and scope is replaced. Return the trust, a plist
/// (:id :agent :session :scope :rule :until :left :words); :scope is `edits' or `commands',
/// :until the end in seconds since the epoch (nil: until turned off), :left the seconds left,
/// :words the trust as the audit says it ("trusted until ..."). Signal `agent-q-error' for a
/// rule that cannot be read, a duration under a second, or too many trusts.
#[defun]
fn trust_add<'e>(
    env: &'e Env,
    agent: Value<'e>,
    session: Value<'e>,
    rule: Value<'e>,
    seconds: Value<'e>,
) -> Result<Value<'e>> {
    let agent = args::string(env, agent, "AGENT", MAX_NAME_BYTES)?;
    let session = opt_string(env, session, "SESSION", MAX_NAME_BYTES)?;
    let rule = opt_string(env, rule, "RULE", MAX_NAME_BYTES)?;
    let seconds = if seconds.is_not_nil() {
        Some(u64::try_from(args::integer(env, seconds, "SECONDS")?).unwrap_or(0))
    } else {
        None
    };
    let scope = match rule {
        None => Scope::Edits,
        Some(rule) => match Store::command_scope(&rule) {
            Ok(scope) => scope,
            Err(e) => return errors::signal(env, Kind::Generic, e.to_string()),
        },
    };
    let now = now();
    let added = store().add(&agent, session.as_deref(), scope, seconds, now);
    match added {
        Ok(trust) => trust_plist(env, &trust, now),
        Err(e) => errors::signal(env, Kind::Generic, e.to_string()),
    }
}

/// End the trust numbered ID, or every trust when ID is nil. Return how many ended.
#[defun]
fn trust_end(env: &Env, id: Value<'_>) -> Result<i64> {
    if !id.is_not_nil() {
        let ended = store().end_all();
        return Ok(i64::try_from(ended).unwrap_or(i64::MAX));
    }
    let id = args::integer(env, id, "ID")?;
    let ended = u64::try_from(id).is_ok_and(|id| store().end(id));
    Ok(i64::from(ended))
}

/// The trusts: (ACTIVE . ENDED), each a list of plists as `agent-q--core-trust-add' gives.
/// ENDED are those whose time ran out since the last call; they are dropped now.
#[defun]
fn trust_list(env: &Env) -> Result<Value<'_>> {
    let now = now();
    let (active, ended) = {
        let mut store = store();
        let ended = store.expire(now);
        (store.active(now), ended)
    };
    env.cons(
        trust_list_value(env, &active, now)?,
        trust_list_value(env, &ended, now)?,
    )
}

/// Whether a trust lets a call through unasked, and which: its words ("trusted until ...:
/// gemini's edits inside its workspace"), or nil.
///
/// AGENT made the call in SESSION (a string or nil). KIND is "edit" (SUBJECT is the file,
/// WORKSPACE the agent's working directory, both absolute with links resolved) or "command"
/// (SUBJECT is the command line). PROTECTED non-nil: the call touches a protected or sensitive
/// file, and no trust covers it. RULING is what the approval rules said: `deny', `ask',
/// `allow' or nil; a deny or ask rule wins over any trust.
#[defun]
#[allow(clippy::too_many_arguments)]
fn trust_decide<'e>(
    env: &'e Env,
    agent: Value<'e>,
    session: Value<'e>,
    kind: Value<'e>,
    subject: Value<'e>,
    workspace: Value<'e>,
    protected: Value<'e>,
    ruling: Value<'e>,
) -> Result<Value<'e>> {
    let agent = args::string(env, agent, "AGENT", MAX_NAME_BYTES)?;
    let session = opt_string(env, session, "SESSION", MAX_NAME_BYTES)?;
    let kind = args::string(env, kind, "KIND", 64)?;
    let subject = args::string(env, subject, "SUBJECT", 2 * MAX_COMMAND_BYTES.max(MAX_NAME_BYTES))?;
    let workspace = opt_string(env, workspace, "WORKSPACE", MAX_NAME_BYTES)?;
    let ruling = if !ruling.is_not_nil() {
        Ruling::None
    } else if ruling == env.intern("deny")? {
        Ruling::Deny
    } else if ruling == env.intern("ask")? {
        Ruling::Ask
    } else if ruling == env.intern("allow")? {
        Ruling::Allow
    } else {
        return errors::signal(env, Kind::Generic, "RULING must be deny, ask, allow or nil");
    };
    let subject = match kind.as_str() {
        "edit" => Subject::Edit {
            file: &subject,
            workspace: workspace.as_deref(),
        },
        "command" => Subject::Command(&subject),
        _ => Subject::Other,
    };
    let request = Request {
        agent: &agent,
        session: session.as_deref(),
        subject,
        protected: protected.is_not_nil(),
        ruling,
    };
    let words = store().decide(&request, now()).map(Trust::words);
    match words {
        Some(words) => words.into_lisp(env),
        None => ().into_lisp(env),
    }
}
