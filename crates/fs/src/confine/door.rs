//! The descriptor layer under [`super::Roots`]: every open, create, rename, mkdir and
//! directory read a tool does goes through here, relative to a directory descriptor, and
//! none of it follows a symlink.
//!
//! Why not follow symlinks at all: the path handed to these functions is already the *real*
//! path below a root (resolved and checked by [`super::Roots`]), so it holds no symlink. A
//! symlink met now was swapped in since (a race), and following it could lead anywhere.
//! On Linux the open is one `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//! RESOLVE_NO_MAGICLINKS`; where `openat2` is missing (kernels before 5.6, or a seccomp
//! filter that refuses it) the same walk is done one component at a time with `openat` and
//! `O_NOFOLLOW`, which the kernel checks per component.

use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};
use std::sync::atomic::{AtomicU8, Ordering};

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, ResolveFlags};

/// Whether `openat2` works here: 0 not yet known, 1 yes, 2 no (fall back to `openat`).
static OPENAT2: AtomicU8 = AtomicU8::new(0);

/// Flags every open gets: no controlling terminal, closed on exec.
const BASE: OFlags = OFlags::CLOEXEC.union(OFlags::NOCTTY);

/// `flags` with [`BASE`]; `O_PATH` takes only `O_CLOEXEC` (openat2 refuses the rest).
fn with_base(flags: OFlags) -> OFlags {
    if flags.contains(OFlags::PATH) {
        flags | OFlags::CLOEXEC
    } else {
        flags | BASE
    }
}

/// Opens `rel` (a relative path without `..` or symlinks) below the directory `base`, never
/// following a symlink and never leaving `base`. An empty `rel` opens `base` itself again.
pub(crate) fn open_beneath(base: BorrowedFd<'_>, rel: &Path, flags: OFlags) -> io::Result<OwnedFd> {
    check_rel(rel)?;
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    if OPENAT2.load(Ordering::Relaxed) != 2 {
        match openat2_beneath(base, rel, flags) {
            Ok(fd) => {
                OPENAT2.store(1, Ordering::Relaxed);
                return Ok(fd);
            }
            Err(e) if openat2_missing(&e) && OPENAT2.load(Ordering::Relaxed) != 1 => {
                OPENAT2.store(2, Ordering::Relaxed);
            }
            Err(e) => return Err(e),
        }
    }
    open_by_components(base, rel, flags)
}

#[cfg(target_os = "linux")]
fn openat2_beneath(base: BorrowedFd<'_>, rel: &Path, flags: OFlags) -> io::Result<OwnedFd> {
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    loop {
        // openat2 refuses a mode without O_CREAT; nothing here creates through it.
        match rustix::fs::openat2(base, rel, with_base(flags), Mode::empty(), resolve) {
            // EAGAIN: a rename elsewhere on the system raced the lookup; the kernel asks
            // for a retry.
            Err(rustix::io::Errno::AGAIN | rustix::io::Errno::INTR) => {}
            other => return other.map_err(io::Error::from),
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn openat2_beneath(_: BorrowedFd<'_>, _: &Path, _: OFlags) -> io::Result<OwnedFd> {
    Err(io::Error::from_raw_os_error(libc::ENOSYS))
}

/// Opens the entry `name` of the open folder `dir` (one component: no `/`, not `.` or
/// `..`) without following it if it is a symlink. For a single component this is what
/// [`open_beneath`] guarantees, at the price of a plain `openat`: a name read from `dir`
/// cannot lead out of it, and `O_NOFOLLOW` refuses the one symlink the path could hold.
/// The walk opens every file and folder this way, relative to the folder it listed it in,
/// which spares the kernel the scoped lookup (`path_init`, `path_is_under`) of `openat2`.
pub(crate) fn open_child(dir: BorrowedFd<'_>, name: &OsStr, flags: OFlags) -> io::Result<OwnedFd> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes == b"." || bytes == b".." || bytes.contains(&b'/') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{}` is not one entry of a folder", name.to_string_lossy()),
        ));
    }
    Ok(rustix::fs::openat(
        dir,
        name,
        with_base(flags | OFlags::NOFOLLOW),
        Mode::empty(),
    )?)
}

