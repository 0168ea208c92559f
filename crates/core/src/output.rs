//! What a tool hands back: model text, structured fields and media.

use serde::Serialize;
use serde_json::{Map, Value};

/// Why a result was cut; the `reason` field of every truncated result.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
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

/// How a result was cut, as typed fields: the budget, the renderers and the agent loop read
/// these, never the text. Rendered into `structuredContent` under the same names.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Truncation {
    /// Whether the text shows only part of the result.
    pub truncated: bool,
    /// Why it was cut, when it was.
    pub reason: Option<TruncationReason>,
    /// Size of the whole (lines, entries, matches), where known.
    pub total: Option<u64>,
    /// Where the next page starts (1-based line or entry), when there is one.
    pub next_offset: Option<u64>,
    /// Opaque token for the next page of a search, when there is one.
    pub cursor: Option<String>,
    /// Entries scanned (searches and walks).
    pub scanned_count: Option<u64>,
    /// Time the call took, in milliseconds.
    pub elapsed_ms: Option<u64>,
}

impl Truncation {
    /// A result cut for `reason`.
    pub fn cut(reason: TruncationReason) -> Self {
        Self {
            truncated: true,
            reason: Some(reason),
            ..Self::default()
        }
    }

    /// Lifts the truncation fields out of a tool's structured body; `None` when the body has
    /// no `truncated` field (a tool that never pages).
    fn take_from(map: &mut Map<String, Value>) -> Option<Self> {
        let truncated = map.get("truncated")?.as_bool()?;
        let mut take_u64 = |key: &str| match map.get(key).map(Value::as_u64) {
            Some(Some(n)) => {
                map.remove(key);
                Some(n)
            }
            _ => None,
        };
        let total = take_u64("total");
        let next_offset = take_u64("next_offset");
        let scanned_count = take_u64("scanned_count");
        let elapsed_ms = take_u64("elapsed_ms");
        let reason = match map.get("reason") {
            Some(value) => match serde_json::from_value::<TruncationReason>(value.clone()) {
                Ok(reason) => {
                    map.remove("reason");
                    Some(reason)
                }
                Err(_) => None,
            },
            None => None,
        };
        let cursor = match map.get("cursor") {
            Some(Value::String(_)) => match map.remove("cursor") {
                Some(Value::String(c)) => Some(c),
                _ => None,
            },
            _ => None,
        };
        map.remove("truncated");
        Some(Self {
            truncated,
            reason,
            total,
            next_offset,
            cursor,
            scanned_count,
            elapsed_ms,
        })
    }

    /// Writes the fields that are set into `map`.
    fn write_to(&self, map: &mut Map<String, Value>) {
        map.insert("truncated".to_owned(), Value::Bool(self.truncated));
        if let Some(reason) = self.reason
            && let Ok(value) = serde_json::to_value(reason)
        {
            map.insert("reason".to_owned(), value);
        }
        let numbers = [
            ("total", self.total),
            ("next_offset", self.next_offset),
            ("scanned_count", self.scanned_count),
            ("elapsed_ms", self.elapsed_ms),
        ];
        for (key, value) in numbers {
            if let Some(n) = value {
                map.insert(key.to_owned(), Value::from(n));
            }
        }
        if let Some(cursor) = &self.cursor {
            map.insert("cursor".to_owned(), Value::String(cursor.clone()));
        }
    }
}

/// Why a spill file holds (part of) a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SpillKind {
    /// The budget cut the result and saved the whole of it.
    Spilled,
    /// The log compressor shortened the result and saved the original.
    Compressed,
    /// The tool saved a stream it produced (a command's stdout or stderr).
    Captured,
}

/// A file in the spill store that holds what the text does not show: reference cleanup keeps
/// every file a live result names here, and the budget knows a result is already saved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpillRef {
    /// Where the file is.
    pub path: std::path::PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// Its size in characters.
    pub chars: u64,
    /// Its lines (an unterminated last line counts).
    pub lines: u64,
    /// How it came to be.
    pub kind: SpillKind,
    /// Which part of the result it holds (`stdout`, `stderr`); `None` for the whole result.
    pub stream: Option<String>,
}

impl SpillRef {
    fn to_value(&self) -> Value {
        let mut map = Map::new();
        map.insert(
            "path".to_owned(),
            Value::String(self.path.to_string_lossy().into_owned()),
        );
        map.insert("bytes".to_owned(), Value::from(self.bytes));
        map.insert("chars".to_owned(), Value::from(self.chars));
        map.insert("lines".to_owned(), Value::from(self.lines));
        if let Ok(kind) = serde_json::to_value(self.kind) {
            map.insert("mode".to_owned(), kind);
        }
        if let Some(stream) = &self.stream {
            map.insert("stream".to_owned(), Value::String(stream.clone()));
        }
        Value::Object(map)
    }
}

