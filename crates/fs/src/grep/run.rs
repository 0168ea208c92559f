//! The search itself: the sorted walk feeds files, in path order, to a pool of searcher
//! threads; each file's hits go into its slot, and the page is read from the contiguous
//! prefix of finished slots. Once finished files hold more matches (or bytes) than the page
//! can show, no further file is started: files are taken in path order, so everything the
//! page needs lies before the ones not yet started.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder};

use super::count::{self, Tally};
use super::job::{HEAP_LIMIT, Job, Queued, Searched};
use super::sink::{FileHits, FileSink, StopReader};
use crate::search::walk::{WalkEnd, walk};

/// What a grep call found.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// The finished files in path order, up to the first one not finished.
    pub(crate) files: Vec<Searched>,
    /// Every walked file made it into `files` whole: nothing is missing before the walk's end.
    pub(crate) all_searched: bool,
    /// Searching stopped early because the page was already full.
    pub(crate) page_full: bool,
    /// How the walk ended.
    pub(crate) walk: WalkEnd,
    /// The match count past the page, when the page filled up (see [`super::count`]).
    pub(crate) tally: Option<Tally>,
    /// The walk's root, which the files' paths are below.
    pub(crate) root: PathBuf,
}

impl Outcome {
    /// The full path of `file`.
    pub(crate) fn path(&self, file: &Searched) -> PathBuf {
        self.root.join(&file.rel)
    }
}

/// Files the walk queues at a time: one lock per batch rather than per file.
const BATCH: usize = 32;

/// Files queued and not yet taken past which the walking thread searches them itself until
/// fewer are left: with no more threads than CPUs, a walk running ahead would leave a CPU
/// idle; and each queued file keeps its folder's descriptor open, so the queue stays short.
const MAX_BACKLOG: usize = 256;

struct Queue {
    files: Vec<Queued>,
    next: usize,
    done: bool,
    /// Workers asleep on `ready`: the walk wakes one only when one sleeps.
    waiting: usize,
}

/// What the walking thread and the workers share.
struct Shared<'a> {
    job: &'a Job<'a>,
    queue: Mutex<Queue>,
    ready: Condvar,
    /// Matches and bytes kept so far, over all finished files.
    matches: AtomicUsize,
    bytes: AtomicUsize,
    /// The page is full: no further file is started.
    full: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs `job`. The calling thread walks and searches; `threads - 1` more search, so the call