/// An opened descriptor as a file that names `path` in its errors.
#[allow(
    clippy::disallowed_types,
    reason = "the descriptor comes from openat; fs_err::File is built around it"
)]
pub(crate) fn file(fd: OwnedFd, path: impl Into<std::path::PathBuf>) -> fs_err::File {
    fs_err::File::from_parts(std::fs::File::from(fd), path)
}

/// Whether an `openat2` error means the call itself is unavailable.
fn openat2_missing(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSYS) | Some(libc::EPERM))
}

/// The fallback of [`open_beneath`]: one `openat` per component, each with `O_NOFOLLOW`
/// (folders also with `O_DIRECTORY`), so no symlink is followed anywhere on the way.
pub(crate) fn open_by_components(
    base: BorrowedFd<'_>,
    rel: &Path,
    flags: OFlags,
) -> io::Result<OwnedFd> {
    check_rel(rel)?;
    let parts: Vec<&OsStr> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(p) => Some(p),
            _ => None,
        })
        .collect();
    let Some((last, dirs)) = parts.split_last() else {
        return Ok(rustix::fs::openat(
            base,
            ".",
            with_base(flags),
            Mode::empty(),
        )?);
    };
    let mut held: Option<OwnedFd> = None;
    for part in dirs {
        let at = held.as_ref().map_or(base, AsFd::as_fd);
        let next = rustix::fs::openat(
            at,
            *part,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        held = Some(next);
    }
    let at = held.as_ref().map_or(base, AsFd::as_fd);
    Ok(rustix::fs::openat(
        at,
        *last,
        with_base(flags | OFlags::NOFOLLOW),
        Mode::empty(),
    )?)
}

