//! `@modelcontextprotocol/server-everything`, over stdio and over Streamable HTTP.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use toolgate_core::{CallContext, Concurrency, Media, Progress, RawArgs};
use toolgate_gateway::{McpServerConfig, ServerState};

use toolgate_test_support::HANG_GUARD;

use crate::support::{Rig, assert_no_survivors, node, npm_server, setup, stdio};

/// Checks what every transport must carry: text, structured content, resource links, an
/// embedded resource, the tiny image, progress, schema errors.
async fn exercise(rig: &Rig, server: &str) {
    let name = |tool: &str| format!("mcp__{server}__{tool}");
    // Registered by the server right after `initialize`, announced with list_changed.
    rig.wait_for_tool(&name("simulate-research-query"), Duration::from_secs(20))
        .await;

    let out = rig.call(&name("echo"), json!({"message": "hi"})).await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(out.text, "Echo: hi");

    let tool = rig
        .dispatcher
        .snapshot()
        .get(&name("get-structured-content"))
        .cloned()
        .unwrap();
    assert!(
        tool.meta().output_schema.is_some(),
        "the output schema passes through"
    );
    assert_eq!(tool.meta().concurrency, Concurrency::ReadOnly);
    assert_eq!(tool.meta().action, "mcp.read");
    let out = rig
        .call(
            &name("get-structured-content"),
            json!({"location": "Chicago"}),
        )
        .await;
    assert_eq!(
        out.external_structured,
        Some(json!({"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82}))
    );

    let out = rig
        .call(&name("get-resource-links"), json!({"count": 3}))
        .await;
    let links = out
        .media
        .iter()
        .filter(|m| matches!(m, Media::ResourceLink { .. }))
        .count();
    assert_eq!(links, 3, "{:?}", out.media);
    assert!(!out.text.is_empty(), "the intro text is kept");

    let out = rig
        .call(
            &name("get-resource-reference"),
            json!({"resourceType": "Text", "resourceId": 2}),
        )
        .await;
    assert!(
        out.media
            .iter()
            .any(|m| matches!(m, Media::Resource { uri, .. } if uri.contains('2'))),
        "{:?}",
        out.media
    );

    let out = rig.call(&name("get-tiny-image"), json!({})).await;
    let image = out
        .media
        .iter()
        .find_map(|m| match m {
            Media::Image { mime, data } => Some((mime.clone(), data.len())),
            _ => None,
        })
        .expect("an image");
    assert_eq!(image.0, "image/png");
    assert!(image.1 > 100);

    let seen: Arc<Mutex<Vec<Progress>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let ctx = CallContext {
        progress: Some(Arc::new(move |p| sink.lock().unwrap().push(p))),
        ..CallContext::unattended()
    };
    let out = rig
        .dispatcher
        .call(
            &name("trigger-long-running-operation"),
            RawArgs::Json(json!({"duration": 1, "steps": 4})),
            ctx,
        )
        .await;
    assert!(
        out.text.contains("Long running operation completed"),
        "{}",
        out.text
    );
    let seen = seen.lock().unwrap().clone();
    let steps: Vec<f64> = seen.iter().map(|p| p.progress).collect();
    assert_eq!(
        steps,
        [1.0, 2.0, 3.0, 4.0],
        "progress is forwarded in order"
    );
    assert!(seen.iter().all(|p| p.total == Some(4.0)));

    let out = rig.call(&name("echo"), json!({})).await;
    assert!(out.is_error);
    assert!(
        out.text.contains("\"message\" is a required property"),
        "{}",
        out.text
    );
}

#[tokio::test]
async fn everything_over_stdio() {
    let builder = setup();
    let config = stdio(
        &node(),
        &[&npm_server("server-everything"), "stdio"],
        &builder.mark,
    );
    let rig = builder.server("everything", config).build();
    rig.gateway.start();
    exercise(&rig, "everything").await;
    let status = &rig.gateway.status()[0];
    assert_eq!(status.state, ServerState::Ready);
    assert!(status.startup.is_some());
    rig.finish().await;
}

/// A free loopback port.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test]
async fn everything_over_streamable_http() {
    let builder = setup();
    let port = free_port();
    // The test runs the HTTP server itself; the gateway only dials it.
    let mut server = tokio::process::Command::new(node())
        .arg(npm_server("server-everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .env("TOOLGATE_TEST_MARK", &builder.mark)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let started = Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            started.elapsed() < HANG_GUARD,
            "server-everything did not listen"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let config = McpServerConfig {
        url: Some(format!("http://127.0.0.1:{port}/mcp")),
        headers: Some([("X-Test".to_owned(), "1".to_owned())].into()),
        ..McpServerConfig::default()
    };
    let rig = builder.server("web", config).build();
    rig.gateway.start();
    exercise(&rig, "web").await;
    let mark = rig.mark.clone();
    rig.gateway.shutdown().await;
    server.kill().await.unwrap();
    assert_no_survivors(&mark).await;
}

#[tokio::test]
async fn an_http_server_that_is_down_fails_with_the_url() {
    let port = free_port();
    for scheme in ["http", "https"] {
        let config = McpServerConfig {
            url: Some(format!("{scheme}://127.0.0.1:{port}/mcp")),
            startup_timeout_sec: Some(5.0),
            ..McpServerConfig::default()
        };
        let rig = setup().server("down", config).build();
        rig.gateway.start_all().await;
        let ServerState::Failed(reason) = rig.gateway.status()[0].state.clone() else {
            panic!("should fail")
        };
        assert!(reason.contains(&format!("127.0.0.1:{port}")), "{reason}");
        rig.finish().await;
    }
}

/// Starts server-everything's Streamable HTTP mode on `port`.
async fn http_everything(port: u16, mark: &str) -> tokio::process::Child {
    let server = tokio::process::Command::new(node())
        .arg(npm_server("server-everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .env("TOOLGATE_TEST_MARK", mark)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let started = Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(started.elapsed() < HANG_GUARD, "no listener");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    server
}

#[tokio::test]
async fn an_http_server_that_goes_away_fails_calls_clearly_and_is_used_again_when_back() {
    let builder = setup();
    let port = free_port();
    let mut server = http_everything(port, &builder.mark).await;
    let config = McpServerConfig {
        url: Some(format!("http://127.0.0.1:{port}/mcp")),
        tool_timeout_sec: Some(5.0),
        ..McpServerConfig::default()
    };
    let rig = builder.server("web", config).build();
    rig.gateway.start_all().await;
    assert_eq!(
        rig.call("mcp__web__echo", json!({"message": "a"}))
            .await
            .text,
        "Echo: a"
    );
    server.kill().await.unwrap();
    let started = Instant::now();
    let out = rig.call("mcp__web__echo", json!({"message": "b"})).await;
    assert!(out.is_error);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "fails at once, not at the timeout"
    );
    assert!(
        out.text
            .contains("stopped while `echo` was running (the connection failed:"),
        "{}",
        out.text
    );
    assert!(
        out.text.contains(&format!("127.0.0.1:{port}")),
        "{}",
        out.text
    );
    assert!(
        !out.text.contains("rmcp::"),
        "no Rust type names: {}",
        out.text
    );
    // Back on the same port: the next call reconnects (a new session) and works.
    let mut server = http_everything(port, &rig.mark).await;
    let out = rig.call("mcp__web__echo", json!({"message": "c"})).await;
    assert_eq!(out.text, "Echo: c");
    let mark = rig.mark.clone();
    rig.gateway.shutdown().await;
    server.kill().await.unwrap();
    assert_no_survivors(&mark).await;
}

#[tokio::test]
async fn everythings_resources_are_listed_and_read_through_the_resource_tools() {
    let builder = setup().with_budget();
    let config = stdio(
        &node(),
        &[&npm_server("server-everything"), "stdio"],
        &builder.mark,
    );
    let rig = builder.server("everything", config).build();
    rig.gateway.start_all().await;
    let out = rig.call(toolgate_gateway::LIST_RESOURCES, json!({})).await;
    assert!(!out.is_error, "{}", out.text);
    assert!(
        out.text.contains(
            "- demo://resource/static/document/architecture.md · architecture.md · everything · text/markdown"
        ),
        "{}",
        out.text
    );
    assert!(
        out.text
            .contains("- demo://resource/dynamic/text/{resourceId} · "),
        "{}",
        out.text
    );
    let read = |uri: &'static str| rig.call(toolgate_gateway::READ_RESOURCE, json!({ "uri": uri }));
    let out = read("demo://resource/dynamic/text/7").await;
    assert!(
        out.text.starts_with(
            "[resource demo://resource/dynamic/text/7 (text/plain) from MCP server `everything`]\nResource 7: This is a plaintext resource"
        ),
        "{}",
        out.text
    );
    // A blob, even of text/plain, is described.
    let out = read("demo://resource/dynamic/blob/7").await;
    assert!(
        out.text.contains("binary, text/plain,") && out.text.contains("bytes; not shown"),
        "{}",
        out.text
    );
    rig.finish().await;
}
