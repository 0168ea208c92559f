//! toolgate's file tools and the one door through which any tool touches a path.
//!
//! - [`Roots`] (path confinement): model-supplied paths are resolved by components after
//!   following symlinks, never compared by string prefix.
//! - `read_file` and `list_dir`: five constants, pagination that appears only when cut, a
//!   visible marker on cut lines, binary refused, images and PDFs as media.
//! - A per-file line index so that reading line 5,000,000 twice does not rescan the file.
//! - `search_files` and `grep` (bounded I/O): one sorted walk on ripgrep's `ignore` crate,
//!   content search on `grep-searcher`, every budget in [`SearchLimits`], a cursor that
//!   continues a cut result exactly.
//! - `write_file` and `edit_file`: atomic writes that keep permissions; exact, unique
//!   replacement with CRLF handling, stale-file refusal and a diff.
//!
//! # Example: the file tools over one root
//!
//! ```
//! use std::sync::Arc;
//!
//! use toolgate_core::{
//!     CallContext, DispatchLimits, Dispatcher, Policy, RawArgs, Registry, Scope, StaticProvider,
//! };
//! use toolgate_fs::{ReadLimits, Roots, builtin_fs_tools};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let project = tempfile::tempdir()?;
//! let roots = Arc::new(Roots::new([project.path()])?);
//! let tools = builtin_fs_tools(roots, ReadLimits::default(), None);
//! let registry = Arc::new(Registry::new());
//! registry.register(None, Arc::new(StaticProvider::new("fs", tools)), 0)?;
//! let dispatcher =
//!     Dispatcher::new(registry, Scope::global(), Policy::allow_all(), DispatchLimits::default());
//! let call = |name: &'static str, args: serde_json::Value, ctx: &CallContext| {
//!     dispatcher.call(name, RawArgs::Json(args), ctx.clone())
//! };
//!
//! // One context per session: edit_file knows what this session last read.
//! let session = CallContext::unattended();
//! let args = serde_json::json!({"path": "src/main.rs", "content": "fn main() {}\n"});
//! let out = call("write_file", args, &session).await;
//! assert!(!out.is_error, "{}", out.text);
//!
//! let out = call("read_file", serde_json::json!({"path": "src/main.rs"}), &session).await;
//! assert!(out.text.contains("1\tfn main() {}"), "{}", out.text);
//!
//! let args = serde_json::json!({"path": "src/main.rs", "old_string": "{}", "new_string": "{ run() }"});
//! let out = call("edit_file", args, &session).await;
//! assert!(!out.is_error, "{}", out.text);
//! let written = std::fs::read_to_string(project.path().join("src/main.rs"))?;
//! assert_eq!(written, "fn main() { run() }\n");
//!
//! // Paths outside the roots are refused with a message that says what to do instead.
//! let out = call("read_file", serde_json::json!({"path": "../../etc/passwd"}), &session).await;
//! assert!(out.is_error);
//! assert!(out.text.contains("outside the allowed roots"), "{}", out.text);
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]

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
