//! `agent-q-mcp hook`: the command a terminal agent runs before each of its own tool calls.
//!
//! It reads the agent's hook input on stdin (at most
//! [`agent_q_core::gate::MAX_HOOK_INPUT_BYTES`]), normalizes it
//! ([`agent_q_core::gate::parse_hook_input`]), posts it to the `/gate` route of the running
//! Emacs's MCP server (found through the connection file, as the relay finds it), waits for the
//! answer and prints what the agent reads ([`agent_q_core::gate::format_answer`]).
//!
//! - agent-q's own MCP tools: no output at once, without contacting Emacs (agent-q's server
//!   asks about them itself).
//! - Emacs cannot be asked (no connection file, a dead pid, nothing listening, the token
//!   refused, the gate off, an unreadable input, any error): the agent's own flow — Claude and
//!   Gemini `ask`, Codex no output — with the reason on stderr; never an allow. With
//!   `--unreachable deny`, a deny whose reason says why.
//! - The agent gone while its call waits (killed: the pipe it reads the hook's answer from is
//!   closed): the request is dropped, so Emacs withdraws the call (see `agent_gone`).

use std::io::Read;
use std::path::PathBuf;

use agent_q_core::gate::{
    format_answer, format_answer_to, parse_hook_input, Agent, GateAnswer, GateRequest, HookEvent, HookOutput,
    MAX_HOOK_INPUT_BYTES,
};
use agent_q_core::mcp::{GATE_ENDPOINT, MAX_GATE_WAIT};
use thiserror::Error;

use crate::relay::{check_process_owner, error_chain, http_client, read_connection, resolve_connection_file};

/// What to answer when Emacs cannot be asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Unreachable {
    /// The agent's own flow: Claude and Gemini ask, Codex prints nothing.
    #[default]
    Ask,
    /// Deny, saying why.
    Deny,
}

/// The hook's command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookOptions {
    /// `--agent`.
    pub agent: Agent,
    /// `--event`; from the input's `hook_event_name` when absent.
    pub event: Option<HookEvent>,
    /// `--connection-file`.
    pub connection_file: Option<PathBuf>,
    /// `--unreachable`.
    pub unreachable: Unreachable,
}

/// Why Emacs could not be asked.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum HookError {
    /// The hook input could not be read or understood.
    #[error("cannot read the hook input: {0}")]
    Input(String),
    /// No server to ask: no connection file, a dead Emacs, an unusable file.
    #[error("{0}")]
    NoServer(String),
    /// The request failed or was refused.
    #[error("{0}")]
    Refused(String),
}

/// What the hook prints, and what it says on stderr (empty when nothing went wrong).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookResult {
    /// Standard output and exit code.
    pub output: HookOutput,
    /// A message for stderr.
    pub message: Option<String>,
}

/// Run the hook as OPTIONS say, with the hook input on STDIN.
pub fn run(options: &HookOptions, stdin: impl Read) -> HookResult {
    let event = options.event.unwrap_or(HookEvent::PreTool);
    let request = read_input(stdin).and_then(|bytes| {
        parse_hook_input(options.agent, options.event, &bytes).map_err(|e| HookError::Input(e.to_string()))
    });
    let request = match request {
        Ok(request) => request,
        Err(error) => return fallback(options, event, &error),
    };
    if request.is_agent_q_tool() {
        return HookResult {
            output: format_answer(options.agent, request.event, &GateAnswer::NoOpinion),
            message: None,
        };
    }
    match ask_emacs(options, &request) {
        Ok(answer) => HookResult {
            output: format_answer_to(&request, &answer),
            message: None,
        },
        Err(error) => fallback(options, request.event, &error),
    }
}

/// The answer when Emacs cannot be asked because of ERROR.
fn fallback(options: &HookOptions, event: HookEvent, error: &HookError) -> HookResult {
    let answer = match options.unreachable {
        Unreachable::Ask => GateAnswer::Ask {
            reason: Some(format!("agent-q could not ask Emacs ({error}); asking here instead")),
        },
        Unreachable::Deny => GateAnswer::Deny {
            reason: format!("agent-q could not ask Emacs about this call ({error}), and denies it when it cannot"),
        },
    };
    HookResult {
        output: format_answer(options.agent, event, &answer),
        message: Some(format!("agent-q-mcp hook: {error}")),
    }
}

