//! `agent-q--core-file-*`: reading a file through one descriptor ([`agent_q_core::files`]) for the read
//! tools.
//!
//! `agent-q--core-file-open` opens a regular file (never blocking) and returns a handle;
//! `agent-q--core-file-info` says what the descriptor really designates, for the read guard to
//! check; `agent-q--core-file-load` reads the bytes through that descriptor and describes them;
//! `agent-q--core-file-page` cuts a page of UTF-8 text, `agent-q--core-file-bytes` hands the
//! bytes to Emacs for its decoders; `agent-q--core-file-close` frees the bytes and closes the
//! descriptor (the garbage collector would, later). Errors signal `agent-q-file-error` with
//! (MESSAGE KIND), KIND one of `not-found`, `permission`, `not-regular`, `too-large`, `error`.
//!
//! The write tools pin the directory they checked with `agent-q--core-file-pin` and write with
//! `agent-q--core-file-write-pinned`, which writes there or nowhere ([`agent_q_core::pinned`]); its
//! errors add the KINDs `changed` and `links`.

use std::cell::RefCell;
use std::path::Path;

use emacs::{defun, Env, IntoLisp, Result, Value};

use super::args;
use super::errors;
use agent_q_core::error::{FileError, ReadError, WriteError};
use agent_q_core::files::{self, Analysis, OpenedFile, Scan};
use agent_q_core::pinned;

/// An open file and, once loaded, its bytes, or once scanned, what the scan found.
pub struct FileHandle {
    opened: Option<OpenedFile>,
    bytes: Option<(Vec<u8>, Analysis)>,
    scan: Option<Scan>,
}

type Handle = RefCell<FileHandle>;

fn signal<T>(env: &Env, e: &ReadError) -> Result<T> {
    let kind = match e {
        ReadError::NotFound(_) => "not-found",
        ReadError::PermissionDenied(_) => "permission",
        ReadError::File(FileError::NotRegular { .. }) => "not-regular",
        ReadError::File(FileError::TooLarge { .. }) => "too-large",
        ReadError::File(FileError::Io { .. }) | ReadError::Gzip { .. } => "error",
    };
    env.signal(errors::agent_q_file_error, (e.to_string(), env.intern(kind)?))
}

/// HANDLE as the file handle it must be, or an `agent-q-error`.
fn handle_arg<'e>(env: &'e Env, handle: Value<'e>) -> Result<&'e Handle> {
    match handle.into_rust::<&Handle>() {
        Ok(cell) => Ok(cell),
        Err(_) => errors::signal(
            env,
            errors::Kind::Generic,
            format!(
                "HANDLE must be a file handle from agent-q--core-file-open, not a {}",
                args::type_name(env, handle)
            ),
        ),
    }
}

/// A size, count or offset argument: an integer (negative ones count as 0 where they are
/// used), or an `agent-q-error` naming WHAT.
fn int_arg(env: &Env, v: Value<'_>, what: &str) -> Result<i64> {
    args::integer(env, v, what)
}

fn closed<T>(env: &Env) -> Result<T> {
    errors::signal(env, errors::Kind::Generic, "agent-q: this file handle is closed")
}

fn int(n: u64) -> i64 {
    // Device and inode numbers beyond i64 never compare equal to what Emacs reports: refused.
    i64::try_from(n).unwrap_or(-1)
}

fn kw<'e>(env: &'e Env, name: &str) -> Result<Value<'e>> {
    env.intern(&format!(":{name}"))
}

/// Open PATH for reading if it is a regular file, without blocking; return a handle.
///
/// PATH is an absolute local file name. A FIFO, socket, device or directory signals
/// `agent-q-file-error' (KIND `not-regular') without blocking, as do a missing file
/// (`not-found') and one the system refuses to open (`permission').
#[defun]
fn file_open<'e>(env: &'e Env, path: Value<'e>) -> Result<Value<'e>> {
    let path = args::string(env, path, "PATH", args::MAX_NAME_BYTES)?;
    match OpenedFile::open(Path::new(&path)) {
        Ok(opened) => RefCell::new(FileHandle {
            opened: Some(opened),
            bytes: None,
            scan: None,
        })
        .into_lisp(env),
        Err(e) => signal(env, &e),
    }
}

