//! The MCP handler over toolgate's dispatcher.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::Value;
use toolgate_core::{CallContext, Dispatcher, Progress, RawArgs, RenderOptions, SessionState};

use crate::convert::{call_result, has_output_schema, mcp_tools};

/// How often a long call reports that it is still running, when the client asked for
/// progress.
const HEARTBEAT: Duration = Duration::from_secs(2);

/// How often the `list_changed` watcher checks that its connection is still open.
const WATCH_POLL: Duration = Duration::from_secs(5);

struct Shared {
    dispatcher: Arc<Dispatcher>,
    render: RenderOptions,
    instructions: String,
    /// The rendered tool list of the last generation (rendering is byte-deterministic, so
    /// one copy serves every session).
    tools: Mutex<Option<(u64, Arc<Vec<Tool>>)>>,
}

/// The MCP server handler: one per connection (session), sharing the dispatcher.
#[derive(Clone)]
pub struct ToolgateServer {
    shared: Arc<Shared>,
    session: Arc<SessionState>,
}

impl std::fmt::Debug for ToolgateServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolgateServer").finish_non_exhaustive()
    }
}

impl ToolgateServer {
    /// A handler over `dispatcher`; `instructions` are sent to clients at initialisation.
    pub fn new(dispatcher: Arc<Dispatcher>, render: RenderOptions, instructions: String) -> Self {
        Self {
            shared: Arc::new(Shared {
                dispatcher,
                render,
                instructions,
                tools: Mutex::new(None),
            }),
            session: Arc::new(SessionState::default()),
        }
    }

    /// A handler for a new connection: same tools, fresh session state.
    pub fn new_session(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            session: Arc::new(SessionState::default()),
        }
    }

    /// The current MCP tool list, rendered once per registry generation.
    pub fn tools(&self) -> Arc<Vec<Tool>> {
        let snapshot = self.shared.dispatcher.snapshot();
        let mut cache = self
            .shared
            .tools
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((generation, tools)) = &*cache {
            if *generation == snapshot.generation && !snapshot.incomplete {
                return Arc::clone(tools);
            }
        }
        let tools = Arc::new(mcp_tools(
            snapshot.tools.values().map(|t| t.as_ref()),
            &self.shared.render,
        ));
        if !snapshot.incomplete {
            *cache = Some((snapshot.generation, Arc::clone(&tools)));
        }
        tools
    }

    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let name = request.name.to_string();
        let args = request.arguments.map_or(Value::Null, Value::Object);
        let has_schema = self
            .shared
            .dispatcher
            .snapshot()
            .get(&name)
            .is_some_and(has_output_schema);
        let progress_token = context.meta.get_progress_token();
        let peer = context.peer.clone();
        let mut ctx = CallContext {
            cancel: context.ct.clone(),
            progress: None,
            session: Arc::clone(&self.session),
        };
        if let Some(token) = progress_token.clone() {
            let peer = peer.clone();
            ctx.progress = Some(Arc::new(move |p: Progress| {
                let mut param = ProgressNotificationParam::new(token.clone(), p.progress);
                param.total = p.total;
                param.message = p.message;
                let peer = peer.clone();
                tokio::spawn(async move {
                    let _ = peer.notify_progress(param).await;
                });
            }));
        }
        let dispatcher = Arc::clone(&self.shared.dispatcher);
        let run = dispatcher.call(&name, RawArgs::Json(args), ctx);
        let output = match progress_token {
            None => run.await,
            Some(token) => {
                // Long calls report elapsed seconds so clients can tell "slow" from "stuck".
                tokio::pin!(run);
                let started = Instant::now();
                let mut ticker =
                    tokio::time::interval_at(tokio::time::Instant::now() + HEARTBEAT, HEARTBEAT);
                loop {
                    tokio::select! {
                        out = &mut run => break out,
                        _ = ticker.tick() => {
                            let secs = started.elapsed().as_secs_f64().floor();
                            let mut param = ProgressNotificationParam::new(token.clone(), secs);
                            param.message = Some(format!("{name}: still running after {secs:.0} s"));
                            let _ = peer.notify_progress(param).await;
                        }
                    }
                }
            }
        };
        CallToolResponse::Complete(call_result(output, has_schema))
    }
}

impl ServerHandler for ToolgateServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("toolgate", env!("CARGO_PKG_VERSION")))
            .with_instructions(self.shared.instructions.clone())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(
            self.tools().as_ref().clone(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        Ok(self.call(request, context).await)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools().iter().find(|t| t.name == name).cloned()
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let peer = context.peer;
        let mut generations = self.shared.dispatcher.registry().subscribe();
        generations.mark_unchanged();
        tokio::spawn(async move {
            let mut poll = tokio::time::interval(WATCH_POLL);
            loop {
                tokio::select! {
                    changed = generations.changed() => {
                        if changed.is_err() || peer.notify_tool_list_changed().await.is_err() {
                            break;
                        }
                    }
                    _ = poll.tick() => {
                        if peer.is_transport_closed() {
                            break;
                        }
                    }
                }
            }
        });
    }
}
