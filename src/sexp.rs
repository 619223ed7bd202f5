//! Emacs Lisp s-expressions ([`lexpr::Value`]) and their JSON counterparts.
//!
//! Tool calls, definitions and results cross between Emacs and the core as `lexpr` values. Tools
//! and LLMs speak JSON, so this module maps one onto the other, exactly or not at all:
//!
//! | Lisp                                   | JSON                    |
//! |----------------------------------------|-------------------------|
//! | plist with keyword keys `(:a 1 :b 2)`  | object `{"a":1,"b":2}`  |
//! | vector `[1 2]`, or a list that is not a plist `(1 2)` | array `[1,2]` |
//! | string, integer, float                 | string, number          |
//! | `t`                                    | `true`                  |
//! | `:json-false` (also `:false`)          | `false`                 |
//! | `nil`, `:json-null` (also `:null`)     | `null`                  |
//! | other symbols                          | their names, as strings |
//!
//! JSON to Lisp maps objects to plists (`{}` to `nil`), arrays to vectors, `true` to `t`,
//! `false` to `:json-false` and `null` to `nil`, as gptel and `json-parse-string` with
//! `:object-type 'plist :false-object :json-false :null-object nil` do. A `nil` read where a
//! schema expects a boolean, array or object is taken as `false`, `[]` or `{}` (see [`to_json`]).
//!
//! Refused, with an error naming the problem: NaN and infinities, dotted pairs, keywords in value
//! position, characters and byte strings, and anything nested deeper than [`MAX_DEPTH`].

use lexpr::{Number, Value};
use serde_json::{Map, Value as Json};

use crate::error::ConvertError;

/// How deep a value may nest before it is refused.
pub const MAX_DEPTH: usize = 128;

/// Wraps a [`lexpr::Value`] so that dropping it never recurses: lexpr's derived `Drop` follows
/// every `cdr`, so a long list would otherwise overflow the stack of the Emacs thread.
#[derive(Debug, PartialEq)]
pub struct Sexp(pub Value);

impl Drop for Sexp {
    fn drop(&mut self) {
        dismantle(std::mem::replace(&mut self.0, Value::Nil));
    }
}

/// Free VALUE without recursion: conses are taken apart one at a time.
pub fn dismantle(value: Value) {
    // Atoms drop in place: only conses and vectors go on the stack.
    if !matches!(value, Value::Cons(_) | Value::Vector(_)) {
        return;
    }
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Cons(cons) => {
                let (car, cdr) = cons.into_pair();
                for x in [car, cdr] {
                    if matches!(x, Value::Cons(_) | Value::Vector(_)) {
                        stack.push(x);
                    }
                }
            }
            Value::Vector(items) => stack.extend(
                items
                    .into_vec()
                    .into_iter()
                    .filter(|x| matches!(x, Value::Cons(_) | Value::Vector(_))),
            ),
            _ => {}
        }
    }
}

/// The name of keyword V, without its colon.
fn keyword_name(v: &Value) -> Option<&str> {
    v.as_keyword()
}

/// Whether V is `nil` (lexpr reads both `nil` and `()` as `Null`).
pub fn is_nil(v: &Value) -> bool {
    matches!(v, Value::Null | Value::Nil) || v.as_symbol() == Some("nil")
}

/// Whether V is `t`.
pub fn is_t(v: &Value) -> bool {
    matches!(v, Value::Bool(true)) || v.as_symbol() == Some("t")
}

/// The key/value pairs of plist V, or `None` when V is not a non-empty proper list of even
/// length whose keys are all keywords.
pub fn plist_pairs(v: &Value) -> Option<Vec<(&str, &Value)>> {
    let mut iter = v.list_iter()?;
    let mut pairs = Vec::new();
    while let Some(key) = iter.next() {
        let name = keyword_name(key)?;
        let value = iter.next()?;
        pairs.push((name, value));
    }
    if pairs.is_empty() || !iter.is_empty() {
        return None;
    }
    // A dotted tail makes it no plist.
    if !v.is_list() {
        return None;
    }
    Some(pairs)
}

/// The value of KEY (without colon) in plist V.
pub fn plist_get<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    let mut iter = v.list_iter()?;
    while let Some(k) = iter.next() {
        let value = iter.next()?;
        if keyword_name(k) == Some(key) {
            return Some(value);
        }
    }
    None
}

