//! The `toolgate` command line: argument parsing and printing only; the work lives in the
//! library crates.
//!
//! A library of its own, not the binary's modules: cargo compiles a library as soon as the
//! crates it uses have their metadata, while they are still being optimised (a binary waits
//! for every dependency to finish). The binary (`crates/cli`) only calls [`main`].

// A CLI prints by design.
#![allow(clippy::print_stdout, clippy::print_stderr)]

/// `println!` that ends the process quietly (exit 141, as a process killed by SIGPIPE)
/// when stdout is closed, as in `toolgate tools | head`, instead of panicking.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if let Err(e) = writeln!(std::io::stdout().lock(), $($arg)*) {
            $crate::stdout_failed(&e)
        }
    }};
}

/// `print!` with [`outln!`]'s handling of a closed stdout (flushed, for streamed text).
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut stdout = std::io::stdout().lock();
        if let Err(e) = write!(stdout, $($arg)*).and_then(|()| stdout.flush()) {
            $crate::stdout_failed(&e)
        }
    }};
}

mod agent;
mod call;
mod disclosure;
mod doctor;
mod fd_table;
mod login;
mod manual;
mod mcp;
mod prompts;
mod resources;
mod serve;
mod skills;
mod telemetry;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use toolgate_config::{Flags, LoadOptions, Loaded};
use toolgate_runtime::Runtime;

/// `toolgate --version`: the version and the commit it was built from (see build.rs).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("TOOLGATE_COMMIT"),
    ")"
);

/// A bounded, safe tool runtime and MCP server for LLM agents.
#[derive(Debug, Parser)]
#[command(
    name = "toolgate",
    version = VERSION,
    // The `toolgate` package's description (`about` alone would take this crate's).
    about = "toolgate: a bounded, safe tool runtime and MCP server for LLM agents",
    propagate_version = true
)]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Clone, Args)]
struct GlobalArgs {
    /// Folder the tools may touch (repeatable; default: the current directory). The first
    /// one is the project root relative paths resolve against.
    #[arg(long = "root", value_name = "DIR", global = true)]
    roots: Vec<PathBuf>,
    /// Extra config file layered above the user and project config.
    #[arg(long, value_name = "FILE", global = true)]
    config: Option<PathBuf>,
    /// Log level for stderr: error, warn, info, debug, trace (RUST_LOG wins).
    #[arg(long, value_name = "LEVEL", global = true)]
    log_level: Option<String>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the tools over MCP: stdio by default, Streamable HTTP with --http.
    Serve(serve::ServeArgs),
    /// List the tools a model would see.
    Tools(call::ToolsArgs),
    /// Run one tool through the full pipeline and print its result.
    Call(call::CallArgs),
    /// Inspect configuration.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Inspect the mounted MCP servers.
    #[command(subcommand)]
    Mcp(mcp::McpCommand),
    /// Inspect progressive disclosure: the plan, search, cache-prefix stability.
    #[command(subcommand)]
    Disclosure(disclosure::DisclosureCommand),
    /// Run one task with a model (OpenAI-compatible or Anthropic) over these tools.
    Run(agent::RunArgs),
    /// Talk with a model over these tools (REPL).
    Chat(agent::ChatArgs),
    /// Inspect the skills: where they come from, their flags, what failed to load.
    #[command(subcommand)]
    Skills(skills::SkillsCommand),
    /// Check the setup: config files, mounted servers, sandbox, spill space, caches; each
    /// problem says what to do. Exits 1 when there is one.
    Doctor(doctor::DoctorArgs),
    /// Print a shell completion script: `toolgate completions bash > ~/.local/share/bash-completion/completions/toolgate`.
    Completions(manual::CompletionsArgs),
    /// Print the manual page (`toolgate man | man -l -`), or write one page per command
    /// with --out-dir.
    Man(manual::ManArgs),
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// Print the merged configuration and where each value came from.
    Show,
    /// Print every config key with its default and what it does, as a TOML file (the
    /// reference in docs/configuration.md).
    Reference,
}

