//! The per-command supervisor: nothing a command starts outlives it.
//!
//! Inside the namespace each command has a *supervisor* (the relay's child, or the
//! spawner's), a child subreaper (`PR_SET_CHILD_SUBREAPER`) that starts the command. When
//! a process of the command dies, its orphans are given to the nearest subreaper among
//! their ancestors *in the same PID namespace*, so they come to the supervisor (toolgate's
//! namespace init would otherwise adopt them), `setsid` and double forks included. The supervisor leaves the command's
//! process group at once, so a signal toolgate sends to the group never reaches it.
//!
//! When the command (the shell) exits, the supervisor SIGKILLs every child it has that
//! left the command's process group — `setsid`, `set -m` or `setpgid` ones — and reaps
//! them, round after round until none is left (their own orphans come to it as each
//! dies), and only then hands the status to the relay, which exits with it. Processes
//! still in the group are left to toolgate, which stops them as before (SIGTERM, the grace,
//! SIGKILL) and says how many there were. The supervisor stays until it has no child left,
//! killing every process that leaves the group in the meantime (checked as children die
//! and every 50 ms), then exits: when toolgate reports the command done, nothing it
//! started is left.
//!
//! The command's group is the relay's, outside the namespace, so from inside its id reads
//! as 0 (`getpgid`, `/proc/PID/stat`): any other group id means the process left it.
//!
//! Everything here runs in a forked child of a multi-threaded process: system calls on
//! stack buffers, no allocation, no locks.

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};

use rustix::fs::{Mode, OFlags, RawDir, openat};
use rustix::process::Signal;
use rustix::process::{Pid, WaitOptions, getpid, kill_process, set_child_subreaper, wait, waitpid};

use super::child::{die_with_parent, exit, keep_only, reset_signals, set_mask, signal_set};

/// Pids killed in one round and then waited for; more are handled in the next round.
const ROUND: usize = 64;
/// How often the supervisor looks for processes that left the group after the command.
const LOOK_AGAIN_NS: libc::c_long = 50_000_000;

/// In the relay's child (inside the namespace): becomes the supervisor and forks the
/// command. Returns `Ok` in the command only; the supervisor itself never returns.
/// `status` is the pipe to the relay.
pub(super) fn supervise(status: OwnedFd) -> io::Result<()> {
    let me = getpid();
    set_child_subreaper(Some(me))?;
    // SAFETY: a fork of this single-threaded child; both sides go on with async-signal-safe
    // calls only.
    match unsafe { libc::fork() } {
        0 => {
            drop(status);
            reset_signals();
            die_with_parent(me)
        }
        // SAFETY: the supervisor is this process alone from here.
        command if command > 0 => unsafe { supervisor_main(command, status) },
        _ => Err(io::Error::last_os_error()),
    }
}

/// The supervisor once the command is started: waits for the command, kills what escaped
/// its group, reports the status on `status`, lingers until its last child is gone,
/// exits.
///
/// # Safety
/// Only in a supervisor, the single-threaded parent of `command`: it closes every
/// descriptor but `status`, which no code of its own uses afterwards.
pub(super) unsafe fn supervisor_main(command: libc::pid_t, status: OwnedFd) -> ! {
    // SIGCHLD alone stays blocked: it is waited for with a timeout below. A valid set
    // cannot be refused.
    let chld = signal_set(Some(&[libc::SIGCHLD]));
    let _ = set_mask(libc::SIG_SETMASK, &chld);
    // Out of the command's group before toolgate can signal it (spawn returns only once
    // every copy of the exec-error pipe is closed, ours below included). Should it fail,
    // the supervisor ignores the group's catchable signals, and a SIGKILL to the group
    // ends the command anyway.
    let _ = rustix::process::setpgid(None, None);
    // A name for `ps` only: nothing depends on it.
    let _ = rustix::thread::set_name(c"toolgate-reaper");
    // SAFETY: the caller's contract.
    let status = unsafe { keep_only(status) };
    let code = wait_command(command);
    // Most commands leave nothing behind: no child at all means nothing to look for.
    if has_children() {
        while kill_escaped(true) > 0 {}
    }
    // A report that cannot be written leaves the relay at the pipe's end: it then exits
    // as if the command was killed.
    let _ = rustix::io::write(&status, &code.to_le_bytes());
    drop(status);
    linger(&chld);
    exit(0)
}

/// Waits for the command, reaping adopted orphans meanwhile; its wait status.
fn wait_command(command: libc::pid_t) -> libc::c_int {
    loop {
        match wait(WaitOptions::empty()) {
            Ok(Some((pid, status))) if pid.as_raw_pid() == command => return status.as_raw(),
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            // No child at all: the command is gone without a status.
            Err(_) => return libc::SIGKILL,
        }
    }
}

