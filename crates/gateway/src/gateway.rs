//! The gateway: every configured server, mounted into one registry.
//!
//! The `async` entry points other crates await (`start_all`, `start_for`, `start_server`,
//! `settled`, `shutdown`) return their body boxed, so it is compiled once, in this crate
//! (docs/development.md, "Where a crate's code is compiled").

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use toolgate_core::{Decision, DynTool, Registry, RegistryError};

use toolgate_oauth::{TokenStore, WebLogins};

use crate::auth::LoginHandler;
use crate::catalog::CatalogCache;
use crate::config::{CredentialStoreMode, Prefix, ServerSpec};
pub use crate::error::ForwardError;
use crate::import::{Discovered, ImportProblem};
use crate::limits::GatewayLimits;
use crate::mount::{Host, Mount, MountProvider, Phase};
use crate::naming::{Offer, Reserved, name_all, server_prefix};
use crate::proxy::ProxyTool;
use crate::sync::lock;

mod builder;
mod resource_tools;
mod resources;
mod sizing;

pub use builder::GatewayBuilder;
pub use resource_tools::{LIST_RESOURCES, READ_RESOURCE};
pub use resources::{ResourceCollision, describe_collisions};
pub use sizing::{MAX_BLOB_CHARS, SaveBlob, fit_prompt, fit_resource_contents, save_large_blobs};
mod forward;
pub use forward::Followed;
mod prompts;
mod status;
pub use status::{ServerState, ServerStatus, describe_transport};
mod reconcile;
pub use reconcile::Reconciled;

/// Most characters of one mounted server's `instructions` passed on to the client.
pub const MAX_SERVER_INSTRUCTIONS_CHARS: usize = 2_000;
/// Most characters of all mounted servers' `instructions` together.
pub const MAX_MOUNTED_INSTRUCTIONS_CHARS: usize = 8_000;
/// Resource updates held for a session that has not taken them yet; one that falls
/// further behind misses the oldest (and the log says so).
const UPDATES_BUFFER: usize = 256;

/// `text` cut to `max` characters, saying how much was left out.
fn cut(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_owned();
    }
    let kept: String = text.chars().take(max).collect();
    format!("{kept}\n[… {} more characters cut]", total - max)
}

struct Inner {
    /// The mounted servers, in name order: replaced whole when the config changes
    /// ([`Gateway::reconcile`]); readers take the list of the moment.
    mounts: Mutex<Arc<[Arc<Mount>]>>,
    /// Whether [`Gateway::start`] ran: servers added by a config change then start too.
    started: std::sync::atomic::AtomicBool,
    registry: Weak<Registry>,
    limits: GatewayLimits,
    naming: Mutex<()>,
    /// Names toolgate has without the servers (`prefix = "never"` servers may not take them).
    reserved: Mutex<Reserved>,
    /// Where each server's last tool list is kept between runs, when enabled.
    catalog: Option<CatalogCache>,
    /// Where OAuth tokens are kept: the one given to the builder, else the standard store
    /// of `token_mode`, opened on first use (a toolgate that mounts no remote server never
    /// touches the OS credential store).
    tokens: Mutex<Option<TokenStore>>,
    token_mode: CredentialStoreMode,
    /// Who logs a human in when a server needs it (none in `serve`).
    login: Option<Arc<dyn LoginHandler>>,
    /// Where logins per caller meet their browser (only under `serve --http`).
    web_logins: Option<Arc<WebLogins>>,
    /// Bumped when any server's prompts change.
    prompt_changes: tokio::sync::watch::Sender<u64>,
    /// Bumped when any server's resources or templates change.
    resource_changes: tokio::sync::watch::Sender<u64>,
    /// Whether `list_resources` and `read_resource` are offered (some server the rules
    /// let through offers resources): a change is a change of the tools.
    resource_tools: std::sync::atomic::AtomicBool,
    /// The output budget prompts and resource reads served over MCP are fitted to
    /// ([`Gateway::use_budget`]).
    budget: Mutex<Option<Arc<dyn toolgate_core::ResultBudget>>>,
    /// Where a binary resource too large to send is saved ([`Gateway::use_blob_spill`]).
    save_blob: Mutex<Option<SaveBlob>>,
    /// Every server's `notifications/resources/updated`, as URIs.
    updates: tokio::sync::broadcast::Sender<String>,
}

