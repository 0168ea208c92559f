//! Resources for clients that only call tools (`list_resources`, `read_resource`), the output
//! budget on prompts and resource reads served over MCP, and URIs two servers list.

use std::sync::Arc;

use serde_json::json;
use toolgate_core::{ClientLimits, Policy, ResultBudget, ToolNames};
use toolgate_gateway::{
    CatalogCache, GatewayLimits, LIST_RESOURCES, READ_RESOURCE, ResourceCollision, ServerState,
};

use crate::misbehave::state;
use crate::support::{RigBuilder, fake, setup, stdio};

/// A `fake_server` offering resources named after `tag` (see `offered` in the fake), with
/// `count` numbered ones besides.
fn with_resources(builder: RigBuilder, name: &str, tag: &str, count: usize) -> RigBuilder {
    let mut config = stdio(&fake(), &["normal"], &builder.mark);
    let env = config.env.as_mut().unwrap();
    env.insert("FAKE_RESOURCES".to_owned(), tag.to_owned());
    env.insert("FAKE_RESOURCE_COUNT".to_owned(), count.to_string());
    let log = builder.dir.path().join(format!("{name}.log"));
    env.insert("FAKE_LOG".to_owned(), log.to_string_lossy().into_owned());
    builder.server(name, config)
}

/// The same rules for the dispatcher and for the gateway (as the runtime sets them).
fn rules(builder: RigBuilder, ask: &[&str], deny: &[&str]) -> RigBuilder {
    let list = |l: &[&str]| l.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let policy = Policy::from_lists(&[], &list(ask), &list(deny)).unwrap();
    let limits = GatewayLimits {
        policy: Arc::new(policy.clone()),
        ..GatewayLimits::default()
    };
    builder.limits(limits).policy(policy)
}

#[tokio::test]
async fn tools_only_clients_list_and_read_every_servers_resources() {
    let builder = setup().with_budget();
    let builder = with_resources(builder, "one", "one", 60);
    let builder = with_resources(builder, "two", "two", 0);
    let rig = builder.fake("plain", &["normal"]).build();
    // Nothing is known to offer resources yet: the tools are not offered.
    let names = rig.names();
    assert!(!names.iter().any(|n| n == LIST_RESOURCES), "{names:?}");
    rig.gateway.start_all().await;
    let names = rig.names();
    assert!(names.iter().any(|n| n == LIST_RESOURCES), "{names:?}");
    assert!(names.iter().any(|n| n == READ_RESOURCE), "{names:?}");

    // Page one of everything: 64 + 3 resources (the shared URI once) and 2 templates.
    let out = rig.call(LIST_RESOURCES, json!({})).await;
    assert!(!out.is_error, "{}", out.text);
    assert!(
        out.text
            .starts_with("67 resources and 2 templates from `one`, `two`; entries 1-50 of 69."),
        "{}",
        out.text
    );
    assert!(
        out.text
            .contains("- fake://one/small · small · one · text/plain — A small text of one."),
        "{}",
        out.text
    );
    assert!(
        out.text
            .contains("- fake://one/huge · huge · one · text/plain · 5,000,000 bytes"),
        "{}",
        out.text
    );
    assert!(
        out.text
            .contains("[19 more; next page: list_resources {\"offset\":50}]"),
        "{}",
        out.text
    );
    assert!(!out.text.contains("fake://two/"), "{}", out.text);
    // Page two ends with the templates.
    let out = rig.call(LIST_RESOURCES, json!({"offset": 50})).await;
    assert!(out.text.contains("entries 51-69 of 69"), "{}", out.text);
    assert!(out.text.contains("- fake://two/small"), "{}", out.text);
    assert!(
        out.text.contains(
            "Templates (fill in each {…}, then read_resource the URI):\n- fake://one/item/{name} · item · one · text/plain — One item by name."
        ),
        "{}",
        out.text
    );
    assert!(!out.text.contains("more; next page"), "{}", out.text);
    // By server and by query.
    let out = rig.call(LIST_RESOURCES, json!({"server": "two"})).await;
    assert!(
        out.text
            .starts_with("4 resources and 1 template from `two`."),
        "{}",
        out.text
    );
    assert!(
        out.text.contains(
            "- fake://shared/readme · readme · two · text/markdown · read from `one`, which lists it first\n"
        ),
        "{}",
        out.text
    );
    let out = rig.call(LIST_RESOURCES, json!({"query": "ITEM"})).await;
    assert!(
        out.text
            .starts_with("0 resources and 2 templates from `one`, `two` matching `item`."),
        "{}",
        out.text
    );

    // Reads: listed, by template, binary, and a URI both servers list (read from the first).
    let read = |uri: &str| rig.call(READ_RESOURCE, json!({ "uri": uri }));
    let out = read("fake://one/small").await;
    assert_eq!(
        out.text,
        "[resource fake://one/small (text/plain) from MCP server `one`]\nsmall text of one\n"
    );
    let out = read("fake://two/item/abc").await;
    assert!(out.text.ends_with("\nitem abc of two\n"), "{}", out.text);
    let out = read("fake://two/blob").await;
    assert!(
        out.text.contains("binary, image/png, 8 bytes; not shown"),
        "{}",
        out.text
    );
    let out = read("fake://shared/readme").await;
    assert!(out.text.ends_with("\nreadme of one\n"), "{}", out.text);
    assert!(!rig.fake_log("two").contains("read fake://shared/readme"));

    // 5 MB reaches the model as an excerpt and a pointer to all of it.
    let out = read("fake://one/huge").await;
    assert!(!out.is_error, "{}", out.text);
    let shown = out.text.chars().count();
    assert!(shown < 3_000, "{shown} characters reached the model");
    // The header line and all 5,000,000 characters of the resource.
    let header = "[resource fake://one/huge (text/plain) from MCP server `one`]\n";
    let whole = header.len() + 5_000_000;
    assert!(out.text.starts_with(header), "{}", out.text);
    assert!(
        out.text.contains(&format!(
            "[full output (5,000,{:03} characters",
            whole - 5_000_000
        )),
        "{}",
        out.text
    );
    let spill = &out.spills[0].path;
    let spilled = std::fs::read_to_string(rig.dir.path().join(spill)).unwrap();
    assert_eq!(spilled.len(), whole);
    assert!(spilled.ends_with("line 0156249 of a huge resource\n"));
    rig.finish().await;
}

