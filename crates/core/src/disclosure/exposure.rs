//! The tool array per protocol, and its cache-prefix stability as a number.
//!
//! Free-text protocols (OpenAI chat completions, MCP in proxy mode) never change the array:
//! a found tool's schema travels in the search result and its call through `run_tool`.
//! Strict protocols (Anthropic Messages rejects a `tool_use` whose name is not in the
//! array) backfill the unmasked tools as one sorted list after the direct tools: the array
//! changes only in a turn after unmasking happened — once per such turn, however many tools
//! it unmasked — and is stable again from then on.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::sync::watch;

use super::View;
use crate::context::CallContext;
use crate::output::ToolOutput;
use crate::registry::Snapshot;
use crate::render::{Protocol, RenderOptions, render_tools};
use crate::spec::{ToolMeta, ToolSpec};
use crate::tool::{DynTool, ToolError};

/// How tools found by `search_tool` reach an MCP client (`toolgate serve --disclosure`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ExposureMode {
    /// The array never changes; found tools are called through `run_tool`.
    #[default]
    Proxy,
    /// Found tools join the session's `tools/list`, announced with `list_changed`.
    Backfill,
}

/// How a session's array follows unmasking, for [`simulate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// The anti-pattern: each found tool is appended in the order found.
    Append,
    /// The array never changes (calls go through `run_tool`).
    Proxy,
    /// Unmasked tools are added as one sorted list after the direct tools.
    Backfill,
    /// No disclosure: every tool is direct.
    Off,
}

impl Strategy {
    /// The right strategy for `protocol`: strict protocols backfill, free-text ones never
    /// change the array; MCP follows the server's exposure mode.
    pub fn for_protocol(protocol: Protocol, mcp: ExposureMode) -> Self {
        match (protocol, mcp) {
            (Protocol::Anthropic, _) | (Protocol::Mcp, ExposureMode::Backfill) => Self::Backfill,
            (Protocol::OpenAi, _) | (Protocol::Mcp, ExposureMode::Proxy) => Self::Proxy,
        }
    }
}

/// The deferred tools a session has unmasked (session state), with a version that moves
/// once per unmasking call — the MCP server sends one `list_changed` per move.
pub struct Unmasked {
    names: Mutex<Vec<String>>,
    version: watch::Sender<u64>,
}

impl Default for Unmasked {
    fn default() -> Self {
        Self {
            names: Mutex::new(Vec::new()),
            version: watch::channel(0).0,
        }
    }
}

impl std::fmt::Debug for Unmasked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unmasked")
            .field("names", &self.names())
            .finish()
    }
}

impl Unmasked {
    /// Adds `names`; returns whether any was new (then the version moved once).
    pub fn unmask(&self, names: &[String]) -> bool {
        let mut list = self.names.lock().unwrap_or_else(PoisonError::into_inner);
        let before = list.len();
        for name in names {
            if !list.contains(name) {
                list.push(name.clone());
            }
        }
        let changed = list.len() != before;
        drop(list);
        if changed {
            self.version.send_modify(|v| *v += 1);
        }
        changed
    }

    /// The unmasked names, in unmask order.
    pub fn names(&self) -> Vec<String> {
        self.names
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The current version.
    pub fn version(&self) -> u64 {
        *self.version.borrow()
    }

    /// A receiver that wakes whenever tools are unmasked.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.version.subscribe()
    }
}

/// The tools of one array: the stable part, then the backfilled part in its own order.
#[derive(Clone, Default)]
pub struct Exposed {
    /// Direct tools (and the disclosure tools when on), rendered in name order.
    pub base: Vec<Arc<dyn DynTool>>,
    /// Unmasked tools after them, in this order.
    pub backfill: Vec<Arc<dyn DynTool>>,
}

impl std::fmt::Debug for Exposed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = |v: &[Arc<dyn DynTool>]| -> Vec<String> {
            v.iter().map(|t| t.spec().name.clone()).collect()
        };
        f.debug_struct("Exposed")
            .field("base", &names(&self.base))
            .field("backfill", &names(&self.backfill))
            .finish()
    }
}

impl Exposed {
    /// The array for `protocol`: the base in name order, then the backfill in its order.
    pub fn render(&self, protocol: Protocol, options: &RenderOptions) -> Vec<Value> {
        let mut array = render_tools(self.base.iter().map(|t| t.as_ref()), protocol, options);
        for tool in &self.backfill {
            array.extend(render_tools([tool.as_ref()], protocol, options));
        }
        array
    }

