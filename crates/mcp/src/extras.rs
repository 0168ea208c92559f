//! Prompts and resources beside the tools (skills are served as prompts).
//!
//! A [`ToolgateServer`](crate::ToolgateServer) may hold one [`PromptSource`] and one
//! [`ResourceSource`]; it advertises the `prompts`, `resources` and `completions` capabilities
//! only when it holds them. Sources speak rmcp's model types: this crate is the MCP adapter,
//! so a second copy of those types would only add conversions.

use std::collections::BTreeMap;

use futures::future::BoxFuture;
use rmcp::ErrorData as McpError;
use rmcp::model::{
    ArgumentInfo, CompleteRequestParams, CompleteResult, CompletionContext, CompletionInfo,
    GetPromptResult, JsonObject, Prompt, Reference, Resource, ResourceContents, ResourceTemplate,
};
use serde_json::Value;
use tokio::sync::{broadcast, watch};
use toolgate_core::{CallContext, Identity};

/// The arguments of one `prompts/get`: MCP prompt arguments are strings by name.
pub type PromptArguments = BTreeMap<String, String>;

/// Why a prompt or resource request failed. The text is shown to the client's user.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// No prompt has this name.
    #[error("unknown prompt `{0}`; list the prompts with prompts/list")]
    UnknownPrompt(String),
    /// No resource or template matches this URI.
    #[error(
        "unknown resource `{0}`; list the resources with resources/list and the templates with resources/templates/list"
    )]
    UnknownResource(String),
    /// The arguments do not fit: the message names the argument and what it needs.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// The source itself failed (an unreadable file, a broken skill, a mounted server):
    /// its error, whose text is what the client reads.
    #[error("{0}")]
    Failed(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl SourceError {
    /// The source failed with `error`.
    pub fn failed(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self::Failed(error.into())
    }
}

impl From<SourceError> for McpError {
    fn from(error: SourceError) -> Self {
        let message = error.to_string();
        match error {
            // The MCP spec names -32602 for an unknown prompt and -32002 for an unknown
            // resource.
            SourceError::UnknownPrompt(_) | SourceError::InvalidArguments(_) => {
                McpError::invalid_params(message, None)
            }
            SourceError::UnknownResource(uri) => {
                McpError::resource_not_found(message, Some(serde_json::json!({ "uri": uri })))
            }
            SourceError::Failed(_) => McpError::internal_error(message, None),
        }
    }
}

/// Where the server's prompts come from (later: the skill catalog).
pub trait PromptSource: Send + Sync + 'static {
    /// Every prompt, in a stable order.
    fn prompts(&self) -> Vec<Prompt>;

    /// The prompts `caller` may get (rules with a condition on the caller); all of them by
    /// default.
    fn prompts_for(&self, caller: Option<&Identity>) -> Vec<Prompt> {
        let _ = caller;
        self.prompts()
    }

    /// Prompt `name` filled in with `arguments`. `ctx` is the request's: its cancellation,
    /// its session, and the client it may ask for input ([`CallContext::client`]).
    fn get<'a>(
        &'a self,
        name: &'a str,
        arguments: &'a PromptArguments,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<GetPromptResult, SourceError>>;

    /// Suggested values for `argument` of prompt `name` (`completion/complete`: its name
    /// and what the user typed so far), best first, given the values of the arguments
    /// already filled in (`context`). None by default; [`completion`] caps a plain list.
    fn complete<'a>(
        &'a self,
        name: &'a str,
        argument: &'a ArgumentInfo,
        context: Option<&'a CompletionContext>,
    ) -> BoxFuture<'a, Result<CompletionInfo, SourceError>> {
        let _ = (name, argument, context);
        Box::pin(async { Ok(completion(Vec::new())) })
    }

    /// A receiver that changes whenever the prompt list does; `Some` makes the server
    /// advertise `prompts.listChanged` and notify its clients.
    fn changes(&self) -> Option<watch::Receiver<u64>> {
        None
    }
}

