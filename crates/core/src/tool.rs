//! The typed tool trait and its erased form (codex-rs `ToolHandler` → `AnyToolHandler`).

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::context::CallContext;
use crate::output::ToolOutput;
use crate::schedule::Footprint;
use crate::spec::{ToolMeta, ToolSpec, schema_for};

/// Why a tool call failed. Error text is an interface: it names the next action.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The arguments did not fit the schema; the message names the field and expected type.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// A failure the model can act on ("old_string occurs 3 times; add surrounding lines").
    #[error("{0}")]
    Recoverable(String),
    /// A failure that should end the turn (the host itself is broken).
    #[error("fatal: {0}")]
    Fatal(String),
}

impl ToolError {
    /// A recoverable failure with a message that says what to do next.
    pub fn recoverable(message: impl Into<String>) -> Self {
        Self::Recoverable(message.into())
    }
}

/// A tool whose arguments are one Rust type: parsing and the input schema come from it.
pub trait Tool: Send + Sync + 'static {
    /// The arguments; `#[serde(deny_unknown_fields)]` is recommended.
    type Args: DeserializeOwned + JsonSchema + Send;
    /// The structured output; its schema becomes the `outputSchema` when it is an object
    /// schema (use `()` for a tool without structured output).
    type Output: JsonSchema;

    /// Unique name.
    fn name(&self) -> &str;
    /// Model-facing description.
    fn description(&self) -> &str;
    /// Host-facing metadata; `output_schema` is filled in from [`Tool::Output`].
    fn meta(&self) -> ToolMeta;
    /// Runs the tool.
    fn call(
        &self,
        args: Self::Args,
        ctx: CallContext,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send;
    /// What a call with these (not yet validated) arguments will touch and how long it may
    /// take; see [`Footprint`]. Only what can be told cheaply: nothing runs yet.
    fn footprint(&self, _args: &Value) -> Footprint {
        Footprint::default()
    }
}

/// A call a proxy forwards: the target and its arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct Forward {
    /// Target tool name.
    pub name: String,
    /// Its arguments.
    pub input: Value,
}

/// A tool with its types erased, as the registry holds it.
pub trait DynTool: Send + Sync + 'static {
    /// The model-facing half.
    fn spec(&self) -> &ToolSpec;
    /// The host-facing half.
    fn meta(&self) -> &ToolMeta;
    /// Runs the tool with JSON arguments.
    fn call(
        &self,
        args: Value,
        ctx: CallContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>>;
    /// What a call with `args` will touch and how long it may take (scheduling; nothing
    /// runs). Default: nothing declared.
    fn footprint(&self, _args: &Value) -> Footprint {
        Footprint::default()
    }
    /// For a proxy (`run_tool`): the call it forwards, for every argument value (`Some`
    /// even when the arguments are wrong). The dispatcher runs the target instead of the
    /// proxy, so the target's permissions, timeout, concurrency and budget apply
    /// (proxies are checked against their target). `None` for tools.
    fn forward(&self, _args: &Value) -> Option<Result<Forward, ToolError>> {
        None
    }
    /// The mounted MCP server this tool comes from (as configured, whatever its names'
    /// prefix), for metrics and displays; `None` for toolgate's own tools.
    fn server(&self) -> Option<&str> {
        None
    }
}

/// Adapter from a typed [`Tool`] to [`DynTool`]; computes spec and meta once.
pub struct TypedTool<T: Tool> {
    tool: Arc<T>,
    spec: ToolSpec,
    meta: ToolMeta,
}

impl<T: Tool> TypedTool<T> {
    /// Wraps `tool`, deriving its input and output schemas from its types.
    pub fn new(tool: T) -> Self {
        let spec = ToolSpec {
            name: tool.name().to_owned(),
            description: tool.description().to_owned(),
            input_schema: Arc::new(schema_for::<T::Args>()),
        };
        let mut meta = tool.meta();
        // MCP clients reject an `outputSchema` that is not an object schema, and
        // `structuredContent` is always an object: other outputs declare none.
        let output = schema_for::<T::Output>();
        meta.output_schema = (output.get("type") == Some(&Value::String("object".to_owned())))
            .then(|| Arc::new(output));
        Self {
            tool: Arc::new(tool),
            spec,
            meta,
        }
    }

    /// Wraps `tool` and erases its type.
    pub fn erased(tool: T) -> Arc<dyn DynTool> {
        Arc::new(Self::new(tool))
    }
}

impl<T: Tool> DynTool for TypedTool<T> {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn footprint(&self, args: &Value) -> Footprint {
        self.tool.footprint(args)
    }

    fn meta(&self) -> &ToolMeta {
        &self.meta
    }

    fn call(
        &self,
        args: Value,
        ctx: CallContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let tool = Arc::clone(&self.tool);
        Box::pin(async move {
            let args = parse_args::<T::Args>(args)?;
            tool.call(args, ctx).await
        })
    }
}