/// One tool result as the host holds it, before any protocol rendering.
///
/// `text` is what the model reads. The typed fields ([`Truncation`], [`SpillRef`]s, `fatal`)
/// are what code reads; `structured` carries the tool's other machine fields. MCP renders
/// `structuredContent` as `{"text": …, …truncation, spill, …structured}` because some clients
/// show the model the structured JSON instead of the text content.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutput {
    /// Model-facing text.
    pub text: String,
    /// The tool's other structured fields; never contains `text`, the truncation fields or
    /// `spill`, which have typed homes.
    pub structured: Map<String, Value>,
    /// How the result was cut, for tools that page or were cut by the budget.
    pub truncation: Option<Truncation>,
    /// Spill files holding what the text does not show.
    pub spills: Vec<SpillRef>,
    /// Images and documents.
    pub media: Vec<Media>,
    /// Whether this result reports a failure.
    pub is_error: bool,
    /// Whether the failure should end an agent's turn: the tool itself is unusable (its
    /// server is gone, the host is broken), so retrying within the turn is pointless.
    pub fatal: bool,
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

    /// A fatal error result: the tool is unusable; an agent ends its turn.
    pub fn fatal(text: impl Into<String>) -> Self {
        Self {
            fatal: true,
            ..Self::error(text)
        }
    }

    /// A result from a serialisable body whose `text` field is the model text, whose
    /// truncation fields (`truncated`, `reason`, `total`, `next_offset`, `cursor`,
    /// `scanned_count`, `elapsed_ms`) become [`ToolOutput::truncation`] and whose other fields
    /// become the structured fields.
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
        let truncation = Truncation::take_from(&mut structured);
        Self {
            text,
            structured,
            truncation,
            ..Self::default()
        }
    }

    /// Whether the text shows only part of the result.
    pub fn is_truncated(&self) -> bool {
        self.truncation.as_ref().is_some_and(|t| t.truncated)
    }

    /// Marks the result as cut for `reason`, keeping what the tool already said (`total`,
    /// `scanned_count`) and dropping paging that no longer applies to the new text.
    pub fn mark_truncated(&mut self, reason: TruncationReason) {
        let t = self.truncation.get_or_insert_with(Truncation::default);
        t.truncated = true;
        t.reason = Some(reason);
    }

    /// Whether the structured form has anything beside the text.
    pub fn has_structured(&self) -> bool {
        !self.structured.is_empty() || self.truncation.is_some() || !self.spills.is_empty()
    }

    /// The field `key` of the structured form (as [`ToolOutput::structured_content`] would
    /// render it), for tests and displays.
    pub fn field(&self, key: &str) -> Option<Value> {
        if key == "text" {
            return Some(Value::String(self.text.clone()));
        }
        let mut map = Map::new();
        self.write_typed(&mut map);
        map.remove(key)
            .or_else(|| self.structured.get(key).cloned())
    }

    fn write_typed(&self, map: &mut Map<String, Value>) {
        if let Some(truncation) = &self.truncation {
            truncation.write_to(map);
        }
        // The whole result's file, when the budget saved one; a tool's own stream files
        // stay in its own fields (run_shell's `stdout.path`).
        if let Some(whole) = self.spills.iter().find(|s| s.stream.is_none()) {
            map.insert("spill".to_owned(), whole.to_value());
        }
    }

    /// The `structuredContent` object: `text`, the truncation fields, `spill`, then the
    /// tool's structured fields.
    pub fn structured_content(&self) -> Map<String, Value> {
        let mut map = Map::new();
        map.insert("text".to_owned(), Value::String(self.text.clone()));
        for (k, v) in &self.structured {
            map.insert(k.clone(), v.clone());
        }
        self.write_typed(&mut map);
        map
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn truncation_fields_round_trip_through_the_typed_form() {
        let body = json!({
            "text": "lines",
            "truncated": true,
            "reason": "result_limit",
            "total": 3000,
            "next_offset": 1384,
            "elapsed_ms": 4,
            "path": "a.txt",
        });
        let out = ToolOutput::from_body(&body);
        assert_eq!(out.text, "lines");
        let t = out.truncation.clone().unwrap();
        assert!(t.truncated);
        assert_eq!(t.reason, Some(TruncationReason::ResultLimit));
        assert_eq!(t.next_offset, Some(1384));
        assert_eq!(out.structured.keys().collect::<Vec<_>>(), vec!["path"]);
        assert_eq!(Value::Object(out.structured_content()), body);
    }

    #[test]
    fn a_body_without_truncated_has_no_truncation_and_keeps_its_fields() {
        let out = ToolOutput::from_body(&json!({"text": "x", "total": 3}));
        assert!(out.truncation.is_none());
        assert_eq!(out.structured["total"], 3);
    }

    #[test]
    fn the_whole_results_spill_is_rendered_and_stream_files_are_not() {
        let mut out = ToolOutput::text("excerpt");
        out.mark_truncated(TruncationReason::PayloadLimit);
        for stream in [Some("stdout".to_owned()), None] {
            out.spills.push(SpillRef {
                path: "/s/f.txt".into(),
                bytes: 10,
                chars: 10,
                lines: 2,
                kind: SpillKind::Spilled,
                stream,
            });
        }
        let map = out.structured_content();
        assert_eq!(map["spill"]["path"], "/s/f.txt");
        assert!(map["spill"].get("stream").is_none());
        assert_eq!(map["reason"], "payload_limit");
        assert_eq!(out.field("truncated"), Some(json!(true)));
    }
}
