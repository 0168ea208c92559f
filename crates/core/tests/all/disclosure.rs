//! Progressive disclosure: the cache-prefix stability numbers, run_tool under the target's
//! permissions, the auto:N boundary, search quality, backfill per session.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{Map, json};
use toolgate_core::disclosure::{
    RUN_TOOL, SEARCH_TOOL, SimProtocol, SimScript, SimTurn, Strategy, StubTool, Unmasked, simulate,
};
use toolgate_core::{
    Call, CallContext, Concurrency, Disclosure, DisclosureHint, DisclosureMode, DisclosureSettings,
    DispatchLimits, Dispatcher, DynTool, ExposureMode, Policy, Protocol, RawArgs, Registry,
    RenderOptions, Scope, ToolOutput, TypedTool,
};

use crate::fixtures::{Probe, Slow, Tracker, WriteNote, provider};

/// A demo agent's tools: three direct, five deferred.
fn seed_tools() -> Vec<Arc<dyn DynTool>> {
    let stub = |name: &str, description: &str| -> Arc<dyn DynTool> {
        Arc::new(StubTool::new(name, description, Map::new()))
    };
    let core = |name: &str, description: &str| -> Arc<dyn DynTool> {
        Arc::new(StubTool::new(name, description, Map::new()).with_hint(DisclosureHint::Direct))
    };
    vec![
        core("run_shell", "执行一条 shell 命令"),
        core("read_file", "读取一个文本文件"),
        stub("schedule_wakeup", "安排一次未来的模型回合"),
        stub("convene_panel", "召集多个子代理并行评审"),
        stub("recall_memory_chunk", "把压缩掉的历史片段逐字召回"),
        stub("create_subtask", "在任务 DAG 上新建一个子任务"),
        stub("notify_user", "向用户发一条系统通知"),
    ]
}

struct Setup {
    registry: Arc<Registry>,
    disclosure: Arc<Disclosure>,
    dispatcher: Dispatcher,
}

fn setup_with(tools: Vec<Arc<dyn DynTool>>, settings: DisclosureSettings, policy: Policy) -> Setup {
    let registry = Arc::new(Registry::new());
    registry.register(None, provider("test", tools), 0).unwrap();
    let disclosure = Arc::new(Disclosure::new(&settings, &Default::default()).unwrap());
    disclosure.attach(&registry, Scope::global()).unwrap();
    let dispatcher = Dispatcher::new(
        Arc::clone(&registry),
        Scope::global(),
        policy,
        DispatchLimits::default(),
    );
    Setup {
        registry,
        disclosure,
        dispatcher,
    }
}

fn on() -> DisclosureSettings {
    DisclosureSettings {
        mode: DisclosureMode::On,
        ..DisclosureSettings::default()
    }
}

fn seed() -> Setup {
    setup_with(seed_tools(), on(), Policy::allow_all())
}

fn script(protocol: SimProtocol, strategy: Strategy, turns: Vec<SimTurn>) -> SimScript {
    SimScript {
        protocol,
        strategy: Some(strategy),
        tools: Vec::new(),
        turns,
    }
}

fn unmask(names: &[&str]) -> SimTurn {
    SimTurn {
        unmask: names.iter().map(|s| (*s).to_owned()).collect(),
        ..SimTurn::default()
    }
}

fn calls(names: &[&str]) -> SimTurn {
    SimTurn {
        call: names.iter().map(|s| (*s).to_owned()).collect(),
        ..SimTurn::default()
    }
}

fn run(setup: &Setup, script: &SimScript) -> toolgate_core::disclosure::StabilityReport {
    let snapshot = setup.registry.snapshot(&Scope::global());
    simulate(
        &setup.disclosure,
        &snapshot,
        script,
        &RenderOptions::default(),
    )
}

#[test]
fn seed_demo_unmask_and_append_breaks_the_prefix_every_turn() {
    let s = seed();
    let turns = vec![
        unmask(&["schedule_wakeup"]),
        unmask(&["convene_panel"]),
        unmask(&["recall_memory_chunk"]),
        SimTurn::default(),
    ];
    let report = run(&s, &script(SimProtocol::Openai, Strategy::Append, turns));
    assert_eq!(report.breaks, 3, "{report:#?}");
    assert_eq!(report.turns.len(), 4);
    // Appending keeps almost every byte, yet the block changed: a full-price turn.
    assert!(report.turns[1].prefix_reuse > 80.0 && report.turns[1].prefix_reuse < 100.0);
}

