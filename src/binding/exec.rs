//! `agent-q--core-execute`: the executor, with Emacs as its [`Host`].
//!
//! The host calls back into Lisp for approval (`agent-q--approval-call`), observers
//! (`agent-q--run-execution-hooks`), the audit log (`agent-q--audit`) and result formatting
//! (`agent-q--format-result`); all are defined in agent-q.el. No registry lock is held during
//! any of these calls.

use emacs::{defun, Env, Result, Value};
use serde_json::{Map, Value as Json};

use super::convert::{self, Limits, WalkError};
use super::registry::{resolve, LispHandler};
use crate::error::ConvertError;
use crate::executor::{self, ApprovalFailure, AuditRecord, Host, Options, Phase, ToolResult};
use crate::sexp::Sexp;
use crate::spec::SafetyLevel;

use super::convert::lisp::string;

struct EmacsHost<'e> {
    env: &'e Env,
}

/// The most of a handler's result the module copies out of Emacs (the executor then caps it at
/// `agent-q-max-result-chars`): a bound on memory, whatever a handler returns.
const MAX_RESULT_BYTES: usize = 64 << 20;

impl<'e> EmacsHost<'e> {
    fn plist(&self, args: &Map<String, Json>) -> Result<Value<'e>> {
        convert::json_value(self.env, &Json::Object(args.clone()))
    }

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
        // Lists are pretty-printed, anything else printed with prin1, by Lisp.
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
}

impl<'e> Host for EmacsHost<'e> {
    type Lisp = LispHandler;

    fn approve(
        &mut self,
        tool: &str,
        args: &Map<String, Json>,
        level: SafetyLevel,
    ) -> std::result::Result<lexpr::Value, ApprovalFailure> {
        let env = self.env;
        let fail = |e: &emacs::Error| {
            if convert::is_quit(env, e) {
                ApprovalFailure::Quit
            } else {
                ApprovalFailure::Signalled(convert::error_message(env, e))
            }
        };
        let plist = self.plist(args).map_err(|e| fail(&e))?;
        let level = env.intern(&format!(":{}", level.as_str())).map_err(|e| fail(&e))?;
        let answer = env
            .call("agent-q--approval-call", (tool, plist, level))
            .map_err(|e| fail(&e))?;
        match convert::to_sexp(env, answer, Limits::default()) {
            Ok(v) => Ok(v),
            Err(WalkError::Convert(e)) => Err(ApprovalFailure::Signalled(format!("its answer cannot be read: {e}"))),
            Err(WalkError::Emacs(e)) => Err(fail(&e)),
        }
    }

    fn run_handler(&mut self, handler: &LispHandler, args: &Map<String, Json>) -> std::result::Result<String, String> {
        let env = self.env;
        let table = convert::object_for_handler(env, args)
            .map_err(|e| format!("Tool error: {}", convert::error_message(env, &e)))?;
        match env.call(handler.bind(env), (table,)) {
            Ok(v) => self.format(v),
            Err(e) if convert::is_quit(env, &e) => Err("Tool error: interrupted by the user (C-g)".into()),
            Err(e) => Err(format!("Tool error: {}", convert::error_message(env, &e))),
        }
    }

    fn observe(&mut self, phase: Phase, tool: &str, args: &Map<String, Json>, result: Option<&ToolResult>) {
        let env = self.env;
        let run = || -> Result<()> {
            let result = match result {
                Some(r) => convert::result_value(env, r)?,
                None => env.intern("nil")?,
            };
            env.call(
                "agent-q--run-execution-hooks",
                (
                    env.intern(&format!(":{}", phase.as_str()))?,
                    tool,
                    self.plist(args)?,
                    result,
                ),
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
            "{} {} [{}] {}{}",
            record.event,
            record.tool,
            record.safety_level,
            record.decision,
            record.success.map(|s| if s { " ok" } else { " failed" }).unwrap_or("")
        );
        let _ = env.call("agent-q--audit", (line, summary));
    }

    fn should_quit(&mut self) -> bool {
        super::quit::requested(self.env)
    }
}

/// Execute CALLS (a list of tool-call plists) against REGISTRY and return one result plist per
/// call, in order. MAX-RESULT-CHARS caps each result's content (0: no cap), MAX-ARGUMENT-BYTES
/// caps the strings of each call, HOOKS non-nil means observers are installed, and CONFIRM lists
/// the safety levels (keywords) whose calls need approval besides `:dangerous`, which always does.
#[defun]
fn execute<'e>(
    env: &'e Env,
    registry: Value<'e>,
    calls: Value<'e>,
    max_result_chars: i64,
    max_argument_bytes: i64,
    hooks: Value<'e>,
    confirm: Value<'e>,
) -> Result<Value<'e>> {
    let shared = resolve(registry)?;
    let mut levels = Vec::new();
    for name in super::registry::name_list(env, confirm, "The safety levels to confirm")? {
        match name.parse::<SafetyLevel>() {
            Ok(level) => levels.push(level),
            Err(e) => return super::errors::signal(env, super::errors::Kind::Generic, e.problem),
        }
    }
    let opts = Options {
        max_result_chars: usize::try_from(max_result_chars).unwrap_or(0),
        max_argument_bytes: usize::try_from(max_argument_bytes).unwrap_or(0),
        hooks: hooks.is_not_nil(),
        confirm: levels,
    };
    let limits = Limits {
        max_bytes: opts.max_argument_bytes,
        ..Limits::default()
    };
    let mut host = EmacsHost { env };
    let mut results = Vec::new();
    let mut cell = calls;
    let mut count = 0usize;
    while cell.is_not_nil() {
        if !env.call(convert::lisp::consp, (cell,))?.is_not_nil() {
            return super::errors::signal(
                env,
                super::errors::Kind::Generic,
                "CALLS must be a list of tool-call plists",
            );
        }
        count += 1;
        if count > limits.max_nodes {
            return super::errors::signal(env, super::errors::Kind::Generic, "CALLS is too long (or circular)");
        }
        let call: Value<'e> = cell.car()?;
        let result = match convert::to_sexp(env, call, limits) {
            Ok(sx) => {
                let sx = Sexp(sx);
                executor::execute_call(shared, &sx.0, &mut host, &opts)
            }
            Err(WalkError::Convert(e)) => {
                let id = env.call("agent-q--call-id", (call,)).ok().and_then(|v| {
                    if v.is_not_nil() {
                        convert::read_string(v, 4096).ok()
                    } else {
                        None
                    }
                });
                ToolResult::failure(id, format!("Invalid tool call: cannot convert it: {e}"))
            }
            Err(WalkError::Emacs(e)) => return Err(e),
        };
        results.push(convert::result_value(env, &result)?);
        cell = cell.cdr()?;
    }
    env.list(&results)
}
