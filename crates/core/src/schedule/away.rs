//! A running call's resources, let go while it waits for a person.
//!
//! A mutating call holds its resources (a mounted server) while it runs, so that calls of
//! other sessions that change the same thing run one after the other. A call that asks its
//! client something — a form a user fills in, a 2026-07-28 round the client answers when it
//! likes (kept up to 15 minutes), a model's completion — would hold them all that time and
//! stall every other session. So a request through the call's link ([`AwayLink`]) lets go
//! of them first and gets back in line for them once the answer is in; each wait ends when
//! the call is stopped (its deadline, or a cancellation).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{Held, Resource, ResourceLocks, Table, hold_in};
use crate::client::{AskError, ClientAsk, ClientLink};

/// The resources of one running call: held, or let go while it waits for its client.
pub(crate) struct Holding {
    table: Table,
    wanted: Vec<Resource>,
    /// The call's own token: cancelled at its deadline or when the caller gives up.
    cancel: CancellationToken,
    state: tokio::sync::Mutex<State>,
    /// Set when the call is over: nothing is held or taken back after.
    over: AtomicBool,
}

#[derive(Default)]
struct State {
    held: Option<Held>,
    /// Requests to the client waiting for their answers.
    away: usize,
}

impl Holding {
    pub(crate) fn new(
        locks: &ResourceLocks,
        wanted: Vec<Resource>,
        cancel: CancellationToken,
    ) -> Arc<Self> {
        Arc::new(Self {
            table: Arc::clone(&locks.locks),
            wanted,
            cancel,
            state: tokio::sync::Mutex::default(),
            over: AtomicBool::new(false),
        })
    }

    /// Waits for the resources (before the call starts); `waiting_on` says for what.
    pub(crate) async fn take(&self, waiting_on: &Mutex<String>) {
        let mut state = self.state.lock().await;
        let held = hold_in(&self.table, self.wanted.clone(), waiting_on).await;
        self.keep(&mut state, held);
    }

    /// Lets go of everything for good: the call is over.
    pub(crate) fn end(&self) {
        self.over.store(true, Ordering::SeqCst);
        // Busy means a wait is under way: it sees `over` and lets go itself.
        if let Ok(mut state) = self.state.try_lock() {
            state.held = None;
        }
    }

    fn keep(&self, state: &mut State, held: Held) {
        if state.away == 0 && !self.over.load(Ordering::SeqCst) {
            state.held = Some(held);
        }
    }

    /// Runs `wait` (an answer from the client) without the resources, then takes them back;
    /// `None` when the call was stopped first.
    async fn away<T>(&self, wait: impl Future<Output = T>) -> Option<T> {
        {
            let mut state = self.state.lock().await;
            state.away += 1;
            state.held = None;
        }
        let out = tokio::select! {
            out = wait => Some(out),
            () = self.cancel.cancelled() => None,
        };
        let mut state = self.state.lock().await;
        state.away -= 1;
        if state.away == 0 && out.is_some() && !self.over.load(Ordering::SeqCst) {
            // Back in line like any call; a call stopped meanwhile stops waiting (the
            // dispatcher reports it timed out or cancelled).
            let unused = Mutex::new(String::new());
            tokio::select! {
                held = hold_in(&self.table, self.wanted.clone(), &unused) => self.keep(&mut state, held),
                () = self.cancel.cancelled() => {}
            }
        }
        if self.over.load(Ordering::SeqCst) {
            state.held = None;
        }
        out
    }
}

/// Ends a [`Holding`] when the call's work ends or is dropped.
pub(crate) struct Ends(pub(crate) Arc<Holding>);

impl Drop for Ends {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// The link of a call that holds resources: each request lets go of them until answered.
pub(crate) struct AwayLink {
    inner: Arc<dyn ClientLink>,
    holding: Arc<Holding>,
}

impl AwayLink {
    pub(crate) fn wrap(inner: &Arc<dyn ClientLink>, holding: &Arc<Holding>) -> Arc<dyn ClientLink> {
        Arc::new(Self {
            inner: Arc::clone(inner),
            holding: Arc::clone(holding),
        })
    }

