//! The one walk both searches use: a sorted, depth-first walk that reads every folder
//! through a directory descriptor and opens every subfolder with `openat(O_NOFOLLOW)`
//! relative to its parent's descriptor, so a folder swapped for a symlink mid-walk is never
//! followed. ripgrep's ignore rules apply unchanged ([`super::rules`] uses the `ignore`
//! crate's own matchers); the `ignore` crate's walker itself is not used because it opens
//! folders by path.
//!
//! Why sorted and single-threaded: a parallel walk visits folders in whatever order its
//! threads get to them, so a walk cut by the scan limit or the deadline would hold an
//! arbitrary subset of the tree, and no cursor could continue it without gaps. The walk
//! itself is cheap (directory reads); the expensive part, reading file contents, runs on
//! parallel threads fed by this walk in order (see `grep`), and results are put back in path
//! order.

use std::ffi::OsStr;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::OFlags;
use toolgate_core::TruncationReason;

use super::listing::Listing;
use super::rules::Rules;
use super::{Stop, is_skipped_dir};
use crate::confine::Shown;
use crate::confine::door::{self, Kind};

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
    /// Opens the regular file at `rel` (as a visit gave it, with the visit's `dir`) for
    /// reading, relative to the folder the walk listed it in and without following symlinks:
    /// what the walk saw is what is read, or nothing.
    pub(crate) fn open_file(&self, dir: Option<&OwnedFd>, rel: &Path) -> io::Result<fs_err::File> {
        let flags = OFlags::RDONLY | OFlags::NONBLOCK;
        let file = match (&*self.top, rel.as_os_str().is_empty()) {
            (Top::File(file), true) => file.try_clone()?,
            (Top::Dir(top), false) => {
                let single = rel.components().nth(1).is_none();
                let fd = match (dir, rel.file_name()) {
                    (Some(dir), Some(name)) => door::open_child(dir.as_fd(), name, flags)?,
                    (None, Some(name)) if single => door::open_child(top.as_fd(), name, flags)?,
                    _ => door::open_beneath(top.as_fd(), rel, flags)?,
                };
                door::file(fd, self.root.join(rel))
            }
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "not a file of this walk",
                ));
            }
        };
        // A FIFO or device swapped in since the folder was read is not read.
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
    /// The folder holding it, open (`None`: the walk's top, or a folder too deep to keep
    /// open): [`WalkSpec::open_file`] opens the entry relative to it.
    pub(crate) dir: Option<&'a Arc<OwnedFd>>,
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
    /// Its descriptor (`None` for the walk's top, whose descriptor is `spec.top`, and past
    /// [`MAX_HELD_DIRS`]); shared with the files queued for searching, which are opened
    /// relative to it.
    fd: Option<Arc<OwnedFd>>,
    /// Length of its path relative to the walk's root, in the walk's path buffer.
    rel_len: usize,
    /// Its entries.
    listing: Listing,
    /// The next entry to visit.
    next: usize,
}

/// A path built in place: the walk's root, then the entry's path below it. Entries reuse
/// one buffer instead of joining a new `PathBuf` each.
struct PathBuffer {
    bytes: Vec<u8>,
    /// Where the part below the root starts.
    rel_start: usize,
}

impl PathBuffer {
    fn new(root: &Path) -> Self {
        let mut bytes = root.as_os_str().as_bytes().to_vec();
        if !bytes.ends_with(b"/") {
            bytes.push(b'/');
        }
        let rel_start = bytes.len();
        Self { bytes, rel_start }
    }

    /// Sets the relative part to the folder prefix of length `rel_len` plus `name`.
    fn set(&mut self, rel_len: usize, name: &[u8]) {
        self.bytes.truncate(self.rel_start + rel_len);
        if rel_len > 0 {
            self.bytes.push(b'/');
        }
        self.bytes.extend_from_slice(name);
    }

    fn rel_len(&self) -> usize {
        self.bytes.len() - self.rel_start
    }

    fn rel(&self) -> &Path {
        Path::new(OsStr::from_bytes(&self.bytes[self.rel_start..]))
    }

