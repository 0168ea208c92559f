//! Path confinement: turn a model-supplied path into an open descriptor inside the roots.
//!
//! Two steps. First the path is *resolved*: the longest existing ancestor is canonicalised
//! (symlinks resolved) and the result is compared with the roots component by component —
//! `/x/root_evil` is not inside `/x/root` (CVE-2025-53110), and a symlink inside a root that
//! points outside is refused (CVE-2025-53109); a path that does not exist yet is checked
//! through its parent's real path. Then it is *opened* through the root's directory
//! descriptor, never by path ([`door`]): the real path below the root is opened with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, so a symlink swapped in between the two
//! steps makes the open fail (and the call resolve again) instead of leading out. FIFOs,
//! sockets and devices are refused by the metadata of an `O_PATH` descriptor, before
//! anything is opened for reading.

pub(crate) mod door;
mod error;
mod launch;
mod links;
mod spill;
mod suggest;

pub use error::PathError;
pub use launch::{Covers, LaunchFile};
pub use links::HardLinks;
pub(crate) use spill::Shown;
use suggest::suggest;

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::sync::{Arc, RwLock};

use rustix::fs::OFlags;
use std::path::{Component, Path, PathBuf};

/// What the caller wants to do with the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read an existing file or folder; read-only roots are allowed.
    Read,
    /// Create or replace; only the writable roots are allowed.
    Write,
}

/// A root folder, held open: everything below it is reached through `fd`.
#[derive(Debug, Clone)]
struct RootDir {
    path: PathBuf,
    fd: Arc<OwnedFd>,
}

/// The folders tools may touch, each held by a directory descriptor.
#[derive(Debug, Clone)]
pub struct Roots {
    roots: Vec<RootDir>,
    read_only: Vec<PathBuf>,
    /// The spill folder when it lies outside the roots: readable, but only the spill files
    /// in it ([`toolgate_budget::is_spill_name`]), never what else shares the folder.
    spill: Option<PathBuf>,
    control_files: ControlFiles,
    hard_links: HardLinks,
    /// Shared by the clones of these roots, so [`Roots::set_launch_files`] reaches every
    /// tool holding them.
    launch_files: Arc<RwLock<Vec<LaunchFile>>>,
}

/// Whether tools may write toolgate's and its peers' control files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ControlFiles {
    /// Refused (the default).
    #[default]
    Protected,
    /// Allowed (`permissions.allow_control_files = true` in the user's config).
    Writable,
}

/// A resolved path: the descriptor of the folder it lies in and the real path below it.
#[derive(Debug, Clone)]
pub(crate) struct Located {
    /// The real path (for display, messages and per-file caches).
    pub(crate) real: PathBuf,
    /// The root (or read-only folder) it lies in, open.
    pub(crate) base: Arc<OwnedFd>,
    /// The real path of `base`.
    pub(crate) base_path: PathBuf,
    /// `real` below `base`: plain components, no `..`, no symlinks.
    pub(crate) rel: PathBuf,
    /// What a listing or search of `base` shows.
    pub(crate) shown: Shown,
}

/// How many times a call resolves its path again when a symlink was swapped in while it
/// was being opened, before it gives up with [`PathError::Changed`].
const SWAP_RETRIES: usize = 4;

/// A path opened with `O_PATH` (nothing read yet) and what it is.
pub(crate) struct Opened {
    /// Where it is.
    pub(crate) located: Located,
    /// Its metadata (never of a symlink's target).
    pub(crate) meta: std::fs::Metadata,
}

/// A parent folder opened for writing one entry in it.
pub(crate) struct Parent {
    /// The folder.
    pub(crate) fd: OwnedFd,
    /// The entry's name in it.
    pub(crate) name: std::ffi::OsString,
    /// The entry's real path.
    pub(crate) real: PathBuf,
}

