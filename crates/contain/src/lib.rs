//! Process containment: every process toolgate starts (a `run_shell` command, a mounted
//! stdio MCP server) lives in one PID namespace that dies with toolgate, even on SIGKILL,
//! and that `setsid`, `set -m` or a double fork cannot leave.
//!
//! How it holds together, on Linux:
//! - At first use, a dedicated thread forks a *keeper*, which unshares a PID and a mount
//!   namespace (and a user namespace when toolgate is not root) and forks the namespace's
//!   *init* (PID 1 there). The init mounts a fresh `/proc` for the namespace, so `ps`,
//!   `pgrep` and `kill` inside agree on pids, then only reaps orphans.
//! - The keeper dies with the thread that forked it (`PR_SET_PDEATHSIG`), the init dies with
//!   the keeper, and when a namespace's init dies the kernel kills everything in it.
//! - Each command is spawned through a small *relay*, a process outside the namespace that
//!   leads the command's process group, waits for the command's status and exits with it
//!   (re-raising its signal). It blocks or ignores catchable signals, so a SIGTERM to the
//!   group reaches the command's own handlers as before. Inside the namespace a
//!   *supervisor* starts the real command. Two ways to get there:
//!   - [`launch`] (`run_shell` commands, x86_64 Linux 5.9+): the relay runs in
//!     toolgate's memory on a stack of its own (no command can see it), and the keeper,
//!     which is also the namespace's *spawner*, forks the supervisor (the keeper is small)
//!     and reaps it; the command starts from the supervisor `posix_spawn`-style and enters
//!     its sandbox there. Nothing of toolgate is copied (see
//!     `linux/spawner.rs`).
//!   - [`contain`] and a `Command` (mounted servers, and where [`launch`] is not
//!     available): the relay is a `fork` of toolgate that joins the namespace (`setns`)
//!     and forks the supervisor, which forks the command. Plain forks: a mounted server
//!     starts once, where a `run_shell` command starts on every call.
//! - The supervisor is a child subreaper: whatever the command starts comes to
//!   it when orphaned, `setsid` and double forks included. When the command exits it kills
//!   everything that left the process group before reporting the status, and stays until
//!   its last adopted process is gone; what is still in the group is the caller's to stop
//!   (toolgate stops the group). So nothing a command starts outlives it.
//!
//! Where namespaces are not available (not Linux, user namespaces disabled, a `/proc` that
//! cannot be mounted), commands fall back to their own process group with a parent-death
//! signal and no supervisor (it would have to outlive its parent, the only process toolgate
//! can watch, without dying with toolgate): a `setsid` grandchild can then outlive its
//! command and toolgate. [`current`] says which applies.
//!
//! In process groups, [`launch`] starts a `run_shell` command without copying toolgate's
//! memory: `posix_spawn`-style (`CLONE_VM | CLONE_VFORK`, the child on a stack of its own
//! until its `exec`), where `std`'s `Command` forks because it has pre-exec steps.
//!
//! The optional sandbox (Landlock, seccomp and a read-only mount view; [`Sandbox`]) lives
//! here too: commands and mounted servers both start through this crate. So does stopping
//! them: [`ProcessGroup`] signals a command's group, gives it its grace, SIGKILLs and waits
//! (`run_shell` and `job_kill` through [`ProcessGroup::teardown`], mounted stdio servers
//! through [`ProcessGroup::close`]).

#![deny(missing_docs)]
#![allow(unsafe_code)]

use std::ffi::CString;
use std::fmt;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

mod group;
#[cfg(target_os = "linux")]
mod linux;
mod sandbox;

pub use group::{ProcessGroup, Signal, Teardown};
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub use linux::started::Started;
#[cfg(target_os = "linux")]
pub use sandbox::SeccompError;
pub use sandbox::{Sandbox, SandboxError, SandboxMode, landlock_abi, seccomp_available};

/// What the user asked for (`[shell] containment`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Setting {
    /// A PID namespace where the system allows one, else process groups.
    #[default]
    Auto,
    /// A PID namespace or refuse to start.
    Namespace,
    /// Process groups only (a `setsid` grandchild can outlive toolgate).
    ProcessGroup,
}

/// What applies in this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Containment {
    /// Every started process lives in one PID namespace that dies with toolgate.
    Namespace {
        /// A user namespace was needed (toolgate is not root).
        user: bool,
    },
    /// Each command gets its own process group and a parent-death signal.
    ProcessGroup {
        /// Why not a namespace.
        reason: String,
    },
}

