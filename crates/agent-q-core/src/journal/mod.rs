//! The journal of what the agents changed: one entry per change written through agent-q (a
//! file's hunks before and after, or a shell command), kept in a file of JSON lines, and the
//! reverse patch that undoes entries against a file as it is now.
//!
//! - [`Entry`] is one change; [`Entry::edit`] makes one from the file's text before and after,
//!   storing the hunks (with [`diff::CONTEXT`] lines of context), never the whole file, and no
//!   text at all for a sensitive file.
//! - [`Journal`] holds the entries in memory and appends each new one to its file as one line
//!   (mode 0600), numbering it under a lock shared by every Emacs recording into the file
//!   (`FILE.lock`, which keeps the next number); it reads the file back tolerating a torn
//!   last line, keeps at most its bound (the oldest go first, counted in [`Journal::lost`])
//!   and rewrites the file when it has grown
//!   past the bound by an eighth.
//! - [`revert`] computes the text that undoes entries, newest first, hunk by hunk, in a text as
//!   it is now: a hunk whose new side is no longer there is a [`Conflict`], never written.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::diff::{self, DiffError, LineDiff, LineTag};

pub mod list;
#[cfg(test)]
mod tests;

/// Largest line of the journal file read back, in bytes; a longer one is skipped as damaged.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// Most characters of a turn's label (the first line of its prompt).
pub const MAX_TURN_LABEL_CHARS: usize = 80;

/// How long recording waits for another Emacs that holds the journal's lock.
pub const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// The label of a turn whose prompt is PROMPT: its first line that is not blank, trimmed,
/// control characters as spaces, cut to [`MAX_TURN_LABEL_CHARS`] with an ellipsis.
pub fn turn_label(prompt: &str) -> String {
    let line = prompt.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let clean = |c: char| if c.is_control() { ' ' } else { c };
    if line.chars().count() > MAX_TURN_LABEL_CHARS {
        let mut out: String = line.chars().take(MAX_TURN_LABEL_CHARS - 1).map(clean).collect();
        out.push('…');
        out
    } else {
        line.chars().map(clean).collect()
    }
}

/// Errors of the journal.
#[derive(Debug, Error)]
pub enum JournalError {
    /// The journal file could not be read or written.
    #[error("the journal {path}: {source}")]
    Io {
        /// The journal file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// A text was too large to diff.
    #[error(transparent)]
    Diff(#[from] DiffError),
    /// An entry could not be made into JSON.
    #[error("an entry could not be encoded: {0}")]
    Encode(#[from] serde_json::Error),
}

/// How a change was approved.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    /// `rule`, `user`, `review`, or what the caller names.
    pub how: String,
    /// The rule, or other words on the approval.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
    /// Hunks accepted in a review.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub accepted: usize,
    /// Hunks rejected in a review.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rejected: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// One hunk of a change: where it is and its two sides, context included.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalHunk {
    /// First old line, 1-based, as `diff -u` numbers it.
    pub old_start: usize,
    /// Old lines covered.
    pub old_lines: usize,
    /// First new line, 1-based.
    pub new_start: usize,
    /// New lines covered.
    pub new_lines: usize,
    /// The old side, line terminators included; `None` for a sensitive file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old: Option<String>,
    /// The new side; `None` for a sensitive file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new: Option<String>,
}

/// What an entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A change to a file.
    Edit,
    /// A change that undid earlier entries.
    Revert,
    /// A shell command: what it changed on disk is not known.
    Command,
}

/// One change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// Its number, increasing through the journal's life.
    pub id: u64,
    /// Seconds since the epoch.
    pub time: f64,
    /// What it records.
    pub kind: Kind,
    /// The agent (or client) that made it.
    pub agent: String,
    /// The agent's session, when known.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub session: String,
    /// The turn in the session, when known: its number, counted by agent-q from the prompts
    /// it saw begin (see [`Journal::begin_turn`]).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub turn: String,
    /// The turn's label: the first line of its prompt.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub turn_label: String,
    /// The file changed (absolute), or the directory a command ran in.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub file: String,
    /// The command, for [`Kind::Command`].
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub command: String,
    /// How it was approved.
    pub approval: Approval,
    /// True when the file is sensitive: its hunks hold no text.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sensitive: bool,
    /// Lines added.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
    /// The hunks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hunks: Vec<JournalHunk>,
    /// The entries a revert undid.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reverts: Vec<u64>,
    /// The number of hunks, also when they are not held in memory (see [`Journal::full`]).
    #[serde(skip)]
    pub hunk_count: usize,
    /// Where the entry's line is in the journal file, once recorded or read back.
    #[serde(skip)]
    pub loc: Option<Loc>,
}