/// A plist built from PAIRS (keys without colons).
pub fn plist<I, K>(pairs: I) -> Value
where
    I: IntoIterator<Item = (K, Value)>,
    K: Into<Box<str>>,
{
    let mut items = Vec::new();
    for (k, v) in pairs {
        items.push(Value::keyword(k));
        items.push(v);
    }
    Value::list(items)
}

/// Describe V briefly for an error message (lexpr's printer, shortened).
pub fn describe(v: &Value) -> String {
    let mut s =
        lexpr::to_string_custom(v, lexpr::print::Options::elisp()).unwrap_or_else(|_| "<unprintable>".to_string());
    if s.chars().count() > 80 {
        s = s.chars().take(77).collect::<String>() + "...";
    }
    s
}

fn schema_type(hint: Option<&Json>) -> Option<&str> {
    hint.and_then(|h| h.get("type")).and_then(Json::as_str)
}

/// Convert V to JSON. HINT is the JSON Schema V should satisfy, used only to read `nil` as
/// `false`, `[]` or `{}` where the schema's type says so; pass `None` for no hint.
pub fn to_json(v: &Value, hint: Option<&Json>) -> Result<Json, ConvertError> {
    to_json_at(v, hint, 0)
}

fn to_json_at(v: &Value, hint: Option<&Json>, depth: usize) -> Result<Json, ConvertError> {
    if depth > MAX_DEPTH {
        return Err(ConvertError::TooDeep { limit: MAX_DEPTH });
    }
    if is_nil(v) {
        return Ok(match schema_type(hint) {
            Some("boolean") => Json::Bool(false),
            Some("array") => Json::Array(Vec::new()),
            Some("object") => Json::Object(Map::new()),
            _ => Json::Null,
        });
    }
    if is_t(v) {
        return Ok(Json::Bool(true));
    }
    match v {
        Value::Bool(b) => Ok(Json::Bool(*b)),
        Value::Keyword(k) => match &**k {
            "json-false" | "false" => Ok(Json::Bool(false)),
            "json-null" | "null" => Ok(Json::Null),
            other => Err(ConvertError::Unrepresentable(format!(
                "the keyword :{other} as a value (JSON has no keywords; use a string)"
            ))),
        },
        Value::Symbol(s) => Ok(Json::String(s.to_string())),
        Value::String(s) => Ok(Json::String(s.to_string())),
        Value::Number(n) => number_to_json(n),
        Value::Char(c) => Err(ConvertError::Unrepresentable(format!("the character {c:?}"))),
        Value::Bytes(_) => Err(ConvertError::Unrepresentable(
            "a byte string that is not valid UTF-8".into(),
        )),
        Value::Vector(items) => {
            let item_hint = hint.and_then(|h| h.get("items"));
            items
                .iter()
                .map(|x| to_json_at(x, item_hint, depth + 1))
                .collect::<Result<Vec<_>, _>>()
                .map(Json::Array)
        }
        Value::Cons(_) => {
            if let Some(pairs) = plist_pairs(v) {
                let props = hint.and_then(|h| h.get("properties"));
                let mut map = Map::new();
                for (k, x) in pairs {
                    let sub = props.and_then(|p| p.get(k));
                    map.insert(k.to_string(), to_json_at(x, sub, depth + 1)?);
                }
                Ok(Json::Object(map))
            } else if v.is_list() {
                let item_hint = hint.and_then(|h| h.get("items"));
                let mut out = Vec::new();
                for x in v.list_iter().into_iter().flatten() {
                    out.push(to_json_at(x, item_hint, depth + 1)?);
                }
                Ok(Json::Array(out))
            } else {
                Err(ConvertError::Unrepresentable(format!(
                    "the dotted pair {} (JSON has no pairs)",
                    describe(v)
                )))
            }
        }
        Value::Null | Value::Nil => Ok(Json::Null),
    }
}

fn number_to_json(n: &Number) -> Result<Json, ConvertError> {
    if let Some(i) = n.as_i64() {
        Ok(Json::from(i))
    } else if let Some(u) = n.as_u64() {
        Ok(Json::from(u))
    } else {
        let f = n.as_f64().unwrap_or(f64::NAN);
        serde_json::Number::from_f64(f)
            .map(Json::Number)
            .ok_or_else(|| ConvertError::Unrepresentable(format!("the float {f} (JSON has no NaN or infinity)")))
    }
}

