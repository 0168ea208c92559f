//! A deliberately simple — and on request deliberately broken — MCP stdio server for the
//! gateway's tests. Raw JSON-RPC lines, no SDK, so every misbehaviour is easy to script.
//!
//! `fake_server MODE [ARGS]`:
//! - `normal`: tools `ok` (echo), `boom` (exits with status 3 mid-call), `boom_orphan`
//!   (exits mid-call leaving a `setsid` child that holds stdout), `sleep {ms}`
//!   (records `notifications/cancelled`), `big {chars}`, `bump` (replaces its tools and
//!   sends `notifications/tools/list_changed`), `image`.
//! - `hang-init`: starts a `sleep` grandchild in its process group, then never answers.
//! - `garbage`: answers every request with lines that are not JSON.
//! - `many N PAGE`: N tools, PAGE per `tools/list` page.
//!
//! With `FAKE_GARBLE=1`, `normal` also has `garble`, which prints lines that are not
//! JSON-RPC before its answer.
//!
//! With `FAKE_LOG=path`, it appends one line per call and per cancellation there. With
//! `FAKE_STUBBORN=1`, it keeps running after its stdin closes (only a signal ends it). With
//! `FAKE_SLOW_RESTART=path`, every start after the first (the file exists) takes 3 s to
//! answer `initialize`.
//!
//! `server/discover` is answered `-32601` like any unknown method (a 2025 server), unless
//! `FAKE_DISCOVER` says: `answer` (a 2026-07-28 server: it answers with that revision and
//! logs the revision in each request's `_meta`), `invalid` (`-32600` without an id, as a
//! server that cannot read the request), `ignore` (no answer), `late` (answers it only when
//! `initialize` comes, then refuses `initialize`), `exit` (exits at once, with status 4). It logs `server/discover pid=PID` and `initialize pid=PID`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::disallowed_methods
)]

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

type Out = Arc<Mutex<std::io::Stdout>>;

fn send(out: &Out, message: &Value) {
    let mut out = out.lock().unwrap();
    writeln!(out, "{message}").unwrap();
    out.flush().unwrap();
}

fn log(line: &str) {
    if let Ok(path) = std::env::var("FAKE_LOG") {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        writeln!(f, "{line}").unwrap();
    }
}

fn tool(name: &str, description: &str, properties: Value, read_only: bool) -> Value {
    json!({
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": properties},
        "annotations": {"readOnlyHint": read_only},
    })
}

fn normal_tools(bumped: bool) -> Vec<Value> {
    let mut tools = vec![
        tool(
            "ok",
            "Echoes its message.",
            json!({"message": {"type": "string"}}),
            true,
        ),
        tool("boom", "Exits in the middle of the call.", json!({}), false),
        tool(
            "boom_orphan",
            "Starts a setsid child that keeps stdout open, then exits mid-call.",
            json!({"marker": {"type": "string"}}),
            false,
        ),
        tool(
            "sleep",
            "Sleeps for ms milliseconds.",
            json!({"ms": {"type": "integer"}}),
            true,
        ),
        tool(
            "big",
            "Returns chars characters.",
            // As a server generated from Rust types declares it.
            json!({"chars": {"type": "integer", "format": "uint64", "minimum": 0}}),
            true,
        ),
        tool("image", "Returns a tiny image.", json!({}), true),
        tool(
            "testlog",
            "Returns a failing cargo test log of 3,000 tests.",
            json!({}),
            true,
        ),
    ];
    if std::env::var_os("FAKE_GARBLE").is_some() {
        tools.push(tool(
            "garble",
            "Prints lines that are not JSON-RPC, then answers.",
            json!({}),
            true,
        ));
    }
    if std::env::var_os("FAKE_ASK").is_some() {
        tools.push(tool(
            "ask",
            "Asks the user (elicitation/create) and answers with what they said.",
            json!({}),
            false,
        ));
        tools.push(tool(
            "note",
            "Changes nothing, but says it might.",
            json!({}),
            false,
        ));
    }
    if bumped {
        tools.push(tool("v2", "Appears after bump.", json!({}), true));
    } else {
        tools.push(tool("bump", "Changes the tool list.", json!({}), false));
    }
    tools
}

