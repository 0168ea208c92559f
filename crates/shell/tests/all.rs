//! Integration tests for toolgate-shell, built as one binary (STYLE "Tests").

// clippy.toml allows unwrap in `#[test]` functions only; the shared helpers here are test
// code too, and a panic is how they report a broken fixture.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "all/fixtures.rs"]
mod fixtures;

#[path = "all/flood.rs"]
mod flood;
#[path = "all/jobs.rs"]
mod jobs;
#[path = "all/kill.rs"]
mod kill;
#[path = "all/logs.rs"]
mod logs;
#[path = "all/output.rs"]
mod output;
#[path = "all/sandbox.rs"]
mod sandbox;
#[path = "all/snapshots.rs"]
mod snapshots;
