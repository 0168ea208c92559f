//! A stream's log, compressed on a thread of its own while the stream is captured.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::thread::JoinHandle;
use std::time::Instant;

use toolgate_budget::{LogCompressor, LogOptions};

/// Pieces (pipe reads, up to 64 KiB each) the compressor may lag behind the pump: 16 MiB at
/// most. Past that the live log is dropped and the log is made from the spill file.
const MAX_LAG_PIECES: usize = 256;

/// The compressor of one stream, fed while the stream is captured.
pub(crate) struct StreamLog {
    /// Pieces to compress; dropped when the stream ends.
    feed: Option<SyncSender<Vec<u8>>>,
    /// The fed compressor, once the stream ended and it caught up.
    done: Receiver<LogCompressor>,
    /// Tells the thread to stop (the log is not wanted any more).
    cancel: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for StreamLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamLog")
            .field("open", &self.feed.is_some())
            .finish_non_exhaustive()
    }
}

/// What waiting for a live log gave.
pub(crate) enum LogWait {
    /// The compressor, fed the whole stream.
    Ready(LogCompressor),
    /// The deadline passed first.
    TooLate,
    /// There is no live log (it fell behind, or its thread failed): read the spill file.
    Gone,
}

impl StreamLog {
    /// Starts compressing with `options`, beginning with `first` (what the stream held
    /// before it outgrew memory). `None` when no thread could be started.
    pub(crate) fn start(options: LogOptions, first: Vec<u8>) -> Option<Self> {
        let (feed, pieces) = mpsc::sync_channel::<Vec<u8>>(MAX_LAG_PIECES);
        let (finished, done) = mpsc::sync_channel(1);
        let cancel = Arc::new(AtomicBool::new(false));
        let stop = Arc::clone(&cancel);
        let thread = std::thread::Builder::new()
            .name("toolgate-log".to_owned())
            .spawn(move || {
                let mut compressor = LogCompressor::new(options);
                compressor.push(&first);
                drop(first);
                for piece in pieces {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    compressor.push(&piece);
                }
                if !stop.load(Ordering::Relaxed) {
                    let _ = finished.send(compressor);
                }
            });
        match thread {
            Ok(thread) => Some(Self {
                feed: Some(feed),
                done,
                cancel,
                thread: Some(thread),
            }),
            Err(e) => {
                tracing::warn!(%e, "no thread to compress a command's output as it runs");
                None
            }
        }
    }

    /// Hands the next bytes of the stream to the compressor; `false` (and the log is given
    /// up) when it lags too far behind: the pump never waits for it.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> bool {
        let Some(feed) = &self.feed else {
            return false;
        };
        match feed.try_send(bytes.to_vec()) {
            Ok(()) => true,
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.cancel.store(true, Ordering::Relaxed);
                self.feed = None;
                false
            }
        }
    }

    /// The stream ended: no more bytes come.
    pub(crate) fn close(mut self) -> Self {
        self.feed = None;
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

impl Drop for StreamLog {
    fn drop(&mut self) {
        // Owned: stopped and waited for (it stops between two pieces, a few milliseconds).
        self.cancel.store(true, Ordering::Relaxed);
        self.feed = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
