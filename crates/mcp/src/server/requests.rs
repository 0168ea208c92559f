//! The requests that run work and may ask the client for input on the way (`tools/call`,
//! `prompts/get`, `resources/read`): through the session's link for a 2025 client, in
//! `input_required` rounds for a 2026-07-28 one; a long call's heartbeat; the call metrics.

use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, GetPromptRequestMethod, GetPromptRequestParams,
    GetPromptResponse, InputResponses, ReadResourceRequestMethod, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::Value;
use toolgate_core::{CallContext, ClientLink, DynTool, Progress, RawArgs, Session};
use tracing::Instrument;

use super::{Arrival, ToolgateServer};
use crate::convert::{call_result, has_output_schema};
use crate::extras;
use crate::notify::ProgressQueue;
use crate::rounds::{self, RoundLink, Rounds, Step};

/// How often a long call reports that it is still running, when the client asked for
/// progress.
const HEARTBEAT: Duration = Duration::from_secs(2);

impl ToolgateServer {
    /// `tools/call`: the tool's work in the session's line, asking the client for input when
    /// the tool needs it, as `run_asking` says.
    pub(super) async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        let args = request.arguments.map_or(Value::Null, Value::Object);
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
                |ctx, link, progress| self.tool_work(name, args, ctx, &context, link, progress),
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
                // The tool that ran decides the result's shape: `run_tool`'s target, not
                // `run_tool`.
                let has_schema = done.tool.as_ref().is_some_and(has_output_schema);
                let profile = self.profile();
                Ok(CallToolResponse::Complete(call_result(
                    &done.output,
                    has_schema,
                    Some(&profile),
                )))
            }
        }
    }

    /// `prompts/get`: a prompt of a mounted server (or a skill), asking through the
    /// session as `call` does.
    pub(super) async fn prompt(
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
    pub(super) async fn read(
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
                let answered = loop {
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
                    // Counted by the tool that ran, under its server (whatever its names'
                    // prefix).
                    let ran = answered.tool.as_ref().map_or_else(Ran::unknown, Ran::of);
                    let output = &answered.output;
                    metrics.record_call(&ran.tool, &ran.server, output, arrived.elapsed());
                }
                ToolDone {
                    output: answered.output,
                    tool: answered.tool,
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
    fn of(tool: &Arc<dyn DynTool>) -> Self {
        Self {
            tool: tool.spec().name.clone(),
            server: tool.server().unwrap_or(TOOLGATE).to_owned(),
        }
    }

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
pub(super) struct ToolDone {
    output: toolgate_core::ToolOutput,
    /// The tool that ran (`run_tool`'s target), when one was found.
    tool: Option<Arc<dyn DynTool>>,
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
