//! The gateway's side of one connection: what it tells a server about itself, and what it
//! does with the server's notifications — `tools/list_changed` wakes a refetch, progress
//! goes to the call that asked for it, log messages go to toolgate's log, prompt and
//! resource list changes wake a refetch, resource updates go to the gateway's update stream
//! — and requests: elicitation and sampling go to the client of the call that caused them
//! (`relay.rs`), `roots/list` gets that client's roots or the project's folders (`roots.rs`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

#[allow(deprecated)]
use rmcp::model::LoggingMessageNotificationParam;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationCapability,
    FormElicitationCapability, Implementation, ProgressNotificationParam, ProgressToken,
    ProtocolVersion, ResourceUpdatedNotificationParam, UrlElicitationCapability,
};
// Sampling and roots are deprecated by SEP-2577 but 2025 servers still use them.
#[allow(deprecated)]
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ListRootsResult, RootsCapabilities,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, ErrorData as McpError, RoleClient};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::{Notify, broadcast};
use toolgate_core::{ClientAsk, ClientLink, Policy, Progress, ProgressSink};

use crate::limits::GatewayLimits;
use crate::relay::{Asker, Callers, relay};
use crate::roots::{ClientRoots, roots_for};

/// Progress sinks of the calls in flight, by the progress token of their request.
#[derive(Default)]
pub(crate) struct ProgressRoutes {
    sinks: Mutex<HashMap<ProgressToken, ProgressSink>>,
}

impl ProgressRoutes {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ProgressToken, ProgressSink>> {
        self.sinks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends progress for `token` to `sink` until the returned guard is dropped.
    pub(crate) fn route(self: &Arc<Self>, token: ProgressToken, sink: ProgressSink) -> RouteGuard {
        self.lock().insert(token.clone(), sink);
        RouteGuard {
            routes: Arc::clone(self),
            token,
        }
    }

    fn deliver(&self, params: ProgressNotificationParam) {
        let sink = self.lock().get(&params.progress_token).cloned();
        if let Some(sink) = sink {
            sink(Progress {
                progress: params.progress,
                total: params.total,
                message: params.message,
            });
        }
    }
}

/// Unroutes a call's progress when the call ends.
pub(crate) struct RouteGuard {
    routes: Arc<ProgressRoutes>,
    token: ProgressToken,
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        self.routes.lock().remove(&self.token);
    }
}

/// The rmcp client handler of one connection.
#[derive(Clone)]
pub(crate) struct Handler {
    pub(crate) server: String,
    pub(crate) list_changed: Arc<Notify>,
    /// Notified on `prompts/list_changed`.
    pub(crate) prompts_changed: Arc<Notify>,
    /// Notified on `resources/list_changed`.
    pub(crate) resources_changed: Arc<Notify>,
    pub(crate) progress: Arc<ProgressRoutes>,
    pub(crate) callers: Arc<Callers>,
    /// The progress and log messages in flight, so a call's result waits for them.
    pub(crate) arrivals: Arc<crate::ordered::Arrivals>,
    /// What `roots/list` answers outside a call from a client with roots: the project's
    /// folders.
    roots: Arc<Vec<PathBuf>>,
    /// What the server gets of the client's roots during a call.
    client_roots: ClientRoots,
    /// Where the server's `notifications/resources/updated` go.
    updates: Option<broadcast::Sender<String>>,
    /// The rules the server's requests to the client obey.
    policy: Arc<Policy>,
}

impl Handler {
    pub(crate) fn new(
        server: &str,
        limits: &GatewayLimits,
        updates: Option<broadcast::Sender<String>>,
    ) -> Self {
        Self {
            server: server.to_owned(),
            list_changed: Arc::new(Notify::new()),
            prompts_changed: Arc::new(Notify::new()),
            resources_changed: Arc::new(Notify::new()),
            progress: Arc::new(ProgressRoutes::default()),
            callers: Arc::new(Callers::default()),
            arrivals: Arc::default(),
            roots: Arc::new(limits.roots.clone()),
            client_roots: limits.client_roots,
            updates,
            policy: Arc::clone(&limits.policy),
        }
    }

    /// Relays a request of the server to the client of the call that caused it; `extensions`
    /// (of the request's context) say which call that was, where the transport knows.
    async fn relay<P: Serialize, R: DeserializeOwned>(
        &self,
        ask: ClientAsk,
        params: P,
        extensions: &rmcp::model::Extensions,
    ) -> Result<R, McpError> {
        let params = serde_json::to_value(params)
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        let asker = Asker {
            name: &self.server,
            policy: &self.policy,
        };
        let answer = relay(self.callers.asking(extensions), &asker, ask, params)
            .await
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        serde_json::from_value(answer).map_err(|e| {
            McpError::internal_error(format!("the client's answer is not valid: {e}"), None)
        })
    }
}

