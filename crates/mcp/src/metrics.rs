//! Prometheus metrics of `serve --http`, served at `/metrics` behind the same auth as `/mcp`
//! (`[server] metrics`, on by default): tool calls and their outcomes, latency, what the
//! output budget kept out of the conversation, sessions, and the mounted servers' health.
//!
//! Tool calls are labelled by server (`toolgate` for toolgate's own tools, the mounted
//! server's config name for `mcp__NAME__*`) and by tool; the latency histogram only by
//! server, so its series stay few however many tools are mounted. Only tools toolgate serves
//! get a label of their own: calls of any other name count under [`UNKNOWN_TOOL`], so a
//! caller cannot grow `/metrics` by making names up.
//!
//! The Prometheus registry is in builds with the `prometheus` feature (part of `team`); a
//! build without it has no [`Metrics`] value and `serve` refuses `[server] metrics = true`.

use std::sync::Arc;

#[cfg(feature = "prometheus")]
mod prometheus;
#[cfg(feature = "prometheus")]
pub use prometheus::Metrics;

#[cfg(not(feature = "prometheus"))]
mod off;
#[cfg(not(feature = "prometheus"))]
pub use off::Metrics;

/// Why there are no metrics: this build leaves the Prometheus registry out.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "`[server] metrics = true`, but this build of toolgate has no Prometheus metrics; install one that has (`cargo install toolgate --features team`) or remove the setting"
)]
pub struct NoMetrics;

/// Where a mounted server is, for `toolgate_mounted_server_up` and its tool count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerHealth {
    /// Config name.
    pub name: String,
    /// Lifecycle state in one word: `ready`, `starting`, `not_started`, `failed`,
    /// `needs_login`, `untrusted`, `disabled`, `name_clash`.
    pub state: &'static str,
    /// Tools mounted from it.
    pub tools: usize,
}

/// The `tool` label of calls of a tool toolgate does not serve.
pub(crate) const UNKNOWN_TOOL: &str = "unknown";

/// Reads the mounted servers' health at each scrape.
pub type HealthSource = Arc<dyn Fn() -> Vec<ServerHealth> + Send + Sync>;