/// Where an entry's line is in the journal file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loc {
    /// Byte offset of the line.
    pub offset: u64,
    /// Its length, the newline excluded.
    pub len: usize,
}

/// An entry as read back when the journal is opened: its hunks counted, not parsed (they are
/// read from the file when needed, see [`Journal::full`]).
#[derive(Deserialize)]
struct Head {
    id: u64,
    time: f64,
    kind: Kind,
    agent: String,
    #[serde(default)]
    session: String,
    #[serde(default)]
    turn: String,
    #[serde(default)]
    turn_label: String,
    #[serde(default)]
    file: String,
    #[serde(default)]
    command: String,
    approval: Approval,
    #[serde(default)]
    sensitive: bool,
    added: usize,
    removed: usize,
    #[serde(default)]
    hunks: Vec<serde::de::IgnoredAny>,
    #[serde(default)]
    reverts: Vec<u64>,
}

impl Head {
    fn entry(self, loc: Loc) -> Entry {
        Entry {
            id: self.id,
            time: self.time,
            kind: self.kind,
            agent: self.agent,
            session: self.session,
            turn: self.turn,
            turn_label: self.turn_label,
            file: self.file,
            command: self.command,
            approval: self.approval,
            sensitive: self.sensitive,
            added: self.added,
            removed: self.removed,
            hunk_count: self.hunks.len(),
            hunks: Vec::new(),
            reverts: self.reverts,
            loc: Some(loc),
        }
    }
}

/// Who made a change and how it was approved: the fields of an [`Entry`] its caller gives.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    /// The agent.
    #[serde(default)]
    pub agent: String,
    /// The session.
    #[serde(default)]
    pub session: String,
    /// The turn (its number).
    #[serde(default)]
    pub turn: String,
    /// The turn's label.
    #[serde(default)]
    pub turn_label: String,
    /// The file, or a command's directory.
    #[serde(default)]
    pub file: String,
    /// The command, for a command.
    #[serde(default)]
    pub command: String,
    /// The approval.
    #[serde(default)]
    pub approval: Approval,
    /// The entries a revert undid (a revert when not empty).
    #[serde(default)]
    pub reverts: Vec<u64>,
    /// Seconds since the epoch.
    #[serde(default)]
    pub time: f64,
}

impl Entry {
    /// The entry of a change from OLD to NEW: its hunks, with no text when SENSITIVE. `None`
    /// when the texts are the same.
    pub fn edit(meta: Meta, old: &str, new: &str, sensitive: bool) -> Result<Option<Entry>, JournalError> {
        let diff = LineDiff::within(old, new, diff::SESSION_LINE_DIFF_TIME)?;
        if diff.is_empty() {
            return Ok(None);
        }
        let (old_starts, new_starts) = (diff.old_line_starts(), diff.new_line_starts());
        let (mut added, mut removed) = (0, 0);
        let mut hunks = Vec::with_capacity(diff.len());
        for index in 0..diff.len() {
            let Some(layout) = diff.layout(index, None) else {
                continue;
            };
            for line in &layout.lines {
                match line.tag {
                    LineTag::Added => added += 1,
                    LineTag::Removed => removed += 1,
                    _ => {}
                }
            }
            let side = |text: &str, starts: &[usize], range: &std::ops::Range<usize>| {
                (!sensitive).then(|| text[starts[range.start]..starts[range.end]].to_string())
            };
            let s = &layout.summary;
            hunks.push(JournalHunk {
                old_start: s.old_start,
                old_lines: s.old_lines,
                new_start: s.new_start,
                new_lines: s.new_lines,
                old: side(old, old_starts, &layout.old_range),
                new: side(new, new_starts, &layout.new_range),
            });
        }
        let hunk_count = hunks.len();
        let kind = if meta.reverts.is_empty() {
            Kind::Edit
        } else {
            Kind::Revert
        };
        Ok(Some(Entry {
            id: 0,
            time: meta.time,
            kind,
            agent: meta.agent,
            session: meta.session,
            turn: meta.turn,
            turn_label: meta.turn_label,
            file: meta.file,
            command: String::new(),
            approval: meta.approval,
            sensitive,
            added,
            removed,
            hunks,
            reverts: meta.reverts,
            hunk_count,
            loc: None,
        }))
    }

