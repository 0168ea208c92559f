//! The fixture server for the official MCP conformance suite
//! (`@modelcontextprotocol/conformance server`): the suite's `test_*` tools registered in a
//! toolgate registry as typed tools, its prompts and resources through a `PromptSource`
//! and a `ResourceSource`, served by `toolgate_mcp::serve_http` exactly as
//! `toolgate serve --http` does. Run by `tests/interop/conformance.sh`.
//!
//! ```text
//! cargo run -p toolgate-mcp --example conformance_fixture -- 127.0.0.1:0
//! cargo run -p toolgate-mcp --example conformance_fixture -- --stdio
//! ```
//!
//! Prints `conformance fixture: listening on http://ADDR/mcp` on stderr once bound.
//! `tools.rs` holds the tools (`asking.rs` those that ask the client, `fn_tool.rs` the wrapper
//! that makes a tool of an async function), `sources.rs` the prompts and resources.

#![allow(clippy::print_stderr)]

mod asking;
mod fn_tool;
mod sources;
mod tools;

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use toolgate_core::{
    DispatchLimits, Dispatcher, Policy, Registry, RenderOptions, Scope, StaticProvider,
};
use toolgate_mcp::{HttpOptions, ListenerLimits, ToolgateServer, serve_http};

use crate::sources::{FixturePrompts, FixtureResources};

/// A 1×1 red PNG, base64.
const RED_PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

#[tokio::main]
async fn main() -> ExitCode {
    let arg = std::env::args().nth(1);
    let stdio = arg.as_deref() == Some("--stdio");
    let addr: SocketAddr = match arg
        .as_deref()
        .filter(|_| !stdio)
        .unwrap_or("127.0.0.1:0")
        .parse()
    {
        Ok(addr) => addr,
        Err(_) => {
            eprintln!("usage: conformance_fixture [IP:PORT | --stdio]   (default 127.0.0.1:0)");
            return ExitCode::from(2);
        }
    };

    let registry = Arc::new(Registry::new());
    let provider = StaticProvider::new("fixtures", tools::all(Arc::downgrade(&registry)));
    if let Err(e) = registry.register(None, Arc::new(provider), 0) {
        eprintln!("conformance fixture: cannot register the fixture tools: {e}");
        return ExitCode::FAILURE;
    }
    let dispatcher = Arc::new(Dispatcher::new(
        registry,
        Scope::global(),
        Policy::allow_all(),
        DispatchLimits::default(),
    ));
    let server = ToolgateServer::new(
        dispatcher,
        RenderOptions::default(),
        "Fixture server for the MCP conformance suite.".to_owned(),
    )
    .with_prompts(Arc::new(FixturePrompts))
    .with_resources(Arc::new(FixtureResources::new()));

    if stdio {
        // The same server on stdin/stdout, for a client that spawns it (toolgate's gateway).
        return match toolgate_mcp::serve_stdio(server).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("conformance fixture: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let options = HttpOptions {
        addr,
        token: None,
        oauth: None,
        allowed_origins: Vec::new(),
        allowed_hosts: Vec::new(),
        insecure_no_auth: false,
        max_sessions: toolgate_mcp::DEFAULT_MAX_SESSIONS,
        metrics: None,
        public_url: None,
        web_logins: None,
        listener: ListenerLimits::default(),
    };
    let shutdown = CancellationToken::new();
    let on_signal = shutdown.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        on_signal.cancel();
    });
    let served = serve_http(server, options, shutdown, |bound| {
        eprintln!("conformance fixture: listening on http://{bound}/mcp");
    })
    .await;
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance fixture: {e}");
            ExitCode::FAILURE
        }
    }
}
