//! The `[permissions]` table, as every config layer writes it (the project's is kept apart,
//! see [`crate::project`]).

use serde::{Deserialize, Serialize};

/// Permission rules; each entry is a tool name, a glob (`mcp__github__*`) or an action
/// (`fs.write`), optionally followed by one condition on the caller's claims: `if` or
/// `unless` `sub`, `iss`, `group` or `scope` `= "VALUE"`. With no rules everything is allowed.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct PermissionsConfig {
    /// Always run, e.g. `["read_file", "fs.read"]`.
    pub allow: Vec<String>,
    /// Ask first; where nobody can be asked (serve, call without a TTY) = deny.
    pub ask: Vec<String>,
    /// Never run, e.g. `["fs.write", "mcp__github__*", "run_shell"]`.
    pub deny: Vec<String>,
    /// Let `write_file` / `edit_file` change `.toolgate/`, `.mcp.json`,
    /// `.claude/settings*.json`, `.codex/`, `.cursor/mcp.json` and the files trusted project
    /// MCP servers run (user layers only).
    ///
    /// A trusted server's fingerprint still changes, so it asks for trust again.
    pub allow_control_files: bool,
    /// `read_file` / `edit_file` / `write_file` refuse files with several names (off: pnpm,
    /// cargo's `target/`, git objects use hard links; a project file may turn it on).
    ///
    /// A hard link inside a root may be the same file as one outside it.
    pub refuse_hard_links: bool,
}
