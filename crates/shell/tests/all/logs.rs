//! Log compression through `run_shell`: the whole stream is compressed, a success that is
//! not a log gets a short excerpt, and the verbatim output is in the spill file. Fixtures
//! are real runs (tests/fixtures/README.md).

use toolgate_shell::ShellLimits;

use crate::fixtures::{Env, field};

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// Runs a command that prints `stdout` and `stderr` fixtures and exits with `code`.
async fn replay(
    env: &Env,
    stdout: &str,
    stderr: Option<&str>,
    code: i32,
) -> toolgate_core::ToolOutput {
    let err = stderr.map_or(String::new(), |e| format!("cat '{}' >&2; ", fixture(e)));
    env.sh(&format!("cat '{}'; {err}exit {code}", fixture(stdout)))
        .await
}

fn spilled(out: &toolgate_core::ToolOutput, stream: &str) -> Vec<u8> {
    let path = field(out, stream)["path"].as_str().unwrap().to_owned();
    fs_err::read(path).unwrap()
}

#[tokio::test]
async fn cargo_test_with_3_failures_after_hundreds_of_captured_lines_keeps_every_panic() {
    let env = Env::new();
    let out = replay(
        &env,
        "cargo_test_injected.stdout",
        Some("cargo_test_injected.stderr"),
        101,
    )
    .await;
    let text = &out.text;
    assert!(out.is_error);
    assert!(
        text.chars().count() <= 8_000,
        "{} chars:\n{text}",
        text.chars().count()
    );
    for name in [
        "injected_assert_after_captured_output",
        "injected_panic_after_captured_output",
        "injected_index_out_of_bounds",
    ] {
        assert!(
            text.contains(&format!("test injected_failures::{name} ... FAILED")),
            "{name}\n{text}"
        );
        assert!(
            text.contains(&format!("thread 'injected_failures::{name}'")),
            "{name}"
        );
    }
    for message in [
        "assertion `left == right` failed: injected failure: the sum is wrong",
        "injected failure: spill store refused the write",
        "index out of bounds: the len is 0 but the index is 3",
    ] {
        assert!(
            text.contains(message),
            "panic message {message:?} lost:\n{text}"
        );
    }
    assert!(
        text.contains("test result: FAILED. 30 passed; 3 failed;"),
        "{text}"
    );
    assert!(text.contains("command failed: exit code 101"));
    // The captured chatter is folded with a count; its last lines stay.
    assert!(text.contains("lines omitted]"), "{text}");
    assert!(text.contains("wrote chunk 279 of spill file 17"), "{text}");
    assert_eq!(field(&out, "stdout")["shown"], "log");
    assert_eq!(field(&out, "stdout")["log_kind"], "cargo_test");
    // Frames through `core::panicking` mention a problem word; to fit, some were folded,
    // and the header says how many key lines are shown of how many.
    let stdout = field(&out, "stdout");
    let (all, shown) = (
        stdout["anchors"].as_u64().unwrap(),
        stdout["anchors_shown"].as_u64().unwrap(),
    );
    assert!(shown <= all);
    if shown < all {
        assert!(
            text.contains(&format!("{shown} of {all} key lines")),
            "{text}"
        );
    }
    assert!(text.contains("do not rerun the command"));
    assert_eq!(
        spilled(&out, "stdout"),
        fs_err::read(fixture("cargo_test_injected.stdout")).unwrap(),
        "the verbatim output is byte-identical in the spill file"
    );
}

/// The target case, at its size: 3 failures among 3,000 tests, each failure after 270 lines
/// of captured tracing output (with WARN and ERROR lines of its own), ~100 KB.
#[tokio::test]
async fn three_failures_among_3000_tests_with_captured_tracing_fit_8000_chars() {
    let env = Env::new();
    let script = r#"
echo; echo "running 3003 tests"
for i in $(seq 1 3000); do echo "test module_$((i % 40))::case_$i ... ok"; done
for f in alpha beta gamma; do echo "test failing::$f ... FAILED"; done
echo; echo "failures:"; echo
for f in alpha beta gamma; do
  echo "---- failing::$f stdout ----"
  for j in $(seq 1 270); do
    if [ $((j % 30)) = 0 ]; then echo "2025-06-01T10:00:00Z  WARN app::db: slow query $j took 1200ms"
    elif [ $((j % 45)) = 0 ]; then echo "2025-06-01T10:00:00Z ERROR app::net: retrying request $j"
    else echo "2025-06-01T10:00:00Z DEBUG app::cache: entry $j refreshed"; fi
  done
  echo "thread 'failing::$f' panicked at src/$f.rs:10:5:"
  echo "the $f invariant broke: expected 3, got 4"
  echo "note: run with \`RUST_BACKTRACE=1\` environment variable to display a backtrace"
  echo
done
echo "failures:"; for f in alpha beta gamma; do echo "    failing::$f"; done
echo; echo "test result: FAILED. 3000 passed; 3 failed; 0 ignored; 0 measured; 0 filtered out; finished in 2.31s"
exit 101
"#;
    let out = env.sh(script).await;
    let text = &out.text;
    let bytes = field(&out, "stdout")["bytes"].as_u64().unwrap();
    assert!(bytes > 100_000, "{bytes}");
    assert!(
        text.chars().count() <= 8_000,
        "{} chars:\n{text}",
        text.chars().count()
    );
    for f in ["alpha", "beta", "gamma"] {
        assert!(
            text.contains(&format!("test failing::{f} ... FAILED")),
            "{f}"
        );
        assert!(
            text.contains(&format!("the {f} invariant broke: expected 3, got 4")),
            "panic message of {f} lost:\n{text}"
        );
    }
    assert!(text.contains("test result: FAILED. 3000 passed; 3 failed;"));
    assert!(text.contains("saved to `"));
}

