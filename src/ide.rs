//! `agent-q--core-ide-*`: Emacs as the IDE companion of Gemini CLI and Claude Code
//! ([`agent_q_core::ide`]).
//!
//! The companions run on their own tokio runtime and never touch a Lisp value: an agent's
//! request becomes an [`IdeEvent`] in the hub's queue and Emacs is woken through the module's
//! channel ([`super::channel`]); the channel's filter, on Emacs's main thread, takes the events
//! (`agent-q--core-ide-take`) and answers those with a key (`agent-q--core-ide-answer`).

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use emacs::{defun, Env, IntoLisp, Result, Value};

use super::args;
use super::errors::{self, Kind};
use agent_q_core::ide::companion::EXIT_WAIT;
use agent_q_core::ide::discovery;
use agent_q_core::ide::{context::MAX_FILES, Selection};
use agent_q_core::ide::{Answer, Companion, Diagnostic, EditorContext, FileDiagnostics, IdeEvent, IdeHub, OpenFile};
use agent_q_core::mcp::{make_token, Stopping};

/// The most files read from `agent-q--core-ide-set-context`'s list (the core keeps fewer).
const MAX_CONTEXT_FILES_READ: usize = 100 * MAX_FILES;

/// The most elements read from any list argument.
const MAX_LIST_ITEMS: usize = 100_000;

/// The longest selection read, in bytes (the core then cuts it to 16 KiB).
const MAX_SELECTION_READ: usize = 1 << 20;

fn state() -> MutexGuard<'static, Option<Companion>> {
    static STATE: OnceLock<Mutex<Option<Companion>>> = OnceLock::new();
    STATE
        .get_or_init(|| Mutex::new(None))
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// The stops still finishing on their own threads, for Emacs's exit to wait for.
/// The stops still finishing, for Emacs's exit to wait for.
static STOPPING: Stopping = Stopping::new();

fn hub() -> Option<Arc<IdeHub>> {
    state().as_ref().map(|companion| companion.hub().clone())
}

fn nil(env: &Env) -> Result<Value<'_>> {
    env.intern("nil")
}

/// The elements of the list LIST, at most MAX of them (a longer or circular list is refused).
pub(crate) fn list_items<'e>(env: &'e Env, list: Value<'e>, what: &str, max: usize) -> Result<Vec<Value<'e>>> {
    let mut items = Vec::new();
    let mut rest = list;
    while rest.is_not_nil() {
        if !env.call("consp", (rest,))?.is_not_nil() {
            return errors::signal(env, Kind::Generic, format!("{what} must be a list"));
        }
        if items.len() >= max {
            return errors::signal(env, Kind::Generic, format!("{what} has more than {max} elements"));
        }
        items.push(env.call("car", (rest,))?);
        rest = env.call("cdr", (rest,))?;
    }
    Ok(items)
}

/// The value of PROPERTY (a keyword name such as ":path") in PLIST.
fn get<'e>(env: &'e Env, plist: Value<'e>, property: &str) -> Result<Value<'e>> {
    env.call("plist-get", (plist, env.intern(property)?))
}

/// Signal unless PLIST is a property list (a proper list of even length), named WHAT.
fn check_plist(env: &Env, plist: Value<'_>, what: &str) -> Result<()> {
    let length = env.call("proper-list-p", (plist,))?;
    if length.is_not_nil() && length.into_rust::<i64>()? % 2 == 0 {
        return Ok(());
    }
    errors::signal(
        env,
        Kind::Generic,
        format!("{what} must be a property list, not {}", args::type_name(env, plist)),
    )
}

/// PROPERTY of PLIST as a string, or `None` when it is nil.
fn optional_string(env: &Env, plist: Value<'_>, property: &str, max: usize) -> Result<Option<String>> {
    let value = get(env, plist, property)?;
    if value.is_not_nil() {
        Ok(Some(args::string(env, value, property, max)?))
    } else {
        Ok(None)
    }
}

