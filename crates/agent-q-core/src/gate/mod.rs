//! The gate for the terminal agents' own tools: each agent's hook protocol, pure.
//!
//! Claude Code (`PreToolUse`, `PermissionRequest`), Gemini CLI (`BeforeTool`) and Codex CLI
//! (`PreToolUse`, `PermissionRequest`) run a command before each of their own tool calls, hand
//! it JSON on stdin and read a decision from its stdout. This module turns that JSON into one
//! normalized [`GateRequest`] ([`parse_hook_input`]) and a normalized [`GateAnswer`] back into
//! what each agent reads ([`format_answer`]). It performs no I/O: the hook command
//! (`agent-q-mcp hook`) reads and writes, the MCP server's `/gate` route carries the request to
//! Emacs (see [`crate::mcp`]).
//!
//! Per agent: `claude.rs`, `gemini.rs`, `codex.rs` (field names and output shapes); the
//! `apply_patch` format in `patch.rs`; the text an edit leaves, and a patch writing a given
//! text, in `edit.rs`.
//!
//! # What each answer becomes
//!
//! | answer | Claude `PreToolUse` | Claude `PermissionRequest` | Gemini `BeforeTool` | Codex `PreToolUse` | Codex `PermissionRequest` |
//! |---|---|---|---|---|---|
//! | `Allow` | `allow` | `behavior: allow` | `allow` | no output (Codex's own approval flow: its PreToolUse cannot allow) | `behavior: allow` |
//! | `Allow` + input | `allow` + `updatedInput` | `allow` + `updatedInput` | `allow` + `hookSpecificOutput.tool_input` | `allow` + `updatedInput` | no output (it cannot carry an edited input: Codex's own prompt, never the unedited call allowed) |
//! | `Deny` | `deny` + reason | `behavior: deny` + message | `deny` + reason | `deny` + reason | `behavior: deny` + message |
//! | `Ask` | `ask` (+ reason) | no output (Claude's dialog) | `ask` (+ reason) | no output | no output (Codex's prompt) |
//! | `NoOpinion` | no output | no output | no output | no output | no output |
//!
//! The exit code is always 0. "No output" lets the agent go on exactly as if no hook had run:
//! its own rules and prompt. [`GateAnswer::NoOpinion`] is for agent-q's own MCP tools (which
//! agent-q's server asks about itself); for a gated tool that agent-q has no rule for, answer
//! [`GateAnswer::Ask`]: where the user's Gemini policy allows the gated tools so that Emacs is
//! the only prompt, no output would let the call run unasked.
//!
//! While the hook waits, the agent's own terminal says so where the agent can: the
//! configuration writer (`agent-q-gate-connect-agent`) gives Codex CLI's hook a
//! `statusMessage` (shown after its "Working" line) and Gemini CLI's a `name` (shown as
//! "Executing Hook: NAME"), both "Waiting for Emacs (agent-q)...". Claude Code 2.1.197 shows a
//! hook's `statusMessage` only for `Stop` hooks (a running `PreToolUse` hook appears only in its
//! transcript view), so its cue is its status line: see [`waiting`].

mod away;
mod claude;
mod codex;
mod edit;
mod gemini;
mod patch;
mod search;
mod told;
mod turn;
pub mod waiting;
mod walk;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};
use thiserror::Error;

pub use away::{codex_approval, unreachable_answer, CodexApproval, CodexConfig, Unreachable};
pub use edit::{apply_patch_file, apply_text_edits, patch_section, EditError};
pub use patch::{patch_files, PatchAction, PatchFile};
pub use search::{
    glob_matches_path, glob_reach, glob_reach_outside, search_reach, split_globs, MAX_ALTERNATIVES, MAX_GLOB_BYTES,
    SENSITIVE_NAMES,
};
pub use told::{
    after_tool_output, input_as_run, may_tell, parse_after_tool, told_key, AfterToolInput, ToldKey, ToldStore,
    MAX_KEY_DEPTH, MAX_TOLD, TOLD_TTL,
};
pub use turn::{is_prompt_hook, prompt_event_name, turn_notice, TurnNotice};
pub use walk::{walk_search, SensitivePatterns, WalkLimits, WalkVerdict, MAX_DECORATED, WALK_BUDGET, WALK_MAX_ENTRIES};

