//! Files trusted MCP servers run: control files for the write tools, so a model that may
//! only write files cannot change code that runs outside any sandbox.

use std::path::{Path, PathBuf};

/// A file a trusted MCP server runs, or the package folder it runs from: a control file
/// for `write_file` and `edit_file`, computed when the runtime is assembled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchFile {
    /// Its real path.
    pub path: PathBuf,
    /// What is covered: the file at `path`, or everything below it.
    pub covers: Covers,
    /// The server that runs it.
    pub server: String,
}

/// What a [`LaunchFile`] covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Covers {
    /// The file itself (which need not exist yet: `node_modules/.bin/x`).
    File,
    /// Everything below a folder (an npm package a runner takes from the project).
    Folder,
}

impl LaunchFile {
    /// Whether a write to `real` (a real path) would change it.
    pub(crate) fn guards(&self, real: &Path) -> bool {
        match self.covers {
            Covers::File => real == self.path,
            Covers::Folder => real.starts_with(&self.path),
        }
    }
}
