//! The call path of a mounted server: a live connection on demand (starting or restarting
//! the server when allowed), the request with progress and cancellation, and the errors a
//! model can act on; plus the server's face in the registry.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::ServiceError;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest,
    InputRequiredResult, JsonObject, ServerResult,
};
use rmcp::model::{ClientCapabilities, ErrorCode, GetExtensions, RequestMetaObject};
use rmcp::service::PeerRequestOptions;
use toolgate_core::trace;
use toolgate_core::{
    Absence, CallContext, ClientAsk, DynTool, ProviderError, ToolError, ToolOutput, ToolProvider,
};
use tracing::{Instrument, Span};

use crate::error::tidy;

use crate::error::UpstreamError;
use crate::relay::{Asker, CallTag};

use super::login::MAX_LOGINS_PER_CALL;
use super::rounds::MAX_INPUT_ROUNDS;
use super::{Live, Mount, Phase};
use crate::convert::to_output;

/// A 2026-07-28 server refused a call for want of a client capability the call's client did
/// not declare: the client is told as the server told toolgate (the call's link notes what
/// was missing, and toolgate answers the request with the same error).
fn missing_capability(
    server: &str,
    tool: &str,
    error: &rmcp::ErrorData,
    ctx: &CallContext,
) -> ToolError {
    let required = error
        .data
        .as_ref()
        .and_then(|d| d.get("requiredCapabilities"))
        .and_then(|c| serde_json::from_value::<ClientCapabilities>(c.clone()).ok())
        .unwrap_or_default();
    let mut asks = Vec::new();
    if let Some(elicitation) = &required.elicitation {
        if elicitation.url.is_some() {
            asks.push(ClientAsk::UrlElicitation);
        }
        if elicitation.form.is_some() || elicitation.url.is_none() {
            asks.push(ClientAsk::FormElicitation);
        }
    }
    #[allow(deprecated)] // sampling, roots: deprecated by SEP-2577, still asked for
    {
        if required.sampling.is_some() {
            asks.push(ClientAsk::Sampling);
        }
        if required.roots.is_some() {
            asks.push(ClientAsk::Roots);
        }
    }
    if let Some(link) = ctx.client() {
        for ask in &asks {
            link.note_missing(*ask);
        }
    }
    let needs: Vec<&str> = asks.iter().map(|a| a.method()).collect();
    ToolError::recoverable(format!(
        "MCP server `{server}` refused `{tool}`: it needs the client to answer {}, which this client does not offer; use another tool or a client that does",
        if needs.is_empty() {
            "requests it did not name".to_owned()
        } else {
            needs.join(", ")
        }
    ))
}

/// `response`, once the progress and log messages the server sent before it have reached
/// the call's client.
async fn settled<T>(live: &Live, id: &rmcp::model::RequestId, response: T) -> T {
    live.arrivals.settle(id).await;
    response
}

/// The first protocol revision whose requests carry the client's capabilities.
const FIRST_PER_REQUEST_REVISION: &str = "2026-07-28";

