//! OpenAI-compatible chat completions: `tools` of `type: function`, streamed
//! `delta.tool_calls` assembled by index, usage with `prompt_tokens_details.cached_tokens`.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::protocol::{Flow, ParseError};
use crate::types::{Event, Finish, Message, Request, Response, ToolCall, Usage};

/// The request body.
pub(crate) fn body(
    request: &Request<'_>,
    model: &str,
    max_tokens: Option<u32>,
    stream: bool,
) -> Value {
    let mut messages = vec![json!({"role": "system", "content": request.system})];
    for message in request.messages {
        match message {
            Message::User { content } => messages.push(json!({"role": "user", "content": content})),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let mut m = Map::new();
                m.insert("role".into(), "assistant".into());
                // `null` content with tool calls: some compatible servers reject "".
                m.insert(
                    "content".into(),
                    if content.is_empty() && !tool_calls.is_empty() {
                        Value::Null
                    } else {
                        Value::String(content.clone())
                    },
                );
                if !tool_calls.is_empty() {
                    let calls: Vec<Value> = tool_calls
                        .iter()
                        .map(|c| {
                            json!({
                                "id": c.id,
                                "type": "function",
                                "function": {"name": c.name, "arguments": c.arguments},
                            })
                        })
                        .collect();
                    m.insert("tool_calls".into(), Value::Array(calls));
                }
                messages.push(Value::Object(m));
            }
            Message::Tool { results } => {
                for r in results {
                    messages.push(json!({
                        "role": "tool",
                        "tool_call_id": r.call_id,
                        "content": r.content,
                    }));
                }
            }
        }
    }
    let mut body = Map::new();
    body.insert("model".into(), model.into());
    body.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        body.insert("tools".into(), Value::Array(request.tools.to_vec()));
    }
    if let Some(max) = max_tokens {
        body.insert("max_tokens".into(), max.into());
    }
    if stream {
        body.insert("stream".into(), true.into());
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Value::Object(body)
}

fn usage(value: &Value) -> Usage {
    let n = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    Usage {
        input_tokens: n(value.get("prompt_tokens")),
        output_tokens: n(value.get("completion_tokens")),
        cached_input_tokens: n(value.pointer("/prompt_tokens_details/cached_tokens")),
        cache_write_tokens: 0,
    }
}

fn finish(reason: Option<&str>, has_calls: bool) -> Finish {
    match reason {
        Some("stop") | None if !has_calls => Finish::Stop,
        Some("tool_calls" | "function_call") | Some("stop") | None => Finish::ToolCalls,
        Some("length") => Finish::Length,
        Some(other) => Finish::Other(other.to_owned()),
    }
}

fn api_error(value: &Value) -> Option<ParseError> {
    let error = value.get("error")?;
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map_or_else(|| error.to_string(), str::to_owned);
    let code = error.get("code").map(|c| c.to_string()).unwrap_or_default();
    Some(
        if code.contains("429") || code.contains("rate") || message.contains("overloaded") {
            ParseError::Overloaded(message)
        } else {
            ParseError::Api(message)
        },
    )
}

