//! `toolgate run` and `toolgate chat`: the agent loop (`toolgate-agent`) on a terminal.

use std::collections::BTreeSet;
use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use clap::Args;
use futures::future::BoxFuture;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolgate_agent::{Agent, CallRecord, Outcome, Progress, Status, Tools};
use toolgate_config::Config;
use toolgate_core::disclosure::SessionFacts;
use toolgate_core::{ApprovalRequest, Approver, ExposureMode, SessionApprover};
use toolgate_providers::{Kind, Provider, ProviderConfig, Usage};
use toolgate_runtime::Runtime;

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

/// The provider `args` and `config` name, with flags applied.
fn provider_config(config: &Config, args: &AgentArgs) -> Result<(String, ProviderConfig), String> {
    let has = |var: &str| std::env::var_os(var).is_some_and(|v| !v.is_empty());
    let name = args
        .provider
        .clone()
        .or_else(|| config.agent.provider.clone())
        .unwrap_or_else(|| {
            if !has("OPENAI_API_KEY") && has("ANTHROPIC_API_KEY") {
                "anthropic".to_owned()
            } else {
                "openai".to_owned()
            }
        });
    let mut provider = match (config.providers.get(&name), name.as_str()) {
        (Some(p), _) => p.clone(),
        (None, "openai") => ProviderConfig::default(),
        (None, "anthropic") => ProviderConfig {
            kind: Kind::Anthropic,
            ..ProviderConfig::default()
        },
        (None, other) => {
            let known: Vec<&str> = config.providers.keys().map(String::as_str).collect();
            return Err(format!(
                "no provider `{other}`: add [providers.{other}] with kind, base_url and model to your config, or use openai / anthropic{}",
                if known.is_empty() {
                    String::new()
                } else {
                    format!(" or one of {}", known.join(", "))
                }
            ));
        }
    };
    if let Some(url) = &args.base_url {
        provider.base_url = Some(url.clone());
    }
    if let Some(model) = &args.model {
        provider.model = Some(model.clone());
    }
    if args.no_stream {
        provider.stream = Some(false);
    }
    Ok((name, provider))
}

/// Everything a command needs, built from config.
struct Setup {
    runtime: Runtime,
    agent: Agent,
}

fn setup(mut config: Config, args: &AgentArgs) -> Result<Setup, String> {
    let (name, provider_config) = provider_config(&config, args)?;
    // The protocol fork of seed 000 s15 ③: found tools join a strict provider's array;
    // a free-text provider calls them through run_tool.
    config.disclosure.exposure = if provider_config.kind.strict_tool_names() {
        ExposureMode::Backfill
    } else {
        ExposureMode::Proxy
    };
    let provider = Provider::new(&name, &provider_config, |var| std::env::var(var).ok())
        .map_err(|e| e.to_string())?;
    let mut settings = config.agent.clone();
    if let Some(n) = args.max_turns {
        settings.max_turns = n;
    }
    if let Some(tokens) = provider_config.context_tokens {
        settings.context_tokens = tokens;
    }
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
    let facts = SessionFacts {
        provider: Some(name),
    };
    let runtime = Runtime::with_facts(config, &cwd, &facts).map_err(|e| e.to_string())?;
    let root = runtime.roots.primary().to_path_buf();
    // Transcripts: the user's data folder unless the user's own config names a folder.
    let sessions = match &settings.sessions_dir {
        Some(dir) => Ok(root.join(toolgate_core::UserDirs::from_env().expand_tilde(dir))),
        None => toolgate_agent::project_sessions_dir(&root, &toolgate_core::UserDirs::from_env())
            .map_err(|e| format!("transcripts: {e}")),
    };
    let tools = Tools {
        dispatcher: Arc::clone(&runtime.dispatcher),
        disclosure: Arc::clone(&runtime.disclosure),
        render: runtime.render.clone(),
        spill: Some(Arc::clone(&runtime.spill)),
        root,
    };
    let mut agent = Agent::new(tools, provider, settings);
    match (&args.resume, sessions) {
        (Some(id), sessions) => agent.resume(&sessions?, id).map_err(|e| e.to_string())?,
        (None, Err(e)) => eprintln!("warning: this session will not be saved: {e}"),
        (None, Ok(sessions)) => {
            if let Err(e) = agent.record_to(&sessions) {
                eprintln!("warning: this session will not be saved: {e}");
            }
        }
    }
    Ok(Setup { runtime, agent })
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

/// Ctrl-C: the first press cancels the running turn (tools get the cancellation), a second
/// press — or one while no turn runs — exits.
#[derive(Clone, Default)]
struct Interrupts(Arc<Mutex<Option<CancellationToken>>>);

impl Interrupts {
    fn listen(&self) {
        let running = self.clone();
        tokio::spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                let current = running
                    .0
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone();
                match current {
                    Some(token) if !token.is_cancelled() => {
                        eprintln!("\n[cancelling… press Ctrl-C again to quit]");
                        token.cancel();
                    }
                    _ => {
                        eprintln!();
                        std::process::exit(i32::from(EXIT_CANCELLED));
                    }
                }
            }
        });
    }

    fn start_turn(&self) -> CancellationToken {
        let token = CancellationToken::new();
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(token.clone());
        token
    }

    fn end_turn(&self) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