impl Inner {
    /// The mounted servers now.
    fn mounts(&self) -> Arc<[Arc<Mount>]> {
        Arc::clone(&lock(&self.mounts))
    }

    /// The token store, opening the standard one on first use.
    fn token_store(&self) -> Option<TokenStore> {
        let mut tokens = lock(&self.tokens);
        if tokens.is_none() {
            match TokenStore::standard(self.token_mode) {
                Ok(store) => *tokens = Some(store),
                Err(e) => tracing::warn!(%e, "no OAuth token store"),
            }
        }
        tokens.clone()
    }

    fn invalidate(&self) {
        if let Some(registry) = self.registry.upgrade() {
            registry.invalidate();
        }
    }

    /// Names every listed tool and prompt of every server (names depend on all of them:
    /// collisions, `prefix = "never"` clashes), fails the `never` servers whose names clash,
    /// and rebuilds the proxies that changed. Returns whether the published tools changed.
    fn publish(&self) -> bool {
        let _naming = lock(&self.naming);
        let mounts = self.mounts();
        let lists: Vec<_> = mounts.iter().map(|m| m.listed()).collect();
        let prompts: Vec<_> = mounts.iter().map(|m| m.prompts()).collect();
        let offers: Vec<Offer<'_>> = mounts
            .iter()
            .zip(&lists)
            .zip(&prompts)
            .map(|((m, list), prompts)| Offer {
                server: &m.spec.name,
                prefix: m.spec.prefix,
                tools: list.iter().map(|t| t.name.as_ref()).collect(),
                prompts: prompts.iter().map(|p| p.name.as_str()).collect(),
                clashed: m.clash().is_some(),
            })
            .collect();
        let named = name_all(&offers, &lock(&self.reserved));
        let mut changed = false;
        for ((mount, list), named) in mounts.iter().zip(&lists).zip(named) {
            // Only the server's own list fails it: a stale cached list that clashes must not
            // keep it from ever starting (and refreshing the cache). Until it answers, the
            // clashing cached names are simply not published.
            if let Some(reason) = named.clash
                && mount.state().ever_ready
            {
                changed |= mount.fail_for_clash(reason);
            }
            let old: HashMap<String, (rmcp::model::Tool, Arc<dyn DynTool>)> =
                lock(&mount.published)
                    .iter()
                    .map(|(tool, proxy)| {
                        (proxy.spec().name.clone(), (tool.clone(), Arc::clone(proxy)))
                    })
                    .collect();
            let mut published = Vec::with_capacity(named.tools.len());
            let mut skipped = Vec::new();
            // A server that is not mounted has no names, so nothing is published.
            for (tool, name) in list.iter().zip(named.tools) {
                // Unchanged tools keep their proxy (and its compiled validator).
                if let Some((source, proxy)) = old.get(&name)
                    && source == tool
                {
                    published.push((tool.clone(), Arc::clone(proxy)));
                    continue;
                }
                match ProxyTool::new(mount, tool, name) {
                    Ok(proxy) => {
                        published.push((tool.clone(), Arc::new(proxy) as Arc<dyn DynTool>))
                    }
                    Err(reason) => skipped.push(format!("skipped: {reason}")),
                }
            }
            if !skipped.is_empty() {
                for reason in &skipped {
                    tracing::warn!(server = %mount.spec.name, "{reason}");
                }
                let mut st = mount.state();
                for reason in skipped {
                    if !st.notes.contains(&reason) {
                        st.notes.push(reason);
                    }
                }
            }
            let mut current = lock(&mount.published);
            let same = current.len() == published.len()
                && current
                    .iter()
                    .zip(&published)
                    .all(|((_, a), (_, b))| Arc::ptr_eq(a, b));
            changed |= !same;
            *current = published;
        }
        changed
    }
}

impl Host for Inner {
    fn limits(&self) -> GatewayLimits {
        self.limits.clone()
    }

    fn catalog(&self) -> Option<CatalogCache> {
        self.catalog.clone()
    }

