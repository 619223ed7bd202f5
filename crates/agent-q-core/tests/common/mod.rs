//! Shared by the MCP integration tests: a server on 127.0.0.1 with a hub, a driver thread that
//! plays Emacs, an rmcp client, and a raw HTTP/1.1 client for status codes.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use agent_q_core::gate::{GateAnswer, GateRequest, ToolKind};
use agent_q_core::mcp::{make_token, CallAnswer, Config, Event, Hub, RunningServer, Server, ToolInfo};
use agent_q_core::spec::SafetyLevel;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProgressNotificationParam};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{json, Map, Value};

/// How long a test waits for something that should happen at once.
pub const PATIENCE: Duration = Duration::from_secs(10);

pub fn tool(name: &str, level: SafetyLevel) -> ToolInfo {
    let schema = json!({
        "type": "object",
        "properties": {"path": {"type": "string", "description": "The file"}},
        "required": ["path"]
    });
    ToolInfo {
        name: name.to_string(),
        title: None,
        description: format!("The {name} tool"),
        input_schema: schema.as_object().unwrap().clone(),
        safety_level: level,
        hints: Default::default(),
    }
}

pub fn sample_tools() -> Vec<ToolInfo> {
    vec![
        tool("read_file", SafetyLevel::Safe),
        tool("insert_text", SafetyLevel::Cautious),
        tool("write_file", SafetyLevel::Dangerous),
    ]
}

/// A running server, its hub, and the channel its wake callback signals.
pub struct Fixture {
    pub hub: Arc<Hub>,
    pub server: RunningServer,
    pub token: String,
    pub wakes: Receiver<()>,
}

pub fn start_with_interval(progress_interval: Duration) -> Fixture {
    let (wake_tx, wakes) = mpsc::channel();
    let hub = Hub::new(Box::new(move || {
        let _ = wake_tx.send(());
    }));
    hub.set_tools(sample_tools(), SafetyLevel::Dangerous);
    let token = make_token().unwrap();
    let mut config = Config::new(token.clone());
    config.progress_interval = progress_interval;
    let server = Server::start(hub.clone(), config).expect("server starts");
    Fixture {
        hub,
        server,
        token,
        wakes,
    }
}

pub fn start() -> Fixture {
    start_with_interval(Duration::from_secs(15))
}

impl Fixture {
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// Wait for the next wake, then take the hub's events (none if the wait timed out).
    pub fn next_events(&self) -> Vec<Event> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let events = self.hub.take_events();
            if !events.is_empty() {
                return events;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Vec::new();
            }
            let _ = self.wakes.recv_timeout(left.min(Duration::from_millis(100)));
        }
    }

    /// Wait for one Call event and return its key, tool, client and progress flag.
    pub fn next_call(&self) -> (u64, String, agent_q_core::mcp::ClientInfo, bool) {
        for event in self.next_events() {
            if let Event::Call {
                key,
                tool,
                client,
                progress,
                ..
            } = event
            {
                return (key, tool, client, progress);
            }
        }
        panic!("no call arrived");
    }
}

/// What the test driver answers: read_file succeeds, write_file is denied, the rest is unknown.
pub fn answer(tool: &str, arguments: &Map<String, Value>) -> CallAnswer {
    match tool {
        "read_file" => CallAnswer::ok(format!(
            "contents of {}",
            arguments.get("path").and_then(Value::as_str).unwrap_or("?")
        )),
        "write_file" => CallAnswer::error("Denied: the user refused write_file"),
        other => CallAnswer::error(format!("Unknown tool: {other}")),
    }
}

/// What the test driver answers a gate request: by the shell command (`git status...` allowed,
/// `rm...` denied, `ask...` asked, `edit...` allowed as `echo edited`, `wait...` left waiting),
/// a Write allowed with its content upper-cased, anything else no opinion. `None`: no answer.
pub fn gate_answer(request: &GateRequest) -> Option<GateAnswer> {
    Some(match &request.kind {
        ToolKind::Shell { command, .. } if command.starts_with("git status") => {
            GateAnswer::Allow { updated_input: None }
        }
        ToolKind::Shell { command, .. } if command.starts_with("rm") => GateAnswer::Deny {
            reason: format!("The user denied {command}"),
        },
        ToolKind::Shell { command, .. } if command.starts_with("ask") => GateAnswer::Ask {
            reason: Some("decide in the agent".into()),
        },
        ToolKind::Shell { command, .. } if command.starts_with("edit") => GateAnswer::Allow {
            updated_input: Some(json!({"command": "echo edited"})),
        },
        ToolKind::Shell { command, .. } if command.starts_with("wait") => return None,
        ToolKind::Write { path, content } => GateAnswer::Allow {
            updated_input: Some(json!({"file_path": path, "content": content.to_uppercase()})),
        },
        _ => GateAnswer::NoOpinion,
    })
}