/// The largest hook input read, in bytes: a `Write` of a large file is the biggest thing an
/// agent sends; the MCP server accepts requests up to [`crate::mcp::MAX_REQUEST_BODY_BYTES`].
pub const MAX_HOOK_INPUT_BYTES: usize = 16 * 1024 * 1024;

/// The longest short field (session id, tool name, tool use id) accepted, in bytes.
pub const MAX_NAME_BYTES: usize = 4096;

/// The longest path (cwd, a file path) accepted, in bytes.
pub const MAX_PATH_BYTES: usize = 64 * 1024;

/// The most URLs taken out of a Gemini `web_fetch` prompt.
pub const MAX_FETCH_URLS: usize = 32;

/// Why a hook's input cannot be turned into a [`GateRequest`]. The message names the problem.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum GateError {
    /// More than [`MAX_HOOK_INPUT_BYTES`] on stdin.
    #[error("the hook input is larger than {limit} bytes")]
    TooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// Not JSON, or not an object.
    #[error("the hook input is not a JSON object: {0}")]
    NotJson(String),
    /// A required field is missing.
    #[error("the hook input has no {field}")]
    Missing {
        /// The field's name.
        field: &'static str,
    },
    /// A field has the wrong type or is too long.
    #[error("the hook input's {field} {problem}")]
    Invalid {
        /// The field's name.
        field: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// The tool input of a tool the gate knows lacks what the tool needs.
    #[error("the {tool} call's tool_input {problem}")]
    ToolInput {
        /// The tool's name.
        tool: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The hook was configured for another event than the agent says it fired for.
    #[error("the hook was run for {expected} but the input says hook_event_name {got}")]
    EventMismatch {
        /// The event of `--event`.
        expected: &'static str,
        /// The input's `hook_event_name`, cut.
        got: String,
    },
    /// The agent has no such hook event.
    #[error("{agent} has no {event} hook")]
    UnsupportedEvent {
        /// The agent.
        agent: &'static str,
        /// The event.
        event: &'static str,
    },
}

/// The terminal agent whose hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Agent {
    /// Claude Code.
    Claude,
    /// Gemini CLI.
    Gemini,
    /// Codex CLI.
    Codex,
}

impl Agent {
    /// The agent's name as the command line and the wire spell it: `claude`, `gemini`, `codex`.
    pub fn name(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Gemini => "gemini",
            Agent::Codex => "codex",
        }
    }
}

impl std::str::FromStr for Agent {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "claude" => Ok(Agent::Claude),
            "gemini" => Ok(Agent::Gemini),
            "codex" => Ok(Agent::Codex),
            other => Err(format!("unknown agent {other:?}: expected claude, gemini or codex")),
        }
    }
}

/// Which hook fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HookEvent {
    /// Before a tool call: Claude's and Codex's `PreToolUse`, Gemini's `BeforeTool`.
    PreTool,
    /// The agent would show its own permission dialog: Claude's and Codex's `PermissionRequest`.
    PermissionRequest,
}

impl HookEvent {
    /// `pre-tool` or `permission-request`.
    pub fn name(self) -> &'static str {
        match self {
            HookEvent::PreTool => "pre-tool",
            HookEvent::PermissionRequest => "permission-request",
        }
    }

    /// The `hook_event_name` AGENT sends for this event.
    pub fn agent_name(self, agent: Agent) -> &'static str {
        match (agent, self) {
            (Agent::Gemini, HookEvent::PreTool) => "BeforeTool",
            (_, HookEvent::PreTool) => "PreToolUse",
            (_, HookEvent::PermissionRequest) => "PermissionRequest",
        }
    }
}

