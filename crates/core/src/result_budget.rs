//! The hook through which the result side (budgets, spill, compression) sees every result.
//!
//! The dispatcher owns no budget logic; it hands each turn's results to a [`ResultBudget`]
//! (implemented in `toolgate-budget`). In server mode every call is its own turn; in agent
//! mode all results of one model turn are passed together.

use crate::output::ToolOutput;
use crate::profile::{ClientLimits, ToolNames};
use crate::spec::ToolMeta;

/// One result of a turn as the budget sees it.
#[derive(Debug)]
pub struct TurnResult<'a> {
    /// Tool name.
    pub tool: &'a str,
    /// The tool's host metadata (`spillable`, `log_like`).
    pub meta: &'a ToolMeta,
    /// The result, rewritten in place when spilled or compressed.
    pub output: &'a mut ToolOutput,
    /// What the session's client passes on whole; the budget keeps every result within it.
    pub limits: ClientLimits,
    /// How the session's client names toolgate's tools: a spill pointer names `read_file` so.
    pub names: ToolNames,
}

/// Applies output budgets to a turn's results.
pub trait ResultBudget: Send + Sync {
    /// Rewrites results in place so the turn fits its budgets; nothing is lost (spilled
    /// content stays readable through the pointer left in the result).
    fn apply(&self, turn: &mut [TurnResult<'_>]);
}
