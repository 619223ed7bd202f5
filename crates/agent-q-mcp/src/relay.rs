//! The stdio relay behind the `agent-q-mcp` binary: for MCP clients that can only start a
//! command, it speaks the stdio transport (newline-delimited JSON-RPC) on its standard streams
//! and relays every message to the Streamable HTTP server of the running Emacs, and every
//! message of the server (responses, progress, list_changed) back.
//!
//! It finds the server in the connection file that `agent-q-mcp-start` writes (JSON with
//! `url`, `token` and `pid`), and refuses to start, with a message on stderr, when no Emacs is
//! serving: no file, a dead pid, a refused connection or a rejected token.
//!
//! The relay is a pump between two rmcp transports, the stdio server transport and the
//! Streamable HTTP client transport; it does not interpret messages, so the client's
//! `initialize` (and its `clientInfo`) reaches Emacs unchanged, while the HTTP transport handles
//! sessions, the protocol version header and the server's GET stream.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rmcp::model::{ClientJsonRpcMessage, ErrorData, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::{RoleClient, RoleServer};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, Transport};
use serde::Deserialize;
use tokio::task::JoinSet;

use crate::error::RelayError;
use agent_q_core::mcp::MAX_REQUEST_BODY_BYTES;

/// The environment variable that names the connection file.
pub const CONNECTION_FILE_ENV: &str = "AGENT_Q_MCP_CONNECTION_FILE";

/// The connection file's name in the Emacs user directory.
pub const CONNECTION_FILE_NAME: &str = "agent-q-mcp.json";

/// The largest connection file read (it holds three short fields).
const MAX_CONNECTION_FILE_BYTES: u64 = 64 * 1024;

/// What the connection file says.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Connection {
    /// The MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// The bearer token.
    pub token: String,
    /// The process id of the Emacs that serves.
    pub pid: i64,
}

/// The connection file to read: ARG (`--connection-file FILE`), else ENV
/// ([`CONNECTION_FILE_ENV`]), else `~/.emacs.d/agent-q-mcp.json`, or
/// `$XDG_CONFIG_HOME/emacs/agent-q-mcp.json` (default `~/.config/emacs`) when only that exists,
/// as Emacs itself chooses its user directory.
pub fn connection_file(arg: Option<PathBuf>, env: Option<PathBuf>, home: Option<PathBuf>) -> Option<PathBuf> {
    if let Some(path) = arg.or(env) {
        return Some(path);
    }
    let home = home?;
    let classic = home.join(".emacs.d").join(CONNECTION_FILE_NAME);
    if classic.exists() {
        return Some(classic);
    }
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .unwrap_or_else(|| home.join(".config"))
        .join("emacs")
        .join(CONNECTION_FILE_NAME);
    if xdg.exists() {
        Some(xdg)
    } else {
        Some(classic)
    }
}

/// The connection file to read given `--connection-file` ARG, as [`connection_file`] chooses
/// with this process's environment (`$AGENT_Q_MCP_CONNECTION_FILE`, `$HOME`).
pub fn resolve_connection_file(arg: Option<PathBuf>) -> Result<PathBuf, RelayError> {
    let env = std::env::var_os(CONNECTION_FILE_ENV)
        .filter(|value| !value.is_empty())
        .map(PathBuf::from);
    let home = std::env::var_os("HOME")
        .filter(|value| !value.is_empty())
        .map(PathBuf::from);
    connection_file(arg, env, home).ok_or_else(|| {
        RelayError::Usage(format!(
            "HOME is not set: name the connection file with --connection-file or ${CONNECTION_FILE_ENV}"
        ))
    })
}

/// Read and check the connection file at PATH.
pub fn read_connection(path: &Path) -> Result<Connection, RelayError> {
    let (file, metadata) = agent_q_core::fsutil::open_regular(path).map_err(|e| match e {
        agent_q_core::error::FileError::Io { .. } if !path.exists() => RelayError::NoConnectionFile(path.to_path_buf()),
        other => RelayError::BadConnectionFile {
            path: path.to_path_buf(),
            problem: other.to_string(),
        },
    })?;
    let bad = |problem: String| RelayError::BadConnectionFile {
        path: path.to_path_buf(),
        problem,
    };
    let bytes = agent_q_core::fsutil::read_to_end_limited(&file, path, MAX_CONNECTION_FILE_BYTES)
        .map_err(|e| bad(e.to_string()))?;
    check_private(&metadata).map_err(bad)?;
    let connection: Connection = serde_json::from_slice(&bytes).map_err(|e| bad(e.to_string()))?;
    check_loopback_url(&connection.url).map_err(|problem| bad(format!("url {}: {problem}", connection.url)))?;
    if connection.token.is_empty() || !connection.token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(bad("token is empty or not visible ASCII".into()));
    }
    if connection.pid <= 0 || connection.pid > i64::from(i32::MAX) {
        return Err(bad(format!("pid {} is not a process id", connection.pid)));
    }
    Ok(connection)
}

