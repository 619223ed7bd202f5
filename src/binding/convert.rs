//! Converting between Emacs values and the core's s-expressions and JSON.
//!
//! Emacs values are walked directly (no printing and reading back: that measured 3x slower and
//! prints symbols lexpr cannot read); what has no exact counterpart is refused with a
//! [`ConvertError`] naming it, never guessed.

use emacs::{Env, ErrorKind, IntoLisp, ModuleError, Result, Value, Vector};
use lexpr::Value as Sx;
use serde_json::{Map, Value as Json};

use crate::error::ConvertError;
use crate::sexp::MAX_DEPTH;

/// Symbols and functions the binding refers to, as global references.
#[allow(missing_docs)]
pub(crate) mod lisp {
    emacs::use_symbols! {
        integer float string symbol cons vector
        quit equal t nil
        kw_test => ":test"
        kw_size => ":size"
        kw_id => ":id"
        kw_name => ":name"
        kw_arguments => ":arguments"
        kw_success => ":success"
        kw_content => ":content"
        kw_error => ":error"
        kw_metadata => ":metadata"
        kw_execution_time_ms => ":execution_time_ms"
        kw_safety_level => ":safety_level"
        kw_approved => ":approved"
        kw_modified => ":modified"
    }

    emacs::use_functions! {
        symbol_name
        make_hash_table puthash consp
        error_message_string
    }
}
use lisp::*;

/// A conversion failure: a value refused, or an error from Emacs itself.
pub enum WalkError {
    /// The value cannot cross.
    Convert(ConvertError),
    /// Emacs signalled.
    Emacs(emacs::Error),
}

impl From<emacs::Error> for WalkError {
    fn from(e: emacs::Error) -> Self {
        WalkError::Emacs(e)
    }
}

impl From<ConvertError> for WalkError {
    fn from(e: ConvertError) -> Self {
        WalkError::Convert(e)
    }
}

/// Bounds on what is read from Emacs.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Total bytes of strings.
    pub max_bytes: usize,
    /// Total list and vector elements (also stops circular lists).
    pub max_nodes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: 16 << 20,
            max_nodes: 1_000_000,
        }
    }
}

/// Read string V as UTF-8, refusing more than MAX bytes before copying it.
pub fn read_string(v: Value<'_>, max: usize) -> std::result::Result<String, WalkError> {
    let mut small = [0u8; 256];
    let owned;
    let bytes = match v.copy_string_contents(&mut small) {
        Ok(b) => b,
        Err(e) => match e.downcast_ref::<ErrorKind>() {
            Some(ErrorKind::Module(ModuleError::BufferTooSmall { required, .. })) => {
                let size = required.saturating_sub(1);
                if size > max {
                    return Err(ConvertError::TooLarge {
                        what: "a string".into(),
                        size,
                        limit: max,
                    }
                    .into());
                }
                let mut buf = vec![0u8; *required];
                owned = v.copy_string_contents(&mut buf)?.to_vec();
                &owned[..]
            }
            Some(ErrorKind::Module(ModuleError::NonUnicodeString { .. })) => {
                return Err(ConvertError::Unrepresentable(
                    "a string that is not valid Unicode text (it holds raw bytes)".into(),
                )
                .into())
            }
            _ => return Err(e.into()),
        },
    };
    if bytes.len() > max {
        return Err(ConvertError::TooLarge {
            what: "a string".into(),
            size: bytes.len(),
            limit: max,
        }
        .into());
    }
    String::from_utf8(bytes.to_vec()).map_err(|_| {
        ConvertError::Unrepresentable("a string that is not valid UTF-8 (a unibyte string with raw bytes)".into())
            .into()
    })
}

struct Walker {
    limits: Limits,
    bytes: usize,
    nodes: usize,
}

impl Walker {
    fn count_node(&mut self) -> std::result::Result<(), WalkError> {
        self.nodes += 1;
        if self.nodes > self.limits.max_nodes {
            return Err(ConvertError::TooMany {
                what: "a list or vector".into(),
                limit: self.limits.max_nodes,
            }
            .into());
        }
        Ok(())
    }

