//! Which tool printed a log (per-kind rules that know real tools): test runners, compilers
//! and checkers, package managers, stack traces. The kind decides whether a successful
//! command's output is a log worth compressing (a build, a test run) or plain output that
//! gets an excerpt (a file's contents); the line rules themselves live in
//! [`super::classify`] and apply to every kind.

use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, MatchKind};
use serde::Serialize;

/// The tool a log came from, as far as its lines tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum LogKind {
    /// `cargo test`.
    CargoTest,
    /// `cargo nextest run`.
    Nextest,
    /// pytest.
    Pytest,
    /// jest.
    Jest,
    /// vitest.
    Vitest,
    /// `go test`.
    GoTest,
    /// mocha.
    Mocha,
    /// rustc through `cargo build`/`check`/`clippy`.
    Rustc,
    /// The TypeScript compiler.
    Tsc,
    /// gcc or clang.
    Cc,
    /// eslint.
    Eslint,
    /// mypy.
    Mypy,
    /// npm.
    Npm,
    /// pip.
    Pip,
    /// A stack trace of Rust, Python, Java, Go or Node, with no tool around it.
    StackTrace,
}

impl LogKind {
    /// The name used in structured fields (`cargo_test`, `pytest`, …).
    pub fn name(self) -> &'static str {
        match self {
            Self::CargoTest => "cargo_test",
            Self::Nextest => "nextest",
            Self::Pytest => "pytest",
            Self::Jest => "jest",
            Self::Vitest => "vitest",
            Self::GoTest => "go_test",
            Self::Mocha => "mocha",
            Self::Rustc => "rustc",
            Self::Tsc => "tsc",
            Self::Cc => "cc",
            Self::Eslint => "eslint",
            Self::Mypy => "mypy",
            Self::Npm => "npm",
            Self::Pip => "pip",
            Self::StackTrace => "stack_trace",
        }
    }
}

/// Signatures, each with its kind. Test runners come first: a test run also compiles.
const SIGNATURES: &[(&str, LogKind)] = &[
    ("\ntest result: ", LogKind::CargoTest),
    ("\nrunning 1 test", LogKind::CargoTest),
    (" tests across ", LogKind::Nextest),
    ("\n     Summary [", LogKind::Nextest),
    (" test session starts ", LogKind::Pytest),
    ("\nTest Suites: ", LogKind::Jest),
    (" Test Files  ", LogKind::Vitest),
    ("\n=== RUN   ", LogKind::GoTest),
    ("\n--- FAIL: ", LogKind::GoTest),
    ("\nok  \t", LogKind::GoTest),
    ("\nFAIL\t", LogKind::GoTest),
    (" passing (", LogKind::Mocha),
    ("\nerror[E", LogKind::Rustc),
    ("\nwarning: unused", LogKind::Rustc),
    ("   Compiling ", LogKind::Rustc),
    ("    Finished `", LogKind::Rustc),
    ("    Checking ", LogKind::Rustc),
    (": error TS", LogKind::Tsc),
    (" - error TS", LogKind::Tsc),
    (".c:", LogKind::Cc),
    (".cpp:", LogKind::Cc),
    (".cc:", LogKind::Cc),
    (" problems (", LogKind::Eslint),
    (" problem (", LogKind::Eslint),
    ("Success: no issues found", LogKind::Mypy),
    ("\nFound 1 error in ", LogKind::Mypy),
    ("npm ERR!", LogKind::Npm),
    ("npm error ", LogKind::Npm),
    ("npm warn ", LogKind::Npm),
    ("npm WARN ", LogKind::Npm),
    ("\nadded ", LogKind::Npm),
    ("Successfully installed ", LogKind::Pip),
    ("Requirement already satisfied: ", LogKind::Pip),
    ("\nCollecting ", LogKind::Pip),
    ("Traceback (most recent call last):", LogKind::StackTrace),
    (" panicked at ", LogKind::StackTrace),
    ("\ngoroutine ", LogKind::StackTrace),
    ("\tat ", LogKind::StackTrace),
    ("Exception in thread ", LogKind::StackTrace),
    ("\n    at ", LogKind::StackTrace),
];

static MATCHER: LazyLock<Option<AhoCorasick>> = LazyLock::new(|| {
    AhoCorasick::builder()
        .match_kind(MatchKind::LeftmostFirst)
        .build(SIGNATURES.iter().map(|(s, _)| s))
        .ok()
});

/// Kinds whose signatures `text` holds, by how early they come in [`SIGNATURES`].
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct KindVotes {
    best: Option<(usize, LogKind)>,
}

impl KindVotes {
    /// Notes the signatures in `text`.
    pub fn scan(&mut self, text: &str) {
        let Some(matcher) = MATCHER.as_ref() else {
            return;
        };
        for m in matcher.find_iter(text) {
            let index = m.pattern().as_usize();
            if self.best.is_none_or(|(best, _)| index < best) {
                self.best = Some((index, SIGNATURES[index].1));
            }
            if index == 0 {
                break;
            }
        }
    }

    /// Notes the signatures `other` saw (as if its text had been scanned here too).
    pub fn merge(&mut self, other: Self) {
        if let Some((index, kind)) = other.best
            && self.best.is_none_or(|(best, _)| index < best)
        {
            self.best = Some((index, kind));
        }
    }

    /// The most specific kind seen.
    pub fn kind(&self) -> Option<LogKind> {
        self.best.map(|(_, kind)| kind)
    }
}

/// The kind of `text`, when its signatures show one.
pub fn detect(text: &str) -> Option<LogKind> {
    let mut votes = KindVotes::default();
    // A leading newline lets line-start signatures match the first line.
    votes.scan("\n");
    votes.scan(&format!(
        "\n{}",
        text.get(..text.len().min(200)).unwrap_or("")
    ));
    votes.scan(text);
    votes.kind()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_tools_are_recognised() {
        for (log, kind) in [
            (
                "running 3 tests\ntest a ... ok\n\ntest result: ok. 3 passed",
                LogKind::CargoTest,
            ),
            (
                "===== test session starts =====\nplatform linux",
                LogKind::Pytest,
            ),
            (
                "PASS src/a.test.js\nTest Suites: 1 passed, 1 total",
                LogKind::Jest,
            ),
            ("=== RUN   TestA\n--- PASS: TestA", LogKind::GoTest),
            (
                "   Compiling foo v0.1.0\nerror[E0308]: mismatched types",
                LogKind::Rustc,
            ),
            ("src/a.ts(3,5): error TS2322: Type 'string'", LogKind::Tsc),
            ("main.c:3:5: error: expected ';'", LogKind::Cc),
            ("✖ 3 problems (2 errors, 1 warning)", LogKind::Eslint),
            ("a.py:3: error: x\nFound 1 error in 1 file", LogKind::Mypy),
            ("npm ERR! code E404", LogKind::Npm),
            (
                "Collecting pytest\nSuccessfully installed pytest-9.2",
                LogKind::Pip,
            ),
            (
                "Traceback (most recent call last):\n  File \"a.py\"",
                LogKind::StackTrace,
            ),
        ] {
            assert_eq!(detect(log), Some(kind), "{log}");
        }
        assert_eq!(detect("just some text\nwith lines\n"), None);
    }
}
