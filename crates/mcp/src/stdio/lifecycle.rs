//! Mixed lifecycles on one stdio session: a client may send stateless requests (protocol
//! 2026-07-28, the client named in each request's `_meta`) and later `initialize`, or the
//! other way round, and each request is judged by what it carries.
//!
//! rmcp fixes a session's lifecycle at its first request: when that is a stateless request,
//! the session becomes "inline" for good and every later request must carry the 2026-07-28
//! `_meta`, even after the client sent `initialize` — requests without it got `-32602`.
//! That flag is rmcp's own (not reachable from a handler), so the transport decides instead:
//! when the first request is a complete stateless one, it first hands rmcp an `initialize`
//! made from that request's own `_meta` (client info and capabilities, newest handshake
//! version) and swallows its answer. rmcp then keeps the session model, where a request with
//! the 2026-07-28 `_meta` is still served statelessly (rmcp checks it by its own `_meta`), and
//! a request without `_meta` is a session request. Until the client itself sends
//! `initialize`, such a request is refused here with rmcp's own `-32602`, as an inline
//! session would; afterwards it is served.

use rmcp::RoleServer;
use rmcp::model::{ClientRequest, GetMeta, JsonRpcMessage, NumberOrString, ProtocolVersion};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use serde_json::{Value, json};

/// The id of the `initialize` the transport makes; never a client's (it starts with a
/// control character, like the stand-in ids).
const OPENING_ID: &str = "\u{1}toolgate-opening-initialize";

/// Where the session stands.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum State {
    /// No lifecycle yet (nothing, or only `ping` and `server/discover`, has arrived).
    #[default]
    Undecided,
    /// Opened by the client's own `initialize`.
    Initialized,
    /// Opened by a stateless request; the client has not sent `initialize` (yet).
    Stateless,
}

/// What the transport does with an accepted message.
#[derive(Debug)]
#[allow(
    clippy::large_enum_variant,
    reason = "short-lived, moved once per message like the message itself; boxing would allocate per request"
)]
pub(super) enum Admit {
    /// Hand it to rmcp.
    Pass(RxJsonRpcMessage<RoleServer>),
    /// Hand rmcp the opening `initialize` first, then the message.
    Open {
        opening: RxJsonRpcMessage<RoleServer>,
        then: RxJsonRpcMessage<RoleServer>,
    },
    /// Answer with `-32602` and this message; rmcp never sees it.
    Refuse(String),
}

/// The lifecycle of one stdio session.
#[derive(Debug, Default)]
pub(super) struct Lifecycle {
    state: State,
}

impl Lifecycle {
    /// Decides what happens to `message` (a request that passed the transport's checks).
    pub(super) fn admit(&mut self, message: RxJsonRpcMessage<RoleServer>) -> Admit {
        let JsonRpcMessage::Request(request) = &message else {
            return Admit::Pass(message);
        };
        let meta = request.request.get_meta();
        let missing = meta.missing_required_keys(&ProtocolVersion::V_2026_07_28);
        match (&request.request, self.state) {
            (ClientRequest::InitializeRequest(_), _) => {
                self.state = State::Initialized;
                Admit::Pass(message)
            }
            // Neither opens a lifecycle in rmcp; they are answered as they are.
            (
                ClientRequest::PingRequest(_) | ClientRequest::DiscoverRequest(_),
                State::Undecided,
            ) => Admit::Pass(message),
            (_, State::Undecided) if missing.is_empty() => {
                let opening = opening_initialize(meta);
                self.state = State::Stateless;
                match opening {
                    Some(opening) => Admit::Open {
                        opening,
                        then: message,
                    },
                    None => Admit::Pass(message),
                }
            }
            (_, State::Stateless) if !missing.is_empty() => Admit::Refuse(format!(
                "request _meta is missing or has malformed required fields: {}; send `initialize` first to use requests without `_meta` on this session",
                missing.join(", ")
            )),
            _ => Admit::Pass(message),
        }
    }

