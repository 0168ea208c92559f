//! `run_shell`: one command, bounded in time and output (see docs/tools.md).

use std::sync::Arc;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolgate_budget::{Budget, anchors_note, spill_ref};
use toolgate_core::{
    CallContext, Concurrency, DisclosureHint, DynTool, Footprint, SpillKind, SpillRef, Tool,
    ToolError, ToolMeta, ToolNames, ToolOutput, TruncationReason, TypedTool, run_blocking,
};
use toolgate_fs::Roots;

use crate::Sandbox;
use crate::capture::{Captured, PumpConfig, Sink, StreamProgress};
use crate::clean::group;
use crate::error::ShellError;
use crate::job_tools::{JobKillTool, JobOutputTool};
use crate::jobs::{Job, JobStream, JobTable};
use crate::limits::ShellLimits;
use crate::render::{JobStatus, TimeLimit, human, notes, status_line, status_of};
use crate::run::{Finished, RunConfig, Running, StopSignal};
use crate::shared::Shared;
use crate::view::{StreamSizes, View, views};

/// Output up to this size, all of it in memory, is rendered on the runtime; more (or a
/// spill file to read) goes to the blocking pool.
const SMALL_OUTPUT_BYTES: u64 = 16 * 1024;

/// `run_shell`, `job_output` and `job_kill` over `roots`, writing output into the budget's
/// spill store; commands run in [`ShellLimits::sandbox`].
pub fn builtin_shell_tools(
    roots: Arc<Roots>,
    budget: Arc<Budget>,
    limits: ShellLimits,
) -> Vec<Arc<dyn DynTool>> {
    let sandbox = limits.sandbox(&roots.roots());
    builtin_shell_tools_in(roots, budget, limits, sandbox)
}

/// [`builtin_shell_tools`] whose commands run in `sandbox` (toolgate's runtime adds its own
/// secrets to [`ShellLimits::sandbox`]).
pub fn builtin_shell_tools_in(
    roots: Arc<Roots>,
    budget: Arc<Budget>,
    limits: ShellLimits,
    sandbox: Sandbox,
) -> Vec<Arc<dyn DynTool>> {
    let sandbox = Arc::new(sandbox);
    let shared = Arc::new(Shared {
        roots,
        budget,
        limits,
        sandbox,
    });
    vec![
        TypedTool::erased(RunShellTool {
            shared: Arc::clone(&shared),
        }),
        TypedTool::erased(JobOutputTool {
            shared: Arc::clone(&shared),
        }),
        TypedTool::erased(JobKillTool { shared }),
    ]
}

/// Arguments of `run_shell`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunShellArgs {
    /// Command line for `bash -c`.
    pub command: String,
    /// Default 120000 (background 600000), at most 600000.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Folder (default: the project root).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Return a job_id at once (see job_output, job_kill).
    #[serde(default)]
    pub background: bool,
}

/// One output stream of a command.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StreamInfo {
    /// Bytes the command wrote to it.
    pub bytes: u64,
    /// Lines (an unterminated last line counts).
    pub lines: u64,
    /// Whether the text shows only part of it (an excerpt or its compressed log).
    pub truncated: bool,
    /// How the text shows it: `whole`, `excerpt` or `log` (compressed: every warning, error
    /// and verdict line with a little context, the rest folded with counts). Absent for a
    /// background job's start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shown: Option<Shown>,
    /// The tool whose log it is (`cargo_test`, `pytest`, `jest`, `rustc`, `npm`, …), when
    /// its lines show one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_kind: Option<String>,
    /// Warning, error and verdict lines in the whole stream (compressed logs only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub anchors: Option<u64>,
    /// How many of those the text shows; the others are folded into counted markers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub anchors_shown: Option<u64>,
    /// File holding every byte of it (present when cut, and for background jobs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// How a stream is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Shown {
    /// All of it.
    Whole,
    /// Its first and last characters.
    Excerpt,
    /// Its compressed log.
    Log,
}

/// Structured result of `run_shell`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RunShellOutput {
    /// Status line, then each non-empty stream (whole, or an excerpt and a file pointer).
    pub text: String,
    /// Whether a stream is shown as an excerpt; its file holds all of it.
    pub truncated: bool,
    /// `payload_limit` when cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<TruncationReason>,
    /// `running` (background job), `exited`, `killed` or `timed_out`.
    pub status: JobStatus,
    /// Exit code, when it exited by itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The signal it died of, when one killed it from outside toolgate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    /// The background job's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    /// The background job's shell pid as commands see it (`$$`; inside toolgate's PID
    /// namespace when there is one), so `kill PID` in a later command reaches it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<i32>,
    /// Standard output.
    pub stdout: StreamInfo,
    /// Standard error.
    pub stderr: StreamInfo,
    /// The folder it ran in, relative to the project root.
    pub cwd: String,
    /// How long it ran (background: how long starting it took).
    pub elapsed_ms: u64,
}

