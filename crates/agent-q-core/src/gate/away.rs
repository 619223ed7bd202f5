//! What the hook answers when Emacs cannot be asked, and how long it may wait.
//!
//! The choice is the user's, written into the hook's command by the connect command
//! (`--unreachable ask|deny`): [`Unreachable::Ask`] leaves the call to the agent's own prompt,
//! [`Unreachable::Deny`] refuses it. Codex's `PreToolUse` cannot make Codex ask: "leaving it to
//! Codex" only asks where Codex's own approval policy asks. So for Codex, [`Unreachable::Ask`]
//! denies unless that policy is known to ask ([`CodexApproval::asks`]), read from what the
//! hook can learn ([`codex_approval`]): the hook input's `permission_mode` (Codex sends
//! `bypassPermissions` exactly under `approval_policy = "never"`, else `default`), Codex's
//! command line (`-a`/`--ask-for-approval`, `--full-auto`, `--yolo`,
//! `--dangerously-bypass-approvals-and-sandbox`, `-c approval_policy=…`, `-p`/`--profile`) and
//! its configuration files (managed, project, user; a profile's `approval_policy` over the
//! file's). When in doubt, deny, saying why.

use super::{Agent, GateAnswer, HookEvent};

/// What to answer when Emacs cannot be asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Unreachable {
    /// The agent's own prompt (Codex: only where its approval policy asks, else deny).
    #[default]
    Ask,
    /// Deny, saying why.
    Deny,
}

impl std::str::FromStr for Unreachable {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "ask" => Ok(Unreachable::Ask),
            "deny" => Ok(Unreachable::Deny),
            other => Err(format!("unknown --unreachable {other:?}: expected ask or deny")),
        }
    }
}

/// Codex's effective approval policy, as far as the hook can tell, and where it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodexApproval {
    /// The policy's name (`never`, `on-request`, `on-failure`, `untrusted`, `granular`), or
    /// `None` when it could not be told.
    pub policy: Option<String>,
    /// Where it was read, for the user ("the hook input's permission_mode", "Codex's -a
    /// flag", "~/.codex/config.toml"...).
    pub source: String,
}

impl CodexApproval {
    /// Whether Codex itself asks before running a command under this policy: only
    /// `untrusted` asks for every command it does not know to be safe. `on-request` and
    /// `on-failure` run what fits the sandbox unasked, `never` runs everything, `granular`
    /// depends on its table; an unknown policy is a doubt.
    pub fn asks(&self) -> bool {
        self.policy.as_deref() == Some("untrusted")
    }
}

/// One configuration file of Codex's, by its name for the user and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodexConfig {
    /// How the user knows it (its path).
    pub name: String,
    /// Its TOML text.
    pub text: String,
}

/// Codex's effective approval policy from PERMISSION_MODE (the hook input's), ARGV (Codex's
/// command line, program first; `None` when it could not be read) and CONFIGS (its
/// configuration files, the one that wins first: managed, the project's nearest first, the
/// user's).
pub fn codex_approval(
    permission_mode: Option<&str>,
    argv: Option<&[String]>,
    configs: &[CodexConfig],
) -> CodexApproval {
    let found = |policy: &str, source: String| CodexApproval {
        policy: Some(policy.to_string()),
        source,
    };
    match permission_mode {
        Some("bypassPermissions") => {
            return found(
                "never",
                "the hook input's permission_mode bypassPermissions (Codex sends it under approval_policy \"never\")"
                    .into(),
            )
        }
        Some("default") => {}
        other => {
            return CodexApproval {
                policy: None,
                source: format!("the hook input's permission_mode {other:?}, which agent-q does not know"),
            }
        }
    }
    let Some(argv) = argv else {
        return CodexApproval {
            policy: None,
            source: "Codex's command line, which agent-q could not read".into(),
        };
    };
    let flags = codex_flags(argv);
    if let Some(policy) = flags.policy {
        return found(&policy, format!("Codex's command line ({})", flags.flag));
    }
    for config in configs {
        let profile = flags
            .profile
            .clone()
            .or_else(|| toml_string(&config.text, None, "profile"));
        let from_profile = profile
            .as_deref()
            .and_then(|p| toml_value(&config.text, Some(&format!("profiles.{p}")), "approval_policy"));
        let value = from_profile.or_else(|| toml_value(&config.text, None, "approval_policy"));
        if let Some(value) = value {
            let policy = match unquote(&value) {
                Some(name) => name,
                None if value.starts_with('{') => "granular".into(),
                None => {
                    return CodexApproval {
                        policy: None,
                        source: format!(
                            "approval_policy = {value} in {}, which agent-q cannot read",
                            config.name
                        ),
                    }
                }
            };
            return found(&policy, format!("approval_policy in {}", config.name));
        }
    }
    // Codex's default when nothing sets it: on-request.
    found("on-request", "Codex's default (no approval_policy set)".into())
}

