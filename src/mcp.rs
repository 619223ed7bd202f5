//! `agent-q--core-mcp-*`: the MCP server ([`agent_q_core::mcp`]) driven from Emacs.
//!
//! The server runs on its own tokio runtime and never touches a Lisp value: a `tools/call` becomes
//! an [`Event`] in the hub's queue and Emacs is woken through the module's channel
//! ([`super::channel`]); the channel's filter, on Emacs's main thread, takes the events
//! (`agent-q--core-mcp-take`), runs the calls through the asynchronous executor and answers each
//! with `agent-q--core-mcp-complete`. The tool list the server offers is set from the registry by
//! `agent-q--core-mcp-set-tools`, which agent-q-mcp.el calls whenever the registry changes.

use std::cell::RefCell;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use emacs::{defun, Env, IntoLisp, Result, Value};
use serde_json::{Map, Value as Json};

use super::args;
use super::errors::{self, Kind};
use super::registry::{lock as lock_registry, name_list, resolve};
use agent_q_core::gate::GateAnswer;
use agent_q_core::mcp::hub::{RootsState, Workspace};
use agent_q_core::mcp::server::EXIT_WAIT;
use agent_q_core::mcp::{make_token, CallAnswer, Config, Event, Hub, RunningServer, Server, Stopping, ToolInfo};
use agent_q_core::spec::SafetyLevel;

struct Running {
    hub: Arc<Hub>,
    server: RunningServer,
}

fn state() -> MutexGuard<'static, Option<Running>> {
    static STATE: OnceLock<Mutex<Option<Running>>> = OnceLock::new();
    STATE
        .get_or_init(|| Mutex::new(None))
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// The stops still finishing on their own threads, for Emacs's exit to wait for.
/// The stops still finishing, for Emacs's exit to wait for.
static STOPPING: Stopping = Stopping::new();

fn hub(env: &Env) -> Result<Arc<Hub>> {
    match state().as_ref() {
        Some(r) => Ok(r.hub.clone()),
        None => errors::signal(
            env,
            Kind::Generic,
            "The MCP server is not running (M-x agent-q-mcp-start)",
        ),
    }
}

/// A fresh bearer token: 256 random bits as 64 hexadecimal digits.
#[defun]
fn mcp_make_token(env: &Env) -> Result<String> {
    match make_token() {
        Ok(t) => Ok(t),
        Err(e) => errors::signal(env, Kind::Generic, e.to_string()),
    }
}

/// Start the MCP server on 127.0.0.1:PORT (0: a free port), requiring TOKEN, sending progress
/// every PROGRESS-SECONDS while a call waits. The module's channel must be open: the server wakes
/// Emacs through it. Return the URL of its endpoint. Signals when it is running already or the
/// port cannot be bound.
#[defun]
fn mcp_start<'e>(env: &'e Env, port: Value<'e>, token: Value<'e>, progress_seconds: Value<'e>) -> Result<String> {
    let port = args::integer(env, port, "PORT")?;
    let token = args::string(env, token, "TOKEN", args::MAX_NAME_BYTES)?;
    let progress_seconds = args::number(env, progress_seconds, "PROGRESS-SECONDS")?;
    if !super::channel::is_open() {
        return errors::signal(env, Kind::Generic, "agent-q's channel to Emacs is not open");
    }
    let mut s = state();
    if s.as_ref().is_some_and(|r| r.server.is_running()) {
        return errors::signal(env, Kind::Generic, "The MCP server is already running");
    }
    let Ok(port) = u16::try_from(port) else {
        return errors::signal(env, Kind::Generic, format!("Invalid port {port}"));
    };
    let progress = Duration::try_from_secs_f64(progress_seconds.max(0.1)).unwrap_or(Duration::from_secs(15));
    let hub = Hub::new(Box::new(|| {
        super::channel::wake();
    }));
    let config = Config {
        port,
        token,
        progress_interval: progress,
    };
    match Server::start(hub.clone(), config) {
        Ok(server) => {
            let url = server.url();
            *s = Some(Running { hub, server });
            Ok(url)
        }
        Err(e) => errors::signal(env, Kind::Generic, e.to_string()),
    }
}

