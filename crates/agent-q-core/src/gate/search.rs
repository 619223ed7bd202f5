//! The agents' own searches: whether a search's glob can reach a sensitive file.
//!
//! Claude Code's `Grep` (`glob`) and `Glob` (`pattern`) and Gemini CLI's `grep_search`
//! (`include_pattern`) and `glob` (`pattern`) name the files they search by a glob under a
//! folder. Claude's ripgrep runs with `--hidden` (and `Glob` with `--no-ignore`): a wildcard
//! matches a leading dot, and `**` descends into hidden folders. A search reaches a sensitive
//! file when its glob can match one of [`SENSITIVE_NAMES`], at any depth, or one of the folders
//! such a name lies in; a search with no glob reaches every file under its folder. When in
//! doubt (a glob too long, with too many alternatives, an unbalanced brace, or leaving its
//! folder by `/`, `~` or `..`), the search is taken to reach one.
//!
//! The catalogue stands for agent-q's default sensitive patterns (lisp/agent-q-guard.el:
//! `agent-q-sensitive-file-patterns`, `agent-q-sensitive-emacs-files`) with the backup,
//! auto-save and swap names Emacs and editors make of them. Emacs's private files whose names
//! are ordinary (`transient/history.el`, no-littering's `var/*.el`) are left out, so that
//! `*.el` stays narrow: the gate asks about every search of a folder in or above
//! `user-emacs-directory` instead. A pattern the user adds in Emacs
//! is not in it: the folder's own files are judged by the read guard only as a whole (the
//! folder inside the agent's working directory, not itself sensitive).

/// The longest glob judged, in bytes; a longer one is taken to reach a sensitive file.
pub const MAX_GLOB_BYTES: usize = 256;

/// The most alternatives a glob's braces are expanded to; more are taken to reach one.
pub const MAX_ALTERNATIVES: usize = 32;

/// Names of sensitive files, relative to a searched folder, lower case: the shapes agent-q's
/// default sensitive patterns match, and decorated copies of them.
pub const SENSITIVE_NAMES: &[&str] = &[
    // Credentials and keys (agent-q-sensitive-file-patterns).
    ".authinfo",
    ".authinfo.gpg",
    ".netrc",
    ".netrc.gpg",
    ".ssh/id_rsa",
    ".ssh/config",
    ".ssh/authorized_keys",
    ".gnupg/private-keys-v1.d/key.key",
    ".gnupg/secring.gpg",
    ".password-store/site.gpg",
    ".env",
    ".envrc",
    ".env.local",
    ".env.production",
    ".env.development",
    ".env.test",
    "server.pem",
    "server.key",
    "cert.p12",
    "cert.pfx",
    "store.jks",
    "release.keystore",
    "putty.ppk",
    "secrets.gpg",
    "vault.kdbx",
    "id_rsa",
    "id_rsa.pub",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    "credentials",
    "credentials.json",
    ".aws/credentials",
    ".aws/config",
    ".kube/config",
    ".config/gcloud/credentials.db",
    ".config/gcloud/application_default_credentials.json",
    ".docker/config.json",
    ".pgpass",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".htpasswd",
    ".vault-token",
    // Backup, auto-save, lock and swap copies (agent-q-guard-name-variants).
    ".env~",
    "#.env#",
    ".#.env",
    ".env.bak",
    ".env.orig",
    ".env.old",
    ".env.swp",
    ".env.1",
    ".env.gz",
    ".env.~1~",
    ".authinfo~",
    "#.authinfo#",
    ".authinfo.bak",
    "id_rsa~",
    "id_rsa.bak",
    "credentials~",
    // Emacs's private files (agent-q-sensitive-emacs-files), as in user-emacs-directory.
    "history",
    "ielm-history.eld",
    "recentf",
    "places",
    "bookmarks",
    "ido.last",
    "tramp",
    "network-security.data",
    "url/cookies",
    "server/server",
    "eshell/history",
    "auto-save-list/.saves-1",
    "request/token",
    "elpa/gnupg/pubring.kbx",
    "var/recentf-save",
    "agent-q-mcp.json",
    "authinfo",
    "oauth2.plstore",
    "session.1",
    ".emacs.desktop",
];

/// Why a search under a folder with GLOBS (none: every file) may reach a sensitive file, or
/// `None` when none of them can. The reason names the glob and a sensitive name it matches.
pub fn search_reach(globs: &[String]) -> Option<String> {
    if globs.is_empty() {
        return Some("it searches every file under its folder, .env and other sensitive files included".into());
    }
    globs.iter().find_map(|glob| glob_reach(glob))
}

