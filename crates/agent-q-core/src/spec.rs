//! Tool specifications: what a tool is, independent of how it runs.
//!
//! A definition arrives from Lisp as a plist (see [`ToolSpec::from_sexp`]) whose parameters are
//! either a list of parameter plists (`(:name "x" :type :string ...)`) or a full JSON Schema. Either way it is normalised
//! to a JSON Schema object and validated before it can be registered.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value as Json};

use crate::error::SpecError;
use crate::sexp::{self, Sexp as Value};

/// How much a tool may change, and so what it takes to run it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SafetyLevel {
    /// Read-only: runs at once.
    #[default]
    Safe,
    /// Changes state: runs, and is logged.
    Cautious,
    /// Permanent changes: runs only after the user approves.
    Dangerous,
}

impl SafetyLevel {
    /// The level's name: `safe`, `cautious` or `dangerous`.
    pub fn as_str(self) -> &'static str {
        match self {
            SafetyLevel::Safe => "safe",
            SafetyLevel::Cautious => "cautious",
            SafetyLevel::Dangerous => "dangerous",
        }
    }
}

impl fmt::Display for SafetyLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SafetyLevel {
    type Err = SpecError;
    fn from_str(s: &str) -> Result<Self, SpecError> {
        match s.trim_start_matches(':') {
            "safe" => Ok(SafetyLevel::Safe),
            "cautious" => Ok(SafetyLevel::Cautious),
            "dangerous" => Ok(SafetyLevel::Dangerous),
            other => Err(SpecError::new(
                "safety_level",
                format!("unknown safety level '{other}' (expected :safe, :cautious or :dangerous)"),
            )),
        }
    }
}

/// What approves a call of a tool, besides a deny rule, which always applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Approval {
    /// The user's answer at the prompt (or an allow rule, or a grant for the session), as its
    /// safety level and its guard say.
    #[default]
    Prompt,
    /// Its handler's review: the handler shows the user what the call would change and applies
    /// nothing the user did not accept (the built-in `propose_file_edit`). No prompt is asked
    /// before it unless a guard gives a reason other than a protected file; an allow rule does
    /// not stand for the review.
    Review,
    /// Its handler's review, as for [`Approval::Review`]; or an allow rule that covers the call
    /// (never for a protected file), which then approves it unreviewed (`agent_edit`, an agent's
    /// own edit, which the agent writes).
    ReviewOrRule,
}

impl Approval {
    /// Whether the tool's review is its approval.
    pub fn by_review(self) -> bool {
        self != Approval::Prompt
    }

    fn is_prompt(&self) -> bool {
        *self == Approval::Prompt
    }
}

/// A tool's specification. Two specs are the same tool definition exactly when they are equal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Unique snake_case name, `^[a-z][a-z0-9_]*$`.
    pub name: String,
    /// What the tool does, written for the LLM.
    pub description: String,
    /// The JSON Schema of the arguments: an object schema whose `required` lists the required
    /// parameters.
    pub parameters: Json,
    /// Safe, cautious or dangerous.
    #[serde(default)]
    pub safety_level: SafetyLevel,
    /// Categories, e.g. `introspection` (keywords in Lisp, names here).
    #[serde(default)]
    pub categories: Vec<String>,
    /// Optional version; see the registration rules in [`crate::registry`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Optional tags for discovery.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Optional JSON Schema of the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Json>,
    /// What the tool can do, stated beyond its safety level (see [`Hints`]).
    #[serde(default, skip_serializing_if = "Hints::is_empty")]
    pub hints: Hints,
    /// What approves its calls: the prompt, or its handler's review (see [`Approval`]).
    #[serde(default, skip_serializing_if = "Approval::is_prompt")]
    pub approval: Approval,
}

/// What a tool can do, for clients that choose or approve tools by it (MCP's tool
/// annotations). A hint left unset follows from the safety level ([`Hints::resolve`]); a tool
/// sets one where its level does not tell the truth, e.g. a cautious tool that evaluates
/// arbitrary code is destructive and reaches the open world.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hints {
    /// Whether the tool only reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// Whether it may destroy or overwrite what was there (meaningful when not read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// Whether calling it twice with the same arguments does no more than once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// Whether it may reach beyond this Emacs and its files (other hosts, other programs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
}

/// Every hint stated: what [`Hints::resolve`] gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResolvedHints {
    /// See [`Hints::read_only`].
    pub read_only: bool,
    /// See [`Hints::destructive`].
    pub destructive: bool,
    /// See [`Hints::idempotent`].
    pub idempotent: bool,
    /// See [`Hints::open_world`].
    pub open_world: bool,
}