impl std::str::FromStr for HookEvent {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "pre-tool" => Ok(HookEvent::PreTool),
            "permission-request" => Ok(HookEvent::PermissionRequest),
            other => Err(format!(
                "unknown event {other:?}: expected pre-tool, permission-request (or after-tool, Gemini CLI's AfterTool hook)"
            )),
        }
    }
}

/// One text replacement of an edit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TextEdit {
    /// The text replaced.
    pub old_string: String,
    /// Its replacement.
    pub new_string: String,
    /// Whether every occurrence is replaced (Claude's `replace_all`).
    pub replace_all: bool,
    /// How many occurrences are expected (Gemini's `expected_replacements`), if said.
    pub expected_replacements: Option<u64>,
}

/// What a tool call does, as far as the gate is concerned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ToolKind {
    /// A shell command: Claude `Bash`, Gemini `run_shell_command`, Codex `Bash` (also `shell`,
    /// `exec_command`, `local_shell`).
    Shell {
        /// The whole command line. Codex's argv form is joined with POSIX shell quoting.
        command: String,
        /// Codex's argv form, when the command came as an array.
        argv: Option<Vec<String>>,
        /// The directory it runs in, when the input says (Gemini `dir_path`, Codex `workdir`).
        dir: Option<String>,
    },
    /// Replacements in one file: Claude `Edit` and `MultiEdit`, Gemini `replace`.
    Edit {
        /// The file.
        path: String,
        /// The replacements, in order (one, unless `multi`).
        edits: Vec<TextEdit>,
        /// Whether the input had an `edits` list (`MultiEdit`) rather than one replacement.
        multi: bool,
    },
    /// A whole file written: Claude `Write`, Gemini `write_file`.
    Write {
        /// The file.
        path: String,
        /// Its new content.
        content: String,
    },
    /// A Codex `apply_patch`.
    Patch {
        /// The patch text.
        patch: String,
        /// The files it touches, from its `*** Add/Update/Delete File:` lines.
        files: Vec<PatchFile>,
    },
    /// Files read: Claude `Read`, Gemini `read_file`, `read_many_files`.
    Read {
        /// The files (or, for `read_many_files`, the paths and globs) read.
        paths: Vec<String>,
    },
    /// A search of files' names or contents under a folder: Claude `Grep` and `Glob`, Gemini
    /// `grep_search` (`search_file_content` before) and `glob`.
    Search {
        /// The folder (or file) searched, when the input names one; else the agent's `cwd`.
        path: Option<String>,
        /// The globs that choose the files searched (Claude Grep's `glob`, split; Glob's
        /// `pattern`; Gemini's `include_pattern` or `pattern`); none: every file.
        globs: Vec<String>,
        /// Why the globs may reach a sensitive file under the folder ([`search_reach`]), or
        /// `None` when they cannot.
        reach: Option<String>,
    },
    /// A web fetch: Claude `WebFetch`, Gemini `web_fetch`.
    Fetch {
        /// The URLs: Claude's `url`, Gemini's `url` or the URLs in its `prompt`.
        urls: Vec<String>,
    },
    /// One of agent-q's own MCP tools: agent-q's server asks about it; the hook has no opinion.
    AgentQ {
        /// The tool's name within agent-q, e.g. `read_file`.
        tool: String,
    },
    /// Any other tool.
    Other,
}

/// A hook's tool call, normalized.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "WireRequest")]
pub struct GateRequest {
    /// Whose hook.
    pub agent: Agent,
    /// Which hook.
    pub event: HookEvent,
    /// The agent's session (`session_id`), empty when it sent none.
    pub session_id: String,
    /// The agent's working directory (`cwd`), empty when it sent none.
    pub cwd: String,
    /// The tool's name as the agent calls it.
    pub tool: String,
    /// The agent's id of the call (`tool_use_id`), when it sent one.
    pub tool_use_id: Option<String>,
    /// The tool's input, as the agent sent it.
    pub tool_input: Map<String, Json>,
    /// What the call does; always derived from the agent, the tool and its input (a `kind`
    /// sent over the wire is ignored).
    pub kind: ToolKind,
    /// How many seconds the agent waits for the hook's answer from when the request is sent
    /// (its hook timeout, less what the hook keeps to answer), when the hook knows it: the
    /// gate route ends the wait then, with [`timed_out_answer`], before the agent's own
    /// timeout would fall back silently. Capped at [`MAX_WAIT_SECS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_secs: Option<u64>,
}

