//! What a mounted server asks of the client — a user's answer (elicitation), a model's
//! completion (sampling) — relayed to the client of the session whose call it serves.
//!
//! Two ways in: a 2025 server sends `elicitation/create` or `sampling/createMessage` while a
//! call runs (the connection's [`Callers`] say whose call that is), and a 2026-07-28 server
//! answers the call with `input_required` (the call path fulfils each request for its own
//! caller and sends the call again, see `mount/call.rs`). Nobody to ask — `toolgate call`,
//! a client without the capability, a request that came with a call that has ended or with
//! none, calls of several sessions in flight where the transport cannot tell whose it is —
//! declines an elicitation and refuses the rest with a reason.
//!
//! Whose call a request belongs to: over Streamable HTTP a server sends it on the response
//! stream of the call it serves (MCP 2025-11-25, "Transports": the server's requests on
//! that stream relate to that request), which rmcp reports as the request's
//! [`InboundStreamOrigin`]; toolgate tags each call's request ([`CallTag`]) so the transport
//! notes its id. stdio has no such thing: there a request goes to the one client with calls
//! in flight ([`Callers::only`]).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{InputRequest, InputRequests, InputResponses, RequestId};
use rmcp::service::InboundStreamOrigin;
use serde_json::{Map, Value, json};
use toolgate_core::{AskError, ClientAsk, ClientLink, Decision, Identity, Policy};

/// Why a mounted server's request to the client brought no result.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RelayError {
    /// Nobody can be asked (no client, a client without the capability, a rule); the
    /// reason says which.
    #[error(
        "MCP server `{server}` asked the client for `{}`, which cannot be relayed: {why}",
        .ask.method()
    )]
    Unrelayable {
        server: String,
        ask: ClientAsk,
        why: String,
    },
    /// The client was asked and gave no result.
    #[error(transparent)]
    Client(#[from] AskError),
    /// A request or answer that does not encode as JSON.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// A 2026-07-28 input request of a kind toolgate does not know.
    #[error("an input request of an unknown kind")]
    UnknownKind,
}

/// The callers of the calls in flight on one connection.
#[derive(Default)]
pub(crate) struct Callers {
    inner: Mutex<CallerList>,
}

#[derive(Default)]
struct CallerList {
    next: u64,
    /// Each call in flight with its session's link (`None`: a caller nobody can ask).
    calls: Vec<(u64, Option<Arc<dyn ClientLink>>)>,
    /// The requests each call sent so far, by the call's number.
    sent: Vec<(u64, RequestId)>,
    /// Requests of calls that have ended, the latest [`ENDED`]: a server request that comes
    /// with one of them goes to nobody.
    ended: VecDeque<RequestId>,
    /// Whether calls of more than one caller (identity; sessions without one are one
    /// caller) have used this connection: then a request that cannot be tied to a call
    /// goes to nobody, not to whoever happens to be in flight.
    shared: bool,
    /// The caller of the calls so far, while only one has called.
    first: Option<Option<(Option<String>, String)>>,
}

/// Ended calls' requests remembered per connection; older ones are forgotten (a request
/// that late is given to the one client in flight, as on stdio).
const ENDED: usize = 1024;

/// Marks a call's request to the server (in its extensions) so the transport notes its id
/// for the call ([`Callers::sent`]) before it goes out.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallTag(u64);

impl Callers {
    fn lock(&self) -> std::sync::MutexGuard<'_, CallerList> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records a call in flight until the guard is dropped.
    pub(crate) fn enter(self: &Arc<Self>, link: Option<Arc<dyn ClientLink>>) -> CallerGuard {
        let mut list = self.lock();
        let who = link
            .as_ref()
            .and_then(|l| l.caller())
            .map(|i| (i.issuer, i.subject));
        match &list.first {
            None => list.first = Some(who),
            Some(first) if *first != who => list.shared = true,
            Some(_) => {}
        }
        list.next += 1;
        let id = list.next;
        list.calls.push((id, link));
        CallerGuard {
            callers: Arc::clone(self),
            id,
        }
    }

    /// Notes that the call `tag` marks sent the request `id`.
    pub(crate) fn sent(&self, tag: CallTag, id: RequestId) {
        let mut list = self.lock();
        if list.calls.iter().any(|(call, _)| *call == tag.0) {
            list.sent.push((tag.0, id));
        }
    }