impl Hints {
    /// Whether no hint is set.
    pub fn is_empty(&self) -> bool {
        *self == Hints::default()
    }

    /// The hints with the unset ones read from LEVEL, never less alarming than the level says:
    /// a safe tool only reads (this Emacs and its files: idempotent, closed world); a cautious
    /// tool changes state in a way the user can see and undo (a buffer edit), so it is not
    /// destructive; a dangerous tool makes permanent changes. A tool that changes anything is
    /// assumed neither idempotent nor confined to this Emacs unless it says so.
    pub fn resolve(&self, level: SafetyLevel) -> ResolvedHints {
        let read_only = self.read_only.unwrap_or(level == SafetyLevel::Safe);
        ResolvedHints {
            read_only,
            destructive: self.destructive.unwrap_or(level == SafetyLevel::Dangerous),
            idempotent: self.idempotent.unwrap_or(read_only),
            open_world: self.open_world.unwrap_or(!read_only),
        }
    }

    fn from_sexp(v: &Value) -> Result<Hints, SpecError> {
        let mut hints = Hints::default();
        if v.is_nil() {
            return Ok(hints);
        }
        let pairs = v.plist_pairs().ok_or_else(|| {
            SpecError::new(
                "annotations",
                format!(
                    "expected a plist such as (:read-only nil :destructive t), got {}",
                    sexp::describe(v)
                ),
            )
        })?;
        for (key, value) in pairs {
            let flag = !value.is_nil();
            let slot = match key.replace('_', "-").as_str() {
                "read-only" => &mut hints.read_only,
                "destructive" => &mut hints.destructive,
                "idempotent" => &mut hints.idempotent,
                "open-world" => &mut hints.open_world,
                other => {
                    return Err(SpecError::new(
                        format!("annotations.{other}"),
                        "unknown hint (known: :read-only :destructive :idempotent :open-world)",
                    ))
                }
            };
            *slot = Some(flag);
        }
        Ok(hints)
    }
}

const PARAM_TYPES: [&str; 6] = ["string", "boolean", "number", "integer", "object", "array"];

/// Whether NAME is a valid tool name.
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some('a'..='z')) && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_'))
}

fn name_of(v: &Value) -> Option<&str> {
    v.as_str().or_else(|| v.as_keyword()).or_else(|| v.as_symbol())
}

fn string_list(v: &Value, field: &str) -> Result<Vec<String>, SpecError> {
    let Some(items) = v.sequence_items() else {
        return Err(SpecError::new(
            field,
            format!("expected a list, got {}", sexp::describe(v)),
        ));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, x)| {
            name_of(x).filter(|s| !s.is_empty()).map(str::to_string).ok_or_else(|| {
                SpecError::new(
                    format!("{field}[{i}]"),
                    format!("expected a name, got {}", sexp::describe(x)),
                )
            })
        })
        .collect()
}

fn param_type(v: Option<&Value>, field: &str) -> Result<String, SpecError> {
    let v = v.ok_or_else(|| {
        SpecError::new(
            field,
            "missing (expected one of :string :boolean :number :integer :object :array)",
        )
    })?;
    let t = name_of(v).unwrap_or("");
    if PARAM_TYPES.contains(&t) {
        Ok(t.to_string())
    } else {
        Err(SpecError::new(
            field,
            format!(
                "unknown type {} (expected one of :string :boolean :number :integer :object :array)",
                sexp::describe(v)
            ),
        ))
    }
}

