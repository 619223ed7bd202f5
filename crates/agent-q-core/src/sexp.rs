//! Emacs Lisp values as the core sees them ([`Sexp`]), and their JSON counterparts.
//!
//! Tool calls, definitions and approval decisions cross from Emacs into the core as [`Sexp`]
//! values, which the binding builds by walking the Emacs objects. Tools and LLMs speak JSON, so
//! this module maps one onto the other, exactly or not at all:
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
//! position, and anything nested deeper than [`MAX_DEPTH`].
//!
//! # Why not `lexpr::Value`
//!
//! lexpr represents a list as a chain of conses, one box inside the next, so a list of a
//! million elements is a value nested a million levels deep: dropping, cloning, comparing or
//! printing it recurses once per element and overflows the stack of Emacs's thread. A [`Sexp`]
//! list is a vector, so its length never becomes depth, and no [`Sexp`] deeper than
//! [`MAX_DEPTH`] is ever built from outside input (the binding's walker refuses it, as does the
//! tests' reader `Sexp::parse`), so the derived, recursive `Drop`, `Clone`, `PartialEq` and
//! `Debug` recurse at most [`MAX_DEPTH`] levels. lexpr, a dev-dependency, reads s-expression
//! text in tests (`Sexp::parse`).

use std::fmt::Write as _;

use serde_json::{Map, Value as Json};

use crate::error::ConvertError;

/// How deep a value may nest before it is refused.
pub const MAX_DEPTH: usize = 128;

/// An Emacs Lisp value: the data subset that can cross between Emacs and the core.
///
/// Build deep values only from input already bounded by [`MAX_DEPTH`]; see the module docs.
#[derive(Debug, Clone, PartialEq)]
pub enum Sexp {
    /// `nil` (also the empty list).
    Nil,
    /// `t`.
    T,
    /// A fixnum (or a bignum that fits in 64 bits).
    Int(i64),
    /// A float.
    Float(f64),
    /// A string (always valid Unicode: strings with raw bytes are refused on the way in).
    Str(String),
    /// An interned symbol other than `nil`, `t` and keywords.
    Symbol(String),
    /// A keyword, without its colon.
    Keyword(String),
    /// A proper, non-empty list.
    List(Vec<Sexp>),
    /// An improper list `(A B . TAIL)`: its elements, then its tail (not a list, not nil).
    Dotted(Vec<Sexp>, Box<Sexp>),
    /// A vector.
    Vector(Vec<Sexp>),
}

impl Sexp {
    /// The keyword `:NAME`.
    pub fn keyword(name: impl Into<String>) -> Sexp {
        Sexp::Keyword(name.into())
    }

    /// The string S.
    pub fn string(s: impl Into<String>) -> Sexp {
        Sexp::Str(s.into())
    }

    /// The list of ITEMS (`nil` when there are none).
    pub fn list(items: Vec<Sexp>) -> Sexp {
        if items.is_empty() {
            Sexp::Nil
        } else {
            Sexp::List(items)
        }
    }

    /// Whether this is `nil`.
    pub fn is_nil(&self) -> bool {
        matches!(self, Sexp::Nil)
    }

    /// The string's text, if this is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Sexp::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The keyword's name (without colon), if this is a keyword.
    pub fn as_keyword(&self) -> Option<&str> {
        match self {
            Sexp::Keyword(k) => Some(k),
            _ => None,
        }
    }

    /// The symbol's name, if this is a symbol other than `nil`, `t` or a keyword.
    pub fn as_symbol(&self) -> Option<&str> {
        match self {
            Sexp::Symbol(s) => Some(s),
            _ => None,
        }
    }

    /// The elements of a proper list (none for `nil`); `None` for anything else.
    pub fn list_items(&self) -> Option<&[Sexp]> {
        match self {
            Sexp::Nil => Some(&[]),
            Sexp::List(items) => Some(items),
            _ => None,
        }
    }

    /// The elements of a proper list or a vector; `None` for anything else.
    pub fn sequence_items(&self) -> Option<&[Sexp]> {
        match self {
            Sexp::Vector(items) => Some(items),
            other => other.list_items(),
        }
    }

    /// The key/value pairs of a plist, or `None` when this is not a non-empty proper list of even
    /// length whose keys are all keywords.
    pub fn plist_pairs(&self) -> Option<Vec<(&str, &Sexp)>> {
        let Sexp::List(items) = self else { return None };
        if items.len() % 2 != 0 {
            return None;
        }
        items
            .chunks_exact(2)
            .map(|pair| Some((pair[0].as_keyword()?, &pair[1])))
            .collect()
    }

