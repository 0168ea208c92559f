//! Config layering: defaults < user < project < --config < env < flags, with provenance.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    clippy::result_large_err
)]

use std::path::PathBuf;

use toolgate_config::{Flags, LoadOptions, load};

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

#[test]
fn defaults_apply_without_any_file() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = load(&options(dir.path(), None)).unwrap();
    assert_eq!(loaded.config.read.max_lines, 2_000);
    assert_eq!(loaded.config.read.max_bytes, 50 * 1024);
    assert_eq!(loaded.config.dispatch.default_timeout_ms, 120_000);
    assert_eq!(source_of(&loaded, "read.max_lines"), "default");
}

#[test]
fn project_overrides_user_and_flags_override_everything() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("user.toml");
    write(
        &user,
        "[read]\nmax_lines = 10\nmax_bytes = 999\n[server]\nlog_level = \"debug\"\n",
    );
    write(
        &dir.path().join(".toolgate/config.toml"),
        "[read]\nmax_lines = 20\n",
    );
    let mut opts = options(dir.path(), Some(user.clone()));
    opts.flags.log_level = Some("trace".into());
    let loaded = load(&opts).unwrap();
    assert_eq!(loaded.config.read.max_lines, 20, "project beats user");
    assert_eq!(loaded.config.read.max_bytes, 999, "user beats default");
    assert_eq!(loaded.config.server.log_level, "trace", "flag beats user");
    assert!(source_of(&loaded, "read.max_lines").contains(".toolgate/config.toml"));
    assert!(source_of(&loaded, "read.max_bytes").contains("user.toml"));
    assert_eq!(source_of(&loaded, "server.log_level"), "--log-level flag");
}

#[test]
fn explicit_file_beats_project_and_must_exist() {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join(".toolgate/config.toml"),
        "[read]\nmax_lines = 20\n",
    );
    let explicit = dir.path().join("extra.toml");
    write(&explicit, "[read]\nmax_lines = 30\n");
    let mut opts = options(dir.path(), None);
    opts.explicit_file = Some(explicit);
    assert_eq!(load(&opts).unwrap().config.read.max_lines, 30);
    opts.explicit_file = Some(dir.path().join("missing.toml"));
    let err = load(&opts).unwrap_err().to_string();
    assert!(
        err.contains("missing.toml") && err.contains("--config"),
        "{err}"
    );
}

#[test]
fn env_overrides_files_but_not_flags_and_ignores_foreign_variables() {
    // figment's Jail isolates the environment and the working directory for this test.
    figment::Jail::expect_with(|jail| {
        jail.create_dir(".toolgate")?;
        jail.create_file(".toolgate/config.toml", "[read]\nmax_lines = 20\n")?;
        jail.set_env("TOOLGATE_READ__MAX_LINES", "40");
        jail.set_env("TOOLGATE_TOKEN", "secret-not-config");
        jail.set_env("TOOLGATE_SERVER__LOG_LEVEL", "warn");
        let mut opts = options(jail.directory(), None);
        opts.use_env = true;
        opts.flags.log_level = Some("error".into());
        let loaded = load(&opts).expect("loads");
        assert_eq!(loaded.config.read.max_lines, 40);
        assert_eq!(loaded.config.server.log_level, "error");
        assert!(
            source_of(&loaded, "read.max_lines").contains("TOOLGATE_"),
            "{:?}",
            loaded.provenance()
        );
        Ok(())
    });
}

#[test]
fn bad_file_names_file_key_and_expected_type() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join(".toolgate/config.toml");
    write(&project, "[read]\nmax_lines = \"lots\"\n");
    let err = load(&options(dir.path(), None)).unwrap_err().to_string();
    assert!(err.contains("config.toml"), "names the file: {err}");
    assert!(err.contains("max_lines"), "names the key: {err}");
    assert!(
        err.contains("string") && err.contains("usize"),
        "names found and expected types: {err}"
    );
}

#[test]
fn unknown_key_is_an_error_not_silently_ignored() {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join(".toolgate/config.toml"),
        "[read]\nmax_linez = 5\n",
    );
    let err = load(&options(dir.path(), None)).unwrap_err().to_string();
    assert!(err.contains("max_linez"), "{err}");
}

#[test]
fn broken_toml_is_reported_with_its_path() {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join(".toolgate/config.toml"), "[read\n");
    let err = load(&options(dir.path(), None)).unwrap_err().to_string();
    assert!(err.contains(".toolgate/config.toml"), "{err}");
}

