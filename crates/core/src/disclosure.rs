//! Progressive tool disclosure: direct and deferred tools, `search_tool`, `run_tool`, and
//! tool arrays that stay byte-stable across turns.
//!
//! - [`plan`](Rules::plan): which tools are direct (always in the array) and which deferred
//!   (only in a catalog). `auto:N` — N or fewer tools in total, everything is direct (one
//!   search round trip costs more than N definitions); above N, disclosure is on. The core
//!   file and shell tools are direct by default; config overrides per tool or server with
//!   globs, and promotes tools declaratively on session-stable facts.
//! - The catalog lives in `search_tool`'s description: every client shows tool descriptions
//!   to the model (MCP `instructions` are optional for clients and fixed at initialisation),
//!   and it changes only when the set of deferred tools changes — never on unmasking — so the
//!   array stays byte-stable for the session. It has a length budget and degrades to names
//!   per server, then counts per server.
//! - [`ToolIndex`]: the ranking behind `search_tool` (BM25F with synonyms, CJK n-grams and an
//!   exact-name rule); rebuilt once per registry generation, on first use.
//! - `run_tool` is a proxy: the dispatcher unwraps it ([`crate::DynTool::forward`]) and runs
//!   the target as if called directly, so the target's permissions, timeout, concurrency and
//!   budget apply, and a deny rule cannot be bypassed.
//! - [`Exposed`] and [`simulate`]: the array per protocol and its cache-prefix stability as a
//!   number.

mod exposure;
mod index;
mod plan;
mod text;
mod tools;

use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

use serde::{Deserialize, Serialize};

pub use exposure::{
    Exposed, ExposureMode, SimProtocol, SimScript, SimTurn, StabilityReport, Strategy, StubSpec,
    StubTool, TurnReport, Unmasked, simulate,
};
pub use index::{IndexEntry, IndexWeights, SearchHit, ToolIndex};
pub use plan::{Plan, PlanError, RUN_TOOL, Rules, SEARCH_TOOL, SessionFacts, summary_line};
pub use tools::{run_tool, search_tool};

pub use crate::tool::Forward;

use crate::registry::{Registry, Scope, Snapshot};
use crate::spec::DisclosureHint;
use crate::tool::DynTool;

/// When disclosure is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(try_from = "String", into = "String")]
pub enum DisclosureMode {
    /// On above N tools in total (`auto:N`).
    Auto(usize),
    /// Always on.
    On,
    /// Never: every tool is direct.
    Off,
}

impl Default for DisclosureMode {
    /// `auto:15`: the break-even lies at 10–15 tools (each definition 100–300 tokens
    /// against one extra search round trip).
    fn default() -> Self {
        Self::Auto(15)
    }
}

impl TryFrom<String> for DisclosureMode {
    type Error = String;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        match text.trim() {
            "on" => Ok(Self::On),
            "off" => Ok(Self::Off),
            "auto" => Ok(Self::default()),
            other => other
                .strip_prefix("auto:")
                .and_then(|n| n.trim().parse().ok())
                .map(Self::Auto)
                .ok_or_else(|| {
                    format!("disclosure mode `{other}` is not valid; use `auto:N` (e.g. `auto:15`), `on` or `off`")
                }),
        }
    }
}

impl From<DisclosureMode> for String {
    fn from(mode: DisclosureMode) -> Self {
        match mode {
            DisclosureMode::Auto(n) => format!("auto:{n}"),
            DisclosureMode::On => "on".to_owned(),
            DisclosureMode::Off => "off".to_owned(),
        }
    }
}

/// The session-stable fact a promotion depends on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum PromotionCondition {
    /// The session's model provider has this name (`when = { provider = "acme" }`).
    Provider(String),
    /// A mounted MCP server of this name is present (`when = { server = "github" }`).
    Server(String),
}

/// Tools promoted to direct when a condition holds (the capability is data, not code).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Promotion {
    /// Tool names or globs to make direct.
    pub tools: Vec<String>,
    /// The condition: `{ provider = "NAME" }` or `{ server = "NAME" }`.
    pub when: PromotionCondition,
}

