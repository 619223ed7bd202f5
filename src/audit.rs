//! `agent-q--core-audit-append`: one record appended to the audit file.
//!
//! `write-region` costs a call far more than the record: a lock file made and removed (symlink,
//! readlink, unlink), the text encoded, the umask changed twice, and in an interactive Emacs an
//! `fsync` that waits for the disk, all on Emacs's main thread. Here the record is one `write`
//! to a file opened for appending (created readable by the user only), so records from several
//! Emacs sessions never interleave within a line; it is on disk for every process at once and
//! survives Emacs crashing. What `fsync` adds, surviving the machine's crash, is done by a thread
//! of its own, a moment later, once for a burst of records: the main thread never waits for the
//! disk.

use std::fs::{self, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Sender};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use emacs::{defun, Env, Result, Value};

use super::args;
use super::errors::{self, Kind};

/// How long the syncing thread gathers records before it syncs their files.
const SYNC_DELAY: Duration = Duration::from_millis(100);

fn open(path: &Path) -> std::io::Result<fs::File> {
    let mut options = OpenOptions::new();
    options.append(true).create(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

/// The channel to the thread that syncs written audit files to the disk.
fn syncer() -> &'static Mutex<Option<Sender<PathBuf>>> {
    static SYNCER: OnceLock<Mutex<Option<Sender<PathBuf>>>> = OnceLock::new();
    SYNCER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<PathBuf>();
        let spawned = std::thread::Builder::new()
            .name("agent-q-audit-sync".into())
            .spawn(move || {
                while let Ok(first) = rx.recv() {
                    let mut paths = vec![first];
                    std::thread::sleep(SYNC_DELAY);
                    paths.extend(rx.try_iter());
                    paths.sort();
                    paths.dedup();
                    for path in paths {
                        // fsync through any descriptor flushes the file's data.
                        if let Ok(file) = OpenOptions::new().append(true).open(&path) {
                            let _ = file.sync_data();
                        }
                    }
                }
            });
        Mutex::new(spawned.ok().map(|_| tx))
    })
}

/// Append LINE and a newline to FILE, an absolute local file name, in one write. FILE is
/// created readable by the user only (mode 0600), with its directory if it is missing.
/// Signals `agent-q-error` when it cannot be written.
#[defun]
fn audit_append<'e>(env: &'e Env, file: Value<'e>, line: Value<'e>) -> Result<()> {
    let file = args::string(env, file, "FILE", args::MAX_NAME_BYTES)?;
    let mut record = args::string(env, line, "LINE", args::MAX_TEXT_BYTES)?;
    record.push('\n');
    let path = PathBuf::from(&file);
    let written = match open(&path) {
        Err(e) if e.kind() == ErrorKind::NotFound => match path.parent() {
            Some(dir) => fs::create_dir_all(dir).and_then(|()| open(&path)),
            None => Err(e),
        },
        other => other,
    }
    .and_then(|mut f| f.write_all(record.as_bytes()));
    if let Err(e) = written {
        return errors::signal(env, Kind::Generic, format!("{file}: {e}"));
    }
    if let Some(tx) = syncer().lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
        let _ = tx.send(path);
    }
    Ok(())
}
