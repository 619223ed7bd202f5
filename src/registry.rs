//! Registry functions for Lisp: `agent-q--core-register`, `-get`, `-filter`, `-snapshot`...
//!
//! A REGISTRY argument is `nil` for the global registry or a value from
//! `agent-q--core-make-registry`. The public API in agent-q.el wraps these.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use emacs::{defun, Env, GlobalRef, IntoLisp, Result, Value};
use serde_json::{Map, Value as Json};

use super::convert::{self, Limits, WalkError};
use super::errors::{self, Kind};
use agent_q_core::error::RegistryError;
use agent_q_core::executor::{self, Decision, Handler, LispTool};
use agent_q_core::registry::{self, RegisterOutcome, Registry, SchemaFormat, Snapshot};
use agent_q_core::sexp::{self, Sexp};
use agent_q_core::spec::{SafetyLevel, ToolSpec};

/// A handler as the binding stores it: a Lisp function, kept alive by a global reference.
pub type LispHandler = Arc<GlobalRef>;

thread_local! {
    /// The named handlers of the tools whose review is their approval
    /// ([`agent_q_core::spec::Approval`]), each with the definition it had when a tool was first
    /// registered with it (the built-in propose_file_edit's, the gate's agent_edit's...).
    static REVIEW_DEFINITIONS: std::cell::RefCell<Vec<ReviewDefinition>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// A review handler's name, its definition as captured, and the source file that defined it.
#[derive(Clone)]
struct ReviewDefinition {
    name: String,
    definition: &'static GlobalRef,
    /// The `.el` whose compiled file defined the handler, when known: Emacs's native
    /// compiler may later replace the definition with the same code compiled natively.
    source: Option<String>,
}

/// The most named review handlers remembered: each costs a comparison per batch.
const MAX_REVIEW_HANDLERS: usize = 64;

/// Remember the definition of SYMBOL, the handler of a tool whose review is its approval, the
/// first time a tool is registered with it. Kept in the module, out of Lisp's reach.
fn capture_review_definition(env: &Env, symbol: Value<'_>) -> Result<()> {
    let name: String = env.call("symbol-name", (symbol,))?.into_rust()?;
    if REVIEW_DEFINITIONS.with(|d| d.borrow().iter().any(|r| r.name == name)) {
        return Ok(());
    }
    if REVIEW_DEFINITIONS.with(|d| d.borrow().len()) >= MAX_REVIEW_HANDLERS {
        return errors::signal(
            env,
            Kind::InvalidTool,
            format!("more than {MAX_REVIEW_HANDLERS} named handlers whose review is the approval"),
        );
    }
    let definition = env.call("symbol-function", (symbol,))?;
    let source = compiled_source(env, symbol, definition)?;
    // One reference for the session: leaked to have the static lifetime.
    let global: &'static GlobalRef = Box::leak(Box::new(definition.make_global_ref()));
    REVIEW_DEFINITIONS.with(|d| {
        d.borrow_mut().push(ReviewDefinition {
            name,
            definition: global,
            source,
        })
    });
    Ok(())
}

/// The `.el` source of SYMBOL's byte-compiled DEFINITION, loaded from its `.elc`; `None` for
/// any other definition (interpreted, native already, or of no known file).
fn compiled_source(env: &Env, symbol: Value<'_>, definition: Value<'_>) -> Result<Option<String>> {
    if !env.call("byte-code-function-p", (definition,))?.is_not_nil() {
        return Ok(None);
    }
    let file = env.call("symbol-file", (symbol, env.intern("defun")?))?;
    if !file.is_not_nil() {
        return Ok(None);
    }
    let file: String = file.into_rust()?;
    Ok(file
        .strip_suffix(".elc")
        .map(|stem| format!("{stem}.el"))
        .filter(|el| std::path::Path::new(el).is_file()))
}

/// Whether NOW is the native compilation of the very SOURCE file that defined the captured
/// byte-code: what Emacs's deferred native compilation installs by itself, some seconds after
/// an `.elc` was loaded, in an interactive Emacs 28+ built with native compilation. The
/// `.eln`'s name carries a hash of the source's contents, so it names that file as it is.
fn natively_compiled_from(env: &Env, now: Value<'_>, source: &str) -> Result<bool> {
    for needed in [
        "subr-native-comp-unit",
        "native-comp-unit-file",
        "comp-el-to-eln-rel-filename",
    ] {
        if !env.call("fboundp", (env.intern(needed)?,))?.is_not_nil() {
            return Ok(false);
        }
    }
    let native = if env
        .call("fboundp", (env.intern("native-comp-function-p")?,))?
        .is_not_nil()
    {
        env.call("native-comp-function-p", (now,))?
    } else {
        env.call("subr-native-elisp-p", (now,))?
    };
    if !native.is_not_nil() {
        return Ok(false);
    }
    let unit = env.call("subr-native-comp-unit", (now,))?;
    let eln = env.call("native-comp-unit-file", (unit,))?;
    if !eln.is_not_nil() {
        return Ok(false);
    }
    let eln = env.call("file-name-nondirectory", (eln,))?;
    let expected = env.call("comp-el-to-eln-rel-filename", (source,))?;
    env.call("equal", (eln, expected)).map(|v| v.is_not_nil())
}

/// Whether every named handler of a tool whose review is its approval still has the definition
/// it was registered with. A symbol's function can be redefined or advised by any code in
/// Emacs; its review is then no longer known to be the approval, and the calls of such tools
/// are asked about as any dangerous call. The one replacement that is not a redefinition is
/// the native compilation of the same source file (see [`natively_compiled_from`]): it is
/// remembered as the handler's definition from then on.
pub fn review_definition_intact(env: &Env) -> Result<bool> {
    let captured: Vec<ReviewDefinition> = REVIEW_DEFINITIONS.with(|d| d.borrow().clone());
    for (index, review) in captured.into_iter().enumerate() {
        let now = env.call("symbol-function", (env.intern(&review.name)?,))?;
        if now == review.definition.bind(env) {
            continue;
        }
        match &review.source {
            Some(source) if natively_compiled_from(env, now, source)? => {
                let global: &'static GlobalRef = Box::leak(Box::new(now.make_global_ref()));
                REVIEW_DEFINITIONS.with(|d| {
                    if let Some(entry) = d.borrow_mut().get_mut(index) {
                        entry.definition = global;
                        entry.source = None;
                    }
                });
            }
            _ => return Ok(false),
        }
    }
    Ok(true)
}

/// A registry shared between Lisp and the executor.
pub type Shared = Arc<Mutex<Registry<Handler<LispHandler>>>>;

/// The default, global registry.
pub fn global() -> &'static Shared {
    static GLOBAL: OnceLock<Shared> = OnceLock::new();
    GLOBAL.get_or_init(|| Arc::new(Mutex::new(Registry::new())))
}

