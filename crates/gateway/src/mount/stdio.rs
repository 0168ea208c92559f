//! Starting a stdio server and opening it: with `lifecycle = "discover"`, `server/discover`
//! first, bounded, then `initialize` on the same process when the server answers an error or
//! nothing (see `crate::lifecycle`); a server the probe left unusable (it exited or closed
//! stdout on it, or refused `initialize` after it) is started once more and opened with
//! `initialize`. Otherwise (the default over stdio) `initialize` only.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::transport::async_rw::AsyncRwTransport;

use super::{Handshaken, Mount, lock, secs};
use crate::config::{Opening, Transport};
use crate::connect::{ChildGuard, Diagnostics, spawn_stdio};
use crate::failure::Failure;
use crate::handler::Handler;
use crate::lifecycle::{Lifecycle, Probe, Probing};
use crate::limits::GatewayLimits;

/// How to open a started stdio server.
#[derive(Debug, Clone, Copy)]
enum Attempt {
    /// `server/discover` waiting at most this long, then `initialize` on the same process.
    Probe(Duration),
    /// `initialize` only.
    Initialize,
}

/// How opening a stdio server failed.
enum StdioEnd {
    Failed(Failure),
    /// The probe left the server unusable: it exited or closed stdout on `server/discover`,
    /// or it refused `initialize` after a probe it did not answer in time (a server of both
    /// revisions that was slow to start: having answered the probe late, it serves
    /// 2026-07-28 only). Why, for the log.
    EndedOnProbe(String),
}

impl StdioEnd {
    fn into_failure(self) -> Failure {
        match self {
            Self::Failed(failure) => failure,
            Self::EndedOnProbe(how) => format!("exited during startup ({how})").into(),
        }
    }
}

impl Mount {
    /// Starts the stdio server and opens it within its startup timeout: with `discover`, the
    /// probe first (bounded by `discover_wait`, at most a quarter of the timeout, so a server that
    /// ignores it leaves most of the time for `initialize`); a server that ended on the
    /// probe is started once more and opened with `initialize`. `diag` is replaced by the
    /// second process's. On failure nothing is left running.
    pub(super) async fn start_stdio(
        &self,
        handler: &Handler,
        diag: &mut Arc<Diagnostics>,
        stage: &Mutex<&'static str>,
        limits: &GatewayLimits,
    ) -> Result<(Handshaken, Option<ChildGuard>), Failure> {
        let deadline = tokio::time::Instant::now() + self.spec.startup_timeout;
        if self.spec.opening == Opening::Initialize {
            let opened = self
                .open_stdio(handler, diag, stage, limits, Attempt::Initialize, deadline)
                .await;
            return opened.map_err(StdioEnd::into_failure);
        }
        let wait = limits.discover_wait.min(self.spec.startup_timeout / 4);
        let how = match self
            .open_stdio(handler, diag, stage, limits, Attempt::Probe(wait), deadline)
            .await
        {
            Ok(opened) => return Ok(opened),
            Err(StdioEnd::Failed(failure)) => return Err(failure),
            Err(StdioEnd::EndedOnProbe(how)) => how,
        };
        tracing::info!(server = %self.spec.name, %how, "server/discover left the server unusable; starting it again with initialize");
        // What the first process said is not why the second one fails.
        *diag = Arc::new(Diagnostics::default());
        self.open_stdio(handler, diag, stage, limits, Attempt::Initialize, deadline)
            .await
            .map_err(StdioEnd::into_failure)
    }

    /// Starts the stdio server and opens it as `attempt` says, by `deadline`. On failure
    /// nothing is left running.
    async fn open_stdio(
        &self,
        handler: &Handler,
        diag: &Arc<Diagnostics>,
        stage: &Mutex<&'static str>,
        limits: &GatewayLimits,
        attempt: Attempt,
        deadline: tokio::time::Instant,
    ) -> Result<(Handshaken, Option<ChildGuard>), StdioEnd> {
        let Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } = &self.spec.transport
        else {
            return Err(StdioEnd::Failed("is not a stdio server".to_owned().into()));
        };
        let spawned = spawn_stdio(
            &self.spec.name,
            command,
            args,
            env,
            cwd,
            &limits.sandbox,
            diag,
        )
        .map_err(|e| StdioEnd::Failed(e.into()))?;
        let mut guard = spawned.guard;
        *lock(stage) = "initialize";
        let (result, probing) = match attempt {
            Attempt::Probe(wait) => {
                let transport = AsyncRwTransport::new_client(spawned.stdout, spawned.stdin);
                let (transport, probing) = Probe::new(transport, wait);
                let opened = self.handshake(handler, transport, stage, limits, Lifecycle::Discover);
                (
                    tokio::time::timeout_at(deadline, opened).await,
                    Some(probing),
                )
            }
            Attempt::Initialize => {
                let transport = (spawned.stdout, spawned.stdin);
                let opened =
                    self.handshake(handler, transport, stage, limits, Lifecycle::Initialize);
                (tokio::time::timeout_at(deadline, opened).await, None)
            }
        };
        let probing = probing.map(|p| p.get());
        // Until the probe is answered or given up on, the server is at `server/discover`.
        let at = match probing {
            Some(Probing::Waiting) => "server/discover",
            _ => *lock(stage),
        };
        match result {
            Ok(Ok(ok)) => Ok((ok, Some(guard))),
            Ok(Err(e)) => {
                let exit = guard.exited_within(Duration::from_millis(500)).await;
                guard.kill().await;
                match probing {
                    Some(Probing::Closed) => {
                        let how = exit.unwrap_or_else(|| "closed its stdout".to_owned());
                        return Err(StdioEnd::EndedOnProbe(format!("{how}{}", diag.describe())));
                    }
                    // Its exit says little: it ends when the failed handshake closes stdin.
                    Some(Probing::Unanswered) => {
                        return Err(StdioEnd::EndedOnProbe(format!(
                            "left server/discover unanswered, then {}{}",
                            e.reason(),
                            diag.describe()
                        )));
                    }
                    _ => {}
                }
                Err(StdioEnd::Failed(
                    match exit {
                        Some(how) => format!(
                            "exited during startup ({how}) before answering `{at}`{}",
                            diag.describe()
                        ),
                        None => format!("{}{}", e.reason(), diag.describe()),
                    }
                    .into(),
                ))
            }
            Err(_) => {
                guard.kill().await;
                Err(StdioEnd::Failed(
                    format!(
                        "did not finish `{at}` within {} (startup_timeout_sec) and was stopped{}",
                        secs(self.spec.startup_timeout),
                        diag.describe()
                    )
                    .into(),
                ))
            }
        }
    }
}
