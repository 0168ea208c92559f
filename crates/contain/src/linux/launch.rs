//! Starting a command without copying toolgate's memory (issue 27).
//!
//! `std`'s `Command` forks as soon as a pre-exec step is asked for (the parent-death
//! signal, the sandbox): the kernel copies toolgate's page tables, toolgate then takes a
//! copy-on-write fault on every page it writes until the child's `exec`, and the exec tears
//! the copy down again. On a `run_shell true` that was about a quarter of the round trip.
//! [`launch`] starts the command the way `posix_spawn` does instead: the child shares
//! toolgate's memory (`CLONE_VM`) on a small stack of its own while the starting thread
//! sleeps (`CLONE_VFORK`), makes its few system calls and calls `exec`.
//!
//! Everything the child needs is built before the start ([`Prepared`]); the child writes
//! nothing but its own stack and, when a step fails, [`Prepared::error`], which the starting
//! thread reads once it wakes. Signals stay blocked from before the start until just before
//! `exec`, and the child puts every handled signal back to its default first, so none of
//! toolgate's handlers runs in it. The rest of toolgate runs on meanwhile: the child takes
//! no lock and allocates nothing.
//!
//! Used in process-group containment; inside the PID namespace the relay stays a `fork`
//! (it outlives the start, so it cannot share toolgate's memory safely).

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::split::{Share, clone_on};
use super::started::{Stack, Started, high, pipe, reap_orphans, wait_blocking};
use super::{RESETTABLE, errno};
use crate::sandbox::Armed;

/// What the child needs, all of it built before the start.
struct Prepared {
    path: CString,
    /// NULL-terminated pointers into `strings`.
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    cwd: CString,
    /// The child's stdin, stdout and stderr (all 3 or higher, close-on-exec).
    stdio: [libc::c_int; 3],
    /// toolgate's pid: the child refuses to run if it already has another parent.
    parent: libc::pid_t,
    sandbox: Option<Armed>,
    /// The errno of the step that failed, written by the child just before it exits.
    error: libc::c_int,
}

/// Starts `program` (an absolute path) as `argv` (its first element is `$0`) in `cwd`
/// with the environment `env`: stdin `/dev/null`, stdout and stderr pipes whose read ends
/// are returned, its own process group, SIGKILLed when the starting thread ends, `sandbox`
/// entered just before exec. Call it from a thread that lives as long as toolgate.
pub(crate) fn launch(
    program: &Path,
    argv: &[&OsStr],
    cwd: &Path,
    env: &[(OsString, OsString)],
    sandbox: Option<Armed>,
) -> io::Result<(Started, OwnedFd, OwnedFd)> {
    reap_orphans();
    let c = |s: &OsStr| {
        CString::new(s.as_bytes()).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "nul byte found in provided data",
            )
        })
    };
    let args: Vec<CString> = argv.iter().map(|a| c(a)).collect::<io::Result<_>>()?;
    let env: Vec<CString> = env
        .iter()
        .filter_map(|(k, v)| {
            let mut kv = k.as_encoded_bytes().to_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_encoded_bytes());
            CString::new(kv).ok()
        })
        .collect();
    let pointers = |strings: &[CString]| {
        let mut p: Vec<*const libc::c_char> = strings.iter().map(|s| s.as_ptr()).collect();
        p.push(std::ptr::null());
        p
    };
    let cwd = match cwd.is_absolute() {
        true => cwd.to_path_buf(),
        false => std::env::current_dir()?.join(cwd),
    };
    let stdin = high(OwnedFd::from(
        fs_err::File::open("/dev/null")?.into_parts().0,
    ))?;
    let (out_read, out_write) = pipe()?;
    let (err_read, err_write) = pipe()?;
    let mut prepared = Prepared {
        path: c(program.as_os_str())?,
        argv: pointers(&args),
        envp: pointers(&env),
        cwd: c(cwd.as_os_str())?,
        stdio: [
            stdin.as_raw_fd(),
            out_write.as_raw_fd(),
            err_write.as_raw_fd(),
        ],
        // SAFETY: getpid has no preconditions.
        parent: unsafe { libc::getpid() },
        sandbox,
        error: 0,
    };
    let stack = Stack::new()?;
    // SAFETY: every signal is blocked in this thread around the start (restored after);
    // the child runs `child_main` on `stack`, touches only `prepared` and its stack, and
    // ends in exec or _exit before this thread goes on. `prepared` outlives the start.
    let pid = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let pid = clone_on(
            Share::UntilExec,
            stack.top(),
            child_main,
            &raw mut prepared as usize,
        );
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        pid
    };
    drop(stack);
    if pid < 0 {
        return Err(io::Error::from_raw_os_error(
            i32::try_from(-pid).unwrap_or(libc::EAGAIN),
        ));
    }
    let pid = i32::try_from(pid).map_err(|_| io::Error::other("pid out of range"))?;
    if prepared.error != 0 {
        wait_blocking(pid);
        return Err(io::Error::from_raw_os_error(prepared.error));
    }
    drop(prepared);
    // SAFETY: pidfd_open of our own child, not yet reaped (nobody waits for it but us).
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if pidfd < 0 {
        let e = io::Error::last_os_error();
        // SAFETY: kill and wait for our own child.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        wait_blocking(pid);
        return Err(e);
    }
    // SAFETY: a fresh descriptor we own.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd as libc::c_int) };
    Ok((Started::new(pid, pidfd, None)?, out_read, err_read))
}