/// The longest wait a request may announce, in seconds (a day).
pub const MAX_WAIT_SECS: u64 = 24 * 3600;

/// The answer when nobody answered in Emacs within the agent's hook timeout of SECONDS: a
/// deny, saying so (the agent's own timeout would otherwise let the call go on).
pub fn timed_out_answer(seconds: u64) -> GateAnswer {
    GateAnswer::Deny {
        reason: timed_out_reason(seconds),
    }
}

/// What the model, the user and the audit read when the wait of SECONDS ran out.
pub fn timed_out_reason(seconds: u64) -> String {
    format!(
        "Nobody answered in Emacs within {seconds} s, before the agent's hook timeout (set by \
         M-x agent-q-gate-connect-agent) would end the wait: agent-q denied the call. Ask again \
         when the user is there."
    )
}

/// A [`GateRequest`] as the `/gate` route reads it: its `kind` is derived again.
#[derive(Deserialize)]
struct WireRequest {
    agent: Agent,
    event: HookEvent,
    #[serde(default)]
    session_id: String,
    #[serde(default)]
    cwd: String,
    tool: String,
    #[serde(default)]
    tool_use_id: Option<String>,
    #[serde(default)]
    tool_input: Map<String, Json>,
    #[serde(default)]
    wait_secs: Option<u64>,
}

impl TryFrom<WireRequest> for GateRequest {
    type Error = GateError;

    fn try_from(wire: WireRequest) -> Result<Self, GateError> {
        let wait_secs = wire.wait_secs.map(|s| s.min(MAX_WAIT_SECS));
        let mut request = GateRequest::new(
            wire.agent,
            wire.event,
            wire.session_id,
            wire.cwd,
            wire.tool,
            wire.tool_use_id,
            wire.tool_input,
        )?;
        request.wait_secs = wait_secs;
        Ok(request)
    }
}

impl GateRequest {
    /// A request, its fields checked for length and its kind derived (see [`classify`]).
    pub fn new(
        agent: Agent,
        event: HookEvent,
        session_id: String,
        cwd: String,
        tool: String,
        tool_use_id: Option<String>,
        tool_input: Map<String, Json>,
    ) -> Result<Self, GateError> {
        if agent == Agent::Gemini && event == HookEvent::PermissionRequest {
            return Err(GateError::UnsupportedEvent {
                agent: agent.name(),
                event: event.name(),
            });
        }
        check_len("session_id", &session_id, MAX_NAME_BYTES)?;
        check_len("cwd", &cwd, MAX_PATH_BYTES)?;
        check_len("tool_name", &tool, MAX_NAME_BYTES)?;
        if tool.is_empty() {
            return Err(GateError::Missing { field: "tool_name" });
        }
        if let Some(id) = &tool_use_id {
            check_len("tool_use_id", id, MAX_NAME_BYTES)?;
        }
        let kind = classify(agent, &tool, &tool_input)?;
        Ok(GateRequest {
            agent,
            event,
            session_id,
            cwd,
            tool,
            tool_use_id,
            tool_input,
            kind,
            wait_secs: None,
        })
    }

    /// Whether the call is one of agent-q's own MCP tools.
    pub fn is_agent_q_tool(&self) -> bool {
        matches!(self.kind, ToolKind::AgentQ { .. })
    }
}

