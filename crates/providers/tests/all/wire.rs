//! Round trips, parallel calls, usage, retries and errors in both protocols.

use std::collections::HashMap;

use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolgate_providers::fake::{FakeServer, Reply, step};
use toolgate_providers::{
    Event, Finish, Kind, Message, Provider, ProviderConfig, ProviderError, Request, RetryConfig,
    ToolCall, ToolResult,
};

fn provider(kind: Kind, url: &str, stream: bool, key: Option<&str>) -> Provider {
    let config = ProviderConfig {
        kind,
        base_url: Some(url.to_owned()),
        model: Some("test-model".to_owned()),
        stream: Some(stream),
        retry: RetryConfig {
            max_retries: 2,
            initial_backoff_ms: 1,
            max_backoff_ms: 2_000,
        },
        ..ProviderConfig::default()
    };
    let env: HashMap<String, String> = key
        .map(|k| (kind.default_key_env().to_owned(), k.to_owned()))
        .into_iter()
        .collect();
    Provider::new("test", &config, |name| env.get(name).cloned()).unwrap()
}

fn tools(kind: Kind) -> Vec<serde_json::Value> {
    match kind {
        Kind::OpenAi => vec![
            json!({"type": "function", "function": {"name": "read_file", "description": "Read", "parameters": {"type": "object"}}}),
        ],
        Kind::Anthropic => vec![
            json!({"name": "read_file", "description": "Read", "input_schema": {"type": "object"}}),
        ],
    }
}

const BOTH: [(Kind, bool); 4] = [
    (Kind::OpenAi, false),
    (Kind::OpenAi, true),
    (Kind::Anthropic, false),
    (Kind::Anthropic, true),
];

