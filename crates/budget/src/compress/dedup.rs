//! Near-duplicate test for consecutive noise lines: two lines match when they are equal once
//! every word holding a digit (numbers, hex addresses, UUID parts, timestamps, versions) and
//! every path-like field (containing `/` or `\`) is replaced by a placeholder, and runs of
//! whitespace are ignored. The seed's production note (s04: "numbers/hex addresses normalised,
//! adjacent near-duplicates folded into `line ×N`") with ids, times and paths added.

#[derive(Debug, PartialEq, Eq)]
enum Token<'a> {
    /// A word with at least one digit: `42`, `0x7ffe`, `a1b2c3d4`, `12:00:01` parts, `v1`.
    Number,
    /// A whitespace-delimited field containing a path separator.
    Path,
    /// A word of letters and `_` only.
    Word(&'a [u8]),
    /// Any other byte.
    Punct(u8),
}

struct Tokens<'a> {
    s: &'a [u8],
    i: usize,
    /// End of the current whitespace-delimited field; `i == field_end` means a new one starts.
    field_end: usize,
}

impl<'a> Tokens<'a> {
    fn new(s: &'a [u8]) -> Self {
        Self {
            s,
            i: 0,
            field_end: 0,
        }
    }
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

impl<'a> Iterator for Tokens<'a> {
    type Item = Token<'a>;

    fn next(&mut self) -> Option<Token<'a>> {
        let s = self.s;
        if self.i >= self.field_end {
            while self.i < s.len() && s[self.i].is_ascii_whitespace() {
                self.i += 1;
            }
            if self.i >= s.len() {
                return None;
            }
            let rest = &s[self.i..];
            let len = rest
                .iter()
                .position(u8::is_ascii_whitespace)
                .unwrap_or(rest.len());
            self.field_end = self.i + len;
            if memchr::memchr2(b'/', b'\\', &rest[..len]).is_some() {
                self.i = self.field_end;
                return Some(Token::Path);
            }
        }
        let b = s[self.i];
        if !is_word(b) {
            self.i += 1;
            return Some(Token::Punct(b));
        }
        let start = self.i;
        let mut digit = false;
        while self.i < self.field_end && is_word(s[self.i]) {
            digit |= s[self.i].is_ascii_digit();
            self.i += 1;
        }
        Some(if digit {
            Token::Number
        } else {
            Token::Word(&s[start..self.i])
        })
    }
}

/// Whether `a` and `b` are the same line up to numbers, ids, timestamps, paths and spacing.
pub(super) fn near_duplicate(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a == b {
        return true;
    }
    Tokens::new(a).eq(Tokens::new(b))
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
        ] {
            assert!(!near_duplicate(a, b), "{a:?} vs {b:?}");
        }
    }
}
