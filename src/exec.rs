//! The executor's two drivers for Emacs, over one policy ([`agent_q_core::executor`]).
//!
//! - `agent-q--core-execute` is the synchronous driver: each decision is asked as it comes
//!   (the approval function is called from here, the handler too), as
//!   `agent-q-execute-tool-calls` has always worked.
//! - `agent-q--core-call-start`, `-decide`, `-finish` and `-cancel` expose the same steps to the
//!   asynchronous driver in agent-q.el: they run whatever can run at once (guards, synchronous
//!   handlers) and stop at a step that needs waiting, returning it to Lisp:
//!   `(:done RESULT)`, `(:ask PENDING CONTEXT ARGS)` (a decision is needed; CONTEXT has
//!   `:optional t` when the call needs none and stops only for the user's approval rules),
//!   `(:run PENDING HANDLER ARGS CONTEXT)` (an asynchronous handler must be started) or
//!   `(:wait PENDING TICKET TOOL)` (a native tool runs off Emacs's main thread; its outcome comes back
//!   through the channel of [`super::channel`], when one is open). PENDING is a user pointer
//!   holding the call between steps.
//!
//! Lisp is called back for approval (`agent-q--approval-call`), handlers
//! (`agent-q--call-handler`, `agent-q--call-handler-and-wait`), observers
//! (`agent-q--run-execution-hooks`), the audit log (`agent-q--audit`) and result formatting
//! (`agent-q--format-result`); all are defined in agent-q.el. No lock is held during any of
//! these calls, and no `RefCell` borrow either: a pending call is taken out of its cell while Lisp
//! runs on its behalf, so Lisp code that re-enters (cancels it, say) gets an error, never a panic.

use std::cell::RefCell;

use emacs::{defun, Env, IntoLisp, Result, Value};
use serde_json::{Map, Value as Json};

use super::convert::{self, Limits, Used, WalkError};
use super::errors::{self, Kind};
use super::registry::{own, resolve, LispHandler, Shared};
use agent_q_core::error::ConvertError;
use agent_q_core::executor::{
    self, ApprovalFailure, Ask, AuditRecord, Call, CallArguments, CallContext, Effects, GuardAnswer, Handler, Host,
    LispTool, Options, Origin, Outcome, Phase, StageError, Step, ToolCall, ToolResult,
};
use agent_q_core::sexp::Sexp;
use agent_q_core::spec::SafetyLevel;

use super::convert::lisp::{cons, kw_arguments, kw_client, kw_id, kw_name, nil, string, t as lisp_t};
use callee::kw_done;

/// Lisp functions the executor calls on every tool call, as global references to their symbols
/// (they are defined in agent-q.el and in this module, after the module's init): calling them
/// by name interned a C string each time.
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

/// The most calls one batch may hold.
const MAX_CALLS: usize = 100_000;

/// The most of a handler's result the module copies out of Emacs (the executor then caps it at
/// `agent-q-max-result-chars`): a bound on memory, whatever a handler returns.
const MAX_RESULT_BYTES: usize = 64 << 20;

pub use super::quit::quit_requested;

struct EmacsHost<'e> {
    env: &'e Env,
    /// The Lisp values of the call being run, when the driver read them (the synchronous one
    /// does): handed back to Lisp as they are instead of as copies.
    given: Given<'e>,
}

/// Lisp values a call was given, kept to be handed back as they are.
#[derive(Default)]
struct Given<'e> {
    /// The call's `:id` string, with its text.
    id: Option<(String, Value<'e>)>,
    /// The call's `:name` string, with its text.
    name: Option<(String, Value<'e>)>,
}

impl<'e> Given<'e> {
    /// TEXT as a Lisp string: the given value when it has that text, else a new string.
    fn string(env: &'e Env, given: &Option<(String, Value<'e>)>, text: &str) -> Result<Value<'e>> {
        match given {
            Some((given, v)) if given == text => Ok(*v),
            _ => text.into_lisp(env),
        }
    }
}

fn keyword<'e>(env: &'e Env, name: &str) -> Result<Value<'e>> {
    env.intern(&format!(":{name}"))
}

fn level_keyword(env: &Env, level: SafetyLevel) -> Result<Value<'_>> {
    keyword(env, level.as_str())
}

fn opt_string<'e>(env: &'e Env, s: Option<&str>) -> Result<Value<'e>> {
    match s {
        Some(s) => s.into_lisp(env),
        None => env.intern("nil"),
    }
}

/// The first element of a signal's data when it is a string: the message a handler gave to
/// `agent-q-tool-fail' or `agent-q-tool-deny'.
fn signal_message(env: &Env, err: &emacs::Error) -> Option<String> {
    match err.downcast_ref::<emacs::ErrorKind>() {
        Some(emacs::ErrorKind::Signal { data, .. }) => {
            // SAFETY: the error came from a call on this env during the current module call.
            let data = unsafe { data.value(env) };
            let first = env.call("car-safe", (data,)).ok()?;
            convert::read_string(first, 1 << 20).ok()
        }
        _ => None,
    }
}

/// Whether ERR is a signal of SYMBOL (or of an error symbol under it).
fn signals(env: &Env, err: &emacs::Error, symbol: &'static emacs::GlobalRef) -> bool {
    let Some(emacs::ErrorKind::Signal { symbol: sym, .. }) = err.downcast_ref::<emacs::ErrorKind>() else {
        return false;
    };
    // SAFETY: the error came from a call on this env during the current module call.
    let sym = unsafe { sym.value(env) };
    env.intern("error-conditions")
        .and_then(|prop| env.call("get", (sym, prop)))
        .and_then(|conditions| env.call("memq", (symbol.bind(env), conditions)))
        .map(|found| found.is_not_nil())
        .unwrap_or(false)
}

