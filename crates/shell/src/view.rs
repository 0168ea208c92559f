//! What the model sees of one stream (issue 14, SPEC "Output budget"): the stream whole when
//! it is short; the compressed log of *all* of it when it is a log — a failure with warning
//! or error lines, or the output of a known tool (a test run, a build, an install); else a
//! short excerpt, mostly head on success, mostly tail on failure. A cut stream always comes
//! with the pointer to its verbatim file.

use std::time::Instant;

use toolgate_budget::{
    CompressedLog, LogCompressor, LogOptions, OutputSizes, clean_terminal, compress_file,
    detect_kind, excerpt,
};

use crate::capture::Captured;
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
    let options = LogOptions {
        cap_chars: log_chars,
        ..LogOptions::default()
    };
    if let Some(whole) = c.whole() {
        let text = String::from_utf8_lossy(&whole);
        let clean = clean_terminal(&text);
        let kind = detect_kind(&clean);
        if failed || kind.is_some() {
            let mut compressor = LogCompressor::new(options);
            compressor.push(&whole);
            let log = compressor.finish();
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
        match compress_file(&file.path, options, deadline) {
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
