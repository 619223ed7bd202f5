//! The text an agent's own edit would leave in a file, and a Codex patch that writes a given
//! text: what the gate reviews, and how it rewrites the call to the hunks the user accepted.
//!
//! - [`apply_text_edits`]: Claude `Edit`/`MultiEdit` and Gemini `replace` replacements, in
//!   order, with `replace_all` (Claude) and `expected_replacements` (Gemini) semantics.
//! - [`apply_patch_file`]: the new text of one file of a Codex `apply_patch` (Add, Update with
//!   its `@@` context hunks, Delete).
//! - [`patch_section`]: a Codex patch section that turns one text into another.
//!
//! Everything is a loop over lines or occurrences: no recursion the input controls.

use thiserror::Error;

use super::{PatchAction, TextEdit};

/// Why an edit cannot be applied to the file's current text. The message is for the model.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum EditError {
    /// `old_string` does not occur in the text.
    #[error("edit {index}: old_string was not found in the file")]
    NotFound {
        /// The edit's number, from 1.
        index: usize,
    },
    /// `old_string` occurs more than once and neither `replace_all` nor
    /// `expected_replacements` says so.
    #[error(
        "edit {index}: old_string occurs {count} times in the file, but the edit replaces only one: it is not unique"
    )]
    NotUnique {
        /// The edit's number, from 1.
        index: usize,
        /// How many times it occurs.
        count: usize,
    },
    /// Gemini's `expected_replacements` differs from the number of occurrences.
    #[error("edit {index}: expected {expected} replacements but old_string occurs {count} times")]
    CountMismatch {
        /// The edit's number, from 1.
        index: usize,
        /// `expected_replacements`.
        expected: u64,
        /// How many times it occurs.
        count: usize,
    },
    /// An empty `old_string` for a file that has text.
    #[error("edit {index}: old_string is empty, but the file is not")]
    EmptyOld {
        /// The edit's number, from 1.
        index: usize,
    },
    /// The patch has no section for the file asked.
    #[error("the patch has no file number {0}")]
    NoSuchFile(usize),
    /// A hunk's context or removed lines are not in the file.
    #[error("the patch's hunk {hunk} for {path} does not match the file: {problem}")]
    HunkMismatch {
        /// The file, as the patch names it.
        path: String,
        /// The hunk's number in its section, from 1.
        hunk: usize,
        /// What did not match.
        problem: String,
    },
}

/// CURRENT with EDITS applied in order. An empty `old_string` creates the file: it is allowed
/// only while the text is empty.
pub fn apply_text_edits(current: &str, edits: &[TextEdit]) -> Result<String, EditError> {
    let mut text = current.to_string();
    for (i, edit) in edits.iter().enumerate() {
        let index = i + 1;
        if edit.old_string.is_empty() {
            if !text.is_empty() {
                return Err(EditError::EmptyOld { index });
            }
            text = edit.new_string.clone();
            continue;
        }
        let count = text.matches(edit.old_string.as_str()).count();
        if count == 0 {
            return Err(EditError::NotFound { index });
        }
        match edit.expected_replacements {
            Some(expected) if expected != count as u64 => {
                return Err(EditError::CountMismatch { index, expected, count })
            }
            Some(_) => text = text.replace(&edit.old_string, &edit.new_string),
            None if edit.replace_all => text = text.replace(&edit.old_string, &edit.new_string),
            None if count > 1 => return Err(EditError::NotUnique { index, count }),
            None => text = text.replacen(&edit.old_string, &edit.new_string, 1),
        }
    }
    Ok(text)
}

/// The lines of TEXT as Codex's `apply_patch` sees them: split on `\n`, a final empty line
/// (after the last newline) dropped.
fn lines_of(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text.split('\n').collect();
    if lines.last() == Some(&"") {
        lines.pop();
    }
    lines
}

/// One `@@` hunk of an update: its optional context header, its old and new lines.
#[derive(Debug, Default)]
struct Hunk<'a> {
    header: Option<&'a str>,
    old: Vec<&'a str>,
    new: Vec<&'a str>,
    end_of_file: bool,
}

/// A section of a patch: the header line's action and path, and its body lines.
struct Section<'a> {
    action: PatchAction,
    path: &'a str,
    body: Vec<&'a str>,
}

fn sections(patch: &str) -> Vec<Section<'_>> {
    let mut out: Vec<Section<'_>> = Vec::new();
    for line in patch.lines() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let header = [
            ("*** Add File:", PatchAction::Add),
            ("*** Update File:", PatchAction::Update),
            ("*** Delete File:", PatchAction::Delete),
        ]
        .into_iter()
        .find_map(|(prefix, action)| line.strip_prefix(prefix).map(|p| (action, p.trim())));
        if let Some((action, path)) = header {
            out.push(Section {
                action,
                path,
                body: Vec::new(),
            });
        } else if line.starts_with("*** End Patch") || line.starts_with("*** Begin Patch") {
            continue;
        } else if let Some(last) = out.last_mut() {
            last.body.push(line);
        }
    }
    out
}

