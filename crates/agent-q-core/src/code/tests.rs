use std::io::Write as _;

use super::columns::{chars_to_utf16, utf16_to_chars};
use super::format::*;
use super::lines::LineReader;

#[test]
fn utf16_columns_convert_around_non_bmp_characters() {
    let line = "x = \"😀\" + y";
    // 😀 is two UTF-16 units: y is character 11, unit 12.
    assert_eq!(utf16_to_chars(line, 12), 11);
    assert_eq!(chars_to_utf16(line, 11), 12);
    // Before the emoji, units and characters agree.
    assert_eq!(utf16_to_chars(line, 4), 4);
    // Inside the surrogate pair: the emoji's own character.
    assert_eq!(utf16_to_chars(line, 6), 5);
    // Past the end: the line's length; the other way, one unit per missing character.
    assert_eq!(utf16_to_chars(line, 100), line.chars().count());
    assert_eq!(chars_to_utf16("ab", 4), 4);
    for c in 0..=line.chars().count() {
        assert_eq!(utf16_to_chars(line, chars_to_utf16(line, c)), c);
    }
}

#[test]
fn paths_are_relative_to_the_root_only_inside_it() {
    assert_eq!(shown_path("/p/src/a.py", Some("/p")), "src/a.py");
    assert_eq!(shown_path("/p/src/a.py", Some("/p/")), "src/a.py");
    assert_eq!(shown_path("/pq/a.py", Some("/p")), "/pq/a.py");
    assert_eq!(shown_path("/usr/lib/x.py", Some("/p")), "/usr/lib/x.py");
    assert_eq!(shown_path("/p/a.py", None), "/p/a.py");
}

/// A directory of its own (removed when dropped) holding m.py with TEXT.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn temp_file(text: &str) -> (TempDir, String) {
    static COUNT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("agent-q-code-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("m.py");
    std::fs::File::create(&path)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    (TempDir(dir), path.to_string_lossy().into_owned())
}

#[test]
fn locations_read_lines_convert_columns_sort_mark_and_cut() {
    let (dir, file) = temp_file("def f():\r\n    return \"😀\" + g()\n\ndef g(): pass\n");
    let root = dir.path().to_string_lossy().into_owned();
    let loc = |line, column, declaration| Location {
        file: file.clone(),
        line,
        column,
        declaration,
        quote: true,
        enclosing: Some("f".into()),
        ..Default::default()
    };
    let locations = vec![loc(4, 4, true), loc(2, 20, false), loc(2, 20, false)];
    let text = format_locations(
        LocationKind::References,
        "g",
        "eglot: pyright",
        Some(&root),
        locations.clone(),
        Unit::Utf16,
        10,
        &mut LineReader::new(),
    );
    assert_eq!(
        text,
        "References to g: 2 references (source: eglot: pyright):\n\
         m.py:2:20: return \"😀\" + g()  [in f]\n\
         m.py:4:5: def g(): pass  [in f; declaration]"
    );
    let cut = format_locations(
        LocationKind::References,
        "g",
        "eglot: pyright",
        Some(&root),
        locations,
        Unit::Utf16,
        1,
        &mut LineReader::new(),
    );
    assert!(cut.ends_with("... 1 more not shown (2 found in all)"), "{cut}");
}

#[test]
fn locations_outside_the_quotable_places_are_listed_without_text() {
    let (_dir, file) = temp_file("secret = 1\n");
    let text = format_locations(
        LocationKind::Definition,
        "secret",
        "xref: etags",
        None,
        vec![Location {
            file: file.clone(),
            line: 1,
            column: 0,
            ..Default::default()
        }],
        Unit::Chars,
        10,
        &mut LineReader::new(),
    );
    assert!(text.contains(&format!("{file}:1:1: (text not quoted)")), "{text}");
    assert!(!text.contains("= 1"), "{text}");
    assert!(text.contains("is not quoted; read_file asks"), "{text}");
    assert_eq!(
        format_locations(
            LocationKind::Definition,
            "x",
            "text search (not semantic)",
            None,
            vec![],
            Unit::Chars,
            5,
            &mut LineReader::new()
        ),
        "No definition found for x (source: text search (not semantic))."
    );
}

#[test]
fn a_buffers_text_wins_over_the_files_and_hidden_characters_are_escaped() {
    let (_dir, file) = temp_file("on disk\n");
    let text = format_locations(
        LocationKind::Definition,
        "x",
        "eglot: pyright",
        None,
        vec![Location {
            file,
            line: 1,
            column: 2,
            text: Some("in \u{202e}buffer".into()),
            quote: true,
            ..Default::default()
        }],
        Unit::Chars,
        10,
        &mut LineReader::new(),
    );
    assert!(text.ends_with(":1:3: in \\u202Ebuffer"), "{text}");
}

#[test]
fn a_missing_file_or_line_is_said() {
    let text = format_locations(
        LocationKind::Definition,
        "x",
        "s",
        None,
        vec![Location {
            file: "/nonexistent/agent-q/x.py".into(),
            line: 3,
            column: 0,
            quote: true,
            ..Default::default()
        }],
        Unit::Utf16,
        10,
        &mut LineReader::new(),
    );
    assert!(
        text.ends_with("/nonexistent/agent-q/x.py:3:1: (line not readable)"),
        "{text}"
    );
}

