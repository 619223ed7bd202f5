//! The files a search inside the agent's working directory can read, walked and judged.
//!
//! A search's globs ([`super::search`]) tell which names it may read; the walk tells which
//! files are there. [`walk_search`] walks the searched folder iteratively (no recursion),
//! never following a symbolic link, skipping `.git`, within [`WalkLimits`] (a number of entries
//! and a time budget, so that Emacs's main loop never waits long), and tests every file the
//! globs select against the read guard's sensitive patterns (Emacs regexps, matched ignoring
//! case against the file's absolute name, as `agent-q-guard-sensitive-match` does). A symbolic
//! link the globs select is reachable when it points outside the folder, to a sensitive file,
//! or nowhere that can be resolved.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use regex_automata::meta::Regex;
use regex_automata::util::syntax;

use super::search::{glob_matches_path, glob_reach_outside};
use crate::search::translate;

/// The most entries a walk looks at by default.
pub const WALK_MAX_ENTRIES: usize = 20_000;

/// The longest a walk takes by default.
pub const WALK_BUDGET: Duration = Duration::from_millis(60);

/// How far a walk goes.
#[derive(Debug, Clone, Copy)]
pub struct WalkLimits {
    /// The most directory entries looked at.
    pub max_entries: usize,
    /// The longest the walk takes.
    pub budget: Duration,
}

impl Default for WalkLimits {
    fn default() -> Self {
        WalkLimits {
            max_entries: WALK_MAX_ENTRIES,
            budget: WALK_BUDGET,
        }
    }
}

/// What a walk found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WalkVerdict {
    /// Every file the search can read was checked; none is sensitive.
    Clear,
    /// The search can reach this file (relative to the folder), sensitive or leading outside.
    Reaches {
        /// The file, relative to the searched folder.
        file: String,
        /// Why it counts: sensitive, or a link leading outside the folder.
        why: String,
    },
    /// The walk stopped before it checked everything.
    Cut(String),
    /// No file matches a pattern, but these selected files (absolute names, at most
    /// [`MAX_DECORATED`]) may stand for others: the read guard judges them.
    Decorated(Vec<String>),
}

impl WalkVerdict {
    /// Why the search needs asking, or `None` when it does not.
    pub fn reason(&self) -> Option<String> {
        match self {
            WalkVerdict::Clear | WalkVerdict::Decorated(_) => None,
            WalkVerdict::Reaches { file, why } => Some(format!("the search can reach {file} ({why})")),
            WalkVerdict::Cut(why) => Some(why.clone()),
        }
    }
}

/// The most decorated files (backup, auto-save, lock, archive names) a walk hands back for
/// the read guard to judge; a walk that finds more is cut.
pub const MAX_DECORATED: usize = 64;

/// The read guard's sensitive patterns, compiled once, with the decorations (backup,
/// auto-save, lock and swap names) that make a file stand for another.
#[derive(Debug)]
pub struct SensitivePatterns {
    regexes: Vec<(String, Regex)>,
    /// One regexp matching what any of REGEXES matches (a fast first test).
    any: Option<Regex>,
    /// One regexp matching a base name any decoration matches.
    decorated: Option<Regex>,
}

/// PATTERNS, Emacs regexps, compiled ignoring case: each alone, and all in one.
type Compiled = (Vec<(String, Regex)>, Option<Regex>);

fn compile_all(patterns: &[String]) -> Result<Compiled, String> {
    let mut regexes = Vec::with_capacity(patterns.len());
    let mut translated = Vec::with_capacity(patterns.len());
    for pattern in patterns {
        let translation = translate(pattern).map_err(|e| format!("the pattern {pattern:?}: {e}"))?;
        let regex = build(&translation.pattern).map_err(|e| format!("the pattern {pattern:?}: {e}"))?;
        translated.push(format!("(?:{})", translation.pattern));
        regexes.push((pattern.clone(), regex));
    }
    let any = if translated.is_empty() {
        None
    } else {
        Some(build(&translated.join("|")).map_err(|e| format!("the patterns together: {e}"))?)
    };
    Ok((regexes, any))
}

/// PATTERN, in the `regex` crate's syntax, compiled ignoring case.
fn build(pattern: &str) -> Result<Regex, String> {
    Regex::builder()
        .syntax(syntax::Config::new().case_insensitive(true))
        .build(pattern)
        .map_err(|e| e.to_string())
}