#[tokio::test]
async fn hostile_arguments_get_errors_that_say_what_to_do() {
    let rig = with_resources(setup(), "one", "one", 0).build();
    rig.gateway.start_all().await;
    let read = |uri: String| rig.call(READ_RESOURCE, json!({ "uri": uri }));
    let cases = [
        (
            read(String::new()).await,
            "`uri` is empty; send a URI from list_resources",
        ),
        (
            read("x".repeat(100_000)).await,
            "`uri` is 100,000 characters long, past the 8,192",
        ),
        (
            read("fake://one/small\n".to_owned()).await,
            "`uri` contains control characters",
        ),
        (
            read("nope://x".to_owned()).await,
            "no mounted MCP server offers the resource `nope://x`; call list_resources",
        ),
        (
            read("fake://one/missing".to_owned()).await,
            "no mounted MCP server offers the resource `fake://one/missing`",
        ),
        (
            rig.call(LIST_RESOURCES, json!({"server": "ghost"})).await,
            "no mounted MCP server is named `ghost`; servers with resources: `one`",
        ),
        (
            rig.call(LIST_RESOURCES, json!({"offset": 1000})).await,
            "`offset` 1000 is past the end: there are 5 entries",
        ),
        (
            rig.call(LIST_RESOURCES, json!({"query": "q".repeat(9_000)}))
                .await,
            "`query` is 9,000 characters long",
        ),
        (
            rig.call(READ_RESOURCE, json!({"url": "fake://one/small"}))
                .await,
            "unknown field `url`",
        ),
    ];
    for (out, expected) in cases {
        assert!(out.is_error, "{}", out.text);
        assert!(
            out.text.contains(expected),
            "{expected:?} not in {}",
            out.text
        );
    }
    rig.finish().await;
}

