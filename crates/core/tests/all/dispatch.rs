//! Dispatch: every failure is a result the model can act on; concurrency and order.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::json;
use toolgate_core::{
    Call, CallContext, Concurrency, DispatchLimits, Dispatcher, DynTool, Policy, RawArgs, Registry,
    Scope, ToolOutput, TypedTool,
};

use crate::fixtures::{
    Echo, FAIL_MESSAGE, Probe, Slow, Tracker, dispatcher_with, provider, raw_tool, standard_tools,
};

fn standard() -> Dispatcher {
    dispatcher_with(standard_tools(), Policy::allow_all())
}

async fn call(d: &Dispatcher, name: &str, args: serde_json::Value) -> ToolOutput {
    d.call(name, RawArgs::Json(args), CallContext::unattended())
        .await
}

/// Asserts an error result whose text contains every one of `parts`.
#[track_caller]
fn assert_error(out: &ToolOutput, parts: &[&str]) {
    assert!(out.is_error, "expected an error result, got {out:?}");
    for part in parts {
        assert!(
            out.text.contains(part),
            "{:?} does not contain {part:?}",
            out.text
        );
    }
}

#[tokio::test]
async fn success_passes_the_output_through() {
    let d = standard();
    let out = call(&d, "echo", json!({"text": "hi"})).await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(out.text, "hi");
    // Raw text arguments are parsed too, and empty text means no arguments.
    let out = d
        .call(
            "echo",
            RawArgs::Text(r#"{"text": "raw"}"#.into()),
            CallContext::unattended(),
        )
        .await;
    assert_eq!(out.text, "raw");
}

#[tokio::test]
async fn unknown_tool_suggests_the_closest_name() {
    let d = standard();
    let out = call(&d, "red_file", json!({"path": "a"})).await;
    assert_error(
        &out,
        &["unknown tool `red_file`", "did you mean `read_file`"],
    );
    // The best suggestion comes first.
    let suggestions = out.text.split("did you mean ").nth(1).unwrap();
    assert!(suggestions.starts_with("`read_file`"), "{suggestions}");
}

#[tokio::test]
async fn unknown_tool_with_no_close_name_lists_what_exists() {
    let d = standard();
    let out = call(&d, "zzzzqqqq", json!({})).await;
    assert_error(
        &out,
        &[
            "unknown tool `zzzzqqqq`",
            "available tools:",
            "`echo`",
            "`read_file`",
        ],
    );
}

#[tokio::test]
async fn arguments_that_are_not_json_say_how_to_resend() {
    let d = standard();
    let out = d
        .call(
            "echo",
            RawArgs::Text("{oops".into()),
            CallContext::unattended(),
        )
        .await;
    assert_error(
        &out,
        &["`echo`", "not valid JSON", "resend them as one JSON object"],
    );
}

#[tokio::test]
async fn arguments_that_are_not_an_object_are_refused() {
    let d = standard();
    let out = call(&d, "echo", json!(["hi"])).await;
    assert_error(&out, &["must be a JSON object", "got an array"]);
    let out = d
        .call(
            "echo",
            RawArgs::Text("42".into()),
            CallContext::unattended(),
        )
        .await;
    assert_error(&out, &["must be a JSON object", "got a number"]);
}

#[tokio::test]
async fn wrong_field_type_names_the_field_and_the_expected_type() {
    let d = standard();
    let out = call(&d, "read_file", json!({"path": 5})).await;
    assert_error(
        &out,
        &[
            "invalid arguments for `read_file`",
            "`path`",
            "expected a string",
        ],
    );
    let out = call(&d, "read_file", json!({"path": "a", "limit": "ten"})).await;
    // JSON's words, not Rust's ("expected u32").
    assert_error(&out, &["`limit`", "expected a non-negative integer"]);
    assert!(!out.text.contains("u32"), "{}", out.text);
}

#[tokio::test]
async fn unknown_field_is_named() {
    let d = standard();
    let out = call(&d, "read_file", json!({"path": "a", "offsett": 3})).await;
    assert_error(
        &out,
        &[
            "invalid arguments",
            "unknown field `offsett`",
            "expected `path` or `limit`",
        ],
    );
}

/// A call in a session of `profile`.
async fn call_as(
    d: &Dispatcher,
    profile: toolgate_core::ClientProfile,
    name: &str,
    args: serde_json::Value,
) -> ToolOutput {
    let ctx = CallContext::unattended();
    ctx.session.adopt_profile(profile);
    d.call(name, RawArgs::Json(args), ctx).await
}

/// Regression: Gemini CLI adds `wait_for_previous` to every call, and every built-in tool
/// refused it ("unknown field `wait_for_previous`"). Its profile drops the field, for tools
/// that do not declare it; other clients' calls, and other unknown fields, are still refused.
#[tokio::test]
async fn a_clients_injected_field_is_dropped_by_its_profile_only() {
    use toolgate_core::ClientProfile;
    // Answers with the arguments it got.
    let echo_args = |name: &str, schema| {
        raw_tool(name, "Echoes its arguments.", schema)
            .reply(|args, _| Box::pin(async move { Ok(ToolOutput::text(args.to_string())) }))
            .erased()
    };
    let declares = echo_args(
        "declares",
        json!({"type": "object", "properties": {"wait_for_previous": {"type": "boolean"}}}),
    );
    let plain = echo_args("plain", json!({"type": "object", "properties": {}}));
    let mut tools = standard_tools();
    tools.extend([declares, plain]);
    let d = dispatcher_with(tools, Policy::allow_all());
    let args = json!({"path": "a.txt", "wait_for_previous": true});

    let out = call_as(&d, ClientProfile::gemini(), "read_file", args.clone()).await;
    assert!(!out.is_error, "{out:?}");
    // Arguments as text (a model's output) are dropped from too.
    let ctx = CallContext::unattended();
    ctx.session.adopt_profile(ClientProfile::gemini());
    let text = RawArgs::Text(args.to_string());
    assert!(!d.call("read_file", text, ctx).await.is_error);
    // A tool that declares the field gets it; one that does not, does not.
    let out = call_as(
        &d,
        ClientProfile::gemini(),
        "declares",
        json!({"wait_for_previous": false}),
    )
    .await;
    assert_eq!(out.text, r#"{"wait_for_previous":false}"#);
    let out = call_as(
        &d,
        ClientProfile::gemini(),
        "plain",
        json!({"wait_for_previous": true}),
    )
    .await;
    assert_eq!(out.text, "{}");
    // Only the client's own field: another unknown one is refused as ever.
    let out = call_as(
        &d,
        ClientProfile::gemini(),
        "read_file",
        json!({"path": "a", "wait_for_previous": true, "offsett": 3}),
    )
    .await;
    assert_error(&out, &["unknown field `offsett`"]);
    // Other clients do not inject it, so for them it is an unknown field.
    for other in [ClientProfile::claude_code(), ClientProfile::conservative()] {
        let out = call_as(&d, other, "read_file", args.clone()).await;
        assert_error(&out, &["unknown field `wait_for_previous`"]);
    }
    assert_error(
        &call(&d, "read_file", args).await,
        &["unknown field `wait_for_previous`"],
    );
}

#[tokio::test]
async fn missing_required_field_is_named() {
    let d = standard();
    let out = call(&d, "read_file", json!({"limit": 3})).await;
    assert_error(
        &out,
        &["invalid arguments", "missing field `path`", "input schema"],
    );
    // Null arguments mean "no arguments", which still lacks `path`.
    let out = call(&d, "read_file", serde_json::Value::Null).await;
    assert_error(&out, &["missing field `path`"]);
}

#[tokio::test]
async fn handler_error_message_is_passed_through() {
    let d = standard();
    let out = call(&d, "fail", json!({})).await;
    assert_error(&out, &[FAIL_MESSAGE]);
}

// A paused clock: the 50 ms limit and the 5 s sleep are clock time, not the machine's speed.
#[tokio::test(start_paused = true)]
async fn timeout_stops_the_call_and_says_so() {
    let d = standard();
    let started = tokio::time::Instant::now();
    let out = call(&d, "slow", json!({"ms": 5_000})).await;
    assert_error(&out, &["`slow` timed out after 50 ms", "try again"]);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the call was not stopped"
    );
    // A call within the limit is unaffected.
    let out = call(&d, "slow", json!({"ms": 1})).await;
    assert_eq!(out.text, "woke up");
}

#[tokio::test]
async fn max_timeout_caps_a_tool_declared_timeout() {
    let registry = Registry::new();
    registry
        .register(
            None,
            provider(
                "t",
                vec![TypedTool::erased(Slow {
                    timeout: Some(Duration::from_secs(3_600)),
                })],
            ),
            0,
        )
        .unwrap();
    let limits = DispatchLimits {
        default_timeout: Duration::from_millis(20),
        max_timeout: Duration::from_millis(60),
    };
    let d = Dispatcher::new(
        Arc::new(registry),
        Scope::global(),
        Policy::allow_all(),
        limits,
    );
    let out = call(&d, "slow", json!({"ms": 5_000})).await;
    assert_error(&out, &["timed out after 60 ms"]);
}

#[tokio::test]
async fn panic_in_a_handler_becomes_an_internal_failure_result() {
    let d = standard();
    let out = call(&d, "explode", json!({})).await;
    assert_error(
        &out,
        &[
            "`explode` failed internally",
            "boom in the handler",
            "another tool",
        ],
    );
    // The dispatcher still works afterwards.
    assert_eq!(
        call(&d, "echo", json!({"text": "alive"})).await.text,
        "alive"
    );
}

#[tokio::test]
async fn regression_panic_before_a_handler_returns_its_future_is_caught() {
    // Panics when called, before it returns a future.
    let tool = raw_tool(
        "raw_panic",
        "A hand-written tool.",
        json!({"type": "object", "properties": {}}),
    )
    .reply(|_, _| panic!("boom before the future"))
    .erased();
    let d = dispatcher_with(vec![tool, TypedTool::erased(Echo)], Policy::allow_all());
    let out = call(&d, "raw_panic", json!({})).await;
    assert_error(
        &out,
        &["`raw_panic` failed internally", "boom before the future"],
    );
    assert_eq!(
        call(&d, "echo", json!({"text": "alive"})).await.text,
        "alive"
    );
}

// A paused clock: time moves only once every task waits, so the cancel lands while `slow`
// sleeps in its handler, however loaded the machine.
#[tokio::test(start_paused = true)]
async fn cancellation_stops_a_running_call() {
    let d = standard();
    let ctx = CallContext::unattended();
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(10)).await;
        cancel.cancel();
    });
    let started = tokio::time::Instant::now();
    let out = d
        .call("slow", RawArgs::Json(json!({"ms": 5_000})), ctx)
        .await;
    assert_error(&out, &["`slow` was cancelled"]);
    // Clock time: the call ended at the cancel, long before `slow` would have.
    assert!(started.elapsed() < Duration::from_secs(5));

    // Cancelled before it starts: the handler never runs.
    let ctx = CallContext::unattended();
    ctx.cancel.cancel();
    let out = d
        .call("echo", RawArgs::Json(json!({"text": "x"})), ctx)
        .await;
    assert_error(&out, &["`echo` was cancelled before it started"]);
}

