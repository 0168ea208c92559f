//! Log compression: a vitest run with one failure, duplicate folding, terminal debris,
//! stack blocks and the thresholds.

use toolgate_budget::{CompressOptions, compress_log};

use crate::support::{expand, lost_anchors, shown_lines};

/// A vitest-style run of `passing` tests across five files with one failure, the classic
/// compression demo ("394 lines → 13 lines").
fn vitest_log(passing: usize) -> String {
    let mut log = String::from("\n RUN  v3.2.4 /work/app\n\n");
    let files = ["math", "strings", "parser", "cache", "router"];
    for i in 0..passing {
        let file = files[i * files.len() / passing];
        log += &format!(
            " ✓ src/{file}.test.ts > {file} suite {} > handles case {i} of {file} {}ms\n",
            i % 4,
            i % 7
        );
        if i == passing / 2 {
            log += " × src/parser.test.ts > parser suite 2 > parses nested brackets 14ms\n";
            log += "   → expected 208 to be 209 // Object.is equality\n";
        }
    }
    log += "\n⎯⎯⎯⎯⎯⎯⎯ Failed Tests 1 ⎯⎯⎯⎯⎯⎯⎯\n\n";
    log += " FAIL  src/parser.test.ts > parser suite 2 > parses nested brackets\n";
    log += "AssertionError: expected 208 to be 209 // Object.is equality\n\n";
    log += "- Expected\n+ Received\n\n- 209\n+ 208\n\n";
    log += " ❯ src/parser.test.ts:155:19\n";
    log += "    153|   it('parses nested brackets', () => {\n";
    log += "    154|     const depth = parserOp(207, 1)\n";
    log += "    155|     expect(depth).toBe(209)\n";
    log += "       |                   ^\n";
    log += "    156|   })\n\n";
    log += "⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯[1/1]⎯\n\n";
    log += " Test Files  1 failed | 4 passed (5)\n";
    log += "      Tests  1 failed | 399 passed (400)\n";
    log += "   Start at  12:00:01\n";
    log += "   Duration  2.67s (transform 236ms, setup 0ms, collect 282ms, tests 98ms)\n";
    log
}

#[test]
fn seed_scenario_3_vitest_log_with_one_failure_keeps_every_anchor() {
    let log = vitest_log(362);
    let c = compress_log(&log, &CompressOptions::default()).expect("compressed");
    println!(
        "scenario 3: {} lines → {} lines, saved {:.1} % (anchors {}, lost 0)",
        c.input_lines,
        c.output_lines,
        c.savings * 100.0,
        c.anchor_lines
    );
    assert!((390..=410).contains(&c.input_lines), "{}", c.input_lines);
    assert_eq!(lost_anchors(&log, &c), Vec::<String>::new());
    for must in [
        " × src/parser.test.ts > parser suite 2 > parses nested brackets 14ms",
        " FAIL  src/parser.test.ts > parser suite 2 > parses nested brackets",
        "AssertionError: expected 208 to be 209 // Object.is equality",
        "- Expected",
        "+ Received",
        "    155|     expect(depth).toBe(209)",
        " Test Files  1 failed | 4 passed (5)",
        "      Tests  1 failed | 399 passed (400)",
    ] {
        assert!(
            shown_lines(&c).contains(must),
            "missing {must:?} in\n{}",
            c.text
        );
    }
    assert!(c.savings >= 0.9, "saved only {:.3}\n{}", c.savings, c.text);
    assert!(c.output_lines <= 40, "{}", c.text);
    println!("{}", c.text);
}