/// Runs blocking work (file I/O, a tree walk) on tokio's blocking pool. A panic in it is
/// raised again in the calling task, so the dispatcher reports it like any handler panic
/// instead of as an opaque worker failure.
pub async fn run_blocking<T, F>(work: F) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(value) => Ok(value),
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => Err(ToolError::Fatal(
            "toolgate is shutting down and the work was dropped".to_owned(),
        )),
    }
}

/// Parses arguments, naming the failing field and what was expected.
fn parse_args<A: DeserializeOwned>(args: Value) -> Result<A, ToolError> {
    // A missing or null argument object means "no arguments".
    let args = match args {
        Value::Null => Value::Object(Default::default()),
        other => other,
    };
    if !args.is_object() {
        return Err(ToolError::InvalidArguments(format!(
            "expected a JSON object of named arguments, got {}; send e.g. {{\"path\": \"src/main.rs\"}}",
            json_kind(&args)
        )));
    }
    serde_path_to_error::deserialize::<_, A>(args).map_err(|e| {
        let path = e.path().to_string();
        let inner = json_words(&e.into_inner().to_string());
        if path == "." || path.is_empty() {
            ToolError::InvalidArguments(format!("{inner}; check the tool's input schema"))
        } else {
            ToolError::InvalidArguments(format!(
                "field `{path}`: {inner}; check the tool's input schema"
            ))
        }
    })
}

/// A serde message in JSON's words, not Rust's: "invalid type: string \"x\", expected u64"
/// becomes "invalid type: string \"x\", expected a non-negative integer".
pub(crate) fn json_words(message: &str) -> String {
    const WORDS: [(&str, &str); 21] = [
        ("expected usize", "expected a non-negative integer"),
        ("expected u128", "expected a non-negative integer"),
        ("expected u64", "expected a non-negative integer"),
        ("expected u32", "expected a non-negative integer"),
        ("expected u16", "expected a non-negative integer"),
        ("expected u8", "expected a non-negative integer"),
        ("expected isize", "expected an integer"),
        ("expected i128", "expected an integer"),
        ("expected i64", "expected an integer"),
        ("expected i32", "expected an integer"),
        ("expected i16", "expected an integer"),
        ("expected i8", "expected an integer"),
        ("expected f64", "expected a number"),
        ("expected f32", "expected a number"),
        ("expected a sequence", "expected an array"),
        ("expected a map", "expected an object"),
        ("expected a borrowed string", "expected a string"),
        ("invalid type: sequence", "invalid type: array"),
        ("invalid type: map", "invalid type: object"),
        ("invalid type: floating point", "invalid type: number"),
        ("invalid type: unit value", "invalid type: null"),
    ];
    let mut out = message.to_owned();
    for (rust, json) in WORDS {
        out = out.replace(rust, json);
    }
    // `expected struct ReadArgs`, `expected tuple struct X`: an object (or array) by name.
    for (rust, json) in [
        ("expected tuple struct ", "expected an array"),
        ("expected struct ", "expected an object"),
    ] {
        while let Some(at) = out.find(rust) {
            let name = out[at + rust.len()..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .map_or(out.len(), |end| at + rust.len() + end);
            out.replace_range(at..name, json);
        }
    }
    out
}

/// The JSON type name of a value, for error messages.
pub(crate) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// An error with its causes, each once: libraries whose errors say little at the top (rmcp's
/// transport and auth errors) keep the useful part in their sources.
pub fn with_causes(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::{json_words, parse_args};

    #[derive(Debug, serde::Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct ReadArgs {
        path: String,
    }

    /// A client's own fields are dropped by its profile at the dispatcher's entrance
    /// (`dispatch/entrance.rs`), not here: a tool refuses every field it does not declare.
    #[test]
    fn unknown_fields_are_refused_by_name() {
        let args = serde_json::json!({"path": "a.rs"});
        assert_eq!(
            parse_args::<ReadArgs>(args).unwrap(),
            ReadArgs {
                path: "a.rs".into()
            }
        );
        for field in ["lines", "wait_for_previous"] {
            let refused = parse_args::<ReadArgs>(serde_json::json!({"path": "a", field: 3}));
            let message = format!("{:?}", refused.unwrap_err());
            assert!(
                message.contains(&format!("unknown field `{field}`")),
                "{message}"
            );
        }
    }

    #[test]
    fn serde_messages_name_json_types() {
        // Regression: "expected u64" reached models and users.
        assert_eq!(
            json_words("invalid type: string \"10\", expected u64"),
            "invalid type: string \"10\", expected a non-negative integer"
        );
        assert_eq!(
            json_words("invalid value: integer `-1`, expected usize"),
            "invalid value: integer `-1`, expected a non-negative integer"
        );
        assert_eq!(
            json_words("invalid type: floating point `1.5`, expected i64"),
            "invalid type: number `1.5`, expected an integer"
        );
        assert_eq!(
            json_words("invalid type: map, expected a sequence"),
            "invalid type: object, expected an array"
        );
        assert_eq!(
            json_words("invalid type: string \"x\", expected struct ReadArgs"),
            "invalid type: string \"x\", expected an object"
        );
        assert_eq!(json_words("missing field `path`"), "missing field `path`");
    }
}
