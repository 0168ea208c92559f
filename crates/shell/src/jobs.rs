//! Background jobs of one session (`job_output(offset, limit)` → chunk, next offset, end of
//! output): a bounded table, output read back from the spill files by byte offset, and
//! every running job stopped when the session ends.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustix::process::Signal;
use tokio::sync::watch;
use toolgate_budget::SpillStore;

use crate::capture::StreamProgress;
use crate::error::ShellError;
use crate::process::ProcessGroup;
use crate::run::{Ending, Finished, StopReason, StopSignal};

/// Which output stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Which {
    Stdout,
    Stderr,
}

impl Which {
    pub fn name(self) -> &'static str {
        match self {
            Self::Stdout => "stdout",
            Self::Stderr => "stderr",
        }
    }

    fn index(self) -> usize {
        match self {
            Self::Stdout => 0,
            Self::Stderr => 1,
        }
    }
}

/// One stream of a job: its file and how much of it is written.
#[derive(Debug)]
pub(crate) struct JobStream {
    pub path: PathBuf,
    pub progress: Arc<StreamProgress>,
}

/// How a finished job ended.
#[derive(Debug, Clone)]
pub(crate) struct JobEnd {
    pub ending: Ending,
    pub elapsed: Duration,
    /// Problems worth telling the model (write errors, output limit, leftovers).
    pub notes: Vec<String>,
    /// The signal that brought the group down, when it was stopped.
    pub stop_signal: Option<Signal>,
}

/// A background job.
#[derive(Debug)]
pub(crate) struct Job {
    pub id: String,
    /// The command, shortened for listings.
    pub label: String,
    pub pid: i32,
    pub started: Instant,
    pub stop: Arc<StopSignal>,
    pub streams: [JobStream; 2],
    end: Mutex<Option<JobEnd>>,
    done: watch::Sender<bool>,
    /// Held while running, so the session's end can signal the group at once.
    group: Mutex<Option<Arc<ProcessGroup>>>,
}

/// A page of a job's output.
#[derive(Debug)]
pub(crate) struct Page {
    pub text: String,
    pub start: u64,
    pub end: u64,
    /// Bytes in the stream so far.
    pub len: u64,
    /// How the job had ended when the page was read (`None`: it was running).
    pub ended: Option<JobEnd>,
}

impl Job {
    pub fn new(
        id: String,
        command: &str,
        pid: i32,
        stop: Arc<StopSignal>,
        streams: [JobStream; 2],
        group: Arc<ProcessGroup>,
    ) -> Self {
        Self {
            id,
            label: shorten(command, 80),
            pid,
            started: Instant::now(),
            stop,
            streams,
            end: Mutex::new(None),
            done: watch::channel(false).0,
            group: Mutex::new(Some(group)),
        }
    }

    pub fn stream(&self, which: Which) -> &JobStream {
        &self.streams[which.index()]
    }

    /// How it ended, or `None` while it runs.
    pub fn end(&self) -> Option<JobEnd> {
        lock(&self.end).clone()
    }

    /// Records the end and wakes whoever waits for it.
    pub fn finish(&self, finished: &Finished, notes: Vec<String>, stop_signal: Option<Signal>) {
        *lock(&self.end) = Some(JobEnd {
            ending: finished.ending,
            elapsed: finished.elapsed,
            notes,
            stop_signal,
        });
        lock(&self.group).take();
        self.done.send_replace(true);
    }

    /// Waits until the job has ended.
    pub async fn ended(&self) {
        let mut rx = self.done.subscribe();
        let _ = rx.wait_for(|done| *done).await;
    }

    /// Reads up to `limit` bytes of `which` from byte `offset`.
    pub fn read(
        &self,
        store: &SpillStore,
        which: Which,
        offset: u64,
        limit: usize,
    ) -> Result<Page, ShellError> {
        // Look at the state before the length: a job seen finished has its final length.
        let ended = self.end();
        let finished = ended.is_some();
        let stream = self.stream(which);
        let len = stream
            .progress
            .on_disk
            .load(std::sync::atomic::Ordering::Acquire);
        if offset > len {
            return Err(ShellError::OffsetPastEnd {
                job: self.id.clone(),
                stream: which.name(),
                offset,
                len,
                so_far: if finished { "" } else { " so far" },
            });
        }
        let want = (len - offset).min(limit as u64) as usize;
        let mut bytes = vec![0u8; want];
        if want > 0 {
            let read_err = |source| match store.evicted_message(&stream.path) {
                Some(message) => ShellError::Evicted { message, source },
                None => ShellError::Read {
                    job: self.id.clone(),
                    stream: which.name(),
                    path: stream.path.display().to_string(),
                    source,
                },
            };
            let mut file = fs_err::File::open(&stream.path).map_err(read_err)?;
            file.seek(SeekFrom::Start(offset)).map_err(read_err)?;
            file.read_exact(&mut bytes).map_err(read_err)?;
            store.note_read(&stream.path);
        }
        let more = offset + (want as u64) < len;
        let keep = page_end(&bytes, more, !finished);
        bytes.truncate(keep);
        Ok(Page {
            text: String::from_utf8_lossy(&bytes).into_owned(),
            start: offset,
            end: offset + keep as u64,
            len,
            ended,
        })
    }
}

