//! Spill file names: made here, and recognised here, so that a spill folder outside the
//! project shows the model only what toolgate wrote there.
//!
//! A name is `<millis:13+>-<pid:5>-<seq:4+>-<nonce:16 hex>-<label>.txt`: the creation time
//! first (names sort by age), the process and a sequence number (no collisions in one
//! process), 64 random bits (no collisions between replicas sharing a spill store — in
//! containers every replica is pid 1 — and no guessing another session's file from one's
//! own), then a label of at most 40 characters from `[A-Za-z0-9_-]`. Names without the
//! nonce, written by earlier versions, are still recognised.

/// Most characters of the label part.
const MAX_LABEL: usize = 40;

/// The file name of a new spill file.
pub(super) fn make(millis: u128, pid: u32, seq: u64, nonce: u64, label: &str) -> String {
    let label: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_LABEL)
        .collect();
    format!(
        "{millis:013}-{:05}-{seq:04}-{nonce:016x}-{label}.txt",
        pid % 100_000
    )
}

/// 64 random bits for a new name.
pub(super) fn nonce() -> u64 {
    getrandom::u64().unwrap_or_else(|e| {
        // Unique still (time and sequence), only no longer unguessable.
        tracing::warn!(%e, "no random numbers for a spill file name");
        0
    })
}

/// Whether `name` has the shape of a name `make` gives: the spill store accounts for (and
/// may evict) only such files, and a spill folder outside the project lets tools read only
/// them.
pub fn is_spill_name(name: &str) -> bool {
    let Some(stem) = name.strip_suffix(".txt") else {
        return false;
    };
    let mut parts = stem.splitn(4, '-');
    let digits = |p: Option<&str>, min: usize, max: usize| {
        p.is_some_and(|p| (min..=max).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()))
    };
    digits(parts.next(), 13, 39)
        && digits(parts.next(), 5, 5)
        && digits(parts.next(), 4, 20)
        && parts.next().is_some_and(|rest| {
            is_label(rest)
                || rest.split_once('-').is_some_and(|(nonce, label)| {
                    nonce.len() == 16
                        && nonce
                            .bytes()
                            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
                        && is_label(label)
                })
        })
}

fn is_label(label: &str) -> bool {
    label.len() <= MAX_LABEL
        && label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_names_are_recognised_and_others_are_not() {
        for (label, seq) in [
            ("run_shell", 0),
            ("", 7),
            ("a b/c..d", 123_456),
            (&"x".repeat(90)[..], 1),
        ] {
            let name = make(1_700_000_000_000, 4_194_304, seq, u64::MAX, label);
            assert!(is_spill_name(&name), "{name}");
            let name = make(1_700_000_000_000, 1, seq, 0, label);
            assert!(is_spill_name(&name), "{name}");
        }
        // Names from before the nonce.
        assert!(is_spill_name("1700000000000-00001-0001-run_shell.txt"));
        for other in [
            "token",
            ".evicted",
            ".gitignore",
            "1700000000000-00001-0001-x.partial",
            "1700000000000-00001-0001-x.txt.bak",
            "1700000000000-1-0001-x.txt",
            "notes.txt",
            "1700000000000-00001-0001-../x.txt",
            "1700000000000-00001-0001-a b.txt",
            "1700000000000-00001-0001-0123456789abcdef-../x.txt",
            &format!(
                "1700000000000-00001-0001-0123456789ABCDEF-{}.txt",
                "x".repeat(40)
            ),
            &format!(
                "1700000000000-00001-0001-0123456789abcdef-{}.txt",
                "x".repeat(41)
            ),
        ] {
            assert!(!is_spill_name(other), "{other}");
        }
    }
}
