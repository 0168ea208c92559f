//! A sandbox ready to enter ([`Armed`]) and entering it in the child, just before exec:
//! the mount view, Landlock, seccomp. Also its encoding for the namespace's spawner, whose
//! supervisor cannot allocate an `Armed` of its own ([`Armed::encode`], [`enter_encoded`]).
//!
//! The child may share its starter's memory until its exec (the starter sleeping), so
//! entering allocates nothing and frees nothing: system calls on what was built before.

use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use landlock::RulesetCreated;

use super::{seccomp, view};

/// A sandbox ready to enter ([`Sandbox::armed`](super::Sandbox::armed)): the mount view,
/// the Landlock ruleset and the seccomp programs, all built before the start.
#[derive(Debug)]
pub(crate) struct Armed {
    view: Option<view::View>,
    landlock: Landlock,
    programs: seccomp::Programs,
}

/// The Landlock part of an [`Armed`] sandbox.
#[derive(Debug)]
enum Landlock {
    /// Nothing for Landlock to enforce (a network-only sandbox on a kernel without it).
    None,
    /// The ruleset to restrict the child with.
    Ruleset(OwnedFd),
    /// The kernel enforces none of the rules: the child must not start.
    NotEnforced,
}

/// Writable folders (and hidden folders, and hidden files) a sandbox entered by the
/// namespace's spawner may have (its command keeps them on its stack); a sandbox with more
/// starts through the relay.
#[cfg(target_arch = "x86_64")]
pub(crate) const SPAWNER_VIEW_PATHS: usize = 64;

// The encoding of an [`Armed`] sandbox for the namespace's spawner: little-endian u32s and
// NUL-terminated strings.
#[cfg(target_arch = "x86_64")]
const VIEW_NONE: u32 = 0;
#[cfg(target_arch = "x86_64")]
const VIEW_EVERYTHING: u32 = 1;
#[cfg(target_arch = "x86_64")]
const VIEW_PATHS: u32 = 2;
const LANDLOCK_NONE: u32 = 0;
const LANDLOCK_RULESET: u32 = 1;
const LANDLOCK_NOT_ENFORCED: u32 = 2;

impl Armed {
    /// The sandbox made of `view`, Landlock's `ruleset` (none when Landlock has nothing to
    /// enforce) and the seccomp `programs`.
    pub(super) fn new(
        view: Option<view::View>,
        ruleset: Option<RulesetCreated>,
        programs: seccomp::Programs,
    ) -> Self {
        let landlock = match ruleset {
            None => Landlock::None,
            // The crate keeps no descriptor when the kernel enforces none of the rules.
            Some(created) => {
                Option::<OwnedFd>::from(created).map_or(Landlock::NotEnforced, Landlock::Ruleset)
            }
        };
        Self {
            view,
            landlock,
            programs,
        }
    }

    /// In the child, just before exec: enters the mount view, Landlock and seccomp, in
    /// that order (both forbid mounting afterwards, which also keeps the command from
    /// undoing the view). System calls on what `self` holds only: no allocation, nothing
    /// freed, so it may run in a child that shares toolgate's memory until its exec.
    pub(crate) fn enter(&mut self) -> std::io::Result<()> {
        let viewed = self.view.as_mut().is_some_and(view::View::enter);
        let landlock = match &self.landlock {
            Landlock::None => (LANDLOCK_NONE, None),
            Landlock::Ruleset(fd) => (LANDLOCK_RULESET, Some(fd.as_fd())),
            Landlock::NotEnforced => (LANDLOCK_NOT_ENFORCED, None),
        };
        let [inside_view, plain, openat2] = self.programs.parts();
        restrict(landlock, inside_view, plain, openat2, viewed)
            .map_err(std::io::Error::from_raw_os_error)
    }
}

#[cfg(target_arch = "x86_64")]
impl Armed {
    /// Whether the namespace's spawner can enter this sandbox ([`Armed::encode`]).
    pub(crate) fn fits_the_spawner(&self) -> bool {
        self.view.as_ref().is_none_or(|view| {
            let (_, paths, hidden, _) = view.parts();
            [paths, &hidden.dirs, &hidden.files]
                .iter()
                .all(|list| list.len() <= SPAWNER_VIEW_PATHS)
        })
    }

