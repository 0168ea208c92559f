//! One `search_files` or `grep` call from start to end: its clock and budgets, its metadata,
//! the blocking run a cancellation stops, and the counts and footer of its result.

use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;
use toolgate_core::{
    CallContext, Concurrency, DisclosureHint, ToolError, ToolMeta, ToolOutput, TruncationReason,
    run_blocking,
};

use super::{CancelBridge, Scope, SearchLimits, SearchOutput, Stop};

/// The metadata of a search tool. Its dispatcher time limit is its own longest deadline plus
/// a grace period, so the tool's deadline fires first and partial results come back.
pub(crate) fn meta(limits: &SearchLimits, display: &str) -> ToolMeta {
    ToolMeta {
        timeout: Some(std::time::Duration::from_millis(
            limits.max_timeout_ms.saturating_add(5_000),
        )),
        concurrency: Concurrency::ReadOnly,
        action: "fs.read".to_owned(),
        spillable: true,
        idempotent: true,
        destructive: false,
        display: display.to_owned(),
        // A core tool: in the array every turn, never deferred.
        disclosure: DisclosureHint::Direct,
        ..ToolMeta::default()
    }
}

/// One search call's clock and budgets.
#[derive(Debug)]
pub(crate) struct Call {
    /// When the call started.
    pub(crate) started: Instant,
    /// The tool's budgets, with pages the session's client passes on whole.
    pub(crate) limits: SearchLimits,
    /// Most results on this page.
    pub(crate) limit: usize,
    /// Fires at the call's deadline or when it is cancelled.
    pub(crate) stop: Arc<Stop>,
}

impl Call {
    /// Starts a call that asked for `limit` results within `timeout_ms`.
    pub(crate) fn start(
        limits: &SearchLimits,
        ctx: &CallContext,
        limit: Option<u64>,
        timeout_ms: Option<u64>,
    ) -> Result<Self, ToolError> {
        let started = Instant::now();
        // A shorter page for a client that would cut a long one, so the cursor stays true.
        let mut limits = limits.clone();
        limits.max_payload_bytes = ctx.session.limits().page_bytes(limits.max_payload_bytes);
        let limit = limits.limit(limit)?;
        let stop = Stop::at(started + limits.timeout(timeout_ms)?);
        Ok(Self {
            started,
            limits,
            limit,
            stop,
        })
    }

    /// Runs `search` on a blocking thread; cancelling `cancel` stops it.
    pub(crate) async fn run(
        self,
        cancel: &CancellationToken,
        search: impl FnOnce(&Self) -> ToolOutput + Send + 'static,
    ) -> Result<ToolOutput, ToolError> {
        let _bridge = CancelBridge::new(cancel, &self.stop);
        run_blocking(move || search(&self)).await
    }

    /// The result of a page with `text`, cut for `reason` (if it was), that found `found`.
    /// The caller fills in what only it knows (cursor, page counts).
    pub(crate) fn output(
        &self,
        text: String,
        scope: &Scope,
        reason: Option<TruncationReason>,
        found: Found,
    ) -> SearchOutput {
        SearchOutput {
            text,
            path: scope.display.clone(),
            truncated: reason.is_some(),
            reason,
            total: found.exact.then_some(found.results),
            total_at_least: (!found.exact).then_some(found.results),
            total_files: found.files,
            total_is_lower_bound: !found.exact,
            long_line_files: None,
            cursor: None,
            returned: 0,
            files_searched: None,
            files_matched: None,
            scanned_count: 0,
            elapsed_ms: self.started.elapsed().as_millis() as u64,
        }
    }
}

/// How many results a search found from its page's start on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Found {
    /// Results (files, or matching lines).
    pub(crate) results: u64,
    /// Files with at least one result.
    pub(crate) files: u64,
    /// Whether the counts are exact, not a lower bound.
    pub(crate) exact: bool,
}

/// What a cut result's footer tells the model to do next: continue from `cursor`, or narrow
/// the search (`narrow` names what it can narrow).
pub(crate) fn next_step(cursor: Option<&str>, narrow: &str) -> String {
    match cursor {
        Some(c) => format!("continue with cursor \"{c}\", or narrow the {narrow}"),
        None => format!("narrow the {narrow}, or allow more time with timeout_ms"),
    }
}