    fn walk(&mut self, env: &Env, v: Value<'_>, depth: usize) -> std::result::Result<Sx, WalkError> {
        if depth > MAX_DEPTH {
            return Err(ConvertError::TooDeep { limit: MAX_DEPTH }.into());
        }
        if !v.is_not_nil() {
            return Ok(Sx::Null);
        }
        let ty = env.type_of(v)?;
        if *symbol == ty {
            // `t` and the keys of a tool call are recognised by identity (cheap `eq` calls)
            // rather than by name (a call to `symbol-name` and a copy each).
            if *t == v {
                return Ok(Sx::symbol("t"));
            }
            if depth <= 1 {
                for (known, name) in [(kw_id, "id"), (kw_name, "name"), (kw_arguments, "arguments")] {
                    if *known == v {
                        return Ok(Sx::keyword(name));
                    }
                }
            }
            let name = read_string(env.call(symbol_name, (v,))?, 4096)?;
            return Ok(if name == "t" {
                Sx::symbol("t")
            } else if let Some(k) = name.strip_prefix(':') {
                Sx::keyword(k)
            } else {
                Sx::symbol(name)
            });
        }
        if *string == ty {
            let s = read_string(v, self.limits.max_bytes.saturating_sub(self.bytes))?;
            self.bytes += s.len();
            return Ok(Sx::string(s));
        }
        if *integer == ty {
            return match v.into_rust::<i64>() {
                Ok(i) => Ok(Sx::from(i)),
                Err(_) => Err(ConvertError::Unrepresentable("an integer beyond 64 bits".into()).into()),
            };
        }
        if *float == ty {
            return Ok(Sx::from(v.into_rust::<f64>()?));
        }
        if *cons == ty {
            let mut items = Vec::new();
            let mut cell = v;
            loop {
                self.count_node()?;
                items.push(self.walk(env, cell.car()?, depth + 1)?);
                let next: Value<'_> = cell.cdr()?;
                if !next.is_not_nil() {
                    return Ok(Sx::list(items));
                }
                if *cons == env.type_of(next)? {
                    cell = next;
                } else {
                    let tail = self.walk(env, next, depth + 1)?;
                    return Ok(Sx::append(items, tail));
                }
            }
        }
        if *vector == ty {
            let vec: Vector<'_> = v.into_rust()?;
            let mut items = Vec::with_capacity(vec.len().min(4096));
            for i in 0..vec.len() {
                self.count_node()?;
                items.push(self.walk(env, vec.get(i)?, depth + 1)?);
            }
            return Ok(Sx::vector(items));
        }
        let name = read_string(env.call(symbol_name, (ty,))?, 4096).unwrap_or_else(|_| "object".into());
        Err(ConvertError::Unrepresentable(format!("a value of type {name}")).into())
    }
}

/// Convert Emacs value V to an s-expression within LIMITS.
pub fn to_sexp(env: &Env, v: Value<'_>, limits: Limits) -> std::result::Result<Sx, WalkError> {
    Walker {
        limits,
        bytes: 0,
        nodes: 0,
    }
    .walk(env, v, 0)
}

/// Convert an s-expression to an Emacs value.
pub fn from_sexp<'e>(env: &'e Env, v: &Sx) -> Result<Value<'e>> {
    Ok(match v {
        Sx::Nil | Sx::Null | Sx::Bool(false) => env.intern("nil")?,
        Sx::Bool(true) => env.intern("t")?,
        Sx::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_lisp(env)?
            } else {
                n.as_f64().unwrap_or(0.0).into_lisp(env)?
            }
        }
        Sx::Char(c) => i64::from(u32::from(*c)).into_lisp(env)?,
        Sx::String(s) => (&**s).into_lisp(env)?,
        Sx::Symbol(s) => env.intern(s)?,
        Sx::Keyword(k) => env.intern(&format!(":{k}"))?,
        Sx::Bytes(b) => String::from_utf8_lossy(b).into_owned().into_lisp(env)?,
        Sx::Vector(items) => {
            let vals = items.iter().map(|x| from_sexp(env, x)).collect::<Result<Vec<_>>>()?;
            env.vector(&vals)?
        }
        Sx::Cons(_) => {
            let mut vals = Vec::new();
            let mut tail = v;
            while let Some((car, cdr)) = tail.as_pair() {
                vals.push(from_sexp(env, car)?);
                tail = cdr;
            }
            if matches!(tail, Sx::Null | Sx::Nil) {
                // One call to `list` instead of one `cons` per element.
                env.list(&vals)?
            } else {
                let mut out = from_sexp(env, tail)?;
                for x in vals.into_iter().rev() {
                    out = env.cons(x, out)?;
                }
                out
            }
        }
    })
}

