//! The [`Hub`]: what the MCP server and its driver (Emacs, or a test) share.
//!
//! The server's tasks put calls into the hub and wait; the driver takes them out on its own
//! thread, runs them, and puts the answers back. Nothing here blocks for long or touches Lisp:
//! every method takes one short-lived lock, and the `wake` callback is called after the lock is
//! released.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use rmcp::model::{Tool, ToolAnnotations};
use rmcp::service::{Peer, RoleServer, SubscriptionSink};
use serde_json::{Map, Value as Json};
use tokio::sync::{oneshot, watch};

use crate::spec::SafetyLevel;

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
    /// The safety level, exported as the `readOnlyHint` / `destructiveHint` annotations.
    pub safety_level: SafetyLevel,
}

impl ToolInfo {
    /// The MCP tool definition.
    pub(crate) fn to_mcp(&self) -> Tool {
        let mut tool = Tool::new(
            self.name.clone(),
            self.description.clone(),
            Arc::new(self.input_schema.clone()),
        )
        .annotate(annotations(self.safety_level, self.title.clone()));
        tool.title = self.title.clone();
        tool
    }
}

/// The annotations that describe a safety level.
///
/// Annotations are hints that clients must not trust, but Gemini CLI's and Codex's approval
/// policies can match on them, so they say truthfully what each level means, and never less:
/// a safe tool only reads; a cautious tool changes state in a way the user can see and undo (a
/// buffer edit, a message), so it is not destructive; a dangerous tool makes permanent changes
/// (writes files, evaluates arbitrary code), which is what `destructiveHint` means. Absent
/// hints default to the most alarming reading (not read-only, destructive), so every level states
/// both hints explicitly.
pub(crate) fn annotations(level: SafetyLevel, title: Option<String>) -> ToolAnnotations {
    let (read_only, destructive) = match level {
        SafetyLevel::Safe => (true, false),
        SafetyLevel::Cautious => (false, false),
        SafetyLevel::Dangerous => (false, true),
    };
    ToolAnnotations::from_raw(title, Some(read_only), Some(destructive), None, None)
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
}

/// Something the driver must act on. See [`Hub::take_events`].
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A client called a tool: run it and answer with [`Hub::complete`]`(key, ...)`. The tool
    /// name is passed as the client sent it, even when no such tool is listed: the driver answers
    /// an unknown tool with an error result.
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
}

/// The answer to a call: its text, and whether it is a failure (`isError`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// True for every failure (denied, invalid arguments, unknown tool, tool error...).
    pub is_error: bool,
    /// The text the model reads.
    pub text: String,
}

impl Outcome {
    /// A successful result.
    pub fn ok(text: impl Into<String>) -> Self {
        Outcome {
            is_error: false,
            text: text.into(),
        }
    }

