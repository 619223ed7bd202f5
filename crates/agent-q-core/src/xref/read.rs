//! Reading one source file, plain or gzip-compressed, through a descriptor checked to be a regular
//! file, within a size limit.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use super::index::Stamp;

/// Why one file could not be scanned.
#[derive(Debug, thiserror::Error)]
pub enum SourceReadError {
    /// Reading the file failed.
    #[error("cannot read: {0}")]
    Io(#[from] std::io::Error),
    /// Opening the file failed (it does not exist, permission denied...).
    #[error("cannot open: {0}")]
    Open(String),
    /// The path is a directory, a FIFO, a device or another non-regular file: it is not opened
    /// for reading (a FIFO would block the scan until a writer appears, a device never ends).
    #[error("{kind}, not a regular file; not read")]
    NotRegular {
        /// What it is ("a FIFO (named pipe)", "a directory"...).
        kind: &'static str,
    },
    /// The file (decompressed, for gzip) is larger than the limit.
    #[error("larger than the limit of {limit} bytes")]
    TooLarge {
        /// The size limit in bytes.
        limit: u64,
    },
    /// The file starts like gzip data but does not decompress.
    #[error("invalid gzip data: {0}")]
    Gzip(std::io::Error),
}

/// Read a source file, decompressing gzip data (recognised by its magic bytes), with at most
/// LIMIT bytes of text. BUF receives the text; COMPRESSED is scratch space.
pub fn read_source(
    path: &Path,
    limit: u64,
    buf: &mut Vec<u8>,
    compressed: &mut Vec<u8>,
) -> Result<(), SourceReadError> {
    let mut file = open_source(path, limit)?.0;
    read_open_source(&mut file, limit, buf, compressed)
}

/// Open the source file PATH through [`crate::fsutil::open_regular`]: a FIFO, socket, device or
/// directory among the files is refused without blocking, checked on the opened descriptor.
pub(super) fn open_source(path: &Path, limit: u64) -> Result<(File, Stamp), SourceReadError> {
    let (file, meta) = crate::fsutil::open_regular(path).map_err(|e| match e {
        crate::error::FileError::NotRegular { kind, .. } => SourceReadError::NotRegular { kind },
        crate::error::FileError::Io { message, .. } => SourceReadError::Open(message),
        other => SourceReadError::Open(other.to_string()),
    })?;
    if meta.len() > limit {
        return Err(SourceReadError::TooLarge { limit });
    }
    Ok((
        file,
        Stamp {
            len: meta.len(),
            modified: meta.modified().ok(),
        },
    ))
}

pub(super) fn read_open_source(
    file: &mut File,
    limit: u64,
    buf: &mut Vec<u8>,
    compressed: &mut Vec<u8>,
) -> Result<(), SourceReadError> {
    buf.clear();
    compressed.clear();
    file.take(limit.saturating_add(1)).read_to_end(compressed)?;
    if compressed.len() as u64 > limit {
        return Err(SourceReadError::TooLarge { limit });
    }
    if compressed.starts_with(&[0x1f, 0x8b]) {
        buf.reserve(compressed.len().saturating_mul(4));
        let decoder = flate2::read::MultiGzDecoder::new(&compressed[..]);
        decoder
            .take(limit.saturating_add(1))
            .read_to_end(buf)
            .map_err(SourceReadError::Gzip)?;
        if buf.len() as u64 > limit {
            return Err(SourceReadError::TooLarge { limit });
        }
    } else {
        std::mem::swap(buf, compressed);
    }
    Ok(())
}
