//! [`LineClient`]: MCP's JSON-RPC, one message a line, over any pair of byte streams (an
//! in-memory duplex, a child process's stdio).

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, Lines};

use crate::HANG_GUARD;

/// A client that writes requests and reads messages line by line.
pub struct LineClient<R, W> {
    lines: Lines<BufReader<R>>,
    write: W,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> LineClient<R, W> {
    /// A client reading the server's messages from `read` and writing to `write`.
    pub fn new(read: R, write: W) -> Self {
        Self {
            lines: BufReader::new(read).lines(),
            write,
        }
    }

    /// `initialize` as the client `name` at `version` offering `capabilities`, then
    /// `notifications/initialized`; returns the server's `initialize` result.
    pub async fn initialize(&mut self, version: &str, name: &str, capabilities: Value) -> Value {
        let reply = self
            .request(
                0,
                "initialize",
                json!({
                    "protocolVersion": version,
                    "capabilities": capabilities,
                    "clientInfo": {"name": name, "version": "0"}
                }),
            )
            .await;
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        reply["result"].clone()
    }

    /// Writes one message.
    pub async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.write
            .write_all(line.as_bytes())
            .await
            .expect("the server reads");
        self.write.flush().await.expect("the server reads");
    }

    /// The next message; `None` when the server closed the stream.
    pub async fn next(&mut self) -> Option<Value> {
        let line = tokio::time::timeout(HANG_GUARD, self.lines.next_line())
            .await
            .expect("the server sends a message or closes (hang guard)")
            .expect("the stream reads");
        line.map(|line| serde_json::from_str(&line).expect("a JSON-RPC message"))
    }

    /// The next message `want` accepts, skipping the others.
    pub async fn next_where(&mut self, want: impl Fn(&Value) -> bool) -> Value {
        loop {
            let message = self.next().await.expect("the server keeps the stream open");
            if want(&message) {
                return message;
            }
        }
    }

    /// Sends a request; returns its response and the messages that came before it.
    pub async fn exchange(&mut self, id: u64, method: &str, params: Value) -> (Value, Vec<Value>) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let mut before = Vec::new();
        loop {
            let message = self.next().await.expect("the server keeps the stream open");
            if message["id"] == json!(id) && message.get("method").is_none() {
                return (message, before);
            }
            before.push(message);
        }
    }

    /// Sends a request and returns its response.
    pub async fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.exchange(id, method, params).await.0
    }

    /// The two halves back, to close one of them.
    pub fn into_parts(self) -> (Lines<BufReader<R>>, W) {
        (self.lines, self.write)
    }
}