/// The registry REGISTRY designates: the global one for `nil`.
pub fn resolve<'e>(registry: Value<'e>) -> Result<&'e Shared> {
    if !registry.is_not_nil() {
        return Ok(global());
    }
    match registry.into_rust::<&Shared>() {
        Ok(shared) => Ok(shared),
        Err(_) => errors::signal(
            registry.env,
            Kind::Generic,
            "REGISTRY must be nil (the global registry) or a registry from agent-q-make-registry",
        ),
    }
}

/// V as a string, or an `agent-q-error` naming WHAT and the problem.
pub fn string_arg(env: &Env, v: Value<'_>, what: &str) -> Result<String> {
    super::args::string(env, v, what, super::args::MAX_NAME_BYTES)
}

/// Lock a registry, recovering from a poisoned lock.
pub fn lock(shared: &Shared) -> MutexGuard<'_, Registry<Handler<LispHandler>>> {
    shared.lock().unwrap_or_else(|p| p.into_inner())
}

/// Convert V, signalling `agent-q-conversion-error` (or KIND) for what cannot cross.
pub fn sexp_of(env: &Env, v: Value<'_>, kind: Kind) -> Result<Sexp> {
    match convert::to_sexp(env, v, Limits::default()) {
        Ok(s) => Ok(s),
        Err(WalkError::Convert(e)) => errors::signal(env, kind, format!("Cannot convert value: {e}")),
        Err(WalkError::Emacs(e)) => Err(e),
    }
}

