//! Reading a file for the read tools safely: one descriptor, checked after opening, and pages of
//! UTF-8 text cut in Rust.
//!
//! The read guard (Lisp) decides from a file's name whether reading it needs the user's
//! approval. A name can change meaning between that check and the open (another process flips a
//! symlink), so the tools never open by name again after checking: [`OpenedFile::open`] opens
//! once, without blocking ([`crate::fsutil::open_regular`]), and reports what was really opened
//! (its true path from the descriptor, device, inode and link count) for the guard to check. The
//! bytes are then read through that same descriptor ([`OpenedFile::load`]).
//!
//! [`analyze`] says whether the bytes can be shown as UTF-8 text without Emacs's decoder (valid
//! UTF-8, no NUL, consistent line ends, no coding cookie that could make Emacs decode otherwise),
//! and [`page`] cuts a page of lines exactly as read_file's Emacs Lisp pager did, by characters,
//! without decoding more than the page: a 50 MB file costs one pass of `memchr` and a UTF-8
//! validation instead of a decode into a buffer.

use std::fs::{File, Metadata};
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::ReadError;
use crate::fsutil;

/// How many bytes at the start of a file decide whether it looks binary.
pub const BINARY_PROBE: usize = 8000;

/// A regular file opened for reading, with what the descriptor says about it.
#[derive(Debug)]
pub struct OpenedFile {
    file: File,
    meta: Metadata,
    path: PathBuf,
    true_path: Option<PathBuf>,
}

/// What a descriptor designates: enough to tell two files apart and to check the right name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The absolute name of the opened file, links resolved; `None` when the system does not say
    /// (the file was deleted after it was opened, or /proc is not mounted).
    pub true_path: Option<PathBuf>,
    /// The device number.
    pub dev: u64,
    /// The inode number.
    pub ino: u64,
    /// How many names (hard links) the file has.
    pub nlink: u64,
    /// Its size in bytes when it was opened.
    pub size: u64,
}

impl OpenedFile {
    /// Open PATH if it is a regular file, without blocking, and find out what was opened.
    pub fn open(path: &Path) -> Result<OpenedFile, ReadError> {
        let (file, meta) = fsutil::open_regular(path).map_err(|e| classify(path, e))?;
        let true_path = fsutil::true_path(&file);
        Ok(OpenedFile {
            file,
            meta,
            path: path.to_path_buf(),
            true_path,
        })
    }

    /// What the descriptor designates.
    pub fn identity(&self) -> Identity {
        use std::os::unix::fs::MetadataExt;
        Identity {
            true_path: self.true_path.clone(),
            dev: self.meta.dev(),
            ino: self.meta.ino(),
            nlink: self.meta.nlink(),
            size: self.meta.len(),
        }
    }

    /// Read the whole file through the descriptor, at most MAX bytes. With GUNZIP, bytes that start
    /// with the gzip magic number are decompressed (at most MAX bytes of output), as Emacs's
    /// `auto-compression-mode' would for a `.gz' file.
    pub fn load(&self, max: u64, gunzip: bool) -> Result<Vec<u8>, ReadError> {
        use std::io::{Seek, SeekFrom};
        (&self.file).seek(SeekFrom::Start(0)).map_err(|e| {
            ReadError::File(crate::error::FileError::Io {
                path: self.path.clone(),
                message: e.to_string(),
            })
        })?;
        let bytes = fsutil::read_to_end_limited(&self.file, &self.path, max)?;
        if gunzip && bytes.starts_with(&[0x1f, 0x8b]) {
            return gunzip_limited(&bytes, &self.path, max);
        }
        Ok(bytes)
    }
}

/// Bytes read at a time by [`OpenedFile::scan`].
const CHUNK: usize = 1 << 20;

/// What one pass over a file found: [`Analysis`], line counts, and where line OFFSET is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scan {
    /// The bytes' description.
    pub analysis: Analysis,
    /// The file's size in bytes.
    pub size: u64,
    /// The number of LF bytes.
    pub newlines: u64,
    /// Whether the last byte is LF.
    pub ends_with_lf: bool,
    /// The byte offset where line OFFSET starts; `None` when the file has fewer lines.
    pub line_start: Option<u64>,
    /// The byte offset of the LF ending line OFFSET; `None` when it is the last line.
    pub line_end: Option<u64>,
    /// The line (1-based) the scan located.
    pub offset: usize,
}

