//! The text of the lines that locations name, read from files that no buffer visits.

use std::collections::HashMap;
use std::path::Path;

use crate::fsutil;

/// The largest file whose lines are read, in bytes: a location in a bigger one is listed without
/// its text.
pub const MAX_FILE_BYTES: u64 = 32 << 20;

/// The most distinct files read for one answer.
pub const MAX_FILES: usize = 2_000;

/// Lines of files, read once per file for one answer.
#[derive(Default)]
pub struct LineReader {
    files: HashMap<String, Option<Vec<String>>>,
}

impl LineReader {
    /// A reader with nothing read yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The text of line LINE (1-based) of FILE, without its end of line; `None` when the file
    /// cannot be read (missing, not a regular file, too big, not UTF-8 text, too many files) or
    /// has no such line.
    pub fn line(&mut self, file: &str, line: usize) -> Option<&str> {
        if !self.files.contains_key(file) {
            let lines = if self.files.len() >= MAX_FILES {
                None
            } else {
                read_lines(Path::new(file))
            };
            self.files.insert(file.to_owned(), lines);
        }
        let lines = self.files.get(file)?.as_ref()?;
        lines.get(line.checked_sub(1)?).map(String::as_str)
    }
}

/// FILE's lines, or `None` when it cannot be read as text.
fn read_lines(path: &Path) -> Option<Vec<String>> {
    let (file, _meta) = fsutil::open_regular(path).ok()?;
    let bytes = fsutil::read_to_end_limited(&file, path, MAX_FILE_BYTES).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    // Lines as the Language Server Protocol counts them: \n, \r\n and \r end a line.
    let mut lines = Vec::new();
    let mut rest = text.as_str();
    while let Some(end) = rest.find(['\n', '\r']) {
        lines.push(rest[..end].to_owned());
        let skip = if rest[end..].starts_with("\r\n") { 2 } else { 1 };
        rest = &rest[end + skip..];
    }
    lines.push(rest.to_owned());
    Some(lines)
}