    /// A failure result.
    pub fn error(text: impl Into<String>) -> Self {
        Outcome {
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

/// The most JSON values (objects, arrays, strings, numbers...) in one call's arguments. Real
/// tool arguments hold a few; every one becomes a Lisp value in Emacs.
pub const MAX_ARGUMENT_VALUES: usize = 100_000;

/// The deepest nesting of one call's arguments (the executor's own limit).
pub const MAX_ARGUMENT_DEPTH: usize = crate::sexp::MAX_DEPTH;

/// The default cap on the bytes of one call's arguments as JSON text (the default of
/// `agent-q-max-argument-bytes`); see [`Hub::set_max_argument_bytes`].
pub const DEFAULT_MAX_ARGUMENT_BYTES: usize = 16 << 20;

/// A call waiting for its answer.
struct Pending {
    answer: oneshot::Sender<Outcome>,
    status: watch::Sender<Option<String>>,
    /// Whose call it is, for [`MAX_PENDING_PER_CLIENT`].
    owner: String,
}

#[derive(Default)]
struct Inner {
    tools: Vec<ToolInfo>,
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
    /// Peers of 2025-style sessions, for `notifications/tools/list_changed`.
    sessions: Vec<Peer<RoleServer>>,
    /// 2026-07-28 `subscriptions/listen` streams that accepted tool list changes.
    listeners: Vec<SubscriptionSink>,
}

/// The state shared by the MCP server and the thread that drives it. Cheap to share as
/// `Arc<Hub>`; every method may be called from any thread.
pub struct Hub {
    inner: Mutex<Inner>,
    wake: Wake,
    /// Bumped by every change of the tool list; the server sends list_changed on each bump.
    tools_generation: watch::Sender<u64>,
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
    pub(crate) answer: oneshot::Receiver<Outcome>,
    pub(crate) status: watch::Receiver<Option<String>>,
}

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
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave Inner inconsistent in a way that matters
        // more than losing the server, so a poisoned lock is used as is.
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Replace the tools that `tools/list` returns. When the list differs from the current one,
    /// every connected client that can receive it is sent `notifications/tools/list_changed`.
    /// Returns whether the list changed.
    pub fn set_tools(&self, tools: Vec<ToolInfo>) -> bool {
        let mut inner = self.lock();
        if inner.tools == tools {
            return false;
        }
        inner.listed = Arc::new(tools.iter().map(ToolInfo::to_mcp).collect());
        inner.tools = tools;
        drop(inner);
        self.tools_generation.send_modify(|generation| *generation += 1);
        true
    }

    /// The tools currently listed.
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

    /// Answer the call KEY with OUTCOME: its HTTP request gets the result. Returns false, and
    /// does nothing, when KEY is unknown, already answered or withdrawn.
    pub fn complete(&self, key: u64, outcome: Outcome) -> bool {
        let pending = self.lock().take_pending(key);
        match pending {
            // The receiver is gone only if the handler stopped waiting (then it also withdrew
            // the call); nothing more to do either way.
            Some(pending) => pending.answer.send(outcome).is_ok(),
            None => false,
        }
    }

    /// Set the status text of the waiting call KEY (e.g. "waiting for the user's approval in
    /// Emacs"). If its client asked for progress, the text goes out at once in a
    /// `notifications/progress` and again with every periodic one. Returns false for an unknown
    /// key.
    pub fn set_status(&self, key: u64, text: impl Into<String>) -> bool {
        let inner = self.lock();
        match inner.pending.get(&key) {
            Some(pending) => {
                pending.status.send_replace(Some(text.into()));
                true
            }
            None => false,
        }
    }

    /// How many calls wait for an answer.
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
    /// stopping, the arguments are too large or too deep, or the client (or all clients) have
    /// too many calls waiting. A refused call never reaches the driver.
    pub(crate) fn begin_call(
        &self,
        client: ClientInfo,
        tool: String,
        arguments: Map<String, Json>,
        progress: bool,
    ) -> Result<CallTicket, Outcome> {
        let max_bytes = {
            let inner = self.lock();
            if let Some(reason) = &inner.closed {
                return Err(Outcome::error(reason.clone()));
            }
            inner.max_argument_bytes
        };
        // Measured outside the lock: it walks the whole request.
        check_arguments(&arguments, max_bytes).map_err(|problem| {
            Outcome::error(format!(
                "The call to {} was refused before it reached Emacs: its arguments {problem}.",
                short(&tool)
            ))
        })?;
        let owner = owner_of(&client);
        let mut inner = self.lock();
        if let Some(reason) = &inner.closed {
            return Err(Outcome::error(reason.clone()));
        }
        let mine = inner.pending_by_owner.get(&owner).copied().unwrap_or(0);
        if mine >= MAX_PENDING_PER_CLIENT {
            return Err(Outcome::error(format!(
                "The call to {} was refused: this client already has {mine} calls waiting in Emacs, \
                 the most one client may have ({MAX_PENDING_PER_CLIENT}). Wait for their answers \
                 (the user may be away) before calling again.",
                short(&tool)
            )));
        }
        if inner.pending.len() >= MAX_PENDING_CALLS {
            return Err(Outcome::error(format!(
                "The call to {} was refused: {} calls from all clients are waiting in Emacs, the \
                 most allowed ({MAX_PENDING_CALLS}). Try again later.",
                short(&tool),
                inner.pending.len()
            )));
        }
        *inner.pending_by_owner.entry(owner.clone()).or_insert(0) += 1;
        let key = inner.next_key;
        inner.next_key += 1;
        let (answer_tx, answer_rx) = oneshot::channel();
        let (status_tx, status_rx) = watch::channel(None);
        inner.pending.insert(
            key,
            Pending {
                answer: answer_tx,
                status: status_tx,
                owner,
            },
        );
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

    /// Withdraw the call KEY (its client cancelled or went away). If the driver has not taken
    /// it yet, its Call event is removed from the queue so it never runs; otherwise the driver
    /// is told with an [`Event::Cancel`]. Nothing happens for an answered key.
    pub(crate) fn withdraw(&self, key: u64) {
        let mut inner = self.lock();
        if inner.take_pending(key).is_none() {
            return;
        }
        if !remove_queued_call(&mut inner.events, key) {
            inner.events.push_back(Event::Cancel { key });
            drop(inner);
            (self.wake)();
        }
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
        for (key, _) in &pending {
            if !remove_queued_call(&mut inner.events, *key) {
                inner.events.push_back(Event::Cancel { key: *key });
                told = true;
            }
        }
        inner.sessions.clear();
        inner.listeners.clear();
        drop(inner);
        for (_, call) in pending {
            let _ = call.answer.send(Outcome::error(reason));
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

impl Inner {
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

/// Check ARGUMENTS against the limits before anything is made of them: at most
/// [`MAX_ARGUMENT_DEPTH`] deep, at most [`MAX_ARGUMENT_VALUES`] values, at most MAX_BYTES as
/// JSON text (the measure the executor applies). The walk uses its own stack, not recursion.
/// Returns what is wrong, as the end of a sentence ("hold more than N values").
pub(crate) fn check_arguments(arguments: &Map<String, Json>, max_bytes: usize) -> Result<(), String> {
    let mut stack: Vec<(&Json, usize)> = arguments.values().map(|value| (value, 1)).collect();
    let mut values = stack.len();
    while let Some((value, depth)) = stack.pop() {
        if depth > MAX_ARGUMENT_DEPTH {
            return Err(format!("nest deeper than {MAX_ARGUMENT_DEPTH} levels"));
        }
        let children: Box<dyn Iterator<Item = &Json>> = match value {
            Json::Array(items) => Box::new(items.iter()),
            Json::Object(map) => Box::new(map.values()),
            _ => continue,
        };
        for child in children {
            values += 1;
            if values > MAX_ARGUMENT_VALUES {
                return Err(format!("hold more than {MAX_ARGUMENT_VALUES} values"));
            }
            stack.push((child, depth + 1));
        }
    }
    // Depth and count are bounded now, so serializing cannot recurse deeply; the writer stops
    // it as soon as the limit is passed.
    let mut counter = ByteCounter {
        count: 0,
        limit: max_bytes,
    };
    if serde_json::to_writer(&mut counter, arguments).is_err() || counter.count > max_bytes {
        return Err(format!(
            "are larger than {max_bytes} bytes as JSON (agent-q-max-argument-bytes)"
        ));
    }
    Ok(())
}

/// A writer that counts bytes and fails once they exceed a limit.
struct ByteCounter {
    count: usize,
    limit: usize,
}

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.count = self.count.saturating_add(buf.len());
        if self.count > self.limit {
            return Err(std::io::Error::other("over the limit"));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Remove the queued Call event of KEY; true if there was one.
fn remove_queued_call(events: &mut VecDeque<Event>, key: u64) -> bool {
    let before = events.len();
    events.retain(|event| !matches!(event, Event::Call { key: k, .. } if *k == key));
    events.len() != before
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn counting_hub() -> (Arc<Hub>, Arc<AtomicUsize>) {
        let wakes = Arc::new(AtomicUsize::new(0));
        let counter = wakes.clone();
        let hub = Hub::new(Box::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        }));
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
        assert!(hub.complete(ticket.key, Outcome::ok("done")));
        assert!(
            !hub.complete(ticket.key, Outcome::ok("again")),
            "a second answer is ignored"
        );
        assert!(!hub.complete(9999, Outcome::ok("unknown")));
        assert_eq!(ticket.answer.try_recv().unwrap(), Outcome::ok("done"));
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
        assert!(!hub.complete(second.key, Outcome::ok("late")));
    }

    #[test]
    fn close_answers_waiting_calls_and_refuses_new_ones() {
        let (hub, _) = counting_hub();
        let mut taken = call(&hub, "a");
        hub.take_events();
        let mut queued = call(&hub, "b");
        hub.close("Emacs stopped the MCP server");
        assert_eq!(
            taken.answer.try_recv().unwrap(),
            Outcome::error("Emacs stopped the MCP server")
        );
        assert_eq!(
            queued.answer.try_recv().unwrap(),
            Outcome::error("Emacs stopped the MCP server")
        );
        assert_eq!(hub.take_events(), vec![Event::Cancel { key: taken.key }]);
        let refused = hub.begin_call(ClientInfo::default(), "c".into(), Map::new(), false);
        assert_eq!(refused.err(), Some(Outcome::error("Emacs stopped the MCP server")));
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
        assert!(hub.complete(tickets[0].key, Outcome::ok("done")));
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
        let tool = ToolInfo {
            name: "read_file".into(),
            title: None,
            description: "Read a file".into(),
            input_schema: serde_json::json!({"type": "object"}).as_object().unwrap().clone(),
            safety_level: SafetyLevel::Safe,
        };
        assert!(hub.set_tools(vec![tool.clone()]));
        assert!(!hub.set_tools(vec![tool.clone()]));
        assert_eq!(*generation.borrow(), 1);
        assert_eq!(hub.listed_tools()[0].name, "read_file");
    }

    #[test]
    fn annotations_follow_the_safety_level() {
        let json = |level| serde_json::to_value(annotations(level, None)).unwrap();
        assert_eq!(
            json(SafetyLevel::Safe),
            serde_json::json!({"readOnlyHint": true, "destructiveHint": false})
        );
        assert_eq!(
            json(SafetyLevel::Cautious),
            serde_json::json!({"readOnlyHint": false, "destructiveHint": false})
        );
        assert_eq!(
            json(SafetyLevel::Dangerous),
            serde_json::json!({"readOnlyHint": false, "destructiveHint": true})
        );
    }
}
