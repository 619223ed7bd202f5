//! The Emacs binding layer: module initialisation and the `agent-q--core-*` functions.
//!
//! Everything here converts between Emacs values and the pure core and nothing more. Functions
//! defined with `#[defun]` in these modules become `agent-q--core-NAME` in Lisp.

use emacs::{Env, IntoLisp, Result};

pub mod args;
pub mod audit;
pub mod channel;
pub mod code;
pub mod command;
pub mod convert;
pub mod diff;
pub mod errors;
pub mod exec;
pub mod files;
pub mod gate;
pub mod ide;
pub mod journal;
pub mod mcp;
pub mod quit;
pub mod registry;
pub mod rules;
pub mod search;
pub mod trust;
pub mod visible;
pub mod xref;

emacs::plugin_is_GPL_compatible!();

/// The module's version, which `agent-q.el` compares with its own before using the module.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

#[emacs::module(
    name = "agent-q-core",
    defun_prefix = "agent-q",
    separator = "--core-",
    mod_in_name = false
)]
fn init(env: &Env) -> Result<()> {
    // Panics are caught at the module boundary and become `rust-panic` signals; the default hook
    // would also print them to Emacs's stderr, which in a terminal Emacs scribbles on the screen.
    std::panic::set_hook(Box::new(|_| {}));
    env.call("set", (env.intern("agent-q-core-version")?, VERSION.into_lisp(env)?))?;
    Ok(())
}
