//! Directory globs of the user's approval rules (`agent-q-approval-rules`).
//!
//! A rule may apply only to calls whose file arguments lie under a directory glob. The Lisp side
//! resolves every name first (expands `~`, follows links with `file-truename`, refuses remote
//! names and `..`); this module only answers, on absolute names, whether a glob covers a name
//! and whether a glob is so broad that it covers nearly every file.
//!
//! A glob is an absolute file name whose components may hold `*` (any characters, a `.` included,
//! never `/`) and `?` (one character), and whose whole components may be `**` (any number of
//! components, none included). It names directories: it covers a file when a directory it matches
//! is the file itself or one of the file's ancestors. So `/home/u/src` covers `/home/u/src` and
//! everything below it, and `/home/u/*/docs` covers `/home/u/a/docs/x.txt`.
//!
//! ```
//! use agent_q_core::rules::Glob;
//! let glob = Glob::parse("/home/u/src/*/docs").unwrap();
//! assert!(glob.covers("/home/u/src/app/docs/x.txt").unwrap());
//! assert!(!glob.covers("/home/u/src/app/x.txt").unwrap());
//! assert!(!glob.is_broad("/home/u"));
//! assert!(Glob::parse("/home/*").unwrap().is_broad("/home/u"));
//! ```
//!
//! Matching is iterative, linear in the glob's length times the name's at worst, and both are
//! bounded by [`MAX_GLOB_BYTES`].

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::GlobError;

/// The longest glob or file name accepted, in bytes (Linux's `PATH_MAX`).
pub const MAX_GLOB_BYTES: usize = 4096;

/// One component of a glob.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    /// `**`: any number of components.
    AnyDirs,
    /// A component without wildcards.
    Literal(String),
    /// A component with `*` or `?`, as characters.
    Wild(Vec<char>),
}

impl Part {
    fn matches(&self, component: &str) -> bool {
        match self {
            Part::AnyDirs => true,
            Part::Literal(l) => l == component,
            Part::Wild(p) => wildcard_match(p, &component.chars().collect::<Vec<_>>()),
        }
    }
}

/// A parsed directory glob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob {
    parts: Vec<Part>,
}

impl Glob {
    /// Parse GLOB, an absolute name (`~` already expanded). `.` and `..` components are refused
    /// (what they designate depends on links), as is `**` inside a component; empty components
    /// (`//`) are ignored.
    pub fn parse(glob: &str) -> Result<Glob, GlobError> {
        if glob.len() > MAX_GLOB_BYTES {
            return Err(GlobError::TooLong {
                what: "glob",
                len: glob.len(),
                max: MAX_GLOB_BYTES,
            });
        }
        if !glob.starts_with('/') {
            return Err(GlobError::NotAbsolute(glob.into()));
        }
        let mut parts = Vec::new();
        for c in glob.split('/').filter(|c| !c.is_empty()) {
            let part = match c {
                "." | ".." => return Err(GlobError::DotComponent(glob.into())),
                "**" => Part::AnyDirs,
                _ if c.contains("**") => return Err(GlobError::BadDoubleStar(glob.into())),
                _ if c.contains(['*', '?']) => Part::Wild(c.chars().collect()),
                _ => Part::Literal(c.into()),
            };
            // `**/**` is `**`.
            if !(part == Part::AnyDirs && parts.last() == Some(&Part::AnyDirs)) {
                parts.push(part);
            }
        }
        Ok(Glob { parts })
    }

    /// The leading components without wildcards, as an absolute name (`/` when there are none).
    pub fn literal_prefix(&self) -> String {
        let literal: Vec<&str> = self
            .parts
            .iter()
            .map_while(|p| match p {
                Part::Literal(l) => Some(l.as_str()),
                _ => None,
            })
            .collect();
        format!("/{}", literal.join("/"))
    }

