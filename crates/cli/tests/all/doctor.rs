//! `toolgate doctor` through the binary: config problems all at once, servers (trust, start,
//! tool count, over-long tool names), isolation, spill and the catalog cache; exit 1 on a
//! problem, every problem line saying what to do.

use std::path::Path;

use serde_json::json;

use crate::{project, toolgate};

fn doctor(dir: &Path, args: &[&str]) -> (i32, String) {
    let out = toolgate(dir)
        .env("HOME", dir)
        .env_remove("CODEX_HOME")
        .arg("doctor")
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    (out.status.code().unwrap(), stdout)
}

fn lines_with<'a>(text: &'a str, word: &str) -> Vec<&'a str> {
    text.lines()
        .filter(|l| l.trim_start().starts_with(word))
        .collect()
}

fn write_exec(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_healthy_setup_passes_and_every_section_is_reported() {
    let dir = project();
    let (code, out) = doctor(dir.path(), &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("toolgate "), "{out}");
    for section in [
        "config",
        "mcp servers",
        "isolation",
        "spill store",
        "catalog cache",
    ] {
        assert!(
            out.lines().any(|l| l == section),
            "section `{section}` missing:\n{out}"
        );
    }
    assert!(lines_with(&out, "problem").is_empty(), "{out}");
    assert!(out.contains("0 problems"), "{out}");
    assert!(out.contains("of 1 GiB quota used"), "{out}");
    assert!(out.contains("process containment: "), "{out}");
    assert!(out.contains("run_shell sandbox: "), "{out}");
}

#[test]
fn every_wrong_setting_of_a_config_file_is_listed_in_one_run() {
    let dir = project();
    std::fs::create_dir(dir.path().join(".toolgate")).unwrap();
    // Three mistakes a copied example can make: a wrong type, an unknown key, and a key a
    // project file may not set.
    std::fs::write(
        dir.path().join(".toolgate/config.toml"),
        "[read]\nmax_lines = \"many\"\nmax_linez = 5\n\n[server]\nhttp = \"127.0.0.1:8765\"\n",
    )
    .unwrap();
    let (code, out) = doctor(dir.path(), &[]);
    assert_eq!(code, 1, "{out}");
    let problems = lines_with(&out, "problem");
    for key in ["read.max_lines", "read.max_linez", "server.http"] {
        assert!(
            problems
                .iter()
                .any(|l| l.contains(key) && l.contains(".toolgate/config.toml")),
            "no problem line names {key}:\n{out}"
        );
    }
    // Each says what to do, and none sends the user to a command that fails the same way.
    for line in &problems {
        assert!(
            ["fix", "remove", "set it", "run "]
                .iter()
                .any(|w| line.contains(w)),
            "{line}"
        );
        assert!(!line.contains("config show"), "{line}");
    }
    // The other commands fail on this config and point at doctor.
    let tools = toolgate(dir.path()).arg("tools").output().unwrap();
    assert_eq!(tools.status.code(), Some(2));
    let stderr = String::from_utf8(tools.stderr).unwrap();
    assert!(stderr.contains("toolgate doctor"), "{stderr}");
}

#[test]
fn a_broken_user_file_and_a_missing_config_flag_are_problems() {
    let dir = project();
    let user = dir.path().join(".no-user-config/toolgate/config.toml");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(&user, "[read\nmax_lines = 3\n").unwrap();
    let (code, out) = doctor(dir.path(), &["--config", "nowhere.toml"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.lines()
            .any(|l| l.contains("user config") && l.contains("not valid TOML (line 1)")),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.contains("nowhere.toml") && l.contains("check the --config path")),
        "{out}"
    );
}

#[test]
fn servers_report_trust_start_and_tool_names_over_64_characters() {
    let dir = project();
    let long_name = format!("fetch_{}", "x".repeat(70));
    // A minimal stdio MCP server: answers initialize and tools/list with one over-long name.
    let server = dir.path().join("long-names.sh");
    write_exec(
        &server,
        &format!(
            r#"#!/bin/sh
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  case "$line" in
    *'"method":"initialize"'*)
      printf '{{"jsonrpc":"2.0","id":%s,"result":{{"protocolVersion":"2025-06-18","capabilities":{{"tools":{{}}}},"serverInfo":{{"name":"long","version":"1"}}}}}}\n' "$id" ;;
    *'"method":"tools/list"'*)
      printf '{{"jsonrpc":"2.0","id":%s,"result":{{"tools":[{{"name":"{long_name}","inputSchema":{{"type":"object"}}}}]}}}}\n' "$id" ;;
  esac
done
"#
        ),
    );
    // From the user's own config: needs no trust.
    let user = dir.path().join(".no-user-config/toolgate/config.toml");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(
        &user,
        format!("[mcp_servers.long]\ncommand = \"{}\"\n", server.display()),
    )
    .unwrap();
    // From the project's .mcp.json: not trusted yet.
    let mcp = json!({ "mcpServers": { "repo": { "command": "sh", "args": ["server.sh"] } } });
    std::fs::write(dir.path().join(".mcp.json"), mcp.to_string()).unwrap();
    std::fs::write(dir.path().join("server.sh"), "exit 0\n").unwrap();

    let (code, out) = doctor(dir.path(), &[]);
    assert_eq!(code, 1, "the untrusted server is a problem:\n{out}");
    let long_line = out
        .lines()
        .find(|l| l.contains("long: ready"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(long_line.contains("1 tool,"), "{long_line}");
    assert!(
        long_line.contains("user config, needs no trust"),
        "{long_line}"
    );
    let name_warning = lines_with(&out, "warning")
        .into_iter()
        .find(|l| l.contains(&long_name))
        .unwrap_or_else(|| panic!("no warning about the long name:\n{out}"));
    assert!(name_warning.contains("76-character name"), "{name_warning}");
    assert!(name_warning.contains("disabled_tools"), "{name_warning}");
    let untrusted = lines_with(&out, "problem")
        .into_iter()
        .find(|l| l.contains("repo: not started"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        untrusted.contains("run `toolgate mcp trust repo`"),
        "{untrusted}"
    );

    // Without starting anything, the configuration and trust are still reported.
    let (_, quick) = doctor(dir.path(), &["--no-start"]);
    assert!(quick.contains("long: not started (--no-start)"), "{quick}");
    assert!(quick.contains("repo: not started"), "{quick}");
}
