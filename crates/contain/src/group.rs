//! Stopping what toolgate started (nothing survives a timeout, a cancellation or toolgate's
//! exit): every contained command and stdio server leads its own process group
//! ([`contain`](crate::contain)), and [`ProcessGroup`] is the one place that group is
//! signalled, given its grace, SIGKILLed and waited for.
//!
//! Two front doors, one sequence (SIGTERM and SIGCONT, a grace, SIGKILL):
//! - [`ProcessGroup::teardown`] (`run_shell`, `job_kill`): the group is gone when no live
//!   member is left; its leader is reaped by whoever waits for the command.
//! - [`ProcessGroup::close`] (a mounted stdio server, as the MCP spec describes the end of a
//!   stdio session): the leader first gets a grace to exit on its own (its stdin is closed),
//!   the group is gone when the leader has exited, which reaps it, and whatever the leader
//!   left in the group is SIGKILLed.
//!
//! Dropping a group that may still have members SIGKILLs it, synchronously and without a
//! runtime: on a panic, an aborted task or a runtime shutdown.

use std::io;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rustix::process::Pid;
pub use rustix::process::Signal;
use tokio::process::Child;

/// How long after SIGKILL a stop waits for the kernel to tear the processes down.
const KILL_WAIT: Duration = Duration::from_secs(5);

/// A process group toolgate started: the leader's pid is the group id. Dropping it while it
/// may have members SIGKILLs the whole group, so a cancelled or dropped call leaves nothing
/// behind.
#[derive(Debug)]
pub struct ProcessGroup {
    pgid: Pid,
    /// Cleared once the group is known to be gone, so a recycled id is never signalled.
    armed: AtomicBool,
}

/// How a group was brought down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Teardown {
    /// Nothing was left to stop.
    AlreadyGone,
    /// SIGTERM was enough.
    Terminated,
    /// SIGKILL was needed after the grace.
    Killed,
}

/// What counts as the group being gone while it is stopped: with a leader, its exit (which
/// reaps it, and is kept); without, no live member left.
struct Gone<'a> {
    leader: Option<&'a mut Child>,
    exit: Option<io::Result<ExitStatus>>,
}

impl Gone<'_> {
    fn no_member() -> Self {
        Self {
            leader: None,
            exit: None,
        }
    }
}

impl ProcessGroup {
    /// The group `leader` leads (started with [`contain`](crate::contain), which gives every
    /// command its own group); `None` once the leader has been reaped.
    pub fn of(leader: &Child) -> Option<Self> {
        let pgid = leader
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .and_then(Pid::from_raw)?;
        Some(Self {
            pgid,
            armed: AtomicBool::new(true),
        })
    }

    /// The group a [`launch`](crate::launch)ed command leads (its pid is the group id).
    pub fn led_by(leader: &crate::Started) -> Option<Self> {
        Some(Self {
            pgid: Pid::from_raw(leader.id())?,
            armed: AtomicBool::new(true),
        })
    }

    /// The group id (the leader's pid).
    pub fn id(&self) -> i32 {
        self.pgid.as_raw_nonzero().get()
    }

    /// Sends `signal` to every process of the group; a group already gone is not an error.
    pub fn signal(&self, signal: Signal) {
        if !self.armed.load(Ordering::Acquire) {
            return;
        }
        match rustix::process::kill_process_group(self.pgid, signal) {
            Ok(()) => {}
            Err(rustix::io::Errno::SRCH) => self.disarm(),
            Err(e) => tracing::warn!(pgid = self.id(), %e, "could not signal a process group"),
        }
    }

    /// Live (non-zombie) members of the group.
    pub fn members(&self) -> Vec<i32> {
        if !self.armed.load(Ordering::Acquire) {
            return Vec::new();
        }
        let members = group_members(self.id());
        if members.is_empty() {
            self.disarm();
        }
        members
    }

    /// Stops the whole group: SIGTERM, up to `grace` for its last member to go, then SIGKILL
    /// and a bounded wait until no member is left. The leader is the caller's to reap.
    pub async fn teardown(&self, grace: Duration) -> Teardown {
        if self.members().is_empty() {
            return Teardown::AlreadyGone;
        }
        self.escalate(grace, &mut Gone::no_member()).await
    }

