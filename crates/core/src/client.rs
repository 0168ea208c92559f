//! The way back to a session's client ([`ClientLink`]): what it may be asked in the middle
//! of a call ([`ClientAsk`]) and why an ask brought nothing ([`AskError`]).

use std::any::Any;
use std::sync::Arc;

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
    /// The client did not declare that it handles the request (a 2026-07-28 client names
    /// its capabilities in each request). A call that fails for this reason is answered
    /// with the protocol's "missing required client capability" error.
    #[error("the client did not declare the capability `{method}` needs")]
    NotDeclared {
        /// The request's method.
        method: &'static str,
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

    /// Like [`ClientLink::request`], with `key` naming the request among others the call
    /// makes at the same time: a 2026-07-28 client receives them as one `input_required`
    /// result whose `inputRequests` are keyed so (a repeated key gets a suffix). Links that
    /// send each request on its own ignore the key.
    fn request_as(
        &self,
        key: &str,
        ask: ClientAsk,
        params: serde_json::Value,
    ) -> futures::future::BoxFuture<'static, Result<serde_json::Value, AskError>> {
        let _ = key;
        self.request(ask, params)
    }

    /// What identifies the client behind the link: the links of one client (its session's
    /// link and the links of single calls, as a 2026-07-28 request has) give the same value,
    /// so a relay can tell calls of one client from calls of several. By default the link's
    /// own address.
    fn client_id(&self) -> usize {
        std::ptr::from_ref(self).cast::<()>() as usize
    }

    /// The caller of the session behind the link (`serve --http` with `[server.auth]`),
    /// for permission rules with a condition on the caller; `None` by default (no identity).
    fn caller(&self) -> Option<crate::identity::Identity> {
        None
    }

    /// Whether a request sent through this link is waiting for the client's answer (a
    /// 2026-07-28 round the client has not answered yet): the call is blocked on it, so a
    /// new request of a mounted server is not this call's. `false` by default.
    fn is_waiting(&self) -> bool {
        false
    }

    /// Notes that the work of the call needed `ask` and the client cannot be asked it (a
    /// relay that found [`ClientLink::can_ask`] refusing, and answered for the client). A
    /// 2026-07-28 request whose work then fails is answered with the protocol's "missing
    /// required client capability" error. Nothing by default.
    fn note_missing(&self, ask: ClientAsk) {
        let _ = ask;
    }

    /// Passes a log message on to the client (a mounted server's `notifications/message`),
    /// when the client takes log messages at `level` (an RFC 5424 name: "debug" … "emergency").
    /// Nothing by default.
    fn log(
        &self,
        level: &str,
        logger: Option<&str>,
        data: serde_json::Value,
    ) -> futures::future::BoxFuture<'static, ()> {
        let _ = (level, logger, data);
        Box::pin(async {})
    }

    /// The link as `Any`, so a front end can find its own client type behind it
    /// (`toolgate_mcp::McpClient::of`).
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}
