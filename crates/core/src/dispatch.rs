//! Dispatch: running one call, where every failure is information for the model.
//!
//! Unknown tool, arguments that are not JSON or do not fit the schema, a denied permission,
//! a handler error, a timeout and a panic all come back as an error [`ToolOutput`] whose text
//! says what to do next. Who waits for whom is [`crate::schedule`]'s business: per session,
//! mutating calls run one at a time in arrival order and read-only calls beside each other;
//! across sessions only calls that change the same resource wait for each other. Waiting
//! counts against the call's deadline and stops on cancellation like the call itself.
//!
//! Every answered call, refused ones included, is reported once to the dispatcher's
//! [`AuditSink`] (when it has one) with its final result, after the budget.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::FutureExt;
use serde_json::Value;
use tracing::Instrument;

use crate::approver::ApprovalRequest;
use crate::audit::{AskAnswer, AuditDecision, AuditOutcome, AuditSink};
use crate::context::CallContext;
use crate::output::ToolOutput;
use crate::permission::{Decision, Policy};
use crate::profile::{ClientLimits, ToolNames};
use crate::rate_limit::{RateLimits, caller_of, refusal};
use crate::registry::{Registry, Scope, Snapshot};
use crate::result_budget::{ResultBudget, TurnResult};
use crate::schedule::{AwayLink, Ends, Holding, ResourceLocks, Ticket, Turn};
use crate::session::Approval;
use crate::spec::{Concurrency, ToolMeta};
use crate::tool::{DynTool, ToolError};
use audit::{BeforeBudget, Known, Ran, Unanswered};
use entrance::{Prepared, prepare, unwrap_proxy};

mod audit;
mod entrance;

/// Time limits applied by the dispatcher.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DispatchLimits {
    /// Used when a tool declares no timeout. Default 120 s, the shell's default.
    pub default_timeout: Duration,
    /// No tool runs longer than this. Default 600 s, the shell's maximum.
    pub max_timeout: Duration,
}

impl Default for DispatchLimits {
    fn default() -> Self {
        Self {
            default_timeout: Duration::from_secs(120),
            max_timeout: Duration::from_secs(600),
        }
    }
}

/// Arguments as they arrive: already-parsed JSON (MCP) or raw text (model output, CLI).
#[derive(Debug, Clone)]
pub enum RawArgs {
    /// Parsed JSON.
    Json(Value),
    /// Text that should be a JSON object.
    Text(String),
}

/// One call of a batch.
#[derive(Debug, Clone)]
pub struct Call {
    /// Tool name as the model wrote it.
    pub name: String,
    /// Its arguments.
    pub args: RawArgs,
}

/// A call's result and the tool that gave it: for a call through a proxy (`run_tool`), its
/// target; `None` when the call was refused before any tool was found. A front end shapes
/// the result (an output schema) and counts it by this tool, so the proxy is resolved once,
/// in the snapshot the call ran in.
pub struct Answered {
    /// The result, after the budget.
    pub output: ToolOutput,
    /// The tool that ran.
    pub tool: Option<Arc<dyn DynTool>>,
}

/// Runs calls against one scope of a registry under a permission policy.
pub struct Dispatcher {
    registry: Arc<Registry>,
    scope: Scope,
    policy: Policy,
    limits: DispatchLimits,
    /// Resources held by running mutating calls, across every session of this dispatcher.
    resources: ResourceLocks,
    budget: Option<Arc<dyn ResultBudget>>,
    audit: Option<Arc<dyn AuditSink>>,
    rate_limits: Option<Arc<RateLimits>>,
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher")
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

impl Dispatcher {
    /// A dispatcher for `scope` of `registry`.
    pub fn new(
        registry: Arc<Registry>,
        scope: Scope,
        policy: Policy,
        limits: DispatchLimits,
    ) -> Self {
        Self {
            registry,
            scope,
            policy,
            limits,
            resources: ResourceLocks::default(),
            budget: None,
            audit: None,
            rate_limits: None,
        }
    }

    /// The registry behind this dispatcher.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The current snapshot of this dispatcher's scope.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.registry.snapshot(&self.scope)
    }