/// Stop the MCP server: the port is released, and every call still waiting is answered with an
/// error. Return t if it was running. Returns at once: the answers are written and the
/// connections closed by a thread of their own (`agent-q--core-mcp-await-stopped' waits for it).
#[defun]
fn mcp_stop() -> Result<bool> {
    // Taken out first: no lock is held while the listener closes.
    let running = state().take();
    Ok(match running {
        Some(mut r) => {
            let was = r.server.is_running();
            let shutdown = r.server.stop();
            STOPPING.push(shutdown);
            was
        }
        None => false,
    })
}

/// Wait until the servers stopped so far have finished stopping (the answers of the calls they
/// ended written, their connections closed), but not longer than a stop can take (2 s). For Emacs's
/// exit only: the thread that finishes a stop dies with Emacs, and the clients would not hear
/// why their calls ended. Return t if they all finished.
#[defun]
fn mcp_await_stopped() -> Result<bool> {
    Ok(STOPPING.wait_all(EXIT_WAIT))
}

/// The server's state: (:url URL :port PORT :pending N :roots SESSIONS :gating BOOL) while it
/// runs, nil otherwise. N counts the tool calls and gate requests waiting. SESSIONS describes each open session whose client declared MCP roots:
/// (:client "NAME VERSION" :session ID :state STATE :directories DIRS :ignored NOTES :why WHY),
/// STATE `asking', `known' or `failed' (then WHY says why, and the fixed set applies).
#[defun]
fn mcp_status(env: &Env) -> Result<Value<'_>> {
    let s = state();
    let Some(r) = s.as_ref().filter(|r| r.server.is_running()) else {
        return env.intern("nil");
    };
    let (url, port, pending, hub) = (r.server.url(), r.server.port(), r.hub.pending_count(), r.hub.clone());
    drop(s);
    let mut sessions = Vec::new();
    for roots in hub.session_roots() {
        let (name, workspace, why) = match roots.state {
            RootsState::Asking => ("asking", None, None),
            RootsState::Known(workspace) => ("known", Some(workspace), None),
            RootsState::Failed(why) => ("failed", None, Some(why)),
        };
        let workspace = workspace.unwrap_or_default();
        sessions.push(env.list((
            env.intern(":client")?,
            roots.client,
            env.intern(":session")?,
            roots.session,
            env.intern(":state")?,
            env.intern(name)?,
            env.intern(":directories")?,
            string_list(env, &workspace.directories)?,
            env.intern(":ignored")?,
            string_list(env, &workspace.ignored)?,
            env.intern(":why")?,
            match why {
                Some(why) => why.into_lisp(env)?,
                None => env.intern("nil")?,
            },
        ))?);
    }
    env.list((
        env.intern(":url")?,
        url,
        env.intern(":port")?,
        i64::from(port),
        env.intern(":pending")?,
        i64::try_from(pending).unwrap_or(i64::MAX),
        env.intern(":roots")?,
        env.list(&sessions)?,
        env.intern(":gating")?,
        hub.gating(),
    ))
}

/// The arguments of a call from an MCP client, as the server parsed them: the `:arguments` of
/// a call that `agent-q--core-mcp-take` gives, an opaque user pointer that the executor takes
/// them from as they are ([`take_arguments`]), so that they are never printed and parsed again.
struct McpArguments(Option<Map<String, Json>>);

/// The parsed arguments VALUE holds, when it is the `:arguments` of an MCP call that no call
/// has taken yet; they are taken, so a second start of the same call finds none.
pub(crate) fn take_arguments(value: Value<'_>) -> Option<Map<String, Json>> {
    let cell = value.into_rust::<&RefCell<McpArguments>>().ok()?;
    let mut arguments = cell.try_borrow_mut().ok()?;
    arguments.0.take()
}

/// A Lisp list of the strings ITEMS.
fn string_list<'e>(env: &'e Env, items: &[String]) -> Result<Value<'e>> {
    let values = items
        .iter()
        .map(|item| item.as_str().into_lisp(env))
        .collect::<Result<Vec<_>>>()?;
    env.list(&values)
}

/// The `:roots` of a call: (:directories DIRS :ignored NOTES) for a client whose MCP roots
/// apply, nil when the fixed set does.
fn roots_value<'e>(env: &'e Env, roots: Option<&Workspace>) -> Result<Value<'e>> {
    match roots {
        None => env.intern("nil"),
        Some(workspace) => env.list((
            env.intern(":directories")?,
            string_list(env, &workspace.directories)?,
            env.intern(":ignored")?,
            string_list(env, &workspace.ignored)?,
        )),
    }
}

