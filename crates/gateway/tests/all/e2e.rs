//! The whole path a client sees: an MCP client ↔ toolgate's MCP server ↔ the gateway ↔
//! mounted servers. Built-ins are listed while a server still hangs; mounted tools arrive
//! with an upstream `list_changed`; downstream progress reaches the client; a client's
//! cancellation reaches the mounted server.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, ClientRequest, ProgressNotificationParam};
use rmcp::service::{NotificationContext, PeerRequestOptions};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::json;
use tokio::sync::Notify;
use toolgate_core::RenderOptions;
use toolgate_gateway::ServerState;
use toolgate_mcp::{ToolgateServer, serve_streams};

use toolgate_test_support::wait_until;

use crate::support::{fake, node, npm_server, setup, stdio};

#[derive(Clone, Default)]
struct Client {
    list_changed: Arc<Notify>,
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
}

impl ClientHandler for Client {
    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        self.list_changed.notify_one();
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }
}

#[tokio::test]
async fn a_client_sees_builtins_at_once_mounted_tools_later_progress_and_cancellation() {
    let builder = setup();
    let mark = builder.mark.clone();
    let mut hang = stdio(&fake(), &["hang-init"], &mark);
    hang.startup_timeout_sec = Some(3.0);
    let everything = stdio(&node(), &[&npm_server("server-everything"), "stdio"], &mark);
    let rig = builder
        .server("hang", hang)
        .server("everything", everything)
        .fake("good", &["normal"])
        .build();
    let server = ToolgateServer::new(
        Arc::clone(&rig.dispatcher),
        RenderOptions::default(),
        String::new(),
    );
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server_io);
    tokio::spawn(serve_streams(server, server_read, server_write));
    rig.gateway.start();

    let client = Client::default();
    let peer = client.clone().serve(client_io).await.unwrap();
    let first = peer.list_tools(None).await.unwrap();
    let names: Vec<String> = first.tools.iter().map(|t| t.name.to_string()).collect();
    assert!(names.contains(&"builtin_echo".to_owned()), "{names:?}");
    let hang_state = rig
        .gateway
        .status()
        .into_iter()
        .find(|s| s.name == "hang")
        .unwrap()
        .state;
    assert_eq!(
        hang_state,
        ServerState::Starting,
        "the first tools/list was answered while the hanging server was still starting"
    );

    // Mounted tools arrive with list_changed.
    let started = Instant::now();
    loop {
        let now = peer.list_tools(None).await.unwrap();
        let names: Vec<String> = now.tools.iter().map(|t| t.name.to_string()).collect();
        if names.contains(&"mcp__good__ok".to_owned())
            && names.contains(&"mcp__everything__echo".to_owned())
        {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "{names:?}");
        let _ = tokio::time::timeout(Duration::from_secs(5), client.list_changed.notified()).await;
    }

    // Progress from the mounted server reaches the client.
    let mut call = CallToolRequestParams::new("mcp__everything__trigger-long-running-operation");
    call = call.with_arguments(
        json!({"duration": 1, "steps": 4})
            .as_object()
            .unwrap()
            .clone(),
    );
    let result = peer.call_tool(call).await.unwrap();
    assert!(format!("{:?}", result.content).contains("Long running operation completed"));
    let progress: Vec<f64> = client
        .progress
        .lock()
        .unwrap()
        .iter()
        .map(|p| p.progress)
        .collect();
    assert_eq!(progress, [1.0, 2.0, 3.0, 4.0]);

    // A client's cancellation reaches the mounted server.
    let mut call = CallToolRequestParams::new("mcp__good__sleep");
    call = call.with_arguments(json!({"ms": 20_000}).as_object().unwrap().clone());
    let handle = peer
        .send_request_with_option(
            ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(call)),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    wait_until("the call to reach the server", || {
        rig.fake_log("good").contains("call sleep")
    })
    .await;
    handle.cancel(Some("test".to_owned())).await.unwrap();
    wait_until("the cancellation to reach the server", || {
        rig.fake_log("good").contains("cancelled")
    })
    .await;

    // The server answers other calls meanwhile and afterwards.
    let mut call = CallToolRequestParams::new("mcp__good__ok");
    call = call.with_arguments(json!({"message": "fine"}).as_object().unwrap().clone());
    let result = peer.call_tool(call).await.unwrap();
    assert!(format!("{:?}", result.content).contains("fine"));
    peer.cancel().await.unwrap();
    rig.finish().await;
}