    fn token_store(&self) -> Option<TokenStore> {
        Inner::token_store(self)
    }

    fn login_handler(&self) -> Option<Arc<dyn LoginHandler>> {
        self.login.clone()
    }

    fn web_logins(&self) -> Option<Arc<WebLogins>> {
        self.web_logins.clone()
    }

    fn tools_changed(&self) {
        self.publish();
        self.invalidate();
    }

    fn answered(&self) {
        if self.publish() {
            self.invalidate();
        }
    }

    fn availability_changed(&self) {
        self.invalidate();
    }

    fn prompts_changed(&self) {
        // A `never` server's prompt may clash, which unmounts its tools too.
        if self.publish() {
            self.invalidate();
        }
        self.prompt_changes.send_modify(|n| *n += 1);
    }

    fn resources_changed(&self) {
        let offered = self.offers_resources();
        let was = self
            .resource_tools
            .swap(offered, std::sync::atomic::Ordering::AcqRel);
        if was != offered {
            self.invalidate();
        }
        self.resource_changes.send_modify(|n| *n += 1);
    }

    fn resource_updates(&self) -> tokio::sync::broadcast::Sender<String> {
        self.updates.clone()
    }
}

/// What a client is told when a rule refuses `what` over MCP, where nobody can answer an
/// `ask` rule (MCP sessions have no approver).
fn refusal(what: &str, verdict: &toolgate_core::Verdict) -> String {
    let rule = verdict
        .rule
        .as_deref()
        .map_or_else(String::new, |r| format!(" by the rule {r}"));
    match verdict.decision {
        Decision::Ask => format!(
            "{what} needs the user's approval{rule}, and nobody can be asked over MCP; ask the user to change that rule to allow it"
        ),
        _ => {
            format!("permission denied: {what} is blocked{rule}; ask the user to change that rule")
        }
    }
}

