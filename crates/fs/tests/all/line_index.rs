//! The per-file line index: random access stays correct when reused, and a changed file never
//! sees a stale index.

use std::fmt::Write as _;
use std::time::{Duration, SystemTime};

use serde_json::json;

use crate::support::{Project, field, next_offset, numbered, truncated};

fn log_lines(range: std::ops::RangeInclusive<usize>, tag: &str) -> String {
    let mut s = String::new();
    for i in range {
        // Varying widths so that byte offsets of a line differ between versions.
        writeln!(s, "{tag} {i} {}", "=".repeat(i % 13)).unwrap();
    }
    s
}

fn expect_line(tag: &str, i: usize) -> String {
    format!("{tag} {i} {}", "=".repeat(i % 13))
}

async fn line_at(p: &Project, path: &str, offset: u64) -> String {
    let out = p
        .read_ok(json!({ "path": path, "offset": offset, "limit": 1 }))
        .await;
    let page = numbered(&out.text);
    assert_eq!(page.len(), 1, "{}", out.text);
    assert_eq!(page[0].0, offset);
    page[0].1.clone()
}

#[tokio::test]
async fn reading_backwards_reuses_the_index_correctly() {
    let p = Project::new();
    p.write("log.txt", log_lines(1..=20_000, "v1"));
    let out = p
        .read_ok(json!({ "path": "log.txt", "offset": 10_000 }))
        .await;
    let page = numbered(&out.text);
    assert_eq!(page.len(), 2_000);
    for (k, (n, body)) in page.iter().enumerate() {
        assert_eq!(*n, 10_000 + k as u64);
        assert_eq!(*body, expect_line("v1", 10_000 + k));
    }
    assert_eq!(next_offset(&out), Some(12_000));
    // Earlier, later, at checkpoint boundaries and around them.
    for offset in [
        9_000, 1, 4_096, 4_097, 4_098, 8_193, 12_289, 19_999, 20_000, 15_000,
    ] {
        assert_eq!(
            line_at(&p, "log.txt", offset).await,
            expect_line("v1", offset as usize),
            "line {offset}"
        );
    }
    let out = p
        .read_ok(json!({ "path": "log.txt", "offset": 9_000, "limit": 5 }))
        .await;
    let got: Vec<String> = numbered(&out.text).into_iter().map(|l| l.1).collect();
    let want: Vec<String> = (9_000..9_005).map(|i| expect_line("v1", i)).collect();
    assert_eq!(got, want);
    let msg = p
        .read_err(json!({ "path": "log.txt", "offset": 20_001 }))
        .await;
    assert!(msg.contains("has 20000 lines"), "{msg}");
}

#[tokio::test]
async fn appended_content_is_seen() {
    let p = Project::new();
    let path = p.write("log.txt", log_lines(1..=20_000, "v1"));
    assert_eq!(
        line_at(&p, "log.txt", 15_000).await,
        expect_line("v1", 15_000)
    );
    let msg = p
        .read_err(json!({ "path": "log.txt", "offset": 20_001 }))
        .await;
    assert!(msg.contains("has 20000 lines"), "{msg}");
    // The index knew the total was 20,000; after appending it must not say so any more.
    let mut f = fs_err::OpenOptions::new().append(true).open(&path).unwrap();
    std::io::Write::write_all(&mut f, log_lines(20_001..=20_010, "v1").as_bytes()).unwrap();
    drop(f);
    assert_eq!(
        line_at(&p, "log.txt", 20_005).await,
        expect_line("v1", 20_005)
    );
    let out = p
        .read_ok(json!({ "path": "log.txt", "offset": 19_000 }))
        .await;
    assert_eq!(field(&out, "total"), Some(json!(20_010)));
    assert!(!truncated(&out));
}

#[tokio::test]
async fn changed_content_is_seen() {
    let p = Project::new();
    p.write("log.txt", log_lines(1..=20_000, "v1"));
    assert_eq!(
        line_at(&p, "log.txt", 10_000).await,
        expect_line("v1", 10_000)
    );
    // Rewritten in place with a different size.
    p.write("log.txt", log_lines(1..=20_000, "version2"));
    assert_eq!(
        line_at(&p, "log.txt", 10_000).await,
        expect_line("version2", 10_000)
    );
    assert_eq!(
        line_at(&p, "log.txt", 9_000).await,
        expect_line("version2", 9_000)
    );
}

#[tokio::test]
async fn same_size_replacement_is_seen() {
    let p = Project::new();
    let path = p.write("log.txt", log_lines(1..=20_000, "v1"));
    assert_eq!(
        line_at(&p, "log.txt", 10_000).await,
        expect_line("v1", 10_000)
    );
    // Same bytes, but the first line split in two: every later line moves down by one.
    let shifted = log_lines(1..=20_000, "v1").replacen("v1 1 =\n", "v1 1\n=\n", 1);
    assert_eq!(shifted.len(), log_lines(1..=20_000, "v1").len());
    // Replaced atomically (new inode), as editors and write_file do.
    let tmp = p.write("log.txt.tmp", &shifted);
    fs_err::rename(&tmp, &path).unwrap();
    assert_eq!(
        line_at(&p, "log.txt", 10_001).await,
        expect_line("v1", 10_000)
    );
    assert_eq!(line_at(&p, "log.txt", 2).await, "=");
    // Rewritten in place (same inode, same size): the modification time tells.
    assert_eq!(
        line_at(&p, "log.txt", 9_001).await,
        expect_line("v1", 9_000)
    );
    let original = log_lines(1..=20_000, "v1");
    let f = fs_err::OpenOptions::new().write(true).open(&path).unwrap();
    std::io::Write::write_all(&mut &f, original.as_bytes()).unwrap();
    f.file()
        .set_modified(SystemTime::now() + Duration::from_secs(10))
        .unwrap();
    drop(f);
    assert_eq!(
        line_at(&p, "log.txt", 9_000).await,
        expect_line("v1", 9_000)
    );
    assert_eq!(
        line_at(&p, "log.txt", 10_000).await,
        expect_line("v1", 10_000)
    );
}

#[tokio::test]
async fn large_file_pages_without_knowing_the_total() {
    // Over 8 MiB remain after the first page, so the read stops without counting all lines.
    let p = Project::new();
    let n = 1_000_000;
    p.write("big.log", log_lines(1..=n, "row"));
    let out = p.read_ok(json!({ "path": "big.log" })).await;
    assert!(truncated(&out));
    assert_eq!(next_offset(&out), Some(2_001));
    assert_eq!(field(&out, "total"), None);
    assert!(
        out.text
            .ends_with("[truncated at the 2000-line page limit: showing lines 1-2000; continue with offset=2001]\n"),
        "{}",
        out.text.lines().last().unwrap()
    );
    assert_eq!(
        line_at(&p, "big.log", 654_321).await,
        expect_line("row", 654_321)
    );
    assert_eq!(
        line_at(&p, "big.log", n as u64).await,
        expect_line("row", n)
    );
    let out = p
        .read_ok(json!({ "path": "big.log", "offset": 999_000 }))
        .await;
    assert_eq!(field(&out, "total"), Some(json!(n)));
    assert!(!truncated(&out));
    let msg = p
        .read_err(json!({ "path": "big.log", "offset": n + 1 }))
        .await;
    assert!(msg.contains(&format!("has {n} lines")), "{msg}");
}
