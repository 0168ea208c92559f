//! [`TempProject`]: a project folder that is removed when the test ends.

use std::path::{Path, PathBuf};

/// A temporary project root, by its real path (symlinks resolved, as tools see it).
pub struct TempProject {
    dir: tempfile::TempDir,
    root: PathBuf,
}

impl TempProject {
    /// An empty project.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let root = dir.path().canonicalize().expect("its real path");
        Self { dir, root }
    }

    /// Its root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Writes `text` to `relative` (folders created), returns the file's path.
    pub fn file(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.root.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("the file's folder");
        }
        std::fs::write(&path, text).expect("the file");
        path
    }

    /// The temporary folder itself (kept alive as long as the project).
    pub fn dir(&self) -> &tempfile::TempDir {
        &self.dir
    }
}

impl Default for TempProject {
    fn default() -> Self {
        Self::new()
    }
}

/// A temporary folder outside every folder the `workspace-write` sandbox lets a command
/// write: not under `/tmp`, `/var/tmp`, `/dev/shm` or `$TMPDIR` (where test projects live),
/// whatever HOME is. The first of HOME, the build's `target` folder (beside the test
/// binary) and `/var/lib` that is outside them and takes a new folder.
pub fn outside_writable() -> tempfile::TempDir {
    let temp_roots: Vec<PathBuf> = ["/tmp", "/var/tmp", "/dev/shm"]
        .into_iter()
        .map(PathBuf::from)
        .chain(std::env::var_os("TMPDIR").map(PathBuf::from))
        .filter_map(|p| p.canonicalize().ok())
        .collect();
    let target = std::env::current_exe().ok().and_then(|exe| {
        exe.ancestors()
            .find(|a| a.file_name().is_some_and(|n| n == "target"))
            .map(Path::to_path_buf)
    });
    let candidates = std::env::var_os("HOME")
        .map(PathBuf::from)
        .into_iter()
        .chain(target)
        .chain([PathBuf::from("/var/lib")]);
    for candidate in candidates {
        let Ok(real) = candidate.canonicalize() else {
            continue;
        };
        if temp_roots.iter().any(|t| real.starts_with(t)) {
            continue;
        }
        if let Ok(dir) = tempfile::tempdir_in(&real) {
            return dir;
        }
    }
    panic!(
        "no folder outside /tmp, /var/tmp, /dev/shm and $TMPDIR to test the sandbox with: set HOME to one this user can write"
    )
}
