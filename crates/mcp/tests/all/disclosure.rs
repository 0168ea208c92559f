//! Progressive disclosure over MCP: proxy mode keeps `tools/list` byte-identical while
//! `search_tool` and `run_tool` reach deferred tools; backfill mode adds what a session's
//! search found and says so with one `list_changed`.

use std::sync::Arc;

use serde_json::{Value, json};
use toolgate_core::{
    Disclosure, DisclosureMode, DisclosureSettings, DynTool, ExposureMode, Registry, RenderOptions,
    Scope, StaticProvider, ToolMeta, ToolOutput,
};
use toolgate_mcp::ToolgateServer;
use toolgate_test_support::{FnTool, dispatcher};

use super::Client;

fn tools() -> Vec<Arc<dyn DynTool>> {
    let subjects = [
        "weather",
        "invoice",
        "calendar",
        "ticket",
        "playlist",
        "recipe",
        "flight",
        "hotel",
        "parcel",
        "stock",
        "podcast",
        "garden",
        "recipe_card",
        "wallet",
        "sensor",
        "printer",
        "scanner",
        "locker",
        "parking",
        "library_book",
    ];
    subjects
        .iter()
        .map(|s| {
            // A mounted-looking tool that says who it is.
            let name = format!("mcp__demo__get_{s}");
            let says = name.clone();
            FnTool::new(&name)
                .describe(&format!("Get the current {} record.", s.replace('_', " ")))
                .meta(ToolMeta {
                    action: "net".into(),
                    ..ToolMeta::default()
                })
                .reply(move |args, _ctx| {
                    let text = format!("{says} ran with {args}");
                    Box::pin(async move { Ok(ToolOutput::text(text)) })
                })
                .erased()
        })
        .collect()
}

async fn client(exposure: ExposureMode) -> Client {
    let registry = Arc::new(Registry::new());
    registry
        .register(None, Arc::new(StaticProvider::new("demo", tools())), 0)
        .unwrap();
    let settings = DisclosureSettings {
        mode: DisclosureMode::Auto(15),
        exposure,
        ..DisclosureSettings::default()
    };
    let disclosure = Arc::new(Disclosure::new(&settings, &Default::default()).unwrap());
    disclosure.attach(&registry, Scope::global()).unwrap();
    let server = ToolgateServer::new(
        dispatcher(registry),
        RenderOptions::default(),
        String::new(),
    )
    .with_disclosure(disclosure);
    Client::start_server(server).await
}

async fn list(client: &mut Client, id: u64) -> Value {
    client
        .send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {}}))
        .await;
    client.next_where(|m| m["id"] == id).await["result"]["tools"].clone()
}

fn names(tools: &Value) -> Vec<String> {
    tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

async fn call(client: &mut Client, id: u64, name: &str, arguments: Value) -> Value {
    client
        .send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}))
        .await;
    client.next_where(|m| m["id"] == id).await["result"].clone()
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn proxy_mode_keeps_tools_list_identical_and_reaches_deferred_tools() {
    let mut client = client(ExposureMode::Proxy).await;
    let before = list(&mut client, 1).await;
    assert_eq!(names(&before), ["run_tool", "search_tool"]);
    let catalog = before[1]["description"].as_str().unwrap();
    assert!(catalog.contains("mcp__demo__get_weather"), "{catalog}");
    let found = call(&mut client, 2, "search_tool", json!({"query": "weather"})).await;
    assert!(
        text(&found).contains("## mcp__demo__get_weather"),
        "{found}"
    );
    assert!(text(&found).contains("run_tool"), "{found}");
    let ran = call(
        &mut client,
        3,
        "run_tool",
        json!({"name": "mcp__demo__get_weather", "input": {"city": "Oslo"}}),
    )
    .await;
    assert_eq!(
        text(&ran),
        r#"mcp__demo__get_weather ran with {"city":"Oslo"}"#,
        "{ran}"
    );
    let after = list(&mut client, 4).await;
    assert_eq!(before.to_string(), after.to_string(), "byte-identical");
}

#[tokio::test]
async fn backfill_mode_adds_found_tools_with_one_list_changed() {
    let mut client = client(ExposureMode::Backfill).await;
    let before = names(&list(&mut client, 1).await);
    // The list watcher subscribed in `initialized`, which this runtime's one thread ran
    // before the list request above.
    assert_eq!(before, ["run_tool", "search_tool"]);
    let found = call(
        &mut client,
        2,
        "search_tool",
        json!({"query": "weather parcel", "limit": 2}),
    )
    .await;
    assert!(text(&found).contains("added to your tool list"), "{found}");
    client
        .next_where(|m| m["method"] == "notifications/tools/list_changed")
        .await;
    let after = names(&list(&mut client, 3).await);
    assert_eq!(
        after,
        [
            "run_tool",
            "search_tool",
            "mcp__demo__get_parcel",
            "mcp__demo__get_weather"
        ],
        "base first, then the found tools sorted"
    );
    // The found tool is now callable by its own name.
    let ran = call(&mut client, 4, "mcp__demo__get_parcel", json!({})).await;
    assert!(text(&ran).starts_with("mcp__demo__get_parcel ran"), "{ran}");
}
