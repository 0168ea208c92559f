//! `toolgate --help` and `--version`, `toolgate completions SHELL`, `toolgate man`, `config show`'s
//! masking by declaration, and `config reference`.

use std::process::Command;

use crate::{project, toolgate};

fn stdout_of(args: &[&str]) -> String {
    let dir = project();
    let out = toolgate(dir.path()).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn help_opens_with_what_toolgate_is() {
    // The commands live in another crate, whose own description clap would take.
    let help = stdout_of(&["--help"]);
    let first = help.lines().next().unwrap_or_default();
    assert_eq!(first, env!("CARGO_PKG_DESCRIPTION"), "{help}");
}

#[test]
fn version_names_the_version_and_the_commit() {
    let shown = stdout_of(&["--version"]);
    let expected_start = format!("toolgate {} (", env!("CARGO_PKG_VERSION"));
    assert!(shown.starts_with(&expected_start), "{shown}");
    let inside = shown
        .trim_end()
        .strip_prefix(&expected_start)
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{shown}"));
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .ok()
            .filter(|o| o.status.success())
    };
    if git(&["rev-parse", "HEAD"]).is_none() {
        assert_eq!(inside, "commit unknown", "built outside a git checkout");
        return;
    }
    // `<short hash> <commit date>`, the commit this binary was built from: HEAD or, when a
    // commit was made after the build, one of its ancestors.
    let (hash, date) = inside.split_once(' ').unwrap_or_else(|| panic!("{shown}"));
    assert!(
        hash.len() >= 7 && hash.chars().all(|c| c.is_ascii_hexdigit()),
        "{shown}"
    );
    assert!(
        git(&["merge-base", "--is-ancestor", hash, "HEAD"]).is_some(),
        "{hash} is not HEAD or one of its ancestors"
    );
    let committed = git(&["log", "-1", "--format=%cs", hash]).unwrap();
    assert_eq!(String::from_utf8(committed.stdout).unwrap().trim(), date);
}

#[test]
fn completions_cover_every_command_and_bash_can_load_them() {
    let bash = stdout_of(&["completions", "bash"]);
    for command in ["serve", "doctor", "completions", "mcp", "skills"] {
        assert!(bash.contains(command), "bash completion lacks {command}");
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("toolgate.bash");
    std::fs::write(&script, &bash).unwrap();
    // Sourced into a shell, it defines the completion for `toolgate`.
    let check = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source '{}' && complete -p toolgate",
            script.display()
        ))
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(String::from_utf8_lossy(&check.stdout).contains("toolgate"));

    assert!(stdout_of(&["completions", "zsh"]).starts_with("#compdef toolgate"));
    assert!(stdout_of(&["completions", "fish"]).contains("complete -c toolgate"));
    let unknown = toolgate(dir.path())
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("bash"));
}

#[test]
fn man_prints_the_page_and_writes_one_per_command() {
    let page = stdout_of(&["man"]);
    assert!(page.contains(".TH toolgate 1"), "{page}");
    assert!(page.contains("doctor"), "the page lists the commands");
    let dir = project();
    let out_dir = dir.path().join("man");
    let out = toolgate(dir.path())
        .args(["man", "--out-dir"])
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(out.status.success());
    for page in [
        "toolgate.1",
        "toolgate-serve.1",
        "toolgate-doctor.1",
        "toolgate-mcp-list.1",
    ] {
        let text =
            std::fs::read_to_string(out_dir.join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(text.starts_with(".ie"), "{page} is roff: {text}");
    }
}

#[test]
fn config_show_masks_declared_secrets_only() {
    let dir = project();
    std::fs::create_dir(dir.path().join(".toolgate")).unwrap();
    std::fs::write(
        dir.path().join(".toolgate/config.toml"),
        "[agent]\ncontext_tokens = 64000\n\n[mcp_servers.gh]\ncommand = \"gh-mcp\"\nenv = { GITHUB_TOKEN = \"ghp_secret\" }\n",
    )
    .unwrap();
    let out = toolgate(dir.path())
        .args(["config", "show"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let shown = String::from_utf8(out.stdout).unwrap();
    assert!(shown.contains("agent.context_tokens = 64000"), "{shown}");
    assert!(
        shown.contains("mcp_servers.gh.env.GITHUB_TOKEN = \"***\""),
        "{shown}"
    );
    assert!(!shown.contains("ghp_secret"), "{shown}");
    assert!(
        shown.contains("server.token_env = \"TOOLGATE_TOKEN\""),
        "{shown}"
    );
}

#[test]
fn config_reference_prints_the_generated_reference_whatever_the_config_holds() {
    let dir = project();
    std::fs::create_dir(dir.path().join(".toolgate")).unwrap();
    std::fs::write(
        dir.path().join(".toolgate/config.toml"),
        "[read]\nmax_lines = \"many\"\n",
    )
    .unwrap();
    let out = toolgate(dir.path())
        .args(["config", "reference"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        toolgate_config::reference()
    );
}
