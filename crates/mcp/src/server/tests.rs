//! The handler end to end over an in-memory stdio pair: progress order, logging levels,
//! prompts, resources and completion.

use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::model::{GetPromptResult, Prompt, PromptMessage, Resource, ResourceContents, Role};
use serde_json::{Value, json};
use tokio::io::DuplexStream;
use toolgate_core::{
    CallContext, ClientAsk, Concurrency, DispatchLimits, Dispatcher, Policy, Registry,
    RenderOptions, Scope, StaticProvider, Tool, ToolError, ToolMeta, ToolOutput, TypedTool,
};
use toolgate_test_support::LineClient;

use crate::{
    LogLevel, McpClient, PromptArguments, PromptSource, ResourceSource, SourceError,
    ToolgateServer, UpdateLease, serve_streams,
};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

/// Reports progress 1..=20 as fast as it can, then returns at once.
struct Burst;

impl Tool for Burst {
    type Args = NoArgs;
    type Output = ();
    fn name(&self) -> &str {
        "burst"
    }
    fn description(&self) -> &str {
        "Reports progress 1 to 20 and returns"
    }
    fn meta(&self) -> ToolMeta {
        ToolMeta {
            concurrency: Concurrency::ReadOnly,
            ..ToolMeta::default()
        }
    }
    async fn call(&self, _: NoArgs, ctx: CallContext) -> Result<ToolOutput, ToolError> {
        for i in 1..=20 {
            ctx.report(f64::from(i), Some(20.0), None);
        }
        Ok(ToolOutput::text("done"))
    }
}

/// Reports progress that goes back and forth.
struct Wobble;

impl Tool for Wobble {
    type Args = NoArgs;
    type Output = ();
    fn name(&self) -> &str {
        "wobble"
    }
    fn description(&self) -> &str {
        "Reports 5, 3, 5, 7"
    }
    fn meta(&self) -> ToolMeta {
        ToolMeta::default()
    }
    async fn call(&self, _: NoArgs, ctx: CallContext) -> Result<ToolOutput, ToolError> {
        for p in [5.0, 3.0, 5.0, 7.0] {
            ctx.report(p, None, None);
        }
        Ok(ToolOutput::text("done"))
    }
}

/// Logs one message at info and one at error.
struct Chatty;

impl Tool for Chatty {
    type Args = NoArgs;
    type Output = ();
    fn name(&self) -> &str {
        "chatty"
    }
    fn description(&self) -> &str {
        "Logs at info and at error"
    }
    fn meta(&self) -> ToolMeta {
        ToolMeta::default()
    }
    async fn call(&self, _: NoArgs, ctx: CallContext) -> Result<ToolOutput, ToolError> {
        let client = McpClient::of(&ctx);
        client.log(LogLevel::Info, None, json!("info")).await;
        client
            .log(LogLevel::Error, Some("chatty"), json!("error"))
            .await;
        Ok(ToolOutput::text("logged"))
    }
}

struct Greetings;

impl PromptSource for Greetings {
    fn prompts(&self) -> Vec<Prompt> {
        vec![Prompt::new("greet", Some("Greets someone"), None)]
    }
    fn get<'a>(
        &'a self,
        name: &'a str,
        arguments: &'a PromptArguments,
        _ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<GetPromptResult, SourceError>> {
        Box::pin(async move {
            if name != "greet" {
                return Err(SourceError::UnknownPrompt(name.to_owned()));
            }
            let who = arguments.get("who").map_or("world", String::as_str);
            Ok(GetPromptResult::new(vec![PromptMessage::new_text(
                Role::User,
                format!("Hello, {who}!"),
            )]))
        })
    }
    fn complete<'a>(
        &'a self,
        _name: &'a str,
        argument: &'a rmcp::model::ArgumentInfo,
        _context: Option<&'a rmcp::model::CompletionContext>,
    ) -> BoxFuture<'a, Result<rmcp::model::CompletionInfo, SourceError>> {
        let values = ["alice", "bob"]
            .into_iter()
            .filter(|v| v.starts_with(argument.value.as_str()))
            .map(str::to_owned)
            .collect();
        Box::pin(async move { Ok(crate::completion(values)) })
    }
}

struct Notes;

