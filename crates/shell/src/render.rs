//! The words of shell results: status lines, durations, signal names, notes.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;

use crate::capture::Captured;
use crate::clean::group;
use crate::process::Teardown;
use crate::run::{Ending, Finished, StopReason};

/// Where a command or job stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    /// Still running (background jobs).
    Running,
    /// Exited by itself; see `exit_code`.
    Exited,
    /// Died of a signal or was stopped (job_kill, cancellation, output limit, session end).
    Killed,
    /// Its timeout passed and its process group was stopped.
    TimedOut,
}

/// Status, exit code and signal name of an ending.
pub(crate) fn status_of(ending: Ending) -> (JobStatus, Option<i32>, Option<String>) {
    match ending {
        Ending::Exited(code) => (JobStatus::Exited, Some(code), None),
        Ending::Signaled(sig) => (JobStatus::Killed, None, Some(signal_name(sig))),
        Ending::TimedOut => (JobStatus::TimedOut, None, None),
        Ending::Stopped(_) => (JobStatus::Killed, None, None),
    }
}

/// `SIGTERM` for 15, and so on.
pub(crate) fn signal_name(sig: i32) -> String {
    let name = match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        10 => "SIGUSR1",
        11 => "SIGSEGV",
        12 => "SIGUSR2",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        24 => "SIGXCPU",
        25 => "SIGXFSZ",
        _ => return format!("signal {sig}"),
    };
    name.to_owned()
}

/// `0.31 s`, `12.4 s`, `3 min 20 s`.
pub(crate) fn human(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs < 10.0 {
        format!("{secs:.2} s")
    } else if secs < 60.0 {
        format!("{secs:.1} s")
    } else if d.as_secs().is_multiple_of(60) {
        format!("{} min", d.as_secs() / 60)
    } else {
        format!("{} min {} s", d.as_secs() / 60, d.as_secs() % 60)
    }
}

/// `4 GiB`, `512 MiB`, `64 KiB`, `100 bytes`.
pub(crate) fn human_bytes(n: u64) -> String {
    const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (unit, size) in UNITS {
        if n >= size && n.is_multiple_of(size) {
            return format!("{} {unit}", n / size);
        }
    }
    format!("{} bytes", group(n))
}

/// How the group was brought down, for the status line.
fn teardown_words(teardown: Option<Teardown>, grace: Duration) -> String {
    match teardown {
        Some(Teardown::Killed) => format!(
            "its process group was stopped (SIGTERM, then SIGKILL after the {} grace)",
            human(grace)
        ),
        Some(Teardown::Terminated) => "its process group was stopped with SIGTERM".to_owned(),
        Some(Teardown::AlreadyGone) | None => "its process group was stopped".to_owned(),
    }
}

/// A foreground command's time limit: the `timeout_ms` it was given (after the maximum)
/// and what was left of it when the command started (the call's deadline also counts the
/// time spent waiting for this session's earlier calls).
#[derive(Debug, Clone, Copy)]
pub(crate) struct TimeLimit {
    pub given_ms: u64,
    pub applied: Duration,
}

/// Waits shorter than this are dispatch overhead (a loaded machine included), not worth a
/// clause.
const NOTABLE_WAIT: Duration = Duration::from_millis(100);

/// The first line of a `run_shell` result.
pub(crate) fn status_line(
    finished: &Finished,
    limit: TimeLimit,
    grace: Duration,
    max_stream: u64,
) -> String {
    let took = human(finished.elapsed);
    let down = teardown_words(finished.teardown, grace);
    match finished.ending {
        Ending::Exited(0) => format!("exit code 0 · {took}"),
        Ending::Exited(code) => format!("command failed: exit code {code} · {took}"),
        Ending::Signaled(sig) => {
            format!("command failed: killed by {} · {took}", signal_name(sig))
        }
        Ending::TimedOut => {
            // The number the caller gave, never the milliseconds left of it (which read as
            // "timeout_ms 999" for 1000).
            let waited = Duration::from_millis(limit.given_ms).saturating_sub(limit.applied);
            let waited = if waited >= NOTABLE_WAIT {
                format!(", {} of it spent waiting for earlier calls", human(waited))
            } else {
                String::new()
            };
            format!(
                "command failed (timeout): still running after {} (timeout_ms {}{waited}); {down}. The output so far is below. Raise timeout_ms or start it with background: true",
                human(limit.applied),
                limit.given_ms
            )
        }
        Ending::Stopped(reason) => {
            format!("{} after {took}; {down}", stopped_words(reason, max_stream))
        }
    }
}