fn signal_registry<T>(env: &Env, e: RegistryError) -> Result<T> {
    let kind = match e {
        RegistryError::ToolExists { .. } => Kind::ToolExists,
        RegistryError::UnknownTool(_) => Kind::UnknownTool,
        RegistryError::InvalidSpec(_) => Kind::InvalidTool,
        RegistryError::InvalidSnapshot(_) => Kind::Generic,
    };
    errors::signal(env, kind, e.to_string())
}

/// Release handlers the registry no longer holds.
pub(crate) fn release(env: &Env, handlers: impl IntoIterator<Item = Handler<LispHandler>>) {
    for h in handlers {
        if let Handler::Lisp(tool) = h {
            for arc in std::iter::once(tool.run).chain(tool.guard) {
                if let Ok(global) = Arc::try_unwrap(arc) {
                    let _ = global.free(env);
                }
            }
        }
    }
}

/// Whether two handlers are the same functions, compared with `eq`.
fn same_handler<'e>(env: &'e Env) -> impl Fn(&Handler<LispHandler>, &Handler<LispHandler>) -> bool + 'e {
    move |a, b| match (a, b) {
        (Handler::Lisp(a), Handler::Lisp(b)) => {
            let same = |x: &LispHandler, y: &LispHandler| x.bind(env) == y.bind(env);
            same(&a.run, &b.run)
                && a.asynchronous == b.asynchronous
                && match (&a.guard, &b.guard) {
                    (None, None) => true,
                    (Some(x), Some(y)) => same(x, y),
                    _ => false,
                }
        }
        (Handler::Native(a), Handler::Native(b)) => Arc::ptr_eq(a, b),
        _ => false,
    }
}

/// FUNCTION as a handler to keep, or an `agent-q-invalid-tool` error naming FIELD.
fn function_ref<'e>(env: &'e Env, function: Value<'e>, tool: &str, field: &str) -> Result<LispHandler> {
    if !env.call("functionp", (function,))?.is_not_nil() {
        return errors::signal(
            env,
            Kind::InvalidTool,
            format!("Invalid tool definition {tool}: field '{field}': not a function"),
        );
    }
    Ok(Arc::new(function.make_global_ref()))
}

/// A registration as a Lisp plist.
pub fn registration_value<'e>(env: &'e Env, r: &registry::Registration) -> Result<Value<'e>> {
    let json = serde_json::to_value(r).unwrap_or(Json::Null);
    convert::json_value(env, &json)
}

/// Make a new, empty registry, independent of the global one.
#[defun]
fn make_registry() -> Result<Shared> {
    Ok(Arc::new(Mutex::new(Registry::new())))
}

/// Register DEFINITION (a plist) in REGISTRY with HANDLER, evaluated from SOURCE. GUARD, when
/// non-nil, is the tool's guard (see `agent-q-define-tool'); ASYNC non-nil means HANDLER answers
/// through a callback. Return (OUTCOME . REGISTRATION), OUTCOME one of :added :unchanged
/// :replaced :redefined.
#[defun]
fn register<'e>(
    env: &'e Env,
    registry: Value<'e>,
    definition: Value<'e>,
    handler: Value<'e>,
    source: Value<'e>,
    guard: Value<'e>,
    asynchronous: Value<'e>,
) -> Result<Value<'e>> {
    let shared = resolve(registry)?;
    let def = sexp_of(env, definition, Kind::InvalidTool)?;
    let spec = match ToolSpec::from_sexp(&def) {
        Ok(s) => s,
        Err(e) => return errors::signal(env, Kind::InvalidTool, e.to_string()),
    };
    let handler = if handler.is_not_nil() {
        let run = function_ref(env, handler, &spec.name, "handler")?;
        let guard = if guard.is_not_nil() {
            Some(function_ref(env, guard, &spec.name, "guard")?)
        } else {
            None
        };
        if spec.approval.by_review() && env.call("symbolp", (handler,))?.is_not_nil() {
            capture_review_definition(env, handler)?;
        }
        Some(Handler::Lisp(LispTool {
            run,
            guard,
            asynchronous: asynchronous.is_not_nil(),
        }))
    } else {
        None
    };
    let source: Option<String> = if source.is_not_nil() {
        Some(string_arg(env, source, "The source file")?)
    } else {
        None
    };
    let outcome = lock(shared).register(spec, source, handler, &registry::now_iso8601(), same_handler(env));
    match outcome {
        Ok((reg, outcome, displaced)) => {
            release(env, displaced);
            let word = match outcome {
                RegisterOutcome::Added => ":added",
                RegisterOutcome::Unchanged => ":unchanged",
                RegisterOutcome::Replaced => ":replaced",
                RegisterOutcome::Redefined => ":redefined",
            };
            env.cons(env.intern(word)?, registration_value(env, &reg)?)
        }
        Err(e) => signal_registry(env, e),
    }
}

