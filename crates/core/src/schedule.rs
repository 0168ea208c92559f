//! Scheduling: who waits for whom before a call runs (concurrency-safe calls in parallel,
//! mutating ones in order).
//!
//! Two mechanisms, and nothing process-wide:
//! - [`OrderGate`], one per session: its mutating calls run one at a time in arrival order,
//!   its read-only calls run beside each other, and a read that arrived after a write waits
//!   for it (the model wrote the file, then reads it). A [`Ticket`] is the place in that line,
//!   taken when the call arrives — before any task is spawned — so pipelined calls keep the
//!   order the client sent them in.
//! - [`ResourceLocks`], one per dispatcher: a mutating call that declares the [`Resource`]s
//!   it touches (a file's real path, a mounted server) holds them exclusively, so two sessions
//!   writing the same file take turns while writes to different files run at once.
//!
//! Every wait happens inside the call's deadline and cancellation; a call that cannot start
//! in time fails with a result that names what it was waiting for. A running call lets go of
//! its resources while it waits for a person ([`away`]): the order is kept for calls that
//! run, never for someone who left a form open.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;

mod away;
pub(crate) use away::{AwayLink, Ends, Holding};

/// The lock table [`ResourceLocks`] shares with what it hands out.
type Table = Arc<Mutex<HashMap<Resource, Arc<tokio::sync::Mutex<()>>>>>;

/// Something a call touches that other sessions' calls may touch too.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Resource {
    /// A file or folder, by its real (symlink-resolved) path.
    Path(PathBuf),
    /// A mounted MCP server whose tools give no hints, by server name.
    Server(String),
}

impl std::fmt::Display for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Path(path) => write!(f, "`{}`", path.display()),
            Self::Server(name) => write!(f, "the MCP server `{name}`"),
        }
    }
}

/// What one call of a tool will need, known from its arguments before it runs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Footprint {
    /// The call's own time limit from its arguments (run_shell's `timeout_ms`); the tool
    /// stops itself by then (see [`crate::CallContext::deadline`]) and the dispatcher stops it
    /// shortly after. `None` uses the tool's declared timeout.
    pub timeout: Option<Duration>,
    /// What a mutating call changes; other sessions' calls on the same resources wait.
    pub resources: Vec<Resource>,
}

/// How a call takes part in its session's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Turn {
    /// Beside other reads; after earlier writes.
    Read,
    /// Alone, after everything that arrived earlier.
    Write,
}

#[derive(Debug)]
struct Slot {
    /// `None` until the call knows what it is (it arrived, but its handler has not started).
    turn: Option<Turn>,
    /// The tool, for "waiting for …" messages.
    tool: String,
}

#[derive(Debug, Default)]
struct Line {
    next: u64,
    slots: BTreeMap<u64, Slot>,
}

/// One session's line of calls. Cheap to create; lives in the session's state.
#[derive(Debug, Default)]
pub struct OrderGate {
    line: Mutex<Line>,
    changed: Notify,
}

