//! `toolgate chat` (and `run`) on a real terminal: the binary in a pseudo-terminal (rexpect starts it as
//! a terminal does: its own session, the pty as controlling terminal, echo off), against a
//! scripted model over real HTTP. Keys are bytes: Ctrl-C is `\x03` (the line discipline
//! turns it into SIGINT), Ctrl-D `\x04` (end of input on an empty line).

use std::io::{Read, Write};
use std::path::Path;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use rexpect::process::{PtyProcess, WaitStatus};
use serde_json::{Value, json};
use toolgate_providers::Kind;
use toolgate_providers::fake::{FakeServer, Reply, Step, step};

use crate::agent::provider_flags;
use crate::{project, toolgate};

/// Longest wait for expected output: a guard against a hang, not a speed goal.
const PATIENCE: Duration = Duration::from_secs(60);

fn check(f: impl FnOnce(&Value) -> Reply + Send + 'static) -> Step {
    Box::new(f)
}

/// toolgate on a pseudo-terminal: what it shows, read as the user sees it (escape sequences
/// removed), and keys to type. Only rexpect's process is used: its session reader turns each
/// byte into a char, which garbles `⏺`, `·` and `›`.
struct Tty {
    process: PtyProcess,
    /// The pty's master side as rexpect hands it over (it has no path for fs-err to name).
    #[allow(clippy::disallowed_types)]
    keys: std::fs::File,
    bytes: Receiver<Vec<u8>>,
    /// Output not consumed by an `expect` yet, escape sequences removed.
    pending: Vec<u8>,
    in_escape: bool,
    closed: bool,
}

impl Tty {
    fn chat(dir: &Path, fake: &FakeServer) -> Self {
        Self::start(dir, fake, &["chat"])
    }

    /// `toolgate COMMAND…` with the fake as its provider.
    fn start(dir: &Path, fake: &FakeServer, command: &[&str]) -> Self {
        let mut cmd = toolgate(dir);
        cmd.args(command)
            .args(provider_flags(Kind::OpenAi, fake))
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY");
        Self::run(cmd)
    }

    /// `cmd` (a toolgate command) on the terminal.
    fn run(mut cmd: std::process::Command) -> Self {
        cmd.env("TERM", "xterm-256color");
        let mut process = PtyProcess::new(cmd).unwrap();
        // Dropping the Tty kills toolgate; never wait for that forever.
        process.set_kill_timeout(Some(5_000));
        let mut screen = process.get_file_handle().unwrap();
        let keys = process.get_file_handle().unwrap();
        let (tx, bytes) = channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            // EIO once toolgate has exited and the terminal is closed.
            while let Ok(n @ 1..) = screen.read(&mut buf) {
                if tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        Self {
            process,
            keys,
            bytes,
            pending: Vec::new(),
            in_escape: false,
            closed: false,
        }
    }

    /// Appends `chunk` without its CSI escape sequences (the spinner's line clearing).
    fn take(&mut self, chunk: &[u8]) {
        for &b in chunk {
            if self.in_escape {
                if b.is_ascii_alphabetic() {
                    self.in_escape = false;
                }
            } else if b == 0x1b {
                self.in_escape = true;
            } else {
                self.pending.push(b);
            }
        }
    }

    fn shown(&self) -> String {
        String::from_utf8_lossy(&self.pending).into_owned()
    }

    /// Waits until `needle` is shown; returns what was shown before it.
    fn expect(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(at) = self
                .pending
                .windows(needle.len())
                .position(|w| w == needle.as_bytes())
            {
                let before: Vec<u8> = self.pending.drain(..at + needle.len()).collect();
                return String::from_utf8_lossy(&before[..at]).into_owned();
            }
            assert!(
                !self.closed,
                "expected {needle:?}, but toolgate closed the terminal after showing:\n{}",
                self.shown()
            );
            let left = deadline.saturating_duration_since(Instant::now());
            match self.bytes.recv_timeout(left) {
                Ok(chunk) => self.take(&chunk),
                Err(RecvTimeoutError::Disconnected) => self.closed = true,
                Err(RecvTimeoutError::Timeout) => panic!(
                    "expected {needle:?} within {PATIENCE:?}; the terminal shows:\n{}",
                    self.shown()
                ),
            }
        }
    }

