//! The agents' prompt hooks: a turn begins.
//!
//! Claude Code and Codex CLI run `UserPromptSubmit` hooks, Gemini CLI `BeforeAgent` hooks,
//! when the user submits a prompt, before the model sees it; each hands the hook the session
//! (`session_id`) and the prompt (`prompt`). `agent-q-mcp hook` reads such an input into a
//! [`TurnNotice`] ([`turn_notice`]) and posts it to the MCP server's `/turn` route without
//! waiting for Emacs: the journal of changes (see [`crate::journal::Journal::begin_turn`])
//! then gives the session's later changes the new turn. The hook never blocks the prompt: it
//! prints nothing and exits 0, whatever happens.

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::{Agent, MAX_NAME_BYTES};

/// The `hook_event_name` of AGENT's prompt hook: `UserPromptSubmit` (Claude Code, Codex CLI)
/// or `BeforeAgent` (Gemini CLI).
pub fn prompt_event_name(agent: Agent) -> &'static str {
    match agent {
        Agent::Gemini => "BeforeAgent",
        Agent::Claude | Agent::Codex => "UserPromptSubmit",
    }
}

/// A turn of an agent's session begins: what the prompt hook tells Emacs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnNotice {
    /// Whose.
    pub agent: Agent,
    /// The agent's session (`session_id`).
    pub session_id: String,
    /// The turn's label: the prompt's first line, cut (see [`crate::journal::turn_label`]).
    #[serde(default)]
    pub label: String,
}

impl TurnNotice {
    /// Whether its fields are within bounds: a session of at most [`MAX_NAME_BYTES`], not
    /// empty, and a label of at most [`MAX_NAME_BYTES`].
    pub fn is_valid(&self) -> bool {
        !self.session_id.is_empty() && self.session_id.len() <= MAX_NAME_BYTES && self.label.len() <= MAX_NAME_BYTES
    }
}

/// The turn AGENT's hook input BYTES announces, when it is AGENT's prompt hook
/// ([`prompt_event_name`]) and names a session; `None` for any other input.
pub fn turn_notice(agent: Agent, bytes: &[u8]) -> Option<TurnNotice> {
    let input: Json = serde_json::from_slice(bytes).ok()?;
    let text = |name: &str| input.get(name).and_then(Json::as_str);
    if text("hook_event_name")? != prompt_event_name(agent) {
        return None;
    }
    let session_id = text("session_id")?.to_string();
    let notice = TurnNotice {
        agent,
        session_id,
        label: crate::journal::turn_label(text("prompt").unwrap_or("")),
    };
    notice.is_valid().then_some(notice)
}

/// Whether AGENT's hook input BYTES is its prompt hook's (even when it names no session).
pub fn is_prompt_hook(agent: Agent, bytes: &[u8]) -> bool {
    serde_json::from_slice::<Json>(bytes)
        .ok()
        .and_then(|input| input.get("hook_event_name").and_then(Json::as_str).map(str::to_string))
        .is_some_and(|name| name == prompt_event_name(agent))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_agents_prompt_hook_input_becomes_a_turn_notice() {
        let claude = br#"{"session_id":"c-1","transcript_path":"/t","cwd":"/p","hook_event_name":"UserPromptSubmit","prompt":"Fix the form.\nThen test."}"#;
        assert_eq!(
            turn_notice(Agent::Claude, claude),
            Some(TurnNotice {
                agent: Agent::Claude,
                session_id: "c-1".into(),
                label: "Fix the form.".into()
            })
        );
        let gemini = br#"{"session_id":"g-1","cwd":"/p","hook_event_name":"BeforeAgent","timestamp":"x","prompt":"  \n Write it"}"#;
        assert_eq!(turn_notice(Agent::Gemini, gemini).unwrap().label, "Write it");
        // Another event, another agent's event name, no session, not JSON: none.
        let tool = br#"{"session_id":"c-1","hook_event_name":"PreToolUse","tool_name":"Bash"}"#;
        assert_eq!(turn_notice(Agent::Claude, tool), None);
        assert!(!is_prompt_hook(Agent::Claude, tool));
        assert_eq!(turn_notice(Agent::Gemini, claude), None);
        assert_eq!(
            turn_notice(Agent::Claude, br#"{"hook_event_name":"UserPromptSubmit","prompt":"x"}"#),
            None
        );
        assert!(is_prompt_hook(
            Agent::Claude,
            br#"{"hook_event_name":"UserPromptSubmit","prompt":"x"}"#
        ));
        assert_eq!(turn_notice(Agent::Codex, b"not json"), None);
        let long = format!(
            r#"{{"session_id":"{}","hook_event_name":"UserPromptSubmit"}}"#,
            "s".repeat(MAX_NAME_BYTES + 1)
        );
        assert_eq!(turn_notice(Agent::Codex, long.as_bytes()), None);
    }
}
