//! `toolgate run` and `toolgate chat`: the agent loop (`toolgate-agent`) on a terminal.
//!
//! The commands' flow is here; what they start from (provider, runtime, agent, `/NAME`
//! skills) is in [`setup`], the terminal (input, spinner, tool lines, Ctrl-C) in
//! [`terminal`], and the user answering `ask` rules in [`approver`].

mod approver;
mod setup;
mod terminal;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use serde_json::json;
use toolgate_agent::{Agent, Outcome, Status};
use toolgate_config::Config;
use toolgate_core::Approval;
use toolgate_providers::Usage;

use approver::TtyApprover;
use setup::{Setup, expand_skill, setup, user_skills};
use terminal::{Input, Interrupts, Terminal};

/// Options shared by `run` and `chat`.
#[derive(Debug, Args)]
pub struct AgentArgs {
    /// Provider: a `[providers.NAME]` from config, or `openai` / `anthropic` (default:
    /// `[agent] provider`, else `openai`, or `anthropic` when only ANTHROPIC_API_KEY is set).
    #[arg(long, value_name = "NAME")]
    provider: Option<String>,
    /// Endpoint root, e.g. http://localhost:11434/v1 for Ollama.
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// Model name as the endpoint knows it.
    #[arg(long, value_name = "NAME")]
    model: Option<String>,
    /// Most model requests per task (default: `[agent] max_turns`, 50).
    #[arg(long, value_name = "N")]
    max_turns: Option<u32>,
    /// Continue a saved session: its id (as `run` printed it) or `last` (the newest this
    /// project's transcripts folder holds).
    #[arg(long, value_name = "ID")]
    resume: Option<String>,
    /// Ask for whole responses instead of streamed ones.
    #[arg(long)]
    no_stream: bool,
}

/// Arguments of `toolgate run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    agent: AgentArgs,
    /// Print one JSON object (status, turns, text, tool calls, usage) instead of streaming.
    #[arg(long)]
    json: bool,
    /// The task.
    task: String,
}

/// Arguments of `toolgate chat`.
#[derive(Debug, Args)]
pub struct ChatArgs {
    #[command(flatten)]
    agent: AgentArgs,
}

/// Exit code when the turn limit was reached.
const EXIT_MAX_TURNS: u8 = 3;
/// Exit code when a tool failed fatally.
const EXIT_TOOL_FAILED: u8 = 4;
/// Exit code after Ctrl-C (128 + SIGINT).
const EXIT_CANCELLED: u8 = 130;

fn exit_code(status: Status) -> ExitCode {
    match status {
        Status::Finished => ExitCode::SUCCESS,
        Status::ProviderError => ExitCode::FAILURE,
        Status::MaxTurns => ExitCode::from(EXIT_MAX_TURNS),
        Status::ToolFailed => ExitCode::from(EXIT_TOOL_FAILED),
        Status::Cancelled => ExitCode::from(EXIT_CANCELLED),
    }
}

fn async_runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            eprintln!("toolgate: cannot start the async runtime: {e}");
            ExitCode::FAILURE
        })
}

/// `toolgate run`.
pub fn run(config: Config, args: RunArgs) -> ExitCode {
    let tokio = match async_runtime() {
        Ok(t) => t,
        Err(code) => return code,
    };
    let code = tokio.block_on(async move {
        let terminal = Terminal::new(!args.json && std::io::stderr().is_terminal());
        // Asked on the terminal when there is one to ask on; otherwise `ask` refuses.
        let approval =
            if !args.json && std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
                Approval::By(Arc::new(TtyApprover::new(terminal.clone(), Input::stdin())))
            } else {
                Approval::Nobody
            };
        let Setup { runtime, mut agent } = match setup(config, &args.agent, approval) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("toolgate: {e}");
                return ExitCode::from(crate::USAGE_ERROR);
            }
        };
        runtime.gateway.start_all().await;
        crate::call::mcp_warnings(&runtime);
        let interrupts = Interrupts::default();
        interrupts.listen();
        let task = match expand_skill(&runtime, &args.task) {
            Ok(task) => task,
            Err(e) => {
                eprintln!("toolgate: {e}");
                return ExitCode::from(crate::USAGE_ERROR);
            }
        };
        let cancel = interrupts.start_turn();
        let outcome = if args.json {
            agent.run(&task, &mut |_| {}, &cancel).await
        } else {
            let mut show = |p| terminal.show(p);
            agent.run(&task, &mut show, &cancel).await
        };
        interrupts.end_turn();
        agent.close();
        runtime.gateway.shutdown().await;
        if args.json {
            outln!("{}", report(&agent, &outcome));
        } else {
            terminal.finish_text();
            if let Some(error) = &outcome.error {
                eprintln!("toolgate: {error}");
            }
            eprintln!("{}", usage_line(&outcome.usage, outcome.requests));
            if let Some(id) = agent.session_id() {
                eprintln!("session {id} (continue with --resume {id})");
            }
        }
        exit_code(outcome.status)
    });
    tokio.shutdown_timeout(crate::SHUTDOWN_GRACE);
    code
}

