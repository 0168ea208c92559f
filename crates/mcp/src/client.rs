//! The MCP client of one session as tools see it: log messages (`logging/setLevel`,
//! `notifications/message`) and the peer for sampling and elicitation.
//!
//! Tools stay protocol-neutral by default; one that knows it may run under MCP asks its
//! session for the client with [`McpClient::of`] and gets nothing connected elsewhere (in
//! `toolgate call` or the agent loop), so it must treat the client as optional.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures::future::BoxFuture;
use rmcp::model::ServerRequest;
use rmcp::{Peer, RoleServer, ServiceError};
use serde_json::Value;
use toolgate_core::{CallContext, ClientAsk, ClientLink, SessionClient, SessionState};

/// Severity of a log message, lowest first (RFC 5424 levels, as MCP uses them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// Detailed debugging information.
    Debug,
    /// Normal operational messages.
    Info,
    /// Normal but significant events.
    Notice,
    /// Warning conditions.
    Warning,
    /// Error conditions.
    Error,
    /// Critical conditions.
    Critical,
    /// Action must be taken immediately.
    Alert,
    /// The system is unusable.
    Emergency,
}

// rmcp marks its logging types deprecated (SEP-2577 drops logging from the 2026 protocol);
// toolgate keeps serving it for the clients that still use it, behind its own type.
#[allow(deprecated)]
impl From<LogLevel> for rmcp::model::LoggingLevel {
    fn from(level: LogLevel) -> Self {
        use rmcp::model::LoggingLevel as L;
        match level {
            LogLevel::Debug => L::Debug,
            LogLevel::Info => L::Info,
            LogLevel::Notice => L::Notice,
            LogLevel::Warning => L::Warning,
            LogLevel::Error => L::Error,
            LogLevel::Critical => L::Critical,
            LogLevel::Alert => L::Alert,
            LogLevel::Emergency => L::Emergency,
        }
    }
}

#[allow(deprecated)]
impl From<rmcp::model::LoggingLevel> for LogLevel {
    fn from(level: rmcp::model::LoggingLevel) -> Self {
        use rmcp::model::LoggingLevel as L;
        match level {
            L::Debug => LogLevel::Debug,
            L::Info => LogLevel::Info,
            L::Notice => LogLevel::Notice,
            L::Warning => LogLevel::Warning,
            L::Error => LogLevel::Error,
            L::Critical => LogLevel::Critical,
            L::Alert => LogLevel::Alert,
            L::Emergency => LogLevel::Emergency,
        }
    }
}

