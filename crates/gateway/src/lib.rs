//! toolgate's MCP gateway: the user's other MCP servers, mounted behind toolgate, isolated
//! and budgeted (SPEC "MCP", client side; seed 000 "MCP：动态挂载外部工具", going past the
//! seed's own limits: stdio *and* Streamable HTTP, tool lists refetched on `list_changed`
//! rather than discovered once, crashed servers restarted).
//!
//! - [`config`](McpServerConfig): `[mcp_servers.NAME]` (stdio `command`/`args`/`env`/`cwd`
//!   or Streamable HTTP `url`/`headers`/`bearer_token_env`; `enabled`,
//!   `startup_timeout_sec` = 15, `tool_timeout_sec` = 60, `enabled_tools`/`disabled_tools`)
//!   and `[mcp]` ([`GatewayConfig`]).
//! - [`discover`]: imports `~/.codex/config.toml`, `~/.claude/settings.json`,
//!   `.claude/settings.json` and `.mcp.json`, later overriding earlier, toolgate's own config
//!   last, each server remembering its file; a malformed file is reported, never fatal.
//! - [`Gateway`]: one registry provider per server. Servers start concurrently in the
//!   background; a server's tools appear as `mcp__<server>__<tool>` when it is ready (a
//!   registry invalidation, which the MCP server turns into an upstream `list_changed`). A
//!   server that fails, hangs, exits or writes garbage is marked failed with the reason and
//!   never blocks the others or `tools/list`; a crashed one fails its calls in flight at once
//!   and restarts with backoff on its next call. Every stdio server runs in its own process
//!   group, killed with it whatever happens.
//! - [`login`], [`TokenStore`]: MCP authorization (OAuth 2.1) for remote servers that need
//!   a login (`toolgate mcp login NAME`); such a server is `needs login` until a human has
//!   logged in, and starts by itself afterwards.
//! - Mounted tools are ordinary registry tools: the dispatcher validates their arguments
//!   against the server's schema, applies permissions by name (`mcp__github__*`) and by
//!   action (`mcp.read`, `mcp.write`), times them out (sending `notifications/cancelled`
//!   downstream), forwards progress, and passes their results through the output budget.

#![deny(missing_docs)]

mod auth;
mod catalog;
mod config;
mod connect;
mod convert;
mod gateway;
mod handler;
mod import;
mod launch;
mod lifecycle;
mod list;
mod mount;
mod naming;
mod proxy;
mod relay;
mod trust;

pub use auth::{
    AuthStatus, CredentialStoreMode, LoginError, LoginHandler, LoginOptions, OAuthConfig,
    StoreError, TokenStore, login,
};
pub use catalog::{CachedCatalog, CatalogCache};
pub use config::{
    DEFAULT_STARTUP_TIMEOUT_SEC, DEFAULT_TOOL_TIMEOUT_SEC, GatewayConfig, McpServerConfig,
    ServerSpec, Transport,
};
pub use gateway::{
    Gateway, GatewayLimits, MAX_MOUNTED_INSTRUCTIONS_CHARS, MAX_SERVER_INSTRUCTIONS_CHARS,
    ServerState, ServerStatus, describe_transport,
};
pub use import::{Discovered, ImportOptions, ImportProblem, NESTED_ENV, discover};
pub use naming::{MAX_NAME_LEN, assign_names, sanitize, server_prefix};
pub use trust::{LaunchTrust, Trust, TrustError, TrustStore, fingerprint, trust_command};
