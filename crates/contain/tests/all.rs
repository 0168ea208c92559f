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

/// The command's `exec` runs in memory it shares with the supervisor: a failed one must
/// still come back to the caller as the spawn's own error, with its errno.
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

/// What the gateway and `run_shell` rely on from [`toolgate_contain::spawn`]: stdout and
/// stderr piped, stdin as the caller set it, a group the child leads, and a missing program
/// as the start's own `NotFound`.
#[tokio::test]
async fn spawn_pipes_the_output_and_the_child_leads_its_group() {
    let mut cmd = tokio::process::Command::new("sh");
    cmd.args(["-c", "echo out; echo err >&2"])
        .stdin(Stdio::null());
    let sandbox = toolgate_contain::Sandbox::default();
    let (child, group) = toolgate_contain::spawn(&mut cmd, &sandbox).unwrap();
    let pid = child.id().and_then(|id| i32::try_from(id).ok());
    // Kept until the end: a `ProcessGroup` kills its group when dropped.
    let group = group.expect("a child that was not reaped has a group");
    assert_eq!(Some(group.id()), pid);
    assert!(child.stdin.is_none(), "stdin stays as the caller set it");
    let output = child.wait_with_output().await.unwrap();
    assert!(output.status.success(), "{output:?}");
    drop(group);
    assert_eq!(
        (&output.stdout[..], &output.stderr[..]),
        (&b"out\n"[..], &b"err\n"[..])
    );

    let mut cmd = tokio::process::Command::new("/nonexistent/toolgate-test-program");
    let Err(toolgate_contain::LaunchError::Start(e)) = toolgate_contain::spawn(&mut cmd, &sandbox)
    else {
        panic!("a missing program started");
    };
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{e}");
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
    // Regression: `setsid -f sleep` left a process running after its command returned,
    // adopted by the namespace's init.
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
    nothing_but_the_group_is_left(&marker, group);
}

/// Whatever left the process group `group` was killed and reaped before the status came
/// back; what is still in it is the caller's to stop (toolgate stops the group), and is
/// stopped here.
fn nothing_but_the_group_is_left(marker: &str, group: i32) {
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

/// Starts `sh -c script` in `cwd` through [`toolgate_contain::launch`] (inside the namespace:
/// the spawner) and returns it with everything it wrote.
fn launched(script: &str, cwd: &std::path::Path) -> (toolgate_contain::Started, String, String) {
    let argv = [
        std::ffi::OsStr::new("sh"),
        std::ffi::OsStr::new("-c"),
        std::ffi::OsStr::new(script),
    ];
    let sandbox = toolgate_contain::Sandbox::default();
    let (started, stdout, stderr) =
        toolgate_contain::launch(std::path::Path::new("/bin/sh"), &argv, cwd, &sandbox)
            .expect("no launch here: the namespace must start commands through its spawner")
            .unwrap();
    let read = |fd: std::os::fd::OwnedFd| {
        use std::io::Read;
        let mut text = String::new();
        std::io::PipeReader::from(fd)
            .read_to_string(&mut text)
            .unwrap();
        text
    };
    (started, read(stdout), read(stderr))
}

#[tokio::test]
async fn the_spawner_starts_commands_in_the_namespace_as_the_relay_did() {
    let dir = fs_err::canonicalize(std::env::temp_dir()).unwrap();
    let script = "echo $$; pwd; ls /proc | grep -c '^[0-9]'; ls /proc/self/fd | tr '\\n' ' '; \
                  echo; ps -o pgid= -p $$; echo \"$PATH\"; cat; echo e >&2; exit 7";
    let (mut started, out, err) = launched(script, &dir);
    let lines: Vec<&str> = out.lines().collect();
    let pid: i32 = lines[0].parse().unwrap();
    assert!(pid > 1, "the command is not the namespace's init: {out}");
    assert_eq!(lines[1], dir.display().to_string(), "{out}");
    let visible: usize = lines[2].parse().unwrap();
    assert!(visible < 20, "the command sees the host's /proc: {out}");
    // stdin, stdout, stderr and `ls`'s own directory: nothing of toolgate's or the spawner's.
    assert_eq!(lines[3].trim(), "0 1 2 3", "{out}");
    // The relay's group, outside the namespace: it reads as 0 inside (as with the relay).
    assert_eq!(lines[4].trim(), "0", "{out}");
    assert_eq!(lines[5], std::env::var("PATH").unwrap_or_default(), "{out}");
    assert_eq!(lines.len(), 6, "stdin is not /dev/null: {out}");
    assert_eq!(err, "e\n");
    assert_eq!(started.wait().await.unwrap().code(), Some(7));

    // Models see the pid a running command sees, and it maps back to a host pid in the
    // relay's group.
    let argv = ["sh", "-c", "echo $$; exec sleep 60"].map(std::ffi::OsStr::new);
    let sandbox = toolgate_contain::Sandbox::default();
    let (mut started, stdout, _) =
        toolgate_contain::launch(std::path::Path::new("/bin/sh"), &argv, &dir, &sandbox)
            .unwrap()
            .unwrap();
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(std::io::PipeReader::from(stdout)),
        &mut first,
    )
    .unwrap();
    let inner: i32 = first.trim().parse().unwrap();
    assert_eq!(toolgate_contain::visible_pid(started.id()), inner);
    let host = toolgate_contain::host_pid(inner).unwrap();
    assert_eq!(group_of(host), Some(started.id()));
    let _ = std::process::Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", started.id())])
        .status();
    assert_eq!(started.wait().await.unwrap().signal(), Some(libc::SIGKILL));

    let (mut started, _, _) = launched("kill -TERM $$; sleep 5", &dir);
    assert_eq!(started.wait().await.unwrap().signal(), Some(libc::SIGTERM));
}

