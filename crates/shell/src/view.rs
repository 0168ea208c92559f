//! What the model sees of one stream: the stream whole when it is short; the compressed log
//! of *all* of it when it is a log — a failure with warning or error lines, or the output
//! of a known tool (a test run, a build, an install); else a short excerpt, mostly head on
//! success, mostly tail on failure. A cut stream always comes with the pointer to its
//! verbatim file.

use std::time::Instant;

use toolgate_budget::{
    CompressedLog, LogCompressor, LogOptions, OutputSizes, clean_terminal, detect_kind, excerpt,
    feed_file,
};

use crate::capture::{Captured, LogWait};
use crate::clean::show;

/// The sizes one stream is shown within.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StreamSizes {
    /// Shown whole up to this many characters (`[shell] inline_chars`, narrowed to a third of
    /// the result size so both streams and the status fit).
    pub inline_chars: usize,
    /// An excerpt's characters.
    pub excerpt_chars: usize,
    /// A compressed log's most characters.
    pub log_chars: usize,
}

impl StreamSizes {
    /// Sizes for one stream of a result sized by `sizes`.
    pub fn new(inline_chars: usize, sizes: OutputSizes) -> Self {
        let third = sizes.result_chars / 3;
        Self {
            inline_chars: inline_chars.min(third),
            excerpt_chars: sizes.excerpt_chars.min(third),
            log_chars: sizes.log_chars.min(third),
        }
    }
}

impl StreamSizes {
    /// The options a stream's log is compressed with, while it is captured or afterwards:
    /// the most characters any one stream's log may get bounds what is kept along the way;
    /// the log is cut to its actual share when the result is put together.
    pub fn log_options(&self) -> LogOptions {
        LogOptions {
            cap_chars: self.log_chars.max(self.excerpt_chars),
            ..LogOptions::default()
        }
    }
}

/// One stream as shown.
#[derive(Debug)]
pub(crate) enum View {
    /// All of it (cleaned of terminal escapes).
    Whole(String),
    /// An excerpt of it.
    Excerpt(String),
    /// Its compressed log.
    Log(CompressedLog),
}

/// Room taken by a cut stream's header and pointer.
const POINTER_ROOM: usize = 450;

/// How both streams of a command are shown. Short streams are shown whole; the others share
/// what is left of `log_chars` after them, so a result with a compressed log stays within it.
pub(crate) fn views(
    streams: [&Captured; 2],
    failed: bool,
    sizes: StreamSizes,
    deadline: Option<Instant>,
) -> [View; 2] {
    let binary = streams.map(binary_note);
    let whole = [0, 1].map(|i| match binary[i] {
        Some(_) => None,
        None => whole_text(streams[i], sizes.inline_chars),
    });
    let whole_chars: usize = whole.iter().flatten().map(|t| t.chars().count()).sum();
    let cut = streams
        .iter()
        .zip(&whole)
        .filter(|(c, w)| c.total > 0 && w.is_none())
        .count()
        .max(1);
    let room = sizes
        .log_chars
        .saturating_sub(whole_chars + cut * POINTER_ROOM)
        / cut;
    let log_chars = room.max(sizes.excerpt_chars);
    let [out, err] = streams;
    let [out_whole, err_whole] = whole;
    let [out_binary, err_binary] = binary;
    [
        out_binary.map_or_else(
            || view(out, out_whole, failed, sizes, log_chars, deadline),
            View::Excerpt,
        ),
        err_binary.map_or_else(
            || view(err, err_whole, failed, sizes, log_chars, deadline),
            View::Excerpt,
        ),
    ]
}

/// Bytes of the start of a stream looked at to tell binary from text.
const SNIFF_BYTES: usize = 8 * 1024;