#[tokio::test]
async fn regression_timeout_does_not_cancel_the_callers_context() {
    let d = standard();
    let ctx = CallContext::unattended();
    let out = d
        .call("slow", RawArgs::Json(json!({"ms": 5_000})), ctx.clone())
        .await;
    assert_error(&out, &["timed out"]);
    assert!(
        !ctx.cancel.is_cancelled(),
        "one call's timeout cancelled the caller's token"
    );
    // The same context (a session, a batch) keeps working.
    let out = d
        .call("echo", RawArgs::Json(json!({"text": "next"})), ctx)
        .await;
    assert!(!out.is_error, "{out:?}");
}

#[tokio::test]
async fn regression_timeout_in_a_batch_leaves_later_calls_running() {
    let d = standard();
    let calls = vec![
        Call {
            name: "slow".into(),
            args: RawArgs::Json(json!({"ms": 5_000})),
        },
        Call {
            name: "write_note".into(),
            args: RawArgs::Json(json!({"title": "t", "body": "b"})),
        },
        Call {
            name: "echo".into(),
            args: RawArgs::Json(json!({"text": "after"})),
        },
    ];
    let out = d.call_batch(calls, &CallContext::unattended()).await;
    assert_error(&out[0], &["timed out"]);
    assert_eq!(out[1].text, "saved t (1 bytes)", "{:?}", out[1]);
    assert_eq!(out[2].text, "after", "{:?}", out[2]);
}

