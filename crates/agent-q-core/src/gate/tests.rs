//! Every agent × kind × answer, and malformed input.

use super::*;
use serde_json::json;

fn parse(agent: Agent, event: Option<HookEvent>, value: Json) -> Result<GateRequest, GateError> {
    parse_hook_input(agent, event, value.to_string().as_bytes())
}

fn hook(agent: Agent, tool: &str, input: Json) -> GateRequest {
    let event = match agent {
        Agent::Gemini => "BeforeTool",
        _ => "PreToolUse",
    };
    parse(
        agent,
        None,
        json!({"session_id": "s1", "cwd": "/p", "hook_event_name": event, "tool_name": tool,
               "tool_input": input, "tool_use_id": "tu1", "transcript_path": "/t"}),
    )
    .unwrap_or_else(|e| panic!("{tool}: {e}"))
}

fn edit(old: &str, new: &str, all: bool, expected: Option<u64>) -> TextEdit {
    TextEdit {
        old_string: old.into(),
        new_string: new.into(),
        replace_all: all,
        expected_replacements: expected,
    }
}

#[test]
fn claude_tools_are_classified() {
    let request = hook(
        Agent::Claude,
        "Bash",
        json!({"command": "git status", "description": "d"}),
    );
    assert_eq!(
        request.kind,
        ToolKind::Shell {
            command: "git status".into(),
            argv: None,
            dir: None
        }
    );
    assert_eq!(request.session_id, "s1");
    assert_eq!(request.cwd, "/p");
    assert_eq!(request.tool_use_id.as_deref(), Some("tu1"));
    assert_eq!(request.event, HookEvent::PreTool);
    assert_eq!(request.tool_input["description"], "d");
    let cases = [
        (
            "Edit",
            json!({"file_path": "/p/a", "old_string": "x", "new_string": "y", "replace_all": true}),
            ToolKind::Edit {
                path: "/p/a".into(),
                edits: vec![edit("x", "y", true, None)],
                multi: false,
            },
        ),
        (
            "MultiEdit",
            json!({"file_path": "/p/a", "edits": [{"old_string": "a", "new_string": "b"},
                                                   {"old_string": "c", "new_string": "d", "replace_all": true}]}),
            ToolKind::Edit {
                path: "/p/a".into(),
                edits: vec![edit("a", "b", false, None), edit("c", "d", true, None)],
                multi: true,
            },
        ),
        (
            "Write",
            json!({"file_path": "/p/w", "content": "hi"}),
            ToolKind::Write {
                path: "/p/w".into(),
                content: "hi".into(),
            },
        ),
        (
            "Read",
            json!({"file_path": "/p/.env", "limit": 3}),
            ToolKind::Read {
                paths: vec!["/p/.env".into()],
            },
        ),
        (
            "WebFetch",
            json!({"url": "https://example.com/x", "prompt": "summarize"}),
            ToolKind::Fetch {
                urls: vec!["https://example.com/x".into()],
            },
        ),
        (
            "Grep",
            json!({"pattern": "SECRET", "path": "/home/u/.authinfo"}),
            ToolKind::Search {
                path: Some("/home/u/.authinfo".into()),
                globs: vec![],
                reach: Some("it searches every file under its folder, .env and other sensitive files included".into()),
            },
        ),
        (
            "Grep",
            json!({"pattern": "x", "glob": "*.rs *.md"}),
            ToolKind::Search {
                path: None,
                globs: vec!["*.rs".into(), "*.md".into()],
                reach: None,
            },
        ),
        (
            "Glob",
            json!({"pattern": "**/*.env*", "path": "/p"}),
            ToolKind::Search {
                path: Some("/p".into()),
                globs: vec!["**/*.env*".into()],
                reach: Some("the glob \"**/*.env*\" can match .env, a sensitive name".into()),
            },
        ),
        ("NotebookEdit", json!({"notebook_path": "/n"}), ToolKind::Other),
        (
            "mcp__agent-q__read_file",
            json!({"path": "x"}),
            ToolKind::AgentQ {
                tool: "read_file".into(),
            },
        ),
        ("mcp__other__read_file", json!({}), ToolKind::Other),
    ];
    for (tool, input, kind) in cases {
        assert_eq!(hook(Agent::Claude, tool, input).kind, kind, "{tool}");
    }
}

