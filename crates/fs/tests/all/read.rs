//! `read_file` rules: paging, cut lines, binary files, media (see docs/tools.md).

use std::fmt::Write as _;

use serde_json::json;
use toolgate_core::Media;

use crate::support::{Project, field, next_offset, numbered, truncated};

/// `n` lines `line 1` … `line n`, each ending in `\n`.
fn lines(n: usize) -> String {
    let mut s = String::new();
    for i in 1..=n {
        writeln!(s, "line {i}").unwrap();
    }
    s
}

/// Reads `path` page by page via `next_offset` and returns the lines and the page count.
async fn read_all(p: &Project, path: &str, limit: Option<u64>) -> (Vec<(u64, String)>, usize) {
    let mut all = Vec::new();
    let mut offset = 1;
    let mut pages = 0;
    loop {
        let mut args = json!({ "path": path, "offset": offset });
        if let Some(limit) = limit {
            args["limit"] = json!(limit);
        }
        let out = p.read_ok(args).await;
        pages += 1;
        let page = numbered(&out.text);
        assert_eq!(
            page.first().map(|l| l.0),
            Some(offset),
            "page starts at offset"
        );
        all.extend(page);
        match next_offset(&out) {
            Some(next) => {
                assert!(truncated(&out));
                assert_eq!(next, all.last().unwrap().0 + 1, "no gap, no overlap");
                offset = next;
            }
            None => {
                assert!(!truncated(&out));
                break;
            }
        }
    }
    (all, pages)
}

#[tokio::test]
async fn lines_are_numbered_cat_n_style() {
    let p = Project::new();
    p.write("a.txt", "first\n\tindented\n\nlast\n");
    let out = p.read_ok(json!({ "path": "a.txt" })).await;
    assert_eq!(
        out.text,
        "     1\tfirst\n     2\t\tindented\n     3\t\n     4\tlast\n"
    );
    assert!(!truncated(&out));
    assert_eq!(field(&out, "next_offset"), None);
    assert_eq!(field(&out, "reason"), None);
    assert_eq!(field(&out, "total"), Some(json!(4)));
    assert_eq!(field(&out, "path"), Some(json!("a.txt")));
    assert!(field(&out, "elapsed_ms").is_some_and(|v| v.is_u64()));
    assert!(out.media.is_empty());
}

#[tokio::test]
async fn snapshot_of_a_cut_page() {
    let p = Project::new();
    let mut content = String::from("fn main() {\r\n    println!(\"hi\");\r\n}\r\n");
    content.push_str(&"x".repeat(2_005));
    content.push('\n');
    content.push_str("tail\n");
    p.write("src/main.rs", content);
    let out = p
        .read_ok(json!({ "path": "src/main.rs", "offset": 2, "limit": 3 }))
        .await;
    // 2,000 x's in a row say nothing a reviewer can check by eye.
    insta::with_settings!({ filters => vec![("x{2000}", "[2000 × x]")] }, {
        insta::assert_snapshot!("read_file_cut_page", out.text);
    });
    assert_eq!(next_offset(&out), Some(5));
    assert_eq!(field(&out, "reason"), Some(json!("result_limit")));
}

#[tokio::test]
async fn line_limit_truncates_with_next_offset() {
    let p = Project::new();
    p.write("big.txt", lines(2_500));
    let out = p.read_ok(json!({ "path": "big.txt" })).await;
    let page = numbered(&out.text);
    assert_eq!(page.len(), 2_000);
    assert_eq!(page[0], (1, "line 1".to_owned()));
    assert_eq!(page[1_999], (2_000, "line 2000".to_owned()));
    assert!(truncated(&out));
    assert_eq!(field(&out, "reason"), Some(json!("result_limit")));
    assert_eq!(next_offset(&out), Some(2_001));
    assert_eq!(field(&out, "total"), Some(json!(2_500)));
    assert!(
        out.text.ends_with(
            "[truncated at the 2000-line page limit: showing lines 1-2000 of 2500; continue with offset=2001]\n"
        ),
        "{}",
        &out.text[out.text.len() - 200..]
    );
    // A limit above the maximum is capped at it.
    let out = p
        .read_ok(json!({ "path": "big.txt", "limit": 10_000 }))
        .await;
    assert_eq!(numbered(&out.text).len(), 2_000);
    assert_eq!(next_offset(&out), Some(2_001));
}

