//! The read-only mount view of `workspace-write`: seccomp cannot tell a `chmod` inside the
//! roots from one outside (it sees no paths), but a read-only mount can. Each command gets
//! a private mount namespace in which every mount is read-only, and the writable folders
//! are bind mounts of themselves that stay writable. The kernel then answers chmod, chown,
//! utimes and attribute changes outside them with EROFS, whatever path or descriptor they
//! come through, while `chmod +x` and `touch` inside the roots work.
//!
//! Runs in the forked child before Landlock and seccomp (both forbid mounting afterwards,
//! which also keeps the command from undoing the view): raw system calls only, on buffers
//! built before the fork.

use std::ffi::CString;
use std::path::PathBuf;

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
    /// One slot per path for its detached copy, filled in the child.
    copies: Vec<libc::c_int>,
    /// The working directory, entered again on top of the new mounts.
    cwd: Option<CString>,
    /// `/` itself is writable: there is nothing to make read-only.
    everything: bool,
}

impl View {
    /// A view that keeps `writable` writable.
    pub(super) fn new(writable: &[PathBuf], cwd: Option<CString>) -> Self {
        let mut sorted: Vec<&PathBuf> = writable.iter().collect();
        // A parent bound after its child would cover it: bind outer folders first.
        sorted.sort_by_key(|p| p.components().count());
        let paths: Vec<CString> = sorted
            .iter()
            .filter_map(|p| CString::new(p.as_os_str().as_encoded_bytes()).ok())
            .collect();
        Self {
            copies: vec![-1; paths.len()],
            everything: writable.iter().any(|p| p.parent().is_none()),
            paths,
            cwd,
        }
    }

    /// In the forked child: enters the view. False when it could not be made (no mount
    /// namespace here, an old kernel): then metadata changes must be refused everywhere.
    pub(super) fn enter(&mut self) -> bool {
        if self.everything {
            return true;
        }
        // SAFETY: raw system calls on NUL-terminated strings and a struct that live in
        // `self`; descriptors are closed before return.
        #[allow(unsafe_code)]
        unsafe {
            if libc::unshare(libc::CLONE_NEWNS) != 0 {
                return false;
            }
            // Nothing done here may reach the namespace it came from.
            if libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) != 0
            {
                return false;
            }
            let mut ok = true;
            for (path, copy) in self.paths.iter().zip(self.copies.iter_mut()) {
                let fd = libc::syscall(
                    libc::SYS_open_tree,
                    libc::AT_FDCWD,
                    path.as_ptr(),
                    OPEN_TREE_CLONE
                        | libc::O_CLOEXEC as libc::c_uint
                        | libc::AT_RECURSIVE as libc::c_uint,
                );
                match fd {
                    fd if fd >= 0 => *copy = fd as libc::c_int,
                    // Gone since the sandbox was built: simply not writable.
                    _ if errno() == libc::ENOENT => *copy = -1,
                    _ => {
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
                && libc::syscall(
                    libc::SYS_mount_setattr,
                    libc::AT_FDCWD,
                    c"/".as_ptr(),
                    libc::AT_RECURSIVE as libc::c_uint,
                    &attr as *const MountAttr,
                    std::mem::size_of::<MountAttr>(),
                ) == 0;
            for (path, copy) in self.paths.iter().zip(self.copies.iter_mut()) {
                if *copy < 0 {
                    continue;
                }
                ok = ok
                    && libc::syscall(
                        libc::SYS_move_mount,
                        *copy,
                        c"".as_ptr(),
                        libc::AT_FDCWD,
                        path.as_ptr(),
                        MOVE_MOUNT_F_EMPTY_PATH,
                    ) == 0;
                libc::close(*copy);
                *copy = -1;
            }
            // The working directory still names the read-only mount under the new ones.
            if ok && let Some(cwd) = &self.cwd {
                ok = libc::chdir(cwd.as_ptr()) == 0;
            }
            ok
        }
    }
}

fn errno() -> i32 {
    // SAFETY: errno is thread-local and always readable.
    #[allow(unsafe_code)]
    unsafe {
        *libc::__errno_location()
    }
}
