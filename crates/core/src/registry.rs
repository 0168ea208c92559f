//! Registration and invalidation of tools (see ARCHITECTURE.md).
//!
//! A [`Registry`] has a global layer and named preset layers. A [`Scope`] is a chain of
//! presets; resolving it merges global + chain and the nearest layer wins a name clash.
//! Inside one layer the first of (priority, provider order, local order) wins. Changes bump a
//! generation number and carry no diff: consumers refetch a [`Snapshot`]. A provider that
//! fails to list is omitted and logged, and the snapshot is marked incomplete and not cached.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};

use serde_json::Value;
use tokio::sync::watch;

use crate::tool::DynTool;

/// Something that contributes tools to a layer: the built-ins, a skills folder, an MCP server.
pub trait ToolProvider: Send + Sync {
    /// Provider name, unique within its layer.
    fn name(&self) -> &str;
    /// The provider's current tools, in its own (local) order.
    fn tools(&self) -> Result<Vec<Arc<dyn DynTool>>, ProviderError>;

    /// Why tools this provider would offer are missing now (an MCP server not trusted yet,
    /// disabled or failed), for a call by one of their names; `None` when nothing is.
    fn absence(&self) -> Option<Absence> {
        None
    }
}

/// Why a provider's tools are missing, for a call that names one of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Absence {
    /// The names the provider's tools would have start with (`mcp__github__`).
    pub prefix: String,
    /// The sentence a caller reads: "server `github` is not trusted yet: the user must run
    /// `toolgate mcp trust github`".
    pub reason: String,
}

/// Why a provider could not list its tools.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The provider is not available (a server that failed to start, a folder that vanished).
    #[error("provider `{provider}` is unavailable: {reason}")]
    Unavailable {
        /// Provider name.
        provider: String,
        /// Why.
        reason: String,
    },
    /// The provider offered a tool whose definition is malformed.
    #[error("provider `{provider}` offers a malformed tool `{tool}`: {reason}")]
    Malformed {
        /// Provider name.
        provider: String,
        /// Tool name as offered.
        tool: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// Why a registration was refused.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// A provider of that name already exists in that layer.
    #[error(
        "provider `{provider}` is already registered in layer `{layer}`; unregister it first or pick another name"
    )]
    DuplicateProvider {
        /// Layer name (`global` or a preset).
        layer: String,
        /// Provider name.
        provider: String,
    },
    /// A tool definition is malformed; fails fast at registration.
    #[error(transparent)]
    Malformed(#[from] ProviderError),
}

/// A tools list from one provider: a fixed set, as the built-ins are.
pub struct StaticProvider {
    name: String,
    tools: Vec<Arc<dyn DynTool>>,
}

impl StaticProvider {
    /// A provider named `name` offering `tools` in this order.
    pub fn new(name: impl Into<String>, tools: Vec<Arc<dyn DynTool>>) -> Self {
        Self {
            name: name.into(),
            tools,
        }
    }
}

impl ToolProvider for StaticProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn tools(&self) -> Result<Vec<Arc<dyn DynTool>>, ProviderError> {
        Ok(self.tools.clone())
    }
}

/// Checks a tool definition: a valid name, a description, an object input schema.
pub fn validate_tool(provider: &str, tool: &dyn DynTool) -> Result<(), ProviderError> {
    let spec = tool.spec();
    let malformed = |reason: &str| ProviderError::Malformed {
        provider: provider.to_owned(),
        tool: spec.name.clone(),
        reason: reason.to_owned(),
    };
    let name_ok = !spec.name.is_empty()
        && spec.name.len() <= 64
        && spec
            .name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !name_ok {
        return Err(malformed("names must be 1-64 characters of [A-Za-z0-9_-]"));
    }
    if spec.description.trim().is_empty() {
        return Err(malformed("the description is empty"));
    }
    if spec.input_schema.get("type") != Some(&Value::String("object".to_owned())) {
        return Err(malformed("the input schema must have \"type\": \"object\""));
    }
    Ok(())
}