/// `run_shell`: a command in its own process group, output streamed to disk.
pub struct RunShellTool {
    shared: Arc<Shared>,
}

impl Tool for RunShellTool {
    type Args = RunShellArgs;
    type Output = RunShellOutput;

    fn name(&self) -> &str {
        "run_shell"
    }

    fn description(&self) -> &str {
        "Run a shell command (bash -c) in the project, stdin closed. Long output comes back as an excerpt or compressed log plus a file with all of it: read that with read_file, do not rerun. For servers and long builds use background: true, then job_output and job_kill."
    }

    fn meta(&self) -> ToolMeta {
        ToolMeta {
            timeout: Some(self.shared.limits.call_deadline()),
            concurrency: Concurrency::Mutating,
            action: "shell.exec".to_owned(),
            log_like: true,
            display: "Run shell command".to_owned(),
            // A core tool: in the array every turn, never deferred.
            disclosure: DisclosureHint::Direct,
            ..ToolMeta::default()
        }
    }

    fn footprint(&self, args: &serde_json::Value) -> Footprint {
        // A foreground command stops itself at its own timeout (and returns the output so
        // far); a background start returns at once and keeps the declared limit.
        let background = args.get("background").and_then(serde_json::Value::as_bool);
        let limits = &self.shared.limits;
        let timeout_ms = args
            .get("timeout_ms")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(limits.default_timeout_ms)
            .clamp(1, limits.max_timeout_ms);
        Footprint {
            timeout: (background != Some(true)).then(|| Duration::from_millis(timeout_ms)),
            ..Footprint::default()
        }
    }

    async fn call(&self, args: RunShellArgs, ctx: CallContext) -> Result<ToolOutput, ToolError> {
        let shared = &self.shared;
        let limits = &shared.limits;
        if args.command.trim().is_empty() {
            return Err(arg(
                "command",
                "is empty; give a command line such as `ls -la`",
            ));
        }
        if args.timeout_ms == Some(0) {
            return Err(arg(
                "timeout_ms",
                &format!("must be at least 1 (at most {})", limits.max_timeout_ms),
            ));
        }
        let default = if args.background {
            limits.background_timeout_ms
        } else {
            limits.default_timeout_ms
        };
        let asked = args.timeout_ms.unwrap_or(default);
        let timeout_ms = asked.min(limits.max_timeout_ms);
        let mut extra = Vec::new();
        if asked > timeout_ms {
            extra.push(format!(
                "note: timeout_ms {asked} was lowered to the maximum {timeout_ms}; use background: true and poll with job_output for longer work"
            ));
        }
        let cwd = match args.cwd.as_deref() {
            None | Some("") => shared.roots.primary().to_path_buf(),
            Some(dir) => shared.roots.resolve_dir(dir).map_err(ShellError::Cwd)?,
        };
        let cwd_shown = shared.roots.display(&cwd);
        // Time spent waiting for this session's earlier calls counts: the command gets what
        // is left of the call's deadline (the dispatcher set it from `timeout_ms`).
        let timeout = match ctx.remaining() {
            Some(left) if !args.background => {
                Duration::from_millis(timeout_ms).min(left.max(Duration::from_millis(1)))
            }
            _ => Duration::from_millis(timeout_ms),
        };
        let config = RunConfig {
            timeout,
            kill_grace: limits.kill_grace(),
            sandbox: Arc::clone(&shared.sandbox),
            pump: PumpConfig {
                head: limits.payload_bytes / 2,
                tail: limits.payload_bytes - limits.payload_bytes / 2,
                max_bytes: limits.max_stream_bytes,
            },
        };
        if args.background {
            return start_job(shared, &args.command, &cwd, cwd_shown, config, &ctx)
                .map_err(Into::into);
        }

        let store = shared.budget.store();
        let sizes = StreamSizes::new(limits.inline_chars, shared.budget.sizes(&ctx.session));
        let lazy = |name: &str| {
            (
                Sink::Lazy {
                    store: Arc::clone(store),
                    label: format!("run_shell-{name}"),
                    compress: Some(sizes.log_options()),
                },
                Arc::new(StreamProgress::default()),
            )
        };
        let stop = Arc::new(StopSignal::child_of(&ctx.cancel));
        let timeout = config.timeout;
        let running = Running::start(
            &args.command,
            &cwd,
            [lazy("stdout"), lazy("stderr")],
            config,
            stop,
        )?;
        let finished = running.wait().await;
        let failed = finished.ending.failed();
        // The compressor reads the whole of each stream: give it what is left of the call's
        // time (a command stopped at its timeout still has the dispatcher's short grace).
        let until = ctx.deadline.map(|d| d.into_std() + Duration::from_secs(2));
        let small = [&finished.stdout, &finished.stderr]
            .iter()
            .all(|c| c.file.is_none() && c.total <= SMALL_OUTPUT_BYTES);
        let show = move |finished: Finished| {
            let shown = views([&finished.stdout, &finished.stderr], failed, sizes, until);
            (finished, shown)
        };
        let (finished, views) = if small {
            // Made here: a hand-over to the blocking pool and back costs more than this.
            show(finished)
        } else {
            run_blocking(move || show(finished)).await?
        };
        let limit = TimeLimit {
            given_ms: timeout_ms,
            applied: timeout,
        };
        let names = ctx.session.tool_names();
        Ok(self.render(&finished, views, limit, cwd_shown, extra, &names))
    }
}