/// What the descriptor of HANDLE designates: (:true PATH :dev D :ino I :nlink N :size S).
///
/// PATH is the opened file's absolute name with links resolved (nil when the system does not
/// say, e.g. the file was deleted after it was opened); D and I its device and inode numbers; N
/// its number of hard links; S its size when opened.
#[defun]
fn file_info<'e>(env: &'e Env, handle: Value<'e>) -> Result<Value<'e>> {
    let cell = handle_arg(env, handle)?;
    let h = cell.borrow();
    let Some(opened) = h.opened.as_ref() else {
        return closed(env);
    };
    let id = opened.identity();
    let true_path = id.true_path.map(|p| p.to_string_lossy().into_owned());
    env.list((
        kw(env, "true")?,
        true_path,
        kw(env, "dev")?,
        int(id.dev),
        kw(env, "ino")?,
        int(id.ino),
        kw(env, "nlink")?,
        int(id.nlink),
        kw(env, "size")?,
        int(id.size),
    ))
}

/// Read HANDLE's file through its descriptor, at most MAX bytes, and describe the bytes.
///
/// With GUNZIP non-nil, gzip data is decompressed (at most MAX bytes of output). Return
/// (:size N :utf8 B :binary B :eol EOL :bom B :cookie B :latin1 B): N bytes (decompressed); whether they
/// are valid UTF-8; whether they look binary (a NUL, or many control characters in bytes that
/// are not UTF-8); EOL `unix', `dos' or `other' (lone or mixed carriage returns); whether they
/// start with a UTF-8 byte order mark; whether their head or tail holds a coding cookie, an XML
/// declaration or a charset that Emacs would read to choose the coding system; whether, not
/// being UTF-8, they are clean ISO-8859-1 (no C1 control, no escape).
#[defun]
fn file_load<'e>(env: &'e Env, handle: Value<'e>, max: Value<'e>, gunzip: Value<'e>) -> Result<Value<'e>> {
    let cell = handle_arg(env, handle)?;
    let max = int_arg(env, max, "MAX")?;
    let mut h = cell.borrow_mut();
    let Some(opened) = h.opened.as_ref() else {
        return closed(env);
    };
    let bytes = match opened.load(u64::try_from(max).unwrap_or(0), gunzip.is_not_nil()) {
        Ok(b) => b,
        Err(e) => return signal(env, &e),
    };
    let a = files::analyze(&bytes);
    let result = analysis_plist(env, bytes.len() as u64, &a)?;
    h.bytes = Some((bytes, a));
    Ok(result)
}

fn analysis_plist<'e>(env: &'e Env, size: u64, a: &Analysis) -> Result<Value<'e>> {
    let flag = |b: bool| b.into_lisp(env);
    let fields = [
        kw(env, "size")?,
        int(size).into_lisp(env)?,
        kw(env, "utf8")?,
        flag(a.utf8)?,
        kw(env, "binary")?,
        flag(a.binary)?,
        kw(env, "eol")?,
        env.intern(a.eol.as_str())?,
        kw(env, "bom")?,
        flag(a.bom)?,
        kw(env, "cookie")?,
        flag(a.cookie)?,
        kw(env, "latin1")?,
        flag(a.latin1)?,
    ];
    env.list(&fields[..])
}

/// Read HANDLE's file once through its descriptor, in chunks, without keeping it (at most MAX
/// bytes), and describe it as `agent-q--core-file-load' does; remember where line OFFSET is.
///
/// For a page of a large UTF-8 file: `agent-q--core-file-page' then reads only the page. The
/// scan validates UTF-8 and counts lines over the whole file, so the result is the same as
/// after `agent-q--core-file-load'.
#[defun]
fn file_scan<'e>(env: &'e Env, handle: Value<'e>, max: Value<'e>, offset: Value<'e>) -> Result<Value<'e>> {
    let cell = handle_arg(env, handle)?;
    let (max, offset) = (int_arg(env, max, "MAX")?, int_arg(env, offset, "OFFSET")?);
    let mut h = cell.borrow_mut();
    let Some(opened) = h.opened.as_ref() else {
        return closed(env);
    };
    let scan = match opened.scan(u64::try_from(max).unwrap_or(0), usize::try_from(offset).unwrap_or(1)) {
        Ok(s) => s,
        Err(e) => return signal(env, &e),
    };
    let result = analysis_plist(env, scan.size, &scan.analysis)?;
    h.scan = Some(scan);
    Ok(result)
}