#[tokio::test]
async fn a_spawner_start_that_fails_says_why_and_the_next_one_runs() {
    let argv = [std::ffi::OsStr::new("sh")];
    let sandbox = toolgate_contain::Sandbox::default();
    let start = |program: &str, cwd: &str| {
        toolgate_contain::launch(
            std::path::Path::new(program),
            &argv,
            std::path::Path::new(cwd),
            &sandbox,
        )
        .expect("no launch here")
        .expect_err("a start that cannot work started")
    };
    for e in [
        start("/bin/sh", "/nonexistent-toolgate-folder"),
        start("/nonexistent/toolgate-test-program", "/"),
    ] {
        let toolgate_contain::LaunchError::Start(e) = e else {
            panic!("{e}")
        };
        assert_eq!(e.raw_os_error(), Some(libc::ENOENT), "{e}");
    }
    let (mut started, out, _) = launched("echo ok; exit 3", std::path::Path::new("/"));
    assert_eq!(out, "ok\n");
    assert_eq!(started.wait().await.unwrap().code(), Some(3));
}

#[tokio::test]
async fn nothing_that_left_the_group_outlives_a_spawned_command() {
    let marker = format!("2{}.75", std::process::id());
    let script = format!(
        "exec >/dev/null 2>&1; \
         setsid -f sleep {marker}1; (setsid sleep {marker}2 &); (set -m; sleep {marker}3 &); \
         sleep {marker}6 & \
         until [ $(ps -e -o args | grep -c '^sleep {marker}') -ge 4 ]; do sleep 0.01; done"
    );
    let (mut started, _, _) = launched(&script, std::path::Path::new("/"));
    let group = started.id();
    let status = started.wait().await.unwrap();
    assert!(status.success(), "{status:?}");
    nothing_but_the_group_is_left(&marker, group);
}

#[tokio::test]
async fn a_sandboxed_command_starts_through_the_spawner_and_is_confined() {
    // Read-only: the spawner's command enters Landlock and seccomp from the request.
    let sandbox =
        toolgate_contain::Sandbox::new(toolgate_contain::SandboxMode::ReadOnly, true, &[], &[]);
    let dir = fs_err::canonicalize(std::env::temp_dir()).unwrap();
    let script =
        "echo $$; touch ./toolgate-sandbox-probe-$$ 2>/dev/null && echo wrote || echo refused";
    let argv = ["sh", "-c", script].map(std::ffi::OsStr::new);
    let (mut started, stdout, _) =
        toolgate_contain::launch(std::path::Path::new("/bin/sh"), &argv, &dir, &sandbox)
            .expect("a sandboxed command inside the namespace must start through the spawner")
            .unwrap();
    let mut out = String::new();
    std::io::Read::read_to_string(&mut std::io::PipeReader::from(stdout), &mut out).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].parse::<i32>().unwrap() > 1, "{out}");
    assert_eq!(
        lines.last(),
        Some(&"refused"),
        "the read-only sandbox let a write through: {out}"
    );
    assert_eq!(started.wait().await.unwrap().code(), Some(0));
    let status = fs_err::read_to_string("/proc/self/status").unwrap();
    assert!(
        status.contains("Seccomp:\t0"),
        "the sandbox reached the caller: {status}"
    );
}

#[path = "all/stress.rs"]
mod stress;
