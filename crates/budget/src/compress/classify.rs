//! Line classes for log compression: anchors (problem keywords, verdict and summary lines
//! of test runners, toolgate's own failure stamps), stack frames and noise.
//!
//! Keywords are found with one Aho-Corasick pass over the lowercased log; verdict and frame
//! shapes are cheap prefix checks on each line. When a line is ambiguous it is kept. The only
//! keyword hits ignored are obvious false positives: inside lowercase compounds (`thiserror`,
//! `onerror`), on lines reporting a passed, skipped or started test or test file
//! (`test timeout_case ... ok`, `✓ src/error.test.ts (3 tests)`, `PASS src/a.test.js`,
//! `=== RUN TestPanic`), on cargo's progress lines (`Compiling thiserror v2.0.12`) and on
//! npm's successful requests (`npm http fetch GET 200 …/es-errors`). Passed files are not
//! verdicts either: the runner's summary line counts them.
//!
//! Frames are the lines of a stack trace in Rust, Python, JavaScript, Go and Java, rustc's
//! and vitest's code frames, and every line of a pytest failure report.

use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, MatchKind};

/// What a line is for compression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Class {
    /// Always kept, with context.
    Anchor,
    /// A stack frame or diagnostic frame, kept as a whole block next to a kept line.
    Trace,
    /// Folded when not near an anchor.
    Noise,
}

/// How much an anchor matters when a compressed log must still be cut to fit a result:
/// the lowest ranks are folded first (`fit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Rank {
    /// Not an anchor.
    None,
    /// An anchor inside a test's captured output (`---- t stdout ----` up to its panic,
    /// pytest's `Captured … call` sections): the test's own chatter. Also a stack frame
    /// whose path or function holds a problem word (`core::panicking::panic_fmt`).
    Captured,
    /// Only a warning or deprecation word.
    Warning,
    /// An error, failure, panic, exception or other problem word.
    Problem,
    /// A verdict or summary line (`test result:`, `3 failed, 400 passed`, `generated 12
    /// warnings`, `Successfully installed`).
    Verdict,
}

/// Classes and ranks of a log's lines, and the lines a per-kind rule keeps outright.
pub(super) struct Classified {
    pub classes: Vec<Class>,
    pub ranks: Vec<Rank>,
    /// The last lines of a captured-output block: the lines just before a failure say most
    /// about it.
    pub pinned: Vec<bool>,
}

/// Lines kept from the end of a test's captured-output block.
const CAPTURED_TAIL: usize = 5;

/// Shape of a line before keywords are considered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Plain,
    /// A verdict or summary line that is an anchor without any keyword.
    Verdict,
    /// A line reporting a passing or skipped test: keywords in it are test names.
    Pass,
    Frame,
    /// Python's `File "x.py", line N, in f`; the indented source line after it is a frame.
    PyFile,
    /// Go's `\t/path/x.go:N +0x1d`; the function line before it is a frame.
    GoFile,
    /// pytest's `=== FAILURES ===` and `=== 3 failed, 200 passed in 1.2s ===` banners.
    PytestBanner,
    /// pytest's `____ test_name ____`: a failure report follows, up to the next one or the
    /// next banner.
    PytestFailure,
}

/// Problem words, matched case-insensitively as substrings. Stems cover their inflections
/// (`fail` → failed, failure, failing; `warn` → warning; `deprecat` → deprecated, deprecation).
const KEYWORDS: &[&str] = &[
    "error",
    "exception",
    "fail",
    "fatal",
    "panic",
    "timeout",
    "timed out",
    "warn",
    "deprecat",
    "abort",
    "critical",
    "severe",
    "segmentation fault",
    "core dumped",
    "exit code",
    "exit status",
    "killed",
    "denied",
    "not found",
    "no such file",
];

/// Case-sensitive, over lowercased text: the packed SIMD searcher only serves exact patterns,
/// and lowercasing a chunk first is much faster than a case-insensitive automaton.
static KEYWORD_MATCHER: LazyLock<Option<AhoCorasick>> = LazyLock::new(|| {
    AhoCorasick::builder()
        .match_kind(MatchKind::LeftmostFirst)
        .build(KEYWORDS)
        .ok()
});

