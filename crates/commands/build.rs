//! Records the commit `toolgate --version` names.
//!
//! Order: `TOOLGATE_BUILD_COMMIT` (for packagers building from a tarball), then `git` in the
//! source folder, then "commit unknown". A build without git, or outside a checkout (a
//! crates.io download), still succeeds.

#![allow(
    clippy::print_stdout,
    reason = "a build script talks to cargo on stdout"
)]

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=TOOLGATE_BUILD_COMMIT");
    let commit = std::env::var("TOOLGATE_BUILD_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(git_commit)
        .unwrap_or_else(|| "commit unknown".to_owned());
    println!("cargo:rustc-env=TOOLGATE_COMMIT={commit}");
}

/// `abc1234 2026-12-02` for HEAD, and the files whose change means a new HEAD.
fn git_commit() -> Option<String> {
    let described = git(&["log", "-1", "--format=%h %cs"])?;
    // HEAD itself (a checkout), the branch it points at (a commit) and packed refs; in a
    // worktree these live in different folders, which `--git-path` resolves.
    // A path that does not exist would make cargo rerun this script on every build.
    let mut watch = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    watch.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for name in &watch {
        if let Some(p) = git(&["rev-parse", "--git-path", name])
            && std::path::Path::new(&p).exists()
        {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    Some(described)
}

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}
