//! The Linux namespace: keeper, init, relay and supervisor (see the crate docs).
//!
//! Everything that runs in a forked child (keeper, init, relay, the command before exec)
//! makes only raw, async-signal-safe system calls: toolgate is multi-threaded, and after
//! `fork` the child must not take locks or allocate.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::Containment;

#[cfg(target_arch = "x86_64")]
pub(crate) mod launch;
#[cfg(target_arch = "x86_64")]
pub(crate) mod spawner;
pub(crate) mod split;
#[cfg(target_arch = "x86_64")]
pub(crate) mod started;
mod supervisor;

use split::sys;

/// Descriptors of the namespace's init, joined by every relay.
struct Namespace {
    user: Option<OwnedFd>,
    mnt: OwnedFd,
    pid: OwnedFd,
    /// Inode of the PID namespace.
    id: u64,
    /// toolgate's end of the spawner's socket (see `spawner`).
    spawner: Option<OwnedFd>,
}

static NAMESPACE: OnceLock<Namespace> = OnceLock::new();
/// Cleared if the keeper ever dies: later commands fall back to process groups.
static ALIVE: AtomicBool = AtomicBool::new(false);

/// How long the keeper gets to report the namespace ready.
const START_LIMIT: Duration = Duration::from_secs(10);

// Messages from keeper and init to the starting thread: 8 bytes each (atomic on a pipe).
const MSG_INIT_PID: u8 = b'P';
const MSG_READY: u8 = b'K';
const MSG_FAILED: u8 = b'E';

// Steps a failure names.
const STEP_PDEATHSIG: u8 = 1;
const STEP_UNSHARE: u8 = 2;
const STEP_UID_MAP: u8 = 3;
const STEP_GID_MAP: u8 = 4;
const STEP_FORK: u8 = 5;
const STEP_MOUNT_SLAVE: u8 = 6;
const STEP_MOUNT_PROC: u8 = 7;

/// Starts the namespace; `Ok(user)` says whether a user namespace was needed.
pub(crate) fn start() -> Result<bool, String> {
    // SAFETY: geteuid has no preconditions.
    let user = unsafe { libc::geteuid() } != 0;
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    // The keeper's parent-death signal follows the thread that forks it: a thread of its
    // own that never ends keeps the namespace alive exactly as long as toolgate.
    std::thread::Builder::new()
        .name("toolgate-contain".to_owned())
        .spawn(move || match fork_keeper(user) {
            Ok((keeper, init, spawner)) => {
                let _ = tx.send(Ok((init, spawner)));
                let status = wait_for(keeper);
                if ALIVE.swap(false, Ordering::AcqRel) {
                    tracing::error!(
                        "the process namespace ended unexpectedly ({}); new commands run in process groups only",
                        ending(status)
                    );
                }
                loop {
                    std::thread::park();
                }
            }
            Err(e) => {
                let _ = tx.send(Err(e));
            }
        })
        .map_err(|e| format!("cannot start a thread: {e}"))?;
    let (init, spawner) = rx
        .recv_timeout(START_LIMIT + Duration::from_secs(1))
        .map_err(|_| "the namespace keeper did not answer".to_owned())??;
    let open = |kind: &str| -> Result<OwnedFd, String> {
        fs_err::File::open(format!("/proc/{init}/ns/{kind}"))
            .map(OwnedFd::from)
            .map_err(|e| format!("cannot open the new {kind} namespace: {e}"))
    };
    let pid = open("pid")?;
    let id = fs_err::metadata(format!("/proc/{init}/ns/pid"))
        .map_err(|e| format!("cannot read the new PID namespace: {e}"))?
        .ino();
    let namespace = Namespace {
        user: if user { Some(open("user")?) } else { None },
        mnt: open("mnt")?,
        pid,
        id,
        spawner,
    };
    if NAMESPACE.set(namespace).is_err() {
        return Err("containment was started twice".to_owned());
    }
    ALIVE.store(true, Ordering::Release);
    Ok(user)
}

