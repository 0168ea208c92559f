//! The gateway's own cost per call, in one process: `echo` on server-everything through a
//! bare rmcp client, then through the gateway and the dispatcher (schema check, budget-free
//! dispatch, proxy, result conversion). Run by `bench/mcp_gateway.py`, or directly:
//! `cargo run --release -p toolgate-gateway --example overhead [CALLS]`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::json;
use toolgate_core::{CallContext, DispatchLimits, Dispatcher, Policy, RawArgs, Registry, Scope};
use toolgate_gateway::{Discovered, Gateway, GatewayLimits, McpServerConfig, ServerSpec};

fn median(mut v: Vec<u128>) -> u128 {
    v.sort_unstable();
    v[v.len() / 2]
}

// One thread: this measures the work, not thread wake-ups, which on a loaded 2-core machine
// swing a multi-threaded run between 70 and 400 us for the same code.
#[tokio::main(flavor = "current_thread")]
async fn main() {
    let calls: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000);
    let peers = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.cache/peers/npm/node_modules");
    let node = peers.join("node/bin/node");
    let everything = peers.join("@modelcontextprotocol/server-everything/dist/index.js");
    let args = |i: usize| {
        json!({"message": format!("m{i}")})
            .as_object()
            .unwrap()
            .clone()
    };

    let mut cmd = tokio::process::Command::new(&node);
    cmd.arg(&everything)
        .arg("stdio")
        .stderr(std::process::Stdio::null());
    let client = ().serve(rmcp::transport::TokioChildProcess::new(cmd).unwrap()).await.unwrap();
    let mut bare = Vec::new();
    for i in 0..calls + 100 {
        let started = Instant::now();
        let params = CallToolRequestParams::new("echo").with_arguments(args(i));
        client.call_tool(params).await.unwrap();
        if i >= 100 {
            bare.push(started.elapsed().as_micros());
        }
    }
    client.cancel().await.unwrap();

    let registry = Arc::new(Registry::new());
    let config = McpServerConfig {
        command: Some(node.to_string_lossy().into_owned()),
        args: Some(vec![
            everything.to_string_lossy().into_owned(),
            "stdio".to_owned(),
        ]),
        ..McpServerConfig::default()
    };
    let spec = ServerSpec::resolve("e", &config, String::new(), Path::new("/tmp"));
    let discovered = Discovered {
        servers: vec![spec],
        problems: Vec::new(),
    };
    let gateway = Gateway::new(discovered, GatewayLimits::default(), &registry).unwrap();
    gateway.start_all().await;
    let dispatcher = Dispatcher::new(
        registry,
        Scope::global(),
        Policy::allow_all(),
        DispatchLimits::default(),
    );
    let mut through = Vec::new();
    for i in 0..calls + 100 {
        let started = Instant::now();
        let args = RawArgs::Json(serde_json::Value::Object(args(i)));
        let out = dispatcher
            .call("mcp__e__echo", args, CallContext::unattended())
            .await;
        assert!(!out.is_error, "{}", out.text);
        if i >= 100 {
            through.push(started.elapsed().as_micros());
        }
    }
    gateway.shutdown().await;
    let (bare, through) = (median(bare), median(through));
    println!(
        "   in one process: bare rmcp client {bare} us, through the gateway {through} us, gateway's own share {} us (medians of {calls})",
        through.saturating_sub(bare)
    );
}
