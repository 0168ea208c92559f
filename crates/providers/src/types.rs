//! The conversation as the agent holds it, independent of any wire protocol.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One message of a conversation. The system prompt is not a message: it is part of the
/// stable prefix and travels in [`Request::system`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// What the user (or the agent on the user's behalf) says.
    User {
        /// The text.
        content: String,
    },
    /// What the model answered: text and the tools it wants called.
    Assistant {
        /// The text (may be empty when the model only calls tools).
        #[serde(default)]
        content: String,
        /// Tool calls, in the order the model made them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The results of one assistant message's tool calls, in call order.
    Tool {
        /// One result per call.
        results: Vec<ToolResult>,
    },
}

impl Message {
    /// A user message.
    pub fn user(text: impl Into<String>) -> Self {
        Self::User {
            content: text.into(),
        }
    }

    /// An assistant message with text only.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::Assistant {
            content: text.into(),
            tool_calls: Vec::new(),
        }
    }

    /// Every piece of text in the message (content, arguments, results), for size
    /// estimates and reference scans.
    pub fn texts(&self) -> Vec<&str> {
        match self {
            Self::User { content } => vec![content],
            Self::Assistant {
                content,
                tool_calls,
            } => std::iter::once(content.as_str())
                .chain(tool_calls.iter().map(|c| c.arguments.as_str()))
                .collect(),
            Self::Tool { results } => results.iter().map(|r| r.content.as_str()).collect(),
        }
    }

    /// Characters in the message, a rough stand-in for tokens before the provider has
    /// counted them.
    pub fn chars(&self) -> usize {
        self.texts().iter().map(|t| t.chars().count()).sum()
    }
}

/// A tool call as the model made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for the call; results answer it.
    pub id: String,
    /// The tool name as the model wrote it.
    pub name: String,
    /// The arguments as the model wrote them: text that should be one JSON object.
    pub arguments: String,
}

/// The result of one tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The id of the call it answers.
    pub call_id: String,
    /// The tool that ran.
    pub name: String,
    /// Model-facing text.
    pub content: String,
    /// Whether the call failed (Anthropic's `is_error`).
    #[serde(default)]
    pub is_error: bool,
}

/// One request to a model.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The system prompt (first part of the stable prefix).
    pub system: &'a str,
    /// The tool array, rendered for this provider's protocol (`toolgate_core::Exposed`):
    /// the stable part first, then any backfilled tools.
    pub tools: &'a [Value],
    /// How many of `tools` are the stable part; Anthropic's cache breakpoint goes on the
    /// last of them, so a backfill after them leaves that cache entry intact.
    pub stable_tools: usize,
    /// The conversation.
    pub messages: &'a [Message],
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Finish {
    /// It finished its answer.
    Stop,
    /// It wants tools called.
    ToolCalls,
    /// It hit its output token limit.
    Length,
    /// Anything else the provider said (`content_filter`, `refusal`, …).
    Other(String),
}

/// Token counts of one or more requests. `input_tokens` counts every prompt token,
/// cached ones included, in both protocols.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens, cached ones included.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's prompt cache.
    pub cached_input_tokens: u64,
    /// Prompt tokens written to the provider's prompt cache (Anthropic).
    pub cache_write_tokens: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Self) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
    }
}

/// What the model answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// Its text.
    pub text: String,
    /// Its tool calls, in order.
    pub tool_calls: Vec<ToolCall>,
    /// Tokens of this request.
    pub usage: Usage,
    /// Why it stopped.
    pub finish: Finish,
}

impl Response {
    /// The response as a conversation message.
    pub fn message(&self) -> Message {
        Message::Assistant {
            content: self.text.clone(),
            tool_calls: self.tool_calls.clone(),
        }
    }
}

/// Something that happened while a response was coming in, for a live display.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A piece of the answer's text.
    Text(String),
    /// The model started a tool call.
    ToolCall {
        /// The tool's name.
        name: String,
    },
    /// A request failed and will be retried after `wait`.
    Retrying {
        /// The attempt that failed (1 for the first).
        attempt: u32,
        /// How long until the next one.
        wait: std::time::Duration,
        /// Why, in a few words.
        reason: String,
    },
}
