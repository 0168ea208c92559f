//! `toolgate serve`: the MCP server.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use tokio_util::sync::CancellationToken;
use toolgate_gateway::ServerState;
use toolgate_mcp::{
    HealthSource, HttpOptions, ListenerLimits, Metrics, OAuthSettings, ServerHealth,
    ToolgateServer, serve_http, serve_http_on, serve_stdio,
};
use toolgate_runtime::Runtime;
use toolgate_skills::SkillPrompts;

/// Arguments of `toolgate serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio, e.g. 127.0.0.1:8765.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    /// Environment variable holding the bearer token HTTP clients must send
    /// (default from config: TOOLGATE_TOKEN). Unset or empty = no token.
    #[arg(long, value_name = "VAR")]
    pub token_env: Option<String>,
    /// Allow a non-loopback --http address without a token (static or `[server.auth]`).
    #[arg(long)]
    pub insecure_no_auth: bool,
    /// Progressive disclosure: `proxy` (tools array never changes; found tools are called
    /// through run_tool), `backfill` (found tools join this session's tools/list, announced
    /// with list_changed) or `off` (every tool direct). Default from config: proxy, with
    /// disclosure on above 15 tools.
    #[arg(long, value_enum, value_name = "MODE")]
    pub disclosure: Option<DisclosureArg>,
}

/// Values of `--disclosure`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum DisclosureArg {
    /// The tools array never changes; found tools are called through run_tool.
    Proxy,
    /// Found tools join the session's tools/list.
    Backfill,
    /// Every tool is direct.
    Off,
}

impl From<DisclosureArg> for toolgate_config::DisclosureFlag {
    fn from(arg: DisclosureArg) -> Self {
        match arg {
            DisclosureArg::Proxy => Self::Proxy,
            DisclosureArg::Backfill => Self::Backfill,
            DisclosureArg::Off => Self::Off,
        }
    }
}

/// How long `serve` waits at exit for spill files still being copied to the shared store.
const SPILL_UPLOAD_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

const INSTRUCTIONS: &str = "toolgate gives bounded, safe file tools for this project. Paths are relative to the project root. Results that are cut say so and tell you how to get the rest (offset/next_offset); never rerun a command just to see more output.";

/// Binds `[server] http` (`--http`) on port 0 before anything is built, and writes the
/// bound address back into `config`: the port the OS picks is known only then, and the
/// redirect URI of logins per caller (`Runtime::web_logins`) names it. `None` for any
/// other address (bound by [`run`], after its checks) or one that cannot be bound (then
/// [`run`] tries again and reports why).
pub(crate) fn bind_early(config: &mut toolgate_config::Config) -> Option<std::net::TcpListener> {
    let addr: SocketAddr = config.server.http.as_deref()?.parse().ok()?;
    if addr.port() != 0 {
        return None;
    }
    let listener = std::net::TcpListener::bind(addr).ok()?;
    config.server.http = Some(listener.local_addr().ok()?.to_string());
    Some(listener)
}

/// Serves until the client leaves or a signal comes. With `reload` (toolgate's own config
/// files outside the project, and how to read the config again) and `[mcp] watch` on, a
/// change to a file the MCP servers come from is applied while serving. `listener` is the
/// HTTP address bound by [`bind_early`], if it was.
pub async fn run(
    runtime: Runtime,
    args: ServeArgs,
    reload: Option<(Vec<PathBuf>, toolgate_runtime::LoadConfig)>,
    listener: Option<std::net::TcpListener>,
) -> ExitCode {
    // On stdio, stdout is the MCP transport: an audit line there would break the client.
    if runtime.config.server.http.is_none() && runtime.config.audit.writes_stdout() {
        eprintln!(
            "toolgate: audit.path = \"-\" writes the audit log to stdout, which `serve` on stdio uses for MCP messages; give a file path (e.g. \"~/.local/state/toolgate/audit.jsonl\") or serve with --http"
        );
        return ExitCode::from(crate::USAGE_ERROR);
    }
    // Mounted MCP servers start in the background; the built-ins are served at once and
    // each server's tools arrive with a `list_changed` when it is ready.
    // The signal handlers are in place before anything is logged as started: a signal that
    // arrives once "serving" is printed always stops the server cleanly.
    let stop = terminated();
    runtime.gateway.start();
    // Replicas share spill files: say once whether the store answers (serving goes on with
    // local spill files either way).
    if let Some(shared) = runtime.spill.shared() {
        match shared.check().await {
            Ok(()) => tracing::info!(
                "spill files shared through {} ({})",
                shared.url(),
                shared.endpoint()
            ),
            Err(e) => tracing::warn!("{e}"),
        }
    }
    let _watch = match reload {
        Some((own_files, load)) if runtime.config.mcp.watch => {
            toolgate_runtime::watch_config(runtime.server_reload(own_files), load)
        }
        _ => None,
    };
    let code = tokio::select! {
        code = serve(&runtime, args, listener) => code,
        signal = stop => {
            tracing::info!("stopping on {signal}");
            ExitCode::SUCCESS
        }
    };
    // Whatever ended the session (client gone, signal), no mounted server outlives it.
    runtime.gateway.shutdown().await;
    // Spill files written just before the end still reach the other replicas.
    if let Some(shared) = runtime.spill.shared() {
        shared.finish_uploads(SPILL_UPLOAD_GRACE).await;
    }
    code
}

