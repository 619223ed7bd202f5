//! Claude Code's IDE companion: an MCP server over WebSocket, as Claude Code 2.1 expects it
//! (`ws://127.0.0.1:PORT/`, subprotocol `mcp`, one JSON-RPC message per text frame).
//!
//! - The handshake is refused before the upgrade unless the header
//!   `x-claude-code-ide-authorization` carries the token (401), `Host` names the loopback
//!   interface (403) and there is no `Origin` (403: Claude Code sends none, and a browser page
//!   can open a WebSocket to 127.0.0.1 from any site). At most [`MAX_HANDSHAKES`] handshakes
//!   run at once, each within [`HANDSHAKE_TIMEOUT`]; at most [`super::MAX_CLIENTS`] sockets stay
//!   open; a message is at most [`MAX_MESSAGE_BYTES`] and is refused unread when its JSON
//!   holds too many values or nests too deep (the MCP server's limits).
//! - Tools: `openDiff` waits until Emacs answers (`FILE_SAVED` and the final text, or
//!   `DIFF_REJECTED`), sending progress meanwhile when asked to; `close_tab {tab_name}` and
//!   `closeAllDiffTabs` drop the matching waiting openDiffs (answered `DIFF_REJECTED`, which
//!   Claude Code ignores by then) and tell Emacs to close them; `getDiagnostics {uri?}` and
//!   `openFile {filePath, ...}` ask Emacs. Anything else is an MCP error.
//! - The notification `selection_changed` carries the active file's selection, sent after
//!   Claude Code's `ide_connected` notification and whenever it changes.
//!
//! rmcp has no WebSocket server transport: tokio-tungstenite makes the socket, and rmcp's
//! Sink/Stream transport runs the protocol over it.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use futures::{future, SinkExt, StreamExt};
use rmcp::model::{
    CallToolResponse, CallToolResult, ClientJsonRpcMessage, ContentBlock, CustomNotification, JsonObject,
    ProgressNotificationParam, ServerJsonRpcMessage, Tool,
};
use rmcp::service::{NotificationContext, RoleServer};
use rmcp::{ErrorData, ServiceExt};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::{header, HeaderValue, StatusCode};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_util::sync::CancellationToken;

use super::context::file_url;
use super::handler::{
    absolute, error_result, schema, string_argument, AgentTools, IdeCall, IdeHandler, WithdrawOnDrop,
};
use super::hub::{Agent, Answer, DiffFilter, FileDiagnostics, IdeEvent, IdeHub, Kind, MAX_CLIENTS};
use crate::mcp::security::Shape;

/// The header that carries the token.
pub const AUTH_HEADER: &str = "x-claude-code-ide-authorization";

/// The largest WebSocket message accepted, in bytes (the MCP server's request body limit).
pub const MAX_MESSAGE_BYTES: usize = crate::mcp::MAX_REQUEST_BODY_BYTES;

/// The most handshakes under way at once; more connections are closed at once.
pub const MAX_HANDSHAKES: usize = 16;

/// How long a connection may take to complete its handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a client may take to send `initialize` after the upgrade.
const INITIALIZE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long getDiagnostics and openFile wait for Emacs.
const ASK_WAIT: Duration = Duration::from_secs(10);

/// How long after `ide_connected` Claude Code starts taking `selection_changed` into account.
const SELECTION_READY_DELAY: Duration = Duration::from_secs(2);

/// The interval of progress notifications while openDiff waits (Claude Code abandons a call
/// silent for about 300 s).
const PROGRESS_INTERVAL: Duration = Duration::from_secs(15);

/// What the handler of a Claude Code connection adds to [`IdeHandler`].
#[derive(Clone)]
pub(crate) struct ClaudeHandler {
    hub: Arc<IdeHub>,
    /// Ends the connection (when the hub refuses it).
    ct: CancellationToken,
}

