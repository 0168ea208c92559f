//! [`FnTool`]: a tool made of a name, a schema, a declaration and a closure.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value};
use toolgate_core::{CallContext, DynTool, ToolError, ToolMeta, ToolOutput, ToolSpec};

/// What a [`FnTool`] does when called: takes the arguments and the call's context, returns
/// the result's future. It runs synchronously first, so a closure that panics before it
/// returns a future stands for a hand-written tool that does.
pub type Reply = Arc<
    dyn Fn(Value, CallContext) -> BoxFuture<'static, Result<ToolOutput, ToolError>> + Send + Sync,
>;

/// A stand-in tool: `FnTool::new("name").describe(..).meta(..).text("ok")`.
#[derive(Clone)]
pub struct FnTool {
    spec: ToolSpec,
    meta: ToolMeta,
    reply: Reply,
}

impl FnTool {
    /// A tool named `name` with an empty object schema, the default declaration (mutating,
    /// action `test`), answering "ok".
    pub fn new(name: &str) -> Self {
        let mut schema = Map::new();
        schema.insert("type".to_owned(), Value::String("object".to_owned()));
        Self {
            spec: ToolSpec {
                name: name.to_owned(),
                description: format!("Stand-in tool {name}."),
                input_schema: Arc::new(schema),
            },
            meta: ToolMeta {
                action: "test".to_owned(),
                ..ToolMeta::default()
            },
            reply: Arc::new(|_, _| Box::pin(async { Ok(ToolOutput::text("ok")) })),
        }
    }

    /// Sets the description.
    pub fn describe(mut self, description: &str) -> Self {
        description.clone_into(&mut self.spec.description);
        self
    }

    /// Sets the input schema (`type: object` is added when missing).
    pub fn schema(mut self, schema: Value) -> Self {
        let mut schema = match schema {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        schema
            .entry("type")
            .or_insert_with(|| Value::String("object".to_owned()));
        self.spec.input_schema = Arc::new(schema);
        self
    }

    /// Sets the input schema exactly as given, malformed or not (for validation tests): a
    /// non-object becomes an empty schema.
    pub fn raw_schema(mut self, schema: Value) -> Self {
        self.spec.input_schema = Arc::new(match schema {
            Value::Object(map) => map,
            _ => Map::new(),
        });
        self
    }

    /// Sets the host-side declaration.
    pub fn meta(mut self, meta: ToolMeta) -> Self {
        self.meta = meta;
        self
    }

    /// Answers every call with `text`.
    pub fn text(self, text: &str) -> Self {
        let text = text.to_owned();
        self.reply(move |_, _| {
            let text = text.clone();
            Box::pin(async move { Ok(ToolOutput::text(text)) })
        })
    }

    /// Answers every call with what `reply` returns.
    pub fn reply(
        mut self,
        reply: impl Fn(Value, CallContext) -> BoxFuture<'static, Result<ToolOutput, ToolError>>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        self.reply = Arc::new(reply);
        self
    }

    /// The tool, erased, for a registry.
    pub fn erased(self) -> Arc<dyn DynTool> {
        Arc::new(self)
    }
}

impl DynTool for FnTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn meta(&self) -> &ToolMeta {
        &self.meta
    }

    fn call(
        &self,
        args: Value,
        ctx: CallContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        (self.reply)(args, ctx)
    }
}
