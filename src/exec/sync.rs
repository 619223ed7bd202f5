//! The synchronous driver: `agent-q--core-execute` runs a batch, asking each decision as it
//! comes and waiting for each handler.

use emacs::{defun, Env, Result, Value};

use super::host::{EmacsHost, Given};
use super::read::{call_sexp, read_call};
use super::{batch_options, callee};
use crate::convert::{self, lisp::cons};
use crate::errors::{self, Kind};
use crate::registry::{resolve, Shared};
use agent_q_core::executor::{self, CallContext, Options};

/// Execute one tool-call plist CALL and return its result plist.
fn execute_one<'e>(
    env: &'e Env,
    registry: &Shared,
    opts: &Options,
    ctx: &CallContext,
    call: Value<'e>,
) -> Result<Value<'e>> {
    if let Some(mut lc) = read_call(env, call, opts)? {
        let mut host = EmacsHost {
            env,
            given: Given {
                id: Some((lc.id.clone(), lc.id_value)),
                name: Some((lc.name.clone(), lc.name_value)),
            },
        };
        let result = executor::execute_read(registry, lc.checked(), ctx, &mut host, opts);
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
/// function returns (Emacs keeps them in the call's environment): a batch run in one module call
/// would keep all its calls' garbage (argument tables, contexts, copies) alive to its end, and
/// each garbage collection meanwhile would mark all of it, which with Emacs's default threshold
/// costs more than the calls themselves. A nested call frees its values when it returns.
const CHUNK: usize = 32;

/// Execute CALLS (a list of tool-call plists) against REGISTRY with OPTIONS (from
/// `agent-q--core-options') and return one result plist per call, in order, deciding each
/// approval as it comes. CALLS must be a proper list of at most `agent-q--core-batch-length'
/// allows: anything else is refused before anything runs.
#[defun]
fn execute<'e>(env: &'e Env, registry: Value<'e>, calls: Value<'e>, options: Value<'e>) -> Result<Value<'e>> {
    let shared = resolve(registry)?;
    let (opts, ctx) = batch_options(env, options)?;
    let length = usize::try_from(super::batch_length(env, calls)?).unwrap_or(usize::MAX);
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
        parts.push(env.call(callee::execute_chunk, (registry, cell, n as i64, options))?);
        cell = env.call(callee::nthcdr, (n as i64, cell))?;
        left -= n;
    }
    // The parts are fresh lists: joining them in place copies nothing.
    env.call(callee::nconc, &parts)
}

/// Execute the first COUNT (at most 32) calls of the list CALLS against REGISTRY, with the
/// OPTIONS of `agent-q--core-execute', and return their results. `agent-q--core-execute' calls
/// it for each part of a long batch, so that each part's Lisp values are freed when it returns.
/// CALLS must hold COUNT calls (a shorter list signals).
#[defun]
fn execute_chunk<'e>(
    env: &'e Env,
    registry: Value<'e>,
    calls: Value<'e>,
    count: Value<'e>,
    options: Value<'e>,
) -> Result<Value<'e>> {
    let shared = resolve(registry)?;
    let (opts, ctx) = batch_options(env, options)?;
    let count = crate::args::integer(env, count, "COUNT")?;
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
