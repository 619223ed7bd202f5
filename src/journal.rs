//! `agent-q--core-journal-*`: the [`agent_q_core::journal`] core for Emacs.
//!
//! A journal is an opaque object holding the entries in memory; every entry recorded through it
//! is appended to its file at once. Errors signal `agent-q-error` with the core's message.

use emacs::{defun, Env, IntoLisp, Result, Value};

use super::args::{self, MAX_NAME_BYTES, MAX_TEXT_BYTES};
use super::errors::{self, Kind};
use agent_q_core::journal::{self, Approval, Entry, Journal, JournalError, Meta};

/// Most entries a revert takes.
const MAX_REVERT_IDS: usize = 1_000_000;

fn fail<T>(env: &Env, error: JournalError) -> Result<T> {
    errors::signal(env, Kind::Generic, error.to_string())
}

/// Return the journal kept in the file PATH, holding at most MAX entries: an opaque object.
///
/// The file is read now (a torn last line, left by a crash, is skipped); the oldest entries
/// beyond MAX are dropped and counted (`agent-q--core-journal-lost').
#[defun(user_ptr)]
fn journal_open(env: &Env, path: Value<'_>, max: Value<'_>) -> Result<Journal> {
    let path = args::string(env, path, "PATH", MAX_NAME_BYTES)?;
    let max = usize::try_from(args::integer(env, max, "MAX")?).unwrap_or(1);
    match Journal::open(path, max) {
        Ok(j) => Ok(j),
        Err(e) => fail(env, e),
    }
}

fn journal_arg<'e>(env: &'e Env, j: Value<'e>) -> Result<std::cell::RefMut<'e, Journal>> {
    match j.into_ref_mut::<Journal>() {
        Ok(j) => Ok(j),
        Err(_) => errors::signal(
            env,
            Kind::Generic,
            format!(
                "JOURNAL must be a journal from agent-q--core-journal-open, not a {}",
                args::type_name(env, j)
            ),
        ),
    }
}

/// The string at KEY of PLIST, "" when absent or nil.
fn plist_string(env: &Env, plist: Value<'_>, key: &str) -> Result<String> {
    let v = env.call("plist-get", (plist, env.intern(key)?))?;
    if !v.is_not_nil() {
        return Ok(String::new());
    }
    args::string(env, v, key, MAX_NAME_BYTES)
}

/// The natural number at KEY of PLIST, 0 when absent or nil.
fn plist_count(env: &Env, plist: Value<'_>, key: &str) -> Result<usize> {
    let v = env.call("plist-get", (plist, env.intern(key)?))?;
    if !v.is_not_nil() {
        return Ok(0);
    }
    Ok(usize::try_from(args::integer(env, v, key)?).unwrap_or(0))
}

fn meta(env: &Env, plist: Value<'_>) -> Result<Meta> {
    let reverts_value = env.call("plist-get", (plist, env.intern(":reverts")?))?;
    let mut reverts = Vec::new();
    if reverts_value.is_not_nil() {
        reverts = ids(env, reverts_value)?;
    }
    let time = env.call("plist-get", (plist, env.intern(":time")?))?;
    let time = if time.is_not_nil() {
        args::number(env, time, ":time")?
    } else {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0)
    };
    Ok(Meta {
        agent: plist_string(env, plist, ":agent")?,
        session: plist_string(env, plist, ":session")?,
        turn: plist_string(env, plist, ":turn")?,
        file: plist_string(env, plist, ":file")?,
        command: plist_string(env, plist, ":command")?,
        approval: Approval {
            how: plist_string(env, plist, ":how")?,
            detail: plist_string(env, plist, ":detail")?,
            accepted: plist_count(env, plist, ":accepted")?,
            rejected: plist_count(env, plist, ":rejected")?,
        },
        reverts,
        time,
    })
}

/// IDS, a proper list of entry numbers.
fn ids(env: &Env, list: Value<'_>) -> Result<Vec<u64>> {
    let length = env.call("proper-list-p", [list])?;
    if !length.is_not_nil() {
        return errors::signal(env, Kind::Generic, "IDS must be a proper list of entry numbers");
    }
    let length = usize::try_from(length.into_rust::<i64>()?).unwrap_or(usize::MAX);
    if length > MAX_REVERT_IDS {
        return errors::signal(
            env,
            Kind::Generic,
            format!("too many entries (at most {MAX_REVERT_IDS})"),
        );
    }
    let mut out = Vec::with_capacity(length);
    let mut rest = list;
    for _ in 0..length {
        let id = args::integer(env, rest.car()?, "An entry number")?;
        out.push(u64::try_from(id).unwrap_or(0));
        rest = rest.cdr()?;
    }
    Ok(out)
}

/// Record in JOURNAL a change to a file from OLD to NEW, or a shell command when OLD and NEW are
/// both nil; return the entry's number, or nil when OLD and NEW are the same.
///
/// META is a plist: :agent, :session, :turn, :file (absolute), :command, :how (`rule', `user',
/// `review'... as a string), :detail, :accepted and :rejected (hunks), :reverts (the numbers of
/// the entries a revert undid), :time (seconds since the epoch; now when absent). When SENSITIVE
/// is non-nil the hunks are recorded without their text.
#[defun]
fn journal_record<'e>(
    env: &'e Env,
    j: Value<'e>,
    meta: Value<'e>,
    old: Value<'e>,
    new: Value<'e>,
    sensitive: Value<'e>,
) -> Result<Value<'e>> {
    let meta = self::meta(env, meta)?;
    let entry = if !old.is_not_nil() && !new.is_not_nil() {
        Some(Entry::command(meta))
    } else {
        let old = args::string(env, old, "OLD", MAX_TEXT_BYTES)?;
        let new = args::string(env, new, "NEW", MAX_TEXT_BYTES)?;
        match Entry::edit(meta, &old, &new, sensitive.is_not_nil()) {
            Ok(entry) => entry,
            Err(e) => return fail(env, e),
        }
    };
    let Some(entry) = entry else {
        return ().into_lisp(env);
    };
    let mut journal = journal_arg(env, j)?;
    match journal.record(entry) {
        Ok(id) => id.into_lisp(env),
        Err(e) => fail(env, e),
    }
}

