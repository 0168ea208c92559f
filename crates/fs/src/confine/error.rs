//! Why a path was refused: [`PathError`], whose every message names the path and what to
//! do instead.

use std::io;

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
    /// The tree changed while the path was being opened (a symlink swapped in for a folder,
    /// again and again): nothing was read or written.
    #[error(
        "`{path}` changed while it was being opened (a folder on the way was replaced by a symlink); nothing was read or written — retry the call, and if it keeps failing check what is modifying that folder"
    )]
    Changed {
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
    /// A control file of toolgate or another agent tool, which tools may not change unless
    /// the user's config allows it.
    #[error(
        "`{path}` is a control file ({rule}): it configures toolgate or another agent tool, so write_file and edit_file may not change it — a model must not loosen its own rules. Ask the user; they can allow it with `permissions.allow_control_files = true` in their user config (~/.config/toolgate/config.toml)"
    )]
    Protected {
        /// As given.
        path: String,
        /// Which rule matched: `.toolgate/`, `.mcp.json`, …
        rule: &'static str,
    },
    /// A regular file with more than one name, while `permissions.refuse_hard_links` is set.
    #[error(
        "`{path}` is a hard link: the same file has {links} names, and another may lie outside the project; permissions.refuse_hard_links is set, so the file tools neither read nor change it — use a file with one name (copy it), or ask the user"
    )]
    HardLink {
        /// As given.
        path: String,
        /// How many names the file has.
        links: u64,
    },
    /// A path in the spill folder that is not a spill file toolgate wrote.
    #[error(
        "`{path}` is in the spill folder but is not a spill file toolgate wrote; only the spill files named in tool results can be read there (list_dir on the spill folder shows them)"
    )]
    NotSpill {
        /// As given.
        path: String,
    },
    /// A file that a trusted MCP server runs (or a file in the package folder it runs
    /// from): changing it would run the model's code at the server's next start.
    #[error(
        "`{path}` is run by the MCP server `{server}`, which the user trusted with `toolgate mcp trust`, so write_file and edit_file may not change it: the server would run it outside any sandbox at its next start. Ask the user; they can change it themselves (the server then asks for `toolgate mcp trust {server}` again), or allow it with `permissions.allow_control_files = true` in their user config (~/.config/toolgate/config.toml)"
    )]
    LaunchFile {
        /// As given.
        path: String,
        /// The server that runs it.
        server: String,
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
