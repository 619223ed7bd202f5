//! The execution policy: from a tool call to a tool result, as a state machine.
//!
//! A call goes through these stages, each decided here and nowhere else:
//!
//! ```text
//! start ──► validated ──► guard? ──► awaiting approval? ──► running ──► done
//!              │             │               │                 │
//!              └─────────────┴───────────────┴─── failure, denial or cancellation ──► done
//! ```
//!
//! - **validated**: the call is parsed, the tool found, the arguments converted and checked
//!   against the tool's JSON Schema. Nothing reaches a guard, the user or a handler before that.
//! - **guard**: a tool may have a guard, a host function that says, without side effects, whether
//!   these arguments need the user's approval and why (a safe read of a file outside the allowed
//!   directories, say). [`Step::Guard`] asks the host to run it; [`Call::guarded`] resumes.
//! - **awaiting approval**: dangerous tools, the levels in [`Options::confirm`], and calls whose
//!   guard gave a reason wait for a decision: [`Step::Ask`]; [`Call::decide`] resumes. Only an
//!   explicit approval (the user's, one of the user's approval rules, which the host applies
//!   before asking: [`Decision::Rule`], or the user's trust of the agent for a while, which
//!   [`crate::trust`] decides: [`Decision::Trusted`]) lets the call run. Because the user may take any time to decide (and may
//!   change the registry meanwhile), the tool is looked up again when the decision arrives: a tool
//!   that was removed, disabled or replaced (its registration id changed) does not run.
//!   A guard may mark its reason protected ([`GuardAnswer::protected`]: a write to a file that
//!   governs agents or runs code on its own, such as `.claude/settings.json` or `.git/hooks/`).
//!   Such a call is the user's to approve, every time: the host is told ([`Ask::protected`]) so
//!   that neither an approval rule, an approval for the session nor a trust answers for the
//!   user, and a rule's approval or a trust that arrives all the same is refused here
//!   ([`Call::decide`]).
//!   When the user has approval rules ([`Options::consult_rules`]), a call that would run without
//!   asking stops there too, marked optional ([`Ask::optional`]): the host consults the rules,
//!   which may deny it or have the user asked, and otherwise answers [`Decision::Auto`], which
//!   runs it exactly as it would have run without rules (decision `auto` in the audit log).
//! - **running**: [`Step::Run`] hands the handler to the host; [`Call::finish`] takes its
//!   [`HandlerOutcome`] and formats, caps, times, counts and audits the result.
//!
//! [`Call::cancel`] ends a call at any stage before it is done. This is the sans-I/O shape of
//! rustls and h2: the core performs no I/O and never waits. How a decision is awaited (a
//! minibuffer prompt now, a queued prompt later, a review buffer, an MCP client's cancellation)
//! is the drivers' business: [`execute_call`] is the synchronous driver (used for
//! `agent-q-execute-tool-calls`), and the binding exposes the same steps to Lisp for the
//! asynchronous one.
//!
//! Nothing escapes: every failure becomes a [`ToolResult`] with `success` false, and the lock on
//! the registry is never held while the host runs (the host may re-enter the executor).

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use serde::Serialize;
use serde_json::{Map, Value as Json};

use crate::limits;
use crate::native::{self, Tool};
use crate::registry::{CallOutcome, Registry, ToolEntry};
use crate::sexp::{self, Sexp};
use crate::spec::SafetyLevel;

/// What runs a tool: a host-language (Lisp) function, or a native Rust tool.
pub enum Handler<L> {
    /// Functions the host knows how to call.
    Lisp(LispTool<L>),
    /// A tool written in Rust, run on the async runtime with its timeout.
    Native(Arc<dyn Tool>),
}

/// A tool implemented in the host language, and how the executor treats it.
#[derive(Debug, Clone)]
pub struct LispTool<L> {
    /// The handler, called with the arguments.
    pub run: L,
    /// The guard, if any: says whether given arguments need approval, and why.
    pub guard: Option<L>,
    /// Whether the handler answers through a callback rather than by returning.
    pub asynchronous: bool,
}

impl<L: Clone> Clone for Handler<L> {
    fn clone(&self) -> Self {
        match self {
            Handler::Lisp(l) => Handler::Lisp(l.clone()),
            Handler::Native(t) => Handler::Native(t.clone()),
        }
    }
}

impl<L> std::fmt::Debug for Handler<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Handler::Lisp(_) => f.write_str("Handler::Lisp"),
            Handler::Native(t) => write!(f, "Handler::Native({})", t.spec().name),
        }
    }
}

/// The phases observers are told about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Before the handler runs.
    Before,
    /// After it succeeded.
    After,
    /// After it failed, or was denied or cancelled.
    Error,
}

impl Phase {
    /// The phase's keyword name.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Before => "before",
            Phase::After => "after",
            Phase::Error => "error",
        }
    }
}

/// What the executor tells its environment as a call proceeds: the audit log and observers.
pub trait Effects {
    /// Record an audit event.
    fn audit(&mut self, record: &AuditRecord);

    /// Tell the observers. Only called when [`Options::hooks`] is set.
    fn observe(&mut self, phase: Phase, tool: &str, args: &Map<String, Json>, result: Option<&ToolResult>);
}

/// Limits and switches for one batch of calls.
#[derive(Debug, Clone)]
pub struct Options {
    /// Cap on a result's content, in characters; 0 for none.
    pub max_result_chars: usize,
    /// Cap on a call's arguments given as JSON text, in bytes.
    pub max_argument_bytes: usize,
    /// Whether any observer is installed.
    pub hooks: bool,
    /// Levels besides dangerous whose calls the user confirms (dangerous always is).
    pub confirm: Vec<SafetyLevel>,
    /// Audit every call, safe ones included (calls from an external client such as MCP).
    pub audit_all: bool,
    /// Whether the user has approval rules: a call that needs no decision then stops at an
    /// optional [`Step::Ask`] all the same, so that a deny or ask rule applies to it too. Without
    /// rules, such calls run at once.
    pub consult_rules: bool,
    /// Whether the handlers of the tools whose review is their approval
    /// ([`crate::spec::Approval`]) are still what they were when registered (the binding checks
    /// the definitions of named handlers); when not, their calls are asked about as any other.
    pub review_intact: bool,
}

impl Options {
    /// Whether a call at LEVEL needs the user's approval: always for dangerous tools.
    pub fn needs_approval(&self, level: SafetyLevel) -> bool {
        level == SafetyLevel::Dangerous || self.confirm.contains(&level)
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_result_chars: 20_000,
            max_argument_bytes: limits::DEFAULT_MAX_ARGUMENT_BYTES,
            hooks: false,
            confirm: Vec::new(),
            audit_all: false,
            consult_rules: false,
            review_intact: true,
        }
    }
}

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// The tool ran and did its job.
    Success,
    /// It did not: invalid call, tool error, timeout, or a tool that reported failure.
    Failure,
    /// The user (or the approval function, or its absence) did not allow it.
    Denied,
    /// It was withdrawn before it ran (the user, or the client, cancelled it).
    Cancelled,
}

/// The outcome of one call, as the model will see it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The call's id.
    pub id: Option<String>,
    /// Whether the tool ran and succeeded.
    pub success: bool,
    /// How the call ended (`success` is `status == Success`).
    pub status: Status,
    /// The text for the model (the error message on failure).
    pub content: String,
    /// Handler time in milliseconds.
    pub execution_time_ms: f64,
    /// The tool's safety level, when the tool is known.
    pub safety_level: Option<SafetyLevel>,
    /// Whether the call was allowed to run (and was not refused by the user afterwards).
    pub approved: bool,
    /// Whether the user modified the arguments.
    pub modified: bool,
}

impl ToolResult {
    /// A failure with MESSAGE.
    pub fn failure(id: Option<String>, message: impl Into<String>) -> Self {
        ToolResult {
            id,
            success: false,
            status: Status::Failure,
            content: message.into(),
            execution_time_ms: 0.0,
            safety_level: None,
            approved: false,
            modified: false,
        }
    }
}

/// What a handler's review decided, hunk by hunk: the hunks' numbers, from 1.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReviewOutcome {
    /// The hunks accepted as proposed.
    pub accepted: Vec<u32>,
    /// The hunks accepted with the user's edits.
    pub edited: Vec<u32>,
    /// The hunks rejected (or left undecided, which applies nothing).
    pub rejected: Vec<u32>,
}

/// The most hunk numbers a review outcome keeps in each list.
pub const MAX_REVIEW_HUNKS: usize = 10_000;

impl ReviewOutcome {
    /// NUMBERS as words: "1, 3 and 4".
    fn phrase(numbers: &[u32]) -> String {
        let shown: Vec<String> = numbers.iter().take(20).map(u32::to_string).collect();
        let mut text = match shown.len() {
            0 => String::new(),
            1 => shown[0].clone(),
            n => format!("{} and {}", shown[..n - 1].join(", "), shown[n - 1]),
        };
        if numbers.len() > shown.len() {
            text.push_str(&format!(" (and {} more)", numbers.len() - shown.len()));
        }
        text
    }

