//! How `serve` ends: a normal stop logs no error, while a process namespace that really
//! dies under it still does.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use crate::{project, toolgate};

/// Bounds a hang; every wait below ends on an event long before.
const WAIT: Duration = Duration::from_secs(60);

/// `toolgate serve` in a process group of its own, as a terminal or a client runs it, with
/// its stderr lines arriving on a channel.
struct Served {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
    _dir: tempfile::TempDir,
}

impl Served {
    fn start() -> Self {
        let dir = project();
        let mut child = toolgate(dir.path())
            .args(["serve", "--log-level", "info"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut served = Self {
            child,
            lines,
            seen: Vec::new(),
            _dir: dir,
        };
        let containment = served.wait_for_line("process containment: ");
        assert!(
            containment.contains("PID namespace"),
            "no PID namespace on this machine: {containment}"
        );
        served.wait_for_line("serving MCP on stdio");
        served
    }

    /// The next stderr line containing `text` (every line read is kept in `seen`).
    fn wait_for_line(&mut self, text: &str) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("no `{text}` on stderr ({e}): {:#?}", self.seen));
            self.seen.push(line.clone());
            if line.contains(text) {
                return line;
            }
        }
    }

    /// Waits for the exit and returns everything it printed on stderr.
    fn finish(mut self) -> Vec<String> {
        // The channel closes with stderr, at exit: an event, not a poll.
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.seen.push(line),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => panic!("serve did not exit: {:#?}", self.seen),
            }
        }
        self.child.wait().unwrap();
        self.seen
    }

    fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).unwrap()
    }
}

/// `kill -SIGNAL -- TARGET` (a negative target is a process group).
fn kill(signal: &str, target: i32) {
    let status = std::process::Command::new("kill")
        .args([&format!("-{signal}"), "--", &target.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -{signal} -- {target}");
}

fn errors(lines: &[String]) -> Vec<&String> {
    lines.iter().filter(|l| l.contains(" ERROR ")).collect()
}

#[test]
fn a_signal_to_the_process_group_stops_serve_without_an_error() {
    // Regression: every Ctrl-C (SIGINT to the terminal's process group) or client stopping
    // the server's group logged "the process namespace ended unexpectedly": the namespace's
    // keeper shared the group, died of the signal first, and its end was reported.
    for name in ["SIGINT", "SIGTERM", "SIGHUP"] {
        let served = Served::start();
        kill(name, -served.pid());
        let lines = served.finish();
        assert!(
            lines
                .iter()
                .any(|l| l.contains(&format!("stopping on {name}"))),
            "{name}: {lines:#?}"
        );
        assert_eq!(errors(&lines), Vec::<&String>::new(), "{name}");
    }
}

#[test]
fn stdin_closing_stops_serve_without_an_error() {
    let mut served = Served::start();
    drop(served.child.stdin.take());
    let lines = served.finish();
    assert_eq!(errors(&lines), Vec::<&String>::new(), "{lines:#?}");
}

/// The host pid of `serve`'s namespace keeper (a child of one of its threads).
fn keeper_of(pid: i32) -> i32 {
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        for child in children.split_ascii_whitespace() {
            let comm = std::fs::read_to_string(format!("/proc/{child}/comm")).unwrap_or_default();
            if comm.trim() == "toolgate-keeper" {
                return child.parse().unwrap();
            }
        }
    }
    panic!("serve ({pid}) has no toolgate-keeper child");
}

#[test]
fn a_namespace_that_really_dies_is_still_reported() {
    let mut served = Served::start();
    let keeper = keeper_of(served.pid());
    kill("SIGKILL", keeper);
    let line = served.wait_for_line("the process namespace ended unexpectedly");
    assert!(
        line.contains("ERROR") && line.contains("its keeper was killed by signal 9"),
        "{line}"
    );
    drop(served.child.stdin.take());
    served.finish();
}