/// A chain of preset layers, outermost first; the global layer is always beneath it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Scope {
    chain: Vec<String>,
}

impl Scope {
    /// The global layer alone.
    pub fn global() -> Self {
        Self::default()
    }

    /// Global + `presets`, the last one nearest.
    pub fn chain<I: IntoIterator<Item = S>, S: Into<String>>(presets: I) -> Self {
        Self {
            chain: presets.into_iter().map(Into::into).collect(),
        }
    }
}

/// The resolved tool set of one scope at one generation.
pub struct Snapshot {
    /// Registry generation this snapshot was taken at.
    pub generation: u64,
    /// Tools by name, sorted.
    pub tools: BTreeMap<String, Arc<dyn DynTool>>,
    /// Whether some provider failed to list (its tools are missing).
    pub incomplete: bool,
    /// What failed, one line per provider.
    pub problems: Vec<String>,
    /// Tools the registry's visibility filter hides (denied by permission rules): not in
    /// `tools`, so no listing, rendering or search shows them, but [`Snapshot::get`] still
    /// finds them, so a call by name gets the denial message rather than "unknown tool".
    pub hidden: BTreeMap<String, Arc<dyn DynTool>>,
    /// Providers whose tools are missing, with why (see [`ToolProvider::absence`]).
    pub absent: Vec<Absence>,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("generation", &self.generation)
            .field("tools", &self.tools.keys().collect::<Vec<_>>())
            .field("incomplete", &self.incomplete)
            .field("problems", &self.problems)
            .finish()
    }
}

impl Snapshot {
    /// The tool named `name`, visible or hidden.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn DynTool>> {
        self.tools.get(name).or_else(|| self.hidden.get(name))
    }

    /// Why a tool named `name` is missing, when its provider says (the longest prefix wins).
    pub fn absence_of(&self, name: &str) -> Option<&Absence> {
        self.absent
            .iter()
            .filter(|a| name.starts_with(&a.prefix))
            .max_by_key(|a| a.prefix.len())
    }
}

struct Entry {
    provider: Arc<dyn ToolProvider>,
    priority: i32,
    seq: u64,
}

#[derive(Default)]
struct Layer {
    entries: Vec<Entry>,
}

#[derive(Default)]
struct Layers {
    global: Layer,
    presets: HashMap<String, Layer>,
    next_seq: u64,
}

/// Decides whether a tool is visible (filtering is part of visibility, not a later step).
pub type Visibility = Arc<dyn Fn(&dyn DynTool) -> bool + Send + Sync>;

/// Decides whether a tool is visible to one caller (`None`: a session without an
/// identity); per-session lists apply it on top of [`Visibility`].
pub type CallerVisibility =
    Arc<dyn Fn(&dyn DynTool, Option<&crate::identity::Identity>) -> bool + Send + Sync>;

/// The layered tool registry.
pub struct Registry {
    layers: RwLock<Layers>,
    generation: watch::Sender<u64>,
    cache: Mutex<HashMap<Scope, Arc<Snapshot>>>,
    visibility: RwLock<Option<Visibility>>,
    caller_visibility: RwLock<Option<CallerVisibility>>,
    /// Until when a call may wait for providers that are still starting (see
    /// [`Registry::settled`]); `None`: never.
    wait_until: Mutex<Option<tokio::time::Instant>>,
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("generation", &self.generation())
            .finish_non_exhaustive()
    }
}

const GLOBAL: &str = "global";

impl Registry {
    /// An empty registry at generation 0.
    pub fn new() -> Self {
        Self {
            layers: RwLock::new(Layers::default()),
            generation: watch::channel(0).0,
            cache: Mutex::new(HashMap::new()),
            visibility: RwLock::new(None),
            caller_visibility: RwLock::new(None),
            wait_until: Mutex::new(None),
        }
    }

