//! The per-command supervisor: nothing a command starts outlives it (issue 22, finding 7).
//!
//! Inside the namespace the relay's child is the *supervisor*, a child subreaper
//! (`PR_SET_CHILD_SUBREAPER`) that starts the command (in its own memory until the
//! command's `exec`, vfork-style, in the spawner's supervisors). When a process of the command dies,
//! its orphans are given to the nearest subreaper among their ancestors *in the same PID
//! namespace*, so they come to the supervisor (toolgate's namespace init would otherwise
//! adopt them), `setsid` and double forks included. The supervisor leaves the command's
//! process group at once, so a signal toolgate sends to the group never reaches it.
//!
//! When the command (the shell) exits, the supervisor SIGKILLs every child it has that
//! left the command's process group — `setsid`, `set -m` or `setpgid` ones — and reaps
//! them, round after round until none is left (their own orphans come to it as each
//! dies), and only then hands the status to the relay, which exits with it. Processes
//! still in the group are left to toolgate, which stops them as before (SIGTERM, the grace,
//! SIGKILL) and says how many there were. The supervisor stays until it has no child left,
//! killing every process that leaves the group in the meantime (checked as children die
//! and every 50 ms), then exits (after the relay, whose memory it shares, so that the
//! relay toolgate waits for does not tear it down): when toolgate reports the command
//! done, nothing it started is left.
//!
//! The command's group is the relay's, outside the namespace, so from inside its id reads
//! as 0 (`getpgid`, `/proc/PID/stat`): any other group id means the process left it.
//!
//! Everything here runs in a forked child of a multi-threaded process: raw system calls on
//! stack buffers, no allocation, no locks.

use std::io;

use super::{close_from, errno, name, reset_signals};

/// Pids killed in one round and then waited for; more are handled in the next round.
const ROUND: usize = 64;
/// How often the supervisor looks for processes that left the group after the command.
const LOOK_AGAIN_NS: libc::c_long = 50_000_000;

/// In the relay's child (inside the namespace): becomes the supervisor and forks the
/// command. Returns `Ok` in the command only; the supervisor itself never returns.
/// `status_fd` is the pipe to the relay.
pub(super) fn supervise(status_fd: libc::c_int) -> io::Result<()> {
    let last = || io::Error::from_raw_os_error(errno());
    // SAFETY: async-signal-safe calls only, in the single-threaded forked child.
    unsafe {
        if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) != 0 {
            return Err(last());
        }
        let me = libc::getpid();
        let command = libc::fork();
        if command < 0 {
            return Err(last());
        }
        if command > 0 {
            supervisor_main(command, status_fd)
        }
        // In the command.
        reset_signals();
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
            return Err(last());
        }
        if libc::getppid() != me {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        Ok(())
    }
}

/// The supervisor once the command is started: waits for the command, kills what escaped
/// its group, reports the status on `status_fd`, lingers until its last child is gone,
/// exits.
pub(super) unsafe fn supervisor_main(command: libc::pid_t, status_fd: libc::c_int) -> ! {
    // SAFETY: async-signal-safe calls only.
    unsafe {
        let mut chld: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut chld);
        libc::sigaddset(&mut chld, libc::SIGCHLD);
        libc::sigprocmask(libc::SIG_SETMASK, &chld, std::ptr::null_mut());
        // Out of the command's group before toolgate can signal it (spawn returns only
        // once every copy of std's exec-error pipe is closed, ours below included).
        libc::setpgid(0, 0);
        name(c"toolgate-reaper");
        // 0: the report's pipe (above 2, std's stdio).
        libc::dup2(status_fd, 0);
        close_from(1);
        let status = wait_command(command);
        // Most commands leave nothing behind: no child at all means nothing to look for.
        if has_children() {
            while kill_escaped(true) > 0 {}
        }
        let bytes = status.to_le_bytes();
        libc::write(0, bytes.as_ptr().cast(), bytes.len());
        libc::close(0);
        linger(&chld);
        libc::_exit(0)
    }
}

/// Waits for the command, reaping adopted orphans meanwhile; its wait status.
unsafe fn wait_command(command: libc::pid_t) -> libc::c_int {
    loop {
        let mut status = 0;
        // SAFETY: waitpid with a valid status pointer.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid == command {
            return status;
        }
        if pid < 0 && errno() != libc::EINTR {
            // No child at all: the command is gone without a status.
            return libc::SIGKILL;
        }
    }
}

/// Whether any child is left (reaping those already dead).
unsafe fn has_children() -> bool {
    loop {
        let mut status = 0;
        // SAFETY: waitpid with a valid status pointer.
        match unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) } {
            pid if pid > 0 => {}
            0 => return true,
            _ if errno() == libc::EINTR => {}
            _ => return false,
        }
    }
}

