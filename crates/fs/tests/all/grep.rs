//! `grep`: ripgrep's heading format, regex and literal search, context, binary files, long
//! lines, skipped folders, budgets and exact cursor continuation.

use serde_json::{Value, json};
use toolgate_fs::SearchLimits;

use crate::support::{Project, Session, assert_cut, field, str_field, truncated, u64_field};

/// Matching lines of a `grep` text as (path, line): context, separators and footers dropped.
fn matches(text: &str) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let mut file = String::new();
    for line in text.lines() {
        if line.is_empty() || line == "--" || line.starts_with('[') {
            continue;
        }
        let digits = line.bytes().take_while(u8::is_ascii_digit).count();
        match line.as_bytes().get(digits) {
            Some(b':') if digits > 0 => out.push((file.clone(), line[..digits].parse().unwrap())),
            Some(b'-') if digits > 0 => {}
            _ => file = line.to_owned(),
        }
    }
    out
}

/// Pages through `args` with its cursor; returns every match and the pages' texts.
async fn page_all(s: &Session, args: Value) -> (Vec<(String, u64)>, Vec<String>) {
    let mut all = Vec::new();
    let mut texts = Vec::new();
    let mut args = args;
    loop {
        let out = s.ok("grep", args.clone()).await;
        all.extend(matches(&out.text));
        texts.push(out.text.clone());
        match str_field(&out, "cursor").as_deref() {
            Some(cursor) => args["cursor"] = json!(cursor),
            None => {
                assert_cut(&out, None);
                return (all, texts);
            }
        }
        assert!(texts.len() < 1_000, "cursor does not advance");
    }
}

/// 30 files `src/mNN.rs`, each with `hit` on lines 3, 6, … 21 (7 per file).
fn hits_tree(p: &Project) -> Vec<(String, u64)> {
    let mut expected = Vec::new();
    for f in 0..30 {
        let rel = format!("src/m{f:02}.rs");
        let mut body = String::new();
        for line in 1..=22u64 {
            if line % 3 == 0 {
                body.push_str(&format!("let hit_{line} = {f};\n"));
                expected.push((rel.clone(), line));
            } else {
                body.push_str(&format!("// filler {line}\n"));
            }
        }
        p.write(&rel, body);
    }
    expected
}

#[tokio::test]
async fn matches_come_under_their_file_in_path_and_line_order() {
    let p = Project::new();
    p.write("src/b.rs", "fn beta() {}\nlet x = beta();\n");
    p.write("src/a.rs", "// nothing\nfn alpha() { beta() }\n");
    p.write("README.md", "call beta\n");
    let s = p.session();
    let out = s.ok("grep", json!({ "pattern": "beta" })).await;
    assert_eq!(
        out.text,
        "README.md\n1:call beta\n\nsrc/a.rs\n2:fn alpha() { beta() }\n\nsrc/b.rs\n1:fn beta() {}\n2:let x = beta();\n"
    );
    assert_cut(&out, None);
    assert_eq!(u64_field(&out, "total"), Some(4));
    assert_eq!(u64_field(&out, "returned"), Some(4));
    assert_eq!(u64_field(&out, "files_matched"), Some(3));
    assert_eq!(u64_field(&out, "files_searched"), Some(3));
    for _ in 0..5 {
        assert_eq!(
            s.ok("grep", json!({ "pattern": "beta" })).await.text,
            out.text
        );
    }
}

#[tokio::test]
async fn regex_literal_case_and_bad_patterns() {
    let p = Project::new();
    p.write("a.txt", "foo(1)\nFOO(2)\nfoo 3\n");
    let s = p.session();
    let out = s.ok("grep", json!({ "pattern": r"foo\(\d\)" })).await;
    assert_eq!(out.text, "a.txt\n1:foo(1)\n");
    let out = s
        .ok("grep", json!({ "pattern": "foo(", "literal": true }))
        .await;
    assert_eq!(out.text, "a.txt\n1:foo(1)\n");
    let out = s
        .ok(
            "grep",
            json!({ "pattern": "foo(", "literal": true, "case_insensitive": true }),
        )
        .await;
    assert_eq!(out.text, "a.txt\n1:foo(1)\n2:FOO(2)\n");
    let err = s.err("grep", json!({ "pattern": "foo(" })).await;
    assert!(err.contains("not a valid regular expression"), "{err}");
    assert!(
        err.contains("unclosed group"),
        "the regex error itself: {err}"
    );
    assert!(err.contains("literal: true"), "{err}");
    let err = s.err("grep", json!({ "pattern": "" })).await;
    assert!(err.contains("field `pattern`"), "{err}");
    let out = s.ok("grep", json!({ "pattern": "absent" })).await;
    assert!(
        out.text
            .starts_with("No matches for `absent` in `.` (1 file searched)."),
        "{}",
        out.text
    );
    assert_cut(&out, None);
    assert_eq!(u64_field(&out, "total"), Some(0));
}

