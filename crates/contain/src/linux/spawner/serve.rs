//! The spawner's side, in the keeper: it serves requests on its socket, hands each to a
//! supervisor it forked ahead of time (a *spare*: the fork is then off the path of the
//! start) after moving it into the relay's group, and reaps them. The keeper is a forked
//! child of a multi-threaded process, so it and the supervisors make async-signal-safe
//! calls only, on stack buffers and fresh mappings: no allocation, no lock.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

use rustix::event::{PollFd, PollFlags, poll};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketFlags, SocketType, socketpair};
use rustix::process::{
    Pid, Signal, WaitOptions, getpid, getppid, set_child_subreaper,
    set_parent_process_death_signal, setpgid, wait,
};

use super::request::{
    CARRIED, Command, EXEC, LANDLOCK, MEMFD, RECORD_ERRNO, RECORD_SUPERVISOR, Received, STATUS,
    STDERR, STDIN, STDOUT, receive, send, whole,
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
    let mut spare: Option<Spare> = None;
    loop {
        // Forked once the last request's descriptors are closed (a spare must hold none).
        if serving && spare.is_none() {
            spare = fork_spare().ok();
        }
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
                Ok(Some((pid, _))) if spare.as_ref().is_some_and(|s| s.pid == pid) => {
                    spare = None;
                }
                Ok(Some(_)) | Err(Errno::INTR) => {}
                Ok(None) | Err(_) => break,
            }
        }
        if let Some(socket) = &socket
            && serving
        {
            if socket_events.contains(PollFlags::IN) {
                match receive(socket) {
                    Received::Closed => serving = false,
                    Received::Nothing => {}
                    Received::Request(relay, fds) => {
                        if let Some(fds) = whole(&fds) {
                            start(relay, &fds, spare.take());
                        }
                    }
                }
            } else if !socket_events.is_empty() {
                serving = false;
            }
            if !serving {
                // toolgate closed its end: only the init is left to wait for (a spare
                // exits at the end of its channel).
                spare = None;
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

/// Writes an 8-byte record to the exec pipe. A failed write leaves toolgate to notice the
/// pipe's end without a record, which it reports.
fn record(exec: BorrowedFd<'_>, tag: u8, value: i32) {
    let v = value.to_le_bytes();
    let _ = rustix::io::write(exec, &[tag, 0, 0, 0, v[0], v[1], v[2], v[3]]);
}

/// A supervisor forked ahead of its request, waiting on its end of `channel`.
struct Spare {
    pid: Pid,
    channel: OwnedFd,
}

/// Forks a spare supervisor ([`spare_main`]).
fn fork_spare() -> io::Result<Spare> {
    let (ours, theirs) = socketpair(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::CLOEXEC,
        None,
    )?;
    // SAFETY: a fork of this single-threaded process; the child runs `spare_main`, which
    // makes async-signal-safe calls only and never returns.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        drop(ours);
        spare_main(theirs)
    }
    match Pid::from_raw(pid.max(0)) {
        Some(pid) => Ok(Spare { pid, channel: ours }),
        None => Err(io::Error::from_raw_os_error(errno())),
    }
}

/// Hands the request to `spare` (or to one forked now) in the relay's group, and says so
/// on the exec pipe. A spare that cannot take it is dropped: it exits at the end of its
/// channel.
fn start(relay: i32, fds: &[BorrowedFd<'_>; CARRIED], spare: Option<Spare>) {
    let exec = fds[EXEC];
    let Some(group) = Pid::from_raw(relay.max(0)) else {
        return record(exec, RECORD_ERRNO, libc::ESRCH);
    };
    let spare = match spare.map_or_else(fork_spare, Ok) {
        Ok(spare) => spare,
        Err(e) => return record(exec, RECORD_ERRNO, e.raw_os_error().unwrap_or(libc::EAGAIN)),
    };
    // A parent may move its child into another group until the child execs: the
    // supervisor joins the relay's, which it could not name from inside the namespace.
    let handed =
        setpgid(Some(spare.pid), Some(group)).and_then(|()| send(&spare.channel, relay, fds));
    match handed {
        Ok(()) => record(exec, RECORD_SUPERVISOR, spare.pid.as_raw_pid()),
        Err(e) => record(exec, RECORD_ERRNO, e.raw_os_error()),
    }
}

/// A spare supervisor, forked by the spawner: gets ready (death with the spawner, the
/// subreaper), then waits for its request and starts it ([`supervisor_start`]).
fn spare_main(channel: OwnedFd) -> ! {
    let ready = get_ready();
    // Nothing inherited stays open but the channel and `/dev/null` on 0–2.
    let Some(channel) = tidy(channel) else {
        exit(127)
    };
    let fds = loop {
        match receive(&channel) {
            Received::Request(_, fds) => break fds,
            Received::Nothing => {}
            Received::Closed => exit(0),
        }
    };
    // The spawner checked that the request is whole before it sent it on.
    let Some(fds) = whole(&fds) else { exit(127) };
    if let Err(errno) = ready {
        record(fds[EXEC], RECORD_ERRNO, errno);
        exit(127)
    }
    supervisor_start(&fds)
}

/// Death with the spawner and the subreaper; the errno of a step that failed.
fn get_ready() -> Result<(), i32> {
    let failed = |e: Errno| e.raw_os_error();
    set_parent_process_death_signal(Some(Signal::KILL)).map_err(failed)?;
    // The spawner is outside the namespace, so its pid reads as 0 here; anything else
    // means it died before the death signal was armed.
    if getppid().is_some() {
        return Err(libc::ESRCH);
    }
    set_child_subreaper(Some(getpid())).map_err(failed)
}

/// The supervisor, once its request came: reads it, starts the command vfork-style, and
/// goes on as the supervisor (`supervisor_main`).
fn supervisor_start(fds: &[BorrowedFd<'_>; CARRIED]) -> ! {
    let exec = fds[EXEC];
    let fail = |errno: i32| -> ! {
        record(exec, RECORD_ERRNO, errno);
        exit(127)
    };
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
