//! Codex CLI: `PreToolUse` and `PermissionRequest`.
//!
//! Tool inputs: `Bash` {command: a string or an argv array, workdir?} (also accepted under the
//! names `shell`, `exec_command` (with `cmd`) and `local_shell`); `apply_patch` {command: the
//! patch} (also `patch` or `input`, or an argv array `["apply_patch", PATCH]`). Every other tool
//! is [`ToolKind::Other`].
//!
//! Codex's `PreToolUse` cannot allow except with an `updatedInput`, and rejects `ask`: a plain
//! allow, an ask and no opinion all print nothing, and Codex runs its own approval flow.

use serde_json::{Map, Value as Json};

use super::{
    patch_files, permission_request, pre_tool_use, tool_optional_string, type_name, GateAnswer, HookEvent, HookOutput,
    ToolKind, ALLOWED,
};

pub(super) fn classify(tool: &str, input: &Map<String, Json>) -> Result<ToolKind, String> {
    Ok(match tool {
        "Bash" | "shell" | "exec_command" | "local_shell" => {
            let (command, argv) = command_of(input, &["command", "cmd"])?;
            // Codex runs `apply_patch <<'EOF' ... EOF` given to its shell as its patch tool.
            if let Some(patch) = argv.is_none().then(|| heredoc_patch(&command)).flatten() {
                return Ok(ToolKind::Patch {
                    files: patch_files(&patch),
                    patch,
                });
            }
            ToolKind::Shell {
                command,
                argv,
                dir: tool_optional_string(input, "workdir")?,
            }
        }
        "apply_patch" => {
            let (patch, argv) = command_of(input, &["command", "patch", "input"])?;
            // As argv, the patch is the last word: ["apply_patch", PATCH].
            let patch = match argv {
                Some(mut words) => words.pop().unwrap_or_default(),
                None => patch,
            };
            ToolKind::Patch {
                files: patch_files(&patch),
                patch,
            }
        }
        _ => ToolKind::Other,
    })
}

/// The patch of COMMAND when it is exactly `apply_patch <<DELIM` (DELIM bare or quoted), the
/// patch's lines and a line DELIM, and nothing else (a compound command stays a shell command).
pub(super) fn heredoc_patch(command: &str) -> Option<String> {
    let command = command.trim();
    let (first, rest) = command.split_once('\n')?;
    let delimiter = first
        .trim()
        .strip_prefix("apply_patch")?
        .trim_start()
        .strip_prefix("<<")?;
    let delimiter = delimiter.trim();
    let delimiter = ['\'', '"']
        .iter()
        .find_map(|q| delimiter.strip_prefix(*q).and_then(|d| d.strip_suffix(*q)))
        .unwrap_or(delimiter);
    if delimiter.is_empty() || delimiter.contains(char::is_whitespace) {
        return None;
    }
    let mut patch = String::new();
    let mut lines = rest.split('\n');
    for line in lines.by_ref() {
        if line == delimiter {
            return lines
                .all(|l| l.trim().is_empty())
                .then_some(patch)
                .filter(|p| p.starts_with("*** Begin Patch"));
        }
        patch.push_str(line);
        patch.push('\n');
    }
    None
}

/// The first of NAMES in INPUT as a command line, and its argv when it came as an array.
fn command_of(input: &Map<String, Json>, names: &[&str]) -> Result<(String, Option<Vec<String>>), String> {
    for name in names {
        match input.get(*name) {
            None | Some(Json::Null) => {}
            Some(Json::String(text)) => return Ok((text.clone(), None)),
            Some(Json::Array(items)) => {
                let argv = items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| match item {
                        Json::String(word) => Ok(word.clone()),
                        other => Err(format!("has {name}[{i}] as {}, not a string", type_name(other))),
                    })
                    .collect::<Result<Vec<String>, String>>()?;
                if argv.is_empty() {
                    return Err(format!("has an empty {name}"));
                }
                return Ok((shell_join(&argv), Some(argv)));
            }
            Some(other) => return Err(format!("has {name} as {}, not a string or a list", type_name(other))),
        }
    }
    Err(format!("has no {}", names.join(" or ")))
}

/// ARGV as one POSIX shell command line: words of safe characters as they are, others in
/// single quotes.
pub(super) fn shell_join(argv: &[String]) -> String {
    let quote = |word: &String| {
        let safe = !word.is_empty()
            && word
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c));
        if safe {
            word.clone()
        } else {
            format!("'{}'", word.replace('\'', "'\\''"))
        }
    };
    argv.iter().map(quote).collect::<Vec<_>>().join(" ")
}

pub(super) fn format(event: HookEvent, answer: &GateAnswer) -> HookOutput {
    match (event, answer) {
        (
            HookEvent::PreTool,
            GateAnswer::Allow {
                updated_input: Some(input),
            },
        ) => pre_tool_use("allow", Some(ALLOWED), Some(input)),
        (HookEvent::PreTool, GateAnswer::Deny { reason }) => pre_tool_use("deny", Some(reason), None),
        (HookEvent::PermissionRequest, GateAnswer::Allow { updated_input: None }) => {
            permission_request(serde_json::json!({"behavior": "allow"}))
        }
        (HookEvent::PermissionRequest, GateAnswer::Deny { reason }) => {
            permission_request(serde_json::json!({"behavior": "deny", "message": reason}))
        }
        // A plain allow in PreToolUse, an edited input in PermissionRequest (which cannot carry
        // one: the unedited call must not be allowed), ask and no opinion: Codex's own flow.
        (_, GateAnswer::Allow { .. } | GateAnswer::Ask { .. } | GateAnswer::NoOpinion) => HookOutput::silent(),
    }
}
