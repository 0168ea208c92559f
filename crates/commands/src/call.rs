//! `toolgate tools` and `toolgate call`: the same pipeline as the server, for humans.

use std::io::{IsTerminal, Read};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{Value, json};
use toolgate_core::disclosure::Unmasked;
use toolgate_core::{
    Approval, CallContext, ClientProfile, Progress, ProgressSink, Protocol, RawArgs, Session,
    SessionInit,
};
use toolgate_gateway::ServerState;
use toolgate_runtime::Runtime;

/// Arguments of `toolgate tools`.
#[derive(Debug, Args)]
pub struct ToolsArgs {
    /// Print the tool array as JSON, rendered for a protocol (default: the MCP tools/list).
    #[arg(long)]
    json: bool,
    /// Which protocol's rendering `--json` prints.
    #[arg(long, value_enum, default_value_t = Format::Mcp, requires = "json")]
    format: Format,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    Mcp,
    Openai,
    Anthropic,
}

/// Arguments of `toolgate call`.
#[derive(Debug, Args)]
pub struct CallArgs {
    /// Tool name, as listed by `toolgate tools`.
    name: String,
    /// Arguments as one JSON object, or `-` to read them from stdin (default: `{}`).
    args: Option<String>,
    /// Print the whole result as JSON (content, structuredContent, isError).
    #[arg(long)]
    json: bool,
    /// Size and shape the result as `serve` does for this MCP client (its `clientInfo`
    /// name, e.g. `claude-code`, `codex-mcp-client`; unknown names get the conservative
    /// profile). Default: no client, nothing cut for one.
    #[arg(long, value_name = "NAME")]
    client: Option<String>,
}