#[tokio::test]
async fn a_denied_servers_resources_are_invisible_and_unreadable() {
    let builder = rules(setup(), &["mcp__three__*"], &["mcp__two__*"]);
    let builder = with_resources(builder, "one", "one", 0);
    let builder = with_resources(builder, "two", "two", 0);
    let rig = with_resources(builder, "three", "three", 0).build();
    rig.gateway.start_all().await;
    let out = rig.call(LIST_RESOURCES, json!({})).await;
    assert!(!out.text.contains("fake://two/"), "{}", out.text);
    assert!(out.text.contains("fake://one/small"), "{}", out.text);
    let out = rig
        .call(READ_RESOURCE, json!({"uri": "fake://two/small"}))
        .await;
    assert!(out.is_error);
    assert!(
        out.text.contains(
            "permission denied: resources of MCP server `two` are blocked by the rule deny = [\"mcp__two__*\"]"
        ),
        "{}",
        out.text
    );
    assert!(!rig.fake_log("two").contains("read "));
    let out = rig.call(LIST_RESOURCES, json!({"server": "two"})).await;
    assert!(
        out.is_error && out.text.contains("permission denied"),
        "{}",
        out.text
    );
    // `ask` with nobody to ask: not read, and the result says what the user can do.
    let out = rig
        .call(READ_RESOURCE, json!({"uri": "fake://three/small"}))
        .await;
    assert!(out.is_error);
    assert!(
        out.text
            .contains("requires approval by the rule ask = [\"mcp__three__*\"]"),
        "{}",
        out.text
    );
    assert!(!rig.fake_log("three").contains("read "));
    rig.finish().await;
}

