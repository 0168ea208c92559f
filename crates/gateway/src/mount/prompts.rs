//! A mounted server's prompts: listed when it is ready and again on `prompts/list_changed`,
//! fetched through a live connection when a client asks for one.

use std::sync::Arc;
use tracing::Instrument;

use rmcp::model::{
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, JsonObject, Prompt, ResultType,
};

use rmcp::{Peer, RoleClient};

use toolgate_core::ClientLink;

use super::rounds::Reply;
use super::{Live, Mount, lock};
use crate::error::{Asked, UpstreamError};

impl Mount {
    /// Lists the server's prompts again (after `prompts/list_changed`) and tells the gateway
    /// when they changed.
    pub(super) async fn refresh_prompts(&self, live: &Live) {
        let prompts = self.list_prompts(&live.peer).await;
        if **lock(&self.prompts) != prompts {
            self.set_prompts(prompts);
            // The next session's first prompt list comes from the cache.
            let tools = lock(&self.listed).clone();
            self.save_catalog(&tools, !self.resources().is_empty());
        }
    }

    /// The server's prompts, when it offers any; empty (and logged) when listing fails.
    pub(super) async fn list_prompts(&self, peer: &Peer<RoleClient>) -> Vec<Prompt> {
        let offers = peer
            .peer_info()
            .is_some_and(|info| info.capabilities.prompts.is_some());
        if !offers {
            return Vec::new();
        }
        match tokio::time::timeout(self.spec.startup_timeout, peer.list_all_prompts()).await {
            Ok(Ok(prompts)) => prompts,
            Ok(Err(e)) => {
                tracing::warn!(server = %self.spec.name, %e, "`prompts/list` failed; its prompts are not offered");
                Vec::new()
            }
            Err(_) => {
                tracing::warn!(server = %self.spec.name, "`prompts/list` timed out; its prompts are not offered");
                Vec::new()
            }
        }
    }

    /// Records the server's prompts; the gateway hears of a change.
    pub(super) fn set_prompts(&self, prompts: Vec<Prompt>) {
        if **lock(&self.prompts) == prompts {
            return;
        }
        tracing::debug!(server = %self.spec.name, prompts = prompts.len(), "prompts listed");
        *lock(&self.prompts) = Arc::new(prompts);
        if let Some(host) = self.host.upgrade() {
            host.prompts_changed();
        }
    }

    /// The server's prompts as last listed.
    pub(crate) fn prompts(&self) -> Arc<Vec<Prompt>> {
        Arc::clone(&lock(&self.prompts))
    }

    /// Prompt `name` (the server's own name) filled in with `arguments`. A server that
    /// asks for input while building it (a 2025 server's requests, a 2026-07-28 server's
    /// `input_required` rounds) asks `caller`'s client.
    pub(crate) async fn get_prompt(
        self: &Arc<Self>,
        name: &str,
        arguments: Option<JsonObject>,
        caller: Option<Arc<dyn ClientLink>>,
    ) -> Result<GetPromptResult, UpstreamError> {
        let span = self.client_span("prompts/get", name);
        let result = self
            .get_prompt_in(name, arguments, caller, &span)
            .instrument(span.clone())
            .await;
        if result.is_err() {
            toolgate_core::trace::record_outcome(&span, "error", true);
        }
        result
    }

    async fn get_prompt_in(
        self: &Arc<Self>,
        name: &str,
        arguments: Option<JsonObject>,
        caller: Option<Arc<dyn ClientLink>>,
        span: &tracing::Span,
    ) -> Result<GetPromptResult, UpstreamError> {
        let live = self.ensure_live().await?;
        let _caller = live.callers.enter(caller.clone());
        let mut params = GetPromptRequestParams::new(name);
        params.meta = super::call::trace_meta(span);
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let asked = || Asked::Prompt(name.to_owned());
        self.in_rounds(caller, asked, |answers, state| {
            let mut params = params.clone();
            params.input_responses = answers;
            params.request_state = state;
            let peer = &live.peer;
            async move {
                Ok(match peer.get_prompt_once(params).await? {
                    GetPromptResponse::Complete(mut result) => {
                        // A 2025 server's result has no `resultType`; a 2026-07-28 client
                        // needs one (rmcp drops it again for older clients).
                        result.result_type = Some(ResultType::COMPLETE);
                        Reply::Complete(result)
                    }
                    GetPromptResponse::InputRequired(input) => Reply::InputRequired(input),
                    _ => Reply::Unknown,
                })
            }
        })
        .await
    }
}
