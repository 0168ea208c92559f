//! Rendering: what each protocol's model sees, byte-deterministic, free of host fields.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use toolgate_core::{
    CallContext, DynTool, Protocol, RenderOptions, Tool, ToolError, ToolMeta, ToolOutput,
    TypedTool, render_tools, render_tools_bytes,
};

use crate::fixtures::{NoArgs, ReadFile, Slow, WriteNote, raw_tool};

const PROTOCOLS: [Protocol; 3] = [Protocol::OpenAi, Protocol::Anthropic, Protocol::Mcp];

fn fixture_tools(write_timeout: Option<Duration>) -> Vec<Arc<dyn DynTool>> {
    vec![
        TypedTool::erased(WriteNote {
            timeout: write_timeout,
        }),
        TypedTool::erased(ReadFile),
    ]
}

fn bytes(tools: &[Arc<dyn DynTool>], protocol: Protocol) -> Vec<u8> {
    render_tools_bytes(
        tools.iter().map(|t| t.as_ref()),
        protocol,
        &RenderOptions::default(),
    )
}

fn pretty(tools: &[Arc<dyn DynTool>], protocol: Protocol) -> String {
    let array = render_tools(
        tools.iter().map(|t| t.as_ref()),
        protocol,
        &RenderOptions::default(),
    );
    serde_json::to_string_pretty(&Value::Array(array)).unwrap()
}

#[test]
fn openai_tools_snapshot() {
    insta::assert_snapshot!(pretty(&fixture_tools(None), Protocol::OpenAi));
}

#[test]
fn anthropic_tools_snapshot() {
    insta::assert_snapshot!(pretty(&fixture_tools(None), Protocol::Anthropic));
}

#[test]
fn mcp_tools_snapshot() {
    insta::assert_snapshot!(pretty(&fixture_tools(None), Protocol::Mcp));
}

#[test]
fn rendering_is_byte_deterministic_whatever_the_insertion_order() {
    let forward = fixture_tools(None);
    let mut backward = fixture_tools(None);
    backward.reverse();
    for protocol in PROTOCOLS {
        let first = bytes(&forward, protocol);
        assert_eq!(first, bytes(&forward, protocol), "{protocol:?}");
        assert_eq!(first, bytes(&backward, protocol), "{protocol:?}");
        // Bytes are the compact form of the rendered array, in name order.
        let parsed: Value = serde_json::from_slice(&first).unwrap();
        let array = parsed.as_array().unwrap();
        assert_eq!(array.len(), 2);
        let text = String::from_utf8(first).unwrap();
        assert!(text.find("read_file").unwrap() < text.find("write_note").unwrap());
        assert!(!text.contains('\n'));
    }
}

#[test]
fn no_host_field_leaks_into_openai_or_anthropic() {
    let tools = fixture_tools(Some(Duration::from_secs(7)));
    for protocol in [Protocol::OpenAi, Protocol::Anthropic] {
        let text = String::from_utf8(bytes(&tools, protocol)).unwrap();
        for host in [
            "timeout",
            "outputSchema",
            "output_schema",
            "annotations",
            "spillable",
            "action",
            "fs.read",
            "fs.write",
            "Hint",
            "idempotent",
            "destructive",
            "concurrency",
            "Read file",
        ] {
            assert!(!text.contains(host), "{protocol:?} leaks {host:?}: {text}");
        }
    }
}

#[test]
fn runtime_settings_leave_rendered_bytes_identical() {
    let short = fixture_tools(None);
    let long = fixture_tools(Some(Duration::from_secs(600)));
    let slow_a: Vec<Arc<dyn DynTool>> = vec![TypedTool::erased(Slow { timeout: None })];
    let slow_b: Vec<Arc<dyn DynTool>> = vec![TypedTool::erased(Slow {
        timeout: Some(Duration::from_millis(50)),
    })];
    for protocol in PROTOCOLS {
        assert_eq!(
            bytes(&short, protocol),
            bytes(&long, protocol),
            "{protocol:?}"
        );
        assert_eq!(
            bytes(&slow_a, protocol),
            bytes(&slow_b, protocol),
            "{protocol:?}"
        );
    }
}

