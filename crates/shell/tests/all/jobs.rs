//! Background jobs: paging, job_kill, the job limit.

use std::time::Duration;

use serde_json::{Value, json};
use toolgate_core::ToolOutput;
use toolgate_test_support::wait_until_async;

use crate::fixtures::{Env, eventually, field, host_group, live_in_group, marker, with_marker};

async fn start(env: &Env, command: &str) -> ToolOutput {
    let out = env
        .call(
            "run_shell",
            json!({ "command": command, "background": true }),
        )
        .await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(field(&out, "status"), "running");
    out
}

fn job_id(out: &ToolOutput) -> String {
    field(out, "job_id").as_str().unwrap().to_owned()
}

/// Pages through a stream from offset 0 until eof, checking the pagination fields of every
/// page, and returns the bytes read.
async fn read_all(env: &Env, id: &str, stream: &str, limit: u64) -> (Vec<u8>, ToolOutput) {
    let mut all = Vec::new();
    let mut offset = 0u64;
    for _ in 0..100_000 {
        let page = env
            .call(
                "job_output",
                json!({ "job_id": id, "offset": offset, "limit": limit, "stream": stream }),
            )
            .await;
        assert!(!page.is_error, "{}", page.text);
        let start = field(&page, "offset").as_u64().unwrap();
        let end = field(&page, "end_offset").as_u64().unwrap();
        let total = field(&page, "total").as_u64().unwrap();
        assert_eq!(start, offset);
        assert!(
            end - start <= limit,
            "page of {} bytes over limit {limit}",
            end - start
        );
        // The chunk is the text up to the footer; it is exactly end - start bytes.
        let chunk = &page.text.as_bytes()[..(end - start) as usize];
        all.extend_from_slice(chunk);
        let more = end < total;
        assert_eq!(field(&page, "truncated"), more);
        match page.field("next_offset") {
            Some(next) => {
                assert!(more);
                assert_eq!(next.as_u64(), Some(end));
                assert_eq!(field(&page, "reason"), "payload_limit");
            }
            None => {
                assert!(
                    !more,
                    "more exists but no next_offset: {:?}",
                    page.structured
                );
                assert!(page.field("reason").is_none());
            }
        }
        if field(&page, "eof") == Value::Bool(true) {
            assert!(!more);
            assert_ne!(field(&page, "status"), "running");
            return (all, page);
        }
        if !more {
            // Running and caught up: poll again a little later.
            assert_eq!(field(&page, "status"), "running");
            assert!(page.text.contains("no more output yet"), "{}", page.text);
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        offset = end;
    }
    panic!("never reached eof");
}

#[tokio::test]
async fn paging_reproduces_the_output_exactly() {
    let env = Env::new();
    // Multibyte characters so pages must not split them; output arrives over time so some
    // pages are read while the job runs; no newline at the very end.
    let cmd = "for i in $(seq 1 4000); do echo \"ligne $i — café €\"; \
               if [ $((i % 1000)) = 0 ]; then sleep 0.05; fi; done; printf 'fin sans retour'; \
               echo 'on stderr' >&2";
    let out = start(&env, cmd).await;
    let id = job_id(&out);
    assert!(
        out.text.starts_with(&format!("started {id} (pid ")),
        "{}",
        out.text
    );
    let mut expected: String = (1..=4000)
        .map(|i| format!("ligne {i} — café €\n"))
        .collect();
    expected.push_str("fin sans retour");

    let (bytes, last) = read_all(&env, &id, "stdout", 1000).await;
    assert_eq!(String::from_utf8(bytes).unwrap(), expected);
    assert_eq!(field(&last, "status"), "exited");
    assert_eq!(field(&last, "exit_code"), 0);
    assert!(last.text.contains("end of stdout"), "{}", last.text);
    assert!(last.text.contains("stderr has 10 bytes"), "{}", last.text);

    // Same again in one default-sized read after the end, then stderr.
    let (bytes, _) = read_all(&env, &id, "stdout", 49_152).await;
    assert_eq!(bytes, expected.as_bytes());
    let (bytes, _) = read_all(&env, &id, "stderr", 3).await;
    assert_eq!(bytes, b"on stderr\n");

    // The stream's file is the same bytes (readable with read_file too).
    let path = field(&last, "path").as_str().unwrap().to_owned();
    assert_eq!(fs_err::read_to_string(path).unwrap(), expected);
}

#[tokio::test]
async fn paging_errors_say_what_to_do() {
    let env = Env::new();
    let id = job_id(&start(&env, "echo hi").await);
    let past = env
        .call("job_output", json!({ "job_id": id, "offset": 1000 }))
        .await;
    assert!(past.is_error);
    assert!(
        past.text.contains("offset 1000 is past the end"),
        "{}",
        past.text
    );
    let zero = env
        .call("job_output", json!({ "job_id": id, "limit": 0 }))
        .await;
    assert!(
        zero.is_error && zero.text.contains("`limit`"),
        "{}",
        zero.text
    );
    let unknown = env.call("job_output", json!({ "job_id": "job-99" })).await;
    assert!(unknown.is_error);
    assert!(
        unknown.text.contains(&format!(
            "no job `job-99` in this session; known jobs, newest first: {id}"
        )),
        "{}",
        unknown.text
    );
    let fresh = Env::new();
    let none = fresh.call("job_kill", json!({ "job_id": "job-1" })).await;
    assert!(
        none.text.contains("started no background jobs"),
        "{}",
        none.text
    );
}

#[tokio::test]
async fn job_kill_ends_the_whole_group() {
    let env = Env::new();
    let out = start(&env, "echo started; sleep 1000 & (sleep 1000) & wait").await;
    let id = job_id(&out);
    let pgid = host_group(field(&out, "pid").as_i64().unwrap() as i32);
    // Kill it once it has printed (and so started its children).
    let stdout = field(&out, "stdout")["path"].as_str().unwrap().to_owned();
    assert!(eventually(|| fs_err::metadata(&stdout).is_ok_and(|m| m.len() > 0)).await);
    assert!(!live_in_group(pgid).is_empty());
    let killed = env.call("job_kill", json!({ "job_id": id })).await;
    assert!(!killed.is_error, "{}", killed.text);
    assert_eq!(field(&killed, "status"), "killed");
    assert_eq!(field(&killed, "signal"), "SIGTERM");
    assert!(
        killed
            .text
            .contains(&format!("{id} killed by job_kill after")),
        "{}",
        killed.text
    );
    assert_eq!(live_in_group(pgid), vec![]);

    // Its output stays readable, and a second kill is not an error.
    let page = env.call("job_output", json!({ "job_id": id })).await;
    assert_eq!(field(&page, "status"), "killed");
    assert_eq!(field(&page, "eof"), true);
    assert!(page.text.starts_with("started\n"), "{}", page.text);
    let again = env.call("job_kill", json!({ "job_id": id })).await;
    assert!(!again.is_error);
    assert!(again.text.contains("had already ended"), "{}", again.text);
}

#[tokio::test]
async fn job_timeout_stops_the_group() {
    let env = Env::new();
    let m = marker();
    let out = env
        .call(
            "run_shell",
            json!({ "command": format!("sleep {m} & sleep {m}"), "background": true, "timeout_ms": 200 }),
        )
        .await;
    let id = job_id(&out);
    let (_, last) = read_all(&env, &id, "stdout", 100).await;
    assert_eq!(field(&last, "status"), "timed_out");
    assert!(last.text.contains("timed out after"), "{}", last.text);
    assert_eq!(with_marker(&m), vec![]);
}

#[tokio::test]
async fn the_job_limit_names_the_running_jobs() {
    let env = Env::new();
    let mut ids = Vec::new();
    for i in 0..64 {
        ids.push(job_id(
            &start(&env, &format!("sleep 1000 # job number {i}")).await,
        ));
    }
    let refused = env
        .call(
            "run_shell",
            json!({ "command": "echo one too many", "background": true }),
        )
        .await;
    assert!(refused.is_error);
    let text = &refused.text;
    assert!(
        text.contains("64 background jobs are already running (the limit)"),
        "{text}"
    );
    assert!(text.contains("stop one with job_kill"), "{text}");
    assert!(
        text.contains("job-1 (`sleep 1000 # job number 0`)"),
        "{text}"
    );
    assert!(
        text.contains("job-64 (`sleep 1000 # job number 63`)"),
        "{text}"
    );

    // Foreground commands are not jobs and still run.
    assert!(!env.sh("true").await.is_error);
    // Stopping one makes room.
    let killed = env.call("job_kill", json!({ "job_id": ids[10] })).await;
    assert!(!killed.is_error, "{}", killed.text);
    let more = start(&env, "echo fits").await;
    assert_eq!(job_id(&more), "job-65");
}

#[tokio::test]
async fn a_finished_jobs_long_log_is_shown_compressed_first_and_raw_on_request() {
    // Regression: job_output only paged raw bytes, so a finished job's failing test log
    // reached the model 32 KiB at a time, mostly `test … ok` lines.
    let env = Env::new();
    let cmd = "for i in $(seq 1 3000); do echo \"test m::t$i ... ok\"; done; \
               echo 'test m::bad ... FAILED'; \
               printf '\\nfailures:\\n\\n---- m::bad stdout ----\\n'; \
               printf \"thread 'm::bad' panicked at src/lib.rs:9:5:\\nassertion failed: broke\\n\"; \
               printf '\\ntest result: FAILED. 3000 passed; 1 failed\\n'; exit 101";
    let out = start(&env, cmd).await;
    let id = job_id(&out);
    // Wait for the end (raw pages: an offset is given).
    let (env_ref, id_ref) = (&env, &id);
    wait_until_async("the job to end", || async move {
        let page = env_ref
            .call(
                "job_output",
                json!({"job_id": id_ref, "offset": 0, "limit": 1}),
            )
            .await;
        field(&page, "status") != "running"
    })
    .await;
    let first = env.call("job_output", json!({"job_id": id})).await;
    assert!(!first.is_error, "{}", first.text);
    assert_eq!(field(&first, "shown"), "log", "{}", first.text);
    for needle in [
        "compressed log",
        "test m::bad ... FAILED",
        "assertion failed: broke",
        "test result: FAILED. 3000 passed; 1 failed",
        "\"offset\": 0",
    ] {
        assert!(first.text.contains(needle), "{needle}: {}", first.text);
    }
    assert!(first.text.len() < 8_000, "{} chars", first.text.len());
    assert_eq!(field(&first, "next_offset"), 0);
    // With an offset, the raw bytes as before.
    let raw = env
        .call("job_output", json!({"job_id": id, "offset": 0}))
        .await;
    assert_eq!(field(&raw, "shown"), "raw");
    assert!(raw.text.starts_with("test m::t1 ... ok\n"), "{}", raw.text);
}
