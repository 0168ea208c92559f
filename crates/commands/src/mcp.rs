//! `toolgate mcp list` and `toolgate mcp tools NAME`: the mounted MCP servers, for humans
//! (`toolgate mcp login` and `logout` are in `login.rs`).

use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};
use serde_json::{Value, json};
use toolgate_core::{Protocol, render_tools};
use toolgate_gateway::{ServerSpec, ServerState, ServerStatus, TrustStore};
use toolgate_runtime::Runtime;

mod list;

/// `toolgate mcp …`.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Start every configured MCP server and show its status, tool count, startup time
    /// and the file it came from.
    List(ListArgs),
    /// Start one MCP server and list the tools it contributes.
    Tools(ServerToolsArgs),
    /// Trust MCP servers defined by this project's files (`.mcp.json`,
    /// `.claude/settings.json`, `.toolgate/config.toml`) so that they may start. Records
    /// each server's name and a fingerprint of its command, args, env and of the project
    /// files it runs (scripts, project-local package bins) in your user config folder; a
    /// server whose command or files change needs trusting again.
    Trust(TrustArgs),
    /// Log in to a remote MCP server that needs OAuth: prints the authorization URL,
    /// opens it with `$BROWSER` (or the platform opener) and waits for the browser to
    /// come back to a loopback callback; keeps the tokens in the OS credential store
    /// (else a 0600 file in your user config folder).
    Login(crate::login::LoginArgs),
    /// Forget the OAuth tokens kept for a remote MCP server.
    Logout(crate::login::LogoutArgs),
}

/// Arguments of `toolgate mcp trust`.
#[derive(Debug, Args)]
pub struct TrustArgs {
    /// Servers to trust, as `toolgate mcp list` names them. Without names: shows every
    /// server the project's files define and asks before trusting them (on a terminal).
    names: Vec<String>,
    /// Trust every server the project's files define without asking (for scripts).
    #[arg(long, conflicts_with = "names")]
    all: bool,
}

/// Arguments of `toolgate mcp list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print JSON instead of a table (once every server is known).
    #[arg(long)]
    json: bool,
    /// Stop waiting for servers after this many seconds (default: each server's own
    /// startup timeout); the ones still starting are listed as `starting`.
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    timeout: Option<Duration>,
}

/// A `--timeout` that is not a positive number of seconds.
#[derive(Debug, thiserror::Error)]
#[error("`{0}` is not a number of seconds above 0, such as 5 or 0.5")]
struct NotSeconds(String);

fn parse_seconds(text: &str) -> Result<Duration, NotSeconds> {
    text.parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0)
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .ok_or_else(|| NotSeconds(text.to_owned()))
}

/// Arguments of `toolgate mcp tools`.
#[derive(Debug, Args)]
pub struct ServerToolsArgs {
    /// Server name, as in `toolgate mcp list`.
    name: String,
    /// Print the MCP tools/list JSON of its tools.
    #[arg(long)]
    json: bool,
}

pub async fn run(runtime: &Runtime, command: McpCommand) -> ExitCode {
    let code = match command {
        McpCommand::List(args) => list::list(runtime, &args).await,
        McpCommand::Tools(args) => tools(runtime, &args).await,
        McpCommand::Trust(args) => trust(runtime, &args),
        McpCommand::Login(args) => crate::login::login(runtime, &args).await,
        McpCommand::Logout(args) => crate::login::logout(runtime, &args),
    };
    runtime.gateway.shutdown().await;
    code
}

