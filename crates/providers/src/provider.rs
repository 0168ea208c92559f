//! One configured model endpoint: request building, streaming, retries.

use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;
use sse_stream::SseStream;
use tokio_util::sync::CancellationToken;

use crate::config::{ANTHROPIC_DEFAULT_MAX_TOKENS, Kind, ProviderConfig, RetryConfig};
use crate::error::{ProviderError, error_chain};
use crate::guard::{GuardError, Shape, StreamLimits, Timeouts, guard, read_error_text, read_plain};
use crate::protocol::{Flow, ParseError};
use crate::types::{Event, Request, Response};
use crate::{anthropic, openai};

/// Most characters of an endpoint's error text kept in a message.
const ERROR_TEXT: usize = 600;
/// Most bytes of an error body read (the message keeps [`ERROR_TEXT`] characters of it).
const ERROR_BODY_BYTES: usize = 64 * 1024;

/// A model endpoint, ready to take requests.
#[derive(Clone)]
pub struct Provider {
    name: String,
    kind: Kind,
    base_url: String,
    model: String,
    api_key: Option<String>,
    key_env: String,
    max_tokens: Option<u32>,
    stream: bool,
    retry: RetryConfig,
    timeouts: Timeouts,
    limits: StreamLimits,
    http: reqwest::Client,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("Provider")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("has_key", &self.api_key.is_some())
            .finish_non_exhaustive()
    }
}

/// How one attempt failed.
enum Failure {
    /// Give up now.
    Fatal(ProviderError),
    /// Worth another attempt (unless output was already shown).
    Retry {
        status: String,
        message: String,
        retry_after: Option<Duration>,
        emitted: bool,
    },
}

impl Provider {
    /// A provider named `name` from its config; the key is read from the environment
    /// through `env` (`std::env::var` in the CLI, a map in tests).
    pub fn new(
        name: &str,
        config: &ProviderConfig,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ProviderError> {
        let kind = config.kind;
        let base_url = config
            .base_url
            .clone()
            .unwrap_or_else(|| kind.default_base_url().to_owned())
            .trim_end_matches('/')
            .to_owned();
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(ProviderError::Config {
                provider: name.to_owned(),
                message: format!(
                    "base_url `{base_url}` is not an http(s) URL; give the API root, e.g. {}",
                    kind.default_base_url()
                ),
            });
        }
        let key_env = config
            .api_key_env
            .clone()
            .unwrap_or_else(|| kind.default_key_env().to_owned());
        let api_key = env(&key_env).filter(|k| !k.trim().is_empty());
        if let Some(key) = &api_key
            && reqwest::header::HeaderValue::from_str(key).is_err()
        {
            return Err(ProviderError::Config {
                provider: name.to_owned(),
                message: format!(
                    "the key in {key_env} contains characters that cannot be sent in a header; check for a stray newline or quote"
                ),
            });
        }
        let timeouts = Timeouts::from_config(name, config)?;
        // No key, no request: a cloud endpoint would only answer 401 (after retries, when
        // offline) without saying which variable is missing.
        if api_key.is_none() && !is_local(&base_url) {
            return Err(ProviderError::MissingKey {
                provider: name.to_owned(),
                url: base_url,
                key_env,
            });
        }
        tls_provider();
        let http = reqwest::Client::builder()
            .connect_timeout(timeouts.connect)
            .user_agent(concat!("toolgate/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ProviderError::Config {
                provider: name.to_owned(),
                message: format!("cannot build the HTTP client: {e}"),
            })?;
        Ok(Self {
            name: name.to_owned(),
            kind,
            base_url,
            model: config
                .model
                .clone()
                .unwrap_or_else(|| kind.default_model().to_owned()),
            api_key,
            key_env,
            max_tokens: config.max_tokens,
            stream: config.stream.unwrap_or(true),
            retry: config.retry.clone(),
            timeouts,
            limits: StreamLimits::default(),
            http,
        })
    }

    /// The provider's name in config.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its protocol.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The model requested.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The endpoint root.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Whether responses are streamed.
    pub fn streams(&self) -> bool {
        self.stream
    }