/// The normalized answer to a gated call. On the `/gate` wire: `{"decision": "allow",
/// "updated_input": {...}}`, `{"decision": "deny", "reason": "..."}`, `{"decision": "ask",
/// "reason": "..."}`, `{"decision": "no-opinion"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "kebab-case")]
pub enum GateAnswer {
    /// Run it; with `updated_input`, run that input instead (an edited command, the hunks the
    /// user accepted).
    Allow {
        /// The input to run instead, if changed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        updated_input: Option<Json>,
    },
    /// Do not run it; REASON reaches the model.
    Deny {
        /// Why, for the model.
        reason: String,
    },
    /// Leave it to the agent's own prompt.
    Ask {
        /// Why, shown by agents that show one (Claude, Gemini).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Say nothing: the agent goes on as if no hook had run.
    NoOpinion,
}

/// What the hook command prints and exits with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookOutput {
    /// Standard output: one JSON object and a newline, or nothing.
    pub stdout: String,
    /// The exit code.
    pub exit_code: u8,
}

impl HookOutput {
    /// No output, exit 0: the agent's own flow.
    pub fn silent() -> Self {
        HookOutput {
            stdout: String::new(),
            exit_code: 0,
        }
    }

    fn json(value: Json) -> Self {
        HookOutput {
            stdout: format!("{value}\n"),
            exit_code: 0,
        }
    }
}

/// Parse the hook input BYTES of AGENT. EVENT is the `--event` of the hook command; when
/// `None`, the input's `hook_event_name` says (and `PreToolUse`/`BeforeTool` when it is
/// absent too). A `hook_event_name` that contradicts EVENT is an error.
pub fn parse_hook_input(agent: Agent, event: Option<HookEvent>, bytes: &[u8]) -> Result<GateRequest, GateError> {
    if bytes.len() > MAX_HOOK_INPUT_BYTES {
        return Err(GateError::TooLarge {
            limit: MAX_HOOK_INPUT_BYTES,
        });
    }
    let value: Json = serde_json::from_slice(bytes).map_err(|e| GateError::NotJson(e.to_string()))?;
    let Json::Object(mut input) = value else {
        return Err(GateError::NotJson(format!("it is {}", type_name(&value))));
    };
    let named = optional_string(&input, "hook_event_name")?;
    let event = match (event, named) {
        (Some(event), Some(name)) if name != event.agent_name(agent) => {
            return Err(GateError::EventMismatch {
                expected: event.agent_name(agent),
                got: name.chars().take(64).collect(),
            })
        }
        (Some(event), _) => event,
        (None, Some("PermissionRequest")) => HookEvent::PermissionRequest,
        (None, Some(name)) if name == HookEvent::PreTool.agent_name(agent) => HookEvent::PreTool,
        (None, Some(name)) => {
            return Err(GateError::EventMismatch {
                expected: HookEvent::PreTool.agent_name(agent),
                got: name.chars().take(64).collect(),
            })
        }
        (None, None) => HookEvent::PreTool,
    };
    let session_id = optional_string(&input, "session_id")?.unwrap_or_default().to_string();
    let cwd = optional_string(&input, "cwd")?.unwrap_or_default().to_string();
    let tool = optional_string(&input, "tool_name")?
        .ok_or(GateError::Missing { field: "tool_name" })?
        .to_string();
    let tool_use_id = optional_string(&input, "tool_use_id")?.map(str::to_string);
    let tool_input = match input.remove("tool_input") {
        None | Some(Json::Null) => Map::new(),
        Some(Json::Object(map)) => map,
        Some(other) => {
            return Err(GateError::Invalid {
                field: "tool_input",
                problem: format!("is {}, not an object", type_name(&other)),
            })
        }
    };
    GateRequest::new(agent, event, session_id, cwd, tool, tool_use_id, tool_input)
}