#[test]
fn symbol_kinds_are_words() {
    assert_eq!(symbol_kind(5), "class");
    assert_eq!(symbol_kind(6), "method");
    assert_eq!(symbol_kind(12), "function");
    assert_eq!(symbol_kind(26), "type parameter");
    assert_eq!(symbol_kind(0), "symbol");
    assert_eq!(symbol_kind(27), "symbol");
    assert_eq!(symbol_kind(i64::MIN), "symbol");
}

fn item(name: &str, kind: &str, start: usize, end: usize, depth: Option<usize>) -> OutlineItem {
    OutlineItem {
        name: name.into(),
        kind: kind.into(),
        start,
        end,
        depth,
    }
}

#[test]
fn outlines_nest_by_depth_or_by_ranges() {
    let nested = format_outline(
        "a.py",
        "eglot: pyright",
        vec![
            item("C", "class", 1, 10, Some(0)),
            item("m", "method", 2, 4, Some(1)),
            item("X", "variable", 12, 12, Some(0)),
        ],
        100,
    );
    assert_eq!(
        nested,
        "Outline of a.py: 3 symbols (source: eglot: pyright):\nclass C (lines 1-10)\n  method m (lines 2-4)\nvariable X (line 12)"
    );
    let flat = vec![
        item("X", "variable", 12, 12, None),
        item("m", "method", 2, 4, None),
        item("C", "class", 1, 10, None),
        item("inner", "function", 3, 3, None),
    ];
    let by_ranges = format_outline("a.py", "imenu", flat, 100);
    assert_eq!(
        by_ranges,
        "Outline of a.py: 4 symbols (source: imenu):\nclass C (lines 1-10)\n  method m (lines 2-4)\n    function inner (line 3)\nvariable X (line 12)"
    );
    let cut = format_outline(
        "a.py",
        "imenu",
        vec![item("a", "f", 1, 1, Some(0)), item("b", "f", 2, 2, Some(0))],
        1,
    );
    assert!(
        cut.ends_with("function a (line 1)\n... 1 more not shown (2 in all)")
            || cut.ends_with("f a (line 1)\n... 1 more not shown (2 in all)"),
        "{cut}"
    );
    // Over the limit, the deepest symbols go first: every top-level name stays.
    let deep = format_outline(
        "a.py",
        "eglot: pyright",
        vec![
            item("f", "function", 1, 5, Some(0)),
            item("x", "variable", 2, 2, Some(1)),
            item("y", "variable", 3, 3, Some(1)),
            item("C", "class", 6, 9, Some(0)),
            item("m", "method", 7, 9, Some(1)),
            item("z", "variable", 8, 8, Some(2)),
            item("g", "function", 10, 11, Some(0)),
        ],
        5,
    );
    assert_eq!(
        deep,
        "Outline of a.py: 7 symbols (source: eglot: pyright):\nfunction f (lines 1-5)\nclass C (lines 6-9)\nfunction g (lines 10-11)\n... 4 more not shown (7 in all): those nested 1 or more levels deep"
    );
    assert_eq!(
        format_outline("a.py", "imenu", vec![], 5),
        "No symbols found in a.py (source: imenu)."
    );
}

#[test]
fn severities_are_words_from_numbers_and_names() {
    assert_eq!(Severity::from_lsp(1).word(), "error");
    assert_eq!(Severity::from_lsp(2).word(), "warning");
    assert_eq!(Severity::from_lsp(3).word(), "info");
    assert_eq!(Severity::from_lsp(4).word(), "hint");
    assert_eq!(Severity::from_lsp(99).word(), "error");
    assert_eq!(Severity::from_word(":error").word(), "error");
    assert_eq!(Severity::from_word("eglot-error").word(), "error");
    assert_eq!(Severity::from_word(":warning").word(), "warning");
    assert_eq!(Severity::from_word("eglot-note").word(), "info");
    assert_eq!(Severity::from_word(":note").word(), "info");
    assert_eq!(Severity::from_word("info").word(), "info");
    assert_eq!(Severity::from_word("eglot-hint").word(), "hint");
}

#[test]
fn diagnostics_are_sorted_counted_and_name_what_was_not_checked() {
    let d = |file: &str, line, severity, code: Option<&str>, message: &str| Diagnostic {
        file: file.into(),
        line,
        column: 0,
        severity,
        source: Some("Pyright".into()),
        code: code.map(Into::into),
        message: message.into(),
    };
    let text = format_diagnostics(
        "the project",
        "flymake (eglot: pyright)",
        Some("/p"),
        vec![
            d("/p/b.py", 3, Severity::Hint, None, "\"x\" is not accessed"),
            d(
                "/p/a.py",
                7,
                Severity::Error,
                Some("reportUndefinedVariable"),
                "\"y\" is not\ndefined",
            ),
        ],
        10,
        &["/p/c.py".to_owned()],
    );
    assert_eq!(
        text,
        "Diagnostics for the project: 1 error, 0 warnings, 0 info, 1 hint (source: flymake (eglot: pyright)):\n\
         a.py:7:1: error [Pyright reportUndefinedVariable]: \"y\" is not defined\n\
         b.py:3:1: hint [Pyright]: \"x\" is not accessed\n\
         Not checked (1 file): c.py"
    );
    assert_eq!(
        format_diagnostics("a.py", "flycheck", None, vec![], 10, &[]),
        "No diagnostics for a.py (source: flycheck)."
    );
}

