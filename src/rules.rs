//! `agent-q--core-rule-glob-*`: the directory globs of approval rules ([`agent_q_core::rules`]) for
//! Emacs. The Lisp side (agent-q-rules.el) resolves names before asking; errors signal
//! `agent-q-error` with the glob's problem.

use emacs::{defun, Env, IntoLisp, Result, Value};

use super::args;
use super::errors::{self, Kind};
use agent_q_core::rules::{self, Glob, LinkSearch, MAX_GLOB_BYTES};

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

/// Search ROOT (a local directory, resolved) and below for another hard link of the regular file
/// whose DEVICE and INODE numbers are given (from `file-attributes'): return its name, nil when
/// there is none, or `unknown' when the search stopped at its bounds (20,000 entries, 50 ms) or
/// the numbers cannot be read, so that a deny rule refuses rather than guesses. Symbolic links
/// are not followed and no other file system is entered.
#[defun]
fn find_hard_link<'e>(env: &'e Env, root: Value<'e>, device: Value<'e>, inode: Value<'e>) -> Result<Value<'e>> {
    let root = args::string(env, root, "ROOT", 2 * MAX_GLOB_BYTES)?;
    let (Ok(device), Ok(inode)) = (device.into_rust::<i64>(), inode.into_rust::<i64>()) else {
        return env.intern("unknown");
    };
    let (Ok(device), Ok(inode)) = (u64::try_from(device), u64::try_from(inode)) else {
        return env.intern("unknown");
    };
    match rules::find_hard_link(
        std::path::Path::new(&root),
        device,
        inode,
        rules::MAX_LINK_SEARCH_ENTRIES,
        rules::LINK_SEARCH_BUDGET,
    ) {
        LinkSearch::Found(path) => path.to_string_lossy().into_owned().into_lisp(env),
        LinkSearch::NotFound => env.intern("nil"),
        LinkSearch::GaveUp => env.intern("unknown"),
    }
}