#[test]
fn seed_demo_proxy_keeps_the_array_byte_identical() {
    let s = seed();
    let turns = vec![
        unmask(&["schedule_wakeup"]),
        unmask(&["convene_panel"]),
        unmask(&["recall_memory_chunk"]),
        calls(&["schedule_wakeup", "convene_panel"]),
    ];
    for protocol in [
        SimProtocol::Openai,
        SimProtocol::Mcp,
        SimProtocol::Anthropic,
    ] {
        let report = run(&s, &script(protocol, Strategy::Proxy, turns.clone()));
        assert_eq!(report.breaks, 0, "{protocol:?}: {report:#?}");
        assert_eq!(report.rejected, 0, "calls go through run_tool");
        assert!(report.turns.iter().all(|t| t.prefix_reuse == 100.0));
    }
}

#[test]
fn strict_backfill_breaks_once_in_the_unmasking_turn() {
    let s = seed();
    let turns = vec![
        unmask(&["notify_user"]),
        calls(&["notify_user"]),
        calls(&["notify_user"]),
        calls(&["notify_user"]),
    ];
    let mut sc = script(SimProtocol::Anthropic, Strategy::Backfill, turns);
    sc.strategy = None; // Anthropic's default strategy is backfill.
    let report = run(&s, &sc);
    assert_eq!(report.strategy, Strategy::Backfill);
    assert_eq!(report.breaks, 1, "{report:#?}");
    assert!(
        report.turns[1].changed,
        "the break lands in the turn after unmasking"
    );
    assert!(!report.turns[2].changed && !report.turns[3].changed);
    assert_eq!(report.rejected, 0, "notify_user accepted 3/3");
}

#[test]
fn strict_backfill_breaks_once_for_two_tools_unmasked_in_one_turn() {
    let s = seed();
    let turns = vec![
        unmask(&["notify_user", "create_subtask"]),
        calls(&["notify_user", "create_subtask"]),
        SimTurn::default(),
        SimTurn::default(),
    ];
    let report = run(
        &s,
        &script(SimProtocol::Anthropic, Strategy::Backfill, turns),
    );
    assert_eq!(report.breaks, 1, "{report:#?}");
    // Two turns that each unmask one tool pay twice.
    let turns = vec![
        unmask(&["notify_user"]),
        unmask(&["create_subtask"]),
        SimTurn::default(),
        SimTurn::default(),
    ];
    let report = run(
        &s,
        &script(SimProtocol::Anthropic, Strategy::Backfill, turns),
    );
    assert_eq!(report.breaks, 2);
}

#[test]
fn backfill_is_sorted_whatever_the_unmask_order() {
    let s = seed();
    let snapshot = s.registry.snapshot(&Scope::global());
    let a = s.disclosure.exposed_with(
        &snapshot,
        &["notify_user".into(), "create_subtask".into()],
        Strategy::Backfill,
    );
    let b = s.disclosure.exposed_with(
        &snapshot,
        &["create_subtask".into(), "notify_user".into()],
        Strategy::Backfill,
    );
    let options = RenderOptions::default();
    assert_eq!(
        a.render_bytes(Protocol::Anthropic, &options),
        b.render_bytes(Protocol::Anthropic, &options)
    );
    let names: Vec<String> = a.backfill.iter().map(|t| t.spec().name.clone()).collect();
    assert_eq!(names, ["create_subtask", "notify_user"]);
}

#[test]
fn auto_n_boundary_n_tools_all_direct_n_plus_one_discloses() {
    let tools = |n: usize| -> Vec<Arc<dyn DynTool>> {
        (0..n)
            .map(|i| {
                Arc::new(StubTool::new(
                    &format!("mcp__srv__tool_{i:02}"),
                    "A mounted tool.",
                    Map::new(),
                )) as Arc<dyn DynTool>
            })
            .collect()
    };
    let settings = DisclosureSettings {
        mode: DisclosureMode::Auto(15),
        ..DisclosureSettings::default()
    };
    for (n, disclosed) in [(15, false), (16, true)] {
        let s = setup_with(tools(n), settings.clone(), Policy::allow_all());
        let snapshot = s.registry.snapshot(&Scope::global());
        let exposed = s.disclosure.exposed(&snapshot, &Unmasked::default());
        assert_eq!(exposed.contains(SEARCH_TOOL), disclosed, "{n} tools");
        assert_eq!(exposed.contains(RUN_TOOL), disclosed, "{n} tools");
        let visible = exposed.all().count();
        assert_eq!(visible, if disclosed { 2 } else { n }, "{n} tools");
    }
}