impl ResourceSource for Notes {
    fn resources(&self) -> Vec<Resource> {
        vec![Resource::new("note://a", "a")]
    }
    fn read<'a>(
        &'a self,
        uri: &'a str,
        _ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<Vec<ResourceContents>, SourceError>> {
        Box::pin(async move {
            match uri {
                "note://a" => Ok(vec![ResourceContents::text("note a", uri)]),
                _ => Err(SourceError::UnknownResource(uri.to_owned())),
            }
        })
    }
}

/// Says what its session knows: the client's profile, who approves, what the client can be
/// asked, who the caller is.
struct SessionProbe;

impl Tool for SessionProbe {
    type Args = NoArgs;
    type Output = ();
    fn name(&self) -> &str {
        "session_probe"
    }
    fn description(&self) -> &str {
        "Describes its session"
    }
    fn meta(&self) -> ToolMeta {
        ToolMeta::default()
    }
    async fn call(&self, _: NoArgs, ctx: CallContext) -> Result<ToolOutput, ToolError> {
        let session = &ctx.session;
        let link = session.client();
        let can = |ask| link.is_some_and(|l| l.can_ask(ask).is_ok());
        Ok(ToolOutput::text(
            json!({
                "profile": session.profile().map(|p| p.name.clone()),
                "approval": format!("{:?}", session.approval()),
                "linked": link.is_some(),
                "forms": can(ClientAsk::FormElicitation),
                "sampling": can(ClientAsk::Sampling),
                "identity": session.identity().map(|i| i.subject.clone()),
                "ended": session.ended().is_cancelled(),
            })
            .to_string(),
        ))
    }
}

fn server() -> ToolgateServer {
    let registry = Arc::new(Registry::new());
    let tools = vec![
        TypedTool::erased(Burst),
        TypedTool::erased(Chatty),
        TypedTool::erased(Wobble),
        TypedTool::erased(SessionProbe),
    ];
    registry
        .register(None, Arc::new(StaticProvider::new("test", tools)), 0)
        .unwrap();
    let dispatcher = Dispatcher::new(
        registry,
        Scope::global(),
        Policy::allow_all(),
        DispatchLimits::default(),
    );
    ToolgateServer::new(
        Arc::new(dispatcher),
        RenderOptions::default(),
        String::new(),
    )
}

pub(super) type Client = LineClient<DuplexStream, DuplexStream>;

/// Serves `server` over an in-memory stdio pair and connects a client to it.
pub(super) fn connect(server: ToolgateServer) -> Client {
    let (to_server, server_in) = tokio::io::duplex(1 << 20);
    let (server_out, from_server) = tokio::io::duplex(1 << 20);
    tokio::spawn(serve_streams(server, server_in, server_out));
    LineClient::new(from_server, to_server)
}

/// Connected and initialized as the client `test`; the `initialize` result beside it.
async fn start(server: ToolgateServer) -> (Client, Value) {
    start_as(server, "test", json!({})).await
}