/// Where a page should end: not inside a UTF-8 character when more may follow, and at a
/// line break when the page was cut by its limit and one is near the end.
fn page_end(bytes: &[u8], more: bool, running: bool) -> usize {
    let mut end = bytes.len();
    if more || running {
        // Drop a trailing incomplete character (the next page starts with it).
        let tail_start = bytes.len().saturating_sub(3);
        if let Some(lead) = (tail_start..bytes.len())
            .rev()
            .find(|&i| bytes[i] & 0xC0 != 0x80)
        {
            let need = match bytes[lead] {
                0xC0..=0xDF => 2,
                0xE0..=0xEF => 3,
                0xF0..=0xF7 => 4,
                _ => 1,
            };
            if lead + need > bytes.len() && lead > 0 {
                end = lead;
            }
        }
    }
    if more
        && let Some(nl) = memchr::memrchr(b'\n', &bytes[..end])
        && (nl + 1) * 4 >= end * 3
    {
        end = nl + 1;
    }
    end
}

/// The background jobs of one session. Kept in the session's state; when the session ends
/// (the state is dropped), every running job's process group is stopped.
#[derive(Debug, Default)]
pub struct JobTable {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next: u64,
    jobs: BTreeMap<u64, Arc<Job>>,
}

impl JobTable {
    /// Adds a job made by `make` (given the new id), unless `max_running` jobs already run.
    /// Finished jobs past `max_finished` are forgotten, oldest first.
    pub(crate) fn insert(
        &self,
        max_running: usize,
        max_finished: usize,
        make: impl FnOnce(String) -> Result<Arc<Job>, ShellError>,
    ) -> Result<Arc<Job>, ShellError> {
        let mut inner = lock(&self.inner);
        let running: Vec<&Arc<Job>> = inner.jobs.values().filter(|j| j.end().is_none()).collect();
        if running.len() >= max_running {
            return Err(ShellError::TooManyJobs {
                limit: max_running,
                running: running
                    .iter()
                    .map(|j| format!("{} (`{}`)", j.id, j.label))
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        let finished: Vec<u64> = inner
            .jobs
            .iter()
            .filter(|(_, j)| j.end().is_some())
            .map(|(n, _)| *n)
            .collect();
        for n in finished
            .iter()
            .take(finished.len().saturating_sub(max_finished))
        {
            inner.jobs.remove(n);
        }
        inner.next += 1;
        let n = inner.next;
        let job = make(format!("job-{n}"))?;
        inner.jobs.insert(n, Arc::clone(&job));
        Ok(job)
    }

    /// The job with id `id`.
    pub(crate) fn get(&self, id: &str) -> Result<Arc<Job>, ShellError> {
        let inner = lock(&self.inner);
        let found = id
            .trim()
            .strip_prefix("job-")
            .and_then(|n| n.parse::<u64>().ok())
            .and_then(|n| inner.jobs.get(&n));
        if let Some(job) = found {
            return Ok(Arc::clone(job));
        }
        let known: Vec<String> = inner
            .jobs
            .values()
            .rev()
            .take(20)
            .map(|j| {
                let state = if j.end().is_some() {
                    "finished"
                } else {
                    "running"
                };
                format!("{} ({state}, `{}`)", j.id, j.label)
            })
            .collect();
        Err(ShellError::UnknownJob {
            id: id.to_owned(),
            known: if known.is_empty() {
                "this session has started no background jobs (run_shell with background: true starts one)".to_owned()
            } else {
                format!("known jobs, newest first: {}", known.join(", "))
            },
        })
    }
}

impl Drop for JobTable {
    fn drop(&mut self) {
        let inner = lock(&self.inner);
        for job in inner.jobs.values() {
            if let Some(group) = lock(&job.group).as_ref() {
                // At once, in case the runtime is going away with the session; the job's
                // task escalates to SIGKILL after the grace if it still runs.
                group.signal(Signal::TERM);
                group.signal(Signal::CONT);
            }
            job.stop.request(StopReason::SessionEnded);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// At most `max` characters of the command's first line, marked when cut.
pub(crate) fn shorten(command: &str, max: usize) -> String {
    let first = command.trim().lines().next().unwrap_or_default();
    let cut: String = first.chars().take(max).collect();
    if cut.len() < command.trim().len() {
        format!("{cut}…")
    } else {
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_end_on_characters_and_lines() {
        let text = "aaaa\nbbbb\ncc€";
        let bytes = text.as_bytes();
        // Cut inside the euro sign while more may follow: the partial character waits.
        assert_eq!(page_end(&bytes[..bytes.len() - 1], true, false), 10);
        assert_eq!(page_end(&bytes[..12], false, true), 12);
        // A finished stream that ends mid-character keeps its bytes (shown lossily).
        assert_eq!(
            page_end(&bytes[..bytes.len() - 1], false, false),
            bytes.len() - 1
        );
        // Cut by the limit: end after a nearby newline.
        assert_eq!(page_end(b"0123456789\n01", true, false), 11);
        assert_eq!(page_end(b"0\n23456789012", true, false), 13);
    }

    #[test]
    fn commands_are_shortened_for_listings() {
        assert_eq!(shorten("sleep 10", 80), "sleep 10");
        assert_eq!(shorten("make\nmake test", 80), "make…");
        assert_eq!(shorten(&"x".repeat(100), 5), "xxxxx…");
    }
}