    /// The URL requests go to.
    pub fn url(&self) -> String {
        match self.kind {
            Kind::OpenAi => format!("{}/chat/completions", self.base_url),
            Kind::Anthropic => format!("{}/v1/messages", self.base_url),
        }
    }

    /// The JSON body of `request`, exactly as sent.
    pub fn body(&self, request: &Request<'_>) -> Value {
        match self.kind {
            Kind::OpenAi => openai::body(request, &self.model, self.max_tokens, self.stream),
            Kind::Anthropic => anthropic::body(
                request,
                &self.model,
                self.max_tokens.unwrap_or(ANTHROPIC_DEFAULT_MAX_TOKENS),
                self.stream,
            ),
        }
    }

    /// The bytes of the body that must stay identical across turns for the prompt cache
    /// to hit: the system prompt and the stable tools, serialized as sent.
    pub fn stable_prefix(&self, request: &Request<'_>) -> Vec<u8> {
        let body = self.body(request);
        let tools = body
            .get("tools")
            .and_then(Value::as_array)
            .map(|t| &t[..request.stable_tools.min(t.len())])
            .unwrap_or_default();
        let system = match self.kind {
            Kind::OpenAi => body
                .get("messages")
                .and_then(|m| m.get(0))
                .cloned()
                .unwrap_or_default(),
            Kind::Anthropic => body.get("system").cloned().unwrap_or_default(),
        };
        let mut out = serde_json::to_vec(&system).unwrap_or_default();
        out.extend(serde_json::to_vec(tools).unwrap_or_default());
        out
    }