#[test]
fn near_duplicate_noise_folds_to_first_line_times_n() {
    let mut log = String::new();
    for i in 0..120 {
        log += &format!(
            "2024-05-01T12:00:{:02}.{:03}Z INFO GET /api/items/{} 200 {}ms req=4f1c{:04x}-9a2b\n",
            i % 60,
            i * 7 % 1000,
            1000 + i,
            i % 13,
            i
        );
    }
    log += "2024-05-01T12:02:00.000Z ERROR GET /api/items/77 500: connection reset\n";
    for i in 0..60 {
        log += &format!("[{:>3}%] Building CXX object src/obj{i}.o\n", i * 100 / 60);
    }
    let c = compress_log(&log, &CompressOptions::default()).expect("compressed");
    let first = "2024-05-01T12:00:00.000Z INFO GET /api/items/1000 200 0ms req=4f1c0000-9a2b";
    assert!(c.text.contains(&format!("{first} ×120")), "{}", c.text);
    assert!(
        c.text.contains("[  0%] Building CXX object src/obj0.o ×60"),
        "{}",
        c.text
    );
    assert!(c.text.contains("ERROR GET /api/items/77 500"));
    assert_eq!(c.output_lines, 3, "{}", c.text);
    assert_eq!(c.omitted_lines, 178);
}

#[test]
fn anchors_fold_only_when_identical() {
    let mut log = String::new();
    for i in 0..30 {
        log += &format!("fetching shard {i}\n");
    }
    for _ in 0..25 {
        log += "npm WARN deprecated inflight@1.0.6: This module is not supported\n";
    }
    for attempt in 1..=5 {
        log += &format!("timeout connecting to db, attempt {attempt}\n");
    }
    for i in 0..30 {
        log += &format!("fetching shard {i}\n");
    }
    let c = compress_log(&log, &CompressOptions::default()).expect("compressed");
    assert!(
        c.text
            .contains("npm WARN deprecated inflight@1.0.6: This module is not supported ×25\n")
    );
    for attempt in 1..=5 {
        let line = format!("timeout connecting to db, attempt {attempt}");
        assert!(shown_lines(&c).contains(line.as_str()), "{}", c.text);
    }
    assert_eq!(lost_anchors(&log, &c), Vec::<String>::new());
}

#[test]
fn ansi_escapes_and_progress_frames_are_removed() {
    let mut log = String::new();
    for i in 0..50 {
        log += &format!("\x1b[32m✓\x1b[39m test {i} \x1b[2m(1ms)\x1b[22m\n");
    }
    log += "Downloading 10%\rDownloading 55%\rDownloading 100%\r\n";
    log += "\x1b[1m\x1b[31merror\x1b[39m\x1b[22m: \x1b]8;;https://x.test\x1b\\link\x1b]8;;\x1b\\ broke\r\n";
    for i in 0..50 {
        log += &format!("\x1b[2K\r\x1b[36mcompiling\x1b[0m unit {i}\n");
    }
    let c = compress_log(&log, &CompressOptions::default()).expect("compressed");
    assert!(
        !c.text.contains('\x1b') && !c.text.contains('\r'),
        "{:?}",
        c.text
    );
    assert!(
        c.text.contains("Downloading 100%\nerror: link broke\n"),
        "{}",
        c.text
    );
    assert!(!c.text.contains("55%"));
    assert_eq!(lost_anchors(&log, &c), Vec::<String>::new());
}

/// `lines` of noise, then `block`, then noise again.
fn embedded(block: &str) -> String {
    let noise = |from: usize| -> String {
        (from..from + 150)
            .map(|i| format!("step {i}: processed batch of {} records\n", i * 3))
            .collect()
    };
    format!("{}{block}{}", noise(0), noise(150))
}