    /// The outcome in words: "hunks 1 and 3 accepted, 2 rejected".
    pub fn words(&self) -> String {
        let total = self.accepted.len() + self.edited.len() + self.rejected.len();
        let mut parts = Vec::new();
        for (numbers, what) in [
            (&self.accepted, "accepted"),
            (&self.edited, "accepted with the user's edits"),
            (&self.rejected, "rejected"),
        ] {
            if !numbers.is_empty() {
                parts.push(format!("{} {what}", Self::phrase(numbers)));
            }
        }
        if parts.is_empty() {
            return "no hunk to review".into();
        }
        format!(
            "{} of {total}: {}",
            if total == 1 { "hunk" } else { "hunks" },
            parts.join(", ")
        )
    }
}

/// One line of the audit log.
#[derive(Debug, Clone, Serialize)]
pub struct AuditRecord {
    /// When, ISO 8601 UTC.
    pub time: String,
    /// `run` (about to run), `result` (finished), `denied` or `cancelled` (did not run, or the
    /// user refused what it proposed).
    pub event: &'static str,
    /// The call's id.
    pub id: Option<String>,
    /// The client the call came from, when it came through a bridge or MCP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// The tool.
    pub tool: String,
    /// Its safety level; absent when no such tool exists (a client called an unknown tool).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub safety_level: Option<SafetyLevel>,
    /// `auto` (not asked), `approved`, `modified` (the user at the prompt), `granted` (the
    /// user's earlier "always" answer for the session), `trusted` (the user trusts the agent for
    /// a while: see `trusted`), `review` (its own review decides: see
    /// `review`), `denied`, `rule` (one of the user's approval rules allowed or denied it: see
    /// `rule`), or `none` (withdrawn before a decision: see `withdrawn`).
    pub decision: &'static str,
    /// The approval rule that decided, when `decision` is `rule`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The trust that let the call through unasked, when `decision` is `trusted`: "trusted
    /// until …: AGENT's SCOPE" (see [`crate::trust`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trusted: Option<String>,
    /// Who decided and how, in words: the user at the prompt, a grant for the session, a rule
    /// (which), the review (which hunks), a withdrawal (why), or no decision needed.
    pub how: String,
    /// What the handler's review decided, hunk by hunk, when it reported it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewOutcome>,
    /// Why the call was withdrawn (by the user, the client or the agent), when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub withdrawn: Option<String>,
    /// Why approval was needed, when a guard said so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The arguments, long strings shortened.
    pub arguments: Json,
    /// For `result`: whether it succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub success: Option<bool>,
    /// For `result` and later events: how it ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    /// For `result`, `denied` and `cancelled`: the start of the content.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// For `result`: handler time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution_time_ms: Option<f64>,
}

impl AuditRecord {
    /// The record as one line of JSON, hidden characters (bidi, zero-width, controls) escaped:
    /// see [`crate::visible`].
    pub fn to_json_line(&self) -> String {
        crate::visible::to_json_line(self)
            .unwrap_or_else(|e| format!("{{\"error\":\"cannot serialize audit record: {e}\"}}"))
    }

    /// The record as one line a person scans: the tool, what it was about (its file, command or
    /// URL), how it ended, who decided and how, and the client. Hidden characters are made
    /// visible; the whole record is the JSON line.
    pub fn summary(&self) -> String {
        let about = ["path", "file", "command", "url", "title", "name"]
            .iter()
            .find_map(|k| self.arguments.get(k).and_then(Json::as_str))
            .map(|a| format!(" {}", shorten(a.replace('\n', " "), 80)))
            .unwrap_or_default();
        let outcome = match (self.event, self.status) {
            ("run", _) => "running",
            (_, Some(Status::Success)) => "done",
            (_, Some(Status::Failure)) => "failed",
            (_, Some(Status::Denied)) => "denied",
            (_, Some(Status::Cancelled)) => "withdrawn",
            (_, None) => self.event,
        };
        let client = self
            .client
            .as_deref()
            .map(|c| format!(" (from {})", shorten(c.to_string(), 60)))
            .unwrap_or_default();
        crate::visible::visible(&format!("{}{about}: {outcome}; {}{client}", self.tool, self.how))
    }
}

/// What an approval function's answer means.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// `:approved`.
    Approved,
    /// `:denied` or `(:denied REASON)`.
    Denied(Option<String>),
    /// `(:modified NEW-ARGS)`.
    Modified(Sexp),
    /// `(:rule :approved RULE)` or `(:rule :denied RULE)`: one of the user's standing approval
    /// rules decided, without a prompt. RULE describes it, for the audit log and the model.
    Rule {
        /// Whether the rule allows the call.
        allow: bool,
        /// The rule, as text.
        rule: String,
    },
    /// `(:granted GRANT)`: the user's standing approval for the session (the prompt's "always"
    /// answer given earlier) allows it, without a prompt. GRANT describes it, for the audit log.
    Granted(String),
    /// `(:trusted TRUST)`: the user trusts the agent for a while ([`crate::trust`]) and the
    /// trust covers the call; TRUST says which, "trusted until …", for the audit log.
    Trusted(String),
    /// `:auto`: for an optional ask ([`Ask::optional`]) only, run the call as it would have run
    /// without rules (no rule stops it). For a call that needs a decision it is not one, so a
    /// denial.
    Auto,
    /// Anything else: not a decision, so a denial, with the explanation.
    Invalid(String),
}

/// Why asking for approval produced no decision. A driver that asks outside the executor hands
/// it over as a decision: `(:quit)` or `(:error MESSAGE)` (see [`parse_decision`]).
#[derive(Debug, Clone, PartialEq)]
pub enum ApprovalFailure {
    /// The user quit (`C-g`) while being asked.
    Quit,
    /// The approval function signalled, with this message.
    Signalled(String),
}

impl From<ApprovalFailure> for Decision {
    fn from(f: ApprovalFailure) -> Decision {
        match f {
            ApprovalFailure::Quit => Decision::Invalid("the user quit (C-g) while being asked".into()),
            ApprovalFailure::Signalled(msg) => Decision::Invalid(format!("the approval function failed: {msg}")),
        }
    }
}

/// The longest description of an approval rule kept in a decision (the audit log repeats it).
const MAX_RULE_CHARS: usize = 500;

/// Read an approval function's answer. Only `:approved`, `(:modified ARGS)` and `(:rule :approved RULE)`
/// allow a run.
///
/// A driver that asked and got no answer says what happened instead: `(:quit)` (the user quit
/// while being asked) or `(:error MESSAGE)` (the approval function signalled MESSAGE). Both deny
/// the call, worded here ([`ApprovalFailure`]), whichever driver asked.
///
/// Keywords are told apart from look-alikes by the binding: an uninterned symbol named
/// `:approved` never becomes a [`Sexp::Keyword`].
pub fn parse_decision(v: &Sexp) -> Decision {
    match v.as_keyword() {
        Some("approved") => return Decision::Approved,
        Some("denied") => return Decision::Denied(None),
        Some("auto") => return Decision::Auto,
        Some("no-approval-function") => {
            return Decision::Invalid("no approval function is set (agent-q-approval-function is nil)".into())
        }
        _ => {}
    }
    match v.list_items() {
        Some([head]) if head.as_keyword() == Some("quit") => ApprovalFailure::Quit.into(),
        Some([head, message]) if head.as_keyword() == Some("error") => ApprovalFailure::Signalled(match message {
            Sexp::Str(m) => shorten(m.clone(), MAX_RULE_CHARS),
            other => sexp::describe(other),
        })
        .into(),
        Some([head]) if head.as_keyword() == Some("denied") => Decision::Denied(None),
        Some([head, reason]) if head.as_keyword() == Some("denied") => match reason {
            Sexp::Str(r) if !r.trim().is_empty() => Decision::Denied(Some(r.clone())),
            Sexp::Str(_) | Sexp::Nil => Decision::Denied(None),
            other => Decision::Denied(Some(sexp::describe(other))),
        },
        Some([head, args]) if head.as_keyword() == Some("modified") => Decision::Modified(args.clone()),
        Some([head, trust]) if head.as_keyword() == Some("trusted") => match trust {
            Sexp::Str(t) if !t.trim().is_empty() => Decision::Trusted(shorten(t.clone(), MAX_RULE_CHARS)),
            _ => Decision::Invalid("the approval function returned a trust that names no trust".into()),
        },
        Some([head, grant]) if head.as_keyword() == Some("granted") => match grant {
            Sexp::Str(g) if !g.trim().is_empty() => Decision::Granted(shorten(g.clone(), MAX_RULE_CHARS)),
            _ => Decision::Invalid("the approval function returned a grant that names no grant".into()),
        },
        Some([head, verdict, rule]) if head.as_keyword() == Some("rule") => {
            let allow = match verdict.as_keyword() {
                Some("approved") => true,
                Some("denied") => false,
                _ => {
                    return Decision::Invalid(format!(
                        "the approval function returned a rule decision {}, which is neither :approved nor :denied",
                        sexp::describe(verdict)
                    ))
                }
            };
            match rule {
                Sexp::Str(r) if !r.trim().is_empty() => Decision::Rule {
                    allow,
                    rule: shorten(r.clone(), MAX_RULE_CHARS),
                },
                // A rule decision that cannot say which rule decided is not one.
                _ => Decision::Invalid("the approval function returned a rule decision that names no rule".into()),
            }
        }
        _ => Decision::Invalid(format!(
            "the approval function returned {}, which is not a decision",
            sexp::describe(v)
        )),
    }
}