/// Why GLOB, matched under a folder, may reach a sensitive file, or `None` when it cannot.
pub fn glob_reach(glob: &str) -> Option<String> {
    let shown: String = glob.chars().take(200).collect();
    if glob.len() > MAX_GLOB_BYTES {
        return Some(format!("the glob is longer than {MAX_GLOB_BYTES} bytes"));
    }
    let alternatives = match expand_braces(glob) {
        Ok(alternatives) => alternatives,
        Err(problem) => return Some(format!("the glob {shown:?} {problem}")),
    };
    for alternative in &alternatives {
        let lower = alternative.to_lowercase();
        let lower = lower.trim_end_matches('/');
        if leaves_folder(lower) {
            return Some(format!("the glob {shown:?} names files outside its folder"));
        }
        let tokens = tokenize(lower);
        let start = after_any_folders(&tokens);
        for name in SENSITIVE_NAMES {
            // The name itself, and each folder it lies in (a glob matching .ssh takes it all).
            let mut prefixes: Vec<&str> = name.match_indices('/').map(|(at, _)| &name[..at]).collect();
            prefixes.push(name);
            if let Some(hit) = prefixes
                .iter()
                .find(|candidate| matches_from(&tokens, &start, candidate))
            {
                return Some(format!("the glob {shown:?} can match {hit}, a sensitive name"));
            }
        }
    }
    None
}

/// Why GLOB cannot be judged by the files under its folder (too long, unbalanced, too many
/// alternatives, or naming files outside its folder), or `None` when it can.
pub fn glob_reach_outside(glob: &str) -> Option<String> {
    let shown: String = glob.chars().take(200).collect();
    if glob.len() > MAX_GLOB_BYTES {
        return Some(format!("the glob is longer than {MAX_GLOB_BYTES} bytes"));
    }
    let alternatives = match expand_braces(glob) {
        Ok(alternatives) => alternatives,
        Err(problem) => return Some(format!("the glob {shown:?} {problem}")),
    };
    alternatives
        .iter()
        .any(|alternative| leaves_folder(&alternative.to_lowercase()))
        .then(|| format!("the glob {shown:?} names files outside its folder"))
}

/// Whether the glob alternative LOWER names files outside its folder.
fn leaves_folder(lower: &str) -> bool {
    lower.starts_with('/') || lower.starts_with('~') || lower.split('/').any(|c| c == "..")
}

/// Whether GLOB, matched at any depth and ignoring case, selects the file RELATIVE
/// (`/`-separated, under the searched folder), by its name or by a folder it lies in. A glob
/// that cannot be judged ([`glob_reach_outside`]) selects every file.
pub fn glob_matches_path(glob: &str, relative: &str) -> bool {
    let Ok(alternatives) = expand_braces(glob) else {
        return true;
    };
    if glob.len() > MAX_GLOB_BYTES {
        return true;
    }
    let relative = relative.to_lowercase();
    alternatives.iter().any(|alternative| {
        let lower = alternative.to_lowercase();
        let tokens = tokenize(lower.trim_end_matches('/'));
        let mut run = Run::empty(tokens.len());
        run.at[0] = true;
        close(&tokens, &mut run);
        for c in relative.chars() {
            if c == '/' && accepts(&tokens, &run) {
                // A folder the file lies in is selected: so is the file.
                return true;
            }
            run = step(&tokens, &run, c);
            if !run.any() {
                return false;
            }
        }
        accepts(&tokens, &run)
    })
}

/// The globs of a search's GLOB field: split at whitespace and at commas outside braces (Claude
/// splits its `glob` so), empty pieces left out.
pub fn split_globs(field: &str) -> Vec<String> {
    let mut globs = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in field.chars() {
        match c {
            '{' => {
                depth += 1;
                current.push(c);
            }
            '}' => {
                depth = depth.saturating_sub(1);
                current.push(c);
            }
            ',' if depth == 0 => globs.push(std::mem::take(&mut current)),
            c if c.is_whitespace() => globs.push(std::mem::take(&mut current)),
            c => current.push(c),
        }
    }
    globs.push(current);
    globs.retain(|g| !g.is_empty());
    globs
}

