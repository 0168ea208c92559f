//! Limits on what one mounted server may bring in, and what its requests to the client
//! obey ([`GatewayLimits`]), shared by the gateway, its mounts and the tool-list reader.

use std::sync::Arc;
use std::time::Duration;

use crate::config::GatewayConfig;
use crate::roots::ClientRoots;

/// Limits on what one server may bring in.
#[derive(Debug, Clone)]
pub struct GatewayLimits {
    /// Most `tools/list` pages read from one server. Default 100 ([`GatewayConfig`]).
    pub max_list_pages: usize,
    /// Most tools mounted from one server. Default 10,000 ([`GatewayConfig`]).
    pub max_tools_per_server: usize,
    /// Largest `structuredContent` or embedded text resource passed on outside the text
    /// budget; larger ones are moved into the text, where the budget spills them. Default
    /// 50,000 characters, the per-result budget (`[budget] per_result_chars`).
    pub max_inline_chars: usize,
    /// The sandbox stdio servers start in (`[mcp] sandbox`). Default off.
    pub sandbox: Arc<toolgate_contain::Sandbox>,
    /// The project's folders, offered to servers as their roots (`roots/list`); none: no
    /// `roots` capability.
    pub roots: Vec<std::path::PathBuf>,
    /// What a server gets of the roots of the client whose call it serves. Default: the
    /// client's as given ([`ClientRoots::Relayed`]); the runtime cuts them to the
    /// configured roots when `roots` (or `--root`) gives them.
    pub client_roots: ClientRoots,
    /// The permission rules a server's requests to the client obey: `mcp.sample` and
    /// `mcp.elicit` (or the server's `mcp__NAME__*`) denied means refused. Default: all
    /// allowed.
    pub policy: Arc<toolgate_core::Policy>,
    /// How long a stdio server may leave `server/discover` unanswered before it is taken for
    /// a 2025 server that ignores unknown requests and opened with `initialize` on the same
    /// process (never more than a quarter of its `startup_timeout_sec`). A server that
    /// answers the probe, with a result or an error, never waits for it. Default 5 s
    /// ([`DISCOVER_WAIT`]).
    pub discover_wait: Duration,
}

/// Default of [`GatewayLimits::discover_wait`]: long enough for an interpreted 2026-07-28
/// server to load its SDK and answer on a busy machine (the Python SDK 2.3 test server,
/// `tests/interop/python/asking_server.py`, answered in 1.9–2.0 s from its start here), short
/// enough that a server ignoring the probe costs a few seconds of its start, not its whole
/// 60 s startup timeout (rmcp's own bound is 10 s). Servers that answer errors never wait.
pub const DISCOVER_WAIT: Duration = Duration::from_secs(5);

impl Default for GatewayLimits {
    fn default() -> Self {
        let config = GatewayConfig::default();
        Self {
            max_list_pages: config.max_list_pages,
            max_tools_per_server: config.max_tools_per_server,
            max_inline_chars: 50_000,
            sandbox: Arc::default(),
            roots: Vec::new(),
            client_roots: ClientRoots::default(),
            policy: Arc::default(),
            discover_wait: DISCOVER_WAIT,
        }
    }
}