/// The content of a denied call.
pub fn denial_message(decision: &Decision) -> String {
    match decision {
        Decision::Denied(None) => "User denied tool execution".into(),
        Decision::Denied(Some(reason)) => format!("User denied tool execution: {reason}"),
        Decision::Invalid(why) => format!("Tool execution denied: {why}"),
        Decision::Rule { allow: false, rule } => format!("Tool execution denied by the user's approval rule: {rule}"),
        Decision::Auto => {
            "Tool execution denied: the approval function answered :auto, which only a call that needs no decision may take".into()
        }
        Decision::Approved
        | Decision::Modified(_)
        | Decision::Granted(_)
        | Decision::Trusted(_)
        | Decision::Rule { allow: true, .. } => String::new(),
    }
}

/// Cut CONTENT to MAX characters (0: no cap), saying how much was cut.
pub fn truncate(content: String, max: usize) -> String {
    if max == 0 {
        return content;
    }
    let Some((cut_at, _)) = content.char_indices().nth(max) else {
        return content;
    };
    let total = content.chars().count();
    let mut out = content[..cut_at].to_string();
    out.push_str(&format!(
        "\n[... truncated: {} of {} characters cut (agent-q-max-result-chars is {}); ask for a smaller part ...]",
        total - max,
        total,
        max
    ));
    out
}

fn field_path(pointer: &str) -> String {
    let mut out = String::new();
    for seg in pointer.split('/').filter(|s| !s.is_empty()) {
        if seg.chars().all(|c| c.is_ascii_digit()) {
            out.push_str(&format!("[{seg}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&seg.replace("~1", "/").replace("~0", "~"));
        }
    }
    out
}

fn shorten(s: String, max: usize) -> String {
    if s.chars().count() <= max {
        s
    } else {
        s.chars().take(max).collect::<String>() + "..."
    }
}

/// A short description of a JSON value for a message: its kind, and its text when short.
/// Bounded: a huge value is never printed whole.
fn brief(v: &Json) -> String {
    match v {
        Json::Null => "null".into(),
        Json::Bool(_) => "a boolean".into(),
        Json::Number(n) => format!("the number {n}"),
        Json::String(s) => format!("the string {}", shorten(format!("{s:?}"), 60)),
        Json::Array(a) => format!("an array of {} element(s)", a.len()),
        Json::Object(o) => format!("an object with {} key(s)", o.len()),
    }
}

/// Validate ARGS against VALIDATOR: `Err("Invalid arguments for NAME: field 'X': REASON")`.
pub fn validate_arguments(name: &str, validator: &jsonschema::Validator, args: &Json) -> Result<(), String> {
    use jsonschema::error::{TypeKind, ValidationErrorKind as K};
    // The boolean check allocates no error machinery: the usual, valid case stays cheap.
    if validator.is_valid(args) {
        return Ok(());
    }
    let Some(err) = validator.iter_errors(args).next() else {
        return Ok(());
    };
    let path = field_path(err.instance_path().as_str());
    let instance = err.instance().as_ref();
    let (field, reason) = match err.kind() {
        K::Required { property } => {
            let prop = property
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| property.to_string());
            let field = if path.is_empty() {
                prop
            } else {
                format!("{path}.{prop}")
            };
            (field, "required field is missing".to_string())
        }
        K::AdditionalProperties { unexpected } => {
            let extra = unexpected.first().cloned().unwrap_or_default();
            let field = if path.is_empty() {
                extra
            } else {
                format!("{path}.{extra}")
            };
            (field, "unknown parameter".to_string())
        }
        K::Type { kind } => {
            let expected = match kind {
                TypeKind::Single(t) => format!("\"{t}\""),
                TypeKind::Multiple(set) => set.iter().map(|t| format!("\"{t}\"")).collect::<Vec<_>>().join(" or "),
            };
            (path, format!("expected type {expected}, got {}", brief(instance)))
        }
        K::Enum { options } => (
            path,
            format!(
                "{} is not one of the allowed values {}",
                brief(instance),
                shorten(options.to_string(), 200)
            ),
        ),
        // jsonschema's own message starts with the whole instance: use it only for small ones.
        _ if matches!(instance, Json::Array(_) | Json::Object(_) | Json::String(_))
            && serde_json::to_string(instance).map_or(true, |s| s.len() > 200) =>
        {
            (
                path,
                format!(
                    "{} does not satisfy the schema's '{}' rule",
                    brief(instance),
                    err.kind().keyword()
                ),
            )
        }
        _ => (path, shorten(err.to_string(), 300)),
    };
    let field = if field.is_empty() {
        "(arguments)".to_string()
    } else {
        field
    };
    Err(format!("Invalid arguments for {name}: field '{field}': {reason}"))
}

/// The most undeclared argument names one message lists.
const MAX_UNDECLARED_LISTED: usize = 10;

/// The keys of ARGS that SCHEMA does not declare, when SCHEMA refuses undeclared ones (its
/// `additionalProperties` is `false`, as for every tool whose parameters are a list of parameter
/// plists: the built-in tools): an error naming them, and the parameters the tool takes.
///
/// Nothing outside a tool's declared parameters may reach the prompt, an approval rule, a
/// suggested rule or the handler: an undeclared `"dir"` placed before `"path"` must not pass
/// for the file a call is about.
pub fn undeclared_arguments(name: &str, schema: &Json, args: &Map<String, Json>) -> Result<(), String> {
    if schema.get("additionalProperties") != Some(&Json::Bool(false)) {
        return Ok(());
    }
    let declared = schema.get("properties").and_then(Json::as_object);
    let undeclared: Vec<&String> = args
        .keys()
        .filter(|k| !declared.is_some_and(|d| d.contains_key(k.as_str())))
        .collect();
    if undeclared.is_empty() {
        return Ok(());
    }
    let mut listed: Vec<String> = undeclared
        .iter()
        .take(MAX_UNDECLARED_LISTED)
        .map(|k| shorten(format!("{k:?}"), 60))
        .collect();
    if undeclared.len() > MAX_UNDECLARED_LISTED {
        listed.push(format!("and {} more", undeclared.len() - MAX_UNDECLARED_LISTED));
    }
    let takes = match declared {
        Some(d) if !d.is_empty() => d.keys().map(String::as_str).collect::<Vec<_>>().join(", "),
        _ => "no arguments".to_string(),
    };
    Err(format!(
        "Invalid arguments for {name}: undeclared argument{} {}; {name} takes only {takes}. Nothing ran.",
        if undeclared.len() == 1 { "" } else { "s" },
        listed.join(", ")
    ))
}

/// Check ARGS for tool NAME: no undeclared argument ([`undeclared_arguments`]), then the
/// schema ([`validate_arguments`]).
pub fn check_arguments(
    name: &str,
    schema: &Json,
    validator: &jsonschema::Validator,
    args: &Map<String, Json>,
) -> Result<(), String> {
    undeclared_arguments(name, schema, args)?;
    validate_arguments(name, validator, &Json::Object(args.clone()))
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere must not make the registry unusable for the rest of the session.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Shorten long strings in ARGS for the audit log and messages.
pub fn audit_arguments(args: &Map<String, Json>) -> Json {
    fn walk(v: &Json) -> Json {
        match v {
            Json::String(s) if s.chars().count() > 500 => Json::String(format!(
                "{}... [{} characters in all]",
                s.chars().take(500).collect::<String>(),
                s.chars().count()
            )),
            Json::Array(a) if a.len() > 50 => Json::String(format!("[an array of {} elements]", a.len())),
            Json::Array(a) => Json::Array(a.iter().map(walk).collect()),
            Json::Object(o) => Json::Object(o.iter().map(|(k, v)| (k.clone(), walk(v))).collect()),
            other => other.clone(),
        }
    }
    walk(&Json::Object(args.clone()))
}

/// Convert a call's `:arguments` (a plist, a JSON object string, or absent) to a JSON object.
pub fn arguments_to_json(raw: Option<&Sexp>, schema: &Json, max_bytes: usize) -> Result<Map<String, Json>, String> {
    let json = match raw {
        None | Some(Sexp::Nil) => Json::Object(Map::new()),
        Some(Sexp::Str(text)) if text.trim().is_empty() => Json::Object(Map::new()),
        Some(Sexp::Str(text)) => sexp::parse_json(text, max_bytes).map_err(|e| e.to_string())?,
        Some(v) => sexp::to_json(v, Some(schema)).map_err(|e| e.to_string())?,
    };
    match json {
        Json::Object(map) => Ok(map),
        other => Err(format!(
            "arguments must be an object (a plist or a JSON object), got {}",
            brief(&other)
        )),
    }
}

/// A call's arguments as its driver has them.
#[derive(Debug)]
pub enum CallArguments<'a> {
    /// As the host wrote them: a plist, a JSON object string, or nil.
    Sexp(&'a Sexp),
    /// Parsed JSON already, as an MCP client sent them: taken as they are, never printed and
    /// parsed again.
    Json(Map<String, Json>),
}

/// Convert a call's arguments to a JSON object: those the host wrote as [`arguments_to_json`]
/// does; parsed JSON as it is, once it is within the limits of MAX_BYTES, the depth and the
/// number of values ([`limits::check_argument_limits`], as the MCP server checks them).
pub fn call_arguments_to_json(
    raw: Option<CallArguments<'_>>,
    schema: &Json,
    max_bytes: usize,
) -> Result<Map<String, Json>, String> {
    match raw {
        Some(CallArguments::Json(map)) => limits::check_argument_limits(&map, max_bytes)
            .map(|()| map)
            .map_err(|problem| format!("they {problem}")),
        Some(CallArguments::Sexp(v)) => arguments_to_json(Some(v), schema, max_bytes),
        None => arguments_to_json(None, schema, max_bytes),
    }
}

/// The parts of a tool call plist `(:id ID :name NAME :arguments ARGS [:client CLIENT])`.
#[derive(Debug)]
pub struct ToolCall<'a> {
    /// The id, which the result repeats.
    pub id: Option<String>,
    /// The tool's name.
    pub name: String,
    /// The raw arguments.
    pub arguments: Option<CallArguments<'a>>,
    /// The client the call comes from, when the call says.
    pub client: Option<String>,
}

/// The longest `:id` and `:client` of a call, in bytes. Both are echoed in the result, the
/// prompt, the log buffer and twice in the audit file: a model could otherwise write megabytes
/// there with each call.
pub const MAX_CALL_LABEL_BYTES: usize = 1024;

/// Read a tool call; on failure, the id (when readable) and a message naming the problem.
pub fn parse_call(v: &Sexp) -> Result<ToolCall<'_>, (Option<String>, String)> {
    if v.plist_pairs().is_none() {
        return Err((
            None,
            format!(
                "Invalid tool call: expected a plist (:id ID :name NAME :arguments ARGS), got {}",
                sexp::describe(v)
            ),
        ));
    }
    let id = match v.plist_get("id") {
        Some(Sexp::Str(s)) => Some(s.clone()),
        Some(x @ (Sexp::Int(_) | Sexp::Float(_) | Sexp::Symbol(_) | Sexp::Keyword(_))) => Some(sexp::describe(x)),
        _ => return Err((None, "Invalid tool call: missing :id".to_string())),
    };
    let name = match v.plist_get("name") {
        Some(Sexp::Str(s)) | Some(Sexp::Symbol(s)) => Some(s.clone()),
        _ => None,
    };
    let client = v.plist_get("client").and_then(Sexp::as_str).map(str::to_string);
    ToolCall::new(id, name, v.plist_get("arguments").map(CallArguments::Sexp), client)
}

