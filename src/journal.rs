//! `agent-q--core-journal-*`: the [`agent_q_core::journal`] core for Emacs.
//!
//! A journal is an opaque object holding the entries in memory; every entry recorded through it
//! is appended to its file at once. Errors signal `agent-q-error` with the core's message.

use emacs::{defun, Env, IntoLisp, Result, Value};

use super::args::{self, MAX_NAME_BYTES, MAX_TEXT_BYTES};
use super::errors::{self, Kind};
use agent_q_core::journal::list::{self, Filter};
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
    let (accepted, rejected) = (
        plist_count(env, plist, ":accepted")?,
        plist_count(env, plist, ":rejected")?,
    );
    let (mut agent, mut session) = (
        plist_string(env, plist, ":agent")?,
        plist_string(env, plist, ":session")?,
    );
    let channel = plist_string(env, plist, ":channel")?;
    let client = plist_string(env, plist, ":client")?;
    if agent.is_empty() && !(channel.is_empty() && client.is_empty()) {
        let (a, s) = list::who(&channel, &client);
        agent = a;
        if session.is_empty() {
            session = s;
        }
    }
    let how = plist_string(env, plist, ":how")?;
    let decision = plist_string(env, plist, ":decision")?;
    let approval = if how.is_empty() && !decision.is_empty() {
        list::approval_of_call(&decision, &plist_string(env, plist, ":rule")?, accepted, rejected)
    } else {
        Approval {
            how,
            detail: plist_string(env, plist, ":detail")?,
            accepted,
            rejected,
        }
    };
    Ok(Meta {
        agent,
        session,
        turn: plist_string(env, plist, ":turn")?,
        turn_label: plist_string(env, plist, ":turn-label")?,
        file: plist_string(env, plist, ":file")?,
        command: plist_string(env, plist, ":command")?,
        approval,
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
/// META is a plist: :agent, :session, :turn (when absent, the turn the session is in: see
/// `agent-q--core-journal-begin-turn'), :file (absolute), :command, :how (`rule', `user',
/// `review'... as a string), :detail, :accepted and :rejected (hunks), :reverts (the numbers of
/// the entries a revert undid), :time (seconds since the epoch; now when absent). Instead of
/// :agent, :session and :how it may give the call's :channel, :client, :decision and :rule (as in
/// `agent-q-call-context'): the core names the agent, the session and the approval from them. When SENSITIVE
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

/// The plist of entry E (see `agent-q--core-journal-entries').
fn entry_plist<'e>(env: &'e Env, e: &Entry) -> Result<Value<'e>> {
    let k = |name: &str| env.intern(name);
    let nil = ().into_lisp(env)?;
    let kind = k(match e.kind {
        journal::Kind::Edit => "edit",
        journal::Kind::Revert => "revert",
        journal::Kind::Command => "command",
    })?;
    let reverts: Vec<Value> = e.reverts.iter().map(|id| id.into_lisp(env)).collect::<Result<_>>()?;
    let plist = [
        k(":id")?,
        e.id.into_lisp(env)?,
        k(":time")?,
        e.time.into_lisp(env)?,
        k(":kind")?,
        kind,
        k(":agent")?,
        e.agent.as_str().into_lisp(env)?,
        k(":session")?,
        e.session.as_str().into_lisp(env)?,
        k(":turn")?,
        e.turn.as_str().into_lisp(env)?,
        k(":turn-label")?,
        e.turn_label.as_str().into_lisp(env)?,
        k(":file")?,
        e.file.as_str().into_lisp(env)?,
        k(":command")?,
        e.command.as_str().into_lisp(env)?,
        k(":how")?,
        e.approval.how.as_str().into_lisp(env)?,
        k(":detail")?,
        e.approval.detail.as_str().into_lisp(env)?,
        k(":accepted")?,
        e.approval.accepted.into_lisp(env)?,
        k(":rejected")?,
        e.approval.rejected.into_lisp(env)?,
        k(":sensitive")?,
        if e.sensitive { k("t")? } else { nil },
        k(":added")?,
        e.added.into_lisp(env)?,
        k(":removed")?,
        e.removed.into_lisp(env)?,
        k(":hunks")?,
        e.hunk_count.into_lisp(env)?,
        k(":reverts")?,
        env.list(&reverts[..])?,
    ];
    env.list(&plist[..])
}

/// Begin a new turn in JOURNAL of the session META names, whose prompt is PROMPT; return its
/// number.
///
/// META is a plist as `agent-q--core-journal-record' takes it: :agent and :session, or the
/// :channel and :client of the session's calls, from which the core names them. The turn's
/// label is PROMPT's first line that is not blank, cut. The entries recorded for that session
/// from now on carry the turn. Return nil when META names no session.
#[defun]
fn journal_begin_turn<'e>(env: &'e Env, j: Value<'e>, meta: Value<'e>, prompt: Value<'e>) -> Result<Value<'e>> {
    let meta = self::meta(env, meta)?;
    let prompt = if prompt.is_not_nil() {
        args::string(env, prompt, "PROMPT", MAX_TEXT_BYTES)?
    } else {
        String::new()
    };
    if meta.session.is_empty() {
        return ().into_lisp(env);
    }
    let label = journal::turn_label(&prompt);
    let mut journal = journal_arg(env, j)?;
    journal.begin_turn(&meta.agent, &meta.session, &label).into_lisp(env)
}

