//! `toolgate mcp list`, `toolgate mcp tools` and mounted servers in `tools` / `call`, with
//! servers that cannot start (the gateway's own tests cover real servers).

use serde_json::Value;

use crate::{project, toolgate};

/// A project whose config mounts a missing program, a server that never answers, and a
/// disabled one, plus a `.mcp.json` that is not JSON; `HOME` is the project (no user files).
fn mounted() -> tempfile::TempDir {
    let dir = project();
    std::fs::create_dir(dir.path().join(".toolgate")).unwrap();
    std::fs::write(
        dir.path().join(".toolgate/config.toml"),
        r#"
[mcp_servers.missing]
command = "/no/such/mcp-server"

[mcp_servers.mute]
command = "sleep"
args = ["600"]
startup_timeout_sec = 1

[mcp_servers.off]
command = "sleep"
enabled = false
"#,
    )
    .unwrap();
    std::fs::write(dir.path().join(".mcp.json"), "{ not json").unwrap();
    dir
}

fn run(dir: &tempfile::TempDir, args: &[&str]) -> std::process::Output {
    toolgate(dir.path())
        .env("HOME", dir.path())
        .env_remove("CODEX_HOME")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn mcp_list_shows_every_server_with_its_status_source_and_reason() {
    let dir = mounted();
    let out = run(&dir, &["mcp", "list", "--json"]);
    assert!(out.status.success());
    let body: Value = serde_json::from_slice(&out.stdout).unwrap();
    let servers = body["servers"].as_array().unwrap();
    let by_name = |n: &str| servers.iter().find(|s| s["name"] == n).unwrap();
    assert_eq!(by_name("missing")["status"], "failed");
    assert!(
        by_name("missing")["reason"]
            .as_str()
            .unwrap()
            .contains("no such program")
    );
    assert_eq!(by_name("mute")["status"], "failed");
    assert!(
        by_name("mute")["reason"]
            .as_str()
            .unwrap()
            .contains("did not finish `initialize` within 1 s")
    );
    assert_eq!(by_name("off")["status"], "disabled");
    assert!(
        by_name("off")["source"]
            .as_str()
            .unwrap()
            .ends_with(".toolgate/config.toml")
    );
    let problem = &body["problems"][0];
    assert!(problem["path"].as_str().unwrap().ends_with(".mcp.json"));
    assert!(
        problem["reason"]
            .as_str()
            .unwrap()
            .contains("not valid JSON")
    );

    let out = run(&dir, &["mcp", "list"]);
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.starts_with("NAME"), "{table}");
    assert!(table.contains("reason: did not finish"), "{table}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains(".mcp.json: is not valid JSON"), "{stderr}");
}

#[test]
fn mcp_tools_names_the_configured_servers_for_an_unknown_one() {
    let dir = mounted();
    let out = run(&dir, &["mcp", "tools", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("no MCP server named `nope` (configured: missing, mute, off)"),
        "{stderr}"
    );
    let out = run(&dir, &["mcp", "tools", "missing"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8(out.stderr).unwrap().contains("failed"));
}

#[test]
fn builtins_still_work_when_every_mounted_server_fails() {
    let dir = mounted();
    let out = run(&dir, &["tools"]);
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("read_file"));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("MCP server `mute` failed"), "{stderr}");
    let out = run(&dir, &["call", "read_file", r#"{"path":"README.md"}"#]);
    assert!(out.status.success());
    assert!(String::from_utf8(out.stdout).unwrap().contains("hello"));
}