    /// Appends this sandbox to `out`, a request the namespace's spawner maps at a page
    /// boundary (programs are aligned to 8 bytes of it, so in memory too), for
    /// [`enter_encoded`]. Returns the
    /// Landlock ruleset's descriptor, which the request must carry.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) -> Option<&OwnedFd> {
        let number = |out: &mut Vec<u8>, n: usize| {
            out.extend_from_slice(&u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes());
        };
        let string = |out: &mut Vec<u8>, s: &CString| out.extend_from_slice(s.as_bytes_with_nul());
        let list = |out: &mut Vec<u8>, items: &[CString]| {
            number(out, items.len());
            for item in items {
                string(out, item);
            }
        };
        match self.view.as_ref().map(view::View::parts) {
            None => number(out, VIEW_NONE as usize),
            Some((rest, paths, hidden, cwd)) => {
                let kind = match rest {
                    view::Rest::Writable => VIEW_EVERYTHING,
                    view::Rest::ReadOnly => VIEW_PATHS,
                };
                number(out, kind as usize);
                list(out, paths);
                list(out, &hidden.dirs);
                list(out, &hidden.files);
                number(out, usize::from(cwd.is_some()));
                if let Some(cwd) = cwd {
                    string(out, cwd);
                }
            }
        }
        let ruleset = match &self.landlock {
            Landlock::None => {
                number(out, LANDLOCK_NONE as usize);
                None
            }
            Landlock::Ruleset(fd) => {
                number(out, LANDLOCK_RULESET as usize);
                Some(fd)
            }
            Landlock::NotEnforced => {
                number(out, LANDLOCK_NOT_ENFORCED as usize);
                None
            }
        };
        for program in self.programs.parts() {
            let program = program.unwrap_or_default();
            number(out, program.len() / 8);
            out.resize(out.len().next_multiple_of(8), 0);
            out.extend_from_slice(program);
        }
        ruleset
    }
}

/// In a command started by the namespace's spawner, just before exec: enters the sandbox
/// [`Armed::encode`] wrote into `bytes`, as [`Armed::enter`] does (the mount view, Landlock
/// with the ruleset descriptor `landlock` the request carried, seccomp). Nothing allocated:
/// the lists of paths are read onto the stack. The errno of the failing step.
#[cfg(target_arch = "x86_64")]
pub(crate) fn enter_encoded(bytes: &[u8], landlock: BorrowedFd<'_>) -> Result<(), libc::c_int> {
    let mut read = Reader { bytes, at: 0 };
    let rest = match read.number()? {
        VIEW_NONE => None,
        VIEW_EVERYTHING => Some(view::Rest::Writable),
        VIEW_PATHS => Some(view::Rest::ReadOnly),
        _ => return Err(libc::EINVAL),
    };
    let viewed = match rest {
        None => false,
        Some(rest) => {
            let mut paths = [c""; SPAWNER_VIEW_PATHS];
            let mut dirs = paths;
            let mut files = paths;
            let count = read.list(&mut paths)?;
            let hidden_dirs = read.list(&mut dirs)?;
            let hidden_files = read.list(&mut files)?;
            let cwd = match read.number()? {
                0 => None,
                _ => Some(read.string()?),
            };
            let mut copies = [-1; SPAWNER_VIEW_PATHS];
            let hidden = view::Hidden {
                dirs: dirs[..hidden_dirs].iter().copied().peekable(),
                files: files[..hidden_files].iter().copied().peekable(),
            };
            let paths = paths[..count].iter().copied();
            view::enter_paths(paths, &mut copies[..count], hidden, rest, cwd)
        }
    };
    let kind = read.number()?;
    let ruleset = (kind == LANDLOCK_RULESET).then_some(landlock);
    let inside_view = read.program()?;
    let plain = read.program()?;
    let openat2 = read.program()?;
    restrict((kind, ruleset), inside_view, plain, openat2, viewed)
}

