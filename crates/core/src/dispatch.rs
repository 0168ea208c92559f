//! Dispatch: running one call, where every failure is information (seed 000 s02).
//!
//! Unknown tool, arguments that are not JSON or do not fit the schema, a denied permission,
//! a handler error, a timeout and a panic all come back as an error [`ToolOutput`] whose text
//! says what to do next. Read-only calls run in parallel; mutating calls run alone, in the
//! order they arrived (a fair read/write lock).

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use serde_json::Value;
use tokio::sync::RwLock;

use crate::context::CallContext;
use crate::output::ToolOutput;
use crate::permission::{Decision, Policy};
use crate::registry::{Registry, Scope, Snapshot};
use crate::result_budget::{ResultBudget, TurnResult};
use crate::spec::Concurrency;
use crate::tool::{ToolError, json_kind};

/// Time limits applied by the dispatcher.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DispatchLimits {
    /// Used when a tool declares no timeout. Default 120 s, the shell's default (SPEC).
    pub default_timeout: Duration,
    /// No tool runs longer than this. Default 600 s, the shell's maximum (SPEC).
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

/// Runs calls against one scope of a registry under a permission policy.
pub struct Dispatcher {
    registry: Arc<Registry>,
    scope: Scope,
    policy: Policy,
    limits: DispatchLimits,
    order: RwLock<()>,
    budget: Option<Arc<dyn ResultBudget>>,
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
            order: RwLock::new(()),
            budget: None,
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

    /// Runs one call as a turn of its own (server mode: the per-result budget applies).
    /// Never fails: errors are results with `is_error`.
    pub async fn call(&self, name: &str, args: RawArgs, ctx: CallContext) -> ToolOutput {
        let snapshot = self.snapshot();
        let (target, args) = match unwrap_proxy(name, args, &snapshot) {
            Ok(call) => call,
            Err(output) => return output,
        };
        let name = target.as_str();
        let meta = snapshot.get(name).map(|t| t.meta().clone());
        let mut output = self.run_one(name, args, ctx, &snapshot).await;
        self.apply_budget(&mut [(name, meta.as_ref(), &mut output)]);
        output
    }

    fn apply_budget(
        &self,
        results: &mut [(&str, Option<&crate::spec::ToolMeta>, &mut ToolOutput)],
    ) {
        let Some(budget) = &self.budget else { return };
        let fallback = crate::spec::ToolMeta::default();
        let mut turn: Vec<TurnResult<'_>> = results
            .iter_mut()
            .map(|(tool, meta, output)| TurnResult {
                tool,
                meta: meta.unwrap_or(&fallback),
                output,
            })
            .collect();
        budget.apply(&mut turn);
    }

