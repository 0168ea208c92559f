//! Compaction keeps spill files still referenced and deletes the session's others (seed
//! 000 s04 exercise 2).

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolgate_agent::{Agent, AgentSettings, Progress, Status};
use toolgate_core::{DisclosureSettings, Policy};
use toolgate_providers::fake::{FakeServer, Reply, Step, step};
use toolgate_providers::{Kind, Message};

use crate::{provider, rig, run};

fn check(f: impl FnOnce(&Value) -> Reply + Send + 'static) -> Step {
    Box::new(f)
}

fn spill_files(root: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root.join(".toolgate/spill"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".txt"))
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn compaction_keeps_referenced_spills_and_deletes_the_rest() {
    let rig = rig(DisclosureSettings::default(), Policy::allow_all());
    let fake = FakeServer::start(
        Kind::Anthropic,
        vec![
            step(Reply::call("run_shell", json!({"command": "seq 1 100000"}))),
            step(Reply::call("run_shell", json!({"command": "seq 5 200000"}))),
            step(Reply::text("done")),
            // The summary request: no tools; the first exchange is summarized, its
            // pointer dropped.
            check(|body| {
                assert!(body.get("tools").is_none(), "no tools for a summary");
                let text = body["messages"][0]["content"][0]["text"].as_str().unwrap();
                assert_eq!(text.matches("saved to `").count(), 1, "{text}");
                assert!(text.contains("seq 1 100000"), "{text}");
                Reply::text("Ran seq once; nothing in it matters.")
            }),
            check(|body| {
                let first = body["messages"][0]["content"][0]["text"].as_str().unwrap();
                assert!(first.starts_with("count twice"), "{first}");
                assert!(first.contains("Ran seq once"), "{first}");
                Reply::text("still here")
            }),
        ],
    )
    .await;
    let settings = AgentSettings {
        // 1 % of 128,000 tokens: about 5,000 characters stay word for word, which is the
        // second exchange; no compaction happens by itself during the task.
        keep_percent: 1,
        ..AgentSettings::default()
    };
    let mut agent = Agent::new(
        rig.tools.clone(),
        provider(Kind::Anthropic, &fake, true),
        settings,
    );
    agent
        .record_to(&rig.root.join(".toolgate/sessions"))
        .unwrap();
    let (outcome, _) = run(&mut agent, "count twice").await;
    assert_eq!(outcome.status, Status::Finished, "{outcome:?}");
    let before = spill_files(&rig.root);
    assert!(before.len() >= 2, "{before:?}");
    let mut seen = Vec::new();
    assert!(
        agent
            .compact(&mut |p| seen.push(p), &CancellationToken::new())
            .await
    );
    let after = spill_files(&rig.root);
    assert_eq!(
        after.len(),
        1,
        "only the referenced file stays: {before:?} -> {after:?}"
    );
    let kept = &after[0];
    let live: String = agent.messages().iter().flat_map(Message::texts).collect();
    assert!(live.contains(kept.as_str()));
    assert!(
        seen.iter().any(
            |p| matches!(p, Progress::Compacted { deleted, .. } if *deleted == before.len() - 1)
        )
    );
    // The compacted conversation goes on, and resumes as compacted.
    let (next, _) = run(&mut agent, "again").await;
    assert_eq!(next.text, "still here");
    let id = agent.session_id().unwrap().to_owned();
    let mut again = Agent::new(
        rig.tools.clone(),
        provider(Kind::Anthropic, &fake, true),
        AgentSettings::default(),
    );
    again
        .resume(&rig.root.join(".toolgate/sessions"), &id)
        .unwrap();
    assert_eq!(again.messages(), agent.messages());
    assert_eq!(again.close(), 0, "the kept file is still referenced");
    assert_eq!(spill_files(&rig.root), after);
}