impl Mount {
    /// A ready connection for a call, starting or restarting the server when allowed.
    pub(super) async fn ensure_live(self: &Arc<Self>) -> Result<Arc<Live>, UpstreamError> {
        let name = &self.spec.name;
        let server = || name.clone();
        let mut changed = self.changed.subscribe();
        let mut attempted = false;
        let mut logins = 0;
        loop {
            if let Some(clash) = self.clash() {
                return Err(UpstreamError::NotMounted {
                    server: server(),
                    clash,
                });
            }
            if self.shutdown.is_cancelled() {
                return Err(UpstreamError::ShuttingDown { server: server() });
            }
            let mut login = None;
            let start = {
                let st = self.state();
                match &st.phase {
                    Phase::Ready => {
                        if let Some(live) = &st.live {
                            return Ok(Arc::clone(live));
                        }
                        false
                    }
                    Phase::Disabled => {
                        return Err(UpstreamError::Disabled {
                            server: server(),
                            origin: self.spec.source.clone(),
                        });
                    }
                    Phase::Untrusted(reason) => {
                        return Err(UpstreamError::Untrusted {
                            server: server(),
                            reason: reason.clone(),
                            origin: self.spec.source.clone(),
                        });
                    }
                    Phase::Idle => true,
                    Phase::Starting => false,
                    Phase::NeedsLogin(needs) => {
                        login = Some(needs.clone());
                        false
                    }
                    Phase::Failed { reason, retry_at } => match retry_at {
                        Some(at) if !attempted && Instant::now() >= *at => true,
                        Some(at) => {
                            let wait = at.saturating_duration_since(Instant::now());
                            return Err(UpstreamError::Backoff {
                                server: server(),
                                reason: reason.clone(),
                                retry_in: wait.max(Duration::from_secs(1)),
                            });
                        }
                        None => {
                            return Err(UpstreamError::Failed {
                                server: server(),
                                reason: reason.clone(),
                            });
                        }
                    },
                }
            };
            if let Some(needs) = login {
                // A login made since (by `toolgate mcp login` in another process) is
                // picked up now rather than at the watcher's next look.
                if self.logged_in_since() && self.login_arrived() {
                    attempted = false;
                    continue;
                }
                if logins < MAX_LOGINS_PER_CALL
                    && self
                        .interactive_login(needs.challenge.as_deref())
                        .await
                        .map_err(|source| UpstreamError::Login {
                            server: server(),
                            source,
                        })?
                {
                    logins += 1;
                    self.login_arrived();
                    attempted = false;
                    continue;
                }
                return Err(UpstreamError::NeedsLogin {
                    server: server(),
                    reason: needs.reason,
                });
            }
            if start && !attempted {
                attempted = true;
                self.start().await;
            } else if changed.changed().await.is_err() {
                return Err(UpstreamError::Gone { server: server() });
            }
        }
    }

    /// Calls `tool` on the server. Errors are recoverable results that say what happened.
    ///
    /// A server that refuses the token (`401`, after rmcp's own refresh and retry) or asks
    /// for more scopes (`403 insufficient_scope`) turns `needs login`; with a login handler
    /// the call logs in and is sent again, at most [`MAX_LOGINS_PER_CALL`] times.
    pub(crate) async fn call(
        self: &Arc<Self>,
        tool: &str,
        args: JsonObject,
        ctx: CallContext,
    ) -> Result<ToolOutput, ToolError> {
        let mut challenges = 0;
        loop {
            match self.call_once(tool, args.clone(), &ctx).await {
                Attempt::Done(result) => return result,
                Attempt::Challenged(live, challenge) => {
                    challenges += 1;
                    self.refused(&live, &challenge).await;
                    if challenges > MAX_LOGINS_PER_CALL {
                        return Err(ToolError::recoverable(format!(
                            "MCP server `{}` still refuses `{tool}` after {MAX_LOGINS_PER_CALL} logins ({}); ask the user to check the account's permissions",
                            self.spec.name,
                            challenge_summary(&challenge)
                        )));
                    }
                }
            }
        }
    }

    /// Drops a connection whose token the server refused; its monitor marks the server
    /// `needs login`. The scopes a step-up asks for are remembered for the next login.
    async fn refused(&self, live: &Live, challenge: &str) {
        let shared = self
            .state()
            .live
            .as_ref()
            .is_some_and(|l| std::ptr::eq(Arc::as_ptr(l), live));
        // A caller's own connection (`per_user`) leaves toolgate's login as it is: the
        // caller's next dial meets the challenge again and their login asks for its scopes.
        if let (true, Some(store), crate::config::Transport::Http { url, .. }) =
            (shared, self.token_store(), &self.spec.transport)
        {
            toolgate_oauth::remember_challenge(&store, url, challenge);
        }
        *super::lock(&live.refused) = Some(crate::failure::NeedsLogin {
            reason: challenge_summary(challenge),
            challenge: Some(challenge.to_owned()),
        });
        let mut changed = self.changed.subscribe();
        live.abandon("the server refused the login".to_owned());
        live.closed.cancelled().await;
        // The monitor forgets the connection, then sets the phase: wait for both.
        while self
            .state()
            .live
            .as_ref()
            .is_some_and(|l| std::ptr::eq(Arc::as_ptr(l), live))
        {
            if changed.changed().await.is_err() {
                break;
            }
        }
    }

    async fn call_once(
        self: &Arc<Self>,
        tool: &str,
        args: JsonObject,
        ctx: &CallContext,
    ) -> Attempt {
        match self.call_live(tool, args, ctx).await {
            Ok(output) => Attempt::Done(Ok(output)),
            Err(Refusal::Error(e)) => Attempt::Done(Err(e)),
            Err(Refusal::Challenged(live, challenge)) => Attempt::Challenged(live, challenge),
        }
    }