#[test]
fn stack_blocks_are_kept_whole_in_each_language() {
    let blocks = [
        (
            "rust",
            "thread 'main' panicked at src/main.rs:4:5:\nindex out of bounds: the len is 0 but the index is 3\nstack backtrace:\n   0: rust_begin_unwind\n             at /rustc/abc/library/std/src/panicking.rs:665:5\n   1: core::panicking::panic_fmt\n             at /rustc/abc/library/core/src/panicking.rs:76:14\n   2: app::load\n             at ./src/main.rs:4:5\n   3: app::main\n             at ./src/main.rs:9:5\n   4: core::ops::function::FnOnce::call_once\n             at /rustc/abc/library/core/src/ops/function.rs:250:5\nnote: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.\n",
        ),
        (
            "python",
            "Traceback (most recent call last):\n  File \"/srv/app/main.py\", line 40, in <module>\n    run(config)\n  File \"/srv/app/main.py\", line 31, in run\n    step.apply(doc)\n  File \"/srv/app/steps.py\", line 12, in apply\n    return self.fn(doc[\"body\"])\n           ^^^^^^^^^^^^^^^^^^^^\n  File \"/srv/app/steps.py\", line 7, in convert\n    return int(value, 16)\nValueError: invalid literal for int() with base 16: 'zz'\n",
        ),
        (
            "javascript",
            "TypeError: Cannot read properties of undefined (reading 'fetch')\n    at Store.load (/app/src/store.js:9:34)\n    at Store.get (/app/src/store.js:6:43)\n    at Object.<anonymous> (/app/src/store.test.js:96:14)\n    at Promise.then.completed (/app/node_modules/jest-circus/build/utils.js:298:28)\n    at new Promise (<anonymous>)\n    at callAsyncCircusFn (/app/node_modules/jest-circus/build/utils.js:231:10)\n    at _callCircusTest (/app/node_modules/jest-circus/build/run.js:316:40)\n",
        ),
        (
            "go",
            "panic: assignment to entry in nil map\n\ngoroutine 1 [running]:\nmain.(*Ledger).Post(...)\n\t/srv/ledger/ledger.go:5\nmain.Replay({0xc000012345, 0x2, 0x2})\n\t/srv/ledger/ledger.go:10 +0x1d\nmain.main()\n\t/srv/ledger/main.go:14 +0x45\nexit status 2\n",
        ),
        (
            "java",
            "Exception in thread \"main\" java.lang.IllegalStateException: import aborted\n\tat Importer.main(Importer.java:48)\nCaused by: Importer$ImportException: row 251 has a bad quantity\n\tat Importer.importRow(Importer.java:21)\n\tat Importer.importAll(Importer.java:28)\n\tat Importer.main(Importer.java:46)\nCaused by: java.lang.NumberFormatException: For input string: \"twelve\"\n\tat java.base/java.lang.Integer.parseInt(Integer.java:668)\n\tat Importer.parseField(Importer.java:14)\n\tat Importer.parseField(Importer.java:12)\n\tat Importer.parseField(Importer.java:12)\n\tat Importer.importRow(Importer.java:19)\n\t... 2 more\n",
        ),
    ];
    for (language, block) in blocks {
        let log = embedded(block);
        let c = compress_log(&log, &CompressOptions::default()).expect(language);
        assert!(
            expand(&c.text).contains(block),
            "{language}: block cut in\n{}",
            c.text
        );
        assert!(c.savings > 0.8, "{language}: {}", c.savings);
        assert_eq!(lost_anchors(&log, &c), Vec::<String>::new(), "{language}");
    }
}

#[test]
fn orphan_frames_far_from_anchors_are_folded() {
    let block = "    at a (/x.js:1:1)\n    at b (/x.js:2:2)\n    at c (/x.js:3:3)\n";
    let log = format!("{}{}error: late\n", embedded(block), noise(20));
    let c = compress_log(&log, &CompressOptions::default()).expect("compressed");
    assert!(!c.text.contains("at b (/x.js:2:2)"), "{}", c.text);
    assert!(c.text.ends_with("error: late\n"));
}

fn noise(lines: usize) -> String {
    (0..lines)
        .map(|i| format!("line {i}: {}\n", ["alpha", "beta", "gamma", "delta"][i % 4]))
        .collect()
}

#[test]
fn logs_under_40_lines_are_left_alone() {
    let options = CompressOptions::default();
    let short = format!("{}error: boom\n", noise(38));
    assert_eq!(short.lines().count(), 39);
    assert_eq!(compress_log(&short, &options), None);
    let long = format!("{}error: boom\n", noise(39));
    let c = compress_log(&long, &options).expect("40 lines compress");
    assert_eq!(c.input_lines, 40);
}

