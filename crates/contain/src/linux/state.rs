//! The namespace once it is made: the descriptors every relay joins, toolgate's end of the
//! spawner's socket, and whether its keeper is still alive.

use std::os::fd::OwnedFd;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// Descriptors of the namespace's init, joined by every relay.
pub(super) struct Namespace {
    pub(super) user: Option<OwnedFd>,
    pub(super) mnt: OwnedFd,
    pub(super) pid: OwnedFd,
    /// Inode of the PID namespace.
    pub(super) id: u64,
    /// toolgate's end of the spawner's socket (see `spawner`).
    pub(super) spawner: Option<OwnedFd>,
}

static NAMESPACE: OnceLock<Namespace> = OnceLock::new();
/// Cleared if the keeper ever dies: later commands fall back to process groups.
static ALIVE: AtomicBool = AtomicBool::new(false);

/// Keeps the namespace just made; false when there already is one.
pub(super) fn set(namespace: Namespace) -> bool {
    if NAMESPACE.set(namespace).is_err() {
        return false;
    }
    ALIVE.store(true, Ordering::Release);
    true
}

/// The namespace, while its keeper lives.
pub(super) fn namespace() -> Option<&'static Namespace> {
    NAMESPACE.get().filter(|_| ALIVE.load(Ordering::Acquire))
}

/// Marks the namespace ended (its keeper died); true the first time.
pub(super) fn end() -> bool {
    ALIVE.swap(false, Ordering::AcqRel)
}

/// The PID namespace's inode, once one was made.
pub(super) fn id() -> Option<u64> {
    NAMESPACE.get().map(|ns| ns.id)
}
