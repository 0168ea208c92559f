//! What a tool hands back: model text, structured fields and media.

use serde::Serialize;
use serde_json::{Map, Value};

/// Why a result was cut; the `reason` field of every truncated result (SPEC "Bounded I/O").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TruncationReason {
    /// The deadline passed.
    Timeout,
    /// Too many entries were scanned.
    ScanLimit,
    /// Too many results (lines, entries, matches).
    ResultLimit,
    /// Too many bytes.
    PayloadLimit,
}

/// Non-text content, passed to MCP clients as image or resource content.
#[derive(Debug, Clone, PartialEq)]
pub enum Media {
    /// An image, base64-encoded.
    Image {
        /// MIME type such as `image/png`.
        mime: String,
        /// Base64 data.
        data: String,
    },
    /// A binary document such as a PDF, base64-encoded, addressed by URI.
    Blob {
        /// `file://` URI of the source.
        uri: String,
        /// MIME type.
        mime: String,
        /// Base64 data.
        data: String,
    },
    /// Audio, base64-encoded (MCP `audio` content).
    Audio {
        /// MIME type such as `audio/wav`.
        mime: String,
        /// Base64 data.
        data: String,
    },
    /// A text document embedded in the result (MCP `resource` content with `text`).
    Resource {
        /// URI of the resource.
        uri: String,
        /// MIME type, when known.
        mime: Option<String>,
        /// The document's text.
        text: String,
    },
    /// A pointer to a resource the client can read itself (MCP `resource_link` content).
    ResourceLink {
        /// URI of the resource.
        uri: String,
        /// Programmatic name.
        name: String,
        /// Human-readable title.
        title: Option<String>,
        /// What it is.
        description: Option<String>,
        /// MIME type, when known.
        mime: Option<String>,
        /// Size in bytes, when known.
        size: Option<u64>,
    },
}

/// One tool result as the host holds it, before any protocol rendering.
///
/// `text` is what the model reads. `structured` carries the machine fields (truncation,
/// pagination); MCP renders `structuredContent` as `{"text": …, …structured}` because some
/// clients show the model the structured JSON instead of the text content.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutput {
    /// Model-facing text.
    pub text: String,
    /// Structured fields beside the text; never contains `text`.
    pub structured: Map<String, Value>,
    /// Images and documents.
    pub media: Vec<Media>,
    /// Whether this result reports a failure.
    pub is_error: bool,
    /// `structuredContent` of an external (MCP) tool, passed on verbatim. When set, MCP
    /// renders it instead of `{text, …structured}`, because it must match that tool's own
    /// output schema.
    pub external_structured: Option<Value>,
}

impl ToolOutput {
    /// A plain successful text result.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::default()
        }
    }

    /// An error result: the message says what went wrong and what to do next.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            is_error: true,
            ..Self::default()
        }
    }

    /// A result from a serialisable body whose `text` field is the model text and whose other
    /// fields become the structured fields.
    pub fn from_body<T: Serialize>(body: &T) -> Self {
        let mut structured = match serde_json::to_value(body) {
            Ok(Value::Object(map)) => map,
            Ok(other) => {
                let mut map = Map::new();
                map.insert("value".to_owned(), other);
                map
            }
            Err(e) => return Self::error(format!("error: could not encode the result: {e}")),
        };
        let text = match structured.remove("text") {
            Some(Value::String(s)) => s,
            Some(other) => other.to_string(),
            None => String::new(),
        };
        Self {
            text,
            structured,
            media: Vec::new(),
            is_error: false,
            external_structured: None,
        }
    }

    /// The `structuredContent` object: `text` first, then the structured fields.
    pub fn structured_content(&self) -> Map<String, Value> {
        let mut map = Map::new();
        map.insert("text".to_owned(), Value::String(self.text.clone()));
        for (k, v) in &self.structured {
            map.insert(k.clone(), v.clone());
        }
        map
    }
}