/// The outcome of a handler that signalled ERR.
fn error_outcome(env: &Env, err: &emacs::Error) -> Outcome {
    if convert::is_quit(env, err) {
        return Outcome::Failure("Tool error: interrupted by the user (C-g)".into());
    }
    if signals(env, err, errors::agent_q_tool_denied) {
        return Outcome::Denied(signal_message(env, err).unwrap_or_else(|| "Tool execution denied".into()));
    }
    if signals(env, err, errors::agent_q_tool_failure) {
        return Outcome::Failure(signal_message(env, err).unwrap_or_else(|| "Tool failed".into()));
    }
    Outcome::Failure(format!("Tool error: {}", convert::error_message(env, err)))
}

impl<'e> EmacsHost<'e> {
    fn plist(&self, args: &Map<String, Json>) -> Result<Value<'e>> {
        convert::json_value(self.env, &Json::Object(args.clone()))
    }

    /// A handler's return value as text for the model.
    fn format(&self, v: Value<'e>) -> std::result::Result<String, String> {
        let env = self.env;
        if !v.is_not_nil() {
            return Ok("nil".into());
        }
        let too_large = |e: &ConvertError| match e {
            ConvertError::TooLarge { size, .. } => Some(format!(
                "Tool error: the result is {size} bytes, more than agent-q reads ({MAX_RESULT_BYTES} bytes); \
                 return a smaller part"
            )),
            _ => None,
        };
        let is_string = env.type_of(v).map(|t| *string == t).unwrap_or(false);
        if is_string {
            match convert::read_string(v, MAX_RESULT_BYTES) {
                Ok(s) => return Ok(s),
                Err(WalkError::Convert(e)) => {
                    if let Some(msg) = too_large(&e) {
                        return Err(msg);
                    }
                    // Raw bytes: printed below, escaped.
                }
                Err(WalkError::Emacs(e)) => return Err(format!("Tool error: {}", convert::error_message(env, &e))),
            }
        }
        // Anything else is printed by Lisp, with bounded depth and length.
        let printed = env.call("agent-q--format-result", (v,)).map_err(|e| {
            format!(
                "Tool error: cannot format the result: {}",
                convert::error_message(env, &e)
            )
        })?;
        match convert::read_string(printed, MAX_RESULT_BYTES) {
            Ok(s) => Ok(s),
            Err(WalkError::Convert(e)) => {
                Err(too_large(&e).unwrap_or_else(|| format!("Tool error: cannot read the result: {e}")))
            }
            Err(WalkError::Emacs(e)) => Err(format!("Tool error: {}", convert::error_message(env, &e))),
        }
    }

    /// The context a handler runs in, bound to `agent-q-call-context':
    /// (:id ID :tool NAME :client C :origin O :approved BOOL :reason R :file F), F the file the
    /// guard pinned (see [`executor::GuardAnswer::file`]).
    fn handler_context(&self, call: &Call) -> Result<Value<'e>> {
        let env = self.env;
        env.list(&[
            keyword(env, "id")?,
            opt_string(env, call.id())?,
            keyword(env, "tool")?,
            call.tool().into_lisp(env)?,
            keyword(env, "client")?,
            opt_string(env, call.client())?,
            keyword(env, "origin")?,
            origin_symbol(env, call.origin()),
            keyword(env, "approved")?,
            call.approved_by_user().into_lisp(env)?,
            keyword(env, "reason")?,
            opt_string(env, call.reason())?,
            keyword(env, "file")?,
            opt_string(env, call.file())?,
        ])
    }

    /// The context of a decision, bound to `agent-q-approval-context':
    /// (:tool :safety-level :reason :protected :file :review :tool-id :client :id), and
    /// `:optional t` at the end
    /// for a call that needs no decision and stops only for the user's approval rules.
    fn ask_context(&self, ask: &Ask, call: &Call) -> Result<Value<'e>> {
        let env = self.env;
        let mut items = vec![
            keyword(env, "tool")?,
            ask.tool.as_str().into_lisp(env)?,
            keyword(env, "safety-level")?,
            level_keyword(env, ask.level)?,
            keyword(env, "reason")?,
            opt_string(env, ask.reason.as_deref())?,
            keyword(env, "protected")?,
            ask.protected.into_lisp(env)?,
            keyword(env, "file")?,
            opt_string(env, ask.file.as_deref())?,
            keyword(env, "review")?,
            ask.review.into_lisp(env)?,
            keyword(env, "tool-id")?,
            i64::try_from(ask.tool_id).unwrap_or(i64::MAX).into_lisp(env)?,
            keyword(env, "client")?,
            opt_string(env, ask.client.as_deref())?,
            keyword(env, "origin")?,
            origin_symbol(env, &ask.origin),
            keyword(env, "id")?,
            opt_string(env, call.id())?,
        ];
        if let Some(name) = ask.origin.mcp_name() {
            items.push(keyword(env, "mcp-client")?);
            items.push(name.into_lisp(env)?);
        }
        if ask.optional {
            items.push(keyword(env, "optional")?);
            items.push(lisp_t.bind(env));
        }
        env.list(&items)
    }

    fn outcome_of(&self, result: Result<Value<'e>>) -> Outcome {
        match result {
            Ok(v) => match self.format(v) {
                Ok(text) => Outcome::Success(text),
                Err(message) => Outcome::Failure(message),
            },
            Err(e) => error_outcome(self.env, &e),
        }
    }
}

impl<'e> Effects for EmacsHost<'e> {
    fn observe(&mut self, phase: Phase, tool: &str, args: &Map<String, Json>, result: Option<&ToolResult>) {
        let env = self.env;
        let run = || -> Result<()> {
            let result = match result {
                Some(r) => convert::result_value(env, r)?,
                None => env.intern("nil")?,
            };
            env.call(
                "agent-q--run-execution-hooks",
                (keyword(env, phase.as_str())?, tool, self.plist(args)?, result),
            )?;
            Ok(())
        };
        // The Lisp side already contains each hook's errors; this only guards the call itself.
        let _ = run();
    }

