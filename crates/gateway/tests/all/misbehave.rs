//! Servers that hang, crash, print garbage, list 1,000 tools or change their tools: each is
//! isolated, reported clearly, and leaves no process behind.

use std::time::{Duration, Instant};

use serde_json::json;
use toolgate_core::{CallContext, Media, Policy, RawArgs};
use toolgate_gateway::{GatewayLimits, ServerState};

use toolgate_test_support::wait_until;

use crate::support::{fake, setup, stdio};

pub fn state(rig: &crate::support::Rig, name: &str) -> ServerState {
    rig.gateway
        .status()
        .into_iter()
        .find(|s| s.name == name)
        .unwrap()
        .state
}

#[tokio::test]
async fn a_server_that_hangs_on_initialize_is_stopped_with_its_children_and_blocks_nobody() {
    let builder = setup();
    let mut hang = stdio(&fake(), &["hang-init"], &builder.mark);
    hang.startup_timeout_sec = Some(1.0);
    let rig = builder
        .server("hang", hang)
        .fake("good", &["normal"])
        .build();
    rig.gateway.start();
    // The built-in is listed at once; the snapshot says a server is still starting.
    let snap = rig.dispatcher.snapshot();
    assert!(snap.get("builtin_echo").is_some());
    assert!(
        snap.incomplete,
        "starting servers mark the snapshot incomplete"
    );
    assert!(
        snap.problems.iter().any(|p| p.contains("starting")),
        "{:?}",
        snap.problems
    );
    assert_eq!(
        rig.call("builtin_echo", json!({})).await.text,
        "builtin ok",
        "built-ins are served while a server hangs"
    );
    rig.wait_for_tool("mcp__good__ok", Duration::from_secs(20))
        .await;
    assert_eq!(state(&rig, "good"), ServerState::Ready);
    rig.gateway.settled().await;
    let ServerState::Failed(reason) = state(&rig, "hang") else {
        panic!("hang should have failed")
    };
    assert!(
        reason.contains("did not finish `initialize` within 1 s"),
        "{reason}"
    );
    assert!(
        reason.contains("fake_server starting"),
        "stderr is quoted: {reason}"
    );
    // Failed before it was ever ready: it contributes nothing, and no longer marks the
    // snapshot incomplete.
    let snap = rig.dispatcher.snapshot();
    assert!(!snap.incomplete, "{:?}", snap.problems);
    assert!(!snap.tools.keys().any(|k| k.starts_with("mcp__hang")));
    // Its process group (the server and its `sleep` grandchild) is gone already.
    crate::support::assert_no_survivors_except(&rig.mark, "normal").await;
    rig.finish().await;
}

#[tokio::test]
async fn a_server_that_prints_garbage_fails_with_the_garbage_quoted() {
    let builder = setup();
    let mut garbage = stdio(&fake(), &["garbage"], &builder.mark);
    garbage.startup_timeout_sec = Some(1.0);
    let rig = builder.server("noisy", garbage).build();
    rig.gateway.start_all().await;
    let ServerState::Failed(reason) = state(&rig, "noisy") else {
        panic!("noisy should have failed")
    };
    assert!(
        reason.contains("not JSON-RPC (first: `Hello! I am a server that logs to stdout.`)"),
        "{reason}"
    );
    assert!(reason.contains("log to stderr"), "{reason}");
    rig.finish().await;
}

#[tokio::test]
async fn a_missing_program_fails_at_once_with_a_hint() {
    let builder = setup();
    let missing = stdio("/no/such/server", &[], &builder.mark);
    let rig = builder.server("missing", missing).build();
    let started = Instant::now();
    rig.gateway.start_all().await;
    assert!(started.elapsed() < Duration::from_secs(5));
    let ServerState::Failed(reason) = state(&rig, "missing") else {
        panic!("should fail")
    };
    assert!(reason.contains("no such program"), "{reason}");
    rig.finish().await;
}