/// What a stream's spill pointer says besides the file: where a failed call's reading starts
/// (its end) and the name the client calls `read_file` by.
struct Pointing<'a> {
    failed: bool,
    names: &'a ToolNames,
}

impl RunShellTool {
    fn render(
        &self,
        finished: &Finished,
        views: [View; 2],
        limit: TimeLimit,
        cwd: String,
        extra: Vec<String>,
        names: &ToolNames,
    ) -> ToolOutput {
        let limits = &self.shared.limits;
        let failed = finished.ending.failed();
        let mut text = status_line(
            finished,
            limit,
            limits.kill_grace(),
            limits.max_stream_bytes,
        );
        text.push('\n');
        for note in notes(finished).into_iter().chain(extra) {
            text.push_str(&note);
            text.push('\n');
        }
        let mut spills = Vec::new();
        let [out_view, err_view] = views;
        let stdout = self.section(
            &mut text,
            "stdout",
            &finished.stdout,
            out_view,
            Pointing { failed, names },
            &mut spills,
        );
        let stderr = self.section(
            &mut text,
            "stderr",
            &finished.stderr,
            err_view,
            Pointing { failed, names },
            &mut spills,
        );
        if stdout.bytes == 0 && stderr.bytes == 0 {
            text.push_str("(no output)\n");
        }
        let truncated = stdout.truncated || stderr.truncated;
        let (status, exit_code, signal) = status_of(finished.ending);
        let body = RunShellOutput {
            text,
            truncated,
            reason: truncated.then_some(TruncationReason::PayloadLimit),
            status,
            exit_code,
            signal,
            job_id: None,
            pid: None,
            stdout,
            stderr,
            cwd,
            elapsed_ms: finished.elapsed.as_millis() as u64,
        };
        let mut output = ToolOutput::from_body(&body);
        output.is_error = failed;
        output.spills = spills;
        output
    }

    /// Appends one stream's section (nothing for an empty stream) and describes it; a stream
    /// shown in part adds its file to `spills`.
    fn section(
        &self,
        text: &mut String,
        name: &str,
        c: &Captured,
        view: View,
        Pointing { failed, names }: Pointing<'_>,
        spills: &mut Vec<SpillRef>,
    ) -> StreamInfo {
        let mut info = StreamInfo {
            bytes: c.total,
            lines: c.lines(),
            truncated: false,
            shown: None,
            log_kind: None,
            anchors: None,
            anchors_shown: None,
            path: None,
        };
        if c.total == 0 {
            return info;
        }
        let (body, kind, how) = match view {
            View::Whole(whole) => {
                info.shown = Some(Shown::Whole);
                text.push_str(&format!("--- {name} ---\n"));
                push_line(text, &whole);
                return info;
            }
            View::Excerpt(cut) => {
                info.shown = Some(Shown::Excerpt);
                (cut, SpillKind::Captured, "excerpt".to_owned())
            }
            View::Log(log) => {
                info.shown = Some(Shown::Log);
                info.log_kind = log.kind.map(|k| k.name().to_owned());
                info.anchors = Some(log.anchors);
                info.anchors_shown = Some(log.anchors_shown);
                let kind = log
                    .kind
                    .map(|k| format!(" of {}", k.name().replace('_', " ")))
                    .unwrap_or_default();
                let how = format!(
                    "compressed log{kind}{}",
                    anchors_note(log.anchors, log.anchors_shown)
                );
                (log.text, SpillKind::Compressed, how)
            }
        };
        info.truncated = true;
        let file = match (&c.file, c.whole()) {
            (Some(file), _) => Some(file.clone()),
            // It fit in memory but not in the text: save it now for the pointer.
            (None, Some(whole)) if c.error.is_none() => self
                .shared
                .budget
                .store()
                .write(&format!("run_shell-{name}"), &whole)
                .ok(),
            _ => None,
        };
        text.push_str(&format!(
            "--- {name}: {} bytes, {} lines; {how} ---\n",
            group(c.total),
            group(c.lines())
        ));
        push_line(text, &body);
        if let Some(file) = file {
            text.push_str(&self.shared.budget.pointer(&file, failed, names));
            text.push('\n');
            info.path = Some(file.path.display().to_string());
            spills.push(spill_ref(&file, kind, Some(name)));
        }
        info
    }
}

