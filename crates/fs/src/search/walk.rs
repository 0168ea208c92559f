//! The one walk both searches use: a sorted, depth-first walk that reads every folder
//! through a directory descriptor and opens every subfolder with `openat(O_NOFOLLOW)`
//! relative to its parent's descriptor, so a folder swapped for a symlink mid-walk is never
//! followed (SPEC "Security model"). ripgrep's ignore rules apply unchanged ([`super::rules`]
//! uses the `ignore` crate's own matchers); the `ignore` crate's walker itself is not used
//! because it opens folders by path.
//!
//! Why sorted and single-threaded: a parallel walk visits folders in whatever order its
//! threads get to them, so a walk cut by the scan limit or the deadline would hold an
//! arbitrary subset of the tree, and no cursor could continue it without gaps. The walk
//! itself is cheap (directory reads); the expensive part, reading file contents, runs on
//! parallel threads fed by this walk in order (see `grep`), and results are put back in path
//! order.

use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::OFlags;
use toolgate_core::TruncationReason;

use super::rules::Rules;
use super::{Stop, is_skipped_dir};
use crate::confine::Shown;
use crate::confine::door::{self, Entry, Kind};

/// Folders deeper than this keep no descriptor open while their subtree is walked; their
/// children are opened from the walk's top descriptor instead (still beneath it, still
/// without following symlinks), so a deep tree cannot exhaust descriptors.
const MAX_HELD_DIRS: usize = 64;

/// What a search opened: the folder it walks or the one file it searches.
#[derive(Debug)]
pub(crate) enum Top {
    /// A folder, open.
    Dir(OwnedFd),
    /// A regular file, open for reading.
    File(fs_err::File),
}

/// What to walk and how.
#[derive(Debug, Clone)]
pub(crate) struct WalkSpec {
    /// The real folder (or file) to walk.
    pub(crate) root: PathBuf,
    /// `root`, open.
    pub(crate) top: Arc<Top>,
    /// The root `root` lies in, open (its ignore files above `root` are read through it).
    pub(crate) base: Arc<OwnedFd>,
    /// The real path of `base`.
    pub(crate) base_path: PathBuf,
    /// Skip the heavy folders ([`super::SKIPPED_DIRS`]).
    pub(crate) skip_heavy: bool,
    /// Honour `.gitignore`, `.ignore` and git's exclude files.
    pub(crate) use_ignore_files: bool,
    /// Visit only entries after this path (relative to `root`): a cursor's position.
    pub(crate) after: Option<PathBuf>,
    /// Most entries to visit.
    pub(crate) max_scanned: u64,
    /// Which entries of `root` itself are walked (the spill folder outside the roots: only
    /// its spill files).
    pub(crate) shown: Shown,
}

impl WalkSpec {
    /// Opens the regular file at `rel` (as a visit gave it) for reading, through the walk's
    /// descriptor and without following symlinks: what the walk saw is what is read, or
    /// nothing.
    pub(crate) fn open_file(&self, rel: &Path) -> io::Result<fs_err::File> {
        let file = match (&*self.top, rel.as_os_str().is_empty()) {
            (Top::File(file), true) => file.try_clone()?,
            (Top::Dir(dir), false) => door::file(
                door::open_beneath(dir.as_fd(), rel, OFlags::RDONLY | OFlags::NONBLOCK)?,
                self.root.join(rel),
            ),
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "not a file of this walk",
                ));
            }
        };
        if !file.metadata()?.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file",
            ));
        }
        Ok(file)
    }
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

/// One open folder of the walk.
struct Frame {
    /// Its descriptor (`None` past [`MAX_HELD_DIRS`]).
    fd: Option<OwnedFd>,
    /// Its path relative to the walk's root.
    rel: PathBuf,
    /// Its entries, sorted by name.
    entries: Vec<Entry>,
    /// The next entry to visit.
    next: usize,
}

