//! The executor's two drivers for Emacs, over one policy ([`agent_q_core::executor`]).
//!
//! - [`sync`]: `agent-q--core-execute` is the synchronous driver: each decision is asked as it
//!   comes (the approval function is called from here, the handler too). It serves
//!   `agent-q-execute-tool-calls`.
//! - [`asynchronous`]: `agent-q--core-call-start`, `-decide`, `-finish` and `-cancel` expose the
//!   same steps to the asynchronous driver in agent-q-async.el: they run whatever can run at once
//!   (guards, synchronous handlers) and stop at a step that needs waiting, returning it to Lisp:
//!   `(:done RESULT)`, `(:ask PENDING CONTEXT ARGS)` (a decision is needed; CONTEXT has
//!   `:optional t` when the call needs none and stops only for the user's approval rules),
//!   or `(:run PENDING HANDLER ARGS CONTEXT)` (an asynchronous handler must be started). PENDING
//!   is a user pointer holding the call between steps.
//! - [`host`]: what both drivers ask of Emacs (guards, the approval function, handlers,
//!   observers, the audit log), and [`read`]: a call plist read for the executor.
//!
//! The module registers no native tool ([`agent_q_core::native`], for Rust embedders of the
//! core): both drivers answer such a step with [`agent_q_core::executor::native_not_run`].
//!
//! A batch's options are read once, by `agent-q--core-options` (here), and passed to every
//! function of a batch as one value.
//!
//! Lisp is called back for approval (`agent-q--approval-call`), handlers
//! (`agent-q--call-handler`, `agent-q--call-handler-and-wait`), observers
//! (`agent-q--run-execution-hooks`), the audit log (`agent-q--audit`) and result formatting
//! (`agent-q--format-result`); all are defined in agent-q.el. No lock is held during any of
//! these calls, and no `RefCell` borrow either: a pending call is taken out of its cell while Lisp
//! runs on its behalf, so Lisp code that re-enters (cancels it, say) gets an error, never a panic.

use std::cell::RefCell;

use emacs::{defun, Env, IntoLisp, Result, Value};

use super::errors::{self, Kind};
use agent_q_core::executor::{self, CallContext, Options, Origin, ToolResult};
use agent_q_core::spec::SafetyLevel;

pub mod asynchronous;
pub mod host;
pub mod read;
pub mod sync;

/// Lisp functions the executor calls on every tool call, as global references to their symbols
/// (they are defined in agent-q.el and in this module, after the module's init): calling them
/// by name would intern a C string each time.
#[allow(missing_docs)]
mod callee {
    emacs::use_symbols! {
        call_handler => "agent-q--call-handler"
        execute_chunk => "agent-q--core-execute-chunk"
        kw_done => ":done"
        origin_emacs => "emacs"
        origin_mcp => "mcp"
    }

    emacs::use_functions! {
        nthcdr nconc
    }
}

fn keyword<'e>(env: &'e Env, name: &str) -> Result<Value<'e>> {
    env.intern(&format!(":{name}"))
}

fn opt_string<'e>(env: &'e Env, s: Option<&str>) -> Result<Value<'e>> {
    match s {
        Some(s) => s.into_lisp(env),
        None => env.intern("nil"),
    }
}

/// The options of one batch of calls, read once from Lisp and shared by its calls.
#[derive(Debug, Clone)]
pub struct BatchOptions {
    opts: Options,
    ctx: CallContext,
}

type Batch = RefCell<BatchOptions>;

/// The options and context that OPTIONS (from `agent-q--core-options') holds, or an
/// `agent-q-error` when it is something else.
fn batch_options(env: &Env, options: Value<'_>) -> Result<(Options, CallContext)> {
    match options.into_rust::<&Batch>() {
        Ok(cell) => {
            let b = cell.borrow();
            Ok((b.opts.clone(), b.ctx.clone()))
        }
        Err(_) => errors::signal(
            env,
            Kind::Generic,
            format!(
                "OPTIONS must be the options of a batch from agent-q--core-options, not a {}",
                crate::args::type_name(env, options)
            ),
        ),
    }
}