impl fmt::Display for Containment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Namespace { user: true } => f.write_str(
                "PID namespace (in a user namespace): started processes die with their command and with toolgate, setsid cannot leave",
            ),
            Self::Namespace { user: false } => f.write_str(
                "PID namespace: started processes die with their command and with toolgate, setsid cannot leave",
            ),
            Self::ProcessGroup { reason } => write!(
                f,
                "process groups only ({reason}): a setsid grandchild can outlive toolgate"
            ),
        }
    }
}

static CURRENT: OnceLock<Containment> = OnceLock::new();

/// Why containment cannot be set up as asked ([`init`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InitError {
    /// `Setting::Namespace` was asked for, but no PID namespace can be made here.
    #[error(
        "`shell.containment = \"namespace\"` but no PID namespace can be made here: {reason}; set it to \"auto\" to fall back to process groups"
    )]
    NoNamespace {
        /// Why not (the same words as [`Containment::ProcessGroup`]'s reason).
        reason: String,
    },
}

/// Sets containment up for this process (the first call decides; later calls return the
/// same answer). `Setting::Namespace` fails when no namespace can be made.
pub fn init(setting: Setting) -> Result<&'static Containment, InitError> {
    let current = CURRENT.get_or_init(|| decide(setting));
    match (setting, current) {
        (Setting::Namespace, Containment::ProcessGroup { reason }) => Err(InitError::NoNamespace {
            reason: reason.clone(),
        }),
        _ => Ok(current),
    }
}

/// What applies (sets containment up with [`Setting::Auto`] if nobody did).
pub fn current() -> &'static Containment {
    CURRENT.get_or_init(|| decide(Setting::Auto))
}

fn decide(setting: Setting) -> Containment {
    if setting == Setting::ProcessGroup {
        return Containment::ProcessGroup {
            reason: "shell.containment = \"process-group\"".to_owned(),
        };
    }
    #[cfg(target_os = "linux")]
    {
        match linux::start() {
            Ok(user) => Containment::Namespace { user },
            // Only the text is kept: it already includes each cause's own words.
            Err(e) => Containment::ProcessGroup {
                reason: e.to_string(),
            },
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        Containment::ProcessGroup {
            reason: "PID namespaces exist only on Linux".to_owned(),
        }
    }
}

/// Prepares `cmd` to run contained: its own process group, killed when toolgate dies, and
/// inside the namespace when there is one. Spawn it from a thread that lives as long as
/// toolgate (an async task on a runtime worker, never a `spawn_blocking` thread): the
/// parent-death signal follows the thread that forks.
pub fn contain(cmd: &mut tokio::process::Command) {
    cmd.process_group(0);
    // Joining the namespace moves the working directory to its root, so the relay changes
    // to it again: as an absolute path (a relative `cwd` meant toolgate's own directory).
    let here = std::env::current_dir().ok();
    let cwd = match (cmd.as_std().get_current_dir(), &here) {
        (Some(dir), Some(here)) => Some(here.join(dir)),
        (Some(dir), None) => Some(dir.to_path_buf()),
        (None, here) => here.clone(),
    }
    .and_then(|dir| CString::new(dir.into_os_string().into_encoded_bytes()).ok());
    #[cfg(target_os = "linux")]
    linux::prepare(cmd, current(), cwd);
    #[cfg(not(target_os = "linux"))]
    let _ = cwd;
}

/// Spawns `cmd` the one way toolgate starts a process through a `Command` (a mounted
/// stdio server; a `run_shell` command where [`launch`] is not available): killed when
/// dropped, contained like [`contain`], then armed for `sandbox` like [`Sandbox::apply`]
/// (in that order: the sandbox is entered by the process the relay of [`contain`] forks),
/// with stdout and stderr piped; stdin and everything else stay as `cmd` sets them. Returns
/// the child, its pipes in it, and the group it leads (`None` only when it was reaped
/// before its pid was read). The same thread rule as [`contain`] applies.
pub fn spawn(
    cmd: &mut tokio::process::Command,
    sandbox: &Sandbox,
) -> Result<(tokio::process::Child, Option<ProcessGroup>), LaunchError> {
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    contain(cmd);
    sandbox.apply(cmd)?;
    let child = cmd.spawn()?;
    let group = ProcessGroup::of(&child);
    Ok((child, group))
}

/// Starts `program` (an absolute path) as `argv` (`argv[0]` is what it sees as `$0`) in
/// `cwd`, contained like [`contain`] and sandboxed like [`Sandbox::apply`] (toolgate's
/// environment but what the sandbox withholds), without copying toolgate's memory
/// (`posix_spawn`-style: see `linux/launch.rs`; inside the PID namespace through its
/// spawner, `linux/spawner.rs`): stdin `/dev/null`, stdout and stderr pipes (their read
/// ends are returned). `None` where this start is not available (off x86_64 Linux, before
/// Linux 5.3, inside the namespace before 5.9, a sandbox with more than 64 writable folders
/// inside the namespace): then use [`contain`] and a `Command`. Call it from a thread that
/// lives as long as toolgate (an async task on a runtime worker), within a Tokio runtime.
#[allow(clippy::type_complexity)]
pub fn launch(
    program: &std::path::Path,
    argv: &[&std::ffi::OsStr],
    cwd: &std::path::Path,
    sandbox: &Sandbox,
) -> Option<Result<(Started, std::os::fd::OwnedFd, std::os::fd::OwnedFd), LaunchError>> {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        // Inside the namespace through its spawner, which takes the sandbox along in its
        // request; with process groups straight from toolgate.
        let namespace = matches!(current(), Containment::Namespace { .. });
        let available = match namespace {
            true => linux::spawner::available(),
            false => linux::started::available(),
        };
        if !available {
            return None;
        }
        let armed = match armed(sandbox, cwd) {
            Ok(armed) => armed,
            Err(e) => return Some(Err(e)),
        };
        let env = sandbox.environment();
        let started = match namespace {
            // A sandbox with more writable folders than the spawner takes keeps the relay.
            true if armed.as_ref().is_some_and(|a| !a.fits_the_spawner()) => return None,
            true => linux::spawner::spawn(program, argv, cwd, &env, armed.as_ref()),
            false => linux::launch::launch(program, argv, cwd, &env, armed),
        };
        Some(started.map_err(LaunchError::Start))
    }
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
    {
        let _ = (program, argv, cwd, sandbox);
        None
    }
}

