//! Starting a command in the namespace without copying toolgate.
//!
//! A relay that is a `fork` of toolgate makes the kernel copy toolgate's page tables,
//! toolgate take a copy-on-write fault on every page it writes while the command runs, and
//! the copy be torn down after it: about a millisecond of a 3–4 ms `run_shell true`. So
//! the keeper, a small process forked when the namespace was made and already inside its
//! user and mount namespaces (new children land in its PID namespace), is also the
//! *spawner*:
//! - toolgate starts the relay in its own memory (`clone::beside`): it dies with the
//!   starting thread, leads its own process group, waits for the command's status on a
//!   pipe and exits with it (`relay::relay_main`), with every signal blocked (no handler of
//!   toolgate's ever runs in it). It is outside the namespace, so no command can see it,
//!   let alone reach toolgate's memory through it;
//! - toolgate sends the spawner a request over a socket: the relay's pid and seven
//!   descriptors (the command line, folder, environment and sandbox in a memfd, stdin, the
//!   two output pipes, the status pipe, the exec pipe, the sandbox's Landlock ruleset);
//! - the spawner joins the relay's group for the length of one `fork` and goes back to its
//!   own: the child, the command's *supervisor* (see `supervisor`), is born inside the PID
//!   namespace and in the relay's group (`serve`);
//! - the supervisor starts the command vfork-style; the command takes its descriptors and
//!   folder, enters the sandbox if there is one (the mount view, Landlock, seccomp:
//!   `sandbox::enter_encoded`) and calls `exec`. The supervisor then goes on as before: it
//!   kills what left the group when the command ends and reports the status.
//!
//! toolgate learns how the start went from the exec pipe: the spawner writes the
//! supervisor's pid, a failing step its errno, and the pipe reaches its end once the
//! command has called `exec` (every other copy is closed by then).

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::Path;

use rustix::net::{AddressFamily, SocketFlags, SocketType, socketpair};
use rustix::process::Signal;
use rustix::process::{Pid, PidfdFlags, getpid, kill_process_group, pidfd_open, setpgid};

use super::clone::{Stack, beside};
use super::relay::relay_main;
use super::started::{Started, pipe, reap_orphans, remember, stop};
use crate::sandbox::Armed;

mod request;
mod serve;

use request::{CARRIED, RECORD_ERRNO, RECORD_SUPERVISOR, send};

pub(super) use serve::serve;

/// Whether commands can start through the spawner now: the namespace is alive, and the
/// kernel has pidfds and `close_range` (the relay must close toolgate's descriptors
/// without a call that can fail).
pub(crate) fn available() -> bool {
    super::state::namespace().is_some_and(|ns| ns.spawner.is_some())
        && super::started::available()
        && super::child::close_range_available()
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
    let socket = super::state::namespace()
        .and_then(|ns| ns.spawner.as_ref())
        .ok_or_else(|| io::Error::from_raw_os_error(libc::ESRCH))?;
    reap_orphans();
    let cwd = match cwd.is_absolute() {
        true => cwd.to_path_buf(),
        false => std::env::current_dir()?.join(cwd),
    };
    let (request, ruleset) = request::write(program, argv, &cwd, env, sandbox)?;
    let (status_read, status_write) = pipe()?;
    let (relay, pidfd, stack) = start_relay(&status_read)?;
    drop(status_read);
    let started = Started::new(relay.as_raw_pid(), pidfd, Some(stack))?;
    let stdin = OwnedFd::from(fs_err::File::open("/dev/null")?.into_parts().0);
    let (out_read, out_write) = pipe()?;
    let (err_read, err_write) = pipe()?;
    let (exec_read, exec_write) = pipe()?;
    let carried: [BorrowedFd<'_>; CARRIED] = [
        request.as_fd(),
        stdin.as_fd(),
        out_write.as_fd(),
        err_write.as_fd(),
        status_write.as_fd(),
        exec_write.as_fd(),
        ruleset.map_or(stdin.as_fd(), AsFd::as_fd),
    ];
    // From here the command may be running: any way out but success stops its group.
    let stop_group = |e: io::Error| {
        // `started` keeps the relay, and with it its group id, from being reused; a group
        // already gone needs no stopping.
        let _ = kill_process_group(relay, Signal::KILL);
        e
    };
    send(socket, relay.as_raw_pid(), &carried)?;
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
    while read_record(&mut exec_read, &mut record).map_err(stop_group)? {
        let value = i32::from_le_bytes([record[4], record[5], record[6], record[7]]);
        match record[0] {
            RECORD_SUPERVISOR => supervisor = Some(value),
            RECORD_ERRNO => failed = Some(value),
            _ => failed = Some(libc::EIO),
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
    remember(relay.as_raw_pid(), supervisor);
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

/// Starts the relay in toolgate's memory on a stack of its own, in a process group of its
/// own: it waits for the status on `status` (its copy of the descriptor) and exits with it.
/// Its pid, a pidfd of it, and the stack to unmap once it is reaped.
fn start_relay(status: &OwnedFd) -> io::Result<(Pid, OwnedFd, Stack)> {
    let mut stack = Stack::new()?;
    let (read, parent) = (status.as_raw_fd(), getpid());
    // SAFETY: `relay_main` owns what it uses (two numbers), makes rustix calls and libc
    // calls that cannot fail only (`close_from` included: `available` checked that
    // `close_range` exists), and exits; `stack` is kept until the relay is reaped
    // (`Started`).
    let pid = unsafe { beside(&mut stack, move || relay_main(read, parent)) }?;
    let Some(relay) = Pid::from_raw(pid) else {
        return Err(io::Error::other("clone returned no pid"));
    };
    // Its group from here too (it makes it as well), so that it exists when the spawner
    // joins it; and a pidfd to wait for it by.
    let watched =
        setpgid(Some(relay), Some(relay)).and_then(|()| pidfd_open(relay, PidfdFlags::empty()));
    match watched {
        Ok(pidfd) => Ok((relay, pidfd, stack)),
        Err(e) => {
            // Reaped before its stack is unmapped.
            stop(pid);
            Err(e.into())
        }
    }
}

/// A socket pair for toolgate and the spawner: toolgate's end, the keeper's end.
pub(super) fn socket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(socketpair(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::CLOEXEC,
        None,
    )?)
}