/// Mounts MCP servers into a registry and runs them.
pub struct Gateway {
    inner: Arc<Inner>,
    problems: Mutex<Vec<ImportProblem>>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("servers", &self.inner.mounts().len())
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// A gateway over the `discovered` servers, registered in `registry` with `limits`;
    /// optional parts (the catalog cache, the token store, a login handler, the browser
    /// logins of `serve --http`) are set on the builder. See [`GatewayBuilder::build`].
    pub fn builder(
        discovered: Discovered,
        limits: GatewayLimits,
        registry: &Arc<Registry>,
    ) -> GatewayBuilder<'_> {
        GatewayBuilder::new(discovered, limits, registry)
    }

    /// [`Gateway::builder`] with nothing optional: no catalog cache, the standard token
    /// store, no login handler, no browser logins.
    pub fn new(
        discovered: Discovered,
        limits: GatewayLimits,
        registry: &Arc<Registry>,
    ) -> Result<Self, RegistryError> {
        Self::builder(discovered, limits, registry).build()
    }

    /// How many servers' tools were listed from the catalog cache before the servers
    /// answered ([`GatewayBuilder::catalog`]).
    pub fn cached_servers(&self) -> usize {
        self.inner
            .mounts()
            .iter()
            .filter(|m| m.state().from_cache)
            .count()
    }

    /// The token store in use (the one given to [`GatewayBuilder::token_store`], else the
    /// standard one).
    pub fn token_store(&self) -> Option<TokenStore> {
        self.inner.token_store()
    }

    /// Whether any enabled server is still starting (its tools not known yet, and not in
    /// the catalog cache).
    pub fn pending(&self) -> bool {
        self.inner.mounts().iter().any(|m| {
            let known = {
                let st = m.state();
                st.ever_ready || st.from_cache
            };
            !known && m.is_settling()
        })
    }

    /// Config files that could not be read, with why.
    pub fn problems(&self) -> Vec<ImportProblem> {
        lock(&self.problems).clone()
    }

    /// The configured servers, as they are now (a config change may add or remove some).
    pub fn servers(&self) -> impl Iterator<Item = ServerSpec> + use<> {
        let specs: Vec<ServerSpec> = self.inner.mounts().iter().map(|m| m.spec.clone()).collect();
        specs.into_iter()
    }

    /// Starts every enabled server in the background, concurrently; returns at once. Each
    /// server's tools appear (registry invalidation → upstream `list_changed`) when it is
    /// ready. Must be called inside a tokio runtime.
    pub fn start(&self) {
        self.inner
            .started
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let mounts = self.inner.mounts();
        let queued: Vec<&Arc<Mount>> = mounts.iter().filter(|m| m.request_start()).collect();
        if queued.is_empty() {
            return;
        }
        // From here on a `tools/list` knows these servers are coming.
        self.inner.invalidate();
        for mount in queued {
            let mount = Arc::clone(mount);
            tokio::spawn(async move { mount.start().await });
        }
    }

    /// Starts the servers whose tool names could include `tool` and waits until they are
    /// ready or failed: by the `mcp__<server>__` prefix (every prefixed server for another
    /// `mcp__` name), and each `prefix = "never"` server that lists `tool` or whose tools
    /// are not known yet; every server for `list_resources` and `read_resource`. For
    /// one-shot commands that should not start unrelated servers.
    pub fn start_for<'a>(&'a self, tool: &'a str) -> futures::future::BoxFuture<'a, ()> {
        Box::pin(async move {
            if tool == LIST_RESOURCES || tool == READ_RESOURCE {
                return self.start_all().await;
            }
            let never = |m: &&Arc<Mount>| {
                m.spec.prefix == Prefix::Never
                    && (m.listed().iter().any(|t| t.name == tool) || {
                        let st = m.state();
                        !(st.ever_ready || st.from_cache)
                    })
            };
            let mounts = self.inner.mounts();
            let mut targets: Vec<&Arc<Mount>> = mounts.iter().filter(never).collect();
            if tool.starts_with("mcp__") {
                let prefixed = |m: &&Arc<Mount>| m.spec.prefix == Prefix::Always;
                let matching: Vec<&Arc<Mount>> = mounts
                    .iter()
                    .filter(prefixed)
                    .filter(|m| tool.starts_with(&server_prefix(&m.spec.name)))
                    .collect();
                if matching.is_empty() {
                    targets.extend(mounts.iter().filter(prefixed));
                } else {
                    targets.extend(matching);
                }
            }
            futures::future::join_all(targets.into_iter().map(|m| m.start())).await;
        })
    }

    /// Starts the server named `server` (if configured) and waits until it is ready or
    /// failed.
    pub fn start_server<'a>(&'a self, server: &'a str) -> futures::future::BoxFuture<'a, ()> {
        Box::pin(async move {
            let mount = self
                .inner
                .mounts()
                .iter()
                .find(|m| m.spec.name == server)
                .cloned();
            if let Some(mount) = mount {
                mount.start().await;
            }
        })
    }

    /// Starts every enabled server and waits until each is ready or failed.
    pub fn start_all<'a>(&'a self) -> futures::future::BoxFuture<'a, ()> {
        Box::pin(async move {
            let mounts = self.inner.mounts();
            futures::future::join_all(mounts.iter().map(|m| m.start())).await;
        })
    }

    /// Starts every enabled server, as [`Gateway::start_all`] does, yielding each server's
    /// name as soon as it is ready or failed (disabled and untrusted ones at once), so a
    /// listing can show each as it is known.
    pub fn start_each(&self) -> impl futures::Stream<Item = String> + use<> {
        self.inner
            .mounts()
            .iter()
            .map(|m| {
                let m = Arc::clone(m);
                async move {
                    m.start().await;
                    m.spec.name.clone()
                }
            })
            .collect::<futures::stream::FuturesUnordered<_>>()
    }

    /// Waits until no server is starting.
    pub fn settled<'a>(&'a self) -> futures::future::BoxFuture<'a, ()> {
        Box::pin(async move {
            let mounts = self.inner.mounts();
            futures::future::join_all(mounts.iter().map(|m| m.settled())).await;
        })
    }

    /// The mounted servers' `instructions`, for toolgate's own: each under its server's
    /// name and tool prefix, cut to [`MAX_SERVER_INSTRUCTIONS_CHARS`] per server and
    /// [`MAX_MOUNTED_INSTRUCTIONS_CHARS`] in all; empty when no server gave any. A server
    /// known only from the catalog cache contributes what it gave last time.
    pub fn instructions(&self) -> String {
        let mut out = String::new();
        let mut left_out = Vec::new();
        for mount in self.inner.mounts().iter() {
            let Some(text) = mount.instructions().filter(|_| mount.clash().is_none()) else {
                continue;
            };
            let name = &mount.spec.name;
            let tools = match mount.spec.prefix {
                Prefix::Always => format!("tools `{}*`", server_prefix(name)),
                Prefix::Never => "tools under their own names".to_owned(),
            };
            let section = format!(
                "\n\n### {name} ({tools})\n{}",
                cut(text.trim(), MAX_SERVER_INSTRUCTIONS_CHARS)
            );
            if out.chars().count() + section.chars().count() > MAX_MOUNTED_INSTRUCTIONS_CHARS {
                left_out.push(format!("`{name}`"));
                continue;
            }
            out.push_str(&section);
        }
        if !left_out.is_empty() {
            out.push_str(&format!(
                "\n\n(The instructions of {} are left out: over toolgate's {MAX_MOUNTED_INSTRUCTIONS_CHARS}-character budget.)",
                left_out.join(", ")
            ));
        }
        if out.is_empty() {
            return out;
        }
        format!("## Mounted MCP servers\nWhat each server says about its own tools.{out}")
    }

    /// The tools mounted from `server`, in the server's order; `None` for an unknown name.
    pub fn server_tools(&self, server: &str) -> Option<Vec<Arc<dyn DynTool>>> {
        self.inner
            .mounts()
            .iter()
            .find(|m| m.spec.name == server)
            .map(|m| m.tools())
    }

    /// Stops every server: calls in flight fail, stdin is closed, then SIGTERM and SIGKILL
    /// for any process group still alive. Returns when all are gone (at most a few seconds).
    pub fn shutdown<'a>(&'a self) -> futures::future::BoxFuture<'a, ()> {
        Box::pin(async move {
            let mounts = self.inner.mounts();
            for mount in mounts.iter() {
                mount.shutdown.cancel();
            }
            let all = futures::future::join_all(mounts.iter().map(|m| async move {
                // A start in progress notices the shutdown and kills what it spawned.
                m.stopped().await;
            }));
            let _ = tokio::time::timeout(Duration::from_secs(10), all).await;
        })
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        // Monitors close their servers; a dropped runtime kills them through their guards.
        for mount in self.inner.mounts().iter() {
            mount.shutdown.cancel();
        }
    }
}

