//! The stdio transport: newline-delimited JSON-RPC, with an error for every malformed line.
//!
//! rmcp's own stdio transport silently drops lines that are not JSON (to avoid error storms
//! between two SDKs); a model-driven client deserves to hear why its message went nowhere.
//! [`LineTransport`] is an rmcp [`Transport`] that answers unparsable or oversized lines with
//! a `-32700` parse error and well-formed JSON of the wrong shape with `-32600`, and passes
//! everything else straight to rmcp — no extra tasks or pipes on the hot path.
//!
//! Every input is bounded and every reply names the request it answers: a request whose id
//! is still in flight is refused (`-32600`), known methods with malformed params get
//! `-32602`, ids are echoed byte for byte (numbers beyond 64 bits included), lone UTF-16
//! surrogates in strings become U+FFFD instead of failing the whole line, and replies go
//! through one bounded queue, so a client that stops reading stops being read (backpressure)
//! instead of making the server buffer without end.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex as SyncMutex, PoisonError};

use futures::future::BoxFuture;
use rmcp::RoleServer;
use rmcp::ServiceExt;
use rmcp::model::{ClientRequest, JsonRpcMessage, NumberOrString};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::server::ToolgateServer;

mod lifecycle;
mod streams;

use lifecycle::{Admit, Lifecycle};

/// Longest accepted message line (rmcp's own stdio default).
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Replies waiting to be written; past this, reading stops until the client reads.
const REPLY_QUEUE: usize = 64;

/// Prefix of the stand-in ids given to requests whose id rmcp cannot hold exactly.
const ID_TOKEN: &str = "\u{1}toolgate-id-";

/// MCP methods a client may call; a line naming one whose params do not fit gets `-32602`.
const KNOWN_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "completion/complete",
    "logging/setLevel",
];

/// Serves `server` on stdin/stdout until the client disconnects.
pub fn serve_stdio(
    server: ToolgateServer,
) -> futures::future::BoxFuture<'static, std::io::Result<()>> {
    Box::pin(async move {
        let stdio = streams::Stdio::open();
        let _blocking_again = stdio.restore;
        serve_boxed(server, stdio.input, stdio.output).await
    })
}

/// Serves `server` on any pair of byte streams (stdio, pipes, an in-memory duplex).
///
/// Boxed, the streams too: the MCP service loop is compiled here once, not again in every
/// crate that serves (docs/development.md, "Build profiles").
pub fn serve_streams<R, W>(
    server: ToolgateServer,
    input: R,
    output: W,
) -> BoxFuture<'static, std::io::Result<()>>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    Box::pin(serve_boxed(server, Box::new(input), Box::new(output)))
}

async fn serve_boxed(
    server: ToolgateServer,
    input: Box<dyn AsyncRead + Unpin + Send>,
    output: Box<dyn AsyncWrite + Unpin + Send>,
) -> std::io::Result<()> {
    let transport = LineTransport::new(input, output, server.clone());
    let running = match server.serve(transport).await {
        Ok(running) => running,
        // The client left before initialising (a person pressing Ctrl-D): a clean exit.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(e) => {
            return Err(std::io::Error::other(format!(
                "MCP initialisation failed: {e}"
            )));
        }
    };
    running.waiting().await.map_err(std::io::Error::other)?;
    Ok(())
}

/// Newline-delimited JSON-RPC over a byte stream pair.
pub struct LineTransport<R> {
    input: BufReader<R>,
    /// The line being read; kept across `receive` calls because rmcp may drop a pending
    /// `receive` future (it is polled in a `select!`), and no byte may be lost then.
    line: Vec<u8>,
    oversized: bool,
    /// An error reply not yet queued (kept across a dropped `receive`, like `line`).
    pending_reply: Option<Vec<u8>>,
    /// Every outgoing line goes through this bounded queue to one writer task.
    replies: mpsc::Sender<Vec<u8>>,
    ids: Arc<SyncMutex<Ids>>,
    /// Told when the input ends, so running calls stop.
    session: ToolgateServer,
    /// Which lifecycle the session is in (stateless, `initialize`, or both).
    lifecycle: Lifecycle,
    /// A message to hand rmcp on the next `receive` (after an opening `initialize`).
    queued: Option<RxJsonRpcMessage<RoleServer>>,
}

/// Request ids in flight, and the exact text of ids replaced by stand-ins.
#[derive(Default)]
struct Ids {
    in_flight: HashSet<String>,
    exact: HashMap<String, String>,
    next_token: u64,
}

