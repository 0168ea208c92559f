//! A started leader (the shell under process groups, the relay inside the namespace) as
//! toolgate holds it until it is reaped, and what both ways of starting one share: pipes,
//! stacks, the supervisor each relay stands for.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::{Mutex, OnceLock};

use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

use super::errno;
use super::split::{STACK_MAPPING, map_stack};

/// Whether this kernel has what [`launch`](super::launch::launch) needs (pidfds, Linux 5.3), checked once.
pub(crate) fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        // SAFETY: getpid has no preconditions; a pidfd of ourselves is closed at once.
        unsafe {
            let fd = libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0);
            if fd < 0 {
                return false;
            }
            libc::close(fd as libc::c_int);
        }
        true
    })
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
}

impl Started {
    /// A leader started elsewhere in this module tree, waited for through `pidfd`. If it
    /// cannot be watched, it is killed and reaped before its stack is unmapped.
    pub(super) fn new(pid: i32, pidfd: OwnedFd, stack: Option<Stack>) -> io::Result<Self> {
        // SAFETY: the `AsyncFd` owns the descriptor and keeps it open as long as it lives.
        let pidfd = match unsafe { AsyncFd::register_with_interest(pidfd, Interest::READABLE) } {
            Ok(pidfd) => pidfd,
            Err(e) => {
                // SAFETY: kill and reap our own child.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                wait_blocking(pid);
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
        let fd = self.pidfd.get_ref().as_raw_fd();
        // SAFETY: pidfd_send_signal on our own pidfd.
        unsafe {
            libc::syscall(libc::SYS_pidfd_send_signal, fd, libc::SIGKILL, 0, 0);
        }
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
        if let Ok(mut orphans) = ORPHANS.lock() {
            orphans.push((pidfd, self.stack.take()));
        } else {
            std::mem::forget(self.stack.take());
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
    // SAFETY: waitid on our own pidfd into a zeroed siginfo.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        loop {
            let r = libc::waitid(
                libc::P_PIDFD,
                pidfd.as_raw_fd() as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG,
            );
            if r == 0 {
                break;
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        if info.si_pid() == 0 {
            return Ok(None);
        }
        let status = info.si_status();
        let raw = match info.si_code {
            libc::CLD_EXITED => (status & 0xff) << 8,
            libc::CLD_DUMPED => (status & 0x7f) | 0x80,
            _ => status & 0x7f,
        };
        Ok(Some(ExitStatus::from_raw(raw)))
    }
}

/// Reaps a child known to have exited (a failed start).
pub(super) fn wait_blocking(pid: i32) {
    let mut status = 0;
    // SAFETY: waitpid for our own child.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 && errno() == libc::EINTR {}
}

/// A pipe, both ends close-on-exec and at descriptor 3 or higher.
pub(super) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 into a local array; the descriptors are ours.
    unsafe {
        if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((
            high(OwnedFd::from_raw_fd(fds[0]))?,
            high(OwnedFd::from_raw_fd(fds[1]))?,
        ))
    }
}

/// `fd` moved to 3 or higher: the child's `dup2` onto 0–2 must not meet its own sources.
pub(super) fn high(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    // SAFETY: F_DUPFD_CLOEXEC of a descriptor we own; the new one is ours.
    unsafe {
        let new = libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3);
        if new < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(OwnedFd::from_raw_fd(new))
    }
}

/// The child's stack ([`map_stack`]), unmapped when dropped.
#[derive(Debug)]
pub(super) struct Stack(*mut libc::c_void);

// SAFETY: a plain mapping; only its owner unmaps it (after the child using it is done).
unsafe impl Send for Stack {}

impl Stack {
    pub(super) fn new() -> io::Result<Self> {
        map_stack().map(Self).map_err(io::Error::from_raw_os_error)
    }

    /// The top of the stack (16-byte aligned: the mapping is page-aligned).
    pub(super) fn top(&self) -> *mut u8 {
        // SAFETY: one past the end of the mapping.
        unsafe { self.0.cast::<u8>().add(STACK_MAPPING) }
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: our own mapping; the child that used it has exec'd or exited.
        unsafe { libc::munmap(self.0, STACK_MAPPING) };
    }
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
