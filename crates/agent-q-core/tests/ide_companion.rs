//! The IDE companions driven by real clients over real sockets: Gemini's by rmcp's own client
//! over Streamable HTTP, Claude's by a tokio-tungstenite client speaking as Claude Code does.
//! A thread-free driver plays Emacs: it polls the hub's events and answers them.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_q_core::ide::{Answer, Companion, Diagnostic, EditorContext, FileDiagnostics, IdeEvent, IdeHub, OpenFile};
use agent_q_core::mcp::make_token;
use futures::{SinkExt, StreamExt};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ContentBlock, CustomNotification,
    Implementation,
};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

const PATIENCE: Duration = Duration::from_secs(10);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

struct Setup {
    companion: Companion,
    hub: Arc<IdeHub>,
    gemini_token: String,
    claude_token: String,
}

fn start() -> Setup {
    let hub = IdeHub::new(Box::new(|| {}));
    let gemini_token = make_token().unwrap();
    let claude_token = make_token().unwrap();
    let companion = Companion::start(hub.clone(), &gemini_token, &claude_token).unwrap();
    Setup {
        companion,
        hub,
        gemini_token,
        claude_token,
    }
}

/// Wait until the hub queues an event PICK accepts; the events before it are dropped.
async fn next_event<T>(hub: &IdeHub, mut pick: impl FnMut(&IdeEvent) -> Option<T>) -> T {
    let deadline = Instant::now() + PATIENCE;
    loop {
        for event in hub.take_events() {
            if let Some(found) = pick(&event) {
                return found;
            }
        }
        assert!(Instant::now() < deadline, "no such event came");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn context(path: &str, selected: Option<&str>) -> EditorContext {
    EditorContext::new(vec![OpenFile {
        path: path.to_string(),
        timestamp: 1000,
        active: true,
        line: 3,
        column: 0,
        selected: selected.map(str::to_string),
        region: None,
    }])
}

// ---------------------------------------------------------------- Gemini

#[derive(Clone)]
struct GeminiClient {
    notes: mpsc::UnboundedSender<CustomNotification>,
}

impl ClientHandler for GeminiClient {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("gemini-cli-test", "0.61.0"),
        )
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.notes.send(notification);
    }
}

async fn gemini(
    port: u16,
    token: &str,
) -> (
    RunningService<RoleClient, GeminiClient>,
    mpsc::UnboundedReceiver<CustomNotification>,
) {
    let (notes, received) = mpsc::unbounded_channel();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url).auth_header(token),
    );
    let client = GeminiClient { notes }.serve(transport).await.expect("client connects");
    (client, received)
}

/// The next notification named METHOD.
async fn next_note(notes: &mut mpsc::UnboundedReceiver<CustomNotification>, method: &str) -> Value {
    loop {
        let note = tokio::time::timeout(PATIENCE, notes.recv())
            .await
            .unwrap_or_else(|_| panic!("no {method} came"))
            .expect("client alive");
        if note.method == method {
            return note.params.unwrap_or(Value::Null);
        }
    }
}

fn arguments(value: Value) -> serde_json::Map<String, Value> {
    value.as_object().unwrap().clone()
}

fn texts(result: &CallToolResult) -> Vec<String> {
    result
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(text) => text.text.clone(),
            other => panic!("not text: {other:?}"),
        })
        .collect()
}

#[test]
fn gemini_lists_open_diff_and_close_diff_and_refuses_unknown_tools() {
    let setup = start();
    runtime().block_on(async {
        let (client, _notes) = gemini(setup.companion.gemini_port(), &setup.gemini_token).await;
        let names: Vec<String> = client
            .list_all_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|tool| tool.name.to_string())
            .collect();
        assert_eq!(names, ["openDiff", "closeDiff"]);
        let unknown = client
            .call_tool(CallToolRequestParams::new("getDiagnostics").with_arguments(arguments(json!({}))))
            .await;
        assert!(unknown.is_err(), "an MCP error, not a result: {unknown:?}");
        client.cancel().await.unwrap();
    });
}

