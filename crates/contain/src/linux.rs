//! The Linux namespace: keeper, init, relay and supervisor (see the crate docs).
//!
//! Everything that runs in a forked child (keeper, init, relay, supervisor, the command
//! before exec) makes async-signal-safe calls only: toolgate is multi-threaded, and after
//! `fork` the child must not take locks or allocate.

use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, poll};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use rustix::mount::{MountFlags, MountPropagationFlags};
use rustix::process::Signal;
use rustix::process::{Pid, WaitOptions, getpid, getppid, waitpid};
use rustix::thread::{UnshareFlags, set_name};

use crate::Containment;

mod child;
#[cfg(target_arch = "x86_64")]
mod clone;
mod error;
#[cfg(target_arch = "x86_64")]
mod exec;
#[cfg(target_arch = "x86_64")]
pub(crate) mod launch;
mod relay;
#[cfg(target_arch = "x86_64")]
pub(crate) mod spawner;
#[cfg(target_arch = "x86_64")]
pub(crate) mod started;
mod state;
mod supervisor;

use child::{close_from, die_with_parent, exit, ignore_signals, reset_signals};
pub(crate) use error::StartError;

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
pub(crate) fn start() -> Result<bool, StartError> {
    let user = !rustix::process::geteuid().is_root();
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    // The keeper's parent-death signal follows the thread that forks it: a thread of its
    // own that never ends keeps the namespace alive exactly as long as toolgate.
    std::thread::Builder::new()
        .name("toolgate-contain".to_owned())
        .spawn(move || match fork_keeper(user) {
            Ok((keeper, init, spawner)) => {
                let _ = tx.send(Ok((init, spawner)));
                let status = wait_for(keeper);
                if state::end() {
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
        .map_err(|source| StartError::Thread { source })?;
    let (init, spawner) = rx
        .recv_timeout(START_LIMIT + Duration::from_secs(1))
        .map_err(|source| StartError::NoAnswer { source })??;
    let path = |kind: &str| PathBuf::from(format!("/proc/{init}/ns/{kind}"));
    let open = |kind: &'static str| -> Result<OwnedFd, StartError> {
        let path = path(kind);
        match fs_err::File::open(&path) {
            Ok(file) => Ok(OwnedFd::from(file)),
            Err(source) => Err(StartError::OpenNamespace { kind, path, source }),
        }
    };
    let pid = open("pid")?;
    let id = match fs_err::metadata(path("pid")) {
        Ok(metadata) => metadata.ino(),
        Err(source) => {
            let path = path("pid");
            return Err(StartError::ReadNamespace { path, source });
        }
    };
    let namespace = state::Namespace {
        user: if user { Some(open("user")?) } else { None },
        mnt: open("mnt")?,
        pid,
        id,
        spawner,
    };
    if !state::set(namespace) {
        return Err(StartError::StartedTwice);
    }
    Ok(user)
}

/// Reaps our child `pid`; returns its wait status.
fn wait_for(pid: Pid) -> i32 {
    loop {
        match waitpid(Some(pid), WaitOptions::empty()) {
            Err(Errno::INTR) => {}
            Ok(Some((_, status))) => return status.as_raw(),
            Ok(None) | Err(_) => return libc::SIGKILL,
        }
    }
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

/// What the keeper needs, all of it built before the fork.
struct Keeper<'a> {
    /// The report's pipe to the starting thread.
    write: OwnedFd,
    /// toolgate's pid: the keeper refuses to run if it already has another parent.
    parent: Pid,
    /// Whether to make a user namespace too, and its uid and gid maps.
    user: bool,
    uid_map: &'a [u8],
    gid_map: &'a [u8],
    /// The spawner's end of its socket, when the spawner is built.
    served: Option<OwnedFd>,
}

/// Forks the keeper and waits for its report; returns the keeper's and the init's pids and
/// toolgate's end of the spawner's socket (none where the spawner is not built).
fn fork_keeper(user: bool) -> Result<(Pid, i32, Option<OwnedFd>), StartError> {
    let (uid, gid) = (rustix::process::geteuid(), rustix::process::getegid());
    let uid_map = format!("{0} {0} 1\n", uid.as_raw()).into_bytes();
    let gid_map = format!("{0} {0} 1\n", gid.as_raw()).into_bytes();
    let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
        .map_err(|source| StartError::Pipe { source })?;
    #[cfg(target_arch = "x86_64")]
    let (spawner, served) = match spawner::socket_pair() {
        Ok((ours, theirs)) => (Some(ours), Some(theirs)),
        Err(_) => (None, None),
    };
    #[cfg(not(target_arch = "x86_64"))]
    let (spawner, served): (Option<OwnedFd>, Option<OwnedFd>) = (None, None);
    let keeper = Keeper {
        write,
        parent: getpid(),
        user,
        uid_map: &uid_map,
        gid_map: &gid_map,
        served,
    };
    // SAFETY: the child runs `keeper_main`, which makes async-signal-safe calls only and
    // never returns.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        drop(read);
        keeper_main(keeper)
    }
    drop(keeper);
    if pid < 0 {
        let source = std::io::Error::last_os_error();
        return Err(StartError::Fork { source });
    }
    let Some(pid) = Pid::from_raw(pid) else {
        return Err(StartError::NoPid);
    };
    match read_reports(&read) {
        Ok(init) => Ok((pid, init, spawner)),
        Err(e) => {
            // It is ours and not reaped yet, so the kill cannot miss.
            let _ = rustix::process::kill_process(pid, Signal::KILL);
            wait_for(pid);
            Err(e)
        }
    }
}

/// Reads the keeper's and the init's messages until the namespace is ready.
fn read_reports(read: &OwnedFd) -> Result<i32, StartError> {
    let mut init = None;
    let mut ready = false;
    let deadline = std::time::Instant::now() + START_LIMIT;
    while !(ready && init.is_some()) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let left = rustix::event::Timespec::try_from(left).unwrap_or(rustix::event::Timespec {
            tv_sec: 10,
            tv_nsec: 0,
        });
        let mut fds = [PollFd::new(read, PollFlags::IN)];
        match poll(&mut fds, Some(&left)) {
            Ok(0) => return Err(StartError::NotReady),
            Err(Errno::INTR) => continue,
            Err(source) => return Err(StartError::Poll { source }),
            Ok(_) => {}
        }
        let mut msg = [0u8; 8];
        let n = rustix::io::read(read, &mut msg).map_err(|source| StartError::Read { source })?;
        if n == 0 {
            return Err(StartError::KeeperExited);
        }
        if n != 8 {
            return Err(StartError::ShortReport { bytes: n });
        }
        let value = i32::from_le_bytes([msg[4], msg[5], msg[6], msg[7]]);
        match msg[0] {
            MSG_INIT_PID => init = Some(value),
            MSG_READY => ready = true,
            MSG_FAILED => {
                let source = std::io::Error::from_raw_os_error(value);
                let step = describe_step(msg[1]);
                return Err(StartError::Step { step, source });
            }
            tag => return Err(StartError::UnknownReport { tag }),
        }
    }
    init.ok_or(StartError::NoInit)
}

/// What the keeper or the init failed to do at `step`, and what usually refuses it.
fn describe_step(step: u8) -> &'static str {
    match step {
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
    }
}

