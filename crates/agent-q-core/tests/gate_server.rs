//! The `/gate` route over real sockets: a hook's request reaches the driver through the hub and
//! its answer comes back; the security layer holds; a hook that goes away withdraws its request.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use agent_q_core::gate::{GateAnswer, ToolKind};
use agent_q_core::mcp::{Event, GATE_WITHDRAWN, GATING_OFF};
use common::*;
use serde_json::{json, Value};

fn gate_body(command: &str) -> String {
    json!({"agent": "claude", "event": "pre-tool", "session_id": "s1", "cwd": "/p",
           "tool": "Bash", "tool_use_id": "t1", "tool_input": {"command": command}})
    .to_string()
}

fn post_gate(fixture: &Fixture, body: &str) -> (u16, String) {
    let auth = bearer(&fixture.token);
    let (status, _, body) = http_to(
        fixture.server.port(),
        "POST",
        "/gate",
        &[("authorization", &auth), ("content-type", "application/json")],
        body,
    );
    (status, body)
}

#[test]
fn allow_deny_ask_and_rewrites_make_the_round_trip() {
    let (fixture, _driver) = start_gate_driven();
    let cases = [
        ("git status", json!({"decision": "allow"})),
        (
            "rm -rf /",
            json!({"decision": "deny", "reason": "The user denied rm -rf /"}),
        ),
        ("ask me", json!({"decision": "ask", "reason": "decide in the agent"})),
        (
            "edit this",
            json!({"decision": "allow", "updated_input": {"command": "echo edited"}}),
        ),
        ("ls", json!({"decision": "no-opinion"})),
    ];
    for (command, expected) in cases {
        let (status, body) = post_gate(&fixture, &gate_body(command));
        assert_eq!(status, 200, "{command}: {body}");
        assert_eq!(serde_json::from_str::<Value>(&body).unwrap(), expected, "{command}");
    }
    assert_eq!(fixture.hub.pending_count(), 0);
}

#[test]
fn the_driver_sees_the_normalized_request() {
    let fixture = start();
    fixture.hub.set_gating(true);
    let port = fixture.server.port();
    let token = fixture.token.clone();
    let poster = std::thread::spawn(move || {
        let auth = bearer(&token);
        let body = json!({"agent": "gemini", "event": "pre-tool", "session_id": "g1", "cwd": "/w",
                          "tool": "write_file", "tool_input": {"file_path": "/w/a", "content": "x"},
                          "kind": {"kind": "other"}})
        .to_string();
        http_to(port, "POST", "/gate", &[("authorization", &auth)], &body)
    });
    let events = fixture.next_events();
    let Some(Event::Gate { key, request }) = events.into_iter().next() else {
        panic!("no gate event");
    };
    assert_eq!(request.session_id, "g1");
    assert_eq!(request.cwd, "/w");
    assert_eq!(
        request.kind,
        ToolKind::Write {
            path: "/w/a".into(),
            content: "x".into()
        },
        "the kind is derived, not believed"
    );
    assert!(fixture.hub.complete_gate(key, GateAnswer::Deny { reason: "no".into() }));
    let (status, _, body) = poster.join().unwrap();
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"decision": "deny", "reason": "no"})
    );
}

#[test]
fn the_security_layer_guards_the_gate() {
    let fixture = start();
    fixture.hub.set_gating(true);
    let port = fixture.server.port();
    let body = gate_body("git status");
    let (status, _, _) = http_to(port, "POST", "/gate", &[], &body);
    assert_eq!(status, 401, "no token");
    let (status, _, _) = http_to(port, "POST", "/gate", &[("authorization", "Bearer wrong")], &body);
    assert_eq!(status, 401, "wrong token");
    let auth = bearer(&fixture.token);
    let (status, _, _) = http_to(
        port,
        "POST",
        "/gate",
        &[("authorization", &auth), ("origin", "https://evil.example")],
        &body,
    );
    assert_eq!(status, 403, "foreign origin");
    let (status, _, _) = http_to(
        port,
        "POST",
        "/gate",
        &[("authorization", &auth), ("host", "evil.example")],
        &body,
    );
    assert!(status == 403 || status == 400, "foreign host: {status}");
    let (status, _, _) = http_to(port, "GET", "/gate", &[("authorization", &auth)], "");
    assert_eq!(status, 405, "only POST");
    let (status, _, text) = http_to(
        port,
        "POST",
        "/gate",
        &[("authorization", &auth)],
        "{\"agent\": \"vim\"}",
    );
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("unknown variant"), "{text}");
    let (status, _, text) = http_to(
        port,
        "POST",
        "/gate",
        &[("authorization", &auth)],
        &json!({"agent": "claude", "event": "pre-tool", "tool": "Bash", "tool_input": {}}).to_string(),
    );
    assert_eq!(status, 400);
    assert!(text.contains("has no command"), "{text}");
    assert!(
        fixture.hub.take_events().is_empty(),
        "nothing refused reached the driver"
    );
}

#[test]
fn gating_off_or_stopped_answers_503_at_once() {
    let mut fixture = start();
    let (status, body) = post_gate(&fixture, &gate_body("git status"));
    assert_eq!((status, body.as_str()), (503, GATING_OFF));
    fixture.hub.set_gating(true);
    let port = fixture.server.port();
    let auth = bearer(&fixture.token);
    let waiting =
        std::thread::spawn(move || http_to(port, "POST", "/gate", &[("authorization", &auth)], &gate_body("wait")));
    assert!(matches!(fixture.next_events()[..], [Event::Gate { .. }]));
    fixture.hub.set_gating(false);
    let (status, _, body) = waiting.join().unwrap();
    assert_eq!((status, body.as_str()), (503, GATE_WITHDRAWN));
    fixture.server.stop().wait();
}

