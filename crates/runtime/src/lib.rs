//! toolgate's runtime, assembled from a [`toolgate_config::Config`].
//!
//! [`Runtime::new`] turns the loaded configuration into what every front end (`serve`, `call`,
//! `tools`, `run`/`chat`) shares: confinement roots, the tool registry with the built-in fs
//! and shell tools, the `skill` tool and the disclosure tools, the dispatcher with its
//! permission policy and budgets, the spill store, the mounted MCP servers (registered, trust
//! decided, not started), the client profiles and the audit log ([`AuditLog`], `[audit]`),
//! which the dispatcher writes one line to per call. Loading and layering stay in
//! `toolgate-config`; this crate only wires.

#![deny(missing_docs)]

mod assemble;
mod audit;
mod live;
mod secrets;

pub use assemble::Runtime;
pub use audit::{AuditLog, digest};
pub use live::{ConfigWatch, LoadConfig, ServerReload, watch_config};
pub use secrets::{mcp_sandbox, secret_paths, secret_variables, shell_sandbox};
