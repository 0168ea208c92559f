//! The MCP server in-process over an in-memory stream: cancellation, client disconnect,
//! progress, `list_changed`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use toolgate_core::{
    CallContext, Concurrency, DispatchLimits, Dispatcher, DynTool, Policy, Registry, RenderOptions,
    Scope, StaticProvider, ToolError, ToolMeta, ToolOutput, ToolSpec,
};
use toolgate_mcp::{ToolgateServer, serve_streams};

const WAIT: Duration = Duration::from_secs(10);

/// A tool that runs until cancelled (or 30 s), reporting progress, and records what happened.
struct Slow {
    spec: ToolSpec,
    meta: ToolMeta,
    started: Arc<AtomicUsize>,
    cancelled: Arc<AtomicBool>,
}

impl Slow {
    fn new(name: &str) -> Self {
        let mut schema = Map::new();
        schema.insert("type".into(), "object".into());
        Self {
            spec: ToolSpec {
                name: name.into(),
                description: "Waits until cancelled.".into(),
                input_schema: Arc::new(schema),
            },
            meta: ToolMeta {
                concurrency: Concurrency::ReadOnly,
                action: "test".into(),
                ..ToolMeta::default()
            },
            started: Arc::default(),
            cancelled: Arc::default(),
        }
    }
}

impl DynTool for Slow {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn meta(&self) -> &ToolMeta {
        &self.meta
    }
    fn call(
        &self,
        _args: Value,
        ctx: CallContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let started = Arc::clone(&self.started);
        let cancelled = Arc::clone(&self.cancelled);
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
    }
}

struct Client {
    write: DuplexStream,
    lines: Lines<BufReader<DuplexStream>>,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Client {
    async fn start(registry: Arc<Registry>) -> Self {
        let dispatcher = Arc::new(Dispatcher::new(
            registry,
            Scope::global(),
            Policy::allow_all(),
            DispatchLimits::default(),
        ));
        let server = ToolgateServer::new(dispatcher, RenderOptions::default(), String::new());
        Self::start_server(server).await
    }

    async fn start_server(server: ToolgateServer) -> Self {
        let (write, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, read) = tokio::io::duplex(1 << 16);
        let server = tokio::spawn(serve_streams(server, server_in, server_out));
        let mut client = Self {
            write,
            lines: BufReader::new(read).lines(),
            server,
        };
        client
            .send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}))
            .await;
        let reply = client.next_where(|m| m["id"] == 0).await;
        assert!(
            reply["result"]["capabilities"]["tools"]["listChanged"] == true,
            "{reply}"
        );
        client
            .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        client
    }

    async fn send(&mut self, message: Value) {
        self.write
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
    }

    async fn next_where(&mut self, want: impl Fn(&Value) -> bool) -> Value {
        tokio::time::timeout(WAIT, async {
            loop {
                let line = self
                    .lines
                    .next_line()
                    .await
                    .unwrap()
                    .expect("server closed");
                let message: Value = serde_json::from_str(&line).unwrap();
                if want(&message) {
                    return message;
                }
            }
        })
        .await
        .expect("expected message did not arrive")
    }
}

fn registry_with(tool: Arc<dyn DynTool>) -> Arc<Registry> {
    let registry = Arc::new(Registry::new());
    registry
        .register(None, Arc::new(StaticProvider::new("test", vec![tool])), 0)
        .unwrap();
    registry
}

async fn until(flag: impl Fn() -> bool) {
    tokio::time::timeout(WAIT, async {
        while !flag() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("condition not reached in time");
}

#[tokio::test]
async fn progress_is_forwarded_and_cancellation_stops_the_tool() {
    let slow = Arc::new(Slow::new("slow"));
    let (started, cancelled) = (Arc::clone(&slow.started), Arc::clone(&slow.cancelled));
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
    let slow = Arc::new(Slow::new("slow"));
    let (started, cancelled) = (Arc::clone(&slow.started), Arc::clone(&slow.cancelled));
    let mut client = Client::start(registry_with(slow)).await;
    client
        .send(json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "slow", "arguments": {}}}))
        .await;
    until(|| started.load(Ordering::SeqCst) == 1).await;
    let Client {
        write,
        lines,
        server,
    } = client;
    drop(write);
    drop(lines);
    tokio::time::timeout(WAIT, server)
        .await
        .expect("session did not end")
        .unwrap()
        .ok();
    until(|| cancelled.load(Ordering::SeqCst)).await;
}

#[tokio::test]
async fn registry_changes_reach_the_client_as_list_changed() {
    let registry = registry_with(Arc::new(Slow::new("first")));
    let mut client = Client::start(Arc::clone(&registry)).await;
    client
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}))
        .await;
    let list = client.next_where(|m| m["id"] == 1).await;
    assert_eq!(list["result"]["tools"].as_array().unwrap().len(), 1);
    // Give the watcher a moment to subscribe after `initialized`.
    tokio::time::sleep(Duration::from_millis(100)).await;
    registry
        .register(
            None,
            Arc::new(StaticProvider::new(
                "late",
                vec![Arc::new(Slow::new("second")) as Arc<dyn DynTool>],
            )),
            0,
        )
        .unwrap();
    client
        .next_where(|m| m["method"] == "notifications/tools/list_changed")
        .await;
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