impl Roots {
    /// Roots from folders; each is canonicalised, must exist and is opened once.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use toolgate_fs::{Access, Roots};
    ///
    /// let project = tempfile::tempdir()?;
    /// let roots = Roots::new([project.path()])?;
    /// // Relative paths are taken from the first root; they need not exist yet.
    /// let path = roots.resolve("src/new.rs", Access::Write)?;
    /// assert!(path.starts_with(project.path().canonicalize()?));
    /// // Nothing outside the roots is reachable, `..` included.
    /// assert!(roots.resolve("../outside.txt", Access::Read).is_err());
    /// assert!(roots.resolve("/etc/passwd", Access::Read).is_err());
    /// # Ok(())
    /// # }
    /// ```
    pub fn new<I, P>(dirs: I) -> Result<Self, PathError>
    where
        I: IntoIterator<Item = P>,
        P: AsRef<Path>,
    {
        let mut roots: Vec<RootDir> = Vec::new();
        for dir in dirs {
            let dir = dir.as_ref();
            let io_err = |source| PathError::Io {
                path: dir.display().to_string(),
                source,
            };
            let real = std::fs::canonicalize(dir).map_err(io_err)?;
            if !real.is_dir() {
                return Err(PathError::NotRegular {
                    path: dir.display().to_string(),
                    kind: "file (roots must be folders)",
                });
            }
            if roots.iter().any(|r| r.path == real) {
                continue;
            }
            let fd = door::open_dir_no_symlinks(&real).map_err(io_err)?;
            roots.push(RootDir {
                path: real,
                fd: Arc::new(fd),
            });
        }
        if roots.is_empty() {
            return Err(PathError::Invalid(String::new()));
        }
        Ok(Self {
            roots,
            read_only: Vec::new(),
            spill: None,
            control_files: ControlFiles::Protected,
            hard_links: HardLinks::Allowed,
            launch_files: Arc::new(RwLock::new(Vec::new())),
        })
    }

    /// Adds files trusted MCP servers run to the control files (refused unless
    /// [`ControlFiles::Writable`]).
    pub fn with_launch_files(mut self, files: Vec<LaunchFile>) -> Self {
        let mut all = self.launch_files().clone();
        all.extend(files);
        self.launch_files = Arc::new(RwLock::new(all));
        self
    }

    /// Replaces the files trusted MCP servers run (a config change mounted other servers),
    /// for every tool holding these roots or a clone of them.
    pub fn set_launch_files(&self, files: Vec<LaunchFile>) {
        *self
            .launch_files
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = files;
    }

    fn launch_files(&self) -> std::sync::RwLockReadGuard<'_, Vec<LaunchFile>> {
        self.launch_files
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Sets whether tools may write control files (default: [`ControlFiles::Protected`]).
    pub fn with_control_files(mut self, control_files: ControlFiles) -> Self {
        self.control_files = control_files;
        self
    }

    /// Adds a folder that may be read but not written (the spill store). It need not exist
    /// yet; it is opened on each use, and refused if a symlink is found on its path then.
    pub fn with_read_only(mut self, dir: &Path) -> Self {
        let real = real_path(dir, &dir.to_string_lossy()).unwrap_or_else(|_| dir.to_path_buf());
        self.read_only.push(real);
        self
    }

    /// The first root: relative paths are resolved against it.
    pub fn primary(&self) -> &Path {
        &self.roots[0].path
    }

    /// All writable roots.
    pub fn roots(&self) -> Vec<PathBuf> {
        self.roots.iter().map(|r| r.path.clone()).collect()
    }

