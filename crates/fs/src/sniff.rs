//! What a file is, judged from its first chunk (256 KiB decide encoding and whether the
//! file is binary).

/// The kind of content a file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    /// UTF-8 text (possibly with a BOM of `bom` bytes to skip).
    Utf8 { bom: usize },
    /// Text in a single-byte legacy encoding or with stray bytes; shown lossily.
    Lossy,
    /// UTF-16 with a byte-order mark.
    Utf16 { little_endian: bool },
    /// An image MCP clients can show.
    Image(&'static str),
    /// A PDF document.
    Pdf,
    /// Anything else that is not text.
    Binary,
}

/// Classifies `chunk`, the first bytes of a file (`complete` when it is the whole file).
pub(crate) fn sniff(chunk: &[u8], complete: bool) -> Kind {
    if let Some(mime) = image_mime(chunk) {
        return Kind::Image(mime);
    }
    if chunk.starts_with(b"%PDF-") {
        return Kind::Pdf;
    }
    if chunk.starts_with(&[0xFF, 0xFE]) {
        return Kind::Utf16 {
            little_endian: true,
        };
    }
    if chunk.starts_with(&[0xFE, 0xFF]) {
        return Kind::Utf16 {
            little_endian: false,
        };
    }
    let bom = if chunk.starts_with(&[0xEF, 0xBB, 0xBF]) {
        3
    } else {
        0
    };
    let body = &chunk[bom..];
    if memchr::memchr(0, body).is_some() {
        return Kind::Binary;
    }
    match std::str::from_utf8(body) {
        Ok(_) => Kind::Utf8 { bom },
        // A multi-byte character cut by the chunk's end is still UTF-8.
        Err(e) if e.error_len().is_none() && !complete => Kind::Utf8 { bom },
        Err(_) => {
            let control = body
                .iter()
                .filter(|&&b| b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t' | 0x0C | 0x1B))
                .count();
            if control * 10 > body.len().max(1) {
                Kind::Binary
            } else {
                Kind::Lossy
            }
        }
    }
}

fn image_mime(chunk: &[u8]) -> Option<&'static str> {
    if chunk.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if chunk.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if chunk.starts_with(b"GIF87a") || chunk.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if chunk.len() >= 12 && &chunk[..4] == b"RIFF" && &chunk[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_common_content() {
        assert_eq!(sniff(b"hello\n", true), Kind::Utf8 { bom: 0 });
        assert_eq!(sniff(b"\xEF\xBB\xBFhi", true), Kind::Utf8 { bom: 3 });
        assert_eq!(sniff(b"ab\0cd", true), Kind::Binary);
        assert_eq!(sniff(b"caf\xE9 au lait\n", true), Kind::Lossy);
        assert_eq!(
            sniff(b"\x89PNG\r\n\x1a\n....", true),
            Kind::Image("image/png")
        );
        assert_eq!(sniff(b"%PDF-1.7", true), Kind::Pdf);
        assert_eq!(
            sniff(&[0xFF, 0xFE, b'h', 0], true),
            Kind::Utf16 {
                little_endian: true
            }
        );
        // "é" cut in half at the chunk's end is not a reason to call the file lossy.
        assert_eq!(sniff(b"abc\xC3", false), Kind::Utf8 { bom: 0 });
    }
}