/// The `[disclosure]` settings (assembly-time: they change what the model sees).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct DisclosureSettings {
    /// `"auto:N"`: on above N tools in total; `"on"`; `"off"`.
    pub mode: DisclosureMode,
    /// `"proxy"`: the array never changes, calls go through `run_tool`; `"backfill"`: found
    /// tools join the session's `tools/list` (`serve --disclosure` sets this, or off).
    pub exposure: ExposureMode,
    /// Names or globs kept direct, e.g. `mcp__github__*` (toolgate's own tools already are).
    pub direct: Vec<String>,
    /// Names or globs deferred, even toolgate's own.
    pub deferred: Vec<String>,
    /// Rules making tools direct for some sessions, as `[[disclosure.promote]]` tables: `tools
    /// = ["mcp__search__web"]`, `when = { provider = "NAME" }` or `when = { server = "github"
    /// }`.
    pub promote: Vec<Promotion>,
    /// Characters of the catalog in `search_tool`'s description.
    ///
    /// Default 1,200, so the whole description stays inside the default render budget of
    /// 2,048.
    pub catalog_budget: usize,
}

impl Default for DisclosureSettings {
    fn default() -> Self {
        Self {
            mode: DisclosureMode::default(),
            exposure: ExposureMode::default(),
            direct: Vec::new(),
            deferred: Vec::new(),
            promote: Vec::new(),
            catalog_budget: 1_200,
        }
    }
}

/// The disclosure engine of one runtime: rules, the per-generation view of the registry,
/// and the registry it reads (weakly: the registry holds the tools that hold this).
///
/// ```
/// use std::sync::Arc;
///
/// use serde_json::{Map, json};
/// use toolgate_core::disclosure::{RUN_TOOL, SEARCH_TOOL, StubTool, Unmasked};
/// use toolgate_core::{
///     CallContext, Disclosure, DisclosureSettings, DispatchLimits, Dispatcher, DynTool, Policy,
///     RawArgs, Registry, Scope, StaticProvider,
/// };
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // Twenty tools: more than `auto:15`, so only the disclosure tools are in the array.
/// let mut tools: Vec<Arc<dyn DynTool>> = (0..19)
///     .map(|i| Arc::new(StubTool::new(&format!("ticket_{i}"), "Edit a ticket.", Map::new())) as _)
///     .collect();
/// tools.push(Arc::new(StubTool::new("get_weather", "Current weather for a city.", Map::new())));
/// let registry = Arc::new(Registry::new());
/// registry.register(None, Arc::new(StaticProvider::new("demo", tools)), 0)?;
/// let disclosure = Arc::new(Disclosure::new(&DisclosureSettings::default(), &Default::default())?);
/// disclosure.attach(&registry, Scope::global())?;
///
/// let snapshot = registry.snapshot(&Scope::global());
/// let exposed = disclosure.exposed(&snapshot, &Unmasked::default());
/// assert!(exposed.contains(SEARCH_TOOL) && exposed.contains(RUN_TOOL));
/// assert!(!exposed.contains("get_weather"));
///
/// // The model finds the deferred tool with `search_tool`, then calls it through `run_tool`.
/// let dispatcher =
///     Dispatcher::new(registry, Scope::global(), Policy::allow_all(), DispatchLimits::default());
/// let args = RawArgs::Json(json!({"query": "weather"}));
/// let found = dispatcher.call(SEARCH_TOOL, args, CallContext::unattended()).await;
/// assert!(found.text.contains("get_weather"), "{}", found.text);
/// # Ok(())
/// # }
/// ```
pub struct Disclosure {
    rules: Rules,
    mode: DisclosureMode,
    exposure: ExposureMode,
    source: OnceLock<(Weak<Registry>, Scope)>,
    view: Mutex<Option<Arc<View>>>,
}

impl std::fmt::Debug for Disclosure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Disclosure")
            .field("exposure", &self.exposure)
            .finish_non_exhaustive()
    }
}

