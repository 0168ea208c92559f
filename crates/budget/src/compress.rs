//! Log compression before the budget: a build or test log is mostly noise around a few
//! lines that matter.
//!
//! 1. ANSI escapes and carriage-return progress frames are removed ([`clean`]).
//! 2. Each line is an anchor (problem keyword, test-runner verdict or summary, toolgate's
//!    `error: ` stamps), a stack/diagnostic frame, or noise ([`classify`]).
//! 3. Consecutive duplicates become one line followed by ` ×N`: noise lines when equal up to
//!    numbers, ids, timestamps and paths ([`dedup`]), anchors and frames only when identical,
//!    so the text of every anchor survives.
//! 4. Anchors are kept with `context` lines on each side, and so is the last line; a block
//!    of frames is kept whole when it touches a kept line; runs of at least `min_fold` other
//!    lines become `… [N lines omitted]`.
//!
//! Logs under `min_lines` lines, or that would shrink by less than `min_savings`, are left
//! alone; the result is never longer than the input. The caller spills the original first,
//! so nothing is lost.

mod classify;
mod clean;
mod dedup;
mod fit;
mod kind;
mod stream;

pub use clean::clean as clean_terminal;
pub use kind::{LogKind, detect as detect_kind};
pub use stream::{CompressedLog, LogCompressor, LogOptions, compress_file, feed_file};

use classify::{Class, Rank};
use fit::{Piece, PieceKind};

/// Compression settings.
#[derive(Debug, Clone, PartialEq)]
pub struct CompressOptions {
    /// Logs with fewer lines are left alone (nothing to gain). Seed: 40.
    pub min_lines: usize,
    /// Lines (after duplicate folding) kept on each side of an anchor. Seed: 2.
    pub context: usize,
    /// Below this fraction of characters saved, the log is left alone. Seed: 0.15.
    pub min_savings: f64,
    /// Shortest run of dropped lines folded into one `… [N lines omitted]` marker; shorter
    /// runs are cheaper to show than to mark. Seed: 3.
    pub min_fold: usize,
}

impl Default for CompressOptions {
    fn default() -> Self {
        Self {
            min_lines: 40,
            context: 2,
            min_savings: 0.15,
            min_fold: 3,
        }
    }
}

/// A compressed log.
#[derive(Debug, Clone, PartialEq)]
pub struct Compressed {
    /// The compressed text.
    pub text: String,
    /// Lines before.
    pub input_lines: usize,
    /// Lines after.
    pub output_lines: usize,
    /// Anchor lines found in the input; the text of each one is in `text`.
    pub anchor_lines: usize,
    /// Input lines folded into omission markers or ` ×N` duplicates.
    pub omitted_lines: usize,
    /// Fraction of characters saved, in `min_savings..1.0`.
    pub savings: f64,
}

/// Compresses `text`, or `None` when it should be left alone.
pub fn compress_log(text: &str, options: &CompressOptions) -> Option<Compressed> {
    if text.is_empty() || text.len() < options.min_lines {
        return None; // Fewer bytes than the lines needed.
    }
    let clean = clean::clean(text);
    let clean = clean.as_ref();
    // Cleaning keeps every `\n`, so these are the input's lines too, except for a last line
    // without a newline that was only debris (`…\n\x1b[0m`): it is still a line, now empty.
    let mut lines = split_lines(clean);
    if !text.ends_with('\n') && (clean.is_empty() || clean.ends_with('\n')) {
        lines.push("");
    }
    let input_lines = lines.len();
    if input_lines < options.min_lines {
        return None;
    }
    let classified = classify::classify_ranked(clean, &lines)?;
    let classes = &classified.classes;
    let mut log = Log {
        lines: &lines,
        classes,
        ranks: &classified.ranks,
        pinned: &classified.pinned,
        signatures: vec![0; lines.len()],
    };
    let keep = log.keep(options.context, Ending::Kept);
    let rendered = log.render(&keep, options.min_fold.max(1));

    let mut out = rendered.text;
    // Match the input's last newline, unless the last line shown is blank: without its `\n`
    // it would vanish.
    if !text.ends_with('\n') && !out.ends_with("\n\n") && out != "\n" {
        out.pop();
    }
    let (before, after) = (text.chars().count(), out.chars().count());
    let savings = 1.0 - after as f64 / before as f64;
    if after >= before || out.len() >= text.len() || savings < options.min_savings {
        return None;
    }
    Some(Compressed {
        text: out,
        input_lines,
        output_lines: rendered.lines,
        anchor_lines: classes.iter().filter(|c| **c == Class::Anchor).count(),
        omitted_lines: input_lines - rendered.lines_shown,
        savings,
    })
}

