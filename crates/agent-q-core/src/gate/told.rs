//! What Gemini CLI's model must be told after a call Emacs changed, kept until its `AfterTool`
//! hook asks.
//!
//! Gemini CLI 0.61.0 passes a hook's `hookSpecificOutput.additionalContext` to its model only
//! from an `AfterTool` hook (appended to the tool's result as `<hook_context>…</hook_context>`);
//! its `BeforeTool` answer cannot carry it. So when the `BeforeTool` answer leaves something
//! the model must know ([`super::model_context`]: a command the user edited, an edit accepted
//! in part), the MCP server keeps those words here, keyed by what the `AfterTool` hook of the
//! same call sends ([`told_key`]: the session, the tool's name and the tool's input as it ran,
//! i.e. after the hook's rewrite); the `AfterTool` hook takes them once ([`ToldStore::take`]).
//!
//! The store is bounded: at most [`MAX_TOLD`] entries (the oldest goes first) and each for at
//! most [`TOLD_TTL`]. A `BeforeTool` answer that leaves nothing to tell removes an entry of the
//! same key, so a stale entry (a call that never reached `AfterTool`) cannot reach the result
//! of a later identical call.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use serde_json::{Map, Value as Json};
use sha2::{Digest, Sha256};

use super::{model_context, Agent, GateAnswer, GateRequest, HookEvent, ToolKind};

/// The most entries kept.
pub const MAX_TOLD: usize = 128;

/// How long an entry waits for its `AfterTool` hook: a generous bound on a tool's run.
pub const TOLD_TTL: Duration = Duration::from_secs(30 * 60);

/// The deepest tool input given a key; a deeper one has none (nothing is kept for it).
pub const MAX_KEY_DEPTH: usize = 64;

/// What identifies a call to both of its hooks: a digest of the session, the tool's name and
/// its input with every object's keys in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ToldKey([u8; 32]);

/// The key of SESSION's call of TOOL with INPUT, or `None` when INPUT is deeper than
/// [`MAX_KEY_DEPTH`].
pub fn told_key(session: &str, tool: &str, input: &Map<String, Json>) -> Option<ToldKey> {
    let mut hasher = Sha256::new();
    for part in [session, tool] {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part.as_bytes());
    }
    hash_object(&mut hasher, input, 0)?;
    Some(ToldKey(hasher.finalize().into()))
}

/// Feed OBJECT to HASHER, its keys sorted, at DEPTH; `None` when too deep.
fn hash_object(hasher: &mut Sha256, object: &Map<String, Json>, depth: usize) -> Option<()> {
    let mut keys: Vec<&String> = object.keys().collect();
    keys.sort();
    hasher.update(b"{");
    hasher.update((keys.len() as u64).to_le_bytes());
    for key in keys {
        hash_string(hasher, key);
        hash_value(hasher, &object[key.as_str()], depth + 1)?;
    }
    Some(())
}

/// Feed VALUE to HASHER at DEPTH; `None` when too deep.
fn hash_value(hasher: &mut Sha256, value: &Json, depth: usize) -> Option<()> {
    if depth > MAX_KEY_DEPTH {
        return None;
    }
    match value {
        Json::Null => hasher.update(b"n"),
        Json::Bool(b) => hasher.update(if *b { b"t" } else { b"f" }),
        Json::Number(n) => {
            hasher.update(b"#");
            hash_string(hasher, &n.to_string());
        }
        Json::String(text) => {
            hasher.update(b"s");
            hash_string(hasher, text);
        }
        Json::Array(items) => {
            hasher.update(b"[");
            hasher.update((items.len() as u64).to_le_bytes());
            for item in items {
                hash_value(hasher, item, depth + 1)?;
            }
        }
        Json::Object(object) => hash_object(hasher, object, depth)?,
    }
    Some(())
}

fn hash_string(hasher: &mut Sha256, text: &str) {
    hasher.update((text.len() as u64).to_le_bytes());
    hasher.update(text.as_bytes());
}

/// The input a call of REQUEST runs with after ANSWER, when it runs: the rewritten input of an
/// allow that carries one (Gemini CLI builds the tool from exactly that), else the input the
/// agent sent. `None` for a deny.
pub fn input_as_run<'a>(request: &'a GateRequest, answer: &'a GateAnswer) -> Option<&'a Map<String, Json>> {
    match answer {
        GateAnswer::Deny { .. } => None,
        GateAnswer::Allow {
            updated_input: Some(Json::Object(input)),
        } => Some(input),
        _ => Some(&request.tool_input),
    }
}

