//! The fixtures that ask the client for input, through the call's [`ClientLink`] as any
//! toolgate tool does: a 2025 client gets mid-call requests, a 2026-07-28 client
//! `input_required` results (SEP-2322), from the same code.

use std::sync::{Arc, Weak};

use futures::future::{BoxFuture, join_all};
use rmcp::model::{ContentBlock, GetPromptResult, PromptMessage, Role};
use serde_json::{Value, json};
use toolgate_core::{
    AskError, CallContext, ClientAsk, DynTool, Registry, StaticProvider, ToolOutput,
};
use toolgate_mcp::SourceError;

use crate::fn_tool::{NoArgs, tool};

/// Asks the call's client `ask` under `key`; `Err` is the tool's error result.
async fn ask(
    ctx: &CallContext,
    key: &str,
    ask: ClientAsk,
    params: Value,
) -> Result<Value, AskError> {
    let Some(link) = ctx.client() else {
        return Err(AskError::NotConnected);
    };
    link.request_as(key, ask, params).await
}

fn failed(what: &str, e: &AskError) -> ToolOutput {
    ToolOutput::error(format!("{what} failed: {e}"))
}

fn name_form(message: &str, field: &str) -> Value {
    json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {field: {"type": "string"}},
            "required": [field]
        }
    })
}

fn sampling_params(text: &str, max_tokens: u32) -> Value {
    json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
        "maxTokens": max_tokens
    })
}

/// The accepted form's field `field`, or why there is none.
fn field(answer: &Value, field: &str) -> String {
    if answer.get("action").and_then(Value::as_str) != Some("accept") {
        let action = answer
            .get("action")
            .and_then(Value::as_str)
            .unwrap_or("none");
        return format!("(no answer: {action})");
    }
    answer
        .pointer(&format!("/content/{field}"))
        .map_or_else(String::new, |v| {
            v.as_str().map_or_else(|| v.to_string(), str::to_owned)
        })
}

/// The text of a sampling result.
pub(crate) fn sampled_text(result: &Value) -> String {
    result
        .pointer("/content/text")
        .and_then(Value::as_str)
        .map_or_else(|| result["content"].to_string(), str::to_owned)
}

