//! The read-only mount view of `workspace-write`: seccomp cannot tell a `chmod` inside the
//! roots from one outside (it sees no paths), but a read-only mount can. Each command gets
//! a private mount namespace in which every mount is read-only, and the writable folders
//! are bind mounts of themselves that stay writable. The kernel then answers chmod, chown,
//! utimes and attribute changes outside them with EROFS, whatever path or descriptor they
//! come through, while `chmod +x` and `touch` inside the roots work.
//!
//! The same namespace hides secrets: each hidden folder gets an empty read-only tmpfs on top,
//! each hidden file `/dev/null`, so the command reads nothing there (`read-only` builds the
//! view for this alone). Landlock cannot do it: a rule for `/` grants everything beneath.
//!
//! Runs in the child before Landlock and seccomp (both forbid mounting afterwards, which
//! also keeps the command from undoing the view): system calls only, on buffers built
//! before the start.

use std::ffi::{CStr, CString};
use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd};
use std::path::PathBuf;

use rustix::fs::CWD;
use rustix::io::Errno;
use rustix::mount::{
    MountFlags, MountPropagationFlags, MoveMountFlags, OpenTreeFlags, mount, mount_bind,
    mount_change, move_mount, open_tree,
};

/// `mount_setattr`'s read-only attribute.
const MOUNT_ATTR_RDONLY: u64 = 1;

/// `struct mount_attr` (Linux 5.12).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// What the child needs to build the view.
#[derive(Debug)]
pub(super) struct View {
    /// The writable folders (real paths), outermost first.
    paths: Vec<CString>,
    /// Folders and files (real paths) hidden under an empty mount.
    hidden: Hidden<Vec<CString>>,
    /// One slot per path for its detached copy, filled in the child.
    copies: Vec<libc::c_int>,
    /// The working directory, entered again on top of the new mounts.
    cwd: Option<CString>,
    /// `/` itself is writable: there is nothing to make read-only.
    everything: bool,
}

/// Paths a view hides: folders (under an empty tmpfs) and files (under `/dev/null`).
#[derive(Debug)]
pub(crate) struct Hidden<T> {
    pub(crate) dirs: T,
    pub(crate) files: T,
}

impl Hidden<Vec<CString>> {
    /// Real paths (the mounts go by path), sorted by kind; a path that is gone needs no
    /// hiding.
    pub(super) fn new(paths: &[PathBuf]) -> Self {
        let mut hidden = Self {
            dirs: Vec::new(),
            files: Vec::new(),
        };
        for path in paths {
            let Ok(path) = fs_err::canonicalize(path) else {
                continue;
            };
            let Ok(meta) = fs_err::metadata(&path) else {
                continue;
            };
            let Ok(c) = CString::new(path.as_os_str().as_encoded_bytes()) else {
                continue;
            };
            match meta.is_dir() {
                true => hidden.dirs.push(c),
                false => hidden.files.push(c),
            }
        }
        hidden
    }
}

/// Whether the view makes everything but the writable folders read-only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rest {
    /// Read-only: the mounts are made read-only, the writable folders bound back on top.
    ReadOnly,
    /// `/` itself is writable: nothing to make read-only, only secrets to hide.
    Writable,
}

impl View {
    /// A view that keeps `writable` writable (none in `read-only`: it hides only) and hides
    /// `hidden`.
    pub(super) fn new(writable: &[PathBuf], hidden: &[PathBuf], cwd: Option<CString>) -> Self {
        let mut sorted: Vec<&PathBuf> = writable.iter().collect();
        // A parent bound after its child would cover it: bind outer folders first.
        sorted.sort_by_key(|p| p.components().count());
        let paths: Vec<CString> = sorted
            .iter()
            .filter_map(|p| CString::new(p.as_os_str().as_encoded_bytes()).ok())
            .collect();
        Self {
            copies: vec![-1; paths.len()],
            hidden: Hidden::new(hidden),
            everything: writable.iter().any(|p| p.parent().is_none()),
            paths,
            cwd,
        }
    }

    /// In the child: enters the view. False when it could not be made (no mount
    /// namespace here, an old kernel): then metadata changes must be refused everywhere.
    pub(super) fn enter(&mut self) -> bool {
        let rest = self.rest();
        let hidden = Hidden {
            dirs: self.hidden.dirs.iter().map(CString::as_c_str).peekable(),
            files: self.hidden.files.iter().map(CString::as_c_str).peekable(),
        };
        // Iterators over what `self` holds, so nothing is allocated in the child.
        enter_paths(
            self.paths.iter().map(CString::as_c_str),
            &mut self.copies,
            hidden,
            rest,
            self.cwd.as_deref(),
        )
    }