/// Whether a call of KIND can leave something for the model to be told ([`model_context`]).
pub fn may_tell(kind: &ToolKind) -> bool {
    matches!(
        kind,
        ToolKind::Shell { .. } | ToolKind::Edit { .. } | ToolKind::Write { .. } | ToolKind::Patch { .. }
    )
}

/// The words kept for `AfterTool` hooks, bounded. See the module's documentation.
#[derive(Debug, Default)]
pub struct ToldStore {
    /// (key, words, when kept), oldest first.
    entries: VecDeque<(ToldKey, String, Instant)>,
}

impl ToldStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many entries are kept (expired ones included until the next change).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Keep WORDS for KEY at NOW, or, with `None`, forget what KEY had. The oldest entry goes
    /// when [`MAX_TOLD`] are kept.
    pub fn put(&mut self, key: ToldKey, words: Option<String>, now: Instant) {
        self.expire(now);
        self.entries.retain(|(k, ..)| *k != key);
        if let Some(words) = words {
            if self.entries.len() >= MAX_TOLD {
                self.entries.pop_front();
            }
            self.entries.push_back((key, words, now));
        }
    }

    /// The words kept for KEY, removed, unless expired at NOW.
    pub fn take(&mut self, key: &ToldKey, now: Instant) -> Option<String> {
        self.expire(now);
        let at = self.entries.iter().position(|(k, ..)| k == key)?;
        self.entries.remove(at).map(|(_, words, _)| words)
    }

    /// After Gemini CLI's `BeforeTool` REQUEST was answered ANSWER at NOW: keep what its model
    /// must be told ([`model_context`]) for the call's `AfterTool` hook, or forget a stale
    /// entry of the same call. Other agents and events are left alone: their models are told
    /// with the answer itself.
    pub fn after_answer(&mut self, request: &GateRequest, answer: &GateAnswer, now: Instant) {
        if request.agent != Agent::Gemini || request.event != HookEvent::PreTool || !may_tell(&request.kind) {
            return;
        }
        let Some(input) = input_as_run(request, answer) else {
            return;
        };
        if let Some(key) = told_key(&request.session_id, &request.tool, input) {
            self.put(key, model_context(request, answer), now);
        }
    }

    fn expire(&mut self, now: Instant) {
        while self
            .entries
            .front()
            .is_some_and(|(_, _, at)| now.saturating_duration_since(*at) >= TOLD_TTL)
        {
            self.entries.pop_front();
        }
    }
}

/// Gemini CLI's `AfterTool` hook input, as far as the store needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct AfterToolInput {
    /// `session_id`, empty when absent.
    pub session_id: String,
    /// `tool_name`.
    pub tool: String,
    /// `tool_input`, as the tool ran.
    pub tool_input: Map<String, Json>,
}

impl AfterToolInput {
    /// The key of this call in a [`ToldStore`].
    pub fn key(&self) -> Option<ToldKey> {
        told_key(&self.session_id, &self.tool, &self.tool_input)
    }
}

/// Gemini CLI's `AfterTool` hook input from BYTES, or why not: not a JSON object, another
/// event, no tool name, a field of the wrong type, larger than
/// [`super::MAX_HOOK_INPUT_BYTES`].
pub fn parse_after_tool(bytes: &[u8]) -> Result<AfterToolInput, super::GateError> {
    use super::GateError;
    if bytes.len() > super::MAX_HOOK_INPUT_BYTES {
        return Err(GateError::TooLarge {
            limit: super::MAX_HOOK_INPUT_BYTES,
        });
    }
    let value: Json = serde_json::from_slice(bytes).map_err(|e| GateError::NotJson(e.to_string()))?;
    let Json::Object(mut input) = value else {
        return Err(GateError::NotJson(format!("it is {}", super::type_name(&value))));
    };
    if let Some(name) = super::optional_string(&input, "hook_event_name")? {
        if name != "AfterTool" {
            return Err(GateError::EventMismatch {
                expected: "AfterTool",
                got: name.chars().take(64).collect(),
            });
        }
    }
    let session_id = super::optional_string(&input, "session_id")?
        .unwrap_or_default()
        .to_string();
    let tool = super::optional_string(&input, "tool_name")?
        .ok_or(GateError::Missing { field: "tool_name" })?
        .to_string();
    super::check_len("session_id", &session_id, super::MAX_NAME_BYTES)?;
    super::check_len("tool_name", &tool, super::MAX_NAME_BYTES)?;
    let tool_input = match input.remove("tool_input") {
        None | Some(Json::Null) => Map::new(),
        Some(Json::Object(map)) => map,
        Some(other) => {
            return Err(GateError::Invalid {
                field: "tool_input",
                problem: format!("is {}, not an object", super::type_name(&other)),
            })
        }
    };
    Ok(AfterToolInput {
        session_id,
        tool,
        tool_input,
    })
}

