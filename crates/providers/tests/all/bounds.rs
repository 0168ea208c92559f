//! Time and size bounds: a provider that never answers, stalls mid-stream or streams
//! without end gets a clear error, never a hang or unbounded memory.

use std::collections::HashMap;

use tokio_util::sync::CancellationToken;
use toolgate_providers::fake::{FakeServer, Reply, step};
use toolgate_providers::{
    Kind, Message, Provider, ProviderConfig, ProviderError, Request, RetryConfig,
};

fn provider(kind: Kind, url: &str, stream: bool) -> Provider {
    let config = ProviderConfig {
        kind,
        base_url: Some(url.to_owned()),
        model: Some("test-model".to_owned()),
        stream: Some(stream),
        first_byte_timeout_secs: Some(1),
        idle_timeout_secs: Some(1),
        retry: RetryConfig {
            max_retries: 1,
            initial_backoff_ms: 1,
            max_backoff_ms: 10,
        },
        ..ProviderConfig::default()
    };
    let env: HashMap<String, String> = HashMap::new();
    Provider::new("test", &config, |name| env.get(name).cloned()).unwrap()
}

async fn complete(p: &Provider) -> Result<toolgate_providers::Response, ProviderError> {
    let messages = [Message::user("hi")];
    let request = Request {
        system: "s",
        tools: &[],
        stable_tools: 0,
        messages: &messages,
    };
    p.complete(&request, &mut |_| {}, &CancellationToken::new())
        .await
}

#[tokio::test]
async fn a_provider_that_never_answers_fails_after_the_retries_naming_the_timeout() {
    for (kind, stream) in [(Kind::OpenAi, true), (Kind::Anthropic, false)] {
        let fake = FakeServer::start(kind, vec![step(Reply::Silent), step(Reply::Silent)]).await;
        let err = complete(&provider(kind, fake.url(), stream))
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(err, ProviderError::Unavailable { attempts: 2, .. }),
            "{text}"
        );
        assert!(text.contains("first_byte_timeout_secs"), "{text}");
        assert_eq!(fake.requests().len(), 2, "retried once");
    }
}

#[tokio::test]
async fn a_stream_that_stalls_midway_fails_naming_the_idle_timeout() {
    for kind in [Kind::OpenAi, Kind::Anthropic] {
        let fake = FakeServer::start(
            kind,
            vec![step(Reply::Stall {
                text: "thinking".into(),
            })],
        )
        .await;
        let err = complete(&provider(kind, fake.url(), true))
            .await
            .unwrap_err();
        let text = err.to_string();
        // Part of the answer was shown, so it is not retried.
        assert!(
            matches!(err, ProviderError::Unavailable { attempts: 1, .. }),
            "{text}"
        );
        assert!(text.contains("idle_timeout_secs"), "{text}");
    }
}

#[tokio::test]
async fn an_endless_stream_or_line_is_refused_past_its_bound() {
    for kind in [Kind::OpenAi, Kind::Anthropic] {
        for (reply, what) in [
            (Reply::Endless, "a message"),
            (Reply::EndlessLine, "an event-stream line"),
        ] {
            let fake = FakeServer::start(kind, vec![step(reply)]).await;
            let err = complete(&provider(kind, fake.url(), true))
                .await
                .unwrap_err();
            let text = err.to_string();
            assert!(matches!(err, ProviderError::TooLarge { .. }), "{text}");
            assert!(text.contains(what), "{text}");
        }
    }
}

#[test]
fn a_zero_timeout_is_refused() {
    let config = ProviderConfig {
        idle_timeout_secs: Some(0),
        ..ProviderConfig::default()
    };
    let err = Provider::new("p", &config, |_| None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("idle_timeout_secs = 0"), "{err}");
}