/// PROPERTY of PLIST as an integer, or DEFAULT when it is nil.
fn integer_or(env: &Env, plist: Value<'_>, property: &str, default: i64) -> Result<i64> {
    let value = get(env, plist, property)?;
    if value.is_not_nil() {
        args::integer(env, value, property)
    } else {
        Ok(default)
    }
}

fn optional_value<'e>(env: &'e Env, value: Option<String>) -> Result<Value<'e>> {
    match value {
        Some(value) => value.into_lisp(env),
        None => nil(env),
    }
}

fn key_value(env: &Env, key: u64) -> Result<Value<'_>> {
    i64::try_from(key).unwrap_or(i64::MAX).into_lisp(env)
}

/// Start both companions with fresh tokens. Return (:gemini-port N :gemini-token S :claude-port
/// N :claude-token S). Signals when they are running already or cannot start. Events are
/// announced through the module's channel (`agent-q--core-channel-open').
#[defun]
fn ide_start(env: &Env) -> Result<Value<'_>> {
    let mut s = state();
    if s.as_ref().is_some_and(Companion::is_running) {
        return errors::signal(env, Kind::Generic, "The IDE companion is already running");
    }
    let tokens = make_token().and_then(|gemini| make_token().map(|claude| (gemini, claude)));
    let (gemini_token, claude_token) = match tokens {
        Ok(tokens) => tokens,
        Err(e) => return errors::signal(env, Kind::Generic, e.to_string()),
    };
    let hub = IdeHub::new(Box::new(|| {
        super::channel::wake();
    }));
    let companion = match Companion::start(hub, &gemini_token, &claude_token) {
        Ok(companion) => companion,
        Err(e) => return errors::signal(env, Kind::Generic, e.to_string()),
    };
    let (gemini_port, claude_port) = (companion.gemini_port(), companion.claude_port());
    *s = Some(companion);
    drop(s);
    env.list((
        env.intern(":gemini-port")?,
        i64::from(gemini_port),
        env.intern(":gemini-token")?,
        gemini_token,
        env.intern(":claude-port")?,
        i64::from(claude_port),
        env.intern(":claude-token")?,
        claude_token,
    ))
}

/// Stop both companions: waiting reviews are answered as rejected, clients are disconnected,
/// the ports are freed. Return t if they were running. Returns at once: the answers are
/// written and the connections closed by a thread of their own
/// (`agent-q--core-ide-await-stopped' waits for it).
#[defun]
fn ide_stop() -> Result<bool> {
    // Taken out of the lock first, so that no lock is held while stopping.
    let companion = state().take();
    Ok(match companion {
        Some(mut companion) => {
            let was = companion.is_running();
            let shutdown = companion.stop();
            STOPPING.push(shutdown);
            was
        }
        None => false,
    })
}

/// Wait until the companions stopped so far have finished stopping (the rejections written,
/// the connections closed), but not longer than a stop can take (0.7 s). For Emacs's exit only: the
/// thread that finishes a stop dies with Emacs. Return t if they all finished.
#[defun]
fn ide_await_stopped() -> Result<bool> {
    Ok(STOPPING.wait_all(EXIT_WAIT))
}

