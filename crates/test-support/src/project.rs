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