/// The executor's options for one batch of calls, from the plist PLIST, for
/// `agent-q--core-execute' and `agent-q--core-call-start':
/// :max-result-chars caps each result's content (0: no cap), :max-argument-bytes caps the
/// strings of each call, :hooks non-nil means observers are installed, :confirm lists the safety
/// levels (keywords) whose calls need approval besides `:dangerous', which always does,
/// :audit-all non-nil audits safe calls too, :client names where the calls come from (nil, a
/// string, or (:client LABEL :mcp-client NAME :channel CHANNEL) from the MCP server's driver),
/// and :rules
/// non-nil means the user has approval rules: a call that needs no decision is then offered to
/// `agent-q--approval-call' all the same, with :optional t in its context (it runs as without
/// rules when the answer is `:auto').
#[defun]
fn options<'e>(env: &'e Env, plist: Value<'e>) -> Result<Value<'e>> {
    if !env.call("proper-list-p", (plist,))?.is_not_nil() {
        return errors::signal(env, Kind::Generic, "OPTIONS must be a plist");
    }
    let get = |key: &str| -> Result<Value<'e>> { env.call("plist-get", (plist, keyword(env, key)?)) };
    let max_result_chars = crate::args::integer(env, get("max-result-chars")?, ":max-result-chars")?;
    let max_argument_bytes = crate::args::integer(env, get("max-argument-bytes")?, ":max-argument-bytes")?;
    let mut levels = Vec::new();
    for name in crate::registry::name_list(env, get("confirm")?, "The safety levels to confirm")? {
        match name.parse::<SafetyLevel>() {
            Ok(level) => levels.push(level),
            Err(e) => return errors::signal(env, Kind::Generic, e.problem),
        }
    }
    let opts = Options {
        max_result_chars: usize::try_from(max_result_chars).unwrap_or(0),
        max_argument_bytes: usize::try_from(max_argument_bytes).unwrap_or(0),
        hooks: get("hooks")?.is_not_nil(),
        confirm: levels,
        audit_all: get("audit-all")?.is_not_nil(),
        consult_rules: get("rules")?.is_not_nil(),
        review_intact: crate::registry::review_definition_intact(env)?,
    };
    let ctx = context(env, get("client")?)?;
    RefCell::new(BatchOptions { opts, ctx }).into_lisp(env)
}

/// The length of CALLS, a list of tool-call plists, or an `agent-q-error` when it is no batch:
/// a circular or dotted list, or one longer than a batch may be (whichever driver runs it).
#[defun]
fn batch_length(env: &Env, calls: Value<'_>) -> Result<i64> {
    let length = env.call("proper-list-p", (calls,))?;
    let length = if length.is_not_nil() {
        Some(usize::try_from(length.into_rust::<i64>()?).unwrap_or(usize::MAX))
    } else {
        None
    };
    match executor::batch_length(length) {
        Ok(n) => Ok(i64::try_from(n).unwrap_or(i64::MAX)),
        Err(message) => errors::signal(env, Kind::Generic, message),
    }
}

/// The result of CALL (a tool-call plist, or anything) that failed outside the executor, with
/// MESSAGE: the shape of every other result, with CALL's id when it has a string one.
#[defun]
fn failure<'e>(env: &'e Env, call: Value<'e>, message: Value<'e>) -> Result<Value<'e>> {
    let message = crate::args::string(env, message, "MESSAGE", 1 << 20)?;
    super::convert::result_value(env, &ToolResult::failure(read::call_id(env, call), message))
}

/// The context of a batch from its CLIENT option: nil, a string (a client inside Emacs, such
/// as a bridge), or `(:client LABEL :mcp-client NAME :channel CHANNEL)` from the MCP server's
/// driver (LABEL names the client for the user, NAME is its `clientInfo` name, CHANNEL the
/// hub's channel of the call, see [`executor::channel_of`]; without one, each batch is a channel
/// of its own). Only a driver passes the last form: it is what makes a call's origin MCP.
fn context(env: &Env, client: Value<'_>) -> Result<CallContext> {
    if !client.is_not_nil() {
        return Ok(CallContext::default());
    }
    if env.call("stringp", (client,))?.is_not_nil() {
        return Ok(CallContext {
            client: Some(crate::registry::string_arg(env, client, "The client")?),
            origin: Origin::Emacs,
            channel: None,
        });
    }
    let field = |key: &str| -> Result<Option<String>> {
        let v = env.call("plist-get", (client, env.intern(key)?))?;
        if v.is_not_nil() {
            Ok(Some(crate::registry::string_arg(env, v, "The client")?))
        } else {
            Ok(None)
        }
    };
    if !env.call("proper-list-p", (client,))?.is_not_nil() {
        return errors::signal(
            env,
            Kind::Generic,
            "CLIENT must be nil, a string or (:client LABEL :mcp-client NAME)",
        );
    }
    let label = field(":client")?;
    match field(":mcp-client")? {
        Some(name) => Ok(CallContext {
            client: label,
            origin: Origin::mcp(&name),
            channel: field(":channel")?,
        }),
        None => errors::signal(
            env,
            Kind::Generic,
            "CLIENT must be nil, a string or (:client LABEL :mcp-client NAME): :mcp-client is missing",
        ),
    }
}
