//! The relay through the real namespace (or the fallback where there is none): the command
//! runs where it was asked to, and its exit status and signal come back as its own.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;

fn command(script: &str) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new("sh");
    cmd.args(["-c", script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

#[tokio::test]
async fn a_relative_cwd_is_the_callers_directory_joined() {
    let mut cmd = command("pwd");
    cmd.current_dir("src");
    toolgate_contain::contain(&mut cmd);
    let out = cmd.output().await.unwrap();
    let here = std::env::current_dir().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        here.join("src").display().to_string()
    );
}

#[tokio::test]
async fn exit_codes_and_signals_come_back_as_the_commands_own() {
    let mut cmd = command("exit 7");
    toolgate_contain::contain(&mut cmd);
    assert_eq!(cmd.status().await.unwrap().code(), Some(7));

    // A shell killing itself: inside a namespace it must not be PID 1 (which ignores
    // signals it has no handler for), and the relay must die of the same signal.
    let mut cmd = command("kill -TERM $$; sleep 5");
    toolgate_contain::contain(&mut cmd);
    assert_eq!(cmd.status().await.unwrap().signal(), Some(libc::SIGTERM));
}

#[tokio::test]
async fn the_namespace_applies_here_and_commands_see_their_own_proc() {
    assert!(
        matches!(
            toolgate_contain::current(),
            toolgate_contain::Containment::Namespace { .. }
        ),
        "no PID namespace on this machine: {}",
        toolgate_contain::current()
    );
    let mut cmd = command("echo $$; ls /proc | grep -c '^[0-9]'");
    toolgate_contain::contain(&mut cmd);
    let out = cmd.output().await.unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let pid: i32 = lines.next().unwrap().parse().unwrap();
    let visible: usize = lines.next().unwrap().parse().unwrap();
    assert!(pid > 1, "the command is not the namespace's init: {text}");
    // init, this shell, ls, grep and the like: not the host's hundreds of processes.
    assert!(visible < 20, "the command sees the host's /proc: {text}");
}
