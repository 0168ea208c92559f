//! Log compression benchmark: savings on each real log in `tests/fixtures/`, printed as a
//! table, and throughput on a ~100 MB log built by interleaving those fixtures. Goals:
//! ≥ 90 % saved on test-runner logs with no anchor lost, ≥ 200 MB/s.
//!
//! `cargo bench -p toolgate-budget --bench compress`

// A benchmark is a reporting tool: printing the table is its job, and a missing fixture
// should stop it loudly.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use toolgate_budget::{CompressOptions, compress_log};

const FIXTURES: &[&str] = &[
    "cargo_test_failures.log",
    "cargo_test_backtrace.log",
    "pytest_verbose.log",
    "pytest_default.log",
    "vitest_verbose_ansi.log",
    "jest_verbose.log",
    "go_test_panic.log",
    "npm_install_verbose.log",
    "cargo_build_errors.log",
    "cargo_build_progress_ansi.log",
    "java_stacktrace.log",
    "python_traceback.log",
];

const BIG_LOG_BYTES: usize = 100 * 1024 * 1024;

fn fixture(name: &str) -> String {
    fs_err::read_to_string(format!(
        "{}/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// The fixtures one after another, over and over, up to `bytes`: a long CI log of many jobs.
fn big_log(bytes: usize) -> String {
    let logs: Vec<String> = FIXTURES.iter().map(|n| fixture(n)).collect();
    let mut out = String::with_capacity(bytes + 100_000);
    while out.len() < bytes {
        for log in &logs {
            out.push_str(log);
        }
    }
    out
}

/// Time this thread has spent on a CPU, from Linux's schedstat; `None` elsewhere.
fn thread_cpu() -> Option<Duration> {
    let stat = fs_err::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns = stat.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

fn savings_table() {
    println!("\nlog compression savings (characters), default options:");
    for name in FIXTURES {
        let log = fixture(name);
        let lines = log.lines().count();
        match compress_log(&log, &CompressOptions::default()) {
            Some(c) => println!(
                "  {name:30} {lines:>5} → {:>4} lines  {:>6} → {:>5} chars  saved {:5.1} %",
                c.output_lines,
                log.chars().count(),
                c.text.chars().count(),
                c.savings * 100.0
            ),
            None => println!("  {name:30} {lines:>5} lines  left alone"),
        }
    }
}

fn bench(c: &mut Criterion) {
    savings_table();

    let log = big_log(BIG_LOG_BYTES);
    // The fastest of a few runs is the least disturbed by other work on the machine; the CPU
    // time this thread spent running (Linux) is what the code costs, however busy the box.
    let (mut wall, mut cpu) = (Duration::MAX, Duration::MAX);
    let mut once = None;
    for _ in 0..5 {
        let (started, cpu_started) = (Instant::now(), thread_cpu());
        once = compress_log(black_box(&log), &CompressOptions::default());
        wall = wall.min(started.elapsed());
        if let (Some(a), Some(b)) = (cpu_started, thread_cpu()) {
            cpu = cpu.min(b.saturating_sub(a));
        }
    }
    let once = once.expect("compresses");
    let mb_per_s = |d: Duration| log.len() as f64 / d.as_secs_f64() / 1e6;
    println!(
        "\n~100 MB log: {} bytes, {} → {} lines, saved {:.1} %",
        log.len(),
        once.input_lines,
        once.output_lines,
        once.savings * 100.0,
    );
    println!(
        "fastest of 5 runs: {:.0} ms wall = {:.0} MB/s; {:.0} ms on CPU = {:.0} MB/s\n",
        wall.as_secs_f64() * 1e3,
        mb_per_s(wall),
        cpu.as_secs_f64() * 1e3,
        mb_per_s(cpu),
    );

    let mut group = c.benchmark_group("compress");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20))
        .throughput(Throughput::Bytes(log.len() as u64));
    group.bench_function("mixed_100mb", |b| {
        b.iter(|| compress_log(black_box(&log), &CompressOptions::default()))
    });
    group.finish();

    let mut group = c.benchmark_group("compress_fixture");
    for name in [
        "cargo_test_failures.log",
        "vitest_verbose_ansi.log",
        "npm_install_verbose.log",
    ] {
        let log = fixture(name);
        group.throughput(Throughput::Bytes(log.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| compress_log(black_box(&log), &CompressOptions::default()))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
