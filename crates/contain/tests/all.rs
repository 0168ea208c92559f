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

/// The command's `exec` runs in memory it shares with the supervisor (issue 27): a failed
/// one must still come back to the caller as the spawn's own error, with its errno.
#[tokio::test]
async fn a_program_that_cannot_be_run_fails_the_spawn_with_its_error() {
    let mut cmd = tokio::process::Command::new("/nonexistent/toolgate-test-program");
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    toolgate_contain::contain(&mut cmd);
    let err = cmd.spawn().expect_err("a missing program started");
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound, "{err}");

    // And the next command still runs, with its own status.
    let mut cmd = command("exit 3");
    toolgate_contain::contain(&mut cmd);
    assert_eq!(cmd.status().await.unwrap().code(), Some(3));
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

/// Host pids of live (non-zombie) processes whose command line contains `marker`.
fn alive_with(marker: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in fs_err::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = fs_err::read(entry.path().join("cmdline")).unwrap_or_default();
        let stat = fs_err::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rfind(')')
            .is_some_and(|at| stat[at + 1..].trim_start().starts_with(['Z', 'X']));
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if text.contains(marker) && !zombie {
            found.push(pid);
        }
    }
    found
}

#[tokio::test]
async fn nothing_that_left_the_group_outlives_its_command() {
    // Regression (issue 22, finding 7): `setsid -f sleep` left a process running after
    // its command returned, adopted by the namespace's init.
    let marker = format!("1{}.75", std::process::id());
    let script = format!(
        "setsid -f sleep {marker}1; (setsid sleep {marker}2 &); (set -m; sleep {marker}3 &); \
         sh -c 'sleep {marker}4 & exec setsid sleep {marker}5' & \
         sleep {marker}6 & \
         until [ $(ps -e -o args | grep -c '^sleep {marker}') -ge 6 ]; do sleep 0.01; done"
    );
    let mut cmd = command(&script);
    toolgate_contain::contain(&mut cmd);
    let mut child = cmd.spawn().unwrap();
    let group = child.id().unwrap() as i32;
    let status = child.wait().await.unwrap();
    assert!(status.success(), "{status:?}");
    // Whatever left the process group was killed and reaped before the status came back;
    // what is still in it is the caller's to stop (toolgate stops the group).
    let left = alive_with(&format!("sleep {marker}"));
    let outside: Vec<String> = left
        .iter()
        .filter(|&&pid| group_of(pid) != Some(group))
        .map(|pid| fs_err::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default())
        .collect();
    let _ = std::process::Command::new("kill")
        .args(["-KILL", "--", &format!("-{group}")])
        .status();
    assert!(
        outside.is_empty(),
        "left running outside the group: {outside:?}"
    );
    assert!(
        !left.is_empty(),
        "the in-group sleeps are the caller's to stop"
    );
}

/// The process group of host pid `pid`.
fn group_of(pid: i32) -> Option<i32> {
    let stat = fs_err::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..]
        .split_ascii_whitespace()
        .nth(2)?
        .parse()
        .ok()
}