async fn call(d: &Dispatcher, name: &str, args: serde_json::Value) -> ToolOutput {
    d.call(name, RawArgs::Json(args), CallContext::unattended())
        .await
}

#[tokio::test]
async fn deny_on_the_target_holds_through_run_tool() {
    let tools: Vec<Arc<dyn DynTool>> = vec![TypedTool::erased(WriteNote { timeout: None })];
    let policy = Policy::from_lists(&["run_tool".into()], &[], &["write_note".into()]).unwrap();
    let s = setup_with(tools, on(), policy);
    let out = call(
        &s.dispatcher,
        RUN_TOOL,
        json!({"name": "write_note", "input": {"title": "t", "body": "b"}}),
    )
    .await;
    assert!(out.is_error, "{out:?}");
    assert!(out.text.contains("permission denied"), "{}", out.text);
    assert!(
        out.text.contains("`write_note`"),
        "names the target: {}",
        out.text
    );
    // An action rule on the target holds too.
    let tools: Vec<Arc<dyn DynTool>> = vec![TypedTool::erased(WriteNote { timeout: None })];
    let policy = Policy::from_lists(&[], &["fs.write".into()], &[]).unwrap();
    let s = setup_with(tools, on(), policy);
    let args = json!({"name": "write_note", "input": {"title": "t", "body": "b"}});
    let out = call(&s.dispatcher, RUN_TOOL, args.clone()).await;
    assert!(
        out.is_error && out.text.contains("permission needed"),
        "{}",
        out.text
    );
    // And in a batch.
    let batch = vec![Call {
        name: RUN_TOOL.into(),
        args: RawArgs::Json(args),
    }];
    let out = s
        .dispatcher
        .call_batch(batch, &CallContext::unattended())
        .await;
    assert!(
        out[0].is_error && out[0].text.contains("write_note"),
        "{:?}",
        out[0]
    );
}

