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
    // Servers from a project file start only once trusted.
    let out = run(&dir, &["mcp", "trust", "--all"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
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

#[test]
fn an_untrusted_project_server_does_not_start_until_trusted_and_again_after_a_change() {
    // Regression: a `.mcp.json` command ran on the next start with nobody asked.
    let dir = project();
    let mcp = |script: &str| {
        let body = serde_json::json!({
            "mcpServers": { "probe": { "command": "sh", "args": ["-c", script] } }
        });
        std::fs::write(dir.path().join(".mcp.json"), body.to_string()).unwrap();
    };
    mcp("touch ran_v1");
    let listed = |dir: &tempfile::TempDir| -> Value {
        let out = run(dir, &["mcp", "list", "--json"]);
        assert!(out.status.success());
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let body = listed(&dir);
    let probe = &body["servers"][0];
    assert_eq!(probe["status"], "untrusted", "{body}");
    assert_eq!(probe["trust_command"], "toolgate mcp trust probe");
    assert!(
        !dir.path().join("ran_v1").exists(),
        "an untrusted server was started"
    );
    let out = run(&dir, &["mcp", "list"]);
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("untrusted"), "{table}");
    assert!(
        table.contains("stdio: sh -c touch ran_v1"),
        "shows the command: {table}"
    );
    assert!(table.contains("toolgate mcp trust probe"), "{table}");
    // `serve` logs it with the command to trust it (checked through `tools`' log here).
    let out = toolgate(dir.path())
        .env("HOME", dir.path())
        .env("RUST_LOG", "warn")
        .args(["tools"])
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.contains("not trusted") && log.contains("toolgate mcp trust probe"),
        "{log}"
    );

    // Regression: calling one of its tools said "unknown tool"; the result now says whose
    // move it is, for the model as for the user.
    let out = run(&dir, &["call", "mcp__probe__anything", "{}"]);
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("server `probe` is not trusted yet")
            && said.contains("the user must run `toolgate mcp trust probe`")
            && !said.contains("unknown tool"),
        "{said}"
    );
    assert_eq!(said.matches("not trusted").count(), 1, "said once: {said}");
    // `mcp trust` without names shows what it would trust; on a pipe it asks for names or
    // --all instead of trusting everything unseen.
    let out = run(&dir, &["mcp", "trust"]);
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("probe  stdio: sh -c touch ran_v1") && said.contains("--all"),
        "{said}"
    );
    assert_eq!(listed(&dir)["servers"][0]["status"], "untrusted");

    let out = run(&dir, &["mcp", "trust", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("project servers: probe"));
    let out = run(&dir, &["mcp", "trust", "probe"]);
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("trusted probe  stdio: sh -c touch ran_v1")
    );
    let body = listed(&dir);
    assert_eq!(
        body["servers"][0]["status"], "failed",
        "trusted: started (and not an MCP server): {body}"
    );
    assert!(
        dir.path().join("ran_v1").exists(),
        "the trusted server was started"
    );

    // A changed command is untrusted again.
    mcp("touch ran_v2");
    let body = listed(&dir);
    assert_eq!(body["servers"][0]["status"], "untrusted", "{body}");
    assert!(!dir.path().join("ran_v2").exists());
}

