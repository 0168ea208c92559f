//! The steps a command takes between its start and its `exec`, the same for both
//! `posix_spawn`-style starts (`launch` under process groups, the spawner's supervisor in
//! the namespace): signals back to their defaults, death with its parent, its standard
//! descriptors and folder, its own process group, the sandbox, `exec`. The child shares
//! its starter's memory while the starter sleeps, so it allocates nothing and takes no
//! lock; it may set `errno` (the sleeping starter's).

use std::ffi::CStr;
use std::os::fd::BorrowedFd;

use rustix::process::Pid;

use super::child::{RESETTABLE, block_signals, die_with_parent, errno, set_action};

/// Which signal actions the command gets back.
#[derive(Clone, Copy)]
pub(super) enum Signals {
    /// Every one of `RESETTABLE` to its default (the spawner ignores some, the command
    /// must not).
    Default,
    /// Handled ones to their default and SIGPIPE too; ignored ones stay ignored, as
    /// `std`'s `Command` leaves them (`nohup` works).
    KeepIgnored,
}

/// Whether the command leads a process group of its own.
#[derive(Clone, Copy)]
pub(super) enum Group {
    /// `setpgid(0, 0)`: the command is the group's leader (under process groups).
    Own,
    /// The group it was started in (the relay's, inside the namespace).
    Inherited,
}

/// What a command needs until its `exec`, all of it built before the start.
pub(super) struct Exec<'a> {
    pub(super) program: &'a CStr,
    /// NULL-terminated arrays of NUL-terminated strings.
    pub(super) argv: *const *const libc::c_char,
    pub(super) envp: *const *const libc::c_char,
    pub(super) cwd: &'a CStr,
    /// Its stdin, stdout and stderr (all 3 or higher: `dup2` onto 0–2 must not meet its
    /// own sources).
    pub(super) stdio: [BorrowedFd<'a>; 3],
    /// The starter: the command refuses to run if it already has another parent.
    pub(super) parent: Pid,
    pub(super) signals: Signals,
    pub(super) group: Group,
}

impl Exec<'_> {
    /// In the child: the steps, then `exec`, with every signal blocked until just before
    /// it. `sandbox` enters the sandbox (after every other step: it may forbid them).
    /// Returns only when a step failed, with its errno.
    ///
    /// # Safety
    /// In a child started by `clone::until_exec` or `fork`; `argv` and `envp` are valid
    /// NULL-terminated arrays that outlive the call.
    pub(super) unsafe fn run(&self, sandbox: impl FnOnce() -> Result<(), i32>) -> i32 {
        reset(self.signals);
        let steps = || -> Result<(), i32> {
            let code = |e: std::io::Error| e.raw_os_error().unwrap_or(libc::EIO);
            die_with_parent(self.parent).map_err(code)?;
            let [stdin, stdout, stderr] = self.stdio;
            rustix::stdio::dup2_stdin(stdin).map_err(|e| e.raw_os_error())?;
            rustix::stdio::dup2_stdout(stdout).map_err(|e| e.raw_os_error())?;
            rustix::stdio::dup2_stderr(stderr).map_err(|e| e.raw_os_error())?;
            rustix::process::chdir(self.cwd).map_err(|e| e.raw_os_error())?;
            if let Group::Own = self.group {
                rustix::process::setpgid(None, None).map_err(|e| e.raw_os_error())?;
            }
            sandbox()
        };
        if let Err(errno) = steps() {
            return errno;
        }
        block_signals(false);
        // SAFETY: the caller's contract; execve returns only when it failed.
        unsafe { libc::execve(self.program.as_ptr(), self.argv, self.envp) };
        errno()
    }
}

/// Puts signal actions back as `signals` says (every signal is still blocked).
fn reset(signals: Signals) {
    for signal in RESETTABLE {
        let reset = match signals {
            Signals::Default => true,
            Signals::KeepIgnored => signal == libc::SIGPIPE || handled(signal),
        };
        if reset {
            set_action(signal, libc::SIG_DFL);
        }
    }
}

/// Whether `signal` has a handler (neither its default action nor ignored).
fn handled(signal: libc::c_int) -> bool {
    // SAFETY: a query into a zeroed sigaction on this stack.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction != libc::SIG_IGN
            && old.sa_sigaction != libc::SIG_DFL
    }
}