/// `toolgate run`.
pub fn run(config: Config, args: RunArgs) -> ExitCode {
    let tokio = match async_runtime() {
        Ok(t) => t,
        Err(code) => return code,
    };
    let code = tokio.block_on(async move {
        let Setup { runtime, mut agent } = match setup(config, &args.agent) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("toolgate: {e}");
                return ExitCode::from(crate::USAGE_ERROR);
            }
        };
        let terminal = Terminal::new(!args.json && std::io::stderr().is_terminal());
        if !args.json && std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
            agent
                .session()
                .get::<SessionApprover>()
                .set(Arc::new(TtyApprover::new(terminal.clone(), Input::stdin())));
        }
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
        let Setup { runtime, mut agent } = match setup(config, &args.agent) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("toolgate: {e}");
                return ExitCode::from(crate::USAGE_ERROR);
            }
        };
        let tty = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
        let terminal = Terminal::new(std::io::stderr().is_terminal());
        let input = Input::stdin();
        if tty {
            agent
                .session()
                .get::<SessionApprover>()
                .set(Arc::new(TtyApprover::new(terminal.clone(), input.clone())));
        }
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

/// `/NAME [ARGUMENTS]` runs the user-invocable skill NAME (what an MCP client gets as the
/// prompt of the same name); any other task is taken as written.
fn expand_skill(runtime: &Runtime, task: &str) -> Result<String, String> {
    let Some(rest) = task.strip_prefix('/') else {
        return Ok(task.to_owned());
    };
    let (name, arguments) = match rest.split_once(char::is_whitespace) {
        Some((name, arguments)) => (name, Some(arguments)),
        None => (rest, None),
    };
    // `/etc/hosts is …` is a task, not a skill: skill names are `[a-z0-9-]`.
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Ok(task.to_owned());
    }
    let catalog = runtime.skills.catalog();
    let Some(skill) = catalog.get(name).filter(|s| s.user_invocable) else {
        return Err(format!(
            "no user-invocable skill `{}`; {}",
            name.chars().take(100).collect::<String>(),
            user_skills(runtime)
        ));
    };
    let loaded = toolgate_skills::load_skill(skill)
        .map_err(|reason| format!("skill `{name}` ({}): {reason}", skill.file.display()))?;
    Ok(loaded.text(arguments, &|path| runtime.roots.display(path)))
}

/// One line naming the user-invocable skills.
fn user_skills(runtime: &Runtime) -> String {
    let catalog = runtime.skills.catalog();
    let names: Vec<String> = catalog
        .user_visible()
        .map(|s| format!("/{}", s.name))
        .collect();
    if names.is_empty() {
        "there are no user-invocable skills (`toolgate skills list` shows what was found)"
            .to_owned()
    } else {
        format!("user-invocable skills: {}", names.join(", "))
    }
}

/// The lines typed on stdin, read by one thread for the whole process. The REPL and the
/// approval question take turns on it, and a question dropped by Ctrl-C takes no line: a
/// `read_line` of its own would stay blocked after the cancel and swallow the next task.
/// The thread starts at the first read, so a `run` that asks nothing leaves what is typed
/// meanwhile to the shell.
#[derive(Clone)]
struct Input {
    lines: Arc<tokio::sync::Mutex<tokio::sync::mpsc::Receiver<String>>>,
    /// The reader's end until it is started.
    unstarted: Arc<Mutex<Option<tokio::sync::mpsc::Sender<String>>>>,
}

impl Input {
    /// Lines from stdin.
    fn stdin() -> Self {
        let (sender, lines) = tokio::sync::mpsc::channel(1);
        Self {
            lines: Arc::new(tokio::sync::Mutex::new(lines)),
            unstarted: Arc::new(Mutex::new(Some(sender))),
        }
    }