/// Return the entries of JOURNAL, newest first, as a list of plists without their hunks.
///
/// Each is (:id N :time SECONDS :kind KIND :agent A :session S :turn T :file F :command C :how H
/// :detail D :accepted N :rejected N :sensitive BOOL :added N :removed N :hunks N :reverts IDS),
/// KIND one of `edit', `revert', `command'.
#[defun]
fn journal_entries<'e>(env: &'e Env, j: Value<'e>) -> Result<Value<'e>> {
    let journal = journal_arg(env, j)?;
    let k = |name: &str| env.intern(name);
    let keys = [
        k(":id")?,
        k(":time")?,
        k(":kind")?,
        k(":agent")?,
        k(":session")?,
        k(":turn")?,
        k(":file")?,
        k(":command")?,
        k(":how")?,
        k(":detail")?,
        k(":accepted")?,
        k(":rejected")?,
        k(":sensitive")?,
        k(":added")?,
        k(":removed")?,
        k(":hunks")?,
        k(":reverts")?,
    ];
    let kinds = [k("edit")?, k("revert")?, k("command")?];
    let nil = ().into_lisp(env)?;
    let t = k("t")?;
    let mut out = nil;
    for e in journal.entries() {
        let kind = match e.kind {
            journal::Kind::Edit => kinds[0],
            journal::Kind::Revert => kinds[1],
            journal::Kind::Command => kinds[2],
        };
        let reverts: Vec<Value> = e.reverts.iter().map(|id| id.into_lisp(env)).collect::<Result<_>>()?;
        let values = [
            e.id.into_lisp(env)?,
            e.time.into_lisp(env)?,
            kind,
            e.agent.as_str().into_lisp(env)?,
            e.session.as_str().into_lisp(env)?,
            e.turn.as_str().into_lisp(env)?,
            e.file.as_str().into_lisp(env)?,
            e.command.as_str().into_lisp(env)?,
            e.approval.how.as_str().into_lisp(env)?,
            e.approval.detail.as_str().into_lisp(env)?,
            e.approval.accepted.into_lisp(env)?,
            e.approval.rejected.into_lisp(env)?,
            if e.sensitive { t } else { nil },
            e.added.into_lisp(env)?,
            e.removed.into_lisp(env)?,
            e.hunks.len().into_lisp(env)?,
            env.list(&reverts[..])?,
        ];
        let mut plist = Vec::with_capacity(keys.len() * 2);
        for (key, value) in keys.iter().zip(values) {
            plist.push(*key);
            plist.push(value);
        }
        // Oldest first in the journal: consing each in front makes the list newest first.
        out = env.cons(env.list(&plist[..])?, out)?;
    }
    Ok(out)
}

/// Return the number of entries JOURNAL has dropped to keep its bound.
#[defun]
fn journal_lost(env: &Env, j: Value<'_>) -> Result<u64> {
    Ok(journal_arg(env, j)?.lost())
}

/// Set the bound of JOURNAL to MAX entries, dropping the oldest beyond it.
#[defun]
fn journal_set_max(env: &Env, j: Value<'_>, max: Value<'_>) -> Result<()> {
    let max = usize::try_from(args::integer(env, max, "MAX")?).unwrap_or(1);
    journal_arg(env, j)?.set_max(max);
    Ok(())
}

/// Return entry ID of JOURNAL as a unified diff (a command as its text), or nil if none.
#[defun]
fn journal_diff<'e>(env: &'e Env, j: Value<'e>, id: Value<'e>) -> Result<Value<'e>> {
    let id = u64::try_from(args::integer(env, id, "ID")?).unwrap_or(0);
    let journal = journal_arg(env, j)?;
    match journal.get(id) {
        Some(e) => e.unified().into_lisp(env),
        None => ().into_lisp(env),
    }
}

/// Undo the entries IDS of JOURNAL in CURRENT, the text of their file as it is now.
///
/// Return (:text TEXT :undone N :conflicts CONFLICTS): TEXT is CURRENT with every hunk of the
/// entries that still applies undone (newest entry first), N the number of hunks undone, and
/// CONFLICTS a list of (ID HUNK REASON), the hunks that no longer apply and were left as they
/// are. Entries not in the journal (dropped, or commands) are ignored.
#[defun]
fn journal_revert<'e>(env: &'e Env, j: Value<'e>, ids: Value<'e>, current: Value<'e>) -> Result<Value<'e>> {
    let ids = self::ids(env, ids)?;
    let current = args::string(env, current, "CURRENT", MAX_TEXT_BYTES)?;
    let journal = journal_arg(env, j)?;
    let entries: Vec<&Entry> = ids.iter().filter_map(|&id| journal.get(id)).collect();
    let reverted = journal::revert(&current, &entries);
    drop(journal);
    let conflicts: Vec<Value> = reverted
        .conflicts
        .iter()
        .map(|c| env.list((c.id, c.hunk, c.reason.as_str())))
        .collect::<Result<_>>()?;
    env.list((
        env.intern(":text")?,
        reverted.text,
        env.intern(":undone")?,
        reverted.undone.len(),
        env.intern(":conflicts")?,
        env.list(&conflicts[..])?,
    ))
}
