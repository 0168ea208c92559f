//! The MCP handler over toolgate's dispatcher, plus the optional prompt and resource
//! sources ([`crate::extras`]) and the session's client handle ([`McpClient`]).

use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestMethod, CompleteRequestParams,
    CompleteResult, GetPromptRequestParams, GetPromptResponse, GetPromptResult, Implementation,
    InitializeRequestParams, InitializeResult, ListPromptsRequestMethod, ListPromptsResult,
    ListResourceTemplatesRequestMethod, ListResourceTemplatesResult, ListResourcesRequestMethod,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, PromptsCapability,
    ReadResourceRequestParams, ReadResourceResponse, ResourceContents, ResourcesCapability,
    ServerCapabilities, ServerConfig, SubscribeRequestMethod, SubscribeRequestParams,
    SubscriptionFilter, Tool, UnsubscribeRequestMethod, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use toolgate_core::{
    CallContext, ClientProfiles, Disclosure, Dispatcher, RenderOptions, Session, Ticket,
};

use crate::client::McpClient;
use crate::extras::{self, PromptSource, ResourceSource, SourceError};
use crate::metrics::Metrics;
use crate::notify::{ListKind, ListenSources, Subscriptions, listen, watch_list, watch_updates};
use crate::rounds::{Rounds, Sealer};
use requests::ToolDone;
use session::{LiveSession, open_session};
use spans::traced;
/// Text added to the instructions each time a client asks for them.
pub type InstructionSource = Arc<dyn Fn() -> String + Send + Sync>;

/// Told when a client says its roots changed (`notifications/roots/list_changed`).
pub type RootsChanged = Arc<dyn Fn() + Send + Sync>;

struct Shared {
    dispatcher: Arc<Dispatcher>,
    render: RenderOptions,
    instructions: String,
    /// Instructions known only when a client arrives (mounted servers'), after the rest.
    more_instructions: Option<InstructionSource>,
    /// Who hears of a client's new roots (the gateway, which tells its servers).
    roots_changed: Option<RootsChanged>,
    /// The client profiles a session's profile is chosen from at `initialize`.
    profiles: ClientProfiles,
    /// The rendered tool list of the last generation (rendering is byte-deterministic, so
    /// one copy serves every session).
    tools: Mutex<Option<(u64, Arc<Vec<Tool>>)>>,
    /// Work waiting for a 2026-07-28 client's input, by kind of request.
    rounds: RoundTables,
    /// Where calls and sessions are counted (`serve --http` with `[server] metrics`).
    metrics: Option<Arc<Metrics>>,
}

/// The requests that may ask a 2026-07-28 client for input, each with its parked work.
struct RoundTables {
    tools: Rounds<ToolDone>,
    prompts: Rounds<Result<GetPromptResult, SourceError>>,
    resources: Rounds<Result<Vec<ResourceContents>, SourceError>>,
}

impl RoundTables {
    fn new() -> Self {
        let sealer = Arc::new(Sealer::new());
        Self {
            tools: Rounds::new(Arc::clone(&sealer)),
            prompts: Rounds::new(Arc::clone(&sealer)),
            resources: Rounds::new(sealer),
        }
    }
}

/// A `tools/call`'s place in its session's line, taken by the transport as the request was
/// read (rmcp runs each request on a task of its own, and tasks start in no set order).
#[derive(Clone)]
struct Arrival(Arc<Mutex<Option<Ticket>>>);

/// The MCP server handler: one per connection (session), sharing the dispatcher.
#[derive(Clone)]
pub struct ToolgateServer {
    shared: Arc<Shared>,
    prompts: Option<Arc<dyn PromptSource>>,
    resources: Option<Arc<dyn ResourceSource>>,
    /// Whether the resource source reports updates, so `resources/subscribe` means something.
    resource_updates: bool,
    /// Progressive disclosure: which tools `tools/list` shows.
    disclosure: Option<Arc<Disclosure>>,
    session: Arc<Session>,
    /// The session's client, also its [`Session::client`] link.
    client: Arc<McpClient>,
    /// The resources this session's client subscribed to.
    subscriptions: Arc<Subscriptions>,
    /// Counts the session as live while any handler of it exists.
    _live: Option<Arc<LiveSession>>,
}

impl std::fmt::Debug for ToolgateServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolgateServer")
            .field("prompts", &self.prompts.is_some())
            .field("resources", &self.resources.is_some())
            .finish_non_exhaustive()
    }
}