/// Keyword bits of a line: a problem word, a warning word.
const PROBLEM: u8 = 1;
const WARNING: u8 = 2;

/// Indexes in [`KEYWORDS`] of the warning words.
const WARNING_KEYWORDS: [usize; 2] = [7, 8];

/// Classes of `lines`, the lines of `text` in order. `None` when the keyword matcher is
/// unavailable: without it anchors can't be found, so the caller must leave the log alone.
#[cfg(test)]
pub(super) fn classify(text: &str, lines: &[&str]) -> Option<Vec<Class>> {
    classify_ranked(text, lines).map(|c| c.classes)
}

/// Classes, anchor ranks and pinned lines of `lines`, the lines of `text` in order.
pub(super) fn classify_ranked(text: &str, lines: &[&str]) -> Option<Classified> {
    let matcher = KEYWORD_MATCHER.as_ref()?;
    let keyword = keyword_lines(matcher, text, lines);
    let shapes: Vec<Shape> = lines.iter().map(|line| shape(line)).collect();
    let mut classes = Vec::with_capacity(lines.len());
    let mut ranks = vec![Rank::None; lines.len()];
    for (i, &line) in lines.iter().enumerate() {
        let class = match shapes[i] {
            Shape::Verdict | Shape::PytestBanner | Shape::PytestFailure => {
                ranks[i] = if keyword[i] & PROBLEM != 0 || is_failure_header(line) {
                    // `test x ... FAILED`, `E  assert 1 == 2`: verdicts about one failure,
                    // as important as its message.
                    Rank::Problem.max(summary_rank(line))
                } else {
                    summary_rank(line).max(Rank::Warning)
                };
                Class::Anchor
            }
            _ if keyword[i] != 0 && shapes[i] != Shape::Pass && !is_cargo_progress(line) => {
                ranks[i] = if is_summary(line) {
                    Rank::Verdict
                } else if matches!(shapes[i], Shape::Frame | Shape::PyFile | Shape::GoFile) {
                    // A stack frame through `core::panicking` or `errors.py` is a frame
                    // first: it goes with the traces when the log must shrink.
                    Rank::Captured
                } else if keyword[i] & PROBLEM != 0 {
                    Rank::Problem
                } else {
                    Rank::Warning
                };
                Class::Anchor
            }
            Shape::Frame | Shape::PyFile | Shape::GoFile => Class::Trace,
            Shape::Plain | Shape::Pass => {
                let after_py_file =
                    i > 0 && shapes[i - 1] == Shape::PyFile && line.starts_with([' ', '\t']);
                let before_go_file = shapes.get(i + 1) == Some(&Shape::GoFile)
                    && line.trim_end().ends_with(')')
                    && line.contains('(');
                if after_py_file || before_go_file {
                    Class::Trace
                } else {
                    Class::Noise
                }
            }
        };
        classes.push(class);
    }
    pytest_reports(&shapes, &mut classes);
    panic_messages(lines, &mut classes, &mut ranks);
    let pinned = captured_blocks(lines, &classes, &mut ranks);
    // One blank line between two frame blocks joins them: jest prints the code frame, a
    // blank line, then the stack.
    for i in 1..classes.len().saturating_sub(1) {
        if classes[i - 1] == Class::Trace
            && classes[i + 1] == Class::Trace
            && lines[i].trim_ascii().is_empty()
        {
            classes[i] = Class::Trace;
        }
    }
    Some(Classified {
        classes,
        ranks,
        pinned,
    })
}