#[tokio::test]
async fn rules_with_a_condition_on_the_caller_decide_reads_and_prompts_by_identity() {
    let builder = rules(setup(), &[], &[r#"mcp__two__* unless group = "eng""#]);
    let builder = with_resources(builder, "one", "one", 0);
    let rig = with_resources(builder, "two", "two", 0).build();
    rig.gateway.start_all().await;
    let caller = |group: &str| toolgate_core::Identity {
        subject: format!("{group}-user"),
        issuer: Some("https://idp.example".to_owned()),
        groups: vec![group.to_owned()],
        scopes: Vec::new(),
    };
    let (eng, ops) = (caller("eng"), caller("ops"));
    // Listed for the callers the rule lets through, not for the others.
    let lists = |who| {
        let uris: Vec<String> = rig
            .gateway
            .resources_for(who)
            .into_iter()
            .map(|r| r.uri)
            .collect();
        let prompts: Vec<String> = rig
            .gateway
            .prompts_for(who)
            .into_iter()
            .map(|p| p.name)
            .collect();
        let templates = rig.gateway.resource_templates_for(who);
        (
            uris.iter().any(|u| u.starts_with("fake://two/")),
            prompts.iter().any(|p| p.starts_with("mcp__two__")),
            templates
                .iter()
                .any(|t| t.uri_template.starts_with("fake://two/")),
        )
    };
    assert_eq!(lists(Some(&eng)), (true, true, true));
    assert_eq!(lists(Some(&ops)), (false, false, false));
    assert_eq!(lists(None), (false, false, false));
    let read = |who| rig.gateway.read_resource_as("fake://two/small", None, who);
    assert!(read(Some(&eng)).await.is_ok());
    let refused = read(Some(&ops)).await.unwrap_err().to_string();
    assert!(refused.contains("permission denied"), "{refused}");
    assert!(read(None).await.is_err(), "no identity holds no group");
    let prompt = |who| {
        rig.gateway
            .get_prompt_as("mcp__two__huge_prompt", None, None, who)
    };
    assert!(prompt(Some(&eng)).await.is_ok());
    let refused = prompt(Some(&ops)).await.unwrap_err().to_string();
    assert!(refused.contains(r#"unless group = \"eng\""#), "{refused}");
    rig.finish().await;
}

#[tokio::test]
async fn the_rules_apply_to_resources_and_prompts_served_over_mcp() {
    let builder = rules(setup(), &["mcp__three__*"], &["mcp__two__*"]);
    let builder = with_resources(builder, "one", "one", 0);
    let builder = with_resources(builder, "two", "two", 0);
    let rig = with_resources(builder, "three", "three", 0).build();
    rig.gateway.start_all().await;
    // Denied: neither listed nor read, and the refusal names the rule.
    let uris: Vec<String> = rig.gateway.resources().into_iter().map(|r| r.uri).collect();
    assert!(uris.iter().any(|u| u == "fake://one/small"), "{uris:?}");
    assert!(
        !uris.iter().any(|u| u.starts_with("fake://two/")),
        "{uris:?}"
    );
    let templates = rig.gateway.resource_templates();
    assert!(
        !templates
            .iter()
            .any(|t| t.uri_template.starts_with("fake://two/"))
    );
    // Nor are its templates completed.
    let one_template = templates
        .iter()
        .find(|t| t.uri_template.starts_with("fake://one/"))
        .expect("server one has a template")
        .uri_template
        .clone();
    let two_template = one_template.replacen("fake://one/", "fake://two/", 1);
    let argument = rmcp::model::ArgumentInfo::new("name", "a");
    let refused = rig
        .gateway
        .complete_resource(&two_template, &argument, None)
        .await;
    assert!(refused.is_err(), "{refused:?}");
    let allowed = rig
        .gateway
        .complete_resource(&one_template, &argument, None)
        .await;
    assert!(allowed.is_ok(), "{allowed:?}");
    let refused = rig
        .gateway
        .read_resource("fake://two/small", None)
        .await
        .unwrap_err();
    let text = refused.to_string();
    assert!(
        text.contains("permission denied") && text.contains("deny = [\"mcp__two__*\"]"),
        "{text}"
    );
    assert!(!rig.fake_log("two").contains("read "));
    // `ask`: listed, but nobody can approve over MCP, so it is refused with the rule.
    assert!(
        uris.iter().any(|u| u.starts_with("fake://three/")),
        "{uris:?}"
    );
    let refused = rig
        .gateway
        .read_resource("fake://three/small", None)
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("needs the user's approval"),
        "{refused}"
    );
    assert!(!rig.fake_log("three").contains("read "));
    // Prompts by their names: a denied one is not offered, an `ask` one is refused.
    let prompts: Vec<String> = rig.gateway.prompts().into_iter().map(|p| p.name).collect();
    assert!(
        prompts.iter().any(|p| p == "mcp__one__huge_prompt"),
        "{prompts:?}"
    );
    assert!(
        !prompts.iter().any(|p| p.starts_with("mcp__two__")),
        "{prompts:?}"
    );
    let refused = rig
        .gateway
        .get_prompt("mcp__three__huge_prompt", None, None)
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("ask = [\"mcp__three__*\"]"),
        "{refused}"
    );
    assert!(
        rig.gateway
            .read_resource("fake://one/small", None)
            .await
            .is_ok()
    );
    rig.finish().await;
}

/// A client may ask for a prompt or read a resource before its server has listed anything
/// (a cold catalog, the server still starting): the request waits for the server, as a tool
/// call does, instead of being refused as unknown at once.
#[tokio::test]
async fn a_prompt_or_a_read_waits_for_its_server_to_start() {
    let builder = with_resources(setup(), "one", "one", 0);
    let builder = with_resources(builder, "two", "two", 0);
    let rig = builder.build();
    assert!(rig.gateway.prompts().is_empty(), "nothing listed yet");
    let prompt = rig
        .gateway
        .get_prompt("mcp__one__huge_prompt", None, None)
        .await;
    assert!(prompt.is_ok_and(|p| !p.messages.is_empty()));
    assert_eq!(state(&rig, "one"), ServerState::Ready);
    let read = rig.gateway.read_resource("fake://two/small", None).await;
    assert!(read.is_ok_and(|c| !c.is_empty()));
    assert_eq!(state(&rig, "two"), ServerState::Ready);
    // A name no server has is still refused, once every server is known.
    let unknown = rig
        .gateway
        .get_prompt("mcp__one__nothing", None, None)
        .await;
    assert!(
        unknown
            .unwrap_err()
            .to_string()
            .contains("has a prompt named")
    );
    rig.finish().await;
}

#[tokio::test]
async fn the_tools_are_not_offered_when_no_allowed_server_has_resources() {
    let builder = rules(setup(), &[], &["mcp__one__*"]);
    let builder = with_resources(builder, "one", "one", 0);
    let rig = builder.fake("plain", &["normal"]).build();
    rig.gateway.start_all().await;
    assert_eq!(state(&rig, "one"), ServerState::Ready);
    assert_eq!(state(&rig, "plain"), ServerState::Ready);
    let names = rig.names();
    assert!(
        !names
            .iter()
            .any(|n| n == LIST_RESOURCES || n == READ_RESOURCE),
        "{names:?}"
    );
    rig.finish().await;
}

#[tokio::test]
async fn prompts_and_resource_reads_served_over_mcp_fit_the_budget() {
    let builder = with_resources(setup(), "one", "one", 0);
    let spill_dir = builder.dir.path().join("spill");
    let rig = builder.build();
    let limits = toolgate_budget::BudgetLimits::default();
    let store = Arc::new(toolgate_budget::SpillStore::new(
        spill_dir.clone(),
        limits.spill_quota_bytes,
    ));
    let budget: Arc<dyn ResultBudget> = Arc::new(toolgate_budget::Budget::new(
        limits,
        store,
        rig.dir.path().to_path_buf(),
    ));
    rig.gateway.use_budget(budget);
    rig.gateway.start_all().await;

    let text_of = |contents: &[rmcp::model::ResourceContents]| match &contents[0] {
        rmcp::model::ResourceContents::TextResourceContents { text, .. } => text.clone(),
        other => panic!("not text: {other:?}"),
    };
    let contents = rig
        .gateway
        .read_resource_for(
            "fake://one/huge",
            None,
            ClientLimits::default(),
            &ToolNames::default(),
            None,
        )
        .await
        .unwrap();
    let text = text_of(&contents);
    assert!(
        text.chars().count() < 2_500,
        "{} characters",
        text.chars().count()
    );
    assert!(
        text.starts_with("line 0000000 of a huge resource\n"),
        "{text}"
    );
    assert!(
        text.contains("[full output (5,000,000 characters"),
        "{text}"
    );
    assert!(text.contains("saved to `spill/"), "{text}");
    // A client that passes on less gets a shorter excerpt.
    let small = ClientLimits {
        result_chars: Some(1_000),
        error_chars: Some(1_000),
    };
    let contents = rig
        .gateway
        .read_resource_for("fake://one/huge", None, small, &ToolNames::default(), None)
        .await
        .unwrap();
    assert!(text_of(&contents).len() <= 1_000, "{}", text_of(&contents));
    // Small texts and binary contents pass unchanged.
    let contents = rig
        .gateway
        .read_resource_for(
            "fake://one/small",
            None,
            ClientLimits::default(),
            &ToolNames::default(),
            None,
        )
        .await
        .unwrap();
    assert_eq!(text_of(&contents), "small text of one");
    let contents = rig
        .gateway
        .read_resource_for(
            "fake://one/blob",
            None,
            ClientLimits::default(),
            &ToolNames::default(),
            None,
        )
        .await
        .unwrap();
    assert!(matches!(
        &contents[0],
        rmcp::model::ResourceContents::BlobResourceContents { blob, .. } if blob == "iVBORw0KGgo="
    ));

    let prompt = rig
        .gateway
        .get_prompt_for(
            "mcp__one__huge_prompt",
            None,
            None,
            ClientLimits::default(),
            &ToolNames::default(),
            None,
        )
        .await
        .unwrap();
    let texts: Vec<String> = prompt
        .messages
        .iter()
        .map(|m| match &m.content {
            rmcp::model::ContentBlock::Text(t) => t.text.clone(),
            other => panic!("not text: {other:?}"),
        })
        .collect();
    assert!(texts[0].chars().count() < 2_500, "{}", texts[0]);
    assert!(
        texts[0].contains("[full output (5,000,000 characters"),
        "{}",
        texts[0]
    );
    assert_eq!(texts[1], "short question");
    rig.finish().await;
}

#[tokio::test]
async fn a_uri_two_servers_list_is_reported_with_the_server_it_is_read_from() {
    let builder = with_resources(setup(), "one", "one", 0);
    let builder = with_resources(builder, "two", "two", 0);
    let rig = builder.build();
    rig.gateway.start_all().await;
    assert_eq!(
        rig.gateway.resource_collisions(),
        [ResourceCollision {
            uri: "fake://shared/readme".to_owned(),
            read_from: "one".to_owned(),
            also_listed_by: vec!["two".to_owned()],
        }]
    );
    // Regression: the read went to the last server that listed it, not the first.
    let contents = rig
        .gateway
        .read_resource("fake://shared/readme", None)
        .await
        .unwrap();
    assert!(
        matches!(&contents[0], rmcp::model::ResourceContents::TextResourceContents { text, .. } if text == "readme of one"),
        "{contents:?}"
    );
    rig.finish().await;
}

#[tokio::test]
async fn the_catalog_cache_offers_the_resource_tools_before_the_server_answers() {
    let cache_dir = tempfile::tempdir().unwrap();
    let workdir = tempfile::tempdir().unwrap();
    let first = setup();
    let mark = first.mark.clone();
    let mut config = stdio(&fake(), &["normal"], &mark);
    config.cwd = Some(workdir.path().to_path_buf());
    config
        .env
        .as_mut()
        .unwrap()
        .insert("FAKE_RESOURCES".to_owned(), "one".to_owned());
    let cache = || CatalogCache::new(cache_dir.path().to_path_buf());

    // First run: the tools appear when the server has answered; the cache learns it.
    let rig = first.server("srv", config.clone()).catalog(cache()).build();
    assert!(!rig.names().iter().any(|n| n == LIST_RESOURCES));
    rig.gateway.start_all().await;
    assert!(rig.names().iter().any(|n| n == LIST_RESOURCES));
    rig.gateway.shutdown().await;

    // Second run: offered at once, and the server's answer changes nothing (no list_changed).
    let mut second = setup();
    second.mark = mark;
    let rig = second.server("srv", config).catalog(cache()).build();
    assert_eq!(rig.gateway.cached_servers(), 1);
    // Its resources and templates too, for a session's first `resources/list`.
    let listed: Vec<String> = rig
        .gateway
        .resources()
        .iter()
        .map(|r| r.uri.clone())
        .collect();
    assert!(listed.iter().any(|u| u == "fake://one/small"), "{listed:?}");
    assert!(!rig.gateway.resource_templates().is_empty());
    let resource_changes = rig.gateway.resource_changes();
    let names = rig.names();
    assert!(names.iter().any(|n| n == LIST_RESOURCES), "{names:?}");
    assert!(names.iter().any(|n| n == READ_RESOURCE), "{names:?}");
    rig.gateway.start();
    let before = rig.registry.generation();
    // A listing waits for the server the cache promised resources of, as a call would.
    let out = rig.call(LIST_RESOURCES, json!({})).await;
    assert!(out.text.contains("- fake://one/small"), "{}", out.text);
    rig.gateway.settled().await;
    assert_eq!(state(&rig, "srv"), ServerState::Ready);
    assert_eq!(rig.registry.generation(), before, "the cache was right");
    assert!(
        !resource_changes.has_changed().unwrap(),
        "the cached resources were the server's: no resources list_changed"
    );
    let out = rig
        .call(READ_RESOURCE, json!({"uri": "fake://one/small"}))
        .await;
    assert!(out.text.ends_with("\nsmall text of one\n"), "{}", out.text);
    rig.finish().await;
}

#[tokio::test]
async fn the_resource_tools_are_pinned_as_a_client_sees_them() {
    let rig = with_resources(setup(), "one", "one", 0).build();
    rig.gateway.start_all().await;
    let snapshot = rig.dispatcher.snapshot();
    let tools: Vec<&dyn toolgate_core::DynTool> = [LIST_RESOURCES, READ_RESOURCE]
        .iter()
        .map(|name| snapshot.get(name).unwrap().as_ref())
        .collect();
    let options = toolgate_core::RenderOptions::default();
    let rendered =
        toolgate_core::render_tools(tools.clone(), toolgate_core::Protocol::Mcp, &options);
    insta::assert_json_snapshot!(rendered);
    // What the two add to a tools array when they are direct (disclosure off).
    let bytes =
        toolgate_core::render_tools_bytes(tools, toolgate_core::Protocol::Mcp, &options).len();
    assert!(bytes < 2_000, "{bytes} bytes");
    rig.finish().await;
}

/// Says yes, and keeps what it was asked.
#[derive(Default)]
struct Yes(std::sync::Mutex<Vec<toolgate_core::ApprovalRequest>>);

impl toolgate_core::Approver for Yes {
    fn approve(
        &self,
        request: toolgate_core::ApprovalRequest,
    ) -> futures::future::BoxFuture<'static, bool> {
        self.0.lock().unwrap().push(request);
        Box::pin(async { true })
    }
}

#[tokio::test]
async fn an_ask_rule_asks_once_per_read() {
    for (ask, asked_for) in [
        (
            "mcp__one__*",
            json!({"uri": "fake://one/small", "server": "one"}),
        ),
        ("mcp.read", json!({"uri": "fake://one/small"})),
    ] {
        let rig = with_resources(rules(setup(), &[ask], &[]), "one", "one", 0).build();
        rig.gateway.start_all().await;
        let yes = Arc::new(Yes::default());
        let session = toolgate_core::Session::new(toolgate_core::SessionInit {
            approval: toolgate_core::Approval::By(yes.clone()),
            profile: None,
            client: None,
            identity: None,
            rate_key: None,
        });
        let out = rig
            .dispatcher
            .call(
                READ_RESOURCE,
                toolgate_core::RawArgs::Json(json!({"uri": "fake://one/small"})),
                toolgate_core::CallContext::new(session),
            )
            .await;
        assert!(out.text.ends_with("\nsmall text of one\n"), "{}", out.text);
        let asked = yes.0.lock().unwrap().clone();
        assert_eq!(asked.len(), 1, "{ask}: {asked:?}");
        assert_eq!(asked[0].args, asked_for, "{ask}");
        rig.finish().await;
    }
}
