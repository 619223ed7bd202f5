//! Columns: the Language Server Protocol counts UTF-16 code units, Emacs counts characters.

/// The character column (0-based) of the UTF-16 column UTF16 (0-based) in LINE.
///
/// A column in the middle of a surrogate pair names the character it is part of; a column past
/// the end of the line is the line's length in characters (servers may point there).
pub fn utf16_to_chars(line: &str, utf16: usize) -> usize {
    let mut units = 0;
    for (chars, c) in line.chars().enumerate() {
        if units >= utf16 {
            return chars;
        }
        units += c.len_utf16();
        if units > utf16 {
            return chars;
        }
    }
    line.chars().count()
}

/// The UTF-16 column (0-based) of the character column CHARS (0-based) in LINE; a column past
/// the end of the line counts the missing characters as one unit each.
pub fn chars_to_utf16(line: &str, chars: usize) -> usize {
    let mut units = 0;
    let mut seen = 0;
    for c in line.chars().take(chars) {
        units += c.len_utf16();
        seen += 1;
    }
    units + (chars - seen)
}
