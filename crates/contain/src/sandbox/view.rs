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
//! Runs in the forked child before Landlock and seccomp (both forbid mounting afterwards,
//! which also keeps the command from undoing the view): raw system calls only, on buffers
//! built before the fork.

use std::ffi::CString;
use std::path::PathBuf;

use crate::linux::split::{sys, sys5};

/// `open_tree`'s copy of a mount tree (not attached anywhere).
const OPEN_TREE_CLONE: libc::c_uint = 1;
/// `move_mount`'s source is the descriptor itself.
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 4;
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

    /// In the forked child: enters the view. False when it could not be made (no mount
    /// namespace here, an old kernel): then metadata changes must be refused everywhere.
    pub(super) fn enter(&mut self) -> bool {
        let cwd = self.cwd.as_ref().map_or(std::ptr::null(), |c| c.as_ptr());
        let rest = self.rest();
        let hidden = Hidden {
            dirs: self.hidden.dirs.iter().map(pointer).peekable(),
            files: self.hidden.files.iter().map(pointer).peekable(),
        };
        // SAFETY: NUL-terminated strings that live in `self`; one slot per path. Iterators
        // over them, so nothing is allocated in the child.
        #[allow(unsafe_code)]
        unsafe {
            enter_paths(
                self.paths.iter().map(|p| p.as_ptr()),
                &mut self.copies,
                hidden,
                rest,
                cwd,
            )
        }
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

fn pointer(c: &CString) -> *const libc::c_char {
    c.as_ptr()
}

/// Makes the view: a private mount namespace, everything read-only but the `paths` (when
/// `rest` is [`Rest::ReadOnly`]), the `hidden` folders and files under empty mounts, then
/// `cwd` (may be null) entered again. `copies` holds one slot per path. Raw system calls
/// only ([`sys`]): this also runs in a command that shares its supervisor's memory and
/// `errno`, and nothing is allocated. False when the view could not be made.
///
/// # Safety
/// Every pointer is a NUL-terminated string that outlives the call; `copies` is at least
/// as long as `paths`.
#[allow(unsafe_code)]
pub(crate) unsafe fn enter_paths<H: Iterator<Item = *const libc::c_char>>(
    paths: impl Iterator<Item = *const libc::c_char> + Clone,
    copies: &mut [libc::c_int],
    hidden: Hidden<std::iter::Peekable<H>>,
    rest: Rest,
    cwd: *const libc::c_char,
) -> bool {
    use libc::{
        SYS_chdir, SYS_close, SYS_mount, SYS_mount_setattr, SYS_move_mount, SYS_open_tree,
        SYS_unshare,
    };
    let Hidden {
        dirs: mut hidden_dirs,
        files: mut hidden_files,
    } = hidden;
    if rest == Rest::Writable && hidden_dirs.peek().is_none() && hidden_files.peek().is_none() {
        return true;
    }
    // SAFETY: the caller's contract; the descriptors are closed before return.
    unsafe {
        if sys(SYS_unshare, libc::CLONE_NEWNS as usize, 0, 0, 0) != 0 {
            return false;
        }
        // Nothing done here may reach the namespace it came from (mount's fifth argument,
        // the data, is null).
        if sys5(
            SYS_mount,
            0,
            c"/".as_ptr() as usize,
            0,
            (libc::MS_REC | libc::MS_PRIVATE) as usize,
            0,
        ) != 0
        {
            return false;
        }
        let mut ok = true;
        if rest == Rest::ReadOnly {
            for (path, copy) in paths.clone().zip(copies.iter_mut()) {
                let fd = sys(
                    SYS_open_tree,
                    libc::AT_FDCWD as usize,
                    path as usize,
                    (OPEN_TREE_CLONE
                        | libc::O_CLOEXEC as libc::c_uint
                        | libc::AT_RECURSIVE as libc::c_uint) as usize,
                    0,
                );
                match fd {
                    fd if fd >= 0 => *copy = fd as libc::c_int,
                    // Gone since the sandbox was built: simply not writable.
                    e if e == -libc::c_long::from(libc::ENOENT) => *copy = -1,
                    _ => {
                        *copy = -1;
                        ok = false;
                        break;
                    }
                }
            }
            let attr = MountAttr {
                attr_set: MOUNT_ATTR_RDONLY,
                attr_clr: 0,
                propagation: 0,
                userns_fd: 0,
            };
            ok = ok
                && sys5(
                    SYS_mount_setattr,
                    libc::AT_FDCWD as usize,
                    c"/".as_ptr() as usize,
                    libc::AT_RECURSIVE as usize,
                    &raw const attr as usize,
                    std::mem::size_of::<MountAttr>(),
                ) == 0;
            for (path, copy) in paths.zip(copies.iter_mut()) {
                if *copy < 0 {
                    continue;
                }
                ok = ok
                    && sys5(
                        SYS_move_mount,
                        *copy as usize,
                        c"".as_ptr() as usize,
                        libc::AT_FDCWD as usize,
                        path as usize,
                        MOVE_MOUNT_F_EMPTY_PATH as usize,
                    ) == 0;
                sys(SYS_close, *copy as usize, 0, 0, 0);
                *copy = -1;
            }
        }
        // Last, so a hidden folder inside a writable one stays hidden. A path gone since
        // the sandbox was built has nothing left to hide.
        let done = |ret: libc::c_long| ret == 0 || ret == -libc::c_long::from(libc::ENOENT);
        let flags = libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
        for dir in hidden_dirs {
            let tmpfs = c"tmpfs".as_ptr() as usize;
            ok = ok
                && done(sys5(
                    SYS_mount,
                    tmpfs,
                    dir as usize,
                    tmpfs,
                    flags as usize,
                    0,
                ));
        }
        for file in hidden_files {
            let null = c"/dev/null".as_ptr() as usize;
            let bind = libc::MS_BIND as usize;
            ok = ok && done(sys5(SYS_mount, null, file as usize, 0, bind, 0));
        }
        // The working directory still names the mount under the new ones.
        if ok && !cwd.is_null() {
            ok = sys(SYS_chdir, cwd as usize, 0, 0, 0) == 0;
        }
        ok
    }
}
