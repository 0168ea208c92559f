//! `search_files`: names and globs, skipped folders, deterministic order, every budget with
//! its reason, exact cursor continuation.

use serde_json::{Value, json};
use toolgate_fs::SearchLimits;

use crate::support::{Project, Session, assert_cut, field, str_field, u64_field};

/// Result paths of a `search_files` text (the footer dropped).
fn paths(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.starts_with('[') && !l.starts_with("No files"))
        .map(str::to_owned)
        .collect()
}

/// `n` files `d{i/10}/f{i}.txt` (zero-padded), plus folders.
fn many(p: &Project, n: usize) -> Vec<String> {
    let mut all: Vec<String> = (0..n)
        .map(|i| format!("d{:02}/f{i:03}.txt", i / 10))
        .collect();
    for rel in &all {
        p.write(rel, "x\n");
    }
    all.sort();
    all
}

/// Pages through `args` with its cursor; returns every path and the number of pages.
async fn page_all(s: &Session, args: Value) -> (Vec<String>, usize) {
    let mut all = Vec::new();
    let mut args = args;
    let mut pages = 0;
    loop {
        let out = s.ok("search_files", args.clone()).await;
        pages += 1;
        all.extend(paths(&out.text));
        match str_field(&out, "cursor").as_deref() {
            Some(cursor) => args["cursor"] = json!(cursor),
            None => {
                assert_cut(&out, None);
                return (all, pages);
            }
        }
        assert!(pages < 1_000, "cursor does not advance");
    }
}

#[tokio::test]
async fn plain_word_matches_anywhere_in_the_path_ignoring_case() {
    let p = Project::new();
    p.write("src/Config.rs", "");
    p.write("src/main.rs", "");
    p.write("configs/app.toml", "");
    p.write("docs/readme.md", "");
    let s = p.session();
    let out = s.ok("search_files", json!({ "query": "CONFIG" })).await;
    assert_eq!(out.text, "configs/app.toml\nsrc/Config.rs\n");
    assert_cut(&out, None);
    assert_eq!(u64_field(&out, "total"), Some(2));
    assert_eq!(u64_field(&out, "returned"), Some(2));
    assert_eq!(str_field(&out, "path").as_deref(), Some("."));
    // Every word must occur.
    let out = s.ok("search_files", json!({ "query": "src config" })).await;
    assert_eq!(out.text, "src/Config.rs\n");
    // Relative to the folder searched: `src` is not part of the paths below it.
    let out = s
        .ok("search_files", json!({ "query": "src", "path": "src" }))
        .await;
    assert!(
        out.text.starts_with("No files match `src` under `src`"),
        "{}",
        out.text
    );
    assert_eq!(u64_field(&out, "total"), Some(0));
}

#[tokio::test]
async fn globs_match_names_or_whole_paths() {
    let p = Project::new();
    for rel in [
        "a.rs",
        "src/b.rs",
        "src/deep/c.RS",
        "src/d.txt",
        "tests/e.rs",
    ] {
        p.write(rel, "");
    }
    let s = p.session();
    let q = |query: &str| json!({ "query": query });
    let out = s.ok("search_files", q("*.rs")).await;
    assert_eq!(out.text, "a.rs\nsrc/b.rs\nsrc/deep/c.RS\ntests/e.rs\n");
    let out = s.ok("search_files", q("src/**/*.rs")).await;
    assert_eq!(out.text, "src/b.rs\nsrc/deep/c.RS\n");
    let out = s.ok("search_files", q("src/*.rs")).await;
    assert_eq!(out.text, "src/b.rs\n", "`*` does not cross folders");
    let out = s.ok("search_files", q("?.{txt,rs}")).await;
    assert_eq!(
        out.text,
        "a.rs\nsrc/b.rs\nsrc/d.txt\nsrc/deep/c.RS\ntests/e.rs\n"
    );
    let err = s.err("search_files", q("src/[z.rs")).await;
    assert!(err.contains("not a valid glob"), "{err}");
    let err = s.err("search_files", q("  ")).await;
    assert!(err.contains("field `query`"), "{err}");
}

