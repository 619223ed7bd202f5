//! The files a Codex `apply_patch` touches, from its header lines:
//!
//! ```text
//! *** Begin Patch
//! *** Add File: PATH
//! *** Update File: PATH
//! *** Move to: NEW-PATH
//! *** Delete File: PATH
//! *** End Patch
//! ```

use serde::Serialize;

/// What a patch does to a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PatchAction {
    /// `*** Add File:`
    Add,
    /// `*** Update File:`
    Update,
    /// `*** Delete File:`
    Delete,
}

/// A file a patch touches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PatchFile {
    /// What it does to the file.
    pub action: PatchAction,
    /// The file, as the patch names it.
    pub path: String,
    /// The new name, for an update followed by `*** Move to:`.
    pub move_to: Option<String>,
}

/// The files PATCH touches, in order. Lines that are not file headers are skipped; a
/// `*** Move to:` applies to the update just before it.
pub fn patch_files(patch: &str) -> Vec<PatchFile> {
    let mut files: Vec<PatchFile> = Vec::new();
    for line in patch.lines() {
        let line = line.trim_end_matches('\r');
        let header = [
            ("*** Add File:", PatchAction::Add),
            ("*** Update File:", PatchAction::Update),
            ("*** Delete File:", PatchAction::Delete),
        ]
        .into_iter()
        .find_map(|(prefix, action)| line.strip_prefix(prefix).map(|path| (action, path.trim())));
        if let Some((action, path)) = header {
            files.push(PatchFile {
                action,
                path: path.to_string(),
                move_to: None,
            });
        } else if let Some(target) = line.strip_prefix("*** Move to:") {
            if let Some(last) = files.last_mut().filter(|f| f.action == PatchAction::Update) {
                last.move_to = Some(target.trim().to_string());
            }
        }
    }
    files
}
