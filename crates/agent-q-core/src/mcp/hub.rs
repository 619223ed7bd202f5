//! The [`Hub`]: what the MCP server and its driver (Emacs, or a test) share.
//!
//! The server's tasks put calls into the hub and wait; the driver takes them out on its own
//! thread, runs them, and puts the answers back. Nothing here blocks for long or touches Lisp:
//! every method takes one short-lived lock, and the `wake` callback is called after the lock is
//! released.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use rmcp::model::{InitializeRequestParams, Tool, ToolAnnotations};
use rmcp::service::{Peer, RoleServer, SubscriptionSink};
use serde_json::{Map, Value as Json};
use tokio::sync::{oneshot, watch};

use crate::gate::{GateAnswer, GateRequest, ToldKey, ToldStore};
use crate::limits::{check_argument_limits, DEFAULT_MAX_ARGUMENT_BYTES};
use crate::spec::{Hints, ResolvedHints, SafetyLevel};

/// A tool as MCP clients see it in `tools/list`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    /// The tool's name, e.g. `read_file`.
    pub name: String,
    /// An optional human-readable title (the `title` of the tool and of its annotations).
    pub title: Option<String>,
    /// What the tool does, written for the model.
    pub description: String,
    /// The JSON Schema of the arguments (an object schema), sent as `inputSchema`.
    pub input_schema: Map<String, Json>,
    /// The safety level: with [`ToolInfo::hints`], what the annotations say.
    pub safety_level: SafetyLevel,
    /// What the tool says it can do beyond its level; unset hints follow the level.
    pub hints: Hints,
}

impl ToolInfo {
    /// The MCP tool definition.
    pub(crate) fn to_mcp(&self) -> Tool {
        let mut tool = Tool::new(
            self.name.clone(),
            self.description.clone(),
            Arc::new(self.input_schema.clone()),
        )
        .annotate(annotations(self.hints.resolve(self.safety_level), self.title.clone()));
        tool.title = self.title.clone();
        tool
    }
}

/// The annotations of a tool: every hint stated.
///
/// Annotations are hints that clients must not trust, but Gemini CLI's and Codex's approval
/// policies can match on them, so they say truthfully what the tool can do, and never less
/// (see [`Hints::resolve`]). Absent hints would default to the most alarming reading (not
/// read-only, destructive, not idempotent, open world), so all four are stated.
pub(crate) fn annotations(hints: ResolvedHints, title: Option<String>) -> ToolAnnotations {
    ToolAnnotations::from_raw(
        title,
        Some(hints.read_only),
        Some(hints.destructive),
        Some(hints.idempotent),
        Some(hints.open_world),
    )
}

/// Who made a call: the MCP client's `clientInfo` (from `initialize`, or from the request's
/// `_meta` in the 2026-07-28 revision) and its session.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClientInfo {
    /// The client's name, e.g. `claude-code`; `unknown` when it sent none.
    pub name: String,
    /// The client's version; empty when it sent none.
    pub version: String,
    /// The `Mcp-Session-Id` of the call, for clients that use sessions (protocol revisions up to
    /// 2025-11-25); `None` for stateless (2026-07-28) requests.
    pub session: Option<String>,
    /// The protocol version the request was served under, e.g. `2025-06-18`, when known.
    pub protocol_version: Option<String>,
    /// The client's workspace: the MCP roots its session declared, when it declared them and
    /// answered `roots/list`. `None` when the server's fixed set of directories applies (no
    /// session, no roots capability, or no usable answer).
    pub roots: Option<Box<Workspace>>,
    /// The channel the call came on, set by the hub when it queues the call (see
    /// [`channel_of`]): what one call may see of another's (the REPL history, the last error)
    /// is keyed by it, never by the name the client claims.
    pub channel: String,
}

/// The channel of a call from CLIENT: `session ID` for a call in a session (each stdio
/// relay process holds one session, so it is its own channel), and a fresh `request N`,
/// never given before in this process, for a stateless (2026-07-28) request, which has no
/// history of others. `clientInfo` plays no part: any client may claim any name.
pub fn channel_of(client: &ClientInfo) -> String {
    static NEXT_REQUEST: AtomicU64 = AtomicU64::new(1);
    match &client.session {
        Some(session) => format!("session {session}"),
        None => format!("request {}", NEXT_REQUEST.fetch_add(1, Ordering::Relaxed)),
    }
}

/// The most roots of one client that are kept; the rest are ignored, and said to be.
pub const MAX_ROOTS: usize = 64;

/// The longest root URI accepted, in bytes.
pub const MAX_ROOT_URI_BYTES: usize = 4096;

/// What a client's MCP roots make of its workspace.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Workspace {
    /// The local directories of its usable `file://` roots: absolute, percent-decoded paths.
    pub directories: Vec<String>,
    /// The roots that do not count, each as "URI: why".
    pub ignored: Vec<String>,
}

impl Workspace {
    /// The workspace that the root URIS declare: only local `file://` directories other than
    /// `/` count (see [`root_directory`]); at most [`MAX_ROOTS`] are kept.
    pub fn from_uris<I, S>(uris: I) -> Workspace
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut workspace = Workspace::default();
        let mut dropped = 0usize;
        for uri in uris {
            let uri = uri.as_ref();
            if workspace.directories.len() + workspace.ignored.len() >= MAX_ROOTS {
                dropped += 1;
                continue;
            }
            match root_directory(uri) {
                Ok(directory) if !workspace.directories.contains(&directory) => workspace.directories.push(directory),
                Ok(_) => {}
                Err(why) => workspace.ignored.push(format!("{}: {why}", shown_uri(uri))),
            }
        }
        if dropped > 0 {
            workspace
                .ignored
                .push(format!("{dropped} more root(s): only the first {MAX_ROOTS} count"));
        }
        workspace
    }
}

/// URI as shown in a note: cut to a bounded length, control characters escaped.
fn shown_uri(uri: &str) -> String {
    const SHOWN: usize = 200;
    let mut shown: String = uri.chars().take(SHOWN).flat_map(char::escape_default).collect();
    if uri.chars().nth(SHOWN).is_some() {
        shown.push_str("...");
    }
    shown
}

/// The local directory a root URI names, or why it does not count.
///
/// Only `file://` URIs with no host (or `localhost`), an absolute path, no query or fragment,
/// and a path that decodes to UTF-8 without NUL count; `/` never does (it would allow
/// reading nearly everything). Trailing slashes are removed.
pub fn root_directory(uri: &str) -> Result<String, String> {
    if uri.len() > MAX_ROOT_URI_BYTES {
        return Err(format!("longer than {MAX_ROOT_URI_BYTES} bytes"));
    }
    let Some(rest) = uri
        .get(..7)
        .filter(|scheme| scheme.eq_ignore_ascii_case("file://"))
        .map(|_| &uri[7..])
    else {
        return Err("not a file:// URI: only local directories count".into());
    };
    let (host, path) = match rest.find('/') {
        Some(slash) => rest.split_at(slash),
        None => return Err("has no absolute path".into()),
    };
    if !host.is_empty() && !host.eq_ignore_ascii_case("localhost") {
        return Err(format!(
            "names the host {}: only directories of this machine count",
            shown_uri(host)
        ));
    }
    if path.contains(['?', '#']) {
        return Err("has a query or fragment".into());
    }
    let decoded = percent_decode(path).ok_or("has an invalid percent escape")?;
    let decoded = String::from_utf8(decoded).map_err(|_| "its path is not UTF-8".to_string())?;
    if decoded.contains('\0') {
        return Err("its path has a NUL character".into());
    }
    let trimmed = decoded.trim_end_matches('/');
    if trimmed.is_empty() {
        return Err("is the root directory /, which would allow reading nearly everything".into());
    }
    Ok(trimmed.to_string())
}

