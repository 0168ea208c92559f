//! toolgate's tool model: the stations a tool passes from code to the model's eyes.
//!
//! - `spec`: declaration — the model-facing [`ToolSpec`] and the host-facing [`ToolMeta`],
//!   kept apart so host fields never reach a model request.
//! - `tool`: the typed [`Tool`] trait (arguments and schema from one Rust type) and its
//!   erased form [`DynTool`].
//! - `registry`: registration and invalidation — layers, scopes, snapshots, generation
//!   numbers.
//! - `permission`: filtering by policy.
//! - `render`: the model-facing tool arrays, byte-deterministic, with schemas every major
//!   client accepts.
//! - [`Session`]: what a call knows of its session (order, end, approver, client profile and
//!   link, identity), built by every front end through one constructor.
//! - `profile`: the last hop — what the client in front does to a result, per session.
//! - `dispatch`: running a call in stages (arguments, authorization, scheduling, running,
//!   explaining failures), where every failure becomes information for the model; each
//!   answered call is reported to an [`AuditSink`] (`audit`) when one is set;
//!   `schedule` decides who waits for whom (per-session order, per-resource locks).
//! - [`disclosure`]: progressive disclosure — direct and deferred tools, `search_tool`,
//!   `run_tool`, byte-stable tool arrays per protocol.
//!
//! - [`UserDirs`]: the user's home, config, cache, data and state folders, found once the
//!   XDG way (empty or relative values ignored) for every crate.
//!
//! ARCHITECTURE.md names the steps of a tool call and the files of each.
//!
//! # Example: declare, register, render, dispatch
//!
//! One Rust type gives a tool its arguments' parsing and its input schema; the registry
//! holds it behind a provider; the dispatcher runs calls and turns every failure into a
//! result the model can act on.
//!
//! ```
//! use std::sync::Arc;
//!
//! use serde::Deserialize;
//! use toolgate_core::{
//!     CallContext, Concurrency, DispatchLimits, Dispatcher, Policy, Protocol, RawArgs,
//!     Registry, RenderOptions, Scope, StaticProvider, Tool, ToolError, ToolMeta, ToolOutput,
//!     TypedTool, render_tools,
//! };
//!
//! /// Arguments of `shout`.
//! #[derive(Deserialize, schemars::JsonSchema)]
//! #[serde(deny_unknown_fields)]
//! struct ShoutArgs {
//!     /// Text to repeat in capitals.
//!     text: String,
//! }
//!
//! struct Shout;
//!
//! impl Tool for Shout {
//!     type Args = ShoutArgs;
//!     type Output = ();
//!
//!     fn name(&self) -> &str {
//!         "shout"
//!     }
//!     fn description(&self) -> &str {
//!         "Repeat the text in capitals."
//!     }
//!     fn meta(&self) -> ToolMeta {
//!         ToolMeta {
//!             concurrency: Concurrency::ReadOnly,
//!             action: "demo.shout".to_owned(),
//!             ..ToolMeta::default()
//!         }
//!     }
//!     async fn call(&self, args: ShoutArgs, _ctx: CallContext) -> Result<ToolOutput, ToolError> {
//!         Ok(ToolOutput::text(args.text.to_uppercase()))
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Register: a provider in the global layer (`None`), priority 0.
//! let registry = Arc::new(Registry::new());
//! let provider = StaticProvider::new("demo", vec![TypedTool::erased(Shout)]);
//! registry.register(None, Arc::new(provider), 0)?;
//!
//! // Render: the array a model request carries, with the schema derived from `ShoutArgs`.
//! let snapshot = registry.snapshot(&Scope::global());
//! let tools = render_tools(
//!     snapshot.tools.values().map(|t| t.as_ref()),
//!     Protocol::OpenAi,
//!     &RenderOptions::default(),
//! );
//! assert_eq!(tools[0]["function"]["name"], "shout");
//! assert_eq!(tools[0]["function"]["parameters"]["required"][0], "text");
//!
//! // Dispatch: a good call, then mistakes that come back as results, not panics.
//! let dispatcher = Dispatcher::new(
//!     registry,
//!     Scope::global(),
//!     Policy::allow_all(),
//!     DispatchLimits::default(),
//! );
//! let args = RawArgs::Text(r#"{"text": "hello"}"#.to_owned());
//! let out = dispatcher.call("shout", args, CallContext::unattended()).await;
//! assert_eq!(out.text, "HELLO");
//!
//! let out = dispatcher.call("shuot", RawArgs::Text("{}".to_owned()), CallContext::unattended()).await;
//! assert!(out.is_error);
//! assert!(out.text.contains("shout"), "the error names the closest tool: {}", out.text);
//!
//! let out = dispatcher.call("shout", RawArgs::Text("{}".to_owned()), CallContext::unattended()).await;
//! assert!(out.is_error);
//! assert!(out.text.contains("text"), "the error names the missing field: {}", out.text);
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]

mod approver;
mod audit;
mod canonical;
mod client;
mod context;
pub mod disclosure;
mod dispatch;
mod identity;
mod output;
mod permission;
mod profile;
mod rate_limit;
mod registry;
mod render;
mod result_budget;
mod schedule;
mod session;
mod spec;
mod tool;
pub mod trace;
mod user_dirs;

pub use approver::{ApprovalRequest, Approver};
pub use audit::{AskAnswer, AuditDecision, AuditOutcome, AuditRecord, AuditSink, ResultSize};
pub use canonical::{canonical_json, civil_from_days};
pub use client::{AskError, ClientAsk, ClientLink};
pub use context::{CallContext, Progress, ProgressSink};
pub use disclosure::{Disclosure, DisclosureMode, DisclosureSettings, ExposureMode};
pub use dispatch::{Answered, Call, DispatchLimits, Dispatcher, RawArgs};
pub use identity::Identity;
pub use output::{Media, SpillKind, SpillRef, ToolOutput, Truncation, TruncationReason};
pub use permission::{Decision, Policy, PolicyError, Verdict};
pub use profile::{
    ClientLimits, ClientProfile, ClientProfileConfig, ClientProfiles, MIN_CLIENT_CHARS, ToolNames,
};
pub use rate_limit::{Limited, RateLimitError, RateLimits};
pub use registry::{
    Absence, ProviderError, Registry, RegistryError, Scope, Snapshot, StaticProvider, ToolProvider,
    Visibility, validate_tool,
};
pub use render::{Protocol, RenderOptions, portable_schema, render_tools, render_tools_bytes};
pub use result_budget::{ResultBudget, TurnResult};
pub use schedule::{Footprint, OrderGate, Resource, ResourceLocks, Ticket};
pub use session::{Approval, Extensions, Session, SessionInit};
pub use spec::{Concurrency, DisclosureHint, ToolMeta, ToolSpec, schema_for};
pub use tool::{DynTool, Tool, ToolError, TypedTool, run_blocking, with_causes};
pub use user_dirs::{MissingUserDir, UserDir, UserDirs};

// The README's library example, run by `cargo test --doc` like the examples above.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeExamples;
