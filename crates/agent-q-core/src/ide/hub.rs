//! What the companion's servers and their driver (Emacs's main thread) share: the queue of
//! events for the driver, the requests waiting for its answers, the connected clients and the
//! latest editor context.
//!
//! Nothing here touches Lisp: the driver is woken by the `wake` callback, takes the events
//! ([`IdeHub::take_events`]) and answers ([`IdeHub::answer`]). Everything a client can make
//! the hub hold is capped: [`MAX_CLIENTS`], [`MAX_PENDING_REQUESTS`], [`MAX_PENDING_EVENTS`].

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use rmcp::model::{CustomNotification, ServerNotification};
use rmcp::service::{Peer, RoleServer};
use serde_json::Value;
use tokio::sync::oneshot;

use super::context::EditorContext;
use crate::visible::visible;

/// The most clients connected at once (both agents together).
pub const MAX_CLIENTS: usize = 32;

/// The most requests waiting for Emacs at once (both agents together).
pub const MAX_PENDING_REQUESTS: usize = 64;

/// The most events queued for Emacs; when it is full, requests are refused and notices dropped.
pub const MAX_PENDING_EVENTS: usize = 1024;

/// The longest client name kept, in characters.
const MAX_NAME_CHARS: usize = 100;

/// Wakes the driver: queued events are waiting.
pub type Wake = Box<dyn Fn() + Send + Sync>;

/// Which agent a client is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Agent {
    /// Gemini CLI, over Streamable HTTP.
    Gemini,
    /// Claude Code, over WebSocket.
    Claude,
}

impl Agent {
    /// The agent's name as Lisp sees it: "gemini" or "claude".
    pub fn name(self) -> &'static str {
        match self {
            Agent::Gemini => "gemini",
            Agent::Claude => "claude",
        }
    }
}

/// Something the driver must do or know. `client` is the client's name as it introduced
/// itself, made visible (see [`crate::visible`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdeEvent {
    /// Show the review of CONTENT proposed for PATH; answer with [`Answer::Accepted`] or
    /// [`Answer::Rejected`].
    OpenDiff {
        /// The request's key.
        key: u64,
        /// Who asks.
        agent: Agent,
        /// The client's name.
        client: String,
        /// The file's absolute name.
        path: String,
        /// The whole proposed content.
        content: String,
        /// Claude Code's name for the review, which its `close_tab` uses.
        tab: Option<String>,
    },
    /// Close the matching reviews without an outcome. With a KEY (Gemini's closeDiff) the
    /// driver answers with [`Answer::Content`]; without one it was answered already.
    CloseDiff {
        /// The request's key, when an answer is awaited.
        key: Option<u64>,
        /// Who asks.
        agent: Agent,
        /// The client's name.
        client: String,
        /// The file whose review closes.
        path: Option<String>,
        /// The review's tab name (Claude Code).
        tab: Option<String>,
        /// Every review of this client closes.
        all: bool,
    },
    /// Answer with [`Answer::Diagnostics`] for URI (a `file://` URL), or for every file.
    Diagnostics {
        /// The request's key.
        key: u64,
        /// Who asks.
        agent: Agent,
        /// The client's name.
        client: String,
        /// The file, when one is asked for.
        uri: Option<String>,
    },
    /// Open PATH; answer with [`Answer::Opened`].
    OpenFile {
        /// The request's key.
        key: u64,
        /// Who asks.
        agent: Agent,
        /// The client's name.
        client: String,
        /// The file's absolute name.
        path: String,
        /// The text where the selection should start (Claude Code), if any.
        start_text: Option<String>,
        /// The text where the selection should end (Claude Code), if any.
        end_text: Option<String>,
    },
    /// A client can now hear the context: send it ([`IdeHub::set_context`]).
    ContextWanted {
        /// Who.
        agent: Agent,
        /// The client's name.
        client: String,
    },
    /// A client connected.
    Connected {
        /// Who.
        agent: Agent,
        /// The client's name.
        client: String,
    },
    /// A client went away.
    Disconnected {
        /// Who.
        agent: Agent,
        /// The client's name.
        client: String,
    },
    /// The request KEY is withdrawn (its client gave up or went away): close its review, do
    /// not answer.
    Cancel {
        /// The request's key.
        key: u64,
        /// Who asked.
        agent: Agent,
        /// The client's name.
        client: String,
    },
}

