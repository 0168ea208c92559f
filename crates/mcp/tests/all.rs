//! The MCP server in-process over an in-memory stream: cancellation, client disconnect,
//! progress, `list_changed`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::DuplexStream;
use toolgate_core::{
    Concurrency, DynTool, Registry, RenderOptions, StaticProvider, ToolError, ToolMeta, ToolOutput,
};
use toolgate_mcp::{ToolgateServer, serve_streams};
use toolgate_test_support::{FnTool, HANG_GUARD, LineClient, dispatcher};

/// A tool that runs until cancelled (or 30 s), reporting progress; the counters say how
/// often it started and whether it saw its cancellation.
fn slow(name: &str) -> (Arc<dyn DynTool>, Arc<AtomicUsize>, Arc<AtomicBool>) {
    let started = Arc::new(AtomicUsize::new(0));
    let cancelled = Arc::new(AtomicBool::new(false));
    let (count, seen) = (Arc::clone(&started), Arc::clone(&cancelled));
    let tool = FnTool::new(name)
        .describe("Waits until cancelled.")
        .meta(ToolMeta {
            concurrency: Concurrency::ReadOnly,
            action: "test".into(),
            ..ToolMeta::default()
        })
        .reply(move |_args, ctx| {
            let (started, cancelled) = (Arc::clone(&count), Arc::clone(&seen));
            Box::pin(async move {
                started.fetch_add(1, Ordering::SeqCst);
                for step in 0..300 {
                    ctx.report(f64::from(step), Some(300.0), Some(format!("step {step}")));
                    tokio::select! {
                        () = ctx.cancel.cancelled() => {
                            cancelled.store(true, Ordering::SeqCst);
                            return Err(ToolError::recoverable("cancelled"));
                        }
                        () = tokio::time::sleep(Duration::from_millis(100)) => {}
                    }
                }
                Ok(ToolOutput::text("done"))
            })
        })
        .erased();
    (tool, started, cancelled)
}

struct Client {
    line: LineClient<DuplexStream, DuplexStream>,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Client {
    async fn start(registry: Arc<Registry>) -> Self {
        let server = ToolgateServer::new(
            dispatcher(registry),
            RenderOptions::default(),
            String::new(),
        );
        Self::start_server(server).await
    }

    async fn start_server(server: ToolgateServer) -> Self {
        let (write, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, read) = tokio::io::duplex(1 << 16);
        let server = tokio::spawn(serve_streams(server, server_in, server_out));
        let mut line = LineClient::new(read, write);
        let init = line.initialize("2025-06-18", "t", json!({})).await;
        assert!(
            init["capabilities"]["tools"]["listChanged"] == true,
            "{init}"
        );
        Self { line, server }
    }

    async fn send(&mut self, message: Value) {
        self.line.send(message).await;
    }

    async fn next_where(&mut self, want: impl Fn(&Value) -> bool) -> Value {
        self.line.next_where(want).await
    }
}

fn registry_with(tool: Arc<dyn DynTool>) -> Arc<Registry> {
    toolgate_test_support::registry_with(vec![tool])
}

/// Waits for `flag`, checking every 10 ms (the tool's counters have no event to wait on).
async fn until(flag: impl Fn() -> bool) {
    tokio::time::timeout(HANG_GUARD, async {
        while !flag() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("condition not reached (hang guard)");
}

#[tokio::test]
async fn progress_is_forwarded_and_cancellation_stops_the_tool() {
    let (slow, started, cancelled) = slow("slow");
    let mut client = Client::start(registry_with(slow)).await;
    client
        .send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "slow", "arguments": {}, "_meta": {"progressToken": "tok"}}}))
        .await;
    let progress = client
        .next_where(|m| m["method"] == "notifications/progress")
        .await;
    assert_eq!(progress["params"]["progressToken"], "tok");
    assert_eq!(progress["params"]["total"], 300.0);
    assert_eq!(started.load(Ordering::SeqCst), 1);
    client
        .send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7, "reason": "user"}}))
        .await;
    until(|| cancelled.load(Ordering::SeqCst)).await;
}

