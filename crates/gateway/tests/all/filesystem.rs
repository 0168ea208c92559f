//! `@modelcontextprotocol/server-filesystem`: a real server with read and write tools.

use serde_json::json;
use toolgate_core::{Concurrency, Policy};

use crate::support::{node, npm_server, setup, stdio};

#[tokio::test]
async fn filesystem_tools_read_write_and_keep_their_own_errors() {
    let builder =
        setup().policy(Policy::from_lists(&[], &[], &["mcp__fs__move_file".to_owned()]).unwrap());
    let root = builder.dir.path().join("files");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("hello.txt"), "hello from disk\n").unwrap();
    let root_arg = root.to_string_lossy().into_owned();
    let config = stdio(
        &node(),
        &[&npm_server("server-filesystem"), &root_arg],
        &builder.mark,
    );
    let rig = builder.server("fs", config).build();
    rig.gateway.start_all().await;

    let snap = rig.dispatcher.snapshot();
    let read = snap.get("mcp__fs__read_text_file").unwrap();
    assert_eq!(read.meta().concurrency, Concurrency::ReadOnly);
    let write = snap.get("mcp__fs__write_file").unwrap();
    assert_eq!(write.meta().concurrency, Concurrency::Mutating);
    assert_eq!(write.meta().action, "mcp.write");
    assert!(write.meta().idempotent);
    drop(snap);

    let file = root.join("hello.txt").to_string_lossy().into_owned();
    let out = rig
        .call("mcp__fs__read_text_file", json!({"path": file}))
        .await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(out.text, "hello from disk\n");
    assert_eq!(
        out.external_structured,
        Some(json!({"content": "hello from disk\n"}))
    );

    let new = root.join("new.txt").to_string_lossy().into_owned();
    let out = rig
        .call(
            "mcp__fs__write_file",
            json!({"path": new, "content": "written through the gateway"}),
        )
        .await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(
        std::fs::read_to_string(root.join("new.txt")).unwrap(),
        "written through the gateway"
    );

    // The server's own refusal reaches the model as an error result.
    let out = rig
        .call("mcp__fs__read_text_file", json!({"path": "/etc/hostname"}))
        .await;
    assert!(out.is_error);
    assert!(
        out.text.to_lowercase().contains("access denied"),
        "{}",
        out.text
    );

    // A deny rule on one mounted tool.
    let out = rig
        .call(
            "mcp__fs__move_file",
            json!({"source": new, "destination": file}),
        )
        .await;
    assert!(out.is_error);
    assert!(out.text.contains("permission denied"), "{}", out.text);
    rig.finish().await;
}