/// GLOB's brace alternatives, expanded innermost first: `a{b,c}` is `ab`, `ac`. An error when
/// a brace is unbalanced or there are more than [`MAX_ALTERNATIVES`].
fn expand_braces(glob: &str) -> Result<Vec<String>, String> {
    let mut done = Vec::new();
    let mut queue = vec![glob.to_string()];
    while let Some(item) = queue.pop() {
        let Some(close) = item.find('}') else {
            if item.contains('{') {
                return Err("has an unbalanced brace".into());
            }
            done.push(item);
            if done.len() > MAX_ALTERNATIVES {
                return Err(format!("has more than {MAX_ALTERNATIVES} alternatives"));
            }
            continue;
        };
        let Some(open) = item[..close].rfind('{') else {
            return Err("has an unbalanced brace".into());
        };
        let (head, inner, tail) = (&item[..open], &item[open + 1..close], &item[close + 1..]);
        for part in inner.split(',') {
            queue.push(format!("{head}{part}{tail}"));
        }
        if queue.len() + done.len() > MAX_ALTERNATIVES {
            return Err(format!("has more than {MAX_ALTERNATIVES} alternatives"));
        }
    }
    Ok(done)
}

/// One element of a glob.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    /// This character.
    Char(char),
    /// `?`: any one character but `/`.
    One,
    /// `*`: any run of characters without `/`.
    Star,
    /// `**` as a whole component: any run of components (`a/**/b` also matches `a/b`).
    Deep,
    /// `[...]`: one character of the set (or not of it, negated), never `/`.
    Class { chars: Vec<(char, char)>, negated: bool },
}

/// GLOB (lower case) as tokens, with `**/` put in front when it does not start with `**`, so
/// that it matches at any depth. A `[` without its `]` is the character itself.
fn tokenize(glob: &str) -> Vec<Token> {
    let chars: Vec<char> = glob.chars().collect();
    let mut tokens = Vec::new();
    if !glob.starts_with("**") {
        tokens.push(Token::Deep);
    }
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' if i + 1 < chars.len() => {
                tokens.push(Token::Char(chars[i + 1]));
                i += 2;
            }
            '*' => {
                let mut end = i;
                while end < chars.len() && chars[end] == '*' {
                    end += 1;
                }
                let starts = i == 0 || chars[i - 1] == '/';
                let ends = end == chars.len() || chars[end] == '/';
                if end - i >= 2 && starts && ends {
                    tokens.push(Token::Deep);
                    // `**/` takes its slash with it: `**/x` matches `x`.
                    i = if end < chars.len() { end + 1 } else { end };
                } else {
                    tokens.push(Token::Star);
                    i = end;
                }
            }
            '?' => {
                tokens.push(Token::One);
                i += 1;
            }
            '[' => match class(&chars, i) {
                Some((token, next)) => {
                    tokens.push(token);
                    i = next;
                }
                None => {
                    tokens.push(Token::Char('['));
                    i += 1;
                }
            },
            c => {
                tokens.push(Token::Char(c));
                i += 1;
            }
        }
    }
    tokens
}

/// The class starting at CHARS[START] (a `[`) and the index after its `]`, or `None` when it
/// has no `]`.
fn class(chars: &[char], start: usize) -> Option<(Token, usize)> {
    let mut i = start + 1;
    let negated = matches!(chars.get(i), Some('!') | Some('^'));
    if negated {
        i += 1;
    }
    let mut ranges = Vec::new();
    let mut first = true;
    while i < chars.len() {
        let c = chars[i];
        if c == ']' && !first {
            return Some((Token::Class { chars: ranges, negated }, i + 1));
        }
        first = false;
        let c = if c == '\\' && i + 1 < chars.len() {
            i += 1;
            chars[i]
        } else {
            c
        };
        if chars.get(i + 1) == Some(&'-') && chars.get(i + 2).is_some_and(|e| *e != ']') {
            ranges.push((c, chars[i + 2]));
            i += 3;
        } else {
            ranges.push((c, c));
            i += 1;
        }
    }
    None
}

/// The glob's positions a run is in: `at[i]`, TOKENS[..i] matched; `deep[i]`, within a
/// component that the `**` at i matches.
#[derive(Clone, PartialEq)]
struct Run {
    at: Vec<bool>,
    deep: Vec<bool>,
}

impl Run {
    fn empty(n: usize) -> Run {
        Run {
            at: vec![false; n + 1],
            deep: vec![false; n],
        }
    }

    fn any(&self) -> bool {
        self.at.iter().chain(&self.deep).any(|s| *s)
    }

    fn union(&mut self, other: &Run) {
        for (a, b) in self.at.iter_mut().zip(&other.at) {
            *a |= *b;
        }
        for (a, b) in self.deep.iter_mut().zip(&other.deep) {
            *a |= *b;
        }
    }
}