    /// The snapshot to run `name` in. A tool (or `run_tool` target) not known yet while
    /// servers are still starting waits for them, within the registry's startup grace: the
    /// first list never waits, so a model may name a tool before its server is ready.
    async fn snapshot_for(&self, name: &str, args: &RawArgs) -> Arc<Snapshot> {
        let snapshot = self.snapshot();
        if !snapshot.incomplete {
            return snapshot;
        }
        // A name that is wrong, not just early, waits out the grace once: the registry
        // cannot tell them apart while servers are starting.
        let known = |snapshot: &Snapshot| {
            unwrap_proxy(name, args.clone(), snapshot)
                .is_ok_and(|(target, _)| snapshot.get(&target).is_some())
        };
        if known(&snapshot) {
            return snapshot;
        }
        self.registry.settled_for(&self.scope, known).await
    }

    /// The permission policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Applies `budget` to every result: each [`Dispatcher::call`] is a turn of its own,
    /// each [`Dispatcher::call_batch`] one turn for all its calls.
    pub fn with_budget(mut self, budget: Arc<dyn ResultBudget>) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Refuses calls past `limits` (`[rate_limits]`) after the permission stage.
    pub fn with_rate_limits(mut self, limits: Arc<RateLimits>) -> Self {
        self.rate_limits = (!limits.is_empty()).then_some(limits);
        self
    }

    /// Reports every answered call to `sink` (the audit log).
    pub fn with_audit(mut self, sink: Arc<dyn AuditSink>) -> Self {
        self.audit = Some(sink);
        self
    }

