//! `prefix = "never"`: a server's tools and prompts under their own names, and a name clash
//! that fails that server alone (built-ins, skills' prompts and other servers keep working).

use serde_json::json;
use toolgate_core::Policy;
use toolgate_gateway::{CatalogCache, ForwardError, McpServerConfig, Prefix, ServerState};

use crate::misbehave::state;
use crate::support::{assert_no_survivors_except, fake, node, npm_server, setup, stdio};

fn never(mut config: McpServerConfig) -> McpServerConfig {
    config.prefix = Some(Prefix::Never);
    config
}

/// The reason of a server that is not mounted for a name clash.
fn clash(rig: &crate::support::Rig, name: &str) -> String {
    match state(rig, name) {
        ServerState::NameClash(reason) => reason,
        other => panic!("`{name}` should not be mounted for a name clash, but is {other:?}"),
    }
}

#[tokio::test]
async fn a_never_server_keeps_its_own_tool_and_prompt_names() {
    // Rules name a `never` server's tools by their own names.
    let builder = setup().policy(Policy::from_lists(&[], &[], &["get-sum".to_owned()]).unwrap());
    let everything = never(stdio(
        &node(),
        &[&npm_server("server-everything"), "stdio"],
        &builder.mark,
    ));
    let rig = builder
        .server("everything", everything)
        .fake("other", &["normal"])
        .build();
    rig.gateway.start_all().await;
    assert_eq!(state(&rig, "everything"), ServerState::Ready);

    let out = rig.call("echo", json!({"message": "hi"})).await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(out.text, "Echo: hi");
    let names = rig.names();
    assert!(
        names.iter().any(|n| n == "get-structured-content"),
        "{names:?}"
    );
    assert!(
        !names.iter().any(|n| n.starts_with("mcp__everything__")),
        "{names:?}"
    );
    // The other server, and the built-in, as before.
    let out = rig
        .call("mcp__other__ok", json!({"message": "still"}))
        .await;
    assert_eq!(out.text, "still");
    assert_eq!(rig.call("builtin_echo", json!({})).await.text, "builtin ok");
    // Its tools keep their actions (`mcp.read` / `mcp.write`) for action rules.
    let snap = rig.dispatcher.snapshot();
    assert_eq!(
        snap.get("get-structured-content").unwrap().meta().action,
        "mcp.read"
    );
    drop(snap);
    let out = rig.call("get-sum", json!({"a": 1, "b": 2})).await;
    assert!(
        out.is_error && out.text.contains("permission denied"),
        "{}",
        out.text
    );

    let prompts: Vec<String> = rig.gateway.prompts().into_iter().map(|p| p.name).collect();
    assert!(prompts.iter().any(|p| p == "simple-prompt"), "{prompts:?}");
    assert!(
        !prompts.iter().any(|p| p.starts_with("mcp__")),
        "{prompts:?}"
    );
    let prompt = rig
        .gateway
        .get_prompt("simple-prompt", None, None)
        .await
        .unwrap();
    assert!(!prompt.messages.is_empty());
    let prefixed = rig
        .gateway
        .get_prompt("mcp__everything__simple-prompt", None, None)
        .await;
    assert!(
        matches!(prefixed, Err(ForwardError::UnknownPrompt { .. })),
        "{prefixed:?}"
    );
    // Completion finds the prompt by its own name too.
    let argument = rmcp::model::ArgumentInfo::new("department", "Sa");
    let got = rig
        .gateway
        .complete_prompt("completable-prompt", &argument, None)
        .await
        .unwrap();
    assert_eq!(got.values, ["Sales"]);
    rig.finish().await;
}

