//! `serve --http` against slow and foreign clients: connections that never finish a request
//! head (slowloris) are closed after the header timeout or pushed out by newer ones, so a
//! real client still gets its answer; `/metrics` checks `Host` and `Origin` like `/mcp`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;
use toolgate_core::{DispatchLimits, Dispatcher, Policy, RenderOptions, Scope};
use toolgate_mcp::{HttpOptions, ListenerLimits, Metrics, ToolgateServer};
use toolgate_test_support::HANG_GUARD;

const TOKEN: &str = "tg-listener-token";

/// `serve_http` on loopback with the static token, metrics on (in a build that has them)
/// and `listener`; its address.
async fn start(stop: &CancellationToken, listener: ListenerLimits) -> SocketAddr {
    let server = ToolgateServer::new(
        Arc::new(Dispatcher::new(
            toolgate_test_support::registry_with(Vec::new()),
            Scope::global(),
            Policy::allow_all(),
            DispatchLimits::default(),
        )),
        RenderOptions::default(),
        String::new(),
    );
    let options = HttpOptions {
        token: Some(TOKEN.to_owned()),
        max_sessions: 4,
        metrics: Metrics::new(None).ok().map(Arc::new),
        listener,
        ..crate::loopback_options()
    };
    crate::spawn_http(server, options, stop).await
}

/// Reads until the server closes `stream` (EOF, or a reset when it closed before reading
/// what was sent); what it said before.
async fn until_closed(stream: &mut TcpStream) -> String {
    let mut said = Vec::new();
    let mut buf = [0u8; 1024];
    tokio::time::timeout(HANG_GUARD, async {
        while let Ok(n @ 1..) = stream.read(&mut buf).await {
            said.extend_from_slice(&buf[..n]);
        }
    })
    .await
    .expect("the server closes the connection (hang guard)");
    String::from_utf8_lossy(&said).into_owned()
}

/// A request with `headers`; its status and body.
async fn send(
    addr: SocketAddr,
    method: reqwest::Method,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, String) {
    let mut request = reqwest::Client::new()
        .request(method, format!("http://{addr}{path}"))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(
            serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"}}})
            .to_string(),
        );
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

/// Regression: about 1,100 connections that never finished their request head used up the
/// open-file limit, and real clients timed out until the flood closed them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_silent_connections_pushes_out_the_oldest_and_a_client_still_gets_its_answer() {
    const MAX_WAITING: usize = 16;
    let stop = CancellationToken::new();
    let addr = start(
        &stop,
        ListenerLimits {
            // Longer than the test: only the cap closes connections here.
            header_timeout: HANG_GUARD * 10,
            max_waiting: MAX_WAITING,
        },
    )
    .await;
    let mut flood = Vec::new();
    for _ in 0..300 {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            .await
            .unwrap();
        flood.push(stream);
    }
    let (status, body) = send(addr, reqwest::Method::POST, "/mcp", &[]).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"protocolVersion\""), "{body}");
    // All but the newest waiting ones were closed for newcomers (the client among them).
    for stream in &mut flood[..300 - MAX_WAITING] {
        until_closed(stream).await;
    }
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_never_finishes_its_head_is_closed_after_the_header_timeout() {
    let stop = CancellationToken::new();
    let addr = start(
        &stop,
        ListenerLimits {
            header_timeout: Duration::from_millis(300),
            ..ListenerLimits::default()
        },
    )
    .await;
    let mut silent = TcpStream::connect(addr).await.unwrap();
    silent
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .unwrap();
    let said = until_closed(&mut silent).await;
    assert!(
        !said.contains("ok"),
        "no answer to an unfinished head: {said}"
    );
    // A finished head is answered, and the idle keep-alive connection closes after the
    // same timeout.
    let mut idle = TcpStream::connect(addr).await.unwrap();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let said = until_closed(&mut idle).await;
    assert!(
        said.starts_with("HTTP/1.1 200") && said.ends_with("ok\n"),
        "{said}"
    );
    stop.cancel();
}

/// Regression: `/metrics` skipped the DNS-rebinding check of `/mcp`, so a page on a rebound
/// name could read it with a token it learned elsewhere.
#[cfg(feature = "prometheus")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_refuses_a_foreign_host_or_origin_like_mcp() {
    let stop = CancellationToken::new();
    let addr = start(&stop, ListenerLimits::default()).await;
    for (method, path) in [
        (reqwest::Method::GET, "/metrics"),
        (reqwest::Method::POST, "/mcp"),
    ] {
        let foreign_host = [("host", "evil.example")];
        let (status, body) = send(addr, method.clone(), path, &foreign_host).await;
        assert_eq!(status, 403, "{path} with a foreign Host: {body}");
        let foreign_origin = [("origin", "https://evil.example")];
        let (status, body) = send(addr, method.clone(), path, &foreign_origin).await;
        assert_eq!(status, 403, "{path} with a foreign Origin: {body}");
        let own_origin = [("origin", "http://localhost:5173")];
        let (status, body) = send(addr, method, path, &own_origin).await;
        assert_eq!(status, 200, "{path} from a loopback page: {body}");
    }
    stop.cancel();
}