    fn away(
        &self,
        ask: ClientAsk,
        asked: BoxFuture<'static, Result<Value, AskError>>,
    ) -> BoxFuture<'static, Result<Value, AskError>> {
        let holding = Arc::clone(&self.holding);
        Box::pin(async move {
            holding.away(asked).await.unwrap_or_else(|| {
                Err(AskError::NoAnswer {
                    method: ask.method(),
                    reason: "the call was stopped (its time limit, or a cancellation) first"
                        .to_owned(),
                })
            })
        })
    }
}

impl ClientLink for AwayLink {
    fn can_ask(&self, ask: ClientAsk) -> Result<(), &'static str> {
        self.inner.can_ask(ask)
    }

    fn request(
        &self,
        ask: ClientAsk,
        params: Value,
    ) -> BoxFuture<'static, Result<Value, AskError>> {
        self.away(ask, self.inner.request(ask, params))
    }

    fn request_as(
        &self,
        key: &str,
        ask: ClientAsk,
        params: Value,
    ) -> BoxFuture<'static, Result<Value, AskError>> {
        self.away(ask, self.inner.request_as(key, ask, params))
    }

    fn client_id(&self) -> usize {
        self.inner.client_id()
    }

    fn caller(&self) -> Option<crate::identity::Identity> {
        self.inner.caller()
    }

    fn is_waiting(&self) -> bool {
        self.inner.is_waiting()
    }

    fn note_missing(&self, ask: ClientAsk) {
        self.inner.note_missing(ask);
    }

    fn log(&self, level: &str, logger: Option<&str>, data: Value) -> BoxFuture<'static, ()> {
        self.inner.log(level, logger, data)
    }

    fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
        // Front ends look for their own link type behind this one.
        Arc::clone(&self.inner).into_any()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server() -> Vec<Resource> {
        vec![Resource::Server("s".to_owned())]
    }

    #[tokio::test]
    async fn a_call_waiting_for_its_client_lets_others_run_and_gets_back_in_line() {
        let locks = ResourceLocks::default();
        let waiting = Mutex::new(String::new());
        let alice = Holding::new(&locks, server(), CancellationToken::new());
        alice.take(&waiting).await;
        let (answer, answered) = tokio::sync::oneshot::channel::<()>();
        let asking = alice.away(answered);
        tokio::pin!(asking);
        assert!(futures::poll!(asking.as_mut()).is_pending());
        // Alice's user is away: Bob gets the server.
        let bob = Holding::new(&locks, server(), CancellationToken::new());
        bob.take(&waiting).await;
        // The answer is in, but Bob still runs: Alice waits for her turn.
        answer.send(()).unwrap();
        assert!(futures::poll!(asking.as_mut()).is_pending());
        bob.end();
        assert!(asking.await.is_some());
        let carol = Holding::new(&locks, server(), CancellationToken::new());
        let taking = carol.take(&waiting);
        tokio::pin!(taking);
        assert!(
            futures::poll!(taking.as_mut()).is_pending(),
            "Alice holds it again"
        );
        alice.end();
        taking.await;
        carol.end();
        assert_eq!(locks.in_use(), 0);
    }

    #[tokio::test]
    async fn a_stopped_call_stops_waiting_for_its_client() {
        let locks = ResourceLocks::default();
        let cancel = CancellationToken::new();
        let alice = Holding::new(&locks, server(), cancel.clone());
        alice.take(&Mutex::new(String::new())).await;
        let asking = alice.away(futures::future::pending::<()>());
        tokio::pin!(asking);
        assert!(futures::poll!(asking.as_mut()).is_pending());
        cancel.cancel();
        assert!(asking.await.is_none());
        alice.end();
        assert_eq!(locks.in_use(), 0);
    }
}
