//! The spawner's side, in the keeper: it serves requests on its socket, forks a supervisor
//! for each in the relay's group, and reaps them. The keeper is a forked child of a
//! multi-threaded process, so it and the supervisors make async-signal-safe calls only, on
//! stack buffers and fresh mappings: no allocation, no lock.

use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use rustix::event::{PollFd, PollFlags, poll};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, ReturnFlags, recvmsg};
use rustix::process::{Pid, WaitOptions, getpid, getppid, setpgid, wait};

use super::request::{
    CARRIED, Command, EXEC, LANDLOCK, MEMFD, RECORD_ERRNO, RECORD_SUPERVISOR, STATUS, STDERR,
    STDIN, STDOUT,
};
use crate::linux::child::{errno, exit, keep_only, set_mask, signal_set};
use crate::linux::clone::{Stack, until_exec};
use crate::linux::exec::{Exec, Group, Signals};
use crate::linux::supervisor::supervisor_main;
use crate::sandbox::enter_encoded;

/// The keeper from here on: reaps the namespace's init and the supervisors it starts, and
/// serves requests on `socket` until toolgate closes it; exits when the init is gone.
/// Everything but the socket and `/dev/null` on 0–2 is closed.
pub(in crate::linux) fn serve(socket: OwnedFd, init: i32) -> ! {
    let socket = tidy(socket);
    // Out of toolgate's group: a group's signals are no business of ours. Should it fail,
    // the keeper ignores the group's catchable signals, and a SIGKILL to toolgate's group
    // ends toolgate anyway.
    let _ = setpgid(None, None);
    let children = child_signals();
    let mut serving = socket.is_some();
    loop {
        // Descriptor 0 (`/dev/null`) asked for nothing stands in for a missing one.
        let mut fds = [
            entry(children.as_ref()),
            entry(socket.as_ref().filter(|_| serving)),
        ];
        let watched = &mut fds[..];
        // Without a signalfd, look for dead children once a second.
        let second = rustix::event::Timespec {
            tv_sec: 1,
            tv_nsec: 0,
        };
        let timeout = if children.is_some() {
            None
        } else {
            Some(&second)
        };
        match poll(watched, timeout) {
            Ok(_) | Err(Errno::INTR) => {}
            Err(_) => exit(1),
        }
        let socket_events = if serving {
            fds[1].revents()
        } else {
            PollFlags::empty()
        };
        if let Some(children) = &children {
            let mut info = [0u8; 128];
            while rustix::io::read(children, &mut info).is_ok_and(|n| n > 0) {}
        }
        // Reap whatever ended: supervisors, and the init, which ends the namespace.
        loop {
            match wait(WaitOptions::NOHANG) {
                Ok(Some((pid, _))) if pid.as_raw_pid() == init => exit(0),
                Ok(Some(_)) | Err(Errno::INTR) => {}
                Ok(None) | Err(_) => break,
            }
        }
        if let Some(socket) = &socket
            && serving
        {
            if socket_events.contains(PollFlags::IN) {
                serving = receive(socket);
            } else if !socket_events.is_empty() {
                // toolgate closed its end: only the init is left to wait for.
                serving = false;
            }
        }
    }
}

/// What `poll` watches for `fd`: readable, or (without one) descriptor 0, `/dev/null`,
/// asked for nothing.
fn entry(fd: Option<&OwnedFd>) -> PollFd<'_> {
    match fd {
        Some(fd) => PollFd::new(fd, PollFlags::IN),
        None => PollFd::from_borrowed_fd(rustix::stdio::stdin(), PollFlags::empty()),
    }
}

/// Closes everything the keeper inherited from toolgate but `socket`, and puts `/dev/null`
/// on 0–2, so that received descriptors never land there (the command's `dup2` targets).
/// The socket, or `None` when it cannot be kept.
fn tidy(socket: OwnedFd) -> Option<OwnedFd> {
    // Above 2 first, so that 0–2 can be closed around it.
    let socket = match socket.as_raw_fd() {
        0..=2 => rustix::io::fcntl_dupfd_cloexec(socket, 3).ok()?,
        _ => socket,
    };
    // SAFETY: the keeper is a process of its own, and nothing of it uses a descriptor
    // besides `socket` from here.
    let socket = unsafe { keep_only(socket) };
    for _ in 0..3 {
        if let Ok(null) = rustix::fs::open(c"/dev/null", OFlags::RDWR, Mode::empty()) {
            // Kept open for good, on 0, 1 and 2.
            std::mem::forget(null);
        }
    }
    Some(socket)
}

