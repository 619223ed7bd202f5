//! The tool registry: registration rules, lookup, filtering, snapshots and LLM schemas.
//!
//! Registration rules:
//!
//! - a new name gets an enabled registration stamped with `created_at` (ISO 8601, UTC);
//! - an identical spec returns the existing registration unchanged (its handler may be rebound);
//! - a different version replaces the registration;
//! - the same version (two unversioned specs count as the same) with a different spec fails with
//!   [`RegistryError::ToolExists`], unless both registrations come from the same SOURCE file:
//!   re-evaluating a definition in the file that defines it is a redefinition, as with `defun`,
//!   and keeps the registration's `created_at` and enabled state.
//!
//! The registry is generic over the handler type `H`, so the pure core stores no Emacs values;
//! the binding layer stores Lisp functions and native tools there.
//!
//! # Identity
//!
//! Every registration has an id, unique across all registries of the process, that changes
//! whenever what would run changes: a new definition (added, replaced, redefined, or restored from
//! a snapshot with a different definition) or a different handler. Decisions attach to ids, never
//! to names: a call approved for a tool does not run if the tool was replaced while the user
//! decided, and "always allow this tool" does not carry over to whatever next takes its name.
//! A snapshot restore keeps a tool's handler (and id) only when the restored definition is
//! identical to the current one: a snapshot cannot, say, lower a tool's safety level while
//! keeping the handler that the level was chosen for.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value as Json};

use crate::error::RegistryError;
use crate::spec::{SafetyLevel, ToolSpec};

/// A registered tool: its spec plus runtime state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Registration {
    /// The specification.
    pub spec: ToolSpec,
    /// Whether the tool is offered and may run.
    pub enabled: bool,
    /// When it was registered, ISO 8601 in UTC.
    pub created_at: String,
    /// The file the definition was evaluated from, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// The whole state of a registry, as data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Every registration, sorted by name, disabled ones included.
    pub tools: Vec<Registration>,
}

/// What [`Registry::register`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegisterOutcome {
    /// A new name.
    Added,
    /// An identical spec was already registered.
    Unchanged,
    /// A different version replaced the old registration.
    Replaced,
    /// A definition re-evaluated from its own source file replaced the old one.
    Redefined,
}

/// The formats [`Registry::schemas`] can produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SchemaFormat {
    /// `{"type":"function","function":{name, description, parameters, strict}}`.
    OpenAi,
    /// `{name, description, input_schema}`.
    Anthropic,
}

/// Per-tool execution counters.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ToolMetrics {
    /// Executions attempted (including failures and denials).
    pub calls: u64,
    /// Executions that failed (invalid arguments, handler errors, timeouts).
    pub failures: u64,
    /// Executions the user denied.
    pub denials: u64,
    /// Executions withdrawn before they finished (the user or the client cancelled).
    pub cancelled: u64,
    /// Total handler time in milliseconds.
    pub total_ms: f64,
    /// Longest handler time in milliseconds.
    pub max_ms: f64,
}

/// How an execution ended, for [`ToolMetrics`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    /// It ran and succeeded.
    Success,
    /// It failed.
    Failure,
    /// The user denied it.
    Denied,
    /// It was cancelled.
    Cancelled,
}

/// What the executor needs of a registered tool, cloned out so no lock is held while it runs.
#[derive(Debug)]
pub struct ToolEntry<H> {
    /// The registration's id (see "Identity" above).
    pub id: u64,
    /// The registration.
    pub registration: Arc<Registration>,
    /// The compiled argument schema.
    pub validator: Arc<jsonschema::Validator>,
    /// The handler, if one is bound.
    pub handler: Option<H>,
}

struct Entry<H> {
    id: u64,
    registration: Arc<Registration>,
    validator: Arc<jsonschema::Validator>,
    handler: Option<H>,
}

/// A registry of tools, keyed and ordered by name.
pub struct Registry<H> {
    tools: BTreeMap<String, Entry<H>>,
    generation: u64,
    schema_cache: HashMap<SchemaFormat, BTreeMap<String, Arc<Json>>>,
    metrics: BTreeMap<String, ToolMetrics>,
}

