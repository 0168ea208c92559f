//! The spill folder when it lies outside the roots (a user's or toolgate's cache folder):
//! readable through tools, but only the spill files toolgate wrote there, each opened
//! through the folder's descriptor without following a symlink. A spill folder inside a
//! root is part of the root and needs none of this.

use std::path::Path;

use super::{Roots, real_path};

/// What a listing or search of an opened folder shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shown {
    /// Every entry.
    All,
    /// The spill folder outside the roots: only its spill files (regular files with names
    /// toolgate makes), never another program's files or a symlink.
    SpillFiles,
}

impl Shown {
    /// Whether an entry named `name` of kind `kind` is shown.
    pub(crate) fn keeps(self, name: &[u8], kind: super::door::Kind) -> bool {
        match self {
            Self::All => true,
            Self::SpillFiles => {
                kind == super::door::Kind::File
                    && std::str::from_utf8(name).is_ok_and(toolgate_budget::is_spill_name)
            }
        }
    }
}

impl Roots {
    /// Sets the spill folder. Inside a root it is read like the rest of the root; outside
    /// the roots only the spill files directly in it can be read (and listed), each opened
    /// through the folder's descriptor without following a symlink — whatever else lives
    /// there (other programs' files in a shared cache folder) stays out of reach.
    pub fn with_spill_dir(mut self, dir: &Path) -> Self {
        let real = real_path(dir, &dir.to_string_lossy()).unwrap_or_else(|_| dir.to_path_buf());
        if !self.roots.iter().any(|r| real.starts_with(&r.path)) {
            self.spill = Some(real);
        }
        self
    }

    /// What the spill folder (outside the roots) lets through for `real`: `None` when `real`
    /// is not in it, else whether it is the folder itself or one of its spill files.
    pub(super) fn spill_access(&self, real: &Path) -> Option<bool> {
        let spill = self.spill.as_deref()?;
        if !real.starts_with(spill) {
            return None;
        }
        let is_file = real.parent() == Some(spill)
            && real
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(toolgate_budget::is_spill_name);
        Some(real == spill || is_file)
    }
}
