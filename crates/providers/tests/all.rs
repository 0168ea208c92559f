//! Providers against a scripted model over real HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used)]
