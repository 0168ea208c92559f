//! The `[permissions]` table, as every config layer writes it (the project's is kept apart,
//! see [`crate::project`]).

use serde::{Deserialize, Serialize};

/// Permission rules; each entry is a tool name, a glob (`mcp__github__*`) or an action
/// (`fs.write`). With no rules everything is allowed.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct PermissionsConfig {
    /// Always run.
    pub allow: Vec<String>,
    /// Ask first; where nobody can be asked, refused.
    pub ask: Vec<String>,
    /// Never run.
    pub deny: Vec<String>,
    /// Let `write_file`, `edit_file` and other writing tools change toolgate's and its
    /// peers' control files (`.toolgate/`, `.mcp.json`, `.claude/settings*.json`,
    /// `.codex/`, `.cursor/mcp.json`) and the project files trusted MCP servers run (their
    /// trust fingerprint still changes, so such a server asks for trust again). Default
    /// false. Only the user's own config layers may set it.
    pub allow_control_files: bool,
    /// Make `read_file`, `edit_file` and `write_file` refuse regular files with more than
    /// one name (a hard link inside a root may be the same file as one outside it). Default
    /// false: build tools and package managers make hard links on purpose (pnpm's store,
    /// cargo's `target/`, git's objects). A project file may turn it on, not off.
    pub refuse_hard_links: bool,
}