/// The sandbox ready to enter for a command in `cwd`, `None` when it is off.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn armed(sandbox: &Sandbox, cwd: &std::path::Path) -> Result<Option<sandbox::Armed>, LaunchError> {
    if sandbox.is_off() {
        return Ok(None);
    }
    sandbox
        .check()
        .and_then(|()| sandbox.armed(Some(cwd)))
        .map(Some)
        .map_err(LaunchError::Sandbox)
}

/// Why [`launch`] or [`spawn`] did not start the command.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The sandbox cannot be entered here.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// The start itself failed (the errno of the failing step).
    #[error(transparent)]
    Start(#[from] std::io::Error),
}

/// Stands in for the started command where [`launch`] is not available (it always returns
/// `None` there, so no value exists).
#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
#[derive(Debug)]
pub struct Started(std::convert::Infallible);

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
impl Started {
    /// The leader's pid.
    pub fn id(&self) -> i32 {
        match self.0 {}
    }

    /// Waits for the leader to exit.
    pub async fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        match self.0 {}
    }
}

/// The pid a contained command's shell has *inside* the namespace, as `$$` shows it there,
/// given the process-group leader toolgate spawned. Outside a namespace it is the leader
/// itself. Models see this pid, so `kill PID` in a later command reaches the right process.
pub fn visible_pid(leader: i32) -> i32 {
    #[cfg(target_os = "linux")]
    if matches!(current(), Containment::Namespace { .. })
        && let Some(inner) = linux::inner_pid_of_command(leader)
    {
        return inner;
    }
    leader
}

/// The namespace's identity (the inode of its PID namespace), for tools that map inner
/// pids back to host pids; `None` outside a namespace.
pub fn namespace_id() -> Option<u64> {
    #[cfg(target_os = "linux")]
    if matches!(current(), Containment::Namespace { .. }) {
        return linux::namespace_id();
    }
    None
}

/// The host pid of `inner`, a pid as seen inside the namespace (what `$$` and `$!` print
/// in a contained command). Without a namespace, `inner` is already a host pid.
pub fn host_pid(inner: i32) -> Option<i32> {
    #[cfg(target_os = "linux")]
    if matches!(current(), Containment::Namespace { .. }) {
        return linux::host_pid(inner);
    }
    Some(inner)
}