/// Where the server's resources come from.
pub trait ResourceSource: Send + Sync + 'static {
    /// Every direct resource, in a stable order.
    fn resources(&self) -> Vec<Resource>;

    /// The URI templates (RFC 6570) this source can also read.
    fn templates(&self) -> Vec<ResourceTemplate> {
        Vec::new()
    }

    /// The resources `caller` may read (rules with a condition on the caller); all of them
    /// by default.
    fn resources_for(&self, caller: Option<&Identity>) -> Vec<Resource> {
        let _ = caller;
        self.resources()
    }

    /// The templates `caller` may read; all of them by default.
    fn templates_for(&self, caller: Option<&Identity>) -> Vec<ResourceTemplate> {
        let _ = caller;
        self.templates()
    }

    /// The contents at `uri`, a direct resource or a template instance. `ctx` is the
    /// request's, as for [`PromptSource::get`].
    fn read<'a>(
        &'a self,
        uri: &'a str,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<Vec<ResourceContents>, SourceError>>;

    /// Suggested values for `argument` of the template `template` (its name and what the
    /// user typed so far), best first, given the values of the arguments already filled in
    /// (`context`). None by default; [`completion`] caps a plain list.
    fn complete<'a>(
        &'a self,
        template: &'a str,
        argument: &'a ArgumentInfo,
        context: Option<&'a CompletionContext>,
    ) -> BoxFuture<'a, Result<CompletionInfo, SourceError>> {
        let _ = (template, argument, context);
        Box::pin(async { Ok(completion(Vec::new())) })
    }

    /// A receiver that changes whenever the resource list does; `Some` makes the server
    /// advertise `resources.listChanged` and notify its clients.
    fn changes(&self) -> Option<watch::Receiver<u64>> {
        None
    }

    /// URIs whose contents changed. `Some` makes the server advertise
    /// `resources.subscribe`, accept `resources/subscribe` and forward the URIs each session
    /// subscribed to as `notifications/resources/updated`.
    fn updates(&self) -> Option<broadcast::Receiver<String>> {
        None
    }

    /// Starts following `uri` for one more subscriber (a session's `resources/subscribe`,
    /// or a `subscriptions/listen` stream naming it), until the returned lease is dropped:
    /// a source that must ask for updates itself (a mounted server's) asks once however many
    /// follow, and stops when the last lease goes. `Err` refuses the subscription and says
    /// why. By default there is nothing to ask: every update is reported anyway.
    fn follow<'a>(&'a self, uri: &'a str) -> BoxFuture<'a, Result<UpdateLease, SourceError>> {
        let _ = uri;
        Box::pin(async { Ok(UpdateLease::none()) })
    }

    /// Whether `uri` is one this source has (listed, or fitting a template), as far as it
    /// knows now: a `subscriptions/listen` stream honors only such URIs, so the client
    /// learns which of the ones it named are followed. By default every URI.
    fn offers(&self, uri: &str) -> bool {
        let _ = uri;
        true
    }
}

/// Keeps one subscriber's interest in a resource's updates alive ([`ResourceSource::follow`]);
/// dropping it withdraws that interest.
pub struct UpdateLease(Option<Box<dyn Send + Sync>>);

impl UpdateLease {
    /// A lease that holds nothing (the source follows every URI anyway).
    pub fn none() -> Self {
        Self(None)
    }

    /// A lease that holds `guard` until it is dropped (the guard's `Drop` withdraws).
    pub fn new(guard: impl Send + Sync + 'static) -> Self {
        Self(Some(Box::new(guard)))
    }
}

impl std::fmt::Debug for UpdateLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("UpdateLease")
            .field(&self.0.is_some())
            .finish()
    }
}

/// `values` as a completion: the first [`CompletionInfo::MAX_VALUES`] (the protocol's
/// limit), the total, and whether there are more.
pub fn completion(mut values: Vec<String>) -> CompletionInfo {
    let total = values.len();
    values.truncate(CompletionInfo::MAX_VALUES);
    let has_more = total > values.len();
    let mut info = CompletionInfo::default();
    info.values = values;
    info.total = Some(u32::try_from(total).unwrap_or(u32::MAX));
    info.has_more = Some(has_more);
    info
}