    /// Waits until toolgate closes the terminal; returns everything shown meanwhile.
    fn expect_end(&mut self) -> String {
        let deadline = Instant::now() + PATIENCE;
        while !self.closed {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.bytes.recv_timeout(left) {
                Ok(chunk) => self.take(&chunk),
                Err(RecvTimeoutError::Disconnected) => self.closed = true,
                Err(RecvTimeoutError::Timeout) => panic!(
                    "toolgate did not exit within {PATIENCE:?}; the terminal shows:\n{}",
                    self.shown()
                ),
            }
        }
        let rest = self.shown();
        self.pending.clear();
        rest
    }

    /// Types `keys`.
    fn send(&mut self, keys: &str) {
        self.keys.write_all(keys.as_bytes()).unwrap();
        self.keys.flush().unwrap();
    }

    /// The exit code, once the terminal is closed.
    fn exit_code(&mut self) -> i32 {
        match self.process.wait().unwrap() {
            WaitStatus::Exited(_, code) => code,
            other => panic!("toolgate did not exit normally: {other:?}"),
        }
    }
}

/// How many `sleep` processes run in `dir`.
fn sleeps_in(dir: &Path) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|p| {
            std::fs::read_to_string(p.path().join("comm")).is_ok_and(|c| c.trim() == "sleep")
                && std::fs::read_link(p.path().join("cwd")).is_ok_and(|cwd| cwd == dir)
        })
        .count()
}

/// The chat's prompt.
const PROMPT: &str = "› ";

/// Ctrl-D on the prompt ends the chat: returns the session id it printed.
fn quit(tty: &mut Tty) -> String {
    tty.send("\x04");
    let rest = tty.expect_end();
    assert_eq!(tty.exit_code(), 0, "{rest}");
    let line = rest
        .lines()
        .find(|l| l.starts_with("session "))
        .unwrap_or_else(|| panic!("no session line in {rest:?}"));
    let id = line
        .strip_prefix("session ")
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .to_owned();
    assert!(
        line.contains(&format!("continue with toolgate chat --resume {id}")),
        "{line}"
    );
    id
}

/// Runs `talk` on the chat off the async runtime, so the fake model keeps answering.
async fn on_a_terminal<T: Send + 'static>(
    dir: &Path,
    fake: &FakeServer,
    talk: impl FnOnce(&mut Tty) -> T + Send + 'static,
) -> T {
    talk_to(Tty::chat(dir, fake), talk).await
}

