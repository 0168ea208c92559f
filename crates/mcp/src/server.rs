//! The MCP handler over toolgate's dispatcher, plus the optional prompt and resource
//! sources ([`crate::extras`]) and the session's client handle ([`McpClient`]).

use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestMethod, CompleteRequestParams,
    CompleteResult, ConstString, GetPromptRequestMethod, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, Implementation, InitializeRequestParams, InitializeResult, InputResponses,
    ListPromptsRequestMethod, ListPromptsResult, ListResourceTemplatesRequestMethod,
    ListResourceTemplatesResult, ListResourcesRequestMethod, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, PromptsCapability, ReadResourceRequestMethod,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ResourceContents,
    ResourcesCapability, ServerCapabilities, ServerConfig, SubscribeRequestMethod,
    SubscribeRequestParams, SubscriptionFilter, Tool, UnsubscribeRequestMethod,
    UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::Value;
use toolgate_core::disclosure::Exposed;
use toolgate_core::trace;
use toolgate_core::{
    Approval, CallContext, ClientLink, ClientProfile, ClientProfiles, Disclosure, Dispatcher,
    Identity, Progress, RawArgs, RenderOptions, Session, SessionInit, Snapshot, Ticket,
};
use tracing::Instrument;

use crate::client::McpClient;
use crate::convert::{call_result, has_output_schema, mcp_tools, without_output_schemas};
use crate::disclosure::{session_tools, tool_changes};
use crate::extras::{self, PromptSource, ResourceSource, SourceError};
use crate::metrics::Metrics;
use crate::notify::{
    ListKind, ListenSources, ProgressQueue, Subscriptions, listen, watch_list, watch_updates,
};
use crate::rounds::{self, RoundLink, Rounds, Sealer, Step};

/// How often a long call reports that it is still running, when the client asked for
/// progress.
const HEARTBEAT: Duration = Duration::from_secs(2);

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

/// A session counted in [`Metrics`]: open from `new_session` until its last handler drops.
struct LiveSession(Arc<Metrics>);

impl LiveSession {
    fn open(metrics: &Arc<Metrics>) -> Arc<Self> {
        metrics.session_opened();
        Arc::new(Self(Arc::clone(metrics)))
    }
}

impl Drop for LiveSession {
    fn drop(&mut self) {
        self.0.session_closed();
    }
}

impl std::fmt::Debug for ToolgateServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolgateServer")
            .field("prompts", &self.prompts.is_some())
            .field("resources", &self.resources.is_some())
            .finish_non_exhaustive()
    }
}

