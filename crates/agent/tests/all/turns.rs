//! Turns: round trips, parallel and ordered dispatch, errors fed back, spills, limits,
//! cancellation, resume, permissions.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolgate_agent::{Agent, AgentSettings, Progress, Status};
use toolgate_core::{Approval, ApprovalRequest, Approver, DisclosureSettings, Policy};
use toolgate_providers::fake::{FakeServer, Recorded, Reply, Step, step};
use toolgate_providers::{Kind, Message};
use toolgate_test_support::wait_until;

use crate::{MODES, agent, agent_approved_by, provider, rig, run};

/// A step that checks the request, then answers.
fn check(f: impl FnOnce(&Value) -> Reply + Send + 'static) -> Step {
    Box::new(f)
}

fn results(body: &Value) -> Vec<(String, bool)> {
    let recorded = Recorded {
        path: String::new(),
        headers: Vec::new(),
        body: body.clone(),
    };
    let texts = recorded.tool_results();
    // Error flags: Anthropic marks them; OpenAI has none, so the text says it.
    let mut flags = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        if m["role"] == "tool" {
            flags.push(
                m["content"]
                    .as_str()
                    .unwrap_or_default()
                    .starts_with("error"),
            );
        }
        for b in m["content"].as_array().into_iter().flatten() {
            if b["type"] == "tool_result" {
                flags.push(b["is_error"] == true);
            }
        }
    }
    texts.into_iter().zip(flags).collect()
}

#[tokio::test]
async fn a_tool_call_and_its_result_round_trip_in_every_mode() {
    for (kind, stream) in MODES {
        let rig = rig(DisclosureSettings::default(), Policy::allow_all());
        let fake = FakeServer::start(
            kind,
            vec![
                step(Reply::call("read_file", json!({"path": "README.md"}))),
                check(|body| {
                    let r = results(body);
                    assert_eq!(r.len(), 1);
                    assert!(r[0].0.contains("hello from the readme"), "{r:?}");
                    assert!(!r[0].1);
                    Reply::text("The readme says hello.")
                }),
            ],
        )
        .await;
        let mut agent = agent(&rig, kind, &fake, stream);
        let (outcome, progress) = run(&mut agent, "what does the readme say?").await;
        assert_eq!(
            outcome.status,
            Status::Finished,
            "{kind:?} {stream}: {outcome:?}"
        );
        assert_eq!(outcome.turns, 2);
        assert_eq!(outcome.text, "The readme says hello.");
        assert_eq!(outcome.tool_calls.len(), 1);
        assert_eq!(outcome.tool_calls[0].name, "read_file");
        assert_eq!(
            outcome.tool_calls[0].arguments,
            json!({"path": "README.md"})
        );
        assert!(outcome.usage.input_tokens > 0 && outcome.usage.output_tokens > 0);
        assert!(
            outcome.usage.cached_input_tokens > 0,
            "the second request reuses the prefix"
        );
        assert_eq!(fake.remaining(), 0);
        if stream {
            let text: String = progress
                .iter()
                .filter_map(|p| match p {
                    Progress::Text(t) => Some(t.as_str()),
                    _ => None,
                })
                .collect();
            assert_eq!(text, "The readme says hello.");
        }
        assert!(
            progress
                .iter()
                .any(|p| matches!(p, Progress::ToolDone(r) if r.name == "read_file"))
        );
        // The system prompt and tools are the same bytes in both requests.
        let requests = fake.requests();
        let prefix = |r: &Recorded| {
            (
                r.body["tools"].to_string(),
                r.body["system"].to_string(),
                r.body["messages"][0].to_string(),
            )
        };
        match kind {
            Kind::Anthropic => assert_eq!(prefix(&requests[0]).0, prefix(&requests[1]).0),
            Kind::OpenAi => assert_eq!(prefix(&requests[0]), prefix(&requests[1])),
        }
    }
}

