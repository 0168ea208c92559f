//! Asking a 2026-07-28 client for input: `input_required` results (SEP-2322).
//!
//! A 2025 client is asked in the middle of a call with a request of the server's own. A
//! 2026-07-28 client takes no such requests: the call is answered `input_required`, with
//! the requests (`inputRequests`) and an opaque `requestState`, and the client sends the same
//! request again with its answers (`inputResponses`) and the state. toolgate keeps the work
//! itself waiting in between — a tool, a mounted server's call or prompt asks through its
//! [`ClientLink`] the same way under both revisions — so the state names a parked piece of
//! work, sealed with a per-process key (HMAC-SHA256) and bound to the request it belongs to
//! (method, name, arguments): a forged, altered or borrowed state is refused.
//!
//! One round waits [`ROUND_TTL`] for its answers and at most [`MAX_PARKED`] wait at once;
//! past either the oldest work is cancelled and its state refused with a message that says
//! to send the request again without it. Answers sent with a request that has no state are
//! taken as answers to the questions of that name, so a client (or a retry after a
//! restart) can answer up front.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::Poll;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use rmcp::ErrorData as McpError;
use rmcp::RoleServer;
use rmcp::model::{
    ClientCapabilities, InputRequest, InputRequests, InputRequiredResult, InputResponses,
    RequestStateCodec, SealOptions,
};
use rmcp::service::RequestContext;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use toolgate_core::{AskError, ClientAsk, ClientLink};

use crate::client::offers;
use crate::notify::ProgressQueue;

/// How long a round waits for the client's answers (a person may be filling in a form).
pub const ROUND_TTL: Duration = Duration::from_secs(15 * 60);

/// Most pieces of work waiting for answers at once, over all sessions.
pub const MAX_PARKED: usize = 256;

/// The seal every state carries, shared by the three kinds of request.
pub(crate) struct Sealer {
    /// `None` when the OS gave no randomness: a key anyone could guess would let a client
    /// forge another's state, so no work is parked at all (fails closed).
    codec: Option<RequestStateCodec>,
    next: AtomicU64,
}

impl Sealer {
    /// A sealer with a fresh random key: states of an earlier process are refused.
    pub(crate) fn new() -> Self {
        let mut key = [0u8; 32];
        let codec = match getrandom::fill(&mut key) {
            Ok(()) => Some(RequestStateCodec::new_unchecked(key.to_vec())),
            Err(e) => {
                tracing::error!(%e, "no OS randomness for the requestState key: input requests of 2026-07-28 clients are refused");
                None
            }
        };
        Self {
            codec,
            next: AtomicU64::new(1),
        }
    }

    #[cfg(test)]
    fn without_randomness() -> Self {
        Self {
            codec: None,
            next: AtomicU64::new(1),
        }
    }
}

/// Answers every open ask with `reason`, so the work that asked goes on without it.
fn refuse(open: &mut Vec<Asked>, reason: &str) {
    for asked in open.drain(..) {
        let _ = asked.answer.send(Err(AskError::Invalid {
            method: asked.ask.method(),
            reason: reason.to_owned(),
        }));
    }
}

/// Why a round cannot be parked when the OS gave no randomness for its seal.
const NO_SEAL: &str = "this toolgate has no OS randomness to seal requestState with, so it cannot wait for input; answer the request without asking for input, or restart toolgate on a system with /dev/urandom or getrandom(2)";

/// What the sealed state says: which round of parked work (each round has an id of its
/// own, so a state answers one round once).
#[derive(Serialize, Deserialize)]
struct Ticket {
    id: u64,
}

/// One request of the work to the client, waiting for its answer.
pub(crate) struct Asked {
    key: String,
    ask: ClientAsk,
    request: InputRequest,
    answer: oneshot::Sender<Result<Value, AskError>>,
}

