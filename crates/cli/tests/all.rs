//! End-to-end tests of the `toolgate` binary: the CLI and the MCP server over stdio.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

#[path = "all/agent.rs"]
mod agent;
#[path = "all/agent_tty.rs"]
mod agent_tty;
#[path = "all/cli.rs"]
mod cli;
#[path = "all/disclosure.rs"]
mod disclosure;
#[path = "all/doctor.rs"]
mod doctor;
#[path = "all/hard_links.rs"]
mod hard_links;
#[path = "all/lifecycle_http.rs"]
mod lifecycle_http;
#[path = "all/manual.rs"]
mod manual;
#[path = "all/mcp.rs"]
mod mcp;
#[path = "all/provider_bounds.rs"]
mod provider_bounds;
#[path = "all/sandbox.rs"]
mod sandbox;
#[path = "all/schedule.rs"]
mod schedule;
#[path = "all/secrets.rs"]
mod secrets;
#[path = "all/sessions.rs"]
mod sessions;
#[path = "all/shutdown.rs"]
mod shutdown;
#[path = "all/skills.rs"]
mod skills;
#[path = "all/spill.rs"]
mod spill;
#[path = "all/stdio.rs"]
mod stdio;
#[path = "all/stdio_mounted.rs"]
mod stdio_mounted;
#[path = "all/stdio_processes.rs"]
mod stdio_processes;
#[path = "all/trust.rs"]
mod trust;
#[path = "all/user_dirs.rs"]
mod user_dirs;

use std::path::Path;
use std::process::Command;

/// A command running the built binary in `dir`, isolated from the user's config.
pub fn toolgate(dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    cmd.current_dir(dir)
        .env("XDG_CONFIG_HOME", dir.join(".no-user-config"))
        // No user-level skills or ~/.claude.json from the machine running the tests.
        .env("HOME", dir.join(".no-home"))
        // Caches, transcripts and state under that home, never the machine's own.
        .env_remove("XDG_CACHE_HOME")
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_STATE_HOME")
        .env_remove("RUST_LOG")
        .env_remove("TOOLGATE_TOKEN")
        // Tests run inside a toolgate's `run_shell` are not "mounted" by it.
        .env_remove("TOOLGATE_GATEWAY_DEPTH");
    cmd
}

/// Writes the user config of a test run in `dir` (a user layer: [`toolgate`] points
/// `XDG_CONFIG_HOME` at `.no-user-config`).
/// The text of `toolgate call run_shell` running `command`.
pub fn run_shell(cmd: &mut Command, command: &str) -> String {
    let out = cmd
        .args([
            "call",
            "run_shell",
            &serde_json::json!({ "command": command }).to_string(),
        ])
        .output()
        .unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

pub fn user_config(dir: &Path, text: &str) {
    let user = dir.join(".no-user-config/toolgate");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(user.join("config.toml"), text).unwrap();
}

/// Where `toolgate run` in `dir` saves transcripts: the one project folder under the test
/// home's data folder (`<dir>/.no-home/.local/share/toolgate/sessions/<key>`).
pub fn sessions_dir(dir: &Path) -> std::path::PathBuf {
    let store = dir.join(".no-home/.local/share/toolgate/sessions");
    let mut found: Vec<_> = std::fs::read_dir(&store)
        .unwrap_or_else(|e| panic!("{}: {e}", store.display()))
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(found.len(), 1, "one project folder in {found:?}");
    found.pop().unwrap()
}

/// A small project: a README, a source file and a folder.
pub fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("README.md"), "# demo\n\nhello\n").unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("src/main.rs"),
        "fn main() {\n    println!(\"hi\");\n}\n",
    )
    .unwrap();
    dir
}
