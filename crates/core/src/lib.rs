//! toolgate's tool model: the stations a tool passes from code to the model's eyes.
//!
//! - [`spec`]: declaration (station 1) — the model-facing [`ToolSpec`] and the host-facing
//!   [`ToolMeta`], kept apart so host fields never reach a model request.
//! - [`tool`]: the typed [`Tool`] trait (arguments and schema from one Rust type) and its
//!   erased form [`DynTool`].
//! - [`registry`]: registration and invalidation (stations 2 and 6) — layers, scopes,
//!   snapshots, generation numbers.
//! - [`permission`]: filtering by policy (station 4).
//! - [`render`]: the model-facing tool arrays (station 5), byte-deterministic, with schemas
//!   every major client accepts.
//! - [`Session`]: what a call knows of its session (order, end, approver, client profile and
//!   link, identity), built by every front end through one constructor.
//! - [`profile`]: the last hop — what the client in front does to a result, per session.
//! - [`dispatch`]: running a call, where every failure becomes information for the model;
//!   [`schedule`] decides who waits for whom (per-session order, per-resource locks).
//! - [`disclosure`]: progressive disclosure — direct and deferred tools, `search_tool`,
//!   `run_tool`, byte-stable tool arrays per protocol (seed 000 s15).
//!
//! - [`UserDirs`]: the user's home, config, cache, data and state folders, found once the
//!   XDG way (empty or relative values ignored) for every crate.
//!
//! The design follows seed 003 §1–§5 and seed 000 s02.

mod client;
mod context;
pub mod disclosure;
mod dispatch;
mod output;
mod permission;
mod profile;
mod registry;
mod render;
mod result_budget;
mod schedule;
mod session;
mod spec;
mod tool;
mod user_dirs;

pub use client::{AskError, ClientAsk, ClientLink};
pub use context::{CallContext, Progress, ProgressSink};
pub use disclosure::{Disclosure, DisclosureMode, DisclosureSettings, ExposureMode};
pub use dispatch::{Call, DispatchLimits, Dispatcher, RawArgs};
pub use output::{Media, SpillKind, SpillRef, ToolOutput, Truncation, TruncationReason};
pub use permission::{ApprovalRequest, Approver, Decision, Policy, PolicyError, Verdict};
pub use profile::{
    ClientLimits, ClientProfile, ClientProfileConfig, ClientProfiles, MIN_CLIENT_CHARS,
};
pub use registry::{
    Absence, ProviderError, Registry, RegistryError, Scope, Snapshot, StaticProvider, ToolProvider,
    Visibility, validate_tool,
};
pub use render::{Protocol, RenderOptions, portable_schema, render_tools, render_tools_bytes};
pub use result_budget::{ResultBudget, TurnResult};
pub use schedule::{Footprint, OrderGate, Resource, ResourceLocks, Ticket};
pub use session::{Approval, Extensions, Identity, Session, SessionInit};
pub use spec::{Concurrency, DisclosureHint, ToolMeta, ToolSpec, schema_for};
pub use tool::{DynTool, Tool, ToolError, TypedTool, run_blocking};
pub use user_dirs::{MissingUserDir, UserDir, UserDirs};
