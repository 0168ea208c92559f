//! Provider errors: each names the provider, the model and what to fix.

/// A request that did not produce a response.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The endpoint refused the key (401/403).
    #[error(
        "provider `{provider}` ({url}) refused the API key for model `{model}` ({status}: {message}); set {key_env} to a valid key, or name another variable with api_key_env in [providers.{provider}]"
    )]
    Auth {
        /// Provider name.
        provider: String,
        /// Endpoint.
        url: String,
        /// Model.
        model: String,
        /// HTTP status.
        status: u16,
        /// What the endpoint said.
        message: String,
        /// The variable the key was read from.
        key_env: String,
    },
    /// The endpoint or the model does not exist (404).
    #[error(
        "provider `{provider}` answered 404 at {url} for model `{model}` ({message}); check the model name (--model or providers.{provider}.model) and that the base URL is the API root (--base-url or providers.{provider}.base_url, e.g. https://api.openai.com/v1, http://localhost:11434/v1, https://api.anthropic.com)"
    )]
    NotFound {
        /// Provider name.
        provider: String,
        /// The URL requested.
        url: String,
        /// Model.
        model: String,
        /// What the endpoint said.
        message: String,
    },
    /// The endpoint rejected the request itself (400, 413, 422).
    #[error(
        "provider `{provider}` rejected the request for model `{model}` ({status}: {message}); if it names the context length, start a new session or lower [agent] context_tokens; if it names a field, the endpoint may not support tools with this model — try another model"
    )]
    BadRequest {
        /// Provider name.
        provider: String,
        /// Model.
        model: String,
        /// HTTP status.
        status: u16,
        /// What the endpoint said.
        message: String,
    },
    /// Rate limits, overload or server errors that outlasted the retries.
    #[error(
        "provider `{provider}` (model `{model}`) still failed after {attempts} attempts ({status}: {message}); wait a while and resume the session with --resume, or raise providers.{provider}.retry.max_retries"
    )]
    Unavailable {
        /// Provider name.
        provider: String,
        /// Model.
        model: String,
        /// Attempts made.
        attempts: u32,
        /// Last HTTP status, or `network` / `stream`.
        status: String,
        /// What the endpoint (or the network) said last.
        message: String,
    },
    /// The endpoint asked to wait longer than the retry settings allow.
    #[error(
        "provider `{provider}` (model `{model}`) asked to retry after {wait_s} s ({status}: {message}), longer than providers.{provider}.retry.max_backoff_ms allows; try again later"
    )]
    RetryTooLong {
        /// Provider name.
        provider: String,
        /// Model.
        model: String,
        /// Seconds asked for.
        wait_s: u64,
        /// HTTP status.
        status: u16,
        /// What the endpoint said.
        message: String,
    },
    /// Another unexpected status.
    #[error(
        "provider `{provider}` answered {status} for model `{model}`: {message}; check the provider's status page and the [providers.{provider}] settings"
    )]
    Status {
        /// Provider name.
        provider: String,
        /// Model.
        model: String,
        /// HTTP status.
        status: u16,
        /// What the endpoint said.
        message: String,
    },
    /// The response could not be read as the protocol says.
    #[error(
        "provider `{provider}` (model `{model}`) sent a response that is not valid {protocol}: {message}; check that kind = \"{protocol}\" matches the endpoint in [providers.{provider}]"
    )]
    Protocol {
        /// Provider name.
        provider: String,
        /// Model.
        model: String,
        /// `openai` or `anthropic`.
        protocol: String,
        /// What was wrong.
        message: String,
    },
    /// No key for an endpoint that needs one: nothing was sent.
    #[error(
        "provider `{provider}` ({url}) needs an API key and {key_env} is not set, so nothing was sent; set it (`export {key_env}=…`), name another variable with api_key_env in [providers.{provider}], or use a local endpoint that needs none (--base-url http://localhost:11434/v1)"
    )]
    MissingKey {
        /// Provider name.
        provider: String,
        /// Endpoint.
        url: String,
        /// The variable the key is read from.
        key_env: String,
    },
    /// The endpoint could not be reached at all (connection refused, no such host): not
    /// retried, since waiting rarely changes that.
    #[error(
        "cannot reach provider `{provider}` at {url}: {message}; check the network connection (and HTTPS_PROXY if one is needed), or point --base-url at a reachable endpoint"
    )]
    Unreachable {
        /// Provider name.
        provider: String,
        /// Endpoint.
        url: String,
        /// What failed.
        message: String,
    },
    /// The settings cannot work (no base URL, a key that is not valid in a header).
    #[error("provider `{provider}`: {message}")]
    Config {
        /// Provider name.
        provider: String,
        /// What to fix.
        message: String,
    },
    /// The answer went past a size bound (an endless or runaway stream).
    #[error(
        "provider `{provider}` (model `{model}`) sent more than toolgate reads for one answer: {message}; the endpoint is misbehaving (an endless or runaway stream) — try again, or use another model or endpoint"
    )]
    TooLarge {
        /// Provider name.
        provider: String,
        /// Model.
        model: String,
        /// Which bound, and its size.
        message: String,
    },
    /// The caller cancelled (Ctrl-C).
    #[error("the request to provider `{provider}` was cancelled")]
    Cancelled {
        /// Provider name.
        provider: String,
    },
}

/// An error with its causes ("error sending request: connection refused").
pub(crate) fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