/// PATH with each `%XX` escape replaced by its byte; `None` for a malformed escape.
fn percent_decode(path: &str) -> Option<Vec<u8>> {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let text = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(text, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
}

/// Where a session's roots stand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootsState {
    /// `roots/list` was sent and is not answered yet: calls wait a little for the answer.
    Asking,
    /// The client answered: its workspace.
    Known(Workspace),
    /// The client did not answer usably (an error, or no answer in time): the fixed set
    /// applies.
    Failed(String),
}

/// A session's roots, as `M-x agent-q-mcp-status` shows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRoots {
    /// The session's `Mcp-Session-Id`.
    pub session: String,
    /// The client's "name version".
    pub client: String,
    /// Where its roots stand.
    pub state: RootsState,
}

/// What a call of a session gets: see [`Hub::roots_of`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RootsLookup {
    /// The fixed set applies.
    Fixed,
    /// The roots are being asked for: wait for [`Hub::subscribe_roots`] and look again.
    Asking,
    /// The session's workspace.
    Known(Workspace),
}

/// The roots bookkeeping of one session.
struct RootsEntry {
    client: String,
    /// Bumped by every request; an answer to an older one is ignored.
    generation: u64,
    state: RootsState,
    /// The session's peer, to forget sessions that ended.
    peer: Option<Peer<RoleServer>>,
}

/// The most sessions whose roots are kept; beyond, the oldest entries of ended sessions go
/// first, then the oldest.
const MAX_ROOTS_SESSIONS: usize = 256;

/// Something the driver must act on. See [`Hub::take_events`].
// Nearly every event is a Call, moved once from the queue to the driver: boxing it would add an
// allocation per call to spare the rare Cancel some bytes.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A client called a tool: run it and answer with [`Hub::complete`]`(key, ...)`. Only calls
    /// of tools the hub lists get here: the hub answers any other call itself (see
    /// [`Hub::set_tools`]).
    Call {
        /// Identifies this call in [`Hub::complete`] and [`Hub::set_status`].
        key: u64,
        /// Who called.
        client: ClientInfo,
        /// The tool's name.
        tool: String,
        /// The arguments (an empty map when the client sent none).
        arguments: Map<String, Json>,
        /// Whether the client asked for progress notifications (sent a progress token): then
        /// [`Hub::set_status`] texts reach it.
        progress: bool,
    },
    /// The call KEY is withdrawn: the client cancelled it (`notifications/cancelled`), its
    /// session ended, or its stream closed (2026-07-28, where that means cancellation). Nothing
    /// waits for the answer any more; a later [`Hub::complete`] for KEY is ignored. The driver
    /// should abandon a pending approval or review and must not start the tool. A Cancel may
    /// name a key the driver never saw (the call was withdrawn before it was taken, and its Call
    /// event removed from the queue): ignore it.
    Cancel {
        /// The call's key.
        key: u64,
    },
    /// A terminal agent's hook asks whether its own tool call may run (`POST /gate`): decide
    /// and answer with [`Hub::complete_gate`]`(key, ...)`. Only while gating is on (see
    /// [`Hub::set_gating`]).
    Gate {
        /// Identifies this request in [`Hub::complete_gate`]; keys of calls and gates never
        /// coincide.
        key: u64,
        /// The agent's call.
        request: GateRequest,
    },
    /// The gate request KEY is withdrawn: the hook went away (the agent was interrupted or
    /// killed), gating was turned off, or the server stopped. Take its prompt or review down;
    /// a later [`Hub::complete_gate`] for KEY is ignored. As with [`Event::Cancel`], KEY may be
    /// one the driver never saw.
    GateWithdrawn {
        /// The request's key.
        key: u64,
    },
    /// A turn of a terminal agent's session began (its prompt hook, `POST /turn`): nothing
    /// waits for an answer. Only while gating is on (see [`Hub::set_gating`]).
    Turn {
        /// The agent, its session and the turn's label.
        notice: crate::gate::TurnNotice,
    },
    /// Nobody answered the gate request KEY within the agent's hook timeout (its
    /// [`GateRequest::wait_secs`]): the hook has been answered [`crate::gate::timed_out_answer`].
    /// Take its prompt or review down, saying so ([`crate::gate::timed_out_reason`]); record
    /// it as a timeout, not a withdrawal. A later [`Hub::complete_gate`] for KEY is ignored.
    GateTimedOut {
        /// The request's key.
        key: u64,
        /// The agent's wait that ran out, in seconds.
        seconds: u64,
    },
}

/// The answer to a call: its text, and whether it is a failure (`isError`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallAnswer {
    /// True for every failure (denied, invalid arguments, unknown tool, tool error...).
    pub is_error: bool,
    /// The text the model reads.
    pub text: String,
}

impl CallAnswer {
    /// A successful result.
    pub fn ok(text: impl Into<String>) -> Self {
        CallAnswer {
            is_error: false,
            text: text.into(),
        }
    }

    /// A failure result.
    pub fn error(text: impl Into<String>) -> Self {
        CallAnswer {
            is_error: true,
            text: text.into(),
        }
    }
}

/// The callback the hub calls after queueing events.
pub type Wake = Box<dyn Fn() + Send + Sync>;

/// The most calls one client (one session; a stateless client by its name and version) may
/// have waiting at once. Each waiting call is a prompt queued in Emacs; more from one client
/// is a flood, not work.
pub const MAX_PENDING_PER_CLIENT: usize = 32;

/// The most calls waiting at once, from all clients together. Each holds a connection (see
/// [`super::MAX_CONNECTIONS`]), which leaves room for the clients' other requests.
pub const MAX_PENDING_CALLS: usize = 192;

/// The most turn notices (see [`Event::Turn`]) queued for the driver at once.
pub const MAX_QUEUED_TURNS: usize = 256;

/// A call or gate request waiting for its answer.
struct Pending {
    waiter: Waiter,
    /// Whose call it is, for [`MAX_PENDING_PER_CLIENT`].
    owner: String,
}

/// What waits: a tool call's handler, or a gate request's.
enum Waiter {
    Call {
        answer: oneshot::Sender<CallAnswer>,
        status: watch::Sender<Option<String>>,
    },
    Gate {
        answer: oneshot::Sender<GateAnswer>,
    },
}

impl Waiter {
    fn is_gate(&self) -> bool {
        matches!(self, Waiter::Gate { .. })
    }

    /// The event that tells the driver the item KEY is withdrawn.
    fn withdrawn(&self, key: u64) -> Event {
        match self {
            Waiter::Call { .. } => Event::Cancel { key },
            Waiter::Gate { .. } => Event::GateWithdrawn { key },
        }
    }
}

#[derive(Default)]
struct Inner {
    /// The tools offered: listed, and the only ones a call reaches the driver for.
    tools: Vec<ToolInfo>,
    /// The tools above the most dangerous level offered, with their levels: a call of one is
    /// refused with a message that says why.
    withheld: Vec<(String, SafetyLevel)>,
    /// The most dangerous level offered.
    max_level: SafetyLevel,
    listed: Arc<Vec<Tool>>,
    events: VecDeque<Event>,
    pending: HashMap<u64, Pending>,
    /// How many calls each client has in `pending`.
    pending_by_owner: HashMap<String, usize>,
    /// The cap on the bytes of one call's arguments as JSON text.
    max_argument_bytes: usize,
    next_key: u64,
    /// Why new calls are refused (the server stopped), if they are.
    closed: Option<String>,
    /// Whether gate requests reach the driver (see [`Hub::set_gating`]).
    gating: bool,
    /// Peers of 2025-style sessions, for `notifications/tools/list_changed`.
    sessions: Vec<Peer<RoleServer>>,
    /// The handshakes of the initialized sessions (see [`Hub::in_session`]), while their
    /// peers live.
    handshakes: Vec<Weak<InitializeRequestParams>>,
    /// 2026-07-28 `subscriptions/listen` streams that accepted tool list changes.
    listeners: Vec<SubscriptionSink>,
    /// The roots of sessions whose clients declared the roots capability, by session id, in
    /// the order they were first asked.
    roots: Vec<(String, RootsEntry)>,
}

