//! Compression over a whole stream in bounded memory: the compressor sees everything a
//! command printed, chunk by chunk as it arrives or from its spill file, keeps only the
//! pieces it would show, and fits them to the result's size at the end.
//!
//! A chunk ends at a line break, so lines are never split unless one line alone outgrows a
//! chunk. Context does not reach across chunk boundaries (one chunk is megabytes).

use std::borrow::Cow;
use std::io::Read;
use std::path::Path;
use std::time::Instant;

use super::classify::{self, Class};
use super::fit::{self, Piece};
use super::kind::{KindVotes, LogKind};
use super::{CompressOptions, Ending, Log, clean, split_lines};

/// Settings of [`LogCompressor`].
#[derive(Debug, Clone, PartialEq)]
pub struct LogOptions {
    /// How lines are kept and folded. `min_lines` and `min_savings` do not apply: a stream
    /// compressor always produces its view.
    pub compress: CompressOptions,
    /// Most characters of the compressed log; past it, the least important lines are folded
    /// (context, long traces' middles, captured chatter, warnings past the first few, then the
    /// middle of the errors).
    pub cap_chars: usize,
    /// Bytes compressed at a time. Default 4 MiB.
    pub chunk_bytes: usize,
    /// Chunks compressed at once, each on a thread of its own (at least 1), while the
    /// feeding thread joins the ones before; the log is the same whatever the number
    /// (chunks are compressed apart and joined in order). Default 2: on a 2-core benchmark
    /// machine, `run_shell` of a 105 MB log went from 230–277 MB/s with one to 255–333 MB/s
    /// with two in paired runs (`bench/RESULTS-performance.md`).
    pub threads: usize,
}

impl Default for LogOptions {
    fn default() -> Self {
        Self {
            compress: CompressOptions::default(),
            cap_chars: 8_000,
            chunk_bytes: 4 << 20,
            threads: 2,
        }
    }
}

/// A stream's compressed log.
#[derive(Debug, Clone, PartialEq)]
pub struct CompressedLog {
    /// The compressed text, ending with a newline (empty for an empty stream).
    pub text: String,
    /// The tool that printed it, when its lines show one.
    pub kind: Option<LogKind>,
    /// Bytes of the stream.
    pub input_bytes: u64,
    /// Lines of the stream (an unterminated last line counts).
    pub input_lines: u64,
    /// Anchor lines (problems, warnings, verdicts) in the stream.
    pub anchors: u64,
    /// Anchor lines whose text is shown; the others were folded to fit `cap_chars`, and each
    /// fold says how many it holds.
    pub anchors_shown: u64,
}

/// Compresses a stream fed in pieces of any size.
#[derive(Debug)]
pub struct LogCompressor {
    options: LogOptions,
    pending: Vec<u8>,
    bytes: u64,
    lines: u64,
    last: Option<u8>,
    /// Chunks compressed but not joined yet (their lengths, in order): they are joined
    /// while the next ones are compressed.
    unjoined: Vec<(usize, Chunk)>,
    joined: Joined,
}

/// The log of the chunks joined so far.
#[derive(Debug)]
struct Joined {
    /// The options' `cap_chars`.
    cap_chars: usize,
    pieces: Vec<Piece>,
    kept_chars: usize,
    votes: KindVotes,
    /// Bytes joined.
    compressed: u64,
    anchors: u64,
    folded: u64,
}

impl LogCompressor {
    /// A compressor with `options`.
    pub fn new(options: LogOptions) -> Self {
        Self {
            joined: Joined {
                cap_chars: options.cap_chars,
                pieces: Vec::new(),
                kept_chars: 0,
                votes: KindVotes::default(),
                compressed: 0,
                anchors: 0,
                folded: 0,
            },
            options,
            pending: Vec::new(),
            bytes: 0,
            lines: 0,
            last: None,
            unjoined: Vec::new(),
        }
    }