#[tokio::test]
async fn context_lines_merge_and_separate_like_ripgrep() {
    let p = Project::new();
    let body: String = (1..=20)
        .map(|i| format!("l{i}{}\n", if [5, 7, 15].contains(&i) { " X" } else { "" }))
        .collect();
    p.write("f.txt", body);
    let s = p.session();
    let out = s.ok("grep", json!({ "pattern": "X", "context": 1 })).await;
    assert_eq!(
        out.text,
        "f.txt\n4-l4\n5:l5 X\n6-l6\n7:l7 X\n8-l8\n--\n14-l14\n15:l15 X\n16-l16\n"
    );
    let err = s
        .err("grep", json!({ "pattern": "X", "context": 11 }))
        .await;
    assert!(err.contains("field `context`"), "{err}");
    // A cut page ends after the last match's after-context, without the next one's before.
    let out = s
        .ok("grep", json!({ "pattern": "X", "context": 2, "limit": 2 }))
        .await;
    assert_eq!(
        out.text.lines().take(8).collect::<Vec<_>>(),
        [
            "f.txt", "3-l3", "4-l4", "5:l5 X", "6-l6", "7:l7 X", "8-l8", "9-l9"
        ]
    );
    assert!(
        out.text.lines().nth(8).unwrap().starts_with("[truncated"),
        "{}",
        out.text
    );
    assert_eq!(str_field(&out, "cursor").as_deref(), Some("f.txt:7"));
    let next = s
        .ok(
            "grep",
            json!({ "pattern": "X", "context": 2, "cursor": "f.txt:7" }),
        )
        .await;
    assert_eq!(
        next.text,
        "f.txt\n13-l13\n14-l14\n15:l15 X\n16-l16\n17-l17\n"
    );
}

#[tokio::test]
async fn binary_files_are_skipped_and_long_lines_cut() {
    let p = Project::new();
    p.write("blob.bin", b"needle\0\x01\x02needle\n");
    let long = format!("{}needle{}\n", "a".repeat(1_000), "b".repeat(3_000));
    p.write("long.txt", &long);
    let s = p.session();
    let out = s.ok("grep", json!({ "pattern": "needle" })).await;
    let text = &out.text;
    assert!(!text.contains("blob.bin\n"), "{text}");
    assert!(text.contains("[note: 1 binary file skipped]"), "{text}");
    let line = text.lines().nth(1).unwrap();
    assert!(line.starts_with("1:aaaa"), "{line}");
    assert!(
        line.ends_with(" … [line cut: showing 2000 of 4006 characters]"),
        "{line}"
    );
    assert_eq!(
        line.chars().count(),
        "1:".len()
            + 2_000
            + " … [line cut: showing 2000 of 4006 characters]"
                .chars()
                .count()
    );
}

