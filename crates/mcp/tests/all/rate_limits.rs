//! The caller behind `serve --http`'s static token. `[rate_limits]`: a budget belongs to the
//! caller — the static token, or the client's address without one — not to a session, so
//! opening fresh sessions or sending stateless 2026-07-28 requests buys no extra calls. And a
//! token no header can carry (CR/LF) is refused at start.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolgate_core::{
    DispatchLimits, Dispatcher, Policy, RateLimits, RenderOptions, Scope, ToolOutput,
};
use toolgate_mcp::{HttpOptions, ToolgateServer, serve_http};
use toolgate_test_support::FnTool;

const TOKEN: &str = "tg-rate-token";

/// toolgate on loopback with `echo` under a limit of 3 calls a minute per caller, guarded by
/// `token` when given; its base URL.
async fn start(stop: &CancellationToken, token: Option<&str>) -> String {
    let echo = FnTool::new("echo")
        .describe("Answers.")
        .reply(|_args, _ctx| Box::pin(async move { Ok(ToolOutput::text("ran")) }))
        .erased();
    let limits = RateLimits::new(3, 0, &BTreeMap::new()).unwrap();
    let dispatcher = Dispatcher::new(
        toolgate_test_support::registry_with(vec![echo]),
        Scope::global(),
        Policy::allow_all(),
        DispatchLimits::default(),
    )
    .with_rate_limits(Arc::new(limits));
    let server = ToolgateServer::new(
        Arc::new(dispatcher),
        RenderOptions::default(),
        String::new(),
    );
    let options = HttpOptions {
        token: token.map(str::to_owned),
        max_sessions: 64,
        ..crate::loopback_options()
    };
    let addr = crate::spawn_http(server, options, stop).await;
    format!("http://{addr}")
}

/// POSTs `body` to `/mcp` (on `session`, as `version`): the session id it names and the
/// JSON-RPC reply.
async fn post(
    base: &str,
    token: Option<&str>,
    session: Option<&str>,
    version: &str,
    body: Value,
) -> (Option<String>, Value) {
    // A new client each time: a new connection, as a fresh client would open.
    let mut request = reqwest::Client::new()
        .post(format!("{base}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", version);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(id) = session {
        request = request.header("mcp-session-id", id);
    }
    request = request.body(body.to_string());
    if version == "2026-07-28" {
        // The revision names the method and tool in headers too, for routing.
        let method = body["method"].as_str().unwrap_or_default();
        let name = body["params"]["name"].as_str().unwrap_or_default();
        request = request
            .header("mcp-method", method)
            .header("mcp-name", name);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let id = response
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    let text = response.text().await.unwrap();
    assert!(status.is_success(), "{status}: {text}");
    let reply = crate::reply_in(&text).unwrap_or_else(|| panic!("no reply in {text}"));
    (id, reply)
}

/// Calls `echo` in a fresh 2025-11-25 session: whether it ran.
async fn in_fresh_session(base: &str, token: Option<&str>) -> bool {
    const V: &str = "2025-11-25";
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": V, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let (id, _) = post(base, token, None, V, init).await;
    let id = id.expect("a session id");
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "echo", "arguments": {}}});
    ran(&post(base, token, Some(&id), V, call).await.1)
}

/// Calls `echo` in a stateless 2026-07-28 request: whether it ran.
async fn stateless(base: &str, token: Option<&str>) -> bool {
    const V: &str = "2026-07-28";
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "echo", "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": V,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"}}}});
    ran(&post(base, token, None, V, call).await.1)
}

/// Whether a `tools/call` reply is the tool's answer, not the rate limit's refusal.
fn ran(reply: &Value) -> bool {
    let text = reply["result"]["content"][0]["text"].as_str().unwrap_or("");
    assert!(text == "ran" || text.contains("rate limit"), "{reply}");
    text == "ran"
}

/// Regression: every fresh session and every stateless request got a budget of its own, so
/// 12 of 12 calls ran against a limit of 3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fresh_sessions_and_stateless_requests_share_the_static_tokens_budget() {
    let stop = CancellationToken::new();
    let base = start(&stop, Some(TOKEN)).await;
    let mut runs = Vec::new();
    for _ in 0..3 {
        runs.push(in_fresh_session(&base, Some(TOKEN)).await);
        runs.push(stateless(&base, Some(TOKEN)).await);
    }
    assert_eq!(runs, [true, true, true, false, false, false]);
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_token_the_clients_address_holds_the_budget() {
    let stop = CancellationToken::new();
    let base = start(&stop, None).await;
    let mut runs = Vec::new();
    for _ in 0..3 {
        runs.push(stateless(&base, None).await);
        runs.push(in_fresh_session(&base, None).await);
    }
    assert_eq!(runs, [true, true, true, false, false, false]);
    stop.cancel();
}

/// Regression: a token read from a file with its CRLF was kept as it was, and no client
/// could ever send it.
#[tokio::test]
async fn a_static_token_with_cr_or_lf_is_refused_at_start() {
    let server = ToolgateServer::new(
        toolgate_test_support::dispatcher(toolgate_test_support::registry_with(Vec::new())),
        RenderOptions::default(),
        String::new(),
    );
    let options = HttpOptions {
        token: Some("tg-token\r\n".to_owned()),
        ..crate::loopback_options()
    };
    // Refused before it binds; a server that started would never return.
    let served = serve_http(server, options, CancellationToken::new(), |_| {});
    let err = tokio::time::timeout(toolgate_test_support::HANG_GUARD, served)
        .await
        .expect("serve_http started with the token instead of refusing it")
        .unwrap_err();
    assert!(matches!(err, toolgate_mcp::HttpError::BadToken), "{err}");
    assert!(err.to_string().contains("control character"), "{err}");
}
