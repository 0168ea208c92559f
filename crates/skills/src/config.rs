//! `[skills]` in toolgate's config.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Where skills come from and how their catalog is shown (`[skills]`).
///
/// Assembly-time settings: they decide what the model sees. `catalog_chars` follows Claude
/// Code, which cuts every MCP tool description at 2,048 characters (counted as JavaScript
/// does, in UTF-16 code units): a longer `skill` description would lose its tail silently.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct SkillsConfig {
    /// Whether skills are discovered at all. Default true.
    pub enabled: bool,
    /// Extra skill folders, searched after the project's and before the user's. Relative
    /// paths are taken from the project root; `~/` is the home folder.
    pub roots: Vec<PathBuf>,
    /// Most characters (UTF-16 code units) of the `skill` tool's whole description, the
    /// catalog included; never more than `render.description_budget`. Default 2,048.
    pub catalog_chars: usize,
    /// Seconds between full rescans, each compared with the watched state (a difference is
    /// logged and the rescan wins); 0 turns them off. Default 60.
    pub rescan_secs: u64,
    /// Whether the roots are watched, so added, renamed and deleted skills reach the
    /// catalog without a restart. Default true.
    pub watch: bool,
    /// How long a burst of file events must be quiet before the catalog is updated, in
    /// milliseconds. Default 200.
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
