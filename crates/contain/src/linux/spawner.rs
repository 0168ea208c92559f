//! Starting a command in the namespace without copying toolgate (issue 27).
//!
//! The relay used to be a `fork` of toolgate that joined the namespace: the kernel copied
//! toolgate's page tables, toolgate took a copy-on-write fault on every page it wrote while
//! the command ran, and the copy was torn down after it, about a millisecond of a 3–4 ms
//! `run_shell true`. Now the keeper, a small process forked when the namespace was made and
//! already inside its user and mount namespaces (new children land in its PID namespace),
//! is also the *spawner*:
//! - toolgate starts the relay in its own memory (`CLONE_VM` on a stack of its own, see
//!   [`clone_on`]): it dies with the starting thread, leads its own process group, waits
//!   for the command's status on a pipe and exits with it, in raw system calls with every
//!   signal blocked (no handler of toolgate's ever runs in it). It is outside the
//!   namespace, so no command can see it, let alone reach toolgate's memory through it;
//! - toolgate sends the spawner a request over a socket: the relay's pid and seven
//!   descriptors (the command line, folder, environment and sandbox in a memfd, stdin, the
//!   two output pipes, the status pipe, the exec pipe, the sandbox's Landlock ruleset);
//! - the spawner joins the relay's group for the length of one `clone` and goes back to its
//!   own: the child, the command's *supervisor* (see `supervisor`), is born inside the PID
//!   namespace and in the relay's group, where the old relay's supervisor was. It runs in
//!   the spawner's memory on a stack of its own (nothing copied, nothing torn down at its
//!   exit), which the spawner unmaps when it reaps it;
//! - the supervisor starts the command vfork-style on a second stack; the command takes its
//!   descriptors and folder, enters the sandbox if there is one (the mount view, Landlock,
//!   seccomp: `sandbox::enter_encoded`) and calls `exec`. The supervisor then goes on as
//!   before: it kills what left the group when the command ends and reports the status.
//!
//! toolgate learns how the start went from the exec pipe: the spawner writes the
//! supervisor's pid, a failing step its errno, and the pipe reaches its end once the
//! command has called `exec` (every other copy is closed by then).
//!
//! The spawner is a forked child of a multi-threaded process, so it and the supervisors
//! make only async-signal-safe calls on stack buffers and fresh mappings: no allocation, no
//! lock. They share one memory and one thread-local `errno`, so wherever an errno is
//! reported they make raw system calls ([`sys`]).

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::Ordering;

use super::split::{STACK_MAPPING, Share, clone_on, map_stack, sys};
use super::started::{Stack, Started, pipe, reap_orphans, remember};
use super::{RESETTABLE, block_all, errno, fd_bits};
use crate::sandbox::{Armed, enter_encoded};

/// Descriptors a request carries, in this order.
const MEMFD: usize = 0;
const STDIN: usize = 1;
const STDOUT: usize = 2;
const STDERR: usize = 3;
const STATUS: usize = 4;
const EXEC: usize = 5;
/// The sandbox's Landlock ruleset (stdin again when there is none).
const LANDLOCK: usize = 6;
const CARRIED: usize = 7;

/// Records on the exec pipe: 8 bytes, a tag and a value (atomic on a pipe).
const RECORD_SUPERVISOR: u8 = b'S';
const RECORD_ERRNO: u8 = b'E';

/// The spawner's socket in the keeper, after it tidies its descriptors.
const SOCKET_FD: libc::c_int = 3;

/// Whether commands can start through the spawner now.
pub(crate) fn available() -> bool {
    super::ALIVE.load(Ordering::Acquire)
        && super::NAMESPACE
            .get()
            .is_some_and(|ns| ns.spawner.is_some())
        && super::started::available()
}

