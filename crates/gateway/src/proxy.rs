//! A mounted server's tool as a registry tool ([`DynTool`]).
//!
//! The model-facing half comes from the server: description, input schema and output schema
//! pass through unchanged, under the gateway's `mcp__<server>__<tool>` name (the tool's own
//! name for a `prefix = "never"` server). The host half is derived from the server's
//! annotations:
//!
//! | field | value |
//! |---|---|
//! | concurrency | `ReadOnly` when `readOnlyHint` is true, else `Mutating` (the MCP default) |
//! | action | `mcp.read` when read-only, else `mcp.write`: `deny = ["mcp.write"]` blocks every mounted tool that may change something; `mcp__github__*` blocks one server |
//! | idempotent, destructive | `idempotentHint` (default false), `destructiveHint` (default true) |
//! | timeout | the server's `tool_timeout_sec` |
//! | spillable | true: external results are the budget's main customer |
//! | log_like | the server's `log_like` setting (default false) |
//!
//! Arguments are checked against the server's input schema before anything is sent, so a
//! model gets "field `count`: "x" is not of type "integer"" exactly as for built-ins.

use std::sync::{Arc, OnceLock};

use futures::future::BoxFuture;
use rmcp::model::Tool;
use serde_json::{Map, Value};
use toolgate_core::{
    CallContext, Concurrency, DisclosureHint, DynTool, Footprint, Resource, ToolError, ToolMeta,
    ToolOutput, ToolSpec,
};

use crate::mount::Mount;

/// Why a server's tool is left out.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ProxyError {
    /// Its input schema is not an object schema.
    #[error("tool `{tool}` has an input schema of type {kind}, not \"object\"")]
    NotAnObject { tool: String, kind: Value },
    /// The registry would refuse it (a bad name or schema).
    #[error(transparent)]
    Malformed(#[from] toolgate_core::ProviderError),
}

/// One mounted tool.
pub(crate) struct ProxyTool {
    spec: ToolSpec,
    meta: ToolMeta,
    /// The tool as the server listed it.
    pub(crate) source: Tool,
    mount: Arc<Mount>,
    /// Compiled on first use: a server with 1,000 tools should not pay for all of them.
    validator: OnceLock<Option<jsonschema::Validator>>,
}

impl ProxyTool {
    /// The proxy for `tool` of `mount`, named `name`; `Err` says why the tool is left out.
    pub(crate) fn new(mount: &Arc<Mount>, tool: &Tool, name: String) -> Result<Self, ProxyError> {
        let server = &mount.spec.name;
        let mut schema: Map<String, Value> = (*tool.input_schema).clone();
        match schema.get("type") {
            None => {
                schema.insert("type".to_owned(), Value::String("object".to_owned()));
            }
            Some(Value::String(t)) if t == "object" => {}
            Some(other) => {
                return Err(ProxyError::NotAnObject {
                    tool: tool.name.to_string(),
                    kind: other.clone(),
                });
            }
        }
        let description = tool
            .description
            .as_deref()
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map_or_else(
                || format!("Tool `{}` of the MCP server `{server}`.", tool.name),
                str::to_owned,
            );
        let annotations = tool.annotations.clone().unwrap_or_default();
        let read_only = annotations.read_only_hint == Some(true);
        let meta = ToolMeta {
            output_schema: tool.output_schema.clone(),
            timeout: Some(mount.spec.tool_timeout),
            concurrency: if read_only {
                Concurrency::ReadOnly
            } else {
                Concurrency::Mutating
            },
            action: if read_only { "mcp.read" } else { "mcp.write" }.to_owned(),
            spillable: true,
            log_like: mount.spec.log_like,
            idempotent: annotations.idempotent_hint.unwrap_or(false),
            destructive: annotations.destructive_hint.unwrap_or(true),
            display: tool.title.clone().or(annotations.title).unwrap_or_default(),
            proxy: false,
            disclosure: DisclosureHint::Auto,
        };
        let proxy = Self {
            spec: ToolSpec {
                name,
                description,
                input_schema: Arc::new(schema),
            },
            meta,
            source: tool.clone(),
            mount: Arc::clone(mount),
            validator: OnceLock::new(),
        };
        toolgate_core::validate_tool(server, &proxy)?;
        Ok(proxy)
    }