#[test]
fn denied_tools_are_not_listed_but_calling_one_gets_the_denial() {
    let dir = project();
    let user = dir.path().join(".no-user-config/toolgate/config.toml");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(&user, "[permissions]\ndeny = [\"write_file\"]\n").unwrap();
    let out = run(&dir, &["tools"]);
    let listed = String::from_utf8(out.stdout).unwrap();
    assert!(listed.contains("read_file"), "{listed}");
    assert!(
        !listed.contains("write_file"),
        "a denied tool is listed: {listed}"
    );
    let out = run(
        &dir,
        &["call", "write_file", r#"{"path": "x.txt", "content": "x"}"#],
    );
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("deny = [\"write_file\"]"), "{text}");
    // Through run_tool too: permissions are decided for the target.
    let out = run(
        &dir,
        &[
            "call",
            "run_tool",
            r#"{"name": "write_file", "input": {"path": "x.txt", "content": "x"}}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("deny = [\"write_file\"]"), "{text}");
    assert!(!dir.path().join("x.txt").exists());
}

/// Regression: with one hanging server `mcp list` printed nothing for its startup timeout
/// (60 s), then everything at once.
#[test]
fn mcp_list_prints_each_server_as_it_is_known_and_stops_waiting_at_timeout() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let dir = project();
    std::fs::create_dir(dir.path().join(".toolgate")).unwrap();
    std::fs::write(
        dir.path().join(".toolgate/config.toml"),
        r#"
[mcp_servers.hangs]
command = "sleep"
args = ["600"]
startup_timeout_sec = 600

[mcp_servers.missing]
command = "/no/such/mcp-server"
"#,
    )
    .unwrap();
    assert!(run(&dir, &["mcp", "trust", "--all"]).status.success());
    let mut child = toolgate(dir.path())
        .env("HOME", dir.path())
        .env_remove("CODEX_HOME")
        .args(["mcp", "list", "--timeout", "10"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        seen.push(line.clone());
        if line.starts_with("missing") {
            break;
        }
    }
    // The failed server is printed while the hanging one still holds the command.
    assert!(
        child.try_wait().unwrap().is_none(),
        "printed only at the end: {seen:#?}"
    );
    assert!(seen.last().unwrap().contains("failed"), "{seen:#?}");
    seen.extend(lines.map(Result::unwrap));
    assert!(child.wait().unwrap().success());
    let table = seen.join("\n");
    assert!(table.contains("\nhangs    starting"), "{table}");
    assert!(
        table.contains("note: no answer within --timeout 10 s; it may still start (its startup timeout is 600 s)"),
        "{table}"
    );
    // Nothing decorative on a pipe: no spinner frames on stderr.
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(!stderr.contains("starting 1 server"), "{stderr}");
}

/// `@modelcontextprotocol/server-filesystem` (from `scripts/install-peers.sh`) as a
/// `[mcp_servers.NAME]` entry serving `dir`, with `extra` lines.
fn filesystem_server(name: &str, dir: &std::path::Path, extra: &str) -> String {
    let peers = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.cache/peers/npm");
    let node = peers.join("node_modules/node/bin/node");
    let script = peers.join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    assert!(
        script.exists(),
        "{} is missing: run scripts/install-peers.sh",
        script.display()
    );
    format!(
        "[mcp_servers.{name}]\ncommand = {:?}\nargs = [{:?}, {:?}]\nstartup_timeout_sec = 30\n{extra}\n",
        node.display().to_string(),
        script.display().to_string(),
        dir.display().to_string(),
    )
}

#[test]
fn mcp_list_shows_a_never_server_whose_tool_names_clash_with_the_built_ins() {
    let dir = project();
    // The user's config: a server from it needs no trust.
    let user = dir.path().join(".no-user-config/toolgate");
    std::fs::create_dir_all(&user).unwrap();
    let config = [
        filesystem_server("fs", dir.path(), "prefix = \"never\""),
        filesystem_server("files", dir.path(), ""),
    ]
    .concat();
    std::fs::write(user.join("config.toml"), config).unwrap();
    let list = |args: &[&str]| {
        toolgate(dir.path())
            .env_remove("CODEX_HOME")
            .args(["mcp", "list"])
            .args(args)
            .output()
            .unwrap()
    };

    let out = list(&[]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let line = |start: &str| {
        text.lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no line for `{start}` in:\n{text}"))
    };
    assert!(line("fs ").contains("failed"), "{text}");
    assert!(line("files ").contains("ready"), "{text}");
    let reason = text
        .lines()
        .find(|l| l.trim_start().starts_with("reason:"))
        .unwrap();
    for clash in ["read_file", "write_file", "edit_file", "search_files"] {
        assert!(
            reason.contains(&format!("tool `{clash}` is toolgate's own tool")),
            "{reason}"
        );
    }
    assert!(
        reason.contains("Set `prefix = \"always\"` in [mcp_servers.fs]"),
        "{reason}"
    );

    let out = list(&["--json"]);
    let body: Value = serde_json::from_slice(&out.stdout).unwrap();
    let fs = body["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "fs")
        .unwrap();
    assert_eq!(fs["status"], "failed");
    assert_eq!(fs["tools"], 0);
    assert!(
        fs["reason"]
            .as_str()
            .unwrap()
            .contains("its names clash with names toolgate already has")
    );

    // The built-in is still the one `read_file` names.
    let out = toolgate(dir.path())
        .env_remove("CODEX_HOME")
        .args(["call", "read_file", r#"{"path": "README.md"}"#])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("hello"), "{stdout}");

    // `doctor` lists it as a problem, with the same reason.
    let out = toolgate(dir.path())
        .env_remove("CODEX_HOME")
        .arg("doctor")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report
            .lines()
            .any(|l| l.contains("fs: not mounted: with prefix = \"never\" its names clash")),
        "{report}"
    );
}

#[test]
fn a_chain_of_gateways_mounting_one_another_stops_three_levels_down() {
    // A user config that mounts `toolgate serve` is read again by every toolgate it
    // starts: without a limit each mounts the next until the machine has no processes left.
    let dir = project();
    let config = dir.path().join(".no-user-config/toolgate");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        // The probe exits once it has touched the file: `mcp list` returns on that exit
        // (the long timeout is never reached), so the file is there whatever the load.
        "[mcp_servers.probe]\ncommand = \"sh\"\nargs = [\"-c\", \"touch started\"]\nstartup_timeout_sec = 120\n",
    )
    .unwrap();
    let listed = |depth: &str| -> Value {
        let out = toolgate(dir.path())
            .env("TOOLGATE_GATEWAY_DEPTH", depth)
            .args(["mcp", "list", "--json"])
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap()
    };

    let body = listed("3");
    let probe = &body["servers"][0];
    assert_eq!(probe["status"], "failed", "{body}");
    let reason = probe["reason"].as_str().unwrap();
    assert!(
        reason.contains("TOOLGATE_GATEWAY_DEPTH=3") && reason.contains("XDG_CONFIG_HOME"),
        "says why and what to do: {reason}"
    );
    assert!(
        !dir.path().join("started").exists(),
        "the server was started"
    );

    // Two levels down it still starts.
    let body = listed("2");
    assert!(dir.path().join("started").exists(), "{body}");
}
