use std::os::unix::fs::PermissionsExt;

use super::*;

fn lines(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

fn meta(agent: &str) -> Meta {
    Meta {
        agent: agent.into(),
        session: "s1".into(),
        file: "/p/f.txt".into(),
        approval: Approval {
            how: "review".into(),
            accepted: 1,
            ..Approval::default()
        },
        time: 1.0,
        ..Meta::default()
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("agent-q-journal-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn an_edit_stores_hunks_with_context_not_the_file() {
    let old = lines(100);
    let new = old.replace("line 50\n", "fifty\n");
    let entry = Entry::edit(meta("claude"), &old, &new, false).unwrap().unwrap();
    assert_eq!((entry.added, entry.removed), (1, 1));
    assert_eq!(entry.hunks.len(), 1);
    let h = &entry.hunks[0];
    assert_eq!(
        h.old.as_deref(),
        Some("line 47\nline 48\nline 49\nline 50\nline 51\nline 52\nline 53\n")
    );
    assert_eq!(
        h.new.as_deref(),
        Some("line 47\nline 48\nline 49\nfifty\nline 51\nline 52\nline 53\n")
    );
    assert!(Entry::edit(meta("claude"), &old, &old, false).unwrap().is_none());
    assert!(entry.unified().contains("-line 50\n+fifty\n"), "{}", entry.unified());
}

#[test]
fn a_sensitive_file_is_recorded_without_its_text() {
    let entry = Entry::edit(meta("gemini"), "KEY=hunter2\n", "KEY=s3cret\n", true)
        .unwrap()
        .unwrap();
    let json = serde_json::to_string(&entry).unwrap();
    assert!(!json.contains("s3cret") && !json.contains("hunter2"), "{json}");
    assert_eq!((entry.added, entry.removed), (1, 1));
    let r = revert("KEY=s3cret\n", &[&entry]);
    assert_eq!(r.text, "KEY=s3cret\n");
    assert_eq!(r.conflicts.len(), 1);
    assert!(entry.unified().contains("not recorded"));
}

#[test]
fn the_journal_survives_reopening_with_mode_0600_and_a_torn_last_line() {
    let dir = temp_dir("reopen");
    let path = dir.join("sub/journal.jsonl");
    let mut j = Journal::open(&path, 100).unwrap();
    let e1 = Entry::edit(meta("claude"), "a\n", "b\n", false).unwrap().unwrap();
    let e2 = Entry::command(Meta {
        command: "make test".into(),
        ..meta("codex")
    });
    assert_eq!(j.record(e1).unwrap(), 1);
    assert_eq!(j.record(e2).unwrap(), 2);
    let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // A crash in the middle of a third line.
    let mut f = OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(b"{\"id\":3,\"time\":1.0,\"kind\":\"ed").unwrap();
    drop(f);
    let mut j = Journal::open(&path, 100).unwrap();
    assert_eq!(j.entries().len(), 2);
    assert_eq!(j.get(2).unwrap().command, "make test");
    assert_eq!(j.get(2).unwrap().kind, Kind::Command);
    assert_eq!(j.lost(), 0);
    // The next entry goes on a line of its own and reads back; the torn line's number is not
    // given again (a search by number could find that line).
    let e3 = Entry::edit(meta("gemini"), "x\n", "y\n", false).unwrap().unwrap();
    assert_eq!(j.record(e3).unwrap(), 4);
    let j = Journal::open(&path, 100).unwrap();
    assert_eq!(j.entries().iter().map(|e| e.id).collect::<Vec<_>>(), vec![1, 2, 4]);
    assert_eq!(j.full(4).unwrap().unwrap().agent, "gemini");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn the_bound_drops_the_oldest_and_counts_them_across_rewrites() {
    let dir = temp_dir("bound");
    let path = dir.join("journal.jsonl");
    let mut j = Journal::open(&path, 10).unwrap();
    for i in 0..25 {
        let e = Entry::edit(meta("claude"), "a\n", &format!("{i}\n"), false)
            .unwrap()
            .unwrap();
        j.record(e).unwrap();
    }
    assert_eq!(j.entries().len(), 10);
    assert_eq!(j.entries()[0].id, 16);
    assert_eq!(j.lost(), 15);
    let file_lines = fs::read_to_string(&path).unwrap().lines().count();
    assert!(file_lines <= 10 + 10 / 8 + 2, "{file_lines} lines");
    let again = Journal::open(&path, 10).unwrap();
    assert_eq!(again.entries().len(), 10);
    assert_eq!(again.entries()[9].id, 25);
    assert_eq!(again.lost(), 15);
    // Numbers keep increasing after a rewrite.
    let mut again = again;
    let e = Entry::edit(meta("claude"), "a\n", "b\n", false).unwrap().unwrap();
    assert_eq!(again.record(e).unwrap(), 26);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn reverting_keeps_a_later_edit_elsewhere_in_the_file() {
    let v0 = lines(40);
    let v1 = v0.replace("line 5\n", "claude five\n");
    let mut claude = Entry::edit(meta("claude"), &v0, &v1, false).unwrap().unwrap();
    claude.id = 1;
    let v2 = v1.replace("line 30\n", "gemini thirty\n");
    let mut gemini = Entry::edit(meta("gemini"), &v1, &v2, false).unwrap().unwrap();
    gemini.id = 2;
    // The user adds lines at the top too: the hunk moved.
    let now = format!("user 1\nuser 2\n{v2}");
    let r = revert(&now, &[&claude]);
    assert!(r.conflicts.is_empty(), "{:?}", r.conflicts);
    assert_eq!(r.undone, vec![(1, 0)]);
    assert_eq!(
        r.text,
        format!("user 1\nuser 2\n{}", v0.replace("line 30\n", "gemini thirty\n"))
    );
    // Both, newest first.
    let r = revert(&v2, &[&claude, &gemini]);
    assert_eq!(r.text, v0);
}

#[test]
fn a_hunk_whose_lines_changed_since_is_a_conflict_and_not_written() {
    let v0 = lines(40);
    let v1 = v0
        .replace("line 5\n", "agent five\n")
        .replace("line 30\n", "agent thirty\n");
    let mut e = Entry::edit(meta("claude"), &v0, &v1, false).unwrap().unwrap();
    e.id = 7;
    assert_eq!(e.hunks.len(), 2);
    let now = v1.replace("agent five\n", "user five\n");
    let r = revert(&now, &[&e]);
    assert_eq!(r.conflicts.len(), 1);
    assert_eq!((r.conflicts[0].id, r.conflicts[0].hunk), (7, 0));
    assert_eq!(r.undone, vec![(7, 1)]);
    // The conflicting hunk's lines are as the user left them; the other is undone.
    assert_eq!(r.text, v0.replace("line 5\n", "user five\n"));
}

#[test]
fn a_repeated_block_is_undone_where_it_was_written() {
    let v0 = "x\n".repeat(30);
    let mut lines: Vec<String> = v0.lines().map(|l| format!("{l}\n")).collect();
    lines[20] = "y\n".into();
    let v1: String = lines.concat();
    let mut e = Entry::edit(meta("claude"), &v0, &v1, false).unwrap().unwrap();
    e.id = 1;
    assert_eq!(revert(&v1, &[&e]).text, v0);
}

#[test]
fn creating_and_emptying_a_file_revert() {
    let mut created = Entry::edit(meta("codex"), "", "new\nfile\n", false).unwrap().unwrap();
    created.id = 1;
    assert_eq!(revert("new\nfile\n", &[&created]).text, "");
    let mut emptied = Entry::edit(meta("codex"), "a\nb\n", "", false).unwrap().unwrap();
    emptied.id = 2;
    assert_eq!(revert("", &[&emptied]).text, "a\nb\n");
    let r = revert("typed since\n", &[&emptied]);
    assert_eq!(r.conflicts.len(), 1);
    assert_eq!(r.text, "typed since\n");
}

#[test]
fn ten_thousand_average_changes_fit_in_fifty_megabytes() {
    let dir = temp_dir("size");
    let path = dir.join("journal.jsonl");
    let mut j = Journal::open(&path, 10_000).unwrap();
    // An average source file: 300 lines of 40 characters, three places changed.
    let old: String = (0..300)
        .map(|i| format!("{i:>6} the quick brown fox jumps over it\n"))
        .collect();
    for i in 0..10_000 {
        let new = old
            .replace("    10 the", &format!("{i:>6} new"))
            .replace("   150 the", "   150 THE")
            .replace("   290 the", "   290 THE");
        let e = Entry::edit(meta("claude"), &old, &new, false).unwrap().unwrap();
        j.record(e).unwrap();
    }
    let size = fs::metadata(&path).unwrap().len();
    assert!(size < 50 * 1024 * 1024, "{size} bytes");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn the_list_orders_by_session_and_turn_and_names_who_and_how() {
    let mut entries = Vec::new();
    for (id, agent, session, turn) in [
        (1, "claude", "c1", "1"),
        (2, "gemini", "g1", ""),
        (3, "claude", "c1", "2"),
        (4, "claude", "c1", "1"),
    ] {
        let mut e = Entry::edit(
            Meta {
                turn: turn.into(),
                session: session.into(),
                ..meta(agent)
            },
            "a\n",
            "b\n",
            false,
        )
        .unwrap()
        .unwrap();
        e.id = id;
        entries.push(e);
    }
    let ids = |f: &list::Filter| list::ordered(&entries, f).iter().map(|e| e.id).collect::<Vec<_>>();
    // Claude's session (newest 4) first; its turn 1 (newest 4) before turn 2 (3).
    assert_eq!(ids(&list::Filter::default()), vec![4, 1, 3, 2]);
    let turn = list::Filter {
        agent: Some("claude".into()),
        session: Some("c1".into()),
        turn: Some("1".into()),
        ..list::Filter::default()
    };
    assert_eq!(ids(&turn), vec![4, 1]);
    assert_eq!(
        list::select(&entries, &turn),
        vec![("/p/f.txt".to_string(), vec![4, 1])]
    );
    entries[3].turn_label = "fix the form".into();
    let rows = list::rows(&list::ordered(&entries, &turn), &[19, 10, 8, 16, 40, 10], "/p");
    assert_eq!(rows.ids, vec![4, 1]);
    let first = rows.text.lines().next().unwrap();
    assert!(
        first.contains(" claude     c1       1 fix the form   ~/f.txt"),
        "{first}"
    );
    let second = rows.text.lines().nth(1).unwrap();
    assert!(
        second.contains(" claude     c1       1                ~/f.txt"),
        "{second}"
    );
    assert!(first.ends_with("+1 -1      review (1 accepted, 0 rejected)"), "{first}");
    assert_eq!(
        list::who("mcp gate claude s 1", "Claude"),
        ("claude".to_string(), "s 1".to_string())
    );
    assert_eq!(
        list::who("mcp acp 5f2", "Gemini CLI (ACP) 5f2"),
        ("Gemini CLI (ACP)".to_string(), "5f2".to_string())
    );
    assert_eq!(
        list::who("mcp session 9", "codex"),
        ("codex".to_string(), "9".to_string())
    );
    assert_eq!(list::who("emacs gptel", "gptel"), ("gptel".to_string(), String::new()));
    let a = list::approval_of_call("rule", "allow agent_edit", 0, 0);
    assert_eq!((a.how.as_str(), a.detail.as_str()), ("rule", "allow agent_edit"));
    assert_eq!(list::approval_of_call("approved", "", 0, 0).how, "user");
}

#[test]
fn hunks_are_read_from_the_file_when_needed_also_after_a_rewrite() {
    let dir = temp_dir("lazy");
    let path = dir.join("journal.jsonl");
    let mut j = Journal::open(&path, 4).unwrap();
    for i in 0..9 {
        let e = Entry::edit(meta("claude"), "a\n", &format!("{i}\n"), false)
            .unwrap()
            .unwrap();
        j.record(e).unwrap();
    }
    // Held without hunks; read back whole, before and after reopening.
    let last = j.get(9).unwrap();
    assert!(last.hunks.is_empty());
    assert_eq!(last.hunk_count, 1);
    assert!(j.full(9).unwrap().unwrap().unified().contains("+8\n"));
    assert!(j.full(6).unwrap().unwrap().unified().contains("+5\n"));
    assert!(j.full(2).unwrap().is_none());
    let again = Journal::open(&path, 4).unwrap();
    assert_eq!(again.get(7).unwrap().hunk_count, 1);
    assert!(again.full(7).unwrap().unwrap().unified().contains("+6\n"));
    // Another Emacs rewrote the file: the line is found by its number.
    let mut other = Journal::open(&path, 4).unwrap();
    other.rewrite().unwrap();
    assert!(again.full(8).unwrap().unwrap().unified().contains("+7\n"));
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_turn_label_is_the_prompts_first_line_cut() {
    assert_eq!(
        turn_label("\n  Fix the login form.  \nThen run the tests."),
        "Fix the login form."
    );
    assert_eq!(turn_label(""), "");
    let long = "x".repeat(200);
    let label = turn_label(&long);
    assert_eq!(label.chars().count(), MAX_TURN_LABEL_CHARS);
    assert!(label.ends_with('…'));
    assert_eq!(turn_label("a\tb"), "a b");
}

#[test]
fn entries_carry_the_turn_their_session_is_in_and_turns_go_on_after_reopening() {
    let dir = temp_dir("turns");
    let path = dir.join("journal.jsonl");
    let mut j = Journal::open(&path, 100).unwrap();
    let edit = |agent: &str, session: &str| {
        Entry::edit(
            Meta {
                session: session.into(),
                ..meta(agent)
            },
            "a\n",
            "b\n",
            false,
        )
        .unwrap()
        .unwrap()
    };
    // Before any turn: none.
    let id = j.record(edit("claude", "c1")).unwrap();
    assert_eq!(j.get(id).unwrap().turn, "");
    assert_eq!(j.begin_turn("claude", "c1", "first prompt"), 1);
    let one = j.record(edit("claude", "c1")).unwrap();
    // Another session, and another agent with the same session id, are not in that turn.
    let other = j.record(edit("claude", "c2")).unwrap();
    let gemini = j.record(edit("gemini", "c1")).unwrap();
    assert_eq!(j.begin_turn("claude", "c1", "second prompt"), 2);
    let two = j.record(edit("claude", "c1")).unwrap();
    // A turn given by the caller wins.
    let given = j
        .record(
            Entry::edit(
                Meta {
                    turn: "7".into(),
                    ..meta("claude")
                },
                "a\n",
                "c\n",
                false,
            )
            .unwrap()
            .unwrap(),
        )
        .unwrap();
    let turn = |j: &Journal, id: u64| {
        let e = j.get(id).unwrap();
        (e.turn.clone(), e.turn_label.clone())
    };
    assert_eq!(turn(&j, one), ("1".into(), "first prompt".into()));
    assert_eq!(turn(&j, two), ("2".into(), "second prompt".into()));
    assert_eq!(turn(&j, other), (String::new(), String::new()));
    assert_eq!(turn(&j, gemini), (String::new(), String::new()));
    assert_eq!(turn(&j, given).0, "7");
    // Read back: the turns are in the file, and the session's next turn is 3.
    let mut again = Journal::open(&path, 100).unwrap();
    assert_eq!(turn(&again, two), ("2".into(), "second prompt".into()));
    assert_eq!(again.full(two).unwrap().unwrap().turn_label, "second prompt");
    assert_eq!(again.current_turn("claude", "c1"), Some((2, "second prompt")));
    assert_eq!(again.begin_turn("claude", "c1", "third"), 3);
    // The list filters by the turn.
    let filter = list::Filter {
        agent: Some("claude".into()),
        session: Some("c1".into()),
        turn: Some("1".into()),
        ..list::Filter::default()
    };
    let ids: Vec<u64> = list::ordered(again.entries(), &filter).iter().map(|e| e.id).collect();
    assert_eq!(ids, vec![one]);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn two_journals_on_one_file_never_give_one_number_twice() {
    let dir = temp_dir("two");
    let path = dir.join("journal.jsonl");
    // Two Emacsen, each with the journal open, recording in turn and at once.
    let mut a = Journal::open(&path, 1000).unwrap();
    let mut b = Journal::open(&path, 1000).unwrap();
    let edit = |agent: &str, n: usize| {
        Entry::edit(meta(agent), "a\n", &format!("{agent} {n}\n"), false)
            .unwrap()
            .unwrap()
    };
    let mut ids = Vec::new();
    for n in 0..5 {
        ids.push(a.record(edit("claude", n)).unwrap());
        ids.push(b.record(edit("gemini", n)).unwrap());
    }
    let threads: Vec<_> = ["codex", "user"]
        .into_iter()
        .map(|agent| {
            let path = path.clone();
            std::thread::spawn(move || {
                let mut j = Journal::open(&path, 1000).unwrap();
                (0..50)
                    .map(|n| {
                        j.record(
                            Entry::edit(meta(agent), "a\n", &format!("{n}\n"), false)
                                .unwrap()
                                .unwrap(),
                        )
                        .unwrap()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for t in threads {
        ids.extend(t.join().unwrap());
    }
    let mut unique = ids.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");
    // Read back: every entry, each number once, each diff its own.
    let all = Journal::open(&path, 1000).unwrap();
    assert_eq!(all.entries().len(), 110);
    let mut read: Vec<u64> = all.entries().iter().map(|e| e.id).collect();
    read.sort_unstable();
    read.dedup();
    assert_eq!(read.len(), 110);
    for id in &ids[..10] {
        let full = all.full(*id).unwrap().unwrap();
        assert_eq!(full.hunks.len(), 1);
    }
    // The lock file keeps the next number: no tail of the journal is read to find it.
    let next: u64 = fs::read_to_string(path.with_extension("lock"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(next, ids.iter().max().unwrap() + 1);
    // A does not hold B's entries until it reads the file again.
    assert!(
        a.full(ids[1]).unwrap().is_none(),
        "a does not hold b's entries until read again"
    );
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_rewrite_keeps_what_another_journal_appended() {
    let dir = temp_dir("rewrite-two");
    let path = dir.join("journal.jsonl");
    let mut a = Journal::open(&path, 8).unwrap();
    let mut b = Journal::open(&path, 8).unwrap();
    let edit = |agent: &str, n: usize| {
        Entry::edit(meta(agent), "a\n", &format!("{n}\n"), false)
            .unwrap()
            .unwrap()
    };
    let from_b = b.record(edit("gemini", 0)).unwrap();
    for n in 0..3 {
        a.record(edit("claude", n)).unwrap();
    }
    a.rewrite().unwrap();
    let read = Journal::open(&path, 8).unwrap();
    assert!(read.get(from_b).is_some(), "b's entry survived a's rewrite");
    assert_eq!(read.entries().len(), 4);
    assert_eq!(read.full(from_b).unwrap().unwrap().agent, "gemini");
    let _ = fs::remove_dir_all(&dir);
}
