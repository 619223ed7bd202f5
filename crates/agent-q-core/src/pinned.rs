//! Writing a file exactly where it was checked.
//!
//! A write tool's guard (Lisp) resolves the target once, checks that name and shows it to the
//! user. Writing by name afterwards would resolve it again, and a directory of the path swapped
//! for a symbolic link meanwhile (by another process, while the prompt was shown) would send the
//! content elsewhere (`notes/tmp` -> `~/.ssh`). So the guard pins the deepest existing directory
//! of the resolved target ([`pin_directory`]: its device and inode, reached without following a
//! link), and [`write_pinned`] reaches it again the same way, from `/`, one component at a time
//! (`openat` with `O_NOFOLLOW`), compares what it reached with the pin, creates the missing
//! directories below it (`mkdirat`, each opened without following a link), and writes inside
//! that directory's descriptor only: a temporary file created with `O_EXCL | O_NOFOLLOW`,
//! renamed over the target with `renameat` in the same directory. The target itself must be a
//! regular file with one link, or absent. Anything else is an error and nothing is written.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use crate::error::WriteError;

/// A directory as it was checked: its absolute name (no link in it) and its identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    /// The directory's absolute name, every component a real directory when it was pinned.
    pub dir: PathBuf,
    /// Its device number.
    pub dev: u64,
    /// Its inode number.
    pub ino: u64,
}

/// What [`write_pinned`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The file written (the pinned directory, the created ones, the name).
    pub path: PathBuf,
    /// The directories it created, outermost first.
    pub created: Vec<PathBuf>,
    /// Whether a file of that name existed (and was replaced or rewritten).
    pub existed: bool,
    /// Whether it was rewritten in place rather than replaced.
    pub in_place: bool,
    /// Its size after writing.
    pub size: u64,
}

/// How [`write_pinned`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A temporary file in the same directory, renamed over the target (atomic).
    Replace,
    /// The existing file truncated and rewritten (for a directory that forbids creating files).
    InPlace,
}

/// The most components a pinned name may have.
const MAX_COMPONENTS: usize = 256;

fn c_name(name: &OsStr, path: &Path) -> Result<CString, WriteError> {
    CString::new(name.as_bytes()).map_err(|_| WriteError::BadName {
        path: path.to_path_buf(),
        problem: "it contains a NUL byte".into(),
    })
}

fn last_os_error(path: &Path) -> WriteError {
    WriteError::Io {
        path: path.to_path_buf(),
        message: std::io::Error::last_os_error().to_string(),
    }
}

fn fstat(fd: &OwnedFd, path: &Path) -> Result<libc::stat, WriteError> {
    // SAFETY: an all-zero `stat` is a valid value; `fd` is an open descriptor.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(last_os_error(path));
    }
    Ok(st)
}

fn is_kind(st: &libc::stat, kind: libc::mode_t) -> bool {
    st.st_mode & libc::S_IFMT == kind
}

fn kind_name(st: &libc::stat) -> &'static str {
    match st.st_mode & libc::S_IFMT {
        libc::S_IFDIR => "a directory",
        libc::S_IFLNK => "a symbolic link",
        libc::S_IFIFO => "a FIFO (named pipe)",
        libc::S_IFSOCK => "a socket",
        libc::S_IFCHR | libc::S_IFBLK => "a device",
        _ => "a special file",
    }
}

/// Open the directory NAME inside DIR (or `/` when DIR is `None`) without following a link.
/// `Ok(None)` when it does not exist.
fn open_dir_at(dir: Option<&OwnedFd>, name: &CString, path: &Path) -> Result<Option<OwnedFd>, WriteError> {
    let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: NAME is NUL-terminated; DIR, when given, is an open descriptor.
    let fd = unsafe {
        match dir {
            Some(d) => libc::openat(d.as_raw_fd(), name.as_ptr(), flags),
            None => libc::open(name.as_ptr(), flags),
        }
    };
    if fd < 0 {
        let err = std::io::Error::last_os_error();
        return match err.raw_os_error() {
            Some(libc::ENOENT) => Ok(None),
            Some(libc::ELOOP) | Some(libc::ENOTDIR) => Err(WriteError::Changed {
                path: path.to_path_buf(),
                what: "it is no longer a directory (a symbolic link or another file is there now)".into(),
            }),
            _ => Err(WriteError::Io {
                path: path.to_path_buf(),
                message: err.to_string(),
            }),
        };
    }
    // SAFETY: FD was just opened and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // With O_PATH | O_NOFOLLOW the kernel may hand back a descriptor of the link itself.
    let st = fstat(&fd, path)?;
    if !is_kind(&st, libc::S_IFDIR) {
        return Err(WriteError::Changed {
            path: path.to_path_buf(),
            what: format!("it is no longer a directory (it is {} now)", kind_name(&st)),
        });
    }
    Ok(Some(fd))
}