/// The lines of `text` as `str::lines` splits them (a final newline doesn't start another
/// line), without a `\r` check: cleaned text has none left.
fn split_lines(text: &str) -> Vec<&str> {
    let mut lines = Vec::with_capacity(text.len() / 48 + 1);
    let mut start = 0;
    for nl in memchr::memchr_iter(b'\n', text.as_bytes()) {
        lines.push(text.get(start..nl).unwrap_or_default());
        start = nl + 1;
    }
    if start < text.len() {
        lines.push(text.get(start..).unwrap_or_default());
    }
    lines
}

/// A classified log. Consecutive lines of one class form a *group* when they are duplicates:
/// near-duplicates for noise, identical otherwise. A group is shown as its first line
/// followed by ` ×N`. Groups are found only where the output needs them (around anchors, in
/// short gaps): most of a long log ends up inside an omission marker, and its near-duplicate
/// signatures are never computed.
struct Log<'a> {
    lines: &'a [&'a str],
    classes: &'a [Class],
    ranks: &'a [Rank],
    pinned: &'a [bool],
    /// Near-duplicate signatures of noise lines, computed on first use; 0 = not yet.
    signatures: Vec<u64>,
}

impl Log<'_> {
    /// Near-duplicate signature of noise line `i`.
    fn signature(&mut self, i: usize) -> u64 {
        if self.signatures[i] == 0 {
            self.signatures[i] = dedup::signature(self.lines[i]).max(1);
        }
        self.signatures[i]
    }

    /// Whether neighbouring lines `a` and `b` are in one group.
    fn same_group(&mut self, a: usize, b: usize) -> bool {
        if self.classes[a] != self.classes[b] {
            return false;
        }
        if self.classes[a] != Class::Noise {
            return self.lines[a] == self.lines[b];
        }
        // Most neighbours in a run of near-duplicates differ only in a few digits; checking
        // that is much cheaper than their signatures, and implies equal ones.
        digits_apart(self.lines[a], self.lines[b]) || self.signature(a) == self.signature(b)
    }

    /// End (exclusive) of the group starting at `start`, not past `limit`.
    fn group_end(&mut self, start: usize, limit: usize) -> usize {
        let mut end = start + 1;
        while end < limit && self.same_group(end - 1, end) {
            end += 1;
        }
        end
    }

    /// Start of the group ending at `last` (inclusive).
    fn group_start(&mut self, last: usize) -> usize {
        let mut start = last;
        while start > 0 && self.same_group(start - 1, start) {
            start -= 1;
        }
        start
    }

    /// Which lines are shown: each anchor's group with `context` groups on each side, the last
    /// group, then every block of frames that touches a shown line. Whole groups only.
    fn keep(&mut self, context: usize, ending: Ending) -> Vec<bool> {
        let n = self.lines.len();
        let mut keep = vec![false; n];
        if n == 0 {
            return keep;
        }
        let mut i = 0;
        while i < n {
            if self.classes[i] != Class::Anchor {
                i += 1;
                continue;
            }
            let end = self.group_end(i, n);
            // When the line before is shown, the groups before it are too (they lie within
            // the context of an earlier anchor).
            let mut lo = i;
            if i == 0 || !keep[i - 1] {
                for _ in 0..context {
                    if lo == 0 {
                        break;
                    }
                    lo = self.group_start(lo - 1);
                }
            }
            let mut hi = end;
            for _ in 0..context {
                if hi >= n {
                    break;
                }
                hi = self.group_end(hi, n);
            }
            keep[lo..hi].fill(true);
            i = end;
        }
        // How a log ends (a verdict, an exit stamp, `npm info ok`) is worth its line.
        if ending == Ending::Kept {
            keep[self.group_start(n - 1)..].fill(true);
        }
        // Whole groups only: a pinned line brings its group.
        let mut i = 0;
        while i < n {
            if self.pinned[i] && !keep[i] {
                let (start, end) = (self.group_start(i), self.group_end(i, n));
                keep[start..end].fill(true);
                i = end;
            } else {
                i += 1;
            }
        }

        let mut i = 0;
        while i < n {
            if self.classes[i] != Class::Trace {
                i += 1;
                continue;
            }
            let start = i;
            while i < n && self.classes[i] == Class::Trace {
                i += 1;
            }
            let touches = (start > 0 && keep[start - 1])
                || keep.get(i).copied().unwrap_or(false)
                || keep[start..i].contains(&true);
            if touches {
                keep[start..i].fill(true);
            }
        }
        keep
    }

    fn render(&mut self, keep: &[bool], min_fold: usize) -> Rendered {
        let n = self.lines.len();
        let mut out = Rendered {
            text: String::with_capacity(n * 8),
            lines: 0,
            lines_shown: 0,
        };
        let mut i = 0;
        while i < n {
            let end = keep[i..]
                .iter()
                .position(|k| *k != keep[i])
                .map_or(n, |len| i + len);
            if !keep[i] && self.fold(i, end, min_fold, &mut out) {
                i = end;
                continue;
            }
            while i < end {
                let group_end = self.group_end(i, end);
                self.push_group(&mut out, i, group_end - i);
                i = group_end;
            }
        }
        out
    }

    /// The kept lines as pieces (one per group, one per folded run), for [`fit`].
    fn pieces(&mut self, keep: &[bool], min_fold: usize, out: &mut Vec<Piece>) {
        let n = self.lines.len();
        let mut i = 0;
        while i < n {
            let end = keep[i..]
                .iter()
                .position(|k| *k != keep[i])
                .map_or(n, |len| i + len);
            if !keep[i] {
                let mut marker = Rendered {
                    text: String::new(),
                    lines: 0,
                    lines_shown: 0,
                };
                if self.fold(i, end, min_fold, &mut marker) {
                    out.push(Piece::fold(end - i, 0));
                    i = end;
                    continue;
                }
                if i == 0 || end == n {
                    // A short run at a chunk's edge may continue in the next chunk.
                    while i < end {
                        let group_end = self.group_end(i, end);
                        out.push(self.piece(i, group_end, PieceKind::Dropped));
                        i = group_end;
                    }
                    continue;
                }
            }
            while i < end {
                let group_end = self.group_end(i, end);
                let kind = match self.classes[i] {
                    Class::Anchor => PieceKind::Anchor(self.ranks[i]),
                    Class::Trace => PieceKind::Trace,
                    // The end of a test's captured output outlives other context when the
                    // log must shrink, like the captured anchors.
                    Class::Noise if self.pinned[group_end - 1] => PieceKind::Anchor(Rank::Captured),
                    Class::Noise => PieceKind::Noise,
                };
                // The last line of near-duplicates right before an anchor, or at the end of
                // a test's captured output, is the one that says most: show it as itself.
                let last = group_end - 1;
                let split = self.classes[i] == Class::Noise
                    && group_end - i > 1
                    && self.lines[i] != self.lines[last]
                    && (self.pinned[last] || self.classes.get(group_end) == Some(&Class::Anchor));
                if split {
                    out.push(self.piece(i, last, kind));
                    out.push(self.piece(last, group_end, kind));
                } else {
                    out.push(self.piece(i, group_end, kind));
                }
                i = group_end;
            }
        }
    }

    /// The group `start..end` as a piece.
    fn piece(&self, start: usize, end: usize, kind: PieceKind) -> Piece {
        let mut shown = Rendered {
            text: String::new(),
            lines: 0,
            lines_shown: 0,
        };
        self.push_group(&mut shown, start, end - start);
        shown.text.pop();
        Piece::shown(
            shown.text,
            kind,
            end - start,
            usize::from(self.classes[start] == Class::Anchor) * (end - start),
        )
    }

    /// Folds the dropped lines `start..end` into one `… [N lines omitted]` marker when that
    /// is shorter, in bytes and in characters, than showing their groups.
    fn fold(&mut self, start: usize, end: usize, min_fold: usize, out: &mut Rendered) -> bool {
        let count = end - start;
        if count < min_fold {
            return false;
        }
        let marker = format!("… [{count} lines omitted]\n");
        // A character is at most 4 bytes: past 4 × the marker's bytes, the groups are longer
        // in characters too, and the rest of the run needn't be grouped.
        let (mut shown_bytes, mut shown_chars) = (0, 0);
        let mut i = start;
        while i < end && shown_bytes <= marker.len() * 4 {
            let group_end = self.group_end(i, end);
            let (bytes, chars) = self.group_len(i, group_end - i);
            shown_bytes += bytes;
            shown_chars += chars;
            i = group_end;
        }
        let shorter = marker.len() < shown_bytes
            && (shown_bytes > marker.len() * 4 || marker.chars().count() < shown_chars);
        if shorter {
            out.text.push_str(&marker);
            out.lines += 1;
        }
        shorter
    }

    /// Bytes and characters of a group as shown, newline included.
    fn group_len(&self, first: usize, count: usize) -> (usize, usize) {
        let line = self.lines[first];
        let chars = line.chars().count();
        if bare(line, count) {
            (line.len() + 1, chars + 1)
        } else {
            // " ×N\n": the space, × (2 bytes), the digits, the newline.
            let digits = count.ilog10() as usize + 1;
            (line.len() + 4 + digits, chars + 3 + digits)
        }
    }

    fn push_group(&self, out: &mut Rendered, first: usize, count: usize) {
        use std::fmt::Write as _;
        let line = self.lines[first];
        out.text.push_str(line);
        if !bare(line, count) {
            // Writing to a String can't fail.
            let _ = write!(out.text, " ×{count}");
        }
        out.text.push('\n');
        out.lines += 1;
        out.lines_shown += 1;
    }
}