#[test]
fn gemini_tools_are_classified_under_both_spellings() {
    let cases = [
        (
            "run_shell_command",
            json!({"command": "ls -la", "description": "d", "dir_path": "sub"}),
            ToolKind::Shell {
                command: "ls -la".into(),
                argv: None,
                dir: Some("sub".into()),
            },
        ),
        (
            "run_shell_command",
            json!({"command": "ls", "directory": "old"}),
            ToolKind::Shell {
                command: "ls".into(),
                argv: None,
                dir: Some("old".into()),
            },
        ),
        (
            "write_file",
            json!({"file_path": "/p/w", "content": ""}),
            ToolKind::Write {
                path: "/p/w".into(),
                content: "".into(),
            },
        ),
        (
            "replace",
            json!({"file_path": "/p/r", "old_string": "a", "new_string": "b", "expected_replacements": 2}),
            ToolKind::Edit {
                path: "/p/r".into(),
                edits: vec![edit("a", "b", false, Some(2))],
                multi: false,
            },
        ),
        (
            "read_file",
            json!({"absolute_path": "/p/old"}),
            ToolKind::Read {
                paths: vec!["/p/old".into()],
            },
        ),
        (
            "read_file",
            json!({"file_path": "/p/new"}),
            ToolKind::Read {
                paths: vec!["/p/new".into()],
            },
        ),
        (
            "read_many_files",
            json!({"paths": ["a", "b/*.rs"]}),
            ToolKind::Read {
                paths: vec!["a".into(), "b/*.rs".into()],
            },
        ),
        (
            "read_many_files",
            json!({"include": ["c"]}),
            ToolKind::Read {
                paths: vec!["c".into()],
            },
        ),
        (
            "web_fetch",
            json!({"prompt": "Compare https://a.example/x, and (HTTP://b.example/y). Again https://a.example/x"}),
            ToolKind::Fetch {
                urls: vec!["https://a.example/x".into(), "HTTP://b.example/y".into()],
            },
        ),
        (
            "web_fetch",
            json!({"url": "https://c.example", "prompt": "https://ignored.example"}),
            ToolKind::Fetch {
                urls: vec!["https://c.example".into()],
            },
        ),
        (
            "web_fetch",
            json!({"prompt": "no link"}),
            ToolKind::Fetch { urls: vec![] },
        ),
        (
            "glob",
            json!({"pattern": "src/**/*.ts", "dir_path": "/w"}),
            ToolKind::Search {
                path: Some("/w".into()),
                globs: vec!["src/**/*.ts".into()],
                reach: None,
            },
        ),
        (
            "grep_search",
            json!({"pattern": "SECRET", "include_pattern": ".env"}),
            ToolKind::Search {
                path: None,
                globs: vec![".env".into()],
                reach: Some("the glob \".env\" can match .env, a sensitive name".into()),
            },
        ),
        (
            "search_file_content",
            json!({"pattern": "x", "path": "/w/src", "include": "*.py"}),
            ToolKind::Search {
                path: Some("/w/src".into()),
                globs: vec!["*.py".into()],
                reach: None,
            },
        ),
        (
            "mcp_agent-q_eval_form",
            json!({}),
            ToolKind::AgentQ {
                tool: "eval_form".into(),
            },
        ),
        (
            "mcp_agent_q_eval_form",
            json!({}),
            ToolKind::AgentQ {
                tool: "eval_form".into(),
            },
        ),
    ];
    for (tool, input, kind) in cases {
        assert_eq!(hook(Agent::Gemini, tool, input).kind, kind, "{tool}");
    }
}