    fn audit(&mut self, record: &AuditRecord) {
        let env = self.env;
        let line = record.to_json_line();
        let summary = format!(
            "{} {} [{}] {}{}{}{}",
            record.event,
            record.tool,
            record
                .safety_level
                .map_or_else(|| "no such tool".to_string(), |level| level.to_string()),
            record.decision,
            record
                .status
                .map(|s| match s {
                    executor::Status::Success => " ok",
                    executor::Status::Failure => " failed",
                    executor::Status::Denied => " denied",
                    executor::Status::Cancelled => " cancelled",
                })
                .unwrap_or(""),
            record
                .client
                .as_deref()
                .map(|c| format!(" (from {c})"))
                .unwrap_or_default(),
            record
                .rule
                .as_deref()
                .map(|r| format!(" by the rule: {r}"))
                .unwrap_or_default()
        );
        // The tool's name, the client and the rule may come from a client: one visible line.
        let summary = agent_q_core::visible::visible(&summary);
        let _ = env.call("agent-q--audit", (line, summary));
    }
}

impl<'e> Host for EmacsHost<'e> {
    type Lisp = LispHandler;

    fn guard(&mut self, guard: &LispHandler, args: &Map<String, Json>) -> std::result::Result<GuardAnswer, String> {
        let env = self.env;
        let table = convert::object_for_handler(env, args).map_err(|e| convert::error_message(env, &e))?;
        match env.call(guard.bind(env), (table,)) {
            Ok(v) if !v.is_not_nil() => Ok(GuardAnswer::default()),
            Ok(v) => match convert::read_string(v, 1 << 16) {
                Ok(reason) => Ok(GuardAnswer::from(Some(reason))),
                Err(_) => guard_plist(env, v)
                    .map_err(|e| convert::error_message(env, &e))?
                    .ok_or_else(|| {
                        "it returned something other than nil, a reason string or (:reason R :protected P :file F)"
                            .to_string()
                    }),
            },
            Err(e) if convert::is_quit(env, &e) => Err("interrupted by the user (C-g)".into()),
            Err(e) => Err(convert::error_message(env, &e)),
        }
    }

    fn approve(&mut self, ask: &Ask, call: &Call) -> std::result::Result<Sexp, ApprovalFailure> {
        let env = self.env;
        let fail = |e: &emacs::Error| {
            if convert::is_quit(env, e) {
                ApprovalFailure::Quit
            } else {
                ApprovalFailure::Signalled(convert::error_message(env, e))
            }
        };
        let context = self.ask_context(ask, call).map_err(|e| fail(&e))?;
        let plist = self.plist(call.args()).map_err(|e| fail(&e))?;
        let answer = env
            .call("agent-q--approval-call", (ask.tool.as_str(), plist, context))
            .map_err(|e| fail(&e))?;
        match convert::to_sexp(env, answer, Limits::default()) {
            Ok(v) => Ok(v),
            Err(WalkError::Convert(e)) => Err(ApprovalFailure::Signalled(format!("its answer cannot be read: {e}"))),
            Err(WalkError::Emacs(e)) => Err(fail(&e)),
        }
    }

    fn run_handler(&mut self, tool: &LispTool<LispHandler>, call: &Call) -> Outcome {
        let env = self.env;
        if !tool.asynchronous {
            // The context plist is built by agent-q.el, in byte code, from its parts: building
            // it here took one call into Emacs per element.
            let prepared = handler_args(env, tool.run.bind(env), &self.given, call);
            return match prepared {
                Ok(args) => self.outcome_of(env.call(callee::call_handler, args)),
                Err(e) => Outcome::Failure(format!("Tool error: {}", convert::error_message(env, &e))),
            };
        }
        let prepared =
            convert::object_for_handler(env, call.args()).and_then(|table| Ok((table, self.handler_context(call)?)));
        let (table, context) = match prepared {
            Ok(p) => p,
            Err(e) => return Outcome::Failure(format!("Tool error: {}", convert::error_message(env, &e))),
        };
        // An asynchronous handler, driven synchronously: Lisp waits (a recursive edit) for its
        // callback and returns (STATUS . VALUE).
        match env.call("agent-q--call-handler-and-wait", (tool.run.bind(env), table, context)) {
            Ok(pair) => answer_outcome(self, pair),
            Err(e) => error_outcome(env, &e),
        }
    }

    fn should_quit(&mut self) -> bool {
        quit_requested(self.env)
    }
}

/// A guard's plist answer (:reason R :protected P :file F) as a [`GuardAnswer`]; `None` when V
/// is not such a plist (R and F strings or nil).
fn guard_plist(env: &Env, v: Value<'_>) -> Result<Option<GuardAnswer>> {
    // A plist of at most these three keys, nothing else: any other value is not an answer.
    let len = env.call("proper-list-p", (v,))?;
    let Ok(len) = (if len.is_not_nil() {
        len.into_rust::<i64>()
    } else {
        Ok(-1)
    }) else {
        return Ok(None);
    };
    if len <= 0 || len % 2 != 0 || len > 6 {
        return Ok(None);
    }
    let keys = ["reason", "protected", "file"];
    for i in (0..len).step_by(2) {
        let key = env.call("nth", (i, v))?;
        let mut known = false;
        for k in keys {
            known |= env.call("eq", (key, keyword(env, k)?))?.is_not_nil();
        }
        if !known {
            return Ok(None);
        }
    }
    let get = |key: &str| -> Result<Value<'_>> { env.call("plist-get", (v, keyword(env, key)?)) };
    let text = |key: &str| -> Result<Option<Option<String>>> {
        let x = get(key)?;
        if !x.is_not_nil() {
            return Ok(Some(None));
        }
        Ok(convert::read_string(x, 1 << 16).ok().map(Some))
    };
    let (Some(reason), Some(file)) = (text("reason")?, text("file")?) else {
        return Ok(None);
    };
    Ok(Some(GuardAnswer {
        reason,
        protected: get("protected")?.is_not_nil(),
        file,
    }))
}