    /// Runs one call as a turn of its own (server mode: the per-result budget applies).
    /// Never fails: errors are results with `is_error`.
    ///
    /// The call takes its place in its session's line when this function is called, not
    /// when the future is first polled, so calls started in a row keep their order.
    pub fn call<'a>(
        &'a self,
        name: &'a str,
        args: RawArgs,
        ctx: CallContext,
    ) -> futures::future::BoxFuture<'a, ToolOutput> {
        let ticket = ctx.session.order().ticket();
        let answer = self.call_in_line(name, args, ctx, ticket);
        Box::pin(async move { answer.await.output })
    }

    /// [`Dispatcher::call`] with a place in line taken earlier, when the call arrived (a
    /// transport takes it while it reads requests in order, before handlers are spawned),
    /// answered with the tool that ran.
    pub fn call_in_line<'a>(
        &'a self,
        name: &'a str,
        args: RawArgs,
        ctx: CallContext,
        ticket: Ticket,
    ) -> futures::future::BoxFuture<'a, Answered> {
        Box::pin(async move {
            let started = tokio::time::Instant::now();
            let called = name;
            let session = Arc::clone(&ctx.session);
            // Reports the call as cancelled if this future is dropped before it is answered.
            let mut unanswered = Unanswered {
                dispatcher: self,
                session: Arc::clone(&session),
                called,
                started,
                known: Mutex::default(),
                answered: false,
            };
            let snapshot = self.snapshot_for(name, &args).await;
            let limits = ctx.session.limits();
            let injected = injected_args(&ctx);
            let (name, tool, mut ran) = match prepare(name, args, &snapshot, &injected) {
                Ok(call) => {
                    let tool = Arc::clone(&call.tool);
                    let name = call.name.clone();
                    (
                        name,
                        Some(tool),
                        self.run(call, ctx, ticket, &unanswered.known).await,
                    )
                }
                Err(refused) => (name.to_owned(), None, Ran::refused(*refused)),
            };
            let meta = tool.as_ref().map(|t| t.meta());
            let before = BeforeBudget::of(&ran.output);
            let names = session.tool_names();
            self.apply_budget(&mut [(&name, meta, &mut ran.output)], limits, &names);
            let ran_tool = tool.is_some().then_some(name.as_str());
            unanswered.answered = true;
            self.report(&session, called, ran_tool, &ran, started.elapsed(), before);
            Answered {
                output: ran.output,
                tool,
            }
        })
    }

    fn apply_budget(
        &self,
        results: &mut [(&str, Option<&ToolMeta>, &mut ToolOutput)],
        limits: ClientLimits,
        names: &ToolNames,
    ) {
        let Some(budget) = &self.budget else { return };
        let fallback = ToolMeta::default();
        let mut turn: Vec<TurnResult<'_>> = results
            .iter_mut()
            .map(|(tool, meta, output)| TurnResult {
                tool,
                meta: meta.unwrap_or(&fallback),
                output,
                limits,
                names: names.clone(),
            })
            .collect();
        budget.apply(&mut turn);
    }

    /// Runs a prepared call without applying the budget: authorization, then its turn in
    /// line and its run within the deadline, then what happened as a result.
    /// `known` learns the tool, arguments and decision as they are settled, for a call
    /// whose future is dropped before it ends.
    async fn run(&self, call: Prepared, ctx: CallContext, ticket: Ticket, known: &Known) -> Ran {
        // One span per tool call (GenAI's `execute_tool`), exported when telemetry is on: a
        // mounted server's call inside it is its child.
        let span = tracing::info_span!(
            target: crate::trace::TARGET,
            "execute_tool",
            otel.name = format!("execute_tool {}", call.name),
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = %call.name,
            mcp.session.id = %ctx.session.id(),
            toolgate.outcome = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
            error.type = tracing::field::Empty,
        );
        let ran = self
            .run_untraced(call, ctx, ticket, known)
            .instrument(span.clone())
            .await;
        crate::trace::record_outcome(&span, ran.outcome.as_str(), ran.output.is_error);
        ran
    }

    async fn run_untraced(
        &self,
        call: Prepared,
        ctx: CallContext,
        ticket: Ticket,
        known: &Known,
    ) -> Ran {
        // The audit digests the arguments once the call is over; the tool consumes them.
        let args = self.audit.is_some().then(|| call.args.clone());
        let (decision, authorized) = self.authorize(&call, &ctx).await;
        if self.audit.is_some() {
            *known.lock().unwrap_or_else(PoisonError::into_inner) =
                Some((call.name.clone(), args.clone(), decision.clone()));
        }
        let arrived = match authorized {
            Ok(Authorized::AsArrived) => ticket.arrived(),
            // The time a human took to answer is not the tool's.
            Ok(Authorized::ByUserAt(answered)) => answered,
            Err((refused, outcome)) => {
                return Ran {
                    output: *refused,
                    decision,
                    outcome,
                    args,
                };
            }
        };
        if let Some(limits) = &self.rate_limits
            && let Err(limited) = limits.check(&caller_of(&ctx.session), &call.name)
        {
            let mut output = ToolOutput::error(refusal(&call.name, &limited));
            let wait = u64::try_from(limited.retry_after.as_millis()).unwrap_or(u64::MAX);
            output
                .structured
                .insert("retry_after_ms".to_owned(), Value::from(wait));
            return Ran {
                output,
                decision,
                outcome: AuditOutcome::RateLimited,
                args,
            };
        }
        let (output, outcome) = self.run_scheduled(call, ctx, ticket, arrived).await;
        Ran {
            output,
            decision,
            outcome,
            args,
        }
    }

    /// The permission stage: the policy's verdict, and for `ask` the session's approver.
    /// Returns the decision for the audit beside the way the call goes on, or its refusal.
    async fn authorize(
        &self,
        call: &Prepared,
        ctx: &CallContext,
    ) -> (
        AuditDecision,
        Result<Authorized, (Box<ToolOutput>, AuditOutcome)>,
    ) {
        let name = call.name.as_str();
        let action = &call.tool.meta().action;
        let verdict = self.policy.decide_for(name, action, ctx.session.identity());
        let refused = |text: String, outcome| Err((Box::new(ToolOutput::error(text)), outcome));
        let source = verdict.source.clone();
        let rule = match verdict.decision {
            Decision::Allow => {
                let decision = AuditDecision::Allowed {
                    rule: verdict.rule,
                    source,
                };
                return (decision, Ok(Authorized::AsArrived));
            }
            Decision::Deny => {
                let text = match &verdict.rule {
                    Some(rule) => format!(
                        "error: permission denied: `{name}` ({action}) is blocked by the rule {rule}; use another tool, or ask the user to change that rule"
                    ),
                    None => format!("error: permission denied for `{name}`"),
                };
                let decision = AuditDecision::Denied {
                    rule: verdict.rule,
                    source,
                };
                return (decision, refused(text, AuditOutcome::Refused));
            }
            Decision::Ask => verdict.rule.unwrap_or_default(),
        };
        let asked = |answer| AuditDecision::Asked {
            rule: Some(rule.clone()),
            source: source.clone(),
            answer,
        };
        let approver = match ctx.session.approval() {
            Approval::By(approver) => Arc::clone(approver),
            Approval::Nobody => {
                let text = format!(
                    "error: permission needed: `{name}` ({action}) requires approval by the rule {rule}, and nobody can approve it here; ask the user to move it to `allow` in the [permissions] config"
                );
                return (
                    asked(AskAnswer::Nobody),
                    refused(text, AuditOutcome::Refused),
                );
            }
        };
        let request = ApprovalRequest {
            tool: name.to_owned(),
            action: action.clone(),
            rule: rule.clone(),
            args: call.args.clone(),
        };
        let approved = tokio::select! {
            approved = approver.approve(request) => approved,
            () = ctx.cancel.cancelled() => {
                let text = format!(
                    "error: `{name}` was cancelled while waiting for the user's approval; it did not run"
                );
                return (asked(AskAnswer::Cancelled), refused(text, AuditOutcome::Cancelled));
            }
        };
        if !approved {
            let text = format!(
                "error: the user declined `{name}` ({action}, rule {rule}); it did not run — do not retry it: ask the user how to go on, or do without it"
            );
            return (
                asked(AskAnswer::Declined),
                refused(text, AuditOutcome::Refused),
            );
        }
        (
            asked(AskAnswer::Approved),
            Ok(Authorized::ByUserAt(tokio::time::Instant::now())),
        )
    }

    /// The scheduling and running stages: the call's deadline, its turn in its session's
    /// line and the resources it holds, then the tool itself, stopped at the deadline or on
    /// cancellation.
    async fn run_scheduled(
        &self,
        call: Prepared,
        ctx: CallContext,
        ticket: Ticket,
        arrived: tokio::time::Instant,
    ) -> (ToolOutput, AuditOutcome) {
        let Prepared { name, tool, args } = call;
        let name = name.as_str();
        let meta = tool.meta().clone();
        let footprint = tool.footprint(&args);
        // A tool that takes its limit from its arguments stops itself at the deadline and
        // gets a moment more to report; others are stopped at the deadline.
        let (timeout, overrun) = match footprint.timeout {
            Some(own) => (own.min(self.limits.max_timeout), SELF_STOP_GRACE),
            None => (
                meta.timeout
                    .unwrap_or(self.limits.default_timeout)
                    .min(self.limits.max_timeout),
                Duration::ZERO,
            ),
        };
        let deadline = arrived + timeout;
        // A child token: a timeout stops this call only, never the caller's session or the
        // rest of its batch, while the caller cancelling still reaches the tool.
        let cancel = ctx.cancel.child_token();
        let resources = footprint.resources;
        let holding = (meta.concurrency == Concurrency::Mutating && !resources.is_empty())
            .then(|| Holding::new(&self.resources, resources, cancel.clone()));
        // Asking the client lets go of the call's resources until it answers (`away.rs`).
        let link = match (&holding, ctx.client()) {
            (Some(holding), Some(client)) => Some(AwayLink::wrap(client, holding)),
            _ => ctx.link.clone(),
        };
        let ctx = CallContext {
            cancel: cancel.clone(),
            deadline: Some(deadline),
            link,
            ..ctx
        };
        if cancel.is_cancelled() {
            let text = format!("error: `{name}` was cancelled before it started");
            return (ToolOutput::error(text), AuditOutcome::Cancelled);
        }
        let waiting_on = Mutex::new(String::new());
        let started = AtomicBool::new(false);
        let work = async {
            let ticket = ticket;
            let _ends = holding.clone().map(Ends);
            match meta.concurrency {
                // Acts on running work (a job's output, a kill): never waits behind it.
                Concurrency::Detached => drop(ticket),
                Concurrency::ReadOnly => ticket.wait(name, Turn::Read, &waiting_on).await,
                Concurrency::Mutating => ticket.wait(name, Turn::Write, &waiting_on).await,
            }
            if let Some(holding) = &holding {
                holding.take(&waiting_on).await;
            }
            started.store(true, Ordering::Release);
            // `call` runs inside the guarded future, so a handler that panics before
            // returning its future (a hand-written DynTool) is caught like one that panics
            // while running.
            // The resources are let go and the ticket leaves the line when this ends.
            AssertUnwindSafe(async move { tool.call(args, ctx).await })
                .catch_unwind()
                .await
        };
        tokio::pin!(work);
        let stopped = tokio::select! {
            r = &mut work => Ok(r),
            () = cancel.cancelled() => Err(Stop::Cancelled),
            () = tokio::time::sleep_until(deadline) => Err(Stop::TimedOut),
        };
        let stopped = match stopped {
            // Started, and stops itself at the deadline: let it hand back its own result.
            Err(Stop::TimedOut) if !overrun.is_zero() && started.load(Ordering::Acquire) => {
                tokio::select! {
                    r = &mut work => Ok(r),
                    () = cancel.cancelled() => Err(Stop::Cancelled),
                    () = tokio::time::sleep_until(deadline + overrun) => Err(Stop::TimedOut),
                }
            }
            other => other,
        };
        match stopped {
            Ok(outcome) => {
                let output = explain_outcome(name, outcome);
                let outcome = match output.is_error {
                    true => AuditOutcome::ToolError,
                    false => AuditOutcome::Ok,
                };
                (output, outcome)
            }
            Err(stop) if !started.load(Ordering::Acquire) => {
                // It never ran: nothing to clean up, and nothing changed.
                let on = waiting_on
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone();
                let outcome = stop.outcome();
                (explain_unstarted(name, stop, timeout, &on), outcome)
            }
            Err(stop) => {
                // Tell the tool, then give it a moment to clean up (kill a process group,
                // remove a temp file) before its future is dropped.
                cancel.cancel();
                let _ = tokio::time::timeout(CANCEL_GRACE, &mut work).await;
                let outcome = stop.outcome();
                (explain_stopped(name, stop, timeout, &meta), outcome)
            }
        }
    }

    /// Runs a model turn's calls in their session's line: read-only calls together, mutating
    /// ones alone and in call order, results in call order; then the turn's budget over all
    /// of them together.
    pub async fn call_batch(&self, calls: Vec<Call>, ctx: &CallContext) -> Vec<ToolOutput> {
        self.call_batch_timed(calls, ctx)
            .await
            .into_iter()
            .map(|(output, _)| output)
            .collect()
    }

    /// [`Dispatcher::call_batch`], with how long each call took from its arrival (waiting
    /// for its turn included) to its result, for a display of the turn.
    pub fn call_batch_timed<'a>(
        &'a self,
        calls: Vec<Call>,
        ctx: &'a CallContext,
    ) -> futures::future::BoxFuture<'a, Vec<(ToolOutput, Duration)>> {
        Box::pin(async move {
            let snapshot = self.snapshot();
            let gate = ctx.session.order();
            let called: Vec<String> = calls.iter().map(|c| c.name.clone()).collect();
            let injected = injected_args(ctx);
            // Proxied calls are grouped, budgeted and ordered as their targets; every call takes
            // its place in line now, in call order.
            let calls: Vec<(String, Result<Prepared, Box<ToolOutput>>, Ticket)> = calls
                .into_iter()
                .map(|c| {
                    let prepared = prepare(&c.name, c.args, &snapshot, &injected);
                    let name = prepared.as_ref().map_or(c.name, |p| p.name.clone());
                    (name, prepared, gate.ticket())
                })
                .collect();
            let metas: Vec<Option<ToolMeta>> = calls
                .iter()
                .map(|(_, prepared, _)| prepared.as_ref().ok().map(|p| p.tool.meta().clone()))
                .collect();
            let names: Vec<String> = calls.iter().map(|(name, _, _)| name.clone()).collect();
            let timed = futures::future::join_all(calls.into_iter().map(
                |(_, prepared, ticket)| async move {
                    let started = tokio::time::Instant::now();
                    let ran = match prepared {
                        Ok(call) => self.run(call, ctx.clone(), ticket, &Known::default()).await,
                        Err(refused) => Ran::refused(*refused),
                    };
                    (ran, started.elapsed())
                },
            ))
            .await;
            let (mut results, took): (Vec<Ran>, Vec<Duration>) = timed.into_iter().unzip();
            let before: Vec<BeforeBudget> = results
                .iter()
                .map(|r| BeforeBudget::of(&r.output))
                .collect();
            let mut turn: Vec<(&str, Option<&ToolMeta>, &mut ToolOutput)> = names
                .iter()
                .zip(&metas)
                .zip(results.iter_mut())
                .map(|((n, m), r)| (n.as_str(), m.as_ref(), &mut r.output))
                .collect();
            self.apply_budget(&mut turn, ctx.session.limits(), &ctx.session.tool_names());
            for (i, ran) in results.iter().enumerate() {
                let tool = metas[i].is_some().then_some(names[i].as_str());
                self.report(&ctx.session, &called[i], tool, ran, took[i], before[i]);
            }
            results
                .into_iter()
                .map(|ran| ran.output)
                .zip(took)
                .collect()
        })
    }
}