#[tokio::test]
async fn heavy_folders_and_gitignored_files_are_skipped_unless_asked() {
    let p = Project::new();
    p.write("src/app.js", "");
    p.write(".github/workflows/app.yml", "");
    for dir in [
        "node_modules/x",
        ".git",
        "target/debug",
        "build",
        ".venv/lib",
        "dist",
    ] {
        p.write(&format!("{dir}/app.js"), "");
    }
    p.write(".gitignore", "secret/\n*.log\n");
    p.write("secret/app.js", "");
    p.write("app.log", "");
    let s = p.session();
    let out = s.ok("search_files", json!({ "query": "app" })).await;
    assert_eq!(
        out.text, ".github/workflows/app.yml\nsrc/app.js\n",
        "hidden folders that are not heavy are searched"
    );
    let out = s
        .ok(
            "search_files",
            json!({ "query": "app", "include_ignored": true }),
        )
        .await;
    assert_eq!(
        paths(&out.text),
        [
            ".git/app.js",
            ".github/workflows/app.yml",
            ".venv/lib/app.js",
            "app.log",
            "build/app.js",
            "dist/app.js",
            "node_modules/x/app.js",
            "secret/app.js",
            "src/app.js",
            "target/debug/app.js",
        ]
    );
    // A path inside a heavy folder is searched as asked.
    let out = s
        .ok(
            "search_files",
            json!({ "query": "app", "path": "node_modules" }),
        )
        .await;
    assert_eq!(out.text, "node_modules/x/app.js\n");
    // Nothing found: the answer says what was skipped and how to include it.
    let out = s
        .ok("search_files", json!({ "query": "nothing-here" }))
        .await;
    assert!(out.text.contains("include_ignored: true"), "{}", out.text);
}

#[tokio::test]
async fn order_is_by_path_and_the_same_every_time() {
    let p = Project::new();
    // Created out of order; `a/z` sorts before `a.b` (by component, as a tree walk goes).
    for rel in ["b.txt", "a.b", "a/z.txt", "A.txt", "a/b/c.txt", "_x.txt"] {
        p.write(rel, "");
    }
    let s = p.session();
    let first = s.ok("search_files", json!({ "query": "*" })).await.text;
    assert_eq!(first, "A.txt\n_x.txt\na/b/c.txt\na/z.txt\na.b\nb.txt\n");
    for _ in 0..5 {
        assert_eq!(
            s.ok("search_files", json!({ "query": "*" })).await.text,
            first
        );
    }
}

#[tokio::test]
async fn result_limit_cuts_with_a_cursor_that_continues_exactly() {
    let p = Project::new();
    let all = many(&p, 250);
    let s = p.session();
    let out = s
        .ok("search_files", json!({ "query": "*.txt", "limit": 40 }))
        .await;
    assert_cut(&out, Some("result_limit"));
    assert_eq!(paths(&out.text), all[..40]);
    assert_eq!(u64_field(&out, "total"), Some(250));
    assert_eq!(u64_field(&out, "returned"), Some(40));
    assert_eq!(
        str_field(&out, "cursor").as_deref(),
        Some(format!("{}:end", all[39]).as_str())
    );
    assert!(out.text.contains("continue with cursor"), "{}", out.text);

    let (paged, pages) = page_all(&s, json!({ "query": "*.txt", "limit": 40 })).await;
    assert_eq!(paged, all, "pages hold every path once, in order");
    assert_eq!(pages, 7);
    // The default is 100 results, the maximum 500.
    let out = s.ok("search_files", json!({ "query": "*.txt" })).await;
    assert_eq!(u64_field(&out, "returned"), Some(100));
    let out = s
        .ok("search_files", json!({ "query": "*.txt", "limit": 10_000 }))
        .await;
    assert_eq!(u64_field(&out, "returned"), Some(250));
    assert_cut(&out, None);
}

#[tokio::test]
async fn scan_limit_cuts_deterministically_and_the_cursor_resumes_the_walk() {
    let p = Project::new();
    let all = many(&p, 120);
    let limits = SearchLimits {
        max_scanned: 30,
        ..SearchLimits::default()
    };
    let s = p.session_with(limits);
    let out = s.ok("search_files", json!({ "query": "txt" })).await;
    assert_cut(&out, Some("scan_limit"));
    assert_eq!(u64_field(&out, "scanned_count"), Some(30));
    assert_eq!(
        u64_field(&out, "total"),
        None,
        "total is unknown after a scan cut"
    );
    // The first 30 entries in path order: folder d00 and its 10 files, d01 and its 10, d02
    // and 7 of its files.
    assert_eq!(paths(&out.text), all[..27]);
    assert!(
        out.text.contains("scan limit of 30 entries"),
        "{}",
        out.text
    );
    let again = s.ok("search_files", json!({ "query": "txt" })).await;
    assert_eq!(again.text, out.text);

    let (paged, _) = page_all(&s, json!({ "query": "txt" })).await;
    assert_eq!(
        paged, all,
        "continuing after scan cuts covers the tree exactly"
    );
}

