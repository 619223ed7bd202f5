//! `agent-q-mcp`: the stdio relay to the MCP server of the running Emacs (see
//! [`agent_q_mcp::relay`]). An MCP client starts it as a command; it relays stdio to the server
//! that the connection file names, and exits with a message on stderr when none is serving.

use std::path::PathBuf;
use std::process::ExitCode;

use agent_q_mcp::error::RelayError;
use agent_q_mcp::hook::{self, HookOptions, Unreachable};
use agent_q_mcp::relay;

const USAGE: &str = "\
usage: agent-q-mcp [--connection-file FILE]
       agent-q-mcp hook --agent claude|gemini|codex [--event pre-tool|permission-request|after-tool]
                        [--connection-file FILE] [--unreachable ask|deny] [--timeout SECONDS]
       agent-q-mcp status-line [--agent claude] [--connection-file FILE]

Relays the MCP stdio transport to the MCP server of the running Emacs (agent-q).
The connection file is FILE, else $AGENT_Q_MCP_CONNECTION_FILE, else
~/.emacs.d/agent-q-mcp.json (or ~/.config/emacs/agent-q-mcp.json); Emacs writes it
when M-x agent-q-mcp-start starts the server.

`hook' is the command a terminal agent runs before each of its own tool calls
(Claude Code's PreToolUse or PermissionRequest, Gemini CLI's BeforeTool, Codex
CLI's PreToolUse or PermissionRequest): it reads the hook input on stdin, asks
Emacs, and prints the agent's answer. When Emacs cannot be asked it leaves the
call to the agent's own prompt (Claude, Gemini: ask; Codex: no output, but only
where Codex's own approval policy asks: else it denies), or denies it with
--unreachable deny. --timeout is the agent's hook timeout: Emacs shows the time
left, and the call is denied, saying so, when it runs out.  With --event
after-tool (Gemini CLI's AfterTool) it prints what the model must be told about
a call Emacs changed (an edited command, rejected hunks), else nothing.
Run as the agent's
prompt hook (Claude Code's and Codex CLI's UserPromptSubmit, Gemini CLI's
BeforeAgent), it tells Emacs that a turn of the session begins, for the journal
of changes, without waiting, and prints nothing.

`status-line' is Claude Code's statusLine command: given the session on stdin,
it prints \"Waiting for Emacs (agent-q)... answer there\" while a hook of that
session waits for Emacs, else nothing.";

enum Command {
    Relay(Option<PathBuf>),
    Hook(HookOptions),
    StatusLine(Option<PathBuf>, agent_q_core::gate::Agent),
    Help,
    Version,
}

fn parse_args(args: impl IntoIterator<Item = std::ffi::OsString>) -> Result<Command, RelayError> {
    let mut file = None;
    let mut hook = false;
    let mut status = false;
    let (mut agent, mut event, mut unreachable, mut timeout) = (None, None, Unreachable::Ask, None);
    let mut after_tool = false;
    let mut args = args.into_iter().peekable();
    if args.peek().is_some_and(|first| first == "hook") {
        hook = true;
        args.next();
    } else if args.peek().is_some_and(|first| first == "status-line") {
        status = true;
        args.next();
    }
    while let Some(arg) = args.next() {
        let text = arg.to_string_lossy().into_owned();
        if text == "--help" || text == "-h" {
            return Ok(Command::Help);
        } else if text == "--version" {
            return Ok(Command::Version);
        }
        let (name, inline) = match text.split_once('=') {
            Some((name, value)) if name.starts_with("--") => (name.to_string(), Some(value.to_string())),
            _ => (text.clone(), None),
        };
        let known = matches!(name.as_str(), "--connection-file")
            || (hook && matches!(name.as_str(), "--agent" | "--event" | "--unreachable" | "--timeout"))
            || (status && name == "--agent");
        if !known {
            return Err(RelayError::Usage(format!("unknown argument {text}\n{USAGE}")));
        }
        let value = match inline {
            Some(value) => value,
            None => args
                .next()
                .map(|value| value.to_string_lossy().into_owned())
                .ok_or_else(|| RelayError::Usage(format!("{name} needs a value\n{USAGE}")))?,
        };
        match name.as_str() {
            "--agent" => agent = Some(value.parse().map_err(RelayError::Usage)?),
            "--event" if value == "after-tool" => after_tool = true,
            "--event" => event = Some(value.parse().map_err(RelayError::Usage)?),
            "--unreachable" => unreachable = value.parse().map_err(RelayError::Usage)?,
            "--timeout" => {
                timeout = Some(value.parse::<u64>().ok().filter(|t| *t > 0).ok_or_else(|| {
                    RelayError::Usage(format!("--timeout {value:?}: expected a positive number of seconds"))
                })?)
            }
            _ => file = Some(PathBuf::from(value)),
        }
    }
    if status {
        return Ok(Command::StatusLine(
            file,
            agent.unwrap_or(agent_q_core::gate::Agent::Claude),
        ));
    }
    if !hook {
        return Ok(Command::Relay(file));
    }
    let agent = agent.ok_or_else(|| RelayError::Usage(format!("hook needs --agent\n{USAGE}")))?;
    Ok(Command::Hook(HookOptions {
        agent,
        event,
        connection_file: file,
        unreachable,
        timeout,
        after_tool,
    }))
}

async fn run(file: Option<PathBuf>) -> Result<(), RelayError> {
    let path = relay::resolve_connection_file(file)?;
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
        Command::Hook(options) => return run_hook(&options),
        Command::StatusLine(file, agent) => {
            println!(
                "{}",
                agent_q_mcp::waiting::run_status_line(file, agent, std::io::stdin().lock())
            );
            return ExitCode::SUCCESS;
        }
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

/// Run the hook, print its answer, and exit as the agent expects.
fn run_hook(options: &HookOptions) -> ExitCode {
    use std::io::Write;
    let result = hook::run(options, std::io::stdin().lock());
    if let Some(message) = &result.message {
        eprintln!("{message}");
    }
    let mut stdout = std::io::stdout().lock();
    if stdout
        .write_all(result.output.stdout.as_bytes())
        .and_then(|()| stdout.flush())
        .is_err()
    {
        return ExitCode::FAILURE;
    }
    ExitCode::from(result.output.exit_code)
}
