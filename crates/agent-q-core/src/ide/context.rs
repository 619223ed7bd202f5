//! The editor context the agents are told about: which files are open, which one is active,
//! where its cursor is and what text is selected in it.
//!
//! Emacs reports what it sees ([`OpenFile`], lines 1-based, columns 0-based as Emacs counts);
//! the policy is here: at most [`MAX_FILES`] files, most recently used first; only the active
//! file (the most recent one reported active) carries a cursor and a selection; a selection is
//! cut to [`MAX_SELECTION_BYTES`] on a character boundary. Each agent then gets its own payload:
//! Gemini CLI's `ide/contextUpdate` ([`EditorContext::gemini_params`], 1-based lines and
//! characters, as its specification says) and Claude Code's `selection_changed`
//! ([`EditorContext::claude_params`], 0-based lines and characters).

use serde_json::{json, Value};

/// The most files the agents are told about (Gemini CLI keeps 10 as well).
pub const MAX_FILES: usize = 10;

/// The most bytes of selected text sent (Gemini CLI cuts at 16 KiB as well).
pub const MAX_SELECTION_BYTES: usize = 16 * 1024;

/// A region of the active file: lines 1-based, columns 0-based, as Emacs counts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Selection {
    /// The line of the region's start.
    pub start_line: i64,
    /// The column of the region's start.
    pub start_column: i64,
    /// The line of the region's end.
    pub end_line: i64,
    /// The column of the region's end.
    pub end_column: i64,
}

/// One file-visiting buffer as Emacs reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenFile {
    /// The file's absolute name.
    pub path: String,
    /// When it was last used, in milliseconds since the epoch.
    pub timestamp: i64,
    /// Whether it is the buffer the user works in.
    pub active: bool,
    /// The cursor's line, 1-based.
    pub line: i64,
    /// The cursor's column, 0-based.
    pub column: i64,
    /// The selected text, if any.
    pub selected: Option<String>,
    /// Where the selection is, when Emacs says so; otherwise it is taken to end at the cursor.
    pub region: Option<Selection>,
}

/// The context after the limits were applied: what the agents are told.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EditorContext {
    files: Vec<OpenFile>,
}

