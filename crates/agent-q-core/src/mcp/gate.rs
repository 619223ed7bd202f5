//! The `/gate` route: a terminal agent's hook (`agent-q-mcp hook`) asks whether the agent's own
//! tool call may run, and waits for the driver's answer.
//!
//! # Wire format
//!
//! `POST /gate` on the MCP server, behind the same security layer as `/mcp` (loopback `Host`,
//! no foreign `Origin`, `Authorization: Bearer TOKEN`, the body limits), with a
//! [`GateRequest`] as JSON:
//!
//! ```json
//! {"agent": "claude", "event": "pre-tool", "session_id": "...", "cwd": "/project",
//!  "tool": "Bash", "tool_use_id": "toolu_...", "tool_input": {"command": "git status"}}
//! ```
//!
//! (`agent`: `claude`, `gemini`, `codex`; `event`: `pre-tool`, `permission-request`;
//! `session_id`, `cwd`, `tool_use_id` and `tool_input` optional; a `kind` sent is ignored and
//! derived again from the tool and its input.) Answers:
//!
//! - 200 with a [`GateAnswer`] as JSON: `{"decision":"allow"}` (optionally with
//!   `"updated_input":{...}`), `{"decision":"deny","reason":"..."}`,
//!   `{"decision":"ask","reason":"..."}` (reason optional), `{"decision":"no-opinion"}`;
//! - 400 (text) when the body is not such a request, naming the problem;
//! - 401, 403, 413 from the security layer;
//! - 503 (text) when the request is not queued (gating off, the server stopping, too many
//!   waiting, an input too large) or was withdrawn by Emacs (gating turned off, server stopped);
//! - 504 (text) when no answer came within [`MAX_GATE_WAIT`];
//! - 200 with [`crate::gate::timed_out_answer`] (a deny) when the request's `wait_secs` (the
//!   agent's hook timeout, as the hook knows it) ran out first: the driver gets
//!   [`super::Event::GateTimedOut`].
//!
//! The route waits on a oneshot channel, without polling. If the hook goes away (its
//! connection closes: the agent was interrupted), hyper drops the route's future and the
//! request is withdrawn from the hub ([`super::Event::GateWithdrawn`]).

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;

use super::handler::WithdrawOnDrop;
use super::hub::Hub;
use crate::gate::{told_key, Agent, GateRequest, HookEvent};

/// The path of the gate route.
pub const GATE_ENDPOINT: &str = "/gate";

/// The path of the route Gemini CLI's `AfterTool` hook asks what its model must be told.
pub const TOLD_ENDPOINT: &str = "/gate/told";

/// The path of the turn route: `POST /turn` with a [`crate::gate::TurnNotice`] as JSON
/// (`{"agent": "claude", "session_id": "...", "label": "..."}`), sent by an agent's prompt
/// hook. Answered at once, without waiting for the driver: 204 when queued
/// ([`super::Event::Turn`]), 400 (text) when the body is not such a notice, 503 (text) when it
/// is not queued (gating off, the server stopping, too many queued).
pub const TURN_ENDPOINT: &str = "/turn";

/// The longest a gate request waits for the driver: the user may take their time over a
/// prompt or a review. The agents' own hook timeouts are shorter (600 s by default).
pub const MAX_GATE_WAIT: Duration = Duration::from_secs(3600);

/// What a gate request whose waiter was dropped by the hub hears.
pub const GATE_WITHDRAWN: &str = "Emacs withdrew the request: its MCP server stopped or the gate was turned off";