    /// Checks `args` against the server's input schema. A `null` given for an optional
    /// argument whose schema does not allow `null` means "not given" (models write that
    /// often): it is left out rather than refused.
    fn prepare(&self, mut args: Value) -> Result<Value, ToolError> {
        if let Err(refused) = self.check(&args) {
            let dropped = self.drop_refused_nulls(&mut args);
            if !dropped {
                return Err(refused);
            }
            self.check(&args)?;
        }
        Ok(args)
    }

    /// Removes the top-level `null` arguments the schema refuses and does not require;
    /// whether any were removed.
    fn drop_refused_nulls(&self, args: &mut Value) -> bool {
        let Some(validator) = self.validator.get().and_then(Option::as_ref) else {
            return false;
        };
        let required: Vec<&str> = self
            .spec
            .input_schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let refused: Vec<String> = validator
            .iter_errors(args)
            .filter_map(|e| {
                let pointer = e.instance_path().as_str().to_owned();
                let key = pointer.strip_prefix('/')?;
                (!key.contains('/')).then(|| key.replace("~1", "/").replace("~0", "~"))
            })
            .collect();
        let Value::Object(map) = args else {
            return false;
        };
        let mut dropped = false;
        for key in refused {
            if map.get(&key).is_some_and(Value::is_null) && !required.contains(&key.as_str()) {
                map.remove(&key);
                dropped = true;
            }
        }
        dropped
    }

    /// Checks `args` against the server's input schema.
    fn check(&self, args: &Value) -> Result<(), ToolError> {
        let validator = self.validator.get_or_init(|| {
            let schema = Value::Object((*self.spec.input_schema).clone());
            match jsonschema::validator_for(&schema) {
                Ok(v) => Some(v),
                Err(e) => {
                    // The server's schema is broken; the server will judge the arguments.
                    tracing::warn!(tool = %self.spec.name, %e, "input schema does not compile; arguments are not checked");
                    None
                }
            }
        });
        let Some(validator) = validator else {
            return Ok(());
        };
        let problems: Vec<String> = validator
            .iter_errors(args)
            .take(3)
            .map(|e| {
                let path = dotted(e.instance_path().as_str());
                if path.is_empty() {
                    e.to_string()
                } else {
                    format!("field `{path}`: {e}")
                }
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ToolError::InvalidArguments(format!(
                "{}; check the tool's input schema",
                problems.join("; ")
            )))
        }
    }
}

/// `/items/0/name` → `items[0].name`.
fn dotted(pointer: &str) -> String {
    let mut out = String::new();
    for part in pointer.split('/').skip(1) {
        let part = part.replace("~1", "/").replace("~0", "~");
        if part.parse::<usize>().is_ok() {
            out.push_str(&format!("[{part}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&part);
        }
    }
    out
}

impl DynTool for ProxyTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn server(&self) -> Option<&str> {
        Some(&self.mount.spec.name)
    }

    fn meta(&self) -> &ToolMeta {
        &self.meta
    }

    fn footprint(&self, _args: &Value) -> Footprint {
        // A tool that does not say it only reads may change its server's state: such calls
        // take turns per server, across sessions, and never hold up other servers.
        Footprint {
            resources: match self.meta.concurrency {
                Concurrency::Mutating => vec![Resource::Server(self.mount.spec.name.clone())],
                Concurrency::ReadOnly | Concurrency::Detached => Vec::new(),
            },
            ..Footprint::default()
        }
    }

    fn call(
        &self,
        args: Value,
        ctx: CallContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let args = match args {
            Value::Null => Value::Object(Map::new()),
            other => other,
        };
        let checked = self.prepare(args);
        let mount = Arc::clone(&self.mount);
        let tool = self.source.name.to_string();
        Box::pin(async move {
            let args = checked?;
            let Value::Object(args) = args else {
                return Err(ToolError::InvalidArguments(
                    "expected a JSON object of named arguments".to_owned(),
                ));
            };
            mount.call(&tool, args, ctx).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::dotted;

    #[test]
    fn pointers_read_as_field_paths() {
        assert_eq!(dotted(""), "");
        assert_eq!(dotted("/count"), "count");
        assert_eq!(dotted("/items/0/name"), "items[0].name");
        assert_eq!(dotted("/a~1b"), "a/b");
    }
}