/// An MCP connection's session: nobody approves `ask` rules (an MCP client has no channel
/// toolgate would trust for that, so `ask` refuses and says which rule to change), the
/// profile is chosen when the client names itself, the link is the connection's client, and
/// the caller is the one the transport authenticated (none on stdio).
fn open_session(
    identity: Option<Identity>,
    rate_key: Option<String>,
) -> (Arc<Session>, Arc<McpClient>) {
    let client = Arc::new(McpClient::for_caller(identity.clone()));
    let session = Session::new(SessionInit {
        approval: Approval::Nobody,
        profile: None,
        client: Some(Arc::clone(&client) as Arc<dyn toolgate_core::ClientLink>),
        identity,
        rate_key,
    });
    (session, client)
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

    /// toolgate's instructions, then the mounted servers' (if any).
    fn instructions(&self) -> String {
        let more = self
            .shared
            .more_instructions
            .as_ref()
            .map(|source| source())
            .unwrap_or_default();
        if more.is_empty() {
            return self.shared.instructions.clone();
        }
        format!("{}\n\n{more}", self.shared.instructions)
    }

    /// Chooses the session's profile from `client` (its name), unless one is chosen already.
    fn adopt_client(&self, client: Option<&Implementation>) {
        if let Some(client) = client {
            // The audit log names the client as it named itself.
            self.session.name_client(&client.name);
        }
        if self.session.profile().is_some() {
            return;
        }
        let Some(client) = client else { return };
        let profile = self.shared.profiles.choose(&client.name);
        tracing::info!(
            client = %client.name,
            version = %client.version,
            profile = %profile.name,
            max_result_chars = profile.max_result_chars,
            max_error_chars = profile.max_error_chars,
            text_only = profile.shows_structured,
            "client profile chosen"
        );
        self.session.adopt_profile(profile);
    }

    /// Chooses the profile from a request's client: the 2026-07-28 protocol has no
    /// `initialize` and names the client in every request's `_meta` (Claude Code 2.1 speaks
    /// it), older ones named it at `initialize`.
    /// Refuses a call whose HTTP caller is not the session's (the door refuses it first;
    /// this keeps a session from running as someone else should a request slip past it).
    fn same_caller(&self, context: &RequestContext<RoleServer>) -> Result<(), McpError> {
        let caller = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<crate::http::door::Caller>());
        match caller {
            Some(crate::http::door::Caller(caller))
                if !crate::http::door::same_caller(caller.as_ref(), self.session.identity()) =>
            {
                Err(McpError::invalid_request(
                    "this session was opened by another caller: start a session of your own with your token",
                    None,
                ))
            }
            _ => Ok(()),
        }
    }

    fn adopt_requester(&self, context: &RequestContext<RoleServer>) {
        if self.session.profile().is_none() {
            self.adopt_client(context.client_info().as_ref());
        }
    }

    /// This session's client profile: chosen from `clientInfo` (at `initialize`, or from the
    /// first request's `_meta`), else the conservative one for unknown clients (then kept).
    pub fn profile(&self) -> Arc<ClientProfile> {
        if let Some(profile) = self.session.profile() {
            return profile;
        }
        self.session.adopt_profile(self.shared.profiles.choose(""));
        self.session
            .profile()
            .unwrap_or_else(|| Arc::new(ClientProfile::conservative()))
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

    /// A handler for a new connection: same tools, prompts and resources, a new session.
    pub fn new_session(&self) -> Self {
        self.new_session_as(None, None)
    }

    /// [`Self::new_session`] for a caller the transport authenticated (`serve --http` with
    /// OAuth): the session's [`Identity`], fixed for its life; `rate_key` names a caller
    /// without one for rate limits (see [`toolgate_core::SessionInit::rate_key`]).
    pub fn new_session_as(&self, identity: Option<Identity>, rate_key: Option<String>) -> Self {
        let (session, client) = open_session(identity, rate_key);
        Self {
            session,
            client,
            subscriptions: Arc::default(),
            _live: self.shared.metrics.as_ref().map(LiveSession::open),
            ..self.clone()
        }
    }

    /// This handler's session.
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// Ends the session: every call still running is cancelled (the transport closed), and
    /// its resource subscriptions are dropped.
    pub fn end_session(&self) {
        self.session.end();
        self.subscriptions.clear();
    }

    /// Gives a `tools/call` request its place in the session's line; a transport calls this
    /// for each message in the order it reads them, so pipelined calls run in arrival order.
    pub fn stamp_arrival(
        &self,
        mut message: rmcp::service::RxJsonRpcMessage<RoleServer>,
    ) -> rmcp::service::RxJsonRpcMessage<RoleServer> {
        if let rmcp::model::JsonRpcMessage::Request(request) = &mut message
            && let rmcp::model::ClientRequest::CallToolRequest(call) = &mut request.request
        {
            let ticket = self.session.order().ticket();
            call.extensions
                .insert(Arrival(Arc::new(Mutex::new(Some(ticket)))));
        }
        message
    }

    /// The MCP client of this handler's session.
    pub fn client(&self) -> Arc<McpClient> {
        Arc::clone(&self.client)
    }

    /// The current MCP tool list of this session: the shared part rendered once per registry
    /// generation, then the session's backfilled tools (disclosure in backfill mode).
    pub fn tools(&self) -> Arc<Vec<Tool>> {
        let snapshot = self.shared.dispatcher.snapshot();
        let exposed = self
            .disclosure
            .as_ref()
            .map(|d| session_tools(d, &snapshot, &self.session));
        let base = self.base_tools(&snapshot, exposed.as_ref());
        let tools = match exposed {
            Some(exposed) if !exposed.backfill.is_empty() => {
                let mut tools = (*base).clone();
                let backfill = exposed.backfill.iter().map(|t| t.as_ref());
                tools.extend(mcp_tools(backfill, &self.shared.render));
                Arc::new(tools)
            }
            _ => base,
        };
        let tools = self.for_caller(&snapshot, tools);
        if self.profile().shows_structured {
            Arc::new(without_output_schemas(&tools))
        } else {
            tools
        }
    }

    /// `tools` without those this session's caller is denied by a rule with a condition on
    /// the caller. The rendered list cached in [`Shared`] serves every session, so the
    /// per-caller cut is made on a copy, never cached.
    fn for_caller(&self, snapshot: &Snapshot, tools: Arc<Vec<Tool>>) -> Arc<Vec<Tool>> {
        let registry = self.shared.dispatcher.registry();
        if !registry.filters_by_caller() {
            return tools;
        }
        let caller = self.session.identity();
        let denied: std::collections::HashSet<&str> = snapshot
            .tools
            .iter()
            .filter(|(_, tool)| !registry.visible_to(tool.as_ref(), caller))
            .map(|(name, _)| name.as_str())
            .collect();
        if denied.is_empty() {
            return tools;
        }
        // search_tool's catalog names deferred tools too: this caller's leaves them out.
        let search = self
            .disclosure
            .as_ref()
            .and_then(|d| d.search_tool_without(snapshot, &denied))
            .and_then(|tool| {
                mcp_tools(std::iter::once(tool.as_ref()), &self.shared.render)
                    .into_iter()
                    .next()
            });
        Arc::new(
            tools
                .iter()
                .filter(|tool| !denied.contains(tool.name.as_ref()))
                .map(|tool| match &search {
                    Some(search) if tool.name == search.name => search.clone(),
                    _ => tool.clone(),
                })
                .collect(),
        )
    }

    fn base_tools(&self, snapshot: &Snapshot, exposed: Option<&Exposed>) -> Arc<Vec<Tool>> {
        let mut cache = self
            .shared
            .tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some((generation, tools)) = &*cache
            && *generation == snapshot.generation
            && !snapshot.incomplete
        {
            return Arc::clone(tools);
        }
        let tools = Arc::new(match exposed {
            Some(exposed) => {
                mcp_tools(exposed.base.iter().map(|t| t.as_ref()), &self.shared.render)
            }
            None => mcp_tools(
                snapshot.tools.values().map(|t| t.as_ref()),
                &self.shared.render,
            ),
        });
        if !snapshot.incomplete {
            *cache = Some((snapshot.generation, Arc::clone(&tools)));
        }
        tools
    }

    /// Wakes when this session's tool list may have changed.
    fn tool_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        tool_changes(
            self.shared.dispatcher.registry().subscribe(),
            self.disclosure.as_deref(),
            &self.session,
        )
    }

    /// The prompt source, or method-not-found for `M` when the server has none.
    fn prompt_source<M: ConstString>(&self) -> Result<&Arc<dyn PromptSource>, McpError> {
        self.prompts
            .as_ref()
            .ok_or_else(McpError::method_not_found::<M>)
    }

    /// The resource source, or method-not-found for `M` when the server has none.
    fn resource_source<M: ConstString>(&self) -> Result<&Arc<dyn ResourceSource>, McpError> {
        self.resources
            .as_ref()
            .ok_or_else(McpError::method_not_found::<M>)
    }

    /// The resource source if it reports updates, or method-not-found for `M`: without
    /// updates a subscription would never fire.
    fn subscribable<M: ConstString>(&self) -> Result<&dyn ResourceSource, McpError> {
        match self.resources.as_deref() {
            Some(source) if self.resource_updates => Ok(source),
            _ => Err(McpError::method_not_found::<M>()),
        }
    }

    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        let args = request.arguments.map_or(Value::Null, Value::Object);
        // The tool that runs decides the result's shape: `run_tool`'s target, not `run_tool`.
        let target = self.shared.dispatcher.target(&name, &args);
        let has_schema = target.as_ref().is_some_and(has_output_schema);
        // Metrics count the tool that ran, under its server (whatever its names' prefix).
        let ran = target.as_ref().map_or_else(Ran::unknown, |tool| Ran {
            tool: tool.spec().name.clone(),
            server: tool.server().unwrap_or(TOOLGATE).to_owned(),
        });
        let client = self.client();
        client.attach(&context.peer);
        client.saw_request(&context.meta);
        let bound = bound_to("tools/call", &name, &args, &self.session);
        let step = self
            .run_asking(
                &self.shared.rounds.tools,
                bound,
                request.input_responses,
                request.request_state.as_deref(),
                &context,
                |ctx, link, progress| {
                    self.tool_work(name, args, ran, ctx, &context, link, progress)
                },
            )
            .await?;
        match step {
            Step::Input(input) => Ok(CallToolResponse::InputRequired(input)),
            Step::Done(done) => {
                if done.output.is_error
                    && let Some(missing) = done.undeclared
                {
                    return Err(McpError::missing_required_client_capability(missing));
                }
                let profile = self.profile();
                Ok(CallToolResponse::Complete(call_result(
                    &done.output,
                    has_schema,
                    Some(&profile),
                )))
            }
        }
    }

    /// The span of one MCP request (OpenTelemetry's MCP conventions), exported when
    /// `[telemetry]` is on: its parent is the trace context the request carries in `_meta`,
    /// else in its HTTP headers.
    fn request_span(
        &self,
        method: &'static str,
        target: Option<&str>,
        context: &RequestContext<RoleServer>,
    ) -> tracing::Span {
        let headers = context
            .extensions
            .get::<axum::http::request::Parts>()
            .map(|parts| &parts.headers);
        let span = tracing::info_span!(
            target: trace::TARGET,
            "mcp.request",
            otel.name = target.map_or_else(|| method.to_owned(), |t| format!("{method} {t}")),
            otel.kind = "server",
            mcp.method.name = method,
            gen_ai.tool.name = tracing::field::Empty,
            gen_ai.prompt.name = tracing::field::Empty,
            mcp.resource.uri = tracing::field::Empty,
            jsonrpc.request.id = %context.id,
            mcp.session.id = %self.session.id(),
            mcp.protocol.version = tracing::field::Empty,
            network.transport = if headers.is_some() { "tcp" } else { "pipe" },
            toolgate.outcome = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
            error.type = tracing::field::Empty,
        );
        if span.is_disabled() {
            return span;
        }
        if let Some(target) = target {
            let field = match method {
                "tools/call" => "gen_ai.tool.name",
                "prompts/get" => "gen_ai.prompt.name",
                _ => "mcp.resource.uri",
            };
            span.record(field, target);
        }
        if let Some(version) = context.meta.protocol_version() {
            span.record("mcp.protocol.version", version.to_string());
        }
        trace::adopt_parent(&span, &context.meta.0.0, |key| {
            headers
                .and_then(|h| h.get(key))
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        });
        span
    }

    /// `prompts/get`: a prompt of a mounted server (or a skill), asking through the
    /// session as `call` does.
    async fn prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let source = Arc::clone(self.prompt_source::<GetPromptRequestMethod>()?);
        let arguments = extras::prompt_arguments(request.arguments);
        let args = serde_json::to_value(&arguments).unwrap_or_default();
        let name = request.name;
        let bound = bound_to("prompts/get", &name, &args, &self.session);
        let step = self
            .run_asking(
                &self.shared.rounds.prompts,
                bound,
                request.input_responses,
                request.request_state.as_deref(),
                &context,
                move |ctx, _, _| Box::pin(async move { source.get(&name, &arguments, &ctx).await }),
            )
            .await?;
        match step {
            Step::Input(input) => Ok(GetPromptResponse::InputRequired(input)),
            Step::Done(result) => Ok(GetPromptResponse::Complete(result?)),
        }
    }

    /// `resources/read`, asking through the session as `call` does.
    async fn read(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let source = Arc::clone(self.resource_source::<ReadResourceRequestMethod>()?);
        let uri = request.uri;
        let bound = bound_to("resources/read", &uri, &Value::Null, &self.session);
        let step = self
            .run_asking(
                &self.shared.rounds.resources,
                bound,
                request.input_responses,
                request.request_state.as_deref(),
                &context,
                move |ctx, _, _| Box::pin(async move { source.read(&uri, &ctx).await }),
            )
            .await?;
        match step {
            Step::Input(input) => Ok(ReadResourceResponse::InputRequired(input)),
            Step::Done(contents) => Ok(ReadResourceResponse::Complete(ReadResourceResult::new(
                contents?,
            ))),
        }
    }

    /// Runs the work of a request that may ask the client for input. A 2025 client is asked
    /// in the middle of the work through the session's link; a 2026-07-28 client through
    /// `input_required` rounds: fresh work gets a [`RoundLink`] that knows what the request
    /// says its client declared, and a request with a `requestState` resumes the work it
    /// names. `make` builds the work from its context, round link and progress queue (there
    /// is one when the request asked for progress, and always for work in rounds, whose
    /// later requests may ask for it).
    async fn run_asking<T: Send + 'static>(
        &self,
        rounds: &Rounds<T>,
        bound: Vec<u8>,
        answers: Option<InputResponses>,
        state: Option<&str>,
        context: &RequestContext<RoleServer>,
        make: impl FnOnce(
            CallContext,
            Option<Arc<RoundLink>>,
            Option<ProgressQueue>,
        ) -> BoxFuture<'static, T>,
    ) -> Result<Step<T>, McpError> {
        let by_rounds = asks_by_rounds(context);
        if let (true, Some(state)) = (by_rounds, state) {
            let answers = answers.unwrap_or_default();
            return rounds.resume(&bound, state, answers, context).await;
        }
        let mut ctx = CallContext::new(Arc::clone(&self.session));
        let cancel = ctx.cancel.clone();
        let token = context.meta.get_progress_token();
        if !by_rounds {
            let progress = token.map(|t| ProgressQueue::spawn(context.peer.clone(), Some(t)));
            let work = make(ctx, None, progress);
            return Ok(Step::Done(run_to_end(work, &cancel, &context.ct).await));
        }
        let offered = answers.unwrap_or_default();
        rounds::check_offered(&offered)?;
        let session_link = self.session.client().cloned();
        let (link, asks) = RoundLink::new(declared_by(context), offered, session_link);
        ctx.link = Some(Arc::clone(&link) as Arc<dyn ClientLink>);
        let progress = ProgressQueue::spawn(context.peer.clone(), token);
        let work = make(ctx, Some(link), Some(progress.clone()));
        let work = rounds::Work {
            work,
            asks,
            cancel,
            progress: Some(progress),
        };
        Ok(rounds.start(bound, work, &context.ct).await)
    }

    /// The work of one `tools/call`: the call in its session's line, reporting progress
    /// (and, for long calls, that it still runs) when the client asked for it.
    #[allow(clippy::too_many_arguments)]
    fn tool_work(
        &self,
        name: String,
        args: Value,
        ran: Ran,
        mut ctx: CallContext,
        context: &RequestContext<RoleServer>,
        link: Option<Arc<RoundLink>>,
        progress: Option<ProgressQueue>,
    ) -> BoxFuture<'static, ToolDone> {
        // The place in line taken on arrival (stdio), else now (HTTP: each POST is its own
        // request, so there is no order beyond the one handlers start in).
        let ticket = context
            .extensions
            .get::<Arrival>()
            .and_then(|a| a.0.lock().unwrap_or_else(PoisonError::into_inner).take())
            .unwrap_or_else(|| self.session.order().ticket());
        if let Some(queue) = &progress {
            let queue = queue.clone();
            ctx.progress = Some(Arc::new(move |p: Progress| {
                queue.send(p.progress, p.total, p.message);
            }));
        }
        let dispatcher = Arc::clone(&self.shared.dispatcher);
        let metrics = self.shared.metrics.clone();
        Box::pin(
            async move {
                let arrived = Instant::now();
                let run = dispatcher.call_in_line(&name, RawArgs::Json(args), ctx, ticket);
                tokio::pin!(run);
                // Long calls report elapsed seconds so clients can tell "slow" from "stuck".
                let started = Instant::now();
                let mut ticker =
                    tokio::time::interval_at(tokio::time::Instant::now() + HEARTBEAT, HEARTBEAT);
                let output = loop {
                    tokio::select! {
                        out = &mut run => break out,
                        _ = ticker.tick(), if progress.is_some() => {
                            if let Some(queue) = &progress {
                                let secs = started.elapsed().as_secs_f64().floor();
                                let message = format!("{name}: still running after {secs:.0} s");
                                queue.send(secs, None, Some(message));
                            }
                        }
                    }
                };
                if let Some(queue) = &progress {
                    // Progress sent after the result would be dropped by the client.
                    queue.flush().await;
                }
                if let Some(metrics) = &metrics {
                    metrics.record_call(&ran.tool, &ran.server, &output, arrived.elapsed());
                }
                ToolDone {
                    output,
                    undeclared: link.and_then(|l| l.undeclared()),
                }
            }
            // The request's span even when a later request (a 2026 round) polls it.
            .in_current_span(),
        )
    }
}

