//! The per-call context a tool receives: cancellation, progress, session state.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

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

/// State that lives as long as a session (an MCP connection, an agent conversation) and that
/// tools share, keyed by type — for example what `read_file` last saw of each file.
#[derive(Default)]
pub struct SessionState {
    slots: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl std::fmt::Debug for SessionState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionState").finish_non_exhaustive()
    }
}

impl SessionState {
    /// The session's value of type `T`, created on first use.
    pub fn get<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        let mut slots = match self.slots.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        let slot = slots
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Arc::new(T::default()) as Arc<dyn Any + Send + Sync>)
            .clone();
        drop(slots);
        match slot.downcast::<T>() {
            Ok(value) => value,
            // Unreachable: the slot for TypeId::of::<T>() always holds a T.
            Err(_) => Arc::new(T::default()),
        }
    }
}

/// What a running tool gets besides its arguments.
#[derive(Clone, Default)]
pub struct CallContext {
    /// Cancelled when the caller gives up or the deadline passes; long tools check it.
    pub cancel: CancellationToken,
    /// Where to report progress, when the caller asked for it.
    pub progress: Option<ProgressSink>,
    /// Session-scoped state.
    pub session: Arc<SessionState>,
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
    ) -> futures::future::BoxFuture<'static, Result<serde_json::Value, String>>;
}

/// The session's [`ClientLink`], in its [`SessionState`]; none outside a client session
/// (`toolgate call`, the agent loop), where nobody can be asked.
#[derive(Default)]
pub struct SessionClient {
    link: Mutex<Option<Arc<dyn ClientLink>>>,
}

impl SessionClient {
    /// The link of the session `ctx` belongs to, if it has one.
    pub fn of(ctx: &CallContext) -> Option<Arc<dyn ClientLink>> {
        ctx.session.get::<Self>().get()
    }

    /// Sets the session's link (its front end does, once it knows its client).
    pub fn set(&self, link: Arc<dyn ClientLink>) {
        *self
            .link
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(link);
    }

    /// The link, if set.
    pub fn get(&self) -> Option<Arc<dyn ClientLink>> {
        self.link
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}
