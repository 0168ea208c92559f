//! toolgate's result side: what happens to a result between the tool and the model's eyes.
//!
//! - [`SpillStore`]: verbatim copies of outputs too big to show, named so they sort by time,
//!   written atomically, readable through `read_file`; cleaned only by reference (agent mode)
//!   or by a disk quota with least-recently-read eviction (server mode) — never by age.
//! - [`Budget`]: the per-result and per-turn budgets with the largest-first rule; a spilled
//!   result becomes an excerpt (head-biased on success, tail-biased on failure) and a
//!   pointer with the three essentials: where, how big, how to get the rest.
//! - [`compress_log`]: importance-based log compression that runs before the budget; the
//!   original is spilled whenever it changes anything. [`LogCompressor`] runs it over a
//!   whole stream in bounded memory and fits the result to [`OutputSizes::log_chars`],
//!   folding the least important lines first.
//!
//! # Example: a turn over budget
//!
//! The dispatcher hands each turn's results to a [`Budget`] (through
//! [`toolgate_core::ResultBudget`]); log-like output is compressed first, and whatever is
//! still over budget is spilled whole, leaving an excerpt and a pointer.
//!
//! ```
//! # fn main() -> std::io::Result<()> {
//! use std::sync::Arc;
//!
//! use toolgate_budget::{Budget, BudgetLimits, SpillStore};
//! use toolgate_core::{ClientLimits, ResultBudget, ToolMeta, ToolNames, ToolOutput, TurnResult};
//!
//! let project = tempfile::tempdir()?;
//! let limits = BudgetLimits::default(); // 50,000 characters per result, 200,000 per turn
//! let store = Arc::new(SpillStore::new(project.path().join("spill"), limits.spill_quota_bytes));
//! let budget = Budget::new(limits, Arc::clone(&store), project.path().to_owned());
//!
//! let meta = ToolMeta::default(); // spillable, not log-like
//! let mut small = ToolOutput::text("3 files changed");
//! let mut big = ToolOutput::text("row\n".repeat(20_000)); // 80,000 characters
//! budget.apply(&mut [
//!     TurnResult { tool: "git_stat", meta: &meta, output: &mut small, limits: ClientLimits::default(), names: ToolNames::default() },
//!     TurnResult { tool: "dump", meta: &meta, output: &mut big, limits: ClientLimits::default(), names: ToolNames::default() },
//! ]);
//!
//! // The small result is left alone; the big one became an excerpt and a pointer.
//! assert_eq!(small.text, "3 files changed");
//! assert!(big.text.len() < 3_000);
//! assert!(big.text.contains("read_file"), "the pointer says how to read the rest");
//! // Nothing is lost: the spill file holds the output verbatim.
//! let spill = &big.spills[0];
//! assert_eq!(std::fs::read_to_string(&spill.path)?, "row\n".repeat(20_000));
//! assert_eq!(spill.lines, 20_000);
//! # Ok(())
//! # }
//! ```
//!
//! Log compression on its own keeps the lines that matter and folds the rest:
//!
//! ```
//! use toolgate_budget::{CompressOptions, compress_log};
//!
//! let mut log = String::new();
//! for i in 0..200 {
//!     log.push_str(&format!("test case_{i} ... ok\n"));
//! }
//! log.push_str("test parse_header ... FAILED\n");
//! log.push_str("test result: FAILED. 200 passed; 1 failed\n");
//!
//! let compressed = compress_log(&log, &CompressOptions::default()).expect("worth compressing");
//! assert!(compressed.text.contains("test parse_header ... FAILED"));
//! assert!(compressed.text.contains("test result: FAILED. 200 passed; 1 failed"));
//! assert!(compressed.output_lines < 20, "{}", compressed.text);
//! ```

#![deny(missing_docs)]

mod budget;
mod compress;
mod spill;

pub use budget::{
    Budget, BudgetLimits, OutputSizes, SessionSizes, anchors_note, excerpt, group,
    referenced_spills, spill_ref,
};
pub use compress::{
    CompressOptions, Compressed, CompressedLog, LogCompressor, LogKind, LogOptions, clean_terminal,
    compress_file, compress_log, detect_kind, feed_file,
};
pub use spill::{SharedError, SharedSpills, SpillFile, SpillStore, SpillStream, is_spill_name};
