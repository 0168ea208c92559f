//! `read_file`'s paging: whichever of lines or bytes is hit first ends a page; lines longer
//! than the limit are cut with a visible marker naming their full length.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::Mutex;

use serde::Deserialize;
use toolgate_core::TruncationReason;

use crate::line_index::{LineIndex, Resume};

/// Limits for one `read_file` call (config section `[read]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ReadLimits {
    /// Lines (or `list_dir` entries) per page.
    pub max_lines: usize,
    /// Bytes per page; whichever limit is hit first wins.
    pub max_bytes: usize,
    /// Longer lines are cut with a visible marker.
    pub max_line_chars: usize,
    /// Sniffed to detect binary content and encoding.
    pub first_chunk_bytes: usize,
    /// Images and PDFs are returned as attachments up to this size.
    pub max_media_bytes: u64,
    /// `list_dir` scans at most this many entries.
    ///
    /// Default 50,000.
    pub max_scan_entries: usize,
}

impl Default for ReadLimits {
    fn default() -> Self {
        Self {
            max_lines: 2_000,
            max_bytes: 50 * 1024,
            max_line_chars: 2_000,
            first_chunk_bytes: 256 * 1024,
            max_media_bytes: 20 * 1024 * 1024,
            max_scan_entries: 50_000,
        }
    }
}

/// What a file looked like when this session last read or wrote it; `edit_file` refuses to
/// edit a file that changed since. Besides size and modification time it holds the inode
/// (a file replaced by rename, as editors and `git checkout` do) and the change time (which,
/// unlike the modification time, no tool can set back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    /// Size in bytes.
    pub size: u64,
    /// Modification time in nanoseconds since the epoch.
    pub mtime_ns: i128,
    /// Inode number.
    pub ino: u64,
    /// Status change time in nanoseconds since the epoch.
    pub ctime_ns: i128,
}

impl FileStamp {
    /// The stamp of `meta`.
    pub fn of(meta: &std::fs::Metadata) -> Self {
        Self {
            size: meta.size(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            ino: meta.ino(),
            ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
        }
    }
}

/// Per-session record of file stamps (a [`toolgate_core::Session`] extension).
#[derive(Debug, Default)]
pub struct FileStamps(Mutex<HashMap<PathBuf, FileStamp>>);

impl FileStamps {
    /// Records that the session saw `path` as `stamp`.
    pub fn record(&self, path: PathBuf, stamp: FileStamp) {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(path, stamp);
    }

    /// What the session last saw of `path`.
    pub fn get(&self, path: &std::path::Path) -> Option<FileStamp> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(path)
            .copied()
    }
}

/// One page of numbered lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadPage {
    /// `cat -n` style numbered lines.
    pub text: String,
    /// First line number shown.
    pub start_line: u64,
    /// Lines shown.
    pub lines: u64,
    /// Where the next page starts, only when this one was cut.
    pub next_offset: Option<u64>,
    /// Total lines in the file when known.
    pub total_lines: Option<u64>,
    /// Why the page was cut, if it was.
    pub reason: Option<TruncationReason>,
    /// Lines that were cut at the per-line limit.
    pub cut_lines: u64,
}

/// Why a page could not be produced.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    /// `offset` lies beyond the last line.
    #[error("offset {offset} is past the end: the file has {total} lines")]
    PastEnd {
        /// Requested first line.
        offset: u64,
        /// Lines in the file.
        total: u64,
    },
    /// Reading failed.
    #[error("read failed: {0}")]
    Io(#[from] std::io::Error),
    /// The caller gave up.
    #[error("cancelled")]
    Cancelled,
}

/// Remaining bytes below which a read scans on to the end to learn the total line count.
const COUNT_TAIL_BYTES: u64 = 8 * 1024 * 1024;