#[tokio::test]
async fn parallel_reads_and_a_write_before_a_read_keep_the_call_order() {
    for (kind, stream) in [(Kind::OpenAi, true), (Kind::Anthropic, false)] {
        let rig = rig(DisclosureSettings::default(), Policy::allow_all());
        let fake = FakeServer::start(
            kind,
            vec![
                step(Reply::calls(vec![
                    ("read_file", json!({"path": "README.md"})),
                    ("grep", json!({"pattern": "hello", "literal": true})),
                ])),
                check(|body| {
                    let r = results(body);
                    assert_eq!(r.len(), 2, "{r:?}");
                    assert!(r[0].0.contains("# demo"), "{r:?}");
                    assert!(r[1].0.contains("README.md"), "{r:?}");
                    Reply::calls(vec![
                        (
                            "write_file",
                            json!({"path": "notes/a.txt", "content": "fresh words\n"}),
                        ),
                        ("read_file", json!({"path": "notes/a.txt"})),
                    ])
                }),
                check(|body| {
                    let r = results(body);
                    // The read came after the write it followed in the answer.
                    assert!(r[3].0.contains("fresh words"), "{r:?}");
                    Reply::text("done")
                }),
            ],
        )
        .await;
        let mut agent = agent(&rig, kind, &fake, stream);
        let (outcome, _) = run(&mut agent, "go").await;
        assert_eq!(outcome.status, Status::Finished, "{outcome:?}");
        assert_eq!(outcome.tool_calls.len(), 4);
        assert!(
            outcome.tool_calls.iter().all(|c| !c.is_error),
            "{outcome:?}"
        );
        assert_eq!(
            std::fs::read_to_string(rig.root.join("notes/a.txt")).unwrap(),
            "fresh words\n"
        );
    }
}

#[tokio::test]
async fn tool_errors_are_fed_back_and_the_model_goes_on() {
    for (kind, stream) in MODES {
        let rig = rig(DisclosureSettings::default(), Policy::allow_all());
        let fake = FakeServer::start(
            kind,
            vec![
                step(Reply::calls(vec![
                    ("read_fil", json!({"path": "README.md"})),
                    ("read_file", json!({"path": 5})),
                    ("read_file", json!({"path": "../../etc/passwd"})),
                ])),
                check(|body| {
                    let r = results(body);
                    assert_eq!(r.len(), 3);
                    assert!(r.iter().all(|(_, error)| *error), "{r:?}");
                    assert!(r[0].0.contains("did you mean `read_file`"), "{r:?}");
                    assert!(r[1].0.contains("invalid arguments"), "{r:?}");
                    Reply::text("recovered")
                }),
            ],
        )
        .await;
        let mut agent = agent(&rig, kind, &fake, stream);
        let (outcome, _) = run(&mut agent, "go").await;
        assert_eq!(outcome.status, Status::Finished, "{kind:?}: {outcome:?}");
        assert_eq!(outcome.text, "recovered");
        assert!(outcome.tool_calls.iter().all(|c| c.is_error));
    }
}

#[tokio::test]
async fn a_2mb_result_is_spilled_with_a_pointer_and_read_back_with_read_file() {
    for (kind, stream) in [(Kind::OpenAi, true), (Kind::Anthropic, true)] {
        let rig = rig(DisclosureSettings::default(), Policy::allow_all());
        let fake = FakeServer::start(
            kind,
            vec![
                step(Reply::call(
                    "run_shell",
                    json!({"command": "seq 1 300000 | sed 's/^/row /'"}),
                )),
                check(|body| {
                    let r = results(body);
                    let text = &r[0].0;
                    assert!(
                        text.chars().count() < 20_000,
                        "an excerpt, not 2 MB: {}",
                        text.len()
                    );
                    let path = text
                        .split("saved to `")
                        .nth(1)
                        .and_then(|rest| rest.split('`').next())
                        .unwrap_or_else(|| panic!("no pointer in {text}"))
                        .to_owned();
                    Reply::call(
                        "read_file",
                        json!({"path": path, "offset": 150000, "limit": 3}),
                    )
                }),
                check(|body| {
                    let r = results(body);
                    let text = &r[1].0;
                    assert!(!r[1].1, "{text}");
                    assert!(
                        text.contains("row 150000") && text.contains("row 150002"),
                        "{text}"
                    );
                    Reply::text("found row 150000")
                }),
            ],
        )
        .await;
        let mut agent = agent(&rig, kind, &fake, stream);
        let (outcome, _) = run(&mut agent, "print many rows").await;
        assert_eq!(outcome.status, Status::Finished, "{outcome:?}");
        assert!(outcome.tool_calls[0].spilled, "{outcome:?}");
        let spilled: u64 = std::fs::read_dir(rig.root.join(".toolgate/spill"))
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap().len())
            .max()
            .unwrap();
        assert!(
            spilled > 2_000_000,
            "the whole output is on disk: {spilled}"
        );
    }
}