/// The fields the session's client adds to every call for its own use.
fn injected_args(ctx: &CallContext) -> Vec<String> {
    ctx.session
        .profile()
        .map(|p| p.injected_args.clone())
        .unwrap_or_default()
}

/// How a call was let through.
enum Authorized {
    /// By the policy: its time counts from its arrival.
    AsArrived,
    /// By the user, at this moment: its time counts from the answer.
    ByUserAt(tokio::time::Instant),
}

/// How long a cancelled or timed-out tool may take to notice and clean up.
const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// How long past its deadline a tool that stops itself (run_shell: SIGTERM, then SIGKILL
/// after its 1 s grace) may take to hand back its own result, with the output so far.
const SELF_STOP_GRACE: Duration = Duration::from_secs(3);

enum Stop {
    Cancelled,
    TimedOut,
}

impl Stop {
    fn outcome(&self) -> AuditOutcome {
        match self {
            Self::Cancelled => AuditOutcome::Cancelled,
            Self::TimedOut => AuditOutcome::Timeout,
        }
    }
}

/// The explaining stage, for a call stopped before it started: nothing ran, nothing changed.
fn explain_unstarted(name: &str, stop: Stop, timeout: Duration, waiting_on: &str) -> ToolOutput {
    ToolOutput::error(match stop {
        Stop::Cancelled => {
            format!("error: `{name}` was cancelled while waiting for {waiting_on}; it did not run")
        }
        Stop::TimedOut => format!(
            "error: `{name}` timed out after {} while waiting for {waiting_on}; it did not run — call it again once that has finished",
            human_duration(timeout)
        ),
    })
}

