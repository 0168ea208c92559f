//! Trust at (re)start time: a trusted project server's files are hashed again before every
//! start, so one rewritten while toolgate runs is not run at the next restart.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{Mount, Phase, lock};
use crate::trust::Untrusted;

impl Mount {
    /// Hashes the project files the server runs again, before every start and restart: a
    /// `server.sh` rewritten while toolgate runs must not run at the next restart.
    pub(super) async fn recheck_trust(&self) -> Result<(), Untrusted> {
        let Some(launch) = self.spec.launch.clone() else {
            return Ok(());
        };
        let spec = self.spec.clone();
        tokio::task::spawn_blocking(move || launch.recheck(&spec))
            .await
            .unwrap_or_else(|e| Err(Untrusted::Unchecked(e)))
    }

    /// Marks the server untrusted (a file it runs changed) and withdraws its tools.
    pub(super) fn distrust(&self, reason: String) {
        tracing::warn!(
            server = %self.spec.name,
            %reason,
            "MCP server not started: it changed since it was trusted; after checking it, run `{}`",
            crate::trust::trust_command(&self.spec.name)
        );
        self.requested.store(false, Ordering::SeqCst);
        self.state().from_cache = false;
        self.set_phase(Phase::Untrusted(reason));
        let had_tools = !lock(&self.listed).is_empty();
        *lock(&self.listed) = Arc::new(Vec::new());
        match self.host.upgrade() {
            Some(host) if had_tools => host.tools_changed(),
            Some(host) => host.availability_changed(),
            None => {}
        }
    }
}