/// One diagnostic as Emacs reports it: lines and columns 1-based.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// What is wrong.
    pub message: String,
    /// "error", "warning", "info" or "hint".
    pub severity: String,
    /// The checker that found it.
    pub source: Option<String>,
    /// The checker's code for it.
    pub code: Option<String>,
    /// Where it starts: line.
    pub line: i64,
    /// Where it starts: column.
    pub column: i64,
    /// Where it ends: line.
    pub end_line: i64,
    /// Where it ends: column.
    pub end_column: i64,
}

/// The diagnostics of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiagnostics {
    /// The file's absolute name.
    pub path: String,
    /// Its diagnostics.
    pub diagnostics: Vec<Diagnostic>,
}

/// The driver's answer to a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// The review was accepted with this final text.
    Accepted(String),
    /// The review was rejected, perhaps saying why.
    Rejected(Option<String>),
    /// The content of the closed review (Gemini's closeDiff), or `None` when none was open.
    Content(Option<String>),
    /// The diagnostics asked for.
    Diagnostics(Vec<FileDiagnostics>),
    /// The file was opened, or why not.
    Opened(Result<(), String>),
}

/// A connected client as [`IdeHub::clients`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientStatus {
    /// Which agent.
    pub agent: Agent,
    /// Its name.
    pub name: String,
    /// Whether it can hear notifications now (Gemini: its GET stream is open).
    pub stream: bool,
}

/// A notification to send to a client.
pub(crate) struct Outgoing {
    pub(crate) peer: Peer<RoleServer>,
    pub(crate) notification: ServerNotification,
}

impl Outgoing {
    pub(crate) fn new(peer: Peer<RoleServer>, method: &str, params: Value) -> Self {
        Outgoing {
            peer,
            notification: ServerNotification::CustomNotification(CustomNotification::new(method, Some(params))),
        }
    }

    /// Send it; a client gone meanwhile is not an error.
    pub(crate) async fn send(self) {
        let _ = self.peer.send_notification(self.notification).await;
    }
}

/// What a pending request is, for the requests that close reviews.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    OpenDiff { path: String, tab: Option<String> },
    Other,
}

/// Which pending reviews [`IdeHub::drop_diffs`] drops.
pub(crate) enum DiffFilter<'a> {
    Path(&'a str),
    Tab(&'a str),
    All,
}

struct Pending {
    conn: u64,
    kind: Kind,
    answer: oneshot::Sender<Answer>,
}

struct Client {
    agent: Agent,
    name: String,
    session: Option<String>,
    stream: bool,
    peer: Peer<RoleServer>,
    /// The last `selection_changed` params sent (Claude Code), to send only changes.
    last_selection: Option<Value>,
}

#[derive(Default)]
struct Inner {
    open: bool,
    next_key: u64,
    next_conn: u64,
    events: VecDeque<IdeEvent>,
    pending: HashMap<u64, Pending>,
    clients: BTreeMap<u64, Client>,
    context: Option<EditorContext>,
    /// Sessions whose notification stream opened before their client was connected (the GET
    /// stream may arrive before the `initialized` notification has been handled).
    early_streams: HashSet<String>,
}

/// The state the companion's servers and the driver share.
pub struct IdeHub {
    inner: Mutex<Inner>,
    wake: Wake,
}

impl std::fmt::Debug for IdeHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdeHub").finish_non_exhaustive()
    }
}

/// NAME as it is shown: hidden characters made visible, at most [`MAX_NAME_CHARS`].
fn clean_name(name: &str) -> String {
    let shown = visible(name);
    if shown.chars().count() > MAX_NAME_CHARS {
        shown.chars().take(MAX_NAME_CHARS).collect()
    } else if shown.is_empty() {
        "unknown".to_string()
    } else {
        shown
    }
}

