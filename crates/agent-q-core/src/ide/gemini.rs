//! Gemini CLI's IDE companion: an MCP server over Streamable HTTP on `/mcp`, as Gemini CLI's
//! companion specification describes it.
//!
//! - Tools `openDiff {filePath, newContent}`, answered at once (empty content) while Emacs
//!   shows the review; its outcome is sent later as the notification `ide/diffAccepted
//!   {filePath, content}` or `ide/diffRejected {filePath}`; and `closeDiff {filePath}`, which
//!   closes the review without an outcome and answers the JSON text `{"content": TEXT}` with
//!   the review's final text (`null` when no review of that file is open).
//! - The notification `ide/contextUpdate` carries the editor context. Gemini CLI hears
//!   notifications only over the GET stream it opens after `initialized`, so the layer
//!   [`watch_streams`] notices when that stream opens: the latest context is sent on it at once
//!   and Emacs is asked for a fresh one.
//!
//! The server reuses the MCP server's layers: the security layer (loopback Host, localhost
//! Origin, bearer token, body size and shape), the connection gate and the accept loop.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::Router;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, Tool};
use rmcp::service::{NotificationContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::ErrorData;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::handler::{
    absolute, error_result, schema, string_argument, AgentTools, IdeCall, IdeHandler, WithdrawOnDrop,
};
use super::hub::{Agent, Answer, DiffFilter, IdeEvent, IdeHub, Kind, Outgoing};
use crate::mcp::security::{self, Policy, MAX_REQUEST_BODY_BYTES};
use crate::mcp::server::GuardedBody;
use crate::mcp::{connections, ENDPOINT};

/// How long closeDiff waits for Emacs to say what the review held.
const CLOSE_WAIT: Duration = Duration::from_secs(30);

/// How often a session's watcher checks whether its client went away.
const WATCH_INTERVAL: Duration = Duration::from_millis(500);

/// What the handler of a Gemini CLI session adds to [`IdeHandler`].
#[derive(Clone)]
pub(crate) struct GeminiHandler {
    hub: Arc<IdeHub>,
}

/// The `Mcp-Session-Id` of the HTTP request whose parts EXTENSIONS hold.
fn session_of(extensions: &rmcp::model::Extensions) -> Option<String> {
    extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.headers.get("mcp-session-id"))
        .and_then(|value| value.to_str().ok())
        .map(str::to_string)
}

/// The tools Gemini CLI looks for: it uses the IDE's diffs only when both are listed.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "openDiff",
            "Show the user a diff of the proposed new content of a file in Emacs. Answers at once; \
             the user's decision arrives as ide/diffAccepted or ide/diffRejected.",
            schema(json!({
                "type": "object",
                "properties": {
                    "filePath": {"type": "string", "description": "The file's absolute name"},
                    "newContent": {"type": "string", "description": "The proposed new content"}
                },
                "required": ["filePath", "newContent"]
            })),
        ),
        Tool::new(
            "closeDiff",
            "Close the diff of a file in Emacs without a decision; answers {\"content\": TEXT} with \
             the diff's final content, or {\"content\": null} when none is open.",
            schema(json!({
                "type": "object",
                "properties": {"filePath": {"type": "string", "description": "The file's absolute name"}},
                "required": ["filePath"]
            })),
        ),
    ]
}

impl GeminiHandler {
    fn open_diff(&self, call: &IdeCall) -> Result<CallToolResponse, ErrorData> {
        let conn = call.conn;
        let path = absolute(string_argument(&call.arguments, "filePath")?)?.to_string();
        let content = string_argument(&call.arguments, "newContent")?.to_string();
        let (_key, answer) = match self.hub.request_diff(conn, path.clone(), content, None) {
            Ok(requested) => requested,
            Err(why) => return Ok(error_result(why)),
        };
        let hub = self.hub.clone();
        tokio::spawn(async move {
            // A review closed by closeDiff or by the client's leaving has no outcome to tell.
            let Ok(answer) = answer.await else { return };
            let Some(peer) = hub.peer_of(conn) else { return };
            let outgoing = match answer {
                Answer::Accepted(text) => {
                    Outgoing::new(peer, "ide/diffAccepted", json!({"filePath": path, "content": text}))
                }
                _ => Outgoing::new(peer, "ide/diffRejected", json!({"filePath": path})),
            };
            outgoing.send().await;
        });
        Ok(CallToolResult::success(vec![]).into())
    }