/// Return the entries of JOURNAL, newest first, as a list of plists without their hunks.
///
/// Each is (:id N :time SECONDS :kind KIND :agent A :session S :turn T :turn-label L :file F
/// :command C :how H
/// :detail D :accepted N :rejected N :sensitive BOOL :added N :removed N :hunks N :reverts IDS),
/// KIND one of `edit', `revert', `command'.
#[defun]
fn journal_entries<'e>(env: &'e Env, j: Value<'e>) -> Result<Value<'e>> {
    let journal = journal_arg(env, j)?;
    let mut out = ().into_lisp(env)?;
    for e in journal.entries() {
        // Oldest first in the journal: consing each in front makes the list newest first.
        out = env.cons(entry_plist(env, e)?, out)?;
    }
    Ok(out)
}

/// Return entry ID of JOURNAL as a plist (see `agent-q--core-journal-entries'), or nil.
#[defun]
fn journal_entry<'e>(env: &'e Env, j: Value<'e>, id: Value<'e>) -> Result<Value<'e>> {
    let id = u64::try_from(args::integer(env, id, "ID")?).unwrap_or(0);
    let journal = journal_arg(env, j)?;
    match journal.get(id) {
        Some(e) => entry_plist(env, e),
        None => ().into_lisp(env),
    }
}

/// The filter of the plist FILTER: :agent, :session, :turn, :file, :id (nil: any).
fn filter(env: &Env, plist: Value<'_>) -> Result<Filter> {
    let field = |key: &str| -> Result<Option<String>> {
        let v = env.call("plist-get", (plist, env.intern(key)?))?;
        if v.is_not_nil() {
            Ok(Some(args::string(env, v, key, MAX_NAME_BYTES)?))
        } else {
            Ok(None)
        }
    };
    let id = env.call("plist-get", (plist, env.intern(":id")?))?;
    Ok(Filter {
        agent: field(":agent")?,
        session: field(":session")?,
        turn: field(":turn")?,
        file: field(":file")?,
        id: if id.is_not_nil() {
            Some(u64::try_from(args::integer(env, id, ":id")?).unwrap_or(0))
        } else {
            None
        },
    })
}

/// Return the rows of `agent-q-changes' for JOURNAL: (TEXT . IDS).
///
/// The entries FILTER shows (a plist of :agent, :session, :turn, :file, :id; nil shows all),
/// newest first, grouped by agent session and, within it, by turn. TEXT has a line per entry,
/// its columns (time, agent, session, turn (number and label), file or command, +/-, how)
/// padded to WIDTHS, a list of the first six widths, one space apart; a file under HOME is
/// written with `~'. IDS is a vector of the entry of each line.
#[defun]
fn journal_rows<'e>(
    env: &'e Env,
    j: Value<'e>,
    filter: Value<'e>,
    widths: Value<'e>,
    home: Value<'e>,
) -> Result<Value<'e>> {
    let filter = self::filter(env, filter)?;
    let length = env.call("proper-list-p", [widths])?;
    if !length.is_not_nil() || length.into_rust::<i64>()? < 6 {
        return errors::signal(env, Kind::Generic, "WIDTHS must be a list of six widths");
    }
    let mut w = [0usize; 6];
    let mut rest = widths;
    for slot in &mut w {
        let width = args::integer(env, rest.car()?, "A width")?;
        *slot = usize::try_from(width).unwrap_or(0).min(1000);
        rest = rest.cdr()?;
    }
    let home = args::string(env, home, "HOME", MAX_NAME_BYTES)?;
    let journal = journal_arg(env, j)?;
    let rows = list::rows(&list::ordered(journal.entries(), &filter), &w, &home);
    drop(journal);
    let ids = rows
        .ids
        .iter()
        .map(|id| id.into_lisp(env))
        .collect::<Result<Vec<_>>>()?;
    env.cons(rows.text, env.vector(&ids)?)
}

/// Return the file changes of JOURNAL that FILTER shows (see `agent-q--core-journal-rows'),
/// as an undo takes them: a list of (FILE ID...), newest file first, each file's entries
/// newest first. Commands are left out: what they changed is not known.
#[defun]
fn journal_select<'e>(env: &'e Env, j: Value<'e>, filter: Value<'e>) -> Result<Value<'e>> {
    let filter = self::filter(env, filter)?;
    let journal = journal_arg(env, j)?;
    let chosen = list::select(journal.entries(), &filter);
    drop(journal);
    let mut out = Vec::with_capacity(chosen.len());
    for (file, ids) in chosen {
        let mut items = vec![file.into_lisp(env)?];
        for id in ids {
            items.push(id.into_lisp(env)?);
        }
        out.push(env.list(&items[..])?);
    }
    env.list(&out[..])
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
    match journal.full(id) {
        Ok(Some(e)) => e.unified().into_lisp(env),
        Ok(None) => ().into_lisp(env),
        Err(e) => {
            drop(journal);
            fail(env, e)
        }
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
    let mut full = Vec::with_capacity(ids.len());
    for &id in &ids {
        match journal.full(id) {
            Ok(Some(e)) => full.push(e),
            Ok(None) => {}
            Err(e) => {
                drop(journal);
                return fail(env, e);
            }
        }
    }
    let entries: Vec<&Entry> = full.iter().collect();
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
