//! The one walk both searches use: `ignore`'s walker (ripgrep's, with `.gitignore` support)
//! in sorted order, so that a cut by any budget leaves a clean prefix of path order.
//!
//! Why not `ignore`'s parallel walker: it visits folders in whatever order its threads get
//! to them, so a walk cut by the scan limit or the deadline would hold an arbitrary subset
//! of the tree, and no cursor could continue it without gaps. The walk itself is cheap
//! (directory reads); the expensive part, reading file contents, runs on parallel threads fed
//! by this walk in order (see `grep`), and results are put back in path order.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::WalkBuilder;
use toolgate_core::TruncationReason;

use super::{Stop, is_skipped_dir};

/// What to walk and how.
#[derive(Debug, Clone)]
pub(crate) struct WalkSpec {
    /// The real folder (or file) to walk.
    pub(crate) root: PathBuf,
    /// Skip the heavy folders ([`super::SKIPPED_DIRS`]).
    pub(crate) skip_heavy: bool,
    /// Honour `.gitignore`, `.ignore` and git's exclude files.
    pub(crate) use_ignore_files: bool,
    /// Visit only entries after this path (relative to `root`): a cursor's position.
    pub(crate) after: Option<PathBuf>,
    /// Most entries to visit.
    pub(crate) max_scanned: u64,
}

/// One entry the walk hands to its visitor.
#[derive(Debug)]
pub(crate) struct Visit<'a> {
    /// Full path (the real root joined with `rel`; symlinks below the root are not followed).
    pub(crate) path: &'a Path,
    /// Path relative to the root (empty when the root itself is a file).
    pub(crate) rel: &'a Path,
    /// A regular file (not a symlink, folder, FIFO, socket or device).
    pub(crate) is_file: bool,
    /// A symlink (never followed).
    pub(crate) is_symlink: bool,
}

/// How a walk ended.
#[derive(Debug, Default)]
pub(crate) struct WalkEnd {
    /// Entries visited (files and folders, the root excluded).
    pub(crate) scanned: u64,
    /// Why the walk stopped before the end, when it did (not set when the visitor stopped it).
    pub(crate) cut: Option<TruncationReason>,
    /// The last entry fully visited (the visitor went on after it), relative to the root:
    /// where a continuation resumes after a cut. May be a folder on the way to the cursor,
    /// which lies before it: see [`WalkEnd::resume_after`].
    pub(crate) last: Option<PathBuf>,
    /// Entries that could not be read (permission denied, vanished).
    pub(crate) errors: u64,
}

impl WalkEnd {
    /// Where a continuation resumes: after the last entry visited, unless that lies before the
    /// cursor the walk started from (a folder above it), in which case the cursor itself —
    /// a continuation never goes back.
    pub(crate) fn resume_after<'a>(&'a self, spec: &'a WalkSpec) -> Option<&'a Path> {
        match (self.last.as_deref(), spec.after.as_deref()) {
            (Some(last), Some(after)) if last <= after => Some(after),
            (Some(last), _) => Some(last),
            (None, after) => after,
        }
    }
}

/// Walks `spec.root` in sorted path order, calling `visit` for every entry until it returns
/// `false`, `stop` fires (`cut: timeout`) or the scan limit is reached (`cut: scan_limit`).
pub(crate) fn walk(
    spec: &WalkSpec,
    stop: &Stop,
    mut visit: impl FnMut(&Visit<'_>) -> bool,
) -> WalkEnd {
    let mut builder = WalkBuilder::new(&spec.root);
    builder
        .standard_filters(spec.use_ignore_files)
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b));
    let root = Arc::new(spec.root.clone());
    let after = spec.after.clone().map(Arc::new);
    let skip_heavy = spec.skip_heavy;
    builder.filter_entry(move |entry| {
        if entry.depth() == 0 {
            return true;
        }
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        if skip_heavy && is_dir && is_skipped_dir(entry.file_name()) {
            return false;
        }
        // Prune what lies wholly before the cursor: a folder sorts before everything in it,
        // so its subtree is before the cursor unless the cursor is inside it.
        match (&after, entry.path().strip_prefix(root.as_path())) {
            (Some(after), Ok(rel)) => rel >= after.as_path() || after.starts_with(rel),
            _ => true,
        }
    });

    let mut end = WalkEnd::default();
    // Whether an entry after the cursor was visited. Folders on the way down to the cursor
    // come first and are not progress; until one that is, only a cancellation stops the walk,
    // so that paging with a passed deadline always moves forward.
    let mut moved = false;
    for result in builder.build() {
        if stop.cancelled() || (moved && stop.stopped()) {
            end.cut = Some(TruncationReason::Timeout);
            break;
        }
        let entry = match result {
            Ok(entry) => entry,
            Err(_) => {
                end.errors += 1;
                continue;
            }
        };
        let depth = entry.depth();
        let Ok(rel) = entry.path().strip_prefix(&spec.root) else {
            continue;
        };
        let file_type = entry.file_type();
        let is_file = file_type.is_some_and(|t| t.is_file());
        if depth == 0 && !is_file {
            continue;
        }
        if depth > 0 {
            if end.scanned >= spec.max_scanned {
                end.cut = Some(TruncationReason::ScanLimit);
                break;
            }
            end.scanned += 1;
        }
        let keep_going = visit(&Visit {
            path: entry.path(),
            rel,
            is_file,
            is_symlink: file_type.is_some_and(|t| t.is_symlink()),
        });
        if !keep_going {
            break;
        }
        moved |= spec.after.as_deref().is_none_or(|after| rel > after);
        end.last = Some(rel.to_path_buf());
    }
    end
}
