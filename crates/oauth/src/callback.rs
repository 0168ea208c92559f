//! The loopback redirect target of a login: `http://localhost:PORT/callback` (RFC 8252
//! §7.3), listening on 127.0.0.1 and, when it can, on [::1] at the same port (browsers may
//! resolve `localhost` to either). It answers the one request that carries the
//! authorization response of this login (its `state`) and ignores anything else: a favicon,
//! a stray probe, or a page in the browser that sends a forged `error` or `code` to end the
//! login or slip another account's code in.

use std::time::Duration;

use crate::web_login::NoCode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Most bytes read of one request head.
const MAX_HEAD: usize = 16 * 1024;

/// Why the browser brought no code back to the loopback callback.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallbackError {
    /// Nothing came back in time.
    #[error(
        "no answer from the browser within {} s; run the login again (with --no-browser, open the printed URL yourself)",
        .0.as_secs()
    )]
    Timeout(Duration),
    /// The authorization server refused the login.
    #[error(transparent)]
    Refused(#[from] NoCode),
    /// The browser came back with neither a code nor an error.
    #[error("the browser came back without `code`; run the login again")]
    MissingCode,
}

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

    /// Waits for the authorization response carrying `state`, at most `timeout`.
    pub(crate) async fn wait(self, state: &str, timeout: Duration) -> Result<Reply, CallbackError> {
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
                if let Some(outcome) = answer(stream, state).await {
                    return outcome;
                }
            }
        };
        tokio::time::timeout(timeout, run)
            .await
            .unwrap_or(Err(CallbackError::Timeout(timeout)))
    }
}

/// Reads one request; `None` when it is not the callback of the login started with `state`.
async fn answer(mut stream: TcpStream, state: &str) -> Option<Result<Reply, CallbackError>> {
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
    if get("state").as_deref() != Some(state) {
        // Not this login's answer (a page can make the browser send anything here): keep
        // waiting for the real one.
        let body = "toolgate: this is not the login toolgate is waiting for.";
        let _ = stream
            .write_all(
                format!(
                    "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                )
                .as_bytes(),
            )
            .await;
        return None;
    }
    let outcome = match (get("code"), get("error")) {
        (_, Some(error)) => Err(CallbackError::Refused(NoCode::refused(
            Some(&error),
            get("error_description").as_deref(),
        ))),
        (Some(code), None) => Ok(Reply {
            code,
            state: state.to_owned(),
            issuer: get("iss"),
        }),
        (None, None) => Err(CallbackError::MissingCode),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Sends one GET for `target` to the callback and returns the response's status line.
    async fn get(port: u16, target: &str) -> String {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        stream
            .write_all(format!("GET {target} HTTP/1.1\r\nhost: localhost\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        response.lines().next().unwrap_or_default().to_owned()
    }

    /// Regression: the first `/callback` with any `state` ended the login, and the
    /// provider's error text went raw to the terminal.
    #[tokio::test]
    async fn only_the_logins_own_state_ends_it_and_provider_text_is_escaped() {
        let callback = Callback::bind(None).await.unwrap();
        let port = callback.port;
        let waiting =
            tokio::spawn(async move { callback.wait("S1", Duration::from_secs(600)).await });
        // A page in the browser ends the login with a forged error, or slips a code in.
        assert!(
            get(port, "/callback?error=access_denied&state=forged")
                .await
                .contains("400")
        );
        assert!(
            get(port, "/callback?code=mallory&state=forged")
                .await
                .contains("400")
        );
        assert!(get(port, "/callback?code=mallory").await.contains("400"));
        assert!(!waiting.is_finished());
        assert!(
            get(port, "/callback?code=real&state=S1&iss=https%3A%2F%2Fas")
                .await
                .contains("200")
        );
        let reply = waiting.await.unwrap().unwrap();
        assert_eq!((reply.code.as_str(), reply.state.as_str()), ("real", "S1"));

        let callback = Callback::bind(None).await.unwrap();
        let port = callback.port;
        let waiting =
            tokio::spawn(async move { callback.wait("S2", Duration::from_secs(600)).await });
        get(
            port,
            "/callback?state=S2&error=bad%1B%5B2J&error_description=line%0D%0Aforged%20line%1B%5D0%3Btitle%07",
        )
        .await;
        let why = waiting.await.unwrap().unwrap_err().to_string();
        assert!(!why.chars().any(char::is_control), "{why:?}");
        assert!(why.contains("bad\\u{1b}[2J"), "{why}");
    }
}
