//! `toolgate run` against a provider that never answers, stalls mid-stream or streams
//! without end: a provider error (exit 1) naming the bound, never a hang or unbounded
//! memory.

use std::path::Path;
use std::process::Output;

use serde_json::Value;
use toolgate_providers::Kind;
use toolgate_providers::fake::{FakeServer, Reply, step};

use crate::agent::provider_flags;
use crate::{project, toolgate};

/// A user config with short timeouts for the `openai` and `anthropic` providers.
fn short_timeouts(dir: &Path) -> String {
    let path = dir.join("user.toml");
    let mut text = String::new();
    for name in ["openai", "anthropic"] {
        text.push_str(&format!(
            "[providers.{name}]\nkind = \"{name}\"\nconnect_timeout_secs = 5\nfirst_byte_timeout_secs = 1\nidle_timeout_secs = 1\n\n[providers.{name}.retry]\nmax_retries = 1\ninitial_backoff_ms = 10\nmax_backoff_ms = 100\n\n"
        ));
    }
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

async fn run(dir: &Path, kind: Kind, fake: &FakeServer) -> Output {
    let mut args = vec![
        "--config".to_owned(),
        short_timeouts(dir),
        "run".to_owned(),
        "--json".to_owned(),
    ];
    args.extend(provider_flags(kind, fake));
    args.push("hi".into());
    let dir = dir.to_owned();
    tokio::task::spawn_blocking(move || {
        toolgate(&dir)
            .args(&args)
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

fn provider_error(out: &Output) -> String {
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: stdout {} stderr {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert_eq!(report["status"], "provider_error", "{report}");
    report["error"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_provider_that_never_answers_is_a_provider_error_after_the_retries() {
    for kind in [Kind::OpenAi, Kind::Anthropic] {
        let dir = project();
        let fake = FakeServer::start(kind, vec![step(Reply::Silent), step(Reply::Silent)]).await;
        let error = provider_error(&run(dir.path(), kind, &fake).await);
        assert!(
            error.contains("first_byte_timeout_secs") && error.contains("2 attempts"),
            "{error}"
        );
        assert_eq!(fake.requests().len(), 2);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stream_that_stalls_midway_is_a_provider_error() {
    for kind in [Kind::OpenAi, Kind::Anthropic] {
        let dir = project();
        let fake = FakeServer::start(
            kind,
            vec![step(Reply::Stall {
                text: "let me think".into(),
            })],
        )
        .await;
        let error = provider_error(&run(dir.path(), kind, &fake).await);
        assert!(error.contains("idle_timeout_secs"), "{error}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_endless_stream_is_a_provider_error_not_unbounded_memory() {
    for (kind, reply) in [
        (Kind::OpenAi, Reply::Endless),
        (Kind::Anthropic, Reply::Endless),
        (Kind::OpenAi, Reply::EndlessLine),
    ] {
        let dir = project();
        let fake = FakeServer::start(kind, vec![step(reply)]).await;
        let error = provider_error(&run(dir.path(), kind, &fake).await);
        assert!(
            error.contains("sent more than toolgate reads for one answer")
                && error.contains("bytes"),
            "{error}"
        );
    }
}
