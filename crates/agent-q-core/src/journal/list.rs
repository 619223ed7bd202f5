//! What `M-x agent-q-changes` shows, computed here so that a list of 10,000 entries opens at
//! once: the entries filtered, ordered newest first and grouped by agent session and turn,
//! and their rows as the text of the buffer; the entries an undo takes, file by file; and how
//! a call's decision and channel name the approval and the session.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::{Approval, Entry, Kind};

/// What the list shows: the entries whose every given field is equal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// The agent.
    pub agent: Option<String>,
    /// The session.
    pub session: Option<String>,
    /// The turn.
    pub turn: Option<String>,
    /// The file.
    pub file: Option<String>,
    /// One entry.
    pub id: Option<u64>,
}

impl Filter {
    /// True when ENTRY is shown.
    pub fn matches(&self, entry: &Entry) -> bool {
        let eq = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
        eq(&self.agent, &entry.agent)
            && eq(&self.session, &entry.session)
            && eq(&self.turn, &entry.turn)
            && eq(&self.file, &entry.file)
            && self.id.is_none_or(|id| id == entry.id)
    }
}

/// The entries FILTER shows, newest first, grouped: a session (an agent's) sits where its
/// newest entry is, and within it each turn where its newest entry is.
pub fn ordered<'a>(entries: &'a [Entry], filter: &Filter) -> Vec<&'a Entry> {
    let shown: Vec<&Entry> = entries.iter().filter(|e| filter.matches(e)).collect();
    let mut session_newest: HashMap<(&str, &str), u64> = HashMap::new();
    let mut turn_newest: HashMap<(&str, &str, &str), u64> = HashMap::new();
    for e in &shown {
        let s = session_newest
            .entry((e.agent.as_str(), e.session.as_str()))
            .or_default();
        *s = (*s).max(e.id);
        let t = turn_newest
            .entry((e.agent.as_str(), e.session.as_str(), e.turn.as_str()))
            .or_default();
        *t = (*t).max(e.id);
    }
    let mut keyed: Vec<((u64, u64, u64), &Entry)> = shown
        .into_iter()
        .map(|e| {
            let s = session_newest[&(e.agent.as_str(), e.session.as_str())];
            let t = turn_newest[&(e.agent.as_str(), e.session.as_str(), e.turn.as_str())];
            ((s, t, e.id), e)
        })
        .collect();
    keyed.sort_unstable_by_key(|k| std::cmp::Reverse(k.0));
    keyed.into_iter().map(|(_, e)| e).collect()
}

/// The entries of files FILTER shows that an undo takes, grouped by file: (FILE, IDS), the
/// files in the order of their newest entry, newest first. Commands are not undone.
pub fn select(entries: &[Entry], filter: &Filter) -> Vec<(String, Vec<u64>)> {
    let mut out: Vec<(String, Vec<u64>)> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for e in entries.iter().rev() {
        if e.kind == Kind::Command || e.file.is_empty() || !filter.matches(e) {
            continue;
        }
        let i = *index.entry(e.file.as_str()).or_insert_with(|| {
            out.push((e.file.clone(), Vec::new()));
            out.len() - 1
        });
        out[i].1.push(e.id);
    }
    out
}

/// The rows of the list, as the text of its buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rows {
    /// One line per entry, its columns padded to their widths.
    pub text: String,
    /// The entry of each line.
    pub ids: Vec<u64>,
}

/// Local times, the offset from UTC looked up once an hour of time (zones change their offset
/// on the hour or the half hour).
#[derive(Default)]
struct Clock {
    offsets: HashMap<i64, i64>,
}

impl Clock {
    /// The offset from UTC, in seconds, of local time at T.
    fn offset(&mut self, t: i64) -> i64 {
        *self.offsets.entry(t.div_euclid(1800)).or_insert_with(|| {
            let t = t as libc::time_t;
            // SAFETY: localtime_r writes only into TM, a plain C struct zeroed here.
            let mut tm: libc::tm = unsafe { std::mem::zeroed() };
            // SAFETY: both pointers are valid for the call; localtime_r is thread-safe.
            if unsafe { libc::localtime_r(&t, &mut tm) }.is_null() {
                0
            } else {
                tm.tm_gmtoff
            }
        })
    }

    /// Local time of SECONDS as `YYYY-MM-DD HH:MM:SS`.
    fn format(&mut self, seconds: f64) -> String {
        let t = seconds as i64;
        let local = t + self.offset(t);
        let (days, secs) = (local.div_euclid(86_400), local.rem_euclid(86_400));
        // Howard Hinnant's civil_from_days.
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = doy - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        let year = yoe + era * 400 + i64::from(month <= 2);
        format!(
            "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
            secs / 3600,
            secs / 60 % 60,
            secs % 60
        )
    }
}

/// TEXT in a column WIDTH characters wide: cut with an ellipsis, else padded; control
/// characters (a newline in a command) shown as spaces.
fn cell(out: &mut String, text: &str, width: Option<usize>) {
    let clean = |c: char| if c.is_control() { ' ' } else { c };
    match width {
        None => out.extend(text.chars().map(clean)),
        Some(width) => {
            let count = text.chars().count();
            if count > width {
                out.extend(text.chars().take(width.saturating_sub(1)).map(clean));
                out.push('…');
            } else {
                out.extend(text.chars().map(clean));
                out.extend(std::iter::repeat_n(' ', width - count));
            }
        }
    }
}