    /// Feeds the next bytes of the stream.
    pub fn push(&mut self, data: &[u8]) {
        self.bytes += data.len() as u64;
        self.lines += memchr::memchr_iter(b'\n', data).count() as u64;
        if let Some(&b) = data.last() {
            self.last = Some(b);
        }
        self.pending.extend_from_slice(data);
        // Wait for a chunk per thread; `finish` takes the chunks left over.
        let batch = self.options.chunk_bytes.max(1) * self.options.threads.max(1);
        while self.pending.len() > batch {
            self.compress_chunks();
        }
    }

    /// Compresses the next chunks of `pending` (one per thread, as many as there are), each
    /// on a thread of its own, while this thread joins the chunks compressed last time. A
    /// chunk ends at its last line break; a longer line is cut at the chunk. Strictly more
    /// than a chunk must follow each one's start: the stream's last bytes always stay for
    /// `finish`, which keeps how the log ends.
    fn compress_chunks(&mut self) {
        let chunk = self.options.chunk_bytes.max(1);
        let mut cuts = Vec::new();
        let mut at = 0;
        while cuts.len() < self.options.threads.max(1) && self.pending.len() - at > chunk {
            let window = &self.pending[at..at + chunk];
            let end = at + memchr::memrchr(b'\n', window).map_or(chunk, |nl| nl + 1);
            cuts.push(at..end);
            at = end;
        }
        let options = &self.options.compress;
        let pending = &self.pending;
        let joined = &mut self.joined;
        let earlier = std::mem::take(&mut self.unjoined);
        let done: Vec<(usize, Chunk)> = std::thread::scope(|scope| {
            let spawned: Vec<_> = cuts
                .iter()
                .map(|range| {
                    let bytes = &pending[range.clone()];
                    std::thread::Builder::new()
                        .name("toolgate-log-chunk".to_owned())
                        .spawn_scoped(scope, move || Chunk::of(bytes, options, Ending::Chunk))
                        .ok()
                })
                .collect();
            for (len, chunk) in earlier {
                joined.join(len, chunk);
            }
            cuts.iter()
                .zip(spawned)
                .map(|(range, thread)| {
                    // No thread (or it died): compress the chunk here.
                    let chunk = thread.and_then(|t| t.join().ok()).unwrap_or_else(|| {
                        Chunk::of(&pending[range.clone()], options, Ending::Chunk)
                    });
                    (range.len(), chunk)
                })
                .collect()
        });
        self.unjoined = done;
        self.pending.drain(..at);
    }

    /// The compressed log of everything fed, within the options' `cap_chars`.
    pub fn finish(self) -> CompressedLog {
        let cap = self.options.cap_chars;
        self.finish_within(cap)
    }

    /// The compressed log of everything fed, within `cap_chars` (at most the options'): for a
    /// stream compressed while it was captured, before its share of the result was known.
    /// The options' `cap_chars` bounds what is kept along the way, so the same options and
    /// bytes give the same log whichever way they were fed.
    pub fn finish_within(mut self, cap_chars: usize) -> CompressedLog {
        let cap_chars = cap_chars.min(self.options.cap_chars);
        while self.pending.len() > self.options.chunk_bytes.max(1) {
            self.compress_chunks();
        }
        let mut joined = self.joined;
        for (len, chunk) in self.unjoined {
            joined.join(len, chunk);
        }
        if !self.pending.is_empty() {
            let chunk = Chunk::of(&self.pending, &self.options.compress, Ending::Kept);
            joined.join(self.pending.len(), chunk);
        }
        let (pieces, fitted) = fit::fit(joined.pieces, cap_chars);
        joined.folded += fitted.anchors_folded as u64;
        CompressedLog {
            text: fit::render(&pieces),
            kind: joined.votes.kind(),
            input_bytes: self.bytes,
            input_lines: self.lines + u64::from(self.last.is_some_and(|b| b != b'\n')),
            anchors: joined.anchors,
            anchors_shown: joined.anchors.saturating_sub(joined.folded),
        }
    }
}