#[tokio::test]
async fn a_server_that_exits_mid_call_fails_the_call_at_once_and_restarts_on_next_use() {
    let rig = setup().fake("crashy", &["normal"]).build();
    rig.gateway.start_all().await;
    let started = Instant::now();
    let out = rig.call("mcp__crashy__boom", json!({})).await;
    assert!(out.is_error);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the pending call fails when the server dies, not at its timeout"
    );
    assert!(
        out.text.contains(
            "MCP server `crashy` stopped while `boom` was running (exited (exit status 3)"
        ),
        "{}",
        out.text
    );
    assert!(
        out.text.contains("about to crash on purpose"),
        "{}",
        out.text
    );
    assert!(
        out.text
            .contains("restarted (or reconnected) on the next call"),
        "{}",
        out.text
    );
    // Its tools stay listed; the next call restarts it.
    assert!(rig.names().contains(&"mcp__crashy__ok".to_owned()));
    let out = rig
        .call("mcp__crashy__ok", json!({"message": "back"}))
        .await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(out.text, "back");
    assert_eq!(state(&rig, "crashy"), ServerState::Ready);
    // A second crash right away: the restart now waits (backoff), and says so.
    let out = rig.call("mcp__crashy__boom", json!({})).await;
    assert!(out.is_error);
    let out = rig.call("mcp__crashy__ok", json!({})).await;
    assert!(out.is_error);
    assert!(
        out.text.contains("the next restart is allowed in"),
        "{}",
        out.text
    );
    rig.finish().await;
}

/// Kills every process whose command line is `sleep MARKER` (a test's setsid orphan).
fn kill_sleepers(marker: &str) -> usize {
    let mut killed = 0;
    for entry in fs_err::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = fs_err::read(entry.path().join("cmdline")).unwrap_or_default();
        if cmdline == format!("sleep\0{marker}\0").as_bytes() {
            if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
            killed += 1;
        }
    }
    killed
}

#[tokio::test]
async fn a_crash_is_seen_when_the_server_exits_even_if_its_child_holds_the_pipe() {
    // Regression: with a `setsid` child holding the server's stdout, the crash went unseen:
    // every later call timed out and the server was never restarted.
    let rig = setup().fake("orphaner", &["normal"]).build();
    rig.gateway.start_all().await;
    let marker = format!("30.{}", std::process::id());
    let out = rig
        .call("mcp__orphaner__boom_orphan", json!({"marker": &marker}))
        .await;
    assert!(out.is_error);
    assert!(
        out.text
            .contains("MCP server `orphaner` stopped while `boom_orphan` was running"),
        "{}",
        out.text
    );
    let out = rig
        .call("mcp__orphaner__ok", json!({"message": "back"}))
        .await;
    assert!(!out.is_error, "restarted on the next call: {}", out.text);
    assert_eq!(out.text, "back");
    // The orphan left the process group; the server's supervisor killed it when the server
    // exited, before the crash was reported.
    assert_eq!(kill_sleepers(&marker), 0, "the orphan outlived its server");
    rig.finish().await;
}

#[tokio::test]
async fn a_thousand_tools_over_ten_pages_are_all_mounted() {
    let rig = setup().fake("many", &["many", "1000", "100"]).build();
    rig.gateway.start_all().await;
    let names = rig.names();
    let mounted: Vec<_> = names
        .iter()
        .filter(|n| n.starts_with("mcp__many__"))
        .collect();
    assert_eq!(mounted.len(), 1000);
    assert!(names.contains(&"mcp__many__tool_0999".to_owned()));
    let status = rig.gateway.status();
    assert_eq!(status[0].tools, 1000);
    assert!(status[0].notes.is_empty(), "{:?}", status[0].notes);
    let out = rig.call("mcp__many__tool_0500", json!({})).await;
    assert!(
        out.text.contains("no tool tool_0500"),
        "routed by its own name"
    );
    rig.finish().await;
}

