//! toolgate's result side (seed 000 s04): what happens to a result between the tool and the
//! model's eyes.
//!
//! - [`SpillStore`]: verbatim copies of outputs too big to show, named so they sort by time,
//!   written atomically, readable through `read_file`; cleaned only by reference (agent mode)
//!   or by a disk quota with least-recently-read eviction (server mode) — never by age.
//! - [`Budget`]: the per-result and per-turn budgets with the seed's largest-first rule; a
//!   spilled result becomes an excerpt (head-biased on success, tail-biased on failure) and a
//!   pointer with the three essentials: where, how big, how to get the rest.
//! - [`compress_log`]: importance-based log compression that runs before the budget; the
//!   original is spilled whenever it changes anything. [`LogCompressor`] runs it over a
//!   whole stream in bounded memory and fits the result to [`OutputSizes::log_chars`],
//!   folding the least important lines first.

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
pub use spill::{SpillFile, SpillStore, SpillStream, is_spill_name};