    /// Whether `item` answers the opening `initialize` (and so goes to nobody).
    pub(super) fn is_opening_answer(item: &TxJsonRpcMessage<RoleServer>) -> bool {
        let id = match item {
            JsonRpcMessage::Response(r) => Some(&r.id),
            JsonRpcMessage::Error(e) => e.id.as_ref(),
            _ => None,
        };
        matches!(id, Some(NumberOrString::String(s)) if &**s == OPENING_ID)
    }
}

/// An `initialize` that says what the stateless request's `_meta` says.
fn opening_initialize(
    meta: &rmcp::model::RequestMetaObject,
) -> Option<RxJsonRpcMessage<RoleServer>> {
    let capabilities = meta
        .client_capabilities()
        .and_then(|c| serde_json::to_value(c).ok())
        .unwrap_or_else(|| json!({}));
    let client = meta
        .client_info()
        .and_then(|c| serde_json::to_value(c).ok())
        .unwrap_or_else(|| json!({"name": "", "version": ""}));
    let value: Value = json!({
        "jsonrpc": "2.0",
        "id": OPENING_ID,
        "method": "initialize",
        "params": {
            "protocolVersion": ProtocolVersion::LATEST_WITH_INITIALIZE.to_string(),
            "capabilities": capabilities,
            "clientInfo": client,
        },
    });
    serde_json::from_value(value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(value: Value) -> RxJsonRpcMessage<RoleServer> {
        serde_json::from_value(value).unwrap()
    }

    fn request(id: u64, method: &str, meta: Option<Value>) -> RxJsonRpcMessage<RoleServer> {
        let params = match meta {
            Some(meta) => json!({"_meta": meta}),
            None => json!({}),
        };
        message(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
    }

    fn stateless() -> Option<Value> {
        Some(json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }))
    }

    fn initialize(id: u64) -> RxJsonRpcMessage<RoleServer> {
        message(
            json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"}}}),
        )
    }

    #[test]
    fn a_stateless_opening_gets_an_initialize_and_initialize_later_lifts_the_meta_rule() {
        let mut life = Lifecycle::default();
        assert!(matches!(
            life.admit(request(1, "ping", None)),
            Admit::Pass(_)
        ));
        let Admit::Open { opening, then } = life.admit(request(2, "tools/list", stateless()))
        else {
            panic!("a stateless first request opens the session");
        };
        let JsonRpcMessage::Request(opening) = opening else {
            panic!("an initialize request")
        };
        assert!(matches!(
            opening.request,
            ClientRequest::InitializeRequest(_)
        ));
        assert!(matches!(then, JsonRpcMessage::Request(_)));
        assert!(matches!(
            life.admit(request(3, "tools/list", None)),
            Admit::Refuse(_)
        ));
        assert!(matches!(
            life.admit(request(4, "tools/list", stateless())),
            Admit::Pass(_)
        ));
        assert!(matches!(life.admit(initialize(5)), Admit::Pass(_)));
        assert!(matches!(
            life.admit(request(6, "tools/list", None)),
            Admit::Pass(_)
        ));
    }

    #[test]
    fn a_session_opened_by_initialize_is_left_to_rmcp() {
        let mut life = Lifecycle::default();
        assert!(matches!(life.admit(initialize(1)), Admit::Pass(_)));
        assert!(matches!(
            life.admit(request(2, "tools/list", stateless())),
            Admit::Pass(_)
        ));
        assert!(matches!(
            life.admit(request(3, "tools/list", None)),
            Admit::Pass(_)
        ));
    }

    #[test]
    fn only_the_opening_answer_is_swallowed() {
        let answer = |id: Value| -> TxJsonRpcMessage<RoleServer> {
            serde_json::from_value(json!({"jsonrpc": "2.0", "id": id, "result": {}})).unwrap()
        };
        assert!(Lifecycle::is_opening_answer(&answer(json!(OPENING_ID))));
        assert!(!Lifecycle::is_opening_answer(&answer(json!(1))));
        assert!(!Lifecycle::is_opening_answer(&answer(json!("x"))));
    }
}