fn trust(runtime: &Runtime, args: &TrustArgs) -> ExitCode {
    let project = runtime.roots.primary();
    let candidates: Vec<ServerSpec> = runtime
        .gateway
        .servers()
        .filter(|s| s.trust.is_project())
        .collect();
    for name in &args.names {
        if !candidates.iter().any(|s| s.name == *name) {
            let user_level = runtime.gateway.servers().any(|s| s.name == *name);
            if user_level {
                eprintln!("toolgate: `{name}` is defined in a user-level file and needs no trust");
            } else {
                let known: Vec<&str> = candidates.iter().map(|s| s.name.as_str()).collect();
                eprintln!(
                    "toolgate: no MCP server named `{name}` is defined by this project's files (project servers: {})",
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                );
            }
            return ExitCode::from(crate::USAGE_ERROR);
        }
    }
    let chosen: Vec<&ServerSpec> = candidates
        .iter()
        .filter(|s| args.names.is_empty() || args.names.contains(&s.name))
        .collect();
    if chosen.is_empty() {
        eprintln!(
            "toolgate: this project's files define no MCP servers; nothing to trust (servers from your user config need no trust)"
        );
        return ExitCode::SUCCESS;
    }
    if args.names.is_empty() && !args.all {
        match confirm_all(&chosen) {
            Ok(true) => {}
            Ok(false) => {
                eprintln!("toolgate: nothing trusted");
                return ExitCode::FAILURE;
            }
            Err(code) => return code,
        }
    }
    let mut store = match TrustStore::load(runtime.config.trust_file.clone()) {
        Ok(store) => store,
        Err(e) => {
            eprintln!("toolgate: {e}");
            return ExitCode::FAILURE;
        }
    };
    let roots = runtime.roots.roots();
    let mut covered = Vec::with_capacity(chosen.len());
    for spec in &chosen {
        match store.trust(project, &roots, spec) {
            Ok(files) => covered.push(files.into_keys().collect::<Vec<_>>()),
            Err(e) => {
                eprintln!("toolgate: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    if let Err(e) = store.save() {
        eprintln!("toolgate: {e}");
        return ExitCode::FAILURE;
    }
    for (spec, files) in chosen.iter().zip(&covered) {
        outln!(
            "trusted {}  {}  ({})",
            spec.name,
            toolgate_gateway::describe_transport(&spec.transport),
            spec.source
        );
        if !files.is_empty() {
            outln!("  covers: {}", short_list(files));
        }
    }
    ExitCode::SUCCESS
}

/// Shows what `mcp trust` without names would trust and asks on a terminal; refuses
/// without one (a script names the servers or passes `--all`).
fn confirm_all(chosen: &[&ServerSpec]) -> Result<bool, ExitCode> {
    use std::io::{BufRead, IsTerminal, Write};
    let mut listing = format!(
        "This project's files define {}:\n",
        if chosen.len() == 1 {
            "one MCP server".to_owned()
        } else {
            format!("{} MCP servers", chosen.len())
        }
    );
    for spec in chosen {
        listing.push_str(&format!(
            "  {}  {}  ({})\n",
            spec.name,
            toolgate_gateway::describe_transport(&spec.transport),
            spec.source
        ));
        if let Some(files) = spec
            .launch
            .as_ref()
            .map(|l| l.files.keys().cloned().collect::<Vec<_>>())
            && !files.is_empty()
        {
            listing.push_str(&format!("    runs: {}\n", short_list(&files)));
        }
    }
    let stdin = std::io::stdin();
    if !stdin.is_terminal() || !std::io::stderr().is_terminal() {
        eprint!("{listing}");
        eprintln!(
            "toolgate: not trusting without asking: name the servers (`toolgate mcp trust NAME…`) or pass --all"
        );
        return Err(ExitCode::from(crate::USAGE_ERROR));
    }
    eprint!(
        "{listing}Each one runs its command on your machine with your rights. Trust them all? [y/N] "
    );
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    if stdin.lock().read_line(&mut answer).is_err() {
        return Ok(false);
    }
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "Yes" | "YES"))
}

async fn tools(runtime: &Runtime, args: &ServerToolsArgs) -> ExitCode {
    let names: Vec<String> = runtime.gateway.servers().map(|s| s.name.clone()).collect();
    if !names.contains(&args.name) {
        let known = if names.is_empty() {
            "none is configured".to_owned()
        } else {
            format!("configured: {}", names.join(", "))
        };
        eprintln!("toolgate: no MCP server named `{}` ({known})", args.name);
        return ExitCode::from(crate::USAGE_ERROR);
    }
    runtime.gateway.start_server(&args.name).await;
    let status = runtime
        .gateway
        .status()
        .into_iter()
        .find(|s| s.name == args.name);
    let tools = runtime.gateway.server_tools(&args.name).unwrap_or_default();
    match status.as_ref().map(|s| &s.state) {
        Some(ServerState::Disabled) => {
            eprintln!("toolgate: `{}` is disabled (enabled = false)", args.name);
            return ExitCode::FAILURE;
        }
        Some(ServerState::Untrusted { reason, command }) => {
            eprintln!(
                "toolgate: `{}` was not started: {reason}; check its command and the files it runs with `toolgate mcp list`, then run `{command}`",
                args.name
            );
            return ExitCode::FAILURE;
        }
        Some(ServerState::NeedsLogin(reason)) if tools.is_empty() => {
            eprintln!(
                "toolgate: `{}` needs login ({reason}); run `toolgate mcp login {}`",
                args.name, args.name
            );
            return ExitCode::FAILURE;
        }
        Some(ServerState::Failed(reason) | ServerState::NameClash(reason)) if tools.is_empty() => {
            eprintln!("toolgate: `{}` failed: {reason}", args.name);
            return ExitCode::FAILURE;
        }
        _ => {}
    }
    if args.json {
        let array = render_tools(
            tools.iter().map(|t| t.as_ref()),
            Protocol::Mcp,
            &runtime.render,
        );
        outln!(
            "{}",
            serde_json::to_string_pretty(&json!({ "tools": array })).unwrap_or_default()
        );
    } else {
        let width = tools.iter().map(|t| t.spec().name.len()).max().unwrap_or(0);
        for tool in &tools {
            let summary = tool.spec().description.lines().next().unwrap_or_default();
            outln!("{:<width$}  {}", tool.spec().name, summary.trim());
        }
    }
    ExitCode::SUCCESS
}

fn state_word(state: &ServerState) -> &'static str {
    match state {
        ServerState::Disabled => "disabled",
        ServerState::NotStarted => "not started",
        ServerState::Starting => "starting",
        ServerState::Ready => "ready",
        // A name clash is a startup failure; the reason says which names.
        ServerState::Failed(_) | ServerState::NameClash(_) => "failed",
        ServerState::Untrusted { .. } => "untrusted",
        ServerState::NeedsLogin(_) => "needs login",
        _ => "unknown",
    }
}

