//! Near-duplicate signatures for consecutive noise lines: two lines match when they are equal
//! once every word holding a digit (numbers, hex addresses, UUID parts, timestamps, versions)
//! and every path-like field (containing `/` or `\`) is replaced by a placeholder, and
//! spacing is ignored: numbers and hex addresses normalised, adjacent near-duplicates
//! folded into `line ×N`, and ids, times and paths normalised too.
//!
//! Each line is reduced to a 64-bit signature in one pass; lines with equal signatures are
//! near-duplicates. A collision (odds 2⁻⁶⁴ per pair) could only fold one noise line into its
//! neighbour's `×N`, never an anchor, and the original is spilled anyway.

const SPACE: u8 = 0;
const LETTER: u8 = 1;
const DIGIT: u8 = 2;
const SLASH: u8 = 3;
const OTHER: u8 = 4;

/// Byte classes: ASCII whitespace, word bytes (letters and `_`), digits, path separators,
/// everything else (punctuation and the bytes of non-ASCII characters).
static CLASS: [u8; 256] = {
    let mut table = [OTHER; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = if c.is_ascii_whitespace() {
            SPACE
        } else if c.is_ascii_alphabetic() || c == b'_' {
            LETTER
        } else if c.is_ascii_digit() {
            DIGIT
        } else if c == b'/' || c == b'\\' {
            SLASH
        } else {
            OTHER
        };
        b += 1;
    }
    table
};

const K: u64 = 0x517c_c1b7_2722_0a95;
const NUMBER: u64 = 0x9e37_79b9_7f4a_7c15;
const PATH: u64 = 0xc2b2_ae3d_27d4_eb4f;
const WORD: u64 = 0x1656_67b1_9e37_79f9;
const PUNCT: u64 = 0x27d4_eb2f_1656_67c5;

fn mix(h: u64, v: u64) -> u64 {
    (h.rotate_left(5) ^ v).wrapping_mul(K)
}

/// The line's signature: a hash of its token sequence, where a token is a word of letters,
/// a number (any word with a digit), a path (a whole whitespace-delimited field with a `/` or
/// `\`) or one other byte. Whitespace only separates tokens.
pub(super) fn signature(line: &str) -> u64 {
    let s = line.as_bytes();
    let mut h: u64 = 0;
    let mut i = 0;
    while i < s.len() {
        if CLASS[usize::from(s[i])] == SPACE {
            i += 1;
            continue;
        }
        let before_field = h;
        let mut slash = false;
        while i < s.len() {
            let class = CLASS[usize::from(s[i])];
            match class {
                SPACE => break,
                LETTER | DIGIT => {
                    // Find the word's end first; only a word without digits needs hashing.
                    let start = i;
                    let mut digit = false;
                    while let Some(&b) = s.get(i) {
                        let class = CLASS[usize::from(b)];
                        if class != LETTER && class != DIGIT {
                            break;
                        }
                        digit |= class == DIGIT;
                        i += 1;
                    }
                    h = if digit {
                        mix(h, NUMBER)
                    } else {
                        mix(mix(h, WORD), hash_word(&s[start..i]))
                    };
                }
                _ => {
                    slash |= class == SLASH;
                    h = mix(h, PUNCT ^ u64::from(s[i]));
                    i += 1;
                }
            }
        }
        if slash {
            h = mix(before_field, PATH);
        }
    }
    h
}

/// A word's bytes, eight at a time.
fn hash_word(word: &[u8]) -> u64 {
    let mut h = word.len() as u64;
    let mut chunks = word.chunks_exact(8);
    let mut buf = [0u8; 8];
    for chunk in &mut chunks {
        buf.copy_from_slice(chunk);
        h = mix(h, u64::from_le_bytes(buf));
    }
    let rest = chunks.remainder();
    buf = [0u8; 8];
    buf[..rest.len()].copy_from_slice(rest);
    mix(h, u64::from_le_bytes(buf))
}

#[cfg(test)]
fn near_duplicate(a: &str, b: &str) -> bool {
    signature(a) == signature(b)
}

#[cfg(test)]
mod tests {
    use super::near_duplicate;

    #[test]
    fn numbers_hex_uuids_times_and_paths_are_normalised() {
        for (a, b) in [
            (
                "row 1: id=187810 name=user_1",
                "row 2: id=9 name=user_26830",
            ),
            ("ptr 0x7ffe12ab freed", "ptr 0x55d0c0ffee freed"),
            (
                "req 123e4567-e89b-12d3-a456-426614174000 done",
                "req 9b2f0c1e-0d3a-4f4b-9c1d-2a3b4c5d6e7f done",
            ),
            (
                "2024-05-01T12:00:01.123Z GET /a/b 200",
                "2024-05-01T12:00:02.999Z GET /c 200",
            ),
            ("[ 10%] Building foo.o", "[100%] Building foo.o"),
            ("copying src/a.rs", "copying C:\\x\\b.rs"),
            ("", "  \t"),
        ] {
            assert!(near_duplicate(a, b), "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn different_words_are_different() {
        for (a, b) in [
            ("Compiling serde v1.0", "Compiling tokio v1.0"),
            ("GET /a 200", "POST /a 200"),
            ("a b", "ab"),
            ("done", "done!"),
            ("abcdefghij", "abcdefghik"),
            ("aaaaaaaaaaaaaaaaaaaaaaaa", "aaaaaaaaaaaaaaaaaaaaaaaaa"),
            ("x /a", "x"),
            ("12", ""),
            ("é", "è"),
        ] {
            assert!(!near_duplicate(a, b), "{a:?} vs {b:?}");
        }
    }
}