#[tokio::test]
async fn client_disconnect_mid_call_cancels_the_call_and_ends_the_session() {
    let (slow, started, cancelled) = slow("slow");
    let mut client = Client::start(registry_with(slow)).await;
    client
        .send(json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "slow", "arguments": {}}}))
        .await;
    until(|| started.load(Ordering::SeqCst) == 1).await;
    let Client { line, server } = client;
    drop(line);
    tokio::time::timeout(HANG_GUARD, server)
        .await
        .expect("session did not end")
        .unwrap()
        .ok();
    until(|| cancelled.load(Ordering::SeqCst)).await;
}

#[tokio::test]
async fn registry_changes_reach_the_client_as_list_changed() {
    let registry = registry_with(slow("first").0);
    let mut client = Client::start(Arc::clone(&registry)).await;
    client
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}))
        .await;
    let list = client.next_where(|m| m["id"] == 1).await;
    assert_eq!(list["result"]["tools"].as_array().unwrap().len(), 1);
    registry
        .register(
            None,
            Arc::new(StaticProvider::new("late", vec![slow("second").0])),
            0,
        )
        .unwrap();
    // The session's watcher starts after `initialized` and ignores changes made before it
    // did: until one is announced, change the registry again (a new generation).
    tokio::time::timeout(HANG_GUARD, async {
        loop {
            let announced =
                client.next_where(|m| m["method"] == "notifications/tools/list_changed");
            if tokio::time::timeout(Duration::from_millis(500), announced)
                .await
                .is_ok()
            {
                break;
            }
            registry.invalidate();
        }
    })
    .await
    .expect("a registry change is announced as list_changed (hang guard)");
    client
        .send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}))
        .await;
    let list = client.next_where(|m| m["id"] == 2).await;
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["first", "second"]);
}

#[path = "all/disclosure.rs"]
mod disclosure;

#[cfg(feature = "jwt")]
#[path = "all/oauth.rs"]
mod oauth;

#[cfg(feature = "prometheus")]
#[path = "all/balancer.rs"]
mod balancer;

#[path = "all/listener.rs"]
mod listener;

#[path = "all/rate_limits.rs"]
mod rate_limits;

/// Loopback `serve_http` options with nothing else on: each test sets what it checks.
fn loopback_options() -> toolgate_mcp::HttpOptions {
    toolgate_mcp::HttpOptions {
        addr: "127.0.0.1:0".parse().unwrap(),
        token: None,
        oauth: None,
        allowed_origins: Vec::new(),
        allowed_hosts: Vec::new(),
        insecure_no_auth: false,
        max_sessions: 16,
        metrics: None,
        public_url: None,
        web_logins: None,
        listener: toolgate_mcp::ListenerLimits::default(),
    }
}

/// Serves `server` over HTTP with `options` until `stop`; the bound address.
async fn spawn_http(
    server: ToolgateServer,
    options: toolgate_mcp::HttpOptions,
    stop: &tokio_util::sync::CancellationToken,
) -> std::net::SocketAddr {
    let (tx, rx) = tokio::sync::oneshot::channel();
    tokio::spawn(toolgate_mcp::serve_http(
        server,
        options,
        stop.clone(),
        move |a| {
            let _ = tx.send(a);
        },
    ));
    let addr = rx.await.unwrap();
    // The test's own client needs rustls' provider, which the server installs only once it
    // builds its router (after announcing the address).
    let _ = rustls::crypto::ring::default_provider().install_default();
    addr
}

/// The JSON-RPC reply (the message with an `id`) in an HTTP body, plain JSON or SSE.
fn reply_in(text: &str) -> Option<Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .chain(std::iter::once(text))
        .find_map(|l| {
            serde_json::from_str::<Value>(l.trim())
                .ok()
                .filter(|v| v.get("id").is_some())
        })
}
