//! The pure core of agent-q, a tool registry and executor for LLM agents working inside Emacs.
//!
//! Nothing here touches Emacs: the `agent-q` crate (the Emacs dynamic module) converts between
//! Emacs values and these types, and `cargo test` covers all of it.
//!
//! - [`spec`]: tool specifications and their validation;
//! - [`registry`]: the registry of tools (registration rules, filtering, snapshots, schemas);
//! - [`sexp`]: Emacs Lisp values ([`sexp::Sexp`]) and their conversion to and from JSON;
//! - [`executor`]: the execution policy (validation, safety, approval decisions, results, metrics);
//! - [`limits`]: the depth, number of values and bytes a call's arguments are held to;
//! - [`files`]: reading a file through one descriptor checked after opening, and pages of its text;
//! - [`fsutil`]: opening only regular files, never blocking (FIFOs, devices);
//! - [`pinned`]: writing a file exactly where it was checked, no link followed after the check;
//! - [`native`]: the [`native::Tool`] trait for tools written in Rust, run with a timeout (for
//!   Rust embedders: the Emacs module registers none);
//! - [`diff`]: line and word diffs, hunks and their application for `propose_file_edit`;
//! - [`xref`]: the Emacs Lisp source scanner behind `who_calls` and `who_references`;
//! - [`command`]: the terminal agents' own shell commands and fetches, read into simple commands
//!   and hosts and decided by the user's deny, ask and allow rules;
//! - [`rules`]: the directory globs of the user's approval rules (`agent-q-approval-rules`);
//! - [`search`]: Emacs regexps translated for the linear-time `regex-automata` engine, behind
//!   `search_in_buffer`'s regex mode (Emacs's backtracking engine can hang on a model's pattern);
//! - [`visible`]: text a model or a client chose, its hidden characters (controls, bidi,
//!   zero-width) made visible as escapes wherever it is shown;
//! - [`mcp`]: the MCP server (Streamable HTTP on 127.0.0.1) that queues tool calls for Emacs;
//! - [`ide`]: Emacs as the IDE companion of Gemini CLI and Claude Code (context, diffs);
//! - [`trust`]: trust for a while: an agent's edits or commands let through unasked.
#![warn(missing_docs)]

pub mod code;
pub mod command;
pub mod diff;
pub mod error;
pub mod executor;
pub mod files;
pub mod fsutil;
pub mod gate;
pub mod ide;
pub mod journal;
pub mod limits;
pub mod mcp;
pub mod native;
pub mod pinned;
pub mod registry;
pub mod rules;
pub mod search;
pub mod sexp;
pub mod spec;
pub mod trust;
pub mod visible;
pub mod xref;