    /// Sends `request` and returns the whole response; streamed text and retries are
    /// reported to `on_event` as they happen. Retries 429, 5xx, overload and network
    /// errors with backoff (honouring `retry-after`), unless part of the answer was already
    /// shown. Stops at once when `cancel` fires.
    pub fn complete<'a>(
        &'a self,
        request: &'a Request<'_>,
        on_event: &'a mut (dyn FnMut(Event) + Send),
        cancel: &'a CancellationToken,
    ) -> futures::future::BoxFuture<'a, Result<Response, ProviderError>> {
        Box::pin(async move {
            let body = serde_json::to_vec(&self.body(request)).map_err(|e| self.protocol(e))?;
            let mut attempt: u32 = 0;
            loop {
                attempt += 1;
                let outcome = tokio::select! {
                    r = self.attempt(&body, on_event) => r,
                    () = cancel.cancelled() => return Err(self.cancelled()),
                };
                let (status, message, retry_after, emitted) = match outcome {
                    Ok(response) => return Ok(response),
                    Err(Failure::Fatal(e)) => return Err(e),
                    Err(Failure::Retry {
                        status,
                        message,
                        retry_after,
                        emitted,
                    }) => (status, message, retry_after, emitted),
                };
                if emitted || attempt > self.retry.max_retries {
                    return Err(ProviderError::Unavailable {
                        provider: self.name.clone(),
                        model: self.model.clone(),
                        attempts: attempt,
                        status,
                        message,
                    });
                }
                let max = Duration::from_millis(self.retry.max_backoff_ms);
                let wait = match retry_after {
                    Some(asked) if asked > max => {
                        return Err(ProviderError::RetryTooLong {
                            provider: self.name.clone(),
                            model: self.model.clone(),
                            wait_s: asked.as_secs(),
                            status: status.parse().unwrap_or_default(),
                            message,
                        });
                    }
                    Some(asked) => asked,
                    None => backoff(&self.retry, attempt).min(max),
                };
                // `debug`: the caller shows the retry (the event below); a log line would say it twice.
                tracing::debug!(provider = %self.name, attempt, ?wait, %status, %message, "model request failed; retrying");
                on_event(Event::Retrying {
                    attempt,
                    wait,
                    reason: format!("{status}: {message}"),
                });
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    () = cancel.cancelled() => return Err(self.cancelled()),
                }
            }
        })
    }

    async fn attempt(
        &self,
        body: &[u8],
        on_event: &mut (dyn FnMut(Event) + Send),
    ) -> Result<Response, Failure> {
        let mut builder = self
            .http
            .post(self.url())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_vec());
        match self.kind {
            Kind::OpenAi => {
                if let Some(key) = &self.api_key {
                    builder = builder.bearer_auth(key);
                }
            }
            Kind::Anthropic => {
                builder = builder.header("anthropic-version", anthropic::VERSION);
                if let Some(key) = &self.api_key {
                    builder = builder.header("x-api-key", key);
                }
            }
        }
        if self.stream {
            builder = builder.header(reqwest::header::ACCEPT, "text/event-stream");
        }
        let sent = std::time::Instant::now();
        let response = match tokio::time::timeout(self.timeouts.first_byte, builder.send()).await {
            Err(_) => {
                return Err(self.guard_failure(
                    GuardError::Silent {
                        phase: "answer",
                        secs: self.timeouts.first_byte.as_secs(),
                        key: "first_byte_timeout_secs",
                    },
                    false,
                ));
            }
            // Nothing listening or no such host, at a cloud endpoint: said now, not after a
            // quarter of a minute of retries (a local server may still be starting).
            Ok(Err(e)) if e.is_connect() && !is_local(&self.base_url) => {
                return Err(Failure::Fatal(ProviderError::Unreachable {
                    provider: self.name.clone(),
                    url: self.base_url.clone(),
                    message: error_chain(&e),
                }));
            }
            Ok(sent) => sent.map_err(|e| Failure::Retry {
                status: "network".to_owned(),
                message: error_chain(&e),
                retry_after: None,
                emitted: false,
            })?,
        };
        let status = response.status();
        if !status.is_success() {
            let retry_after = retry_after(response.headers());
            let text = read_error_text(response, self.timeouts, ERROR_BODY_BYTES, sent).await;
            return Err(self.status_failure(status.as_u16(), &text, retry_after));
        }
        // A streaming request may still get a plain JSON answer (some compatible servers
        // ignore `stream`): go by what came back.
        let is_sse = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_sse {
            let bytes = read_plain(response, self.timeouts, self.limits, sent)
                .await
                .map_err(|e| self.guard_failure(e, false))?;
            let text = String::from_utf8_lossy(&bytes);
            let value: Value = serde_json::from_str(&text)
                .map_err(|e| Failure::Fatal(self.protocol(format!("{e} in `{}`", clip(&text)))))?;
            let parsed = match self.kind {
                Kind::OpenAi => openai::parse(&value),
                Kind::Anthropic => anthropic::parse(&value),
            };
            let response = parsed.map_err(|e| self.parse_failure(e, false))?;
            if !response.text.is_empty() {
                on_event(Event::Text(response.text.clone()));
            }
            return Ok(response);
        }
        let mut assembler = Assembler::new(self.kind);
        let body = guard(
            response.bytes_stream(),
            self.timeouts,
            self.limits,
            Shape::EventStream,
            sent,
        );
        let mut events = Box::pin(SseStream::from_bytes_stream(body));
        while let Some(item) = events.next().await {
            let sse = item.map_err(|e| self.stream_failure(e, assembler.emitted()))?;
            let Some(data) = sse.data.as_deref() else {
                continue;
            };
            let flow = assembler
                .feed(sse.event.as_deref(), data, on_event)
                .map_err(|e| self.parse_failure(e, assembler.emitted()))?;
            if assembler.size() > self.limits.max_message_bytes {
                return Err(self.guard_failure(
                    GuardError::TooLong {
                        what: "a message (text and tool calls)",
                        limit: self.limits.max_message_bytes,
                    },
                    assembler.emitted(),
                ));
            }
            match flow {
                Flow::More => {}
                Flow::Done => break,
            }
        }
        assembler.finish().map_err(|e| self.parse_failure(e, false))
    }

    fn status_failure(&self, status: u16, text: &str, retry_after: Option<Duration>) -> Failure {
        let message = error_message(text);
        match status {
            401 | 403 => Failure::Fatal(ProviderError::Auth {
                provider: self.name.clone(),
                url: self.base_url.clone(),
                model: self.model.clone(),
                status,
                message: if self.api_key.is_none() {
                    format!("{message}; no key was sent: {} is not set", self.key_env)
                } else {
                    message
                },
                key_env: self.key_env.clone(),
            }),
            404 => Failure::Fatal(ProviderError::NotFound {
                provider: self.name.clone(),
                url: self.url(),
                model: self.model.clone(),
                message,
            }),
            408 | 409 | 429 | 500..=599 => Failure::Retry {
                status: status.to_string(),
                message,
                retry_after,
                emitted: false,
            },
            400 | 413 | 422 => Failure::Fatal(ProviderError::BadRequest {
                provider: self.name.clone(),
                model: self.model.clone(),
                status,
                message,
            }),
            _ => Failure::Fatal(ProviderError::Status {
                provider: self.name.clone(),
                model: self.model.clone(),
                status,
                message,
            }),
        }
    }

    /// An event stream that failed: a bound of [`guard`], or the connection.
    fn stream_failure(&self, error: sse_stream::Error, emitted: bool) -> Failure {
        let error = match error {
            sse_stream::Error::Body(inner) => match inner.downcast::<GuardError>() {
                Ok(bound) => return self.guard_failure(*bound, emitted),
                Err(other) => other.to_string(),
            },
            other => other.to_string(),
        };
        Failure::Retry {
            status: "stream".to_owned(),
            message: format!("the event stream broke off: {error}"),
            retry_after: None,
            emitted,
        }
    }

    /// A bound of [`guard`] hit: a timeout is transient (retried), a size is not.
    fn guard_failure(&self, error: GuardError, emitted: bool) -> Failure {
        match error {
            GuardError::Silent { .. } => Failure::Retry {
                status: "timeout".to_owned(),
                message: error.to_string(),
                retry_after: None,
                emitted,
            },
            GuardError::TooLong { .. } => Failure::Fatal(ProviderError::TooLarge {
                provider: self.name.clone(),
                model: self.model.clone(),
                message: error.to_string(),
            }),
            GuardError::Http(_) => Failure::Retry {
                status: "network".to_owned(),
                message: error.to_string(),
                retry_after: None,
                emitted,
            },
        }
    }

    fn parse_failure(&self, error: ParseError, emitted: bool) -> Failure {
        match error {
            ParseError::Invalid(message) => Failure::Fatal(self.protocol(message)),
            ParseError::Overloaded(message) => Failure::Retry {
                status: "overloaded".to_owned(),
                message,
                retry_after: None,
                emitted,
            },
            ParseError::Api(message) => Failure::Fatal(ProviderError::Status {
                provider: self.name.clone(),
                model: self.model.clone(),
                status: 200,
                message,
            }),
        }
    }

    fn protocol(&self, message: impl std::fmt::Display) -> ProviderError {
        ProviderError::Protocol {
            provider: self.name.clone(),
            model: self.model.clone(),
            protocol: self.kind.as_str().to_owned(),
            message: message.to_string(),
        }
    }

    fn cancelled(&self) -> ProviderError {
        ProviderError::Cancelled {
            provider: self.name.clone(),
        }
    }
}

