//! From toolgate's results and rendered tools to rmcp's types.

use std::sync::Arc;

use rmcp::model::{AudioContent, CallToolResult, ContentBlock, Resource, ResourceContents, Tool};
use serde_json::Value;
use toolgate_core::{
    ClientProfile, DynTool, Media, Protocol, RenderOptions, ToolOutput, render_tools,
};

/// The MCP tool list for `tools`, rendered by toolgate's renderer (one home for rendering).
pub(crate) fn mcp_tools<'a>(
    tools: impl IntoIterator<Item = &'a dyn DynTool>,
    options: &RenderOptions,
) -> Vec<Tool> {
    render_tools(tools, Protocol::Mcp, options)
        .into_iter()
        .filter_map(|value| match serde_json::from_value::<Tool>(value) {
            Ok(tool) => Some(tool),
            Err(e) => {
                tracing::error!(%e, "rendered tool does not fit the MCP schema; omitted");
                None
            }
        })
        .collect()
}

/// A toolgate result as the MCP `CallToolResult` that `serve` sends — the one serializer,
/// which `toolgate call --json` uses too. Every per-client decision about a result's form is
/// made here, from the session's `profile` (`None`: no client in front, as in
/// `toolgate call`):
///
/// - a client that shows the model `structuredContent` instead of the text (Claude Code,
///   Codex) gets text only — its session lists no output schemas, so none is owed — and so
///   reads numbered lines as lines, not as one escaped JSON string;
/// - other clients get `structuredContent` for a tool that declares an output schema
///   (`has_output_schema`), as the spec requires, and it carries the whole model text beside
///   the machine fields, so even a client that shows it loses nothing.
pub fn call_result(
    output: &ToolOutput,
    has_output_schema: bool,
    profile: Option<&ClientProfile>,
) -> CallToolResult {
    let mut content = Vec::with_capacity(1 + output.media.len());
    // An image-only result (from a mounted server) needs no empty text block beside it.
    if !output.text.is_empty() || output.media.is_empty() {
        content.push(ContentBlock::text(output.text.clone()));
    }
    content.extend(output.media.iter().map(media_block));
    let mut result = if output.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    if profile.is_some_and(|p| p.shows_structured) {
        return result;
    }
    if let Some(external) = &output.external_structured {
        // A mounted tool's own structured result, which its output schema describes.
        result.structured_content = Some(external.clone());
    } else if has_output_schema && !output.is_error && output.has_structured() {
        result.structured_content = Some(Value::Object(output.structured_content()));
    }
    result
}

/// `tools` as a session whose client shows `structuredContent` instead of text must list
/// them: without output schemas, so no structured result is owed (one session never mixes
/// the two forms).
pub(crate) fn without_output_schemas(tools: &[Tool]) -> Vec<Tool> {
    tools
        .iter()
        .map(|tool| {
            let mut tool = tool.clone();
            tool.output_schema = None;
            tool
        })
        .collect()
}

/// One media item as an MCP content block; every kind survives the trip.
fn media_block(media: &Media) -> ContentBlock {
    match media {
        Media::Image { mime, data } => ContentBlock::image(data.clone(), mime.clone()),
        Media::Audio { mime, data } => {
            ContentBlock::Audio(AudioContent::new(data.clone(), mime.clone()))
        }
        Media::Blob { uri, mime, data } => {
            ContentBlock::resource(ResourceContents::BlobResourceContents {
                uri: uri.clone(),
                mime_type: Some(mime.clone()),
                blob: data.clone(),
                meta: None,
            })
        }
        Media::Resource { uri, mime, text } => {
            ContentBlock::resource(ResourceContents::TextResourceContents {
                uri: uri.clone(),
                mime_type: mime.clone(),
                text: text.clone(),
                meta: None,
            })
        }
        Media::ResourceLink {
            uri,
            name,
            title,
            description,
            mime,
            size,
        } => {
            let mut link = Resource::new(uri.clone(), name.clone());
            link.title = title.clone();
            link.description = description.clone();
            link.mime_type = mime.clone();
            link.size = *size;
            ContentBlock::ResourceLink(link)
        }
    }
}

/// Whether a tool declares an output schema.
pub fn has_output_schema(tool: &Arc<dyn DynTool>) -> bool {
    tool.meta().output_schema.is_some()
}
