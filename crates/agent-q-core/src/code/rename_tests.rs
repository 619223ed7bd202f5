use super::rename::*;
use crate::sexp::Sexp;

fn edit(sl: usize, sc: usize, el: usize, ec: usize, new: &str) -> TextEdit {
    TextEdit {
        start: Position { line: sl, utf16: sc },
        end: Position { line: el, utf16: ec },
        new_text: new.to_owned(),
    }
}

#[test]
fn new_names_are_one_identifier() {
    assert!(validate_new_name("total_width").is_ok());
    assert!(validate_new_name("$el").is_ok());
    assert!(validate_new_name("größe").is_ok());
    assert_eq!(validate_new_name("").unwrap_err(), "new_name is empty");
    for bad in ["a b", "a\nb", "f()", "a.b", "x;y", "'q'", "a/b", "a\u{202e}b", "a\tb"] {
        let e = validate_new_name(bad).unwrap_err();
        assert!(e.starts_with("new_name must be one identifier, without "), "{bad}: {e}");
    }
    assert!(validate_new_name("a\u{202e}b").unwrap_err().contains("U+202E"));
    let long = "x".repeat(MAX_NAME_CHARS + 1);
    assert!(validate_new_name(&long)
        .unwrap_err()
        .contains("too long: 1025 characters"));
    assert!(validate_new_name(&"x".repeat(MAX_NAME_CHARS)).is_ok());
}

#[test]
fn file_uris_decode_to_paths() {
    assert_eq!(uri_to_file("file:///p/a%20b.py").unwrap(), "/p/a b.py");
    assert_eq!(uri_to_file("file://localhost/p/x.ts").unwrap(), "/p/x.ts");
    assert_eq!(uri_to_file("file:///p/%C3%A9.py").unwrap(), "/p/é.py");
    assert!(uri_to_file("untitled:Untitled-1").is_err());
    assert!(uri_to_file("file://host/p").unwrap_err().contains("another host"));
    assert!(uri_to_file("file:///p/%zz")
        .unwrap_err()
        .contains("invalid percent escape"));
    assert!(uri_to_file("file:///p/%00").unwrap_err().contains("NUL"));
}

#[test]
fn document_changes_are_read_in_order_and_merged_per_file() {
    let json = r#"{"documentChanges":[
      {"textDocument":{"uri":"file:///p/b.py","version":null},
       "edits":[{"range":{"start":{"line":0,"character":7},"end":{"line":0,"character":10}},"newText":"new"}]},
      {"textDocument":{"uri":"file:///p/a.py","version":3},
       "edits":[{"range":{"start":{"line":1,"character":4},"end":{"line":1,"character":7}},"newText":"new"},
                {"range":{"start":{"line":3,"character":0},"end":{"line":3,"character":3}},"newText":"new","annotationId":"x"}]},
      {"textDocument":{"uri":"file:///p/b.py","version":null},"edits":[]}],
      "changes":{"file:///p/ignored.py":[]}}"#;
    let files = workspace_edit(json).unwrap();
    assert_eq!(files.len(), 2);
    assert_eq!(files[0].file, "/p/b.py");
    assert_eq!(files[0].groups.len(), 2);
    assert_eq!(files[1].file, "/p/a.py");
    assert_eq!(
        files[1].groups[0],
        vec![edit(1, 4, 1, 7, "new"), edit(3, 0, 3, 3, "new")]
    );
}

#[test]
fn changes_are_read_when_there_are_no_document_changes() {
    let json = r#"{"changes":{"file:///p/a.ts":[{"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":1}},"newText":"z"}],
                   "file:///p/empty.ts":[]}}"#;
    let files = workspace_edit(json).unwrap();
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].file, "/p/a.ts");
    assert!(workspace_edit("{}").unwrap().is_empty());
    // Emacs serializes a null it read as {}.
    let emacs = r#"{"documentChanges":{},"changes":{"file:///p/a.ts":[{"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":1}},"newText":"z"}]}}"#;
    assert_eq!(workspace_edit(emacs).unwrap()[0].file, "/p/a.ts");
    assert!(workspace_edit("null").unwrap().is_empty());
}