/// The symbol of ORIGIN: `emacs` or `mcp`.
fn origin_symbol<'e>(env: &'e Env, origin: &Origin) -> Value<'e> {
    match origin {
        Origin::Emacs => callee::origin_emacs.bind(env),
        Origin::Mcp { .. } => callee::origin_mcp.bind(env),
    }
}

/// The arguments of `agent-q--call-handler': (HANDLER ARGS ID TOOL CLIENT APPROVED REASON FILE
/// ORIGIN).
fn handler_args<'a>(env: &'a Env, run: Value<'a>, given: &Given<'a>, call: &Call) -> Result<[Value<'a>; 9]> {
    let no = nil.bind(env);
    Ok([
        run,
        convert::object_for_handler(env, call.args())?,
        match call.id() {
            Some(id) => Given::string(env, &given.id, id)?,
            None => no,
        },
        Given::string(env, &given.name, call.tool())?,
        match call.client() {
            Some(c) => c.into_lisp(env)?,
            None => no,
        },
        if call.approved_by_user() { lisp_t.bind(env) } else { no },
        match call.reason() {
            Some(r) => r.into_lisp(env)?,
            None => no,
        },
        match call.file() {
            Some(f) => f.into_lisp(env)?,
            None => no,
        },
        origin_symbol(env, call.origin()),
    ])
}

/// An asynchronous handler's answer `(STATUS . VALUE)`, STATUS `:success`, `:failure` or `:denied`.
fn answer_outcome<'e>(host: &EmacsHost<'e>, pair: Value<'e>) -> Outcome {
    let env = host.env;
    let parts = || -> Result<(String, Value<'e>)> {
        let status: Value<'e> = env.call("car-safe", (pair,))?;
        let value: Value<'e> = env.call("cdr-safe", (pair,))?;
        if !env.call("symbolp", (status,))?.is_not_nil() {
            return Ok((format!("a {}", super::args::type_name(env, status)), value));
        }
        let name = env.call("symbol-name", (status,))?;
        Ok((convert::read_string(name, 64).unwrap_or_default(), value))
    };
    match parts() {
        Ok((status, value)) => {
            let text = host.format(value);
            match (status.as_str(), text) {
                (":success", Ok(text)) => Outcome::Success(text),
                (":denied", Ok(text)) => Outcome::Denied(text),
                (":failure", Ok(text)) => Outcome::Failure(text),
                (":cancelled", Ok(text)) => Outcome::Cancelled(text),
                (_, Err(message)) => Outcome::Failure(message),
                (other, Ok(_)) => Outcome::Failure(format!(
                    "Tool error: the handler answered with the status {other}, not :success, :failure or :denied"
                )),
            }
        }
        Err(e) => error_outcome(env, &e),
    }
}

fn options(
    env: &Env,
    max_result_chars: Value<'_>,
    max_argument_bytes: Value<'_>,
    hooks: Value<'_>,
    confirm: Value<'_>,
    audit_all: Value<'_>,
    rules: Value<'_>,
) -> Result<Options> {
    let max_result_chars = super::args::integer(env, max_result_chars, "MAX-RESULT-CHARS")?;
    let max_argument_bytes = super::args::integer(env, max_argument_bytes, "MAX-ARGUMENT-BYTES")?;
    let mut levels = Vec::new();
    for name in super::registry::name_list(env, confirm, "The safety levels to confirm")? {
        match name.parse::<SafetyLevel>() {
            Ok(level) => levels.push(level),
            Err(e) => return errors::signal(env, Kind::Generic, e.problem),
        }
    }
    Ok(Options {
        max_result_chars: usize::try_from(max_result_chars).unwrap_or(0),
        max_argument_bytes: usize::try_from(max_argument_bytes).unwrap_or(0),
        hooks: hooks.is_not_nil(),
        confirm: levels,
        audit_all: audit_all.is_not_nil(),
        consult_rules: rules.is_not_nil(),
        review_intact: super::registry::review_definition_intact(env)?,
    })
}

/// The context of a batch from its CLIENT argument: nil, a string (a client inside Emacs, such
/// as a bridge), or `(:client LABEL :mcp-client NAME)` from the MCP server's driver (LABEL names
/// the client for the user, NAME is its `clientInfo` name). Only a driver passes the last form:
/// it is what makes a call's origin MCP.
fn context(env: &Env, client: Value<'_>) -> Result<CallContext> {
    if !client.is_not_nil() {
        return Ok(CallContext::default());
    }
    if env.call("stringp", (client,))?.is_not_nil() {
        return Ok(CallContext {
            client: Some(super::registry::string_arg(env, client, "The client")?),
            origin: Origin::Emacs,
        });
    }
    let field = |key: &str| -> Result<Option<String>> {
        let v = env.call("plist-get", (client, env.intern(key)?))?;
        if v.is_not_nil() {
            Ok(Some(super::registry::string_arg(env, v, "The client")?))
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
        }),
        None => errors::signal(
            env,
            Kind::Generic,
            "CLIENT must be nil, a string or (:client LABEL :mcp-client NAME): :mcp-client is missing",
        ),
    }
}

/// Convert one call for the executor; on failure, the failure result (with the call's id when
/// it can be read).
fn call_sexp(env: &Env, call: Value<'_>, opts: &Options) -> Result<std::result::Result<Sexp, ToolResult>> {
    let limits = Limits {
        max_bytes: opts.max_argument_bytes,
        ..Limits::default()
    };
    match convert::to_sexp(env, call, limits) {
        Ok(sx) => Ok(Ok(sx)),
        Err(WalkError::Convert(e)) => {
            let id = env.call("agent-q--call-id", (call,)).ok().and_then(|v| {
                if v.is_not_nil() {
                    convert::read_string(v, 4096).ok()
                } else {
                    None
                }
            });
            Ok(Err(ToolResult::failure(
                id,
                format!("Invalid tool call: cannot convert it: {e}"),
            )))
        }
        Err(WalkError::Emacs(e)) => Err(e),
    }
}