#[test]
fn savings_under_15_percent_leave_the_log_alone() {
    let any = CompressOptions {
        min_savings: 0.0,
        ..CompressOptions::default()
    };
    // Every third line an anchor: context covers every line, nothing to fold.
    let mut log = String::new();
    for i in 0..60 {
        log += &if i % 3 == 0 {
            format!("warning: unused variable `v{i}`\n")
        } else {
            format!("  {}\n", ["alpha", "beta"][i % 3 - 1])
        };
    }
    assert_eq!(
        compress_log(&log, &any),
        None,
        "an unchanged log is not a compression"
    );

    // An anchor every 8 lines: a little is folded, well under 15 %.
    let mut log = String::new();
    for i in 0..120 {
        log += &if i % 8 == 0 {
            format!("error: check {i} failed\n")
        } else {
            format!("{} {i}\n", ["alpha", "beta", "gamma"][i % 3])
        };
    }
    let saved = compress_log(&log, &any).expect("something folds").savings;
    assert!(saved > 0.0 && saved < 0.15, "{saved}");
    assert_eq!(compress_log(&log, &CompressOptions::default()), None);

    // The threshold is inclusive of the figure it would reach, exclusive above it.
    let at = |min_savings| {
        compress_log(
            &log,
            &CompressOptions {
                min_savings,
                ..CompressOptions::default()
            },
        )
    };
    assert!(at(saved).is_some());
    assert!(at(saved + 1e-9).is_none());
}

#[test]
fn compression_never_grows_the_output() {
    let tight = CompressOptions {
        min_lines: 0,
        context: 0,
        min_savings: 0.0,
        ..CompressOptions::default()
    };
    // Short lines between anchors: a marker would be longer than what it hides.
    let log = "error\na\nb\nc\nd\n".repeat(30);
    assert_eq!(compress_log(&log, &tight), None);
    // Four two-character CJK lines are more bytes than a marker but fewer characters.
    let log = "error\n日志\n构建\n测试\n编译\n".repeat(30);
    assert_eq!(compress_log(&log, &tight), None);
    // Ten of them are worth a marker, in bytes and in characters.
    let log = "error\n日志\n构建\n测试\n编译\n运行\n日志\n构建\n测试\n编译\n运行\n".repeat(30);
    let c = compress_log(&log, &tight).expect("folds");
    assert!(c.text.len() < log.len() && c.text.chars().count() < log.chars().count());
    assert!(
        c.text.starts_with("error\n… [10 lines omitted]\nerror\n"),
        "{}",
        c.text
    );
}

#[test]
fn toolgate_failure_stamps_are_anchors() {
    let log = format!(
        "{}error: `run_shell` timed out after 120 s and was stopped; narrow the request\n{}",
        noise(100),
        noise(100)
    );
    let c = compress_log(&log, &CompressOptions::default()).expect("compressed");
    assert!(c.text.contains("error: `run_shell` timed out after 120 s"));
    // run_shell's status lines (crates/shell), whatever follows them.
    for stamp in [
        "command failed: exit code 2 · 1.2 s",
        "command failed: killed by SIGKILL · 4.0 s",
        "command failed (timeout): still running after 2 min 0 s (timeout_ms 120000)",
        "command cancelled after 3.1 s; its process group was stopped",
        "stopped because the session ended after 9 s; its process group was stopped",
        "exit code 0 · 0.31 s",
    ] {
        let log = format!("{stamp}\n{}", noise(100));
        let c = compress_log(&log, &CompressOptions::default()).expect("compressed");
        assert!(c.text.starts_with(&format!("{stamp}\n")), "{}", c.text);
    }
}

/// Found by the proptest: a log ending in blank lines and a last line of spaces, without a
/// final newline, lost its last shown line from the text while counting it.
#[test]
fn blank_last_line_without_newline_is_still_a_line() {
    let log = format!("{}error: boom\n\n\n ", noise(60));
    let c = compress_log(&log, &CompressOptions::default()).expect("compressed");
    assert_eq!(c.text.lines().count(), c.output_lines, "{:?}", c.text);
    assert!(c.text.ends_with("error: boom\n\n"), "{:?}", c.text);
}

/// Found by the proptest: a last line made only of an escape sequence, without a final
/// newline, was cleaned away and no longer counted as a line.
#[test]
fn a_last_line_of_debris_is_still_counted() {
    let log = format!("{}error: boom\n\x1b[0m", noise(60));
    let c = compress_log(&log, &CompressOptions::default()).expect("compressed");
    assert_eq!(c.input_lines, log.lines().count());
    assert_eq!(c.text.lines().count(), c.output_lines, "{:?}", c.text);
}