impl CallArgs {
    /// The tool called.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Built-in tools that start no process (the file tools): a one-shot call of one of them
/// needs no process containment.
const SPAWNS_NOTHING: [&str; 6] = [
    "read_file",
    "list_dir",
    "search_files",
    "grep",
    "write_file",
    "edit_file",
];

/// Trims what a one-shot command (`call`, `tools`) would start for nothing:
/// - the skill folders are read once, not watched (no watcher thread, no inotify): the
///   process ends before a change could matter;
/// - a call of a file tool ([`SPAWNS_NOTHING`]) makes no process namespace (a keeper and an
///   init process, forked and killed again): nothing in this process runs a command, so
///   containment is recorded as process groups and never used. Any other tool — `run_shell`,
///   the job tools, a mounted server's tool, `run_tool`, `skill` — gets the configured
///   containment as `serve` would.
pub fn one_shot_config(config: &mut toolgate_config::Config, tool: Option<&str>) {
    config.skills.watch = false;
    config.skills.rescan_secs = 0;
    if tool.is_some_and(|t| SPAWNS_NOTHING.contains(&t)) {
        config.shell.containment = toolgate_contain::Setting::ProcessGroup;
    }
}

/// Lists the tools, mounted MCP servers' included (started and stopped for the purpose).
pub async fn tools(runtime: &Runtime, args: &ToolsArgs) -> ExitCode {
    runtime.gateway.start_all().await;
    let snapshot = runtime.dispatcher.snapshot();
    // What a model sees: with disclosure on, direct tools plus search_tool and run_tool.
    let exposed = runtime.disclosure.exposed(&snapshot, &Unmasked::default());
    if args.json {
        let protocol = match args.format {
            Format::Mcp => Protocol::Mcp,
            Format::Openai => Protocol::OpenAi,
            Format::Anthropic => Protocol::Anthropic,
        };
        let array = exposed.render(protocol, &runtime.render);
        let body = match protocol {
            Protocol::Mcp => json!({ "tools": array }),
            _ => Value::Array(array),
        };
        outln!(
            "{}",
            serde_json::to_string_pretty(&body).unwrap_or_default()
        );
    } else {
        let width = exposed
            .all()
            .map(|t| t.spec().name.len())
            .max()
            .unwrap_or(0);
        for tool in exposed.all() {
            let name = &tool.spec().name;
            let summary = tool
                .spec()
                .description
                .split(". ")
                .next()
                .unwrap_or_default();
            outln!("{name:<width$}  {}", summary.trim_end_matches('.'));
        }
    }
    for problem in &snapshot.problems {
        eprintln!("warning: {problem}");
    }
    mcp_warnings(runtime);
    let view = runtime.disclosure.view(&snapshot);
    if view.plan.active && !view.plan.deferred.is_empty() && !args.json {
        eprintln!(
            "note: {} more tools are deferred (progressive disclosure): a model finds them with search_tool; `toolgate disclosure plan` lists them, `toolgate call NAME` runs any of them",
            view.plan.deferred.len()
        );
    }
    runtime.gateway.shutdown().await;
    ExitCode::SUCCESS
}

/// Unreadable MCP config files and servers that failed, on stderr.
pub(crate) fn mcp_warnings(runtime: &Runtime) {
    for problem in runtime.gateway.problems() {
        eprintln!("warning: {problem}");
    }
    for status in runtime.gateway.status() {
        match &status.state {
            ServerState::Failed(reason) | ServerState::NameClash(reason) => {
                eprintln!("warning: MCP server `{}` failed: {reason}", status.name);
            }
            ServerState::Untrusted { reason, command } => eprintln!(
                "warning: MCP server `{}` ({}) is not trusted yet, so its tools are missing: {reason}; check its command with `toolgate mcp list`, then run `{command}`",
                status.name, status.source
            ),
            _ => {}
        }
    }
}

/// The session of one `toolgate call`: nobody is asked (`ask` refuses and names the rule:
/// a script has nobody to answer), the profile is `--client`'s when given, there is no MCP
/// client to ask and no authenticated caller.
fn call_session(profile: Option<ClientProfile>) -> Arc<Session> {
    let session = Session::new(SessionInit {
        approval: Approval::Nobody,
        profile,
        client: None,
        identity: None,
        rate_key: None,
    });
    session.name_client("toolgate call");
    session
}

/// Runs one tool.
pub async fn call(runtime: &Runtime, args: CallArgs) -> ExitCode {
    let raw = match args.args.as_deref() {
        Some("-") => {
            let mut text = String::new();
            if let Err(e) = std::io::stdin().read_to_string(&mut text) {
                eprintln!("toolgate: cannot read arguments from stdin: {e}");
                return ExitCode::from(crate::USAGE_ERROR);
            }
            text
        }
        Some(text) => text.to_owned(),
        None => String::new(),
    };
    let profile = args
        .client
        .as_deref()
        .map(|name| runtime.profiles.choose(name));
    let mut ctx = CallContext::new(call_session(profile.clone()));
    let display = CallDisplay::start(&args.name);
    if let Some(display) = &display {
        ctx.progress = Some(display.sink());
    }
    let cancel = ctx.cancel.clone();
    let ctrl_c = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            cancel.cancel();
        }
    });
    runtime.gateway.start_for(&args.name).await;
    let ticket = ctx.session.order().ticket();
    let answered = runtime
        .dispatcher
        .call_in_line(&args.name, RawArgs::Text(raw), ctx, ticket)
        .await;
    // The tool that ran (`run_tool`'s target) decides the result's shape.
    let has_schema = answered
        .tool
        .as_ref()
        .is_some_and(toolgate_mcp::has_output_schema)
        && !profile.as_ref().is_some_and(|p| p.shows_structured);
    let output = answered.output;
    ctrl_c.abort();
    drop(display);
    // A tool of an untrusted or failed server: the result says so already.
    if output.is_error
        && args.name.starts_with("mcp__")
        && runtime
            .dispatcher
            .snapshot()
            .absence_of(&args.name)
            .is_none()
    {
        mcp_warnings(runtime);
    }
    runtime.gateway.shutdown().await;
    if args.json {
        // Exactly what `serve` would send for this call (one serializer for both).
        let mut result = toolgate_mcp::call_result(&output, has_schema, profile.as_ref());
        // As sent to a client of a protocol before 2026-07-28 (Claude Code, Codex, the SDKs
        // today), which rmcp answers without the `resultType: "complete"` marker.
        result.result_type = None;
        outln!(
            "{}",
            serde_json::to_string_pretty(&result).unwrap_or_default()
        );
    } else if output.is_error {
        eprint!("{}", with_newline(&output.text));
    } else {
        out!("{}", with_newline(&output.text));
    }
    if output.is_error {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// A call's live line on stderr, on a terminal only: a spinner with the tool's name, its
/// latest progress report and the time taken, drawn once the call has run for
/// [`CallDisplay::AFTER`] (a quick call draws nothing); cleared when the call ends.
struct CallDisplay {
    bar: ProgressBar,
    shown: tokio::task::JoinHandle<()>,
}

impl CallDisplay {
    const AFTER: Duration = Duration::from_millis(300);

    fn start(name: &str) -> Option<Self> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden())
            .with_message(name.to_owned());
        if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
            bar.set_style(style);
        }
        let later = bar.clone();
        let shown = tokio::spawn(async move {
            tokio::time::sleep(Self::AFTER).await;
            later.set_draw_target(ProgressDrawTarget::stderr());
            later.enable_steady_tick(Duration::from_millis(100));
        });
        Some(Self { bar, shown })
    }

    /// Where the tool's progress reports go: into the line, after the tool's name.
    fn sink(&self) -> ProgressSink {
        let bar = self.bar.clone();
        let name = bar.message();
        Arc::new(move |p: Progress| {
            let count = match p.total {
                Some(total) => format!("{}/{}", p.progress, total),
                None => p.progress.to_string(),
            };
            let text = match &p.message {
                Some(message) => format!("{name}: {message} [{count}]"),
                None => format!("{name}: [{count}]"),
            };
            bar.set_message(text);
        })
    }
}

impl Drop for CallDisplay {
    fn drop(&mut self) {
        self.shown.abort();
        self.bar.finish_and_clear();
    }
}

fn with_newline(text: &str) -> String {
    if text.ends_with('\n') {
        text.to_owned()
    } else {
        format!("{text}\n")
    }
}