impl Scan {
    /// The number of lines as `count-lines' counts them.
    pub fn total_lines(&self) -> usize {
        let n = usize::try_from(self.newlines).unwrap_or(usize::MAX);
        if self.size == 0 || self.ends_with_lf {
            n
        } else {
            n.saturating_add(1)
        }
    }
}

impl OpenedFile {
    /// Read the file once through the descriptor, in chunks, at most MAX bytes, without keeping
    /// it: validate UTF-8, count lines and line ends, look for a byte order mark and coding
    /// cookies, and note where line OFFSET (1-based) starts and ends. This is what a page of a
    /// large UTF-8 file costs; [`OpenedFile::window_page`] then reads only the page.
    pub fn scan(&self, max: u64, offset: usize) -> Result<Scan, ReadError> {
        let io = |e: std::io::Error| {
            ReadError::File(crate::error::FileError::Io {
                path: self.path.clone(),
                message: e.to_string(),
            })
        };
        let size = self.meta.len();
        if size > max {
            return Err(ReadError::File(crate::error::FileError::TooLarge {
                path: self.path.clone(),
                size,
                limit: max,
            }));
        }
        let target = u64::try_from(offset.max(1) - 1).unwrap_or(u64::MAX);
        let mut buf = vec![0u8; CHUNK + 4];
        let mut carry = 0usize;
        let mut pos = 0u64;
        let (mut utf8, mut newlines, mut crs, mut crlfs) = (true, 0u64, 0u64, 0u64);
        let mut latin1 = true;
        let mut last = 0u8;
        let mut line_start = if target == 0 { Some(0) } else { None };
        let mut line_end = None;
        let mut head = Vec::new();
        loop {
            let n = std::os::unix::fs::FileExt::read_at(&self.file, &mut buf[carry..carry + CHUNK], pos).map_err(io)?;
            if n == 0 {
                break;
            }
            if pos.saturating_add(n as u64) > max {
                return Err(ReadError::File(crate::error::FileError::TooLarge {
                    path: self.path.clone(),
                    size: pos + n as u64,
                    limit: max,
                }));
            }
            let data = &buf[..carry + n];
            let fresh = &data[carry..];
            if pos == 0 {
                head = fresh[..fresh.len().min(4096)].to_vec();
            }
            crs += memchr::memchr_iter(b'\r', fresh).count() as u64;
            latin1 = latin1 && latin1_bytes(fresh);
            for i in memchr::memchr_iter(b'\n', fresh) {
                let prev = if i > 0 { fresh[i - 1] } else { last };
                if prev == b'\r' {
                    crlfs += 1;
                }
                let at = pos + i as u64;
                newlines += 1;
                if newlines == target {
                    line_start = Some(at + 1);
                } else if line_end.is_none() && line_start.is_some_and(|s| at >= s) {
                    line_end = Some(at);
                }
            }
            last = fresh[fresh.len() - 1];
            let mut next_carry = 0;
            if utf8 {
                if let Err(e) = std::str::from_utf8(data) {
                    if e.error_len().is_none() {
                        next_carry = data.len() - e.valid_up_to();
                    } else {
                        utf8 = false;
                    }
                }
            }
            buf.copy_within(carry + n - next_carry..carry + n, 0);
            carry = next_carry;
            pos += n as u64;
        }
        if carry > 0 {
            utf8 = false;
        }
        // The analysis of the head and tail: the byte order mark, binary content, cookies.
        let tail_len = pos.min(3072);
        let mut tail = vec![0u8; usize::try_from(tail_len).unwrap_or(0)];
        std::os::unix::fs::FileExt::read_exact_at(&self.file, &mut tail, pos - tail_len).map_err(io)?;
        let mut analysis = analyze_parts(&head, &tail, utf8, latin1);
        analysis.eol = if crs == 0 {
            Eol::Unix
        } else if newlines > 0 && crs == newlines && crlfs == newlines {
            Eol::Dos
        } else {
            Eol::Other
        };
        Ok(Scan {
            analysis,
            size: pos,
            newlines,
            ends_with_lf: last == b'\n',
            line_start,
            line_end,
            offset: offset.max(1),
        })
    }