    /// The entry of a shell command (what it changed on disk is not known).
    pub fn command(meta: Meta) -> Entry {
        Entry {
            id: 0,
            time: meta.time,
            kind: Kind::Command,
            agent: meta.agent,
            session: meta.session,
            turn: meta.turn,
            turn_label: meta.turn_label,
            file: meta.file,
            command: meta.command,
            approval: meta.approval,
            sensitive: false,
            added: 0,
            removed: 0,
            hunks: Vec::new(),
            reverts: Vec::new(),
            hunk_count: 0,
            loc: None,
        }
    }

    /// The entry as a unified diff (hunks without text say so).
    pub fn unified(&self) -> String {
        let mut out = String::new();
        if self.kind == Kind::Command {
            out.push_str(&format!(
                "$ {}\n(what the command changed on disk is not known)\n",
                self.command
            ));
            return out;
        }
        out.push_str(&format!("--- {}\n+++ {}\n", self.file, self.file));
        for h in &self.hunks {
            out.push_str(&format!(
                "@@ -{},{} +{},{} @@\n",
                h.old_start, h.old_lines, h.new_start, h.new_lines
            ));
            let (Some(old), Some(new)) = (&h.old, &h.new) else {
                out.push_str("(a sensitive file: its text is not recorded)\n");
                continue;
            };
            for line in diff_lines(old, new) {
                out.push_str(&line);
            }
        }
        out
    }
}

/// The lines of a hunk's two sides as unified-diff lines, each ending in a newline.
fn diff_lines(old: &str, new: &str) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(diff) = LineDiff::new(old, new) else {
        return out;
    };
    if diff.is_empty() {
        return out;
    }
    // The sides are one hunk; a diff within them may split it when context is long.
    let text = diff.unified("", "");
    for line in text.split_inclusive('\n').skip(2) {
        if line.starts_with("@@") {
            continue;
        }
        out.push(if line.ends_with('\n') {
            line.to_string()
        } else {
            format!("{line}\n")
        });
    }
    out
}

/// The entries of a journal file, and the file.
///
/// The entries are held without their hunks (each knows where its line is in the file): the
/// journal opens by reading only what the list shows, and [`Journal::full`] reads an entry's
/// hunks when a diff or an undo needs them.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    max: usize,
    entries: Vec<Entry>,
    /// Entries dropped to keep the bound, over the journal's life.
    lost: u64,
    /// Lines in the file now (entries and the header).
    file_lines: usize,
    next_id: u64,
    /// The turn each (agent, session) is in now: its number and label.
    turns: HashMap<(String, String), (u64, String)>,
}

/// The first line of a rewritten journal: how many entries were dropped before it.
#[derive(Debug, Serialize, Deserialize)]
struct Header {
    lost: u64,
    next_id: u64,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> JournalError + '_ {
    move |source| JournalError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// True when LINE is the line of entry ID: entries are written with their id first.
fn line_is(line: &[u8], id: u64) -> bool {
    line.starts_with(format!("{{\"id\":{id},").as_bytes())
}

impl Journal {
    /// The journal at PATH holding at most MAX entries (at least 1): the file read back (none
    /// is an empty journal), skipping a line that is not an entry (a torn last line).
    pub fn open(path: impl Into<PathBuf>, max: usize) -> Result<Journal, JournalError> {
        let path = path.into();
        let max = max.max(1);
        let mut journal = Journal {
            path,
            max,
            entries: Vec::new(),
            lost: 0,
            file_lines: 0,
            next_id: 1,
            turns: HashMap::new(),
        };
        let file = match File::open(&journal.path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(journal),
            Err(e) => return Err(io(&journal.path)(e)),
        };
        let mut reader = BufReader::with_capacity(1 << 16, file);
        let mut line = Vec::new();
        let mut offset: u64 = 0;
        loop {
            line.clear();
            let n = reader
                .by_ref()
                .take(MAX_LINE_BYTES as u64 + 1)
                .read_until(b'\n', &mut line)
                .map_err(io(&journal.path))?;
            if n == 0 {
                break;
            }
            let start = offset;
            offset += n as u64;
            journal.file_lines += 1;
            if n > MAX_LINE_BYTES {
                // Skip the rest of an overlong line.
                let mut rest = Vec::new();
                while !rest.ends_with(b"\n") {
                    rest.clear();
                    let m = reader
                        .by_ref()
                        .take(1 << 20)
                        .read_until(b'\n', &mut rest)
                        .map_err(io(&journal.path))?;
                    if m == 0 {
                        break;
                    }
                    offset += m as u64;
                }
                continue;
            }
            let body = line.strip_suffix(b"\n").unwrap_or(&line);
            if let Ok(head) = serde_json::from_slice::<Head>(body) {
                journal.next_id = journal.next_id.max(head.id + 1);
                let loc = Loc {
                    offset: start,
                    len: body.len(),
                };
                journal.entries.push(head.entry(loc));
            } else if let Ok(header) = serde_json::from_slice::<Header>(body) {
                journal.lost += header.lost;
                journal.next_id = journal.next_id.max(header.next_id);
            }
        }
        journal.trim();
        journal.seed_turns();
        Ok(journal)
    }

