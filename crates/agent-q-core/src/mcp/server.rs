//! The HTTP server: rmcp's Streamable HTTP service on `/mcp`, behind the security layer, on
//! 127.0.0.1, on a small tokio runtime that the [`RunningServer`] owns.

use std::net::{Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::mpsc::{self, RecvTimeoutError, TryRecvError};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::Router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::connections::{self, Gate, EVICTION_AGE, MAX_CONNECTIONS, MAX_UNPROVEN_CONNECTIONS};
use super::gate::{GATE_ENDPOINT, TOLD_ENDPOINT};
use super::handler::McpHandler;
use super::hub::Hub;
use super::security::{self, Policy, MAX_REQUEST_BODY_BYTES};
use crate::error::McpError;

/// How often a waiting call whose client sent a progress token gets `notifications/progress`.
/// Claude Code abandons a call that has been silent for about 300 s; every notification resets
/// that clock.
pub const DEFAULT_PROGRESS_INTERVAL: Duration = Duration::from_secs(15);

/// The answer every waiting call gets when the server stops.
pub const STOPPED: &str = "Emacs stopped the MCP server";

/// The path of the MCP endpoint.
pub const ENDPOINT: &str = "/mcp";

/// The shortest token accepted: 128 bits in hex. [`super::make_token`] makes 256.
const MIN_TOKEN_LEN: usize = 32;

/// How long [`RunningServer::stop`] waits for the answers of the calls it ends to be written.
const FLUSH_TIMEOUT: Duration = Duration::from_millis(1000);

/// How long [`RunningServer::stop`] waits for connections to close before dropping them.
const CLOSE_TIMEOUT: Duration = Duration::from_millis(500);

/// How long [`RunningServer::stop`] waits for the listener to close, so that the port is free
/// when it returns: the accept loop closes it as soon as it sees the stop, within microseconds
/// unless the runtime is stuck.
const LISTENER_CLOSE_WAIT: Duration = Duration::from_millis(50);

/// How long Emacs's exit waits for stopped servers to finish ([`Shutdown::wait_all`]): the
/// flush and the closing of the connections, which otherwise die with Emacs before the
/// clients hear why their calls ended. As long as a stop can take (the flush, the closing,
/// the runtime's shutdown), so that the exit keeps every promise of the stop; the user has
/// asked Emacs to go away, and clients that read their answers are done within milliseconds.
pub const EXIT_WAIT: Duration = Duration::from_millis(2000);

/// How to run the server.
#[derive(Debug, Clone)]
pub struct Config {
    /// The port on 127.0.0.1; 0 picks a free one (see [`RunningServer::port`]).
    pub port: u16,
    /// The bearer token every request must carry (see [`super::make_token`]).
    pub token: String,
    /// The interval of progress notifications for waiting calls.
    pub progress_interval: Duration,
}

impl Config {
    /// A free port, TOKEN, and the default progress interval.
    pub fn new(token: impl Into<String>) -> Self {
        Config {
            port: 0,
            token: token.into(),
            progress_interval: DEFAULT_PROGRESS_INTERVAL,
        }
    }
}

/// Starts the MCP server.
#[derive(Debug)]
pub struct Server;

impl Server {
    /// Serve HUB's tools at `http://127.0.0.1:PORT/mcp` as CONFIG says, until the returned
    /// [`RunningServer`] is stopped or dropped. The hub accepts calls again if an earlier server
    /// on it was stopped.
    pub fn start(hub: Arc<Hub>, config: Config) -> Result<RunningServer, McpError> {
        check_token(&config.token)?;
        if config.progress_interval.is_zero() {
            return Err(McpError::InvalidConfig("the progress interval must not be zero".into()));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("agent-q-mcp")
            .enable_all()
            .build()
            .map_err(|e| McpError::Runtime(e.to_string()))?;
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, config.port));
        let bind_error = |e: std::io::Error| McpError::Bind {
            address: address.to_string(),
            message: e.to_string(),
        };
        // Bound here, synchronously, so that a port in use is reported to the caller.
        let std_listener = std::net::TcpListener::bind(address).map_err(bind_error)?;
        std_listener.set_nonblocking(true).map_err(bind_error)?;
        let port = std_listener.local_addr().map_err(bind_error)?.port();
        let listener = {
            let _context = runtime.enter();
            tokio::net::TcpListener::from_std(std_listener).map_err(bind_error)?
        };

        hub.open();
        let transport_ct = CancellationToken::new();
        let handler = McpHandler {
            hub: hub.clone(),
            progress_interval: config.progress_interval,
        };
        let rmcp_config = StreamableHttpServerConfig::default()
            // The DNS-rebinding checks: the security layer applies them first, to every request
            // (see security.rs), and the transport again to what it serves.
            .with_allowed_hosts(["localhost", "127.0.0.1", "::1"])
            .with_allowed_origins(
                [
                    "http://localhost:*",
                    "https://localhost:*",
                    "http://127.0.0.1:*",
                    "https://127.0.0.1:*",
                ]
                .into_iter()
                .chain(["http://[::1]:*", "https://[::1]:*"]),
            )
            .with_max_request_body_bytes(MAX_REQUEST_BODY_BYTES)
            // No SSE "priming" events (empty data, an id and a retry interval; a 2025-11-25
            // addition for resuming a stream): rmcp sends them whatever version was negotiated,
            // and 2025-06-18 clients such as Gemini CLI's parse every event's data as JSON and
            // lose the session. The session layer below has its own switch.
            .with_sse_retry(None)
            .with_cancellation_token(transport_ct.clone());
        let mut sessions = LocalSessionManager::default();
        sessions.session_config.sse_retry = None;
        let service = StreamableHttpService::new(move || Ok(handler.clone()), Arc::new(sessions), rmcp_config);
        let policy = Policy::new(&config.token, Some(security::host_checks(service.clone())));
        let (posts_tx, posts) = watch::channel(0usize);
        let gate_hub = hub.clone();
        let told_hub = hub.clone();
        let turn_hub = hub.clone();
        let router = Router::new()
            .route_service(ENDPOINT, service)
            .route(
                GATE_ENDPOINT,
                axum::routing::post(move |body: Bytes| super::gate::serve(gate_hub.clone(), body)),
            )
            .route(
                TOLD_ENDPOINT,
                axum::routing::post(move |body: Bytes| super::gate::serve_told(told_hub.clone(), body)),
            )
            .route(
                super::gate::TURN_ENDPOINT,
                axum::routing::post(move |body: Bytes| super::gate::serve_turn(turn_hub.clone(), body)),
            )
            .layer(middleware::from_fn_with_state(Arc::new(posts_tx), track_posts))
            // Inside the security layer: only what it lets through proves a connection.
            .layer(middleware::from_fn(security::shape_guard))
            .layer(middleware::from_fn(connections::prove))
            .layer(middleware::from_fn_with_state(Arc::new(policy), security::guard));

        let accept_ct = CancellationToken::new();
        let gate = Gate::new(MAX_CONNECTIONS, MAX_UNPROVEN_CONNECTIONS, EVICTION_AGE);
        let (listener_open, listener_closed) = mpsc::channel();
        let serve_task = runtime.spawn(connections::serve(
            listener,
            router,
            gate.clone(),
            accept_ct.clone(),
            Some(listener_open),
        ));
        runtime.spawn(announce_tool_changes(hub.clone(), transport_ct.clone()));

        Ok(RunningServer {
            runtime: Some(runtime),
            port,
            hub,
            accept_ct,
            transport_ct,
            posts,
            serve_task: Some(serve_task),
            listener_closed: Some(listener_closed),
            gate,
        })
    }
}