/// Reaps our child `pid`; returns its wait status.
fn wait_for(pid: libc::pid_t) -> i32 {
    let mut status = 0;
    // SAFETY: waitpid on our own child with a valid status pointer.
    while unsafe { libc::waitpid(pid, &mut status, 0) } == -1 && errno() == libc::EINTR {}
    status
}

/// How the keeper ended, as a clause.
fn ending(status: i32) -> String {
    if libc::WIFSIGNALED(status) {
        format!("its keeper was killed by signal {}", libc::WTERMSIG(status))
    } else {
        format!(
            "its keeper exited with status {}",
            libc::WEXITSTATUS(status)
        )
    }
}

/// Forks the keeper and waits for its report; returns the keeper's and the init's pids and
/// toolgate's end of the spawner's socket (none where the spawner is not built).
fn fork_keeper(user: bool) -> Result<(libc::pid_t, libc::pid_t, Option<OwnedFd>), String> {
    // SAFETY: these calls have no preconditions.
    let (uid, gid, parent) = unsafe { (libc::geteuid(), libc::getegid(), libc::getpid()) };
    let uid_map = format!("{uid} {uid} 1\n").into_bytes();
    let gid_map = format!("{gid} {gid} 1\n").into_bytes();
    let mut fds = [0; 2];
    // SAFETY: fds has room for two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(format!(
            "cannot make a pipe: {}",
            io::Error::last_os_error()
        ));
    }
    // SAFETY: pipe2 just returned these descriptors and nothing else owns them.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    #[cfg(target_arch = "x86_64")]
    let (spawner, served) = match spawner::socket_pair() {
        Ok((ours, theirs)) => (Some(ours), Some(theirs)),
        Err(_) => (None, None),
    };
    #[cfg(not(target_arch = "x86_64"))]
    let (spawner, served): (Option<OwnedFd>, Option<OwnedFd>) = (None, None);
    let served_fd = served.as_ref().map_or(-1, AsRawFd::as_raw_fd);
    // SAFETY: the child runs only async-signal-safe calls (keeper_main) and never returns.
    let keeper = unsafe { libc::fork() };
    if keeper < 0 {
        return Err(format!("cannot fork: {}", io::Error::last_os_error()));
    }
    if keeper == 0 {
        // SAFETY: in the forked child; see keeper_main.
        unsafe {
            keeper_main(
                read.as_raw_fd(),
                write.as_raw_fd(),
                parent,
                user,
                &uid_map,
                &gid_map,
                served_fd,
            )
        }
    }
    drop((write, served));
    match read_reports(&read) {
        Ok(init) => Ok((keeper, init, spawner)),
        Err(e) => {
            // SAFETY: signalling and reaping our own child.
            unsafe { libc::kill(keeper, libc::SIGKILL) };
            wait_for(keeper);
            Err(e)
        }
    }
}

