//! `[agent]`: the loop's limits, with documented defaults.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The agent loop's settings (`[agent]` in config).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentSettings {
    /// Provider used without `--provider`: a `[providers.NAME]` or `openai` / `anthropic`.
    /// Default: `openai`, or `anthropic` when only `ANTHROPIC_API_KEY` is set.
    pub provider: Option<String>,
    /// Most model requests per task (`--max-turns`). Default 50: enough for a real coding
    /// task, few enough that a model stuck in a loop stops within minutes.
    pub max_turns: u32,
    /// The model's context window in tokens, when `[providers.NAME] context_tokens` does
    /// not say. Default 128,000, the common window of current models.
    pub context_tokens: u64,
    /// Compact the conversation when the prompt reaches this share of the context window,
    /// in percent. Default 80: room for one more turn of results (200,000 characters, about
    /// 50,000 tokens, at most — the per-turn budget) in a 256K window, and for the summary.
    pub compact_percent: u8,
    /// After compaction, the newest messages kept word for word, in percent of the context
    /// window. Default 25.
    pub keep_percent: u8,
    /// The system prompt; default: [`crate::DEFAULT_SYSTEM_PROMPT`] with the project root.
    /// It is the start of the cached prefix, so it must not change within a session.
    pub system_prompt: Option<String>,
    /// Where transcripts are saved (relative to the project root, or absolute); only the
    /// user's own config may set it. Default (`None`): the user's data folder, one folder
    /// per project ([`crate::project_sessions_dir`]).
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