/// A signalfd that is readable when a child ended (SIGCHLD blocked for it), or `None`.
fn child_signals() -> Option<OwnedFd> {
    let chld = signal_set(Some(&[libc::SIGCHLD]));
    set_mask(libc::SIG_BLOCK, &chld).ok()?;
    // SAFETY: a valid set; the signalfd is a fresh descriptor, ours alone.
    unsafe {
        let fd = libc::signalfd(-1, &chld, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
        (fd >= 0).then(|| std::os::fd::FromRawFd::from_raw_fd(fd))
    }
}

/// Receives and serves one request; `false` when toolgate has closed the socket.
fn receive(socket: &OwnedFd) -> bool {
    let mut header = [0u8; 4];
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(CARRIED))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let received = recvmsg(
        socket,
        &mut [std::io::IoSliceMut::new(&mut header)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC,
    );
    let message = match received {
        Ok(message) => message,
        Err(e) => return e == Errno::INTR || e == Errno::AGAIN,
    };
    if message.bytes == 0 {
        return false;
    }
    // Ours until dropped at the end of this call (the supervisor has its own copies).
    let mut fds: [Option<OwnedFd>; CARRIED] = Default::default();
    let mut count = 0;
    for part in control.drain() {
        if let RecvAncillaryMessage::ScmRights(received) = part {
            for fd in received {
                if let Some(slot) = fds.get_mut(count) {
                    *slot = Some(fd);
                }
                count += 1;
            }
        }
    }
    let whole = message.bytes == header.len()
        && count == CARRIED
        && !message.flags.contains(ReturnFlags::CTRUNC);
    if whole {
        let stdin = rustix::stdio::stdin();
        let fds = std::array::from_fn(|i| fds[i].as_ref().map_or(stdin, AsFd::as_fd));
        start(i32::from_le_bytes(header), &fds);
    }
    true
}

/// Writes an 8-byte record to the exec pipe. A failed write leaves toolgate to notice the
/// pipe's end without a record, which it reports.
fn record(exec: BorrowedFd<'_>, tag: u8, value: i32) {
    let v = value.to_le_bytes();
    let _ = rustix::io::write(exec, &[tag, 0, 0, 0, v[0], v[1], v[2], v[3]]);
}

/// Forks the supervisor in the relay's group, and says so on the exec pipe. The keeper is
/// small, so the fork copies little (and nothing of toolgate's).
fn start(relay: i32, fds: &[BorrowedFd<'_>; CARRIED]) {
    let exec = fds[EXEC];
    let Some(relay) = Pid::from_raw(relay.max(0)) else {
        return record(exec, RECORD_ERRNO, libc::ESRCH);
    };
    // Joined for the length of the fork: the supervisor is born in the relay's group,
    // which it could not name from inside the namespace.
    if let Err(e) = setpgid(None, Some(relay)) {
        return record(exec, RECORD_ERRNO, e.raw_os_error());
    }
    // SAFETY: a fork of this single-threaded process; the child runs `supervisor_start`,
    // which never returns.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        supervisor_start(fds)
    }
    let forked = errno();
    if setpgid(None, None).is_err() {
        // Left in the relay's group, the keeper would die with it: end the namespace now
        // instead (toolgate falls back to process groups).
        exit(1)
    }
    match pid {
        pid if pid > 0 => record(exec, RECORD_SUPERVISOR, pid),
        _ => record(exec, RECORD_ERRNO, forked),
    }
}

/// The supervisor, a fork of the spawner: reads the request, starts the command
/// vfork-style, and goes on as the supervisor (`supervisor_main`).
fn supervisor_start(fds: &[BorrowedFd<'_>; CARRIED]) -> ! {
    let exec = fds[EXEC];
    let fail = |errno: i32| -> ! {
        record(exec, RECORD_ERRNO, errno);
        exit(127)
    };
    if let Err(e) =
        rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
    {
        fail(e.raw_os_error());
    }
    // The spawner is outside the namespace, so its pid reads as 0 here; anything else
    // means it died before the death signal was armed.
    if getppid().is_some() {
        fail(libc::ESRCH);
    }
    if let Err(e) = rustix::process::set_child_subreaper(Some(getpid())) {
        fail(e.raw_os_error());
    }
    let Some(command) = Command::read(fds[MEMFD]) else {
        fail(libc::EINVAL)
    };
    let status = match fds[STATUS].try_clone_to_owned() {
        Ok(status) => status,
        Err(e) => fail(e.raw_os_error().unwrap_or(libc::EIO)),
    };
    let mut stack = match Stack::new() {
        Ok(stack) => stack,
        Err(e) => fail(e.raw_os_error().unwrap_or(libc::ENOMEM)),
    };
    let steps = Exec {
        program: command.program,
        argv: command.argv,
        envp: command.envp,
        cwd: command.cwd,
        stdio: [fds[STDIN], fds[STDOUT], fds[STDERR]],
        parent: getpid(),
        signals: Signals::Default,
        group: Group::Inherited,
    };
    let enter = || match command.sandbox {
        Some(bytes) => enter_encoded(bytes, fds[LANDLOCK]),
        None => Ok(()),
    };
    let child = || {
        // SAFETY: in the child `until_exec` starts; the arrays live in the mapping.
        let errno = unsafe { steps.run(enter) };
        record(exec, RECORD_ERRNO, errno);
        127
    };
    // SAFETY: the child makes system calls on what this frame and the mapping hold, and
    // writes nothing but its stack and the exec pipe; we sleep until its exec or exit.
    let command = match unsafe { until_exec(&mut stack, child) } {
        Ok(pid) => pid,
        Err(e) => fail(e.raw_os_error().unwrap_or(libc::EAGAIN)),
    };
    // SAFETY: the supervisor is this process alone, the command's parent.
    unsafe { supervisor_main(command, status) }
}
