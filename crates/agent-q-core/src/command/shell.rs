//! A shell command line split into the simple commands it runs, read as a POSIX shell (and bash)
//! reads it, as far as this reader understands it.
//!
//! The reader removes quotes (`'...'`, `"..."` with its backslash escapes, `\c`), splits on
//! `;`, `&&`, `||`, `|`, `|&`, `&` and newlines, skips comments and here-document bodies, and
//! follows command substitutions (`$(...)`, backticks), process substitutions (`<(...)`,
//! `>(...)`) and subshells (`( ... )`) with an explicit stack, never by recursion. Each simple
//! command becomes a [`Part`]: its words, where it stands ([`Place`]) and the [`Construct`]s that
//! keep a plain rule from covering it (a redirection to a file, a leading `VAR=value`, a wrapper
//! such as `sudo`, a keyword such as `if`). The commands a wrapper runs (`sudo rm x` runs
//! `rm x`; `sh -c 'a; b'` runs `a` and `b`) are parts too, so that deny and ask rules see them.
//!
//! What the reader does not understand stops it ([`NotUnderstood`]): `$'...'`, arithmetic,
//! `${...}` beyond `${NAME}`, `case`/`for`/functions, and any character outside quotes that is not
//! printable ASCII (a fullwidth `；`, a no-break space, a zero-width or bidi control, a Cyrillic
//! `е`): such a character could look like a separator or a command name it is not, so it is
//! never guessed at.
//!
//! ```
//! use agent_q_core::command::shell::{analyze, Construct};
//! let analysis = analyze("git  'status' && ls > out.txt");
//! assert!(analysis.not_understood().is_none());
//! let parts = analysis.parts();
//! assert_eq!(parts[0].texts(), ["git", "status"]);
//! assert_eq!(parts[1].texts(), ["ls"]);
//! assert!(matches!(&parts[1].constructs[0], Construct::Redirect { target, .. } if target == "out.txt"));
//! ```

use std::fmt;
use std::mem;

use super::wrappers::{self, Inner};
use crate::visible::visible;

/// The longest command line read, in bytes; a longer one is not understood.
pub const MAX_COMMAND_BYTES: usize = 64 * 1024;
/// The most simple commands one line may hold (wrapped commands included).
pub const MAX_PARTS: usize = 256;
/// The deepest nesting of substitutions and subshells.
pub const MAX_NESTING: usize = 32;
/// The most strings run by `sh -c`, `eval` or `su -c` that one line may hold, nested or not.
pub const MAX_SHELL_STRINGS: usize = 16;
/// The most characters of a part's source kept for showing it.
pub const MAX_SOURCE_CHARS: usize = 240;

/// One word of a simple command, its quotes removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    text: String,
    expands: bool,
    dynamic: bool,
    plain: bool,
    /// Char positions in `text` of the unquoted wildcard characters `*?[]{}`.
    specials: Vec<(usize, char)>,
}

impl Word {
    /// The word after quote removal; an expansion (`$X`, `$(...)`) stands as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether the shell may turn the word into other words: a `$` expansion, a substitution,
    /// an unquoted glob (`*`, `?`, `[...]`) or a brace expansion (`{a,b}`).
    pub fn expands(&self) -> bool {
        self.expands
    }

    /// Holds a `$` expansion or a substitution.
    pub(crate) fn is_dynamic(&self) -> bool {
        self.dynamic
    }

    /// Written without any quote, escape or expansion (so it may be a keyword).
    pub(crate) fn is_plain(&self) -> bool {
        self.plain
    }

    /// The unquoted wildcard characters and their char positions in [`Word::text`].
    pub(crate) fn specials(&self) -> &[(usize, char)] {
        &self.specials
    }
}

/// What separates a simple command from the one before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sep {
    /// `;`
    Semicolon,
    /// `&&`
    And,
    /// `||`
    Or,
    /// `|`
    Pipe,
    /// `|&`
    PipeAll,
    /// `&` (the command before runs in the background)
    Background,
    /// A newline.
    Newline,
}