#[tokio::test]
async fn a_2mb_success_that_is_not_a_log_is_a_short_head_excerpt_with_a_pointer() {
    let env = Env::new();
    // Source-like text that mentions errors: still not a log, because it succeeded and no
    // tool printed it.
    let body: String = (0..40_000)
        .map(|i| format!("    let value_{i} = parse(input).map_err(|error| Error::new({i}))?;\n"))
        .collect();
    assert!(body.len() > 2_000_000);
    fs_err::write(env.root.join("big.rs"), &body).unwrap();
    let out = env.sh("cat big.rs").await;
    let text = &out.text;
    assert!(!out.is_error);
    assert!(
        text.chars().count() <= 2_500,
        "{} chars:\n{text}",
        text.chars().count()
    );
    assert!(text.contains("let value_0 = "), "head-biased");
    assert!(text.contains("\"offset\": 1, \"limit\": 200"), "{text}");
    assert!(text.contains("40,000 lines"), "{text}");
    assert_eq!(field(&out, "stdout")["shown"], "excerpt");
    assert_eq!(spilled(&out, "stdout"), body.as_bytes());
}

#[tokio::test]
async fn a_failure_that_is_not_a_log_is_a_short_tail_excerpt() {
    let env = Env::new();
    let out = env.sh("seq 1 100000; exit 3").await;
    let text = &out.text;
    assert!(text.chars().count() <= 2_500, "{}", text.chars().count());
    assert!(text.contains("\n100000\n"), "tail-biased");
    assert_eq!(field(&out, "stdout")["shown"], "excerpt");
}

#[tokio::test]
async fn pytest_failures_keep_each_message_and_the_summary() {
    let env = Env::new();
    let out = replay(&env, "pytest_captured.stdout", None, 1).await;
    let text = &out.text;
    assert!(
        text.chars().count() <= 8_000,
        "{} chars:\n{text}",
        text.chars().count()
    );
    for line in [
        "E       AssertionError: discount was not applied",
        "E       KeyError: 'asia'",
        "E       ValueError: could not parse amount '12,50 EUR'",
        "FAILED tests/test_orders.py::test_discount_is_applied - AssertionError: disco...",
        "FAILED tests/test_orders.py::test_shipping_lookup - KeyError: 'asia'",
        "======================== 3 failed, 400 passed in 0.35s =========================",
    ] {
        assert!(text.contains(line), "{line:?} lost:\n{text}");
    }
    assert_eq!(field(&out, "stdout")["log_kind"], "pytest");
    assert_eq!(
        spilled(&out, "stdout"),
        fs_err::read(fixture("pytest_captured.stdout")).unwrap()
    );
}

#[tokio::test]
async fn jest_failures_keep_each_message_and_the_summary_when_cut() {
    // Jest's run is short enough to be shown whole by default; with a small inline size it
    // is compressed like a long one.
    let env = Env::with_limits(ShellLimits {
        inline_chars: 2_000,
        ..ShellLimits::default()
    });
    let out = replay(&env, "jest_console.stdout", Some("jest_console.stderr"), 1).await;
    let text = &out.text;
    for line in [
        "● total › applies the discount",
        "● parseAmount › parses a euro amount",
        "Expected: 20",
        "Received: 25",
        "TypeError: cannot parse amount 12,50 EUR",
        "Tests:       2 failed, 300 passed, 302 total",
        "Test Suites: 1 failed, 1 total",
    ] {
        assert!(text.contains(line), "{line:?} lost:\n{text}");
    }
    assert_eq!(field(&out, "stderr")["shown"], "log");
    assert_eq!(field(&out, "stderr")["log_kind"], "jest");
    assert!(
        text.find("--- stdout").unwrap() < text.find("--- stderr").unwrap(),
        "streams stay apart"
    );
    assert!(
        text.chars().count() <= 8_000,
        "{} chars:\n{text}",
        text.chars().count()
    );
}

#[tokio::test]
async fn a_successful_build_log_is_compressed_too() {
    let env = Env::new();
    let script = r#"for i in $(seq 1 1000); do echo "   Compiling crate_$i v0.1.$i"; done
echo "warning: unused variable: \`x\`"; echo "  --> src/lib.rs:3:9"
echo "warning: \`app\` (lib) generated 1 warning"
echo "    Finished \`dev\` profile [unoptimized + debuginfo] target(s) in 41.2s""#;
    let out = env.sh(script).await;
    let text = &out.text;
    assert!(!out.is_error);
    assert_eq!(field(&out, "stdout")["log_kind"], "rustc");
    assert!(text.contains("warning: unused variable: `x`"));
    assert!(text.contains("generated 1 warning"));
    assert!(text.contains("Finished `dev` profile"));
    assert!(text.chars().count() < 1_500, "{text}");
}

#[tokio::test]
async fn sizes_come_from_the_session_when_its_client_needs_smaller_results() {
    let env = Env::new();
    env.session
        .ext::<toolgate_budget::SessionSizes>()
        .set(toolgate_budget::OutputSizes {
            excerpt_chars: 500,
            log_chars: 1_000,
            result_chars: 6_000,
        });
    let out = env.sh("seq 1 100000").await;
    assert!(
        out.text.chars().count() <= 1_000,
        "{}",
        out.text.chars().count()
    );
    let out = replay(&env, "pytest_captured.stdout", None, 1).await;
    assert!(out.text.chars().count() <= 1_600, "{}", out.text);
    assert!(out.text.contains("3 failed, 400 passed"), "{}", out.text);
}