/// The registration of NAME in REGISTRY as a plist, or nil.
#[defun]
fn get<'e>(env: &'e Env, registry: Value<'e>, name: Value<'e>) -> Result<Value<'e>> {
    let name = string_arg(env, name, "The tool name")?;
    let reg = lock(resolve(registry)?).get(&name);
    match reg {
        Some(r) => registration_value(env, &r),
        None => env.intern("nil"),
    }
}

/// The value of global reference G as a value of its own, which outlives G.
pub(crate) fn own<'e>(env: &'e Env, g: &GlobalRef) -> Result<Value<'e>> {
    // A value bound from a global reference borrows it; pass the function through a variable so
    // the value returned does not outlive the reference.
    let slot = env.intern("agent-q--handler-transfer")?;
    env.call("set", (slot, g.bind(env)))?;
    let value = env.call("symbol-value", (slot,))?;
    env.call("set", (slot, env.intern("nil")?))?;
    Ok(value)
}

/// The functions of NAME in REGISTRY: (:handler F :guard G :async BOOL :id ID), or nil.
/// A native tool has no Lisp handler: :handler is nil.
#[defun]
fn handler<'e>(env: &'e Env, registry: Value<'e>, name: Value<'e>) -> Result<Value<'e>> {
    let name = string_arg(env, name, "The tool name")?;
    let entry = lock(resolve(registry)?).entry(&name);
    let Some(entry) = entry else { return env.intern("nil") };
    let nil = env.intern("nil")?;
    let (run, guard, asynchronous) = match &entry.handler {
        Some(Handler::Lisp(tool)) => (
            own(env, &tool.run)?,
            match &tool.guard {
                Some(g) => own(env, g)?,
                None => nil,
            },
            tool.asynchronous,
        ),
        _ => (nil, nil, false),
    };
    env.list((
        env.intern(":handler")?,
        run,
        env.intern(":guard")?,
        guard,
        env.intern(":async")?,
        asynchronous,
        env.intern(":id")?,
        i64::try_from(entry.id).unwrap_or(i64::MAX),
    ))
}

/// The sorted tool names of REGISTRY; disabled ones too when INCLUDE-DISABLED.
#[defun]
fn names<'e>(env: &'e Env, registry: Value<'e>, include_disabled: Value<'e>) -> Result<Value<'e>> {
    let names = lock(resolve(registry)?).names(include_disabled.is_not_nil());
    let vals = names
        .iter()
        .map(|n| n.as_str().into_lisp(env))
        .collect::<Result<Vec<_>>>()?;
    env.list(&vals)
}

pub(crate) fn name_list(env: &Env, v: Value<'_>, what: &str) -> Result<Vec<String>> {
    let s = sexp_of(env, v, Kind::Generic)?;
    let Some(items) = s.sequence_items() else {
        return errors::signal(
            env,
            Kind::Generic,
            format!("{what} must be a list, got {}", sexp::describe(&s)),
        );
    };
    items
        .iter()
        .map(
            |x| match x.as_keyword().or_else(|| x.as_str()).or_else(|| x.as_symbol()) {
                Some(n) => Ok(n.to_string()),
                None => errors::signal(env, Kind::Generic, format!("{what}: not a name: {}", sexp::describe(x))),
            },
        )
        .collect()
}

