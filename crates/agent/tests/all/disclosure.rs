//! Disclosure's protocol fork in the loop: strict providers get found tools backfilled
//! once; free-text ones keep one array and call through `run_tool`.

use serde_json::{Value, json};
use toolgate_agent::Status;
use toolgate_core::{DisclosureMode, DisclosureSettings, ExposureMode, Policy};
use toolgate_providers::Kind;
use toolgate_providers::fake::{FakeServer, Recorded, Reply, Step, step};

use crate::{agent, rig, run};

fn check(f: impl FnOnce(&Value) -> Reply + Send + 'static) -> Step {
    Box::new(f)
}

fn settings(exposure: ExposureMode) -> DisclosureSettings {
    DisclosureSettings {
        mode: DisclosureMode::On,
        exposure,
        deferred: vec!["grep".to_owned()],
        ..DisclosureSettings::default()
    }
}

#[tokio::test]
async fn a_strict_provider_gets_found_tools_backfilled_once_and_calls_them_by_name() {
    let rig = rig(settings(ExposureMode::Backfill), Policy::allow_all());
    let fake = FakeServer::start(
        Kind::Anthropic,
        vec![
            step(Reply::call(
                "search_tool",
                json!({"query": "grep content regex"}),
            )),
            check(|body| {
                let text = body["messages"].to_string();
                assert!(text.contains("## grep"), "{text}");
                Reply::call("grep", json!({"pattern": "hello", "literal": true}))
            }),
            check(|body| {
                let text = body["messages"].to_string();
                assert!(text.contains("README.md"), "{text}");
                Reply::text("found it")
            }),
        ],
    )
    .await;
    let mut agent = agent(&rig, Kind::Anthropic, &fake, true);
    let (outcome, _) = run(&mut agent, "find hello").await;
    assert_eq!(outcome.status, Status::Finished, "{outcome:?}");
    assert!(!outcome.tool_calls[1].is_error, "{outcome:?}");
    let requests = fake.requests();
    let names: Vec<Vec<String>> = requests.iter().map(Recorded::tool_names).collect();
    assert!(
        !names[0].contains(&"grep".to_owned()),
        "deferred at first: {:?}",
        names[0]
    );
    // Backfilled after the stable tools, then stable again.
    assert_eq!(names[1].last().map(String::as_str), Some("grep"));
    assert_eq!(names[1][..names[1].len() - 1], names[0][..]);
    assert_eq!(requests[1].body["tools"], requests[2].body["tools"]);
    // The cache breakpoint stays on the last stable tool, so its entry survives the backfill.
    let stable = names[0].len() - 1;
    assert_eq!(
        requests[1].body["tools"][stable]["cache_control"]["type"],
        "ephemeral"
    );
    assert_eq!(
        requests[0].body["tools"][stable],
        requests[1].body["tools"][stable]
    );
}

#[tokio::test]
async fn a_free_text_provider_keeps_one_array_and_calls_found_tools_through_run_tool() {
    let rig = rig(settings(ExposureMode::Proxy), Policy::allow_all());
    let fake = FakeServer::start(
        Kind::OpenAi,
        vec![
            step(Reply::call("search_tool", json!({"query": "grep"}))),
            step(Reply::call(
                "run_tool",
                json!({"name": "grep", "input": {"pattern": "hello", "literal": true}}),
            )),
            check(|body| {
                assert!(body["messages"].to_string().contains("README.md"));
                Reply::text("found")
            }),
        ],
    )
    .await;
    let mut agent = agent(&rig, Kind::OpenAi, &fake, false);
    let (outcome, _) = run(&mut agent, "find hello").await;
    assert_eq!(outcome.status, Status::Finished, "{outcome:?}");
    let requests = fake.requests();
    assert!(!requests[0].tool_names().contains(&"grep".to_owned()));
    for r in &requests[1..] {
        assert_eq!(
            r.body["tools"], requests[0].body["tools"],
            "byte-stable array"
        );
    }
}