    /// `real` shown relative to the project root (the first root) when it is inside it,
    /// else in full: another root — a user skills folder, a second project — is never
    /// shown as `.`, which reads as the project root.
    pub fn display(&self, real: &Path) -> String {
        match real.strip_prefix(self.primary()) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
            Ok(rel) => rel.to_string_lossy().into_owned(),
            Err(_) => real.to_string_lossy().into_owned(),
        }
    }

    /// Resolves `input` to a real path inside the roots. The path need not exist. This only
    /// checks the path: tools open what it names through [`Roots::open_read`] and the other
    /// descriptor-based calls, never by this path.
    pub fn resolve(&self, input: &str, access: Access) -> Result<PathBuf, PathError> {
        if input.is_empty() || input.contains('\0') {
            return Err(PathError::Invalid(input.to_owned()));
        }
        let given = Path::new(input);
        let joined = if given.is_absolute() {
            given.to_path_buf()
        } else {
            self.primary().join(given)
        };
        let real = real_path(&joined, input)?;
        let in_roots = self.roots.iter().any(|r| real.starts_with(&r.path));
        let mut in_read_only = self.read_only.iter().any(|r| real.starts_with(r));
        if !in_roots && !in_read_only {
            match self.spill_access(&real) {
                Some(true) => in_read_only = true,
                Some(false) if access == Access::Read => {
                    return Err(PathError::NotSpill {
                        path: input.to_owned(),
                    });
                }
                Some(false) => {
                    return Err(PathError::ReadOnly {
                        path: input.to_owned(),
                    });
                }
                None => {}
            }
        }
        match access {
            Access::Read if in_roots || in_read_only => Ok(real),
            Access::Write if in_read_only => Err(PathError::ReadOnly {
                path: input.to_owned(),
            }),
            Access::Write if in_roots => {
                if self.control_files == ControlFiles::Protected {
                    let root = self.roots.iter().find(|r| real.starts_with(&r.path));
                    if let Some(rule) = root.and_then(|r| control_file(&below(&real, &r.path))) {
                        return Err(PathError::Protected {
                            path: input.to_owned(),
                            rule,
                        });
                    }
                    if let Some(file) = self.launch_files().iter().find(|f| f.guards(&real)) {
                        return Err(PathError::LaunchFile {
                            path: input.to_owned(),
                            server: file.server.clone(),
                        });
                    }
                }
                Ok(real)
            }
            _ => Err(PathError::Outside {
                path: input.to_owned(),
                real: real.to_string_lossy().into_owned(),
                roots: self
                    .roots
                    .iter()
                    .map(|r| r.path.to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }

    /// Resolves `input` and finds the open folder it lies in.
    pub(crate) fn locate(&self, input: &str, access: Access) -> Result<Located, PathError> {
        let real = self.resolve(input, access)?;
        if let Some(root) = self.roots.iter().find(|r| real.starts_with(&r.path)) {
            return Ok(Located {
                rel: below(&real, &root.path),
                base: Arc::clone(&root.fd),
                base_path: root.path.clone(),
                shown: Shown::All,
                real,
            });
        }
        let spill = self.spill.as_ref().filter(|s| real.starts_with(s));
        let Some(dir) = self
            .read_only
            .iter()
            .find(|r| real.starts_with(r))
            .or(spill)
        else {
            return Err(PathError::Invalid(input.to_owned()));
        };
        let fd = door::open_dir_no_symlinks(dir).map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) | Some(libc::EXDEV) => PathError::BadLink {
                path: input.to_owned(),
            },
            _ => not_found_or_io(input, None, e),
        })?;
        Ok(Located {
            rel: below(&real, dir),
            base: Arc::new(fd),
            base_path: dir.clone(),
            shown: if spill == Some(dir) {
                Shown::SpillFiles
            } else {
                Shown::All
            },
            real,
        })
    }

    /// Opens `input` with `O_PATH` through its root's descriptor (nothing is read, FIFOs do
    /// not block, devices are not opened) and reads its metadata. A symlink swapped in since
    /// the path was resolved makes the open fail, and the path is resolved again.
    pub(crate) fn open_path(&self, input: &str, access: Access) -> Result<Opened, PathError> {
        for _ in 0..SWAP_RETRIES {
            let located = self.locate(input, access)?;
            let fd = match door::open_beneath(
                located.base.as_fd(),
                &located.rel,
                OFlags::PATH | OFlags::NOFOLLOW,
            ) {
                Ok(fd) => fd,
                Err(e) if door::is_swapped(&e) => continue,
                Err(e) => return Err(not_found_or_io(input, Some(&located), e)),
            };
            let meta =
                door::file(fd, &located.real)
                    .metadata()
                    .map_err(|source| PathError::Io {
                        path: input.to_owned(),
                        source,
                    })?;
            if meta.file_type().is_symlink() {
                continue;
            }
            return Ok(Opened { located, meta });
        }
        Err(PathError::Changed {
            path: input.to_owned(),
        })
    }

    /// Opens an existing regular file inside the roots for reading, through its root's
    /// descriptor. FIFOs, sockets and devices are refused before anything is opened for
    /// reading; a symlink swapped in anywhere on the way is never followed.
    pub fn open_read(
        &self,
        input: &str,
    ) -> Result<(fs_err::File, PathBuf, std::fs::Metadata), PathError> {
        for _ in 0..SWAP_RETRIES {
            let opened = self.open_path(input, Access::Read)?;
            if !opened.meta.is_file() {
                return Err(PathError::NotRegular {
                    path: input.to_owned(),
                    kind: kind_of(&opened.meta),
                });
            }
            self.check_links(input, &opened.meta)?;
            let Some((file, meta)) = reopen(&opened, OFlags::RDONLY | OFlags::NONBLOCK, input)?
            else {
                continue;
            };
            let real = opened.located.real;
            return Ok((file, real, meta));
        }
        Err(PathError::Changed {
            path: input.to_owned(),
        })
    }

    /// Resolves `input` to an existing folder inside the roots (checked through its root's
    /// descriptor). For callers that must hand a path on, such as a shell's working folder.
    pub fn resolve_dir(&self, input: &str) -> Result<PathBuf, PathError> {
        self.open_dir(input).map(|(_, located)| located.real)
    }

    /// Opens an existing folder inside the roots for reading its entries.
    pub(crate) fn open_dir(&self, input: &str) -> Result<(OwnedFd, Located), PathError> {
        match self.open_tree(input, false)? {
            (Tree::Dir(fd), located) => Ok((fd, located)),
            (Tree::File(_), _) => unreachable_file(input),
        }
    }

    /// Opens an existing folder (or, with `allow_file`, a regular file) for a search.
    pub(crate) fn open_tree(
        &self,
        input: &str,
        allow_file: bool,
    ) -> Result<(Tree, Located), PathError> {
        for _ in 0..SWAP_RETRIES {
            let opened = self.open_path(input, Access::Read)?;
            let (flags, is_dir) = if opened.meta.is_dir() {
                (OFlags::RDONLY | OFlags::DIRECTORY, true)
            } else if allow_file && opened.meta.is_file() {
                (OFlags::RDONLY | OFlags::NONBLOCK, false)
            } else {
                return Err(PathError::NotRegular {
                    path: input.to_owned(),
                    kind: kind_of(&opened.meta),
                });
            };
            let Some((file, _)) = reopen(&opened, flags, input)? else {
                continue;
            };
            let tree = if is_dir {
                Tree::Dir(OwnedFd::from(file))
            } else {
                Tree::File(file)
            };
            return Ok((tree, opened.located));
        }
        Err(PathError::Changed {
            path: input.to_owned(),
        })
    }

    /// Opens the folder that is to hold `input` for writing, creating missing folders on
    /// the way when `create` is set; every step goes through descriptors without following
    /// symlinks.
    pub(crate) fn open_parent(
        &self,
        input: &str,
        create: CreateParents,
    ) -> Result<Parent, PathError> {
        for _ in 0..SWAP_RETRIES {
            let located = self.locate(input, Access::Write)?;
            let (Some(name), Some(parent)) = (located.rel.file_name(), located.rel.parent()) else {
                return Err(PathError::NotRegular {
                    path: input.to_owned(),
                    kind: "directory",
                });
            };
            let opened = match create {
                CreateParents::Yes => door::make_dirs_beneath(located.base.as_fd(), parent),
                CreateParents::No => door::open_beneath(
                    located.base.as_fd(),
                    parent,
                    OFlags::RDONLY | OFlags::DIRECTORY,
                ),
            };
            match opened {
                Ok(fd) => {
                    return Ok(Parent {
                        fd,
                        name: name.to_owned(),
                        real: located.real,
                    });
                }
                Err(e) if door::is_swapped(&e) => {}
                Err(e) => return Err(not_found_or_io(input, Some(&located), e)),
            }
        }
        Err(PathError::Changed {
            path: input.to_owned(),
        })
    }
}