#[test]
fn codex_tools_are_classified() {
    let shell = hook(Agent::Codex, "Bash", json!({"command": "git diff", "workdir": "/w"}));
    assert_eq!(
        shell.kind,
        ToolKind::Shell {
            command: "git diff".into(),
            argv: None,
            dir: Some("/w".into())
        }
    );
    let argv = hook(
        Agent::Codex,
        "Bash",
        json!({"command": ["bash", "-lc", "echo 'hi' && ls"]}),
    );
    assert_eq!(
        argv.kind,
        ToolKind::Shell {
            command: r#"bash -lc 'echo '\''hi'\'' && ls'"#.into(),
            argv: Some(vec!["bash".into(), "-lc".into(), "echo 'hi' && ls".into()]),
            dir: None
        }
    );
    let exec = hook(Agent::Codex, "exec_command", json!({"cmd": "pwd"}));
    assert!(matches!(exec.kind, ToolKind::Shell { ref command, .. } if command == "pwd"));
    let patch = "*** Begin Patch\n*** Add File: new.txt\n+hi\n*** Update File: src/a.rs\n*** Move to: src/b.rs\n@@\n-x\n+y\n*** Delete File: old.txt\n*** End Patch\n";
    let expected = ToolKind::Patch {
        patch: patch.into(),
        files: vec![
            PatchFile {
                action: PatchAction::Add,
                path: "new.txt".into(),
                move_to: None,
            },
            PatchFile {
                action: PatchAction::Update,
                path: "src/a.rs".into(),
                move_to: Some("src/b.rs".into()),
            },
            PatchFile {
                action: PatchAction::Delete,
                path: "old.txt".into(),
                move_to: None,
            },
        ],
    };
    assert_eq!(
        hook(Agent::Codex, "apply_patch", json!({"command": patch})).kind,
        expected
    );
    assert_eq!(
        hook(Agent::Codex, "apply_patch", json!({"command": ["apply_patch", patch]})).kind,
        expected
    );
    assert_eq!(
        hook(Agent::Codex, "mcp__agent_q__list_buffers", json!({})).kind,
        ToolKind::AgentQ {
            tool: "list_buffers".into()
        }
    );
    assert_eq!(hook(Agent::Codex, "view_image", json!({})).kind, ToolKind::Other);
}

#[test]
fn patch_headers_with_crlf_and_stray_moves() {
    let files = patch_files("*** Move to: nowhere\r\n*** Delete File: d\r\n*** Move to: x\r\n*** Add File:  a b \r\n");
    assert_eq!(
        files,
        vec![
            PatchFile {
                action: PatchAction::Delete,
                path: "d".into(),
                move_to: None
            },
            PatchFile {
                action: PatchAction::Add,
                path: "a b".into(),
                move_to: None
            },
        ]
    );
    assert!(patch_files("").is_empty());
}