/// Writes the 8-byte message `tag, step, value` to `fd`. A failed write leaves the reader
/// at the pipe's end, which it reports.
fn send(fd: &OwnedFd, tag: u8, step: u8, value: i32) {
    let v = value.to_le_bytes();
    let _ = rustix::io::write(fd, &[tag, step, 0, 0, v[0], v[1], v[2], v[3]]);
}

/// Reports a failed step with its errno and exits the forked child.
fn fail(fd: &OwnedFd, step: u8, error: Errno) -> ! {
    send(fd, MSG_FAILED, step, error.raw_os_error());
    exit(1)
}

/// Writes `data` to the file at `path` (for uid_map and friends).
fn write_file(path: &CStr, data: &[u8]) -> Result<(), Errno> {
    let fd = rustix::fs::open(path, OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty())?;
    match rustix::io::write(&fd, data)? == data.len() {
        true => Ok(()),
        false => Err(Errno::IO),
    }
}

/// The keeper, in the forked child: unshares the namespaces, forks their init, then serves
/// as the spawner (or only waits) until the init is gone.
fn keeper_main(keeper: Keeper<'_>) -> ! {
    let write = &keeper.write;
    if let Err(e) = rustix::process::set_parent_process_death_signal(Some(Signal::KILL)) {
        fail(write, STEP_PDEATHSIG, e);
    }
    if getppid() != Some(keeper.parent) {
        exit(1)
    }
    // Names for `ps` only: nothing depends on them.
    let _ = set_name(c"toolgate-keeper");
    reset_signals();
    // The keeper shares toolgate's process group, so a signal to the group (Ctrl-C in a
    // terminal, a client stopping the server's group) reached it too and ended the
    // namespace before toolgate's own handler ran its clean shutdown. It ends with
    // toolgate through its parent-death signal (SIGKILL) instead; the init inherits the
    // dispositions, and a namespace's init ignores such signals anyway.
    ignore_signals();
    let mut flags = UnshareFlags::NEWPID | UnshareFlags::NEWNS;
    if keeper.user {
        flags |= UnshareFlags::NEWUSER;
    }
    // SAFETY: new PID, mount and user namespaces; no descriptor table or file system
    // information is unshared, so nothing of ours goes stale.
    if let Err(e) = unsafe { rustix::thread::unshare_unsafe(flags) } {
        fail(write, STEP_UNSHARE, e);
    }
    if keeper.user {
        // Needed before gid_map without privilege; absent on old kernels.
        let _ = write_file(c"/proc/self/setgroups", b"deny");
        if let Err(e) = write_file(c"/proc/self/uid_map", keeper.uid_map) {
            fail(write, STEP_UID_MAP, e);
        }
        if let Err(e) = write_file(c"/proc/self/gid_map", keeper.gid_map) {
            fail(write, STEP_GID_MAP, e);
        }
    }
    // SAFETY: a fork of this single-threaded child; the init makes async-signal-safe
    // calls only and never returns.
    let init = unsafe { libc::fork() };
    if init == 0 {
        init_main(write)
    }
    if init < 0 {
        fail(write, STEP_FORK, Errno::from_raw_os_error(child::errno()));
    }
    send(write, MSG_INIT_PID, 0, init);
    #[cfg(target_arch = "x86_64")]
    if let Some(served) = keeper.served {
        spawner::serve(served, init)
    }
    // SAFETY: the keeper is a process of its own and uses no descriptor from here.
    unsafe { close_from(0) };
    wait_for(Pid::from_raw(init).unwrap_or(Pid::INIT));
    exit(0)
}

