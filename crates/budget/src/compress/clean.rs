//! Terminal debris removed before a log is classified: ANSI escape sequences and the
//! carriage-return frames of progress bars (only what a terminal would end up showing stays).

use std::borrow::Cow;

const ESC: u8 = 0x1b;
const BEL: u8 = 0x07;
/// Last byte of U+009B, the single-character CSI some programs emit instead of `ESC [`.
const C1_CSI_BYTE: u8 = 0x9b;

/// `text` without escape sequences and with each line reduced to the text after its last
/// `\r`; `\r\n` line ends become `\n`. Borrowed when there is nothing to remove.
pub fn clean(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    // 0x9B also finds the 8-bit CSI (U+009B, UTF-8 `C2 9B`); other characters holding that
    // byte merely take the slow path and come out unchanged.
    let Some(first) = memchr::memchr3(ESC, b'\r', C1_CSI_BYTE, bytes) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(bytes.len());
    // Copy clean stretches whole; rework only the lines that hold an ESC or a CR.
    let mut copied = 0;
    let mut next = Some(first);
    while let Some(at) = next {
        let line_start = memchr::memrchr(b'\n', &bytes[..at]).map_or(0, |i| i + 1);
        let line_end = memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |i| at + i);
        // ESC, CR and LF are ASCII, so these cuts fall between characters.
        out.push_str(text.get(copied..line_start).unwrap_or_default());
        clean_line(text.get(line_start..line_end).unwrap_or_default(), &mut out);
        copied = line_end;
        next = memchr::memchr3(ESC, b'\r', C1_CSI_BYTE, &bytes[line_end..]).map(|i| line_end + i);
    }
    out.push_str(text.get(copied..).unwrap_or_default());
    Cow::Owned(out)
}

/// Appends what a terminal would show of `line` (no `\n`): the text after its last `\r`
/// (a trailing `\r`, as in `\r\n`, doesn't count), without escape sequences.
fn clean_line(line: &str, out: &mut String) {
    let line = line.trim_end_matches('\r');
    let line = match memchr::memrchr(b'\r', line.as_bytes()) {
        Some(cr) => line.get(cr + 1..).unwrap_or_default(),
        None => line,
    };
    if line.contains('\u{9b}') {
        strip_ansi(&line.replace('\u{9b}', "\x1b["), out);
    } else {
        strip_ansi(line, out);
    }
}

/// Appends `line` to `out` without its escape sequences: CSI (`ESC [ … final`), OSC and the
/// other string commands (`ESC ] … BEL` or `ESC \`), charset selections (`ESC ( B`) and
/// two-byte escapes. Only ASCII bytes are skipped, so every cut falls between characters.
fn strip_ansi(line: &str, out: &mut String) {
    let bytes = line.as_bytes();
    let mut i = 0;
    while let Some(at) = memchr::memchr(ESC, &bytes[i..]) {
        out.push_str(line.get(i..i + at).unwrap_or_default());
        i += at + 1;
        match bytes.get(i) {
            Some(b'[') => {
                i += 1;
                // Parameters and intermediates, then one final byte in 0x40..=0x7E. A
                // malformed sequence stops at the first byte that can't belong to it.
                while let Some(&b) = bytes.get(i) {
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
                while let Some(&b) = bytes.get(i) {
                    if !b.is_ascii() {
                        // Text of a title or link: skip the whole character.
                        i += line
                            .get(i..)
                            .and_then(|r| r.chars().next())
                            .map_or(1, char::len_utf8);
                        continue;
                    }
                    i += 1;
                    if b == BEL {
                        break;
                    }
                    if b == ESC && bytes.get(i) == Some(&b'\\') {
                        i += 1;
                        break;
                    }
                }
            }
            Some(b'(' | b')' | b'*' | b'+') => {
                i += 1;
                if bytes.get(i).is_some_and(u8::is_ascii) {
                    i += 1;
                }
            }
            Some(b) if b.is_ascii() => i += 1,
            _ => {}
        }
    }
    out.push_str(line.get(i..).unwrap_or_default());
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
    fn strips_the_8_bit_csi_and_leaves_other_characters_alone() {
        assert_eq!(clean("\u{9b}2Kx"), "x");
        assert_eq!(clean("ě ok"), "ě ok");
    }

    #[test]
    fn borrowed_when_clean() {
        assert!(matches!(
            clean("plain\ntext"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
