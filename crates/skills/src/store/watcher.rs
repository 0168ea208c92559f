//! The watch half of the store: the kernel watches on the roots and the thread that
//! debounces their events into updates and runs the periodic rescan.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use notify::{EventKind, RecursiveMode, Watcher};

use super::{Shared, lock};

/// Longest a burst of events may hold back an update, as a multiple of the debounce: a
/// file written to without pause still reaches the catalog.
const MAX_HOLD: u32 = 5;

/// How often the store rescans when watching failed (and rescans are slower or off).
pub(super) const FALLBACK_RESCAN: Duration = Duration::from_secs(10);

/// The rescan period while watching has failed.
pub(super) fn fallback_every(rescan: Option<Duration>) -> Duration {
    rescan.map_or(FALLBACK_RESCAN, |every| every.min(FALLBACK_RESCAN))
}

/// The kernel watches and which folders they are on.
pub(super) struct Armed {
    watcher: notify::RecommendedWatcher,
    watched: BTreeSet<PathBuf>,
    /// Whether a watch failure was logged already (inotify limits): once is enough.
    warned: bool,
}

impl Armed {
    /// Nothing watched yet: [`Shared::arm`] adds the watches.
    pub(super) fn new(watcher: notify::RecommendedWatcher) -> Self {
        Self {
            watcher,
            watched: BTreeSet::new(),
            warned: false,
        }
    }
}

/// What the watch thread receives.
pub(super) enum Msg {
    Event(notify::Result<notify::Event>),
    Stop,
}

/// The watch thread: debounces events into updates and runs the periodic rescan.
pub(super) fn worker(
    shared: &Shared,
    rx: &mpsc::Receiver<Msg>,
    debounce: Duration,
    rescan: Option<Duration>,
) {
    let mut pending: BTreeSet<PathBuf> = BTreeSet::new();
    let mut quiet_at: Option<Instant> = None;
    let mut first_at: Option<Instant> = None;
    let mut next_rescan = rescan.map(|every| Instant::now() + every);
    loop {
        // Watching failed (at start or for a folder since): rescans stand in for events.
        let rescan = match shared.degraded.load(Ordering::Relaxed) {
            true => Some(fallback_every(rescan)),
            false => rescan,
        };
        if let Some(every) = rescan {
            let due = Instant::now() + every;
            if next_rescan.is_none_or(|at| at > due) {
                next_rescan = Some(due);
            }
        }
        let deadline = [quiet_at, next_rescan].into_iter().flatten().min();
        let received = match deadline {
            Some(at) => rx.recv_timeout(at.saturating_duration_since(Instant::now())),
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match received {
            Ok(Msg::Stop) | Err(RecvTimeoutError::Disconnected) => return,
            Ok(Msg::Event(Ok(event))) => {
                if event.need_rescan() {
                    // The kernel dropped events: only a full read is safe.
                    next_rescan = Some(Instant::now());
                    continue;
                }
                if !relevant(&event.kind) {
                    continue;
                }
                pending.extend(event.paths);
                let now = Instant::now();
                let first = *first_at.get_or_insert(now);
                quiet_at = Some((now + debounce).min(first + debounce * MAX_HOLD));
            }
            Ok(Msg::Event(Err(e))) => {
                tracing::warn!(error = %e, "skills: watch error; the next rescan catches up");
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
        let now = Instant::now();
        if quiet_at.is_some_and(|at| at <= now) {
            let paths: Vec<PathBuf> = std::mem::take(&mut pending).into_iter().collect();
            shared.apply(&paths);
            quiet_at = None;
            first_at = None;
        }
        if let (Some(at), Some(every)) = (next_rescan, rescan)
            && at <= now
        {
            // Events already received are applied first, so only what they missed differs.
            if !pending.is_empty() {
                let paths: Vec<PathBuf> = std::mem::take(&mut pending).into_iter().collect();
                shared.apply(&paths);
                quiet_at = None;
                first_at = None;
            }
            shared.rescan();
            next_rescan = Some(Instant::now() + every);
        } else if next_rescan.is_some_and(|at| at <= now) {
            // A kernel overflow without periodic rescans: one rescan now.
            shared.rescan();
            next_rescan = None;
        }
    }
}

/// Whether an event can change what a skill folder holds. Opening or reading a file
/// cannot, and the scan itself opens every skill file: reacting to opens would loop.
fn relevant(kind: &EventKind) -> bool {
    use notify::event::{AccessKind, AccessMode};
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

impl Shared {
    /// Whether any of `paths` is a folder being watched.
    pub(super) fn watches_any(&self, paths: &[PathBuf]) -> bool {
        lock(&self.watcher)
            .as_ref()
            .is_some_and(|armed| paths.iter().any(|p| armed.watched.contains(p)))
    }

    /// Drops the watches of folders an event named: a folder deleted or replaced loses its
    /// kernel watch, and [`Shared::arm`] then watches whatever is there now.
    pub(super) fn forget_watches(&self, paths: &[PathBuf]) {
        let mut guard = lock(&self.watcher);
        let Some(armed) = guard.as_mut() else { return };
        for path in paths {
            if armed.watched.remove(path) {
                let _ = armed.watcher.unwatch(path);
            }
        }
    }

    /// Watches what the tracked roots need now: each existing root and its folders, or the
    /// nearest existing parent of a root that does not exist yet.
    pub(super) fn arm(&self) {
        let roots: Vec<PathBuf> = lock(&self.state)
            .roots
            .keys()
            .map(|r| r.path.clone())
            .collect();
        let mut desired = BTreeSet::new();
        for root in &roots {
            if root.is_dir() {
                desired.insert(root.clone());
                if let Ok(names) = fs_err::read_dir(root) {
                    let dirs = names
                        .filter_map(Result::ok)
                        .filter(|e| e.file_name().as_encoded_bytes().first() != Some(&b'.'))
                        .map(|e| e.path())
                        .filter(|p| p.is_dir())
                        .take(crate::scan::MAX_ENTRIES);
                    desired.extend(dirs);
                }
            } else if let Some(parent) = root.ancestors().skip(1).find(|a| a.is_dir()) {
                desired.insert(parent.to_path_buf());
            }
        }
        let mut guard = lock(&self.watcher);
        let Some(armed) = guard.as_mut() else { return };
        let stale: Vec<PathBuf> = armed.watched.difference(&desired).cloned().collect();
        for path in stale {
            let _ = armed.watcher.unwatch(&path);
            armed.watched.remove(&path);
        }
        let missing: Vec<PathBuf> = desired.difference(&armed.watched).cloned().collect();
        for path in missing {
            match armed.watcher.watch(&path, RecursiveMode::NonRecursive) {
                Ok(()) => {
                    armed.watched.insert(path);
                }
                // Gone since it was listed: the event that removed it re-arms.
                Err(e) if matches!(e.kind, notify::ErrorKind::PathNotFound) => {}
                Err(e) => {
                    self.degraded.store(true, Ordering::Relaxed);
                    if !armed.warned {
                        armed.warned = true;
                        tracing::warn!(
                            path = %path.display(),
                            error = %e,
                            "skills: cannot watch a skill folder (raise fs.inotify.max_user_watches?); changes are picked up by a periodic rescan instead"
                        );
                    }
                }
            }
        }
    }
}