impl<H> Default for Registry<H> {
    fn default() -> Self {
        Registry {
            tools: BTreeMap::new(),
            generation: 0,
            schema_cache: HashMap::new(),
            metrics: BTreeMap::new(),
        }
    }
}

/// A fresh registration id.
fn next_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The current time as ISO 8601 in UTC, e.g. `2026-11-22T03:45:17Z`.
pub fn now_iso8601() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    iso8601_from_unix(secs)
}

/// SECS since the Unix epoch as ISO 8601 in UTC.
pub fn iso8601_from_unix(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

impl<H: Clone> Registry<H> {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// A counter that changes whenever the registry changes.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    fn changed(&mut self) {
        self.generation += 1;
        self.schema_cache.clear();
    }

    /// Register SPEC, evaluated from SOURCE, with HANDLER, stamping new registrations with NOW.
    /// SAME says whether two handlers are the same (registering an identical definition with the
    /// same handler changes nothing; with another handler it changes the registration's id).
    ///
    /// Returns the registration, what happened, and the handler it displaced or did not take (so
    /// the caller can release it).
    pub fn register(
        &mut self,
        spec: ToolSpec,
        source: Option<String>,
        handler: Option<H>,
        now: &str,
        same: impl Fn(&H, &H) -> bool,
    ) -> Result<(Arc<Registration>, RegisterOutcome, Option<H>), RegistryError> {
        spec.validate()?;
        let name = spec.name.clone();
        let outcome = match self.tools.get(&name) {
            None => RegisterOutcome::Added,
            Some(old) if old.registration.spec == spec => RegisterOutcome::Unchanged,
            Some(old) if old.registration.spec.version != spec.version => RegisterOutcome::Replaced,
            Some(old) if source.is_some() && old.registration.source == source => RegisterOutcome::Redefined,
            Some(_) => {
                return Err(RegistryError::ToolExists {
                    name,
                    version: spec.version,
                })
            }
        };
        if outcome == RegisterOutcome::Unchanged {
            let entry = self
                .tools
                .get_mut(&name)
                .ok_or_else(|| RegistryError::UnknownTool(name.clone()))?;
            let displaced = match (handler, &entry.handler) {
                (None, _) => None,
                (Some(h), Some(old)) if same(old, &h) => Some(h),
                (Some(h), _) => {
                    entry.id = next_id();
                    let old = entry.handler.replace(h);
                    let registration = entry.registration.clone();
                    self.changed();
                    return Ok((registration, outcome, old));
                }
            };
            return Ok((entry.registration.clone(), outcome, displaced));
        }
        let validator = Arc::new(spec.compile()?);
        let (created_at, enabled) = match (outcome, self.tools.get(&name)) {
            (RegisterOutcome::Redefined, Some(old)) => (old.registration.created_at.clone(), old.registration.enabled),
            _ => (now.to_string(), true),
        };
        let registration = Arc::new(Registration {
            spec,
            enabled,
            created_at,
            source,
        });
        let displaced = self
            .tools
            .insert(
                name,
                Entry {
                    id: next_id(),
                    registration: registration.clone(),
                    validator,
                    handler,
                },
            )
            .and_then(|old| old.handler);
        self.changed();
        Ok((registration, outcome, displaced))
    }

    /// The registration of NAME.
    pub fn get(&self, name: &str) -> Option<Arc<Registration>> {
        self.tools.get(name).map(|e| e.registration.clone())
    }

    /// What the executor needs to run NAME.
    pub fn entry(&self, name: &str) -> Option<ToolEntry<H>> {
        self.tools.get(name).map(|e| ToolEntry {
            id: e.id,
            registration: e.registration.clone(),
            validator: e.validator.clone(),
            handler: e.handler.clone(),
        })
    }

    /// The handler bound to NAME.
    pub fn handler(&self, name: &str) -> Option<&H> {
        self.tools.get(name).and_then(|e| e.handler.as_ref())
    }

    /// Tool names, sorted.
    pub fn names(&self, include_disabled: bool) -> Vec<String> {
        self.tools
            .values()
            .filter(|e| include_disabled || e.registration.enabled)
            .map(|e| e.registration.spec.name.clone())
            .collect()
    }

    /// Registrations sorted by name, at most MAX_SAFETY and, when CATEGORIES is non-empty, with at
    /// least one of them.
    pub fn filter(
        &self,
        max_safety: Option<SafetyLevel>,
        categories: &[String],
        include_disabled: bool,
    ) -> Vec<Arc<Registration>> {
        self.tools
            .values()
            .map(|e| &e.registration)
            .filter(|r| include_disabled || r.enabled)
            .filter(|r| max_safety.is_none_or(|max| r.spec.safety_level <= max))
            .filter(|r| categories.is_empty() || r.spec.categories.iter().any(|c| categories.contains(c)))
            .cloned()
            .collect()
    }

    /// Enable or disable NAME. Idempotent; an error for an unknown name.
    pub fn set_enabled(&mut self, name: &str, enabled: bool) -> Result<Arc<Registration>, RegistryError> {
        let entry = self
            .tools
            .get_mut(name)
            .ok_or_else(|| RegistryError::UnknownTool(name.to_string()))?;
        if entry.registration.enabled == enabled {
            return Ok(entry.registration.clone());
        }
        let mut registration = (*entry.registration).clone();
        registration.enabled = enabled;
        entry.registration = Arc::new(registration);
        let result = entry.registration.clone();
        self.changed();
        Ok(result)
    }

    /// Remove NAME, returning its handler. Idempotent.
    pub fn remove(&mut self, name: &str) -> Option<H> {
        let removed = self.tools.remove(name)?;
        self.changed();
        removed.handler
    }

    /// The whole registry as data.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            tools: self.tools.values().map(|e| (*e.registration).clone()).collect(),
        }
    }

    /// Replace the registry's contents with SNAPSHOT. All or nothing: every registration is
    /// validated first. A tool whose restored definition is identical to its current one keeps
    /// its handler and id; any other handler is returned (the tool is left without one).
    pub fn restore(&mut self, snapshot: Snapshot) -> Result<Vec<H>, RegistryError> {
        let mut fresh = BTreeMap::new();
        for registration in snapshot.tools {
            let name = registration.spec.name.clone();
            registration.spec.validate()?;
            if fresh.contains_key(&name) {
                return Err(RegistryError::InvalidSnapshot(format!("tool {name} appears twice")));
            }
            let validator = Arc::new(registration.spec.compile()?);
            fresh.insert(name, (registration, validator));
        }
        // Validated: now nothing can fail, so moving handlers over is all or nothing.
        let fresh: BTreeMap<String, Entry<H>> = fresh
            .into_iter()
            .map(|(name, (registration, validator))| {
                let kept = match self.tools.get_mut(&name) {
                    Some(old) if old.registration.spec == registration.spec => old.handler.take().map(|h| (h, old.id)),
                    _ => None,
                };
                let (handler, id) = match kept {
                    Some((h, id)) => (Some(h), id),
                    None => (None, next_id()),
                };
                let entry = Entry {
                    id,
                    registration: Arc::new(registration),
                    validator,
                    handler,
                };
                (name, entry)
            })
            .collect();
        let dropped = std::mem::replace(&mut self.tools, fresh)
            .into_values()
            .filter_map(|e| e.handler)
            .collect();
        self.changed();
        Ok(dropped)
    }

    /// Schemas for the LLM of NAMES (all enabled tools when `None`), in FORMAT. Unknown names are
    /// skipped. Each tool's schema is built once and cached until the registry changes.
    pub fn schemas(&mut self, names: Option<&[String]>, format: SchemaFormat) -> Vec<Arc<Json>> {
        let wanted: Vec<String> = match names {
            Some(n) => n.to_vec(),
            None => self.names(false),
        };
        let cache = self.schema_cache.entry(format).or_default();
        wanted
            .iter()
            .filter_map(|name| {
                if let Some(s) = cache.get(name) {
                    return Some(s.clone());
                }
                let spec = &self.tools.get(name)?.registration.spec;
                let schema = Arc::new(schema_for(spec, format));
                cache.insert(name.clone(), schema.clone());
                Some(schema)
            })
            .collect()
    }

    /// Count one execution of NAME.
    pub fn record(&mut self, name: &str, outcome: CallOutcome, elapsed_ms: f64) {
        let m = self.metrics.entry(name.to_string()).or_default();
        m.calls += 1;
        match outcome {
            CallOutcome::Success => {}
            CallOutcome::Failure => m.failures += 1,
            CallOutcome::Denied => m.denials += 1,
            CallOutcome::Cancelled => m.cancelled += 1,
        }
        m.total_ms += elapsed_ms;
        m.max_ms = m.max_ms.max(elapsed_ms);
    }

    /// The execution counters, by tool name.
    pub fn metrics(&self) -> &BTreeMap<String, ToolMetrics> {
        &self.metrics
    }

    /// Forget all execution counters.
    pub fn reset_metrics(&mut self) {
        self.metrics.clear();
    }
}