/// The `--json` object.
fn report(agent: &Agent, outcome: &Outcome) -> serde_json::Value {
    json!({
        "status": outcome.status,
        "session": agent.session_id(),
        "provider": agent.provider().name(),
        "model": agent.provider().model(),
        "turns": outcome.turns,
        "requests": outcome.requests,
        "text": outcome.text,
        "tool_calls": outcome.tool_calls,
        "usage": outcome.usage,
        "timing": outcome.timing,
        "error": outcome.error,
    })
}

fn usage_line(usage: &Usage, requests: u32) -> String {
    let cached = if usage.cached_input_tokens > 0 {
        format!(
            " ({} cached)",
            toolgate_budget::group(usage.cached_input_tokens)
        )
    } else {
        String::new()
    };
    format!(
        "[{requests} request{} · {} tokens in{cached} · {} out]",
        if requests == 1 { "" } else { "s" },
        toolgate_budget::group(usage.input_tokens),
        toolgate_budget::group(usage.output_tokens),
    )
}

/// `toolgate chat`.
pub fn chat(config: Config, args: ChatArgs) -> ExitCode {
    let tokio = match async_runtime() {
        Ok(t) => t,
        Err(code) => return code,
    };
    let code = tokio.block_on(async move {
        let tty = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
        let terminal = Terminal::new(std::io::stderr().is_terminal());
        let input = Input::stdin();
        let approval = if tty {
            Approval::By(Arc::new(TtyApprover::new(terminal.clone(), input.clone())))
        } else {
            Approval::Nobody
        };
        let Setup { runtime, mut agent } = match setup(config, &args.agent, approval) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("toolgate: {e}");
                return ExitCode::from(crate::USAGE_ERROR);
            }
        };
        runtime.gateway.start_all().await;
        crate::call::mcp_warnings(&runtime);
        eprintln!(
            "toolgate chat · {} · {}{} — Ctrl-C stops a turn, Ctrl-D or /exit quits",
            agent.provider().name(),
            agent.provider().model(),
            agent
                .session_id()
                .map(|id| format!(" · session {id}"))
                .unwrap_or_default()
        );
        let interrupts = Interrupts::default();
        interrupts.listen();
        let mut last = Status::Finished;
        loop {
            if tty {
                eprint!("\n› ");
                let _ = std::io::stderr().flush();
            }
            let Some(line) = input.line().await else {
                break;
            };
            let task = line.trim();
            if task.is_empty() {
                continue;
            }
            if matches!(task, "/exit" | "/quit") {
                break;
            }
            if task == "/skills" {
                eprintln!("{}", user_skills(&runtime));
                continue;
            }
            let task = match expand_skill(&runtime, task) {
                Ok(task) => task,
                Err(e) => {
                    eprintln!("toolgate: {e}");
                    continue;
                }
            };
            let task = task.as_str();
            let cancel = interrupts.start_turn();
            let mut show = |p| terminal.show(p);
            let outcome = agent.run(task, &mut show, &cancel).await;
            interrupts.end_turn();
            terminal.finish_text();
            if let Some(error) = &outcome.error {
                eprintln!("toolgate: {error}");
            }
            eprintln!("{}", usage_line(&outcome.usage, outcome.requests));
            last = outcome.status;
        }
        agent.close();
        runtime.gateway.shutdown().await;
        if let Some(id) = agent.session_id() {
            eprintln!("session {id} saved (continue with toolgate chat --resume {id})");
        }
        match last {
            Status::ProviderError => ExitCode::FAILURE,
            _ => ExitCode::SUCCESS,
        }
    });
    tokio.shutdown_timeout(crate::SHUTDOWN_GRACE);
    code
}