#[test]
fn gemini_open_diff_answers_at_once_and_the_outcome_arrives_as_a_notification() {
    let setup = start();
    let hub = setup.hub.clone();
    runtime().block_on(async {
        let (client, mut notes) = gemini(setup.companion.gemini_port(), &setup.gemini_token).await;
        let (agent, name) = next_event(&hub, |event| match event {
            IdeEvent::Connected { agent, client } => Some((*agent, client.clone())),
            _ => None,
        })
        .await;
        assert_eq!((agent.name(), name.as_str()), ("gemini", "gemini-cli-test"));

        let opened = client
            .call_tool(
                CallToolRequestParams::new("openDiff")
                    .with_arguments(arguments(json!({"filePath": "/w/a.txt", "newContent": "new\n"}))),
            )
            .await
            .unwrap();
        assert_ne!(opened.is_error, Some(true));
        assert!(opened.content.is_empty(), "content: [] on success");
        let key = next_event(&hub, |event| match event {
            IdeEvent::OpenDiff {
                key,
                path,
                content,
                tab,
                ..
            } => {
                assert_eq!((path.as_str(), content.as_str(), tab), ("/w/a.txt", "new\n", &None));
                Some(*key)
            }
            _ => None,
        })
        .await;
        assert!(hub.answer(key, Answer::Accepted("new, edited\n".into())));
        assert!(!hub.answer(key, Answer::Accepted("again".into())), "answered once");
        let accepted = next_note(&mut notes, "ide/diffAccepted").await;
        assert_eq!(accepted, json!({"filePath": "/w/a.txt", "content": "new, edited\n"}));

        client
            .call_tool(
                CallToolRequestParams::new("openDiff")
                    .with_arguments(arguments(json!({"filePath": "/w/b.txt", "newContent": "b"}))),
            )
            .await
            .unwrap();
        let key = next_event(&hub, |event| match event {
            IdeEvent::OpenDiff { key, .. } => Some(*key),
            _ => None,
        })
        .await;
        assert!(hub.answer(key, Answer::Rejected(None)));
        let rejected = next_note(&mut notes, "ide/diffRejected").await;
        assert_eq!(rejected, json!({"filePath": "/w/b.txt"}));

        let relative = client
            .call_tool(
                CallToolRequestParams::new("openDiff")
                    .with_arguments(arguments(json!({"filePath": "a.txt", "newContent": "b"}))),
            )
            .await;
        assert!(relative.is_err(), "a relative file name is refused");
        client.cancel().await.unwrap();
    });
}