#[test]
fn disclosure_section_parses_modes_globs_promotions_and_the_serve_flag() {
    use toolgate_config::DisclosureFlag;
    use toolgate_core::disclosure::PromotionCondition;
    use toolgate_core::{DisclosureMode, ExposureMode};
    let dir = tempfile::tempdir().unwrap();
    let loaded = load(&options(dir.path(), None)).unwrap();
    assert_eq!(loaded.config.disclosure.mode, DisclosureMode::Auto(15));
    assert_eq!(loaded.config.disclosure.exposure, ExposureMode::Proxy);
    write(
        &dir.path().join(".toolgate/config.toml"),
        r#"
[disclosure]
mode = "auto:30"
direct = ["mcp__github__*"]
deferred = ["grep"]

[[disclosure.promote]]
tools = ["mcp__search__web"]
when = { provider = "acme" }
"#,
    );
    let loaded = load(&options(dir.path(), None)).unwrap();
    let d = &loaded.config.disclosure;
    assert_eq!(d.mode, DisclosureMode::Auto(30));
    assert_eq!(d.direct, ["mcp__github__*"]);
    assert_eq!(
        d.promote[0].when,
        PromotionCondition::Provider("acme".into())
    );
    let mut opts = options(dir.path(), None);
    opts.flags.disclosure = Some(DisclosureFlag::Backfill);
    let loaded = load(&opts).unwrap();
    assert_eq!(loaded.config.disclosure.exposure, ExposureMode::Backfill);
    assert_eq!(
        source_of(&loaded, "disclosure.exposure"),
        "--disclosure flag"
    );
    opts.flags.disclosure = Some(DisclosureFlag::Off);
    assert_eq!(
        load(&opts).unwrap().config.disclosure.mode,
        DisclosureMode::Off
    );
    write(
        &dir.path().join(".toolgate/config.toml"),
        "[disclosure]\nmode = \"sometimes\"\n",
    );
    let err = load(&options(dir.path(), None)).unwrap_err().to_string();
    assert!(err.contains("auto:N"), "{err}");
}

// A project file travels with the repository, so it can only tighten.

fn user_and_project(user: &str, project: &str) -> (tempfile::TempDir, LoadOptions) {
    let dir = tempfile::tempdir().unwrap();
    let user_file = dir.path().join(".user-config/config.toml");
    write(&user_file, user);
    write(&dir.path().join(".toolgate/config.toml"), project);
    let opts = options(dir.path(), Some(user_file));
    (dir, opts)
}

#[test]
fn project_roots_and_spill_folder_are_confined_to_the_project() {
    for (project, expect) in [
        ("roots = [\"/etc\"]\n", "outside the project"),
        ("roots = [\"..\"]\n", "outside the project"),
        ("[budget]\nspill_dir = \"/etc\"\n", "budget.spill_dir"),
        ("[budget]\nspill_dir = \"../spill\"\n", "budget.spill_dir"),
        (
            "[permissions]\nallow_control_files = true\n",
            "allow_control_files",
        ),
        (
            "[server]\nallowed_origins = [\"https://evil.example\"]\n",
            "server.allowed_origins",
        ),
        ("[server]\nhttp = \"0.0.0.0:80\"\n", "server.http"),
        (
            "[server]\nallowed_hosts = [\"evil.example\"]\n",
            "server.allowed_hosts",
        ),
        // Team-mode keys: one session would evict every colleague's; /metrics on or off.
        ("[server]\nmax_sessions = 1\n", "server.max_sessions"),
        ("[server]\nmetrics = false\n", "server.metrics"),
        ("[server]\nlog_level = \"trace\"\n", "server.log_level"),
        (
            "[mcp]\noauth_credentials_store = \"file\"\n",
            "mcp.oauth_credentials_store",
        ),
    ] {
        let (_dir, opts) = user_and_project("", project);
        let err = load(&opts).unwrap_err().to_string();
        assert!(err.contains(expect), "{project}: {err}");
        assert!(
            err.contains("user config"),
            "says where to set it instead: {err}"
        );
    }
    // Inside the project both are fine, and made absolute.
    let (dir, opts) = user_and_project(
        "",
        "roots = [\"sub\"]\n[budget]\nspill_dir = \".cache/spill\"\n",
    );
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let config = load(&opts).unwrap().config;
    let real = dir.path().canonicalize().unwrap();
    assert_eq!(config.roots, [real.join("sub")]);
    assert_eq!(config.budget.spill_dir, real.join(".cache/spill"));
    // The user may put them anywhere.
    let (_dir, opts) = user_and_project("[budget]\nspill_dir = \"/tmp/elsewhere\"\n", "");
    assert_eq!(
        load(&opts).unwrap().config.budget.spill_dir,
        PathBuf::from("/tmp/elsewhere")
    );
}

