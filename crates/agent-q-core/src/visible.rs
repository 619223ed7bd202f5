//! What the user is shown of text a model or a client chose: every character that could hide,
//! reorder or break the line it is shown on, made visible as an escape.
//!
//! The approval prompt, the full view of a call, the review buffer's header, the log buffer and
//! the audit file show arguments, paths and client names that the model or an MCP client wrote.
//! A right-to-left override (U+202E) or an isolate (U+2066-9) reorders what follows it on the
//! screen, a zero-width character hides inside a name, and a newline or a line separator pushes
//! text out of the one line the prompt has. So these characters never reach the screen as
//! themselves:
//!
//! - C0 controls (U+0000-001F) and DEL (U+007F): `\n`, `\t`, `\r`, the rest `\uXXXX`;
//! - C1 controls (U+0080-009F);
//! - the Arabic letter mark (U+061C), the left-to-right and right-to-left marks (U+200E, U+200F),
//!   the embeddings and overrides (U+202A-202E) and the isolates (U+2066-2069);
//! - zero-width and invisible characters: U+200B-200D, the word joiner and invisible operators
//!   U+2060-2065, U+FEFF, the soft hyphen U+00AD and the Mongolian vowel separator U+180E;
//! - the line and paragraph separators (U+2028, U+2029);
//!
//! each as `\uXXXX` (upper-case hex). That is also how Emacs Lisp's reader and JSON write these
//! characters inside a string, so printed Lisp and JSON stay readable back to the same value.
//! Nothing else changes: a backslash already written by a printer stays as it is.

use serde::Serialize;
use std::io;

/// Whether C is shown as an escape rather than as itself.
pub fn is_hidden(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}'
        | '\u{7f}'..='\u{9f}'
        | '\u{ad}'
        | '\u{61c}'
        | '\u{180e}'
        | '\u{200b}'..='\u{200f}'
        | '\u{2028}'..='\u{202e}'
        | '\u{2060}'..='\u{2069}'
        | '\u{feff}')
}

/// Append the escape of C, which [`is_hidden`], to OUT.
fn push_escape(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        '\r' => out.push_str("\\r"),
        _ => out.push_str(&format!("\\u{:04X}", c as u32)),
    }
}

/// TEXT with every hidden character (see [`is_hidden`]) written as its escape.
pub fn visible(text: &str) -> String {
    if !text.chars().any(is_hidden) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_hidden(c) {
            push_escape(&mut out, c);
        } else {
            out.push(c);
        }
    }
    out
}

/// A JSON formatter that writes the hidden characters serde_json leaves raw (DEL, C1, bidi,
/// zero-width, separators) as `\uXXXX` escapes: the same string for a JSON reader, a visible one
/// in a terminal or an editor.
struct VisibleFormatter;

impl serde_json::ser::Formatter for VisibleFormatter {
    fn write_string_fragment<W: ?Sized + io::Write>(&mut self, writer: &mut W, fragment: &str) -> io::Result<()> {
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            if is_hidden(c) {
                writer.write_all(&fragment.as_bytes()[start..i])?;
                write!(writer, "\\u{:04x}", c as u32)?;
                start = i + c.len_utf8();
            }
        }
        writer.write_all(&fragment.as_bytes()[start..])
    }
}

/// VALUE as one line of JSON whose strings show no hidden character raw.
pub fn to_json_line<T: Serialize>(value: &T) -> serde_json::Result<String> {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, VisibleFormatter);
    value.serialize(&mut ser)?;
    // The serializer writes only UTF-8 (str fragments and ASCII escapes).
    Ok(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_character_is_escaped() {
        let listed: Vec<char> = (0u32..0x20)
            .chain(0x7f..0xa0)
            .chain([0x61c, 0x200b, 0x200c, 0x200d, 0x200e, 0x200f, 0x2028, 0x2029])
            .chain(0x202a..0x202f)
            .chain([0x2060, 0x2066, 0x2067, 0x2068, 0x2069, 0xfeff])
            .map(|u| char::from_u32(u).unwrap())
            .collect();
        for c in listed {
            let shown = visible(&format!("a{c}b"));
            assert!(
                shown.starts_with("a\\") && shown.ends_with('b'),
                "{:04X} shown as {shown:?}",
                c as u32
            );
            assert!(!shown.chars().any(is_hidden), "{shown:?}");
        }
    }

    #[test]
    fn the_bidi_attack_form_shows_its_code_on_one_line() {
        let form =
            "(list \"hi\u{202e} \u{2066}\" (write-region \"pwned\" nil \"/tmp/x\") \"\u{2069} \u{2066}ok\")\nmore";
        assert_eq!(
            visible(form),
            "(list \"hi\\u202E \\u2066\" (write-region \"pwned\" nil \"/tmp/x\") \"\\u2069 \\u2066ok\")\\nmore"
        );
    }

    #[test]
    fn ordinary_text_is_unchanged() {
        for text in [
            "",
            "plain",
            "caf\u{e9} \u{65e5}\u{672c} \u{1f600}",
            "a\\nb",
            "\u{a0}nbsp",
            "\u{200a}hair space",
        ] {
            assert_eq!(visible(text), text);
        }
        assert_eq!(
            visible("a\tb\r\n\u{1b}[2J\u{7f}\u{85}"),
            "a\\tb\\r\\n\\u001B[2J\\u007F\\u0085"
        );
    }

    #[test]
    fn json_lines_escape_hidden_characters_and_read_back_the_same() {
        let value = serde_json::json!({"form": "hi\u{202e} \u{2066}x\u{200b}\u{2028}\u{85}\u{7f}\n", "n": 1});
        let line = to_json_line(&value).unwrap();
        assert!(!line.chars().any(is_hidden), "{line}");
        assert!(
            line.contains("hi\\u202e \\u2066x\\u200b\\u2028\\u0085\\u007f\\n"),
            "{line}"
        );
        let back: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(back, value);
    }
}