/// The approval policy and profile of Codex's command line ARGV.
struct Flags {
    policy: Option<String>,
    flag: String,
    profile: Option<String>,
}

fn codex_flags(argv: &[String]) -> Flags {
    let mut flags = Flags {
        policy: None,
        flag: String::new(),
        profile: None,
    };
    let set = |flags: &mut Flags, policy: &str, flag: &str| {
        // The last one given wins, as with Codex's own parser.
        flags.policy = Some(policy.to_string());
        flags.flag = flag.to_string();
    };
    let mut words = argv.iter().skip(1).map(String::as_str);
    while let Some(word) = words.next() {
        if word == "--" {
            break;
        }
        let (name, inline) = match word.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (word, None),
        };
        let mut value = |inline: Option<String>| inline.or_else(|| words.next().map(str::to_string));
        match name {
            "--dangerously-bypass-approvals-and-sandbox" | "--yolo" => set(&mut flags, "never", name),
            "--full-auto" => set(&mut flags, "on-request", name),
            "-a" | "--ask-for-approval" => {
                if let Some(policy) = value(inline) {
                    set(&mut flags, &policy, &format!("{name} {policy}"));
                }
            }
            "-p" | "--profile" => flags.profile = value(inline),
            "-c" | "--config" => {
                if let Some(setting) = value(inline) {
                    if let Some((key, v)) = setting.split_once('=') {
                        let v = v.trim();
                        match key.trim() {
                            "approval_policy" => {
                                let policy = unquote(v).unwrap_or_else(|| {
                                    if v.starts_with('{') {
                                        "granular".into()
                                    } else {
                                        v.to_string()
                                    }
                                });
                                set(&mut flags, &policy, &format!("-c {setting}"));
                            }
                            "profile" => flags.profile = Some(unquote(v).unwrap_or_else(|| v.to_string())),
                            _ => {}
                        }
                    }
                }
            }
            _ if word.starts_with("-a") && word.len() > 2 && !word.starts_with("--") => {
                set(&mut flags, &word[2..], word);
            }
            _ => {}
        }
    }
    flags
}

/// The string value of KEY in TABLE (`None`: the top level) of the TOML TEXT.
fn toml_string(text: &str, table: Option<&str>, key: &str) -> Option<String> {
    toml_value(text, table, key).and_then(|v| unquote(&v))
}

/// The raw value of KEY in TABLE (`None`: the top level) of the TOML TEXT, its comment cut:
/// a line reader for the few keys the hook needs, not a TOML parser. `[a.b]` and
/// `[a."b"]` name the same table.
fn toml_value(text: &str, table: Option<&str>, key: &str) -> Option<String> {
    let mut current: Option<String> = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(header) = line.strip_prefix('[') {
            let header = header.split(']').next().unwrap_or_default();
            let name: String = header
                .split('.')
                .map(|part| part.trim().trim_matches('"').trim_matches('\''))
                .collect::<Vec<_>>()
                .join(".");
            current = Some(name);
            continue;
        }
        if current.as_deref() != table {
            continue;
        }
        if let Some((k, v)) = line.split_once('=') {
            let k = k.trim().trim_matches('"');
            if k == key {
                let v = v.trim();
                let v = if v.starts_with('"') || v.starts_with('\'') {
                    v.to_string()
                } else {
                    v.split('#').next().unwrap_or_default().trim().to_string()
                };
                return Some(v);
            }
        }
    }
    None
}

/// The text of a quoted TOML string VALUE (its trailing comment ignored), or `None`.
fn unquote(value: &str) -> Option<String> {
    let value = value.trim();
    let quote = value.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let rest = &value[1..];
    let end = rest.find(quote)?;
    Some(rest[..end].to_string())
}

