//! `agent-q--core-gate-*`: the text an agent's own edit would leave, for the gate's review
//! (lisp/agent-q-gate-edit.el), and the walk judging what a search can read
//! (lisp/agent-q-gate.el), from [`agent_q_core::gate`]. Errors signal `agent-q-error`
//! with the core's message, which the gate gives the model.

use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use emacs::{defun, Env, IntoLisp, Result, Value};
use serde_json::{Map, Value as Json};

use super::args::{self, MAX_NAME_BYTES, MAX_TEXT_BYTES};
use super::errors::{self, Kind};
use super::ide::string_items;
use agent_q_core::gate::{self, Agent, SensitivePatterns, ToolKind, WalkLimits, WalkVerdict, WALK_BUDGET};

/// The text FILE-INDEX's file would have after AGENT's call of TOOL with INPUT, CURRENT being
/// its text now.
///
/// AGENT is \"claude\", \"gemini\" or \"codex\"; TOOL the agent's tool name; INPUT the tool
/// input as JSON text.  An edit (Claude Edit, MultiEdit, Gemini replace) applies its
/// replacements to CURRENT in order; a write (Write, write_file) is its content; a Codex
/// apply_patch gives the text of its file number FILE-INDEX (from 0, as the request's :files
/// list them).  Signal `agent-q-error' when the edit cannot be applied (old_string not found or
/// not unique, a hunk that does not match) or the call is no edit.
#[defun]
fn gate_edit_text<'e>(
    env: &'e Env,
    agent: Value<'e>,
    tool: Value<'e>,
    input: Value<'e>,
    current: Value<'e>,
    file_index: Value<'e>,
) -> Result<Value<'e>> {
    let agent_name = args::string(env, agent, "AGENT", MAX_NAME_BYTES)?;
    let tool = args::string(env, tool, "TOOL", MAX_NAME_BYTES)?;
    let input = args::string(env, input, "INPUT", MAX_TEXT_BYTES)?;
    let current = args::string(env, current, "CURRENT", MAX_TEXT_BYTES)?;
    let index = if file_index.is_not_nil() {
        args::integer(env, file_index, "FILE-INDEX")?
    } else {
        0
    };
    let Ok(agent) = agent_name.parse::<Agent>() else {
        return errors::signal(env, Kind::Generic, format!("unknown agent {agent_name:?}"));
    };
    let input: Map<String, Json> = match serde_json::from_str(&input) {
        Ok(Json::Object(map)) => map,
        Ok(_) => return errors::signal(env, Kind::Generic, "INPUT is not a JSON object"),
        Err(e) => return errors::signal(env, Kind::Generic, format!("INPUT is not JSON: {e}")),
    };
    let kind = match gate::classify(agent, &tool, &input) {
        Ok(kind) => kind,
        Err(e) => return errors::signal(env, Kind::Generic, e.to_string()),
    };
    let result = match kind {
        ToolKind::Edit { edits, .. } => gate::apply_text_edits(&current, &edits),
        ToolKind::Write { content, .. } => Ok(content),
        ToolKind::Patch { patch, .. } => match usize::try_from(index) {
            Ok(index) => gate::apply_patch_file(&patch, index, &current),
            Err(_) => return errors::signal(env, Kind::Generic, "FILE-INDEX is negative"),
        },
        _ => return errors::signal(env, Kind::Generic, format!("{tool} is not an edit")),
    };
    match result {
        Ok(text) => text.into_lisp(env),
        Err(e) => errors::signal(env, Kind::Generic, e.to_string()),
    }
}

/// A Codex apply_patch section that turns OLD into NEW in the file PATH.
///
/// With NEW-FILE non-nil (the file does not exist), an \"*** Add File:\" section; otherwise an
/// \"*** Update File:\" section whose one hunk replaces every line.  The caller wraps the
/// sections in \"*** Begin Patch\" and \"*** End Patch\" lines.
#[defun]
fn gate_patch_section<'e>(
    env: &'e Env,
    path: Value<'e>,
    old: Value<'e>,
    new: Value<'e>,
    new_file: Value<'e>,
) -> Result<Value<'e>> {
    let path = args::string(env, path, "PATH", MAX_NAME_BYTES)?;
    let old = args::string(env, old, "OLD", MAX_TEXT_BYTES)?;
    let new = args::string(env, new, "NEW", MAX_TEXT_BYTES)?;
    if path.contains('\n') {
        return errors::signal(env, Kind::Generic, "PATH has a newline");
    }
    gate::patch_section(&path, &old, &new, new_file.is_not_nil()).into_lisp(env)
}