impl Joined {
    /// Joins the next chunk (`len` bytes) to the log.
    fn join(&mut self, len: usize, chunk: Chunk) {
        // The chunk's start counts while no kind is known, and always for the stream's
        // start. (Whether this is the first chunk goes by what was compressed, not by what
        // was fed: the log must not depend on the sizes of the pieces it was fed in.)
        if self.votes.kind().is_none() || self.compressed == 0 {
            self.votes.merge(chunk.start_votes);
        }
        self.compressed += len as u64;
        self.votes.merge(chunk.votes);
        self.anchors += chunk.anchors;
        self.kept_chars += fit::size(&chunk.pieces);
        self.pieces.extend(chunk.pieces);
        // Bounded memory whatever the stream holds: past 16 caps, fit what is kept so far
        // to 4 caps (the first and last lines stay; the final fit decides the rest).
        let bound = self.cap_chars.saturating_mul(16).max(1 << 20);
        if self.kept_chars > bound {
            let (pieces, fitted) = fit::fit(
                std::mem::take(&mut self.pieces),
                self.cap_chars.saturating_mul(4),
            );
            self.folded += fitted.anchors_folded as u64;
            self.kept_chars = fit::size(&pieces);
            self.pieces = pieces;
        }
    }
}

/// One chunk of a stream compressed on its own: what it adds to the log.
#[derive(Debug)]
struct Chunk {
    pieces: Vec<Piece>,
    anchors: u64,
    /// Signatures at the chunk's start (a line-start signature needs the line break before).
    start_votes: KindVotes,
    votes: KindVotes,
}

impl Chunk {
    /// The chunk `bytes`, which ends the stream when `ending` says its end is kept.
    fn of(bytes: &[u8], options: &CompressOptions, ending: Ending) -> Self {
        // Valid UTF-8 (most logs) is checked much faster than `from_utf8_lossy` walks it.
        let text = match std::str::from_utf8(bytes) {
            Ok(text) => Cow::Borrowed(text),
            Err(_) => String::from_utf8_lossy(bytes),
        };
        let mut out = Self {
            pieces: Vec::new(),
            anchors: 0,
            start_votes: KindVotes::default(),
            votes: KindVotes::default(),
        };
        out.start_votes.scan(&format!(
            "\n{}",
            text.get(..256.min(text.len())).unwrap_or("")
        ));
        out.votes.scan(&text);
        let clean = clean::clean(&text);
        let lines = split_lines(&clean);
        let Some(classified) = classify::classify_ranked(&clean, &lines) else {
            // No matcher: show the chunk's lines as they are, so nothing is hidden silently.
            out.pieces.extend(
                lines
                    .iter()
                    .map(|l| Piece::shown((*l).to_owned(), fit::PieceKind::Noise, 1, 0)),
            );
            return out;
        };
        out.anchors = classified
            .classes
            .iter()
            .filter(|c| **c == Class::Anchor)
            .count() as u64;
        let mut log = Log {
            lines: &lines,
            classes: &classified.classes,
            ranks: &classified.ranks,
            pinned: &classified.pinned,
            signatures: vec![0; lines.len()],
        };
        let keep = log.keep(options.context, ending);
        log.pieces(&keep, options.min_fold.max(1), &mut out.pieces);
        out
    }
}

/// Compresses the file at `path` (a spill file) in bounded memory. `None` when `deadline`
/// passed first: the caller shows an excerpt instead.
pub fn compress_file(
    path: &Path,
    options: LogOptions,
    deadline: Option<Instant>,
) -> std::io::Result<Option<CompressedLog>> {
    Ok(feed_file(path, options, deadline)?.map(LogCompressor::finish))
}

