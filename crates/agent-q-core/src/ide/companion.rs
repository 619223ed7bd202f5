//! Both companions on one small runtime: Gemini's on `http://127.0.0.1:PORT/mcp`, Claude's on
//! `ws://127.0.0.1:PORT/`, each with its own token, sharing one [`IdeHub`].

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::context::EditorContext;
use super::hub::IdeHub;
use super::{claude, gemini, IdeError};
use crate::mcp::connections::{self, Gate, EVICTION_AGE, MAX_CONNECTIONS, MAX_UNPROVEN_CONNECTIONS};
use crate::mcp::Shutdown;

pub use super::hub::STOPPED;

/// The shortest token accepted: 128 bits in hex ([`crate::mcp::make_token`] makes 256).
const MIN_TOKEN_LEN: usize = 32;

/// How long [`Companion::stop`] lets the answers it gives reach their clients.
const FLUSH_TIME: Duration = Duration::from_millis(100);

/// How long [`Companion::stop`] waits for the connections to close.
const CLOSE_TIMEOUT: Duration = Duration::from_millis(300);

/// How long Emacs's exit waits for stopped companions to finish ([`Shutdown::wait_all`]): the
/// flush of the rejections and the closing of the connections, which otherwise die with Emacs.
/// As long as a stop can take (the flush time, the closing, the runtime's shutdown).
pub const EXIT_WAIT: Duration = Duration::from_millis(700);

fn check_token(token: &str) -> Result<(), IdeError> {
    if token.len() < MIN_TOKEN_LEN || !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(IdeError::Invalid(format!(
            "a token must have at least {MIN_TOKEN_LEN} visible ASCII characters"
        )));
    }
    Ok(())
}

fn bind(runtime: &tokio::runtime::Runtime) -> Result<(tokio::net::TcpListener, u16), IdeError> {
    let address = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
    let error = |e: std::io::Error| IdeError::Start(format!("cannot listen on {address}: {e}"));
    let listener = std::net::TcpListener::bind(address).map_err(error)?;
    listener.set_nonblocking(true).map_err(error)?;
    let port = listener.local_addr().map_err(error)?.port();
    let _context = runtime.enter();
    Ok((tokio::net::TcpListener::from_std(listener).map_err(error)?, port))
}

/// The running companions. Stop them with [`Companion::stop`], or drop them.
#[derive(Debug)]
pub struct Companion {
    runtime: Option<tokio::runtime::Runtime>,
    hub: Arc<IdeHub>,
    gemini_port: u16,
    claude_port: u16,
    stop_ct: CancellationToken,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Companion {
    /// Start both companions on free ports of 127.0.0.1 for HUB: Gemini's requiring
    /// GEMINI_TOKEN as a bearer token, Claude's requiring CLAUDE_TOKEN in its header.
    pub fn start(hub: Arc<IdeHub>, gemini_token: &str, claude_token: &str) -> Result<Companion, IdeError> {
        check_token(gemini_token)?;
        check_token(claude_token)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("agent-q-ide")
            .enable_all()
            .build()
            .map_err(|e| IdeError::Start(e.to_string()))?;
        let (gemini_listener, gemini_port) = bind(&runtime)?;
        let (claude_listener, claude_port) = bind(&runtime)?;
        let stop_ct = CancellationToken::new();
        let router = gemini::router(hub.clone(), gemini_token, stop_ct.child_token());
        let gate = Gate::new(MAX_CONNECTIONS, MAX_UNPROVEN_CONNECTIONS, EVICTION_AGE);
        let tasks = vec![
            runtime.spawn(connections::serve(gemini_listener, router, gate, stop_ct.clone(), None)),
            runtime.spawn(claude::serve(
                claude_listener,
                hub.clone(),
                Arc::from(claude_token),
                stop_ct.clone(),
            )),
        ];
        Ok(Companion {
            runtime: Some(runtime),
            hub,
            gemini_port,
            claude_port,
            stop_ct,
            tasks,
        })
    }

    /// The port of Gemini's companion (Streamable HTTP at `/mcp`).
    pub fn gemini_port(&self) -> u16 {
        self.gemini_port
    }

    /// The port of Claude's companion (WebSocket).
    pub fn claude_port(&self) -> u16 {
        self.claude_port
    }

    /// The hub the companions share.
    pub fn hub(&self) -> &Arc<IdeHub> {
        &self.hub
    }

    /// Whether the companions run.
    pub fn is_running(&self) -> bool {
        self.runtime.is_some()
    }

    /// Remember CONTEXT (see [`EditorContext::new`] for its limits) and send it to every client
    /// that can hear it. Returns at once: the sending happens on the companions' runtime.
    pub fn set_context(&self, context: EditorContext) {
        let Some(runtime) = &self.runtime else { return };
        for outgoing in self.hub.set_context(context) {
            runtime.spawn(outgoing.send());
        }
    }

    /// Stop both companions and return at once, leaving what takes time to a thread of its own.
    ///
    /// Here: every waiting review is answered as rejected and the hub takes no more requests.
    /// On the returned [`Shutdown`]'s thread, which owns the runtime: the answers get
    /// 100 ms to reach their clients, then every other request ends, the listeners close, the
    /// connections get up to 300 ms to close, and the runtime shuts down. The ports are free
    /// once that thread has finished ([`Shutdown::wait`]); the companions always take fresh
    /// ports, so a restart does not wait for them.
    ///
    /// Dropping the [`Shutdown`] leaves its thread to finish by itself. Calling `stop` again
    /// does nothing and returns a finished [`Shutdown`].
    pub fn stop(&mut self) -> Shutdown {
        let Some(runtime) = self.runtime.take() else {
            return Shutdown::finished();
        };
        self.hub.close(STOPPED);
        let stop_ct = self.stop_ct.clone();
        let abandon_ct = self.stop_ct.clone();
        let tasks = std::mem::take(&mut self.tasks);
        Shutdown::spawn(
            "agent-q-ide-stop",
            runtime,
            move |runtime| {
                runtime.block_on(async move {
                    tokio::time::sleep(FLUSH_TIME).await;
                    stop_ct.cancel();
                    let _ = tokio::time::timeout(CLOSE_TIMEOUT, futures::future::join_all(tasks)).await;
                });
                runtime.shutdown_timeout(CLOSE_TIMEOUT);
            },
            move |runtime| {
                abandon_ct.cancel();
                runtime.shutdown_background();
            },
        )
    }
}

impl Drop for Companion {
    /// Stops the companions as [`Companion::stop`] does, without waiting for the rest.
    fn drop(&mut self) {
        drop(self.stop());
    }
}
