//! One source text: the substring pre-check, the scan, and its hits with their lines.

use std::sync::atomic::AtomicBool;

use memchr::memmem;

use super::index::SymbolIndex;
use super::scanner::Scanner;
use super::tokens::{is_delimiter, unescape_into};
use super::{Kind, SourceHit, MAX_LINE_TEXT};

/// The part of NAME that must appear literally in a source that contains the symbol: NAME
/// itself, or, when NAME has characters that the source must escape, the longest run without
/// them. `None` when no such run exists (every file must then be parsed).
pub(super) fn needle(name: &[u8]) -> Option<&[u8]> {
    if !name.iter().any(|&b| is_delimiter(b) || b == b'\\') {
        return Some(name);
    }
    name.split(|&b| is_delimiter(b) || b == b'\\')
        .max_by_key(|run| run.len())
        .filter(|run| !run.is_empty())
}

/// Whether the source text may contain the symbol NAME (a fast substring check).
pub fn may_contain(src: &[u8], name: &str) -> bool {
    match needle(name.as_bytes()) {
        Some(n) => memmem::find(src, n).is_some(),
        None => true,
    }
}

/// Find the occurrences of the symbol NAME of KIND in the Emacs Lisp source SRC (any bytes;
/// invalid UTF-8 is decoded lossily in the reported lines). Returns them in source order.
pub fn scan_source(src: &[u8], name: &str, kind: Kind) -> Vec<SourceHit> {
    scan_source_indexed(src, name, kind, false, None).map_or_else(Vec::new, |(hits, _)| hits)
}

/// [`scan_source`], and with INDEX the [`SymbolIndex`] of SRC when SRC had to be read anyway
/// (NAME occurs in it). `None` when CANCEL was set before the read was done.
pub(super) fn scan_source_indexed(
    src: &[u8],
    name: &str,
    kind: Kind,
    index: bool,
    cancel: Option<&AtomicBool>,
) -> Option<(Vec<SourceHit>, Option<SymbolIndex>)> {
    if name.is_empty() || !may_contain(src, name) {
        return Some((Vec::new(), None));
    }
    let mut scanner = Scanner::new(src, name.as_bytes(), kind);
    scanner.cancel = cancel;
    if index {
        scanner.collect = Some(Vec::with_capacity(src.len() / 8));
    }
    scanner.run();
    if scanner.cancelled {
        return None;
    }
    let symbol_index = scanner.collect.take().map(SymbolIndex::new);
    let mut hits = Vec::with_capacity(scanner.hits.len());
    let mut line = 1;
    let mut counted_to = 0;
    for raw in &scanner.hits {
        let offset = raw.offset.min(src.len());
        line += src[counted_to..offset].iter().filter(|&&b| b == b'\n').count();
        counted_to = offset;
        let line_start = memchr::memrchr(b'\n', &src[..offset]).map_or(0, |n| n + 1);
        let line_end = memchr::memchr(b'\n', &src[offset..]).map_or(src.len(), |n| offset + n);
        let column = 1 + src[line_start..offset].iter().filter(|&&b| (b & 0xC0) != 0x80).count();
        hits.push(SourceHit {
            line,
            column,
            definition: raw.definition.map(symbol_text),
            text: line_text(&src[line_start..line_end]),
        });
    }
    Some((hits, symbol_index))
}

/// The [`SymbolIndex`] of the source SRC (a full read of it).
pub fn index_source(src: &[u8]) -> SymbolIndex {
    let mut scanner = Scanner::new(src, b"", Kind::Call);
    scanner.collect = Some(Vec::with_capacity(src.len() / 8));
    scanner.run();
    SymbolIndex::new(scanner.collect.take().unwrap_or_default())
}

/// The name of a symbol token, without its escapes.
fn symbol_text(token: &[u8]) -> String {
    let mut out = Vec::with_capacity(token.len());
    unescape_into(token, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// A source line for display: lossily decoded, control characters (binary data, a `^L`)
/// replaced by U+FFFD, trimmed and cut to [`MAX_LINE_TEXT`] characters.
fn line_text(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    let text: String = text
        .trim()
        .chars()
        .map(|c| if c.is_control() && c != '\t' { '\u{fffd}' } else { c })
        .collect();
    let text = text.as_str();
    if text.chars().count() <= MAX_LINE_TEXT {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(MAX_LINE_TEXT).collect();
    cut.push_str("...");
    cut
}
