//! `agent-q-mcp hook`, as the agents run it: the built binary, hook input on stdin, a
//! connection file, and a server whose hub a test driver answers.

#[path = "../../agent-q-core/tests/common/mod.rs"]
mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agent_q_core::mcp::Event;
use common::*;
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_agent-q-mcp");

fn command(args: &[&str], file: &Path) -> Command {
    let mut command = Command::new(BIN);
    command
        .arg("hook")
        .args(args)
        .arg("--connection-file")
        .arg(file)
        .env_remove(agent_q_mcp::relay::CONNECTION_FILE_ENV)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Run the hook with INPUT; its exit code, its stdout as JSON (Null when empty) and stderr.
fn hook(args: &[&str], file: &Path, input: &str) -> (i32, Value, String) {
    let mut child = command(args, file).spawn().expect("the hook starts");
    // A hook refusing its command line exits without reading: the write may meet a closed pipe.
    if let Some(mut stdin) = child.stdin.take() {
        if let Err(e) = stdin.write_all(input.as_bytes()) {
            assert_eq!(
                e.kind(),
                std::io::ErrorKind::BrokenPipe,
                "writing the hook's input: {e}"
            );
        }
    }
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    let json = if stdout.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout:?}"))
    };
    (
        output.status.code().unwrap_or(-1),
        json,
        String::from_utf8_lossy(&output.stderr).to_string(),
    )
}

fn claude_bash(command: &str) -> String {
    json!({"session_id": "s1", "cwd": "/p", "hook_event_name": "PreToolUse", "tool_name": "Bash",
           "tool_input": {"command": command}, "tool_use_id": "t1"})
    .to_string()
}

fn codex_bash(command: &str) -> String {
    json!({"session_id": "c1", "cwd": "/p", "hook_event_name": "PreToolUse", "tool_name": "Bash",
           "tool_input": {"command": command}, "tool_use_id": "t1", "turn_id": "u"})
    .to_string()
}

fn claude_decision(output: &Value) -> (&str, &str) {
    let specific = &output["hookSpecificOutput"];
    assert_eq!(specific["hookEventName"], "PreToolUse", "{output}");
    (
        specific["permissionDecision"].as_str().unwrap_or(""),
        specific["permissionDecisionReason"].as_str().unwrap_or(""),
    )
}

/// A server with gating on, a driver answering, and its connection file.
fn serving(name: &str) -> (Fixture, Driver, PathBuf) {
    let (fixture, driver) = start_gate_driven();
    let file = write_connection(&temp_dir(name), &fixture.url(), &fixture.token, std::process::id());
    (fixture, driver, file)
}

