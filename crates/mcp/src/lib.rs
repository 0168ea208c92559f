//! toolgate's MCP server: every registry tool over stdio or Streamable HTTP, on `rmcp`.
//!
//! - [`ToolgateServer`]: the MCP handler — `tools/list` rendered from the registry snapshot
//!   (station 5), `tools/call` through the dispatcher, `structuredContent` that always carries
//!   the full model text, progress for long calls, cancellation, `list_changed` on every
//!   registry generation change, logging. Optionally prompts and resources from a
//!   [`PromptSource`] and a [`ResourceSource`] (skills are served as prompts), with
//!   completion of their arguments.
//! - [`McpClient`]: the session's client as a tool sees it — log messages, and the peer for
//!   sampling and elicitation.
//! - [`serve_stdio`] and [`serve_http`]: the two transports. HTTP binds loopback by default,
//!   validates Host and Origin and can require a bearer token (SPEC "Security model").

mod client;
mod convert;
mod disclosure;
mod extras;
mod http;
mod notify;
mod server;
mod stdio;

pub use client::{LogLevel, McpClient};
pub use convert::{call_result, has_output_schema};
pub use extras::{PromptArguments, PromptSource, ResourceSource, SourceError};
pub use http::{DEFAULT_MAX_SESSIONS, HttpError, HttpOptions, http_router, serve_http};
pub use server::{InstructionSource, ToolgateServer};
pub use stdio::{MAX_LINE_BYTES, serve_stdio, serve_streams};
