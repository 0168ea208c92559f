//! Integration tests of toolgate-fs, built as one binary (STYLE.md "Tests").
//!
//! The tools are called through `DynTool::call` with JSON arguments, the way the dispatcher
//! calls them, so argument parsing, confinement and rendering all run.

// clippy.toml allows these inside `#[test]` functions only; the shared helpers are test code too.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

#[path = "all/confine.rs"]
mod confine;
#[path = "all/deadline.rs"]
mod deadline;
#[path = "all/edit.rs"]
mod edit;
#[path = "all/grep.rs"]
mod grep;
#[path = "all/line_index.rs"]
mod line_index;
#[path = "all/list.rs"]
mod list;
#[path = "all/race.rs"]
mod race;
#[path = "all/read.rs"]
mod read;
#[path = "all/search_files.rs"]
mod search_files;
#[path = "all/shared_spill.rs"]
mod shared_spill;
#[path = "all/support.rs"]
mod support;