    /// The components after [`Glob::literal_prefix`], joined with `/` (empty when there are none).
    pub fn wild_rest(&self) -> String {
        self.parts
            .iter()
            .skip_while(|p| matches!(p, Part::Literal(_)))
            .map(|p| match p {
                Part::AnyDirs => "**".to_string(),
                Part::Literal(l) => l.clone(),
                Part::Wild(w) => w.iter().collect(),
            })
            .collect::<Vec<_>>()
            .join("/")
    }

    /// Whether the glob covers PATH, an absolute name: some directory the glob matches is PATH
    /// or one of its ancestors. A PATH with a `.` or `..` component is never covered (it must be
    /// resolved first).
    pub fn covers(&self, path: &str) -> Result<bool, GlobError> {
        if path.len() > MAX_GLOB_BYTES {
            return Err(GlobError::TooLong {
                what: "file name",
                len: path.len(),
                max: MAX_GLOB_BYTES,
            });
        }
        if !path.starts_with('/') {
            return Err(GlobError::PathNotAbsolute(path.into()));
        }
        let components: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
        if components.iter().any(|c| *c == "." || *c == "..") {
            return Ok(false);
        }
        // "Under" is a trailing `**`.
        let mut parts: Vec<&Part> = self.parts.iter().collect();
        if parts.last() != Some(&&Part::AnyDirs) {
            parts.push(&Part::AnyDirs);
        }
        Ok(sequence_match(&parts, &components))
    }

    /// Whether the glob covers nearly everything: its literal prefix is `/`, or HOME (the user's
    /// home directory, a resolved absolute name) or one of HOME's ancestors (`/home/*` covers
    /// every user's files).
    pub fn is_broad(&self, home: &str) -> bool {
        let prefix: Vec<&str> = self
            .parts
            .iter()
            .map_while(|p| match p {
                Part::Literal(l) => Some(l.as_str()),
                _ => None,
            })
            .collect();
        let home: Vec<&str> = home.split('/').filter(|c| !c.is_empty()).collect();
        prefix.is_empty() || (prefix.len() <= home.len() && prefix[..] == home[..prefix.len()])
    }
}

/// `*` and `?` within one component, by the classic greedy scan that backs up to the last `*`:
/// linear space, at most `pattern.len() * text.len()` steps.
fn wildcard_match(pattern: &[char], text: &[char]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && (pattern[p] == '?' || (pattern[p] != '*' && pattern[p] == text[t])) {
            p += 1;
            t += 1;
        } else if p < pattern.len() && pattern[p] == '*' {
            star = Some((p, t));
            p += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|c| *c == '*')
}

/// The same scan over components, `**` being the star: correct for any per-element predicate,
/// since a later star can always absorb what an earlier one would have.
fn sequence_match(parts: &[&Part], components: &[&str]) -> bool {
    let (mut p, mut c) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while c < components.len() {
        if p < parts.len() && *parts[p] != Part::AnyDirs && parts[p].matches(components[c]) {
            p += 1;
            c += 1;
        } else if p < parts.len() && *parts[p] == Part::AnyDirs {
            star = Some((p, c));
            p += 1;
        } else if let Some((sp, sc)) = star {
            p = sp + 1;
            c = sc + 1;
            star = Some((sp, sc + 1));
        } else {
            return false;
        }
    }
    parts[p..].iter().all(|part| **part == Part::AnyDirs)
}

/// What a search for another name of a file found (see [`find_hard_link`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkSearch {
    /// A name of the file under the root.
    Found(PathBuf),
    /// None under the root: every entry was looked at.
    NotFound,
    /// The search stopped at its bounds before looking at every entry: it cannot say.
    GaveUp,
}

/// The most directory entries [`find_hard_link`] looks at.
pub const MAX_LINK_SEARCH_ENTRIES: usize = 20_000;

/// The longest [`find_hard_link`] searches: it runs on Emacs's main thread.
pub const LINK_SEARCH_BUDGET: Duration = Duration::from_millis(50);

