//! Scheduling across and within sessions (issue: one process-wide lock made every session
//! wait for any mutating call, and pipelined calls of one session ran out of order).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolgate_core::{
    CallContext, Concurrency, DynTool, Footprint, Policy, RawArgs, Resource, Tool, ToolError,
    ToolMeta, ToolOutput, TypedTool,
};

use crate::fixtures::dispatcher_with;

/// Arguments of [`Step`].
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct StepArgs {
    /// The file (a key in the shared "disk").
    file: String,
    /// Appended to the file's content.
    text: String,
    /// How long the change takes.
    #[serde(default)]
    ms: u64,
    /// The call's own limit, like run_shell's.
    #[serde(default)]
    #[allow(dead_code)]
    timeout_ms: Option<u64>,
}

/// A "disk" of named files, and a log of which files were being changed at once.
#[derive(Default)]
struct Disk {
    files: Mutex<HashMap<String, String>>,
    busy: Mutex<Vec<String>>,
    /// Most writers of one file at once, and most writers of any files at once.
    max_same: Mutex<usize>,
    max_any: Mutex<usize>,
}

/// `step_write` (mutating, declares its file), `step_read` (read-only) and `step_job`
/// (detached): tools that change or read [`Disk`].
struct Step {
    disk: Arc<Disk>,
    concurrency: Concurrency,
}

impl Tool for Step {
    type Args = StepArgs;
    type Output = ();

    fn name(&self) -> &str {
        match self.concurrency {
            Concurrency::Mutating => "step_write",
            Concurrency::ReadOnly => "step_read",
            Concurrency::Detached => "step_job",
        }
    }
    fn description(&self) -> &str {
        "Appends to or reads a file of a test disk."
    }
    fn meta(&self) -> ToolMeta {
        ToolMeta {
            concurrency: self.concurrency,
            action: "test.step".to_owned(),
            ..ToolMeta::default()
        }
    }
    fn footprint(&self, args: &Value) -> Footprint {
        Footprint {
            resources: args["file"]
                .as_str()
                .map(|f| Resource::Path(f.into()))
                .into_iter()
                .collect(),
            timeout: args["timeout_ms"].as_u64().map(Duration::from_millis),
        }
    }
    async fn call(&self, args: StepArgs, _ctx: CallContext) -> Result<ToolOutput, ToolError> {
        if self.concurrency != Concurrency::Mutating {
            tokio::time::sleep(Duration::from_millis(args.ms)).await;
            let files = self.disk.files.lock().unwrap();
            return Ok(ToolOutput::text(
                files.get(&args.file).cloned().unwrap_or_default(),
            ));
        }
        {
            let mut busy = self.disk.busy.lock().unwrap();
            busy.push(args.file.clone());
            let same = busy.iter().filter(|f| **f == args.file).count();
            let mut max_same = self.disk.max_same.lock().unwrap();
            *max_same = (*max_same).max(same);
            let mut max_any = self.disk.max_any.lock().unwrap();
            *max_any = (*max_any).max(busy.len());
        }
        tokio::time::sleep(Duration::from_millis(args.ms)).await;
        self.disk
            .files
            .lock()
            .unwrap()
            .entry(args.file.clone())
            .or_default()
            .push_str(&args.text);
        let mut busy = self.disk.busy.lock().unwrap();
        if let Some(i) = busy.iter().position(|f| *f == args.file) {
            busy.remove(i);
        }
        Ok(ToolOutput::text("ok"))
    }
}

fn setup() -> (Arc<toolgate_core::Dispatcher>, Arc<Disk>) {
    let disk = Arc::new(Disk::default());
    let tools: Vec<Arc<dyn DynTool>> = [
        Concurrency::Mutating,
        Concurrency::ReadOnly,
        Concurrency::Detached,
    ]
    .into_iter()
    .map(|concurrency| {
        TypedTool::erased(Step {
            disk: Arc::clone(&disk),
            concurrency,
        })
    })
    .collect();
    (Arc::new(dispatcher_with(tools, Policy::allow_all())), disk)
}

fn args(file: &str, text: &str, ms: u64) -> RawArgs {
    RawArgs::Json(json!({"file": file, "text": text, "ms": ms}))
}

#[tokio::test(start_paused = true)]
async fn a_long_mutating_call_in_one_session_does_not_hold_up_another_session() {
    let (d, _disk) = setup();
    let a = CallContext::unattended();
    let long = tokio::spawn({
        let d = Arc::clone(&d);
        let a = a.clone();
        async move { d.call("step_write", args("a.txt", "x", 10_000), a).await }
    });
    tokio::task::yield_now().await;
    let before = tokio::time::Instant::now();
    let b = CallContext::unattended();
    for name in ["step_read", "step_write", "step_job"] {
        let out = d.call(name, args("b.txt", "y", 0), b.clone()).await;
        assert!(!out.is_error, "{out:?}");
    }
    assert_eq!(before.elapsed(), Duration::ZERO, "no waiting at all");
    assert!(!long.is_finished());
    // In session A itself, a detached call (job_output, job_kill) does not wait either.
    let out = d.call("step_job", args("a.txt", "", 0), a.clone()).await;
    assert!(!out.is_error);
    assert_eq!(before.elapsed(), Duration::ZERO);
    assert!(!long.is_finished());
    assert!(!long.await.unwrap().is_error);
}

