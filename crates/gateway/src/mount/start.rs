//! Starting a mounted server: one attempt at a time, with backoff after a crash; spawning
//! or dialling it, the handshake (`server/discover` or `initialize`) and its first lists,
//! all within its startup timeout.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::FutureExt;
use futures::future::BoxFuture;
use rmcp::RoleClient;
use rmcp::service::RunningService;
use tokio::sync::Notify;

use super::monitor::listen_for_changes;
use super::{Handshaken, Live, Mount, Phase, backoff, resources, secs, tidy};
use crate::config::Transport;
use crate::connect::{ChildGuard, Diagnostics, http_transport, http_transport_with};
use crate::failure::{Failure, NeedsLogin};
use crate::handler::Handler;
use crate::lifecycle::Lifecycle;
use crate::limits::GatewayLimits;
use crate::list::list_all;
use crate::sync::lock;

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

impl Mount {
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
    pub(super) fn lifecycle(&self) -> Lifecycle {
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
            toolgate_oauth::remember_challenge(&store, url, challenge);
        }
        shaken
    }

    /// `initialize`, then the whole tool list; `stage` says which is running.
    pub(super) async fn handshake<T, E, A>(
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
                    tidy(&crate::error::with_causes(&e))
                )),
            })?;
        *lock(stage) = "tools/list";
        let (tools, notes) = list_all(service.peer(), &self.spec, limits).await?;
        Ok((service, tools, notes))
    }
}