impl<'a> ToolCall<'a> {
    /// A call from its parts, as a driver read them: the checks of [`parse_call`] on them (an
    /// id and a client short enough to echo, a non-empty name). On failure, the id when it may
    /// be echoed, and a message naming the problem.
    pub fn new(
        id: Option<String>,
        name: Option<String>,
        arguments: Option<CallArguments<'a>>,
        client: Option<String>,
    ) -> Result<ToolCall<'a>, (Option<String>, String)> {
        if let Some(long) = id.as_ref().filter(|i| i.len() > MAX_CALL_LABEL_BYTES) {
            return Err((
                None,
                format!(
                    "Invalid tool call: its :id is {} bytes long (limit {MAX_CALL_LABEL_BYTES})",
                    long.len()
                ),
            ));
        }
        let Some(name) = name.filter(|n| !n.is_empty()) else {
            return Err((id, "Invalid tool call: missing :name".to_string()));
        };
        if let Some(long) = client.as_ref().filter(|c| c.len() > MAX_CALL_LABEL_BYTES) {
            return Err((
                id,
                format!(
                    "Invalid tool call: its :client is {} bytes long (limit {MAX_CALL_LABEL_BYTES})",
                    long.len()
                ),
            ));
        }
        Ok(ToolCall {
            id,
            name,
            arguments,
            client,
        })
    }
}

/// What a guard says about a call's arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GuardAnswer {
    /// Why the call needs the user's approval; `None` when the guard sees no reason.
    pub reason: Option<String>,
    /// Whether only the user may approve it, every time: no approval rule and no approval for
    /// the session covers it. Implies a reason.
    pub protected: bool,
    /// The file the call will act on, as the guard resolved and pinned it: the name the prompt
    /// shows, so that it shows what runs rather than resolving the argument again.
    pub file: Option<String>,
    /// Whether the reason goes beyond the file's protection (reading a sensitive file to show
    /// it, say): then the user is asked before a review that is the tool's approval, since the
    /// review approves the change, not what showing it reveals.
    pub ask: bool,
}

impl From<Option<String>> for GuardAnswer {
    fn from(reason: Option<String>) -> Self {
        GuardAnswer {
            reason,
            ..GuardAnswer::default()
        }
    }
}

/// Where a call came from, as its driver says: never what the call or its client claims.
///
/// Approval rules and the session's "always" approvals tell an in-Emacs bridge from an MCP
/// client by this, not by names: an MCP client chooses its `clientInfo` freely, so one named
/// `gptel` must not pass for the gptel bridge.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Origin {
    /// Inside Emacs: a bridge (gptel, llm.el) or Lisp code calling the executor.
    #[default]
    Emacs,
    /// An MCP client, through agent-q's MCP server.
    Mcp {
        /// The name the client gave in its `clientInfo`, cleaned by [`Origin::mcp`]: its own
        /// claim, which any client may make.
        name: String,
    },
}

/// The longest MCP client name kept in an [`Origin`], in characters.
pub const MAX_MCP_NAME_CHARS: usize = 100;

impl Origin {
    /// The origin of a call from the MCP client that named itself NAME. Characters that print
    /// as nothing or rewrite the text around them (control, bidirectional, zero-width and
    /// separator characters) are taken out, spaces at either end too, and the name is cut to
    /// [`MAX_MCP_NAME_CHARS`] characters: what a rule or the prompt shows is what matches.
    pub fn mcp(name: &str) -> Origin {
        let cleaned: String = name.chars().filter(|c| !crate::visible::is_hidden(*c)).collect();
        Origin::Mcp {
            name: cleaned.trim().chars().take(MAX_MCP_NAME_CHARS).collect(),
        }
    }

    /// `emacs` or `mcp`, the origin's name for Lisp and the audit log.
    pub fn as_str(&self) -> &'static str {
        match self {
            Origin::Emacs => "emacs",
            Origin::Mcp { .. } => "mcp",
        }
    }

    /// The MCP client's name, for a call from one.
    pub fn mcp_name(&self) -> Option<&str> {
        match self {
            Origin::Emacs => None,
            Origin::Mcp { name } => Some(name),
        }
    }
}

/// Where a batch of calls comes from.
#[derive(Debug, Clone, Default)]
pub struct CallContext {
    /// The client (e.g. "gptel", or an MCP client's "name version"), for the audit log and the
    /// prompt. For calls from Emacs, a call's own `:client` takes precedence; for calls from an
    /// MCP client, only this counts.
    pub client: Option<String>,
    /// Where the calls come from, as the driver says.
    pub origin: Origin,
    /// The channel of calls from an MCP client, as its driver says (the MCP hub's
    /// `session ID` or `request N`); ignored for calls from Emacs. See [`channel_of`].
    pub channel: Option<String>,
}

/// The channel of a call: what it may see of other calls' work (the REPL history, the last
/// error) is what was done on its channel. `None` only for a call of the user's own Lisp (from
/// Emacs, with no client): the user sees every channel's.
///
/// - From an MCP client: `mcp GIVEN`, GIVEN the channel its driver gave (the MCP hub gives each
///   session its own, and each stateless request a fresh one), never the name the client
///   claims; with none given, a fresh `mcp batch N` that no other call has: it sees nothing
///   but its own.
/// - From Emacs with a client (a bridge: gptel, llm): `emacs CLIENT`, the bridge's own channel.
///   Lisp that names a client is the user's code, as trusted as the bridge.
/// - From Emacs without a client: `None`.
pub fn channel_of(origin: &Origin, client: Option<&str>, given: Option<&str>) -> Option<String> {
    static NEXT_BATCH: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    match origin {
        Origin::Mcp { .. } => Some(match given {
            Some(channel) if !channel.is_empty() => format!("mcp {channel}"),
            _ => format!(
                "mcp batch {}",
                NEXT_BATCH.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            ),
        }),
        Origin::Emacs => client.map(|client| format!("emacs {client}")),
    }
}