/// RUN after the character C.
fn step(tokens: &[Token], run: &Run, c: char) -> Run {
    let mut next = Run::empty(tokens.len());
    for (at, token) in tokens.iter().enumerate() {
        if matches!(token, Token::Deep) && (run.at[at] || run.deep[at]) {
            if c == '/' {
                next.at[at] = true;
            } else {
                next.deep[at] = true;
            }
        }
        if !run.at[at] {
            continue;
        }
        match token {
            Token::Char(t) if *t == c => next.at[at + 1] = true,
            Token::One if c != '/' => next.at[at + 1] = true,
            Token::Star if c != '/' => next.at[at] = true,
            Token::Class { chars, negated } if c != '/' => {
                let member = chars.iter().any(|(lo, hi)| *lo <= c && c <= *hi);
                if member != *negated {
                    next.at[at + 1] = true;
                }
            }
            _ => {}
        }
    }
    close(tokens, &mut next);
    next
}

/// Let every `*` and `**` also match nothing (positions only move forward: one pass).
fn close(tokens: &[Token], run: &mut Run) {
    for (at, token) in tokens.iter().enumerate() {
        if run.at[at] && matches!(token, Token::Star | Token::Deep) {
            run.at[at + 1] = true;
        }
    }
}

/// Whether RUN has matched all of TOKENS.
fn accepts(tokens: &[Token], run: &Run) -> bool {
    let n = tokens.len();
    run.at[n] || (n > 0 && tokens[n - 1] == Token::Deep && run.deep[n - 1])
}

/// Where TOKENS can be after any folders, `a/b/` (none included): a sensitive name may lie at
/// any depth under the searched folder. Single positions are explored one by one (a run is
/// the union of its positions' runs), over the glob's own characters, `/` and one other.
fn after_any_folders(tokens: &[Token]) -> Run {
    let n = tokens.len();
    let mut start = Run::empty(n);
    start.at[0] = true;
    close(tokens, &mut start);
    let mut alphabet: Vec<char> = vec!['/', '\u{1}'];
    for token in tokens {
        match token {
            Token::Char(c) => alphabet.push(*c),
            Token::Class { chars, .. } => {
                for (lo, hi) in chars {
                    alphabet.push(*lo);
                    alphabet.push(*hi);
                }
            }
            _ => {}
        }
    }
    alphabet.sort_unstable();
    alphabet.dedup();
    // seen: positions reached by any string; folders: those reached by one ending in `/`.
    let mut seen = start.clone();
    let mut folders = start.clone();
    let mut frontier = start;
    loop {
        let mut grown = Run::empty(n);
        for c in &alphabet {
            let next = step(tokens, &frontier, *c);
            if *c == '/' {
                folders.union(&next);
            }
            grown.union(&next);
        }
        // Only the positions not seen before are explored further.
        let mut fresh = Run::empty(n);
        for (i, new) in grown.at.iter().enumerate() {
            fresh.at[i] = *new && !seen.at[i];
        }
        for (i, new) in grown.deep.iter().enumerate() {
            fresh.deep[i] = *new && !seen.deep[i];
        }
        if !fresh.any() {
            return folders;
        }
        seen.union(&fresh);
        frontier = fresh;
    }
}

