//! stdin and stdout read and written by the runtime itself where they are pipes or sockets.
//!
//! tokio's `stdin()` and `stdout()` work on any file, a terminal included, by handing every
//! read and write to a blocking thread: each request then reaches a worker through one
//! thread wake-up and each reply leaves through another. A pipe or socket (what every MCP
//! client connects through) can be made non-blocking and watched by the runtime's `epoll`
//! like any socket, so a message goes from the descriptor to the worker that handles it
//! with no hand-over. Anything else keeps tokio's blocking streams, and so does stdout when
//! it is the same file as stderr (the log), whose writes must not meet `EAGAIN`.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::{FileType, fstat};
use tokio::io::{AsyncRead, AsyncWrite};

/// stdin and stdout as the transport reads and writes them.
pub(super) struct Stdio {
    pub input: Box<dyn AsyncRead + Unpin + Send>,
    pub output: Box<dyn AsyncWrite + Unpin + Send>,
    /// Makes them blocking again when dropped.
    pub restore: Restore,
}

/// Which standard descriptors were made non-blocking: blocking again when this is dropped
/// (the session ended), for whoever shares them (the next program of a shell pipeline).
#[derive(Default)]
pub(super) struct Restore {
    stdin: bool,
    stdout: bool,
}

impl Drop for Restore {
    fn drop(&mut self) {
        if self.stdin {
            let _ = rustix::io::ioctl_fionbio(io::stdin(), false);
        }
        if self.stdout {
            let _ = rustix::io::ioctl_fionbio(io::stdout(), false);
        }
    }
}

impl Stdio {
    /// This process's stdin and stdout. Must run inside the runtime.
    pub fn open() -> Self {
        let mut restore = Restore::default();
        let stdin = watched(io::stdin().as_fd());
        restore.stdin = stdin.is_some();
        let input: Box<dyn AsyncRead + Unpin + Send> = match stdin {
            Some(Watched::Pipe(fd)) => match tokio::net::unix::pipe::Receiver::from_owned_fd(fd) {
                Ok(pipe) => Box::new(pipe),
                Err(e) => blocking_stdin(&e),
            },
            Some(Watched::Socket(fd)) => match socket(fd) {
                Ok(socket) => Box::new(socket),
                Err(e) => blocking_stdin(&e),
            },
            None => Box::new(tokio::io::stdin()),
        };
        let stdout = io::stdout();
        let output: Box<dyn AsyncWrite + Unpin + Send> =
            if same_file(stdout.as_fd(), io::stderr().as_fd()) {
                Box::new(tokio::io::stdout())
            } else {
                let watched = watched(stdout.as_fd());
                restore.stdout = watched.is_some();
                match watched {
                    Some(Watched::Pipe(fd)) => {
                        match tokio::net::unix::pipe::Sender::from_owned_fd(fd) {
                            Ok(pipe) => Box::new(pipe),
                            Err(e) => blocking_stdout(&e),
                        }
                    }
                    Some(Watched::Socket(fd)) => match socket(fd) {
                        Ok(socket) => Box::new(socket),
                        Err(e) => blocking_stdout(&e),
                    },
                    None => Box::new(tokio::io::stdout()),
                }
            };
        Self {
            input,
            output,
            restore,
        }
    }
}

/// A descriptor the runtime can watch, duplicated (the stream owns the copy; the standard
/// descriptor stays open).
enum Watched {
    Pipe(OwnedFd),
    Socket(OwnedFd),
}

/// `fd` duplicated, when it is a pipe or a socket.
fn watched(fd: BorrowedFd<'_>) -> Option<Watched> {
    let kind = FileType::from_raw_mode(fstat(fd).ok()?.st_mode);
    if kind != FileType::Fifo && kind != FileType::Socket {
        return None;
    }
    let copy = fd.try_clone_to_owned().ok()?;
    Some(if kind == FileType::Fifo {
        Watched::Pipe(copy)
    } else {
        Watched::Socket(copy)
    })
}

/// A socket descriptor as a non-blocking stream of the runtime.
fn socket(fd: OwnedFd) -> io::Result<tokio::net::UnixStream> {
    let socket = std::os::unix::net::UnixStream::from(fd);
    socket.set_nonblocking(true)?;
    tokio::net::UnixStream::from_std(socket)
}

/// Whether two descriptors are the same file (stdout and stderr after `2>&1`).
fn same_file(a: BorrowedFd<'_>, b: BorrowedFd<'_>) -> bool {
    match (fstat(a), fstat(b)) {
        (Ok(a), Ok(b)) => a.st_dev == b.st_dev && a.st_ino == b.st_ino,
        _ => false,
    }
}

fn blocking_stdin(e: &io::Error) -> Box<dyn AsyncRead + Unpin + Send> {
    tracing::debug!(%e, "stdin is read on a blocking thread");
    Box::new(tokio::io::stdin())
}

fn blocking_stdout(e: &io::Error) -> Box<dyn AsyncWrite + Unpin + Send> {
    tracing::debug!(%e, "stdout is written on a blocking thread");
    Box::new(tokio::io::stdout())
}
