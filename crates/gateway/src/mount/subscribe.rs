//! A mounted server's resource subscriptions: toolgate subscribes to a URI upstream once,
//! however many of its own sessions follow it, unsubscribes when the last one stops, and
//! subscribes again after a restart; the server's `notifications/resources/updated` go to
//! the gateway's update stream (`handler.rs`), which each session filters by its own
//! subscriptions. A 2025 server gets `resources/subscribe` and `resources/unsubscribe`; a
//! 2026-07-28 server one `subscriptions/listen` stream naming every followed URI, opened
//! again whenever that set changes.

use std::sync::Arc;

use rmcp::model::{
    ServerNotification, SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::{Peer, RoleClient};
use tokio_util::sync::CancellationToken;

use super::{Mount, Phase, lock};
use crate::error::{Asked, UpstreamError};

impl Mount {
    /// Follows `uri` for one more subscriber, subscribing upstream for the first. `Err`
    /// says why the server cannot be followed (no `resources.subscribe`, not available).
    pub(crate) async fn follow(self: &Arc<Self>, uri: &str) -> Result<(), UpstreamError> {
        // In turn with other follows and with unsubscribes: one that comes while the first
        // follower's subscribe is on its way counts only once that one has succeeded (or
        // failed, and then it tries itself).
        let _turn = self.upstream.lock().await;
        let first = {
            let mut followed = lock(&self.followed);
            let count = followed.entry(uri.to_owned()).or_insert(0);
            *count += 1;
            *count == 1
        };
        if !first {
            return Ok(());
        }
        let subscribed = async {
            let live = self.ensure_live().await?;
            self.subscribe_in_turn(&live.peer, uri).await
        };
        if let Err(e) = subscribed.await {
            self.unfollow(uri, Upstream::Leave);
            return Err(e);
        }
        Ok(())
    }

    /// One subscriber less for `uri`; the last one unsubscribes upstream (in the
    /// background: a lease dropped outside any call must not wait for the server).
    pub(crate) fn unfollow(self: &Arc<Self>, uri: &str, upstream: Upstream) {
        let last = {
            let mut followed = lock(&self.followed);
            match followed.get_mut(uri) {
                Some(count) if *count > 1 => {
                    *count -= 1;
                    false
                }
                Some(_) => {
                    followed.remove(uri);
                    true
                }
                None => false,
            }
        };
        if !last || upstream == Upstream::Leave {
            return;
        }
        let Some(peer) = self.live_peer() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let uri = uri.to_owned();
        let mount = Arc::clone(self);
        runtime.spawn(async move {
            let _turn = mount.upstream.lock().await;
            // Followed again meanwhile (its subscribe waited for this turn or went first):
            // the server stays subscribed.
            if lock(&mount.followed).contains_key(&uri) {
                return;
            }
            let server = &mount.spec.name;
            if !speaks_initialize(&peer) {
                // A 2026-07-28 server: listen again for what is still followed.
                if let Err(e) = mount.relisten(&peer).await {
                    tracing::debug!(%server, %uri, %e, "listening again failed");
                }
                return;
            }
            let limit = mount.spec.tool_timeout;
            #[allow(deprecated)] // legacy (2025) subscriptions, which mounted servers use
            let sent = peer.unsubscribe(UnsubscribeRequestParams::new(&uri));
            match tokio::time::timeout(limit, sent).await {
                Ok(Ok(_)) => tracing::debug!(%server, %uri, "unsubscribed"),
                Ok(Err(e)) => tracing::debug!(%server, %uri, %e, "`resources/unsubscribe` failed"),
                Err(_) => tracing::debug!(%server, %uri, "`resources/unsubscribe` timed out"),
            }
        });
    }

    /// Subscribes again to every followed URI on a new connection (after a restart).
    pub(super) fn resubscribe(self: &Arc<Self>, peer: &Peer<RoleClient>) {
        let uris: Vec<String> = lock(&self.followed).keys().cloned().collect();
        if uris.is_empty() {
            return;
        }
        let mount = Arc::clone(self);
        let peer = peer.clone();
        tokio::spawn(async move {
            // A 2026-07-28 server's one stream names them all.
            let uris = match speaks_initialize(&peer) {
                true => uris,
                false => uris.into_iter().take(1).collect(),
            };
            for uri in uris {
                if let Err(e) = mount.subscribe_upstream(&peer, &uri).await {
                    tracing::warn!(server = %mount.spec.name, %uri, %e, "subscribing again after a restart failed");
                }
            }
        });
    }

    /// Subscribes upstream to `uri`, in turn with follows and unsubscribes.
    async fn subscribe_upstream(
        &self,
        peer: &Peer<RoleClient>,
        uri: &str,
    ) -> Result<(), UpstreamError> {
        let _turn = self.upstream.lock().await;
        self.subscribe_in_turn(peer, uri).await
    }

    /// Subscribes upstream to `uri`; call with `upstream` held.
    async fn subscribe_in_turn(
        &self,
        peer: &Peer<RoleClient>,
        uri: &str,
    ) -> Result<(), UpstreamError> {
        let server = &self.spec.name;
        let info = peer.peer_info();
        let offers = info.as_ref().is_some_and(|info| {
            info.capabilities
                .resources
                .as_ref()
                .is_some_and(|r| r.subscribe == Some(true))
        });
        if !offers {
            return Err(UpstreamError::NoSubscriptions {
                server: server.clone(),
                uri: uri.to_owned(),
            });
        }
        if !speaks_initialize(peer) {
            return self.relisten(peer).await.and_then(|accepted| {
                accepted
                    .iter()
                    .any(|u| u == uri)
                    .then_some(())
                    .ok_or_else(|| UpstreamError::NotAccepted {
                        server: server.clone(),
                        uri: uri.to_owned(),
                    })
            });
        }
        #[allow(deprecated)] // legacy (2025) subscriptions, which mounted servers use
        let sent = peer.subscribe(SubscribeRequestParams::new(uri));
        match tokio::time::timeout(self.spec.tool_timeout, sent).await {
            Ok(Ok(_)) => {
                tracing::debug!(%server, %uri, "subscribed");
                Ok(())
            }
            Ok(Err(source)) => Err(UpstreamError::Refused {
                server: server.clone(),
                asked: Asked::Subscribe(uri.to_owned()),
                source,
            }),
            Err(_) => Err(UpstreamError::Timeout {
                server: server.clone(),
                asked: Asked::Subscribe(uri.to_owned()),
            }),
        }
    }

    /// Opens a `subscriptions/listen` stream to a 2026-07-28 server for every followed URI,
    /// in place of the one open before (a stream's filter is fixed when it opens); returns
    /// the URIs the server accepted. The stream passes the server's updates on until it is
    /// replaced, the connection ends or the server ends it. Call with `upstream` held.
    async fn relisten(&self, peer: &Peer<RoleClient>) -> Result<Vec<String>, UpstreamError> {
        let server = &self.spec.name;
        let uris: Vec<String> = lock(&self.followed).keys().cloned().collect();
        if let Some(old) = lock(&self.listening).take() {
            old.cancel();
        }
        if uris.is_empty() {
            return Ok(Vec::new());
        }
        let filter = SubscriptionFilter::builder()
            .resource_subscriptions(uris)
            .build();
        let opened = tokio::time::timeout(self.spec.tool_timeout, peer.listen(filter))
            .await
            .map_err(|_| UpstreamError::ListenTimeout {
                server: server.clone(),
            })?;
        let mut stream = opened.map_err(|source| UpstreamError::ListenRefused {
            server: server.clone(),
            source,
        })?;
        let accepted = stream
            .acknowledged()
            .resource_subscriptions
            .clone()
            .unwrap_or_default();
        tracing::debug!(%server, uris = accepted.len(), "listening for resource updates");
        let stop = CancellationToken::new();
        *lock(&self.listening) = Some(stop.clone());
        let updates = self.host.upgrade().map(|h| h.resource_updates());
        let server = server.clone();
        tokio::spawn(async move {
            loop {
                let next = tokio::select! {
                    () = stop.cancelled() => {
                        let _ = stream.cancel().await;
                        return;
                    }
                    next = stream.next() => next,
                };
                match next {
                    Ok(Some(ServerNotification::ResourceUpdatedNotification(n))) => {
                        if let Some(updates) = &updates {
                            let _ = updates.send(n.params.uri);
                        }
                    }
                    Ok(Some(_)) => {}
                    Ok(None) => {
                        tracing::debug!(%server, end = ?stream.end(), "the listen stream ended");
                        return;
                    }
                    Err(e) => {
                        tracing::debug!(%server, %e, "the listen stream failed");
                        return;
                    }
                }
            }
        });
        Ok(accepted)
    }

    /// The open connection's peer, if the server is ready.
    pub(crate) fn live_peer(&self) -> Option<Peer<RoleClient>> {
        let st = self.state();
        match st.phase {
            Phase::Ready => st.live.as_ref().map(|live| live.peer.clone()),
            _ => None,
        }
    }

    /// Tells the server (when ready, and offered roots) that the client's roots changed.
    pub(crate) fn roots_changed(&self) {
        let Some(peer) = self.live_peer() else { return };
        let server = self.spec.name.clone();
        tokio::spawn(async move {
            if let Err(e) = peer.notify_roots_list_changed().await {
                tracing::debug!(%server, %e, "`notifications/roots/list_changed` not sent");
            }
        });
    }
}

/// Whether `peer` was opened with `initialize` (2025: `resources/subscribe`), rather than
/// on 2026-07-28 (`subscriptions/listen`).
fn speaks_initialize(peer: &Peer<RoleClient>) -> bool {
    peer.peer_info()
        .is_none_or(|info| info.protocol_version.has_initialize())
}

/// Whether dropping the last follower unsubscribes upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Upstream {
    /// Unsubscribe upstream.
    Unsubscribe,
    /// The upstream subscription never happened (a failed follow): leave it.
    Leave,
}
