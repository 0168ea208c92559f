//! toolgate's MCP server: every registry tool over stdio or Streamable HTTP, on `rmcp`.
//!
//! - [`ToolgateServer`]: the MCP handler — `tools/list` rendered from the registry snapshot
//!   (rendering), `tools/call` through the dispatcher, `structuredContent` that always
//!   carries the full model text, progress for long calls, cancellation, `list_changed` on
//!   every registry generation change, logging. Optionally prompts and resources from a
//!   [`PromptSource`] and a [`ResourceSource`] (skills are served as prompts), with
//!   completion of their arguments.
//! - [`McpClient`]: the session's client as a tool sees it — log messages, and the peer for
//!   sampling and elicitation.
//! - [`serve_stdio`] and [`serve_http`]: the two transports. HTTP binds loopback by default,
//!   validates Host and Origin and can require a bearer token.
//!
//! # Example: a registry served over MCP
//!
//! [`serve_stdio`] serves on stdin/stdout; [`serve_streams`] on any byte streams, here an
//! in-memory pipe with a client that speaks raw JSON-RPC lines.
//!
//! ```
//! use std::sync::Arc;
//!
//! use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
//! use toolgate_core::{
//!     CallContext, DispatchLimits, Dispatcher, Policy, Registry, RenderOptions, Scope,
//!     StaticProvider, Tool, ToolError, ToolMeta, ToolOutput, TypedTool,
//! };
//! use toolgate_mcp::{ToolgateServer, serve_streams};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct AddArgs {
//!     a: i64,
//!     b: i64,
//! }
//!
//! struct Add;
//!
//! impl Tool for Add {
//!     type Args = AddArgs;
//!     type Output = ();
//!     fn name(&self) -> &str {
//!         "add"
//!     }
//!     fn description(&self) -> &str {
//!         "Add two integers."
//!     }
//!     fn meta(&self) -> ToolMeta {
//!         ToolMeta::default()
//!     }
//!     async fn call(&self, args: AddArgs, _ctx: CallContext) -> Result<ToolOutput, ToolError> {
//!         Ok(ToolOutput::text((args.a + args.b).to_string()))
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let registry = Arc::new(Registry::new());
//! registry.register(None, Arc::new(StaticProvider::new("demo", vec![TypedTool::erased(Add)])), 0)?;
//! let dispatcher =
//!     Dispatcher::new(registry, Scope::global(), Policy::allow_all(), DispatchLimits::default());
//! let server = ToolgateServer::new(Arc::new(dispatcher), RenderOptions::default(), String::new());
//!
//! let (client, server_end) = tokio::io::duplex(64 * 1024);
//! let (server_in, server_out) = tokio::io::split(server_end);
//! let serving = tokio::spawn(serve_streams(server, server_in, server_out));
//! let (client_in, mut client_out) = tokio::io::split(client);
//! let mut lines = BufReader::new(client_in).lines();
//!
//! for request in [
//!     r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"doc","version":"1"}}}"#,
//!     r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
//!     r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}"#,
//! ] {
//!     client_out.write_all(format!("{request}\n").as_bytes()).await?;
//! }
//! let result = loop {
//!     let Some(line) = lines.next_line().await? else { panic!("the server hung up") };
//!     let message: serde_json::Value = serde_json::from_str(&line)?;
//!     if message["id"] == 2 {
//!         break message["result"].clone();
//!     }
//! };
//! assert_eq!(result["content"][0]["text"], "5");
//! assert_eq!(result["isError"], false);
//!
//! drop(client_out); // end of input ends the session
//! drop(lines);
//! serving.await??;
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]

mod client;
mod convert;
mod disclosure;
mod extras;
mod http;
mod metrics;
mod notify;
mod rounds;
mod server;
mod stdio;

pub use client::{LogLevel, McpClient};
pub use convert::{call_result, has_output_schema};
pub use extras::{
    PromptArguments, PromptSource, ResourceSource, SourceError, UpdateLease, completion,
};
pub use http::{
    DEFAULT_MAX_SESSIONS, HEALTH_PATH, HttpError, HttpOptions, ListenerLimits, OAuthConfigError,
    OAuthLimits, OAuthSettings, http_router, serve_http, serve_http_on,
};
pub use metrics::{HealthSource, Metrics, NoMetrics, ServerHealth};
pub use rounds::{MAX_PARKED, ROUND_TTL};
pub use server::{InstructionSource, RootsChanged, ToolgateServer};
pub use stdio::{MAX_LINE_BYTES, serve_stdio, serve_streams};