/// Stdout cannot be written: a reader that went away (`| head`) ends the process quietly,
/// anything else is reported.
pub(crate) fn stdout_failed(e: &std::io::Error) -> ! {
    if e.kind() != std::io::ErrorKind::BrokenPipe {
        eprintln!("toolgate: cannot write to stdout: {e}");
        std::process::exit(1);
    }
    std::process::exit(141)
}

/// Exit code for usage and configuration errors.
const USAGE_ERROR: u8 = 2;

/// How long tasks get to finish once a command is done (or a signal stopped `serve`).
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// Runs `toolgate` with the process's arguments.
pub fn main() -> ExitCode {
    // Before any thread starts: growing the table later stalls every grow (see fd_table).
    fd_table::reserve();
    let cli = Cli::parse();
    // These work whatever the configuration holds: doctor reports its problems itself.
    match &cli.command {
        Command::Completions(args) => return manual::completions(args),
        Command::Man(args) => return manual::man(args),
        Command::Doctor(args) => return doctor::run(&cli.global, args),
        // Built from the config types alone: it reads no config file.
        Command::Config(ConfigCommand::Reference) => {
            out!("{}", toolgate_config::reference());
            return ExitCode::SUCCESS;
        }
        _ => {}
    }
    let loaded = match load_config(
        &cli.global,
        cli_http(&cli.command),
        cli_disclosure(&cli.command),
    ) {
        Ok(loaded) => loaded,
        Err(e) => {
            eprintln!("toolgate: {e}");
            return ExitCode::from(USAGE_ERROR);
        }
    };
    let telemetry = match init_logging(
        &loaded.config.server.log_level,
        matches!(cli.command, Command::Serve(_)),
        &loaded.config.telemetry,
    ) {
        Ok(telemetry) => telemetry,
        Err(e) => {
            eprintln!("toolgate: {e}");
            return ExitCode::from(USAGE_ERROR);
        }
    };
    let code = execute(cli, loaded);
    if let Some(telemetry) = telemetry {
        telemetry.shutdown();
    }
    code
}