fn text(t: &str) -> Value {
    json!({"content": [{"type": "text", "text": t}]})
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map_or("normal", String::as_str);
    eprintln!("fake_server starting in mode {mode}");
    if mode == "hang-init" {
        // A grandchild in the same process group: the gateway must kill it too.
        let _child = std::process::Command::new("sleep").arg("1000").spawn();
        loop {
            std::thread::sleep(Duration::from_secs(1000));
        }
    }
    let slow_init = std::env::var_os("FAKE_SLOW_RESTART").is_some_and(|path| {
        let again = std::path::Path::new(&path).exists();
        std::fs::write(&path, "started").unwrap();
        again
    });
    let out: Out = Arc::new(Mutex::new(std::io::stdout()));
    let bumped = Arc::new(AtomicBool::new(false));
    // `FAKE_DISCOVER=late`: the probe's id, answered only when `initialize` comes.
    let mut unanswered: Option<Value> = None;
    // `ask` calls waiting for the client's answer: the id of our request -> the call's id.
    let mut asking: Vec<(Value, Value)> = Vec::new();
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let id = msg.get("id").cloned();
        let method = msg["method"].as_str().unwrap_or_default().to_owned();
        if mode == "garbage" {
            let mut o = out.lock().unwrap();
            writeln!(o, "Hello! I am a server that logs to stdout.").unwrap();
            writeln!(o, "<<< {method} >>>").unwrap();
            o.flush().unwrap();
            continue;
        }
        if matches!(method.as_str(), "server/discover" | "initialize") {
            log(&format!("{method} pid={}", std::process::id()));
        }
        if let Some(asked) = msg["params"]["protocolVersion"].as_str() {
            log(&format!("{method} asked={asked}"));
        }
        if method == "server/discover" {
            match std::env::var("FAKE_DISCOVER").as_deref() {
                Ok("answer") => {
                    let result = json!({
                        "resultType": "complete",
                        "supportedVersions": ["2026-07-28"],
                        "capabilities": {"tools": {}},
                        "ttlMs": 0,
                        "cacheScope": "private",
                        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake", "version": "1.0.0"}},
                    });
                    send(&out, &json!({"jsonrpc": "2.0", "id": id, "result": result}));
                    continue;
                }
                Ok("invalid") => {
                    send(
                        &out,
                        &json!({"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid request"}}),
                    );
                    continue;
                }
                Ok("ignore") => continue,
                Ok("late") => {
                    unanswered = id.clone();
                    continue;
                }
                Ok("exit") => {
                    eprintln!("unknown method server/discover; exiting");
                    std::process::exit(4);
                }
                _ => {}
            }
        }
        if let Some(revision) =
            msg["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"].as_str()
        {
            log(&format!("{method} revision={revision}"));
        }
        if method.is_empty() {
            // The client's answer to a request of ours: the `ask` call it belongs to ends.
            if let Some(at) = asking
                .iter()
                .position(|(ours, _)| Some(ours) == id.as_ref())
            {
                let (_, call) = asking.remove(at);
                let action = msg["result"]["action"]
                    .as_str()
                    .unwrap_or("error")
                    .to_owned();
                log(&format!("answered {action}"));
                let reply = json!({"jsonrpc": "2.0", "id": call, "result": text(&format!("answered {action}"))});
                send(&out, &reply);
            }
            continue;
        }
        if method == "notifications/cancelled" {
            log(&format!("cancelled {}", msg["params"]["requestId"]));
            continue;
        }
        let Some(id) = id else { continue };
        let result = match method.as_str() {
            "initialize" if unanswered.is_some() => {
                // A server of both revisions that was slow to answer the probe: it serves
                // 2026-07-28 from then on and refuses the handshake.
                let result = json!({
                    "resultType": "complete",
                    "supportedVersions": ["2026-07-28"],
                    "capabilities": {"tools": {}},
                    "ttlMs": 0,
                    "cacheScope": "private",
                });
                send(
                    &out,
                    &json!({"jsonrpc": "2.0", "id": unanswered.take(), "result": result}),
                );
                send(
                    &out,
                    &json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32022, "message": "connection is serving the 2026-07-28 protocol; the initialize handshake is not accepted"}}),
                );
                continue;
            }
            "initialize" => {
                if slow_init {
                    std::thread::sleep(Duration::from_secs(3));
                }
                let mut capabilities = json!({"tools": {"listChanged": true}});
                if resources_tag().is_some() {
                    capabilities["resources"] = json!({});
                    capabilities["prompts"] = json!({});
                }
                json!({
                "protocolVersion": "2025-06-18",
                "capabilities": capabilities,
                "serverInfo": {"name": "fake", "version": "1.0.0"},
                })
            }
            "ping" => json!({}),
            "resources/list"
            | "resources/templates/list"
            | "resources/read"
            | "prompts/list"
            | "prompts/get"
                if resources_tag().is_some() =>
            {
                match offered(&method, &msg["params"]) {
                    Ok(result) => result,
                    Err(e) => {
                        send(
                            &out,
                            &json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32002, "message": e.to_string()}}),
                        );
                        continue;
                    }
                }
            }
            "tools/list" => list(mode, &args, &msg, bumped.load(Ordering::SeqCst)),
            "tools/call" => {
                let name = msg["params"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                let arguments = msg["params"]["arguments"].clone();
                log(&format!("call {name} {id}"));
                match name.as_str() {
                    "boom" => {
                        eprintln!("about to crash on purpose");
                        std::process::exit(3);
                    }
                    "boom_orphan" => {
                        // The child inherits stdout (and leaves the process group), so the
                        // pipe stays open after this process is gone.
                        let marker = arguments["marker"].as_str().unwrap_or("30.5").to_owned();
                        let _ = std::process::Command::new("setsid")
                            .args(["sleep", &marker])
                            .spawn();
                        // Let it leave the process group before this process is gone.
                        std::thread::sleep(Duration::from_millis(300));
                        eprintln!("about to crash on purpose, leaving a child behind");
                        std::process::exit(3);
                    }
                    "sleep" => {
                        let out = Arc::clone(&out);
                        let ms = arguments["ms"].as_u64().unwrap_or(1000);
                        std::thread::spawn(move || {
                            std::thread::sleep(Duration::from_millis(ms));
                            let reply =
                                json!({"jsonrpc": "2.0", "id": id, "result": text("slept")});
                            send(&out, &reply);
                        });
                        continue;
                    }
                    "testlog" => {
                        let mut body: String = (0..3000)
                            .map(|i| format!("test suite::case_{i:04} ... ok\n"))
                            .collect();
                        body.push_str("test suite::broken ... FAILED\n\nfailures:\n\n");
                        body.push_str("---- suite::broken stdout ----\n");
                        body.push_str("thread 'suite::broken' panicked at src/lib.rs:42:9:\n");
                        body.push_str("assertion `left == right` failed: the answer\n");
                        body.push_str("\ntest result: FAILED. 3000 passed; 1 failed; 0 ignored\n");
                        text(&body)
                    }
                    "big" => {
                        let n = arguments["chars"].as_u64().unwrap_or(100) as usize;
                        let body: String = (0..n / 10).map(|i| format!("line {i:04}\n")).collect();
                        text(&body)
                    }
                    "image" => json!({"content": [
                        {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
                    ]}),
                    "bump" => {
                        bumped.store(true, Ordering::SeqCst);
                        send(
                            &out,
                            &json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
                        );
                        text("bumped")
                    }
                    "ok" => text(arguments["message"].as_str().unwrap_or("ok")),
                    "note" => text("noted"),
                    "ask" => {
                        let ours = json!(format!("ask-{id}"));
                        let form = json!({"message": "Go on?", "requestedSchema": {"type": "object", "properties": {}}});
                        send(
                            &out,
                            &json!({"jsonrpc": "2.0", "id": ours, "method": "elicitation/create", "params": form}),
                        );
                        asking.push((ours, id));
                        continue;
                    }
                    "garble" => {
                        let mut o = out.lock().unwrap();
                        writeln!(o, "not json at all").unwrap();
                        writeln!(o, "{{\"jsonrpc\": \"2.0\", \"id\": ").unwrap();
                        writeln!(o, "\u{1}\u{7f}binary\u{fffd}junk").unwrap();
                        o.flush().unwrap();
                        drop(o);
                        text("garbled")
                    }
                    other => {
                        json!({"content": [{"type": "text", "text": format!("no tool {other}")}], "isError": true})
                    }
                }
            }
            _ => {
                send(
                    &out,
                    &json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "method not found"}}),
                );
                continue;
            }
        };
        let mut result = result;
        if std::env::var("FAKE_DISCOVER").as_deref() == Ok("answer") {
            result["resultType"] = json!("complete");
        }
        send(&out, &json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }
    if std::env::var_os("FAKE_STUBBORN").is_some() {
        loop {
            std::thread::sleep(Duration::from_secs(1000));
        }
    }
}