impl fmt::Display for Sep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Sep::Semicolon => "`;`",
            Sep::And => "`&&`",
            Sep::Or => "`||`",
            Sep::Pipe => "`|`",
            Sep::PipeAll => "`|&`",
            Sep::Background => "`&`",
            Sep::Newline => "a newline",
        })
    }
}

/// What a part runs inside of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Within {
    /// `$(...)`
    CommandSubstitution,
    /// `` `...` ``
    Backticks,
    /// `<(...)` or `>(...)`
    ProcessSubstitution,
    /// `( ... )`
    Subshell,
    /// The words after a wrapper, which runs them (`sudo`, `env`, `xargs`, `find -exec`...).
    Wrapper(String),
    /// The string a shell runs (`sh -c`, `eval`, `su -c`).
    ShellString(String),
}

impl fmt::Display for Within {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Within::CommandSubstitution => f.write_str("inside `$(...)`"),
            Within::Backticks => f.write_str("inside backticks"),
            Within::ProcessSubstitution => f.write_str("inside `<(...)`"),
            Within::Subshell => f.write_str("inside `( ... )`"),
            Within::Wrapper(w) => write!(f, "run by `{}`", visible(w)),
            Within::ShellString(w) => write!(f, "in the string `{}` runs", visible(w)),
        }
    }
}

/// Where a part stands in the command line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Place {
    /// The separator before it, if any.
    pub after: Option<Sep>,
    /// The innermost construct it runs inside of, if any.
    pub within: Option<Within>,
}

impl fmt::Display for Place {
    /// Nothing for the first command of the line; else `after ;`, `inside $(...)`...
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.after, &self.within) {
            (None, None) => Ok(()),
            (Some(s), None) => write!(f, "after {s}"),
            (None, Some(w)) => write!(f, "{w}"),
            (Some(s), Some(w)) => write!(f, "after {s}, {w}"),
        }
    }
}

/// Something in a simple command that a plain rule does not cover.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Construct {
    /// A `$(...)` in one of its words: runs a command whose output becomes words.
    CommandSubstitution,
    /// Backticks in one of its words (the old form of `$(...)`).
    Backticks,
    /// `<(...)` or `>(...)`.
    ProcessSubstitution,
    /// The command is a subshell `( ... )`.
    Subshell,
    /// A shell keyword before or as the command (`if`, `while`, `{`, `!`, `fi`...).
    Keyword(String),
    /// A here-document (`<<EOF`); its body is not read.
    HereDoc,
    /// A here-string (`<<<word`).
    HereString,
    /// A redirection to or from a file (`> f`, `>> f`, `2> f`, `&> f`, `>| f`, `< f`);
    /// `N>&M`, `N>&-` and `/dev/null` are harmless and are not constructs.
    Redirect {
        /// The operator, `>` or `2>>`...
        op: String,
        /// The file, as written after quote removal.
        target: String,
    },
    /// A command that runs another: `sudo`, `env`, `xargs`, `sh -c`, `find -exec`...
    Wrapper(String),
    /// A leading `NAME=value`, which can change what the command does (`GIT_DIR`, `LD_PRELOAD`).
    Assignment(String),
    /// The command name itself is an expansion or a glob (`$CMD`, `g*t`).
    ExpandedCommand,
}

impl fmt::Display for Construct {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Construct::CommandSubstitution => f.write_str("a command substitution `$(...)`"),
            Construct::Backticks => f.write_str("a command substitution in backticks"),
            Construct::ProcessSubstitution => f.write_str("a process substitution `<(...)`"),
            Construct::Subshell => f.write_str("a subshell `( ... )`"),
            Construct::Keyword(k) => write!(f, "the shell keyword `{}`", visible(k)),
            Construct::HereDoc => f.write_str("a here-document"),
            Construct::HereString => f.write_str("a here-string `<<<`"),
            Construct::Redirect { op, target } => {
                write!(f, "the redirection `{op} {}`", visible(target))
            }
            Construct::Wrapper(w) => write!(f, "`{}`, which runs another command", visible(w)),
            Construct::Assignment(n) => write!(f, "the assignment `{}=...`", visible(n)),
            Construct::ExpandedCommand => f.write_str("a command name the shell expands"),
        }
    }
}

