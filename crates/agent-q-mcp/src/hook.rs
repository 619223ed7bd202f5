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
//!   Gemini `ask`, Codex no output where its own approval policy asks, else a deny — with
//!   the reason on stderr; never an allow. With `--unreachable deny`, a deny whose reason says
//!   why. See [`agent_q_core::gate::unreachable_answer`].
//! - `--timeout SECONDS` (the agent's hook timeout): the request tells Emacs how long the
//!   agent waits, less a margin to answer in; when it runs out the call is denied, saying so.
//! - `--event after-tool` (Gemini CLI's `AfterTool`): what the model must be told about a call
//!   Emacs changed, kept by the server since the call's `BeforeTool` answer, as
//!   `additionalContext`; nothing, at once, otherwise (see [`run_after_tool`]).
//! - The agent's prompt hook (Claude's and Codex's `UserPromptSubmit`, Gemini's
//!   `BeforeAgent`): a turn begins. It is posted to `/turn` ([`agent_q_core::gate::TurnNotice`])
//!   with a short timeout ([`TURN_TIMEOUT`]), nothing waits for Emacs, and the hook prints
//!   nothing and exits 0 whatever happens: the prompt is never blocked.
//! - The agent gone while its call waits (killed: the pipe it reads the hook's answer from is
//!   closed): the request is dropped, so Emacs withdraws the call (see `agent_gone`).

use std::io::Read;
use std::path::PathBuf;

pub use agent_q_core::gate::Unreachable;
use agent_q_core::gate::{
    after_tool_output, codex_approval, format_answer, format_answer_to, is_prompt_hook, parse_after_tool,
    parse_hook_input, turn_notice, unreachable_answer, AfterToolInput, Agent, CodexApproval, CodexConfig, GateAnswer,
    GateRequest, HookEvent, HookOutput, TurnNotice, MAX_HOOK_INPUT_BYTES, MAX_WAIT_SECS,
};
use agent_q_core::mcp::{GATE_ENDPOINT, MAX_GATE_WAIT, TOLD_ENDPOINT, TURN_ENDPOINT};
use thiserror::Error;

use crate::relay::{
    check_process_owner, error_chain, http_client, read_connection, resolve_connection_file, Connection,
};

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
    /// `--timeout`: the agent's hook timeout in seconds, as the connect command wrote it into
    /// the agent's configuration.
    pub timeout: Option<u64>,
    /// `--event after-tool`: Gemini CLI's `AfterTool` hook, which tells the model what Emacs
    /// changed of the call (see [`run_after_tool`]), rather than a decision.
    pub after_tool: bool,
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
    if options.after_tool {
        return run_after_tool(options, stdin);
    }
    let event = options.event.unwrap_or(HookEvent::PreTool);
    let bytes = match read_input(stdin) {
        Ok(bytes) => bytes,
        Err(error) => return fallback(options, event, &[], &error),
    };
    if options.event.is_none() && is_prompt_hook(options.agent, &bytes) {
        // Emacs away, the gate off, no session: a no-op, said nowhere (the agents show a
        // hook's stderr; the prompt must go on as if no hook had run).
        if let Some(notice) = turn_notice(options.agent, &bytes) {
            let _ = tell_turn(options, &notice);
        }
        return HookResult {
            output: HookOutput::silent(),
            message: None,
        };
    }
    let request = match parse_hook_input(options.agent, options.event, &bytes) {
        Ok(mut request) => {
            request.wait_secs = options.timeout.map(agent_wait);
            request
        }
        Err(error) => return fallback(options, event, &bytes, &HookError::Input(error.to_string())),
    };
    if request.is_agent_q_tool() {
        return HookResult {
            output: format_answer(options.agent, request.event, &GateAnswer::NoOpinion),
            message: None,
        };
    }
    // While Emacs is asked, the agent's status line says so (see `crate::waiting`).
    let _marker = crate::waiting::Marker::new(options.connection_file.clone(), options.agent, &request.session_id);
    match ask_emacs(options, &request) {
        Ok(answer) => HookResult {
            output: format_answer_to(&request, &answer),
            message: None,
        },
        Err(error) => fallback(options, request.event, &bytes, &error),
    }
}

