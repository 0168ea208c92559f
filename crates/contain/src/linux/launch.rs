//! Starting a command without copying toolgate's memory.
//!
//! `std`'s `Command` forks as soon as a pre-exec step is asked for (the parent-death
//! signal, the sandbox): the kernel copies toolgate's page tables, toolgate then takes a
//! copy-on-write fault on every page it writes until the child's `exec`, and the exec tears
//! the copy down again. On a `run_shell true` that was about a quarter of the round trip.
//! [`launch`] starts the command the way `posix_spawn` does instead: the child shares
//! toolgate's memory (`CLONE_VM`) on a small stack of its own while the starting thread
//! sleeps (`CLONE_VFORK`), makes its few system calls and calls `exec`.
//!
//! Everything the child needs is built before the start ([`Exec`]); the child writes
//! nothing but its own stack and, when a step fails, its errno, which the starting thread
//! reads once it wakes. Signals stay blocked from before the start until just before
//! `exec`, and the child puts every handled signal back to its default first, so none of
//! toolgate's handlers runs in it. The rest of toolgate runs on meanwhile: the child takes
//! no lock and allocates nothing.
//!
//! Used in process-group containment; inside the PID namespace commands start through the
//! namespace's spawner (`spawner`), whose supervisor starts them the same way ([`Exec`]).

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicI32, Ordering};

use rustix::process::{PidfdFlags, getpid, pidfd_open};

use super::clone::{Stack, until_exec};
use super::exec::{Exec, Group, Signals};
use super::started::{Started, high, pipe, reap_orphans, stop};
use crate::sandbox::Armed;

/// Starts `program` (an absolute path) as `argv` (its first element is `$0`) in `cwd`
/// with the environment `env`: stdin `/dev/null`, stdout and stderr pipes whose read ends
/// are returned, its own process group, SIGKILLed when the starting thread ends, `sandbox`
/// entered just before exec. Call it from a thread that lives as long as toolgate.
pub(crate) fn launch(
    program: &Path,
    argv: &[&OsStr],
    cwd: &Path,
    env: &[(OsString, OsString)],
    mut sandbox: Option<Armed>,
) -> io::Result<(Started, OwnedFd, OwnedFd)> {
    reap_orphans();
    let c = |s: &[u8]| {
        CString::new(s).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "nul byte found in provided data",
            )
        })
    };
    let args: Vec<CString> = argv
        .iter()
        .map(|a| c(a.as_bytes()))
        .collect::<io::Result<_>>()?;
    let env: Vec<CString> = env
        .iter()
        .filter_map(|(k, v)| c(&[k.as_bytes(), b"=", v.as_bytes()].concat()).ok())
        .collect();
    let pointers = |strings: &[CString]| {
        let mut p: Vec<*const libc::c_char> = strings.iter().map(|s| s.as_ptr()).collect();
        p.push(std::ptr::null());
        p
    };
    let (argv, envp) = (pointers(&args), pointers(&env));
    let cwd = match cwd.is_absolute() {
        true => cwd.to_path_buf(),
        false => std::env::current_dir()?.join(cwd),
    };
    let (program, cwd) = (
        c(program.as_os_str().as_bytes())?,
        c(cwd.as_os_str().as_bytes())?,
    );
    let stdin = high(OwnedFd::from(
        fs_err::File::open("/dev/null")?.into_parts().0,
    ))?;
    let (out_read, out_write) = pipe()?;
    let (err_read, err_write) = pipe()?;
    let exec = Exec {
        program: &program,
        argv: argv.as_ptr(),
        envp: envp.as_ptr(),
        cwd: &cwd,
        stdio: [stdin.as_fd(), out_write.as_fd(), err_write.as_fd()],
        parent: getpid(),
        signals: Signals::KeepIgnored,
        group: Group::Own,
    };
    // The errno of the step that failed, set by the child just before it exits.
    let failed = AtomicI32::new(0);
    let mut stack = Stack::new()?;
    let child = || {
        let enter = || match sandbox.as_mut() {
            Some(sandbox) => sandbox
                .enter()
                .map_err(|e| e.raw_os_error().unwrap_or(libc::EPERM)),
            None => Ok(()),
        };
        // SAFETY: in the child `until_exec` starts; the arrays live in this frame.
        let errno = unsafe { exec.run(enter) };
        failed.store(
            if errno == 0 { libc::EIO } else { errno },
            Ordering::Relaxed,
        );
        127
    };
    // SAFETY: the child makes system calls on what this frame holds, which outlives it
    // (we sleep until its exec or exit), and writes nothing but `failed` and its stack.
    let pid = unsafe { until_exec(&mut stack, child) }?;
    let failed = failed.load(Ordering::Relaxed);
    if failed != 0 {
        stop(pid);
        return Err(io::Error::from_raw_os_error(failed));
    }
    let pidfd =
        match rustix::process::Pid::from_raw(pid).map(|p| pidfd_open(p, PidfdFlags::empty())) {
            Some(Ok(pidfd)) => pidfd,
            Some(Err(e)) => {
                stop(pid);
                return Err(e.into());
            }
            None => return Err(io::Error::other("clone returned no pid")),
        };
    Ok((Started::new(pid, pidfd, None)?, out_read, err_read))
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