impl<R> LineTransport<R>
where
    R: AsyncRead + Unpin + Send + 'static,
{
    fn new<W>(input: R, output: W, session: ToolgateServer) -> Self
    where
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (replies, mut queue) = mpsc::channel::<Vec<u8>>(REPLY_QUEUE);
        tokio::spawn(async move {
            let mut output = output;
            while let Some(bytes) = queue.recv().await {
                if output.write_all(&bytes).await.is_err() || output.flush().await.is_err() {
                    break;
                }
            }
        });
        Self {
            input: BufReader::with_capacity(64 * 1024, input),
            line: Vec::new(),
            oversized: false,
            pending_reply: None,
            replies,
            ids: Arc::default(),
            session,
            lifecycle: Lifecycle::default(),
            queued: None,
        }
    }

    /// Reads the next whole line into `self.line`; `false` at end of input. Cancel-safe:
    /// bytes move from the reader's buffer to `self.line` without an await in between.
    async fn next_line(&mut self) -> std::io::Result<bool> {
        loop {
            let buf = self.input.fill_buf().await?;
            if buf.is_empty() {
                return Ok(!self.line.is_empty() || self.oversized);
            }
            let (chunk, done) = match memchr_newline(buf) {
                Some(i) => (&buf[..=i], true),
                None => (buf, false),
            };
            let used = chunk.len();
            if self.oversized || self.line.len() + used > MAX_LINE_BYTES + 1 {
                self.oversized = true;
                self.line.clear();
            } else {
                self.line.extend_from_slice(chunk);
            }
            self.input.consume(used);
            if done {
                return Ok(true);
            }
        }
    }

    /// Queues an error reply; it is written by the next `receive` (cancel-safe).
    fn reply_error(&mut self, id: Value, code: i64, message: String) {
        let mut line =
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
                .to_string();
        line.push('\n');
        self.pending_reply = Some(line.into_bytes());
    }

    /// Writes the pending error reply, waiting while the queue is full: a client that does
    /// not read its replies is not read from either.
    async fn flush_pending(&mut self) -> bool {
        if self.pending_reply.is_none() {
            return true;
        }
        let Ok(permit) = self.replies.reserve().await else {
            return false;
        };
        if let Some(reply) = self.pending_reply.take() {
            permit.send(reply);
        }
        true
    }

    /// A parsed message, or the error reply it deserves. Requests get their place in line,
    /// are checked for a duplicate id, and get a stand-in id when theirs cannot be held
    /// exactly.
    fn accept(&mut self, text: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
        let repaired;
        let text = match std::str::from_utf8(text) {
            Ok(t) if t.contains("\\u") => {
                repaired = replace_lone_surrogates(t);
                repaired.as_bytes()
            }
            _ => text,
        };
        let exact_id = raw_id(text).filter(|raw| needs_stand_in(raw));
        let parsed = match &exact_id {
            None => serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(text),
            Some(_) => serde_json::from_slice::<Value>(text).and_then(|mut value| {
                let token = {
                    let mut ids = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
                    ids.next_token += 1;
                    format!("{ID_TOKEN}{}", ids.next_token)
                };
                value["id"] = Value::String(token);
                serde_json::from_value(value)
            }),
        };
        let message = match parsed {
            Ok(message) => message,
            Err(e) => {
                match serde_json::from_slice::<Value>(text) {
                    Err(_) => self.reply_error(
                        Value::Null,
                        -32700,
                        format!(
                            "Parse error: not valid JSON ({e}); send one JSON-RPC message per line"
                        ),
                    ),
                    // Notifications of unknown shape are ignored, as JSON-RPC asks.
                    Ok(value) if value.get("id").is_none() && value.get("method").is_some() => {}
                    Ok(value) => {
                        let id = echo_id(text, &value);
                        let method = value.get("method").and_then(Value::as_str);
                        match method {
                            Some(m) if KNOWN_METHODS.contains(&m) => self.reply_error(
                                id,
                                -32602,
                                format!("Invalid params for `{m}`: {e}"),
                            ),
                            _ => self.reply_error(id, -32600, format!("Invalid request: {e}")),
                        }
                    }
                }
                return None;
            }
        };
        let JsonRpcMessage::Request(request) = &message else {
            return Some(message);
        };
        if let ClientRequest::CustomRequest(custom) = &request.request
            && KNOWN_METHODS.contains(&custom.method.as_str())
        {
            // A known method whose params did not fit its type fell through to "custom".
            let id = match &exact_id {
                Some(raw) => raw_value(raw),
                None => serde_json::to_value(&request.id).unwrap_or(Value::Null),
            };
            let why = match custom.method.as_str() {
                "tools/call" => {
                    let params = custom.params.clone().unwrap_or(Value::Null);
                    match serde_json::from_value::<rmcp::model::CallToolRequestParams>(params) {
                        Err(e) => e.to_string(),
                        Ok(_) => "params do not fit the method".to_owned(),
                    }
                }
                _ => "params do not fit the method".to_owned(),
            };
            self.reply_error(
                id,
                -32602,
                format!(
                    "Invalid params for `{}`: {why}; `arguments` must be a JSON object",
                    custom.method
                ),
            );
            return None;
        }
        let key = id_key(&request.id);
        let mut ids = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        if !ids.in_flight.insert(key.clone()) {
            let shown = exact_id.as_deref().map_or_else(
                || serde_json::to_value(&request.id).unwrap_or(Value::Null),
                raw_value,
            );
            drop(ids);
            self.reply_error(
                shown,
                -32600,
                "Invalid request: a request with this id is still in flight; give every request its own id".to_owned(),
            );
            return None;
        }
        let shown = exact_id.as_deref().map_or_else(
            || serde_json::to_value(&request.id).unwrap_or(Value::Null),
            raw_value,
        );
        if let Some(raw) = exact_id {
            ids.exact.insert(key.clone(), raw);
        }
        drop(ids);
        match self.lifecycle.admit(message) {
            Admit::Pass(message) => Some(self.session.stamp_arrival(message)),
            Admit::Open { opening, then } => {
                self.queued = Some(self.session.stamp_arrival(then));
                Some(opening)
            }
            Admit::Refuse(why) => {
                let mut ids = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
                ids.in_flight.remove(&key);
                ids.exact.remove(&key);
                drop(ids);
                self.reply_error(shown, -32602, why);
                None
            }
        }
    }
}