#[tokio::test]
async fn parallel_tool_calls_and_text_round_trip_in_both_protocols_streamed_or_not() {
    for (kind, stream) in BOTH {
        let fake = FakeServer::start(
            kind,
            vec![
                step(Reply::calls(vec![
                    ("read_file", json!({"path": "a.txt"})),
                    ("grep", json!({"pattern": "fn main", "path": "src"})),
                ])),
                step(Reply::text("all done: 两个文件")),
            ],
        )
        .await;
        let p = provider(kind, fake.url(), stream, Some("sk-test"));
        let tools = tools(kind);
        let mut messages = vec![Message::user("look")];
        let mut streamed = String::new();
        let mut started = Vec::new();
        let mut on_event = |e: Event| match e {
            Event::Text(t) => streamed.push_str(&t),
            Event::ToolCall { name } => started.push(name),
            Event::Retrying { .. } => {}
        };
        let request = Request {
            system: "sys",
            tools: &tools,
            stable_tools: 1,
            messages: &messages,
        };
        let first = p
            .complete(&request, &mut on_event, &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(first.finish, Finish::ToolCalls, "{kind:?} {stream}");
        let names: Vec<&str> = first.tool_calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["read_file", "grep"]);
        let args: serde_json::Value = serde_json::from_str(&first.tool_calls[1].arguments).unwrap();
        assert_eq!(args, json!({"pattern": "fn main", "path": "src"}));
        assert_ne!(first.tool_calls[0].id, first.tool_calls[1].id);
        assert!(first.usage.input_tokens > 0);
        messages.push(first.message());
        messages.push(Message::Tool {
            results: first
                .tool_calls
                .iter()
                .map(|c| ToolResult {
                    call_id: c.id.clone(),
                    name: c.name.clone(),
                    content: format!("result of {}", c.name),
                    is_error: c.name == "grep",
                })
                .collect(),
        });
        let request = Request {
            system: "sys",
            tools: &tools,
            stable_tools: 1,
            messages: &messages,
        };
        let second = p
            .complete(&request, &mut on_event, &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(second.text, "all done: 两个文件");
        assert_eq!(second.finish, Finish::Stop);
        assert!(
            second.usage.cached_input_tokens > 0,
            "{kind:?}: the prefix of the first request is reported cached"
        );
        if stream {
            assert_eq!(streamed, "all done: 两个文件");
            assert_eq!(started, ["read_file", "grep"]);
        }
        // What the endpoint received: results answer their calls, errors are marked.
        let requests = fake.requests();
        assert_eq!(requests.len(), 2);
        let last = &requests[1];
        assert_eq!(
            last.tool_results(),
            ["result of read_file", "result of grep"]
        );
        match kind {
            Kind::OpenAi => {
                assert_eq!(last.path, "/v1/chat/completions");
                assert_eq!(last.header("authorization"), Some("Bearer sk-test"));
                assert_eq!(last.body["messages"][0]["role"], "system");
                let call_id = &last.body["messages"][2]["tool_calls"][0]["id"];
                assert_eq!(&last.body["messages"][3]["tool_call_id"], call_id);
                if stream {
                    assert_eq!(last.body["stream_options"]["include_usage"], true);
                }
            }
            Kind::Anthropic => {
                assert_eq!(last.path, "/v1/messages");
                assert_eq!(last.header("x-api-key"), Some("sk-test"));
                assert_eq!(last.header("anthropic-version"), Some("2023-06-01"));
                assert_eq!(last.body["system"][0]["cache_control"]["type"], "ephemeral");
                assert_eq!(last.body["tools"][0]["cache_control"]["type"], "ephemeral");
                let results = &last.body["messages"][2]["content"];
                assert_eq!(results[0]["type"], "tool_result");
                assert_eq!(results[1]["is_error"], true);
                assert!(results[0].get("is_error").is_none());
                assert_eq!(
                    results[1]["cache_control"]["type"], "ephemeral",
                    "last block"
                );
                assert_eq!(
                    last.body["messages"][1]["content"][0]["input"]["path"],
                    "a.txt"
                );
            }
        }
    }
}

#[tokio::test]
async fn a_429_is_retried_after_retry_after_and_a_529_overload_too() {
    for (kind, stream) in BOTH {
        let fake = FakeServer::start(
            kind,
            vec![
                step(Reply::status(429, "slow down").header("retry-after", "0")),
                step(Reply::status(529, "overloaded")),
                step(Reply::text("ok")),
            ],
        )
        .await;
        let p = provider(kind, fake.url(), stream, Some("k"));
        let mut retries = Vec::new();
        let messages = [Message::user("hi")];
        let response = p
            .complete(
                &Request {
                    system: "s",
                    tools: &[],
                    stable_tools: 0,
                    messages: &messages,
                },
                &mut |e| {
                    if let Event::Retrying {
                        attempt, reason, ..
                    } = e
                    {
                        retries.push((attempt, reason));
                    }
                },
                &CancellationToken::new(),
            )
            .await
            .unwrap();
        assert_eq!(response.text, "ok");
        assert_eq!(fake.requests().len(), 3);
        assert_eq!(retries.len(), 2, "{retries:?}");
        assert!(retries[0].1.starts_with("429: slow down"), "{retries:?}");
    }
}

#[tokio::test]
async fn retries_give_up_with_a_message_naming_provider_model_and_the_next_step() {
    let fake = FakeServer::start(
        Kind::OpenAi,
        (0..3).map(|_| step(Reply::status(503, "down"))).collect(),
    )
    .await;
    let p = provider(Kind::OpenAi, fake.url(), true, None);
    let messages = [Message::user("hi")];
    let err = p
        .complete(
            &Request {
                system: "s",
                tools: &[],
                stable_tools: 0,
                messages: &messages,
            },
            &mut |_| {},
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, ProviderError::Unavailable { attempts: 3, .. }),
        "{text}"
    );
    assert!(
        text.contains("`test`") && text.contains("`test-model`") && text.contains("--resume"),
        "{text}"
    );
}