/// A compressor fed the whole file at `path`, not yet finished (see
/// [`LogCompressor::finish_within`]). `None` when `deadline` passed first.
pub fn feed_file(
    path: &Path,
    options: LogOptions,
    deadline: Option<Instant>,
) -> std::io::Result<Option<LogCompressor>> {
    let mut file = fs_err::File::open(path)?;
    let mut compressor = LogCompressor::new(options);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        compressor.push(&buf[..n]);
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(None);
        }
    }
    Ok(Some(compressor))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(log: &str, chunk: usize, cap: usize) -> CompressedLog {
        let mut c = LogCompressor::new(LogOptions {
            cap_chars: cap,
            chunk_bytes: chunk,
            ..LogOptions::default()
        });
        for piece in log.as_bytes().chunks(7) {
            c.push(piece);
        }
        c.finish()
    }

    #[test]
    fn chunk_size_does_not_lose_anchors_or_counts() {
        let mut log: String = (0..5_000)
            .map(|i| format!("test m::case_{i} ... ok\n"))
            .collect();
        let at = log[40_000..].find('\n').unwrap() + 40_001;
        log.insert_str(at, "error: something broke here\n");
        log.push_str("test result: FAILED. 4999 passed; 1 failed\n");
        for chunk in [64, 1_000, 1 << 20] {
            let c = run(&log, chunk, 100_000);
            assert!(c.text.contains("error: something broke here\n"), "{chunk}");
            assert!(
                c.text
                    .ends_with("test result: FAILED. 4999 passed; 1 failed\n")
            );
            assert_eq!(c.input_lines, 5_002);
            assert_eq!(c.input_bytes, log.len() as u64);
            assert_eq!(c.anchors, c.anchors_shown);
            assert_eq!(c.kind, Some(LogKind::CargoTest));
            assert!(c.text.len() < 2_000, "{chunk}: {}", c.text.len());
        }
    }

    #[test]
    fn the_log_does_not_depend_on_the_pieces_it_was_fed_in() {
        // A capture feeds 64 KiB reads, the read-back path 1 MiB ones; with chunks of 4 KiB
        // and a log that spans many, both must give the same log, whatever cap it ends in.
        let mut log = String::from("Compiling app v0.1.0\n");
        for i in 0..3_000 {
            log.push_str(&format!("note: step {i} of the build went fine\n"));
            if i % 700 == 0 {
                log.push_str(&format!("error[E0{i:03}]: mismatched types at step {i}\n"));
            }
        }
        let feed = |piece: usize, cap: usize, threads: usize| {
            let mut c = LogCompressor::new(LogOptions {
                cap_chars: 4_000,
                chunk_bytes: 4_096,
                threads,
                ..LogOptions::default()
            });
            for p in log.as_bytes().chunks(piece) {
                c.push(p);
            }
            c.finish_within(cap)
        };
        for cap in [4_000, 1_500] {
            let whole = feed(log.len(), cap, 1);
            assert!(whole.text.contains("error[E0700]"), "{}", whole.text);
            for piece in [1, 100, 4_095, 4_096, 65_536] {
                // Chunks compressed on several threads at once are joined as one thread
                // would have made them.
                for threads in [1, 2, 3, 0] {
                    let fed = feed(piece, cap, threads);
                    assert_eq!(
                        fed, whole,
                        "pieces of {piece}, cap {cap}, {threads} threads"
                    );
                }
            }
        }
        assert!(feed(100, 1_500, 2).text.chars().count() <= 1_500);
    }

    #[test]
    fn the_cap_holds_and_the_folds_say_what_they_hold() {
        let log: String = (0..20_000)
            .map(|i| format!("error: failure number {i}\n"))
            .collect();
        let c = run(&log, 50_000, 4_000);
        assert!(
            c.text.chars().count() <= 4_000,
            "{}",
            c.text.chars().count()
        );
        assert!(c.text.starts_with("error: failure number 0\n"));
        assert!(c.text.ends_with("error: failure number 19999\n"));
        let folded = c.anchors - c.anchors_shown;
        assert!(c.text.contains(&format!("{folded} of them")), "{}", c.text);
    }
}