impl Parent {
    /// Opens the existing regular file `self.name` in this folder for reading, not through
    /// a symlink; FIFOs, sockets and devices are refused before it is opened for reading.
    pub(crate) fn open_existing(
        &self,
        input: &str,
    ) -> Result<(fs_err::File, std::fs::Metadata), PathError> {
        let io_err = |source| PathError::Io {
            path: input.to_owned(),
            source,
        };
        let name = Path::new(&self.name);
        let probe = door::open_beneath(self.fd.as_fd(), name, OFlags::PATH | OFlags::NOFOLLOW)
            .map_err(|e| not_found_or_io(input, None, e))?;
        let meta = door::file(probe, &self.real).metadata().map_err(io_err)?;
        if meta.file_type().is_symlink() {
            return Err(PathError::Changed {
                path: input.to_owned(),
            });
        }
        if !meta.is_file() {
            return Err(PathError::NotRegular {
                path: input.to_owned(),
                kind: kind_of(&meta),
            });
        }
        let fd = door::open_beneath(self.fd.as_fd(), name, OFlags::RDONLY | OFlags::NONBLOCK)
            .map_err(|e| match door::is_swapped(&e) {
                true => PathError::Changed {
                    path: input.to_owned(),
                },
                false => not_found_or_io(input, None, e),
            })?;
        let file = door::file(fd, &self.real);
        let opened = file.metadata().map_err(io_err)?;
        if opened.ino() != meta.ino() || opened.dev() != meta.dev() {
            return Err(PathError::Changed {
                path: input.to_owned(),
            });
        }
        Ok((file, opened))
    }
}

