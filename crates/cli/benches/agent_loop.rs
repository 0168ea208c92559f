//! The agent loop's overhead per turn, excluding the provider and the tools, and the
//! stable-prefix bytes (system + tools as sent) per protocol, with and without a mounted
//! MCP server (a second `toolgate serve`). Runs the real runtime and the real loop against
//! the scripted fake model on loopback.
//!
//! `cargo bench -p toolgate --bench agent_loop [-- TURNS]` (default 200 turns).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::disallowed_methods
)]

use std::sync::Arc;
use std::time::Instant;

use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolgate_agent::{Agent, AgentSettings, Tools};
use toolgate_config::Config;
use toolgate_core::ExposureMode;
use toolgate_core::disclosure::SessionFacts;
use toolgate_providers::fake::{FakeServer, Reply, step};
use toolgate_providers::{Kind, Provider, ProviderConfig, Request};
use toolgate_runtime::Runtime;

async fn measure(kind: Kind, mounted: bool, turns: u32) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("README.md"), "# bench\n").unwrap();
    let mut config = Config {
        roots: vec![root.clone()],
        ..Config::default()
    };
    config.mcp.catalog_cache = false;
    config.disclosure.exposure = if kind.strict_tool_names() {
        ExposureMode::Backfill
    } else {
        ExposureMode::Proxy
    };
    if mounted {
        let server: toolgate_gateway::McpServerConfig = toml::from_str(&format!(
            "command = \"{}\"\nargs = [\"serve\", \"--root\", \"{}\"]\n",
            env!("CARGO_BIN_EXE_toolgate"),
            root.display()
        ))
        .unwrap();
        config.mcp_servers.insert("inner".into(), server);
    }
    let runtime = Runtime::with_facts(config, &root, &SessionFacts::default()).unwrap();
    runtime.gateway.start_all().await;
    let mut script: Vec<_> = (0..turns)
        .map(|_| step(Reply::call("list_dir", json!({}))))
        .collect();
    script.push(step(Reply::text("done")));
    let fake = FakeServer::start(kind, script).await;
    let provider = Provider::new(
        "bench",
        &ProviderConfig {
            kind,
            base_url: Some(fake.url().to_owned()),
            model: Some("bench".into()),
            ..ProviderConfig::default()
        },
        |_| None,
    )
    .unwrap();
    let tools = Tools {
        dispatcher: Arc::clone(&runtime.dispatcher),
        disclosure: Arc::clone(&runtime.disclosure),
        render: runtime.render.clone(),
        spill: Some(Arc::clone(&runtime.spill)),
        root: root.clone(),
    };
    let settings = AgentSettings {
        max_turns: turns + 1,
        ..AgentSettings::default()
    };
    let mut agent = Agent::new(
        tools,
        provider.clone(),
        settings,
        toolgate_core::Approval::Nobody,
    );
    agent.record_to(&root.join(".toolgate/sessions")).unwrap();
    let prefix = agent.stable_prefix_bytes();
    let (array, stable) = agent.tool_array();
    let outcome = agent
        .run(
            "list the folder many times",
            &mut |_| {},
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(outcome.turns, turns + 1, "{outcome:?}");
    // Building the body of the last, longest request (inside the provider's time above).
    let started = Instant::now();
    let rounds = 20;
    let mut bytes = 0;
    for _ in 0..rounds {
        let body = provider.body(&Request {
            system: agent.system(),
            tools: &array,
            stable_tools: stable,
            messages: agent.messages(),
        });
        bytes = serde_json::to_vec(&body).unwrap().len();
    }
    let body_us = started.elapsed().as_micros() as f64 / f64::from(rounds);
    let requests = fake.requests();
    let cached: u64 = outcome.usage.cached_input_tokens;
    println!(
        "{:<9} {:<8} tools {:>3} (stable {:>3})  stable prefix {:>6} B  loop {:>6.1} µs/turn  body of the last request {:>7} B built in {:>7.1} µs  cached {:>4.1} % of prompt tokens  ({} requests)",
        kind.as_str(),
        if mounted { "mounted" } else { "builtin" },
        array.len(),
        stable,
        prefix,
        outcome.timing.loop_us as f64 / f64::from(outcome.turns),
        bytes,
        body_us,
        100.0 * cached as f64 / outcome.usage.input_tokens.max(1) as f64,
        requests.len(),
    );
    runtime.gateway.shutdown().await;
}

fn main() {
    let turns: u32 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(200);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        for mounted in [false, true] {
            for kind in [Kind::OpenAi, Kind::Anthropic] {
                measure(kind, mounted, turns).await;
            }
        }
    });
}
