//! The asynchronous driver's steps: `agent-q--core-call-start`, `-decide`, `-finish`,
//! `-cancel` and `-info`. Each runs what can run at once and returns the step Lisp must wait
//! for (see the [module](super) doc for the steps).

use std::cell::RefCell;

use emacs::{defun, Env, IntoLisp, Result, Value};

use super::callee::kw_done;
use super::host::{answer_outcome, origin_symbol, EmacsHost, Given};
use super::read::{call_sexp, read_call};
use super::{batch_options, keyword, opt_string};
use crate::convert::{self, Limits, WalkError};
use crate::errors::{self, Kind};
use crate::registry::{own, resolve, LispHandler, Shared};
use agent_q_core::executor::{self, Call, Handler, Host, Options, StageError, Step};

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
            Step::Run(Handler::Native(tool)) => {
                let outcome = host.run_native_tool(tool.as_ref(), &call);
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

/// The pending call PENDING holds, or an `agent-q-error` when it is something else.
fn pending_cell<'e>(env: &'e Env, pending: Value<'e>) -> Result<&'e Pending> {
    match pending.into_rust::<&Pending>() {
        Ok(cell) => Ok(cell),
        Err(_) => errors::signal(
            env,
            Kind::Generic,
            format!(
                "PENDING must be a pending call from agent-q--core-call-start, not a {}",
                crate::args::type_name(env, pending)
            ),
        ),
    }
}

/// Take the call out of PENDING for a step; an error if Lisp is already working on it or it is
/// done.
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

/// Start CALL (a tool-call plist) against REGISTRY for the asynchronous driver, with OPTIONS
/// (from `agent-q--core-options'). Guards and synchronous handlers run at once. Return
/// `(:done RESULT)`, `(:ask PENDING CONTEXT ARGS)` or `(:run PENDING HANDLER ARGS CONTEXT)`.
#[defun]
fn call_start<'e>(env: &'e Env, registry: Value<'e>, call: Value<'e>, options: Value<'e>) -> Result<Value<'e>> {
    let shared = resolve(registry)?.clone();
    let (opts, ctx) = batch_options(env, options)?;
    if let Some(mut lc) = read_call(env, call, &opts)? {
        let mut host = EmacsHost {
            env,
            given: Given {
                id: Some((lc.id.clone(), lc.id_value)),
                name: Some((lc.name.clone(), lc.name_value)),
            },
        };
        let (c, step) = Call::start_read(&shared, lc.checked(), &ctx, &opts, &mut host);
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

/// Finish PENDING, whose asynchronous handler answered VALUE with STATUS, as it gave them to its
/// callback: nil or `:success', `:failure', `:denied' or `:cancelled'; `:error' when the handler
/// signalled while it started, VALUE the error's message. Any other status is a failure that
/// names it. Return `(:done RESULT)`.
#[defun]
fn call_finish<'e>(env: &'e Env, pending: Value<'e>, status: Value<'e>, value: Value<'e>) -> Result<Value<'e>> {
    let (registry, opts, mut call) = take(env, pending)?;
    let mut host = EmacsHost {
        env,
        given: Given::default(),
    };
    let outcome = answer_outcome(&host, status, value);
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

/// Record what the review of PENDING's running handler decided: ACCEPTED, EDITED and REJECTED
/// are lists of hunk numbers, from 1. The audit's `result` record then says which hunks. Return
/// nil; an `agent-q-error` when PENDING is not running.
#[defun]
fn call_reviewed<'e>(
    env: &'e Env,
    pending: Value<'e>,
    accepted: Value<'e>,
    edited: Value<'e>,
    rejected: Value<'e>,
) -> Result<Value<'e>> {
    let numbers = |list: Value<'e>, what: &str| -> Result<Vec<u32>> {
        let mut out = Vec::new();
        let mut rest = list;
        while rest.is_not_nil() {
            if out.len() >= executor::MAX_REVIEW_HUNKS {
                return errors::signal(env, Kind::Generic, format!("{what}: too many hunk numbers"));
            }
            let head = env.call("car", (rest,))?;
            let n: i64 = match head.into_rust() {
                Ok(n) => n,
                Err(_) => return errors::signal(env, Kind::Generic, format!("{what} must be a list of integers")),
            };
            out.push(u32::try_from(n).unwrap_or(0));
            rest = env.call("cdr", (rest,))?;
        }
        Ok(out)
    };
    for list in [accepted, edited, rejected] {
        if !env.call("proper-list-p", (list,))?.is_not_nil() {
            return errors::signal(env, Kind::Generic, "the hunk numbers must be proper lists");
        }
    }
    let outcome = executor::ReviewOutcome {
        accepted: numbers(accepted, "ACCEPTED")?,
        edited: numbers(edited, "EDITED")?,
        rejected: numbers(rejected, "REJECTED")?,
    };
    let cell = pending_cell(env, pending)?;
    let result = match cell.borrow_mut().call.as_mut() {
        Some(call) => call.reviewed(outcome).map_err(|e| e.to_string()),
        None => Err("agent-q: this tool call is finished or being processed".to_string()),
    };
    match result {
        Ok(()) => env.intern("nil"),
        Err(message) => errors::signal(env, Kind::Generic, message),
    }
}

/// Cancel PENDING with REASON (nothing more of it runs). Return `(:done RESULT)`, or nil when it
/// is finished or Lisp is working on it at this moment.
#[defun]
fn call_cancel<'e>(env: &'e Env, pending: Value<'e>, reason: Value<'e>) -> Result<Value<'e>> {
    let cell = pending_cell(env, pending)?;
    let reason = crate::args::string(env, reason, "REASON", crate::args::MAX_NAME_BYTES)?;
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

/// End PENDING because its agent's hook timeout of SECONDS ran out (nothing more of it runs);
/// audited as `timed-out`. Return `(:done RESULT)`, or nil when it is finished or Lisp is
/// working on it at this moment.
#[defun]
fn call_time_out<'e>(env: &'e Env, pending: Value<'e>, seconds: Value<'e>) -> Result<Value<'e>> {
    let cell = pending_cell(env, pending)?;
    let seconds = crate::args::integer(env, seconds, "SECONDS")?;
    let seconds = u64::try_from(seconds).unwrap_or(0);
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
    match call.time_out(&registry, seconds, &opts, &mut host) {
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