    /// Read LEN bytes at START through the descriptor (fewer at the end of the file).
    pub fn read_range(&self, start: u64, len: u64) -> Result<Vec<u8>, ReadError> {
        let mut out = vec![0u8; usize::try_from(len).unwrap_or(0)];
        let mut got = 0;
        while got < out.len() {
            let n =
                std::os::unix::fs::FileExt::read_at(&self.file, &mut out[got..], start + got as u64).map_err(|e| {
                    ReadError::File(crate::error::FileError::Io {
                        path: self.path.clone(),
                        message: e.to_string(),
                    })
                })?;
            if n == 0 {
                break;
            }
            got += n;
        }
        out.truncate(got);
        Ok(out)
    }

    /// The page of a scanned UTF-8 or clean ISO-8859-1 ([`Analysis::latin1`]) file ([`page`]'s arguments), reading only the bytes it needs:
    /// a window from the start of line OFFSET large enough to hold COLUMN + MAX_CHARS characters
    /// and the next line end (four bytes a character at most), and line OFFSET again when it is
    /// longer than the window (for its length).
    pub fn window_page(
        &self,
        scan: &Scan,
        offset: usize,
        limit: usize,
        column: usize,
        max_chars: usize,
    ) -> Result<Page, ReadError> {
        let offset = offset.max(1);
        debug_assert_eq!(offset, scan.offset, "the scan located another line");
        let total = scan.total_lines();
        let dos = scan.analysis.eol == Eol::Dos;
        let Some(mut start) = scan.line_start else {
            // Past the end: forward-line stops at the end of the buffer, on an empty line.
            return Ok(Page {
                text: String::new(),
                first: offset,
                last: offset - 1,
                total,
                cut: false,
                long_line: false,
                line_length: 0,
                column_ok: column == 0,
            });
        };
        if start == 0 && scan.analysis.bom {
            start = 3;
        }
        let want = u64::try_from(column.saturating_add(max_chars).saturating_add(2))
            .unwrap_or(u64::MAX)
            .saturating_mul(4)
            .saturating_add(8);
        let end = scan.size.min(start.saturating_add(want));
        let bytes = self.read_range(start, end - start)?;
        let latin1 = !scan.analysis.utf8 && scan.analysis.latin1;
        let transcoded;
        let text = if latin1 {
            transcoded = latin1_text(&bytes);
            transcoded.as_str()
        } else {
            match std::str::from_utf8(&bytes) {
                Ok(t) => t,
                // The window may end inside a character.
                Err(e) => std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or(""),
            }
        };
        let mut p = page(text, dos, 1, limit, column, max_chars);
        let line_end = scan.line_end.unwrap_or(scan.size);
        if line_end > end {
            // Line OFFSET goes on past the window: count its characters.
            let mut chars = 0usize;
            let mut at = start;
            let mut prev = 0u8;
            while at < line_end {
                let chunk = self.read_range(at, (line_end - at).min(CHUNK as u64))?;
                if chunk.is_empty() {
                    break;
                }
                chars += if latin1 {
                    chunk.len()
                } else {
                    chunk.iter().filter(|&&b| b & 0xC0 != 0x80).count()
                };
                prev = chunk[chunk.len() - 1];
                at += chunk.len() as u64;
            }
            if dos && prev == b'\r' && scan.line_end.is_some() {
                chars -= 1;
            }
            p.line_length = chars;
            p.column_ok = column <= chars;
        }
        p.first = offset;
        p.last += offset - 1;
        p.total = total;
        Ok(p)
    }
}

fn classify(path: &Path, e: crate::error::FileError) -> ReadError {
    use crate::error::FileError;
    if let FileError::Io { message, .. } = &e {
        // open_regular keeps only the message; the kind comes from a second look, which can
        // only change the wording of an error that already happened.
        if matches!(std::fs::metadata(path), Err(m) if m.kind() == std::io::ErrorKind::NotFound) {
            return ReadError::NotFound(path.to_path_buf());
        }
        if message.contains("(os error 13)") {
            return ReadError::PermissionDenied(path.to_path_buf());
        }
    }
    ReadError::File(e)
}

