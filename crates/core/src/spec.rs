//! Declaration of a tool: what the model sees and what only the host knows.

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde_json::{Map, Value};

/// The model-facing half of a tool: everything that is rendered into a model request.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// Unique name, `[A-Za-z0-9_-]{1,64}`.
    pub name: String,
    /// What the tool does, when to use it and when not to.
    pub description: String,
    /// JSON Schema (an object schema) of the arguments.
    pub input_schema: Arc<Map<String, Value>>,
}

/// Whether a tool may run beside others. Concurrency safety is opt-in (codex-rs `is_mutating`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Concurrency {
    /// Reads only; may run in parallel with other read-only calls.
    ReadOnly,
    /// Changes something; runs alone and in order.
    #[default]
    Mutating,
    /// Acts on work already running (a background job's output, a kill): runs at once,
    /// neither waiting for nor holding up the session's other calls.
    Detached,
}

/// Where a tool belongs when progressive disclosure is on. The tool says so itself, so the
/// disclosure engine names no tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DisclosureHint {
    /// Config and the threshold decide (mounted tools, plugins).
    #[default]
    Auto,
    /// In the array whenever config does not say otherwise: a core tool every turn needs
    /// (the file and shell tools).
    Direct,
    /// One of the disclosure machinery's own tools (`search_tool`, `run_tool`): shown
    /// exactly when disclosure is on, never in its own catalog.
    EntryPoint,
}

/// The host-facing half of a tool. None of it enters a model request except where a protocol
/// defines a field for it (MCP `outputSchema` and annotations).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolMeta {
    /// JSON Schema of `structuredContent`, when the tool returns structured output.
    pub output_schema: Option<Arc<Map<String, Value>>>,
    /// Per-call time limit; `None` uses the dispatcher's default.
    pub timeout: Option<Duration>,
    /// Whether the call may run beside others.
    pub concurrency: Concurrency,
    /// Permission action such as `fs.read`, `fs.write`, `shell.exec`, `net`.
    pub action: String,
    /// Whether the result budget may spill this tool's output (false for `read_file`:
    /// the file is its own pointer).
    pub spillable: bool,
    /// Whether the output is log-like and worth compressing before the budget.
    pub log_like: bool,
    /// Whether repeating a call with the same arguments has no further effect.
    pub idempotent: bool,
    /// Whether a call may destroy or overwrite data.
    pub destructive: bool,
    /// Short human label for displays.
    pub display: String,
    /// Whether the tool forwards its calls to another tool ([`crate::DynTool::forward`]);
    /// the dispatcher then runs the target instead.
    pub proxy: bool,
    /// Where it belongs when progressive disclosure is on.
    pub disclosure: DisclosureHint,
}

impl Default for ToolMeta {
    fn default() -> Self {
        Self {
            output_schema: None,
            timeout: None,
            concurrency: Concurrency::Mutating,
            action: "unknown".to_owned(),
            spillable: true,
            log_like: false,
            idempotent: false,
            destructive: true,
            display: String::new(),
            proxy: false,
            disclosure: DisclosureHint::Auto,
        }
    }
}

/// Makes optional properties read as models expect: `{"type": "integer"}` rather than
/// `{"type": ["integer", "null"], "default": null, "format": "uint64"}`. An optional field
/// is already expressed by its absence from `required`; the nulls and Rust integer formats
/// only cost tokens and confuse strict validators.
fn simplify_optional_properties(schema: &mut Map<String, Value>) {
    let required: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let Some(Value::Object(props)) = schema.get_mut("properties") else {
        return;
    };
    for (name, prop) in props.iter_mut() {
        let Value::Object(prop) = prop else { continue };
        if prop.get("default") == Some(&Value::Null) {
            prop.remove("default");
        }
        if matches!(prop.get("format").and_then(Value::as_str), Some(f) if f.starts_with("int") || f.starts_with("uint"))
        {
            prop.remove("format");
        }
        if required.contains(name) {
            continue;
        }
        if let Some(Value::Array(types)) = prop.get("type") {
            let non_null: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
            if non_null.len() == 1 {
                prop.insert("type".to_owned(), non_null[0].clone());
            }
        }
    }
}

/// The JSON Schema of `T`, inlined and stripped of `$schema`/`title`/root `description` noise,
/// as an object map. The root description is the type's rustdoc ("Arguments of `read_file`"),
/// written for developers; the tool's own description is what the model reads.
pub fn schema_for<T: JsonSchema>() -> Map<String, Value> {
    let settings = schemars::generate::SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = true;
    });
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut map = match schema.to_value() {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    map.remove("$schema");
    map.remove("title");
    map.remove("description");
    simplify_optional_properties(&mut map);
    if !map.contains_key("type") {
        map.insert("type".to_owned(), Value::String("object".to_owned()));
    }
    map
}