    async fn call_live(
        self: &Arc<Self>,
        tool: &str,
        args: JsonObject,
        ctx: &CallContext,
    ) -> Result<ToolOutput, Refusal> {
        let name = &self.spec.name;
        // A server used per user: the caller's own connection, when the session has one.
        let per_user = ctx.session.identity().filter(|_| self.spec.oauth.per_user);
        let connection = async {
            match per_user {
                Some(who) => self.caller_live(who, ctx).await,
                None => self.ensure_live().await,
            }
        };
        // A (re)start may take the whole startup timeout, a caller's login longer; a
        // cancelled call stops waiting for it (the start itself carries on: see
        // `Mount::start`).
        let live = tokio::select! {
            live = connection => live.map_err(|e| ToolError::Recoverable(e.to_string()))?,
            () = ctx.cancel.cancelled() => {
                let waited_for = match per_user {
                    Some(_) => "was connecting (or waiting for the user's login)",
                    None => "was starting",
                };
                return Err(ToolError::recoverable(format!(
                    "`{tool}` was cancelled while MCP server `{name}` {waited_for}"
                )).into());
            }
        };
        let caller = ctx.client().cloned();
        // The server's own requests while the call runs (2025) go to this caller's client.
        let called = live.callers.enter(caller.clone());
        let mut params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args);
        // A 2026-07-28 server asks for input by answering `input_required`: the requests
        // are fulfilled through the caller's client and the call is sent again, with the
        // answers and the server's `requestState` as it was, a bounded number of times.
        let mut pauses = 0;
        for _round in 0..MAX_INPUT_ROUNDS {
            match self
                .call_round(&live, tool, params.clone(), ctx, called.tag())
                .await?
            {
                Round::Done(output) => return Ok(output),
                Round::InputRequired(input) => {
                    let state = input.request_state.clone();
                    let answers = tokio::select! {
                        answers = self.answer_round(caller.clone(), input, &mut pauses) => answers,
                        () = ctx.cancel.cancelled() => {
                            return Err(ToolError::recoverable(format!("`{tool}` was cancelled")).into());
                        }
                    };
                    params.input_responses = answers.map_err(|e| {
                        ToolError::recoverable(format!(
                            "`{tool}` of MCP server `{name}` needs input this session cannot give: {e}"
                        ))
                    })?;
                    params.request_state = state;
                }
            }
        }
        Err(ToolError::recoverable(format!(
            "MCP server `{name}` kept asking for more input for `{tool}` ({MAX_INPUT_ROUNDS} rounds); the server is misbehaving"
        ))
        .into())
    }

    /// A call to a server that reads the client's capabilities from each request
    /// (2026-07-28) tells it those of the call's client, within what toolgate offers and
    /// the rules allow; other calls need no options.
    /// The client span of a request to this server (`tools/call`, `prompts/get`,
    /// `resources/read` of `target`), exported when telemetry is on.
    pub(super) fn client_span(&self, method: &'static str, target: &str) -> Span {
        let span = tracing::info_span!(
            target: trace::TARGET,
            "mcp.client",
            otel.name = format!("{method} {target}"),
            otel.kind = "client",
            mcp.method.name = method,
            gen_ai.tool.name = tracing::field::Empty,
            gen_ai.prompt.name = tracing::field::Empty,
            mcp.resource.uri = tracing::field::Empty,
            toolgate.mcp_server = %self.spec.name,
            toolgate.outcome = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
            error.type = tracing::field::Empty,
        );
        let field = match method {
            "tools/call" => "gen_ai.tool.name",
            "prompts/get" => "gen_ai.prompt.name",
            _ => "mcp.resource.uri",
        };
        span.record(field, target);
        span
    }

    /// With telemetry on, every call also carries its span's trace context (SEP-414).
    fn call_options(&self, live: &Live, ctx: &CallContext, span: &Span) -> PeerRequestOptions {
        let mut meta = trace_meta(span).unwrap_or_default();
        let per_request = live
            .peer
            .peer_info()
            .is_some_and(|info| info.protocol_version.as_str() >= FIRST_PER_REQUEST_REVISION);
        if let Some(caller) = ctx.client().filter(|_| per_request) {
            let limits = self.limits();
            let asker = Asker {
                name: &self.spec.name,
                policy: &limits.policy,
            };
            let capabilities =
                crate::handler::offered_to_call(!limits.roots.is_empty(), caller.as_ref(), &asker);
            meta.set_client_capabilities(capabilities);
        }
        let mut options = PeerRequestOptions::no_options();
        options.meta = (!meta.0.0.is_empty()).then_some(meta);
        options
    }

    /// Sends the call once and waits for the server's answer, in a client span (exported
    /// when telemetry is on) whose context the request carries.
    async fn call_round(
        self: &Arc<Self>,
        live: &Arc<Live>,
        tool: &str,
        params: CallToolRequestParams,
        ctx: &CallContext,
        tag: CallTag,
    ) -> Result<Round, Refusal> {
        let span = self.client_span("tools/call", tool);
        let round = self
            .send_call(live, tool, params, ctx, &span, tag)
            .instrument(span.clone())
            .await;
        match &round {
            Ok(Round::Done(output)) if output.is_error => {
                trace::record_outcome(&span, "tool_error", true);
            }
            Ok(_) => {}
            Err(_) => trace::record_outcome(&span, "error", true),
        }
        round
    }

    async fn send_call(
        self: &Arc<Self>,
        live: &Arc<Live>,
        tool: &str,
        params: CallToolRequestParams,
        ctx: &CallContext,
        span: &Span,
        tag: CallTag,
    ) -> Result<Round, Refusal> {
        let name = &self.spec.name;
        let live = Arc::clone(live);
        let mut request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        // The server's requests that come with this one are this caller's (`relay.rs`).
        request.extensions_mut().insert(tag);
        let options = self.call_options(&live, ctx, span);
        let handle = match live.peer.send_request_with_option(request, options).await {
            Ok(handle) => handle,
            Err(e) => {
                if let Some(challenge) = e.auth_challenge() {
                    return Err(Refusal::Challenged(live, challenge.to_owned()));
                }
                live.abandon(format!("the connection failed: {}", tidy(&e.to_string())));
                return Err(self.lost(&live, tool).await.into());
            }
        };
        let _route = ctx
            .progress
            .clone()
            .map(|sink| live.routes.route(handle.progress_token.clone(), sink));
        let id = handle.id.clone();
        let response = handle.await_response();
        tokio::pin!(response);
        let outcome: Result<Round, ToolError> = tokio::select! {
            r = &mut response => match settled(&live, &id, r).await {
                Ok(ServerResult::CallToolResult(result)) => {
                    Ok(Round::Done(to_output(result, self.limits().max_inline_chars)))
                }
                Ok(ServerResult::InputRequiredResult(input)) => Ok(Round::InputRequired(input)),
                Ok(ServerResult::CreateTaskResult(_)) => Err(ToolError::recoverable(format!(
                    "MCP server `{name}` answered `{tool}` with a background task, which toolgate cannot follow yet; use another tool"
                ))),
                Ok(_) => Err(ToolError::recoverable(format!(
                    "MCP server `{name}` sent an answer to `{tool}` that is not a tool result; the server is misbehaving"
                ))),
                Err(ServiceError::McpError(e))
                    if e.code == ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY =>
                {
                    Err(missing_capability(name, tool, &e, ctx))
                }
                Err(ServiceError::McpError(e)) => Err(ToolError::recoverable(format!(
                    "MCP server `{name}` rejected `{tool}`: {} (JSON-RPC error {}); check the arguments against the tool's description",
                    e.message, e.code.0
                ))),
                Err(e) if e.auth_challenge().is_some() => {
                    let challenge = e.auth_challenge().unwrap_or_default().to_owned();
                    return Err(Refusal::Challenged(Arc::clone(&live), challenge));
                }
                Err(e @ (ServiceError::TransportClosed | ServiceError::TransportSend(_))) => {
                    live.abandon(format!("the connection failed: {}", tidy(&e.to_string())));
                    Err(self.lost(&live, tool).await)
                }
                Err(e) => Err(ToolError::recoverable(format!(
                    "calling `{tool}` on MCP server `{name}` failed: {e}"
                ))),
            },
            () = ctx.cancel.cancelled() => {
                // The dispatcher stopped the call (timeout, or the client cancelled it).
                let notice = CancelledNotificationParam::new(
                    Some(id),
                    Some("cancelled by toolgate (timeout or client cancellation)".to_owned()),
                );
                let _ = live.peer.notify_cancelled(notice).await;
                Err(ToolError::recoverable(format!("`{tool}` was cancelled")))
            }
            () = live.closed.cancelled() => Err(self.lost(&live, tool).await),
        };
        outcome.map_err(Refusal::Error)
    }

    /// The error for a call whose connection ended under it.
    async fn lost(&self, live: &Live, tool: &str) -> ToolError {
        // The monitor records why (exit status, stderr) as it cleans up.
        let _ = tokio::time::timeout(Duration::from_secs(3), live.closed.cancelled()).await;
        ToolError::recoverable(format!(
            "MCP server `{}` stopped while `{tool}` was running ({}); the call may or may not have taken effect. The server is restarted (or reconnected) on the next call",
            self.spec.name,
            live.end_reason()
        ))
    }
}

