//! The catalog cache: a server's tools listed before it starts, nothing announced when its
//! list did not change, and mounted schemas rendered without formats clients reject.

use std::time::Duration;

use serde_json::json;
use toolgate_core::{Protocol, RenderOptions, render_tools};
use toolgate_gateway::CatalogCache;

use crate::support::{fake, setup, stdio};

#[tokio::test]
async fn a_cached_catalog_lists_a_servers_tools_before_it_starts_and_an_unchanged_list_announces_nothing()
 {
    let cache_dir = tempfile::tempdir().unwrap();
    let workdir = tempfile::tempdir().unwrap();
    let first = setup();
    let mark = first.mark.clone();
    let mut config = stdio(&fake(), &["normal"], &mark);
    config.cwd = Some(workdir.path().to_path_buf());

    // First run: nothing cached, the server's tools arrive when it is ready, then are saved.
    let rig = first
        .server("srv", config.clone())
        .catalog(CatalogCache::new(cache_dir.path().to_path_buf()))
        .build();
    assert_eq!(rig.gateway.cached_servers(), 0);
    rig.gateway.start();
    assert!(rig.dispatcher.snapshot().incomplete, "starting, not cached");
    rig.wait_for_tool("mcp__srv__ok", Duration::from_secs(20))
        .await;
    rig.gateway.shutdown().await;

    // Second run, same launch config: listed at once, the snapshot complete.
    let mut second = setup();
    second.mark = mark;
    let rig = second
        .server("srv", config)
        .catalog(CatalogCache::new(cache_dir.path().to_path_buf()))
        .build();
    assert_eq!(rig.gateway.cached_servers(), 1);
    let snap = rig.dispatcher.snapshot();
    assert!(
        snap.get("mcp__srv__ok").is_some(),
        "cached tools listed before start"
    );
    rig.gateway.start();
    let before = rig.registry.generation();
    assert!(
        !rig.dispatcher.snapshot().incomplete,
        "cached: nothing pending"
    );
    assert!(!rig.gateway.pending());
    rig.gateway.settled().await;
    assert_eq!(
        rig.registry.generation(),
        before,
        "the server listed what the cache held: no list_changed"
    );
    // A cached tool is callable: the call waits for the server.
    let out = rig
        .call("mcp__srv__ok", json!({"message": "from the cache"}))
        .await;
    assert!(out.text.contains("from the cache"), "{}", out.text);
    rig.gateway.shutdown().await;
}

#[tokio::test]
async fn mounted_tool_schemas_render_without_non_portable_formats() {
    let rig = setup().fake("srv", &["normal"]).build();
    rig.gateway.start();
    rig.wait_for_tool("mcp__srv__big", Duration::from_secs(20))
        .await;
    let snap = rig.dispatcher.snapshot();
    let raw = snap
        .get("mcp__srv__big")
        .unwrap()
        .spec()
        .input_schema
        .clone();
    assert!(
        json!(*raw).to_string().contains("uint64"),
        "the server declares it"
    );
    for protocol in [Protocol::Mcp, Protocol::OpenAi, Protocol::Anthropic] {
        let rendered = render_tools(
            snap.tools.values().map(|t| t.as_ref()),
            protocol,
            &RenderOptions::default(),
        );
        let text = serde_json::to_string(&rendered).unwrap();
        assert!(!text.contains("uint64"), "{protocol:?}: {text}");
        assert!(text.contains("\"minimum\":0"));
    }
    rig.gateway.shutdown().await;
}