/// Resolves on SIGTERM, SIGHUP or SIGINT, on any transport: the server stops at once
/// (running calls are dropped, which kills their process groups; jobs and mounted servers are
/// stopped) instead of waiting for a stdin or an HTTP stream that may never close. The
/// handlers are installed when this is called, not when the future is first polled.
fn terminated() -> impl Future<Output = &'static str> {
    use tokio::signal::unix::{SignalKind, signal};
    let handlers = (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
        signal(SignalKind::interrupt()),
    );
    async move {
        let (Ok(mut term), Ok(mut hup), Ok(mut int)) = handlers else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = hup.recv() => "SIGHUP",
            _ = int.recv() => "SIGINT",
        }
    }
}

/// The mounted servers' health for `/metrics`, read from the gateway at each scrape.
fn mounted_health(runtime: &Runtime) -> HealthSource {
    let gateway = Arc::clone(&runtime.gateway);
    Arc::new(move || {
        gateway
            .status()
            .into_iter()
            .map(|status| ServerHealth {
                state: match status.state {
                    ServerState::Disabled => "disabled",
                    ServerState::NotStarted => "not_started",
                    ServerState::Starting => "starting",
                    ServerState::Ready => "ready",
                    ServerState::Failed(_) => "failed",
                    ServerState::NameClash(_) => "name_clash",
                    ServerState::NeedsLogin(_) => "needs_login",
                    ServerState::Untrusted { .. } => "untrusted",
                    _ => "other",
                },
                name: status.name,
                tools: status.tools,
            })
            .collect()
    })
}