/// A tool call read from its plist without converting the whole plist, with the Lisp values
/// of its id and name kept to be handed back as they are.
struct LispCall<'e> {
    id: String,
    id_value: Value<'e>,
    name: String,
    name_value: Value<'e>,
    client: Option<String>,
    arguments: Option<Sexp>,
    /// The arguments of an MCP client's call, as the server parsed them (see
    /// [`super::mcp::take_arguments`]); `arguments` is then `None`.
    parsed_arguments: Option<Map<String, Json>>,
}

/// What the executor reads a call's arguments from: the parsed JSON the call carried, or else
/// its plist's `:arguments`.
fn call_arguments(sexp: Option<&Sexp>, parsed: Option<Map<String, Json>>) -> Option<CallArguments<'_>> {
    parsed
        .map(CallArguments::Json)
        .or_else(|| sexp.map(CallArguments::Sexp))
}

/// The most elements of a call plist [`read_call`] takes apart (`:id`, `:name`, `:arguments`
/// and `:client`, each once); anything longer takes the general path.
const READ_CALL_MAX_ELEMENTS: i64 = 8;

/// Read CALL as [`call_sexp`] and [`executor::parse_call`] would, for the usual shape only: a
/// plist of `:id` (a string), `:name` (a non-empty string), `:arguments` and `:client` (a
/// string), each at most once, keys recognised by identity. The limits are those of the whole
/// call (strings' bytes, elements, depth), as [`call_sexp`] applies them. Anything else, or any
/// value refused, gives `None`: the general path then reads the call and names the problem, so
/// every malformed or hostile call still gets exactly the result it got before.
fn read_call<'e>(env: &'e Env, call: Value<'e>, opts: &Options) -> Result<Option<LispCall<'e>>> {
    let limits = Limits {
        max_bytes: opts.max_argument_bytes,
        ..Limits::default()
    };
    if !call.is_not_nil() || *cons != env.type_of(call)? {
        return Ok(None);
    }
    let length = env.call(convert::lisp::proper_list_p, (call,))?;
    if !length.is_not_nil() {
        return Ok(None);
    }
    let length = length.into_rust::<i64>()?;
    if length % 2 != 0 || length > READ_CALL_MAX_ELEMENTS {
        return Ok(None);
    }
    let mut used = Used {
        bytes: 0,
        nodes: usize::try_from(length).unwrap_or(usize::MAX),
    };
    if used.nodes > limits.max_nodes {
        return Ok(None);
    }
    // A string value, counted against the limits; `None` when it is not a readable string.
    let text = |v: Value<'e>, used: &mut Used| -> Result<Option<String>> {
        if *string != env.type_of(v)? {
            return Ok(None);
        }
        match convert::read_string(v, limits.max_bytes.saturating_sub(used.bytes)) {
            Ok(s) => {
                used.bytes += s.len();
                Ok(Some(s))
            }
            Err(WalkError::Convert(_)) => Ok(None),
            Err(WalkError::Emacs(e)) => Err(e),
        }
    };
    let mut id = None;
    let mut name = None;
    let mut client = None;
    let mut arguments = None;
    let mut parsed_arguments = None;
    let mut cell = call;
    for _ in 0..length / 2 {
        let key: Value<'e> = cell.car()?;
        cell = cell.cdr()?;
        let value: Value<'e> = cell.car()?;
        cell = cell.cdr()?;
        if *kw_id == key && id.is_none() {
            // A label too long to echo is refused by parse_call, on the general path.
            let Some(s) = text(value, &mut used)?.filter(|s| s.len() <= executor::MAX_CALL_LABEL_BYTES) else {
                return Ok(None);
            };
            id = Some((s, value));
        } else if *kw_name == key && name.is_none() {
            let Some(s) = text(value, &mut used)?.filter(|s| !s.is_empty()) else {
                return Ok(None);
            };
            name = Some((s, value));
        } else if *kw_client == key && client.is_none() {
            let Some(s) = text(value, &mut used)?.filter(|s| s.len() <= executor::MAX_CALL_LABEL_BYTES) else {
                return Ok(None);
            };
            client = Some(s);
        } else if *kw_arguments == key && arguments.is_none() && parsed_arguments.is_none() {
            match convert::to_sexp_part(env, value, limits, 1, &mut used) {
                Ok(sx) => arguments = Some(sx),
                // Not a Lisp value the walk converts: the parsed arguments of an MCP call?
                Err(WalkError::Convert(_)) => match super::mcp::take_arguments(value) {
                    Some(map) => parsed_arguments = Some(map),
                    None => return Ok(None),
                },
                Err(WalkError::Emacs(e)) => return Err(e),
            }
        } else {
            return Ok(None);
        }
    }
    let (Some((id, id_value)), Some((name, name_value))) = (id, name) else {
        return Ok(None);
    };
    Ok(Some(LispCall {
        id,
        id_value,
        name,
        name_value,
        client,
        arguments,
        parsed_arguments,
    }))
}