/// The tools Claude Code calls. Only getDiagnostics reaches its model (as
/// `mcp__ide__getDiagnostics`); the others are for Claude Code itself.
pub fn tools() -> Vec<Tool> {
    let string = |description: &str| json!({"type": "string", "description": description});
    vec![
        Tool::new(
            "openDiff",
            "Show the proposed new content of a file as a diff in Emacs and wait for the user: \
             FILE_SAVED and the final text, or DIFF_REJECTED.",
            schema(json!({
                "type": "object",
                "properties": {
                    "old_file_path": string("The file's absolute name"),
                    "new_file_path": string("The file's absolute name after the edit"),
                    "new_file_contents": string("The whole proposed content"),
                    "tab_name": string("The name of the review")
                },
                "required": ["new_file_path", "new_file_contents", "tab_name"]
            })),
        ),
        Tool::new(
            "close_tab",
            "Close the review named tab_name.",
            schema(json!({
                "type": "object",
                "properties": {"tab_name": string("The name of the review")},
                "required": ["tab_name"]
            })),
        ),
        Tool::new(
            "closeAllDiffTabs",
            "Close every review of this client.",
            schema(json!({"type": "object", "properties": {}})),
        ),
        Tool::new(
            "getDiagnostics",
            "Get the diagnostics (errors, warnings) Emacs shows for a file, or for every file.",
            schema(json!({
                "type": "object",
                "properties": {"uri": string("The file's file:// URL; all files when omitted")}
            })),
        ),
        Tool::new(
            "openFile",
            "Open a file in Emacs.",
            schema(json!({
                "type": "object",
                "properties": {
                    "filePath": string("The file's absolute name"),
                    "startText": string("Text where the selection starts"),
                    "endText": string("Text where the selection ends")
                },
                "required": ["filePath"]
            })),
        ),
    ]
}

fn text_result(parts: &[&str]) -> CallToolResponse {
    CallToolResult::success(parts.iter().map(|part| ContentBlock::text(part.to_string())).collect()).into()
}

/// An optional string argument.
fn optional_string(arguments: &JsonObject, name: &str) -> Option<String> {
    arguments
        .get(name)
        .and_then(Value::as_str)
        .filter(|text| !text.is_empty())
        .map(str::to_string)
}

/// The protocol's name of Emacs's SEVERITY: Claude Code 2.1 knows "Error", "Warning", "Info"
/// and "Hint" (it sorts and marks diagnostics by these names; any other reads as a bullet).
fn severity(severity: &str) -> &'static str {
    match severity {
        "error" => "Error",
        "warning" => "Warning",
        "hint" => "Hint",
        _ => "Info",
    }
}

/// The JSON text getDiagnostics answers: an array of `{uri, diagnostics: [{message, severity,
/// source, code, range}]}`, lines and characters 0-based.
pub fn diagnostics_json(files: &[FileDiagnostics]) -> String {
    let point = |line: i64, column: i64| json!({"line": line.saturating_sub(1).max(0), "character": column.saturating_sub(1).max(0)});
    let files: Vec<Value> = files
        .iter()
        .map(|file| {
            let diagnostics: Vec<Value> = file
                .diagnostics
                .iter()
                .map(|d| {
                    let mut entry = json!({
                        "message": d.message,
                        "severity": severity(&d.severity),
                        "range": {"start": point(d.line, d.column), "end": point(d.end_line, d.end_column)},
                    });
                    if let Some(source) = &d.source {
                        entry["source"] = json!(source);
                    }
                    if let Some(code) = &d.code {
                        entry["code"] = json!(code);
                    }
                    entry
                })
                .collect();
            json!({"uri": file_url(&file.path), "diagnostics": diagnostics})
        })
        .collect();
    Value::Array(files).to_string()
}

