//! Locking the gateway's shared state. Lives below the mounts and the transport layer
//! (`ordered.rs`), which both lock, so neither has to depend on the other for it.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `m`, still handing out the value when an earlier holder panicked: the poison is
/// ignored rather than passed on as a second panic.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
