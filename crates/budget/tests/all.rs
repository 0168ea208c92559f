//! Integration tests for toolgate-budget, built as one binary (STYLE "Tests").

// clippy.toml allows unwrap in `#[test]` functions only; the shared helpers here are test
// code too, and a panic is how they report a broken fixture.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "all/support.rs"]
mod support;

#[path = "all/compress_fixtures.rs"]
mod compress_fixtures;
#[path = "all/compress_log.rs"]
mod compress_log;
#[path = "all/compress_prop.rs"]
mod compress_prop;