/// The link a 2026-07-28 request's work asks through: what the request says its client
/// declared, and a queue to the round that answers.
pub(crate) struct RoundLink {
    declared: ClientCapabilities,
    asks: mpsc::UnboundedSender<Asked>,
    /// Answers the client sent with the request itself (no state), taken by key.
    offered: Mutex<InputResponses>,
    /// What the work asked for that the client did not declare.
    undeclared: Mutex<Vec<ClientAsk>>,
    /// The session's own link, which log messages go through.
    session: Option<Arc<dyn ClientLink>>,
    /// Requests sent and not answered yet.
    waiting: Arc<AtomicUsize>,
}

/// Counts a request as waiting until it is answered (or given up).
struct Waiting(Arc<AtomicUsize>);

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl RoundLink {
    /// A link for a request whose client declared `declared`, and the queue its asks
    /// arrive on.
    pub(crate) fn new(
        declared: ClientCapabilities,
        offered: InputResponses,
        session: Option<Arc<dyn ClientLink>>,
    ) -> (Arc<Self>, mpsc::UnboundedReceiver<Asked>) {
        let (asks, rx) = mpsc::unbounded_channel();
        let link = Arc::new(Self {
            declared,
            asks,
            offered: Mutex::new(offered),
            undeclared: Mutex::default(),
            session,
            waiting: Arc::default(),
        });
        (link, rx)
    }

    /// The capabilities the work needed and the client did not declare, for the
    /// "missing required client capability" error; `None` when it needed none.
    pub(crate) fn undeclared(&self) -> Option<ClientCapabilities> {
        let missing = lock(&self.undeclared);
        if missing.is_empty() {
            return None;
        }
        let mut caps = ClientCapabilities::default();
        #[allow(deprecated)] // sampling and roots: deprecated by SEP-2577, still asked for
        for ask in missing.iter() {
            match ask {
                ClientAsk::FormElicitation | ClientAsk::UrlElicitation => {
                    caps.elicitation = Some(Default::default());
                }
                ClientAsk::Sampling => caps.sampling = Some(Default::default()),
                ClientAsk::Roots => caps.roots = Some(Default::default()),
            }
        }
        Some(caps)
    }
}

/// The key a request gets when its asker names none.
pub(crate) fn default_key(ask: ClientAsk) -> &'static str {
    match ask {
        ClientAsk::FormElicitation | ClientAsk::UrlElicitation => "elicitation",
        ClientAsk::Sampling => "sampling",
        ClientAsk::Roots => "roots",
    }
}

impl ClientLink for RoundLink {
    fn caller(&self) -> Option<toolgate_core::Identity> {
        self.session.as_ref().and_then(|link| link.caller())
    }

    fn can_ask(&self, ask: ClientAsk) -> Result<(), &'static str> {
        offers(&self.declared, ask)
    }

    fn request(
        &self,
        ask: ClientAsk,
        params: Value,
    ) -> BoxFuture<'static, Result<Value, AskError>> {
        self.request_as(default_key(ask), ask, params)
    }

    fn request_as(
        &self,
        key: &str,
        ask: ClientAsk,
        params: Value,
    ) -> BoxFuture<'static, Result<Value, AskError>> {
        let method = ask.method();
        if offers(&self.declared, ask).is_err() {
            lock(&self.undeclared).push(ask);
            return Box::pin(async move { Err(AskError::NotDeclared { method }) });
        }
        let offered = lock(&self.offered).remove(key);
        if let Some(answer) = offered.filter(|a| check_answer(ask, a).is_ok()) {
            return Box::pin(async move { Ok(answer) });
        }
        let mut message = json!({"method": method});
        if !params.is_null() {
            message["params"] = params;
        }
        let request = match serde_json::from_value::<InputRequest>(message) {
            Ok(request) => request,
            Err(e) => {
                let reason = e.to_string();
                return Box::pin(async move { Err(AskError::Invalid { method, reason }) });
            }
        };
        let (answer, answered) = oneshot::channel();
        let asked = Asked {
            key: key.to_owned(),
            ask,
            request,
            answer,
        };
        let sent = self.asks.send(asked).is_ok();
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let waiting = Waiting(Arc::clone(&self.waiting));
        Box::pin(async move {
            let _waiting = waiting;
            if !sent {
                return Err(AskError::NoAnswer {
                    method,
                    reason: "the request it belongs to is over".to_owned(),
                });
            }
            answered.await.unwrap_or_else(|_| {
                Err(AskError::NoAnswer {
                    method,
                    reason: "the client did not send the request again with its answer in time"
                        .to_owned(),
                })
            })
        })
    }

    fn client_id(&self) -> usize {
        match &self.session {
            Some(session) => session.client_id(),
            None => std::ptr::from_ref(self).cast::<()>() as usize,
        }
    }

    fn is_waiting(&self) -> bool {
        self.waiting.load(Ordering::Relaxed) > 0
    }

    fn note_missing(&self, ask: ClientAsk) {
        lock(&self.undeclared).push(ask);
    }

    fn log(&self, level: &str, logger: Option<&str>, data: Value) -> BoxFuture<'static, ()> {
        match &self.session {
            Some(session) => session.log(level, logger, data),
            None => Box::pin(async {}),
        }
    }

    fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
        self
    }
}