fn check_token(token: &str) -> Result<(), McpError> {
    if token.len() < MIN_TOKEN_LEN {
        return Err(McpError::InvalidConfig(format!(
            "the token must have at least {MIN_TOKEN_LEN} characters (it has {})",
            token.len()
        )));
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(McpError::InvalidConfig(
            "the token must consist of visible ASCII characters".into(),
        ));
    }
    Ok(())
}

/// Send `notifications/tools/list_changed` to every session and listener after each change of
/// the hub's tool list, until CT is cancelled.
async fn announce_tool_changes(hub: Arc<Hub>, ct: CancellationToken) {
    let mut generation = hub.subscribe_tools();
    generation.mark_unchanged();
    loop {
        tokio::select! {
            _ = ct.cancelled() => return,
            changed = generation.changed() => if changed.is_err() { return },
        }
        let (sessions, listeners) = hub.audience();
        // One task each, so that a slow client cannot delay the others.
        for peer in sessions {
            tokio::spawn(async move {
                let _ = peer.notify_tool_list_changed().await;
            });
        }
        for sink in listeners {
            tokio::spawn(async move {
                let _ = sink.notify_tool_list_changed().await;
            });
        }
    }
}

/// Counts POST requests until their response bodies are finished or dropped, so that
/// [`RunningServer::stop`] can wait for the answers it gives to reach their clients.
async fn track_posts(State(count): State<Arc<watch::Sender<usize>>>, request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let guard = PostGuard::enter(count);
    next.run(request).await.map(|inner| GuardedBody::wrap(inner, guard))
}