/// The URIs of a `roots/list` result.
fn root_uris(result: &Value) -> Vec<String> {
    result["roots"]
        .as_array()
        .map(|roots| {
            roots
                .iter()
                .filter_map(|r| r["uri"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// `test_sampling`'s work: the client's model answers `prompt`.
pub(crate) async fn sampling(prompt: &str, ctx: &CallContext) -> ToolOutput {
    match ask(
        ctx,
        "sampling",
        ClientAsk::Sampling,
        sampling_params(prompt, 100),
    )
    .await
    {
        Ok(result) => ToolOutput::text(format!("LLM response: {}", sampled_text(&result))),
        Err(e) => failed("sampling", &e),
    }
}

/// Sends a form with `schema` and reports the answer as `"{label}: …"`.
pub(crate) async fn elicit(
    ctx: &CallContext,
    message: &str,
    schema: Value,
    label: &str,
) -> ToolOutput {
    let params = json!({"mode": "form", "message": message, "requestedSchema": schema});
    match ask(ctx, "elicitation", ClientAsk::FormElicitation, params).await {
        Ok(result) => {
            let action = result["action"].as_str().unwrap_or("unknown");
            let content = result.get("content").cloned().unwrap_or(Value::Null);
            ToolOutput::text(format!("{label}: action={action}, content={content}"))
        }
        Err(e) => failed("elicitation", &e),
    }
}

/// The fixtures of the SEP-2322 and SEP-2575 scenarios. `registry` is the fixture's own,
/// for `test_trigger_tool_change`.
pub(crate) fn tools(registry: Weak<Registry>) -> Vec<Arc<dyn DynTool>> {
    vec![
        tool::<NoArgs, _, _>(
            "test_missing_capability",
            "Needs sampling: a client that did not declare it gets error -32021",
            |_, ctx| async move { sampling("Say hello", &ctx).await },
        ),
        tool::<NoArgs, _, _>(
            "test_input_required_result_elicitation",
            "Asks the user's name, then greets them",
            |_, ctx| async move {
                let form = name_form("What is your name?", "name");
                match ask(&ctx, "user_name", ClientAsk::FormElicitation, form).await {
                    Ok(answer) => ToolOutput::text(format!("Hello, {}!", field(&answer, "name"))),
                    Err(e) => failed("elicitation", &e),
                }
            },
        ),
        tool::<NoArgs, _, _>(
            "test_input_required_result_sampling",
            "Asks the client's model for the capital of France",
            |_, ctx| async move {
                let params = sampling_params("What is the capital of France?", 100);
                match ask(&ctx, "capital_question", ClientAsk::Sampling, params).await {
                    Ok(result) => {
                        ToolOutput::text(format!("The model said: {}", sampled_text(&result)))
                    }
                    Err(e) => failed("sampling", &e),
                }
            },
        ),
        tool::<NoArgs, _, _>(
            "test_input_required_result_list_roots",
            "Lists the client's roots",
            |_, ctx| async move {
                match ask(&ctx, "client_roots", ClientAsk::Roots, json!({})).await {
                    Ok(result) => {
                        ToolOutput::text(format!("Client roots: {}", root_uris(&result).join(", ")))
                    }
                    Err(e) => failed("roots/list", &e),
                }
            },
        ),
        tool::<NoArgs, _, _>(
            "test_input_required_result_request_state",
            "Asks for a confirmation, keeping its state in requestState",
            |_, ctx| async move { confirm(&ctx).await },
        ),
        tool::<NoArgs, _, _>(
            "test_input_required_result_tampered_state",
            "Asks for a confirmation; a tampered requestState is refused",
            |_, ctx| async move { confirm(&ctx).await },
        ),
        tool::<NoArgs, _, _>(
            "test_input_required_result_multiple_inputs",
            "Asks for a name, a greeting and the roots at once",
            |_, ctx| async move {
                let (name, greeting, roots) = futures::join!(
                    ask(
                        &ctx,
                        "user_name",
                        ClientAsk::FormElicitation,
                        name_form("What is your name?", "name")
                    ),
                    ask(
                        &ctx,
                        "greeting",
                        ClientAsk::Sampling,
                        sampling_params("Generate a greeting", 50)
                    ),
                    ask(&ctx, "client_roots", ClientAsk::Roots, json!({})),
                );
                match (name, greeting, roots) {
                    (Ok(name), Ok(greeting), Ok(roots)) => ToolOutput::text(format!(
                        "name={}, greeting={}, roots={}",
                        field(&name, "name"),
                        sampled_text(&greeting),
                        root_uris(&roots).join(", ")
                    )),
                    (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => failed("asking", &e),
                }
            },
        ),
        tool::<NoArgs, _, _>(
            "test_input_required_result_multi_round",
            "Asks for a name, then for a colour",
            |_, ctx| async move {
                let form = name_form("Step 1: What is your name?", "name");
                let name = match ask(&ctx, "step1", ClientAsk::FormElicitation, form).await {
                    Ok(answer) => field(&answer, "name"),
                    Err(e) => return failed("step 1", &e),
                };
                let form = name_form("Step 2: What is your favorite color?", "color");
                match ask(&ctx, "step2", ClientAsk::FormElicitation, form).await {
                    Ok(answer) => {
                        ToolOutput::text(format!("{name} likes {}", field(&answer, "color")))
                    }
                    Err(e) => failed("step 2", &e),
                }
            },
        ),
        tool::<NoArgs, _, _>(
            "test_input_required_result_capabilities",
            "Asks for whatever the client declared: a form, a sample, the roots",
            |_, ctx| async move {
                let Some(link) = ctx.client().cloned() else {
                    return ToolOutput::error("no client to ask");
                };
                let asks = [
                    (
                        "user_name",
                        ClientAsk::FormElicitation,
                        name_form("What is your name?", "name"),
                    ),
                    (
                        "greeting",
                        ClientAsk::Sampling,
                        sampling_params("Generate a greeting", 50),
                    ),
                    ("client_roots", ClientAsk::Roots, json!({})),
                ];
                let asked = asks
                    .into_iter()
                    .filter(|(_, a, _)| link.can_ask(*a).is_ok())
                    .map(|(key, a, params)| {
                        let link = Arc::clone(&link);
                        async move { (key, link.request_as(key, a, params).await) }
                    });
                let answers = join_all(asked).await;
                let got: Vec<String> = answers
                    .iter()
                    .map(|(key, r)| {
                        format!("{key}: {}", if r.is_ok() { "answered" } else { "failed" })
                    })
                    .collect();
                ToolOutput::text(format!(
                    "Asked what the client declared ({})",
                    got.join(", ")
                ))
            },
        ),
        tool::<NoArgs, _, _>(
            "test_trigger_tool_change",
            "Adds or removes the tool `test_dynamic_tool`, so the tool list changes",
            move |_, _| {
                let registry = registry.clone();
                async move {
                    let Some(registry) = registry.upgrade() else {
                        return ToolOutput::error("the registry is gone");
                    };
                    if registry.unregister(None, "dynamic") {
                        return ToolOutput::text("removed test_dynamic_tool");
                    }
                    let dynamic = tool::<NoArgs, _, _>(
                        "test_dynamic_tool",
                        "A tool that comes and goes",
                        |_, _| async { ToolOutput::text("still here") },
                    );
                    match registry.register(
                        None,
                        Arc::new(StaticProvider::new("dynamic", vec![dynamic])),
                        0,
                    ) {
                        Ok(_) => ToolOutput::text("added test_dynamic_tool"),
                        Err(e) => ToolOutput::error(format!("cannot add the tool: {e}")),
                    }
                }
            },
        ),
    ]
}

/// Asks for a confirmation (`confirm`); the state it resumes from is checked by toolgate.
async fn confirm(ctx: &CallContext) -> ToolOutput {
    let form = json!({
        "mode": "form",
        "message": "Please confirm",
        "requestedSchema": {
            "type": "object",
            "properties": {"ok": {"type": "boolean"}},
            "required": ["ok"]
        }
    });
    match ask(ctx, "confirm", ClientAsk::FormElicitation, form).await {
        Ok(answer) => ToolOutput::text(format!(
            "state-ok: the request resumed from its state; ok={}",
            answer.pointer("/content/ok").unwrap_or(&Value::Null)
        )),
        Err(e) => failed("confirmation", &e),
    }
}

/// `test_input_required_result_prompt`: asks the user what context the prompt should use.
/// The user could not be asked for the prompt's context.
#[derive(Debug, thiserror::Error)]
#[error("cannot ask for the context: {0}")]
struct NoContext(#[source] AskError);

pub(crate) fn prompt<'a>(
    ctx: &'a CallContext,
) -> BoxFuture<'a, Result<GetPromptResult, SourceError>> {
    Box::pin(async move {
        let form = name_form("What context should the prompt use?", "context");
        let answer = ask(ctx, "user_context", ClientAsk::FormElicitation, form)
            .await
            .map_err(|e| SourceError::failed(NoContext(e)))?;
        let context = field(&answer, "context");
        Ok(GetPromptResult::new(vec![PromptMessage::new(
            Role::User,
            ContentBlock::text(format!("Use this context: {context}")),
        )]))
    })
}
