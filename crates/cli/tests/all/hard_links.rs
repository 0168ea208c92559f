//! Hard links: by default a hard link inside a root is read like any file and a write
//! replaces the link, never the outside file; with `permissions.refuse_hard_links` the file
//! tools refuse files with more than one name.

use std::path::Path;

use crate::{project, toolgate};

fn call(dir: &Path, tool: &str, args: serde_json::Value) -> std::process::Output {
    toolgate(dir)
        .args(["call", tool, &args.to_string()])
        .output()
        .unwrap()
}

#[test]
fn a_hard_link_is_read_by_default_and_a_write_replaces_only_the_link() {
    let dir = project();
    let outside = tempfile::tempdir_in(dir.path().parent().unwrap()).unwrap();
    std::fs::write(outside.path().join("secret.txt"), "OUTSIDE\n").unwrap();
    std::fs::hard_link(
        outside.path().join("secret.txt"),
        dir.path().join("link.txt"),
    )
    .unwrap();
    let out = call(
        dir.path(),
        "read_file",
        serde_json::json!({"path": "link.txt"}),
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("OUTSIDE"));
    let out = call(
        dir.path(),
        "write_file",
        serde_json::json!({"path": "link.txt", "content": "inside\n"}),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(),
        "OUTSIDE\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("link.txt")).unwrap(),
        "inside\n"
    );
}

#[test]
fn refuse_hard_links_makes_read_edit_and_write_refuse_files_with_several_names() {
    let dir = project();
    std::fs::create_dir(dir.path().join(".toolgate")).unwrap();
    std::fs::write(
        dir.path().join(".toolgate/config.toml"),
        "[permissions]\nrefuse_hard_links = true\n",
    )
    .unwrap();
    let outside = tempfile::tempdir_in(dir.path().parent().unwrap()).unwrap();
    std::fs::write(outside.path().join("secret.txt"), "OUTSIDE\n").unwrap();
    std::fs::hard_link(
        outside.path().join("secret.txt"),
        dir.path().join("link.txt"),
    )
    .unwrap();
    for (tool, args) in [
        ("read_file", serde_json::json!({"path": "link.txt"})),
        (
            "edit_file",
            serde_json::json!({"path": "link.txt", "old_string": "OUTSIDE", "new_string": "x"}),
        ),
        (
            "write_file",
            serde_json::json!({"path": "link.txt", "content": "x\n"}),
        ),
    ] {
        let out = call(dir.path(), tool, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{tool}: {err}");
        assert!(
            err.contains("hard link") && err.contains("refuse_hard_links"),
            "{tool}: {err}"
        );
        assert!(!String::from_utf8_lossy(&out.stdout).contains("OUTSIDE"));
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("link.txt")).unwrap(),
        "OUTSIDE\n"
    );
    // Files with one name are untouched by the option.
    let out = call(
        dir.path(),
        "read_file",
        serde_json::json!({"path": "README.md"}),
    );
    assert!(out.status.success());
}
