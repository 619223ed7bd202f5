//! Property tests of the executor: random values through its parsers, random sequences of
//! resumes through its state machine.

use std::sync::Mutex;

use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::{Map, Value as Json};

use crate::executor::{
    self, parse_call, parse_decision, AuditRecord, Call, CallContext, Decision, Effects, Handler, HandlerOutcome,
    LispTool, Options, Phase, Stage, Step, ToolResult,
};
use crate::registry::Registry;
use crate::sexp::proptests::{json, sexp, sexp_upto};
use crate::sexp::Sexp;
use crate::spec::ToolSpec;

// ---------------------------------------------------------------------------------------------
// The executor's parsers

/// Plists shaped like tool calls, with random values in each field.
fn call_like() -> impl Strategy<Value = Sexp> {
    let field = prop_oneof![
        Just("id"),
        Just("name"),
        Just("arguments"),
        Just("client"),
        Just("other")
    ];
    vec((field, sexp_upto(3)), 0..5)
        .prop_map(|pairs| Sexp::list(pairs.into_iter().flat_map(|(k, v)| [Sexp::keyword(k), v]).collect()))
}

fn schema() -> impl Strategy<Value = Json> {
    prop_oneof![
        Just(serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})),
        Just(serde_json::json!({"type": "object", "properties": {
            "n": {"type": "integer", "minimum": 0}, "flag": {"type": "boolean"},
            "list": {"type": "array", "items": {"type": "string"}},
            "obj": {"type": "object", "properties": {"a": {"type": "number"}}},
            "choice": {"enum": ["a", "b"]}}, "additionalProperties": false})),
        Just(serde_json::json!({"type": "object"})),
        json(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn parsing_calls_and_decisions_never_panics(v in sexp(), c in call_like()) {
        for x in [&v, &c] {
            if let Ok(call) = parse_call(x) {
                prop_assert!(!call.name.is_empty());
            }
            match parse_decision(x) {
                Decision::Invalid(why) => prop_assert!(!why.is_empty()),
                Decision::Modified(_) => prop_assert!(matches!(x.list_items(), Some([_, _]))),
                _ => {}
            }
        }
    }

    #[test]
    fn arguments_convert_and_validate_without_panicking(
        args in prop_oneof![sexp(), any::<String>().prop_map(Sexp::Str), json().prop_map(|j| Sexp::Str(j.to_string()))],
        schema in schema(),
    ) {
        let converted = executor::arguments_to_json(Some(&args), &schema, 1 << 20);
        if let Ok(map) = converted {
            if let Ok(validator) = jsonschema::validator_for(&schema) {
                if let Err(message) = executor::validate_arguments("tool", &validator, &Json::Object(map)) {
                    prop_assert!(message.starts_with("Invalid arguments for tool: field '"), "{}", message);
                    prop_assert!(message.chars().count() < 1000, "{}", message);
                }
            }
        } else if let Err(message) = converted {
            prop_assert!(!message.is_empty());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The executor's state machine

/// The host's functions in these tests: just numbers.
type L = u32;
type Shared = Mutex<Registry<Handler<L>>>;

#[derive(Default)]
struct Recorder {
    audits: Vec<AuditRecord>,
}

impl Effects for Recorder {
    fn audit(&mut self, record: &AuditRecord) {
        self.audits.push(record.clone());
    }
    fn observe(&mut self, _phase: Phase, _tool: &str, _args: &Map<String, Json>, _result: Option<&ToolResult>) {}
}

/// The tools a call may name: safe, dangerous, guarded, self-reviewing.
const TOOLS: [(&str, &str, bool, bool); 4] = [
    ("safe_tool", ":safe", false, false),
    ("danger_tool", ":dangerous", false, false),
    ("guarded_tool", ":safe", true, false),
    ("review_tool", ":dangerous", false, true),
];

fn spec_of(name: &str, level: &str, version: u32, review: bool) -> ToolSpec {
    let approval = if review { ":review" } else { ":prompt" };
    let text = format!(
        r#"(:name "{name}" :description "A tool." :version "{version}" :safety-level {level}
           :approval {approval} :parameters ((:name "path" :type :string :description "P")))"#
    );
    ToolSpec::from_sexp(&Sexp::parse(&text).expect("spec reads")).expect("spec is valid")
}

fn register(reg: &Shared, i: usize, version: u32) {
    let (name, level, guarded, review) = TOOLS[i];
    let handler = Handler::Lisp(LispTool {
        run: 1,
        guard: guarded.then_some(2),
        asynchronous: false,
    });
    let mut r = reg.lock().unwrap_or_else(|p| p.into_inner());
    let _ = r.register(
        spec_of(name, level, version, review),
        None,
        Some(handler),
        "t",
        |_, _| false,
    );
}

fn registry() -> Shared {
    let reg = Mutex::new(Registry::new());
    for i in 0..TOOLS.len() {
        register(&reg, i, 1);
    }
    reg
}

/// What a driver (or a careless one) may do next.
#[derive(Debug, Clone)]
enum Op {
    Guarded(Result<Option<String>, String>),
    Decide(Decision),
    Finish(HandlerOutcome),
    Cancel(String),
    /// The registry changes meanwhile: disable, enable, remove or replace a tool.
    Disable(usize),
    Enable(usize),
    Remove(usize),
    Replace(usize),
}

fn op() -> impl Strategy<Value = Op> {
    let text = "[a-z ]{0,12}";
    prop_oneof![
        prop_oneof![Just(Ok(None)), text.prop_map(|s| Ok(Some(s))), text.prop_map(Err)].prop_map(Op::Guarded),
        prop_oneof![
            Just(Decision::Approved),
            // Only a call that needs no decision may run on it: never one that needs approval.
            Just(Decision::Auto),
            text.prop_map(|s| Decision::Denied(Some(s))),
            Just(Decision::Denied(None)),
            text.prop_map(Decision::Invalid),
            sexp_upto(2).prop_map(Decision::Modified),
            Just(Decision::Modified(
                Sexp::parse(r#"(:path "/elsewhere")"#).expect("reads")
            )),
        ]
        .prop_map(Op::Decide),
        prop_oneof![
            text.prop_map(HandlerOutcome::Success),
            text.prop_map(HandlerOutcome::Failure),
            text.prop_map(HandlerOutcome::Denied),
            text.prop_map(HandlerOutcome::Cancelled),
        ]
        .prop_map(Op::Finish),
        text.prop_map(Op::Cancel),
        (0..TOOLS.len()).prop_map(Op::Disable),
        (0..TOOLS.len()).prop_map(Op::Enable),
        (0..TOOLS.len()).prop_map(Op::Remove),
        (0..TOOLS.len()).prop_map(Op::Replace),
    ]
}

fn options() -> impl Strategy<Value = Options> {
    (any::<bool>(), any::<bool>(), any::<bool>(), 0usize..50).prop_map(
        |(confirm_safe, audit_all, consult_rules, max)| Options {
            max_result_chars: max,
            confirm: if confirm_safe {
                vec![crate::spec::SafetyLevel::Safe]
            } else {
                Vec::new()
            },
            audit_all,
            consult_rules,
            ..Options::default()
        },
    )
}

proptest! {
    // Each case builds a registry (four schemas compiled): fewer cases, longer sequences.
    #![proptest_config(ProptestConfig::with_cases(100))]

    /// Any sequence of resumes, in any order, with the registry changing in between: no panic,
    /// at most one result per call, nothing accepted after it, and the handler handed out at
    /// most once, only with the approval its level needs.
    #[test]
    fn the_call_state_machine_gives_one_result(
        tool in 0..TOOLS.len() + 1,
        args in prop_oneof![
            Just(Sexp::parse(r#"(:path "/tmp/x")"#).expect("reads")),
            sexp_upto(2),
        ],
        opts in options(),
        ops in vec(op(), 0..16),
    ) {
        let reg = registry();
        let name = TOOLS.get(tool).map_or("no_such_tool", |t| t.0);
        let call_sexp = Sexp::List(vec![
            Sexp::keyword("id"), Sexp::string("c1"),
            Sexp::keyword("name"), Sexp::string(name),
            Sexp::keyword("arguments"), args,
        ]);
        let mut fx = Recorder::default();
        let (mut call, step) = Call::start(&reg, &call_sexp, &CallContext::default(), &opts, &mut fx);
        let mut results = 0;
        let mut runs = 0;
        let mut approved = false;
        let record = |step: &Step<L>, approved: bool, results: &mut usize, runs: &mut usize| match step {
            Step::Done(r) => {
                *results += 1;
                assert_eq!(r.id.as_deref(), Some("c1"));
                assert!(r.content.chars().count() <= opts.max_result_chars.max(1) + 200 || opts.max_result_chars == 0);
            }
            Step::Run(_) => {
                *runs += 1;
                let (_, level, _, review) = TOOLS[tool];
                let needs = level == ":dangerous" && !review
                    || opts.confirm.contains(&crate::spec::SafetyLevel::Safe) && level == ":safe";
                assert!(!needs || approved, "ran without the approval it needs");
            }
            Step::Ask(ask) => assert_eq!(ask.tool, name),
            Step::Guard(g) => assert_eq!(*g, 2),
        };
        record(&step, approved, &mut results, &mut runs);
        for op in ops {
            let done_before = call.stage() == Stage::Done;
            let outcome: Option<Result<Step<L>, executor::StageError>> = match op {
                Op::Guarded(answer) => Some(call.guarded(&reg, answer, &opts, &mut fx)),
                Op::Decide(d) => {
                    let approving = matches!(d, Decision::Approved | Decision::Modified(_));
                    let r = call.decide(&reg, d, &opts, &mut fx);
                    if approving && r.is_ok() {
                        approved = true;
                    }
                    Some(r)
                }
                Op::Finish(o) => Some(call.finish(&reg, o, &opts, &mut fx).map(Step::Done)),
                Op::Cancel(reason) => Some(call.cancel(&reg, &reason, &opts, &mut fx).map(Step::Done)),
                Op::Disable(i) | Op::Enable(i) => {
                    let enable = matches!(op, Op::Enable(_));
                    let _ = reg.lock().unwrap().set_enabled(TOOLS[i].0, enable);
                    None
                }
                Op::Remove(i) => {
                    let _ = reg.lock().unwrap().remove(TOOLS[i].0);
                    None
                }
                Op::Replace(i) => {
                    register(&reg, i, 2);
                    None
                }
            };
            match outcome {
                Some(Ok(step)) => {
                    prop_assert!(!done_before, "a call that was done took another resume");
                    record(&step, approved, &mut results, &mut runs);
                }
                Some(Err(e)) => prop_assert!(!e.to_string().is_empty()),
                None => {}
            }
            prop_assert!(results <= 1, "two results for one call");
            prop_assert!(runs <= 1, "the handler was handed out twice");
            if results == 1 {
                prop_assert_eq!(call.stage(), Stage::Done);
            }
        }
    }
}
