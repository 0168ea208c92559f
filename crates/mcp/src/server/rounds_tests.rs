//! `input_required` rounds with a 2026-07-28 client over stdio: a tool asks through its
//! call's link, the client answers by sending the call again; what a state may and may not
//! be used for.

use serde_json::{Value, json};
use toolgate_core::{
    CallContext, ClientAsk, Concurrency, RenderOptions, Tool, ToolError, ToolMeta, ToolOutput,
    TypedTool,
};
use toolgate_test_support::{dispatcher, registry_with};

use super::tests::{Client, connect};
use crate::ToolgateServer;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Who {
    /// Whom the form is about.
    about: String,
}

/// Asks for a name (key `name`), then, when the first answer is "twice", for a second one.
struct AskName;

fn form(message: &str) -> Value {
    json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}
    })
}

fn accepted(answer: &Value) -> String {
    answer["content"]["name"].as_str().unwrap_or("?").to_owned()
}

impl Tool for AskName {
    type Args = Who;
    type Output = ();
    fn name(&self) -> &str {
        "ask_name"
    }
    fn description(&self) -> &str {
        "Asks the user a name"
    }
    fn meta(&self) -> ToolMeta {
        // Read-only: a call waiting for its answer does not hold up the calls after it.
        ToolMeta {
            concurrency: Concurrency::ReadOnly,
            ..ToolMeta::default()
        }
    }
    async fn call(&self, args: Who, ctx: CallContext) -> Result<ToolOutput, ToolError> {
        let link = ctx
            .client()
            .cloned()
            .ok_or_else(|| ToolError::recoverable("no client"))?;
        let ask = |key: &'static str, message: String| {
            link.request_as(key, ClientAsk::FormElicitation, form(&message))
        };
        let first = ask("name", format!("Name of {}?", args.about))
            .await
            .map_err(|e| ToolError::recoverable(e.to_string()))?;
        let mut names = vec![accepted(&first)];
        if names[0] == "twice" {
            let second = ask("name", "And again?".to_owned())
                .await
                .map_err(|e| ToolError::recoverable(e.to_string()))?;
            names.push(accepted(&second));
        }
        Ok(ToolOutput::text(format!("names: {}", names.join(", "))))
    }
}

/// Asks for a name, then reports progress 1 to 3 and returns.
struct AskThenWork;

impl Tool for AskThenWork {
    type Args = Who;
    type Output = ();
    fn name(&self) -> &str {
        "ask_then_work"
    }
    fn description(&self) -> &str {
        "Asks a name, then works"
    }
    fn meta(&self) -> ToolMeta {
        ToolMeta {
            concurrency: Concurrency::ReadOnly,
            ..ToolMeta::default()
        }
    }
    async fn call(&self, args: Who, ctx: CallContext) -> Result<ToolOutput, ToolError> {
        let link = ctx
            .client()
            .cloned()
            .ok_or_else(|| ToolError::recoverable("no client"))?;
        let answer = link
            .request_as("name", ClientAsk::FormElicitation, form(&args.about))
            .await
            .map_err(|e| ToolError::recoverable(e.to_string()))?;
        if let Some(progress) = &ctx.progress {
            for step in 1..=3 {
                progress(toolgate_core::Progress {
                    progress: f64::from(step),
                    total: Some(3.0),
                    message: None,
                });
            }
        }
        Ok(ToolOutput::text(format!(
            "worked for {}",
            accepted(&answer)
        )))
    }
}

fn server() -> ToolgateServer {
    let registry = registry_with(vec![
        TypedTool::erased(AskName),
        TypedTool::erased(AskThenWork),
    ]);
    ToolgateServer::new(
        dispatcher(registry),
        RenderOptions::default(),
        String::new(),
    )
}

/// The `_meta` of a 2026-07-28 request from a client that handles forms.
fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "0"}
    })
}

async fn call(client: &mut Client, id: u64, about: &str, extra: Value) -> Value {
    let mut params = json!({"name": "ask_name", "arguments": {"about": about}, "_meta": meta()});
    if let (Some(params), Value::Object(extra)) = (params.as_object_mut(), extra) {
        params.extend(extra);
    }
    client.request(id, "tools/call", params).await
}

fn answer(name: &str) -> Value {
    json!({"action": "accept", "content": {"name": name}})
}

#[tokio::test]
async fn a_tool_asks_a_2026_client_in_rounds_and_each_state_is_used_once() {
    let mut client = connect(server());
    let first = call(&mut client, 1, "the cat", json!({})).await;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    assert_eq!(
        result["inputRequests"]["name"]["params"]["message"],
        "Name of the cat?"
    );
    let state = result["requestState"].as_str().expect("a state").to_owned();

    // The answer resumes the call where it waits; a second round gets a new state.
    let extra = json!({"inputResponses": {"name": answer("twice")}, "requestState": state});
    let second = call(&mut client, 2, "the cat", extra.clone()).await;
    let next = second["result"]["requestState"].as_str().expect("round 2");
    assert_ne!(next, state);
    assert_eq!(
        second["result"]["inputRequests"]["name"]["params"]["message"],
        "And again?"
    );
    // The first state was spent.
    let replay = call(&mut client, 3, "the cat", extra).await;
    assert_eq!(replay["error"]["code"], -32602, "{replay}");
    assert!(
        replay["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no longer awaited"),
        "{replay}"
    );

    let extra = json!({"inputResponses": {"name": answer("Tom")}, "requestState": next});
    let done = call(&mut client, 4, "the cat", extra).await;
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "names: twice, Tom");
}