    /// The client a request of the server is for, from what rmcp says about where it came
    /// from (`extensions` of its context): the caller of the call whose stream it came on;
    /// nobody when that call has ended or it came on the server's own stream; without
    /// that knowledge (stdio), [`Callers::only`].
    pub(crate) fn asking(
        &self,
        extensions: &rmcp::model::Extensions,
    ) -> Result<Arc<dyn ClientLink>, &'static str> {
        match extensions.get::<InboundStreamOrigin>() {
            Some(InboundStreamOrigin::OutboundRequest(id)) => {
                let list = self.lock();
                if let Some((call, _)) = list.sent.iter().find(|(_, sent)| sent == id) {
                    let link = list.calls.iter().find(|(c, _)| c == call);
                    return link
                        .and_then(|(_, link)| link.clone())
                        .ok_or("the call comes from a session without an MCP client");
                }
                if list.ended.contains(id) {
                    return Err("it came with a call that has ended");
                }
                // A request toolgate sent for no call of a session (a list, a ping).
                drop(list);
                self.untied()
            }
            // A server that sends it on its own stream (the TypeScript SDK's
            // `elicitInput` without `relatedRequestId` does), or stdio.
            Some(InboundStreamOrigin::Unassociated) | None => self.untied(),
        }
    }

    /// The client for a request that cannot be tied to a call: the one client in flight
    /// ([`Callers::only`]) while one caller uses this connection; nobody once several do,
    /// since it may belong to a call of someone else that has ended.
    fn untied(&self) -> Result<Arc<dyn ClientLink>, &'static str> {
        if self.lock().shared {
            return Err(
                "the server's request is not tied to a call (sent outside the call's response stream, or over stdio) and several callers use this server",
            );
        }
        self.only()
    }

    /// The one client a request of the server can be for: every call in flight must come
    /// from it ([`ClientLink::client_id`]), and the latest of its calls asks. Calls blocked
    /// on an answer their client has not sent yet ([`ClientLink::is_waiting`]) are left out
    /// while another call is in flight (the blocked one is not the one asking again; a round
    /// a client abandoned does not stop the others), and count when there is nothing else
    /// (one call asking several things at once). `Err` says why there is nobody.
    pub(crate) fn only(&self) -> Result<Arc<dyn ClientLink>, &'static str> {
        let list = self.lock();
        let waiting =
            |link: &Option<Arc<dyn ClientLink>>| link.as_ref().is_some_and(|l| l.is_waiting());
        let candidates: Vec<&Option<Arc<dyn ClientLink>>> =
            if list.calls.iter().all(|(_, link)| waiting(link)) {
                list.calls.iter().rev().map(|(_, link)| link).collect()
            } else {
                let active = list.calls.iter().rev().map(|(_, link)| link);
                active.filter(|link| !waiting(link)).collect()
            };
        let mut links = candidates.into_iter();
        let Some(latest) = links.next() else {
            return Err("no call of the server is in progress");
        };
        let Some(latest) = latest else {
            return Err("the call comes from a session without an MCP client");
        };
        let client = latest.client_id();
        if links.any(|l| l.as_ref().is_none_or(|l| l.client_id() != client)) {
            return Err(
                "calls from several sessions are in progress, so whose user to ask is unknown",
            );
        }
        Ok(Arc::clone(latest))
    }
}

/// Forgets a call when it ends.
pub(crate) struct CallerGuard {
    callers: Arc<Callers>,
    id: u64,
}

impl CallerGuard {
    /// The mark for this call's requests to the server.
    pub(crate) fn tag(&self) -> CallTag {
        CallTag(self.id)
    }
}

impl Drop for CallerGuard {
    fn drop(&mut self) {
        let mut list = self.callers.lock();
        list.calls.retain(|(id, _)| *id != self.id);
        let CallerList { sent, ended, .. } = &mut *list;
        sent.retain(|(call, request)| {
            if *call == self.id {
                ended.push_back(request.clone());
            }
            *call != self.id
        });
        while ended.len() > ENDED {
            ended.pop_front();
        }
    }
}