#[tokio::test]
async fn a_retry_after_longer_than_allowed_fails_at_once_saying_so() {
    let fake = FakeServer::start(
        Kind::Anthropic,
        vec![step(
            Reply::status(429, "quota").header("retry-after", "3600"),
        )],
    )
    .await;
    let p = provider(Kind::Anthropic, fake.url(), false, Some("k"));
    let messages = [Message::user("hi")];
    let err = p
        .complete(
            &Request {
                system: "s",
                tools: &[],
                stable_tools: 0,
                messages: &messages,
            },
            &mut |_| {},
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, ProviderError::RetryTooLong { wait_s: 3600, .. }),
        "{err}"
    );
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn errors_401_404_400_name_what_to_fix_and_are_not_retried() {
    let cases: [(u16, &str, &[&str]); 3] = [
        (
            401,
            "invalid x-api-key",
            &["ANTHROPIC_API_KEY", "api_key_env", "invalid x-api-key"],
        ),
        (
            404,
            "model: nope",
            &["--model", "--base-url", "`test-model`"],
        ),
        (
            400,
            "prompt is too long",
            &["prompt is too long", "`test-model`", "context_tokens"],
        ),
    ];
    for (status, message, wanted) in cases {
        let fake =
            FakeServer::start(Kind::Anthropic, vec![step(Reply::status(status, message))]).await;
        let p = provider(Kind::Anthropic, fake.url(), true, Some("k"));
        let messages = [Message::user("hi")];
        let err = p
            .complete(
                &Request {
                    system: "s",
                    tools: &[],
                    stable_tools: 0,
                    messages: &messages,
                },
                &mut |_| {},
                &CancellationToken::new(),
            )
            .await
            .unwrap_err()
            .to_string();
        for w in wanted {
            assert!(err.contains(w), "{status}: `{w}` missing from: {err}");
        }
        assert_eq!(fake.requests().len(), 1, "{status} is not retried");
    }
}

#[tokio::test]
async fn a_missing_key_is_named_in_the_401_message() {
    let fake = FakeServer::start(Kind::OpenAi, vec![step(Reply::status(401, "no auth"))]).await;
    let p = provider(Kind::OpenAi, fake.url(), false, None);
    let messages = [Message::user("hi")];
    let err = p
        .complete(
            &Request {
                system: "s",
                tools: &[],
                stable_tools: 0,
                messages: &messages,
            },
            &mut |_| {},
            &CancellationToken::new(),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("OPENAI_API_KEY is not set"), "{err}");
    assert!(fake.requests()[0].header("authorization").is_none());
}

#[tokio::test]
async fn cancelling_stops_a_stalled_stream_and_keeps_nothing_half_done() {
    for kind in [Kind::OpenAi, Kind::Anthropic] {
        let fake = FakeServer::start(
            kind,
            vec![step(Reply::Stall {
                text: "thinking".into(),
            })],
        )
        .await;
        let p = provider(kind, fake.url(), true, Some("k"));
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        let messages = [Message::user("hi")];
        let mut seen = String::new();
        let err = p
            .complete(
                &Request {
                    system: "s",
                    tools: &[],
                    stable_tools: 0,
                    messages: &messages,
                },
                &mut |e| {
                    if let Event::Text(t) = e {
                        seen.push_str(&t);
                        trigger.cancel();
                    }
                },
                &cancel,
            )
            .await
            .unwrap_err();
        assert!(matches!(err, ProviderError::Cancelled { .. }), "{err}");
        assert_eq!(seen, "thinking");
    }
}

#[tokio::test]
async fn the_stable_prefix_is_byte_identical_as_the_conversation_grows() {
    for kind in [Kind::OpenAi, Kind::Anthropic] {
        let p = provider(kind, "http://127.0.0.1:9", true, None);
        let tools = tools(kind);
        let mut messages = vec![Message::user("a")];
        let prefix = |messages: &[Message]| {
            p.stable_prefix(&Request {
                system: "sys",
                tools: &tools,
                stable_tools: 1,
                messages,
            })
        };
        let first = prefix(&messages);
        messages.push(Message::Assistant {
            content: String::new(),
            tool_calls: vec![ToolCall {
                id: "1".into(),
                name: "read_file".into(),
                arguments: "{}".into(),
            }],
        });
        assert_eq!(first, prefix(&messages));
        assert!(String::from_utf8(first).unwrap().contains("read_file"));
    }
}