/// A thread that plays Emacs: it drains the hub when woken and answers every call with
/// [`answer`] and every gate request with [`gate_answer`], recording the events it saw. Stops
/// when dropped.
pub struct Driver {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    pub seen: Arc<Mutex<Vec<Event>>>,
}

impl Driver {
    pub fn spawn(hub: Arc<Hub>, wakes: Receiver<()>) -> Driver {
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (stop2, seen2) = (stop.clone(), seen.clone());
        let thread = std::thread::spawn(move || {
            while !stop2.load(Ordering::SeqCst) {
                match wakes.recv_timeout(Duration::from_millis(50)) {
                    Ok(()) | Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => return,
                }
                for event in hub.take_events() {
                    if let Event::Call {
                        key, tool, arguments, ..
                    } = &event
                    {
                        hub.complete(*key, answer(tool, arguments));
                    }
                    if let Event::Gate { key, request } = &event {
                        if let Some(answer) = gate_answer(request) {
                            hub.complete_gate(*key, answer);
                        }
                    }
                    seen2.lock().unwrap().push(event);
                }
            }
        });
        Driver {
            stop,
            thread: Some(thread),
            seen,
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// An rmcp client that reports the notifications it receives on a channel.
#[derive(Clone)]
pub struct TestClient {
    pub info: ClientConfig,
    pub notes: tokio::sync::mpsc::UnboundedSender<Note>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Note {
    ToolListChanged,
    Progress { progress: f64, message: Option<String> },
}

impl ClientHandler for TestClient {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.notes.send(Note::ToolListChanged);
    }

    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        let _ = self.notes.send(Note::Progress {
            progress: params.progress,
            message: params.message,
        });
    }
}

pub fn client_config(protocol: Option<rmcp::model::ProtocolVersion>) -> ClientConfig {
    let mut config = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("agent-q-test-client", "9.9.9"),
    );
    if let Some(protocol) = protocol {
        config.protocol_version = protocol;
    }
    config
}

pub fn http_transport(url: &str, token: &str) -> StreamableHttpClientTransport<reqwest::Client> {
    StreamableHttpClientTransport::from_config(StreamableHttpClientTransportConfig::with_uri(url).auth_header(token))
}

/// Connect an rmcp client (initialize, 2025 lifecycle) speaking PROTOCOL (its default if None).
pub async fn connect(
    url: &str,
    token: &str,
    protocol: Option<rmcp::model::ProtocolVersion>,
) -> (
    RunningService<RoleClient, TestClient>,
    tokio::sync::mpsc::UnboundedReceiver<Note>,
) {
    let (notes, received) = tokio::sync::mpsc::unbounded_channel();
    let client = TestClient {
        info: client_config(protocol),
        notes,
    };
    let service = client.serve(http_transport(url, token)).await.expect("client connects");
    (service, received)
}

pub fn client_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A raw HTTP exchange with the server on PORT; returns the status, the head (lowercased)
/// and the body. HEADERS may include `host`, which replaces the default one.
pub fn http(port: u16, method: &str, headers: &[(&str, &str)], body: &str) -> (u16, String, String) {
    http_to(port, method, "/mcp", headers, body)
}

/// [`http`] to PATH.
pub fn http_to(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    // HTTP/1.0: the response body is delimited by the end of the connection, not chunked.
    let mut request = format!("{method} {path} HTTP/1.0\r\nConnection: close\r\n");
    if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("content-length"))
    {
        request.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    (status, head.to_ascii_lowercase(), body.to_string())
}

/// The `Authorization` header for TOKEN.
pub fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// The JSON-RPC messages in an SSE or JSON response body.
pub fn messages(body: &str) -> Vec<Value> {
    if let Ok(value) = serde_json::from_str::<Value>(body.trim()) {
        return vec![value];
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect()
}

/// A fresh directory for the test NAME.
pub fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("agent-q-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Write a connection file in DIR naming URL, TOKEN and PID, as Emacs writes it (mode 0600:
/// the relay and the hook refuse a file others can read).
pub fn write_connection(dir: &std::path::Path, url: &str, token: &str, pid: u32) -> std::path::PathBuf {
    let path = dir.join("agent-q-mcp.json");
    let text = json!({"url": url, "token": token, "pid": pid}).to_string();
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    path
}

/// A server with gating on and a [`Driver`] answering its hub; the fixture's own wake
/// receiver is then a dead one.
pub fn start_gate_driven() -> (Fixture, Driver) {
    let Fixture {
        hub,
        server,
        token,
        wakes,
    } = start();
    hub.set_gating(true);
    let driver = Driver::spawn(hub.clone(), wakes);
    let wakes = mpsc::channel().1;
    (
        Fixture {
            hub,
            server,
            token,
            wakes,
        },
        driver,
    )
}
