//! The `server/discover` probe of a stdio server, bounded in time ([`Probe`]).
//!
//! rmcp's `Auto` lifecycle sends `server/discover` and, when the answer is a JSON-RPC error,
//! sends `initialize` on the same connection; for a probe nobody answers it waits 10 s. Stdio
//! servers of the 2025 revisions take an unknown request before `initialize` three ways:
//! most answer an error at once (the TypeScript SDK's `-32601`, the Python SDK's `-32600`);
//! some log it and answer nothing (older Python SDK servers); a few exit. [`Probe`] wraps the
//! transport so the first two cost nothing and the third is recognisable:
//! - an unanswered probe is answered in the server's place once its bound has passed (an
//!   error, so rmcp falls back to `initialize` at once), and the server's late answer, should
//!   one come, is dropped rather than taken for the answer to `initialize`;
//! - an answer that is not a discover result (some servers answer `{}` to any request) is
//!   read as an error, so it falls back too;
//! - the end of the server's output while the probe waits is noted ([`Probing::Closed`]): the
//!   caller starts the server again and opens it with `initialize`.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, ErrorCode, ErrorData, NumberOrString, RequestId,
    ServerJsonRpcMessage, ServerResult,
};
use rmcp::transport::Transport;
use tokio::time::Instant;

/// How far the probe got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Probing {
    /// No `server/discover` was sent yet.
    #[default]
    NotSent,
    /// Sent; no answer yet.
    Waiting,
    /// The server answered it (a result or an error).
    Answered,
    /// Given up on after its bound (or because `initialize` was sent instead).
    Unanswered,
    /// The server's output ended while the probe waited: it exited or closed stdout.
    Closed,
}

/// What the caller reads of a [`Probe`] it handed to rmcp.
#[derive(Debug, Clone, Default)]
pub(crate) struct ProbeState(Arc<Mutex<Probing>>);

impl ProbeState {
    /// How far the probe got.
    pub(crate) fn get(&self) -> Probing {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set(&self, to: Probing) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = to;
    }
}

/// A client transport that bounds the wait for the answer to `server/discover`.
pub(crate) struct Probe<T> {
    inner: T,
    /// How long the probe may go unanswered.
    wait: Duration,
    /// The probe in flight and when to stop waiting for it.
    pending: Option<(RequestId, Instant)>,
    /// A probe given up on: its answer, if it still comes, is dropped.
    late: Option<RequestId>,
    state: ProbeState,
}

impl<T> Probe<T> {
    /// Wraps `inner`; a probe sent through it waits at most `wait` for its answer.
    pub(crate) fn new(inner: T, wait: Duration) -> (Self, ProbeState) {
        let state = ProbeState::default();
        let probe = Self {
            inner,
            wait,
            pending: None,
            late: None,
            state: state.clone(),
        };
        (probe, state)
    }

    /// Gives up on the probe in flight, if any.
    fn give_up(&mut self) -> Option<RequestId> {
        let (id, _) = self.pending.take()?;
        self.late = Some(id.clone());
        self.state.set(Probing::Unanswered);
        Some(id)
    }

    /// What to do with `message` from the server: pass it on, or drop it (the late answer
    /// to a probe given up on).
    fn sort(&mut self, message: &ServerJsonRpcMessage) -> Sorted {
        let id = match message {
            ServerJsonRpcMessage::Response(response) => Some(&response.id),
            ServerJsonRpcMessage::Error(error) => error.id.as_ref(),
            _ => return Sorted::Pass,
        };
        let anonymous_error = id.is_none();
        if let Some((probe, _)) = &self.pending
            && (anonymous_error || id.is_some_and(|id| same_id(probe, id)))
        {
            // An error without an id while the probe waits answers it (rmcp reads it so).
            self.pending = None;
            self.state.set(Probing::Answered);
            return Sorted::Answer;
        }
        if let Some(late) = &self.late
            && (anonymous_error || id.is_some_and(|id| same_id(late, id)))
        {
            // An error without an id after the probe was given up on is most likely its late
            // answer (a server that cannot read an id cannot read `initialize` either).
            self.late = None;
            return Sorted::Drop;
        }
        Sorted::Pass
    }
}

enum Sorted {
    Pass,
    /// The answer to the probe.
    Answer,
    Drop,
}

/// The server's answer to the probe as rmcp should read it: a result that is not a
/// discover result (a server that answers `{}` to whatever it does not know) reads as the
/// error it stands for, so rmcp falls back to `initialize` instead of failing.
fn discover_answer(message: ServerJsonRpcMessage) -> ServerJsonRpcMessage {
    match message {
        ServerJsonRpcMessage::Response(response)
            if !matches!(response.result, ServerResult::DiscoverResult(_)) =>
        {
            ServerJsonRpcMessage::error(
                ErrorData::new(
                    ErrorCode::METHOD_NOT_FOUND,
                    "answered server/discover with something other than a discover result",
                    None,
                ),
                Some(response.id),
            )
        }
        other => other,
    }
}

/// Whether a response's `id` is the request's `ours` (rmcp also accepts a number echoed as
/// a string).
fn same_id(ours: &RequestId, id: &RequestId) -> bool {
    ours == id
        || matches!((ours, id), (NumberOrString::Number(n), NumberOrString::String(s)) if s.parse::<i64>().ok() == Some(*n))
}

impl<T> Transport<RoleClient> for Probe<T>
where
    T: Transport<RoleClient>,
{
    type Error = T::Error;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let ClientJsonRpcMessage::Request(request) = &item {
            match &request.request {
                ClientRequest::DiscoverRequest(_) => {
                    self.pending = Some((request.id.clone(), Instant::now() + self.wait));
                    self.state.set(Probing::Waiting);
                }
                // rmcp gave up on the probe itself (its own, longer bound).
                ClientRequest::InitializeRequest(_) => {
                    self.give_up();
                }
                _ => {}
            }
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        loop {
            let message = match self.pending.as_ref().map(|(_, deadline)| *deadline) {
                Some(deadline) => {
                    tokio::select! {
                        message = self.inner.receive() => message,
                        // The transport's `receive` keeps a partial line across a dropped call.
                        () = tokio::time::sleep_until(deadline) => {
                            let id = self.give_up()?;
                            tracing::debug!(wait_ms = self.wait.as_millis() as u64, "server/discover unanswered; falling back to initialize");
                            return Some(ServerJsonRpcMessage::error(
                                ErrorData::new(
                                    ErrorCode::METHOD_NOT_FOUND,
                                    format!(
                                        "no answer to server/discover within {} ms; taken for a server without it",
                                        self.wait.as_millis()
                                    ),
                                    None,
                                ),
                                Some(id),
                            ));
                        }
                    }
                }
                None => self.inner.receive().await,
            };
            let Some(message) = message else {
                if self.pending.take().is_some() {
                    self.state.set(Probing::Closed);
                }
                return None;
            };
            match self.sort(&message) {
                Sorted::Pass => return Some(message),
                Sorted::Answer => return Some(discover_answer(message)),
                Sorted::Drop => {
                    tracing::debug!("dropped the late answer to server/discover");
                }
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
#[path = "probe_tests.rs"]
mod tests;