/// The tool a `tools/call` ran and its server, as metrics count it.
struct Ran {
    tool: String,
    server: String,
}

/// The server label of toolgate's own tools.
const TOOLGATE: &str = "toolgate";

impl Ran {
    /// A call of a tool toolgate does not serve (refused at the entrance): one bucket for
    /// them all, since a label per name a caller makes up would grow `/metrics` without end.
    fn unknown() -> Self {
        Self {
            tool: crate::metrics::UNKNOWN_TOOL.to_owned(),
            server: TOOLGATE.to_owned(),
        }
    }
}

/// How a `tools/call`'s work ended: its output, and what it needed of the client that a
/// 2026-07-28 client did not declare.
struct ToolDone {
    output: toolgate_core::ToolOutput,
    undeclared: Option<rmcp::model::ClientCapabilities>,
}

/// Awaits `work`; the request's cancellation (`stop`) cancels it through `cancel`, and the
/// work then ends as it does when cancelled.
async fn run_to_end<T>(
    work: BoxFuture<'static, T>,
    cancel: &tokio_util::sync::CancellationToken,
    stop: &tokio_util::sync::CancellationToken,
) -> T {
    tokio::pin!(work);
    loop {
        tokio::select! {
            out = &mut work => return out,
            () = stop.cancelled(), if !cancel.is_cancelled() => cancel.cancel(),
        }
    }
}