/// Reads the keeper's and the init's messages until the namespace is ready.
fn read_reports(read: &OwnedFd) -> Result<libc::pid_t, String> {
    let mut init = None;
    let mut ready = false;
    let deadline = std::time::Instant::now() + START_LIMIT;
    while !(ready && init.is_some()) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let mut poll = libc::pollfd {
            fd: read.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = libc::c_int::try_from(left.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: one valid pollfd.
        match unsafe { libc::poll(&mut poll, 1, ms) } {
            0 => return Err("the namespace was not ready within 10 s".to_owned()),
            n if n < 0 && errno() == libc::EINTR => continue,
            n if n < 0 => return Err(format!("poll: {}", io::Error::last_os_error())),
            _ => {}
        }
        let mut msg = [0u8; 8];
        // SAFETY: msg has room for 8 bytes.
        let n = unsafe { libc::read(read.as_raw_fd(), msg.as_mut_ptr().cast(), msg.len()) };
        if n == 0 {
            return Err("the namespace keeper exited before the namespace was ready".to_owned());
        }
        if n != 8 {
            return Err(format!(
                "unexpected report from the namespace keeper ({n} bytes)"
            ));
        }
        let value = i32::from_le_bytes([msg[4], msg[5], msg[6], msg[7]]);
        match msg[0] {
            MSG_INIT_PID => init = Some(value),
            MSG_READY => ready = true,
            MSG_FAILED => return Err(describe_failure(msg[1], value)),
            other => return Err(format!("unexpected report {other} from the keeper")),
        }
    }
    init.ok_or_else(|| "the keeper did not name the init".to_owned())
}

fn describe_failure(step: u8, errno: i32) -> String {
    let error = io::Error::from_raw_os_error(errno);
    let what = match step {
        STEP_PDEATHSIG => "cannot set the parent-death signal",
        STEP_UNSHARE => {
            "cannot create PID and mount namespaces (user namespaces may be disabled: \
             sysctl kernel.unprivileged_userns_clone, user.max_user_namespaces, or an \
             AppArmor/seccomp policy)"
        }
        STEP_UID_MAP => "cannot write the user namespace's uid_map",
        STEP_GID_MAP => "cannot write the user namespace's gid_map",
        STEP_FORK => "cannot fork the namespace's init",
        STEP_MOUNT_SLAVE => "cannot make the namespace's mounts private",
        STEP_MOUNT_PROC => "cannot mount /proc for the namespace (a container that masks /proc?)",
        _ => "unknown step",
    };
    format!("{what}: {error}")
}

fn errno() -> i32 {
    // SAFETY: errno is thread-local and always readable.
    unsafe { *libc::__errno_location() }
}

/// Writes the 8-byte message `tag, step, value` to `fd`.
unsafe fn send(fd: i32, tag: u8, step: u8, value: i32) {
    let v = value.to_le_bytes();
    let msg = [tag, step, 0, 0, v[0], v[1], v[2], v[3]];
    // SAFETY: msg is 8 readable bytes; a failed write leaves the reader at EOF.
    unsafe { libc::write(fd, msg.as_ptr().cast(), msg.len()) };
}

/// Reports a failed step (with errno) and exits the forked child.
unsafe fn fail(fd: i32, step: u8) -> ! {
    let errno = errno();
    // SAFETY: async-signal-safe calls only.
    unsafe {
        send(fd, MSG_FAILED, step, errno);
        libc::_exit(1)
    }
}

/// Writes `data` to the file at `path` (for uid_map and friends); false on failure.
unsafe fn write_file(path: &CStr, data: &[u8]) -> bool {
    // SAFETY: a valid C string path; the descriptor is closed before return.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return false;
        }
        let written = libc::write(fd, data.as_ptr().cast(), data.len());
        libc::close(fd);
        usize::try_from(written).is_ok_and(|n| n == data.len())
    }
}

/// Names the calling process (as `ps` and /proc/PID/comm show it; at most 15 bytes).
unsafe fn name(name: &CStr) {
    // SAFETY: PR_SET_NAME copies the string; async-signal-safe.
    unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr()) };
}

/// Closes every descriptor from `first` up.
unsafe fn close_from(first: libc::c_uint) {
    // SAFETY: close_range on our own descriptor table; the loop is the fallback for
    // kernels before 5.9.
    unsafe {
        if libc::syscall(libc::SYS_close_range, first, libc::c_uint::MAX, 0) != 0 {
            for fd in first..4096 {
                libc::close(fd as libc::c_int);
            }
        }
    }
}

