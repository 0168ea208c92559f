//! `search_tool` and `run_tool`: finding a deferred tool, and calling it by name.

use std::fmt::Write as _;
use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::exposure::{ExposureMode, Unmasked};
use super::index::{DEFAULT_LIMIT, MAX_LIMIT};
use super::plan::{RUN_TOOL, SEARCH_TOOL};
use super::{Disclosure, View};
use crate::context::CallContext;
use crate::output::ToolOutput;
use crate::spec::{Concurrency, DisclosureHint, ToolMeta, ToolSpec, schema_for};
use crate::tool::{DynTool, Forward, ToolError};

/// Most characters of one found tool's description in the results.
const RESULT_DESCRIPTION: usize = 2_048;

/// Arguments of `search_tool`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    /// What you want to do, or a tool name.
    query: String,
    /// Most tools (default 5, max 20).
    #[serde(default)]
    limit: Option<u64>,
}

/// Arguments of `run_tool`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RunArgs {
    /// Exact tool name from search_tool.
    name: String,
    /// Its arguments, per its input schema.
    #[serde(default)]
    input: Option<Map<String, Value>>,
}

const SEARCH_DESCRIPTION: &str = "Find tools not loaded yet by what they do (\"create a github issue\") or by name; each result gives the tool's input schema and how to call it.";

const RUN_DESCRIPTION: &str = "Call a tool found by search_tool: {\"name\": \"<exact name>\", \"input\": {<arguments per its schema>}}.";

fn read_only_meta(display: &str) -> ToolMeta {
    ToolMeta {
        concurrency: Concurrency::ReadOnly,
        action: "tool.search".to_owned(),
        spillable: true,
        idempotent: true,
        destructive: false,
        display: display.to_owned(),
        disclosure: DisclosureHint::EntryPoint,
        ..ToolMeta::default()
    }
}

/// The `search_tool` of `disclosure`.
pub fn search_tool(disclosure: Arc<Disclosure>) -> Arc<dyn DynTool> {
    Arc::new(SearchTool {
        spec: ToolSpec {
            name: SEARCH_TOOL.to_owned(),
            description: SEARCH_DESCRIPTION.to_owned(),
            input_schema: Arc::new(schema_for::<SearchArgs>()),
        },
        meta: read_only_meta("Search tools"),
        disclosure,
    })
}

/// The `run_tool` proxy.
pub fn run_tool() -> Arc<dyn DynTool> {
    let mut meta = read_only_meta("Run a found tool");
    // The dispatcher never runs run_tool itself (it runs the target under the target's
    // meta); this is what a client reads in the annotations: a proxy that can reach any
    // tool is neither read-only nor harmless.
    meta.action = "tool.run".to_owned();
    meta.concurrency = Concurrency::Mutating;
    meta.destructive = true;
    meta.idempotent = false;
    meta.proxy = true;
    Arc::new(RunTool {
        spec: ToolSpec {
            name: RUN_TOOL.to_owned(),
            description: RUN_DESCRIPTION.to_owned(),
            input_schema: Arc::new(schema_for::<RunArgs>()),
        },
        meta,
    })
}

struct SearchTool {
    spec: ToolSpec,
    meta: ToolMeta,
    disclosure: Arc<Disclosure>,
}

impl DynTool for SearchTool {
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
        let disclosure = Arc::clone(&self.disclosure);
        Box::pin(async move {
            let args: SearchArgs = parse(args)?;
            // A search made before every server is ready waits for them (within the
            // startup grace): the first tools/list does not, so this is the first time the
            // model can miss a tool that is on its way.
            let snapshot = disclosure.settled_snapshot().await.ok_or_else(|| {
                ToolError::Fatal("the tool registry is gone (the server is shutting down)".into())
            })?;
            let view = disclosure.view(&snapshot);
            let limit = args
                .limit
                .map_or(DEFAULT_LIMIT, |l| usize::try_from(l).unwrap_or(MAX_LIMIT))
                .clamp(1, MAX_LIMIT);
            // Tools already in the array (the direct ones) are named, not described: the
            // model has their descriptions and schemas (they used to fill most of a result).
            let direct = view.plan.direct.len();
            let hits = view
                .index()
                .search(&args.query, limit.saturating_add(direct));
            let mut found: Vec<&Arc<dyn DynTool>> = Vec::new();
            let mut loaded: Vec<&str> = Vec::new();
            let caller = ctx.session.identity();
            for hit in &hits {
                let tool = &view.tools[hit.doc];
                if found.len() == limit {
                    break;
                }
                // The view is shared by every session: leave out what this caller is denied.
                if !disclosure.visible_to(tool.as_ref(), caller) {
                    continue;
                }
                if view.plan.is_deferred(&tool.spec().name) {
                    found.push(tool);
                } else {
                    loaded.push(&tool.spec().name);
                }
            }
            // Fewer hits rather than a result the session's client would cut (or that the
            // budget would spill): drop the lowest-ranked ones until the text fits.
            let fits = ctx.session.limits().page_bytes(usize::MAX);
            let mut left_out = 0;
            while found.len() > 1
                && format_results(&args.query, &found, &loaded, &view, disclosure.exposure()).len()
                    > fits
            {
                found.pop();
                left_out += 1;
            }
            let exposure = disclosure.exposure();
            if exposure == ExposureMode::Backfill {
                let deferred: Vec<String> = found
                    .iter()
                    .map(|t| t.spec().name.clone())
                    .filter(|n| view.plan.is_deferred(n))
                    .collect();
                ctx.session.ext::<Unmasked>().unmask(&deferred);
            }
            let mut text = format_results(&args.query, &found, &loaded, &view, exposure);
            if left_out > 0 {
                let _ = write!(
                    text,
                    "\n[{left_out} lower-ranked matches left out to keep this result whole; search with more specific words to see others]\n"
                );
            }
            Ok(ToolOutput::text(text))
        })
    }
}

