//! Real logs, produced by running the tools on this machine (see `tests/fixtures/README.md`):
//! every anchor survives, and the savings hold.

use toolgate_budget::{CompressOptions, compress_log};

use crate::support::lost_anchors;

/// Fixture file name, what produced it, and the least fraction it must save (`None`: the
/// log must be left alone, nothing to gain).
const FIXTURES: &[(&str, Option<f64>)] = &[
    ("cargo_test_failures.log", Some(0.80)),
    ("cargo_test_backtrace.log", Some(0.60)),
    ("pytest_verbose.log", Some(0.85)),
    ("pytest_default.log", None),
    ("vitest_verbose_ansi.log", Some(0.95)),
    ("jest_verbose.log", Some(0.75)),
    ("go_test_panic.log", Some(0.70)),
    ("npm_install_verbose.log", Some(0.95)),
    ("cargo_build_errors.log", Some(0.0)),
    ("cargo_build_progress_ansi.log", Some(0.70)),
    ("java_stacktrace.log", Some(0.90)),
    ("python_traceback.log", Some(0.90)),
];

pub fn read(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    fs_err::read_to_string(path).unwrap()
}

#[test]
fn every_fixture_keeps_every_anchor_and_saves_what_it_should() {
    let options = CompressOptions::default();
    let mut problems = Vec::new();
    for &(name, least) in FIXTURES {
        let log = read(name);
        let compressed = compress_log(&log, &options);
        match (&compressed, least) {
            (Some(c), Some(least)) => {
                let lost = lost_anchors(&log, c);
                // To review what a model would see: TOOLGATE_DUMP_COMPRESSED=/some/dir.
                if let Some(dir) = std::env::var_os("TOOLGATE_DUMP_COMPRESSED") {
                    fs_err::write(std::path::Path::new(&dir).join(name), &c.text).unwrap();
                }
                println!(
                    "{name:30} {:>5} → {:>4} lines  {:>6} → {:>5} chars  saved {:5.1} %  anchors {:>3}, lost {}",
                    c.input_lines,
                    c.output_lines,
                    log.chars().count(),
                    c.text.chars().count(),
                    c.savings * 100.0,
                    c.anchor_lines,
                    lost.len(),
                );
                if !lost.is_empty() {
                    problems.push(format!("{name}: lost {lost:?}"));
                }
                if c.savings < least {
                    problems.push(format!(
                        "{name}: saved {:.3} < {least}\n{}",
                        c.savings, c.text
                    ));
                }
            }
            (None, None) => println!("{name:30} left alone: under 15 % to gain"),
            (Some(c), None) => {
                problems.push(format!("{name}: expected no change, got\n{}", c.text))
            }
            (None, Some(_)) => problems.push(format!("{name}: not compressed")),
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

#[test]
fn test_runner_failures_survive_with_their_details() {
    let cases: &[(&str, &[&str])] = &[
        (
            "cargo_test_failures.log",
            &[
                "test tests::nested_index_panics ... FAILED",
                "index out of bounds: the len is 0 but the index is 3",
                "thread 'tests::nested_index_panics' (26031) panicked at src/lib.rs:15:83:",
                "test result: FAILED. 420 passed; 3 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.12s",
            ],
        ),
        (
            "pytest_verbose.log",
            &[
                "E       ValueError: invalid literal for int() with base 10: 'two'",
                // The whole report, not just the lines around `E`: the call chain too.
                "inventory.py:6: in <genexpr>",
                "stock = {'apple': 2}, name = 'apple', n = 5",
                "inventory.py:10: ValueError",
                "E         {'net': 16.99} != {'net': 17.0}",
            ],
        ),
        (
            "vitest_verbose_ansi.log",
            &[
                "AssertionError: expected 208 to be 209 // Object.is equality",
                "- 209",
                "+ 208",
            ],
        ),
        (
            "jest_verbose.log",
            &[
                "    TypeError: Cannot read properties of undefined (reading 'fetch')",
                "      at Store.load (src/store.js:9:34)",
                "    Received: \"12.50\"",
            ],
        ),
        (
            "go_test_panic.log",
            &[
                "    cart_test.go:372: Discount(999, 15) = 850, want exact 84915/100",
                "\t/tmp/fx/gotest/ledger/ledger.go:5",
                "example.com/shop/ledger.Replay(...)",
            ],
        ),
        (
            "java_stacktrace.log",
            &["\tat Importer.parseField(Importer.java:14)", "\t... 2 more"],
        ),
        (
            "python_traceback.log",
            &[
                "    return int(value[1:], 16)",
                "ValueError: invalid literal for int() with base 16: 'zz'",
                "KeyError: 'rollback marker missing'",
            ],
        ),
    ];
    let backtrace = [
        "             at ./src/lib.rs:15:83",
        "  14: <fn() -> core::result::Result<(), alloc::string::String> as core::ops::function::FnOnce<()>>::call_once",
    ];
    let cases = [cases, &[("cargo_test_backtrace.log", &backtrace[..])]].concat();
    for (name, lines) in cases {
        let c = compress_log(&read(name), &CompressOptions::default()).expect(name);
        for line in lines {
            assert!(
                c.text.lines().any(|l| l == *line),
                "{name}: lost {line:?}\n{}",
                c.text
            );
        }
    }
}