/// The sensitive patterns last compiled, by the patterns and decorations they came from.
type CompiledPatterns = (Vec<String>, Vec<String>, Arc<SensitivePatterns>);

fn compiled_patterns() -> &'static Mutex<Option<CompiledPatterns>> {
    static COMPILED: OnceLock<Mutex<Option<CompiledPatterns>>> = OnceLock::new();
    COMPILED.get_or_init(|| Mutex::new(None))
}

/// PATTERNS and DECORATIONS compiled, reused while they stay the same.
fn sensitive_patterns(
    patterns: Vec<String>,
    decorations: Vec<String>,
) -> std::result::Result<Arc<SensitivePatterns>, String> {
    // No call into Emacs while the lock is held.
    let mut cache = compiled_patterns()
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((p, d, compiled)) = cache.as_ref() {
        if *p == patterns && *d == decorations {
            return Ok(compiled.clone());
        }
    }
    let compiled = Arc::new(SensitivePatterns::with_decorations(&patterns, &decorations)?);
    *cache = Some((patterns, decorations, compiled.clone()));
    Ok(compiled)
}

/// Whether a search of the folder DIRECTORY through GLOBS can read a sensitive file.
///
/// GLOBS (a list of strings; nil: every file) choose the files searched, at any depth, as
/// Claude's Grep and Glob and Gemini's grep_search and glob do.  The folder is walked without
/// following links and without `.git', bounded in entries and time (so that Emacs waits at most
/// some 60 ms); every file the globs select is matched, ignoring case, by its absolute name
/// against PATTERNS (Emacs regexps, as `agent-q-sensitive-file-patterns').  A link that leads
/// outside the folder or to a sensitive file counts as one.  Return a string saying which
/// file reaches; (cut . WHY) when the walk stopped before it had checked everything, WHY
/// saying why (too many entries, out of time, a glob naming files outside the folder); else
/// the list of the selected files (absolute names, at most 64) whose base names DECORATIONS
/// (Emacs regexps, as `agent-q-guard--decorations') match or that hold a ! or :, which may
/// stand for another file; else nil.  Signal `agent-q-error' for a pattern that cannot be
/// compiled.
#[defun]
fn gate_walk_search<'e>(
    env: &'e Env,
    directory: Value<'e>,
    globs: Value<'e>,
    patterns: Value<'e>,
    decorations: Value<'e>,
) -> Result<Value<'e>> {
    let directory = args::string(env, directory, "DIRECTORY", MAX_NAME_BYTES)?;
    let globs = string_items(env, globs, "GLOBS")?;
    let patterns = string_items(env, patterns, "PATTERNS")?;
    let decorations = string_items(env, decorations, "DECORATIONS")?;
    let start = Instant::now();
    let sensitive = match sensitive_patterns(patterns, decorations) {
        Ok(sensitive) => sensitive,
        Err(e) => return errors::signal(env, Kind::Generic, e),
    };
    let limits = WalkLimits {
        budget: WALK_BUDGET.saturating_sub(start.elapsed()),
        ..WalkLimits::default()
    };
    match gate::walk_search(Path::new(&directory), &globs, &sensitive, limits) {
        WalkVerdict::Clear => env.intern("nil"),
        WalkVerdict::Decorated(files) => {
            let mut list = env.intern("nil")?;
            for file in files.iter().rev() {
                list = env.cons(file.as_str().into_lisp(env)?, list)?;
            }
            Ok(list)
        }
        WalkVerdict::Cut(why) => env.cons(env.intern("cut")?, why.into_lisp(env)?),
        verdict => verdict.reason().unwrap_or_default().into_lisp(env),
    }
}