/// Signals whose default action a forked child needs back (toolgate's runtime handles
/// some of them, and ignored signals stay ignored across exec).
const RESETTABLE: [libc::c_int; 14] = [
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

unsafe fn reset_signals() {
    // SAFETY: signal and sigprocmask are async-signal-safe.
    unsafe {
        for sig in RESETTABLE {
            libc::signal(sig, libc::SIG_DFL);
        }
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
    }
}

/// Ignores every catchable signal sent to the group (but SIGCHLD): the relay lets the
/// command decide about them, and the keeper lives until toolgate ends.
unsafe fn ignore_signals() {
    // SAFETY: signal is async-signal-safe.
    unsafe {
        for sig in RESETTABLE {
            if sig != libc::SIGCHLD {
                libc::signal(sig, libc::SIG_IGN);
            }
        }
    }
}

unsafe fn keeper_main(
    read: i32,
    write: i32,
    parent: libc::pid_t,
    user: bool,
    uid_map: &[u8],
    gid_map: &[u8],
    spawner: i32,
) -> ! {
    // SAFETY: in a freshly forked child; async-signal-safe calls only.
    unsafe {
        libc::close(read);
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
            fail(write, STEP_PDEATHSIG);
        }
        if libc::getppid() != parent {
            libc::_exit(1);
        }
        name(c"toolgate-keeper");
        reset_signals();
        // The keeper shares toolgate's process group, so a signal to the group (Ctrl-C in
        // a terminal, a client stopping the server's group) reached it too and ended the
        // namespace before toolgate's own handler ran its clean shutdown. It ends with
        // toolgate through its parent-death signal (SIGKILL) instead; the init inherits
        // the dispositions, and a namespace's init ignores such signals anyway.
        ignore_signals();
        let mut flags = libc::CLONE_NEWPID | libc::CLONE_NEWNS;
        if user {
            flags |= libc::CLONE_NEWUSER;
        }
        if libc::unshare(flags) != 0 {
            fail(write, STEP_UNSHARE);
        }
        if user {
            // Needed before gid_map without privilege; absent on old kernels.
            write_file(c"/proc/self/setgroups", b"deny");
            if !write_file(c"/proc/self/uid_map", uid_map) {
                fail(write, STEP_UID_MAP);
            }
            if !write_file(c"/proc/self/gid_map", gid_map) {
                fail(write, STEP_GID_MAP);
            }
        }
        let init = libc::fork();
        if init < 0 {
            fail(write, STEP_FORK);
        }
        if init == 0 {
            init_main(write);
        }
        send(write, MSG_INIT_PID, 0, init);
        #[cfg(target_arch = "x86_64")]
        if spawner >= 0 {
            spawner::serve(spawner, init);
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = spawner;
        close_from(0);
        let mut status = 0;
        while libc::waitpid(init, &mut status, 0) == -1 && errno() == libc::EINTR {}
        libc::_exit(0)
    }
}

/// PID 1 of the namespace: a private `/proc`, then reaping orphans until it is killed.
unsafe fn init_main(write: i32) -> ! {
    // SAFETY: in a freshly forked child; async-signal-safe calls only.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
            fail(write, STEP_PDEATHSIG);
        }
        // The keeper lives outside the namespace, so its pid shows as 0 here; anything
        // else means it died before the death signal was armed.
        if libc::getppid() != 0 {
            libc::_exit(1);
        }
        // Mounts made here must not propagate back to the host.
        if libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_SLAVE,
            std::ptr::null(),
        ) != 0
        {
            fail(write, STEP_MOUNT_SLAVE);
        }
        if libc::mount(
            c"proc".as_ptr(),
            c"/proc".as_ptr(),
            c"proc".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        ) != 0
        {
            fail(write, STEP_MOUNT_PROC);
        }
        name(c"toolgate-init");
        send(write, MSG_READY, 0, 0);
        close_from(0);
        libc::chdir(c"/".as_ptr());
        let pause = libc::timespec {
            tv_sec: 1,
            tv_nsec: 0,
        };
        loop {
            let mut status = 0;
            if libc::waitpid(-1, &mut status, 0) == -1 && errno() == libc::ECHILD {
                libc::nanosleep(&pause, std::ptr::null_mut());
            }
        }
    }
}

/// Arms `cmd`'s pre-exec step: the relay into the namespace, or a parent-death signal.
pub(crate) fn prepare(
    cmd: &mut tokio::process::Command,
    containment: &Containment,
    cwd: Option<CString>,
) {
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    let namespace = match containment {
        Containment::Namespace { .. } if ALIVE.load(Ordering::Acquire) => NAMESPACE.get(),
        _ => None,
    };
    match namespace {
        Some(ns) => {
            let user = ns.user.as_ref().map_or(-1, AsRawFd::as_raw_fd);
            let (mnt, pid) = (ns.mnt.as_raw_fd(), ns.pid.as_raw_fd());
            // SAFETY: the closure runs in the forked child before exec and makes only
            // async-signal-safe calls; the descriptors live in a static for the process.
            unsafe {
                cmd.pre_exec(move || relay(parent, user, mnt, pid, cwd.as_deref()));
            }
        }
        None => {
            // SAFETY: as above.
            unsafe {
                cmd.pre_exec(move || die_with_parent(parent));
            }
        }
    }
}

