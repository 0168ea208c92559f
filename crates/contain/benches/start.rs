//! How long a contained `/bin/true` takes from start to reaped exit, through each way this
//! crate starts a command: [`toolgate_contain::launch`] (`run_shell`'s way: the spawner
//! inside the PID namespace, or the `posix_spawn`-style start under process groups) and
//! [`toolgate_contain::contain`] with a `Command` (mounted servers' way: the relay).
//! Containment is chosen once per process, so each mode is its own run:
//!
//! ```text
//! cargo bench -p toolgate-contain --bench start -- auto [STARTS] [ROUNDS] [HEAP_MB]
//! cargo bench -p toolgate-contain --bench start -- process-group [STARTS] [ROUNDS] [HEAP_MB]
//! ```
//!
//! `HEAP_MB` megabytes are allocated and touched first, so that a start which copies the
//! starting process's page tables (a `fork`) pays what it would in a larger process than
//! this one. Prints the median of each round's median, in microseconds.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::io::Read;
use std::path::Path;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let setting = match args.first().map(String::as_str) {
        Some("process-group") => toolgate_contain::Setting::ProcessGroup,
        _ => toolgate_contain::Setting::Auto,
    };
    let number =
        |at: usize, default: usize| args.get(at).and_then(|a| a.parse().ok()).unwrap_or(default);
    let (starts, rounds, heap_mb) = (number(1, 300), number(2, 5), number(3, 0));
    let heap: Vec<u8> = (0..heap_mb << 20).map(|i| i as u8).collect();
    let containment = toolgate_contain::init(setting).unwrap();
    println!("{containment}; heap {} MB", heap.len() >> 20);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut medians: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for _ in 0..rounds {
        let mut times: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
        for i in 0..starts + 20 {
            for (way, times) in times.iter_mut().enumerate() {
                let took = runtime.block_on(once(way));
                if i >= 20 {
                    times.push(took);
                }
            }
        }
        for (median, times) in medians.iter_mut().zip(&mut times) {
            median.push(middle(times));
        }
    }
    for (name, median) in ["launch", "contain + Command"].iter().zip(&mut medians) {
        let rounds: Vec<String> = median.iter().map(|m| format!("{m:.0}")).collect();
        println!(
            "{name}: {:.0} µs (rounds {})",
            middle(median),
            rounds.join(", ")
        );
    }
    std::hint::black_box(heap);
}

/// One start of `/bin/true` the `way`th way, in microseconds until it is reaped.
async fn once(way: usize) -> f64 {
    let t = Instant::now();
    if way == 0 {
        let argv = [std::ffi::OsStr::new("true")];
        let (mut started, stdout, stderr) = toolgate_contain::launch(
            Path::new("/bin/true"),
            &argv,
            Path::new("/"),
            &toolgate_contain::Sandbox::default(),
        )
        .expect("launch is not available here")
        .unwrap();
        let status = started.wait().await.unwrap();
        for fd in [stdout, stderr] {
            std::io::PipeReader::from(fd)
                .read_to_end(&mut Vec::new())
                .unwrap();
        }
        assert!(status.success());
    } else {
        let mut cmd = tokio::process::Command::new("/bin/true");
        cmd.stdin(std::process::Stdio::null());
        toolgate_contain::contain(&mut cmd);
        assert!(cmd.status().await.unwrap().success());
    }
    t.elapsed().as_secs_f64() * 1e6
}

fn middle(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
