//! The audit log through the assembled runtime: one whole JSON line per call, digests
//! instead of argument values, rotation, and a log that cannot be written never failing
//! a call.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolgate_config::AuditConfig;
use toolgate_core::{CallContext, RawArgs, ToolOutput};
use toolgate_runtime::{Runtime, digest};

use super::{load, options, write};

/// A runtime over a fresh project with `audit` set and `write_file` denied.
fn runtime_with(audit: AuditConfig) -> (tempfile::TempDir, Runtime) {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("notes.txt"), "the secret plan\n");
    let mut config = load(&options(dir.path(), None)).unwrap().config;
    config.permissions.deny = vec!["write_file".into()];
    config.audit = audit;
    let runtime = Runtime::new(config, dir.path()).unwrap();
    (dir, runtime)
}

fn log_at(dir: &Path) -> AuditConfig {
    AuditConfig {
        path: Some(dir.join("logs/audit.jsonl")),
        ..AuditConfig::default()
    }
}

async fn call(runtime: &Runtime, name: &str, args: Value) -> ToolOutput {
    runtime
        .dispatcher
        .call(name, RawArgs::Json(args), CallContext::unattended())
        .await
}

/// Every line of `path`, parsed (a line that does not parse fails the test).
fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a whole line ({e}): {l}")))
        .collect()
}

fn block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

#[test]
fn lines_name_the_call_its_decision_and_outcome_with_a_digest_not_the_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let (project, runtime) = runtime_with(log_at(dir.path()));
    block_on(async {
        let out = call(&runtime, "read_file", json!({"path": "notes.txt"})).await;
        assert!(!out.is_error, "{out:?}");
        let out = call(
            &runtime,
            "write_file",
            json!({"path": "x.txt", "content": "hunter2"}),
        )
        .await;
        assert!(out.is_error);
        let out = call(&runtime, "read_file", json!({"path": "missing-file.txt"})).await;
        assert!(out.is_error);
    });
    let path = dir.path().join("logs/audit.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    for secret in ["hunter2", "notes.txt", "missing-file"] {
        assert!(!text.contains(secret), "argument values leaked: {text}");
    }
    let lines = lines(&path);
    assert_eq!(lines.len(), 3, "{text}");
    let [read, denied, failed] = &lines[..] else {
        unreachable!()
    };
    assert_eq!(read["tool"], "read_file");
    assert_eq!(read["resolved"], "read_file");
    assert_eq!(read["decision"], "allowed");
    assert_eq!(read["outcome"], "ok");
    assert_eq!(read["args_sha256"], digest(&json!({"path": "notes.txt"})));
    assert!(read.get("args").is_none());
    assert!(read["result_bytes"].as_u64().unwrap() > 0);
    assert_eq!(read["spilled"], false);
    assert!(read["duration_ms"].is_u64());
    assert_eq!(read["session"].as_str().unwrap().len(), 16);
    assert_eq!(
        read["subject"],
        Value::Null,
        "no identity outside team mode"
    );
    let time = read["time"].as_str().unwrap();
    assert!(
        time.ends_with('Z') && time.len() == 24 && &time[10..11] == "T",
        "{time}"
    );

    assert_eq!(denied["decision"], "denied");
    assert_eq!(denied["rule"], r#"deny = ["write_file"]"#);
    assert_eq!(denied["rule_source"], "config");
    assert_eq!(denied["outcome"], "refused");
    assert_eq!(failed["decision"], "allowed");
    assert_eq!(failed["outcome"], "tool_error");

    // Only the owner may read it; its folder was created.
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    drop(project);
}

#[test]
fn with_arguments_on_lines_carry_the_values() {
    let dir = tempfile::tempdir().unwrap();
    let audit = AuditConfig {
        arguments: true,
        ..log_at(dir.path())
    };
    let (_project, runtime) = runtime_with(audit);
    block_on(call(
        &runtime,
        "read_file",
        json!({"path": "notes.txt", "limit": 1}),
    ));
    let lines = lines(&dir.path().join("logs/audit.jsonl"));
    assert_eq!(lines[0]["args"], json!({"path": "notes.txt", "limit": 1}));
    assert_eq!(
        lines[0]["args_sha256"],
        digest(&json!({"limit": 1, "path": "notes.txt"}))
    );
}

