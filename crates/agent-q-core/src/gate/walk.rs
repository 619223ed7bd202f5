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
}

impl WalkVerdict {
    /// Why the search needs asking, or `None` when it does not.
    pub fn reason(&self) -> Option<String> {
        match self {
            WalkVerdict::Clear => None,
            WalkVerdict::Reaches { file, why } => Some(format!("the search can reach {file} ({why})")),
            WalkVerdict::Cut(why) => Some(why.clone()),
        }
    }
}

/// The read guard's sensitive patterns, compiled once.
#[derive(Debug)]
pub struct SensitivePatterns {
    regexes: Vec<(String, Regex)>,
}

impl SensitivePatterns {
    /// Compile PATTERNS, Emacs regexps; one that cannot be compiled is an error naming it.
    pub fn new(patterns: &[String]) -> Result<Self, String> {
        let mut regexes = Vec::with_capacity(patterns.len());
        for pattern in patterns {
            let translation = translate(pattern).map_err(|e| format!("the pattern {pattern:?}: {e}"))?;
            let regex = Regex::builder()
                .syntax(syntax::Config::new().case_insensitive(true))
                .build(&translation.pattern)
                .map_err(|e| format!("the pattern {pattern:?}: {e}"))?;
            regexes.push((pattern.clone(), regex));
        }
        Ok(SensitivePatterns { regexes })
    }

    /// The first pattern matching NAME (an absolute file name), if any.
    pub fn matching(&self, name: &str) -> Option<&str> {
        self.regexes
            .iter()
            .find(|(_, regex)| regex.is_match(name))
            .map(|(pattern, _)| pattern.as_str())
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
        }
    }
    WalkVerdict::Clear
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
    }
}