/// STDIN, at most [`MAX_HOOK_INPUT_BYTES`].
fn read_input(stdin: impl Read) -> Result<Vec<u8>, HookError> {
    let mut bytes = Vec::new();
    let limit = u64::try_from(MAX_HOOK_INPUT_BYTES)
        .unwrap_or(u64::MAX)
        .saturating_add(1);
    stdin
        .take(limit)
        .read_to_end(&mut bytes)
        .map_err(|e| HookError::Input(e.to_string()))?;
    if bytes.len() > MAX_HOOK_INPUT_BYTES {
        return Err(HookError::Input(format!(
            "it is larger than {MAX_HOOK_INPUT_BYTES} bytes"
        )));
    }
    Ok(bytes)
}

/// Post REQUEST to the gate of the Emacs the connection file names, and wait for its answer.
fn ask_emacs(options: &HookOptions, request: &GateRequest) -> Result<GateAnswer, HookError> {
    let no_server = |e: crate::error::RelayError| HookError::NoServer(e.to_string());
    let path = resolve_connection_file(options.connection_file.clone()).map_err(no_server)?;
    let connection = read_connection(&path).map_err(no_server)?;
    check_process_owner(connection.pid).map_err(HookError::NoServer)?;
    let mut url = reqwest::Url::parse(&connection.url).map_err(|e| HookError::NoServer(e.to_string()))?;
    url.set_path(GATE_ENDPOINT);
    url.set_query(None);
    let body = serde_json::to_vec(request).map_err(|e| HookError::Input(e.to_string()))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| HookError::Refused(format!("cannot start: {e}")))?;
    let asked = async {
        let client = http_client().map_err(|e| HookError::Refused(e.to_string()))?;
        let response = client
            .post(url.clone())
            .bearer_auth(&connection.token)
            .header("content-type", "application/json")
            .body(body)
            .timeout(MAX_GATE_WAIT + std::time::Duration::from_secs(60))
            .send()
            .await
            .map_err(|e| HookError::NoServer(format!("nothing answers at {url} ({})", error_chain(&e))))?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|e| HookError::Refused(format!("the answer could not be read ({})", error_chain(&e))))?;
        match status.as_u16() {
            200 => serde_json::from_str(&text)
                .map_err(|e| HookError::Refused(format!("Emacs's answer is not a gate answer ({e})"))),
            401 => Err(HookError::Refused(format!(
                "the MCP server at {url} rejected the token of {} (HTTP 401): the file is stale",
                path.display()
            ))),
            _ => Err(HookError::Refused(format!(
                "Emacs answered HTTP {status}: {}",
                text.trim().chars().take(500).collect::<String>()
            ))),
        }
    };
    runtime.block_on(async {
        // The agent gone (killed, or it closed the hook's output), the request is dropped: its
        // connection closes, and Emacs withdraws the call.
        tokio::select! {
            answer = asked => answer,
            () = agent_gone() => Err(HookError::Refused(
                "the agent stopped reading the hook's answer (it was interrupted or killed)".into(),
            )),
        }
    })
}

/// Resolves once the agent can no longer read the hook's answer: the read end of the hook's
/// standard output (a pipe from the agent) is closed, as when the agent is killed while its
/// call waits in Emacs. Never resolves when standard output is not such a pipe (a terminal, a
/// file). A thread blocked in `poll` waits for it: no busy loop.
async fn agent_gone() {
    let (tell, gone) = tokio::sync::oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("agent-q-hook-watch".into())
        .spawn(move || {
            if output_reader_gone() {
                let _ = tell.send(());
            }
        });
    if spawned.is_ok() && gone.await.is_ok() {
        return;
    }
    std::future::pending::<()>().await;
}

/// Block until the read end of standard output is closed (true), or until that cannot be
/// told (false).
#[cfg(unix)]
fn output_reader_gone() -> bool {
    let mut fd = libc::pollfd {
        fd: libc::STDOUT_FILENO,
        events: 0,
        revents: 0,
    };
    loop {
        // SAFETY: one valid pollfd, for the duration of the call.
        let n = unsafe { libc::poll(&mut fd, 1, -1) };
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return false;
        }
        if fd.revents & (libc::POLLERR | libc::POLLHUP) != 0 {
            return true;
        }
        if fd.revents & libc::POLLNVAL != 0 {
            return false;
        }
    }
}

/// Elsewhere the agent's going away is not watched: the hook waits for Emacs's answer.
#[cfg(not(unix))]
fn output_reader_gone() -> bool {
    false
}
