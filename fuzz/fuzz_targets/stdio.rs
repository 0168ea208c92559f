//! The stdio JSON-RPC reader on arbitrary input: never panics, never hangs, and everything it
//! writes is one JSON-RPC message per line.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolgate_core::{DispatchLimits, Dispatcher, Policy, Registry, RenderOptions, Scope};
use toolgate_mcp::{ToolgateServer, serve_streams};

fuzz_target!(|data: &[u8]| {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let dispatcher = Arc::new(Dispatcher::new(
            Arc::new(Registry::new()),
            Scope::global(),
            Policy::allow_all(),
            DispatchLimits::default(),
        ));
        let server = ToolgateServer::new(dispatcher, RenderOptions::default(), String::new());
        let (mut client_in, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, mut client_out) = tokio::io::duplex(1 << 16);
        let serving = tokio::spawn(serve_streams(server, server_in, server_out));
        // An initialize first, so the fuzzed lines reach the request handlers too.
        let init = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"0"}}}"#;
        let writer = async move {
            let _ = client_in.write_all(init).await;
            let _ = client_in.write_all(b"\n").await;
            let _ = client_in.write_all(data).await;
            let _ = client_in.write_all(b"\n").await;
            drop(client_in);
        };
        let mut output = Vec::new();
        let reader = client_out.read_to_end(&mut output);
        let finished = tokio::time::timeout(std::time::Duration::from_secs(10), async {
            let ((), read) = tokio::join!(writer, reader);
            read
        })
        .await;
        assert!(finished.is_ok(), "the server did not finish after its input closed");
        let _ = serving.await;
        for line in output.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let value: serde_json::Value =
                serde_json::from_slice(line).expect("every output line is JSON");
            assert_eq!(value["jsonrpc"], "2.0");
        }
    });
});