#[tokio::test]
async fn glob_and_path_narrow_the_files() {
    let p = Project::new();
    for rel in [
        "src/a.rs",
        "src/b.ts",
        "src/c.min.js",
        "src/d.js",
        "docs/e.md",
    ] {
        p.write(rel, "needle\n");
    }
    let s = p.session();
    let files = |out: &toolgate_core::ToolOutput| -> Vec<String> {
        matches(&out.text).into_iter().map(|m| m.0).collect()
    };
    let out = s
        .ok("grep", json!({ "pattern": "needle", "glob": "*.rs" }))
        .await;
    assert_eq!(files(&out), ["src/a.rs"]);
    let out = s
        .ok("grep", json!({ "pattern": "needle", "glob": "*.{js,ts}" }))
        .await;
    assert_eq!(files(&out), ["src/b.ts", "src/c.min.js", "src/d.js"]);
    let out = s
        .ok(
            "grep",
            json!({ "pattern": "needle", "glob": "!*.min.js", "path": "src" }),
        )
        .await;
    assert_eq!(files(&out), ["src/a.rs", "src/b.ts", "src/d.js"]);
    assert_eq!(str_field(&out, "path").as_deref(), Some("src"));
    let out = s
        .ok("grep", json!({ "pattern": "needle", "path": "docs/e.md" }))
        .await;
    assert_eq!(
        out.text, "docs/e.md\n1:needle\n",
        "a single file can be searched"
    );
    let out = s
        .ok(
            "grep",
            json!({ "pattern": "needle", "path": "docs/e.md", "glob": "*.md" }),
        )
        .await;
    assert_eq!(
        out.text, "docs/e.md\n1:needle\n",
        "a glob applies to the file's name"
    );
    let out = s
        .ok("grep", json!({ "pattern": "needle", "glob": "*.py" }))
        .await;
    assert!(
        out.text.contains("0 files matching `*.py` searched"),
        "{}",
        out.text
    );
}

#[tokio::test]
async fn heavy_folders_and_gitignored_files_are_skipped_unless_asked() {
    let p = Project::new();
    p.write("src/app.js", "needle\n");
    for dir in ["node_modules/x", ".git", "target", "coverage", ".idea"] {
        p.write(&format!("{dir}/f.js"), "needle\n");
    }
    p.write(".gitignore", "gen/\n");
    p.write("gen/out.js", "needle\n");
    let s = p.session();
    let files = |out: &toolgate_core::ToolOutput| -> Vec<String> {
        matches(&out.text).into_iter().map(|m| m.0).collect()
    };
    let out = s.ok("grep", json!({ "pattern": "needle" })).await;
    assert_eq!(files(&out), ["src/app.js"]);
    let out = s
        .ok(
            "grep",
            json!({ "pattern": "needle", "include_ignored": true }),
        )
        .await;
    assert_eq!(
        files(&out),
        [
            ".git/f.js",
            ".idea/f.js",
            "coverage/f.js",
            "gen/out.js",
            "node_modules/x/f.js",
            "src/app.js",
            "target/f.js"
        ]
    );
    let out = s
        .ok(
            "grep",
            json!({ "pattern": "needle", "path": "node_modules/x" }),
        )
        .await;
    assert_eq!(files(&out), ["node_modules/x/f.js"]);
}

#[tokio::test]
async fn result_limit_cursor_returns_exactly_the_rest() {
    let p = Project::new();
    let expected = hits_tree(&p);
    let s = p.session();
    let out = s
        .ok("grep", json!({ "pattern": "hit_", "limit": 25 }))
        .await;
    assert_cut(&out, Some("result_limit"));
    assert_eq!(matches(&out.text), expected[..25]);
    assert_eq!(u64_field(&out, "returned"), Some(25));
    // The rest is small: counted.
    assert_eq!(u64_field(&out, "total"), Some(210));
    // Match 25 is the 4th of the 4th file (src/m03.rs, line 12).
    assert_eq!(str_field(&out, "cursor").as_deref(), Some("src/m03.rs:12"));
    assert!(
        out.text.contains("the limit of 25 results was reached"),
        "{}",
        out.text
    );

    let (all, pages) = page_all(&s, json!({ "pattern": "hit_", "limit": 25 })).await;
    assert_eq!(all, expected, "no duplicates, no gaps");
    assert_eq!(pages.len(), 9);
    // With context, continuation is just as exact.
    let (all, _) = page_all(&s, json!({ "pattern": "hit_", "limit": 9, "context": 1 })).await;
    assert_eq!(all, expected);
    // One page when the limit allows it.
    let out = s
        .ok("grep", json!({ "pattern": "hit_", "limit": 500 }))
        .await;
    assert_cut(&out, None);
    assert_eq!(u64_field(&out, "total"), Some(210));
}

