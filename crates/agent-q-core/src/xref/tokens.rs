//! Where the reader's tokens end: strings, character literals and symbols, on bytes.

/// Bytes that end a symbol token (besides any byte `<= b' '`).
pub(super) fn is_delimiter(b: u8) -> bool {
    b <= b' ' || matches!(b, b'(' | b')' | b'[' | b']' | b'"' | b'\'' | b';' | b'`' | b',')
}

/// Remove the reader's `\` escapes from a symbol token.
pub(super) fn unescape_into(token: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut escaped = false;
    for &b in token {
        if !escaped && b == b'\\' {
            escaped = true;
        } else {
            out.push(b);
            escaped = false;
        }
    }
}

/// Skip a string body starting after its opening quote; return the index after the closing one.
pub(super) fn skip_string(src: &[u8], mut i: usize) -> usize {
    loop {
        match memchr::memchr2(b'"', b'\\', src.get(i..).unwrap_or_default()) {
            None => return src.len(),
            Some(n) => {
                let at = i + n;
                if src[at] == b'"' {
                    return at + 1;
                }
                i = at + 2; // a backslash escapes the next byte
                if i >= src.len() {
                    return src.len();
                }
            }
        }
    }
}

/// The length of the UTF-8 character whose first byte is B (1 for anything invalid).
fn utf8_len(b: u8) -> usize {
    match b {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => 1,
    }
}

/// Skip a character literal starting after its `?`; return the index after it.
pub(super) fn skip_char_literal(src: &[u8], mut i: usize) -> usize {
    loop {
        let Some(&b) = src.get(i) else {
            return src.len();
        };
        if b != b'\\' {
            return (i + utf8_len(b)).min(src.len());
        }
        // `\X`: X is escaped; `\C-`, `\M-`, `\S-`, `\H-`, `\s-`, `\A-` and `\^` are modifiers
        // followed by another character.
        let Some(&x) = src.get(i + 1) else {
            return src.len();
        };
        if matches!(x, b'C' | b'M' | b'S' | b'H' | b's' | b'A') && src.get(i + 2) == Some(&b'-') {
            i += 3;
        } else if x == b'^' {
            i += 2;
        } else {
            return (i + 1 + utf8_len(x)).min(src.len());
        }
    }
}

/// The end of the symbol token starting at START, and whether it contains escapes.
pub(super) fn symbol_end(src: &[u8], start: usize) -> (usize, bool) {
    let mut i = start;
    let mut escaped = false;
    loop {
        // The common case: a run of plain constituents, one table lookup per byte.
        while src.get(i).is_some_and(|&b| CONSTITUENT[usize::from(b)]) {
            i += 1;
        }
        match src.get(i) {
            Some(b'\\') => {
                escaped = true;
                i += 2;
            }
            _ => return (i.min(src.len()), escaped),
        }
    }
}

/// Bytes that continue a symbol without being an escape: neither delimiters nor `\`.
static CONSTITUENT: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let byte = b as u8;
        table[b] = byte > b' '
            && !matches!(
                byte,
                b'(' | b')' | b'[' | b']' | b'"' | b'\'' | b';' | b'`' | b',' | b'\\'
            );
        b += 1;
    }
    table
};