/// The companions' state: (:running t :clients CLIENTS) while they run, (:running nil) otherwise.
/// CLIENTS is a list of (:agent "gemini"|"claude" :name NAME :stream BOOL), STREAM saying
/// whether the client can hear the context now.
#[defun]
fn ide_status(env: &Env) -> Result<Value<'_>> {
    let Some(hub) = hub() else {
        return env.list((env.intern(":running")?, nil(env)?));
    };
    let clients = hub
        .clients()
        .into_iter()
        .map(|client| {
            env.list((
                env.intern(":agent")?,
                client.agent.name(),
                env.intern(":name")?,
                client.name,
                env.intern(":stream")?,
                client.stream,
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    env.list((
        env.intern(":running")?,
        true,
        env.intern(":clients")?,
        env.list(&clients)?,
    ))
}

/// The event EVENT as a plist.
fn event_value<'e>(env: &'e Env, event: IdeEvent) -> Result<Value<'e>> {
    let head = |kind: &str, agent: agent_q_core::ide::Agent, client: String| -> Result<Vec<Value<'e>>> {
        Ok(vec![
            env.intern(":type")?,
            env.intern(kind)?,
            env.intern(":agent")?,
            agent.name().into_lisp(env)?,
            env.intern(":client")?,
            client.into_lisp(env)?,
        ])
    };
    let fields = match event {
        IdeEvent::OpenDiff {
            key,
            agent,
            client,
            path,
            content,
            tab,
        } => {
            let mut fields = head("open-diff", agent, client)?;
            fields.extend([
                env.intern(":key")?,
                key_value(env, key)?,
                env.intern(":path")?,
                path.into_lisp(env)?,
                env.intern(":content")?,
                content.into_lisp(env)?,
                env.intern(":tab")?,
                optional_value(env, tab)?,
            ]);
            fields
        }
        IdeEvent::CloseDiff {
            key,
            agent,
            client,
            path,
            tab,
            all,
        } => {
            let mut fields = head("close-diff", agent, client)?;
            fields.extend([
                env.intern(":key")?,
                match key {
                    Some(key) => key_value(env, key)?,
                    None => nil(env)?,
                },
                env.intern(":path")?,
                optional_value(env, path)?,
                env.intern(":tab")?,
                optional_value(env, tab)?,
                env.intern(":all")?,
                all.into_lisp(env)?,
            ]);
            fields
        }
        IdeEvent::Diagnostics {
            key,
            agent,
            client,
            uri,
        } => {
            let mut fields = head("diagnostics", agent, client)?;
            fields.extend([
                env.intern(":key")?,
                key_value(env, key)?,
                env.intern(":uri")?,
                optional_value(env, uri)?,
            ]);
            fields
        }
        IdeEvent::OpenFile {
            key,
            agent,
            client,
            path,
            start_text,
            end_text,
        } => {
            let mut fields = head("open-file", agent, client)?;
            fields.extend([
                env.intern(":key")?,
                key_value(env, key)?,
                env.intern(":path")?,
                path.into_lisp(env)?,
                env.intern(":start-text")?,
                optional_value(env, start_text)?,
                env.intern(":end-text")?,
                optional_value(env, end_text)?,
            ]);
            fields
        }
        IdeEvent::ContextWanted { agent, client } => head("context-wanted", agent, client)?,
        IdeEvent::Connected { agent, client } => {
            let mut fields = head("connected", agent, client.clone())?;
            fields.extend([env.intern(":name")?, client.into_lisp(env)?]);
            fields
        }
        IdeEvent::Disconnected { agent, client } => {
            let mut fields = head("disconnected", agent, client.clone())?;
            fields.extend([env.intern(":name")?, client.into_lisp(env)?]);
            fields
        }
        IdeEvent::Cancel { key, agent, client } => {
            let mut fields = head("cancel", agent, client)?;
            fields.extend([env.intern(":key")?, key_value(env, key)?]);
            fields
        }
    };
    env.list(&fields[..])
}

/// Take the events queued by the companions, oldest first: a list of plists, each with :type,
/// :agent ("gemini" or "claude") and :client (the client's name). Nil when not running.
/// - (:type open-diff :key K :path ABS :content TEXT :tab TAB-OR-NIL): show the review; answer
///   (:accepted TEXT) or (:rejected REASON-OR-NIL).
/// - (:type close-diff :key K-OR-NIL :path P-OR-NIL :tab TAB-OR-NIL :all BOOL): close the
///   matching reviews without an outcome; with a KEY, answer (:content TEXT-OR-NIL).
/// - (:type diagnostics :key K :uri URI-OR-NIL): answer (:files ...).
/// - (:type open-file :key K :path P :line nil :start-text S :end-text S): answer (:ok t) or
///   (:error MESSAGE).
/// - (:type context-wanted): send the context now (`agent-q--core-ide-set-context').
/// - (:type connected :name NAME), (:type disconnected :name NAME).
/// - (:type cancel :key K): the request K is withdrawn: close its review, do not answer.
#[defun]
fn ide_take(env: &Env) -> Result<Value<'_>> {
    let Some(hub) = hub() else { return nil(env) };
    let items = hub
        .take_events()
        .into_iter()
        .map(|event| event_value(env, event))
        .collect::<Result<Vec<_>>>()?;
    env.list(&items)
}

