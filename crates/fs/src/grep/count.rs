//! Counting past a full page. Once the page is full no further file is searched for it;
//! the files it did not need are then counted (matching lines only, nothing kept), so a
//! result can say "showing 100 of 2,000 matches" rather than "at least 101". The count
//! stops at [`COUNT_BYTES`] of file contents, the scan limit or the deadline, and is then a
//! lower bound, as before.
//!
//! The budget is taken in path order: the total is exact exactly when the files after the
//! page, in path order, hold at most `COUNT_BYTES` together, so the same tree gives the same
//! answer on every call, however the threads were scheduled.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};

use super::job::{HEAP_LIMIT, Job, Queued, Searched};
use super::sink::StopReader;
use crate::search::walk::walk;

/// Most bytes of files searched to count matches after the page is full (32 MiB: tens of
/// milliseconds for ripgrep's searcher).
pub(crate) const COUNT_BYTES: u64 = 32 << 20;

/// The match count from the page's start to the end of the search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tally {
    /// Matching lines counted.
    pub(crate) matches: u64,
    /// Files with at least one of them.
    pub(crate) files: u64,
    /// Every file was counted to its end: the numbers are the totals, not lower bounds.
    pub(crate) exact: bool,
}

/// One counted file.
#[derive(Debug, Default, Clone, Copy)]
struct Counted {
    matches: u64,
    size: u64,
    /// The count stopped before the file's end (deadline, a too-long line, an error).
    partial: bool,
}