/// A Rust panic's message: the lines after `thread '…' panicked at file:line:` up to a blank
/// line, `note:` or `stack backtrace:`. The message often holds no problem word (`the
/// invariant broke: expected 3, got 4`), yet it is the failure's own message.
fn panic_messages(lines: &[&str], classes: &mut [Class], ranks: &mut [Rank]) {
    /// A longer "message" is more likely the test's later output than the message.
    const MAX_MESSAGE: usize = 20;
    let mut i = 0;
    while i < lines.len() {
        let t = lines[i].trim_ascii_start();
        if !(t.starts_with("thread '") && t.contains(" panicked at")) {
            i += 1;
            continue;
        }
        i += 1;
        let end = (i + MAX_MESSAGE).min(lines.len());
        while i < end {
            let t = lines[i].trim_ascii();
            if t.is_empty() || t.starts_with("note:") || t.starts_with("stack backtrace:") {
                break;
            }
            classes[i] = Class::Anchor;
            ranks[i] = ranks[i].max(Rank::Problem);
            i += 1;
        }
    }
}

/// Test runners' captured-output blocks: cargo's `---- name stdout ----` up to the test's
/// `thread '…' panicked at`, pytest's `--- Captured stdout call ---` sections. Anchors in
/// them rank as [`Rank::Captured`] (a test's chatter, folded first when the log must shrink
/// further); their last [`CAPTURED_TAIL`] lines are pinned.
fn captured_blocks(lines: &[&str], classes: &[Class], ranks: &mut [Rank]) -> Vec<bool> {
    let mut pinned = vec![false; lines.len()];
    let mut start: Option<usize> = None;
    let close = |start: usize, end: usize, pinned: &mut [bool]| {
        let from = end.saturating_sub(CAPTURED_TAIL).max(start);
        pinned[from..end].fill(true);
    };
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_ascii();
        let opens = t.starts_with("---- ") && t.ends_with(" ----")
            || t.starts_with("---") && t.contains(" Captured ") && t.ends_with("---");
        let ends = opens
            || t.starts_with("thread '") && t.contains("panicked at")
            || t == "failures:"
            || t.starts_with("___") && t.ends_with("___")
            || t.starts_with("===") && t.ends_with("===");
        if ends && let Some(s) = start.take() {
            close(s + 1, i, &mut pinned);
        }
        if opens {
            start = Some(i);
        } else if start.is_some() && classes[i] == Class::Anchor && ranks[i] < Rank::Verdict {
            ranks[i] = Rank::Captured;
        }
    }
    if let Some(s) = start {
        close(s + 1, lines.len(), &mut pinned);
    }
    pinned
}

/// A verdict about one failed test or file (`test x ... FAILED`, `--- FAIL: TestX`,
/// ` FAIL  src/a.test.ts`, pytest's `____ test_x ____`, `E  assert 1 == 2`).
fn is_failure_header(line: &str) -> bool {
    let t = line.trim_ascii();
    t.ends_with("FAILED")
        || t.starts_with("FAIL")
        || t.starts_with("--- FAIL")
        || t.starts_with("___")
        || t.starts_with("---- ")
        || line.starts_with("E ")
        || t.starts_with(['×', '✕', '✗', '✖', '❌', '●'])
}

/// Rank of a verdict line: summaries rank above everything.
fn summary_rank(line: &str) -> Rank {
    if is_summary(line) {
        Rank::Verdict
    } else {
        Rank::Problem
    }
}

/// Summary lines of test runners, compilers, linters and package managers: how many passed,
/// failed, warned, were installed.
fn is_summary(line: &str) -> bool {
    let t = line.trim_ascii();
    t.starts_with("test result:")
        || t.starts_with("Tests:")
        || t.starts_with("Tests ")
        || t.starts_with("Test Files ")
        || t.starts_with("Test Suites:")
        || t.starts_with("Snapshots:")
        || t.starts_with("Summary [")
        || t.starts_with("===")
            && t.ends_with("===")
            && (t.contains(" passed") || t.contains(" failed") || t.contains(" error"))
        || t.starts_with("Found ") && (t.contains(" error") || t.contains(" problem"))
        || t.starts_with("Success: no issues found")
        || t.starts_with("Successfully installed")
        || t.starts_with('✖') && t.contains(" problem")
        || t.contains(" generated ") && t.contains(" warning")
        || t.starts_with("error: could not compile")
        || t.starts_with("error: test failed")
        || t.starts_with("error: ") && t.contains(" target") && t.contains("failed")
        || t.ends_with(" passing")
        || t.contains(" passing (")
        || t.contains(" failing") && t.bytes().next().is_some_and(|b| b.is_ascii_digit())
        || t == "PASS"
        || t.starts_with("FAIL\t")
        || t.starts_with("ok  \t")
        || t.starts_with("ok \t")
        || t.starts_with("command failed")
        || npm_summary(t)
}

