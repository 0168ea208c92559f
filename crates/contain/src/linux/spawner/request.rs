//! The request toolgate sends the spawner ([`send`], [`receive`]): the relay's pid and seven
//! descriptors, among them a memfd with the command, written by toolgate ([`write()`]) and
//! read by the supervisor straight from a mapping of it ([`Command::read`]), which
//! allocates nothing.
//!
//! Layout: `argc`, `envc` and whether a sandbox follows (u32, little-endian), then
//! NUL-terminated `program`, `cwd`, the arguments and the `KEY=value` strings, then the
//! sandbox ([`Armed::encode`]).

use std::ffi::{CStr, OsStr, OsString};
use std::io::{self, IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{MemfdFlags, memfd_create};
use rustix::io::Errno;
use rustix::mm::{MapFlags, ProtFlags, mmap, mmap_anonymous};
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, ReturnFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, recvmsg, sendmsg,
};

use crate::sandbox::Armed;

/// Descriptors a request carries, in this order.
pub(super) const MEMFD: usize = 0;
pub(super) const STDIN: usize = 1;
pub(super) const STDOUT: usize = 2;
pub(super) const STDERR: usize = 3;
pub(super) const STATUS: usize = 4;
pub(super) const EXEC: usize = 5;
/// The sandbox's Landlock ruleset (stdin again when there is none).
pub(super) const LANDLOCK: usize = 6;
pub(super) const CARRIED: usize = 7;

/// Records on the exec pipe: 8 bytes, a tag and a value (atomic on a pipe).
pub(super) const RECORD_SUPERVISOR: u8 = b'S';
pub(super) const RECORD_ERRNO: u8 = b'E';

/// Sends a request on `socket`: the relay's pid and the descriptors, in one message
/// (toolgate to the spawner, and the spawner on to a supervisor). Nothing allocated.
pub(super) fn send(
    socket: &OwnedFd,
    relay: i32,
    fds: &[BorrowedFd<'_>; CARRIED],
) -> rustix::io::Result<()> {
    let header = relay.to_le_bytes();
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(CARRIED))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !control.push(SendAncillaryMessage::ScmRights(fds)) {
        return Err(Errno::TOOBIG);
    }
    loop {
        let iov = [IoSlice::new(&header)];
        match sendmsg(socket, &iov, &mut control, SendFlags::NOSIGNAL) {
            Ok(_) => return Ok(()),
            Err(Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
}

/// What [`receive`] found on the socket.
pub(super) enum Received {
    /// The peer closed its end (or the socket failed).
    Closed,
    /// Nothing yet (interrupted, or nothing to read).
    Nothing,
    /// A message: its relay's pid, and the descriptors it carried (ours until dropped;
    /// `None` in each slot when the message was not whole).
    Request(i32, [Option<OwnedFd>; CARRIED]),
}

/// Receives one request sent by [`send`]; nothing allocated (the keeper and supervisors
/// are forked children).
pub(super) fn receive(socket: &OwnedFd) -> Received {
    let mut header = [0u8; 4];
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(CARRIED))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let received = recvmsg(
        socket,
        &mut [IoSliceMut::new(&mut header)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC,
    );
    let message = match received {
        Ok(message) if message.bytes == 0 => return Received::Closed,
        Ok(message) => message,
        Err(Errno::INTR | Errno::AGAIN) => return Received::Nothing,
        Err(_) => return Received::Closed,
    };
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
    if !whole {
        fds = Default::default();
    }
    Received::Request(i32::from_le_bytes(header), fds)
}

/// All `CARRIED` descriptors of a whole request, or `None`.
pub(super) fn whole(fds: &[Option<OwnedFd>; CARRIED]) -> Option<[BorrowedFd<'_>; CARRIED]> {
    if fds.iter().any(Option::is_none) {
        return None;
    }
    // Never used: every slot holds a descriptor (checked above).
    let stdin = rustix::stdio::stdin();
    Some(std::array::from_fn(|i| {
        fds[i].as_ref().map_or(stdin, AsFd::as_fd)
    }))
}

/// Writes the command line, environment, folder and sandbox into a memfd. Also returns
/// the sandbox's Landlock ruleset, which the request carries.
pub(super) fn write<'a>(
    program: &Path,
    argv: &[&OsStr],
    cwd: &Path,
    env: &[(OsString, OsString)],
    sandbox: Option<&'a Armed>,
) -> io::Result<(OwnedFd, Option<&'a OwnedFd>)> {
    let count = |n: usize| u32::try_from(n).map_err(|_| io::Error::from_raw_os_error(libc::E2BIG));
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&count(argv.len())?.to_le_bytes());
    bytes.extend_from_slice(&count(env.len())?.to_le_bytes());
    bytes.extend_from_slice(&u32::from(sandbox.is_some()).to_le_bytes());
    let strings = [program.as_os_str(), cwd.as_os_str()]
        .into_iter()
        .chain(argv.iter().copied());
    for s in strings.map(OsStr::as_bytes) {
        if s.contains(&0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "nul byte found in provided data",
            ));
        }
        bytes.extend_from_slice(s);
        bytes.push(0);
    }
    // The command's environment, written straight in (`environ` holds no NUL).
    for (key, value) in env {
        bytes.extend_from_slice(key.as_bytes());
        bytes.push(b'=');
        bytes.extend_from_slice(value.as_bytes());
        bytes.push(0);
    }
    let ruleset = sandbox.and_then(|armed| armed.encode(&mut bytes));
    let fd = memfd_create(c"toolgate-command", MemfdFlags::CLOEXEC)?;
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