#[tokio::test(start_paused = true)]
async fn calls_of_one_session_started_in_a_row_apply_in_that_order() {
    // Regression: 5 pipelined write_file calls to one file left the wrong content in 25 of
    // 30 trials. Later calls here are quicker, so any reordering would show.
    let (d, disk) = setup();
    let session = CallContext::unattended();
    let calls: Vec<_> = (0..100u64)
        .map(|i| {
            let name = if i % 10 == 9 {
                "step_read"
            } else {
                "step_write"
            };
            d.call(
                name,
                args("f.txt", &format!("{i},"), 100 - i),
                session.clone(),
            )
        })
        .collect();
    let outs = futures::future::join_all(calls).await;
    let expected: String = (0..100)
        .filter(|i| i % 10 != 9)
        .map(|i| format!("{i},"))
        .collect();
    assert_eq!(disk.files.lock().unwrap()["f.txt"], expected);
    // Each read saw exactly the writes that arrived before it.
    for (i, out) in outs.iter().enumerate().filter(|(i, _)| i % 10 == 9) {
        let seen: String = (0..i)
            .filter(|j| j % 10 != 9)
            .map(|j| format!("{j},"))
            .collect();
        assert_eq!(out.text, seen, "read {i}");
    }
}

#[tokio::test(start_paused = true)]
async fn sessions_writing_different_files_overlap_and_the_same_file_take_turns() {
    let (d, disk) = setup();
    let mut handles = Vec::new();
    for (session, file) in [(0, "a.txt"), (1, "a.txt"), (2, "b.txt"), (3, "c.txt")] {
        let d = Arc::clone(&d);
        handles.push(tokio::spawn(async move {
            let ctx = CallContext::unattended();
            d.call("step_write", args(file, &session.to_string(), 1_000), ctx)
                .await
        }));
    }
    let started = tokio::time::Instant::now();
    for h in handles {
        assert!(!h.await.unwrap().is_error);
    }
    assert_eq!(*disk.max_same.lock().unwrap(), 1, "one writer per file");
    assert_eq!(*disk.max_any.lock().unwrap(), 3, "a, b and c at once");
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(2),
        "a.txt twice in a row"
    );
    assert_eq!(disk.files.lock().unwrap()["a.txt"].len(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_call_that_cannot_start_before_its_deadline_says_what_it_waited_for() {
    // Regression: run_shell with timeout_ms 2000 behind another session's 8 s command came
    // back after 7.5 s, and then ran anyway.
    let (d, disk) = setup();
    let session = CallContext::unattended();
    let long =
        RawArgs::Json(json!({"file": "a.txt", "text": "1", "ms": 5_000, "timeout_ms": 10_000}));
    let short = RawArgs::Json(json!({"file": "b.txt", "text": "2", "timeout_ms": 2_000}));
    let started = tokio::time::Instant::now();
    let first = d.call("step_write", long, session.clone());
    let second = async {
        let out = d.call("step_write", short, session.clone()).await;
        (out, started.elapsed())
    };
    let (first, (second, waited)) = tokio::join!(first, second);
    assert!(!first.is_error, "{first:?}");
    assert!(second.is_error);
    assert_eq!(
        waited,
        Duration::from_secs(2),
        "gave up at its own deadline"
    );
    assert!(
        second.text.contains(
            "timed out after 2 s while waiting for this session's earlier `step_write` call to finish; it did not run"
        ),
        "{}",
        second.text
    );
    assert!(
        !disk.files.lock().unwrap().contains_key("b.txt"),
        "never ran"
    );
}

#[tokio::test(start_paused = true)]
async fn a_waiting_call_that_is_cancelled_never_runs() {
    let (d, disk) = setup();
    let session = CallContext::unattended();
    let first = d.call("step_write", args("a.txt", "1", 1_000), session.clone());
    let cancel = CancellationToken::new();
    let ctx = CallContext {
        cancel: cancel.clone(),
        ..session.clone()
    };
    let second = d.call("step_write", args("b.txt", "2", 0), ctx);
    let canceller = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        cancel.cancel();
    };
    let (first, second, ()) = tokio::join!(first, second, canceller);
    assert!(!first.is_error);
    assert!(second.is_error);
    assert!(
        second
            .text
            .contains("cancelled while waiting for this session's earlier `step_write`"),
        "{}",
        second.text
    );
    // The line moves on: the session is not stuck behind the cancelled call.
    let third = d.call("step_write", args("c.txt", "3", 0), session).await;
    assert!(!third.is_error);
    assert!(!disk.files.lock().unwrap().contains_key("b.txt"));
}
