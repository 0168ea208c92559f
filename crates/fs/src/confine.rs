//! Path confinement: turn a model-supplied path into a real path inside the roots.
//!
//! The longest existing ancestor is canonicalised (symlinks resolved) and the result is
//! compared with the roots component by component — `/x/root_evil` is not inside `/x/root`
//! (CVE-2025-53110), and a symlink inside a root that points outside is refused
//! (CVE-2025-53109). A path that does not exist yet is checked through its parent's real path.
//! FIFOs, sockets and devices are refused by their metadata, without opening them.

use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};

use fs_err::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

/// Why a path was refused. Every message names the path and what to do instead.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PathError {
    /// The path is empty or contains a NUL byte.
    #[error(
        "`{0}` is not a usable path; give a path relative to the project root, e.g. `src/main.rs`"
    )]
    Invalid(String),
    /// The real path lies outside every root.
    #[error(
        "`{path}` resolves to `{real}`, which is outside the allowed roots ({roots}); only files under the roots can be used"
    )]
    Outside {
        /// As given.
        path: String,
        /// After resolving symlinks.
        real: String,
        /// The roots, comma-separated.
        roots: String,
    },
    /// Nothing exists there.
    #[error("`{path}` does not exist{hint}")]
    NotFound {
        /// As given.
        path: String,
        /// Suggestions such as "; did you mean `src/lib.rs`?".
        hint: String,
    },
    /// A symlink chain that loops, or a symlink whose target does not exist.
    #[error("`{path}` is a symlink that loops or dangles; use the real path of the file instead")]
    BadLink {
        /// As given.
        path: String,
    },
    /// The file is of a kind that cannot be read as a file.
    #[error("`{path}` is a {kind}, not a regular file; refusing to read it")]
    NotRegular {
        /// As given.
        path: String,
        /// `FIFO`, `socket`, `device`, `directory`.
        kind: &'static str,
    },
    /// Writing is not allowed there (a read-only root such as the spill folder).
    #[error("`{path}` is in a read-only location; write under the project roots instead")]
    ReadOnly {
        /// As given.
        path: String,
    },
    /// Another I/O error.
    #[error("cannot access `{path}`: {source}")]
    Io {
        /// As given.
        path: String,
        /// The OS error.
        source: io::Error,
    },
}

/// What the caller wants to do with the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read an existing file or folder; read-only roots are allowed.
    Read,
    /// Create or replace; only the writable roots are allowed.
    Write,
}

/// The folders tools may touch.
#[derive(Debug, Clone)]
pub struct Roots {
    roots: Vec<PathBuf>,
    read_only: Vec<PathBuf>,
}

impl Roots {
    /// Roots from folders; each is canonicalised and must exist.
    pub fn new<I, P>(dirs: I) -> Result<Self, PathError>
    where
        I: IntoIterator<Item = P>,
        P: AsRef<Path>,
    {
        let mut roots = Vec::new();
        for dir in dirs {
            let dir = dir.as_ref();
            let real = std::fs::canonicalize(dir).map_err(|source| PathError::Io {
                path: dir.display().to_string(),
                source,
            })?;
            if !real.is_dir() {
                return Err(PathError::NotRegular {
                    path: dir.display().to_string(),
                    kind: "file (roots must be folders)",
                });
            }
            if !roots.contains(&real) {
                roots.push(real);
            }
        }
        if roots.is_empty() {
            return Err(PathError::Invalid(String::new()));
        }
        Ok(Self {
            roots,
            read_only: Vec::new(),
        })
    }

    /// Adds a folder that may be read but not written (the spill store). It need not exist yet.
    pub fn with_read_only(mut self, dir: &Path) -> Self {
        let real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        self.read_only.push(real);
        self
    }

    /// The first root: relative paths are resolved against it.
    pub fn primary(&self) -> &Path {
        &self.roots[0]
    }

    /// All writable roots.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// `real` shown relative to its root when it is inside one.
    pub fn display(&self, real: &Path) -> String {
        for root in self.roots.iter().chain(&self.read_only) {
            if let Ok(rel) = real.strip_prefix(root) {
                if rel.as_os_str().is_empty() {
                    return ".".to_owned();
                }
                if root == self.primary() {
                    return rel.to_string_lossy().into_owned();
                }
            }
        }
        real.to_string_lossy().into_owned()
    }

