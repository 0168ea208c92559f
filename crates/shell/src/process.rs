//! Starting a command in its own process group and making sure nothing of that group
//! survives (issue #4: not on timeout, not on cancellation, not when toolgate exits).

use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::Stdio;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};

use crate::error::ShellError;

/// A started command: the direct child (the shell) and the read ends of its two pipes.
pub(crate) struct Spawned {
    pub child: tokio::process::Child,
    pub group: ProcessGroup,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
}

/// The shell commands run under: `bash` when there is one, else `sh`.
fn shell() -> &'static str {
    static SHELL: OnceLock<&'static str> = OnceLock::new();
    SHELL.get_or_init(|| {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let has_bash = std::env::split_paths(&path).any(|dir| dir.join("bash").is_file());
        if has_bash { "bash" } else { "sh" }
    })
}

/// Starts `command` under `bash -c` (or `sh -c`) in `cwd`: stdin closed, stdout and stderr
/// piped, in a new process group, killed when toolgate dies.
pub(crate) fn spawn(
    command: &str,
    cwd: &Path,
    sandbox: &crate::Sandbox,
) -> Result<Spawned, ShellError> {
    let shell = shell();
    let mut cmd = tokio::process::Command::new(shell);
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    toolgate_contain::contain(&mut cmd);
    sandbox
        .apply(&mut cmd)
        .map_err(|e| ShellError::Sandbox(e.to_string()))?;
    let mut child = cmd.spawn().map_err(|source| spawn_error(shell, source))?;
    let pid = child.id().and_then(|id| Pid::from_raw(id as i32));
    let (Some(pid), Some(stdout), Some(stderr)) = (pid, child.stdout.take(), child.stderr.take())
    else {
        return Err(spawn_error(
            shell,
            std::io::Error::other("the child has no pid or pipes"),
        ));
    };
    // Blocking descriptors: the pump threads read them with poll(2).
    let pipe = |r: std::io::Result<OwnedFd>| r.map_err(|source| spawn_error(shell, source));
    let stdout = pipe(stdout.into_owned_fd())?;
    let stderr = pipe(stderr.into_owned_fd())?;
    Ok(Spawned {
        child,
        group: ProcessGroup::new(pid),
        stdout,
        stderr,
    })
}

/// A spawn failure with a hint that fits its cause.
fn spawn_error(shell: &str, source: std::io::Error) -> ShellError {
    let code = source.raw_os_error();
    let is = |errno: rustix::io::Errno| code == Some(errno.raw_os_error());
    let hint = if is(rustix::io::Errno::TOOBIG) {
        "the command is longer than the OS accepts; write it to a script file with write_file and run that"
    } else if is(rustix::io::Errno::AGAIN) || is(rustix::io::Errno::NOMEM) {
        "the machine is out of processes or memory; stop background jobs you no longer need (job_kill) and retry"
    } else if source.kind() == std::io::ErrorKind::InvalidInput {
        "the command contains a NUL byte; remove it"
    } else {
        "retry, or check that the shell is installed"
    };
    ShellError::Spawn {
        shell: shell.to_owned(),
        source,
        hint,
    }
}

/// A process group we started. Dropping it while armed SIGKILLs the whole group, so a
/// cancelled or dropped call leaves nothing behind.
#[derive(Debug)]
pub(crate) struct ProcessGroup {
    pgid: Pid,
    /// Cleared once the group is known to be gone, so a recycled id is never signalled.
    armed: AtomicBool,
}

/// How a group was brought down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Teardown {
    /// Nothing was left to stop.
    AlreadyGone,
    /// SIGTERM was enough.
    Terminated,
    /// SIGKILL was needed after the grace.
    Killed,
}

impl ProcessGroup {
    fn new(pgid: Pid) -> Self {
        Self {
            pgid,
            armed: AtomicBool::new(true),
        }
    }

    /// The group id (the shell's pid).
    pub fn id(&self) -> i32 {
        self.pgid.as_raw_nonzero().get()
    }

