//! Which calls wait for Emacs, for an agent's status line.
//!
//! Claude Code shows nothing of a running `PreToolUse` hook in its main view, but it shows its
//! `statusLine`: the output of a command it re-runs every `refreshInterval` seconds, given the
//! session on stdin. So the hook (`agent-q-mcp hook`) leaves a marker file, named by
//! [`marker_name`], in a directory of agent-q's while it waits for Emacs, and removes it once
//! answered; the status line command (`agent-q-mcp status-line`) says that a call waits
//! ([`STATUS_WAITING`]) while a live marker of its session is there ([`status_line`]). The
//! files and processes are the relay's; this module only names and reads.

use serde_json::Value as Json;

use super::Agent;

/// What the agent's status line says while one of its session's calls waits for Emacs.
pub const STATUS_WAITING: &str = "Waiting for Emacs (agent-q)... answer there";

/// The longest part of a marker's name taken from the session id, in bytes.
pub const MAX_SESSION_IN_NAME: usize = 100;

/// The largest status line input read, in bytes (Claude sends a small JSON object).
pub const MAX_STATUS_INPUT_BYTES: usize = 1024 * 1024;

/// The session id as it appears in a marker's name: ASCII letters, digits and `-` kept, any
/// other character `_`, at most [`MAX_SESSION_IN_NAME`] bytes.
fn session_part(session: &str) -> String {
    session
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' })
        .take(MAX_SESSION_IN_NAME)
        .collect()
}

/// The name of the marker of the hook process PID, which waits for Emacs with a call of
/// AGENT's SESSION.
pub fn marker_name(agent: Agent, session: &str, pid: u32) -> String {
    format!("{}-{}-{pid}", agent.name(), session_part(session))
}

/// The hook process of the marker NAME when it is one of AGENT's SESSION, else `None`.
pub fn marker_pid(name: &str, agent: Agent, session: &str) -> Option<u32> {
    let prefix = format!("{}-{}-", agent.name(), session_part(session));
    let rest = name.strip_prefix(&prefix)?;
    if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    rest.parse().ok()
}

/// The session id in a status line's INPUT (the agent's JSON), or `None`.
pub fn status_session(input: &[u8]) -> Option<String> {
    if input.len() > MAX_STATUS_INPUT_BYTES {
        return None;
    }
    let json: Json = serde_json::from_slice(input).ok()?;
    let session = json.get("session_id")?.as_str()?;
    (!session.is_empty()).then(|| session.to_string())
}

/// AGENT's status line for INPUT (its JSON on stdin): [`STATUS_WAITING`] when one of MARKERS
/// (the names in the marker directory) is of its session and its hook process is alive
/// (`alive`), else empty.
pub fn status_line<'a>(
    agent: Agent,
    input: &[u8],
    markers: impl IntoIterator<Item = &'a str>,
    alive: impl Fn(u32) -> bool,
) -> &'static str {
    let Some(session) = status_session(input) else {
        return "";
    };
    let waiting = markers
        .into_iter()
        .filter_map(|name| marker_pid(name, agent, &session))
        .any(alive);
    if waiting {
        STATUS_WAITING
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marker_names_its_agent_session_and_process() {
        let name = marker_name(Agent::Claude, "3f2a1b9c-1111", 4242);
        assert_eq!(name, "claude-3f2a1b9c-1111-4242");
        assert_eq!(marker_pid(&name, Agent::Claude, "3f2a1b9c-1111"), Some(4242));
        // Another session, another agent, a session that is a prefix: not this one.
        assert_eq!(marker_pid(&name, Agent::Claude, "3f2a1b9c"), None);
        assert_eq!(marker_pid(&name, Agent::Gemini, "3f2a1b9c-1111"), None);
        assert_eq!(
            marker_pid("claude-3f2a1b9c-1111-", Agent::Claude, "3f2a1b9c-1111"),
            None
        );
        assert_eq!(
            marker_pid("claude-3f2a1b9c-1111-12x", Agent::Claude, "3f2a1b9c-1111"),
            None
        );
    }

    #[test]
    fn a_session_id_from_outside_cannot_leave_the_directory() {
        let name = marker_name(Agent::Claude, "../../etc/passwd\u{0}é", 1);
        assert_eq!(name, "claude-______etc_passwd__-1");
        assert!(!name.contains('/'));
        let long = "a".repeat(10_000);
        assert_eq!(
            marker_name(Agent::Claude, &long, 7).len(),
            "claude-".len() + MAX_SESSION_IN_NAME + 2
        );
        assert_eq!(
            marker_pid(&marker_name(Agent::Claude, &long, 7), Agent::Claude, &long),
            Some(7)
        );
    }

    #[test]
    fn the_status_line_says_a_call_waits_only_while_its_hook_lives() {
        let input = br#"{"session_id":"s-1","cwd":"/tmp","model":{"id":"x"}}"#;
        let markers = ["claude-s-1-100", "claude-s-2-200", "gemini-s-1-300"];
        assert_eq!(
            status_line(Agent::Claude, input, markers, |pid| pid == 100),
            STATUS_WAITING
        );
        // Its hook gone (killed by the agent's timeout): nothing waits.
        assert_eq!(status_line(Agent::Claude, input, markers, |_| false), "");
        // Another session's wait is not this one's.
        assert_eq!(status_line(Agent::Claude, input, ["claude-s-2-200"], |_| true), "");
        assert_eq!(status_line(Agent::Claude, input, [], |_| true), "");
        // No session, not JSON: nothing is said.
        assert_eq!(status_line(Agent::Claude, b"{}", markers, |_| true), "");
        assert_eq!(status_line(Agent::Claude, b"not json", markers, |_| true), "");
    }
}