/// What the call of TOOL with INPUT does, for AGENT. A tool the gate knows whose input lacks
/// what the tool needs is an error; an unknown tool is [`ToolKind::Other`].
pub fn classify(agent: Agent, tool: &str, input: &Map<String, Json>) -> Result<ToolKind, GateError> {
    if let Some(own) = agent_q_tool(tool) {
        return Ok(ToolKind::AgentQ { tool: own.to_string() });
    }
    let kind = match agent {
        Agent::Claude => claude::classify(tool, input),
        Agent::Gemini => gemini::classify(tool, input),
        Agent::Codex => codex::classify(tool, input),
    };
    kind.map_err(|problem| GateError::ToolInput {
        tool: tool.chars().take(64).collect(),
        problem,
    })
}

/// The name within agent-q of TOOL when it is one of agent-q's own MCP tools, as each agent
/// names them: `mcp__agent-q__NAME`, `mcp__agent_q__NAME` (Claude, Codex), `mcp_agent-q_NAME`,
/// `mcp_agent_q_NAME` (Gemini).
pub fn agent_q_tool(tool: &str) -> Option<&str> {
    const PREFIXES: [&str; 4] = ["mcp__agent-q__", "mcp__agent_q__", "mcp_agent-q_", "mcp_agent_q_"];
    PREFIXES
        .iter()
        .find_map(|prefix| tool.strip_prefix(prefix))
        .filter(|name| !name.is_empty())
}

/// What AGENT reads for ANSWER to a call of EVENT. See the module's table.
pub fn format_answer(agent: Agent, event: HookEvent, answer: &GateAnswer) -> HookOutput {
    match agent {
        Agent::Claude => claude::format(event, answer),
        Agent::Gemini => gemini::format(answer),
        Agent::Codex => codex::format(event, answer),
    }
}

/// The most bytes of a diff put in what the model is told; a longer one is cut, saying so.
pub const MAX_CONTEXT_DIFF_BYTES: usize = 16 * 1024;

/// What the model of REQUEST's agent must be told besides the call's own result when ANSWER
/// changed the call, or `None`: the command that really ran when the user edited it; the
/// changes the user rejected when an edit (Claude `Edit`, `MultiEdit`, `Write`, Gemini
/// `replace`, `write_file`, Codex `apply_patch`) was accepted in part, as a diff from the text
/// the model proposed to the text written (and, for a patch, each file rejected whole). The agents' own result messages say otherwise ("has been updated
/// successfully", "completed with no output").
pub fn model_context(request: &GateRequest, answer: &GateAnswer) -> Option<String> {
    let GateAnswer::Allow {
        updated_input: Some(Json::Object(input)),
    } = answer
    else {
        return None;
    };
    let text = |names: &[&str]| names.iter().find_map(|n| input.get(*n).and_then(Json::as_str));
    match &request.kind {
        ToolKind::Shell { command, .. } => {
            let ran = text(&["command", "cmd"])?;
            (ran != command).then(|| {
                format!(
                    "The user edited this command in Emacs (agent-q) before approving it. What ran is:\n{ran}\n\
                     not the command you wrote:\n{command}\nThe result is that of the edited command. The \
                     agent's display still shows your command, not the one that ran."
                )
            })
        }
        ToolKind::Edit { path, edits, .. } => {
            // The accepted text replaces the whole current text (lisp/agent-q-gate-edit.el).
            let (current, written) = match input.get("edits").and_then(Json::as_array) {
                Some(list) => {
                    let first = list.first()?;
                    (first.get("old_string")?.as_str()?, first.get("new_string")?.as_str()?)
                }
                None => (text(&["old_string"])?, text(&["new_string"])?),
            };
            let proposed = apply_text_edits(current, edits).ok()?;
            partial_edit(path, &proposed, written)
        }
        ToolKind::Write { path, content } => partial_edit(path, content, text(&["content"])?),
        ToolKind::Patch { patch, files } => {
            let ToolKind::Patch { patch: written, .. } = classify(request.agent, &request.tool, input).ok()? else {
                return None;
            };
            partial_patch(patch, files, &written)
        }
        _ => None,
    }
}