/// A request for a decision about a call.
#[derive(Debug, Clone, PartialEq)]
pub struct Ask {
    /// The tool's name.
    pub tool: String,
    /// The tool's registration id: decisions such as "always allow" attach to it.
    pub tool_id: u64,
    /// The tool's safety level.
    pub level: SafetyLevel,
    /// Why a guard asks, if it does.
    pub reason: Option<String>,
    /// Whether only the user may approve this call, now ([`GuardAnswer::protected`]): the host
    /// must not let an approval rule or a session approval answer.
    pub protected: bool,
    /// The file the guard resolved and pinned, to be shown as what the call acts on.
    pub file: Option<String>,
    /// Whether the tool's own review is the approval of what it changes.
    pub review: bool,
    /// Whether an allow rule that covers the call approves it in the review's stead
    /// ([`crate::spec::Approval::ReviewOrRule`]).
    pub review_rule: bool,
    /// The client the call comes from.
    pub client: Option<String>,
    /// Where the call comes from, as its driver said.
    pub origin: Origin,
    /// Whether the call needs no decision and stops only because the user has approval rules
    /// ([`Options::consult_rules`]): unless a rule denies it or asks about it, the host answers
    /// [`Decision::Auto`] at once, without asking anyone.
    pub optional: bool,
}

/// What the driver must do next.
#[derive(Debug)]
pub enum Step<L> {
    /// Run GUARD with the call's [`Call::args`] and resume with [`Call::guarded`].
    Guard(L),
    /// Get a decision and resume with [`Call::decide`].
    Ask(Ask),
    /// Run the handler with the call's [`Call::args`] and resume with [`Call::finish`].
    Run(Handler<L>),
    /// Nothing more: the result.
    Done(ToolResult),
}

/// How a handler ended.
#[derive(Debug, Clone, PartialEq)]
pub enum HandlerOutcome {
    /// It did its job; the text for the model.
    Success(String),
    /// It did not (it said so, it signalled, it timed out...); the message for the model.
    Failure(String),
    /// The user refused what it proposed (a review whose hunks were all rejected, a guard
    /// approval asked by the handler itself and refused); the message for the model.
    Denied(String),
    /// It was withdrawn before it finished; the message for the model.
    Cancelled(String),
}

/// Read an asynchronous handler's answer: the STATUS it gave its callback, and TEXT, its value
/// as text for the model (or the message saying why the value cannot be read).
///
/// STATUS is nil or `:success`, `:failure`, `:denied` or `:cancelled`; `:error` is the driver's,
/// for a handler that signalled while it started (TEXT is the error's message). Anything else
/// is a failure that names it.
pub fn handler_outcome(status: &Sexp, text: Result<String, String>) -> HandlerOutcome {
    let text = match text {
        Ok(text) => text,
        Err(message) => return HandlerOutcome::Failure(message),
    };
    match status {
        Sexp::Nil => HandlerOutcome::Success(text),
        Sexp::Keyword(k) => match k.as_str() {
            "success" => HandlerOutcome::Success(text),
            "failure" => HandlerOutcome::Failure(text),
            "denied" => HandlerOutcome::Denied(text),
            "cancelled" => HandlerOutcome::Cancelled(text),
            "error" => HandlerOutcome::Failure(format!("Tool error: {text}")),
            _ => unknown_status(status),
        },
        _ => unknown_status(status),
    }
}

fn unknown_status(status: &Sexp) -> HandlerOutcome {
    HandlerOutcome::Failure(format!(
        "Tool error: the handler answered with the status {}, not :success, :failure, :denied or :cancelled",
        shorten(sexp::describe(status), 200)
    ))
}

/// The most calls one batch may hold, whichever driver runs it: starting a call is
/// synchronous, so a larger batch would hold Emacs's main loop too long.
pub const MAX_CALLS: usize = 100_000;

/// A batch's length, given as LENGTH (`None` for a list that is circular or dotted), or the
/// message that refuses it before anything runs.
pub fn batch_length(length: Option<usize>) -> Result<usize, String> {
    match length {
        None => {
            Err("CALLS must be a proper list of tool-call plists (it is circular or dotted); nothing was run".into())
        }
        Some(n) if n > MAX_CALLS => Err(format!("CALLS holds {n} calls, more than {MAX_CALLS}; nothing was run")),
        Some(n) => Ok(n),
    }
}

/// Where a call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Waiting for its guard's answer.
    Guard,
    /// Waiting for a decision.
    Asking,
    /// Its handler runs.
    Running,
    /// It has its result.
    Done,
}

/// A resume that does not fit the call's stage: a bug in a driver, reported, never a panic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("agent-q: the call {call} is {stage:?}, so it cannot take {what}")]
pub struct StageError {
    /// The call's id and tool.
    pub call: String,
    /// Its stage.
    pub stage: Stage,
    /// What was offered.
    pub what: &'static str,
}

/// A call in progress: what the executor knows between steps.
#[derive(Debug)]
pub struct Call {
    id: Option<String>,
    client: Option<String>,
    origin: Origin,
    /// See [`channel_of`].
    channel: Option<String>,
    name: String,
    tool_id: u64,
    level: SafetyLevel,
    args: Map<String, Json>,
    stage: Stage,
    decision: &'static str,
    rule: Option<String>,
    /// The trust that let it through ([`Decision::Trusted`]).
    trusted: Option<String>,
    approved: bool,
    modified: bool,
    asked: bool,
    /// Waiting at an optional ask ([`Ask::optional`]).
    optional: bool,
    reason: Option<String>,
    protected: bool,
    file: Option<String>,
    review: bool,
    review_rule: bool,
    /// What the handler's review decided, as it reported ([`Call::finish_reviewed`]).
    reviewed: Option<ReviewOutcome>,
    /// Why the call was withdrawn, when it was.
    withdrawn: Option<String>,
    /// How the decision was made, in words, when `decision` alone does not say it all (a
    /// denial's reason, the rule's verdict).
    verdict: Option<String>,
    started: Option<Instant>,
    audited: bool,
    /// Ended by its agent's hook timeout ([`Call::time_out`]).
    timed_out: bool,
}

/// The registry the executor works with.
pub type Shared<L> = Mutex<Registry<Handler<L>>>;

impl Call {
    fn new(id: Option<String>, client: Option<String>, ctx: &CallContext, name: String) -> Call {
        let origin = ctx.origin.clone();
        let channel = channel_of(&origin, client.as_deref(), ctx.channel.as_deref());
        Call {
            id,
            client,
            origin,
            channel,
            name,
            tool_id: 0,
            level: SafetyLevel::Safe,
            args: Map::new(),
            stage: Stage::Done,
            decision: "auto",
            rule: None,
            trusted: None,
            approved: false,
            modified: false,
            asked: false,
            optional: false,
            reason: None,
            protected: false,
            file: None,
            review: false,
            review_rule: false,
            reviewed: None,
            withdrawn: None,
            verdict: None,
            started: None,
            audited: false,
            timed_out: false,
        }
    }

    /// Start CALL (a tool-call plist) against REGISTRY: parse, look up, convert and validate.
    pub fn start<L: Clone>(
        registry: &Shared<L>,
        call: &Sexp,
        ctx: &CallContext,
        opts: &Options,
        fx: &mut dyn Effects,
    ) -> (Call, Step<L>) {
        Call::start_read(registry, parse_call(call), ctx, opts, fx)
    }

    /// [`Call::start`] for a call a driver read: [`parse_call`]'s answer, or
    /// [`ToolCall::new`]'s from the parts the driver read from the host's call directly.
    pub fn start_read<L: Clone>(
        registry: &Shared<L>,
        read: Result<ToolCall<'_>, (Option<String>, String)>,
        ctx: &CallContext,
        opts: &Options,
        fx: &mut dyn Effects,
    ) -> (Call, Step<L>) {
        match read {
            Ok(parsed) => Call::start_parsed(registry, parsed, ctx, opts, fx),
            Err((id, message)) => {
                let done = ToolResult::failure(id.clone(), message);
                (Call::new(id, ctx.client.clone(), ctx, String::new()), Step::Done(done))
            }
        }
    }

