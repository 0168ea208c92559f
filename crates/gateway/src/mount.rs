//! One mounted server's lifecycle: start, list, watch, call, crash, restart, stop.
//!
//! ```text
//!  Idle ──start──▶ Starting ──ok──▶ Ready ──exits/crashes──▶ Failed(retry) ──next call──▶ Starting
//!                     │                                                        (after backoff)
//!                     └──fails/hangs──▶ Failed(no retry)
//! ```
//!
//! Startup (spawn, `initialize`, the whole paginated `tools/list`) is bounded by the
//! server's `startup_timeout_sec`; a server that misses it is killed and marked failed with
//! the reason, and nothing else ever waits for it. While ready, a monitor task owns the
//! connection: `tools/list_changed` triggers a refetch (and, through the registry, an
//! upstream `list_changed`); the connection ending fails every call in flight at once and
//! marks the server for a restart on its next call, with backoff 0 s, 1 s, 2 s, … 60 s.
//!
//! What a failed server contributes to the registry: before it was ever ready, nothing (its
//! tools were never known; `toolgate mcp list` and the log say why); while starting, an
//! "unavailable" error, so snapshots are marked incomplete; after a crash, its last tool list,
//! whose calls restart it or answer with the reason and when the next attempt is allowed.
//! The call path (a live connection on demand, progress, cancellation) is in `mount/call.rs`,
//! the server's prompts in `mount/prompts.rs`, its resources in `mount/resources.rs`, their
//! subscriptions in `mount/subscribe.rs`, completion of their arguments in
//! `mount/complete.rs`, the connections of a server used per user in `mount/per_user.rs`;
//! starting the server is in `mount/start.rs`, watching its connection in `mount/monitor.rs`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use rmcp::service::RunningService;
use rmcp::{Peer, RoleClient};
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;
use toolgate_core::DynTool;

use crate::catalog::CatalogCache;
use crate::config::ServerSpec;
use crate::connect::Diagnostics;
use crate::failure::{Failure, NeedsLogin};
use crate::handler::{Handler, ProgressRoutes};
use crate::limits::GatewayLimits;
use crate::sync::lock;

mod call;
mod complete;
mod host;
mod login;
mod monitor;
mod per_user;
mod prompts;
pub(crate) mod resources;
mod rounds;
mod start;
mod stdio;
mod subscribe;
mod trust;
pub(crate) use crate::error::{secs, tidy};
pub(crate) use call::MountProvider;
pub(crate) use host::Host;
pub(crate) use subscribe::Upstream;

/// A connection that lived this long resets the restart backoff.
const STABLE_AFTER: Duration = Duration::from_secs(60);
/// Longest wait between restarts.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Where a server is in its lifecycle.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Phase {
    Disabled,
    /// Defined by a project file and not trusted, or a file it runs changed since it was
    /// trusted (found at assembly or before a restart): never started; the reason says why.
    Untrusted(String),
    Idle,
    Starting,
    Ready,
    /// `retry_at` is set for a server that was ready once: a call after it restarts it.
    Failed {
        reason: String,
        retry_at: Option<Instant>,
    },
    /// A remote server that needs a human to run `toolgate mcp login NAME`; it starts by
    /// itself once tokens appear in the store.
    NeedsLogin(NeedsLogin),
}

pub(crate) struct State {
    pub(crate) phase: Phase,
    live: Option<Arc<Live>>,
    pub(crate) ever_ready: bool,
    failures: u32,
    pub(crate) startup: Option<Duration>,
    pub(crate) notes: Vec<String>,
    /// Whether the tools shown came from the catalog cache before the server first
    /// answered (they are listed, and calls start the server, as after a crash).
    pub(crate) from_cache: bool,
    /// The token record's stamp when the server was found to need a login: a different
    /// stamp means someone logged in (or refreshed) since.
    login_stamp: Option<String>,
    /// Whether a task watches the token store for a login.
    login_watch: bool,
    /// Why a `prefix = "never"` server's names clash with names toolgate already has: it
    /// is stopped and offers nothing (set by the gateway's naming, never cleared).
    pub(crate) clash: Option<String>,
}

/// One open connection.
pub(crate) struct Live {
    peer: Peer<RoleClient>,
    routes: Arc<ProgressRoutes>,
    /// The progress and log messages in flight ([`crate::ordered`]).
    arrivals: Arc<crate::ordered::Arrivals>,
    /// The calls in flight and their sessions, for the server's requests to the client.
    callers: Arc<crate::relay::Callers>,
    /// Notified when the server says its prompts changed.
    prompts_changed: Arc<Notify>,
    /// Notified when the server says its resources changed.
    resources_changed: Arc<Notify>,
    diag: Arc<Diagnostics>,
    /// Cancelled when the connection has ended and its process is gone.
    closed: CancellationToken,
    /// Cancelled by a call that found the connection broken (an HTTP server gone away):
    /// the monitor then closes it, so the next call reconnects instead of timing out.
    abandon: CancellationToken,
    broken: Mutex<Option<String>>,
    /// Set by a call the server refused for want of a (better) login: the monitor then
    /// leaves the server `needs login` instead of failed.
    refused: Mutex<Option<NeedsLogin>>,
    end: Mutex<Option<String>>,
    opened: Instant,
}

