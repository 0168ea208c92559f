//! A stream's log, compressed on a thread of its own while the stream is captured.
//!
//! The thread follows the stream's spill file: the pump says how many bytes the file holds
//! after each write, and the thread reads them back (from the page cache: they were just
//! written) and feeds the compressor. So the pump never waits for the compressor and never
//! copies bytes for it, the compressor is never dropped for falling behind (it catches up
//! after the command ends, as the read-back did), memory stays at one read buffer, and the
//! log is made from exactly the bytes of the file, as the read-back path makes it.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::thread::JoinHandle;
use std::time::Instant;

use toolgate_budget::{LogCompressor, LogOptions};

/// Bytes read from the spill file at a time (the read-back path reads as much).
const READ_BYTES: usize = 1 << 20;

/// What the pump and the follower share.
#[derive(Debug, Default)]
struct Shared {
    /// Bytes the spill file holds (written before this was raised).
    on_file: AtomicU64,
    /// The log is not wanted any more: stop reading.
    cancel: AtomicBool,
}

/// The compressor of one stream, fed while the stream is captured.
pub(crate) struct StreamLog {
    shared: Arc<Shared>,
    /// Wakes the follower after a write; dropped when the stream ends.
    wake: Option<SyncSender<()>>,
    /// The fed compressor, once the stream ended and it caught up.
    done: Receiver<Box<LogCompressor>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for StreamLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamLog")
            .field("open", &self.wake.is_some())
            .field("on_file", &self.shared.on_file.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// What waiting for a live log gave.
pub(crate) enum LogWait {
    /// The compressor, fed the whole stream.
    Ready(Box<LogCompressor>),
    /// The deadline passed first.
    TooLate,
    /// There is no live log (its file could not be read, or its thread failed): read the
    /// spill file.
    Gone,
}

impl StreamLog {
    /// Starts compressing with `options` the spill file at `path` as it is written. `None`
    /// when the file cannot be opened or no thread could be started.
    pub(crate) fn start(options: LogOptions, path: &Path) -> Option<Self> {
        let file = match fs_err::File::open(path) {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!(%e, "cannot follow a command's output to compress it as it runs");
                return None;
            }
        };
        // One pending wake-up is enough: the follower reads everything on file when it wakes.
        let (wake, woken) = mpsc::sync_channel::<()>(1);
        let (finished, done) = mpsc::sync_channel::<Box<LogCompressor>>(1);
        let shared = Arc::new(Shared::default());
        let follower = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("toolgate-log".to_owned())
            .spawn(move || {
                if let Some(compressor) = follow(file, &follower, &woken, options) {
                    let _ = finished.send(Box::new(compressor));
                }
            });
        match thread {
            Ok(thread) => Some(Self {
                shared,
                wake: Some(wake),
                done,
                thread: Some(thread),
            }),
            Err(e) => {
                tracing::warn!(%e, "no thread to compress a command's output as it runs");
                None
            }
        }
    }

    /// The spill file now holds `bytes` bytes (all written): the follower may read them.
    pub(crate) fn on_file(&self, bytes: u64) {
        self.shared.on_file.store(bytes, Ordering::Release);
        if let Some(wake) = &self.wake {
            // Full: a wake-up is already pending, and it will find these bytes too.
            match wake.try_send(()) {
                Ok(()) | Err(TrySendError::Full(()) | TrySendError::Disconnected(())) => {}
            }
        }
    }

    /// The stream ended: no more bytes come.
    pub(crate) fn close(mut self) -> Self {
        self.wake = None;
        self
    }

    /// Waits until `deadline` (or for good) for the compressor to catch up.
    pub(crate) fn wait(&self, deadline: Option<Instant>) -> LogWait {
        let got = match deadline {
            None => self.done.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(d) => self
                .done
                .recv_timeout(d.saturating_duration_since(Instant::now())),
        };
        match got {
            Ok(compressor) => LogWait::Ready(compressor),
            Err(RecvTimeoutError::Timeout) => LogWait::TooLate,
            Err(RecvTimeoutError::Disconnected) => LogWait::Gone,
        }
    }
}

/// Feeds `options`' compressor the spill file as it grows, until the stream ends (`woken`
/// disconnects) and every byte on file was read. `None` when cancelled or a read failed.
fn follow(
    mut file: fs_err::File,
    shared: &Shared,
    woken: &Receiver<()>,
    options: LogOptions,
) -> Option<LogCompressor> {
    let mut compressor = LogCompressor::new(options);
    let mut buf = vec![0u8; READ_BYTES];
    let mut read = 0u64;
    let mut ended = false;
    loop {
        if shared.cancel.load(Ordering::Relaxed) {
            return None;
        }
        // Read after the wake-up's channel says the stream ended, so the last count is seen.
        let on_file = shared.on_file.load(Ordering::Acquire);
        if read < on_file {
            let want = usize::try_from(on_file - read).map_or(buf.len(), |n| n.min(buf.len()));
            let n = match file.read(&mut buf[..want]) {
                // Bytes the pump counted as written are missing: the file is not what it was.
                Ok(0) => return None,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    tracing::warn!(%e, "reading a command's output back to compress it failed");
                    return None;
                }
            };
            compressor.push(&buf[..n]);
            read += n as u64;
            continue;
        }
        if ended {
            return Some(compressor);
        }
        if woken.recv().is_err() {
            ended = true;
        }
    }
}