/// What disclosure makes of one registry generation.
pub struct View {
    /// The registry generation.
    pub generation: u64,
    /// Direct and deferred tools.
    pub plan: Plan,
    /// Every tool except the disclosure tools, in name order (the index's documents).
    pub tools: Vec<Arc<dyn DynTool>>,
    search: Option<Arc<dyn DynTool>>,
    run: Option<Arc<dyn DynTool>>,
    index: OnceLock<ToolIndex>,
}

impl std::fmt::Debug for View {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("View")
            .field("generation", &self.generation)
            .field("plan", &self.plan)
            .finish_non_exhaustive()
    }
}

impl View {
    /// The search index, built on first use.
    pub fn index(&self) -> &ToolIndex {
        self.index.get_or_init(|| {
            let entries: Vec<IndexEntry> = self
                .tools
                .iter()
                .map(|t| {
                    let spec = t.spec();
                    IndexEntry {
                        name: spec.name.clone(),
                        description: spec.description.clone(),
                        input_schema: (*spec.input_schema).clone(),
                    }
                })
                .collect();
            ToolIndex::new(&entries)
        })
    }

    /// The tool named `name`, if indexed.
    pub fn tool(&self, name: &str) -> Option<&Arc<dyn DynTool>> {
        self.tools
            .binary_search_by(|t| t.spec().name.as_str().cmp(name))
            .ok()
            .map(|i| &self.tools[i])
    }
}

impl Disclosure {
    /// An engine for `settings` in a session with `facts`.
    pub fn new(settings: &DisclosureSettings, facts: &SessionFacts) -> Result<Self, PlanError> {
        Ok(Self {
            rules: Rules::new(settings, facts)?,
            mode: settings.mode,
            exposure: settings.exposure,
            source: OnceLock::new(),
            view: Mutex::new(None),
        })
    }

    /// Registers `search_tool` and `run_tool` as provider `disclosure` in the global layer of
    /// `registry` and reads tools from `scope` of it from now on.
    pub fn attach(
        self: &Arc<Self>,
        registry: &Arc<Registry>,
        scope: Scope,
    ) -> Result<(), crate::RegistryError> {
        let _ = self.source.set((Arc::downgrade(registry), scope));
        let tools = vec![search_tool(Arc::clone(self)), run_tool()];
        registry.register(
            None,
            Arc::new(crate::StaticProvider::new("disclosure", tools)),
            0,
        )
    }

    /// How found tools reach an MCP client.
    pub fn exposure(&self) -> ExposureMode {
        self.exposure
    }

    /// The current snapshot of the attached registry, if it is still alive.
    pub fn snapshot(&self) -> Option<Arc<Snapshot>> {
        let (registry, scope) = self.source.get()?;
        Some(registry.upgrade()?.snapshot(scope))
    }

    /// The snapshot once servers still starting are ready, within the registry's startup
    /// grace (see [`crate::Registry::settled`]).
    pub async fn settled_snapshot(&self) -> Option<Arc<Snapshot>> {
        let (registry, scope) = self.source.get()?;
        let registry = registry.upgrade()?;
        Some(registry.settled(scope).await)
    }

    /// Whether `caller`'s lists and searches may show `tool` (the registry's per-caller
    /// filter: permission rules with a condition on the caller).
    pub fn visible_to(
        &self,
        tool: &dyn DynTool,
        caller: Option<&crate::identity::Identity>,
    ) -> bool {
        let registry = self
            .source
            .get()
            .and_then(|(registry, _)| registry.upgrade());
        registry.is_none_or(|r| r.visible_to(tool, caller))
    }