/// Whether the request's client is asked through `input_required` results: a 2026-07-28
/// request (its `_meta` names the revision, or the session was never initialised).
fn asks_by_rounds(context: &RequestContext<RoleServer>) -> bool {
    if let Some(version) = context.meta.protocol_version() {
        return !version.has_initialize();
    }
    context
        .peer
        .peer_info()
        .is_some_and(|info| !info.protocol_version.has_initialize())
}

/// Runs a request's work inside its span and records how it ended.
async fn traced<T>(
    span: tracing::Span,
    work: impl Future<Output = Result<T, McpError>>,
) -> Result<T, McpError> {
    let result = work.instrument(span.clone()).await;
    if let Err(e) = &result {
        trace::record_outcome(&span, &e.code.0.to_string(), true);
    }
    result
}

/// The capabilities the request's client declared: in the request's `_meta` (2026-07-28),
/// else at `initialize`.
fn declared_by(context: &RequestContext<RoleServer>) -> rmcp::model::ClientCapabilities {
    context
        .meta
        .client_capabilities()
        .or_else(|| {
            context
                .peer
                .peer_info()
                .map(|info| info.capabilities.clone())
        })
        .unwrap_or_default()
}

/// What a request's `requestState` is bound to: the method, the name (tool, prompt or
/// URI), the arguments in a canonical form, and the caller when one is known.
fn bound_to(method: &str, name: &str, args: &Value, session: &Session) -> Vec<u8> {
    let mut bound = format!("{method}\n{name}\n");
    // Sorted keys: the same arguments bind the same way whatever order a client sends them in.
    toolgate_core::canonical_json(args, &mut bound);
    if let Some(identity) = session.identity() {
        bound.push('\n');
        bound.push_str(identity.issuer.as_deref().unwrap_or(""));
        bound.push('\n');
        bound.push_str(&identity.subject);
    }
    bound.into_bytes()
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

#[cfg(test)]
mod profile_tests;
#[cfg(test)]
mod rounds_tests;
#[cfg(test)]
mod tests;