/// Execute one tool-call plist CALL and return its result plist.
fn execute_one<'e>(
    env: &'e Env,
    registry: &Shared,
    opts: &Options,
    ctx: &CallContext,
    call: Value<'e>,
) -> Result<Value<'e>> {
    if let Some(lc) = read_call(env, call, opts)? {
        let mut host = EmacsHost {
            env,
            given: Given {
                id: Some((lc.id.clone(), lc.id_value)),
                name: Some((lc.name, lc.name_value)),
            },
        };
        let parsed = ToolCall {
            id: Some(lc.id),
            name: host.given.name.as_ref().map(|(n, _)| n.clone()).unwrap_or_default(),
            arguments: call_arguments(lc.arguments.as_ref(), lc.parsed_arguments),
            client: lc.client,
        };
        let result = executor::execute_parsed(registry, parsed, ctx, &mut host, opts);
        let id = host.given.id.as_ref().map(|(text, v)| (text.as_str(), *v));
        return convert::result_value_with_id(env, &result, id);
    }
    let mut host = EmacsHost {
        env,
        given: Given::default(),
    };
    let result = match call_sexp(env, call, opts)? {
        Ok(sx) => executor::execute_call(registry, &sx, ctx, &mut host, opts),
        Err(failure) => failure,
    };
    convert::result_value(env, &result)
}

/// How many calls of a batch run in one nested module call
/// ([`execute_chunk`]). Every Lisp value a module function makes stays alive until that
/// function returns (Emacs keeps them in the call's environment), so a batch run in one module
/// call kept all its calls' garbage (argument tables, contexts, copies) alive to its end, and
/// each garbage collection meanwhile marked all of it: with Emacs's default threshold that cost
/// more than the calls themselves. A nested call frees its values when it returns.
const CHUNK: usize = 32;

/// The registry, options and context of a batch, from the arguments `agent-q--core-execute' and
/// `agent-q--core-execute-chunk' share: MAX-RESULT-CHARS, MAX-ARGUMENT-BYTES, HOOKS, CONFIRM,
/// AUDIT-ALL, CLIENT and RULES, in that order.
fn batch<'e>(
    env: &'e Env,
    registry: Value<'e>,
    [max_result_chars, max_argument_bytes, hooks, confirm, audit_all, client, rules]: [Value<'e>; 7],
) -> Result<(&'e Shared, Options, CallContext)> {
    let shared = resolve(registry)?;
    let opts = options(
        env,
        max_result_chars,
        max_argument_bytes,
        hooks,
        confirm,
        audit_all,
        rules,
    )?;
    Ok((shared, opts, context(env, client)?))
}

/// Execute CALLS (a list of tool-call plists) against REGISTRY and return one result plist per
/// call, in order, deciding each approval as it comes. MAX-RESULT-CHARS caps each result's content
/// (0: no cap), MAX-ARGUMENT-BYTES caps the strings of each call, HOOKS non-nil means observers
/// are installed, CONFIRM lists the safety levels (keywords) whose calls need approval besides
/// `:dangerous', which always does, AUDIT-ALL non-nil audits safe calls too, CLIENT names
/// where the calls come from (nil for none), and RULES non-nil means the user has approval rules:
/// a call that needs no decision is then offered to `agent-q--approval-call' all the same, with
/// :optional t in its context (it runs as without rules when the answer is `:auto'). CALLS must
/// be a proper list: a circular or dotted one is refused before anything runs.
#[allow(clippy::too_many_arguments)]
#[defun]
fn execute<'e>(
    env: &'e Env,
    registry: Value<'e>,
    calls: Value<'e>,
    max_result_chars: Value<'e>,
    max_argument_bytes: Value<'e>,
    hooks: Value<'e>,
    confirm: Value<'e>,
    audit_all: Value<'e>,
    client: Value<'e>,
    rules: Value<'e>,
) -> Result<Value<'e>> {
    let (shared, opts, ctx) = batch(
        env,
        registry,
        [
            max_result_chars,
            max_argument_bytes,
            hooks,
            confirm,
            audit_all,
            client,
            rules,
        ],
    )?;
    let length = env.call("proper-list-p", (calls,))?;
    if !length.is_not_nil() {
        return errors::signal(
            env,
            Kind::Generic,
            "CALLS must be a proper list of tool-call plists (it is circular or dotted); nothing was run",
        );
    }
    let length = usize::try_from(length.into_rust::<i64>()?).unwrap_or(usize::MAX);
    if length > MAX_CALLS {
        return errors::signal(
            env,
            Kind::Generic,
            format!("CALLS holds {length} calls, more than {MAX_CALLS}; nothing was run"),
        );
    }
    if length <= CHUNK {
        let mut results = Vec::with_capacity(length);
        let mut cell = calls;
        for _ in 0..length {
            results.push(execute_one(env, shared, &opts, &ctx, cell.car()?)?);
            cell = cell.cdr()?;
        }
        return env.list(&results);
    }
    let mut parts = Vec::with_capacity(length / CHUNK + 1);
    let mut cell = calls;
    let mut left = length;
    while left > 0 {
        let n = left.min(CHUNK);
        parts.push(env.call(
            callee::execute_chunk,
            (
                registry,
                cell,
                n as i64,
                max_result_chars,
                max_argument_bytes,
                hooks,
                confirm,
                audit_all,
                client,
                rules,
            ),
        )?);
        cell = env.call(callee::nthcdr, (n as i64, cell))?;
        left -= n;
    }
    // The parts are fresh lists: joining them in place copies nothing.
    env.call(callee::nconc, &parts)
}