#[tokio::test]
async fn payload_limit_cuts_with_a_cursor() {
    let p = Project::new();
    let all = many(&p, 50);
    let limits = SearchLimits {
        max_payload_bytes: 100,
        ..SearchLimits::default()
    };
    let s = p.session_with(limits);
    let out = s.ok("search_files", json!({ "query": "*.txt" })).await;
    assert_cut(&out, Some("payload_limit"));
    // Each line is `dNN/fNNN.txt\n`, 13 bytes: 7 fit in 100.
    assert_eq!(paths(&out.text), all[..7]);
    let (paged, _) = page_all(&s, json!({ "query": "*.txt" })).await;
    assert_eq!(paged, all);
}

#[tokio::test]
async fn bad_arguments_say_what_to_send() {
    let p = Project::new();
    p.write("a.txt", "");
    let s = p.session();
    let err = s
        .err("search_files", json!({ "query": "a", "limit": 0 }))
        .await;
    assert!(err.contains("field `limit`"), "{err}");
    let err = s
        .err("search_files", json!({ "query": "a", "timeout_ms": 0 }))
        .await;
    assert!(err.contains("field `timeout_ms`"), "{err}");
    let err = s
        .err(
            "search_files",
            json!({ "query": "a", "cursor": "nonsense" }),
        )
        .await;
    assert!(err.contains("field `cursor`"), "{err}");
    let err = s
        .err("search_files", json!({ "query": "a", "path": "a.txt" }))
        .await;
    assert!(err.contains("not a folder"), "{err}");
    let err = s
        .err(
            "search_files",
            json!({ "query": "a", "path": "../outside" }),
        )
        .await;
    assert!(err.contains("outside the allowed roots"), "{err}");
    let err = s
        .err("search_files", json!({ "query": "a", "bogus": 1 }))
        .await;
    assert!(err.contains("bogus"), "{err}");
}

#[tokio::test]
async fn snapshot_of_a_cut_page() {
    let p = Project::new();
    many(&p, 30);
    let s = p.session();
    let out = s
        .ok("search_files", json!({ "query": "d01", "limit": 4 }))
        .await;
    insta::assert_snapshot!("search_files_cut_page", out.text);
}

/// The files ripgrep's own walker (the `ignore` crate, configured as toolgate used it before
/// walking by descriptor) would visit under `dir`, relative to it, heavy folders skipped.
fn ripgrep_walk(dir: &std::path::Path) -> Vec<String> {
    let mut builder = ignore::WalkBuilder::new(dir);
    builder
        .standard_filters(true)
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|e| {
            !(e.depth() > 0
                && e.file_type().is_some_and(|t| t.is_dir())
                && toolgate_fs::SKIPPED_DIRS
                    .iter()
                    .any(|d| e.file_name() == *d))
        });
    let mut out: Vec<String> = builder
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .map(|e| e.path().strip_prefix(dir).unwrap().display().to_string())
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn the_descriptor_walk_applies_ripgreps_ignore_rules() {
    // The walk reads folders through descriptors instead of the `ignore` crate's walker;
    // the rules it applies must stay ripgrep's: nested files, negation, `.ignore` over
    // `.gitignore`, git's exclude file, anchored and directory-only patterns.
    let p = Project::new();
    for (rel, text) in [
        (".gitignore", "*.log\n/top_only.txt\nbuilt/\n!keep.log\n"),
        (".ignore", "!ignored_by_git_but_not_by_ignore.tmp\n*.tmp\n"),
        (".git/info/exclude", "excluded.txt\n"),
        ("a.log", ""),
        ("keep.log", ""),
        ("top_only.txt", ""),
        ("excluded.txt", ""),
        ("x.tmp", ""),
        ("ignored_by_git_but_not_by_ignore.tmp", ""),
        ("src/top_only.txt", ""),
        ("src/built/out.rs", ""),
        ("src/built.rs", ""),
        ("src/.gitignore", "!a.log\ngenerated_*\n"),
        ("src/a.log", ""),
        ("src/generated_x.rs", ""),
        ("src/deep/generated_y.rs", ""),
        ("src/deep/.gitignore", "!generated_y.rs\n"),
        ("src/deep/ok.rs", ""),
        ("docs/guide.md", ""),
        ("docs/\u{e9}t\u{e9}.md", ""),
    ] {
        p.write(rel, text);
    }
    let expected = ripgrep_walk(&p.root);
    assert!(
        expected.contains(&"src/deep/generated_y.rs".to_owned()),
        "{expected:?}"
    );
    assert!(!expected.contains(&"a.log".to_owned()), "{expected:?}");
    let s = p.session();
    let out = s.ok("search_files", json!({ "query": "*" })).await;
    assert_eq!(paths(&out.text), expected);
    // A search of a subfolder still obeys the rules of the folders above it.
    let sub: Vec<String> = expected
        .iter()
        .filter_map(|p| p.strip_prefix("src/").map(|r| format!("src/{r}")))
        .collect();
    let out = s
        .ok("search_files", json!({ "query": "*", "path": "src" }))
        .await;
    assert_eq!(paths(&out.text), sub);
    // grep sees the same files.
    for rel in &expected {
        fs_err::write(p.root.join(rel), "needle\n").unwrap();
    }
    let out = s
        .ok("grep", json!({ "pattern": "needle", "limit": 500 }))
        .await;
    let files: Vec<&str> = out
        .text
        .lines()
        .filter(|l| !l.starts_with("1:") && !l.is_empty() && !l.starts_with('['))
        .collect();
    assert_eq!(files, expected);
}