/// Gemini CLI's `AfterTool` answer telling its model WORDS: `hookSpecificOutput.additionalContext`.
pub fn after_tool_output(words: &str) -> super::HookOutput {
    super::HookOutput::json(serde_json::json!({
        "hookSpecificOutput": {"hookEventName": "AfterTool", "additionalContext": words}
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Json) -> Map<String, Json> {
        match value {
            Json::Object(map) => map,
            _ => panic!("not an object"),
        }
    }

    fn shell(session: &str, command: &str) -> GateRequest {
        GateRequest::new(
            Agent::Gemini,
            HookEvent::PreTool,
            session.into(),
            "/w".into(),
            "run_shell_command".into(),
            None,
            object(json!({"command": command, "description": "A command"})),
        )
        .unwrap()
    }

    fn edited(command: &str) -> GateAnswer {
        GateAnswer::Allow {
            updated_input: Some(json!({"command": command, "description": "A command"})),
        }
    }

    #[test]
    fn the_key_ignores_key_order_and_tells_inputs_sessions_and_tools_apart() {
        let a = object(json!({"command": "ls", "dir_path": "/w", "x": {"b": 1, "a": [1, "2"]}}));
        let b = object(json!({"x": {"a": [1, "2"], "b": 1}, "dir_path": "/w", "command": "ls"}));
        assert_eq!(told_key("s", "t", &a), told_key("s", "t", &b));
        assert_ne!(told_key("s", "t", &a), told_key("s2", "t", &a));
        assert_ne!(told_key("s", "t", &a), told_key("s", "t2", &a));
        let c = object(json!({"command": "ls", "dir_path": "/w", "x": {"b": 1, "a": [1, 2]}}));
        assert_ne!(
            told_key("s", "t", &a),
            told_key("s", "t", &c),
            "a number is not a string"
        );
        // Lengths are part of the digest: moving text between fields changes the key.
        assert_ne!(told_key("ab", "c", &Map::new()), told_key("a", "bc", &Map::new()));
    }

    #[test]
    fn too_deep_an_input_has_no_key() {
        let mut value = json!(1);
        for _ in 0..(MAX_KEY_DEPTH + 2) {
            value = json!({ "a": value });
        }
        assert_eq!(told_key("s", "t", &object(value)), None);
        let mut shallow = json!(1);
        for _ in 0..8 {
            shallow = json!([shallow]);
        }
        assert!(told_key("s", "t", &object(json!({ "a": shallow }))).is_some());
    }

    #[test]
    fn an_edited_command_is_told_once_to_the_call_that_ran_it() {
        let mut store = ToldStore::new();
        let now = Instant::now();
        let request = shell("s1", "touch original.txt");
        store.after_answer(&request, &edited("echo ran-edited"), now);
        assert_eq!(store.len(), 1);
        let ran = object(json!({"description": "A command", "command": "echo ran-edited"}));
        let key = told_key("s1", "run_shell_command", &ran).unwrap();
        // Another session's identical call is not told.
        assert_eq!(
            store.take(&told_key("s2", "run_shell_command", &ran).unwrap(), now),
            None
        );
        // The command as the model wrote it is not what ran: no match.
        assert_eq!(
            store.take(&told_key("s1", "run_shell_command", &request.tool_input).unwrap(), now),
            None
        );
        let words = store.take(&key, now).expect("told");
        assert!(words.contains("What ran is:\necho ran-edited\nnot the command you wrote:\ntouch original.txt"));
        assert_eq!(store.take(&key, now), None, "told once");
        assert!(store.is_empty());
    }

    #[test]
    fn a_plain_allow_keeps_nothing_and_forgets_a_stale_entry() {
        let mut store = ToldStore::new();
        let now = Instant::now();
        // The edited call never reached AfterTool; the model later writes that very command.
        store.after_answer(&shell("s", "touch a"), &edited("touch b"), now);
        assert_eq!(store.len(), 1);
        store.after_answer(&shell("s", "touch b"), &GateAnswer::Allow { updated_input: None }, now);
        assert!(store.is_empty(), "the later identical call is not told the old edit");
        // A deny runs nothing: nothing kept, nothing forgotten.
        store.after_answer(&shell("s", "touch a"), &edited("touch b"), now);
        store.after_answer(&shell("s", "touch b"), &GateAnswer::Deny { reason: "no".into() }, now);
        assert_eq!(store.len(), 1);
    }

    #[test]
    fn other_agents_events_and_tools_are_left_alone() {
        let mut store = ToldStore::new();
        let now = Instant::now();
        let mut claude = shell("s", "touch a");
        claude.agent = Agent::Claude;
        store.after_answer(&claude, &edited("touch b"), now);
        let read = GateRequest::new(
            Agent::Gemini,
            HookEvent::PreTool,
            "s".into(),
            "/w".into(),
            "read_file".into(),
            None,
            object(json!({"file_path": "/w/a"})),
        )
        .unwrap();
        store.after_answer(
            &read,
            &GateAnswer::Allow {
                updated_input: Some(json!({"file_path": "/w/b"})),
            },
            now,
        );
        assert!(store.is_empty());
    }

    #[test]
    fn a_partial_edit_is_told_with_the_rejected_hunk() {
        let mut store = ToldStore::new();
        let now = Instant::now();
        let request = GateRequest::new(
            Agent::Gemini,
            HookEvent::PreTool,
            "s".into(),
            "/w".into(),
            "replace".into(),
            None,
            object(json!({"file_path": "/w/f", "old_string": "one\ntwo\n", "new_string": "ONE\nTWO\n"})),
        )
        .unwrap();
        // The gate rewrites the replace to the whole text: current → accepted.
        let written = json!({"file_path": "/w/f", "old_string": "one\ntwo\n", "new_string": "ONE\ntwo\n"});
        store.after_answer(
            &request,
            &GateAnswer::Allow {
                updated_input: Some(written.clone()),
            },
            now,
        );
        let key = told_key("s", "replace", &object(written)).unwrap();
        let words = store.take(&key, now).expect("told");
        assert!(words.contains("accepted only part of it"), "{words}");
        assert!(words.contains("-TWO") && words.contains("+two"), "{words}");
    }

    #[test]
    fn entries_expire_and_are_bounded() {
        let mut store = ToldStore::new();
        let start = Instant::now();
        let key = |i: usize| told_key("s", "t", &object(json!({ "i": i }))).unwrap();
        store.put(key(0), Some("zero".into()), start);
        assert_eq!(store.take(&key(0), start + TOLD_TTL), None, "expired");
        for i in 0..(MAX_TOLD + 5) {
            store.put(key(i), Some(format!("{i}")), start);
        }
        assert_eq!(store.len(), MAX_TOLD);
        assert_eq!(store.take(&key(4), start), None, "the oldest went first");
        assert_eq!(store.take(&key(5), start).as_deref(), Some("5"));
        assert_eq!(
            store.take(&key(MAX_TOLD + 4), start).as_deref(),
            Some(&*format!("{}", MAX_TOLD + 4))
        );
        // Put again under one key: one entry, the newest words.
        store.put(key(7), Some("seven".into()), start);
        assert_eq!(store.take(&key(7), start).as_deref(), Some("seven"));
        assert_eq!(store.take(&key(7), start), None);
    }

    #[test]
    fn after_tool_input_is_read_and_checked() {
        let input = parse_after_tool(
            br#"{"session_id":"s","hook_event_name":"AfterTool","tool_name":"run_shell_command",
                 "tool_input":{"command":"ls"},"tool_response":{"llmContent":"x"}}"#,
        )
        .unwrap();
        assert_eq!(input.session_id, "s");
        assert_eq!(input.tool, "run_shell_command");
        assert_eq!(
            input.key(),
            told_key("s", "run_shell_command", &object(json!({"command": "ls"})))
        );
        assert!(matches!(
            parse_after_tool(br#"{"hook_event_name":"BeforeTool","tool_name":"x"}"#),
            Err(super::super::GateError::EventMismatch { .. })
        ));
        assert!(parse_after_tool(br#"{"hook_event_name":"AfterTool"}"#).is_err());
        assert!(parse_after_tool(br#"[1]"#).is_err());
        assert!(parse_after_tool(br#"{"tool_name":"x","tool_input":3}"#).is_err());
        let output = after_tool_output("told");
        let value: Json = serde_json::from_str(output.stdout.trim()).unwrap();
        assert_eq!(value["hookSpecificOutput"]["hookEventName"], "AfterTool");
        assert_eq!(value["hookSpecificOutput"]["additionalContext"], "told");
    }
}