/// A page of HANDLE's loaded UTF-8 text (or clean ISO-8859-1 text, `:latin1' in its
/// description): LIMIT lines from line OFFSET, from COLUMN, at most MAX-CHARS characters.
///
/// Return (PAGE FIRST LAST TOTAL CUT LONG-LINE LINE-LENGTH COLUMN-OK), as read_file's pager
/// computes them (see `agent-q-builtins--page-lines'): DOS line ends and a byte order mark are
/// decoded as Emacs would. Signals when the text is not valid UTF-8 (decode it in Emacs then).
#[defun]
fn file_page<'e>(
    env: &'e Env,
    handle: Value<'e>,
    offset: Value<'e>,
    limit: Value<'e>,
    column: Value<'e>,
    max_chars: Value<'e>,
) -> Result<Value<'e>> {
    let cell = handle_arg(env, handle)?;
    let offset = int_arg(env, offset, "OFFSET")?;
    let limit = int_arg(env, limit, "LIMIT")?;
    let column = int_arg(env, column, "COLUMN")?;
    let max_chars = int_arg(env, max_chars, "MAX-CHARS")?;
    let h = cell.borrow();
    let size = |n: i64| usize::try_from(n).unwrap_or(0);
    let p = match (h.bytes.as_ref(), h.scan.as_ref(), h.opened.as_ref()) {
        (Some((bytes, a)), _, _) => {
            let transcoded;
            let text = match std::str::from_utf8(bytes) {
                Ok(text) => files::body(text),
                Err(_) if a.latin1 => {
                    transcoded = files::latin1_text(bytes);
                    transcoded.as_str()
                }
                Err(_) => return errors::signal(env, errors::Kind::Generic, "agent-q: the file is not UTF-8 text"),
            };
            files::page(
                text,
                a.eol == files::Eol::Dos,
                size(offset),
                size(limit),
                size(column),
                size(max_chars),
            )
        }
        (None, Some(scan), Some(opened)) if scan.analysis.utf8 || scan.analysis.latin1 => {
            if size(offset).max(1) != scan.offset {
                return errors::signal(
                    env,
                    errors::Kind::Generic,
                    format!("agent-q: the file was scanned for line {}, not {offset}", scan.offset),
                );
            }
            match opened.window_page(scan, size(offset), size(limit), size(column), size(max_chars)) {
                Ok(p) => p,
                Err(e) => return signal(env, &e),
            }
        }
        _ => {
            return errors::signal(
                env,
                errors::Kind::Generic,
                "agent-q: the file is not loaded or not UTF-8",
            )
        }
    };
    env.list((
        p.text,
        int(p.first as u64),
        int(p.last as u64),
        int(p.total as u64),
        p.cut,
        p.long_line,
        int(p.line_length as u64),
        p.column_ok,
    ))
}

/// The whole loaded UTF-8 text of HANDLE, decoded as Emacs would (DOS line ends and a byte order
/// mark removed). Signals when the text is not valid UTF-8.
#[defun]
fn file_text<'e>(env: &'e Env, handle: Value<'e>) -> Result<Value<'e>> {
    let cell = handle_arg(env, handle)?;
    let h = cell.borrow();
    let Some((bytes, a)) = h.bytes.as_ref() else {
        return errors::signal(env, errors::Kind::Generic, "agent-q: the file is not loaded");
    };
    let Ok(text) = std::str::from_utf8(bytes) else {
        return errors::signal(env, errors::Kind::Generic, "agent-q: the file is not UTF-8 text");
    };
    files::decoded(text, a.eol == files::Eol::Dos).as_ref().into_lisp(env)
}

/// The loaded bytes of HANDLE as a unibyte string, for Emacs to decode.
#[defun]
fn file_bytes<'e>(env: &'e Env, handle: Value<'e>) -> Result<Value<'e>> {
    let cell = handle_arg(env, handle)?;
    let h = cell.borrow();
    match h.bytes.as_ref() {
        Some((bytes, _)) => bytes.as_slice().into_lisp(env),
        None => errors::signal(env, errors::Kind::Generic, "agent-q: the file is not loaded"),
    }
}

/// Close HANDLE's descriptor and free its bytes now. Closing twice is harmless.
#[defun]
fn file_close<'e>(env: &'e Env, handle: Value<'e>) -> Result<Value<'e>> {
    let cell = handle_arg(env, handle)?;
    let mut h = cell.borrow_mut();
    h.opened = None;
    h.bytes = None;
    env.intern("nil")
}

fn write_signal<T>(env: &Env, e: &WriteError) -> Result<T> {
    let kind = match e {
        WriteError::Changed { .. } => "changed",
        WriteError::NotRegular { .. } => "not-regular",
        WriteError::HardLinks { .. } => "links",
        WriteError::BadName { .. } | WriteError::Io { .. } => "error",
    };
    env.signal(errors::agent_q_file_error, (e.to_string(), env.intern(kind)?))
}