    /// [`Call::start`] for a call already taken apart and checked ([`parse_call`],
    /// [`ToolCall::new`]).
    pub fn start_parsed<L: Clone>(
        registry: &Shared<L>,
        parsed: ToolCall<'_>,
        ctx: &CallContext,
        opts: &Options,
        fx: &mut dyn Effects,
    ) -> (Call, Step<L>) {
        // A call from an MCP client is named by its driver only: nothing in the call may name
        // another client.
        let client = match ctx.origin {
            Origin::Emacs => parsed.client.clone().or_else(|| ctx.client.clone()),
            Origin::Mcp { .. } => ctx.client.clone(),
        };
        let mut this = Call::new(parsed.id.clone(), client, ctx, parsed.name.clone());
        let entry = lock(registry).entry(&parsed.name);
        let Some(entry) = entry else {
            // The name is the model's text, of any length: the message quotes only its start.
            let name = shorten(parsed.name, 200);
            let done = ToolResult::failure(parsed.id, format!("Unknown tool: {name}"));
            // A caller that audits every call (the MCP server) sees this failure in the log like
            // any other: a client that calls tools that do not exist is worth noticing. There is
            // no schema to read the arguments with, so they are recorded as they convert, or not
            // at all.
            if opts.audit_all {
                this.name = name;
                this.args =
                    call_arguments_to_json(parsed.arguments, &Json::Object(Map::new()), opts.max_argument_bytes)
                        .unwrap_or_default();
                fx.audit(&this.record("result", Some(&done)));
            }
            return (this, Step::Done(done));
        };
        let spec = &entry.registration.spec;
        this.name = spec.name.clone();
        this.tool_id = entry.id;
        this.level = spec.safety_level;
        this.stage = Stage::Guard;
        if let Some(Handler::Lisp(_)) = &entry.handler {
            this.review = spec.approval.by_review() && opts.review_intact;
            this.review_rule = this.review && spec.approval == crate::spec::Approval::ReviewOrRule;
        }
        if !entry.registration.enabled {
            let message = format!("Tool {} is disabled", this.name);
            let done = this.end(registry, message, Status::Failure, opts, fx);
            return (this, Step::Done(done));
        }
        match call_arguments_to_json(parsed.arguments, &spec.parameters, opts.max_argument_bytes)
            .map_err(|e| format!("Invalid arguments for {}: {e}", this.name))
            .and_then(|args| check_arguments(&this.name, &spec.parameters, &entry.validator, &args).map(|()| args))
        {
            Ok(args) => this.args = args,
            Err(message) => {
                let done = this.end(registry, message, Status::Failure, opts, fx);
                return (this, Step::Done(done));
            }
        }
        let step = this.after_validation(registry, &entry, opts, fx);
        (this, step)
    }

    /// The call's id.
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// The tool's name.
    pub fn tool(&self) -> &str {
        &self.name
    }

    /// The client the call comes from.
    pub fn client(&self) -> Option<&str> {
        self.client.as_deref()
    }

    /// Where the call comes from, as its driver said.
    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// The call's channel (see [`channel_of`]): `None` for the user's own Lisp.
    pub fn channel(&self) -> Option<&str> {
        self.channel.as_deref()
    }

    /// The arguments, validated (and as the user modified them, once approved).
    pub fn args(&self) -> &Map<String, Json> {
        &self.args
    }

    /// Where the call stands.
    pub fn stage(&self) -> Stage {
        self.stage
    }

    /// Whether the user approved this call (explicitly, by one of their approval rules, or
    /// through the tool's own review).
    pub fn approved_by_user(&self) -> bool {
        self.asked && self.approved
    }