/// Landlock, then seccomp: `landlock` is a kind (`LANDLOCK_*`) and the ruleset's
/// descriptor; the program for inside the mount view is installed when `viewed`, else the
/// plain one, then the `openat2` one. Each program is whole BPF instructions (8 bytes
/// each). Nothing allocated. The errno of the failing step.
fn restrict(
    landlock: (u32, Option<BorrowedFd<'_>>),
    inside_view: Option<&[u8]>,
    plain: Option<&[u8]>,
    openat2: Option<&[u8]>,
    viewed: bool,
) -> Result<(), libc::c_int> {
    let no_new_privs = || rustix::thread::set_no_new_privs(true).map_err(|e| e.raw_os_error());
    match landlock {
        (LANDLOCK_NONE, _) => {}
        (LANDLOCK_RULESET, Some(ruleset)) => {
            no_new_privs()?;
            restrict_self(ruleset)?;
        }
        // The kernel enforces none of the rules: the command must not start.
        _ => return Err(libc::EPERM),
    }
    let main = match (inside_view, viewed) {
        (Some(program), true) => Some(program),
        _ => plain,
    };
    // An empty program is refused (as `seccompiler` refuses one).
    for program in [Some(main.ok_or(libc::EPERM)?), openat2]
        .into_iter()
        .flatten()
    {
        no_new_privs()?;
        install(program)?;
    }
    Ok(())
}

/// `landlock_restrict_self(ruleset, 0)`: what the landlock crate's `restrict_self` does,
/// without consuming the ruleset (not in rustix).
fn restrict_self(ruleset: BorrowedFd<'_>) -> Result<(), libc::c_int> {
    use std::os::fd::AsRawFd;
    // SAFETY: a ruleset descriptor and no flags; the call changes this thread's rights only.
    match unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0) } {
        0 => Ok(()),
        _ => Err(errno()),
    }
}

/// `seccomp(SECCOMP_SET_MODE_FILTER, 0, program)` (not in rustix).
fn install(program: &[u8]) -> Result<(), libc::c_int> {
    /// `struct sock_fprog`.
    #[repr(C)]
    struct Fprog {
        len: u16,
        filter: *const u8,
    }
    let fprog = Fprog {
        len: u16::try_from(program.len() / 8).map_err(|_| libc::EINVAL)?,
        filter: program.as_ptr(),
    };
    // SAFETY: the kernel copies `len` instructions of 8 bytes from `filter`, which are the
    // bytes of `program`.
    let installed = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0,
            &raw const fprog,
        )
    };
    match installed {
        0 => Ok(()),
        _ => Err(errno()),
    }
}

/// Reads what [`Armed::encode`] wrote.
#[cfg(target_arch = "x86_64")]
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

#[cfg(target_arch = "x86_64")]
impl<'a> Reader<'a> {
    fn number(&mut self) -> Result<u32, libc::c_int> {
        let word = self.bytes.get(self.at..self.at + 4).ok_or(libc::EINVAL)?;
        self.at += 4;
        Ok(u32::from_le_bytes([word[0], word[1], word[2], word[3]]))
    }

    /// A NUL-terminated string.
    fn string(&mut self) -> Result<&'a CStr, libc::c_int> {
        let rest = self.bytes.get(self.at..).ok_or(libc::EINVAL)?;
        let s = CStr::from_bytes_until_nul(rest).map_err(|_| libc::EINVAL)?;
        self.at += s.to_bytes_with_nul().len();
        Ok(s)
    }

    /// A list of at most `SPAWNER_VIEW_PATHS` strings, into `into`; how many.
    fn list(&mut self, into: &mut [&'a CStr; SPAWNER_VIEW_PATHS]) -> Result<usize, libc::c_int> {
        let count = usize::try_from(self.number()?).map_err(|_| libc::EINVAL)?;
        if count > SPAWNER_VIEW_PATHS {
            return Err(libc::EINVAL);
        }
        for slot in into.iter_mut().take(count) {
            *slot = self.string()?;
        }
        Ok(count)
    }

    /// A BPF program (its instructions, 8-byte aligned), or `None` when empty.
    fn program(&mut self) -> Result<Option<&'a [u8]>, libc::c_int> {
        let count = usize::try_from(self.number()?).map_err(|_| libc::EINVAL)?;
        // Aligned as `encode` aligned it: in memory (the request is mapped at a page).
        let base = self.bytes.as_ptr() as usize;
        self.at = (base + self.at).next_multiple_of(8) - base;
        let len = count.checked_mul(8).ok_or(libc::EINVAL)?;
        let program = self.bytes.get(self.at..self.at + len).ok_or(libc::EINVAL)?;
        self.at += len;
        Ok((count > 0).then_some(program))
    }
}

/// The errno of the last failed libc call in this thread.
fn errno() -> libc::c_int {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}
