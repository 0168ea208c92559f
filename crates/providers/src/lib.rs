//! toolgate's model providers: the agent's side of the wire.
//!
//! - [`Provider`]: one configured endpoint — OpenAI-compatible chat completions (OpenAI,
//!   DeepSeek, Kimi, GLM, OpenRouter, Ollama, vLLM, llama.cpp server) or the Anthropic
//!   Messages API — streaming over SSE, parallel tool calls, usage with cached tokens,
//!   retries with backoff on 429/5xx/overload honouring `retry-after`, and errors that name
//!   the provider, the model and what to fix.
//! - [`Message`], [`Request`], [`Response`]: the conversation independent of the protocol.
//! - Prompt caching: the request keeps the stable prefix (system + tools) first and
//!   byte-identical; Anthropic gets `cache_control` breakpoints on it
//!   ([`Provider::stable_prefix`] gives the bytes).
//! - `fake` (feature): a scripted model over real HTTP in both protocols, for tests; its
//!   module docs show a [`Provider`] answering one request end to end.

#![deny(missing_docs)]

mod anthropic;
mod config;
mod error;
#[cfg(feature = "fake")]
pub mod fake;
mod guard;
mod openai;
mod protocol;
mod provider;
mod types;

pub use config::{
    ANTHROPIC_DEFAULT_MAX_TOKENS, DEFAULT_CONNECT_TIMEOUT_SECS, DEFAULT_FIRST_BYTE_TIMEOUT_SECS,
    DEFAULT_IDLE_TIMEOUT_SECS, Kind, ProviderConfig, RetryConfig,
};
pub use error::ProviderError;
pub use provider::Provider;
pub use types::{Event, Finish, Message, Request, Response, ToolCall, ToolResult, Usage};