/// Convert JSON to the Lisp shape described in the module docs.
pub fn from_json(j: &Json) -> Value {
    match j {
        Json::Null => Value::Null,
        Json::Bool(true) => Value::symbol("t"),
        Json::Bool(false) => Value::keyword("json-false"),
        Json::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                Value::from(n.as_f64().unwrap_or(0.0))
            }
        }
        Json::String(s) => Value::string(s.as_str()),
        Json::Array(items) => Value::vector(items.iter().map(from_json)),
        Json::Object(map) if map.is_empty() => Value::Null,
        Json::Object(map) => plist(map.iter().map(|(k, v)| (k.as_str(), from_json(v)))),
    }
}

/// Parse TEXT as JSON, refusing more than MAX_BYTES.
pub fn parse_json(text: &str, max_bytes: usize) -> Result<Json, ConvertError> {
    if text.len() > max_bytes {
        return Err(ConvertError::TooLarge {
            what: "JSON text".into(),
            size: text.len(),
            limit: max_bytes,
        });
    }
    serde_json::from_str(text).map_err(|e| ConvertError::Json(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(s: &str) -> Value {
        lexpr::from_str_custom(s, lexpr::parse::Options::elisp()).expect("test input parses")
    }

    #[test]
    fn plist_becomes_object_and_back() {
        let v = read(r#"(:symbol "car" :count 3 :ratio 0.5 :flag t :off :json-false :list [1 2])"#);
        let j = to_json(&v, None).unwrap();
        assert_eq!(
            j,
            json!({"symbol":"car","count":3,"ratio":0.5,"flag":true,"off":false,"list":[1,2]})
        );
        assert_eq!(to_json(&from_json(&j), None).unwrap(), j);
    }

    #[test]
    fn lists_that_are_not_plists_are_arrays() {
        assert_eq!(to_json(&read(r#"("a" "b")"#), None).unwrap(), json!(["a", "b"]));
        assert_eq!(
            to_json(&read("(1 :a)"), None).unwrap_err().to_string(),
            "cannot represent the keyword :a as a value (JSON has no keywords; use a string)"
        );
    }

    #[test]
    fn nil_follows_the_schema_hint() {
        let schema = json!({"type":"object","properties":{
            "b":{"type":"boolean"},"a":{"type":"array"},"o":{"type":"object"},"s":{"type":"string"}}});
        let j = to_json(&read("(:b nil :a nil :o nil :s nil)"), Some(&schema)).unwrap();
        assert_eq!(j, json!({"b":false,"a":[],"o":{},"s":null}));
    }

    #[test]
    fn refuses_what_json_cannot_hold() {
        assert!(
            matches!(to_json(&read("(a . b)"), None), Err(ConvertError::Unrepresentable(m)) if m.contains("dotted pair"))
        );
        assert!(to_json(&Value::from(f64::NAN), None).is_err());
        assert!(to_json(&Value::from(f64::INFINITY), None).is_err());
        assert!(to_json(&Value::Char('a'), None).is_err());
        assert!(to_json(&Value::bytes(vec![0xff_u8]), None).is_err());
    }

    #[test]
    fn refuses_deep_nesting_without_overflowing() {
        let mut v = Value::from(1);
        for _ in 0..(MAX_DEPTH + 10) {
            v = Value::vector(vec![v]);
        }
        let wrapped = Sexp(v);
        assert_eq!(
            to_json(&wrapped.0, None),
            Err(ConvertError::TooDeep { limit: MAX_DEPTH })
        );
    }

    #[test]
    fn a_long_list_drops_without_recursion() {
        let v = Value::list((0..1_000_000).map(Value::from));
        drop(Sexp(v));
    }

    #[test]
    fn symbols_become_their_names() {
        assert_eq!(to_json(&read("(:symbol car)"), None).unwrap(), json!({"symbol":"car"}));
    }

    #[test]
    fn empty_object_is_nil_and_false_is_json_false() {
        assert_eq!(from_json(&json!({})), Value::Null);
        assert_eq!(from_json(&json!(false)), Value::keyword("json-false"));
        assert_eq!(from_json(&json!(null)), Value::Null);
    }

    #[test]
    fn json_text_is_bounded() {
        assert!(matches!(parse_json("[1,2,3]", 3), Err(ConvertError::TooLarge { .. })));
        assert!(matches!(parse_json("{", 100), Err(ConvertError::Json(_))));
        // serde_json's own recursion limit refuses absurd nesting.
        let deep = "[".repeat(10_000) + &"]".repeat(10_000);
        assert!(parse_json(&deep, 1 << 20).is_err());
    }
}