/// The normal components of the absolute DIR, or an error for a relative one or one with `.`
/// or `..` (which would make the walk follow something other than the checked name).
fn components(dir: &Path) -> Result<Vec<&OsStr>, WriteError> {
    let bad = |problem: &str| WriteError::BadName {
        path: dir.to_path_buf(),
        problem: problem.into(),
    };
    let mut parts = dir.components();
    if parts.next() != Some(Component::RootDir) {
        return Err(bad("it is not an absolute file name"));
    }
    let mut out = Vec::new();
    for c in parts {
        match c {
            Component::Normal(name) => out.push(name),
            _ => return Err(bad("it has a . or .. component")),
        }
        if out.len() > MAX_COMPONENTS {
            return Err(bad("it has too many components"));
        }
    }
    Ok(out)
}

/// Walk from `/` to DIR, following no link. `Ok(None)` when a component does not exist.
fn walk(dir: &Path) -> Result<Option<OwnedFd>, WriteError> {
    let root = c_name(OsStr::new("/"), dir)?;
    let Some(mut fd) = open_dir_at(None, &root, dir)? else {
        return Ok(None);
    };
    let mut reached = PathBuf::from("/");
    for name in components(dir)? {
        reached.push(name);
        match open_dir_at(Some(&fd), &c_name(name, dir)?, &reached)? {
            Some(next) => fd = next,
            None => return Ok(None),
        }
    }
    Ok(Some(fd))
}

/// Pin the existing directory DIR (absolute, no link in it): its device and inode, reached from
/// `/` without following a link. A link anywhere in DIR is an error: resolve it first.
pub fn pin_directory(dir: &Path) -> Result<Pin, WriteError> {
    let fd = walk(dir)?.ok_or_else(|| WriteError::Io {
        path: dir.to_path_buf(),
        message: "No such directory".into(),
    })?;
    let st = fstat(&fd, dir)?;
    Ok(Pin {
        dir: dir.to_path_buf(),
        dev: st.st_dev,
        ino: st.st_ino,
    })
}

/// Reach PIN's directory again and check that it is the one pinned.
fn reach(pin: &Pin) -> Result<OwnedFd, WriteError> {
    let changed = |what: &str| WriteError::Changed {
        path: pin.dir.clone(),
        what: what.into(),
    };
    let fd = walk(&pin.dir)?.ok_or_else(|| changed("it no longer exists"))?;
    let st = fstat(&fd, &pin.dir)?;
    if st.st_dev != pin.dev || st.st_ino != pin.ino {
        return Err(changed("it is another directory now (it was replaced)"));
    }
    Ok(fd)
}

/// What is at NAME in DIR, links not followed: `None` when nothing.
fn stat_at(dir: &OwnedFd, name: &CString, path: &Path) -> Result<Option<libc::stat>, WriteError> {
    // SAFETY: an all-zero `stat` is valid; NAME is NUL-terminated; DIR is open.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::fstatat(dir.as_raw_fd(), name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
    if rc == 0 {
        return Ok(Some(st));
    }
    let err = std::io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::ENOENT) {
        Ok(None)
    } else {
        Err(WriteError::Io {
            path: path.to_path_buf(),
            message: err.to_string(),
        })
    }
}

/// Check that the existing ST at PATH may be written: a regular file with one link.
fn check_target(st: &libc::stat, path: &Path) -> Result<(), WriteError> {
    if is_kind(st, libc::S_IFLNK) {
        return Err(WriteError::Changed {
            path: path.to_path_buf(),
            what: "it is a symbolic link now (the file checked was not)".into(),
        });
    }
    if !is_kind(st, libc::S_IFREG) {
        return Err(WriteError::NotRegular {
            path: path.to_path_buf(),
            kind: kind_name(st),
        });
    }
    if st.st_nlink > 1 {
        // `nlink_t` is narrower than 64 bits on some targets.
        #[allow(clippy::unnecessary_cast)]
        let links = st.st_nlink as u64;
        return Err(WriteError::HardLinks {
            path: path.to_path_buf(),
            links,
        });
    }
    Ok(())
}

