//! The wrapper that makes a typed toolgate tool of an async function ([`tool`]), shared by the
//! plain fixtures (`tools.rs`) and the ones that ask the client (`asking.rs`).

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use toolgate_core::{
    CallContext, Concurrency, DynTool, Tool, ToolError, ToolMeta, ToolOutput, TypedTool,
};

/// Arguments of the fixtures that take none.
#[derive(Deserialize, JsonSchema)]
pub(crate) struct NoArgs {}

/// A typed tool made of a name, a description and an async function.
struct FnTool<A, F> {
    name: &'static str,
    description: &'static str,
    run: F,
    args: PhantomData<fn(A)>,
}

/// `run` as a read-only fixture tool named `name`; its arguments and schema come from `A`.
pub(crate) fn tool<A, F, Fut>(
    name: &'static str,
    description: &'static str,
    run: F,
) -> Arc<dyn DynTool>
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(A, CallContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolOutput> + Send + 'static,
{
    TypedTool::erased(FnTool {
        name,
        description,
        run,
        args: PhantomData,
    })
}

/// What every fixture tool declares: read-only, idempotent, action `test`.
pub(crate) fn fixture_meta() -> ToolMeta {
    ToolMeta {
        concurrency: Concurrency::ReadOnly,
        action: "test".into(),
        destructive: false,
        idempotent: true,
        ..ToolMeta::default()
    }
}

impl<A, F, Fut> Tool for FnTool<A, F>
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(A, CallContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolOutput> + Send + 'static,
{
    type Args = A;
    type Output = ();

    fn name(&self) -> &str {
        self.name
    }

    fn description(&self) -> &str {
        self.description
    }

    fn meta(&self) -> ToolMeta {
        fixture_meta()
    }

    fn call(
        &self,
        args: A,
        ctx: CallContext,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send {
        let run = (self.run)(args, ctx);
        async move { Ok(run.await) }
    }
}
