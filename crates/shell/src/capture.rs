//! One output stream of a command, from its pipe to a spill file, in bounded memory.
//!
//! A pump thread per stream reads the pipe and appends every byte to the stream's spill
//! file as it arrives, so nothing is lost however much the command prints. In memory it
//! keeps only the first and last `payload_bytes / 2` bytes, from which the excerpt is made
//! (64 KiB payload by default, stdout and stderr each).
//!
//! A foreground stream that outgrows memory is also compressed as it is captured: a thread
//! of its own follows the spill file as the pump writes it and feeds the log compressor, so
//! the compressed log is ready when the command ends instead of being read back from the
//! spill file afterwards (which halved the throughput on a 105 MB log). The spill file is
//! still written whole, and the pump never waits for the compressor ([`StreamLog`]).

use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, poll};
use rustix::pipe::{PipeFlags, pipe_with};
use toolgate_budget::{LogOptions, SpillFile, SpillStore, SpillStream};

pub(crate) use live_log::{LogWait, StreamLog};

mod live_log;

/// Where a stream's bytes go.
pub(crate) enum Sink {
    /// Open the spill file only once the stream outgrows memory (foreground commands: most
    /// print little, and those need no file).
    Lazy {
        /// The store to open it in.
        store: Arc<SpillStore>,
        /// Its label (part of the file name).
        label: String,
        /// Compress the stream as it is captured, with these options, once it outgrows
        /// memory (`None`: not at all).
        compress: Option<LogOptions>,
    },
    /// A file opened up front (background jobs: `job_output` reads it while the job runs).
    Open(SpillStream),
}

/// What others may see of a stream while its pump runs.
#[derive(Debug, Default)]
pub(crate) struct StreamProgress {
    /// Bytes safely written to the spill file (what `job_output` may read).
    pub on_disk: AtomicU64,
}

/// Sizes of a pump's memory and its disk limit.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PumpConfig {
    /// Bytes kept from the start of the stream.
    pub head: usize,
    /// Bytes kept from the end of the stream.
    pub tail: usize,
    /// Bytes written to disk before the stream counts as over its limit.
    pub max_bytes: u64,
}

/// A stream after its pump finished.
#[derive(Debug, Default)]
pub(crate) struct Captured {
    /// Bytes read from the pipe.
    pub total: u64,
    /// The first bytes (up to the head size).
    pub head: Vec<u8>,
    /// The last bytes (up to the tail size), in order.
    pub tail: Vec<u8>,
    /// The spill file holding every byte, when one was opened.
    pub file: Option<SpillFile>,
    /// Newline count.
    pub newlines: u64,
    /// Whether the stream ended without a newline.
    pub open_line: bool,
    /// A write to the spill file failed: the file lacks the rest.
    pub error: Option<String>,
    /// The stream passed `max_bytes`; the rest was read but not kept.
    pub over_limit: bool,
    /// Reading stopped while the pipe was still open (a process outside the group held it).
    pub abandoned: bool,
    /// The stream's log, compressed while it was captured (a foreground stream that outgrew
    /// memory and asked for it).
    pub log: Option<StreamLog>,
}

impl Captured {
    /// Lines, counting an unterminated last line.
    pub fn lines(&self) -> u64 {
        self.newlines + u64::from(self.open_line)
    }

    /// All bytes, when the stream fit in memory.
    pub fn whole(&self) -> Option<Vec<u8>> {
        let total = usize::try_from(self.total).ok()?;
        if total <= self.head.len() {
            return Some(self.head.clone());
        }
        let rest = total - self.head.len();
        if rest > self.tail.len() {
            return None;
        }
        let mut all = self.head.clone();
        all.extend_from_slice(&self.tail[self.tail.len() - rest..]);
        Some(all)
    }
}

/// First and last bytes of a stream.
struct Window {
    head: Vec<u8>,
    head_cap: usize,
    ring: Vec<u8>,
    /// Next write position in `ring`.
    pos: usize,
    /// Whether `ring` has wrapped (all of it holds data).
    full: bool,
}

impl Window {
    fn new(head_cap: usize, tail_cap: usize) -> Self {
        Self {
            head: Vec::with_capacity(head_cap),
            head_cap,
            ring: vec![0; tail_cap],
            pos: 0,
            full: false,
        }
    }

