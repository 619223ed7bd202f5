//! The marker files of calls that wait for Emacs, and the agent's status line that reads them
//! (see [`agent_q_core::gate::waiting`]).
//!
//! The markers live in `agent-q-waiting/` beside the connection file: the hook and the status
//! line command of one agent name the same connection file.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use agent_q_core::gate::waiting::{marker_name, status_line, MAX_STATUS_INPUT_BYTES};
use agent_q_core::gate::Agent;

use crate::relay::resolve_connection_file;

/// The directory of the markers, beside the connection file the hook would use.
fn marker_dir(connection_file: Option<PathBuf>) -> Option<PathBuf> {
    let file = resolve_connection_file(connection_file).ok()?;
    Some(file.parent().unwrap_or(Path::new(".")).join("agent-q-waiting"))
}

/// A call's marker, there while it lives: dropping it removes the file.
pub struct Marker(Option<PathBuf>);

impl Marker {
    /// Leave the marker of this process, which waits for Emacs with a call of AGENT's SESSION.
    /// Nothing when the directory cannot be made: the marker only feeds a status line.
    pub fn new(connection_file: Option<PathBuf>, agent: Agent, session: &str) -> Marker {
        let Some(dir) = marker_dir(connection_file) else {
            return Marker(None);
        };
        if create_private_dir(&dir).is_err() {
            return Marker(None);
        }
        let path = dir.join(marker_name(agent, session, std::process::id()));
        Marker(fs::File::create(&path).ok().map(|_| path))
    }
}

impl Drop for Marker {
    fn drop(&mut self) {
        if let Some(path) = &self.0 {
            let _ = fs::remove_file(path);
        }
    }
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        other => other,
    }
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    fs::create_dir_all(dir)
}

/// Whether the process PID lives. Where there is no `/proc`, every marker's process is taken
/// as alive (a hook removes its marker when it ends; only a killed one leaves it behind).
fn alive(pid: u32) -> bool {
    let proc = Path::new("/proc");
    !proc.is_dir() || proc.join(pid.to_string()).exists()
}

/// AGENT's status line, for the agent's JSON on STDIN: what it prints (possibly empty).
pub fn run_status_line(connection_file: Option<PathBuf>, agent: Agent, stdin: impl Read) -> &'static str {
    let mut input = Vec::new();
    if stdin
        .take(MAX_STATUS_INPUT_BYTES as u64 + 1)
        .read_to_end(&mut input)
        .is_err()
    {
        return "";
    }
    let Some(dir) = marker_dir(connection_file) else {
        return "";
    };
    let names: Vec<String> = match fs::read_dir(&dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok())
            .take(10_000)
            .filter_map(|e| e.file_name().into_string().ok())
            .collect(),
        Err(_) => return "",
    };
    status_line(agent, &input, names.iter().map(String::as_str), alive)
}