async fn serve(
    runtime: &Runtime,
    args: ServeArgs,
    listener: Option<std::net::TcpListener>,
) -> ExitCode {
    let server = ToolgateServer::new(
        runtime.dispatcher.clone(),
        runtime.render.clone(),
        INSTRUCTIONS.to_owned(),
    )
    .with_profiles(runtime.profiles.clone())
    .with_more_instructions({
        let gateway = std::sync::Arc::clone(&runtime.gateway);
        std::sync::Arc::new(move || gateway.instructions())
    })
    .with_disclosure(runtime.disclosure.clone());
    // Calls and searches for tools of servers still starting wait for them, at most until
    // the grace from startup is over; no list ever waits.
    runtime.dispatcher.registry().wait_for_starters_until(
        tokio::time::Instant::now()
            + std::time::Duration::from_millis(runtime.config.mcp.first_list_grace_ms),
    );
    // Skills the user may invoke are prompts, and so are the mounted servers' prompts; with
    // skills off and no server mounted there is no prompt source and no `prompts` capability.
    let skills: Option<std::sync::Arc<dyn toolgate_mcp::PromptSource>> =
        runtime.skills.config().enabled.then(|| {
            SkillPrompts::new(runtime.skills.clone(), Some(runtime.roots.clone()))
                as std::sync::Arc<dyn toolgate_mcp::PromptSource>
        });
    // A config change may mount servers later: their prompts and resources are served
    // whenever servers may come (`[mcp] watch`), not only when some are configured now.
    let servers_may_come = runtime.config.mcp.watch || runtime.gateway.servers().next().is_some();
    let server = if servers_may_come {
        let gateway = std::sync::Arc::clone(&runtime.gateway);
        server
            .with_prompts(crate::prompts::ServePrompts::new(
                skills,
                std::sync::Arc::clone(&gateway),
            ))
            .with_resources(crate::resources::ServeResources::new(Arc::clone(&gateway)))
            // A client's new roots: each server asks again (and gets them during its calls).
            .with_roots_changed(Arc::new(move || gateway.client_roots_changed()))
    } else if let Some(skills) = skills {
        server.with_prompts(skills)
    } else {
        server
    };
    let root = runtime.roots.primary().display().to_string();
    // What a client lists: with disclosure on, direct tools plus search_tool and run_tool.
    let snapshot = runtime.dispatcher.snapshot();
    let tool_count = runtime
        .disclosure
        .exposed(&snapshot, &Default::default())
        .all()
        .count();
    tracing::info!("process containment: {}", toolgate_contain::current());
    let sandbox = toolgate_runtime::shell_sandbox(&runtime.config, &runtime.roots);
    tracing::info!("run_shell sandbox: {}", sandbox.describe());
    let mcp_sandbox = toolgate_runtime::mcp_sandbox(&runtime.config, &runtime.roots);
    tracing::info!("mounted stdio servers' sandbox: {}", mcp_sandbox.describe());
    match &runtime.config.server.http {
        None => {
            if std::io::stdin().is_terminal() {
                eprintln!("{}", tty_banner(&root, tool_count));
            }
            tracing::info!(root = %root, tools = tool_count, "serving MCP on stdio");
            match serve_stdio(server).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("toolgate: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Some(addr) => {
            let addr: SocketAddr = match addr.parse() {
                Ok(a) => a,
                Err(_) => {
                    eprintln!(
                        "toolgate: `{addr}` is not an address; use IP:PORT, e.g. 127.0.0.1:8765"
                    );
                    return ExitCode::from(crate::USAGE_ERROR);
                }
            };
            let token_env = args
                .token_env
                .unwrap_or_else(|| runtime.config.server.token_env.clone());
            let token = std::env::var(&token_env).ok().filter(|t| !t.is_empty());
            let metrics = if runtime.config.server.metrics {
                match Metrics::new(Some(mounted_health(runtime))) {
                    Ok(metrics) => Some(Arc::new(metrics)),
                    Err(e) => {
                        eprintln!("toolgate: {e}");
                        return ExitCode::from(crate::USAGE_ERROR);
                    }
                }
            } else {
                None
            };
            let server = match &metrics {
                Some(metrics) => server.with_metrics(Arc::clone(metrics)),
                None => server,
            };
            let auth_config = &runtime.config.server.auth;
            let oauth = if auth_config.is_set() {
                match OAuthSettings::new(
                    auth_config.issuer.as_deref().unwrap_or(""),
                    auth_config.audience.as_deref().unwrap_or(""),
                    auth_config.required_scopes.clone(),
                ) {
                    Ok(settings) => Some(settings),
                    Err(e) => {
                        eprintln!("toolgate: {e}");
                        return ExitCode::from(crate::USAGE_ERROR);
                    }
                }
            } else {
                None
            };
            let mut doors = Vec::new();
            if token.is_some() {
                doors.push(format!("bearer token from ${token_env}"));
            }
            if let Some(oauth) = &oauth {
                doors.push(format!(
                    "OAuth tokens from {} for {}",
                    oauth.issuer(),
                    oauth.audience()
                ));
            }
            let options = HttpOptions {
                addr,
                token,
                oauth,
                allowed_origins: runtime.config.server.allowed_origins.clone(),
                allowed_hosts: runtime.config.server.allowed_hosts.clone(),
                insecure_no_auth: args.insecure_no_auth,
                max_sessions: runtime.config.server.max_sessions,
                metrics,
                public_url: runtime.config.server.public_url.clone(),
                listener: ListenerLimits::default(),
                web_logins: runtime.web_logins.clone(),
            };
            let shutdown = CancellationToken::new();
            let on_signal = shutdown.clone();
            tokio::spawn(async move {
                let _ = tokio::signal::ctrl_c().await;
                on_signal.cancel();
            });
            let auth = if doors.is_empty() {
                "no token".to_owned()
            } else {
                doors.join(", ")
            };
            let said = |bound| {
                eprintln!(
                    "toolgate: serving {tool_count} tools for {root} at http://{bound}/mcp ({auth})"
                );
            };
            let result = match listener {
                Some(listener) => serve_http_on(listener, server, options, shutdown, said).await,
                None => serve_http(server, options, shutdown, said).await,
            };
            match result {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("toolgate: {e}");
                    ExitCode::from(crate::USAGE_ERROR)
                }
            }
        }
    }
}

fn tty_banner(root: &str, tools: usize) -> String {
    format!(
        "toolgate: serving {tools} tools for {root} over MCP on stdin/stdout.\n\
         This is a server for MCP clients, not an interactive shell. To connect:\n\
         \x20 Claude Code:  claude mcp add toolgate -- toolgate serve\n\
         \x20 Codex:        add to ~/.codex/config.toml:\n\
         \x20                 [mcp_servers.toolgate]\n\
         \x20                 command = \"toolgate\"\n\
         \x20                 args = [\"serve\"]\n\
         \x20 HTTP clients: toolgate serve --http 127.0.0.1:8765  (then http://127.0.0.1:8765/mcp)\n\
         \x20 Try a tool:   toolgate call read_file '{{\"path\": \"README.md\"}}'\n\
         Press Ctrl-D or Ctrl-C to stop."
    )
}