/// The connection file holds the token: it must be the user's own file, readable by nobody
/// else (mode 0600 or stricter), or another user could have written it to send the relay, and
/// the client's requests, elsewhere.
fn check_private(metadata: &std::fs::Metadata) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    if metadata.uid() != uid {
        return Err(format!(
            "it belongs to user id {}, not to this user ({uid})",
            metadata.uid()
        ));
    }
    let mode = metadata.mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "its mode is {mode:04o}: others may read or change it (it must be 0600)"
        ));
    }
    Ok(())
}

/// Check that URL is `http://` on a loopback host (127.0.0.0/8, `::1`, `localhost`), parsed as
/// a URL: user information, a foreign host or another scheme are refused.
pub fn check_loopback_url(url: &str) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("not a URL ({e})"))?;
    if parsed.scheme() != "http" {
        return Err(format!("scheme {} is not http", parsed.scheme()));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("it carries user information (user@host)".into());
    }
    let loopback = match parsed.host() {
        Some(::url::Host::Ipv4(address)) => address.is_loopback(),
        Some(::url::Host::Ipv6(address)) => address.is_loopback(),
        Some(::url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    };
    if !loopback {
        return Err(format!(
            "host {} is not a loopback address (127.0.0.0/8, ::1, localhost)",
            parsed.host_str().unwrap_or("(none)")
        ));
    }
    Ok(())
}

/// Check that process PID runs and belongs to this user: the Emacs that serves is the user's,
/// and a connection file naming someone else's process is not to be trusted.
pub fn check_process_owner(pid: i64) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    if !process_alive(pid) {
        return Err(format!(
            "the Emacs that wrote the connection file (pid {pid}) is not running"
        ));
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    match std::fs::metadata(format!("/proc/{pid}")) {
        Ok(metadata) if metadata.uid() == uid => Ok(()),
        Ok(metadata) => Err(format!(
            "process {pid} of the connection file belongs to user id {}, not to this user ({uid})",
            metadata.uid()
        )),
        // Without /proc, signal 0 answers: it succeeds only for one's own processes.
        Err(_) if !Path::new("/proc/self").exists() => {
            let Ok(pid) = i32::try_from(pid) else {
                return Err(format!("pid {pid} is not a process id"));
            };
            // SAFETY: kill with signal 0 only checks that the process exists and may be signalled.
            if unsafe { libc::kill(pid, 0) } == 0 {
                Ok(())
            } else {
                Err(format!("process {pid} of the connection file is not this user's"))
            }
        }
        Err(_) => Err(format!(
            "the Emacs that wrote the connection file (pid {pid}) is not running"
        )),
    }
}

/// Whether process PID exists (signal 0 checks without sending anything).
pub fn process_alive(pid: i64) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill with signal 0 only checks that the process exists and may be signalled.
    let result = unsafe { libc::kill(pid, 0) };
    // EPERM: it exists but belongs to someone else, which a connection file of ours should
    // not name; it is alive all the same, and the token check decides.
    result == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// The HTTP client for the server on 127.0.0.1: no proxy.
pub(crate) fn http_client() -> Result<reqwest::Client, RelayError> {
    // No proxy: the server is on the loopback interface, and a proxy must never see the token.
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .map_err(|e| RelayError::Http(e.to_string()))
}

/// Check that the server of CONNECTION answers and accepts its token, before relaying.
pub async fn check_server(connection: &Connection) -> Result<(), RelayError> {
    check_process_owner(connection.pid).map_err(RelayError::NotServing)?;
    // A GET without a session: the server answers 400 (session required) when the token is
    // right, and 401 when it is not.
    let response = http_client()?
        .get(&connection.url)
        .bearer_auth(&connection.token)
        .header("accept", "text/event-stream")
        .send()
        .await
        .map_err(|e| RelayError::NotServing(format!("nothing answers at {} ({})", connection.url, error_chain(&e))))?;
    match response.status().as_u16() {
        401 => Err(RelayError::Unauthorized(connection.url.clone())),
        403 | 404 => Err(RelayError::NotServing(format!(
            "{} answered {}: it is not agent-q's MCP server",
            connection.url,
            response.status()
        ))),
        _ => Ok(()),
    }
}

