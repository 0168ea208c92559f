//! Watching a ready server: the monitor task that owns its connection, refetches its lists
//! when they change and notices the connection ending; and the `subscriptions/listen`
//! stream through which a 2026-07-28 server announces those changes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::service::RunningService;
use rmcp::{Peer, RoleClient};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::{Live, Mount, Phase, STABLE_AFTER, backoff};
use crate::connect::ChildGuard;
use crate::handler::Handler;
use crate::list::list_all;
use crate::sync::lock;

impl Mount {
    /// Owns a ready connection: refetches on `list_changed`, notices the end, cleans up.
    pub(super) async fn monitor(
        self: Arc<Self>,
        service: RunningService<RoleClient, Handler>,
        guard: Option<ChildGuard>,
        live: Arc<Live>,
        list_changed: Arc<Notify>,
    ) {
        let mut cancel = Some(service.cancellation_token());
        let waiting = service.waiting();
        tokio::pin!(waiting);
        let mut stopping = false;
        loop {
            tokio::select! {
                _ = &mut waiting => break,
                () = live.prompts_changed.notified() => self.refresh_prompts(&live).await,
                () = live.resources_changed.notified() => self.refresh_resources(&live).await,
                () = self.shutdown.cancelled(), if !stopping => {
                    stopping = true;
                    if let Some(token) = cancel.take() {
                        token.cancel();
                    }
                    // Closing the transport closes the child's stdin; do not wait forever
                    // on a transport that is slow to close.
                    let _ = tokio::time::timeout(Duration::from_secs(3), &mut waiting).await;
                    break;
                }
                () = live.abandon.cancelled() => {
                    if let Some(token) = cancel.take() {
                        token.cancel();
                    }
                    let _ = tokio::time::timeout(Duration::from_secs(3), &mut waiting).await;
                    break;
                }
                () = list_changed.notified() => self.refresh(&live).await,
            }
        }
        let exit = match guard {
            Some(guard) => Some(guard.close().await),
            None => None,
        };
        let broken = lock(&live.broken).clone();
        let reason = match (stopping, exit, broken) {
            (true, _, _) => "stopped: toolgate is shutting down".to_owned(),
            (false, Some(how), _) => format!("exited ({how}){}", live.diag.describe()),
            (false, None, Some(why)) => why,
            (false, None, None) => "the connection ended".to_owned(),
        };
        *lock(&live.end) = Some(reason.clone());
        live.closed.cancel();
        let current = {
            let mut st = self.state();
            let current = st.live.as_ref().is_some_and(|l| Arc::ptr_eq(l, &live));
            if current {
                st.live = None;
                if live.opened.elapsed() >= STABLE_AFTER {
                    st.failures = 0;
                }
                st.failures += 1;
            }
            current.then_some(st.failures)
        };
        let refused = lock(&live.refused).take();
        if let (Some(_), Some(needs), false) = (current, refused, stopping) {
            self.needs_login(needs);
        } else if let Some(failures) = current {
            let phase = if stopping {
                Phase::Failed {
                    reason,
                    retry_at: None,
                }
            } else {
                tracing::warn!(server = %self.spec.name, %reason, "MCP server stopped; it is restarted on its next call");
                Phase::Failed {
                    reason: format!("{reason}; it is restarted on the next call"),
                    retry_at: Some(Instant::now() + backoff(failures)),
                }
            };
            self.set_phase(phase);
        }
    }

    /// Refetches the tool list after `list_changed` and republishes it if it changed.
    async fn refresh(&self, live: &Live) {
        let limits = self.limits();
        let listed = tokio::time::timeout(
            self.spec.startup_timeout,
            list_all(&live.peer, &self.spec, &limits),
        )
        .await;
        match listed {
            Ok(Ok((tools, notes))) => {
                let changed = **lock(&self.listed) != tools;
                self.state().notes = notes;
                if changed {
                    tracing::info!(server = %self.spec.name, tools = tools.len(), "MCP server's tools changed");
                    self.save_catalog(&tools, !self.resources().is_empty());
                    *lock(&self.listed) = Arc::new(tools);
                    if let Some(host) = self.host.upgrade() {
                        host.tools_changed();
                    }
                }
            }
            Ok(Err(e)) => {
                tracing::warn!(server = %self.spec.name, %e, "refetching tools failed; keeping the old list")
            }
            Err(_) => {
                tracing::warn!(server = %self.spec.name, "refetching tools timed out; keeping the old list")
            }
        }
    }
}

/// A 2026-07-28 server announces changes of its lists only on a `subscriptions/listen`
/// stream: one is kept open while the connection lives, and its announcements wake the same
/// refetches as a 2025 server's notifications do. Nothing for a 2025 server or one that
/// announces no changes.
pub(super) fn listen_for_changes(
    server: &str,
    peer: &Peer<RoleClient>,
    handler: &Handler,
    closed: &CancellationToken,
) {
    let Some(info) = peer.peer_info() else {
        return;
    };
    if info.protocol_version.has_initialize() {
        return;
    }
    let caps = &info.capabilities;
    let tools = caps
        .tools
        .as_ref()
        .is_some_and(|c| c.list_changed == Some(true));
    let prompts = caps
        .prompts
        .as_ref()
        .is_some_and(|c| c.list_changed == Some(true));
    let resources = caps
        .resources
        .as_ref()
        .is_some_and(|c| c.list_changed == Some(true));
    if !(tools || prompts || resources) {
        return;
    }
    let mut filter = rmcp::model::SubscriptionFilter::builder();
    if tools {
        filter = filter.tools_list_changed();
    }
    if prompts {
        filter = filter.prompts_list_changed();
    }
    if resources {
        filter = filter.resources_list_changed();
    }
    let filter = filter.build();
    let (peer, closed, server) = (peer.clone(), closed.clone(), server.to_owned());
    let (tools, prompts, resources) = (
        Arc::clone(&handler.list_changed),
        Arc::clone(&handler.prompts_changed),
        Arc::clone(&handler.resources_changed),
    );
    tokio::spawn(async move {
        let mut subscription = tokio::select! {
            () = closed.cancelled() => return,
            opened = peer.listen(filter) => match opened {
                Ok(subscription) => subscription,
                Err(e) => {
                    tracing::debug!(%server, %e, "subscriptions/listen failed; list changes are not heard");
                    return;
                }
            },
        };
        loop {
            let next = tokio::select! {
                () = closed.cancelled() => break,
                next = subscription.next() => next,
            };
            use rmcp::model::ServerNotification as N;
            match next {
                Ok(Some(N::ToolListChangedNotification(_))) => tools.notify_one(),
                Ok(Some(N::PromptListChangedNotification(_))) => prompts.notify_one(),
                Ok(Some(N::ResourceListChangedNotification(_))) => resources.notify_one(),
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
    });
}
