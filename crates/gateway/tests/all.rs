//! The gateway against real servers (`@modelcontextprotocol/server-everything` over stdio
//! and Streamable HTTP, `@modelcontextprotocol/server-filesystem`, installed by
//! `scripts/install-peers.sh`) and against misbehaving ones (`tests/bin/fake_server.rs`).
//! Every test ends by checking /proc: no process it started may survive.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

#[path = "all/catalog.rs"]
mod catalog;
#[path = "all/config.rs"]
mod config;
#[path = "all/discover.rs"]
mod discover;
#[path = "all/e2e.rs"]
mod e2e;
#[path = "all/everything.rs"]
mod everything;
#[path = "all/filesystem.rs"]
mod filesystem;
#[path = "all/forward.rs"]
mod forward;
#[path = "all/misbehave.rs"]
mod misbehave;
#[path = "all/prefix.rs"]
mod prefix;
#[path = "all/reconcile.rs"]
mod reconcile;
#[path = "all/relay.rs"]
mod relay;
#[path = "all/resources.rs"]
mod resources;
#[path = "all/support.rs"]
mod support;
