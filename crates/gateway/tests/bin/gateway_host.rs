//! Hosts a gateway with one stdio server and waits forever: the tests kill this process
//! with SIGKILL and check that the server died with it.
//! `gateway_host COMMAND [ARGS…]`; prints `ready` once the server is.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::Path;
use std::sync::Arc;

use toolgate_core::Registry;
use toolgate_gateway::{Discovered, Gateway, GatewayLimits, McpServerConfig, ServerSpec};

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let config = McpServerConfig {
        command: args.next(),
        args: Some(args.collect()),
        ..McpServerConfig::default()
    };
    let registry = Arc::new(Registry::new());
    let spec = ServerSpec::resolve("hosted", &config, String::new(), Path::new("/"));
    let discovered = Discovered {
        servers: vec![spec],
        problems: Vec::new(),
    };
    let gateway = Gateway::new(discovered, GatewayLimits::default(), &registry).unwrap();
    gateway.start_all().await;
    println!("ready {}", gateway.status()[0].tools);
    std::future::pending::<()>().await;
}