#[tokio::test]
async fn listing_caps_stop_a_server_that_lists_too_much() {
    let limits = GatewayLimits {
        max_tools_per_server: 250,
        ..GatewayLimits::default()
    };
    let rig = setup()
        .limits(limits)
        .fake("many", &["many", "1000", "100"])
        .build();
    rig.gateway.start_all().await;
    let status = rig.gateway.status();
    assert_eq!(status[0].tools, 250);
    assert!(
        status[0].notes[0].contains("only the first 250 tools are mounted"),
        "{:?}",
        status[0].notes
    );
    rig.finish().await;
    let limits = GatewayLimits {
        max_list_pages: 3,
        ..GatewayLimits::default()
    };
    let rig = setup()
        .limits(limits)
        .fake("many", &["many", "1000", "100"])
        .build();
    rig.gateway.start_all().await;
    let status = rig.gateway.status();
    assert_eq!(status[0].tools, 300);
    assert!(status[0].notes[0].contains("stopped after 3 pages"));
    rig.finish().await;
}

#[tokio::test]
async fn list_changed_from_a_server_refetches_and_bumps_the_registry() {
    let rig = setup().fake("shifty", &["normal"]).build();
    rig.gateway.start_all().await;
    assert!(rig.names().contains(&"mcp__shifty__bump".to_owned()));
    let generation = rig.registry.generation();
    let out = rig.call("mcp__shifty__bump", json!({})).await;
    assert_eq!(out.text, "bumped");
    rig.wait_for_tool("mcp__shifty__v2", Duration::from_secs(10))
        .await;
    assert!(rig.registry.generation() > generation);
    assert!(
        !rig.names().contains(&"mcp__shifty__bump".to_owned()),
        "a removed tool leaves no ghost"
    );
    rig.finish().await;
}

#[tokio::test]
async fn a_timeout_sends_notifications_cancelled_downstream() {
    let builder = setup();
    let log = builder.dir.path().join("slow.log");
    let mut slow = stdio(&fake(), &["normal"], &builder.mark);
    slow.tool_timeout_sec = Some(0.5);
    slow.env
        .as_mut()
        .unwrap()
        .insert("FAKE_LOG".to_owned(), log.to_string_lossy().into_owned());
    let rig = builder.server("slow", slow).build();
    rig.gateway.start_all().await;
    let out = rig.call("mcp__slow__sleep", json!({"ms": 5000})).await;
    assert!(out.is_error);
    assert!(out.text.contains("timed out after 500 ms"), "{}", out.text);
    // Regression: the hint spoke of paths and patterns, as for a built-in file tool.
    assert!(
        out.text.contains("its MCP server did not answer in time"),
        "{}",
        out.text
    );
    assert!(!out.text.contains("narrow the request"), "{}", out.text);
    wait_until("the cancellation to reach the server", || {
        rig.fake_log("slow").contains("cancelled")
    })
    .await;
    let log = rig.fake_log("slow");
    let call_id = log
        .lines()
        .find_map(|l| l.strip_prefix("call sleep "))
        .unwrap();
    assert!(log.contains(&format!("cancelled {call_id}")), "{log}");
    // The server is still fine afterwards.
    let out = rig
        .call("mcp__slow__ok", json!({"message": "still here"}))
        .await;
    assert_eq!(out.text, "still here");
    rig.finish().await;
}

#[tokio::test]
async fn arguments_are_checked_against_the_servers_schema_before_sending() {
    let rig = setup().fake("strict", &["normal"]).build();
    rig.gateway.start_all().await;
    let out = rig.call("mcp__strict__sleep", json!({"ms": "soon"})).await;
    assert!(out.is_error);
    assert_eq!(
        out.text,
        "error: invalid arguments for `mcp__strict__sleep`: field `ms`: \"soon\" is not of type \"integer\"; check the tool's input schema"
    );
    assert!(
        !rig.fake_log("strict").contains("call sleep"),
        "nothing was sent"
    );
    rig.finish().await;
}

#[tokio::test]
async fn a_null_for_an_optional_argument_means_not_given() {
    let rig = setup().fake("nulls", &["normal"]).build();
    rig.gateway.start_all().await;
    // `message` is an optional string: a model's `null` is left out, not refused.
    let out = rig.call("mcp__nulls__ok", json!({"message": null})).await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(out.text, "ok");
    // A wrong value beside it is still refused, and nothing is sent.
    let out = rig
        .call("mcp__nulls__sleep", json!({"ms": "soon", "other": null}))
        .await;
    assert!(out.is_error);
    assert!(out.text.contains("\"soon\" is not of type"), "{}", out.text);
    assert!(
        !rig.fake_log("nulls").contains("call sleep"),
        "nothing was sent"
    );
    rig.finish().await;
}

