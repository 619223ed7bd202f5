use super::*;
use crate::native::tests::Sleepy;
use crate::registry::RegisterOutcome;
use crate::spec::ToolSpec;
use serde_json::json;
use std::time::Duration;

type Args = Map<String, Json>;
type RunFn = Box<dyn Fn(&Args) -> HandlerOutcome + Send + Sync>;
type GuardFn = Box<dyn Fn(&Args) -> Result<Option<String>, String> + Send + Sync>;

/// Host functions in tests are plain Rust closures over the arguments.
enum Fake {
    Run(RunFn),
    Guard(GuardFn),
}

type F = Arc<Fake>;
type Reg = Arc<Mutex<Registry<Handler<F>>>>;

fn run_fn(f: impl Fn(&Map<String, Json>) -> HandlerOutcome + Send + Sync + 'static) -> F {
    Arc::new(Fake::Run(Box::new(f)))
}

fn guard_fn(f: impl Fn(&Map<String, Json>) -> Result<Option<String>, String> + Send + Sync + 'static) -> F {
    Arc::new(Fake::Guard(Box::new(f)))
}

fn lisp(run: F, guard: Option<F>) -> Handler<F> {
    Handler::Lisp(LispTool {
        run,
        guard,
        asynchronous: false,
    })
}

#[derive(Default)]
struct MockHost {
    decision: Option<Result<Sexp, ApprovalFailure>>,
    asked: Vec<Ask>,
    ran: Vec<Map<String, Json>>,
    guarded: Vec<Map<String, Json>>,
    events: Vec<String>,
    audit: Vec<AuditRecord>,
    during_ask: Option<Box<dyn FnMut()>>,
    /// Whether this host runs no native tools, as the Emacs module.
    no_native: bool,
}

impl Effects for MockHost {
    fn audit(&mut self, record: &AuditRecord) {
        self.audit.push(record.clone());
    }
    fn observe(&mut self, phase: Phase, tool: &str, _args: &Map<String, Json>, result: Option<&ToolResult>) {
        self.events.push(format!(
            "{}:{tool}:{}",
            phase.as_str(),
            result.map(|r| r.success.to_string()).unwrap_or_default()
        ));
    }
}

impl Host for MockHost {
    type Lisp = F;
    fn guard(&mut self, guard: &F, args: &Map<String, Json>) -> Result<GuardAnswer, String> {
        self.guarded.push(args.clone());
        match &**guard {
            Fake::Guard(g) => g(args).map(GuardAnswer::from),
            Fake::Run(_) => Err("not a guard".into()),
        }
    }
    fn approve(&mut self, ask: &Ask, _call: &Call) -> Result<Sexp, ApprovalFailure> {
        self.asked.push(ask.clone());
        if let Some(f) = self.during_ask.as_mut() {
            f();
        }
        self.decision
            .clone()
            .unwrap_or(Ok(Sexp::keyword("no-approval-function")))
    }
    fn run_handler(&mut self, tool: &LispTool<F>, call: &Call) -> HandlerOutcome {
        self.ran.push(call.args().clone());
        match &*tool.run {
            Fake::Run(f) => f(call.args()),
            Fake::Guard(_) => HandlerOutcome::Failure("not a handler".into()),
        }
    }
    fn run_native_tool(&mut self, tool: &dyn crate::native::Tool, call: &Call) -> HandlerOutcome {
        if self.no_native {
            native_not_run(call)
        } else {
            run_native(tool, call, || false)
        }
    }
}

fn read(s: &str) -> Sexp {
    Sexp::parse(s).expect("test input parses")
}

fn spec(def: &str) -> ToolSpec {
    ToolSpec::from_sexp(&read(def)).expect("valid spec")
}

fn same(a: &Handler<F>, b: &Handler<F>) -> bool {
    match (a, b) {
        (Handler::Lisp(a), Handler::Lisp(b)) => Arc::ptr_eq(&a.run, &b.run),
        _ => false,
    }
}

fn add(r: &Reg, def: &str, h: Option<Handler<F>>) -> u64 {
    let mut reg = r.lock().unwrap();
    let s = spec(def);
    let name = s.name.clone();
    reg.register(s, None, h, "t", same).unwrap();
    reg.entry(&name).unwrap().id
}

fn echo() -> F {
    run_fn(|a| HandlerOutcome::Success(format!("path={}", a.get("path").and_then(Json::as_str).unwrap_or("?"))))
}

fn registry() -> Reg {
    let r: Reg = Arc::new(Mutex::new(Registry::new()));
    add(
        &r,
        r#"(:name "read_it" :description "d" :parameters ((:name "path" :type :string) (:name "n" :type :integer)
            (:name "mode" :type :string :enum ("a" "b")) (:name "all" :type :boolean)
            (:name "list" :type :array :items (:type :integer))) :required ("path"))"#,
        Some(lisp(echo(), None)),
    );
    add(
        &r,
        r#"(:name "eval_it" :description "d" :parameters ((:name "path" :type :string)) :safety-level :cautious)"#,
        Some(lisp(echo(), None)),
    );
    add(
        &r,
        r#"(:name "write_it" :description "d" :parameters ((:name "path" :type :string)) :required ("path") :safety-level :dangerous)"#,
        Some(lisp(echo(), None)),
    );
    add(
        &r,
        r#"(:name "boom" :description "d")"#,
        Some(lisp(
            run_fn(|_| HandlerOutcome::Failure("Tool error: boom".into())),
            None,
        )),
    );
    add(
        &r,
        r#"(:name "big" :description "d")"#,
        Some(lisp(run_fn(|_| HandlerOutcome::Success("x".repeat(50))), None)),
    );
    add(&r, r#"(:name "orphan" :description "d")"#, None);
    add(
        &r,
        r#"(:name "guarded" :description "d" :parameters ((:name "path" :type :string)) :required ("path"))"#,
        Some(lisp(
            echo(),
            Some(guard_fn(|a| match a.get("path").and_then(Json::as_str) {
                Some(p) if p.starts_with("/secret") => Ok(Some(format!("{p} is sensitive"))),
                Some("/broken") => Err("cannot tell".into()),
                _ => Ok(None),
            })),
        )),
    );
    add(
        &r,
        r#"(:name "review_it" :description "d" :parameters ((:name "path" :type :string)) :safety-level :dangerous :approval :review)"#,
        Some(lisp(
            run_fn(|a| match a.get("path").and_then(Json::as_str) {
                Some("reject") => HandlerOutcome::Denied("Applied 0 of 2 hunks: the user rejected the edit".into()),
                _ => HandlerOutcome::Success("Applied 2 of 2 hunks".into()),
            }),
            None,
        )),
    );
    let sleepy = Sleepy {
        timeout: Duration::from_millis(100),
    };
    r.lock()
        .unwrap()
        .register(sleepy.spec(), None, Some(Handler::Native(Arc::new(sleepy))), "t", same)
        .unwrap();
    r
}

fn opts() -> Options {
    Options {
        hooks: true,
        ..Options::default()
    }
}

fn run_with(reg: &Reg, host: &mut MockHost, call: &str, o: &Options) -> ToolResult {
    execute_call(reg, &read(call), &CallContext::default(), host, o)
}

fn run(reg: &Reg, host: &mut MockHost, call: &str) -> ToolResult {
    run_with(reg, host, call, &opts())
}

fn approving() -> MockHost {
    MockHost {
        decision: Some(Ok(Sexp::keyword("approved"))),
        ..Default::default()
    }
}

fn events(host: &MockHost) -> Vec<(&'static str, &'static str)> {
    host.audit.iter().map(|a| (a.event, a.decision)).collect()
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
    assert_eq!((r.safety_level, r.status), (Some(SafetyLevel::Safe), Status::Success));
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
            "Invalid arguments for read_it: field 'mode': the string \"c\" is not one of the allowed values [\"a\",\"b\"]",
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
        (
            r#"(:id "8" :name "read_it" :arguments (:path "p" :list ("x")))"#,
            "Invalid arguments for read_it: field 'list[0]': expected type \"integer\", got the string \"x\"",
        ),
    ];
    for (call, expected) in cases {
        let mut host = approving();
        let r = run(&reg, &mut host, call);
        assert!(!r.success);
        assert!(r.content.starts_with(expected), "{call}\n  gave: {}", r.content);
        assert!(host.asked.is_empty() && host.ran.is_empty(), "{call}");
    }
    assert_eq!(reg.lock().unwrap().metrics()["read_it"].failures, 7);
}

