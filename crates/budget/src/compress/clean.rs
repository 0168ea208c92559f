//! Terminal debris removed before a log is classified: ANSI escape sequences and the
//! carriage-return frames of progress bars (only what a terminal would end up showing stays).

use std::borrow::Cow;

const ESC: u8 = 0x1b;
const BEL: u8 = 0x07;

/// `text` without escape sequences and with each line reduced to the text after its last
/// `\r`; `\r\n` line ends become `\n`. Borrowed when there is nothing to remove.
pub(super) fn clean(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    if memchr::memchr2(ESC, b'\r', bytes).is_none() {
        return Cow::Borrowed(text);
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut start = 0;
    while start < bytes.len() {
        let end = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |i| start + i);
        let mut line = &bytes[start..end];
        while let [rest @ .., b'\r'] = line {
            line = rest;
        }
        if let Some(cr) = memchr::memrchr(b'\r', line) {
            line = &line[cr + 1..];
        }
        strip_ansi(line, &mut out);
        if end < bytes.len() {
            out.push(b'\n');
        }
        start = end + 1;
    }
    // Only ASCII bytes are ever skipped, so what is left is still UTF-8; the lossy path is a
    // guard that never runs.
    Cow::Owned(
        String::from_utf8(out)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
    )
}

/// Appends `line` to `out` without its escape sequences: CSI (`ESC [ … final`), OSC and the
/// other string commands (`ESC ] … BEL` or `ESC \`), charset selections (`ESC ( B`) and
/// two-byte escapes.
fn strip_ansi(line: &[u8], out: &mut Vec<u8>) {
    let mut i = 0;
    while let Some(at) = memchr::memchr(ESC, &line[i..]) {
        out.extend_from_slice(&line[i..i + at]);
        i += at + 1;
        match line.get(i) {
            Some(b'[') => {
                i += 1;
                // Parameters and intermediates, then one final byte in 0x40..=0x7E. A
                // malformed sequence stops at the first byte that can't belong to it.
                while let Some(&b) = line.get(i) {
                    if (0x20..=0x3f).contains(&b) {
                        i += 1;
                    } else {
                        if (0x40..=0x7e).contains(&b) {
                            i += 1;
                        }
                        break;
                    }
                }
            }
            Some(b']' | b'P' | b'X' | b'^' | b'_') => {
                i += 1;
                while let Some(&b) = line.get(i) {
                    i += 1;
                    if b == BEL {
                        break;
                    }
                    if b == ESC && line.get(i) == Some(&b'\\') {
                        i += 1;
                        break;
                    }
                }
            }
            Some(b'(' | b')' | b'*' | b'+') => i = (i + 2).min(line.len()),
            Some(b) if b.is_ascii() => i += 1,
            _ => {}
        }
    }
    out.extend_from_slice(&line[i..]);
}

#[cfg(test)]
mod tests {
    use super::clean;

    #[test]
    fn strips_colours_and_keeps_text() {
        assert_eq!(clean("\x1b[31;1merror\x1b[0m: boom\n"), "error: boom\n");
    }

    #[test]
    fn keeps_only_the_last_progress_frame() {
        assert_eq!(clean("a\n 10%\r 50%\r100%\r\nb\r\n"), "a\n100%\nb\n");
    }

    #[test]
    fn strips_osc_hyperlinks_and_charset_selection() {
        let s = "\x1b]8;;https://x.test/é\x1b\\link\x1b]8;;\x07 \x1b(Bdone";
        assert_eq!(clean(s), "link done");
    }

    #[test]
    fn malformed_escape_keeps_following_utf8() {
        assert_eq!(clean("\x1b[12é ok"), "é ok");
    }

    #[test]
    fn borrowed_when_clean() {
        assert!(matches!(
            clean("plain\ntext"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
