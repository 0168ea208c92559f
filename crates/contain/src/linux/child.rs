//! What a child calls between its `fork` or `clone` and its `exec` or exit: signal
//! dispositions and masks, closing descriptors, the child's errno. toolgate is
//! multi-threaded, so such a child takes no lock and allocates nothing: every call here is
//! async-signal-safe.

use std::io;

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
pub(crate) fn errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// Sets the action of `signal` to `action` (`SIG_DFL` or `SIG_IGN`, never a handler).
fn set_action(signal: libc::c_int, action: libc::sighandler_t) {
    // SAFETY: a default or ignore action runs no code of ours; `signal` comes from
    // RESETTABLE, so the call cannot fail.
    unsafe { libc::signal(signal, action) };
}

/// Sets the calling thread's signal mask to every signal (`true`) or none.
pub(super) fn block_signals(all: bool) {
    // SAFETY: a set on this stack, filled or emptied before use.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        match all {
            true => libc::sigfillset(&mut set),
            false => libc::sigemptyset(&mut set),
        };
        // Cannot fail with a valid `how` and set: it returns an error number, never errno.
        libc::pthread_sigmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
    }
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