/// Gemini CLI's `AfterTool` hook: when the `BeforeTool` answer of this very call (the same
/// session, tool and input as it ran) left something its model must know — the command the
/// user edited, the hunks the user rejected — print it as `additionalContext` (Gemini appends
/// it to the tool's result); otherwise, and whenever Emacs cannot be asked, print nothing and
/// exit 0 at once. Emacs's main thread is never asked: the MCP server answers from what it kept
/// ([`agent_q_core::gate::ToldStore`]).
pub fn run_after_tool(options: &HookOptions, stdin: impl Read) -> HookResult {
    let silent = |message: Option<String>| HookResult {
        output: HookOutput::silent(),
        message,
    };
    if options.agent != Agent::Gemini {
        return silent(Some(format!(
            "agent-q-mcp hook: --event after-tool is Gemini CLI's AfterTool hook, not {}'s",
            options.agent.name()
        )));
    }
    let input = match read_input(stdin)
        .and_then(|bytes| parse_after_tool(&bytes).map_err(|e| HookError::Input(e.to_string())))
    {
        Ok(input) => input,
        Err(error) => return silent(Some(format!("agent-q-mcp hook: {error}"))),
    };
    match ask_told(options, &input) {
        Ok(Some(words)) => HookResult {
            output: after_tool_output(&words),
            message: None,
        },
        Ok(None) => silent(None),
        // Emacs away or its server stopped: nothing was kept for this call there either.
        Err(HookError::NoServer(_)) => silent(None),
        Err(error) => silent(Some(format!("agent-q-mcp hook: {error}"))),
    }
}

/// How long the `AfterTool` hook waits for the server, which answers at once.
const TOLD_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Ask the server of the connection file what the model must be told after INPUT's call.
fn ask_told(options: &HookOptions, input: &AfterToolInput) -> Result<Option<String>, HookError> {
    let body = serde_json::to_vec(&serde_json::json!({
        "session_id": input.session_id,
        "tool": input.tool,
        "tool_input": input.tool_input,
    }))
    .map_err(|e| HookError::Input(e.to_string()))?;
    let text = post_briefly(options, TOLD_ENDPOINT, body, TOLD_WAIT)?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| HookError::Refused(format!("not a told answer ({e})")))?;
    Ok(value
        .get("context")
        .and_then(|c| c.as_str())
        .filter(|c| !c.is_empty())
        .map(str::to_string))
}

/// The Emacs the connection file names: the connection, the URL of its ENDPOINT there, and
/// the file's path.
fn emacs_endpoint(
    options: &HookOptions,
    endpoint: &str,
) -> Result<(Connection, reqwest::Url, std::path::PathBuf), HookError> {
    let no_server = |e: crate::error::RelayError| HookError::NoServer(e.to_string());
    let path = resolve_connection_file(options.connection_file.clone()).map_err(no_server)?;
    let connection = read_connection(&path).map_err(no_server)?;
    check_process_owner(connection.pid).map_err(HookError::NoServer)?;
    let mut url = reqwest::Url::parse(&connection.url).map_err(|e| HookError::NoServer(e.to_string()))?;
    url.set_path(endpoint);
    url.set_query(None);
    Ok((connection, url, path))
}

/// A new single-threaded runtime for one request.
fn runtime() -> Result<tokio::runtime::Runtime, HookError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| HookError::Refused(format!("cannot start: {e}")))
}

/// Post BODY (JSON) to ENDPOINT of the Emacs the connection file names, which answers at
/// once, waiting at most TIMEOUT; the text of its answer, which must be a success.
fn post_briefly(
    options: &HookOptions,
    endpoint: &str,
    body: Vec<u8>,
    timeout: std::time::Duration,
) -> Result<String, HookError> {
    let (connection, url, _) = emacs_endpoint(options, endpoint)?;
    runtime()?.block_on(async {
        let client = http_client().map_err(|e| HookError::Refused(e.to_string()))?;
        let response = client
            .post(url.clone())
            .bearer_auth(&connection.token)
            .header("content-type", "application/json")
            .body(body)
            .timeout(timeout)
            .send()
            .await
            .map_err(|e| HookError::NoServer(format!("nothing answers at {url} ({})", error_chain(&e))))?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|e| HookError::Refused(format!("the answer could not be read ({})", error_chain(&e))))?;
        if !status.is_success() {
            return Err(HookError::Refused(format!(
                "Emacs answered HTTP {status}: {}",
                text.trim().chars().take(500).collect::<String>()
            )));
        }
        Ok(text)
    })
}

/// Seconds kept, of the agent's hook timeout, for the hook to print its answer.
const ANSWER_MARGIN_SECS: u64 = 5;