/// Starts `program` (an absolute path) as `argv` in `cwd` inside the namespace, with
/// toolgate's environment: stdin `/dev/null`, stdout and stderr pipes whose read ends are
/// returned; the returned leader is the relay, whose process group the command runs in.
/// Call it from a thread that lives as long as toolgate.
pub(crate) fn spawn(
    program: &Path,
    argv: &[&OsStr],
    cwd: &Path,
    env: &[(OsString, OsString)],
    sandbox: Option<&Armed>,
) -> io::Result<(Started, OwnedFd, OwnedFd)> {
    let socket = super::NAMESPACE
        .get()
        .and_then(|ns| ns.spawner.as_ref())
        .ok_or_else(|| io::Error::from_raw_os_error(libc::ESRCH))?;
    reap_orphans();
    let cwd = match cwd.is_absolute() {
        true => cwd.to_path_buf(),
        false => std::env::current_dir()?.join(cwd),
    };
    let (request, ruleset) = request(program, argv, &cwd, env, sandbox)?;
    let (status_read, status_write) = pipe()?;
    let (relay, pidfd, stack) = start_relay(&status_read)?;
    drop(status_read);
    let started = Started::new(relay, pidfd, Some(stack))?;
    let stdin = OwnedFd::from(fs_err::File::open("/dev/null")?.into_parts().0);
    let (out_read, out_write) = pipe()?;
    let (err_read, err_write) = pipe()?;
    let (exec_read, exec_write) = pipe()?;
    let carried: [&OwnedFd; CARRIED] = [
        &request,
        &stdin,
        &out_write,
        &err_write,
        &status_write,
        &exec_write,
        ruleset.unwrap_or(&stdin),
    ];
    // From here the command may be running: any way out but success stops its group.
    let stop_group = |e: io::Error| {
        // SAFETY: signalling the relay's group, which `started` keeps from being reused.
        unsafe { libc::kill(-relay, libc::SIGKILL) };
        e
    };
    send(socket, relay, &carried)?;
    drop((
        request,
        stdin,
        out_write,
        err_write,
        status_write,
        exec_write,
    ));
    let mut supervisor = None;
    let mut failed = None;
    let mut exec_read = std::io::PipeReader::from(exec_read);
    let mut record = [0u8; 8];
    loop {
        match read_record(&mut exec_read, &mut record).map_err(stop_group)? {
            false => break,
            true => {
                let value = i32::from_le_bytes([record[4], record[5], record[6], record[7]]);
                match record[0] {
                    RECORD_SUPERVISOR => supervisor = Some(value),
                    RECORD_ERRNO => failed = Some(value),
                    _ => failed = Some(libc::EIO),
                }
            }
        }
    }
    if let Some(errno) = failed {
        return Err(stop_group(io::Error::from_raw_os_error(errno)));
    }
    let Some(supervisor) = supervisor else {
        // The spawner closed the pipe without a word: it is gone, and the namespace too.
        return Err(stop_group(io::Error::other(
            "the namespace's spawner ended before the command started",
        )));
    };
    remember(relay, supervisor);
    Ok((started, out_read, err_read))
}