    fn rest(&self) -> Rest {
        match self.everything {
            true => Rest::Writable,
            false => Rest::ReadOnly,
        }
    }

    /// The view for the namespace's spawner: what happens to the rest, the writable folders
    /// (outermost first), the hidden paths and the working directory.
    #[cfg(target_arch = "x86_64")]
    pub(super) fn parts(&self) -> (Rest, &[CString], &Hidden<Vec<CString>>, Option<&CString>) {
        (self.rest(), &self.paths, &self.hidden, self.cwd.as_ref())
    }
}

/// Makes the view: a private mount namespace, everything read-only but the `paths` (when
/// `rest` is [`Rest::ReadOnly`]), the `hidden` folders and files under empty mounts, then
/// `cwd` entered again. `copies` holds one slot per path (each -1 after the call). Only
/// system calls, nothing allocated: this runs in a child just before its exec. False when
/// the view could not be made.
pub(crate) fn enter_paths<'a, H: Iterator<Item = &'a CStr>>(
    paths: impl Iterator<Item = &'a CStr> + Clone,
    copies: &mut [libc::c_int],
    hidden: Hidden<std::iter::Peekable<H>>,
    rest: Rest,
    cwd: Option<&CStr>,
) -> bool {
    let Hidden {
        dirs: mut hidden_dirs,
        files: mut hidden_files,
    } = hidden;
    if rest == Rest::Writable && hidden_dirs.peek().is_none() && hidden_files.peek().is_none() {
        return true;
    }
    // SAFETY: a new mount namespace only: no descriptor table or file system information
    // is unshared, so nothing of ours goes stale.
    if unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::NEWNS) }.is_err() {
        return false;
    }
    // Nothing done here may reach the namespace it came from.
    let private = MountPropagationFlags::PRIVATE | MountPropagationFlags::REC;
    if mount_change(c"/", private).is_err() {
        return false;
    }
    let mut ok = true;
    if rest == Rest::ReadOnly {
        ok = copy_trees(paths.clone(), copies) && read_only_root();
        // The copies go back on top (or are closed, when something failed).
        ok = put_back(paths, copies, ok);
    }
    // Last, so a hidden folder inside a writable one stays hidden. A path gone since the
    // sandbox was built has nothing left to hide.
    let done = |r: rustix::io::Result<()>| matches!(r, Ok(()) | Err(Errno::NOENT));
    let flags = MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC;
    for dir in hidden_dirs {
        ok = ok && done(mount(c"tmpfs", dir, c"tmpfs", flags, None));
    }
    for file in hidden_files {
        ok = ok && done(mount_bind(c"/dev/null", file));
    }
    // The working directory still names the mount under the new ones.
    if ok && let Some(cwd) = cwd {
        ok = rustix::process::chdir(cwd).is_ok();
    }
    ok
}

/// A detached copy of each of `paths`' mount trees, into `copies` (-1 for a path gone
/// since the sandbox was built: simply not writable). False when one cannot be made.
fn copy_trees<'a>(paths: impl Iterator<Item = &'a CStr>, copies: &mut [libc::c_int]) -> bool {
    let flags = OpenTreeFlags::OPEN_TREE_CLONE
        | OpenTreeFlags::OPEN_TREE_CLOEXEC
        | OpenTreeFlags::AT_RECURSIVE;
    for (path, copy) in paths.zip(copies.iter_mut()) {
        match open_tree(CWD, path, flags) {
            Ok(fd) => *copy = fd.into_raw_fd(),
            Err(Errno::NOENT) => *copy = -1,
            Err(_) => return false,
        }
    }
    true
}

/// Every mount read-only, recursively (`mount_setattr`, Linux 5.12; not in rustix).
fn read_only_root() -> bool {
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_RDONLY,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: a NUL-terminated path and an attribute struct of the size given, on this
    // stack; the call changes mounts only.
    let set = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            c"/".as_ptr(),
            libc::AT_RECURSIVE,
            &raw const attr,
            size_of::<MountAttr>(),
        )
    };
    set == 0
}

/// Moves each copy back on top of its path when `ok`, closes every copy either way and
/// leaves its slot -1. Whether all went back.
fn put_back<'a>(
    paths: impl Iterator<Item = &'a CStr>,
    copies: &mut [libc::c_int],
    mut ok: bool,
) -> bool {
    for (path, copy) in paths.zip(copies.iter_mut()) {
        if *copy < 0 {
            continue;
        }
        // SAFETY: a descriptor `copy_trees` opened, owned here alone (its slot is cleared).
        let fd = unsafe { OwnedFd::from_raw_fd(std::mem::replace(copy, -1)) };
        ok = ok && move_mount(&fd, c"", CWD, path, MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH).is_ok();
    }
    ok
}
