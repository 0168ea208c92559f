//! Notifications the server sends on its own initiative: the ordered progress of one call,
//! `list_changed` for tools, prompts and resources, and `resources/updated` for the URIs a
//! session subscribed to.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rmcp::model::{ProgressNotificationParam, ProgressToken, ResourceUpdatedNotificationParam};
use rmcp::{Peer, RoleServer};
use tokio::sync::{broadcast, mpsc, oneshot, watch};

/// How often a watcher checks that its connection is still open.
const WATCH_POLL: Duration = Duration::from_secs(5);

/// How long a finished call waits for its queued progress notifications to go out before
/// its result does (they are only queued in memory, so this is a safety net).
const PROGRESS_FLUSH: Duration = Duration::from_secs(5);

use crate::extras::UpdateLease;

/// The resource URIs one session subscribed to, each with the source's lease on its updates
/// (dropped with the entry: an unsubscribe, or the session's handler going away).
#[derive(Default)]
pub(crate) struct Subscriptions(Mutex<HashMap<String, UpdateLease>>);

impl Subscriptions {
    pub(crate) fn map(&self) -> MutexGuard<'_, HashMap<String, UpdateLease>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn contains(&self, uri: &str) -> bool {
        self.map().contains_key(uri)
    }

    /// Drops every subscription (the session ended).
    pub(crate) fn clear(&self) {
        let leases = std::mem::take(&mut *self.map());
        drop(leases);
    }
}

/// The progress notifications of one call, sent in order by one task, each greater than
/// the last.
///
/// Sending each from its own task (as a sink that must not block would) lets a later
/// notification overtake an earlier one, and the last ones overtake the result.
///
/// A call that went through `input_required` rounds goes on under the request that
/// answered the last round: [`ProgressQueue::retarget`] sends what follows to that request
/// (its stream, its `progressToken`), or nowhere when it asked for no progress.
#[derive(Clone)]
pub(crate) struct ProgressQueue {
    tx: mpsc::UnboundedSender<ProgressItem>,
}

enum ProgressItem {
    Notify {
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    },
    Retarget(Peer<RoleServer>, Option<ProgressToken>),
    Flush(oneshot::Sender<()>),
}

impl ProgressQueue {
    /// Sends to `peer` under `token`; with no token, nothing goes out until a
    /// [`ProgressQueue::retarget`] names one.
    pub(crate) fn spawn(peer: Peer<RoleServer>, token: Option<ProgressToken>) -> Self {
        let (tx, mut rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut target = (peer, token);
            // MCP requires progress to increase with each notification; a value that does
            // not (a heartbeat's elapsed seconds after the tool's own 50 of 100) is dropped.
            let mut last: Option<f64> = None;
            while let Some(item) = rx.recv().await {
                match item {
                    ProgressItem::Notify {
                        progress,
                        total,
                        message,
                    } => {
                        let (peer, Some(token)) = &target else {
                            continue;
                        };
                        if last.is_some_and(|last| progress <= last) {
                            continue;
                        }
                        last = Some(progress);
                        let mut param = ProgressNotificationParam::new(token.clone(), progress);
                        param.total = total;
                        param.message = message;
                        let _ = peer.notify_progress(param).await;
                    }
                    ProgressItem::Retarget(peer, token) => target = (peer, token),
                    ProgressItem::Flush(done) => {
                        let _ = done.send(());
                    }
                }
            }
        });
        Self { tx }
    }

    pub(crate) fn send(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        let _ = self.tx.send(ProgressItem::Notify {
            progress,
            total,
            message,
        });
    }

    /// Sends what follows to `peer` under `token` (none: nowhere).
    pub(crate) fn retarget(&self, peer: Peer<RoleServer>, token: Option<ProgressToken>) {
        let _ = self.tx.send(ProgressItem::Retarget(peer, token));
    }

    /// Waits until everything queued so far has been handed to the transport.
    pub(crate) async fn flush(&self) {
        let (done, sent) = oneshot::channel();
        if self.tx.send(ProgressItem::Flush(done)).is_ok() {
            let _ = tokio::time::timeout(PROGRESS_FLUSH, sent).await;
        }
    }
}

