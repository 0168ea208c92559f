//! The probe against scripted servers on an in-memory pipe, under a paused clock (the bound
//! passes as soon as nothing else can happen).

use std::time::Duration;

use rmcp::model::ProtocolVersion;
use rmcp::transport::async_rw::AsyncRwTransport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

use super::{Probe, Probing};
use crate::lifecycle::{Lifecycle, negotiate};

/// How a scripted server takes `server/discover`.
#[derive(Clone, Copy)]
enum OnDiscover {
    /// Answers a supported revision: a 2026-07-28 server.
    Answer,
    /// Answers `-32601`.
    Error,
    /// Answers `{}`, as to anything it does not know.
    Empty,
    /// Says nothing; answers it late (just before the answer to `initialize`), with `id` or
    /// without one.
    IgnoreThenLate { with_id: bool },
    /// Closes its end.
    Close,
}

fn initialize_result() -> Value {
    json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "scripted", "version": "1.0.0"},
    })
}

fn discover_result() -> Value {
    json!({
        "resultType": "complete",
        "supportedVersions": ["2026-07-28"],
        "capabilities": {"tools": {}},
        "ttlMs": 0,
        "cacheScope": "private",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "scripted", "version": "1.0.0"}},
    })
}

/// Serves `io` as a server that takes `server/discover` as `on` says; returns the methods
/// it was sent.
async fn scripted(io: DuplexStream, on: OnDiscover) -> Vec<String> {
    let (read, mut write) = tokio::io::split(io);
    let mut lines = BufReader::new(read).lines();
    let mut seen = Vec::new();
    let mut ignored: Option<Value> = None;
    while let Ok(Some(line)) = lines.next_line().await {
        let message: Value = serde_json::from_str(&line).unwrap();
        let method = message["method"].as_str().unwrap_or_default().to_owned();
        seen.push(method.clone());
        let id = message["id"].clone();
        let mut out = Vec::new();
        match (method.as_str(), on) {
            ("server/discover", OnDiscover::Answer) => {
                out.push(json!({"jsonrpc": "2.0", "id": id, "result": discover_result()}));
            }
            ("server/discover", OnDiscover::Error) => out.push(
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}}),
            ),
            ("server/discover", OnDiscover::Empty) => {
                out.push(json!({"jsonrpc": "2.0", "id": id, "result": {}}));
            }
            ("server/discover", OnDiscover::IgnoreThenLate { .. }) => ignored = Some(id),
            ("server/discover", OnDiscover::Close) => return seen,
            ("initialize", _) => {
                if let (Some(late), OnDiscover::IgnoreThenLate { with_id }) = (ignored.take(), on)
                {
                    let mut error = json!({"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid request"}});
                    if with_id {
                        error["id"] = late;
                    }
                    out.push(error);
                }
                out.push(json!({"jsonrpc": "2.0", "id": id, "result": initialize_result()}));
            }
            _ => {}
        }
        for message in out {
            write
                .write_all(format!("{message}\n").as_bytes())
                .await
                .unwrap();
        }
    }
    seen
}

/// Opens a connection to a scripted server through a probe of `wait`; returns the
/// negotiated revision (or the error), how far the probe got, and what the server was sent.
async fn open(
    on: OnDiscover,
    wait: Duration,
) -> (
    Result<ProtocolVersion, rmcp::service::ClientInitializeError>,
    Probing,
) {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let server = tokio::spawn(scripted(theirs, on));
    let (read, write) = tokio::io::split(ours);
    let (probe, state) = Probe::new(AsyncRwTransport::new_client(read, write), wait);
    let opened = negotiate((), probe, Lifecycle::Discover).await;
    let result = match opened {
        Ok(service) => {
            let version = service
                .peer_info()
                .map(|info| info.protocol_version.clone())
                .unwrap();
            service.cancel().await.unwrap();
            Ok(version)
        }
        Err(e) => Err(e),
    };
    let seen = server.await.unwrap();
    assert_eq!(seen.first().map(String::as_str), Some("server/discover"));
    (result, state.get())
}

#[tokio::test(start_paused = true)]
async fn a_server_that_answers_discover_is_opened_on_2026_07_28() {
    let (version, probing) = open(OnDiscover::Answer, Duration::from_secs(3)).await;
    assert_eq!(version.unwrap(), ProtocolVersion::V_2026_07_28);
    assert_eq!(probing, Probing::Answered);
}

#[tokio::test(start_paused = true)]
async fn a_server_that_errors_on_discover_is_initialized_on_the_same_connection() {
    let (version, probing) = open(OnDiscover::Error, Duration::from_secs(3)).await;
    assert_eq!(version.unwrap(), ProtocolVersion::V_2025_11_25);
    assert_eq!(probing, Probing::Answered);
}

#[tokio::test(start_paused = true)]
async fn a_server_that_answers_discover_with_an_empty_result_is_initialized_on_the_same_connection()
{
    let (version, probing) = open(OnDiscover::Empty, Duration::from_secs(3)).await;
    assert_eq!(version.unwrap(), ProtocolVersion::V_2025_11_25);
    assert_eq!(probing, Probing::Answered);
}

#[tokio::test(start_paused = true)]
async fn a_server_that_ignores_discover_is_initialized_after_the_bound_and_its_late_answer_dropped()
{
    for with_id in [true, false] {
        let started = tokio::time::Instant::now();
        let (version, probing) = open(
            OnDiscover::IgnoreThenLate { with_id },
            Duration::from_secs(3),
        )
        .await;
        assert_eq!(version.unwrap(), ProtocolVersion::V_2025_11_25, "{with_id}");
        assert_eq!(probing, Probing::Unanswered);
        // The paused clock moves only by the bound: not by rmcp's own 10 s.
        assert_eq!(started.elapsed().as_secs(), 3);
    }
}

#[tokio::test(start_paused = true)]
async fn a_server_that_closes_on_discover_is_reported_closed() {
    let (opened, probing) = open(OnDiscover::Close, Duration::from_secs(3)).await;
    assert!(opened.is_err());
    assert_eq!(probing, Probing::Closed);
}
