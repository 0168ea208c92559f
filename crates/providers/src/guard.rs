//! Time and size bounds on every response body a provider sends: a provider that never
//! answers, stalls mid-stream or streams without end gets a clear error instead of a hang
//! or unbounded memory.
//!
//! - Time: the first byte must come within `first_byte_timeout_secs` of sending the request
//!   (headers and the first piece of the body), then no gap between pieces may be longer
//!   than `idle_timeout_secs`. A timeout is a transient failure, retried like a 5xx.
//! - Size: an event-stream line, an event (its lines up to the blank line that ends it), a
//!   plain body and the assembled message (text, reasoning and tool-call arguments) each have
//!   a bound ([`StreamLimits`]); past it the answer is refused, and nothing more is read.

use std::pin::Pin;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::{Stream, StreamExt};

use crate::config::{
    DEFAULT_CONNECT_TIMEOUT_SECS, DEFAULT_FIRST_BYTE_TIMEOUT_SECS, DEFAULT_IDLE_TIMEOUT_SECS,
    ProviderConfig,
};
use crate::error::{ProviderError, error_chain};

/// Time bounds of one provider's requests, from `[providers.NAME]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Timeouts {
    /// Opening the connection (TCP and TLS): `connect_timeout_secs`.
    pub(crate) connect: Duration,
    /// From sending the request to the first byte of the answer: `first_byte_timeout_secs`.
    pub(crate) first_byte: Duration,
    /// Longest silence between two pieces of the answer: `idle_timeout_secs`.
    pub(crate) idle: Duration,
}

impl Timeouts {
    /// The time bounds of `[providers.NAME]`, defaults filled in; zero is refused.
    pub(crate) fn from_config(name: &str, config: &ProviderConfig) -> Result<Self, ProviderError> {
        let secs = |value: Option<u64>, default: u64, key: &str| match value {
            Some(0) => Err(ProviderError::Config {
                provider: name.to_owned(),
                message: format!(
                    "{key} = 0 would give up at once; give at least 1 (seconds), or remove it for the default {default}"
                ),
            }),
            other => Ok(Duration::from_secs(other.unwrap_or(default))),
        };
        Ok(Self {
            connect: secs(
                config.connect_timeout_secs,
                DEFAULT_CONNECT_TIMEOUT_SECS,
                "connect_timeout_secs",
            )?,
            first_byte: secs(
                config.first_byte_timeout_secs,
                DEFAULT_FIRST_BYTE_TIMEOUT_SECS,
                "first_byte_timeout_secs",
            )?,
            idle: secs(
                config.idle_timeout_secs,
                DEFAULT_IDLE_TIMEOUT_SECS,
                "idle_timeout_secs",
            )?,
        })
    }
}

/// Size bounds on what a provider sends for one request. Far above any real answer: a
/// response of 128K output tokens is about 0.5 MiB of text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StreamLimits {
    /// Longest event-stream line, in bytes. A whole tool call may come as one `data:` line
    /// (some OpenAI-compatible servers do not stream arguments), so it is generous.
    pub(crate) max_line_bytes: usize, // 8 MiB
    /// Largest event-stream event (all its lines), in bytes.
    pub(crate) max_event_bytes: usize, // 8 MiB
    /// Largest assembled message (text, reasoning, tool calls and their arguments), and
    /// largest plain (not streamed) body, in bytes.
    pub(crate) max_message_bytes: usize, // 16 MiB
}

impl Default for StreamLimits {
    fn default() -> Self {
        Self {
            max_line_bytes: 8 << 20,
            max_event_bytes: 8 << 20,
            max_message_bytes: 16 << 20,
        }
    }
}

/// Why reading an answer stopped.
#[derive(Debug, thiserror::Error)]
pub(crate) enum GuardError {
    /// Nothing arrived in time.
    #[error("no {phase} from the provider within {secs} s ({key}); the request was abandoned")]
    Silent {
        /// `answer` (first byte) or `data` (between pieces).
        phase: &'static str,
        /// The bound, in seconds.
        secs: u64,
        /// The config key that sets it.
        key: &'static str,
    },
    /// Past a size bound.
    #[error("the provider sent {what} longer than {limit} bytes; toolgate stopped reading it")]
    TooLong {
        /// `an event-stream line`, `an event-stream event`, `a response body`.
        what: &'static str,
        /// The bound.
        limit: usize,
    },
    /// The connection failed (the message carries the error's causes).
    #[error("{}", error_chain(.0))]
    Http(#[source] reqwest::Error),
}

/// Which size bounds apply to a body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// An event stream: lines and events are bounded (the message is bounded as assembled).
    EventStream,
    /// A plain body, bounded as a whole.
    Plain,
}

type Chunks = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

/// Counts line and event lengths across chunks.
#[derive(Debug, Default)]
struct Scanner {
    line: usize,
    event: usize,
    total: usize,
    /// The previous byte was `\r` (a `\n` right after it ends the same line).
    after_cr: bool,
}

impl Scanner {
    fn scan(
        &mut self,
        bytes: &[u8],
        shape: Shape,
        limits: &StreamLimits,
    ) -> Result<(), GuardError> {
        if shape == Shape::Plain {
            self.total += bytes.len();
            if self.total > limits.max_message_bytes {
                return Err(GuardError::TooLong {
                    what: "a response body",
                    limit: limits.max_message_bytes,
                });
            }
            return Ok(());
        }
        let mut rest = bytes;
        loop {
            let Some(at) = memchr::memchr2(b'\n', b'\r', rest) else {
                self.grow(rest.len(), limits)?;
                if !rest.is_empty() {
                    self.after_cr = false;
                }
                return Ok(());
            };
            self.grow(at, limits)?;
            let end = rest[at];
            let same_terminator = at == 0 && end == b'\n' && self.after_cr;
            if !same_terminator {
                if self.line == 0 {
                    // A blank line ends the event.
                    self.event = 0;
                }
                self.line = 0;
            }
            self.after_cr = end == b'\r';
            rest = &rest[at + 1..];
        }
    }