/// Convert JSON to the Emacs value `from_sexp(sexp::from_json(v))` gives (objects become plists
/// with keyword keys, `{}` nil, arrays vectors, `false` `:json-false`, `null` nil), directly:
/// without the intermediate s-expression, with one `list` call per object and each keyword
/// interned once per conversion. Building schemas and registrations this way measured several
/// times faster than through s-expressions.
pub fn json_value<'e>(env: &'e Env, v: &Json) -> Result<Value<'e>> {
    JsonToLisp {
        env,
        keywords: std::collections::HashMap::new(),
    }
    .value(v, 0)
}

struct JsonToLisp<'e> {
    env: &'e Env,
    keywords: std::collections::HashMap<String, Value<'e>>,
}

impl<'e> JsonToLisp<'e> {
    fn keyword(&mut self, name: &str) -> Result<Value<'e>> {
        if let Some(k) = self.keywords.get(name) {
            return Ok(*k);
        }
        let k = self.env.intern(&format!(":{name}"))?;
        self.keywords.insert(name.to_string(), k);
        Ok(k)
    }

    fn value(&mut self, v: &Json, depth: usize) -> Result<Value<'e>> {
        let env = self.env;
        if depth > MAX_DEPTH {
            return super::errors::signal(
                env,
                super::errors::Kind::Generic,
                format!("Cannot convert value: nested deeper than {MAX_DEPTH} levels"),
            );
        }
        Ok(match v {
            Json::Null => nil.bind(env),
            Json::Bool(true) => t.bind(env),
            Json::Bool(false) => self.keyword("json-false")?,
            Json::Number(n) => match n.as_i64() {
                Some(i) => i.into_lisp(env)?,
                None => n.as_f64().unwrap_or(0.0).into_lisp(env)?,
            },
            Json::String(s) => s.as_str().into_lisp(env)?,
            Json::Array(items) => {
                let vals = items
                    .iter()
                    .map(|x| self.value(x, depth + 1))
                    .collect::<Result<Vec<_>>>()?;
                env.vector(&vals)?
            }
            Json::Object(map) if map.is_empty() => nil.bind(env),
            Json::Object(map) => {
                let mut vals = Vec::with_capacity(map.len() * 2);
                for (k, x) in map {
                    vals.push(self.keyword(k)?);
                    vals.push(self.value(x, depth + 1)?);
                }
                env.list(&vals)?
            }
        })
    }
}

/// Convert a JSON value for a Lisp handler: objects become hash tables (test `equal`) keyed by
/// strings, arrays lists, `true` `t`, `false` and `null` `nil`.
pub fn json_for_handler<'e>(env: &'e Env, v: &Json) -> Result<Value<'e>> {
    Ok(match v {
        Json::Null | Json::Bool(false) => nil.bind(env),
        Json::Bool(true) => t.bind(env),
        Json::Number(n) => match n.as_i64() {
            Some(i) => i.into_lisp(env)?,
            None => n.as_f64().unwrap_or(0.0).into_lisp(env)?,
        },
        Json::String(s) => s.as_str().into_lisp(env)?,
        Json::Array(items) => {
            let vals = items
                .iter()
                .map(|x| json_for_handler(env, x))
                .collect::<Result<Vec<_>>>()?;
            env.list(&vals)?
        }
        Json::Object(map) => object_for_handler(env, map)?,
    })
}

