//! `agent-q-mcp`: the stdio relay to the MCP server of the running Emacs (see
//! [`agent_q_mcp::relay`]). An MCP client starts it as a command; it relays stdio to the server
//! that the connection file names, and exits with a message on stderr when none is serving.

use std::path::PathBuf;
use std::process::ExitCode;

use agent_q_mcp::error::RelayError;
use agent_q_mcp::relay;

const USAGE: &str = "\
usage: agent-q-mcp [--connection-file FILE]

Relays the MCP stdio transport to the MCP server of the running Emacs (agent-q).
The connection file is FILE, else $AGENT_Q_MCP_CONNECTION_FILE, else
~/.emacs.d/agent-q-mcp.json (or ~/.config/emacs/agent-q-mcp.json); Emacs writes it
when M-x agent-q-mcp-start starts the server.";

enum Command {
    Relay(Option<PathBuf>),
    Help,
    Version,
}

fn parse_args(args: impl IntoIterator<Item = std::ffi::OsString>) -> Result<Command, RelayError> {
    let mut file = None;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let text = arg.to_string_lossy();
        if text == "--help" || text == "-h" {
            return Ok(Command::Help);
        } else if text == "--version" {
            return Ok(Command::Version);
        } else if text == "--connection-file" {
            let value = args
                .next()
                .ok_or_else(|| RelayError::Usage("--connection-file needs a FILE".into()))?;
            file = Some(PathBuf::from(value));
        } else if let Some(value) = text.strip_prefix("--connection-file=") {
            file = Some(PathBuf::from(value));
        } else {
            return Err(RelayError::Usage(format!("unknown argument {text}\n{USAGE}")));
        }
    }
    Ok(Command::Relay(file))
}

async fn run(file: Option<PathBuf>) -> Result<(), RelayError> {
    let env = std::env::var_os(relay::CONNECTION_FILE_ENV)
        .filter(|value| !value.is_empty())
        .map(PathBuf::from);
    let home = std::env::var_os("HOME")
        .filter(|value| !value.is_empty())
        .map(PathBuf::from);
    let path = relay::connection_file(file, env, home).ok_or_else(|| {
        RelayError::Usage(format!(
            "HOME is not set: name the connection file with --connection-file or ${}",
            relay::CONNECTION_FILE_ENV
        ))
    })?;
    let connection = relay::read_connection(&path)?;
    relay::check_server(&connection).await?;
    relay::relay(&connection, tokio::io::stdin(), tokio::io::stdout()).await
}

fn main() -> ExitCode {
    let command = match parse_args(std::env::args_os().skip(1)) {
        Ok(command) => command,
        Err(error) => {
            eprintln!("agent-q-mcp: {error}");
            return ExitCode::from(2);
        }
    };
    let file = match command {
        Command::Help => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Command::Version => {
            println!("agent-q-mcp {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Command::Relay(file) => file,
    };
    // One thread is plenty for a relay, and keeps the order in which messages are handed on.
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("agent-q-mcp: cannot start: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(file)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("agent-q-mcp: {error}");
            ExitCode::FAILURE
        }
    }
}
