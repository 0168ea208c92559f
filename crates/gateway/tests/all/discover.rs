//! Stdio servers with `lifecycle = "discover"` are opened with `server/discover` first
//! (2026-07-28) and `initialize` as the fallback, however a 2025 server takes the probe: an
//! error, no answer, or its exit. Without it, a stdio server is opened with `initialize`.

use std::time::Duration;

use serde_json::json;
use toolgate_gateway::{GatewayLimits, Opening, ServerState};

use crate::misbehave::state;
use crate::support::{RigBuilder, fake, setup, stdio};

/// `setup()` with a `fake_server normal` named `name`, `lifecycle = "discover"`, whose
/// `FAKE_DISCOVER` is `discover` (unset: it answers the probe `-32601`), logging to
/// `name.log`.
fn with_fake(builder: RigBuilder, name: &str, discover: Option<&str>) -> RigBuilder {
    let log = builder.dir.path().join(format!("{name}.log"));
    let mut config = stdio(&fake(), &["normal"], &builder.mark);
    config.lifecycle = Some(Opening::Discover);
    let env = config.env.as_mut().unwrap();
    env.insert("FAKE_LOG".to_owned(), log.to_string_lossy().into_owned());
    if let Some(discover) = discover {
        env.insert("FAKE_DISCOVER".to_owned(), discover.to_owned());
    }
    builder.server(name, config)
}