/// A short note in place of a stream that is binary (a NUL byte, or mostly bytes that are
/// neither text nor valid UTF-8, in its first 8 KiB): its size, a hex preview and the
/// printable strings in it — never thousands of `\u0000` characters for the model.
fn binary_note(c: &Captured) -> Option<String> {
    let start = &c.head[..c.head.len().min(SNIFF_BYTES)];
    if start.is_empty() {
        return None;
    }
    let text = String::from_utf8_lossy(start);
    let odd = text
        .chars()
        .filter(|&ch| {
            ch == '\u{FFFD}' || (ch.is_control() && !matches!(ch, '\n' | '\r' | '\t' | '\u{1b}'))
        })
        .count();
    if !start.contains(&0) && odd * 10 < text.chars().count() * 3 {
        return None;
    }
    let hex: Vec<String> = start.iter().take(32).map(|b| format!("{b:02x}")).collect();
    let mut strings: Vec<String> = Vec::new();
    let mut current = String::new();
    for &b in start {
        if b.is_ascii_graphic() || b == b' ' {
            current.push(char::from(b));
            continue;
        }
        if current.len() >= 4 && strings.len() < 8 {
            strings.push(std::mem::take(&mut current));
        }
        current.clear();
    }
    if current.len() >= 4 && strings.len() < 8 {
        strings.push(current);
    }
    let strings = if strings.is_empty() {
        "none".to_owned()
    } else {
        strings
            .iter()
            .map(|s| format!("{:?}", s.chars().take(60).collect::<String>()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    Some(format!(
        "[binary output: {} bytes, not shown as text. First bytes (hex): {}{}. Printable strings near the start: {strings}. To look inside, run e.g. `… | xxd | head -50` or `… | strings | head -50`.]",
        crate::clean::group(c.total),
        hex.join(" "),
        if start.len() > 32 { " …" } else { "" },
    ))
}

/// The cleaned stream when it is in memory and within `inline_chars`.
fn whole_text(c: &Captured, inline_chars: usize) -> Option<String> {
    let whole = c.whole()?;
    let text = String::from_utf8_lossy(&whole);
    let clean = clean_terminal(&text);
    (clean.chars().count() <= inline_chars).then(|| clean.into_owned())
}

/// How a stream ended up being shown: the whole, an excerpt or its compressed log within
/// `log_chars`.
fn view(
    c: &Captured,
    whole_text: Option<String>,
    failed: bool,
    sizes: StreamSizes,
    log_chars: usize,
    deadline: Option<Instant>,
) -> View {
    if let Some(text) = whole_text {
        return View::Whole(text);
    }
    let options = sizes.log_options();
    if let Some(whole) = c.whole() {
        let text = String::from_utf8_lossy(&whole);
        let clean = clean_terminal(&text);
        let kind = detect_kind(&clean);
        if failed || kind.is_some() {
            let mut compressor = LogCompressor::new(options);
            compressor.push(&whole);
            let log = compressor.finish_within(log_chars);
            if is_log(&log, failed) {
                return View::Log(log);
            }
        }
        return View::Excerpt(excerpt(&clean, sizes.excerpt_chars, failed));
    }
    // Only the head and tail are in memory; the file holds the rest.
    let head = String::from_utf8_lossy(&c.head);
    let tail = String::from_utf8_lossy(&c.tail);
    let kind = detect_kind(&head).or_else(|| detect_kind(&tail));
    if (failed || kind.is_some())
        && c.error.is_none()
        && let Some(file) = &c.file
    {
        // Compressed while it was captured, when it was; else read back from its file.
        let fed = match c.log.as_ref().map(|log| log.wait(deadline)) {
            Some(LogWait::Ready(compressor)) => Ok(Some(*compressor)),
            Some(LogWait::TooLate) => Ok(None),
            Some(LogWait::Gone) | None => feed_file(&file.path, options, deadline),
        };
        match fed.map(|c| c.map(|c| c.finish_within(log_chars))) {
            Ok(Some(log)) if is_log(&log, failed) => return View::Log(log),
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(%e, "could not compress a command's output; showing an excerpt")
            }
        }
    }
    View::Excerpt(show(c, sizes.excerpt_chars, failed).text)
}

/// Whether a compressed log is the better view: a known tool's output, or a failure with
/// warning or error lines to show.
fn is_log(log: &CompressedLog, failed: bool) -> bool {
    log.kind.is_some() || failed && log.anchors > 0
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::Arc;

    use toolgate_budget::SpillStore;

    use super::*;
    use crate::capture::{Pump, PumpConfig, Sink, StreamProgress};

    /// A failing build log of about `lines` lines: chatter with errors and warnings here and
    /// there, and a summary at the end.
    fn failing_log(lines: usize) -> Vec<u8> {
        let mut log = Vec::new();
        for i in 0..lines {
            let line = match i % 997 {
                0 => format!("error[E0308]: mismatched types in module_{i}\n"),
                500 => format!("warning: unused variable `x{i}`\n"),
                _ => format!("   Compiling crate_{i} v0.{}.0 (/src/crate_{i})\n", i % 13),
            };
            log.extend_from_slice(line.as_bytes());
        }
        log.extend_from_slice(b"error: could not compile `app` due to 12 previous errors\n");
        log
    }

    /// Pumps `bytes` through a real pipe as a foreground stream (compressed while captured
    /// with `sizes`' options), in pieces of `piece` bytes.
    async fn capture(store: &Arc<SpillStore>, bytes: Vec<u8>, sizes: StreamSizes) -> Captured {
        let (rx, tx) = rustix::pipe::pipe().unwrap();
        let writer = std::thread::spawn(move || {
            let mut tx = std::io::PipeWriter::from(tx);
            for piece in bytes.chunks(10_000) {
                tx.write_all(piece).unwrap();
            }
        });
        let sink = Sink::Lazy {
            store: Arc::clone(store),
            label: "test".to_owned(),
            compress: Some(sizes.log_options()),
        };
        let config = PumpConfig {
            head: 32 * 1024,
            tail: 32 * 1024,
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
        pump.finish(std::time::Duration::from_secs(60)).await
    }

    fn text(view: &View) -> String {
        match view {
            View::Whole(t) | View::Excerpt(t) => format!("whole/excerpt: {t}"),
            View::Log(log) => format!("log: {log:?}"),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_log_compressed_while_captured_equals_the_one_read_back_from_the_spill_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SpillStore::new(dir.path(), 1 << 40));
        let sizes = StreamSizes::new(
            16_000,
            OutputSizes {
                excerpt_chars: 4_000,
                log_chars: 12_000,
                result_chars: 60_000,
            },
        );
        // 12 MB: several of the compressor's 4 MiB chunks, and more kept than 16 caps, so
        // the log is fitted along the way too.
        let log = failing_log(220_000);
        let out = capture(&store, log.clone(), sizes).await;
        let err = Captured::default();
        assert_eq!(out.total, log.len() as u64);
        assert!(
            out.log.is_some(),
            "a stream that outgrew memory is compressed as it runs"
        );
        assert_eq!(fs_err::read(&out.file.as_ref().unwrap().path).unwrap(), log);
        let live = views([&out, &err], true, sizes, None);
        // The same stream without its live log: the log is read back from the spill file,
        // as before.
        let read_back = Captured {
            log: None,
            head: out.head.clone(),
            tail: out.tail.clone(),
            total: out.total,
            newlines: out.newlines,
            open_line: out.open_line,
            file: out.file.clone(),
            ..Captured::default()
        };
        let old = views([&read_back, &err], true, sizes, None);
        assert!(matches!(live[0], View::Log(_)), "{}", text(&live[0]));
        assert_eq!(text(&live[0]), text(&old[0]));
        assert!(text(&live[0]).contains("error: could not compile `app`"));
    }
}