/// Whether any child is left (reaping those already dead).
fn has_children() -> bool {
    loop {
        match wait(WaitOptions::NOHANG) {
            Ok(Some(_)) | Err(rustix::io::Errno::INTR) => {}
            Ok(None) => return true,
            Err(_) => return false,
        }
    }
}

/// Reaps children until none is left, killing those that leave the group; then returns.
fn linger(chld: &libc::sigset_t) {
    let pause = libc::timespec {
        tv_sec: 0,
        tv_nsec: LOOK_AGAIN_NS,
    };
    loop {
        loop {
            match wait(WaitOptions::NOHANG) {
                Ok(Some(_)) | Err(rustix::io::Errno::INTR) => {}
                Ok(None) => break,
                Err(_) => return,
            }
        }
        kill_escaped(false);
        // Woken by a child's end or the timeout alike: either way, look again.
        // SAFETY: a valid set and timeout on this stack; the siginfo is not wanted.
        unsafe { libc::sigtimedwait(chld, std::ptr::null_mut(), &pause) };
    }
}

/// SIGKILLs every child that left the command's group; with `wait`, also reaps the ones
/// killed. Returns how many were killed.
fn kill_escaped(wait: bool) -> usize {
    let mut killed = [None::<Pid>; ROUND];
    let mut count = 0;
    let me = getpid().as_raw_pid();
    for_each_process(|pid, parent, group| {
        if parent == me
            && group != 0
            && let Some(pid) = Pid::from_raw(pid)
        {
            // Gone already if this fails: nothing left to kill.
            let _ = kill_process(pid, Signal::KILL);
            if count < ROUND {
                killed[count] = Some(pid);
            }
            count += 1;
        }
    });
    if wait {
        for pid in killed.into_iter().flatten() {
            while matches!(
                waitpid(Some(pid), WaitOptions::empty()),
                Err(rustix::io::Errno::INTR)
            ) {}
        }
    }
    count
}

/// Calls `f(pid, parent, group)` for every process this namespace's `/proc` lists.
fn for_each_process(mut f: impl FnMut(libc::pid_t, libc::pid_t, libc::pid_t)) {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let Ok(dir) = rustix::fs::open(c"/proc", flags, Mode::empty()) else {
        return;
    };
    let mut buf = [MaybeUninit::<u8>::uninit(); 4096];
    let mut entries = RawDir::new(dir.as_fd(), &mut buf);
    while let Some(Ok(entry)) = entries.next() {
        let name = entry.file_name();
        if let Some(pid) = number(name.to_bytes())
            && let Some((parent, group)) = parent_and_group(&dir, name)
        {
            f(pid, parent, group);
        }
    }
}

/// Parent and process group of `/proc/NAME/stat`, opened beneath `dir`.
fn parent_and_group(dir: &OwnedFd, name: &std::ffi::CStr) -> Option<(libc::pid_t, libc::pid_t)> {
    let mut path = [0u8; 32];
    let name = name.to_bytes();
    let suffix = b"/stat\0";
    let end = name.len() + suffix.len();
    path.get_mut(..name.len())?.copy_from_slice(name);
    path.get_mut(name.len()..end)?.copy_from_slice(suffix);
    let path = std::ffi::CStr::from_bytes_with_nul(&path[..end]).ok()?;
    let fd = openat(dir, path, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()).ok()?;
    let mut stat = [0u8; 512];
    let n = rustix::io::read(&fd, &mut stat).ok()?;
    let stat = &stat[..n];
    // The name in parentheses may hold anything; only numbers follow the last `)`.
    let close = stat.iter().rposition(|&b| b == b')')?;
    let mut fields = stat[close + 1..]
        .split(|&b| b == b' ')
        .filter(|f| !f.is_empty());
    let _state = fields.next()?;
    let parent = number(fields.next()?)?;
    let group = number(fields.next()?)?;
    Some((parent, group))
}

/// A decimal pid.
fn number(digits: &[u8]) -> Option<libc::pid_t> {
    if digits.is_empty() || digits.len() > 10 {
        return None;
    }
    let mut value: libc::pid_t = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        value = value
            .checked_mul(10)?
            .checked_add(libc::pid_t::from(d - b'0'))?;
    }
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pids_are_plain_decimal_numbers() {
        assert_eq!(number(b"4242"), Some(4242));
        assert_eq!(number(b"0"), Some(0));
        assert_eq!(number(b"self"), None);
        assert_eq!(number(b""), None);
        assert_eq!(number(b"99999999999"), None);
    }

    #[test]
    fn this_process_is_found_with_its_parent_and_group() {
        let me = std::process::id() as libc::pid_t;
        let parent = rustix::process::getppid().map(Pid::as_raw_pid);
        let group = rustix::process::getpgrp().as_raw_pid();
        let mut found = None;
        for_each_process(|pid, p, g| {
            if pid == me {
                found = Some((p, g));
            }
        });
        assert_eq!(found, Some((parent.unwrap_or(0), group)));
    }
}