/// Reads one 8-byte record; `false` at the pipe's end.
fn read_record(pipe: &mut std::io::PipeReader, record: &mut [u8; 8]) -> io::Result<bool> {
    use std::io::Read;
    let mut got = 0;
    while got < record.len() {
        match pipe.read(&mut record[got..]) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => return Err(io::Error::from(io::ErrorKind::UnexpectedEof)),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// The command line, environment, folder and sandbox for the supervisor, in a memfd:
/// `argc`, `envc` and whether a sandbox follows (u32, little-endian), then NUL-terminated
/// `program`, `cwd`, the arguments and the `KEY=value` strings, then the sandbox
/// ([`Armed::encode`]). Also the sandbox's Landlock ruleset, which the request carries.
fn request<'a>(
    program: &Path,
    argv: &[&OsStr],
    cwd: &Path,
    env: &[(OsString, OsString)],
    sandbox: Option<&'a Armed>,
) -> io::Result<(OwnedFd, Option<&'a OwnedFd>)> {
    let nul = || {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "nul byte found in provided data",
        )
    };
    let count = |n: usize| u32::try_from(n).map_err(|_| io::Error::from_raw_os_error(libc::E2BIG));
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&count(argv.len())?.to_le_bytes());
    // The environment's count, filled in once it is written.
    bytes.extend_from_slice(&[0; 4]);
    bytes.extend_from_slice(&u32::from(sandbox.is_some()).to_le_bytes());
    let strings = [program.as_os_str(), cwd.as_os_str()]
        .into_iter()
        .chain(argv.iter().copied());
    for s in strings.map(OsStr::as_bytes) {
        if s.contains(&0) {
            return Err(nul());
        }
        bytes.extend_from_slice(s);
        bytes.push(0);
    }
    // The command's environment, written straight in (`environ` holds no NUL).
    let mut envc = 0;
    for (key, value) in env {
        bytes.extend_from_slice(key.as_bytes());
        bytes.push(b'=');
        bytes.extend_from_slice(value.as_bytes());
        bytes.push(0);
        envc += 1;
    }
    bytes[4..8].copy_from_slice(&count(envc)?.to_le_bytes());
    let ruleset = sandbox.and_then(|armed| armed.encode(&mut bytes));
    // SAFETY: memfd_create with a NUL-terminated name; the descriptor is ours.
    let fd = unsafe { libc::memfd_create(c"toolgate-command".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut written = 0;
    while written < bytes.len() {
        match rustix::io::write(&fd, &bytes[written..]) {
            Ok(n) => written += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok((fd, ruleset))
}

/// Starts the relay in toolgate's memory on a stack of its own, in a process group of its
/// own: it waits for the status on `status` (its copy of the descriptor) and exits with it.
/// Its pid, a pidfd of it, and the stack to unmap once it is reaped.
fn start_relay(status: &OwnedFd) -> io::Result<(i32, OwnedFd, Stack)> {
    let stack = Stack::new()?;
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    let arg = fd_bits(status.as_raw_fd()) | (fd_bits(parent) << 32);
    // SAFETY: every signal is blocked in this thread around the start (restored after), so
    // the relay starts with all of them blocked and no handler of toolgate's ever runs in
    // it; `relay_main` touches only its stack, makes raw system calls only and exits.
    let pid = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let pid = clone_on(Share::Memory, stack.top(), relay_main, arg);
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        pid
    };
    if pid < 0 {
        return Err(io::Error::from_raw_os_error(
            i32::try_from(-pid).unwrap_or(libc::EAGAIN),
        ));
    }
    let pid = i32::try_from(pid).map_err(|_| io::Error::other("pid out of range"))?;
    // SAFETY: setpgid and pidfd_open of our own child, not yet reaped (nobody else waits for
    // it); setting its group from here too means the group exists when the spawner joins it.
    let pidfd = unsafe {
        libc::setpgid(pid, pid);
        libc::syscall(libc::SYS_pidfd_open, pid, 0)
    };
    if pidfd < 0 {
        let e = io::Error::last_os_error();
        // SAFETY: kill and reap our own child; its stack is unmapped only after.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            let mut status = 0;
            while libc::waitpid(pid, &mut status, 0) < 0 && errno() == libc::EINTR {}
        }
        return Err(e);
    }
    // SAFETY: a fresh descriptor we own.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd as libc::c_int) };
    Ok((pid, pidfd, stack))
}

/// The relay, on its own stack in toolgate's memory: dies with the starting thread, leads
/// its own group, and hands over to `relay_exit`. Raw system calls only.
unsafe extern "C" fn relay_main(arg: usize) -> ! {
    use libc::{SYS_exit_group, SYS_getppid, SYS_prctl, SYS_setpgid};
    let read = arg & 0xffff_ffff;
    let parent = arg >> 32;
    // SAFETY: raw system calls with plain arguments.
    unsafe {
        sys(
            SYS_prctl,
            libc::PR_SET_PDEATHSIG as usize,
            libc::SIGKILL as usize,
            0,
            0,
        );
        if usize::try_from(sys(SYS_getppid, 0, 0, 0, 0)).ok() != Some(parent) {
            sys(SYS_exit_group, 1, 0, 0, 0);
        }
        sys(SYS_setpgid, 0, 0, 0, 0);
        super::relay_exit(read)
    }
}

/// Sends the request: the relay's pid and the descriptors, in one message.
fn send(socket: &OwnedFd, relay: i32, fds: &[&OwnedFd; CARRIED]) -> io::Result<()> {
    let header = relay.to_le_bytes();
    let raw: [libc::c_int; CARRIED] = fds.map(AsRawFd::as_raw_fd);
    // SAFETY: CMSG_SPACE of a constant size.
    let space = unsafe { libc::CMSG_SPACE(std::mem::size_of_val(&raw) as u32) } as usize;
    let mut control = [0u64; 8];
    assert!(
        space <= std::mem::size_of_val(&control),
        "control buffer too small"
    );
    let mut iov = libc::iovec {
        iov_base: header.as_ptr() as *mut libc::c_void,
        iov_len: header.len(),
    };
    // SAFETY: a zeroed msghdr filled with pointers to the buffers above, which outlive the
    // call; the control message is built with the CMSG macros inside `control`.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of_val(&raw) as u32) as _;
        std::ptr::copy_nonoverlapping(
            raw.as_ptr().cast::<u8>(),
            libc::CMSG_DATA(cmsg),
            std::mem::size_of_val(&raw),
        );
        loop {
            if libc::sendmsg(socket.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) >= 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

/// A socket pair for toolgate and the spawner: toolgate's end, the keeper's end.
pub(super) fn socket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: socketpair into a local array; the descriptors are ours.
    unsafe {
        if libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
        Ok((OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])))
    }
}

