//! The stdio transport, with a JSON-RPC error for every malformed line.
//!
//! rmcp silently drops lines that are not JSON (to avoid error storms between two SDKs); a
//! model-driven client deserves to hear why its message went nowhere, so a filter in front of
//! rmcp answers unparsable or oversized lines with a `-32700` parse error (`id: null`) and
//! passes everything else through unchanged. Both writers share one line-ordered stdout.

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::server::ToolgateServer;
use rmcp::ServiceExt;

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
    let (to_rmcp, rmcp_in) = tokio::io::duplex(64 * 1024);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(64 * 1024);
    let (errors_tx, errors_rx) = mpsc::channel::<String>(16);

    let session = server.clone();
    let reader = tokio::spawn(async move {
        filter_input(input, to_rmcp, errors_tx).await;
        // The client is gone: stop its calls now rather than after rmcp's drain.
        session.end_session();
    });
    let writer = tokio::spawn(merge_output(from_rmcp, errors_rx, output));

    let running = match server.serve((rmcp_in, rmcp_out)).await {
        Ok(running) => running,
        // The client left before initialising (a person pressing Ctrl-D): a clean exit.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => {
            reader.abort();
            let _ = writer.await;
            return Ok(());
        }
        Err(e) => {
            return Err(std::io::Error::other(format!(
                "MCP initialisation failed: {e}"
            )));
        }
    };
    let outcome = running.waiting().await.map_err(std::io::Error::other);
    reader.abort();
    let _ = writer.await;
    outcome.map(|_| ())
}

/// Copies well-formed lines to rmcp and answers the rest with parse errors.
async fn filter_input<R: AsyncRead + Unpin>(
    input: R,
    mut to_rmcp: tokio::io::DuplexStream,
    errors: mpsc::Sender<String>,
) {
    let mut input = BufReader::with_capacity(64 * 1024, input);
    let mut line = Vec::new();
    loop {
        line.clear();
        let mut oversized = false;
        // Read one line without ever holding more than MAX_LINE_BYTES of it.
        loop {
            let buf = match input.fill_buf().await {
                Ok(buf) => buf,
                Err(_) => return,
            };
            if buf.is_empty() {
                if line.is_empty() && !oversized {
                    return; // EOF: dropping `to_rmcp` ends the session.
                }
                break;
            }
            let (chunk, done) = match memchr_newline(buf) {
                Some(i) => (&buf[..=i], true),
                None => (buf, false),
            };
            if !oversized && line.len() + chunk.len() <= MAX_LINE_BYTES + 1 {
                line.extend_from_slice(chunk);
            } else {
                oversized = true;
                line.clear();
            }
            let used = chunk.len();
            input.consume(used);
            if done {
                break;
            }
        }
        if oversized {
            let _ = errors
                .send(parse_error(&format!(
                    "message longer than {MAX_LINE_BYTES} bytes; it was discarded"
                )))
                .await;
            continue;
        }
        let trimmed = line.trim_ascii();
        if trimmed.is_empty() {
            continue;
        }
        match serde_json::from_slice::<serde::de::IgnoredAny>(trimmed) {
            Ok(_) => {
                if to_rmcp.write_all(&line).await.is_err() {
                    return;
                }
                if !line.ends_with(b"\n") && to_rmcp.write_all(b"\n").await.is_err() {
                    return;
                }
            }
            Err(e) => {
                let _ = errors
                    .send(parse_error(&format!(
                        "not valid JSON ({e}); send one JSON-RPC message per line"
                    )))
                    .await;
            }
        }
    }
}

/// Writes rmcp's lines and our error lines to `output`, whole lines at a time.
async fn merge_output<W: AsyncWrite + Unpin>(
    from_rmcp: tokio::io::DuplexStream,
    mut errors: mpsc::Receiver<String>,
    mut output: W,
) {
    let mut lines = BufReader::new(from_rmcp);
    let mut line = Vec::new();
    let mut errors_open = true;
    loop {
        tokio::select! {
            read = lines.read_until(b'\n', &mut line) => {
                match read {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                            break;
                        }
                        line.clear();
                    }
                }
            }
            error = errors.recv(), if errors_open => {
                match error {
                    Some(text) => {
                        if output.write_all(text.as_bytes()).await.is_err() || output.flush().await.is_err() {
                            break;
                        }
                    }
                    None => errors_open = false,
                }
            }
        }
    }
}

fn memchr_newline(buf: &[u8]) -> Option<usize> {
    buf.iter().position(|&b| b == b'\n')
}

fn parse_error(message: &str) -> String {
    let mut text = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": -32700, "message": format!("Parse error: {message}") }
    })
    .to_string();
    text.push('\n');
    text
}
