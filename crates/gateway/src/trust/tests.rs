use crate::config::McpServerConfig;

use super::*;

fn project() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = fs_err::canonicalize(dir.path()).unwrap();
    (dir, root)
}

fn server(root: &Path, command: &str, args: &[&str]) -> ServerSpec {
    let config = McpServerConfig {
        command: Some(command.to_owned()),
        args: Some(args.iter().map(|a| (*a).to_owned()).collect()),
        ..Default::default()
    };
    let mut spec = ServerSpec::resolve("srv", &config, ".mcp.json".to_owned(), root);
    spec.trust = Trust::Untrusted;
    spec
}

fn store(root: &Path) -> TrustStore {
    TrustStore::load(Some(root.join(".user/trusted_servers.toml"))).unwrap()
}

#[test]
fn a_changed_file_is_named_and_a_new_one_too() {
    let (_dir, root) = project();
    let roots = [root.clone()];
    fs_err::write(root.join("server.sh"), "v1").unwrap();
    let spec = server(&root, "sh", &["server.sh", "extra.sh"]);
    let mut trust = store(&root);
    assert_eq!(
        trust.check(&root, &roots, &spec).untrusted.as_deref(),
        Some("defined by a project file and not trusted yet")
    );
    let files = trust.trust(&root, &roots, &spec).unwrap();
    assert_eq!(files.keys().collect::<Vec<_>>(), ["server.sh"]);
    let trusted = trust.check(&root, &roots, &spec);
    assert_eq!(trusted.untrusted, None);
    assert_eq!(trusted.protect, [root.join("server.sh")]);
    trusted.recheck(&spec).unwrap();

    fs_err::write(root.join("server.sh"), "v2").unwrap();
    let reason = trust.check(&root, &roots, &spec).untrusted.unwrap();
    assert_eq!(reason, "`server.sh` changed since it was trusted");
    // A server trusted at startup re-checks before it (re)starts.
    assert_eq!(trusted.recheck(&spec).unwrap_err().to_string(), reason);

    fs_err::write(root.join("server.sh"), "v1").unwrap();
    fs_err::write(root.join("extra.sh"), "new").unwrap();
    let reason = trust.check(&root, &roots, &spec).untrusted.unwrap();
    assert_eq!(reason, "`extra.sh` appeared since it was trusted");

    fs_err::remove_file(root.join("extra.sh")).unwrap();
    trust.check(&root, &roots, &spec).recheck(&spec).unwrap();
    let other = server(&root, "sh", &["server.sh", "--flag"]);
    assert!(
        trust
            .check(&root, &roots, &other)
            .untrusted
            .unwrap()
            .contains("command, args, env or working folder changed")
    );
}

#[test]
fn records_keep_their_file_hashes_across_a_save() {
    let (_dir, root) = project();
    let roots = [root.clone()];
    fs_err::write(root.join("server.sh"), "v1").unwrap();
    let spec = server(&root, "./server.sh", &[]);
    let mut trust = store(&root);
    trust.trust(&root, &roots, &spec).unwrap();
    trust.save().unwrap();
    let text = fs_err::read_to_string(root.join(".user/trusted_servers.toml")).unwrap();
    assert!(text.contains("[trusted.files]"), "{text}");
    assert!(text.contains("\"server.sh\" = \"sha256:"), "{text}");
    let loaded = store(&root);
    assert_eq!(loaded.check(&root, &roots, &spec).untrusted, None);
}

#[test]
fn a_record_from_before_files_were_covered_still_loads_and_says_what_to_do() {
    let (_dir, root) = project();
    let roots = [root.clone()];
    fs_err::write(root.join("server.sh"), "v1").unwrap();
    let with_file = server(&root, "sh", &["server.sh"]);
    let mut without = server(&root, "npx", &["-y", "remote-only"]);
    without.name = "remote".to_owned();
    let old = |spec: &ServerSpec| {
        format!(
            "[[trusted]]\nproject = {:?}\nname = {:?}\nfingerprint = {:?}\n",
            root.display().to_string(),
            spec.name,
            launch_fingerprint(spec)
        )
    };
    let path = root.join(".user/trusted_servers.toml");
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    fs_err::write(&path, format!("{}{}", old(&with_file), old(&without))).unwrap();
    let mut trust = store(&root);
    let reason = trust.check(&root, &roots, &with_file).untrusted.unwrap();
    assert!(
        reason.contains("earlier toolgate") && reason.contains("`server.sh`"),
        "{reason}"
    );
    // Nothing of the project is run: the old fingerprint covered all there is.
    let remote = trust.check(&root, &roots, &without);
    assert_eq!(remote.untrusted, None);
    // ... until a local bin appears.
    fs_err::create_dir_all(root.join("node_modules/.bin")).unwrap();
    fs_err::write(root.join("node_modules/.bin/remote-only"), "x").unwrap();
    assert_eq!(
        remote.recheck(&without).unwrap_err().to_string(),
        "`node_modules/.bin/remote-only` appeared since it was trusted"
    );

    // Saving keeps the old record as it was; trusting again upgrades it.
    trust.trust(&root, &roots, &with_file).unwrap();
    trust.save().unwrap();
    let text = fs_err::read_to_string(&path).unwrap();
    assert_eq!(text.matches("[trusted.files]").count(), 1, "{text}");
    assert_eq!(
        store(&root).check(&root, &roots, &with_file).untrusted,
        None
    );
}
