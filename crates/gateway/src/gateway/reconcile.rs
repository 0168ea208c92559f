//! Config changes applied to a running gateway: the servers added, removed or changed are
//! mounted, unmounted or restarted; every other server keeps running untouched.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use super::{Gateway, log_if_untrusted, register};
use crate::config::ServerSpec;
use crate::import::Discovered;
use crate::mount::{Host, Mount};
use crate::sync::lock;

/// What [`Gateway::reconcile`] changed, by server name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reconciled {
    /// Servers that were not configured before.
    pub added: Vec<String>,
    /// Servers no longer configured: stopped, their tools, prompts and resources gone.
    pub removed: Vec<String>,
    /// Servers whose config changed (command, arguments, environment, URL, headers,
    /// limits, trust …): stopped and mounted again as configured now.
    pub restarted: Vec<String>,
}

impl Reconciled {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.restarted.is_empty()
    }
}

impl std::fmt::Display for Reconciled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = |list: &[String]| {
            list.iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let parts: Vec<String> = [
            ("added", &self.added),
            ("removed", &self.removed),
            ("restarted", &self.restarted),
        ]
        .into_iter()
        .filter(|(_, list)| !list.is_empty())
        .map(|(what, list)| format!("{what} {}", names(list)))
        .collect();
        match parts.is_empty() {
            true => f.write_str("no MCP server changed"),
            false => f.write_str(&parts.join("; ")),
        }
    }
}

impl Gateway {
    /// Applies a new discovery (the config files read again): a server that is new is
    /// mounted, one that is gone is stopped and unmounted, and one whose config differs in
    /// anything but where it was written is stopped and mounted again; the rest keep running
    /// as they are, calls in flight included. Clients hear of the change through the usual
    /// `list_changed` notifications (tools, prompts, resources). New servers start at once
    /// when [`Gateway::start`] ran, else when first needed, like the others. A
    /// `prefix = "never"` server that was not mounted because its names clashed is tried
    /// again whenever the set of servers changes.
    ///
    /// Must be called inside a tokio runtime when [`Gateway::start`] ran.
    pub fn reconcile(&self, discovered: Discovered) -> Reconciled {
        let Discovered { servers, problems } = discovered;
        *lock(&self.problems) = problems;
        let mut report = Reconciled::default();
        let Some(registry) = self.inner.registry.upgrade() else {
            return report;
        };
        let old = self.inner.mounts();
        let host: Weak<dyn Host> = Arc::downgrade(&self.inner) as Weak<dyn Host>;
        let kept = |spec: &ServerSpec| {
            old.iter()
                .find(|m| m.spec.name == spec.name && same_server(&m.spec, spec))
                .cloned()
        };
        let set_changes = servers.len() != old.len() || servers.iter().any(|s| kept(s).is_none());
        let mut next: Vec<Arc<Mount>> = Vec::with_capacity(servers.len());
        let mut fresh: Vec<Arc<Mount>> = Vec::new();
        let mut gone: Vec<Arc<Mount>> = Vec::new();
        for spec in servers {
            let name = spec.name.clone();
            match kept(&spec) {
                // A clash is for good on a mount; another set of servers may not clash.
                Some(mount) if !(set_changes && mount.clash().is_some()) => next.push(mount),
                _ => {
                    match old.iter().find(|m| m.spec.name == name) {
                        Some(before) => {
                            report.restarted.push(name);
                            gone.push(Arc::clone(before));
                        }
                        None => report.added.push(name),
                    }
                    let mount = Arc::new(Mount::new(spec, host.clone()));
                    fresh.push(Arc::clone(&mount));
                    next.push(mount);
                }
            }
        }
        for mount in old.iter() {
            if !next.iter().any(|m| m.spec.name == mount.spec.name) {
                report.removed.push(mount.spec.name.clone());
                gone.push(Arc::clone(mount));
            }
        }
        if report.is_empty() {
            return report;
        }
        if let Some(cache) = self.inner.catalog() {
            for mount in &fresh {
                mount.load_catalog(&cache);
            }
        }
        *lock(&self.inner.mounts) = next.into();
        for mount in &gone {
            registry.unregister(None, &format!("mcp:{}", mount.spec.name));
            // Calls in flight on it fail; its monitor closes the connection and ends the
            // processes, as at shutdown.
            mount.shutdown.cancel();
        }
        for mount in &fresh {
            if let Err(e) = register(&registry, mount) {
                tracing::warn!(server = %mount.spec.name, %e, "MCP server not mounted");
            }
            log_if_untrusted(mount);
        }
        // Names depend on every server (collisions, `never` clashes): all are named again.
        self.inner.publish();
        Host::resources_changed(&*self.inner);
        self.inner.prompt_changes.send_modify(|n| *n += 1);
        if self.inner.started.load(Ordering::SeqCst) {
            for mount in fresh.into_iter().filter(|m| m.request_start()) {
                tokio::spawn(async move { mount.start().await });
            }
        }
        self.inner.invalidate();
        report
    }
}

/// Whether two configs describe the same server: where it was configured is not part of
/// it (a server moved from `.mcp.json` to toolgate's config with the same settings keeps
/// running).
fn same_server(running: &ServerSpec, configured: &ServerSpec) -> bool {
    let mut running = running.clone();
    running.source.clone_from(&configured.source);
    running == *configured
}
