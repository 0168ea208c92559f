//! What run_shell returns: exit codes, both streams, excerpts and pointers.

use serde_json::json;

use crate::fixtures::{Env, field};

#[tokio::test]
async fn exit_code_and_both_streams_are_kept_apart() {
    let env = Env::new();
    let out = env
        .sh("echo to-out; echo to-err >&2; echo more-out; exit 3")
        .await;
    assert!(out.is_error, "a non-zero exit is a failed result");
    assert_eq!(field(&out, "status"), "exited");
    assert_eq!(field(&out, "exit_code"), 3);
    assert!(
        out.text.starts_with("command failed: exit code 3 · "),
        "{}",
        out.text
    );
    assert!(
        out.text
            .contains("--- stdout ---\nto-out\nmore-out\n--- stderr ---\nto-err\n"),
        "{}",
        out.text
    );
    assert_eq!(field(&out, "stdout")["bytes"], 16);
    assert_eq!(field(&out, "stdout")["lines"], 2);
    assert_eq!(field(&out, "stderr")["bytes"], 7);
    assert_eq!(field(&out, "truncated"), false);
    assert!(out.field("reason").is_none());
    assert!(
        field(&out, "stdout").get("path").is_none(),
        "nothing was cut: no file"
    );
}

#[tokio::test]
async fn success_is_not_an_error_and_silence_says_so() {
    let env = Env::new();
    let out = env.sh("true").await;
    assert!(!out.is_error);
    assert_eq!(field(&out, "exit_code"), 0);
    assert!(out.text.starts_with("exit code 0 · "), "{}", out.text);
    assert!(out.text.ends_with("(no output)\n"), "{}", out.text);
}

#[tokio::test]
async fn death_by_signal_is_named() {
    let env = Env::new();
    let out = env.sh("echo before; kill -SEGV $$").await;
    assert!(out.is_error);
    assert_eq!(field(&out, "status"), "killed");
    assert_eq!(field(&out, "signal"), "SIGSEGV");
    assert!(out.structured.get("exit_code").is_none());
    assert!(out.text.contains("killed by SIGSEGV"), "{}", out.text);
    assert!(out.text.contains("before"), "{}", out.text);
}

#[tokio::test]
async fn stdin_is_closed() {
    let env = Env::new();
    // `cat` with a terminal or an open pipe would wait forever; with /dev/null it ends.
    let out = env.sh("cat; echo done").await;
    assert_eq!(field(&out, "exit_code"), 0);
    assert!(out.text.contains("done"));
}

#[tokio::test]
async fn ansi_and_progress_frames_are_removed_from_the_text_only() {
    let env = Env::new();
    let script =
        r"printf '\033[1;31merror\033[0m: red\n'; printf 'get 10%%\rget 50%%\rget 100%%\n'";
    let out = env.sh(script).await;
    assert!(
        out.text.contains("--- stdout ---\nerror: red\nget 100%\n"),
        "{:?}",
        out.text
    );
    assert!(!out.text.contains('\u{1b}') && !out.text.contains('\r'));

    // Long enough to be cut: the file keeps the raw bytes.
    let long = r"for i in $(seq 1 3000); do printf '\033[32mok\033[0m %d\r\n' $i; done";
    let out = env.sh(long).await;
    let path = field(&out, "stdout")["path"].as_str().unwrap().to_owned();
    let raw = fs_err::read(&path).unwrap();
    assert!(
        raw.starts_with(b"\x1b[32mok\x1b[0m 1\r\n"),
        "{:?}",
        &raw[..20]
    );
    assert!(out.text.contains("\nok 2\nok 3\n"), "{}", &out.text[..300]);
    assert!(!out.text.contains('\u{1b}'));
}

#[tokio::test]
async fn non_utf8_output_is_lossy_in_the_text_and_exact_on_disk() {
    let env = Env::new();
    let out = env.sh(r"printf 'a\377b\n'").await;
    assert!(out.text.contains("a\u{fffd}b\n"), "{:?}", out.text);
    let out = env
        .sh(r"for i in $(seq 1 9000); do printf '\377\376%d\n' $i; done")
        .await;
    let path = field(&out, "stdout")["path"].as_str().unwrap().to_owned();
    let raw = fs_err::read(&path).unwrap();
    let expected: Vec<u8> = (1..=9000)
        .flat_map(|i| {
            let mut line = vec![0xff, 0xfe];
            line.extend(format!("{i}\n").into_bytes());
            line
        })
        .collect();
    assert_eq!(raw, expected);
    assert_eq!(field(&out, "stdout")["bytes"], expected.len());
}

#[tokio::test]
async fn a_failed_long_log_is_compressed_and_keeps_its_last_error_line() {
    let env = Env::new();
    let script = "for i in $(seq 1 60000); do echo \"compiling unit $i\"; done; \
                  echo 'error[E0308]: mismatched types at src/last.rs:42'; exit 101";
    let out = env.sh(script).await;
    assert!(out.is_error);
    assert_eq!(field(&out, "exit_code"), 101);
    let text = &out.text;
    assert!(
        text.contains("error[E0308]: mismatched types at src/last.rs:42"),
        "{text}"
    );
    assert!(
        text.contains("compiling unit 1 ×59999\ncompiling unit 60000\nerror[E0308]"),
        "the whole stream was compressed: near-duplicates folded into one line, the last one before the error shown as itself: {text}"
    );
    assert_eq!(field(&out, "stdout")["shown"], "log");
    assert!(
        !text.contains("compiling unit 30000\n"),
        "the middle is not"
    );
    assert!(
        text.chars().count() < 20_000,
        "{} chars",
        text.chars().count()
    );
    assert_eq!(field(&out, "truncated"), true);
    assert_eq!(field(&out, "reason"), "payload_limit");
    // The pointer: where, how big, how to get it; tail-biased offset for a failure.
    let path = field(&out, "stdout")["path"].as_str().unwrap().to_owned();
    let shown = path
        .strip_prefix(&format!("{}/", env.root.display()))
        .unwrap();
    assert!(text.contains(&format!("saved to `{shown}`")), "{text}");
    assert!(text.contains("60,001 lines"), "{text}");
    assert!(text.contains("\"offset\": 59802"), "{text}");
    assert!(text.contains("do not rerun the command"));
}

