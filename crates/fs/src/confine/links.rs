//! Hard links. A hard link inside a root to a file outside it is the same file under a
//! second name: confinement by path cannot tell them apart, so reads follow it, while
//! writes (temp file + rename) replace the name inside the root and leave the other name's
//! content alone. Build tools and package managers make hard links on purpose (pnpm's
//! store, cargo's `target/`, git's objects), so they are allowed unless the user sets
//! `permissions.refuse_hard_links`; then `read_file`, `edit_file` and `write_file` refuse a
//! regular file with more than one name.

use std::os::unix::fs::MetadataExt;

use super::{PathError, Roots};

/// Whether the file tools use regular files that have more than one name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HardLinks {
    /// Used like any file (the default).
    #[default]
    Allowed,
    /// Refused (`permissions.refuse_hard_links = true`).
    Refused,
}

impl Roots {
    /// Sets whether regular files with several names are used (default:
    /// [`HardLinks::Allowed`]).
    pub fn with_hard_links(mut self, hard_links: HardLinks) -> Self {
        self.hard_links = hard_links;
        self
    }

    /// Refuses `meta` (of `input`) when hard links are refused and it is a regular file
    /// with more than one name.
    pub(crate) fn check_links(
        &self,
        input: &str,
        meta: &std::fs::Metadata,
    ) -> Result<(), PathError> {
        if self.hard_links == HardLinks::Refused && meta.is_file() && meta.nlink() > 1 {
            return Err(PathError::HardLink {
                path: input.to_owned(),
                links: meta.nlink(),
            });
        }
        Ok(())
    }
}
