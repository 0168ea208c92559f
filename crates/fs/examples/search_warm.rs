//! `grep` or `search_files` called again and again in one warm process, as a running `serve`
//! calls them (without the JSON-RPC around): per-call wall time and the process's CPU time,
//! with limits raised so one call returns every match (as `bench/search-bench.toml` does).
//!
//! `cargo run --release -p toolgate-fs --example search_warm -- ROOT TOOL ARGS_JSON [RUNS]`
//!
//! e.g. `… -- target/bench-data/src-tree/vendor grep '{"pattern": "unsafe impl Send"}' 20`.
//! Prints one line per call, then `median_ms=… cpu_ms_per_call=…` for scripts.

#![allow(
    clippy::print_stdout,
    reason = "an example reports to its user on stdout"
)]

use std::error::Error;
use std::sync::Arc;
use std::time::{Duration, Instant};

use toolgate_core::{CallContext, DynTool};
use toolgate_fs::{FsLimits, Roots, SearchLimits, builtin_fs_tools_with};

/// CPU time (user + system, all threads) of this process so far, from `/proc/self/stat`
/// (10 ms ticks: many calls make the average exact enough).
fn cpu() -> Duration {
    let stat = fs_err::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rfind(')')
        .map_or("", |at| &stat[at + 2..])
        .split(' ')
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: search_warm ROOT TOOL ARGS_JSON [RUNS]";
    let root = args.next().ok_or(usage)?;
    let tool_name = args.next().ok_or(usage)?;
    let call_args: serde_json::Value = serde_json::from_str(&args.next().ok_or(usage)?)?;
    let runs: usize = args.next().map_or(Ok(10), |r| r.parse())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let roots = Arc::new(Roots::new([std::path::Path::new(&root)])?);
    let limits = FsLimits {
        search: SearchLimits {
            max_scanned: 10_000_000,
            default_limit: 1_000_000,
            max_limit: 1_000_000,
            max_payload_bytes: 1 << 30,
            ..SearchLimits::default()
        },
        ..FsLimits::default()
    };
    let tools = builtin_fs_tools_with(roots, limits, None);
    let tool: Arc<dyn DynTool> = tools
        .iter()
        .find(|t| t.spec().name == tool_name)
        .cloned()
        .ok_or("no such file tool")?;
    let mut walls = Vec::with_capacity(runs);
    let cpu_start = cpu();
    for i in 0..runs {
        let start = Instant::now();
        let out = runtime.block_on(tool.call(call_args.clone(), CallContext::unattended()))?;
        let wall = start.elapsed();
        walls.push(wall);
        if i == 0 {
            let s = |key: &str| out.structured.get(key).cloned().unwrap_or_default();
            println!(
                "total={} files_searched={} scanned={} truncated={}",
                s("total"),
                s("files_searched"),
                s("scanned_count"),
                s("truncated")
            );
        }
    }
    let cpu_per_call = (cpu() - cpu_start) / runs.max(1) as u32;
    walls.sort();
    let median = walls[walls.len() / 2];
    println!(
        "median_ms={:.1} min_ms={:.1} cpu_ms_per_call={:.1}",
        median.as_secs_f64() * 1e3,
        walls[0].as_secs_f64() * 1e3,
        cpu_per_call.as_secs_f64() * 1e3
    );
    Ok(())
}