/// Relays one request of `server` to `link`'s client and returns the client's result.
///
/// An elicitation nobody can answer is declined (`{"action": "decline"}`), as a user
/// would; a sampling or roots request gets `Err`. An accepted form is completed with the
/// defaults of the fields the answer leaves out (SEP-1034).
pub(crate) async fn relay(
    link: Result<Arc<dyn ClientLink>, &str>,
    server: &Asker<'_>,
    ask: ClientAsk,
    params: Value,
) -> Result<Value, RelayError> {
    relay_as(link, server, None, ask, params).await
}

/// [`relay`], naming the request `key` among others relayed at the same time (the key of
/// a 2026-07-28 server's `inputRequests`), so a 2026-07-28 client sees the server's keys.
async fn relay_as(
    link: Result<Arc<dyn ClientLink>, &str>,
    server: &Asker<'_>,
    key: Option<&str>,
    ask: ClientAsk,
    params: Value,
) -> Result<Value, RelayError> {
    let elicitation = matches!(ask, ClientAsk::FormElicitation | ClientAsk::UrlElicitation);
    let caller = link.as_ref().ok().and_then(|l| l.caller());
    if let Some(rule) = server.denied(ask, caller.as_ref()) {
        let why = format!("refused by the permission rule {rule}");
        return unanswered(server.name, ask, elicitation, &why);
    }
    let link = match link {
        Ok(link) => link,
        Err(why) => return unanswered(server.name, ask, elicitation, why),
    };
    if let Err(why) = link.can_ask(ask) {
        link.note_missing(ask);
        return unanswered(server.name, ask, elicitation, why);
    }
    let schema = params.get("requestedSchema").cloned();
    let asked = match key {
        Some(key) => link.request_as(key, ask, params),
        None => link.request(ask, params),
    };
    let mut result = asked.await?;
    if let (true, Some(schema)) = (elicitation, schema) {
        with_defaults(&mut result, &schema);
    }
    Ok(result)
}

fn unanswered(
    server: &str,
    ask: ClientAsk,
    elicitation: bool,
    why: &str,
) -> Result<Value, RelayError> {
    tracing::debug!(%server, method = ask.method(), why, "request of a mounted server not relayed");
    if elicitation {
        return Ok(json!({"action": "decline"}));
    }
    Err(RelayError::Unrelayable {
        server: server.to_owned(),
        ask,
        why: why.to_owned(),
    })
}

/// The server asking, with the rules its requests obey.
pub(crate) struct Asker<'a> {
    pub(crate) name: &'a str,
    pub(crate) policy: &'a Policy,
}

impl Asker<'_> {
    /// The rule that denies `ask` to this server, if one does: `mcp.sample` / `mcp.elicit`
    /// as actions, or a pattern naming the server's tools (`mcp__NAME__*`).
    /// `caller` is the identity of the session asked for (rules with a condition on the
    /// caller).
    pub(crate) fn denied(&self, ask: ClientAsk, caller: Option<&Identity>) -> Option<String> {
        let action = match ask {
            ClientAsk::FormElicitation | ClientAsk::UrlElicitation => "mcp.elicit",
            ClientAsk::Sampling => "mcp.sample",
            ClientAsk::Roots => return None,
        };
        let verdict =
            self.policy
                .decide_for(&crate::naming::server_prefix(self.name), action, caller);
        (verdict.decision == Decision::Deny)
            .then(|| verdict.rule.unwrap_or_else(|| format!("for `{action}`")))
    }
}

/// Fills in, on an accepted form, each field the answer leaves out that has a default.
fn with_defaults(result: &mut Value, schema: &Value) {
    if result.get("action").and_then(Value::as_str) != Some("accept") {
        return;
    }
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    let Value::Object(result) = result else {
        return;
    };
    let content = result
        .entry("content")
        .or_insert_with(|| Value::Object(Map::new()));
    if content.is_null() {
        *content = Value::Object(Map::new());
    }
    let Value::Object(content) = content else {
        return;
    };
    for (name, property) in properties {
        if let Some(default) = property.get("default")
            && !content.contains_key(name)
        {
            content.insert(name.clone(), default.clone());
        }
    }
}

/// What an `input_required` request asks for, and its parameters.
fn ask_of(request: &InputRequest) -> Result<(ClientAsk, Value), RelayError> {
    let message = serde_json::to_value(request)?;
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    let ask = match request {
        InputRequest::Elicitation(_)
            if params.get("mode").and_then(Value::as_str) == Some("url") =>
        {
            ClientAsk::UrlElicitation
        }
        InputRequest::Elicitation(_) => ClientAsk::FormElicitation,
        InputRequest::CreateMessage(_) => ClientAsk::Sampling,
        InputRequest::ListRoots(_) => ClientAsk::Roots,
        _ => return Err(RelayError::UnknownKind),
    };
    Ok((ask, params))
}