impl Drop for StreamLog {
    fn drop(&mut self) {
        // Owned: stopped and waited for (it stops between two reads, a few milliseconds).
        self.shared.cancel.store(true, Ordering::Relaxed);
        self.wake = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use toolgate_budget::{CompressOptions, CompressedLog, SpillStore, feed_file};

    use super::*;
    use crate::capture::{Captured, Pump, PumpConfig, Sink, StreamProgress};

    /// Options that make small inputs span many of the compressor's chunks.
    fn options() -> LogOptions {
        LogOptions {
            compress: CompressOptions::default(),
            cap_chars: 3_000,
            chunk_bytes: 4_096,
            threads: 2,
        }
    }

    /// Pumps `bytes` through a real pipe, written in pieces of `piece` bytes, as a
    /// foreground stream compressed while it is captured.
    async fn capture(store: &Arc<SpillStore>, bytes: &[u8], piece: usize) -> Captured {
        let (rx, tx) = rustix::pipe::pipe().unwrap();
        let bytes = bytes.to_vec();
        let writer = std::thread::spawn(move || {
            let mut tx = std::io::PipeWriter::from(tx);
            for p in bytes.chunks(piece) {
                tx.write_all(p).unwrap();
            }
        });
        let sink = Sink::Lazy {
            store: Arc::clone(store),
            label: "test".to_owned(),
            compress: Some(options()),
        };
        let config = PumpConfig {
            head: 512,
            tail: 512,
            max_bytes: u64::MAX,
        };
        let pump = Pump::start(
            rx,
            sink,
            config,
            Arc::new(StreamProgress::default()),
            Box::new(|| {}),
        );
        writer.join().unwrap();
        pump.finish(std::time::Duration::from_secs(600)).await
    }

    /// The log compressed while `bytes` were captured, the one read back from the spill
    /// file afterwards (the earlier path) and the one made from all the bytes at once by
    /// one thread (chunk after chunk, as before), each within `cap` characters.
    async fn three_ways(bytes: &[u8], piece: usize, cap: usize) -> [CompressedLog; 3] {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SpillStore::new(dir.path(), 1 << 40));
        let out = capture(&store, bytes, piece).await;
        let file = out.file.as_ref().unwrap();
        assert_eq!(
            fs_err::read(&file.path).unwrap(),
            bytes,
            "the spill file is whole"
        );
        let live = match out.log.as_ref().unwrap().wait(None) {
            LogWait::Ready(compressor) => compressor.finish_within(cap),
            LogWait::TooLate | LogWait::Gone => panic!("no live log"),
        };
        let read_back = feed_file(&file.path, options(), None)
            .unwrap()
            .unwrap()
            .finish_within(cap);
        let mut batch = LogCompressor::new(LogOptions {
            threads: 1,
            ..options()
        });
        batch.push(bytes);
        [live, read_back, batch.finish_within(cap)]
    }