#[test]
fn each_agent_gets_emacs_answer_in_its_own_shape() {
    let (_fixture, _driver, file) = serving("shapes");
    let claude = ["--agent", "claude"];
    let (code, out, err) = hook(&claude, &file, &claude_bash("git status"));
    assert_eq!((code, claude_decision(&out).0), (0, "allow"), "{err}");
    let (_, out, _) = hook(&claude, &file, &claude_bash("rm -rf /"));
    assert_eq!(claude_decision(&out), ("deny", "The user denied rm -rf /"));
    let (_, out, _) = hook(&claude, &file, &claude_bash("ask me"));
    assert_eq!(claude_decision(&out), ("ask", "decide in the agent"));
    let (_, out, _) = hook(&claude, &file, &claude_bash("edit me"));
    assert_eq!(
        out["hookSpecificOutput"]["updatedInput"],
        json!({"command": "echo edited"})
    );
    let (code, out, _) = hook(&claude, &file, &claude_bash("ls"));
    assert_eq!((code, out), (0, Value::Null), "no opinion: no output");

    let gemini = ["--agent", "gemini", "--event", "pre-tool"];
    let write = json!({"session_id": "g", "cwd": "/p", "hook_event_name": "BeforeTool", "tool_name": "write_file",
                       "tool_input": {"file_path": "/p/a", "content": "hello"}})
    .to_string();
    let (_, out, _) = hook(&gemini, &file, &write);
    assert_eq!(
        out,
        json!({"decision": "allow",
               "hookSpecificOutput": {"hookEventName": "BeforeTool", "tool_input": {"file_path": "/p/a", "content": "HELLO"}}})
    );
    let shell =
        json!({"tool_name": "run_shell_command", "hook_event_name": "BeforeTool", "tool_input": {"command": "rm x"}});
    let (_, out, _) = hook(&gemini, &file, &shell.to_string());
    assert_eq!(out, json!({"decision": "deny", "reason": "The user denied rm x"}));

    let codex = ["--agent", "codex"];
    let (_, out, _) = hook(&codex, &file, &codex_bash("rm y"));
    assert_eq!(claude_decision(&out).0, "deny");
    let (code, out, _) = hook(&codex, &file, &codex_bash("git status"));
    assert_eq!(
        (code, out),
        (0, Value::Null),
        "Codex's PreToolUse cannot allow: its own flow"
    );
    let argv = json!({"tool_name": "Bash", "tool_input": {"command": ["rm", "-f", "it's"]}});
    let (_, out, _) = hook(&codex, &file, &argv.to_string());
    assert_eq!(claude_decision(&out), ("deny", r"The user denied rm -f 'it'\''s'"));
    let permission = json!({"hook_event_name": "PermissionRequest", "tool_name": "Bash",
                            "tool_input": {"command": "git status"}});
    let (_, out, _) = hook(
        &["--agent", "codex", "--event", "permission-request"],
        &file,
        &permission.to_string(),
    );
    assert_eq!(
        out,
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}})
    );
}

#[test]
fn agent_q_own_tools_pass_without_asking_emacs() {
    let dir = temp_dir("own");
    let missing = dir.join("none.json");
    let input = json!({"tool_name": "mcp__agent-q__eval_form", "tool_input": {"form": "(+ 1 2)"}}).to_string();
    let (code, out, err) = hook(&["--agent", "claude"], &missing, &input);
    assert_eq!((code, out, err.as_str()), (0, Value::Null, ""));
    let input = json!({"tool_name": "mcp__agent_q__eval_form", "tool_input": {}}).to_string();
    let (code, out, _) = hook(&["--agent", "codex", "--unreachable", "deny"], &missing, &input);
    assert_eq!((code, out), (0, Value::Null));
}

