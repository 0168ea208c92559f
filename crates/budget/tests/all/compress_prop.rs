//! Property: compression never drops an anchor line and never grows the output, whatever the
//! noise around the anchors looks like.

use proptest::prelude::*;
use toolgate_budget::{CompressOptions, LogCompressor, LogOptions, compress_log};

use crate::support::{is_anchor, lost_anchors, shown_lines};

/// Anchors planted at random places, one per test runner or failure kind.
fn anchor() -> impl Strategy<Value = String> {
    let templates = prop::sample::select(vec![
        "error[E0308]: mismatched types in #",
        "error: `run_shell` failed: exit status #",
        "thread 'main' panicked at src/lib.rs:#:5:",
        "test result: FAILED. # passed; 1 failed",
        "---- tests::parse_# stdout ----",
        "=== 1 failed, # passed in 0.31s ===",
        "FAILED tests/test_a.py::test_# - AssertionError",
        "E       assert # == 2",
        " FAIL  src/a#.test.ts > suite > case",
        "Tests:       1 failed, # passed, 10 total",
        "--- FAIL: TestReplay# (0.00s)",
        "npm ERR! code E#",
        "npm WARN deprecated inflight@1.0.#",
        "WARNING: the option # is deprecated",
        "Fatal: out of memory at #",
        "request timeout after #s",
        "TypeError: x# is not a function",
        "java.lang.NullPointerException: #",
        "[exit code #]",
    ]);
    (templates, 0u32..1000).prop_map(|(t, n)| t.replace('#', &n.to_string()))
}

/// Noise: repeated shapes with numbers, paths, blank lines, frames without an anchor,
/// words that only look like keywords (`thiserror`), passing tests.
fn noise() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u32..500).prop_map(|n| format!("test tests::case_{n} ... ok")),
        (0u32..500).prop_map(|n| format!("   Compiling thiserror v2.0.{n}")),
        (0u32..99, 0u32..999).prop_map(|(p, n)| format!("[{p:>3}%] Building obj/{n}.o")),
        (0u32..9999).prop_map(|n| format!("2024-05-01T12:00:00Z INFO GET /items/{n} 200")),
        Just(String::new()),
        Just("    at Object.<anonymous> (/app/x.js:1:2)".to_owned()),
        Just("  File \"x.py\", line 3, in f".to_owned()),
        Just("   |".to_owned()),
        "[a-z ]{0,40}",
        "[ -~]{0,60}",
        "[a-z]{1,8}( [a-z]{1,8}){0,6}",
    ]
}

/// A log of noise with anchors planted in it; returns the log and its planted anchors.
fn log() -> impl Strategy<Value = (String, Vec<String>)> {
    prop::collection::vec(
        prop_oneof![8 => noise().prop_map(|l| (l, false)), 1 => anchor().prop_map(|l| (l, true))],
        0..400,
    )
    .prop_map(|lines| {
        let planted = lines
            .iter()
            .filter(|(_, a)| *a)
            .map(|(l, _)| l.clone())
            .collect();
        let mut text: String = lines.iter().map(|(l, _)| format!("{l}\n")).collect();
        if text.len() % 2 == 1 {
            text.pop(); // Logs without a final newline too.
        }
        (text, planted)
    })
}

fn options() -> impl Strategy<Value = CompressOptions> {
    (0usize..60, 0usize..4, 0.0f64..0.5, 1usize..6).prop_map(
        |(min_lines, context, min_savings, min_fold)| CompressOptions {
            min_lines,
            context,
            min_savings,
            min_fold,
        },
    )
}

proptest! {
    // No regression files: a failure found here becomes a named test in compress_log.rs.
    #![proptest_config(ProptestConfig {
        cases: 512,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn never_drops_a_planted_anchor_and_never_grows((log, planted) in log(), options in options()) {
        let Some(c) = compress_log(&log, &options) else {
            return Ok(());
        };
        let shown = shown_lines(&c);
        for anchor in &planted {
            prop_assert!(shown.contains(anchor.as_str()), "lost {:?}\n{}", anchor, c.text);
        }
        prop_assert_eq!(lost_anchors(&log, &c), Vec::<String>::new());
        prop_assert!(c.text.len() < log.len());
        prop_assert!(c.text.chars().count() < log.chars().count());
        prop_assert!(c.savings >= options.min_savings);
        prop_assert_eq!(c.text.lines().count(), c.output_lines);
        prop_assert_eq!(c.input_lines, log.lines().count());
        prop_assert!(c.anchor_lines >= planted.len());
    }

    /// Terminal debris, broken escapes, multibyte text and stray carriage returns: no panic,
    /// no growth, no invalid counts.
    #[test]
    fn arbitrary_text_never_panics_or_grows(
        text in "([\\x1b\\r\\n\\t \\[\\]0-9;:mKa-zA-Zé✓×…/\\\\_.-]{0,12}\\n?){0,200}",
        options in options(),
    ) {
        if let Some(c) = compress_log(&text, &options) {
            prop_assert!(c.text.len() < text.len());
            prop_assert!(c.text.chars().count() < text.chars().count());
            prop_assert!(!c.text.contains('\x1b') && !c.text.contains('\r'));
            prop_assert_eq!(c.input_lines, text.lines().count());
        }
    }

    /// The whole-stream compressor, fed in pieces of any size and cutting the stream into
    /// chunks of any size, never loses an anchor line while they fit the cap.
    #[test]
    fn the_stream_compressor_never_drops_an_anchor(
        (log, planted) in log(),
        // Longer than any generated line: a line longer than a chunk is cut (real chunks
        // are 4 MiB).
        chunk in 128usize..4_096,
        piece in 1usize..600,
    ) {
        let mut compressor = LogCompressor::new(LogOptions {
            cap_chars: usize::MAX,
            chunk_bytes: chunk,
            ..LogOptions::default()
        });
        for bytes in log.as_bytes().chunks(piece) {
            compressor.push(bytes);
        }
        let c = compressor.finish();
        let shown = crate::support::expand(&c.text);
        let shown: std::collections::HashSet<&str> = shown.lines().collect();
        for anchor in &planted {
            prop_assert!(shown.contains(anchor.as_str()), "lost {:?}\n{}", anchor, c.text);
        }
        for line in log.lines().filter(|l| crate::support::is_anchor(l)) {
            let line = crate::support::strip_ansi(line);
            prop_assert!(shown.contains(line.trim_end()) || shown.contains(line.as_str()), "lost anchor {:?}\n{}", line, c.text);
        }
        prop_assert_eq!(c.anchors, c.anchors_shown);
        prop_assert_eq!(c.input_lines, log.lines().count() as u64);
    }

    #[test]
    fn planted_anchors_are_anchors_to_the_oracle(line in anchor()) {
        prop_assert!(is_anchor(&line));
    }
}