    fn grow(&mut self, n: usize, limits: &StreamLimits) -> Result<(), GuardError> {
        if n == 0 {
            return Ok(());
        }
        self.line += n;
        self.event += n;
        if self.line > limits.max_line_bytes {
            return Err(GuardError::TooLong {
                what: "an event-stream line",
                limit: limits.max_line_bytes,
            });
        }
        if self.event > limits.max_event_bytes {
            return Err(GuardError::TooLong {
                what: "an event-stream event",
                limit: limits.max_event_bytes,
            });
        }
        Ok(())
    }
}

struct Guard {
    chunks: Chunks,
    timeouts: Timeouts,
    limits: StreamLimits,
    shape: Shape,
    /// When the request was sent (the first byte is due within `first_byte` of it).
    sent: Instant,
    seen_any: bool,
    scanner: Scanner,
    done: bool,
}

/// `chunks` (a response body) with the time bounds (`sent`: when the request went out) and
/// the size bounds of `shape`. After the first error it ends.
pub(crate) fn guard(
    chunks: impl Stream<Item = reqwest::Result<Bytes>> + Send + 'static,
    timeouts: Timeouts,
    limits: StreamLimits,
    shape: Shape,
    sent: Instant,
) -> impl Stream<Item = Result<Bytes, GuardError>> + Send {
    let state = Guard {
        chunks: Box::pin(chunks),
        timeouts,
        limits,
        shape,
        sent,
        seen_any: false,
        scanner: Scanner::default(),
        done: false,
    };
    futures::stream::unfold(state, |mut st| async move {
        if st.done {
            return None;
        }
        let (wait, phase, secs, key) = if st.seen_any {
            let idle = st.timeouts.idle;
            (idle, "data", idle.as_secs(), "idle_timeout_secs")
        } else {
            let first = st.timeouts.first_byte;
            let left = first.saturating_sub(st.sent.elapsed());
            (left, "answer", first.as_secs(), "first_byte_timeout_secs")
        };
        let item = match tokio::time::timeout(wait, st.chunks.next()).await {
            Err(_) => Err(GuardError::Silent { phase, secs, key }),
            Ok(None) => return None,
            Ok(Some(Err(e))) => Err(GuardError::Http(e)),
            Ok(Some(Ok(bytes))) => {
                st.seen_any = true;
                st.scanner
                    .scan(&bytes, st.shape, &st.limits)
                    .map(|()| bytes)
            }
        };
        st.done = item.is_err();
        Some((item, st))
    })
}

/// Reads a whole plain body through [`guard`]; at most `limits.max_message_bytes`.
pub(crate) async fn read_plain(
    response: reqwest::Response,
    timeouts: Timeouts,
    limits: StreamLimits,
    sent: Instant,
) -> Result<Vec<u8>, GuardError> {
    let mut body = Box::pin(guard(
        response.bytes_stream(),
        timeouts,
        limits,
        Shape::Plain,
        sent,
    ));
    let mut out = Vec::new();
    while let Some(chunk) = body.next().await {
        out.extend_from_slice(&chunk?);
    }
    Ok(out)
}

/// The start of an error body (at most `max` bytes, within the time bounds); whatever could
/// be read when reading fails.
pub(crate) async fn read_error_text(
    response: reqwest::Response,
    timeouts: Timeouts,
    max: usize,
    sent: Instant,
) -> String {
    let limits = StreamLimits {
        max_message_bytes: usize::MAX,
        ..StreamLimits::default()
    };
    let mut body = Box::pin(guard(
        response.bytes_stream(),
        timeouts,
        limits,
        Shape::Plain,
        sent,
    ));
    let mut out = Vec::new();
    while out.len() < max {
        match body.next().await {
            Some(Ok(chunk)) => out.extend_from_slice(&chunk),
            _ => break,
        }
    }
    out.truncate(max);
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> StreamLimits {
        StreamLimits {
            max_line_bytes: 10,
            max_event_bytes: 25,
            max_message_bytes: 40,
        }
    }

    #[test]
    fn lines_and_events_are_bounded_across_chunks() {
        let limits = small();
        let mut s = Scanner::default();
        // Lines of 9 bytes, events of 18: fine, whatever the line endings and chunking.
        for chunk in [
            "data: abc\n",
            "data: ab",
            "c\r\n\r",
            "\n",
            "data: abc\rdata: abc\r\r",
        ] {
            s.scan(chunk.as_bytes(), Shape::EventStream, &limits)
                .unwrap();
        }
        let mut s = Scanner::default();
        let err = s
            .scan(b"data: 0123456789", Shape::EventStream, &limits)
            .unwrap_err();
        assert!(err.to_string().contains("line longer than 10"), "{err}");
        let mut s = Scanner::default();
        let event = b"data: abc\ndata: abc\ndata: abc\n";
        let err = s.scan(event, Shape::EventStream, &limits).unwrap_err();
        assert!(err.to_string().contains("event longer than 25"), "{err}");
        // `\r\n` is one line end, not an empty line that would end the event.
        let mut s = Scanner::default();
        let crlf = b"data: abc\r\ndata: abc\r\ndata: abc\r\n";
        assert!(s.scan(crlf, Shape::EventStream, &limits).is_err());
        let mut s = Scanner::default();
        s.scan(&[b'x'; 40], Shape::Plain, &limits).unwrap();
        assert!(s.scan(b"x", Shape::Plain, &limits).is_err());
    }
}
