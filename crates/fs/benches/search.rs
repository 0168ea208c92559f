//! Walk-and-open cost of the file tools (what descriptor-based confinement costs), measured
//! through the tools themselves on a tokio runtime, over a generated tree of 20,000 small
//! source-like files in 200 folders (`target/bench-data/fs-tree`, made once):
//!
//! - `grep_no_match`: a literal found nowhere — every file is walked, opened and read;
//! - `search_files_glob`: `*.rs` over the whole tree — the walk alone (names only);
//! - `read_file_small`: one 2 KiB file — the fixed cost of one call (resolve, open, sniff);
//! - `list_dir_100`: one folder of 100 entries — directory read plus one stat per entry.
//!
//! Run with `cargo bench -p toolgate-fs --bench search`; compare two builds by running it on
//! each (criterion keeps the previous run as the baseline and prints the change).

#![allow(
    clippy::expect_used,
    clippy::print_stderr,
    reason = "a benchmark that cannot set up should stop loudly, and it reports to its user"
)]

#[allow(dead_code, reason = "the read benchmark's inputs are not used here")]
#[path = "support/data.rs"]
mod data;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use toolgate_core::{CallContext, DynTool, ToolOutput};
use toolgate_fs::{FsLimits, Roots, SearchLimits, builtin_fs_tools_with};

const DIRS: usize = 200;
const FILES_PER_DIR: usize = 100;

/// The tree, generated once (a marker file records that it is complete).
fn tree(dir: &Path) -> PathBuf {
    let root = dir.join("fs-tree");
    let done = root.join(".complete");
    if done.exists() {
        return root;
    }
    fs_err::create_dir_all(&root).expect("tree folder");
    fs_err::write(root.join(".gitignore"), "*.tmp\n").expect(".gitignore");
    for d in 0..DIRS {
        let folder = root.join(format!("mod_{d:03}"));
        fs_err::create_dir_all(&folder).expect("folder");
        for f in 0..FILES_PER_DIR {
            let mut out = std::io::BufWriter::new(
                fs_err::File::create(folder.join(format!("file_{f:03}.rs"))).expect("file"),
            );
            for line in 0..40 {
                writeln!(
                    out,
                    "    let value_{line} = compute({d}, {f}, {line}); // ordinary source text"
                )
                .expect("write");
            }
        }
    }
    fs_err::write(&done, "").expect("marker");
    root
}

fn tool(tools: &[Arc<dyn DynTool>], name: &str) -> Arc<dyn DynTool> {
    tools
        .iter()
        .find(|t| t.spec().name == name)
        .cloned()
        .expect("built-in tool")
}

fn call(rt: &tokio::runtime::Runtime, tool: &Arc<dyn DynTool>, args: &Value) -> ToolOutput {
    rt.block_on(tool.call(args.clone(), CallContext::unattended()))
        .expect("the call succeeds")
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let root = tree(&data::dir().expect("bench data folder"));
    let roots = Arc::new(Roots::new([&root]).expect("bench root"));
    let limits = FsLimits {
        search: SearchLimits {
            max_scanned: 1_000_000,
            ..SearchLimits::default()
        },
        ..FsLimits::default()
    };
    let tools = builtin_fs_tools_with(roots, limits, None);
    let (grep, find, read, list) = (
        tool(&tools, "grep"),
        tool(&tools, "search_files"),
        tool(&tools, "read_file"),
        tool(&tools, "list_dir"),
    );
    let no_match = json!({ "pattern": "needle_found_nowhere", "literal": true });
    let glob = json!({ "query": "*.rs", "limit": 10 });
    let small = json!({ "path": "mod_100/file_050.rs" });
    let folder = json!({ "path": "mod_100" });
    let out = call(&rt, &grep, &no_match);
    eprintln!("grep: {}", Value::Object(out.structured.clone()));
    let out = call(&rt, &find, &glob);
    eprintln!("search_files: {}", Value::Object(out.structured.clone()));

    let mut group = c.benchmark_group("fs_tools");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(6));
    group.bench_function("grep_no_match", |b| b.iter(|| call(&rt, &grep, &no_match)));
    group.bench_function("search_files_glob", |b| b.iter(|| call(&rt, &find, &glob)));
    group.bench_function("read_file_small", |b| b.iter(|| call(&rt, &read, &small)));
    group.bench_function("list_dir_100", |b| b.iter(|| call(&rt, &list, &folder)));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
