//! Starting a command in its own process group; making sure nothing of that group survives
//! (issue #4: not on timeout, not on cancellation, not when toolgate exits) is
//! [`ProcessGroup`]'s job, in `toolgate-contain`.

use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::Stdio;
use std::sync::OnceLock;

pub(crate) use toolgate_contain::{ProcessGroup, Teardown};

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
    let group = ProcessGroup::of(&child);
    let (Some(group), Some(stdout), Some(stderr)) =
        (group, child.stdout.take(), child.stderr.take())
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
        group,
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
