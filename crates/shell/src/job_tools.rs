//! `job_output` and `job_kill` (`job_output(offset, limit)` → chunk, next offset, end of
//! output: the same pagination shape as `read_file`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolgate_core::{
    CallContext, Concurrency, DisclosureHint, Tool, ToolError, ToolMeta, ToolNames, ToolOutput,
    TruncationReason, run_blocking,
};

use toolgate_budget::{LogOptions, compress_file};

use crate::clean::group;
use crate::error::ShellError;
use crate::jobs::{Job, JobEnd, JobTable, Which};
use crate::render::{JobStatus, human, signal_name, status_of, stopped_words};
use crate::run::{Ending, StopReason};
use crate::shared::Shared;

/// Which stream `job_output` reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)] // The variants' names say it: `stdout`, `stderr`.
pub enum StreamName {
    // No doc comments on the variants: the schema stays a plain `enum` of two strings.
    #[default]
    Stdout,
    Stderr,
}

impl From<StreamName> for Which {
    fn from(s: StreamName) -> Self {
        match s {
            StreamName::Stdout => Which::Stdout,
            StreamName::Stderr => Which::Stderr,
        }
    }
}

/// Arguments of `job_output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JobOutputArgs {
    /// From run_shell, e.g. `job-1`.
    pub job_id: String,
    /// Byte offset: `next_offset`, or `end_offset` to poll a running job.
    #[serde(default)]
    pub offset: Option<u64>,
    /// Most bytes (default 32768, at most 49152).
    #[serde(default)]
    pub limit: Option<u64>,
    /// Default `stdout`.
    #[serde(default)]
    pub stream: StreamName,
}

/// Structured result of `job_output`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct JobOutputOutput {
    /// The output chunk, verbatim, then one footer line in brackets.
    pub text: String,
    /// The job.
    pub job_id: String,
    /// `running`, `exited`, `killed` or `timed_out`.
    pub status: JobStatus,
    /// Exit code, once it exited by itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    /// The stream read.
    pub stream: StreamName,
    /// Byte offset where the chunk starts.
    pub offset: u64,
    /// Byte offset just past the chunk: where the next read continues.
    pub end_offset: u64,
    /// Bytes in the stream so far.
    pub total: u64,
    /// Whether more output is available now beyond this chunk.
    pub truncated: bool,
    /// `payload_limit` when cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<TruncationReason>,
    /// Offset of the next page; present only when more is available now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u64>,
    /// The job has ended and this chunk reaches the end of the stream.
    pub eof: bool,
    /// `raw` for a page of bytes; `log` for the compressed log of the whole stream (the
    /// first look at a finished job's long output), whose raw pages start at `next_offset`.
    pub shown: &'static str,
    /// The stream's file (readable with read_file too).
    pub path: String,
    /// How long the job has run (or ran).
    pub runtime_ms: u64,
    /// Time taken by this call.
    pub elapsed_ms: u64,
}

/// `job_output`: a page of a background job's output.
pub struct JobOutputTool {
    pub(crate) shared: Arc<Shared>,
}

impl Tool for JobOutputTool {
    type Args = JobOutputArgs;
    type Output = JobOutputOutput;

    fn name(&self) -> &str {
        "job_output"
    }

    fn description(&self) -> &str {
        "Read a background job's output and status by byte offset (stream: \"stderr\" for stderr); poll a running job with offset = end_offset. Without offset, a long finished stream comes back compressed."
    }

    fn meta(&self) -> ToolMeta {
        ToolMeta {
            timeout: Some(Duration::from_secs(30)),
            // Reads work that is running: it must never wait behind a running command.
            concurrency: Concurrency::Detached,
            action: "shell.exec".to_owned(),
            // The job's file is its own pointer, like read_file's.
            spillable: false,
            destructive: false,
            display: "Read job output".to_owned(),
            // A core tool: in the array every turn, never deferred.
            disclosure: DisclosureHint::Direct,
            ..ToolMeta::default()
        }
    }