/// Builds a response from a protocol's stream events.
enum Assembler {
    OpenAi(openai::Stream),
    Anthropic(anthropic::Stream),
}

impl Assembler {
    fn new(kind: Kind) -> Self {
        match kind {
            Kind::OpenAi => Self::OpenAi(openai::Stream::default()),
            Kind::Anthropic => Self::Anthropic(anthropic::Stream::default()),
        }
    }

    fn feed(
        &mut self,
        event: Option<&str>,
        data: &str,
        on_event: &mut (dyn FnMut(Event) + Send),
    ) -> Result<Flow, ParseError> {
        match self {
            Self::OpenAi(s) => s.feed(data, on_event),
            Self::Anthropic(s) => s.feed(event, data, on_event),
        }
    }

    fn emitted(&self) -> bool {
        match self {
            Self::OpenAi(s) => s.emitted,
            Self::Anthropic(s) => s.emitted,
        }
    }

    fn finish(self) -> Result<Response, ParseError> {
        match self {
            Self::OpenAi(s) => s.finish(),
            Self::Anthropic(s) => s.finish(),
        }
    }

    /// Bytes assembled so far (text, tool calls, their arguments).
    fn size(&self) -> usize {
        match self {
            Self::OpenAi(s) => s.size(),
            Self::Anthropic(s) => s.size(),
        }
    }
}