impl Live {
    /// The connection `handler` serves, just opened.
    pub(crate) fn open(handler: &Handler, peer: &Peer<RoleClient>) -> Arc<Self> {
        Self::open_with(handler, peer, Arc::default())
    }

    fn open_with(handler: &Handler, peer: &Peer<RoleClient>, diag: Arc<Diagnostics>) -> Arc<Self> {
        Arc::new(Self {
            peer: peer.clone(),
            routes: Arc::clone(&handler.progress),
            arrivals: Arc::clone(&handler.arrivals),
            callers: Arc::clone(&handler.callers),
            prompts_changed: Arc::clone(&handler.prompts_changed),
            resources_changed: Arc::clone(&handler.resources_changed),
            diag,
            closed: CancellationToken::new(),
            abandon: CancellationToken::new(),
            broken: Mutex::new(None),
            refused: Mutex::new(None),
            end: Mutex::new(None),
            opened: Instant::now(),
        })
    }

    /// Gives up on this connection because of `why`.
    fn abandon(&self, why: String) {
        lock(&self.broken).get_or_insert(why);
        self.abandon.cancel();
    }

    fn end_reason(&self) -> String {
        lock(&self.end)
            .clone()
            .unwrap_or_else(|| "the connection closed".to_owned())
    }
}

/// A mounted server.
pub(crate) struct Mount {
    pub(crate) spec: ServerSpec,
    /// The gateway holding it (weak: the gateway owns its mounts).
    host: Weak<dyn Host>,
    state: Mutex<State>,
    /// The server's tools after `enabled_tools` / `disabled_tools`, as last listed.
    listed: Mutex<Arc<Vec<rmcp::model::Tool>>>,
    /// The server's `instructions`, as it last gave them (or as the catalog cache has them).
    instructions: Mutex<Option<String>>,
    /// The server's prompts, as last listed (empty until it is ready).
    prompts: Mutex<Arc<Vec<rmcp::model::Prompt>>>,
    /// The server's resources and templates, as last listed (empty until it is ready).
    resources: Mutex<Arc<resources::Offered>>,
    /// Set while the catalog cache says the server offers resources and it has not
    /// answered yet.
    cached_resources: AtomicBool,
    /// The resource URIs toolgate's sessions follow, with how many follow each: subscribed
    /// upstream while at least one does.
    followed: Mutex<std::collections::HashMap<String, usize>>,
    /// Taken for each subscribe and unsubscribe sent upstream, so they reach the server in
    /// the order the followers came and went.
    upstream: tokio::sync::Mutex<()>,
    /// Stops the `subscriptions/listen` stream open to a 2026-07-28 server, if any.
    listening: Mutex<Option<CancellationToken>>,
    /// The published proxies with the definitions they were built from (set by
    /// [`Host::tools_changed`]).
    pub(crate) published: Mutex<Vec<(rmcp::model::Tool, Arc<dyn DynTool>)>>,
    changed: watch::Sender<u64>,
    /// Set when a background start has been asked for but has not begun yet.
    requested: AtomicBool,
    start_lock: tokio::sync::Mutex<()>,
    /// Each caller's connection and login, for a server used per user.
    per_user: Mutex<per_user::PerUser>,
    pub(crate) shutdown: CancellationToken,
}

/// What a handshake hands over: the running service, the tools it listed and notes on them.
type Handshaken = (
    RunningService<RoleClient, Handler>,
    Vec<rmcp::model::Tool>,
    Vec<String>,
);