/// Which `list_changed` notification a watcher forwards.
#[derive(Clone, Copy)]
pub(crate) enum ListKind {
    Tools,
    Prompts,
    Resources,
}

/// Forwards every change of `changes` to `peer` until the connection or the source closes.
pub(crate) fn watch_list(
    peer: Peer<RoleServer>,
    mut changes: watch::Receiver<u64>,
    kind: ListKind,
) {
    changes.mark_unchanged();
    tokio::spawn(async move {
        let mut poll = tokio::time::interval(WATCH_POLL);
        loop {
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        break;
                    }
                    let sent = match kind {
                        ListKind::Tools => peer.notify_tool_list_changed().await,
                        ListKind::Prompts => peer.notify_prompt_list_changed().await,
                        ListKind::Resources => peer.notify_resource_list_changed().await,
                    };
                    if sent.is_err() {
                        break;
                    }
                }
                _ = poll.tick() => {
                    if peer.is_transport_closed() {
                        break;
                    }
                }
            }
        }
    });
}

/// Forwards updated resource URIs this session subscribed to.
pub(crate) fn watch_updates(
    peer: Peer<RoleServer>,
    mut updates: broadcast::Receiver<String>,
    subscriptions: Arc<Subscriptions>,
) {
    tokio::spawn(async move {
        let mut poll = tokio::time::interval(WATCH_POLL);
        loop {
            tokio::select! {
                update = updates.recv() => match update {
                    Ok(uri) => {
                        if subscriptions.contains(&uri) {
                            let param = ResourceUpdatedNotificationParam::new(uri);
                            if peer.notify_resource_updated(param).await.is_err() {
                                break;
                            }
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        tracing::warn!(missed, "resource updates lagged; some were not forwarded");
                    }
                    Err(broadcast::error::RecvError::Closed) => break,
                },
                _ = poll.tick() => {
                    if peer.is_transport_closed() {
                        break;
                    }
                }
            }
        }
    });
}

/// What a `subscriptions/listen` stream (protocol 2026-07-28) follows.
pub(crate) struct ListenSources {
    pub(crate) tools: watch::Receiver<u64>,
    pub(crate) prompts: Option<watch::Receiver<u64>>,
    pub(crate) resources: Option<watch::Receiver<u64>>,
    pub(crate) updates: Option<broadcast::Receiver<String>>,
}

/// Runs one `subscriptions/listen` stream: the 2026-07-28 way to receive `list_changed`
/// and `resources/updated`, which the SDK filters by what the client accepted.
pub(crate) async fn listen(
    context: rmcp::service::SubscriptionContext,
    mut sources: ListenSources,
) {
    async fn changed(rx: &mut Option<watch::Receiver<u64>>) -> bool {
        match rx {
            Some(rx) => rx.changed().await.is_ok(),
            None => std::future::pending().await,
        }
    }
    sources.tools.mark_unchanged();
    let sink = context.sink().clone();
    loop {
        let sent = tokio::select! {
            () = context.cancelled() => return,
            ok = sources.tools.changed() => {
                if ok.is_err() { return; }
                sink.notify_tool_list_changed().await
            }
            ok = changed(&mut sources.prompts) => {
                if !ok { return; }
                sink.notify_prompt_list_changed().await
            }
            ok = changed(&mut sources.resources) => {
                if !ok { return; }
                sink.notify_resource_list_changed().await
            }
            uri = async {
                match &mut sources.updates {
                    Some(rx) => rx.recv().await.ok(),
                    None => std::future::pending().await,
                }
            } => match uri {
                Some(uri) => sink.notify_resource_updated(uri).await,
                None => return,
            },
        };
        // A category the client did not accept is refused by the SDK; that is not an end.
        if matches!(
            sent,
            Err(rmcp::service::SubscriptionSendError::SubscriptionClosed
                | rmcp::service::SubscriptionSendError::Service(_))
        ) {
            return;
        }
    }
}