/// Execute the first COUNT (at most 32) calls of the list CALLS against REGISTRY, with the
/// options of `agent-q--core-execute', and return their results. `agent-q--core-execute' calls
/// it for each part of a long batch, so that each part's Lisp values are freed when it returns.
/// CALLS must hold COUNT calls (a shorter list signals).
#[allow(clippy::too_many_arguments)]
#[defun]
fn execute_chunk<'e>(
    env: &'e Env,
    registry: Value<'e>,
    calls: Value<'e>,
    count: Value<'e>,
    max_result_chars: Value<'e>,
    max_argument_bytes: Value<'e>,
    hooks: Value<'e>,
    confirm: Value<'e>,
    audit_all: Value<'e>,
    client: Value<'e>,
    rules: Value<'e>,
) -> Result<Value<'e>> {
    let (shared, opts, ctx) = batch(
        env,
        registry,
        [
            max_result_chars,
            max_argument_bytes,
            hooks,
            confirm,
            audit_all,
            client,
            rules,
        ],
    )?;
    let count = super::args::integer(env, count, "COUNT")?;
    let count = usize::try_from(count).unwrap_or(0).min(CHUNK);
    let mut results = Vec::with_capacity(count);
    let mut rest = calls;
    for _ in 0..count {
        if *cons != env.type_of(rest)? {
            return errors::signal(
                env,
                Kind::Generic,
                format!("CALLS holds fewer than {count} calls; nothing more was run"),
            );
        }
        results.push(execute_one(env, shared, &opts, &ctx, rest.car()?)?);
        rest = rest.cdr()?;
    }
    env.list(&results)
}

/// A call waiting between steps of the asynchronous driver.
pub struct PendingCall {
    registry: Shared,
    opts: Options,
    /// `None` while Lisp code runs on the call's behalf, and once it is done.
    call: Option<Call>,
}

type Pending = RefCell<PendingCall>;

fn stage_error<T>(env: &Env, e: StageError) -> Result<T> {
    errors::signal(env, Kind::Generic, e.to_string())
}

/// Run what can run at once, from STEP on, and return the step Lisp must act on, as a value.
/// PENDING is the call's user pointer, made when first needed.
fn advance<'e>(
    env: &'e Env,
    registry: &Shared,
    opts: &Options,
    mut call: Call,
    mut step: Step<LispHandler>,
    pending: Option<Value<'e>>,
    given: Given<'e>,
) -> Result<Value<'e>> {
    let mut host = EmacsHost { env, given };
    loop {
        let next = match step {
            Step::Done(result) => {
                if let Some(p) = pending {
                    p.into_rust::<&Pending>()?.borrow_mut().call = None;
                }
                let id = host.given.id.as_ref().map(|(text, v)| (text.as_str(), *v));
                return env.list((kw_done.bind(env), convert::result_value_with_id(env, &result, id)?));
            }
            Step::Guard(guard) => {
                let answer = host.guard(&guard, call.args());
                call.guarded(registry, answer, opts, &mut host)
            }
            Step::Run(Handler::Lisp(tool)) if !tool.asynchronous => {
                let outcome = host.run_handler(&tool, &call);
                call.finish(registry, outcome, opts, &mut host).map(Step::Done)
            }
            Step::Run(Handler::Native(tool)) if super::channel::is_open() => {
                // Off Emacs's main thread: the outcome comes back through the channel.
                let name = call.tool().to_string();
                let ticket = super::channel::start_native(tool, name.clone(), call.args().clone());
                let p = park(env, registry, opts, call, pending)?;
                return env.list((
                    keyword(env, "wait")?,
                    p,
                    i64::try_from(ticket).unwrap_or(i64::MAX),
                    name,
                ));
            }
            Step::Run(Handler::Native(tool)) => {
                let outcome = executor::run_native(tool.as_ref(), &call, || quit_requested(env));
                call.finish(registry, outcome, opts, &mut host).map(Step::Done)
            }
            Step::Ask(ask) => {
                let context = host.ask_context(&ask, &call)?;
                let args = host.plist(call.args())?;
                let p = park(env, registry, opts, call, pending)?;
                return env.list((keyword(env, "ask")?, p, context, args));
            }
            Step::Run(Handler::Lisp(tool)) => {
                let table = convert::object_for_handler(env, call.args())?;
                let context = host.handler_context(&call)?;
                let handler = own(env, &tool.run)?;
                let p = park(env, registry, opts, call, pending)?;
                return env.list((keyword(env, "run")?, p, handler, table, context));
            }
        };
        step = match next {
            Ok(s) => s,
            Err(e) => return stage_error(env, e),
        };
    }
}

/// Keep CALL in its user pointer (made now if it has none yet) until the next step.
fn park<'e>(
    env: &'e Env,
    registry: &Shared,
    opts: &Options,
    call: Call,
    pending: Option<Value<'e>>,
) -> Result<Value<'e>> {
    match pending {
        Some(p) => {
            p.into_rust::<&Pending>()?.borrow_mut().call = Some(call);
            Ok(p)
        }
        None => RefCell::new(PendingCall {
            registry: registry.clone(),
            opts: opts.clone(),
            call: Some(call),
        })
        .into_lisp(env),
    }
}

/// Take the call out of PENDING for a step; an error if Lisp is already working on it or it is
/// done.
/// The pending call PENDING holds, or an `agent-q-error` when it is something else.
fn pending_cell<'e>(env: &'e Env, pending: Value<'e>) -> Result<&'e Pending> {
    match pending.into_rust::<&Pending>() {
        Ok(cell) => Ok(cell),
        Err(_) => errors::signal(
            env,
            Kind::Generic,
            format!(
                "PENDING must be a pending call from agent-q--core-call-start, not a {}",
                super::args::type_name(env, pending)
            ),
        ),
    }
}

fn take<'e>(env: &'e Env, pending: Value<'e>) -> Result<(Shared, Options, Call)> {
    let cell = pending_cell(env, pending)?;
    let mut p = cell.borrow_mut();
    match p.call.take() {
        Some(call) => Ok((p.registry.clone(), p.opts.clone(), call)),
        None => errors::signal(
            env,
            Kind::Generic,
            "agent-q: this tool call is finished or being processed",
        ),
    }
}