/// Offer the enabled tools of REGISTRY up to MAX-LEVEL (:safe, :cautious or :dangerous) to MCP
/// clients: the server lists them, and refuses a call of any other tool before it reaches Emacs.
/// Clients are told (`notifications/tools/list_changed`) when the list changed. Return t if it
/// changed.
#[defun]
fn mcp_set_tools<'e>(env: &'e Env, registry: Value<'e>, max_level: Value<'e>) -> Result<bool> {
    let hub = hub(env)?;
    let level = match name_list(env, env.list((max_level,))?, "MAX-LEVEL")?.first() {
        Some(name) => match name.parse::<SafetyLevel>() {
            Ok(l) => l,
            Err(e) => return errors::signal(env, Kind::Generic, e.problem),
        },
        None => SafetyLevel::Dangerous,
    };
    let tools: Vec<ToolInfo> = lock_registry(resolve(registry)?)
        .filter(None, &[], false)
        .iter()
        .map(|r| ToolInfo {
            name: r.spec.name.clone(),
            title: None,
            description: r.spec.description.clone(),
            input_schema: r.spec.parameters.as_object().cloned().unwrap_or_default(),
            safety_level: r.spec.safety_level,
            hints: r.spec.hints,
        })
        .collect();
    Ok(hub.set_tools(tools, level))
}

/// Refuse calls whose arguments exceed MAX-ARGUMENT-BYTES as JSON text, in the server, before
/// they become Lisp values (`agent-q-max-argument-bytes'). Return the cap in force (at most the
/// server's request size limit).
#[defun]
fn mcp_set_max_argument_bytes<'e>(env: &'e Env, max_argument_bytes: Value<'e>) -> Result<i64> {
    let bytes = args::integer(env, max_argument_bytes, "MAX-ARGUMENT-BYTES")?;
    let bytes = usize::try_from(bytes).unwrap_or(0);
    let hub = hub(env)?;
    hub.set_max_argument_bytes(bytes);
    Ok(i64::try_from(bytes.min(agent_q_core::mcp::MAX_REQUEST_BODY_BYTES)).unwrap_or(i64::MAX))
}

/// Take the events queued by the server: a list of
/// (:call KEY :tool NAME :arguments ARGUMENTS :client CLIENT :client-name NAME :session SESSION
/// :channel CHANNEL :progress BOOL :roots ROOTS :protocol VERSION) and (:cancel KEY), and, while
/// gating is on (`agent-q--core-mcp-set-gating'), (:gate KEY :agent AGENT :event EVENT ...) (see
/// [`gate_value`]) and (:gate-withdrawn KEY), (:gate-timed-out KEY SECONDS REASON), and
/// (:turn AGENT SESSION LABEL) when an agent's prompt hook says a turn begins. CLIENT is "NAME VERSION" as the client introduced
/// itself, NAME its name alone. CHANNEL is the hub's channel of the call (its session's, or its
/// own for a stateless request): what the call may see of other calls' work is keyed by it,
/// never by NAME. ARGUMENTS are the call's arguments as the server
/// parsed them, an opaque object for the executor (`agent-q--core-call-start'). ROOTS is the client's workspace, (:directories DIRS
/// :ignored NOTES), when the MCP roots it declared apply, nil when the fixed set does. Nil when
/// the server is not running.
#[defun]
fn mcp_take(env: &Env) -> Result<Value<'_>> {
    let Some(hub) = state().as_ref().map(|r| r.hub.clone()) else {
        return env.intern("nil");
    };
    let mut items = Vec::new();
    for event in hub.take_events() {
        items.push(match event {
            Event::Call {
                key,
                client,
                tool,
                arguments,
                progress,
            } => {
                let key = i64::try_from(key).unwrap_or(i64::MAX);
                let who = if client.version.is_empty() {
                    client.name.clone()
                } else {
                    format!("{} {}", client.name, client.version)
                };
                let args = RefCell::new(McpArguments(Some(arguments)));
                let fields = [
                    env.intern(":call")?,
                    key.into_lisp(env)?,
                    env.intern(":tool")?,
                    tool.into_lisp(env)?,
                    env.intern(":arguments")?,
                    args.into_lisp(env)?,
                    env.intern(":client")?,
                    who.into_lisp(env)?,
                    env.intern(":client-name")?,
                    client.name.as_str().into_lisp(env)?,
                    env.intern(":session")?,
                    match client.session {
                        Some(s) => s.into_lisp(env)?,
                        None => env.intern("nil")?,
                    },
                    env.intern(":channel")?,
                    client.channel.as_str().into_lisp(env)?,
                    env.intern(":progress")?,
                    progress.into_lisp(env)?,
                    env.intern(":roots")?,
                    roots_value(env, client.roots.as_deref())?,
                    env.intern(":protocol")?,
                    match client.protocol_version {
                        Some(p) => p.into_lisp(env)?,
                        None => env.intern("nil")?,
                    },
                ];
                env.list(&fields[..])?
            }
            Event::Cancel { key } => env.list((env.intern(":cancel")?, i64::try_from(key).unwrap_or(i64::MAX)))?,
            Event::Gate { key, request } => gate_value(env, key, &request)?,
            Event::GateWithdrawn { key } => {
                env.list((env.intern(":gate-withdrawn")?, i64::try_from(key).unwrap_or(i64::MAX)))?
            }
            Event::Turn { notice } => env.list((
                env.intern(":turn")?,
                env.intern(notice.agent.name())?,
                notice.session_id.as_str(),
                notice.label.as_str(),
            ))?,
            Event::GateTimedOut { key, seconds } => env.list((
                env.intern(":gate-timed-out")?,
                i64::try_from(key).unwrap_or(i64::MAX),
                i64::try_from(seconds).unwrap_or(i64::MAX),
                agent_q_core::gate::timed_out_reason(seconds),
            ))?,
        });
    }
    env.list(&items)
}