fn list(mode: &str, args: &[String], msg: &Value, bumped: bool) -> Value {
    if mode != "many" {
        return json!({"tools": normal_tools(bumped)});
    }
    let n: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let page: usize = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(100);
    let start: usize = msg["params"]["cursor"]
        .as_str()
        .and_then(|c| c.strip_prefix("page-"))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let end = (start + page).min(n);
    let tools: Vec<Value> = (start..end)
        .map(|i| {
            tool(
                &format!("tool_{i:04}"),
                &format!("Tool number {i}."),
                json!({}),
                true,
            )
        })
        .collect();
    let mut result = json!({"tools": tools});
    if end < n {
        result["nextCursor"] = json!(format!("page-{end}"));
    }
    result
}

/// `FAKE_RESOURCES=TAG`: the server offers resources (and a prompt), named after `TAG`.
fn resources_tag() -> Option<String> {
    std::env::var("FAKE_RESOURCES").ok()
}

/// Characters of `fake://TAG/huge` (`FAKE_HUGE_CHARS`, default 5,000,000).
fn huge_chars() -> usize {
    std::env::var("FAKE_HUGE_CHARS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(5_000_000)
}

/// `huge` as many characters: numbered lines.
fn huge_text(chars: usize) -> String {
    let mut body = String::with_capacity(chars + 16);
    let mut i = 0;
    while body.len() < chars {
        body.push_str(&format!("line {i:07} of a huge resource\n"));
        i += 1;
    }
    body.truncate(chars);
    body
}

/// The answers of a server with `FAKE_RESOURCES=TAG`: `fake://TAG/small`, `fake://TAG/huge`,
/// `fake://TAG/blob`, `fake://shared/readme` (every such server lists it), `FAKE_RESOURCE_COUNT`
/// numbered ones, the template `fake://TAG/item/{name}`, and the prompt `huge_prompt`.
fn offered(method: &str, params: &Value) -> Result<Value, NotOffered> {
    let tag = resources_tag().unwrap_or_default();
    let count: usize = std::env::var("FAKE_RESOURCE_COUNT")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let blob = "iVBORw0KGgo=";
    Ok(match method {
        "resources/list" => {
            let mut resources = vec![
                json!({"uri": format!("fake://{tag}/small"), "name": "small", "mimeType": "text/plain", "description": format!("A small text of {tag}.")}),
                json!({"uri": format!("fake://{tag}/huge"), "name": "huge", "mimeType": "text/plain", "size": huge_chars()}),
                json!({"uri": format!("fake://{tag}/blob"), "name": "blob", "mimeType": "image/png"}),
                json!({"uri": "fake://shared/readme", "name": "readme", "mimeType": "text/markdown"}),
            ];
            resources.extend((0..count).map(
                |i| json!({"uri": format!("fake://{tag}/n/{i:03}"), "name": format!("number {i}")}),
            ));
            json!({"resources": resources})
        }
        "resources/templates/list" => json!({"resourceTemplates": [
            {"uriTemplate": format!("fake://{tag}/item/{{name}}"), "name": "item", "mimeType": "text/plain", "description": "One item by name."}
        ]}),
        "resources/read" => {
            let uri = params["uri"].as_str().unwrap_or_default();
            log(&format!("read {uri}"));
            let rest = uri.strip_prefix(&format!("fake://{tag}/"));
            let text = match rest {
                Some("small") => format!("small text of {tag}"),
                Some("huge") => huge_text(huge_chars()),
                Some("blob") => {
                    return Ok(
                        json!({"contents": [{"uri": uri, "mimeType": "image/png", "blob": blob}]}),
                    );
                }
                Some(item) if item.starts_with("item/") => {
                    format!("item {} of {tag}", &item["item/".len()..])
                }
                Some(n) if n.starts_with("n/") => format!("resource {n} of {tag}"),
                _ if uri == "fake://shared/readme" => format!("readme of {tag}"),
                _ => return Err(NotOffered::Resource(uri.to_owned())),
            };
            json!({"contents": [{"uri": uri, "mimeType": "text/plain", "text": text}]})
        }
        "prompts/list" => {
            json!({"prompts": [{"name": "huge_prompt", "description": "A prompt with a huge message."}]})
        }
        "prompts/get" => json!({"messages": [
            {"role": "user", "content": {"type": "text", "text": huge_text(huge_chars())}},
            {"role": "user", "content": {"type": "text", "text": "short question"}}
        ]}),
        _ => return Err(NotOffered::Method(method.to_owned())),
    })
}

/// What a server with `FAKE_RESOURCES` does not have: the error message of its answer.
#[derive(Debug, thiserror::Error)]
enum NotOffered {
    #[error("Resource {0} not found")]
    Resource(String),
    #[error("no {0}")]
    Method(String),
}