/// SPEC's schema for the LLM in FORMAT.
pub fn schema_for(spec: &ToolSpec, format: SchemaFormat) -> Json {
    match format {
        SchemaFormat::OpenAi => json!({
            "type": "function",
            "function": {
                "name": spec.name,
                "description": spec.description,
                "parameters": spec.parameters,
                "strict": false,
            }
        }),
        SchemaFormat::Anthropic => json!({
            "name": spec.name,
            "description": spec.description,
            "input_schema": spec.parameters,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(name: &str, version: Option<&str>, param: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: format!("The {name} tool."),
            parameters: json!({"type":"object","properties":{param:{"type":"string"}},"required":[]}),
            safety_level: SafetyLevel::Safe,
            categories: vec!["introspection".into()],
            version: version.map(str::to_string),
            tags: vec![],
            output_schema: None,
            hints: Default::default(),
            approval: Default::default(),
        }
    }

    fn reg() -> Registry<u32> {
        Registry::new()
    }

    fn eq(a: &u32, b: &u32) -> bool {
        a == b
    }

    #[test]
    fn a_new_name_is_enabled_and_stamped() {
        let mut r = reg();
        let (g, outcome, _) = r
            .register(spec("a", None, "x"), None, Some(1), "2026-01-01T00:00:00Z", eq)
            .unwrap();
        assert_eq!(outcome, RegisterOutcome::Added);
        assert!(g.enabled);
        assert_eq!(g.created_at, "2026-01-01T00:00:00Z");
        assert_eq!(r.get("a").unwrap(), g);
        assert!(r.get("nope").is_none());
    }

    #[test]
    fn identical_spec_returns_the_existing_registration_and_rebinds_the_handler() {
        let mut r = reg();
        r.register(spec("a", None, "x"), None, Some(1), "t1", eq).unwrap();
        let gen = r.generation();
        let (g, outcome, displaced) = r.register(spec("a", None, "x"), None, Some(2), "t2", eq).unwrap();
        assert_eq!(outcome, RegisterOutcome::Unchanged);
        assert_eq!(g.created_at, "t1");
        assert_eq!(displaced, Some(1));
        assert_eq!(r.handler("a"), Some(&2));
        assert_ne!(r.generation(), gen, "another handler is another tool");
        let gen = r.generation();
        let id = r.entry("a").unwrap().id;
        let (_, outcome, displaced) = r.register(spec("a", None, "x"), None, Some(2), "t3", eq).unwrap();
        assert_eq!((outcome, displaced), (RegisterOutcome::Unchanged, Some(2)));
        assert_eq!(r.entry("a").unwrap().id, id, "the same handler keeps the identity");
        assert_eq!(
            r.generation(),
            gen,
            "an unchanged registration does not invalidate caches"
        );
    }

    #[test]
    fn identity_changes_with_what_would_run() {
        let mut r = reg();
        r.register(spec("a", Some("1"), "x"), None, Some(1), "t1", eq).unwrap();
        let first = r.entry("a").unwrap().id;
        r.set_enabled("a", false).unwrap();
        r.set_enabled("a", true).unwrap();
        assert_eq!(r.entry("a").unwrap().id, first, "enabling changes nothing that runs");
        r.register(spec("a", None, "x"), None, Some(1), "t1", eq).unwrap();
        let second = r.entry("a").unwrap().id;
        assert_ne!(second, first, "a new version is a new tool");
        r.register(spec("a", None, "x"), None, Some(9), "t1", eq).unwrap();
        assert_ne!(r.entry("a").unwrap().id, second, "a new handler is a new tool");
        let mut other = reg();
        other.register(spec("a", None, "x"), None, Some(9), "t1", eq).unwrap();
        assert_ne!(
            other.entry("a").unwrap().id,
            r.entry("a").unwrap().id,
            "ids are unique across registries"
        );
    }

    #[test]
    fn a_snapshot_cannot_change_a_tool_and_keep_its_handler() {
        let mut r = reg();
        let mut s = spec("write", None, "path");
        s.safety_level = SafetyLevel::Dangerous;
        r.register(s, None, Some(7), "t1", eq).unwrap();
        r.register(spec("read", None, "path"), None, Some(8), "t1", eq).unwrap();
        let before = (r.entry("write").unwrap().id, r.entry("read").unwrap().id);
        let mut tampered = r.snapshot();
        tampered.tools[1].spec.safety_level = SafetyLevel::Safe;
        assert_eq!(tampered.tools[1].spec.name, "write");
        let dropped = r.restore(tampered).unwrap();
        assert_eq!(dropped, vec![7], "the changed tool lost its handler");
        assert_eq!(r.handler("write"), None);
        assert_ne!(r.entry("write").unwrap().id, before.0);
        assert_eq!(r.handler("read"), Some(&8), "an identical definition keeps its handler");
        assert_eq!(r.entry("read").unwrap().id, before.1);
    }

    #[test]
    fn a_different_version_replaces() {
        let mut r = reg();
        r.register(spec("a", Some("1"), "x"), None, None, "t1", eq).unwrap();
        let (g, outcome, _) = r.register(spec("a", Some("2"), "y"), None, None, "t2", eq).unwrap();
        assert_eq!(outcome, RegisterOutcome::Replaced);
        assert_eq!(g.spec.version.as_deref(), Some("2"));
        assert_eq!(g.created_at, "t2");
        // Unversioned to versioned is a different version too.
        r.register(spec("b", None, "x"), None, None, "t1", eq).unwrap();
        assert_eq!(
            r.register(spec("b", Some("1.0.0"), "y"), None, None, "t2", eq)
                .unwrap()
                .1,
            RegisterOutcome::Replaced
        );
    }

    #[test]
    fn same_version_different_spec_is_refused_with_a_suggestion() {
        let mut r = reg();
        r.register(spec("a", None, "x"), None, None, "t1", eq).unwrap();
        let err = r.register(spec("a", None, "y"), None, None, "t2", eq).unwrap_err();
        assert_eq!(
            err,
            RegistryError::ToolExists {
                name: "a".into(),
                version: None
            }
        );
        let msg = err.to_string();
        assert!(
            msg.contains("Tool already exists") && msg.contains("a_v2") && msg.contains("bump the version"),
            "{msg}"
        );
        r.register(spec("v", Some("2.0.0"), "x"), None, None, "t1", eq).unwrap();
        assert!(r
            .register(spec("v", Some("2.0.0"), "z"), None, None, "t2", eq)
            .unwrap_err()
            .to_string()
            .contains("at version 2.0.0"));
        assert_eq!(
            r.get("a").unwrap().spec,
            spec("a", None, "x"),
            "the refused spec changed nothing"
        );
    }

    #[test]
    fn redefinition_from_the_same_source_file_is_allowed() {
        let mut r = reg();
        let src = Some("/home/u/my-tools.el".to_string());
        r.register(spec("a", None, "x"), src.clone(), None, "t1", eq).unwrap();
        r.set_enabled("a", false).unwrap();
        let (g, outcome, _) = r.register(spec("a", None, "y"), src, None, "t2", eq).unwrap();
        assert_eq!(outcome, RegisterOutcome::Redefined);
        assert_eq!(g.created_at, "t1");
        assert!(!g.enabled, "redefinition keeps the enabled state");
        // Another file may not silently take the name over.
        assert!(r
            .register(spec("a", None, "z"), Some("/other.el".into()), None, "t3", eq)
            .is_err());
        // Nor may a definition with no source.
        assert!(r.register(spec("a", None, "z"), None, None, "t3", eq).is_err());
    }

    #[test]
    fn listing_is_sorted_and_respects_enabled() {
        let mut r = reg();
        for n in ["zeta", "alpha", "mid"] {
            r.register(spec(n, None, "x"), None, None, "t", eq).unwrap();
        }
        assert_eq!(r.names(true), vec!["alpha", "mid", "zeta"]);
        r.set_enabled("mid", false).unwrap();
        assert_eq!(r.names(false), vec!["alpha", "zeta"]);
        assert_eq!(r.filter(None, &[], true).len(), 3);
        assert_eq!(
            r.filter(None, &[], false)
                .iter()
                .map(|g| g.spec.name.as_str())
                .collect::<Vec<_>>(),
            vec!["alpha", "zeta"]
        );
    }

    #[test]
    fn enable_disable_is_idempotent_and_errors_for_unknown_names() {
        let mut r = reg();
        r.register(spec("a", None, "x"), None, None, "t", eq).unwrap();
        assert!(!r.set_enabled("a", false).unwrap().enabled);
        let gen = r.generation();
        assert!(!r.set_enabled("a", false).unwrap().enabled);
        assert_eq!(r.generation(), gen);
        assert!(r.set_enabled("a", true).unwrap().enabled);
        assert_eq!(
            r.set_enabled("b", true).unwrap_err(),
            RegistryError::UnknownTool("b".into())
        );
    }

    #[test]
    fn remove_is_idempotent() {
        let mut r = reg();
        r.register(spec("a", None, "x"), None, Some(7), "t", eq).unwrap();
        assert_eq!(r.remove("a"), Some(7));
        assert_eq!(r.remove("a"), None);
        assert!(r.get("a").is_none());
    }

    #[test]
    fn filtering_by_safety_and_categories_is_an_and() {
        let mut r = reg();
        let mut mk = |name: &str, level, cats: &[&str]| {
            let mut s = spec(name, None, "x");
            s.safety_level = level;
            s.categories = cats.iter().map(|c| c.to_string()).collect();
            r.register(s, None, None, "t", eq).unwrap();
        };
        mk("s_intro", SafetyLevel::Safe, &["introspection", "xref"]);
        mk("s_buf", SafetyLevel::Safe, &["buffer"]);
        mk("c_exec", SafetyLevel::Cautious, &["execution"]);
        mk("d_buf", SafetyLevel::Dangerous, &["buffer", "filesystem"]);
        let names = |v: Vec<Arc<Registration>>| v.iter().map(|g| g.spec.name.clone()).collect::<Vec<_>>();
        assert_eq!(
            names(r.filter(Some(SafetyLevel::Safe), &[], false)),
            vec!["s_buf", "s_intro"]
        );
        assert_eq!(
            names(r.filter(Some(SafetyLevel::Cautious), &[], false)),
            vec!["c_exec", "s_buf", "s_intro"]
        );
        assert_eq!(names(r.filter(Some(SafetyLevel::Dangerous), &[], false)).len(), 4);
        assert_eq!(names(r.filter(None, &["buffer".into()], false)), vec!["d_buf", "s_buf"]);
        assert_eq!(
            names(r.filter(Some(SafetyLevel::Safe), &["buffer".into(), "xref".into()], false)),
            vec!["s_buf", "s_intro"]
        );
        assert!(r
            .filter(Some(SafetyLevel::Safe), &["execution".into()], false)
            .is_empty());
    }

    #[test]
    fn snapshot_restore_round_trips_and_is_all_or_nothing() {
        let mut r = reg();
        r.register(spec("a", Some("1"), "x"), Some("/f.el".into()), Some(1), "t1", eq)
            .unwrap();
        r.register(spec("b", None, "y"), None, Some(2), "t2", eq).unwrap();
        r.set_enabled("b", false).unwrap();
        let snap = r.snapshot();
        let text = serde_json::to_string(&snap).unwrap();
        let back: Snapshot = serde_json::from_str(&text).unwrap();
        assert_eq!(back, snap);

        let mut other: Registry<u32> = Registry::new();
        other.restore(back.clone()).unwrap();
        assert_eq!(other.snapshot(), snap);

        // Restoring into the original keeps handlers of tools that remain.
        r.remove("a");
        r.register(spec("c", None, "z"), None, Some(3), "t3", eq).unwrap();
        let dropped = r.restore(snap.clone()).unwrap();
        assert_eq!(dropped, vec![3]);
        assert_eq!(r.snapshot(), snap);
        assert_eq!(r.handler("b"), Some(&2));

        let mut bad = snap.clone();
        bad.tools[0].spec.name = "Bad Name".into();
        assert!(r.restore(bad).is_err());
        assert_eq!(r.snapshot(), snap, "a failed restore changes nothing");
    }

    #[test]
    fn schemas_are_cached_until_the_registry_changes() {
        let mut r = reg();
        r.register(spec("a", None, "x"), None, None, "t", eq).unwrap();
        let first = r.schemas(None, SchemaFormat::OpenAi);
        assert_eq!(
            *first[0],
            json!({"type":"function","function":{"name":"a","description":"The a tool.",
            "parameters":{"type":"object","properties":{"x":{"type":"string"}},"required":[]},"strict":false}})
        );
        let again = r.schemas(None, SchemaFormat::OpenAi);
        assert!(Arc::ptr_eq(&first[0], &again[0]), "served from the cache");
        r.set_enabled("a", true).unwrap(); // no change: still cached
        assert!(Arc::ptr_eq(&first[0], &r.schemas(None, SchemaFormat::OpenAi)[0]));
        r.register(spec("b", None, "x"), None, None, "t", eq).unwrap();
        let third = r.schemas(None, SchemaFormat::OpenAi);
        assert_eq!(third.len(), 2);
        assert!(!Arc::ptr_eq(&first[0], &third[0]), "a change invalidates the cache");
        let anthropic = r.schemas(Some(&["b".into()]), SchemaFormat::Anthropic);
        assert_eq!(
            *anthropic[0],
            json!({"name":"b","description":"The b tool.",
            "input_schema":{"type":"object","properties":{"x":{"type":"string"}},"required":[]}})
        );
    }

    #[test]
    fn metrics_count_calls_failures_denials_and_time() {
        let mut r = reg();
        r.record("a", CallOutcome::Success, 2.0);
        r.record("a", CallOutcome::Failure, 5.0);
        r.record("a", CallOutcome::Denied, 0.0);
        r.record("a", CallOutcome::Cancelled, 0.0);
        let m = &r.metrics()["a"];
        assert_eq!((m.calls, m.failures, m.denials, m.cancelled), (4, 1, 1, 1));
        assert_eq!((m.total_ms, m.max_ms), (7.0, 5.0));
    }

    #[test]
    fn timestamps_are_iso8601_utc() {
        assert_eq!(iso8601_from_unix(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso8601_from_unix(1_795_319_117), "2026-11-22T03:45:17Z");
        assert_eq!(iso8601_from_unix(951_782_400), "2000-02-29T00:00:00Z");
        assert!(now_iso8601().ends_with('Z'));
    }
}
