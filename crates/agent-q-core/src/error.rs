//! Error types of the pure core, one per concern.
//!
//! The binding layer turns each into a Lisp signal under `agent-q-error` (see
//! `binding::errors`), or, inside the executor, into a failure result for the model.

use thiserror::Error;

/// A tool definition that cannot be registered. The message names the field and the problem.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("Invalid tool definition{}: field '{field}': {problem}", tool_suffix(.tool))]
pub struct SpecError {
    /// The tool's name, when it is known.
    pub tool: Option<String>,
    /// The offending field, e.g. `name`, `parameters[1].type`, `required`.
    pub field: String,
    /// What is wrong with it.
    pub problem: String,
}

fn tool_suffix(tool: &Option<String>) -> String {
    match tool {
        Some(name) if !name.is_empty() => format!(" {name}"),
        _ => String::new(),
    }
}

impl SpecError {
    /// A problem with FIELD of an as yet unnamed tool.
    pub fn new(field: impl Into<String>, problem: impl Into<String>) -> Self {
        SpecError {
            tool: None,
            field: field.into(),
            problem: problem.into(),
        }
    }

    /// The same error, attributed to the tool NAME.
    pub fn for_tool(mut self, name: &str) -> Self {
        if self.tool.is_none() && !name.is_empty() {
            self.tool = Some(name.to_string());
        }
        self
    }
}

/// Failures of registry operations.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RegistryError {
    /// The same version of a tool is already registered with a different definition.
    #[error(
        "Tool already exists: {name} is registered{} with a different definition; \
         use a different name such as {name}_v2, or bump the version",
        version.as_ref().map(|v| format!(" at version {v}")).unwrap_or_else(|| " without a version".into())
    )]
    ToolExists {
        /// The tool's name.
        name: String,
        /// The version both definitions share, if any.
        version: Option<String>,
    },
    /// No tool has that name.
    #[error("Unknown tool: {0}")]
    UnknownTool(String),
    /// The definition itself is invalid.
    #[error(transparent)]
    InvalidSpec(#[from] SpecError),
    /// A snapshot that cannot be restored.
    #[error("Invalid registry snapshot: {0}")]
    InvalidSnapshot(String),
}

/// A value that cannot cross between Emacs and the core exactly, or input over a limit.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ConvertError {
    /// Nesting deeper than the limit.
    #[error("value nested more than {limit} levels deep")]
    TooDeep {
        /// The depth limit.
        limit: usize,
    },
    /// More bytes than the limit.
    #[error("{what} is too large: {size} bytes (limit {limit})")]
    TooLarge {
        /// What was too large.
        what: String,
        /// Its size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// More elements than the limit (which also stops circular lists).
    #[error("{what} has more than {limit} elements (or is circular)")]
    TooMany {
        /// What had too many elements.
        what: String,
        /// The limit.
        limit: usize,
    },
    /// A value with no exact counterpart on the other side.
    #[error("cannot represent {0}")]
    Unrepresentable(String),
    /// A value of the wrong shape.
    #[error("{0}")]
    Shape(String),
    /// JSON text that does not parse.
    #[error("invalid JSON: {0}")]
    Json(String),
}

/// A file the module cannot (or must not) read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FileError {
    /// Not a regular file: reading it could block Emacs or never end.
    #[error("{} is {kind}, not a regular file; it was not read", .path.display())]
    NotRegular {
        /// The file.
        path: std::path::PathBuf,
        /// What it is instead ("a FIFO (named pipe)", "a device", ...).
        kind: &'static str,
    },
    /// Larger than the limit.
    #[error("{} is too large to read ({size} bytes; the limit is {limit})", .path.display())]
    TooLarge {
        /// The file.
        path: std::path::PathBuf,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The system's error.
    #[error("{}: {message}", .path.display())]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// The system's message.
        message: String,
    },
}

/// Why a write could not be made exactly where it was checked (see [`crate::pinned`]).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WriteError {
    /// What the check pinned is not there any more: a directory replaced, a symbolic link put
    /// in the path or at the target.
    #[error("{} changed after it was checked: {what}; nothing was written", .path.display())]
    Changed {
        /// The directory or file that changed.
        path: std::path::PathBuf,
        /// What happened to it.
        what: String,
    },
    /// The target is not a regular file.
    #[error("{} is {kind}, not a regular file; nothing was written", .path.display())]
    NotRegular {
        /// The file.
        path: std::path::PathBuf,
        /// What it is instead.
        kind: &'static str,
    },
    /// The target has several names: replacing it would split them, rewriting it would change
    /// files that were never checked.
    #[error("{} has {links} hard links; nothing was written", .path.display())]
    HardLinks {
        /// The file.
        path: std::path::PathBuf,
        /// How many names it has.
        links: u64,
    },
    /// A name that is not one plain component below an absolute directory.
    #[error("{} cannot be written: {problem}; nothing was written", .path.display())]
    BadName {
        /// The name.
        path: std::path::PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// The system's error.
    #[error("{}: {message}; nothing was written", .path.display())]
    Io {
        /// The file or directory.
        path: std::path::PathBuf,
        /// The system's message.
        message: String,
    },
}