    /// Runs one call without applying the budget.
    async fn run_one(
        &self,
        name: &str,
        args: RawArgs,
        ctx: CallContext,
        snapshot: &Snapshot,
    ) -> ToolOutput {
        let (target, args) = match unwrap_proxy(name, args, snapshot) {
            Ok(call) => call,
            Err(output) => return output,
        };
        let name = target.as_str();
        let Some(tool) = snapshot.get(name).cloned() else {
            return unknown_tool(name, snapshot);
        };
        let args = match args {
            RawArgs::Json(v) => v,
            RawArgs::Text(text) if text.trim().is_empty() => Value::Object(Default::default()),
            RawArgs::Text(text) => match serde_json::from_str::<Value>(&text) {
                Ok(v) => v,
                Err(e) => {
                    return ToolOutput::error(format!(
                        "error: the arguments for `{name}` are not valid JSON ({e}); resend them as one JSON object, e.g. {{\"path\": \"README.md\"}}"
                    ));
                }
            },
        };
        if !(args.is_object() || args.is_null()) {
            return ToolOutput::error(format!(
                "error: the arguments for `{name}` must be a JSON object, got {}; resend them as {{\"field\": value, …}}",
                json_kind(&args)
            ));
        }

        let meta = tool.meta().clone();
        let verdict = self.policy.decide(name, &meta.action);
        match verdict.decision {
            Decision::Allow => {}
            Decision::Deny => {
                return ToolOutput::error(match verdict.rule {
                    Some(rule) => format!(
                        "error: permission denied: `{name}` ({}) is blocked by the rule {rule}; use another tool, or ask the user to change that rule",
                        meta.action
                    ),
                    None => format!("error: permission denied for `{name}`"),
                });
            }
            Decision::Ask => {
                // Nobody can be asked here (server mode, no TTY): ask acts as deny.
                let rule = verdict.rule.unwrap_or_default();
                return ToolOutput::error(format!(
                    "error: permission needed: `{name}` ({}) requires approval by the rule {rule}, and nobody can approve it here; ask the user to move it to `allow` in the [permissions] config",
                    meta.action
                ));
            }
        }

        let timeout = meta
            .timeout
            .unwrap_or(self.limits.default_timeout)
            .min(self.limits.max_timeout);
        let _guard = match meta.concurrency {
            Concurrency::ReadOnly => Guard::Read(self.order.read().await),
            Concurrency::Mutating => Guard::Write(self.order.write().await),
        };
        // A child token: a timeout stops this call only, never the caller's session or the
        // rest of its batch, while the caller cancelling still reaches the tool.
        let cancel = ctx.cancel.child_token();
        let ctx = CallContext {
            cancel: cancel.clone(),
            ..ctx
        };
        // `call` runs inside the guarded future, so a handler that panics before returning
        // its future (a hand-written DynTool) is caught like one that panics while running.
        if cancel.is_cancelled() {
            return ToolOutput::error(format!("error: `{name}` was cancelled before it started"));
        }
        let run = AssertUnwindSafe(async move { tool.call(args, ctx).await }).catch_unwind();
        tokio::pin!(run);
        let stopped = tokio::select! {
            r = &mut run => Ok(r),
            () = cancel.cancelled() => Err(Stop::Cancelled),
            () = tokio::time::sleep(timeout) => Err(Stop::TimedOut),
        };
        let outcome = match stopped {
            Ok(outcome) => outcome,
            Err(stop) => {
                // Tell the tool, then give it a moment to clean up (kill a process group,
                // remove a temp file) before its future is dropped.
                cancel.cancel();
                let _ = tokio::time::timeout(CANCEL_GRACE, &mut run).await;
                return ToolOutput::error(match stop {
                    Stop::Cancelled => format!("error: `{name}` was cancelled before it finished"),
                    Stop::TimedOut => format!(
                        "error: `{name}` timed out after {} and was stopped; narrow the request (a smaller path, limit or pattern) and try again",
                        human_duration(timeout)
                    ),
                });
            }
        };
        match outcome {
            Err(panic) => {
                let what = panic_message(&panic);
                tracing::error!(tool = name, panic = %what, "tool handler panicked");
                ToolOutput::error(format!(
                    "error: `{name}` failed internally ({what}); this is a toolgate bug — try different arguments or another tool"
                ))
            }
            Ok(Err(err)) => ToolOutput::error(match err {
                ToolError::InvalidArguments(msg) => {
                    format!("error: invalid arguments for `{name}`: {msg}")
                }
                ToolError::Recoverable(msg) => format!("error: {msg}"),
                ToolError::Fatal(msg) => format!("error: `{name}` failed: {msg}"),
            }),
            Ok(Ok(output)) => output,
        }
    }

    /// Runs a model turn's calls: consecutive read-only calls together, mutating ones alone,
    /// results in call order; then the turn's budget over all of them together.
    pub async fn call_batch(&self, calls: Vec<Call>, ctx: &CallContext) -> Vec<ToolOutput> {
        let snapshot = self.snapshot();
        // Proxied calls are grouped, budgeted and ordered as their targets.
        let calls: Vec<Call> = calls
            .into_iter()
            .map(|c| match unwrap_proxy(&c.name, c.args.clone(), &snapshot) {
                Ok((name, args)) => Call { name, args },
                Err(_) => c,
            })
            .collect();
        let metas: Vec<Option<crate::spec::ToolMeta>> = calls
            .iter()
            .map(|c| snapshot.get(&c.name).map(|t| t.meta().clone()))
            .collect();
        let names: Vec<String> = calls.iter().map(|c| c.name.clone()).collect();
        let mut results = Vec::with_capacity(calls.len());
        let mut group: Vec<Call> = Vec::new();
        for call in calls {
            let read_only = snapshot
                .get(&call.name)
                .is_some_and(|t| t.meta().concurrency == Concurrency::ReadOnly);
            if read_only {
                group.push(call);
                continue;
            }
            results.extend(
                self.run_group(std::mem::take(&mut group), ctx, &snapshot)
                    .await,
            );
            results.push(
                self.run_one(&call.name, call.args, ctx.clone(), &snapshot)
                    .await,
            );
        }
        results.extend(self.run_group(group, ctx, &snapshot).await);
        let mut turn: Vec<(&str, Option<&crate::spec::ToolMeta>, &mut ToolOutput)> = names
            .iter()
            .zip(&metas)
            .zip(results.iter_mut())
            .map(|((n, m), o)| (n.as_str(), m.as_ref(), o))
            .collect();
        self.apply_budget(&mut turn);
        results
    }

