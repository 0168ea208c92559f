//! toolgate's configuration (docs/configuration.md is the user's reference).
//!
//! Layers, lowest first: built-in defaults, user `~/.config/toolgate/config.toml`, project
//! `.toolgate/config.toml`, an explicit `--config FILE`, `TOOLGATE_*` environment variables
//! (`__` separates nesting: `TOOLGATE_READ__MAX_LINES=500`), command-line flags. Every value
//! remembers which layer it came from ([`Loaded::provenance`]).
//!
//! Assembly-time settings (roots, permissions, render budget) decide which tools exist and how
//! they are rendered; runtime settings (timeouts, limits) never enter a model request. This
//! crate is data and loading only: `toolgate-runtime` assembles the tools, dispatcher and
//! gateway from a [`Config`].
//!
//! [`reference`] renders every key with its default and its explanation (the first paragraph
//! of the field's doc comment): docs/configuration.md holds its output, and
//! `toolgate config reference` prints it.

#![deny(missing_docs)]

mod audit;
mod check;
mod error;
mod load;
mod permissions;
mod project;
mod rate_limits;
mod reference;
mod telemetry;

pub use audit::{AUDIT_STDOUT, AuditConfig};
pub use check::{FileKind, FileReport, check_files};
pub use error::ConfigError;
pub use load::{
    Config, DisclosureFlag, DispatchConfig, Flags, LoadOptions, Loaded, RenderConfig, SECRET_KEYS,
    ServerAuthConfig, ServerConfig, load,
};
pub use permissions::PermissionsConfig;
pub use rate_limits::RateLimitConfig;
pub use reference::{reference, schema, undocumented_keys};
pub use telemetry::TelemetryConfig;
