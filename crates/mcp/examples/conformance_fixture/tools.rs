//! The suite's `test_*` tools as typed toolgate tools.
//!
//! Most fixtures are one async function each, wrapped by [`tool`] (`fn_tool.rs`) into a tool whose
//! arguments (and so schema) come from a serde + schemars struct, as every toolgate tool's
//! do. The JSON Schema 2020-12 fixture is a hand-written [`DynTool`], since its schema
//! (`$schema`, `$defs`) is literal by design.

use std::sync::{Arc, Weak};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate_core::{
    CallContext, DynTool, Media, Registry, ToolError, ToolMeta, ToolOutput, ToolSpec,
};
use toolgate_mcp::{LogLevel, McpClient};

use crate::RED_PIXEL_PNG;
use crate::asking;
use crate::fn_tool::{NoArgs, fixture_meta, tool};

/// Every fixture tool, ready for a `StaticProvider`; `registry` is the one they are
/// registered in (`test_trigger_tool_change` changes it).
pub(crate) fn all(registry: Weak<Registry>) -> Vec<Arc<dyn DynTool>> {
    let mut tools = vec![
        tool::<NoArgs, _, _>("test_simple_text", "Returns simple text", |_, _| async {
            ToolOutput::text("This is a simple text response for testing.")
        }),
        tool::<NoArgs, _, _>("test_image_content", "Returns an image", |_, _| async {
            with_media("A 1x1 red PNG.", vec![red_pixel()])
        }),
        tool::<NoArgs, _, _>("test_audio_content", "Returns audio", |_, _| async {
            with_media(
                "A short WAV.",
                vec![Media::Audio {
                    mime: "audio/wav".into(),
                    data: BASE64.encode(tiny_wav()),
                }],
            )
        }),
        tool::<NoArgs, _, _>(
            "test_embedded_resource",
            "Returns an embedded resource",
            |_, _| async {
                with_media(
                    "An embedded resource follows.",
                    vec![Media::Blob {
                        uri: "test://embedded-resource".into(),
                        mime: "text/plain".into(),
                        data: BASE64.encode("This is an embedded resource content."),
                    }],
                )
            },
        ),
        tool::<NoArgs, _, _>(
            "test_multiple_content_types",
            "Returns text, an image and a resource",
            |_, _| async {
                with_media(
                    "Multiple content types test:",
                    vec![
                        red_pixel(),
                        Media::Blob {
                            uri: "test://mixed-content-resource".into(),
                            mime: "application/json".into(),
                            data: BASE64.encode(r#"{"test":"data","value":123}"#),
                        },
                    ],
                )
            },
        ),
        tool::<NoArgs, _, _>(
            "test_tool_with_logging",
            "Sends three log messages while running",
            |_, ctx| async move {
                let client = McpClient::of(&ctx);
                let steps = [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ];
                for (i, step) in steps.into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    client
                        .log(LogLevel::Info, Some("test_tool_with_logging"), json!(step))
                        .await;
                }
                ToolOutput::text("Logging test completed: sent 3 log messages.")
            },
        ),
        tool::<NoArgs, _, _>("test_error_handling", "Always fails", |_, _| async {
            ToolOutput::error("This tool intentionally returns an error for testing")
        }),
        tool::<NoArgs, _, _>(
            "test_tool_with_progress",
            "Reports progress 0, 50, 100 of 100",
            |_, ctx| async move {
                for (i, progress) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    ctx.report(progress, Some(100.0), None);
                }
                ToolOutput::text("Progress test completed.")
            },
        ),
        tool::<SamplingArgs, _, _>(
            "test_sampling",
            "Asks the client's LLM to answer a prompt",
            |args, ctx| async move { asking::sampling(&args.prompt, &ctx).await },
        ),
        tool::<ElicitationArgs, _, _>(
            "test_elicitation",
            "Asks the user for a username and an email",
            |args, ctx| async move {
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "username": {"type": "string", "description": "User's response"},
                        "email": {"type": "string", "description": "User's email address"}
                    },
                    "required": ["username", "email"]
                });
                asking::elicit(&ctx, &args.message, schema, "User response").await
            },
        ),
        tool::<NoArgs, _, _>(
            "test_elicitation_sep1034_defaults",
            "Elicitation whose fields all have defaults (SEP-1034)",
            |_, ctx| async move {
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "default": "John Doe"},
                        "age": {"type": "integer", "default": 30},
                        "score": {"type": "number", "default": 95.5},
                        "status": {
                            "type": "string",
                            "enum": ["active", "inactive", "pending"],
                            "default": "active"
                        },
                        "verified": {"type": "boolean", "default": true}
                    }
                });
                asking::elicit(
                    &ctx,
                    "Please review your details",
                    schema,
                    "Elicitation completed",
                )
                .await
            },
        ),
        tool::<NoArgs, _, _>(
            "test_elicitation_sep1330_enums",
            "Elicitation with every enum form (SEP-1330)",
            |_, ctx| async move {
                let titled = |prefix: &str, titles: [&str; 3]| {
                    (1..=3)
                        .zip(titles)
                        .map(|(i, title)| json!({"const": format!("{prefix}{i}"), "title": title}))
                        .collect::<Vec<_>>()
                };
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "untitledSingle": {
                            "type": "string",
                            "enum": ["option1", "option2", "option3"]
                        },
                        "titledSingle": {
                            "type": "string",
                            "oneOf": titled("value", ["First Option", "Second Option", "Third Option"])
                        },
                        "legacyEnum": {
                            "type": "string",
                            "enum": ["opt1", "opt2", "opt3"],
                            "enumNames": ["Option One", "Option Two", "Option Three"]
                        },
                        "untitledMulti": {
                            "type": "array",
                            "items": {"type": "string", "enum": ["option1", "option2", "option3"]}
                        },
                        "titledMulti": {
                            "type": "array",
                            "items": {
                                "anyOf": titled("value", ["First Choice", "Second Choice", "Third Choice"])
                            }
                        }
                    }
                });
                asking::elicit(&ctx, "Please choose", schema, "Elicitation completed").await
            },
        ),
        Arc::new(JsonSchema2020Tool::new()),
    ];
    tools.extend(asking::tools(registry));
    tools
}

