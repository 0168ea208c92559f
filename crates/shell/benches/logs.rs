//! Log compression's figures, through `run_shell` itself (release build):
//! 1. per real fixture, the characters that reach the model and how many of its key lines
//!    (failing names, failure messages, summary) they hold — before (the previous rule:
//!    each stream whole up to 16,000 characters, else a 16,000-character head/tail excerpt)
//!    and now;
//! 2. the compressor's throughput on a ~100 MB failing log replayed through `run_shell`
//!    (wall time of the call, and CPU time of this process: pumps plus compression; `cat`
//!    runs in its own process).
//!
//! `bench/shell_logs.sh` or `cargo bench -p toolgate-shell --bench logs`

// A benchmark is a reporting tool: printing the table is its job, and a broken fixture
// should stop it loudly.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolgate_budget::{Budget, BudgetLimits, SpillStore, clean_terminal, excerpt};
use toolgate_core::{CallContext, DynTool};
use toolgate_fs::Roots;
use toolgate_shell::{ShellLimits, builtin_shell_tools};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
const BUDGET_FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../budget/tests/fixtures");

struct Case {
    name: &'static str,
    stdout: &'static str,
    stderr: Option<&'static str>,
    code: i32,
    key_lines: &'static [&'static str],
}

const CASES: &[Case] = &[
    Case {
        name: "cargo test (this project, 3 injected failures)",
        stdout: "cargo_test_injected.stdout",
        stderr: Some("cargo_test_injected.stderr"),
        code: 101,
        key_lines: &[
            "test injected_failures::injected_assert_after_captured_output ... FAILED",
            "test injected_failures::injected_index_out_of_bounds ... FAILED",
            "test injected_failures::injected_panic_after_captured_output ... FAILED",
            "assertion `left == right` failed: injected failure: the sum is wrong",
            "injected failure: spill store refused the write",
            "index out of bounds: the len is 0 but the index is 3",
            "test result: FAILED. 30 passed; 3 failed;",
        ],
    },
    Case {
        name: "pytest (3 failures after captured output)",
        stdout: "pytest_captured.stdout",
        stderr: None,
        code: 1,
        key_lines: &[
            "E       AssertionError: discount was not applied",
            "E       KeyError: 'asia'",
            "E       ValueError: could not parse amount '12,50 EUR'",
            "FAILED tests/test_orders.py::test_discount_is_applied",
            "FAILED tests/test_orders.py::test_shipping_lookup",
            "FAILED tests/test_orders.py::test_refund_parses_amount",
            "3 failed, 400 passed in 0.35s",
        ],
    },
    Case {
        name: "jest (2 failures, console.log chatter)",
        stdout: "jest_console.stdout",
        stderr: Some("jest_console.stderr"),
        code: 1,
        key_lines: &[
            "● total › applies the discount",
            "● parseAmount › parses a euro amount",
            "Expected: 20",
            "Received: 25",
            "TypeError: cannot parse amount 12,50 EUR",
            "Tests:       2 failed, 300 passed, 302 total",
        ],
    },
];

fn tools(root: &std::path::Path) -> std::collections::BTreeMap<String, Arc<dyn DynTool>> {
    let spill_dir = root.join(".toolgate/spill");
    let roots = Arc::new(Roots::new([root]).unwrap().with_read_only(&spill_dir));
    let store = Arc::new(SpillStore::new(spill_dir, 1 << 40));
    let budget = Arc::new(Budget::new(
        BudgetLimits::default(),
        store,
        root.to_path_buf(),
    ));
    builtin_shell_tools(roots, budget, ShellLimits::default())
        .into_iter()
        .map(|t| (t.spec().name.clone(), t))
        .collect()
}

/// What the previous rule showed of one stream: whole up to 16,000 characters, else an
/// excerpt of 16,000 (mostly tail on failure).
fn before(bytes: &[u8], failed: bool) -> String {
    let text = String::from_utf8_lossy(bytes);
    let clean = clean_terminal(&text);
    if clean.chars().count() <= 16_000 {
        clean.into_owned()
    } else {
        excerpt(&clean, 16_000, failed)
    }
}

/// CPU time of this process (all threads), from /proc/self/stat.
fn process_cpu() -> Duration {
    let stat = fs_err::read_to_string("/proc/self/stat").unwrap();
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // USER_HZ is 100 on Linux.
    Duration::from_millis(ticks * 10)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let tools = tools(&root);
    let ctx = CallContext::unattended;
    println!(
        "| fixture | input chars | before: chars to model | before: key lines | now: chars to model | now: key lines |"
    );
    println!("|---|---|---|---|---|---|");
    for case in CASES {
        let out_bytes = fs_err::read(format!("{FIXTURES}/{}", case.stdout)).unwrap();
        let err_bytes = case
            .stderr
            .map(|e| fs_err::read(format!("{FIXTURES}/{e}")).unwrap())
            .unwrap_or_default();
        let old = format!("{}{}", before(&out_bytes, true), before(&err_bytes, true));
        let err = case
            .stderr
            .map_or(String::new(), |e| format!("cat '{FIXTURES}/{e}' >&2; "));
        let command = format!("cat '{FIXTURES}/{}'; {err}exit {}", case.stdout, case.code);
        let out = runtime
            .block_on(tools["run_shell"].call(json!({ "command": command }), ctx()))
            .unwrap();
        let kept = |text: &str| case.key_lines.iter().filter(|k| text.contains(*k)).count();
        let input = String::from_utf8_lossy(&out_bytes).chars().count()
            + String::from_utf8_lossy(&err_bytes).chars().count();
        println!(
            "| {} | {input} | {} | {}/{} | {} | {}/{} |",
            case.name,
            old.chars().count(),
            kept(&old),
            case.key_lines.len(),
            out.text.chars().count(),
            kept(&out.text),
            case.key_lines.len(),
        );
    }

    // ~100 MB: the budget crate's real logs one after another, then a failing exit.
    let mut big = Vec::with_capacity(101 << 20);
    let logs: Vec<Vec<u8>> = fs_err::read_dir(BUDGET_FIXTURES)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .map(|p| fs_err::read(p).unwrap())
        .collect();
    while big.len() < 100 << 20 {
        for log in &logs {
            big.extend_from_slice(log);
        }
    }
    let path = root.join("big.log");
    fs_err::write(&path, &big).unwrap();
    let mb = big.len() as f64 / 1e6;
    let mut best: Option<(Duration, Duration, usize)> = None;
    for _ in 0..3 {
        let cpu = process_cpu();
        let start = Instant::now();
        let out = runtime
            .block_on(tools["run_shell"].call(
                json!({ "command": format!("cat '{}'; exit 1", path.display()) }),
                ctx(),
            ))
            .unwrap();
        let wall = start.elapsed();
        let cpu = process_cpu() - cpu;
        assert!(out.is_error);
        if best.is_none_or(|(w, _, _)| wall < w) {
            best = Some((wall, cpu, out.text.chars().count()));
        }
    }
    let (wall, cpu, chars) = best.unwrap();
    println!(
        "\n{mb:.1} MB failing log through run_shell (best of 3): {:.0} ms wall = {:.0} MB/s; {:.0} ms CPU in toolgate = {:.0} MB/s; {chars} characters to the model",
        wall.as_secs_f64() * 1e3,
        mb / wall.as_secs_f64(),
        cpu.as_secs_f64() * 1e3,
        mb / cpu.as_secs_f64(),
    );
}
