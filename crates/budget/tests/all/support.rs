//! Shared test helpers: an anchor oracle written independently of the crate's classifier,
//! and a check that every anchor line of a log survives compression.

use toolgate_budget::Compressed;

/// Problem words of a log ("error, exception, failed, failure, fatal, panic, timeout, warn,
/// deprecated"), as a test oracle: a line holding one at a word start is an anchor.
const KEYWORDS: &[&str] = &[
    "error",
    "exception",
    "failed",
    "failure",
    "fatal",
    "panic",
    "timeout",
    "warn",
    "deprecated",
    // toolgate's own stamps
    "exit code",
    "exit status",
];

/// Verdict and summary prefixes of the common test runners.
const VERDICTS: &[&str] = &[
    "test result:",
    "--- FAIL",
    "failures:",
    "FAIL",
    "Tests:",
    "Test Files ",
    "Test Suites:",
    "npm ERR!",
    "×",
    "✕",
    "❯",
];

/// `line` without escape sequences (CSI, and OSC ended by BEL or `ESC \\`), as the
/// compressor shows it.
pub fn strip_ansi(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('[') => {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                while let Some(c) = chars.next() {
                    if c == '\x07' || c == '\x1b' && chars.next_if_eq(&'\\').is_some() {
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// `text` with every ` ×N` line written out N times.
pub fn expand(text: &str) -> String {
    text.lines()
        .map(|l| match l.rsplit_once(" ×") {
            Some((line, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
                format!("{line}\n").repeat(n.parse().unwrap())
            }
            _ => format!("{l}\n"),
        })
        .collect()
}

/// Whether the oracle calls `line` an anchor. Lines that report a passing, skipped or merely
/// started test or test file, successful npm requests and cargo's progress lines don't count, nor do
/// keywords inside lowercase compounds (`thiserror`): the obvious false positives.
pub fn is_anchor(line: &str) -> bool {
    let t = line.trim_start();
    if passing(t) {
        return false;
    }
    if VERDICTS.iter().any(|v| t.starts_with(v))
        || line.starts_with("E   ")
        || line.starts_with("ok  \t")
        || t.starts_with("---- ") && t.ends_with(" ----")
    {
        return true;
    }
    let lower = line.to_ascii_lowercase();
    KEYWORDS.iter().any(|k| {
        lower.match_indices(k).any(|(at, _)| {
            let before = line.as_bytes().get(at.wrapping_sub(1)).copied();
            let first = line.as_bytes()[at];
            !(before.is_some_and(|b| b.is_ascii_lowercase()) && first.is_ascii_lowercase())
        })
    })
}

fn passing(t: &str) -> bool {
    let pytest_progress = t.ends_with("%]")
        && t.rsplit_once(" [").is_some_and(|(body, _)| {
            let marks = body.trim_end().rsplit(' ').next().unwrap_or("");
            ["PASSED", "SKIPPED", "XPASS"].contains(&marks)
                || !marks.is_empty() && marks.bytes().all(|b| b".sxXp".contains(&b))
        });
    let cargo_progress = [
        "Compiling ",
        "Checking ",
        "Downloaded ",
        "Adding ",
        "Locking ",
    ]
    .iter()
    .any(|v| t.starts_with(v))
        && t.contains(" v");
    pytest_progress
        || cargo_progress
        || t.starts_with("test ") && (t.ends_with(" ... ok") || t.ends_with(" ... ignored"))
        || [" PASSED", " SKIPPED", " XPASS"]
            .iter()
            .any(|p| t.ends_with(p))
        || ["✓", "√", "✔", "↓", "○"].iter().any(|p| t.starts_with(p))
        || [
            "--- PASS",
            "--- SKIP",
            "=== RUN",
            "=== PAUSE",
            "=== CONT",
            "=== NAME",
        ]
        .iter()
        .any(|p| t.starts_with(p))
        || t.starts_with("npm http ")
        || t.starts_with("PASS ")
}

/// The lines of a compressed text, each without a ` ×N` duplicate count.
pub fn shown_lines(c: &Compressed) -> std::collections::HashSet<&str> {
    c.text
        .lines()
        .map(|l| match l.rsplit_once(" ×") {
            Some((line, n)) if n.bytes().all(|b| b.is_ascii_digit()) && !n.is_empty() => line,
            _ => l,
        })
        .collect()
}

/// Anchor lines of `log` (after the compressor's cleaning: ANSI stripped, only the text after
/// the last `\r`) that are missing from `c`.
pub fn lost_anchors(log: &str, c: &Compressed) -> Vec<String> {
    let shown = shown_lines(c);
    log.lines()
        .map(|l| {
            let l = l.trim_end_matches('\r');
            strip_ansi(l.rsplit('\r').next().unwrap_or(l))
        })
        .filter(|l| is_anchor(l) && !shown.contains(l.as_str()))
        .collect()
}