impl ClaudeHandler {
    async fn open_diff(&self, call: &IdeCall) -> Result<CallToolResponse, ErrorData> {
        let (conn, arguments, context) = (call.conn, &call.arguments, &call.context);
        let path = match string_argument(arguments, "new_file_path") {
            Ok(path) => path,
            Err(_) => string_argument(arguments, "old_file_path")?,
        };
        let path = absolute(path)?.to_string();
        let content = string_argument(arguments, "new_file_contents")?.to_string();
        let tab = optional_string(arguments, "tab_name");
        let (key, mut answer) = match self.hub.request_diff(conn, path, content, tab) {
            Ok(requested) => requested,
            Err(why) => return Ok(error_result(why)),
        };
        let _guard = WithdrawOnDrop {
            hub: self.hub.clone(),
            key,
        };
        let token = context.meta.get_progress_token();
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_INTERVAL, PROGRESS_INTERVAL);
        let mut sent = 0u32;
        loop {
            tokio::select! {
                biased;
                outcome = &mut answer => {
                    return Ok(match outcome {
                        Ok(Answer::Accepted(text)) => text_result(&["FILE_SAVED", &text]),
                        // Rejected, closed by close_tab, or the companion stopping.
                        _ => text_result(&["DIFF_REJECTED"]),
                    });
                }
                _ = context.ct.cancelled() => return Ok(text_result(&["DIFF_REJECTED"])),
                _ = ticker.tick(), if token.is_some() => {
                    if let Some(token) = &token {
                        sent += 1;
                        let params = ProgressNotificationParam::new(token.clone(), f64::from(sent))
                            .with_message("waiting for the review in Emacs");
                        let _ = context.peer.notify_progress(params).await;
                    }
                }
            }
        }
    }

    /// Ask Emacs (EVENT) and wait up to [`ASK_WAIT`] for the answer.
    async fn ask(
        &self,
        call: &IdeCall,
        event: impl FnOnce(u64, Agent, String) -> IdeEvent,
    ) -> Result<Option<Answer>, String> {
        let (key, answer) = self.hub.request(call.conn, Kind::Other, event)?;
        let _guard = WithdrawOnDrop {
            hub: self.hub.clone(),
            key,
        };
        Ok(tokio::select! {
            answer = tokio::time::timeout(ASK_WAIT, answer) => answer.ok().and_then(Result::ok),
            _ = call.context.ct.cancelled() => None,
        })
    }
}

impl AgentTools for ClaudeHandler {
    const NO_CONNECTION: &'static str = "The client has not completed initialization";

    fn tools() -> Vec<Tool> {
        tools()
    }

    fn connect(&self, name: &str, context: NotificationContext<RoleServer>) -> Option<u64> {
        let connected = self.hub.connect(Agent::Claude, name, None, context.peer);
        if connected.is_none() {
            self.ct.cancel();
        }
        connected.map(|(conn, _)| conn)
    }

    fn notified(&self, conn: Option<u64>, notification: &CustomNotification) {
        // Claude Code says ide_connected, but ignores a selection_changed that arrives at once
        // (2.1.197): the context is sent once it listens, and then on every change.
        let Some(conn) = conn.filter(|_| notification.method == "ide_connected") else {
            return;
        };
        let hub = self.hub.clone();
        tokio::spawn(async move {
            tokio::time::sleep(SELECTION_READY_DELAY).await;
            if let Some(outgoing) = hub.stream_opened(conn) {
                outgoing.send().await;
            }
        });
    }

