//! What the drivers ask of Emacs: guards, the approval function, handlers, observers and the
//! audit log, as the executor's [`Host`].

use emacs::{Env, IntoLisp, Result, Value};
use serde_json::{Map, Value as Json};

use super::{callee, keyword, opt_string};
use crate::convert::{self, Limits, WalkError};
use crate::errors;
use crate::registry::LispHandler;
use agent_q_core::error::ConvertError;
use agent_q_core::executor::{
    self, ApprovalFailure, Ask, AuditRecord, Call, Effects, GuardAnswer, HandlerOutcome, Host, LispTool, Origin, Phase,
    ToolResult,
};
use agent_q_core::native::Tool;
use agent_q_core::sexp::Sexp;
use agent_q_core::spec::SafetyLevel;

use crate::convert::lisp::{nil, string, t as lisp_t};

/// The most of a handler's result the module copies out of Emacs (the executor then caps it at
/// `agent-q-max-result-chars`): a bound on memory, whatever a handler returns.
const MAX_RESULT_BYTES: usize = 64 << 20;

/// Emacs as the executor's host, for one module call.
pub(super) struct EmacsHost<'e> {
    pub(super) env: &'e Env,
    /// The Lisp values of the call being run, when the driver read them (the synchronous one
    /// does): handed back to Lisp as they are instead of as copies.
    pub(super) given: Given<'e>,
}

/// Lisp values a call was given, kept to be handed back as they are.
#[derive(Default)]
pub(super) struct Given<'e> {
    /// The call's `:id` string, with its text.
    pub(super) id: Option<(String, Value<'e>)>,
    /// The call's `:name` string, with its text.
    pub(super) name: Option<(String, Value<'e>)>,
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

fn level_keyword(env: &Env, level: SafetyLevel) -> Result<Value<'_>> {
    keyword(env, level.as_str())
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
fn error_outcome(env: &Env, err: &emacs::Error) -> HandlerOutcome {
    if convert::is_quit(env, err) {
        return HandlerOutcome::Failure("Tool error: interrupted by the user (C-g)".into());
    }
    if signals(env, err, errors::agent_q_tool_denied) {
        return HandlerOutcome::Denied(signal_message(env, err).unwrap_or_else(|| "Tool execution denied".into()));
    }
    if signals(env, err, errors::agent_q_tool_failure) {
        return HandlerOutcome::Failure(signal_message(env, err).unwrap_or_else(|| "Tool failed".into()));
    }
    HandlerOutcome::Failure(format!("Tool error: {}", convert::error_message(env, err)))
}

impl<'e> EmacsHost<'e> {
    pub(super) fn plist(&self, args: &Map<String, Json>) -> Result<Value<'e>> {
        convert::json_value(self.env, &Json::Object(args.clone()))
    }

    /// A handler's return value as text for the model.
    pub(super) fn format(&self, v: Value<'e>) -> std::result::Result<String, String> {
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
    /// (:id ID :tool NAME :client C :origin O :approved BOOL :reason R :file F :channel CH
    /// :decision D :rule RULE), F the file the guard pinned (see [`executor::GuardAnswer::file`]),
    /// CH the call's channel (see [`executor::channel_of`]), D how it was decided (the audit's
    /// `decision`: "review", "rule"...), RULE the approval rule that allowed it.
    pub(super) fn handler_context(&self, call: &Call) -> Result<Value<'e>> {
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
            keyword(env, "channel")?,
            opt_string(env, call.channel())?,
            keyword(env, "decision")?,
            call.decision().into_lisp(env)?,
            keyword(env, "rule")?,
            opt_string(env, call.rule())?,
        ])
    }

    /// The context of a decision, bound to `agent-q-approval-context':
    /// (:tool :safety-level :reason :protected :file :review :tool-id :client :id), and
    /// `:optional t` at the end
    /// for a call that needs no decision and stops only for the user's approval rules.
    pub(super) fn ask_context(&self, ask: &Ask, call: &Call) -> Result<Value<'e>> {
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
            keyword(env, "review-rule")?,
            ask.review_rule.into_lisp(env)?,
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

    fn outcome_of(&self, result: Result<Value<'e>>) -> HandlerOutcome {
        match result {
            Ok(v) => match self.format(v) {
                Ok(text) => HandlerOutcome::Success(text),
                Err(message) => HandlerOutcome::Failure(message),
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
        let summary = record.summary();
        let event = record.event;
        let _ = env.call("agent-q--audit", (line, summary, event));
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
                        "it returned something other than nil, a reason string or (:reason R :protected P :file F :ask A)"
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

    fn run_handler(&mut self, tool: &LispTool<LispHandler>, call: &Call) -> HandlerOutcome {
        let env = self.env;
        if !tool.asynchronous {
            // The context plist is built by agent-q.el, in byte code, from its parts: building
            // it here would take one call into Emacs per element.
            let prepared = handler_args(env, tool.run.bind(env), &self.given, call);
            return match prepared {
                Ok(args) => self.outcome_of(env.call(callee::call_handler, args)),
                Err(e) => HandlerOutcome::Failure(format!("Tool error: {}", convert::error_message(env, &e))),
            };
        }
        let prepared =
            convert::object_for_handler(env, call.args()).and_then(|table| Ok((table, self.handler_context(call)?)));
        let (table, context) = match prepared {
            Ok(p) => p,
            Err(e) => return HandlerOutcome::Failure(format!("Tool error: {}", convert::error_message(env, &e))),
        };
        // An asynchronous handler, driven synchronously: Lisp waits (a recursive edit) for its
        // callback and returns (STATUS . VALUE).
        let answer = env
            .call("agent-q--call-handler-and-wait", (tool.run.bind(env), table, context))
            .and_then(|pair| Ok((env.call("car-safe", (pair,))?, env.call("cdr-safe", (pair,))?)));
        match answer {
            Ok((status, value)) => answer_outcome(self, status, value),
            Err(e) => error_outcome(env, &e),
        }
    }

    fn run_native_tool(&mut self, _tool: &dyn Tool, call: &Call) -> HandlerOutcome {
        executor::native_not_run(call)
    }
}

/// A guard's plist answer (:reason R :protected P :file F :ask A) as a [`GuardAnswer`]; `None` when V
/// is not such a plist (R and F strings or nil).
fn guard_plist(env: &Env, v: Value<'_>) -> Result<Option<GuardAnswer>> {
    // A plist of at most these four keys, nothing else: any other value is not an answer.
    let len = env.call("proper-list-p", (v,))?;
    let Ok(len) = (if len.is_not_nil() {
        len.into_rust::<i64>()
    } else {
        Ok(-1)
    }) else {
        return Ok(None);
    };
    if len <= 0 || len % 2 != 0 || len > 8 {
        return Ok(None);
    }
    let keys = ["reason", "protected", "file", "ask"];
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
        ask: get("ask")?.is_not_nil(),
    }))
}