/// The connected MCP client of one session, kept in the session state.
#[derive(Default)]
pub struct McpClient {
    peer: Mutex<Option<Peer<RoleServer>>>,
    /// The least severe level the client wants; `None` until it sends `logging/setLevel`,
    /// and then every message is sent (as the TypeScript SDK does).
    min_level: Mutex<Option<LogLevel>>,
    /// Whether the client's requests carry their protocol version in `_meta` (2026-07-28):
    /// such a client takes no requests from the server in the middle of a call.
    stateless: AtomicBool,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("connected", &lock(&self.peer).is_some())
            .field("min_level", &*lock(&self.min_level))
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl McpClient {
    /// The MCP client of the session `ctx` belongs to (unconnected outside MCP).
    pub fn of(ctx: &CallContext) -> Arc<Self> {
        ctx.session.get::<Self>()
    }

    /// The peer, for server-to-client requests such as `sampling/createMessage` or
    /// `elicitation/create`; `None` outside an MCP session. Awaited inside a tool call, those
    /// requests ride the call's own HTTP response stream.
    pub fn peer(&self) -> Option<Peer<RoleServer>> {
        lock(&self.peer).clone()
    }

    /// The level the client asked for with `logging/setLevel`, if it did.
    pub fn min_level(&self) -> Option<LogLevel> {
        *lock(&self.min_level)
    }

    /// Sends a log message to the client when connected and `level` passes its filter;
    /// returns whether it was sent. `logger` names the source (e.g. the tool).
    pub async fn log(&self, level: LogLevel, logger: Option<&str>, data: Value) -> bool {
        if self.min_level().is_some_and(|min| level < min) {
            return false;
        }
        let Some(peer) = self.peer() else {
            return false;
        };
        #[allow(deprecated)]
        let mut param = rmcp::model::LoggingMessageNotificationParam::new(level.into(), data);
        if let Some(logger) = logger {
            param = param.with_logger(logger);
        }
        #[allow(deprecated)]
        let sent = peer.notify_logging_message(param).await;
        sent.is_ok()
    }

    /// A fresh session state whose [`SessionClient`] link is this session's MCP client, so
    /// that a tool (a mounted server's proxy) can ask the client while it runs.
    pub(crate) fn new_session() -> Arc<SessionState> {
        let session = Arc::new(SessionState::default());
        let link: Arc<dyn ClientLink> = session.get::<Self>();
        session.get::<SessionClient>().set(link);
        session
    }

    pub(crate) fn attach(&self, peer: &Peer<RoleServer>) {
        *lock(&self.peer) = Some(peer.clone());
    }

    /// Records the protocol revision a request of the client carries in its `_meta`.
    pub(crate) fn saw_request(&self, meta: &rmcp::model::RequestMetaObject) {
        if let Some(version) = meta.protocol_version() {
            self.stateless
                .store(!version.has_initialize(), Ordering::Relaxed);
        }
    }

    pub(crate) fn set_min_level(&self, level: LogLevel) {
        *lock(&self.min_level) = Some(level);
    }
}

impl ClientLink for McpClient {
    fn can_ask(&self, ask: ClientAsk) -> Result<(), &'static str> {
        let info = self
            .peer()
            .and_then(|peer| peer.peer_info())
            .ok_or("the client is not connected")?;
        if self.stateless.load(Ordering::Relaxed) || !info.protocol_version.has_initialize() {
            return Err(
                "the client speaks MCP 2026-07-28, whose clients are asked only through `input_required` results, which toolgate does not send to its clients yet",
            );
        }
        let caps = &info.capabilities;
        #[allow(deprecated)] // sampling and roots: deprecated by SEP-2577, used by 2025 clients
        let offered = match ask {
            // An empty `elicitation: {}` means forms (the 2025-06-18 meaning).
            ClientAsk::FormElicitation => caps
                .elicitation
                .as_ref()
                .is_some_and(|e| e.form.is_some() || e.url.is_none()),
            ClientAsk::UrlElicitation => caps.elicitation.as_ref().is_some_and(|e| e.url.is_some()),
            ClientAsk::Sampling => caps.sampling.is_some(),
            ClientAsk::Roots => caps.roots.is_some(),
        };
        offered.then_some(()).ok_or("the client does not offer it")
    }

    fn request(&self, ask: ClientAsk, params: Value) -> BoxFuture<'static, Result<Value, String>> {
        let peer = self.peer();
        Box::pin(async move {
            let peer = peer.ok_or("the client is not connected")?;
            let mut message = serde_json::json!({"method": ask.method()});
            if !params.is_null() {
                message["params"] = params;
            }
            let request: ServerRequest = serde_json::from_value(message)
                .map_err(|e| format!("not a valid `{}` request: {e}", ask.method()))?;
            let result = peer.send_request(request).await.map_err(|e| match e {
                ServiceError::McpError(e) => {
                    format!("the client refused `{}`: {}", ask.method(), e.message)
                }
                other => format!("the client did not answer `{}`: {other}", ask.method()),
            })?;
            serde_json::to_value(result).map_err(|e| e.to_string())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_order_by_severity() {
        assert!(LogLevel::Debug < LogLevel::Info);
        assert!(LogLevel::Warning < LogLevel::Error);
        assert!(LogLevel::Alert < LogLevel::Emergency);
    }

    #[tokio::test]
    async fn unconnected_client_sends_nothing() {
        let ctx = CallContext::default();
        let client = McpClient::of(&ctx);
        assert!(client.peer().is_none());
        assert!(!client.log(LogLevel::Error, None, Value::Null).await);
        // The same session hands out the same client.
        client.set_min_level(LogLevel::Warning);
        assert_eq!(McpClient::of(&ctx).min_level(), Some(LogLevel::Warning));
    }
}