async fn talk_to<T: Send + 'static>(
    mut tty: Tty,
    talk: impl FnOnce(&mut Tty) -> T + Send + 'static,
) -> T {
    tokio::task::spawn_blocking(move || talk(&mut tty))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_on_a_terminal_shows_the_answer_and_one_line_per_tool_call_and_ctrl_d_quits() {
    let dir = project();
    let fake = FakeServer::start(
        Kind::OpenAi,
        vec![
            step(Reply::call("list_dir", json!({}))),
            step(Reply::text("There is a README and a src folder.")),
        ],
    )
    .await;
    let (id, tool_line) = on_a_terminal(dir.path(), &fake, |tty| {
        tty.expect("toolgate chat · openai · fake-model · session ");
        tty.expect(PROMPT);
        tty.send("what is here?\n");
        tty.expect("⏺ list_dir {} · ");
        let took = tty.expect("\r\n");
        tty.expect("There is a README and a src folder.\r\n");
        tty.expect("[2 requests · ");
        tty.expect(PROMPT);
        (quit(tty), took)
    })
    .await;
    // `12 ms`, or `1.2 s` on a slow day.
    let (number, unit) = tool_line.split_once(' ').unwrap();
    assert!(
        (unit == "ms" && number.parse::<u64>().is_ok())
            || (unit == "s" && number.parse::<f64>().is_ok()),
        "duration {tool_line:?}"
    );
    assert!(fake.requests().iter().all(|r| r.body["stream"] == true));
    assert_eq!(fake.remaining(), 0);
    assert!(
        crate::sessions_dir(dir.path())
            .join(format!("{id}.jsonl"))
            .is_file()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_ask_rule_prompts_n_denies_and_a_approves_the_rest_of_the_session() {
    let dir = project();
    let user_config = dir.path().join(".no-user-config/toolgate");
    std::fs::create_dir_all(&user_config).unwrap();
    std::fs::write(
        user_config.join("config.toml"),
        "[permissions]\nask = [\"run_shell\"]\n",
    )
    .unwrap();
    let shell = |command: &str| Reply::call("run_shell", json!({ "command": command }));
    let last_result = |body: &Value| -> String {
        let messages = body["messages"].as_array().unwrap();
        messages.last().unwrap()["content"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let fake = FakeServer::start(
        Kind::OpenAi,
        vec![
            step(shell("echo one > one.txt")),
            check(move |body| {
                let result = last_result(body);
                assert!(result.contains("the user declined `run_shell`"), "{result}");
                shell("echo two > two.txt")
            }),
            check(move |body| {
                let result = last_result(body);
                assert!(!result.starts_with("error"), "{result}");
                shell("echo three > three.txt")
            }),
            step(Reply::text("Wrote two and three.")),
            step(shell("echo four > four.txt")),
            step(Reply::text("Wrote four.")),
        ],
    )
    .await;
    on_a_terminal(dir.path(), &fake, |tty| {
        tty.expect(PROMPT);
        tty.send("write some files\n");
        tty.expect("? allow run_shell {\"command\":\"echo one > one.txt\"}");
        tty.expect("[y]es / [n]o / [a]lways this session: ");
        tty.send("n\n");
        let denied = tty.expect("\r\n");
        assert!(denied.ends_with(" · error"), "{denied:?}");
        tty.expect("? allow run_shell {\"command\":\"echo two > two.txt\"}");
        tty.expect("[y]es / [n]o / [a]lways this session: ");
        tty.send("a\n");
        let rest = tty.expect("Wrote two and three.");
        assert!(
            rest.contains("⏺ run_shell {\"command\":\"echo three > three.txt\"}"),
            "{rest}"
        );
        assert!(!rest.contains("? allow"), "asked again: {rest}");
        tty.expect(PROMPT);
        // A later task of the same session is not asked either.
        tty.send("and one more\n");
        let rest = tty.expect("Wrote four.");
        assert!(
            rest.contains("⏺ run_shell {\"command\":\"echo four > four.txt\"}"),
            "{rest}"
        );
        assert!(!rest.contains("? allow"), "asked again: {rest}");
        tty.expect(PROMPT);
        quit(tty);
    })
    .await;
    assert_eq!(fake.remaining(), 0);
    assert!(!dir.path().join("one.txt").exists(), "denied, not run");
    for approved in ["two.txt", "three.txt", "four.txt"] {
        assert!(
            dir.path().join(approved).is_file(),
            "{approved} was written"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_cancels_the_streaming_answer_or_the_running_tool_and_the_chat_goes_on() {
    let dir = project();
    let fake = FakeServer::start(
        Kind::OpenAi,
        vec![
            // Streams a few words, then never finishes.
            step(Reply::Stall {
                text: "Let me look".to_owned(),
            }),
            step(Reply::call(
                "run_shell",
                json!({"command": "touch started && exec sleep 600"}),
            )),
            check(|body| {
                let text = body["messages"].to_string();
                assert!(
                    text.contains("[the user interrupted this answer]"),
                    "{text}"
                );
                let messages = body["messages"].as_array().unwrap();
                let cancelled = messages
                    .iter()
                    .find(|m| m["role"] == "tool")
                    .unwrap_or_else(|| panic!("the cancelled call has its result: {text}"));
                assert!(
                    cancelled["content"].as_str().unwrap().contains("cancelled"),
                    "{cancelled}"
                );
                Reply::text("Still here.")
            }),
        ],
    )
    .await;
    let started = dir.path().join("started");
    let project_dir = dir.path().canonicalize().unwrap();
    on_a_terminal(dir.path(), &fake, move |tty| {
        // The answer shows while it is still streaming; Ctrl-C stops it.
        tty.expect(PROMPT);
        tty.send("first\n");
        tty.expect("Let me look");
        tty.send("\x03");
        tty.expect("[cancelling… press Ctrl-C again to quit]");
        tty.expect(PROMPT);

        // Ctrl-C while the command runs stops it and ends the turn.
        tty.send("second\n");
        let deadline = Instant::now() + PATIENCE;
        while !started.exists() || sleeps_in(&project_dir) == 0 {
            assert!(Instant::now() < deadline, "the command never started");
            std::thread::sleep(Duration::from_millis(20));
        }
        tty.send("\x03");
        tty.expect("[cancelling… press Ctrl-C again to quit]");
        tty.expect("⏺ run_shell {\"command\":\"touch started && exec sleep 600\"} · ");
        let line = tty.expect("\r\n");
        assert!(line.ends_with(" · error"), "{line:?}");
        // The command was stopped, not left behind.
        let deadline = Instant::now() + PATIENCE;
        while sleeps_in(&project_dir) > 0 {
            assert!(Instant::now() < deadline, "`sleep 600` outlived the cancel");
            std::thread::sleep(Duration::from_millis(20));
        }
        tty.expect(PROMPT);

        // The chat goes on.
        tty.send("third\n");
        tty.expect("Still here.");
        tty.expect(PROMPT);
        quit(tty);
    })
    .await;
    assert_eq!(fake.remaining(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_at_an_approval_prompt_cancels_the_turn_and_the_next_line_is_a_task() {
    let dir = project();
    let user_config = dir.path().join(".no-user-config/toolgate");
    std::fs::create_dir_all(&user_config).unwrap();
    std::fs::write(
        user_config.join("config.toml"),
        "[permissions]\nask = [\"run_shell\"]\n",
    )
    .unwrap();
    let fake = FakeServer::start(
        Kind::OpenAi,
        vec![
            step(Reply::call(
                "run_shell",
                json!({"command": "echo one > one.txt"}),
            )),
            check(|body| {
                let text = body["messages"].to_string();
                assert!(
                    text.contains("was cancelled while waiting for the user's approval"),
                    "{text}"
                );
                assert!(text.contains("never mind"), "{text}");
                Reply::text("Fine, nothing written.")
            }),
        ],
    )
    .await;
    on_a_terminal(dir.path(), &fake, |tty| {
        tty.expect(PROMPT);
        tty.send("write one\n");
        tty.expect("[y]es / [n]o / [a]lways this session: ");
        tty.send("\x03");
        tty.expect("[cancelling… press Ctrl-C again to quit]");
        tty.expect(PROMPT);
        // The next line is the next task, not a late answer to the cancelled question.
        tty.send("never mind\n");
        tty.expect("Fine, nothing written.");
        tty.expect(PROMPT);
        quit(tty);
    })
    .await;
    assert_eq!(fake.remaining(), 0);
    assert!(!dir.path().join("one.txt").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn run_on_a_terminal_asks_too_and_y_approves_one_call_only() {
    let dir = project();
    let user_config = dir.path().join(".no-user-config/toolgate");
    std::fs::create_dir_all(&user_config).unwrap();
    std::fs::write(
        user_config.join("config.toml"),
        "[permissions]\nask = [\"write_file\"]\n",
    )
    .unwrap();
    let write = |path: &str| Reply::call("write_file", json!({"path": path, "content": "x\n"}));
    let fake = FakeServer::start(
        Kind::OpenAi,
        vec![
            step(write("a.txt")),
            step(write("b.txt")),
            step(Reply::text("Wrote a.txt; b.txt was declined.")),
        ],
    )
    .await;
    let tty = Tty::start(dir.path(), &fake, &["run", "write two files"]);
    talk_to(tty, |tty| {
        tty.expect("? allow write_file {\"content\":\"x\\n\",\"path\":\"a.txt\"}");
        tty.expect("[y]es / [n]o / [a]lways this session: ");
        tty.send("y\n");
        // `yes` is for this call only: the next one is asked again.
        tty.expect("? allow write_file {\"content\":\"x\\n\",\"path\":\"b.txt\"}");
        tty.expect("[y]es / [n]o / [a]lways this session: ");
        tty.send("n\n");
        tty.expect("Wrote a.txt; b.txt was declined.");
        let rest = tty.expect_end();
        assert!(rest.contains("(continue with --resume "), "{rest}");
        assert_eq!(tty.exit_code(), 0, "{rest}");
    })
    .await;
    assert_eq!(fake.remaining(), 0);
    assert!(dir.path().join("a.txt").is_file());
    assert!(!dir.path().join("b.txt").exists());
}

/// Regression: a long `toolgate call` showed nothing until it ended. On a terminal it now
/// shows the tool's name and the time taken while it runs, and clears that line after.
#[test]
fn a_long_call_shows_that_it_runs_on_a_terminal_and_nothing_on_a_pipe() {
    let dir = project();
    let gate = dir.path().join("go");
    let args = json!({"command": format!(
        "while [ ! -e '{}' ]; do sleep 0.05; done; echo finished", gate.display())})
    .to_string();
    let mut cmd = toolgate(dir.path());
    cmd.args(["call", "run_shell", &args]);
    let mut tty = Tty::run(cmd);
    tty.expect("run_shell (");
    std::fs::write(&gate, "").unwrap();
    let shown = tty.expect_end();
    assert!(shown.contains("finished"), "{shown}");

    // On a pipe: the result only.
    let out = toolgate(dir.path())
        .args([
            "call",
            "run_shell",
            r#"{"command": "sleep 0.5; echo piped"}"#,
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("piped"));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}
