//! `[audit]`: the audit log's settings (team mode; see docs/configuration.md).
//!
//! User layers only: a project's `.toolgate/config.toml` may not set anything here (see
//! [`crate::project`]), so a repository can neither turn the user's audit log off nor send
//! it elsewhere, nor make toolgate append to a file of its choosing.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Where `audit.path` sends lines to stdout instead of a file.
pub const AUDIT_STDOUT: &str = "-";

/// The audit log: one JSON line per tool call.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct AuditConfig {
    /// Where each tool call's line goes: an absolute file path (`~/` is your home folder), or
    /// `-` for stdout (refused by `serve` on stdio, whose stdout is the MCP transport); unset =
    /// no audit log. User config, `--config` and environment only.
    ///
    /// Relative paths are refused rather than resolved: against the project (the first root)
    /// they would scatter one log per project, and a log the user set up should not move
    /// with the folder toolgate was started in.
    #[schemars(example = &"~/.local/state/toolgate/audit.jsonl")]
    pub path: Option<PathBuf>,
    /// Also write each call's argument values (`args`); by default only their SHA-256
    /// digest is written, since arguments may hold file contents and secrets.
    pub arguments: bool,
    /// Rotate the file before it grows past this many bytes: `audit.jsonl` becomes
    /// `audit.jsonl.1`, and so on.
    ///
    /// 100 MiB: weeks of lines for one busy user (a line is ~400 bytes), small enough to open
    /// in a pager.
    pub max_bytes: u64,
    /// Rotated files kept (`.1` is the newest); the oldest beyond them is deleted. `0` keeps
    /// none: the file starts over when full.
    pub keep: usize,
}

impl Default for AuditConfig {
    fn default() -> Self {
        Self {
            path: None,
            arguments: false,
            max_bytes: 100 * 1024 * 1024,
            keep: 5,
        }
    }
}

impl AuditConfig {
    /// Whether lines go to stdout (`path = "-"`).
    pub fn writes_stdout(&self) -> bool {
        self.path
            .as_deref()
            .is_some_and(|p| p.as_os_str() == AUDIT_STDOUT)
    }
}