/// The state shared by the MCP server and the thread that drives it. Cheap to share as
/// `Arc<Hub>`; every method may be called from any thread.
pub struct Hub {
    inner: Mutex<Inner>,
    wake: Wake,
    /// Bumped by every change of the tool list; the server sends list_changed on each bump.
    tools_generation: watch::Sender<u64>,
    /// Bumped by every answer to `roots/list`: calls waiting for roots look again.
    roots_generation: watch::Sender<u64>,
    /// What Gemini CLI's model must be told by its `AfterTool` hook (see [`crate::gate::ToldStore`]);
    /// its own lock, never held with `inner`'s.
    told: Mutex<ToldStore>,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.lock();
        f.debug_struct("Hub")
            .field("tools", &inner.tools.len())
            .field("events", &inner.events.len())
            .field("pending", &inner.pending.len())
            .field("closed", &inner.closed)
            .finish()
    }
}

/// What the server's call handler holds while it waits.
pub(crate) struct CallTicket {
    pub(crate) key: u64,
    pub(crate) answer: oneshot::Receiver<CallAnswer>,
    pub(crate) status: watch::Receiver<Option<String>>,
}

/// What the `/gate` route holds while it waits.
pub(crate) struct GateTicket {
    pub(crate) key: u64,
    pub(crate) answer: oneshot::Receiver<GateAnswer>,
}

/// Why the gate refuses to queue a request (the hook then falls back to the agent's own flow).
pub const GATING_OFF: &str = "Emacs does not gate the agents' own tools now (agent-q's gate is off)";

impl Hub {
    /// A hub with no tools that calls WAKE (from a server thread) whenever events are queued.
    pub fn new(wake: Wake) -> Arc<Hub> {
        Arc::new(Hub {
            inner: Mutex::new(Inner {
                next_key: 1,
                max_argument_bytes: DEFAULT_MAX_ARGUMENT_BYTES,
                ..Inner::default()
            }),
            wake,
            tools_generation: watch::Sender::new(0),
            roots_generation: watch::Sender::new(0),
            told: Mutex::new(ToldStore::new()),
        })
    }

    fn told(&self) -> MutexGuard<'_, ToldStore> {
        self.told.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The hook of REQUEST is answered ANSWER: keep what Gemini CLI's model must be told for
    /// the call's `AfterTool` hook ([`ToldStore::after_answer`]).
    pub(crate) fn remember_told(&self, request: &GateRequest, answer: &GateAnswer) {
        self.told().after_answer(request, answer, std::time::Instant::now());
    }

