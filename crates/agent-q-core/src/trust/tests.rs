use super::*;

const NOW: u64 = 1_800_000_000;

fn edit<'a>(agent: &'a str, session: Option<&'a str>, file: &'a str) -> Request<'a> {
    Request {
        agent,
        session,
        subject: Subject::Edit {
            file,
            workspace: Some("/work/project"),
        },
        protected: false,
        ruling: Ruling::None,
    }
}

fn command<'a>(agent: &'a str, line: &'a str) -> Request<'a> {
    Request {
        agent,
        session: Some("s1"),
        subject: Subject::Command(line),
        protected: false,
        ruling: Ruling::None,
    }
}

#[test]
fn an_edit_inside_the_workspace_passes_until_the_trust_ends() {
    let mut store = Store::default();
    let trust = store.add("gemini", None, Scope::Edits, Some(300), NOW).unwrap();
    assert_eq!(trust.until, Some(NOW + 300));
    let request = edit("gemini", Some("s1"), "/work/project/src/f.txt");
    assert_eq!(store.decide(&request, NOW).map(|t| t.id), Some(trust.id));
    assert_eq!(store.decide(&request, NOW + 299).map(|t| t.id), Some(trust.id));
    // It ends by itself: at its time nothing passes, whether or not it was expired.
    assert!(store.decide(&request, NOW + 300).is_none());
    assert_eq!(store.expire(NOW + 300), vec![trust]);
    assert!(store.active(NOW + 300).is_empty());
}

#[test]
fn the_words_say_until_when() {
    let mut store = Store::default();
    let trust = store.add("gemini", None, Scope::Edits, Some(60), 0).unwrap();
    assert_eq!(
        trust.words(),
        "trusted until 1970-01-01T00:01:00Z: gemini's edits inside its workspace"
    );
    let forever = store
        .add(
            "codex",
            Some("abc"),
            Store::command_scope("npm test *").unwrap(),
            None,
            0,
        )
        .unwrap();
    assert_eq!(
        forever.words(),
        "trusted until turned off: codex session abc's commands matching `npm test *`"
    );
    assert_eq!(forever.left(10), None);
    assert_eq!(trust.left(10), Some(50));
}

#[test]
fn another_agent_or_session_is_not_trusted() {
    let mut store = Store::default();
    store.add("gemini", Some("s1"), Scope::Edits, Some(300), NOW).unwrap();
    assert!(store
        .decide(&edit("gemini", Some("s1"), "/work/project/f"), NOW)
        .is_some());
    assert!(store
        .decide(&edit("gemini", Some("s2"), "/work/project/f"), NOW)
        .is_none());
    assert!(store.decide(&edit("gemini", None, "/work/project/f"), NOW).is_none());
    assert!(store
        .decide(&edit("claude", Some("s1"), "/work/project/f"), NOW)
        .is_none());
}

#[test]
fn an_edit_outside_the_workspace_is_not_trusted() {
    let mut store = Store::default();
    store.add("gemini", None, Scope::Edits, None, NOW).unwrap();
    for file in [
        "/work/project",
        "/work/project2/f",
        "/work/f",
        "/work/project/../f",
        "/work/project/a/../../f",
        "relative/f",
        "",
    ] {
        assert!(store.decide(&edit("gemini", None, file), NOW).is_none(), "{file}");
    }
    assert!(store
        .decide(&edit("gemini", None, "/work/project/a/../f"), NOW)
        .is_some());
    let no_workspace = Request {
        subject: Subject::Edit {
            file: "/work/project/f",
            workspace: None,
        },
        ..edit("gemini", None, "")
    };
    assert!(store.decide(&no_workspace, NOW).is_none());
    // The root is no workspace to trust.
    let root = Request {
        subject: Subject::Edit {
            file: "/etc/passwd",
            workspace: Some("/"),
        },
        ..edit("gemini", None, "")
    };
    assert!(store.decide(&root, NOW).is_none());
}

