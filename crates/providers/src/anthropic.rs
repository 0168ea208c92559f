//! The Anthropic Messages API: `tool_use`/`tool_result` blocks, `input_json_delta`
//! streaming, `cache_control` breakpoints on the stable prefix and the conversation's end.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::protocol::{Flow, ParseError};
use crate::types::{Event, Finish, Message, Request, Response, ToolCall, Usage};

/// The `anthropic-version` header.
pub(crate) const VERSION: &str = "2023-06-01";

fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// The request body. Cache breakpoints (at most 4 are allowed; 3 are used): the last
/// stable tool, the system block (tools come first in Anthropic's prefix, so this one
/// covers tools + system, backfill included) and the last block of the conversation, so
/// each turn reads the previous turn's prefix from the cache.
pub(crate) fn body(request: &Request<'_>, model: &str, max_tokens: u32, stream: bool) -> Value {
    let mut tools: Vec<Value> = request.tools.to_vec();
    if request.stable_tools > 0
        && let Some(Value::Object(last)) = tools.get_mut(request.stable_tools - 1)
    {
        last.insert("cache_control".into(), ephemeral());
    }
    let mut messages: Vec<(String, Vec<Value>)> = Vec::new();
    for message in request.messages {
        let (role, blocks) = match message {
            Message::User { content } => ("user", vec![text_block(content)]),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let mut blocks = Vec::new();
                if !content.is_empty() {
                    blocks.push(text_block(content));
                }
                for call in tool_calls {
                    // The input must be an object; what the model sent is kept verbatim in
                    // the transcript, and an unreadable one goes back as `{}`.
                    let input = serde_json::from_str::<Value>(&call.arguments)
                        .ok()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| Value::Object(Map::new()));
                    blocks.push(json!({
                        "type": "tool_use",
                        "id": call.id,
                        "name": call.name,
                        "input": input,
                    }));
                }
                if blocks.is_empty() {
                    // Empty text blocks are refused; an empty answer still takes its turn.
                    blocks.push(text_block("(no answer)"));
                }
                ("assistant", blocks)
            }
            Message::Tool { results } => (
                "user",
                results
                    .iter()
                    .map(|r| {
                        let mut block = json!({
                            "type": "tool_result",
                            "tool_use_id": r.call_id,
                            "content": if r.content.is_empty() { "(no output)" } else { &r.content },
                        });
                        if r.is_error
                            && let Value::Object(b) = &mut block
                        {
                            b.insert("is_error".into(), true.into());
                        }
                        block
                    })
                    .collect(),
            ),
        };
        // Consecutive messages of one role (tool results, then the user's next words)
        // become one turn.
        match messages.last_mut() {
            Some((last, existing)) if last == role => existing.extend(blocks),
            _ => messages.push((role.to_owned(), blocks)),
        }
    }
    if let Some((_, blocks)) = messages.last_mut()
        && let Some(Value::Object(last)) = blocks.last_mut()
    {
        last.insert("cache_control".into(), ephemeral());
    }
    let messages: Vec<Value> = messages
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    let mut body = Map::new();
    body.insert("model".into(), model.into());
    body.insert("max_tokens".into(), max_tokens.into());
    body.insert(
        "system".into(),
        json!([{"type": "text", "text": request.system, "cache_control": ephemeral()}]),
    );
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
    }
    body.insert("messages".into(), Value::Array(messages));
    if stream {
        body.insert("stream".into(), true.into());
    }
    Value::Object(body)
}

fn text_block(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

/// Anthropic's `input_tokens` leaves out cached tokens; ours counts every prompt token.
fn usage(value: &Value) -> Usage {
    let n = |key: &str| value.get(key).and_then(Value::as_u64).unwrap_or(0);
    let read = n("cache_read_input_tokens");
    let write = n("cache_creation_input_tokens");
    Usage {
        input_tokens: n("input_tokens") + read + write,
        output_tokens: n("output_tokens"),
        cached_input_tokens: read,
        cache_write_tokens: write,
    }
}

fn finish(reason: Option<&str>) -> Finish {
    match reason {
        Some("end_turn" | "stop_sequence") | None => Finish::Stop,
        Some("tool_use") => Finish::ToolCalls,
        Some("max_tokens") => Finish::Length,
        Some(other) => Finish::Other(other.to_owned()),
    }
}

fn api_error(value: &Value) -> ParseError {
    let kind = value
        .pointer("/error/type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let message = value
        .pointer("/error/message")
        .and_then(Value::as_str)
        .map_or_else(|| value.to_string(), str::to_owned);
    match kind {
        "overloaded_error" | "rate_limit_error" | "api_error" => {
            ParseError::Overloaded(format!("{kind}: {message}"))
        }
        _ => ParseError::Api(format!("{kind}: {message}")),
    }
}

/// A whole (non-streamed) response.
pub(crate) fn parse(value: &Value) -> Result<Response, ParseError> {
    if value.get("type").and_then(Value::as_str) == Some("error") {
        return Err(api_error(value));
    }
    let content = value
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| ParseError::Invalid("no `content` array in the response".into()))?;
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for block in content {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(block.get("text").and_then(Value::as_str).unwrap_or("")),
            Some("tool_use") => tool_calls.push(ToolCall {
                id: block
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                name: block
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| ParseError::Invalid("a tool_use block has no name".into()))?
                    .to_owned(),
                arguments: block
                    .get("input")
                    .map_or_else(|| "{}".to_owned(), Value::to_string),
            }),
            // thinking, redacted_thinking, server tool blocks: not ours to show.
            _ => {}
        }
    }
    Ok(Response {
        text,
        tool_calls,
        usage: value.get("usage").map(usage).unwrap_or_default(),
        finish: finish(value.get("stop_reason").and_then(Value::as_str)),
    })
}