#[tokio::test]
async fn max_turns_stops_the_loop_and_says_how_to_go_on() {
    let rig = rig(DisclosureSettings::default(), Policy::allow_all());
    let fake = FakeServer::start(
        Kind::OpenAi,
        (0..3)
            .map(|_| step(Reply::call("list_dir", json!({}))))
            .collect(),
    )
    .await;
    let settings = AgentSettings {
        max_turns: 2,
        ..AgentSettings::default()
    };
    let mut agent = Agent::new(
        rig.tools.clone(),
        provider(Kind::OpenAi, &fake, true),
        settings,
        toolgate_core::Approval::Nobody,
    );
    let (outcome, _) = run(&mut agent, "loop forever").await;
    assert_eq!(outcome.status, Status::MaxTurns);
    assert_eq!(outcome.turns, 2);
    assert_eq!(fake.requests().len(), 2);
    assert!(outcome.error.unwrap().contains("--max-turns"));
}

#[tokio::test]
async fn a_provider_error_ends_the_task_with_a_message_naming_the_fix() {
    let rig = rig(DisclosureSettings::default(), Policy::allow_all());
    let fake = FakeServer::start(Kind::Anthropic, vec![step(Reply::status(401, "bad key"))]).await;
    let mut agent = agent(&rig, Kind::Anthropic, &fake, true);
    let (outcome, _) = run(&mut agent, "hi").await;
    assert_eq!(outcome.status, Status::ProviderError);
    assert!(outcome.error.unwrap().contains("ANTHROPIC_API_KEY"));
}

#[tokio::test]
async fn ctrl_c_cancels_the_running_tool_and_the_conversation_goes_on() {
    for kind in [Kind::OpenAi, Kind::Anthropic] {
        let rig = rig(DisclosureSettings::default(), Policy::allow_all());
        let started = rig.root.join("started");
        let fake = FakeServer::start(
            kind,
            vec![
                step(Reply::call(
                    "run_shell",
                    json!({"command": "touch started && exec sleep 600"}),
                )),
                check(|body| {
                    let r = results(body);
                    assert!(r[0].1 && r[0].0.contains("cancelled"), "{r:?}");
                    let last = body["messages"].as_array().unwrap().last().unwrap().clone();
                    assert_eq!(last["role"], "user", "{last}");
                    Reply::text("ok, stopped")
                }),
            ],
        )
        .await;
        let mut agent = agent(&rig, kind, &fake, true);
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        let outcome = agent
            .run(
                "sleep",
                &mut |p| {
                    if let Progress::ToolsRunning(_) = p {
                        // Ctrl-C once the shell runs the command, not while it is starting.
                        let (t, started) = (trigger.clone(), started.clone());
                        tokio::spawn(async move {
                            wait_until("the command to start", || started.exists()).await;
                            t.cancel();
                        });
                    }
                },
                &cancel,
            )
            .await;
        // Had the cancel not stopped `sleep 600`, the run would still be waiting for it.
        assert_eq!(outcome.status, Status::Cancelled);
        assert!(outcome.tool_calls[0].is_error);
        // The next task starts from a well-formed conversation.
        let (next, _) = run(&mut agent, "what happened?").await;
        assert_eq!(next.status, Status::Finished, "{next:?}");
    }
}

#[tokio::test]
async fn ctrl_c_during_the_answer_keeps_the_conversation_well_formed() {
    let rig = rig(DisclosureSettings::default(), Policy::allow_all());
    let fake = FakeServer::start(
        Kind::Anthropic,
        vec![
            step(Reply::Stall {
                text: "Let me think".into(),
            }),
            check(|body| {
                let roles: Vec<&str> = body["messages"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|m| m["role"].as_str().unwrap())
                    .collect();
                assert_eq!(roles, ["user", "assistant", "user"]);
                Reply::text("here")
            }),
        ],
    )
    .await;
    let mut agent = agent(&rig, Kind::Anthropic, &fake, true);
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let outcome = agent
        .run(
            "think",
            &mut |p| {
                if let Progress::Text(_) = p {
                    trigger.cancel();
                }
            },
            &cancel,
        )
        .await;
    assert_eq!(outcome.status, Status::Cancelled);
    let (next, _) = run(&mut agent, "again").await;
    assert_eq!(next.text, "here");
}

