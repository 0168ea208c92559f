//! The loopback redirect target of a login: `http://localhost:PORT/callback` (RFC 8252
//! §7.3), listening on 127.0.0.1 and, when it can, on [::1] at the same port (browsers may
//! resolve `localhost` to either). It answers the one request that carries the
//! authorization response and ignores anything else (a favicon, a stray probe).

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Most bytes read of one request head.
const MAX_HEAD: usize = 16 * 1024;

/// What the authorization server sent back.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) code: String,
    pub(crate) state: String,
    pub(crate) issuer: Option<String>,
}

/// A bound callback listener.
pub(crate) struct Callback {
    v4: TcpListener,
    v6: Option<TcpListener>,
    port: u16,
}

impl Callback {
    /// Listens on `port` (any free one when `None`).
    pub(crate) async fn bind(port: Option<u16>) -> std::io::Result<Self> {
        let v4 = TcpListener::bind(("127.0.0.1", port.unwrap_or(0))).await?;
        let port = v4.local_addr()?.port();
        let v6 = TcpListener::bind(("::1", port)).await.ok();
        Ok(Self { v4, v6, port })
    }

    /// The redirect URI to register and send.
    pub(crate) fn redirect_uri(&self) -> String {
        format!("http://localhost:{}/callback", self.port)
    }

    /// Waits for the authorization response, at most `timeout`.
    pub(crate) async fn wait(self, timeout: Duration) -> Result<Reply, String> {
        let run = async {
            loop {
                let stream = match &self.v6 {
                    Some(v6) => tokio::select! {
                        r = self.v4.accept() => r,
                        r = v6.accept() => r,
                    },
                    None => self.v4.accept().await,
                };
                let Ok((stream, _)) = stream else { continue };
                if let Some(outcome) = answer(stream).await {
                    return outcome;
                }
            }
        };
        tokio::time::timeout(timeout, run).await.unwrap_or_else(|_| {
            Err(format!(
                "no answer from the browser within {} s; run the login again (with --no-browser, open the printed URL yourself)",
                timeout.as_secs()
            ))
        })
    }
}

/// Reads one request; `None` when it is not the callback.
async fn answer(mut stream: TcpStream) -> Option<Result<Reply, String>> {
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    let read = tokio::time::timeout(Duration::from_secs(10), async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    if read.is_err() {
        return None;
    }
    let text = String::from_utf8_lossy(&head);
    let target = text.lines().next()?.split_whitespace().nth(1)?.to_owned();
    let url = url::Url::parse(&format!("http://localhost{target}")).ok()?;
    if url.path() != "/callback" {
        let _ = stream
            .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            .await;
        return None;
    }
    let get = |k: &str| {
        url.query_pairs()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.into_owned())
    };
    let outcome = match (get("code"), get("state"), get("error")) {
        (_, _, Some(error)) => Err(format!(
            "the authorization server refused the login: {error}{}",
            get("error_description")
                .map(|d| format!(" ({d})"))
                .unwrap_or_default()
        )),
        (Some(code), Some(state), None) => Ok(Reply {
            code,
            state,
            issuer: get("iss"),
        }),
        _ => {
            Err("the browser came back without `code` and `state`; run the login again".to_owned())
        }
    };
    let body = match &outcome {
        Ok(_) => "toolgate: login received. You can close this tab.",
        Err(_) => "toolgate: the login failed; see the terminal.",
    };
    let response = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
    Some(outcome)
}