/// Registrations of REGISTRY at most MAX-LEVEL with any of CATEGORIES, sorted by name.
#[defun]
fn filter<'e>(
    env: &'e Env,
    registry: Value<'e>,
    max_level: Value<'e>,
    categories: Value<'e>,
    include_disabled: Value<'e>,
) -> Result<Value<'e>> {
    let level = if max_level.is_not_nil() {
        let s = sexp_of(env, max_level, Kind::Generic)?;
        let name = s
            .as_keyword()
            .or_else(|| s.as_str())
            .or_else(|| s.as_symbol())
            .unwrap_or("")
            .to_string();
        match name.parse::<SafetyLevel>() {
            Ok(l) => Some(l),
            Err(e) => return errors::signal(env, Kind::Generic, e.problem),
        }
    } else {
        None
    };
    let cats = name_list(env, categories, "categories")?;
    let regs = lock(resolve(registry)?).filter(level, &cats, include_disabled.is_not_nil());
    let vals = regs
        .iter()
        .map(|r| registration_value(env, r))
        .collect::<Result<Vec<_>>>()?;
    env.list(&vals)
}

/// Enable or disable NAME in REGISTRY; return its registration.
#[defun]
fn set_enabled<'e>(env: &'e Env, registry: Value<'e>, name: Value<'e>, enabled: Value<'e>) -> Result<Value<'e>> {
    let name = string_arg(env, name, "The tool name")?;
    let r = lock(resolve(registry)?).set_enabled(&name, enabled.is_not_nil());
    match r {
        Ok(r) => registration_value(env, &r),
        Err(e) => signal_registry(env, e),
    }
}

/// Remove NAME from REGISTRY. Return t when it was there.
#[defun]
fn remove<'e>(env: &'e Env, registry: Value<'e>, name: Value<'e>) -> Result<Value<'e>> {
    let name = string_arg(env, name, "The tool name")?;
    let shared = resolve(registry)?;
    let mut reg = lock(shared);
    let existed = reg.get(&name).is_some();
    let handler = reg.remove(&name);
    drop(reg);
    release(env, handler);
    env.intern(if existed { "t" } else { "nil" })
}

/// A snapshot of REGISTRY: a plist (:tools [REGISTRATION...]), or JSON text when AS-JSON.
#[defun]
fn snapshot<'e>(env: &'e Env, registry: Value<'e>, as_json: Value<'e>) -> Result<Value<'e>> {
    let snap = lock(resolve(registry)?).snapshot();
    let json = serde_json::to_value(&snap).unwrap_or(Json::Null);
    if as_json.is_not_nil() {
        json.to_string().into_lisp(env)
    } else {
        convert::json_value(env, &json)
    }
}

/// Empty JSON objects come back from Lisp as nil (null): give the schemas of SNAPSHOT their
/// objects back. Only schema positions are touched (a snapshot's `parameters` and
/// `output_schema`, and the subschemas inside them): a null that is data (a `default`, a
/// `const`, an `enum` value) stays null. A property of any type (`{}`) came back null and made
/// the snapshot impossible to restore.
fn restore_empty_objects(snapshot: &mut Json) {
    let Some(tools) = snapshot.get_mut("tools").and_then(Json::as_array_mut) else {
        return;
    };
    for tool in tools {
        let Some(spec) = tool.get_mut("spec").and_then(Json::as_object_mut) else {
            continue;
        };
        if let Some(parameters) = spec.get_mut("parameters") {
            restore_schema(parameters);
        }
        if let Some(output) = spec.get_mut("output_schema").filter(|o| !o.is_null()) {
            restore_schema(output);
        }
    }
}

/// Give SCHEMA (a JSON Schema read back from a plist) its empty objects back, recursively.
/// Its depth is bounded: it was read within the walker's depth limit.
fn restore_schema(schema: &mut Json) {
    if schema.is_null() {
        *schema = Json::Object(Map::new());
        return;
    }
    let Some(map) = schema.as_object_mut() else {
        return;
    };
    for (keyword, x) in map.iter_mut() {
        match keyword.as_str() {
            // Objects whose values are schemas.
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => {
                if x.is_null() {
                    *x = Json::Object(Map::new());
                }
                if let Some(subschemas) = x.as_object_mut() {
                    subschemas.values_mut().for_each(restore_schema);
                }
            }
            // Schemas, or (items in older drafts) lists of schemas.
            "items"
            | "additionalProperties"
            | "additionalItems"
            | "not"
            | "if"
            | "then"
            | "else"
            | "contains"
            | "propertyNames"
            | "unevaluatedProperties"
            | "unevaluatedItems"
            | "contentSchema" => match x {
                Json::Array(list) => list.iter_mut().for_each(restore_schema),
                x => restore_schema(x),
            },
            // Lists of schemas.
            "allOf" | "anyOf" | "oneOf" | "prefixItems" => {
                if let Some(list) = x.as_array_mut() {
                    list.iter_mut().for_each(restore_schema);
                }
            }
            _ => {}
        }
    }
}