/// Why a read tool could not read a file through its descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ReadError {
    /// No file has that name (or a symbolic link points nowhere).
    #[error("File not found: {}", .0.display())]
    NotFound(std::path::PathBuf),
    /// The system refused to open it.
    #[error("Permission denied: {} is not readable", .0.display())]
    PermissionDenied(std::path::PathBuf),
    /// Not a regular file, too large, or another system error.
    #[error(transparent)]
    File(#[from] FileError),
    /// A `.gz` file whose content is not valid gzip data.
    #[error("{} is not valid gzip data: {message}", .path.display())]
    Gzip {
        /// The file.
        path: std::path::PathBuf,
        /// The decoder's message.
        message: String,
    },
}

/// Failures of the MCP server (see [`crate::mcp`]).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum McpError {
    /// The address could not be bound (port in use, permission...).
    #[error("cannot listen on {address}: {message}")]
    Bind {
        /// The address, `127.0.0.1:PORT`.
        address: String,
        /// The system's message.
        message: String,
    },
    /// The server's runtime could not be started.
    #[error("cannot start the MCP server's runtime: {0}")]
    Runtime(String),
    /// A setting that cannot work (a short token, a zero interval).
    #[error("invalid MCP server configuration: {0}")]
    InvalidConfig(String),
    /// The operating system's random source failed.
    #[error("cannot make a token: the system's random source failed: {0}")]
    Random(String),
}

/// A directory glob of an approval rule (`agent-q-approval-rules`) that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum GlobError {
    /// The glob is not an absolute file name (after `~` was expanded).
    #[error("the glob {0:?} is not an absolute file name (write it from / or ~)")]
    NotAbsolute(String),
    /// A `.` or `..` component: what it designates depends on links, so it is refused.
    #[error("the glob {0:?} has a . or .. component; write the directory it means")]
    DotComponent(String),
    /// `**` inside a component, as in `a**b`.
    #[error("the glob {0:?} has ** inside a component; ** must be a whole component (a/**/b)")]
    BadDoubleStar(String),
    /// A path to match that is not absolute.
    #[error("the file name {0:?} is not absolute")]
    PathNotAbsolute(String),
    /// Longer than [`crate::rules::MAX_GLOB_BYTES`].
    #[error("the {what} is {len} bytes long, more than {max}")]
    TooLong {
        /// `glob` or `file name`.
        what: &'static str,
        /// Its length in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
}

/// A shell command rule (see [`crate::command::rule`]) that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CommandRuleError {
    /// Nothing but blanks.
    #[error("the command rule is empty")]
    Empty,
    /// The shell reader does not understand it (an open quote, a non-ASCII character...).
    #[error("the command rule {rule:?} is not understood: {problem}")]
    NotUnderstood {
        /// The rule as written.
        rule: String,
        /// What the reader stopped at.
        problem: String,
    },
    /// More than one command, or a substitution, redirection or assignment: a rule names one
    /// plain command.
    #[error("the command rule {rule:?} is not one plain command: it has {what}")]
    NotPlain {
        /// The rule as written.
        rule: String,
        /// What it has besides words.
        what: String,
    },
    /// A wildcard in the command name, or a wildcard other than `*`.
    #[error("the command rule {rule:?}: {problem}")]
    Wildcard {
        /// The rule as written.
        rule: String,
        /// Which wildcard and where.
        problem: String,
    },
}

/// A domain rule for fetches (see [`crate::command::domain`]) that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("the domain rule {rule:?} is not a host name: {problem}")]
pub struct DomainRuleError {
    /// The rule as written.
    pub rule: String,
    /// What is wrong with it.
    pub problem: String,
}

/// A URL whose host cannot be told for certain (see [`crate::command::domain::host_of`]): no
/// domain rule covers it.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("the URL's host cannot be told for certain: {0}")]
pub struct UrlError(pub String);
