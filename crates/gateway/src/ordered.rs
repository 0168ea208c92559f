//! A call's progress and log messages reach its client before its result.
//!
//! rmcp hands each notification from a server to its own task and each response straight
//! to the request waiting for it, so a progress or log message a server sent just before
//! its result can be handled after the call has returned (its route gone, the client's
//! result sent): the message is lost. [`Ordered`] sits between the transport and rmcp and
//! numbers those notifications as they arrive; a call whose response arrived waits
//! ([`Arrivals::settle`]) until the ones that arrived before it have been handled, at most
//! [`SETTLE_WAIT`]. It also notes which call each request it sends belongs to
//! ([`crate::relay::CallTag`]), before the request can be answered.

use std::borrow::Cow;
use std::collections::{BTreeSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{GetExtensions, JsonRpcMessage, RequestId, ServerNotification};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::Notify;

use crate::relay::{CallTag, Callers};
use crate::sync::lock;

/// Longest a call waits for the notifications that arrived before its response: they are
/// only being handed on in memory, so this is a safety net.
pub(crate) const SETTLE_WAIT: Duration = Duration::from_secs(2);

/// Responses remembered for calls that have not settled yet (older ones are forgotten: a
/// response nobody settles, such as a list's, must not pile up).
const REMEMBERED: usize = 1024;

/// The number of a tracked notification, in the extensions it reaches the handler with.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Seq(u64);

/// The tracked notifications of one connection and where each response fell among them.
#[derive(Debug, Default)]
pub(crate) struct Arrivals {
    next: AtomicU64,
    /// Arrived, not handled yet.
    pending: Mutex<BTreeSet<u64>>,
    /// For each response: how many tracked notifications had arrived before it.
    before: Mutex<VecDeque<(RequestId, u64)>>,
    handled: Notify,
}

impl Arrivals {
    /// Notes `message` as it arrives: progress and log messages are numbered (and must be
    /// [`Arrivals::handled`]); a response remembers how many came before it.
    fn arrived(&self, message: &mut RxJsonRpcMessage<RoleClient>) {
        match message {
            JsonRpcMessage::Notification(n) => {
                if matches!(
                    n.notification,
                    ServerNotification::ProgressNotification(_)
                        | ServerNotification::LoggingMessageNotification(_)
                ) {
                    let seq = self.next.fetch_add(1, Ordering::SeqCst);
                    lock(&self.pending).insert(seq);
                    n.notification.extensions_mut().insert(Seq(seq));
                }
            }
            JsonRpcMessage::Response(r) => self.remember(r.id.clone()),
            JsonRpcMessage::Error(e) => {
                if let Some(id) = &e.id {
                    self.remember(id.clone());
                }
            }
            JsonRpcMessage::Request(_) => {}
        }
    }

    fn remember(&self, id: RequestId) {
        let upto = self.next.load(Ordering::SeqCst);
        let mut before = lock(&self.before);
        before.push_back((id, upto));
        if before.len() > REMEMBERED {
            before.pop_front();
        }
    }

    /// Marks the notification carrying `extensions` handled (call when its handler is done).
    pub(crate) fn handled(&self, extensions: &rmcp::model::Extensions) {
        if let Some(Seq(seq)) = extensions.get::<Seq>() {
            lock(&self.pending).remove(seq);
            self.handled.notify_waiters();
        }
    }

    /// Waits until the progress and log messages that arrived before the response to `id`
    /// have been handled, at most [`SETTLE_WAIT`] (then they are given up on).
    pub(crate) async fn settle(&self, id: &RequestId) {
        let upto = {
            let mut before = lock(&self.before);
            let Some(at) = before.iter().position(|(r, _)| r == id) else {
                return;
            };
            before.remove(at).map(|(_, upto)| upto)
        };
        let Some(upto) = upto else { return };
        let waiting = || lock(&self.pending).range(..upto).next().is_some();
        let wait = async {
            loop {
                let notified = self.handled.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if !waiting() {
                    return;
                }
                notified.await;
            }
        };
        if tokio::time::timeout(SETTLE_WAIT, wait).await.is_err() {
            tracing::debug!("notifications before a response were not handled in time");
            lock(&self.pending).retain(|seq| *seq >= upto);
        }
    }
}

/// A transport that notes what arrives in [`Arrivals`], in the order it arrives, and the
/// calls its requests are sent for in [`Callers`].
pub(crate) struct Ordered<T> {
    inner: T,
    arrivals: Arc<Arrivals>,
    callers: Arc<Callers>,
}

impl<T> Ordered<T> {
    pub(crate) fn new(inner: T, arrivals: Arc<Arrivals>, callers: Arc<Callers>) -> Self {
        Self {
            inner,
            arrivals,
            callers,
        }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Ordered<T> {
    type Error = T::Error;

    fn name() -> Cow<'static, str> {
        T::name()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let JsonRpcMessage::Request(r) = &item
            && let Some(tag) = r.request.extensions().get::<CallTag>()
        {
            self.callers.sent(*tag, r.id.clone());
        }
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        let arrivals = Arc::clone(&self.arrivals);
        let next = self.inner.receive();
        async move {
            let mut message = next.await?;
            arrivals.arrived(&mut message);
            Some(message)
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{
        CallToolResult, JsonRpcNotification, JsonRpcResponse, JsonRpcVersion2_0, NumberOrString,
        ProgressNotification, ProgressNotificationParam, ProgressToken, ServerResult,
    };

    use super::*;

    fn progress(n: f64) -> RxJsonRpcMessage<RoleClient> {
        let param = ProgressNotificationParam::new(ProgressToken(NumberOrString::Number(1)), n);
        JsonRpcMessage::Notification(JsonRpcNotification {
            jsonrpc: JsonRpcVersion2_0,
            notification: ServerNotification::ProgressNotification(ProgressNotification::new(
                param,
            )),
        })
    }

    fn response(id: i64) -> RxJsonRpcMessage<RoleClient> {
        JsonRpcMessage::Response(JsonRpcResponse {
            jsonrpc: JsonRpcVersion2_0,
            id: NumberOrString::Number(id),
            result: ServerResult::CallToolResult(CallToolResult::success(Vec::new())),
        })
    }

    fn extensions(message: &RxJsonRpcMessage<RoleClient>) -> rmcp::model::Extensions {
        match message {
            JsonRpcMessage::Notification(n) => n.notification.extensions().clone(),
            _ => panic!("not a notification"),
        }
    }

    #[tokio::test]
    async fn a_response_waits_for_the_notifications_that_arrived_before_it_only() {
        let arrivals = Arc::new(Arrivals::default());
        let mut first = progress(1.0);
        arrivals.arrived(&mut first);
        let mut answer = response(7);
        arrivals.arrived(&mut answer);
        let mut later = progress(2.0);
        arrivals.arrived(&mut later);

        let waiting = {
            let arrivals = Arc::clone(&arrivals);
            tokio::spawn(async move { arrivals.settle(&NumberOrString::Number(7)).await })
        };
        // Not settled while the earlier notification is being handled (the later one does
        // not count).
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        arrivals.handled(&extensions(&first));
        waiting.await.unwrap();
        // A response nobody waits for, or one already settled, settles at once.
        arrivals.settle(&NumberOrString::Number(7)).await;
        arrivals.settle(&NumberOrString::Number(99)).await;
        arrivals.handled(&extensions(&later));
        assert!(lock(&arrivals.pending).is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_notification_never_handled_holds_a_response_only_so_long() {
        let arrivals = Arrivals::default();
        let mut lost = progress(1.0);
        arrivals.arrived(&mut lost);
        let mut answer = response(1);
        arrivals.arrived(&mut answer);
        arrivals.settle(&NumberOrString::Number(1)).await;
        assert!(lock(&arrivals.pending).is_empty(), "given up on");
    }
}
