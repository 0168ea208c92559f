//! The MCP client of one session as tools see it: log messages (`logging/setLevel`,
//! `notifications/message`) and the peer for sampling and elicitation.
//!
//! Tools stay protocol-neutral by default; one that knows it may run under MCP asks its
//! session for the client with [`McpClient::of`] and gets nothing connected elsewhere (in
//! `toolgate call` or the agent loop), so it must treat the client as optional.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures::future::BoxFuture;
use rmcp::model::{ClientCapabilities, ServerRequest};
use rmcp::{Peer, RoleServer, ServiceError};
use serde_json::Value;
use toolgate_core::{AskError, CallContext, ClientAsk, ClientLink};

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

/// The connected MCP client of one session: the session's [`ClientLink`].
#[derive(Default)]
pub struct McpClient {
    peer: Mutex<Option<Peer<RoleServer>>>,
    /// The least severe level the client wants; `None` until it sends `logging/setLevel`,
    /// and then every message is sent (as the TypeScript SDK does).
    min_level: Mutex<Option<LogLevel>>,
    /// Whether the client's requests carry their protocol version in `_meta` (2026-07-28):
    /// such a client takes no requests from the server in the middle of a call.
    stateless: AtomicBool,
    /// The session's caller, when the transport authenticated one.
    caller: Option<toolgate_core::Identity>,
}

impl McpClient {
    /// The link of a session opened by `caller`.
    pub(crate) fn for_caller(caller: Option<toolgate_core::Identity>) -> Self {
        Self {
            caller,
            ..Self::default()
        }
    }
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
    /// The MCP client of the session `ctx` belongs to; an unconnected one outside MCP (in
    /// `toolgate call` or the agent loop), which sends nothing.
    pub fn of(ctx: &CallContext) -> Arc<Self> {
        ctx.session
            .client()
            .and_then(|link| Arc::clone(link).into_any().downcast::<Self>().ok())
            .unwrap_or_default()
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
        send_log(self.peer(), self.min_level(), level, logger, data).await
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

/// Sends a log message through `peer` when `level` passes `min_level`; whether it was sent.
async fn send_log(
    peer: Option<Peer<RoleServer>>,
    min_level: Option<LogLevel>,
    level: LogLevel,
    logger: Option<&str>,
    data: Value,
) -> bool {
    if min_level.is_some_and(|min| level < min) {
        return false;
    }
    let Some(peer) = peer else {
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

/// Whether a client that declared `caps` (in `initialize`, or in a 2026-07-28 request's
/// `_meta`) handles `ask`; the `Err` is [`ClientLink::can_ask`]'s answer when it does not.
#[allow(deprecated)] // sampling and roots: deprecated by SEP-2577, still declared by 2025 clients
pub(crate) fn offers(caps: &ClientCapabilities, ask: ClientAsk) -> Result<(), &'static str> {
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

impl ClientLink for McpClient {
    fn caller(&self) -> Option<toolgate_core::Identity> {
        self.caller.clone()
    }

    fn can_ask(&self, ask: ClientAsk) -> Result<(), &'static str> {
        let info = self
            .peer()
            .and_then(|peer| peer.peer_info())
            .ok_or("the client is not connected")?;
        if self.stateless.load(Ordering::Relaxed) || !info.protocol_version.has_initialize() {
            return Err(
                "the client speaks MCP 2026-07-28 and takes no requests mid-call; it is asked through `input_required` results of the call that needs the answer",
            );
        }
        offers(&info.capabilities, ask)
    }

    fn request(
        &self,
        ask: ClientAsk,
        params: Value,
    ) -> BoxFuture<'static, Result<Value, AskError>> {
        let peer = self.peer();
        Box::pin(async move {
            let peer = peer.ok_or(AskError::NotConnected)?;
            let method = ask.method();
            let mut message = serde_json::json!({"method": method});
            if !params.is_null() {
                message["params"] = params;
            }
            let request: ServerRequest =
                serde_json::from_value(message).map_err(|e| AskError::Invalid {
                    method,
                    reason: e.to_string(),
                })?;
            let result = peer.send_request(request).await.map_err(|e| match e {
                ServiceError::McpError(e) => AskError::Refused {
                    method,
                    message: e.message.into_owned(),
                },
                other => AskError::NoAnswer {
                    method,
                    reason: other.to_string(),
                },
            })?;
            serde_json::to_value(result).map_err(|e| AskError::BadAnswer {
                method,
                reason: e.to_string(),
            })
        })
    }

    fn log(&self, level: &str, logger: Option<&str>, data: Value) -> BoxFuture<'static, ()> {
        #[allow(deprecated)] // logging: deprecated by SEP-2577, used by 2025 clients
        let level = serde_json::from_value::<rmcp::model::LoggingLevel>(Value::from(level))
            .map_or(LogLevel::Info, LogLevel::from);
        let logger = logger.map(str::to_owned);
        let (peer, min_level) = (self.peer(), self.min_level());
        Box::pin(async move {
            send_log(peer, min_level, level, logger.as_deref(), data).await;
        })
    }

    fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
        self
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

    #[test]
    fn an_empty_elicitation_capability_offers_forms_only() {
        let caps = |json: Value| serde_json::from_value::<ClientCapabilities>(json).unwrap();
        let empty = caps(serde_json::json!({"elicitation": {}}));
        assert!(offers(&empty, ClientAsk::FormElicitation).is_ok());
        assert!(offers(&empty, ClientAsk::UrlElicitation).is_err());
        let url = caps(serde_json::json!({"elicitation": {"url": {}}}));
        assert!(offers(&url, ClientAsk::UrlElicitation).is_ok());
        assert!(offers(&url, ClientAsk::FormElicitation).is_err());
        let none = caps(serde_json::json!({}));
        for ask in [ClientAsk::Sampling, ClientAsk::Roots] {
            assert_eq!(offers(&none, ask), Err("the client does not offer it"));
        }
    }

    #[tokio::test]
    async fn unconnected_client_sends_nothing() {
        let session = toolgate_core::Session::new(toolgate_core::SessionInit {
            approval: toolgate_core::Approval::Nobody,
            profile: None,
            client: Some(Arc::new(McpClient::default())),
            identity: None,
            rate_key: None,
        });
        let ctx = CallContext::new(session);
        let client = McpClient::of(&ctx);
        assert!(client.peer().is_none());
        assert!(!client.log(LogLevel::Error, None, Value::Null).await);
        assert!(client.can_ask(ClientAsk::Sampling).is_err());
        // The same session hands out the same client.
        client.set_min_level(LogLevel::Warning);
        assert_eq!(McpClient::of(&ctx).min_level(), Some(LogLevel::Warning));
    }

    #[tokio::test]
    async fn outside_mcp_the_client_is_unconnected() {
        let client = McpClient::of(&CallContext::unattended());
        assert!(client.peer().is_none());
        assert!(!client.log(LogLevel::Error, None, Value::Null).await);
    }
}
