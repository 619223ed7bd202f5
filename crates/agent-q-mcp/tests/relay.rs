//! The `agent-q-mcp` stdio relay, as a client starts it: the built binary, a connection file,
//! and a server started by the test; rmcp's client speaks the stdio transport to the relay.

// The server fixture and the rmcp test client are shared with the core's server tests.
#[path = "../../agent-q-core/tests/common/mod.rs"]
mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use agent_q_core::mcp::CallAnswer;
use agent_q_core::spec::SafetyLevel;
use common::*;
use rmcp::model::{CallToolRequestParams, ContentBlock};
use rmcp::ServiceExt;
use serde_json::json;

const RELAY: &str = env!("CARGO_BIN_EXE_agent-q-mcp");

/// Run the relay to completion with stdin closed; returns its exit code and stderr.
fn run_relay(args: &[&str], env_file: Option<&Path>, home: &Path) -> (Option<i32>, String) {
    let mut command = std::process::Command::new(RELAY);
    command
        .args(args)
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove(agent_q_mcp::relay::CONNECTION_FILE_ENV)
        .stdin(Stdio::null());
    if let Some(file) = env_file {
        command.env(agent_q_mcp::relay::CONNECTION_FILE_ENV, file);
    }
    let output = command.output().expect("the relay runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).to_string(),
    )
}

#[test]
fn the_relay_carries_initialize_calls_progress_and_list_changed() {
    let fixture = start_with_interval(Duration::from_millis(150));
    let dir = temp_dir("carry");
    let file = write_connection(&dir, &fixture.url(), &fixture.token, std::process::id());
    let runtime = client_runtime();
    let mut child = {
        let _context = runtime.enter();
        tokio::process::Command::new(RELAY)
            .arg("--connection-file")
            .arg(&file)
            .env("HOME", &dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("the relay starts")
    };
    let stdout = child.stdout.take().unwrap();
    let stdin = child.stdin.take().unwrap();
    let (notes_tx, mut notes) = tokio::sync::mpsc::unbounded_channel();
    let client = runtime
        .block_on(
            TestClient {
                info: client_config(None),
                notes: notes_tx,
            }
            .serve((stdout, stdin)),
        )
        .expect("initialize through the relay");
    assert_eq!(
        client
            .peer_info()
            .and_then(|info| info.server_info.clone())
            .map(|info| info.name),
        Some("agent-q".to_string())
    );
    assert_eq!(runtime.block_on(client.list_all_tools()).unwrap().len(), 3);

    // A call that waits: progress reaches the client through the relay, then the answer.
    let peer = client.peer().clone();
    let params =
        CallToolRequestParams::new("read_file").with_arguments(json!({"path": "/r"}).as_object().unwrap().clone());
    let pending = runtime.spawn(async move { peer.call_tool(params).await });
    let (key, tool, caller, _) = fixture.next_call();
    assert_eq!(tool, "read_file");
    assert_eq!(
        caller.name, "agent-q-test-client",
        "clientInfo passes through the relay"
    );
    assert_eq!(caller.version, "9.9.9");
    assert!(caller.session.is_some());
    fixture.hub.set_status(key, "waiting in Emacs");
    let progress = runtime.block_on(async {
        loop {
            match tokio::time::timeout(PATIENCE, notes.recv()).await {
                Ok(Some(Note::Progress { message, .. })) => break message,
                Ok(Some(_)) => continue,
                _ => break None,
            }
        }
    });
    assert_eq!(progress.as_deref(), Some("waiting in Emacs"));
    assert!(fixture.hub.complete(key, CallAnswer::ok("relayed contents")));
    let result = runtime.block_on(pending).unwrap().unwrap();
    assert_eq!(result.is_error, Some(false));
    assert!(matches!(&result.content[..], [ContentBlock::Text(text)] if text.text == "relayed contents"));

    // A change of the tool list reaches the client through the relay's GET stream.
    let heard = runtime.block_on(async {
        for round in 0..5 {
            let mut tools = sample_tools();
            tools.push(tool_named(round));
            fixture.hub.set_tools(tools, SafetyLevel::Dangerous);
            let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
            while let Ok(Some(note)) = tokio::time::timeout_at(deadline, notes.recv()).await {
                if note == Note::ToolListChanged {
                    return true;
                }
            }
        }
        false
    });
    assert!(heard, "no list_changed through the relay");

    // The client goes away: the relay exits cleanly.
    runtime.block_on(client.cancel()).unwrap();
    let status = runtime
        .block_on(async { tokio::time::timeout(PATIENCE, child.wait()).await })
        .expect("the relay exits when its client closes stdin")
        .unwrap();
    assert!(status.success(), "{status:?}");
}

fn tool_named(round: usize) -> agent_q_core::mcp::ToolInfo {
    tool(&format!("relay_tool_{round}"), SafetyLevel::Safe)
}

#[test]
fn the_relay_fails_clearly_when_no_emacs_serves() {
    let dir = temp_dir("fail");
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();

    // No connection file (the default place under HOME).
    let (code, stderr) = run_relay(&[], None, &home);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("no connection file at"), "{stderr}");
    assert!(stderr.contains(".emacs.d/agent-q-mcp.json"), "{stderr}");

    // The environment variable names the file when no argument does.
    let named = dir.join("named.json");
    let (code, stderr) = run_relay(&[], Some(&named), &home);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains(&named.display().to_string()), "{stderr}");

    let fixture = start();
    let url = fixture.url();

    // The Emacs that wrote the file is gone.
    let mut dead = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    dead.wait().unwrap();
    let file = write_connection(&dir, &url, &fixture.token, dead_pid);
    let (code, stderr) = run_relay(&["--connection-file", file.to_str().unwrap()], None, &home);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains(&format!("(pid {dead_pid}) is not running")), "{stderr}");

    // A file others can read, a URL that is not loopback: refused before any connection.
    let file = write_connection(&dir, &url, &fixture.token, std::process::id());
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let (code, stderr) = run_relay(&["--connection-file", file.to_str().unwrap()], None, &home);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("mode is 0644"), "{stderr}");
    let port = url.trim_start_matches("http://127.0.0.1:").trim_end_matches("/mcp");
    let tricked = format!("http://127.0.0.1:{port}@example.invalid/mcp");
    let file = write_connection(&dir, &tricked, &fixture.token, std::process::id());
    let (code, stderr) = run_relay(&["--connection-file", file.to_str().unwrap()], None, &home);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("user information"), "{stderr}");

    // A stale token.
    let file = write_connection(&dir, &url, &"f".repeat(64), std::process::id());
    let (code, stderr) = run_relay(&["--connection-file", file.to_str().unwrap()], None, &home);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("rejected the token"), "{stderr}");

    // The server stopped: nothing listens on the port.
    let file = write_connection(&dir, &url, &fixture.token, std::process::id());
    drop(fixture);
    let (code, stderr) = run_relay(&[&format!("--connection-file={}", file.display())], None, &home);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("nothing answers at"), "{stderr}");

    // Bad usage.
    let (code, stderr) = run_relay(&["--frobnicate"], None, &home);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("unknown argument --frobnicate"), "{stderr}");
}
