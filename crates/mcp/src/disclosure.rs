//! Progressive disclosure in server mode: which tools a session's `tools/list` shows, and
//! when it changes.
//!
//! In proxy mode (the default) the list never changes within a registry generation: found
//! tools are called through `run_tool`. In backfill mode the tools a session's `search_tool`
//! calls unmasked join that session's list as one sorted block, and the session gets one
//! `notifications/tools/list_changed` per search that unmasked anything.

use std::sync::Arc;

use tokio::sync::watch;
use toolgate_core::disclosure::{Exposed, Unmasked};
use toolgate_core::{Disclosure, ExposureMode, Session, Snapshot};

/// The tools `session` sees.
pub(crate) fn session_tools(
    disclosure: &Disclosure,
    snapshot: &Snapshot,
    session: &Session,
) -> Exposed {
    disclosure.exposed(snapshot, &session.ext::<Unmasked>())
}

/// A receiver that moves when the session's tool list may have changed: every registry
/// generation, plus — in backfill mode — every unmasking in this session.
pub(crate) fn tool_changes(
    registry: watch::Receiver<u64>,
    disclosure: Option<&Disclosure>,
    session: &Session,
) -> watch::Receiver<u64> {
    if disclosure.is_none_or(|d| d.exposure() != ExposureMode::Backfill) {
        return registry;
    }
    let unmasked: Arc<Unmasked> = session.ext::<Unmasked>();
    let mut unmasked = unmasked.subscribe();
    let mut registry = registry;
    // Changes count from now, not from when the task first runs: an unmasking in between
    // would otherwise be taken as seen and never announced.
    registry.mark_unchanged();
    unmasked.mark_unchanged();
    let (tx, rx) = watch::channel(0u64);
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = tx.closed() => break,
                r = registry.changed() => if r.is_err() { break },
                u = unmasked.changed() => if u.is_err() { break },
            }
            tx.send_modify(|v| *v += 1);
        }
    });
    rx
}