impl ToolgateServer {
    /// A handler over `dispatcher`; `instructions` are sent to clients at initialisation.
    pub fn new(dispatcher: Arc<Dispatcher>, render: RenderOptions, instructions: String) -> Self {
        let (session, client) = open_session(None, None);
        Self {
            shared: Arc::new(Shared {
                dispatcher,
                render,
                instructions,
                more_instructions: None,
                roots_changed: None,
                profiles: ClientProfiles::default(),
                tools: Mutex::new(None),
                rounds: RoundTables::new(),
                metrics: None,
            }),
            prompts: None,
            resources: None,
            resource_updates: false,
            disclosure: None,
            session,
            client,
            subscriptions: Arc::default(),
            _live: None,
        }
    }

    /// Lists tools through `disclosure`: direct tools, `search_tool` and `run_tool` when
    /// disclosure is on, plus the session's unmasked tools in backfill mode.
    pub fn with_disclosure(mut self, disclosure: Arc<Disclosure>) -> Self {
        self.disclosure = Some(disclosure);
        self
    }

    /// Chooses each session's client profile from `profiles` (built-ins plus
    /// `[clients.NAME]`) instead of the built-ins alone. Call before sessions start.
    pub fn with_profiles(mut self, profiles: ClientProfiles) -> Self {
        self.edit_shared(|shared| shared.profiles = profiles);
        self
    }

    /// Appends what `source` returns (when not empty) to the instructions each client gets
    /// at `initialize` — the mounted servers' own, known as they start.
    pub fn with_more_instructions(mut self, source: InstructionSource) -> Self {
        self.edit_shared(|shared| shared.more_instructions = Some(source));
        self
    }

    /// Counts tool calls and sessions in `metrics` (served at `/metrics` over HTTP).
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.edit_shared(|shared| shared.metrics = Some(metrics));
        self
    }

    /// Calls `hook` whenever a client says its roots changed.
    pub fn with_roots_changed(mut self, hook: RootsChanged) -> Self {
        self.edit_shared(|shared| shared.roots_changed = Some(hook));
        self
    }

    fn edit_shared(&mut self, edit: impl FnOnce(&mut Shared)) {
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            edit(shared);
            return;
        }
        // Already shared with a session: give this handler its own copy.
        let mut shared = Shared {
            dispatcher: Arc::clone(&self.shared.dispatcher),
            render: self.shared.render.clone(),
            instructions: self.shared.instructions.clone(),
            more_instructions: self.shared.more_instructions.clone(),
            roots_changed: self.shared.roots_changed.clone(),
            profiles: self.shared.profiles.clone(),
            tools: Mutex::new(None),
            rounds: RoundTables::new(),
            metrics: self.shared.metrics.clone(),
        };
        edit(&mut shared);
        self.shared = Arc::new(shared);
    }

    /// Serves `prompts` too (`prompts/list`, `prompts/get`, completion of their arguments).
    pub fn with_prompts(mut self, prompts: Arc<dyn PromptSource>) -> Self {
        self.prompts = Some(prompts);
        self
    }

    /// Serves `resources` too (`resources/list`, `resources/templates/list`,
    /// `resources/read`, and `resources/subscribe` when the source reports updates).
    pub fn with_resources(mut self, resources: Arc<dyn ResourceSource>) -> Self {
        self.resource_updates = resources.updates().is_some();
        self.resources = Some(resources);
        self
    }
}

