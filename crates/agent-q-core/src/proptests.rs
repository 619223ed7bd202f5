//! Property tests: random values through the conversions and the executor's parsers, random
//! sequences of resumes through the executor's state machine.
//!
//! The generators are bounded (depth, elements per level, total size) so `cargo test` stays
//! fast; over-deep values are built separately, a few hundred levels deep.
//!
//! What "exact" means for the s-expression/JSON mapping (see [`crate::sexp`]):
//!
//! - **Sexp → JSON → Sexp** is the identity on the *JSON image*: `nil`, `t`, `:json-false`,
//!   integers, finite floats, strings, vectors of such values, and plists whose keys are
//!   distinct keywords and whose values are such values. Everything else either converts with a
//!   documented loss (other symbols become strings, `:false`/`:null`/`:json-null` become
//!   `false`/`null`, a list that is not a plist becomes an array and comes back a vector, a
//!   plist with a repeated key keeps the last value) or is refused with an error: NaN and
//!   infinities, dotted lists, keywords in value position, nesting deeper than
//!   [`MAX_DEPTH`].
//! - **JSON → Sexp → JSON** is the identity on JSON without empty objects (`{}` becomes `nil`,
//!   which is `null`) and without integers beyond `i64` (they become floats).

use std::collections::BTreeSet;
use std::sync::Mutex;

use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::{Map, Value as Json};

use crate::executor::{
    self, parse_call, parse_decision, AuditRecord, Call, CallContext, Decision, Effects, Handler, HandlerOutcome,
    LispTool, Options, Phase, Stage, Step, ToolResult,
};
use crate::registry::Registry;
use crate::sexp::{self, from_json, to_json, Sexp, MAX_DEPTH};
use crate::spec::ToolSpec;

// ---------------------------------------------------------------------------------------------
// Generators

/// Names that print and read back as themselves: not `nil` or `t`, not numbers.
fn name() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9_-]{0,8}".prop_filter("nil and t are not symbols", |s| s != "nil" && s != "t")
}

fn float() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>(),
        Just(0.0),
        Just(-0.0),
        Just(1e15),
        Just(1e16),
        Just(-1e300),
        Just(1e-7),
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
    ]
}

fn atom() -> impl Strategy<Value = Sexp> {
    prop_oneof![
        Just(Sexp::Nil),
        Just(Sexp::T),
        any::<i64>().prop_map(Sexp::Int),
        float().prop_map(Sexp::Float),
        any::<String>().prop_map(Sexp::Str),
        name().prop_map(Sexp::Symbol),
        name().prop_map(Sexp::Keyword),
        prop_oneof![Just("json-false"), Just("false"), Just("json-null"), Just("null")].prop_map(Sexp::keyword),
    ]
}

/// Any s-expression, nested at most about DEPTH levels.
fn sexp_upto(depth: u32) -> impl Strategy<Value = Sexp> {
    atom().prop_recursive(depth, 64, 6, |inner| {
        prop_oneof![
            vec(inner.clone(), 1..6).prop_map(Sexp::List),
            vec(inner.clone(), 0..6).prop_map(Sexp::Vector),
            // A plist: keyword keys, any values.
            vec((name(), inner.clone()), 1..5)
                .prop_map(|pairs| Sexp::List(pairs.into_iter().flat_map(|(k, v)| [Sexp::Keyword(k), v]).collect())),
            (vec(inner.clone(), 1..4), inner).prop_map(|(items, tail)| match tail {
                // The tail of a dotted list is not a list and not nil.
                Sexp::Nil | Sexp::List(_) | Sexp::Dotted(..) => Sexp::Dotted(items, Box::new(Sexp::Int(0))),
                tail => Sexp::Dotted(items, Box::new(tail)),
            }),
        ]
    })
}

fn sexp() -> impl Strategy<Value = Sexp> {
    sexp_upto(5)
}

/// A value in the JSON image (see the module docs), which must round-trip exactly.
fn exact_sexp() -> impl Strategy<Value = Sexp> {
    let leaf = prop_oneof![
        Just(Sexp::Nil),
        Just(Sexp::T),
        Just(Sexp::keyword("json-false")),
        any::<i64>().prop_map(Sexp::Int),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Sexp::Float),
        any::<String>().prop_map(Sexp::Str),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..6).prop_map(Sexp::Vector),
            proptest::collection::btree_map(any::<String>(), inner, 1..5)
                .prop_map(|m| Sexp::List(m.into_iter().flat_map(|(k, v)| [Sexp::Keyword(k), v]).collect())),
        ]
    })
}