    /// `search_tool` as a caller who may not see the tools in `hidden` gets it: its
    /// catalog without them. `None` when the shared one names none of them (or disclosure
    /// is off): the shared `search_tool` serves.
    pub fn search_tool_without(
        &self,
        snapshot: &Snapshot,
        hidden: &std::collections::HashSet<&str>,
    ) -> Option<Arc<dyn DynTool>> {
        let view = self.view(snapshot);
        let inner = view.search.as_ref().and(snapshot.get(SEARCH_TOOL))?;
        if !view
            .plan
            .deferred
            .iter()
            .any(|n| hidden.contains(n.as_str()))
        {
            return None;
        }
        let mut plan = view.plan.clone();
        plan.deferred.retain(|n| !hidden.contains(n.as_str()));
        Some(search_with_catalog(Arc::clone(inner), &plan, snapshot))
    }

    /// The view of `snapshot`, cached per generation.
    pub fn view(&self, snapshot: &Snapshot) -> Arc<View> {
        let mut cache = self.view.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(view) = &*cache
            && view.generation == snapshot.generation
            && !snapshot.incomplete
        {
            return Arc::clone(view);
        }
        let view = Arc::new(self.build_view(snapshot));
        if !snapshot.incomplete {
            *cache = Some(Arc::clone(&view));
        }
        view
    }

    fn build_view(&self, snapshot: &Snapshot) -> View {
        let tools: Vec<Arc<dyn DynTool>> = snapshot
            .tools
            .iter()
            .filter(|(_, t)| t.meta().disclosure != DisclosureHint::EntryPoint)
            .map(|(_, t)| Arc::clone(t))
            .collect();
        let mut plan = self.rules.plan_with(
            tools
                .iter()
                .map(|t| (t.spec().name.as_str(), t.meta().disclosure)),
        );
        let search = snapshot.get(SEARCH_TOOL).cloned();
        let run = snapshot.get(RUN_TOOL).cloned();
        if search.is_none() || run.is_none() {
            // Without its two tools disclosure cannot work: show everything.
            plan = Rules::all_direct(plan);
        } else if snapshot.incomplete && !plan.active && self.mode != DisclosureMode::Off {
            // Some providers (MCP servers still starting, with nothing in the catalog cache)
            // have not said how many tools they bring, so `auto:N` cannot be decided yet.
            // A client that lists tools only once (Codex) must still reach them: offer
            // search_tool and run_tool now; every known tool stays direct.
            plan.active = true;
        }
        let search = search
            .filter(|_| plan.active)
            .map(|inner| search_with_catalog(inner, &plan, snapshot));
        View {
            generation: snapshot.generation,
            plan,
            tools,
            search,
            run,
            index: OnceLock::new(),
        }
    }

    /// The tools a session sees: direct tools (plus `search_tool` with the catalog and
    /// `run_tool` when disclosure is on), then — in backfill mode — the deferred tools the
    /// session unmasked, sorted.
    pub fn exposed(&self, snapshot: &Snapshot, unmasked: &Unmasked) -> Exposed {
        let strategy = match self.exposure {
            ExposureMode::Proxy => Strategy::Proxy,
            ExposureMode::Backfill => Strategy::Backfill,
        };
        self.exposed_with(snapshot, &unmasked.names(), strategy)
    }

    /// [`Disclosure::exposed`] for an explicit strategy and unmasked list (in unmask order).
    pub fn exposed_with(
        &self,
        snapshot: &Snapshot,
        unmasked: &[String],
        strategy: Strategy,
    ) -> Exposed {
        let view = self.view(snapshot);
        exposure::exposed(&view, unmasked, strategy)
    }
}

/// `search_tool` (`inner`) with the catalog of `plan`'s deferred tools in its description.
fn search_with_catalog(
    inner: Arc<dyn DynTool>,
    plan: &Plan,
    snapshot: &Snapshot,
) -> Arc<dyn DynTool> {
    let catalog = plan.catalog(|name| {
        snapshot
            .get(name)
            .map(|t| summary_line(&t.spec().description))
            .unwrap_or_default()
    });
    tools::with_catalog(inner, plan.deferred.len(), &catalog)
}

impl Rules {
    fn all_direct(mut plan: Plan) -> Plan {
        plan.active = false;
        plan.direct.append(&mut plan.deferred);
        plan.direct.sort();
        plan
    }
}
