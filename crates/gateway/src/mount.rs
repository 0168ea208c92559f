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
//! `mount/complete.rs`, the connections of a server used per user in `mount/per_user.rs`.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::BoxFuture;
use rmcp::service::RunningService;
use rmcp::{Peer, RoleClient};
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;
use toolgate_core::DynTool;

use crate::catalog::CatalogCache;
use crate::config::{ServerSpec, Transport};
use crate::connect::{ChildGuard, Diagnostics, http_transport, http_transport_with};
use crate::failure::{Failure, NeedsLogin};
use crate::handler::{Handler, ProgressRoutes};
use crate::lifecycle::Lifecycle;
use crate::limits::GatewayLimits;
use crate::list::list_all;
use crate::sync::lock;

mod call;
mod complete;
mod host;
mod login;
mod per_user;
mod prompts;
pub(crate) mod resources;
mod stdio;
mod subscribe;
mod trust;
pub(crate) use call::{MountProvider, tidy};
pub(crate) use host::Host;
pub(crate) use per_user::CallerLoginError;
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

/// What a successful startup hands over.
struct Connected {
    service: RunningService<RoleClient, Handler>,
    guard: Option<ChildGuard>,
    list_changed: Arc<Notify>,
    live: Arc<Live>,
    tools: Vec<rmcp::model::Tool>,
    prompts: Vec<rmcp::model::Prompt>,
    resources: resources::Offered,
    notes: Vec<String>,
}

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

    /// Starts the server if it is idle, or restarts it if a retry is due; returns when it
    /// is ready or failed. Concurrent callers share one attempt.
    ///
    /// The attempt runs as a task of its own: a caller that gives up (a call cancelled or
    /// timed out during a restart) must not leave the server half-started.
    ///
    /// Boxed, like the gateway's public entry points: a crate that awaits a start compiles
    /// this small future, not the whole start again (docs/development.md, "Build profiles").
    pub(crate) fn start(self: &Arc<Self>) -> BoxFuture<'static, ()> {
        let mount = Arc::clone(self);
        Box::pin(async move {
            let _ = tokio::spawn(async move { mount.attempt_start().await }).await;
        })
    }

    async fn attempt_start(self: &Arc<Self>) {
        let _attempt = self.start_lock.lock().await;
        // A server that needed a login starts again once tokens for it appeared.
        if matches!(self.state().phase, Phase::NeedsLogin(_)) && self.logged_in_since() {
            self.login_arrived();
        }
        let allowed = match &self.state().phase {
            Phase::Idle => true,
            Phase::Failed {
                retry_at: Some(at), ..
            } => Instant::now() >= *at,
            _ => false,
        };
        if !allowed || self.shutdown.is_cancelled() {
            if self.requested.swap(false, Ordering::SeqCst) {
                self.changed.send_modify(|g| *g += 1);
            }
            return;
        }
        let (first, from_cache) = {
            let st = self.state();
            (!st.ever_ready, st.from_cache)
        };
        if let Err(reason) = self.recheck_trust().await {
            self.distrust(reason.to_string());
            return;
        }
        self.set_phase(Phase::Starting);
        self.requested.store(false, Ordering::SeqCst);
        if first && !from_cache {
            // Listed as unavailable (snapshot incomplete) rather than as having no tools.
            self.invalidate();
        }
        let started = Instant::now();
        let outcome = tokio::select! {
            // A panic in a transport (rmcp, reqwest) must not leave the server "starting".
            r = AssertUnwindSafe(self.connect()).catch_unwind() => r.unwrap_or_else(|_| {
                Err(Failure::Failed("toolgate failed internally while starting it (a panic; see the log)".to_owned()))
            }),
            () = self.shutdown.cancelled() => Err(Failure::Failed("stopped: toolgate is shutting down".to_owned())),
        };
        match outcome {
            Ok(connected) => {
                let startup = started.elapsed();
                tracing::info!(server = %self.spec.name, tools = connected.tools.len(), ms = startup.as_millis() as u64, "MCP server ready");
                // Unchanged since the catalog cache (or the last start): nothing to announce,
                // so clients keep their tool list and their prompt cache.
                let never_shown = first && !from_cache;
                let instructions = connected
                    .service
                    .peer_info()
                    .and_then(|info| info.instructions.clone())
                    .filter(|text| !text.trim().is_empty());
                let new_instructions = *lock(&self.instructions) != instructions;
                *lock(&self.instructions) = instructions;
                let changed = never_shown || **lock(&self.listed) != connected.tools;
                let offers = !connected.resources.is_empty();
                let new_offer = self.offers_resources() != offers;
                let new_resources = *self.resources() != connected.resources;
                let new_prompts = **lock(&self.prompts) != connected.prompts;
                self.set_prompts(connected.prompts);
                self.set_resources(connected.resources);
                if changed || new_instructions || new_offer || new_resources || new_prompts {
                    self.save_catalog(&connected.tools, offers);
                }
                *lock(&self.listed) = Arc::new(connected.tools);
                {
                    let mut st = self.state();
                    st.live = Some(Arc::clone(&connected.live));
                    st.ever_ready = true;
                    st.startup = Some(startup);
                    st.notes = connected.notes;
                }
                self.set_phase(Phase::Ready);
                self.resubscribe(&connected.live.peer);
                if let Some(host) = self.host.upgrade() {
                    match changed {
                        true => host.tools_changed(),
                        false => host.answered(),
                    }
                }
                tokio::spawn(Arc::clone(self).monitor(
                    connected.service,
                    connected.guard,
                    connected.live,
                    connected.list_changed,
                ));
            }
            Err(Failure::NeedsLogin(needs)) => {
                self.state().startup = None;
                self.needs_login(needs);
                if first && !from_cache {
                    self.invalidate();
                }
            }
            Err(Failure::Failed(reason)) => {
                tracing::warn!(server = %self.spec.name, %reason, "MCP server failed to start");
                let retry_at = {
                    let mut st = self.state();
                    st.startup = None;
                    if st.ever_ready {
                        st.failures += 1;
                        Some(Instant::now() + backoff(st.failures))
                    } else {
                        None
                    }
                };
                self.set_phase(Phase::Failed { reason, retry_at });
                if first && !from_cache {
                    self.invalidate();
                }
            }
        }
    }

    /// Spawns or dials the server, initialises it and lists its tools, within the startup
    /// timeout. On failure nothing is left running.
    async fn connect(&self) -> Result<Connected, Failure> {
        let limits = self.limits();
        let updates = self.host.upgrade().map(|h| h.resource_updates());
        let handler = Handler::new(&self.spec.name, &limits, updates);
        let mut diag = Arc::new(Diagnostics::default());
        let timeout = self.spec.startup_timeout;
        let stage = Mutex::new("initialize");
        let (result, guard) = match &self.spec.transport {
            Transport::Invalid(reason) => {
                return Err(format!("cannot be started: {reason}").into());
            }
            Transport::Stdio { .. } => {
                self.start_stdio(&handler, &mut diag, &stage, &limits)
                    .await?
            }
            Transport::Http {
                url,
                headers,
                bearer_token_env,
            } => {
                let lifecycle = self.lifecycle();
                let handshake = async {
                    let first = self
                        .dial(
                            &handler,
                            url,
                            headers,
                            bearer_token_env,
                            &stage,
                            &limits,
                            lifecycle,
                        )
                        .await;
                    match first {
                        // A server that refused `server/discover` outside JSON-RPC (an HTTP
                        // 400 for a request without a session): dial again, `initialize`.
                        Err(Failure::Failed(reason))
                            if lifecycle == Lifecycle::Discover
                                && *lock(&stage) == "initialize" =>
                        {
                            tracing::debug!(server = %self.spec.name, %reason, "server/discover failed; trying initialize");
                            *lock(&stage) = "initialize";
                            self.dial(
                                &handler,
                                url,
                                headers,
                                bearer_token_env,
                                &stage,
                                &limits,
                                Lifecycle::Initialize,
                            )
                            .await
                        }
                        other => other,
                    }
                };
                match tokio::time::timeout(timeout, handshake).await {
                    Ok(Ok(ok)) => (ok, None),
                    Ok(Err(Failure::Failed(e))) => {
                        return Err(format!("{e} (at {url})").into());
                    }
                    Ok(Err(needs)) => return Err(needs),
                    Err(_) => {
                        return Err(format!(
                            "did not finish `{}` within {} (startup_timeout_sec) at {url}",
                            lock(&stage),
                            secs(timeout)
                        )
                        .into());
                    }
                }
            }
        };
        let (service, tools, notes) = result;
        // Listed before the server counts as ready: a call that waited for it finds them.
        let prompts = self.list_prompts(service.peer()).await;
        let resources = self.list_resources(service.peer()).await;
        let live = Live::open_with(&handler, service.peer(), diag);
        listen_for_changes(&self.spec.name, service.peer(), &handler, &live.closed);
        Ok(Connected {
            service,
            guard,
            list_changed: Arc::clone(&handler.list_changed),
            live,
            tools,
            prompts,
            resources,
            notes,
        })
    }

    /// How the server is opened: `server/discover` first, or `initialize`.
    fn lifecycle(&self) -> Lifecycle {
        match self.spec.opening {
            crate::config::Opening::Discover => Lifecycle::Discover,
            crate::config::Opening::Initialize => Lifecycle::Initialize,
        }
    }

    /// Dials a Streamable HTTP server (with its OAuth tokens, when it has a login) and
    /// runs the handshake.
    #[allow(clippy::too_many_arguments)]
    async fn dial(
        &self,
        handler: &Handler,
        url: &str,
        headers: &std::collections::BTreeMap<String, String>,
        bearer_token_env: &Option<String>,
        stage: &Mutex<&'static str>,
        limits: &GatewayLimits,
        lifecycle: Lifecycle,
    ) -> Result<Handshaken, Failure> {
        let shaken = match self
            .oauth_client(url, headers, bearer_token_env.is_some())
            .await?
        {
            Some(client) => {
                let transport = http_transport_with(client, url, headers, None)?;
                self.handshake(handler, transport, stage, limits, lifecycle)
                    .await
            }
            None => {
                let transport = http_transport(url, headers, bearer_token_env.as_deref())?;
                self.handshake(handler, transport, stage, limits, lifecycle)
                    .await
            }
        };
        // The scopes a challenge asks for, for the next `toolgate mcp login` (a caller's
        // own connection, `per_user`, passes its challenge to that caller's login instead).
        if let (
            Err(Failure::NeedsLogin(NeedsLogin {
                challenge: Some(challenge),
                ..
            })),
            Some(store),
        ) = (&shaken, self.token_store())
        {
            crate::auth::remember_challenge(&store, url, challenge);
        }
        shaken
    }

    /// `initialize`, then the whole tool list; `stage` says which is running.
    async fn handshake<T, E, A>(
        &self,
        handler: &Handler,
        transport: T,
        stage: &Mutex<&'static str>,
        limits: &GatewayLimits,
        lifecycle: Lifecycle,
    ) -> Result<Handshaken, Failure>
    where
        T: rmcp::transport::IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let transport = crate::erased::Erased::new(transport.into_transport());
        self.handshake_erased(handler, transport, stage, limits, lifecycle)
            .await
    }

    /// [`Mount::handshake`], once for every kind of transport.
    async fn handshake_erased(
        &self,
        handler: &Handler,
        transport: crate::erased::Erased,
        stage: &Mutex<&'static str>,
        limits: &GatewayLimits,
        lifecycle: Lifecycle,
    ) -> Result<Handshaken, Failure> {
        // Progress and log messages are numbered as they arrive, so a call's result waits
        // for those sent before it.
        let transport = crate::ordered::Ordered::new(
            transport,
            Arc::clone(&handler.arrivals),
            Arc::clone(&handler.callers),
        );
        let service = crate::lifecycle::negotiate(handler.clone(), transport, lifecycle)
            .await
            .map_err(|e| match e.auth_challenge() {
                Some(challenge) => Failure::NeedsLogin(NeedsLogin {
                    reason: "the server requires a login".to_owned(),
                    challenge: Some(challenge.to_owned()),
                }),
                None => Failure::Failed(format!(
                    "`initialize` failed: {}",
                    call::tidy(&crate::auth::describe(&e))
                )),
            })?;
        *lock(stage) = "tools/list";
        let (tools, notes) = list_all(service.peer(), &self.spec, limits).await?;
        Ok((service, tools, notes))
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

    /// Owns a ready connection: refetches on `list_changed`, notices the end, cleans up.
    async fn monitor(
        self: Arc<Self>,
        service: RunningService<RoleClient, Handler>,
        guard: Option<ChildGuard>,
        live: Arc<Live>,
        list_changed: Arc<Notify>,
    ) {
        let mut cancel = Some(service.cancellation_token());
        let waiting = service.waiting();
        tokio::pin!(waiting);
        let mut stopping = false;
        loop {
            tokio::select! {
                _ = &mut waiting => break,
                () = live.prompts_changed.notified() => self.refresh_prompts(&live).await,
                () = live.resources_changed.notified() => self.refresh_resources(&live).await,
                () = self.shutdown.cancelled(), if !stopping => {
                    stopping = true;
                    if let Some(token) = cancel.take() {
                        token.cancel();
                    }
                    // Closing the transport closes the child's stdin; do not wait forever
                    // on a transport that is slow to close.
                    let _ = tokio::time::timeout(Duration::from_secs(3), &mut waiting).await;
                    break;
                }
                () = live.abandon.cancelled() => {
                    if let Some(token) = cancel.take() {
                        token.cancel();
                    }
                    let _ = tokio::time::timeout(Duration::from_secs(3), &mut waiting).await;
                    break;
                }
                () = list_changed.notified() => self.refresh(&live).await,
            }
        }
        let exit = match guard {
            Some(guard) => Some(guard.close().await),
            None => None,
        };
        let broken = lock(&live.broken).clone();
        let reason = match (stopping, exit, broken) {
            (true, _, _) => "stopped: toolgate is shutting down".to_owned(),
            (false, Some(how), _) => format!("exited ({how}){}", live.diag.describe()),
            (false, None, Some(why)) => why,
            (false, None, None) => "the connection ended".to_owned(),
        };
        *lock(&live.end) = Some(reason.clone());
        live.closed.cancel();
        let current = {
            let mut st = self.state();
            let current = st.live.as_ref().is_some_and(|l| Arc::ptr_eq(l, &live));
            if current {
                st.live = None;
                if live.opened.elapsed() >= STABLE_AFTER {
                    st.failures = 0;
                }
                st.failures += 1;
            }
            current.then_some(st.failures)
        };
        let refused = lock(&live.refused).take();
        if let (Some(_), Some(needs), false) = (current, refused, stopping) {
            self.needs_login(needs);
        } else if let Some(failures) = current {
            let phase = if stopping {
                Phase::Failed {
                    reason,
                    retry_at: None,
                }
            } else {
                tracing::warn!(server = %self.spec.name, %reason, "MCP server stopped; it is restarted on its next call");
                Phase::Failed {
                    reason: format!("{reason}; it is restarted on the next call"),
                    retry_at: Some(Instant::now() + backoff(failures)),
                }
            };
            self.set_phase(phase);
        }
    }

    /// Refetches the tool list after `list_changed` and republishes it if it changed.
    async fn refresh(&self, live: &Live) {
        let limits = self.limits();
        let listed = tokio::time::timeout(
            self.spec.startup_timeout,
            list_all(&live.peer, &self.spec, &limits),
        )
        .await;
        match listed {
            Ok(Ok((tools, notes))) => {
                let changed = **lock(&self.listed) != tools;
                self.state().notes = notes;
                if changed {
                    tracing::info!(server = %self.spec.name, tools = tools.len(), "MCP server's tools changed");
                    self.save_catalog(&tools, !self.resources().is_empty());
                    *lock(&self.listed) = Arc::new(tools);
                    if let Some(host) = self.host.upgrade() {
                        host.tools_changed();
                    }
                }
            }
            Ok(Err(e)) => {
                tracing::warn!(server = %self.spec.name, %e, "refetching tools failed; keeping the old list")
            }
            Err(_) => {
                tracing::warn!(server = %self.spec.name, "refetching tools timed out; keeping the old list")
            }
        }
    }
}