/// Refuses paths that are not plain relative paths (the callers never build such paths; a
/// bug must not turn into an escape).
fn check_rel(rel: &Path) -> io::Result<()> {
    let plain = rel
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if plain {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{}` is not a plain relative path", rel.display()),
        ))
    }
}

/// Opens (creating when missing) each folder of `rel` below `base`, one component at a
/// time without following symlinks, and returns the last one. A component that is a
/// symlink or a file fails the call.
pub(crate) fn make_dirs_beneath(base: BorrowedFd<'_>, rel: &Path) -> io::Result<OwnedFd> {
    check_rel(rel)?;
    let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | BASE;
    let mut held: OwnedFd = rustix::fs::openat(base, ".", dir_flags, Mode::empty())?;
    for part in rel.components().filter_map(|c| match c {
        Component::Normal(p) => Some(p),
        _ => None,
    }) {
        let next = match rustix::fs::openat(&held, part, dir_flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => {
                match rustix::fs::mkdirat(&held, part, Mode::from_raw_mode(0o777)) {
                    Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                    Err(e) => return Err(e.into()),
                }
                rustix::fs::openat(&held, part, dir_flags, Mode::empty())?
            }
            Err(e) => return Err(e.into()),
        };
        held = next;
    }
    Ok(held)
}

/// One entry of a folder read through its descriptor.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// The name, as raw bytes.
    pub(crate) name: Vec<u8>,
    /// The type the folder reports (never followed through a symlink).
    pub(crate) kind: Kind,
}

/// What an entry is, without following symlinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A folder.
    Dir,
    /// A regular file.
    File,
    /// A symlink.
    Symlink,
    /// A FIFO, socket or device.
    Other,
}

impl Kind {
    fn of(t: FileType) -> Option<Self> {
        Some(match t {
            FileType::Directory => Self::Dir,
            FileType::RegularFile => Self::File,
            FileType::Symlink => Self::Symlink,
            FileType::Unknown => return None,
            _ => Self::Other,
        })
    }
}

/// Reads every entry of the open folder `dir` (without `.` and `..`), up to `max` entries;
/// returns the entries and whether more were left unread. An entry whose type the file
/// system does not report is looked up with `fstatat(AT_SYMLINK_NOFOLLOW)`.
pub(crate) fn read_entries(dir: &OwnedFd, max: usize) -> io::Result<(Vec<Entry>, bool)> {
    let reader = rustix::fs::openat(
        dir,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | BASE,
        Mode::empty(),
    )?;
    let mut stream = Dir::new(reader)?;
    let mut out = Vec::new();
    for entry in stream.by_ref() {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        if out.len() >= max {
            return Ok((out, true));
        }
        let kind = match Kind::of(entry.file_type()) {
            Some(kind) => kind,
            None => stat_kind(dir.as_fd(), OsStr::from_bytes(name)).unwrap_or(Kind::Other),
        };
        out.push(Entry {
            name: name.to_vec(),
            kind,
        });
    }
    Ok((out, false))
}

/// Bytes one `getdents64` call may fill when a walk reads a folder: glibc's `readdir`, which
/// ripgrep's walker reads folders through, uses 32 KiB; rustix's `Dir` starts at 768 bytes
/// and grows, which costs small folders several calls.
pub(crate) const DIR_BUF_BYTES: usize = 32 * 1024;

/// Calls `each` with the name and type of every entry of the open folder `dir` (without `.`
/// and `..`), reading `getdents64` into `buf` ([`DIR_BUF_BYTES`] is a good size). Reads from
/// the descriptor's current position and moves it: pass a descriptor opened for this read
/// (the walk reads each folder it opens once). An entry whose type the file system does not
/// report is looked up with `fstatat(AT_SYMLINK_NOFOLLOW)`.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn each_entry(
    dir: BorrowedFd<'_>,
    buf: &mut [std::mem::MaybeUninit<u8>],
    mut each: impl FnMut(&[u8], Kind),
) -> io::Result<()> {
    let mut stream = rustix::fs::RawDir::new(dir, buf);
    while let Some(entry) = stream.next() {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        let kind = match Kind::of(entry.file_type()) {
            Some(kind) => kind,
            None => stat_kind(dir, OsStr::from_bytes(name)).unwrap_or(Kind::Other),
        };
        each(name, kind);
    }
    Ok(())
}

/// [`each_entry`] where `getdents64` is not available: through rustix's `Dir` (which reads a
/// fresh descriptor of its own).
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(crate) fn each_entry(
    dir: BorrowedFd<'_>,
    _buf: &mut [std::mem::MaybeUninit<u8>],
    mut each: impl FnMut(&[u8], Kind),
) -> io::Result<()> {
    for entry in Dir::read_from(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        let kind = match Kind::of(entry.file_type()) {
            Some(kind) => kind,
            None => stat_kind(dir, OsStr::from_bytes(name)).unwrap_or(Kind::Other),
        };
        each(name, kind);
    }
    Ok(())
}

/// The type of `name` in `dir`, not following a symlink.
pub(crate) fn stat_kind(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<Kind> {
    let st = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
    Ok(Kind::of(FileType::from_raw_mode(st.st_mode)).unwrap_or(Kind::Other))
}

/// `fstatat(AT_SYMLINK_NOFOLLOW)` of `name` in `dir`.
pub(crate) fn stat_at(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<rustix::fs::Stat> {
    Ok(rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?)
}

/// The target of the symlink `name` in `dir`.
pub(crate) fn read_link_at(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<Vec<u8>> {
    Ok(rustix::fs::readlinkat(dir, name, Vec::new())?.into_bytes())
}

/// Reads the whole regular file `name` in `dir` (not through a symlink), at most `max`
/// bytes; `None` when it is missing or not a regular file.
pub(crate) fn read_small_file(dir: BorrowedFd<'_>, name: &Path, max: u64) -> Option<Vec<u8>> {
    let fd = open_beneath(dir, name, OFlags::RDONLY | OFlags::NONBLOCK).ok()?;
    let file = self::file(fd, name);
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > max {
        return None;
    }
    let mut out = Vec::with_capacity(meta.len() as usize);
    io::Read::read_to_end(&mut io::Read::take(&file, max), &mut out).ok()?;
    Some(out)
}

/// Creates a new file `name` in `dir` (`O_EXCL`, never through a symlink) with `mode`.
pub(crate) fn create_new(dir: BorrowedFd<'_>, name: &OsStr, mode: u32) -> io::Result<fs_err::File> {
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | BASE,
        Mode::from_raw_mode(mode),
    )?;
    Ok(file(fd, Path::new(name)))
}

/// Renames `from` to `to`, both in `dir`.
pub(crate) fn rename_in(dir: BorrowedFd<'_>, from: &OsStr, to: &OsStr) -> io::Result<()> {
    Ok(rustix::fs::renameat(dir, from, dir, to)?)
}

/// Removes the file `name` in `dir`.
pub(crate) fn remove_in(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<()> {
    Ok(rustix::fs::unlinkat(dir, name, AtFlags::empty())?)
}

/// Flushes a folder's entries to disk (after a rename in it).
pub(crate) fn sync_dir(dir: BorrowedFd<'_>) {
    let _ = rustix::fs::fsync(dir);
}

/// Opens the folder at the absolute path `dir`, refusing any symlink on the way.
pub(crate) fn open_dir_no_symlinks(dir: &Path) -> io::Result<OwnedFd> {
    let rel = dir.strip_prefix("/").map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{}` is not an absolute path", dir.display()),
        )
    })?;
    let slash = rustix::fs::openat(
        rustix::fs::CWD,
        "/",
        OFlags::RDONLY | OFlags::DIRECTORY | BASE,
        Mode::empty(),
    )?;
    open_beneath(slash.as_fd(), rel, OFlags::RDONLY | OFlags::DIRECTORY)
}