/// What the hook tells AGENT about a call of EVENT when Emacs cannot be asked (WHY), as
/// UNREACHABLE says; CODEX is Codex's approval policy (read only for Codex's `PreToolUse`).
pub fn unreachable_answer(
    agent: Agent,
    event: HookEvent,
    unreachable: Unreachable,
    codex: Option<&CodexApproval>,
    why: &str,
) -> GateAnswer {
    const HOW: &str = "To decide it in Emacs, start Emacs with agent-q's gate (M-x agent-q-gate-mode, \
         M-x agent-q-mcp-start); to leave this agent's calls to it alone, run M-x agent-q-gate-disconnect-agent.";
    match unreachable {
        Unreachable::Deny => GateAnswer::Deny {
            reason: format!(
                "agent-q could not ask Emacs about this call ({why}), and denies it when it cannot \
                 (chosen when the hook was connected). {HOW}"
            ),
        },
        Unreachable::Ask if agent == Agent::Codex && event == HookEvent::PreTool => {
            let codex = codex.cloned().unwrap_or(CodexApproval {
                policy: None,
                source: "nothing agent-q could read".into(),
            });
            if codex.asks() {
                GateAnswer::Ask {
                    reason: Some(format!(
                        "agent-q could not ask Emacs ({why}); Codex's approval policy untrusted (from {}) asks",
                        codex.source
                    )),
                }
            } else {
                let policy = match &codex.policy {
                    Some(p) => format!(
                        "approval policy is {p} (from {}), which would run it without asking",
                        codex.source
                    ),
                    None => format!(
                        "approval policy could not be told ({}), so it might run it without asking",
                        codex.source
                    ),
                };
                GateAnswer::Deny {
                    reason: format!(
                        "agent-q could not ask Emacs about this call ({why}), and Codex's {policy}: \
                         agent-q denies it rather than let it run unseen. {HOW}"
                    ),
                }
            }
        }
        Unreachable::Ask => GateAnswer::Ask {
            reason: Some(format!("agent-q could not ask Emacs ({why}); asking here instead")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    fn config(text: &str) -> CodexConfig {
        CodexConfig {
            name: "config.toml".into(),
            text: text.into(),
        }
    }

    fn policy(mode: Option<&str>, words: Option<&[&str]>, configs: &[&str]) -> Option<String> {
        let words = words.map(argv);
        let configs: Vec<CodexConfig> = configs.iter().map(|t| config(t)).collect();
        codex_approval(mode, words.as_deref(), &configs).policy
    }

    #[test]
    fn bypass_permissions_is_never_whatever_else_says() {
        let got = codex_approval(
            Some("bypassPermissions"),
            Some(&argv(&["codex", "-a", "untrusted"])),
            &[],
        );
        assert_eq!(got.policy.as_deref(), Some("never"));
        assert!(!got.asks());
        assert!(got.source.contains("permission_mode"));
    }

    #[test]
    fn unknown_permission_mode_or_unread_command_line_is_a_doubt() {
        assert_eq!(policy(Some("plan"), Some(&["codex"]), &[]), None);
        assert_eq!(policy(None, Some(&["codex"]), &[]), None);
        assert_eq!(
            policy(Some("default"), None, &["approval_policy = \"untrusted\""]),
            None
        );
    }

    #[test]
    fn command_line_flags_win_over_the_files_and_the_last_flag_wins() {
        let untrusted = ["approval_policy = \"untrusted\""];
        assert_eq!(
            policy(Some("default"), Some(&["codex", "-a", "on-request"]), &untrusted).as_deref(),
            Some("on-request")
        );
        assert_eq!(
            policy(Some("default"), Some(&["codex", "--ask-for-approval=untrusted"]), &[]).as_deref(),
            Some("untrusted")
        );
        assert_eq!(
            policy(Some("default"), Some(&["codex", "-auntrusted"]), &[]).as_deref(),
            Some("untrusted")
        );
        assert_eq!(
            policy(Some("default"), Some(&["codex", "--full-auto"]), &untrusted).as_deref(),
            Some("on-request")
        );
        assert_eq!(
            policy(Some("default"), Some(&["codex", "-a", "untrusted", "--yolo"]), &[]).as_deref(),
            Some("never")
        );
        assert_eq!(
            policy(
                Some("default"),
                Some(&["codex", "-c", "approval_policy=\"on-failure\""]),
                &untrusted
            )
            .as_deref(),
            Some("on-failure")
        );
        assert_eq!(
            policy(
                Some("default"),
                Some(&["codex", "-c", "approval_policy={granular={}}"]),
                &untrusted
            )
            .as_deref(),
            Some("granular")
        );
        // After `--`, words are the prompt's.
        assert_eq!(
            policy(Some("default"), Some(&["codex", "--", "-a", "untrusted"]), &untrusted).as_deref(),
            Some("untrusted")
        );
    }

    #[test]
    fn the_files_in_order_a_profile_over_its_file_and_codex_default() {
        let files = ["approval_policy = \"on-request\"\nprofile = \"careful\"\n[profiles.careful]\napproval_policy = \"untrusted\" # asks\n"];
        assert_eq!(
            policy(Some("default"), Some(&["codex"]), &files).as_deref(),
            Some("untrusted")
        );
        assert_eq!(
            policy(Some("default"), Some(&["codex", "-p", "other"]), &files).as_deref(),
            Some("on-request")
        );
        let quoted = ["[profiles.\"x\"]\napproval_policy = 'untrusted'\n"];
        assert_eq!(
            policy(Some("default"), Some(&["codex", "--profile", "x"]), &quoted).as_deref(),
            Some("untrusted")
        );
        // A key inside another table is not the top level's.
        let nested = ["[mcp_servers.x]\napproval_policy = \"untrusted\"\n"];
        assert_eq!(
            policy(Some("default"), Some(&["codex"]), &nested).as_deref(),
            Some("on-request")
        );
        // The first file that sets it wins (managed, project, user).
        assert_eq!(
            policy(
                Some("default"),
                Some(&["codex"]),
                &[
                    "model = \"m\"",
                    "approval_policy = \"on-failure\"",
                    "approval_policy = \"untrusted\""
                ]
            )
            .as_deref(),
            Some("on-failure")
        );
        assert_eq!(
            policy(
                Some("default"),
                Some(&["codex"]),
                &["approval_policy = { granular = { rules = true } }"]
            )
            .as_deref(),
            Some("granular")
        );
        assert_eq!(
            policy(Some("default"), Some(&["codex"]), &[]).as_deref(),
            Some("on-request")
        );
    }

    #[test]
    fn codex_is_left_to_its_prompt_only_where_it_asks() {
        let asks = CodexApproval {
            policy: Some("untrusted".into()),
            source: "x".into(),
        };
        let silent = CodexApproval {
            policy: Some("never".into()),
            source: "the hook input".into(),
        };
        let doubt = CodexApproval {
            policy: None,
            source: "nothing".into(),
        };
        let answer =
            |u, c: Option<&CodexApproval>| unreachable_answer(Agent::Codex, HookEvent::PreTool, u, c, "no Emacs");
        assert!(matches!(answer(Unreachable::Ask, Some(&asks)), GateAnswer::Ask { .. }));
        for policy in [Some(&silent), Some(&doubt), None] {
            let GateAnswer::Deny { reason } = answer(Unreachable::Ask, policy) else {
                panic!("not a deny for {policy:?}");
            };
            assert!(reason.contains("no Emacs"), "{reason}");
            assert!(reason.contains("agent-q-gate-mode"), "{reason}");
            assert!(reason.contains("agent-q-gate-disconnect-agent"), "{reason}");
        }
        let GateAnswer::Deny { reason } = answer(Unreachable::Ask, Some(&silent)) else {
            panic!()
        };
        assert!(
            reason.contains("approval policy is never (from the hook input)"),
            "{reason}"
        );
        assert!(matches!(
            answer(Unreachable::Deny, Some(&asks)),
            GateAnswer::Deny { .. }
        ));
        // Codex's PermissionRequest fires only where Codex asks: its own prompt.
        assert!(matches!(
            unreachable_answer(Agent::Codex, HookEvent::PermissionRequest, Unreachable::Ask, None, "x"),
            GateAnswer::Ask { .. }
        ));
        for agent in [Agent::Claude, Agent::Gemini] {
            assert!(matches!(
                unreachable_answer(agent, HookEvent::PreTool, Unreachable::Ask, None, "x"),
                GateAnswer::Ask { .. }
            ));
            assert!(matches!(
                unreachable_answer(agent, HookEvent::PreTool, Unreachable::Deny, None, "x"),
                GateAnswer::Deny { .. }
            ));
        }
    }
}