/// 0 s for the first restart, then 1 s, 2 s, 4 s, … up to [`MAX_BACKOFF`].
fn backoff(failures: u32) -> Duration {
    match failures {
        0 | 1 => Duration::ZERO,
        n => Duration::from_secs(1u64 << (n - 2).min(6)).min(MAX_BACKOFF),
    }
}

/// `2 s`, `1.5 s`.
pub(crate) fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if (s - s.round()).abs() < 0.05 {
        format!("{} s", s.round() as u64)
    } else {
        format!("{s:.1} s")
    }
}

/// A 2026-07-28 server announces changes of its lists only on a `subscriptions/listen`
/// stream: one is kept open while the connection lives, and its announcements wake the same
/// refetches as a 2025 server's notifications do. Nothing for a 2025 server or one that
/// announces no changes.
fn listen_for_changes(
    server: &str,
    peer: &Peer<RoleClient>,
    handler: &Handler,
    closed: &CancellationToken,
) {
    let Some(info) = peer.peer_info() else {
        return;
    };
    if info.protocol_version.has_initialize() {
        return;
    }
    let caps = &info.capabilities;
    let tools = caps
        .tools
        .as_ref()
        .is_some_and(|c| c.list_changed == Some(true));
    let prompts = caps
        .prompts
        .as_ref()
        .is_some_and(|c| c.list_changed == Some(true));
    let resources = caps
        .resources
        .as_ref()
        .is_some_and(|c| c.list_changed == Some(true));
    if !(tools || prompts || resources) {
        return;
    }
    let mut filter = rmcp::model::SubscriptionFilter::builder();
    if tools {
        filter = filter.tools_list_changed();
    }
    if prompts {
        filter = filter.prompts_list_changed();
    }
    if resources {
        filter = filter.resources_list_changed();
    }
    let filter = filter.build();
    let (peer, closed, server) = (peer.clone(), closed.clone(), server.to_owned());
    let (tools, prompts, resources) = (
        Arc::clone(&handler.list_changed),
        Arc::clone(&handler.prompts_changed),
        Arc::clone(&handler.resources_changed),
    );
    tokio::spawn(async move {
        let mut subscription = tokio::select! {
            () = closed.cancelled() => return,
            opened = peer.listen(filter) => match opened {
                Ok(subscription) => subscription,
                Err(e) => {
                    tracing::debug!(%server, %e, "subscriptions/listen failed; list changes are not heard");
                    return;
                }
            },
        };
        loop {
            let next = tokio::select! {
                () = closed.cancelled() => break,
                next = subscription.next() => next,
            };
            use rmcp::model::ServerNotification as N;
            match next {
                Ok(Some(N::ToolListChangedNotification(_))) => tools.notify_one(),
                Ok(Some(N::PromptListChangedNotification(_))) => prompts.notify_one(),
                Ok(Some(N::ResourceListChangedNotification(_))) => resources.notify_one(),
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
    });
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