impl ServerHandler for ToolgateServer {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        // Logging is always on: tools reach the client through `McpClient::log`.
        capabilities.logging = Some(Default::default());
        if self.prompts.is_some() || self.resources.is_some() {
            capabilities.completions = Some(Default::default());
        }
        if let Some(prompts) = &self.prompts {
            let mut cap = PromptsCapability::default();
            cap.list_changed = prompts.changes().map(|_| true);
            capabilities.prompts = Some(cap);
        }
        if let Some(resources) = &self.resources {
            let mut cap = ResourcesCapability::default();
            cap.list_changed = resources.changes().map(|_| true);
            cap.subscribe = self.resource_updates.then_some(true);
            capabilities.resources = Some(cap);
        }
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("toolgate", env!("CARGO_PKG_VERSION")))
            .with_instructions(self.instructions())
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        self.adopt_client(Some(&request.client_info));
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        // Never waits for servers still starting: a client may not wait either (Codex sends
        // its first model request without the list). Their tools are reached through
        // search_tool and run_tool, which wait for them (see `Registry::settled`), and a
        // `list_changed` follows when they are ready.
        let _span = self.request_span("tools/list", None, &context).entered();
        self.adopt_requester(&context);
        Ok(ListToolsResult::with_all_items(
            self.tools().as_ref().clone(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let span = self.request_span("tools/call", Some(&request.name), &context);
        traced(span, async {
            self.adopt_requester(&context);
            self.same_caller(&context)?;
            self.call(request, context).await
        })
        .await
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools().iter().find(|t| t.name == name).cloned()
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(ListPromptsResult::with_all_items(
            self.prompt_source::<ListPromptsRequestMethod>()?
                .prompts_for(self.session.identity()),
        ))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let span = self.request_span("prompts/get", Some(&request.name), &context);
        traced(span, self.prompt(request, context)).await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(ListResourcesResult::with_all_items(
            self.resource_source::<ListResourcesRequestMethod>()?
                .resources_for(self.session.identity()),
        ))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(ListResourceTemplatesResult::with_all_items(
            self.resource_source::<ListResourceTemplatesRequestMethod>()?
                .templates_for(self.session.identity()),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let span = self.request_span("resources/read", Some(&request.uri), &context);
        traced(span, self.read(request, context)).await
    }

    #[allow(deprecated)] // legacy (pre-2026) subscriptions, which today's clients use
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let source = self.subscribable::<SubscribeRequestMethod>()?;
        // A listed resource, or a template instance that reads (which also checks it).
        let listed = source.resources().iter().any(|r| r.uri == request.uri);
        if !listed {
            let ctx = CallContext::new(Arc::clone(&self.session));
            source.read(&request.uri, &ctx).await?;
        }
        if self.subscriptions.contains(&request.uri) {
            return Ok(());
        }
        let lease = source.follow(&request.uri).await?;
        self.subscriptions.map().insert(request.uri, lease);
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.subscribable::<UnsubscribeRequestMethod>()?;
        let lease = self.subscriptions.map().remove(&request.uri);
        drop(lease);
        Ok(())
    }

    #[allow(deprecated)] // logging is deprecated by SEP-2577 but still used by 2025 clients
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let client = self.client();
        client.attach(&context.peer);
        client.set_min_level(request.level.into());
        Ok(())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        if self.prompts.is_none() && self.resources.is_none() {
            return Err(McpError::method_not_found::<CompleteRequestMethod>());
        }
        extras::complete(self.prompts.as_deref(), self.resources.as_deref(), &request).await
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut filter = SubscriptionFilter::builder().tools_list_changed();
        if self.prompts.is_some() {
            filter = filter.prompts_list_changed();
        }
        if let Some(resources) = &self.resources {
            filter = filter.resources_list_changed();
            if let (true, Some(uris)) = (self.resource_updates, &requested.resource_subscriptions) {
                // Only URIs the source has: the client learns which are followed.
                let known = uris.iter().filter(|uri| resources.offers(uri)).cloned();
                filter = filter.resource_subscriptions(known);
            }
        }
        Some(filter.build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        self.adopt_requester(context.request_context());
        self.client().attach(&context.request_context().peer);
        let sources = ListenSources {
            tools: self.tool_changes(),
            prompts: self.prompts.as_ref().and_then(|p| p.changes()),
            resources: self.resources.as_ref().and_then(|r| r.changes()),
            updates: self.resources.as_ref().and_then(|r| r.updates()),
        };
        // The URIs the stream follows, for as long as it runs.
        let mut leases = Vec::new();
        if let (true, Some(source), Some(uris)) = (
            self.resource_updates,
            self.resources.as_deref(),
            context.accepted().resource_subscriptions.as_ref(),
        ) {
            for uri in uris {
                match source.follow(uri).await {
                    Ok(lease) => leases.push(lease),
                    Err(e) => tracing::debug!(%uri, %e, "a listened-to resource is not followed"),
                }
            }
        }
        listen(context, sources).await;
        drop(leases);
        Ok(())
    }

    async fn on_roots_list_changed(&self, _context: NotificationContext<RoleServer>) {
        if let Some(hook) = &self.shared.roots_changed {
            hook();
        }
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let peer = context.peer;
        self.client().attach(&peer);
        watch_list(peer.clone(), self.tool_changes(), ListKind::Tools);
        if let Some(changes) = self.prompts.as_ref().and_then(|p| p.changes()) {
            watch_list(peer.clone(), changes, ListKind::Prompts);
        }
        if let Some(resources) = &self.resources {
            if let Some(changes) = resources.changes() {
                watch_list(peer.clone(), changes, ListKind::Resources);
            }
            if let Some(updates) = resources.updates() {
                watch_updates(peer, updates, Arc::clone(&self.subscriptions));
            }
        }
    }
}

mod lists;
mod requests;
mod session;
mod spans;

#[cfg(test)]
mod profile_tests;
#[cfg(test)]
mod rounds_tests;
#[cfg(test)]
mod tests;