/// How long Emacs may take to answer, of the agent's hook TIMEOUT (seconds): all of it but
/// [`ANSWER_MARGIN_SECS`] (a quarter of a short one).
fn agent_wait(timeout: u64) -> u64 {
    let timeout = timeout.min(MAX_WAIT_SECS);
    timeout.saturating_sub(ANSWER_MARGIN_SECS.min(timeout / 4)).max(1)
}

/// The answer when Emacs cannot be asked because of ERROR; BYTES is the hook input.
fn fallback(options: &HookOptions, event: HookEvent, bytes: &[u8], error: &HookError) -> HookResult {
    let codex = (options.agent == Agent::Codex && options.unreachable == Unreachable::Ask).then(|| codex_policy(bytes));
    let answer = unreachable_answer(
        options.agent,
        event,
        options.unreachable,
        codex.as_ref(),
        &error.to_string(),
    );
    HookResult {
        output: format_answer(options.agent, event, &answer),
        message: Some(format!("agent-q-mcp hook: {error}")),
    }
}

/// Codex's approval policy, from its hook input BYTES, its command line (an ancestor of this
/// process named `codex`) and its configuration files.
fn codex_policy(bytes: &[u8]) -> CodexApproval {
    let input: serde_json::Value = serde_json::from_slice(bytes).unwrap_or_default();
    let permission_mode = input.get("permission_mode").and_then(|v| v.as_str());
    let cwd = input.get("cwd").and_then(|v| v.as_str()).map(PathBuf::from);
    let argv = codex_argv();
    let mut configs = Vec::new();
    let mut add = |path: PathBuf| {
        if let Ok(text) = std::fs::read_to_string(&path) {
            configs.push(CodexConfig {
                name: path.display().to_string(),
                text,
            });
        }
    };
    add(PathBuf::from("/etc/codex/managed_config.toml"));
    if let Some(cwd) = cwd {
        for dir in cwd.ancestors().take(64) {
            add(dir.join(".codex/config.toml"));
        }
    }
    let home = std::env::var_os("CODEX_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".codex")));
    if let Some(home) = home {
        add(home.join("config.toml"));
    }
    codex_approval(permission_mode, argv.as_deref(), &configs)
}

/// The command line of the nearest ancestor process whose program is `codex` (Codex runs
/// its hooks as its children, or through a shell), or `None`.
#[cfg(target_os = "linux")]
fn codex_argv() -> Option<Vec<String>> {
    let mut pid = std::os::unix::process::parent_id();
    for _ in 0..8 {
        if pid <= 1 {
            return None;
        }
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let argv: Vec<String> = cmdline
            .split(|b| *b == 0)
            .filter(|w| !w.is_empty())
            .map(|w| String::from_utf8_lossy(w).into_owned())
            .collect();
        let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok();
        let named = |p: &std::path::Path| p.file_name().is_some_and(|n| n == "codex");
        if exe.as_deref().is_some_and(named) || argv.first().is_some_and(|a| named(std::path::Path::new(a))) {
            return Some(argv);
        }
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The parent's pid is the second field after the command's closing parenthesis.
        pid = stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()?;
    }
    None
}

/// Elsewhere Codex's command line is not read: its policy is then told by its input and files.
#[cfg(not(target_os = "linux"))]
fn codex_argv() -> Option<Vec<String>> {
    None
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

/// The longest the prompt hook takes to tell Emacs that a turn begins.
pub const TURN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// Tell the Emacs the connection file names that the turn NOTICE begins; wait for no decision.
fn tell_turn(options: &HookOptions, notice: &TurnNotice) -> Result<(), HookError> {
    let body = serde_json::to_vec(notice).map_err(|e| HookError::Input(e.to_string()))?;
    post_briefly(options, TURN_ENDPOINT, body, TURN_TIMEOUT).map(drop)
}

/// Post REQUEST to the gate of the Emacs the connection file names, and wait for its answer.
fn ask_emacs(options: &HookOptions, request: &GateRequest) -> Result<GateAnswer, HookError> {
    let (connection, url, path) = emacs_endpoint(options, GATE_ENDPOINT)?;
    let body = serde_json::to_vec(request).map_err(|e| HookError::Input(e.to_string()))?;
    let runtime = runtime()?;
    let asked = async {
        let client = http_client().map_err(|e| HookError::Refused(e.to_string()))?;
        let response = client
            .post(url.clone())
            .bearer_auth(&connection.token)
            .header("content-type", "application/json")
            .body(body)
            .timeout(
                request
                    .wait_secs
                    .map(|s| std::time::Duration::from_secs(s + 2))
                    .unwrap_or(MAX_GATE_WAIT + std::time::Duration::from_secs(60)),
            )
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