#[test]
fn a_huge_invalid_argument_is_described_briefly() {
    let reg = registry();
    let mut host = MockHost::default();
    let call = format!(
        r#"(:id "h" :name "read_it" :arguments (:path ({})))"#,
        "1 ".repeat(200_000)
    );
    let r = run(&reg, &mut host, &call);
    assert_eq!(
        r.content,
        "Invalid arguments for read_it: field 'path': expected type \"string\", got an array of 200000 element(s)"
    );
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
    let deny_cases: Vec<(Option<Result<Sexp, ApprovalFailure>>, &str)> = vec![
        (None, "Tool execution denied: no approval function is set"),
        (Some(Ok(Sexp::keyword("denied"))), "User denied tool execution"),
        (
            Some(Ok(read(r#"(:denied "not that file")"#))),
            "User denied tool execution: not that file",
        ),
        (
            Some(Ok(Sexp::T)),
            "Tool execution denied: the approval function returned t",
        ),
        (
            Some(Ok(Sexp::Nil)),
            "Tool execution denied: the approval function returned",
        ),
        (Some(Ok(read("(:approved)"))), "Tool execution denied"),
        (Some(Ok(Sexp::keyword("yes"))), "Tool execution denied"),
        (Some(Ok(Sexp::Symbol(":approved".into()))), "Tool execution denied"),
        (
            Some(Err(ApprovalFailure::Quit)),
            "Tool execution denied: the user quit (C-g)",
        ),
        (
            Some(Err(ApprovalFailure::Signalled("oops".into()))),
            "Tool execution denied: the approval function failed: oops",
        ),
    ];
    let n = deny_cases.len() as u64;
    for (decision, expected) in deny_cases {
        let mut host = MockHost {
            decision,
            ..Default::default()
        };
        let r = run(&reg, &mut host, call);
        assert!(!r.success && !r.approved, "{expected}");
        assert_eq!(r.status, Status::Denied);
        assert!(
            r.content.starts_with(expected),
            "gave {} expected {expected}",
            r.content
        );
        assert!(host.ran.is_empty(), "the handler must not run: {expected}");
        assert_eq!(events(&host), vec![("denied", "denied")]);
    }
    let mut host = approving();
    let r = run(&reg, &mut host, call);
    assert!(r.success && r.approved);
    assert_eq!(
        host.asked.iter().map(|a| a.tool.as_str()).collect::<Vec<_>>(),
        vec!["write_it"]
    );
    assert_eq!(events(&host), vec![("run", "approved"), ("result", "approved")]);
    assert_eq!(reg.lock().unwrap().metrics()["write_it"].denials, n);
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
    assert_eq!(events(&host), vec![("run", "modified"), ("result", "modified")]);
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
    let denying = || MockHost {
        decision: Some(Ok(Sexp::keyword("denied"))),
        ..Default::default()
    };
    let mut host = denying();
    let r = run_with(&reg, &mut host, cautious, &confirm(vec![SafetyLevel::Cautious]));
    assert_eq!((r.success, r.content.as_str()), (false, "User denied tool execution"));
    assert_eq!(host.asked.len(), 1);
    assert!(host.ran.is_empty());
    let mut host = denying();
    assert!(run_with(&reg, &mut host, cautious, &confirm(vec![])).success);
    assert!(host.asked.is_empty());
    let mut host = denying();
    let r = run_with(
        &reg,
        &mut host,
        r#"(:id "w" :name "write_it" :arguments (:path "/x"))"#,
        &confirm(vec![]),
    );
    assert!(!r.success && host.ran.is_empty());
    assert_eq!(host.asked[0].tool, "write_it");
    let mut host = approving();
    let r = run_with(
        &reg,
        &mut host,
        r#"(:id "s" :name "read_it" :arguments (:path "/x"))"#,
        &confirm(vec![SafetyLevel::Safe]),
    );
    assert!(r.success);
    assert_eq!(events(&host), vec![("run", "approved"), ("result", "approved")]);
}

#[test]
fn cautious_tools_run_and_are_audited_and_audit_all_covers_safe_ones() {
    let reg = registry();
    let mut host = MockHost::default();
    let r = run(&reg, &mut host, r#"(:id "e" :name "eval_it" :arguments (:path "x"))"#);
    assert!(r.success && host.asked.is_empty());
    assert_eq!(events(&host), vec![("run", "auto"), ("result", "auto")]);
    assert!(host.audit[1].to_json_line().contains("\"tool\":\"eval_it\""));
    let mut host = MockHost::default();
    let all = Options {
        audit_all: true,
        ..Options::default()
    };
    let r = execute_call(
        &reg,
        &read(r#"(:id "s" :name "read_it" :arguments (:path "x") :client "claude-code 2.1")"#),
        &CallContext::default(),
        &mut host,
        &all,
    );
    assert!(r.success);
    assert_eq!(events(&host), vec![("run", "auto"), ("result", "auto")]);
    assert!(host.audit[0].to_json_line().contains("\"client\":\"claude-code 2.1\""));
}

#[test]
fn an_unknown_tool_is_audited_when_every_call_is() {
    let reg = registry();
    let mut host = MockHost::default();
    let r = run(&reg, &mut host, r#"(:id "u" :name "nope" :arguments (:x 1))"#);
    assert_eq!((r.success, r.content.as_str()), (false, "Unknown tool: nope"));
    assert!(
        host.audit.is_empty(),
        "not audited by default, like a safe call that failed validation"
    );
    let all = Options {
        audit_all: true,
        ..Options::default()
    };
    let r = execute_call(
        &reg,
        &read(r#"(:id "u" :name "nope" :arguments (:x 1) :client "claude-code 2.1")"#),
        &CallContext::default(),
        &mut host,
        &all,
    );
    assert_eq!((r.success, r.content.as_str()), (false, "Unknown tool: nope"));
    assert_eq!(events(&host), vec![("result", "auto")]);
    let line = host.audit[0].to_json_line();
    let record: Json = serde_json::from_str(&line).unwrap();
    assert_eq!(record["tool"], "nope");
    assert_eq!(record["client"], "claude-code 2.1");
    assert_eq!(record["success"], false);
    assert_eq!(record["arguments"], json!({"x": 1}));
    assert_eq!(record["content"], "Unknown tool: nope");
    assert!(record.get("safety_level").is_none(), "{line}");
}

#[test]
fn failures_are_results() {
    let reg = registry();
    let mut host = MockHost::default();
    let r = run(&reg, &mut host, r#"(:id "x" :name "nope" :arguments nil)"#);
    assert_eq!((r.success, r.content.as_str()), (false, "Unknown tool: nope"));
    let r = run(&reg, &mut host, r#"(:id "x" :name "boom")"#);
    assert_eq!((r.content.as_str(), r.approved), ("Tool error: boom", true));
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
    let o = Options {
        max_result_chars: 10,
        ..Options::default()
    };
    let r = run_with(&reg, &mut host, r#"(:id "b" :name "big")"#, &o);
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
fn a_host_that_runs_no_native_tools_answers_with_a_failure() {
    let reg = registry();
    let mut host = MockHost {
        no_native: true,
        ..Default::default()
    };
    let audit_all = Options {
        audit_all: true,
        ..opts()
    };
    let r = run_with(
        &reg,
        &mut host,
        r#"(:id "n" :name "sleepy" :arguments (:ms 5000))"#,
        &audit_all,
    );
    assert_eq!(
        (r.success, r.content.as_str()),
        (
            false,
            "Tool sleepy is a Rust tool, which this Emacs module does not run"
        )
    );
    assert_eq!(r.id.as_deref(), Some("n"));
    assert_eq!(events(&host), vec![("run", "auto"), ("result", "auto")]);
    assert_eq!(host.audit[1].success, Some(false));
}

#[test]
fn decisions() {
    assert_eq!(parse_decision(&Sexp::keyword("approved")), Decision::Approved);
    assert_eq!(parse_decision(&Sexp::keyword("auto")), Decision::Auto);
    assert!(matches!(parse_decision(&read("(:auto)")), Decision::Invalid(_)));
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
    // Only a keyword approves: a symbol that merely prints like one does not.
    assert!(matches!(
        parse_decision(&Sexp::Symbol(":approved".into())),
        Decision::Invalid(_)
    ));
}

#[test]
fn rule_decisions_name_their_rule() {
    assert_eq!(
        parse_decision(&read(r#"(:rule :approved "allow read_it under ~/src/**")"#)),
        Decision::Rule {
            allow: true,
            rule: "allow read_it under ~/src/**".into()
        }
    );
    assert_eq!(
        parse_decision(&read(r#"(:rule :denied "deny write_it")"#)),
        Decision::Rule {
            allow: false,
            rule: "deny write_it".into()
        }
    );
    // A rule decision must say which rule decided, and what it decided.
    for bad in [
        r#"(:rule :approved "")"#,
        r#"(:rule :approved nil)"#,
        r#"(:rule :approved 7)"#,
        r#"(:rule :maybe "r")"#,
        r#"(:rule "r" :approved)"#,
        r#"(:rule :approved)"#,
    ] {
        assert!(matches!(parse_decision(&read(bad)), Decision::Invalid(_)), "{bad}");
    }
    // A long description is shortened: the audit log repeats it.
    let long = format!(r#"(:rule :denied "{}")"#, "x".repeat(2000));
    match parse_decision(&read(&long)) {
        Decision::Rule { rule, .. } => assert!(rule.chars().count() < 510),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_rule_allows_or_denies_and_the_audit_names_it() {
    let reg = registry();
    let call = r#"(:id "w" :name "write_it" :arguments (:path "/src/x"))"#;
    let mut host = MockHost {
        decision: Some(Ok(read(r#"(:rule :approved "allow write_it under /src/**")"#))),
        ..Default::default()
    };
    let r = run(&reg, &mut host, call);
    assert!(r.success && r.approved);
    assert_eq!(host.ran.len(), 1);
    assert_eq!(events(&host), vec![("run", "rule"), ("result", "rule")]);
    assert!(host
        .audit
        .iter()
        .all(|a| a.rule.as_deref() == Some("allow write_it under /src/**")));
    let line = host.audit[1].to_json_line();
    assert!(
        line.contains(r#""decision":"rule","rule":"allow write_it under /src/**""#),
        "{line}"
    );

    let mut host = MockHost {
        decision: Some(Ok(read(r#"(:rule :denied "deny write_it under /src/**")"#))),
        ..Default::default()
    };
    let r = run(&reg, &mut host, call);
    assert_eq!((r.success, r.approved, r.status), (false, false, Status::Denied));
    assert_eq!(
        r.content,
        "Tool execution denied by the user's approval rule: deny write_it under /src/**"
    );
    assert!(host.ran.is_empty());
    assert_eq!(events(&host), vec![("denied", "rule")]);
    assert_eq!(host.audit[0].rule.as_deref(), Some("deny write_it under /src/**"));
    assert_eq!(reg.lock().unwrap().metrics()["write_it"].denials, 1);

    // A user's decision names no rule.
    let mut host = approving();
    run(&reg, &mut host, call);
    assert!(host.audit.iter().all(|a| a.rule.is_none()));
    assert!(!host.audit[0].to_json_line().contains("\"rule\""));
}

/// The registry changing while the user decides: nothing that changed runs.
#[test]
fn a_tool_changed_while_the_user_decides_does_not_run() {
    type Change = fn(&Reg);
    let changes: Vec<(&str, Change)> = vec![
        ("was disabled while the user was deciding", |r: &Reg| {
            r.lock().unwrap().set_enabled("write_it", false).unwrap();
        }),
        ("was removed while the user was deciding", |r: &Reg| {
            r.lock().unwrap().remove("write_it");
        }),
        (
            "was replaced by another definition while the user was deciding",
            |r: &Reg| {
                add(
                    r,
                    r#"(:name "write_it" :version "2" :description "d" :parameters ((:name "path" :type :string)) :safety-level :dangerous)"#,
                    Some(lisp(run_fn(|_| HandlerOutcome::Success("DELETED".into())), None)),
                );
            },
        ),
        ("was removed while the user was deciding", |r: &Reg| {
            let mut snapshot = r.lock().unwrap().snapshot();
            snapshot.tools.retain(|t| t.spec.name != "write_it");
            r.lock().unwrap().restore(snapshot).unwrap();
        }),
        (
            "was replaced by another definition while the user was deciding",
            |r: &Reg| {
                // The same definition with another handler is another tool.
                add(
                    r,
                    r#"(:name "write_it" :description "d" :parameters ((:name "path" :type :string)) :required ("path") :safety-level :dangerous)"#,
                    Some(lisp(run_fn(|_| HandlerOutcome::Success("DELETED".into())), None)),
                );
            },
        ),
    ];
    for (expected, change) in changes {
        let reg = registry();
        let inner = reg.clone();
        let mut host = approving();
        host.during_ask = Some(Box::new(move || change(&inner)));
        let r = run(&reg, &mut host, r#"(:id "w" :name "write_it" :arguments (:path "/x"))"#);
        assert!(!r.success, "{expected}: {r:?}");
        assert_eq!(
            r.content,
            format!(
                "Tool write_it {expected}; it did not run{}",
                if expected.starts_with("was replaced") {
                    " (call it again)"
                } else {
                    ""
                }
            )
        );
        assert!(host.ran.is_empty(), "{expected}");
    }
}

#[test]
fn a_guard_asks_and_its_denial_is_a_denial() {
    let reg = registry();
    let mut host = MockHost::default();
    let r = run(
        &reg,
        &mut host,
        r#"(:id "g" :name "guarded" :arguments (:path "/project/a"))"#,
    );
    assert!(r.success && host.asked.is_empty(), "no reason: runs unasked");
    assert!(host.audit.is_empty());

    let mut host = MockHost {
        decision: Some(Ok(Sexp::keyword("denied"))),
        ..Default::default()
    };
    let r = run(
        &reg,
        &mut host,
        r#"(:id "g" :name "guarded" :arguments (:path "/secret/key"))"#,
    );
    assert_eq!((r.success, r.approved, r.status), (false, false, Status::Denied));
    assert_eq!(host.asked[0].reason.as_deref(), Some("/secret/key is sensitive"));
    assert_eq!(host.asked[0].level, SafetyLevel::Safe);
    assert!(host.ran.is_empty());
    assert_eq!(events(&host), vec![("denied", "denied")]);
    assert_eq!(host.audit[0].reason.as_deref(), Some("/secret/key is sensitive"));
    assert_eq!(reg.lock().unwrap().metrics()["guarded"].denials, 1);

    let mut host = approving();
    let r = run(
        &reg,
        &mut host,
        r#"(:id "g" :name "guarded" :arguments (:path "/secret/key"))"#,
    );
    assert!(r.success && r.approved);
    assert_eq!(events(&host), vec![("run", "approved"), ("result", "approved")]);

    let mut host = MockHost::default();
    let r = run(
        &reg,
        &mut host,
        r#"(:id "g" :name "guarded" :arguments (:path "/broken"))"#,
    );
    assert_eq!(r.content, "Tool error: the guard of guarded failed: cannot tell");
    assert!(host.ran.is_empty());
}

#[test]
fn modified_arguments_are_guarded_again_but_not_asked_again() {
    let reg = registry();
    let mut host = MockHost {
        decision: Some(Ok(read(r#"(:modified (:path "/secret/other"))"#))),
        ..Default::default()
    };
    let r = run(
        &reg,
        &mut host,
        r#"(:id "g" :name "guarded" :arguments (:path "/secret/key"))"#,
    );
    assert!(r.success, "{r:?}");
    assert_eq!(host.asked.len(), 1);
    assert_eq!(host.guarded.len(), 2, "the guard saw the new arguments");
    assert_eq!(host.ran[0].get("path"), Some(&json!("/secret/other")));
    assert_eq!(host.audit[0].reason.as_deref(), Some("/secret/other is sensitive"));
}

#[test]
fn a_review_decides_for_itself_and_its_rejection_is_a_denial() {
    let reg = registry();
    // No prompt before the review: its review is its approval.
    let mut host = MockHost::default();
    let r = run(
        &reg,
        &mut host,
        r#"(:id "p" :name "review_it" :arguments (:path "ok"))"#,
    );
    assert!(r.success);
    assert!(host.asked.is_empty(), "asked before its review: {:?}", host.asked);
    assert_eq!(events(&host), vec![("run", "review"), ("result", "review")]);
    assert_eq!(host.audit[0].how, "its review is its approval: the user reviews it");
    let mut host = MockHost::default();
    let r = run(
        &reg,
        &mut host,
        r#"(:id "p" :name "review_it" :arguments (:path "reject"))"#,
    );
    assert_eq!((r.success, r.approved, r.status), (false, false, Status::Denied));
    assert_eq!(r.content, "Applied 0 of 2 hunks: the user rejected the edit");
    assert_eq!(events(&host), vec![("run", "review"), ("result", "review")]);
    assert_eq!(host.audit[1].status, Some(Status::Denied));
    assert_eq!(host.audit[1].how, "the user's review: nothing accepted");
    assert_eq!(reg.lock().unwrap().metrics()["review_it"].denials, 1);
    // With rules, it stops where a deny rule may refuse it, marked a review.
    let mut host = MockHost {
        decision: Some(Ok(Sexp::keyword("auto"))),
        ..Default::default()
    };
    let o = Options {
        consult_rules: true,
        ..opts()
    };
    let r = run_with(
        &reg,
        &mut host,
        r#"(:id "p" :name "review_it" :arguments (:path "ok"))"#,
        &o,
    );
    assert!(r.success);
    assert!(host.asked[0].optional && host.asked[0].review && !host.asked[0].review_rule);
    assert_eq!(events(&host), vec![("run", "review"), ("result", "review")]);
    // A handler redefined since it was registered: asked as any dangerous call.
    let mut host = approving();
    let o = Options {
        review_intact: false,
        ..opts()
    };
    run_with(
        &reg,
        &mut host,
        r#"(:id "p" :name "review_it" :arguments (:path "ok"))"#,
        &o,
    );
    assert!(!host.asked[0].review);
    // Another tool under the same name, without the property, is not trusted with a review.
    add(
        &reg,
        r#"(:name "review_it" :version "9" :description "d" :parameters ((:name "path" :type :string)) :safety-level :dangerous)"#,
        Some(lisp(echo(), None)),
    );
    let mut host = approving();
    run(&reg, &mut host, r#"(:id "p" :name "review_it" :arguments (:path "x"))"#);
    assert!(!host.asked[0].review);
}

/// A tool whose review or an allow rule approves it (agent_edit), guarded for protected files.
fn review_or_rule_registry() -> Reg {
    let reg = registry();
    add(
        &reg,
        r#"(:name "edit_it" :description "d" :parameters ((:name "path" :type :string))
            :safety-level :dangerous :approval :review-or-rule)"#,
        Some(lisp(
            run_fn(|_| HandlerOutcome::Success("reviewed".into())),
            Some(Arc::new(Fake::Guard(Box::new(|a| {
                Ok(a.get("path")
                    .and_then(Json::as_str)
                    .filter(|p| p.ends_with(".mcp.json"))
                    .map(|p| format!("{p} is protected")))
            })))),
        )),
    );
    reg
}

#[test]
fn an_allow_rule_may_stand_for_the_review_but_never_for_a_protected_file() {
    let reg = review_or_rule_registry();
    let o = Options {
        consult_rules: true,
        ..opts()
    };
    // The rule allows it: run unreviewed, audited as the rule's decision.
    let mut host = MockHost {
        decision: Some(Ok(read(r#"(:rule :approved "allow edit_it under /w/")"#))),
        ..Default::default()
    };
    let r = run_with(
        &reg,
        &mut host,
        r#"(:id "e" :name "edit_it" :arguments (:path "/w/f"))"#,
        &o,
    );
    assert!(r.success);
    assert!(host.asked[0].optional && host.asked[0].review_rule);
    assert_eq!(events(&host), vec![("run", "rule"), ("result", "rule")]);
    assert_eq!(
        host.audit[1].how,
        "allowed unreviewed by the approval rule: allow edit_it under /w/"
    );
    // A deny rule refuses it unshown.
    let mut host = MockHost {
        decision: Some(Ok(read(r#"(:rule :denied "deny edit_it under /w/")"#))),
        ..Default::default()
    };
    let r = run_with(
        &reg,
        &mut host,
        r#"(:id "e" :name "edit_it" :arguments (:path "/w/f"))"#,
        &o,
    );
    assert_eq!(r.status, Status::Denied);
    assert!(host.ran.is_empty());
    assert_eq!(host.audit[0].how, "denied by the approval rule: deny edit_it under /w/");
}

#[test]
fn a_protected_file_is_reviewed_without_a_prompt_and_no_rule_approves_it() {
    let reg = registry();
    add(
        &reg,
        r#"(:name "edit_it" :description "d" :parameters ((:name "path" :type :string))
            :safety-level :dangerous :approval :review-or-rule)"#,
        Some(lisp(
            run_fn(|_| HandlerOutcome::Success("reviewed".into())),
            Some(guard_fn(|_| Ok(None))),
        )),
    );
    // A guard that marks the file protected.
    let mut host = MockHost::default();
    let o = opts();
    let call = read(r#"(:id "e" :name "edit_it" :arguments (:path "/w/.mcp.json"))"#);
    let (mut c, step) = Call::start(&reg, &call, &CallContext::default(), &o, &mut host);
    assert!(matches!(step, Step::Guard(_)));
    let answer = GuardAnswer {
        reason: Some("/w/.mcp.json can start commands".into()),
        protected: true,
        file: None,
        ask: false,
    };
    let step = c.guarded(&reg, Ok(answer.clone()), &o, &mut host).unwrap();
    assert!(matches!(step, Step::Run(_)), "protected, yet reviewed without a prompt");
    assert_eq!(c.decision(), "review");
    // With rules, an allow rule that comes all the same is refused.
    let o = Options {
        consult_rules: true,
        ..opts()
    };
    let (mut c, _) = Call::start(&reg, &call, &CallContext::default(), &o, &mut host);
    let step = c.guarded(&reg, Ok(answer), &o, &mut host).unwrap();
    let Step::Ask(ask) = step else {
        panic!("no optional ask")
    };
    assert!(ask.protected && ask.optional);
    let step = c
        .decide(
            &reg,
            Decision::Rule {
                allow: true,
                rule: "allow edit_it".into(),
            },
            &o,
            &mut host,
        )
        .unwrap();
    let Step::Done(r) = step else { panic!("ran") };
    assert_eq!(r.status, Status::Denied);
}

#[test]
fn the_audit_says_which_hunks_and_who_withdrew_a_review() {
    let reg = registry();
    let mut host = MockHost::default();
    let o = opts();
    let call = read(r#"(:id "p" :name "review_it" :arguments (:path "ok"))"#);
    let (mut c, step) = Call::start(&reg, &call, &CallContext::default(), &o, &mut host);
    assert!(matches!(step, Step::Run(_)));
    c.reviewed(ReviewOutcome {
        accepted: vec![1, 3],
        edited: vec![],
        rejected: vec![2],
    })
    .unwrap();
    c.finish(&reg, HandlerOutcome::Success("applied".into()), &o, &mut host)
        .unwrap();
    let record = &host.audit[1];
    assert_eq!(
        record.how,
        "the user's review: hunks of 3: 1 and 3 accepted, 2 rejected"
    );
    assert_eq!(record.review.as_ref().unwrap().rejected, vec![2]);
    let json: Json = serde_json::from_str(&record.to_json_line()).unwrap();
    assert_eq!(json["review"]["accepted"], json!([1, 3]));
    assert_eq!(
        record.summary(),
        "review_it ok: done; the user's review: hunks of 3: 1 and 3 accepted, 2 rejected"
    );
    // Withdrawn while its review is open: the record says so, and why.
    let mut host = MockHost::default();
    let (mut c, _) = Call::start(&reg, &call, &CallContext::default(), &o, &mut host);
    c.cancel(&reg, "the agent exited", &o, &mut host).unwrap();
    let record = &host.audit[1];
    assert_eq!((record.event, record.status), ("result", Some(Status::Cancelled)));
    assert_eq!(record.withdrawn.as_deref(), Some("the agent exited"));
    assert_eq!(
        record.how,
        "its review is its approval; withdrawn while its review was open: the agent exited"
    );
    // A review's outcome is taken only while the handler runs.
    assert!(c.reviewed(ReviewOutcome::default()).is_err());
}

#[test]
fn the_audit_says_who_decided() {
    let reg = registry();
    let mut host = MockHost {
        decision: Some(Ok(read(r#"(:granted "write_it for gptel, this session")"#))),
        ..Default::default()
    };
    let r = run(&reg, &mut host, r#"(:id "d" :name "write_it" :arguments (:path "/x"))"#);
    assert!(r.success, "{r:?}");
    assert_eq!(host.audit[0].decision, "granted");
    assert_eq!(
        host.audit[0].how,
        "allowed by the user's standing approval: write_it for gptel, this session"
    );
    let mut host = approving();
    run(&reg, &mut host, r#"(:id "d" :name "write_it" :arguments (:path "/x"))"#);
    assert_eq!(host.audit[1].how, "the user approved it at the prompt");
    let mut host = MockHost {
        decision: Some(Ok(read(r#"(:denied "not now")"#))),
        ..Default::default()
    };
    run(&reg, &mut host, r#"(:id "d" :name "write_it" :arguments (:path "/x"))"#);
    assert_eq!(host.audit[0].how, "the user denied it at the prompt: not now");
    assert_eq!(
        host.audit[0].summary(),
        "write_it /x: denied; the user denied it at the prompt: not now"
    );
}

#[test]
fn a_call_whose_agent_stopped_waiting_is_audited_as_timed_out() {
    let reg = registry();
    let mut fx = MockHost::default();
    let o = Options::default();
    let (mut call, step) = Call::start(
        &reg,
        &read(r#"(:id "w" :name "write_it" :arguments (:path "/x") :client "claude (own tools)")"#),
        &CallContext::default(),
        &o,
        &mut fx,
    );
    assert!(matches!(step, Step::Ask(_)));
    let r = call.time_out(&reg, 595, &o, &mut fx).unwrap();
    assert_eq!((r.success, r.status), (false, Status::Cancelled));
    assert!(
        r.content
            .starts_with("Tool call timed out: Nobody answered in Emacs within 595 s"),
        "{}",
        r.content
    );
    assert!(r.content.ends_with("write_it did not run"), "{}", r.content);
    assert_eq!(events(&fx), vec![("timed-out", "timeout")]);
    assert!(call.time_out(&reg, 595, &o, &mut fx).is_err());
    assert!(call.cancel(&reg, "again", &o, &mut fx).is_err());
}

#[test]
fn the_steps_can_be_driven_one_at_a_time_and_cancelled() {
    let reg = registry();
    let mut fx = MockHost::default();
    let o = Options::default();
    let (mut call, step) = Call::start(
        &reg,
        &read(r#"(:id "w" :name "write_it" :arguments (:path "/x") :client "gptel")"#),
        &CallContext::default(),
        &o,
        &mut fx,
    );
    let Step::Ask(ask) = step else {
        panic!("the call must ask first")
    };
    assert_eq!((ask.client.as_deref(), call.stage()), (Some("gptel"), Stage::Asking));
    assert_eq!(ask.tool_id, reg.lock().unwrap().entry("write_it").unwrap().id);
    // A resume that does not fit the stage is an error, not a second result.
    assert!(call
        .finish(&reg, HandlerOutcome::Success("x".into()), &o, &mut fx)
        .is_err());
    assert!(call.guarded(&reg, Ok(None), &o, &mut fx).is_err());
    let r = call
        .cancel(&reg, "the user cancelled pending calls", &o, &mut fx)
        .unwrap();
    assert_eq!((r.success, r.status), (false, Status::Cancelled));
    assert_eq!(
        r.content,
        "Tool call cancelled: the user cancelled pending calls; write_it did not run"
    );
    assert_eq!(events(&fx), vec![("cancelled", "none")]);
    assert!(call.decide(&reg, Decision::Approved, &o, &mut fx).is_err());
    assert!(call.cancel(&reg, "again", &o, &mut fx).is_err());
    assert_eq!(reg.lock().unwrap().metrics()["write_it"].cancelled, 1);

    // Approved, then driven to a run whose outcome the driver reports.
    let (mut call, _) = Call::start(
        &reg,
        &read(r#"(:id "w2" :name "write_it" :arguments (:path "/y"))"#),
        &CallContext::default(),
        &o,
        &mut fx,
    );
    let step = call.decide(&reg, Decision::Approved, &o, &mut fx).unwrap();
    assert!(matches!(step, Step::Run(Handler::Lisp(_))));
    assert_eq!(call.stage(), Stage::Running);
    assert!(call.approved_by_user());
    let r = call
        .finish(
            &reg,
            HandlerOutcome::Failure("Refused: the file changed".into()),
            &o,
            &mut fx,
        )
        .unwrap();
    assert_eq!((r.success, r.approved, r.status), (false, true, Status::Failure));
}

#[test]
fn an_identical_registration_with_the_same_handler_keeps_its_identity() {
    let reg = registry();
    let (id, handler) = {
        let r = reg.lock().unwrap();
        let e = r.entry("write_it").unwrap();
        (e.id, e.handler.unwrap())
    };
    let mut r = reg.lock().unwrap();
    let s = r.entry("write_it").unwrap().registration.spec.clone();
    let (_, outcome, _) = r.register(s, None, Some(handler), "t", same).unwrap();
    assert_eq!(outcome, RegisterOutcome::Unchanged);
    assert_eq!(r.entry("write_it").unwrap().id, id);
}

fn consulting() -> Options {
    Options {
        consult_rules: true,
        ..opts()
    }
}

/// The result without its timing, which differs between runs.
fn untimed(mut r: ToolResult) -> ToolResult {
    r.execution_time_ms = 0.0;
    r
}

/// The audit records without their time and timing.
fn untimed_audit(host: &MockHost) -> Vec<String> {
    host.audit
        .iter()
        .map(|a| {
            let mut a = a.clone();
            a.time = String::new();
            a.execution_time_ms = a.execution_time_ms.map(|_| 0.0);
            a.to_json_line()
        })
        .collect()
}

#[test]
fn only_the_rules_option_stops_calls_that_need_no_decision() {
    let reg = registry();
    let unasked = [
        r#"(:id "s" :name "read_it" :arguments (:path "/a"))"#,
        r#"(:id "c" :name "eval_it" :arguments (:path "/a"))"#,
        r#"(:id "g" :name "guarded" :arguments (:path "/plain"))"#,
    ];
    for call in unasked {
        // Without rules, nothing asks.
        let mut host = MockHost::default();
        assert!(run(&reg, &mut host, call).success, "{call}");
        assert!(host.asked.is_empty(), "{call}");
        // With them, the call stops at an optional ask.
        let mut host = MockHost::default();
        let (mut c, step) = Call::start(&reg, &read(call), &CallContext::default(), &consulting(), &mut host);
        let step = match step {
            // The guard runs first, and said nothing.
            Step::Guard(_) => c.guarded(&reg, Ok(None), &consulting(), &mut host).unwrap(),
            other => other,
        };
        let Step::Ask(ask) = step else {
            panic!("{call} must stop at an optional ask")
        };
        assert!(ask.optional && ask.reason.is_none(), "{call}: {ask:?}");
        assert_eq!(c.stage(), Stage::Asking);
        assert!(host.audit.is_empty() && host.ran.is_empty());
    }
    // What needs a decision is asked as before, never optional.
    for (call, o) in [
        (r#"(:id "w" :name "write_it" :arguments (:path "/a"))"#, consulting()),
        (
            r#"(:id "g" :name "guarded" :arguments (:path "/secret/k"))"#,
            consulting(),
        ),
        (
            r#"(:id "c" :name "eval_it" :arguments (:path "/a"))"#,
            Options {
                confirm: vec![SafetyLevel::Cautious],
                ..consulting()
            },
        ),
    ] {
        let mut host = MockHost::default();
        run_with(&reg, &mut host, call, &o);
        assert_eq!(host.asked.len(), 1, "{call}");
        assert!(!host.asked[0].optional, "{call}");
    }
}

#[test]
fn an_auto_decision_runs_the_call_exactly_as_without_rules() {
    let reg = registry();
    let calls = [
        r#"(:id "s" :name "read_it" :arguments (:path "/a"))"#,
        r#"(:id "c" :name "eval_it" :arguments (:path "/a"))"#,
        r#"(:id "g" :name "guarded" :arguments (:path "/plain"))"#,
        r#"(:id "b" :name "boom")"#,
        r#"(:id "o" :name "orphan")"#,
    ];
    for audit_all in [false, true] {
        for call in calls {
            let plain = Options { audit_all, ..opts() };
            let mut without = MockHost::default();
            let expected = run_with(&reg, &mut without, call, &plain);
            let mut with = MockHost {
                decision: Some(Ok(Sexp::keyword("auto"))),
                ..Default::default()
            };
            let got = run_with(
                &reg,
                &mut with,
                call,
                &Options {
                    consult_rules: true,
                    ..plain
                },
            );
            assert_eq!(with.asked.len(), 1, "{call}");
            assert!(with.asked[0].optional);
            assert_eq!(untimed(got), untimed(expected), "{call}");
            assert_eq!(untimed_audit(&with), untimed_audit(&without), "{call}");
            assert_eq!(with.events, without.events, "{call}");
            assert_eq!(with.ran, without.ran, "{call}");
        }
    }
    // The cautious call is audited as it always was: decided "auto", not "approved".
    let mut host = MockHost {
        decision: Some(Ok(Sexp::keyword("auto"))),
        ..Default::default()
    };
    let r = run_with(&reg, &mut host, calls[1], &consulting());
    assert!(r.success && r.approved);
    assert_eq!(events(&host), vec![("run", "auto"), ("result", "auto")]);
}

#[test]
fn an_auto_decision_is_no_decision_for_a_call_that_needs_one() {
    let reg = registry();
    for o in [opts(), consulting()] {
        let mut host = MockHost {
            decision: Some(Ok(Sexp::keyword("auto"))),
            ..Default::default()
        };
        let r = run_with(
            &reg,
            &mut host,
            r#"(:id "w" :name "write_it" :arguments (:path "/a"))"#,
            &o,
        );
        assert_eq!((r.success, r.approved, r.status), (false, false, Status::Denied));
        assert!(r.content.contains("answered :auto"), "{}", r.content);
        assert!(host.ran.is_empty());
        assert_eq!(events(&host), vec![("denied", "denied")]);
    }
}

#[test]
fn rules_deny_or_ask_about_a_call_that_needs_no_decision() {
    let reg = registry();
    let safe = r#"(:id "s" :name "read_it" :arguments (:path "/a"))"#;
    // A deny rule: nothing runs, and the denial is audited, safe tool or not.
    let mut host = MockHost {
        decision: Some(Ok(read(r#"(:rule :denied "deny read_it")"#))),
        ..Default::default()
    };
    let r = run_with(&reg, &mut host, safe, &consulting());
    assert_eq!((r.success, r.approved, r.status), (false, false, Status::Denied));
    assert_eq!(
        r.content,
        "Tool execution denied by the user's approval rule: deny read_it"
    );
    assert!(host.ran.is_empty());
    assert_eq!(events(&host), vec![("denied", "rule")]);
    assert_eq!(reg.lock().unwrap().metrics()["read_it"].denials, 1);
    // An ask rule, and the user approves: audited as the user's approval.
    let mut host = approving();
    let r = run_with(&reg, &mut host, safe, &consulting());
    assert!(r.success && r.approved);
    assert_eq!(events(&host), vec![("run", "approved"), ("result", "approved")]);
    // ... and the handler is told the user approved it.
    let mut fx = MockHost::default();
    let (mut call, step) = Call::start(&reg, &read(safe), &CallContext::default(), &consulting(), &mut fx);
    assert!(matches!(step, Step::Ask(Ask { optional: true, .. })));
    assert!(!call.approved_by_user());
    call.decide(&reg, Decision::Approved, &consulting(), &mut fx).unwrap();
    assert!(call.approved_by_user());
    // The user refuses.
    let mut host = MockHost {
        decision: Some(Ok(Sexp::keyword("denied"))),
        ..Default::default()
    };
    let r = run_with(&reg, &mut host, safe, &consulting());
    assert_eq!(
        (r.status, r.content.as_str()),
        (Status::Denied, "User denied tool execution")
    );
    assert_eq!(events(&host), vec![("denied", "denied")]);
    // Run without rules, the handler is not told the user approved it.
    let (mut call, _) = Call::start(&reg, &read(safe), &CallContext::default(), &consulting(), &mut fx);
    call.decide(&reg, Decision::Auto, &consulting(), &mut fx).unwrap();
    assert!(!call.approved_by_user());
}

#[test]
fn an_optional_ask_withdrawn_or_outdated() {
    let reg = registry();
    let safe = r#"(:id "s" :name "read_it" :arguments (:path "/a"))"#;
    // Withdrawn while the user was asked (an ask rule): audited like any withdrawn question.
    let mut fx = MockHost::default();
    let (mut call, _) = Call::start(&reg, &read(safe), &CallContext::default(), &consulting(), &mut fx);
    let r = call
        .cancel(&reg, "the client cancelled", &consulting(), &mut fx)
        .unwrap();
    assert_eq!(r.status, Status::Cancelled);
    assert_eq!(events(&fx), vec![("cancelled", "none")]);
    // The tool is looked up again after an auto decision too.
    let (mut call, _) = Call::start(&reg, &read(safe), &CallContext::default(), &consulting(), &mut fx);
    reg.lock().unwrap().set_enabled("read_it", false).unwrap();
    let step = call.decide(&reg, Decision::Auto, &consulting(), &mut fx).unwrap();
    let Step::Done(r) = step else {
        panic!("a disabled tool must not run")
    };
    assert_eq!(r.content, "Tool read_it was disabled meanwhile; it did not run");
    assert!(fx.ran.is_empty());
}

#[test]
fn parse_call_refuses_an_id_or_client_too_long_to_echo() {
    let call = |id: &str, client: &str| {
        Sexp::List(vec![
            Sexp::Keyword("id".into()),
            Sexp::Str(id.into()),
            Sexp::Keyword("name".into()),
            Sexp::Str("t".into()),
            Sexp::Keyword("client".into()),
            Sexp::Str(client.into()),
        ])
    };
    let ok = "i".repeat(MAX_CALL_LABEL_BYTES);
    assert!(parse_call(&call(&ok, &ok)).is_ok());
    let long = "i".repeat(MAX_CALL_LABEL_BYTES + 1);
    let (id, message) = parse_call(&call(&long, "c")).err().unwrap();
    assert_eq!(id, None);
    assert!(message.contains(":id is 1025 bytes long"), "{message}");
    let (id, message) = parse_call(&call("x", &long)).err().unwrap();
    assert_eq!(id.as_deref(), Some("x"));
    assert!(message.contains(":client is 1025 bytes long"), "{message}");
}

#[test]
fn the_audit_line_shows_hidden_characters_as_escapes() {
    let reg = registry();
    let mut host = MockHost::default();
    let r = run(
        &reg,
        &mut host,
        "(:id \"e\" :name \"eval_it\" :arguments (:path \"hi\u{202e} \u{2066}x\u{200b}\u{2028}\") :client \"c\u{2067}d\")",
    );
    assert!(r.success);
    let line = host.audit[0].to_json_line();
    assert!(!line.chars().any(crate::visible::is_hidden), "{line}");
    assert!(line.contains(r#""path":"hi\u202e \u2066x\u200b\u2028""#), "{line}");
    assert!(line.contains(r#""client":"c\u2067d""#), "{line}");
    // A JSON reader gets the strings back as they were.
    let back: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(back["arguments"]["path"], "hi\u{202e} \u{2066}x\u{200b}\u{2028}");
}

/// Start the guarded call on PATH and answer its guard with ANSWER; return the call and its ask.
fn protected_ask(reg: &Reg, host: &mut MockHost, answer: GuardAnswer) -> (Call, Ask) {
    let call = read(r#"(:id "p" :name "guarded" :arguments (:path "/proj/.mcp.json"))"#);
    let (mut c, step) = Call::start(reg, &call, &CallContext::default(), &consulting(), host);
    assert!(matches!(step, Step::Guard(_)));
    let step = c.guarded(reg, Ok(answer), &consulting(), host).unwrap();
    let Step::Ask(ask) = step else {
        panic!("a protected call must be asked about")
    };
    (c, ask)
}

#[test]
fn a_protected_call_is_asked_and_no_rule_approves_it() {
    let reg = registry();
    let answer = GuardAnswer {
        reason: Some("/real/proj/.mcp.json is an agent's settings".into()),
        protected: true,
        file: Some("/real/proj/.mcp.json".into()),
        ask: false,
    };
    // The ask says so and names the pinned file, and it is never optional.
    let mut host = MockHost::default();
    let (mut c, ask) = protected_ask(&reg, &mut host, answer.clone());
    assert!(ask.protected && !ask.optional, "{ask:?}");
    assert_eq!(ask.file.as_deref(), Some("/real/proj/.mcp.json"));
    assert!(c.protected());
    // An allow rule's decision does not run it: denied, saying why.
    let step = c
        .decide(
            &reg,
            Decision::Rule {
                allow: true,
                rule: "allow guarded under /real/proj".into(),
            },
            &consulting(),
            &mut host,
        )
        .unwrap();
    let Step::Done(result) = step else { panic!("must end") };
    assert!(!result.success && result.status == Status::Denied, "{result:?}");
    assert!(result.content.contains("cannot approve it"), "{}", result.content);
    assert!(result.content.contains("an agent's settings"), "{}", result.content);
    assert!(host.ran.is_empty());
    // A deny rule still denies.
    let (mut c, _) = protected_ask(&reg, &mut host, answer.clone());
    let step = c
        .decide(
            &reg,
            Decision::Rule {
                allow: false,
                rule: "deny guarded".into(),
            },
            &consulting(),
            &mut host,
        )
        .unwrap();
    assert!(matches!(step, Step::Done(ToolResult { success: false, .. })));
    // The user's approval runs it.
    let (mut c, _) = protected_ask(&reg, &mut host, answer);
    let step = c.decide(&reg, Decision::Approved, &consulting(), &mut host).unwrap();
    assert!(matches!(step, Step::Run(_)), "the user's approval must run it");
    // Protected without a reason still gives one.
    let (_, ask) = protected_ask(
        &reg,
        &mut host,
        GuardAnswer {
            protected: true,
            ..GuardAnswer::default()
        },
    );
    assert!(
        ask.reason.as_deref().is_some_and(|r| r.contains("protected")),
        "{ask:?}"
    );
}

#[test]
fn undeclared_arguments_are_refused_by_name_before_any_decision() {
    let reg = registry();
    let mut host = MockHost {
        decision: Some(Ok(Sexp::keyword("approved"))),
        ..MockHost::default()
    };
    // An undeclared "dir" before "path": nothing is asked, nothing runs, both extras are named.
    let r = run(
        &reg,
        &mut host,
        r#"(:id "1" :name "write_it" :arguments (:dir "~/bin" :path "/p/ls" :mode "x"))"#,
    );
    assert!(!r.success);
    assert!(
        r.content.contains("undeclared arguments \"dir\", \"mode\""),
        "{}",
        r.content
    );
    assert!(r.content.contains("write_it takes only path"), "{}", r.content);
    assert!(host.asked.is_empty() && host.ran.is_empty());
    // The same as JSON text, and for a tool without parameters.
    let r = run(
        &reg,
        &mut host,
        r#"(:id "2" :name "read_it" :arguments "{\"path\": \"/p\", \"dir\": \"/etc\"}")"#,
    );
    assert!(r.content.contains("undeclared argument \"dir\""), "{}", r.content);
    let r = run(&reg, &mut host, r#"(:id "3" :name "boom" :arguments (:x 1))"#);
    assert!(r.content.contains("boom takes only no arguments"), "{}", r.content);
    assert!(host.ran.is_empty());
    // The user's modified arguments are held to the same rule.
    let mut host = MockHost {
        decision: Some(Ok(read(r#"(:modified (:path "/p" :dir "/x"))"#))),
        ..MockHost::default()
    };
    let r = run(&reg, &mut host, r#"(:id "4" :name "write_it" :arguments (:path "/p"))"#);
    assert!(
        !r.success && r.content.contains("undeclared argument \"dir\""),
        "{}",
        r.content
    );
    assert!(host.ran.is_empty());
    // A full JSON Schema that does not refuse extra keys keeps its meaning.
    add(
        &reg,
        r#"(:name "open_schema" :description "d" :parameters "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}")"#,
        Some(lisp(echo(), None)),
    );
    let mut host = MockHost::default();
    let r = run(
        &reg,
        &mut host,
        r#"(:id "5" :name "open_schema" :arguments (:a "x" :b "y"))"#,
    );
    assert!(r.success, "{}", r.content);
}

#[test]
fn the_origin_is_the_drivers_and_no_call_or_client_name_changes_it() {
    let reg = registry();
    let mut host = MockHost::default();
    // An MCP client that calls itself gptel, with a call that names gptel too.
    let ctx = CallContext {
        client: Some("gptel (MCP)".into()),
        origin: Origin::mcp("gptel"),
        channel: None,
    };
    let call = read(r#"(:id "1" :name "write_it" :arguments (:path "/p") :client "gptel")"#);
    execute_call(&reg, &call, &ctx, &mut host, &opts());
    let ask = host.asked.pop().expect("asked");
    assert_eq!(ask.origin, Origin::Mcp { name: "gptel".into() });
    assert_eq!(ask.client.as_deref(), Some("gptel (MCP)"));
    // From inside Emacs, the call's own :client still names the bridge.
    let ctx = CallContext {
        client: Some("llm".into()),
        origin: Origin::Emacs,
        channel: None,
    };
    execute_call(&reg, &call, &ctx, &mut host, &opts());
    let ask = host.asked.pop().expect("asked");
    assert_eq!(ask.origin, Origin::Emacs);
    assert_eq!(ask.client.as_deref(), Some("gptel"));
}

#[test]
fn a_call_s_channel_is_its_driver_s_never_its_client_s_name() {
    let reg = registry();
    let o = Options::default();
    let channel = |call: &str, ctx: &CallContext| {
        let mut fx = MockHost::default();
        let (call, _) = Call::start(&reg, &read(call), ctx, &o, &mut fx);
        call.channel().map(str::to_string)
    };
    let named = r#"(:id "1" :name "read_it" :arguments (:path "/p") :client "gptel")"#;
    let unnamed = r#"(:id "1" :name "read_it" :arguments (:path "/p"))"#;
    let mcp = |name: &str, given: Option<&str>| CallContext {
        client: Some(format!("{name} (MCP)")),
        origin: Origin::mcp(name),
        channel: given.map(str::to_string),
    };
    // An MCP client's is what its driver gave, whatever the client or the call say.
    assert_eq!(
        channel(named, &mcp("gptel", Some("session s1"))).as_deref(),
        Some("mcp session s1")
    );
    assert_eq!(
        channel(unnamed, &mcp("other", Some("session s1"))).as_deref(),
        Some("mcp session s1")
    );
    // None given (or an empty one): a fresh channel for each batch, never the user's (None).
    let fresh: Vec<_> = (0..2).map(|_| channel(named, &mcp("gptel", None)).unwrap()).collect();
    assert!(fresh.iter().all(|c| c.starts_with("mcp batch ")), "{fresh:?}");
    assert_ne!(fresh[0], fresh[1]);
    assert!(channel(named, &mcp("gptel", Some("")))
        .unwrap()
        .starts_with("mcp batch "));
    // From Emacs: the bridge's own, by its client (the call's own :client first); the user's
    // own Lisp, with no client, has None.
    let emacs = |client: Option<&str>| CallContext {
        client: client.map(str::to_string),
        origin: Origin::Emacs,
        channel: Some("session s1".into()),
    };
    assert_eq!(channel(named, &emacs(Some("llm"))).as_deref(), Some("emacs gptel"));
    assert_eq!(channel(unnamed, &emacs(Some("llm"))).as_deref(), Some("emacs llm"));
    assert_eq!(channel(unnamed, &emacs(None)), None);
    // A call that fails before it is read keeps the batch's channel too.
    let mut fx = MockHost::default();
    let (call, _) = Call::start(&reg, &read("(:id 5)"), &mcp("x", Some("request 9")), &o, &mut fx);
    assert_eq!(call.channel(), Some("mcp request 9"));
}

#[test]
fn mcp_client_names_are_cleaned_of_what_prints_as_nothing() {
    let name = |s: &str| Origin::mcp(s).mcp_name().map(str::to_string);
    assert_eq!(name("  claude-code \n"), Some("claude-code".into()));
    assert_eq!(name("gp\u{200b}tel\u{202e}\u{2066}\u{7f}\u{85}"), Some("gptel".into()));
    assert_eq!(name("\u{1b}[31m"), Some("[31m".into()));
    assert_eq!(name(""), Some(String::new()));
    assert_eq!(name(&"x".repeat(500)).map(|n| n.len()), Some(MAX_MCP_NAME_CHARS));
    assert_eq!(Origin::Emacs.mcp_name(), None);
    assert_eq!((Origin::Emacs.as_str(), Origin::mcp("a").as_str()), ("emacs", "mcp"));
}

#[test]
fn a_quit_or_an_error_at_the_prompt_is_worded_once_whichever_driver_asked() {
    // The synchronous driver reports an ApprovalFailure; the asynchronous one and
    // `agent-q-request-approval' hand over (:quit) or (:error MESSAGE): one wording.
    let quit = denial_message(&parse_decision(&read("(:quit)")));
    assert_eq!(quit, "Tool execution denied: the user quit (C-g) while being asked");
    assert_eq!(quit, denial_message(&ApprovalFailure::Quit.into()));
    let error = denial_message(&parse_decision(&read(r#"(:error "Broken prompt")"#)));
    assert_eq!(
        error,
        "Tool execution denied: the approval function failed: Broken prompt"
    );
    assert_eq!(
        error,
        denial_message(&ApprovalFailure::Signalled("Broken prompt".into()).into())
    );
    let reg = registry();
    let call = r#"(:id "w" :name "write_it" :arguments (:path "/etc/x"))"#;
    for (answer, failure) in [
        ("(:quit)", ApprovalFailure::Quit),
        (r#"(:error "oops")"#, ApprovalFailure::Signalled("oops".into())),
    ] {
        let mut reported = MockHost {
            decision: Some(Ok(read(answer))),
            ..Default::default()
        };
        let mut failed = MockHost {
            decision: Some(Err(failure)),
            ..Default::default()
        };
        let a = run(&reg, &mut reported, call);
        let b = run(&reg, &mut failed, call);
        assert_eq!((a.status, &a.content), (Status::Denied, &b.content));
        assert!(reported.ran.is_empty() && failed.ran.is_empty());
    }
}

#[test]
fn a_handlers_status_is_read_once() {
    let ok = || Ok("text".to_string());
    assert_eq!(
        handler_outcome(&Sexp::Nil, ok()),
        HandlerOutcome::Success("text".into())
    );
    assert_eq!(
        handler_outcome(&Sexp::keyword("success"), ok()),
        HandlerOutcome::Success("text".into())
    );
    assert_eq!(
        handler_outcome(&Sexp::keyword("failure"), ok()),
        HandlerOutcome::Failure("text".into())
    );
    assert_eq!(
        handler_outcome(&Sexp::keyword("denied"), ok()),
        HandlerOutcome::Denied("text".into())
    );
    assert_eq!(
        handler_outcome(&Sexp::keyword("cancelled"), ok()),
        HandlerOutcome::Cancelled("text".into())
    );
    assert_eq!(
        handler_outcome(&Sexp::keyword("error"), ok()),
        HandlerOutcome::Failure("Tool error: text".into())
    );
    assert_eq!(
        handler_outcome(&Sexp::keyword("done"), ok()),
        HandlerOutcome::Failure(
            "Tool error: the handler answered with the status :done, not :success, :failure, :denied or :cancelled"
                .into()
        )
    );
    assert_eq!(
        handler_outcome(&Sexp::Int(3), ok()),
        HandlerOutcome::Failure(
            "Tool error: the handler answered with the status 3, not :success, :failure, :denied or :cancelled".into()
        )
    );
    // A value that cannot be read fails, whatever the status said.
    assert_eq!(
        handler_outcome(&Sexp::keyword("success"), Err("Tool error: too large".into())),
        HandlerOutcome::Failure("Tool error: too large".into())
    );
}

#[test]
fn a_batch_is_bounded_whichever_driver_runs_it() {
    assert_eq!(batch_length(Some(0)), Ok(0));
    assert_eq!(batch_length(Some(MAX_CALLS)), Ok(MAX_CALLS));
    assert_eq!(
        batch_length(Some(MAX_CALLS + 1)),
        Err(format!(
            "CALLS holds {} calls, more than {MAX_CALLS}; nothing was run",
            MAX_CALLS + 1
        ))
    );
    assert!(batch_length(None).unwrap_err().contains("circular or dotted"));
}

#[test]
fn a_call_read_in_parts_is_checked_as_parse_call_checks_it() {
    let long = "i".repeat(MAX_CALL_LABEL_BYTES + 1);
    for (id, name, client) in [
        (long.as_str(), "t", "c"),
        ("x", "", "c"),
        ("x", "t", long.as_str()),
        ("x", "t", "c"),
    ] {
        let whole = Sexp::List(vec![
            Sexp::keyword("id"),
            Sexp::Str(id.into()),
            Sexp::keyword("name"),
            Sexp::Str(name.into()),
            Sexp::keyword("client"),
            Sexp::Str(client.into()),
        ]);
        let parts = ToolCall::new(Some(id.into()), Some(name.into()), None, Some(client.into()));
        let parsed = parse_call(&whole);
        match (parts, parsed) {
            (Ok(a), Ok(b)) => assert_eq!((a.id, a.name, a.client), (b.id, b.name, b.client)),
            (Err(a), Err(b)) => assert_eq!(a, b),
            (a, b) => panic!("parts gave {a:?}, the whole call {b:?}"),
        }
    }
}

#[test]
fn a_trust_stands_for_the_review_audited_as_trusted_but_never_for_a_protected_file() {
    let reg = review_or_rule_registry();
    let o = Options {
        consult_rules: true,
        ..opts()
    };
    let trust = "trusted until 2026-11-29T02:30:00Z: gemini's edits inside its workspace";
    let mut host = MockHost {
        decision: Some(Ok(read(&format!("(:trusted {trust:?})")))),
        ..Default::default()
    };
    let r = run_with(
        &reg,
        &mut host,
        r#"(:id "e" :name "edit_it" :arguments (:path "/w/f"))"#,
        &o,
    );
    assert!(r.success, "{r:?}");
    assert_eq!(events(&host), vec![("run", "trusted"), ("result", "trusted")]);
    assert_eq!(host.audit[1].how, format!("{trust}; applied without review"));
    assert_eq!(host.audit[1].trusted.as_deref(), Some(trust));
    let json: Json = serde_json::from_str(&host.audit[1].to_json_line()).unwrap();
    assert_eq!(json["trusted"], json!(trust));
    assert_eq!(json["decision"], json!("trusted"));
    assert!(host.audit[1].summary().contains("trusted until 2026-11-29T02:30:00Z"));
    // A trust that arrives for a protected file is refused: the review stays the user's.
    let mut host = MockHost::default();
    let call = read(r#"(:id "e" :name "edit_it" :arguments (:path "/w/.gemini/settings.json"))"#);
    let (mut c, step) = Call::start(&reg, &call, &CallContext::default(), &o, &mut host);
    assert!(matches!(step, Step::Guard(_)));
    let answer = GuardAnswer {
        reason: Some("/w/.gemini/settings.json is an agent's settings".into()),
        protected: true,
        file: None,
        ask: false,
    };
    let Step::Ask(ask) = c.guarded(&reg, Ok(answer), &o, &mut host).unwrap() else {
        panic!("no optional ask")
    };
    assert!(ask.protected);
    let step = c.decide(&reg, Decision::Trusted(trust.into()), &o, &mut host).unwrap();
    let Step::Done(r) = step else { panic!("must end") };
    assert_eq!(r.status, Status::Denied, "{r:?}");
    assert!(host.ran.is_empty());
    assert!(
        host.audit[0].how.contains("cannot approve a protected call"),
        "{}",
        host.audit[0].how
    );
    assert_eq!(host.audit[0].trusted, None);
    // A trust that names nothing is no decision.
    assert!(matches!(
        parse_decision(&read(r#"(:trusted "")"#)),
        Decision::Invalid(_)
    ));
    assert!(matches!(parse_decision(&read("(:trusted 1)")), Decision::Invalid(_)));
}
