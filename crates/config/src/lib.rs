//! toolgate's configuration (seed 003 §10, SPEC "Config").
//!
//! Layers, lowest first: built-in defaults, user `~/.config/toolgate/config.toml`, project
//! `.toolgate/config.toml`, an explicit `--config FILE`, `TOOLGATE_*` environment variables
//! (`__` separates nesting: `TOOLGATE_READ__MAX_LINES=500`), command-line flags. Every value
//! remembers which layer it came from ([`Loaded::provenance`]).
//!
//! Assembly-time settings (roots, permissions, render budget) decide which tools exist and how
//! they are rendered; runtime settings (timeouts, limits) never enter a model request.

#![deny(missing_docs)]

mod assemble;
mod check;
mod load;
mod project;

pub use assemble::{Runtime, mcp_sandbox};
pub use check::{FileKind, FileReport, check_files};
pub use load::{
    Config, ConfigError, DisclosureFlag, DispatchConfig, Flags, LoadOptions, Loaded,
    PermissionsConfig, RenderConfig, SECRET_KEYS, ServerConfig, load,
};