/// A pytest failure report (the test's source, `>` and `E` lines, the frames in between, the
/// local variables) is one traceback: its lines are frames, kept whole next to its header.
/// A report ends at the next header or banner, or after `MAX_REPORT` lines in case a header
/// look-alike opened it.
fn pytest_reports(shapes: &[Shape], classes: &mut [Class]) {
    const MAX_REPORT: usize = 2_000;
    let mut report_start = None;
    for (i, shape) in shapes.iter().enumerate() {
        match shape {
            Shape::PytestFailure => report_start = Some(i),
            Shape::PytestBanner => report_start = None,
            _ => {
                if report_start.is_some_and(|start| i - start > MAX_REPORT) {
                    report_start = None;
                }
                if report_start.is_some() && classes[i] == Class::Noise {
                    classes[i] = Class::Trace;
                }
            }
        }
    }
}

/// Keyword bits ([`PROBLEM`], [`WARNING`]) of each line: which lines hold a keyword at a word start or a camel-case boundary (`TypeError` counts,
/// `thiserror` doesn't).
fn keyword_lines(matcher: &AhoCorasick, text: &str, lines: &[&str]) -> Vec<u8> {
    /// Bytes lowercased and searched at a time.
    const CHUNK: usize = 64 * 1024;
    /// Look past the chunk far enough to finish a keyword that starts inside it.
    const OVERLAP: usize = 32;
    let bytes = text.as_bytes();
    let mut hit = vec![0u8; lines.len()];
    let mut lower = Vec::with_capacity(CHUNK + OVERLAP);
    let mut line = 0;
    let mut start = 0;
    while start < bytes.len() {
        let end = (start + CHUNK + OVERLAP).min(bytes.len());
        lower.clear();
        lower.extend_from_slice(&bytes[start..end]);
        lower.make_ascii_lowercase();
        for m in matcher.find_iter(&lower) {
            if m.start() >= CHUNK {
                break;
            }
            let at = start + m.start();
            if at > 0 && bytes[at - 1].is_ascii_lowercase() && bytes[at].is_ascii_lowercase() {
                continue;
            }
            // Lines are slices of `text`: compare where each ends.
            while line < lines.len() && end_of(text, lines[line]) <= at {
                line += 1;
            }
            let bit = if WARNING_KEYWORDS.contains(&m.pattern().as_usize()) {
                WARNING
            } else {
                PROBLEM
            };
            if let Some(h) = hit.get_mut(line) {
                *h |= bit;
            }
        }
        start += CHUNK;
    }
    hit
}

/// Offset in `text` just past `line`, a slice of it.
fn end_of(text: &str, line: &str) -> usize {
    line.as_ptr() as usize - text.as_ptr() as usize + line.len()
}