/// Whether the last lines of a text are the end of the log (kept) or of a chunk of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    Kept,
    Chunk,
}

struct Rendered {
    text: String,
    /// Lines in `text`.
    lines: usize,
    /// Input lines whose text is in `text` verbatim (a ` ×N` group shows one).
    lines_shown: usize,
}

/// Whether `a` and `b` are equal but for digits in the same places. Eight bytes at a time:
/// most of two such lines is identical.
fn digits_apart(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let close = |x: &[u8], y: &[u8]| {
        x.iter()
            .zip(y)
            .all(|(x, y)| x == y || x.is_ascii_digit() && y.is_ascii_digit())
    };
    let (mut xs, mut ys) = (a.chunks_exact(8), b.chunks_exact(8));
    let (mut x8, mut y8) = ([0u8; 8], [0u8; 8]);
    for (x, y) in (&mut xs).zip(&mut ys) {
        x8.copy_from_slice(x);
        y8.copy_from_slice(y);
        if u64::from_ne_bytes(x8) != u64::from_ne_bytes(y8) && !close(x, y) {
            return false;
        }
    }
    close(xs.remainder(), ys.remainder())
}

/// Whether a group is shown as a bare line: a single line, or a run of blank ones.
fn bare(line: &str, count: usize) -> bool {
    count == 1 || line.trim_ascii().is_empty()
}