    /// The guard's reason for asking, if it gave one.
    pub fn reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }

    /// The file the guard resolved and pinned, if it gave one ([`GuardAnswer::file`]).
    pub fn file(&self) -> Option<&str> {
        self.file.as_deref()
    }

    /// Whether only the user may approve this call ([`GuardAnswer::protected`]).
    pub fn protected(&self) -> bool {
        self.protected
    }

    fn label(&self) -> String {
        format!("{} ({})", self.id.as_deref().unwrap_or("without id"), self.name)
    }

    fn expect(&self, stage: Stage, what: &'static str) -> Result<(), StageError> {
        if self.stage == stage {
            Ok(())
        } else {
            Err(StageError {
                call: self.label(),
                stage: self.stage,
                what,
            })
        }
    }

    fn after_validation<L: Clone>(
        &mut self,
        registry: &Shared<L>,
        entry: &ToolEntry<Handler<L>>,
        opts: &Options,
        fx: &mut dyn Effects,
    ) -> Step<L> {
        match &entry.handler {
            Some(Handler::Lisp(LispTool { guard: Some(g), .. })) => {
                self.stage = Stage::Guard;
                Step::Guard(g.clone())
            }
            _ => self.after_guard(registry, GuardAnswer::default(), opts, fx),
        }
    }

    fn after_guard<L: Clone>(
        &mut self,
        registry: &Shared<L>,
        answer: GuardAnswer,
        opts: &Options,
        fx: &mut dyn Effects,
    ) -> Step<L> {
        // After the user edited the arguments the guard runs again: its reason (or none) is then
        // about the arguments the handler gets, which the user approved by writing them.
        self.protected = answer.protected;
        let ask_first = answer.ask && answer.reason.is_some();
        self.file = answer.file;
        self.reason = match answer.reason {
            None if answer.protected => Some(format!(
                "{} is protected: only the user may approve it, each time",
                self.name
            )),
            reason => reason,
        };
        if !self.approved {
            // A tool whose review is its approval asks nothing before the review, unless a guard
            // gives a reason other than a protected file (which the review, the user's own
            // answer each time, settles): its level does not call for a prompt.
            let needed = if self.review {
                self.reason.is_some() && (!self.protected || ask_first)
            } else {
                self.reason.is_some() || opts.needs_approval(self.level)
            };
            if needed || opts.consult_rules {
                self.stage = Stage::Asking;
                self.asked = needed;
                self.optional = !needed;
                return Step::Ask(Ask {
                    tool: self.name.clone(),
                    tool_id: self.tool_id,
                    level: self.level,
                    reason: self.reason.clone(),
                    protected: self.protected,
                    file: self.file.clone(),
                    review: self.review,
                    review_rule: self.review_rule,
                    client: self.client.clone(),
                    origin: self.origin.clone(),
                    optional: !needed,
                });
            }
        }
        self.approved = true;
        if self.review {
            self.decision = "review";
        }
        self.run(registry, opts, fx)
    }

    /// The tool as it stands now, if it is still the one this call started with.
    fn current<L: Clone>(&self, registry: &Shared<L>) -> Result<ToolEntry<Handler<L>>, String> {
        let entry = lock(registry).entry(&self.name);
        let while_ = if self.asked {
            "while the user was deciding"
        } else {
            "meanwhile"
        };
        match entry {
            None => Err(format!("Tool {} was removed {while_}; it did not run", self.name)),
            Some(e) if e.id != self.tool_id => Err(format!(
                "Tool {} was replaced by another definition {while_}; it did not run (call it again)",
                self.name
            )),
            Some(e) if !e.registration.enabled => {
                Err(format!("Tool {} was disabled {while_}; it did not run", self.name))
            }
            Some(e) => Ok(e),
        }
    }

    fn run<L: Clone>(&mut self, registry: &Shared<L>, opts: &Options, fx: &mut dyn Effects) -> Step<L> {
        let entry = match self.current(registry) {
            Ok(e) => e,
            Err(message) => return Step::Done(self.end(registry, message, Status::Failure, opts, fx)),
        };
        let Some(handler) = entry.handler else {
            let message = format!("Tool {} has no handler", self.name);
            return Step::Done(self.end(registry, message, Status::Failure, opts, fx));
        };
        self.stage = Stage::Running;
        self.audited = opts.audit_all || self.level != SafetyLevel::Safe || self.asked;
        if self.audited {
            fx.audit(&self.record("run", None));
        }
        if opts.hooks {
            fx.observe(Phase::Before, &self.name, &self.args, None);
        }
        self.started = Some(Instant::now());
        Step::Run(handler)
    }

    /// Resume after the guard: `Ok(None)` (no approval needed), `Ok(Some(REASON))` or a whole
    /// [`GuardAnswer`], or `Err(MESSAGE)` when the guard failed (the call fails, nothing runs).
    pub fn guarded<L: Clone, G: Into<GuardAnswer>>(
        &mut self,
        registry: &Shared<L>,
        answer: Result<G, String>,
        opts: &Options,
        fx: &mut dyn Effects,
    ) -> Result<Step<L>, StageError> {
        self.expect(Stage::Guard, "a guard's answer")?;
        if let Err(message) = self.current(registry) {
            return Ok(Step::Done(self.end(registry, message, Status::Failure, opts, fx)));
        }
        Ok(match answer {
            Ok(answer) => self.after_guard(registry, answer.into(), opts, fx),
            Err(message) => {
                let message = format!("Tool error: the guard of {} failed: {message}", self.name);
                Step::Done(self.end(registry, message, Status::Failure, opts, fx))
            }
        })
    }

    /// Resume with the user's DECISION. The tool is looked up again first: one removed, disabled
    /// or replaced while the user decided does not run.
    pub fn decide<L: Clone>(
        &mut self,
        registry: &Shared<L>,
        decision: Decision,
        opts: &Options,
        fx: &mut dyn Effects,
    ) -> Result<Step<L>, StageError> {
        self.expect(Stage::Asking, "a decision")?;
        if std::mem::take(&mut self.optional) {
            if decision == Decision::Auto {
                // No rule stops it: on as without rules (not asked, decision `auto`; `review`
                // for a tool whose review is its approval).
                self.approved = true;
                if self.review {
                    self.decision = "review";
                }
                return Ok(self.run(registry, opts, fx));
            }
            // A rule denied it, or asked and the user answered: it was decided like any other.
            self.asked = true;
        }
        let entry = match self.current(registry) {
            Ok(e) => e,
            Err(message) => return Ok(Step::Done(self.end(registry, message, Status::Failure, opts, fx))),
        };
        match decision {
            Decision::Approved => {
                self.decision = if self.review && self.reason.is_none() {
                    "review"
                } else {
                    "approved"
                };
                self.approved = true;
                Ok(self.run(registry, opts, fx))
            }
            Decision::Granted(grant) if self.protected => {
                // Defence in depth, as for a rule: the host does not consult grants for it.
                self.decision = "denied";
                self.verdict = Some(format!(
                    "denied: the standing approval \"{grant}\" cannot approve a protected call"
                ));
                let message = format!(
                    "Tool {} did not run: {}. Only the user may approve such a call, when asked.",
                    self.name,
                    self.reason.as_deref().unwrap_or("it is protected")
                );
                Ok(Step::Done(self.end(registry, message, Status::Denied, opts, fx)))
            }
            Decision::Trusted(trust) if self.protected => {
                // Defence in depth: the host does not consult trusts for such a call.
                self.decision = "denied";
                self.verdict = Some(format!("denied: the trust \"{trust}\" cannot approve a protected call"));
                let message = format!(
                    "Tool {} did not run: {}. Only the user may approve such a call, when asked.",
                    self.name,
                    self.reason.as_deref().unwrap_or("it is protected")
                );
                Ok(Step::Done(self.end(registry, message, Status::Denied, opts, fx)))
            }
            Decision::Trusted(trust) => {
                self.decision = "trusted";
                self.verdict = Some(if self.review {
                    format!("{trust}; applied without review")
                } else {
                    trust.clone()
                });
                self.trusted = Some(trust);
                self.approved = true;
                Ok(self.run(registry, opts, fx))
            }
            Decision::Granted(grant) => {
                self.decision = "granted";
                self.verdict = Some(format!("allowed by the user's standing approval: {grant}"));
                self.approved = true;
                Ok(self.run(registry, opts, fx))
            }
            Decision::Rule { allow: true, rule } if self.protected => {
                // Defence in depth: the host does not consult allow rules for such a call.
                self.decision = "rule";
                self.rule = Some(rule.clone());
                self.verdict = Some(format!(
                    "denied: the approval rule \"{rule}\" cannot approve a protected call"
                ));
                let message = format!(
                    "Tool {} did not run: the approval rule \"{rule}\" cannot approve it, because {}. Only the user may approve such a call, when asked.",
                    self.name,
                    self.reason.as_deref().unwrap_or("it is protected")
                );
                Ok(Step::Done(self.end(registry, message, Status::Denied, opts, fx)))
            }
            Decision::Rule { allow: true, rule } => {
                self.decision = "rule";
                self.verdict = Some(if self.review {
                    format!("allowed unreviewed by the approval rule: {rule}")
                } else {
                    format!("allowed by the approval rule: {rule}")
                });
                self.rule = Some(rule);
                self.approved = true;
                Ok(self.run(registry, opts, fx))
            }
            Decision::Modified(new_args) => {
                let spec = &entry.registration.spec;
                let checked = arguments_to_json(Some(&new_args), &spec.parameters, opts.max_argument_bytes)
                    .map_err(|e| format!("Invalid arguments for {}: {e}", self.name))
                    .and_then(|a| check_arguments(&self.name, &spec.parameters, &entry.validator, &a).map(|()| a));
                self.modified = true;
                match checked {
                    Ok(args) => {
                        self.args = args;
                        self.decision = "modified";
                        self.approved = true;
                        // The guard sees the arguments the handler will get (a read tool checks
                        // what it opens against them), but does not ask again: the user wrote them.
                        Ok(self.after_validation(registry, &entry, opts, fx))
                    }
                    Err(e) => {
                        let message = format!("The user modified the arguments, but {e}");
                        Ok(Step::Done(self.end(registry, message, Status::Failure, opts, fx)))
                    }
                }
            }
            denied => {
                self.decision = "denied";
                self.verdict = Some(match &denied {
                    Decision::Denied(None) => "the user denied it at the prompt".to_string(),
                    Decision::Denied(Some(reason)) => {
                        format!("the user denied it at the prompt: {}", shorten(reason.clone(), 200))
                    }
                    Decision::Rule { rule, .. } => format!("denied by the approval rule: {rule}"),
                    Decision::Invalid(why) => format!("denied: {why}"),
                    _ => "denied: not a decision".to_string(),
                });
                if let Decision::Rule { rule, .. } = &denied {
                    self.decision = "rule";
                    self.rule = Some(rule.clone());
                }
                Ok(Step::Done(self.end(
                    registry,
                    denial_message(&denied),
                    Status::Denied,
                    opts,
                    fx,
                )))
            }
        }
    }

    /// Finish a running call with its handler's OUTCOME.
    pub fn finish<L: Clone>(
        &mut self,
        registry: &Shared<L>,
        outcome: HandlerOutcome,
        opts: &Options,
        fx: &mut dyn Effects,
    ) -> Result<ToolResult, StageError> {
        self.expect(Stage::Running, "a handler's outcome")?;
        let (content, status) = match outcome {
            HandlerOutcome::Success(text) if self.modified => (
                format!(
                    "Note: the user modified the arguments before this tool ran; it ran with {}.\n\n{text}",
                    audit_arguments(&self.args)
                ),
                Status::Success,
            ),
            HandlerOutcome::Success(text) => (text, Status::Success),
            HandlerOutcome::Failure(text) => (text, Status::Failure),
            HandlerOutcome::Denied(text) => (text, Status::Denied),
            HandlerOutcome::Cancelled(text) => (text, Status::Cancelled),
        };
        Ok(self.end(registry, content, status, opts, fx))
    }

    /// Withdraw the call with REASON (the user's or the client's), at any stage before done.
    /// A running handler cannot be stopped from here: the driver ignores its late outcome.
    pub fn cancel<L: Clone>(
        &mut self,
        registry: &Shared<L>,
        reason: &str,
        opts: &Options,
        fx: &mut dyn Effects,
    ) -> Result<ToolResult, StageError> {
        if self.stage == Stage::Done {
            return Err(StageError {
                call: self.label(),
                stage: self.stage,
                what: "a cancellation",
            });
        }
        if self.stage != Stage::Running {
            self.decision = "none";
        }
        self.withdrawn = Some(shorten(reason.to_string(), MAX_RULE_CHARS));
        // An optional ask is withdrawn only while it waits for the user (a rule asked).
        if std::mem::take(&mut self.optional) {
            self.asked = true;
        }
        let message = format!("Tool call cancelled: {reason}; {} did not run", self.name);
        Ok(self.end(registry, message, Status::Cancelled, opts, fx))
    }

    /// Record what the handler's review decided, hunk by hunk (see [`ReviewOutcome`]): the
    /// audit's `result` says so. Only while the handler runs.
    pub fn reviewed(&mut self, outcome: ReviewOutcome) -> Result<(), StageError> {
        self.expect(Stage::Running, "a review's outcome")?;
        self.reviewed = Some(outcome);
        Ok(())
    }

    /// How the call was decided, as the audit log's `decision` says it.
    pub fn decision(&self) -> &'static str {
        self.decision
    }

    /// The approval rule that decided, when one did.
    pub fn rule(&self) -> Option<&str> {
        self.rule.as_deref()
    }

    /// Who decided and how, in words, for the audit (its `how`), at EVENT with STATUS.
    fn how(&self, event: &str, status: Option<Status>) -> String {
        let reviewed = self.reviewed.as_ref().map(ReviewOutcome::words);
        let base = match self.decision {
            "none" => "not decided".to_string(),
            "auto" if self.tool_id == 0 => "not decided: no such tool".to_string(),
            "auto" => format!("not asked: a {} call needs no decision", self.level),
            "review" => match (&reviewed, event, status) {
                (Some(words), _, _) => format!("the user's review: {words}"),
                (None, "run", _) => "its review is its approval: the user reviews it".to_string(),
                (None, _, Some(Status::Denied)) => "the user's review: nothing accepted".to_string(),
                (None, _, _) => "its review is its approval".to_string(),
            },
            "approved" if self.review || reviewed.is_some() => match &reviewed {
                Some(words) => format!("the user approved it at the prompt, then reviewed it: {words}"),
                None => "the user approved it at the prompt; its review follows".to_string(),
            },
            "approved" => "the user approved it at the prompt".to_string(),
            "modified" => "the user edited the arguments at the prompt and approved them".to_string(),
            "timeout" => "not decided: the agent's hook timed out before anyone answered".to_string(),
            _ => self
                .verdict
                .clone()
                .unwrap_or_else(|| format!("decided: {}", self.decision)),
        };
        match &self.withdrawn {
            Some(why) if self.decision == "none" => format!("withdrawn before a decision: {why}"),
            Some(why) if self.review || self.reviewed.is_some() => {
                format!("{base}; withdrawn while its review was open: {why}")
            }
            Some(why) => format!("{base}; withdrawn while it ran: {why}"),
            None if self.timed_out && self.decision != "timeout" => {
                format!("{base}; the agent's hook timed out while it ran")
            }
            None => base,
        }
    }

    /// End the call because the agent that made it stopped waiting: its hook timeout of
    /// SECONDS ran out before anyone answered (see [`crate::gate::timed_out_reason`]). As a
    /// cancellation, but audited as the event `timed-out`, with the decision `timeout`.
    pub fn time_out<L: Clone>(
        &mut self,
        registry: &Shared<L>,
        seconds: u64,
        opts: &Options,
        fx: &mut dyn Effects,
    ) -> Result<ToolResult, StageError> {
        if self.stage == Stage::Done {
            return Err(StageError {
                call: self.label(),
                stage: self.stage,
                what: "a timeout",
            });
        }
        if self.stage != Stage::Running {
            self.decision = "timeout";
        }
        if std::mem::take(&mut self.optional) {
            self.asked = true;
        }
        self.timed_out = true;
        let message = format!(
            "Tool call timed out: {} {} did not run",
            crate::gate::timed_out_reason(seconds),
            self.name
        );
        Ok(self.end(registry, message, Status::Cancelled, opts, fx))
    }

    fn record(&self, event: &'static str, result: Option<&ToolResult>) -> AuditRecord {
        AuditRecord {
            time: crate::registry::now_iso8601(),
            event,
            id: self.id.clone(),
            client: self.client.clone(),
            tool: self.name.clone(),
            safety_level: (self.tool_id != 0).then_some(self.level),
            decision: self.decision,
            rule: self.rule.clone(),
            trusted: self.trusted.clone(),
            how: self.how(event, result.map(|r| r.status)),
            review: self.reviewed.clone(),
            withdrawn: self.withdrawn.clone(),
            reason: self.reason.clone(),
            arguments: audit_arguments(&self.args),
            success: result.map(|r| r.success),
            status: result.map(|r| r.status),
            content: result.map(|r| shorten(r.content.clone(), 500)),
            execution_time_ms: result.filter(|_| event == "result").map(|r| r.execution_time_ms),
        }
    }

    /// End the call with CONTENT and STATUS: cap, count, audit, observe.
    fn end<L: Clone>(
        &mut self,
        registry: &Shared<L>,
        content: String,
        status: Status,
        opts: &Options,
        fx: &mut dyn Effects,
    ) -> ToolResult {
        let ran = self.stage == Stage::Running;
        let elapsed = self.started.map_or(0.0, |s| s.elapsed().as_secs_f64() * 1000.0);
        let result = ToolResult {
            id: self.id.clone(),
            success: status == Status::Success,
            status,
            content: truncate(content, opts.max_result_chars),
            execution_time_ms: elapsed,
            safety_level: if self.tool_id == 0 { None } else { Some(self.level) },
            approved: self.approved && matches!(status, Status::Success | Status::Failure),
            modified: self.modified,
        };
        self.stage = Stage::Done;
        if self.tool_id != 0 {
            let outcome = match status {
                Status::Success => CallOutcome::Success,
                Status::Failure => CallOutcome::Failure,
                Status::Denied => CallOutcome::Denied,
                Status::Cancelled => CallOutcome::Cancelled,
            };
            lock(registry).record(&self.name, outcome, elapsed);
            let event = match status {
                _ if self.timed_out => "timed-out",
                _ if ran => "result",
                Status::Denied => "denied",
                Status::Cancelled => "cancelled",
                _ => "result",
            };
            // Every call that was asked about, audited when it ran, or refused is audited; a
            // safe call that failed validation is not (nothing was decided or done).
            if self.timed_out
                || ran && self.audited
                || !ran && (self.asked || opts.audit_all || self.level != SafetyLevel::Safe)
            {
                fx.audit(&self.record(event, Some(&result)));
            }
            if opts.hooks && ran {
                let phase = if result.success { Phase::After } else { Phase::Error };
                fx.observe(phase, &self.name, &self.args, Some(&result));
            }
        }
        result
    }
}