/// Answers every request of an `input_required` result through the caller's client, all at
/// once (a 2026-07-28 client gets them in one round). Roots requests are not among them: the
/// caller answers those (`Mount::fulfil`, the client's roots within the configured ones).
pub(crate) async fn fulfil(
    link: Option<Arc<dyn ClientLink>>,
    server: &Asker<'_>,
    requests: InputRequests,
) -> Result<InputResponses, RelayError> {
    let answers = requests.into_iter().map(|(key, request)| {
        let link = link
            .clone()
            .ok_or("the call comes from a session without an MCP client");
        async move {
            let (ask, params) = ask_of(&request)?;
            relay_as(link, server, Some(&key), ask, params)
                .await
                .map(|answer| (key, answer))
        }
    });
    let answers = futures::future::try_join_all(answers).await?;
    Ok(answers.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_accepted_form_gets_the_defaults_it_leaves_out() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "given": {"type": "boolean", "default": true},
            "plain": {"type": "string"},
        }});
        let mut result = json!({"action": "accept", "content": {"given": false}});
        with_defaults(&mut result, &schema);
        assert_eq!(
            result,
            json!({"action": "accept", "content": {"name": "John Doe", "age": 30, "given": false}})
        );
        let mut result = json!({"action": "accept"});
        with_defaults(&mut result, &schema);
        assert_eq!(result["content"]["age"], 30);
        let mut declined = json!({"action": "decline"});
        with_defaults(&mut declined, &schema);
        assert_eq!(declined, json!({"action": "decline"}));
    }

    struct Link;

    impl ClientLink for Link {
        fn can_ask(&self, ask: ClientAsk) -> Result<(), &'static str> {
            (ask == ClientAsk::FormElicitation)
                .then_some(())
                .ok_or("the client does not offer it")
        }

        fn request(
            &self,
            _ask: ClientAsk,
            _params: Value,
        ) -> futures::future::BoxFuture<'static, Result<Value, toolgate_core::AskError>> {
            Box::pin(async { Ok(json!({"action": "accept", "content": {}})) })
        }

        fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
            self
        }
    }

    /// [`Link`] of a session whose caller is in `group`.
    struct InGroup(&'static str);

    impl ClientLink for InGroup {
        fn caller(&self) -> Option<Identity> {
            Some(Identity {
                subject: format!("{}-user", self.0),
                issuer: None,
                groups: vec![self.0.to_owned()],
                scopes: Vec::new(),
            })
        }

        fn can_ask(&self, ask: ClientAsk) -> Result<(), &'static str> {
            Link.can_ask(ask)
        }

        fn request(
            &self,
            ask: ClientAsk,
            params: Value,
        ) -> futures::future::BoxFuture<'static, Result<Value, toolgate_core::AskError>> {
            Link.request(ask, params)
        }

        fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
            self
        }
    }

    #[tokio::test]
    async fn a_rule_with_a_condition_on_the_caller_decides_a_servers_requests_per_session() {
        let form =
            json!({"message": "ok?", "requestedSchema": {"type": "object", "properties": {}}});
        let rule = [r#"mcp.elicit unless group = "eng""#.to_owned()];
        let policy = Policy::from_lists(&[], &[], &rule).unwrap();
        let s = Asker {
            name: "s",
            policy: &policy,
        };
        let eng: Arc<dyn ClientLink> = Arc::new(InGroup("eng"));
        let answer = relay(Ok(eng), &s, ClientAsk::FormElicitation, form.clone())
            .await
            .unwrap();
        assert_eq!(answer, json!({"action": "accept", "content": {}}));
        let ops: Arc<dyn ClientLink> = Arc::new(InGroup("ops"));
        let answer = relay(Ok(ops), &s, ClientAsk::FormElicitation, form.clone())
            .await
            .unwrap();
        assert_eq!(answer, json!({"action": "decline"}));
        // What a call offers the server follows the same rule.
        let caps = crate::handler::offered_to_call(false, &InGroup("eng"), &s);
        assert!(caps.elicitation.is_some());
        let caps = crate::handler::offered_to_call(false, &InGroup("ops"), &s);
        assert!(caps.elicitation.is_none());
    }

    #[test]
    #[allow(deprecated)] // sampling, roots: deprecated by SEP-2577, still offered
    fn a_call_offers_a_server_what_its_client_offers_and_the_rules_allow() {
        let open = Policy::allow_all();
        let s = Asker {
            name: "s",
            policy: &open,
        };
        // The client answers forms only: no URL forms, no sampling; roots are toolgate's.
        let caps = crate::handler::offered_to_call(true, &Link, &s);
        let elicitation = caps.elicitation.expect("forms are offered");
        assert!(elicitation.form.is_some() && elicitation.url.is_none());
        assert!(caps.sampling.is_none());
        assert!(caps.roots.is_some());
        // A rule denying the server forms takes them away too.
        let strict = Policy::from_lists(&[], &[], &["mcp.elicit".to_owned()]).unwrap();
        let s = Asker {
            name: "s",
            policy: &strict,
        };
        let caps = crate::handler::offered_to_call(false, &Link, &s);
        assert!(caps.elicitation.is_none() && caps.sampling.is_none() && caps.roots.is_none());
    }

    #[test]
    fn only_one_session_may_be_asked() {
        let callers = Arc::new(Callers::default());
        assert!(callers.only().is_err());
        let a: Arc<dyn ClientLink> = Arc::new(Link);
        let b: Arc<dyn ClientLink> = Arc::new(Link);
        let first = callers.enter(Some(Arc::clone(&a)));
        let again = callers.enter(Some(Arc::clone(&a)));
        assert!(Arc::ptr_eq(&callers.only().unwrap(), &a));
        let other = callers.enter(Some(b));
        assert!(callers.only().is_err(), "two sessions: nobody is asked");
        drop(other);
        drop(first);
        assert!(callers.only().is_ok());
        drop(again);
        assert!(callers.only().is_err());
        let _anonymous = callers.enter(None);
        assert!(callers.only().is_err());
    }

    fn from(origin: Option<InboundStreamOrigin>) -> rmcp::model::Extensions {
        let mut extensions = rmcp::model::Extensions::new();
        if let Some(origin) = origin {
            extensions.insert(origin);
        }
        extensions
    }

    /// One caller (a single user, whatever their sessions): a request the server sends
    /// outside the call's stream (the TypeScript SDK's `elicitInput` does) or over stdio
    /// still reaches them.
    #[test]
    fn with_one_caller_an_untied_request_reaches_the_caller_in_flight() {
        let callers = Arc::new(Callers::default());
        let alice = call_link(1, false);
        let _first = callers.enter(Some(Arc::clone(&alice)));
        let _again = callers.enter(Some(Arc::clone(&alice)));
        for untied in [Some(InboundStreamOrigin::Unassociated), None] {
            assert!(Arc::ptr_eq(&callers.asking(&from(untied)).unwrap(), &alice));
        }
    }

    #[test]
    fn a_servers_request_after_a_call_ended_does_not_reach_another_caller() {
        let callers = Arc::new(Callers::default());
        let (alice, bob) = (call_link(1, false), call_link(2, false));
        let alices = callers.enter(Some(Arc::clone(&alice)));
        callers.sent(alices.tag(), RequestId::Number(1));
        let bobs = callers.enter(Some(Arc::clone(&bob)));
        callers.sent(bobs.tag(), RequestId::Number(2));
        let with = |id| {
            from(Some(InboundStreamOrigin::OutboundRequest(
                RequestId::Number(id),
            )))
        };
        // Each request reaches the caller whose call it came with, though both are in flight.
        assert!(Arc::ptr_eq(&callers.asking(&with(1)).unwrap(), &alice));
        assert!(Arc::ptr_eq(&callers.asking(&with(2)).unwrap(), &bob));
        drop(alices);
        // Alice's call is over: what comes with it goes to nobody, not to Bob (the only
        // caller in flight); so does what cannot be tied to a call (the server's own stream,
        // stdio), now that two callers use this server.
        let ended = callers.asking(&with(1)).err().unwrap();
        assert!(ended.contains("has ended"), "{ended}");
        for untied in [Some(InboundStreamOrigin::Unassociated), None] {
            let why = callers.asking(&from(untied)).err().unwrap();
            assert!(why.contains("several callers"), "{why}");
        }
        drop(bobs);
        assert!(callers.asking(&with(2)).is_err());
    }

    /// A link of one call of client `client`, as a 2026-07-28 request has; `waiting` while
    /// blocked on an answer the client has not sent.
    struct CallLink {
        client: usize,
        waiting: bool,
    }

    fn call_link(client: usize, waiting: bool) -> Arc<dyn ClientLink> {
        Arc::new(CallLink { client, waiting })
    }

    impl ClientLink for CallLink {
        fn can_ask(&self, ask: ClientAsk) -> Result<(), &'static str> {
            Link.can_ask(ask)
        }

        fn request(
            &self,
            ask: ClientAsk,
            params: Value,
        ) -> futures::future::BoxFuture<'static, Result<Value, toolgate_core::AskError>> {
            Link.request(ask, params)
        }

        fn client_id(&self) -> usize {
            self.client
        }

        // Each client is a caller of its own (team mode).
        fn caller(&self) -> Option<Identity> {
            Some(Identity {
                subject: format!("user{}", self.client),
                issuer: None,
                groups: Vec::new(),
                scopes: Vec::new(),
            })
        }

        fn is_waiting(&self) -> bool {
            self.waiting
        }

        fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
            self
        }
    }

    #[test]
    fn calls_of_one_client_through_links_of_their_own_ask_the_latest() {
        let callers = Arc::new(Callers::default());
        let earlier = call_link(1, false);
        let latest = call_link(1, false);
        let _earlier = callers.enter(Some(earlier));
        let _latest = callers.enter(Some(Arc::clone(&latest)));
        assert!(Arc::ptr_eq(&callers.only().unwrap(), &latest));
        let _other = callers.enter(Some(call_link(2, false)));
        assert!(callers.only().is_err(), "another client: nobody is asked");
    }

    #[test]
    fn a_call_blocked_on_the_clients_answer_is_not_the_one_asking() {
        let callers = Arc::new(Callers::default());
        let blocked = call_link(7, true);
        let _blocked = callers.enter(Some(Arc::clone(&blocked)));
        // Alone, it is the one asking (several requests of one call at once).
        assert!(Arc::ptr_eq(&callers.only().unwrap(), &blocked));
        let active = call_link(8, false);
        let _active = callers.enter(Some(Arc::clone(&active)));
        assert!(Arc::ptr_eq(&callers.only().unwrap(), &active));
    }

    #[tokio::test]
    async fn what_cannot_be_relayed_is_declined_or_refused() {
        let form =
            json!({"message": "ok?", "requestedSchema": {"type": "object", "properties": {}}});
        let link: Arc<dyn ClientLink> = Arc::new(Link);
        let open = Policy::allow_all();
        let s = Asker {
            name: "s",
            policy: &open,
        };
        let answer = relay(
            Ok(Arc::clone(&link)),
            &s,
            ClientAsk::FormElicitation,
            form.clone(),
        )
        .await
        .unwrap();
        assert_eq!(answer, json!({"action": "accept", "content": {}}));
        let answer = relay(Err("nobody"), &s, ClientAsk::FormElicitation, form.clone())
            .await
            .unwrap();
        assert_eq!(answer, json!({"action": "decline"}));
        let refused = relay(Ok(Arc::clone(&link)), &s, ClientAsk::Sampling, json!({}))
            .await
            .unwrap_err()
            .to_string();
        assert!(refused.contains("sampling/createMessage"), "{refused}");
        assert!(refused.contains("does not offer"), "{refused}");
        // Denied by a rule: declined without asking, and the rule is named.
        let deny = ["mcp.elicit".to_owned(), "mcp__t__*".to_owned()];
        let strict = Policy::from_lists(&[], &[], &deny).unwrap();
        let s = Asker {
            name: "s",
            policy: &strict,
        };
        let answer = relay(Ok(Arc::clone(&link)), &s, ClientAsk::FormElicitation, form)
            .await
            .unwrap();
        assert_eq!(answer, json!({"action": "decline"}));
        let t = Asker {
            name: "t",
            policy: &strict,
        };
        let refused = relay(Ok(link), &t, ClientAsk::Sampling, json!({}))
            .await
            .unwrap_err()
            .to_string();
        assert!(refused.contains(r#"deny = ["mcp__t__*"]"#), "{refused}");
    }
}
