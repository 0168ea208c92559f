//! Rendering: the model-facing tool array of each protocol.
//!
//! Byte-deterministic: tools are rendered in name order and every object is built field by
//! field, so the same registry gives the same bytes. Only model-facing fields are rendered —
//! plus, for MCP, the fields the protocol defines (`outputSchema`, `annotations`). Runtime
//! settings (timeouts, limits) never appear, so changing them keeps prompt caches warm.

use serde_json::{Map, Value, json};

use crate::spec::Concurrency;
use crate::tool::DynTool;

/// Which model-facing form to render.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// OpenAI chat completions `tools`: `{"type":"function","function":{…}}`.
    OpenAi,
    /// Anthropic Messages `tools`: `{"name","description","input_schema"}`.
    Anthropic,
    /// MCP `tools/list`: `{"name","description","inputSchema","outputSchema","annotations"}`.
    Mcp,
}

/// Rendering options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderOptions {
    /// Most characters of one description; longer ones are cut with a visible marker.
    /// Default 2,048 — enough for every built-in, short enough that one verbose MCP server
    /// cannot crowd the prompt.
    pub description_budget: usize,
}

impl Default for RenderOptions {
    fn default() -> Self {
        Self {
            description_budget: 2_048,
        }
    }
}

/// The tool array for `protocol`, in name order.
pub fn render_tools<'a>(
    tools: impl IntoIterator<Item = &'a dyn DynTool>,
    protocol: Protocol,
    options: &RenderOptions,
) -> Vec<Value> {
    let mut tools: Vec<&dyn DynTool> = tools.into_iter().collect();
    tools.sort_by(|a, b| a.spec().name.cmp(&b.spec().name));
    tools
        .into_iter()
        .map(|t| render_one(t, protocol, options))
        .collect()
}

/// [`render_tools`] serialised to compact JSON bytes.
pub fn render_tools_bytes<'a>(
    tools: impl IntoIterator<Item = &'a dyn DynTool>,
    protocol: Protocol,
    options: &RenderOptions,
) -> Vec<u8> {
    let array = Value::Array(render_tools(tools, protocol, options));
    serde_json::to_vec(&array).unwrap_or_default()
}

fn render_one(tool: &dyn DynTool, protocol: Protocol, options: &RenderOptions) -> Value {
    let spec = tool.spec();
    let description = cut_description(&spec.description, options.description_budget);
    let schema = portable_schema(&Value::Object((*spec.input_schema).clone()));
    match protocol {
        Protocol::OpenAi => json!({
            "type": "function",
            "function": {
                "name": spec.name,
                "description": description,
                "parameters": schema,
            }
        }),
        Protocol::Anthropic => json!({
            "name": spec.name,
            "description": description,
            "input_schema": schema,
        }),
        Protocol::Mcp => {
            let meta = tool.meta();
            let mut obj = Map::new();
            obj.insert("name".into(), spec.name.clone().into());
            obj.insert("description".into(), description.into());
            obj.insert("inputSchema".into(), schema);
            if let Some(out) = &meta.output_schema {
                obj.insert(
                    "outputSchema".into(),
                    portable_schema(&Value::Object((**out).clone())),
                );
            }
            let read_only = match meta.concurrency {
                Concurrency::ReadOnly => true,
                Concurrency::Detached => !meta.destructive,
                Concurrency::Mutating => false,
            };
            let mut ann = Map::new();
            if !meta.display.is_empty() {
                ann.insert("title".into(), meta.display.clone().into());
            }
            ann.insert("readOnlyHint".into(), read_only.into());
            if !read_only {
                ann.insert("destructiveHint".into(), meta.destructive.into());
            }
            ann.insert("idempotentHint".into(), meta.idempotent.into());
            ann.insert("openWorldHint".into(), (meta.action == "net").into());
            obj.insert("annotations".into(), Value::Object(ann));
            Value::Object(obj)
        }
    }
}

/// The `format` values of JSON Schema (draft 2020-12 §7.3) that every major client accepts;
/// any other `format` (schemars' `uint64`, `int64`, `uint`, `double`, …) is dropped, because
/// Claude Code warns about each unknown one on every call (`unknown format "uint64"
/// ignored in schema`) and no client validates them anyway.
const STANDARD_FORMATS: [&str; 19] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// `schema` with only the keywords and formats the major clients accept: every
/// non-standard `format` removed, at any depth (properties, items, `$defs`, `anyOf`, …).
/// Built-in and mounted tools are rendered through this, so both are covered.
pub fn portable_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(key, value)| {
                    // `format` as a keyword holds a string; a property *named* format holds
                    // an object schema and stays.
                    !(key.as_str() == "format"
                        && value
                            .as_str()
                            .is_some_and(|f| !STANDARD_FORMATS.contains(&f)))
                })
                .map(|(key, value)| (key.clone(), portable_schema(value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(portable_schema).collect()),
        other => other.clone(),
    }
}

/// Cuts `text` to `budget` characters with a marker that says it was cut.
fn cut_description(text: &str, budget: usize) -> String {
    let total = text.chars().count();
    if total <= budget {
        return text.to_owned();
    }
    let marker = format!(" […description cut: {total} characters]");
    let keep = budget.saturating_sub(marker.chars().count());
    let mut out: String = text.chars().take(keep).collect();
    out.push_str(&marker);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn portable_schemas_drop_non_standard_formats_at_any_depth_and_keep_standard_ones() {
        let schema = json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer", "format": "uint64", "minimum": 0},
                "when": {"type": "string", "format": "date-time"},
                "format": {"type": "string"},
                "list": {"type": "array", "items": {"type": "integer", "format": "int64"}},
                "either": {"anyOf": [{"type": "integer", "format": "uint"}, {"type": "null"}]},
            },
            "$defs": {"X": {"type": "number", "format": "double"}},
        });
        let text = portable_schema(&schema).to_string();
        for bad in ["uint64", "int64", "\"uint\"", "double"] {
            assert!(!text.contains(bad), "{bad} left in {text}");
        }
        assert!(text.contains("date-time"));
        assert!(text.contains("\"format\":{\"type\":\"string\"}"), "{text}");
        assert!(text.contains("\"minimum\":0"));
    }

    #[test]
    fn description_cut_has_visible_marker_and_respects_budget() {
        let text = "x".repeat(5000);
        let cut = cut_description(&text, 100);
        assert!(cut.chars().count() <= 100);
        assert!(cut.ends_with("[…description cut: 5000 characters]"));
        assert_eq!(cut_description("short", 100), "short");
    }
}
