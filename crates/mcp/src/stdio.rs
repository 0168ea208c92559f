//! The stdio transport: newline-delimited JSON-RPC, with an error for every malformed line.
//!
//! rmcp's own stdio transport silently drops lines that are not JSON (to avoid error storms
//! between two SDKs); a model-driven client deserves to hear why its message went nowhere.
//! [`LineTransport`] is an rmcp [`Transport`] that answers unparsable or oversized lines with
//! a `-32700` parse error and well-formed JSON of the wrong shape with `-32600`, and passes
//! everything else straight to rmcp — no extra tasks or pipes on the hot path.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::ServiceExt;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

use crate::server::ToolgateServer;

/// Longest accepted message line (rmcp's own stdio default).
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Serves `server` on stdin/stdout until the client disconnects.
pub async fn serve_stdio(server: ToolgateServer) -> std::io::Result<()> {
    serve_streams(server, tokio::io::stdin(), tokio::io::stdout()).await
}

/// Serves `server` on any pair of byte streams (stdio, pipes, an in-memory duplex).
pub async fn serve_streams<R, W>(server: ToolgateServer, input: R, output: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
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
pub struct LineTransport<R, W> {
    input: BufReader<R>,
    /// The line being read; kept across `receive` calls because rmcp may drop a pending
    /// `receive` future (it is polled in a `select!`), and no byte may be lost then.
    line: Vec<u8>,
    oversized: bool,
    output: Arc<Mutex<W>>,
    /// Told when the input ends, so running calls stop.
    session: ToolgateServer,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    fn new(input: R, output: W, session: ToolgateServer) -> Self {
        Self {
            input: BufReader::with_capacity(64 * 1024, input),
            line: Vec::new(),
            oversized: false,
            output: Arc::new(Mutex::new(output)),
            session,
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

    /// Writes an error reply on its own task, so a cancelled `receive` cannot cut it short.
    fn reply_error(&self, id: Value, code: i64, message: String) {
        let mut line =
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
                .to_string();
        line.push('\n');
        let output = Arc::clone(&self.output);
        tokio::spawn(async move {
            let mut out = output.lock().await;
            if out.write_all(line.as_bytes()).await.is_ok() {
                let _ = out.flush().await;
            }
        });
    }
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let output = Arc::clone(&self.output);
        async move {
            let mut bytes = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            bytes.push(b'\n');
            let mut out = output.lock().await;
            out.write_all(&bytes).await?;
            out.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
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
            match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(text) {
                Ok(message) => return Some(self.session.stamp_arrival(message)),
                Err(e) => match serde_json::from_slice::<Value>(text) {
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
                        let id = value.get("id").cloned().unwrap_or(Value::Null);
                        self.reply_error(id, -32600, format!("Invalid request: {e}"));
                    }
                },
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let mut out = self.output.lock().await;
        out.flush().await
    }
}

fn memchr_newline(buf: &[u8]) -> Option<usize> {
    buf.iter().position(|&b| b == b'\n')
}
