//! Line index: checkpointed byte offsets per file identity, to locate a line fast.
//!
//! Every [`STRIDE`]th line's byte offset is recorded as a read passes it, so a later read at
//! line N seeks to the nearest checkpoint instead of decoding the file from the start. The
//! key is the file's identity (real path, device, inode, size, mtime): any change to the file
//! makes a new key, so a stale index is never used.

use std::collections::{HashMap, VecDeque};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Lines between checkpoints: 10 M lines cost 2,442 offsets (20 KiB).
pub(crate) const STRIDE: u64 = 4_096;

/// Indexes kept at once; the oldest is dropped beyond this.
const CAPACITY: usize = 256;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct FileKey {
    path: PathBuf,
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
}

/// Checkpoints of one file.
#[derive(Debug, Default)]
pub(crate) struct LineIndex {
    /// `checkpoints[k]` = byte offset where line `k * STRIDE + 1` starts.
    checkpoints: Vec<u64>,
    /// Total number of lines, once a read has reached the end.
    pub(crate) total_lines: Option<u64>,
    /// Reads that had to read the file (not answered from this index alone).
    pub(crate) scans: u64,
    /// Bytes those reads read.
    pub(crate) bytes_read: u64,
    /// Where a cancelled read stopped counting lines: a later read for a line beyond it
    /// goes on from there instead of from the last checkpoint. This matters for a long
    /// stretch without newlines (a sparse file's hole), where no checkpoint is recorded.
    pub(crate) resume: Option<Resume>,
}

/// The state of a line count stopped at a chunk boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Resume {
    /// The line in progress (1-based).
    pub(crate) line: u64,
    /// Byte offset where that line starts.
    pub(crate) line_start: u64,
    /// Byte offset where reading goes on.
    pub(crate) pos: u64,
    /// Whether the line in progress has any bytes before `pos`.
    pub(crate) has_content: bool,
}

impl LineIndex {
    /// The nearest known (line number, byte offset) at or before `line` (1-based).
    pub(crate) fn seek_point(&self, line: u64) -> (u64, u64) {
        if self.checkpoints.is_empty() {
            return (1, 0);
        }
        let k = ((line.saturating_sub(1)) / STRIDE).min(self.checkpoints.len() as u64 - 1);
        (k * STRIDE + 1, self.checkpoints[k as usize])
    }

    /// Notes that line `line` (1-based) starts at byte `offset`.
    #[inline]
    pub(crate) fn record(&mut self, line: u64, offset: u64) {
        let zero_based = line - 1;
        if zero_based.is_multiple_of(STRIDE) && zero_based / STRIDE == self.checkpoints.len() as u64
        {
            self.checkpoints.push(offset);
        }
    }
}

/// The indexes by file identity.
type IndexMap = HashMap<FileKey, Arc<Mutex<LineIndex>>>;

/// Line indexes shared by all reads of one process, keyed by file identity.
#[derive(Debug, Default)]
pub struct LineIndexCache {
    inner: Mutex<(IndexMap, VecDeque<FileKey>)>,
    /// Pages that had to read the file (every read that was not answered from the index
    /// alone): lets tests see that a repeated read did not scan.
    scans: AtomicU64,
    /// Bytes those reads read.
    bytes_read: AtomicU64,
}

impl LineIndexCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Notes that a read had to read `bytes` of its file.
    pub(crate) fn note_scan(&self, bytes: u64) {
        self.scans.fetch_add(1, Ordering::Relaxed);
        self.bytes_read.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Reads so far that had to read their file rather than answer from an index.
    #[cfg(test)]
    pub(crate) fn scans(&self) -> u64 {
        self.scans.load(Ordering::Relaxed)
    }

    /// Bytes those reads read.
    #[cfg(test)]
    pub(crate) fn bytes_read(&self) -> u64 {
        self.bytes_read.load(Ordering::Relaxed)
    }

    /// The index of the file at `real` with metadata `meta`, created empty on first use.
    pub(crate) fn get(&self, real: &Path, meta: &std::fs::Metadata) -> Arc<Mutex<LineIndex>> {
        let key = FileKey {
            path: real.to_path_buf(),
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
        };
        let mut guard = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (map, order) = &mut *guard;
        if let Some(index) = map.get(&key) {
            return Arc::clone(index);
        }
        // Older versions of the same file are useless now; drop them first.
        map.retain(|k, _| k.path != key.path);
        order.retain(|k| k.path != key.path);
        while map.len() >= CAPACITY {
            match order.pop_front() {
                Some(old) => {
                    map.remove(&old);
                }
                None => break,
            }
        }
        let index = Arc::new(Mutex::new(LineIndex::default()));
        map.insert(key.clone(), Arc::clone(&index));
        order.push_back(key);
        index
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seek_point_uses_nearest_checkpoint_at_or_before_line() {
        let mut idx = LineIndex::default();
        assert_eq!(idx.seek_point(10_000), (1, 0));
        idx.record(1, 0);
        idx.record(STRIDE + 1, 500);
        idx.record(2 * STRIDE + 1, 900);
        assert_eq!(idx.seek_point(1), (1, 0));
        assert_eq!(idx.seek_point(STRIDE), (1, 0));
        assert_eq!(idx.seek_point(STRIDE + 1), (STRIDE + 1, 500));
        assert_eq!(idx.seek_point(10 * STRIDE), (2 * STRIDE + 1, 900));
        // Recording out of order or twice adds nothing.
        idx.record(5 * STRIDE + 1, 4000);
        assert_eq!(idx.seek_point(10 * STRIDE), (2 * STRIDE + 1, 900));
    }
}