/// SIGKILL when the forking thread ends; refuses to run if it already has.
fn die_with_parent(parent: libc::pid_t) -> io::Result<()> {
    // SAFETY: prctl and getppid are async-signal-safe.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
            return Err(io::Error::from_raw_os_error(errno()));
        }
        if libc::getppid() != parent {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
    }
    Ok(())
}

/// In the forked child: join the namespace, fork the supervisor inside it (which forks the
/// command, which returns to exec), and stay behind as the relay, exiting with the
/// command's status once the supervisor reports it.
fn relay(parent: libc::pid_t, user: i32, mnt: i32, pid: i32, cwd: Option<&CStr>) -> io::Result<()> {
    let last = || io::Error::from_raw_os_error(errno());
    die_with_parent(parent)?;
    // SAFETY: async-signal-safe calls only, in the single-threaded forked child.
    unsafe {
        if user >= 0 && libc::setns(user, libc::CLONE_NEWUSER) != 0 {
            return Err(last());
        }
        if libc::setns(mnt, libc::CLONE_NEWNS) != 0 || libc::setns(pid, libc::CLONE_NEWPID) != 0 {
            return Err(last());
        }
        // Joining a mount namespace moves the working directory to its root.
        if let Some(cwd) = cwd
            && libc::chdir(cwd.as_ptr()) != 0
        {
            return Err(last());
        }
        ignore_signals();
        let mut status_pipe = [0; 2];
        if libc::pipe2(status_pipe.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(last());
        }
        let [read, write] = status_pipe;
        // Every signal stays blocked in the relay from here (they were ignored already);
        // the supervisor sets its own mask.
        block_all();
        let supervisor = libc::fork();
        if supervisor < 0 {
            return Err(last());
        }
        if supervisor > 0 {
            libc::close(write);
            relay_exit(read as usize)
        }
        // In the supervisor.
        libc::close(read);
        // Returns in the command only.
        supervisor::supervise(write)
    }
}

/// Blocks every signal in the calling thread.
unsafe fn block_all() {
    // SAFETY: sigfillset and sigprocmask on a local set; async-signal-safe.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::sigprocmask(libc::SIG_SETMASK, &all, std::ptr::null_mut());
    }
}

/// A descriptor as the low 32 bits of a word.
#[cfg(target_arch = "x86_64")]
fn fd_bits(fd: libc::c_int) -> usize {
    (fd as u32) as usize
}

/// The relay's last part: closes everything but `read`, the report's pipe, waits for the
/// report and exits with the command's status (re-raising its signal). Raw system calls
/// only: the relay shares its memory with the supervisor, or with toolgate (`spawner`).
unsafe fn relay_exit(read: usize) -> ! {
    use libc::{SYS_close, SYS_close_range, SYS_dup3, SYS_prctl, SYS_read};
    // SAFETY: raw system calls on our own descriptors and on buffers on this stack.
    unsafe {
        sys(
            SYS_prctl,
            libc::PR_SET_NAME as usize,
            c"toolgate-relay".as_ptr() as usize,
            0,
            0,
        );
        // The pipe's read end is never descriptor 0 (std's stdin is open there).
        sys(SYS_dup3, read, 0, 0, 0);
        if sys(SYS_close_range, 1, libc::c_uint::MAX as usize, 0, 0) != 0 {
            for fd in 1..4096 {
                sys(SYS_close, fd, 0, 0, 0);
            }
        }
        let mut bytes = [0u8; 4];
        let mut got = 0;
        while got < bytes.len() {
            let n = sys(
                SYS_read,
                0,
                bytes[got..].as_mut_ptr() as usize,
                bytes.len() - got,
                0,
            );
            match n {
                n if n > 0 => got += usize::try_from(n).unwrap_or(0),
                n if n == -libc::c_long::from(libc::EINTR) => {}
                _ => break,
            }
        }
        // No report: the supervisor was killed, and the command with it.
        let status = if got == bytes.len() {
            i32::from_le_bytes(bytes)
        } else {
            libc::SIGKILL
        };
        if libc::WIFEXITED(status) {
            // _exit makes the exit_group call and nothing else.
            libc::_exit(libc::WEXITSTATUS(status));
        }
        let signal = libc::WTERMSIG(status);
        reraise(signal);
        libc::_exit(128 + signal)
    }
}