impl<R> Transport<RoleServer> for LineTransport<R>
where
    R: AsyncRead + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let replies = self.replies.clone();
        let ids = Arc::clone(&self.ids);
        let swallow = Lifecycle::is_opening_answer(&item);
        async move {
            if swallow {
                return Ok(());
            }
            let answered = match &item {
                JsonRpcMessage::Response(r) => Some(id_key(&r.id)),
                JsonRpcMessage::Error(e) => e.id.as_ref().map(id_key),
                _ => None,
            };
            let mut text = serde_json::to_string(&item).map_err(std::io::Error::other)?;
            if let Some(key) = answered {
                let mut ids = ids.lock().unwrap_or_else(PoisonError::into_inner);
                ids.in_flight.remove(&key);
                if let Some(raw) = ids.exact.remove(&key) {
                    // The stand-in goes back to the exact id the client sent.
                    text = text.replacen(&format!("\"id\":{key}"), &format!("\"id\":{raw}"), 1);
                }
            }
            text.push('\n');
            replies
                .send(text.into_bytes())
                .await
                .map_err(|_| std::io::Error::other("the output is closed"))
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if !self.flush_pending().await {
                return None;
            }
            if let Some(message) = self.queued.take() {
                return Some(message);
            }
            match self.next_line().await {
                Ok(true) => {}
                Ok(false) | Err(_) => {
                    // The client is gone: stop its calls now rather than after rmcp's drain.
                    self.session.end_session();
                    return None;
                }
            }
            if std::mem::take(&mut self.oversized) {
                self.reply_error(
                    Value::Null,
                    -32700,
                    format!(
                        "Parse error: message longer than {MAX_LINE_BYTES} bytes; it was discarded"
                    ),
                );
                continue;
            }
            let line = std::mem::take(&mut self.line);
            let text = line.trim_ascii();
            let text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
            if text.is_empty() {
                continue;
            }
            if let Some(message) = self.accept(text) {
                return Some(message);
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Queued replies are written by the writer task, which ends when every sender is
        // gone; wait until the queue has room for everything, i.e. is empty.
        let _ = self.replies.reserve_many(REPLY_QUEUE).await;
        Ok(())
    }
}

/// How an id is keyed: its JSON text as rmcp holds it.
fn id_key(id: &NumberOrString) -> String {
    serde_json::to_string(id).unwrap_or_default()
}

/// The raw text of a message's `id`, when it has one.
fn raw_id(text: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Envelope<'a> {
        #[serde(borrow, default)]
        id: Option<&'a RawValue>,
    }
    let envelope: Envelope<'_> = serde_json::from_slice(text).ok()?;
    envelope.id.map(|raw| raw.get().to_owned())
}