#[test]
fn gemini_close_diff_answers_the_final_content_or_null() {
    let setup = start();
    let hub = setup.hub.clone();
    runtime().block_on(async {
        let (client, mut notes) = gemini(setup.companion.gemini_port(), &setup.gemini_token).await;
        let close =
            |path: &str| CallToolRequestParams::new("closeDiff").with_arguments(arguments(json!({"filePath": path})));
        let none = client.call_tool(close("/w/none.txt")).await.unwrap();
        assert_eq!(texts(&none), [r#"{"content":null}"#]);

        client
            .call_tool(
                CallToolRequestParams::new("openDiff")
                    .with_arguments(arguments(json!({"filePath": "/w/a.txt", "newContent": "proposed"}))),
            )
            .await
            .unwrap();
        let open_key = next_event(&hub, |event| match event {
            IdeEvent::OpenDiff { key, .. } => Some(*key),
            _ => None,
        })
        .await;
        let closing = tokio::spawn({
            let client = client.peer().clone();
            async move { client.call_tool(close("/w/a.txt")).await }
        });
        let close_key = next_event(&hub, |event| match event {
            IdeEvent::CloseDiff {
                key: Some(key),
                path,
                all,
                ..
            } => {
                assert_eq!((path.as_deref(), *all), (Some("/w/a.txt"), false));
                Some(*key)
            }
            _ => None,
        })
        .await;
        assert!(
            !hub.answer(open_key, Answer::Accepted("late".into())),
            "the closed review's outcome is no longer awaited"
        );
        assert!(hub.answer(close_key, Answer::Content(Some("final \"text\"".into()))));
        let closed = closing.await.unwrap().unwrap();
        assert_eq!(texts(&closed), [r#"{"content":"final \"text\""}"#]);
        let value: Value = serde_json::from_str(&texts(&closed)[0]).unwrap();
        assert_eq!(value["content"], "final \"text\"");
        // No outcome is sent for the closed review.
        assert!(
            tokio::time::timeout(Duration::from_millis(300), next_note(&mut notes, "ide/diffAccepted"))
                .await
                .is_err()
        );
        client.cancel().await.unwrap();
    });
}

#[test]
fn gemini_context_reaches_open_streams_and_is_resent_when_a_stream_opens() {
    let setup = start();
    let hub = setup.hub.clone();
    // Set before any client exists: it must not be lost.
    setup.companion.set_context(context("/w/first.txt", Some("picked")));
    runtime().block_on(async {
        let (client, mut notes) = gemini(setup.companion.gemini_port(), &setup.gemini_token).await;
        let first = next_note(&mut notes, "ide/contextUpdate").await;
        assert_eq!(
            first,
            json!({"workspaceState": {"openFiles": [{"path": "/w/first.txt", "timestamp": 1000, "isActive": true,
                                                     "cursor": {"line": 3, "character": 1},
                                                     "selectedText": "picked"}],
                                      "isTrusted": true}})
        );
        next_event(&hub, |event| {
            matches!(event, IdeEvent::ContextWanted { .. }).then_some(())
        })
        .await;
        let streaming = hub.clients();
        assert_eq!(streaming.len(), 1);
        assert!(streaming[0].stream, "the GET stream is open");

        setup.companion.set_context(context("/w/second.txt", None));
        let second = next_note(&mut notes, "ide/contextUpdate").await;
        assert_eq!(second["workspaceState"]["openFiles"][0]["path"], "/w/second.txt");
        assert!(second["workspaceState"]["openFiles"][0].get("selectedText").is_none());
        client.cancel().await.unwrap();
        next_event(&hub, |event| {
            matches!(event, IdeEvent::Disconnected { .. }).then_some(())
        })
        .await;
        assert!(hub.clients().is_empty());
    });
}

/// A raw HTTP/1.0 POST to /mcp on PORT with HEADERS; returns the status.
fn raw_post(port: u16, headers: &[(&str, &str)]) -> u16 {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}"#;
    let mut request = format!(
        "POST /mcp HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap()
}

#[test]
fn gemini_refuses_a_wrong_or_missing_token() {
    let setup = start();
    let port = setup.companion.gemini_port();
    let wrong = format!("Bearer {}", make_token().unwrap());
    assert_eq!(raw_post(port, &[("Authorization", &wrong)]), 401);
    assert_eq!(raw_post(port, &[]), 401);
    let claude_token = format!("Bearer {}", setup.claude_token);
    assert_eq!(
        raw_post(port, &[("Authorization", &claude_token)]),
        401,
        "each server has its token"
    );
    let right = format!("Bearer {}", setup.gemini_token);
    assert_eq!(raw_post(port, &[("Authorization", &right)]), 200);
}

// ---------------------------------------------------------------- Claude

type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn claude_connect(port: u16, token: Option<&str>, origin: Option<&str>) -> Result<Socket, WsError> {
    let mut request = format!("ws://127.0.0.1:{port}").into_client_request().unwrap();
    let headers = request.headers_mut();
    headers.insert("Sec-WebSocket-Protocol", HeaderValue::from_static("mcp"));
    if let Some(token) = token {
        headers.insert("X-Claude-Code-Ide-Authorization", HeaderValue::from_str(token).unwrap());
    }
    if let Some(origin) = origin {
        headers.insert("Origin", HeaderValue::from_str(origin).unwrap());
    }
    let (socket, response) = tokio_tungstenite::connect_async(request).await?;
    assert_eq!(
        response
            .headers()
            .get("sec-websocket-protocol")
            .map(|v| v.to_str().unwrap()),
        Some("mcp")
    );
    Ok(socket)
}

/// A Claude Code stand-in: sends requests and collects what the server sends.
struct Claude {
    socket: Socket,
    next_id: u64,
    notes: Vec<Value>,
}

impl Claude {
    async fn send(&mut self, message: Value) {
        self.socket.send(Message::text(message.to_string())).await.unwrap();
    }

    async fn request(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        id
    }

    /// The response to request ID; other messages met meanwhile are kept in `notes`.
    async fn response(&mut self, id: u64) -> Value {
        if let Some(index) = self.notes.iter().position(|note| note.get("id") == Some(&json!(id))) {
            return self.notes.remove(index);
        }
        loop {
            let message = self.receive().await;
            if message.get("id") == Some(&json!(id)) {
                return message;
            }
            self.notes.push(message);
        }
    }

    async fn receive(&mut self) -> Value {
        loop {
            let frame = tokio::time::timeout(PATIENCE, self.socket.next())
                .await
                .expect("the server answers")
                .expect("the socket is open")
                .unwrap();
            if let Message::Text(text) = frame {
                return serde_json::from_str(text.as_str()).unwrap();
            }
        }
    }

    /// The next notification named METHOD (kept ones first).
    async fn notification(&mut self, method: &str) -> Value {
        if let Some(index) = self.notes.iter().position(|note| note["method"] == method) {
            return self.notes.remove(index);
        }
        loop {
            let message = self.receive().await;
            if message["method"] == method {
                return message;
            }
        }
    }

    async fn call(&mut self, name: &str, arguments: Value) -> u64 {
        self.request(
            "tools/call",
            json!({"name": name, "arguments": arguments, "_meta": {"progressToken": self.next_id + 100}}),
        )
        .await
    }

    /// Connect and go through Claude Code's opening: initialize, initialized, ide_connected.
    async fn open(port: u16, token: &str) -> Claude {
        let socket = claude_connect(port, Some(token), None).await.expect("upgraded");
        let mut claude = Claude {
            socket,
            next_id: 0,
            notes: Vec::new(),
        };
        let id = claude
            .request(
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": {"roots": {}, "elicitation": {}},
                       "clientInfo": {"name": "claude-code", "title": "Claude Code", "version": "2.1.197"}}),
            )
            .await;
        let initialized = claude.response(id).await;
        assert_eq!(initialized["result"]["protocolVersion"], "2025-11-25");
        assert!(initialized["result"]["capabilities"]["tools"].is_object());
        claude
            .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        claude
            .send(json!({"jsonrpc": "2.0", "method": "ide_connected", "params": {"pid": 4242}}))
            .await;
        claude
    }
}

fn result_texts(response: &Value) -> Vec<String> {
    response["result"]["content"]
        .as_array()
        .unwrap_or_else(|| panic!("no content in {response}"))
        .iter()
        .map(|part| part["text"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn claude_handshake_without_the_right_header_is_refused_before_the_upgrade() {
    let setup = start();
    let port = setup.companion.claude_port();
    runtime().block_on(async {
        let status = |result: Result<Socket, WsError>| match result {
            Err(WsError::Http(response)) => response.status().as_u16(),
            Err(other) => panic!("not an HTTP refusal: {other}"),
            Ok(_) => panic!("upgraded"),
        };
        assert_eq!(status(claude_connect(port, None, None).await), 401);
        let wrong = make_token().unwrap();
        assert_eq!(status(claude_connect(port, Some(&wrong), None).await), 401);
        assert_eq!(
            status(claude_connect(port, Some(&setup.gemini_token), None).await),
            401,
            "each server has its token"
        );
        assert_eq!(
            status(claude_connect(port, Some(&setup.claude_token), Some("https://evil.example")).await),
            403,
            "a web page cannot connect"
        );
        assert!(claude_connect(port, Some(&setup.claude_token), None).await.is_ok());
    });
}

#[test]
fn claude_lists_its_tools_and_refuses_unknown_ones() {
    let setup = start();
    runtime().block_on(async {
        let mut claude = Claude::open(setup.companion.claude_port(), &setup.claude_token).await;
        let id = claude.request("tools/list", json!({})).await;
        let listed = claude.response(id).await;
        let names: Vec<&str> = listed["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "openDiff",
                "close_tab",
                "closeAllDiffTabs",
                "getDiagnostics",
                "openFile"
            ]
        );
        let id = claude.call("getWorkspaceFolders", json!({})).await;
        let unknown = claude.response(id).await;
        assert!(
            unknown["error"]["message"]
                .as_str()
                .unwrap()
                .contains("getWorkspaceFolders"),
            "{unknown}"
        );
        // Not JSON: dropped, and the connection still serves.
        claude.socket.send(Message::text("{not json")).await.unwrap();
        let id = claude.request("ping", json!({})).await;
        assert!(claude.response(id).await.get("result").is_some());
    });
}

#[test]
fn claude_open_diff_waits_for_emacs_and_yields_file_saved_or_diff_rejected() {
    let setup = start();
    let hub = setup.hub.clone();
    runtime().block_on(async {
        let mut claude = Claude::open(setup.companion.claude_port(), &setup.claude_token).await;
        let tab = "\u{273b} [Claude Code] sample.txt (9faa6f) \u{29c9}";
        let id = claude
            .call(
                "openDiff",
                json!({"old_file_path": "/w/sample.txt", "new_file_path": "/w/sample.txt",
                       "new_file_contents": "proposed\n", "tab_name": tab}),
            )
            .await;
        let key = next_event(&hub, |event| match event {
            IdeEvent::OpenDiff {
                key,
                agent,
                client,
                path,
                content,
                tab: Some(event_tab),
            } => {
                assert_eq!(agent.name(), "claude");
                assert_eq!(client, "claude-code");
                assert_eq!(
                    (path.as_str(), content.as_str(), event_tab.as_str()),
                    ("/w/sample.txt", "proposed\n", tab)
                );
                Some(*key)
            }
            _ => None,
        })
        .await;
        // Still waiting: nothing was answered yet.
        assert!(tokio::time::timeout(Duration::from_millis(200), claude.response(id))
            .await
            .is_err());
        assert!(hub.answer(key, Answer::Accepted("proposed\nEDITED\n".into())));
        let saved = claude.response(id).await;
        assert_eq!(result_texts(&saved), ["FILE_SAVED", "proposed\nEDITED\n"]);

        let id = claude
            .call(
                "openDiff",
                json!({"old_file_path": "/w/b.txt", "new_file_path": "/w/b.txt",
                       "new_file_contents": "b", "tab_name": "tab b"}),
            )
            .await;
        let key = next_event(&hub, |event| match event {
            IdeEvent::OpenDiff { key, .. } => Some(*key),
            _ => None,
        })
        .await;
        assert!(hub.answer(key, Answer::Rejected(Some("no".into()))));
        assert_eq!(result_texts(&claude.response(id).await), ["DIFF_REJECTED"]);
    });
}

#[test]
fn claude_close_tab_drops_the_waiting_open_diff_and_tells_emacs() {
    let setup = start();
    let hub = setup.hub.clone();
    runtime().block_on(async {
        let mut claude = Claude::open(setup.companion.claude_port(), &setup.claude_token).await;
        let open = claude
            .call(
                "openDiff",
                json!({"old_file_path": "/w/a.txt", "new_file_path": "/w/a.txt",
                       "new_file_contents": "a", "tab_name": "tab a"}),
            )
            .await;
        let key = next_event(&hub, |event| match event {
            IdeEvent::OpenDiff { key, .. } => Some(*key),
            _ => None,
        })
        .await;
        let close = claude.call("close_tab", json!({"tab_name": "tab a"})).await;
        let closed = claude.response(close).await;
        assert_eq!(result_texts(&closed), ["TAB_CLOSED"]);
        assert_eq!(result_texts(&claude.response(open).await), ["DIFF_REJECTED"]);
        let event = next_event(&hub, |event| match event {
            IdeEvent::CloseDiff { .. } => Some(event.clone()),
            _ => None,
        })
        .await;
        match event {
            IdeEvent::CloseDiff { key, tab, all, .. } => {
                assert_eq!((key, tab.as_deref(), all), (None, Some("tab a"), false));
            }
            _ => unreachable!(),
        }
        assert!(
            !hub.answer(key, Answer::Accepted("late".into())),
            "nobody waits any more"
        );

        // closeAllDiffTabs likewise, for every review of the client.
        let mut opened = Vec::new();
        for name in ["x", "y"] {
            opened.push(
                claude
                    .call(
                        "openDiff",
                        json!({"new_file_path": format!("/w/{name}"), "new_file_contents": name, "tab_name": name}),
                    )
                    .await,
            );
        }
        for _ in 0..2 {
            next_event(&hub, |event| matches!(event, IdeEvent::OpenDiff { .. }).then_some(())).await;
        }
        let all = claude.call("closeAllDiffTabs", json!({})).await;
        assert_eq!(result_texts(&claude.response(all).await), ["CLOSED_2_DIFF_TABS"]);
        for id in opened {
            assert_eq!(result_texts(&claude.response(id).await), ["DIFF_REJECTED"]);
        }
        next_event(&hub, |event| {
            matches!(
                event,
                IdeEvent::CloseDiff {
                    key: None,
                    all: true,
                    ..
                }
            )
            .then_some(())
        })
        .await;
        assert_eq!(hub.pending_count(), 0);
    });
}

#[test]
fn claude_get_diagnostics_asks_emacs_and_answers_zero_based_ranges() {
    let setup = start();
    let hub = setup.hub.clone();
    runtime().block_on(async {
        let mut claude = Claude::open(setup.companion.claude_port(), &setup.claude_token).await;
        let id = claude.call("getDiagnostics", json!({"uri": "file:///w/a.el"})).await;
        let key = next_event(&hub, |event| match event {
            IdeEvent::Diagnostics { key, uri, .. } => {
                assert_eq!(uri.as_deref(), Some("file:///w/a.el"));
                Some(*key)
            }
            _ => None,
        })
        .await;
        let diagnostic = Diagnostic {
            message: "free variable `x'".into(),
            severity: "warning".into(),
            source: Some("elisp-flymake-byte-compile".into()),
            code: None,
            line: 3,
            column: 5,
            end_line: 3,
            end_column: 6,
        };
        assert!(hub.answer(
            key,
            Answer::Diagnostics(vec![FileDiagnostics {
                path: "/w/a.el".into(),
                diagnostics: vec![diagnostic],
            }])
        ));
        let answered = claude.response(id).await;
        let value: Value = serde_json::from_str(&result_texts(&answered)[0]).unwrap();
        assert_eq!(
            value,
            json!([{"uri": "file:///w/a.el", "diagnostics": [{
                "message": "free variable `x'", "severity": "Warning",
                "range": {"start": {"line": 2, "character": 4}, "end": {"line": 2, "character": 5}},
                "source": "elisp-flymake-byte-compile"}]}])
        );
    });
}

#[test]
fn claude_hears_selection_changed_after_ide_connected_and_on_change() {
    let setup = start();
    let hub = setup.hub.clone();
    setup.companion.set_context(context("/w/early.txt", Some("early")));
    runtime().block_on(async {
        let mut claude = Claude::open(setup.companion.claude_port(), &setup.claude_token).await;
        let early = claude.notification("selection_changed").await;
        assert_eq!(early["params"]["filePath"], "/w/early.txt");
        assert_eq!(early["params"]["text"], "early");
        next_event(&hub, |event| {
            matches!(event, IdeEvent::ContextWanted { .. }).then_some(())
        })
        .await;

        setup
            .companion
            .set_context(context("/w/sample.txt", Some("line three\nline four\n")));
        let changed = claude.notification("selection_changed").await;
        assert_eq!(
            changed["params"],
            json!({"text": "line three\nline four\n", "filePath": "/w/sample.txt",
                   "fileUrl": "file:///w/sample.txt",
                   "selection": {"start": {"line": 0, "character": 0}, "end": {"line": 2, "character": 0},
                                 "isEmpty": false}})
        );
        // The same selection again is not resent.
        setup
            .companion
            .set_context(context("/w/sample.txt", Some("line three\nline four\n")));
        setup.companion.set_context(context("/w/other.txt", None));
        let next = claude.notification("selection_changed").await;
        assert_eq!(next["params"]["filePath"], "/w/other.txt");
    });
}

#[test]
fn stopping_answers_waiting_reviews_as_rejected_and_frees_the_ports() {
    let mut setup = start();
    let hub = setup.hub.clone();
    let (claude_port, gemini_port) = (setup.companion.claude_port(), setup.companion.gemini_port());
    let rt = runtime();
    let (mut claude, id) = rt.block_on(async {
        let mut claude = Claude::open(claude_port, &setup.claude_token).await;
        let id = claude
            .call(
                "openDiff",
                json!({"new_file_path": "/w/a", "new_file_contents": "a", "tab_name": "a"}),
            )
            .await;
        next_event(&hub, |event| matches!(event, IdeEvent::OpenDiff { .. }).then_some(())).await;
        (claude, id)
    });
    setup.companion.stop().wait();
    rt.block_on(async {
        assert_eq!(result_texts(&claude.response(id).await), ["DIFF_REJECTED"]);
    });
    assert!(std::net::TcpListener::bind(("127.0.0.1", claude_port)).is_ok());
    assert!(std::net::TcpListener::bind(("127.0.0.1", gemini_port)).is_ok());
}

#[test]
fn stop_returns_at_once_and_the_waiting_clients_are_answered_afterwards() {
    let mut setup = start();
    let hub = setup.hub.clone();
    let (claude_port, gemini_port) = (setup.companion.claude_port(), setup.companion.gemini_port());
    let rt = runtime();
    let (mut claude, id) = rt.block_on(async {
        let mut claude = Claude::open(claude_port, &setup.claude_token).await;
        let id = claude
            .call(
                "openDiff",
                json!({"new_file_path": "/w/b", "new_file_contents": "b", "tab_name": "b"}),
            )
            .await;
        next_event(&hub, |event| matches!(event, IdeEvent::OpenDiff { .. }).then_some(())).await;
        (claude, id)
    });
    // Gemini CLI holds a connection too, in the middle of sending a request.
    let mut slow = TcpStream::connect(("127.0.0.1", gemini_port)).unwrap();
    slow.write_all(format!("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{gemini_port}\r\n").as_bytes())
        .unwrap();

    let started = Instant::now();
    let shutdown = setup.companion.stop();
    let took = started.elapsed();
    assert!(took < Duration::from_millis(200), "stop took {took:?}");
    assert!(!setup.companion.is_running());
    assert!(!shutdown.is_finished(), "the answers have their time to be sent");
    // The waiting review is answered after stop returned, and the connections close.
    rt.block_on(async {
        assert_eq!(result_texts(&claude.response(id).await), ["DIFF_REJECTED"]);
    });
    assert!(shutdown.wait_timeout(PATIENCE), "the shutdown finishes");
    shutdown.wait();
    rt.block_on(async {
        loop {
            let frame = tokio::time::timeout(PATIENCE, claude.socket.next()).await;
            match frame.expect("the socket ends") {
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => break,
                Some(Ok(_)) => {}
            }
        }
    });
    slow.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut rest = Vec::new();
    let end = slow.read_to_end(&mut rest);
    assert!(
        end.as_ref().map_or_else(
            |e| !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
            |_| true
        ),
        "the server closed the slow connection: {end:?}"
    );
    assert!(std::net::TcpListener::bind(("127.0.0.1", claude_port)).is_ok());
    assert!(std::net::TcpListener::bind(("127.0.0.1", gemini_port)).is_ok());
}

#[test]
fn dropping_running_companions_inside_a_runtime_neither_blocks_nor_panics() {
    let setup = start();
    let ports = [setup.companion.claude_port(), setup.companion.gemini_port()];
    let companion = setup.companion;
    let started = Instant::now();
    runtime().block_on(async move { drop(companion) });
    let took = started.elapsed();
    assert!(took < Duration::from_millis(200), "the drop took {took:?}");
    // The stop's own thread frees the ports.
    let deadline = Instant::now() + PATIENCE;
    for port in ports {
        while std::net::TcpListener::bind(("127.0.0.1", port)).is_err() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(std::net::TcpListener::bind(("127.0.0.1", port)).is_ok());
    }
}

#[test]
fn waiting_requests_are_capped_and_a_message_too_deep_is_dropped() {
    let setup = start();
    let hub = setup.hub.clone();
    runtime().block_on(async {
        let mut claude = Claude::open(setup.companion.claude_port(), &setup.claude_token).await;
        let mut ids = Vec::new();
        for n in 0..agent_q_core::ide::MAX_PENDING_REQUESTS {
            ids.push(
                claude
                    .call(
                        "openDiff",
                        json!({"new_file_path": format!("/w/{n}"), "new_file_contents": "x", "tab_name": format!("{n}")}),
                    )
                    .await,
            );
        }
        let deadline = Instant::now() + PATIENCE;
        while hub.pending_count() < agent_q_core::ide::MAX_PENDING_REQUESTS {
            assert!(Instant::now() < deadline, "the requests did not all arrive");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let refused = claude
            .call("openDiff", json!({"new_file_path": "/w/more", "new_file_contents": "x", "tab_name": "more"}))
            .await;
        let refused = claude.response(refused).await;
        assert_eq!(refused["result"]["isError"], json!(true));
        assert!(result_texts(&refused)[0].contains("too many requests"), "{refused}");

        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":999,"method":"ping","params":{{"x":{}{}}}}}"#,
            "[".repeat(10_000),
            "]".repeat(10_000)
        );
        claude.socket.send(Message::text(deep)).await.unwrap();
        let id = claude.request("ping", json!({})).await;
        assert!(claude.response(id).await.get("result").is_some(), "still served");
        assert!(claude.notes.iter().all(|note| note.get("id") != Some(&json!(999))));
    });
}
