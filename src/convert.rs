//! Converting between Emacs values and the core's s-expressions and JSON.
//!
//! Emacs values are walked directly (no printing and reading back: that measured 3x slower and
//! prints symbols lexpr cannot read); what has no exact counterpart is refused with a
//! [`ConvertError`] naming it, never guessed.

use emacs::{Env, ErrorKind, IntoLisp, ModuleError, Result, Value, Vector};
use serde_json::{Map, Value as Json};

use agent_q_core::error::ConvertError;
use agent_q_core::sexp::{Sexp, MAX_DEPTH};

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
        kw_status => ":status"
        kw_client => ":client"
    }

    emacs::use_functions! {
        symbol_name keywordp intern_soft
        car cdr proper_list_p safe_length
        make_hash_table puthash consp
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

/// One list or vector being walked.
enum Frame<'e> {
    List {
        items: Vec<Sexp>,
        /// The cons whose car is the next element.
        cell: Value<'e>,
        /// Elements still to take.
        left: usize,
        /// Set once the elements are taken and a non-nil atom tail was found: the next child
        /// delivered is that tail.
        tail: Option<Option<Sexp>>,
    },
    Vector {
        items: Vec<Sexp>,
        elements: Vector<'e>,
        next: usize,
    },
}

impl<'e> Frame<'e> {
    fn accept(&mut self, child: Sexp) {
        match self {
            Frame::List { tail: Some(slot), .. } => *slot = Some(child),
            Frame::List { items, .. } | Frame::Vector { items, .. } => items.push(child),
        }
    }

    /// The next child to convert, or `None` when the frame is complete.
    fn next_child(&mut self, env: &'e Env) -> std::result::Result<Option<Value<'e>>, WalkError> {
        match self {
            Frame::List { cell, left, tail, .. } => {
                if tail.is_some() {
                    return Ok(None);
                }
                if *left > 0 {
                    let element = env.call(car, (*cell,))?;
                    *cell = env.call(cdr, (*cell,))?;
                    *left -= 1;
                    return Ok(Some(element));
                }
                if !cell.is_not_nil() {
                    return Ok(None);
                }
                if *cons == env.type_of(*cell)? {
                    // More conses than `safe-length` counted distinct ones: a cycle.
                    return Err(ConvertError::Unrepresentable("a circular list".into()).into());
                }
                *tail = Some(None);
                Ok(Some(*cell))
            }
            Frame::Vector { elements, next, .. } => {
                if *next >= elements.len() {
                    return Ok(None);
                }
                let element = elements.get(*next)?;
                *next += 1;
                Ok(Some(element))
            }
        }
    }

    fn finish(self) -> Sexp {
        match self {
            Frame::List {
                items,
                tail: Some(Some(tail)),
                ..
            } => Sexp::Dotted(items, Box::new(tail)),
            Frame::List { items, .. } => Sexp::list(items),
            Frame::Vector { items, .. } => Sexp::Vector(items),
        }
    }
}

/// A converted value, or the frame of a list or vector to walk.
enum Node<'e> {
    Atom(Sexp),
    Frame(Frame<'e>),
}

struct Walker {
    limits: Limits,
    bytes: usize,
    nodes: usize,
    /// How deep the walked value sits in the value it is part of (0: it is the whole value).
    base_depth: usize,
}

impl Walker {
    fn count(&mut self, n: usize) -> std::result::Result<(), WalkError> {
        self.nodes = self.nodes.saturating_add(n);
        if self.nodes > self.limits.max_nodes {
            return Err(ConvertError::TooMany {
                what: "a list or vector".into(),
                limit: self.limits.max_nodes,
            }
            .into());
        }
        Ok(())
    }

    /// Walk V without recursion: lists and vectors are frames on an explicit stack, at most
    /// [`MAX_DEPTH`] deep; every list is measured (`proper-list-p`, or `safe-length` for dotted
    /// and circular ones) before it is walked, so an over-long or circular list is refused before
    /// anything is built from it.
    fn walk<'e>(&mut self, env: &'e Env, v: Value<'e>) -> std::result::Result<Sexp, WalkError> {
        let mut stack: Vec<Frame<'e>> = Vec::new();
        let mut next = v;
        loop {
            let mut done = match self.node(env, next, self.base_depth + stack.len())? {
                Node::Atom(atom) => Some(atom),
                Node::Frame(frame) => {
                    stack.push(frame);
                    None
                }
            };
            loop {
                let Some(top) = stack.last_mut() else {
                    return done.ok_or_else(|| ConvertError::Shape("nothing to convert".into()).into());
                };
                if let Some(child) = done.take() {
                    top.accept(child);
                }
                match top.next_child(env)? {
                    Some(child) => {
                        next = child;
                        break;
                    }
                    None => done = stack.pop().map(Frame::finish),
                }
            }
        }
    }