struct Queue {
    files: Vec<(PathBuf, u64)>,
    next: usize,
    done: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The tally of a search whose page filled up: the page's files as searched (`page`; a
/// file whose search stopped at the page's caps is counted again whole), then `unsearched`,
/// then — when `resume` is given — every file the walk reaches after `resume` (`None`
/// inside: from the start), within what is left of the scan limit after `scanned`.
pub(crate) fn tally(
    job: &Job<'_>,
    page: &[Searched],
    unsearched: Vec<Queued>,
    resume: Option<Option<PathBuf>>,
    scanned: u64,
) -> Tally {
    let mut tally = Tally {
        matches: 0,
        files: 0,
        exact: true,
    };
    let mut again = Vec::new();
    for file in page {
        let hits = &file.hits;
        if hits.capped {
            again.push((file.rel.clone(), file.after_line));
        } else if hits.partial || hits.line_too_long {
            tally.exact = false;
        } else {
            tally.matches += hits.matches as u64;
            tally.files += u64::from(hits.matches > 0);
        }
    }
    again.extend(unsearched.into_iter().map(|(_, rel, after)| (rel, after)));
    let counted = count_files(job, again, resume, scanned);
    tally.exact &= counted.exact;
    tally.matches += counted.matches;
    tally.files += counted.files;
    tally
}

/// Counts `first`, then the walk's files after `resume`, in parallel; sums them in path
/// order within [`COUNT_BYTES`].
fn count_files(
    job: &Job<'_>,
    first: Vec<(PathBuf, u64)>,
    resume: Option<Option<PathBuf>>,
    scanned: u64,
) -> Tally {
    let walks = resume.is_some();
    let queue = Mutex::new(Queue {
        files: first,
        next: 0,
        done: !walks,
    });
    let ready = Condvar::new();
    let slots: Mutex<Vec<Option<Counted>>> = Mutex::new(Vec::new());
    let spent = AtomicU64::new(0);
    let over = || spent.load(Ordering::Relaxed) > COUNT_BYTES;
    let threads = job.limits.search_threads().max(1);

    let walk_end = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut searcher = SearcherBuilder::new()
                        .line_number(true)
                        .binary_detection(BinaryDetection::quit(0))
                        .heap_limit(Some(HEAP_LIMIT))
                        .build();
                    loop {
                        let (index, rel, after_line) = {
                            let mut q = lock(&queue);
                            loop {
                                // Files are taken in path order, and only while the bytes
                                // counted so far fit: every file of the in-budget prefix is
                                // taken (see the module docs).
                                if job.stop.stopped() || over() {
                                    return;
                                }
                                if q.next < q.files.len() {
                                    let i = q.next;
                                    q.next += 1;
                                    let (rel, after) = q.files[i].clone();
                                    break (i, rel, after);
                                }
                                if q.done {
                                    return;
                                }
                                q = ready.wait(q).unwrap_or_else(PoisonError::into_inner);
                            }
                        };
                        let counted = count_file(&mut searcher, job, &rel, after_line);
                        spent.fetch_add(counted.size, Ordering::Relaxed);
                        let mut slots = lock(&slots);
                        if slots.len() <= index {
                            slots.resize(index + 1, None);
                        }
                        slots[index] = Some(counted);
                    }
                })
            })
            .collect();
        let end = resume.map(|after| {
            let mut spec = job.scope.walk.clone();
            spec.after = after.clone();
            spec.max_scanned = spec.max_scanned.saturating_sub(scanned);
            let mut stopped = false;
            let end = walk(&spec, job.stop, |v| {
                if over() {
                    stopped = true;
                    return false;
                }
                // The walk visits its cursor entry again (a cursor resumes inside its
                // file): here that file was the page's, counted already.
                if after.as_deref() == Some(v.rel) {
                    return true;
                }
                let named = match v.rel.as_os_str().is_empty() {
                    true => v.path.file_name().map_or(v.rel, Path::new),
                    false => v.rel,
                };
                if v.is_file && job.glob.is_none_or(|g| g.matches(named)) {
                    lock(&queue).files.push((v.rel.to_path_buf(), 0));
                    ready.notify_one();
                }
                true
            });
            end.cut.is_none() && !stopped
        });
        lock(&queue).done = true;
        ready.notify_all();
        for handle in workers {
            if let Err(panic) = handle.join() {
                std::panic::resume_unwind(panic);
            }
        }
        end
    });

    let files = lock(&queue).files.len();
    let slots = slots.into_inner().unwrap_or_else(PoisonError::into_inner);
    let mut tally = Tally {
        matches: 0,
        files: 0,
        exact: walk_end.unwrap_or(true),
    };
    let mut bytes = 0u64;
    for i in 0..files {
        let Some(counted) = slots.get(i).copied().flatten() else {
            tally.exact = false;
            break;
        };
        bytes += counted.size;
        if bytes > COUNT_BYTES {
            tally.exact = false;
            break;
        }
        tally.matches += counted.matches;
        tally.files += u64::from(counted.matches > 0);
        if counted.partial {
            tally.exact = false;
            break;
        }
    }
    tally
}

/// Counts the matching lines of one file after line `after_line`.
fn count_file(searcher: &mut Searcher, job: &Job<'_>, rel: &Path, after_line: u64) -> Counted {
    let Ok(file) = job.scope.walk.open_file(None, rel) else {
        // Unreadable files count nothing, on the page as here.
        return Counted::default();
    };
    let size = file.metadata().map_or(0, |m| m.len());
    if size > COUNT_BYTES {
        // Over the budget on its own: the total cannot be exact, and reading it would only
        // delay the answer.
        return Counted {
            size,
            partial: true,
            ..Counted::default()
        };
    }
    let mut reader = StopReader {
        inner: file,
        stop: job.stop,
        first: false,
        stopped: false,
    };
    let mut sink = CountSink {
        after_line,
        matches: 0,
        binary: false,
    };
    let result = searcher.search_reader(job.matcher, &mut reader, &mut sink);
    if sink.binary {
        return Counted {
            size,
            ..Counted::default()
        };
    }
    Counted {
        matches: sink.matches,
        size,
        partial: reader.stopped || result.is_err(),
    }
}

/// Counts matching lines; skips binary files (the page skips them too).
struct CountSink {
    after_line: u64,
    matches: u64,
    binary: bool,
}

impl Sink for CountSink {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        if mat.line_number().unwrap_or(0) > self.after_line {
            self.matches += 1;
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _offset: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}