impl SensitivePatterns {
    /// Compile PATTERNS, Emacs regexps; one that cannot be compiled is an error naming it.
    pub fn new(patterns: &[String]) -> Result<Self, String> {
        Self::with_decorations(patterns, &[])
    }

    /// Compile PATTERNS and DECORATIONS, Emacs regexps over a file's base name that make it
    /// stand for another file (`agent-q-guard--decorations`: `#.env#` stands for `.env`).
    pub fn with_decorations(patterns: &[String], decorations: &[String]) -> Result<Self, String> {
        let (regexes, any) = compile_all(patterns)?;
        let (_, decorated) = compile_all(decorations)?;
        Ok(SensitivePatterns {
            regexes,
            any,
            decorated,
        })
    }

    /// The first pattern matching NAME (an absolute file name), if any.
    pub fn matching(&self, name: &str) -> Option<&str> {
        if !self.any.as_ref()?.is_match(name) {
            return None;
        }
        self.regexes
            .iter()
            .find(|(_, regex)| regex.is_match(name))
            .map(|(pattern, _)| pattern.as_str())
    }

    /// Whether the file RELATIVE (to the searched folder) may stand for another file, which
    /// the read guard judges: its base name has a decoration, or the name has a `!` or `:`
    /// (a backup directory's or an archive member's name).
    pub fn decorated(&self, relative: &str) -> bool {
        let base = relative.rsplit('/').next().unwrap_or(relative);
        relative.contains(['!', ':']) || self.decorated.as_ref().is_some_and(|regex| regex.is_match(base))
    }
}

/// Whether GLOBS (none: every file) select the file RELATIVE (`/`-separated) to the folder.
fn selected(globs: &[String], relative: &str) -> bool {
    globs.is_empty() || globs.iter().any(|glob| glob_matches_path(glob, relative))
}

/// Walk FOLDER (absolute) and judge the files that a search with GLOBS can read against
/// SENSITIVE, within LIMITS. A glob that leaves the folder, or that cannot be judged, reaches.
pub fn walk_search(folder: &Path, globs: &[String], sensitive: &SensitivePatterns, limits: WalkLimits) -> WalkVerdict {
    if let Some(why) = globs.iter().find_map(|glob| glob_reach_outside(glob)) {
        return WalkVerdict::Cut(why);
    }
    let root = match folder.canonicalize() {
        Ok(root) => root,
        Err(e) => return WalkVerdict::Cut(format!("{} cannot be read: {e}", folder.display())),
    };
    let start = Instant::now();
    let mut entries = 0usize;
    let mut decorated = Vec::new();
    // Folders still to read, relative to ROOT ("" for ROOT itself).
    let mut pending: Vec<String> = vec![String::new()];
    while let Some(relative_dir) = pending.pop() {
        let dir = if relative_dir.is_empty() {
            root.clone()
        } else {
            root.join(&relative_dir)
        };
        let reader = match std::fs::read_dir(&dir) {
            Ok(reader) => reader,
            // An unreadable folder is not searched by the agent's tool either.
            Err(_) => continue,
        };
        for entry in reader {
            entries += 1;
            if entries > limits.max_entries {
                return WalkVerdict::Cut(format!(
                    "the folder has more than {} entries: not all checked",
                    limits.max_entries
                ));
            }
            if start.elapsed() > limits.budget {
                return WalkVerdict::Cut(format!(
                    "the folder took more than {} ms to walk: not all checked",
                    limits.budget.as_millis()
                ));
            }
            let Ok(entry) = entry else { continue };
            let name = entry.file_name().to_string_lossy().into_owned();
            let relative = if relative_dir.is_empty() {
                name.clone()
            } else {
                format!("{relative_dir}/{name}")
            };
            let Ok(kind) = entry.file_type() else { continue };
            let path = entry.path();
            if kind.is_dir() {
                if name != ".git" {
                    pending.push(relative);
                }
                continue;
            }
            if !selected(globs, &relative) {
                continue;
            }
            let absolute = path.to_string_lossy();
            if let Some(pattern) = sensitive.matching(&absolute) {
                return WalkVerdict::Reaches {
                    file: relative,
                    why: format!("sensitive by {pattern}"),
                };
            }
            if kind.is_symlink() {
                if let Some(why) = link_reach(&path, &root, sensitive) {
                    return WalkVerdict::Reaches { file: relative, why };
                }
            }
            if sensitive.decorated(&relative) {
                if decorated.len() == MAX_DECORATED {
                    return WalkVerdict::Cut(format!(
                        "the folder has more than {MAX_DECORATED} backup, auto-save or lock files: not all checked"
                    ));
                }
                decorated.push(absolute.into_owned());
            }
        }
    }
    if decorated.is_empty() {
        WalkVerdict::Clear
    } else {
        WalkVerdict::Decorated(decorated)
    }
}