/// Convert one parameter plist (without its `:name` when NAMED is false) to a property schema.
fn param_schema(v: &Value, field: &str, named: bool) -> Result<(Option<String>, Json), SpecError> {
    let pairs = v.plist_pairs().ok_or_else(|| {
        SpecError::new(
            field,
            format!(
                "expected a parameter plist like (:name \"x\" :type :string), got {}",
                sexp::describe(v)
            ),
        )
    })?;
    let mut schema = Map::new();
    let mut name = None;
    let mut nested_required = Vec::new();
    let get = |key: &str| pairs.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
    let ty = param_type(get("type"), &format!("{field}.type"))?;
    schema.insert("type".into(), Json::String(ty.clone()));
    for (key, value) in &pairs {
        let sub = format!("{field}.{key}");
        match *key {
            "name" if named => {
                let n = value.as_str().or_else(|| value.as_symbol()).filter(|s| !s.is_empty());
                name = Some(n.ok_or_else(|| SpecError::new(&sub, "expected a non-empty string"))?.to_string());
            }
            "type" => {}
            "description" => {
                let d = value.as_str().ok_or_else(|| SpecError::new(&sub, "expected a string"))?;
                schema.insert("description".into(), Json::String(d.into()));
            }
            "enum" => {
                let j = sexp::to_json(value, None).map_err(|e| SpecError::new(&sub, e.to_string()))?;
                match j {
                    Json::Array(a) if !a.is_empty() => schema.insert("enum".into(), Json::Array(a)),
                    _ => return Err(SpecError::new(&sub, "expected a non-empty list of values")),
                };
            }
            "items" if ty == "array" => {
                let (_, items) = param_schema(value, &sub, false)?;
                schema.insert("items".into(), items);
            }
            "properties" if ty == "object" => {
                let props = params_to_properties(value, &sub)?;
                schema.insert("properties".into(), Json::Object(props));
            }
            "required" if ty == "object" => nested_required = string_list(value, &sub)?,
            "default" => {
                let j = sexp::to_json(value, None).map_err(|e| SpecError::new(&sub, e.to_string()))?;
                schema.insert("default".into(), j);
            }
            other => {
                return Err(SpecError::new(
                    &sub,
                    format!("unknown key :{other} (known: :name :type :description :enum :default, :items for arrays, :properties and :required for objects)"),
                ))
            }
        }
    }
    if named && name.is_none() {
        return Err(SpecError::new(format!("{field}.name"), "missing"));
    }
    if !nested_required.is_empty() {
        check_required(&nested_required, schema.get("properties"), &format!("{field}.required"))?;
        schema.insert("required".into(), json!(nested_required));
    }
    Ok((name, Json::Object(schema)))
}

fn params_to_properties(v: &Value, field: &str) -> Result<Map<String, Json>, SpecError> {
    let items = v
        .sequence_items()
        .ok_or_else(|| SpecError::new(field, "expected a list of parameter plists"))?;
    let mut props = Map::new();
    for (i, p) in items.iter().enumerate() {
        let sub = format!("{field}[{i}]");
        let (name, schema) = param_schema(p, &sub, true)?;
        let name = name.unwrap_or_default();
        if props.insert(name.clone(), schema).is_some() {
            return Err(SpecError::new(sub, format!("duplicate parameter '{name}'")));
        }
    }
    Ok(props)
}

fn check_required(required: &[String], props: Option<&Json>, field: &str) -> Result<(), SpecError> {
    for r in required {
        let known = props.and_then(|p| p.get(r)).is_some();
        if !known {
            return Err(SpecError::new(field, format!("'{r}' is not one of the parameters")));
        }
    }
    Ok(())
}

/// Normalise PARAMETERS (nil, a list of parameter plists, a JSON Schema plist or JSON text)
/// plus the spec's REQUIRED names into an object JSON Schema. Nil and a list of parameter plists
/// declare every argument: their schema says `additionalProperties: false`.
pub fn normalize_parameters(parameters: &Value, required: &[String]) -> Result<Json, SpecError> {
    // Parameters given as a list of parameter plists (or none) declare every argument the tool
    // takes: the schema refuses any other (`additionalProperties: false`), so that nothing a
    // client adds reaches the prompt, an approval rule or the handler. A full JSON Schema says
    // for itself.
    let mut schema = if parameters.is_nil() {
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    } else if let Some(text) = parameters.as_str() {
        serde_json::from_str::<Json>(text)
            .map_err(|e| SpecError::new("parameters", format!("invalid JSON Schema text: {e}")))?
    } else if parameters.plist_pairs().is_some() {
        // A JSON Schema written as a plist: (:type "object" :properties (...)).
        let hint =
            json!({"type": "object", "properties": {"properties": {"type": "object"}, "required": {"type": "array"}}});
        sexp::to_json(parameters, Some(&hint)).map_err(|e| SpecError::new("parameters", e.to_string()))?
    } else {
        json!({"type": "object", "properties": params_to_properties(parameters, "parameters")?,
               "additionalProperties": false})
    };
    let obj = schema
        .as_object_mut()
        .ok_or_else(|| SpecError::new("parameters", "expected a JSON Schema object"))?;
    match obj.get("type") {
        None => {
            obj.insert("type".into(), json!("object"));
        }
        Some(Json::String(t)) if t == "object" => {}
        Some(other) => {
            return Err(SpecError::new(
                "parameters.type",
                format!("must be \"object\", got {other}"),
            ))
        }
    }
    match obj.get("properties") {
        None | Some(Json::Null) => {
            obj.insert("properties".into(), json!({}));
        }
        Some(Json::Object(_)) => {}
        Some(other) => {
            return Err(SpecError::new(
                "parameters.properties",
                format!("must be an object, got {other}"),
            ))
        }
    }
    let mut all_required: Vec<String> = match obj.get("required") {
        None | Some(Json::Null) => Vec::new(),
        Some(Json::Array(a)) => a
            .iter()
            .map(|x| {
                x.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| SpecError::new("parameters.required", "must list strings"))
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(SpecError::new(
                "parameters.required",
                format!("must be an array, got {other}"),
            ))
        }
    };
    for r in required {
        if !all_required.contains(r) {
            all_required.push(r.clone());
        }
    }
    check_required(&all_required, obj.get("properties"), "required")?;
    obj.insert("required".into(), json!(all_required));
    Ok(schema)
}

