//! Providers against a scripted model over real HTTP: both protocols, streamed and not.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "all/bounds.rs"]
mod bounds;
#[path = "all/wire.rs"]
mod wire;