struct PostGuard(Arc<watch::Sender<usize>>);

impl PostGuard {
    fn enter(count: Arc<watch::Sender<usize>>) -> Self {
        count.send_modify(|n| *n += 1);
        PostGuard(count)
    }
}

impl Drop for PostGuard {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// A response body that keeps GUARD until the body is dropped (the response was sent, or the
/// client went away): what a guard's `Drop` does then marks the end of the response.
pub(crate) struct GuardedBody<G> {
    inner: Body,
    _guard: G,
}

impl<G: Send + Unpin + 'static> GuardedBody<G> {
    /// INNER, holding GUARD for as long as it lives.
    pub(crate) fn wrap(inner: Body, guard: G) -> Body {
        Body::new(GuardedBody { inner, _guard: guard })
    }
}

impl<G: Unpin> HttpBody for GuardedBody<G> {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// A server that is running. Stop it with [`RunningServer::stop`], or drop it.
#[derive(Debug)]
pub struct RunningServer {
    runtime: Option<tokio::runtime::Runtime>,
    port: u16,
    hub: Arc<Hub>,
    accept_ct: CancellationToken,
    transport_ct: CancellationToken,
    posts: watch::Receiver<usize>,
    serve_task: Option<tokio::task::JoinHandle<()>>,
    /// Disconnected once the accept loop has closed the listener.
    listener_closed: Option<mpsc::Receiver<()>>,
    gate: Arc<Gate>,
}

impl RunningServer {
    /// The port the server listens on, on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL of the MCP endpoint.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}{ENDPOINT}", self.port)
    }

    /// How many connections are open (at most [`MAX_CONNECTIONS`]).
    pub fn connection_count(&self) -> usize {
        self.gate.open_count()
    }

    /// Whether the server still runs.
    pub fn is_running(&self) -> bool {
        self.runtime.is_some()
    }

    /// Stop the server and return at once, leaving what takes time to a thread of its own.
    ///
    /// Here: every waiting call is answered with an error ([`STOPPED`]), the hub takes no more
    /// calls, every connection is asked to finish its response and close, and the listener
    /// closes: the port is free when this returns (unless the runtime did not close it within
    /// 50 ms). On the returned [`Shutdown`]'s thread, which owns the runtime: the answers are
    /// given up to a second to be written, the sessions end, the connections get up to half a
    /// second to close, and the runtime shuts down, dropping whatever still runs.
    ///
    /// Dropping the [`Shutdown`] leaves its thread to finish by itself. Calling `stop` again
    /// does nothing and returns a finished [`Shutdown`]. Called inside a tokio runtime, it does
    /// not wait for the listener either.
    pub fn stop(&mut self) -> Shutdown {
        let Some(runtime) = self.runtime.take() else {
            return Shutdown::finished();
        };
        self.hub.close(STOPPED);
        self.accept_ct.cancel();
        let mut posts = self.posts.clone();
        let transport_ct = self.transport_ct.clone();
        let abandon_ct = self.transport_ct.clone();
        let serve_task = self.serve_task.take();
        let shutdown = Shutdown::spawn(
            "agent-q-mcp-stop",
            runtime,
            move |runtime| {
                runtime.block_on(async move {
                    let _ = tokio::time::timeout(FLUSH_TIMEOUT, posts.wait_for(|n| *n == 0)).await;
                    transport_ct.cancel();
                    if let Some(task) = serve_task {
                        let _ = tokio::time::timeout(CLOSE_TIMEOUT, task).await;
                    }
                });
                // Drops every task still running, and with them the connections.
                runtime.shutdown_timeout(CLOSE_TIMEOUT);
            },
            move |runtime| {
                abandon_ct.cancel();
                runtime.shutdown_background();
            },
        );
        if let Some(closed) = self.listener_closed.take() {
            if tokio::runtime::Handle::try_current().is_err() {
                let _ = closed.recv_timeout(LISTENER_CLOSE_WAIT);
            }
        }
        shutdown
    }
}