#[cfg(test)]
mod tests {
    use super::{CompressOptions, compress_log, split_lines};

    #[test]
    fn splits_lines_like_str_lines() {
        for s in ["", "a", "a\n", "a\nb", "a\n\n", "\n", "é\nü"] {
            assert_eq!(split_lines(s), s.lines().collect::<Vec<_>>(), "{s:?}");
        }
    }

    #[test]
    fn digits_apart_means_digits_in_the_same_places() {
        use super::digits_apart;
        assert!(digits_apart(
            "row 0123456789 of 260 ok",
            "row 9876543210 of 261 ok"
        ));
        assert!(digits_apart("", ""));
        assert!(!digits_apart("row 1 of 2", "row 10 of 2"));
        assert!(!digits_apart("id 0x7ffe12ab", "id 0x7ffe12ac"));
        assert!(!digits_apart("abcdefgh1", "abcdefgh/"));
    }

    #[test]
    fn keeps_the_trailing_newline_state() {
        let body: String = (0..60).map(|i| format!("step {i} fine\n")).collect();
        for log in [format!("{body}error: boom\n"), format!("{body}error: boom")] {
            let c = compress_log(&log, &CompressOptions::default()).expect("compresses");
            assert_eq!(c.text.ends_with('\n'), log.ends_with('\n'));
            assert!(c.text.contains("error: boom"));
        }
    }
}