    fn node<'e>(&mut self, env: &'e Env, v: Value<'e>, depth: usize) -> std::result::Result<Node<'e>, WalkError> {
        if !v.is_not_nil() {
            return Ok(Node::Atom(Sexp::Nil));
        }
        let ty = env.type_of(v)?;
        if *cons == ty || *vector == ty {
            if depth >= MAX_DEPTH {
                return Err(ConvertError::TooDeep { limit: MAX_DEPTH }.into());
            }
            if *vector == ty {
                let vec: Vector<'_> = v.into_rust()?;
                self.count(vec.len())?;
                return Ok(Node::Frame(Frame::Vector {
                    items: Vec::with_capacity(vec.len().min(4096)),
                    elements: vec,
                    next: 0,
                }));
            }
            let length = env.call(proper_list_p, (v,))?;
            let left = if length.is_not_nil() {
                length.into_rust::<i64>()?
            } else {
                // Dotted or circular: count the distinct conses; the walk checks the rest.
                env.call(safe_length, (v,))?.into_rust::<i64>()?
            };
            let left = usize::try_from(left).unwrap_or(usize::MAX);
            self.count(left)?;
            return Ok(Node::Frame(Frame::List {
                items: Vec::with_capacity(left.min(4096)),
                cell: v,
                left,
                tail: None,
            }));
        }
        Ok(Node::Atom(self.atom(env, v, ty, depth)?))
    }

    fn atom<'e>(
        &mut self,
        env: &'e Env,
        v: Value<'e>,
        ty: Value<'e>,
        depth: usize,
    ) -> std::result::Result<Sexp, WalkError> {
        if *symbol == ty {
            // `t` and the keys of a tool call are recognised by identity (cheap `eq` calls)
            // rather than by name (a call to `symbol-name` and a copy each).
            if *t == v {
                return Ok(Sexp::T);
            }
            if depth <= 1 {
                for (known, name) in [(kw_id, "id"), (kw_name, "name"), (kw_arguments, "arguments")] {
                    if *known == v {
                        return Ok(Sexp::keyword(name));
                    }
                }
            }
            let name = read_string(env.call(symbol_name, (v,))?, 4096)?;
            if env.call(keywordp, (v,))?.is_not_nil() {
                return Ok(Sexp::Keyword(name[1..].to_string()));
            }
            // Only the symbol interned under its name is that symbol: an uninterned look-alike
            // (`(make-symbol ":approved")`) must never pass for a keyword, `t` or `nil`.
            let interned = env.call(intern_soft, (name.as_str(),))?;
            if interned.is_not_nil() && interned == v {
                return Ok(Sexp::Symbol(name));
            }
            return Err(ConvertError::Unrepresentable(format!("the uninterned symbol {name}")).into());
        }
        if *string == ty {
            let s = read_string(v, self.limits.max_bytes.saturating_sub(self.bytes))?;
            self.bytes += s.len();
            return Ok(Sexp::Str(s));
        }
        if *integer == ty {
            return match v.into_rust::<i64>() {
                Ok(i) => Ok(Sexp::Int(i)),
                Err(_) => Err(ConvertError::Unrepresentable("an integer beyond 64 bits".into()).into()),
            };
        }
        if *float == ty {
            return Ok(Sexp::Float(v.into_rust::<f64>()?));
        }
        let name = read_string(env.call(symbol_name, (ty,))?, 4096).unwrap_or_else(|_| "object".into());
        Err(ConvertError::Unrepresentable(format!("a value of type {name}")).into())
    }
}

/// Convert Emacs value V to a [`Sexp`] within LIMITS, without recursion.
pub fn to_sexp(env: &Env, v: Value<'_>, limits: Limits) -> std::result::Result<Sexp, WalkError> {
    Walker {
        limits,
        bytes: 0,
        nodes: 0,
        base_depth: 0,
    }
    .walk(env, v)
}

/// What [`to_sexp`] of a whole value has used of its [`Limits`] so far.
#[derive(Debug, Clone, Copy, Default)]
pub struct Used {
    /// Bytes of strings.
    pub bytes: usize,
    /// List and vector elements.
    pub nodes: usize,
}

/// Convert V, a part DEPTH levels deep in a value being read piece by piece, as [`to_sexp`] of
/// the whole value would: the same depth limit, and LIMITS shared with the parts already read
/// (USED, updated).
pub fn to_sexp_part(
    env: &Env,
    v: Value<'_>,
    limits: Limits,
    depth: usize,
    used: &mut Used,
) -> std::result::Result<Sexp, WalkError> {
    let mut walker = Walker {
        limits,
        bytes: used.bytes,
        nodes: used.nodes,
        base_depth: depth,
    };
    let sx = walker.walk(env, v)?;
    used.bytes = walker.bytes;
    used.nodes = walker.nodes;
    Ok(sx)
}