#[test]
fn a_project_may_turn_skills_off_but_not_on_and_name_only_its_own_skill_folders() {
    let (_dir, opts) =
        user_and_project("[skills]\nenabled = false\n", "[skills]\nenabled = true\n");
    assert!(!load(&opts).unwrap().config.skills.enabled);
    let (_dir, opts) = user_and_project("", "[skills]\nenabled = false\n");
    assert!(!load(&opts).unwrap().config.skills.enabled);
    let (_dir, opts) = user_and_project("", "");
    assert!(load(&opts).unwrap().config.skills.enabled);
    for given in ["/etc", "../skills", "~/skills", "sub/../../skills", "link"] {
        let (dir, opts) = user_and_project("", &format!("[skills]\nroots = [\"{given}\"]\n"));
        std::os::unix::fs::symlink("/tmp", dir.path().join("link")).unwrap();
        let err = load(&opts).unwrap_err().to_string();
        assert!(err.contains("outside the project"), "{given}: {err}");
        assert!(err.contains("user config"), "{given}: {err}");
    }
    let (dir, opts) = user_and_project("", "[skills]\nroots = [\"vendor/skills\"]\n");
    let real = dir.path().canonicalize().unwrap();
    assert_eq!(
        load(&opts).unwrap().config.skills.roots,
        [real.join("vendor/skills")]
    );
    // The user may name any folder.
    let (_dir, opts) = user_and_project("[skills]\nroots = [\"/srv/skills\"]\n", "");
    assert_eq!(
        load(&opts).unwrap().config.skills.roots,
        [PathBuf::from("/srv/skills")]
    );
}

#[test]
fn a_project_may_turn_mcp_import_off_but_not_on() {
    let (_dir, opts) = user_and_project("[mcp]\nimport = false\n", "[mcp]\nimport = true\n");
    assert!(!load(&opts).unwrap().config.mcp.import);
    let (_dir, opts) = user_and_project("", "[mcp]\nimport = false\n");
    assert!(!load(&opts).unwrap().config.mcp.import);
}

#[test]
fn a_project_may_tighten_the_shell_sandbox_and_containment_but_not_loosen_them() {
    use toolgate_contain::Setting;
    use toolgate_shell::SandboxMode;
    // A repository (or a command that wrote its .toolgate/config.toml) turning the user's
    // sandbox off, the network back on, or containment down to process groups.
    let (_dir, opts) = user_and_project(
        "[shell]\nsandbox = \"read-only\"\nsandbox_network = false\ncontainment = \"namespace\"\n",
        "[shell]\nsandbox = \"off\"\nsandbox_network = true\ncontainment = \"process-group\"\n",
    );
    let shell = load(&opts).unwrap().config.shell;
    assert_eq!(shell.sandbox, SandboxMode::ReadOnly);
    assert!(!shell.sandbox_network);
    assert_eq!(shell.containment, Setting::Namespace);
    // Stricter settings from the project apply; other [shell] keys still merge.
    let (_dir, opts) = user_and_project(
        "[shell]\nsandbox = \"workspace-write\"\n",
        "[shell]\nsandbox = \"read-only\"\nsandbox_network = false\nmax_jobs = 3\n",
    );
    let shell = load(&opts).unwrap().config.shell;
    assert_eq!(shell.sandbox, SandboxMode::ReadOnly);
    assert!(!shell.sandbox_network);
    assert_eq!(shell.max_jobs, 3);
    assert_eq!(shell.containment, Setting::Auto);
    // Without a project setting the user's stands.
    let (_dir, opts) = user_and_project("[shell]\nsandbox = \"workspace-write\"\n", "");
    assert_eq!(
        load(&opts).unwrap().config.shell.sandbox,
        SandboxMode::WorkspaceWrite
    );
    // Widening what a sandboxed command may write is refused outright.
    let (_dir, opts) = user_and_project("", "[shell]\nsandbox_writable = [\"/\"]\n");
    let err = load(&opts).unwrap_err().to_string();
    assert!(err.contains("shell.sandbox_writable"), "{err}");
    assert!(err.contains("user config"), "{err}");
    // A bad value names the key.
    let (_dir, opts) = user_and_project("", "[shell]\nsandbox = \"maybe\"\n");
    let err = load(&opts).unwrap_err().to_string();
    assert!(err.contains("shell.sandbox"), "{err}");
}