/// Runs the command with its configuration, once logging is set up.
fn execute(cli: Cli, loaded: Loaded) -> ExitCode {
    match cli.command {
        Command::Config(ConfigCommand::Show) => {
            for (key, value, source) in loaded.provenance() {
                outln!("{key} = {value}    # {source}");
            }
            ExitCode::SUCCESS
        }
        // The agent commands build their runtime for their provider (disclosure fork).
        Command::Run(args) => agent::run(loaded.config, args),
        Command::Chat(args) => agent::chat(loaded.config, args),
        command => {
            // `serve` reads the config again when a file it came from changes.
            let reload = matches!(command, Command::Serve(_)).then(|| {
                let global = cli.global.clone();
                let http = cli_http(&command);
                let disclosure = cli_disclosure(&command);
                let load: toolgate_runtime::LoadConfig = Box::new(move || {
                    load_config(&global, http.clone(), disclosure)
                        .map(|loaded| loaded.config)
                        .map_err(toolgate_config::ConfigError::refused)
                });
                (own_config_files(&cli.global), load)
            });
            let mut config = loaded.config;
            let one_shot = match &command {
                Command::Call(args) => {
                    call::one_shot_config(&mut config, Some(args.name()));
                    true
                }
                Command::Tools(_) => {
                    call::one_shot_config(&mut config, None);
                    true
                }
                _ => false,
            };
            let listener = match &command {
                Command::Serve(_) => serve::bind_early(&mut config),
                _ => None,
            };
            let runtime = match std::env::current_dir() {
                Ok(cwd) => Runtime::new(config, &cwd),
                Err(e) => {
                    eprintln!("toolgate: {e}");
                    return ExitCode::from(USAGE_ERROR);
                }
            };
            let runtime = match runtime {
                Ok(rt) => rt,
                Err(e) => {
                    eprintln!("toolgate: {e}");
                    return ExitCode::from(USAGE_ERROR);
                }
            };
            // A one-shot command runs its call on this thread (blocking work still gets the
            // blocking pool): no worker threads to start and stop for one call.
            let tokio = match one_shot {
                true => tokio::runtime::Builder::new_current_thread(),
                false => tokio::runtime::Builder::new_multi_thread(),
            }
            .enable_all()
            .build();
            let tokio = match tokio {
                Ok(rt) => rt,
                Err(e) => {
                    eprintln!("toolgate: cannot start the async runtime: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let code = tokio.block_on(async move {
                match command {
                    Command::Serve(args) => serve::run(runtime, args, reload, listener).await,
                    Command::Tools(args) => call::tools(&runtime, &args).await,
                    Command::Call(args) => call::call(&runtime, args).await,
                    Command::Mcp(command) => mcp::run(&runtime, command).await,
                    Command::Disclosure(command) => disclosure::run(&runtime, command).await,
                    Command::Skills(command) => skills::run(&runtime, command),
                    Command::Config(_)
                    | Command::Run(_)
                    | Command::Chat(_)
                    | Command::Doctor(_)
                    | Command::Completions(_)
                    | Command::Man(_) => ExitCode::SUCCESS,
                }
            });
            // Dropping the runtime would wait for its blocking threads, and one of them may
            // sit in a read of a stdin that never closes (a client that keeps the pipe open
            // after a signal): give running work a moment, then exit regardless.
            tokio.shutdown_timeout(SHUTDOWN_GRACE);
            code
        }
    }
}

fn cli_http(command: &Command) -> Option<String> {
    match command {
        Command::Serve(args) => args.http.clone(),
        _ => None,
    }
}

fn cli_disclosure(command: &Command) -> Option<toolgate_config::DisclosureFlag> {
    match command {
        Command::Serve(args) => args.disclosure.map(Into::into),
        _ => None,
    }
}

/// Why the configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
enum LoadError {
    /// The current directory (the project) cannot be read.
    #[error("cannot read the current directory: {0}")]
    Cwd(#[source] std::io::Error),
    /// The configuration cannot be used.
    #[error(transparent)]
    Config(#[from] toolgate_config::ConfigError),
}

fn load_config(
    global: &GlobalArgs,
    http: Option<String>,
    disclosure: Option<toolgate_config::DisclosureFlag>,
) -> Result<Loaded, LoadError> {
    let cwd = std::env::current_dir().map_err(LoadError::Cwd)?;
    let flags = Flags {
        roots: global.roots.clone(),
        http,
        log_level: global.log_level.clone(),
        disclosure,
    };
    let options = LoadOptions::standard(cwd, global.config.clone(), flags);
    Ok(toolgate_config::load(&options)?)
}

/// toolgate's config files outside the project: the user file and `--config FILE`.
fn own_config_files(global: &GlobalArgs) -> Vec<PathBuf> {
    let options = LoadOptions::standard(PathBuf::new(), global.config.clone(), Flags::default());
    options
        .user_file
        .into_iter()
        .chain(options.explicit_file)
        .collect()
}

/// Logs to stderr, and exports spans when `[telemetry]` asks (the returned handle flushes
/// them at exit).
fn init_logging(
    level: &str,
    serving: bool,
    telemetry: &toolgate_config::TelemetryConfig,
) -> Result<Option<telemetry::Telemetry>, telemetry::TelemetryError> {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;

    // The MCP library logs its own internals (raw structs) at `info`: warnings only, unless
    // the level asks for debug detail or names a target itself.
    let level = match level.trim() {
        plain @ ("warn" | "info") => format!("{plain},rmcp=warn"),
        other => other.to_owned(),
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(&level))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Outside `serve`, only warnings and worse unless asked: the result is the output.
    let filter = if serving || std::env::var_os("RUST_LOG").is_some() {
        filter
    } else {
        tracing_subscriber::EnvFilter::new("warn")
    };
    // The spans meant for export are not log lines.
    let filter = match format!("{}=off", toolgate_core::trace::TARGET).parse() {
        Ok(off) => filter.add_directive(off),
        Err(_) => filter,
    };
    let log = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_filter(filter);
    let (export, handle) = match telemetry::layer(telemetry)? {
        Some((layer, handle)) => (Some(layer), Some(handle)),
        None => (None, None),
    };
    let _ = tracing_subscriber::registry()
        .with(log)
        .with(export)
        .try_init();
    Ok(handle)
}