/// Arguments of `test_sampling`.
#[derive(Deserialize, JsonSchema)]
struct SamplingArgs {
    /// The prompt to send to the LLM.
    prompt: String,
}

/// Arguments of `test_elicitation`.
#[derive(Deserialize, JsonSchema)]
struct ElicitationArgs {
    /// The message to show the user.
    message: String,
}

fn with_media(text: &str, media: Vec<Media>) -> ToolOutput {
    ToolOutput {
        media,
        ..ToolOutput::text(text)
    }
}

fn red_pixel() -> Media {
    Media::Image {
        mime: "image/png".into(),
        data: RED_PIXEL_PNG.into(),
    }
}

/// A 10 ms, 8 kHz, 8-bit mono WAV of silence.
fn tiny_wav() -> Vec<u8> {
    let samples = [128u8; 80];
    let mut wav = Vec::with_capacity(44 + samples.len());
    let len = |n: usize| u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes();
    wav.extend_from_slice(b"RIFF");
    wav.extend_from_slice(&len(36 + samples.len()));
    wav.extend_from_slice(b"WAVEfmt ");
    wav.extend_from_slice(&16u32.to_le_bytes()); // fmt chunk size
    wav.extend_from_slice(&1u16.to_le_bytes()); // PCM
    wav.extend_from_slice(&1u16.to_le_bytes()); // mono
    wav.extend_from_slice(&8000u32.to_le_bytes()); // sample rate
    wav.extend_from_slice(&8000u32.to_le_bytes()); // byte rate
    wav.extend_from_slice(&1u16.to_le_bytes()); // block align
    wav.extend_from_slice(&8u16.to_le_bytes()); // bits per sample
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&len(samples.len()));
    wav.extend_from_slice(&samples);
    wav
}

/// `json_schema_2020_12_tool`: a tool whose input schema uses 2020-12 keywords (`$schema`,
/// `$defs`, `$ref`), which must reach `tools/list` unchanged (SEP-1613).
struct JsonSchema2020Tool {
    spec: ToolSpec,
    meta: ToolMeta,
}

impl JsonSchema2020Tool {
    fn new() -> Self {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
                }
            },
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"}
            },
            "additionalProperties": false
        });
        let schema = schema.as_object().cloned().unwrap_or_default();
        Self {
            spec: ToolSpec {
                name: "json_schema_2020_12_tool".into(),
                description: "Tool with JSON Schema 2020-12 features".into(),
                input_schema: Arc::new(schema),
            },
            meta: fixture_meta(),
        }
    }
}

impl DynTool for JsonSchema2020Tool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn meta(&self) -> &ToolMeta {
        &self.meta
    }

    fn call(
        &self,
        args: Value,
        _ctx: CallContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        Box::pin(async move { Ok(ToolOutput::text(format!("Received: {args}"))) })
    }
}