/// ERROR and its causes, joined by colons.
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Relay between the MCP client on READ / WRITE (the stdio transport) and the server of
/// CONNECTION, until the client closes its side. Fails when the server goes away.
pub async fn relay<R, W>(connection: &Connection, read: R, write: W) -> Result<(), RelayError>
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let mut client_side: AsyncRwTransport<RoleServer, R, W> =
        AsyncRwTransport::new_server(read, write).with_max_line_length(MAX_REQUEST_BODY_BYTES);
    let mut config = StreamableHttpClientTransportConfig::with_uri(Arc::<str>::from(connection.url.as_str()))
        .auth_header(&connection.token);
    config.max_json_response_size = MAX_REQUEST_BODY_BYTES;
    config.max_sse_event_size = MAX_REQUEST_BODY_BYTES;
    let mut server_side = StreamableHttpClientTransport::with_client(http_client()?, config);

    // Messages to the server are sent concurrently (a tools/call may wait minutes for the user),
    // as rmcp's own service loop sends them; messages to the client are written in order.
    let mut upstream: JoinSet<Option<ServerJsonRpcMessage>> = JoinSet::new();
    let outcome = loop {
        let to_client = tokio::select! {
            message = client_side.receive() => {
                let Some(message) = message else { break Ok(()) };
                let failure_reply = error_reply_for(&message);
                let send = Transport::<RoleClient>::send(&mut server_side, message);
                upstream.spawn(async move {
                    match send.await {
                        Ok(()) => None,
                        Err(error) => {
                            let problem = error_chain(&error);
                            eprintln!("agent-q-mcp: could not relay a message to Emacs: {problem}");
                            failure_reply.map(|reply| reply(problem))
                        }
                    }
                });
                continue;
            }
            message = Transport::<RoleClient>::receive(&mut server_side) => match message {
                Some(message) => message,
                None => break Err(RelayError::NotServing("the connection to Emacs closed".into())),
            },
            Some(Ok(Some(reply))) = upstream.join_next(), if !upstream.is_empty() => reply,
        };
        if let Err(error) = client_side.send(to_client).await {
            break Err(RelayError::Io(format!("cannot write to the client: {error}")));
        }
    };
    let _ = Transport::<RoleClient>::close(&mut server_side).await;
    outcome
}

type ErrorReply = Box<dyn FnOnce(String) -> ServerJsonRpcMessage + Send>;