/// The pids the log shows `method` sent to.
fn pids(log: &str, method: &str) -> Vec<String> {
    let prefix = format!("{method} pid=");
    log.lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn a_stdio_server_that_answers_discover_is_mounted_on_2026_07_28() {
    let rig = with_fake(setup(), "modern", Some("answer")).build();
    rig.gateway.start_all().await;
    assert_eq!(state(&rig, "modern"), ServerState::Ready);
    let out = rig.call("mcp__modern__ok", json!({"message": "hi"})).await;
    assert_eq!(out.text, "hi");
    let log = rig.fake_log("modern");
    assert_eq!(pids(&log, "server/discover").len(), 1, "{log}");
    assert!(pids(&log, "initialize").is_empty(), "no handshake: {log}");
    // Every request carries the revision in its own `_meta`.
    assert!(log.contains("tools/list revision=2026-07-28"), "{log}");
    assert!(log.contains("tools/call revision=2026-07-28"), "{log}");
    rig.finish().await;
}

#[tokio::test]
async fn a_stdio_server_that_errors_on_discover_is_initialized_in_the_same_process() {
    // A bound no test would outlast: an error answer must not wait for it.
    let limits = GatewayLimits {
        discover_wait: Duration::from_secs(3600),
        ..GatewayLimits::default()
    };
    let mut builder = setup().limits(limits);
    // `-32601` with the probe's id, and `-32600` without one.
    builder = with_fake(builder, "plain", None);
    builder = with_fake(builder, "picky", Some("invalid"));
    let rig = builder.build();
    rig.gateway.start_all().await;
    for name in ["plain", "picky"] {
        assert_eq!(state(&rig, name), ServerState::Ready, "{name}");
        let log = rig.fake_log(name);
        let probed = pids(&log, "server/discover");
        assert_eq!(probed.len(), 1, "{log}");
        assert_eq!(pids(&log, "initialize"), probed, "the same process: {log}");
        // The probe carries the revision; the requests of a 2025 session do not.
        assert!(
            !log.contains("tools/list revision="),
            "a 2025 server gets no `_meta`: {log}"
        );
        // `initialize` asks for the newest revision that has it, not 2026-07-28.
        assert!(log.contains("initialize asked=2025-11-25"), "{log}");
    }
    let out = rig.call("mcp__picky__ok", json!({"message": "hi"})).await;
    assert_eq!(out.text, "hi");
    rig.finish().await;
}

#[tokio::test]
async fn a_stdio_server_that_exits_on_discover_is_started_again_with_initialize() {
    let rig = with_fake(setup(), "fragile", Some("exit")).build();
    rig.gateway.start_all().await;
    assert_eq!(state(&rig, "fragile"), ServerState::Ready);
    let log = rig.fake_log("fragile");
    let probed = pids(&log, "server/discover");
    let initialized = pids(&log, "initialize");
    assert_eq!(probed.len(), 1, "probed once: {log}");
    assert_eq!(initialized.len(), 1, "{log}");
    assert_ne!(probed, initialized, "a second process: {log}");
    let out = rig.call("mcp__fragile__ok", json!({"message": "hi"})).await;
    assert_eq!(out.text, "hi");
    rig.finish().await;
}

#[tokio::test]
async fn a_stdio_server_that_ignores_discover_is_initialized_after_the_bound() {
    // The default bound (5 s) within the default test startup timeout (20 s): a mount that
    // waited for the probe until the startup timeout would fail.
    let rig = with_fake(setup(), "deaf", Some("ignore")).build();
    rig.gateway.start_all().await;
    assert_eq!(state(&rig, "deaf"), ServerState::Ready);
    let log = rig.fake_log("deaf");
    let probed = pids(&log, "server/discover");
    assert_eq!(probed.len(), 1, "{log}");
    assert_eq!(pids(&log, "initialize"), probed, "the same process: {log}");
    let out = rig.call("mcp__deaf__ok", json!({"message": "hi"})).await;
    assert_eq!(out.text, "hi");
    rig.finish().await;
}

#[tokio::test]
async fn a_stdio_server_that_answers_discover_late_and_refuses_initialize_is_started_again() {
    let rig = with_fake(setup(), "slow", Some("late")).build();
    rig.gateway.start_all().await;
    assert_eq!(state(&rig, "slow"), ServerState::Ready);
    let log = rig.fake_log("slow");
    let probed = pids(&log, "server/discover");
    let initialized = pids(&log, "initialize");
    assert_eq!(probed.len(), 1, "probed once: {log}");
    assert_eq!(initialized.len(), 2, "refused, then answered: {log}");
    assert_eq!(initialized[0], probed[0], "{log}");
    assert_ne!(initialized[1], probed[0], "a second process: {log}");
    let out = rig.call("mcp__slow__ok", json!({"message": "hi"})).await;
    assert_eq!(out.text, "hi");
    rig.finish().await;
}

#[tokio::test]
async fn a_stdio_server_that_ignores_discover_gets_at_most_a_quarter_of_its_startup_timeout() {
    // A bound longer than the startup timeout is cut to a quarter of it (5 s of 20 s, as the default).
    let limits = GatewayLimits {
        discover_wait: Duration::from_secs(3600),
        ..GatewayLimits::default()
    };
    let rig = with_fake(setup().limits(limits), "deaf", Some("ignore")).build();
    rig.gateway.start_all().await;
    assert_eq!(state(&rig, "deaf"), ServerState::Ready);
    rig.finish().await;
}

#[tokio::test]
async fn a_stdio_server_is_opened_with_initialize_unless_its_config_says_discover() {
    let builder = setup();
    let log = builder.dir.path().join("plain.log");
    let mut config = stdio(&fake(), &["normal"], &builder.mark);
    let env = config.env.as_mut().unwrap();
    env.insert("FAKE_LOG".to_owned(), log.to_string_lossy().into_owned());
    env.insert("FAKE_DISCOVER".to_owned(), "answer".to_owned());
    let rig = builder.server("plain", config).build();
    rig.gateway.start_all().await;
    assert_eq!(state(&rig, "plain"), ServerState::Ready);
    let log = rig.fake_log("plain");
    assert!(
        pids(&log, "server/discover").is_empty(),
        "not probed: {log}"
    );
    assert_eq!(pids(&log, "initialize").len(), 1, "{log}");
    rig.finish().await;
}
