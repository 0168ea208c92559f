//! The per-call context a tool receives: cancellation, progress, its session.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::client::ClientLink;
use crate::session::Session;

/// One progress report of a long call.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Work done so far, in the tool's own unit.
    pub progress: f64,
    /// Total work when known.
    pub total: Option<f64>,
    /// Short human message.
    pub message: Option<String>,
}

/// Where progress goes (an MCP `notifications/progress` sender, a terminal, nowhere).
pub type ProgressSink = Arc<dyn Fn(Progress) + Send + Sync>;

/// What a running tool gets besides its arguments.
#[derive(Clone)]
pub struct CallContext {
    /// Cancelled when the caller gives up or the deadline passes; long tools check it.
    pub cancel: CancellationToken,
    /// Where to report progress, when the caller asked for it.
    pub progress: Option<ProgressSink>,
    /// The session the call belongs to.
    pub session: Arc<Session>,
    /// When the call must be done, counted from its arrival (time spent waiting for its
    /// turn included). Set by the dispatcher; a tool with its own limit (run_shell's
    /// `timeout_ms`) stops itself by then.
    pub deadline: Option<tokio::time::Instant>,
    /// The way back to the client for this call alone, when it differs from the session's
    /// ([`Session::client`]): a 2026-07-28 request names its client's capabilities itself
    /// and is asked through `input_required` results. Read it with [`CallContext::client`].
    pub link: Option<Arc<dyn ClientLink>>,
}

impl std::fmt::Debug for CallContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallContext")
            .field("cancelled", &self.cancel.is_cancelled())
            .field("progress", &self.progress.is_some())
            .finish_non_exhaustive()
    }
}

impl CallContext {
    /// The context of a call in `session`: cancelled when the session ends, no progress
    /// sink, no deadline yet (the dispatcher sets it).
    pub fn new(session: Arc<Session>) -> Self {
        Self {
            cancel: session.ended().child_token(),
            progress: None,
            session,
            deadline: None,
            link: None,
        }
    }

    /// The client this call may ask for input (elicitation, sampling, roots): the call's own
    /// link when it has one, else its session's; `None` when nobody can be asked.
    pub fn client(&self) -> Option<&Arc<dyn ClientLink>> {
        self.link.as_ref().or_else(|| self.session.client())
    }

    /// The context of a call in a session of its own with nobody to ask
    /// ([`Session::unattended`]): tests, benchmarks, embedded one-off calls.
    pub fn unattended() -> Self {
        Self::new(Session::unattended())
    }

    /// Time left before the deadline; `None` without one.
    pub fn remaining(&self) -> Option<std::time::Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(tokio::time::Instant::now()))
    }

    /// Report progress if anyone listens.
    pub fn report(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        if let Some(sink) = &self.progress {
            sink(Progress {
                progress,
                total,
                message,
            });
        }
    }
}