    fn full(&self) -> &Path {
        Path::new(OsStr::from_bytes(&self.bytes))
    }
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
                dir: None,
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
    let mut buf = vec![MaybeUninit::<u8>::uninit(); door::DIR_BUF_BYTES];
    let mut stack: Vec<Frame> = Vec::new();
    // The top is read through a descriptor of its own: `spec.top` stays at its start.
    let first = door::open_beneath(
        top.as_fd(),
        Path::new(""),
        OFlags::RDONLY | OFlags::DIRECTORY,
    )
    .and_then(|reader| enter(reader.as_fd(), &spec.root, rules.as_mut(), &mut buf));
    match first {
        Ok(listing) => stack.push(Frame {
            fd: None,
            rel_len: 0,
            listing,
            next: 0,
        }),
        Err(_) => {
            end.errors += 1;
            return end;
        }
    }
    let mut path = PathBuffer::new(&spec.root);
    // The last entry fully visited, relative to the root (a buffer reused per entry).
    let mut last: Option<Vec<u8>> = None;
    // Whether an entry after the cursor was visited. Folders on the way down to the cursor
    // come first and are not progress; until one that is, only a cancellation stops the walk,
    // so that paging with a passed deadline always moves forward.
    let mut moved = false;
    while let Some(frame) = stack.last_mut() {
        let Some(slot) = frame.listing.slot(frame.next) else {
            stack.pop();
            if let Some(rules) = rules.as_mut() {
                rules.pop();
            }
            continue;
        };
        frame.next += 1;
        let depth = stack.len();
        let frame = &stack[depth - 1];
        if stop.cancelled() || (moved && stop.stopped()) {
            end.cut = Some(TruncationReason::Timeout);
            break;
        }
        let kind = slot.kind;
        let is_dir = kind == Kind::Dir;
        let name_bytes = frame.listing.name(&slot);
        if depth == 1 && !spec.shown.keeps(name_bytes, kind) {
            continue;
        }
        if spec.skip_heavy && is_dir && is_skipped_dir(OsStr::from_bytes(name_bytes)) {
            continue;
        }
        path.set(frame.rel_len, name_bytes);
        let rel = path.rel();
        // Prune what lies wholly before the cursor: a folder sorts before everything in it,
        // so its subtree is before the cursor unless the cursor is inside it.
        if let Some(after) = &spec.after
            && !(rel >= after.as_path() || after.starts_with(rel))
        {
            continue;
        }
        if rules
            .as_ref()
            .is_some_and(|r| r.ignored(path.full(), is_dir))
        {
            continue;
        }
        if end.scanned >= spec.max_scanned {
            end.cut = Some(TruncationReason::ScanLimit);
            break;
        }
        end.scanned += 1;
        let keep_going = visit(&Visit {
            path: path.full(),
            rel,
            is_file: kind == Kind::File,
            is_symlink: kind == Kind::Symlink,
            dir: frame.fd.as_ref(),
        });
        if !keep_going {
            break;
        }
        moved |= spec.after.as_deref().is_none_or(|after| rel > after);
        let kept = last.get_or_insert_with(Vec::new);
        kept.clear();
        kept.extend_from_slice(rel.as_os_str().as_bytes());
        if !is_dir {
            continue;
        }
        // The folder is opened relative to its parent's descriptor without following a
        // symlink: if it was swapped for one since it was listed, the open fails. The fresh
        // descriptor is read directly (its position is at the start).
        let name = OsStr::from_bytes(frame.listing.name(&slot));
        let flags = OFlags::RDONLY | OFlags::DIRECTORY;
        let opened = match frame.fd.as_ref() {
            Some(parent) => door::open_child(parent.as_fd(), name, flags),
            None if depth == 1 => door::open_child(top.as_fd(), name, flags),
            None => door::open_beneath(top.as_fd(), rel, flags),
        };
        let child = opened.and_then(|fd| {
            enter(fd.as_fd(), path.full(), rules.as_mut(), &mut buf).map(|listing| (listing, fd))
        });
        match child {
            Ok((listing, fd)) => stack.push(Frame {
                fd: (depth < MAX_HELD_DIRS).then(|| Arc::new(fd)),
                rel_len: path.rel_len(),
                listing,
                next: 0,
            }),
            Err(_) => end.errors += 1,
        }
    }
    end.last = last.map(|bytes| PathBuf::from(std::ffi::OsString::from_vec(bytes)));
    end
}

/// Reads the folder `fd` (at `path`), sorted, and enters its ignore rules.
fn enter(
    fd: BorrowedFd<'_>,
    path: &Path,
    rules: Option<&mut Rules>,
    buf: &mut [MaybeUninit<u8>],
) -> io::Result<Listing> {
    let listing = Listing::read(fd, buf)?;
    if let Some(rules) = rules {
        rules.push(path, fd, &listing);
    }
    Ok(listing)
}