    /// The turns the entries read back are in: each session's newest turn.
    fn seed_turns(&mut self) {
        for e in &self.entries {
            let Ok(number) = e.turn.parse::<u64>() else {
                continue;
            };
            let key = (e.agent.clone(), e.session.clone());
            let newer = self.turns.get(&key).is_none_or(|(n, _)| number >= *n);
            if newer {
                self.turns.insert(key, (number, e.turn_label.clone()));
            }
        }
    }

    /// A new turn of AGENT's SESSION begins, its prompt's label LABEL (see [`turn_label`]):
    /// the entries recorded for that session from now on carry it. Return its number, one
    /// more than the session's turn before (1 for the first one agent-q sees).
    pub fn begin_turn(&mut self, agent: &str, session: &str, label: &str) -> u64 {
        let key = (agent.to_string(), session.to_string());
        let number = self.turns.get(&key).map_or(1, |(n, _)| n.saturating_add(1));
        self.turns.insert(key, (number, label.to_string()));
        number
    }

    /// The turn AGENT's SESSION is in now, as (number, label), if one began.
    pub fn current_turn(&self, agent: &str, session: &str) -> Option<(u64, &str)> {
        self.turns
            .get(&(agent.to_string(), session.to_string()))
            .map(|(n, label)| (*n, label.as_str()))
    }

    /// Drop the oldest entries beyond the bound.
    fn trim(&mut self) {
        if self.entries.len() > self.max {
            let drop = self.entries.len() - self.max;
            self.entries.drain(..drop);
            self.lost += drop as u64;
        }
    }

    /// The entries, oldest first, without their hunks (see [`Journal::full`]).
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The entry numbered ID, without its hunks.
    pub fn get(&self, id: u64) -> Option<&Entry> {
        self.entries
            .binary_search_by_key(&id, |e| e.id)
            .ok()
            .map(|i| &self.entries[i])
    }

    /// The entry numbered ID with its hunks, read from the file; `None` when the journal has
    /// no such entry (or its line is gone from the file).
    pub fn full(&self, id: u64) -> Result<Option<Entry>, JournalError> {
        let Some(head) = self.get(id) else {
            return Ok(None);
        };
        if let Some(line) = self.line(head)? {
            if let Ok(mut entry) = serde_json::from_slice::<Entry>(&line) {
                entry.hunk_count = entry.hunks.len();
                entry.loc = head.loc;
                return Ok(Some(entry));
            }
        }
        Ok(None)
    }

