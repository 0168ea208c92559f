//! Requests a 2026-07-28 server may answer with `input_required` (MCP 2026-07-28,
//! "Multi round-trip requests"): the server's requests are fulfilled through the caller's
//! client, as the permission rules allow, and the request is sent again with the answers and
//! the server's `requestState`, a bounded number of times.

use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceError;
#[allow(deprecated)]
use rmcp::model::ListRootsResult;
use rmcp::model::{InputRequests, InputRequiredResult, InputResponses};
use toolgate_core::ClientLink;

use super::Mount;
use crate::error::{Asked, UpstreamError};
use crate::relay::{Asker, RelayError};

/// Most `input_required` rounds one request may take (rmcp's own client allows as many).
pub(super) const MAX_INPUT_ROUNDS: usize = rmcp::model::DEFAULT_MRTR_MAX_ROUNDS;

/// One answer to a request that may come back as `input_required`.
pub(super) enum Reply<T> {
    /// The request's result.
    Complete(T),
    /// The server needs answers (or time: a state-only result) first.
    InputRequired(InputRequiredResult),
    /// A result of a kind this request does not have.
    Unknown,
}

impl Mount {
    /// Sends a request (`prompts/get`, `resources/read`) until the server completes it:
    /// `send` sends it with the answers and state of the round before, each send within the
    /// server's tool timeout, at most [`MAX_INPUT_ROUNDS`] times.
    pub(super) async fn in_rounds<T, Fut>(
        &self,
        caller: Option<Arc<dyn ClientLink>>,
        asked: impl Fn() -> Asked,
        mut send: impl FnMut(Option<InputResponses>, Option<String>) -> Fut,
    ) -> Result<T, UpstreamError>
    where
        Fut: Future<Output = Result<Reply<T>, ServiceError>>,
    {
        let server = || self.spec.name.clone();
        let (mut answers, mut state) = (None, None);
        let mut pauses = 0;
        for _round in 0..MAX_INPUT_ROUNDS {
            let sent = send(answers.take(), state.take());
            let answer = tokio::time::timeout(self.spec.tool_timeout, sent)
                .await
                .map_err(|_| UpstreamError::Timeout {
                    server: server(),
                    asked: asked(),
                })?;
            match answer {
                Ok(Reply::Complete(result)) => return Ok(result),
                Ok(Reply::InputRequired(input)) => {
                    state = input.request_state.clone();
                    answers = self
                        .answer_round(caller.clone(), input, &mut pauses)
                        .await
                        .map_err(|source| UpstreamError::NeedsInput {
                            server: server(),
                            asked: asked(),
                            source,
                        })?;
                }
                Ok(Reply::Unknown) => {
                    return Err(UpstreamError::UnknownResult {
                        server: server(),
                        asked: asked(),
                    });
                }
                Err(source) => {
                    return Err(UpstreamError::Refused {
                        server: server(),
                        asked: asked(),
                        source,
                    });
                }
            }
        }
        Err(UpstreamError::TooManyRounds {
            server: server(),
            asked: asked(),
            rounds: MAX_INPUT_ROUNDS,
        })
    }

    /// The answers to one `input_required` result: the
    /// requests fulfilled through the caller's client, or none after a pause when the server
    /// sent only its state (it is working on it). `pauses` counts the state-only rounds in
    /// a row.
    pub(super) async fn answer_round(
        &self,
        caller: Option<Arc<dyn ClientLink>>,
        input: InputRequiredResult,
        pauses: &mut u32,
    ) -> Result<Option<InputResponses>, RelayError> {
        let requests = input.input_requests.unwrap_or_default();
        if requests.is_empty() {
            tokio::time::sleep(Duration::from_millis((50 << (*pauses).min(3)).min(250))).await;
            *pauses += 1;
            return Ok(None);
        }
        *pauses = 0;
        self.fulfil(caller, requests).await.map(Some)
    }

    /// Answers the requests of an `input_required` result: through the caller's client, as
    /// the permission rules allow; roots as `roots/list` answers them (`roots.rs`).
    async fn fulfil(
        &self,
        caller: Option<Arc<dyn ClientLink>>,
        requests: InputRequests,
    ) -> Result<InputResponses, RelayError> {
        let limits = self.limits();
        // Roots only when asked for: the caller's client is asked for its own, at the same
        // time as the rest (a 2026-07-28 client then gets every request in one round).
        let (roots_keys, requests): (InputRequests, InputRequests) = requests
            .into_iter()
            .partition(|(_, r)| matches!(r, rmcp::model::InputRequest::ListRoots(_)));
        let roots = async {
            if roots_keys.is_empty() {
                return Ok(serde_json::Value::Null);
            }
            let roots = crate::roots::roots_for(
                &self.spec.name,
                caller.clone(),
                &limits.roots,
                limits.client_roots,
            )
            .await;
            #[allow(deprecated)] // roots: deprecated by SEP-2577, used by 2025 servers
            let roots = ListRootsResult::new(roots);
            serde_json::to_value(roots).map_err(RelayError::from)
        };
        let asker = Asker {
            name: &self.spec.name,
            policy: &limits.policy,
        };
        let rest = crate::relay::fulfil(caller.clone(), &asker, requests);
        let (roots, rest) = futures::join!(roots, rest);
        let (roots, mut answers) = (roots?, rest?);
        for key in roots_keys.into_keys() {
            answers.insert(key, roots.clone());
        }
        Ok(answers)
    }
}