/// Replace the contents of REGISTRY with SNAPSHOT (a plist or JSON text). Return the count.
#[defun]
fn restore<'e>(env: &'e Env, registry: Value<'e>, snapshot: Value<'e>) -> Result<usize> {
    let s = sexp_of(env, snapshot, Kind::Generic)?;
    let parsed = match s.as_str() {
        Some(text) => sexp::parse_json(text, 256 << 20).map_err(|e| e.to_string()),
        None => sexp::to_json(&s, None).map_err(|e| e.to_string()),
    };
    let mut json = match parsed {
        Ok(j) => j,
        Err(e) => return errors::signal(env, Kind::Generic, format!("Invalid registry snapshot: {e}")),
    };
    restore_empty_objects(&mut json);
    let snap: Snapshot = match serde_json::from_value(json) {
        Ok(s) => s,
        Err(e) => return errors::signal(env, Kind::Generic, format!("Invalid registry snapshot: {e}")),
    };
    let count = snap.tools.len();
    let dropped = lock(resolve(registry)?).restore(snap);
    match dropped {
        Ok(d) => {
            release(env, d);
            Ok(count)
        }
        Err(e) => signal_registry(env, e),
    }
}

/// Schemas of the tools NAMES (all enabled tools when nil) in FORMAT (:openai or :anthropic),
/// as plists, or as one JSON array text when AS-JSON.
#[defun]
fn schemas<'e>(
    env: &'e Env,
    registry: Value<'e>,
    names: Value<'e>,
    format: Value<'e>,
    as_json: Value<'e>,
) -> Result<Value<'e>> {
    let fmt = if format.is_not_nil() && env.call("symbolp", (format,))?.is_not_nil() {
        sexp_of(env, format, Kind::Generic)?
    } else if format.is_not_nil() {
        return errors::signal(
            env,
            Kind::Generic,
            format!(
                "The schema format must be :openai or :anthropic, not a {}",
                super::args::type_name(env, format)
            ),
        );
    } else {
        Sexp::Nil
    };
    let format = match fmt.as_keyword().or_else(|| fmt.as_symbol()) {
        Some("openai") => SchemaFormat::OpenAi,
        Some("anthropic") => SchemaFormat::Anthropic,
        None if fmt.is_nil() => SchemaFormat::OpenAi,
        _ => {
            return errors::signal(
                env,
                Kind::Generic,
                format!(
                    "Unknown schema format {} (expected :openai or :anthropic)",
                    sexp::describe(&fmt)
                ),
            )
        }
    };
    let wanted = if names.is_not_nil() {
        Some(name_list(env, names, "tools")?)
    } else {
        None
    };
    let schemas = lock(resolve(registry)?).schemas(wanted.as_deref(), format);
    if as_json.is_not_nil() {
        // Serialize the cached schemas in place: deep-copying them into one array first cost
        // as much as the serialization itself.
        let refs: Vec<&Json> = schemas.iter().map(|s| s.as_ref()).collect();
        return match serde_json::to_string(&refs) {
            Ok(text) => text.into_lisp(env),
            Err(e) => errors::signal(env, Kind::Generic, format!("Cannot serialize the schemas: {e}")),
        };
    }
    let vals = schemas
        .iter()
        .map(|s| convert::json_value(env, s))
        .collect::<Result<Vec<_>>>()?;
    env.list(&vals)
}

/// A number that changes whenever REGISTRY changes.
#[defun]
fn generation(registry: Value<'_>) -> Result<i64> {
    Ok(lock(resolve(registry)?).generation() as i64)
}