    /// Logs that stress the cuts: lines across pipe reads, file reads and compressor
    /// chunks, CR/LF and progress frames, escapes, invalid UTF-8 and split characters, a
    /// line longer than every buffer, no final newline.
    fn inputs() -> Vec<(&'static str, Vec<u8>)> {
        let mut build = Vec::new();
        for i in 0..6_000 {
            let line = match i % 577 {
                0 => format!("error[E0308]: mismatched types in module_{i}\n"),
                300 => format!("warning: unused variable `x{i}`\n"),
                _ => format!("   Compiling crate_{i} v0.{}.0 (/src/crate_{i})\n", i % 13),
            };
            build.extend_from_slice(line.as_bytes());
        }
        build.extend_from_slice(b"error: could not compile `app` due to 11 previous errors\n");

        let mut crlf = Vec::new();
        for i in 0..4_000 {
            crlf.extend_from_slice(
                format!("\x1b[32m[{:>3}%]\x1b[0m step {i}\r", i % 100).as_bytes(),
            );
            if i % 10 == 0 {
                crlf.extend_from_slice(format!("test case_{i} ... ok\r\n").as_bytes());
            }
            if i % 1_333 == 0 {
                crlf.extend_from_slice(format!("test broken_{i} ... FAILED\r\n").as_bytes());
            }
        }
        crlf.extend_from_slice(b"test result: FAILED. 397 passed; 3 failed\r\n");

        let mut invalid = Vec::new();
        for i in 0..5_000u32 {
            invalid.extend_from_slice(format!("r\u{e9}sum\u{e9} {i} \u{1f600} ").as_bytes());
            invalid.extend_from_slice(&[0xff, 0xfe, 0xc3]); // invalid, and a lone lead byte
            if i % 999 == 0 {
                invalid.extend_from_slice("\nFatal: \u{fffd}\u{e9}chec {i}".as_bytes());
            }
            invalid.push(b'\n');
        }
        invalid.extend_from_slice(b"exit status 1"); // no final newline

        // 1.5 MB on one line: longer than a pipe read, a read of the file and a chunk.
        let mut long = b"error: first\n".to_vec();
        for i in 0..150_000 {
            long.extend_from_slice(format!("{i:09}x").as_bytes());
        }
        long.extend_from_slice(b"\nnoise\n".repeat(500).as_slice());
        long.extend_from_slice(b"error: after the long line\n");

        vec![
            ("build", build),
            ("crlf", crlf),
            ("invalid utf-8", invalid),
            ("long line", long),
        ]
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_log_made_while_capturing_equals_the_read_back_and_the_batch_one() {
        for (name, bytes) in inputs() {
            for piece in [1_000, 4_093, 65_536, 1 << 20] {
                for cap in [3_000, 800] {
                    let [live, read_back, batch] = three_ways(&bytes, piece, cap).await;
                    assert_eq!(live, read_back, "{name}: pieces of {piece}, cap {cap}");
                    assert_eq!(live, batch, "{name}: pieces of {piece}, cap {cap}");
                    assert_eq!(live.input_bytes, bytes.len() as u64, "{name}");
                    assert!(live.text.chars().count() <= cap, "{name}: {}", live.text);
                }
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_failure_line_is_kept_by_the_log_made_while_capturing() {
        for (name, bytes) in inputs() {
            let [live, ..] = three_ways(&bytes, 65_536, 3_000).await;
            assert!(live.anchors > 0, "{name}");
            assert_eq!(live.anchors, live.anchors_shown, "{name}: {}", live.text);
        }
        let [live, ..] = three_ways(&inputs()[0].1, 4_093, 3_000).await;
        for line in [
            "error[E0308]: mismatched types in module_0",
            "error[E0308]: mismatched types in module_5770",
            "warning: unused variable `x5493`",
            "error: could not compile `app` due to 11 previous errors",
        ] {
            assert!(live.text.contains(line), "{line}: {}", live.text);
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_dropped_log_stops_its_thread() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        fs_err::write(&path, b"error: one\n".repeat(1_000)).unwrap();
        let log = StreamLog::start(options(), &path).unwrap();
        log.on_file(5_000);
        // Neither closed nor waited for: dropping it must not hang on the open stream.
        drop(log);
        let log = StreamLog::start(options(), &path).unwrap();
        log.on_file(11_000);
        match log.close().wait(None) {
            LogWait::Ready(compressor) => assert_eq!(compressor.finish().input_bytes, 11_000),
            LogWait::TooLate | LogWait::Gone => panic!("no log"),
        }
    }
}