    /// The next line, `None` at the end of input (Ctrl-D).
    async fn line(&self) -> Option<String> {
        let unstarted = self
            .unstarted
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(sender) = unstarted {
            Self::read_stdin(sender);
        }
        self.lines.lock().await.recv().await
    }

    fn read_stdin(lines: tokio::sync::mpsc::Sender<String>) {
        let reader = std::thread::Builder::new()
            .name("stdin".to_owned())
            .spawn(move || {
                let stdin = std::io::stdin();
                loop {
                    let mut line = String::new();
                    match stdin.lock().read_line(&mut line) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {
                            if lines.blocking_send(line).is_err() {
                                break;
                            }
                        }
                    }
                }
            });
        if let Err(e) = reader {
            // The sender went with the closure: the input reads as ended.
            eprintln!("toolgate: cannot read the terminal: {e}");
        }
    }
}

impl From<tokio::sync::mpsc::Receiver<String>> for Input {
    /// Lines from `lines` (tests).
    fn from(lines: tokio::sync::mpsc::Receiver<String>) -> Self {
        Self {
            lines: Arc::new(tokio::sync::Mutex::new(lines)),
            unstarted: Arc::default(),
        }
    }
}

/// Spinner frames.
const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

#[derive(Default)]
struct Screen {
    /// The spinner's message while it spins.
    spinning: Option<String>,
    frame: usize,
    /// Whether answer text was printed without a newline after it.
    open_text: bool,
    /// Whether the spinner line is drawn.
    drawn: bool,
    /// Whether an approval prompt owns the terminal.
    paused: bool,
}

/// Live output: answer text on stdout as it streams, a spinner while waiting, one line per
/// tool call on stderr. Without a terminal on stderr there is no spinner.
#[derive(Clone)]
struct Terminal {
    screen: Arc<Mutex<Screen>>,
    spinner: bool,
}

impl Terminal {
    fn new(spinner: bool) -> Self {
        let terminal = Self {
            screen: Arc::new(Mutex::new(Screen::default())),
            spinner,
        };
        if spinner {
            let screen = Arc::clone(&terminal.screen);
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    let mut s = screen.lock().unwrap_or_else(PoisonError::into_inner);
                    if s.paused {
                        continue;
                    }
                    if let Some(message) = s.spinning.clone() {
                        s.frame = (s.frame + 1) % FRAMES.len();
                        eprint!("\r\x1b[2K{} {message}", FRAMES[s.frame]);
                        s.drawn = true;
                    }
                }
            });
        }
        terminal
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Screen> {
        self.screen.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn clear(screen: &mut Screen) {
        if screen.drawn {
            eprint!("\r\x1b[2K");
            screen.drawn = false;
        }
    }

    /// Holds the spinner off while a question owns the terminal, until the guard is
    /// dropped — also when the question is dropped unanswered (Ctrl-C).
    fn pause(&self) -> Paused {
        let mut s = self.lock();
        s.paused = true;
        Self::clear(&mut s);
        Paused(self.clone())
    }

    fn spin(&self, message: String) {
        if self.spinner {
            self.lock().spinning = Some(message);
        }
    }

    fn show(&self, progress: Progress) {
        let mut s = self.lock();
        match progress {
            Progress::Waiting => {
                drop(s);
                self.spin("thinking…".to_owned());
            }
            Progress::Text(text) => {
                s.spinning = None;
                Self::clear(&mut s);
                out!("{text}");
                let _ = std::io::stdout().flush();
                s.open_text = !text.ends_with('\n');
            }
            Progress::ToolCallStarted(name) => {
                drop(s);
                self.spin(format!("preparing {name}…"));
            }
            Progress::AnswerDone => {
                s.spinning = None;
                Self::clear(&mut s);
                if s.open_text {
                    outln!();
                    s.open_text = false;
                }
            }
            Progress::ToolsRunning(names) => {
                let unique: BTreeSet<String> = names.into_iter().collect();
                let list: Vec<String> = unique.into_iter().collect();
                drop(s);
                self.spin(format!("running {}…", list.join(", ")));
            }
            Progress::ToolDone(record) => {
                Self::clear(&mut s);
                eprintln!("{}", tool_line(&record));
            }
            Progress::Retrying {
                attempt,
                wait,
                reason,
            } => {
                Self::clear(&mut s);
                eprintln!(
                    "  ↻ request {attempt} failed ({reason}); retrying in {:.1} s",
                    wait.as_secs_f64()
                );
            }
            Progress::Compacted {
                before,
                after,
                deleted,
            } => {
                Self::clear(&mut s);
                eprintln!(
                    "  ⤵ compacted the conversation: {before} → {after} messages, {deleted} unreferenced spill files deleted"
                );
            }
        }
    }

    fn finish_text(&self) {
        let mut s = self.lock();
        s.spinning = None;
        Self::clear(&mut s);
        if s.open_text {
            outln!();
            s.open_text = false;
        }
    }
}