/// One diagnostic plist (:message M :severity S :source S :code C :line L :column C :end-line
/// L :end-column C), 1-based.
fn read_diagnostic(env: &Env, plist: Value<'_>) -> Result<Diagnostic> {
    let line = integer_or(env, plist, ":line", 1)?;
    let column = integer_or(env, plist, ":column", 1)?;
    let code = get(env, plist, ":code")?;
    let code = if !code.is_not_nil() {
        None
    } else if env.call("stringp", (code,))?.is_not_nil() {
        Some(args::string(env, code, ":code", args::MAX_NAME_BYTES)?)
    } else {
        Some(args::integer(env, code, ":code")?.to_string())
    };
    Ok(Diagnostic {
        message: optional_string(env, plist, ":message", args::MAX_NAME_BYTES)?.unwrap_or_default(),
        severity: optional_string(env, plist, ":severity", 64)?.unwrap_or_else(|| "error".to_string()),
        source: optional_string(env, plist, ":source", args::MAX_NAME_BYTES)?,
        code,
        line,
        column,
        end_line: integer_or(env, plist, ":end-line", line)?,
        end_column: integer_or(env, plist, ":end-column", column)?,
    })
}

/// Answer the request KEY with PLIST: (:accepted TEXT) or (:rejected REASON-OR-NIL) for an
/// open-diff; (:content TEXT-OR-NIL) for a close-diff; (:files ((:path P :diagnostics (DIAG
/// ...)) ...)) for diagnostics, each DIAG (:message M :severity "error"|"warning"|"info"|"hint"
/// :source S :code C :line L :column C :end-line L :end-column C), 1-based; (:ok t) or (:error
/// MESSAGE) for an open-file. Return t if the request was still waiting.
#[defun]
fn ide_answer<'e>(env: &'e Env, key: Value<'e>, plist: Value<'e>) -> Result<bool> {
    let key = u64::try_from(args::integer(env, key, "KEY")?).unwrap_or(0);
    check_plist(env, plist, "PLIST")?;
    let has =
        |property: &str| -> Result<bool> { Ok(env.call("plist-member", (plist, env.intern(property)?))?.is_not_nil()) };
    let answer = if has(":accepted")? {
        Answer::Accepted(args::string(
            env,
            get(env, plist, ":accepted")?,
            ":accepted",
            args::MAX_TEXT_BYTES,
        )?)
    } else if has(":rejected")? {
        Answer::Rejected(optional_string(env, plist, ":rejected", args::MAX_NAME_BYTES)?)
    } else if has(":content")? {
        Answer::Content(optional_string(env, plist, ":content", args::MAX_TEXT_BYTES)?)
    } else if has(":files")? {
        let mut files = Vec::new();
        let mut count = 0usize;
        for file in list_items(env, get(env, plist, ":files")?, ":files", MAX_LIST_ITEMS)? {
            let path = optional_string(env, file, ":path", args::MAX_NAME_BYTES)?.unwrap_or_default();
            let mut diagnostics = Vec::new();
            for diagnostic in list_items(env, get(env, file, ":diagnostics")?, ":diagnostics", MAX_LIST_ITEMS)? {
                count += 1;
                if count > MAX_LIST_ITEMS {
                    return errors::signal(env, Kind::Generic, "too many diagnostics");
                }
                diagnostics.push(read_diagnostic(env, diagnostic)?);
            }
            files.push(FileDiagnostics { path, diagnostics });
        }
        Answer::Diagnostics(files)
    } else if has(":ok")? {
        Answer::Opened(Ok(()))
    } else if has(":error")? {
        Answer::Opened(Err(optional_string(env, plist, ":error", args::MAX_NAME_BYTES)?
            .unwrap_or_else(|| "Emacs could not open the file".to_string())))
    } else {
        return errors::signal(
            env,
            Kind::Generic,
            "PLIST must hold :accepted, :rejected, :content, :files, :ok or :error",
        );
    };
    Ok(hub().is_some_and(|hub| hub.answer(key, answer)))
}

