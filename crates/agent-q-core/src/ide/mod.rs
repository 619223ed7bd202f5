//! agent-q as the IDE companion of terminal agents: Gemini CLI and Claude Code started from (or
//! near) Emacs see the user's open files and selection, and show their proposed edits in Emacs
//! for review instead of in the terminal.
//!
//! # How the pieces fit
//!
//! ```text
//!  Gemini CLI ──HTTP──▶ security layer ──▶ rmcp Streamable HTTP ──▶ GeminiHandler ─┐
//!                      (mcp/, bearer)     on /mcp                                   ├─▶ IdeHub ◀── driver
//!  Claude Code ──WebSocket (subprotocol mcp, x-claude-code-ide-authorization)──▶    │  (queue,     (Emacs's
//!               ClaudeHandler over rmcp's Sink/Stream transport ───────────────────┘   answers)   main thread)
//! ```
//!
//! - [`IdeHub`] (hub.rs) is what the servers and the driver share: the agents' requests become
//!   [`IdeEvent`]s queued for the driver, which is woken by the `wake` callback, takes them
//!   ([`IdeHub::take_events`]) and answers those with a key ([`IdeHub::answer`]). It also
//!   remembers the editor context ([`IdeHub::set_context`]) and the connected clients.
//! - [`Companion::start`] (companion.rs) runs both servers on 127.0.0.1 on one small runtime.
//! - discovery.rs: the files through which the agents find the servers (formats only).
//! - context.rs: the editor context, its limits, and each agent's payload.
//! - handler.rs: the MCP handler both companions share (the connection, the tools listed, the
//!   check every call starts with); each agent adds its own part.
//! - gemini.rs: Gemini CLI's companion (its documented specification).
//! - claude.rs: Claude Code's companion (as Claude Code 2.1 behaves).

pub mod claude;
pub mod companion;
pub mod context;
pub mod discovery;
pub mod gemini;
mod handler;
pub mod hub;

pub use companion::{Companion, STOPPED};
pub use context::{EditorContext, OpenFile, Selection};
pub use hub::{Agent, Answer, ClientStatus, Diagnostic, FileDiagnostics, IdeEvent, IdeHub, Wake};
pub use hub::{MAX_CLIENTS, MAX_PENDING_EVENTS, MAX_PENDING_REQUESTS};

/// Why the companion or one of its files cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdeError {
    /// A value the caller gave cannot be used.
    #[error("{0}")]
    Invalid(String),
    /// The servers could not be started.
    #[error("cannot start the IDE companion: {0}")]
    Start(String),
}
