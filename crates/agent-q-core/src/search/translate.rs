//! Translating an Emacs regexp into the syntax of [`regex_syntax`].

use super::{SearchError, Translation, MAX_PATTERN_CHARS, PUNCTUATION_CHARS, SYMBOL_CHARS};

/// A word start (`\<`; also `\_<` where it is approximated).
const WORD_START: &str = "(?:\\b{start})";

/// A word end (`\>`; also `\_>` where it is approximated).
const WORD_END: &str = "(?:\\b{end})";

/// The largest repetition count Emacs accepts (`RE_DUP_MAX`).
const DUP_MAX: u32 = 0xFFFF;

/// Which Emacs's regexp engine a translation agrees with. The two differ only on a repetition
/// operator (`*`, `+`, `?`, `\{...\}`) right after a zero-width assertion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dialect {
    /// Emacs 29 and earlier: the operator repeats the item before the assertion together with
    /// it (`ab\b*` repeats `b\b`... as `re_search` compiled it).
    #[default]
    Emacs29,
    /// Emacs 30 and later (its NEWS: "Regexp zero-width assertions followed by operators are
    /// better defined"): after `\`` or an anchoring `^` the operator is a literal character;
    /// after any other assertion it applies to that assertion alone, which makes `\b*` match
    /// the empty string and `\b+` the same as `\b`.
    Emacs30,
}

impl Dialect {
    /// The dialect of Emacs with major version MAJOR.
    pub fn of_emacs(major: i64) -> Self {
        if major >= 30 {
            Dialect::Emacs30
        } else {
            Dialect::Emacs29
        }
    }
}

/// What the last token of a sequence was, when it was a zero-width assertion (Emacs 30 only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum After {
    /// `\`` or an anchoring `^`: an operator after it is a literal character.
    Start,
    /// Another assertion, the last piece: an operator after it applies to it alone, and so
    /// does each further operator.
    Assertion,
    /// An assertion that an operator has let repeat zero times, and so removed: further
    /// operators repeat the empty string.
    Removed,
}

/// One alternative being built: its pieces, and which piece a repetition operator applies to.
#[derive(Default)]
struct Seq {
    pieces: Vec<String>,
    last: Option<usize>,
    /// The last piece is a literal character in a run of them (Emacs's `exactn`).
    in_run: bool,
    /// The last token was an assertion (kept only in [`Dialect::Emacs30`]).
    after: Option<After>,
}

impl Seq {
    fn atom(&mut self, s: impl Into<String>) {
        self.pieces.push(s.into());
        self.last = Some(self.pieces.len() - 1);
        self.in_run = false;
        self.after = None;
    }
    /// A literal character. As in Emacs, consecutive literals form one run and a repetition
    /// applies to the run's start onwards, except that a literal followed by a repetition
    /// operator (`*+?^` or `\{`, FOLLOWED) starts a run of its own. The difference shows only
    /// when an assertion sits between the run and the operator (`ab\b*` repeats `ab\b`).
    fn literal(&mut self, s: String, followed: bool) {
        if self.in_run && !followed {
            self.pieces.push(s);
        } else {
            self.atom(s);
        }
        self.in_run = true;
        self.after = None;
    }
    /// A zero-width assertion: as in Emacs, it does not start a new repeatable item, so a
    /// repetition operator after it repeats the previous atom together with the assertion.
    fn anchor(&mut self, s: &str, dialect: Dialect, after: After) {
        self.pieces.push(s.to_string());
        self.in_run = false;
        self.after = (dialect == Dialect::Emacs30).then_some(after);
    }
    /// Emacs 30: a repetition whose count may be zero (ZERO) applied to the assertion just
    /// pushed leaves the empty string in its place; any other leaves the assertion as it is.
    /// Further operators still apply to what is left.
    fn repeat_assertion(&mut self, zero: bool) {
        if zero && self.after == Some(After::Assertion) {
            self.pieces.pop();
            self.after = Some(After::Removed);
        }
    }
    /// Apply the repetition SUFFIX to the last atom and the assertions after it.
    fn repeat(&mut self, suffix: &str) {
        if let Some(k) = self.last {
            let body = self.pieces.split_off(k).concat();
            self.pieces.push(format!("(?:{body}){suffix}"));
            self.last = Some(k);
        }
        self.in_run = false;
        self.after = None;
    }
    fn concat(&self) -> String {
        self.pieces.concat()
    }
}

