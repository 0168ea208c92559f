//! `GET /healthz`: what a load balancer probes on each replica. It answers 200 without a
//! token and with any `Host`, while `/mcp` and `/metrics` beside it stay behind the door.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use toolgate_core::{DispatchLimits, Dispatcher, Policy, RenderOptions, Scope};
use toolgate_mcp::{HEALTH_PATH, HttpOptions, Metrics, ToolgateServer, serve_http};

const TOKEN: &str = "tg-health-token";

/// `serve_http` on loopback with the static token and metrics on; its base URL.
async fn start(stop: &CancellationToken) -> String {
    let registry = toolgate_test_support::registry_with(Vec::new());
    let server = ToolgateServer::new(
        Arc::new(Dispatcher::new(
            registry,
            Scope::global(),
            Policy::allow_all(),
            DispatchLimits::default(),
        )),
        RenderOptions::default(),
        String::new(),
    );
    let options = HttpOptions {
        addr: "127.0.0.1:0".parse().unwrap(),
        token: Some(TOKEN.to_owned()),
        oauth: None,
        allowed_origins: Vec::new(),
        insecure_no_auth: false,
        max_sessions: 4,
        metrics: Some(Arc::new(Metrics::new(None))),
    };
    let (tx, rx) = tokio::sync::oneshot::channel::<SocketAddr>();
    tokio::spawn(serve_http(server, options, stop.clone(), move |a| {
        let _ = tx.send(a);
    }));
    let addr = rx.await.unwrap();
    // The test's reqwest client needs rustls' provider (the server installs it later).
    let _ = rustls::crypto::ring::default_provider().install_default();
    format!("http://{addr}")
}

#[tokio::test]
async fn healthz_answers_without_a_token_while_mcp_and_metrics_stay_guarded() {
    let stop = CancellationToken::new();
    let base = start(&stop).await;
    let http = reqwest::Client::new();

    let health = http
        .get(format!("{base}{HEALTH_PATH}"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    assert_eq!(health.text().await.unwrap(), "ok\n");
    // A balancer names the replica by its own address or service name, not loopback.
    let named = http
        .get(format!("{base}{HEALTH_PATH}"))
        .header("host", "toolgate-2:8765")
        .send()
        .await
        .unwrap();
    assert_eq!(named.status(), 200);

    for path in ["/mcp", "/metrics"] {
        let guarded = http.get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(guarded.status(), 401, "{path} without a token");
    }
    let metrics = http
        .get(format!("{base}/metrics"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(metrics.status(), 200);
    stop.cancel();
}