/// The explaining stage, for a call stopped while it ran.
fn explain_stopped(name: &str, stop: Stop, timeout: Duration, meta: &ToolMeta) -> ToolOutput {
    ToolOutput::error(match stop {
        Stop::Cancelled => format!("error: `{name}` was cancelled before it finished"),
        Stop::TimedOut => format!(
            "error: `{name}` timed out after {} and was stopped; {}",
            human_duration(timeout),
            timeout_hint(meta)
        ),
    })
}

/// The explaining stage, for a call that ran to its end: its result, or what its failure
/// means for the model.
fn explain_outcome(
    name: &str,
    outcome: Result<Result<ToolOutput, ToolError>, Box<dyn std::any::Any + Send>>,
) -> ToolOutput {
    match outcome {
        Err(panic) => {
            let what = panic_message(&panic);
            tracing::error!(tool = name, panic = %what, "tool handler panicked");
            ToolOutput::error(format!(
                "error: `{name}` failed internally ({what}); this is a toolgate bug — try different arguments or another tool"
            ))
        }
        Ok(Err(ToolError::InvalidArguments(msg))) => {
            ToolOutput::error(format!("error: invalid arguments for `{name}`: {msg}"))
        }
        Ok(Err(ToolError::Recoverable(msg))) => ToolOutput::error(format!("error: {msg}")),
        Ok(Err(ToolError::Fatal(msg))) => ToolOutput::fatal(format!(
            "error: `{name}` is unavailable: {msg}; do not retry it in this turn — use another tool or tell the user"
        )),
        Ok(Ok(output)) => output,
    }
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_owned()
    }
}

fn human_duration(d: Duration) -> String {
    if d.as_millis().is_multiple_of(1000) {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

/// What a model should do after a call ran out of time: a mounted server's tool depends on
/// that server, and a call that changes things may have done part of it.
fn timeout_hint(meta: &ToolMeta) -> &'static str {
    let mounted = meta.action.starts_with("mcp.");
    match (mounted, meta.concurrency == Concurrency::ReadOnly) {
        (true, true) => {
            "its MCP server did not answer in time (hung or overloaded); try again later or \
             use another tool (the server's tool_timeout_sec sets the limit)"
        }
        (true, false) => {
            "its MCP server did not answer in time, so it may or may not have taken effect; \
             check before calling it again (the server's tool_timeout_sec sets the limit)"
        }
        (false, true) => "narrow the request (a smaller path, limit or pattern) and try again",
        (false, false) => {
            "it may have partly taken effect; check the result before calling it again"
        }
    }
}