/// The end of a stop, on a thread of its own that owns the stopped runtime: the answers the
/// stop gave are flushed, the connections closed, the runtime shut down, while the caller
/// (Emacs's main thread) goes on. Dropping it leaves the thread to finish by itself; it ends
/// with the process at the latest.
#[derive(Debug)]
pub struct Shutdown {
    /// Disconnected once the thread has finished (or never started).
    finished: Option<mpsc::Receiver<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Shutdown {
    /// A shutdown with nothing left to do.
    pub fn finished() -> Self {
        Shutdown {
            finished: None,
            thread: None,
        }
    }

    /// Run FINISH with STATE on a new thread named NAME. If no thread can be started, run
    /// ABANDON with STATE here instead: it must not wait.
    pub(crate) fn spawn<T: Send + 'static>(
        name: &str,
        state: T,
        finish: impl FnOnce(T) + Send + 'static,
        abandon: impl FnOnce(T),
    ) -> Self {
        // The state stays reachable from here in case the thread cannot start (spawning drops
        // the closure then).
        let slot = Arc::new(Mutex::new(Some(state)));
        let thread_slot = slot.clone();
        let (running, finished) = mpsc::channel::<()>();
        let spawned = std::thread::Builder::new().name(name.to_string()).spawn(move || {
            // Dropped when the thread ends, even by a panic: that is what `finished` hears.
            let _running = running;
            let state = thread_slot.lock().unwrap_or_else(PoisonError::into_inner).take();
            if let Some(state) = state {
                finish(state);
            }
        });
        match spawned {
            Ok(thread) => Shutdown {
                finished: Some(finished),
                thread: Some(thread),
            },
            Err(_) => {
                let state = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
                if let Some(state) = state {
                    abandon(state);
                }
                Shutdown::finished()
            }
        }
    }

    /// Whether the thread has finished.
    pub fn is_finished(&self) -> bool {
        match &self.finished {
            None => true,
            Some(finished) => matches!(finished.try_recv(), Err(TryRecvError::Disconnected)),
        }
    }

    /// Wait at most TIMEOUT for the thread to finish; return whether it did.
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        match &self.finished {
            None => true,
            Some(finished) => matches!(finished.recv_timeout(timeout), Err(RecvTimeoutError::Disconnected)),
        }
    }

    /// Wait at most TIMEOUT in all for every one of SHUTDOWNS; return whether they all
    /// finished.
    pub fn wait_all(shutdowns: impl IntoIterator<Item = Shutdown>, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        shutdowns.into_iter().fold(true, |all, shutdown| {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            shutdown.wait_timeout(left) && all
        })
    }

    /// Wait until the thread has finished: the answers written or given up on, the
    /// connections closed, the runtime shut down. It blocks: not for Emacs's main thread, nor
    /// inside a tokio runtime.
    pub fn wait(mut self) {
        if let Some(thread) = self.thread.take() {
            // A panic in the thread has ended it all the same.
            let _ = thread.join();
        }
    }
}

/// The stops still finishing on their threads, kept so that Emacs's exit can wait for them
/// (the Emacs module keeps one for the MCP server, one for the IDE companion).
#[derive(Debug, Default)]
pub struct Stopping(Mutex<Vec<Shutdown>>);

impl Stopping {
    /// No stop kept.
    pub const fn new() -> Self {
        Stopping(Mutex::new(Vec::new()))
    }

    /// Keep SHUTDOWN, forgetting the stops that have finished.
    pub fn push(&self, shutdown: Shutdown) {
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        kept.retain(|s| !s.is_finished());
        kept.push(shutdown);
    }

    /// Wait for every stop kept, at most TIMEOUT in all (see [`Shutdown::wait_all`]); true if
    /// they all finished. They are forgotten either way.
    pub fn wait_all(&self, timeout: Duration) -> bool {
        let kept = std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner));
        Shutdown::wait_all(kept, timeout)
    }
}

impl Drop for RunningServer {
    /// Stops the server as [`RunningServer::stop`] does, without waiting for the rest.
    fn drop(&mut self) {
        drop(self.stop());
    }
}