#[tokio::test]
async fn scan_and_payload_limits_cut_with_a_cursor_that_covers_everything() {
    let p = Project::new();
    let expected = hits_tree(&p);
    let scan = SearchLimits {
        max_scanned: 8,
        ..SearchLimits::default()
    };
    let s = p.session_with(scan);
    let out = s.ok("grep", json!({ "pattern": "hit_" })).await;
    assert_cut(&out, Some("scan_limit"));
    assert_eq!(u64_field(&out, "scanned_count"), Some(8));
    // `src` and 7 files were scanned.
    assert_eq!(matches(&out.text), expected[..49]);
    assert_eq!(str_field(&out, "cursor").as_deref(), Some("src/m06.rs:end"));
    let (all, _) = page_all(&s, json!({ "pattern": "hit_" })).await;
    assert_eq!(all, expected);

    let payload = SearchLimits {
        max_payload_bytes: 300,
        ..SearchLimits::default()
    };
    let s = p.session_with(payload);
    let out = s.ok("grep", json!({ "pattern": "hit_" })).await;
    assert_cut(&out, Some("payload_limit"));
    assert!(
        out.text.len() < 300 + 200,
        "page stays near the budget (+ footer)"
    );
    let (all, _) = page_all(&s, json!({ "pattern": "hit_" })).await;
    assert_eq!(all, expected);
}

#[tokio::test]
async fn confinement_holds_for_search() {
    let p = Project::new();
    p.write("in.txt", "TOP\n");
    p.symlink(p.outside.join("secret.txt"), "link.txt");
    p.symlink(&p.outside, "linkdir");
    let s = p.session();
    let out = s.ok("grep", json!({ "pattern": "TOP" })).await;
    assert_eq!(
        out.text, "in.txt\n1:TOP\n",
        "symlinks are not followed out of the root"
    );
    let err = s
        .err("grep", json!({ "pattern": "TOP", "path": "linkdir" }))
        .await;
    assert!(err.contains("outside the allowed roots"), "{err}");
    assert!(!err.contains(crate::support::SECRET));
    let err = s
        .err(
            "grep",
            json!({ "pattern": "TOP", "path": p.outside.to_str().unwrap() }),
        )
        .await;
    assert!(err.contains("outside the allowed roots"), "{err}");
}

#[tokio::test]
async fn snapshot_of_a_cut_page_with_context() {
    let p = Project::new();
    hits_tree(&p);
    p.write(
        "src/long.rs",
        format!("let hit_long = \"{}\";\n", "x".repeat(2_100)),
    );
    let s = p.session();
    let out = s
        .ok(
            "grep",
            json!({ "pattern": "hit_(1[58]|long)", "context": 1, "limit": 3, "glob": "m0[01].rs" }),
        )
        .await;
    insta::assert_snapshot!("grep_cut_page", out.text);
    let out = s
        .ok("grep", json!({ "pattern": "hit_long", "path": "src" }))
        .await;
    insta::assert_snapshot!("grep_long_line", out.text);
}

/// Regression: a cut grep said "limit of 25 results was reached" but not how many matches
/// or files there were; `total` was simply absent. Later it said "at least 26" even when
/// counting the rest cost little; the rest is now counted.
#[tokio::test]
async fn result_limit_states_how_many_matches_and_files_there_are() {
    let p = Project::new();
    hits_tree(&p);
    let s = p.session();
    let out = s
        .ok("grep", json!({ "pattern": "hit_", "limit": 25 }))
        .await;
    assert_cut(&out, Some("result_limit"));
    assert_eq!(u64_field(&out, "total"), Some(210));
    assert_eq!(field(&out, "total_is_lower_bound"), Some(json!(false)));
    assert_eq!(field(&out, "total_at_least"), None);
    assert_eq!(u64_field(&out, "total_files"), Some(30));
    assert!(
        out.text.contains("showing 25 of 210 matches in 30 files"),
        "{}",
        out.text
    );
    // The same text on every call, however the searcher threads were scheduled.
    for _ in 0..5 {
        let again = s
            .ok("grep", json!({ "pattern": "hit_", "limit": 25 }))
            .await;
        assert_eq!(again.text, out.text);
    }
    // The next page counts from its own start.
    let cursor = field(&out, "cursor").and_then(|c| c.as_str().map(str::to_owned));
    let next = s
        .ok(
            "grep",
            json!({ "pattern": "hit_", "limit": 25, "cursor": cursor.expect("a cursor") }),
        )
        .await;
    assert_eq!(u64_field(&next, "total"), Some(185), "{}", next.text);
}