/// How one round of a call ended.
enum Round {
    Done(ToolOutput),
    InputRequired(InputRequiredResult),
}

/// How one attempt at a call ended.
enum Attempt {
    Done(Result<ToolOutput, ToolError>),
    /// The server refused the token; the challenge (`WWW-Authenticate`) says why.
    Challenged(Arc<Live>, String),
}

/// Why a call on a live connection did not return a result.
enum Refusal {
    Error(ToolError),
    Challenged(Arc<Live>, String),
}

impl From<ToolError> for Refusal {
    fn from(e: ToolError) -> Self {
        Self::Error(e)
    }
}

/// `needs more permissions (scope "a b")`, or `the login was refused`, from a challenge.
fn challenge_summary(challenge: &str) -> String {
    let lower = challenge.to_ascii_lowercase();
    if lower.contains("insufficient_scope") {
        let scope = challenge
            .split("scope=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap_or("more");
        format!("it needs more permissions (scope \"{scope}\")")
    } else {
        "the server refused the stored login (expired or revoked)".to_owned()
    }
}

/// The registry's view of one server.
pub(crate) struct MountProvider {
    pub(crate) name: String,
    pub(crate) mount: Arc<Mount>,
}

impl ToolProvider for MountProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn tools(&self) -> Result<Vec<Arc<dyn DynTool>>, ProviderError> {
        let (phase, ever_ready) = {
            let st = self.mount.state();
            // Tools from the catalog cache are known tools, like those of a crashed server.
            (st.phase.clone(), st.ever_ready || st.from_cache)
        };
        let starting = self.mount.is_settling();
        match phase {
            _ if starting && !ever_ready => Err(ProviderError::Unavailable {
                provider: self.name.clone(),
                reason: "starting; its tools appear when it is ready".to_owned(),
            }),
            _ if ever_ready => Ok(self.mount.tools()),
            _ => Ok(Vec::new()),
        }
    }

    fn absence(&self) -> Option<Absence> {
        let name = &self.mount.spec.name;
        let st = self.mount.state();
        let reason = match &st.phase {
            Phase::Untrusted(why) => untrusted_words(name, why),
            Phase::Disabled => format!(
                "MCP server `{name}` is disabled (`enabled = false` in {})",
                self.mount.spec.source
            ),
            Phase::Failed { reason, .. } if !(st.ever_ready || st.from_cache) => {
                format!("MCP server `{name}` failed to start: {reason}")
            }
            _ => return None,
        };
        Some(Absence {
            prefix: crate::naming::server_prefix(name),
            reason,
        })
    }
}