/// PID 1 of the namespace: a private `/proc`, then reaping orphans until it is killed.
fn init_main(write: &OwnedFd) -> ! {
    if let Err(e) = rustix::process::set_parent_process_death_signal(Some(Signal::KILL)) {
        fail(write, STEP_PDEATHSIG, e);
    }
    // The keeper lives outside the namespace, so its pid shows as 0 here; anything else
    // means it died before the death signal was armed.
    if getppid().is_some() {
        exit(1)
    }
    // Mounts made here must not propagate back to the host.
    let slave = MountPropagationFlags::DOWNSTREAM | MountPropagationFlags::REC;
    if let Err(e) = rustix::mount::mount_change(c"/", slave) {
        fail(write, STEP_MOUNT_SLAVE, e);
    }
    let flags = MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC;
    if let Err(e) = rustix::mount::mount(c"proc", c"/proc", c"proc", flags, None) {
        fail(write, STEP_MOUNT_PROC, e);
    }
    // A name for `ps` only.
    let _ = set_name(c"toolgate-init");
    send(write, MSG_READY, 0, 0);
    // SAFETY: the init is a process of its own and uses no descriptor from here.
    unsafe { close_from(0) };
    // Only so that no folder of the host stays busy; the init works anywhere.
    let _ = rustix::process::chdir(c"/");
    let pause = rustix::event::Timespec {
        tv_sec: 1,
        tv_nsec: 0,
    };
    loop {
        if let Err(Errno::CHILD) = rustix::process::wait(WaitOptions::empty()) {
            let _ = rustix::thread::nanosleep(&pause);
        }
    }
}

/// Arms `cmd`'s pre-exec step: the relay into the namespace, or a parent-death signal.
pub(crate) fn prepare(
    cmd: &mut tokio::process::Command,
    containment: &Containment,
    cwd: Option<CString>,
) {
    let parent = getpid();
    let namespace = match containment {
        Containment::Namespace { .. } => state::namespace(),
        _ => None,
    };
    let joined = namespace.map(|ns| relay::Joined {
        user: ns.user.as_ref().map(AsFd::as_fd),
        mnt: ns.mnt.as_fd(),
        pid: ns.pid.as_fd(),
    });
    // SAFETY: the closure runs in the forked child before exec and makes only
    // async-signal-safe calls; the descriptors live in a static for the process.
    unsafe {
        cmd.pre_exec(move || match joined {
            Some(joined) => relay::relay(parent, joined, cwd.as_deref()),
            None => die_with_parent(parent),
        });
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
    state::id()
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