    /// [`Exposed::render`] as compact JSON bytes (what the provider's cache sees).
    pub fn render_bytes(&self, protocol: Protocol, options: &RenderOptions) -> Vec<u8> {
        serde_json::to_vec(&Value::Array(self.render(protocol, options))).unwrap_or_default()
    }

    /// Whether a tool of this name is in the array.
    pub fn contains(&self, name: &str) -> bool {
        self.base
            .iter()
            .chain(&self.backfill)
            .any(|t| t.spec().name == name)
    }

    /// Every tool, base then backfill.
    pub fn all(&self) -> impl Iterator<Item = &Arc<dyn DynTool>> {
        self.base.iter().chain(&self.backfill)
    }
}

pub(super) fn exposed(view: &View, unmasked: &[String], strategy: Strategy) -> Exposed {
    if strategy == Strategy::Off || !view.plan.active {
        return Exposed {
            base: view.tools.clone(),
            backfill: Vec::new(),
        };
    }
    let mut base: Vec<Arc<dyn DynTool>> = view
        .plan
        .direct
        .iter()
        .filter_map(|n| view.tool(n).cloned())
        .collect();
    base.extend(view.search.iter().cloned());
    base.extend(view.run.iter().cloned());
    let found = unmasked.iter().filter(|n| view.plan.is_deferred(n));
    let backfill: Vec<Arc<dyn DynTool>> = match strategy {
        Strategy::Append => found.filter_map(|n| view.tool(n).cloned()).collect(),
        Strategy::Backfill => found
            .collect::<BTreeSet<_>>()
            .into_iter()
            .filter_map(|n| view.tool(n).cloned())
            .collect(),
        Strategy::Proxy | Strategy::Off => Vec::new(),
    };
    Exposed { base, backfill }
}

/// Protocol names of a simulation script.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SimProtocol {
    /// OpenAI chat completions (free-text tool names).
    Openai,
    /// Anthropic Messages (strict: names must be in the array).
    Anthropic,
    /// MCP `tools/list`.
    Mcp,
}

impl From<SimProtocol> for Protocol {
    fn from(p: SimProtocol) -> Self {
        match p {
            SimProtocol::Openai => Protocol::OpenAi,
            SimProtocol::Anthropic => Protocol::Anthropic,
            SimProtocol::Mcp => Protocol::Mcp,
        }
    }
}

/// A scripted session: per turn, what the model searches, unmasks and calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimScript {
    /// Which protocol's array is rendered.
    pub protocol: SimProtocol,
    /// How the array follows unmasking; default: the right one for the protocol
    /// ([`Strategy::for_protocol`], MCP in proxy mode).
    #[serde(default)]
    pub strategy: Option<Strategy>,
    /// Extra tools known only by name and description (deferred unless configured).
    #[serde(default)]
    pub tools: Vec<StubSpec>,
    /// The turns.
    pub turns: Vec<SimTurn>,
}

/// A script's stand-in tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StubSpec {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Whether it stands for a core tool (direct whenever config does not say otherwise).
    #[serde(default)]
    pub core: bool,
}

/// One model turn of a script. Searches unmask what they find (the top 5, deferred only).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SimTurn {
    /// `search_tool` queries.
    pub search: Vec<String>,
    /// Tools unmasked by name (as a search that found exactly them).
    pub unmask: Vec<String>,
    /// Tools the model calls by name this turn.
    pub call: Vec<String>,
}

/// What happened in one turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnReport {
    /// 1-based turn number.
    pub turn: usize,
    /// Size of the rendered array in bytes.
    pub bytes: usize,
    /// Whether the array differs from the previous turn's (a cache-prefix break).
    pub changed: bool,
    /// Share of the previous array that is a common prefix of this one, in percent.
    pub prefix_reuse: f64,
    /// Calls the protocol would reject (name not in the array of a strict protocol).
    pub rejected: Vec<String>,
    /// Tools unmasked during this turn.
    pub unmasked: Vec<String>,
}

/// The stability of a scripted session.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StabilityReport {
    /// The strategy used.
    pub strategy: Strategy,
    /// Turns whose array differs from the previous turn's (each one breaks the cache prefix).
    pub breaks: usize,
    /// Calls rejected in total.
    pub rejected: usize,
    /// Per turn.
    pub turns: Vec<TurnReport>,
}