/// Set the editor context and send it to every client that can hear it: PLIST is (:files
/// ((:path P :timestamp MS :active BOOL :line L :column C :selected TEXT-OR-NIL [:start-line L
/// :start-column C :end-line L :end-column C]) ...)), lines 1-based, columns 0-based; the
/// optional region bounds say where the selection is (otherwise it ends at the cursor). At most
/// 10 files are kept, most recent first; only the active one keeps its cursor and selection,
/// and a selection is cut to 16 KiB. Return t if the companions run.
#[defun]
fn ide_set_context<'e>(env: &'e Env, plist: Value<'e>) -> Result<bool> {
    check_plist(env, plist, "PLIST")?;
    let mut files = Vec::new();
    for file in list_items(env, get(env, plist, ":files")?, ":files", MAX_CONTEXT_FILES_READ)? {
        let Some(path) = optional_string(env, file, ":path", args::MAX_NAME_BYTES)? else {
            continue;
        };
        let line = integer_or(env, file, ":line", 1)?;
        let column = integer_or(env, file, ":column", 0)?;
        let region = if get(env, file, ":start-line")?.is_not_nil() {
            Some(Selection {
                start_line: integer_or(env, file, ":start-line", line)?,
                start_column: integer_or(env, file, ":start-column", 0)?,
                end_line: integer_or(env, file, ":end-line", line)?,
                end_column: integer_or(env, file, ":end-column", column)?,
            })
        } else {
            None
        };
        files.push(OpenFile {
            path,
            timestamp: integer_or(env, file, ":timestamp", 0)?,
            active: get(env, file, ":active")?.is_not_nil(),
            line,
            column,
            selected: optional_string(env, file, ":selected", MAX_SELECTION_READ)?,
            region,
        });
    }
    let context = EditorContext::new(files);
    let s = state();
    match s.as_ref() {
        Some(companion) => {
            companion.set_context(context);
            Ok(true)
        }
        None => Ok(false),
    }
}

/// The strings of the list LIST.
pub(crate) fn string_items(env: &Env, list: Value<'_>, what: &str) -> Result<Vec<String>> {
    list_items(env, list, what, 1000)?
        .into_iter()
        .map(|item| args::string(env, item, what, args::MAX_NAME_BYTES))
        .collect()
}

/// The JSON text of Gemini CLI's discovery file for the server on PORT with TOKEN, serving
/// the directories WORKSPACE-LIST (absolute names).
#[defun]
fn ide_gemini_discovery<'e>(
    env: &'e Env,
    port: Value<'e>,
    token: Value<'e>,
    workspace_list: Value<'e>,
) -> Result<String> {
    let port = args::integer(env, port, "PORT")?;
    let Ok(port) = u16::try_from(port) else {
        return errors::signal(env, Kind::Generic, format!("Invalid port {port}"));
    };
    let token = args::string(env, token, "TOKEN", 1024)?;
    let workspaces = string_items(env, workspace_list, "WORKSPACE-LIST")?;
    match discovery::gemini_discovery(port, &token, &workspaces) {
        Ok(text) => Ok(text),
        Err(e) => errors::signal(env, Kind::Generic, e.to_string()),
    }
}

/// The JSON text of Claude Code's lock file for TOKEN, serving the directories WORKSPACE-LIST
/// (absolute names), owned by the live process PID (Emacs's).
#[defun]
fn ide_claude_lock<'e>(env: &'e Env, token: Value<'e>, workspace_list: Value<'e>, pid: Value<'e>) -> Result<String> {
    let token = args::string(env, token, "TOKEN", 1024)?;
    let workspaces = string_items(env, workspace_list, "WORKSPACE-LIST")?;
    let pid = args::integer(env, pid, "PID")?;
    let Ok(pid) = u32::try_from(pid) else {
        return errors::signal(env, Kind::Generic, format!("Invalid PID {pid}"));
    };
    match discovery::claude_lock(&token, &workspaces, pid) {
        Ok(text) => Ok(text),
        Err(e) => errors::signal(env, Kind::Generic, e.to_string()),
    }
}
