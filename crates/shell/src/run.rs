//! Running one command to its end: timeout, stop requests, reaping, and the whole process
//! group brought down whichever way it ends.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::capture::{Captured, Pump, PumpConfig, Sink, StreamProgress};
use crate::error::ShellError;
use crate::process::{ProcessGroup, Teardown, spawn};

/// Why a command was stopped before it exited by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopReason {
    /// The caller went away (cancelled call).
    Cancelled,
    /// `job_kill`.
    JobKill,
    /// The session that owns the job ended.
    SessionEnded,
    /// A stream passed `max_stream_bytes`.
    OutputLimit(&'static str),
}

/// A request to stop a command, first reason wins.
#[derive(Debug, Default)]
pub(crate) struct StopSignal {
    token: CancellationToken,
    reason: Mutex<Option<StopReason>>,
}

impl StopSignal {
    /// A signal that also fires when `parent` is cancelled (reason: cancelled).
    pub fn child_of(parent: &CancellationToken) -> Self {
        Self {
            token: parent.child_token(),
            reason: Mutex::new(None),
        }
    }

    /// Asks the command to stop.
    pub fn request(&self, reason: StopReason) {
        let mut slot = self.reason.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(reason);
        drop(slot);
        self.token.cancel();
    }

    fn reason(&self) -> StopReason {
        self.reason
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .unwrap_or(StopReason::Cancelled)
    }
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// It exited by itself with this code.
    Exited(i32),
    /// It died of a signal nobody here sent.
    Signaled(i32),
    /// Its timeout passed and the group was stopped.
    TimedOut,
    /// It was stopped for this reason.
    Stopped(StopReason),
}

impl Ending {
    /// Whether this counts as a failure (non-zero, signal, timeout, stopped).
    pub fn failed(self) -> bool {
        self != Self::Exited(0)
    }
}

/// A command after it ended.
#[derive(Debug)]
pub(crate) struct Finished {
    pub ending: Ending,
    pub elapsed: Duration,
    pub stdout: Captured,
    pub stderr: Captured,
    /// How the group was brought down, when it had to be.
    pub teardown: Option<Teardown>,
    /// Processes still running in the group after the shell exited, which were stopped.
    pub leftovers: usize,
}

/// What a run needs besides the command.
pub(crate) struct RunConfig {
    pub timeout: Duration,
    pub kill_grace: Duration,
    pub sandbox: Arc<crate::Sandbox>,
    pub pump: PumpConfig,
}

/// A started command.
pub(crate) struct Running {
    child: crate::process::Leader,
    group: Arc<ProcessGroup>,
    stdout: Pump,
    stderr: Pump,
    started: Instant,
    stop: Arc<StopSignal>,
    config: RunConfig,
}

/// After the shell exits, how long its pipes may stay open before the rest of the group is
/// looked at; and after the group is gone, how long to wait for the last bytes.
const DRAIN: Duration = Duration::from_millis(100);
const LAST_BYTES: Duration = Duration::from_millis(500);

impl Running {
    /// Starts `command` in `cwd`; its streams go to `sinks` (stdout, stderr).
    pub fn start(
        command: &str,
        cwd: &Path,
        sinks: [(Sink, Arc<StreamProgress>); 2],
        config: RunConfig,
        stop: Arc<StopSignal>,
    ) -> Result<Self, ShellError> {
        let spawned = spawn(command, cwd, &config.sandbox)?;
        let [(out_sink, out_progress), (err_sink, err_progress)] = sinks;
        let limit = |name: &'static str| -> Box<dyn Fn() + Send> {
            let stop = Arc::clone(&stop);
            Box::new(move || stop.request(StopReason::OutputLimit(name)))
        };
        let stdout = Pump::start(
            spawned.stdout,
            out_sink,
            config.pump,
            out_progress,
            limit("stdout"),
        );
        let stderr = Pump::start(
            spawned.stderr,
            err_sink,
            config.pump,
            err_progress,
            limit("stderr"),
        );
        Ok(Self {
            child: spawned.child,
            group: Arc::new(spawned.group),
            stdout,
            stderr,
            started: Instant::now(),
            stop,
            config,
        })
    }

    /// The shell's pid as commands see it (`$$`): inside toolgate's PID namespace when
    /// there is one, else the process group id.
    pub fn shown_pid(&self) -> i32 {
        toolgate_contain::visible_pid(self.group.id())
    }

    /// The process group, for killing it from elsewhere (session end).
    pub fn group(&self) -> Arc<ProcessGroup> {
        Arc::clone(&self.group)
    }

    /// Runs the command to its end. Dropping this future SIGKILLs the group.
    pub async fn wait(mut self) -> Finished {
        let exited = tokio::select! {
            status = self.child.wait() => Some(status),
            () = tokio::time::sleep(self.config.timeout) => None,
            () = self.stop.token.cancelled() => None,
        };
        let mut teardown = None;
        let mut leftovers = 0;
        let ending = match exited {
            Some(status) => {
                let elapsed = self.started.elapsed();
                // The shell is gone; its pipes close unless something it started still
                // holds them. Whatever of the group is still running is stopped: nothing
                // outlives the command (servers belong in background jobs).
                let _ = tokio::time::timeout(DRAIN, self.pipes_closed()).await;
                leftovers = self.group.members().len();
                if leftovers > 0 {
                    teardown = Some(self.group.teardown(self.config.kill_grace).await);
                }
                let ending = match status {
                    Ok(s) => match (s.code(), s.signal()) {
                        (Some(code), _) => Ending::Exited(code),
                        (None, Some(sig)) => Ending::Signaled(sig),
                        (None, None) => Ending::Exited(-1),
                    },
                    Err(e) => {
                        tracing::warn!(%e, "waiting for a shell failed");
                        Ending::Exited(-1)
                    }
                };
                return self.collect(ending, elapsed, teardown, leftovers).await;
            }
            None if self.stop.token.is_cancelled() => Ending::Stopped(self.stop.reason()),
            None => Ending::TimedOut,
        };
        let elapsed = self.started.elapsed();
        teardown = Some(self.group.teardown(self.config.kill_grace).await);
        // Reap the shell (it is dead or dying by now).
        let _ = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
        self.collect(ending, elapsed, teardown, leftovers).await
    }

    async fn pipes_closed(&mut self) {
        tokio::join!(self.stdout.closed(), self.stderr.closed());
    }

    async fn collect(
        self,
        ending: Ending,
        elapsed: Duration,
        teardown: Option<Teardown>,
        leftovers: usize,
    ) -> Finished {
        let Self { stdout, stderr, .. } = self;
        let (stdout, stderr) = tokio::join!(stdout.finish(LAST_BYTES), stderr.finish(LAST_BYTES));
        Finished {
            ending,
            elapsed,
            stdout,
            stderr,
            teardown,
            leftovers,
        }
    }
}