/// Why the symbolic link LINK inside ROOT counts as reachable, or `None` when it leads to an
/// ordinary file inside ROOT.
fn link_reach(link: &Path, root: &Path, sensitive: &SensitivePatterns) -> Option<String> {
    let target: PathBuf = match link.canonicalize() {
        Ok(target) => target,
        Err(_) => return Some("a link that cannot be resolved".into()),
    };
    if !target.starts_with(root) {
        return Some(format!("a link to {}, outside the folder", target.display()));
    }
    if target.is_dir() {
        // A folder inside ROOT is walked by its own name; the agent's tool does not follow it.
        return None;
    }
    sensitive
        .matching(&target.to_string_lossy())
        .map(|pattern| format!("a link to {}, sensitive by {pattern}", target.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn defaults() -> SensitivePatterns {
        SensitivePatterns::new(&[
            "/\\.authinfo\\(?:\\.gpg\\)?\\'".into(),
            "/\\.env\\(?:rc\\)?\\(?:\\.[^/]*\\)?\\'".into(),
            "\\.pem\\'".into(),
        ])
        .unwrap()
    }

    fn folder(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("agent-q-walk-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("src/deep/er")).unwrap();
        fs::write(dir.join("README.md"), "x").unwrap();
        fs::write(dir.join("src/main.rs"), "x").unwrap();
        fs::write(dir.join("src/deep/notes.txt"), "x").unwrap();
        dir
    }

    fn walk(dir: &Path, globs: &[&str]) -> WalkVerdict {
        let globs: Vec<String> = globs.iter().map(|g| g.to_string()).collect();
        walk_search(dir, &globs, &defaults(), WalkLimits::default())
    }

    #[test]
    fn ordinary_files_are_clear() {
        let dir = folder("clear");
        assert_eq!(walk(&dir, &[]), WalkVerdict::Clear);
        assert_eq!(walk(&dir, &["*.txt"]), WalkVerdict::Clear);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_deep_env_is_reached_by_a_plain_search() {
        let dir = folder("deep");
        fs::write(dir.join("src/deep/er/.env"), "SECRET=1").unwrap();
        let verdict = walk(&dir, &[]);
        assert!(
            matches!(&verdict, WalkVerdict::Reaches { file, .. } if file == "src/deep/er/.env"),
            "{verdict:?}"
        );
        assert!(verdict
            .reason()
            .unwrap()
            .starts_with("the search can reach src/deep/er/.env"));
        // A glob that cannot select it leaves it out.
        assert_eq!(walk(&dir, &["*.rs"]), WalkVerdict::Clear);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn txt_reaches_env_txt_only_when_there_is_one() {
        let dir = folder("txt");
        assert_eq!(walk(&dir, &["*.txt"]), WalkVerdict::Clear);
        fs::write(dir.join("src/.env.txt"), "SECRET=1").unwrap();
        let verdict = walk(&dir, &["*.txt"]);
        assert!(
            matches!(&verdict, WalkVerdict::Reaches { file, .. } if file == "src/.env.txt"),
            "{verdict:?}"
        );
        assert_eq!(walk(&dir, &["*.md"]), WalkVerdict::Clear);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_link_to_an_authinfo_outside_is_reached() {
        let dir = folder("link");
        let outside = folder("link-home");
        fs::write(outside.join(".authinfo"), "machine x password y").unwrap();
        std::os::unix::fs::symlink(outside.join(".authinfo"), dir.join("src/creds.txt")).unwrap();
        let verdict = walk(&dir, &["*.txt"]);
        match &verdict {
            WalkVerdict::Reaches { file, why } => {
                assert_eq!(file, "src/creds.txt");
                assert!(why.contains("outside the folder"), "{why}");
            }
            other => panic!("{other:?}"),
        }
        // A link to an ordinary file inside the folder is fine.
        fs::remove_file(dir.join("src/creds.txt")).unwrap();
        std::os::unix::fs::symlink(dir.join("README.md"), dir.join("src/readme.txt")).unwrap();
        assert_eq!(walk(&dir, &["*.txt"]), WalkVerdict::Clear);
        // A link to a sensitive file inside the folder is reached.
        fs::write(dir.join("server.pem"), "key").unwrap();
        std::os::unix::fs::symlink(dir.join("server.pem"), dir.join("src/key.txt")).unwrap();
        let verdict = walk(&dir, &["*.txt"]);
        assert!(
            matches!(&verdict, WalkVerdict::Reaches { file, why } if file == "src/key.txt" && why.contains("sensitive")),
            "{verdict:?}"
        );
        fs::remove_dir_all(&dir).unwrap();
        fs::remove_dir_all(&outside).unwrap();
    }

    #[test]
    fn a_large_folder_cuts_the_walk() {
        let dir = folder("cut");
        for i in 0..30 {
            fs::write(dir.join(format!("f{i}.txt")), "x").unwrap();
        }
        let limits = WalkLimits {
            max_entries: 10,
            budget: Duration::from_secs(60),
        };
        let verdict = walk_search(&dir, &[], &defaults(), limits);
        assert_eq!(
            verdict.reason().as_deref(),
            Some("the folder has more than 10 entries: not all checked")
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn git_is_skipped_and_globs_outside_are_not_walked() {
        let dir = folder("git");
        fs::create_dir_all(dir.join(".git")).unwrap();
        fs::write(dir.join(".git/.env"), "x").unwrap();
        assert_eq!(walk(&dir, &[]), WalkVerdict::Clear);
        assert!(matches!(walk(&dir, &["../*.rs"]), WalkVerdict::Cut(_)));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_bad_pattern_is_an_error() {
        assert!(SensitivePatterns::new(&["\\(".into()]).is_err());
        assert!(SensitivePatterns::with_decorations(&[], &["\\(".into()]).is_err());
    }

    /// The read guard's decorations (`agent-q-guard--decorations`), in part.
    fn decorated() -> SensitivePatterns {
        let patterns = ["/\\.env\\(?:rc\\)?\\(?:\\.[^/]*\\)?\\'".to_string()];
        let decorations = ["\\`\\(.+\\)~\\'".to_string(), "\\`#\\(.+\\)#\\'".to_string()];
        SensitivePatterns::with_decorations(&patterns, &decorations).unwrap()
    }

    #[test]
    fn decorated_names_are_handed_back_for_the_guard() {
        let sensitive = decorated();
        assert!(sensitive.decorated("src/#.env#"));
        assert!(sensitive.decorated("notes.txt~"));
        assert!(sensitive.decorated("keys.tar!.ssh!id_rsa"));
        assert!(!sensitive.decorated("src/main.rs"));
        let dir = folder("decorated");
        assert_eq!(
            walk_search(&dir, &[], &sensitive, WalkLimits::default()),
            WalkVerdict::Clear
        );
        fs::write(dir.join("src/#.env#"), "SECRET=1").unwrap();
        let verdict = walk_search(&dir, &[], &sensitive, WalkLimits::default());
        let expected = dir.canonicalize().unwrap().join("src/#.env#");
        assert_eq!(
            verdict,
            WalkVerdict::Decorated(vec![expected.to_string_lossy().into_owned()])
        );
        assert_eq!(verdict.reason(), None);
        // A glob that does not select it leaves it out.
        assert_eq!(
            walk_search(&dir, &["*.rs".into()], &sensitive, WalkLimits::default()),
            WalkVerdict::Clear
        );
        for i in 0..=MAX_DECORATED {
            fs::write(dir.join(format!("f{i}.txt~")), "x").unwrap();
        }
        let verdict = walk_search(&dir, &[], &sensitive, WalkLimits::default());
        assert!(
            verdict.reason().unwrap().contains("backup, auto-save or lock files"),
            "{verdict:?}"
        );
        fs::remove_dir_all(&dir).unwrap();
    }
}