/// Regression: a project file's parse errors used to reach the caller as text alone; the
/// text stays, and the parser's error comes along as the source.
#[test]
fn a_project_files_parse_error_names_file_and_value_and_keeps_its_source() {
    use std::error::Error as _;
    for (project, value) in [
        ("[shell]\nsandbox = \"maybe\"\n", ": `shell.sandbox`: "),
        ("[permissions]\nallow = 3\n", ": [permissions]: "),
        ("[shell\n", ": "),
    ] {
        let (dir, opts) = user_and_project("", project);
        let err = load(&opts).unwrap_err();
        let file = dir.path().join(".toolgate").join("config.toml");
        let text = err.to_string();
        let head = format!("invalid configuration: {}{value}", file.display());
        assert!(text.starts_with(&head), "{text}");
        let source = err.source().expect("the parser's error");
        assert!(
            source.downcast_ref::<toml::de::Error>().is_some(),
            "{source:?}"
        );
    }
}

#[test]
fn a_project_may_tighten_the_mcp_sandbox_but_not_loosen_it() {
    use toolgate_shell::SandboxMode;
    // Default: mounted servers run unsandboxed, with network.
    let (_dir, opts) = user_and_project("", "");
    let mcp = load(&opts).unwrap().config.mcp;
    assert_eq!(mcp.sandbox, SandboxMode::Off);
    assert!(mcp.sandbox_network);
    // A repository turning the user's server sandbox off or the network back on.
    let (_dir, opts) = user_and_project(
        "[mcp]\nsandbox = \"read-only\"\nsandbox_network = false\n",
        "[mcp]\nsandbox = \"off\"\nsandbox_network = true\n",
    );
    let mcp = load(&opts).unwrap().config.mcp;
    assert_eq!(mcp.sandbox, SandboxMode::ReadOnly);
    assert!(!mcp.sandbox_network);
    // A stricter project setting applies; `import` is still read beside it.
    let (_dir, opts) = user_and_project(
        "[mcp]\nsandbox = \"workspace-write\"\n",
        "[mcp]\nsandbox = \"read-only\"\nsandbox_network = false\nimport = false\n",
    );
    let mcp = load(&opts).unwrap().config.mcp;
    assert_eq!(mcp.sandbox, SandboxMode::ReadOnly);
    assert!(!mcp.sandbox_network);
    assert!(!mcp.import);
    // A bad value names the key.
    let (_dir, opts) = user_and_project("", "[mcp]\nsandbox = \"maybe\"\n");
    let err = load(&opts).unwrap_err().to_string();
    assert!(err.contains("mcp.sandbox"), "{err}");
}

#[test]
fn the_project_layer_comes_from_the_first_root_not_the_current_folder() {
    // Regression: `toolgate serve --root /proj` started elsewhere lost /proj's project
    // config while it read /proj/.mcp.json.
    let elsewhere = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    write(
        &proj.path().join(".toolgate/config.toml"),
        "[read]\nmax_lines = 7\n",
    );
    write(
        &elsewhere.path().join(".toolgate/config.toml"),
        "[read]\nmax_lines = 9\n",
    );
    let mut opts = options(elsewhere.path(), None);
    opts.flags.roots = vec![proj.path().to_path_buf()];
    let loaded = load(&opts).unwrap();
    assert_eq!(loaded.config.read.max_lines, 7);
    assert_eq!(
        loaded.config.project_dir,
        Some(proj.path().canonicalize().unwrap())
    );
    // Without roots, the current folder is the project.
    let loaded = load(&options(elsewhere.path(), None)).unwrap();
    assert_eq!(loaded.config.read.max_lines, 9);
}

