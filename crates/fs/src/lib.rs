//! toolgate's file tools and the one door through which any tool touches a path.
//!
//! - [`Roots`] (path confinement, SPEC "Security model"): model-supplied paths are resolved
//!   by components after following symlinks, never compared by string prefix.
//! - `read_file` and `list_dir` (seed 003 §8.1): five constants, pagination that appears only
//!   when cut, a visible marker on cut lines, binary refused, images and PDFs as media.
//! - A per-file line index so that reading line 5,000,000 twice does not rescan the file.

mod confine;
mod line_index;
mod list;
mod read;
mod sniff;
mod tools;

pub use confine::{Access, PathError, Roots};
pub use line_index::LineIndexCache;
pub use list::{ListPage, list_dir};
pub use read::{FileStamp, FileStamps, ReadLimits, ReadPage, read_page};
pub use tools::{ListDirTool, ReadFileTool, builtin_fs_tools};