/// What toolgate offers a mounted server as its client: elicitation and sampling, relayed
/// to the client of the call that causes them; roots (the project's folders, or the
/// client's) when there are some.
pub(crate) fn offered(roots: bool) -> ClientCapabilities {
    #[allow(deprecated)] // sampling, roots: deprecated by SEP-2577, used by 2025 servers
    let mut capabilities = ClientCapabilities::builder()
        .enable_sampling()
        .enable_elicitation_with(
            ElicitationCapability::new()
                .with_form(FormElicitationCapability::new())
                .with_url(UrlElicitationCapability::new()),
        )
        .build();
    if roots {
        // The client's roots may change under a server: toolgate says so.
        #[allow(deprecated)]
        let mut roots = RootsCapabilities::default();
        roots.list_changed = Some(true);
        #[allow(deprecated)]
        {
            capabilities.roots = Some(roots);
        }
    }
    capabilities
}

/// [`offered`], narrowed to what one call's client can answer and the rules let the
/// server ask (`mcp.elicit`, `mcp.sample`): what a 2026-07-28 server is told in the
/// call's `_meta`, so it sees exactly the session's client (a 2025 server learns the
/// capabilities once, at `initialize`, for every session alike).
pub(crate) fn offered_to_call(
    roots: bool,
    caller: &dyn ClientLink,
    asker: &crate::relay::Asker<'_>,
) -> ClientCapabilities {
    let identity = caller.caller();
    let can = |ask: ClientAsk| {
        caller.can_ask(ask).is_ok() && asker.denied(ask, identity.as_ref()).is_none()
    };
    let mut capabilities = offered(roots);
    let form = can(ClientAsk::FormElicitation);
    let url = can(ClientAsk::UrlElicitation);
    capabilities.elicitation = match (form, url) {
        (false, false) => None,
        (form, url) => {
            let mut elicitation = ElicitationCapability::new();
            if form {
                elicitation = elicitation.with_form(FormElicitationCapability::new());
            }
            if url {
                elicitation = elicitation.with_url(UrlElicitationCapability::new());
            }
            Some(elicitation)
        }
    };
    if !can(ClientAsk::Sampling) {
        #[allow(deprecated)]
        {
            capabilities.sampling = None;
        }
    }
    capabilities
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        // `initialize` asks for the newest revision that has it (2025-11-25): 2026-07-28 is
        // reached through `server/discover`, and a server that echoes what it is asked for
        // must not end up in a 2026-07-28 session opened the 2025 way.
        ClientConfig::new(
            offered(!self.roots.is_empty()),
            Implementation::new("toolgate", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        let ask = match &request {
            ElicitRequestParams::UrlElicitationParams { .. } => ClientAsk::UrlElicitation,
            _ => ClientAsk::FormElicitation,
        };
        self.relay(ask, request, &context.extensions).await
    }

    #[allow(deprecated)]
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, McpError> {
        self.relay(ClientAsk::Sampling, params, &context.extensions)
            .await
    }

    #[allow(deprecated)]
    async fn list_roots(
        &self,
        context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, McpError> {
        // The client of the call that asks, if it can be told; else the configured roots.
        let link = self.callers.asking(&context.extensions).ok();
        let roots = roots_for(&self.server, link, &self.roots, self.client_roots).await;
        Ok(ListRootsResult::new(roots))
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        tracing::debug!(server = %self.server, uri = %params.uri, "resources/updated");
        if let Some(updates) = &self.updates {
            // Nobody listening is not an error.
            let _ = updates.send(params.uri);
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.server, "tools/list_changed");
        // A stored permit: a change announced during a refetch causes one more refetch.
        self.list_changed.notify_one();
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.server, "prompts/list_changed");
        self.prompts_changed.notify_one();
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.server, "resources/list_changed");
        self.resources_changed.notify_one();
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        self.progress.deliver(params);
        self.arrivals.handled(&context.extensions);
    }

    // Logging is deprecated by SEP-2577 but 2025 servers still send it.
    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        self.log(params).await;
        self.arrivals.handled(&context.extensions);
    }
}

impl Handler {
    /// Passes a server's log message on to the client of the call in flight.
    #[allow(deprecated)] // logging: deprecated by SEP-2577, 2025 servers still send it
    async fn log(&self, params: LoggingMessageNotificationParam) {
        tracing::debug!(server = %self.server, level = ?params.level, data = %params.data, "server log");
        // To the client of the call in flight, which filters by the level it set.
        if let Ok(link) = self.callers.only() {
            let level = serde_json::to_value(params.level)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_else(|| "info".to_owned());
            let logger = params.logger.as_deref().unwrap_or(&self.server);
            link.log(&level, Some(logger), params.data).await;
        }
    }
}
