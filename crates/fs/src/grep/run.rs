//! The search itself: the sorted walk feeds files, in path order, to a pool of searcher
//! threads; each file's hits go into its slot, and the page is read from the contiguous
//! prefix of finished slots. Once finished files hold more matches (or bytes) than the page
//! can show, no further file is started: files are taken in path order, so everything the
//! page needs lies before the ones not yet started.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use grep_regex::RegexMatcher;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder};

use super::count::{self, Tally};
use super::sink::{FileHits, FileSink, StopReader};
use crate::find::NameFilter;
use crate::search::walk::{WalkEnd, walk};
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
    /// Full path.
    pub(crate) path: PathBuf,
    /// Path below the walk's root.
    pub(crate) rel: PathBuf,
    /// Lines up to this one were skipped (the cursor's line in the cursor's file).
    pub(crate) after_line: u64,
    /// What it yielded.
    pub(crate) hits: FileHits,
}

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
}

/// A file to search: its full path, its path below the walk's root, the line to resume after.
pub(crate) type Queued = (PathBuf, PathBuf, u64);

struct Queue {
    files: Vec<Queued>,
    next: usize,
    done: bool,
}

struct Results {
    slots: Vec<Option<FileHits>>,
    matches: usize,
    bytes: usize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs `job`.
pub(crate) fn run(job: &Job<'_>) -> Outcome {
    let queue = Mutex::new(Queue {
        files: Vec::new(),
        next: 0,
        done: false,
    });
    let ready = Condvar::new();
    let results = Mutex::new(Results {
        slots: Vec::new(),
        matches: 0,
        bytes: 0,
    });
    let full = AtomicBool::new(false);
    // Whether the visitor ended the walk (the page was full) rather than the walk's end.
    let mut walk_stopped = false;
    let threads = job.limits.search_threads().max(1);

    let walk_end = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| s.spawn(|| worker(job, &queue, &ready, &results, &full)))
            .collect();
        let scope = job.scope;
        let end = walk(&scope.walk, job.stop, |v| {
            if full.load(Ordering::Relaxed) {
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
            lock(&queue)
                .files
                .push((v.path.to_path_buf(), v.rel.to_path_buf(), after_line));
            ready.notify_one();
            true
        });
        lock(&queue).done = true;
        ready.notify_all();
        // Joined one by one, not only at the scope's end: the scope waits for the closures
        // to return, a join for the threads to be gone, so nothing of them outlives the
        // call (LeakSanitizer flagged the exiting threads' memory). A worker's panic
        // resumes here as it would at the scope's end.
        for handle in workers {
            if let Err(panic) = handle.join() {
                std::panic::resume_unwind(panic);
            }
        }
        end
    });

    let queue = queue.into_inner().unwrap_or_else(PoisonError::into_inner);
    let mut results = results.into_inner().unwrap_or_else(PoisonError::into_inner);
    let mut files = Vec::new();
    let mut rest = Vec::new();
    let mut all_searched = true;
    let mut queued = queue.files.into_iter();
    for (i, (path, rel, after_line)) in queued.by_ref().enumerate() {
        let Some(hits) = results.slots.get_mut(i).and_then(Option::take) else {
            all_searched = false;
            // Not searched for the page: counted below.
            rest.push((path, rel, after_line));
            break;
        };
        let partial = hits.partial;
        files.push(Searched {
            path,
            rel,
            after_line,
            hits,
        });
        if partial {
            all_searched = false;
            break;
        }
    }
    rest.extend(queued);
    let page_full = full.load(Ordering::Relaxed);
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
    }
}

fn worker(
    job: &Job<'_>,
    queue: &Mutex<Queue>,
    ready: &Condvar,
    results: &Mutex<Results>,
    full: &AtomicBool,
) {
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .before_context(job.context)
        .after_context(job.context)
        .heap_limit(Some(HEAP_LIMIT))
        .build();
    loop {
        let (index, rel, after_line) = {
            let mut q = lock(queue);
            loop {
                // The first file is searched even past the deadline (progress, see `Stop`).
                if full.load(Ordering::Relaxed)
                    || job.stop.cancelled()
                    || (q.next > 0 && job.stop.stopped())
                {
                    return;
                }
                if q.next < q.files.len() {
                    let i = q.next;
                    q.next += 1;
                    let (_, rel, after) = q.files[i].clone();
                    break (i, rel, after);
                }
                if q.done {
                    return;
                }
                q = ready.wait(q).unwrap_or_else(PoisonError::into_inner);
            }
        };
        let hits = search_file(&mut searcher, job, &rel, after_line, index == 0);
        let mut r = lock(results);
        if r.slots.len() <= index {
            r.slots.resize_with(index + 1, || None);
        }
        r.matches += hits.matches;
        r.bytes += hits.bytes;
        r.slots[index] = Some(hits);
        if r.matches > job.limit || r.bytes > job.limits.max_payload_bytes {
            full.store(true, Ordering::Relaxed);
            drop(r);
            ready.notify_all();
        }
    }
}

/// Searches one file, keeping at most what a page could show of it.
fn search_file(
    searcher: &mut Searcher,
    job: &Job<'_>,
    rel: &Path,
    after_line: u64,
    first: bool,
) -> FileHits {
    // Opened through the walk's descriptor without following symlinks: a folder on the way
    // swapped for a symlink since the walk saw the file fails the open instead of leading
    // out of the root.
    let file = match job.scope.walk.open_file(rel) {
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