/// What the model is told when the user accepted only part of its Codex PATCH (touching
/// FILES): WRITTEN is the patch that ran, one section per accepted file whose one hunk turns
/// the file's current lines (`-`) into the accepted ones (`+`), see [`patch_section`].
fn partial_patch(patch: &str, files: &[PatchFile], written: &str) -> Option<String> {
    // (path, current, accepted) of each section of WRITTEN.
    let mut sections: Vec<(String, String, String)> = Vec::new();
    for line in written.lines() {
        let header = line
            .strip_prefix("*** Update File: ")
            .or_else(|| line.strip_prefix("*** Add File: "))
            .or_else(|| line.strip_prefix("*** Delete File: "));
        if let Some(path) = header {
            sections.push((path.trim().to_string(), String::new(), String::new()));
        } else if let Some((_, current, accepted)) = sections.last_mut() {
            if let Some(old) = line.strip_prefix('-') {
                current.push_str(old);
                current.push('\n');
            } else if let Some(new) = line.strip_prefix('+') {
                accepted.push_str(new);
                accepted.push('\n');
            }
        }
    }
    let mut told = Vec::new();
    for (index, file) in files.iter().enumerate() {
        match sections.iter().find(|(path, ..)| *path == file.path) {
            None => told.push(format!(
                "The user rejected your whole change to {} in Emacs (agent-q): the patch that ran left that file as it was.",
                file.path
            )),
            Some((path, current, accepted)) => {
                if let Some(words) = apply_patch_file(patch, index, current)
                    .ok()
                    .and_then(|proposed| partial_edit(path, &proposed, accepted))
                {
                    told.push(words);
                }
            }
        }
    }
    (!told.is_empty()).then(|| told.join("\n\n"))
}

/// What the model is told when the user accepted only part of its edit of PATH: the diff from
/// PROPOSED, its text, to WRITTEN, the file's text after the call.
fn partial_edit(path: &str, proposed: &str, written: &str) -> Option<String> {
    if proposed == written {
        return None;
    }
    let mut diff = crate::diff::unified(proposed, written, "what you proposed", "what the file holds").ok()?;
    if diff.len() > MAX_CONTEXT_DIFF_BYTES {
        let mut cut = MAX_CONTEXT_DIFF_BYTES;
        while !diff.is_char_boundary(cut) {
            cut -= 1;
        }
        diff.truncate(cut);
        diff.push_str("\n[the diff is cut here: read the file]\n");
    }
    Some(format!(
        "The user reviewed your edit of {path} in Emacs (agent-q) and accepted only part of it: the \
         file was written with the accepted changes only, so it does not hold the text you proposed. \
         The changes the user rejected, as a diff from the text you proposed to the text the file \
         now holds (its - lines are your rejected text, its + lines what the file has there \
         instead, with the lines around them):\n{diff}\nDo not assume the rejected changes were \
         made; read the file again before editing it further."
    ))
}

/// What REQUEST's agent reads for ANSWER: [`format_answer`], with [`model_context`] added where
/// the agent passes a hook's additional context to its model (Claude's and Codex's
/// `PreToolUse`: `hookSpecificOutput.additionalContext`). Gemini CLI reads additional context
/// only from its `AfterTool` hook: the MCP server keeps the words for it ([`ToldStore`]).
pub fn format_answer_to(request: &GateRequest, answer: &GateAnswer) -> HookOutput {
    let output = format_answer(request.agent, request.event, answer);
    let passes = matches!(request.agent, Agent::Claude | Agent::Codex) && request.event == HookEvent::PreTool;
    let Some(context) = passes.then(|| model_context(request, answer)).flatten() else {
        return output;
    };
    match serde_json::from_str::<Json>(output.stdout.trim()) {
        Ok(Json::Object(mut value)) => {
            if let Some(Json::Object(specific)) = value.get_mut("hookSpecificOutput") {
                specific.insert("additionalContext".into(), context.into());
            }
            HookOutput::json(Json::Object(value))
        }
        _ => output,
    }
}