#[test]
fn without_emacs_each_agent_falls_back_to_its_own_flow_or_denies() {
    let dir = temp_dir("away");
    let missing = dir.join("none.json");
    let (code, out, err) = hook(&["--agent", "claude"], &missing, &claude_bash("git status"));
    let (decision, reason) = claude_decision(&out);
    assert_eq!((code, decision), (0, "ask"));
    assert!(reason.contains("no connection file"), "{reason}");
    assert!(err.contains("no connection file"), "{err}");
    let gemini = json!({"tool_name": "run_shell_command", "tool_input": {"command": "ls"}}).to_string();
    let (_, out, _) = hook(&["--agent", "gemini"], &missing, &gemini);
    assert_eq!(out["decision"], "ask");
    // Codex: its approval policy cannot be told here (no permission_mode, no codex parent):
    // denied, saying why and what to do.
    let (code, out, _) = hook(&["--agent", "codex"], &missing, &codex_bash("ls"));
    let (decision, reason) = claude_decision(&out);
    assert_eq!((code, decision), (0, "deny"));
    assert!(
        reason.contains("could not be told") && reason.contains("agent-q-gate-mode"),
        "{reason}"
    );
    let (_, out, _) = hook(&["--agent", "codex", "--unreachable=deny"], &missing, &codex_bash("ls"));
    let (decision, reason) = claude_decision(&out);
    assert_eq!(decision, "deny");
    assert!(reason.contains("no connection file"), "{reason}");

    // A dead Emacs, a refused connection, a stale token, the gate off: the same fallback.
    let fixture = start();
    let dead = dir.join("dead.json");
    std::fs::write(
        &dead,
        json!({"url": fixture.url(), "token": fixture.token, "pid": i32::MAX}).to_string(),
    )
    .unwrap();
    std::fs::set_permissions(&dead, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let me = std::process::id();
    let stale = write_connection(&temp_dir("stale"), &fixture.url(), &"0".repeat(64), me);
    let closed = write_connection(&temp_dir("closed"), "http://127.0.0.1:1/mcp", &fixture.token, me);
    let off = write_connection(&temp_dir("off"), &fixture.url(), &fixture.token, me);
    for (file, why) in [
        (&dead, "is not running"),
        (&stale, "HTTP 401"),
        (&closed, "nothing answers"),
        (&off, "gate is off"),
    ] {
        let (code, out, _) = hook(&["--agent", "claude"], file, &claude_bash("git status"));
        let (decision, reason) = claude_decision(&out);
        assert_eq!((code, decision), (0, "ask"), "{why}");
        assert!(reason.contains(why), "{why}: {reason}");
    }
}

#[test]
fn unreadable_input_falls_back_and_says_why() {
    let dir = temp_dir("bad");
    let file = dir.join("none.json");
    for (input, why) in [
        ("", "not a JSON object"),
        ("{\"tool_name\": \"Bash\", \"tool_input\": {}}", "has no command"),
    ] {
        let (code, out, err) = hook(&["--agent", "claude"], &file, input);
        let (decision, reason) = claude_decision(&out);
        assert_eq!((code, decision), (0, "ask"));
        assert!(reason.contains(why) && err.contains(why), "{reason} / {err}");
    }
    let (code, _, err) = hook(&["--agent", "vim"], &file, "{}");
    assert_eq!(code, 2, "a bad command line is a usage error: {err}");
    assert!(err.contains("unknown agent"), "{err}");
    let (code, _, err) = hook(&["--event", "pre-tool"], &file, "{}");
    assert_eq!(code, 2);
    assert!(err.contains("--agent"), "{err}");
}

#[test]
fn a_killed_hook_withdraws_its_request() {
    let fixture = start();
    fixture.hub.set_gating(true);
    let file = write_connection(&temp_dir("killed"), &fixture.url(), &fixture.token, std::process::id());
    let mut child = command(&["--agent", "claude"], &file).spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(claude_bash("wait for me").as_bytes())
        .unwrap();
    let key = match &fixture.next_events()[..] {
        [Event::Gate { key, request }] if request.tool == "Bash" => *key,
        other => panic!("{other:?}"),
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let deadline = Instant::now() + PATIENCE;
    loop {
        let events = fixture.hub.take_events();
        if !events.is_empty() {
            assert_eq!(events, vec![Event::GateWithdrawn { key }]);
            break;
        }
        assert!(Instant::now() < deadline, "never withdrawn");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!fixture
        .hub
        .complete_gate(key, agent_q_core::gate::GateAnswer::NoOpinion));
}

#[cfg(unix)]
#[test]
fn the_agent_gone_withdraws_the_request_of_its_living_hook() {
    // The agent killed, its hook left running: the read end of the hook's stdout closes.
    let fixture = start();
    fixture.hub.set_gating(true);
    let file = write_connection(&temp_dir("gone"), &fixture.url(), &fixture.token, std::process::id());
    let mut child = command(&["--agent", "claude"], &file).spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(claude_bash("wait for me").as_bytes())
        .unwrap();
    let key = match &fixture.next_events()[..] {
        [Event::Gate { key, request }] if request.tool == "Bash" => *key,
        other => panic!("{other:?}"),
    };
    // Still waiting for Emacs while its agent reads its output.
    std::thread::sleep(Duration::from_millis(300));
    assert!(child.try_wait().unwrap().is_none(), "the hook stopped waiting");
    assert!(fixture.hub.take_events().is_empty());
    drop(child.stdout.take());
    let deadline = Instant::now() + PATIENCE;
    loop {
        let events = fixture.hub.take_events();
        if !events.is_empty() {
            assert_eq!(events, vec![Event::GateWithdrawn { key }]);
            break;
        }
        assert!(Instant::now() < deadline, "never withdrawn");
        std::thread::sleep(Duration::from_millis(20));
    }
    // And the hook ends by itself.
    let deadline = Instant::now() + PATIENCE;
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the hook never ended");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_allowed_call_costs_little() {
    let (_fixture, _driver, file) = serving("latency");
    let input = claude_bash("git status");
    let mut times: Vec<Duration> = (0..20)
        .map(|_| {
            let start = Instant::now();
            let (_, out, _) = hook(&["--agent", "claude"], &file, &input);
            assert_eq!(claude_decision(&out).0, "allow");
            start.elapsed()
        })
        .collect();
    times.sort();
    let p50 = times[times.len() / 2];
    eprintln!(
        "hook round trip over 20 runs: p50 {p50:?}, max {:?}",
        times[times.len() - 1]
    );
    // Generous: the tests share the machine. The driver here polls every 50 ms at worst.
    assert!(p50 < Duration::from_millis(500), "p50 {p50:?}");
}

/// Codex's hook input with PERMISSION_MODE, in CWD.
fn codex_mode(mode: &str, cwd: &Path) -> String {
    json!({"session_id": "c1", "cwd": cwd, "hook_event_name": "PreToolUse", "tool_name": "Bash",
           "permission_mode": mode, "tool_input": {"command": "touch x"}, "tool_use_id": "t1"})
    .to_string()
}

/// Run the hook with Emacs away under a parent process named `codex` (a shell, through a
/// link) whose command line is CODEX_ARGS; HOME holds the user's Codex configuration.
fn hook_under_codex(codex_args: &[&str], home: &Path, input: &str) -> (Value, String) {
    let dir = temp_dir("codex-parent");
    let codex = dir.join("codex");
    std::os::unix::fs::symlink("/bin/sh", &codex).unwrap();
    let missing = dir.join("none.json");
    // `; :` keeps the shell alive as the hook's parent (no exec of the last command).
    let script = format!(
        "'{BIN}' hook --agent codex --connection-file '{}'; :",
        missing.display()
    );
    let mut child = Command::new(&codex)
        .arg("-c")
        .arg(script)
        .args(codex_args)
        .env("CODEX_HOME", home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    let json = if stdout.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&stdout).unwrap()
    };
    (json, String::from_utf8_lossy(&output.stderr).to_string())
}

#[cfg(target_os = "linux")]
#[test]
fn without_emacs_codex_is_left_to_its_prompt_only_where_its_policy_asks() {
    let home = temp_dir("codex-home");
    let work = temp_dir("codex-work");
    std::fs::write(home.join("config.toml"), "approval_policy = \"untrusted\"\n").unwrap();
    // Under "never" Codex sends bypassPermissions: denied, whatever its files say.
    let (out, err) = hook_under_codex(&["codex"], &home, &codex_mode("bypassPermissions", &work));
    let (decision, reason) = claude_decision(&out);
    assert_eq!(decision, "deny", "{err}");
    assert!(reason.contains("approval policy is never"), "{reason}");
    assert!(reason.contains("agent-q-gate-disconnect-agent"), "{reason}");
    // "untrusted" from its config.toml: Codex asks itself, the hook says nothing.
    let (out, err) = hook_under_codex(&["codex"], &home, &codex_mode("default", &work));
    assert_eq!(out, Value::Null, "{err}");
    assert!(err.contains("no connection file"), "{err}");
    // ...unless its command line says otherwise.
    let (out, _) = hook_under_codex(&["codex", "-a", "on-request"], &home, &codex_mode("default", &work));
    let (decision, reason) = claude_decision(&out);
    assert_eq!(decision, "deny");
    assert!(
        reason.contains("approval policy is on-request (from Codex's command line (-a on-request))"),
        "{reason}"
    );
    let (out, _) = hook_under_codex(&["codex", "--full-auto"], &home, &codex_mode("default", &work));
    assert_eq!(claude_decision(&out).0, "deny");
    // A project's .codex/config.toml wins over the user's.
    std::fs::create_dir_all(work.join(".codex")).unwrap();
    std::fs::write(work.join(".codex/config.toml"), "approval_policy = \"on-failure\"\n").unwrap();
    let (out, _) = hook_under_codex(&["codex"], &home, &codex_mode("default", &work));
    let (decision, reason) = claude_decision(&out);
    assert_eq!(decision, "deny");
    assert!(reason.contains("on-failure"), "{reason}");
    let (out, _) = hook_under_codex(&["codex", "-a", "untrusted"], &home, &codex_mode("default", &work));
    assert_eq!(out, Value::Null);
}

#[test]
fn the_agent_hook_timeout_ends_the_wait_with_a_deny_that_says_so() {
    let fixture = start();
    fixture.hub.set_gating(true);
    let file = write_connection(&temp_dir("timeout"), &fixture.url(), &fixture.token, std::process::id());
    let mut child = command(&["--agent", "claude", "--timeout", "2"], &file)
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(claude_bash("nobody answers").as_bytes())
        .unwrap();
    let key = match &fixture.next_events()[..] {
        [Event::Gate { key, request }] => {
            assert_eq!(request.wait_secs, Some(2), "Emacs is told how long the agent waits");
            *key
        }
        other => panic!("{other:?}"),
    };
    let output = child.wait_with_output().unwrap();
    let out: Value = serde_json::from_slice(&output.stdout).unwrap();
    let (decision, reason) = claude_decision(&out);
    assert_eq!(decision, "deny");
    assert!(
        reason.contains("within 2 s, before the agent's hook timeout"),
        "{reason}"
    );
    let events = fixture.hub.take_events();
    match &events[..] {
        [Event::GateTimedOut { key: k, seconds }] => assert_eq!((*k, *seconds), (key, 2)),
        other => panic!("{other:?}"),
    }
    // A late answer changes nothing.
    assert!(!fixture
        .hub
        .complete_gate(key, agent_q_core::gate::GateAnswer::NoOpinion));
}

/// Gemini CLI's AfterTool hook input for its call of TOOL with INPUT in SESSION.
fn gemini_after(session: &str, tool: &str, input: Value) -> String {
    json!({"session_id": session, "cwd": "/p", "hook_event_name": "AfterTool", "tool_name": tool,
           "tool_input": input, "tool_response": {"llmContent": "done"}})
    .to_string()
}

#[test]
fn gemini_after_tool_tells_its_model_once_what_emacs_changed() {
    let (_fixture, _driver, file) = serving("after-tool");
    let before = ["--agent", "gemini", "--event", "pre-tool"];
    let after = ["--agent", "gemini", "--event", "after-tool"];
    let shell = |command: &str| {
        json!({"session_id": "g1", "cwd": "/p", "hook_event_name": "BeforeTool", "tool_name": "run_shell_command",
               "tool_input": {"command": command}})
        .to_string()
    };
    // Nothing kept before any BeforeTool answer: no output, exit 0.
    let ran = json!({"command": "echo edited"});
    let (code, out, err) = hook(&after, &file, &gemini_after("g1", "run_shell_command", ran.clone()));
    assert_eq!((code, out, err.as_str()), (0, Value::Null, ""));
    // The user edited the command: BeforeTool rewrites it...
    let (_, out, _) = hook(&before, &file, &shell("edit me"));
    assert_eq!(out["hookSpecificOutput"]["tool_input"], ran);
    // ... another session's identical call, or the call as the model wrote it, is told nothing...
    let (_, out, _) = hook(&after, &file, &gemini_after("g2", "run_shell_command", ran.clone()));
    assert_eq!(out, Value::Null);
    let (_, out, _) = hook(
        &after,
        &file,
        &gemini_after("g1", "run_shell_command", json!({"command": "edit me"})),
    );
    assert_eq!(out, Value::Null);
    // ... and AfterTool of the call that ran tells the model, once.
    let (code, out, err) = hook(&after, &file, &gemini_after("g1", "run_shell_command", ran.clone()));
    assert_eq!(code, 0, "{err}");
    assert_eq!(out["hookSpecificOutput"]["hookEventName"], "AfterTool", "{out}");
    let told = out["hookSpecificOutput"]["additionalContext"].as_str().unwrap_or("");
    assert!(
        told.contains("What ran is:\necho edited\nnot the command you wrote:\nedit me"),
        "{told}"
    );
    let (_, out, _) = hook(&after, &file, &gemini_after("g1", "run_shell_command", ran));
    assert_eq!(out, Value::Null, "told once");
}

#[test]
fn gemini_after_tool_with_emacs_away_or_bad_input_is_silent() {
    let dir = temp_dir("after-tool-away");
    let missing = dir.join("no-such-connection.json");
    let after = ["--agent", "gemini", "--event", "after-tool"];
    let input = gemini_after("g1", "run_shell_command", json!({"command": "ls"}));
    let (code, out, err) = hook(&after, &missing, &input);
    assert_eq!(
        (code, out, err.as_str()),
        (0, Value::Null, ""),
        "Emacs away: nothing to tell"
    );
    let (code, out, err) = hook(&after, &missing, "not json");
    assert_eq!((code, out), (0, Value::Null));
    assert!(err.contains("not a JSON object"), "{err}");
    let (code, out, err) = hook(&["--agent", "claude", "--event", "after-tool"], &missing, &input);
    assert_eq!((code, out), (0, Value::Null));
    assert!(err.contains("Gemini CLI's AfterTool"), "{err}");
}

#[test]
fn a_prompt_hook_tells_emacs_a_turn_begins_and_never_blocks_the_prompt() {
    let (_fixture, driver, file) = serving("turn");
    let claude = json!({"session_id": "c-7", "cwd": "/p", "hook_event_name": "UserPromptSubmit",
                        "prompt": "Fix the form.\nThen run the tests."})
    .to_string();
    let (code, out, err) = hook(&["--agent", "claude", "--timeout", "600"], &file, &claude);
    assert_eq!((code, out, err.as_str()), (0, Value::Null, ""));
    let gemini = json!({"session_id": "g-7", "cwd": "/p", "hook_event_name": "BeforeAgent",
                        "timestamp": "2026-11-29T00:00:00Z", "prompt": "Write it"})
    .to_string();
    let (code, out, err) = hook(&["--agent", "gemini"], &file, &gemini);
    assert_eq!((code, out, err.as_str()), (0, Value::Null, ""));
    let deadline = Instant::now() + Duration::from_secs(20);
    let turns = loop {
        let turns: Vec<_> = driver
            .seen
            .lock()
            .unwrap()
            .iter()
            .filter_map(|e| match e {
                Event::Turn { notice } => Some((notice.agent.name(), notice.session_id.clone(), notice.label.clone())),
                _ => None,
            })
            .collect();
        if turns.len() >= 2 || Instant::now() > deadline {
            break turns;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(
        turns,
        vec![
            ("claude", "c-7".to_string(), "Fix the form.".to_string()),
            ("gemini", "g-7".to_string(), "Write it".to_string())
        ]
    );
    // Emacs away: the same, silently.
    let missing = temp_dir("turn-away").join("none.json");
    let (code, out, err) = hook(&["--agent", "claude"], &missing, &claude);
    assert_eq!((code, out, err.as_str()), (0, Value::Null, ""));
}