/// How ENTRY was approved, in the list's words.
pub fn how(entry: &Entry) -> String {
    let a = &entry.approval;
    let mut out = match entry.kind {
        Kind::Revert => format!(
            "undo of {}, ",
            entry.reverts.iter().map(u64::to_string).collect::<Vec<_>>().join(" ")
        ),
        Kind::Command => "command, ".to_string(),
        Kind::Edit => String::new(),
    };
    out.push_str(if a.how.is_empty() { "?" } else { &a.how });
    if a.accepted + a.rejected > 0 {
        let _ = write!(out, " ({} accepted, {} rejected)", a.accepted, a.rejected);
    }
    if !a.detail.is_empty() && a.how == "rule" {
        let _ = write!(out, ": {}", a.detail);
    }
    if entry.sensitive {
        out.push_str(" (sensitive: no text)");
    }
    out
}

/// How the list names ENTRY's turn: its number and label ("2 fix the login form"), or "".
pub fn turn_cell(entry: &Entry) -> String {
    match (entry.turn.is_empty(), entry.turn_label.is_empty()) {
        (true, _) => String::new(),
        (false, true) => entry.turn.clone(),
        (false, false) => format!("{} {}", entry.turn, entry.turn_label),
    }
}

/// The rows of ENTRIES (ordered already) in columns of WIDTHS (time, agent, session, turn
/// (number and label), file or command, +/-; the last column, how, takes the rest), one
/// space apart, a file under HOME written with `~`.
pub fn rows(entries: &[&Entry], widths: &[usize; 6], home: &str) -> Rows {
    let mut text = String::with_capacity(entries.len() * 128);
    let mut ids = Vec::with_capacity(entries.len());
    let home = home.trim_end_matches('/');
    let mut clock = Clock::default();
    for e in entries {
        cell(&mut text, &clock.format(e.time), Some(widths[0]));
        text.push(' ');
        cell(&mut text, &e.agent, Some(widths[1]));
        text.push(' ');
        cell(&mut text, &e.session, Some(widths[2]));
        text.push(' ');
        cell(&mut text, &turn_cell(e), Some(widths[3]));
        text.push(' ');
        let what = if e.kind == Kind::Command {
            format!("$ {}  (changes on disk unknown)", e.command)
        } else {
            match e.file.strip_prefix(home) {
                Some(rest) if !home.is_empty() && rest.starts_with('/') => format!("~{rest}"),
                _ => e.file.clone(),
            }
        };
        cell(&mut text, &what, Some(widths[4]));
        text.push(' ');
        let counts = if e.kind == Kind::Command {
            String::new()
        } else {
            format!("+{} -{}", e.added, e.removed)
        };
        cell(&mut text, &counts, Some(widths[5]));
        text.push(' ');
        cell(&mut text, &how(e), None);
        text.push('\n');
        ids.push(e.id);
    }
    Rows { text, ids }
}

/// The approval of a call the executor decided as DECISION (its `decision`: "rule", "review",
/// "approved", "modified"...), by RULE when a rule decided, with the review's ACCEPTED and
/// REJECTED hunks.
pub fn approval_of_call(decision: &str, rule: &str, accepted: usize, rejected: usize) -> Approval {
    let how = match decision {
        "approved" | "modified" => "user",
        "trusted" => "trust",
        "" => "?",
        other => other,
    };
    Approval {
        how: how.to_string(),
        detail: if how == "rule" { rule.to_string() } else { String::new() },
        accepted,
        rejected,
    }
}

/// The agent and session a call's CHANNEL names (see `executor::channel_of`): "[mcp] gate AGENT
/// SESSION" for a terminal agent's own tool, "[mcp] acp SESSION" over ACP, "mcp session ID" for
/// an MCP session; CLIENT, the call's client, names the agent otherwise.
pub fn who(channel: &str, client: &str) -> (String, String) {
    // The gate's and ACP's channels come through the MCP driver: "mcp gate claude s1".
    let channel = channel
        .strip_prefix("mcp ")
        .filter(|c| c.starts_with("gate ") || c.starts_with("acp "))
        .unwrap_or(channel);
    let mut words = channel.splitn(3, ' ');
    match (words.next(), words.next(), words.next()) {
        (Some("gate"), Some(agent), session) => (agent.to_string(), session.unwrap_or("").to_string()),
        (Some("acp"), Some(first), rest) => (
            // The client is the agent's name and then its session ("Gemini CLI (ACP) 1f3…").
            client
                .find("(ACP)")
                .map_or(client, |i| &client[..i + "(ACP)".len()])
                .to_string(),
            rest.map_or(first.to_string(), |r| format!("{first} {r}")),
        ),
        (Some("mcp"), Some("session"), Some(id)) => (client.to_string(), id.to_string()),
        _ => (client.to_string(), String::new()),
    }
}