    /// Lets [`Registry::settled`] wait for starting providers until `until` (a server's
    /// startup grace): a call or search for a tool not known yet waits for its server,
    /// a server that hangs cannot hold anything past it.
    pub fn wait_for_starters_until(&self, until: tokio::time::Instant) {
        *lock(&self.wait_until) = Some(until);
    }

    /// The snapshot of `scope` once no provider is still starting, or the current one when
    /// the wait set by [`Registry::wait_for_starters_until`] is over (or was never set).
    pub async fn settled(&self, scope: &Scope) -> Arc<Snapshot> {
        self.settled_for(scope, |_| false).await
    }

    /// [`Registry::settled`], but done as soon as `enough` holds for a snapshot (the tool a
    /// call names is known, say), however many providers are still starting.
    pub async fn settled_for(
        &self,
        scope: &Scope,
        enough: impl Fn(&Snapshot) -> bool,
    ) -> Arc<Snapshot> {
        let mut changes = self.subscribe();
        loop {
            let snapshot = self.snapshot(scope);
            let until = *lock(&self.wait_until);
            let Some(until) = until.filter(|_| snapshot.incomplete && !enough(&snapshot)) else {
                return snapshot;
            };
            match tokio::time::timeout_at(until, changes.changed()).await {
                Ok(Ok(())) => {}
                _ => return self.snapshot(scope),
            }
        }
    }

    /// Hides the tools `visible` rejects from every snapshot's `tools` (they stay callable
    /// by name, see [`Snapshot::hidden`]). Used to keep tools the permission rules deny out
    /// of `tools/list`, `toolgate tools` and `search_tool` results.
    pub fn set_visibility(&self, visible: Visibility) {
        *write(&self.visibility) = Some(visible);
        self.invalidate();
    }

    /// Hides the tools `visible` rejects for a caller from that caller's lists (`tools/list`,
    /// `search_tool`): permission rules with a condition on the caller's claims. Snapshots
    /// are shared by every session, so this filter is applied by each list, per session.
    pub fn set_caller_visibility(&self, visible: CallerVisibility) {
        *write(&self.caller_visibility) = Some(visible);
        self.invalidate();
    }

    /// Whether `caller`'s lists may show `tool` (always, without a caller filter).
    pub fn visible_to(
        &self,
        tool: &dyn DynTool,
        caller: Option<&crate::identity::Identity>,
    ) -> bool {
        read(&self.caller_visibility)
            .as_ref()
            .is_none_or(|visible| visible(tool, caller))
    }

    /// Whether some lists differ by caller (a caller filter is set).
    pub fn filters_by_caller(&self) -> bool {
        read(&self.caller_visibility).is_some()
    }

    /// Adds `provider` to `layer` (`None` = global) with `priority` (higher wins inside the
    /// layer). Its current tools are validated now, so a malformed definition fails fast.
    pub fn register(
        &self,
        layer: Option<&str>,
        provider: Arc<dyn ToolProvider>,
        priority: i32,
    ) -> Result<(), RegistryError> {
        // Validate what the provider offers right now; dynamic providers that cannot list yet
        // (a server still starting) are accepted and validated at snapshot time.
        if let Ok(tools) = provider.tools() {
            for tool in &tools {
                validate_tool(provider.name(), tool.as_ref())?;
            }
        }
        {
            let mut layers = write(&self.layers);
            let seq = layers.next_seq;
            layers.next_seq += 1;
            let target = match layer {
                None => &mut layers.global,
                Some(name) => layers.presets.entry(name.to_owned()).or_default(),
            };
            if target
                .entries
                .iter()
                .any(|e| e.provider.name() == provider.name())
            {
                return Err(RegistryError::DuplicateProvider {
                    layer: layer.unwrap_or(GLOBAL).to_owned(),
                    provider: provider.name().to_owned(),
                });
            }
            target.entries.push(Entry {
                provider,
                priority,
                seq,
            });
        }
        self.invalidate();
        Ok(())
    }