/// Reads the page starting at line `offset` (1-based) of at most `limit` lines from `file`
/// (`size` bytes, content starting after `skip` BOM bytes), using and extending `index`.
#[allow(clippy::too_many_arguments)]
pub fn read_page<R: Read + Seek>(
    file: &mut R,
    size: u64,
    skip: u64,
    index: &mut LineIndexHandle<'_>,
    offset: u64,
    limit: usize,
    limits: &ReadLimits,
    cancelled: &dyn Fn() -> bool,
) -> Result<ReadPage, PageError> {
    let index = &mut *index.0;
    let offset = offset.max(1);
    let limit = limit.clamp(1, limits.max_lines.max(1));
    if let Some(total) = index.total_lines
        && offset > total.max(1)
    {
        return Err(PageError::PastEnd { offset, total });
    }
    index.scans += 1;
    let (mut line_no, start_byte) = index.seek_point(offset);
    let mut start_byte = start_byte.max(skip);
    let mut line_start = start_byte;
    let mut current_has_content = false;
    // A cancelled count got further than any checkpoint: go on from there when the page
    // starts after the line it stopped in (that line is then only counted, not shown).
    if let Some(r) = index.resume
        && r.line < offset
        && r.pos > start_byte
    {
        line_no = r.line;
        line_start = r.line_start;
        start_byte = r.pos;
        current_has_content = r.has_content;
    }
    file.seek(SeekFrom::Start(start_byte))?;

    let keep_bytes = limits.max_line_chars.saturating_mul(4).max(16);
    let mut buf = vec![0u8; 256 * 1024];
    let mut pos_in_file = start_byte; // byte offset of buf[0]
    let mut current: Vec<u8> = Vec::new(); // kept head of the current line (when in the page)
    let mut current_chars: u64 = 0;
    // Whether the current line's last byte so far is `\r`: a CRLF line's `\r` is not shown,
    // so it must not count towards the line's length either.
    let mut current_ends_cr = false;

    let mut out = String::new();
    let mut shown: u64 = 0;
    let mut cut_lines: u64 = 0;
    let mut full: Option<TruncationReason> = None; // page is full
    let mut more_after_full = false;
    let mut next_offset = None;
    let mut reached_eof = false;
    let mut chunks: u64 = 0;

    'outer: loop {
        if chunks > 0 && chunks.is_multiple_of(64) && cancelled() {
            // Keep how far the count got, so the next read does not start over.
            if index.resume.is_none_or(|r| r.pos < pos_in_file) {
                index.resume = Some(Resume {
                    line: line_no,
                    line_start,
                    pos: pos_in_file,
                    has_content: current_has_content,
                });
            }
            return Err(PageError::Cancelled);
        }
        let n = read_fill(file, &mut buf)?;
        index.bytes_read += n as u64;
        chunks += 1;
        if n == 0 {
            reached_eof = true;
            break;
        }
        let chunk = &buf[..n];
        let mut pos = 0usize;
        while pos < n {
            let in_page = line_no >= offset && full.is_none();
            let nl = memchr::memchr(b'\n', &chunk[pos..]);
            let end = nl.map_or(n, |i| pos + i);
            let piece = &chunk[pos..end];
            if in_page {
                if current.len() < keep_bytes {
                    let take = (keep_bytes - current.len()).min(piece.len());
                    current.extend_from_slice(&piece[..take]);
                }
                current_chars += bytecount::num_chars(piece) as u64;
            }
            current_has_content |= !piece.is_empty();
            if let Some(&last) = piece.last() {
                current_ends_cr = last == b'\r';
            }
            let Some(_) = nl else {
                pos = n;
                continue;
            };
            // A whole line ends at `end`.
            index.record(line_no, line_start);
            if full.is_some() {
                more_after_full = true;
                if next_offset.is_none() {
                    next_offset = Some(line_no);
                }
                let remaining = size.saturating_sub(pos_in_file + end as u64);
                if index.total_lines.is_some() || remaining > COUNT_TAIL_BYTES {
                    break 'outer;
                }
            } else if in_page {
                let chars = current_chars.saturating_sub(u64::from(current_ends_cr));
                match emit_line(&mut out, line_no, &current, chars, limits, shown) {
                    Emit::Shown { cut } => {
                        shown += 1;
                        cut_lines += u64::from(cut);
                        if shown as usize >= limit {
                            full = Some(TruncationReason::ResultLimit);
                        }
                    }
                    Emit::NoRoom => {
                        full = Some(TruncationReason::PayloadLimit);
                        more_after_full = true;
                        next_offset = Some(line_no);
                    }
                }
            }
            current.clear();
            current_chars = 0;
            current_has_content = false;
            current_ends_cr = false;
            line_no += 1;
            line_start = pos_in_file + end as u64 + 1;
            pos = end + 1;
        }
        pos_in_file += n as u64;
    }

    if reached_eof {
        // A last line without a trailing newline.
        if current_has_content {
            index.record(line_no, line_start);
            if full.is_some() {
                more_after_full = true;
                next_offset.get_or_insert(line_no);
            } else if line_no >= offset {
                let chars = current_chars.saturating_sub(u64::from(current_ends_cr));
                match emit_line(&mut out, line_no, &current, chars, limits, shown) {
                    Emit::Shown { cut } => {
                        shown += 1;
                        cut_lines += u64::from(cut);
                    }
                    Emit::NoRoom => {
                        full = Some(TruncationReason::PayloadLimit);
                        more_after_full = true;
                        next_offset = Some(line_no);
                    }
                }
            }
            line_no += 1;
        }
        let total = line_no - 1;
        index.total_lines = Some(total);
        if offset > total.max(1) {
            return Err(PageError::PastEnd { offset, total });
        }
    }
    let truncated = full.is_some() && more_after_full;
    Ok(ReadPage {
        text: out,
        start_line: offset,
        lines: shown,
        next_offset: if truncated { next_offset } else { None },
        total_lines: index.total_lines,
        reason: if truncated { full } else { None },
        cut_lines,
    })
}

/// Mutable access to one file's line index (locked for the duration of a read).
pub struct LineIndexHandle<'a>(pub(crate) &'a mut LineIndex);

enum Emit {
    Shown { cut: bool },
    NoRoom,
}

fn emit_line(
    out: &mut String,
    line_no: u64,
    head: &[u8],
    chars: u64,
    limits: &ReadLimits,
    shown: u64,
) -> Emit {
    let head = head.strip_suffix(b"\r").unwrap_or(head);
    let decoded = String::from_utf8_lossy(head);
    let max = limits.max_line_chars;
    let (body, cut) = if chars as usize > max {
        let kept: String = decoded.chars().take(max).collect();
        (
            format!("{kept} … [line cut: showing {max} of {chars} characters]"),
            true,
        )
    } else {
        (decoded.into_owned(), false)
    };
    let line = format!("{line_no:>6}\t{body}\n");
    if shown > 0 && out.len() + line.len() > limits.max_bytes {
        return Emit::NoRoom;
    }
    out.push_str(&line);
    Emit::Shown { cut }
}

/// Reads until `buf` is full or the file ends.
fn read_fill<R: Read>(r: &mut R, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match r.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}
