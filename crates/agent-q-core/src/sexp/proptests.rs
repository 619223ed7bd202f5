//! Property tests of the s-expression/JSON mapping: random values through the conversions, the
//! printer and the reader.
//!
//! The generators are bounded (depth, elements per level, total size) so `cargo test` stays
//! fast; over-deep values are built separately, a few hundred levels deep. The executor's
//! property tests use [`sexp`], [`sexp_upto`] and [`json`] too.
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

use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::{Map, Value as Json};

use crate::executor::{self, parse_call, parse_decision};
use crate::sexp::{self, from_json, to_json, Sexp, MAX_DEPTH};

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
pub(crate) fn sexp_upto(depth: u32) -> impl Strategy<Value = Sexp> {
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

pub(crate) fn sexp() -> impl Strategy<Value = Sexp> {
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
pub(crate) fn json() -> impl Strategy<Value = Json> {
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