fn push_line(text: &mut String, s: &str) {
    text.push_str(s);
    if !s.ends_with('\n') {
        text.push('\n');
    }
}

fn arg(field: &'static str, message: &str) -> ToolError {
    ShellError::Argument {
        field,
        message: message.to_owned(),
    }
    .into()
}

/// Starts a background job and answers with its id at once.
fn start_job(
    shared: &Shared,
    command: &str,
    cwd: &std::path::Path,
    cwd_shown: String,
    config: RunConfig,
    ctx: &CallContext,
) -> Result<ToolOutput, ShellError> {
    let started = Instant::now();
    let names = ctx.session.tool_names();
    let table = ctx.session.ext::<JobTable>();
    let store = shared.budget.store();
    let limits = &shared.limits;
    let timeout = config.timeout;
    let job = table.insert(limits.max_jobs, limits.max_finished_jobs, |id| {
        let open = |name: &str| {
            store
                .stream(&format!("{id}-{name}"))
                .map_err(ShellError::OutputFile)
        };
        let (out, err) = (open("stdout")?, open("stderr")?);
        let streams = [
            JobStream {
                path: out.path().to_path_buf(),
                progress: Arc::new(StreamProgress::default()),
            },
            JobStream {
                path: err.path().to_path_buf(),
                progress: Arc::new(StreamProgress::default()),
            },
        ];
        let stop = Arc::new(StopSignal::default());
        let sinks = [
            (Sink::Open(out), Arc::clone(&streams[0].progress)),
            (Sink::Open(err), Arc::clone(&streams[1].progress)),
        ];
        let running = Running::start(command, cwd, sinks, config, Arc::clone(&stop))?;
        let job = Arc::new(Job::new(
            id,
            command,
            running.shown_pid(),
            stop,
            streams,
            running.group(),
        ));
        let watched = Arc::clone(&job);
        tokio::spawn(async move {
            let finished = running.wait().await;
            let signal = finished.teardown.map(|t| match t {
                crate::process::Teardown::Killed => rustix::process::Signal::KILL,
                _ => rustix::process::Signal::TERM,
            });
            watched.finish(&finished, notes(&finished), signal);
        });
        Ok(job)
    })?;
    let path = |i: usize| Some(job.streams[i].path.display().to_string());
    let info = |i: usize| StreamInfo {
        bytes: 0,
        lines: 0,
        truncated: false,
        shown: None,
        log_kind: None,
        anchors: None,
        anchors_shown: None,
        path: path(i),
    };
    let text = format!(
        "started {id} (pid {pid}) in {cwd_shown}: `{label}`\nIt runs until it exits, {job_kill} stops it, its timeout of {t} passes, or this session ends.\nRead its output: {job_output} {{\"job_id\": \"{id}\"}} (stderr: add \"stream\": \"stderr\"); stop it: {job_kill} {{\"job_id\": \"{id}\"}}.\nstdout file: {out}\nstderr file: {err}\n",
        job_kill = names.of("job_kill"),
        job_output = names.of("job_output"),
        id = job.id,
        pid = job.pid,
        label = job.label,
        t = human(timeout),
        out = shared.budget.display(&job.streams[0].path),
        err = shared.budget.display(&job.streams[1].path),
    );
    let body = RunShellOutput {
        text,
        truncated: false,
        reason: None,
        status: JobStatus::Running,
        exit_code: None,
        signal: None,
        job_id: Some(job.id.clone()),
        pid: Some(job.pid),
        stdout: info(0),
        stderr: info(1),
        cwd: cwd_shown,
        elapsed_ms: started.elapsed().as_millis() as u64,
    };
    Ok(ToolOutput::from_body(&body))
}