/// The hash table a handler receives.
pub fn object_for_handler<'e>(env: &'e Env, map: &Map<String, Json>) -> Result<Value<'e>> {
    // The symbols are global references made once at module load: interning them on every call
    // (a C string and an obarray lookup each) was part of the executor's cost for a trivial tool.
    let table = env.call(
        make_hash_table,
        (
            kw_test.bind(env),
            equal.bind(env),
            kw_size.bind(env),
            map.len().max(1) as i64,
        ),
    )?;
    for (k, x) in map {
        env.call(puthash, (k.as_str(), json_for_handler(env, x)?, table))?;
    }
    Ok(table)
}

/// A tool result as the plist `(:id ID :success t :content C [:error C] :metadata
/// (:execution_time_ms F :safety_level "safe" :approved t [:modified t]))`, built directly with the symbols
/// kept as global references: going through an s-expression (allocated, converted, then freed)
/// and interning each keyword again was the largest single part of the executor's cost per
/// call for a trivial tool.
pub fn result_value<'e>(env: &'e Env, r: &crate::executor::ToolResult) -> Result<Value<'e>> {
    let no = nil.bind(env);
    let yes = t.bind(env);
    let flag = |b: bool| if b { yes } else { no };
    let mut meta: Vec<Value<'e>> = Vec::with_capacity(8);
    meta.push(kw_execution_time_ms.bind(env));
    meta.push(r.execution_time_ms.into_lisp(env)?);
    if let Some(level) = r.safety_level {
        meta.push(kw_safety_level.bind(env));
        meta.push(level.as_str().into_lisp(env)?);
    }
    meta.push(kw_approved.bind(env));
    meta.push(flag(r.approved));
    if r.modified {
        meta.push(kw_modified.bind(env));
        meta.push(yes);
    }
    let content = r.content.as_str().into_lisp(env)?;
    let mut items: Vec<Value<'e>> = Vec::with_capacity(10);
    items.push(kw_id.bind(env));
    items.push(match &r.id {
        Some(id) => id.as_str().into_lisp(env)?,
        None => no,
    });
    items.push(kw_success.bind(env));
    items.push(flag(r.success));
    items.push(kw_content.bind(env));
    items.push(content);
    if !r.success {
        items.push(kw_error.bind(env));
        items.push(content);
    }
    items.push(kw_metadata.bind(env));
    items.push(env.list(&meta)?);
    env.list(&items)
}

/// The message of a Lisp error that came back through a callback.
pub fn error_message(env: &Env, err: &emacs::Error) -> String {
    match err.downcast_ref::<ErrorKind>() {
        Some(ErrorKind::Signal { symbol: sym, data }) => {
            // SAFETY: the error came from a call on this env during the current module call.
            let (sym, data) = unsafe { (sym.value(env), data.value(env)) };
            env.cons(sym, data)
                .and_then(|e| env.call(error_message_string, (e,)))
                .ok()
                .and_then(|m| read_string(m, 1 << 16).ok())
                .unwrap_or_else(|| "unknown error".into())
        }
        Some(ErrorKind::Throw { tag, .. }) => {
            // SAFETY: as above.
            let tag = unsafe { tag.value(env) };
            let name = env
                .call(symbol_name, (tag,))
                .ok()
                .and_then(|n| read_string(n, 4096).ok());
            format!("non-local exit: throw to {}", name.unwrap_or_else(|| "a tag".into()))
        }
        _ => err.to_string(),
    }
}

/// Whether ERR is a `quit` signal (the user pressed `C-g`).
pub fn is_quit(env: &Env, err: &emacs::Error) -> bool {
    match err.downcast_ref::<ErrorKind>() {
        // SAFETY: the error came from a call on this env during the current module call.
        Some(ErrorKind::Signal { symbol: sym, .. }) => *quit == unsafe { sym.value(env) },
        _ => false,
    }
}