    fn push(&mut self, data: &[u8]) {
        let room = self.head_cap - self.head.len();
        if room > 0 {
            self.head.extend_from_slice(&data[..room.min(data.len())]);
        }
        let cap = self.ring.len();
        if cap == 0 {
            return;
        }
        if data.len() >= cap {
            self.ring.copy_from_slice(&data[data.len() - cap..]);
            self.pos = 0;
            self.full = true;
            return;
        }
        let first = (cap - self.pos).min(data.len());
        self.ring[self.pos..self.pos + first].copy_from_slice(&data[..first]);
        let rest = &data[first..];
        self.ring[..rest.len()].copy_from_slice(rest);
        if self.pos + data.len() >= cap {
            self.full = true;
        }
        self.pos = (self.pos + data.len()) % cap;
    }

    fn tail(&self) -> Vec<u8> {
        if self.full {
            let mut out = self.ring[self.pos..].to_vec();
            out.extend_from_slice(&self.ring[..self.pos]);
            out
        } else {
            self.ring[..self.pos].to_vec()
        }
    }
}

/// A running pump: a blocking thread that moves one pipe's bytes to disk.
pub(crate) struct Pump {
    state: PumpState,
    /// The write end of the stop pipe: closing it wakes the pump and makes it stop reading.
    stop: Option<OwnedFd>,
}

enum PumpState {
    Running(tokio::task::JoinHandle<Captured>),
    Done(Captured),
}

impl Pump {
    /// Starts pumping `fd` into `sink`. `on_limit` runs once if the stream passes
    /// `config.max_bytes`.
    pub fn start(
        fd: OwnedFd,
        sink: Sink,
        config: PumpConfig,
        progress: Arc<StreamProgress>,
        on_limit: Box<dyn Fn() + Send>,
    ) -> Self {
        // A silent pipe costs no wakeups: the pump sleeps in poll(2) on the pipe and the
        // read end of a stop pipe (close-on-exec, so no command inherits it). Without one
        // (out of descriptors) it can still only end at EOF.
        let (stop_rx, stop_tx) = match pipe_with(PipeFlags::CLOEXEC) {
            Ok((rx, tx)) => (Some(rx), Some(tx)),
            Err(e) => {
                tracing::warn!(%e, "no stop pipe for an output pump");
                (None, None)
            }
        };
        let handle = tokio::task::spawn_blocking(move || {
            pump(
                &fd,
                sink,
                config,
                &progress,
                stop_rx.as_ref(),
                on_limit.as_ref(),
            )
        });
        Self {
            state: PumpState::Running(handle),
            stop: stop_tx,
        }
    }

    /// Resolves when the pipe has closed (every writer is gone). Cancel-safe.
    pub async fn closed(&mut self) {
        if let PumpState::Running(handle) = &mut self.state {
            let captured = handle.await.unwrap_or_default();
            self.state = PumpState::Done(captured);
        }
    }

    /// Waits up to `wait` for the pipe to close, then stops reading and returns what was
    /// captured.
    pub async fn finish(mut self, wait: Duration) -> Captured {
        let _ = tokio::time::timeout(wait, self.closed()).await;
        self.stop.take();
        self.closed().await;
        match std::mem::replace(&mut self.state, PumpState::Done(Captured::default())) {
            PumpState::Done(captured) => captured,
            PumpState::Running(_) => Captured::default(),
        }
    }
}