/// Execution metrics of REGISTRY: a list of (NAME :calls N :failures N :denials N :total_ms F
/// :max_ms F), sorted by name. With RESET non-nil, forget them afterwards.
#[defun]
fn metrics<'e>(env: &'e Env, registry: Value<'e>, reset: Value<'e>) -> Result<Value<'e>> {
    let shared = resolve(registry)?;
    let mut reg = lock(shared);
    let rows: Vec<(String, Json)> = reg
        .metrics()
        .iter()
        .map(|(k, m)| (k.clone(), serde_json::to_value(m).unwrap_or(Json::Null)))
        .collect();
    if reset.is_not_nil() {
        reg.reset_metrics();
    }
    drop(reg);
    let vals = rows
        .iter()
        .map(|(name, m)| env.cons(name.as_str(), convert::json_value(env, m)?))
        .collect::<Result<Vec<_>>>()?;
    env.list(&vals)
}

/// Validate ARGS (a plist or JSON text) for tool NAME in REGISTRY: nil, or the error message.
#[defun]
fn validate<'e>(env: &'e Env, registry: Value<'e>, name: Value<'e>, args: Value<'e>) -> Result<Value<'e>> {
    let name = string_arg(env, name, "The tool name")?;
    let entry = lock(resolve(registry)?).entry(&name);
    let Some(entry) = entry else {
        return format!("Unknown tool: {name}").into_lisp(env);
    };
    let s = match convert::to_sexp(env, args, Limits::default()) {
        Ok(s) => s,
        Err(WalkError::Convert(e)) => return format!("Invalid arguments for {name}: {e}").into_lisp(env),
        Err(WalkError::Emacs(e)) => return Err(e),
    };
    let parsed = executor::arguments_to_json(Some(&s), &entry.registration.spec.parameters, 16 << 20);
    let result = parsed
        .map_err(|e| format!("Invalid arguments for {name}: {e}"))
        .and_then(|a| executor::check_arguments(&name, &entry.registration.spec.parameters, &entry.validator, &a));
    match result {
        Ok(()) => env.intern("nil"),
        Err(msg) => msg.into_lisp(env),
    }
}

/// Interpret DECISION from an approval function for tool NAME called with ARGS, by the same
/// rules as the executor: (:approved ARGS) or (:approved NEW-ARGS :modified t), or
/// (:denied MESSAGE). Modified arguments are validated when NAME is registered in REGISTRY.
#[defun]
fn decide<'e>(
    env: &'e Env,
    registry: Value<'e>,
    name: Value<'e>,
    decision: Value<'e>,
    args: Value<'e>,
) -> Result<Value<'e>> {
    let name = string_arg(env, name, "The tool name")?;
    let d = match convert::to_sexp(env, decision, Limits::default()) {
        Ok(s) => executor::parse_decision(&s),
        Err(WalkError::Convert(e)) => Decision::Invalid(format!(
            "the approval function returned a value that cannot be read: {e}"
        )),
        Err(WalkError::Emacs(e)) => return Err(e),
    };
    let denied = |env: &'e Env, msg: String| env.list((env.intern(":denied")?, msg));
    match d {
        Decision::Approved | Decision::Granted(_) | Decision::Rule { allow: true, .. } => {
            env.list((env.intern(":approved")?, args))
        }
        Decision::Modified(new_args) => {
            let entry = lock(resolve(registry)?).entry(&name);
            if let Some(entry) = entry {
                let checked =
                    executor::arguments_to_json(Some(&new_args), &entry.registration.spec.parameters, 16 << 20)
                        .map_err(|e| format!("Invalid arguments for {name}: {e}"))
                        .and_then(|a| {
                            executor::check_arguments(&name, &entry.registration.spec.parameters, &entry.validator, &a)
                        });
                if let Err(msg) = checked {
                    return denied(env, format!("The user modified the arguments, but {msg}"));
                }
            }
            env.list((
                env.intern(":approved")?,
                convert::from_sexp(env, &new_args)?,
                env.intern(":modified")?,
                env.intern("t")?,
            ))
        }
        other => denied(env, executor::denial_message(&other)),
    }
}

/// The module's version string.
#[defun]
fn version() -> Result<String> {
    Ok(super::VERSION.to_string())
}