/// Dies of `signal` (without a core dump, the command made one if any), in raw system
/// calls: the default action back, that signal alone unblocked (any other still pending
/// must not reach a handler of toolgate's, whose memory the relay may share), the signal
/// sent to ourselves.
unsafe fn reraise(signal: i32) {
    use libc::{SYS_getpid, SYS_kill, SYS_prlimit64, SYS_rt_sigaction, SYS_rt_sigprocmask};
    let Ok(number) = usize::try_from(signal) else {
        return;
    };
    let no_core = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // The kernel's sigaction, all zero: SIG_DFL, no flags, an empty mask (large enough
    // for every architecture's layout).
    let default = [0usize; 4];
    let Some(only) = number
        .checked_sub(1)
        .filter(|bit| *bit < 64)
        .map(|bit| 1u64 << bit)
    else {
        return;
    };
    // SAFETY: raw system calls on buffers on this stack.
    unsafe {
        sys(
            SYS_prlimit64,
            0,
            libc::RLIMIT_CORE as usize,
            &raw const no_core as usize,
            0,
        );
        sys(SYS_rt_sigaction, number, default.as_ptr() as usize, 0, 8);
        sys(
            SYS_rt_sigprocmask,
            libc::SIG_UNBLOCK as usize,
            &raw const only as usize,
            0,
            8,
        );
        let me = sys(SYS_getpid, 0, 0, 0, 0);
        sys(SYS_kill, usize::try_from(me).unwrap_or(0), number, 0, 0);
    }
}

/// The inner pid of the command under `leader` (the relay): relay → supervisor → command.
pub(crate) fn inner_pid_of_command(leader: i32) -> Option<i32> {
    // A relay started for the spawner has no child: its supervisor is the spawner's.
    #[cfg(target_arch = "x86_64")]
    let known = started::supervisor_of(leader);
    #[cfg(not(target_arch = "x86_64"))]
    let known = None;
    let supervisor = known.or_else(|| first_child(leader))?;
    inner_pid(first_child(supervisor)?)
}

/// The first child of host pid `pid` (the oldest: adopted orphans come after it).
fn first_child(pid: i32) -> Option<i32> {
    let listed = fs_err::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .ok()
        .and_then(|children| children.split_ascii_whitespace().next()?.parse().ok());
    // Without CONFIG_PROC_CHILDREN: a process whose parent is `pid`.
    listed.or_else(|| {
        fs_err::read_dir("/proc")
            .ok()?
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
            .find(|&child| parent_of(child) == Some(pid))
    })
}

/// The parent pid of host pid `pid`.
fn parent_of(pid: i32) -> Option<i32> {
    let stat = fs_err::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..]
        .split_ascii_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The last `NSpid` entry of host pid `pid`: its pid in its innermost namespace.
fn inner_pid(pid: i32) -> Option<i32> {
    let status = fs_err::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("NSpid:"))?;
    line.split_ascii_whitespace().last()?.parse().ok()
}

pub(crate) fn namespace_id() -> Option<u64> {
    NAMESPACE.get().map(|ns| ns.id)
}

/// The host pid of a process whose pid in our namespace is `inner`.
pub(crate) fn host_pid(inner: i32) -> Option<i32> {
    let id = namespace_id()?;
    fs_err::read_dir("/proc")
        .ok()?
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .find(|&pid| {
            fs_err::metadata(format!("/proc/{pid}/ns/pid")).is_ok_and(|m| m.ino() == id)
                && inner_pid(pid) == Some(inner)
        })
}
