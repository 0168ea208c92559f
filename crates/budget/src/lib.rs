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
//!   original is spilled whenever it changes anything.

mod budget;
mod compress;
mod spill;

pub use budget::{Budget, BudgetLimits, excerpt, referenced_spills, spill_ref};
pub use compress::{CompressOptions, Compressed, clean_terminal, compress_log};
pub use spill::{SpillFile, SpillStore, SpillStream};