    /// Sends `signal` to every process of the group; a group already gone is not an error.
    pub fn signal(&self, signal: Signal) {
        if !self.armed.load(Ordering::Acquire) {
            return;
        }
        match rustix::process::kill_process_group(self.pgid, signal) {
            Ok(()) => {}
            Err(rustix::io::Errno::SRCH) => self.armed.store(false, Ordering::Release),
            Err(e) => tracing::warn!(pgid = self.id(), %e, "could not signal a process group"),
        }
    }

    /// Live (non-zombie) members of the group.
    pub fn members(&self) -> Vec<i32> {
        if !self.armed.load(Ordering::Acquire) {
            return Vec::new();
        }
        let members = group_members(self.id());
        if members.is_empty() {
            self.armed.store(false, Ordering::Release);
        }
        members
    }

    /// Stops the whole group: SIGTERM, up to `grace` for it to go, then SIGKILL and a
    /// bounded wait until no member is left.
    pub async fn teardown(&self, grace: Duration) -> Teardown {
        if self.members().is_empty() {
            return Teardown::AlreadyGone;
        }
        self.signal(Signal::TERM);
        // A stopped process cannot act on SIGTERM until it is continued.
        self.signal(Signal::CONT);
        if self.wait_gone(grace).await {
            return Teardown::Terminated;
        }
        self.signal(Signal::KILL);
        // SIGKILL cannot be ignored; the wait only covers the kernel tearing processes down.
        self.wait_gone(Duration::from_secs(5)).await;
        Teardown::Killed
    }

    async fn wait_gone(&self, limit: Duration) -> bool {
        let start = Instant::now();
        let mut pause = Duration::from_millis(1);
        loop {
            if self.members().is_empty() {
                return true;
            }
            if start.elapsed() >= limit {
                return false;
            }
            tokio::time::sleep(pause.min(limit.saturating_sub(start.elapsed()))).await;
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if self.armed.load(Ordering::Acquire) {
            let _ = rustix::process::kill_process_group(self.pgid, Signal::KILL);
        }
    }
}

/// Pids of the live processes in process group `pgid`. Zombies do not count: they are dead,
/// only not yet reaped (and where PID 1 does not reap orphans, never will be).
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn group_members(pgid: i32) -> Vec<i32> {
    let Some(pid) = Pid::from_raw(pgid) else {
        return Vec::new();
    };
    // Cheap first answer: no process at all in the group.
    if rustix::process::test_kill_process_group(pid).is_err() {
        return Vec::new();
    }
    let Ok(entries) = fs_err::read_dir("/proc") else {
        return vec![pgid];
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = fs_err::read_to_string(entry.path().join("stat")).ok()?;
            let (state, group) = parse_stat(&stat)?;
            (group == pgid && state != 'Z' && state != 'X').then_some(pid)
        })
        .collect()
}

/// Pids of the live processes in process group `pgid` (no /proc: any member counts).
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(crate) fn group_members(pgid: i32) -> Vec<i32> {
    match Pid::from_raw(pgid).map(rustix::process::test_kill_process_group) {
        Some(Ok(())) => vec![pgid],
        _ => Vec::new(),
    }
}

/// State and process group from `/proc/PID/stat` (the name in parentheses may hold spaces
/// and parentheses, so fields are counted from the last `)`).
fn parse_stat(stat: &str) -> Option<(char, i32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

#[cfg(test)]
mod tests {
    use super::parse_stat;

    #[test]
    fn stat_names_with_parentheses_and_spaces() {
        let stat = "4242 (we (ird) name) S 1 4240 4240 0 -1 4194560 100";
        assert_eq!(parse_stat(stat), Some(('S', 4240)));
        assert_eq!(parse_stat("1 (init) Z 0 7 7"), Some(('Z', 7)));
        assert_eq!(parse_stat("garbage"), None);
    }
}
