//! What a model reads of a stream: decoded lossily, terminal noise removed, cut to an
//! excerpt (head-biased on success, tail-biased on failure). The file on disk keeps the raw
//! bytes.

use std::borrow::Cow;

use toolgate_budget::{clean_terminal, excerpt};

use crate::capture::Captured;

/// Decodes bytes that may end inside a UTF-8 character: the incomplete end is dropped.
fn decode_head(bytes: &[u8]) -> Cow<'_, str> {
    let end = match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        Err(_) => incomplete_end(bytes),
    };
    String::from_utf8_lossy(&bytes[..end])
}

/// Where a trailing incomplete UTF-8 sequence starts (or the length when there is none).
fn incomplete_end(bytes: &[u8]) -> usize {
    for back in 1..=3.min(bytes.len()) {
        let i = bytes.len() - back;
        let b = bytes[i];
        if b & 0xC0 != 0x80 {
            let need = match b {
                0xC0..=0xDF => 2,
                0xE0..=0xEF => 3,
                0xF0..=0xF7 => 4,
                _ => 1,
            };
            return if need > back { i } else { bytes.len() };
        }
    }
    bytes.len()
}

/// Decodes bytes that may start inside a UTF-8 character: the continuation bytes at the
/// start are dropped.
fn decode_tail(bytes: &[u8]) -> Cow<'_, str> {
    let start = bytes
        .iter()
        .take(3)
        .take_while(|&&b| b & 0xC0 == 0x80)
        .count();
    String::from_utf8_lossy(&bytes[start..])
}

/// A stream as the model sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Shown {
    /// The cleaned text, whole or as an excerpt.
    pub text: String,
    /// Whether `text` is an excerpt.
    pub cut: bool,
}

/// The stream's text for the model: whole when it fits `cap` characters after cleaning,
/// else an excerpt of about `cap` characters, mostly head on success, mostly tail on
/// failure.
pub(crate) fn show(captured: &Captured, cap: usize, tail_biased: bool) -> Shown {
    if let Some(whole) = captured.whole() {
        let text = String::from_utf8_lossy(&whole);
        let text = clean_terminal(&text);
        let cut = text.chars().count() > cap;
        return Shown {
            text: if cut {
                excerpt(&text, cap, tail_biased)
            } else {
                text.into_owned()
            },
            cut,
        };
    }
    // Only the first and last bytes are in memory: build the excerpt from those.
    let head = decode_head(&captured.head);
    let head = clean_terminal(&head);
    let tail = decode_tail(&captured.tail);
    let tail = clean_terminal(&tail);
    let small = (cap / 4).min(400);
    let (head_len, tail_len) = if tail_biased {
        (small, cap - small)
    } else {
        (cap - small, small)
    };
    let head = first_chars(&head, head_len);
    let tail = last_chars(&tail, tail_len);
    let mut text = String::with_capacity(head.len() + tail.len() + 80);
    text.push_str(head);
    if !head.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!(
        "… [middle omitted: the stream has {} bytes] …\n",
        group(captured.total)
    ));
    text.push_str(tail);
    Shown { text, cut: true }
}

/// The first `n` characters, ending at a line break when one is near the cut.
fn first_chars(text: &str, n: usize) -> &str {
    let end = text.char_indices().nth(n).map_or(text.len(), |(i, _)| i);
    let cut = &text[..end];
    if end == text.len() {
        return cut;
    }
    match cut.rfind('\n') {
        Some(nl) if nl * 5 >= end * 4 => &cut[..=nl],
        _ => cut,
    }
}

/// The last `n` characters, starting after a line break when one is near the cut.
fn last_chars(text: &str, n: usize) -> &str {
    let total = text.chars().count();
    if total <= n {
        return text;
    }
    let start = text
        .char_indices()
        .nth(total - n)
        .map_or(text.len(), |(i, _)| i);
    let rest = &text[start..];
    match rest.find('\n') {
        Some(nl) if nl * 5 <= rest.len() => &rest[nl + 1..],
        _ => rest,
    }
}

pub(crate) use toolgate_budget::group;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansi_sequences_are_removed() {
        let colored = "\u{1b}[1;31merror\u{1b}[0m: bad\n\u{1b}]0;title\u{7}ok \u{1b}(Bdone\u{1b}7";
        assert_eq!(clean_terminal(colored), "error: bad\nok done");
        assert_eq!(clean_terminal("\u{9b}2Kx"), "x");
        assert_eq!(clean_terminal("plain\ntext"), "plain\ntext");
    }

    #[test]
    fn progress_frames_keep_the_last_one() {
        let text = "Downloading  10%\rDownloading  55%\rDownloading 100%\nnext\r\nend";
        assert_eq!(clean_terminal(text), "Downloading 100%\nnext\nend");
        assert_eq!(clean_terminal("a\r"), "a");
    }

    #[test]
    fn cut_utf8_is_dropped_not_replaced() {
        let text = "héllo wörld €".as_bytes();
        for cut in 0..=text.len() {
            let head = decode_head(&text[..cut]);
            assert!(!head.contains('\u{fffd}'), "head cut at {cut}: {head:?}");
            let tail = decode_tail(&text[cut..]);
            assert!(!tail.contains('\u{fffd}'), "tail cut at {cut}: {tail:?}");
        }
        // Invalid bytes inside stay visible as replacement characters.
        assert_eq!(decode_head(b"a\xffb"), "a\u{fffd}b");
    }

    #[test]
    fn excerpt_from_window_is_biased_by_status() {
        let head: Vec<u8> = (0..2000)
            .flat_map(|i| format!("head {i}\n").into_bytes())
            .collect();
        let tail: Vec<u8> = (0..2000)
            .flat_map(|i| format!("tail {i}\n").into_bytes())
            .collect();
        let captured = Captured {
            total: 10_000_000,
            head,
            tail,
            ..Captured::default()
        };
        let ok = show(&captured, 1000, false);
        assert!(ok.cut);
        assert!(ok.text.starts_with("head 0\n"));
        assert!(ok.text.ends_with("tail 1999\n"));
        assert!(ok.text.contains("10,000,000 bytes"));
        let failed = show(&captured, 1000, true);
        assert!(failed.text.matches("tail ").count() > failed.text.matches("head ").count());
        assert!(ok.text.matches("head ").count() > ok.text.matches("tail ").count());
    }
}