#[tokio::test]
async fn success_excerpt_is_head_biased_with_a_pointer() {
    let env = Env::new();
    let out = env.sh("seq 1 200000").await;
    assert!(!out.is_error);
    let text = &out.text;
    assert!(
        text.contains("--- stdout: 1,288,895 bytes, 200,000 lines; excerpt ---\n1\n2\n3\n"),
        "{}",
        &text[..200]
    );
    assert!(text.contains("200000\n"), "a little of the tail too");
    assert!(!text.contains("\n100000\n"));
    assert!(
        text.contains("\"offset\": 1, \"limit\": 200"),
        "head-biased pointer"
    );
    let path = field(&out, "stdout")["path"].as_str().unwrap().to_owned();
    let expected: String = (1..=200_000).map(|i| format!("{i}\n")).collect();
    assert_eq!(fs_err::read_to_string(path).unwrap(), expected);
}

#[tokio::test]
async fn a_stream_that_fits_memory_but_not_the_excerpt_is_saved_for_the_pointer() {
    let env = Env::new();
    // 30,000 bytes: inside the 64 KiB window, over the 16,000-character excerpt.
    let out = env.sh("head -c 30000 /dev/zero | tr '\\0' y").await;
    let path = field(&out, "stdout")["path"].as_str().unwrap().to_owned();
    assert_eq!(fs_err::read(path).unwrap(), vec![b'y'; 30_000]);
    assert_eq!(field(&out, "truncated"), true);
}

#[tokio::test]
async fn cwd_is_confined_to_the_roots() {
    let env = Env::new();
    let out = env
        .call("run_shell", json!({ "command": "pwd", "cwd": "sub" }))
        .await;
    assert!(
        out.text.contains(&format!("{}/sub\n", env.root.display())),
        "{}",
        out.text
    );
    assert_eq!(field(&out, "cwd"), "sub");
    let out = env
        .call("run_shell", json!({ "command": "pwd", "cwd": "/" }))
        .await;
    assert!(out.is_error);
    assert!(out.text.starts_with("cwd: "), "{}", out.text);
    let out = env
        .call("run_shell", json!({ "command": "pwd", "cwd": "missing" }))
        .await;
    assert!(out.is_error, "{}", out.text);
}

#[tokio::test]
async fn arguments_are_checked() {
    let env = Env::new();
    let out = env.call("run_shell", json!({ "command": "  " })).await;
    assert!(
        out.is_error && out.text.contains("`command`"),
        "{}",
        out.text
    );
    let out = env
        .call("run_shell", json!({ "command": "true", "timeout_ms": 0 }))
        .await;
    assert!(
        out.is_error && out.text.contains("`timeout_ms`"),
        "{}",
        out.text
    );
    let out = env
        .call("run_shell", json!({ "command": "true", "timeout": 5 }))
        .await;
    assert!(out.is_error && out.text.contains("timeout"), "{}", out.text);
    let out = env.sh("echo a\u{0}b").await;
    assert!(out.text.contains("contains a NUL byte"), "{}", out.text);
    let huge = format!("echo {}", "x".repeat(200_000));
    let out = env.sh(&huge).await;
    assert!(
        out.text.contains("write it to a script file"),
        "{}",
        out.text
    );
    let out = env
        .call(
            "run_shell",
            json!({ "command": "true", "timeout_ms": 900_000 }),
        )
        .await;
    assert!(!out.is_error);
    assert!(
        out.text
            .contains("timeout_ms 900000 was lowered to the maximum 600000"),
        "{}",
        out.text
    );
}

#[tokio::test]
async fn binary_output_is_a_short_note_with_a_pointer_not_nul_characters() {
    // Regression: 2 GB of zeros reached the model as 16,000 `\u0000` characters.
    let env = Env::new();
    let out = env
        .sh("head -c 3000000 /dev/zero; printf 'ELF\\001header text\\000\\002' >&2")
        .await;
    assert!(!out.is_error, "{}", out.text);
    assert!(!out.text.contains('\0'), "no NUL reaches the model");
    assert!(
        out.text.contains(
            "[binary output: 3,000,000 bytes, not shown as text. First bytes (hex): 00 00"
        ),
        "{}",
        out.text
    );
    assert!(
        out.text.contains("\"header text\""),
        "strings of stderr: {}",
        out.text
    );
    assert!(out.text.len() < 2_500, "{} chars", out.text.len());
    let path = field(&out, "stdout")["path"].as_str().unwrap().to_owned();
    assert_eq!(
        fs_err::metadata(path).unwrap().len(),
        3_000_000,
        "verbatim on disk"
    );
    // Text with a few odd bytes is still text.
    let out = env.sh("printf 'caf\\351 ol\\351\\n'").await;
    assert!(out.text.contains("caf"), "{}", out.text);
    assert!(!out.text.contains("binary output"), "{}", out.text);
}