/// Whether [`Roots::open_parent`] creates missing folders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CreateParents {
    /// Create them (`write_file`).
    Yes,
    /// The folder must exist (`edit_file`).
    No,
}

/// What a search opened.
#[derive(Debug)]
pub(crate) enum Tree {
    /// A folder, open for reading its entries.
    Dir(OwnedFd),
    /// A regular file, open for reading.
    File(fs_err::File),
}

fn unreachable_file<T>(input: &str) -> Result<T, PathError> {
    Err(PathError::NotRegular {
        path: input.to_owned(),
        kind: "file",
    })
}

/// Opens what `opened` names again with `flags` (the `O_PATH` descriptor cannot read) and
/// checks it is the same file; `None` when it is not (swapped since).
fn reopen(
    opened: &Opened,
    flags: OFlags,
    input: &str,
) -> Result<Option<(fs_err::File, std::fs::Metadata)>, PathError> {
    let io_err = |source| PathError::Io {
        path: input.to_owned(),
        source,
    };
    let fd = match door::open_beneath(opened.located.base.as_fd(), &opened.located.rel, flags) {
        Ok(fd) => fd,
        Err(e) if door::is_swapped(&e) || e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(e)),
    };
    let file = door::file(fd, &opened.located.real);
    let meta = file.metadata().map_err(io_err)?;
    if meta.ino() != opened.meta.ino() || meta.dev() != opened.meta.dev() {
        return Ok(None);
    }
    Ok(Some((file, meta)))
}