/// Connected and initialized as the client `name`, offering `capabilities`.
async fn start_as(server: ToolgateServer, name: &str, capabilities: Value) -> (Client, Value) {
    let mut client = connect(server);
    let init = client.initialize("2025-06-18", name, capabilities).await;
    (client, init)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_notifications_arrive_in_order_before_the_result() {
    let (mut client, _) = start(server()).await;
    for round in 0..5 {
        let (response, notifications) = client
            .exchange(
                round + 1,
                "tools/call",
                json!({"name": "burst", "arguments": {}, "_meta": {"progressToken": round}}),
            )
            .await;
        assert_eq!(response["result"]["content"][0]["text"], "done");
        let progress: Vec<f64> = notifications
            .iter()
            .filter(|n| n["method"] == "notifications/progress")
            .map(|n| n["params"]["progress"].as_f64().unwrap())
            .collect();
        let expected: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(progress, expected, "round {round}");
    }
}

#[tokio::test]
async fn progress_that_does_not_increase_is_not_sent() {
    let (mut client, _) = start(server()).await;
    let (_, notifications) = client
        .exchange(
            1,
            "tools/call",
            json!({"name": "wobble", "arguments": {}, "_meta": {"progressToken": "w"}}),
        )
        .await;
    let progress: Vec<f64> = notifications
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .map(|n| n["params"]["progress"].as_f64().unwrap())
        .collect();
    assert_eq!(progress, [5.0, 7.0]);
}

#[tokio::test]
async fn tool_logs_reach_the_client_at_or_above_the_level_it_set() {
    let (mut client, init) = start(server()).await;
    assert!(init["capabilities"]["logging"].is_object());
    let set = client
        .request(1, "logging/setLevel", json!({"level": "warning"}))
        .await;
    assert_eq!(set["result"], json!({}));
    let (response, notifications) = client
        .exchange(2, "tools/call", json!({"name": "chatty", "arguments": {}}))
        .await;
    assert_eq!(response["result"]["content"][0]["text"], "logged");
    // Logging goes out on the session, not tied to the call: allow it to trail the result.
    let mut logs: Vec<Value> = notifications;
    if logs.is_empty() {
        logs.push(client.next().await.unwrap());
    }
    let logs: Vec<&Value> = logs
        .iter()
        .filter(|n| n["method"] == "notifications/message")
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    assert_eq!(logs[0]["params"]["level"], "error");
    assert_eq!(logs[0]["params"]["logger"], "chatty");
    assert_eq!(logs[0]["params"]["data"], "error");
}

#[tokio::test]
async fn prompts_resources_and_completion_are_advertised_only_with_sources() {
    let (mut bare, init) = start(server()).await;
    let caps = &init["capabilities"];
    assert!(caps["prompts"].is_null() && caps["resources"].is_null());
    assert!(caps["completions"].is_null());
    let listed = bare.request(1, "prompts/list", json!({})).await;
    assert_eq!(listed["error"]["code"], -32601, "{listed}");

    let full = server()
        .with_prompts(Arc::new(Greetings))
        .with_resources(Arc::new(Notes));
    let (mut client, init) = start(full).await;
    let caps = &init["capabilities"];
    assert!(caps["prompts"].is_object() && caps["completions"].is_object());
    // Notes reports no updates, so subscribing is not offered.
    assert!(caps["resources"]["subscribe"].is_null());

    let listed = client.request(1, "prompts/list", json!({})).await;
    assert_eq!(listed["result"]["prompts"][0]["name"], "greet");
    let got = client
        .request(
            2,
            "prompts/get",
            json!({"name": "greet", "arguments": {"who": "Ada"}}),
        )
        .await;
    assert_eq!(
        got["result"]["messages"][0]["content"]["text"],
        "Hello, Ada!"
    );
    let unknown = client
        .request(3, "prompts/get", json!({"name": "nope"}))
        .await;
    assert_eq!(unknown["error"]["code"], -32602);

    let read = client
        .request(4, "resources/read", json!({"uri": "note://a"}))
        .await;
    assert_eq!(read["result"]["contents"][0]["text"], "note a");
    let missing = client
        .request(5, "resources/read", json!({"uri": "note://b"}))
        .await;
    assert_eq!(missing["error"]["code"], -32002);
    let subscribe = client
        .request(6, "resources/subscribe", json!({"uri": "note://a"}))
        .await;
    assert_eq!(subscribe["error"]["code"], -32601);

    let completed = client
        .request(
            7,
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "greet"},
                   "argument": {"name": "who", "value": "a"}}),
        )
        .await;
    assert_eq!(
        completed["result"]["completion"]["values"],
        json!(["alice"])
    );
}

/// The MCP front end builds a whole session: the profile chosen from `clientInfo`, nobody
/// to approve `ask` rules, the connection's client as the link (with what it offered at
/// `initialize`), no authenticated caller; each connection a session of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_connection_gets_a_whole_session_of_its_own() {
    let base = server();
    let probe = json!({"name": "session_probe", "arguments": {}});
    let (mut codex, _) = start_as(
        base.new_session(),
        "codex-mcp-client",
        json!({"elicitation": {"form": {}}}),
    )
    .await;
    let seen = codex.request(1, "tools/call", probe.clone()).await;
    let seen: Value =
        serde_json::from_str(seen["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        seen,
        json!({"profile": "codex", "approval": "Nobody", "linked": true, "forms": true,
               "sampling": false, "identity": null, "ended": false})
    );
    let (mut other, _) = start_as(base.new_session(), "someone-else", json!({})).await;
    let seen = other.request(1, "tools/call", probe).await;
    let seen: Value =
        serde_json::from_str(seen["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(seen["profile"], "default");
    assert_eq!(seen["forms"], false, "{seen}");
    assert_eq!(seen["linked"], true);
}

/// Notes whose subscriptions are followed: `held` counts the leases alive.
struct Followed {
    held: tokio::sync::watch::Sender<usize>,
    updates: tokio::sync::broadcast::Sender<String>,
}

/// Withdraws one follower when dropped.
struct Held(tokio::sync::watch::Sender<usize>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n -= 1);
    }
}