/// A group being built.
struct Frame {
    alts: Vec<String>,
    seq: Seq,
    open: usize,
}

impl Frame {
    fn new(open: usize) -> Self {
        Frame {
            alts: Vec::new(),
            seq: Seq::default(),
            open,
        }
    }
    fn finish(mut self) -> String {
        self.alts.push(self.seq.concat());
        self.alts.join("|")
    }
}

fn invalid<T>(position: usize, problem: impl Into<String>) -> Result<T, SearchError> {
    Err(SearchError::Invalid {
        position,
        problem: problem.into(),
    })
}

fn unsupported<T>(position: usize, construct: impl Into<String>, reason: impl Into<String>) -> Result<T, SearchError> {
    Err(SearchError::Unsupported {
        construct: construct.into(),
        position,
        reason: reason.into(),
    })
}

/// A character written for use inside a regex class: alphanumerics as is, the rest escaped.
fn class_char(c: char) -> String {
    if c.is_ascii_alphanumeric() {
        c.to_string()
    } else {
        format!("\\x{{{:X}}}", c as u32)
    }
}

/// A class (or its negation) of the literal characters CHARS.
fn class_of(chars: &str, negate: bool) -> String {
    let body: String = chars.chars().map(class_char).collect();
    format!("[{}{}]", if negate { "^" } else { "" }, body)
}

/// The regex for syntax class CODE (`\sCODE`, or `\SCODE` when NEGATE), or an error.
fn syntax_class(code: char, negate: bool, position: usize) -> Result<String, SearchError> {
    let n = if negate { "^" } else { "" };
    let construct = format!("\\{}{}", if negate { 'S' } else { 's' }, code);
    Ok(match code {
        ' ' | '-' => (if negate { "\\S" } else { "\\s" }).to_string(),
        'w' => (if negate { "[\\W_]" } else { "[\\w--_]" }).to_string(),
        '_' => class_of(SYMBOL_CHARS, negate),
        '.' => {
            let ascii: String = PUNCTUATION_CHARS.chars().map(class_char).collect();
            format!("[{n}{ascii}[\\p{{P}}--\\x{{0}}-\\x{{7F}}]]")
        }
        '(' => class_of("([{", negate),
        ')' => class_of(")]}", negate),
        '"' => class_of("\"", negate),
        '\\' => class_of("\\", negate),
        '\'' | '<' | '>' | '!' | '|' | '$' | '/' | '@' => {
            return unsupported(
                position,
                construct,
                "this syntax class depends on the buffer's major mode; use an explicit [...] set",
            )
        }
        _ => return invalid(position, format!("invalid syntax class {construct}")),
    })
}

/// The regex class items for the Emacs character class NAME (`[:NAME:]`), if it is one.
fn named_class(name: &str) -> Option<&'static str> {
    Some(match name {
        "alpha" => "\\p{Alphabetic}",
        "alnum" => "\\p{Alphabetic}\\p{Nd}",
        "digit" => "0-9",
        "xdigit" => "0-9A-Fa-f",
        "space" => "\\s",
        "upper" => "\\p{Uppercase}",
        "lower" => "\\p{Lowercase}",
        "punct" => "\\x{21}-\\x{2F}\\x{3A}-\\x{40}\\x{5B}-\\x{60}\\x{7B}-\\x{7E}\\p{P}\\p{S}",
        "cntrl" => "\\x{0}-\\x{1F}",
        "blank" => "\\p{Zs}\\t",
        "graph" => "[^\\p{Z}\\p{C}]",
        "print" => "[^\\p{C}]",
        "word" => "[\\w--_]",
        "ascii" | "unibyte" => "\\x{0}-\\x{7F}",
        "nonascii" | "multibyte" => "\\x{80}-\\x{10FFFF}",
        _ => return None,
    })
}

