//! Claude Code: `PreToolUse` and `PermissionRequest`.
//!
//! Tool inputs: `Bash` {command, description?, timeout?, run_in_background?}; `Edit`
//! {file_path, old_string, new_string, replace_all?}; `MultiEdit` {file_path, edits: [{old_string,
//! new_string, replace_all?}]}; `Write` {file_path, content}; `Read` {file_path, offset?,
//! limit?}; `WebFetch` {url, prompt}; `Grep` {pattern, path?, glob?, type?, output_mode?...};
//! `Glob` {pattern, path?}. Every other tool (`NotebookEdit`, `WebSearch`, `Task`...) is
//! [`ToolKind::Other`].

use serde_json::{Map, Value as Json};

use super::{
    permission_request, pre_tool_use, search_kind, split_globs, text_edit, tool_optional_string, tool_string,
    GateAnswer, HookEvent, HookOutput, ToolKind, ALLOWED,
};

pub(super) fn classify(tool: &str, input: &Map<String, Json>) -> Result<ToolKind, String> {
    Ok(match tool {
        "Bash" => ToolKind::Shell {
            command: tool_string(input, &["command"])?,
            argv: None,
            dir: None,
        },
        "Edit" => ToolKind::Edit {
            path: tool_string(input, &["file_path"])?,
            edits: vec![text_edit(input)?],
            multi: false,
        },
        "MultiEdit" => ToolKind::Edit {
            path: tool_string(input, &["file_path"])?,
            edits: edits_list(input)?,
            multi: true,
        },
        "Write" => ToolKind::Write {
            path: tool_string(input, &["file_path"])?,
            content: tool_string(input, &["content"])?,
        },
        "Read" => ToolKind::Read {
            paths: vec![tool_string(input, &["file_path"])?],
        },
        // Grep's `pattern` is a regexp over the files' text; its `glob` chooses the files.
        "Grep" => search_kind(
            tool_optional_string(input, "path")?,
            tool_optional_string(input, "glob")?
                .map(|glob| split_globs(&glob))
                .unwrap_or_default(),
        ),
        "Glob" => search_kind(
            tool_optional_string(input, "path")?,
            vec![tool_string(input, &["pattern"])?],
        ),
        "WebFetch" => ToolKind::Fetch {
            urls: vec![tool_string(input, &["url"])?],
        },
        _ => ToolKind::Other,
    })
}

/// `MultiEdit`'s `edits`: a list of replacements.
fn edits_list(input: &Map<String, Json>) -> Result<Vec<super::TextEdit>, String> {
    let Some(Json::Array(items)) = input.get("edits") else {
        return Err("has no edits list".into());
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Json::Object(object) => text_edit(object).map_err(|problem| format!("edits[{i}] {problem}")),
            _ => Err(format!("edits[{i}] is not an object")),
        })
        .collect()
}

pub(super) fn format(event: HookEvent, answer: &GateAnswer) -> HookOutput {
    match (event, answer) {
        (HookEvent::PreTool, GateAnswer::Allow { updated_input }) => {
            pre_tool_use("allow", Some(ALLOWED), updated_input.as_ref())
        }
        (HookEvent::PreTool, GateAnswer::Deny { reason }) => pre_tool_use("deny", Some(reason), None),
        (HookEvent::PreTool, GateAnswer::Ask { reason }) => pre_tool_use("ask", reason.as_deref(), None),
        (HookEvent::PermissionRequest, GateAnswer::Allow { updated_input }) => {
            let mut decision = Map::new();
            decision.insert("behavior".into(), "allow".into());
            if let Some(input) = updated_input {
                decision.insert("updatedInput".into(), input.clone());
            }
            permission_request(Json::Object(decision))
        }
        (HookEvent::PermissionRequest, GateAnswer::Deny { reason }) => {
            permission_request(serde_json::json!({"behavior": "deny", "message": reason}))
        }
        (HookEvent::PermissionRequest, GateAnswer::Ask { .. }) | (_, GateAnswer::NoOpinion) => HookOutput::silent(),
    }
}