    /// The line of HEAD in the file: where it was, else (the file was rewritten by another
    /// Emacs) found by its number.
    fn line(&self, head: &Entry) -> Result<Option<Vec<u8>>, JournalError> {
        use std::os::unix::fs::FileExt;
        let file = match File::open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io(&self.path)(e)),
        };
        if let Some(loc) = head.loc {
            let mut buf = vec![0; loc.len];
            if file.read_exact_at(&mut buf, loc.offset).is_ok() && line_is(&buf, head.id) {
                return Ok(Some(buf));
            }
        }
        let mut reader = BufReader::new(file);
        let mut line = Vec::new();
        loop {
            line.clear();
            let n = reader
                .by_ref()
                .take(MAX_LINE_BYTES as u64 + 1)
                .read_until(b'\n', &mut line)
                .map_err(io(&self.path))?;
            if n == 0 || n > MAX_LINE_BYTES {
                return Ok(None);
            }
            if line_is(&line, head.id) {
                if line.ends_with(b"\n") {
                    line.pop();
                }
                return Ok(Some(line));
            }
        }
    }

    /// Entries dropped to keep the bound.
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Set the bound to MAX (at least 1), dropping the oldest entries beyond it.
    pub fn set_max(&mut self, max: usize) {
        self.max = max.max(1);
        self.trim();
    }

    /// Record ENTRY: number it, append it to the file, keep the bound. Return its number.
    /// Its hunks are not kept in memory (see [`Journal::full`]).
    ///
    /// An entry of a session that names no turn is given the turn the session is in (see
    /// [`Journal::begin_turn`]). Its number is unique in the file also when other Emacsen
    /// record into it: under the file's lock, it is past the last number in the file.
    pub fn record(&mut self, mut entry: Entry) -> Result<u64, JournalError> {
        if entry.turn.is_empty() && !entry.session.is_empty() {
            if let Some((number, label)) = self.current_turn(&entry.agent, &entry.session) {
                entry.turn = number.to_string();
                entry.turn_label = label.to_string();
            }
        }
        let lock = self.lock()?;
        let lock_path = self.path.with_extension("lock");
        // The next number is kept in the lock file; read from the journal's end only when it
        // is not (a journal of an older agent-q) or the journal ends in a torn line, whose
        // number is not given again.
        let stored = stored_next(&lock);
        let known = if stored.is_none() || ends_torn(&self.path).map_err(io(&self.path))? {
            last_id(&self.path)
                .map_err(io(&self.path))?
                .map(|last| last.saturating_add(1))
        } else {
            None
        };
        self.next_id = self.next_id.max(stored.unwrap_or(1)).max(known.unwrap_or(1));
        entry.id = self.next_id;
        let mut line = serde_json::to_vec(&entry)?;
        let len = line.len();
        line.push(b'\n');
        let offset = self.append(&line)?;
        store_next(&lock, self.next_id.saturating_add(1)).map_err(io(&lock_path))?;
        drop(lock);
        self.next_id += 1;
        self.file_lines += 1;
        entry.hunk_count = entry.hunks.len();
        entry.hunks = Vec::new();
        entry.loc = Some(Loc { offset, len });
        self.entries.push(entry);
        self.trim();
        if self.file_lines > self.max + self.max / 8 + 1 {
            self.rewrite()?;
        }
        Ok(self.next_id - 1)
    }

    /// The journal's lock, held while it is appended to or rewritten, so that two Emacsen
    /// recording into one file number their entries apart: an exclusive `flock` of the file
    /// beside it, `PATH.lock`, waited for at most [`LOCK_WAIT`].
    fn lock(&self) -> Result<File, JournalError> {
        use std::os::fd::AsRawFd;
        let path = self.path.with_extension("lock");
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(io(&path))?;
        }
        let file = Self::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io(&path))?;
        let start = std::time::Instant::now();
        loop {
            // SAFETY: flock on a descriptor this function owns; it is released when FILE closes.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                return Ok(file);
            }
            let error = std::io::Error::last_os_error();
            if error.kind() != std::io::ErrorKind::WouldBlock && error.raw_os_error() != Some(libc::EINTR) {
                return Err(io(&path)(error));
            }
            if start.elapsed() >= LOCK_WAIT {
                return Err(io(&path)(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("another process held the lock for {} s", LOCK_WAIT.as_secs()),
                )));
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }

    fn options() -> OpenOptions {
        let mut options = OpenOptions::new();
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
        options
    }

    /// Append LINE to the file; return the offset it starts at.
    fn append(&self, line: &[u8]) -> Result<u64, JournalError> {
        if let Some(dir) = self.path.parent() {
            fs::create_dir_all(dir).map_err(io(&self.path))?;
        }
        let mut file = Self::options()
            .append(true)
            .create(true)
            .open(&self.path)
            .map_err(io(&self.path))?;
        let size = file.metadata().map_err(io(&self.path))?.len();
        // The file may have been appended to by another Emacs: whether it ends in a torn line
        // is read from it.
        let torn = size > 0 && ends_torn(&self.path).map_err(io(&self.path))?;
        // One write of the whole line: a crash tears at most this last line.
        if torn {
            let mut whole = Vec::with_capacity(line.len() + 1);
            whole.push(b'\n');
            whole.extend_from_slice(line);
            file.write_all(&whole).map_err(io(&self.path))?;
            return Ok(size + 1);
        }
        file.write_all(line).map_err(io(&self.path))?;
        Ok(size)
    }

    /// Write the file anew with the entries kept, after a header counting those lost. An
    /// entry whose line cannot be found in the file any more is dropped (and counted lost).
    ///
    /// Under the file's lock the entries are first read again from the file, so that those
    /// another Emacs appended are kept too.
    pub fn rewrite(&mut self) -> Result<(), JournalError> {
        let lock = self.lock()?;
        let fresh = Journal::open(&self.path, self.max)?;
        self.entries = fresh.entries;
        self.lost = self.lost.max(fresh.lost);
        self.next_id = self.next_id.max(fresh.next_id).max(stored_next(&lock).unwrap_or(1));
        let temp = self.path.with_extension("tmp");
        let _ = fs::remove_file(&temp);
        let whole = match fs::read(&self.path) {
            Ok(whole) => whole,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io(&self.path)(e)),
        };
        let mut lines = Vec::with_capacity(self.entries.len());
        let mut missing = 0;
        for entry in &self.entries {
            let here = entry.loc.and_then(|loc| {
                let start = usize::try_from(loc.offset).ok()?;
                let line = whole.get(start..start.checked_add(loc.len)?)?;
                line_is(line, entry.id).then(|| line.to_vec())
            });
            match here.map_or_else(|| self.line(entry), |line| Ok(Some(line)))? {
                Some(line) => lines.push(Some(line)),
                None => {
                    lines.push(None);
                    missing += 1;
                }
            }
        }
        drop(whole);
        let mut out = Vec::new();
        serde_json::to_writer(
            &mut out,
            &Header {
                lost: self.lost + missing,
                next_id: self.next_id,
            },
        )?;
        out.push(b'\n');
        let mut kept = Vec::with_capacity(self.entries.len());
        for (mut entry, line) in std::mem::take(&mut self.entries).into_iter().zip(lines) {
            let Some(line) = line else { continue };
            entry.loc = Some(Loc {
                offset: out.len() as u64,
                len: line.len(),
            });
            out.extend_from_slice(&line);
            out.push(b'\n');
            kept.push(entry);
        }
        self.entries = kept;
        self.lost += missing;
        let mut file = Self::options()
            .write(true)
            .create_new(true)
            .open(&temp)
            .map_err(io(&temp))?;
        file.write_all(&out).map_err(io(&temp))?;
        file.sync_all().map_err(io(&temp))?;
        fs::rename(&temp, &self.path).map_err(io(&self.path))?;
        store_next(&lock, self.next_id).map_err(io(&self.path.with_extension("lock")))?;
        self.file_lines = self.entries.len() + 1;
        Ok(())
    }
}

