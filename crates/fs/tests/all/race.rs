//! The symlink-swap race: a helper thread swaps a real folder `race/` with a symlink to a
//! folder outside the root, `renameat2(RENAME_EXCHANGE)` in a tight loop, while every file
//! tool works on paths under `race/`. Resolving a path and then opening it again by path
//! let 32 of 300 reads, 137 of 300 greps and 42 of 300 writes through to the outside
//! folder; with descriptor-based opening none may: 0 bytes or names from outside, 0 files
//! created outside. Calls may be refused while the tree is changing under them.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rustix::fs::{Mode, OFlags, RenameFlags};
use serde_json::{Value, json};

use crate::support::{Project, SECRET, Session, everything};

/// Calls per tool.
const CALLS: usize = 2_000;

/// A name that exists only in the outside folder: seeing it in a result is a leak.
const OUTSIDE_ONLY: &str = "OUTSIDE-ONLY-NAME.txt";

/// Swaps `a` and `b` in `dir` until dropped.
struct Swapper {
    stop: Arc<AtomicBool>,
    swaps: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Swapper {
    fn start(dir: &Path, a: &'static str, b: &'static str) -> Self {
        let fd = rustix::fs::open(
            dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = Arc::new(AtomicU64::new(0));
        let thread = {
            let (stop, swaps) = (Arc::clone(&stop), Arc::clone(&swaps));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    rustix::fs::renameat_with(&fd, a, &fd, b, RenameFlags::EXCHANGE).unwrap();
                    swaps.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        Self {
            stop,
            swaps,
            thread: Some(thread),
        }
    }

    /// Stops swapping and returns how many swaps were done. An even count leaves the
    /// folders as they started.
    fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
        self.swaps.load(Ordering::Relaxed)
    }
}

impl Drop for Swapper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Every file and folder below `dir`, with file contents.
fn snapshot(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in fs_err::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(dir).unwrap().display().to_string();
            if path.is_dir() {
                out.insert(rel + "/", String::new());
                todo.push(path);
            } else {
                out.insert(rel, fs_err::read_to_string(&path).unwrap_or_default());
            }
        }
    }
    out
}

/// A project whose root holds `race/` (a real folder) and `swap` (a symlink to the outside
/// folder), both with the same layout, so that every path under `race/` exists on both sides.
fn race_project() -> Project {
    let p = Project::new();
    p.write("race/f.txt", "inside f\n");
    p.write("race/e.txt", "AAA inside\n");
    p.write("race/inner/g.txt", "inside g\n");
    for (rel, text) in [
        ("f.txt", format!("{SECRET} f\n")),
        ("e.txt", format!("AAA {SECRET}\n")),
        ("inner/g.txt", format!("{SECRET} g\n")),
        (OUTSIDE_ONLY, format!("{SECRET}\n")),
    ] {
        let path = p.outside.join(rel);
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(path, text).unwrap();
    }
    p.symlink(&p.outside, "swap");
    p
}

/// Runs `calls` of one tool against the race; returns (succeeded, refused). Panics on the
/// first result that carries a byte or a name from outside.
async fn hammer(
    s: &Session,
    tool: &str,
    args: impl Fn(usize) -> Value,
    calls: usize,
) -> (usize, usize) {
    let (mut ok, mut refused) = (0, 0);
    for i in 0..calls {
        let args = args(i);
        let result = s.call(tool, args.clone()).await;
        let all = everything(&result);
        assert!(
            !all.contains(SECRET) && !all.contains(OUTSIDE_ONLY),
            "{tool} {args} (call {i}) leaked from outside: {all}"
        );
        match result {
            Ok(out) if !out.is_error => ok += 1,
            _ => refused += 1,
        }
    }
    (ok, refused)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn symlink_swap_race_leaks_nothing_and_writes_nothing_outside() {
    let p = race_project();
    let outside_before = snapshot(&p.outside);
    let s = p.session();
    let swapper = Swapper::start(&p.root, "race", "swap");
    let mut figures = Vec::new();

    let read = |i: usize| {
        let path = if i.is_multiple_of(2) {
            "race/f.txt"
        } else {
            "race/inner/g.txt"
        };
        json!({ "path": path })
    };
    figures.push(("read_file", hammer(&s, "read_file", read, CALLS).await));
    let grep = |i: usize| match i % 3 {
        0 => json!({ "pattern": "TOP-SECRET|inside" }),
        1 => json!({ "pattern": "TOP-SECRET|inside", "path": "race" }),
        _ => json!({ "pattern": "inside", "path": "race/inner" }),
    };
    figures.push(("grep", hammer(&s, "grep", grep, CALLS).await));
    let find = |i: usize| match i % 2 {
        0 => json!({ "query": "txt" }),
        _ => json!({ "query": "*", "path": "race" }),
    };
    figures.push((
        "search_files",
        hammer(&s, "search_files", find, CALLS).await,
    ));
    let list = |i: usize| match i % 2 {
        0 => json!({ "path": "race" }),
        _ => json!({ "path": "race/inner" }),
    };
    figures.push(("list_dir", hammer(&s, "list_dir", list, CALLS).await));
    let write = |i: usize| match i % 2 {
        0 => json!({ "path": format!("race/w_{i}.txt"), "content": "new\n" }),
        _ => json!({ "path": format!("race/new_{i}/deeper/w.txt"), "content": "new\n" }),
    };
    figures.push(("write_file", hammer(&s, "write_file", write, CALLS).await));
    let edit = |i: usize| {
        let (old, new) = if i.is_multiple_of(2) {
            ("AAA", "BBB")
        } else {
            ("BBB", "AAA")
        };
        json!({ "path": "race/e.txt", "old_string": old, "new_string": new })
    };
    figures.push(("edit_file", hammer(&s, "edit_file", edit, CALLS).await));

    let swaps = swapper.finish();
    assert!(swaps > 1_000, "the race barely ran: {swaps} swaps");
    assert_eq!(
        snapshot(&p.outside),
        outside_before,
        "something was created or changed outside the root"
    );
    for (tool, (ok, refused)) in &figures {
        eprintln!("race: {tool}: {ok} succeeded, {refused} refused, 0 leaked ({swaps} swaps)");
        // The tools keep working while the tree changes under them.
        assert!(*ok > 0, "{tool} never succeeded under the race");
    }
}