/// Where NEEDLE occurs in HAY at or after FROM: exactly, then ignoring trailing blanks, then
/// ignoring blanks on both sides (as Codex's `apply_patch` seeks).
fn seek(hay: &[String], needle: &[&str], from: usize) -> Option<usize> {
    if needle.is_empty() {
        return Some(hay.len());
    }
    if needle.len() > hay.len() {
        return None;
    }
    let compare: [fn(&str, &str) -> bool; 3] = [
        |a, b| a == b,
        |a, b| a.trim_end() == b.trim_end(),
        |a, b| a.trim() == b.trim(),
    ];
    for eq in compare {
        for start in from..=hay.len() - needle.len() {
            if needle.iter().zip(&hay[start..]).all(|(n, h)| eq(h, n)) {
                return Some(start);
            }
        }
    }
    None
}

fn parse_hunks<'a>(body: &[&'a str]) -> Vec<Hunk<'a>> {
    let mut hunks: Vec<Hunk<'a>> = Vec::new();
    for &line in body {
        if line.starts_with("*** Move to:") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("@@") {
            let header = rest.trim();
            hunks.push(Hunk {
                header: (!header.is_empty()).then_some(header),
                ..Hunk::default()
            });
            continue;
        }
        if line.starts_with("*** End of File") {
            if let Some(last) = hunks.last_mut() {
                last.end_of_file = true;
            }
            continue;
        }
        if hunks.is_empty() {
            hunks.push(Hunk::default());
        }
        let Some(hunk) = hunks.last_mut() else { continue };
        if let Some(text) = line.strip_prefix('+') {
            hunk.new.push(text);
        } else if let Some(text) = line.strip_prefix('-') {
            hunk.old.push(text);
        } else {
            let text = line.strip_prefix(' ').unwrap_or(line);
            hunk.old.push(text);
            hunk.new.push(text);
        }
    }
    hunks
}

/// The text the file number INDEX (from 0, in the order of [`super::patch_files`]) of the
/// Codex PATCH has after the patch, CURRENT being its text now: an added file's lines, ""
/// for a deleted file, the current text with the update's hunks applied. The result ends
/// with a newline unless it is empty, as Codex writes it.
pub fn apply_patch_file(patch: &str, index: usize, current: &str) -> Result<String, EditError> {
    let all = sections(patch);
    let section = all.get(index).ok_or(EditError::NoSuchFile(index))?;
    let mut lines: Vec<String> = match section.action {
        PatchAction::Delete => return Ok(String::new()),
        PatchAction::Add => section
            .body
            .iter()
            .map(|l| l.strip_prefix('+').unwrap_or(l).to_string())
            .collect(),
        PatchAction::Update => lines_of(current).into_iter().map(str::to_string).collect(),
    };
    if section.action == PatchAction::Update {
        let mut cursor = 0;
        for (i, hunk) in parse_hunks(&section.body).into_iter().enumerate() {
            let mismatch = |problem: String| EditError::HunkMismatch {
                path: section.path.to_string(),
                hunk: i + 1,
                problem,
            };
            if let Some(header) = hunk.header {
                let at = seek(&lines, &[header], cursor)
                    .ok_or_else(|| mismatch(format!("its context line {header:?} is not in the file")))?;
                cursor = at + 1;
            }
            let start = if hunk.end_of_file && hunk.old.len() <= lines.len() {
                let at = lines.len() - hunk.old.len();
                seek(&lines, &hunk.old, at).or_else(|| seek(&lines, &hunk.old, cursor))
            } else {
                seek(&lines, &hunk.old, cursor)
            }
            .ok_or_else(|| mismatch("its context and removed lines are not in the file".into()))?;
            let end = start + hunk.old.len();
            let replacement: Vec<String> = hunk.new.iter().map(|s| s.to_string()).collect();
            let added = replacement.len();
            lines.splice(start..end, replacement);
            cursor = start + added;
        }
    }
    if lines.is_empty() {
        return Ok(String::new());
    }
    let mut text = lines.join("\n");
    text.push('\n');
    Ok(text)
}

