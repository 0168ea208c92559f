//! The arguments stage, at the entrance of every call: the fields the session's client adds
//! to every call for its own use are dropped, a proxy's call (`run_tool`) becomes its
//! target's, the tool is looked up (an unknown name gets suggestions), and the arguments are
//! parsed once and checked to be an object.

use std::sync::Arc;

use serde_json::Value;

use super::RawArgs;
use crate::output::ToolOutput;
use crate::registry::Snapshot;
use crate::spec::DisclosureHint;
use crate::tool::{DynTool, json_kind};

/// A call as the dispatcher runs it: the proxy unwrapped, the tool found, the arguments
/// parsed and checked to be an object.
pub(super) struct Prepared {
    /// The tool's name (the target's, for a call through `run_tool`).
    pub(super) name: String,
    pub(super) tool: Arc<dyn DynTool>,
    pub(super) args: Value,
}

/// The arguments stage, at the entrance: the client's `injected` fields are dropped, a
/// proxy's call becomes its target's, the tool is looked up, and the arguments are parsed
/// once.
pub(super) fn prepare(
    name: &str,
    args: RawArgs,
    snapshot: &Snapshot,
    injected: &[String],
) -> Result<Prepared, Box<ToolOutput>> {
    let args = match snapshot.get(name) {
        Some(called) if !injected.is_empty() => drop_injected(args, called.as_ref(), injected),
        _ => args,
    };
    let (name, args) = unwrap_proxy(name, args, snapshot)?;
    let Some(tool) = snapshot.get(&name).cloned() else {
        return Err(Box::new(unknown_tool(&name, snapshot)));
    };
    let args = parse_args(
        &name,
        args,
        "one JSON object, e.g. {\"path\": \"README.md\"}",
    )?;
    if !(args.is_object() || args.is_null()) {
        return Err(Box::new(ToolOutput::error(format!(
            "error: the arguments for `{name}` must be a JSON object, got {}; resend them as {{\"field\": value, …}}",
            json_kind(&args)
        ))));
    }
    Ok(Prepared { name, tool, args })
}

/// The arguments without the fields the client adds to every call for its own use (its
/// profile's `injected_args`, e.g. Gemini CLI's `wait_for_previous`), unless the called tool
/// declares them: a mounted tool whose schema names the field gets it. Only the client's
/// fields are dropped; any other unknown field is still refused by the tool.
fn drop_injected(args: RawArgs, tool: &dyn DynTool, injected: &[String]) -> RawArgs {
    // Taken, not copied: a call's arguments may be large (a whole file to write).
    let mut value = match args {
        RawArgs::Json(value) => value,
        RawArgs::Text(text) => match serde_json::from_str::<Value>(&text) {
            Ok(value) => value,
            // Not JSON: the parse error further on says so.
            Err(_) => return RawArgs::Text(text),
        },
    };
    if let Value::Object(fields) = &mut value {
        let declared = tool.spec().input_schema.get("properties");
        for key in injected {
            if declared.and_then(|p| p.get(key)).is_none() {
                fields.remove(key);
            }
        }
    }
    RawArgs::Json(value)
}

/// Arguments as JSON: parsed when they came as text (nothing at all is `{}`); a parse error
/// tells the model to resend them as `shape`.
fn parse_args(name: &str, args: RawArgs, shape: &str) -> Result<Value, Box<ToolOutput>> {
    match args {
        RawArgs::Json(value) => Ok(value),
        RawArgs::Text(text) if text.trim().is_empty() => Ok(Value::Object(Default::default())),
        RawArgs::Text(text) => serde_json::from_str(&text).map_err(|e| {
            Box::new(ToolOutput::error(format!(
                "error: the arguments for `{name}` are not valid JSON ({e}); resend them as {shape}"
            )))
        }),
    }
}

/// A call of a proxy (`run_tool`) as a call of its target; other calls pass through. The
/// target is then dispatched like any call: its permissions, timeout, concurrency class and
/// budget apply, never the proxy's.
pub(super) fn unwrap_proxy(
    name: &str,
    args: RawArgs,
    snapshot: &Snapshot,
) -> Result<(String, RawArgs), Box<ToolOutput>> {
    let Some(proxy) = snapshot.get(name).filter(|t| is_proxy(t.as_ref())) else {
        return Ok((name.to_owned(), args));
    };
    let value = parse_args(name, args, "{\"name\": \"<tool>\", \"input\": {…}}")?;
    match proxy.forward(&value) {
        None => Ok((name.to_owned(), RawArgs::Json(value))),
        Some(Err(err)) => Err(Box::new(ToolOutput::error(format!(
            "error: invalid arguments for `{name}`: {err}; send {{\"name\": \"<exact tool name>\", \"input\": {{…}}}}"
        )))),
        Some(Ok(fwd)) => {
            if snapshot
                .get(&fwd.name)
                .is_some_and(|t| is_proxy(t.as_ref()))
            {
                return Err(Box::new(ToolOutput::error(format!(
                    "error: `{name}` cannot call `{}`; call the target tool through `{name}` directly",
                    fwd.name
                ))));
            }
            Ok((fwd.name, RawArgs::Json(fwd.input)))
        }
    }
}

pub(super) fn is_proxy(tool: &dyn DynTool) -> bool {
    tool.meta().proxy
}

/// The error for a call of a tool the snapshot does not have: why it is absent, when its
/// server is, else the nearest names (or some of the tools there are).
fn unknown_tool(name: &str, snapshot: &Snapshot) -> ToolOutput {
    // A tool of a server that is not trusted, disabled or failed: say that, and what to do.
    if let Some(absence) = snapshot.absence_of(name) {
        return ToolOutput::error(format!(
            "error: `{name}` is not available: {}",
            absence.reason
        ));
    }
    let mut scored: Vec<(f64, &str)> = snapshot
        .tools
        .iter()
        .filter_map(|(k, tool)| {
            let score = strsim::jaro_winkler(&name.to_lowercase(), &k.to_lowercase());
            // The disclosure entry points end in `_tool` like many misspellings do
            // (`no_such_tool`): suggest them only for a near miss of their own name.
            let entry_point = tool.meta().disclosure == DisclosureHint::EntryPoint;
            (score > if entry_point { 0.9 } else { 0.7 }).then_some((score, k.as_str()))
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    let suggestions: Vec<String> = scored
        .iter()
        .take(3)
        .map(|(_, k)| format!("`{k}`"))
        .collect();
    let hint = if suggestions.is_empty() {
        // Not the disclosure entry points: a client lists them only while disclosure is
        // on, and then the model has them already.
        let all: Vec<String> = snapshot
            .tools
            .iter()
            .filter(|(_, t)| t.meta().disclosure != DisclosureHint::EntryPoint)
            .take(20)
            .map(|(k, _)| format!("`{k}`"))
            .collect();
        format!("available tools: {}", all.join(", "))
    } else {
        format!("did you mean {}?", suggestions.join(", "))
    };
    ToolOutput::error(format!("error: unknown tool `{name}`; {hint}"))
}