/// Work waiting for the client's answers.
struct Parked<T> {
    work: BoxFuture<'static, T>,
    asks: mpsc::UnboundedReceiver<Asked>,
    asks_open: bool,
    /// Asked and not answered yet, keys unique.
    open: Vec<Asked>,
    /// What the state is bound to: the request's method, name and arguments.
    bound: Vec<u8>,
    since: Instant,
    /// Cancels the work (its call's token) when it is given up.
    cancel: CancellationToken,
    /// Where the work's progress goes: moved to each request that answers a round.
    progress: Option<ProgressQueue>,
}

impl<T> Drop for Parked<T> {
    fn drop(&mut self) {
        // Work dropped unfinished (expired, evicted, the request cancelled) stops at once.
        self.cancel.cancel();
    }
}

/// How one request ends: done, or waiting for the client's input.
pub(crate) enum Step<T> {
    /// The work finished.
    Done(T),
    /// The client must answer these requests and send the request again.
    Input(InputRequiredResult),
}

/// The parked work of one kind of request (tool calls, prompts, resource reads).
pub(crate) struct Rounds<T> {
    sealer: Arc<Sealer>,
    parked: Mutex<HashMap<u64, Parked<T>>>,
}

/// What a request brings to the round machinery.
pub(crate) struct Work<T> {
    /// The work itself, asking through the link the queue belongs to.
    pub(crate) work: BoxFuture<'static, T>,
    /// Where the work's asks arrive.
    pub(crate) asks: mpsc::UnboundedReceiver<Asked>,
    /// Cancels the work.
    pub(crate) cancel: CancellationToken,
    /// Where the work reports progress, if it does.
    pub(crate) progress: Option<ProgressQueue>,
}

