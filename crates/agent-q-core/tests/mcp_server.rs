//! The MCP server over a real socket on 127.0.0.1, driven by a thread that plays Emacs, with
//! rmcp's own client (2025 lifecycle with sessions, and the 2026-07-28 stateless one) and raw
//! HTTP for the status codes.

mod common;

use std::time::{Duration, Instant};

use agent_q_core::mcp::{CallAnswer, Event, STOPPED};
use agent_q_core::spec::SafetyLevel;
use common::*;
use rmcp::model::ServerNotification;
use rmcp::model::{
    CallToolRequestParams, ClientRequest, ContentBlock, ProtocolVersion, RequestMetaObject, SubscriptionFilter,
};
use rmcp::service::PeerRequestOptions;
use rmcp::ClientLifecycleMode;
use rmcp::ClientServiceExt;
use serde_json::{json, Value};

fn text_of(result: &rmcp::model::CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.clone()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("")
}

fn call(name: &str, path: &str) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_string()).with_arguments(json!({ "path": path }).as_object().unwrap().clone())
}

#[test]
fn initialize_list_and_call_with_each_2025_revision() {
    let fixture = start();
    let port = fixture.server.port();
    let url = fixture.url();
    let token = fixture.token.clone();
    let driver = Driver::spawn(fixture.hub.clone(), fixture.wakes);
    let runtime = client_runtime();
    for version in [ProtocolVersion::V_2025_06_18, ProtocolVersion::V_2025_11_25] {
        runtime.block_on(async {
            let (client, _notes) = connect(&url, &token, Some(version.clone())).await;
            let server = client.peer_info().expect("initialize result");
            assert_eq!(server.protocol_version, version, "negotiated version");
            assert_eq!(
                server.server_info.as_ref().map(|info| info.name.as_str()),
                Some("agent-q")
            );
            let tools_capability = server.capabilities.tools.clone().expect("tools capability");
            assert_eq!(tools_capability.list_changed, Some(true));

            let tools = client.list_all_tools().await.unwrap();
            let listed: Vec<Value> = tools.iter().map(|tool| serde_json::to_value(tool).unwrap()).collect();
            assert_eq!(
                listed.iter().map(|tool| tool["name"].clone()).collect::<Vec<_>>(),
                vec![json!("read_file"), json!("insert_text"), json!("write_file")]
            );
            assert_eq!(listed[0]["inputSchema"]["required"], json!(["path"]));
            assert_eq!(listed[0]["description"], json!("The read_file tool"));
            // Every hint stated: absent hints would read as the most alarming.
            assert_eq!(
                listed[0]["annotations"],
                json!({"readOnlyHint": true, "destructiveHint": false,
                       "idempotentHint": true, "openWorldHint": false})
            );
            assert_eq!(
                listed[1]["annotations"],
                json!({"readOnlyHint": false, "destructiveHint": false,
                       "idempotentHint": false, "openWorldHint": true})
            );
            assert_eq!(
                listed[2]["annotations"],
                json!({"readOnlyHint": false, "destructiveHint": true,
                       "idempotentHint": false, "openWorldHint": true})
            );

            let read = client.call_tool(call("read_file", "/tmp/a.txt")).await.unwrap();
            assert_eq!(read.is_error, Some(false));
            assert_eq!(text_of(&read), "contents of /tmp/a.txt");

            let denied = client.call_tool(call("write_file", "/tmp/a.txt")).await.unwrap();
            assert_eq!(denied.is_error, Some(true));
            assert_eq!(text_of(&denied), "Denied: the user refused write_file");

            // A tool the server does not list is refused by the server itself: the driver
            // never sees the call.
            let unknown = client.call_tool(call("no_such_tool", "/x")).await.unwrap();
            assert_eq!(unknown.is_error, Some(true));
            assert!(
                text_of(&unknown).starts_with("Unknown tool: no_such_tool: agent-q offers no tool of that name"),
                "{}",
                text_of(&unknown)
            );

            client.cancel().await.unwrap();
        });
    }
    let seen = driver.seen.lock().unwrap().clone();
    let calls: Vec<_> = seen
        .iter()
        .filter_map(|event| match event {
            Event::Call { client, tool, .. } => Some((client.clone(), tool.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 4, "{seen:?}");
    assert!(calls.iter().all(|(_, tool)| tool != "no_such_tool"), "{seen:?}");
    for (index, (client, _)) in calls.iter().enumerate() {
        assert_eq!(client.name, "agent-q-test-client");
        assert_eq!(client.version, "9.9.9");
        assert!(client.session.as_deref().is_some_and(|id| !id.is_empty()), "{client:?}");
        let expected = if index < 2 { "2025-06-18" } else { "2025-11-25" };
        assert_eq!(client.protocol_version.as_deref(), Some(expected));
    }
    assert_ne!(
        calls[0].0.session, calls[2].0.session,
        "each client has its own session"
    );
    // Each session is its own channel, whatever name its client claims.
    for (client, _) in &calls {
        assert_eq!(
            client.channel,
            format!("session {}", client.session.as_deref().unwrap())
        );
    }
    assert_eq!(calls[0].0.channel, calls[1].0.channel);
    assert_ne!(calls[0].0.channel, calls[2].0.channel);
    drop(driver);
    drop(fixture.server);
    // The port is free once the server is dropped.
    std::net::TcpListener::bind(("127.0.0.1", port)).expect("port released");
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

#[test]
fn requests_without_the_right_token_or_from_foreign_origins_are_refused() {
    let fixture = start();
    let port = fixture.server.port();
    let auth = bearer(&fixture.token);
    let json = ("content-type", "application/json");
    let accept = ("accept", "application/json, text/event-stream");

    let (status, head, _) = http(port, "POST", &[json, accept], INITIALIZE);
    assert_eq!(status, 401);
    assert!(head.contains("www-authenticate: bearer"), "{head}");

    let wrong = bearer(&"0".repeat(64));
    let (status, _, _) = http(port, "POST", &[json, accept, ("authorization", &wrong)], INITIALIZE);
    assert_eq!(status, 401);

    let (status, _, _) = http(
        port,
        "POST",
        &[json, accept, ("authorization", "Basic dXNlcjpwYXNz")],
        INITIALIZE,
    );
    assert_eq!(status, 401);

    let foreign = [
        json,
        accept,
        ("authorization", &auth),
        ("origin", "https://evil.example"),
    ];
    let (status, head, _) = http(port, "POST", &foreign, INITIALIZE);
    assert_eq!(status, 403);
    assert!(!head.contains("access-control-allow-origin"), "{head}");

    // A preflight from a foreign page gets nothing either.
    let (status, head, _) = http(port, "OPTIONS", &[("origin", "https://evil.example")], "");
    assert_eq!(status, 403);
    assert!(!head.contains("access-control-allow-origin"), "{head}");

    let rebinding = [json, accept, ("authorization", &auth), ("host", "evil.example")];
    let (status, _, _) = http(port, "POST", &rebinding, INITIALIZE);
    assert_eq!(status, 403);

    let too_big = (agent_q_core::mcp::MAX_REQUEST_BODY_BYTES + 1).to_string();
    let oversized = [
        json,
        accept,
        ("authorization", &auth),
        ("content-length", too_big.as_str()),
    ];
    let (status, _, _) = http(port, "POST", &oversized, "");
    assert_eq!(status, 413);

    let local = [
        json,
        accept,
        ("authorization", &auth),
        ("origin", "http://localhost:3000"),
    ];
    let (status, head, body) = http(port, "POST", &local, INITIALIZE);
    assert_eq!(status, 200, "{head}\n{body}");
    assert!(head.contains("mcp-session-id: "), "{head}");
    assert!(!head.contains("access-control-allow-origin"), "{head}");
    let replies = messages(&body);
    let result = replies.iter().find(|m| m["id"] == json!(1)).expect("initialize reply");
    assert_eq!(result["result"]["protocolVersion"], json!("2025-06-18"));

    // Without the session id, a request other than initialize is refused (400).
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let no_session = [
        json,
        accept,
        ("authorization", &auth),
        ("mcp-protocol-version", "2025-06-18"),
    ];
    let (status, _, _) = http(port, "POST", &no_session, list);
    assert_eq!(status, 400);
    // With an unknown session id: 404, so that the client initializes again.
    let stale = [
        json,
        accept,
        ("authorization", &auth),
        ("mcp-protocol-version", "2025-06-18"),
        ("mcp-session-id", "no-such-session"),
    ];
    let (status, _, _) = http(port, "POST", &stale, list);
    assert_eq!(status, 404);
}

#[test]
fn foreign_hosts_and_origins_are_refused_whatever_the_token() {
    let fixture = start();
    let port = fixture.server.port();
    let right = bearer(&fixture.token);
    let wrong = bearer(&"0".repeat(64));
    let status = |header: (&str, &str), auth: &str| {
        let headers = [
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("authorization", auth),
            header,
        ];
        http(port, "POST", &headers, INITIALIZE).0
    };
    // Refused for the Host or the Origin, a request gets the same answer with the right token as
    // with a wrong one: it learns nothing about its token.
    for (header, refused) in [
        (("host", "evil.example"), 403),
        (("host", "evil.example:80"), 403),
        (("host", "127.0.0.2"), 403),
        (("host", "0.0.0.0:1"), 403),
        (("host", "[::2]:1"), 403),
        (("origin", "https://evil.example"), 403),
        (("origin", "http://localhost.evil.example"), 403),
        (("origin", "http://127.0.0.1.evil.example:80"), 403),
        (("origin", "null"), 403),
        (("origin", "file://"), 403),
        (("origin", "chrome-extension://abc"), 403),
        (("origin", ""), 403),
    ] {
        assert_eq!(status(header, &right), refused, "{header:?} with the right token");
        assert_eq!(status(header, &wrong), refused, "{header:?} with a wrong token");
    }
    for header in [
        ("host", "localhost"),
        ("host", "127.0.0.1:5"),
        ("host", "[::1]:5"),
        ("host", "[::1]"),
        ("host", "LocalHost:80"),
        ("origin", "http://localhost"),
        ("origin", "http://localhost:3000"),
        ("origin", "https://127.0.0.1:8443"),
        ("origin", "http://[::1]:9"),
        ("origin", "HTTP://LOCALHOST"),
        ("origin", "http://localhost/"),
    ] {
        assert_eq!(status(header, &right), 200, "{header:?} with the right token");
        assert_eq!(status(header, &wrong), 401, "{header:?} with a wrong token");
    }
}

/// The `data` of every SSE event in BODY, in order (an event's `data:` lines joined by newlines).
fn sse_data(body: &str) -> Vec<String> {
    body.replace("\r\n", "\n")
        .split("\n\n")
        .filter(|event| !event.trim().is_empty())
        .filter_map(|event| {
            let lines: Vec<&str> = event
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(|data| data.strip_prefix(' ').unwrap_or(data))
                .collect();
            (!lines.is_empty()).then(|| lines.join("\n"))
        })
        .collect()
}

#[test]
fn a_2025_06_18_client_gets_no_event_without_a_message() {
    // Gemini CLI's TypeScript SDK speaks 2025-06-18 and parses every event's data as JSON: an
    // empty "priming" event (a 2025-11-25 addition) breaks its tool discovery.
    let fixture = start();
    let port = fixture.server.port();
    let auth = bearer(&fixture.token);
    let base = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("authorization", auth.as_str()),
    ];
    let (status, head, body) = http(port, "POST", &base, INITIALIZE);
    assert_eq!(status, 200, "{head}\n{body}");
    let session = head
        .lines()
        .find_map(|line| line.strip_prefix("mcp-session-id: "))
        .expect("a session id")
        .trim()
        .to_string();
    let mut bodies = vec![body];
    let in_session = [
        base[0],
        base[1],
        base[2],
        ("mcp-protocol-version", "2025-06-18"),
        ("mcp-session-id", session.as_str()),
    ];
    let (status, _, _) = http(
        port,
        "POST",
        &in_session,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    assert_eq!(status, 202);
    let (status, head, body) = http(
        port,
        "POST",
        &in_session,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    );
    assert_eq!(status, 200, "{head}\n{body}");
    assert!(head.contains("content-type: text/event-stream"), "{head}");
    bodies.push(body);
    for body in &bodies {
        let data = sse_data(body);
        assert!(!data.is_empty(), "no event in {body:?}");
        for item in data {
            assert!(
                serde_json::from_str::<Value>(&item).is_ok(),
                "an event whose data is not a JSON-RPC message: {item:?} in {body:?}"
            );
        }
    }
}

#[test]
fn a_connected_client_hears_that_the_tool_list_changed() {
    let fixture = start();
    let url = fixture.url();
    let token = fixture.token.clone();
    let runtime = client_runtime();
    runtime.block_on(async {
        let (client, mut notes) = connect(&url, &token, None).await;
        assert_eq!(client.list_all_tools().await.unwrap().len(), 3);
        // The client opens its GET stream after initialization, concurrently with this test: a
        // change announced before the stream is open may be lost, so change again until one is
        // heard (each change is a real list_changed).
        let mut heard = false;
        for round in 0..5 {
            let mut tools = sample_tools();
            tools.push(tool(&format!("new_tool_{round}"), SafetyLevel::Cautious));
            assert!(fixture.hub.set_tools(tools, SafetyLevel::Dangerous));
            if let Ok(Some(note)) = tokio::time::timeout(Duration::from_secs(2), notes.recv()).await {
                assert_eq!(note, Note::ToolListChanged);
                heard = true;
                break;
            }
        }
        assert!(heard, "no notifications/tools/list_changed arrived");
        let names: Vec<String> = client
            .list_all_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|tool| tool.name.to_string())
            .collect();
        assert_eq!(names.len(), 4, "{names:?}");
        assert!(names[3].starts_with("new_tool_"));
        // Setting the same list again announces nothing.
        let same = fixture.hub.tools();
        assert!(!fixture.hub.set_tools(same, SafetyLevel::Dangerous));
        assert!(tokio::time::timeout(Duration::from_millis(500), notes.recv())
            .await
            .is_err());
        client.cancel().await.unwrap();
    });
}

#[test]
fn a_cancelled_call_is_withdrawn_from_the_driver() {
    let fixture = start();
    let url = fixture.url();
    let token = fixture.token.clone();
    let runtime = client_runtime();
    let (client, _notes) = runtime.block_on(connect(&url, &token, None));
    let peer = client.peer().clone();
    let request =
        |path: &str| ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(call("read_file", path)));

    // Taken by the driver, then cancelled: the driver gets Event::Cancel, and a late answer is
    // ignored.
    let handle = runtime
        .block_on(peer.send_cancellable_request(request("/taken"), PeerRequestOptions::no_options()))
        .unwrap();
    let (key, tool, _, _) = fixture.next_call();
    assert_eq!(tool, "read_file");
    runtime
        .block_on(handle.cancel(Some("the user pressed Esc".into())))
        .unwrap();
    let events = fixture.next_events();
    assert_eq!(events, vec![Event::Cancel { key }]);
    assert!(!fixture.hub.complete(key, CallAnswer::ok("too late")));

    // Cancelled before the driver took it: the call is removed from the queue, never seen.
    // (Waits on the hub, not on a wake, which could be a late one of the first call's Cancel.)
    let handle = runtime
        .block_on(peer.send_cancellable_request(request("/queued"), PeerRequestOptions::no_options()))
        .unwrap();
    let deadline = Instant::now() + PATIENCE;
    while fixture.hub.pending_count() == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(fixture.hub.pending_count(), 1, "the call is queued");
    runtime.block_on(handle.cancel(None)).unwrap();
    let deadline = Instant::now() + PATIENCE;
    while fixture.hub.pending_count() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(fixture.hub.pending_count(), 0);
    assert!(
        fixture.hub.take_events().is_empty(),
        "the withdrawn call is not delivered"
    );
    runtime.block_on(client.cancel()).unwrap();
}

#[test]
fn a_waiting_call_sends_progress_with_its_status() {
    let fixture = start_with_interval(Duration::from_millis(150));
    let url = fixture.url();
    let token = fixture.token.clone();
    let runtime = client_runtime();
    let (client, mut notes) = runtime.block_on(connect(&url, &token, None));
    let peer = client.peer().clone();
    let mut params = call("write_file", "/tmp/b.txt");
    params.meta = Some(RequestMetaObject::with_progress_token(rmcp::model::ProgressToken(
        rmcp::model::NumberOrString::String("approval-1".into()),
    )));
    let pending = runtime.spawn(async move { peer.call_tool(params).await });
    let (key, _, _, progress) = fixture.next_call();
    assert!(progress, "the client sent a progress token");
    assert!(fixture.hub.set_status(key, "waiting for the user's approval in Emacs"));
    let received = runtime.block_on(async {
        let mut received = Vec::new();
        while received.len() < 3 {
            match tokio::time::timeout(PATIENCE, notes.recv()).await {
                Ok(Some(Note::Progress { progress, message })) => received.push((progress, message)),
                Ok(Some(_)) => {}
                _ => break,
            }
        }
        received
    });
    assert_eq!(received.len(), 3, "{received:?}");
    for (index, (progress, message)) in received.iter().enumerate() {
        assert_eq!(*progress, (index + 1) as f64, "progress increases");
        assert_eq!(message.as_deref(), Some("waiting for the user's approval in Emacs"));
    }
    assert!(fixture.hub.complete(key, CallAnswer::ok("written")));
    let result = runtime.block_on(pending).unwrap().unwrap();
    assert_eq!(text_of(&result), "written");
    runtime.block_on(client.cancel()).unwrap();
}

#[test]
fn stop_answers_waiting_calls_and_frees_the_port() {
    let mut fixture = start();
    let port = fixture.server.port();
    let url = fixture.url();
    let token = fixture.token.clone();
    let runtime = client_runtime();
    let (client, _notes) = runtime.block_on(connect(&url, &token, None));
    let peer = client.peer().clone();
    let pending = runtime.spawn(async move { peer.call_tool(call("write_file", "/tmp/c.txt")).await });
    let (key, _, _, _) = fixture.next_call();

    fixture.server.stop();
    assert!(!fixture.server.is_running());
    let result = runtime
        .block_on(async { tokio::time::timeout(PATIENCE, pending).await })
        .expect("the call is answered")
        .unwrap()
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    assert_eq!(text_of(&result), STOPPED);
    // The driver hears that the call it took is gone, and its answer is ignored.
    assert!(fixture.hub.take_events().contains(&Event::Cancel { key }));
    assert!(!fixture.hub.complete(key, CallAnswer::ok("too late")));
    // The port is free at once.
    let again = std::net::TcpListener::bind(("127.0.0.1", port)).expect("the port is free after stop");
    drop(again);
    fixture.server.stop();
    drop(client);
}

#[test]
fn stop_returns_at_once_while_clients_hold_connections_and_answers_them_afterwards() {
    use std::io::Write;
    let mut fixture = start();
    let port = fixture.server.port();
    let url = fixture.url();
    let token = fixture.token.clone();
    let runtime = client_runtime();
    let (client, _notes) = runtime.block_on(connect(&url, &token, None));
    let peer = client.peer().clone();
    let pending = runtime.spawn(async move { peer.call_tool(call("write_file", "/tmp/d.txt")).await });
    let (key, _, _, _) = fixture.next_call();
    // A client in the middle of sending its request: its connection cannot close at once.
    let mut slow = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    slow.write_all(format!("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n").as_bytes())
        .unwrap();
    // Time for the server to take the connection and read what was sent (the shutdown's
    // taking its time below shows that it did).
    std::thread::sleep(Duration::from_millis(200));

    let started = Instant::now();
    let shutdown = fixture.server.stop();
    let took = started.elapsed();
    assert!(took < Duration::from_millis(200), "stop took {took:?}");
    assert!(!fixture.server.is_running());
    assert!(!shutdown.is_finished(), "the slow client still holds its connection");
    // The port is free at once, for a restart on the same port.
    drop(std::net::TcpListener::bind(("127.0.0.1", port)).expect("the port is free when stop returns"));
    // The waiting client hears why its call ended, after stop returned.
    let result = runtime
        .block_on(async { tokio::time::timeout(PATIENCE, pending).await })
        .expect("the call is answered")
        .unwrap()
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    assert_eq!(text_of(&result), STOPPED);
    assert!(fixture.hub.take_events().contains(&Event::Cancel { key }));
    // The rest finishes on its own thread: the slow connection is closed.
    assert!(shutdown.wait_timeout(PATIENCE), "the shutdown finishes");
    shutdown.wait();
    assert!(closed_by_server(&mut slow, Duration::from_secs(1)));
    drop(client);
}

#[test]
fn dropping_a_running_server_inside_a_runtime_neither_blocks_nor_panics() {
    let fixture = start();
    let port = fixture.server.port();
    let server = fixture.server;
    let runtime = client_runtime();
    let started = Instant::now();
    runtime.block_on(async move { drop(server) });
    let took = started.elapsed();
    assert!(took < Duration::from_millis(200), "the drop took {took:?}");
    // The stop's own thread frees the port.
    let deadline = Instant::now() + PATIENCE;
    while std::net::TcpListener::bind(("127.0.0.1", port)).is_err() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(std::net::TcpListener::bind(("127.0.0.1", port)).is_ok());
}

/// The `_meta` of a 2026-07-28 request: protocol version, capabilities and client.
fn meta_2026() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw-2026", "version": "0.1"}
    })
}

