//! Compaction keeps spill files still referenced and deletes the session's others.

use std::sync::{Arc, Mutex};

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
        toolgate_core::Approval::Nobody,
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
        toolgate_core::Approval::Nobody,
    );
    again
        .resume(&rig.root.join(".toolgate/sessions"), &id)
        .unwrap();
    assert_eq!(again.messages(), agent.messages());
    assert_eq!(again.close(), 0, "the kept file is still referenced");
    assert_eq!(spill_files(&rig.root), after);
}

/// The text of every user message of a request, in order (either protocol).
fn user_texts(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        if m["role"] != "user" {
            continue;
        }
        match &m["content"] {
            Value::String(text) => out.push(text.clone()),
            Value::Array(blocks) => out.extend(
                blocks
                    .iter()
                    .filter(|b| b["type"] == "text")
                    .filter_map(|b| b["text"].as_str().map(str::to_owned)),
            ),
            _ => {}
        }
    }
    out
}

/// The spill files `text` points to (`saved to `PATH``), in order, without repeats.
fn pointers(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for rest in text.split("saved to `").skip(1) {
        let path = rest.split('`').next().unwrap_or_default().to_owned();
        if !out.contains(&path) {
            out.push(path);
        }
    }
    out
}

#[tokio::test]
async fn compaction_starts_by_itself_once_reported_usage_crosses_compact_percent() {
    for (kind, stream) in [(Kind::OpenAi, true), (Kind::Anthropic, false)] {
        let rig = rig(DisclosureSettings::default(), Policy::allow_all());
        // Another session's spill file: nothing here references it, and it is not this
        // session's to delete.
        let foreign = rig.root.join(".toolgate/spill/1-1-0-run_shell.txt");
        std::fs::create_dir_all(foreign.parent().unwrap()).unwrap();
        std::fs::write(&foreign, "another session's output\n").unwrap();
        let summary_pointers = Arc::new(Mutex::new(Vec::new()));
        let seen_by_summary = Arc::clone(&summary_pointers);
        // Threshold: 50 % of 10,000 tokens. The first two answers report 1,000 prompt
        // tokens (each result adds about 600), the third 6,000: only the request after it
        // is over the threshold.
        let fake = FakeServer::start(
            kind,
            vec![
                step(Reply::call("run_shell", json!({"command": "seq 1 100000"})).reporting(1_000)),
                step(Reply::call("run_shell", json!({"command": "seq 2 100000"})).reporting(1_000)),
                step(Reply::call("run_shell", json!({"command": "seq 3 100000"})).reporting(6_000)),
                // The summary request: no tools, the two older exchanges with both their
                // pointers. The summary keeps the first pointer and drops the second.
                check(move |body| {
                    assert!(
                        body.get("tools")
                            .is_none_or(|t| t.as_array().is_some_and(Vec::is_empty)),
                        "no tools for a summary, but a request with {} tools",
                        body["tools"].as_array().map_or(0, Vec::len)
                    );
                    let text = user_texts(body).join("\n");
                    assert!(text.contains("seq 1 100000"), "{text}");
                    assert!(text.contains("seq 2 100000"), "{text}");
                    assert!(
                        !text.contains("seq 3 100000"),
                        "the kept tail is not summarized: {text}"
                    );
                    let found = pointers(&text);
                    assert_eq!(found.len(), 2, "{text}");
                    let summary = format!(
                        "Counted with seq three times; the first count is saved to `{}`.",
                        found[0]
                    );
                    *seen_by_summary.lock().unwrap() = found;
                    Reply::text(summary)
                }),
                check(|body| {
                    let users = user_texts(body);
                    assert!(users[0].starts_with("count three times"), "{users:?}");
                    assert!(
                        users[0].contains("Counted with seq three times"),
                        "{users:?}"
                    );
                    let all = body["messages"].to_string();
                    assert!(
                        !all.contains("seq 1 100000"),
                        "older messages are gone: {all}"
                    );
                    assert!(
                        !all.contains("seq 2 100000"),
                        "older messages are gone: {all}"
                    );
                    assert!(
                        all.contains("seq 3 100000"),
                        "the newest exchange stays: {all}"
                    );
                    Reply::text("done")
                }),
            ],
        )
        .await;
        let settings = AgentSettings {
            context_tokens: 10_000,
            compact_percent: 50,
            // 400 characters: only the newest exchange stays word for word.
            keep_percent: 1,
            ..AgentSettings::default()
        };
        let mut agent = Agent::new(
            rig.tools.clone(),
            provider(kind, &fake, stream),
            settings,
            toolgate_core::Approval::Nobody,
        );
        let sessions = rig.root.join(".toolgate/sessions");
        agent.record_to(&sessions).unwrap();
        let (outcome, progress) = run(&mut agent, "count three times").await;
        assert_eq!(outcome.status, Status::Finished, "{kind:?}: {outcome:?}");
        assert_eq!(outcome.text, "done");
        assert_eq!(outcome.turns, 4, "the summary request is not a turn");
        assert_eq!(fake.remaining(), 0);
        assert_eq!(fake.requests().len(), 5);
        let compactions: Vec<(usize, usize, usize)> = progress
            .iter()
            .filter_map(|p| match p {
                Progress::Compacted {
                    before,
                    after,
                    deleted,
                } => Some((*before, *after, *deleted)),
                _ => None,
            })
            .collect();
        // Task, three calls with their results → the head (task + summary), the last call
        // and its result; the dropped pointer's file deleted.
        assert_eq!(compactions, [(7, 3, 1)], "{kind:?}");
        // … and the final answer after it.
        assert_eq!(agent.messages().len(), 4);

        let older = summary_pointers.lock().unwrap().clone();
        let live: String = agent.messages().iter().flat_map(Message::texts).collect();
        let newest = pointers(&live)
            .into_iter()
            .find(|p| !older.contains(p))
            .expect("the kept result's pointer");
        assert!(
            rig.root.join(&older[0]).exists(),
            "kept by the summary: {}",
            older[0]
        );
        assert!(
            !rig.root.join(&older[1]).exists(),
            "referenced by nothing live: {}",
            older[1]
        );
        assert!(
            rig.root.join(&newest).exists(),
            "kept with the newest exchange"
        );
        assert!(foreign.exists(), "another session's file stays");
        assert_eq!(agent.close(), 0, "every file left is referenced");

        // The transcript holds the compacted conversation.
        let id = agent.session_id().unwrap().to_owned();
        let mut again = Agent::new(
            rig.tools.clone(),
            provider(kind, &fake, stream),
            AgentSettings::default(),
            toolgate_core::Approval::Nobody,
        );
        again.resume(&sessions, &id).unwrap();
        assert_eq!(again.messages(), agent.messages());
    }
}
