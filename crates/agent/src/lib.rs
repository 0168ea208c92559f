//! toolgate's agent loop (SPEC "Agent loop", seed 000 s02/s04/s15), in process over the
//! same runtime as the MCP server: no MCP hop for built-ins.
//!
//! - [`Agent`]: request → tool calls → dispatch through the runtime's
//!   [`toolgate_core::Dispatcher`] (read-only calls side by side, mutating ones in order)
//!   → one budget over all results of the turn (largest spilled first) → append → repeat,
//!   within `max_turns`, cancellable (tools get the cancellation).
//! - Disclosure's protocol fork (s15 ③): strict-name providers (Anthropic) get unmasked
//!   tools backfilled as one sorted block after the stable tools; the others call found
//!   tools through `run_tool` and their array never changes.
//! - Prompt caching: system prompt and stable tools are byte-identical across turns.
//! - [`Transcript`]: JSONL in the user's data folder, one folder per project
//!   ([`project_sessions_dir`]), mode 0600, resumable.
//! - Compaction near the context window keeps referenced spill files and deletes the
//!   session's others (s04 exercise 2).

mod agent;
mod compact;
mod settings;
mod store;
mod transcript;

pub use agent::{
    Agent, AgentError, CallRecord, DEFAULT_SYSTEM_PROMPT, Observer, Outcome, Progress, Status,
    Timing, Tools,
};
pub use settings::AgentSettings;
pub use store::{project_key, project_sessions_dir};
pub use transcript::{Record, Restored, Transcript, TranscriptError};