    /// What the `AfterTool` hook of the call KEY tells the model, once; `None` when nothing is
    /// kept for it.
    pub fn take_told(&self, key: &ToldKey) -> Option<String> {
        self.told().take(key, std::time::Instant::now())
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave Inner inconsistent in a way that matters
        // more than losing the server, so a poisoned lock is used as is.
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Offer those of TOOLS whose safety level is at most MAX_LEVEL: they are what `tools/list`
    /// returns, and the only tools a call reaches the driver for. A call of any other tool (one
    /// above MAX_LEVEL, or one not in TOOLS) is answered here with a failure that says why. When
    /// the tools offered differ from the current ones, every connected client that can receive
    /// it is sent `notifications/tools/list_changed`. Returns whether they changed.
    pub fn set_tools(&self, tools: Vec<ToolInfo>, max_level: SafetyLevel) -> bool {
        let (offered, withheld): (Vec<ToolInfo>, Vec<ToolInfo>) =
            tools.into_iter().partition(|tool| tool.safety_level <= max_level);
        let mut inner = self.lock();
        inner.withheld = withheld
            .into_iter()
            .map(|tool| (tool.name, tool.safety_level))
            .collect();
        inner.max_level = max_level;
        if inner.tools == offered {
            return false;
        }
        inner.listed = Arc::new(offered.iter().map(ToolInfo::to_mcp).collect());
        inner.tools = offered;
        drop(inner);
        self.tools_generation.send_modify(|generation| *generation += 1);
        true
    }

    /// The tools currently offered (listed).
    pub fn tools(&self) -> Vec<ToolInfo> {
        self.lock().tools.clone()
    }

    /// Take every queued event, oldest first.
    pub fn take_events(&self) -> Vec<Event> {
        self.lock().events.drain(..).collect()
    }

    /// Refuse calls whose arguments, as JSON text, exceed BYTES (at most
    /// [`crate::mcp::MAX_REQUEST_BODY_BYTES`]): they are answered with an error without ever
    /// reaching the driver.
    pub fn set_max_argument_bytes(&self, bytes: usize) {
        self.lock().max_argument_bytes = bytes.min(super::MAX_REQUEST_BODY_BYTES);
    }

    /// Answer the call KEY with ANSWER: its HTTP request gets the result. Returns false, and
    /// does nothing, when KEY is unknown, already answered or withdrawn.
    pub fn complete(&self, key: u64, answer: CallAnswer) -> bool {
        let pending = self.lock().take_pending_of(key, false);
        match pending.map(|pending| pending.waiter) {
            // The receiver is gone only if the handler stopped waiting (then it also withdrew
            // the call); nothing more to do either way.
            Some(Waiter::Call { answer: tx, .. }) => tx.send(answer).is_ok(),
            _ => false,
        }
    }

    /// Answer the gate request KEY with ANSWER: its hook gets it. Returns false, and does
    /// nothing, when KEY is unknown, already answered, withdrawn, or a tool call's.
    pub fn complete_gate(&self, key: u64, answer: GateAnswer) -> bool {
        let pending = self.lock().take_pending_of(key, true);
        match pending.map(|pending| pending.waiter) {
            Some(Waiter::Gate { answer: tx }) => tx.send(answer).is_ok(),
            _ => false,
        }
    }

    /// Turn gating on or off. While it is off (the default), `POST /gate` is refused at once
    /// ([`GATING_OFF`], HTTP 503) and the hook falls back to the agent's own flow; turning it
    /// off withdraws every waiting gate request (the driver gets [`Event::GateWithdrawn`] for
    /// those it took). Returns whether it was on.
    pub fn set_gating(&self, on: bool) -> bool {
        let mut inner = self.lock();
        let was = std::mem::replace(&mut inner.gating, on);
        if on {
            return was;
        }
        let keys: Vec<u64> = inner
            .pending
            .iter()
            .filter(|(_, pending)| pending.waiter.is_gate())
            .map(|(key, _)| *key)
            .collect();
        drop(inner);
        for key in keys {
            self.withdraw(key);
        }
        was
    }

    /// Whether gating is on.
    pub fn gating(&self) -> bool {
        self.lock().gating
    }

    /// Set the status text of the waiting call KEY (e.g. "waiting for the user's approval in
    /// Emacs"). If its client asked for progress, the text goes out at once in a
    /// `notifications/progress` and again with every periodic one. Returns false for an unknown
    /// key.
    pub fn set_status(&self, key: u64, text: impl Into<String>) -> bool {
        let inner = self.lock();
        match inner.pending.get(&key).map(|pending| &pending.waiter) {
            Some(Waiter::Call { status, .. }) => {
                status.send_replace(Some(text.into()));
                true
            }
            _ => false,
        }
    }

    /// How many calls and gate requests wait for an answer.
    pub fn pending_count(&self) -> usize {
        self.lock().pending.len()
    }

    // ---- the server's side ----

    pub(crate) fn listed_tools(&self) -> Arc<Vec<Tool>> {
        self.lock().listed.clone()
    }

    pub(crate) fn subscribe_tools(&self) -> watch::Receiver<u64> {
        self.tools_generation.subscribe()
    }

    /// Queue a call and return what its handler waits on, or the refusal: the server is
    /// stopping, the tool is not offered (see [`Hub::set_tools`]), the arguments are too large
    /// or too deep, or the client (or all clients) have too many calls waiting. A refused call
    /// never reaches the driver.
    pub(crate) fn begin_call(
        &self,
        client: ClientInfo,
        tool: String,
        arguments: Map<String, Json>,
        progress: bool,
    ) -> Result<CallTicket, CallAnswer> {
        let max_bytes = {
            let inner = self.lock();
            if let Some(reason) = &inner.closed {
                return Err(CallAnswer::error(reason.clone()));
            }
            inner.offers(&tool)?;
            inner.max_argument_bytes
        };
        // Measured outside the lock: it walks the whole request.
        check_argument_limits(&arguments, max_bytes).map_err(|problem| {
            CallAnswer::error(format!(
                "The call to {} was refused before it reached Emacs: its arguments {problem}.",
                short(&tool)
            ))
        })?;
        let owner = owner_of(&client);
        let mut client = client;
        client.channel = channel_of(&client);
        let (answer_tx, answer_rx) = oneshot::channel();
        let (status_tx, status_rx) = watch::channel(None);
        let waiter = Waiter::Call {
            answer: answer_tx,
            status: status_tx,
        };
        let mut inner = self.lock();
        let key = inner
            .admit(owner, waiter, &format!("The call to {}", short(&tool)))
            .map_err(CallAnswer::error)?;
        inner.events.push_back(Event::Call {
            key,
            client,
            tool,
            arguments,
            progress,
        });
        drop(inner);
        (self.wake)();
        Ok(CallTicket {
            key,
            answer: answer_rx,
            status: status_rx,
        })
    }

    /// Queue the gate REQUEST of a hook and return what the `/gate` route waits on, or why it
    /// is refused: the server is stopping, gating is off ([`GATING_OFF`]), its tool input is too
    /// large or too deep, or its agent session (or all clients) have too many items waiting. A
    /// refused request never reaches the driver.
    pub(crate) fn begin_gate(&self, request: GateRequest) -> Result<GateTicket, String> {
        let max_bytes = {
            let inner = self.lock();
            inner.refusal_of_gates()?;
            inner.max_argument_bytes
        };
        check_argument_limits(&request.tool_input, max_bytes)
            .map_err(|problem| format!("The {} call was not gated: its input {problem}.", short(&request.tool)))?;
        let owner = format!("gate {} {}", request.agent.name(), request.session_id);
        let (answer_tx, answer_rx) = oneshot::channel();
        let mut inner = self.lock();
        inner.refusal_of_gates()?;
        let what = format!(
            "The gate request of {}'s {}",
            request.agent.name(),
            short(&request.tool)
        );
        let key = inner.admit(owner, Waiter::Gate { answer: answer_tx }, &what)?;
        inner.events.push_back(Event::Gate { key, request });
        drop(inner);
        (self.wake)();
        Ok(GateTicket { key, answer: answer_rx })
    }

    /// A turn began, as NOTICE says: queue [`Event::Turn`] for the driver. Refused (the
    /// reason) while gating is off, when the server is closing, or when
    /// [`MAX_QUEUED_TURNS`] wait to be taken already.
    pub(crate) fn note_turn(&self, notice: crate::gate::TurnNotice) -> Result<(), String> {
        let mut inner = self.lock();
        inner.refusal_of_gates()?;
        let queued = inner.events.iter().filter(|e| matches!(e, Event::Turn { .. })).count();
        if queued >= MAX_QUEUED_TURNS {
            return Err(format!("{queued} turns wait for Emacs already"));
        }
        inner.events.push_back(Event::Turn { notice });
        drop(inner);
        (self.wake)();
        Ok(())
    }

    /// Withdraw the call or gate request KEY (its client cancelled or went away). If the driver
    /// has not taken it yet, its event is removed from the queue so it never runs; otherwise the
    /// driver is told with an [`Event::Cancel`] or [`Event::GateWithdrawn`]. Nothing happens for
    /// an answered key.
    pub(crate) fn withdraw(&self, key: u64) {
        let mut inner = self.lock();
        let Some(pending) = inner.take_pending(key) else {
            return;
        };
        if !remove_queued(&mut inner.events, key) {
            inner.events.push_back(pending.waiter.withdrawn(key));
            drop(inner);
            (self.wake)();
        }
    }

    /// The gate request KEY ran out of the SECONDS its agent waits: answer its hook that it
    /// timed out and tell the driver ([`Event::GateTimedOut`]; nothing when the driver never
    /// took it). False when KEY was answered or withdrawn already.
    pub(crate) fn time_out_gate(&self, key: u64, seconds: u64) -> bool {
        let mut inner = self.lock();
        let Some(pending) = inner.take_pending(key) else {
            return false;
        };
        if let Waiter::Gate { answer } = pending.waiter {
            let _ = answer.send(crate::gate::timed_out_answer(seconds));
        }
        if !remove_queued(&mut inner.events, key) {
            inner.events.push_back(Event::GateTimedOut { key, seconds });
            drop(inner);
            (self.wake)();
        }
        true
    }

    /// Refuse new calls with REASON and answer every waiting call with it (as an error result).
    /// Calls the driver has not taken are removed from the queue; the driver is told about the
    /// others with [`Event::Cancel`].
    pub(crate) fn close(&self, reason: &str) {
        let mut inner = self.lock();
        inner.closed = Some(reason.to_string());
        let pending: Vec<(u64, Pending)> = inner.pending.drain().collect();
        inner.pending_by_owner.clear();
        let mut told = false;
        for (key, item) in &pending {
            if !remove_queued(&mut inner.events, *key) {
                inner.events.push_back(item.waiter.withdrawn(*key));
                told = true;
            }
        }
        inner.sessions.clear();
        inner.handshakes.clear();
        inner.listeners.clear();
        inner.roots.clear();
        drop(inner);
        for (_, item) in pending {
            // A gate's sender is dropped: its route answers that the server stopped.
            if let Waiter::Call { answer, .. } = item.waiter {
                let _ = answer.send(CallAnswer::error(reason));
            }
        }
        if told {
            (self.wake)();
        }
    }

    /// Accept calls again (a server started on this hub).
    pub(crate) fn open(&self) {
        self.lock().closed = None;
    }

    pub(crate) fn add_session(&self, peer: Peer<RoleServer>) {
        let mut inner = self.lock();
        inner.sessions.retain(|peer| !peer.is_transport_closed());
        inner.sessions.push(peer);
    }

    /// Note that PEER's session is initialized (its handshake done): its requests are a
    /// session's.
    pub(crate) fn add_handshake(&self, peer: &Peer<RoleServer>) {
        let Some(info) = peer.peer_info() else { return };
        let mut inner = self.lock();
        inner.handshakes.retain(|info| info.strong_count() > 0);
        inner.handshakes.push(Arc::downgrade(&info));
    }

    /// Whether PEER, which served a request, is the peer of an initialized session (its
    /// handshake info is the one recorded then). rmcp passes a stateless request's HTTP
    /// headers to the handler unchecked, `Mcp-Session-Id` included, and serves it with a peer
    /// of its own: only a session's own peer makes that header the request's session.
    pub(crate) fn in_session(&self, peer: &Peer<RoleServer>) -> bool {
        let Some(info) = peer.peer_info() else { return false };
        self.lock()
            .handshakes
            .iter()
            .any(|known| std::ptr::eq(known.as_ptr(), Arc::as_ptr(&info)))
    }

    pub(crate) fn add_listener(&self, sink: SubscriptionSink) {
        self.lock().listeners.push(sink);
    }

    pub(crate) fn remove_listener(&self, id: &rmcp::model::RequestId) {
        self.lock().listeners.retain(|sink| sink.id() != id);
    }

    /// The peers and listeners to notify of a tool list change (closed sessions are dropped).
    pub(crate) fn audience(&self) -> (Vec<Peer<RoleServer>>, Vec<SubscriptionSink>) {
        let mut inner = self.lock();
        inner.sessions.retain(|peer| !peer.is_transport_closed());
        (inner.sessions.clone(), inner.listeners.clone())
    }
}

impl Hub {
    /// Note that `roots/list` is being sent to the client of SESSION (named CLIENT, reached
    /// through PEER): its calls wait for the answer. Returns the request's generation, for
    /// [`Hub::roots_answered`].
    pub(crate) fn roots_requested(&self, session: &str, client: &str, peer: Option<Peer<RoleServer>>) -> u64 {
        let mut inner = self.lock();
        let generation = match inner.roots.iter_mut().find(|(id, _)| id == session) {
            Some((_, entry)) => {
                entry.generation += 1;
                entry.state = RootsState::Asking;
                if peer.is_some() {
                    entry.peer = peer;
                }
                entry.generation
            }
            None => {
                if inner.roots.len() >= MAX_ROOTS_SESSIONS {
                    let ended = inner
                        .roots
                        .iter()
                        .position(|(_, entry)| entry.peer.as_ref().is_some_and(Peer::is_transport_closed))
                        .unwrap_or(0);
                    inner.roots.remove(ended);
                }
                inner.roots.push((
                    session.to_string(),
                    RootsEntry {
                        client: client.to_string(),
                        generation: 1,
                        state: RootsState::Asking,
                        peer,
                    },
                ));
                1
            }
        };
        drop(inner);
        self.roots_generation.send_modify(|g| *g += 1);
        generation
    }

