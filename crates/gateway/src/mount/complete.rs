//! Completion of a mounted server's prompt and template arguments: `completion/complete`
//! forwarded to the server with the argument and context the client gave, when the server
//! declared `completions`.

use std::sync::Arc;

use rmcp::model::{
    ArgumentInfo, CompleteRequestParams, CompletionContext, CompletionInfo, Reference,
};

use super::Mount;
use crate::error::{Asked, UpstreamError};

impl Mount {
    /// The server's suggestions for `argument` of `reference` (its own prompt name or
    /// template); none when the server offers no completion.
    pub(crate) async fn complete(
        self: &Arc<Self>,
        reference: Reference,
        argument: &ArgumentInfo,
        context: Option<&CompletionContext>,
    ) -> Result<CompletionInfo, UpstreamError> {
        let server = || self.spec.name.clone();
        let asked = || Asked::Complete(argument.name.clone());
        let live = self.ensure_live().await?;
        let offers = live
            .peer
            .peer_info()
            .is_some_and(|info| info.capabilities.completions.is_some());
        if !offers {
            return Ok(CompletionInfo::default());
        }
        let mut params = CompleteRequestParams::new(reference, argument.clone());
        if let Some(context) = context {
            params = params.with_context(context.clone());
        }
        let answer = tokio::time::timeout(self.spec.tool_timeout, live.peer.complete(params))
            .await
            .map_err(|_| UpstreamError::Timeout {
                server: server(),
                asked: asked(),
            })?;
        answer
            .map(|result| result.completion)
            .map_err(|source| UpstreamError::Refused {
                server: server(),
                asked: asked(),
                source,
            })
    }
}