fn gunzip_limited(bytes: &[u8], path: &Path, max: u64) -> Result<Vec<u8>, ReadError> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes)
        .take(max.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| ReadError::Gzip {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    if out.len() as u64 > max {
        return Err(ReadError::File(crate::error::FileError::TooLarge {
            path: path.to_path_buf(),
            size: out.len() as u64,
            limit: max,
        }));
    }
    Ok(out)
}

/// How the lines of a text end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Eol {
    /// No carriage return anywhere: lines end with LF (or there is one line).
    Unix,
    /// Every LF is preceded by CR and there is no other CR: Emacs decodes it as DOS text.
    Dos,
    /// Anything else (lone CRs, a mix): left to Emacs's detection.
    Other,
}

impl Eol {
    /// The name Lisp sees.
    pub fn as_str(self) -> &'static str {
        match self {
            Eol::Unix => "unix",
            Eol::Dos => "dos",
            Eol::Other => "other",
        }
    }
}

/// What [`analyze`] found out about a file's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Analysis {
    /// Whether all the bytes are valid UTF-8.
    pub utf8: bool,
    /// Whether the start looks binary: a NUL byte, or (for bytes that are not UTF-8) more than 5%
    /// control characters other than tab, line ends, form feed and escape.
    pub binary: bool,
    /// How lines end.
    pub eol: Eol,
    /// Whether the bytes start with a UTF-8 byte order mark.
    pub bom: bool,
    /// Whether the head or the tail holds something Emacs reads to choose a coding system
    /// (`coding:`, an XML declaration, an HTML charset), so only Emacs can decode it faithfully.
    pub cookie: bool,
    /// Whether the bytes are not UTF-8 but fit ISO-8859-1 cleanly: no C1 control (0x80–0x9F) and
    /// no escape (0x1B), so Emacs's detection, with iso-latin-1 first among the codings that
    /// accept 8-bit text, decodes each byte as the character of the same code
    /// ([`latin1_text`]). The module can then page the file without Emacs's decoder.
    pub latin1: bool,
}

/// Whether BYTE keeps text clean ISO-8859-1 (see [`Analysis::latin1`]).
fn latin1_byte(byte: u8) -> bool {
    !(0x80..0xA0).contains(&byte) && byte != 0x1b
}

/// Whether all BYTES keep text clean ISO-8859-1: in blocks folded without a branch, which the
/// compiler vectorizes (a scan of 50 MB stays within a few milliseconds of the UTF-8 check).
fn latin1_bytes(bytes: &[u8]) -> bool {
    bytes
        .chunks(256)
        .all(|block| block.iter().fold(true, |ok, &b| ok & latin1_byte(b)))
}

/// ISO-8859-1 BYTES as text: each byte is the character of the same code.
pub fn latin1_text(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| char::from(b)).collect()
}

fn contains_ci(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w.eq_ignore_ascii_case(needle))
}

/// The analysis from a file's HEAD (its first bytes) and TAIL (its last), given whether it is
/// valid UTF-8; the line ends are left to the caller (`Eol::Unix` here).
fn analyze_parts(head: &[u8], tail: &[u8], utf8: bool, latin1: bool) -> Analysis {
    let probe = &head[..head.len().min(BINARY_PROBE)];
    let nul = memchr::memchr(0, probe).is_some();
    let controls = probe
        .iter()
        .filter(|&&b| b < 0x20 && !matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | 0x1b))
        .count();
    Analysis {
        utf8,
        binary: nul || (!utf8 && controls * 20 > probe.len()),
        eol: Eol::Unix,
        bom: head.starts_with(b"\xEF\xBB\xBF"),
        cookie: contains_ci(head, b"coding:")
            || contains_ci(tail, b"coding:")
            || contains_ci(head, b"<?xml")
            || contains_ci(head, b"charset"),
        latin1: !utf8 && latin1,
    }
}