    async fn call(&self, args: JobOutputArgs, ctx: CallContext) -> Result<ToolOutput, ToolError> {
        let started = Instant::now();
        let limits = &self.shared.limits;
        let limit = match args.limit {
            None => limits.page_bytes,
            Some(0) => {
                return Err(ShellError::Argument {
                    field: "limit",
                    message: format!(
                        "must be between 1 and {}; omit it for a {} byte page",
                        limits.max_page_bytes, limits.page_bytes
                    ),
                }
                .into());
            }
            Some(n) => n.min(limits.max_page_bytes as u64) as usize,
        };
        // A page plus its footer must reach the model whole through the session's client.
        let limit = ctx.session.limits().page_bytes(limit);
        let job = ctx.session.ext::<JobTable>().get(&args.job_id)?;
        let names = ctx.session.tool_names();
        let which = Which::from(args.stream);
        let store = Arc::clone(self.shared.budget.store());
        let offset = args.offset.unwrap_or(0);
        let reader = Arc::clone(&job);
        let mut page = run_blocking(move || reader.read(&store, which, offset, limit)).await??;
        let end = page.ended.clone();
        let (status, exit_code, signal) = status_fields(end.as_ref());
        let more = page.end < page.len;
        let eof = end.is_some() && !more;
        let runtime = end
            .as_ref()
            .map_or_else(|| job.started.elapsed(), |e| e.elapsed);
        let path = job.stream(which).path.clone();
        // The first look at a finished job whose output is longer than a page: the
        // compressed log of all of it (every error, failure and summary), when it is a log;
        // the raw pages stay one call away.
        let failed = end.is_some() && exit_code != Some(0);
        let log = if args.offset.is_none() && end.is_some() && more {
            let options = LogOptions {
                cap_chars: self.shared.budget.sizes(&ctx.session).log_chars,
                ..LogOptions::default()
            };
            let until = ctx.deadline.map(|d| d.into_std());
            let file = path.clone();
            run_blocking(move || compress_file(&file, options, until))
                .await?
                .ok()
                .flatten()
                .filter(|log| log.kind.is_some() || failed && log.anchors > 0)
        } else {
            None
        };
        let shown_log = log.is_some();
        let mut text = match log {
            Some(log) => {
                let kind = log
                    .kind
                    .map(|k| format!(" of {}", k.name().replace('_', " ")))
                    .unwrap_or_default();
                format!(
                    "--- {}: {} bytes, {} lines; compressed log{kind} ({} of {} key lines shown) ---\n{}",
                    which.name(),
                    group(log.input_bytes),
                    group(log.input_lines),
                    log.anchors_shown,
                    log.anchors,
                    log.text
                )
            }
            None => std::mem::take(&mut page.text),
        };
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        if shown_log {
            let id = &job.id;
            let stream_arg = match which {
                Which::Stdout => String::new(),
                Which::Stderr => ", \"stream\": \"stderr\"".to_owned(),
            };
            let state = end
                .as_ref()
                .map(|e| ending_words(e, &self.shared))
                .unwrap_or_default();
            text.push_str(&format!(
                "[{id} {state} · the raw output page by page: {job_output} {{\"job_id\": \"{id}\", \"offset\": 0{stream_arg}}}, or {read_file} {{\"path\": \"{}\"}}]\n",
                path.display(),
                job_output = names.of("job_output"),
                read_file = names.of("read_file"),
            ));
        } else {
            text.push_str(&footer(
                &job,
                end.as_ref(),
                which,
                &page,
                runtime,
                &self.shared,
                &names,
            ));
        }
        let body = JobOutputOutput {
            text,
            job_id: job.id.clone(),
            status,
            exit_code,
            signal,
            stream: args.stream,
            offset: page.start,
            end_offset: if shown_log { page.start } else { page.end },
            total: page.len,
            truncated: more,
            reason: more.then_some(TruncationReason::PayloadLimit),
            next_offset: more.then_some(if shown_log { page.start } else { page.end }),
            eof: eof && !shown_log,
            shown: if shown_log { "log" } else { "raw" },
            path: path.display().to_string(),
            runtime_ms: runtime.as_millis() as u64,
            elapsed_ms: started.elapsed().as_millis() as u64,
        };
        Ok(ToolOutput::from_body(&body))
    }
}

/// The footer line of a page: where the job stands and what to call next.
fn footer(
    job: &Job,
    end: Option<&JobEnd>,
    which: Which,
    page: &crate::jobs::Page,
    runtime: Duration,
    shared: &Shared,
    names: &ToolNames,
) -> String {
    let id = &job.id;
    let job_output = names.of("job_output");
    let name = which.name();
    let stream_arg = match which {
        Which::Stdout => String::new(),
        Which::Stderr => ", \"stream\": \"stderr\"".to_owned(),
    };
    let state = match end {
        None => format!("{id} running for {}", human(runtime)),
        Some(e) => format!("{id} {}", ending_words(e, shared)),
    };
    let range = format!("{name} bytes {}–{}", group(page.start), group(page.end));
    if page.end < page.len {
        return format!(
            "[{state} · {range} of {}{} · next page: {job_output} {{\"job_id\": \"{id}\", \"offset\": {}{stream_arg}}}]\n",
            group(page.len),
            if end.is_some() { "" } else { " so far" },
            page.end
        );
    }
    if end.is_none() {
        return format!(
            "[{state} · {range}, no more output yet · poll later: {job_output} {{\"job_id\": \"{id}\", \"offset\": {}{stream_arg}}}]\n",
            page.end
        );
    }
    let other = match which {
        Which::Stdout => crate::jobs::Which::Stderr,
        Which::Stderr => crate::jobs::Which::Stdout,
    };
    let other_len = job
        .stream(other)
        .progress
        .on_disk
        .load(std::sync::atomic::Ordering::Acquire);
    let hint = if other_len > 0 {
        format!(
            "; {} has {} bytes: {job_output} {{\"job_id\": \"{id}\"{}}}",
            other.name(),
            group(other_len),
            match other {
                Which::Stderr => ", \"stream\": \"stderr\"",
                Which::Stdout => "",
            }
        )
    } else {
        String::new()
    };
    let notes = end
        .map(|e| {
            e.notes
                .iter()
                .map(|n| format!(" · {n}"))
                .collect::<String>()
        })
        .unwrap_or_default();
    format!(
        "[{state} · end of {name} ({} bytes){hint}{notes}]\n",
        group(page.len)
    )
}

