//! `toolgate tools` and `toolgate call`: the same pipeline as the server, for humans.

use std::io::Read;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use serde_json::{Value, json};
use toolgate_config::Runtime;
use toolgate_core::{CallContext, Protocol, RawArgs, render_tools};

/// Arguments of `toolgate tools`.
#[derive(Debug, Args)]
pub struct ToolsArgs {
    /// Print the tool array as JSON, rendered for a protocol (default: the MCP tools/list).
    #[arg(long)]
    json: bool,
    /// Which protocol's rendering `--json` prints.
    #[arg(long, value_enum, default_value_t = Format::Mcp, requires = "json")]
    format: Format,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    Mcp,
    Openai,
    Anthropic,
}

/// Arguments of `toolgate call`.
#[derive(Debug, Args)]
pub struct CallArgs {
    /// Tool name, as listed by `toolgate tools`.
    name: String,
    /// Arguments as one JSON object, or `-` to read them from stdin (default: `{}`).
    args: Option<String>,
    /// Print the whole result as JSON (content, structuredContent, isError).
    #[arg(long)]
    json: bool,
}

/// Lists the tools.
pub fn tools(runtime: &Runtime, args: &ToolsArgs) -> ExitCode {
    let snapshot = runtime.dispatcher.snapshot();
    if args.json {
        let protocol = match args.format {
            Format::Mcp => Protocol::Mcp,
            Format::Openai => Protocol::OpenAi,
            Format::Anthropic => Protocol::Anthropic,
        };
        let array = render_tools(
            snapshot.tools.values().map(|t| t.as_ref()),
            protocol,
            &runtime.render,
        );
        let body = match protocol {
            Protocol::Mcp => json!({ "tools": array }),
            _ => Value::Array(array),
        };
        println!(
            "{}",
            serde_json::to_string_pretty(&body).unwrap_or_default()
        );
    } else {
        let width = snapshot.tools.keys().map(String::len).max().unwrap_or(0);
        for (name, tool) in &snapshot.tools {
            let summary = tool
                .spec()
                .description
                .split(". ")
                .next()
                .unwrap_or_default();
            println!("{name:<width$}  {}", summary.trim_end_matches('.'));
        }
    }
    for problem in &snapshot.problems {
        eprintln!("warning: {problem}");
    }
    ExitCode::SUCCESS
}

/// Runs one tool.
pub async fn call(runtime: &Runtime, args: CallArgs) -> ExitCode {
    let raw = match args.args.as_deref() {
        Some("-") => {
            let mut text = String::new();
            if let Err(e) = std::io::stdin().read_to_string(&mut text) {
                eprintln!("toolgate: cannot read arguments from stdin: {e}");
                return ExitCode::from(crate::USAGE_ERROR);
            }
            text
        }
        Some(text) => text.to_owned(),
        None => String::new(),
    };
    let ctx = CallContext::default();
    let cancel = ctx.cancel.clone();
    let ctrl_c = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            cancel.cancel();
        }
    });
    let output = runtime
        .dispatcher
        .call(&args.name, RawArgs::Text(raw), ctx)
        .await;
    ctrl_c.abort();
    if args.json {
        let mut content = vec![json!({ "type": "text", "text": output.text })];
        for media in &output.media {
            content.push(match media {
                toolgate_core::Media::Image { mime, data } => {
                    json!({ "type": "image", "mimeType": mime, "data": data })
                }
                toolgate_core::Media::Blob { uri, mime, data } => {
                    json!({ "type": "resource", "resource": { "uri": uri, "mimeType": mime, "blob": data } })
                }
            });
        }
        let mut body = json!({ "content": content, "isError": output.is_error });
        if !output.structured.is_empty() {
            body["structuredContent"] = Value::Object(output.structured_content());
        }
        println!(
            "{}",
            serde_json::to_string_pretty(&body).unwrap_or_default()
        );
    } else if output.is_error {
        eprint!("{}", with_newline(&output.text));
    } else {
        print!("{}", with_newline(&output.text));
    }
    if output.is_error {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn with_newline(text: &str) -> String {
    if text.ends_with('\n') {
        text.to_owned()
    } else {
        format!("{text}\n")
    }
}