/// A whole (non-streamed) response.
pub(crate) fn parse(value: &Value) -> Result<Response, ParseError> {
    if let Some(e) = api_error(value) {
        return Err(e);
    }
    let choice = value
        .pointer("/choices/0")
        .ok_or_else(|| ParseError::Invalid("no `choices[0]` in the response".into()))?;
    let message = choice
        .get("message")
        .ok_or_else(|| ParseError::Invalid("no `choices[0].message` in the response".into()))?;
    let text = message
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let mut tool_calls = Vec::new();
    for (i, call) in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let name = call
            .pointer("/function/name")
            .and_then(Value::as_str)
            .ok_or_else(|| ParseError::Invalid(format!("tool call {i} has no function name")))?;
        // Some servers (older Ollama) send the arguments as an object, not as text.
        let arguments = match call.pointer("/function/arguments") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        };
        tool_calls.push(ToolCall {
            id: call
                .get("id")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map_or_else(|| format!("call_{i}"), str::to_owned),
            name: name.to_owned(),
            arguments,
        });
    }
    let reason = choice.get("finish_reason").and_then(Value::as_str);
    Ok(Response {
        finish: finish(reason, !tool_calls.is_empty()),
        text,
        tool_calls,
        usage: value.get("usage").map(usage).unwrap_or_default(),
    })
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// A streamed response being assembled.
#[derive(Debug, Default)]
pub(crate) struct Stream {
    text: String,
    calls: BTreeMap<u64, PartialCall>,
    usage: Usage,
    reason: Option<String>,
    done: bool,
    /// Whether any part of the answer was shown (then a failure is not retried).
    pub(crate) emitted: bool,
}

impl Stream {
    /// Bytes assembled so far.
    pub(crate) fn size(&self) -> usize {
        self.text.len()
            + self
                .calls
                .values()
                .map(|c| c.id.len() + c.name.len() + c.arguments.len() + 64)
                .sum::<usize>()
    }

    pub(crate) fn feed(
        &mut self,
        data: &str,
        on_event: &mut (dyn FnMut(Event) + Send),
    ) -> Result<Flow, ParseError> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(Flow::Done);
        }
        if data.is_empty() {
            return Ok(Flow::More);
        }
        let chunk: Value = serde_json::from_str(data)
            .map_err(|e| ParseError::Invalid(format!("a stream chunk is not JSON ({e})")))?;
        if let Some(e) = api_error(&chunk) {
            return Err(e);
        }
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = usage(u);
        }
        let Some(choice) = chunk.pointer("/choices/0") else {
            return Ok(Flow::More);
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.reason = Some(reason.to_owned());
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(Flow::More);
        };
        if let Some(text) = delta.get("content").and_then(Value::as_str)
            && !text.is_empty()
        {
            self.text.push_str(text);
            self.emitted = true;
            on_event(Event::Text(text.to_owned()));
        }
        for (position, call) in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let index = call
                .get("index")
                .and_then(Value::as_u64)
                .unwrap_or(position as u64);
            let entry = self.calls.entry(index).or_default();
            if let Some(id) = call.get("id").and_then(Value::as_str) {
                entry.id.push_str(id);
            }
            if let Some(name) = call.pointer("/function/name").and_then(Value::as_str) {
                let first = entry.name.is_empty();
                entry.name.push_str(name);
                if first {
                    self.emitted = true;
                    on_event(Event::ToolCall {
                        name: entry.name.clone(),
                    });
                }
            }
            match call.pointer("/function/arguments") {
                Some(Value::String(s)) => entry.arguments.push_str(s),
                Some(Value::Null) | None => {}
                Some(other) => entry.arguments.push_str(&other.to_string()),
            }
        }
        Ok(Flow::More)
    }

    pub(crate) fn finish(self) -> Result<Response, ParseError> {
        if !self.done && self.reason.is_none() {
            return Err(ParseError::Overloaded(
                "the stream ended before the response was complete".into(),
            ));
        }
        let tool_calls: Vec<ToolCall> = self
            .calls
            .into_values()
            .enumerate()
            .map(|(i, c)| ToolCall {
                id: if c.id.is_empty() {
                    format!("call_{i}")
                } else {
                    c.id
                },
                name: c.name,
                arguments: c.arguments,
            })
            .collect();
        if let Some(bad) = tool_calls.iter().find(|c| c.name.is_empty()) {
            return Err(ParseError::Invalid(format!(
                "tool call `{}` has no function name",
                bad.id
            )));
        }
        Ok(Response {
            finish: finish(self.reason.as_deref(), !tool_calls.is_empty()),
            text: self.text,
            tool_calls,
            usage: self.usage,
        })
    }
}
