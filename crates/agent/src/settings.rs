//! `[agent]`: the loop's limits, with documented defaults.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The agent loop's settings (`[agent]` in config).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct AgentSettings {
    /// Provider used without `--provider`: a `[providers.NAME]`, `openai` or `anthropic`.
    /// Unset by default: openai, or anthropic if only its key is set.
    #[schemars(example = &"openai")]
    pub provider: Option<String>,
    /// Model requests per task (`--max-turns`).
    ///
    /// Default 50: enough for a real coding task, few enough that a model stuck in a loop
    /// stops within minutes.
    pub max_turns: u32,
    /// The model's window when `[providers.NAME] context_tokens` does not say.
    ///
    /// Default 128,000, the common window of current models.
    pub context_tokens: u64,
    /// Compact when the prompt reaches this share of the window, in percent.
    ///
    /// Default 80: room for one more turn of results (200,000 characters, about 50,000 tokens,
    /// at most — the per-turn budget) in a 256K window, and for the summary.
    pub compact_percent: u8,
    /// Newest messages kept word for word after compaction, in percent of the window.
    pub keep_percent: u8,
    /// The system prompt. Default: a short coding-agent prompt naming the project root.
    ///
    /// The default is [`crate::DEFAULT_SYSTEM_PROMPT`] with the project root. It is the start
    /// of the cached prefix, so it must not change within a session.
    pub system_prompt: Option<String>,
    /// Where transcripts are saved (relative to the project root, or absolute); user layers
    /// only. Default: `$XDG_DATA_HOME/toolgate/sessions/<project>-<hash>`
    /// (`~/.local/share/…`).
    ///
    /// The default folder, one per project, is [`crate::project_sessions_dir`].
    pub sessions_dir: Option<PathBuf>,
}

impl Default for AgentSettings {
    fn default() -> Self {
        Self {
            provider: None,
            max_turns: 50,
            context_tokens: 128_000,
            compact_percent: 80,
            keep_percent: 25,
            system_prompt: None,
            sessions_dir: None,
        }
    }
}