impl OrderGate {
    /// Takes the next place in line. Call this when the call arrives, in arrival order.
    pub fn ticket(self: &Arc<Self>) -> Ticket {
        let mut line = self.lock();
        let seq = line.next;
        line.next += 1;
        line.slots.insert(
            seq,
            Slot {
                turn: None,
                tool: String::new(),
            },
        );
        Ticket {
            gate: Arc::clone(self),
            seq,
            arrived: tokio::time::Instant::now(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Line> {
        self.line.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The first earlier call that `seq` must wait for, if any.
    fn blocker(line: &Line, seq: u64, turn: Turn) -> Option<&Slot> {
        let mut earlier = line.slots.range(..seq).map(|(_, slot)| slot);
        match turn {
            Turn::Write => earlier.next(),
            Turn::Read => earlier.find(|slot| slot.turn != Some(Turn::Read)),
        }
    }
}

/// A call's place in its session's line; leaving it (drop) lets the next calls go.
#[derive(Debug)]
pub struct Ticket {
    gate: Arc<OrderGate>,
    seq: u64,
    arrived: tokio::time::Instant,
}

impl Ticket {
    /// When the call arrived; its deadline counts from here.
    pub fn arrived(&self) -> tokio::time::Instant {
        self.arrived
    }

    /// Says what the call is and waits until its turn. On cancellation the returned future
    /// is simply dropped; the ticket still leaves the line when it is dropped.
    pub(crate) async fn wait(&self, tool: &str, turn: Turn, waiting_on: &Mutex<String>) {
        {
            let mut line = self.gate.lock();
            if let Some(slot) = line.slots.get_mut(&self.seq) {
                slot.turn = Some(turn);
                tool.clone_into(&mut slot.tool);
            }
        }
        // Anyone waiting behind a pending slot may go now.
        self.gate.changed.notify_waiters();
        loop {
            let notified = self.gate.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let line = self.gate.lock();
                match OrderGate::blocker(&line, self.seq, turn) {
                    None => return,
                    Some(slot) => {
                        let what = if slot.tool.is_empty() {
                            "an earlier call of this session to start".to_owned()
                        } else {
                            format!("this session's earlier `{}` call to finish", slot.tool)
                        };
                        *waiting_on.lock().unwrap_or_else(PoisonError::into_inner) = what;
                    }
                }
            }
            notified.await;
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.gate.lock().slots.remove(&self.seq);
        self.gate.changed.notify_waiters();
    }
}

/// Exclusive holds on [`Resource`]s across sessions, one fair lock per resource in use.
#[derive(Debug, Default)]
pub struct ResourceLocks {
    locks: Table,
}

/// Held resources; released on drop.
#[derive(Debug)]
pub(crate) struct Held {
    owner: Table,
    guards: Vec<(Resource, tokio::sync::OwnedMutexGuard<()>)>,
}

impl ResourceLocks {
    /// Holds every resource of `wanted`, in a fixed order so two calls wanting overlapping
    /// sets cannot deadlock.
    #[cfg(test)]
    pub(crate) async fn hold(&self, wanted: Vec<Resource>, waiting_on: &Mutex<String>) -> Held {
        hold_in(&self.locks, wanted, waiting_on).await
    }

    /// Resources currently locked or waited for (for tests and diagnostics).
    pub fn in_use(&self) -> usize {
        self.locks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

/// [`ResourceLocks::hold`] on the table of a [`ResourceLocks`].
async fn hold_in(table: &Table, mut wanted: Vec<Resource>, waiting_on: &Mutex<String>) -> Held {
    wanted.sort();
    wanted.dedup();
    let mut held = Held {
        owner: Arc::clone(table),
        guards: Vec::with_capacity(wanted.len()),
    };
    for resource in wanted {
        let lock = {
            let mut locks = table.lock().unwrap_or_else(PoisonError::into_inner);
            Arc::clone(locks.entry(resource.clone()).or_default())
        };
        let guard = match Arc::clone(&lock).try_lock_owned() {
            Ok(guard) => guard,
            Err(_) => {
                *waiting_on.lock().unwrap_or_else(PoisonError::into_inner) =
                    format!("another call that is changing {resource} to finish");
                lock.lock_owned().await
            }
        };
        held.guards.push((resource, guard));
    }
    held
}

impl Drop for Held {
    fn drop(&mut self) {
        let guards = std::mem::take(&mut self.guards);
        let mut locks = self.owner.lock().unwrap_or_else(PoisonError::into_inner);
        for (resource, guard) in guards {
            drop(guard);
            // Forget a lock nobody else holds or waits for, so the table stays small.
            if locks
                .get(&resource)
                .is_some_and(|lock| Arc::strong_count(lock) == 1)
            {
                locks.remove(&resource);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiting() -> Mutex<String> {
        Mutex::new(String::new())
    }

    #[tokio::test]
    async fn reads_share_and_a_write_waits_for_everything_before_it() {
        let gate = Arc::new(OrderGate::default());
        let (r1, r2, w, r3) = (gate.ticket(), gate.ticket(), gate.ticket(), gate.ticket());
        let w_on = waiting();
        let r3_on = waiting();
        r1.wait("read_file", Turn::Read, &waiting()).await;
        r2.wait("grep", Turn::Read, &waiting()).await;
        {
            let write = w.wait("write_file", Turn::Write, &w_on);
            tokio::pin!(write);
            assert!(futures::poll!(write.as_mut()).is_pending());
            assert!(w_on.lock().unwrap().contains("read_file"));
            // A read behind a waiting write waits too.
            let read = r3.wait("read_file", Turn::Read, &r3_on);
            tokio::pin!(read);
            assert!(futures::poll!(read.as_mut()).is_pending());
            drop((r1, r2));
            write.await;
            assert!(futures::poll!(read.as_mut()).is_pending());
        }
        assert!(r3_on.lock().unwrap().contains("write_file"));
        drop(w);
        r3.wait("read_file", Turn::Read, &r3_on).await;
    }

    #[tokio::test]
    async fn a_ticket_dropped_before_it_says_what_it_is_releases_the_line() {
        let gate = Arc::new(OrderGate::default());
        let pending = gate.ticket();
        let w = gate.ticket();
        let on = waiting();
        {
            let write = w.wait("write_file", Turn::Write, &on);
            tokio::pin!(write);
            assert!(futures::poll!(write.as_mut()).is_pending());
            assert!(on.lock().unwrap().contains("to start"));
            drop(pending);
            write.await;
        }
        assert_eq!(gate.lock().slots.len(), 1);
        drop(w);
        assert!(gate.lock().slots.is_empty());
    }

    #[tokio::test]
    async fn the_same_resource_is_held_by_one_call_at_a_time_and_forgotten_after() {
        let locks = ResourceLocks::default();
        let file = Resource::Path("/p/a.txt".into());
        let other = Resource::Path("/p/b.txt".into());
        let first = locks.hold(vec![file.clone()], &waiting()).await;
        let _different = locks.hold(vec![other.clone()], &waiting()).await;
        let on = waiting();
        let second = locks.hold(vec![file.clone(), file.clone()], &on);
        tokio::pin!(second);
        assert!(futures::poll!(second.as_mut()).is_pending());
        assert!(
            on.lock().unwrap().contains("/p/a.txt"),
            "{}",
            on.lock().unwrap()
        );
        drop(first);
        let second = second.await;
        drop(second);
        drop(_different);
        assert_eq!(locks.in_use(), 0);
    }
}