/// Why a command was stopped, as a clause.
pub(crate) fn stopped_words(reason: StopReason, max_stream: u64) -> String {
    match reason {
        StopReason::Cancelled => "command cancelled".to_owned(),
        StopReason::JobKill => "killed by job_kill".to_owned(),
        StopReason::SessionEnded => "stopped because the session ended".to_owned(),
        StopReason::OutputLimit(stream) => format!(
            "command failed: its {stream} passed the {} output limit",
            human_bytes(max_stream)
        ),
    }
}

/// Notes about things that went wrong beside the command itself.
pub(crate) fn notes(finished: &Finished) -> Vec<String> {
    let mut notes = Vec::new();
    if finished.leftovers > 0 {
        let n = finished.leftovers;
        notes.push(format!(
            "note: {n} process{} it left running in its process group {} stopped; start servers and watchers with background: true",
            if n == 1 { "" } else { "es" },
            if n == 1 { "was" } else { "were" },
        ));
    }
    for (name, c) in [("stdout", &finished.stdout), ("stderr", &finished.stderr)] {
        notes.extend(stream_notes(name, c));
    }
    notes
}

fn stream_notes(name: &str, c: &Captured) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(e) = &c.error {
        notes.push(format!(
            "note: the full {name} could not be saved ({e}); only the excerpt below is left"
        ));
    }
    if c.abandoned {
        notes.push(format!(
            "note: {name} was still held open by a process outside the command's process group (e.g. started with setsid); reading stopped"
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words() {
        assert_eq!(human(Duration::from_millis(310)), "0.31 s");
        assert_eq!(human(Duration::from_millis(12_440)), "12.4 s");
        assert_eq!(human(Duration::from_secs(200)), "3 min 20 s");
        assert_eq!(human(Duration::from_secs(600)), "10 min");
        assert_eq!(human_bytes(4 << 30), "4 GiB");
        assert_eq!(human_bytes(1500), "1,500 bytes");
        assert_eq!(signal_name(9), "SIGKILL");
        assert_eq!(signal_name(63), "signal 63");
    }

    fn timed_out() -> Finished {
        Finished {
            ending: Ending::TimedOut,
            elapsed: Duration::from_millis(1_001),
            stdout: Default::default(),
            stderr: Default::default(),
            teardown: None,
            leftovers: 0,
        }
    }

    #[test]
    fn a_timeout_is_the_number_given_not_the_milliseconds_left_of_it() {
        // Regression: timeout_ms 1000 read "timeout_ms 999" (the deadline had started a
        // moment before the command).
        let limit = TimeLimit {
            given_ms: 1_000,
            applied: Duration::from_micros(999_400),
        };
        let line = status_line(&timed_out(), limit, Duration::from_secs(1), 1 << 20);
        assert!(
            line.starts_with(
                "command failed (timeout): still running after 1.00 s (timeout_ms 1000); "
            ),
            "{line}"
        );
        // Time spent behind earlier calls of the session is said, not hidden.
        let limit = TimeLimit {
            given_ms: 3_000,
            applied: Duration::from_millis(1_800),
        };
        let line = status_line(&timed_out(), limit, Duration::from_secs(1), 1 << 20);
        assert!(
            line.contains(
                "still running after 1.80 s (timeout_ms 3000, 1.20 s of it spent waiting for earlier calls); "
            ),
            "{line}"
        );
    }
}
