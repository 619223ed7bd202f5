//! The error symbols the module signals, all under the root `agent-q-error`.

use emacs::{Env, IntoLisp, Result};

/// The error symbols, as global references (`define_errors!` generates undocumented statics).
#[allow(missing_docs)]
mod symbols {
    emacs::define_errors! {
        agent_q_error "agent-q error" (error)
        agent_q_tool_exists "Tool already exists" (agent_q_error)
        agent_q_invalid_tool "Invalid tool definition" (agent_q_error)
        agent_q_unknown_tool "Unknown tool" (agent_q_error)
        agent_q_conversion_error "Value cannot cross between Emacs and agent-q" (agent_q_error)
        agent_q_diff_error "agent-q diff error" (agent_q_error)
        agent_q_xref_error "agent-q cross-reference error" (agent_q_error)
        agent_q_search_error "agent-q regexp search error" (agent_q_error)
        agent_q_tool_failure "Tool failed" (agent_q_error)
        agent_q_tool_denied "Tool execution denied" (agent_q_error)
        agent_q_file_error "agent-q cannot read the file" (agent_q_error)
    }
}
pub(crate) use symbols::*;

/// Which `agent-q-*` error symbol to signal.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// `agent-q-error`, the root.
    Generic,
    /// `agent-q-tool-exists`.
    ToolExists,
    /// `agent-q-invalid-tool`.
    InvalidTool,
    /// `agent-q-unknown-tool`.
    UnknownTool,
    /// `agent-q-conversion-error`.
    Conversion,
    /// `agent-q-diff-error`.
    Diff,
    /// `agent-q-xref-error`.
    Xref,
    /// `agent-q-search-error`.
    Search,
}

/// Signal the error symbol of KIND with MESSAGE as its data, Lisp-style `(signal SYM (MESSAGE))`.
pub fn signal<T>(env: &Env, kind: Kind, message: impl AsRef<str>) -> Result<T> {
    let symbol = match kind {
        Kind::Generic => agent_q_error,
        Kind::ToolExists => agent_q_tool_exists,
        Kind::InvalidTool => agent_q_invalid_tool,
        Kind::UnknownTool => agent_q_unknown_tool,
        Kind::Conversion => agent_q_conversion_error,
        Kind::Diff => agent_q_diff_error,
        Kind::Xref => agent_q_xref_error,
        Kind::Search => agent_q_search_error,
    };
    let message = message.as_ref().into_lisp(env)?;
    env.signal(symbol, (message,))
}