/// Whether rmcp would not echo `raw` exactly: numbers it cannot hold as an i64 (beyond 64
/// bits, fractions, exponents).
fn needs_stand_in(raw: &str) -> bool {
    raw.starts_with(|c: char| c == '-' || c.is_ascii_digit()) && raw.parse::<i64>().is_err()
}

/// `raw` (the id's JSON text) as a value for an error reply; exact as long as it is an
/// integer JSON can carry in a u64 or i64, else as the closest number.
fn raw_value(raw: &str) -> Value {
    serde_json::from_str::<Value>(raw).unwrap_or(Value::Null)
}

/// The id to echo in an error reply for a message that could not be parsed as its type.
fn echo_id(text: &[u8], value: &Value) -> Value {
    match raw_id(text) {
        Some(raw) => raw_value(&raw),
        None => value.get("id").cloned().unwrap_or(Value::Null),
    }
}

/// Replaces `\\uD800`–`\\uDFFF` escapes that are not part of a valid surrogate pair with
/// `\\uFFFD`, so one bad character (a lone surrogate from a truncated emoji) costs that
/// character rather than the whole request.
fn replace_lone_surrogates(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let hex_at = |at: usize| -> Option<u16> {
        let digits = text.get(at..at + 4)?;
        u16::from_str_radix(digits, 16).ok()
    };
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 1 < bytes.len() {
            if bytes[i + 1] == b'u'
                && let Some(unit) = hex_at(i + 2)
            {
                let is_high = (0xD800..0xDC00).contains(&unit);
                let is_low = (0xDC00..0xE000).contains(&unit);
                let pairs = is_high
                    && bytes.get(i + 6) == Some(&b'\\')
                    && bytes.get(i + 7) == Some(&b'u')
                    && hex_at(i + 8).is_some_and(|next| (0xDC00..0xE000).contains(&next));
                if pairs {
                    out.push_str(&text[i..i + 12]);
                    i += 12;
                } else if is_high || is_low {
                    out.push_str("\\uFFFD");
                    i += 6;
                } else {
                    out.push_str(&text[i..i + 6]);
                    i += 6;
                }
                continue;
            }
            // Any other escape (including `\\\\`) is copied whole — the backslash and the
            // whole character after it, which in a malformed line may be multi-byte.
            let next = text[i + 1..].chars().next().map_or(1, char::len_utf8);
            out.push_str(&text[i..i + 1 + next]);
            i += 1 + next;
            continue;
        }
        let len = text[i..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&text[i..i + len]);
        i += len;
    }
    out
}

fn memchr_newline(buf: &[u8]) -> Option<usize> {
    buf.iter().position(|&b| b == b'\n')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogates_become_replacement_characters_and_pairs_stay() {
        let fixed = replace_lone_surrogates(
            r#"{"a":"x\ud800y","b":"\ud83d\ude00","c":"\\ud800","d":"\udc00"}"#,
        );
        assert_eq!(
            fixed,
            r#"{"a":"x\uFFFDy","b":"\ud83d\ude00","c":"\\ud800","d":"\uFFFD"}"#
        );
        let value: Value = serde_json::from_str(&fixed).unwrap();
        assert_eq!(value["a"], "x\u{FFFD}y");
        assert_eq!(value["b"], "\u{1F600}");
        assert_eq!(value["c"], "\\ud800");
    }

    #[test]
    fn a_backslash_before_a_multi_byte_character_does_not_panic() {
        // Found by the `stdio` fuzz target: `\\` followed by a multi-byte character in a
        // malformed line sliced through the character and panicked the transport.
        let line = "{\"a\":\"\\é\\u00e9\\ud800\"}";
        assert_eq!(
            replace_lone_surrogates(line),
            "{\"a\":\"\\é\\u00e9\\uFFFD\"}"
        );
        assert_eq!(replace_lone_surrogates("\\"), "\\");
    }

    #[test]
    fn ids_rmcp_cannot_hold_get_a_stand_in() {
        assert!(needs_stand_in("18446744073709551616"));
        assert!(needs_stand_in("1.5"));
        assert!(needs_stand_in("1e3"));
        assert!(!needs_stand_in("9223372036854775807"));
        assert!(!needs_stand_in("-3"));
        assert!(!needs_stand_in("\"abc\""));
        assert_eq!(
            raw_id(br#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}"#).as_deref(),
            Some("18446744073709551616")
        );
    }
}