impl ToolSpec {
    /// Read a definition plist as `agent-q-define-tool` sends it:
    /// `(:name N :description D :parameters P :required R :safety-level L :categories C
    ///   :version V :tags T :output-schema S)`. Keys may also be spelled with underscores.
    pub fn from_sexp(v: &Value) -> Result<ToolSpec, SpecError> {
        let pairs = v
            .plist_pairs()
            .ok_or_else(|| SpecError::new("definition", format!("expected a plist, got {}", sexp::describe(v))))?;
        let get = |key: &str| {
            let alt = key.replace('-', "_");
            pairs.iter().find(|(k, _)| *k == key || *k == alt).map(|(_, x)| *x)
        };
        for (k, _) in &pairs {
            let known = [
                "name",
                "description",
                "parameters",
                "required",
                "safety-level",
                "safety_level",
                "categories",
                "version",
                "tags",
                "output-schema",
                "output_schema",
                "annotations",
                "approval",
            ];
            if !known.contains(k) {
                return Err(SpecError::new(*k, "unknown key in tool definition"));
            }
        }
        let name = match get("name") {
            Some(n) => n
                .as_str()
                .ok_or_else(|| SpecError::new("name", format!("expected a string, got {}", sexp::describe(n))))?,
            None => return Err(SpecError::new("name", "missing")),
        }
        .to_string();
        let build = || -> Result<ToolSpec, SpecError> {
            let description = match get("description") {
                Some(d) => d
                    .as_str()
                    .ok_or_else(|| SpecError::new("description", "expected a string"))?
                    .to_string(),
                None => return Err(SpecError::new("description", "missing")),
            };
            let required = get("required")
                .map(|r| string_list(r, "required"))
                .transpose()?
                .unwrap_or_default();
            let parameters = normalize_parameters(get("parameters").unwrap_or(&Value::Nil), &required)?;
            let safety_level = match get("safety-level") {
                None => SafetyLevel::Safe,
                Some(l) if l.is_nil() => SafetyLevel::Safe,
                Some(l) => name_of(l)
                    .ok_or_else(|| SpecError::new("safety_level", "expected :safe, :cautious or :dangerous"))?
                    .parse()?,
            };
            let categories = get("categories")
                .map(|c| string_list(c, "categories"))
                .transpose()?
                .unwrap_or_default();
            let version = match get("version") {
                None => None,
                Some(x) if x.is_nil() => None,
                Some(x) => Some(
                    x.as_str()
                        .ok_or_else(|| SpecError::new("version", "expected a string such as \"1.0.0\""))?
                        .to_string(),
                ),
            };
            let tags = get("tags")
                .map(|t| string_list(t, "tags"))
                .transpose()?
                .unwrap_or_default();
            let output_schema = match get("output-schema") {
                None => None,
                Some(x) if x.is_nil() => None,
                Some(Value::Str(text)) => Some(
                    serde_json::from_str(text)
                        .map_err(|e| SpecError::new("output_schema", format!("invalid JSON: {e}")))?,
                ),
                Some(x) => Some(sexp::to_json(x, None).map_err(|e| SpecError::new("output_schema", e.to_string()))?),
            };
            let hints = get("annotations")
                .map(Hints::from_sexp)
                .transpose()?
                .unwrap_or_default();
            let approval = match get("approval") {
                None => Approval::Prompt,
                Some(x) if x.is_nil() => Approval::Prompt,
                Some(x) => match name_of(x) {
                    Some("prompt") => Approval::Prompt,
                    Some("review") => Approval::Review,
                    Some("review-or-rule") | Some("review_or_rule") => Approval::ReviewOrRule,
                    _ => {
                        return Err(SpecError::new(
                            "approval",
                            format!(
                                "expected :prompt, :review or :review-or-rule, got {}",
                                sexp::describe(x)
                            ),
                        ))
                    }
                },
            };
            let spec = ToolSpec {
                name: name.clone(),
                description,
                parameters,
                safety_level,
                categories,
                version,
                tags,
                output_schema,
                hints,
                approval,
            };
            spec.validate()?;
            Ok(spec)
        };
        build().map_err(|e| e.for_tool(&name))
    }