/// Convert a [`Sexp`] to an Emacs value (it nests at most [`MAX_DEPTH`] levels, so the
/// recursion here is bounded).
pub fn from_sexp<'e>(env: &'e Env, v: &Sexp) -> Result<Value<'e>> {
    Ok(match v {
        Sexp::Nil => nil.bind(env),
        Sexp::T => t.bind(env),
        Sexp::Int(i) => i.into_lisp(env)?,
        Sexp::Float(f) => f.into_lisp(env)?,
        Sexp::Str(s) => s.as_str().into_lisp(env)?,
        Sexp::Symbol(s) => env.intern(s)?,
        Sexp::Keyword(k) => env.intern(&format!(":{k}"))?,
        Sexp::Vector(items) => {
            let vals = items.iter().map(|x| from_sexp(env, x)).collect::<Result<Vec<_>>>()?;
            env.vector(&vals)?
        }
        Sexp::List(items) => {
            let vals = items.iter().map(|x| from_sexp(env, x)).collect::<Result<Vec<_>>>()?;
            // One call to `list` instead of one `cons` per element.
            env.list(&vals)?
        }
        Sexp::Dotted(items, tail) => {
            let mut out = from_sexp(env, tail)?;
            for x in items.iter().rev() {
                out = env.cons(from_sexp(env, x)?, out)?;
            }
            out
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
/// (:execution_time_ms F :safety_level "safe" :approved t :status "success" [:modified t]))`, built directly with the symbols
/// kept as global references: going through an s-expression (allocated, converted, then freed)
/// and interning each keyword again was the largest single part of the executor's cost per
/// call for a trivial tool.
pub fn result_value<'e>(env: &'e Env, r: &agent_q_core::executor::ToolResult) -> Result<Value<'e>> {
    result_value_with_id(env, r, None)
}

/// [`result_value`], with ID, the call's own id string (which the result repeats), used as is
/// rather than copied when the result's id is its text.
pub fn result_value_with_id<'e>(
    env: &'e Env,
    r: &agent_q_core::executor::ToolResult,
    id: Option<(&str, Value<'e>)>,
) -> Result<Value<'e>> {
    let no = nil.bind(env);
    let yes = t.bind(env);
    let flag = |b: bool| if b { yes } else { no };
    let mut meta: Vec<Value<'e>> = Vec::with_capacity(8);
    meta.push(kw_execution_time_ms.bind(env));
    meta.push(r.execution_time_ms.into_lisp(env)?);
    if let Some(level) = r.safety_level {
        meta.push(kw_safety_level.bind(env));
        meta.push(constant_string(env, level.as_str())?);
    }
    meta.push(kw_approved.bind(env));
    meta.push(flag(r.approved));
    meta.push(kw_status.bind(env));
    meta.push(constant_string(
        env,
        match r.status {
            agent_q_core::executor::Status::Success => "success",
            agent_q_core::executor::Status::Failure => "failure",
            agent_q_core::executor::Status::Denied => "denied",
            agent_q_core::executor::Status::Cancelled => "cancelled",
        },
    )?);
    if r.modified {
        meta.push(kw_modified.bind(env));
        meta.push(yes);
    }
    let content = r.content.as_str().into_lisp(env)?;
    let mut items: Vec<Value<'e>> = Vec::with_capacity(10);
    items.push(kw_id.bind(env));
    items.push(match (&r.id, id) {
        (Some(text), Some((given, value))) if text == given => value,
        (Some(text), _) => text.as_str().into_lisp(env)?,
        (None, _) => no,
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

thread_local! {
    /// The constant strings of results (safety levels, statuses), made once.
    static CONSTANT_STRINGS: std::cell::RefCell<Vec<(&'static str, &'static emacs::GlobalRef)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// The Lisp string TEXT, one of a few constants of results, made once and shared by every
/// result, as a Lisp loop's literal string is: `make_string` decodes UTF-8 and allocates each
/// time, a measurable part of a trivial call. Only Emacs's thread has Lisp values, so the cache
/// is that thread's.
pub fn constant_string<'e>(env: &'e Env, text: &'static str) -> Result<Value<'e>> {
    let cached = CONSTANT_STRINGS.with(|c| c.borrow().iter().find(|(made, _)| *made == text).map(|(_, g)| *g));
    if let Some(g) = cached {
        return Ok(g.bind(env));
    }
    // A handful of constants (safety levels and statuses), each made once: leaking their
    // global references gives them the static lifetime values bound from them need.
    let v = text.into_lisp(env)?;
    let global: &'static emacs::GlobalRef = Box::leak(Box::new(v.make_global_ref()));
    CONSTANT_STRINGS.with(|c| c.borrow_mut().push((text, global)));
    Ok(v)
}

/// The message of a Lisp error that came back through a callback.
pub fn error_message(env: &Env, err: &emacs::Error) -> String {
    match err.downcast_ref::<ErrorKind>() {
        Some(ErrorKind::Signal { symbol: sym, data }) => {
            // SAFETY: the error came from a call on this env during the current module call.
            let (sym, data) = unsafe { (sym.value(env), data.value(env)) };
            // agent-q.el's helper prints with bounds. Without it, only the symbol is named:
            // `error-message-string' would print the data with the user's `print-circle', whose
            // pre-pass overflows the C stack on a deeply nested value.
            env.cons(sym, data)
                .and_then(|e| env.call("agent-q--error-message", (e,)))
                .ok()
                .and_then(|m| read_string(m, 1 << 16).ok())
                .unwrap_or_else(|| {
                    let name = env
                        .call(symbol_name, (sym,))
                        .ok()
                        .and_then(|n| read_string(n, 4096).ok())
                        .unwrap_or_else(|| "an error".into());
                    format!("{name} (its data cannot be printed)")
                })
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