/// keeps as many threads busy as it has CPUs (ripgrep's walker does the same).
pub(crate) fn run(job: &Job<'_>) -> Outcome {
    let shared = Shared {
        job,
        queue: Mutex::new(Queue {
            files: Vec::new(),
            next: 0,
            done: false,
            waiting: 0,
        }),
        ready: Condvar::new(),
        matches: AtomicUsize::new(0),
        bytes: AtomicUsize::new(0),
        full: AtomicBool::new(false),
    };
    let threads = job.limits.search_threads().max(1);
    // Whether the visitor ended the walk (the page was full) rather than the walk's end.
    let mut walk_stopped = false;

    let (walk_end, finished) = std::thread::scope(|s| {
        let workers: Vec<_> = (1..threads)
            .map(|_| s.spawn(|| shared.work(&mut searcher(job))))
            .collect();
        let mut searcher = searcher(job);
        let mut finished = Vec::new();
        let mut batch: Vec<Queued> = Vec::with_capacity(BATCH);
        let scope = job.scope;
        let end = walk(&scope.walk, job.stop, |v| {
            if shared.full.load(Ordering::Relaxed) {
                walk_stopped = true;
                return false;
            }
            // A single file searched as `path` has an empty relative path: its glob check
            // goes by its name.
            let named = match v.rel.as_os_str().is_empty() {
                true => v.path.file_name().map_or(v.rel, Path::new),
                false => v.rel,
            };
            if !v.is_file || job.glob.is_some_and(|g| !g.matches(named)) {
                return true;
            }
            let after_line = if scope.walk.after.as_deref() == Some(v.rel) {
                if scope.after_line == u64::MAX {
                    return true;
                }
                scope.after_line
            } else {
                0
            };
            batch.push((v.dir.cloned(), v.rel.to_path_buf(), after_line));
            if batch.len() >= BATCH {
                let mut backlog = shared.push(&mut batch);
                while backlog > MAX_BACKLOG && !shared.full.load(Ordering::Relaxed) {
                    backlog = shared.help(&mut searcher, &mut finished);
                }
            }
            true
        });
        shared.push(&mut batch);
        {
            let mut q = lock(&shared.queue);
            q.done = true;
        }
        shared.ready.notify_all();
        // The walk is done: this thread searches what is left, with the others.
        finished.extend(shared.work(&mut searcher));
        // Joined one by one, not only at the scope's end: the scope waits for the closures
        // to return, a join for the threads to be gone, so nothing of them outlives the
        // call (LeakSanitizer flagged the exiting threads' memory). A worker's panic
        // resumes here as it would at the scope's end.
        for handle in workers {
            match handle.join() {
                Ok(done) => finished.extend(done),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        (end, finished)
    });

    let queue = shared
        .queue
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    let mut slots: Vec<Option<(PathBuf, FileHits)>> = Vec::new();
    slots.resize_with(queue.files.len(), || None);
    for (index, rel, hits) in finished {
        if let Some(slot) = slots.get_mut(index) {
            *slot = Some((rel, hits));
        }
    }
    let mut files = Vec::new();
    let mut rest = Vec::new();
    let mut all_searched = true;
    let mut queued = queue.files.into_iter().zip(slots);
    for (entry, slot) in queued.by_ref() {
        let Some((rel, hits)) = slot else {
            all_searched = false;
            // Not searched for the page: counted below.
            rest.push(entry);
            break;
        };
        let partial = hits.partial;
        files.push(Searched {
            rel,
            after_line: entry.2,
            hits,
        });
        if partial {
            all_searched = false;
            break;
        }
    }
    rest.extend(queued.map(|(entry, _)| entry));
    let page_full = shared.full.load(Ordering::Relaxed);
    // A full page is not the end of the count: the files it did not need are counted (no
    // lines kept) while that stays cheap, so the total can be exact.
    let tally = (page_full && walk_end.cut.is_none() && !job.stop.stopped()).then(|| {
        let resume = walk_stopped.then(|| {
            walk_end
                .resume_after(&job.scope.walk)
                .map(Path::to_path_buf)
        });
        count::tally(job, &files, rest, resume, walk_end.scanned)
    });
    Outcome {
        files,
        all_searched,
        page_full,
        walk: walk_end,
        tally,
        root: job.scope.walk.root.clone(),
    }
}

/// A searcher configured for `job`.
fn searcher(job: &Job<'_>) -> Searcher {
    SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .before_context(job.context)
        .after_context(job.context)
        .heap_limit(Some(HEAP_LIMIT))
        .build()
}

impl Shared<'_> {
    /// Queues `batch` (emptying it), waking a sleeping worker; returns the files queued and
    /// not yet taken.
    fn push(&self, batch: &mut Vec<Queued>) -> usize {
        if batch.is_empty() {
            return 0;
        }
        let mut q = lock(&self.queue);
        q.files.append(batch);
        let backlog = q.files.len() - q.next;
        let wake = q.waiting > 0;
        drop(q);
        if wake {
            self.ready.notify_all();
        }
        backlog
    }

    /// Searches one queued file into `out` (the walking thread lending a hand); returns the
    /// files still queued, 0 when nothing could be taken.
    fn help(&self, searcher: &mut Searcher, out: &mut Vec<(usize, PathBuf, FileHits)>) -> usize {
        let Some((index, dir, rel, after_line)) = self.take(false) else {
            return 0;
        };
        let hits = self.search(searcher, index, dir.as_deref(), &rel, after_line);
        out.push((index, rel, hits));
        let q = lock(&self.queue);
        q.files.len() - q.next
    }

    /// Searches queued files until the walk is done and the queue empty (or the page full,
    /// or the call stopped); returns the finished files by index.
    fn work(&self, searcher: &mut Searcher) -> Vec<(usize, PathBuf, FileHits)> {
        let mut done = Vec::new();
        while let Some((index, dir, rel, after_line)) = self.take(true) {
            let hits = self.search(searcher, index, dir.as_deref(), &rel, after_line);
            done.push((index, rel, hits));
        }
        done
    }

    /// The next queued file; `wait`: sleep until one is queued or the walk is done.
    fn take(&self, wait: bool) -> Option<(usize, Option<Arc<OwnedFd>>, PathBuf, u64)> {
        let job = self.job;
        let mut q = lock(&self.queue);
        loop {
            // The first file is searched even past the deadline (progress, see `Stop`).
            if self.full.load(Ordering::Relaxed)
                || job.stop.cancelled()
                || (q.next > 0 && job.stop.stopped())
            {
                return None;
            }
            if q.next < q.files.len() {
                let i = q.next;
                q.next += 1;
                // Taken, not cloned: the folder's descriptor closes with its last file.
                let (dir, rel, after) = &mut q.files[i];
                return Some((i, dir.take(), std::mem::take(rel), *after));
            }
            if q.done || !wait {
                return None;
            }
            q.waiting += 1;
            q = self.ready.wait(q).unwrap_or_else(PoisonError::into_inner);
            q.waiting -= 1;
        }
    }

    /// Searches one file and counts what it kept towards the page.
    fn search(
        &self,
        searcher: &mut Searcher,
        index: usize,
        dir: Option<&OwnedFd>,
        rel: &Path,
        after_line: u64,
    ) -> FileHits {
        let job = self.job;
        let hits = search_file(searcher, job, dir, rel, after_line, index == 0);
        let matches = self.matches.fetch_add(hits.matches, Ordering::Relaxed) + hits.matches;
        let bytes = self.bytes.fetch_add(hits.bytes, Ordering::Relaxed) + hits.bytes;
        if matches > job.limit || bytes > job.limits.max_payload_bytes {
            self.full.store(true, Ordering::Relaxed);
            // Taken under the lock, so no worker misses the wake-up between its check of
            // `full` and its wait.
            drop(lock(&self.queue));
            self.ready.notify_all();
        }
        hits
    }
}

/// Searches one file, keeping at most what a page could show of it.
fn search_file(
    searcher: &mut Searcher,
    job: &Job<'_>,
    dir: Option<&OwnedFd>,
    rel: &Path,
    after_line: u64,
    first: bool,
) -> FileHits {
    // Opened through the walk's descriptor without following symlinks: a folder on the way
    // swapped for a symlink since the walk saw the file fails the open instead of leading
    // out of the root.
    let file = match job.scope.walk.open_file(dir, rel) {
        Ok(file) => file,
        Err(_) => {
            return FileHits {
                failed: true,
                ..FileHits::default()
            };
        }
    };
    let mut reader = StopReader {
        inner: file,
        stop: job.stop,
        first,
        stopped: false,
    };
    let mut sink = FileSink::new(
        after_line,
        job.context,
        job.limits.max_line_chars,
        job.limit.saturating_add(1),
        job.limits.max_payload_bytes.saturating_add(1),
    );
    let result = searcher.search_reader(job.matcher, &mut reader, &mut sink);
    let mut hits = sink.out;
    hits.partial = reader.stopped;
    match result {
        Ok(()) => {}
        // grep-searcher's error when a line outgrows the heap limit: the lines before it
        // were searched, the rest of the file was not.
        Err(e) if !hits.partial && e.to_string().contains("allocation limit") => {
            hits.line_too_long = true;
        }
        Err(_) => hits.failed = true,
    }
    if hits.binary || hits.failed {
        hits.hits.clear();
        hits.matches = 0;
        hits.bytes = 0;
    }
    hits
}
