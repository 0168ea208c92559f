//! Importing other clients' config files: precedence, provenance, malformed files.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use toolgate_gateway::{ImportOptions, McpServerConfig, ServerSpec, Transport, discover};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn by_name(servers: &[ServerSpec]) -> BTreeMap<&str, &ServerSpec> {
    servers.iter().map(|s| (s.name.as_str(), s)).collect()
}

#[test]
fn sources_merge_in_documented_order_and_a_broken_file_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let project = tmp.path().join("project");
    write(
        &home.join(".codex/config.toml"),
        r#"
        [mcp_servers.a]
        command = "codex-a"
        tool_timeout_sec = 30
        [mcp_servers.b]
        command = "codex-b"
        "#,
    );
    write(
        &home.join(".claude/settings.json"),
        r#"{"mcpServers": {"b": {"command": "claude-user-b", "args": ["x"]}}}"#,
    );
    write(&project.join(".claude/settings.json"), "{ this is not json");
    write(
        &project.join(".mcp.json"),
        r#"{"mcpServers": {
            "c": {"command": "c", "env": {"TOKEN": "${TOOLGATE_TEST_SURELY_UNSET_VAR}"}},
            "me": {"command": "toolgate", "args": ["serve"]},
            "web": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"X": "${TOOLGATE_TEST_SURELY_UNSET_VAR:-fallback}"}}
        }}"#,
    );
    let ours: BTreeMap<String, McpServerConfig> = [
        (
            "a".to_owned(),
            McpServerConfig {
                enabled: Some(false),
                ..McpServerConfig::default()
            },
        ),
        (
            "d".to_owned(),
            McpServerConfig {
                command: Some("own-d".to_owned()),
                startup_timeout_sec: Some(2.5),
                ..McpServerConfig::default()
            },
        ),
    ]
    .into();
    let sources: BTreeMap<String, String> = [
        ("a".to_owned(), ".toolgate/config.toml".to_owned()),
        ("d".to_owned(), ".toolgate/config.toml".to_owned()),
    ]
    .into();
    let options = ImportOptions {
        project_servers: Default::default(),
        project_dir: project.clone(),
        home: Some(home.clone()),
        codex_home: None,
        import: true,
    };
    let found = discover(&ours, &sources, &options);
    let servers = by_name(&found.servers);
    assert_eq!(
        servers.keys().copied().collect::<Vec<_>>(),
        ["a", "b", "c", "d", "me", "web"]
    );

    // Adjusted, not replaced: Codex's command and timeout stay, our `enabled` wins.
    let a = servers["a"];
    assert!(!a.enabled);
    assert!(matches!(&a.transport, Transport::Stdio { command, .. } if command == "codex-a"));
    assert_eq!(a.tool_timeout, Duration::from_secs(30));
    assert!(
        a.source
            .ends_with(".codex/config.toml, adjusted by .toolgate/config.toml"),
        "{}",
        a.source
    );

    // ~/.claude/settings.json overrides ~/.codex/config.toml.
    let b = servers["b"];
    assert!(
        matches!(&b.transport, Transport::Stdio { command, args, .. } if command == "claude-user-b" && args == &["x"])
    );
    assert!(b.source.ends_with(".claude/settings.json"), "{}", b.source);

    // A variable that is not set makes that entry invalid, with the reason.
    assert!(
        matches!(&servers["c"].transport, Transport::Invalid(r) if r.contains("TOOLGATE_TEST_SURELY_UNSET_VAR"))
    );
    assert!(
        matches!(&servers["web"].transport, Transport::Http { headers, .. } if headers["X"] == "fallback")
    );

    let d = servers["d"];
    assert_eq!(d.startup_timeout, Duration::from_millis(2500));
    assert_eq!(d.source, ".toolgate/config.toml");

    // toolgate itself is never mounted from an imported file.
    assert!(!servers["me"].enabled);
    assert!(servers["me"].source.contains("it starts toolgate itself"));

    // The broken file is reported with its path and reason; the others still count.
    assert_eq!(found.problems.len(), 1);
    let problem = found.problems[0].to_string();
    assert!(
        problem.contains("project/.claude/settings.json"),
        "{problem}"
    );
    assert!(problem.contains("is not valid JSON"), "{problem}");
}

#[test]
fn import_can_be_turned_off() {
    let tmp = tempfile::tempdir().unwrap();
    write(
        &tmp.path().join(".mcp.json"),
        r#"{"mcpServers": {"x": {"command": "x"}}}"#,
    );
    let options = ImportOptions {
        project_servers: Default::default(),
        project_dir: tmp.path().to_path_buf(),
        home: None,
        codex_home: None,
        import: false,
    };
    let found = discover(&BTreeMap::new(), &BTreeMap::new(), &options);
    assert!(found.servers.is_empty());
    assert!(found.problems.is_empty());
}

#[test]
fn codex_home_is_honoured() {
    let tmp = tempfile::tempdir().unwrap();
    write(
        &tmp.path().join("codex/config.toml"),
        "[mcp_servers.remote]\nurl = \"https://example.invalid/mcp\"\nbearer_token_env_var = \"T\"\n",
    );
    let options = ImportOptions {
        project_servers: Default::default(),
        project_dir: tmp.path().join("p"),
        home: None,
        codex_home: Some(tmp.path().join("codex")),
        import: true,
    };
    let found = discover(&BTreeMap::new(), &BTreeMap::new(), &options);
    assert!(matches!(
        &found.servers[0].transport,
        Transport::Http { url, bearer_token_env: Some(var), .. } if url == "https://example.invalid/mcp" && var == "T"
    ));
}