/// Why the reader stopped: what it does not understand, or a limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotUnderstood {
    /// The line is longer than [`MAX_COMMAND_BYTES`].
    TooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// More than [`MAX_PARTS`] simple commands.
    TooManyParts,
    /// Substitutions or subshells nested deeper than [`MAX_NESTING`].
    TooDeep,
    /// More than [`MAX_SHELL_STRINGS`] strings run by `sh -c` or `eval`.
    TooManyShellStrings,
    /// A character outside quotes that is not printable ASCII, a blank or a newline.
    Character(char),
    /// A quote, substitution or subshell left open.
    Unterminated(&'static str),
    /// A backslash at the very end.
    TrailingBackslash,
    /// `$'...'` or `$"..."`.
    DollarQuote,
    /// `$((...))`, `$[...]` or `((...))`.
    Arithmetic,
    /// A `${...}` other than `${NAME}`, `${#NAME}`, `${!NAME}` or a special parameter.
    Expansion,
    /// Backslash-backtick inside backticks (nested backticks).
    NestedBackticks,
    /// A token where it cannot stand (`;;`, a stray `)`, `(` inside a word...).
    Unexpected(&'static str),
    /// Nothing before a separator (`; ls`, `ls && && ls`).
    EmptyCommand(Sep),
    /// A redirection operator with no file after it.
    MissingTarget(String),
    /// A compound command this reader does not follow (`for`, `case`, `[[`, `function`...).
    Keyword(String),
}

impl fmt::Display for NotUnderstood {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotUnderstood::TooLong { len } => {
                write!(f, "it is {len} bytes long, more than {MAX_COMMAND_BYTES}")
            }
            NotUnderstood::TooManyParts => write!(f, "it has more than {MAX_PARTS} commands"),
            NotUnderstood::TooDeep => write!(f, "it nests more than {MAX_NESTING} levels deep"),
            NotUnderstood::TooManyShellStrings => {
                write!(f, "it runs more than {MAX_SHELL_STRINGS} strings as commands")
            }
            NotUnderstood::Character(c) => write!(
                f,
                "the character `{}` (U+{:04X}) stands outside quotes",
                visible(&c.to_string()),
                *c as u32
            ),
            NotUnderstood::Unterminated(what) => write!(f, "{what} is not closed"),
            NotUnderstood::TrailingBackslash => f.write_str("it ends with a backslash"),
            NotUnderstood::DollarQuote => f.write_str("it has `$'...'` or `$\"...\"` quoting"),
            NotUnderstood::Arithmetic => f.write_str("it has arithmetic `$((...))`"),
            NotUnderstood::Expansion => f.write_str("it has a `${...}` expansion with operators"),
            NotUnderstood::NestedBackticks => f.write_str("it nests backticks"),
            NotUnderstood::Unexpected(t) => write!(f, "`{t}` stands where it cannot"),
            NotUnderstood::EmptyCommand(s) => write!(f, "there is no command before {s}"),
            NotUnderstood::MissingTarget(op) => write!(f, "`{op}` has no file after it"),
            NotUnderstood::Keyword(k) => write!(f, "it uses the shell keyword `{}`", visible(k)),
        }
    }
}

/// One simple command of a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// Its words, the command name first, without leading assignments, redirections or
    /// keywords (`if`, `!`, `{`).
    pub words: Vec<Word>,
    /// What in it a plain rule does not cover, in the order met.
    pub constructs: Vec<Construct>,
    /// Where it stands.
    pub place: Place,
    /// Its text as written (at most [`MAX_SOURCE_CHARS`] characters, cut with `…`).
    pub source: String,
}

impl Part {
    /// The texts of its words.
    pub fn texts(&self) -> Vec<&str> {
        self.words.iter().map(Word::text).collect()
    }
}

/// A command line read into its simple commands.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Analysis {
    parts: Vec<Part>,
    not_understood: Option<NotUnderstood>,
}

impl Analysis {
    /// The simple commands read, in order, each wrapper before what it runs. When the reader
    /// stopped, these are the ones read before it stopped.
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    /// Why the reader stopped, if it did: the line is then never covered by allow rules.
    pub fn not_understood(&self) -> Option<&NotUnderstood> {
        self.not_understood.as_ref()
    }
}