    async fn run_group(
        &self,
        group: Vec<Call>,
        ctx: &CallContext,
        snapshot: &Snapshot,
    ) -> Vec<ToolOutput> {
        futures::future::join_all(
            group
                .into_iter()
                .map(|c| async move { self.run_one(&c.name, c.args, ctx.clone(), snapshot).await }),
        )
        .await
    }
}

/// A call of a proxy (`run_tool`) as a call of its target; other calls pass through. The
/// target is then dispatched like any call: its permissions, timeout, concurrency class and
/// budget apply, never the proxy's (seed 000 s15 exercise 1).
fn unwrap_proxy(
    name: &str,
    args: RawArgs,
    snapshot: &Snapshot,
) -> Result<(String, RawArgs), ToolOutput> {
    let Some(proxy) = snapshot.get(name).filter(|t| is_proxy(t.as_ref())) else {
        return Ok((name.to_owned(), args));
    };
    let value = match args {
        RawArgs::Json(v) => v,
        RawArgs::Text(text) if text.trim().is_empty() => Value::Object(Default::default()),
        RawArgs::Text(text) => serde_json::from_str::<Value>(&text).map_err(|e| {
            ToolOutput::error(format!(
                "error: the arguments for `{name}` are not valid JSON ({e}); resend them as {{\"name\": \"<tool>\", \"input\": {{…}}}}"
            ))
        })?,
    };
    match proxy.forward(&value) {
        None => Ok((name.to_owned(), RawArgs::Json(value))),
        Some(Err(err)) => Err(ToolOutput::error(format!(
            "error: invalid arguments for `{name}`: {err}; send {{\"name\": \"<exact tool name>\", \"input\": {{…}}}}"
        ))),
        Some(Ok(fwd)) => {
            if snapshot
                .get(&fwd.name)
                .is_some_and(|t| is_proxy(t.as_ref()))
            {
                return Err(ToolOutput::error(format!(
                    "error: `{name}` cannot call `{}`; call the target tool through `{name}` directly",
                    fwd.name
                )));
            }
            Ok((fwd.name, RawArgs::Json(fwd.input)))
        }
    }
}

fn is_proxy(tool: &dyn crate::tool::DynTool) -> bool {
    tool.forward(&Value::Null).is_some()
}

/// How long a cancelled or timed-out tool may take to notice and clean up.
const CANCEL_GRACE: Duration = Duration::from_secs(2);

enum Stop {
    Cancelled,
    TimedOut,
}

enum Guard<'a> {
    Read(#[allow(dead_code)] tokio::sync::RwLockReadGuard<'a, ()>),
    Write(#[allow(dead_code)] tokio::sync::RwLockWriteGuard<'a, ()>),
}

fn unknown_tool(name: &str, snapshot: &Snapshot) -> ToolOutput {
    let mut scored: Vec<(f64, &str)> = snapshot
        .tools
        .keys()
        .map(|k| {
            (
                strsim::jaro_winkler(&name.to_lowercase(), &k.to_lowercase()),
                k.as_str(),
            )
        })
        // The disclosure entry points end in `_tool` like many misspellings do
        // (`no_such_tool`): suggest them only for a near miss of their own name.
        .filter(|(score, k)| {
            let entry_point = matches!(
                *k,
                crate::disclosure::SEARCH_TOOL | crate::disclosure::RUN_TOOL
            );
            *score > if entry_point { 0.9 } else { 0.7 }
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    let suggestions: Vec<String> = scored
        .iter()
        .take(3)
        .map(|(_, k)| format!("`{k}`"))
        .collect();
    let hint = if suggestions.is_empty() {
        let all: Vec<String> = snapshot
            .tools
            .keys()
            .take(20)
            .map(|k| format!("`{k}`"))
            .collect();
        format!("available tools: {}", all.join(", "))
    } else {
        format!("did you mean {}?", suggestions.join(", "))
    };
    ToolOutput::error(format!("error: unknown tool `{name}`; {hint}"))
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