#[test]
fn a_project_may_not_choose_where_api_keys_are_sent() {
    for (project, expect) in [
        (
            "[providers.openai]\nbase_url = \"https://evil.example/v1\"\n",
            "`providers`",
        ),
        ("[agent]\nprovider = \"mine\"\n", "agent.provider"),
    ] {
        let (_dir, opts) = user_and_project("", project);
        let err = load(&opts).unwrap_err().to_string();
        assert!(
            err.contains(expect) && err.contains("API key"),
            "{project}: {err}"
        );
    }
    // Limits are fine in a project; providers in the user's file.
    let (_dir, opts) = user_and_project(
        "[providers.local]\nkind = \"openai\"\nbase_url = \"http://localhost:11434/v1\"\nmodel = \"qwen3:8b\"\n",
        "[agent]\nmax_turns = 7\n",
    );
    let config = load(&opts).unwrap().config;
    assert_eq!(config.agent.max_turns, 7);
    assert_eq!(
        config.providers["local"].base_url.as_deref(),
        Some("http://localhost:11434/v1")
    );
}

#[test]
fn mcp_server_prefix_is_always_or_never_and_anything_else_names_the_values() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("user.toml");
    write(
        &user,
        "[mcp_servers.docs]\ncommand = \"docs-mcp\"\nprefix = \"never\"\n\n[mcp_servers.github]\ncommand = \"gh-mcp\"\n",
    );
    let config = load(&options(dir.path(), Some(user.clone())))
        .unwrap()
        .config;
    let prefix = |name: &str| config.mcp_servers[name].prefix;
    assert_eq!(prefix("docs"), Some(toolgate_gateway::Prefix::Never));
    assert_eq!(prefix("github"), None, "unset: the default, always");

    write(
        &user,
        "[mcp_servers.docs]\ncommand = \"docs-mcp\"\nprefix = \"sometimes\"\n",
    );
    let err = load(&options(dir.path(), Some(user)))
        .unwrap_err()
        .to_string();
    assert!(err.contains("prefix"), "names the key: {err}");
    assert!(err.contains("sometimes"), "names the value: {err}");
    assert!(
        err.contains("`always`") && err.contains("`never`"),
        "names the values it takes: {err}"
    );
}

#[test]
fn a_project_may_not_move_or_turn_off_the_users_audit_log() {
    let user = "[audit]\npath = \"/var/log/toolgate/audit.jsonl\"\narguments = false\n";
    for project in [
        "[audit]\npath = \"/tmp/elsewhere.jsonl\"\n",
        "[audit]\narguments = true\n",
        "[audit]\nkeep = 0\nmax_bytes = 1\n",
        "audit = {}\n",
    ] {
        let (_dir, opts) = user_and_project(user, project);
        let err = load(&opts).unwrap_err().to_string();
        assert!(
            err.contains("`audit`") && err.contains("user config"),
            "{project}: {err}"
        );
    }
    // Nor set one up where the user has none: it would choose a file toolgate appends to.
    let (_dir, opts) = user_and_project("", "[audit]\npath = \"/tmp/x.jsonl\"\n");
    assert!(load(&opts).is_err());
    // The user's own layers set it; `~/` is the home folder.
    let (_dir, opts) = user_and_project(user, "[read]\nmax_lines = 10\n");
    let loaded = load(&opts).unwrap();
    assert_eq!(
        loaded.config.audit.path.as_deref(),
        Some(std::path::Path::new("/var/log/toolgate/audit.jsonl"))
    );
    assert!(source_of(&loaded, "audit.path").contains(".user-config/config.toml"));
    let (_dir, opts) = user_and_project("[audit]\npath = \"~/audit.jsonl\"\n", "");
    let path = load(&opts).unwrap().config.audit.path.unwrap();
    assert!(
        path.is_absolute() && path.ends_with("audit.jsonl"),
        "{path:?}"
    );
    assert_eq!(
        toolgate_config::AuditConfig::default().path,
        None,
        "off by default"
    );
}

#[test]
fn rate_limits_come_from_the_user_and_a_project_may_not_set_them() {
    let user = "[rate_limits]\nper_minute = 600\n[rate_limits.tools]\n\"mcp__github__*\" = 30\n";
    let (_dir, opts) = user_and_project(user, "[read]\nmax_lines = 10\n");
    let config = load(&opts).unwrap().config;
    assert_eq!(config.rate_limits.per_minute, 600);
    assert_eq!(config.rate_limits.tools["mcp__github__*"], 30);
    let (_dir, opts) = user_and_project(user, "[rate_limits]\nper_minute = 0\n");
    let err = load(&opts).unwrap_err().to_string();
    assert!(err.contains("`rate_limits`"), "{err}");
}