impl<T: Send + 'static> Rounds<T> {
    pub(crate) fn new(sealer: Arc<Sealer>) -> Self {
        Self {
            sealer,
            parked: Mutex::default(),
        }
    }

    /// Runs fresh work until it finishes or asks the client something; `stop` is the
    /// request's own cancellation.
    pub(crate) async fn start(
        &self,
        bound: Vec<u8>,
        work: Work<T>,
        stop: &CancellationToken,
    ) -> Step<T> {
        let parked = Parked {
            work: work.work,
            asks: work.asks,
            asks_open: true,
            open: Vec::new(),
            bound,
            since: Instant::now(),
            cancel: work.cancel,
            progress: work.progress,
        };
        self.drive(parked, stop).await
    }

    /// Resumes the work `state` names with the client's `answers`, as the work of
    /// `request` from now on (its progress goes there). `Err` is the request's error: a
    /// state that fails its seal or names no waiting work, or an answer that is not a
    /// result.
    pub(crate) async fn resume(
        &self,
        bound: &[u8],
        state: &str,
        answers: InputResponses,
        request: &RequestContext<RoleServer>,
    ) -> Result<Step<T>, McpError> {
        let Some(codec) = &self.sealer.codec else {
            return Err(McpError::invalid_params(NO_SEAL, None));
        };
        let ticket: Ticket = codec
            .open_json_with(state, bound)
            .map_err(|e| {
                tracing::debug!(%e, "requestState refused");
                McpError::invalid_params(
                    "requestState failed its integrity check: it was altered, belongs to another request, or comes from another toolgate process (an earlier one, or another replica behind a load balancer). Send the request again without requestState; inputResponses sent with it are taken as answers up front",
                    None,
                )
            })?;
        let Some(mut parked) = lock(&self.parked).remove(&ticket.id) else {
            return Err(McpError::invalid_params(
                "requestState names input that is no longer awaited (it was answered already, or waited longer than 15 minutes). Send the request again without requestState and inputResponses",
                None,
            ));
        };
        // Check every answer before handing any over: a bad one leaves the round as it was.
        for asked in &parked.open {
            if let Some(answer) = answers.get(&asked.key)
                && let Err(why) = check_answer(asked.ask, answer)
            {
                let key = asked.key.clone();
                let method = asked.ask.method();
                lock(&self.parked).insert(ticket.id, parked);
                return Err(McpError::invalid_params(
                    format!(
                        "inputResponses.{key} is not a result of `{method}`: {why}. Send the request again with a valid answer and the same requestState"
                    ),
                    None,
                ));
            }
        }
        let mut unanswered = Vec::new();
        for asked in parked.open.drain(..) {
            match answers.get(&asked.key) {
                Some(answer) => {
                    let _ = asked.answer.send(Ok(answer.clone()));
                }
                None => unanswered.push(asked),
            }
        }
        parked.open = unanswered;
        if let Some(progress) = &parked.progress {
            progress.retarget(request.peer.clone(), request.meta.get_progress_token());
        }
        Ok(self.drive(parked, &request.ct).await)
    }

    /// Polls the work until it finishes, or parks it with its open asks.
    async fn drive(&self, mut parked: Parked<T>, stop: &CancellationToken) -> Step<T> {
        loop {
            if !parked.open.is_empty() {
                // Let the work take what it was given and make its next asks first, so one
                // round carries every request it makes at once.
                if let Poll::Ready(out) = futures::poll!(&mut parked.work) {
                    return Step::Done(out);
                }
                while let Ok(asked) = parked.asks.try_recv() {
                    push_unique(&mut parked.open, asked);
                }
                let Some(codec) = &self.sealer.codec else {
                    // Fails closed: the work learns it gets no answer, and ends.
                    refuse(&mut parked.open, NO_SEAL);
                    continue;
                };
                return self.park(codec, parked);
            }
            tokio::select! {
                biased;
                out = &mut parked.work => return Step::Done(out),
                asked = parked.asks.recv(), if parked.asks_open => match asked {
                    Some(asked) => {
                        push_unique(&mut parked.open, asked);
                        while let Ok(asked) = parked.asks.try_recv() {
                            push_unique(&mut parked.open, asked);
                        }
                    }
                    None => parked.asks_open = false,
                },
                () = stop.cancelled(), if !parked.cancel.is_cancelled() => parked.cancel.cancel(),
            }
        }
    }

    /// Keeps the work until the client answers, and says what to answer.
    fn park(&self, codec: &RequestStateCodec, mut parked: Parked<T>) -> Step<T> {
        parked.since = Instant::now();
        let id = self.sealer.next.fetch_add(1, Ordering::Relaxed);
        let ticket = Ticket { id };
        let options = SealOptions::new()
            .associated_data(&parked.bound)
            .ttl(ROUND_TTL);
        let state = match codec.seal_json_with(&ticket, &options) {
            Ok(state) => state,
            // A two-integer struct always serialises; answer the asks so the work ends.
            Err(e) => {
                refuse(&mut parked.open, &e.to_string());
                return Step::Input(InputRequiredResult::new(Some(BTreeMap::new()), None));
            }
        };
        let requests: InputRequests = parked
            .open
            .iter()
            .map(|a| (a.key.clone(), a.request.clone()))
            .collect();
        let mut table = lock(&self.parked);
        // Work whose session ended (its call's token is a child of the session's) or that
        // waited too long is given up.
        table.retain(|_, p| p.since.elapsed() < ROUND_TTL && !p.cancel.is_cancelled());
        while table.len() >= MAX_PARKED {
            let oldest = table.iter().min_by_key(|(_, p)| p.since).map(|(id, _)| *id);
            match oldest {
                Some(oldest) => table.remove(&oldest),
                None => break,
            };
        }
        table.insert(id, parked);
        Step::Input(InputRequiredResult::new(Some(requests), Some(state)))
    }
}