/// Look at BYTES: validity as UTF-8, binary content, line ends, byte order mark, coding cookies.
pub fn analyze(bytes: &[u8]) -> Analysis {
    let probe = &bytes[..bytes.len().min(BINARY_PROBE)];
    let utf8 = std::str::from_utf8(bytes).is_ok();
    let nul = memchr::memchr(0, probe).is_some();
    let controls = probe
        .iter()
        .filter(|&&b| b < 0x20 && !matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | 0x1b))
        .count();
    let binary = nul || (!utf8 && controls * 20 > probe.len());
    let lf = memchr::memchr_iter(b'\n', bytes).count();
    let cr = memchr::memchr_iter(b'\r', bytes).count();
    let eol = if cr == 0 {
        Eol::Unix
    } else if lf > 0 && cr == lf && memchr::memmem::find_iter(bytes, b"\r\n").count() == lf {
        Eol::Dos
    } else {
        Eol::Other
    };
    let head = &bytes[..bytes.len().min(4096)];
    let tail = &bytes[bytes.len().saturating_sub(3072)..];
    let cookie = contains_ci(head, b"coding:")
        || contains_ci(tail, b"coding:")
        || contains_ci(head, b"<?xml")
        || contains_ci(head, b"charset");
    Analysis {
        utf8,
        binary,
        eol,
        bom: bytes.starts_with(b"\xEF\xBB\xBF"),
        cookie,
        latin1: !utf8 && latin1_bytes(bytes),
    }
}

/// A page of text, as read_file reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The text shown.
    pub text: String,
    /// The first line shown (the offset asked for).
    pub first: usize,
    /// The last line shown, or `first - 1` when none is.
    pub last: usize,
    /// The number of lines of the text (as `count-lines' counts them).
    pub total: usize,
    /// Whether the page stopped before LIMIT lines because of the character limit.
    pub cut: bool,
    /// Whether line FIRST alone did not fit, so the page holds only its beginning.
    pub long_line: bool,
    /// The characters of line FIRST (without its line end).
    pub line_length: usize,
    /// Whether COLUMN is within line FIRST; when not, the page is empty.
    pub column_ok: bool,
}