    /// Record the answer of SESSION's client to the `roots/list` request of GENERATION: the
    /// root URIs, or why there are none. An answer to an older request than the latest is
    /// ignored (the client changed its roots since). Returns whether it was recorded.
    pub(crate) fn roots_answered(&self, session: &str, generation: u64, answer: Result<Vec<String>, String>) -> bool {
        let mut inner = self.lock();
        let recorded = match inner.roots.iter_mut().find(|(id, _)| id == session) {
            Some((_, entry)) if entry.generation == generation => {
                entry.state = match answer {
                    Ok(uris) => RootsState::Known(Workspace::from_uris(uris)),
                    Err(why) => RootsState::Failed(why),
                };
                true
            }
            _ => false,
        };
        drop(inner);
        self.roots_generation.send_modify(|g| *g += 1);
        recorded
    }

    /// What the calls of SESSION get: its workspace, the fixed set (no roots declared, or no
    /// usable answer), or wait (the roots are being asked for).
    pub(crate) fn roots_of(&self, session: &str) -> RootsLookup {
        match self.lock().roots.iter().find(|(id, _)| id == session) {
            None => RootsLookup::Fixed,
            Some((_, entry)) => match &entry.state {
                RootsState::Asking => RootsLookup::Asking,
                RootsState::Known(workspace) => RootsLookup::Known(workspace.clone()),
                RootsState::Failed(_) => RootsLookup::Fixed,
            },
        }
    }

    /// A receiver that changes with every answer to `roots/list`.
    pub(crate) fn subscribe_roots(&self) -> watch::Receiver<u64> {
        self.roots_generation.subscribe()
    }

    /// The roots of the sessions that declared them and are still open, oldest first.
    pub fn session_roots(&self) -> Vec<SessionRoots> {
        let mut inner = self.lock();
        inner
            .roots
            .retain(|(_, entry)| !entry.peer.as_ref().is_some_and(Peer::is_transport_closed));
        inner
            .roots
            .iter()
            .map(|(session, entry)| SessionRoots {
                session: session.clone(),
                client: entry.client.clone(),
                state: entry.state.clone(),
            })
            .collect()
    }
}

impl Inner {
    /// `Ok` when TOOL is offered; otherwise the failure that answers a call of it.
    fn offers(&self, tool: &str) -> Result<(), CallAnswer> {
        if self.tools.iter().any(|offered| offered.name == tool) {
            return Ok(());
        }
        let text = match self.withheld.iter().find(|(name, _)| name == tool) {
            Some((_, level)) => format!(
                "Tool {} is not offered over MCP: it is {level}, and MCP clients get tools up to {} \
                 only (agent-q-mcp-max-safety-level). Nothing ran.",
                short(tool),
                self.max_level
            ),
            None => format!(
                "Unknown tool: {}: agent-q offers no tool of that name over MCP (tools/list names \
                 the tools it offers). Nothing ran.",
                short(tool)
            ),
        };
        Err(CallAnswer::error(text))
    }

    /// Why gate requests are refused now, if they are.
    fn refusal_of_gates(&self) -> Result<(), String> {
        match (&self.closed, self.gating) {
            (Some(reason), _) => Err(reason.clone()),
            (None, false) => Err(GATING_OFF.to_string()),
            (None, true) => Ok(()),
        }
    }

    /// Make WAITER, of OWNER, pending under a new key, unless OWNER or everyone has too many
    /// waiting already: then the refusal, which starts with WHAT ("The call to NAME").
    fn admit(&mut self, owner: String, waiter: Waiter, what: &str) -> Result<u64, String> {
        if let Some(reason) = &self.closed {
            return Err(reason.clone());
        }
        let mine = self.pending_by_owner.get(&owner).copied().unwrap_or(0);
        if mine >= MAX_PENDING_PER_CLIENT {
            return Err(format!(
                "{what} was refused: this client already has {mine} calls waiting in Emacs, \
                 the most one client may have ({MAX_PENDING_PER_CLIENT}). Wait for their answers \
                 (the user may be away) before calling again."
            ));
        }
        if self.pending.len() >= MAX_PENDING_CALLS {
            return Err(format!(
                "{what} was refused: {} calls from all clients are waiting in Emacs, the \
                 most allowed ({MAX_PENDING_CALLS}). Try again later.",
                self.pending.len()
            ));
        }
        *self.pending_by_owner.entry(owner.clone()).or_insert(0) += 1;
        let key = self.next_key;
        self.next_key += 1;
        self.pending.insert(key, Pending { waiter, owner });
        Ok(key)
    }

    /// Remove the waiting item KEY if it is a gate request (GATE) or a call (not GATE).
    fn take_pending_of(&mut self, key: u64, gate: bool) -> Option<Pending> {
        if self.pending.get(&key)?.waiter.is_gate() != gate {
            return None;
        }
        self.take_pending(key)
    }

    /// Remove the waiting call KEY, and count it off its client's calls.
    fn take_pending(&mut self, key: u64) -> Option<Pending> {
        let pending = self.pending.remove(&key)?;
        if let Some(count) = self.pending_by_owner.get_mut(&pending.owner) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.pending_by_owner.remove(&pending.owner);
            }
        }
        Some(pending)
    }
}

/// TOOL as a refusal names it: the name the client sent, cut to 64 characters.
fn short(tool: &str) -> String {
    tool.chars().take(64).collect()
}

/// Whose calls a call counts with for [`MAX_PENDING_PER_CLIENT`]: its session, or, for a
/// stateless request, the name and version its client gave.
fn owner_of(client: &ClientInfo) -> String {
    match &client.session {
        Some(session) => format!("session {session}"),
        None => format!("client {} {}", client.name, client.version),
    }
}

