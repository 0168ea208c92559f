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
#[path = "all/mcp.rs"]
mod mcp;
#[path = "all/sandbox.rs"]
mod sandbox;
#[path = "all/schedule.rs"]
mod schedule;
#[path = "all/skills.rs"]
mod skills;
#[path = "all/stdio.rs"]
mod stdio;

use std::path::Path;
use std::process::Command;

/// A command running the built binary in `dir`, isolated from the user's config.
pub fn toolgate(dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    cmd.current_dir(dir)
        .env("XDG_CONFIG_HOME", dir.join(".no-user-config"))
        // No user-level skills or ~/.claude.json from the machine running the tests.
        .env("HOME", dir.join(".no-home"))
        .env_remove("RUST_LOG")
        .env_remove("TOOLGATE_TOKEN");
    cmd
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
