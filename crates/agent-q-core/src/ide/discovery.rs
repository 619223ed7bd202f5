//! The files through which the agents find the companion. Emacs decides where they go and
//! writes them (mode 0600: they hold the token); this module only makes their text.
//!
//! - Gemini CLI: `os.tmpdir()/gemini/ide/gemini-ide-server-PID-PORT.json` holding `port`,
//!   `workspacePath` (the roots joined with `:`), `authToken` and `ideInfo {name,
//!   displayName}` (its companion specification).
//! - Claude Code: `~/.claude/ide/PORT.lock` (or under `$CLAUDE_CONFIG_DIR/ide/`) holding
//!   `pid` (a live process: Claude Code deletes a lock whose pid is dead), `workspaceFolders`,
//!   `ideName` (what its UI shows), `transport: "ws"` and `authToken`. The port is the file's
//!   name, not a field.

use serde_json::json;

use super::IdeError;

/// What the agents show as the IDE's name.
pub const IDE_DISPLAY_NAME: &str = "Emacs";

/// Gemini CLI's short, lower-case identifier of the IDE.
pub const IDE_NAME: &str = "emacs";

fn check_workspaces(workspaces: &[String]) -> Result<(), IdeError> {
    for workspace in workspaces {
        if !workspace.starts_with('/') {
            return Err(IdeError::Invalid(format!(
                "the workspace folder {workspace:?} is not an absolute file name"
            )));
        }
    }
    Ok(())
}

/// The JSON text of Gemini CLI's discovery file for the server on PORT with TOKEN, serving
/// WORKSPACES (absolute directory names; none may contain `:`, the list separator).
pub fn gemini_discovery(port: u16, token: &str, workspaces: &[String]) -> Result<String, IdeError> {
    check_workspaces(workspaces)?;
    if let Some(bad) = workspaces.iter().find(|w| w.contains(':')) {
        return Err(IdeError::Invalid(format!(
            "the workspace folder {bad:?} contains ':', which Gemini CLI reads as a separator"
        )));
    }
    Ok(json!({
        "port": port,
        "workspacePath": workspaces.join(":"),
        "authToken": token,
        "ideInfo": {"name": IDE_NAME, "displayName": IDE_DISPLAY_NAME},
    })
    .to_string())
}

/// The JSON text of Claude Code's lock file for TOKEN, serving WORKSPACES (absolute directory
/// names), owned by the live process PID.
pub fn claude_lock(token: &str, workspaces: &[String], pid: u32) -> Result<String, IdeError> {
    check_workspaces(workspaces)?;
    Ok(json!({
        "pid": pid,
        "workspaceFolders": workspaces,
        "ideName": IDE_DISPLAY_NAME,
        "transport": "ws",
        "authToken": token,
    })
    .to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn gemini_discovery_file() {
        let text = gemini_discovery(4321, "tok", &["/a/b".into(), "/c".into()]).unwrap();
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            value,
            json!({"port": 4321, "workspacePath": "/a/b:/c", "authToken": "tok",
                   "ideInfo": {"name": "emacs", "displayName": "Emacs"}})
        );
        assert!(gemini_discovery(1, "t", &["/a:b".into()]).is_err());
        assert!(gemini_discovery(1, "t", &["rel".into()]).is_err());
        let empty: Value = serde_json::from_str(&gemini_discovery(1, "t", &[]).unwrap()).unwrap();
        assert_eq!(empty["workspacePath"], "");
    }

    #[test]
    fn claude_lock_file() {
        let text = claude_lock("tok", &["/w/x y".into()], 99).unwrap();
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            value,
            json!({"pid": 99, "workspaceFolders": ["/w/x y"], "ideName": "Emacs",
                   "transport": "ws", "authToken": "tok"})
        );
        assert!(claude_lock("t", &["~/x".into()], 1).is_err());
    }
}