#[tokio::test]
async fn permissions_apply_by_namespace_and_by_action() {
    let policy = Policy::from_lists(&[], &[], &["mcp__locked__*".to_owned()]).unwrap();
    let rig = setup()
        .policy(policy)
        .fake("locked", &["normal"])
        .fake("open", &["normal"])
        .build();
    rig.gateway.start_all().await;
    let out = rig.call("mcp__locked__ok", json!({})).await;
    assert!(out.is_error);
    assert!(out.text.contains("blocked by the rule"), "{}", out.text);
    assert_eq!(rig.call("mcp__open__ok", json!({})).await.text, "ok");
    rig.finish().await;
    let policy = Policy::from_lists(&[], &[], &["mcp.write".to_owned()]).unwrap();
    let rig = setup().policy(policy).fake("srv", &["normal"]).build();
    rig.gateway.start_all().await;
    assert!(rig.call("mcp__srv__bump", json!({})).await.is_error);
    assert_eq!(rig.call("mcp__srv__ok", json!({})).await.text, "ok");
    rig.finish().await;
}

#[tokio::test]
async fn large_results_are_spilled_by_the_budget_and_images_pass_through() {
    let rig = setup().with_budget().fake("big", &["normal"]).build();
    rig.gateway.start_all().await;
    let out = rig.call("mcp__big__big", json!({"chars": 200_000})).await;
    assert!(!out.is_error);
    assert!(out.text.len() < 10_000, "the model gets an excerpt");
    assert!(
        out.text.contains("read_file"),
        "and a pointer: {}",
        out.text
    );
    assert!(out.is_truncated());
    let spill = out.spills[0].path.to_str().unwrap();
    let whole = std::fs::read_to_string(rig.dir.path().join(spill))
        .or_else(|_| std::fs::read_to_string(spill))
        .unwrap();
    let expected: String = (0..20_000).map(|i| format!("line {i:04}\n")).collect();
    assert_eq!(whole, expected, "nothing is lost");
    let out = rig.call("mcp__big__image", json!({})).await;
    assert!(matches!(&out.media[..], [Media::Image { mime, .. }] if mime == "image/png"));
    rig.finish().await;
}

#[tokio::test]
async fn a_log_like_servers_output_is_compressed_with_every_failure_kept() {
    // Log-like mounted tools get the same compression as run_shell.
    let mut config = stdio(&fake(), &["normal"], &crate::support::mark());
    config.log_like = Some(true);
    let rig = setup().with_budget().server("ci", config).build();
    rig.gateway.start_all().await;
    let out = rig.call("mcp__ci__testlog", json!({})).await;
    assert!(!out.is_error, "{}", out.text);
    for needle in [
        "test suite::broken ... FAILED",
        "assertion `left == right` failed: the answer",
        "test result: FAILED. 3000 passed; 1 failed",
    ] {
        assert!(out.text.contains(needle), "{needle}: {}", out.text);
    }
    assert!(out.text.len() < 8_000, "{} chars", out.text.len());
    assert_eq!(out.spills.len(), 1);
    assert_eq!(out.spills[0].kind, toolgate_core::SpillKind::Compressed);
    rig.finish().await;
}

#[tokio::test]
async fn shutdown_during_a_call_fails_the_call_and_leaves_nothing_running() {
    let rig = setup().fake("busy", &["normal"]).build();
    rig.gateway.start_all().await;
    let call = rig.dispatcher.call(
        "mcp__busy__sleep",
        RawArgs::Json(json!({"ms": 30_000})),
        CallContext::unattended(),
    );
    let (out, ()) = tokio::join!(call, async {
        wait_until("the call to reach the server", || {
            rig.fake_log("busy").contains("call sleep")
        })
        .await;
        rig.gateway.shutdown().await;
    });
    assert!(out.is_error);
    assert!(out.text.contains("shutting down"), "{}", out.text);
    rig.finish().await;
}

