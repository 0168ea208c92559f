//! `list_dir`: sorted entries with type and size, paged like `read_file`.

use serde_json::json;

use crate::support::{Project, field, next_offset, truncated};

fn tree(p: &Project) {
    p.write("b.txt", "bee\n");
    p.write("a.rs", "fn a() {}\n");
    p.write("Zed.md", "");
    p.write("src/lib.rs", "//! lib\n");
    p.write("data/big.bin", vec![7u8; 3 * 1024 + 100]);
    fs_err::create_dir(p.root.join("empty")).unwrap();
    p.symlink("src/lib.rs", "link.rs");
    p.symlink("nowhere", "broken");
}

#[tokio::test]
async fn snapshot_of_a_folder() {
    let p = Project::new();
    tree(&p);
    let out = p.list_ok(json!({})).await;
    insta::assert_snapshot!("list_dir_root", out.text);
    assert!(!truncated(&out));
    assert_eq!(field(&out, "next_offset"), None);
    assert_eq!(field(&out, "total"), Some(json!(8)));
    assert_eq!(field(&out, "scanned_count"), Some(json!(8)));
    assert_eq!(field(&out, "path"), Some(json!(".")));
    assert!(field(&out, "elapsed_ms").is_some_and(|v| v.is_u64()));
}

#[tokio::test]
async fn entries_are_sorted_with_type_and_size() {
    let p = Project::new();
    tree(&p);
    let out = p.list_ok(json!({ "path": "." })).await;
    let lines: Vec<&str> = out.text.lines().collect();
    assert_eq!(
        lines,
        [
            "Zed.md  (0 bytes)",
            "a.rs  (10 bytes)",
            "b.txt  (4 bytes)",
            "broken -> nowhere",
            "data/",
            "empty/",
            "link.rs -> src/lib.rs",
            "src/",
        ]
    );
    let out = p.list_ok(json!({ "path": "data" })).await;
    assert_eq!(out.text, "big.bin  (3.1 KiB)\n");
    assert_eq!(field(&out, "path"), Some(json!("data")));
    let out = p.list_ok(json!({ "path": "empty" })).await;
    assert_eq!(out.text, "(`empty` is empty)\n");
    assert_eq!(field(&out, "total"), Some(json!(0)));
}

#[tokio::test]
async fn defaults_to_the_root() {
    let p = Project::new();
    p.write("only.txt", "x");
    for args in [json!({}), json!({ "path": "" }), json!({ "path": "." })] {
        let out = p.list_ok(args).await;
        assert_eq!(out.text, "only.txt  (1 bytes)\n");
    }
    let out = p.list_ok(json!({ "path": p.root.to_str().unwrap() })).await;
    assert_eq!(out.text, "only.txt  (1 bytes)\n");
}

#[tokio::test]
async fn pagination_with_limit_and_next_offset() {
    let p = Project::new();
    for i in 0..25 {
        p.write(&format!("f{i:02}.txt"), "");
    }
    let out = p.list_ok(json!({ "limit": 10 })).await;
    assert_eq!(out.text.lines().count(), 11, "{}", out.text);
    assert!(out.text.starts_with("f00.txt  (0 bytes)\n"));
    assert!(
        out.text
            .ends_with("[truncated: showing entries 1-10 of 25; continue with offset=11]\n"),
        "{}",
        out.text
    );
    assert!(truncated(&out));
    assert_eq!(field(&out, "reason"), Some(json!("result_limit")));
    assert_eq!(next_offset(&out), Some(11));
    assert_eq!(field(&out, "total"), Some(json!(25)));

    // All pages together are every entry once, in order.
    let mut seen = Vec::new();
    let mut offset = 1;
    loop {
        let out = p.list_ok(json!({ "offset": offset, "limit": 10 })).await;
        seen.extend(
            out.text
                .lines()
                .filter(|l| !l.starts_with('['))
                .map(str::to_owned),
        );
        match next_offset(&out) {
            Some(n) => offset = n,
            None => {
                assert!(!truncated(&out));
                assert_eq!(field(&out, "reason"), None);
                break;
            }
        }
    }
    let want: Vec<String> = (0..25).map(|i| format!("f{i:02}.txt  (0 bytes)")).collect();
    assert_eq!(seen, want);
    // A page that ends exactly at the last entry is not cut.
    let out = p.list_ok(json!({ "offset": 16, "limit": 10 })).await;
    assert!(!truncated(&out));
    assert_eq!(out.text.lines().count(), 10);
}

#[tokio::test]
async fn offset_past_the_end_is_an_error() {
    let p = Project::new();
    p.write("a", "");
    p.write("b", "");
    let msg = p.list_err(json!({ "offset": 3 })).await;
    assert!(msg.contains("offset 3 is past the end"), "{msg}");
    assert!(msg.contains("2 entries"), "{msg}");
    let out = p.list_ok(json!({ "offset": 2 })).await;
    assert_eq!(out.text, "b  (0 bytes)\n");
}

#[tokio::test]
async fn file_path_is_refused_pointing_to_read_file() {
    let p = Project::new();
    p.write("notes.txt", "hi\n");
    let msg = p.list_err(json!({ "path": "notes.txt" })).await;
    assert!(msg.contains("read_file"), "{msg}");
    let msg = p.list_err(json!({ "path": "missing" })).await;
    assert!(msg.contains("does not exist"), "{msg}");
}

#[tokio::test]
async fn long_names_hit_the_byte_limit_first() {
    let p = Project::new();
    // 400 entries of ~210 bytes each: ~84 KB, over 50 KiB long before 2,000 entries.
    for i in 0..400 {
        p.write(&format!("{i:03}_{}", "n".repeat(200)), "");
    }
    let out = p.list_ok(json!({})).await;
    assert!(truncated(&out));
    assert_eq!(field(&out, "reason"), Some(json!("payload_limit")));
    let shown = out.text.lines().filter(|l| !l.starts_with('[')).count() as u64;
    assert!(shown > 100 && shown < 400, "{shown}");
    assert_eq!(next_offset(&out), Some(shown + 1));
    let body = out.text.len() - out.text.lines().last().unwrap().len() - 1;
    assert!(body <= 50 * 1024, "{body}");
    let rest = p.list_ok(json!({ "offset": shown + 1 })).await;
    assert!(
        rest.text.starts_with(&format!("{shown:03}_")),
        "{}",
        rest.text
    );
}

#[tokio::test]
async fn scan_limit_is_reported() {
    let p = Project::new();
    for i in 0..12 {
        p.write(&format!("f{i:02}"), "");
    }
    let limits = toolgate_fs::ReadLimits {
        max_scan_entries: 5,
        ..Default::default()
    };
    let (_, list) = crate::support::tools_with(std::sync::Arc::clone(&p.roots), limits);
    let out = crate::support::call(&list, json!({})).await.unwrap();
    assert!(truncated(&out));
    assert_eq!(field(&out, "reason"), Some(json!("scan_limit")));
    assert_eq!(field(&out, "scanned_count"), Some(json!(5)));
    assert_eq!(field(&out, "total"), None);
    assert_eq!(out.text.lines().count(), 6, "{}", out.text);
    assert!(out.text.contains("more than 5 entries"), "{}", out.text);
}