/// Any JSON value, nested at most about 5 levels.
fn json() -> impl Strategy<Value = Json> {
    let leaf = prop_oneof![
        Just(Json::Null),
        any::<bool>().prop_map(Json::Bool),
        any::<i64>().prop_map(Json::from),
        any::<u64>().prop_map(Json::from),
        any::<f64>().prop_filter_map("finite", |f| serde_json::Number::from_f64(f).map(Json::Number)),
        any::<String>().prop_map(Json::String),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..6).prop_map(Json::Array),
            proptest::collection::vec((any::<String>(), inner), 0..5)
                .prop_map(|pairs| Json::Object(pairs.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Whether J maps exactly (module docs): no empty object, no integer beyond i64.
fn json_is_exact(j: &Json) -> bool {
    match j {
        Json::Number(n) => n.is_i64() || n.is_f64(),
        Json::Array(items) => items.iter().all(json_is_exact),
        Json::Object(map) => !map.is_empty() && map.values().all(json_is_exact),
        _ => true,
    }
}

/// V nested N levels deep in WRAP (lists, vectors, plists), built without recursion.
fn nest(n: usize, wrap: fn(Sexp) -> Sexp) -> Sexp {
    let mut v = Sexp::Int(1);
    for _ in 0..n {
        v = wrap(v);
    }
    v
}

/// Drop a value built deeper than MAX_DEPTH without recursing through it.
fn drop_deep(v: Sexp) {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Sexp::List(items) | Sexp::Vector(items) => stack.extend(items),
            Sexp::Dotted(items, tail) => {
                stack.extend(items);
                stack.push(*tail);
            }
            _ => {}
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Classifying a value as the mapping treats it

#[derive(Debug, PartialEq)]
enum Class {
    Exact,
    Lossy,
    Refused,
}

fn classify(v: &Sexp) -> Class {
    if v.depth() > MAX_DEPTH {
        return Class::Refused;
    }
    let mut lossy = false;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Sexp::Nil | Sexp::T | Sexp::Int(_) | Sexp::Str(_) => {}
            Sexp::Float(f) if f.is_finite() => {}
            Sexp::Float(_) | Sexp::Dotted(..) => return Class::Refused,
            Sexp::Symbol(_) => lossy = true,
            Sexp::Keyword(k) => match k.as_str() {
                "json-false" => {}
                "false" | "json-null" | "null" => lossy = true,
                _ => return Class::Refused,
            },
            Sexp::Vector(items) => stack.extend(items),
            Sexp::List(items) => match v.plist_pairs() {
                Some(pairs) => {
                    let keys: BTreeSet<&str> = pairs.iter().map(|(k, _)| *k).collect();
                    lossy |= keys.len() != pairs.len();
                    stack.extend(pairs.iter().map(|(_, x)| *x));
                }
                None => {
                    lossy = true;
                    stack.extend(items);
                }
            },
        }
    }
    if lossy {
        Class::Lossy
    } else {
        Class::Exact
    }
}

/// Whether A and B are equal, floats within lexpr's reading precision.
///
/// lexpr's float reader is not correctly rounded: "-1.513267208427841e-253" reads as
/// -1.5132672084278412e-253, and subnormal magnitudes lose more. Floats are printed exactly
/// (see `floats_print_exactly`); only lexpr's reading of them is approximate.
fn same_but_float_rounding(a: &Sexp, b: &Sexp) -> bool {
    match (a, b) {
        (Sexp::Float(x), Sexp::Float(y)) => {
            x == y
                || x.is_nan() && y.is_nan()
                || (x - y).abs() <= 1e-12 * x.abs().max(y.abs())
                || x.abs().max(y.abs()) < 1e-290
        }
        (Sexp::List(x), Sexp::List(y)) | (Sexp::Vector(x), Sexp::Vector(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_but_float_rounding(x, y))
        }
        (Sexp::Dotted(x, xt), Sexp::Dotted(y, yt)) => {
            x.len() == y.len()
                && x.iter().zip(y).all(|(x, y)| same_but_float_rounding(x, y))
                && same_but_float_rounding(xt, yt)
        }
        _ => a == b,
    }
}

// ---------------------------------------------------------------------------------------------
// The s-expression/JSON mapping

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn exact_values_round_trip_through_json(v in exact_sexp()) {
        prop_assert_eq!(classify(&v), Class::Exact);
        let j = to_json(&v, None).expect("an exact value converts");
        prop_assert_eq!(from_json(&j), v);
    }

    #[test]
    fn any_value_converts_as_classified(v in sexp()) {
        let class = classify(&v);
        match to_json(&v, None) {
            Ok(j) => {
                prop_assert_ne!(&class, &Class::Refused, "accepted a refused value: {:?}", v);
                if class == Class::Exact {
                    prop_assert_eq!(from_json(&j), v);
                } else {
                    // A lossy conversion is at least stable: converting its image changes nothing.
                    prop_assert_eq!(to_json(&from_json(&j), None).ok(), Some(j));
                }
            }
            Err(e) => {
                prop_assert_eq!(&class, &Class::Refused, "refused {:?}: {}", v, e);
                prop_assert!(!e.to_string().is_empty());
            }
        }
    }

    #[test]
    fn json_round_trips_through_sexp(j in json()) {
        let back = to_json(&from_json(&j), None);
        if json_is_exact(&j) {
            prop_assert_eq!(back.ok(), Some(j));
        } else {
            prop_assert!(back.is_ok());
        }
    }

    #[test]
    fn json_text_round_trips(j in json()) {
        let text = j.to_string();
        let parsed = sexp::parse_json(&text, 1 << 20).expect("serde's own output parses");
        prop_assert_eq!(parsed, j);
    }

    #[test]
    fn random_json_text_never_panics(text in "[\\[\\]{}\",:0-9a-z.eE+ -]{0,200}") {
        let _ = sexp::parse_json(&text, 1 << 20);
    }

    #[test]
    fn floats_print_exactly(f in any::<f64>().prop_filter("finite", |f| f.is_finite())) {
        // The shortest text that reads back as the same float (Rust's reader is exact), and
        // always a float for Emacs and lexpr: a dot, an exponent after one.
        let printed = Sexp::Float(f).print(usize::MAX);
        prop_assert_eq!(printed.parse::<f64>().ok(), Some(f), "{}", printed);
        prop_assert!(printed.contains('.'), "{}", printed);
    }

    #[test]
    fn printed_values_read_back(v in sexp()) {
        let printed = v.print(usize::MAX);
        match Sexp::parse(&printed) {
            Ok(back) => {
                prop_assert!(same_but_float_rounding(&back, &v), "{:?} printed as {:?} reads back as {:?}", v, printed, back);
            }
            Err(e) => {
                // Only what lexpr cannot read, as documented: NaN and infinities.
                prop_assert!(
                    printed.contains("e+NaN") || printed.contains("e+INF"),
                    "{:?} printed as {:?} does not read back: {}", v, printed, e
                );
            }
        }
    }

    #[test]
    fn printing_stays_within_its_bound(v in sexp(), max in 0usize..300) {
        let printed = v.print(max);
        prop_assert!(printed.chars().count() <= max.max(3), "{} chars for max {}", printed.chars().count(), max);
        prop_assert!(sexp::describe(&v).chars().count() <= 80);
    }

    #[test]
    fn schema_hints_never_panic(v in sexp(), j in json()) {
        let _ = to_json(&v, Some(&j));
    }
}

#[test]
fn over_deep_values_are_refused_not_overflowed() {
    let wraps: [fn(Sexp) -> Sexp; 3] = [
        |x| Sexp::List(vec![x]),
        |x| Sexp::Vector(vec![x]),
        |x| Sexp::List(vec![Sexp::keyword("value"), x]),
    ];
    for wrap in wraps {
        for n in [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, 500] {
            let v = nest(n, wrap);
            let deep = n > MAX_DEPTH;
            assert_eq!(v.depth() > MAX_DEPTH, deep, "depth of {n} levels");
            assert_eq!(to_json(&v, None).is_err(), deep, "conversion of {n} levels");
            assert!(v.print(100).chars().count() <= 100);
            assert!(parse_call(&v).is_err());
            let _ = parse_decision(&v);
            let _ = executor::arguments_to_json(Some(&v), &Json::Null, 1 << 20);
            drop_deep(v);
        }
    }
    // Text nested beyond the limit is refused by the reader, never read.
    for n in [MAX_DEPTH + 1, 10_000] {
        let text = "(".repeat(n) + &")".repeat(n);
        assert!(Sexp::parse(&text).is_err());
        let json = "[".repeat(n) + &"]".repeat(n);
        assert!(sexp::parse_json(&json, 1 << 20).is_err());
    }
}

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

fn spec_of(name: &str, level: &str, version: u32) -> ToolSpec {
    let text = format!(
        r#"(:name "{name}" :description "A tool." :version "{version}" :safety-level {level}
           :parameters ((:name "path" :type :string :description "P")))"#
    );
    ToolSpec::from_sexp(&Sexp::parse(&text).expect("spec reads")).expect("spec is valid")
}

fn register(reg: &Shared, i: usize, version: u32) {
    let (name, level, guarded, review) = TOOLS[i];
    let handler = Handler::Lisp(LispTool {
        run: 1,
        guard: guarded.then_some(2),
        asynchronous: false,
        reviews_itself: review,
    });
    let mut r = reg.lock().unwrap_or_else(|p| p.into_inner());
    let _ = r.register(spec_of(name, level, version), None, Some(handler), "t", |_, _| false);
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
