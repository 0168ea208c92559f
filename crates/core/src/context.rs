//! The per-call context a tool receives: cancellation, progress, its session; and the way
//! back to a session's client ([`ClientLink`]).

use std::any::Any;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

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
        }
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

/// What a session's client may be asked for in the middle of a call — as a gateway asks on
/// behalf of a mounted server that needs a user's answer, a model's completion or roots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAsk {
    /// `elicitation/create` with a form (`requestedSchema`).
    FormElicitation,
    /// `elicitation/create` with a URL for the user to open.
    UrlElicitation,
    /// `sampling/createMessage`.
    Sampling,
    /// `roots/list`.
    Roots,
}

impl ClientAsk {
    /// The JSON-RPC method of the request.
    pub fn method(self) -> &'static str {
        match self {
            Self::FormElicitation | Self::UrlElicitation => "elicitation/create",
            Self::Sampling => "sampling/createMessage",
            Self::Roots => "roots/list",
        }
    }
}

/// Why a request to the client brought no result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AskError {
    /// No client is connected to the session.
    #[error("the client is not connected")]
    NotConnected,
    /// The parameters do not make a valid request.
    #[error("not a valid `{method}` request: {reason}")]
    Invalid {
        /// The request's method.
        method: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The client answered with an error.
    #[error("the client refused `{method}`: {message}")]
    Refused {
        /// The request's method.
        method: &'static str,
        /// The client's error message.
        message: String,
    },
    /// The client did not answer (the connection closed, the request was cancelled).
    #[error("the client did not answer `{method}`: {reason}")]
    NoAnswer {
        /// The request's method.
        method: &'static str,
        /// What happened instead.
        reason: String,
    },
    /// The client's answer is not a result of the request.
    #[error("the client's answer to `{method}` is not valid: {reason}")]
    BadAnswer {
        /// The request's method.
        method: &'static str,
        /// What is wrong with it.
        reason: String,
    },
}

/// The way back to a session's client, for requests made while a call runs. Parameters and
/// results are the protocol's JSON, passed through as they are.
pub trait ClientLink: Send + Sync {
    /// Whether the client can be asked `ask` now: it must have said it handles it, and speak
    /// a revision that takes requests from the server mid-call. `Err` says why not.
    fn can_ask(&self, ask: ClientAsk) -> Result<(), &'static str>;

    /// Sends the request and returns the client's result; `Err` says why there is none.
    fn request(
        &self,
        ask: ClientAsk,
        params: serde_json::Value,
    ) -> futures::future::BoxFuture<'static, Result<serde_json::Value, AskError>>;

    /// The link as `Any`, so a front end can find its own client type behind it
    /// (`toolgate_mcp::McpClient::of`).
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}