/// Says so when `mount` is not started because it is not trusted. `info`: commands print it
/// themselves (`tools`, `call`, `mcp list`), and the model reads it in the result of a call
/// to one of its tools.
fn log_if_untrusted(mount: &Mount) {
    if let Phase::Untrusted(reason) = &mount.state().phase {
        tracing::info!(
            server = %mount.spec.name,
            source = %mount.spec.source,
            %reason,
            "MCP server from a project file is not trusted, so it was not started; after checking its command and the files it runs with `toolgate mcp list`, run `{}`",
            crate::trust::trust_command(&mount.spec.name)
        );
    }
}

/// Registers `mount`'s provider (`mcp:<server>`) in the global layer of `registry`.
fn register(registry: &Registry, mount: &Arc<Mount>) -> Result<(), RegistryError> {
    let provider = MountProvider {
        name: format!("mcp:{}", mount.spec.name),
        mount: Arc::clone(mount),
    };
    registry.register(None, Arc::new(provider), 0)
}

/// Every tool name `registry` has now, shown or hidden: taken before any server mounts.
fn taken_tools(registry: &Registry) -> Vec<String> {
    let snapshot = registry.snapshot(&toolgate_core::Scope::global());
    snapshot
        .tools
        .keys()
        .chain(snapshot.hidden.keys())
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::cut;

    #[test]
    fn long_instructions_are_cut_and_say_by_how_much() {
        assert_eq!(cut("short", 10), "short");
        assert_eq!(cut("ééééé", 5), "ééééé");
        assert_eq!(cut("ééééé", 3), "ééé\n[… 2 more characters cut]");
    }
}
