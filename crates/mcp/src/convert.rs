//! From toolgate's results and rendered tools to rmcp's types.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents, Tool};
use serde_json::Value;
use toolgate_core::{DynTool, Media, Protocol, RenderOptions, ToolOutput, render_tools};

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

/// A toolgate result as an MCP `CallToolResult`. `structuredContent` carries the whole model
/// text beside the machine fields, because Claude Code and Codex show the model the
/// structured JSON instead of the text content when both are present (SPEC "MCP").
pub(crate) fn call_result(output: ToolOutput, has_output_schema: bool) -> CallToolResult {
    let mut content = vec![ContentBlock::text(output.text.clone())];
    for media in &output.media {
        content.push(match media {
            Media::Image { mime, data } => ContentBlock::image(data.clone(), mime.clone()),
            Media::Blob { uri, mime, data } => {
                ContentBlock::resource(ResourceContents::BlobResourceContents {
                    uri: uri.clone(),
                    mime_type: Some(mime.clone()),
                    blob: data.clone(),
                    meta: None,
                })
            }
        });
    }
    let mut result = if output.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    if has_output_schema && !output.is_error && !output.structured.is_empty() {
        result.structured_content = Some(Value::Object(output.structured_content()));
    }
    result
}

/// Whether a tool declares an output schema.
pub(crate) fn has_output_schema(tool: &Arc<dyn DynTool>) -> bool {
    tool.meta().output_schema.is_some()
}
