//! The MCP handler both companions share, [`IdeHandler`]: the connection a session registered
//! in the [`IdeHub`], the server's description, the agent's tools listed and found, the check
//! every tool call starts with, and the arguments and answers the tools have in common. What
//! differs, each agent says as an [`AgentTools`] (gemini.rs, claude.rs).

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomNotification, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::Value;
use tokio::sync::Notify;

use super::hub::IdeHub;

/// How long a notification that arrives before the session's `notifications/initialized` has
/// been handled waits for it.
const REGISTER_WAIT: Duration = Duration::from_secs(5);

/// What one agent's companion adds to the shared [`IdeHandler`].
pub(crate) trait AgentTools: Clone + Send + Sync + 'static {
    /// What the server tells the client about itself, if anything.
    const INSTRUCTIONS: Option<&'static str> = None;

    /// What a tool call answers when its session has no connection in the hub (the hub refused
    /// it, or the client called before it was initialized).
    const NO_CONNECTION: &'static str;

    /// The tools the agent calls.
    fn tools() -> Vec<Tool>;

    /// Register in the hub the session whose client, named NAME, has just been initialized:
    /// its connection, or `None` when the hub refuses it.
    fn connect(&self, name: &str, context: NotificationContext<RoleServer>) -> Option<u64>;

    /// A notification outside MCP from connection CONN (`None` when it has none); ignored unless
    /// the agent says otherwise.
    fn notified(&self, conn: Option<u64>, notification: &CustomNotification) {
        let _ = (conn, notification);
    }

    /// Answer CALL of the tool NAME.
    fn call(&self, name: &str, call: IdeCall) -> impl Future<Output = Result<CallToolResponse, ErrorData>> + Send;
}

/// A tool call from a connected session, as an agent's part answers it.
pub(crate) struct IdeCall {
    /// The session's connection in the hub.
    pub(crate) conn: u64,
    /// The call's arguments.
    pub(crate) arguments: JsonObject,
    /// rmcp's context of the request: its cancellation, its peer, its progress token.
    pub(crate) context: RequestContext<RoleServer>,
}

/// The MCP handler of one companion session: the agent's own part, and the connection the
/// session registered in the hub once initialized.
#[derive(Clone)]
pub(crate) struct IdeHandler<A> {
    agent: A,
    conn: Arc<OnceLock<u64>>,
    /// Told once `on_initialized` has registered the connection, or failed to.
    registered: Arc<Notify>,
    /// Whether `on_initialized` has run.
    initialized: Arc<AtomicBool>,
}

impl<A: AgentTools> IdeHandler<A> {
    /// A handler for a session of AGENT, not yet connected.
    pub(crate) fn new(agent: A) -> Self {
        IdeHandler {
            agent,
            conn: Arc::new(OnceLock::new()),
            registered: Arc::new(Notify::new()),
            initialized: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The session's connection, waiting (at most [`REGISTER_WAIT`]) for `on_initialized`:
    /// rmcp runs each notification's handler in a task of its own, so a notification the client
    /// sends right after `notifications/initialized` (Claude Code's `ide_connected`) can be
    /// handled before the connection is registered.
    async fn registered_connection(&self) -> Option<u64> {
        let registered = self.registered.notified();
        tokio::pin!(registered);
        registered.as_mut().enable();
        if !self.initialized.load(Ordering::Acquire) {
            let _ = tokio::time::timeout(REGISTER_WAIT, registered).await;
        }
        self.conn.get().copied()
    }

    /// Where the session's connection will be once it is registered.
    pub(crate) fn connection(&self) -> Arc<OnceLock<u64>> {
        self.conn.clone()
    }
}

impl<A: AgentTools> ServerHandler for IdeHandler<A> {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder().enable_tools().build();
        let config = ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("agent-q-ide", env!("CARGO_PKG_VERSION")));
        match A::INSTRUCTIONS {
            Some(instructions) => config.with_instructions(instructions),
            None => config,
        }
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let name = context
            .peer
            .peer_info()
            .map(|info| info.client_info.name.clone())
            .unwrap_or_default();
        if let Some(conn) = self.agent.connect(&name, context) {
            let _ = self.conn.set(conn);
        }
        self.initialized.store(true, Ordering::Release);
        self.registered.notify_waiters();
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        _context: NotificationContext<RoleServer>,
    ) {
        self.agent.notified(self.registered_connection().await, &notification);
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(A::tools()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        A::tools().into_iter().find(|tool| tool.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(&conn) = self.conn.get() else {
            return Ok(error_result(A::NO_CONNECTION));
        };
        let call = IdeCall {
            conn,
            arguments: request.arguments.unwrap_or_default(),
            context,
        };
        self.agent.call(&request.name, call).await
    }
}

/// VALUE, a JSON object, as a tool's input schema.
pub(crate) fn schema(value: Value) -> Arc<JsonObject> {
    Arc::new(value.as_object().cloned().unwrap_or_default())
}

/// A tool's failure result saying TEXT.
pub(crate) fn error_result(text: impl Into<String>) -> CallToolResponse {
    CallToolResult::error(vec![ContentBlock::text(text.into())]).into()
}

/// The string argument NAME of ARGUMENTS.
pub(crate) fn string_argument<'a>(arguments: &'a JsonObject, name: &str) -> Result<&'a str, ErrorData> {
    arguments
        .get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| ErrorData::invalid_params(format!("the argument {name} must be a string"), None))
}

/// PATH if it is an absolute file name.
pub(crate) fn absolute(path: &str) -> Result<&str, ErrorData> {
    if path.starts_with('/') {
        Ok(path)
    } else {
        Err(ErrorData::invalid_params(
            format!("the file name {path:?} is not absolute"),
            None,
        ))
    }
}

/// Withdraws a request from the hub if its handler stops waiting before the answer.
pub(crate) struct WithdrawOnDrop {
    pub(crate) hub: Arc<IdeHub>,
    pub(crate) key: u64,
}

impl Drop for WithdrawOnDrop {
    fn drop(&mut self) {
        self.hub.withdraw(self.key);
    }
}
