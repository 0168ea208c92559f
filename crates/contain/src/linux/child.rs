//! What a child calls between its `fork` or `clone` and its `exec` or exit: signal
//! dispositions and masks, closing descriptors, the child's errno. toolgate is
//! multi-threaded, so such a child takes no lock and allocates nothing: every call here is
//! async-signal-safe.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

use rustix::process::Signal;
use rustix::process::{Pid, getppid, set_parent_process_death_signal};

/// Signals whose default action a child needs back (toolgate's runtime handles some of
/// them, and ignored signals stay ignored across exec).
pub(super) const RESETTABLE: [libc::c_int; 14] = [
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGPIPE,
    libc::SIGALRM,
    libc::SIGTSTP,
    libc::SIGTTIN,
    libc::SIGTTOU,
    libc::SIGCHLD,
    libc::SIGWINCH,
    libc::SIGURG,
];

/// The errno of the last failed libc call in this thread.
pub(super) fn errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// Ends the calling process at once with `code` (`_exit`): no destructors, no `atexit`
/// handlers, no flushing, since a child's memory is not its own to tidy.
pub(super) fn exit(code: i32) -> ! {
    // SAFETY: _exit makes the exit_group call and nothing else; no Rust value is left
    // behind in a state anyone could observe.
    unsafe { libc::_exit(code) }
}

/// Sets the action of `signal` to `action` (`SIG_DFL` or `SIG_IGN`, never a handler).
pub(super) fn set_action(signal: libc::c_int, action: libc::sighandler_t) {
    // SAFETY: a default or ignore action runs no code of ours; for a valid signal the call
    // cannot fail.
    unsafe { libc::signal(signal, action) };
}

/// A signal set: every signal (`None`), or the ones given.
pub(super) fn signal_set(only: Option<&[libc::c_int]>) -> libc::sigset_t {
    // SAFETY: a set on this stack, filled or emptied before use; adding a valid signal
    // cannot fail.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        match only {
            None => libc::sigfillset(&mut set),
            Some(_) => libc::sigemptyset(&mut set),
        };
        for &signal in only.unwrap_or_default() {
            libc::sigaddset(&mut set, signal);
        }
        set
    }
}

/// `pthread_sigmask(how, set)`: changes the calling thread's signal mask; the mask before.
/// Writes no `errno` (it returns the error number).
pub(super) fn set_mask(how: libc::c_int, set: &libc::sigset_t) -> io::Result<libc::sigset_t> {
    // SAFETY: a valid set, and room on this stack for the one before.
    unsafe {
        let mut old: libc::sigset_t = std::mem::zeroed();
        match libc::pthread_sigmask(how, set, &mut old) {
            0 => Ok(old),
            e => Err(io::Error::from_raw_os_error(e)),
        }
    }
}

/// Sets the calling thread's signal mask to every signal (`true`) or none. A valid set
/// cannot be refused.
pub(super) fn block_signals(all: bool) {
    let set = signal_set(if all { None } else { Some(&[]) });
    let _ = set_mask(libc::SIG_SETMASK, &set);
}

/// Runs `f` with every signal blocked in the calling thread, then puts its mask back.
pub(super) fn with_signals_blocked<T>(f: impl FnOnce() -> T) -> io::Result<T> {
    let old = set_mask(libc::SIG_SETMASK, &signal_set(None))?;
    let out = f();
    // The mask just taken off: a valid set, which cannot be refused.
    let _ = set_mask(libc::SIG_SETMASK, &old);
    Ok(out)
}

/// Puts every signal in [`RESETTABLE`] back to its default action and unblocks every
/// signal.
pub(super) fn reset_signals() {
    for signal in RESETTABLE {
        set_action(signal, libc::SIG_DFL);
    }
    block_signals(false);
}

/// Ignores every signal of [`RESETTABLE`] but SIGCHLD: the relay lets the command decide
/// about signals sent to the group, and the keeper lives until toolgate ends.
pub(super) fn ignore_signals() {
    for signal in RESETTABLE {
        if signal != libc::SIGCHLD {
            set_action(signal, libc::SIG_IGN);
        }
    }
}

/// Closes every descriptor from `first` up (`close_range`, Linux 5.9; a loop before).
///
/// # Safety
/// As [`close_range`].
pub(super) unsafe fn close_from(first: libc::c_uint) {
    // SAFETY: the caller's contract.
    unsafe { close_range(first, libc::c_uint::MAX) }
}

/// Closes the descriptors `first` to `last` (`close_range`, Linux 5.9; a loop over the
/// first 4096 before).
///
/// # Safety
/// The calling process owns its descriptor table (a forked child, or a clone without
/// `CLONE_FILES`), and none of its code uses a descriptor of the range afterwards. Where
/// `close_range` exists the call cannot fail and writes no `errno`.
pub(super) unsafe fn close_range(first: libc::c_uint, last: libc::c_uint) {
    // SAFETY: the caller's contract.
    let closed = unsafe { libc::syscall(libc::SYS_close_range, first, last, 0) };
    if closed != 0 {
        for fd in first..=last.min(4095) {
            // SAFETY: as above; rustix's close ignores errors and writes no errno.
            unsafe { rustix::io::close(fd as libc::c_int) };
        }
    }
}

/// Closes every descriptor but `fd`, which it returns.
///
/// # Safety
/// As [`close_range`].
pub(super) unsafe fn keep_only(fd: OwnedFd) -> OwnedFd {
    let at = fd.as_raw_fd() as libc::c_uint;
    // SAFETY: the caller's contract; `fd` itself stays open.
    unsafe {
        if at > 0 {
            close_range(0, at - 1);
        }
        close_range(at + 1, libc::c_uint::MAX);
    }
    fd
}

/// Whether this kernel has `close_range` (Linux 5.9), checked once: a relay that shares
/// toolgate's memory may only start where its [`close_from`] cannot fail.
pub(super) fn close_range_available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        // SAFETY: an empty range at the top of the table closes nothing.
        let r = unsafe {
            libc::syscall(
                libc::SYS_close_range,
                libc::c_uint::MAX,
                libc::c_uint::MAX,
                0,
            )
        };
        r == 0
    })
}

/// SIGKILL when the forking thread ends; refuses to run if it already has.
pub(super) fn die_with_parent(parent: Pid) -> io::Result<()> {
    set_parent_process_death_signal(Some(Signal::KILL))?;
    if getppid() != Some(parent) {
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    }
    Ok(())
}