/// Search ROOT and the directories below it for a name of the file DEVICE / INODE (another hard
/// link of it), without following symbolic links and without leaving DEVICE (a hard link never
/// crosses file systems). At most MAX_ENTRIES entries are looked at, for at most BUDGET; past
/// either, the answer is [`LinkSearch::GaveUp`]. Directories that cannot be read are skipped.
/// Iterative: the depth of the tree costs a stack of names, never recursion.
pub fn find_hard_link(root: &Path, device: u64, inode: u64, max_entries: usize, budget: Duration) -> LinkSearch {
    use std::os::unix::fs::MetadataExt;
    let started = Instant::now();
    let Ok(meta) = std::fs::symlink_metadata(root) else {
        return LinkSearch::NotFound;
    };
    if meta.dev() != device {
        return LinkSearch::NotFound;
    }
    if meta.is_file() {
        return if meta.ino() == inode {
            LinkSearch::Found(root.to_path_buf())
        } else {
            LinkSearch::NotFound
        };
    }
    if !meta.is_dir() {
        return LinkSearch::NotFound;
    }
    let mut pending = vec![root.to_path_buf()];
    let mut seen = 0usize;
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > max_entries || started.elapsed() > budget {
                return LinkSearch::GaveUp;
            }
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if meta.dev() != device {
                continue;
            }
            if meta.is_dir() {
                pending.push(entry.path());
            } else if meta.is_file() && meta.ino() == inode {
                return LinkSearch::Found(entry.path());
            }
        }
    }
    LinkSearch::NotFound
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hard_link_is_found_under_its_directory_and_bounds_give_up() {
        use std::os::unix::fs::MetadataExt;
        let dir = std::env::temp_dir().join(format!("agent-q-links-{}", std::process::id()));
        let private = dir.join("proj/private/deep");
        std::fs::create_dir_all(&private).unwrap();
        std::fs::create_dir_all(dir.join("elsewhere")).unwrap();
        let secret = private.join("plan.txt");
        std::fs::write(&secret, "secret").unwrap();
        let link = dir.join("elsewhere/innocent.txt");
        std::fs::hard_link(&secret, &link).unwrap();
        let meta = std::fs::metadata(&link).unwrap();
        let root = dir.join("proj/private");
        let far = Duration::from_secs(10);
        assert_eq!(
            find_hard_link(&root, meta.dev(), meta.ino(), 1000, far),
            LinkSearch::Found(secret.clone())
        );
        let other = dir.join("elsewhere/other.txt");
        std::fs::write(&other, "x").unwrap();
        let other_meta = std::fs::metadata(&other).unwrap();
        assert_eq!(
            find_hard_link(&root, other_meta.dev(), other_meta.ino(), 1000, far),
            LinkSearch::NotFound
        );
        assert_eq!(
            find_hard_link(&root, other_meta.dev(), other_meta.ino(), 1, far),
            LinkSearch::GaveUp
        );
        assert_eq!(
            find_hard_link(&dir.join("missing"), meta.dev(), meta.ino(), 1000, far),
            LinkSearch::NotFound
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn covers(glob: &str, path: &str) -> bool {
        Glob::parse(glob).unwrap().covers(path).unwrap()
    }

    #[test]
    fn a_directory_covers_itself_and_what_is_below() {
        assert!(covers("/home/u/src", "/home/u/src"));
        assert!(covers("/home/u/src", "/home/u/src/a/b/c.el"));
        assert!(covers("/home/u/src/", "/home/u/src/x"));
        assert!(covers("//home//u/src", "/home/u/src/x"));
        assert!(!covers("/home/u/src", "/home/u/srcx/a"));
        assert!(!covers("/home/u/src", "/home/u"));
        assert!(!covers("/home/u/src", "/home/v/src/a"));
        assert!(covers("/", "/etc/passwd"));
    }

    #[test]
    fn wildcards_in_a_component() {
        assert!(covers("/home/u/*/docs", "/home/u/app/docs/x.txt"));
        assert!(covers("/home/u/*/docs", "/home/u/.hidden/docs/x.txt"));
        assert!(!covers("/home/u/*/docs", "/home/u/app/x.txt"));
        assert!(!covers("/home/u/*/docs", "/home/u/a/b/docs/x"));
        assert!(covers("/home/u/pro?ect", "/home/u/project/x"));
        assert!(!covers("/home/u/pro?ect", "/home/u/proect/x"));
        assert!(covers("/home/u/*.d", "/home/u/conf.d/a"));
        assert!(!covers("/home/u/*.d", "/home/u/conf.dx/a"));
        assert!(covers("/home/u/a*b*c", "/home/u/aXbYbZc/q"));
        assert!(!covers("/home/u/a*b*c", "/home/u/aXbYbZ/q"));
    }

    #[test]
    fn double_star_spans_components() {
        assert!(covers("/home/u/**/docs", "/home/u/docs/x"));
        assert!(covers("/home/u/**/docs", "/home/u/a/b/c/docs/x"));
        assert!(!covers("/home/u/**/docs", "/home/u/a/b/c/doc/x"));
        assert!(covers("/home/u/**/a/**/b", "/home/u/x/a/y/z/b"));
        assert!(covers("/**", "/anything/at/all"));
        assert_eq!(Glob::parse("/a/**/**/b").unwrap(), Glob::parse("/a/**/b").unwrap());
    }

    #[test]
    fn bad_globs_and_names_are_refused_with_a_reason() {
        assert_eq!(Glob::parse("src/x"), Err(GlobError::NotAbsolute("src/x".into())));
        assert!(matches!(Glob::parse("/a/../etc"), Err(GlobError::DotComponent(_))));
        assert!(matches!(Glob::parse("/a/./b"), Err(GlobError::DotComponent(_))));
        assert!(matches!(Glob::parse("/a/x**"), Err(GlobError::BadDoubleStar(_))));
        assert!(matches!(
            Glob::parse(&format!("/{}", "a".repeat(MAX_GLOB_BYTES))),
            Err(GlobError::TooLong { .. })
        ));
        let g = Glob::parse("/a").unwrap();
        assert!(matches!(g.covers("a/b"), Err(GlobError::PathNotAbsolute(_))));
        // A name that still has . or .. is never covered: `/a/../etc` is not under /a.
        assert!(!g.covers("/a/../etc/passwd").unwrap());
        assert!(!g.covers("/a/./b").unwrap());
        assert!(Glob::parse("/a/b").unwrap().to_string_parts() == ("/a/b".into(), String::new()));
    }

    #[test]
    fn prefix_and_rest() {
        let g = Glob::parse("/home/u/*/docs/**").unwrap();
        assert_eq!(g.to_string_parts(), ("/home/u".into(), "*/docs/**".into()));
        assert_eq!(Glob::parse("/**").unwrap().to_string_parts(), ("/".into(), "**".into()));
    }

    #[test]
    fn broad_globs() {
        let home = "/home/u";
        for broad in [
            "/",
            "/**",
            "/*",
            "/home",
            "/home/*",
            "/home/u",
            "/home/u/**",
            "/home/u/*",
            "/*/u/src",
        ] {
            assert!(Glob::parse(broad).unwrap().is_broad(home), "{broad}");
        }
        for narrow in ["/home/u/src", "/home/u/src/**", "/etc", "/home/v", "/tmp/x"] {
            assert!(!Glob::parse(narrow).unwrap().is_broad(home), "{narrow}");
        }
    }

    #[test]
    fn long_inputs_at_the_limits() {
        // The worst case of the greedy scan (quadratic in bounded sizes) still answers right.
        let pattern = format!("/{}b", "*a".repeat(1000));
        let g = Glob::parse(&pattern).unwrap();
        assert!(!g.covers(&format!("/{}", "a".repeat(3000))).unwrap());
        assert!(g.covers(&format!("/{}b/x", "a".repeat(3000))).unwrap());
        let deep = format!("/{}", "**/a/".repeat(400));
        let g = Glob::parse(&deep).unwrap();
        assert!(g.covers(&format!("/{}", "a/".repeat(1500))).unwrap());
    }

    impl Glob {
        fn to_string_parts(&self) -> (String, String) {
            (self.literal_prefix(), self.wild_rest())
        }
    }
}
