//! What trust decided about a server, as the server's spec carries it: [`Trust`] and, for a
//! server defined by a project file, [`LaunchTrust`]. How the decision is made, and checked
//! again before each start, is `trust.rs`.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// Whether a server may start as far as trust goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Trust {
    /// Defined in a user-level file: needs no trust.
    User,
    /// Defined (or changed) by a project file, and trusted with its current fingerprint.
    Trusted,
    /// Defined (or changed) by a project file, and not trusted (or trusted with another
    /// command): not started.
    Untrusted,
}

impl Trust {
    /// Whether the server may be started.
    pub fn allows_start(self) -> bool {
        !matches!(self, Self::Untrusted)
    }

    /// Whether a project file defined or changed the server.
    pub fn is_project(self) -> bool {
        !matches!(self, Self::User)
    }
}

/// What the user trusted for one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    pub(crate) fingerprint: String,
    /// `None` for a record from before the fingerprint covered files.
    pub(crate) files: Option<BTreeMap<String, String>>,
}

/// What trust found for a server defined by a project file (set by `TrustStore::apply`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct LaunchTrust {
    /// The project files its launch runs, display name (relative to the project when inside
    /// it) → `sha256:…` or `symlink to …`: as trusted, or as found now when untrusted.
    pub files: BTreeMap<String, String>,
    /// Why it may not start (`None` when trusted): what changed, or that it never was.
    pub untrusted: Option<String>,
    /// Real paths inside the roots the write tools must leave alone while it is trusted:
    /// the files it runs and where one would join its launch if created.
    pub protect: Vec<PathBuf>,
    /// Folders inside the roots nothing may be written in (its package folder).
    pub protect_dirs: Vec<PathBuf>,
    /// What each start checks again.
    pub(crate) pin: Option<Pin>,
}

/// The trusted state of a server, re-checked before each (re)start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pin {
    pub(crate) roots: Vec<PathBuf>,
    pub(crate) record: Record,
}