/// Pin the existing directory DIR for a later `agent-q--core-file-write-pinned': return
/// (DEV INO), its device and inode, reached from / without following a symbolic link.
///
/// DIR must be absolute, without . or .. and without a link in it (resolve it first): a link
/// signals `agent-q-file-error' with KIND `changed'.
#[defun]
fn file_pin<'e>(env: &'e Env, dir: Value<'e>) -> Result<Value<'e>> {
    let dir = args::string(env, dir, "DIR", args::MAX_NAME_BYTES)?;
    match pinned::pin_directory(Path::new(&dir)) {
        Ok(pin) => env.list((int(pin.dev), int(pin.ino))),
        Err(e) => write_signal(env, &e),
    }
}

/// Write BYTES (a unibyte string) to the directory DIR pinned as (DEV INO), below it REST.
///
/// REST is a list of names: the directories to create below DIR, then the file's name. DIR is
/// reached again from / without following a link and must still be the directory pinned; no
/// component of REST nor the file may be a symbolic link, and an existing file must be regular
/// with one link. The file gets MODE. With IN-PLACE non-nil the existing file is truncated and
/// rewritten; otherwise a temporary file in the same directory is renamed over it. Return
/// (:file FILE :created DIRS :existed BOOL :size N). Anything else signals `agent-q-file-error'
/// with (MESSAGE KIND), KIND `changed' (something checked is not there any more),
/// `not-regular', `links' or `error', and nothing is written.
#[defun]
#[allow(clippy::too_many_arguments)]
fn file_write_pinned<'e>(
    env: &'e Env,
    dir: Value<'e>,
    dev: Value<'e>,
    ino: Value<'e>,
    rest: Value<'e>,
    bytes: Value<'e>,
    mode: Value<'e>,
    in_place: Value<'e>,
) -> Result<Value<'e>> {
    let dir = args::string(env, dir, "DIR", args::MAX_NAME_BYTES)?;
    let dev = int_arg(env, dev, "DEV")?;
    let ino = int_arg(env, ino, "INO")?;
    let mode = int_arg(env, mode, "MODE")?;
    // REST: a proper list of at most 256 strings (checked before it is walked).
    let length = env.call("proper-list-p", (rest,))?;
    let count = if length.is_not_nil() {
        length.into_rust::<i64>().unwrap_or(-1)
    } else {
        -1
    };
    if !(0..=256).contains(&count) {
        return errors::signal(
            env,
            errors::Kind::Generic,
            format!(
                "REST must be a list of at most 256 names, not a {}",
                args::type_name(env, rest)
            ),
        );
    }
    let mut names = Vec::new();
    let mut tail = rest;
    for _ in 0..count {
        names.push(args::string(
            env,
            env.call("car", (tail,))?,
            "an element of REST",
            4096,
        )?);
        tail = env.call("cdr", (tail,))?;
    }
    if !env.call("stringp", (bytes,))?.is_not_nil() || env.call("multibyte-string-p", (bytes,))?.is_not_nil() {
        return errors::signal(
            env,
            errors::Kind::Generic,
            format!("BYTES must be a unibyte string, not a {}", args::type_name(env, bytes)),
        );
    }
    let bytes: Vec<u8> = match bytes.into_rust() {
        Ok(b) => b,
        Err(_) => return errors::signal(env, errors::Kind::Generic, "BYTES cannot be read"),
    };
    let (Ok(dev), Ok(ino), Ok(mode)) = (u64::try_from(dev), u64::try_from(ino), u32::try_from(mode)) else {
        return errors::signal(env, errors::Kind::Generic, "DEV, INO and MODE must not be negative");
    };
    let pin = pinned::Pin {
        dir: dir.into(),
        dev,
        ino,
    };
    let how = if in_place.is_not_nil() {
        pinned::Mode::InPlace
    } else {
        pinned::Mode::Replace
    };
    match pinned::write_pinned(&pin, &names, &bytes, mode, how) {
        Ok(w) => {
            let created = env.list(
                &w.created
                    .iter()
                    .map(|p| p.to_string_lossy().into_owned().into_lisp(env))
                    .collect::<Result<Vec<_>>>()?[..],
            )?;
            env.list((
                kw(env, "file")?,
                w.path.to_string_lossy().into_owned(),
                kw(env, "created")?,
                created,
                kw(env, "existed")?,
                w.existed,
                kw(env, "size")?,
                int(w.size),
            ))
        }
        Err(e) => write_signal(env, &e),
    }
}