/// The child, on its own stack: never returns.
unsafe extern "C" fn child_main(arg: usize) -> ! {
    // SAFETY: `arg` is the `Prepared` the sleeping parent keeps alive; nothing else uses it
    // until the parent wakes.
    unsafe {
        let prepared = &mut *(arg as *mut Prepared);
        let error = prepared.start();
        prepared.error = if error == 0 { libc::EIO } else { error };
        libc::_exit(127)
    }
}

impl Prepared {
    /// In the child: the steps `std` takes before exec, then exec. Returns only when a
    /// step failed, with its errno.
    unsafe fn start(&mut self) -> libc::c_int {
        // SAFETY: system calls on what `self` holds; the caller's contract.
        unsafe {
            // No toolgate handler may run here; ignored signals stay ignored.
            for sig in RESETTABLE {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, std::ptr::null(), &mut old) == 0
                    && old.sa_sigaction != libc::SIG_IGN
                    && old.sa_sigaction != libc::SIG_DFL
                {
                    libc::signal(sig, libc::SIG_DFL);
                }
            }
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            for (target, fd) in self.stdio.iter().enumerate() {
                if libc::dup2(*fd, target as libc::c_int) < 0 {
                    return errno();
                }
            }
            if libc::chdir(self.cwd.as_ptr()) != 0 {
                return errno();
            }
            if libc::setpgid(0, 0) != 0 {
                return errno();
            }
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return errno();
            }
            if libc::getppid() != self.parent {
                return libc::ESRCH;
            }
            if let Some(sandbox) = &mut self.sandbox
                && let Err(e) = sandbox.enter()
            {
                return e.raw_os_error().unwrap_or(libc::EPERM);
            }
            let mut empty: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut empty);
            libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
            libc::execve(self.path.as_ptr(), self.argv.as_ptr(), self.envp.as_ptr());
            errno()
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;

    use super::*;

    /// Everything the pipe holds until the child closes it.
    fn drain(fd: OwnedFd) -> String {
        let mut text = String::new();
        std::io::PipeReader::from(fd)
            .read_to_string(&mut text)
            .unwrap();
        text
    }

    fn start(argv: &[&str], cwd: &Path) -> io::Result<(Started, OwnedFd, OwnedFd)> {
        let argv: Vec<&OsStr> = argv.iter().map(OsStr::new).collect();
        launch(Path::new("/bin/sh"), &argv, cwd, &[], None)
    }

    #[test]
    fn this_kernel_can_launch() {
        // CI runs on Linux 5.3 or later: without pidfds every start would fork again.
        assert!(super::super::started::available());
    }

    #[tokio::test]
    async fn a_launched_program_runs_in_its_folder_and_its_exit_is_reported() {
        let dir = fs_err::canonicalize(std::env::temp_dir()).unwrap();
        let (mut started, stdout, stderr) = start(
            &["sh", "-c", "echo \"$0 $(pwd)\"; echo e >&2; exit 7"],
            &dir,
        )
        .unwrap();
        assert_eq!(drain(stdout).trim(), format!("sh {}", dir.display()));
        assert_eq!(drain(stderr), "e\n");
        assert_eq!(started.wait().await.unwrap().code(), Some(7));
        // The status is kept: a second wait answers at once.
        assert_eq!(started.wait().await.unwrap().code(), Some(7));

        let (mut started, _, _) = start(&["sh", "-c", "kill -TERM $$"], &dir).unwrap();
        assert_eq!(started.wait().await.unwrap().signal(), Some(libc::SIGTERM));
    }

    #[tokio::test]
    async fn a_start_that_fails_says_why() {
        let missing = Path::new("/nonexistent-toolgate-folder");
        let e = start(&["sh", "-c", "true"], missing).err().unwrap();
        assert_eq!(e.raw_os_error(), Some(libc::ENOENT), "{e}");
        let argv = [OsStr::new("x")];
        let e = launch(
            Path::new("/nonexistent-program"),
            &argv,
            Path::new("/"),
            &[],
            None,
        )
        .err()
        .unwrap();
        assert_eq!(e.raw_os_error(), Some(libc::ENOENT), "{e}");
    }
}