/// The rendered description of the only tool in `rendered`.
fn description_of(rendered: &[Value], protocol: Protocol) -> String {
    let tool = &rendered[0];
    let description = match protocol {
        Protocol::OpenAi => &tool["function"]["description"],
        _ => &tool["description"],
    };
    description.as_str().unwrap().to_owned()
}

#[test]
fn description_over_the_budget_is_cut_with_a_visible_marker() {
    let long = format!("Start of a long story. {}", "word ".repeat(40));
    let total = long.chars().count();
    assert!(total > 120);
    let tool: Arc<dyn DynTool> = Arc::new(raw_tool("verbose", &long, json!({"type": "object"})));
    let options = RenderOptions {
        description_budget: 120,
    };
    for protocol in PROTOCOLS {
        let rendered = render_tools([tool.as_ref()], protocol, &options);
        let cut = description_of(&rendered, protocol);
        assert!(cut.chars().count() <= 120, "{protocol:?}: {cut}");
        assert!(cut.starts_with("Start of a long story."), "{cut}");
        assert!(
            cut.ends_with(&format!("[…description cut: {total} characters]")),
            "{cut}"
        );
    }
    // Within the budget nothing changes.
    let fits = RenderOptions {
        description_budget: total,
    };
    for protocol in PROTOCOLS {
        let rendered = render_tools([tool.as_ref()], protocol, &fits);
        assert_eq!(description_of(&rendered, protocol), long);
    }
}

#[test]
fn description_budget_counts_characters_not_bytes() {
    let text = "é".repeat(100);
    let tool: Arc<dyn DynTool> = Arc::new(raw_tool("accents", &text, json!({"type": "object"})));
    let options = RenderOptions {
        description_budget: 100,
    };
    let rendered = render_tools([tool.as_ref()], Protocol::Anthropic, &options);
    assert_eq!(description_of(&rendered, Protocol::Anthropic), text);
}

/// A tool whose structured output is not an object.
struct Plain;

impl Tool for Plain {
    type Args = NoArgs;
    type Output = String;

    fn name(&self) -> &str {
        "plain"
    }
    fn description(&self) -> &str {
        "Returns plain text."
    }
    fn meta(&self) -> ToolMeta {
        ToolMeta::default()
    }
    async fn call(&self, _args: NoArgs, _ctx: CallContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("plain"))
    }
}

/// A tool with no structured output at all.
struct Unit;

impl Tool for Unit {
    type Args = NoArgs;
    type Output = ();

    fn name(&self) -> &str {
        "unit"
    }
    fn description(&self) -> &str {
        "Returns nothing structured."
    }
    fn meta(&self) -> ToolMeta {
        ToolMeta::default()
    }
    async fn call(&self, _args: NoArgs, _ctx: CallContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("done"))
    }
}

#[test]
fn regression_mcp_output_schema_is_absent_or_an_object_schema() {
    // MCP clients (the TypeScript SDK among them) reject a tools/list whose outputSchema is
    // not `"type": "object"`, and structuredContent is always an object.
    let tools: Vec<Arc<dyn DynTool>> = vec![
        TypedTool::erased(Plain),
        TypedTool::erased(Unit),
        TypedTool::erased(ReadFile),
    ];
    let rendered = render_tools(
        tools.iter().map(|t| t.as_ref()),
        Protocol::Mcp,
        &RenderOptions::default(),
    );
    for tool in &rendered {
        if let Some(schema) = tool.get("outputSchema") {
            assert_eq!(schema["type"], "object", "{tool}");
        }
    }
    // A real object output keeps its schema.
    let read = rendered.iter().find(|t| t["name"] == "read_file").unwrap();
    assert_eq!(read["outputSchema"]["properties"]["text"]["type"], "string");
}

#[test]
fn regression_args_rustdoc_stays_out_of_the_input_schema() {
    // The Args struct's `///` doc ("Arguments of [`ReadFile`].") is for developers; the
    // field docs are for the model.
    let tools = fixture_tools(None);
    for protocol in PROTOCOLS {
        let text = String::from_utf8(bytes(&tools, protocol)).unwrap();
        assert!(!text.contains("Arguments of"), "{protocol:?}: {text}");
        assert!(
            text.contains("File to read, relative to the project root."),
            "{text}"
        );
    }
}