fn pump(
    fd: &OwnedFd,
    sink: Sink,
    config: PumpConfig,
    progress: &StreamProgress,
    stop: Option<&OwnedFd>,
    on_limit: &(dyn Fn() + Send),
) -> Captured {
    let mut buf = vec![0u8; 64 * 1024];
    let mut window = Window::new(config.head, config.tail);
    let mut out = Captured::default();
    let (mut stream, lazy) = match sink {
        Sink::Open(stream) => (Some(stream), None),
        Sink::Lazy {
            store,
            label,
            compress,
        } => (None, Some((store, label, compress))),
    };
    let mut lazy = lazy;
    let mut log: Option<StreamLog> = None;
    // Bytes in the spill file of a compressed stream (what its log may read).
    let mut on_file = 0u64;
    let mut last = None;
    loop {
        let mut fds = [
            PollFd::new(fd, PollFlags::IN),
            PollFd::new(stop.unwrap_or(fd), PollFlags::IN),
        ];
        let watched = if stop.is_some() { 2 } else { 1 };
        match poll(&mut fds[..watched], None) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => {
                out.error = Some(format!("reading the pipe failed: {e}"));
                break;
            }
        }
        if watched == 2 && !fds[1].revents().is_empty() {
            // Told to stop (the write end was closed): a process outside the group may
            // hold the pipe open forever.
            out.abandoned = true;
            break;
        }
        if fds[0].revents().is_empty() {
            continue;
        }
        let n = match rustix::io::read(fd, &mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => continue,
            Err(e) => {
                out.error = Some(format!("reading the pipe failed: {e}"));
                break;
            }
        };
        if out.over_limit {
            // Keep draining so the command is not blocked on a full pipe before it is stopped.
            out.total += n as u64;
            continue;
        }
        let mut chunk = &buf[..n];
        if out.total + n as u64 > config.max_bytes {
            chunk = &chunk[..(config.max_bytes - out.total) as usize];
            out.over_limit = true;
            on_limit();
        }
        let outgrown = out.total + chunk.len() as u64 > (config.head + config.tail) as u64;
        if stream.is_none()
            && outgrown
            && let Some((store, label, compress)) = lazy.take()
        {
            let held = held_bytes(&window, out.total);
            stream = open_lazily(&store, &label, &held, &mut out.error);
            if let Some(s) = &stream
                && let Some(options) = compress
            {
                log = StreamLog::start(options, s.path());
                on_file = held.len() as u64;
            }
        }
        if let Some(s) = stream.as_mut() {
            match s.write(chunk) {
                Ok(()) => {
                    progress
                        .on_disk
                        .fetch_add(chunk.len() as u64, Ordering::Release);
                    on_file += chunk.len() as u64;
                    if let Some(l) = &log {
                        l.on_file(on_file);
                    }
                }
                Err(e) => {
                    out.error = Some(format!("writing `{}` failed: {e}", s.path().display()));
                    stream = None;
                }
            }
        }
        window.push(chunk);
        out.total += n as u64;
        out.newlines += memchr::memchr_iter(b'\n', chunk).count() as u64;
        last = chunk.last().copied().or(last);
    }
    out.open_line = last.is_some_and(|b| b != b'\n');
    out.head = std::mem::take(&mut window.head);
    out.tail = window.tail();
    out.file = stream.map(SpillStream::finish);
    // A log is only as good as the file it stands for: a failed write leaves both short.
    out.log = log.filter(|_| out.error.is_none()).map(StreamLog::close);
    out
}

/// What memory holds of a stream that has not outgrown it yet: all of it.
fn held_bytes(window: &Window, total: u64) -> Vec<u8> {
    Captured {
        total,
        head: window.head.clone(),
        tail: window.tail(),
        ..Captured::default()
    }
    .whole()
    .unwrap_or_default()
}

/// Opens the spill file of a foreground stream that outgrew memory and writes what memory
/// holds so far (`held`: all of it, the stream has not outgrown the window yet).
fn open_lazily(
    store: &Arc<SpillStore>,
    label: &str,
    held: &[u8],
    error: &mut Option<String>,
) -> Option<SpillStream> {
    let mut stream = match store.stream(label) {
        Ok(s) => s,
        Err(e) => {
            *error = Some(format!("opening a spill file failed: {e}"));
            return None;
        }
    };
    if let Err(e) = stream.write(held) {
        *error = Some(format!("writing `{}` failed: {e}", stream.path().display()));
        return None;
    }
    Some(stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn captured(window: &Window, total: u64) -> Captured {
        Captured {
            total,
            head: window.head.clone(),
            tail: window.tail(),
            ..Captured::default()
        }
    }

    #[test]
    fn window_keeps_first_and_last_bytes() {
        let data: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
        for chunk in [1usize, 7, 64, 1000, 20_000] {
            let mut w = Window::new(100, 300);
            for piece in data.chunks(chunk) {
                w.push(piece);
            }
            let c = captured(&w, data.len() as u64);
            assert_eq!(c.head, &data[..100], "chunk {chunk}");
            assert_eq!(c.tail, &data[data.len() - 300..], "chunk {chunk}");
            assert_eq!(c.whole(), None);
        }
    }

    #[test]
    fn small_streams_are_whole() {
        for len in [0usize, 1, 99, 100, 101, 250, 400] {
            let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let mut w = Window::new(100, 300);
            for piece in data.chunks(33) {
                w.push(piece);
            }
            assert_eq!(
                captured(&w, len as u64).whole().as_deref(),
                Some(&data[..]),
                "len {len}"
            );
        }
        let mut w = Window::new(100, 300);
        w.push(&[7; 401]);
        assert_eq!(captured(&w, 401).whole(), None);
    }
}