#[tokio::test]
async fn a_never_server_whose_tool_clashes_with_a_built_in_is_not_mounted_and_the_rest_works() {
    let builder = setup().builtin("read_file");
    let root = builder.dir.path().join("files");
    std::fs::create_dir(&root).unwrap();
    let root_arg = root.to_string_lossy().into_owned();
    let fs = never(stdio(
        &node(),
        &[&npm_server("server-filesystem"), &root_arg],
        &builder.mark,
    ));
    let rig = builder.server("fs", fs).fake("other", &["normal"]).build();
    rig.gateway.start_all().await;

    let reason = clash(&rig, "fs");
    assert!(
        reason.contains("tool `read_file` is toolgate's own tool"),
        "{reason}"
    );
    assert!(
        reason.contains("Set `prefix = \"always\"` in [mcp_servers.fs]"),
        "{reason}"
    );
    assert!(reason.contains("`mcp__fs__read_file`"), "{reason}");
    assert_eq!(state(&rig, "other"), ServerState::Ready);
    let status = rig.gateway.status();
    let fs_status = status.iter().find(|s| s.name == "fs").unwrap();
    assert_eq!(fs_status.tools, 0);

    // None of its tools, prefixed or not; the built-in and the other server work.
    let names = rig.names();
    assert!(
        !names
            .iter()
            .any(|n| n == "read_text_file" || n.starts_with("mcp__fs__")),
        "{names:?}"
    );
    assert_eq!(
        rig.call("read_file", json!({})).await.text,
        "builtin read_file"
    );
    let out = rig.call("mcp__other__ok", json!({"message": "hi"})).await;
    assert_eq!(out.text, "hi");
    // It was stopped: only the other server still runs.
    assert_no_survivors_except(&rig.mark, &fake()).await;
    rig.finish().await;
}

#[tokio::test]
async fn of_two_never_servers_with_the_same_tool_the_later_one_is_not_mounted() {
    let builder = setup();
    let mark = builder.mark.clone();
    let rig = builder
        .server("first", never(stdio(&fake(), &["normal"], &mark)))
        .server("second", never(stdio(&fake(), &["normal"], &mark)))
        .build();
    rig.gateway.start_all().await;
    assert_eq!(state(&rig, "first"), ServerState::Ready);
    let reason = clash(&rig, "second");
    assert!(
        reason.contains("tool `ok` is MCP server `first`'s tool"),
        "{reason}"
    );
    let out = rig.call("ok", json!({"message": "from first"})).await;
    assert_eq!(out.text, "from first");
    rig.finish().await;
}

#[tokio::test]
async fn a_never_server_whose_prompt_is_a_skill_name_is_not_mounted() {
    let builder = setup();
    let everything = never(stdio(
        &node(),
        &[&npm_server("server-everything"), "stdio"],
        &builder.mark,
    ));
    let rig = builder
        .server("everything", everything)
        .reserve_prompts(&["simple-prompt"])
        .build();
    rig.gateway.start_all().await;
    let reason = clash(&rig, "everything");
    assert!(
        reason.contains("prompt `simple-prompt` is a skill's prompt"),
        "{reason}"
    );
    assert!(rig.gateway.prompts().is_empty());
    assert!(!rig.names().iter().any(|n| n == "echo"));
    let call = rig.call("echo", json!({"message": "hi"})).await;
    assert!(call.is_error, "{}", call.text);
    rig.finish().await;
}

/// Regression guard: a clash found in a stale cached list must not keep the server from
/// ever starting (and so from ever refreshing the cache); only its own answer fails it.
#[tokio::test]
async fn a_clash_in_the_catalog_cache_waits_for_the_servers_own_answer() {
    let cache_dir = tempfile::tempdir().unwrap();
    let workdir = tempfile::tempdir().unwrap();
    let first = setup();
    let mark = first.mark.clone();
    let mut config = stdio(&fake(), &["normal"], &mark);
    config.cwd = Some(workdir.path().to_path_buf());
    let cache = || CatalogCache::new(cache_dir.path().to_path_buf());

    let rig = first.server("srv", config.clone()).catalog(cache()).build();
    rig.gateway.start_all().await;
    assert_eq!(state(&rig, "srv"), ServerState::Ready);
    rig.gateway.shutdown().await;

    // Same launch config, now `never`, beside a built-in `ok`: the cached list clashes.
    let mut second = setup().builtin("ok");
    second.mark = mark;
    let rig = second.server("srv", never(config)).catalog(cache()).build();
    assert_eq!(rig.gateway.cached_servers(), 1);
    assert_eq!(state(&rig, "srv"), ServerState::NotStarted);
    assert!(
        !rig.names().iter().any(|n| n == "boom"),
        "a cached list that clashes is not published"
    );
    rig.gateway.start_all().await;
    let reason = clash(&rig, "srv");
    assert!(
        reason.contains("tool `ok` is toolgate's own tool"),
        "{reason}"
    );
    assert_eq!(rig.call("ok", json!({})).await.text, "builtin ok");
    rig.finish().await;
}