/// Remove the queued Call or Gate event of KEY; true if there was one.
fn remove_queued(events: &mut VecDeque<Event>, key: u64) -> bool {
    let before = events.len();
    events.retain(|event| !matches!(event, Event::Call { key: k, .. } | Event::Gate { key: k, .. } if *k == key));
    events.len() != before
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::{MAX_ARGUMENT_DEPTH, MAX_ARGUMENT_VALUES};
    use crate::mcp::STOPPED;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn tool(name: &str, level: SafetyLevel) -> ToolInfo {
        ToolInfo {
            name: name.into(),
            title: None,
            description: format!("The {name} tool"),
            input_schema: serde_json::json!({"type": "object"}).as_object().unwrap().clone(),
            safety_level: level,
            hints: Hints::default(),
        }
    }

    /// A hub that offers the tools the tests call, and the count of its wakes.
    fn counting_hub() -> (Arc<Hub>, Arc<AtomicUsize>) {
        let wakes = Arc::new(AtomicUsize::new(0));
        let counter = wakes.clone();
        let hub = Hub::new(Box::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        }));
        let names = ["read_file", "write_file", "eval_form", "a", "b", "c", "t"];
        hub.set_tools(
            names.iter().map(|name| tool(name, SafetyLevel::Dangerous)).collect(),
            SafetyLevel::Dangerous,
        );
        (hub, wakes)
    }

    fn call(hub: &Hub, tool: &str) -> CallTicket {
        hub.begin_call(ClientInfo::default(), tool.into(), Map::new(), false)
            .expect("hub is open")
    }

    #[test]
    fn a_call_is_queued_woken_and_answered_once() {
        let (hub, wakes) = counting_hub();
        let mut ticket = call(&hub, "read_file");
        assert_eq!(wakes.load(Ordering::SeqCst), 1);
        let events = hub.take_events();
        assert!(matches!(&events[..], [Event::Call { key, tool, .. }] if *key == ticket.key && tool == "read_file"));
        assert!(hub.take_events().is_empty());
        assert!(hub.complete(ticket.key, CallAnswer::ok("done")));
        assert!(
            !hub.complete(ticket.key, CallAnswer::ok("again")),
            "a second answer is ignored"
        );
        assert!(!hub.complete(9999, CallAnswer::ok("unknown")));
        assert_eq!(ticket.answer.try_recv().unwrap(), CallAnswer::ok("done"));
    }

    fn gate_request(session: &str) -> GateRequest {
        let input = serde_json::json!({"command": "ls"}).as_object().unwrap().clone();
        GateRequest::new(
            crate::gate::Agent::Claude,
            crate::gate::HookEvent::PreTool,
            session.into(),
            "/p".into(),
            "Bash".into(),
            None,
            input,
        )
        .unwrap()
    }

    #[test]
    fn gates_are_refused_until_gating_is_on_then_queued_and_answered_once() {
        let (hub, wakes) = counting_hub();
        assert_eq!(hub.begin_gate(gate_request("s")).err().as_deref(), Some(GATING_OFF));
        assert_eq!(wakes.load(Ordering::SeqCst), 0);
        assert!(!hub.set_gating(true));
        let mut ticket = hub.begin_gate(gate_request("s")).expect("gating on");
        let call = call(&hub, "a");
        let events = hub.take_events();
        assert!(matches!(&events[0], Event::Gate { key, request } if *key == ticket.key && request.tool == "Bash"));
        assert_ne!(ticket.key, call.key);
        // A gate's key does not answer as a call's, nor the other way round.
        assert!(!hub.complete(ticket.key, CallAnswer::ok("x")));
        assert!(!hub.complete_gate(call.key, GateAnswer::NoOpinion));
        assert!(!hub.set_status(ticket.key, "x"));
        assert_eq!(hub.pending_count(), 2);
        let deny = GateAnswer::Deny { reason: "no".into() };
        assert!(hub.complete_gate(ticket.key, deny.clone()));
        assert!(!hub.complete_gate(ticket.key, GateAnswer::NoOpinion), "answered once");
        assert_eq!(ticket.answer.try_recv().unwrap(), deny);
    }

    #[test]
    fn withdrawn_gates_leave_the_queue_or_tell_the_driver() {
        let (hub, _) = counting_hub();
        hub.set_gating(true);
        let untaken = hub.begin_gate(gate_request("s")).unwrap();
        hub.withdraw(untaken.key);
        assert!(hub.take_events().is_empty(), "never seen, never told");
        let mut taken = hub.begin_gate(gate_request("s")).unwrap();
        hub.take_events();
        hub.withdraw(taken.key);
        assert_eq!(hub.take_events(), vec![Event::GateWithdrawn { key: taken.key }]);
        assert!(
            !hub.complete_gate(taken.key, GateAnswer::NoOpinion),
            "a late answer is dropped"
        );
        assert!(taken.answer.try_recv().is_err());
        // Turning gating off withdraws what waits; closing does too.
        let mut a = hub.begin_gate(gate_request("s")).unwrap();
        hub.take_events();
        assert!(hub.set_gating(false));
        assert_eq!(hub.take_events(), vec![Event::GateWithdrawn { key: a.key }]);
        assert!(matches!(a.answer.try_recv(), Err(oneshot::error::TryRecvError::Closed)));
        hub.set_gating(true);
        let b = hub.begin_gate(gate_request("s")).unwrap();
        hub.take_events();
        hub.close(STOPPED);
        assert_eq!(hub.take_events(), vec![Event::GateWithdrawn { key: b.key }]);
        assert_eq!(hub.begin_gate(gate_request("s")).err().as_deref(), Some(STOPPED));
        assert_eq!(hub.pending_count(), 0);
    }

    #[test]
    fn one_agent_session_may_have_only_so_many_gates_waiting() {
        let (hub, _) = counting_hub();
        hub.set_gating(true);
        let tickets: Vec<GateTicket> = (0..MAX_PENDING_PER_CLIENT)
            .map(|_| hub.begin_gate(gate_request("s")).unwrap())
            .collect();
        let refused = hub.begin_gate(gate_request("s")).err().unwrap();
        assert!(refused.contains("claude's Bash was refused"), "{refused}");
        assert!(hub.begin_gate(gate_request("other")).is_ok());
        hub.set_max_argument_bytes(4);
        let big = hub.begin_gate(gate_request("third")).err().unwrap();
        assert!(big.contains("larger than 4 bytes"), "{big}");
        drop(tickets);
    }

    #[test]
    fn withdrawing_an_untaken_call_removes_it_from_the_queue() {
        let (hub, _) = counting_hub();
        let first = call(&hub, "a");
        let second = call(&hub, "b");
        hub.withdraw(first.key);
        let events = hub.take_events();
        assert_eq!(events.len(), 1, "{events:?}");
        assert!(matches!(&events[0], Event::Call { key, .. } if *key == second.key));
        hub.withdraw(second.key);
        assert_eq!(hub.take_events(), vec![Event::Cancel { key: second.key }]);
        assert!(!hub.complete(second.key, CallAnswer::ok("late")));
    }

    #[test]
    fn close_answers_waiting_calls_and_refuses_new_ones() {
        let (hub, _) = counting_hub();
        let mut taken = call(&hub, "a");
        hub.take_events();
        let mut queued = call(&hub, "b");
        hub.close(STOPPED);
        assert_eq!(taken.answer.try_recv().unwrap(), CallAnswer::error(STOPPED));
        assert_eq!(queued.answer.try_recv().unwrap(), CallAnswer::error(STOPPED));
        assert_eq!(hub.take_events(), vec![Event::Cancel { key: taken.key }]);
        let refused = hub.begin_call(ClientInfo::default(), "c".into(), Map::new(), false);
        assert_eq!(refused.err(), Some(CallAnswer::error(STOPPED)));
        hub.open();
        assert!(hub
            .begin_call(ClientInfo::default(), "c".into(), Map::new(), false)
            .is_ok());
    }

    fn client(session: Option<&str>, name: &str) -> ClientInfo {
        ClientInfo {
            name: name.into(),
            session: session.map(str::to_string),
            ..ClientInfo::default()
        }
    }

    #[test]
    fn one_client_may_have_only_so_many_calls_waiting() {
        let (hub, _) = counting_hub();
        let begin = |who: &ClientInfo| hub.begin_call(who.clone(), "write_file".into(), Map::new(), false);
        let a = client(Some("session-a"), "same-name");
        let b = client(Some("session-b"), "same-name");
        let tickets: Vec<CallTicket> = (0..MAX_PENDING_PER_CLIENT)
            .map(|_| begin(&a).expect("under the cap"))
            .collect();
        let refused = begin(&a).err().expect("over the cap");
        assert!(refused.is_error);
        assert!(
            refused.text.contains("already has 32 calls waiting") && refused.text.contains("write_file"),
            "{}",
            refused.text
        );
        assert_eq!(
            hub.take_events().len(),
            MAX_PENDING_PER_CLIENT,
            "the refused call never queued"
        );
        let other = begin(&b).expect("another session has its own count");
        // An answered and a withdrawn call make room again.
        assert!(hub.complete(tickets[0].key, CallAnswer::ok("done")));
        hub.withdraw(tickets[1].key);
        begin(&a).expect("room after an answer");
        begin(&a).expect("room after a withdrawal");
        assert!(begin(&a).is_err());
        // Stateless clients count by name and version.
        let stateless = client(None, "flood");
        for _ in 0..MAX_PENDING_PER_CLIENT {
            begin(&stateless).unwrap();
        }
        assert!(begin(&stateless).is_err());
        assert!(begin(&client(None, "other")).is_ok());
        drop(other);
        hub.close("stopped");
        hub.open();
        assert!(begin(&a).is_ok(), "closing clears the counts");
    }

    #[test]
    fn a_call_s_channel_is_its_session_or_its_own() {
        let (hub, _) = counting_hub();
        for who in [
            client(Some("session-a"), "same-name"),
            client(Some("session-b"), "same-name"),
            client(None, "same-name"),
            client(None, "same-name"),
            client(Some("session-a"), "other-name"),
        ] {
            // Whatever channel a caller says it has, the hub sets it.
            let mut who = who;
            who.channel = "session session-a".into();
            hub.begin_call(who, "t".into(), Map::new(), false).unwrap();
        }
        let channels: Vec<String> = hub
            .take_events()
            .into_iter()
            .filter_map(|event| match event {
                Event::Call { client, .. } => Some(client.channel),
                _ => None,
            })
            .collect();
        assert_eq!(channels[0], "session session-a");
        assert_eq!(channels[1], "session session-b");
        assert_eq!(
            channels[4], channels[0],
            "one session is one channel, whatever its name"
        );
        for stateless in &channels[2..4] {
            assert!(stateless.starts_with("request "), "{stateless}");
        }
        assert_ne!(channels[2], channels[3], "each stateless request is its own channel");
    }

    #[test]
    fn all_clients_together_have_a_cap_too() {
        let (hub, _) = counting_hub();
        for i in 0..MAX_PENDING_CALLS {
            let session = format!("s{}", i / MAX_PENDING_PER_CLIENT);
            hub.begin_call(client(Some(&session), "c"), "t".into(), Map::new(), false)
                .unwrap();
        }
        let refused = hub
            .begin_call(client(Some("fresh"), "c"), "t".into(), Map::new(), false)
            .err()
            .unwrap();
        assert!(refused.text.contains("calls from all clients"), "{}", refused.text);
    }

    fn object(value: serde_json::Value) -> Map<String, Json> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn oversized_or_deep_arguments_are_refused_before_the_driver_sees_them() {
        let (hub, wakes) = counting_hub();
        hub.set_max_argument_bytes(1000);
        let begin = |arguments| hub.begin_call(ClientInfo::default(), "eval_form".into(), arguments, false);
        let many = object(serde_json::json!({ "xs": vec![0; MAX_ARGUMENT_VALUES] }));
        hub.set_max_argument_bytes(usize::MAX);
        let refused = begin(many).err().unwrap();
        assert!(refused.text.contains("more than 100000 values"), "{}", refused.text);
        let mut deep = Json::Null;
        for _ in 0..MAX_ARGUMENT_DEPTH {
            deep = Json::Array(vec![deep]);
        }
        let refused = begin(object(serde_json::json!({ "x": deep }))).err().unwrap();
        assert!(refused.text.contains("nest deeper than 128"), "{}", refused.text);
        hub.set_max_argument_bytes(1000);
        let big = object(serde_json::json!({ "content": "x".repeat(1000) }));
        let refused = begin(big).err().unwrap();
        assert!(
            refused.text.contains("larger than 1000 bytes") && refused.text.contains("eval_form"),
            "{}",
            refused.text
        );
        assert_eq!(wakes.load(Ordering::SeqCst), 0);
        assert!(hub.take_events().is_empty(), "nothing reached the driver");
        assert_eq!(hub.pending_count(), 0);
        let fits = object(serde_json::json!({ "content": "x".repeat(900), "n": [1, [2, [3]]] }));
        assert!(begin(fits).is_ok());
        hub.set_max_argument_bytes(usize::MAX);
        let fits = object(serde_json::json!({ "xs": vec![0; MAX_ARGUMENT_VALUES - 1] }));
        assert!(begin(fits).is_ok());
    }

    #[test]
    fn status_reaches_the_waiting_call() {
        let (hub, _) = counting_hub();
        let ticket = call(&hub, "a");
        assert!(hub.set_status(ticket.key, "waiting for approval"));
        assert_eq!(ticket.status.borrow().as_deref(), Some("waiting for approval"));
        assert!(!hub.set_status(12345, "nobody"));
    }

    #[test]
    fn set_tools_reports_changes_only() {
        let (hub, _) = counting_hub();
        let generation = hub.subscribe_tools();
        let before = *generation.borrow();
        let read = tool("read_file", SafetyLevel::Safe);
        let write = tool("write_file", SafetyLevel::Dangerous);
        assert!(hub.set_tools(vec![read.clone()], SafetyLevel::Dangerous));
        assert!(!hub.set_tools(vec![read.clone()], SafetyLevel::Dangerous));
        // A tool above the level is not offered, so nothing offered changed.
        assert!(!hub.set_tools(vec![read.clone(), write.clone()], SafetyLevel::Cautious));
        assert_eq!(*generation.borrow(), before + 1);
        assert_eq!(hub.listed_tools().len(), 1);
        assert_eq!(hub.listed_tools()[0].name, "read_file");
        assert!(hub.set_tools(vec![read, write], SafetyLevel::Dangerous));
        assert_eq!(hub.listed_tools().len(), 2);
    }

    #[test]
    fn calls_of_tools_not_offered_are_refused_before_the_driver_sees_them() {
        let (hub, wakes) = counting_hub();
        let woken = wakes.load(Ordering::SeqCst);
        let tools = vec![
            tool("read_file", SafetyLevel::Safe),
            tool("insert_text", SafetyLevel::Cautious),
            tool("write_file", SafetyLevel::Dangerous),
        ];
        hub.set_tools(tools, SafetyLevel::Cautious);
        let begin = |name: &str| hub.begin_call(ClientInfo::default(), name.into(), Map::new(), false);
        let above = begin("write_file").err().expect("above the level");
        assert!(above.is_error);
        assert_eq!(
            above.text,
            "Tool write_file is not offered over MCP: it is dangerous, and MCP clients get tools up \
             to cautious only (agent-q-mcp-max-safety-level). Nothing ran."
        );
        let unknown = begin("no_such_tool").err().expect("unknown");
        assert!(
            unknown
                .text
                .starts_with("Unknown tool: no_such_tool: agent-q offers no tool of that name"),
            "{}",
            unknown.text
        );
        let long = begin(&"x".repeat(10_000)).err().expect("unknown");
        assert!(long.text.len() < 300, "the name is cut: {}", long.text);
        assert_eq!(wakes.load(Ordering::SeqCst), woken, "the driver was not woken");
        assert!(hub.take_events().is_empty(), "nothing reached the driver");
        assert_eq!(hub.pending_count(), 0);
        assert!(begin("read_file").is_ok());
        assert!(begin("insert_text").is_ok());
        // Raising the level offers the tool.
        hub.set_tools(
            hub.tools()
                .into_iter()
                .chain([tool("write_file", SafetyLevel::Dangerous)])
                .collect(),
            SafetyLevel::Dangerous,
        );
        assert!(begin("write_file").is_ok());
        assert_eq!(hub.take_events().len(), 3);
    }

    #[test]
    fn only_local_file_roots_other_than_slash_count() {
        assert_eq!(root_directory("file:///home/u/proj"), Ok("/home/u/proj".into()));
        assert_eq!(root_directory("file:///home/u/proj/"), Ok("/home/u/proj".into()));
        assert_eq!(root_directory("FILE://localhost/srv/a"), Ok("/srv/a".into()));
        assert_eq!(
            root_directory("file:///home/u/my%20proj/%C3%A9t%C3%A9"),
            Ok("/home/u/my proj/été".into())
        );
        for (uri, why) in [
            ("file:///", "root directory"),
            ("file:////", "root directory"),
            ("file://", "no absolute path"),
            ("https://example.com/x", "not a file://"),
            ("/home/u/proj", "not a file://"),
            ("file://evil.example/home/u", "names the host evil.example"),
            ("file:///home/u/p?x=1", "query or fragment"),
            ("file:///home/u/p#top", "query or fragment"),
            ("file:///home/u/%zz", "invalid percent escape"),
            ("file:///home/u/%2", "invalid percent escape"),
            ("file:///home/u/%ff", "not UTF-8"),
            ("file:///home/u/a%00b", "NUL"),
            ("fil", "not a file://"),
            ("", "not a file://"),
        ] {
            let answer = root_directory(uri);
            assert!(answer.as_ref().is_err_and(|e| e.contains(why)), "{uri}: {answer:?}");
        }
        let long = format!("file:///{}", "a".repeat(MAX_ROOT_URI_BYTES));
        assert!(root_directory(&long).is_err_and(|e| e.contains("longer than")));
        // Multibyte text at the cut does not panic.
        assert!(root_directory("file:/é/x").is_err());
    }

    #[test]
    fn a_workspace_keeps_usable_roots_and_says_why_of_the_others() {
        let workspace = Workspace::from_uris(["file:///a", "file:///", "file:///a/", "https://x/y", "file:///b"]);
        assert_eq!(workspace.directories, vec!["/a".to_string(), "/b".to_string()]);
        assert_eq!(workspace.ignored.len(), 2, "{workspace:?}");
        assert!(workspace.ignored[0].starts_with("file:///: is the root directory"));
        let many: Vec<String> = (0..MAX_ROOTS + 5).map(|i| format!("file:///r{i}")).collect();
        let workspace = Workspace::from_uris(&many);
        assert_eq!(workspace.directories.len(), MAX_ROOTS);
        assert_eq!(
            workspace.ignored,
            vec![format!("5 more root(s): only the first {MAX_ROOTS} count")]
        );
        let control = Workspace::from_uris(["gopher://x\n[y]"]);
        assert!(control.ignored[0].starts_with("gopher://x\\n[y]"), "{control:?}");
    }

    #[test]
    fn roots_bookkeeping_follows_requests_and_answers() {
        let (hub, _) = counting_hub();
        let mut changes = hub.subscribe_roots();
        changes.mark_unchanged();
        // A session that never declared roots gets the fixed set.
        assert_eq!(hub.roots_of("s1"), RootsLookup::Fixed);
        let first = hub.roots_requested("s1", "claude-code 2.0", None);
        assert!(changes.has_changed().unwrap());
        assert_eq!(hub.roots_of("s1"), RootsLookup::Asking);
        assert!(hub.roots_answered("s1", first, Ok(vec!["file:///p".into()])));
        assert_eq!(
            hub.roots_of("s1"),
            RootsLookup::Known(Workspace {
                directories: vec!["/p".into()],
                ignored: vec![]
            })
        );
        // list_changed: asked again; the late answer to the first request does not count.
        let second = hub.roots_requested("s1", "claude-code 2.0", None);
        assert_eq!(second, first + 1);
        assert_eq!(hub.roots_of("s1"), RootsLookup::Asking);
        assert!(!hub.roots_answered("s1", first, Ok(vec!["file:///old".into()])));
        assert_eq!(hub.roots_of("s1"), RootsLookup::Asking);
        assert!(hub.roots_answered("s1", second, Ok(vec!["file:///q".into(), "file:///".into()])));
        match hub.roots_of("s1") {
            RootsLookup::Known(w) => {
                assert_eq!(w.directories, vec!["/q".to_string()]);
                assert_eq!(w.ignored.len(), 1);
            }
            other => panic!("{other:?}"),
        }
        // An empty list is a workspace with nothing in it, not the fixed set.
        let third = hub.roots_requested("s1", "claude-code 2.0", None);
        hub.roots_answered("s1", third, Ok(vec![]));
        assert_eq!(hub.roots_of("s1"), RootsLookup::Known(Workspace::default()));
        // A failed request falls back to the fixed set, and says why in the status.
        let other = hub.roots_requested("s2", "gemini", None);
        hub.roots_answered("s2", other, Err("roots/list failed: boom".into()));
        assert_eq!(hub.roots_of("s2"), RootsLookup::Fixed);
        assert!(!hub.roots_answered("nobody", 1, Ok(vec![])));
        let status = hub.session_roots();
        assert_eq!(status.len(), 2);
        assert_eq!(status[0].client, "claude-code 2.0");
        assert_eq!(status[1].state, RootsState::Failed("roots/list failed: boom".into()));
        // Sessions do not outlive the server.
        hub.close("stopped");
        assert_eq!(hub.roots_of("s1"), RootsLookup::Fixed);
        assert!(hub.session_roots().is_empty());
    }

    #[test]
    fn roots_of_many_sessions_are_bounded() {
        let (hub, _) = counting_hub();
        for i in 0..MAX_ROOTS_SESSIONS + 10 {
            hub.roots_requested(&format!("s{i}"), "c", None);
        }
        assert_eq!(hub.session_roots().len(), MAX_ROOTS_SESSIONS);
        assert_eq!(hub.roots_of("s0"), RootsLookup::Fixed, "the oldest went first");
        assert_eq!(
            hub.roots_of(&format!("s{}", MAX_ROOTS_SESSIONS + 9)),
            RootsLookup::Asking
        );
    }

    #[test]
    fn annotations_follow_the_safety_level_unless_a_hint_says_more() {
        let json = |level, hints: Hints| serde_json::to_value(annotations(hints.resolve(level), None)).unwrap();
        let none = Hints::default();
        assert_eq!(
            json(SafetyLevel::Safe, none),
            serde_json::json!({"readOnlyHint": true, "destructiveHint": false,
                               "idempotentHint": true, "openWorldHint": false})
        );
        assert_eq!(
            json(SafetyLevel::Cautious, none),
            serde_json::json!({"readOnlyHint": false, "destructiveHint": false,
                               "idempotentHint": false, "openWorldHint": true})
        );
        assert_eq!(
            json(SafetyLevel::Dangerous, none),
            serde_json::json!({"readOnlyHint": false, "destructiveHint": true,
                               "idempotentHint": false, "openWorldHint": true})
        );
        // A cautious tool that evaluates arbitrary code says so.
        let code = Hints {
            destructive: Some(true),
            ..Hints::default()
        };
        assert_eq!(json(SafetyLevel::Cautious, code)["destructiveHint"], true);
        // A dangerous tool confined to local files and idempotent says that too.
        let write = Hints {
            idempotent: Some(true),
            open_world: Some(false),
            ..Hints::default()
        };
        assert_eq!(
            json(SafetyLevel::Dangerous, write),
            serde_json::json!({"readOnlyHint": false, "destructiveHint": true,
                               "idempotentHint": true, "openWorldHint": false})
        );
    }
}