#[tokio::test]
async fn deny_rule_blocks_and_names_the_rule() {
    let policy = Policy::from_lists(&[], &[], &["fs.write".to_owned()]).unwrap();
    let d = dispatcher_with(standard_tools(), policy);
    let out = call(&d, "write_note", json!({"title": "t", "body": "b"})).await;
    assert_error(
        &out,
        &[
            "permission denied",
            "`write_note` (fs.write)",
            "deny = [\"fs.write\"]",
            "use another tool",
        ],
    );
    // Other tools are untouched.
    assert!(!call(&d, "read_file", json!({"path": "a"})).await.is_error);
}

#[tokio::test]
async fn ask_acts_as_deny_and_names_the_rule_to_change() {
    let policy = Policy::from_lists(&[], &["read_*".to_owned()], &[]).unwrap();
    let d = dispatcher_with(standard_tools(), policy);
    let out = call(&d, "read_file", json!({"path": "a"})).await;
    assert_error(
        &out,
        &[
            "permission needed",
            "ask = [\"read_*\"]",
            "move it to `allow`",
        ],
    );
}

#[tokio::test]
async fn permission_is_checked_before_the_handler_runs() {
    let tracker = Arc::new(Tracker::default());
    let probe = TypedTool::erased(Probe {
        tracker: tracker.clone(),
        concurrency: Concurrency::Mutating,
    });
    let policy = Policy::from_lists(&[], &[], &["probe_write".to_owned()]).unwrap();
    let d = dispatcher_with(vec![probe], policy);
    let out = call(&d, "probe_write", json!({"id": "x"})).await;
    assert_error(&out, &["deny = [\"probe_write\"]"]);
    assert!(tracker.started().is_empty());
}