/// The next entry number kept in the journal's LOCK file, if it holds one.
fn stored_next(lock: &File) -> Option<u64> {
    use std::os::unix::fs::FileExt;
    let mut buf = [0u8; 32];
    let n = lock.read_at(&mut buf, 0).ok()?;
    std::str::from_utf8(&buf[..n]).ok()?.trim().parse().ok()
}

/// Keep NEXT, the next entry number, in the journal's LOCK file.
fn store_next(lock: &File, next: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let text = format!("{next}\n");
    lock.set_len(0)?;
    lock.write_all_at(text.as_bytes(), 0)
}

/// Whether the file at PATH ends in a line without its newline (torn by a crash); false when
/// it is missing or empty.
fn ends_torn(path: &Path) -> std::io::Result<bool> {
    use std::os::unix::fs::FileExt;
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    let size = file.metadata()?.len();
    if size == 0 {
        return Ok(false);
    }
    let mut last = [0u8; 1];
    file.read_exact_at(&mut last, size - 1)?;
    Ok(last[0] != b'\n')
}

/// The number of the last entry in the journal file at PATH (or the next number its header
/// gives, less one), read from its last two lines: `None` when the file is missing or holds
/// neither. The last line may be torn; the one before it is whole.
fn last_id(path: &Path) -> std::io::Result<Option<u64>> {
    use std::os::unix::fs::FileExt;
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let size = file.metadata()?.len();
    const CHUNK: u64 = 64 * 1024;
    // Read back from the end until two line starts are found (or the file's start).
    let mut tail: Vec<u8> = Vec::new();
    let mut start = size;
    let enough = |tail: &[u8]| {
        let body = tail.strip_suffix(b"\n").unwrap_or(tail);
        memchr::memchr_iter(b'\n', body).count() >= 2
    };
    while start > 0 && !enough(&tail) && (size - start) < MAX_LINE_BYTES as u64 * 2 {
        let from = start.saturating_sub(CHUNK);
        let mut chunk = vec![0; usize::try_from(start - from).unwrap_or(0)];
        file.read_exact_at(&mut chunk, from)?;
        chunk.extend_from_slice(&tail);
        tail = chunk;
        start = from;
    }
    let body = tail.strip_suffix(b"\n").unwrap_or(&tail);
    let mut best: Option<u64> = None;
    for line in body.rsplit(|b| *b == b'\n').take(2) {
        let id = if let Some(rest) = line.strip_prefix(b"{\"id\":") {
            let digits: Vec<u8> = rest.iter().copied().take_while(u8::is_ascii_digit).collect();
            std::str::from_utf8(&digits).ok().and_then(|d| d.parse::<u64>().ok())
        } else if line.starts_with(b"{\"lost\":") {
            serde_json::from_slice::<Header>(line)
                .ok()
                .map(|h| h.next_id.saturating_sub(1))
        } else {
            None
        };
        best = best.max(id);
    }
    Ok(best)
}