    /// Resolves `input` to a real path inside the roots. The path need not exist.
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
        let inside = |dirs: &[PathBuf]| dirs.iter().any(|r| real.starts_with(r));
        match access {
            Access::Read if inside(&self.roots) || inside(&self.read_only) => Ok(real),
            Access::Write if inside(&self.roots) => {
                if inside(&self.read_only) {
                    return Err(PathError::ReadOnly {
                        path: input.to_owned(),
                    });
                }
                Ok(real)
            }
            Access::Write if inside(&self.read_only) => Err(PathError::ReadOnly {
                path: input.to_owned(),
            }),
            _ => Err(PathError::Outside {
                path: input.to_owned(),
                real: real.to_string_lossy().into_owned(),
                roots: self
                    .roots
                    .iter()
                    .map(|r| r.to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }

    /// Resolves `input` to an existing folder inside the roots.
    pub fn resolve_dir(&self, input: &str) -> Result<PathBuf, PathError> {
        let real = self.resolve(input, Access::Read)?;
        let meta = std::fs::metadata(&real).map_err(|e| not_found_or_io(input, &real, e))?;
        if !meta.is_dir() {
            return Err(PathError::NotRegular {
                path: input.to_owned(),
                kind: kind_of(&meta),
            });
        }
        Ok(real)
    }

    /// Opens an existing regular file inside the roots for reading. FIFOs, sockets and
    /// devices are refused before anything is opened; the open itself does not follow a
    /// symlink swapped in since resolution and never blocks.
    pub fn open_read(
        &self,
        input: &str,
    ) -> Result<(fs_err::File, PathBuf, std::fs::Metadata), PathError> {
        let real = self.resolve(input, Access::Read)?;
        let meta = std::fs::metadata(&real).map_err(|e| not_found_or_io(input, &real, e))?;
        if !meta.is_file() {
            return Err(PathError::NotRegular {
                path: input.to_owned(),
                kind: kind_of(&meta),
            });
        }
        let file = fs_err::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&real)
            .map_err(|source| PathError::Io {
                path: input.to_owned(),
                source,
            })?;
        let opened = file.metadata().map_err(|source| PathError::Io {
            path: input.to_owned(),
            source,
        })?;
        if !opened.is_file() || opened.ino() != meta.ino() || opened.dev() != meta.dev() {
            return Err(PathError::BadLink {
                path: input.to_owned(),
            });
        }
        Ok((file, real, opened))
    }
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

fn not_found_or_io(input: &str, real: &Path, e: io::Error) -> PathError {
    if e.kind() == io::ErrorKind::NotFound {
        PathError::NotFound {
            path: input.to_owned(),
            hint: suggest(real),
        }
    } else {
        PathError::Io {
            path: input.to_owned(),
            source: e,
        }
    }
}

/// "; did you mean …?" from the names beside a missing path.
fn suggest(missing: &Path) -> String {
    let (Some(parent), Some(name)) = (missing.parent(), missing.file_name()) else {
        return String::new();
    };
    let name = name.to_string_lossy().to_lowercase();
    let Ok(entries) = fs_err::read_dir(parent) else {
        return "; check the folder with list_dir".to_owned();
    };
    let mut best: Vec<(f64, String)> = entries
        .filter_map(Result::ok)
        .take(5_000)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .map(|n| (strsim_ratio(&name, &n.to_lowercase()), n))
        .filter(|(s, _)| *s >= 0.6)
        .collect();
    best.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    if best.is_empty() {
        "; check the folder with list_dir".to_owned()
    } else {
        let names: Vec<String> = best.iter().take(3).map(|(_, n)| format!("`{n}`")).collect();
        format!("; did you mean {} in the same folder?", names.join(", "))
    }
}

/// Similarity by shared characters (cheap; good enough for typos and case).
fn strsim_ratio(a: &str, b: &str) -> f64 {
    if a == b {
        return 1.0;
    }
    let (la, lb) = (a.chars().count(), b.chars().count());
    if la == 0 || lb == 0 {
        return 0.0;
    }
    let common = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count()
        + a.chars()
            .rev()
            .zip(b.chars().rev())
            .take_while(|(x, y)| x == y)
            .count();
    (common.min(la.max(lb)) as f64) / (la.max(lb) as f64)
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