#[tokio::test]
async fn byte_limit_hit_first_gives_payload_limit() {
    let p = Project::new();
    // 1,000 lines of 100 characters: ~107 KB numbered, over 50 KiB long before 2,000 lines.
    let mut content = String::new();
    for i in 0..1_000 {
        writeln!(content, "{i:04}{}", "y".repeat(96)).unwrap();
    }
    p.write("wide.txt", &content);
    let out = p.read_ok(json!({ "path": "wide.txt" })).await;
    assert!(truncated(&out));
    assert_eq!(field(&out, "reason"), Some(json!("payload_limit")));
    let page = numbered(&out.text);
    let shown = page.len() as u64;
    assert!(shown > 100 && shown < 1_000, "{shown}");
    assert_eq!(next_offset(&out), Some(shown + 1));
    let body_len = out.text.len() - out.text.lines().last().unwrap().len() - 1;
    assert!(body_len <= 50 * 1024, "{body_len}");
    assert!(out.text.contains("[truncated at the 50 KiB page limit"));
    // Paging through reproduces the file exactly.
    let (all, pages) = read_all(&p, "wide.txt", None).await;
    assert!(pages >= 3);
    let expect: Vec<String> = content.lines().map(str::to_owned).collect();
    assert_eq!(all.iter().map(|l| l.1.clone()).collect::<Vec<_>>(), expect);
}

#[tokio::test]
async fn long_line_is_cut_with_a_marker_naming_its_length() {
    let p = Project::new();
    let long = "é".repeat(2_500);
    p.write(
        "long.txt",
        format!("short\n{long}\n{}\n", "z".repeat(2_000)),
    );
    let out = p.read_ok(json!({ "path": "long.txt" })).await;
    let page = numbered(&out.text);
    assert_eq!(page.len(), 3);
    assert_eq!(
        page[1].1,
        format!(
            "{} … [line cut: showing 2000 of 2500 characters]",
            "é".repeat(2_000)
        )
    );
    // Exactly at the limit: shown whole, no marker.
    assert_eq!(page[2].1, "z".repeat(2_000));
    assert!(!truncated(&out));
}

#[tokio::test]
async fn crlf_line_of_exactly_the_limit_is_not_cut() {
    // Regression: the `\r` of a CRLF line counted as a character, so a 2,000-character line
    // was marked as cut ("showing 2000 of 2001 characters") although nothing was hidden.
    let p = Project::new();
    p.write(
        "crlf.txt",
        format!("{}\r\n{}\r\n", "a".repeat(2_000), "b".repeat(2_001)),
    );
    let out = p.read_ok(json!({ "path": "crlf.txt" })).await;
    let page = numbered(&out.text);
    assert_eq!(page[0].1, "a".repeat(2_000));
    assert_eq!(
        page[1].1,
        format!(
            "{} … [line cut: showing 2000 of 2001 characters]",
            "b".repeat(2_000)
        )
    );
}

#[tokio::test]
async fn page_that_fits_exactly_has_no_pagination() {
    let p = Project::new();
    p.write("exact.txt", lines(2_000));
    let out = p.read_ok(json!({ "path": "exact.txt" })).await;
    assert_eq!(numbered(&out.text).len(), 2_000);
    assert!(!truncated(&out));
    assert_eq!(field(&out, "next_offset"), None);
    assert_eq!(field(&out, "reason"), None);
    assert!(!out.text.contains("[truncated"));
    // The same with an explicit limit and without a final newline.
    p.write("ten.txt", lines(10).trim_end());
    let out = p.read_ok(json!({ "path": "ten.txt", "limit": 10 })).await;
    assert_eq!(numbered(&out.text).len(), 10);
    assert!(!truncated(&out));
    let out = p
        .read_ok(json!({ "path": "ten.txt", "offset": 6, "limit": 5 }))
        .await;
    assert_eq!(numbered(&out.text).len(), 5);
    assert!(!truncated(&out));
    let out = p.read_ok(json!({ "path": "ten.txt", "limit": 9 })).await;
    assert_eq!(next_offset(&out), Some(10));
}

#[tokio::test]
async fn offset_past_the_end_is_an_error_naming_the_line_count() {
    let p = Project::new();
    p.write("five.txt", lines(5));
    for offset in [6, 7, 1_000_000] {
        let msg = p
            .read_err(json!({ "path": "five.txt", "offset": offset }))
            .await;
        assert!(msg.contains("has 5 lines"), "{msg}");
        assert!(msg.contains(&format!("offset {offset}")), "{msg}");
    }
    // The last line itself is fine; asking again after the index knows the total too.
    let out = p.read_ok(json!({ "path": "five.txt", "offset": 5 })).await;
    assert_eq!(out.text, "     5\tline 5\n");
    let msg = p.read_err(json!({ "path": "five.txt", "offset": 6 })).await;
    assert!(msg.contains("has 5 lines"), "{msg}");
    p.write("empty.txt", "");
    let msg = p
        .read_err(json!({ "path": "empty.txt", "offset": 2 }))
        .await;
    assert!(msg.contains("has 0 lines"), "{msg}");
}

