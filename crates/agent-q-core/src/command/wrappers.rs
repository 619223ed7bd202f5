//! Commands that run another command: what they run, so that deny and ask rules see it.
//!
//! A wrapper is never covered by an allow rule (the part gets [`super::shell::Construct::Wrapper`]);
//! this module only finds the command it runs, skipping the wrapper's own options. When that
//! cannot be told (an option's argument expands, `sh` runs a script), nothing is found: the line
//! is still not allowed, only a deny rule cannot see inside it.

use super::shell::Word;

/// What a wrapper runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Inner {
    /// A command, as words (`sudo rm x` runs `rm x`).
    Words(Vec<Word>),
    /// A string a shell reads as a command line (`sh -c 'a; b'`, `eval a b`).
    Source(String),
}

/// A wrapper that runs the words after its options (and after OPERANDS operands).
struct Spec {
    name: &'static str,
    /// Options followed by a separate argument.
    with_argument: &'static [&'static str],
    /// Operands before the command (`timeout`'s duration).
    operands: usize,
    /// Whether `NAME=value` words may stand before the command (`env`, `sudo`).
    assignments: bool,
}

const fn spec(name: &'static str, with_argument: &'static [&'static str]) -> Spec {
    Spec {
        name,
        with_argument,
        operands: 0,
        assignments: false,
    }
}

const SPECS: &[Spec] = &[
    Spec {
        assignments: true,
        ..spec(
            "sudo",
            &[
                "-u",
                "-g",
                "-h",
                "-p",
                "-C",
                "-D",
                "-r",
                "-t",
                "-T",
                "-U",
                "--user",
                "--group",
                "--host",
                "--prompt",
                "--close-from",
                "--chdir",
                "--role",
                "--type",
                "--other-user",
            ],
        )
    },
    spec("doas", &["-u", "-C"]),
    Spec {
        assignments: true,
        ..spec("env", &["-u", "-C", "--unset", "--chdir", "-S", "--split-string"])
    },
    spec("exec", &["-a"]),
    spec("command", &[]),
    spec("builtin", &[]),
    spec("nohup", &[]),
    spec("time", &[]),
    spec("nice", &["-n", "--adjustment"]),
    Spec {
        operands: 1,
        ..spec("timeout", &["-s", "-k", "--signal", "--kill-after"])
    },
    spec(
        "xargs",
        &[
            "-a",
            "-d",
            "-E",
            "-I",
            "-L",
            "-n",
            "-P",
            "-s",
            "--arg-file",
            "--delimiter",
            "--eof",
            "--replace",
            "--max-lines",
            "--max-args",
            "--max-procs",
            "--max-chars",
            "--process-slot-var",
        ],
    ),
    spec("stdbuf", &["-i", "-o", "-e"]),
    spec("setsid", &[]),
    spec("ionice", &["-c", "-n", "-p", "-P", "-u"]),
    spec("watch", &["-n", "-d", "--interval", "-q"]),
    spec("flock", &["-w", "-E", "-c"]),
];

/// Shells whose `-c` runs a string.
const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "ash", "mksh"];

/// The wrapper's name and what it runs, when WORDS start with a wrapper. A command name is
/// compared by its last `/` component, so `/usr/bin/sudo` is `sudo`.
pub(crate) fn unwrap(words: &[Word]) -> Option<(String, Vec<Inner>)> {
    let first = words.first().filter(|w| !w.expands())?;
    let name = first.text().rsplit('/').next().unwrap_or(first.text());
    let rest = &words[1..];
    let inners = if let Some(spec) = SPECS.iter().find(|s| s.name == name) {
        after_options(spec, rest).map(Inner::Words).into_iter().collect()
    } else if SHELLS.contains(&name) {
        shell_string(rest).into_iter().collect()
    } else if name == "eval" {
        joined(rest).into_iter().collect()
    } else if name == "su" || name == "runuser" {
        su_command(rest).into_iter().collect()
    } else if name == "find" {
        find_exec(rest)?
    } else {
        return None;
    };
    Some((name.to_string(), inners))
}

/// The words after SPEC's options and operands, or `None` when they cannot be told or there
/// are none.
fn after_options(spec: &Spec, words: &[Word]) -> Option<Vec<Word>> {
    let mut i = 0;
    while let Some(word) = words.get(i) {
        let text = word.text();
        if word.is_dynamic() {
            return None;
        }
        if text == "--" {
            i += 1;
            break;
        }
        if text.starts_with('-') && text.len() > 1 {
            // `env -S` splits its argument into a command line of its own: not followed.
            if spec.name == "env" && (text == "-S" || text.starts_with("--split-string")) {
                return None;
            }
            i += if spec.with_argument.contains(&text) { 2 } else { 1 };
        } else if spec.assignments && !word.expands() && is_assignment(text) {
            i += 1;
        } else {
            break;
        }
    }
    let command = words.get(i + spec.operands..)?;
    (!command.is_empty()).then(|| command.to_vec())
}

fn is_assignment(text: &str) -> bool {
    text.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
    })
}

/// The string after `-c` (or an option holding `c`, as in `-ec`), when it does not expand.
fn shell_string(words: &[Word]) -> Option<Inner> {
    let mut has_c = false;
    let mut i = 0;
    while let Some(text) = words.get(i).map(Word::text) {
        if text == "--" || text == "-" {
            i += 1;
            break;
        }
        let Some(flags) = text.strip_prefix(['-', '+']) else {
            break;
        };
        if flags.starts_with('-') {
            // --rcfile FILE, --init-file FILE; other long options stand alone.
            i += if matches!(text, "--rcfile" | "--init-file") {
                2
            } else {
                1
            };
            continue;
        }
        has_c |= text.starts_with('-') && flags.contains('c');
        // -o OPTION and -O OPTION take an argument.
        i += if flags.ends_with(['o', 'O']) { 2 } else { 1 };
    }
    let string = words.get(i).filter(|w| has_c && !w.expands())?;
    Some(Inner::Source(string.text().to_string()))
}

/// `eval`'s arguments joined by spaces, when none expands.
fn joined(words: &[Word]) -> Option<Inner> {
    if words.is_empty() || words.iter().any(Word::expands) {
        return None;
    }
    let texts: Vec<&str> = words.iter().map(Word::text).collect();
    Some(Inner::Source(texts.join(" ")))
}

/// The string after `su`'s `-c` or `--command`.
fn su_command(words: &[Word]) -> Option<Inner> {
    let i = words
        .iter()
        .position(|w| matches!(w.text(), "-c" | "--command") || w.text().starts_with("--command="))?;
    let word = &words[i];
    if let Some(inline) = word.text().strip_prefix("--command=") {
        return (!word.expands()).then(|| Inner::Source(inline.to_string()));
    }
    let string = words.get(i + 1).filter(|w| !w.expands())?;
    Some(Inner::Source(string.text().to_string()))
}

/// The commands of `find`'s `-exec`, `-execdir`, `-ok` and `-okdir` (up to `;` or `+`); `None`
/// when there are none (then `find` is no wrapper).
fn find_exec(words: &[Word]) -> Option<Vec<Inner>> {
    let mut inners = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let starts = matches!(words[i].text(), "-exec" | "-execdir" | "-ok" | "-okdir");
        i += 1;
        if starts {
            let end = words[i..]
                .iter()
                .position(|w| matches!(w.text(), ";" | "+"))
                .map_or(words.len(), |n| i + n);
            if end > i {
                inners.push(Inner::Words(words[i..end].to_vec()));
            }
            i = end + 1;
        }
    }
    (!inners.is_empty()).then_some(inners)
}