/// Plays `script` against `snapshot`: renders each turn's array, counts the turns whose
/// array differs from the previous one, and checks every call against the array.
pub fn simulate(
    disclosure: &super::Disclosure,
    snapshot: &Snapshot,
    script: &SimScript,
    options: &RenderOptions,
) -> StabilityReport {
    let protocol: Protocol = script.protocol.into();
    let strategy = script
        .strategy
        .unwrap_or_else(|| Strategy::for_protocol(protocol, ExposureMode::Proxy));
    let view = disclosure.view(snapshot);
    let strict = protocol == Protocol::Anthropic;
    let mut unmasked: Vec<String> = Vec::new();
    let mut previous: Option<Vec<u8>> = None;
    let mut report = StabilityReport {
        strategy,
        breaks: 0,
        rejected: 0,
        turns: Vec::new(),
    };
    for (i, turn) in script.turns.iter().enumerate() {
        let exposed = exposed(&view, &unmasked, strategy);
        let bytes = exposed.render_bytes(protocol, options);
        let (changed, prefix_reuse) = match &previous {
            None => (false, 100.0),
            Some(prev) => {
                let common = prev.iter().zip(&bytes).take_while(|(a, b)| a == b).count();
                let reuse = if prev.is_empty() {
                    100.0
                } else {
                    // Floor, so a changed array never shows 100 %.
                    (common as f64 * 1000.0 / prev.len() as f64).floor() / 10.0
                };
                (*prev != bytes, reuse)
            }
        };
        report.breaks += usize::from(changed);
        let rejected: Vec<String> = turn
            .call
            .iter()
            .filter(|name| {
                let known = view.tool(name).is_some();
                let reachable = match strategy {
                    // Through run_tool: any known tool.
                    Strategy::Proxy => known,
                    _ if strict => exposed.contains(name),
                    _ => known,
                };
                !reachable
            })
            .cloned()
            .collect();
        report.rejected += rejected.len();
        let mut found: Vec<String> = Vec::new();
        for query in &turn.search {
            for hit in view.index().search(query, super::index::DEFAULT_LIMIT) {
                found.push(view.tools[hit.doc].spec().name.clone());
            }
        }
        found.extend(turn.unmask.iter().cloned());
        let mut new = Vec::new();
        for name in found {
            if view.plan.is_deferred(&name) && !unmasked.contains(&name) {
                unmasked.push(name.clone());
                new.push(name);
            }
        }
        report.turns.push(TurnReport {
            turn: i + 1,
            bytes: bytes.len(),
            changed,
            prefix_reuse,
            rejected,
            unmasked: new,
        });
        previous = Some(bytes);
    }
    report
}

/// A tool known only by its spec: catalog fixtures, benchmarks and simulations. Calling it
/// says that it is a stand-in.
pub struct StubTool {
    spec: ToolSpec,
    meta: ToolMeta,
}

impl StubTool {
    /// A stand-in named `name`.
    pub fn new(name: &str, description: &str, input_schema: Map<String, Value>) -> Self {
        let mut schema = input_schema;
        schema
            .entry("type")
            .or_insert_with(|| Value::String("object".to_owned()));
        Self {
            spec: ToolSpec {
                name: name.to_owned(),
                description: description.to_owned(),
                input_schema: Arc::new(schema),
            },
            meta: ToolMeta {
                action: "stub".to_owned(),
                ..ToolMeta::default()
            },
        }
    }

    /// A stand-in from a script's [`StubSpec`].
    pub fn from_spec(spec: &StubSpec) -> Self {
        let stub = Self::new(&spec.name, &spec.description, Map::new());
        if spec.core {
            stub.with_hint(crate::spec::DisclosureHint::Direct)
        } else {
            stub
        }
    }

    /// The same stand-in with another disclosure hint (a core tool: `Direct`).
    pub fn with_hint(mut self, hint: crate::spec::DisclosureHint) -> Self {
        self.meta.disclosure = hint;
        self
    }
}

impl DynTool for StubTool {
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
        let name = self.spec.name.clone();
        Box::pin(async move {
            Err(ToolError::recoverable(format!(
                "`{name}` is a stand-in with no implementation (a catalog fixture)"
            )))
        })
    }
}