#[test]
fn symbols_and_hover_read_alike() {
    let text = format_symbols(
        "cell",
        "eglot: pyright",
        Some("/p"),
        vec![SymbolItem {
            name: "cell_len".into(),
            kind: "function".into(),
            file: "/p/rich/cells.py".into(),
            line: 12,
            container: Some("rich.cells".into()),
        }],
        10,
    );
    assert_eq!(
        text,
        "Symbols matching 'cell': 1 symbol (source: eglot: pyright):\nrich/cells.py:12: function cell_len  [in rich.cells]"
    );
    assert_eq!(
        format_hover("a.py:1:1", "eglot: pyright", "  (function) def f() -> int\n"),
        "Type at a.py:1:1 (source: eglot: pyright):\n(function) def f() -> int"
    );
    assert_eq!(
        format_hover("a.py:1:1", "s", " "),
        "No type information at a.py:1:1 (source: s)."
    );
}

#[test]
fn items_are_read_from_sexps_and_bad_ones_said() {
    use super::input;
    use crate::sexp::Sexp;
    let parse = |s: &str| Sexp::parse(s).unwrap();
    let locs = input::locations(&parse(
        r#"(["/p/a.py" 3 4 nil "f" t t] ["/p/b.py" 0 0 "x" nil nil nil])"#,
    ))
    .unwrap();
    assert_eq!(locs.len(), 2);
    assert_eq!(locs[0].enclosing.as_deref(), Some("f"));
    assert!(locs[0].declaration && locs[0].quote && !locs[1].quote);
    assert_eq!(locs[1].line, 1);
    assert!(input::locations(&parse(r#"(["/p/a.py" -1 4 nil nil nil nil])"#)).is_err());
    assert!(input::locations(&parse(r#"(["/p/a.py" 1])"#))
        .unwrap_err()
        .contains("item 0"));
    assert!(input::locations(&parse("[1]")).is_err());
    let outline = input::outline(&parse(r#"(["C" 5 1 9 nil] ["f" "function" 3 2 0])"#)).unwrap();
    assert_eq!(outline[0].kind, "class");
    assert_eq!(outline[1].end, 3);
    let diags = input::diagnostics(&parse(
        r#"(["/a" 1 0 2 "Pyright" nil "m"] ["/a" 1 0 :error nil 42 "m"])"#,
    ))
    .unwrap();
    assert_eq!(diags[0].severity, Severity::Warning);
    assert_eq!(diags[1].severity, Severity::Error);
    assert_eq!(diags[1].code.as_deref(), Some("42"));
    assert_eq!(
        input::symbols(&parse(r#"(["s" 12 "/a" 4 nil])"#)).unwrap()[0].kind,
        "function"
    );
    assert_eq!(input::files(&parse(r#"("/a" "/b")"#)).unwrap().len(), 2);
}

#[test]
fn a_project_check_says_what_was_checked_and_why_the_rest_was_not() {
    let files = |names: &[&str]| names.iter().map(|n| format!("/p/{n}")).collect::<Vec<_>>();
    let check = ProjectCheck {
        visited: 1,
        reported: 2,
        opened: 3,
        silent: files(&["slow.py"]),
        beyond: (0..12).map(|i| format!("/p/m{i:02}.py")).collect(),
        no_server: files(&["README.md"]),
        too_large: files(&["big.py"]),
        servers: true,
        max_files: 50,
        wait: 3.0,
    };
    assert_eq!(
        format_project_check(&check, Some("/p")),
        "Checked: 1 file open in Emacs; 2 files not visited that a language server had reported on; \
         3 files not visited, opened to a language server for this call.\n\
         Not checked (1 file): opened to a language server, which reported nothing on them within 3 s \
         (agent-q-code-diagnostics-wait): slow.py\n\
         Not checked (12 files): beyond the 50 files opened to a language server per call \
         (agent-q-code-diagnostics-max-files): m00.py, m01.py, m02.py, m03.py, m04.py, m05.py, m06.py, \
         m07.py, m08.py, m09.py, and 2 more\n\
         Not checked (1 file): over 4 MB, not opened to a language server: big.py\n\
         Not checked (1 file): no running language server takes them: README.md"
    );
    let none = ProjectCheck {
        visited: 0,
        ..ProjectCheck::default()
    };
    assert_eq!(
        format_project_check(&none, Some("/p")),
        "Checked: 0 files open in Emacs.\n\
         Not checked: the project's files not visited, as no language server runs for the project \
         (give file to check one: it is opened for its server)."
    );
}