/// Walks `spec.root` in sorted path order, calling `visit` for every entry until it returns
/// `false`, `stop` fires (`cut: timeout`) or the scan limit is reached (`cut: scan_limit`).
pub(crate) fn walk(
    spec: &WalkSpec,
    stop: &Stop,
    mut visit: impl FnMut(&Visit<'_>) -> bool,
) -> WalkEnd {
    let mut end = WalkEnd::default();
    let top = match &*spec.top {
        Top::File(_) => {
            if stop.cancelled() {
                end.cut = Some(TruncationReason::Timeout);
                return end;
            }
            let rel = Path::new("");
            if visit(&Visit {
                path: &spec.root,
                rel,
                is_file: true,
                is_symlink: false,
            }) {
                end.last = Some(rel.to_path_buf());
            }
            return end;
        }
        Top::Dir(fd) => fd,
    };
    let mut rules = spec
        .use_ignore_files
        .then(|| Rules::above(&spec.root, spec.base.as_fd(), &spec.base_path));
    let mut stack: Vec<Frame> = Vec::new();
    match enter(top, &spec.root, PathBuf::new(), rules.as_mut()) {
        Ok(frame) => stack.push(frame),
        Err(_) => {
            end.errors += 1;
            return end;
        }
    }
    // Whether an entry after the cursor was visited. Folders on the way down to the cursor
    // come first and are not progress; until one that is, only a cancellation stops the walk,
    // so that paging with a passed deadline always moves forward.
    let mut moved = false;
    while let Some(frame) = stack.last_mut() {
        let Some(entry) = frame.entries.get_mut(frame.next) else {
            stack.pop();
            if let Some(rules) = rules.as_mut() {
                rules.pop();
            }
            continue;
        };
        frame.next += 1;
        if stop.cancelled() || (moved && stop.stopped()) {
            end.cut = Some(TruncationReason::Timeout);
            break;
        }
        // Each entry is visited once: take its name rather than copy it.
        let name_bytes = std::mem::take(&mut entry.name);
        let kind = entry.kind;
        let rel = frame.rel.join(OsStr::from_bytes(&name_bytes));
        let name = OsStr::from_bytes(&name_bytes);
        let is_dir = kind == Kind::Dir;
        if stack.len() == 1 && !spec.shown.keeps(&name_bytes, kind) {
            continue;
        }
        if spec.skip_heavy && is_dir && is_skipped_dir(name) {
            continue;
        }
        // Prune what lies wholly before the cursor: a folder sorts before everything in it,
        // so its subtree is before the cursor unless the cursor is inside it.
        if let Some(after) = &spec.after
            && !(rel.as_path() >= after.as_path() || after.starts_with(&rel))
        {
            continue;
        }
        let path = spec.root.join(&rel);
        if rules.as_ref().is_some_and(|r| r.ignored(&path, is_dir)) {
            continue;
        }
        if end.scanned >= spec.max_scanned {
            end.cut = Some(TruncationReason::ScanLimit);
            break;
        }
        end.scanned += 1;
        let keep_going = visit(&Visit {
            path: &path,
            rel: &rel,
            is_file: kind == Kind::File,
            is_symlink: kind == Kind::Symlink,
        });
        if !keep_going {
            break;
        }
        moved |= spec
            .after
            .as_deref()
            .is_none_or(|after| rel.as_path() > after);
        end.last = Some(rel.clone());
        if !is_dir {
            continue;
        }
        // The folder is opened relative to its parent's descriptor without following a
        // symlink: if it was swapped for one since it was listed, the open fails.
        let depth = stack.len();
        let opened = match stack.last().and_then(|f| f.fd.as_ref()) {
            Some(parent) => door::open_beneath(
                parent.as_fd(),
                Path::new(name),
                OFlags::RDONLY | OFlags::DIRECTORY,
            ),
            None => door::open_beneath(top.as_fd(), &rel, OFlags::RDONLY | OFlags::DIRECTORY),
        };
        let child =
            opened.and_then(|fd| enter(&fd, &path, rel, rules.as_mut()).map(|frame| (frame, fd)));
        match child {
            Ok((mut frame, fd)) => {
                if depth < MAX_HELD_DIRS {
                    frame.fd = Some(fd);
                }
                stack.push(frame);
            }
            Err(_) => end.errors += 1,
        }
    }
    end
}

/// Reads the folder `fd` (at `path`, `rel` below the walk's root), sorted, and enters its
/// ignore rules.
fn enter(fd: &OwnedFd, path: &Path, rel: PathBuf, rules: Option<&mut Rules>) -> io::Result<Frame> {
    let (mut entries, _) = door::read_entries(fd, usize::MAX)?;
    entries.sort_unstable_by(|a, b| a.name.cmp(&b.name));
    if let Some(rules) = rules {
        rules.push(path, fd.as_fd(), &entries);
    }
    Ok(Frame {
        fd: None,
        rel,
        entries,
        next: 0,
    })
}
