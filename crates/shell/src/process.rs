//! Starting a command in its own process group; making sure nothing of that group survives
//! (not on timeout, not on cancellation, not when toolgate exits) is [`ProcessGroup`]'s
//! job, in `toolgate-contain`.

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;

pub(crate) use toolgate_contain::{ProcessGroup, Teardown};

use crate::error::ShellError;

/// A started command: the direct child (the shell) and the read ends of its two pipes.
pub(crate) struct Spawned {
    pub child: Leader,
    pub group: ProcessGroup,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
}

/// The shell's process: started without a copy of toolgate's memory where
/// [`toolgate_contain::launch`] can, else through a `Command`.
pub(crate) enum Leader {
    Launched(toolgate_contain::Started),
    Command(tokio::process::Child),
}

impl Leader {
    /// Waits for the shell to exit (cancel-safe).
    pub async fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        match self {
            Self::Launched(started) => started.wait().await,
            Self::Command(child) => child.wait().await,
        }
    }
}

/// The shell commands run under: `bash` when there is one, else `sh`; its name and where
/// `PATH` found it (looked up once, not at every start).
fn shell() -> &'static (&'static str, PathBuf) {
    static SHELL: OnceLock<(&'static str, PathBuf)> = OnceLock::new();
    SHELL.get_or_init(|| {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let find = |name: &str| {
            std::env::split_paths(&path)
                .map(|dir| dir.join(name))
                .find(|p| p.is_absolute() && p.is_file())
        };
        match (find("bash"), find("sh")) {
            (Some(bash), _) => ("bash", bash),
            (None, Some(sh)) => ("sh", sh),
            (None, None) => ("sh", PathBuf::from("/bin/sh")),
        }
    })
}

/// Starts `command` under `bash -c` (or `sh -c`) in `cwd`: stdin closed, stdout and stderr
/// piped, in a new process group, killed when toolgate dies.
pub(crate) fn spawn(
    command: &str,
    cwd: &Path,
    sandbox: &crate::Sandbox,
) -> Result<Spawned, ShellError> {
    let (shell, program) = shell();
    let argv = [OsStr::new(shell), OsStr::new("-c"), OsStr::new(command)];
    if let Some(launched) = toolgate_contain::launch(program, &argv, cwd, sandbox) {
        let (started, stdout, stderr) = launched.map_err(|e| start_error(shell, e))?;
        let group = ProcessGroup::led_by(&started)
            .ok_or_else(|| spawn_error(shell, std::io::Error::other("the child has no pid")))?;
        return Ok(Spawned {
            child: Leader::Launched(started),
            group,
            stdout,
            stderr,
        });
    }
    let mut cmd = tokio::process::Command::new(program);
    cmd.arg0(shell)
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null());
    let (mut child, group) =
        toolgate_contain::spawn(&mut cmd, sandbox).map_err(|e| start_error(shell, e))?;
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
        child: Leader::Command(child),
        group,
        stdout,
        stderr,
    })
}

/// Why either start failed: the sandbox (a config matter), or the start itself.
fn start_error(shell: &str, error: toolgate_contain::LaunchError) -> ShellError {
    match error {
        toolgate_contain::LaunchError::Sandbox(e) => ShellError::Sandbox(e),
        toolgate_contain::LaunchError::Start(e) => spawn_error(shell, e),
    }
}

/// A spawn failure with a hint that fits its cause.
fn spawn_error(shell: &str, source: std::io::Error) -> ShellError {
    let code = source.raw_os_error();
    let is = |errno: rustix::io::Errno| code == Some(errno.raw_os_error());
    let hint = if is(rustix::io::Errno::TOOBIG) {
        "the command is longer than the OS accepts; write it to a script file with write_file and run that"
    } else if is(rustix::io::Errno::AGAIN) || is(rustix::io::Errno::NOMEM) {
        "the machine is out of processes or memory; stop background jobs you no longer need (job_kill) and retry"
    } else if source.kind() == std::io::ErrorKind::InvalidInput && code.is_none() {
        // std's and the spawner's own refusal; an EINVAL from the start itself is not it.
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