    /// The value of KEY (without colon) in this plist, or `None`.
    pub fn plist_get(&self, key: &str) -> Option<&Sexp> {
        let Sexp::List(items) = self else { return None };
        items
            .chunks_exact(2)
            .find(|pair| pair[0].as_keyword() == Some(key))
            .map(|pair| &pair[1])
    }

    /// How deep lists and vectors nest in this value (an atom is 0, `(1)` and `[]` are 1);
    /// stops counting past [`MAX_DEPTH`] + 1.
    pub fn depth(&self) -> usize {
        // Iterative, so even a value built carelessly by Rust code is measured safely.
        let mut deepest = 0;
        let mut stack: Vec<(&Sexp, usize)> = vec![(self, 0)];
        while let Some((v, d)) = stack.pop() {
            let items: &[Sexp] = match v {
                Sexp::List(items) | Sexp::Vector(items) | Sexp::Dotted(items, _) => items,
                _ => continue,
            };
            deepest = deepest.max(d + 1);
            if deepest > MAX_DEPTH {
                return deepest;
            }
            stack.extend(items.iter().map(|x| (x, d + 1)));
            if let Sexp::Dotted(_, tail) = v {
                stack.push((tail, d + 1));
            }
        }
        deepest
    }

    /// Read TEXT, Emacs Lisp syntax as lexpr knows it, as one value.
    ///
    /// For tests only (lexpr is a dev-dependency): lexpr's parser recurses on nesting. The
    /// value is refused if deeper than [`MAX_DEPTH`].
    #[cfg(test)]
    pub fn parse(text: &str) -> Result<Sexp, ConvertError> {
        let value = lexpr::from_str_custom(text, lexpr::parse::Options::elisp())
            .map_err(|e| ConvertError::Shape(format!("cannot read {text:?}: {e}")))?;
        let converted = from_lexpr(&value, 0);
        dismantle(value);
        converted
    }

    /// This value printed in Emacs Lisp syntax, cut to about MAX characters ("..." marks a cut).
    pub fn print(&self, max: usize) -> String {
        let mut out = String::new();
        // A cut stops the printer early: a long list is never printed whole only to be shortened.
        if print_into(self, &mut out, max).is_err() {
            let mut cut: String = out.chars().take(max.saturating_sub(3)).collect();
            cut.push_str("...");
            return cut;
        }
        out
    }
}

/// Brief printed form of V for an error message (at most 80 characters).
pub fn describe(v: &Sexp) -> String {
    v.print(80)
}

struct Cut;

fn print_into(v: &Sexp, out: &mut String, max: usize) -> Result<(), Cut> {
    if out.len() > max {
        return Err(Cut);
    }
    let seq = |out: &mut String, items: &[Sexp], open: char, close: char| -> Result<(), Cut> {
        out.push(open);
        for (i, x) in items.iter().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            print_into(x, out, max)?;
        }
        out.push(close);
        Ok(())
    };
    match v {
        Sexp::Nil => out.push_str("nil"),
        Sexp::T => out.push('t'),
        Sexp::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Sexp::Float(f) => out.push_str(&print_float(*f)),
        Sexp::Str(s) => {
            out.push('"');
            for c in s.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    c => out.push(c),
                }
                if out.len() > max {
                    return Err(Cut);
                }
            }
            out.push('"');
        }
        Sexp::Symbol(s) => out.push_str(s),
        Sexp::Keyword(k) => {
            out.push(':');
            out.push_str(k);
        }
        Sexp::List(items) => seq(out, items, '(', ')')?,
        Sexp::Vector(items) => seq(out, items, '[', ']')?,
        Sexp::Dotted(items, tail) => {
            out.push('(');
            for x in items {
                print_into(x, out, max)?;
                out.push(' ');
            }
            out.push_str(". ");
            print_into(tail, out, max)?;
            out.push(')');
        }
    }
    if out.len() > max {
        Err(Cut)
    } else {
        Ok(())
    }
}

fn print_float(f: f64) -> String {
    if f.is_nan() {
        "0.0e+NaN".into()
    } else if f.is_infinite() {
        if f > 0.0 { "1.0e+INF" } else { "-1.0e+INF" }.into()
    } else {
        // Debug is the shortest text that reads back as the same float, with an exponent for
        // very large and very small ones ("1e16", "1.5e-253"); Display would print those as
        // hundreds of digits, and without a dot (read back as an integer). An exponent needs a
        // dot before it to be a float for lexpr: "1.0e16".
        let mut s = format!("{f:?}");
        if let Some(e) = s.find('e') {
            if !s[..e].contains('.') {
                s.insert_str(e, ".0");
            }
        }
        s
    }
}