/// Claude's (and Codex's) `PreToolUse` answer.
fn pre_tool_use(decision: &str, reason: Option<&str>, updated_input: Option<&Json>) -> HookOutput {
    let mut output = Map::new();
    output.insert("hookEventName".into(), "PreToolUse".into());
    output.insert("permissionDecision".into(), decision.into());
    if let Some(reason) = reason {
        output.insert("permissionDecisionReason".into(), reason.into());
    }
    if let Some(input) = updated_input {
        output.insert("updatedInput".into(), input.clone());
    }
    HookOutput::json(serde_json::json!({ "hookSpecificOutput": output }))
}

/// Claude's (and Codex's) `PermissionRequest` answer: DECISION is its `decision` object.
fn permission_request(decision: Json) -> HookOutput {
    HookOutput::json(serde_json::json!({
        "hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}
    }))
}

/// The reason an allow carries in Claude's answer.
const ALLOWED: &str = "Allowed in Emacs (agent-q)";

fn check_len(field: &'static str, text: &str, limit: usize) -> Result<(), GateError> {
    if text.len() > limit {
        return Err(GateError::Invalid {
            field,
            problem: format!("is longer than {limit} bytes"),
        });
    }
    Ok(())
}

fn type_name(value: &Json) -> &'static str {
    match value {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

/// The string FIELD of the hook INPUT, `None` when absent or null.
fn optional_string<'a>(input: &'a Map<String, Json>, field: &'static str) -> Result<Option<&'a str>, GateError> {
    match input.get(field) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::String(text)) => Ok(Some(text)),
        Some(other) => Err(GateError::Invalid {
            field,
            problem: format!("is {}, not a string", type_name(other)),
        }),
    }
}

/// The first of NAMES that INPUT has, as a string; an error naming them when none is a string.
fn tool_string(input: &Map<String, Json>, names: &[&str]) -> Result<String, String> {
    for name in names {
        match input.get(*name) {
            Some(Json::String(text)) => return Ok(text.clone()),
            Some(Json::Null) | None => {}
            Some(other) => return Err(format!("has {name} as {}, not a string", type_name(other))),
        }
    }
    Err(format!("has no {}", names.join(" or ")))
}

/// The optional string NAME of INPUT.
fn tool_optional_string(input: &Map<String, Json>, name: &str) -> Result<Option<String>, String> {
    match input.get(name) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::String(text)) => Ok(Some(text.clone())),
        Some(other) => Err(format!("has {name} as {}, not a string", type_name(other))),
    }
}

/// The boolean NAME of INPUT, false when absent.
fn tool_bool(input: &Map<String, Json>, name: &str) -> Result<bool, String> {
    match input.get(name) {
        None | Some(Json::Null) => Ok(false),
        Some(Json::Bool(b)) => Ok(*b),
        Some(other) => Err(format!("has {name} as {}, not a boolean", type_name(other))),
    }
}

/// A [`ToolKind::Search`] under PATH with GLOBS, its reach judged.
fn search_kind(path: Option<String>, globs: Vec<String>) -> ToolKind {
    let reach = search_reach(&globs);
    ToolKind::Search { path, globs, reach }
}

/// One replacement from OBJECT's `old_string`, `new_string`, `replace_all` and
/// `expected_replacements`.
fn text_edit(object: &Map<String, Json>) -> Result<TextEdit, String> {
    let expected_replacements = match object.get("expected_replacements") {
        None | Some(Json::Null) => None,
        Some(value) => Some(
            value
                .as_u64()
                .ok_or("has expected_replacements that is not a non-negative integer")?,
        ),
    };
    Ok(TextEdit {
        old_string: tool_string(object, &["old_string"])?,
        new_string: tool_string(object, &["new_string"])?,
        replace_all: tool_bool(object, "replace_all")?,
        expected_replacements,
    })
}

#[cfg(test)]
mod tests;
