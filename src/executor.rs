//! The execution policy: from a tool call to a tool result.
//!
//! [`execute_call`] is the whole of seed 001's flow as issue 2 settles it, independent of Emacs:
//! parse the call, find the tool, convert and validate the arguments against the tool's schema,
//! enforce the safety level (dangerous tools run only on an explicit approval), run the handler,
//! format, cap and time the result, count it, audit it and tell the observers. What needs Emacs
//! (the approval prompt, Lisp handlers, hooks, the log buffer) is asked of a [`Host`].
//!
//! Nothing escapes: every failure becomes a [`ToolResult`] with `success` false, and the lock on
//! the registry is never held while the host runs (the host may re-enter the executor).

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use lexpr::Value;
use serde::Serialize;
use serde_json::{Map, Value as Json};

use crate::native::{self, Tool};
use crate::registry::{CallOutcome, Registry};
use crate::sexp::{self, Sexp};
use crate::spec::SafetyLevel;

/// What runs a tool: a host-language (Lisp) function, or a native Rust tool.
pub enum Handler<L> {
    /// A function the [`Host`] knows how to call.
    Lisp(L),
    /// A tool written in Rust, run on the async runtime with its timeout.
    Native(Arc<dyn Tool>),
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
    /// After it failed.
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

/// Why asking for approval produced no decision.
#[derive(Debug, Clone, PartialEq)]
pub enum ApprovalFailure {
    /// The user quit (`C-g`) while being asked.
    Quit,
    /// The approval function signalled, with this message.
    Signalled(String),
}

/// What the executor needs from its environment.
pub trait Host {
    /// The host's handler type (for Emacs: a reference to a Lisp function).
    type Lisp: Clone;

    /// Ask the user (through the approval function) whether TOOL may run with ARGS.
    /// Returns the decision as the approval function returned it.
    fn approve(&mut self, tool: &str, args: &Map<String, Json>, level: SafetyLevel) -> Result<Value, ApprovalFailure>;

    /// Run a host handler with ARGS: the formatted result, or the message of its error.
    fn run_handler(&mut self, handler: &Self::Lisp, args: &Map<String, Json>) -> Result<String, String>;

    /// Tell the observers. Only called when [`Options::hooks`] is set.
    fn observe(&mut self, phase: Phase, tool: &str, args: &Map<String, Json>, result: Option<&ToolResult>);

    /// Record an audit event (cautious and dangerous tools).
    fn audit(&mut self, record: &AuditRecord);

    /// Whether the user asked to stop (polled while a native tool runs).
    fn should_quit(&mut self) -> bool;
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
            max_argument_bytes: 16 << 20,
            hooks: false,
            confirm: Vec::new(),
        }
    }
}

/// The outcome of one call, as the model will see it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The call's id.
    pub id: Option<String>,
    /// Whether the tool ran and succeeded.
    pub success: bool,
    /// The text for the model (the error message on failure).
    pub content: String,
    /// Handler time in milliseconds.
    pub execution_time_ms: f64,
    /// The tool's safety level, when the tool is known.
    pub safety_level: Option<SafetyLevel>,
    /// Whether the call was allowed to run.
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
            content: message.into(),
            execution_time_ms: 0.0,
            safety_level: None,
            approved: false,
            modified: false,
        }
    }
}

/// One line of the audit log.
#[derive(Debug, Clone, Serialize)]
pub struct AuditRecord {
    /// When, ISO 8601 UTC.
    pub time: String,
    /// `run` (about to run), `result` (finished) or `denied`.
    pub event: &'static str,
    /// The call's id.
    pub id: Option<String>,
    /// The tool.
    pub tool: String,
    /// Its safety level.
    pub safety_level: SafetyLevel,
    /// `auto` (cautious), `approved`, `modified` or `denied`.
    pub decision: &'static str,
    /// The arguments, long strings shortened.
    pub arguments: Json,
    /// For `result`: whether it succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub success: Option<bool>,
    /// For `result` and `denied`: the start of the content.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// For `result`: handler time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution_time_ms: Option<f64>,
}