#[tokio::test]
async fn run_tool_runs_the_target_with_its_timeout() {
    let tools: Vec<Arc<dyn DynTool>> = vec![
        TypedTool::erased(WriteNote { timeout: None }),
        TypedTool::erased(Slow {
            timeout: Some(Duration::from_millis(50)),
        }),
    ];
    let s = setup_with(tools, on(), Policy::allow_all());
    let out = call(
        &s.dispatcher,
        RUN_TOOL,
        json!({"name": "write_note", "input": {"title": "t", "body": "abc"}}),
    )
    .await;
    assert_eq!(out.text, "saved t (3 bytes)", "{out:?}");
    let out = call(
        &s.dispatcher,
        RUN_TOOL,
        json!({"name": "slow", "input": {"ms": 5000}}),
    )
    .await;
    assert!(
        out.is_error && out.text.contains("`slow` timed out"),
        "{}",
        out.text
    );
    // Text arguments (CLI, model output) are forwarded too.
    let out = s
        .dispatcher
        .call(
            RUN_TOOL,
            RawArgs::Text(r#"{"name":"write_note","input":{"title":"x","body":""}}"#.into()),
            CallContext::unattended(),
        )
        .await;
    assert_eq!(out.text, "saved x (0 bytes)");
}

#[tokio::test]
async fn run_tool_errors_say_what_to_do() {
    let s = seed();
    let out = call(&s.dispatcher, RUN_TOOL, json!({"input": {}})).await;
    assert!(out.is_error && out.text.contains("name"), "{}", out.text);
    let out = call(&s.dispatcher, RUN_TOOL, json!({"name": "notify_usr"})).await;
    assert!(
        out.text.contains("unknown tool `notify_usr`"),
        "{}",
        out.text
    );
    assert!(
        out.text.contains("notify_user"),
        "suggests the near name: {}",
        out.text
    );
    let out = call(
        &s.dispatcher,
        RUN_TOOL,
        json!({"name": RUN_TOOL, "input": {}}),
    )
    .await;
    assert!(
        out.is_error && out.text.contains("cannot call `run_tool`"),
        "{}",
        out.text
    );
}

// A paused clock: the probes' 40 ms overlap however loaded the machine.
#[tokio::test(start_paused = true)]
async fn run_tool_keeps_the_targets_concurrency_class_without_deadlock() {
    let tracker = Arc::new(Tracker::default());
    let tools: Vec<Arc<dyn DynTool>> = vec![
        TypedTool::erased(Probe {
            tracker: Arc::clone(&tracker),
            concurrency: Concurrency::ReadOnly,
        }),
        TypedTool::erased(Probe {
            tracker: Arc::clone(&tracker),
            concurrency: Concurrency::Mutating,
        }),
    ];
    let s = Arc::new(setup_with(tools, on(), Policy::allow_all()));
    let batch: Vec<Call> = ["r1", "r2", "w1", "w2", "r3"]
        .iter()
        .map(|id| Call {
            name: RUN_TOOL.into(),
            args: RawArgs::Json(json!({
                "name": if id.starts_with('r') { "probe_read" } else { "probe_write" },
                "input": {"id": id},
            })),
        })
        .collect();
    let out = tokio::time::timeout(
        Duration::from_secs(10),
        s.dispatcher.call_batch(batch, &CallContext::unattended()),
    )
    .await
    .expect("no deadlock");
    let texts: Vec<&str> = out.iter().map(|o| o.text.as_str()).collect();
    assert_eq!(texts, ["r1", "r2", "w1", "w2", "r3"]);
    assert!(!tracker.mutating_overlapped.load(Ordering::SeqCst));
    assert_eq!(tracker.max_active(), 2, "r1 and r2 ran together");
    // Concurrent single calls of one session through run_tool: mutating ones still run
    // alone.
    let session = CallContext::unattended();
    let mut handles = Vec::new();
    for id in ["a", "b", "c"] {
        let s = Arc::clone(&s);
        let ctx = session.clone();
        handles.push(tokio::spawn(async move {
            let args = RawArgs::Json(json!({"name": "probe_write", "input": {"id": id}}));
            s.dispatcher.call(RUN_TOOL, args, ctx).await
        }));
    }
    for h in handles {
        assert!(!h.await.unwrap().is_error);
    }
    assert!(!tracker.mutating_overlapped.load(Ordering::SeqCst));
}

fn search_text(out: &ToolOutput) -> &str {
    assert!(!out.is_error, "{out:?}");
    &out.text
}

#[tokio::test]
async fn search_tool_finds_by_chinese_query_and_exact_name() {
    let s = seed();
    let out = call(&s.dispatcher, SEARCH_TOOL, json!({"query": "给用户发通知"})).await;
    let text = search_text(&out);
    assert!(text.contains("\n## notify_user\n"), "{text}");
    assert!(
        text.find("## notify_user") < text.find("## schedule_wakeup").or(Some(usize::MAX)),
        "{text}"
    );
    let out = call(
        &s.dispatcher,
        SEARCH_TOOL,
        json!({"query": "create_subtask", "limit": 3}),
    )
    .await;
    let text = search_text(&out);
    let first = text.split("\n## ").nth(1).unwrap_or_default();
    assert!(first.starts_with("create_subtask\n"), "{text}");
    assert!(
        text.contains(r#"Call: run_tool {"name": "create_subtask", "input": {…}}"#),
        "{text}"
    );
    assert!(text.contains("Input schema: {"), "{text}");
    // A direct tool found by name is named, not described again: its description and
    // schema are already in the array (they used to take ~3,000 of a result's 3,929
    // characters), and the results are the tools not loaded yet.
    let out = call(&s.dispatcher, SEARCH_TOOL, json!({"query": "read_file"})).await;
    let text = search_text(&out);
    assert!(
        text.contains("Already in your tool list, call directly: read_file"),
        "{text}"
    );
    assert!(!text.contains("## read_file"), "{text}");
    for found in text.split("\n## ").skip(1) {
        let name = found.lines().next().unwrap_or_default();
        assert!(
            s.disclosure
                .view(&s.dispatcher.snapshot())
                .plan
                .is_deferred(name),
            "{name} is direct: {text}"
        );
    }
}

#[tokio::test]
async fn search_tool_limit_is_clamped_and_nothing_found_says_what_to_try() {
    let s = seed();
    let out = call(&s.dispatcher, SEARCH_TOOL, json!({"query": "xyzzy plugh"})).await;
    assert!(
        search_text(&out).starts_with("No tools match"),
        "{}",
        out.text
    );
    let out = call(
        &s.dispatcher,
        SEARCH_TOOL,
        json!({"query": "任务", "limit": 500}),
    )
    .await;
    assert!(!out.is_error);
    let out = call(&s.dispatcher, SEARCH_TOOL, json!({"limit": 5})).await;
    assert!(out.is_error && out.text.contains("query"), "{}", out.text);
}

#[tokio::test]
async fn backfill_unmasks_per_session_once_per_search() {
    let settings = DisclosureSettings {
        exposure: ExposureMode::Backfill,
        ..on()
    };
    let s = setup_with(seed_tools(), settings, Policy::allow_all());
    let ctx = CallContext::unattended();
    let unmasked = ctx.session.ext::<Unmasked>();
    let out = s
        .dispatcher
        .call(
            SEARCH_TOOL,
            RawArgs::Json(json!({"query": "通知 子任务", "limit": 2})),
            ctx.clone(),
        )
        .await;
    assert!(out.text.contains("added to your tool list"), "{}", out.text);
    assert_eq!(unmasked.version(), 1, "two tools, one change");
    let mut names = unmasked.names();
    names.sort();
    assert_eq!(names, ["create_subtask", "notify_user"]);
    let snapshot = s.registry.snapshot(&Scope::global());
    let exposed = s.disclosure.exposed(&snapshot, &unmasked);
    assert!(exposed.contains("notify_user") && exposed.contains("create_subtask"));
    // Another session sees none of it.
    let other = s.disclosure.exposed(&snapshot, &Unmasked::default());
    assert!(!other.contains("notify_user"));
}

#[test]
fn catalog_is_in_search_tools_description_and_stable_in_proxy_mode() {
    let s = seed();
    let snapshot = s.registry.snapshot(&Scope::global());
    let exposed = s.disclosure.exposed(&snapshot, &Unmasked::default());
    let search = exposed
        .all()
        .find(|t| t.spec().name == SEARCH_TOOL)
        .unwrap();
    let description = &search.spec().description;
    assert!(
        description.contains("- notify_user: 向用户发一条系统通知"),
        "{description}"
    );
    assert!(
        description.contains("5 tools are not loaded"),
        "{description}"
    );
    assert!(!exposed.contains("notify_user"));
    let options = RenderOptions::default();
    let before = exposed.render_bytes(Protocol::OpenAi, &options);
    let unmasked = Unmasked::default();
    unmasked.unmask(&["notify_user".into()]);
    let after = s
        .disclosure
        .exposed(&snapshot, &unmasked)
        .render_bytes(Protocol::OpenAi, &options);
    assert_eq!(before, after);
}

/// The retrieval benchmark's quality bar as a test (timings stay in the benchmark): the real
/// MCP catalog plus 10,000 distractors, every query of the set.
#[test]
fn retrieval_benchmark_meets_its_recall_goals() {
    use crate::disclosure_catalog::{distractors, queries, real_tools};
    use toolgate_core::disclosure::ToolIndex;
    let real = real_tools();
    let mut entries = real.clone();
    entries.extend(distractors(10_000, &real));
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    let index = ToolIndex::new(&entries);
    let queries = queries();
    assert!(queries.len() >= 100);
    let recall = |held_out: Option<bool>| {
        let (mut r1, mut r5, mut n) = (0, 0, 0);
        for q in queries
            .iter()
            .filter(|q| held_out.is_none_or(|h| q.held_out() == h))
        {
            let hits = index.search(&q.text, 5);
            let ok = |h: &toolgate_core::disclosure::SearchHit| {
                q.expected.contains(&entries[h.doc].name)
            };
            r1 += usize::from(hits.first().is_some_and(ok));
            r5 += usize::from(hits.iter().any(ok));
            n += 1;
        }
        (n, r1 as f64 / n as f64, r5 as f64 / n as f64)
    };
    // The whole set, and the held-out half on its own (a real half: neither side is tiny).
    for (what, held_out) in [("all", None), ("held-out half", Some(true))] {
        let (n, r1, r5) = recall(held_out);
        assert!(n * 10 >= queries.len() * 4, "{what}: {n} queries");
        assert!(
            r1 >= 0.85 && r5 >= 0.95,
            "{what}: Recall@1 {r1:.3}, Recall@5 {r5:.3}"
        );
    }
    // Exact names always come first.
    for q in queries
        .iter()
        .filter(|q| q.text.contains("__") || (q.kind == "name" && q.text == q.expected[0]))
    {
        let top = &entries[index.search(&q.text, 1)[0].doc].name;
        assert_eq!(top, &q.expected[0], "{}", q.text);
    }
}

#[tokio::test]
async fn index_follows_registry_generations() {
    let s = seed();
    let out = call(
        &s.dispatcher,
        SEARCH_TOOL,
        json!({"query": "translate_text"}),
    )
    .await;
    assert!(!search_text(&out).contains("## translate_text"));
    let late: Vec<Arc<dyn DynTool>> = vec![Arc::new(StubTool::new(
        "translate_text",
        "Translate text into another language.",
        Map::new(),
    ))];
    s.registry
        .register(None, provider("late", late), 0)
        .unwrap();
    let out = call(
        &s.dispatcher,
        SEARCH_TOOL,
        json!({"query": "translate_text"}),
    )
    .await;
    let text = search_text(&out);
    assert!(text.contains("\n## translate_text\n"), "{text}");
    // The catalog in search_tool's description follows too.
    let snapshot = s.registry.snapshot(&Scope::global());
    let exposed = s.disclosure.exposed(&snapshot, &Unmasked::default());
    let search = exposed
        .all()
        .find(|t| t.spec().name == SEARCH_TOOL)
        .unwrap();
    assert!(
        search
            .spec()
            .description
            .contains("- translate_text: Translate text")
    );
    assert!(s.registry.unregister(None, "late"));
    let out = call(
        &s.dispatcher,
        SEARCH_TOOL,
        json!({"query": "translate_text"}),
    )
    .await;
    assert!(
        !search_text(&out).contains("## translate_text"),
        "no ghost after removal"
    );
}

/// Regression: with the disclosure tools registered, `no_such_tool` was answered with
/// "did you mean `run_tool`, `search_tool`?" (they share the `_tool` ending).
#[tokio::test]
async fn unknown_tool_suggestions_skip_the_disclosure_tools_unless_nearly_named() {
    let tools: Vec<Arc<dyn DynTool>> = vec![TypedTool::erased(WriteNote { timeout: None })];
    let s = setup_with(tools, on(), Policy::allow_all());
    let out = call(&s.dispatcher, "no_such_tool", json!({})).await;
    assert!(!out.text.contains("did you mean"), "{}", out.text);
    assert!(out.text.contains("write_note"), "{}", out.text);
    let out = call(&s.dispatcher, "serch_tool", json!({})).await;
    assert!(
        out.text.contains("did you mean `search_tool`"),
        "{}",
        out.text
    );
}

/// What a model sees of disclosure, pinned: the two tools as MCP renders them (schemas and
/// the catalog), and a search result.
#[tokio::test]
async fn disclosure_tools_and_a_search_result_as_the_model_sees_them() {
    let s = seed();
    let snapshot = s.registry.snapshot(&Scope::global());
    let exposed = s.disclosure.exposed(&snapshot, &Unmasked::default());
    let array = exposed.render(Protocol::Mcp, &RenderOptions::default());
    let disclosure_tools: Vec<&serde_json::Value> = array
        .iter()
        .filter(|t| t["name"] == SEARCH_TOOL || t["name"] == RUN_TOOL)
        .collect();
    insta::assert_json_snapshot!("disclosure_tools_mcp", disclosure_tools);
    let out = call(
        &s.dispatcher,
        SEARCH_TOOL,
        json!({"query": "通知用户", "limit": 2}),
    )
    .await;
    insta::assert_snapshot!("search_result_text", out.text);
}

#[tokio::test]
async fn search_tool_results_fit_the_sessions_client_with_fewer_hits_said_plainly() {
    // 60 tools with long schemas: 20 hits of them are far over what Codex passes whole.
    let tools: Vec<Arc<dyn DynTool>> = (0..60)
        .map(|i| {
            let props: Map<String, serde_json::Value> = (0..40)
                .map(|p| {
                    let schema = json!({"type": "string", "description": "a widget setting"});
                    (format!("widget_parameter_{p}"), schema)
                })
                .collect();
            let mut schema = Map::new();
            schema.insert("type".to_owned(), json!("object"));
            schema.insert("properties".to_owned(), serde_json::Value::Object(props));
            let name = format!("widget_tool_{i:02}");
            Arc::new(StubTool::new(
                &name,
                "Manage widgets of the inventory.",
                schema,
            )) as Arc<dyn DynTool>
        })
        .collect();
    let s = setup_with(tools, on(), Policy::allow_all());
    let ctx = CallContext::unattended();
    ctx.session
        .adopt_profile(toolgate_core::ClientProfile::codex());
    let out = s
        .dispatcher
        .call(
            SEARCH_TOOL,
            RawArgs::Json(json!({"query": "widgets", "limit": 20})),
            ctx,
        )
        .await;
    assert!(!out.is_error, "{}", out.text);
    assert!(out.text.len() <= 11_500, "{}", out.text.len());
    assert!(out.spills.is_empty(), "fewer hits, not a spill");
    assert!(
        out.text.contains("lower-ranked matches left out"),
        "{}",
        &out.text[out.text.len() - 300..]
    );
    assert!(out.text.contains("## widget_tool_"));
}

/// A front end shapes a result by the tool that ran: for a call through `run_tool`, its
/// target (`serve` once judged the output schema on `run_tool`'s own name). The dispatcher
/// answers with it, resolved once in the snapshot the call ran in.
#[tokio::test]
async fn a_call_is_answered_with_the_tool_that_ran_the_target_of_run_tool() {
    let s = seed();
    let ran = async |name: &str, args| {
        let ctx = CallContext::unattended();
        let ticket = ctx.session.order().ticket();
        s.dispatcher
            .call_in_line(name, RawArgs::Json(args), ctx, ticket)
            .await
            .tool
            .map(|tool| tool.spec().name.clone())
    };
    let through = json!({"name": "notify_user", "input": {"text": "hi"}});
    assert_eq!(ran(RUN_TOOL, through).await.as_deref(), Some("notify_user"));
    assert_eq!(
        ran("read_file", json!({})).await.as_deref(),
        Some("read_file")
    );
    assert_eq!(ran(RUN_TOOL, json!({"name": "no_such_tool"})).await, None);
    assert_eq!(
        ran(RUN_TOOL, json!({"name": RUN_TOOL, "input": {}})).await,
        None
    );
    assert_eq!(
        ran(RUN_TOOL, json!({"input": {}})).await,
        None,
        "no name: no target"
    );
    assert_eq!(ran("no_such_tool", json!({})).await, None);
}

#[tokio::test]
async fn search_tool_leaves_out_tools_the_caller_is_denied() {
    let deny = [r#"notify_user unless group = "eng""#.to_owned()];
    let policy = Policy::from_lists(&[], &[], &deny).unwrap();
    let s = setup_with(seed_tools(), on(), policy.clone());
    policy.filter_lists_of(&s.registry);
    let query = json!({"query": "给用户发通知"});
    let eng =
        toolgate_core::CallContext::new(toolgate_core::Session::new(toolgate_core::SessionInit {
            approval: toolgate_core::Approval::Nobody,
            profile: None,
            client: None,
            identity: Some(toolgate_core::Identity {
                subject: "alice".into(),
                issuer: None,
                groups: vec!["eng".into()],
                scopes: Vec::new(),
            }),
            rate_key: None,
        }));
    let out = s
        .dispatcher
        .call(SEARCH_TOOL, RawArgs::Json(query.clone()), eng)
        .await;
    assert!(search_text(&out).contains("\n## notify_user\n"), "{out:?}");
    // Without an identity the `unless` holds: the tool is denied, and not found.
    let out = call(&s.dispatcher, SEARCH_TOOL, query).await;
    let text = search_text(&out);
    assert!(!text.contains("notify_user"), "{text}");
}
