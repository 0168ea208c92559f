//! toolgate's file tools and the one door through which any tool touches a path.
//!
//! - [`Roots`] (path confinement, SPEC "Security model"): model-supplied paths are resolved
//!   by components after following symlinks, never compared by string prefix.
//! - `read_file` and `list_dir` (seed 003 §8.1): five constants, pagination that appears only
//!   when cut, a visible marker on cut lines, binary refused, images and PDFs as media.
//! - A per-file line index so that reading line 5,000,000 twice does not rescan the file.
//! - `search_files` and `grep` (seed 004, bounded I/O): one sorted walk on ripgrep's `ignore`
//!   crate, content search on `grep-searcher`, every budget in [`SearchLimits`], a cursor
//!   that continues a cut result exactly.
//! - `write_file` and `edit_file` (seed 000 s02): atomic writes that keep permissions; exact,
//!   unique replacement with CRLF handling, stale-file refusal and a diff.

mod confine;
mod edit;
mod find;
mod grep;
mod line_index;
mod list;
mod read;
mod search;
mod sniff;
mod tools;
mod write;

pub use confine::door::{is_swapped, open_file_no_symlinks};
pub use confine::{Access, ControlFiles, Covers, HardLinks, LaunchFile, PathError, Roots};
pub use edit::{EditFileArgs, EditFileTool};
pub use find::{SearchFilesArgs, SearchFilesTool};
pub use grep::{GrepArgs, GrepTool};
pub use line_index::LineIndexCache;
pub use list::ListPage;
pub use read::{FileStamp, FileStamps, ReadLimits, ReadPage, read_page};
pub use search::{SKIPPED_DIRS, SearchLimits, SearchOutput};
pub use tools::{FsLimits, ListDirTool, ReadFileTool, builtin_fs_tools, builtin_fs_tools_with};
pub use write::{BeforeRename, WriteFileArgs, WriteFileTool, WriteOutput};
