//! Station 1, declaration (seed 003 §2): what the model sees and what only the host knows.

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
    if !map.contains_key("type") {
        map.insert("type".to_owned(), Value::String("object".to_owned()));
    }
    map
}
