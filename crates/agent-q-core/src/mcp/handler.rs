//! The protocol handler: rmcp's [`ServerHandler`] over the [`Hub`].
//!
//! rmcp answers the lifecycle (initialize and version negotiation, `server/discover` for
//! 2026-07-28), ping and cancellation bookkeeping; this handler adds what is agent-q's: the tool
//! list from the hub, calls queued in the hub and awaited, progress while they wait, and the
//! peers that must hear about tool list changes. Authentication and Origin checks are not here:
//! they are layers around the whole service (see [`super::security`]).

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ServerCapabilities, ServerConfig,
    SubscriptionFilter, Tool,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData, ServerHandler};

use super::hub::{CallAnswer, ClientInfo, Hub, RootsLookup, Workspace};
use super::server::STOPPED;

/// The text of the result of a call its client cancelled (the client ignores it; the
/// specification says it should not even be sent, but rmcp always answers a request).
const CANCELLED: &str = "The call was cancelled by the client.";

/// The status sent in progress notifications before the driver sets one.
const DEFAULT_STATUS: &str = "waiting for Emacs";

/// How long a call waits for its client's answer to `roots/list` (sent after initialization
/// and after each `notifications/roots/list_changed`) before the fixed set applies to it.
const ROOTS_WAIT: Duration = Duration::from_secs(5);

/// How long a call with a session id waits for its session's `notifications/initialized` to be
/// handled (rmcp handles notifications and requests concurrently) before it counts as stateless.
const HANDSHAKE_WAIT: Duration = Duration::from_millis(500);

/// How long the server waits for a client's answer to `roots/list`.
const ROOTS_TIMEOUT: Duration = Duration::from_secs(30);

/// The handler of one session (2025 revisions) or one request (2026-07-28): cheap to clone.
#[derive(Clone)]
pub(crate) struct McpHandler {
    pub(crate) hub: Arc<Hub>,
    pub(crate) progress_interval: Duration,
}

impl McpHandler {
    fn answer_result(answer: CallAnswer) -> CallToolResult {
        let content = vec![ContentBlock::text(answer.text)];
        if answer.is_error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        }
    }
}

/// Withdraws the call (or gate request) from the hub if its handler stops waiting before the answer (cancelled
/// request, closed session, server shutting down): the driver must not run what nobody waits
/// for.
pub(crate) struct WithdrawOnDrop {
    pub(crate) hub: Arc<Hub>,
    pub(crate) key: u64,
    pub(crate) armed: bool,
}

impl Drop for WithdrawOnDrop {
    fn drop(&mut self) {
        if self.armed {
            self.hub.withdraw(self.key);
        }
    }
}

/// The `Mcp-Session-Id` of the HTTP request whose parts EXTENSIONS hold.
fn session_of(extensions: &rmcp::model::Extensions) -> Option<String> {
    extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.headers.get("mcp-session-id"))
        .and_then(|value| value.to_str().ok())
        .map(str::to_string)
}

/// Who is calling, from the request's `_meta` (2026-07-28), or from `initialize` for a session,
/// whose id is SESSION (see [`McpHandler::session_of_call`]).
fn client_of(session: Option<String>, context: &RequestContext<RoleServer>) -> ClientInfo {
    // Only a session has real handshake info: for a stateless request rmcp fills the peer info
    // with its own defaults, which would name rmcp as the client.
    let implementation = context.meta.client_info().or_else(|| {
        session
            .as_ref()
            .and_then(|_| context.peer.peer_info())
            .map(|info| info.client_info.clone())
    });
    let (name, version) = match implementation {
        Some(found) => (found.name, found.version),
        None => ("unknown".to_string(), String::new()),
    };
    ClientInfo {
        name,
        version,
        session,
        protocol_version: context.protocol_version().map(|version| version.to_string()),
        roots: None,
        channel: String::new(),
    }
}