/// Read LINE into its simple commands (see the module documentation).
pub fn analyze(line: &str) -> Analysis {
    let mut analysis = Analysis::default();
    if line.len() > MAX_COMMAND_BYTES {
        analysis.not_understood = Some(NotUnderstood::TooLong { len: line.len() });
        return analysis;
    }
    let mut queue: Vec<(String, Option<Within>)> = vec![(line.to_string(), None)];
    let mut strings = 0;
    while let Some((source, base)) = queue.pop() {
        let mut raw = Vec::new();
        let read = lex(&source, base, &mut raw);
        let refined = raw
            .into_iter()
            .try_for_each(|part| refine(part, &mut analysis.parts, &mut queue));
        if let Some(problem) = read.err().or(refined.err()) {
            analysis.not_understood.get_or_insert(problem);
        }
        if queue.len() + strings > MAX_SHELL_STRINGS {
            analysis
                .not_understood
                .get_or_insert(NotUnderstood::TooManyShellStrings);
            break;
        }
        strings += 1;
    }
    analysis
}

/// Read SOURCE into its simple commands as written, with no keyword or wrapper handled: for
/// rules, which name one plain command.
pub(crate) fn lex_plain(source: &str) -> Result<Vec<Part>, NotUnderstood> {
    if source.len() > MAX_COMMAND_BYTES {
        return Err(NotUnderstood::TooLong { len: source.len() });
    }
    let mut out = Vec::new();
    lex(source, None, &mut out)?;
    Ok(out)
}

/// Shell keywords stripped from the front of a part (a construct each).
const LEADING_KEYWORDS: &[&str] = &[
    "!", "{", "}", "if", "then", "elif", "else", "fi", "do", "done", "while", "until", "esac",
];
/// Shell keywords that start a grammar this reader does not follow.
const UNSUPPORTED_KEYWORDS: &[&str] = &["for", "case", "select", "function", "coproc", "[[", "]]", "in"];

/// Strip PART's keywords, note an expanded command name, and push it and what its wrappers run
/// to PARTS (strings for a shell to QUEUE).
fn refine(part: Part, parts: &mut Vec<Part>, queue: &mut Vec<(String, Option<Within>)>) -> Result<(), NotUnderstood> {
    let mut stack = vec![part];
    while let Some(mut part) = stack.pop() {
        strip_keywords(&mut part)?;
        if part.words.first().is_some_and(Word::expands) {
            part.constructs.push(Construct::ExpandedCommand);
        }
        if let Some((name, inners)) = wrappers::unwrap(&part.words) {
            part.constructs.push(Construct::Wrapper(name.clone()));
            for inner in inners {
                match inner {
                    Inner::Words(words) => stack.push(Part {
                        words,
                        constructs: Vec::new(),
                        place: Place {
                            after: None,
                            within: Some(Within::Wrapper(name.clone())),
                        },
                        source: part.source.clone(),
                    }),
                    Inner::Source(s) => queue.push((s, Some(Within::ShellString(name.clone())))),
                }
            }
        }
        if parts.len() >= MAX_PARTS {
            return Err(NotUnderstood::TooManyParts);
        }
        parts.push(part);
    }
    Ok(())
}

fn strip_keywords(part: &mut Part) -> Result<(), NotUnderstood> {
    let mut n = 0;
    for word in part.words.iter().take_while(|w| w.is_plain()) {
        if UNSUPPORTED_KEYWORDS.contains(&word.text()) {
            return Err(NotUnderstood::Keyword(word.text.clone()));
        }
        if !LEADING_KEYWORDS.contains(&word.text()) {
            break;
        }
        part.constructs.push(Construct::Keyword(word.text.clone()));
        n += 1;
    }
    part.words.drain(..n);
    Ok(())
}

/// A word being read.
#[derive(Debug, Default)]
struct WordBuf {
    text: String,
    len: usize,
    specials: Vec<(usize, char)>,
    dynamic: bool,
    /// The char position of the first quoted, escaped or expanded character.
    literal_until: Option<usize>,
}