/// Translate the bracket set starting at `p[start]` (`[`); return the regex and the index after.
fn bracket(p: &[char], start: usize) -> Result<(String, usize), SearchError> {
    let mut i = start + 1;
    let negate = p.get(i) == Some(&'^');
    if negate {
        i += 1;
    }
    let mut items = String::new();
    let mut first = true;
    loop {
        let Some(&c) = p.get(i) else {
            return invalid(start, "unmatched [ or [^");
        };
        if c == ']' && !first {
            i += 1;
            break;
        }
        first = false;
        // A character class [:name:].
        if c == '[' && p.get(i + 1) == Some(&':') {
            let rest = &p[i + 2..];
            if let Some(colon) = rest.iter().position(|&x| x == ':') {
                if rest.get(colon + 1) == Some(&']') {
                    let name: String = rest[..colon].iter().collect();
                    match named_class(&name) {
                        Some(items_of) => items.push_str(items_of),
                        None => return invalid(i, format!("invalid character class name [:{name}:]")),
                    }
                    i += 2 + colon + 2;
                    continue;
                }
            }
        }
        // A range c-d (a '-' just before the closing ']' is literal).
        if p.get(i + 1) == Some(&'-') {
            if let Some(&d) = p.get(i + 2) {
                if d != ']' {
                    if c <= d {
                        items.push_str(&format!("{}-{}", class_char(c), class_char(d)));
                    }
                    i += 3;
                    continue;
                }
            }
        }
        items.push_str(&class_char(c));
        i += 1;
    }
    let class = match (items.is_empty(), negate) {
        (true, false) => "[^\\x{0}-\\x{10FFFF}]".to_string(),
        (true, true) => "[\\x{0}-\\x{10FFFF}]".to_string(),
        (false, _) => format!("[{}{}]", if negate { "^" } else { "" }, items),
    };
    Ok((class, i))
}

/// Whether the pattern at `p[at]` starts with a repetition operator (for literal runs).
fn repetition_follows(p: &[char], at: usize) -> bool {
    matches!(p.get(at), Some('*' | '+' | '?' | '^')) || (p.get(at) == Some(&'\\') && p.get(at + 1) == Some(&'{'))
}

/// Read a decimal repetition count at `p[*i]` (empty gives None).
fn count(p: &[char], i: &mut usize, open: usize) -> Result<Option<u32>, SearchError> {
    let begin = *i;
    let mut n: u32 = 0;
    while let Some(d) = p.get(*i).and_then(|c| c.to_digit(10)) {
        n = n.saturating_mul(10).saturating_add(d);
        *i += 1;
    }
    if *i == begin {
        return Ok(None);
    }
    if n > DUP_MAX {
        return invalid(open, format!("repetition count {n} exceeds {DUP_MAX}"));
    }
    Ok(Some(n))
}

/// Translate the Emacs regexp PATTERN into the syntax of [`regex_syntax`].
pub fn translate(pattern: &str) -> Result<Translation, SearchError> {
    translate_in(pattern, Dialect::Emacs29)
}