/// A hunk of an entry that no longer applies to the text as it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The entry.
    pub id: u64,
    /// The hunk's 0-based position in the entry.
    pub hunk: usize,
    /// Why it does not apply.
    pub reason: String,
}

/// What undoing entries in a text gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reverted {
    /// The text with every hunk that applies undone.
    pub text: String,
    /// Hunks undone, as (entry, hunk).
    pub undone: Vec<(u64, usize)>,
    /// Hunks that do not apply.
    pub conflicts: Vec<Conflict>,
}

/// Byte offset of the start of 1-based line LINE of TEXT (its end when it has fewer lines).
fn line_offset(text: &str, line: usize) -> usize {
    if line <= 1 {
        return 0;
    }
    memchr::memchr_iter(b'\n', text.as_bytes())
        .nth(line - 2)
        .map_or(text.len(), |i| i + 1)
}

/// Undo ENTRIES in CURRENT, newest (highest id) first and each entry's hunks last first: each
/// hunk's new side, found whole at a line start nearest where it was written, is replaced by its
/// old side. A hunk whose new side is not there (changed since, or a sensitive file's hunk with
/// no text) is a conflict and left as it is.
pub fn revert(current: &str, entries: &[&Entry]) -> Reverted {
    let mut sorted: Vec<&Entry> = entries.to_vec();
    sorted.sort_by_key(|e| std::cmp::Reverse(e.id));
    let mut text = current.to_string();
    let mut undone = Vec::new();
    let mut conflicts = Vec::new();
    for entry in sorted {
        for (index, hunk) in entry.hunks.iter().enumerate().rev() {
            let conflict = |reason: &str| Conflict {
                id: entry.id,
                hunk: index,
                reason: reason.to_string(),
            };
            let (Some(old), Some(new)) = (&hunk.old, &hunk.new) else {
                conflicts.push(conflict("the file is sensitive: its text was not recorded"));
                continue;
            };
            let at = if new.is_empty() {
                // Only an emptied file has an empty new side.
                text.is_empty().then_some(0)
            } else {
                let expected = line_offset(&text, hunk.new_start.max(1));
                text.match_indices(new.as_str())
                    .map(|(i, _)| i)
                    .filter(|&i| i == 0 || text.as_bytes()[i - 1] == b'\n')
                    .min_by_key(|&i| i.abs_diff(expected))
            };
            match at {
                Some(at) => {
                    text.replace_range(at..at + new.len(), old);
                    undone.push((entry.id, index));
                }
                None => conflicts.push(conflict("the lines it wrote have changed since")),
            }
        }
    }
    Reverted {
        text,
        undone,
        conflicts,
    }
}