#[tokio::test]
async fn a_conditional_rule_decides_by_the_session_identity() {
    let tracker = Arc::new(Tracker::default());
    let probe = TypedTool::erased(Probe {
        tracker: tracker.clone(),
        concurrency: Concurrency::Mutating,
    });
    let deny = [r#"probe_write unless group = "eng""#.to_owned()];
    let d = dispatcher_with(vec![probe], Policy::from_lists(&[], &[], &deny).unwrap());
    let as_caller = |groups: &[&str]| {
        CallContext::new(toolgate_core::Session::new(toolgate_core::SessionInit {
            approval: toolgate_core::Approval::Nobody,
            profile: None,
            client: None,
            identity: Some(toolgate_core::Identity {
                subject: "alice".to_owned(),
                issuer: None,
                groups: groups.iter().map(|g| (*g).to_owned()).collect(),
                scopes: Vec::new(),
            }),
            rate_key: None,
        }))
    };
    let args = || RawArgs::Json(json!({"id": "x"}));
    let ops = d.call("probe_write", args(), as_caller(&["ops"])).await;
    assert_error(&ops, &[r#"deny = ["probe_write unless group = \"eng\""]"#]);
    // Without an identity the `unless` holds: denied too.
    let nobody = call(&d, "probe_write", json!({"id": "y"})).await;
    assert_error(&nobody, &["probe_write unless group"]);
    assert!(tracker.started().is_empty());
    let eng = d.call("probe_write", args(), as_caller(&["eng"])).await;
    assert!(!eng.is_error, "{eng:?}");
    assert_eq!(tracker.started().len(), 1);
}

fn probes(tracker: &Arc<Tracker>) -> Vec<Arc<dyn DynTool>> {
    vec![
        TypedTool::erased(Probe {
            tracker: tracker.clone(),
            concurrency: Concurrency::ReadOnly,
        }),
        TypedTool::erased(Probe {
            tracker: tracker.clone(),
            concurrency: Concurrency::Mutating,
        }),
    ]
}

fn probe_call(name: &str, id: &str) -> Call {
    Call {
        name: name.to_owned(),
        args: RawArgs::Json(json!({"id": id})),
    }
}

// Paused clock (as the two tests below): the probes' 40 ms overlap however loaded the machine.
#[tokio::test(start_paused = true)]
async fn batch_runs_read_only_calls_in_parallel_with_results_in_call_order() {
    let tracker = Arc::new(Tracker::default());
    let d = dispatcher_with(probes(&tracker), Policy::allow_all());
    let calls = (0..4)
        .map(|i| probe_call("probe_read", &format!("r{i}")))
        .collect();
    let out = d.call_batch(calls, &CallContext::unattended()).await;
    let texts: Vec<&str> = out.iter().map(|o| o.text.as_str()).collect();
    assert_eq!(texts, ["r0", "r1", "r2", "r3"]);
    assert!(tracker.max_active() > 1, "read-only calls did not overlap");
}

#[tokio::test(start_paused = true)]
async fn batch_runs_mutating_calls_alone_and_in_order() {
    let tracker = Arc::new(Tracker::default());
    let d = dispatcher_with(probes(&tracker), Policy::allow_all());
    let calls = vec![
        probe_call("probe_read", "r0"),
        probe_call("probe_read", "r1"),
        probe_call("probe_write", "w0"),
        probe_call("probe_write", "w1"),
        probe_call("probe_read", "r2"),
        probe_call("probe_read", "r3"),
        probe_call("probe_write", "w2"),
    ];
    let out = d.call_batch(calls, &CallContext::unattended()).await;
    let texts: Vec<&str> = out.iter().map(|o| o.text.as_str()).collect();
    assert_eq!(texts, ["r0", "r1", "w0", "w1", "r2", "r3", "w2"]);
    assert!(
        !tracker.mutating_overlapped.load(Ordering::SeqCst),
        "a mutating call overlapped another call"
    );
    let writes: Vec<String> = tracker
        .started()
        .into_iter()
        .filter(|id| id.starts_with('w'))
        .collect();
    assert_eq!(writes, ["w0", "w1", "w2"]);
    // Reads on either side of a write stay on their side.
    let started = tracker.started();
    let pos = |id: &str| started.iter().position(|s| s == id).unwrap();
    assert!(
        pos("r1") < pos("w0") && pos("w1") < pos("r2") && pos("r3") < pos("w2"),
        "{started:?}"
    );
    assert!(
        tracker.max_active() > 1,
        "read-only neighbours did not overlap"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_mutating_calls_of_one_session_never_overlap() {
    let tracker = Arc::new(Tracker::default());
    let d = Arc::new(dispatcher_with(probes(&tracker), Policy::allow_all()));
    let session = CallContext::unattended();
    let mut handles = Vec::new();
    for i in 0..3 {
        for (name, prefix) in [("probe_write", "w"), ("probe_read", "r")] {
            let d = Arc::clone(&d);
            let ctx = session.clone();
            handles.push(tokio::spawn(async move {
                let args = RawArgs::Json(json!({"id": format!("{prefix}{i}")}));
                d.call(name, args, ctx).await
            }));
        }
    }
    for handle in handles {
        assert!(!handle.await.unwrap().is_error);
    }
    assert_eq!(tracker.started().len(), 6);
    assert!(!tracker.mutating_overlapped.load(Ordering::SeqCst));
}

#[tokio::test]
async fn batch_turns_each_bad_call_into_its_own_error_result() {
    let d = standard();
    let calls = vec![
        Call {
            name: "echo".into(),
            args: RawArgs::Json(json!({"text": "a"})),
        },
        Call {
            name: "nope".into(),
            args: RawArgs::Json(json!({})),
        },
        Call {
            name: "echo".into(),
            args: RawArgs::Text("{oops".into()),
        },
        Call {
            name: "explode".into(),
            args: RawArgs::Json(json!({})),
        },
        Call {
            name: "echo".into(),
            args: RawArgs::Json(json!({"text": "b"})),
        },
    ];
    let out = d.call_batch(calls, &CallContext::unattended()).await;
    assert_eq!(out.len(), 5);
    assert_eq!(out[0].text, "a");
    assert_error(&out[1], &["unknown tool `nope`"]);
    assert_error(&out[2], &["not valid JSON"]);
    assert_error(&out[3], &["failed internally"]);
    assert_eq!(out[4].text, "b");
}