#[test]
fn protected_files_and_deny_and_ask_rules_win() {
    let mut store = Store::default();
    store.add("gemini", None, Scope::Edits, None, NOW).unwrap();
    let settings = "/work/project/.gemini/settings.json";
    assert!(store.decide(&edit("gemini", None, settings), NOW).is_some());
    let protected = Request {
        protected: true,
        ..edit("gemini", None, settings)
    };
    assert!(store.decide(&protected, NOW).is_none());
    for ruling in [Ruling::Deny, Ruling::Ask] {
        let ruled = Request {
            ruling,
            ..edit("gemini", None, "/work/project/f")
        };
        assert!(store.decide(&ruled, NOW).is_none(), "{ruling:?}");
    }
    let allowed = Request {
        ruling: Ruling::Allow,
        ..edit("gemini", None, "/work/project/f")
    };
    assert!(store.decide(&allowed, NOW).is_some());
}

#[test]
fn commands_pass_only_when_the_rule_covers_the_whole_line() {
    let mut store = Store::default();
    store
        .add(
            "codex",
            None,
            Store::command_scope("npm test *").unwrap(),
            Some(60),
            NOW,
        )
        .unwrap();
    assert!(store.decide(&command("codex", "npm test"), NOW).is_some());
    assert!(store
        .decide(&command("codex", "npm test --watch && npm test"), NOW)
        .is_some());
    assert!(store.decide(&command("codex", "npm test; rm -rf ~"), NOW).is_none());
    assert!(store.decide(&command("codex", "npm test > out.txt"), NOW).is_none());
    assert!(store.decide(&command("codex", "sudo npm test"), NOW).is_none());
    assert!(store.decide(&command("codex", "npm install"), NOW).is_none());
    assert!(store.decide(&command("claude", "npm test"), NOW).is_none());
    // A command trust is not an edit trust, nor the other way round.
    assert!(store
        .decide(&edit("codex", Some("s1"), "/work/project/f"), NOW)
        .is_none());
    let mut edits = Store::default();
    edits.add("codex", None, Scope::Edits, None, NOW).unwrap();
    assert!(edits.decide(&command("codex", "npm test"), NOW).is_none());
    let deny = Request {
        ruling: Ruling::Deny,
        ..command("codex", "npm test")
    };
    assert!(store.decide(&deny, NOW).is_none());
}

#[test]
fn ending_and_replacing() {
    let mut store = Store::default();
    let a = store.add("gemini", None, Scope::Edits, Some(60), NOW).unwrap();
    let b = store.add("gemini", None, Scope::Edits, Some(5), NOW).unwrap();
    // The same agent, session and scope: the newer replaces the older.
    assert_eq!(store.active(NOW).len(), 1);
    assert!(!store.end(a.id));
    assert!(store
        .decide(&edit("gemini", None, "/work/project/f"), NOW + 5)
        .is_none());
    let c = store.add("claude", None, Scope::Edits, None, NOW).unwrap();
    assert!(store.end(c.id));
    assert!(!store.end(c.id));
    assert_eq!(store.active(NOW).iter().map(|t| t.id).collect::<Vec<_>>(), vec![b.id]);
    store.add("claude", None, Scope::Edits, None, NOW).unwrap();
    assert_eq!(store.end_all(), 2);
    assert!(store.active(NOW).is_empty());
}

#[test]
fn bad_trusts_are_refused() {
    let mut store = Store::default();
    assert_eq!(store.add(" ", None, Scope::Edits, None, NOW), Err(TrustError::NoAgent));
    assert_eq!(
        store.add("gemini", None, Scope::Edits, Some(0), NOW),
        Err(TrustError::NoTime)
    );
    assert!(matches!(Store::command_scope("ls; rm x"), Err(TrustError::Rule(_))));
    assert!(matches!(Store::command_scope(""), Err(TrustError::Rule(_))));
    // Beyond the longest duration: until turned off, never an overflow.
    let t = store
        .add("gemini", None, Scope::Edits, Some(u64::MAX), u64::MAX)
        .unwrap();
    assert_eq!(t.until, None);
    for i in 1..MAX_TRUSTS {
        store.add(&format!("agent{i}"), None, Scope::Edits, None, NOW).unwrap();
    }
    assert_eq!(
        store.add("one more", None, Scope::Edits, None, NOW),
        Err(TrustError::TooMany)
    );
    let long = "x".repeat(10 * MAX_NAME_CHARS);
    store.end_all();
    let t = store.add(&long, Some(&long), Scope::Edits, None, NOW).unwrap();
    assert_eq!(t.agent.chars().count(), MAX_NAME_CHARS);
}