#[test]
fn stateless_2026_07_28_requests_are_served_without_a_session() {
    let fixture = start();
    let port = fixture.server.port();
    let auth = bearer(&fixture.token);
    let driver = Driver::spawn(fixture.hub.clone(), fixture.wakes);
    let headers = |method: &'static str, name: Option<&'static str>| {
        let mut headers = vec![
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("authorization", auth.as_str()),
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", method),
        ];
        if let Some(name) = name {
            headers.push(("mcp-name", name));
        }
        headers
    };

    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta_2026()}});
    let (status, head, body) = http(port, "POST", &headers("tools/list", None), &list.to_string());
    assert_eq!(status, 200, "{head}\n{body}");
    assert!(!head.contains("mcp-session-id"), "{head}");
    let reply = messages(&body)
        .into_iter()
        .find(|m| m["id"] == json!(1))
        .expect("reply");
    assert_eq!(reply["result"]["tools"].as_array().map(Vec::len), Some(3), "{reply}");

    let call_request = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "read_file", "arguments": {"path": "/etc/hosts"}, "_meta": meta_2026()}});
    let (status, head, body) = http(
        port,
        "POST",
        &headers("tools/call", Some("read_file")),
        &call_request.to_string(),
    );
    assert_eq!(status, 200, "{head}\n{body}");
    let reply = messages(&body)
        .into_iter()
        .find(|m| m["id"] == json!(2))
        .expect("reply");
    assert_eq!(reply["result"]["isError"], json!(false), "{reply}");
    assert_eq!(reply["result"]["content"][0]["text"], json!("contents of /etc/hosts"));

    // And rmcp's own client in its 2026-07-28 (discover) lifecycle.
    let runtime = client_runtime();
    let url = fixture.server.url();
    let token = fixture.token.clone();
    runtime.block_on(async {
        let (notes, _received) = tokio::sync::mpsc::unbounded_channel();
        let client = TestClient {
            info: client_config(None),
            notes,
        };
        let service = client
            .serve_with_lifecycle(
                http_transport(&url, &token),
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await
            .expect("discover lifecycle");
        assert_eq!(
            service.peer_info().map(|info| info.protocol_version.clone()),
            Some(ProtocolVersion::V_2026_07_28)
        );
        assert_eq!(service.list_all_tools().await.unwrap().len(), 3);
        let result = service.call_tool(call("read_file", "/srv")).await.unwrap();
        assert_eq!(text_of(&result), "contents of /srv");
        service.cancel().await.unwrap();
    });

    let seen = driver.seen.lock().unwrap().clone();
    let clients: Vec<_> = seen
        .iter()
        .filter_map(|event| match event {
            Event::Call { client, .. } => Some(client.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(clients.len(), 2, "{seen:?}");
    assert_eq!(clients[0].name, "raw-2026");
    assert_eq!(clients[0].version, "0.1");
    assert_eq!(clients[0].session, None);
    assert_eq!(clients[0].protocol_version.as_deref(), Some("2026-07-28"));
    assert_eq!(clients[1].name, "agent-q-test-client");
    assert_eq!(clients[1].session, None);
    assert!(matches!(&seen[0], Event::Call { progress: false, .. }));
}

#[test]
fn a_2026_07_28_subscription_hears_that_the_tool_list_changed() {
    let fixture = start();
    let url = fixture.url();
    let token = fixture.token.clone();
    let runtime = client_runtime();
    runtime.block_on(async {
        let (notes, _received) = tokio::sync::mpsc::unbounded_channel();
        let client = TestClient {
            info: client_config(None),
            notes,
        };
        let service = client
            .serve_with_lifecycle(
                http_transport(&url, &token),
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await
            .expect("discover lifecycle");
        let mut subscription = service
            .peer()
            .listen(SubscriptionFilter::builder().tools_list_changed().build())
            .await
            .expect("subscriptions/listen");
        assert_eq!(subscription.acknowledged().tools_list_changed, Some(true));
        // The server registers the listener just after sending the acknowledgement, so a change
        // made at once may precede it: change again until one is heard (each one is real).
        let mut heard = None;
        for round in 0..5 {
            let mut tools = sample_tools();
            tools.push(tool(&format!("another_{round}"), SafetyLevel::Safe));
            assert!(fixture.hub.set_tools(tools, SafetyLevel::Dangerous));
            if let Ok(next) = tokio::time::timeout(Duration::from_secs(2), subscription.next()).await {
                heard = Some(next);
                break;
            }
        }
        assert!(
            matches!(
                heard,
                Some(Ok(Some(ServerNotification::ToolListChangedNotification(_))))
            ),
            "{heard:?}"
        );
        service.cancel().await.unwrap();
    });
}

#[test]
fn a_stateless_request_has_its_own_channel_whatever_session_it_names() {
    let fixture = start();
    let port = fixture.server.port();
    let auth = bearer(&fixture.token);
    let driver = Driver::spawn(fixture.hub.clone(), fixture.wakes);
    // A session, whose client is called raw.
    let json_type = ("content-type", "application/json");
    let accept = ("accept", "application/json, text/event-stream");
    let (status, head, body) = http(port, "POST", &[json_type, accept, ("authorization", &auth)], INITIALIZE);
    assert_eq!(status, 200, "{head}\n{body}");
    let session = head
        .lines()
        .find_map(|line| line.strip_prefix("mcp-session-id: "))
        .expect("a session id")
        .trim()
        .to_string();
    let in_session = [
        json_type,
        accept,
        ("authorization", auth.as_str()),
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-06-18"),
    ];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, _) = http(port, "POST", &in_session, &initialized.to_string());
    assert_eq!(status, 202);
    let call_in_session = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                 "params": {"name": "read_file", "arguments": {"path": "/a"}}});
    let (status, head, body) = http(port, "POST", &in_session, &call_in_session.to_string());
    assert_eq!(status, 200, "{head}\n{body}");
    // Two stateless requests, each claiming the same name, the second naming the session.
    let mut meta = meta_2026();
    meta["io.modelcontextprotocol/clientInfo"] = json!({"name": "raw", "version": "1"});
    let stateless = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                           "params": {"name": "read_file", "arguments": {"path": "/b"}, "_meta": meta}})
    .to_string();
    let headers = [
        json_type,
        accept,
        ("authorization", auth.as_str()),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "read_file"),
    ];
    for forged in [None, Some(session.as_str())] {
        let mut headers = headers.to_vec();
        if let Some(id) = forged {
            headers.push(("mcp-session-id", id));
        }
        let (status, head, body) = http(port, "POST", &headers, &stateless);
        assert_eq!(status, 200, "{head}\n{body}");
        let reply = messages(&body)
            .into_iter()
            .find(|m| m["id"] == json!(3))
            .expect("reply");
        assert_eq!(reply["result"]["isError"], json!(false), "{reply}");
    }
    let seen = driver.seen.lock().unwrap().clone();
    let clients: Vec<_> = seen
        .iter()
        .filter_map(|event| match event {
            Event::Call { client, .. } => Some(client.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(clients.len(), 3, "{seen:?}");
    assert!(clients.iter().all(|client| client.name == "raw"), "{clients:?}");
    assert_eq!(clients[0].session.as_deref(), Some(session.as_str()));
    assert_eq!(clients[0].channel, format!("session {session}"));
    for stateless in &clients[1..] {
        assert_eq!(stateless.session, None, "{stateless:?}");
        assert!(stateless.channel.starts_with("request "), "{stateless:?}");
    }
    assert_ne!(
        clients[1].channel, clients[2].channel,
        "each request is its own channel"
    );
}

#[test]
fn closing_a_2026_07_28_stream_withdraws_its_call() {
    use std::io::Write;
    let fixture = start();
    let port = fixture.server.port();
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": "write_file", "arguments": {"path": "/w"}, "_meta": meta_2026()}})
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: write_file\r\n\
         Content-Length: {}\r\n\r\n{body}",
        fixture.token,
        body.len()
    );
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let (key, tool, client, _) = fixture.next_call();
    assert_eq!((tool.as_str(), client.session), ("write_file", None));
    // The call waits for Emacs; the client gives up and closes the connection, which in the
    // 2026-07-28 revision means cancellation.
    drop(stream);
    assert_eq!(fixture.next_events(), vec![Event::Cancel { key }]);
    assert!(!fixture.hub.complete(key, CallAnswer::ok("nobody listens")));
}

#[test]
fn start_reports_a_busy_port_and_a_bad_token() {
    let first = start();
    let port = first.server.port();
    let hub = agent_q_core::mcp::Hub::new(Box::new(|| {}));
    let mut config = agent_q_core::mcp::Config::new(agent_q_core::mcp::make_token().unwrap());
    config.port = port;
    let error = agent_q_core::mcp::Server::start(hub.clone(), config).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with(&format!("cannot listen on 127.0.0.1:{port}: ")),
        "{error}"
    );
    let error = agent_q_core::mcp::Server::start(hub, agent_q_core::mcp::Config::new("short")).unwrap_err();
    assert!(error.to_string().contains("at least 32 characters"), "{error}");
}