/// Serve one `POST /gate` with BODY.
pub(crate) async fn serve(hub: Arc<Hub>, body: Bytes) -> Response {
    let request: GateRequest = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(e) => return text(StatusCode::BAD_REQUEST, format!("Bad Request: {e}")),
    };
    let request_wait = request.wait_secs;
    // Gemini's model is told by its AfterTool hook: what to tell is kept once answered.
    let remember =
        (request.agent == Agent::Gemini && request.event == HookEvent::PreTool && crate::gate::may_tell(&request.kind))
            .then(|| request.clone());
    let hub_for_timeout = hub.clone();
    let ticket = match hub.begin_gate(request) {
        Ok(ticket) => ticket,
        Err(reason) => return text(StatusCode::SERVICE_UNAVAILABLE, reason),
    };
    let mut guard = WithdrawOnDrop {
        hub,
        key: ticket.key,
        armed: true,
    };
    // The agent's own hook timeout, when the hook said it: then the call is denied, saying
    // so, rather than left to the agent's silent fallback.
    let agent_wait = request_wait.map(Duration::from_secs).filter(|w| *w < MAX_GATE_WAIT);
    let mut answer_rx = ticket.answer;
    let waited = tokio::time::timeout(agent_wait.unwrap_or(MAX_GATE_WAIT), &mut answer_rx).await;
    let waited = match (waited, agent_wait) {
        (Err(_), Some(wait)) => {
            guard.armed = false;
            hub_for_timeout.time_out_gate(ticket.key, wait.as_secs());
            // Answered just now, or by the timeout: either way the channel holds the answer.
            Ok(answer_rx.await)
        }
        (other, _) => other,
    };
    match waited {
        Ok(Ok(answer)) => {
            guard.armed = false;
            if let Some(request) = remember {
                hub_for_timeout.remember_told(&request, &answer);
            }
            let body = serde_json::to_string(&answer).unwrap_or_else(|_| r#"{"decision":"no-opinion"}"#.into());
            let mut response = Response::new(Body::from(body));
            response
                .headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
            response
        }
        Ok(Err(_)) => {
            guard.armed = false;
            text(StatusCode::SERVICE_UNAVAILABLE, GATE_WITHDRAWN.to_string())
        }
        // The guard withdraws it.
        Err(_) => text(
            StatusCode::GATEWAY_TIMEOUT,
            format!("Emacs did not answer within {} s", MAX_GATE_WAIT.as_secs()),
        ),
    }
}

/// The body of `POST /gate/told`: the call as Gemini CLI's `AfterTool` hook input names it.
#[derive(serde::Deserialize)]
struct ToldRequest {
    #[serde(default)]
    session_id: String,
    tool: String,
    #[serde(default)]
    tool_input: serde_json::Map<String, serde_json::Value>,
}

/// Serve one `POST /gate/told` with BODY: `{"session_id": "...", "tool": "...", "tool_input":
/// {...}}`, the call as it ran. Answers at once, from the server's thread (Emacs is not
/// asked): 200 with `{"context": "..."}`, the words kept for that call by its `BeforeTool`
/// answer (then forgotten), or `{"context": null}`; 400 when the body is not such a request.
pub(crate) async fn serve_told(hub: Arc<Hub>, body: Bytes) -> Response {
    let request: ToldRequest = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(e) => return text(StatusCode::BAD_REQUEST, format!("Bad Request: {e}")),
    };
    let context = told_key(&request.session_id, &request.tool, &request.tool_input).and_then(|key| hub.take_told(&key));
    let mut response = Response::new(Body::from(serde_json::json!({ "context": context }).to_string()));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// Serve one `POST /turn` with BODY (see [`TURN_ENDPOINT`]).
pub(crate) async fn serve_turn(hub: Arc<Hub>, body: Bytes) -> Response {
    let notice: crate::gate::TurnNotice = match serde_json::from_slice(&body) {
        Ok(notice) => notice,
        Err(e) => return text(StatusCode::BAD_REQUEST, format!("Bad Request: {e}")),
    };
    if !notice.is_valid() {
        return text(
            StatusCode::BAD_REQUEST,
            "Bad Request: the session is empty, or the session or the label is too long".into(),
        );
    }
    match hub.note_turn(notice) {
        Ok(()) => {
            let mut response = Response::new(Body::empty());
            *response.status_mut() = StatusCode::NO_CONTENT;
            response
        }
        Err(reason) => text(StatusCode::SERVICE_UNAVAILABLE, reason),
    }
}

fn text(status: StatusCode, message: String) -> Response {
    let mut response = Response::new(Body::from(message));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