/// Answer the call KEY with TEXT, as a failure (`isError') when IS-ERROR is non-nil. Return t if
/// the call was still waiting (a withdrawn or answered call is ignored).
#[defun]
fn mcp_complete<'e>(env: &'e Env, key: Value<'e>, is_error: Value<'e>, text: Value<'e>) -> Result<bool> {
    let key = args::integer(env, key, "KEY")?;
    let text = args::string(env, text, "TEXT", args::MAX_TEXT_BYTES)?;
    let Some(hub) = state().as_ref().map(|r| r.hub.clone()) else {
        return Ok(false);
    };
    let answer = if is_error.is_not_nil() {
        CallAnswer::error(text)
    } else {
        CallAnswer::ok(text)
    };
    Ok(hub.complete(u64::try_from(key).unwrap_or(0), answer))
}

/// The text every waiting call's client gets when the server stops, and the reason its
/// pending approvals are withdrawn in Emacs.
#[defun]
fn mcp_stopped_reason() -> Result<&'static str> {
    Ok(agent_q_core::mcp::STOPPED)
}

/// Tell the client of call KEY what it waits for (sent as progress, if it asked for progress).
#[defun]
fn mcp_set_status<'e>(env: &'e Env, key: Value<'e>, text: Value<'e>) -> Result<bool> {
    let key = args::integer(env, key, "KEY")?;
    let text = args::string(env, text, "TEXT", args::MAX_NAME_BYTES)?;
    let Some(hub) = state().as_ref().map(|r| r.hub.clone()) else {
        return Ok(false);
    };
    Ok(hub.set_status(u64::try_from(key).unwrap_or(0), text))
}

/// A nil or a string as a Lisp value.
fn optional_string<'e>(env: &'e Env, text: Option<&str>) -> Result<Value<'e>> {
    match text {
        Some(text) => text.into_lisp(env),
        None => env.intern("nil"),
    }
}

