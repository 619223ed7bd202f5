//! The stdio relay behind the `agent-q-mcp` binary: MCP clients that can only start a command
//! reach the MCP server of the running Emacs through it. It reads the connection file Emacs
//! writes and relays the stdio transport to the server's Streamable HTTP endpoint on 127.0.0.1.
//!
//! The same binary's `hook` subcommand ([`hook`]) is the terminal agents' gate command.
//!
//! It needs nothing of the Emacs module: only the core's limits and its regular-file reader.
#![warn(missing_docs)]

pub mod error;
pub mod hook;
pub mod relay;
pub mod waiting;