/// Regression: 2,000 matches in 20 files said "at least 101" and never the total.
#[tokio::test]
async fn a_full_page_still_counts_the_total_when_the_rest_is_small() {
    let p = Project::new();
    for f in 0..20 {
        p.write(&format!("f{f:02}.txt"), "hit\n".repeat(100));
    }
    // A file with more matches than a page holds is counted to its end too.
    p.write("g.txt", format!("{}other\n", "hit\n".repeat(3_000)));
    let s = p.session();
    let out = s.ok("grep", json!({ "pattern": "hit" })).await;
    assert_cut(&out, Some("result_limit"));
    assert_eq!(u64_field(&out, "total"), Some(5_000));
    assert_eq!(u64_field(&out, "total_files"), Some(21));
    assert!(
        out.text
            .contains("showing 100 of 5,000 matches in 21 files"),
        "{}",
        out.text
    );
    // A glob narrows the count as it narrows the page.
    let out = s
        .ok(
            "grep",
            json!({ "pattern": "hit", "glob": "f1*.txt", "limit": 10 }),
        )
        .await;
    assert_eq!(u64_field(&out, "total"), Some(1_000), "{}", out.text);
}

/// The count after a full page resumes the walk where the page's stopped, and counted the
/// file at that point twice when the walk had not finished before the page filled (seen
/// as "2,100 matches in 21 files" for 2,000 in 20, 3 calls in 40).
#[tokio::test]
async fn the_count_after_a_full_page_counts_each_file_once() {
    let p = Project::new();
    for d in 0..20 {
        for f in 0..100 {
            p.write(&format!("d{d:02}/f{f:03}.txt"), "hit\n");
        }
    }
    let s = p.session();
    for _ in 0..5 {
        let out = s.ok("grep", json!({ "pattern": "hit", "limit": 1 })).await;
        assert_eq!(u64_field(&out, "total"), Some(2_000), "{}", out.text);
        assert_eq!(u64_field(&out, "total_files"), Some(2_000), "{}", out.text);
    }
}

/// Past the counting budget the total stays a lower bound, and says so.
#[tokio::test]
async fn a_count_past_its_budget_is_a_lower_bound() {
    let p = Project::new();
    p.write("a.txt", "hit\n".repeat(200));
    // 33 MiB after the page: more than the 32 MiB counted past a full page.
    p.write("b.txt", "hit\n".repeat((33 << 20) / 4));
    let s = p.session();
    let out = s.ok("grep", json!({ "pattern": "hit" })).await;
    assert_cut(&out, Some("result_limit"));
    assert_eq!(u64_field(&out, "total"), None);
    assert_eq!(field(&out, "total_is_lower_bound"), Some(json!(true)));
    assert_eq!(u64_field(&out, "total_at_least"), Some(101));
    assert!(
        out.text.contains("showing 100 of at least 101 matches"),
        "{}",
        out.text
    );
}

/// A finished search states its exact totals, in the footer of a cut page too.
#[tokio::test]
async fn finished_search_states_exact_match_and_file_totals() {
    let p = Project::new();
    hits_tree(&p);
    let s = p.session();
    let out = s
        .ok("grep", json!({ "pattern": "hit_", "limit": 500 }))
        .await;
    assert_cut(&out, None);
    assert_eq!(u64_field(&out, "total"), Some(210));
    assert_eq!(u64_field(&out, "total_files"), Some(30));
    assert_eq!(field(&out, "total_is_lower_bound"), Some(json!(false)));
    assert_eq!(field(&out, "total_at_least"), None);
    // A page cut by its size inside a file of 3,000 matches: the rest of the file is
    // counted, so the total is exact.
    let p = Project::new();
    p.write("big.txt", "hit\n".repeat(3_000));
    let limits = SearchLimits {
        max_payload_bytes: 100,
        ..SearchLimits::default()
    };
    let s = p.session_with(limits);
    let out = s
        .ok("grep", json!({ "pattern": "hit", "limit": 500 }))
        .await;
    assert_cut(&out, Some("payload_limit"));
    assert_eq!(u64_field(&out, "total"), Some(3_000));
    let shown = u64_field(&out, "returned").expect("returned");
    assert!(
        out.text
            .contains(&format!("showing {shown} of 3,000 matches in 1 file")),
        "{}",
        out.text
    );
}

