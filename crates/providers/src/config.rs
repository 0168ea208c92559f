//! `[providers.NAME]`: which endpoint, which model, which key.

use serde::{Deserialize, Serialize};

/// The wire protocol a provider speaks.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// OpenAI-compatible chat completions (OpenAI, DeepSeek, Kimi, GLM, OpenRouter, Ollama,
    /// vLLM, llama.cpp server). Tool names are free text: a call may name a tool that is not
    /// in the array.
    #[default]
    OpenAi,
    /// The Anthropic Messages API. Strict: a `tool_use` must name a tool of the array.
    Anthropic,
}

impl Kind {
    /// Whether the provider rejects calls to tools that are not in the request's array
    /// (Anthropic's API does): such providers get unmasked tools backfilled into the array.
    pub fn strict_tool_names(self) -> bool {
        matches!(self, Self::Anthropic)
    }

    /// The official endpoint.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Self::OpenAi => "https://api.openai.com/v1",
            Self::Anthropic => "https://api.anthropic.com",
        }
    }

    /// The environment variable holding the key when config names none.
    ///
    /// ```
    /// use toolgate_providers::Kind;
    ///
    /// assert_eq!(Kind::OpenAi.default_key_env(), "OPENAI_API_KEY");
    /// assert_eq!(Kind::Anthropic.default_key_env(), "ANTHROPIC_API_KEY");
    /// ```
    pub fn default_key_env(self) -> &'static str {
        match self {
            Self::OpenAi => "OPENAI_API_KEY",
            Self::Anthropic => "ANTHROPIC_API_KEY",
        }
    }

    /// The model used when config and flags name none.
    pub fn default_model(self) -> &'static str {
        match self {
            Self::OpenAi => "gpt-4.1-mini",
            Self::Anthropic => "claude-sonnet-4-5",
        }
    }

    /// The name in config (`openai`, `anthropic`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
        }
    }
}

/// One `[providers.NAME]` table. Every field is optional: `kind` defaults to `openai`, the
/// rest to that kind's official endpoint, default model and key variable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderConfig {
    /// `"openai"` (any OpenAI-compatible chat completions endpoint) | `"anthropic"`.
    pub kind: Kind,
    /// Endpoint root; default `https://api.openai.com/v1`, anthropic:
    /// `https://api.anthropic.com`.
    ///
    /// Other endpoints: `http://localhost:11434/v1` (Ollama), `http://localhost:8080/v1` (llama.cpp).
    #[schemars(example = Kind::OpenAi.default_base_url())]
    pub base_url: Option<String>,
    /// Model name as the endpoint knows it; default `gpt-4.1-mini`, anthropic:
    /// `claude-sonnet-4-5`.
    #[schemars(example = Kind::OpenAi.default_model())]
    pub model: Option<String>,
    /// Environment variable holding the API key; default `OPENAI_API_KEY`, anthropic:
    /// `ANTHROPIC_API_KEY`. Without a key, refused unless `base_url` is local.
    #[schemars(example = Kind::OpenAi.default_key_env())]
    pub api_key_env: Option<String>,
    /// Output tokens per response; default: Anthropic 8192, others the endpoint's own.
    ///
    /// Anthropic requires a value.
    #[schemars(example = ANTHROPIC_DEFAULT_MAX_TOKENS)]
    pub max_tokens: Option<u32>,
    /// The model's window in tokens; overrides `[agent] context_tokens`.
    ///
    /// The agent compacts the conversation near it.
    #[schemars(example = 128_000)]
    pub context_tokens: Option<u64>,
    /// Stream responses (SSE); default true. Same as `--no-stream` when false.
    #[schemars(example = true)]
    pub stream: Option<bool>,
    /// Seconds to open the connection (TCP + TLS); default 10.
    ///
    /// A reachable endpoint connects in well under a second; a longer wait is a dead host or a
    /// black-holed port.
    #[schemars(example = DEFAULT_CONNECT_TIMEOUT_SECS)]
    pub connect_timeout_secs: Option<u64>,
    /// Seconds from sending a request to the first byte of the answer; default 300 (reasoning
    /// models think before they answer).
    ///
    /// Codex's stream idle timeout; a request without streaming sends nothing until the whole
    /// answer is ready.
    #[schemars(example = DEFAULT_FIRST_BYTE_TIMEOUT_SECS)]
    pub first_byte_timeout_secs: Option<u64>,
    /// Longest silence, in seconds, between two pieces of an answer; default 300.
    ///
    /// Codex's stream idle timeout: a model may think between two parts of its answer too.
    #[schemars(example = DEFAULT_IDLE_TIMEOUT_SECS)]
    pub idle_timeout_secs: Option<u64>,
    /// How failed requests are retried (429, 5xx, overloaded, network errors).
    pub retry: RetryConfig,
}

/// `connect_timeout_secs` when config gives none.
pub const DEFAULT_CONNECT_TIMEOUT_SECS: u64 = 10;
/// `first_byte_timeout_secs` when config gives none.
pub const DEFAULT_FIRST_BYTE_TIMEOUT_SECS: u64 = 300;
/// `idle_timeout_secs` when config gives none.
pub const DEFAULT_IDLE_TIMEOUT_SECS: u64 = 300;

/// How failed requests are retried: 429, 5xx, Anthropic's `overloaded_error` and network
/// errors, waiting what `retry-after` says or an exponential backoff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RetryConfig {
    /// Retries after the first attempt.
    ///
    /// Default 4 (five attempts; the OpenAI and Anthropic SDKs default to 2, an agent in the
    /// middle of a task can afford to wait longer).
    pub max_retries: u32,
    /// First backoff in milliseconds, doubled per retry, ±20 % jitter.
    pub initial_backoff_ms: u64,
    /// Longest wait between attempts, `retry-after` included, in milliseconds; a longer
    /// retry-after fails at once, saying so.
    pub max_backoff_ms: u64,
}

impl Default for RetryConfig {
    fn default() -> Self {
        Self {
            max_retries: 4,
            initial_backoff_ms: 1_000,
            max_backoff_ms: 60_000,
        }
    }
}

/// Anthropic requires `max_tokens`; this is what is sent when config gives none.
pub const ANTHROPIC_DEFAULT_MAX_TOKENS: u32 = 8_192;