/// A Codex patch section that turns OLD into NEW in PATH: `*** Add File:` when NEW_FILE (the
/// file does not exist yet), else `*** Update File:` with one hunk replacing every line of OLD
/// by the lines of NEW. Wrap sections in `*** Begin Patch` / `*** End Patch` lines.
pub fn patch_section(path: &str, old: &str, new: &str, new_file: bool) -> String {
    let mut out = String::new();
    if new_file {
        out.push_str(&format!("*** Add File: {path}\n"));
        for line in lines_of(new) {
            out.push('+');
            out.push_str(line);
            out.push('\n');
        }
        return out;
    }
    out.push_str(&format!("*** Update File: {path}\n@@\n"));
    for line in lines_of(old) {
        out.push('-');
        out.push_str(line);
        out.push('\n');
    }
    for line in lines_of(new) {
        out.push('+');
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(old: &str, new: &str) -> TextEdit {
        TextEdit {
            old_string: old.into(),
            new_string: new.into(),
            replace_all: false,
            expected_replacements: None,
        }
    }

    #[test]
    fn one_replacement() {
        assert_eq!(apply_text_edits("a\nb\nc\n", &[edit("b", "B")]).unwrap(), "a\nB\nc\n");
    }

    #[test]
    fn multi_edit_in_order() {
        let edits = [edit("a", "x"), edit("x\nb", "y")];
        assert_eq!(apply_text_edits("a\nb\n", &edits).unwrap(), "y\n");
    }

    #[test]
    fn not_found_and_not_unique() {
        assert_eq!(
            apply_text_edits("a\n", &[edit("z", "Z")]),
            Err(EditError::NotFound { index: 1 })
        );
        assert_eq!(
            apply_text_edits("a a", &[edit("a", "b")]),
            Err(EditError::NotUnique { index: 1, count: 2 })
        );
        let msg = apply_text_edits("a a", &[edit("a", "b")]).unwrap_err().to_string();
        assert!(msg.contains("not unique"), "{msg}");
    }

    #[test]
    fn replace_all_and_expected() {
        let mut e = edit("a", "b");
        e.replace_all = true;
        assert_eq!(apply_text_edits("a a", &[e]).unwrap(), "b b");
        let mut e = edit("a", "b");
        e.expected_replacements = Some(2);
        assert_eq!(apply_text_edits("a a", &[e.clone()]).unwrap(), "b b");
        e.expected_replacements = Some(3);
        assert_eq!(
            apply_text_edits("a a", &[e]),
            Err(EditError::CountMismatch {
                index: 1,
                expected: 3,
                count: 2
            })
        );
    }

    #[test]
    fn empty_old_creates() {
        assert_eq!(apply_text_edits("", &[edit("", "new\n")]).unwrap(), "new\n");
        assert_eq!(
            apply_text_edits("x", &[edit("", "new")]),
            Err(EditError::EmptyOld { index: 1 })
        );
    }

    const PATCH: &str = "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-two\n+TWO\n@@ five\n-six\n+SIX\n*** Add File: b.txt\n+hello\n+world\n*** Delete File: c.txt\n*** End Patch\n";

    #[test]
    fn patch_update_add_delete() {
        let current = "one\ntwo\nthree\nfour\nfive\nsix\nseven\n";
        assert_eq!(
            apply_patch_file(PATCH, 0, current).unwrap(),
            "one\nTWO\nthree\nfour\nfive\nSIX\nseven\n"
        );
        assert_eq!(apply_patch_file(PATCH, 1, "").unwrap(), "hello\nworld\n");
        assert_eq!(apply_patch_file(PATCH, 2, "x\n").unwrap(), "");
        assert_eq!(apply_patch_file(PATCH, 3, ""), Err(EditError::NoSuchFile(3)));
    }

    #[test]
    fn patch_mismatch() {
        let err = apply_patch_file(PATCH, 0, "nothing\n").unwrap_err();
        assert!(matches!(err, EditError::HunkMismatch { hunk: 1, .. }), "{err:?}");
    }

    #[test]
    fn patch_end_of_file_and_whitespace() {
        let patch = "*** Begin Patch\n*** Update File: f\n@@\n-x  \n+y\n*** End of File\n*** End Patch";
        assert_eq!(apply_patch_file(patch, 0, "x\nx\n").unwrap(), "x\ny\n");
    }

    #[test]
    fn codex_heredoc_patch() {
        use super::super::codex::heredoc_patch;
        let patch = "*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\n";
        assert_eq!(
            heredoc_patch(&format!("apply_patch <<'EOF'\n{patch}EOF\n")).as_deref(),
            Some(patch)
        );
        assert_eq!(
            heredoc_patch(&format!("apply_patch <<EOF\n{patch}EOF")).as_deref(),
            Some(patch)
        );
        assert_eq!(
            heredoc_patch(&format!("apply_patch <<'EOF'\n{patch}EOF\nrm -rf x\n")),
            None
        );
        assert_eq!(heredoc_patch("apply_patch <<'EOF'\nls\nEOF\n"), None);
        assert_eq!(heredoc_patch("echo <<'EOF'\nx\nEOF\n"), None);
    }

    #[test]
    fn section_round_trips() {
        let old = "a\nb\nc\n";
        let new = "a\nB\nc\nd\n";
        let patch = format!(
            "*** Begin Patch\n{}*** End Patch\n",
            patch_section("f", old, new, false)
        );
        assert_eq!(apply_patch_file(&patch, 0, old).unwrap(), new);
        let patch = format!("*** Begin Patch\n{}*** End Patch\n", patch_section("g", "", new, true));
        assert_eq!(apply_patch_file(&patch, 0, "").unwrap(), new);
    }
}