/// The keeper from here on (a forked child: async-signal-safe calls only): reaps the
/// namespace's init and the supervisors it starts, and serves requests on `socket` until
/// toolgate closes it; exits when the init is gone. Everything but the socket is closed.
pub(super) unsafe fn serve(socket: libc::c_int, init: libc::pid_t) -> ! {
    // SAFETY: async-signal-safe calls on our own descriptors and stack buffers.
    unsafe {
        // Received descriptors must never land on 0–2, which the command's dup2 targets.
        let high = libc::fcntl(socket, libc::F_DUPFD_CLOEXEC, 64);
        for fd in 0..3 {
            libc::close(fd);
        }
        for _ in 0..3 {
            libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        }
        let socket = if high >= 0 {
            libc::dup3(high, SOCKET_FD, libc::O_CLOEXEC)
        } else {
            -1
        };
        super::close_from(SOCKET_FD as libc::c_uint + 1);
        // Out of toolgate's group: a group's signals are no business of ours.
        libc::setpgid(0, 0);
        let mut chld: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut chld);
        libc::sigaddset(&mut chld, libc::SIGCHLD);
        libc::sigprocmask(libc::SIG_BLOCK, &chld, std::ptr::null_mut());
        let children = libc::signalfd(-1, &chld, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
        let mut polls = [
            libc::pollfd {
                fd: socket,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: children,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        loop {
            // Without a signalfd, look for dead children once a second.
            let wait = if children >= 0 { -1 } else { 1000 };
            if libc::poll(polls.as_mut_ptr(), 2, wait) < 0 && errno() != libc::EINTR {
                libc::_exit(1);
            }
            if polls[1].revents != 0 || children < 0 {
                let mut info = [0u8; 128];
                while libc::read(children, info.as_mut_ptr().cast(), info.len()) > 0 {}
            }
            // Reap whatever ended: supervisors, and the init, which ends the namespace.
            loop {
                let mut status = 0;
                match libc::waitpid(-1, &mut status, libc::WNOHANG) {
                    pid if pid == init => libc::_exit(0),
                    pid if pid > 0 => {}
                    _ if errno() == libc::EINTR => {}
                    _ => break,
                }
            }
            let revents = polls[0].revents;
            if revents & libc::POLLIN != 0 {
                if !receive(socket) {
                    polls[0].fd = -1;
                }
            } else if revents != 0 {
                // toolgate closed its end: only the init is left to wait for.
                polls[0].fd = -1;
            }
        }
    }
}

/// Receives and serves one request; `false` when toolgate has closed the socket.
unsafe fn receive(socket: libc::c_int) -> bool {
    let mut header = [0u8; 4];
    let mut control = [0u64; 8];
    // SAFETY: recvmsg into buffers on this stack; received descriptors are close-on-exec.
    unsafe {
        let mut iov = libc::iovec {
            iov_base: header.as_mut_ptr().cast(),
            iov_len: header.len(),
        };
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        let n = libc::recvmsg(socket, &mut msg, libc::MSG_CMSG_CLOEXEC);
        if n == 0 {
            return false;
        }
        if n < 0 {
            return errno() == libc::EINTR || errno() == libc::EAGAIN;
        }
        let mut fds = [-1; CARRIED];
        let mut count = 0;
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(cmsg).cast::<libc::c_int>();
                let len = (*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                for i in 0..len / std::mem::size_of::<libc::c_int>() {
                    let fd = data.add(i).read_unaligned();
                    if count < CARRIED {
                        fds[count] = fd;
                        count += 1;
                    } else {
                        libc::close(fd);
                    }
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
        if n as usize == header.len() && count == CARRIED && msg.msg_flags & libc::MSG_CTRUNC == 0 {
            start(i32::from_le_bytes(header), &fds);
        }
        for fd in fds {
            if fd >= 0 {
                libc::close(fd);
            }
        }
        true
    }
}

/// Writes an 8-byte record to the exec pipe.
unsafe fn record(exec: libc::c_int, tag: u8, value: i32) {
    let v = value.to_le_bytes();
    let bytes = [tag, 0, 0, 0, v[0], v[1], v[2], v[3]];
    // SAFETY: 8 readable bytes; a failed write leaves toolgate to notice the pipe's end.
    unsafe { libc::write(exec, bytes.as_ptr().cast(), bytes.len()) };
}

/// In the spawner: forks the supervisor in the relay's group, and says so on the exec pipe.
/// The keeper is small, so the fork copies little (and nothing of toolgate's).
unsafe fn start(relay: i32, fds: &[libc::c_int; CARRIED]) {
    use libc::SYS_setpgid;
    let exec = fds[EXEC];
    // SAFETY: raw system calls; the child runs `supervisor_start`, which never returns.
    unsafe {
        // Joined for the length of the fork: the supervisor is born in the relay's group,
        // which it could not name from inside the namespace.
        let joined = sys(SYS_setpgid, 0, usize::try_from(relay).unwrap_or(0), 0, 0);
        if joined < 0 {
            record(exec, RECORD_ERRNO, -joined as i32);
            return;
        }
        let pid = libc::fork();
        if pid == 0 {
            supervisor_start(fds)
        }
        let forked = errno();
        if sys(SYS_setpgid, 0, 0, 0, 0) < 0 {
            // Left in the relay's group, the keeper would die with it: end the namespace
            // now instead (toolgate falls back to process groups).
            libc::_exit(1);
        }
        if pid > 0 {
            record(exec, RECORD_SUPERVISOR, pid);
        } else {
            record(exec, RECORD_ERRNO, forked);
        }
    }
}

/// What the command needs from its supervisor until its `exec` (on the supervisor's
/// stack, which sleeps meanwhile).
struct Launch {
    command: Command,
    fds: [libc::c_int; CARRIED],
    /// The supervisor's pid as the command sees it (its parent).
    parent: libc::pid_t,
}

/// The supervisor, a fork of the spawner: reads the request, starts the command
/// vfork-style on a stack of its own, and goes on as the supervisor (`supervisor_main`).
unsafe fn supervisor_start(fds: &[libc::c_int; CARRIED]) -> ! {
    use libc::{SYS_getpid, SYS_getppid, SYS_prctl};
    let exec = fds[EXEC];
    // SAFETY: async-signal-safe calls in the forked child; the command runs on a stack of
    // its own and only reads `launch`, which lives on ours while we sleep.
    unsafe {
        let fail = |errno: i32| -> ! {
            record(exec, RECORD_ERRNO, errno);
            libc::_exit(127)
        };
        let failed = sys(
            SYS_prctl,
            libc::PR_SET_PDEATHSIG as usize,
            libc::SIGKILL as usize,
            0,
            0,
        );
        if failed < 0 {
            fail(-failed as i32);
        }
        // The spawner is outside the namespace, so its pid reads as 0 here; anything else
        // means it died before the death signal was armed.
        if sys(SYS_getppid, 0, 0, 0, 0) != 0 {
            fail(libc::ESRCH);
        }
        let failed = sys(SYS_prctl, libc::PR_SET_CHILD_SUBREAPER as usize, 1, 0, 0);
        if failed < 0 {
            fail(-failed as i32);
        }
        let Some(command) = Command::read(fds[MEMFD]) else {
            fail(libc::EINVAL)
        };
        let mut launch = Launch {
            command,
            fds: *fds,
            parent: sys(SYS_getpid, 0, 0, 0, 0) as libc::pid_t,
        };
        let stack = match map_stack() {
            Ok(base) => base,
            Err(errno) => fail(errno),
        };
        block_all();
        let pid = clone_on(
            Share::UntilExec,
            stack.cast::<u8>().add(STACK_MAPPING),
            command_main,
            &raw mut launch as usize,
        );
        // The command has called exec (or exited): its stack and the request are free.
        libc::munmap(stack, STACK_MAPPING);
        launch.command.unmap();
        if pid < 0 {
            fail(i32::try_from(-pid).unwrap_or(libc::EAGAIN));
        }
        super::supervisor::supervisor_main(pid as libc::pid_t, fds[STATUS])
    }
}

/// The command, on its own stack while its supervisor sleeps: default signals, death with
/// the supervisor, its descriptors and folder, then `exec`. Raw system calls only.
unsafe extern "C" fn command_main(launch: usize) -> ! {
    use libc::{SYS_chdir, SYS_dup2, SYS_execve, SYS_getppid, SYS_prctl, SYS_rt_sigaction};
    // SAFETY: `launch` lives on the sleeping supervisor's stack until we exec or exit.
    let launch = unsafe { &*(launch as *const Launch) };
    let exec = launch.fds[EXEC];
    // SAFETY: raw system calls on what `launch` holds and on this stack.
    unsafe {
        let fail = |errno: libc::c_long| -> ! {
            record(
                exec,
                RECORD_ERRNO,
                i32::try_from(-errno).unwrap_or(libc::EIO),
            );
            libc::_exit(127)
        };
        // The kernel's sigaction, all zero: SIG_DFL, no flags, an empty mask.
        let default = [0usize; 4];
        for sig in RESETTABLE {
            sys(
                SYS_rt_sigaction,
                sig as usize,
                default.as_ptr() as usize,
                0,
                8,
            );
        }
        let failed = sys(
            SYS_prctl,
            libc::PR_SET_PDEATHSIG as usize,
            libc::SIGKILL as usize,
            0,
            0,
        );
        if failed < 0 {
            fail(failed);
        }
        if sys(SYS_getppid, 0, 0, 0, 0) != libc::c_long::from(launch.parent) {
            fail(-libc::c_long::from(libc::ESRCH));
        }
        for (fd, target) in [(STDIN, 0), (STDOUT, 1), (STDERR, 2)] {
            let failed = sys(SYS_dup2, launch.fds[fd] as usize, target, 0, 0);
            if failed < 0 {
                fail(failed);
            }
        }
        let command = &launch.command;
        let failed = sys(SYS_chdir, command.cwd as usize, 0, 0, 0);
        if failed < 0 {
            fail(failed);
        }
        if let Some((start, len)) = command.sandbox
            && let Err(errno) =
                enter_encoded(std::slice::from_raw_parts(start, len), launch.fds[LANDLOCK])
        {
            fail(-libc::c_long::from(errno));
        }
        let empty = 0u64;
        sys(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK as usize,
            &raw const empty as usize,
            0,
            8,
        );
        let failed = sys(
            SYS_execve,
            command.program as usize,
            command.argv as usize,
            command.envp as usize,
            0,
        );
        fail(failed)
    }
}

/// A request's command, read into fresh mappings.
struct Command {
    program: *const libc::c_char,
    cwd: *const libc::c_char,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    /// The encoded sandbox ([`Armed::encode`]): where it starts in the mapping, and its
    /// length.
    sandbox: Option<(*const u8, usize)>,
    /// The memfd's mapping and the pointer table's, unmapped by [`Command::unmap`].
    mappings: [(usize, usize); 2],
}

impl Command {
    /// Maps the memfd and points into it (no allocation); `None` if it is malformed.
    unsafe fn read(memfd: libc::c_int) -> Option<Self> {
        // SAFETY: fstat and mmap of our own descriptor; every read below stays inside the
        // mapping, and each string is checked to end in a NUL inside it.
        unsafe {
            let mut stat: libc::stat = std::mem::zeroed();
            if libc::fstat(memfd, &mut stat) != 0 {
                return None;
            }
            let len = usize::try_from(stat.st_size).ok()?;
            if len < 12 {
                return None;
            }
            let base = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                memfd,
                0,
            );
            if base == libc::MAP_FAILED {
                return None;
            }
            let bytes = std::slice::from_raw_parts(base.cast::<u8>(), len);
            let command = Self::parse(bytes);
            if command.is_none() {
                libc::munmap(base, len);
            }
            command
        }
    }

    /// Points into the mapped request `bytes` through a fresh pointer table; `None` (the
    /// table unmapped again) if it is malformed.
    unsafe fn parse(bytes: &[u8]) -> Option<Self> {
        let word = |at: usize| -> Option<usize> {
            let b = bytes.get(at..at + 4)?;
            Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        };
        let (argc, envc) = (word(0)?, word(4)?);
        let sandboxed = word(8)? != 0;
        let table_len = argc
            .checked_add(envc)?
            .checked_add(2)?
            .checked_mul(std::mem::size_of::<usize>())?;
        // SAFETY: a fresh anonymous mapping of `table_len` bytes, written below only within
        // its `argc + envc + 2` slots, and unmapped again if the request is malformed.
        unsafe {
            let mapped = libc::mmap(
                std::ptr::null_mut(),
                table_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            if mapped == libc::MAP_FAILED {
                return None;
            }
            let table = mapped.cast::<*const libc::c_char>();
            let mut at = 12;
            let mut next = || -> Option<*const libc::c_char> {
                let rest = bytes.get(at..)?;
                let end = rest.iter().position(|&b| b == 0)?;
                at += end + 1;
                Some(rest.as_ptr().cast())
            };
            let mut fill = || -> Option<(*const libc::c_char, *const libc::c_char)> {
                let program = next()?;
                let cwd = next()?;
                for i in 0..argc {
                    *table.add(i) = next()?;
                }
                *table.add(argc) = std::ptr::null();
                for i in 0..envc {
                    *table.add(argc + 1 + i) = next()?;
                }
                *table.add(argc + 1 + envc) = std::ptr::null();
                Some((program, cwd))
            };
            let Some((program, cwd)) = fill() else {
                libc::munmap(mapped, table_len);
                return None;
            };
            let sandbox = sandboxed.then(|| (bytes.as_ptr().add(at), bytes.len() - at));
            Some(Self {
                program,
                cwd,
                argv: table,
                envp: table.add(argc + 1),
                sandbox,
                mappings: [
                    (bytes.as_ptr() as usize, bytes.len()),
                    (mapped as usize, table_len),
                ],
            })
        }
    }

    /// Unmaps what [`Command::read`] mapped; the pointers are dangling after.
    unsafe fn unmap(&self) {
        for (base, len) in self.mappings {
            // SAFETY: mappings made by `read` for this command alone.
            unsafe { libc::munmap(base as *mut libc::c_void, len) };
        }
    }
}