/// Every file of the log: `audit.jsonl` and its rotated `.N` siblings.
fn log_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("logs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

fn parallel_calls(runtime: &Runtime, n: usize) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let calls = (0..n).map(|i| {
            let dispatcher = Arc::clone(&runtime.dispatcher);
            tokio::spawn(async move {
                let args = json!({"path": "notes.txt", "limit": i + 1});
                dispatcher
                    .call("read_file", RawArgs::Json(args), CallContext::unattended())
                    .await
            })
        });
        for out in futures::future::join_all(calls).await {
            assert!(!out.unwrap().is_error);
        }
    });
}

#[test]
fn two_hundred_parallel_calls_give_two_hundred_whole_lines_across_rotations() {
    let dir = tempfile::tempdir().unwrap();
    let audit = AuditConfig {
        max_bytes: 8 * 1024,
        keep: 1_000,
        ..log_at(dir.path())
    };
    let (_project, runtime) = runtime_with(audit);
    parallel_calls(&runtime, 200);
    let files = log_files(dir.path());
    assert!(files.len() > 2, "8 KiB files rotate: {files:?}");
    let mut sessions = std::collections::BTreeSet::new();
    for file in &files {
        assert!(
            std::fs::metadata(file).unwrap().len() <= 8 * 1024,
            "{file:?}"
        );
        for line in lines(file) {
            sessions.insert(line["session"].as_str().unwrap().to_owned());
        }
    }
    assert_eq!(sessions.len(), 200, "one line per call, none lost");
}

#[test]
fn rotation_keeps_keep_files_newest_first() {
    let dir = tempfile::tempdir().unwrap();
    let audit = AuditConfig {
        max_bytes: 2 * 1024,
        keep: 2,
        ..log_at(dir.path())
    };
    let (_project, runtime) = runtime_with(audit);
    block_on(async {
        for i in 0..40 {
            call(
                &runtime,
                "read_file",
                json!({"path": "notes.txt", "limit": i + 1}),
            )
            .await;
        }
    });
    let names: Vec<String> = log_files(dir.path())
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["audit.jsonl", "audit.jsonl.1", "audit.jsonl.2"]);
    // The files hold consecutive calls, oldest in `.2`, the last call last in `audit.jsonl`.
    let digests: Vec<Value> = ["audit.jsonl.2", "audit.jsonl.1", "audit.jsonl"]
        .iter()
        .flat_map(|name| lines(&dir.path().join("logs").join(name)))
        .map(|line| line["args_sha256"].clone())
        .collect();
    let expected: Vec<Value> = (40 - digests.len()..40)
        .map(|i| json!(digest(&json!({"path": "notes.txt", "limit": i + 1}))))
        .collect();
    assert_eq!(digests, expected, "no line lost between the kept files");
}

/// Captures what toolgate logs, as text.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn an_unwritable_log_warns_once_and_calls_still_succeed() {
    let dir = tempfile::tempdir().unwrap();
    // A file where the log's folder should be: the folder cannot be created.
    write(&dir.path().join("logs"), "not a folder");
    let (_project, runtime) = runtime_with(log_at(dir.path()));
    let captured = Captured::default();
    let sink = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || sink.clone())
        .with_ansi(false)
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        block_on(async {
            for _ in 0..3 {
                let out = call(&runtime, "read_file", json!({"path": "notes.txt"})).await;
                assert!(!out.is_error, "{out:?}");
                assert!(out.text.contains("the secret plan"));
            }
        })
    });
    let logged = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert_eq!(
        logged.matches("cannot write the audit log").count(),
        1,
        "warned once: {logged}"
    );
    assert!(
        logged.contains("WARN") && logged.contains("logs"),
        "{logged}"
    );
}