/// TEXT cut to at most MAX bytes, on a character boundary.
pub fn cut_to_boundary(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

impl EditorContext {
    /// The context of FILES with the limits applied (see the module's documentation).
    pub fn new(mut files: Vec<OpenFile>) -> Self {
        // Stable: files reported with the same timestamp keep Emacs's order.
        files.sort_by_key(|file| std::cmp::Reverse(file.timestamp));
        files.truncate(MAX_FILES);
        let active = files.iter().position(|file| file.active);
        for (index, file) in files.iter_mut().enumerate() {
            if Some(index) == active {
                file.line = file.line.max(1);
                file.column = file.column.max(0);
                if let Some(text) = file.selected.take() {
                    let cut = cut_to_boundary(&text, MAX_SELECTION_BYTES);
                    file.selected = (!cut.is_empty()).then(|| cut.to_string());
                }
                if file.selected.is_none() {
                    file.region = None;
                }
            } else {
                file.active = false;
                file.selected = None;
                file.region = None;
            }
        }
        EditorContext { files }
    }

    /// The files, most recent first.
    pub fn files(&self) -> &[OpenFile] {
        &self.files
    }

    /// The active file, if any.
    pub fn active(&self) -> Option<&OpenFile> {
        self.files.iter().find(|file| file.active)
    }

    /// The params of Gemini CLI's `ide/contextUpdate`.
    pub fn gemini_params(&self) -> Value {
        let files: Vec<Value> = self
            .files
            .iter()
            .map(|file| {
                let mut entry = json!({"path": file.path, "timestamp": file.timestamp});
                if file.active {
                    entry["isActive"] = json!(true);
                    entry["cursor"] = json!({"line": file.line, "character": file.column.saturating_add(1)});
                    if let Some(text) = &file.selected {
                        entry["selectedText"] = json!(text);
                    }
                }
                entry
            })
            .collect();
        json!({"workspaceState": {"openFiles": files, "isTrusted": true}})
    }

    /// The params of Claude Code's `selection_changed` for the active file, or `None` when no
    /// file is active. Without a selection the range is the cursor, empty.
    pub fn claude_params(&self) -> Option<Value> {
        let file = self.active()?;
        let text = file.selected.clone().unwrap_or_default();
        let region = match (file.region, text.is_empty()) {
            (Some(region), false) => region,
            (None, false) => region_ending_at_cursor(file.line, file.column, &text),
            (_, true) => Selection {
                start_line: file.line,
                start_column: file.column,
                end_line: file.line,
                end_column: file.column,
            },
        };
        let point = |line: i64, column: i64| json!({"line": line.saturating_sub(1).max(0), "character": column.max(0)});
        Some(json!({
            "text": text,
            "filePath": file.path,
            "fileUrl": file_url(&file.path),
            "selection": {
                "start": point(region.start_line, region.start_column),
                "end": point(region.end_line, region.end_column),
                "isEmpty": text.is_empty(),
            }
        }))
    }
}

/// The region that holds TEXT and ends at LINE/COLUMN. The start column is exact for a
/// one-line text and 0 otherwise (the start line's length before the text is not known).
fn region_ending_at_cursor(line: i64, column: i64, text: &str) -> Selection {
    let newlines = i64::try_from(text.matches('\n').count()).unwrap_or(i64::MAX);
    let start_line = line.saturating_sub(newlines).max(1);
    let start_column = if newlines == 0 {
        column
            .saturating_sub(i64::try_from(text.chars().count()).unwrap_or(i64::MAX))
            .max(0)
    } else {
        0
    };
    Selection {
        start_line,
        start_column,
        end_line: line,
        end_column: column,
    }
}

/// The `file://` URL of the absolute file name PATH, percent-encoding what a URL path may not
/// hold.
pub fn file_url(path: &str) -> String {
    let mut url = String::from("file://");
    for &byte in path.as_bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~!$&'()*+,;=:@".contains(&byte) {
            url.push(char::from(byte));
        } else {
            url.push_str(&format!("%{byte:02X}"));
        }
    }
    url
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, timestamp: i64, active: bool, selected: Option<&str>) -> OpenFile {
        OpenFile {
            path: path.to_string(),
            timestamp,
            active,
            line: 3,
            column: 4,
            selected: selected.map(str::to_string),
            region: None,
        }
    }

    #[test]
    fn at_most_ten_files_most_recent_first() {
        let files = (0..15).map(|i| file(&format!("/f{i}"), i, false, None)).collect();
        let context = EditorContext::new(files);
        let paths: Vec<&str> = context.files().iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            ["/f14", "/f13", "/f12", "/f11", "/f10", "/f9", "/f8", "/f7", "/f6", "/f5"]
        );
        let params = context.gemini_params();
        assert_eq!(params["workspaceState"]["openFiles"].as_array().unwrap().len(), 10);
        assert_eq!(params["workspaceState"]["isTrusted"], json!(true));
        assert_eq!(params["workspaceState"]["openFiles"][0]["path"], "/f14");
        assert_eq!(params["workspaceState"]["openFiles"][0]["timestamp"], 14);
    }

    #[test]
    fn only_the_active_file_carries_cursor_and_selection() {
        let context = EditorContext::new(vec![
            file("/old", 1, true, Some("old text")),
            file("/new", 2, true, Some("new text")),
            file("/other", 3, false, Some("other")),
        ]);
        let params = context.gemini_params();
        let files = params["workspaceState"]["openFiles"].as_array().unwrap();
        assert_eq!(files[0], json!({"path": "/other", "timestamp": 3}));
        assert_eq!(
            files[1],
            json!({"path": "/new", "timestamp": 2, "isActive": true,
                   "cursor": {"line": 3, "character": 5}, "selectedText": "new text"})
        );
        assert_eq!(
            files[2],
            json!({"path": "/old", "timestamp": 1}),
            "a second active file is not"
        );
    }

    #[test]
    fn a_selection_is_cut_to_16_kib_on_a_character_boundary() {
        // 'é' is two bytes: 16 KiB falls in the middle of one.
        let text = format!("a{}", "é".repeat(MAX_SELECTION_BYTES));
        let context = EditorContext::new(vec![file("/f", 1, true, Some(&text))]);
        let selected = context.active().unwrap().selected.as_deref().unwrap();
        assert_eq!(selected.len(), MAX_SELECTION_BYTES - 1);
        assert!(selected.ends_with('é'));
        assert_eq!(cut_to_boundary("héllo", 2), "h");
        assert_eq!(cut_to_boundary("héllo", 3), "hé");
        assert_eq!(cut_to_boundary("abc", 10), "abc");
    }

    #[test]
    fn claude_lines_are_zero_based() {
        let mut active = file("/w/a b.txt", 5, true, Some("line three\nline four\nline five"));
        active.line = 5;
        active.column = 9;
        let context = EditorContext::new(vec![active.clone(), file("/w/x", 1, false, None)]);
        let params = context.claude_params().unwrap();
        assert_eq!(
            params,
            json!({"text": "line three\nline four\nline five", "filePath": "/w/a b.txt",
                   "fileUrl": "file:///w/a%20b.txt",
                   "selection": {"start": {"line": 2, "character": 0}, "end": {"line": 4, "character": 9},
                                 "isEmpty": false}})
        );
        active.region = Some(Selection {
            start_line: 3,
            start_column: 0,
            end_line: 6,
            end_column: 0,
        });
        let params = EditorContext::new(vec![active]).claude_params().unwrap();
        assert_eq!(params["selection"]["start"], json!({"line": 2, "character": 0}));
        assert_eq!(params["selection"]["end"], json!({"line": 5, "character": 0}));
    }

    #[test]
    fn claude_without_selection_gets_the_cursor_and_without_active_file_nothing() {
        let context = EditorContext::new(vec![file("/f", 1, true, Some(""))]);
        let params = context.claude_params().unwrap();
        assert_eq!(params["text"], "");
        assert_eq!(params["selection"]["isEmpty"], json!(true));
        assert_eq!(params["selection"]["start"], json!({"line": 2, "character": 4}));
        assert_eq!(params["selection"]["end"], params["selection"]["start"]);
        assert!(EditorContext::new(vec![file("/f", 1, false, None)])
            .claude_params()
            .is_none());
        let one_line = EditorContext::new(vec![file("/f", 1, true, Some("ab"))])
            .claude_params()
            .unwrap();
        assert_eq!(one_line["selection"]["start"], json!({"line": 2, "character": 2}));
    }
}
