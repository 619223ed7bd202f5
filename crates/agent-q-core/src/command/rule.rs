//! Shell command rules, written as users write them in the agents: `git status`, `git diff *`,
//! `npm test`, `cargo test --package=*`.
//!
//! A rule is read with the same shell reader as commands ([`super::shell`]), so quotes work as
//! in the shell (`grep 'a b' *`), and is one plain command: no separator, substitution,
//! redirection or assignment. Its words match a command's words one for one:
//!
//! - a word without an unquoted `*` matches the same text exactly (`status` never matches
//!   `statusx`);
//! - an unquoted `*` inside a word matches any characters, none included, within that one word
//!   (`--package=*` matches `--package=core`); a lone `*` that is not last matches any one word;
//! - a lone unquoted `*` as the **last** word matches any further words, none included
//!   (`git diff *` matches `git diff` and `git diff --stat HEAD`);
//! - a quoted `'*'` is a literal star; `?`, `[`, `]`, `{`, `}` must be quoted (they are no
//!   wildcards in rules);
//! - the command name (the first word) holds no wildcard.
//!
//! A command word that the shell expands (`$X`, `$(...)`, an unquoted glob like `*.txt`, a
//! brace expansion) becomes words nobody has seen, so only a trailing `*` matches it.
//!
//! ```
//! use agent_q_core::command::{rule::CommandRule, shell::analyze};
//! let rule = CommandRule::parse("git diff *").unwrap();
//! let words = |line: &str| analyze(line).parts()[0].words.clone();
//! assert!(rule.matches(&words("git diff --stat")));
//! assert!(rule.matches(&words("git diff")));
//! assert!(!rule.matches(&words("git diffx")));
//! ```

use super::shell::{lex_plain, Word};
use crate::error::CommandRuleError;

/// One word of a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern {
    /// Exactly this text.
    Literal(String),
    /// The pieces between unquoted stars (at least two): the word starts with the first, ends
    /// with the last and holds the others in order.
    Stars(Vec<String>),
}

impl Pattern {
    fn matches(&self, word: &Word) -> bool {
        if word.expands() {
            return false;
        }
        match self {
            Pattern::Literal(text) => word.text() == text,
            Pattern::Stars(pieces) => stars_match(pieces, word.text()),
        }
    }
}

/// Whether TEXT is PIECES joined by runs of any characters.
fn stars_match(pieces: &[String], text: &str) -> bool {
    let (Some((first, rest)), Some(last)) = (pieces.split_first(), pieces.last()) else {
        return false;
    };
    let Some(mut remaining) = text.strip_prefix(first.as_str()) else {
        return false;
    };
    let middle = &rest[..rest.len().saturating_sub(1)];
    for piece in middle {
        match remaining.find(piece.as_str()) {
            Some(at) => remaining = &remaining[at + piece.len()..],
            None => return false,
        }
    }
    remaining.len() >= last.len() && remaining.ends_with(last.as_str())
}

/// A parsed shell command rule (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRule {
    text: String,
    words: Vec<Pattern>,
    any_further: bool,
}

impl CommandRule {
    /// Parse TEXT, a rule such as `git diff *`.
    pub fn parse(text: &str) -> Result<CommandRule, CommandRuleError> {
        let mut parts = lex_plain(text).map_err(|e| CommandRuleError::NotUnderstood {
            rule: text.into(),
            problem: e.to_string(),
        })?;
        let not_plain = |what: String| CommandRuleError::NotPlain {
            rule: text.into(),
            what,
        };
        if parts.len() > 1 {
            return Err(not_plain("more than one command".into()));
        }
        let part = parts.pop().ok_or(CommandRuleError::Empty)?;
        if let Some(construct) = part.constructs.first() {
            return Err(not_plain(construct.to_string()));
        }
        let wildcard = |problem: &str| CommandRuleError::Wildcard {
            rule: text.into(),
            problem: problem.into(),
        };
        let mut words = Vec::with_capacity(part.words.len());
        for (i, word) in part.words.iter().enumerate() {
            if word.specials().iter().any(|&(_, c)| c != '*') {
                return Err(wildcard("only * is a wildcard; quote ?, [, ], { and }"));
            }
            if word.is_dynamic() {
                return Err(not_plain("an expansion `$...`".into()));
            }
            if i == 0 && !word.specials().is_empty() {
                return Err(wildcard("the command name cannot hold a wildcard"));
            }
            words.push(pattern(word));
        }
        let any_further = part
            .words
            .last()
            .is_some_and(|w| w.text() == "*" && w.specials().len() == 1)
            && words.len() > 1;
        if any_further {
            words.pop();
        }
        Ok(CommandRule {
            text: text.trim().to_string(),
            words,
            any_further,
        })
    }

    /// The rule as written (blanks around it removed).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the rule matches a simple command's WORDS (see the module documentation).
    pub fn matches(&self, words: &[Word]) -> bool {
        self.matches_words(words, false)
    }

    /// Whether the rule matches WORDS when the command name is also compared by its last `/`
    /// component: `rm *` then matches `/bin/rm x` and `./rm x`. For deny and ask rules, where
    /// matching more is the safe side; allow rules use [`CommandRule::matches`].
    pub fn matches_any_path(&self, words: &[Word]) -> bool {
        self.matches_words(words, true)
    }

    fn matches_words(&self, words: &[Word], any_path: bool) -> bool {
        let count_fits = if self.any_further {
            words.len() >= self.words.len()
        } else {
            words.len() == self.words.len()
        };
        let name_fits = |pattern: &Pattern, word: &Word| {
            let base = word.text().rsplit('/').next().unwrap_or_default();
            pattern.matches(word) || (any_path && !word.expands() && *pattern == Pattern::Literal(base.into()))
        };
        count_fits
            && self.words.iter().zip(words).enumerate().all(
                |(i, (p, w))| {
                    if i == 0 {
                        name_fits(p, w)
                    } else {
                        p.matches(w)
                    }
                },
            )
    }
}

/// WORD's pattern: its text split at its unquoted stars.
fn pattern(word: &Word) -> Pattern {
    if word.specials().is_empty() {
        return Pattern::Literal(word.text().to_string());
    }
    let mut pieces = vec![String::new()];
    let mut stars = word.specials().iter().map(|&(at, _)| at).peekable();
    for (i, c) in word.text().chars().enumerate() {
        if stars.next_if_eq(&i).is_some() {
            pieces.push(String::new());
        } else if let Some(piece) = pieces.last_mut() {
            piece.push(c);
        }
    }
    Pattern::Stars(pieces)
}