/// For a request, how to answer it with a JSON-RPC error if it cannot be relayed, so that the
/// client does not wait for ever.
fn error_reply_for(message: &ClientJsonRpcMessage) -> Option<ErrorReply> {
    match message {
        JsonRpcMessage::Request(request) => {
            let id = request.id.clone();
            Some(Box::new(move |problem: String| {
                ServerJsonRpcMessage::error(
                    ErrorData::internal_error(format!("agent-q-mcp could not reach Emacs: {problem}"), None),
                    Some(id),
                )
            }))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;

    fn write_temp(name: &str, text: &str) -> PathBuf {
        // One directory per file: the tests run in parallel and remove what they wrote.
        let dir = std::env::temp_dir().join(format!("agent-q-relay-test-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::File::create(&path)
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        path
    }

    fn problem(path: &Path) -> String {
        read_connection(path).unwrap_err().to_string()
    }

    #[test]
    fn only_a_loopback_http_url_is_accepted() {
        for url in [
            "http://127.0.0.1:4242/mcp",
            "http://127.1.2.3:4242/mcp",
            "http://localhost:4242/mcp",
            "http://LOCALHOST:1/mcp",
            "http://[::1]:4242/mcp",
        ] {
            assert_eq!(check_loopback_url(url), Ok(()), "{url}");
        }
        for (url, why) in [
            ("http://127.0.0.1:1@example.invalid/mcp", "user information"),
            ("http://user@127.0.0.1:1/mcp", "user information"),
            ("http://example.invalid/mcp", "not a loopback"),
            ("http://127.0.0.1.example.invalid:1/mcp", "not a loopback"),
            ("http://localhost.example.invalid:1/mcp", "not a loopback"),
            ("http://0.0.0.0:1/mcp", "not a loopback"),
            ("http://[::2]:1/mcp", "not a loopback"),
            ("http://10.0.0.1:1/mcp", "not a loopback"),
            ("https://127.0.0.1:1/mcp", "scheme https"),
            ("file:///tmp/x", "scheme file"),
            ("127.0.0.1:1/mcp", "not a URL"),
            ("not a url", "not a URL"),
        ] {
            let refused = check_loopback_url(url).expect_err(url);
            assert!(refused.contains(why), "{url}: {refused}");
        }
        let tricked = write_temp(
            "userinfo.json",
            r#"{"url": "http://127.0.0.1:1@example.invalid/mcp", "token": "abc", "pid": 42}"#,
        );
        assert!(problem(&tricked).contains("user information"), "{}", problem(&tricked));
    }

    #[test]
    fn a_connection_file_others_can_read_or_write_is_refused() {
        let text = r#"{"url": "http://127.0.0.1:4242/mcp", "token": "abc", "pid": 42}"#;
        for mode in [0o644, 0o640, 0o604, 0o660, 0o602, 0o620, 0o666] {
            let path = write_temp(&format!("mode{mode:o}.json"), text);
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let refused = problem(&path);
            assert!(
                refused.contains("mode") && refused.contains("0600"),
                "{mode:o}: {refused}"
            );
        }
        let strict = write_temp("mode400.json", text);
        std::fs::set_permissions(&strict, std::fs::Permissions::from_mode(0o400)).unwrap();
        assert!(read_connection(&strict).is_ok());
        let directory = strict.parent().unwrap();
        assert!(matches!(
            read_connection(directory),
            Err(RelayError::BadConnectionFile { .. })
        ));
    }

    #[test]
    fn a_connection_file_of_another_user_is_refused() {
        // SAFETY: geteuid cannot fail.
        let path = if unsafe { libc::geteuid() } == 0 {
            let path = write_temp(
                "foreign.json",
                r#"{"url": "http://127.0.0.1:4242/mcp", "token": "abc", "pid": 42}"#,
            );
            std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
            path
        } else {
            // A file root owns; the owner is checked before the mode.
            PathBuf::from("/etc/hostname")
        };
        let refused = problem(&path);
        assert!(refused.contains("belongs to user id"), "{refused}");
    }

    #[test]
    fn a_process_of_another_user_is_not_the_server() {
        assert_eq!(check_process_owner(i64::from(std::process::id())), Ok(()));
        // SAFETY: geteuid cannot fail.
        let mut foreign = if unsafe { libc::geteuid() } == 0 {
            use std::os::unix::process::CommandExt;
            Some(
                std::process::Command::new("sleep")
                    .arg("20")
                    .uid(65534)
                    .gid(65534)
                    .spawn()
                    .unwrap(),
            )
        } else {
            None
        };
        let pid = foreign.as_ref().map_or(1, |child| i64::from(child.id()));
        let refused = check_process_owner(pid);
        if let Some(child) = foreign.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
        assert!(
            refused.as_ref().is_err_and(|e| e.contains("belongs to user id")),
            "{refused:?}"
        );
        let dead = check_process_owner(i64::from(i32::MAX)).unwrap_err();
        assert!(dead.contains("not running"), "{dead}");
    }

    #[test]
    fn the_connection_file_is_read_and_checked() {
        let good = write_temp(
            "good.json",
            r#"{"url": "http://127.0.0.1:4242/mcp", "token": "abc", "pid": 42}"#,
        );
        assert_eq!(
            read_connection(&good).unwrap(),
            Connection {
                url: "http://127.0.0.1:4242/mcp".into(),
                token: "abc".into(),
                pid: 42
            }
        );
        let remote = write_temp(
            "remote.json",
            r#"{"url": "http://example.com/mcp", "token": "abc", "pid": 42}"#,
        );
        assert!(read_connection(&remote)
            .unwrap_err()
            .to_string()
            .contains("not a loopback address"));
        let pid = write_temp(
            "pid.json",
            r#"{"url": "http://127.0.0.1:1/mcp", "token": "abc", "pid": 0}"#,
        );
        assert!(read_connection(&pid).unwrap_err().to_string().contains("pid 0"));
        let garbage = write_temp("garbage.json", "{not json");
        assert!(matches!(
            read_connection(&garbage),
            Err(RelayError::BadConnectionFile { .. })
        ));
        let missing = good.with_file_name("missing.json");
        assert!(matches!(
            read_connection(&missing),
            Err(RelayError::NoConnectionFile(_))
        ));
        let _ = std::fs::remove_dir_all(good.parent().unwrap());
    }

    #[test]
    fn the_connection_file_argument_wins_over_the_environment_and_the_default() {
        let arg = Some(PathBuf::from("/a.json"));
        let env = Some(PathBuf::from("/b.json"));
        let home = Some(PathBuf::from("/nonexistent-home"));
        assert_eq!(
            connection_file(arg, env.clone(), home.clone()),
            Some(PathBuf::from("/a.json"))
        );
        assert_eq!(connection_file(None, env, home.clone()), Some(PathBuf::from("/b.json")));
        assert_eq!(
            connection_file(None, None, home),
            Some(PathBuf::from("/nonexistent-home/.emacs.d/agent-q-mcp.json"))
        );
        assert_eq!(connection_file(None, None, None), None);
    }

    #[test]
    fn liveness_of_processes() {
        assert!(process_alive(i64::from(std::process::id())));
        assert!(!process_alive(0));
        assert!(!process_alive(-1));
        assert!(!process_alive(i64::from(i32::MAX)));
    }
}