/// Opens the file `name` in the folder at the absolute real path `dir` for reading
/// (non-blocking, so a FIFO cannot hang the caller), following no symlink anywhere: not on
/// `dir`'s path, not `name`. For callers outside this crate that keep the real path of a
/// file they found earlier (the `skill` tool) and must not be led elsewhere by a symlink
/// swapped in since: the open fails instead (`ELOOP`, `EXDEV` or `ENOTDIR`, see
/// [`is_swapped`]).
pub fn open_file_no_symlinks(dir: &Path, name: &Path) -> io::Result<fs_err::File> {
    let base = open_dir_no_symlinks(dir)?;
    let fd = open_beneath(base.as_fd(), name, OFlags::RDONLY | OFlags::NONBLOCK)?;
    Ok(file(fd, dir.join(name)))
}

/// Whether an open failed because a symlink (or a non-folder) sits where the real path had
/// a folder: the tree changed since the path was resolved.
pub fn is_swapped(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ELOOP) | Some(libc::EXDEV) | Some(libc::ENOTDIR)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_component_fallback_refuses_symlinks_on_the_way() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path();
        fs_err::create_dir_all(base.join("root/real")).unwrap();
        fs_err::create_dir_all(base.join("outside")).unwrap();
        fs_err::write(base.join("root/real/f.txt"), "in").unwrap();
        fs_err::write(base.join("outside/f.txt"), "out").unwrap();
        std::os::unix::fs::symlink(base.join("outside"), base.join("root/link")).unwrap();
        std::os::unix::fs::symlink("real/f.txt", base.join("root/file_link")).unwrap();
        let root = open_dir_no_symlinks(&base.join("root")).unwrap();
        for open in [open_by_components, open_beneath] {
            let ok = open(root.as_fd(), Path::new("real/f.txt"), OFlags::RDONLY).unwrap();
            let mut text = String::new();
            io::Read::read_to_string(&mut file(ok, "f.txt"), &mut text).unwrap();
            assert_eq!(text, "in");
            for bad in ["link/f.txt", "file_link"] {
                let err = open(root.as_fd(), Path::new(bad), OFlags::RDONLY).unwrap_err();
                assert!(is_swapped(&err), "{bad}: {err}");
            }
            for escape in ["../outside/f.txt", "/etc/hostname"] {
                assert!(open(root.as_fd(), Path::new(escape), OFlags::RDONLY).is_err());
            }
        }
        // One entry of a folder: never through a symlink, never more than one component.
        let real = open_child(root.as_fd(), OsStr::new("real"), OFlags::RDONLY).unwrap();
        assert!(open_child(real.as_fd(), OsStr::new("f.txt"), OFlags::RDONLY).is_ok());
        for bad in ["link", "file_link"] {
            let err = open_child(root.as_fd(), OsStr::new(bad), OFlags::RDONLY).unwrap_err();
            assert!(is_swapped(&err), "{bad}: {err}");
        }
        for bad in ["", ".", "..", "real/f.txt", "/etc"] {
            assert!(open_child(root.as_fd(), OsStr::new(bad), OFlags::RDONLY).is_err());
        }
        assert!(make_dirs_beneath(root.as_fd(), Path::new("link/new")).is_err());
        assert!(!base.join("outside/new").exists());
        make_dirs_beneath(root.as_fd(), Path::new("real/a/b")).unwrap();
        assert!(base.join("root/real/a/b").is_dir());
    }
}