    async fn close_diff(&self, call: &IdeCall) -> Result<CallToolResponse, ErrorData> {
        let conn = call.conn;
        let path = absolute(string_argument(&call.arguments, "filePath")?)?.to_string();
        let closed_text = |content: Option<String>| -> CallToolResponse {
            CallToolResult::success(vec![ContentBlock::text(json!({ "content": content }).to_string())]).into()
        };
        if self.hub.drop_diffs(conn, DiffFilter::Path(&path), false) == 0 {
            return Ok(closed_text(None));
        }
        let event_path = path.clone();
        let requested = self
            .hub
            .request(conn, Kind::Other, move |key, agent, client| IdeEvent::CloseDiff {
                key: Some(key),
                agent,
                client,
                path: Some(event_path),
                tab: None,
                all: false,
            });
        let (key, answer) = match requested {
            Ok(requested) => requested,
            Err(why) => return Ok(error_result(why)),
        };
        let _guard = WithdrawOnDrop {
            hub: self.hub.clone(),
            key,
        };
        let content = tokio::select! {
            answer = tokio::time::timeout(CLOSE_WAIT, answer) => match answer {
                Ok(Ok(Answer::Content(content))) => content,
                Ok(Ok(Answer::Accepted(text))) => Some(text),
                _ => None,
            },
            _ = call.context.ct.cancelled() => None,
        };
        Ok(closed_text(content))
    }
}

impl AgentTools for GeminiHandler {
    const INSTRUCTIONS: Option<&'static str> = Some("Emacs as Gemini CLI's IDE: diffs are reviewed in Emacs.");

    const NO_CONNECTION: &'static str = "Emacs cannot take this client: too many IDE clients are connected";

    fn tools() -> Vec<Tool> {
        tools()
    }

    fn connect(&self, name: &str, context: NotificationContext<RoleServer>) -> Option<u64> {
        let session = session_of(&context.extensions);
        let (conn, outgoing) = self.hub.connect(Agent::Gemini, name, session, context.peer.clone())?;
        if let Some(outgoing) = outgoing {
            tokio::spawn(outgoing.send());
        }
        let hub = self.hub.clone();
        let peer = context.peer;
        // rmcp tells a handler nothing when its session ends; its peer's channel closes.
        tokio::spawn(async move {
            while !peer.is_transport_closed() && hub.is_connected(conn) {
                tokio::time::sleep(WATCH_INTERVAL).await;
            }
            hub.disconnect(conn);
        });
        Some(conn)
    }

    async fn call(&self, name: &str, call: IdeCall) -> Result<CallToolResponse, ErrorData> {
        match name {
            "openDiff" => self.open_diff(&call),
            "closeDiff" => self.close_diff(&call).await,
            other => Err(ErrorData::invalid_params(
                format!("unknown tool {other:?}: Emacs's IDE companion has openDiff and closeDiff"),
                None,
            )),
        }
    }
}

/// The layer that notices a session's GET stream opening (then the context is sent on it and
/// Emacs is asked for a fresh one) and closing.
async fn watch_streams(State(hub): State<Arc<IdeHub>>, request: Request, next: Next) -> Response {
    let session = (request.method() == Method::GET)
        .then(|| request.headers().get("mcp-session-id"))
        .flatten()
        .and_then(|value| value.to_str().ok())
        .map(str::to_string);
    let response = next.run(request).await;
    let Some(session) = session.filter(|_| response.status().is_success()) else {
        return response;
    };
    if let Some(outgoing) = hub.session_stream_opened(&session) {
        tokio::spawn(outgoing.send());
    }
    response.map(|inner| {
        GuardedBody::wrap(
            inner,
            OnDrop(Some(Box::new(move || hub.session_stream_closed(&session)))),
        )
    })
}

/// Runs its function when dropped: with the stream's body, when the client closed the stream.
struct OnDrop(Option<Box<dyn FnOnce() + Send>>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(closed) = self.0.take() {
            closed();
        }
    }
}

/// The router of Gemini's companion: rmcp's Streamable HTTP service on [`ENDPOINT`] behind the
/// MCP server's security layers, requiring TOKEN; CT ends its sessions.
pub(crate) fn router(hub: Arc<IdeHub>, token: &str, ct: CancellationToken) -> Router {
    let rmcp_config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(["localhost", "127.0.0.1", "::1"])
        .with_allowed_origins(
            [
                "http://localhost:*",
                "https://localhost:*",
                "http://127.0.0.1:*",
                "https://127.0.0.1:*",
            ]
            .into_iter()
            .chain(["http://[::1]:*", "https://[::1]:*"]),
        )
        .with_max_request_body_bytes(MAX_REQUEST_BODY_BYTES)
        // Gemini CLI parses every SSE event's data as JSON: no empty priming events.
        .with_sse_retry(None)
        .with_cancellation_token(ct);
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.sse_retry = None;
    let factory_hub = hub.clone();
    let service = StreamableHttpService::new(
        move || {
            Ok(IdeHandler::new(GeminiHandler {
                hub: factory_hub.clone(),
            }))
        },
        Arc::new(sessions),
        rmcp_config,
    );
    let checks = security::host_checks(service.clone());
    Router::new()
        .route_service(ENDPOINT, service)
        .layer(middleware::from_fn_with_state(hub, watch_streams))
        .layer(middleware::from_fn(security::shape_guard))
        .layer(middleware::from_fn(connections::prove))
        .layer(middleware::from_fn_with_state(
            Arc::new(Policy::new(token, Some(checks))),
            security::guard,
        ))
}