/// The `:gate` item of `agent-q--core-mcp-take': (:gate KEY :agent AGENT :event EVENT :session
/// SESSION :cwd CWD :tool TOOL :tool-use-id ID :input INPUT :kind KIND :wait-secs SECS). SECS
/// is how long the agent waits for the answer (its hook timeout), or nil. AGENT is `claude',
/// `gemini' or `codex', EVENT `pre-tool' or `permission-request' (symbols); SESSION and CWD
/// strings (empty when the agent sent none), ID a string or nil. INPUT is the tool input as
/// the agent sent it and KIND what it does, both plists with keyword keys (JSON arrays are
/// vectors, false `:json-false', null nil): KIND is (:kind "shell" :command C :argv V :dir D),
/// (:kind "edit" :path P :edits [(:old_string O :new_string N :replace_all B
/// :expected_replacements N)...] :multi B), (:kind "write" :path P :content C), (:kind "patch"
/// :patch TEXT :files [(:action "add"|"update"|"delete" :path P :move_to Q)...]), (:kind "read"
/// :paths [P...]), (:kind "fetch" :urls [U...]), (:kind "agent-q" :tool NAME) or
/// (:kind "other").
fn gate_value<'e>(env: &'e Env, key: u64, request: &agent_q_core::gate::GateRequest) -> Result<Value<'e>> {
    let kind = serde_json::to_value(&request.kind).unwrap_or(Json::Null);
    let fields = [
        env.intern(":gate")?,
        i64::try_from(key).unwrap_or(i64::MAX).into_lisp(env)?,
        env.intern(":agent")?,
        env.intern(request.agent.name())?,
        env.intern(":event")?,
        env.intern(request.event.name())?,
        env.intern(":session")?,
        request.session_id.as_str().into_lisp(env)?,
        env.intern(":cwd")?,
        request.cwd.as_str().into_lisp(env)?,
        env.intern(":tool")?,
        request.tool.as_str().into_lisp(env)?,
        env.intern(":tool-use-id")?,
        optional_string(env, request.tool_use_id.as_deref())?,
        env.intern(":input")?,
        super::convert::json_value(env, &Json::Object(request.tool_input.clone()))?,
        env.intern(":kind")?,
        super::convert::json_value(env, &kind)?,
        env.intern(":wait-secs")?,
        match request.wait_secs {
            Some(secs) => i64::try_from(secs).unwrap_or(i64::MAX).into_lisp(env)?,
            None => env.intern("nil")?,
        },
    ];
    env.list(&fields[..])
}

/// Turn the gate for the terminal agents' own tools on (ON non-nil) or off. While it is off,
/// the agents' hooks are answered at once that Emacs does not gate, and fall back to the
/// agents' own prompts; turning it off withdraws every waiting gate request (:gate-withdrawn).
/// Return t if it was on. Signals when the server is not running.
#[defun]
fn mcp_set_gating<'e>(env: &'e Env, on: Value<'e>) -> Result<bool> {
    let hub = hub(env)?;
    Ok(hub.set_gating(on.is_not_nil()))
}

/// Answer the gate request KEY with DECISION, a symbol: `allow' (DETAIL nil, or the tool
/// input to run instead as JSON text: an object), `deny' (DETAIL the reason, for the model),
/// `ask' (the agent's own prompt; DETAIL nil or a reason it shows) or `no-opinion' (the agent
/// goes on as if no hook had run: for agent-q's own tools only; a gated call with no rule is
/// `ask', or Gemini with agent-q's policy would run it unasked). Return t if the request was
/// still waiting (a withdrawn or answered one is ignored).
#[defun]
fn mcp_gate_answer<'e>(env: &'e Env, key: Value<'e>, decision: Value<'e>, detail: Value<'e>) -> Result<bool> {
    let key = args::integer(env, key, "KEY")?;
    let decision = match name_list(env, env.list((decision,))?, "DECISION")?.first() {
        Some(name) => name.clone(),
        None => String::new(),
    };
    let detail = if detail.is_not_nil() {
        Some(args::string(env, detail, "DETAIL", args::MAX_TEXT_BYTES)?)
    } else {
        None
    };
    let answer = match (decision.as_str(), detail) {
        ("allow", None) => GateAnswer::Allow { updated_input: None },
        ("allow", Some(text)) => match serde_json::from_str::<Json>(&text) {
            Ok(input @ Json::Object(_)) => GateAnswer::Allow {
                updated_input: Some(input),
            },
            _ => {
                return errors::signal(
                    env,
                    Kind::Generic,
                    "DETAIL of allow must be the updated tool input as a JSON object",
                )
            }
        },
        ("deny", Some(reason)) => GateAnswer::Deny { reason },
        ("deny", None) => return errors::signal(env, Kind::Generic, "deny needs a reason (DETAIL)"),
        ("ask", reason) => GateAnswer::Ask { reason },
        ("no-opinion", _) => GateAnswer::NoOpinion,
        (other, _) => {
            return errors::signal(
                env,
                Kind::Generic,
                format!("DECISION must be allow, deny, ask or no-opinion, not {other}"),
            )
        }
    };
    let Some(hub) = state().as_ref().map(|r| r.hub.clone()) else {
        return Ok(false);
    };
    Ok(hub.complete_gate(u64::try_from(key).unwrap_or(0), answer))
}