/// Whether the server closed STREAM (a read returns end of file or an error within WAIT).
fn closed_by_server(stream: &mut std::net::TcpStream, wait: Duration) -> bool {
    use std::io::Read;
    stream.set_read_timeout(Some(wait)).unwrap();
    let mut byte = [0u8; 1];
    match stream.read(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
    }
}

#[test]
fn idle_connections_without_the_token_are_capped_and_time_out() {
    use agent_q_core::mcp::{HEADER_READ_TIMEOUT, MAX_UNPROVEN_CONNECTIONS};
    let fixture = start();
    let port = fixture.server.port();
    let mut idle: Vec<std::net::TcpStream> = (0..200)
        .map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect"))
        .collect();
    let deadline = Instant::now() + PATIENCE;
    while fixture.server.connection_count() != MAX_UNPROVEN_CONNECTIONS && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(fixture.server.connection_count(), MAX_UNPROVEN_CONNECTIONS);
    // Beyond the limit, each new connection was closed at once or pushed out an older one:
    // exactly the limit's worth of them stay open.
    let open: Vec<usize> = (0..idle.len())
        .filter(|&i| !closed_by_server(&mut idle[i], Duration::from_millis(20)))
        .collect();
    assert_eq!(open.len(), MAX_UNPROVEN_CONNECTIONS);
    // Later, a new connection takes the place of the oldest idle one still open.
    std::thread::sleep(agent_q_core::mcp::EVICTION_AGE);
    let _late = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    assert!(closed_by_server(&mut idle[open[0]], Duration::from_secs(2)));
    let idle_1 = open[1];
    // A client with the token is served at once, flood or not.
    let (status, _, _) = http(
        port,
        "POST",
        &[
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("authorization", &bearer(&fixture.token)),
        ],
        INITIALIZE,
    );
    assert_eq!(status, 200);
    // The other idle ones are closed once the header timeout passes.
    let started = Instant::now();
    assert!(closed_by_server(
        &mut idle[idle_1],
        HEADER_READ_TIMEOUT + Duration::from_secs(5)
    ));
    assert!(started.elapsed() < HEADER_READ_TIMEOUT + Duration::from_secs(3));
    let deadline = Instant::now() + PATIENCE;
    while fixture.server.connection_count() != 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(fixture.server.connection_count(), 0);

    // A refused request closes its connection, even when it asks to keep it.
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    use std::io::Write;
    stream
        .write_all(format!("GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n").as_bytes())
        .unwrap();
    let mut response = Vec::new();
    use std::io::Read;
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response);
    assert!(text.starts_with("HTTP/1.1 401"), "{text}");
    assert!(text.to_ascii_lowercase().contains("connection: close"), "{text}");
}

#[test]
fn a_body_with_too_many_values_is_refused_before_it_is_parsed() {
    let fixture = start();
    let port = fixture.server.port();
    let numbers = vec!["1"; agent_q_core::mcp::MAX_ARGUMENT_VALUES * 3].join(",");
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"read_file","arguments":{{"xs":[{numbers}]}}}}}}"#
    );
    let (status, _, text) = http(
        port,
        "POST",
        &[
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("authorization", &bearer(&fixture.token)),
        ],
        &body,
    );
    assert_eq!(status, 413, "{text}");
    assert!(text.contains("too many values"), "{text}");
    assert!(fixture.hub.take_events().is_empty());
}