impl McpHandler {
    /// The session of the call in CONTEXT: its `Mcp-Session-Id`, when the peer that serves it
    /// is that session's, known to the hub once the session is initialized (see
    /// [`Hub::in_session`]). A call that comes before `notifications/initialized` is handled
    /// waits up to [`HANDSHAKE_WAIT`] for it; a stateless request's header (which rmcp passes on
    /// unchecked) never counts, so that it has no session, and a channel of its own.
    async fn session_of_call(&self, context: &RequestContext<RoleServer>) -> Option<String> {
        let session = session_of(&context.extensions)?;
        let deadline = tokio::time::Instant::now() + HANDSHAKE_WAIT;
        loop {
            if self.hub.in_session(&context.peer) {
                return Some(session);
            }
            if tokio::time::Instant::now() >= deadline || context.ct.is_cancelled() {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Ask the client of the session in CONTEXT for its roots, when it declared the roots
    /// capability; the answer is recorded in the hub, and the session's calls wait for it.
    /// Roots are deprecated by SEP-2577, but they are how 2025 clients declare their
    /// workspace.
    #[allow(deprecated)]
    fn refresh_roots(&self, context: &NotificationContext<RoleServer>) {
        let Some(info) = context.peer.peer_info() else { return };
        if info.capabilities.roots.is_none() {
            return;
        }
        let Some(session) = session_of(&context.extensions).filter(|_| self.hub.in_session(&context.peer)) else {
            return;
        };
        let client = &info.client_info;
        let name = if client.version.is_empty() {
            client.name.clone()
        } else {
            format!("{} {}", client.name, client.version)
        };
        let peer = context.peer.clone();
        let generation = self.hub.roots_requested(&session, &name, Some(peer.clone()));
        let hub = self.hub.clone();
        // Its own task: the answer comes through the session's loop, which a notification
        // handler waiting for it would block.
        tokio::spawn(async move {
            let asked = tokio::time::timeout(ROOTS_TIMEOUT, peer.list_roots()).await;
            let answer = match asked {
                Ok(Ok(result)) => Ok(result.roots.into_iter().map(|root| root.uri).collect()),
                Ok(Err(e)) => Err(format!("roots/list failed: {e}")),
                Err(_) => Err(format!("roots/list was not answered in {} s", ROOTS_TIMEOUT.as_secs())),
            };
            hub.roots_answered(&session, generation, answer);
        });
    }

    /// The workspace of SESSION's calls: its roots, waiting up to [`ROOTS_WAIT`] while they
    /// are being asked for; `None` when the fixed set applies.
    async fn roots_for(&self, session: Option<&str>) -> Option<Workspace> {
        let session = session?;
        let mut changes = self.hub.subscribe_roots();
        let deadline = tokio::time::Instant::now() + ROOTS_WAIT;
        loop {
            changes.mark_unchanged();
            match self.hub.roots_of(session) {
                RootsLookup::Fixed => return None,
                RootsLookup::Known(workspace) => return Some(workspace),
                RootsLookup::Asking => match tokio::time::timeout_at(deadline, changes.changed()).await {
                    Ok(Ok(())) => {}
                    _ => return None,
                },
            }
        }
    }
}

impl ServerHandler for McpHandler {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("agent-q", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Tools that work inside the user's running Emacs. Dangerous calls (and, by default, \
                 cautious ones) wait until the user approves them in Emacs.",
            )
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // First: the session's calls wait for it (see `McpHandler::session_of_call`).
        self.hub.add_handshake(&context.peer);
        self.refresh_roots(&context);
        self.hub.add_session(context.peer);
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        self.refresh_roots(&context);
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.hub.listed_tools().as_ref().clone(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.hub.listed_tools().iter().find(|tool| tool.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let token: Option<ProgressToken> = context.meta.get_progress_token();
        let session = self.session_of_call(&context).await;
        let mut client = client_of(session, &context);
        client.roots = self.roots_for(client.session.as_deref()).await.map(Box::new);
        let arguments = request.arguments.unwrap_or_default();
        let ticket = match self
            .hub
            .begin_call(client, request.name.into_owned(), arguments, token.is_some())
        {
            Ok(ticket) => ticket,
            Err(refusal) => return Ok(Self::answer_result(refusal).into()),
        };
        let mut guard = WithdrawOnDrop {
            hub: self.hub.clone(),
            key: ticket.key,
            armed: true,
        };
        let mut answer = ticket.answer;
        let mut status = ticket.status;
        let mut ticker = tokio::time::interval_at(
            tokio::time::Instant::now() + self.progress_interval,
            self.progress_interval,
        );
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut sent = 0u32;
        let mut status_open = true;
        loop {
            let report = tokio::select! {
                biased;
                answered = &mut answer => {
                    guard.armed = false;
                    // A dropped sender means the hub dropped the call without answering, which
                    // only a server that is going away does.
                    let answered = answered.unwrap_or_else(|_| CallAnswer::error(STOPPED));
                    return Ok(Self::answer_result(answered).into());
                }
                _ = context.ct.cancelled() => {
                    // The guard withdraws the call and tells the driver.
                    drop(guard);
                    return Ok(CallToolResult::error(vec![ContentBlock::text(CANCELLED)]).into());
                }
                changed = status.changed(), if token.is_some() && status_open => {
                    status_open = changed.is_ok();
                    changed.is_ok()
                }
                _ = ticker.tick(), if token.is_some() => true,
            };
            if let (true, Some(token)) = (report, token.as_ref()) {
                sent += 1;
                let message = status
                    .borrow_and_update()
                    .clone()
                    .unwrap_or_else(|| DEFAULT_STATUS.to_string());
                let params = ProgressNotificationParam::new(token.clone(), f64::from(sent)).with_message(message);
                // A failed notification (the stream is gone) is not the call's failure: the
                // answer may still be delivered, or the cancellation will arrive.
                let _ = context.peer.notify_progress(params).await;
                ticker.reset();
            }
        }
    }

    fn accepted_subscription_filter(&self, _requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        if context.accepted().tools_list_changed == Some(true) {
            self.hub.add_listener(context.sink().clone());
            context.cancelled().await;
            self.hub.remove_listener(context.sink().id());
        } else {
            context.cancelled().await;
        }
        Ok(())
    }
}