/// What a caller reads about an untrusted server: whose move it is, and the command.
pub(crate) fn untrusted_words(name: &str, why: &str) -> String {
    let command = crate::trust::trust_command(name);
    // A new server's reason is "defined by a project file and not trusted yet": said once.
    let why = match why.contains("not trusted yet") {
        true => String::new(),
        false => format!(" ({why})"),
    };
    format!(
        "server `{name}` is not trusted yet{why}: the user must run `{command}`, then restart toolgate (reconnect its MCP server in the client)"
    )
}

/// `_meta` carrying `span`'s trace context (SEP-414), when telemetry exports it.
pub(super) fn trace_meta(span: &Span) -> Option<RequestMetaObject> {
    let mut meta = RequestMetaObject::new();
    trace::inject(span, &mut meta.0.0);
    (!meta.0.0.is_empty()).then_some(meta)
}

#[cfg(test)]
mod tests {
    use crate::error::tidy;

    #[test]
    fn transport_type_names_are_removed() {
        assert_eq!(
            tidy(
                "Transport send error: Transport [rmcp::transport::worker::WorkerTransport<X<reqwest::Client>>] error: Client error: refused"
            ),
            "Transport send error: Client error: refused"
        );
        assert_eq!(tidy("plain"), "plain");
    }
}