impl IdeHub {
    /// A hub that calls WAKE whenever events are queued. It accepts requests at once.
    pub fn new(wake: Wake) -> Arc<Self> {
        Arc::new(IdeHub {
            inner: Mutex::new(Inner {
                open: true,
                next_key: 1,
                next_conn: 1,
                ..Inner::default()
            }),
            wake,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queue EVENT if there is room (informational events only; requests use [`Self::request`]).
    fn notice(&self, inner: &mut Inner, event: IdeEvent) -> bool {
        if inner.events.len() >= MAX_PENDING_EVENTS {
            return false;
        }
        if matches!(event, IdeEvent::ContextWanted { .. }) && inner.events.contains(&event) {
            return false;
        }
        inner.events.push_back(event);
        true
    }

    /// A client of AGENT named NAME connected (SESSION: its Streamable HTTP session). Returns
    /// its connection number, or `None` when [`MAX_CLIENTS`] are connected or the hub is closed;
    /// and the context to send at once when the session's stream is already open.
    pub(crate) fn connect(
        &self,
        agent: Agent,
        name: &str,
        session: Option<String>,
        peer: Peer<RoleServer>,
    ) -> Option<(u64, Option<Outgoing>)> {
        let mut inner = self.lock();
        if !inner.open || inner.clients.len() >= MAX_CLIENTS {
            return None;
        }
        let conn = inner.next_conn;
        inner.next_conn += 1;
        let name = clean_name(name);
        let streaming = session
            .as_ref()
            .is_some_and(|session| inner.early_streams.remove(session));
        inner.clients.insert(
            conn,
            Client {
                agent,
                name: name.clone(),
                session,
                stream: false,
                peer,
                last_selection: None,
            },
        );
        self.notice(&mut inner, IdeEvent::Connected { agent, client: name });
        let outgoing = if streaming {
            self.open_stream(&mut inner, conn)
        } else {
            None
        };
        drop(inner);
        (self.wake)();
        Some((conn, outgoing))
    }

    /// The client CONN went away: its pending requests are withdrawn (the driver gets a
    /// [`IdeEvent::Cancel`] for each) and the driver is told.
    pub(crate) fn disconnect(&self, conn: u64) {
        let mut inner = self.lock();
        let Some(client) = inner.clients.remove(&conn) else {
            return;
        };
        let keys: Vec<u64> = inner
            .pending
            .iter()
            .filter(|(_, pending)| pending.conn == conn)
            .map(|(key, _)| *key)
            .collect();
        for key in keys {
            inner.pending.remove(&key);
            self.notice(
                &mut inner,
                IdeEvent::Cancel {
                    key,
                    agent: client.agent,
                    client: client.name.clone(),
                },
            );
        }
        self.notice(
            &mut inner,
            IdeEvent::Disconnected {
                agent: client.agent,
                client: client.name,
            },
        );
        drop(inner);
        (self.wake)();
    }

    /// The Streamable HTTP session SESSION opened its notification stream: as
    /// [`Self::stream_opened`] for its client, or remembered until the client connects.
    pub(crate) fn session_stream_opened(&self, session: &str) -> Option<Outgoing> {
        let mut inner = self.lock();
        let conn = conn_of_session(&inner, session);
        let Some(conn) = conn else {
            if inner.early_streams.len() < MAX_CLIENTS {
                inner.early_streams.insert(session.to_string());
            }
            return None;
        };
        let outgoing = self.open_stream(&mut inner, conn);
        drop(inner);
        (self.wake)();
        outgoing
    }

    /// The Streamable HTTP session SESSION's notification stream closed.
    pub(crate) fn session_stream_closed(&self, session: &str) {
        let mut inner = self.lock();
        inner.early_streams.remove(session);
        if let Some(conn) = conn_of_session(&inner, session) {
            if let Some(client) = inner.clients.get_mut(&conn) {
                client.stream = false;
            }
        }
    }

    /// The peer of the client CONN, to send it notifications.
    pub(crate) fn peer_of(&self, conn: u64) -> Option<Peer<RoleServer>> {
        self.lock().clients.get(&conn).map(|client| client.peer.clone())
    }

    /// Whether the client CONN is still connected.
    pub(crate) fn is_connected(&self, conn: u64) -> bool {
        self.lock().clients.contains_key(&conn)
    }

    /// The client CONN can now hear notifications: the driver is asked for the context, and
    /// the latest context known is returned to be sent at once.
    pub(crate) fn stream_opened(&self, conn: u64) -> Option<Outgoing> {
        let mut inner = self.lock();
        let outgoing = self.open_stream(&mut inner, conn);
        drop(inner);
        (self.wake)();
        outgoing
    }

    fn open_stream(&self, inner: &mut Inner, conn: u64) -> Option<Outgoing> {
        let context = inner.context.clone();
        let client = inner.clients.get_mut(&conn)?;
        client.stream = true;
        let (agent, name) = (client.agent, client.name.clone());
        let outgoing = context.and_then(|context| context_for(client, &context, true));
        self.notice(inner, IdeEvent::ContextWanted { agent, client: name });
        outgoing
    }

    /// Queue a request of the client CONN for the driver: EVENT is made from the new key, the
    /// agent and the client's name. Returns the key and where the answer arrives, or why the
    /// request is refused.
    pub(crate) fn request(
        &self,
        conn: u64,
        kind: Kind,
        event: impl FnOnce(u64, Agent, String) -> IdeEvent,
    ) -> Result<(u64, oneshot::Receiver<Answer>), String> {
        let mut inner = self.lock();
        if !inner.open {
            return Err(STOPPED.to_string());
        }
        let Some(client) = inner.clients.get(&conn) else {
            return Err("The client is not connected".to_string());
        };
        let (agent, name) = (client.agent, client.name.clone());
        if inner.pending.len() >= MAX_PENDING_REQUESTS || inner.events.len() >= MAX_PENDING_EVENTS {
            return Err(format!(
                "Emacs has too many requests waiting (at most {MAX_PENDING_REQUESTS}); try again later"
            ));
        }
        let key = inner.next_key;
        inner.next_key += 1;
        let (answer, receiver) = oneshot::channel();
        inner.pending.insert(key, Pending { conn, kind, answer });
        inner.events.push_back(event(key, agent, name));
        drop(inner);
        (self.wake)();
        Ok((key, receiver))
    }

    /// Queue the review of CONTENT as the new text of PATH (named TAB, when the agent names its
    /// reviews) that the client CONN asks for, as [`IdeHub::request`] does.
    pub(crate) fn request_diff(
        &self,
        conn: u64,
        path: String,
        content: String,
        tab: Option<String>,
    ) -> Result<(u64, oneshot::Receiver<Answer>), String> {
        let kind = Kind::OpenDiff {
            path: path.clone(),
            tab: tab.clone(),
        };
        self.request(conn, kind, move |key, agent, client| IdeEvent::OpenDiff {
            key,
            agent,
            client,
            path,
            content,
            tab,
        })
    }

    /// The request KEY's client stopped waiting: if it was still pending, the driver gets a
    /// [`IdeEvent::Cancel`].
    pub(crate) fn withdraw(&self, key: u64) {
        let mut inner = self.lock();
        let Some(pending) = inner.pending.remove(&key) else {
            return;
        };
        let Some(client) = inner.clients.get(&pending.conn) else {
            return;
        };
        let event = IdeEvent::Cancel {
            key,
            agent: client.agent,
            client: client.name.clone(),
        };
        if self.notice(&mut inner, event) {
            drop(inner);
            (self.wake)();
        }
    }

    /// Drop the pending reviews of the client CONN that FILTER selects, without an answer; tell
    /// the driver to close them (with KEY when it must answer, see [`IdeEvent::CloseDiff`]).
    /// Returns how many were pending.
    pub(crate) fn drop_diffs(&self, conn: u64, filter: DiffFilter<'_>, notify: bool) -> usize {
        let mut inner = self.lock();
        let keys: Vec<u64> = inner
            .pending
            .iter()
            .filter(|(_, pending)| {
                pending.conn == conn
                    && match (&pending.kind, &filter) {
                        (Kind::OpenDiff { path, .. }, DiffFilter::Path(wanted)) => path == wanted,
                        (Kind::OpenDiff { tab, .. }, DiffFilter::Tab(wanted)) => tab.as_deref() == Some(*wanted),
                        (Kind::OpenDiff { .. }, DiffFilter::All) => true,
                        (Kind::Other, _) => false,
                    }
            })
            .map(|(key, _)| *key)
            .collect();
        for key in &keys {
            inner.pending.remove(key);
        }
        if notify && !keys.is_empty() {
            if let Some(client) = inner.clients.get(&conn) {
                let (path, tab, all) = match filter {
                    DiffFilter::Path(path) => (Some(path.to_string()), None, false),
                    DiffFilter::Tab(tab) => (None, Some(tab.to_string()), false),
                    DiffFilter::All => (None, None, true),
                };
                let event = IdeEvent::CloseDiff {
                    key: None,
                    agent: client.agent,
                    client: client.name.clone(),
                    path,
                    tab,
                    all,
                };
                if self.notice(&mut inner, event) {
                    drop(inner);
                    (self.wake)();
                }
            }
        }
        keys.len()
    }

    /// Answer the request KEY. Returns true if someone still waited for it.
    pub fn answer(&self, key: u64, answer: Answer) -> bool {
        let pending = self.lock().pending.remove(&key);
        pending.is_some_and(|pending| pending.answer.send(answer).is_ok())
    }

    /// The events queued since the last call, oldest first.
    pub fn take_events(&self) -> Vec<IdeEvent> {
        self.lock().events.drain(..).collect()
    }

    /// How many requests wait for the driver.
    pub fn pending_count(&self) -> usize {
        self.lock().pending.len()
    }

    /// The connected clients, in the order they connected.
    pub fn clients(&self) -> Vec<ClientStatus> {
        self.lock()
            .clients
            .values()
            .map(|client| ClientStatus {
                agent: client.agent,
                name: client.name.clone(),
                stream: client.stream,
            })
            .collect()
    }

    /// Remember CONTEXT as the editor's; return the notifications that tell the clients who can
    /// hear them (Gemini: every time; Claude: when its selection payload changed).
    pub(crate) fn set_context(&self, context: EditorContext) -> Vec<Outgoing> {
        let mut inner = self.lock();
        let outgoing = inner
            .clients
            .values_mut()
            .filter(|client| client.stream)
            .filter_map(|client| context_for(client, &context, false))
            .collect();
        inner.context = Some(context);
        outgoing
    }

    /// Stop accepting requests: every pending review is answered as rejected with REASON, every
    /// other pending request is dropped (its client gets an error).
    pub(crate) fn close(&self, reason: &str) {
        let mut inner = self.lock();
        inner.open = false;
        for (_, pending) in inner.pending.drain() {
            if matches!(pending.kind, Kind::OpenDiff { .. }) {
                let _ = pending.answer.send(Answer::Rejected(Some(reason.to_string())));
            }
        }
    }
}

/// The connection whose Streamable HTTP session is SESSION.
fn conn_of_session(inner: &Inner, session: &str) -> Option<u64> {
    inner
        .clients
        .iter()
        .find(|(_, client)| client.session.as_deref() == Some(session))
        .map(|(conn, _)| *conn)
}

/// The notification that tells CLIENT about CONTEXT; for Claude Code only when the payload
/// differs from the last one sent, unless ALWAYS.
fn context_for(client: &mut Client, context: &EditorContext, always: bool) -> Option<Outgoing> {
    match client.agent {
        Agent::Gemini => Some(Outgoing::new(
            client.peer.clone(),
            "ide/contextUpdate",
            context.gemini_params(),
        )),
        Agent::Claude => {
            let params = context.claude_params()?;
            if !always && client.last_selection.as_ref() == Some(&params) {
                return None;
            }
            client.last_selection = Some(params.clone());
            Some(Outgoing::new(client.peer.clone(), "selection_changed", params))
        }
    }
}

/// Why a request ends when the companion stops.
pub const STOPPED: &str = "Emacs stopped the IDE companion";