/// Behind a round-robin balancer the follow-up of a round may reach another replica, whose
/// key did not seal the state: it is refused with an error that says so and what to do, and
/// the answers sent again without the state are taken there.
#[tokio::test]
async fn a_state_from_another_replica_is_refused_and_answers_sent_without_it_are_taken() {
    let mut replica_a = connect(server());
    let mut replica_b = connect(server());
    let first = call(&mut replica_a, 1, "the cat", json!({})).await;
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();

    let elsewhere = json!({"inputResponses": {"name": answer("Tom")}, "requestState": state});
    let refused = call(&mut replica_b, 2, "the cat", elsewhere).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("another replica"), "{refused}");
    assert!(message.contains("again without requestState"), "{refused}");

    let up_front = json!({"inputResponses": {"name": answer("Tom")}});
    let done = call(&mut replica_b, 3, "the cat", up_front).await;
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "names: Tom");
}

#[tokio::test]
async fn a_state_is_refused_for_other_arguments_and_when_altered() {
    let mut client = connect(server());
    let first = call(&mut client, 1, "the cat", json!({})).await;
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();

    // Bound to its request: another tool argument makes it someone else's state.
    let borrowed = json!({"inputResponses": {"name": answer("Rex")}, "requestState": state});
    let refused = call(&mut client, 2, "the dog", borrowed).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("integrity check"),
        "{refused}"
    );
    let altered =
        json!({"inputResponses": {"name": answer("Tom")}, "requestState": format!("{state}x")});
    let refused = call(&mut client, 3, "the cat", altered).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");

    // An answer that is not a result is refused and the round stays as it was.
    let bad = json!({"inputResponses": {"name": 12345}, "requestState": state});
    let refused = call(&mut client, 4, "the cat", bad).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("inputResponses.name"),
        "{refused}"
    );
    let good = json!({"inputResponses": {"name": answer("Tom")}, "requestState": state});
    let done = call(&mut client, 5, "the cat", good).await;
    assert_eq!(done["result"]["content"][0]["text"], "names: Tom", "{done}");
}

#[tokio::test]
async fn answers_sent_up_front_are_taken_and_a_missing_one_is_asked_for() {
    let mut client = connect(server());
    // Answered before being asked: no round at all.
    let up_front = json!({"inputResponses": {"name": answer("Tom")}});
    let done = call(&mut client, 1, "the cat", up_front).await;
    assert_eq!(done["result"]["content"][0]["text"], "names: Tom", "{done}");

    // A wrong key is no answer: the question is asked.
    let wrong = json!({"inputResponses": {"other": answer("Tom")}});
    let asked = call(&mut client, 2, "the cat", wrong).await;
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");

    // A client that declared no forms is told the call needs them (-32021).
    let params = json!({
        "name": "ask_name",
        "arguments": {"about": "the cat"},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        }
    });
    let refused = client.request(3, "tools/call", params).await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert!(
        refused["error"]["data"]["requiredCapabilities"]["elicitation"].is_object(),
        "{refused}"
    );
}

#[tokio::test]
async fn a_2025_client_is_asked_mid_call_by_the_same_tool() {
    let mut client = connect(server());
    client
        .initialize("2025-11-25", "test", json!({"elicitation": {"form": {}}}))
        .await;
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "ask_name", "arguments": {"about": "the cat"}}});
    client.send(call).await;
    let asked = client
        .next_where(|m| m["method"] == "elicitation/create")
        .await;
    assert_eq!(asked["params"]["message"], "Name of the cat?");
    client
        .send(json!({"jsonrpc": "2.0", "id": asked["id"], "result": answer("Tom")}))
        .await;
    let done = client.next_where(|m| m["id"] == 7).await;
    assert_eq!(done["result"]["content"][0]["text"], "names: Tom", "{done}");
    assert!(done["result"].get("resultType").is_none(), "{done}");
}

#[tokio::test]
async fn progress_after_a_round_goes_to_the_request_that_answered_it() {
    let mut client = connect(server());
    let params = |extra: Value| {
        let mut params = json!({"name": "ask_then_work", "arguments": {"about": "x"}});
        if let (Some(params), Value::Object(extra)) = (params.as_object_mut(), extra) {
            params.extend(extra);
        }
        params
    };
    let mut meta_first = meta();
    meta_first["progressToken"] = json!("first");
    let (first, _) = client
        .exchange(1, "tools/call", params(json!({"_meta": meta_first})))
        .await;
    let state = first["result"]["requestState"]
        .as_str()
        .expect("a round")
        .to_owned();
    let mut meta_second = meta();
    meta_second["progressToken"] = json!("second");
    let extra = json!({
        "_meta": meta_second,
        "inputResponses": {"name": answer("Ann")},
        "requestState": state,
    });
    let (done, notifications) = client.exchange(2, "tools/call", params(extra)).await;
    assert_eq!(
        done["result"]["content"][0]["text"], "worked for Ann",
        "{done}"
    );
    let progress: Vec<(Value, f64)> = notifications
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .map(|n| {
            let p = &n["params"];
            (p["progressToken"].clone(), p["progress"].as_f64().unwrap())
        })
        .collect();
    let second = json!("second");
    assert_eq!(
        progress,
        [(second.clone(), 1.0), (second.clone(), 2.0), (second, 3.0)],
        "{notifications:?}"
    );
}