#[tokio::test]
async fn pages_concatenate_to_the_file_without_gap_or_overlap() {
    let p = Project::new();
    let mut content = String::new();
    for i in 1..=5_003 {
        // Varying widths, some long, some empty.
        match i % 7 {
            0 => content.push('\n'),
            3 => writeln!(content, "{i} {}", "w".repeat(300)).unwrap(),
            _ => writeln!(content, "row {i}").unwrap(),
        }
    }
    p.write("rows.txt", &content);
    let expect: Vec<(u64, String)> = content
        .lines()
        .enumerate()
        .map(|(i, l)| (i as u64 + 1, l.to_owned()))
        .collect();
    for limit in [None, Some(1), Some(777)] {
        if limit == Some(1) {
            // One line per page would take 5,003 calls; check the start only.
            let out = p
                .read_ok(json!({ "path": "rows.txt", "offset": 4_096, "limit": 1 }))
                .await;
            assert_eq!(numbered(&out.text), vec![expect[4_095].clone()]);
            assert_eq!(next_offset(&out), Some(4_097));
            continue;
        }
        let (all, _) = read_all(&p, "rows.txt", limit).await;
        assert_eq!(all, expect, "limit {limit:?}");
    }
    // Starting mid-file continues exactly.
    let out = p
        .read_ok(json!({ "path": "rows.txt", "offset": 2_500, "limit": 3 }))
        .await;
    assert_eq!(numbered(&out.text), expect[2_499..2_502].to_vec());
}

#[tokio::test]
async fn binary_file_is_refused() {
    let p = Project::new();
    p.write("blob.bin", b"ELF\x00\x01\x02\x03 some text\n\x00\x00");
    let msg = p.read_err(json!({ "path": "blob.bin" })).await;
    assert!(msg.contains("binary file"), "{msg}");
}

#[tokio::test]
async fn png_is_returned_as_media() {
    let p = Project::new();
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend_from_slice(&[0, 0, 0, 13, b'I', b'H', b'D', b'R', 0, 0, 0, 1]);
    p.write("img.png", &png);
    let out = p.read_ok(json!({ "path": "img.png" })).await;
    assert_eq!(out.media.len(), 1);
    match &out.media[0] {
        Media::Image { mime, data } => {
            assert_eq!(mime, "image/png");
            use base64::Engine;
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(data)
                .unwrap();
            assert_eq!(decoded, png);
        }
        other => panic!("expected an image, got {other:?}"),
    }
    assert!(out.text.contains("image/png"), "{}", out.text);
}