#[test]
fn a_hook_that_goes_away_withdraws_its_request_and_a_late_answer_is_dropped() {
    let fixture = start();
    fixture.hub.set_gating(true);
    let body = gate_body("wait");
    let mut stream = TcpStream::connect(("127.0.0.1", fixture.server.port())).unwrap();
    let request = format!(
        "POST /gate HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\nContent-Length: {}\r\n\r\n{body}",
        fixture.token,
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let key = match &fixture.next_events()[..] {
        [Event::Gate { key, .. }] => *key,
        other => panic!("{other:?}"),
    };
    assert_eq!(fixture.hub.pending_count(), 1);
    drop(stream);
    let deadline = Instant::now() + PATIENCE;
    let withdrawn = loop {
        let events = fixture.hub.take_events();
        if !events.is_empty() {
            break events;
        }
        assert!(Instant::now() < deadline, "the request was never withdrawn");
        let _ = fixture.wakes.recv_timeout(Duration::from_millis(50));
    };
    assert_eq!(withdrawn, vec![Event::GateWithdrawn { key }]);
    assert_eq!(fixture.hub.pending_count(), 0);
    assert!(
        !fixture.hub.complete_gate(key, GateAnswer::NoOpinion),
        "a late answer is dropped"
    );
}

#[test]
fn many_hooks_wait_at_once_and_each_gets_its_own_answer() {
    let fixture = start();
    fixture.hub.set_gating(true);
    const HOOKS: usize = 40;
    let port = fixture.server.port();
    let posters: Vec<_> = (0..HOOKS)
        .map(|i| {
            let auth = bearer(&fixture.token);
            std::thread::spawn(move || {
                // Each its own session, to stay under the per-session cap.
                let body = json!({"agent": "codex", "event": "pre-tool", "session_id": format!("s{i}"),
                                  "tool": "Bash", "tool_input": {"command": format!("rm f{i}")}})
                .to_string();
                let (status, _, text) = http_to(port, "POST", "/gate", &[("authorization", &auth)], &body);
                (i, status, text)
            })
        })
        .collect();
    let mut keys = Vec::new();
    let deadline = Instant::now() + PATIENCE;
    while keys.len() < HOOKS && Instant::now() < deadline {
        for event in fixture.next_events() {
            if let Event::Gate { key, request } = event {
                keys.push((key, request));
            }
        }
    }
    assert_eq!(keys.len(), HOOKS, "all wait at once");
    assert_eq!(fixture.hub.pending_count(), HOOKS);
    // Answered in reverse order: each reaches its own hook.
    for (key, request) in keys.iter().rev() {
        let ToolKind::Shell { command, .. } = &request.kind else {
            panic!("{request:?}")
        };
        assert!(fixture.hub.complete_gate(
            *key,
            GateAnswer::Deny {
                reason: command.clone()
            }
        ));
    }
    for poster in posters {
        let (i, status, text) = poster.join().unwrap();
        assert_eq!(status, 200);
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            json!({"decision": "deny", "reason": format!("rm f{i}")})
        );
    }
}

#[test]
fn gemini_is_told_through_the_told_route_once_and_only_for_its_call() {
    let (fixture, _driver) = start_gate_driven();
    let auth = bearer(&fixture.token);
    let told = |body: &Value| {
        let (status, _, text) = http_to(
            fixture.server.port(),
            "POST",
            "/gate/told",
            &[("authorization", &auth), ("content-type", "application/json")],
            &body.to_string(),
        );
        assert_eq!(status, 200, "{text}");
        serde_json::from_str::<Value>(&text).unwrap()["context"].clone()
    };
    let gemini = |command: &str| {
        json!({"agent": "gemini", "event": "pre-tool", "session_id": "g1", "cwd": "/p",
               "tool": "run_shell_command", "tool_input": {"command": command}})
        .to_string()
    };
    let (status, body) = post_gate(&fixture, &gemini("edit me"));
    assert_eq!(status, 200, "{body}");
    let ran = json!({"session_id": "g1", "tool": "run_shell_command", "tool_input": {"command": "echo edited"}});
    let words = told(&ran);
    assert!(
        words.as_str().unwrap_or("").contains("What ran is:\necho edited"),
        "{words}"
    );
    assert_eq!(told(&ran), Value::Null, "told once");
    // Claude's model is told with its PreToolUse answer: nothing kept for it.
    let (status, _) = post_gate(&fixture, &gate_body("edit me"));
    assert_eq!(status, 200);
    assert_eq!(
        told(&json!({"session_id": "s1", "tool": "Bash", "tool_input": {"command": "echo edited"}})),
        Value::Null
    );
    // The route is behind the token too, and refuses what is not a call.
    let (status, _, _) = http_to(fixture.server.port(), "POST", "/gate/told", &[], &ran.to_string());
    assert_eq!(status, 401);
    let (status, _, _) = http_to(
        fixture.server.port(),
        "POST",
        "/gate/told",
        &[("authorization", &auth)],
        "{\"tool_input\": 1}",
    );
    assert_eq!(status, 400);
}