/// Translate PATTERN as the regexp engine of DIALECT reads it (see [`translate`]).
pub fn translate_in(pattern: &str, dialect: Dialect) -> Result<Translation, SearchError> {
    let p: Vec<char> = pattern.chars().collect();
    if p.len() > MAX_PATTERN_CHARS {
        return Err(SearchError::TooLarge(format!(
            "the pattern has {} characters, at most {MAX_PATTERN_CHARS} are accepted",
            p.len()
        )));
    }
    let mut stack: Vec<Frame> = vec![Frame::new(0)];
    // Whether the previous token opened a group or an alternative (where `^` is an anchor).
    let mut at_begline = true;
    let mut symbol_start = false;
    let mut symbol_end = false;
    let mut i = 0;
    while i < p.len() {
        let c = p[i];
        let begline = at_begline;
        at_begline = false;
        let depth = stack.len();
        let Some(frame) = stack.last_mut() else {
            return Err(SearchError::Engine("group stack empty".into()));
        };
        let seq = &mut frame.seq;
        match c {
            '^' if begline => {
                seq.anchor("(?m:^)", dialect, After::Start);
                i += 1;
            }
            '$' if i + 1 == p.len() || (p[i + 1] == '\\' && matches!(p.get(i + 2), Some(')') | Some('|'))) => {
                seq.anchor("(?m:$)", dialect, After::Assertion);
                i += 1;
            }
            '*' | '+' | '?' if seq.after == Some(After::Start) => {
                i += 1;
                seq.literal(
                    regex_syntax::escape(c.encode_utf8(&mut [0; 4])),
                    repetition_follows(&p, i),
                );
            }
            '*' | '+' | '?' if matches!(seq.after, Some(After::Assertion | After::Removed)) => {
                // Whether the chain may repeat zero times, read as below (`+?` is a lazy `+`).
                let (mut zero, mut many) = (false, false);
                while let Some(&op @ ('*' | '+' | '?')) = p.get(i) {
                    if !(op == '?' && (zero || many)) {
                        zero |= op != '+';
                        many |= op != '?';
                    }
                    i += 1;
                }
                seq.repeat_assertion(zero);
            }
            '*' | '+' | '?' if seq.last.is_some() => {
                let (mut zero, mut many, mut greedy) = (false, false, true);
                let mut op = c;
                loop {
                    if op == '?' && (zero || many) {
                        greedy = false;
                    } else {
                        zero |= op != '+';
                        many |= op != '?';
                    }
                    i += 1;
                    match p.get(i) {
                        Some(&next @ ('*' | '+' | '?')) => op = next,
                        _ => break,
                    }
                }
                let suffix = match (zero, many) {
                    (true, true) => "*",
                    (false, _) => "+",
                    (true, false) => "?",
                };
                let lazy = if greedy { "" } else { "?" };
                seq.repeat(&format!("{suffix}{lazy}"));
            }
            '.' => {
                seq.atom("[^\\n]");
                i += 1;
            }
            '[' => {
                let (class, next) = bracket(&p, i)?;
                seq.atom(class);
                i = next;
            }
            '\\' => {
                let Some(&e) = p.get(i + 1) else {
                    return invalid(i, "trailing backslash");
                };
                let here = i;
                i += 2;
                match e {
                    '(' => {
                        if p.get(i) == Some(&'?') {
                            let mut j = i + 1;
                            while p.get(j).is_some_and(|c| c.is_ascii_digit()) {
                                j += 1;
                            }
                            if p.get(j) != Some(&':') {
                                return invalid(here, "invalid \\(? group: expected \\(?: or \\(?N:");
                            }
                            i = j + 1;
                        }
                        stack.push(Frame::new(here));
                        at_begline = true;
                    }
                    ')' => {
                        if depth == 1 {
                            return invalid(here, "unmatched \\)");
                        }
                        let Some(done) = stack.pop() else {
                            return invalid(here, "unmatched \\)");
                        };
                        let group = format!("(?:{})", done.finish());
                        if let Some(parent) = stack.last_mut() {
                            parent.seq.atom(group);
                        }
                    }
                    '|' => {
                        let finished = std::mem::take(seq).concat();
                        frame.alts.push(finished);
                        at_begline = true;
                    }
                    '{' => {
                        let mut j = i;
                        let lower = count(&p, &mut j, here)?.unwrap_or(0);
                        let upper = if p.get(j) == Some(&',') {
                            j += 1;
                            count(&p, &mut j, here)?
                        } else {
                            Some(lower)
                        };
                        if p.get(j) != Some(&'\\') || p.get(j + 1) != Some(&'}') {
                            return invalid(here, "invalid \\{...\\} interval");
                        }
                        if upper.is_some_and(|u| u < lower) {
                            return invalid(here, "interval \\{n,m\\} with m < n");
                        }
                        if seq.after == Some(After::Start) {
                            // Emacs 30: after `\`` or `^`, `\{` is a literal `{`.
                            seq.literal("\\{".into(), repetition_follows(&p, i));
                        } else if matches!(seq.after, Some(After::Assertion | After::Removed)) {
                            seq.repeat_assertion(lower == 0);
                            i = j + 2;
                        } else if seq.last.is_some() {
                            let bounds = match upper {
                                Some(u) if u == lower => format!("{{{lower}}}"),
                                Some(u) => format!("{{{lower},{u}}}"),
                                None => format!("{{{lower},}}"),
                            };
                            seq.repeat(&bounds);
                            i = j + 2;
                        } else {
                            // As in Emacs: with nothing to repeat, `\{` is a literal `{`.
                            seq.literal("\\{".into(), repetition_follows(&p, i));
                        }
                    }
                    '1'..='9' => {
                        return unsupported(
                            here,
                            format!("\\{e}"),
                            "back-references cannot be matched in linear time",
                        )
                    }
                    '=' => return unsupported(here, "\\=", "point is not known to the search"),
                    'c' | 'C' => {
                        let cat = p.get(i).map(|c| c.to_string()).unwrap_or_default();
                        return unsupported(here, format!("\\{e}{cat}"), "character categories are not supported");
                    }
                    's' | 'S' => {
                        let Some(&code) = p.get(i) else {
                            return invalid(here, format!("\\{e} without a syntax class"));
                        };
                        seq.atom(syntax_class(code, e == 'S', here)?);
                        i += 1;
                    }
                    'w' => seq.atom("[\\w--_]"),
                    'W' => seq.atom("[\\W_]"),
                    '`' => seq.anchor("\\A", dialect, After::Start),
                    '\'' => seq.anchor("\\z", dialect, After::Assertion),
                    // Emacs's \b also matches at the start and end of the buffer.
                    'b' => seq.anchor("(?:\\b|\\A|\\z)", dialect, After::Assertion),
                    'B' => seq.anchor("\\B", dialect, After::Assertion),
                    // Unlike \b, Emacs lets these (and \_< \_>) be repeated.
                    '<' => seq.atom(WORD_START),
                    '>' => seq.atom(WORD_END),
                    '_' => match p.get(i) {
                        Some('<') => {
                            i += 1;
                            if depth == 1 && frame.alts.is_empty() && seq.pieces.is_empty() {
                                symbol_start = true;
                            }
                            seq.atom(WORD_START);
                        }
                        Some('>') => {
                            i += 1;
                            symbol_end = depth == 1 && i == p.len();
                            seq.atom(WORD_END);
                        }
                        _ => return invalid(here, "\\_ must be followed by < or >"),
                    },
                    other => seq.literal(
                        regex_syntax::escape(other.encode_utf8(&mut [0; 4])),
                        repetition_follows(&p, i),
                    ),
                }
            }
            other => {
                i += 1;
                seq.literal(
                    regex_syntax::escape(other.encode_utf8(&mut [0; 4])),
                    repetition_follows(&p, i),
                );
            }
        }
    }
    if stack.len() > 1 {
        let open = stack.last().map_or(0, |f| f.open);
        return invalid(open, "unmatched \\(");
    }
    let Some(mut top) = stack.pop() else {
        return Err(SearchError::Engine("group stack empty".into()));
    };
    let has_alternation = !top.alts.is_empty();
    // Edge symbol boundaries are checked on each match instead of approximated.
    // (Only when the boundary was not repeated, which leaves its piece as it was written.)
    let symbol_start = symbol_start && !has_alternation && top.seq.pieces.first().is_some_and(|p| p == WORD_START);
    let symbol_end = symbol_end && !has_alternation && top.seq.pieces.last().is_some_and(|p| p == WORD_END);
    if symbol_start {
        if let Some(first) = top.seq.pieces.first_mut() {
            first.clear();
        }
    }
    if symbol_end {
        if let Some(last) = top.seq.pieces.last_mut() {
            last.clear();
        }
    }
    Ok(Translation {
        pattern: top.finish(),
        symbol_start,
        symbol_end,
    })
}

#[cfg(test)]
mod tests;
