//! agent-q as an MCP server: coding agents in a terminal call the tools of the user's
//! running Emacs over the Model Context Protocol, and the user approves in Emacs.
//!
//! # How the pieces fit
//!
//! ```text
//!  MCP client ──HTTP──▶ security layer ──▶ rmcp Streamable HTTP ──▶ McpHandler ──▶ Hub ◀── driver
//!  (Claude Code…)       (Host, Origin,      service on /mcp             (tools/list,  (queue,   (Emacs's
//!  or agent-q-mcp       token, size)        (sessions, versions,        tools/call,   answers)  main thread)
//!  relay over stdio                         SSE, cancellation)          progress)
//! ```
//!
//! - [`Hub`] (hub.rs) is the only thing the server and its driver share. The driver sets the
//!   tools and the most dangerous level offered ([`Hub::set_tools`]; the hub refuses a call of
//!   any tool it does not list), is woken by the `wake` callback when events are queued, takes
//!   them ([`Hub::take_events`]: [`Event::Call`], [`Event::Cancel`]) and answers calls
//!   ([`Hub::complete`]), optionally reporting what a call waits for ([`Hub::set_status`]).
//!   In Emacs the wake callback writes a byte to a pipe (the module API's `open_channel`), and
//!   the pipe process's filter drains the hub on the main thread; in tests it signals a channel.
//!   No Lisp value ever leaves the main thread.
//! - [`Server::start`] (server.rs) binds 127.0.0.1 only and serves rmcp's Streamable HTTP
//!   transport on [`ENDPOINT`] on its own small tokio runtime; [`RunningServer::stop`] (or
//!   dropping it) answers every waiting call with an error and frees the port before returning.
//! - The protocol handler (handler.rs) implements rmcp's `ServerHandler`: the tool list with its
//!   annotations, calls queued in the hub and awaited with progress notifications, tool list
//!   changes announced to sessions (2025 revisions) and `subscriptions/listen` streams
//!   (2026-07-28).
//! - The security layer (security.rs) wraps the whole service: loopback `Host`, localhost
//!   `Origin` only (403, rmcp's own checks, applied first), `Authorization: Bearer TOKEN` (401),
//!   body size
//!   ([`MAX_REQUEST_BODY_BYTES`]). [`make_token`] makes the token.
//! - The gate route (gate.rs) on [`GATE_ENDPOINT`]: the terminal agents' hooks
//!   (`agent-q-mcp hook`) ask about the agents' own tool calls ([`crate::gate`]); the hub queues
//!   them as [`Event::Gate`] while the driver has turned gating on ([`Hub::set_gating`]), and the
//!   driver answers with [`Hub::complete_gate`]. Beside it, [`TOLD_ENDPOINT`]: Gemini CLI's
//!   `AfterTool` hook takes what its model must be told about a call Emacs changed
//!   ([`crate::gate::ToldStore`]), answered on the server's thread.
//! - The relay (relay.rs, binary `agent-q-mcp`) lets clients that only start a command reach
//!   the server: it reads the connection file Emacs writes and relays stdio to HTTP.
//!
//! # Protocol versions
//!
//! rmcp negotiates: `initialize` with 2024-11-05, 2025-03-26, 2025-06-18 or 2025-11-25 opens a
//! session (`Mcp-Session-Id`, then `MCP-Protocol-Version` on every request); a request whose
//! `_meta` carries the 2026-07-28 protocol version (or `server/discover`) is served without
//! session or `initialize`, and its client is named by `_meta`'s `clientInfo`.

pub mod connections;
pub mod gate;
pub mod handler;
pub mod hub;
pub mod security;
pub mod server;

pub use crate::limits::{MAX_ARGUMENT_DEPTH, MAX_ARGUMENT_VALUES};
pub use connections::{EVICTION_AGE, HEADER_READ_TIMEOUT, MAX_CONNECTIONS, MAX_UNPROVEN_CONNECTIONS};
pub use gate::{GATE_ENDPOINT, GATE_WITHDRAWN, MAX_GATE_WAIT, TOLD_ENDPOINT, TURN_ENDPOINT};
pub use hub::{CallAnswer, ClientInfo, Event, Hub, ToolInfo, Wake, GATING_OFF};
pub use hub::{MAX_PENDING_CALLS, MAX_PENDING_PER_CLIENT, MAX_QUEUED_TURNS};
pub use security::MAX_REQUEST_BODY_BYTES;
pub use server::{Config, RunningServer, Server, Shutdown, Stopping, DEFAULT_PROGRESS_INTERVAL, ENDPOINT, STOPPED};

use crate::error::McpError;

/// A new bearer token: 256 random bits from the operating system, as 64 lowercase hex digits.
pub fn make_token() -> Result<String, McpError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| McpError::Random(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_256_bit_hex_and_differ() {
        let a = make_token().unwrap();
        let b = make_token().unwrap();
        assert_eq!(a.len(), 64);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_ne!(a, b);
    }
}