/// `Compiling thiserror v2.0.12` and friends: the crate name is not a problem report.
fn is_cargo_progress(line: &str) -> bool {
    let t = line.trim_ascii_start();
    let Some((verb, rest)) = t.split_once(' ') else {
        return false;
    };
    matches!(
        verb,
        "Compiling"
            | "Checking"
            | "Downloaded"
            | "Downloading"
            | "Fresh"
            | "Documenting"
            | "Adding"
            | "Locking"
            | "Updating"
            | "Removing"
            | "Unpacking"
            | "Installing"
    ) && rest.split_once(' ').is_some_and(|(name, version)| {
        !name.is_empty()
            && name.bytes().all(|b| is_word(b) || b == b'-')
            && version.starts_with('v')
            && version.as_bytes().get(1).is_some_and(u8::is_ascii_digit)
            && !version.contains(['!', ':'])
    })
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn shape(line: &str) -> Shape {
    let t = line.trim_ascii_start();
    let indented = t.len() < line.len();
    let Some(&first) = t.as_bytes().first() else {
        return Shape::Plain;
    };
    match first {
        // Non-ASCII first byte: vitest/jest verdict marks.
        0x80.. => test_mark(t),
        b'a' if indented && t.starts_with("at ") => Shape::Frame,
        b'0'..=b'9' => digit_line(t, indented),
        b'=' => {
            if t.starts_with("===") && t.ends_with("===") && t.contains(' ') {
                Shape::PytestBanner
            } else if t.starts_with("=== RUN")
                || t.starts_with("=== PAUSE")
                || t.starts_with("=== CONT")
                || t.starts_with("=== NAME")
            {
                Shape::Pass
            } else if t.starts_with("= note") || t.starts_with("= help") {
                Shape::Frame
            } else {
                Shape::Plain
            }
        }
        b'_' if t.starts_with("___") && t.ends_with("___") && t.contains(' ') => {
            Shape::PytestFailure
        }
        // pytest's separator between the frames of one traceback
        b'_' if t.starts_with("_ _ _") => Shape::Frame,
        b'-' => {
            if t.starts_with("---- ") && t.ends_with(" ----") || t.starts_with("- Expected") {
                Shape::Verdict
            } else if t.starts_with("--- PASS") || t.starts_with("--- SKIP") {
                Shape::Pass
            } else if t.starts_with("--> ") {
                Shape::Frame
            } else {
                Shape::Plain
            }
        }
        b'+' if t.starts_with("+ Received") => Shape::Verdict,
        b'|' | b'^' | b'~' => {
            if first == b'|' || t.bytes().all(|b| matches!(b, b'^' | b'~' | b'-' | b' ')) {
                Shape::Frame
            } else {
                Shape::Plain
            }
        }
        b'>' if t.starts_with("> ") => Shape::Frame,
        b'.' if t.starts_with("...") && t.ends_with(" more") => Shape::Frame,
        b'[' if t.starts_with("[Previous line repeated") || t.starts_with("[signal ") => {
            Shape::Frame
        }
        b'E' if line.starts_with("E ") => Shape::Verdict,
        b'E' if t.starts_with("Expected") => Shape::Verdict,
        b'R' if t.starts_with("Received") => Shape::Verdict,
        b'F' if t.starts_with("FAIL") && word_ends(t, 4) => Shape::Verdict,
        b'F' if t.starts_with("File \"") => Shape::PyFile,
        // go test's closing `PASS` is a verdict; jest's `PASS src/a.test.js` is one passed
        // file among many, counted again in the `Test Suites:` summary.
        b'P' if t == "PASS" => Shape::Verdict,
        b'P' if t.starts_with("PASS") && word_ends(t, 4) => Shape::Pass,
        b'T' => {
            if t.starts_with("Tests:")
                || t.starts_with("Tests ")
                || t.starts_with("Test Files ")
                || t.starts_with("Test Suites:")
            {
                Shape::Verdict
            } else if t.starts_with("Traceback (most recent call last)") {
                Shape::Frame
            } else {
                Shape::Plain
            }
        }
        b'S' if t.starts_with("Snapshots:") => Shape::Verdict,
        b'S' if t.starts_with("Suppressed: ") => Shape::Frame,
        b'C' if t.starts_with("Caused by:") => Shape::Verdict,
        b'o' if line.starts_with("ok ") || line.starts_with("ok\t") => Shape::Verdict,
        b'n' if t.starts_with("npm ERR!") => Shape::Verdict,
        b'n' if t.starts_with("npm http fetch ") || t.starts_with("npm http cache ") => npm_http(t),
        b'n' | b'h' if t.starts_with("note:") || t.starts_with("help:") => Shape::Frame,
        b'f' if t == "failures:" => Shape::Verdict,
        b'a' | b'r' | b'c' | b'u' | b'f' if npm_summary(t) => Shape::Verdict,
        b's' if t.starts_with("stack backtrace:") => Shape::Frame,
        b'c' if t.starts_with("created by ") => Shape::Frame,
        // run_shell's status lines (crates/shell render.rs): `command failed: exit code 2 ·
        // 1.2 s`, `command cancelled after 3 s; …`, `stopped because the session ended …`.
        b'c' if t.starts_with("command failed") || t.starts_with("command cancelled") => {
            Shape::Verdict
        }
        b's' if t.starts_with("stopped because") => Shape::Verdict,
        b'g' if t.starts_with("goroutine ") && t.ends_with(':') => Shape::Frame,
        b't' => {
            if t.starts_with("test result:") {
                Shape::Verdict
            } else if t.starts_with("test ")
                && (t.ends_with(" ... ok") || t.ends_with(" ... ignored"))
            {
                Shape::Pass
            } else {
                Shape::Plain
            }
        }
        _ => Shape::Plain,
    }
    .or_else(|| unmarked(line, t))
}

impl Shape {
    /// `self`, or `other` when `self` is `Plain`.
    fn or_else(self, other: impl FnOnce() -> Shape) -> Shape {
        if self == Shape::Plain { other() } else { self }
    }
}

/// Shapes found at the end of a line or after a path: Go file frames, pytest progress and
/// location lines, pytest's `PASSED`.
fn unmarked(line: &str, t: &str) -> Shape {
    if line.starts_with('\t') && t.contains(".go:") {
        Shape::GoFile
    } else if t.ends_with("%]") {
        pytest_progress(t)
    } else if t.ends_with(" PASSED") || t.ends_with(" SKIPPED") || t.ends_with(" XPASS") {
        Shape::Pass
    } else if let Some(space) = memchr::memchr(b' ', t.as_bytes())
        && let Some(first) = t.get(..space)
        && first.ends_with(':')
    {
        if first.contains("_test.go:") {
            // go test's `    cart_test.go:37: got 4, want 5`
            Shape::Verdict
        } else if first.contains(".py:") {
            // pytest's `tests/test_a.py:12: in test_x`
            Shape::Frame
        } else {
            Shape::Plain
        }
    } else {
        Shape::Plain
    }
}

/// npm's closing lines: `added 271 packages in 5s`, `up to date, audited 12 packages`,
/// `found 0 vulnerabilities`.
fn npm_summary(t: &str) -> bool {
    let counts_packages = ["added ", "removed ", "changed ", "up to date", "audited "]
        .iter()
        .any(|p| t.starts_with(p))
        && t.contains(" package");
    counts_packages || t.starts_with("found ") && t.contains(" vulnerabilit")
}

/// npm's `http fetch GET 200 https://registry.npmjs.org/es-errors 17ms`: a successful
/// request, whatever the package is called; other statuses stay plain.
fn npm_http(t: &str) -> Shape {
    let mut fields = t.split(' ').skip(3);
    let status = match (
        t.starts_with("npm http cache "),
        fields.next(),
        fields.next(),
    ) {
        (true, ..) => "200",
        (false, _method, Some(status)) => status,
        _ => "",
    };
    if status.len() == 3 && (status.starts_with('2') || status.starts_with('3')) {
        Shape::Pass
    } else {
        Shape::Plain
    }
}

/// Whether the word of `len` bytes at the start of `t` ends there.
fn word_ends(t: &str, len: usize) -> bool {
    t.as_bytes()
        .get(len)
        .is_none_or(|b| !is_word(*b) && *b != b'-')
}

/// Lines starting with a digit: Rust backtrace frames (`  12: name`), rustc source lines
/// (`14 |     code`), vitest code frames (`14|   code`), mocha's `3 passing` / `1 failing`.
fn digit_line(t: &str, indented: bool) -> Shape {
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    let rest = &t[digits..];
    if indented && rest.starts_with(": ") || rest.trim_start().starts_with('|') {
        Shape::Frame
    } else if rest.starts_with(" passing") || rest.starts_with(" pending") {
        Shape::Verdict
    } else {
        Shape::Plain
    }
}

/// vitest/jest marks: a failed test or file (`×`, `✕`, `✗`, `❯`, jest's `●` failure header)
/// is a verdict; a passed or skipped test or file (`✓ src/a.test.ts (12 tests) 5ms`) is a pass.
fn test_mark(t: &str) -> Shape {
    let mark = t.chars().next().unwrap_or(' ');
    match mark {
        '×' | '✕' | '✗' | '✖' | '❯' | '❌' | '●' => Shape::Verdict,
        // A passed test or file: the summary lines count them.
        '✓' | '√' | '✔' | '↓' | '○' => Shape::Pass,
        _ => Shape::Plain,
    }
}

/// pytest progress lines: `tests/test_a.py ..F.s [ 40%]` is a verdict when it holds `F` or
/// `E`; `tests/test_a.py::test_x PASSED [ 40%]` is a pass.
fn pytest_progress(t: &str) -> Shape {
    let Some(open) = t.rfind(" [") else {
        return Shape::Plain;
    };
    let body = t[..open].trim_ascii_end();
    let marks = body.rsplit(' ').next().unwrap_or("");
    if matches!(marks, "PASSED" | "SKIPPED" | "XPASS") {
        return Shape::Pass;
    }
    if !marks.is_empty() && marks.bytes().all(|b| b".FEsxXp".contains(&b)) {
        if marks.contains(['F', 'E']) {
            return Shape::Verdict;
        }
        return Shape::Pass;
    }
    Shape::Plain
}

#[cfg(test)]
mod tests {
    use super::{Class, classify};

    fn class_of(log: &str) -> Vec<Class> {
        let lines: Vec<&str> = log.lines().collect();
        classify(log, &lines).unwrap_or_default()
    }

    #[test]
    fn keywords_at_word_and_camel_boundaries() {
        use Class::*;
        let log = "TypeError: x\nCompiling thiserror v2.0.1\nwindow.onerror = f\nread_timeout hit\nall good";
        assert_eq!(class_of(log), [Anchor, Noise, Noise, Anchor, Noise]);
    }

    #[test]
    fn passing_tests_named_after_problems_are_noise() {
        use Class::*;
        let log = "test tests::timeout_case ... ok\ntests/test_error.py::test_x PASSED  [ 50%]\n   ✓ handles error 2ms\n--- PASS: TestPanic (0.00s)\n=== RUN   TestFailover\n PASS  src/error.test.js\n ✓ src/timeout.test.ts (3 tests) 5ms\ntest tests::error_case ... FAILED";
        assert_eq!(
            class_of(log),
            [Noise, Noise, Noise, Noise, Noise, Noise, Noise, Anchor]
        );
    }

    #[test]
    fn verdicts_without_keywords_are_anchors() {
        let log = "======= 200 passed in 1.2s =======\n FAIL  src/a.test.js\n × src/a.test.ts (12 tests | 1 failed) 5ms\nok  \texample.com/pkg\t0.01s\nadded 271 packages, and audited 272 packages in 5s\ntests/test_a.py ..F.. [ 40%]\n      Tests  1 failed | 3 passed (4)\ntest result: ok. 3 passed; 0 failed\nnpm ERR! code E404";
        assert!(class_of(log).iter().all(|c| *c == Class::Anchor));
    }

    #[test]
    fn frames_of_each_language() {
        let log = "  File \"a.py\", line 3, in f\n    f()\n    at foo (a.js:1:2)\n\tat a.B.c(B.java:3)\n   3: app::load\n             at ./src/lib.rs:4:83\ngoroutine 1 [running]:\nmain.main()\n\t/tmp/x/main.go:5 +0x1d\n  --> src/main.rs:2:5\n   |\n2  |     let x: u32 = \"a\";\n\t... 3 more";
        assert!(
            class_of(log).iter().all(|c| *c == Class::Trace),
            "{:?}",
            class_of(log)
        );
    }
}
