//! The suite's prompts and resources, served through toolgate's sources.

use futures::future::BoxFuture;
use rmcp::model::{
    ArgumentInfo, CompletionContext, CompletionInfo, ContentBlock, GetPromptResult, Prompt,
    PromptArgument, PromptMessage, Resource, ResourceContents, ResourceTemplate, Role,
};
use tokio::sync::broadcast;
use toolgate_core::CallContext;
use toolgate_mcp::{PromptArguments, PromptSource, ResourceSource, SourceError, completion};

use crate::RED_PIXEL_PNG;

/// The suite's `test_*` prompts.
pub(crate) struct FixturePrompts;

impl PromptSource for FixturePrompts {
    fn prompts(&self) -> Vec<Prompt> {
        let required = |name: &str, description: &str| {
            PromptArgument::new(name)
                .with_description(description)
                .with_required(true)
        };
        vec![
            Prompt::new(
                "test_simple_prompt",
                Some("A simple prompt without arguments"),
                None,
            ),
            Prompt::new(
                "test_prompt_with_arguments",
                Some("A prompt with two required arguments"),
                Some(vec![
                    required("arg1", "First test argument"),
                    required("arg2", "Second test argument"),
                ]),
            ),
            Prompt::new(
                "test_prompt_with_embedded_resource",
                Some("A prompt that embeds a resource"),
                Some(vec![required(
                    "resourceUri",
                    "URI of the resource to embed",
                )]),
            ),
            Prompt::new(
                "test_prompt_with_image",
                Some("A prompt with image content"),
                None,
            ),
            Prompt::new(
                "test_input_required_result_prompt",
                Some("A prompt that asks the user for its context (SEP-2322)"),
                None,
            ),
        ]
    }

    fn get<'a>(
        &'a self,
        name: &'a str,
        arguments: &'a PromptArguments,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<GetPromptResult, SourceError>> {
        Box::pin(async move {
            let arg = |key: &str| {
                arguments.get(key).cloned().ok_or_else(|| {
                    SourceError::InvalidArguments(format!("`{name}` needs the argument `{key}`"))
                })
            };
            let user_text = |text: String| PromptMessage::new_text(Role::User, text);
            let messages = match name {
                "test_simple_prompt" => {
                    vec![user_text("This is a simple prompt for testing.".into())]
                }
                "test_prompt_with_arguments" => {
                    let (arg1, arg2) = (arg("arg1")?, arg("arg2")?);
                    vec![user_text(format!(
                        "Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"
                    ))]
                }
                "test_prompt_with_embedded_resource" => {
                    let uri = arg("resourceUri")?;
                    let resource =
                        ResourceContents::text("Embedded resource content for testing.", uri);
                    vec![
                        PromptMessage::new(Role::User, ContentBlock::resource(resource)),
                        user_text("Please process the embedded resource above.".into()),
                    ]
                }
                "test_prompt_with_image" => vec![
                    PromptMessage::new(Role::User, ContentBlock::image(RED_PIXEL_PNG, "image/png")),
                    user_text("Please analyze the image above.".into()),
                ],
                "test_input_required_result_prompt" => return crate::asking::prompt(ctx).await,
                _ => return Err(SourceError::UnknownPrompt(name.to_owned())),
            };
            Ok(GetPromptResult::new(messages))
        })
    }

    fn complete<'a>(
        &'a self,
        name: &'a str,
        argument: &'a ArgumentInfo,
        _context: Option<&'a CompletionContext>,
    ) -> BoxFuture<'a, Result<CompletionInfo, SourceError>> {
        let values = if name != "test_prompt_with_arguments" || argument.name != "arg1" {
            Vec::new()
        } else {
            ["paris", "park", "party"]
                .into_iter()
                .filter(|v| v.starts_with(argument.value.as_str()))
                .map(str::to_owned)
                .collect()
        };
        Box::pin(async move { Ok(completion(values)) })
    }
}

/// The suite's `test://` resources and the `test://template/{id}/data` template.
pub(crate) struct FixtureResources {
    /// Nothing changes in the fixture, but holding the sender makes the resources
    /// subscribable.
    updates: broadcast::Sender<String>,
}

const TEMPLATE: &str = "test://template/{id}/data";

impl FixtureResources {
    pub(crate) fn new() -> Self {
        Self {
            updates: broadcast::channel(16).0,
        }
    }
}

fn resource(uri: &str, name: &str, description: &str, mime: &str) -> Resource {
    Resource::new(uri, name)
        .with_description(description)
        .with_mime_type(mime)
}

impl ResourceSource for FixtureResources {
    fn resources(&self) -> Vec<Resource> {
        vec![
            resource(
                "test://static-text",
                "static-text",
                "A static text resource",
                "text/plain",
            ),
            resource(
                "test://static-binary",
                "static-binary",
                "A static binary resource (a PNG)",
                "image/png",
            ),
            resource(
                "test://watched-resource",
                "watched-resource",
                "A resource clients can subscribe to",
                "text/plain",
            ),
        ]
    }

    fn templates(&self) -> Vec<ResourceTemplate> {
        vec![
            ResourceTemplate::new(TEMPLATE, "template-data")
                .with_description("Data for one ID")
                .with_mime_type("application/json"),
        ]
    }

    fn read<'a>(
        &'a self,
        uri: &'a str,
        _ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<Vec<ResourceContents>, SourceError>> {
        Box::pin(async move {
            let contents = match uri {
                "test://static-text" => {
                    ResourceContents::text("This is the content of the static text resource.", uri)
                }
                "test://static-binary" => {
                    ResourceContents::blob(RED_PIXEL_PNG, uri).with_mime_type("image/png")
                }
                "test://watched-resource" => {
                    ResourceContents::text("This is the watched resource.", uri)
                }
                _ => {
                    let id = template_id(uri)
                        .ok_or_else(|| SourceError::UnknownResource(uri.to_owned()))?;
                    let body = serde_json::json!({
                        "id": id,
                        "templateTest": true,
                        "data": format!("Data for ID: {id}"),
                    });
                    ResourceContents::text(body.to_string(), uri).with_mime_type("application/json")
                }
            };
            Ok(vec![contents])
        })
    }

    fn complete<'a>(
        &'a self,
        template: &'a str,
        argument: &'a ArgumentInfo,
        _context: Option<&'a CompletionContext>,
    ) -> BoxFuture<'a, Result<CompletionInfo, SourceError>> {
        let values = if template != TEMPLATE || argument.name != "id" {
            Vec::new()
        } else {
            ["123", "456"]
                .into_iter()
                .filter(|v| v.starts_with(argument.value.as_str()))
                .map(str::to_owned)
                .collect()
        };
        Box::pin(async move { Ok(completion(values)) })
    }

    fn updates(&self) -> Option<broadcast::Receiver<String>> {
        Some(self.updates.subscribe())
    }
}

/// The `{id}` of a `test://template/{id}/data` URI.
fn template_id(uri: &str) -> Option<&str> {
    let id = uri
        .strip_prefix("test://template/")?
        .strip_suffix("/data")?;
    (!id.is_empty() && !id.contains('/')).then_some(id)
}