/// Regression: grep's `glob` and `pattern` had no size bound, and a regex's compiled size
/// was bounded only by grep-regex's 100 MiB / 1,000 MiB defaults.
#[tokio::test]
async fn huge_patterns_and_globs_are_refused_with_what_to_send_instead() {
    let p = Project::new();
    p.write("a.txt", "needle\n");
    let s = p.session();
    for size in [1 << 20, 12 << 20] {
        let err = s
            .err(
                "grep",
                json!({ "pattern": "needle", "glob": format!("{}*", "a".repeat(size)) }),
            )
            .await;
        assert!(err.contains("field `glob`"), "{err}");
        assert!(err.contains("is too long; at most 4,096"), "{err}");
        let err = s.err("grep", json!({ "pattern": "n".repeat(size) })).await;
        assert!(err.contains("field `pattern`"), "{err}");
        assert!(err.contains("is too long; at most 4,096"), "{err}");
        assert!(err.len() < 1_000, "the error does not echo the pattern");
    }
    let err = s
        .err(
            "grep",
            json!({ "pattern": "needle", "glob": "*".repeat(100 * 1024) }),
        )
        .await;
    assert!(err.contains("is too long"), "{err}");
    // Short, but huge once compiled.
    let err = s.err("grep", json!({ "pattern": r"\w{1000}{1000}" })).await;
    assert!(err.contains("too big once compiled (over 10 MiB)"), "{err}");
    assert!(err.contains("literal: true"), "{err}");
    let out = s.ok("grep", json!({ "pattern": "need(le)?" })).await;
    assert_eq!(out.text, "a.txt\n1:needle\n");
}

/// Regression: a match on line 1 of a file whose line is over 32 MiB was answered "No
/// matches", `total: 0`, `truncated: false`. Such a file is now reported: cut, named, and
/// the lines before the long one still searched.
#[tokio::test]
async fn a_line_over_the_searcher_limit_is_reported_not_answered_no_matches() {
    let p = Project::new();
    let mut line = b"needle at the start ".to_vec();
    line.resize(40 << 20, b'x');
    line.push(b'\n');
    p.write("big.txt", &line);
    drop(line);
    p.write("before.txt", {
        let mut body = b"needle on line 1\n".to_vec();
        body.resize(body.len() + (40 << 20), b'y');
        body
    });
    p.write("small.txt", "no match here\n");
    let s = p.session();
    let out = s.ok("grep", json!({ "pattern": "needle" })).await;
    assert!(!out.text.contains("No matches"), "{}", out.text);
    assert!(truncated(&out), "{}", out.text);
    assert_eq!(str_field(&out, "reason").as_deref(), Some("payload_limit"));
    assert_eq!(
        field(&out, "long_line_files"),
        Some(json!(["before.txt", "big.txt"]))
    );
    assert!(
        out.text
            .contains("[note: `before.txt`, `big.txt` have a line over 32 MiB, too long to search"),
        "{}",
        out.text
    );
    assert!(
        out.text.contains(
            "[truncated: 2 files with a line over 32 MiB could not be searched past that line"
        ),
        "{}",
        out.text
    );
    // The line before the long one was searched.
    assert!(
        out.text.starts_with("before.txt\n1:needle on line 1\n"),
        "{}",
        out.text
    );
    assert_eq!(u64_field(&out, "total"), None);
    assert_eq!(field(&out, "total_is_lower_bound"), Some(json!(true)));
    assert_eq!(u64_field(&out, "total_at_least"), Some(1));
    // Searching the file alone says the same.
    let out = s
        .ok("grep", json!({ "pattern": "needle", "path": "big.txt" }))
        .await;
    assert!(truncated(&out), "{}", out.text);
    assert!(
        out.text.contains("`big.txt` has a line over 32 MiB"),
        "{}",
        out.text
    );
    assert!(
        out.text.contains(
            "[truncated: 1 file with a line over 32 MiB could not be searched past that line; no matches in the lines that could be searched — see the note above]"
        ),
        "{}",
        out.text
    );
    // The 80 MiB of test files go with the project's temporary folder.
    drop(s);
    drop(p);
}
