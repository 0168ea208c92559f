//! What the gateway forwards beside tools, against `server-everything`: completion of its
//! prompt and template arguments (with the context), and subscriptions to its resources,
//! whose updates come back on the gateway's update stream.

use std::time::Duration;

use rmcp::model::{ArgumentInfo, CompletionContext};
use serde_json::json;
use toolgate_gateway::ForwardError;

use crate::support::{node, npm_server, setup, stdio};

/// A guard against a hang, not a speed goal.
const GUARD: Duration = Duration::from_secs(120);

#[tokio::test]
async fn completion_reaches_everything_with_the_prompts_own_name_and_the_context() {
    let builder = setup();
    let config = stdio(
        &node(),
        &[&npm_server("server-everything"), "stdio"],
        &builder.mark,
    );
    let rig = builder.server("everything", config).build();
    rig.gateway.start_all().await;
    let name = "mcp__everything__completable-prompt";
    assert!(rig.gateway.prompts().iter().any(|p| p.name == name));

    let got = rig
        .gateway
        .complete_prompt(name, &ArgumentInfo::new("department", "E"), None)
        .await
        .unwrap();
    assert_eq!(got.values, ["Engineering"]);
    // The second argument's values depend on the first, given as context.
    let context =
        CompletionContext::with_arguments([("department".to_owned(), "Sales".to_owned())].into());
    let got = rig
        .gateway
        .complete_prompt(name, &ArgumentInfo::new("name", ""), Some(&context))
        .await
        .unwrap();
    assert_eq!(got.values, ["David", "Eve", "Frank"]);

    let template = "demo://resource/dynamic/text/{resourceId}";
    assert!(
        rig.gateway
            .resource_templates()
            .iter()
            .any(|t| t.uri_template == template)
    );
    let got = rig
        .gateway
        .complete_resource(template, &ArgumentInfo::new("resourceId", "7"), None)
        .await
        .unwrap();
    assert_eq!(got.values, ["7"]);

    let unknown = rig
        .gateway
        .complete_prompt("mcp__everything__nope", &ArgumentInfo::new("a", ""), None)
        .await
        .unwrap_err();
    assert!(
        matches!(unknown, ForwardError::UnknownPrompt { .. }),
        "{unknown}"
    );
    rig.finish().await;
}

#[tokio::test]
async fn a_followed_resource_of_everything_reports_its_updates() {
    let builder = setup();
    let config = stdio(
        &node(),
        &[&npm_server("server-everything"), "stdio"],
        &builder.mark,
    );
    let rig = builder.server("everything", config).build();
    rig.gateway.start_all().await;
    let uri = rig
        .gateway
        .resources()
        .first()
        .map(|r| r.uri.clone())
        .expect("server-everything lists resources");
    let mut updates = rig.gateway.resource_updates();
    // Two followers, one upstream subscription; the updates arrive while either holds on.
    let first = rig.gateway.follow(&uri).await.unwrap();
    let second = rig.gateway.follow(&uri).await.unwrap();
    let out = rig
        .call("mcp__everything__toggle-subscriber-updates", json!({}))
        .await;
    assert!(out.text.contains("Started"), "{}", out.text);
    let got = tokio::time::timeout(GUARD, updates.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got, uri);
    drop(first);
    // Still followed by the second: an update after the drop (they come every 5 s) arrives.
    let mut later = updates.resubscribe();
    let got = tokio::time::timeout(GUARD, later.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got, uri);
    drop(second);

    // A URI nobody serves cannot be followed.
    let unknown = rig.gateway.follow("nope://x").await.unwrap_err();
    assert!(
        matches!(unknown, ForwardError::UnknownResource { .. }),
        "{unknown}"
    );
    rig.finish().await;
}
