//! What one file's search keeps: matching lines and their context, in line order, capped so a
//! file with a million matches costs no more than the page needs.

use std::io::{self, Read};

use grep_searcher::{Searcher, Sink, SinkContext, SinkContextKind, SinkMatch};

use crate::search::{Stop, cut_line};

/// One kept line of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hit {
    /// 1-based line number.
    pub(crate) line: u64,
    /// What the line is to the page.
    pub(crate) kind: HitKind,
    /// The line without its terminator, cut to the line limit with a marker.
    pub(crate) text: String,
}

/// Whether a kept line matched or is context (and on which side of its match).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HitKind {
    /// A matching line.
    Match,
    /// Context before the next match: shown only if that match is.
    Before,
    /// Context after the previous match.
    After,
}

/// Everything one file's search produced.
#[derive(Debug, Default)]
pub(crate) struct FileHits {
    /// Kept lines in order.
    pub(crate) hits: Vec<Hit>,
    /// Matching lines among them.
    pub(crate) matches: usize,
    /// Bytes of kept text.
    pub(crate) bytes: usize,
    /// The file turned out to be binary; its hits are dropped.
    pub(crate) binary: bool,
    /// The search stopped inside this file (deadline or cancellation).
    pub(crate) partial: bool,
    /// The file could not be read.
    pub(crate) failed: bool,
    /// A line longer than the searcher's heap limit stopped this file's search: the lines
    /// before it were searched, the rest was not.
    pub(crate) line_too_long: bool,
    /// The search of this file stopped at the page's caps: more matches may follow.
    pub(crate) capped: bool,
}

/// A sink keeping the lines of one file after the cursor's line.
pub(crate) struct FileSink {
    /// Lines up to this one were returned by an earlier page.
    pub(crate) after_line: u64,
    /// Context lines wanted on each side.
    pub(crate) context: usize,
    /// Longest line kept whole.
    pub(crate) max_line_chars: usize,
    /// Stop after this many matches (the page limit plus one, to know that more exist).
    pub(crate) cap_matches: usize,
    /// Stop after this many bytes of kept text.
    pub(crate) cap_bytes: usize,
    /// What was kept.
    pub(crate) out: FileHits,
    /// Context lines not yet attached to a shown match.
    pending: Vec<(u64, String)>,
    /// Whether the last match seen was kept (its after-context is then kept directly).
    last_match_kept: bool,
}

impl FileSink {
    /// A sink for a file whose lines up to `after_line` are to be skipped.
    pub(crate) fn new(
        after_line: u64,
        context: usize,
        max_line_chars: usize,
        cap_matches: usize,
        cap_bytes: usize,
    ) -> Self {
        Self {
            after_line,
            context,
            max_line_chars,
            cap_matches,
            cap_bytes,
            out: FileHits::default(),
            pending: Vec::new(),
            last_match_kept: false,
        }
    }

    fn text(&self, bytes: &[u8]) -> String {
        let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        let text = String::from_utf8_lossy(bytes);
        cut_line(&text, self.max_line_chars).into_owned()
    }

    fn keep(&mut self, line: u64, kind: HitKind, text: String) {
        // At least what the page prints for it (`N:` or `N-`, the text, a newline), so a
        // file stopped by `cap_bytes` is sure to fill the page.
        self.out.bytes += text.len() + 3;
        self.out.hits.push(Hit { line, kind, text });
    }
}

impl Sink for FileSink {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        let line = mat.line_number().unwrap_or(0);
        if line <= self.after_line {
            self.pending.clear();
            self.last_match_kept = false;
            return Ok(true);
        }
        let first = line.saturating_sub(self.context as u64);
        for (n, text) in std::mem::take(&mut self.pending) {
            if n >= first && n < line {
                self.keep(n, HitKind::Before, text);
            }
        }
        let text = self.text(mat.bytes());
        self.keep(line, HitKind::Match, text);
        self.out.matches += 1;
        self.last_match_kept = true;
        let go_on = self.out.matches < self.cap_matches && self.out.bytes < self.cap_bytes;
        self.out.capped = !go_on;
        Ok(go_on)
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, io::Error> {
        let line = ctx.line_number().unwrap_or(0);
        if line <= self.after_line {
            return Ok(true);
        }
        let text = self.text(ctx.bytes());
        if self.last_match_kept && *ctx.kind() == SinkContextKind::After {
            self.keep(line, HitKind::After, text);
        } else {
            if self.pending.len() >= self.context.max(1) {
                self.pending.remove(0);
            }
            self.pending.push((line, text));
        }
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, io::Error> {
        self.pending.clear();
        self.last_match_kept = false;
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _offset: u64) -> Result<bool, io::Error> {
        self.out.binary = true;
        Ok(false)
    }
}

/// A file reader that ends early when the search must stop, so one huge file cannot hold a
/// call past its deadline.
pub(crate) struct StopReader<'a, R> {
    /// The file.
    pub(crate) inner: R,
    /// The call's stop flag.
    pub(crate) stop: &'a Stop,
    /// The first file of a call: only a cancellation ends it early (see [`Stop`]).
    pub(crate) first: bool,
    /// Set when the reader ended because of `stop`.
    pub(crate) stopped: bool,
}

impl<R: Read> Read for StopReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let stop = if self.first {
            self.stop.cancelled()
        } else {
            self.stop.stopped()
        };
        if stop {
            self.stopped = true;
            return Ok(0);
        }
        self.inner.read(buf)
    }
}