#[test]
fn malformed_input_is_refused_with_the_problem_named() {
    let cases: Vec<(Agent, &[u8], &str)> = vec![
        (Agent::Claude, b"", "not a JSON object"),
        (Agent::Claude, b"not json", "not a JSON object"),
        (Agent::Claude, b"[1,2]", "it is an array"),
        (Agent::Claude, b"{}", "has no tool_name"),
        (Agent::Claude, br#"{"tool_name": ""}"#, "has no tool_name"),
        (Agent::Claude, br#"{"tool_name": 3}"#, "tool_name is a number, not a string"),
        (Agent::Claude, br#"{"tool_name": "Bash", "tool_input": "ls"}"#, "tool_input is a string"),
        (Agent::Claude, br#"{"tool_name": "Bash", "tool_input": {}}"#, "Bash call's tool_input has no command"),
        (
            Agent::Claude,
            br#"{"tool_name": "Bash", "tool_input": {"command": ["ls"]}}"#,
            "has command as an array, not a string",
        ),
        (
            Agent::Claude,
            br#"{"tool_name": "Edit", "tool_input": {"file_path": "f", "old_string": "a"}}"#,
            "has no new_string",
        ),
        (
            Agent::Claude,
            br#"{"tool_name": "Edit", "tool_input": {"file_path": "f", "old_string": "a", "new_string": "b", "replace_all": "yes"}}"#,
            "replace_all as a string, not a boolean",
        ),
        (
            Agent::Claude,
            br#"{"tool_name": "MultiEdit", "tool_input": {"file_path": "f", "edits": [{"old_string": "a", "new_string": "b"}, 7]}}"#,
            "edits[1] is not an object",
        ),
        (Agent::Claude, br#"{"tool_name": "MultiEdit", "tool_input": {"file_path": "f"}}"#, "no edits list"),
        (Agent::Claude, br#"{"tool_name": "Bash", "session_id": {}}"#, "session_id is an object"),
        (
            Agent::Claude,
            br#"{"tool_name": "Bash", "hook_event_name": "PostToolUse", "tool_input": {"command": "ls"}}"#,
            "hook_event_name PostToolUse",
        ),
        (
            Agent::Gemini,
            br#"{"tool_name": "replace", "tool_input": {"file_path": "f", "old_string": "a", "new_string": "b", "expected_replacements": -1}}"#,
            "expected_replacements that is not a non-negative integer",
        ),
        (Agent::Gemini, br#"{"tool_name": "read_many_files", "tool_input": {"paths": [1]}}"#, "paths[0] as a number"),
        (Agent::Gemini, br#"{"tool_name": "write_file", "tool_input": {"content": "x"}}"#, "has no file_path or absolute_path"),
        (Agent::Codex, br#"{"tool_name": "Bash", "tool_input": {"command": []}}"#, "has an empty command"),
        (Agent::Codex, br#"{"tool_name": "Bash", "tool_input": {"command": [1]}}"#, "command[0] as a number"),
        (Agent::Codex, br#"{"tool_name": "apply_patch", "tool_input": {"command": 5}}"#, "not a string or a list"),
        (Agent::Codex, br#"{"tool_name": "apply_patch", "tool_input": {}}"#, "has no command or patch or input"),
    ];
    for (agent, bytes, expected) in cases {
        let error = parse_hook_input(agent, None, bytes).expect_err(expected).to_string();
        assert!(error.contains(expected), "{expected:?} not in {error:?}");
    }
    let long = json!({"tool_name": "Bash", "session_id": "x".repeat(MAX_NAME_BYTES + 1)});
    assert!(parse(Agent::Claude, None, long)
        .unwrap_err()
        .to_string()
        .contains("longer than"));
    let big = vec![b' '; MAX_HOOK_INPUT_BYTES + 1];
    assert_eq!(
        parse_hook_input(Agent::Claude, None, &big),
        Err(GateError::TooLarge {
            limit: MAX_HOOK_INPUT_BYTES
        })
    );
    // Nesting deeper than the JSON parser's limit is an error, not a stack overflow.
    let deep = format!(
        "{{\"tool_name\":\"x\",\"tool_input\":{{\"a\":{}}}}}",
        "[".repeat(100_000)
    );
    assert!(parse_hook_input(Agent::Claude, None, deep.as_bytes()).is_err());
}

#[test]
fn the_event_comes_from_the_flag_or_the_input_and_must_agree() {
    let input = |name: Option<&str>| {
        let mut value = json!({"tool_name": "Bash", "tool_input": {"command": "ls"}});
        if let Some(name) = name {
            value["hook_event_name"] = name.into();
        }
        value
    };
    let event = |agent, flag, name| parse(agent, flag, input(name)).map(|r| r.event);
    assert_eq!(event(Agent::Claude, None, None), Ok(HookEvent::PreTool));
    assert_eq!(
        event(Agent::Claude, None, Some("PermissionRequest")),
        Ok(HookEvent::PermissionRequest)
    );
    assert_eq!(
        event(Agent::Codex, Some(HookEvent::PermissionRequest), None),
        Ok(HookEvent::PermissionRequest)
    );
    assert_eq!(
        event(Agent::Gemini, Some(HookEvent::PreTool), Some("BeforeTool")),
        Ok(HookEvent::PreTool)
    );
    assert!(matches!(
        event(Agent::Gemini, Some(HookEvent::PreTool), Some("PreToolUse")),
        Err(GateError::EventMismatch { .. })
    ));
    assert!(matches!(
        event(Agent::Claude, Some(HookEvent::PreTool), Some("PermissionRequest")),
        Err(GateError::EventMismatch { .. })
    ));
    assert_eq!(
        event(Agent::Gemini, Some(HookEvent::PermissionRequest), None),
        Err(GateError::UnsupportedEvent {
            agent: "gemini",
            event: "permission-request"
        })
    );
}

fn answers() -> [GateAnswer; 5] {
    [
        GateAnswer::Allow { updated_input: None },
        GateAnswer::Allow {
            updated_input: Some(json!({"command": "git status"})),
        },
        GateAnswer::Deny { reason: "no".into() },
        GateAnswer::Ask {
            reason: Some("look".into()),
        },
        GateAnswer::NoOpinion,
    ]
}

/// The output of each answer, in the order of [`answers`]; `Json::Null` for no output.
fn outputs(agent: Agent, event: HookEvent) -> Vec<Json> {
    answers()
        .iter()
        .map(|answer| {
            let output = format_answer(agent, event, answer);
            assert_eq!(output.exit_code, 0);
            if output.stdout.is_empty() {
                Json::Null
            } else {
                assert!(output.stdout.ends_with('\n'));
                serde_json::from_str(&output.stdout).expect("one JSON object")
            }
        })
        .collect()
}

fn pre(decision: &str, reason: Option<&str>, input: Option<Json>) -> Json {
    let mut out = json!({"hookEventName": "PreToolUse", "permissionDecision": decision});
    if let Some(reason) = reason {
        out["permissionDecisionReason"] = reason.into();
    }
    if let Some(input) = input {
        out["updatedInput"] = input;
    }
    json!({ "hookSpecificOutput": out })
}

fn permission(decision: Json) -> Json {
    json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}})
}

#[test]
fn claude_answers() {
    let input = json!({"command": "git status"});
    assert_eq!(
        outputs(Agent::Claude, HookEvent::PreTool),
        vec![
            pre("allow", Some(ALLOWED), None),
            pre("allow", Some(ALLOWED), Some(input.clone())),
            pre("deny", Some("no"), None),
            pre("ask", Some("look"), None),
            Json::Null,
        ]
    );
    assert_eq!(
        outputs(Agent::Claude, HookEvent::PermissionRequest),
        vec![
            permission(json!({"behavior": "allow"})),
            permission(json!({"behavior": "allow", "updatedInput": input})),
            permission(json!({"behavior": "deny", "message": "no"})),
            Json::Null,
            Json::Null,
        ]
    );
    let bare = format_answer(Agent::Claude, HookEvent::PreTool, &GateAnswer::Ask { reason: None });
    assert_eq!(
        serde_json::from_str::<Json>(&bare.stdout).unwrap(),
        pre("ask", None, None)
    );
}

#[test]
fn gemini_answers() {
    assert_eq!(
        outputs(Agent::Gemini, HookEvent::PreTool),
        vec![
            json!({"decision": "allow"}),
            json!({"decision": "allow",
                   "hookSpecificOutput": {"hookEventName": "BeforeTool", "tool_input": {"command": "git status"}}}),
            json!({"decision": "deny", "reason": "no"}),
            json!({"decision": "ask", "reason": "look"}),
            Json::Null,
        ]
    );
    let bare = format_answer(Agent::Gemini, HookEvent::PreTool, &GateAnswer::Ask { reason: None });
    assert_eq!(bare.stdout, "{\"decision\":\"ask\"}\n");
}

#[test]
fn codex_answers() {
    assert_eq!(
        outputs(Agent::Codex, HookEvent::PreTool),
        vec![
            Json::Null,
            pre("allow", Some(ALLOWED), Some(json!({"command": "git status"}))),
            pre("deny", Some("no"), None),
            Json::Null,
            Json::Null,
        ]
    );
    assert_eq!(
        outputs(Agent::Codex, HookEvent::PermissionRequest),
        vec![
            permission(json!({"behavior": "allow"})),
            Json::Null,
            permission(json!({"behavior": "deny", "message": "no"})),
            Json::Null,
            Json::Null,
        ]
    );
}

#[test]
fn requests_and_answers_cross_the_wire_and_the_kind_is_derived_again() {
    let request = hook(Agent::Claude, "Bash", json!({"command": "ls"}));
    let mut wire = serde_json::to_value(&request).unwrap();
    assert_eq!(wire["agent"], "claude");
    assert_eq!(wire["event"], "pre-tool");
    assert_eq!(wire["kind"]["kind"], "shell");
    // A kind that disagrees with the input is not believed.
    wire["kind"] = json!({"kind": "other"});
    let back: GateRequest = serde_json::from_value(wire.clone()).unwrap();
    assert_eq!(back, request);
    wire["tool_input"] = json!({});
    let refused = serde_json::from_value::<GateRequest>(wire).unwrap_err().to_string();
    assert!(refused.contains("has no command"), "{refused}");
    for answer in answers() {
        let text = serde_json::to_string(&answer).unwrap();
        assert_eq!(serde_json::from_str::<GateAnswer>(&text).unwrap(), answer, "{text}");
    }
    assert_eq!(
        serde_json::to_value(GateAnswer::NoOpinion).unwrap(),
        json!({"decision": "no-opinion"})
    );
    assert_eq!(
        serde_json::from_str::<GateAnswer>(r#"{"decision":"deny","reason":"r"}"#).unwrap(),
        GateAnswer::Deny { reason: "r".into() }
    );
}

#[test]
fn agent_q_tools_are_recognized_under_every_spelling() {
    for (name, own) in [
        ("mcp__agent-q__read_file", Some("read_file")),
        ("mcp__agent_q__read_file", Some("read_file")),
        ("mcp_agent-q_read_file", Some("read_file")),
        ("mcp_agent_q_read_file", Some("read_file")),
        ("mcp__agent-q__", None),
        ("mcp__agent-qx__read_file", None),
        ("Bash", None),
    ] {
        assert_eq!(agent_q_tool(name), own, "{name}");
    }
    assert!(hook(Agent::Claude, "mcp__agent-q__eval_form", json!({})).is_agent_q_tool());
}

#[test]
fn names_parse_and_print() {
    for agent in [Agent::Claude, Agent::Gemini, Agent::Codex] {
        assert_eq!(agent.name().parse::<Agent>(), Ok(agent));
    }
    assert!("vim".parse::<Agent>().is_err());
    for event in [HookEvent::PreTool, HookEvent::PermissionRequest] {
        assert_eq!(event.name().parse::<HookEvent>(), Ok(event));
    }
    assert!("post-tool".parse::<HookEvent>().is_err());
}

#[test]
fn urls_are_cut_at_the_right_places() {
    assert_eq!(
        gemini::urls_in("see <https://x.example/a?b=1>"),
        vec!["https://x.example/a?b=1"]
    );
    assert_eq!(gemini::urls_in("\"http://y.example\"."), vec!["http://y.example"]);
    assert!(gemini::urls_in("https:// and http://").is_empty());
    let many: String = (0..100).map(|i| format!("https://h{i}.example ")).collect();
    assert_eq!(gemini::urls_in(&many).len(), MAX_FETCH_URLS);
    // Multibyte text around the URLs does not panic.
    assert_eq!(
        gemini::urls_in("été https://é.example/ü été"),
        vec!["https://é.example/ü"]
    );
}

#[test]
fn the_model_is_told_the_command_that_ran() {
    let request = hook(Agent::Claude, "Bash", json!({"command": "git status; touch x"}));
    let edited = GateAnswer::Allow {
        updated_input: Some(json!({"command": "touch edited-by-user"})),
    };
    let told = model_context(&request, &edited).expect("told");
    assert!(told.contains("What ran is:\ntouch edited-by-user\n"), "{told}");
    assert!(
        told.contains("not the command you wrote:\ngit status; touch x\n"),
        "{told}"
    );
    let output: Json = serde_json::from_str(&format_answer_to(&request, &edited).stdout).unwrap();
    assert_eq!(output["hookSpecificOutput"]["additionalContext"], json!(told));
    assert_eq!(output["hookSpecificOutput"]["permissionDecision"], json!("allow"));
    // Unchanged, plain allow, deny: nothing more to tell.
    let same = GateAnswer::Allow {
        updated_input: Some(json!({"command": "git status; touch x"})),
    };
    assert_eq!(model_context(&request, &same), None);
    assert_eq!(
        model_context(&request, &GateAnswer::Allow { updated_input: None }),
        None
    );
    // Codex reads it too (exec_command's cmd); Gemini's BeforeTool does not: its output is as before.
    let codex = hook(Agent::Codex, "exec_command", json!({"cmd": "ls"}));
    let edited = GateAnswer::Allow {
        updated_input: Some(json!({"cmd": "ls -a"})),
    };
    let output: Json = serde_json::from_str(&format_answer_to(&codex, &edited).stdout).unwrap();
    assert!(output["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .contains("What ran is:\nls -a\n"));
    let gemini = hook(Agent::Gemini, "run_shell_command", json!({"command": "ls"}));
    let edited = GateAnswer::Allow {
        updated_input: Some(json!({"command": "ls -a"})),
    };
    assert_eq!(
        format_answer_to(&gemini, &edited),
        format_answer(Agent::Gemini, HookEvent::PreTool, &edited)
    );
}

#[test]
fn the_model_is_told_which_changes_were_rejected() {
    let current = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n";
    let request = hook(
        Agent::Claude,
        "Edit",
        json!({"file_path": "/p/f.txt", "old_string": "two\nthree\nfour\nfive\nsix\nseven\neight\nnine",
               "new_string": "TWO\nthree\nfour\nfive\nsix\nseven\neight\nNINE"}),
    );
    // The user accepted the first hunk only: the whole text replaced by the accepted one.
    let accepted = "one\nTWO\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n";
    let answer = GateAnswer::Allow {
        updated_input: Some(json!({"file_path": "/p/f.txt", "old_string": current, "new_string": accepted})),
    };
    let told = model_context(&request, &answer).expect("told");
    assert!(told.contains("edit of /p/f.txt"), "{told}");
    assert!(told.contains("accepted only part of it"), "{told}");
    assert!(told.contains("\n-NINE\n+nine\n"), "{told}");
    assert!(!told.contains("-TWO"), "{told}");
    // Every change accepted: the input is unchanged, nothing to tell.
    let all = GateAnswer::Allow {
        updated_input: Some(json!({"file_path": "/p/f.txt", "old_string": current,
                                   "new_string": "one\nTWO\nthree\nfour\nfive\nsix\nseven\neight\nNINE\nten\n"})),
    };
    assert_eq!(model_context(&request, &all), None);
    // A Write accepted in part.
    let write = hook(
        Agent::Claude,
        "Write",
        json!({"file_path": "/p/g.txt", "content": "a\nB\n"}),
    );
    let answer = GateAnswer::Allow {
        updated_input: Some(json!({"file_path": "/p/g.txt", "content": "a\nb\n"})),
    };
    assert!(model_context(&write, &answer).unwrap().contains("\n-B\n+b\n"));
}

#[test]
fn the_model_is_told_which_changes_of_a_patch_were_rejected() {
    let patch = "*** Begin Patch\n*** Update File: f.txt\n@@\n one\n-two\n+TWO\n@@ h\n-nine\n+NINE\n*** Update File: g.txt\n@@\n-a\n+A\n*** End Patch\n";
    let request = hook(Agent::Codex, "apply_patch", json!({"command": patch}));
    let current = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nh\nnine\nten\n";
    let accepted = "one\nTWO\nthree\nfour\nfive\nsix\nseven\neight\nh\nnine\nten\n";
    let written = format!(
        "*** Begin Patch\n{}*** End Patch\n",
        patch_section("f.txt", current, accepted, false)
    );
    let answer = GateAnswer::Allow {
        updated_input: Some(json!({ "command": written })),
    };
    let told = model_context(&request, &answer).expect("told");
    assert!(told.contains("edit of f.txt"), "{told}");
    assert!(told.contains("\n-NINE\n+nine\n"), "{told}");
    assert!(told.contains("rejected your whole change to g.txt"), "{told}");
    let output: Json = serde_json::from_str(&format_answer_to(&request, &answer).stdout).unwrap();
    assert_eq!(output["hookSpecificOutput"]["additionalContext"], json!(told));
}