impl Mount {
    pub(crate) fn new(spec: ServerSpec, host: Weak<dyn Host>) -> Self {
        let phase = if !spec.enabled {
            Phase::Disabled
        } else if !spec.trust.allows_start() {
            let reason = spec.launch.as_ref().and_then(|l| l.untrusted.clone());
            Phase::Untrusted(
                reason
                    .unwrap_or_else(|| "defined by a project file and not trusted yet".to_owned()),
            )
        } else {
            Phase::Idle
        };
        Self {
            spec,
            host,
            state: Mutex::new(State {
                phase,
                live: None,
                ever_ready: false,
                failures: 0,
                startup: None,
                notes: Vec::new(),
                from_cache: false,
                login_stamp: None,
                login_watch: false,
                clash: None,
            }),
            listed: Mutex::new(Arc::new(Vec::new())),
            instructions: Mutex::new(None),
            prompts: Mutex::new(Arc::new(Vec::new())),
            resources: Mutex::new(Arc::default()),
            cached_resources: AtomicBool::new(false),
            followed: Mutex::new(std::collections::HashMap::new()),
            upstream: tokio::sync::Mutex::new(()),
            listening: Mutex::new(None),
            published: Mutex::new(Vec::new()),
            changed: watch::channel(0).0,
            requested: AtomicBool::new(false),
            start_lock: tokio::sync::Mutex::new(()),
            per_user: Mutex::default(),
            shutdown: CancellationToken::new(),
        }
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    pub(crate) fn listed(&self) -> Arc<Vec<rmcp::model::Tool>> {
        Arc::clone(&lock(&self.listed))
    }

    /// The published tools, in the server's order.
    pub(crate) fn tools(&self) -> Vec<Arc<dyn DynTool>> {
        lock(&self.published)
            .iter()
            .map(|(_, proxy)| Arc::clone(proxy))
            .collect()
    }

    /// Returns once a start in progress has ended and the connection (if any) is closed
    /// and its processes are gone. Call after cancelling [`Mount::shutdown`].
    pub(crate) async fn stopped(&self) {
        drop(self.start_lock.lock().await);
        let live = self.state().live.clone();
        if let Some(live) = live {
            live.closed.cancelled().await;
        }
    }

    /// Why the server's names clash, if they do (`prefix = "never"`).
    pub(crate) fn clash(&self) -> Option<String> {
        self.state().clash.clone()
    }

    /// Fails the server for good because its names clash: it offers nothing, and a running
    /// connection is closed (the fix is a config change and a restart). Returns whether this
    /// is news.
    pub(crate) fn fail_for_clash(&self, reason: String) -> bool {
        {
            let mut st = self.state();
            if st.clash.is_some() {
                return false;
            }
            tracing::warn!(server = %self.spec.name, %reason, "MCP server not mounted");
            st.clash = Some(reason);
        }
        self.shutdown.cancel();
        self.changed.send_modify(|g| *g += 1);
        true
    }

    fn set_phase(&self, phase: Phase) {
        self.state().phase = phase;
        self.changed.send_modify(|g| *g += 1);
    }

    fn invalidate(&self) {
        if let Some(host) = self.host.upgrade() {
            host.availability_changed();
        }
    }

    /// Marks an idle server as about to start, so it reads as starting from now on.
    pub(crate) fn request_start(&self) -> bool {
        let idle = self.state().phase == Phase::Idle;
        if idle {
            self.requested.store(true, Ordering::SeqCst);
        }
        idle
    }

    /// Whether the server is starting (or about to).
    pub(crate) fn is_settling(&self) -> bool {
        match self.state().phase {
            Phase::Starting => true,
            Phase::Idle => self.requested.load(Ordering::SeqCst),
            _ => false,
        }
    }

    /// Waits until the server is not starting.
    pub(crate) async fn settled(&self) {
        let mut rx = self.changed.subscribe();
        while self.is_settling() {
            if rx.changed().await.is_err() {
                return;
            }
        }
    }

    /// Shows the tools the catalog cache holds for this server until it answers itself.
    pub(crate) fn load_catalog(&self, cache: &CatalogCache) -> bool {
        // An untrusted server will not start: a cached list would show tools nobody serves.
        if !self.spec.enabled || !self.spec.trust.allows_start() || self.state().ever_ready {
            return false;
        }
        let Some(cached) = cache.load(&self.spec) else {
            return false;
        };
        tracing::debug!(server = %self.spec.name, tools = cached.tools.len(), "tools from the catalog cache");
        *lock(&self.listed) = Arc::new(cached.tools);
        *lock(&self.instructions) = cached.instructions;
        *lock(&self.prompts) = Arc::new(cached.prompts);
        *lock(&self.resources) = Arc::new(resources::Offered {
            resources: cached.resource_list,
            templates: cached.templates,
        });
        self.cached_resources
            .store(cached.resources, Ordering::SeqCst);
        self.state().from_cache = true;
        true
    }

    /// Saves what the server offers to the catalog cache: `tools`, its instructions,
    /// prompts and resources as last recorded, and whether it `offers_resources`.
    pub(super) fn save_catalog(&self, tools: &[rmcp::model::Tool], offers_resources: bool) {
        if let Some(cache) = self.host.upgrade().and_then(|h| h.catalog()) {
            let offered = self.resources();
            let catalog = crate::catalog::CachedCatalog {
                tools: tools.to_vec(),
                instructions: lock(&self.instructions).clone(),
                resources: offers_resources,
                prompts: lock(&self.prompts).to_vec(),
                resource_list: offered.resources.clone(),
                templates: offered.templates.clone(),
            };
            cache.store(&self.spec, &catalog);
        }
    }

    /// The server's `instructions`, if it gave any (now or in an earlier session).
    pub(crate) fn instructions(&self) -> Option<String> {
        lock(&self.instructions).clone()
    }

    fn limits(&self) -> GatewayLimits {
        self.host.upgrade().map(|h| h.limits()).unwrap_or_default()
    }
}

/// 0 s for the first restart, then 1 s, 2 s, 4 s, … up to [`MAX_BACKOFF`].
fn backoff(failures: u32) -> Duration {
    match failures {
        0 | 1 => Duration::ZERO,
        n => Duration::from_secs(1u64 << (n - 2).min(6)).min(MAX_BACKOFF),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_to_a_minute() {
        let steps: Vec<u64> = (1..=10).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(steps, [0, 1, 2, 4, 8, 16, 32, 60, 60, 60]);
    }

    #[test]
    fn seconds_read_well() {
        assert_eq!(secs(Duration::from_secs(15)), "15 s");
        assert_eq!(secs(Duration::from_millis(1500)), "1.5 s");
    }
}
