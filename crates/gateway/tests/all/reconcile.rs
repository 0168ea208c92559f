//! Config changes applied to a running gateway (`Gateway::reconcile`): only the servers
//! that were added, removed or changed are mounted, unmounted or restarted.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use toolgate_gateway::{Discovered, McpServerConfig, Prefix, ServerSpec, ServerState};

use crate::misbehave::state;
use crate::support::{Rig, fake, setup, stdio};

/// A guard against a hang, not a speed goal.
const GUARD: Duration = Duration::from_secs(60);

/// The servers of a config, as the config files would give them.
fn discovered(rig: &Rig, servers: &[(&str, McpServerConfig)]) -> Discovered {
    Discovered {
        servers: servers
            .iter()
            .map(|(name, config)| {
                ServerSpec::resolve(name, config, "changed".to_owned(), rig.dir.path())
            })
            .collect(),
        problems: Vec::new(),
    }
}

/// Waits until `name` is no longer listed.
async fn wait_until_gone(rig: &Rig, name: &str) {
    let mut changes = rig.registry.subscribe();
    tokio::time::timeout(GUARD, async {
        while rig.names().iter().any(|n| n == name) {
            changes.changed().await.unwrap();
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{name} is still listed: {:?}", rig.names()));
}

fn same_tools(
    a: &[Arc<dyn toolgate_core::DynTool>],
    b: &[Arc<dyn toolgate_core::DynTool>],
) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| Arc::ptr_eq(x, y))
}

#[tokio::test]
async fn a_config_change_mounts_unmounts_and_restarts_only_the_servers_that_changed() {
    let builder = setup();
    let mark = builder.mark.clone();
    let kept = stdio(&fake(), &["normal"], &mark);
    let changed = stdio(&fake(), &["normal"], &mark);
    let rig = builder
        .server("kept", kept.clone())
        .server("changed", changed.clone())
        .build();
    rig.gateway.start();
    rig.wait_for_tool("mcp__kept__ok", GUARD).await;
    rig.wait_for_tool("mcp__changed__ok", GUARD).await;
    let kept_tools = rig.gateway.server_tools("kept").unwrap();
    let changed_tools = rig.gateway.server_tools("changed").unwrap();

    // The same config again changes nothing.
    let report = rig.gateway.reconcile(discovered(
        &rig,
        &[("kept", kept.clone()), ("changed", changed.clone())],
    ));
    assert!(report.is_empty(), "{report}");
    assert_eq!(report.to_string(), "no MCP server changed");

    // One entry changed (a longer tool timeout), one added.
    let mut longer = changed.clone();
    longer.tool_timeout_sec = Some(120.0);
    let added = stdio(&fake(), &["normal"], &mark);
    let report = rig.gateway.reconcile(discovered(
        &rig,
        &[
            ("kept", kept.clone()),
            ("changed", longer.clone()),
            ("added", added.clone()),
        ],
    ));
    assert_eq!(report.added, ["added"]);
    assert_eq!(report.restarted, ["changed"]);
    assert!(report.removed.is_empty(), "{report}");
    assert_eq!(report.to_string(), "added `added`; restarted `changed`");
    // The new server starts by itself (the gateway was started) and is callable.
    rig.wait_for_tool("mcp__added__ok", GUARD).await;
    let out = rig.call("mcp__added__ok", json!({"message": "new"})).await;
    assert_eq!(out.text, "new");
    // The changed one runs again, as configured now.
    rig.wait_for_tool("mcp__changed__ok", GUARD).await;
    let out = rig
        .call("mcp__changed__ok", json!({"message": "again"}))
        .await;
    assert_eq!(out.text, "again");
    let spec = rig.gateway.servers().find(|s| s.name == "changed").unwrap();
    assert_eq!(spec.tool_timeout, Duration::from_secs(120));
    assert!(!same_tools(
        &changed_tools,
        &rig.gateway.server_tools("changed").unwrap()
    ));
    // The untouched one is the very same mount: same proxies, same process.
    assert!(same_tools(
        &kept_tools,
        &rig.gateway.server_tools("kept").unwrap()
    ));
    assert_eq!(state(&rig, "kept"), ServerState::Ready);

    // Removed: its tools go, and so does its process (checked by `finish`).
    let report = rig.gateway.reconcile(discovered(
        &rig,
        &[("kept", kept.clone()), ("changed", longer)],
    ));
    assert_eq!(report.removed, ["added"]);
    assert!(report.added.is_empty() && report.restarted.is_empty());
    wait_until_gone(&rig, "mcp__added__ok").await;
    assert!(rig.gateway.server_tools("added").is_none());
    let out = rig.call("mcp__added__ok", json!({"message": "gone"})).await;
    assert!(out.is_error, "{}", out.text);
    assert!(same_tools(
        &kept_tools,
        &rig.gateway.server_tools("kept").unwrap()
    ));
    rig.finish().await;
}

#[tokio::test]
async fn a_server_added_before_the_gateway_starts_waits_to_be_needed() {
    let rig = setup().build();
    let mark = rig.mark.clone();
    let report = rig.gateway.reconcile(discovered(
        &rig,
        &[("late", stdio(&fake(), &["normal"], &mark))],
    ));
    assert_eq!(report.added, ["late"]);
    // Like the servers configured at the start: not started until a call needs it.
    assert_eq!(state(&rig, "late"), ServerState::NotStarted);
    rig.gateway.start_for("mcp__late__ok").await;
    let out = rig.call("mcp__late__ok", json!({"message": "hi"})).await;
    assert_eq!(out.text, "hi");
    rig.finish().await;
}

#[tokio::test]
async fn a_never_server_that_clashed_is_mounted_once_the_server_it_clashed_with_is_removed() {
    let never = |mark: &str| McpServerConfig {
        prefix: Some(Prefix::Never),
        ..stdio(&fake(), &["normal"], mark)
    };
    let builder = setup();
    let mark = builder.mark.clone();
    let rig = builder
        .server("first", never(&mark))
        .server("second", never(&mark))
        .build();
    rig.gateway.start_all().await;
    assert!(
        matches!(state(&rig, "second"), ServerState::NameClash(_)),
        "{:?}",
        state(&rig, "second")
    );
    let report = rig
        .gateway
        .reconcile(discovered(&rig, &[("second", never(&mark))]));
    assert_eq!(report.removed, ["first"]);
    assert_eq!(report.restarted, ["second"]);
    rig.gateway.start_all().await;
    assert_eq!(state(&rig, "second"), ServerState::Ready);
    let out = rig.call("ok", json!({"message": "from second"})).await;
    assert_eq!(out.text, "from second");
    rig.finish().await;
}