    /// Ends the group `leader` leads: up to `exit_grace` for the leader to exit on its own,
    /// then SIGTERM, up to `term_grace`, then SIGKILL; finally SIGKILLs anything the leader
    /// left in the group. Returns the leader's exit (it is reaped).
    pub async fn close(
        self,
        leader: &mut Child,
        exit_grace: Duration,
        term_grace: Duration,
    ) -> io::Result<ExitStatus> {
        let status = match tokio::time::timeout(exit_grace, leader.wait()).await {
            Ok(status) => status,
            Err(_) => {
                let mut gone = Gone {
                    leader: Some(&mut *leader),
                    exit: None,
                };
                self.escalate(term_grace, &mut gone).await;
                match gone.exit {
                    Some(status) => status,
                    // SIGKILL cannot be ignored: the leader ends, however long it takes.
                    None => leader.wait().await,
                }
            }
        };
        self.kill_now();
        status
    }

    /// Kills the group at once and reaps `leader`. Returns the leader's exit.
    pub async fn kill(self, leader: &mut Child) -> io::Result<ExitStatus> {
        self.kill_now();
        let _ = leader.start_kill();
        leader.wait().await
    }

    /// SIGKILLs the group; it is not signalled again (not even on drop).
    fn kill_now(&self) {
        self.signal(Signal::KILL);
        self.disarm();
    }

    fn disarm(&self) {
        self.armed.store(false, Ordering::Release);
    }

    /// SIGTERM (and SIGCONT), up to `grace` for the group to be `gone`, then SIGKILL.
    async fn escalate(&self, grace: Duration, gone: &mut Gone<'_>) -> Teardown {
        self.signal(Signal::TERM);
        // A stopped process cannot act on SIGTERM until it is continued.
        self.signal(Signal::CONT);
        if self.gone_within(gone, grace).await {
            return Teardown::Terminated;
        }
        self.signal(Signal::KILL);
        // SIGKILL cannot be ignored; the wait only covers the kernel tearing processes down.
        self.gone_within(gone, KILL_WAIT).await;
        Teardown::Killed
    }

    async fn gone_within(&self, gone: &mut Gone<'_>, limit: Duration) -> bool {
        let Some(leader) = gone.leader.as_deref_mut() else {
            return self.no_member_within(limit).await;
        };
        match tokio::time::timeout(limit, leader.wait()).await {
            Ok(exit) => {
                gone.exit = Some(exit);
                true
            }
            Err(_) => false,
        }
    }

    async fn no_member_within(&self, limit: Duration) -> bool {
        let start = Instant::now();
        let mut pause = Duration::from_millis(1);
        loop {
            if self.members().is_empty() {
                return true;
            }
            if start.elapsed() >= limit {
                return false;
            }
            tokio::time::sleep(pause.min(limit.saturating_sub(start.elapsed()))).await;
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if self.armed.load(Ordering::Acquire) {
            let _ = rustix::process::kill_process_group(self.pgid, Signal::KILL);
        }
    }
}

/// Pids of the live processes in process group `pgid`. Zombies do not count: they are dead,
/// only not yet reaped (and where PID 1 does not reap orphans, never will be).
#[cfg(any(target_os = "linux", target_os = "android"))]
fn group_members(pgid: i32) -> Vec<i32> {
    let Some(pid) = Pid::from_raw(pgid) else {
        return Vec::new();
    };
    // Cheap first answer: no process at all in the group.
    if rustix::process::test_kill_process_group(pid).is_err() {
        return Vec::new();
    }
    let Ok(entries) = fs_err::read_dir("/proc") else {
        return vec![pgid];
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = fs_err::read_to_string(entry.path().join("stat")).ok()?;
            let (state, group) = parse_stat(&stat)?;
            (group == pgid && state != 'Z' && state != 'X').then_some(pid)
        })
        .collect()
}

/// Pids of the live processes in process group `pgid` (no /proc: any member counts).
#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn group_members(pgid: i32) -> Vec<i32> {
    match Pid::from_raw(pgid).map(rustix::process::test_kill_process_group) {
        Some(Ok(())) => vec![pgid],
        _ => Vec::new(),
    }
}

/// State and process group from `/proc/PID/stat` (the name in parentheses may hold spaces
/// and parentheses, so fields are counted from the last `)`).
#[cfg(any(target_os = "linux", target_os = "android", test))]
fn parse_stat(stat: &str) -> Option<(char, i32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

#[cfg(test)]
mod tests {
    use super::parse_stat;

    #[test]
    fn stat_names_with_parentheses_and_spaces() {
        let stat = "4242 (we (ird) name) S 1 4240 4240 0 -1 4194560 100";
        assert_eq!(parse_stat(stat), Some(('S', 4240)));
        assert_eq!(parse_stat("1 (init) Z 0 7 7"), Some(('Z', 7)));
        assert_eq!(parse_stat("garbage"), None);
    }
}