impl WordBuf {
    fn push(&mut self, c: char) {
        self.text.push(c);
        self.len += 1;
    }

    fn push_special(&mut self, c: char) {
        self.specials.push((self.len, c));
        self.push(c);
    }

    fn mark_quoted(&mut self) {
        self.literal_until.get_or_insert(self.len);
    }

    fn push_quoted(&mut self, c: char) {
        self.mark_quoted();
        self.push(c);
    }

    fn push_dynamic(&mut self, text: &str) {
        self.mark_quoted();
        self.dynamic = true;
        text.chars().for_each(|c| self.push(c));
    }

    /// `NAME` when the word is an assignment `NAME=...` or `NAME+=...` (the name unquoted).
    fn assignment(&self) -> Option<String> {
        let eq = self.text.chars().position(|c| c == '=')?;
        if self.literal_until.is_some_and(|q| q <= eq) {
            return None;
        }
        let name: String = self.text.chars().take(eq).collect();
        let name = name.strip_suffix('+').unwrap_or(&name);
        let mut chars = name.chars();
        let first = chars.next()?;
        let valid =
            (first == '_' || first.is_ascii_alphabetic()) && chars.all(|c| c == '_' || c.is_ascii_alphanumeric());
        valid.then(|| name.to_string())
    }

    fn is_fd_number(&self) -> bool {
        self.literal_until.is_none() && !self.text.is_empty() && self.text.bytes().all(|b| b.is_ascii_digit())
    }

    fn finish(self) -> Word {
        let has = |c: char| self.specials.iter().find(|s| s.1 == c).map(|s| s.0);
        let pair =
            |open: char, close: char| has(open).is_some_and(|o| self.specials.iter().any(|s| s.1 == close && s.0 > o));
        let glob = has('*').is_some() || has('?').is_some() || pair('[', ']') || pair('{', '}');
        Word {
            expands: self.dynamic || glob,
            dynamic: self.dynamic,
            plain: self.literal_until.is_none(),
            text: self.text,
            specials: self.specials,
        }
    }
}

/// A simple command being read.
#[derive(Debug, Default)]
struct Cmd {
    start: Option<usize>,
    words: Vec<Word>,
    constructs: Vec<Construct>,
    redirect: Option<&'static str>,
    after: Option<Sep>,
}

/// An open substitution or subshell, with what it interrupted.
#[derive(Debug)]
struct Frame {
    kind: Within,
    start: usize,
    cmd: Cmd,
    word: Option<WordBuf>,
    dq: bool,
}

struct Lexer<'o> {
    src: Vec<char>,
    i: usize,
    dq: bool,
    word: Option<WordBuf>,
    cmd: Cmd,
    frames: Vec<Frame>,
    heredocs: Vec<(String, bool)>,
    base: Option<Within>,
    out: &'o mut Vec<Part>,
}

fn lex(source: &str, base: Option<Within>, out: &mut Vec<Part>) -> Result<(), NotUnderstood> {
    let mut lexer = Lexer {
        src: source.chars().collect(),
        i: 0,
        dq: false,
        word: None,
        cmd: Cmd::default(),
        frames: Vec::new(),
        heredocs: Vec::new(),
        base,
        out,
    };
    lexer.run()
}

