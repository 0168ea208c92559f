//! Nothing of a command's process group survives: timeout, cancellation, a dropped call,
//! leftovers after exit, the end of the session.

use serde_json::json;
use toolgate_shell::ShellLimits;

use crate::fixtures::{
    Env, eventually, field, host_group, live_in_group, marker, number_after, wait_for_file,
    with_marker,
};

/// A command that starts grandchildren which would outlive a naive kill of the shell.
fn tree(m: &str) -> String {
    format!("sleep {m} & (sleep {m}; echo never) & sleep {m}; wait")
}

#[tokio::test]
async fn timeout_kills_the_grandchildren_too() {
    let env = Env::new();
    let m = marker();
    let out = env
        .call(
            "run_shell",
            json!({ "command": tree(&m), "timeout_ms": 1000 }),
        )
        .await;
    assert!(out.is_error);
    assert_eq!(field(&out, "status"), "timed_out");
    assert!(
        out.text
            .starts_with("command failed (timeout): still running after 1.00 s (timeout_ms 1000)"),
        "{}",
        out.text
    );
    assert!(
        out.text.contains("its process group was stopped"),
        "{}",
        out.text
    );
    assert_eq!(with_marker(&m), vec![], "processes of the command are left");
}

#[tokio::test]
async fn a_group_that_ignores_sigterm_gets_sigkill() {
    let env = Env::new();
    let m = marker();
    let cmd = format!("trap '' TERM; sh -c 'trap \"\" TERM; sleep {m}' & sleep {m}");
    let out = env
        .call("run_shell", json!({ "command": cmd, "timeout_ms": 1000 }))
        .await;
    assert_eq!(field(&out, "status"), "timed_out");
    assert!(
        out.text.contains("then SIGKILL after the 1.00 s grace"),
        "{}",
        out.text
    );
    assert_eq!(with_marker(&m), vec![]);
}

#[tokio::test]
async fn cancellation_kills_the_group() {
    let env = Env::new();
    let marker = env.root.join("started");
    let ctx = env.ctx();
    let cancel = ctx.cancel.clone();
    let cmd = format!(
        "sleep 1000 & (sleep 1000) & echo $$ > {}; wait",
        marker.display()
    );
    let call = env.call_in("run_shell", json!({ "command": cmd }), ctx);
    let cancel_when_started = async {
        let pgid = host_group(wait_for_file(&marker).await.trim().parse().unwrap());
        assert!(!live_in_group(pgid).is_empty());
        cancel.cancel();
        pgid
    };
    let (out, pgid) = tokio::join!(call, cancel_when_started);
    assert!(out.is_error);
    assert_eq!(field(&out, "status"), "killed");
    assert!(
        out.text.starts_with("command cancelled after"),
        "{}",
        out.text
    );
    assert_eq!(live_in_group(pgid), vec![]);
}

#[tokio::test]
async fn a_dropped_call_kills_the_group() {
    let env = Env::new();
    let marker = env.root.join("started");
    let cmd = format!("sleep 1000 & echo $$ > {}; wait", marker.display());
    let mut call = Box::pin(env.call("run_shell", json!({ "command": cmd })));
    let text = tokio::select! {
        _ = &mut call => panic!("the command ended by itself"),
        text = wait_for_file(&marker) => text,
    };
    // Found while the shell runs (once killed, its supervisor reaps it at once).
    let pgid = host_group(text.trim().parse::<i32>().unwrap());
    // The dispatcher drops a tool's future when it ignores cancellation past the grace.
    drop(call);
    assert!(
        eventually(|| live_in_group(pgid).is_empty()).await,
        "left alive: {:?}",
        live_in_group(pgid)
    );
}

#[tokio::test]
async fn processes_left_running_after_exit_are_stopped() {
    let env = Env::new();
    // One holds the output pipe, one has let go of it; both would outlive the shell.
    let m = marker();
    let out = env
        .sh(&format!("sleep {m} & (sleep {m} >/dev/null 2>&1 &)"))
        .await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(field(&out, "exit_code"), 0);
    assert!(
        out.text
            .contains("note: 2 processes it left running in its process group were stopped"),
        "{}",
        out.text
    );
    assert_eq!(with_marker(&m), vec![]);
}

#[tokio::test]
async fn ending_the_session_kills_its_jobs() {
    let env = Env::new();
    let mut groups = Vec::new();
    for _ in 0..3 {
        let out = env
            .call(
                "run_shell",
                json!({ "command": "sleep 1000 & sleep 1000", "background": true }),
            )
            .await;
        groups.push(host_group(field(&out, "pid").as_i64().unwrap() as i32));
    }
    assert!(groups.iter().all(|&g| !live_in_group(g).is_empty()));
    let Env {
        session, project, ..
    } = env;
    drop(session);
    for g in groups {
        assert!(
            eventually(|| live_in_group(g).is_empty()).await,
            "group {g} outlived its session: {:?}",
            live_in_group(g)
        );
    }
    drop(project);
}

#[tokio::test]
async fn a_stream_past_its_disk_limit_stops_the_command() {
    let env = Env::with_limits(ShellLimits {
        max_stream_bytes: 100_000,
        ..ShellLimits::default()
    });
    // `yes` never ends by itself: only the limit can stop it.
    let m = marker();
    let out = env.sh(&format!("yes {m}")).await;
    assert!(out.is_error);
    assert_eq!(field(&out, "status"), "killed");
    assert!(
        out.text
            .starts_with("command failed: its stdout passed the 100,000 bytes output limit after"),
        "{}",
        out.text
    );
    let path = field(&out, "stdout")["path"].as_str().unwrap().to_owned();
    assert_eq!(fs_err::metadata(path).unwrap().len(), 100_000);
    assert_eq!(with_marker(&m), vec![]);
}

#[tokio::test]
async fn a_process_that_left_the_group_is_gone_when_the_call_returns() {
    // Regression: setsid took the sleep out of the group and it lived on after the call,
    // holding stdout open. The command's supervisor kills it.
    let env = Env::new();
    let m = marker();
    let out = env.sh(&format!("setsid sleep {m} & echo escaped=$!")).await;
    assert_eq!(field(&out, "exit_code"), 0, "{}", out.text);
    assert!(number_after(&out.text, "escaped=") > 0, "{}", out.text);
    assert_eq!(with_marker(&m), vec![], "{}", out.text);
    assert!(!out.text.contains("still held open"), "{}", out.text);
}