#[derive(Debug)]
enum Block {
    Text,
    Tool {
        id: String,
        name: String,
        json: String,
    },
    Other,
}

/// A streamed response being assembled.
#[derive(Debug, Default)]
pub(crate) struct Stream {
    text: String,
    blocks: BTreeMap<u64, Block>,
    usage: Usage,
    reason: Option<String>,
    stopped: bool,
    /// Whether any part of the answer was shown (then a failure is not retried).
    pub(crate) emitted: bool,
}

impl Stream {
    /// Bytes assembled so far.
    pub(crate) fn size(&self) -> usize {
        self.text.len()
            + self
                .blocks
                .values()
                .map(|b| match b {
                    Block::Tool { id, name, json } => id.len() + name.len() + json.len() + 64,
                    Block::Text | Block::Other => 64,
                })
                .sum::<usize>()
    }

    pub(crate) fn feed(
        &mut self,
        event: Option<&str>,
        data: &str,
        on_event: &mut (dyn FnMut(Event) + Send),
    ) -> Result<Flow, ParseError> {
        let value: Value = serde_json::from_str(data)
            .map_err(|e| ParseError::Invalid(format!("a stream event is not JSON ({e})")))?;
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .or(event)
            .unwrap_or_default();
        let index = value.get("index").and_then(Value::as_u64).unwrap_or(0);
        match kind {
            "message_start" => {
                if let Some(u) = value.pointer("/message/usage") {
                    self.usage = usage(u);
                }
            }
            "content_block_start" => {
                let block = value.get("content_block").cloned().unwrap_or_default();
                let entry = match block.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        if let Some(t) = block.get("text").and_then(Value::as_str)
                            && !t.is_empty()
                        {
                            self.text.push_str(t);
                            self.emitted = true;
                            on_event(Event::Text(t.to_owned()));
                        }
                        Block::Text
                    }
                    Some("tool_use") => {
                        let name = block
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned();
                        self.emitted = true;
                        on_event(Event::ToolCall { name: name.clone() });
                        Block::Tool {
                            id: block
                                .get("id")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_owned(),
                            name,
                            json: String::new(),
                        }
                    }
                    _ => Block::Other,
                };
                self.blocks.insert(index, entry);
            }
            "content_block_delta" => {
                let delta = value.get("delta").cloned().unwrap_or_default();
                match (
                    delta.get("type").and_then(Value::as_str),
                    self.blocks.get_mut(&index),
                ) {
                    (Some("text_delta"), _) => {
                        let t = delta
                            .get("text")
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        if !t.is_empty() {
                            self.text.push_str(t);
                            self.emitted = true;
                            on_event(Event::Text(t.to_owned()));
                        }
                    }
                    (Some("input_json_delta"), Some(Block::Tool { json, .. })) => {
                        json.push_str(
                            delta
                                .get("partial_json")
                                .and_then(Value::as_str)
                                .unwrap_or_default(),
                        );
                    }
                    (Some("input_json_delta"), _) => {
                        return Err(ParseError::Invalid(format!(
                            "input_json_delta for block {index}, which is not a tool_use block"
                        )));
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = value.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.reason = Some(reason.to_owned());
                }
                if let Some(u) = value.get("usage") {
                    // The final counts; message_start's input counts stay unless repeated.
                    let later = usage(u);
                    self.usage.output_tokens = later.output_tokens;
                    if later.input_tokens > 0 {
                        self.usage.input_tokens = later.input_tokens;
                        self.usage.cached_input_tokens = later.cached_input_tokens;
                        self.usage.cache_write_tokens = later.cache_write_tokens;
                    }
                }
            }
            "message_stop" => {
                self.stopped = true;
                return Ok(Flow::Done);
            }
            "error" => return Err(api_error(&value)),
            // ping, content_block_stop, and anything newer.
            _ => {}
        }
        Ok(Flow::More)
    }

    pub(crate) fn finish(self) -> Result<Response, ParseError> {
        if !self.stopped {
            return Err(ParseError::Overloaded(
                "the stream ended before message_stop".into(),
            ));
        }
        let mut tool_calls = Vec::new();
        for block in self.blocks.into_values() {
            if let Block::Tool { id, name, json } = block {
                // A tool without parameters streams no delta at all.
                let arguments = if json.trim().is_empty() {
                    "{}".to_owned()
                } else {
                    json
                };
                tool_calls.push(ToolCall {
                    id,
                    name,
                    arguments,
                });
            }
        }
        Ok(Response {
            text: self.text,
            tool_calls,
            usage: self.usage,
            finish: finish(self.reason.as_deref()),
        })
    }
}