    /// Check every rule a registered spec must satisfy.
    pub fn validate(&self) -> Result<(), SpecError> {
        let fail = |field: &str, problem: String| Err(SpecError::new(field, problem).for_tool(&self.name));
        if self.name.is_empty() {
            return fail("name", "must not be empty".into());
        }
        if !valid_name(&self.name) {
            return fail(
                "name",
                format!("'{}' is not snake_case (it must match ^[a-z][a-z0-9_]*$)", self.name),
            );
        }
        if self.description.trim().is_empty() {
            return fail(
                "description",
                "must not be empty: the LLM chooses tools by their descriptions".into(),
            );
        }
        for (i, c) in self.categories.iter().enumerate() {
            if c.is_empty() || !c.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '-' || ch == '_') {
                return fail(
                    &format!("categories[{i}]"),
                    format!("'{c}' is not a valid category name"),
                );
            }
        }
        if self.parameters.get("type").and_then(Json::as_str) != Some("object") {
            return fail("parameters.type", "must be \"object\"".into());
        }
        let props = self.parameters.get("properties");
        if !matches!(props, Some(Json::Object(_))) {
            return fail("parameters.properties", "must be an object".into());
        }
        check_required(&self.required(), props, "required").map_err(|e| e.for_tool(&self.name))?;
        for (field, schema) in [
            ("parameters", Some(&self.parameters)),
            ("output_schema", self.output_schema.as_ref()),
        ] {
            if let Some(schema) = schema {
                if let Err(e) = jsonschema::meta::validate(schema) {
                    let at = e.instance_path().as_str().trim_start_matches('/').replace('/', ".");
                    let field = if at.is_empty() {
                        field.to_string()
                    } else {
                        format!("{field}.{at}")
                    };
                    return fail(&field, format!("not a valid JSON Schema: {e}"));
                }
            }
        }
        Ok(())
    }

    /// The names of the required parameters.
    pub fn required(&self) -> Vec<String> {
        self.parameters
            .get("required")
            .and_then(Json::as_array)
            .map(|a| a.iter().filter_map(Json::as_str).map(str::to_string).collect())
            .unwrap_or_default()
    }

    /// Compile the argument schema into a validator.
    pub fn compile(&self) -> Result<jsonschema::Validator, SpecError> {
        jsonschema::validator_for(&self.parameters)
            .map_err(|e| SpecError::new("parameters", format!("cannot compile schema: {e}")).for_tool(&self.name))
    }

    /// The spec as a plist for Lisp (JSON field names as keywords; see [`crate::sexp`]).
    pub fn to_sexp(&self) -> Value {
        sexp::from_json(&serde_json::to_value(self).unwrap_or(Json::Null))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(s: &str) -> Value {
        Value::parse(s).expect("test input parses")
    }

    fn spec(s: &str) -> Result<ToolSpec, SpecError> {
        ToolSpec::from_sexp(&read(s))
    }

    #[test]
    fn annotations_are_read_as_hints_and_unknown_ones_refused() {
        let s = spec(
            r#"(:name "eval_form" :description "Evaluate." :safety-level :cautious
                 :annotations (:destructive t :open-world t :idempotent nil))"#,
        )
        .unwrap();
        assert_eq!(
            s.hints,
            Hints {
                read_only: None,
                destructive: Some(true),
                idempotent: Some(false),
                open_world: Some(true)
            }
        );
        assert!(s.hints.resolve(SafetyLevel::Cautious).destructive);
        assert!(spec(r#"(:name "t" :description "T." :annotations nil)"#)
            .unwrap()
            .hints
            .is_empty());
        let err = spec(r#"(:name "t" :description "T." :annotations (:harmless t))"#).unwrap_err();
        assert!(err.to_string().contains("annotations.harmless"), "{err}");
        let err = spec(r#"(:name "t" :description "T." :annotations "yes")"#).unwrap_err();
        assert!(err.to_string().contains("expected a plist"), "{err}");
    }

    #[test]
    fn parameter_plists_become_a_json_schema() {
        let s = spec(
            r#"(:name "describe_symbol" :description "Describe a symbol."
                         :parameters ((:name "symbol" :type :string :description "Symbol name")
                                      (:name "kind" :type :string :enum ("any" "function"))
                                      (:name "names" :type :array :items (:type :string)))
                         :required ("symbol") :safety-level :safe :categories (:introspection))"#,
        )
        .unwrap();
        assert_eq!(
            s.parameters,
            json!({
            "type": "object",
            "properties": {
                "symbol": {"type": "string", "description": "Symbol name"},
                "kind": {"type": "string", "enum": ["any", "function"]},
                "names": {"type": "array", "items": {"type": "string"}}},
            "required": ["symbol"],
            "additionalProperties": false})
        );
        assert_eq!(s.categories, vec!["introspection"]);
        assert_eq!(s.safety_level, SafetyLevel::Safe);
    }

    #[test]
    fn json_schema_parameters_are_accepted_as_plist_or_text() {
        let a = spec(r#"(:name "t" :description "d" :parameters (:type "object" :properties (:x (:type "integer")) :required ["x"]))"#).unwrap();
        let b = spec(r#"(:name "t" :description "d" :parameters "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"integer\"}},\"required\":[\"x\"]}")"#).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.required(), vec!["x"]);
    }

    #[test]
    fn defaults() {
        let s = spec(r#"(:name "t" :description "d")"#).unwrap();
        assert_eq!(s.safety_level, SafetyLevel::Safe);
        assert_eq!(
            s.parameters,
            json!({"type":"object","properties":{},"required":[],"additionalProperties":false})
        );
        assert!(s.version.is_none() && s.categories.is_empty());
    }

    #[test]
    fn invalid_definitions_name_the_field() {
        let cases = [
            (r#"(:name "" :description "d")"#, "field 'name': must not be empty"),
            (
                r#"(:name "BadName" :description "d")"#,
                "field 'name': 'BadName' is not snake_case",
            ),
            (r#"(:name "t")"#, "field 'description': missing"),
            (
                r#"(:name "t" :description "d" :parameters ((:name "x" :type :strng)))"#,
                "field 'parameters[0].type': unknown type :strng",
            ),
            (
                r#"(:name "t" :description "d" :parameters ((:type :string)))"#,
                "field 'parameters[0].name': missing",
            ),
            (
                r#"(:name "t" :description "d" :parameters ((:name "x" :type :string)) :required ("y"))"#,
                "field 'required': 'y' is not one of the parameters",
            ),
            (
                r#"(:name "t" :description "d" :safety-level :risky)"#,
                "field 'safety_level': unknown safety level 'risky'",
            ),
            (
                r#"(:name "t" :description "d" :parameters ((:name "x" :type :string :optional t)))"#,
                "field 'parameters[0].optional': unknown key :optional",
            ),
            (
                r#"(:name "t" :description "d" :parameters (:type "object" :properties (:x (:type 12))))"#,
                "field 'parameters",
            ),
            (
                r#"(:name "t" :description "d" :parameters ((:name "x" :type :string) (:name "x" :type :string)))"#,
                "duplicate parameter 'x'",
            ),
        ];
        for (input, expected) in cases {
            let err = spec(input).expect_err(input).to_string();
            assert!(err.contains(expected), "{input}\n  gave: {err}\n  expected: {expected}");
            assert!(err.starts_with("Invalid tool definition"), "{err}");
        }
    }

    #[test]
    fn names() {
        assert!(valid_name("who_calls") && valid_name("a1"));
        for bad in ["", "1a", "_a", "a-b", "aB", "é"] {
            assert!(!valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn json_round_trip() {
        let s = spec(r#"(:name "t" :description "d" :version "1.0" :tags ("x") :categories (:buffer :filesystem) :safety-level :dangerous)"#).unwrap();
        let back: ToolSpec = serde_json::from_value(serde_json::to_value(&s).unwrap()).unwrap();
        assert_eq!(s, back);
        let again = ToolSpec::from_sexp(&s.to_sexp());
        assert_eq!(again.unwrap(), s);
    }
}
