//! The agent commands on a terminal: the lines typed on stdin, the spinner and streamed
//! text, one line per tool call, and Ctrl-C.

use std::collections::BTreeSet;
use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use toolgate_agent::{CallRecord, Progress};

use super::EXIT_CANCELLED;

/// The lines typed on stdin, read by one thread for the whole process. The REPL and the
/// approval question take turns on it, and a question dropped by Ctrl-C takes no line: a
/// `read_line` of its own would stay blocked after the cancel and swallow the next task.
/// The thread starts at the first read, so a `run` that asks nothing leaves what is typed
/// meanwhile to the shell.
#[derive(Clone)]
pub(super) struct Input {
    lines: Arc<tokio::sync::Mutex<tokio::sync::mpsc::Receiver<String>>>,
    /// The reader's end until it is started.
    unstarted: Arc<Mutex<Option<tokio::sync::mpsc::Sender<String>>>>,
}

impl Input {
    /// Lines from stdin.
    pub(super) fn stdin() -> Self {
        let (sender, lines) = tokio::sync::mpsc::channel(1);
        Self {
            lines: Arc::new(tokio::sync::Mutex::new(lines)),
            unstarted: Arc::new(Mutex::new(Some(sender))),
        }
    }

    /// The next line, `None` at the end of input (Ctrl-D).
    pub(super) async fn line(&self) -> Option<String> {
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
pub(super) struct Screen {
    /// The spinner's message while it spins.
    spinning: Option<String>,
    frame: usize,
    /// Whether answer text was printed without a newline after it.
    open_text: bool,
    /// Whether the spinner line is drawn.
    drawn: bool,
    /// Whether an approval prompt owns the terminal.
    pub(super) paused: bool,
}

/// Live output: answer text on stdout as it streams, a spinner while waiting, one line per
/// tool call on stderr. Without a terminal on stderr there is no spinner.
#[derive(Clone)]
pub(super) struct Terminal {
    screen: Arc<Mutex<Screen>>,
    spinner: bool,
}

impl Terminal {
    pub(super) fn new(spinner: bool) -> Self {
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

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Screen> {
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
    pub(super) fn pause(&self) -> Paused {
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

    pub(super) fn show(&self, progress: Progress) {
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

    pub(super) fn finish_text(&self) {
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
pub(super) struct Paused(Terminal);

impl Drop for Paused {
    fn drop(&mut self) {
        self.0.lock().paused = false;
    }
}

/// `  ⏺ read_file {"path":"README.md"} · 12 ms`, with the outcome when it is news.
pub(super) fn tool_line(record: &CallRecord) -> String {
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

/// Ctrl-C: the first press cancels the running turn (tools get the cancellation), a second
/// press — or one while no turn runs — exits.
#[derive(Clone, Default)]
pub(super) struct Interrupts(Arc<Mutex<Option<CancellationToken>>>);

impl Interrupts {
    pub(super) fn listen(&self) {
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

    pub(super) fn start_turn(&self) -> CancellationToken {
        let token = CancellationToken::new();
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(token.clone());
        token
    }

    pub(super) fn end_turn(&self) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}