/// The text of BYTES once decoded: a UTF-8 byte order mark dropped.
pub fn body(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// The whole of TEXT as Emacs decodes it: the byte order mark dropped, DOS line ends (when DOS)
/// made newlines.
pub fn decoded(text: &str, dos: bool) -> std::borrow::Cow<'_, str> {
    let text = body(text);
    if dos {
        std::borrow::Cow::Owned(text.replace("\r\n", "\n"))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// The number of lines of TEXT as Emacs's `count-lines' counts them on the whole buffer.
fn count_lines(text: &str) -> usize {
    let newlines = memchr::memchr_iter(b'\n', text.as_bytes()).count();
    if text.is_empty() || text.ends_with('\n') {
        newlines
    } else {
        newlines + 1
    }
}

/// The characters of S once decoded, with DOS line ends counted as one character.
fn chars(s: &str, dos: bool) -> usize {
    let n = s.chars().count();
    if dos {
        n - memchr::memchr_iter(b'\r', s.as_bytes()).count()
    } else {
        n
    }
}

/// The byte offset in S after its first N characters (S's length when it has fewer).
fn skip_chars(s: &str, n: usize) -> usize {
    s.char_indices().nth(n).map_or(s.len(), |(i, _)| i)
}

/// Cut a page of TEXT (valid UTF-8 without its byte order mark, see [`body`]; DOS line ends
/// when DOS) as read_file shows it: LIMIT lines
/// from line OFFSET (1-based), skipping COLUMN characters of the first, at most MAX_CHARS
/// characters. This is the Emacs Lisp pager's algorithm on the decoded text, in characters:
/// lines are added while they fit; a line that alone does not fit is cut at MAX_CHARS (unless
/// only its newline is over); an OFFSET past the end gives an empty page.
pub fn page(text: &str, dos: bool, offset: usize, limit: usize, column: usize, max_chars: usize) -> Page {
    let bytes = text.as_bytes();
    let offset = offset.max(1);
    let max_chars = max_chars.max(1);
    let total = count_lines(text);
    // forward-line (offset - 1) from the start: the start of line OFFSET, or the end.
    let mut pos = 0;
    for _ in 1..offset {
        match memchr::memchr(b'\n', &bytes[pos..]) {
            Some(i) => pos += i + 1,
            None => {
                pos = bytes.len();
                break;
            }
        }
    }
    let line_end = memchr::memchr(b'\n', &bytes[pos..]).map_or(bytes.len(), |i| pos + i);
    let content_end = if dos && line_end > pos && bytes[line_end - 1] == b'\r' && line_end < bytes.len() {
        line_end - 1
    } else {
        line_end
    };
    let line_length = chars(&text[pos..content_end], false);
    if column > line_length {
        return Page {
            text: String::new(),
            first: offset,
            last: offset - 1,
            total,
            cut: false,
            long_line: false,
            line_length,
            column_ok: false,
        };
    }
    let start = pos + skip_chars(&text[pos..content_end], column);
    let mut p = start;
    let mut used = 0usize;
    let mut last = offset - 1;
    let mut cut = false;
    while last + 1 - offset < limit && p < bytes.len() && !cut {
        let eol = memchr::memchr(b'\n', &bytes[p..]).map_or(bytes.len(), |i| p + i + 1);
        let seg = chars(&text[p..eol], dos);
        if used + seg > max_chars && last > offset - 1 {
            cut = true;
        } else {
            p = eol;
            used += seg;
            last += 1;
        }
    }
    let raw = &text[start..p];
    let mut shown = if dos {
        raw.replace("\r\n", "\n")
    } else {
        raw.to_string()
    };
    let mut long_line = false;
    let n = used;
    if n > max_chars && !(n == max_chars + 1 && shown.ends_with('\n')) {
        shown.truncate(skip_chars(&shown, max_chars));
        long_line = true;
    }
    Page {
        text: shown,
        first: offset,
        last,
        total,
        cut: cut || long_line,
        long_line,
        line_length,
        column_ok: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn temp_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("agent-q-files-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    #[test]
    fn count_lines_follows_emacs() {
        assert_eq!(count_lines(""), 0);
        assert_eq!(count_lines("a"), 1);
        assert_eq!(count_lines("a\n"), 1);
        assert_eq!(count_lines("a\nb"), 2);
        assert_eq!(count_lines("\n\n"), 2);
    }

    #[test]
    fn pages_of_lines() {
        let text: String = (1..=1000).map(|i| format!("line {i}\n")).collect();
        let p = page(&text, false, 1, 400, 0, 15000);
        assert_eq!(
            (p.first, p.last, p.total, p.cut, p.long_line),
            (1, 400, 1000, false, false)
        );
        assert!(p.text.starts_with("line 1\n") && p.text.ends_with("line 400\n"));
        let p = page(&text, false, 998, 10, 0, 15000);
        assert_eq!(p.text, "line 998\nline 999\nline 1000\n");
        assert_eq!(p.last, 1000);
        let p = page(&text, false, 2000, 10, 0, 15000);
        assert_eq!((p.text.as_str(), p.last, p.total), ("", 1999, 1000));
    }

    #[test]
    fn the_character_limit_cuts_between_lines_and_inside_a_long_line() {
        let text: String = (1..=300).map(|i| format!("{i:04} {}\n", "x".repeat(95))).collect();
        let p = page(&text, false, 1, 400, 0, 1000);
        assert_eq!((p.last, p.cut, p.long_line), (9, true, false));
        let text = format!("{}\nshort\n", "y".repeat(3000));
        let p = page(&text, false, 1, 400, 0, 1000);
        assert_eq!((p.last, p.cut, p.long_line, p.line_length), (1, true, true, 3000));
        assert_eq!(p.text, "y".repeat(1000));
        // The rest of the line fits but for its newline: shown whole, the next line cut.
        let p = page(&text, false, 1, 400, 2000, 1000);
        assert_eq!(p.text, "y".repeat(1000) + "\n");
        assert_eq!((p.last, p.cut, p.long_line), (1, true, false));
        let p = page(&text, false, 1, 400, 3001, 1000);
        assert!(!p.column_ok);
        // A line that fits but for its newline is shown whole.
        let text = format!("{}\nz\n", "w".repeat(1000));
        let p = page(&text, false, 1, 400, 0, 1000);
        assert_eq!((p.text.len(), p.long_line, p.last), (1001, false, 1));
    }

    #[test]
    fn characters_not_bytes() {
        let text = "é".repeat(10) + "\n" + &"λ".repeat(3);
        let p = page(&text, false, 1, 10, 0, 11);
        assert_eq!((p.last, p.line_length), (1, 10));
        let p = page(&text, false, 1, 10, 4, 100);
        assert_eq!(p.text, "é".repeat(6) + "\n" + &"λ".repeat(3));
    }

    #[test]
    fn dos_line_ends_and_bom_are_decoded() {
        let p = page(body("\u{feff}ab\r\ncd\r\n"), true, 1, 10, 0, 100);
        assert_eq!(p.text, "ab\ncd\n");
        assert_eq!((p.total, p.line_length), (2, 2));
    }

    #[test]
    fn analysis() {
        let a = analyze(b"plain\ntext\n");
        assert!(a.utf8 && !a.binary && !a.bom && !a.cookie);
        assert_eq!(a.eol, Eol::Unix);
        assert_eq!(analyze(b"a\r\nb\r\n").eol, Eol::Dos);
        assert_eq!(analyze(b"a\r\nb\n").eol, Eol::Other);
        assert_eq!(analyze(b"a\rb\r").eol, Eol::Other);
        assert_eq!(analyze(b"a\r\nb\rc\r\n").eol, Eol::Other);
        assert!(analyze(b"a\0b").binary);
        assert!(!analyze(b"caf\xe9\n").binary && !analyze(b"caf\xe9\n").utf8);
        let random: Vec<u8> = (0u32..4000).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
        assert!(analyze(&random).binary);
        assert!(analyze(b";; -*- coding: latin-1 -*-\n").cookie);
        assert!(analyze(b"<?xml version=\"1.0\" encoding=\"latin-1\"?>").cookie);
        assert!(analyze(b"\xEF\xBB\xBFx").bom);
    }

    #[test]
    fn reads_through_the_descriptor_it_checked() {
        let dir = temp_dir("open");
        let a = dir.join("a.txt");
        let b = dir.join("b.txt");
        std::fs::write(&a, b"AAA").expect("write");
        std::fs::write(&b, b"BBB").expect("write");
        let link = dir.join("link");
        std::os::unix::fs::symlink(&a, &link).expect("symlink");
        let opened = OpenedFile::open(&link).expect("opens");
        // The name now designates another file; the descriptor still reads the one checked.
        std::fs::remove_file(&link).expect("unlink");
        std::os::unix::fs::symlink(&b, &link).expect("symlink");
        let id = opened.identity();
        assert_eq!(
            id.true_path.as_deref(),
            Some(std::fs::canonicalize(&a).expect("canon").as_path())
        );
        assert_eq!((id.nlink, id.size), (1, 3));
        assert_eq!(opened.load(100, false).expect("reads"), b"AAA");
        assert!(matches!(
            OpenedFile::open(&dir.join("none")),
            Err(ReadError::NotFound(_))
        ));
        std::fs::hard_link(&a, dir.join("hard")).expect("hard link");
        assert_eq!(OpenedFile::open(&a).expect("opens").identity().nlink, 2);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_windowed_page_is_the_page_of_the_whole_text() {
        let dir = temp_dir("window");
        let texts = [
            (1..=3000).map(|i| format!("ligne é {i}\n")).collect::<String>(),
            (1..=50).map(|i| format!("{i}\r\n")).collect::<String>(),
            format!("\u{feff}{}\nshort\nend", "λ".repeat(5000)),
            format!("{}\r\n{}", "x".repeat(3000), "y".repeat(10)),
            String::new(),
            "\n\n\n".to_string(),
            "no newline".to_string(),
        ];
        for (n, text) in texts.iter().enumerate() {
            let path = dir.join(format!("t{n}"));
            std::fs::write(&path, text).expect("write");
            let opened = OpenedFile::open(&path).expect("opens");
            for offset in [1, 2, 3, 1500, 2999, 3000, 3001, 4000] {
                for column in [0, 1, 7, 1200, 4999] {
                    for (limit, max) in [(400, 1000), (2, 7), (10, 15000)] {
                        let scan = opened.scan(1 << 30, offset).expect("scans");
                        let a = &scan.analysis;
                        assert_eq!(*a, {
                            let mut b = analyze(text.as_bytes());
                            b.eol = a.eol;
                            b
                        });
                        assert_eq!(a.eol, analyze(text.as_bytes()).eol);
                        let dos = a.eol == Eol::Dos;
                        let want = page(body(text), dos, offset, limit, column, max);
                        let got = opened.window_page(&scan, offset, limit, column, max).expect("page");
                        if want.column_ok {
                            assert_eq!(got, want, "text {n} offset {offset} column {column} limit {limit}");
                        } else {
                            assert_eq!((got.column_ok, got.line_length), (false, want.line_length));
                        }
                    }
                }
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_scan_refuses_more_than_the_limit_and_finds_invalid_utf8_anywhere() {
        let dir = temp_dir("scan");
        let path = dir.join("big");
        let mut bytes = "é".repeat(CHUNK).into_bytes();
        std::fs::write(&path, &bytes).expect("write");
        let opened = OpenedFile::open(&path).expect("opens");
        assert!(
            opened.scan(1 << 30, 1).expect("scans").analysis.utf8,
            "characters across chunks"
        );
        assert!(matches!(
            opened.scan(100, 1),
            Err(ReadError::File(crate::error::FileError::TooLarge { .. }))
        ));
        bytes.push(0xff);
        std::fs::write(&path, &bytes).expect("write");
        assert!(
            !OpenedFile::open(&path)
                .expect("opens")
                .scan(1 << 30, 1)
                .expect("scans")
                .analysis
                .utf8
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn clean_latin1_is_found_anywhere_and_paged_as_its_bytes() {
        assert!(analyze(b"caf\xe9\n").latin1);
        assert!(!analyze("café\n".as_bytes()).latin1, "UTF-8 is not Latin-1 here");
        assert!(!analyze(b"caf\xe9 \x85\n").latin1, "a C1 control");
        assert!(!analyze(b"caf\xe9 \x1b$B\n").latin1, "an escape");
        let dir = temp_dir("latin1");
        let path = dir.join("latin1");
        let mut bytes = b"line\n".repeat(CHUNK);
        bytes.extend_from_slice(b"d\xe9j\xe0 vu\nlast");
        std::fs::write(&path, &bytes).expect("write");
        let opened = OpenedFile::open(&path).expect("opens");
        let scan = opened.scan(1 << 30, CHUNK + 1).expect("scans");
        assert!(scan.analysis.latin1 && !scan.analysis.utf8);
        let page = opened.window_page(&scan, CHUNK + 1, 5, 0, 100).expect("pages");
        assert_eq!(page.text, "déjà vu\nlast");
        assert_eq!((page.first, page.last, page.total), (CHUNK + 1, CHUNK + 2, CHUNK + 2));
        bytes.push(0x9f);
        std::fs::write(&path, &bytes).expect("write");
        let opened = OpenedFile::open(&path).expect("opens");
        assert!(
            !opened.scan(1 << 30, 1).expect("scans").analysis.latin1,
            "a C1 control at the end"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn gzip_is_decompressed_with_a_limit() {
        let dir = temp_dir("gz");
        let path = dir.join("x.gz");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(&vec![b'a'; 10_000]).expect("compress");
        std::fs::write(&path, enc.finish().expect("finish")).expect("write");
        let opened = OpenedFile::open(&path).expect("opens");
        assert_eq!(opened.load(20_000, true).expect("gunzips").len(), 10_000);
        assert!(matches!(opened.load(20_000, false), Ok(b) if b.len() < 1000 && b.len() > 10));
        assert!(matches!(
            opened.load(5_000, true),
            Err(ReadError::File(crate::error::FileError::TooLarge { .. }))
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