#[cfg(test)]
fn from_lexpr(v: &lexpr::Value, depth: usize) -> Result<Sexp, ConvertError> {
    use lexpr::Value as L;
    if depth > MAX_DEPTH {
        return Err(ConvertError::TooDeep { limit: MAX_DEPTH });
    }
    Ok(match v {
        L::Nil | L::Null => Sexp::Nil,
        L::Bool(true) => Sexp::T,
        L::Bool(false) => Sexp::Nil,
        L::Number(n) => match n.as_i64() {
            Some(i) => Sexp::Int(i),
            None => Sexp::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        L::Char(c) => Sexp::Int(i64::from(u32::from(*c))),
        L::String(s) => Sexp::Str(s.to_string()),
        L::Symbol(s) if &**s == "t" => Sexp::T,
        L::Symbol(s) if &**s == "nil" => Sexp::Nil,
        L::Symbol(s) => Sexp::Symbol(s.to_string()),
        L::Keyword(k) => Sexp::Keyword(k.to_string()),
        L::Bytes(b) => Sexp::Str(
            String::from_utf8(b.to_vec())
                .map_err(|_| ConvertError::Unrepresentable("a byte string that is not valid UTF-8".into()))?,
        ),
        L::Vector(items) => Sexp::Vector(
            items
                .iter()
                .map(|x| from_lexpr(x, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        L::Cons(_) => {
            let mut items = Vec::new();
            let mut rest = v;
            while let Some((car, cdr)) = rest.as_pair() {
                items.push(from_lexpr(car, depth + 1)?);
                rest = cdr;
            }
            match rest {
                L::Nil | L::Null => Sexp::List(items),
                tail => Sexp::Dotted(items, Box::new(from_lexpr(tail, depth + 1)?)),
            }
        }
    })
}

#[cfg(test)]
/// Free a lexpr VALUE without recursion: its conses are taken apart one at a time.
pub fn dismantle(value: lexpr::Value) {
    use lexpr::Value as L;
    if !matches!(value, L::Cons(_) | L::Vector(_)) {
        return;
    }
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            L::Cons(cons) => {
                let (car, cdr) = cons.into_pair();
                stack.extend(
                    [car, cdr]
                        .into_iter()
                        .filter(|x| matches!(x, L::Cons(_) | L::Vector(_))),
                );
            }
            L::Vector(items) => stack.extend(
                items
                    .into_vec()
                    .into_iter()
                    .filter(|x| matches!(x, L::Cons(_) | L::Vector(_))),
            ),
            _ => {}
        }
    }
}

fn schema_type(hint: Option<&Json>) -> Option<&str> {
    hint.and_then(|h| h.get("type")).and_then(Json::as_str)
}

/// Convert V to JSON. HINT is the JSON Schema V should satisfy, used only to read `nil` as
/// `false`, `[]` or `{}` where the schema's type says so; pass `None` for no hint.
pub fn to_json(v: &Sexp, hint: Option<&Json>) -> Result<Json, ConvertError> {
    to_json_at(v, hint, 0)
}

fn to_json_at(v: &Sexp, hint: Option<&Json>, depth: usize) -> Result<Json, ConvertError> {
    if depth > MAX_DEPTH {
        return Err(ConvertError::TooDeep { limit: MAX_DEPTH });
    }
    let array = |items: &[Sexp]| {
        let item_hint = hint.and_then(|h| h.get("items"));
        items
            .iter()
            .map(|x| to_json_at(x, item_hint, depth + 1))
            .collect::<Result<Vec<_>, _>>()
            .map(Json::Array)
    };
    match v {
        Sexp::Nil => Ok(match schema_type(hint) {
            Some("boolean") => Json::Bool(false),
            Some("array") => Json::Array(Vec::new()),
            Some("object") => Json::Object(Map::new()),
            _ => Json::Null,
        }),
        Sexp::T => Ok(Json::Bool(true)),
        Sexp::Keyword(k) => match k.as_str() {
            "json-false" | "false" => Ok(Json::Bool(false)),
            "json-null" | "null" => Ok(Json::Null),
            other => Err(ConvertError::Unrepresentable(format!(
                "the keyword :{other} as a value (JSON has no keywords; use a string)"
            ))),
        },
        Sexp::Symbol(s) => Ok(Json::String(s.clone())),
        Sexp::Str(s) => Ok(Json::String(s.clone())),
        Sexp::Int(i) => Ok(Json::from(*i)),
        Sexp::Float(f) => serde_json::Number::from_f64(*f)
            .map(Json::Number)
            .ok_or_else(|| ConvertError::Unrepresentable(format!("the float {f} (JSON has no NaN or infinity)"))),
        Sexp::Vector(items) => array(items),
        Sexp::List(items) => match v.plist_pairs() {
            Some(pairs) => {
                let props = hint.and_then(|h| h.get("properties"));
                let mut map = Map::new();
                for (k, x) in pairs {
                    let sub = props.and_then(|p| p.get(k));
                    map.insert(k.to_string(), to_json_at(x, sub, depth + 1)?);
                }
                Ok(Json::Object(map))
            }
            None => array(items),
        },
        Sexp::Dotted(..) => Err(ConvertError::Unrepresentable(format!(
            "the dotted pair {} (JSON has no pairs)",
            describe(v)
        ))),
    }
}

/// Convert JSON to the Lisp shape described in the module docs.
///
/// Meant for JSON parsed by serde_json (nested at most 128 levels) or built by the core.
pub fn from_json(j: &Json) -> Sexp {
    match j {
        Json::Null => Sexp::Nil,
        Json::Bool(true) => Sexp::T,
        Json::Bool(false) => Sexp::keyword("json-false"),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Sexp::Int(i),
            None => Sexp::Float(n.as_f64().unwrap_or(0.0)),
        },
        Json::String(s) => Sexp::Str(s.clone()),
        Json::Array(items) => Sexp::Vector(items.iter().map(from_json).collect()),
        Json::Object(map) if map.is_empty() => Sexp::Nil,
        Json::Object(map) => Sexp::List(
            map.iter()
                .flat_map(|(k, v)| [Sexp::keyword(k.as_str()), from_json(v)])
                .collect(),
        ),
    }
}

/// Parse TEXT as JSON, refusing more than MAX_BYTES (serde_json refuses nesting beyond 128).
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

    fn read(s: &str) -> Sexp {
        Sexp::parse(s).expect("test input parses")
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
        assert!(to_json(&Sexp::Float(f64::NAN), None).is_err());
        assert!(to_json(&Sexp::Float(f64::INFINITY), None).is_err());
    }

    #[test]
    fn deep_values_are_refused_when_read() {
        // lexpr's parser has a limit of its own near ours; either refuses, neither overflows.
        let deep = "(".repeat(MAX_DEPTH + 5) + &")".repeat(MAX_DEPTH + 5);
        assert!(Sexp::parse(&deep).is_err());
        let deep = "(".repeat(100_000) + &")".repeat(100_000);
        assert!(Sexp::parse(&deep).is_err());
        let ok = "[".repeat(MAX_DEPTH - 1) + &"]".repeat(MAX_DEPTH - 1);
        assert_eq!(Sexp::parse(&ok).map(|v| v.depth()), Ok(MAX_DEPTH - 1));
        assert_eq!((Sexp::Int(1).depth(), Sexp::Vector(vec![]).depth()), (0, 1));
    }

    #[test]
    fn a_long_list_is_flat() {
        let text = format!("({})", "1 ".repeat(1_000_000));
        let v = Sexp::parse(&text).expect("a long list reads");
        assert_eq!(v.depth(), 1);
        let copy = v.clone();
        assert_eq!(copy, v);
        assert!(describe(&v).len() <= 80);
        drop((v, copy));
    }

    #[test]
    fn printing_is_bounded_and_readable() {
        let v = read(r#"(:a "x\"y" b [1 2.5] (c . d))"#);
        assert_eq!(v.print(1000), r#"(:a "x\"y" b [1 2.5] (c . d))"#);
        assert_eq!(v.print(10), "(:a \"x\\...");
        assert_eq!(Sexp::Float(3.0).print(10), "3.0");
    }

    #[test]
    fn floats_print_as_floats_that_read_back() {
        for (f, text) in [
            (1e15, "1000000000000000.0"),
            (1e16, "1.0e16"),
            (-1.5e-253, "-1.5e-253"),
            (0.1, "0.1"),
            (-0.0, "-0.0"),
        ] {
            assert_eq!(Sexp::Float(f).print(100), text);
            assert_eq!(text.parse::<f64>(), Ok(f));
        }
        assert_eq!(Sexp::parse("1.0e16"), Ok(Sexp::Float(1e16)));
    }

    #[test]
    fn plists() {
        let v = read(r#"(:id "c" :name "n")"#);
        assert_eq!(v.plist_get("name").and_then(Sexp::as_str), Some("n"));
        assert!(v.plist_get("other").is_none());
        assert!(read("(:a)").plist_pairs().is_none());
        assert!(read("(a 1)").plist_pairs().is_none());
        assert!(Sexp::Nil.plist_pairs().is_none());
    }

    #[test]
    fn symbols_become_their_names() {
        assert_eq!(to_json(&read("(:symbol car)"), None).unwrap(), json!({"symbol":"car"}));
    }

    #[test]
    fn empty_object_is_nil_and_false_is_json_false() {
        assert_eq!(from_json(&json!({})), Sexp::Nil);
        assert_eq!(from_json(&json!(false)), Sexp::keyword("json-false"));
        assert_eq!(from_json(&json!(null)), Sexp::Nil);
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

#[cfg(test)]
pub(crate) mod proptests;
