//! From a mounted server's `CallToolResult` to toolgate's [`ToolOutput`], losing nothing.
//!
//! Text blocks become the model text (joined by newlines), so the result budget, spill and
//! log compression see them (external outputs are the budget's main customer). Images,
//! audio, embedded resources and resource links are kept as media, in order.
//! `structuredContent` is passed on verbatim when it is small enough; a larger one (or a
//! larger embedded text resource) is moved into the text instead, where the budget spills
//! it losslessly, because clients such as Claude Code show the model the structured JSON in
//! place of the text and nothing else would stop it flooding the context.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use toolgate_core::{Media, ToolOutput};

/// Converts a server's result; `max_inline_chars` bounds what bypasses the text budget.
pub(crate) fn to_output(result: CallToolResult, max_inline_chars: usize) -> ToolOutput {
    let mut texts: Vec<String> = Vec::new();
    let mut media = Vec::new();
    for block in result.content {
        match block {
            ContentBlock::Text(t) => texts.push(t.text),
            ContentBlock::Image(i) => media.push(Media::Image {
                mime: i.mime_type,
                data: i.data,
            }),
            ContentBlock::Audio(a) => media.push(Media::Audio {
                mime: a.mime_type,
                data: a.data,
            }),
            ContentBlock::Resource(r) => match r.resource {
                ResourceContents::TextResourceContents {
                    uri,
                    mime_type,
                    text,
                    ..
                } => {
                    if text.chars().count() > max_inline_chars {
                        texts.push(format!("[resource {uri}]\n{text}"));
                    } else {
                        media.push(Media::Resource {
                            uri,
                            mime: mime_type,
                            text,
                        });
                    }
                }
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => media.push(Media::Blob {
                    uri,
                    mime: mime_type.unwrap_or_else(|| "application/octet-stream".to_owned()),
                    data: blob,
                }),
                other => texts.push(unknown("resource", &other)),
            },
            ContentBlock::ResourceLink(link) => media.push(Media::ResourceLink {
                uri: link.uri,
                name: link.name,
                title: link.title,
                description: link.description,
                mime: link.mime_type,
                size: link.size,
            }),
            other => texts.push(unknown("content", &other)),
        }
    }
    let mut external_structured = None;
    if let Some(structured) = result.structured_content {
        let json = serde_json::to_string(&structured).unwrap_or_default();
        let size = json.chars().count();
        if size > max_inline_chars {
            texts.push(format!("[structuredContent, {size} characters]\n{json}"));
        } else {
            if texts.is_empty() && media.is_empty() {
                // Text-only clients and models still see the result.
                texts.push(json);
            }
            external_structured = Some(structured);
        }
    }
    ToolOutput {
        text: texts.join("\n"),
        media,
        is_error: result.is_error.unwrap_or(false),
        external_structured,
        ..ToolOutput::default()
    }
}

/// A content kind newer than this gateway, kept as its JSON so nothing is lost.
fn unknown<T: serde::Serialize>(kind: &str, value: &T) -> String {
    let json = serde_json::to_string(value).unwrap_or_default();
    format!("[{kind} of a kind toolgate does not know]\n{json}")
}

#[cfg(test)]
mod tests {
    use rmcp::model::{AudioContent, EmbeddedResource, Resource};
    use serde_json::json;

    use super::*;

    #[test]
    fn every_kind_of_content_is_kept() {
        let mut result = CallToolResult::success(vec![
            ContentBlock::text("hello"),
            ContentBlock::image("aW1n", "image/png"),
            ContentBlock::Audio(AudioContent::new("YXVk", "audio/wav")),
            ContentBlock::Resource(EmbeddedResource::new(ResourceContents::text(
                "doc",
                "test://doc",
            ))),
            ContentBlock::ResourceLink(Resource::new("test://x", "x")),
            ContentBlock::text("world"),
        ]);
        result.structured_content = Some(json!({"a": 1}));
        let out = to_output(result, 1000);
        assert_eq!(out.text, "hello\nworld");
        assert_eq!(out.media.len(), 4);
        assert!(matches!(&out.media[1], Media::Audio { mime, .. } if mime == "audio/wav"));
        assert!(matches!(&out.media[2], Media::Resource { text, .. } if text == "doc"));
        assert!(matches!(&out.media[3], Media::ResourceLink { uri, .. } if uri == "test://x"));
        assert_eq!(out.external_structured, Some(json!({"a": 1})));
        assert!(!out.is_error);
    }

    #[test]
    fn large_structured_content_moves_into_the_budgeted_text() {
        let mut result = CallToolResult::success(vec![ContentBlock::text("summary")]);
        result.structured_content = Some(json!({"rows": "x".repeat(500)}));
        let out = to_output(result, 100);
        assert_eq!(out.external_structured, None);
        assert!(
            out.text
                .starts_with("summary\n[structuredContent, 511 characters]\n{\"rows\""),
            "{}",
            &out.text[..60]
        );
    }

    #[test]
    fn structured_only_results_get_a_text_form() {
        let mut result = CallToolResult::success(vec![]);
        result.structured_content = Some(json!({"t": 3}));
        let out = to_output(result, 100);
        assert_eq!(out.text, r#"{"t":3}"#);
        assert!(out.external_structured.as_ref().unwrap().is_object());
    }
}