    async fn call(&self, name: &str, call: IdeCall) -> Result<CallToolResponse, ErrorData> {
        let (conn, arguments) = (call.conn, &call.arguments);
        match name {
            "openDiff" => self.open_diff(&call).await,
            "close_tab" => {
                let tab = string_argument(arguments, "tab_name")?;
                self.hub.drop_diffs(conn, DiffFilter::Tab(tab), true);
                Ok(text_result(&["TAB_CLOSED"]))
            }
            "closeAllDiffTabs" => {
                let closed = self.hub.drop_diffs(conn, DiffFilter::All, true);
                Ok(text_result(&[&format!("CLOSED_{closed}_DIFF_TABS")]))
            }
            "getDiagnostics" => {
                let uri = optional_string(arguments, "uri");
                let asked = self
                    .ask(&call, move |key, agent, client| IdeEvent::Diagnostics {
                        key,
                        agent,
                        client,
                        uri,
                    })
                    .await;
                Ok(match asked {
                    Ok(Some(Answer::Diagnostics(files))) => text_result(&[&diagnostics_json(&files)]),
                    Ok(_) => text_result(&["[]"]),
                    Err(why) => error_result(why),
                })
            }
            "openFile" => {
                let path = absolute(string_argument(arguments, "filePath")?)?.to_string();
                let start_text = optional_string(arguments, "startText");
                let end_text = optional_string(arguments, "endText");
                let shown = path.clone();
                let asked = self
                    .ask(&call, move |key, agent, client| IdeEvent::OpenFile {
                        key,
                        agent,
                        client,
                        path,
                        start_text,
                        end_text,
                    })
                    .await;
                Ok(match asked {
                    Ok(Some(Answer::Opened(Ok(())))) => text_result(&[&format!("Opened file: {shown}")]),
                    Ok(Some(Answer::Opened(Err(why)))) => error_result(why),
                    Ok(_) => error_result("Emacs did not open the file in time"),
                    Err(why) => error_result(why),
                })
            }
            other => Err(ErrorData::invalid_params(
                format!(
                    "unknown tool {other:?}: Emacs's IDE companion has openDiff, close_tab, closeAllDiffTabs, \
                     getDiagnostics and openFile"
                ),
                None,
            )),
        }
    }
}

/// Whether the `Host` header value names the loopback interface (any port).
fn loopback_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().map(|inner| format!("[{inner}]"))
    } else {
        host.split(':').next().map(str::to_string)
    };
    matches!(name.as_deref(), Some("127.0.0.1" | "localhost" | "[::1]"))
}

/// Compare A and B in time that depends only on their lengths.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn refuse(status: StatusCode, message: &str) -> ErrorResponse {
    let mut response = ErrorResponse::new(Some(format!("{message}\n")));
    *response.status_mut() = status;
    response
}

/// Check a handshake REQUEST against TOKEN (see the module's documentation) and accept the
/// `mcp` subprotocol. The result's type is tungstenite's callback's.
#[allow(clippy::result_large_err)]
pub(crate) fn check_handshake(
    token: &str,
    request: &Request,
    mut response: Response,
) -> Result<Response, ErrorResponse> {
    let headers = request.headers();
    if !headers
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .is_some_and(loopback_host)
    {
        return Err(refuse(
            StatusCode::FORBIDDEN,
            "Forbidden: Host is not a loopback address",
        ));
    }
    if headers.contains_key(header::ORIGIN) {
        return Err(refuse(
            StatusCode::FORBIDDEN,
            "Forbidden: requests from web pages are refused",
        ));
    }
    let mut presented = headers.get_all(AUTH_HEADER).iter();
    let authorized = match (presented.next(), presented.next()) {
        (Some(value), None) => constant_time_eq(value.as_bytes(), token.as_bytes()),
        _ => false,
    };
    if !authorized {
        return Err(refuse(
            StatusCode::UNAUTHORIZED,
            "Unauthorized: send x-claude-code-ide-authorization with the token of the lock file",
        ));
    }
    let offers_mcp = headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|protocol| protocol.trim() == "mcp");
    if offers_mcp {
        response
            .headers_mut()
            .insert(header::SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_static("mcp"));
    }
    Ok(response)
}

/// Parse one text or binary frame as a client message, refusing (`None`) what is not one or
/// holds more values or nesting than the MCP server accepts.
fn parse_frame(bytes: &[u8]) -> Option<ClientJsonRpcMessage> {
    let mut shape = Shape::default();
    shape.feed(bytes).ok()?;
    serde_json::from_slice(bytes).ok()
}