/// A cut search_files states the total (exact when the walk finished, "at least" when a
/// limit stopped it) in the text and in structured fields.
#[tokio::test]
async fn cut_results_state_the_total_or_a_lower_bound() {
    let p = Project::new();
    many(&p, 2_345);
    let s = p.session();
    let out = s
        .ok("search_files", json!({ "query": "*.txt", "limit": 100 }))
        .await;
    assert_cut(&out, Some("result_limit"));
    assert_eq!(u64_field(&out, "total"), Some(2_345));
    assert_eq!(u64_field(&out, "total_files"), Some(2_345));
    assert_eq!(field(&out, "total_is_lower_bound"), Some(json!(false)));
    assert!(
        out.text.contains("showing 100 of 2,345 matching files"),
        "{}",
        out.text
    );
    let s = p.session_with(SearchLimits {
        max_scanned: 300,
        ..SearchLimits::default()
    });
    let out = s
        .ok("search_files", json!({ "query": "*.txt", "limit": 100 }))
        .await;
    assert_cut(&out, Some("result_limit"));
    assert_eq!(u64_field(&out, "total"), None);
    assert_eq!(field(&out, "total_is_lower_bound"), Some(json!(true)));
    let at_least = u64_field(&out, "total_at_least").expect("a lower bound");
    assert!(at_least > 100 && at_least < 300, "{at_least}");
    assert!(
        out.text.contains(&format!(
            "showing 100 of at least {at_least} matching files"
        )),
        "{}",
        out.text
    );
}

/// Regression: a 1 MB glob took 3.2 s and 860 MB, 12 MB took 21 s and 4.3 GB, and 100 KB of
/// `*` panicked inside globset. Each is refused before compiling, saying what to send
/// instead.
#[tokio::test]
async fn huge_globs_are_refused_with_what_to_send_instead() {
    let p = Project::new();
    p.write("a.txt", "");
    let s = p.session();
    for size in [1 << 20, 12 << 20] {
        let glob = format!("{}*.txt", "a".repeat(size));
        let err = s.err("search_files", json!({ "query": glob })).await;
        assert!(err.contains("field `query`"), "{err}");
        assert!(err.contains("is too long; at most 4,096"), "{err}");
        assert!(err.contains("Send a short glob such as `*.rs`"), "{err}");
        assert!(err.len() < 1_000, "the error does not echo the glob");
        // A long plain query is bounded the same way.
        let err = s
            .err("search_files", json!({ "query": "word ".repeat(size / 5) }))
            .await;
        assert!(err.contains("is too long; at most 4,096"), "{err}");
    }
    let stars = "*".repeat(100 * 1024);
    let err = s.err("search_files", json!({ "query": stars })).await;
    assert!(err.contains("is too long"), "{err}");
    // Short but with too many wildcards.
    let err = s
        .err("search_files", json!({ "query": "*".repeat(1_000) }))
        .await;
    assert!(err.contains("the glob has 1000 wildcards"), "{err}");
    assert!(err.contains("at most 256"), "{err}");
    // Ordinary globs still work.
    let out = s.ok("search_files", json!({ "query": "*.{txt,md}" })).await;
    assert_eq!(out.text, "a.txt\n");
}
