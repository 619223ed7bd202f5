//! Opening files without ever blocking Emacs.
//!
//! `open(2)` on a FIFO blocks until a writer appears, and reading a device such as `/dev/zero`
//! never ends. Every file the module reads is therefore opened with [`open_regular`]: opened
//! non-blocking, then checked through the descriptor (`fstat`), so a FIFO, socket, device or
//! directory is refused with a clear error and nothing swapped in between a check and the open
//! can get past it. [`true_path`] says which file a descriptor really designates, for callers that
//! must check what they opened rather than the name they were given.

use std::fs::{File, Metadata, OpenOptions};
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::FileError;

/// What kind of file METADATA describes, in words for an error message.
fn kind_name(metadata: &Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = metadata.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_block_device() || t.is_char_device() {
        "a device"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    }
}

/// Open PATH for reading if, and only if, it is a regular file (symbolic links followed).
///
/// The open never blocks (`O_NONBLOCK`, which has no effect on regular files) and the type is
/// checked on the descriptor, so there is no window between the check and the open.
pub fn open_regular(path: &Path) -> Result<(File, Metadata), FileError> {
    use std::os::unix::fs::OpenOptionsExt;
    let io = |source: std::io::Error| FileError::Io {
        path: path.to_path_buf(),
        message: source.to_string(),
    };
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
        .map_err(io)?;
    let metadata = file.metadata().map_err(io)?;
    if !metadata.is_file() {
        return Err(FileError::NotRegular {
            path: path.to_path_buf(),
            kind: kind_name(&metadata),
        });
    }
    Ok((file, metadata))
}

/// Read all of FILE (opened by [`open_regular`]), refusing more than MAX bytes.
pub fn read_to_end_limited(mut file: &File, path: &Path, max: u64) -> Result<Vec<u8>, FileError> {
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    if size > max {
        return Err(FileError::TooLarge {
            path: path.to_path_buf(),
            size,
            limit: max,
        });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    // The file may grow while it is read: read at most one byte past the limit to notice.
    file.by_ref()
        .take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| FileError::Io {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    if bytes.len() as u64 > max {
        return Err(FileError::TooLarge {
            path: path.to_path_buf(),
            size: bytes.len() as u64,
            limit: max,
        });
    }
    Ok(bytes)
}

/// The absolute name of the file FILE's descriptor designates, links resolved, as the kernel
/// knows it (`/proc/self/fd`). `None` where the system does not say.
pub fn true_path(file: &File) -> Option<PathBuf> {
    use std::os::unix::io::AsRawFd;
    let link = format!("/proc/self/fd/{}", file.as_raw_fd());
    let path = std::fs::read_link(link).ok()?;
    // A file deleted after it was opened reads back as "NAME (deleted)": not a usable name.
    if path.is_absolute() && !path.to_string_lossy().ends_with(" (deleted)") {
        Some(path)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn temp_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("agent-q-fsutil-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    #[test]
    fn a_regular_file_opens_and_reads() {
        let dir = temp_dir("regular");
        let path = dir.join("a.txt");
        std::fs::File::create(&path)
            .and_then(|mut f| f.write_all(b"hello"))
            .expect("write");
        let (file, meta) = open_regular(&path).expect("opens");
        assert_eq!(meta.len(), 5);
        assert_eq!(read_to_end_limited(&file, &path, 10).expect("reads"), b"hello");
        assert!(matches!(
            read_to_end_limited(&file, &path, 2),
            Err(FileError::TooLarge { .. })
        ));
        let truename = true_path(&file).expect("linux says");
        assert_eq!(truename, std::fs::canonicalize(&path).expect("canonical"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = temp_dir("fifo");
        let path = dir.join("pipe");
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("no NUL");
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let started = std::time::Instant::now();
        let err = open_regular(&path).expect_err("refused");
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        assert!(err.to_string().contains("a FIFO"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn directories_and_devices_are_refused() {
        let dir = temp_dir("dir");
        assert!(open_regular(&dir).expect_err("dir").to_string().contains("a directory"));
        assert!(open_regular(Path::new("/dev/zero"))
            .expect_err("device")
            .to_string()
            .contains("a device"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