/// What the synchronous driver needs from its environment.
pub trait Host: Effects {
    /// The host's function type (for Emacs: a reference to a Lisp function).
    type Lisp: Clone;

    /// Run a guard with ARGS: its [`GuardAnswer`] or `Err(MESSAGE)`.
    fn guard(&mut self, guard: &Self::Lisp, args: &Map<String, Json>) -> Result<GuardAnswer, String>;

    /// Ask the user (through the approval function) about ASK for CALL (whose arguments are
    /// [`Call::args`]); the answer as the approval function returned it.
    fn approve(&mut self, ask: &Ask, call: &Call) -> Result<Sexp, ApprovalFailure>;

    /// Run a host handler with ARGS for CALL and wait for its outcome.
    fn run_handler(&mut self, tool: &LispTool<Self::Lisp>, call: &Call) -> HandlerOutcome;

    /// Run the native TOOL for CALL and wait for its outcome: [`run_native`], polling the
    /// host's own way of telling that the user asked to stop; or [`native_not_run`] from a
    /// host that runs no native tools.
    fn run_native_tool(&mut self, tool: &dyn Tool, call: &Call) -> HandlerOutcome;
}

/// The outcome of CALL to a native tool in a host that runs none: the Emacs module registers no
/// native tool, so its drivers answer such a step with this failure rather than run it.
pub fn native_not_run(call: &Call) -> HandlerOutcome {
    HandlerOutcome::Failure(format!(
        "Tool {} is a Rust tool, which this Emacs module does not run",
        call.tool()
    ))
}

/// Run a native TOOL for CALL, waiting at most its timeout, polling SHOULD_QUIT.
pub fn run_native(tool: &dyn Tool, call: &Call, should_quit: impl FnMut() -> bool) -> HandlerOutcome {
    match native::run(tool, call.tool(), call.args().clone(), should_quit) {
        Ok(text) => HandlerOutcome::Success(text),
        Err(native::NativeError::Cancelled(name)) => {
            HandlerOutcome::Failure(format!("Tool {name} was interrupted by the user (C-g)"))
        }
        Err(e) => HandlerOutcome::Failure(e.to_string()),
    }
}

/// Execute one tool call synchronously: every decision is asked of HOST as it comes. Never
/// panics on input and never fails: every problem is a failure result.
pub fn execute_call<H: Host>(
    registry: &Shared<H::Lisp>,
    call: &Sexp,
    ctx: &CallContext,
    host: &mut H,
    opts: &Options,
) -> ToolResult {
    let (call, step) = Call::start(registry, call, ctx, opts, host);
    drive(registry, call, step, opts, host)
}

/// [`execute_call`] for a call the driver read ([`Call::start_read`]).
pub fn execute_read<H: Host>(
    registry: &Shared<H::Lisp>,
    call: Result<ToolCall<'_>, (Option<String>, String)>,
    ctx: &CallContext,
    host: &mut H,
    opts: &Options,
) -> ToolResult {
    let (call, step) = Call::start_read(registry, call, ctx, opts, host);
    drive(registry, call, step, opts, host)
}

/// The synchronous driver's loop, from the first step on.
fn drive<H: Host>(
    registry: &Shared<H::Lisp>,
    mut call: Call,
    mut step: Step<H::Lisp>,
    opts: &Options,
    host: &mut H,
) -> ToolResult {
    loop {
        let next = match step {
            Step::Done(result) => return result,
            Step::Guard(guard) => {
                let answer = host.guard(&guard, call.args());
                call.guarded(registry, answer, opts, host)
            }
            Step::Ask(ask) => {
                let decision = match host.approve(&ask, &call) {
                    Ok(answer) => parse_decision(&answer),
                    Err(failure) => failure.into(),
                };
                call.decide(registry, decision, opts, host)
            }
            Step::Run(handler) => {
                let outcome = match handler {
                    Handler::Lisp(tool) => host.run_handler(&tool, &call),
                    Handler::Native(tool) => host.run_native_tool(tool.as_ref(), &call),
                };
                call.finish(registry, outcome, opts, host).map(Step::Done)
            }
        };
        step = match next {
            Ok(step) => step,
            // Cannot happen with this driver; reported rather than trusted.
            Err(e) => return ToolResult::failure(call.id.clone(), e.to_string()),
        };
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod proptests;