/// MCP prompt arguments as strings; non-string JSON values keep their JSON text, so a
/// client that sends `3` instead of `"3"` still gets its prompt.
pub(crate) fn prompt_arguments(arguments: Option<JsonObject>) -> PromptArguments {
    arguments
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| {
            let v = match v {
                Value::String(s) => s,
                other => other.to_string(),
            };
            (k, v)
        })
        .collect()
}

/// Answers `completion/complete` from whichever source the reference points at.
pub(crate) async fn complete(
    prompts: Option<&dyn PromptSource>,
    resources: Option<&dyn ResourceSource>,
    request: &CompleteRequestParams,
) -> Result<CompleteResult, McpError> {
    let argument = &request.argument;
    let context = request.context.as_ref();
    let mut info = match &request.r#ref {
        Reference::Prompt(prompt) => match prompts {
            Some(p) => p.complete(&prompt.name, argument, context).await?,
            None => completion(Vec::new()),
        },
        Reference::Resource(template) => match resources {
            Some(r) => r.complete(&template.uri, argument, context).await?,
            None => completion(Vec::new()),
        },
        _ => completion(Vec::new()),
    };
    // A source that sent more than the protocol allows (a mounted server) is cut to it.
    if info.values.len() > CompletionInfo::MAX_VALUES {
        let sent = u32::try_from(info.values.len()).unwrap_or(u32::MAX);
        let total = info.total.unwrap_or(0).max(sent);
        info = completion(std::mem::take(&mut info.values));
        info.total = Some(total);
    }
    Ok(CompleteResult::new(info))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Colours;

    impl PromptSource for Colours {
        fn prompts(&self) -> Vec<Prompt> {
            Vec::new()
        }

        fn get<'a>(
            &'a self,
            name: &'a str,
            _arguments: &'a PromptArguments,
            _ctx: &'a CallContext,
        ) -> BoxFuture<'a, Result<GetPromptResult, SourceError>> {
            Box::pin(async move { Err(SourceError::UnknownPrompt(name.to_owned())) })
        }

        fn complete<'a>(
            &'a self,
            _name: &'a str,
            argument: &'a ArgumentInfo,
            _context: Option<&'a CompletionContext>,
        ) -> BoxFuture<'a, Result<CompletionInfo, SourceError>> {
            let typed = &argument.value;
            let values = (0..150).map(|i| format!("{typed}{i}")).collect::<Vec<_>>();
            Box::pin(async move { Ok(completion(values)) })
        }
    }

    #[tokio::test]
    async fn completion_is_capped_at_the_protocol_limit_and_says_there_is_more() {
        let request = CompleteRequestParams::new(
            Reference::for_prompt("p"),
            ArgumentInfo::new("colour", "re"),
        );
        let result = complete(Some(&Colours), None, &request).await.unwrap();
        assert_eq!(result.completion.values.len(), 100);
        assert_eq!(result.completion.values[0], "re0");
        assert_eq!(result.completion.total, Some(150));
        assert_eq!(result.completion.has_more, Some(true));
    }

    #[tokio::test]
    async fn completion_without_a_source_is_empty() {
        let request = CompleteRequestParams::new(
            Reference::for_resource("test://{id}"),
            ArgumentInfo::new("id", "1"),
        );
        let result = complete(Some(&Colours), None, &request).await.unwrap();
        assert!(result.completion.values.is_empty());
        assert_eq!(result.completion.has_more, Some(false));
    }

    #[test]
    fn prompt_arguments_keep_non_strings_as_json_text() {
        let mut args = JsonObject::new();
        args.insert("a".into(), Value::String("x".into()));
        args.insert("n".into(), serde_json::json!(3));
        let args = prompt_arguments(Some(args));
        assert_eq!(args["a"], "x");
        assert_eq!(args["n"], "3");
    }

    #[test]
    fn unknown_resource_maps_to_resource_not_found() {
        let error = McpError::from(SourceError::UnknownResource("test://x".into()));
        assert_eq!(error.code, rmcp::model::ErrorCode::RESOURCE_NOT_FOUND);
        let error = McpError::from(SourceError::UnknownPrompt("p".into()));
        assert_eq!(error.code, rmcp::model::ErrorCode::INVALID_PARAMS);
    }
}