/// Start CALL (a tool-call plist) against REGISTRY for the asynchronous driver, with the options
/// of `agent-q--core-execute'. Guards, synchronous handlers and native tools run at once.
/// Return `(:done RESULT)`, `(:ask PENDING CONTEXT ARGS)` or `(:run PENDING HANDLER ARGS CONTEXT)`.
#[allow(clippy::too_many_arguments)]
#[defun]
fn call_start<'e>(
    env: &'e Env,
    registry: Value<'e>,
    call: Value<'e>,
    max_result_chars: Value<'e>,
    max_argument_bytes: Value<'e>,
    hooks: Value<'e>,
    confirm: Value<'e>,
    audit_all: Value<'e>,
    client: Value<'e>,
    rules: Value<'e>,
) -> Result<Value<'e>> {
    let shared = resolve(registry)?.clone();
    let opts = options(
        env,
        max_result_chars,
        max_argument_bytes,
        hooks,
        confirm,
        audit_all,
        rules,
    )?;
    let ctx = context(env, client)?;
    if let Some(lc) = read_call(env, call, &opts)? {
        let mut host = EmacsHost {
            env,
            given: Given {
                id: Some((lc.id.clone(), lc.id_value)),
                name: Some((lc.name.clone(), lc.name_value)),
            },
        };
        let parsed = ToolCall {
            id: Some(lc.id),
            name: lc.name,
            arguments: call_arguments(lc.arguments.as_ref(), lc.parsed_arguments),
            client: lc.client,
        };
        let (c, step) = Call::start_parsed(&shared, parsed, &ctx, &opts, &mut host);
        return advance(env, &shared, &opts, c, step, None, host.given);
    }
    let sx = match call_sexp(env, call, &opts)? {
        Ok(sx) => sx,
        Err(failure) => return env.list((keyword(env, "done")?, convert::result_value(env, &failure)?)),
    };
    let mut host = EmacsHost {
        env,
        given: Given::default(),
    };
    let (c, step) = Call::start(&shared, &sx, &ctx, &opts, &mut host);
    drop(sx);
    advance(env, &shared, &opts, c, step, None, Given::default())
}

/// Resume PENDING, which waits for a decision, with DECISION (as an approval function returns
/// it). The tool is looked up again first: one that changed meanwhile does not run.
#[defun]
fn call_decide<'e>(env: &'e Env, pending: Value<'e>, decision: Value<'e>) -> Result<Value<'e>> {
    let (registry, opts, mut call) = take(env, pending)?;
    let parsed = match convert::to_sexp(env, decision, Limits::default()) {
        Ok(s) => executor::parse_decision(&s),
        Err(WalkError::Convert(e)) => executor::Decision::Invalid(format!(
            "the approval function returned a value that cannot be read: {e}"
        )),
        Err(WalkError::Emacs(e)) => {
            pending_cell(env, pending)?.borrow_mut().call = Some(call);
            return Err(e);
        }
    };
    let mut host = EmacsHost {
        env,
        given: Given::default(),
    };
    match call.decide(&registry, parsed, &opts, &mut host) {
        Ok(step) => advance(env, &registry, &opts, call, step, Some(pending), Given::default()),
        Err(e) => stage_error(env, e),
    }
}

/// Finish PENDING, whose asynchronous handler answered VALUE with STATUS (`:success', `:failure',
/// `:denied' or `:cancelled'). Return `(:done RESULT)`.
#[defun]
fn call_finish<'e>(env: &'e Env, pending: Value<'e>, status: Value<'e>, value: Value<'e>) -> Result<Value<'e>> {
    let (registry, opts, mut call) = take(env, pending)?;
    let host = EmacsHost {
        env,
        given: Given::default(),
    };
    let outcome = answer_outcome(&host, env.cons(status, value)?);
    let mut host = host;
    match call.finish(&registry, outcome, &opts, &mut host) {
        Ok(result) => advance(
            env,
            &registry,
            &opts,
            call,
            Step::Done(result),
            Some(pending),
            Given::default(),
        ),
        Err(e) => stage_error(env, e),
    }
}

/// Cancel PENDING with REASON (nothing more of it runs). Return `(:done RESULT)`, or nil when it
/// is finished or Lisp is working on it at this moment.
#[defun]
fn call_cancel<'e>(env: &'e Env, pending: Value<'e>, reason: Value<'e>) -> Result<Value<'e>> {
    let cell = pending_cell(env, pending)?;
    let reason = super::args::string(env, reason, "REASON", super::args::MAX_NAME_BYTES)?;
    let taken = {
        let mut p = cell.borrow_mut();
        p.call.take().map(|c| (p.registry.clone(), p.opts.clone(), c))
    };
    let Some((registry, opts, mut call)) = taken else {
        return env.intern("nil");
    };
    let mut host = EmacsHost {
        env,
        given: Given::default(),
    };
    match call.cancel(&registry, &reason, &opts, &mut host) {
        Ok(result) => env.list((keyword(env, "done")?, convert::result_value(env, &result)?)),
        Err(e) => stage_error(env, e),
    }
}

/// What PENDING is: (:id ID :tool NAME :client CLIENT :stage STAGE), STAGE one of :guard :asking
/// :running :done; :stage is :busy while Lisp works on it.
#[defun]
fn call_info<'e>(env: &'e Env, pending: Value<'e>) -> Result<Value<'e>> {
    let cell = pending_cell(env, pending)?;
    let p = cell.borrow();
    let Some(call) = p.call.as_ref() else {
        return env.list((keyword(env, "stage")?, keyword(env, "busy")?));
    };
    let stage = match call.stage() {
        executor::Stage::Guard => "guard",
        executor::Stage::Asking => "asking",
        executor::Stage::Running => "running",
        executor::Stage::Done => "done",
    };
    env.list((
        keyword(env, "id")?,
        opt_string(env, call.id())?,
        keyword(env, "tool")?,
        call.tool(),
        keyword(env, "client")?,
        opt_string(env, call.client())?,
        keyword(env, "origin")?,
        origin_symbol(env, call.origin()),
        keyword(env, "stage")?,
        keyword(env, stage)?,
    ))
}