/// A request's command, pointing into a mapping of its memfd. The mappings stay for the
/// life of the supervisor, which reads them (its memory goes with it).
pub(super) struct Command {
    pub(super) program: &'static CStr,
    pub(super) cwd: &'static CStr,
    /// NULL-terminated arrays of pointers into the mapping.
    pub(super) argv: *const *const libc::c_char,
    pub(super) envp: *const *const libc::c_char,
    /// The encoded sandbox ([`Armed::encode`]), when there is one.
    pub(super) sandbox: Option<&'static [u8]>,
}

impl Command {
    /// Maps the memfd and points into it (two mappings, nothing allocated); `None` if it
    /// is malformed or cannot be mapped.
    pub(super) fn read(memfd: BorrowedFd<'_>) -> Option<Self> {
        let len = usize::try_from(rustix::fs::fstat(memfd).ok()?.st_size).ok()?;
        if len < 12 {
            return None;
        }
        // SAFETY: a fresh private read-only mapping of the whole memfd, which nothing
        // writes any more (toolgate wrote it before sending it) and nothing unmaps.
        let bytes = unsafe {
            let base = mmap(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ,
                MapFlags::PRIVATE,
                memfd,
                0,
            )
            .ok()?;
            std::slice::from_raw_parts(base.cast::<u8>(), len)
        };
        Self::parse(bytes)
    }

    /// Points into `bytes`, the mapped request, through a fresh table of pointers.
    fn parse(bytes: &'static [u8]) -> Option<Self> {
        let word = |at: usize| -> Option<usize> {
            let b = bytes.get(at..at + 4)?;
            usize::try_from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])).ok()
        };
        let (argc, envc, sandboxed) = (word(0)?, word(4)?, word(8)? != 0);
        let table = pointer_table(argc.checked_add(envc)?.checked_add(2)?)?;
        let mut rest = bytes.get(12..)?;
        let mut next = || -> Option<&'static CStr> {
            let s = CStr::from_bytes_until_nul(rest).ok()?;
            rest = rest.get(s.to_bytes_with_nul().len()..)?;
            Some(s)
        };
        let program = next()?;
        let cwd = next()?;
        let (args, env) = table.split_at_mut(argc + 1);
        for strings in [args, env] {
            let (last, slots) = strings.split_last_mut()?;
            for slot in slots {
                slot.write(next()?.as_ptr());
            }
            last.write(std::ptr::null());
        }
        let (args, env) = table.split_at(argc + 1);
        Some(Self {
            program,
            cwd,
            argv: args.as_ptr().cast(),
            envp: env.as_ptr().cast(),
            sandbox: sandboxed.then_some(rest),
        })
    }
}

/// A fresh mapping of `len` pointers, never unmapped (it goes with the supervisor).
fn pointer_table(len: usize) -> Option<&'static mut [MaybeUninit<*const libc::c_char>]> {
    let bytes = len.checked_mul(size_of::<*const libc::c_char>())?;
    // SAFETY: a fresh anonymous mapping of `bytes` bytes, which nothing else refers to;
    // `MaybeUninit` asks nothing of its contents.
    unsafe {
        let base = mmap_anonymous(
            std::ptr::null_mut(),
            bytes,
            ProtFlags::READ | ProtFlags::WRITE,
            MapFlags::PRIVATE,
        )
        .ok()?;
        Some(std::slice::from_raw_parts_mut(base.cast(), len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_request_reads_back_with_its_arguments_and_environment() {
        let argv = ["sh", "-c", "echo hi"].map(OsStr::new);
        let env = [(OsString::from("A"), OsString::from("b=c"))];
        let (fd, ruleset) =
            write(Path::new("/bin/sh"), &argv, Path::new("/tmp"), &env, None).unwrap();
        assert!(ruleset.is_none());
        let command = Command::read(std::os::fd::AsFd::as_fd(&fd)).unwrap();
        assert_eq!(command.program, c"/bin/sh");
        assert_eq!(command.cwd, c"/tmp");
        assert!(command.sandbox.is_none());
        // SAFETY: NULL-terminated arrays of NUL-terminated strings, just parsed.
        let strings = |table: *const *const libc::c_char| unsafe {
            let mut out = Vec::new();
            let mut at = table;
            while !(*at).is_null() {
                out.push(CStr::from_ptr(*at).to_str().unwrap().to_owned());
                at = at.add(1);
            }
            out
        };
        assert_eq!(strings(command.argv), ["sh", "-c", "echo hi"]);
        assert_eq!(strings(command.envp), ["A=b=c"]);
    }

    #[test]
    fn a_truncated_request_is_refused() {
        let mut bytes = Vec::new();
        for word in [2u32, 0, 0] {
            bytes.extend_from_slice(&word.to_le_bytes());
        }
        bytes.extend_from_slice(b"/bin/sh\0/\0only-one\0");
        assert!(Command::parse(bytes.leak()).is_none());
    }
}
