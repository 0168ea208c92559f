//! `read_file` speed goals, measured through the tool itself (argument parsing,
//! confinement, sniffing, paging) on a tokio runtime:
//!
//! - `first_page_40MiB_line`: one 40 MiB line → a page of ≤ 50 KiB, goal well under 0.1 s;
//! - `line_5M_of_1GiB/fresh_index`: line 5,000,000 of a 1 GiB log with a new line-index cache
//!   (a new tool per iteration); the page cache is warm, the line index is cold;
//! - `line_5M_of_1GiB/warm_index`: the same read again, index kept; goal ≤ 10 ms.
//!
//! Inputs are generated once into `target/bench-data` (see `support/data.rs`). Peak memory of
//! the deep read is measured by `examples/read_rss.rs`.

#![allow(
    clippy::expect_used,
    clippy::print_stderr,
    reason = "a benchmark that cannot set up should stop loudly, and it reports to its user"
)]

#[path = "support/data.rs"]
mod data;

use std::sync::Arc;
use std::time::Duration;

use criterion::{BatchSize, Criterion, SamplingMode, criterion_group, criterion_main};
use serde_json::{Value, json};
use toolgate_core::{CallContext, DynTool, ToolOutput};
use toolgate_fs::{ReadLimits, Roots, builtin_fs_tools};

fn read_tool(roots: &Arc<Roots>) -> Arc<dyn DynTool> {
    builtin_fs_tools(Arc::clone(roots), ReadLimits::default(), None)
        .into_iter()
        .find(|t| t.spec().name == "read_file")
        .expect("read_file is a built-in tool")
}

fn call(rt: &tokio::runtime::Runtime, tool: &Arc<dyn DynTool>, args: &Value) -> ToolOutput {
    rt.block_on(tool.call(args.clone(), CallContext::unattended()))
        .expect("read_file succeeds")
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let dir = data::dir().expect("bench data folder");
    data::long_line(&dir).expect("40 MiB line file");
    data::log(&dir).expect("1 GiB log file");
    let roots = Arc::new(Roots::new([&dir]).expect("bench root"));

    let long = json!({ "path": data::LONG_LINE_NAME });
    let deep = json!({ "path": data::LOG_NAME, "offset": data::DEEP_LINE });

    // What the model gets back, once, so the numbers can be read next to the sizes.
    let tool = read_tool(&roots);
    let out = call(&rt, &tool, &long);
    eprintln!(
        "first page of the 40 MiB line: {} bytes of text, structured {}",
        out.text.len(),
        Value::Object(out.structured.clone())
    );
    let out = call(&rt, &tool, &deep);
    eprintln!(
        "line {} of the 1 GiB log: {} bytes of text, structured {}",
        data::DEEP_LINE,
        out.text.len(),
        Value::Object(out.structured.clone())
    );

    let mut group = c.benchmark_group("read_file");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    group.bench_function("first_page_40MiB_line", |b| {
        b.iter(|| call(&rt, &tool, &long));
    });
    group.finish();

    let mut group = c.benchmark_group("line_5M_of_1GiB");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(10));
    group.bench_function("fresh_index", |b| {
        b.iter_batched(
            || read_tool(&roots),
            |fresh| call(&rt, &fresh, &deep),
            BatchSize::PerIteration,
        );
    });
    let warm = read_tool(&roots);
    call(&rt, &warm, &deep);
    group.measurement_time(Duration::from_secs(3));
    group.sampling_mode(SamplingMode::Auto);
    group.bench_function("warm_index", |b| {
        b.iter(|| call(&rt, &warm, &deep));
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