#[test]
fn resource_operations_are_refused_naming_why() {
    for (op, shown) in [
        (r#"{"kind":"create","uri":"file:///p/n.py"}"#, "create /p/n.py"),
        (
            r#"{"kind":"rename","oldUri":"file:///p/m.py","newUri":"file:///p/n.py"}"#,
            "rename /p/m.py to /p/n.py",
        ),
        (r#"{"kind":"delete","uri":"file:///p/m.py"}"#, "delete /p/m.py"),
    ] {
        let json = format!(
            r#"{{"documentChanges":[{{"textDocument":{{"uri":"file:///p/a.py","version":1}},"edits":[]}},{op}]}}"#
        );
        let e = workspace_edit(&json).unwrap_err();
        assert!(matches!(e, RenameError::ResourceOperation { .. }), "{e:?}");
        let words = e.to_string();
        assert!(words.contains(&format!("would also {shown};")), "{words}");
        assert!(words.contains("Nothing was changed."), "{words}");
    }
}

#[test]
fn malformed_edits_are_errors_not_panics() {
    for json in [
        "[",
        r#"{"documentChanges":3}"#,
        r#"{"documentChanges":[{"textDocument":{"uri":"file:///p/a"},"edits":[{"range":{}}]}]}"#,
        r#"{"documentChanges":[{"textDocument":{"uri":"file:///p/a"},"edits":[{"range":{"start":{"line":-1,"character":0},"end":{"line":0,"character":0}},"newText":""}]}]}"#,
        r#"{"documentChanges":[{"textDocument":{"uri":"file:///p/a"},"edits":[{"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":0}}}]}]}"#,
        r#"{"documentChanges":[{"textDocument":{"uri":"http://x/a"},"edits":[]}]}"#,
    ] {
        assert!(matches!(workspace_edit(json), Err(RenameError::Malformed(_))), "{json}");
    }
}

#[test]
fn edits_apply_with_utf16_columns() {
    // 😀 is two UTF-16 units: `old` after it starts at unit 9 (character 8).
    let text = "old = 1\ns = \"😀\" + old\nprint(old)\n";
    let out = apply(
        text,
        &[vec![
            edit(2, 6, 2, 9, "new"),
            edit(0, 0, 0, 3, "new"),
            edit(1, 11, 1, 14, "new"),
        ]],
    )
    .unwrap();
    assert_eq!(out, "new = 1\ns = \"😀\" + new\nprint(new)\n");
}

#[test]
fn edits_clamp_past_the_line_and_the_text_and_keep_crlf() {
    assert_eq!(apply("ab\r\ncd", &[vec![edit(0, 1, 0, 99, "X")]]).unwrap(), "aX\r\ncd");
    assert_eq!(apply("ab\ncd", &[vec![edit(1, 2, 9, 0, "!")]]).unwrap(), "ab\ncd!");
    // Insertions at one place keep the server's order.
    assert_eq!(
        apply("x", &[vec![edit(0, 0, 0, 0, "a"), edit(0, 0, 0, 0, "b")]]).unwrap(),
        "abx"
    );
}

#[test]
fn groups_apply_one_after_the_other() {
    let out = apply("aa bb", &[vec![edit(0, 0, 0, 2, "cccc")], vec![edit(0, 5, 0, 7, "d")]]).unwrap();
    assert_eq!(out, "cccc d");
}

#[test]
fn overlapping_or_reversed_edits_are_refused() {
    assert_eq!(
        apply("abcdef", &[vec![edit(0, 0, 0, 3, "x"), edit(0, 2, 0, 4, "y")]]).unwrap_err(),
        "two edits overlap"
    );
    assert!(apply("abc\ndef", &[vec![edit(1, 0, 0, 1, "x")]])
        .unwrap_err()
        .contains("ends (line 1, column 2) before it starts (line 2, column 1)"));
}

fn hunk(number: usize, line: usize, decision: Decision) -> Hunk {
    Hunk { number, line, decision }
}

#[test]
fn the_report_names_each_files_hunks_applied_and_rejected() {
    let files = vec![
        FileOutcome {
            file: "/p/a.py".into(),
            target: Some("buffer".into()),
            problem: None,
            hunks: vec![hunk(1, 1, Decision::Accepted), hunk(2, 9, Decision::Edited)],
        },
        FileOutcome {
            file: "/p/pkg/b.py".into(),
            target: Some("file".into()),
            problem: None,
            hunks: vec![
                hunk(1, 1, Decision::Accepted),
                hunk(2, 4, Decision::Rejected),
                hunk(3, 8, Decision::Rejected),
            ],
        },
        FileOutcome {
            file: "/elsewhere/c.py".into(),
            target: None,
            problem: Some("its buffer changed during the review".into()),
            hunks: vec![hunk(1, 2, Decision::Accepted)],
        },
    ];
    let text = report("a.py:1:1 (old)", "new", "eglot: pyright", Some("/p"), &files, false);
    assert_eq!(
        text,
        "Rename of a.py:1:1 (old) to new (source: eglot: pyright): 3 of 6 hunks applied, in 2 of 3 files.\n\
         a.py: 2 of 2 hunks: hunk 1 (line 1) applied; hunk 2 (line 9) applied as the user edited them; changed in its buffer, not saved.\n\
         pkg/b.py: 1 of 3 hunks: hunk 1 (line 1) applied; hunks 2 (line 4) and 3 (line 8) rejected (not applied: the old name stays there); written to the file.\n\
         /elsewhere/c.py: 0 of 1 hunk: hunk 1 (line 2) applied; nothing was applied to it: its buffer changed during the review.\n\
         The rename is partial: where hunks were rejected the old name is still used, so the code may not work until those places are changed."
    );
}

#[test]
fn the_report_says_when_nothing_changed() {
    let files = vec![FileOutcome {
        file: "/p/a.py".into(),
        target: None,
        problem: None,
        hunks: vec![hunk(1, 1, Decision::Rejected)],
    }];
    let cancelled = report("old", "new", "eglot: x", Some("/p"), &files, true);
    assert!(cancelled.starts_with("Rename of old to new (source: eglot: x): 0 of 1 hunk applied, in 0 of 1 file. The user rejected the whole rename: no file was changed.\n"));
    let rejected = report("old", "new", "eglot: x", Some("/p"), &files, false);
    assert!(rejected.contains(" No hunk was applied: no file was changed."));
    assert!(!rejected.contains("partial"));
}

#[test]
fn outcomes_are_read_from_the_emacs_side() {
    let items = Sexp::List(vec![Sexp::Vector(vec![
        Sexp::Str("/p/a.py".into()),
        Sexp::Str("buffer".into()),
        Sexp::Nil,
        Sexp::List(vec![Sexp::Vector(vec![
            Sexp::Int(1),
            Sexp::Int(3),
            Sexp::Symbol("edited".into()),
        ])]),
    ])]);
    let read = outcomes(&items).unwrap();
    assert_eq!(read[0].hunks, vec![hunk(1, 3, Decision::Edited)]);
    assert_eq!(read[0].target.as_deref(), Some("buffer"));
    let bad = Sexp::List(vec![Sexp::Vector(vec![
        Sexp::Str("/p/a.py".into()),
        Sexp::Nil,
        Sexp::Nil,
        Sexp::List(vec![Sexp::Vector(vec![
            Sexp::Int(1),
            Sexp::Int(3),
            Sexp::Symbol("maybe".into()),
        ])]),
    ])]);
    assert!(outcomes(&bad).unwrap_err().contains("DECISION"));
    assert!(outcomes(&Sexp::Int(3)).is_err());
    assert!(outcomes(&Sexp::List(vec![Sexp::Int(3)])).is_err());
}