#[tokio::test]
async fn a_session_resumes_from_its_transcript() {
    for kind in [Kind::OpenAi, Kind::Anthropic] {
        let rig = rig(DisclosureSettings::default(), Policy::allow_all());
        let sessions = rig.root.join(".toolgate/sessions");
        let fake = FakeServer::start(
            kind,
            vec![
                step(Reply::call("read_file", json!({"path": "README.md"}))),
                step(Reply::text("first answer")),
                check(|body| {
                    let text = body["messages"].to_string();
                    assert!(
                        text.contains("first task") && text.contains("first answer"),
                        "{text}"
                    );
                    assert!(text.contains("hello from the readme"), "{text}");
                    assert!(text.contains("second task"), "{text}");
                    Reply::text("second answer")
                }),
            ],
        )
        .await;
        let mut first = agent(&rig, kind, &fake, false);
        first.record_to(&sessions).unwrap();
        let id = first.session_id().unwrap().to_owned();
        let (outcome, _) = run(&mut first, "first task").await;
        assert_eq!(outcome.text, "first answer");
        let before = first.messages().to_vec();
        drop(first);
        let mut second = agent(&rig, kind, &fake, false);
        second.resume(&sessions, &id).unwrap();
        assert_eq!(second.messages(), &before[..]);
        assert!(second.usage().input_tokens > 0, "usage restored");
        let (outcome, _) = run(&mut second, "second task").await;
        assert_eq!(outcome.text, "second answer");
        // The transcript has everything for a third run.
        let mut third = agent(&rig, kind, &fake, false);
        third.resume(&sessions, "last").unwrap();
        assert_eq!(third.messages().len(), before.len() + 2);
        assert!(
            matches!(third.messages().last(), Some(Message::Assistant { content, .. }) if content == "second answer")
        );
    }
}

struct Answer {
    approve: bool,
    asked: AtomicUsize,
}

impl Approver for Answer {
    fn approve(&self, request: ApprovalRequest) -> BoxFuture<'static, bool> {
        assert_eq!(request.tool, "write_file");
        assert_eq!(request.rule, "ask = [\"write_file\"]");
        self.asked.fetch_add(1, Ordering::SeqCst);
        let yes = self.approve;
        Box::pin(async move { yes })
    }
}

#[tokio::test]
async fn ask_rules_go_to_the_approver_and_without_one_are_denied_naming_the_rule() {
    let policy = Policy::from_lists(&[], &["write_file".to_owned()], &[]).unwrap();
    for approver in [None, Some(false), Some(true)] {
        let rig = rig(DisclosureSettings::default(), policy.clone());
        let expect = approver;
        let fake = FakeServer::start(
            Kind::OpenAi,
            vec![
                step(Reply::call(
                    "write_file",
                    json!({"path": "x.txt", "content": "x"}),
                )),
                check(move |body| {
                    let r = results(body);
                    match expect {
                        None => assert!(
                            r[0].0.contains("write_file") && r[0].0.contains("nobody can approve"),
                            "{r:?}"
                        ),
                        Some(false) => assert!(r[0].0.contains("declined"), "{r:?}"),
                        Some(true) => assert!(!r[0].1, "{r:?}"),
                    }
                    Reply::text("ok")
                }),
            ],
        )
        .await;
        let answer = Arc::new(Answer {
            approve: approver == Some(true),
            asked: AtomicUsize::new(0),
        });
        let approval = match approver {
            Some(_) => Approval::By(Arc::clone(&answer) as Arc<dyn Approver>),
            None => Approval::Nobody,
        };
        let mut agent = agent_approved_by(&rig, Kind::OpenAi, &fake, true, approval);
        // The agent's session: the approval it was given, no MCP client, no caller.
        let session = agent.session();
        assert_eq!(
            matches!(session.approval(), Approval::By(_)),
            approver.is_some()
        );
        assert!(session.client().is_none() && session.identity().is_none());
        assert!(
            session.profile().is_none(),
            "no client cuts the agent's results"
        );
        let (outcome, _) = run(&mut agent, "write").await;
        assert_eq!(outcome.status, Status::Finished);
        assert_eq!(rig.root.join("x.txt").exists(), approver == Some(true));
        assert_eq!(
            answer.asked.load(Ordering::SeqCst),
            usize::from(approver.is_some())
        );
    }
}