/// Accept WebSocket connections on LISTENER for HUB with TOKEN until STOP is cancelled; then
/// close them all and return.
pub(crate) async fn serve(listener: TcpListener, hub: Arc<IdeHub>, token: Arc<str>, stop: CancellationToken) {
    let tracker = tokio_util::task::TaskTracker::new();
    let handshakes = Arc::new(Semaphore::new(MAX_HANDSHAKES));
    let sockets = Arc::new(Semaphore::new(MAX_CLIENTS));
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _)) = accepted else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let (Ok(handshake), Ok(socket)) = (
            handshakes.clone().try_acquire_owned(),
            sockets.clone().try_acquire_owned(),
        ) else {
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let (hub, token, stop) = (hub.clone(), token.clone(), stop.clone());
        tracker.spawn(async move {
            let config = WebSocketConfig::default()
                .max_message_size(Some(MAX_MESSAGE_BYTES))
                .max_frame_size(Some(MAX_MESSAGE_BYTES));
            #[allow(clippy::result_large_err)]
            let check = move |request: &Request, response: Response| check_handshake(&token, request, response);
            let upgraded = tokio::time::timeout(
                HANDSHAKE_TIMEOUT,
                tokio_tungstenite::accept_hdr_async_with_config(stream, check, Some(config)),
            )
            .await;
            drop(handshake);
            let Ok(Ok(socket_stream)) = upgraded else { return };
            run_connection(socket_stream, hub, stop).await;
            drop(socket);
        });
    }
    drop(listener);
    tracker.close();
    tracker.wait().await;
}

/// Serve one upgraded connection until it closes or STOP is cancelled.
async fn run_connection(
    socket: tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>,
    hub: Arc<IdeHub>,
    stop: CancellationToken,
) {
    let (sink, stream) = socket.split();
    let sink = sink.with(|message: ServerJsonRpcMessage| {
        future::ready(
            serde_json::to_string(&message)
                .map(Message::text)
                .map_err(|e| WsError::Io(io::Error::other(e))),
        )
    });
    let stream = stream
        .take_while(|frame| future::ready(frame.is_ok()))
        .filter_map(|frame| {
            future::ready(match frame {
                Ok(Message::Text(text)) => parse_frame(text.as_bytes()),
                Ok(Message::Binary(bytes)) => parse_frame(&bytes),
                _ => None,
            })
        });
    let ct = stop.child_token();
    let handler = IdeHandler::new(ClaudeHandler {
        hub: hub.clone(),
        ct: ct.clone(),
    });
    let conn = handler.connection();
    let started = tokio::time::timeout(
        INITIALIZE_TIMEOUT,
        handler.serve_with_ct((Box::pin(sink), Box::pin(stream)), ct.clone()),
    )
    .await;
    if let Ok(Ok(running)) = started {
        let _ = running.waiting().await;
    }
    if let Some(&conn) = conn.get() {
        hub.disconnect(conn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ide::hub::Diagnostic;

    fn diagnostic(severity: &str, code: Option<&str>) -> Diagnostic {
        Diagnostic {
            message: format!("a {severity}"),
            severity: severity.into(),
            source: Some("checker".into()),
            code: code.map(str::to_string),
            line: 2,
            column: 6,
            end_line: 2,
            end_column: 11,
        }
    }

    #[test]
    fn diagnostics_use_claude_codes_severity_names_and_zero_based_ranges() {
        let files = [FileDiagnostics {
            path: "/work/a b.txt".into(),
            diagnostics: ["error", "warning", "info", "hint"]
                .iter()
                .map(|s| diagnostic(s, (*s == "error").then_some("E1")))
                .collect(),
        }];
        let answer: Value = serde_json::from_str(&diagnostics_json(&files)).expect("JSON");
        assert_eq!(answer[0]["uri"], "file:///work/a%20b.txt");
        let diagnostics = answer[0]["diagnostics"].as_array().expect("array");
        let severities: Vec<&str> = diagnostics.iter().filter_map(|d| d["severity"].as_str()).collect();
        assert_eq!(severities, ["Error", "Warning", "Info", "Hint"]);
        assert_eq!(
            diagnostics[0],
            json!({"message": "a error", "severity": "Error", "source": "checker", "code": "E1",
                   "range": {"start": {"line": 1, "character": 5}, "end": {"line": 1, "character": 10}}})
        );
        assert!(diagnostics[1].get("code").is_none());
    }
}