    /// Removes the provider `name` from `layer`; returns whether it was there.
    pub fn unregister(&self, layer: Option<&str>, name: &str) -> bool {
        let removed = {
            let mut layers = write(&self.layers);
            let target = match layer {
                None => Some(&mut layers.global),
                Some(l) => layers.presets.get_mut(l),
            };
            match target {
                Some(t) => {
                    let before = t.entries.len();
                    t.entries.retain(|e| e.provider.name() != name);
                    before != t.entries.len()
                }
                None => false,
            }
        };
        if removed {
            self.invalidate();
        }
        removed
    }

    /// Announces that some provider's tools changed: bumps the generation, drops caches.
    pub fn invalidate(&self) {
        lock(&self.cache).clear();
        self.generation.send_modify(|g| *g += 1);
    }

    /// The current generation.
    pub fn generation(&self) -> u64 {
        *self.generation.borrow()
    }

    /// A receiver that wakes on every generation change (no diff: refetch a snapshot).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }

    /// The resolved tools of `scope`, cached per generation unless incomplete.
    pub fn snapshot(&self, scope: &Scope) -> Arc<Snapshot> {
        let generation = self.generation();
        if let Some(snap) = lock(&self.cache).get(scope)
            && snap.generation == generation
        {
            return Arc::clone(snap);
        }
        let snap = Arc::new(self.resolve(scope, generation));
        if !snap.incomplete && self.generation() == generation {
            lock(&self.cache).insert(scope.clone(), Arc::clone(&snap));
        }
        snap
    }

    fn resolve(&self, scope: &Scope, generation: u64) -> Snapshot {
        let layers = read(&self.layers);
        let mut tools: BTreeMap<String, Arc<dyn DynTool>> = BTreeMap::new();
        let mut problems = Vec::new();
        let mut absent = Vec::new();
        let mut chain: Vec<(&str, &Layer)> = vec![(GLOBAL, &layers.global)];
        for name in &scope.chain {
            if let Some(layer) = layers.presets.get(name) {
                chain.push((name.as_str(), layer));
            }
        }
        // Layers go outermost to nearest; a nearer layer overwrites.
        for (layer_name, layer) in chain {
            let mut entries: Vec<&Entry> = layer.entries.iter().collect();
            entries.sort_by(|a, b| b.priority.cmp(&a.priority).then(a.seq.cmp(&b.seq)));
            let mut in_layer: BTreeMap<String, Arc<dyn DynTool>> = BTreeMap::new();
            for entry in entries {
                absent.extend(entry.provider.absence());
                let listed = entry.provider.tools().and_then(|list| {
                    for tool in &list {
                        validate_tool(entry.provider.name(), tool.as_ref())?;
                    }
                    Ok(list)
                });
                match listed {
                    Ok(list) => {
                        for tool in list {
                            // First of (priority, provider order, local order) wins.
                            in_layer.entry(tool.spec().name.clone()).or_insert(tool);
                        }
                    }
                    Err(err) => {
                        tracing::warn!(layer = layer_name, %err, "tool provider omitted");
                        problems.push(format!("{layer_name}: {err}"));
                    }
                }
            }
            tools.extend(in_layer);
        }
        let mut hidden = BTreeMap::new();
        if let Some(visible) = read(&self.visibility).as_ref() {
            let names: Vec<String> = tools
                .iter()
                .filter(|(_, t)| !visible(t.as_ref()))
                .map(|(n, _)| n.clone())
                .collect();
            for name in names {
                if let Some(tool) = tools.remove(&name) {
                    hidden.insert(name, tool);
                }
            }
        }
        Snapshot {
            generation,
            tools,
            incomplete: !problems.is_empty(),
            problems,
            hidden,
            absent,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn read<T>(m: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    m.read().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn write<T>(m: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    m.write().unwrap_or_else(std::sync::PoisonError::into_inner)
}
