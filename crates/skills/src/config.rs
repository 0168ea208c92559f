//! `[skills]` in toolgate's config.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Where skills come from and how their catalog is shown (`[skills]`).
///
/// Assembly-time settings: they decide what the model sees. `catalog_chars` follows Claude
/// Code, which cuts every MCP tool description at 2,048 characters (counted as JavaScript
/// does, in UTF-16 code units): a longer `skill` description would lose its tail silently.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SkillsConfig {
    /// Discover skills at all (a project file may turn them off, not on).
    pub enabled: bool,
    /// Extra skill folders, after the project's and before the user's; relative to the project
    /// root, `~/` = home (a project file: folders inside the project only).
    pub roots: Vec<PathBuf>,
    /// The `skill` tool's whole description, catalog included (UTF-16 code units; at least
    /// 512, at most `render.description_budget`).
    pub catalog_chars: usize,
    /// Full rescan compared with the watched state; 0 = none.
    ///
    /// A difference is logged and the rescan wins.
    pub rescan_secs: u64,
    /// Watch the roots (false: changes are seen at the next rescan).
    pub watch: bool,
    /// Quiet time after a burst of file events before updating, in milliseconds.
    pub debounce_ms: u64,
}

impl Default for SkillsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            roots: Vec::new(),
            catalog_chars: 2_048,
            rescan_secs: 60,
            watch: true,
            debounce_ms: 200,
        }
    }
}
