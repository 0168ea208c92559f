//! What toolgate's crates share in their tests: stand-in tools ([`FnTool`]), a registry and
//! dispatcher over them ([`registry_with`], [`dispatcher`]), temporary projects
//! ([`TempProject`]) and a JSON-RPC line client for MCP over any byte stream
//! ([`LineClient`]).
//!
//! Used by integration tests (`tests/`), benches and examples. A crate's own unit tests may
//! use only what holds none of that crate's types ([`LineClient`] in `toolgate-mcp`'s):
//! there the crate is compiled twice and its two copies' types do not match.
//!
//! Waits here wait for events ([`wait_until`]); the only deadline is [`HANG_GUARD`], long
//! enough that a loaded machine never reaches it and short enough that a hung test fails
//! instead of stalling CI.

#![deny(missing_docs)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod client;
mod project;
mod tool;

pub use client::LineClient;
pub use project::{TempProject, outside_writable};
pub use tool::{FnTool, Reply};

use std::sync::Arc;
use std::time::Duration;

use toolgate_core::{DispatchLimits, Dispatcher, DynTool, Policy, Registry, Scope, StaticProvider};

/// How long a test waits for something that should happen before it calls the wait a hang.
pub const HANG_GUARD: Duration = Duration::from_secs(120);

/// How often [`wait_until`] looks again: often enough that a test does not idle, seldom
/// enough that the looking does not load the machine.
const POLL: Duration = Duration::from_millis(20);

/// Waits until `done` holds, looking again every few milliseconds; panics naming `what` after
/// [`HANG_GUARD`] of real time (a paused tokio clock does not cut it short). For a test that
/// must wait for an event it cannot be told about: a process to start or die, a file to
/// appear, another task to reach a state.
pub async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + HANG_GUARD;
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "still waiting after {HANG_GUARD:?} for {what}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// [`wait_until`] for a condition that must itself wait to be read (a tool call, a
/// connection attempt).
pub async fn wait_until_async<F: std::future::Future<Output = bool>>(
    what: &str,
    mut done: impl FnMut() -> F,
) {
    let deadline = std::time::Instant::now() + HANG_GUARD;
    while !done().await {
        assert!(
            std::time::Instant::now() < deadline,
            "still waiting after {HANG_GUARD:?} for {what}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// [`wait_until`] for a test without an async runtime: blocks the thread while it waits.
pub fn wait_until_blocking(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + HANG_GUARD;
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "still waiting after {HANG_GUARD:?} for {what}"
        );
        std::thread::sleep(POLL);
    }
}

/// A registry with `tools` registered as the provider `test` (priority 0).
pub fn registry_with(tools: Vec<Arc<dyn DynTool>>) -> Arc<Registry> {
    let registry = Arc::new(Registry::new());
    registry
        .register(None, Arc::new(StaticProvider::new("test", tools)), 0)
        .expect("stand-in tools register");
    registry
}

/// A dispatcher over the whole of `registry` that allows every call, default limits.
pub fn dispatcher(registry: Arc<Registry>) -> Arc<Dispatcher> {
    Arc::new(Dispatcher::new(
        registry,
        Scope::global(),
        Policy::allow_all(),
        DispatchLimits::default(),
    ))
}