/// See [`Terminal::pause`].
struct Paused(Terminal);

impl Drop for Paused {
    fn drop(&mut self) {
        self.0.lock().paused = false;
    }
}

/// `  ⏺ read_file {"path":"README.md"} · 12 ms`, with the outcome when it is news.
fn tool_line(record: &CallRecord) -> String {
    let args = record.arguments.to_string();
    let args: String = if args.chars().count() > 100 {
        args.chars().take(99).collect::<String>() + "…"
    } else {
        args
    };
    let mut line = format!(
        "  ⏺ {} {args} · {}",
        record.name,
        human_ms(record.duration_ms)
    );
    if record.is_error {
        line.push_str(" · error");
    }
    if record.spilled {
        line.push_str(" · output saved to a file");
    }
    line
}

fn human_ms(ms: u64) -> String {
    if ms < 1_000 {
        format!("{ms} ms")
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

/// Answers `ask` rules on the terminal: yes, no, or always (this tool, this session).
struct TtyApprover {
    terminal: Terminal,
    input: Input,
    always: Arc<Mutex<BTreeSet<String>>>,
    /// One question at a time, however many calls of a turn ask.
    one_at_a_time: Arc<tokio::sync::Mutex<()>>,
}

impl TtyApprover {
    fn new(terminal: Terminal, input: Input) -> Self {
        Self {
            terminal,
            input,
            always: Arc::default(),
            one_at_a_time: Arc::default(),
        }
    }
}

impl Approver for TtyApprover {
    fn approve(&self, request: ApprovalRequest) -> BoxFuture<'static, bool> {
        let terminal = self.terminal.clone();
        let input = self.input.clone();
        let always = Arc::clone(&self.always);
        let gate = Arc::clone(&self.one_at_a_time);
        Box::pin(async move {
            let _turn = gate.lock().await;
            if always
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .contains(&request.tool)
            {
                return true;
            }
            let _paused = terminal.pause();
            let args = request.args.to_string();
            let args: String = args.chars().take(300).collect();
            eprint!(
                "  ? allow {} {args} ({}, by the rule {})? [y]es / [n]o / [a]lways this session: ",
                request.tool, request.action, request.rule
            );
            let _ = std::io::stderr().flush();
            // End of input answers no.
            let answer = input.line().await.unwrap_or_default();
            match answer.trim().to_lowercase().as_str() {
                "y" | "yes" => true,
                "a" | "always" => {
                    always
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(request.tool.clone());
                    true
                }
                _ => false,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> ApprovalRequest {
        ApprovalRequest {
            tool: "run_shell".to_owned(),
            action: "shell.run".to_owned(),
            rule: "ask = [\"run_shell\"]".to_owned(),
            args: json!({"command": "true"}),
        }
    }

    #[tokio::test]
    async fn a_question_dropped_unanswered_takes_no_line_and_gives_back_the_spinner() {
        let terminal = Terminal::new(false);
        let (typed, lines) = tokio::sync::mpsc::channel(4);
        let input = Input::from(lines);
        let approver = TtyApprover::new(terminal.clone(), input.clone());
        let mut question = approver.approve(request());
        assert!(
            futures::poll!(&mut question).is_pending(),
            "it waits for a line"
        );
        assert!(terminal.lock().paused, "no spinner over the question");
        // Ctrl-C: the dispatcher drops the question.
        drop(question);
        assert!(!terminal.lock().paused, "the spinner may draw again");
        typed.send("next task\n".to_owned()).await.unwrap();
        assert_eq!(input.line().await.as_deref(), Some("next task\n"));
    }

    #[tokio::test]
    async fn always_approves_the_tool_for_the_rest_of_the_session_and_end_of_input_is_no() {
        let (typed, lines) = tokio::sync::mpsc::channel(4);
        let approver = TtyApprover::new(Terminal::new(false), Input::from(lines));
        typed.send("n\n".to_owned()).await.unwrap();
        assert!(!approver.approve(request()).await);
        typed.send("always\n".to_owned()).await.unwrap();
        assert!(approver.approve(request()).await);
        assert!(
            approver.approve(request()).await,
            "not asked: no line needed"
        );
        let other = ApprovalRequest {
            tool: "write_file".to_owned(),
            ..request()
        };
        drop(typed);
        assert!(!approver.approve(other).await, "end of input answers no");
    }
}
