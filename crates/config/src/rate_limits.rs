//! `[rate_limits]`: calls per minute per caller, for all tools and per tool pattern.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Rate limits per caller (token buckets). Off by default. User layers only.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RateLimitConfig {
    /// Calls a minute each caller may make, all tools together; `0` = no limit. A caller
    /// is the identity `serve --http` authenticated, else the session. A call over it is
    /// not run: its result says when to retry.
    pub per_minute: u32,
    /// Calls a caller may make at once before the per-minute pace applies; `0` = as many as
    /// the limit itself (a full minute's share at once).
    pub burst: u32,
    /// Calls a minute each caller may make of the tools a name or glob matches, e.g.
    /// `"mcp__github__*" = 30` or `run_shell = 20`; checked before `per_minute`.
    #[schemars(example = &BTreeMap::from([("mcp__github__*".to_owned(), 30_u32)]))]
    pub tools: BTreeMap<String, u32>,
}