/// The model-facing text of a search: each found tool's description, schema and how to
/// call it; the matching tools already in the array (`loaded`) by name only.
pub(crate) fn format_results(
    query: &str,
    found: &[&Arc<dyn DynTool>],
    loaded: &[&str],
    view: &View,
    exposure: ExposureMode,
) -> String {
    let total = view.tools.len();
    let loaded_line = match loaded {
        [] => String::new(),
        names => format!(
            "Already in your tool list, call directly: {}.\n",
            names.join(", ")
        ),
    };
    if found.is_empty() {
        let others = if loaded.is_empty() { "" } else { "other " };
        return format!(
            "{loaded_line}No {others}tools match \"{query}\" among {total} tools. Search with other words: what the tool does (\"create issue\"), the service (\"github\"), or part of its name."
        );
    }
    let mut out = format!(
        "{} of {total} tools match \"{query}\", best first:\n{loaded_line}",
        found.len()
    );
    for tool in found {
        let spec = tool.spec();
        let name = &spec.name;
        let description: String = spec.description.chars().take(RESULT_DESCRIPTION).collect();
        let schema = serde_json::to_string(&*spec.input_schema).unwrap_or_default();
        let proxy = format!("run_tool {{\"name\": \"{name}\", \"input\": {{…}}}}");
        let how = match exposure {
            ExposureMode::Proxy => proxy,
            ExposureMode::Backfill => {
                format!("`{name}` directly (added to your tool list), or right now through {proxy}")
            }
        };
        let _ = write!(
            out,
            "\n## {name}\n{description}\nCall: {how}\nInput schema: {schema}\n"
        );
    }
    out
}

struct RunTool {
    spec: ToolSpec,
    meta: ToolMeta,
}

impl DynTool for RunTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn meta(&self) -> &ToolMeta {
        &self.meta
    }

    fn call(
        &self,
        _args: Value,
        _ctx: CallContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        // Reached only when something calls the tool around the dispatcher, which would
        // skip the target's permissions: refuse.
        Box::pin(async {
            Err(ToolError::Fatal(
                "run_tool must go through the dispatcher, which runs the target under its own permissions".into(),
            ))
        })
    }

    fn forward(&self, args: &Value) -> Option<Result<Forward, ToolError>> {
        Some(parse::<RunArgs>(args.clone()).map(|a| Forward {
            name: a.name,
            input: Value::Object(a.input.unwrap_or_default()),
        }))
    }
}

/// `search_tool` as the model sees it while disclosure is on: the description ends with the
/// catalog of deferred tools.
pub(crate) fn with_catalog(
    inner: Arc<dyn DynTool>,
    deferred: usize,
    catalog: &str,
) -> Arc<dyn DynTool> {
    let mut spec = inner.spec().clone();
    let _ = write!(
        spec.description,
        "\n\n{deferred} tools are not loaded; call them with run_tool after finding them here. Catalog:\n{catalog}"
    );
    let description = spec.description.trim_end().to_owned();
    spec.description = description;
    Arc::new(CatalogView { inner, spec })
}

struct CatalogView {
    inner: Arc<dyn DynTool>,
    spec: ToolSpec,
}

impl DynTool for CatalogView {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn meta(&self) -> &ToolMeta {
        self.inner.meta()
    }

    fn call(
        &self,
        args: Value,
        ctx: CallContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        self.inner.call(args, ctx)
    }
}

fn parse<A: serde::de::DeserializeOwned>(args: Value) -> Result<A, ToolError> {
    let args = if args.is_null() {
        Value::Object(Map::new())
    } else {
        args
    };
    serde_path_to_error::deserialize::<_, A>(args).map_err(|e| {
        let path = e.path().to_string();
        let inner = crate::tool::json_words(&e.into_inner().to_string());
        if path == "." || path.is_empty() {
            ToolError::InvalidArguments(format!("{inner}; check the tool's input schema"))
        } else {
            ToolError::InvalidArguments(format!(
                "field `{path}`: {inner}; check the tool's input schema"
            ))
        }
    })
}
