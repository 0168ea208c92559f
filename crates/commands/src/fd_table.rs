//! Growing the descriptor table while the process is still single-threaded.
//!
//! The kernel grows a process's descriptor table (64, 128, 256, … slots) the first time a
//! descriptor past its end is opened, and in a process with more than one thread each growth
//! waits for an RCU grace period: milliseconds, for nothing. A fresh toolgate starts with the
//! 64 slots its parent left it (Claude Code, Codex, a Python harness), and a grep holds a
//! directory descriptor per folder level per walker thread: on a deep tree it passes 64 and
//! 128 and stalled twice, about 20 ms of a 45 ms `toolgate call grep` with no CPU spent
//! (`bench/search.sh`'s C tree). Opening one descriptor high up before the first thread
//! starts grows the table once, at no cost, and it never shrinks.

use std::os::fd::RawFd;

use rustix::process::{Resource, getrlimit};

/// The slots reserved: well above what a search holds at once (134 on the bench's deepest
/// tree), a few kilobytes of kernel memory.
const SLOTS: u64 = 1024;

/// Grows this process's descriptor table to [`SLOTS`] slots (or the descriptor limit, if
/// lower). Call first thing in `main`, before any thread exists; failure only costs the
/// stalls it avoids.
pub(crate) fn reserve() {
    let limit = getrlimit(Resource::Nofile).current.unwrap_or(SLOTS);
    let Some(top) = SLOTS.min(limit).checked_sub(1) else {
        return;
    };
    let Ok(top) = RawFd::try_from(top) else {
        return;
    };
    // A descriptor duplicated to the lowest free number at or above `top`, dropped at once.
    if let Ok(null) = fs_err::File::open("/dev/null") {
        let _ = rustix::io::fcntl_dupfd_cloexec(&null, top);
    }
}