impl AuditRecord {
    /// The record as one line of JSON.
    pub fn to_json_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"error\":\"cannot serialize audit record: {e}\"}}"))
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
    Modified(Value),
    /// Anything else: not a decision, so a denial, with the explanation.
    Invalid(String),
}

/// Read an approval function's answer. Only `:approved` and `(:modified ARGS)` allow a run.
pub fn parse_decision(v: &Value) -> Decision {
    match v.as_keyword() {
        Some("approved") => return Decision::Approved,
        Some("denied") => return Decision::Denied(None),
        Some("no-approval-function") => {
            return Decision::Invalid("no approval function is set (agent-q-approval-function is nil)".into())
        }
        _ => {}
    }
    let items: Option<Vec<&Value>> = if v.is_list() {
        v.list_iter().map(Iterator::collect)
    } else {
        None
    };
    match items.as_deref() {
        Some([head]) if head.as_keyword() == Some("denied") => Decision::Denied(None),
        Some([head, reason]) if head.as_keyword() == Some("denied") => match reason.as_str() {
            Some(r) if !r.trim().is_empty() => Decision::Denied(Some(r.to_string())),
            _ if sexp::is_nil(reason) => Decision::Denied(None),
            Some(_) => Decision::Denied(None),
            None => Decision::Denied(Some(sexp::describe(reason))),
        },
        Some([head, args]) if head.as_keyword() == Some("modified") => Decision::Modified((*args).clone()),
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
        Decision::Approved | Decision::Modified(_) => String::new(),
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

/// Validate ARGS against VALIDATOR: `Err("Invalid arguments for NAME: field 'X': REASON")`.
pub fn validate_arguments(name: &str, validator: &jsonschema::Validator, args: &Json) -> Result<(), String> {
    use jsonschema::error::ValidationErrorKind as K;
    // The boolean check allocates no error machinery: the usual, valid case stays cheap.
    if validator.is_valid(args) {
        return Ok(());
    }
    let Some(err) = validator.iter_errors(args).next() else {
        return Ok(());
    };
    let path = field_path(err.instance_path().as_str());
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
        K::Type { .. } => {
            let got = match err.instance().as_ref() {
                Json::Null => "null".to_string(),
                Json::Bool(_) => "a boolean".to_string(),
                Json::Number(n) => format!("the number {n}"),
                Json::String(s) => format!("the string {}", shorten(format!("{s:?}"), 60)),
                Json::Array(_) => "an array".to_string(),
                Json::Object(_) => "an object".to_string(),
            };
            let expected = shorten(err.to_string(), 200);
            let expected = expected
                .rsplit(" is not of type ")
                .next()
                .unwrap_or(&expected)
                .to_string();
            (path, format!("expected type {expected}, got {got}"))
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

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere must not make the registry unusable for the rest of the session.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Shorten long strings in ARGS for the audit log.
pub fn audit_arguments(args: &Map<String, Json>) -> Json {
    fn walk(v: &Json) -> Json {
        match v {
            Json::String(s) if s.chars().count() > 500 => Json::String(format!(
                "{}... [{} characters in all]",
                s.chars().take(500).collect::<String>(),
                s.chars().count()
            )),
            Json::Array(a) => Json::Array(a.iter().map(walk).collect()),
            Json::Object(o) => Json::Object(o.iter().map(|(k, v)| (k.clone(), walk(v))).collect()),
            other => other.clone(),
        }
    }
    walk(&Json::Object(args.clone()))
}

/// Convert a call's `:arguments` (a plist, a JSON object string, or absent) to a JSON object.
pub fn arguments_to_json(raw: Option<&Value>, schema: &Json, max_bytes: usize) -> Result<Map<String, Json>, String> {
    let json = match raw {
        None => Json::Object(Map::new()),
        Some(v) if sexp::is_nil(v) => Json::Object(Map::new()),
        Some(v) => match v.as_str() {
            Some(text) if text.trim().is_empty() => Json::Object(Map::new()),
            Some(text) => sexp::parse_json(text, max_bytes).map_err(|e| e.to_string())?,
            None => sexp::to_json(v, Some(schema)).map_err(|e| e.to_string())?,
        },
    };
    match json {
        Json::Object(map) => Ok(map),
        other => Err(format!(
            "arguments must be an object (a plist or a JSON object), got {}",
            shorten(other.to_string(), 80)
        )),
    }
}

/// The parts of a tool call plist `(:id ID :name NAME :arguments ARGS)`.
#[derive(Debug)]
pub struct ToolCall<'a> {
    /// The id, which the result repeats.
    pub id: Option<String>,
    /// The tool's name.
    pub name: String,
    /// The raw arguments.
    pub arguments: Option<&'a Value>,
}

/// Read a tool call; on failure, the id (when readable) and a message naming the problem.
pub fn parse_call(v: &Value) -> Result<ToolCall<'_>, (Option<String>, String)> {
    if sexp::plist_pairs(v).is_none() {
        return Err((
            None,
            format!(
                "Invalid tool call: expected a plist (:id ID :name NAME :arguments ARGS), got {}",
                sexp::describe(v)
            ),
        ));
    }
    let id = sexp::plist_get(v, "id");
    let id = match id {
        Some(x) if x.is_string() => x.as_str().map(str::to_string),
        Some(x) if x.is_number() || x.is_symbol() => Some(sexp::describe(x)),
        _ => return Err((None, "Invalid tool call: missing :id".to_string())),
    };
    let name = match sexp::plist_get(v, "name") {
        Some(n) => n.as_str().or_else(|| n.as_symbol()).map(str::to_string),
        None => None,
    };
    let Some(name) = name.filter(|n| !n.is_empty()) else {
        return Err((id, "Invalid tool call: missing :name".to_string()));
    };
    Ok(ToolCall {
        id,
        name,
        arguments: sexp::plist_get(v, "arguments"),
    })
}

/// Execute one tool call against REGISTRY. Never panics on input and never fails: every problem
/// is a failure result.
pub fn execute_call<H: Host>(
    registry: &Mutex<Registry<Handler<H::Lisp>>>,
    call: &Value,
    host: &mut H,
    opts: &Options,
) -> ToolResult {
    let call = match parse_call(call) {
        Ok(c) => c,
        Err((id, message)) => return ToolResult::failure(id, message),
    };
    let entry = lock(registry).entry(&call.name);
    let Some(entry) = entry else {
        return ToolResult::failure(call.id, format!("Unknown tool: {}", call.name));
    };
    let spec = &entry.registration.spec;
    let level = spec.safety_level;
    let name = spec.name.as_str();
    let mut result = ToolResult {
        safety_level: Some(level),
        ..ToolResult::failure(call.id.clone(), "")
    };
    let finish = |mut result: ToolResult, content: String, outcome: CallOutcome| {
        result.content = truncate(content, opts.max_result_chars);
        result.success = outcome == CallOutcome::Success;
        lock(registry).record(name, outcome, result.execution_time_ms);
        result
    };
    if !entry.registration.enabled {
        return finish(result, format!("Tool {name} is disabled"), CallOutcome::Failure);
    }
    let invalid = |e: String| format!("Invalid arguments for {name}: {e}");
    let mut args = match arguments_to_json(call.arguments, &spec.parameters, opts.max_argument_bytes) {
        Ok(a) => a,
        Err(e) => return finish(result, invalid(e), CallOutcome::Failure),
    };
    let check = |args: &Map<String, Json>| validate_arguments(name, &entry.validator, &Json::Object(args.clone()));
    if let Err(e) = check(&args) {
        return finish(result, e, CallOutcome::Failure);
    }
    let record = |event, decision, args: &Map<String, Json>| AuditRecord {
        time: crate::registry::now_iso8601(),
        event,
        id: call.id.clone(),
        tool: name.to_string(),
        safety_level: level,
        decision,
        arguments: audit_arguments(args),
        success: None,
        content: None,
        execution_time_ms: None,
    };
    let decision_name = if !opts.needs_approval(level) {
        "auto"
    } else {
        let decision = match host.approve(name, &args, level) {
            Ok(answer) => parse_decision(&answer),
            Err(ApprovalFailure::Quit) => Decision::Invalid("the user quit (C-g) while being asked".into()),
            Err(ApprovalFailure::Signalled(msg)) => Decision::Invalid(format!("the approval function failed: {msg}")),
        };
        match decision {
            Decision::Approved => "approved",
            Decision::Modified(new_args) => {
                let new_args = Sexp(new_args);
                match arguments_to_json(Some(&new_args.0), &spec.parameters, opts.max_argument_bytes)
                    .map_err(invalid)
                    .and_then(|a| check(&a).map(|()| a))
                {
                    Ok(a) => args = a,
                    Err(e) => {
                        result.modified = true;
                        return finish(
                            result,
                            format!("The user modified the arguments, but {e}"),
                            CallOutcome::Failure,
                        );
                    }
                }
                result.modified = true;
                "modified"
            }
            denied => {
                let content = denial_message(&denied);
                let mut rec = record("denied", "denied", &args);
                rec.content = Some(content.clone());
                host.audit(&rec);
                return finish(result, content, CallOutcome::Denied);
            }
        }
    };
    result.approved = true;
    let audited = level != SafetyLevel::Safe || decision_name != "auto";
    if audited {
        host.audit(&record("run", decision_name, &args));
    }
    if opts.hooks {
        host.observe(Phase::Before, name, &args, None);
    }
    let started = Instant::now();
    let outcome = match &entry.handler {
        None => Err(format!("Tool {name} has no handler")),
        Some(Handler::Lisp(f)) => host.run_handler(f, &args),
        Some(Handler::Native(tool)) => {
            native::run(tool.as_ref(), name, args.clone(), || host.should_quit()).map_err(|e| e.to_string())
        }
    };
    result.execution_time_ms = started.elapsed().as_secs_f64() * 1000.0;
    let (content, call_outcome) = match outcome {
        Ok(text) if result.modified => (
            format!(
                "Note: the user modified the arguments before this tool ran; it ran with {}.\n\n{text}",
                Json::Object(audit_arguments(&args).as_object().cloned().unwrap_or_default())
            ),
            CallOutcome::Success,
        ),
        Ok(text) => (text, CallOutcome::Success),
        Err(message) => (message, CallOutcome::Failure),
    };
    let result = finish(result, content, call_outcome);
    if audited {
        let mut rec = record("result", decision_name, &args);
        rec.success = Some(result.success);
        rec.content = Some(shorten(result.content.clone(), 500));
        rec.execution_time_ms = Some(result.execution_time_ms);
        host.audit(&rec);
    }
    if opts.hooks {
        let phase = if result.success { Phase::After } else { Phase::Error };
        host.observe(phase, name, &args, Some(&result));
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::tests::Sleepy;
    use crate::spec::ToolSpec;
    use serde_json::json;
    use std::time::Duration;

    /// Lisp handlers in tests are plain Rust closures over the arguments.
    type Fake = Arc<dyn Fn(&Map<String, Json>) -> Result<String, String> + Send + Sync>;

    #[derive(Default)]
    struct MockHost {
        decision: Option<Result<Value, ApprovalFailure>>,
        asked: Vec<String>,
        ran: Vec<Map<String, Json>>,
        events: Vec<String>,
        audit: Vec<AuditRecord>,
    }

    impl Host for MockHost {
        type Lisp = Fake;
        fn approve(
            &mut self,
            tool: &str,
            _args: &Map<String, Json>,
            _level: SafetyLevel,
        ) -> Result<Value, ApprovalFailure> {
            self.asked.push(tool.to_string());
            self.decision
                .clone()
                .unwrap_or(Ok(Value::keyword("no-approval-function")))
        }
        fn run_handler(&mut self, handler: &Fake, args: &Map<String, Json>) -> Result<String, String> {
            self.ran.push(args.clone());
            handler(args)
        }
        fn observe(&mut self, phase: Phase, tool: &str, _args: &Map<String, Json>, result: Option<&ToolResult>) {
            self.events.push(format!(
                "{}:{tool}:{}",
                phase.as_str(),
                result.map(|r| r.success.to_string()).unwrap_or_default()
            ));
        }
        fn audit(&mut self, record: &AuditRecord) {
            self.audit.push(record.clone());
        }
        fn should_quit(&mut self) -> bool {
            false
        }
    }

    fn read(s: &str) -> Value {
        lexpr::from_str_custom(s, lexpr::parse::Options::elisp()).expect("test input parses")
    }

    fn registry() -> Mutex<Registry<Handler<Fake>>> {
        let mut r = Registry::new();
        let echo: Fake = Arc::new(|a| Ok(format!("path={}", a.get("path").and_then(Json::as_str).unwrap_or("?"))));
        let boom: Fake = Arc::new(|_| Err("Tool error: boom".into()));
        let big: Fake = Arc::new(|_| Ok("x".repeat(50)));
        let mut add = |def: &str, h: Option<Handler<Fake>>| {
            r.register(ToolSpec::from_sexp(&read(def)).unwrap(), None, h, "t")
                .unwrap();
        };
        add(
            r#"(:name "read_it" :description "d" :parameters ((:name "path" :type :string) (:name "n" :type :integer)
                (:name "mode" :type :string :enum ("a" "b")) (:name "all" :type :boolean)) :required ("path"))"#,
            Some(Handler::Lisp(echo.clone())),
        );
        add(
            r#"(:name "eval_it" :description "d" :parameters ((:name "path" :type :string)) :safety-level :cautious)"#,
            Some(Handler::Lisp(echo.clone())),
        );
        add(
            r#"(:name "write_it" :description "d" :parameters ((:name "path" :type :string)) :required ("path") :safety-level :dangerous)"#,
            Some(Handler::Lisp(echo)),
        );
        add(r#"(:name "boom" :description "d")"#, Some(Handler::Lisp(boom)));
        add(r#"(:name "big" :description "d")"#, Some(Handler::Lisp(big)));
        add(r#"(:name "orphan" :description "d")"#, None);
        let sleepy = Sleepy {
            timeout: Duration::from_millis(100),
        };
        r.register(sleepy.spec(), None, Some(Handler::Native(Arc::new(sleepy))), "t")
            .unwrap();
        Mutex::new(r)
    }

    fn run(reg: &Mutex<Registry<Handler<Fake>>>, host: &mut MockHost, call: &str) -> ToolResult {
        execute_call(
            reg,
            &read(call),
            host,
            &Options {
                hooks: true,
                ..Options::default()
            },
        )
    }

    #[test]
    fn a_safe_tool_runs_at_once() {
        let reg = registry();
        let mut host = MockHost::default();
        let r = run(
            &reg,
            &mut host,
            r#"(:id "c1" :name "read_it" :arguments (:path "/tmp/a"))"#,
        );
        assert!(r.success, "{r:?}");
        assert_eq!((r.id.as_deref(), r.content.as_str()), (Some("c1"), "path=/tmp/a"));
        assert!(r.approved && host.asked.is_empty() && host.audit.is_empty());
        assert_eq!(host.events, vec!["before:read_it:", "after:read_it:true"]);
        assert_eq!(r.safety_level, Some(SafetyLevel::Safe));
    }

    #[test]
    fn arguments_may_be_json_text() {
        let reg = registry();
        let mut host = MockHost::default();
        let r = run(
            &reg,
            &mut host,
            r#"(:id "c1" :name "read_it" :arguments "{\"path\": \"/x\", \"all\": true}")"#,
        );
        assert!(r.success, "{r:?}");
        assert_eq!(host.ran[0].get("all"), Some(&json!(true)));
    }

    #[test]
    fn invalid_arguments_never_reach_approval_or_handler() {
        let reg = registry();
        let cases = [
            (
                r#"(:id "1" :name "read_it" :arguments (:n 3))"#,
                "Invalid arguments for read_it: field 'path': required field is missing",
            ),
            (
                r#"(:id "2" :name "read_it" :arguments (:path 3))"#,
                "Invalid arguments for read_it: field 'path': expected type \"string\", got the number 3",
            ),
            (
                r#"(:id "3" :name "read_it" :arguments (:path "p" :mode "c"))"#,
                "Invalid arguments for read_it: field 'mode':",
            ),
            (
                r#"(:id "4" :name "read_it" :arguments (:path "p" :n 1.5))"#,
                "Invalid arguments for read_it: field 'n':",
            ),
            (
                r#"(:id "5" :name "read_it" :arguments "[1,2]")"#,
                "Invalid arguments for read_it: arguments must be an object",
            ),
            (
                r#"(:id "6" :name "read_it" :arguments "{oops")"#,
                "Invalid arguments for read_it: invalid JSON",
            ),
            (
                r#"(:id "7" :name "write_it" :arguments (:path 1))"#,
                "Invalid arguments for write_it: field 'path'",
            ),
        ];
        for (call, expected) in cases {
            let mut host = MockHost {
                decision: Some(Ok(Value::keyword("approved"))),
                ..Default::default()
            };
            let r = run(&reg, &mut host, call);
            assert!(!r.success);
            assert!(r.content.starts_with(expected), "{call}\n  gave: {}", r.content);
            assert!(host.asked.is_empty() && host.ran.is_empty(), "{call}");
        }
        assert_eq!(reg.lock().unwrap().metrics()["read_it"].failures, 6);
    }

    #[test]
    fn nil_reads_as_false_for_a_boolean_parameter() {
        let reg = registry();
        let mut host = MockHost::default();
        let r = run(
            &reg,
            &mut host,
            r#"(:id "1" :name "read_it" :arguments (:path "p" :all nil))"#,
        );
        assert!(r.success, "{r:?}");
        assert_eq!(host.ran[0].get("all"), Some(&json!(false)));
    }

    #[test]
    fn a_dangerous_tool_runs_only_when_explicitly_approved() {
        let reg = registry();
        let call = r#"(:id "w" :name "write_it" :arguments (:path "/etc/x"))"#;
        let deny_cases: Vec<(Option<Result<Value, ApprovalFailure>>, &str)> = vec![
            (None, "Tool execution denied: no approval function is set"),
            (Some(Ok(Value::keyword("denied"))), "User denied tool execution"),
            (
                Some(Ok(read(r#"(:denied "not that file")"#))),
                "User denied tool execution: not that file",
            ),
            (
                Some(Ok(Value::symbol("t"))),
                "Tool execution denied: the approval function returned t",
            ),
            (
                Some(Ok(Value::Null)),
                "Tool execution denied: the approval function returned",
            ),
            (Some(Ok(read("(:approved)"))), "Tool execution denied"),
            (Some(Ok(Value::keyword("yes"))), "Tool execution denied"),
            (
                Some(Err(ApprovalFailure::Quit)),
                "Tool execution denied: the user quit (C-g)",
            ),
            (
                Some(Err(ApprovalFailure::Signalled("oops".into()))),
                "Tool execution denied: the approval function failed: oops",
            ),
        ];
        for (decision, expected) in deny_cases {
            let mut host = MockHost {
                decision,
                ..Default::default()
            };
            let r = run(&reg, &mut host, call);
            assert!(!r.success && !r.approved, "{expected}");
            assert!(
                r.content.starts_with(expected),
                "gave {} expected {expected}",
                r.content
            );
            assert!(host.ran.is_empty(), "the handler must not run: {expected}");
            assert_eq!(host.audit.len(), 1);
            assert_eq!(host.audit[0].event, "denied");
        }
        let mut host = MockHost {
            decision: Some(Ok(Value::keyword("approved"))),
            ..Default::default()
        };
        let r = run(&reg, &mut host, call);
        assert!(r.success && r.approved);
        assert_eq!(host.asked, vec!["write_it"]);
        assert_eq!(
            host.audit.iter().map(|a| (a.event, a.decision)).collect::<Vec<_>>(),
            vec![("run", "approved"), ("result", "approved")]
        );
        assert_eq!(reg.lock().unwrap().metrics()["write_it"].denials, 9);
    }

    #[test]
    fn modified_arguments_are_validated_again_and_reported() {
        let reg = registry();
        let call = r#"(:id "w" :name "write_it" :arguments (:path "/etc/x"))"#;
        let mut host = MockHost {
            decision: Some(Ok(read(r#"(:modified (:path "/tmp/safe"))"#))),
            ..Default::default()
        };
        let r = run(&reg, &mut host, call);
        assert!(r.success && r.modified);
        assert!(
            r.content.starts_with("Note: the user modified the arguments"),
            "{}",
            r.content
        );
        assert!(r.content.ends_with("path=/tmp/safe"));
        let mut host = MockHost {
            decision: Some(Ok(read(r#"(:modified (:path 42))"#))),
            ..Default::default()
        };
        let r = run(&reg, &mut host, call);
        assert!(!r.success && host.ran.is_empty());
        assert!(
            r.content.contains("Invalid arguments for write_it: field 'path'"),
            "{}",
            r.content
        );
    }

    #[test]
    fn confirmed_levels_ask_and_dangerous_always_asks() {
        let reg = registry();
        let cautious = r#"(:id "e" :name "eval_it" :arguments (:path "x"))"#;
        let confirm = |levels: Vec<SafetyLevel>| Options {
            confirm: levels,
            ..Options::default()
        };
        let mut host = MockHost {
            decision: Some(Ok(Value::keyword("denied"))),
            ..Default::default()
        };
        let r = execute_call(&reg, &read(cautious), &mut host, &confirm(vec![SafetyLevel::Cautious]));
        assert_eq!((r.success, r.content.as_str()), (false, "User denied tool execution"));
        assert_eq!(host.asked, vec!["eval_it"]);
        assert!(host.ran.is_empty());
        // Not listed: runs unasked.
        let mut host = MockHost {
            decision: Some(Ok(Value::keyword("denied"))),
            ..Default::default()
        };
        assert!(execute_call(&reg, &read(cautious), &mut host, &confirm(vec![])).success);
        assert!(host.asked.is_empty());
        // Dangerous is asked even when the list leaves it out.
        let mut host = MockHost {
            decision: Some(Ok(Value::keyword("denied"))),
            ..Default::default()
        };
        let r = execute_call(
            &reg,
            &read(r#"(:id "w" :name "write_it" :arguments (:path "/x"))"#),
            &mut host,
            &confirm(vec![]),
        );
        assert!(!r.success && host.ran.is_empty());
        assert_eq!(host.asked, vec!["write_it"]);
        // A confirmed safe tool is audited, with its decision.
        let mut host = MockHost {
            decision: Some(Ok(Value::keyword("approved"))),
            ..Default::default()
        };
        let r = execute_call(
            &reg,
            &read(r#"(:id "s" :name "read_it" :arguments (:path "/x"))"#),
            &mut host,
            &confirm(vec![SafetyLevel::Safe]),
        );
        assert!(r.success);
        assert_eq!(
            host.audit.iter().map(|a| (a.event, a.decision)).collect::<Vec<_>>(),
            vec![("run", "approved"), ("result", "approved")]
        );
    }

    #[test]
    fn cautious_tools_run_and_are_audited() {
        let reg = registry();
        let mut host = MockHost::default();
        let r = run(&reg, &mut host, r#"(:id "e" :name "eval_it" :arguments (:path "x"))"#);
        assert!(r.success && host.asked.is_empty());
        assert_eq!(
            host.audit.iter().map(|a| (a.event, a.decision)).collect::<Vec<_>>(),
            vec![("run", "auto"), ("result", "auto")]
        );
        assert!(host.audit[1].to_json_line().contains("\"tool\":\"eval_it\""));
    }

    #[test]
    fn failures_are_results() {
        let reg = registry();
        let mut host = MockHost::default();
        let r = run(&reg, &mut host, r#"(:id "x" :name "nope" :arguments nil)"#);
        assert_eq!((r.success, r.content.as_str()), (false, "Unknown tool: nope"));
        let r = run(&reg, &mut host, r#"(:id "x" :name "boom")"#);
        assert_eq!(r.content, "Tool error: boom");
        assert_eq!(host.events.last().map(String::as_str), Some("error:boom:false"));
        let r = run(&reg, &mut host, r#"(:id "x" :name "orphan")"#);
        assert_eq!(r.content, "Tool orphan has no handler");
        let r = run(&reg, &mut host, r#"(1 2 3)"#);
        assert!(r.content.starts_with("Invalid tool call: expected a plist"));
        let r = run(&reg, &mut host, r#"(:name "read_it")"#);
        assert_eq!(r.content, "Invalid tool call: missing :id");
        let r = run(&reg, &mut host, r#"(:id "q")"#);
        assert_eq!(
            (r.id.as_deref(), r.content.as_str()),
            (Some("q"), "Invalid tool call: missing :name")
        );
        reg.lock().unwrap().set_enabled("read_it", false).unwrap();
        let r = run(&reg, &mut host, r#"(:id "x" :name "read_it" :arguments (:path "p"))"#);
        assert_eq!(r.content, "Tool read_it is disabled");
    }

    #[test]
    fn results_are_capped_with_a_marker() {
        let reg = registry();
        let mut host = MockHost::default();
        let r = execute_call(
            &reg,
            &read(r#"(:id "b" :name "big")"#),
            &mut host,
            &Options {
                max_result_chars: 10,
                ..Options::default()
            },
        );
        assert!(
            r.content
                .starts_with("xxxxxxxxxx\n[... truncated: 40 of 50 characters cut"),
            "{}",
            r.content
        );
        assert_eq!(truncate("héllo".into(), 10), "héllo");
        assert_eq!(truncate("héllo".into(), 0), "héllo");
        assert!(truncate("héllo".into(), 2).starts_with("hé\n"));
    }

    #[test]
    fn native_tools_run_with_their_timeout() {
        let reg = registry();
        let mut host = MockHost::default();
        let r = run(
            &reg,
            &mut host,
            r#"(:id "n" :name "sleepy" :arguments (:ms 1 :text "ok"))"#,
        );
        assert_eq!((r.success, r.content.as_str()), (true, "ok"));
        let r = run(&reg, &mut host, r#"(:id "n" :name "sleepy" :arguments (:ms 5000))"#);
        assert_eq!(
            (r.success, r.content.as_str()),
            (false, "Tool sleepy timed out after 0.1 s")
        );
    }

    #[test]
    fn decisions() {
        assert_eq!(parse_decision(&Value::keyword("approved")), Decision::Approved);
        assert_eq!(parse_decision(&read("(:denied)")), Decision::Denied(None));
        assert_eq!(parse_decision(&read(r#"(:denied "")"#)), Decision::Denied(None));
        assert_eq!(
            parse_decision(&read("(:modified (:a 1))")),
            Decision::Modified(read("(:a 1)"))
        );
        assert!(matches!(parse_decision(&read("(:modified)")), Decision::Invalid(_)));
        assert!(matches!(
            parse_decision(&read("(:approved :really)")),
            Decision::Invalid(_)
        ));
    }
}
