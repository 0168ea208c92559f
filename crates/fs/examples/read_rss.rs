//! Peak memory of reading line 5,000,000 of a 1 GiB log through `read_file` (goal: ≤ 64 MiB
//! resident). Reports the process's high-water mark (`VmHWM`) before and after the reads;
//! the log is generated into `target/bench-data` on first use, and that step is kept out of
//! the figure by running the reads in a fresh process (`--measure`, which the first run
//! spawns itself).
//!
//! `cargo run --release -p toolgate-fs --example read_rss`

#![allow(
    clippy::print_stdout,
    reason = "an example reports to its user on stdout"
)]

#[path = "../benches/support/data.rs"]
#[allow(dead_code, reason = "shared with the benchmark, which uses all of it")]
mod data;

use std::error::Error;
use std::sync::Arc;
use std::time::Instant;

use serde_json::json;
use toolgate_core::CallContext;
use toolgate_fs::{ReadLimits, Roots, builtin_fs_tools};

fn main() -> Result<(), Box<dyn Error>> {
    let dir = data::dir()?;
    if std::env::args().nth(1).as_deref() != Some("--measure") {
        data::log(&dir)?;
        let status = std::process::Command::new(std::env::current_exe()?)
            .arg("--measure")
            .status()?;
        return if status.success() {
            Ok(())
        } else {
            Err(format!("measuring run failed: {status}").into())
        };
    }

    let before = vm("VmHWM")?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let roots = Arc::new(Roots::new([&dir])?);
    let tools = builtin_fs_tools(roots, ReadLimits::default(), None);
    let read = tools
        .iter()
        .find(|t| t.spec().name == "read_file")
        .ok_or("no read_file tool")?;
    let args = json!({ "path": data::LOG_NAME, "offset": data::DEEP_LINE });
    for call in ["first call (fresh index)", "second call (warm index)"] {
        let started = Instant::now();
        let out = rt.block_on(read.call(args.clone(), CallContext::unattended()))?;
        let took = started.elapsed();
        let first = out.text.lines().next().unwrap_or_default();
        println!(
            "{call}: {:.1} ms, {} bytes returned, first line {first:?}, VmHWM now {} KiB",
            took.as_secs_f64() * 1e3,
            out.text.len(),
            vm("VmHWM")?
        );
    }
    println!(
        "peak RSS (VmHWM): {} KiB ({:.1} MiB); at start {} KiB; VmRSS now {} KiB",
        vm("VmHWM")?,
        vm("VmHWM")? as f64 / 1024.0,
        before,
        vm("VmRSS")?
    );
    Ok(())
}

/// A `Vm*` field of `/proc/self/status`, in KiB.
fn vm(field: &str) -> Result<u64, Box<dyn Error>> {
    let status = fs_err::read_to_string("/proc/self/status")?;
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .ok_or_else(|| format!("no {field} in /proc/self/status"))?;
    Ok(line.trim().trim_end_matches("kB").trim().parse()?)
}