/// The symbol of ORIGIN: `emacs` or `mcp`.
pub(super) fn origin_symbol<'e>(env: &'e Env, origin: &Origin) -> Value<'e> {
    match origin {
        Origin::Emacs => callee::origin_emacs.bind(env),
        Origin::Mcp { .. } => callee::origin_mcp.bind(env),
    }
}

/// The arguments of `agent-q--call-handler': (HANDLER ARGS ID TOOL CLIENT APPROVED REASON FILE
/// ORIGIN CHANNEL DECISION RULE).
fn handler_args<'a>(env: &'a Env, run: Value<'a>, given: &Given<'a>, call: &Call) -> Result<[Value<'a>; 12]> {
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
        match call.channel() {
            Some(c) => c.into_lisp(env)?,
            None => no,
        },
        call.decision().into_lisp(env)?,
        match call.rule() {
            Some(r) => r.into_lisp(env)?,
            None => no,
        },
    ])
}

/// An asynchronous handler's answer, VALUE with STATUS as it gave them to its callback, read by
/// the executor ([`executor::handler_outcome`]).
pub(super) fn answer_outcome<'e>(host: &EmacsHost<'e>, status: Value<'e>, value: Value<'e>) -> HandlerOutcome {
    let env = host.env;
    let limits = Limits {
        max_bytes: 1024,
        max_nodes: 64,
    };
    let status = match convert::to_sexp(env, status, limits) {
        Ok(s) => s,
        Err(WalkError::Convert(_)) => Sexp::Symbol(format!("#<{}>", crate::args::type_name(env, status))),
        Err(WalkError::Emacs(e)) => return error_outcome(env, &e),
    };
    executor::handler_outcome(&status, host.format(value))
}