/// "exited with code 0 after 3.2 s", "timed out after 600 s", …
fn ending_words(end: &JobEnd, shared: &Shared) -> String {
    let took = human(end.elapsed);
    match end.ending {
        Ending::Exited(code) => format!("exited with code {code} after {took}"),
        Ending::Signaled(sig) => format!("killed by {} after {took}", signal_name(sig)),
        Ending::TimedOut => format!("timed out after {took} and was stopped"),
        Ending::Stopped(reason) => format!(
            "{} after {took}",
            stopped_words(reason, shared.limits.max_stream_bytes)
        ),
    }
}

fn status_fields(end: Option<&JobEnd>) -> (JobStatus, Option<i32>, Option<String>) {
    let Some(end) = end else {
        return (JobStatus::Running, None, None);
    };
    let (status, code, signal) = status_of(end.ending);
    let signal = signal.or_else(|| {
        matches!(end.ending, Ending::Stopped(_) | Ending::TimedOut)
            .then(|| end.stop_signal.map(|s| signal_name(s.as_raw())))
            .flatten()
    });
    (status, code, signal)
}

/// Arguments of `job_kill`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JobKillArgs {
    /// From run_shell, e.g. `job-1`.
    pub job_id: String,
}

/// Structured result of `job_kill`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct JobKillOutput {
    /// What happened.
    pub text: String,
    /// The job.
    pub job_id: String,
    /// Its status now.
    pub status: JobStatus,
    /// Exit code, when it had exited by itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The signal that ended it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    /// Always false (nothing is cut).
    pub truncated: bool,
    /// Time taken by this call.
    pub elapsed_ms: u64,
}

/// `job_kill`: stops a background job's whole process group.
pub struct JobKillTool {
    pub(crate) shared: Arc<Shared>,
}

impl Tool for JobKillTool {
    type Args = JobKillArgs;
    type Output = JobKillOutput;

    fn name(&self) -> &str {
        "job_kill"
    }

    fn description(&self) -> &str {
        "Stop a background job (SIGTERM to its process group, then SIGKILL). Its output stays readable with job_output."
    }

    fn meta(&self) -> ToolMeta {
        ToolMeta {
            timeout: Some(self.shared.limits.kill_grace() + Duration::from_secs(10)),
            // Stops work that is running: it must never wait behind a running command.
            concurrency: Concurrency::Detached,
            action: "shell.exec".to_owned(),
            idempotent: true,
            display: "Kill job".to_owned(),
            // A core tool: in the array every turn, never deferred.
            disclosure: DisclosureHint::Direct,
            ..ToolMeta::default()
        }
    }

    async fn call(&self, args: JobKillArgs, ctx: CallContext) -> Result<ToolOutput, ToolError> {
        let started = Instant::now();
        let job = ctx.session.ext::<JobTable>().get(&args.job_id)?;
        let names = ctx.session.tool_names();
        let already = job.end();
        if already.is_none() {
            job.stop.request(StopReason::JobKill);
            job.ended().await;
        }
        let end = job.end();
        let (status, exit_code, signal) = status_fields(end.as_ref());
        let words = end.as_ref().map_or_else(
            || "is still stopping".to_owned(),
            |e| ending_words(e, &self.shared),
        );
        let text = if already.is_some() {
            format!(
                "{} had already ended: {words}; nothing to stop. Its output stays readable with {}.\n",
                job.id,
                names.of("job_output"),
            )
        } else {
            format!(
                "{} {words}; nothing of its process group is left. Its output stays readable with {} {{\"job_id\": \"{}\"}}.\n",
                job.id,
                names.of("job_output"),
                job.id
            )
        };
        let body = JobKillOutput {
            text,
            job_id: job.id.clone(),
            status,
            exit_code,
            signal,
            truncated: false,
            elapsed_ms: started.elapsed().as_millis() as u64,
        };
        Ok(ToolOutput::from_body(&body))
    }
}
