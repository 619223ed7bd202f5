//! `agent-q--core-rule-glob-*`: the directory globs of approval rules ([`crate::rules`]) for
//! Emacs. The Lisp side (agent-q-rules.el) resolves names before asking; errors signal
//! `agent-q-error` with the glob's problem.

use emacs::{defun, Env, IntoLisp, Result, Value};

use super::args;
use super::errors::{self, Kind};
use crate::rules::{Glob, MAX_GLOB_BYTES};

fn glob_arg(env: &Env, glob: Value<'_>) -> Result<Glob> {
    // Twice the limit, so that the core, not the conversion, names a long glob.
    let text = args::string(env, glob, "GLOB", 2 * MAX_GLOB_BYTES)?;
    match Glob::parse(&text) {
        Ok(g) => Ok(g),
        Err(e) => errors::signal(env, Kind::Generic, e.to_string()),
    }
}

/// Split GLOB, an absolute directory glob, into (PREFIX . REST).
///
/// PREFIX is its leading components without wildcards, as an absolute name ("/" when there
/// are none); REST the components from the first wildcard on, joined with "/" ("" when
/// there are none). A glob that is not absolute, or has a . or .. component, or ** inside a
/// component, signals `agent-q-error' saying so.
#[defun]
fn rule_glob_split<'e>(env: &'e Env, glob: Value<'e>) -> Result<Value<'e>> {
    let g = glob_arg(env, glob)?;
    env.cons(g.literal_prefix(), g.wild_rest())
}

/// Return non-nil when GLOB covers PATH: a directory GLOB matches is PATH or an ancestor of it.
///
/// Both are absolute names; PATH should be resolved (links followed): one that still has a . or
/// .. component is never covered.
#[defun]
fn rule_glob_covers<'e>(env: &'e Env, glob: Value<'e>, path: Value<'e>) -> Result<Value<'e>> {
    let g = glob_arg(env, glob)?;
    let path = args::string(env, path, "PATH", 2 * MAX_GLOB_BYTES)?;
    match g.covers(&path) {
        Ok(b) => b.into_lisp(env),
        Err(e) => errors::signal(env, Kind::Generic, e.to_string()),
    }
}

/// Return non-nil when GLOB covers nearly every file: its leading literal directory is /, or
/// HOME (the home directory, resolved) or an ancestor of HOME.
#[defun]
fn rule_glob_broad<'e>(env: &'e Env, glob: Value<'e>, home: Value<'e>) -> Result<Value<'e>> {
    let g = glob_arg(env, glob)?;
    let home = args::string(env, home, "HOME", 2 * MAX_GLOB_BYTES)?;
    g.is_broad(&home).into_lisp(env)
}
