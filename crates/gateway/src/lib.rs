//! toolgate's MCP gateway: the user's other MCP servers, mounted behind toolgate, isolated
//! and budgeted (MCP's client side, dynamically mounted: stdio *and* Streamable HTTP, tool
//! lists refetched on `list_changed` rather than discovered once, crashed servers
//! restarted).
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
//!   a login (`toolgate mcp login NAME`), the client of `toolgate-oauth` with the gateway's
//!   trust check; such a server is `needs login` until a human has logged in, and starts by
//!   itself afterwards.
//! - [`Gateway::builder`]: what a gateway is built with (the catalog cache, the token store,
//!   a [`LoginHandler`], the [`WebLogins`] of `serve --http`), all given before it exists.
//! - Mounted tools are ordinary registry tools: the dispatcher validates their arguments
//!   against the server's schema, applies permissions by name (`mcp__github__*`) and by
//!   action (`mcp.read`, `mcp.write`), times them out (sending `notifications/cancelled`
//!   downstream), forwards progress, and passes their results through the output budget.
//!
//! # Example: mounting a Streamable HTTP server
//!
//! The server mounted here is toolgate's own MCP server on loopback, offering one tool;
//! any MCP server, stdio (`command`) or HTTP (`url`), mounts the same way.
//!
//! ```
//! use std::sync::Arc;
//!
//! use futures::future::BoxFuture;
//! use serde_json::{Map, Value, json};
//! use tokio_util::sync::CancellationToken;
//! use toolgate_core::{
//!     CallContext, DispatchLimits, Dispatcher, DynTool, Policy, RawArgs, Registry,
//!     RenderOptions, Scope, StaticProvider, ToolError, ToolMeta, ToolOutput, ToolSpec,
//! };
//! use toolgate_gateway::{Discovered, Gateway, GatewayLimits, McpServerConfig, ServerSpec};
//! use toolgate_mcp::{DEFAULT_MAX_SESSIONS, HttpOptions, ListenerLimits, ToolgateServer, serve_http};
//!
//! /// `echo`, written against the erased trait (no schemars type at hand).
//! struct Echo(ToolSpec, ToolMeta);
//!
//! impl DynTool for Echo {
//!     fn spec(&self) -> &ToolSpec {
//!         &self.0
//!     }
//!     fn meta(&self) -> &ToolMeta {
//!         &self.1
//!     }
//!     fn call(&self, args: Value, _: CallContext) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
//!         Box::pin(async move { Ok(ToolOutput::text(args["text"].as_str().unwrap_or_default())) })
//!     }
//! }
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Upstream: a registry with `echo`, served over HTTP on a free loopback port.
//! let schema: Map<String, Value> = serde_json::from_value(json!({"type": "object"}))?;
//! let echo = Echo(
//!     ToolSpec { name: "echo".into(), description: "Say it back.".into(), input_schema: Arc::new(schema) },
//!     ToolMeta::default(),
//! );
//! let upstream = Arc::new(Registry::new());
//! upstream.register(None, Arc::new(StaticProvider::new("demo", vec![Arc::new(echo)])), 0)?;
//! let dispatcher = Dispatcher::new(upstream, Scope::global(), Policy::allow_all(), DispatchLimits::default());
//! let server = ToolgateServer::new(Arc::new(dispatcher), RenderOptions::default(), String::new());
//! let options = HttpOptions {
//!     addr: "127.0.0.1:0".parse()?,
//!     token: None,
//!     oauth: None,
//!     allowed_origins: Vec::new(),
//!     allowed_hosts: Vec::new(),
//!     insecure_no_auth: false,
//!     max_sessions: DEFAULT_MAX_SESSIONS,
//!     metrics: None,
//!     public_url: None,
//!     web_logins: None,
//!     listener: ListenerLimits::default(),
//! };
//! let stop = CancellationToken::new();
//! let (bound, addr) = tokio::sync::oneshot::channel();
//! let serving = tokio::spawn(serve_http(server, options, stop.clone(), move |a| {
//!     let _ = bound.send(a);
//! }));
//! let addr = addr.await?;
//!
//! // Downstream: the gateway mounts it as `upstream`; its tool becomes `mcp__upstream__echo`.
//! let config = McpServerConfig { url: Some(format!("http://{addr}/mcp")), ..Default::default() };
//! let project = tempfile::tempdir()?;
//! let spec = ServerSpec::resolve("upstream", &config, "example".to_owned(), project.path());
//! let discovered = Discovered { servers: vec![spec], problems: Vec::new() };
//! let registry = Arc::new(Registry::new());
//! let gateway = Gateway::new(discovered, GatewayLimits::default(), &registry)?;
//! gateway.start_all().await;
//!
//! let tools = Dispatcher::new(registry, Scope::global(), Policy::allow_all(), DispatchLimits::default());
//! let args = RawArgs::Json(json!({"text": "through the gateway"}));
//! let out = tools.call("mcp__upstream__echo", args, CallContext::unattended()).await;
//! assert_eq!(out.text, "through the gateway");
//!
//! gateway.shutdown().await;
//! stop.cancel();
//! serving.await??;
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]

mod auth;
mod catalog;
mod config;
mod connect;
mod convert;
mod erased;
mod error;
mod failure;
mod gateway;
mod handler;
mod import;
mod launch;
mod lifecycle;
mod limits;
mod list;
mod mount;
mod naming;
mod ordered;
mod proxy;
mod relay;
mod roots;
mod sync;
mod trust;
mod verdict;

pub use auth::{LoginHandler, login};
pub use catalog::{CachedCatalog, CatalogCache};
pub use config::{
    CredentialStoreMode, DEFAULT_STARTUP_TIMEOUT_SEC, DEFAULT_TOOL_TIMEOUT_SEC, GatewayConfig,
    McpServerConfig, OAuthConfig, Opening, Prefix, ServerSpec, Transport,
};
pub use error::ServerError;
pub use gateway::{
    Followed, ForwardError, Gateway, LIST_RESOURCES, MAX_BLOB_CHARS,
    MAX_MOUNTED_INSTRUCTIONS_CHARS, MAX_SERVER_INSTRUCTIONS_CHARS, READ_RESOURCE, Reconciled,
    ResourceCollision, SaveBlob, ServerState, ServerStatus, describe_collisions,
    describe_transport, fit_prompt, fit_resource_contents, save_large_blobs,
};
pub use import::{Discovered, ImportOptions, ImportProblem, NESTED_ENV, discover, source_files};
pub use limits::{DISCOVER_WAIT, GatewayLimits};
pub use naming::{MAX_NAME_LEN, assign_names, sanitize, server_prefix};
pub use roots::ClientRoots;
pub use toolgate_oauth::{
    AuthStatus, CallbackError, LoginError, LoginOptions, LoginUrlError, SharedStoreUrlError,
    StoreError, TokenStore, WebLogins,
};
pub use trust::{TrustError, TrustStore, fingerprint, trust_command};
pub use verdict::{LaunchTrust, Trust};