/// Exponential backoff with ±20 % jitter: `initial × 2^(attempt-1)`.
fn backoff(retry: &RetryConfig, attempt: u32) -> Duration {
    let base = retry
        .initial_backoff_ms
        .saturating_mul(1u64 << attempt.saturating_sub(1).min(16));
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    // 0.8 … 1.2
    let factor = 0.8 + f64::from(nanos % 1000) / 2500.0;
    Duration::from_millis((base as f64 * factor) as u64)
}

/// `retry-after-ms` (OpenAI), then `retry-after` in seconds or as an HTTP date.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_millis(ms as u64));
    }
    let value = text("retry-after")?.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(std::time::SystemTime::now())
            .unwrap_or_default(),
    )
}

/// The `error.message` of a JSON error body, else the body itself, clipped.
fn error_message(text: &str) -> String {
    let from_json = serde_json::from_str::<Value>(text).ok().and_then(|v| {
        let error = v.get("error")?;
        match error {
            Value::String(s) => Some(s.clone()),
            _ => error
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_owned),
        }
    });
    let message = from_json.unwrap_or_else(|| text.trim().to_owned());
    if message.is_empty() {
        "no details".to_owned()
    } else {
        clip(&message)
    }
}

fn clip(text: &str) -> String {
    if text.chars().count() <= ERROR_TEXT {
        return text.to_owned();
    }
    let cut: String = text.chars().take(ERROR_TEXT).collect();
    format!("{cut}…")
}

/// Whether `base_url` points at this machine or the local network (a model served by
/// Ollama, llama.cpp, vLLM…), where no key is needed and a refused connection may be a
/// server still starting.
pub(crate) fn is_local(base_url: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(base_url) else {
        return false;
    };
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(ip)) => ip.is_loopback() || ip.is_private() || ip.is_unspecified(),
        Ok(std::net::IpAddr::V6(ip)) => {
            ip.is_loopback() || ip.is_unspecified() || (ip.segments()[0] & 0xfe00) == 0xfc00
        }
        // `localhost`, `*.local` (mDNS), `*.internal`, and single-label names (a container
        // or compose service such as `ollama`).
        Err(_) => {
            let host = host.trim_end_matches('.').to_ascii_lowercase();
            host == "localhost"
                || host.ends_with(".localhost")
                || host.ends_with(".local")
                || host.ends_with(".internal")
                || !host.contains('.')
        }
    }
}

/// Installs rustls' process-wide crypto provider (ring) once; reqwest's TLS needs one
/// before any client is built (the gateway does the same).
fn tls_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Err means another part of the process installed one first, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_endpoints_are_told_from_cloud_ones() {
        for url in [
            "http://localhost:11434/v1",
            "http://127.0.0.1:8080",
            "http://[::1]:8000/v1",
            "http://192.168.1.20:11434/v1",
            "http://10.0.0.5/v1",
            "http://ollama:11434/v1",
            "http://gpu-box.local:8000",
        ] {
            assert!(is_local(url), "{url}");
        }
        for url in [
            "https://api.openai.com/v1",
            "https://api.anthropic.com",
            "https://8.8.8.8/v1",
            "not a url",
        ] {
            assert!(!is_local(url), "{url}");
        }
    }

    #[test]
    fn retry_after_reads_seconds_milliseconds_and_dates() {
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", "250".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_millis(250)));
        let mut h = reqwest::header::HeaderMap::new();
        h.insert(
            "retry-after",
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&h), Some(Duration::ZERO), "a past date: now");
        h.insert("retry-after", "soon".parse().unwrap());
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn backoff_doubles_within_jitter() {
        let retry = RetryConfig::default();
        let first = backoff(&retry, 1).as_millis();
        let third = backoff(&retry, 3).as_millis();
        assert!((800..=1200).contains(&first), "{first}");
        assert!((3200..=4800).contains(&third), "{third}");
    }

    #[test]
    fn error_messages_come_from_the_json_body_or_the_text() {
        assert_eq!(
            error_message(r#"{"error":{"message":"model not found","type":"x"}}"#),
            "model not found"
        );
        assert_eq!(error_message("  "), "no details");
        assert_eq!(error_message("plain"), "plain");
        assert!(error_message(&"x".repeat(5000)).ends_with('…'));
    }
}
