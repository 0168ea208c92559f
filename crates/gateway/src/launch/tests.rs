use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;

use super::*;

/// A canonical temporary project.
fn project() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = fs_err::canonicalize(dir.path()).unwrap();
    (dir, root)
}

fn write(path: &Path, text: &str) {
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    fs_err::write(path, text).unwrap();
}

fn executable(path: &Path, text: &str) {
    write(path, text);
    fs_err::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn stdio(command: &str, args: &[&str], cwd: &Path) -> Transport {
    stdio_env(command, args, cwd, BTreeMap::new())
}

fn stdio_env(command: &str, args: &[&str], cwd: &Path, env: BTreeMap<String, String>) -> Transport {
    Transport::Stdio {
        command: command.to_owned(),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        env,
        cwd: cwd.to_path_buf(),
    }
}

/// The launch of `transport` in a one-root project.
fn scan(transport: &Transport, root: &Path) -> Result<Launch, FingerprintError> {
    resolve(transport, &[root.to_path_buf()])
}

fn names(launch: &Launch) -> Vec<&str> {
    launch.files.keys().map(String::as_str).collect()
}

#[test]
fn a_command_path_and_script_arguments_are_covered_with_their_content() {
    let (_dir, root) = project();
    executable(&root.join("server.sh"), "echo v1\n");
    write(&root.join("srv.py"), "print(1)\n");
    write(&root.join("conf/srv.toml"), "x = 1\n");
    let launch = scan(&stdio("./server.sh", &[], &root), &root).unwrap();
    assert_eq!(names(&launch), ["server.sh"]);
    assert!(launch.files["server.sh"].starts_with("sha256:"));
    assert!(launch.protect.contains(&root.join("server.sh")));

    let args = ["-u", "srv.py", "--config=conf/srv.toml", "--stdio", "."];
    let launch = scan(&stdio("python3", &args, &root), &root).unwrap();
    assert_eq!(names(&launch), ["conf/srv.toml", "srv.py"]);
    write(&root.join("hook.js"), "x\n");
    let env = BTreeMap::from([("NODE_OPTIONS".to_owned(), "--require ./hook.js".to_owned())]);
    let launch = scan(&stdio_env("node", &[], &root, env), &root).unwrap();
    assert_eq!(names(&launch), ["hook.js"]);

    // Content, not names: the same command over a changed file is another fingerprint.
    let before = scan(&stdio("sh", &["server.sh"], &root), &root).unwrap();
    write(&root.join("server.sh"), "touch pwned\n");
    let after = scan(&stdio("sh", &["server.sh"], &root), &root).unwrap();
    assert_ne!(before.files["server.sh"], after.files["server.sh"]);
}

#[test]
fn nothing_outside_the_project_and_no_shell_strings_are_covered() {
    let (_dir, root) = project();
    let (_other, outside) = project();
    write(&outside.join("srv.js"), "x\n");
    let launch = scan(
        &stdio("node", &[outside.join("srv.js").to_str().unwrap()], &root),
        &root,
    )
    .unwrap();
    assert!(launch.files.is_empty(), "{:?}", launch.files);
    let launch = scan(&stdio("sh", &["-c", "echo hi"], &root), &root).unwrap();
    assert!(launch.files.is_empty());
    // The interpreter found on PATH is not a project file.
    let launch = scan(&stdio("sh", &[], &root), &root).unwrap();
    assert!(launch.files.is_empty());
}

#[test]
fn a_symlink_is_recorded_with_its_target_wherever_that_is() {
    let (_dir, root) = project();
    let (_other, outside) = project();
    write(&outside.join("real.sh"), "echo out\n");
    std::os::unix::fs::symlink(outside.join("real.sh"), root.join("server.sh")).unwrap();
    let launch = scan(&stdio("sh", &["server.sh"], &root), &root).unwrap();
    let target = outside.join("real.sh").to_string_lossy().into_owned();
    assert_eq!(launch.files["server.sh"], format!("symlink to {target}"));
    assert!(launch.files[&target].starts_with("sha256:"));
    // Retargeting the link is a change.
    write(&outside.join("other.sh"), "echo out\n");
    fs_err::remove_file(root.join("server.sh")).unwrap();
    std::os::unix::fs::symlink(outside.join("other.sh"), root.join("server.sh")).unwrap();
    let again = scan(&stdio("sh", &["server.sh"], &root), &root).unwrap();
    assert_ne!(launch.files, again.files);
}

#[test]
fn npx_covers_the_local_bin_whether_or_not_it_exists_yet() {
    let (_dir, root) = project();
    let sub = root.join("sub");
    fs_err::create_dir_all(&sub).unwrap();
    let transport = stdio("npx", &["-y", "some-mcp@1.2"], &sub);
    let before = scan(&transport, &root).unwrap();
    assert!(before.files.is_empty());
    // Where npm would look, from the working folder up to the root: protected already.
    for dir in [&sub, &root] {
        assert!(
            before
                .protect
                .contains(&dir.join("node_modules/.bin/some-mcp")),
            "{:?}",
            before.protect
        );
        assert!(
            before
                .protect_dirs
                .contains(&dir.join("node_modules/some-mcp"))
        );
    }
    assert!(!before.protect.iter().any(|p| !p.starts_with(&root)));

    executable(&root.join("node_modules/some-mcp/cli.js"), "evil\n");
    write(
        &root.join("node_modules/some-mcp/package.json"),
        r#"{"name":"some-mcp","bin":{"some-mcp":"cli.js"}}"#,
    );
    fs_err::create_dir_all(root.join("node_modules/.bin")).unwrap();
    std::os::unix::fs::symlink(
        "../some-mcp/cli.js",
        root.join("node_modules/.bin/some-mcp"),
    )
    .unwrap();
    let after = scan(&transport, &root).unwrap();
    assert_eq!(
        names(&after),
        [
            "node_modules/.bin/some-mcp",
            "node_modules/some-mcp/cli.js",
            "node_modules/some-mcp/package.json"
        ]
    );
    assert_eq!(
        after.files["node_modules/.bin/some-mcp"],
        "symlink to node_modules/some-mcp/cli.js"
    );
}

#[test]
fn a_scoped_package_and_package_options_reach_its_declared_bins() {
    let (_dir, root) = project();
    let pkg = root.join("node_modules/@sc/pkg");
    write(
        &pkg.join("package.json"),
        r#"{"name":"@sc/pkg","bin":{"pkg-cli":"bin/cli.js","../../../../escape":"../../../x"}}"#,
    );
    executable(&pkg.join("bin/cli.js"), "x\n");
    for args in [
        &["-y", "@sc/pkg@latest"][..],
        &["--package=@sc/pkg", "pkg-cli"],
        &["-p", "@sc/pkg", "--", "pkg-cli"],
    ] {
        let launch = scan(&stdio("npx", args, &root), &root).unwrap();
        assert_eq!(
            names(&launch),
            [
                "node_modules/@sc/pkg/bin/cli.js",
                "node_modules/@sc/pkg/package.json"
            ],
            "{args:?}"
        );
    }
    for (command, args) in [
        ("npm", &["exec", "-y", "@sc/pkg"][..]),
        ("pnpm", &["dlx", "@sc/pkg"]),
        ("yarn", &["dlx", "@sc/pkg"]),
        ("bunx", &["@sc/pkg"]),
    ] {
        let launch = scan(&stdio(command, args, &root), &root).unwrap();
        assert_eq!(launch.files.len(), 2, "{command} {args:?}");
    }
}

#[test]
fn a_path_entry_into_the_project_and_python_runners_are_followed() {
    let (_dir, root) = project();
    executable(&root.join("node_modules/.bin/srv"), "x\n");
    let env = BTreeMap::from([("PATH".to_owned(), "node_modules/.bin:/usr/bin".to_owned())]);
    let launch = scan(&stdio_env("srv", &[], &root, env), &root).unwrap();
    assert_eq!(names(&launch), ["node_modules/.bin/srv"]);

    let launch = scan(&stdio("uvx", &["mcp-tool@1.0"], &root), &root).unwrap();
    assert!(launch.files.is_empty());
    assert!(launch.protect.contains(&root.join(".venv/bin/mcp-tool")));
    executable(&root.join(".venv/bin/mcp-tool"), "x\n");
    let launch = scan(
        &stdio("uv", &["run", "--directory", ".", "mcp-tool"], &root),
        &root,
    )
    .unwrap();
    assert_eq!(names(&launch), [".venv/bin/mcp-tool"]);
}

#[test]
fn fifos_are_skipped_and_a_huge_file_cannot_be_fingerprinted() {
    let (_dir, root) = project();
    nix_mkfifo(&root.join("pipe"));
    let launch = scan(&stdio("cat", &["pipe"], &root), &root).unwrap();
    assert!(launch.files.is_empty());
    let big = fs_err::File::create(root.join("big.sh")).unwrap();
    big.set_len(MAX_FILE_BYTES + 1).unwrap();
    let err = scan(&stdio("sh", &["big.sh"], &root), &root).unwrap_err();
    assert!(matches!(err, FingerprintError::TooLarge { .. }), "{err}");
    assert!(
        err.to_string().contains("more than toolgate fingerprints"),
        "{err}"
    );
}

fn nix_mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn package_specs_and_runner_arguments_parse() {
    assert_eq!(package_name("foo"), Some("foo"));
    assert_eq!(package_name("foo@1.2.3"), Some("foo"));
    assert_eq!(package_name("@sc/pkg@^2"), Some("@sc/pkg"));
    for bad in ["", "@sc", "github:u/r", "u/r", "../x", "@sc/..", "npm:x@1"] {
        assert_eq!(package_name(bad), None, "{bad}");
    }
    let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        runner_targets(Runner::Node, &args(&["-y", "--registry", "r", "x", "--y"])),
        (vec![], Some("x".to_owned()))
    );
    assert_eq!(
        runner_targets(
            Runner::Python,
            &args(&["-p", "3.12", "--from", "pkg", "tool"])
        ),
        (vec![], Some("tool".to_owned())),
        "uv's -p is the Python version, --from not an npm package"
    );
    assert!(runner_of("node", &args(&["x.js"])).is_none());
    assert!(runner_of("/usr/bin/npx", &args(&["x"])).is_some());
    assert!(runner_of("uv", &args(&["tool", "run", "x"])).is_some());
}
