//! `toolgate mcp list`: each server printed as soon as it is ready or failed, a spinner on
//! a terminal while others start, and `--timeout` to stop waiting.

use std::collections::BTreeSet;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use futures::StreamExt;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{Value, json};
use toolgate_gateway::ServerStatus;
use toolgate_runtime::Runtime;

use super::{ListArgs, block, header, seconds, status_json};

/// What the spinner says while servers start: `starting 2 servers: a, b`.
fn waiting_for(pending: &BTreeSet<String>) -> String {
    let names: Vec<&str> = pending.iter().map(String::as_str).collect();
    let what = if names.len() == 1 {
        "server"
    } else {
        "servers"
    };
    format!("starting {} {what}: {}", names.len(), names.join(", "))
}

/// The spinner on stderr, only when stderr is a terminal: nothing decorative on a pipe.
fn spinner(pending: &BTreeSet<String>) -> Option<ProgressBar> {
    if pending.is_empty() || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new_spinner().with_message(waiting_for(pending));
    if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(100));
    Some(bar)
}

fn status_of(runtime: &Runtime, name: &str) -> Option<ServerStatus> {
    runtime
        .gateway
        .status()
        .into_iter()
        .find(|s| s.name == name)
}

/// Starts the servers and reports each as it is known; returns the ones still starting
/// when `timeout` passed (in name order). `each` gets every other server's status.
async fn start(
    runtime: &Runtime,
    timeout: Option<Duration>,
    mut each: impl FnMut(ServerStatus),
) -> BTreeSet<String> {
    let mut pending: BTreeSet<String> = runtime.gateway.servers().map(|s| s.name.clone()).collect();
    let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
    let mut started = runtime.gateway.start_each();
    loop {
        let next = match deadline {
            Some(at) => match tokio::time::timeout_at(at, started.next()).await {
                Ok(next) => next,
                Err(_) => break,
            },
            None => started.next().await,
        };
        let Some(name) = next else { break };
        pending.remove(&name);
        if let Some(status) = status_of(runtime, &name) {
            each(status);
        }
    }
    pending
}

pub(super) async fn list(runtime: &Runtime, args: &ListArgs) -> ExitCode {
    if args.json {
        // One document: printed once every server is known (or the timeout passed).
        let late = start(runtime, args.timeout, |_| {}).await;
        let servers: Vec<Value> = runtime
            .gateway
            .status()
            .iter()
            .map(|s| {
                let mut v = status_json(s);
                if late.contains(&s.name) {
                    v["late"] = json!(true);
                }
                v
            })
            .collect();
        let problems: Vec<Value> = runtime
            .gateway
            .problems()
            .iter()
            .map(|p| json!({ "path": p.path, "reason": p.reason }))
            .collect();
        let collisions = runtime.gateway.resource_collisions();
        let body = json!({
            "servers": servers,
            "problems": problems,
            "resource_collisions": collisions,
        });
        outln!(
            "{}",
            serde_json::to_string_pretty(&body).unwrap_or_default()
        );
        return ExitCode::SUCCESS;
    }
    for problem in runtime.gateway.problems() {
        eprintln!("warning: {problem}");
    }
    let names: BTreeSet<String> = runtime.gateway.servers().map(|s| s.name.clone()).collect();
    if names.is_empty() {
        if runtime.gateway.problems().is_empty() {
            eprintln!(
                "no MCP servers configured; add [mcp_servers.NAME] to .toolgate/config.toml or a .mcp.json"
            );
        }
        return ExitCode::SUCCESS;
    }
    let name_w = names.iter().map(String::len).max().unwrap_or(4).max(4);
    out!("{}", header(name_w));
    let bar = spinner(&names);
    let mut pending = names.clone();
    let late = start(runtime, args.timeout, |status| {
        pending.remove(&status.name);
        let text = block(&status, name_w);
        match &bar {
            Some(bar) => {
                bar.suspend(|| out!("{text}"));
                bar.set_message(waiting_for(&pending));
            }
            None => out!("{text}"),
        }
    })
    .await;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    for name in &late {
        if let Some(status) = status_of(runtime, name) {
            out!("{}", block(&status, name_w));
            let waited = args.timeout.map(seconds).unwrap_or_default();
            outln!(
                "{:<name_w$}  note: no answer within --timeout {waited}; it may still start (its startup timeout is {})",
                "",
                seconds(status.startup_timeout)
            );
        }
    }
    let collisions = runtime.gateway.resource_collisions();
    for line in toolgate_gateway::describe_collisions(&collisions) {
        outln!("note: {line}");
    }
    ExitCode::SUCCESS
}