/// Reaps children until none is left, killing those that leave the group; then returns.
unsafe fn linger(chld: &libc::sigset_t) {
    let pause = libc::timespec {
        tv_sec: 0,
        tv_nsec: LOOK_AGAIN_NS,
    };
    loop {
        loop {
            let mut status = 0;
            // SAFETY: waitpid with a valid status pointer.
            match unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) } {
                pid if pid > 0 => {}
                0 => break,
                _ if errno() == libc::EINTR => {}
                _ => return,
            }
        }
        // SAFETY: as in `kill_escaped`.
        unsafe { kill_escaped(false) };
        // SAFETY: a valid set and timeout; the siginfo is not wanted.
        unsafe { libc::sigtimedwait(chld, std::ptr::null_mut(), &pause) };
    }
}

/// SIGKILLs every child that left the command's group; with `wait`, also reaps the ones
/// killed. Returns how many were killed.
unsafe fn kill_escaped(wait: bool) -> usize {
    let mut killed = [0 as libc::pid_t; ROUND];
    let mut count = 0;
    // SAFETY: getpid has no preconditions.
    let me = unsafe { libc::getpid() };
    // SAFETY: the scan only reads /proc into stack buffers.
    unsafe {
        for_each_process(|pid, parent, group| {
            if parent == me && group != 0 {
                libc::kill(pid, libc::SIGKILL);
                if count < ROUND {
                    killed[count] = pid;
                }
                count += 1;
            }
        });
    }
    if wait {
        for &pid in &killed[..count.min(ROUND)] {
            let mut status = 0;
            // SAFETY: waitpid on our own child with a valid status pointer.
            while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 && errno() == libc::EINTR {}
        }
    }
    count
}

/// Calls `f(pid, parent, group)` for every process this namespace's `/proc` lists.
unsafe fn for_each_process(mut f: impl FnMut(libc::pid_t, libc::pid_t, libc::pid_t)) {
    // SAFETY: a NUL-terminated path; the descriptor is closed below.
    let dir = unsafe {
        libc::open(
            c"/proc".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if dir < 0 {
        return;
    }
    let mut buf = [0u8; 4096];
    loop {
        // SAFETY: buf is writable for its length.
        let n = unsafe { libc::syscall(libc::SYS_getdents64, dir, buf.as_mut_ptr(), buf.len()) };
        if n <= 0 {
            break;
        }
        let mut at = 0usize;
        while at + 19 < n as usize {
            // struct linux_dirent64: u64 ino, i64 off, u16 reclen, u8 type, name.
            let reclen = usize::from(u16::from_ne_bytes([buf[at + 16], buf[at + 17]]));
            if reclen == 0 {
                break;
            }
            let name = &buf[at + 19..(at + reclen).min(n as usize)];
            let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
            if let Some(pid) = number(name)
                // SAFETY: see `parent_and_group`.
                && let Some((parent, group)) = unsafe { parent_and_group(dir, name) }
            {
                f(pid, parent, group);
            }
            at += reclen;
        }
    }
    // SAFETY: our own descriptor.
    unsafe { libc::close(dir) };
}

/// Parent and process group of `/proc/NAME/stat`, opened beneath `dir`.
unsafe fn parent_and_group(dir: libc::c_int, name: &[u8]) -> Option<(libc::pid_t, libc::pid_t)> {
    let mut path = [0u8; 32];
    let suffix = b"/stat\0";
    if name.len() + suffix.len() > path.len() {
        return None;
    }
    path[..name.len()].copy_from_slice(name);
    path[name.len()..name.len() + suffix.len()].copy_from_slice(suffix);
    // SAFETY: path is NUL-terminated; the descriptor is closed below.
    let fd = unsafe { libc::openat(dir, path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    let mut stat = [0u8; 512];
    // SAFETY: stat is writable for its length; our own descriptor.
    let n = unsafe {
        let n = libc::read(fd, stat.as_mut_ptr().cast(), stat.len());
        libc::close(fd);
        n
    };
    let stat = &stat[..usize::try_from(n).ok()?];
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
        // SAFETY: reads /proc only.
        let (parent, group) = unsafe { getppid_and_group() };
        let mut found = None;
        // SAFETY: as above.
        unsafe {
            for_each_process(|pid, p, g| {
                if pid == me {
                    found = Some((p, g));
                }
            });
        }
        assert_eq!(found, Some((parent, group)));
    }

    unsafe fn getppid_and_group() -> (libc::pid_t, libc::pid_t) {
        // SAFETY: no preconditions.
        unsafe { (libc::getppid(), libc::getpgrp()) }
    }
}