impl Lexer<'_> {
    fn peek(&self, k: usize) -> Option<char> {
        self.src.get(self.i + k).copied()
    }

    fn begin(&mut self) {
        self.cmd.start.get_or_insert(self.i);
    }

    fn word(&mut self) -> &mut WordBuf {
        self.begin();
        self.word.get_or_insert_with(WordBuf::default)
    }

    fn run(&mut self) -> Result<(), NotUnderstood> {
        while let Some(c) = self.peek(0) {
            if self.dq {
                self.double_quoted(c)?;
            } else {
                self.unquoted(c)?;
            }
        }
        if self.dq {
            return Err(NotUnderstood::Unterminated("a double quote"));
        }
        if let Some(frame) = self.frames.last() {
            return Err(NotUnderstood::Unterminated(match frame.kind {
                Within::Backticks => "a backtick",
                Within::Subshell => "a `(`",
                _ => "a `$(` or `<(`",
            }));
        }
        self.end_word()?;
        self.end_command(None)
    }

    fn unquoted(&mut self, c: char) -> Result<(), NotUnderstood> {
        match c {
            ' ' | '\t' => {
                self.end_word()?;
                self.i += 1;
            }
            '\n' => {
                self.separator(Sep::Newline, 1)?;
                self.skip_heredocs();
            }
            ';' if matches!(self.peek(1), Some(';' | '&')) => return Err(NotUnderstood::Unexpected(";;")),
            ';' => self.separator(Sep::Semicolon, 1)?,
            '&' => match self.peek(1) {
                Some('&') => self.separator(Sep::And, 2)?,
                Some('>') => self.redirect()?,
                _ => self.separator(Sep::Background, 1)?,
            },
            '|' => match self.peek(1) {
                Some('|') => self.separator(Sep::Or, 2)?,
                Some('&') => self.separator(Sep::PipeAll, 2)?,
                _ => self.separator(Sep::Pipe, 1)?,
            },
            '<' | '>' if self.peek(1) == Some('(') => self.open(Within::ProcessSubstitution, 2)?,
            '<' | '>' => self.redirect()?,
            '(' => self.open_subshell()?,
            ')' => match self.frames.last().map(|f| &f.kind) {
                Some(Within::CommandSubstitution | Within::ProcessSubstitution | Within::Subshell) => self.close()?,
                _ => return Err(NotUnderstood::Unexpected(")")),
            },
            '`' => self.backtick()?,
            '\'' => self.single_quote()?,
            '"' => {
                self.word().mark_quoted();
                self.dq = true;
                self.i += 1;
            }
            '\\' => self.escape()?,
            '$' => self.dollar()?,
            '#' if self.word.is_none() => {
                while self.peek(0).is_some_and(|c| c != '\n') {
                    self.i += 1;
                }
            }
            '*' | '?' | '[' | ']' | '{' | '}' => {
                self.word().push_special(c);
                self.i += 1;
            }
            _ if c.is_ascii_graphic() => {
                self.word().push(c);
                self.i += 1;
            }
            _ => return Err(NotUnderstood::Character(c)),
        }
        Ok(())
    }

    fn double_quoted(&mut self, c: char) -> Result<(), NotUnderstood> {
        match c {
            '"' => {
                self.dq = false;
                self.i += 1;
            }
            '\\' => match self.peek(1) {
                Some('\n') => self.i += 2,
                Some(n @ ('$' | '`' | '"' | '\\')) => {
                    self.word().push_quoted(n);
                    self.i += 2;
                }
                _ => {
                    self.word().push_quoted('\\');
                    self.i += 1;
                }
            },
            '$' => self.dollar()?,
            '`' => self.backtick()?,
            _ => {
                self.word().push_quoted(c);
                self.i += 1;
            }
        }
        Ok(())
    }

    fn escape(&mut self) -> Result<(), NotUnderstood> {
        match self.peek(1) {
            None => return Err(NotUnderstood::TrailingBackslash),
            Some('\n') => {}
            Some('`') if self.frames.iter().any(|f| f.kind == Within::Backticks) => {
                return Err(NotUnderstood::NestedBackticks)
            }
            Some(n) => self.word().push_quoted(n),
        }
        self.i += 2;
        Ok(())
    }

    fn single_quote(&mut self) -> Result<(), NotUnderstood> {
        let start = self.i + 1;
        let len = self.src[start.min(self.src.len())..]
            .iter()
            .position(|&c| c == '\'')
            .ok_or(NotUnderstood::Unterminated("a single quote"))?;
        let text: String = self.src[start..start + len].iter().collect();
        let word = self.word();
        word.mark_quoted();
        text.chars().for_each(|c| word.push(c));
        self.i = start + len + 1;
        Ok(())
    }

    fn dollar(&mut self) -> Result<(), NotUnderstood> {
        let name_char = |c: char| c == '_' || c.is_ascii_alphanumeric();
        let special = |c: char| c.is_ascii_digit() || "@*#?$!-".contains(c);
        let end = match self.peek(1) {
            Some('(') if self.peek(2) == Some('(') => return Err(NotUnderstood::Arithmetic),
            // `$[...]`, bash's old arithmetic.
            Some('[') => return Err(NotUnderstood::Arithmetic),
            Some('(') => return self.open(Within::CommandSubstitution, 2),
            Some('{') => self.braced_parameter()?,
            Some('\'' | '"') if !self.dq => return Err(NotUnderstood::DollarQuote),
            Some(c) if c == '_' || c.is_ascii_alphabetic() => {
                let mut j = self.i + 1;
                while self.src.get(j).is_some_and(|&c| name_char(c)) {
                    j += 1;
                }
                j
            }
            Some(c) if special(c) => self.i + 2,
            _ => {
                let dq = self.dq;
                let word = self.word();
                if dq {
                    word.push_quoted('$');
                } else {
                    word.push('$');
                }
                self.i += 1;
                return Ok(());
            }
        };
        let text: String = self.src[self.i..end].iter().collect();
        self.word().push_dynamic(&text);
        self.i = end;
        Ok(())
    }

    /// The end (exclusive) of `${NAME}`, `${#NAME}`, `${!NAME}` or `${@}`-like at the cursor.
    fn braced_parameter(&self) -> Result<usize, NotUnderstood> {
        let at = |j: usize| self.src.get(j).copied();
        let mut j = self.i + 2;
        if matches!(at(j), Some('#' | '!')) && at(j + 1) != Some('}') {
            j += 1;
        }
        let start = j;
        while at(j).is_some_and(|c| c == '_' || c.is_ascii_alphanumeric()) {
            j += 1;
        }
        if j == start && at(j).is_some_and(|c| "@*#?$!-".contains(c)) {
            j += 1;
        }
        if j == start || at(j) != Some('}') {
            return Err(NotUnderstood::Expansion);
        }
        Ok(j + 1)
    }

    fn backtick(&mut self) -> Result<(), NotUnderstood> {
        if self.frames.last().is_some_and(|f| f.kind == Within::Backticks) {
            self.close()
        } else {
            self.open(Within::Backticks, 1)
        }
    }

    fn open_subshell(&mut self) -> Result<(), NotUnderstood> {
        if self.word.is_some() || !self.cmd.words.is_empty() || self.cmd.redirect.is_some() {
            return Err(NotUnderstood::Unexpected("("));
        }
        if self.peek(1) == Some('(') {
            return Err(NotUnderstood::Arithmetic);
        }
        self.open(Within::Subshell, 1)
    }

    /// Open a substitution or subshell of KIND, whose opening token is LEN characters long.
    fn open(&mut self, kind: Within, len: usize) -> Result<(), NotUnderstood> {
        if self.frames.len() >= MAX_NESTING {
            return Err(NotUnderstood::TooDeep);
        }
        self.begin();
        self.cmd.constructs.push(match kind {
            Within::Backticks => Construct::Backticks,
            Within::ProcessSubstitution => Construct::ProcessSubstitution,
            Within::Subshell => Construct::Subshell,
            _ => Construct::CommandSubstitution,
        });
        let frame = Frame {
            kind,
            start: self.i,
            cmd: mem::take(&mut self.cmd),
            word: self.word.take(),
            dq: mem::replace(&mut self.dq, false),
        };
        self.frames.push(frame);
        self.i += len;
        Ok(())
    }

    /// Close the innermost frame at the cursor's `)` or backtick.
    fn close(&mut self) -> Result<(), NotUnderstood> {
        self.end_word()?;
        self.end_command(None)?;
        let Some(frame) = self.frames.pop() else {
            return Err(NotUnderstood::Unexpected(")"));
        };
        self.i += 1;
        let text: String = self.src[frame.start..self.i].iter().collect();
        self.cmd = frame.cmd;
        self.word = frame.word;
        self.dq = frame.dq;
        if frame.kind != Within::Subshell {
            self.word().push_dynamic(&text);
        }
        Ok(())
    }

    fn separator(&mut self, sep: Sep, len: usize) -> Result<(), NotUnderstood> {
        self.end_word()?;
        self.end_command(Some(sep))?;
        self.i += len;
        Ok(())
    }

    fn redirect(&mut self) -> Result<(), NotUnderstood> {
        self.begin();
        if self.word.as_ref().is_some_and(WordBuf::is_fd_number) {
            self.word = None;
        } else {
            self.end_word()?;
        }
        let (op, len) = match (self.peek(0), self.peek(1), self.peek(2)) {
            (Some('&'), _, Some('>')) => ("&>>", 3),
            (Some('&'), _, _) => ("&>", 2),
            (Some('<'), Some('<'), Some('<')) => ("<<<", 3),
            (Some('<'), Some('<'), Some('-')) => ("<<-", 3),
            (Some('<'), Some('<'), _) => ("<<", 2),
            (Some('<'), Some('&'), _) => ("<&", 2),
            (Some('<'), Some('>'), _) => ("<>", 2),
            (Some('<'), _, _) => ("<", 1),
            (_, Some('>'), _) => (">>", 2),
            (_, Some('|'), _) => (">|", 2),
            (_, Some('&'), _) => (">&", 2),
            _ => (">", 1),
        };
        if let Some(previous) = self.cmd.redirect.replace(op) {
            return Err(NotUnderstood::MissingTarget(previous.into()));
        }
        self.i += len;
        Ok(())
    }

    fn end_word(&mut self) -> Result<(), NotUnderstood> {
        let Some(buf) = self.word.take() else {
            return Ok(());
        };
        if let Some(op) = self.cmd.redirect.take() {
            self.redirect_target(op, buf.finish());
        } else if let Some(name) = buf.assignment().filter(|_| self.cmd.words.is_empty()) {
            self.cmd.constructs.push(Construct::Assignment(name));
        } else {
            self.cmd.words.push(buf.finish());
        }
        Ok(())
    }

    fn redirect_target(&mut self, op: &'static str, target: Word) {
        let dup = |t: &str| t == "-" || (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()));
        let construct = match op {
            "<<" | "<<-" => {
                self.heredocs.push((target.text, op == "<<-"));
                Construct::HereDoc
            }
            "<<<" => Construct::HereString,
            _ if !target.expands && ((op.ends_with('&') && dup(&target.text)) || target.text == "/dev/null") => return,
            _ => Construct::Redirect {
                op: op.into(),
                target: target.text,
            },
        };
        self.cmd.constructs.push(construct);
    }

    /// Skip the bodies of the here-documents opened on the line just ended.
    fn skip_heredocs(&mut self) {
        for (delimiter, strip_tabs) in mem::take(&mut self.heredocs) {
            while self.i < self.src.len() {
                let rest = &self.src[self.i..];
                let len = rest.iter().position(|&c| c == '\n').unwrap_or(rest.len());
                let line: String = rest[..len].iter().collect();
                self.i += len + 1;
                let line = if strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    &line
                };
                if line == delimiter {
                    break;
                }
            }
            self.i = self.i.min(self.src.len());
        }
    }

    fn end_command(&mut self, sep: Option<Sep>) -> Result<(), NotUnderstood> {
        if let Some(op) = self.cmd.redirect.take() {
            return Err(NotUnderstood::MissingTarget(op.into()));
        }
        let Some(start) = self.cmd.start else {
            return match sep {
                None | Some(Sep::Newline) => Ok(()),
                Some(sep) => Err(NotUnderstood::EmptyCommand(sep)),
            };
        };
        let cmd = mem::replace(
            &mut self.cmd,
            Cmd {
                after: sep,
                ..Cmd::default()
            },
        );
        if self.out.len() >= MAX_PARTS {
            return Err(NotUnderstood::TooManyParts);
        }
        let end = self.i.min(self.src.len());
        let text = &self.src[start.min(end)..end];
        let mut source: String = text.iter().take(MAX_SOURCE_CHARS).collect();
        if text.len() > MAX_SOURCE_CHARS {
            source.push('…');
        }
        let within = self.frames.last().map(|f| f.kind.clone()).or(self.base.clone());
        self.out.push(Part {
            words: cmd.words,
            constructs: cmd.constructs,
            place: Place {
                after: cmd.after,
                within,
            },
            source: source.trim().to_string(),
        });
        Ok(())
    }
}
