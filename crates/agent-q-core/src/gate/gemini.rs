//! Gemini CLI: `BeforeTool`.
//!
//! Tool inputs: `run_shell_command` {command, description?, dir_path? (older: directory)};
//! `write_file` {file_path, content}; `replace` {file_path, old_string, new_string,
//! expected_replacements?}; `read_file` {file_path, or absolute_path in older versions};
//! `read_many_files` {paths, or include}; `web_fetch` {url, or prompt with the URLs in its
//! text}; `grep_search` {pattern, dir_path?, include_pattern?...} (older: `search_file_content`
//! with `path`, `include`); `glob` {pattern, dir_path?}. Both spellings are accepted where
//! versions differ. Every other tool (`list_directory`, `google_web_search`...) is
//! [`ToolKind::Other`].

use serde_json::{Map, Value as Json};

use super::{
    search_kind, text_edit, tool_optional_string, tool_string, type_name, GateAnswer, HookOutput, ToolKind,
    MAX_FETCH_URLS,
};

pub(super) fn classify(tool: &str, input: &Map<String, Json>) -> Result<ToolKind, String> {
    Ok(match tool {
        "run_shell_command" => ToolKind::Shell {
            command: tool_string(input, &["command"])?,
            argv: None,
            dir: match tool_optional_string(input, "dir_path")? {
                Some(dir) => Some(dir),
                None => tool_optional_string(input, "directory")?,
            },
        },
        "write_file" => ToolKind::Write {
            path: tool_string(input, &["file_path", "absolute_path"])?,
            content: tool_string(input, &["content"])?,
        },
        "replace" => ToolKind::Edit {
            path: tool_string(input, &["file_path", "absolute_path"])?,
            edits: vec![text_edit(input)?],
            multi: false,
        },
        "read_file" => ToolKind::Read {
            paths: vec![tool_string(input, &["file_path", "absolute_path"])?],
        },
        "read_many_files" => ToolKind::Read {
            paths: string_list(input, &["paths", "include"])?,
        },
        // grep_search's `pattern` is a regexp over the files' text; `include_pattern` (before:
        // `include`) chooses the files.
        "grep_search" | "search_file_content" => search_kind(
            search_dir(input)?,
            match tool_optional_string(input, "include_pattern")? {
                Some(glob) => vec![glob],
                None => tool_optional_string(input, "include")?.into_iter().collect(),
            }
            .into_iter()
            .filter(|glob| !glob.is_empty())
            .collect(),
        ),
        "glob" => search_kind(search_dir(input)?, vec![tool_string(input, &["pattern"])?]),
        "web_fetch" => ToolKind::Fetch {
            urls: match tool_optional_string(input, "url")? {
                Some(url) => vec![url],
                None => urls_in(&tool_string(input, &["prompt"])?),
            },
        },
        _ => ToolKind::Other,
    })
}

/// The folder a search names: `dir_path` (before: `path`).
fn search_dir(input: &Map<String, Json>) -> Result<Option<String>, String> {
    match tool_optional_string(input, "dir_path")? {
        Some(dir) => Ok(Some(dir)),
        None => tool_optional_string(input, "path"),
    }
}

/// The first of NAMES that INPUT has, as a list of strings.
fn string_list(input: &Map<String, Json>, names: &[&str]) -> Result<Vec<String>, String> {
    for name in names {
        match input.get(*name) {
            None | Some(Json::Null) => {}
            Some(Json::Array(items)) => {
                return items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| match item {
                        Json::String(text) => Ok(text.clone()),
                        other => Err(format!("has {name}[{i}] as {}, not a string", type_name(other))),
                    })
                    .collect()
            }
            Some(other) => return Err(format!("has {name} as {}, not a list", type_name(other))),
        }
    }
    Err(format!("has no {}", names.join(" or ")))
}

/// The `http://` and `https://` URLs in TEXT, in order, without repeats, at most
/// [`MAX_FETCH_URLS`]: each runs to the next space, quote or angle bracket, less trailing
/// punctuation.
pub(super) fn urls_in(text: &str) -> Vec<String> {
    let mut urls: Vec<String> = Vec::new();
    let lower = text.to_ascii_lowercase();
    let mut at = 0;
    while urls.len() < MAX_FETCH_URLS {
        let Some(found) = ["http://", "https://"]
            .iter()
            .filter_map(|scheme| lower[at..].find(scheme))
            .min()
        else {
            break;
        };
        let start = at + found;
        let rest = &text[start..];
        let end = rest
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`'))
            .unwrap_or(rest.len());
        let url = rest[..end].trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']', '}']);
        let scheme = if lower[start..].starts_with("https://") { 8 } else { 7 };
        if url.len() > scheme && !urls.iter().any(|u| u == url) {
            urls.push(url.to_string());
        }
        at = start + end.max(1);
    }
    urls
}

pub(super) fn format(answer: &GateAnswer) -> HookOutput {
    let value = match answer {
        GateAnswer::Allow { updated_input: None } => serde_json::json!({"decision": "allow"}),
        GateAnswer::Allow {
            updated_input: Some(input),
        } => serde_json::json!({
            "decision": "allow",
            "hookSpecificOutput": {"hookEventName": "BeforeTool", "tool_input": input}
        }),
        GateAnswer::Deny { reason } => serde_json::json!({"decision": "deny", "reason": reason}),
        GateAnswer::Ask { reason: None } => serde_json::json!({"decision": "ask"}),
        GateAnswer::Ask { reason: Some(reason) } => serde_json::json!({"decision": "ask", "reason": reason}),
        GateAnswer::NoOpinion => return HookOutput::silent(),
    };
    HookOutput::json(value)
}