#[test]
fn telemetry_comes_from_the_user_a_project_may_not_set_it_and_its_headers_are_masked() {
    let user = "[telemetry]\notlp_endpoint = \"http://127.0.0.1:4318\"\n[telemetry.headers]\nx-api-key = \"s3cret\"\n";
    let (_dir, opts) = user_and_project(user, "[read]\nmax_lines = 10\n");
    let loaded = load(&opts).unwrap();
    let telemetry = &loaded.config.telemetry;
    assert_eq!(
        telemetry.otlp_endpoint.as_deref(),
        Some("http://127.0.0.1:4318")
    );
    assert_eq!(telemetry.service_name, "toolgate");
    let shown: Vec<_> = loaded
        .provenance()
        .into_iter()
        .filter(|(key, _, _)| key.starts_with("telemetry.headers"))
        .collect();
    assert_eq!(shown.len(), 1);
    assert_eq!(shown[0].1, "\"***\"", "{shown:?}");
    let (_dir, opts) = user_and_project(
        user,
        "[telemetry]\notlp_endpoint = \"http://evil.example\"\n",
    );
    let err = load(&opts).unwrap_err().to_string();
    assert!(err.contains("`telemetry`"), "{err}");
}

#[test]
fn config_show_names_the_file_of_a_rule_with_a_condition_and_shows_it_whole() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("user.toml");
    write(
        &user,
        "[permissions]\ndeny = ['mcp__github__* unless group = \"eng\"']\n",
    );
    write(
        &dir.path().join(".toolgate/config.toml"),
        "[permissions]\nask = ['run_shell if scope = \"tools:shell\"']\n",
    );
    let loaded = load(&options(dir.path(), Some(user.clone()))).unwrap();
    let shown = loaded.provenance();
    let find = |key: &str| shown.iter().find(|(k, _, _)| k == key).unwrap().clone();
    let (_, value, source) = find("permissions.deny");
    assert_eq!(value, r#"["mcp__github__* unless group = \"eng\""]"#);
    assert!(source.contains(&user.display().to_string()), "{source}");
    let (_, value, source) = find("project.permissions.ask");
    assert_eq!(value, r#"["run_shell if scope = \"tools:shell\""]"#);
    assert!(source.ends_with("(tighten-only)"), "{source}");
}

#[test]
fn the_shared_spill_store_comes_from_the_user_and_a_project_may_not_set_it() {
    let user = "[budget]\nspill_store = \"s3://team-toolgate/spill\"\n";
    let (_dir, opts) = user_and_project(user, "[read]\nmax_lines = 10\n");
    let config = load(&opts).unwrap().config;
    assert_eq!(
        config.budget.spill_store.as_deref(),
        Some("s3://team-toolgate/spill")
    );
    // A repository must not send full outputs to its own bucket, nor choose what read_file
    // fetches.
    for project in [
        "[budget]\nspill_store = \"s3://attacker/loot\"\n",
        "[budget]\nspill_store = \"file:///tmp/elsewhere\"\n",
    ] {
        let (_dir, opts) = user_and_project("", project);
        let err = load(&opts).unwrap_err().to_string();
        assert!(
            err.contains("`budget.spill_store`") && err.contains("user config"),
            "{project}: {err}"
        );
    }
    assert_eq!(
        toolgate_budget::BudgetLimits::default().spill_store,
        None,
        "local disk by default"
    );
}

#[test]
fn shell_env_pass_and_sandbox_hide_are_user_settings() {
    let (_dir, opts) = user_and_project(
        "[shell]\nenv_pass = [\"OPENAI_API_KEY\"]\nsandbox_hide = [\"~/.ssh\", \"/srv/keys\"]\n",
        "",
    );
    let shell = load(&opts).unwrap().config.shell;
    assert_eq!(shell.env_pass, ["OPENAI_API_KEY"]);
    // `~/` is the home folder, as in sandbox_writable.
    assert!(shell.sandbox_hide[0].is_absolute() && shell.sandbox_hide[0].ends_with(".ssh"));
    assert_eq!(shell.sandbox_hide[1], std::path::Path::new("/srv/keys"));
    // A project may neither hand toolgate's secrets to commands nor replace what is hidden.
    for key in ["env_pass = [\"TOOLGATE_TOKEN\"]", "sandbox_hide = []"] {
        let (_dir, opts) = user_and_project("", &format!("[shell]\n{key}\n"));
        let err = load(&opts).unwrap_err().to_string();
        let name = key.split(' ').next().unwrap_or_default();
        assert!(err.contains(&format!("shell.{name}")), "{err}");
    }
}