/// Whether TOKENS, from START (see [`after_any_folders`]), match NAME.
fn matches_from(tokens: &[Token], start: &Run, name: &str) -> bool {
    let mut run = start.clone();
    for c in name.chars() {
        run = step(tokens, &run, c);
        if !run.any() {
            return false;
        }
    }
    accepts(tokens, &run)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reaches(glob: &str) -> bool {
        glob_reach(glob).is_some()
    }

    #[test]
    fn globs_that_can_match_a_sensitive_name_reach_it() {
        for glob in [
            "*",
            "**",
            "**/*",
            ".*",
            "*.env*",
            ".e*",
            ".env",
            "**/.env",
            "*env*",
            "?env",
            "[.]env",
            ".[a-z]nv",
            "{*.rs,.env}",
            "src/{a,.env}",
            "*.{rs,pem}",
            "*.key",
            "id_*",
            "*rsa*",
            ".ssh",
            ".ssh/**",
            "**/.ssh/*",
            ".aws/*",
            "*/credentials",
            "credentials*",
            ".auth*",
            "#*#",
            "*~",
            "*.bak",
            "*.gpg",
            "hist*",
            "recentf",
            "*.plstore",
            "agent-q-mcp*",
            "**/*/",
            ".E*",
            "*.PEM",
            "\\.env",
            "/etc/*.rs",
            "~/*.rs",
            "../*.rs",
            "src/../*.rs",
            "{a,{b,{c,.env}}}",
        ] {
            assert!(reaches(glob), "{glob} should reach a sensitive name");
        }
    }

    #[test]
    fn narrow_globs_do_not_reach_one() {
        for glob in [
            "*.rs",
            "**/*.rs",
            "src/**/*.ts",
            "*.{rs,toml}",
            "*.[ch]",
            "notes*.txt",
            "*.md",
            "src/*.py",
            "[!.]*.txt",
            "Makefile",
            "*.el",
            "**/test_*.py",
        ] {
            assert_eq!(glob_reach(glob), None, "{glob}");
        }
    }

    #[test]
    fn in_doubt_it_reaches() {
        assert!(glob_reach(&"a".repeat(MAX_GLOB_BYTES + 1)).unwrap().contains("longer"));
        assert!(glob_reach("{a,b").unwrap().contains("unbalanced"));
        assert!(glob_reach("a,b}").unwrap().contains("unbalanced"));
        let many = "{a,b,c,d}{a,b,c,d}{a,b,c}";
        assert!(glob_reach(many).unwrap().contains("alternatives"));
        assert!(glob_reach("../x.rs").unwrap().contains("outside"));
        // A class without its `]` is a character; `[` then cannot make a dot.
        assert_eq!(glob_reach("[*.rs"), None);
    }

    #[test]
    fn the_reason_names_the_glob_and_the_name() {
        assert_eq!(
            glob_reach("*.env*").as_deref(),
            Some("the glob \"*.env*\" can match .env, a sensitive name")
        );
        assert_eq!(
            glob_reach(".ssh").as_deref(),
            Some("the glob \".ssh\" can match .ssh, a sensitive name")
        );
    }

    #[test]
    fn a_search_with_no_glob_reaches_everything_and_each_glob_counts() {
        assert!(search_reach(&[]).unwrap().contains("every file"));
        assert_eq!(search_reach(&["*.rs".into(), "*.md".into()]), None);
        assert!(search_reach(&["*.rs".into(), ".env".into()]).is_some());
    }

    #[test]
    fn glob_fields_split_at_spaces_and_outer_commas() {
        assert_eq!(split_globs("*.rs .env"), vec!["*.rs", ".env"]);
        assert_eq!(split_globs("*.{rs,md},.env"), vec!["*.{rs,md}", ".env"]);
        assert_eq!(split_globs("  "), Vec::<String>::new());
    }

    fn matches_anywhere(tokens: &[Token], name: &str) -> bool {
        matches_from(tokens, &after_any_folders(tokens), name)
    }

    #[test]
    fn deep_matches_whole_components() {
        let tokens = tokenize("a/**/b");
        assert!(matches_anywhere(&tokens, "a/b"));
        assert!(matches_anywhere(&tokens, "a/x/y/b"));
        assert!(matches_anywhere(&tokens, "z/a/x/b"));
        assert!(!matches_anywhere(&tokens, "a/xb"));
        let tokens = tokenize("docs/**");
        assert!(matches_anywhere(&tokens, "docs/x/y"));
        // Anywhere: `doc` under `docs/` (the path docs/doc).
        assert!(matches_anywhere(&tokens, "doc"));
        assert!(!matches_anywhere(&tokenize("docs/*.md"), "doc"));
        // A sensitive name below a folder the glob matches.
        assert!(reaches("docs/**"));
        assert!(reaches("docs/*"));
        assert!(!reaches("docs/*.md"));
    }

    #[test]
    fn globs_select_paths_as_ripgrep_does_at_any_depth() {
        assert!(glob_matches_path("*.txt", "a.txt"));
        assert!(glob_matches_path("*.txt", "src/deep/.env.txt"));
        assert!(!glob_matches_path("*.txt", "src/.env"));
        assert!(glob_matches_path("*.{rs,md}", "src/main.rs"));
        assert!(!glob_matches_path("*.{rs,md}", "src/main.py"));
        assert!(glob_matches_path("src/**", "src/a/b.py"));
        assert!(glob_matches_path("docs", "docs/a/b.py"));
        assert!(!glob_matches_path("docs/*.md", "docs/.env"));
        assert!(glob_matches_path("*.TXT", "A.txt"));
        assert!(glob_matches_path("{a,b", "anything"));
        assert_eq!(glob_reach_outside("*.rs"), None);
        assert!(glob_reach_outside("../*.rs").unwrap().contains("outside"));
    }
}
