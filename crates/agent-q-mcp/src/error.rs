//! The relay's error type.

use thiserror::Error;

/// Why the `agent-q-mcp` relay cannot connect a client to Emacs.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RelayError {
    /// No connection file: Emacs's MCP server is not running.
    #[error(
        "no connection file at {}: is Emacs running with the MCP server started (M-x agent-q-mcp-start)?",
        .0.display()
    )]
    NoConnectionFile(std::path::PathBuf),
    /// The connection file cannot be used.
    #[error("the connection file {} is unusable: {problem}", .path.display())]
    BadConnectionFile {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// Nothing serves where the connection file says.
    #[error("no Emacs is serving MCP: {0}; start it with M-x agent-q-mcp-start")]
    NotServing(String),
    /// The server refused the token.
    #[error(
        "the MCP server at {0} rejected the token of the connection file (HTTP 401); \
         the file is stale: restart the server in Emacs (M-x agent-q-mcp-start)"
    )]
    Unauthorized(String),
    /// The HTTP client could not be set up.
    #[error("cannot set up the HTTP client: {0}")]
    Http(String),
    /// Reading or writing the standard streams failed.
    #[error("{0}")]
    Io(String),
    /// Bad command-line arguments.
    #[error("{0}")]
    Usage(String),
}
