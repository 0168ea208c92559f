//! Integration tests for toolgate-core, built as one binary (STYLE "Tests").

// clippy.toml allows unwrap in `#[test]` functions only; the shared helpers here are test
// code too, and a panic is how they report a broken fixture.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "all/fixtures.rs"]
mod fixtures;

#[path = "all/audit.rs"]
mod audit;
#[path = "all/disclosure.rs"]
mod disclosure;
#[path = "../benches/disclosure/catalog.rs"]
mod disclosure_catalog;
#[path = "all/dispatch.rs"]
mod dispatch;
#[path = "all/permission.rs"]
mod permission;
#[path = "all/registry.rs"]
mod registry;
#[path = "all/render.rs"]
mod render;
#[path = "all/schedule.rs"]
mod schedule;
