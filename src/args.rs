//! Reading the arguments of the `agent-q--core-*` functions.
//!
//! A parameter typed `String` or `i64` in a `#[defun]` is converted by emacs-module-rs, which
//! signals its own errors (`rust-module-wrong-type`, `rust-module-integer-out-of-range`,
//! `rust-invalid-utf-8`...) and, for a string, copies it whole whatever its size. The functions
//! here take the argument as a `Value` instead: a bad one is an `agent-q-error` that names the
//! argument and the problem (without printing the value, which may be huge or deeply nested),
//! and a string is measured before it is copied.

use emacs::{Env, Result, Value};

use super::convert::{self, WalkError};
use super::errors::{self, Kind};

/// The most bytes a text argument (a file's contents, a buffer's text) may hold.
pub const MAX_TEXT_BYTES: usize = 256 << 20;

/// The most bytes a name argument (a tool's name, a reason, a label) may hold.
pub const MAX_NAME_BYTES: usize = 1 << 20;

/// The name of V's type (`cons`, `vector`, `buffer`...), as `type-of` gives it.
pub fn type_name(env: &Env, v: Value<'_>) -> String {
    env.type_of(v)
        .and_then(|ty| env.call("symbol-name", (ty,)))
        .ok()
        .and_then(|name| convert::read_string(name, 256).ok())
        .unwrap_or_else(|| "object".into())
}

/// V as a string of at most MAX bytes, or an `agent-q-error` naming WHAT (e.g. "OLD").
pub fn string(env: &Env, v: Value<'_>, what: &str, max: usize) -> Result<String> {
    let is_string = env.type_of(v).map(|ty| *convert::lisp::string == ty).unwrap_or(false);
    if !is_string {
        return errors::signal(
            env,
            Kind::Generic,
            format!("{what} must be a string, not a {}", type_name(env, v)),
        );
    }
    match convert::read_string(v, max) {
        Ok(s) => Ok(s),
        Err(WalkError::Convert(e)) => errors::signal(env, Kind::Generic, format!("{what} cannot be read: {e}")),
        Err(WalkError::Emacs(e)) => Err(e),
    }
}

/// V as an integer that fits in 64 bits, or an `agent-q-error` naming WHAT.
pub fn integer(env: &Env, v: Value<'_>, what: &str) -> Result<i64> {
    let is_integer = env.type_of(v).map(|ty| *convert::lisp::integer == ty).unwrap_or(false);
    if !is_integer {
        return errors::signal(
            env,
            Kind::Generic,
            format!("{what} must be an integer, not a {}", type_name(env, v)),
        );
    }
    match v.into_rust::<i64>() {
        Ok(i) => Ok(i),
        Err(_) => errors::signal(env, Kind::Generic, format!("{what} is an integer beyond 64 bits")),
    }
}

/// V as a number (an integer or a float), or an `agent-q-error` naming WHAT.
pub fn number(env: &Env, v: Value<'_>, what: &str) -> Result<f64> {
    let ty = env.type_of(v).ok();
    if ty.is_some_and(|ty| *convert::lisp::float == ty) {
        return v.into_rust::<f64>();
    }
    if ty.is_some_and(|ty| *convert::lisp::integer == ty) {
        // A bignum is a number too, if an absurd one: it becomes the largest.
        return Ok(v.into_rust::<i64>().map(|i| i as f64).unwrap_or(f64::MAX));
    }
    errors::signal(
        env,
        Kind::Generic,
        format!("{what} must be a number, not a {}", type_name(env, v)),
    )
}