fn millis(d: Option<Duration>) -> String {
    d.map_or_else(|| "-".to_owned(), |d| format!("{} ms", d.as_millis()))
}

/// `60 s`, `1.5 s`.
fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.1} s")
    }
}

/// The human table's header, for names `name_w` wide.
fn header(name_w: usize) -> String {
    format!(
        "{:<name_w$}  {:<11}  {:>5}  {:>8}  SOURCE\n",
        "NAME", "STATUS", "TOOLS", "STARTUP"
    )
}

/// One server in the human table: its line, then indented reasons and notes.
fn block(s: &ServerStatus, name_w: usize) -> String {
    let tools = if matches!(s.state, ServerState::Ready) || s.tools > 0 {
        s.tools.to_string()
    } else {
        "-".to_owned()
    };
    let mut out = format!(
        "{:<name_w$}  {:<11}  {:>5}  {:>8}  {}\n",
        s.name,
        state_word(&s.state),
        tools,
        millis(s.startup),
        s.source
    );
    out.push_str(&format!(
        "{:<name_w$}  {} (startup timeout {})\n",
        "",
        s.transport,
        seconds(s.startup_timeout)
    ));
    if let ServerState::Failed(reason) | ServerState::NameClash(reason) = &s.state {
        out.push_str(&format!("{:<name_w$}  reason: {reason}\n", ""));
    }
    if let ServerState::NeedsLogin(reason) = &s.state {
        out.push_str(&format!(
            "{:<name_w$}  needs login ({reason}): run `toolgate mcp login {}`\n",
            "", s.name
        ));
    } else if let Some(auth) = s.auth.as_ref().and_then(crate::login::describe_status) {
        out.push_str(&format!("{:<name_w$}  auth: {auth}\n", ""));
    }
    if !s.files.is_empty() {
        out.push_str(&format!(
            "{:<name_w$}  covers: {}\n",
            "",
            short_list(&s.files)
        ));
    }
    if let ServerState::Untrusted { reason, command } = &s.state {
        out.push_str(&format!(
            "{:<name_w$}  not started: {reason}; check the command and the files it runs, then run `{command}`\n",
            ""
        ));
    }
    for note in &s.notes {
        out.push_str(&format!("{:<name_w$}  note: {note}\n", ""));
    }
    out
}

fn status_json(s: &ServerStatus) -> Value {
    let mut v = json!({
        "name": s.name,
        "status": state_word(&s.state),
        "tools": s.tools,
        "startup_ms": s.startup.map(|d| d.as_millis() as u64),
        "startup_timeout_ms": s.startup_timeout.as_millis() as u64,
        "source": s.source,
        "transport": s.transport,
        "notes": s.notes,
    });
    if let ServerState::Failed(reason) | ServerState::NameClash(reason) = &s.state {
        v["reason"] = json!(reason);
    }
    if let ServerState::NeedsLogin(reason) = &s.state {
        v["reason"] = json!(reason);
        v["login_command"] = json!(format!("toolgate mcp login {}", s.name));
    }
    if let Some(auth) = s.auth.as_ref().and_then(crate::login::describe_status) {
        v["auth"] = json!(auth);
    }
    if !s.files.is_empty() {
        v["files"] = json!(s.files);
    }
    if let ServerState::Untrusted { reason, command } = &s.state {
        v["reason"] = json!(format!(
            "{reason}; check its command and the files it runs, then run `{command}`"
        ));
        v["trust_command"] = json!(command);
    }
    v
}

/// At most five names, then how many more: `server.sh, lib.sh (+3 more)`.
fn short_list(names: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut text = names
        .iter()
        .take(SHOWN)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        text.push_str(&format!(" (+{} more)", names.len() - SHOWN));
    }
    text
}
