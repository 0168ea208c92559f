//! The relay: a process outside the namespace that leads the command's process group, is
//! a child of toolgate (which waits for it and signals its group), waits for the
//! command's status on a pipe from the supervisor and exits with it, re-raising its
//! signal (see the crate docs). Two kinds:
//! - [`relay`]: a `fork` of toolgate that joins the namespace and forks the supervisor
//!   (mounted servers, `contain` and a `Command`);
//! - [`relay_main`]: started in toolgate's memory (`clone::beside`) for the spawner, whose
//!   supervisor is born in the relay's group. It runs beside toolgate's threads and shares
//!   the starting thread's `errno`, so it makes rustix calls only, and libc calls only
//!   where they cannot fail.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};

use rustix::process::{Pid, getpid, setpgid};
use rustix::thread::{LinkNameSpaceType, move_into_link_name_space};

use super::child::{block_signals, close_from, die_with_parent, exit, ignore_signals};
use super::supervisor;

/// The namespace's descriptors a relay joins.
#[derive(Clone, Copy)]
pub(super) struct Joined<'a> {
    pub(super) user: Option<BorrowedFd<'a>>,
    pub(super) mnt: BorrowedFd<'a>,
    pub(super) pid: BorrowedFd<'a>,
}

/// In the forked child of `contain`'s `Command`: joins the namespace, forks the
/// supervisor inside it (which forks the command, which returns to exec), and stays
/// behind as the relay, exiting with the command's status once the supervisor reports it.
/// Returns in the command only.
pub(super) fn relay(parent: Pid, ns: Joined<'_>, cwd: Option<&CStr>) -> io::Result<()> {
    die_with_parent(parent)?;
    if let Some(user) = ns.user {
        move_into_link_name_space(user, Some(LinkNameSpaceType::User))?;
    }
    move_into_link_name_space(ns.mnt, Some(LinkNameSpaceType::Mount))?;
    move_into_link_name_space(ns.pid, Some(LinkNameSpaceType::ProcessID))?;
    // Joining a mount namespace moves the working directory to its root.
    if let Some(cwd) = cwd {
        rustix::process::chdir(cwd)?;
    }
    ignore_signals();
    let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    // Every signal stays blocked in the relay from here (they were ignored already); the
    // supervisor sets its own mask.
    block_signals(true);
    // SAFETY: a fork of this single-threaded child; the supervisor (the child) goes on with
    // async-signal-safe calls only.
    let supervisor = unsafe { libc::fork() };
    match supervisor {
        0 => {
            drop(read);
            supervisor::supervise(write)
        }
        // SAFETY: the relay is this process alone from here: its descriptors are its own.
        pid if pid > 0 => unsafe { relay_exit(read.as_raw_fd()) },
        _ => Err(io::Error::last_os_error()),
    }
}

/// The relay started in toolgate's memory for the spawner (`clone::beside`): dies with
/// the starting thread, leads its own group, and waits on `read` in [`relay_exit`].
pub(super) fn relay_main(read: RawFd, parent: Pid) -> i32 {
    if die_with_parent(parent).is_err() || setpgid(None, None).is_err() {
        return 127;
    }
    // SAFETY: a process of its own (no CLONE_FILES): its descriptor table is its own, and
    // none of toolgate's code runs in it.
    unsafe { relay_exit(read) }
}

/// The relay's last part: closes everything but `read`, the report's pipe, waits for the
/// report and exits with the command's status (re-raising its signal). rustix calls, and
/// libc calls that cannot fail: the relay may share toolgate's memory and `errno`.
///
/// # Safety
/// Only in a relay: a process whose descriptors are its own to close and in which no
/// other code of ours runs; `close_from` cannot fail here (`close_range_available`).
unsafe fn relay_exit(read: RawFd) -> ! {
    // A name for `ps` only: nothing depends on it.
    let _ = rustix::thread::set_name(c"toolgate-relay");
    // SAFETY: `read` is open in this process until the close below.
    let read = unsafe { BorrowedFd::borrow_raw(read) };
    // The pipe's read end is never descriptor 0 (stdin is open there).
    let moved = rustix::stdio::dup2_stdin(read).is_ok();
    // SAFETY: the caller's contract.
    unsafe { close_from(1) };
    let mut bytes = [0u8; 4];
    let mut got = 0;
    while moved && got < bytes.len() {
        match rustix::io::read(rustix::stdio::stdin(), &mut bytes[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => break,
        }
    }
    // No report: the supervisor was killed, and the command with it.
    let status = match got == bytes.len() {
        true => i32::from_le_bytes(bytes),
        false => libc::SIGKILL,
    };
    if libc::WIFEXITED(status) {
        exit(libc::WEXITSTATUS(status))
    }
    let signal = libc::WTERMSIG(status);
    reraise(signal);
    exit(128 + signal)
}

/// Dies of `signal` (without a core dump: the command made one if any): its default
/// action back, that signal alone unblocked (any other still pending must not reach a
/// handler of toolgate's, whose memory the relay may share), the signal sent to ourselves.
/// rustix has no call for signal actions and masks, so these are libc's `syscall`, with
/// arguments for which the kernel cannot fail (and glibc writes no errno). Returns only
/// when the signal could not be made to kill us: the caller then exits with 128 + signal.
fn reraise(signal: i32) {
    if !(1..=64).contains(&signal) || signal == libc::SIGSTOP {
        return;
    }
    let none = rustix::process::Rlimit {
        current: Some(0),
        maximum: Some(0),
    };
    // Should it fail, a core file of the relay is all that is at stake.
    let _ = rustix::process::setrlimit(rustix::process::Resource::Core, none);
    // The kernel's sigaction, all zero: SIG_DFL, no flags, an empty mask.
    let default = [0usize; 4];
    let only = 1u64 << (signal - 1);
    // SAFETY: a valid signal other than SIGKILL and SIGSTOP with an action, a mask and
    // their kernel size (8) on this stack; then a signal to ourselves.
    unsafe {
        if signal != libc::SIGKILL
            && libc::syscall(libc::SYS_rt_sigaction, signal, default.as_ptr(), 0, 8) != 0
        {
            return;
        }
        if libc::syscall(libc::SYS_rt_sigprocmask, libc::SIG_UNBLOCK, &only, 0, 8) == 0 {
            libc::syscall(libc::SYS_kill, getpid().as_raw_nonzero().get(), signal);
        }
    }
}