/// The control-file rule `rel` (a real path below a root) falls under, at any depth:
/// `.toolgate/`, `.mcp.json`, `.claude/settings*.json`, `.codex/`, `.cursor/mcp.json`.
/// Names compare without ASCII case, as case-insensitive file systems would.
fn control_file(rel: &Path) -> Option<&'static str> {
    let parts: Vec<&str> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(p) => p.to_str(),
            _ => None,
        })
        .collect();
    let is = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
    for (i, part) in parts.iter().enumerate() {
        let next = parts.get(i + 1).copied();
        let last = i + 1 == parts.len();
        if is(part, ".toolgate") {
            return Some(".toolgate/");
        }
        if is(part, ".codex") {
            return Some(".codex/");
        }
        if last && is(part, ".mcp.json") {
            return Some(".mcp.json");
        }
        let lower = next.map(str::to_ascii_lowercase).unwrap_or_default();
        if is(part, ".claude")
            && i + 2 == parts.len()
            && lower.starts_with("settings")
            && lower.ends_with(".json")
        {
            return Some(".claude/settings*.json");
        }
        if is(part, ".cursor") && i + 2 == parts.len() && lower == "mcp.json" {
            return Some(".cursor/mcp.json");
        }
    }
    None
}

/// `real` below `base` (which contains it).
fn below(real: &Path, base: &Path) -> PathBuf {
    real.strip_prefix(base)
        .map_or_else(|_| PathBuf::new(), Path::to_path_buf)
}

/// A human name for a non-regular file type.
fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let ft = meta.file_type();
    if ft.is_dir() {
        "directory"
    } else if ft.is_fifo() {
        "FIFO"
    } else if ft.is_socket() {
        "socket"
    } else if ft.is_char_device() || ft.is_block_device() {
        "device"
    } else {
        "special file"
    }
}

fn not_found_or_io(input: &str, located: Option<&Located>, e: io::Error) -> PathError {
    if e.kind() == io::ErrorKind::NotFound {
        PathError::NotFound {
            path: input.to_owned(),
            hint: located.map_or_else(String::new, suggest),
        }
    } else {
        PathError::Io {
            path: input.to_owned(),
            source: e,
        }
    }
}

/// The real path of `joined`: canonicalise the longest existing ancestor, then append the
/// components that do not exist yet (where `..` is safe to apply lexically: a component that
/// does not exist cannot be a symlink).
fn real_path(joined: &Path, input: &str) -> Result<PathBuf, PathError> {
    match std::fs::canonicalize(joined) {
        Ok(real) => return Ok(real),
        Err(e) if is_loop(&e) => {
            return Err(PathError::BadLink {
                path: input.to_owned(),
            });
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
            return Err(PathError::NotFound {
                path: input.to_owned(),
                hint: "; a part of it is a file, not a folder".to_owned(),
            });
        }
        Err(source) => {
            return Err(PathError::Io {
                path: input.to_owned(),
                source,
            });
        }
    }
    let components: Vec<Component<'_>> = joined.components().collect();
    for split in (1..components.len()).rev() {
        let prefix: PathBuf = components[..split].iter().collect();
        let real_prefix = match std::fs::canonicalize(&prefix) {
            Ok(p) => p,
            Err(e) if is_loop(&e) => {
                return Err(PathError::BadLink {
                    path: input.to_owned(),
                });
            }
            Err(_) => continue,
        };
        // The first missing component may still exist as a dangling symlink: refuse it, or a
        // write would follow it wherever it points.
        if let Some(Component::Normal(first)) = components.get(split)
            && std::fs::symlink_metadata(real_prefix.join(first)).is_ok()
        {
            return Err(PathError::BadLink {
                path: input.to_owned(),
            });
        }
        if !real_prefix.is_dir() {
            return Err(PathError::NotFound {
                path: input.to_owned(),
                hint: format!("; `{}` is a file, not a folder", real_prefix.display()),
            });
        }
        let mut real = real_prefix;
        let mut climbed = false;
        for c in &components[split..] {
            match c {
                Component::Normal(part) => real.push(part),
                Component::ParentDir => {
                    real.pop();
                    climbed = true;
                }
                Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
            }
        }
        // After a `..` the path is back among existing entries, which may be symlinks
        // (`missing/../link_out/x`): resolve the `..`-free result again so they are followed.
        if climbed {
            return real_path(&real, input);
        }
        return Ok(real);
    }
    Err(PathError::NotFound {
        path: input.to_owned(),
        hint: String::new(),
    })
}

fn is_loop(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}
