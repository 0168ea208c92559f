//! A started leader (the shell under process groups, the relay inside the namespace) as
//! toolgate holds it until it is reaped, and what both ways of starting one share: pipes,
//! the supervisor each relay stands for.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::{Mutex, OnceLock};

use rustix::io::Errno;
use rustix::process::Signal;
use rustix::process::{
    Pid, PidfdFlags, WaitId, WaitIdOptions, WaitOptions, pidfd_open, pidfd_send_signal, waitid,
    waitpid,
};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

use super::clone::Stack;

/// Whether this kernel has what [`launch`](super::launch::launch) needs (pidfds, Linux
/// 5.3), checked once.
pub(crate) fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| pidfd_open(rustix::process::getpid(), PidfdFlags::empty()).is_ok())
}

/// A command started by [`launch`](crate::launch): the leader of its own process group (the
/// shell itself, or inside the PID namespace the relay), a child of toolgate, waited for
/// through a pidfd. Dropping it before its exit SIGKILLs the leader (the group is
/// [`ProcessGroup`](crate::ProcessGroup)'s to stop) and reaps it later.
#[derive(Debug)]
pub struct Started {
    pid: i32,
    pidfd: AsyncFd<OwnedFd>,
    status: Option<ExitStatus>,
    /// The stack of a leader that runs in toolgate's memory until it exits (the
    /// namespace's relay, see `spawner`): unmapped once the leader is reaped.
    stack: Option<Stack>,
}

impl Started {
    /// The leader's pid (the group id).
    pub fn id(&self) -> i32 {
        self.pid
    }

    /// Waits for the leader to exit and reaps it; cancel-safe, and the status is kept for
    /// later calls.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        loop {
            if let Some(status) = self.status {
                return Ok(status);
            }
            let mut ready = self.pidfd.readable().await?;
            match reap(self.pidfd.get_ref())? {
                Some(status) => {
                    self.status = Some(status);
                    self.reaped();
                }
                None => ready.clear_ready(),
            }
        }
    }

    /// A leader started elsewhere in this module tree, waited for through `pidfd`. If it
    /// cannot be watched, it is killed and reaped before its stack is unmapped.
    pub(super) fn new(pid: i32, pidfd: OwnedFd, stack: Option<Stack>) -> io::Result<Self> {
        // SAFETY: the `AsyncFd` owns the descriptor and keeps it open as long as it lives.
        let pidfd = match unsafe { AsyncFd::register_with_interest(pidfd, Interest::READABLE) } {
            Ok(pidfd) => pidfd,
            Err(e) => {
                stop(pid);
                drop(stack);
                return Err(e.into());
            }
        };
        Ok(Self {
            pid,
            pidfd,
            status: None,
            stack,
        })
    }

    /// The leader is reaped: its stack is free and its supervisor forgotten.
    fn reaped(&mut self) {
        if self.stack.take().is_some() {
            forget(self.pid);
        }
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        if self.status.is_some() {
            return;
        }
        // Not reaped yet, so the pidfd still names our child: gone already if this fails.
        let _ = pidfd_send_signal(self.pidfd.get_ref(), Signal::KILL);
        if let Ok(Some(_)) = reap(self.pidfd.get_ref()) {
            self.reaped();
            return;
        }
        // Not gone yet: reaped by a later start (its stack stays mapped until then).
        let Ok(pidfd) = self.pidfd.get_ref().try_clone() else {
            // Without a descriptor to reap it by, the stack must stay mapped for good.
            std::mem::forget(self.stack.take());
            return;
        };
        if self.stack.is_some() {
            forget(self.pid);
        }
        match ORPHANS.lock() {
            Ok(mut orphans) => orphans.push((pidfd, self.stack.take())),
            Err(_) => std::mem::forget(self.stack.take()),
        }
    }
}

/// Pidfds of children dropped before they were reaped, with the stack a relay runs on.
static ORPHANS: Mutex<Vec<(OwnedFd, Option<Stack>)>> = Mutex::new(Vec::new());

/// Reaps the children dropped before they exited (their stacks are unmapped with them).
pub(super) fn reap_orphans() {
    if let Ok(mut orphans) = ORPHANS.lock() {
        orphans.retain_mut(|(fd, stack)| match reap(fd) {
            Ok(Some(_)) => false,
            Ok(None) => true,
            Err(e) => {
                // Not ours to wait for any more: its stack is unmapped only if it is gone.
                if e.raw_os_error() != Some(libc::ECHILD) {
                    std::mem::forget(stack.take());
                }
                false
            }
        });
    }
}

/// Reaps the child behind `pidfd` if it has exited.
fn reap(pidfd: &OwnedFd) -> io::Result<Option<ExitStatus>> {
    let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG;
    let status = loop {
        match waitid(WaitId::PidFd(pidfd.as_fd()), options) {
            Err(Errno::INTR) => {}
            Ok(None) => return Ok(None),
            Ok(Some(status)) => break status,
            Err(e) => return Err(e.into()),
        }
    };
    let raw = match (status.exit_status(), status.terminating_signal()) {
        (Some(code), _) => (code & 0xff) << 8,
        (None, Some(signal)) if status.dumped() => (signal & 0x7f) | 0x80,
        (None, Some(signal)) => signal & 0x7f,
        (None, None) => libc::SIGKILL,
    };
    Ok(Some(ExitStatus::from_raw(raw)))
}

/// Kills and reaps our child `pid`, not waited for by anyone else (a failed start).
pub(super) fn stop(pid: i32) {
    let Some(pid) = Pid::from_raw(pid) else {
        return;
    };
    // Ours and not reaped, so it cannot name another process: gone already if this fails.
    let _ = rustix::process::kill_process(pid, Signal::KILL);
    while let Err(Errno::INTR) = waitpid(Some(pid), WaitOptions::empty()) {}
}

/// A pipe, both ends close-on-exec and at descriptor 3 or higher.
pub(super) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    Ok((high(read)?, high(write)?))
}

/// `fd` moved to 3 or higher: the child's `dup2` onto 0–2 must not meet its own sources.
pub(super) fn high(fd: OwnedFd) -> io::Result<OwnedFd> {
    use std::os::fd::AsRawFd;
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    Ok(rustix::io::fcntl_dupfd_cloexec(&fd, 3)?)
}

/// Host pids of the supervisors of commands started here, by their relay's pid: the
/// relay has no child to find it by (`visible_pid`).
static SUPERVISORS: Mutex<Vec<(i32, i32)>> = Mutex::new(Vec::new());

/// The supervisor of the command whose relay is `relay`.
pub(super) fn supervisor_of(relay: i32) -> Option<i32> {
    let supervisors = SUPERVISORS.lock().ok()?;
    supervisors
        .iter()
        .find(|(r, _)| *r == relay)
        .map(|(_, supervisor)| *supervisor)
}

/// Remembers `supervisor` as the supervisor of the command whose relay is `relay`.
pub(super) fn remember(relay: i32, supervisor: i32) {
    if let Ok(mut supervisors) = SUPERVISORS.lock() {
        supervisors.push((relay, supervisor));
    }
}

/// Forgets the relay `relay` once it is reaped.
fn forget(relay: i32) {
    if let Ok(mut supervisors) = SUPERVISORS.lock() {
        supervisors.retain(|(r, _)| *r != relay);
    }
}
