//! Client profiles end to end over an in-memory stdio pair: which form a session's results
//! take, which tool list it gets, and how large its pages are, by the client in front.

use std::sync::Arc;

use serde_json::{Value, json};

use toolgate_core::{
    CallContext, ClientLimits, Concurrency, DispatchLimits, Dispatcher, Policy, Registry,
    RenderOptions, Scope, StaticProvider, Tool, ToolError, ToolMeta, ToolOutput, TypedTool,
};

use super::tests::{Client, connect};
use crate::ToolgateServer;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Page {
    text: String,
    /// The session's page size, as the tool saw it.
    page_bytes: u64,
}

/// Returns a structured page whose size is the session's page limit.
struct Paged;

impl Tool for Paged {
    type Args = NoArgs;
    type Output = Page;
    fn name(&self) -> &str {
        "paged"
    }
    fn description(&self) -> &str {
        "A page sized to the client."
    }
    fn meta(&self) -> ToolMeta {
        ToolMeta {
            concurrency: Concurrency::ReadOnly,
            ..ToolMeta::default()
        }
    }
    async fn call(&self, _: NoArgs, ctx: CallContext) -> Result<ToolOutput, ToolError> {
        let page_bytes = ctx.session.limits().page_bytes(50_000);
        Ok(ToolOutput::from_body(&Page {
            text: "     1\tfirst\n     2\tsecond\n".to_owned(),
            page_bytes: page_bytes as u64,
        }))
    }
}

/// Says the session's page size (text only).
struct PageSize;

impl Tool for PageSize {
    type Args = NoArgs;
    type Output = ();
    fn name(&self) -> &str {
        "page_size"
    }
    fn description(&self) -> &str {
        "The session's page size."
    }
    fn meta(&self) -> ToolMeta {
        ToolMeta {
            concurrency: Concurrency::ReadOnly,
            ..ToolMeta::default()
        }
    }
    async fn call(&self, _: NoArgs, ctx: CallContext) -> Result<ToolOutput, ToolError> {
        let bytes = ctx.session.limits().page_bytes(50_000);
        Ok(ToolOutput::text(format!("page_bytes={bytes}")))
    }
}

fn server() -> ToolgateServer {
    let registry = Arc::new(Registry::new());
    let tools = vec![TypedTool::erased(Paged), TypedTool::erased(PageSize)];
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

/// Connected with the 2025 handshake, naming the client `name`.
async fn initialized(server: ToolgateServer, name: &str) -> Client {
    let mut client = connect(server);
    let init = client.initialize("2025-06-18", name, json!({})).await;
    assert!(init.is_object(), "{init}");
    client
}

fn listed_output_schema(list: &Value) -> bool {
    list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "paged")
        .unwrap()
        .get("outputSchema")
        .is_some()
}

#[tokio::test]
async fn clients_that_show_structured_content_get_text_only_and_no_output_schema() {
    for name in ["claude-code", "codex-mcp-client"] {
        let mut client = initialized(server(), name).await;
        let list = client.request(1, "tools/list", json!({})).await;
        assert!(!listed_output_schema(&list), "{name}: {list}");
        let call = client
            .request(2, "tools/call", json!({"name": "paged", "arguments": {}}))
            .await;
        let result = &call["result"];
        assert!(result.get("structuredContent").is_none(), "{name}: {call}");
        assert_eq!(
            result["content"][0]["text"],
            "     1\tfirst\n     2\tsecond\n"
        );
    }
}

#[tokio::test]
async fn unknown_clients_keep_output_schema_and_structured_content_with_the_whole_text() {
    let mut client = initialized(server(), "some-sdk-client").await;
    let list = client.request(1, "tools/list", json!({})).await;
    assert!(listed_output_schema(&list), "{list}");
    let call = client
        .request(2, "tools/call", json!({"name": "paged", "arguments": {}}))
        .await;
    let structured = &call["result"]["structuredContent"];
    assert_eq!(structured["text"], "     1\tfirst\n     2\tsecond\n");
    // The conservative profile sizes pages for the strictest measured client.
    let page = structured["page_bytes"].as_u64().unwrap() as usize;
    assert!(page + ClientLimits::FOOTER_ROOM <= 10_500, "{page}");
}

#[tokio::test]
async fn pages_are_sized_to_the_client_in_front_and_sessions_do_not_share_profiles() {
    let server = server();
    let page = |call: &Value| -> u64 {
        let text = call["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        text.strip_prefix("page_bytes=")
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let mut sizes = Vec::new();
    for (id, name) in ["codex-mcp-client", "claude-code", "some-sdk-client"]
        .into_iter()
        .enumerate()
    {
        let mut client = initialized(server.new_session(), name).await;
        let call = client
            .request(
                id as u64 + 1,
                "tools/call",
                json!({"name": "page_size", "arguments": {}}),
            )
            .await;
        sizes.push(page(&call));
    }
    let room = ClientLimits::FOOTER_ROOM as u64;
    assert_eq!(sizes[0], 11_500 - room, "codex");
    assert_eq!(sizes[1], 49_000 - room, "claude-code");
    assert_eq!(sizes[2], 10_500 - room, "unknown client");
}

#[tokio::test]
async fn a_client_named_only_in_request_meta_gets_its_profile() {
    // Regression: Claude Code 2.1 speaks the 2026-07-28 protocol, which has no `initialize`
    // and names the client in each request's `_meta`; the session got the conservative
    // profile, so Claude Code saw structuredContent JSON and pages cut for another client.
    let mut client = connect(server());
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2.1.328"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let discover = client
        .request(0, "server/discover", json!({"_meta": meta}))
        .await;
    assert!(discover.get("result").is_some(), "{discover}");
    let list = client
        .request(1, "tools/list", json!({"_meta": meta}))
        .await;
    assert!(list.get("result").is_some(), "{list}");
    assert!(!listed_output_schema(&list), "{list}");
    let call = client
        .request(
            2,
            "tools/call",
            json!({"name": "paged", "arguments": {}, "_meta": meta}),
        )
        .await;
    assert!(call["result"].get("structuredContent").is_none(), "{call}");
}