impl ResourceSource for Followed {
    fn resources(&self) -> Vec<Resource> {
        Notes.resources()
    }
    fn read<'a>(
        &'a self,
        uri: &'a str,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<Vec<ResourceContents>, SourceError>> {
        Box::pin(async move { Notes.read(uri, ctx).await })
    }
    fn updates(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        Some(self.updates.subscribe())
    }
    fn follow<'a>(&'a self, _uri: &'a str) -> BoxFuture<'a, Result<UpdateLease, SourceError>> {
        self.held.send_modify(|n| *n += 1);
        let held = Held(self.held.clone());
        Box::pin(async move { Ok(UpdateLease::new(held)) })
    }
}

#[tokio::test]
async fn a_session_follows_a_subscribed_uri_once_until_it_unsubscribes_or_ends() {
    let (held, mut leases) = tokio::sync::watch::channel(0usize);
    let source = Arc::new(Followed {
        held,
        updates: tokio::sync::broadcast::channel(16).0,
    });
    let updates = source.updates.clone();
    let (mut client, init) = start(server().with_resources(source)).await;
    assert_eq!(init["capabilities"]["resources"]["subscribe"], true);
    let subscribe = json!({"uri": "note://a"});
    for id in 1..=2 {
        let answer = client
            .request(id, "resources/subscribe", subscribe.clone())
            .await;
        assert_eq!(answer["result"], json!({}), "{answer}");
    }
    assert_eq!(*leases.borrow(), 1, "subscribing twice follows once");
    // Only the subscribed URI's updates are passed on.
    updates.send("note://other".to_owned()).unwrap();
    updates.send("note://a".to_owned()).unwrap();
    let update = client
        .next_where(|m| m["method"] == "notifications/resources/updated")
        .await;
    assert_eq!(update["params"]["uri"], "note://a");
    let answer = client
        .request(3, "resources/unsubscribe", subscribe.clone())
        .await;
    assert_eq!(answer["result"], json!({}));
    assert_eq!(*leases.borrow(), 0, "unsubscribing drops the lease");
    client.request(4, "resources/subscribe", subscribe).await;
    assert_eq!(*leases.borrow(), 1);
    // The client goes away: its session ends and stops following.
    drop(client);
    let guard = std::time::Duration::from_secs(120); // a hang guard, not a speed goal
    tokio::time::timeout(guard, leases.wait_for(|n| *n == 0))
        .await
        .unwrap()
        .unwrap();
}

#[cfg(feature = "prometheus")]
#[tokio::test]
async fn made_up_tool_names_share_one_unknown_series_and_served_tools_keep_theirs() {
    let metrics = Arc::new(crate::Metrics::new(None).unwrap());
    let (mut client, _) = start(server().with_metrics(Arc::clone(&metrics))).await;
    // Each made-up name used to become a series of its own: memory grew with every call.
    for id in 1..=50 {
        let name = format!("no_such_tool_{id}_{}", "x".repeat(1_000));
        let reply = client
            .request(id, "tools/call", json!({"name": name, "arguments": {}}))
            .await;
        assert_eq!(reply["result"]["isError"], true, "{reply}");
    }
    client
        .request(51, "tools/call", json!({"name": "burst", "arguments": {}}))
        .await;
    let text = metrics.encode();
    let mut series: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("toolgate_tool_calls_total{"))
        .collect();
    // A family's series come out in hash order.
    series.sort_unstable();
    assert_eq!(
        series,
        [
            "toolgate_tool_calls_total{server=\"toolgate\",tool=\"burst\",outcome=\"ok\"} 1",
            "toolgate_tool_calls_total{server=\"toolgate\",tool=\"unknown\",outcome=\"error\"} 50",
        ],
        "{text}"
    );
}