/// Adds `asked`, giving its key a suffix when the round already has that key.
fn push_unique(open: &mut Vec<Asked>, mut asked: Asked) {
    if open.iter().any(|a| a.key == asked.key) {
        let base = asked.key.clone();
        let mut n = 2;
        while open.iter().any(|a| a.key == format!("{base}-{n}")) {
            n += 1;
        }
        asked.key = format!("{base}-{n}");
    }
    open.push(asked);
}

/// Why an answer does not have the shape of the result it answers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BadAnswer {
    /// Not a JSON object; the kind of value it is.
    #[error("expected an object, got {0}")]
    NotAnObject(&'static str),
    /// A required field is missing.
    #[error("the field `{0}` is missing")]
    Missing(&'static str),
    /// `roots` is not an array; the kind of value it is.
    #[error("`roots` must be an array, got {0}")]
    RootsNotAnArray(&'static str),
}

/// Whether `answer` has the shape of a result of `ask`; `Err` says what is wrong.
pub(crate) fn check_answer(ask: ClientAsk, answer: &Value) -> Result<(), BadAnswer> {
    let Some(object) = answer.as_object() else {
        return Err(BadAnswer::NotAnObject(kind(answer)));
    };
    let needs = |field: &'static str| {
        object
            .contains_key(field)
            .then_some(())
            .ok_or(BadAnswer::Missing(field))
    };
    match ask {
        ClientAsk::FormElicitation | ClientAsk::UrlElicitation => needs("action"),
        ClientAsk::Sampling => needs("content").and_then(|()| needs("role")),
        ClientAsk::Roots => match object.get("roots") {
            Some(Value::Array(_)) => Ok(()),
            Some(other) => Err(BadAnswer::RootsNotAnArray(kind(other))),
            None => Err(BadAnswer::Missing("roots")),
        },
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Checks the answers a request brings without a state: each must at least be an object
/// (which request it answers is known only when the work asks).
pub(crate) fn check_offered(answers: &InputResponses) -> Result<(), McpError> {
    for (key, answer) in answers {
        if !answer.is_object() {
            return Err(McpError::invalid_params(
                format!(
                    "inputResponses.{key} must be the client's result object, got {}. Send the request again without it, or with a valid answer",
                    kind(answer)
                ),
                None,
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: with no OS randomness the key used to come from the clock and a stack
    /// address, which a client could guess and forge another's state with.
    #[tokio::test]
    async fn without_randomness_nothing_is_parked_and_the_ask_fails_closed() {
        let rounds: Rounds<Result<Value, AskError>> =
            Rounds::new(Arc::new(Sealer::without_randomness()));
        let mut caps = ClientCapabilities::default();
        caps.elicitation = Some(Default::default());
        let (link, asks) = RoundLink::new(caps, InputResponses::default(), None);
        let ask = link.request(
            ClientAsk::FormElicitation,
            json!({"message": "name?", "requestedSchema": {"type": "object", "properties": {}}}),
        );
        let work = Work {
            work: Box::pin(ask),
            asks,
            cancel: CancellationToken::new(),
            progress: None,
        };
        let step = rounds
            .start(Vec::new(), work, &CancellationToken::new())
            .await;
        let Step::Done(Err(AskError::Invalid { reason, .. })) = step else {
            panic!("the work should have ended with the ask refused");
        };
        assert!(reason.contains("no OS randomness"), "{reason}");
        assert!(lock(&rounds.parked).is_empty(), "nothing may be parked");
    }
}
