//! Deadline and cancellation (the time budget): a search over a tree too big to finish
//! stops when its deadline passes or its call is cancelled, and answers with what it found,
//! `reason: timeout` and a cursor. No timing is asserted: a 1 ms deadline cannot cover a
//! walk of thousands of entries, and a cancelled call must say it was cut.

use std::fmt::Write as _;

use serde_json::json;
use toolgate_core::CallContext;

use crate::support::{Project, assert_cut, str_field, u64_field};

const DIRS: usize = 100;
const FILES_PER_DIR: usize = 100;

/// 10,000 files of ~2 KiB in 100 folders, every one holding `needle` on its last line.
fn big_tree(p: &Project) {
    let mut body = String::new();
    for i in 0..60 {
        writeln!(body, "line {i} of some source text that does not match").unwrap();
    }
    body.push_str("the needle\n");
    for d in 0..DIRS {
        let dir = p.root.join(format!("d{d:03}"));
        fs_err::create_dir(&dir).unwrap();
        for f in 0..FILES_PER_DIR {
            fs_err::write(dir.join(format!("f{f:03}.txt")), &body).unwrap();
        }
    }
}

const ENTRIES: u64 = (DIRS * (FILES_PER_DIR + 1)) as u64;

#[tokio::test]
async fn a_passed_deadline_stops_both_searches_with_reason_timeout() {
    let p = Project::new();
    big_tree(&p);
    let s = p.session();
    let out = s
        .ok(
            "search_files",
            json!({ "query": "txt", "timeout_ms": 1, "limit": 500 }),
        )
        .await;
    assert_cut(&out, Some("timeout"));
    assert!(u64_field(&out, "scanned_count").unwrap() < ENTRIES);
    assert_eq!(u64_field(&out, "total"), None);
    assert!(out.text.contains("deadline passed"), "{}", out.text);

    let out = s
        .ok(
            "grep",
            json!({ "pattern": "needle", "timeout_ms": 1, "limit": 500 }),
        )
        .await;
    assert_cut(&out, Some("timeout"));
    assert!(u64_field(&out, "scanned_count").unwrap() < ENTRIES);
    assert!(u64_field(&out, "files_searched").unwrap() < ENTRIES);
    assert_eq!(u64_field(&out, "total"), None);

    // Without the short deadline the same search completes (the tree is finite).
    let out = s
        .ok("search_files", json!({ "query": "d000/", "limit": 500 }))
        .await;
    assert_cut(&out, None);
    assert_eq!(u64_field(&out, "total"), Some(FILES_PER_DIR as u64));
}

/// A cursor's position: (path by components, line; `end` last).
fn position(cursor: &str) -> (std::path::PathBuf, u64) {
    let (path, line) = cursor.rsplit_once(':').unwrap();
    (path.into(), line.parse().unwrap_or(u64::MAX))
}

#[tokio::test]
async fn a_timed_out_grep_continues_from_its_cursor_without_gaps() {
    let p = Project::new();
    for d in 0..3 {
        for f in 0..FILES_PER_DIR {
            p.write(&format!("d{d:03}/f{f:03}.txt"), "text\nthe needle\n");
        }
    }
    let s = p.session();
    // Pages of one millisecond each until the 303 entries are covered; whatever each page
    // managed (every page gets at least one entry or file done), the cursors chain into
    // exactly one match per file.
    let mut seen = Vec::new();
    let mut args = json!({ "pattern": "needle", "timeout_ms": 1, "limit": 500 });
    let mut cut_pages = 0;
    for _ in 0..20_000 {
        let out = s.ok("grep", args.clone()).await;
        seen.extend(
            out.text
                .lines()
                .filter(|l| l.starts_with('d') && l.ends_with(".txt"))
                .map(str::to_owned),
        );
        match str_field(&out, "cursor").as_deref() {
            Some(c) => {
                assert_eq!(
                    str_field(&out, "reason").as_deref(),
                    Some("timeout"),
                    "{}",
                    out.text
                );
                // Regression: a walk stopped on a folder above the cursor handed back that
                // folder, a position before the cursor, and paging started over.
                if let Some(before) = args.get("cursor").and_then(|v| v.as_str()) {
                    assert!(
                        position(c) > position(before),
                        "cursor went from {before} to {c}"
                    );
                }
                cut_pages += 1;
                args["cursor"] = json!(c);
            }
            None => {
                assert_cut(&out, None);
                break;
            }
        }
    }
    // How many pages it takes depends on the machine; on any of them the pages add up.
    eprintln!("{cut_pages} pages cut by the deadline");
    let expected: Vec<String> = (0..3)
        .flat_map(|d| (0..FILES_PER_DIR).map(move |f| format!("d{d:03}/f{f:03}.txt")))
        .collect();
    let dups: Vec<_> = seen
        .iter()
        .enumerate()
        .filter(|(i, f)| seen[..*i].contains(f))
        .map(|(_, f)| f.clone())
        .collect();
    let missing: Vec<_> = expected.iter().filter(|f| !seen.contains(f)).collect();
    assert_eq!(seen, expected, "duplicates {dups:?}, missing {missing:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_stops_and_says_so() {
    let p = Project::new();
    big_tree(&p);
    let s = p.session();
    // Cancelled before it starts: nothing is scanned.
    let ctx = CallContext::unattended();
    ctx.cancel.cancel();
    for (tool, args) in [
        ("grep", json!({ "pattern": "needle", "limit": 500 })),
        ("search_files", json!({ "query": "txt", "limit": 500 })),
    ] {
        let out = s.call_with(tool, args, ctx.clone()).await.unwrap();
        assert_cut(&out, Some("timeout"));
        assert_eq!(u64_field(&out, "scanned_count"), Some(0), "{tool}");
    }
    // Cancelled while it runs (a search for text that is nowhere must read all 10,000
    // files): it stops early and says so.
    let ctx = CallContext::unattended();
    let cancel = ctx.cancel.clone();
    let running = {
        let s = p.session();
        tokio::spawn(async move {
            s.call_with("grep", json!({ "pattern": "nowhere to be found" }), ctx)
                .await
        })
    };
    tokio::task::yield_now().await;
    cancel.cancel();
    let out = running.await.unwrap().unwrap();
    assert_cut(&out, Some("timeout"));
    assert!(u64_field(&out, "files_searched").unwrap() < ENTRIES);
}