#[tokio::test]
async fn pdf_is_returned_as_media() {
    let p = Project::new();
    p.write("doc.pdf", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n");
    let out = p.read_ok(json!({ "path": "doc.pdf" })).await;
    assert!(matches!(&out.media[..], [Media::Blob { mime, .. }] if mime == "application/pdf"));
}

#[tokio::test]
async fn utf8_bom_is_skipped() {
    let p = Project::new();
    p.write("bom.txt", b"\xEF\xBB\xBFfirst\nsecond\n");
    let out = p.read_ok(json!({ "path": "bom.txt" })).await;
    assert_eq!(out.text, "     1\tfirst\n     2\tsecond\n");
    let out = p.read_ok(json!({ "path": "bom.txt", "offset": 2 })).await;
    assert_eq!(out.text, "     2\tsecond\n");
}

#[tokio::test]
async fn crlf_lines_are_shown_without_carriage_return() {
    let p = Project::new();
    p.write("dos.txt", "one\r\ntwo\r\n\r\nthree");
    let out = p.read_ok(json!({ "path": "dos.txt" })).await;
    assert!(!out.text.contains('\r'), "{:?}", out.text);
    assert_eq!(
        out.text,
        "     1\tone\n     2\ttwo\n     3\t\n     4\tthree\n"
    );
}

#[tokio::test]
async fn last_line_without_newline_is_shown() {
    let p = Project::new();
    p.write("nonl.txt", "a\nb");
    let out = p.read_ok(json!({ "path": "nonl.txt" })).await;
    assert_eq!(out.text, "     1\ta\n     2\tb\n");
    assert_eq!(field(&out, "total"), Some(json!(2)));
    p.write("one.txt", "only");
    let out = p.read_ok(json!({ "path": "one.txt" })).await;
    assert_eq!(out.text, "     1\tonly\n");
    // Cut right before it: the next page is that line.
    let out = p.read_ok(json!({ "path": "nonl.txt", "limit": 1 })).await;
    assert_eq!(next_offset(&out), Some(2));
}

#[tokio::test]
async fn empty_file_says_so() {
    let p = Project::new();
    p.write("sub/empty.txt", "");
    let out = p.read_ok(json!({ "path": "sub/empty.txt" })).await;
    assert_eq!(out.text, "(`sub/empty.txt` is empty)\n");
    assert!(!truncated(&out));
    assert_eq!(field(&out, "total"), Some(json!(0)));
}

#[tokio::test]
async fn directory_is_refused_pointing_to_list_dir() {
    let p = Project::new();
    p.write("sub/a.txt", "a\n");
    let msg = p.read_err(json!({ "path": "sub" })).await;
    assert!(msg.contains("directory"), "{msg}");
    assert!(msg.contains("list_dir"), "{msg}");
}

#[tokio::test]
async fn missing_file_suggests_a_close_sibling() {
    let p = Project::new();
    p.write("src/main.rs", "fn main() {}\n");
    p.write("src/lib.rs", "\n");
    let msg = p.read_err(json!({ "path": "src/mian.rs" })).await;
    assert!(msg.contains("does not exist"), "{msg}");
    assert!(msg.contains("did you mean `main.rs`"), "{msg}");
    let msg = p.read_err(json!({ "path": "src/Main.rs" })).await;
    assert!(msg.contains("did you mean `main.rs`"), "{msg}");
    // Nothing close: point at list_dir.
    let msg = p.read_err(json!({ "path": "src/zzzzzzzz.py" })).await;
    assert!(msg.contains("list_dir"), "{msg}");
    let msg = p.read_err(json!({ "path": "src/main.rs/x" })).await;
    assert!(msg.contains("is a file, not a folder"), "{msg}");
}

#[tokio::test]
async fn latin1_content_is_shown_lossily() {
    let p = Project::new();
    p.write("latin1.txt", b"caf\xe9 au lait\nna\xefve\n");
    let out = p.read_ok(json!({ "path": "latin1.txt" })).await;
    assert_eq!(
        out.text,
        "     1\tcaf\u{FFFD} au lait\n     2\tna\u{FFFD}ve\n[note: the file is not valid UTF-8; invalid bytes are shown as \u{FFFD}]\n"
    );
}

#[tokio::test]
async fn utf16_with_bom_is_decoded() {
    let p = Project::new();
    let text = "héllo\r\nwörld ✓\r\n";
    let mut le = vec![0xFF, 0xFE];
    le.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
    let mut be = vec![0xFE, 0xFF];
    be.extend(text.encode_utf16().flat_map(u16::to_be_bytes));
    p.write("le.txt", le);
    p.write("be.txt", be);
    for path in ["le.txt", "be.txt"] {
        let out = p.read_ok(json!({ "path": path })).await;
        assert_eq!(out.text, "     1\théllo\n     2\twörld ✓\n", "{path}");
    }
    let out = p.read_ok(json!({ "path": "le.txt", "offset": 2 })).await;
    assert_eq!(out.text, "     2\twörld ✓\n");
}

#[tokio::test]
async fn crlf_split_across_read_chunks_is_handled() {
    // The page reader reads 256 KiB at a time: put a 2,000-character line's `\r` as the last
    // byte of the first chunk and its `\n` as the first byte of the second.
    let p = Project::new();
    let mut content = String::new();
    for _ in 0..260 {
        content.push_str(&"y".repeat(998));
        content.push_str("\r\n");
    }
    content.push_str(&"w".repeat(141));
    content.push_str("\r\n");
    content.push_str(&"z".repeat(2_000));
    assert_eq!(content.len(), 256 * 1024 - 1);
    content.push_str("\r\nafter\r\n");
    p.write("split.txt", &content);
    let out = p
        .read_ok(json!({ "path": "split.txt", "offset": 262, "limit": 2 }))
        .await;
    assert!(!out.text.contains('\r'));
    assert_eq!(
        numbered(&out.text),
        vec![(262, "z".repeat(2_000)), (263, "after".to_owned())]
    );
}

#[tokio::test]
async fn line_spanning_many_read_chunks_is_cut_with_its_full_length() {
    let p = Project::new();
    let long = "0123456789".repeat(70_000); // 700,000 characters, ~3 read chunks
    p.write("wide.txt", format!("before\n{long}\nafter\n"));
    let out = p.read_ok(json!({ "path": "wide.txt" })).await;
    let page = numbered(&out.text);
    assert_eq!(page.len(), 3);
    assert_eq!(
        page[1].1,
        format!(
            "{} … [line cut: showing 2000 of 700000 characters]",
            &long[..2_000]
        )
    );
    assert_eq!(page[2], (3, "after".to_owned()));
    assert!(out.text.len() < 3_000);
}