#[tokio::test]
async fn one_failing_server_leaves_the_others_working() {
    let builder = setup();
    let mark = builder.mark.clone();
    let mut hang = stdio(&fake(), &["hang-init"], &mark);
    hang.startup_timeout_sec = Some(1.0);
    let missing = stdio("/no/such/server", &[], &mark);
    let mut garbage = stdio(&fake(), &["garbage"], &mark);
    garbage.startup_timeout_sec = Some(1.0);
    let rig = builder
        .server("a_hang", hang)
        .server("b_missing", missing)
        .server("c_garbage", garbage)
        .fake("d_good", &["normal"])
        .build();
    rig.gateway.start_all().await;
    let words: Vec<_> = rig.gateway.status().into_iter().map(|s| s.state).collect();
    assert!(matches!(words[0], ServerState::Failed(_)));
    assert!(matches!(words[1], ServerState::Failed(_)));
    assert!(matches!(words[2], ServerState::Failed(_)));
    assert_eq!(words[3], ServerState::Ready);
    assert_eq!(rig.call("mcp__d_good__ok", json!({})).await.text, "ok");
    rig.finish().await;
}

#[tokio::test]
async fn servers_die_with_a_gateway_killed_by_sigkill() {
    use tokio::io::AsyncBufReadExt;
    let mark = crate::support::mark();
    let mut child = tokio::process::Command::new(crate::support::gateway_host())
        .args([fake().as_str(), "normal"])
        .env("TOOLGATE_TEST_MARK", &mark)
        .env("FAKE_STUBBORN", "1")
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let ready = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(ready.starts_with("ready"), "{ready}");
    // In a PID namespace the host's forks carry its environment too: the namespace's
    // keeper and init, the server's relay and supervisor, and the supervisor the keeper
    // forks ahead for the next command (right after handing over this one, so waited for).
    let expected = match toolgate_contain::current() {
        toolgate_contain::Containment::Namespace { .. } => 7,
        toolgate_contain::Containment::ProcessGroup { .. } => 2,
    };
    toolgate_test_support::wait_until("the host, its server and their helpers", || {
        crate::support::survivors(&mark).len() == expected
    })
    .await;
    // No destructor runs on SIGKILL, and the server ignores its stdin closing: only the
    // kernel's parent-death signal ends it.
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    crate::support::assert_no_survivors(&mark).await;
}

#[tokio::test]
async fn a_call_cancelled_during_a_restart_leaves_the_restart_running() {
    let builder = setup();
    let marker = builder.dir.path().join("started-once");
    let log = builder.dir.path().join("slowboot.log");
    let mut config = stdio(&fake(), &["normal"], &builder.mark);
    let env = config.env.as_mut().unwrap();
    env.insert(
        "FAKE_SLOW_RESTART".to_owned(),
        marker.to_string_lossy().into_owned(),
    );
    env.insert("FAKE_LOG".to_owned(), log.to_string_lossy().into_owned());
    let rig = builder.server("slowboot", config).build();
    rig.gateway.start_all().await;
    assert!(rig.call("mcp__slowboot__boom", json!({})).await.is_error);
    // This call restarts the server (3 s to initialize) and is cancelled half-way.
    let ctx = CallContext::unattended();
    let cancel = ctx.cancel.clone();
    let call = rig.dispatcher.call(
        "mcp__slowboot__ok",
        RawArgs::Json(json!({"message": "x"})),
        ctx,
    );
    let (out, ()) = tokio::join!(call, async {
        // Cancel once the restarted server has its `initialize` (which it answers after 3 s).
        wait_until("the restart to begin", || {
            rig.fake_log("slowboot").matches("initialize pid=").count() >= 2
        })
        .await;
        cancel.cancel();
    });
    assert!(out.is_error);
    assert!(out.text.contains("cancelled"), "{}", out.text);
    // The restart finishes on its own; the next call finds the server ready.
    wait_until("the restart to finish", || {
        state(&rig, "slowboot") == ServerState::Ready
    })
    .await;
    let out = rig.call("mcp__slowboot__ok", json!({"message": "y"})).await;
    assert_eq!(out.text, "y");
    rig.finish().await;
}
