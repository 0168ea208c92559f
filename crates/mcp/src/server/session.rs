//! A handler's session: opening it, counting it live, choosing its client profile from the
//! client's name, and checking that each request comes from the caller who opened it.

use std::sync::{Arc, Mutex};

use rmcp::model::Implementation;
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use toolgate_core::{Approval, ClientProfile, Identity, Session, SessionInit};

use super::{Arrival, ToolgateServer};
use crate::client::McpClient;
use crate::metrics::Metrics;

/// A session counted in [`Metrics`]: open from `new_session` until its last handler drops.
pub(super) struct LiveSession(Arc<Metrics>);

impl LiveSession {
    fn open(metrics: &Arc<Metrics>) -> Arc<Self> {
        metrics.session_opened();
        Arc::new(Self(Arc::clone(metrics)))
    }
}

impl Drop for LiveSession {
    fn drop(&mut self) {
        self.0.session_closed();
    }
}

/// An MCP connection's session: nobody approves `ask` rules (an MCP client has no channel
/// toolgate would trust for that, so `ask` refuses and says which rule to change), the
/// profile is chosen when the client names itself, the link is the connection's client, and
/// the caller is the one the transport authenticated (none on stdio).
pub(super) fn open_session(
    identity: Option<Identity>,
    rate_key: Option<String>,
) -> (Arc<Session>, Arc<McpClient>) {
    let client = Arc::new(McpClient::for_caller(identity.clone()));
    let session = Session::new(SessionInit {
        approval: Approval::Nobody,
        profile: None,
        client: Some(Arc::clone(&client) as Arc<dyn toolgate_core::ClientLink>),
        identity,
        rate_key,
    });
    (session, client)
}

impl ToolgateServer {
    /// toolgate's instructions, then the mounted servers' (if any).
    pub(super) fn instructions(&self) -> String {
        let more = self
            .shared
            .more_instructions
            .as_ref()
            .map(|source| source())
            .unwrap_or_default();
        if more.is_empty() {
            return self.shared.instructions.clone();
        }
        format!("{}\n\n{more}", self.shared.instructions)
    }

    /// Chooses the session's profile from `client` (its name), unless one is chosen already.
    pub(super) fn adopt_client(&self, client: Option<&Implementation>) {
        if let Some(client) = client {
            // The audit log names the client as it named itself.
            self.session.name_client(&client.name);
        }
        if self.session.profile().is_some() {
            return;
        }
        let Some(client) = client else { return };
        let profile = self.shared.profiles.choose(&client.name);
        tracing::info!(
            client = %client.name,
            version = %client.version,
            profile = %profile.name,
            max_result_chars = profile.max_result_chars,
            max_error_chars = profile.max_error_chars,
            text_only = profile.shows_structured,
            "client profile chosen"
        );
        self.session.adopt_profile(profile);
    }

    /// Refuses a call whose HTTP caller is not the session's (the door refuses it first;
    /// this keeps a session from running as someone else should a request slip past it).
    pub(super) fn same_caller(&self, context: &RequestContext<RoleServer>) -> Result<(), McpError> {
        let caller = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<crate::http::door::Caller>());
        match caller {
            Some(crate::http::door::Caller(caller))
                if !crate::http::door::same_caller(caller.as_ref(), self.session.identity()) =>
            {
                Err(McpError::invalid_request(
                    "this session was opened by another caller: start a session of your own with your token",
                    None,
                ))
            }
            _ => Ok(()),
        }
    }

    /// Chooses the profile from a request's client: the 2026-07-28 protocol has no
    /// `initialize` and names the client in every request's `_meta` (Claude Code 2.1 speaks
    /// it), older ones named it at `initialize`.
    pub(super) fn adopt_requester(&self, context: &RequestContext<RoleServer>) {
        if self.session.profile().is_none() {
            self.adopt_client(context.client_info().as_ref());
        }
    }

    /// This session's client profile: chosen from `clientInfo` (at `initialize`, or from the
    /// first request's `_meta`), else the conservative one for unknown clients (then kept).
    pub fn profile(&self) -> Arc<ClientProfile> {
        if let Some(profile) = self.session.profile() {
            return profile;
        }
        self.session.adopt_profile(self.shared.profiles.choose(""));
        self.session
            .profile()
            .unwrap_or_else(|| Arc::new(ClientProfile::conservative()))
    }

    /// A handler for a new connection: same tools, prompts and resources, a new session.
    pub fn new_session(&self) -> Self {
        self.new_session_as(None, None)
    }

    /// [`Self::new_session`] for a caller the transport authenticated (`serve --http` with
    /// OAuth): the session's [`Identity`], fixed for its life; `rate_key` names a caller
    /// without one for rate limits (see [`toolgate_core::SessionInit::rate_key`]).
    pub fn new_session_as(&self, identity: Option<Identity>, rate_key: Option<String>) -> Self {
        let (session, client) = open_session(identity, rate_key);
        Self {
            session,
            client,
            subscriptions: Arc::default(),
            _live: self.shared.metrics.as_ref().map(LiveSession::open),
            ..self.clone()
        }
    }

    /// This handler's session.
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// Ends the session: every call still running is cancelled (the transport closed), and
    /// its resource subscriptions are dropped.
    pub fn end_session(&self) {
        self.session.end();
        self.subscriptions.clear();
    }

    /// Gives a `tools/call` request its place in the session's line; a transport calls this
    /// for each message in the order it reads them, so pipelined calls run in arrival order.
    pub fn stamp_arrival(
        &self,
        mut message: rmcp::service::RxJsonRpcMessage<RoleServer>,
    ) -> rmcp::service::RxJsonRpcMessage<RoleServer> {
        if let rmcp::model::JsonRpcMessage::Request(request) = &mut message
            && let rmcp::model::ClientRequest::CallToolRequest(call) = &mut request.request
        {
            let ticket = self.session.order().ticket();
            call.extensions
                .insert(Arrival(Arc::new(Mutex::new(Some(ticket)))));
        }
        message
    }

    /// The MCP client of this handler's session.
    pub fn client(&self) -> Arc<McpClient> {
        Arc::clone(&self.client)
    }
}
