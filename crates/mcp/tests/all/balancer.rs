//! `serve --http` behind a load balancer: `GET /healthz`, what the balancer probes on each
//! replica, answers 200 without a token and with any `Host`, while `/mcp` and `/metrics`
//! beside it stay behind the door; and `/mcp` accepts the balancer's name as `Host`
//! (`allowed_hosts`).

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use toolgate_core::{DispatchLimits, Dispatcher, Policy, RenderOptions, Scope};
use toolgate_mcp::{HEALTH_PATH, HttpOptions, Metrics, ToolgateServer};

const TOKEN: &str = "tg-health-token";

/// `serve_http` on loopback with the static token, metrics on and `allowed_hosts`; its base
/// URL.
async fn start(stop: &CancellationToken, allowed_hosts: &[&str]) -> String {
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
        token: Some(TOKEN.to_owned()),
        allowed_hosts: allowed_hosts.iter().map(|h| (*h).to_owned()).collect(),
        max_sessions: 4,
        metrics: Some(Arc::new(Metrics::new(None).unwrap())),
        ..crate::loopback_options()
    };
    let addr = crate::spawn_http(server, options, stop).await;
    format!("http://{addr}")
}

#[tokio::test]
async fn healthz_answers_without_a_token_while_mcp_and_metrics_stay_guarded() {
    let stop = CancellationToken::new();
    let base = start(&stop, &[]).await;
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

/// The status of an `initialize` POSTed to `/mcp` with `host` as the `Host` header.
async fn initialize_as(base: &str, host: &str) -> u16 {
    reqwest::Client::new()
        .post(format!("{base}/mcp"))
        .header("host", host)
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(
            serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"}}})
            .to_string(),
        )
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// Regression: HAProxy on mcp.example.com in front of replicas on loopback forwarded the
/// client's `Host: mcp.example.com`, and every request got 403 (DNS-rebinding protection
/// knew only loopback names).
#[tokio::test]
async fn a_loopback_replica_accepts_the_balancers_name_in_allowed_hosts_and_no_other() {
    let stop = CancellationToken::new();
    let strict = start(&stop, &[]).await;
    assert_eq!(initialize_as(&strict, "mcp.example.com:8080").await, 403);
    assert_eq!(initialize_as(&strict, "127.0.0.1:8080").await, 200);

    let behind = start(&stop, &["mcp.example.com"]).await;
    assert_eq!(initialize_as(&behind, "mcp.example.com:8080").await, 200);
    assert_eq!(initialize_as(&behind, "mcp.example.com").await, 200);
    assert_eq!(initialize_as(&behind, "localhost:1234").await, 200);
    assert_eq!(initialize_as(&behind, "evil.example").await, 403);
    stop.cancel();
}
