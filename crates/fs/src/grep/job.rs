//! One grep call's work, and what its searcher threads pass along: the files queued for
//! searching and the files searched (used by the search in [`super::run`] and the count
//! past a full page in [`super::count`]).

use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::Arc;

use grep_regex::RegexMatcher;

use super::sink::FileHits;
use crate::search::NameFilter;
use crate::search::{Scope, SearchLimits, Stop};

/// Largest line buffer one searcher may grow to: keeps the memory of a call bounded whatever
/// the files hold. A longer line ends its file's search, and the result says so (see
/// [`FileHits::line_too_long`]).
pub(crate) const HEAP_LIMIT: usize = 32 * 1024 * 1024;

/// One grep call's work.
pub(crate) struct Job<'a> {
    pub(crate) scope: &'a Scope,
    pub(crate) matcher: &'a RegexMatcher,
    pub(crate) glob: Option<&'a NameFilter>,
    pub(crate) context: usize,
    pub(crate) limit: usize,
    pub(crate) limits: &'a SearchLimits,
    pub(crate) stop: &'a Stop,
}

/// A searched file.
#[derive(Debug)]
pub(crate) struct Searched {
    /// Path below the walk's root (the full path is made only for the files shown:
    /// [`super::run::Outcome::path`]; a call may search tens of thousands).
    pub(crate) rel: PathBuf,
    /// Lines up to this one were skipped (the cursor's line in the cursor's file).
    pub(crate) after_line: u64,
    /// What it yielded.
    pub(crate) hits: FileHits,
}

/// A file to search: the folder holding it (open, when the walk kept it open), its path
/// below the walk's root, and the line to resume after.
pub(crate) type Queued = (Option<Arc<OwnedFd>>, PathBuf, u64);