fn openat_raw(dir: &OwnedFd, name: &CString, flags: libc::c_int, mode: u32) -> std::io::Result<File> {
    // SAFETY: NAME is NUL-terminated; DIR is open; the mode is passed as the variadic argument.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags, mode as libc::c_uint) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: FD was just opened and is owned by nobody else.
    Ok(unsafe { File::from_raw_fd(fd) })
}

fn open_error(err: std::io::Error, path: &Path) -> WriteError {
    if err.raw_os_error() == Some(libc::ELOOP) {
        WriteError::Changed {
            path: path.to_path_buf(),
            what: "it is a symbolic link now (the file checked was not)".into(),
        }
    } else {
        WriteError::Io {
            path: path.to_path_buf(),
            message: err.to_string(),
        }
    }
}

fn temp_name() -> String {
    let mut bytes = [0u8; 8];
    let _ = getrandom::fill(&mut bytes);
    let suffix: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(".agent-q-write-{}-{suffix}", std::process::id())
}

/// Write BYTES to PIN's directory / REST, where REST is the missing directories below it (created
/// with mode 0777 less the umask) and, last, the file's name; the file gets MODE. Nothing is
/// written when PIN's directory is not the one pinned, when a component of REST or the target
/// is a symbolic link, or when the target is not a regular file with a single link.
pub fn write_pinned(pin: &Pin, rest: &[String], bytes: &[u8], mode: u32, how: Mode) -> Result<Written, WriteError> {
    let Some((name, dirs)) = rest.split_last() else {
        return Err(WriteError::BadName {
            path: pin.dir.clone(),
            problem: "no file name was given".into(),
        });
    };
    let mut path = pin.dir.clone();
    for part in rest {
        if part.is_empty() || part == "." || part == ".." || part.contains('/') || rest.len() > MAX_COMPONENTS {
            return Err(WriteError::BadName {
                path: pin.dir.join(part),
                problem: "each name below the pinned directory must be one plain component".into(),
            });
        }
    }
    let mut dir = reach(pin)?;
    let mut created = Vec::new();
    for part in dirs {
        path.push(part);
        let c = c_name(OsStr::new(part), &path)?;
        // SAFETY: C is NUL-terminated; DIR is open.
        let made = unsafe { libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), 0o777) } == 0;
        if !made && std::io::Error::last_os_error().raw_os_error() != Some(libc::EEXIST) {
            return Err(last_os_error(&path));
        }
        if made {
            created.push(path.clone());
        }
        dir = open_dir_at(Some(&dir), &c, &path)?.ok_or_else(|| WriteError::Changed {
            path: path.clone(),
            what: "it disappeared while it was being created".into(),
        })?;
    }
    path.push(name);
    let c = c_name(OsStr::new(name), &path)?;
    let existing = stat_at(&dir, &c, &path)?;
    if let Some(st) = &existing {
        check_target(st, &path)?;
    }
    let io = |e: std::io::Error| WriteError::Io {
        path: path.clone(),
        message: e.to_string(),
    };
    let size = match how {
        Mode::InPlace => {
            if existing.is_none() {
                return Err(WriteError::Io {
                    path: path.clone(),
                    message: "No such file (writing in place never creates one)".into(),
                });
            }
            let flags = libc::O_WRONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
            let mut file = openat_raw(&dir, &c, flags, 0).map_err(|e| open_error(e, &path))?;
            // SAFETY: an all-zero `stat` is valid; the file is open.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            if unsafe { libc::fstat(file.as_raw_fd(), &mut st) } != 0 {
                return Err(last_os_error(&path));
            }
            check_target(&st, &path)?;
            file.set_len(0).map_err(io)?;
            file.write_all(bytes).map_err(io)?;
            file.sync_all().map_err(io)?;
            bytes.len() as u64
        }
        Mode::Replace => {
            let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
            let mut attempt = 0;
            let (temp, mut file) = loop {
                let temp = c_name(OsStr::new(&temp_name()), &path)?;
                match openat_raw(&dir, &temp, flags, 0o600) {
                    Ok(f) => break (temp, f),
                    Err(e) if attempt < 16 && e.raw_os_error() == Some(libc::EEXIST) => attempt += 1,
                    Err(e) => return Err(open_error(e, &path)),
                }
            };
            let unlink = |dir: &OwnedFd| {
                // SAFETY: TEMP is NUL-terminated; DIR is open.
                unsafe { libc::unlinkat(dir.as_raw_fd(), temp.as_ptr(), 0) };
            };
            // SAFETY: the file is open.
            let written = file
                .write_all(bytes)
                .and_then(|()| {
                    if unsafe { libc::fchmod(file.as_raw_fd(), (mode & 0o7777) as libc::mode_t) } == 0 {
                        Ok(())
                    } else {
                        Err(std::io::Error::last_os_error())
                    }
                })
                .and_then(|()| file.sync_all());
            if let Err(e) = written {
                unlink(&dir);
                return Err(io(e));
            }
            drop(file);
            // SAFETY: both names are NUL-terminated; DIR is open. A link put at NAME meanwhile is
            // replaced itself: rename never follows it.
            if unsafe { libc::renameat(dir.as_raw_fd(), temp.as_ptr(), dir.as_raw_fd(), c.as_ptr()) } != 0 {
                let e = last_os_error(&path);
                unlink(&dir);
                return Err(e);
            }
            bytes.len() as u64
        }
    };
    Ok(Written {
        path,
        created,
        existed: existing.is_some(),
        in_place: how == Mode::InPlace,
        size,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn temp_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("agent-q-pinned-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        std::fs::canonicalize(&dir).expect("canonical")
    }

    fn names(parts: &[&str]) -> Vec<String> {
        parts.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn writes_where_pinned_and_creates_missing_directories() {
        let dir = temp_dir("plain");
        let pin = pin_directory(&dir).expect("pins");
        let w = write_pinned(&pin, &names(&["a", "b", "f.txt"]), b"hello", 0o640, Mode::Replace).expect("writes");
        assert_eq!(std::fs::read(dir.join("a/b/f.txt")).expect("read"), b"hello");
        assert_eq!(w.created, vec![dir.join("a"), dir.join("a/b")]);
        assert!(!w.existed);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.join("a/b/f.txt"))
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o640);
        let w = write_pinned(&pin, &names(&["a", "b", "f.txt"]), b"again", 0o600, Mode::Replace).expect("writes");
        assert!(w.existed && w.created.is_empty());
        assert_eq!(std::fs::read(dir.join("a/b/f.txt")).expect("read"), b"again");
        let w = write_pinned(&pin, &names(&["a", "b", "f.txt"]), b"in place", 0o600, Mode::InPlace).expect("writes");
        assert!(w.in_place);
        assert_eq!(std::fs::read(dir.join("a/b/f.txt")).expect("read"), b"in place");
        // No temporary file is left behind.
        let left: Vec<_> = std::fs::read_dir(dir.join("a/b")).expect("list").collect();
        assert_eq!(left.len(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_link_swapped_into_a_middle_component_is_refused() {
        let dir = temp_dir("middle");
        let outside = temp_dir("middle-outside");
        std::fs::create_dir_all(dir.join("notes/tmp")).expect("dirs");
        let pin = pin_directory(&dir.join("notes/tmp")).expect("pins");
        // notes becomes a link to a directory that has a tmp of its own.
        std::fs::create_dir_all(outside.join("tmp")).expect("dirs");
        std::fs::rename(dir.join("notes"), dir.join("notes-old")).expect("move");
        symlink(&outside, dir.join("notes")).expect("link");
        let err = write_pinned(&pin, &names(&["config"]), b"x", 0o600, Mode::Replace).expect_err("refused");
        assert!(matches!(err, WriteError::Changed { .. }), "{err}");
        assert!(err.to_string().contains("nothing was written"), "{err}");
        assert!(!outside.join("tmp/config").exists());
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_dir_all(&outside);
    }

    #[test]
    fn a_link_swapped_into_the_last_directory_is_refused() {
        let dir = temp_dir("last");
        let outside = temp_dir("last-outside");
        std::fs::create_dir_all(dir.join("notes/tmp")).expect("dirs");
        let pin = pin_directory(&dir.join("notes/tmp")).expect("pins");
        std::fs::remove_dir(dir.join("notes/tmp")).expect("rmdir");
        symlink(&outside, dir.join("notes/tmp")).expect("link");
        let err = write_pinned(&pin, &names(&["config"]), b"x", 0o600, Mode::Replace).expect_err("refused");
        assert!(matches!(err, WriteError::Changed { .. }), "{err}");
        assert!(!outside.join("config").exists());
        // The same when a missing directory below the pin is a link by the time it is created.
        std::fs::remove_file(dir.join("notes/tmp")).expect("unlink");
        let pin = pin_directory(&dir.join("notes")).expect("pins");
        symlink(&outside, dir.join("notes/tmp")).expect("link");
        let err = write_pinned(&pin, &names(&["tmp", "config"]), b"x", 0o600, Mode::Replace).expect_err("refused");
        assert!(matches!(err, WriteError::Changed { .. }), "{err}");
        assert!(!outside.join("config").exists());
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_dir_all(&outside);
    }

    #[test]
    fn a_target_that_is_a_link_is_refused() {
        let dir = temp_dir("target");
        let outside = temp_dir("target-outside");
        std::fs::write(outside.join("config"), b"secret").expect("write");
        symlink(outside.join("config"), dir.join("config")).expect("link");
        let pin = pin_directory(&dir).expect("pins");
        for how in [Mode::Replace, Mode::InPlace] {
            let err = write_pinned(&pin, &names(&["config"]), b"x", 0o600, how).expect_err("refused");
            assert!(matches!(err, WriteError::Changed { .. }), "{err}");
        }
        assert_eq!(std::fs::read(outside.join("config")).expect("read"), b"secret");
        // A hard link is refused too, and a directory where the file was.
        std::fs::remove_file(dir.join("config")).expect("unlink");
        std::fs::hard_link(outside.join("config"), dir.join("config")).expect("link");
        let err = write_pinned(&pin, &names(&["config"]), b"x", 0o600, Mode::Replace).expect_err("refused");
        assert!(matches!(err, WriteError::HardLinks { links: 2, .. }), "{err}");
        std::fs::remove_file(dir.join("config")).expect("unlink");
        std::fs::create_dir(dir.join("config")).expect("mkdir");
        let err = write_pinned(&pin, &names(&["config"]), b"x", 0o600, Mode::Replace).expect_err("refused");
        assert!(matches!(err, WriteError::NotRegular { .. }), "{err}");
        assert_eq!(std::fs::read(outside.join("config")).expect("read"), b"secret");
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_dir_all(&outside);
    }

    #[test]
    fn a_replaced_directory_is_refused() {
        let dir = temp_dir("replaced");
        std::fs::create_dir_all(dir.join("notes")).expect("dirs");
        let pin = pin_directory(&dir.join("notes")).expect("pins");
        std::fs::rename(dir.join("notes"), dir.join("notes-old")).expect("move");
        std::fs::create_dir(dir.join("notes")).expect("mkdir");
        let err = write_pinned(&pin, &names(&["f"]), b"x", 0o600, Mode::Replace).expect_err("refused");
        assert!(err.to_string().contains("replaced"), "{err}");
        assert!(!dir.join("notes/f").exists() && !dir.join("notes-old/f").exists());
        std::fs::remove_dir(dir.join("notes")).expect("rmdir");
        let err = write_pinned(&pin, &names(&["f"]), b"x", 0o600, Mode::Replace).expect_err("refused");
        assert!(err.to_string().contains("no longer exists"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn names_that_could_leave_the_directory_are_refused() {
        let dir = temp_dir("names");
        let pin = pin_directory(&dir).expect("pins");
        for rest in [vec![".."], vec!["a/b"], vec![""], vec![], vec!["x", "."]] {
            let err = write_pinned(&pin, &names(&rest), b"x", 0o600, Mode::Replace).expect_err("refused");
            assert!(matches!(err, WriteError::BadName { .. }), "{rest:?}: {err}");
        }
        assert!(matches!(
            pin_directory(Path::new("relative/dir")),
            Err(WriteError::BadName { .. })
        ));
        assert!(matches!(
            pin_directory(&dir.join("../x")),
            Err(WriteError::BadName { .. })
        ));
        // A pin through a link is refused: the guard pins resolved names only.
        symlink(&dir, dir.join("self")).expect("link");
        assert!(matches!(
            pin_directory(&dir.join("self")),
            Err(WriteError::Changed { .. })
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
